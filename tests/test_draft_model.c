/* test_draft_model.c — the draft-model drafter and speculative sampling on the real default
 * model (skips without it):
 *  - every q row of a drafted single / i.i.d. / delayed tree equals PROCESS of the draft
 *    model's logits for that node evaluated alone in AR order (KV catch-up, tentative trunk
 *    commits, branch tries and truncation are all exact), and C(v) has the drafted shape;
 *  - at temperature -> 0 every sampling verifier reproduces the greedy AR tokens;
 *  - a separate draft model identical to the target (draft_model "target": the target's GGUF
 *    loaded again, q = p) gets every drafted token accepted
 *    by every verifier except NSS, at T = 1 too;
 *  - runs are reproducible per seed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "drafters/draft_model.h"
#include "genutil.h"
#include "method.h"
#include "modelfetch.h"

#include "model_fixture.h"

static const char *prompt = "Write a Python function that returns the n-th Fibonacci number.";

Test(draft_model, q_rows_equal_ar_recomputation, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(M, &mi);
    const int V = mi.n_vocab;
    arb_draft_model_opts o = arb_draft_model_default_opts();
    o.self_layers = 8;
    arb_draft_model *dm;
    cr_assert_eq(arb_draft_model_new(M, &o, 32, &dm, &err), 0, "%s", err.msg);
    /* an independent reference context: same cut, AR evaluation of each root-to-node path */
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_layer = 8;
    arb_ctx *ref;
    cr_assert_eq(arb_ctx_new(M, &co, &ref, &err), 0, "%s", err.msg);
    int32_t *S, n_S;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &S, &n_S, &err), 0, "%s", err.msg);
    arb_tree t;
    arb_tree_init(&t, 32, &err);
    double *q = malloc(sizeof(double) * 32 * (size_t)V), *pr = malloc(sizeof(double) * (size_t)V);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)V), par[64];
    arb_sampling sm = {.temperature = 1.0, .top_k = 0, .top_p = 0.95};
    const arb_draft_shape shapes[] = {{1, 0, 4}, {3, 0, 3}, {3, 1, 2}, {2, 2, 2}};
    for (int si = 0; si < 4; si++) {
        arb_draft_shape sh = shapes[si];
        for (int rep = 0; rep < 2; rep++) { /* rep 1: the sequence grew by two tokens */
            int n_use = n_S - 2 + 2 * rep;
            arb_rng r;
            arb_rng_init(&r, 7, (uint32_t)si, (uint32_t)rep, ARB_STREAM_DRAFT);
            arb_tree_reset(&t, S[n_use - 1]);
            arb_draft_stats st;
            cr_assert_eq(arb_draft_model_propose(dm, S, n_use, sh, &sm, &r, &t, q, &st, &err), 0, "%s", err.msg);
            arb_tree_finalize(&t);
            cr_assert_leq(t.n, arb_draft_shape_nodes(sh));
            cr_assert_gt(st.us, 0);
            cr_assert_eq(st.n_evals, 1 + sh.l + (sh.b > 0 ? sh.b - 1 : 0), "shape %d: %d draft passes", si, st.n_evals);
            for (int v = 0; v < t.n; v++) {
                int d = t.depth[v], want = d < sh.l ? 1 : (d < sh.l + sh.b ? -1 : 0);
                if (want == 1)
                    cr_assert_eq(t.seq_len[v], 1, "trunk node %d has one child", v);
                if (want == 0)
                    cr_assert_eq(t.seq_len[v], 0, "leaf");
                if (d == sh.l)
                    cr_assert_eq(t.seq_len[v], sh.k, "branch point has k = %d draws", sh.k);
                if (t.seq_len[v] == 0)
                    continue;
                /* reference: prefix + path tokens as one chain from scratch */
                int np = arb_tree_path(&t, v, par);
                arb_ctx_truncate(ref, 0);
                int32_t *chain = malloc(sizeof(int32_t) * (size_t)(n_use + np));
                int32_t *cp = malloc(sizeof(int32_t) * (size_t)(n_use + np));
                memcpy(chain, S, sizeof(int32_t) * (size_t)n_use);
                for (int i = 1; i < np; i++)
                    chain[n_use + i - 1] = t.tok[par[i]];
                int nc = n_use + np - 1;
                float *big = malloc(sizeof(float) * (size_t)nc * (size_t)V);
                for (int i = 0; i < nc; i++)
                    cp[i] = i - 1;
                cr_assert_eq(arb_eval(ref, chain, cp, nc, big, NULL, &err), 0, "%s", err.msg);
                arb_sample_process(big + (size_t)(nc - 1) * V, V, &sm, pr, idx);
                double md = 0;
                for (int x = 0; x < V; x++)
                    md = fmax(md, fabs(pr[x] - q[(size_t)v * V + x]));
                cr_assert_eq(md, 0.0, "shape %d node %d depth %d: q row differs from AR by %.3e", si, v, d, md);
                double S1 = 0;
                for (int x = 0; x < V; x++)
                    S1 += q[(size_t)v * V + x];
                cr_assert(fabs(S1 - 1) < 1e-12);
                /* every drafted child had positive draft probability */
                for (int j = 0; j < t.seq_len[v]; j++)
                    cr_assert_gt(q[(size_t)v * V + t.tok[t.child_seq[t.seq_start[v] + j]]], 0);
                free(big);
                free(chain);
                free(cp);
            }
        }
    }
    free(q); free(pr); free(idx); free(S);
    arb_tree_release(&t);
    arb_ctx_free(ref);
    arb_draft_model_free(dm);
}

/* How the step evals hand the target laws over (gen's rows_mode): 0 the default (rows back,
   each law processed when its verifier reads it), 1 fetch_p_rows (no rows back, each read
   law's row fetched alone: the GPU path), 2 full_rows. */
static int rows_mode;

static int gen(const char *verifier, double T, const char *draft_model, int k, int l, int b, uint64_t seed,
               int max_new, int32_t *out, int *acc_all, int *n_steps)
{
    arb_err err = {0};
    arb_method_spec s;
    if (!strcmp(verifier, "ar")) {
        cr_assert_eq(arb_method_spec_preset("ar", &s, &err), 0);
    } else {
        cr_assert_eq(arb_method_spec_preset("draft", &s, &err), 0, "%s", err.msg);
        snprintf(s.verifier, sizeof s.verifier, "%s", verifier);
        snprintf(s.draft_model, sizeof s.draft_model, "%s", draft_model);
        s.draft_layers = 20;
        s.dte_k = k;
        s.dte_l = l;
        s.dte_b = b;
    }
    s.temperature = T;
    s.seed = seed;
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), 0, "%s: %s", verifier, err.msg);
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &ids, &n, &err), 0);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    o.stop_at_eos = false;
    o.fetch_p_rows = rows_mode == 1;
    o.full_rows = rows_mode == 2;
    arb_prompt_result r;
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, NULL, &r, &err), 0, "%s: %s", verifier, err.msg);
    memcpy(out, r.ids, sizeof(int32_t) * (size_t)r.n_generated);
    *n_steps = r.n_steps;
    /* all-accepted steps: every step committed l + b + 1 tokens except a truncated last one */
    *acc_all = r.n_generated == 1 + r.n_steps * (l + b + 1) - r.n_truncated;
    free(ids);
    arb_decoder_free(d);
    return r.n_generated;
}

static const char *const SAMPLERS[] = {"nss", "naive", "naivetree", "bv", "spectr", "specinfer", "khisti", "traversal"};

Test(draft_model, near_zero_temperature_equals_greedy, .init = setup, .fini = teardown, .timeout = 1500)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    int32_t ref[64], got[64];
    int a, st;
    int n_ref = gen("ar", 0, "self", 0, 0, 0, 1, 24, ref, &a, &st);
    for (int i = 0; i < 8; i++) {
        int k = strcmp(SAMPLERS[i], "naive") && strcmp(SAMPLERS[i], "bv") ? 2 : 1;
        int n = gen(SAMPLERS[i], 1e-4, "self", k, 1, 2, 3, 24, got, &a, &st);
        cr_assert_eq(n, n_ref);
        for (int j = 0; j < n; j++)
            cr_assert_eq(got[j], ref[j], "%s at T = 1e-4: token %d differs from greedy", SAMPLERS[i], j);
        cr_log_info("%s T=1e-4: %d tokens in %d steps (greedy AR: %d)", SAMPLERS[i], n, st, n_ref);
    }
}

Test(draft_model, identical_draft_accepts_everything_and_seeds_reproduce, .init = setup, .fini = teardown,
     .timeout = 1500)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    int32_t a1[64], a2[64];
    int all, st;
    for (int i = 1; i < 8; i++) { /* q = p: min(1, p/q) = 1 everywhere; NSS excluded */
        gen(SAMPLERS[i], 1.0, "target", 2, 1, 2, 5, 20, a1, &all, &st);
        cr_assert(all, "%s with draft = target: every drafted token accepted", SAMPLERS[i]);
    }
    int n1 = gen("traversal", 1.0, "self", 2, 0, 3, 11, 24, a1, &all, &st);
    int n2 = gen("traversal", 1.0, "self", 2, 0, 3, 11, 24, a2, &all, &st);
    cr_assert_eq(n1, n2);
    cr_assert_arr_eq(a1, a2, sizeof(int32_t) * (size_t)n1, "same seed, same tokens");
}

/* The target laws reach the verifier three ways (rows_mode above): all give the same tokens and
   steps for every sampling verifier at T = 1 (the laws are the same bits, the coins the same). */
Test(draft_model, laws_fetched_alone_equal_every_row, .init = setup, .fini = teardown, .timeout = 1500)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    for (int i = 0; i < 8; i++) {
        const int k = strcmp(SAMPLERS[i], "naive") && strcmp(SAMPLERS[i], "bv") ? 3 : 1;
        int32_t toks[3][64];
        int n[3], steps[3], all;
        for (rows_mode = 0; rows_mode < 3; rows_mode++)
            n[rows_mode] = gen(SAMPLERS[i], 1.0, "self", k, 1, 2, 17, 32, toks[rows_mode], &all, &steps[rows_mode]);
        rows_mode = 0;
        for (int m = 1; m < 3; m++) {
            cr_assert_eq(n[m], n[0], "%s mode %d: %d vs %d tokens", SAMPLERS[i], m, n[m], n[0]);
            cr_assert_eq(steps[m], steps[0], "%s mode %d: %d vs %d steps", SAMPLERS[i], m, steps[m], steps[0]);
            cr_assert_arr_eq(toks[m], toks[0], sizeof(int32_t) * (size_t)n[0], "%s mode %d: the same tokens",
                             SAMPLERS[i], m);
        }
        cr_log_info("%s: %d tokens in %d steps, the same with rows on demand, fetched alone and all rows",
                    SAMPLERS[i], n[0], steps[0]);
    }
}
