/* naive.c — single-path speculative sampling (Leviathan et al., Chen et al.; docs/spec/verification.md
 * §3.1). On multi-path trees it runs on path 1 (C(v)[0] at every node): a valid marginal
 * q chain, the other paths are wasted (§0.6 "first path only").
 */
#include "vf_int.h"

static int naive_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    arb_ot_work *w = state;
    *out = (arb_verify_out){0};
    if (arb_vf_check_in(in, w->V, w->n_max, true))
        return ARB_E_INVAL;
    const arb_tree *t = in->tree;
    const int V = in->V;
    int v = 0;
    for (;;) {
        const double *p = arb_vf_p(in, v);
        int n = arb_vf_children(t, v, w->cnode);
        out->node = v;
        out->depth = t->depth[v];
        if (n == 0) { /* end of path 1: bonus */
            out->extra = arb_vf_sample_or(in->rng, p, p, V, &out->n_fallback);
            out->extra_is_bonus = 1;
            return ARB_OK;
        }
        const double *q = in->q + (size_t)v * V;
        int c = w->cnode[0], x = t->tok[c];
        if (q[x] > 0 && arb_rng_ratio(in->rng, p[x], q[x])) {
            v = c;
            continue;
        }
        arb_vf_residual(p, 1.0, q, V, w->r);
        out->extra = arb_vf_sample_or(in->rng, w->r, p, V, &out->n_fallback);
        return ARB_OK;
    }
}

const arb_verifier_i arb_verifier_naive = {
    .name = "naive", .needs_q = true, .needs_logits = false, .sampling = true,
    .valid = {ARB_VALID_YES, ARB_VALID_FIRST_PATH, ARB_VALID_FIRST_PATH, ARB_VALID_FIRST_PATH,
              ARB_VALID_NO},
    .create = arb_ot_vt_create, .destroy = arb_ot_vt_destroy, .verify = naive_verify,
};
