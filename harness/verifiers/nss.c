/* nss.c — NSS, naive speculative sampling in SpecInfer's sense (docs/spec/verification.md §2): at every
 * reached node sample from p_v and descend while the sample is a drafted child. q and C are
 * ignored, so it is valid on every regime, deterministic trees included. The top-down walk
 * is arb_ot_run (ot.c).
 */
#include "vf_int.h"

/* ---------------- NSS (§2): sample from p, ignore q and C ---------------- */

int arb_ot_solve_nss(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                     arb_rng *rng, int32_t *nf)
{
    return arb_vf_sample_or(rng, p, p, w->V, nf);
}

/* ---------------- vtable ---------------- */

static int nss_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    return arb_ot_run(state, in, arb_ot_solve_nss, false, out);
}

const arb_verifier_i arb_verifier_nss = {
    .name = "nss", .needs_q = false, .needs_logits = false, .sampling = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES},
    .create = arb_ot_vt_create, .destroy = arb_ot_vt_destroy, .verify = nss_verify,
};

