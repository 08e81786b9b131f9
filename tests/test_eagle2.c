/* test_eagle2.c — the "eagle2-draft" drafter on the real default model (skips without it):
 *  - every node of a drafted EAGLE-2 tree is the rank[v]-th entry of the draft model's top-k
 *    for its parent's path evaluated alone as one AR chain (the per-level ancestor batches
 *    and the catch-up are exact), with its probability (up to the log/exp round trip);
 *  - the tree has the configured budget and depth and only DRAFT nodes;
 *  - bad parameters are rejected at create with the field named.
 * Losslessness of the whole method (greedy walk) is in test_decode. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "drafters/drafter.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */
#include "genutil.h"
#include "method.h"
#include "modelfetch.h"

#include "model_fixture.h"

static const char *prompt = "Write a Python function that returns the n-th Fibonacci number.";

Test(eagle2, nodes_are_the_draft_models_topk_of_their_path, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(M, &mi);
    const int V = mi.n_vocab;
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("eagle2", &s, &err), 0, "%s", err.msg);
    s.draft_layers = 8;
    s.budget = 40;
    s.topk = 6;
    s.max_depth = 5;
    cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "%s", err.msg);
    const arb_drafter_i *dr = arb_drafter_find("eagle2-draft");
    cr_assert_not_null(dr);
    void *st;
    cr_assert_eq(dr->create(&s, V, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(dr->bind(st, C, &err), 0, "%s", err.msg);
    cr_assert_eq(dr->begin(st, 4096, true, &err), 0, "%s", err.msg);
    arb_ctx_opts co = arb_ctx_default_opts(); /* reference: the same cut, one chain per path */
    co.n_layer = 8;
    arb_ctx *ref;
    cr_assert_eq(arb_ctx_new(M, &co, &ref, &err), 0, "%s", err.msg);
    int32_t *S, n_S;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &S, &n_S, &err), 0, "%s", err.msg);
    arb_tree t;
    arb_tree_init(&t, s.budget, &err);
    float *big = malloc(sizeof(float) * (size_t)(n_S + 8) * (size_t)V);
    int32_t chain[4096], cp[4096], par[64], ids[16];
    float sc[16];
    for (int rep = 0; rep < 2; rep++) { /* rep 1: the sequence grew by three tokens (catch-up) */
        int n_use = n_S - 3 + 3 * rep;
        arb_tree_reset(&t, S[n_use - 1]);
        arb_step_record rec = {0};
        dr->propose(st, S, n_use, &t, &rec);
        arb_tree_finalize(&t);
        cr_assert_eq(rec.mode, ARB_MODE_TREE);
        cr_assert_eq(t.n, s.budget, "a full tree of %d nodes, got %d", s.budget, t.n);
        cr_assert_leq(t.max_depth, s.max_depth);
        cr_assert_geq(t.max_depth, 2, "the dynamic tree grows past the anchor's children");
        for (int v = 1; v < t.n; v++) {
            cr_assert_eq(t.source[v], ARB_SRC_DRAFT);
            cr_assert(t.rank[v] >= 0 && t.rank[v] < s.topk);
            int np = arb_tree_path(&t, t.parent[v], par); /* anchor .. parent */
            memcpy(chain, S, sizeof(int32_t) * (size_t)n_use);
            for (int i = 1; i < np; i++)
                chain[n_use + i - 1] = t.tok[par[i]];
            int nc = n_use + np - 1;
            for (int i = 0; i < nc; i++)
                cp[i] = i - 1;
            arb_ctx_truncate(ref, 0);
            cr_assert_eq(arb_eval(ref, chain, cp, nc, big, NULL, &err), 0, "%s", err.msg);
            arb_topk_softmax(big + (size_t)(nc - 1) * V, V, s.topk, ids, sc);
            cr_assert_eq(ids[t.rank[v]], t.tok[v], "node %d (depth %d): token %d is not rank %d of its parent's "
                         "top-k (%d)", v, t.depth[v], t.tok[v], t.rank[v], ids[t.rank[v]]);
            /* the tree ranks on log q and stores exp(log q): equal up to that round trip */
            cr_assert_leq(fabsf(t.draft_prob[v] - sc[t.rank[v]]), 1e-6f * sc[t.rank[v]],
                          "node %d: draft prob %.9g vs AR %.9g", v, t.draft_prob[v], sc[t.rank[v]]);
        }
    }
    free(big);
    free(S);
    arb_tree_release(&t);
    arb_ctx_free(ref);
    dr->destroy(st);
}

Test(eagle2, bad_parameters_name_the_field)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("eagle2", &s, &err), 0, "%s", err.msg);
    cr_assert_str_eq(s.drafter, "eagle2-draft");
    cr_assert_eq(s.budget, 60);
    cr_assert_eq(s.max_depth, 6);
    cr_assert_eq(s.topk, 10);
    cr_assert_eq(arb_method_max_nodes(&s), 60);
    s.budget = 1;
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "budget"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("eagle2", &s, &err), 0);
    cr_assert_eq(arb_method_param_set(&s, "topk", "17", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "topk"), "%s", err.msg);
    s.temperature = 0.7;
    cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "nss at T > 0: %s", err.msg);
    snprintf(s.verifier, sizeof s.verifier, "traversal");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL, "traversal is not valid on top-k trees");
    cr_assert(strstr(err.msg, "det"), "%s", err.msg);
    snprintf(s.verifier, sizeof s.verifier, "greedy");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL, "greedy at T > 0");
    void *st = NULL;
    arb_method_spec_preset("eagle2", &s, &err);
    s.max_depth = 0; /* the drafter checks its own shape too */
    cr_assert_eq(arb_drafter_find("eagle2-draft")->create(&s, 100, &st, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "max_depth"), "%s", err.msg);
    cr_assert_null(st);
}
