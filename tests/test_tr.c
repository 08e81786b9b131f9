/* test_tr.c — adjacency tables, top-K softmax, the TR template and drafter (docs/spec/drafting.md §3,
 * §4.2). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafters/drafter.h"
#include "drafters/tr.h"

static uint64_t rs = 0x123456789ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

Test(tr, template_222_shape)
{
    int32_t parent[128];
    int16_t rank[128];
    int n = arb_tr_template(parent, rank, 128);
    cr_assert_eq(n, 81, "80 draft nodes + anchor");
    int depth[128] = {0}, count[8] = {0}, leaves = 0;
    for (int i = 1; i < n; i++) {
        cr_assert_lt(parent[i], i);
        depth[i] = depth[parent[i]] + 1;
        count[depth[i]]++;
    }
    int want[7] = {0, 8, 21, 25, 15, 8, 3};
    for (int d = 1; d <= 6; d++)
        cr_assert_eq(count[d], want[d], "depth %d", d);
    for (int i = 0; i < n; i++) {
        bool has = false;
        for (int j = 1; j < n; j++)
            has |= parent[j] == i;
        leaves += !has;
    }
    cr_assert_eq(leaves, 40);
}

Test(tr, choices_parse_rejects_bad_lists)
{
    int32_t parent[16];
    int16_t rank[16];
    arb_err err = {0};
    cr_assert_eq(arb_choices_parse("[[0],[1],[0,0]]", parent, rank, 16, &err), 4);
    cr_assert(parent[3] == 1 && rank[3] == 0);
    cr_assert_lt(arb_choices_parse("[[0],[0,1]]", parent, rank, 16, &err), 0, "not rank-closed");
    cr_assert(strstr(err.msg, "rank-closed"));
    cr_assert_lt(arb_choices_parse("[[0],[1,0]]", parent, rank, 16, &err), 0, "not prefix-closed");
    cr_assert(strstr(err.msg, "prefix-closed"));
    cr_assert_lt(arb_choices_parse("[[0],[x]]", parent, rank, 16, &err), 0);
    cr_assert_lt(arb_choices_parse("[[0],[0]]", parent, rank, 16, &err), 0, "duplicate");
    cr_assert_lt(arb_choices_parse("[[0]", parent, rank, 16, &err), 0, "unbalanced");
}

/* Straightforward reference: K times the largest not yet taken (lowest id first among
   equals), probabilities from a double-precision softmax over the whole row (a row of -inf
   only: uniform, as any all-equal row). */
static void topk_ref(const float *row, int V, int K, int32_t *ids, double *sc)
{
    bool *used = calloc((size_t)V, sizeof *used);
    double m = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++)
        m = row[i] > m ? row[i] : m;
    for (int i = 0; i < V; i++)
        sum += m == -INFINITY ? 1.0 : exp((double)row[i] - m);
    for (int j = 0; j < K; j++) {
        int b = -1;
        for (int i = 0; i < V; i++)
            if (!used[i] && (b < 0 || row[i] > row[b]))
                b = i;
        if (b < 0) { /* V < K */
            ids[j] = 0;
            sc[j] = 0;
            continue;
        }
        used[b] = true;
        ids[j] = b;
        sc[j] = (m == -INFINITY ? 1.0 : exp((double)row[b] - m)) / sum;
    }
    free(used);
}

/* Every available path against the reference (exact ids and order; scores within 1e-5
   relative, the adjacency stores them in 1/65535 units) and bit for bit against the
   baseline path. Returns how many paths ran. */
static int check_topk(const float *row, int V, int K, const char *what)
{
    int32_t ref_ids[ARB_ADJ_K_MAX], ids[3][ARB_ADJ_K_MAX];
    double ref_sc[ARB_ADJ_K_MAX];
    float sc[3][ARB_ADJ_K_MAX];
    topk_ref(row, V, K, ref_ids, ref_sc);
    int ran = 0;
    for (int isa = ARB_TOPK_BASE; isa <= ARB_TOPK_AVX512; isa++) {
        if (!arb_topk_softmax_isa(isa, row, V, K, ids[isa], sc[isa])) {
            cr_assert_gt(isa, arb_topk_isa_best(), "%s: path %d refused but reported available", what, isa);
            continue;
        }
        ran++;
        for (int j = 0; j < K; j++) {
            cr_assert_eq(ids[isa][j], ref_ids[j], "%s: path %d rank %d: id %d, want %d", what, isa, j, ids[isa][j],
                         ref_ids[j]);
            cr_assert(fabs(sc[isa][j] - ref_sc[j]) <= 1e-5 * ref_sc[j] + 1e-30, "%s: path %d rank %d: %.9g vs %.9g",
                      what, isa, j, sc[isa][j], ref_sc[j]);
        }
        cr_assert(!memcmp(ids[isa], ids[0], (size_t)K * sizeof ids[0][0]) &&
                      !memcmp(sc[isa], sc[0], (size_t)K * sizeof sc[0][0]),
                  "%s: path %d differs from the baseline in the last bits", what, isa);
    }
    cr_assert_eq(arb_topk_argmax(row, V), ref_ids[0], "%s: argmax", what);
    for (int isa = ARB_TOPK_BASE; isa <= arb_topk_isa_best(); isa++)
        cr_assert_eq(arb_topk_argmax_isa(isa, row, V), ref_ids[0], "%s: argmax, path %d", what, isa);
    int32_t dflt_ids[ARB_ADJ_K_MAX];
    float dflt_sc[ARB_ADJ_K_MAX];
    arb_topk_softmax(row, V, K, dflt_ids, dflt_sc);
    cr_assert(!memcmp(dflt_ids, ids[0], (size_t)K * sizeof dflt_ids[0]) &&
              !memcmp(dflt_sc, sc[0], (size_t)K * sizeof dflt_sc[0]));
    return ran;
}

Test(tr, topk_softmax_matches_brute_force)
{
    enum { V = 1000, K = 10 };
    float row[V];
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < V; i++) /* few distinct values: many ties */
            row[i] = (float)(rnd() % 40) * 0.5f - 10.0f;
        if (trial % 2) /* a wide spread: most chunks fall below max - 24 and are skipped */
            for (int i = 0; i < V; i += 1 + (int)(rnd() % 97))
                row[i] = 20.0f + (float)(rnd() % 8);
        char what[32];
        snprintf(what, sizeof what, "trial %d", trial);
        check_topk(row, V, K, what);
    }
}

Test(tr, topk_softmax_adversarial_rows)
{
    enum { VMAX = 49152 + 77 };
    float *row = malloc(VMAX * sizeof *row);
    cr_assert(row);
    const int sizes[] = {1, 5, 10, 16, 127, 128, 129, 300, 1000, 4097, 49152, 49152 + 77};
    int ran = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int V = sizes[si];
        for (int kind = 0; kind < 9; kind++) {
            for (int i = 0; i < V; i++) {
                float g = (float)((int)(rnd() % 2001) - 1000) / 200.0f; /* logit-like bulk */
                switch (kind) {
                case 0: row[i] = 3.0f; break;                                 /* all equal */
                case 1: row[i] = -INFINITY; break;                            /* all -inf */
                case 2: row[i] = rnd() % 3 ? -INFINITY : g; break;            /* some -inf */
                case 3: row[i] = (float)i * 0.01f; break;                     /* rising: new max every chunk */
                case 4: row[i] = -(float)i * 0.01f; break;                    /* falling */
                case 5: row[i] = (float)(rnd() % 4); break;                   /* ties everywhere */
                case 6: row[i] = g + (rnd() % 3000 == 0 ? 20.0f : 0.0f); break; /* spikes over a bulk */
                case 7: row[i] = i == V - 1 ? 60.0f : g - 40.0f; break;       /* max in the last (tail) value */
                default: row[i] = g * 0.001f; break;                          /* nearly flat */
                }
            }
            for (int K = 1; K <= ARB_ADJ_K_MAX; K += 5) {
                char what[64];
                snprintf(what, sizeof what, "V %d kind %d K %d", V, kind, K);
                ran += check_topk(row, V, K, what);
            }
        }
    }
    cr_assert_gt(ran, 0);
    free(row);
}

Test(tr, adjacency_unigram_bigram_merge_and_overwrite)
{
    arb_adj *a;
    cr_assert_eq(arb_adj_new(100, 4, 6, &a, NULL), ARB_OK);
    int32_t ids[16];
    float sc[16];
    bool hit, written;
    cr_assert_eq(arb_adj_succ(a, 1, 2, true, ids, sc, &hit), 0, "empty table");
    const int32_t *row = arb_adj_row(a, 2, &written);
    cr_assert_not(written);
    cr_assert_eq(row[3], 0, "never-written rows hold token 0 (TR reference)");
    int32_t u[4] = {10, 11, 12, 13}, b[4] = {12, 20, 10, 21};
    float us[4] = {0.4f, 0.3f, 0.2f, 0.1f}, bs[4] = {0.7f, 0.1f, 0.05f, 0.01f};
    arb_adj_write(a, -1, 2, u, us); /* unigram only */
    arb_adj_write(a, 1, 3, u, us);
    arb_adj_write(a, 7, 2, b, bs);  /* overwrites unigram row 2, bigram (7,2) */
    cr_assert_eq(arb_adj_fill(a), 2);
    int n = arb_adj_succ(a, 7, 2, true, ids, sc, &hit);
    cr_assert(hit);
    cr_assert_eq(n, 4, "bigram list, then unigram entries not yet listed (same list here)");
    cr_assert(ids[0] == 12 && ids[1] == 20 && ids[2] == 10 && ids[3] == 21);
    cr_assert_float_eq(sc[0], 0.7f, 1e-4);
    arb_adj_write(a, -1, 2, u, us); /* unigram row 2 back to u */
    n = arb_adj_succ(a, 7, 2, true, ids, sc, &hit);
    cr_assert_eq(n, 4, "truncated to K");
    cr_assert(ids[0] == 12 && ids[1] == 20 && ids[2] == 10 && ids[3] == 21);
    n = arb_adj_succ(a, 8, 2, true, ids, sc, &hit);
    cr_assert_not(hit);
    cr_assert(n == 4 && ids[0] == 10, "no bigram for (8,2): unigram");
    n = arb_adj_succ(a, 7, 2, false, ids, sc, &hit);
    cr_assert(!hit && ids[0] == 10, "bigram tier switched off");
    /* bounded memory: many bigram writes never fail and the newest is found */
    for (int i = 0; i < 5000; i++)
        arb_adj_write(a, i % 97, 3 + i % 89, u, us);
    n = arb_adj_succ(a, 4999 % 97, 3 + 4999 % 89, true, ids, sc, &hit);
    cr_assert(hit);
    cr_assert_gt(arb_adj_bytes(a), 100 * 4 * 6);
    arb_adj_clear(a);
    cr_assert_eq(arb_adj_fill(a), 0);
    arb_adj_free(a);
}

/* arb_adj_write_rows (prefetch, then the rows in order) leaves the tables exactly as one
   arb_adj_write per row: unigram rows, fill, and every bigram lookup, with a bigram tier small
   enough that writes evict (the eviction picks depend on the order of the stamps), rows
   without a previous token, out-of-range tokens, and prev = NULL. */
Test(tr, adjacency_rows_write_as_single_writes)
{
    enum { V = 300, K = 5, N = 400 };
    arb_adj *a, *b;
    cr_assert_eq(arb_adj_new(V, K, 5, &a, NULL), ARB_OK);
    cr_assert_eq(arb_adj_new(V, K, 5, &b, NULL), ARB_OK);
    static int32_t prev[N], tok[N], ids[N * 7];
    static float sc[N * 7];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            prev[i] = i % 11 == 0 ? -1 : (int32_t)(rnd() % 40);
            tok[i] = i % 97 == 5 ? V + 3 : (int32_t)(rnd() % 60); /* one out of range now and then */
            for (int j = 0; j < 7; j++) /* stride 7 > K: the rows' tails are not read */
                ids[i * 7 + j] = (int32_t)(rnd() % V), sc[i * 7 + j] = (float)(rnd() % 1000) / 1000.0f;
        }
        const bool with_prev = round != 1;
        for (int i = 0; i < N; i++)
            arb_adj_write(a, with_prev ? prev[i] : -1, tok[i], ids + i * 7, sc + i * 7);
        arb_adj_write_rows(b, N, with_prev ? prev : NULL, tok, ids, sc, 7);
        cr_assert_eq(arb_adj_fill(a), arb_adj_fill(b), "round %d: fill", round);
        for (int p = -1; p < 40; p++)
            for (int t = 0; t < 60; t++) {
                int32_t ia[16], ib[16];
                float sa[16], sb[16];
                bool ha, hb;
                const int na = arb_adj_succ(a, p, t, true, ia, sa, &ha), nb = arb_adj_succ(b, p, t, true, ib, sb, &hb);
                cr_assert(na == nb && ha == hb && !memcmp(ia, ib, sizeof(int32_t) * (size_t)na) &&
                              !memcmp(sa, sb, sizeof(float) * (size_t)na),
                          "round %d: succ(%d, %d) differs", round, p, t);
            }
    }
    arb_adj_free(a);
    arb_adj_free(b);
}

static arb_method_spec tr_spec(void)
{
    arb_method_spec s = {0};
    snprintf(s.id, sizeof s.id, "TR");
    snprintf(s.drafter, sizeof s.drafter, "tr");
    s.topk = 8;
    s.harvest_prefill = true;
    s.hot_start = true;
    return s;
}

Test(tr, bfs_fill_update_last_write_wins)
{
    arb_method_spec s = tr_spec();
    void *st;
    cr_assert_eq(arb_drafter_tr.create(&s, 1000, &st, NULL), ARB_OK);
    cr_assert_eq(arb_drafter_tr.begin(st, 100, true, NULL), ARB_OK);
    /* toy matrix: row x = x+1 .. x+8 (scores decreasing); write row 5 twice, last wins */
    int32_t tok[3] = {5, 7, 5}, prev[3] = {-1, -1, -1}, ids[24];
    float sc[24];
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 8; j++) {
            ids[r * 8 + j] = tok[r] + 1 + j + (r == 2 ? 100 : 0);
            sc[r * 8 + j] = 0.5f / (j + 1);
        }
    arb_harvest h = {.n = 3, .K = 8, .tok = tok, .prev = prev, .ids = ids, .scores = sc};
    arb_drafter_tr.harvest(st, &h);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 81, NULL), ARB_OK);
    int32_t S[2] = {1, 5};
    arb_tree_reset(&t, 5);
    arb_step_record rec = {0};
    arb_drafter_tr.propose(st, S, 2, &t, &rec);
    arb_tree_finalize(&t);
    cr_assert_eq(t.n, 81);
    cr_assert_eq(rec.mode, ARB_MODE_TREE);
    /* depth 1: row 5 (last write) = 106..113 */
    for (int j = 0; j < 8; j++)
        cr_assert_eq(t.tok[1 + j], 106 + j);
    /* depth 2 [0,0]: row 106 never written -> token 0 (kept, as the reference) */
    cr_assert_eq(t.tok[9], 0);
    for (int i = 1; i < t.n; i++)
        cr_assert_eq(t.source[i], ARB_SRC_TR);
    /* prune_unfilled drops the never-written rows: only depth 1 remains */
    s.tr_prune_unfilled = true;
    void *st2;
    cr_assert_eq(arb_drafter_tr.create(&s, 1000, &st2, NULL), ARB_OK);
    arb_drafter_tr.begin(st2, 100, true, NULL);
    arb_drafter_tr.harvest(st2, &h);
    arb_tree_reset(&t, 5);
    arb_drafter_tr.propose(st2, S, 2, &t, &rec);
    cr_assert_eq(t.n, 9);
    /* the prefill harvesting switch is the decoder's (test_decode.c, prompt_harvest_follows_the_spec) */
    arb_drafter_tr.destroy(st);
    arb_drafter_tr.destroy(st2);
    arb_tree_release(&t);
    s.topk = 4;
    cr_assert_eq(arb_drafter_tr.create(&s, 1000, &st, NULL), ARB_E_INVAL, "template needs K >= 8");
}
