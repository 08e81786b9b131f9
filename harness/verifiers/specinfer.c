/* specinfer.c — SpecInfer multi-round speculative sampling (docs/spec/verification.md §5): each draw
 * is tested against the current residual r; after a rejection r <- norm([r - q]_+).
 * Mode "sequential" (default) takes the draws in sampled order; "uniform" picks a remaining
 * draw uniformly at random (the SpecInfer paper and the DTE code) — same law on i.i.d. trees.
 */
#include <string.h>

#include "vf_int.h"

static int solve_specinfer(arb_ot_work *w, const double *p, const double *q, const int32_t *C,
                           int n, arb_rng *rng, int32_t *nf)
{
    const int V = w->V;
    const double *r = p; /* current residual; copied on the first rejection */
    int32_t *left = w->tmp; /* remaining draws R */
    int n_left = n;
    for (int i = 0; i < n_left; i++)
        left[i] = C[i];
    while (n_left > 0) {
        int i = 0;
        if (w->o->specinfer_uniform) {
            i = (int)(arb_rng_u(rng) * n_left);
            if (i >= n_left)
                i = n_left - 1;
        }
        int x = left[i];
        memmove(left + i, left + i + 1, sizeof(int32_t) * (size_t)(n_left - i - 1));
        n_left--;
        if (q[x] > 0 && arb_rng_ratio(rng, r[x], q[x]))
            return x;
        double *dst = r == w->r ? w->r2 : w->r;
        double S = arb_vf_residual(r, 1.0, q, V, dst);
        if (S > 0) {
            double inv = 1.0 / S;
            for (int y = 0; y < V; y++)
                dst[y] *= inv;
            r = dst;
        } else {
            (*nf)++; /* keep r (§12.1) */
        }
    }
    return arb_vf_sample_or(rng, r, p, V, nf);
}

static int specinfer_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    return arb_ot_run(state, in, solve_specinfer, true, out);
}

const arb_verifier_i arb_verifier_specinfer = {
    .name = "specinfer", .needs_q = true, .needs_logits = false, .sampling = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_NO, ARB_VALID_NO},
    .create = arb_ot_vt_create, .destroy = arb_ot_vt_destroy, .verify = specinfer_verify,
};
