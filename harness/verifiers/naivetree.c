/* naivetree.c — the NaiveTree OT solver (docs/spec/verification.md §3.2, DTE Algorithm 2): accept the
 * first draw C[0] with probability min(1, p/q), else sample the residual [p - q]_+ (which may
 * land on another drafted child). SpecTr and Khisti reuse arb_ot_solve_naive for n = 1. The
 * top-down walk is arb_ot_run (ot.c).
 */
#include "vf_int.h"

/* ---------------- NaiveTree (§3.2): the first draw, then the residual ---------------- */

int arb_ot_solve_naive(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                       arb_rng *rng, int32_t *nf)
{
    int x = C[0];
    if (q[x] > 0 && arb_rng_ratio(rng, p[x], q[x])) /* q(x) = 0: impossible draw, reject */
        return x;
    arb_vf_residual(p, 1.0, q, w->V, w->r);
    return arb_vf_sample_or(rng, w->r, p, w->V, nf);
}

/* ---------------- vtable ---------------- */

static int naivetree_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    return arb_ot_run(state, in, arb_ot_solve_naive, true, out);
}

const arb_verifier_i arb_verifier_naivetree = {
    .name = "naivetree", .needs_q = true, .needs_logits = false, .sampling = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_NO},
    .create = arb_ot_vt_create, .destroy = arb_ot_vt_destroy, .verify = naivetree_verify,
};
