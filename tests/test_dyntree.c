/* test_dyntree.c — EAGLE-2's dynamic tree builder (harness/dyntree.h, docs/spec/drafting.md §8)
 * against a brute-force re-run of the reference procedure (every level drafted, no early stop,
 * full sorts) on hand-built distributions: random path-keyed top-k lists, and coarse values
 * with many exact ties (the tie rules and the early stop must give the same set). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dyntree.h"
#include "sample.h"

#define V_TOY 1000
#define MAXC 4096

typedef struct toy {    /* a "draft model": the top-k list of a node is a function of its path */
    int ties;           /* 1: log-probs on a coarse grid (many equal values) */
    int short_lists;    /* 1: some nodes offer fewer than k children (ids < 0) */
    int fail_at;        /* > 0: the fail_at-th expand call returns ARB_E_RANGE */
    int calls;
} toy;

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/* the top-k list below a path with hash h: distinct tokens, log-probs best first */
static void toy_list(const toy *ty, uint64_t h, int k, int32_t *ids, float *logp)
{
    arb_rng r;
    arb_rng_init(&r, h, 1, 2, ARB_STREAM_AUX);
    double w[16], S = 0;
    for (int j = 0; j < k; j++)
        S += w[j] = arb_rng_u(&r) + 0.05;
    for (int j = 0; j < k; j++) /* descending */
        for (int i = j + 1; i < k; i++)
            if (w[i] > w[j]) {
                double x = w[i];
                w[i] = w[j];
                w[j] = x;
            }
    int n_ok = ty->short_lists && h % 5 == 0 ? 1 + (int)(h % 3) : k;
    for (int j = 0; j < k; j++) {
        ids[j] = j < n_ok ? (int32_t)((h % V_TOY + 37 * (uint64_t)j) % V_TOY) : -1;
        logp[j] = ty->ties ? -0.5f * (float)(j + (int)(h % 3)) : (float)log(w[j] / S * 0.9);
    }
}

static uint64_t path_hash_cand(const arb_dyntree_cand *c, int v)
{
    return v < 0 ? 12345u : mix(path_hash_cand(c, c[v].parent), (uint64_t)c[v].tok);
}

static int toy_expand(void *ud, const arb_dyntree_cand *cand, const int32_t *front, int n, int k, int32_t *ids,
                      float *logp, arb_err *err)
{
    toy *ty = ud;
    if (ty->fail_at && ++ty->calls == ty->fail_at)
        return ARB_ERR(err, ARB_E_RANGE, "toy: context full");
    for (int i = 0; i < n; i++)
        toy_list(ty, path_hash_cand(cand, front[i]), k, ids + i * k, logp + i * k);
    return ARB_OK;
}

/* ---- brute force: the reference procedure written out with full sorts ---- */
typedef struct bf_cand { int32_t tok, parent; float score; uint64_t h; } bf_cand;
static bf_cand bf[MAXC];
static const bf_cand *bf_sort_base;

static int bf_cmp(const void *a, const void *b) /* value descending, then creation index */
{
    int i = *(const int *)a, j = *(const int *)b;
    float si = bf_sort_base[i].score, sj = bf_sort_base[j].score;
    if (si != sj)
        return si > sj ? -1 : 1;
    return i - j;
}

static int bf_children(const toy *ty, int p, int k, int *n_bf)
{
    int32_t ids[16];
    float lp[16];
    uint64_t h = p < 0 ? 12345u : bf[p].h;
    toy_list(ty, h, k, ids, lp);
    int first = *n_bf;
    for (int j = 0; j < k; j++) {
        if (ids[j] < 0)
            continue;
        bf[*n_bf] = (bf_cand){.tok = ids[j], .parent = p, .score = (p < 0 ? 0.0f : bf[p].score) + lp[j],
                              .h = mix(h, (uint64_t)ids[j])};
        (*n_bf)++;
    }
    return first;
}

/* selected candidate indices (sorted ascending) into sel; returns the count */
static int brute_force(const toy *ty, const arb_dyntree_opts *o, int *sel)
{
    int n_bf = 0, front[16], n_front = 0;
    static int all[MAXC], lev[MAXC];
    bf_sort_base = bf;
    bf_children(ty, -1, o->topk, &n_bf);
    for (int i = 0; i < n_bf; i++)
        front[n_front++] = i;
    for (int level = 2; level <= o->depth; level++) {
        int first = n_bf;
        for (int i = 0; i < n_front; i++)
            bf_children(ty, front[i], o->topk, &n_bf);
        int n_lev = 0;
        for (int c = first; c < n_bf; c++)
            lev[n_lev++] = c;
        qsort(lev, (size_t)n_lev, sizeof *lev, bf_cmp);
        n_front = n_lev < o->topk ? n_lev : o->topk;
        memcpy(front, lev, sizeof(int) * (size_t)n_front);
    }
    for (int c = 0; c < n_bf; c++)
        all[c] = c;
    qsort(all, (size_t)n_bf, sizeof *all, bf_cmp);
    int m = n_bf < o->total - 1 ? n_bf : o->total - 1;
    memcpy(sel, all, sizeof(int) * (size_t)m);
    for (int i = 1; i < m; i++) /* ascending index */
        for (int j = i; j > 0 && sel[j - 1] > sel[j]; j--) {
            int x = sel[j];
            sel[j] = sel[j - 1];
            sel[j - 1] = x;
        }
    return m;
}

/* hash of a tree node's token path, the same keying as bf[].h */
static uint64_t tree_hash(const arb_tree *t, int v)
{
    return v == 0 ? 12345u : mix(tree_hash(t, t->parent[v]), (uint64_t)t->tok[v]);
}

static int u64cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void check_case(toy ty, arb_dyntree_opts o)
{
    arb_err err = {0};
    arb_dyntree *dt;
    cr_assert_eq(arb_dyntree_new(&o, &dt, &err), 0, "%s", err.msg);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, o.total, &err), 0);
    arb_tree_reset(&t, 7);
    arb_dyntree_source src = {.expand = toy_expand, .ud = &ty};
    arb_dyntree_stats st;
    cr_assert_eq(arb_dyntree_build(dt, &src, &t, ARB_SRC_DRAFT, &st, &err), 0, "%s", err.msg);
    arb_tree_finalize(&t); /* invariants: parents before children, depths */
    static int sel[MAXC];
    int m = brute_force(&ty, &o, sel);
    cr_assert_eq(t.n - 1, m, "d%d k%d m%d ties%d: %d nodes, brute force %d", o.depth, o.topk, o.total, ty.ties,
                 t.n - 1, m);
    cr_assert_eq(st.n_selected, m);
    cr_assert_leq(st.n_expand, o.depth);
    static uint64_t a[MAXC], b[MAXC];
    for (int i = 0; i < m; i++) {
        a[i] = bf[sel[i]].h;
        b[i] = tree_hash(&t, i + 1);
        cr_assert_eq(t.source[i + 1], ARB_SRC_DRAFT);
        cr_assert_leq(t.depth[i + 1], o.depth);
        cr_assert(t.draft_prob[i + 1] > 0 && t.draft_prob[i + 1] <= 1);
    }
    /* creation order is the same in both, so the selected sets match path for path, and the
       path values the tree carries are the brute force's (up to exp/log rounding) */
    for (int i = 0; i < m; i++)
        cr_assert(fabsf(t.path_logp[i + 1] - bf[sel[i]].score) < 1e-4f, "node %d: %g vs %g", i + 1,
                  t.path_logp[i + 1], bf[sel[i]].score);
    qsort(a, (size_t)m, sizeof *a, u64cmp);
    qsort(b, (size_t)m, sizeof *b, u64cmp);
    cr_assert_eq(memcmp(a, b, sizeof(uint64_t) * (size_t)m), 0, "selected sets differ (d%d k%d total %d ties %d)",
                 o.depth, o.topk, o.total, ty.ties);
    /* the builder's candidates carry the brute force's values; every dropped one is no better
       than the worst kept one */
    int nc;
    const int32_t *node_of;
    const arb_dyntree_cand *c = arb_dyntree_cands(dt, &nc, &node_of);
    for (int i = 0; i < nc; i++)
        if (node_of[i] < 0)
            cr_assert_leq(c[i].score, st.min_score);
    arb_tree_release(&t);
    arb_dyntree_free(dt);
}

Test(dyntree, matches_brute_force)
{
    const int shapes[][3] = {{6, 10, 60}, {5, 10, 60}, {3, 4, 20}, {8, 3, 30}, {4, 16, 200}, {1, 10, 5},
                             {2, 2, 100}, {6, 10, 2}, {7, 5, 1024}};
    for (int ties = 0; ties < 2; ties++)
        for (int sl = 0; sl < 2; sl++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                arb_dyntree_opts o = {.depth = shapes[s][0], .topk = shapes[s][1], .total = shapes[s][2]};
                check_case((toy){.ties = ties, .short_lists = sl}, o);
            }
}

/* The early stop is exact and saves calls: with ties on a coarse grid and a small budget, the
   deep levels cannot enter the selection. */
Test(dyntree, early_stop_saves_expansions)
{
    arb_err err = {0};
    arb_dyntree_opts o = {.depth = 8, .topk = 4, .total = 5};
    arb_dyntree *dt;
    cr_assert_eq(arb_dyntree_new(&o, &dt, &err), 0);
    arb_tree t;
    arb_tree_init(&t, 8, &err);
    arb_tree_reset(&t, 1);
    toy ty = {.ties = 1};
    arb_dyntree_source src = {.expand = toy_expand, .ud = &ty};
    arb_dyntree_stats st;
    cr_assert_eq(arb_dyntree_build(dt, &src, &t, ARB_SRC_HEAD, &st, &err), 0);
    cr_assert_lt(st.n_expand, 8, "expanded %d times", st.n_expand);
    cr_assert_eq(t.source[1], ARB_SRC_HEAD);
    arb_tree_release(&t);
    arb_dyntree_free(dt);
    check_case((toy){.ties = 1}, o);
}

Test(dyntree, errors)
{
    arb_err err = {0};
    arb_dyntree *dt = (arb_dyntree *)1;
    arb_dyntree_opts o = arb_dyntree_default_opts();
    cr_assert_eq(o.depth, 6);
    cr_assert_eq(o.topk, 10);
    cr_assert_eq(o.total, 60);
    o.topk = 17;
    cr_assert_eq(arb_dyntree_new(&o, &dt, &err), ARB_E_INVAL);
    cr_assert_null(dt);
    cr_assert(strstr(err.msg, "topk"), "%s", err.msg);
    o = arb_dyntree_default_opts();
    o.depth = 0;
    cr_assert_eq(arb_dyntree_opts_check(&o, "method E", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "method E: max_depth"), "%s", err.msg);
    o = arb_dyntree_default_opts();
    o.total = 1;
    cr_assert_eq(arb_dyntree_opts_check(&o, "method E", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "budget"), "%s", err.msg);
    o = arb_dyntree_default_opts();
    cr_assert_eq(arb_dyntree_new(&o, &dt, &err), 0);
    arb_tree t;
    arb_tree_init(&t, 30, &err);
    arb_tree_reset(&t, 1);
    toy ty = {.fail_at = 2};
    arb_dyntree_source src = {.expand = toy_expand, .ud = &ty};
    cr_assert_eq(arb_dyntree_build(dt, &src, &t, ARB_SRC_DRAFT, NULL, &err), ARB_E_INVAL, "tree too small");
    arb_tree_release(&t);
    arb_tree_init(&t, 60, &err);
    arb_tree_reset(&t, 1);
    cr_assert_eq(arb_dyntree_build(dt, &src, &t, ARB_SRC_DRAFT, NULL, &err), ARB_E_RANGE, "source error passes up");
    cr_assert(strstr(err.msg, "context full"), "%s", err.msg);
    arb_tree_release(&t);
    arb_dyntree_free(dt);
    arb_dyntree_free(NULL);
}
