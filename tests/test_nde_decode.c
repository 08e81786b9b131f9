/* test_nde_decode.c — the `nde` selector inside the sampling decode loop, on the real default
 * model (skips without it):
 *  - a selector file that always prefers one action decodes exactly the tokens of the fixed
 *    selector with that shape (same trees, same RNG: the NDE path drafts nothing else, so the
 *    per-shape losslessness tests of test_verifiers.c and test_draft_model.c cover it), and the
 *    step log names the action;
 *  - a selector that varies its action from step to step (random weights) reproduces greedy AR
 *    at T -> 0 with every OT verifier, and its actions do vary.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "method.h"
#include "nde_mlp.h"

#include "model_fixture.h"

static const char *prompt = "Write a Python function that returns the n-th Fibonacci number.";

typedef struct step_log { int n, acts[256]; } step_log;

static int on_step(const arb_step_record *r, void *ud)
{
    step_log *l = ud;
    if (l->n < 256)
        l->acts[l->n++] = r->topology_id;
    return 0;
}

/* selector: "fixed" with shape a, or "nde" with file. Returns tokens generated. */
static int gen(const char *verifier, double T, const char *selector, const char *file, arb_draft_shape a, int max_new,
               int32_t *out, step_log *log)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("draft", &s, &err), 0, "%s", err.msg);
    snprintf(s.verifier, sizeof s.verifier, "%s", verifier);
    snprintf(s.selector, sizeof s.selector, "%s", selector);
    snprintf(s.selector_file, sizeof s.selector_file, "%s", file ? file : "");
    s.dte_k = a.k, s.dte_l = a.l, s.dte_b = a.b;
    s.temperature = T;
    s.seed = 9;
    cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "%s", err.msg);
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), 0, "%s: %s", verifier, err.msg);
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &ids, &n, &err), 0);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    o.stop_at_eos = false;
    arb_prompt_result r;
    arb_decode_cb cb = {.on_step = on_step, .ud = log};
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, &cb, &r, &err), 0, "%s: %s", verifier, err.msg);
    memcpy(out, r.ids, sizeof(int32_t) * (size_t)r.n_generated);
    free(ids);
    arb_decoder_free(d);
    return r.n_generated;
}

static void write_selector(const char *path, int constant, uint64_t seed)
{
    arb_err err = {0};
    arb_nde_mlp m;
    cr_assert_eq(arb_nde_mlp_init(&m, ARB_NDE_F, 8, ARB_NDE_N_ACTIONS, seed, &err), 0);
    if (constant >= 0)
        m.w[m.n_params - ARB_NDE_N_ACTIONS + constant] = 100;
    for (int k = 0; k < ARB_NDE_F; k++) /* every feature but log n scaled away: at T -> 0 the laws */
        m.sd[k] = 1e6;                   /* are one-hot, and n sweeps the hidden units */
    m.mu[6] = 4.0, m.sd[6] = 0.02;
    arb_nde_prov pv = {.lat = {.target = {8000, 1000, 3}, .draft = {6000, 600, 3}}};
    snprintf(pv.verifier, sizeof pv.verifier, "spectr");
    cr_assert_eq(arb_nde_mlp_save(&m, &pv, path, &err), 0, "%s", err.msg);
    arb_nde_mlp_release(&m);
}

Test(nde_decode, constant_selector_equals_fixed_shape, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    char path[] = "/tmp/ndeXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    const int a = 13; /* (3, 2, 2): a delayed tree */
    write_selector(path, a, 1);
    static const char *const vfs[] = {"spectr", "specinfer", "traversal"};
    for (int i = 0; i < 3; i++) {
        int32_t x[64], y[64];
        step_log lx = {0}, ly = {0};
        int nx = gen(vfs[i], 1.0, "fixed", NULL, arb_nde_actions[a], 40, x, &lx);
        int ny = gen(vfs[i], 1.0, "nde", path, (arb_draft_shape){2, 0, 4}, 40, y, &ly);
        cr_assert_eq(nx, ny, "%s", vfs[i]);
        cr_assert_arr_eq(x, y, sizeof(int32_t) * (size_t)nx, "%s: nde with a constant action = fixed shape", vfs[i]);
        cr_assert_gt(ly.n, 0);
        for (int s = 0; s < ly.n; s++)
            cr_assert_eq(ly.acts[s], a, "%s step %d logs action %d", vfs[i], s, ly.acts[s]);
    }
    unlink(path);
}

Test(nde_decode, varying_actions_keep_greedy_at_low_temperature, .init = setup, .fini = teardown, .timeout = 1500)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    char path[] = "/tmp/ndeXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    write_selector(path, -1, 4);
    int32_t ref[64], got[64];
    step_log l0 = {0};
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("ar", &s, &err), 0);
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), 0, "%s", err.msg);
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &ids, &n, &err), 0);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = 32;
    o.stop_at_eos = false;
    arb_prompt_result r;
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, NULL, &r, &err), 0, "%s", err.msg);
    const int n_ref = r.n_generated;
    memcpy(ref, r.ids, sizeof(int32_t) * (size_t)n_ref);
    free(ids);
    arb_decoder_free(d);
    static const char *const vfs[] = {"nss", "naivetree", "spectr", "specinfer", "khisti", "traversal"};
    for (int i = 0; i < 6; i++) {
        step_log lg = {0};
        int ng = gen(vfs[i], 1e-4, "nde", path, (arb_draft_shape){2, 0, 4}, 32, got, &lg);
        cr_assert_eq(ng, n_ref);
        for (int j = 0; j < ng; j++)
            cr_assert_eq(got[j], ref[j], "%s with nde at T = 1e-4: token %d differs from greedy", vfs[i], j);
        if (i == 0)
            l0 = lg;
    }
    int distinct = 0, seen[ARB_NDE_N_ACTIONS] = {0};
    for (int s2 = 0; s2 < l0.n; s2++) {
        cr_assert(l0.acts[s2] >= 0 && l0.acts[s2] < ARB_NDE_N_ACTIONS);
        distinct += !seen[l0.acts[s2]]++;
    }
    cr_log_info("nde random selector: %d steps, %d distinct actions", l0.n, distinct);
    cr_assert_gt(distinct, 1, "the selector's action varies across steps");
    unlink(path);
}
