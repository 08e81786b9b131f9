/* engine_check.h — exactness checks shared by test_model_synth.c (synthetic
 * models, unit suite) and test_engine.c (SmolLM2, model suite). Test-only code:
 * static functions, included once per test file, asserting with Criterion.
 *
 * The reference for a node is always the pure autoregressive computation: its
 * root-to-node path fed one token per arb_eval (n = 1), committed one at a time.
 */
#ifndef ARB_TEST_ENGINE_CHECK_H
#define ARB_TEST_ENGINE_CHECK_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef struct check_stats {
    int trees, nodes, mismatches;
    int argmax_diff; /* nodes whose tree row and AR row have another argmax */
    double max_rel;  /* largest |tree - AR| logit over the AR row's largest |logit| */
} check_stats;

static int rnd(uint64_t *s, int n) /* uniform in [0, n) */
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (int)((*s >> 16) % (uint64_t)n);
}

static arb_ctx *check_ctx(arb_model *m, int n_ctx, int n_batch_max, int n_layer, bool want_hidden)
{
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = n_ctx;
    co.n_batch_max = n_batch_max;
    co.n_layer = n_layer;
    co.want_hidden = want_hidden;
    arb_ctx *c = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_ctx_new(m, &co, &c, &err), ARB_OK, "%s", err.msg);
    return c;
}

static void check_eval(arb_ctx *c, const int32_t *tok, const int32_t *par, int n, float *lg, float *hid)
{
    arb_err err = {0};
    cr_assert_eq(arb_eval(c, tok, par, n, lg, hid, &err), ARB_OK, "%s", err.msg);
}

static void check_commit_chain(arb_ctx *c, int n)
{
    int32_t path[1024];
    cr_assert_leq(n, 1024);
    for (int i = 0; i < n; i++)
        path[i] = i;
    arb_err err = {0};
    cr_assert_eq(arb_commit(c, path, n, &err), ARB_OK, "%s", err.msg);
}

/* Prefill: chain evals of up to 1024 tokens, each committed (lg: the n rows). */
static void check_prefill(arb_ctx *c, const int32_t *tok, int n, float *lg)
{
    enum { CHUNK = 1024 };
    int32_t par[CHUNK];
    for (int i = 0; i < CHUNK; i++)
        par[i] = i - 1;
    arb_model_info mi;
    arb_model_get_info(arb_ctx_model(c), &mi);
    for (int o = 0; o < n; o += CHUNK) {
        const int m = n - o < CHUNK ? n - o : CHUNK;
        check_eval(c, tok + o, par, m, lg + (size_t)o * mi.n_vocab, NULL);
        check_commit_chain(c, m);
    }
}

/* A random tree of n nodes; shape drawn from a few families so deep chains,
   wide fans and bushy trees all occur. */
static void random_tree(uint64_t *s, int n, int n_vocab, int32_t *tok, int32_t *par)
{
    const int shape = rnd(s, 4);
    for (int i = 0; i < n; i++) {
        if (i == 0)
            par[i] = -1;
        else if (shape == 0)
            par[i] = rnd(s, i + 1) - 1; /* uniform, -1 allowed: several roots */
        else if (shape == 1)
            par[i] = rnd(s, 10) < 8 ? i - 1 : rnd(s, i); /* mostly a chain */
        else if (shape == 2)
            par[i] = rnd(s, 3) == 0 ? -1 : 0; /* wide */
        else
            par[i] = i - 1 - rnd(s, i < 4 ? i : 4); /* bushy and deep */
        tok[i] = rnd(s, 5) == 0 && i > 0 ? tok[i - 1] : rnd(s, n_vocab); /* repeated siblings too */
    }
}

/* AR reference for node v and its subtree: ctx holds prefix + path to v's parent. */
static void ar_walk(arb_ctx *c, const int32_t *tok, const int32_t *par, int n, int v, const float *tree_lg,
                    int n_vocab, float *lg1, check_stats *st)
{
    const int32_t root = -1;
    const int base = arb_ctx_n_past(c);
    check_eval(c, &tok[v], &root, 1, lg1, NULL);
    st->nodes++;
    const float *tr = tree_lg + (size_t)v * n_vocab;
    if (memcmp(lg1, tr, sizeof(float) * n_vocab) != 0) {
        st->mismatches++;
        double mx = 0, d = 0;
        int ia = 0, ib = 0;
        for (int k = 0; k < n_vocab; k++) {
            mx = fmax(mx, fabs(lg1[k]));
            d = fmax(d, fabs((double)lg1[k] - tr[k]));
            ia = lg1[k] > lg1[ia] ? k : ia;
            ib = tr[k] > tr[ib] ? k : ib;
        }
        st->argmax_diff += ia != ib;
        st->max_rel = fmax(st->max_rel, d / (mx > 0 ? mx : 1));
    }
    check_commit_chain(c, 1);
    for (int ch = v + 1; ch < n; ch++)
        if (par[ch] == v)
            ar_walk(c, tok, par, n, ch, tree_lg, n_vocab, lg1, st);
    cr_assert_eq(arb_ctx_truncate(c, base), ARB_OK);
}

/* Prefill a random prefix, evaluate a random tree of up to 64 nodes, and compare
   every node with its AR path (one single-token eval per node, by DFS + truncate). */
static void check_random_tree(arb_model *m, uint64_t *s, int n_vocab, int max_prefix, check_stats *st)
{
    const int P = 1 + rnd(s, max_prefix), n = 1 + rnd(s, 64);
    arb_ctx *c = check_ctx(m, max_prefix + 70, 64, 0, false);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(P + 64));
    int32_t par[64];
    float *lg = malloc(sizeof(float) * (size_t)n_vocab * (size_t)(P > 64 ? P : 64));
    float *lg1 = malloc(sizeof(float) * (size_t)n_vocab);
    for (int i = 0; i < P; i++)
        tok[i] = rnd(s, n_vocab);
    check_prefill(c, tok, P, lg);
    random_tree(s, n, n_vocab, tok + P, par);
    check_eval(c, tok + P, par, n, lg, NULL);
    for (int v = 0; v < n; v++)
        if (par[v] == -1)
            ar_walk(c, tok + P, par, n, v, lg, n_vocab, lg1, st);
    cr_assert_eq(arb_ctx_n_past(c), P);
    st->trees++;
    free(tok);
    free(lg);
    free(lg1);
    arb_ctx_free(c);
}

/* arb_eval_ex's per-node outputs (CPU) against arb_eval's full rows of the same n nodes at
   the current prefix (nothing committed): top-K ids and probabilities bit for bit those of
   arb_topk_softmax on each row (what decode computed on the host before the engine did),
   with or without logits and argmax in the same call; argmax = the first id; the rows
   themselves unchanged. Returns the number of rows checked. */
__attribute__((unused)) /* not every includer checks the top-K */
static int check_topk_outputs(arb_ctx *c, const int32_t *tok, const int32_t *par, int n, int n_vocab, int K)
{
    const size_t V = (size_t)n_vocab, nk = (size_t)n * K;
    float *lg = malloc(sizeof(float) * V * n), *lg2 = malloc(sizeof(float) * V * n);
    float *p = malloc(sizeof(float) * nk), *p_ref = malloc(sizeof(float) * nk);
    int32_t *ids = malloc(sizeof(int32_t) * nk), *ids_ref = malloc(sizeof(int32_t) * nk);
    int32_t *am = malloc(sizeof(int32_t) * n);
    cr_assert(lg && lg2 && p && p_ref && ids && ids_ref && am);
    check_eval(c, tok, par, n, lg, NULL);
    for (int i = 0; i < n; i++)
        arb_topk_softmax(lg + V * i, n_vocab, K, ids_ref + (size_t)i * K, p_ref + (size_t)i * K);
    arb_err err = {0};
    for (int mode = 0; mode < 2; mode++) { /* 0: top-K alone (chunked head); 1: with logits and argmax */
        memset(ids, 0xff, sizeof(int32_t) * nk);
        memset(p, 0xff, sizeof(float) * nk);
        arb_eval_out o = {.topk_k = K, .topk_ids = ids, .topk_p = p};
        if (mode) {
            o.logits = lg2;
            o.argmax = am;
        }
        cr_assert_eq(arb_eval_ex(c, tok, par, n, &o, &err), ARB_OK, "%s", err.msg);
        cr_assert(!memcmp(ids, ids_ref, sizeof(int32_t) * nk), "top-%d ids (mode %d) differ from the host's", K,
                  mode);
        cr_assert(!memcmp(p, p_ref, sizeof(float) * nk), "top-%d probabilities (mode %d) differ in some bit", K,
                  mode);
        if (mode) {
            cr_assert(!memcmp(lg2, lg, sizeof(float) * V * n), "logits rows changed by asking for the top-K");
            for (int i = 0; i < n; i++)
                cr_assert_eq(am[i], ids_ref[(size_t)i * K], "node %d: argmax %d, top-K first %d", i, am[i],
                             ids_ref[(size_t)i * K]);
        }
    }
    free(lg);
    free(lg2);
    free(p);
    free(p_ref);
    free(ids);
    free(ids_ref);
    free(am);
    return n;
}

/* arb_prefill_ex: the last token's logits, argmax, top-K and hidden row equal that row of
   arb_eval_ex over the whole chain (logits, hidden, argmax and ids bit for bit; the top-K
   probabilities within p_tol relative, 0 = bitwise), with the prompt in chunks of 16 and in
   one; the KV rows are the same (the next eval agrees bit for bit); no outputs = KV only;
   bad top-K and hidden arguments are refused. */
__attribute__((unused)) /* test_model_synth and test_gpu */
static void check_prefill_ex(arb_model *m, uint64_t seed, int n_vocab, int n_embd, double p_tol)
{
    enum { N = 40, K = 5 };
    int32_t tok[N + 1], par[N], path[N], ia[K], ib[K * N], am = -1, amb[N];
    for (int i = 0; i <= N; i++)
        tok[i] = rnd(&seed, n_vocab);
    for (int i = 0; i < N; i++)
        par[i] = i - 1, path[i] = i;
    float *lb = malloc(sizeof(float) * (size_t)n_vocab * N), *hb = malloc(sizeof(float) * (size_t)n_embd * N);
    float *la = malloc(sizeof(float) * (size_t)n_vocab), *ha = malloc(sizeof(float) * (size_t)n_embd);
    float pa[K], pb[K * N];
    arb_err err = {0};
    arb_ctx *b = check_ctx(m, 128, 64, 0, true);
    const arb_eval_out ob = {.logits = lb, .hidden = hb, .topk_k = K, .topk_ids = ib, .topk_p = pb, .argmax = amb};
    cr_assert_eq(arb_eval_ex(b, tok, par, N, &ob, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_commit(b, path, N, &err), ARB_OK, "%s", err.msg);
    for (int nb = 16; nb <= 64; nb += 48) { /* 40 tokens in chunks of 16, then in one */
        arb_ctx *a = check_ctx(m, 128, nb, 0, true);
        const arb_eval_out oa = {.logits = la, .hidden = ha, .topk_k = K, .topk_ids = ia, .topk_p = pa, .argmax = &am};
        cr_assert_eq(arb_prefill_ex(a, tok, N, &oa, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_ctx_n_past(a), N);
        cr_assert(memcmp(la, lb + (size_t)(N - 1) * n_vocab, sizeof(float) * n_vocab) == 0, "logits, nb %d", nb);
        cr_assert(memcmp(ha, hb + (size_t)(N - 1) * n_embd, sizeof(float) * n_embd) == 0, "hidden, nb %d", nb);
        cr_assert(memcmp(ia, ib + (N - 1) * K, sizeof ia) == 0, "top-K ids, nb %d", nb);
        for (int k = 0; k < K; k++)
            cr_assert_leq(fabs((double)pa[k] - pb[(N - 1) * K + k]), p_tol * fabs((double)pb[(N - 1) * K + k]),
                          "top-K probability %d, nb %d", k, nb);
        cr_assert_eq(am, amb[N - 1]);
        cr_assert_eq(am, ia[0]);
        /* KV only, then the same next eval as after the full chain */
        cr_assert_eq(arb_ctx_truncate(a, 0), ARB_OK);
        cr_assert_eq(arb_prefill_ex(a, tok, N, NULL, &err), ARB_OK, "%s", err.msg);
        const int32_t root = -1;
        check_eval(a, tok + N, &root, 1, la, NULL);
        check_eval(b, tok + N, &root, 1, lb, NULL);
        cr_assert(memcmp(la, lb, sizeof(float) * n_vocab) == 0, "next eval, nb %d", nb);
        const arb_eval_out bad_k = {.topk_k = ARB_TOPK_K_MAX + 1, .topk_ids = ia, .topk_p = pa};
        cr_assert_eq(arb_prefill_ex(a, tok, 2, &bad_k, &err), ARB_E_INVAL);
        arb_ctx_free(a);
    }
    arb_ctx *nh = check_ctx(m, 128, 64, 0, false);
    const arb_eval_out want_h = {.hidden = ha};
    cr_assert_eq(arb_prefill_ex(nh, tok, 2, &want_h, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "want_hidden"), "%s", err.msg);
    arb_ctx_free(nh);
    arb_ctx_free(b);
    free(la);
    free(lb);
    free(ha);
    free(hb);
}

/* A chain of n tokens: chunked prefill (n_batch_max nb, model ma), one-batch prefill
   and token-by-token AR (model mb, maybe another thread count) agree bitwise. */
static void check_chunked_prefill(arb_model *ma, arb_model *mb, uint64_t *s, int n_vocab, int n, int nb)
{
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n);
    float *la = malloc(sizeof(float) * (size_t)n_vocab * n), *lb = malloc(sizeof(float) * (size_t)n_vocab * n);
    for (int i = 0; i < n; i++)
        tok[i] = rnd(s, n_vocab);
    arb_ctx *a = check_ctx(ma, n + 8, nb, 0, false);
    arb_ctx *b = check_ctx(mb, n + 8, 8, 0, false);
    arb_ctx *w = check_ctx(mb, n + 8, n, 0, false);
    check_prefill(a, tok, n, la);
    cr_assert_eq(arb_ctx_n_past(a), n);
    const int32_t root = -1;
    for (int i = 0; i < n; i++) {
        check_eval(b, &tok[i], &root, 1, lb + (size_t)i * n_vocab, NULL);
        check_commit_chain(b, 1);
    }
    for (int i = 0; i < n; i++)
        cr_assert(memcmp(la + (size_t)i * n_vocab, lb + (size_t)i * n_vocab, sizeof(float) * n_vocab) == 0,
                  "position %d: chunked prefill differs from AR", i);
    check_prefill(w, tok, n, lb);
    cr_assert(memcmp(la, lb, sizeof(float) * n_vocab * n) == 0, "one-batch prefill differs from chunked");
    free(tok);
    free(la);
    free(lb);
    arb_ctx_free(a);
    arb_ctx_free(b);
    arb_ctx_free(w);
}

/* Tree step, commit a random root-to-node path, one more AR step: equals a fresh
   pure-AR run over prefix + path + next token. */
static void check_commit(arb_model *m, uint64_t *s, int n_vocab, int max_prefix)
{
    const int P = 1 + rnd(s, max_prefix), n = 1 + rnd(s, 64);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(2 * P + 140));
    int32_t par[64], path[64], seq[64];
    float *lg = malloc(sizeof(float) * (size_t)n_vocab * (size_t)(P > 64 ? P : 64));
    float *l1 = malloc(sizeof(float) * (size_t)n_vocab), *l2 = malloc(sizeof(float) * (size_t)n_vocab);
    for (int i = 0; i < P; i++)
        tok[i] = rnd(s, n_vocab);
    arb_ctx *c = check_ctx(m, P + 140, 64, 0, false);
    check_prefill(c, tok, P, lg);
    random_tree(s, n, n_vocab, tok + P, par);
    check_eval(c, tok + P, par, n, lg, NULL);
    int d = 0;
    for (int v = rnd(s, n); v >= 0; v = par[v])
        seq[d++] = v;
    for (int j = 0; j < d; j++)
        path[j] = seq[d - 1 - j];
    arb_err err = {0};
    cr_assert_eq(arb_commit(c, path, d, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_past(c), P + d);
    const int32_t root = -1, next = rnd(s, n_vocab);
    check_eval(c, &next, &root, 1, l1, NULL);

    arb_ctx *r = check_ctx(m, P + 140, 1, 0, false);
    int32_t *all = tok + P + 64;
    int na = 0;
    for (int i = 0; i < P; i++)
        all[na++] = tok[i];
    for (int j = 0; j < d; j++)
        all[na++] = tok[P + path[j]];
    all[na++] = next;
    for (int i = 0; i < na; i++) {
        check_eval(r, &all[i], &root, 1, l2, NULL);
        check_commit_chain(r, 1);
    }
    cr_assert(memcmp(l1, l2, sizeof(float) * n_vocab) == 0, "after commit of %d nodes: differs from pure AR", d);
    free(tok);
    free(lg);
    free(l1);
    free(l2);
    arb_ctx_free(c);
    arb_ctx_free(r);
}

/* want_hidden gives n x n_embd rows that are batch-invariant too; n_layer = 1
   (self-draft) is exact as well and differs from the full model. */
static void check_hidden_and_layers(arb_model *m, uint64_t *s, int n_vocab, int n_embd)
{
    enum { N = 12 };
    int32_t tok[N], par[N];
    random_tree(s, N, n_vocab, tok, par);
    float *lg = malloc(sizeof(float) * n_vocab * N), *lgs = malloc(sizeof(float) * n_vocab * N);
    float *hid = malloc(sizeof(float) * n_embd * N), *hid1 = malloc(sizeof(float) * n_embd);
    float *l1 = malloc(sizeof(float) * n_vocab);
    for (int L = 0; L <= 1; L++) {
        arb_ctx *c = check_ctx(m, 64, N, L, true);
        check_eval(c, tok, par, N, L ? lgs : lg, hid);
        /* each root node alone must match (roots see the empty prefix) */
        const int32_t root = -1;
        for (int v = 0; v < N; v++) {
            if (par[v] != -1)
                continue;
            check_eval(c, &tok[v], &root, 1, l1, hid1);
            cr_assert(memcmp(l1, (L ? lgs : lg) + (size_t)v * n_vocab, sizeof(float) * n_vocab) == 0);
            cr_assert(memcmp(hid1, hid + (size_t)v * n_embd, sizeof(float) * n_embd) == 0);
        }
        for (int i = 0; i < N * n_embd; i++)
            cr_assert(isfinite(hid[i]));
        arb_ctx_free(c);
    }
    cr_assert(memcmp(lg, lgs, sizeof(float) * n_vocab * N) != 0, "n_layer = 1 gave the full model's logits");
    free(lg);
    free(lgs);
    free(hid);
    free(hid1);
    free(l1);
}

#endif
