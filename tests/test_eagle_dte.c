/* test_eagle_dte.c — the EAGLE head as a sampling draft (drafter `eagle-dte`, eagle_dte.c) on the
 * real default model (skips without it):
 *  - q is what the verifier receives: every q row of drafted delayed / i.i.d. / single trees,
 *    before and after a committed step (catch-up of an accepted path), equals bit for bit
 *    PROCESS of the head's logits at that node evaluated alone in AR order (a separate head
 *    instance with its own cache), and each child's stored draft probability is that row's entry;
 *  - at T -> 0 the OT verifiers reproduce the greedy AR tokens, and so does T = 0 (greedy walk);
 *  - a seeded T = 1 run is reproducible run to run;
 *  - a missing head file is refused with how to train one; bad method parameters by name.
 * The head is the trained one at the default path when it exists (the acceptance logged is then
 * meaningful), else a random head of the model's sizes (losslessness does not depend on it).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "drafters/drafter.h"
#include "drafters/medusa.h"
#include "eagle_head.h"
#include "genutil.h"
#include "heads.h"
#include "heads_file.h"
#include "method.h"
#include "sample.h"
#include "sha256.h"

#include "model_fixture.h"

static const char *prompt = "Write a Python function that returns the n-th Fibonacci number.";
static char head_file[32];      /* the method's `heads` value */
static char tmp_head[32];       /* a random head written by this test ("" if the trained one is used) */

/* The trained head when there is one, else a random head saved to a temporary file. */
static void pick_head(void)
{
    arb_err err = {0};
    char sha[65], path[4096];
    cr_assert_eq(arb_sha256_file(arb_model_path(M), sha, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_medusa_default_path("eagle", arb_model_path(M), sha, path, sizeof path, &err), ARB_OK);
    arb_eagle *h = NULL;
    arb_heads_meta meta;
    if (arb_eagle_load(path, sha, &h, &meta, &err) == ARB_OK) {
        arb_eagle_free(h);
        snprintf(head_file, sizeof head_file, "default");
        tmp_head[0] = 0;
        cr_log_info("trained EAGLE head: %s", path);
        return;
    }
    arb_eagle_cfg c;
    cr_assert_eq(arb_eagle_cfg_from_model(M, &c, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_eagle_new(&c, &h, &err), ARB_OK, "%s", err.msg);
    arb_eagle_init(h, 17);
    memset(&meta, 0, sizeof meta);
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%s", sha);
    snprintf(tmp_head, sizeof tmp_head, "/tmp/arb_edte_XXXXXX");
    int fd = mkstemp(tmp_head);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(arb_eagle_save(tmp_head, h, &meta, &err), ARB_OK, "%s", err.msg);
    arb_eagle_free(h);
    snprintf(head_file, sizeof head_file, "%s", tmp_head);
    cr_log_info("no trained EAGLE head: a random one (%s)", tmp_head);
}

static void setup_head(void)
{
    setup();
    if (M)
        pick_head();
}

static void teardown_head(void)
{
    if (tmp_head[0])
        remove(tmp_head);
    teardown();
}

static void spec_for(arb_method_spec *s, const char *verifier, double T, int k, int l, int b, uint64_t seed)
{
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("eagle-dte", s, &err), ARB_OK, "%s", err.msg);
    snprintf(s->heads, sizeof s->heads, "%s", head_file);
    snprintf(s->verifier, sizeof s->verifier, "%s", verifier);
    s->temperature = T;
    s->dte_k = k, s->dte_l = l, s->dte_b = b;
    s->seed = seed;
}

/* The reference: the head run alone, one row per call in AR order, over the committed rows
   (fc[i], tc[i]) and then the tree path to v; returns PROCESS of its logits at v in pr. */
typedef struct ref_head {
    arb_eagle *h;
    arb_eagle_kv *kv;
    arb_eagle_ws *ws;
    float *w_lm, *emb, *out, *lg;
    arb_lm_head lm;
    int32_t *idx;
} ref_head;

static void ref_law(ref_head *r, const float *fc, const int32_t *tc, int n_c, const arb_tree *t, int v,
                    const arb_sampling *sm, double *pr)
{
    const int E = r->h->c.E, V = r->h->c.V;
    for (int i = 0; i < n_c; i++) {
        int pos = i, vis = i, nv = 1;
        arb_eagle_rows(r->h, r->emb, r->kv, 1, fc + (size_t)i * E, tc + i, &pos, &pos, i, &vis, &nv, 1, r->out, r->ws);
    }
    int32_t path[64];
    int np = arb_tree_path(t, v, path);
    float f[1024];
    cr_assert_leq(E, 1024);
    memcpy(f, r->out, sizeof(float) * (size_t)E);
    for (int j = 1; j < np; j++) {
        int pos = n_c - 1 + j, nv = 1;
        arb_eagle_rows(r->h, r->emb, r->kv, 1, f, &t->tok[path[j]], &pos, &pos, pos, &pos, &nv, 1, r->out, r->ws);
        memcpy(f, r->out, sizeof(float) * (size_t)E);
    }
    arb_lm_head_logits(&r->lm, V, E, f, 1, r->lg);
    arb_sample_process(r->lg, V, sm, pr, r->idx);
}

/* Checks every internal node of the drafter's last tree against the reference; returns the number
   of internal nodes. */
static int check_tree(ref_head *r, const arb_tree *t, const double *q, const float *fc, const int32_t *tc, int n_c,
                      const arb_sampling *sm, double *pr, int k, int l, int b, const char *what)
{
    const int V = r->h->c.V;
    int n_int = 0;
    for (int v = 0; v < t->n; v++) {
        int d = t->depth[v];
        if (d < l)
            cr_assert_eq(t->seq_len[v], 1, "%s: trunk node %d has one draw", what, v);
        else if (d == l)
            cr_assert_eq(t->seq_len[v], k, "%s: the branch point has k = %d draws", what, k);
        if (d == l + b)
            cr_assert_eq(t->seq_len[v], 0, "%s: leaf %d", what, v);
        if (t->seq_len[v] == 0)
            continue;
        n_int++;
        ref_law(r, fc, tc, n_c, t, v, sm, pr);
        const double *qv = q + (size_t)v * V;
        cr_assert(!memcmp(pr, qv, sizeof(double) * (size_t)V),
                  "%s: node %d (depth %d): the q row is not the head's law evaluated alone", what, v, d);
        for (int j = 0; j < t->seq_len[v]; j++) {
            int c = t->child_seq[t->seq_start[v] + j];
            cr_assert_gt(qv[t->tok[c]], 0, "%s: a drafted token with q = 0", what);
            cr_assert_eq(t->draft_prob[c], (float)qv[t->tok[c]], "%s: node %d's draft probability", what, c);
        }
    }
    return n_int;
}

Test(eagle_dte, q_rows_are_the_heads_law_at_each_node, .init = setup_head, .fini = teardown_head, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(M, &mi);
    const int V = mi.n_vocab, E = mi.n_embd;
    ref_head r = {0};
    char sha[65], path[4096];
    arb_heads_meta meta;
    cr_assert_eq(arb_sha256_file(arb_model_path(M), sha, &err), ARB_OK);
    if (!strcmp(head_file, "default"))
        arb_medusa_default_path("eagle", arb_model_path(M), sha, path, sizeof path, &err);
    else
        snprintf(path, sizeof path, "%s", head_file);
    cr_assert_eq(arb_eagle_load(path, sha, &r.h, &meta, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_eagle_kv_new(r.h, 64, &r.kv, &err), ARB_OK);
    cr_assert_eq(arb_eagle_ws_new(r.h, 1, 64, &r.ws, &err), ARB_OK);
    cr_assert_eq(arb_heads_lm_weights(M, &r.w_lm, &r.emb, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_lm_head_bind(&r.lm, C, r.w_lm, &err), ARB_OK, "%s", err.msg);
    r.out = malloc(sizeof(float) * (size_t)E);
    r.lg = malloc(sizeof(float) * (size_t)V);
    r.idx = malloc(sizeof(int32_t) * (size_t)V);
    double *pr = malloc(sizeof(double) * (size_t)V);
    int32_t *S, n_S;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &S, &n_S, &err), ARB_OK);
    S = realloc(S, sizeof(int32_t) * (size_t)(n_S + 8));
    float *lg = malloc(sizeof(float) * 64 * (size_t)V), *hid = malloc(sizeof(float) * 64 * (size_t)E);
    static float fc[16 * 1024];
    int32_t tc[16];
    static const int shapes[][3] = {{3, 1, 3}, {4, 0, 2}, {1, 0, 4}, {2, 2, 2}};
    const arb_sampling settings[] = {{.temperature = 1.0, .top_p = 0.95, .top_k = 0},
                                     {.temperature = 0.6, .top_p = 1.0, .top_k = 50}};
    for (int si = 0; si < 4; si++) {
        const arb_sampling *sm = &settings[si % 2];
        const int k = shapes[si][0], l = shapes[si][1], b = shapes[si][2];
        arb_method_spec s;
        spec_for(&s, "traversal", sm->temperature, k, l, b, 5);
        s.top_p = sm->top_p, s.top_k = sm->top_k;
        const arb_drafter_i *dr = arb_drafter_find("eagle-dte");
        void *st;
        arb_tree t;
        cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(dr->create(&s, V, &st, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(dr->bind(st, C, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(dr->begin(st, n_S + 64, true, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_tree_init(&t, arb_method_max_nodes(&s), &err), ARB_OK);
        /* prefill the target (hidden rows on), the anchor = the argmax after the prompt */
        arb_ctx_truncate(C, 0);
        int32_t *cp = malloc(sizeof(int32_t) * (size_t)n_S), *pp = malloc(sizeof(int32_t) * (size_t)n_S);
        float *plg = malloc(sizeof(float) * (size_t)n_S * V), *phid = malloc(sizeof(float) * (size_t)n_S * E);
        for (int i = 0; i < n_S; i++)
            cp[i] = i - 1, pp[i] = i;
        cr_assert_eq(arb_eval(C, S, cp, n_S, plg, phid, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_commit(C, pp, n_S, &err), ARB_OK, "%s", err.msg);
        memcpy(fc, phid + (size_t)(n_S - 1) * E, sizeof(float) * (size_t)E);
        dr->hidden(st, fc);
        int n = n_S;
        S[n++] = arb_sample_argmax_f(plg + (size_t)(n_S - 1) * V, V);
        tc[0] = S[n - 1];
        /* step 1: straight after prefill (one committed row) */
        arb_step_record rec = {0};
        dr->set_step(st, 0, 1);
        arb_tree_reset(&t, S[n - 1]);
        dr->propose(st, S, n, &t, &rec);
        arb_tree_finalize(&t);
        cr_assert_eq(rec.mode, ARB_MODE_TREE);
        int n_int = check_tree(&r, &t, dr->q_rows(st), fc, tc, 1, sm, pr, k, l, b, "step 1");
        cr_assert_geq(n_int, 1 + l + (b > 1 ? b - 1 : 0) - (b == 0), "step 1: internal nodes");
        /* a committed step: the target evaluates the tree, accepts the path to the deepest node of
           path 1, and the extra token is the argmax there; the head catches up the whole path */
        cr_assert_eq(arb_eval(C, t.tok, t.parent, t.n, lg, hid, &err), ARB_OK, "%s", err.msg);
        int v = 0;
        while (t.seq_len[v] > 0)
            v = t.child_seq[t.seq_start[v]];
        int32_t acc[64];
        int np = arb_tree_path(&t, v, acc);
        dr->verified(st, &t, acc, np, &rec);
        dr->hidden_path(st, hid, acc, np, E);
        dr->hidden(st, hid + (size_t)v * E);
        cr_assert_eq(arb_commit(C, acc, np, &err), ARB_OK, "%s", err.msg);
        cr_assert_leq(1 + np, 16);
        for (int i = 0; i < np; i++) { /* committed rows 1..np: (f of path node i, next token) */
            memcpy(fc + (size_t)(1 + i) * E, hid + (size_t)acc[i] * E, sizeof(float) * (size_t)E);
            tc[1 + i] = i + 1 < np ? t.tok[acc[i + 1]] : arb_sample_argmax_f(lg + (size_t)v * V, V);
        }
        cr_assert_leq(1 + np, 16);
        for (int i = 1; i < np; i++)
            S[n++] = t.tok[acc[i]];
        S[n++] = tc[np];
        dr->set_step(st, 0, 2);
        arb_tree_reset(&t, S[n - 1]);
        dr->propose(st, S, n, &t, &rec);
        arb_tree_finalize(&t);
        cr_assert_eq(rec.mode, ARB_MODE_TREE);
        check_tree(&r, &t, dr->q_rows(st), fc, tc, 1 + np, sm, pr, k, l, b, "step 2");
        cr_log_info("shape (%d, %d, %d) T %.1f: %d internal nodes at step 1, %d rows caught up at step 2", k, l, b,
                    sm->temperature, n_int, np);
        free(cp), free(pp), free(plg), free(phid);
        arb_tree_release(&t);
        dr->destroy(st);
    }
    free(S), free(lg), free(hid), free(pr), free(r.out), free(r.lg), free(r.idx);
    if (r.emb != r.w_lm)
        free(r.emb);
    free(r.w_lm);
    arb_eagle_kv_free(r.kv);
    arb_eagle_ws_free(r.ws);
    arb_eagle_free(r.h);
}

static int gen(const arb_method_spec *s, int max_new, int32_t *out, arb_prompt_result *res)
{
    arb_err err = {0};
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, s, &d, &err), ARB_OK, "%s: %s", s->verifier, err.msg);
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &ids, &n, &err), ARB_OK);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    o.stop_at_eos = false;
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, NULL, res, &err), ARB_OK, "%s: %s", s->verifier, err.msg);
    memcpy(out, res->ids, sizeof(int32_t) * (size_t)res->n_generated);
    free(ids);
    arb_decoder_free(d);
    return res->n_generated;
}

Test(eagle_dte, near_zero_temperature_equals_greedy, .init = setup_head, .fini = teardown_head, .timeout = 1500)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    static const char *const vf[] = {"greedy", "nss", "naive", "bv", "naivetree", "spectr", "specinfer", "khisti",
                                     "traversal"};
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("ar", &s, &err), ARB_OK);
    int32_t ref[48], got[48];
    arb_prompt_result r;
    int n_ref = gen(&s, 48, ref, &r);
    for (size_t i = 0; i < sizeof vf / sizeof vf[0]; i++) {
        bool single = !strcmp(vf[i], "naive") || !strcmp(vf[i], "bv");
        spec_for(&s, vf[i], i == 0 ? 0.0 : 1e-4, single ? 1 : 3, single ? 0 : 1, 3, 9);
        int n = gen(&s, 48, got, &r);
        cr_assert_eq(n, n_ref, "%s", vf[i]);
        for (int j = 0; j < n; j++)
            cr_assert_eq(got[j], ref[j], "%s at T = %g: token %d differs from greedy AR", vf[i], s.temperature, j);
        cr_log_info("%s T=%g: %d tokens in %d target calls", vf[i], s.temperature, n, r.n_target_calls);
    }
}

Test(eagle_dte, seeded_sampling_is_reproducible, .init = setup_head, .fini = teardown_head, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    static const char *const vf[] = {"traversal", "spectr", "khisti", "nss"};
    for (size_t i = 0; i < sizeof vf / sizeof vf[0]; i++) {
        arb_method_spec s;
        spec_for(&s, vf[i], 1.0, !strcmp(vf[i], "nss") ? 1 : 2, 1, 3, 42);
        int32_t a[40], b[40];
        arb_prompt_result ra, rb;
        int na = gen(&s, 40, a, &ra), nb = gen(&s, 40, b, &rb);
        cr_assert_eq(na, nb);
        cr_assert_eq(ra.n_target_calls, rb.n_target_calls, "%s: same steps", vf[i]);
        for (int j = 0; j < na; j++)
            cr_assert_eq(a[j], b[j], "%s, seed 42: token %d differs run to run", vf[i], j);
        cr_log_info("%s T=1: %d tokens in %d target calls", vf[i], na, ra.n_target_calls);
    }
}

Test(eagle_dte, missing_head_says_how_to_train_one, .init = setup, .fini = teardown)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("eagle-dte", &s, &err), ARB_OK);
    snprintf(s.heads, sizeof s.heads, "/nonexistent/eagle.gguf");
    s.temperature = 1;
    arb_decoder *d = (arb_decoder *)1;
    cr_assert_neq(arb_decoder_new(C, &s, &d, &err), ARB_OK);
    cr_assert_null(d);
    cr_assert(strstr(err.msg, "arbor train eagle") && strstr(err.msg, "arbor distill"), "%s", err.msg);
    cr_assert(strstr(err.msg, "/nonexistent/eagle.gguf"), "the file is named: %s", err.msg);
}

Test(eagle_dte, bad_parameters_are_named)
{
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("eagle-dte", &s, &err), ARB_OK);
    s.temperature = 1;
    snprintf(s.verifier, sizeof s.verifier, "greedy");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "verifier"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("eagle-dte", &s, &err), ARB_OK);
    snprintf(s.selector, sizeof s.selector, "nde");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "selector"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("eagle-dte", &s, &err), ARB_OK);
    s.dte_l = 1, s.temperature = 1; /* a delayed tree: naive verifies path 1 only, spectr is valid */
    snprintf(s.verifier, sizeof s.verifier, "spectr");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_method_max_nodes(&s), 1 + 1 + s.dte_k * s.dte_b);
}
