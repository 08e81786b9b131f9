/* spectr.c — SpecTr K-SEQ (docs/spec/verification.md §4): every draw is tested against p/(ρ q), the
 * division factor ρ chosen as the root of f(ρ) = 1 − (1 − β(ρ))^n − ρ β(ρ) on [1, n], and the
 * final residual p − (A/β)·min(p/ρ, q) restores the missing mass.
 */
#include <math.h>

#include "vf_int.h"

double arb_spectr_beta(const double *p, const double *q, int V, double rho)
{
    double b = 0, inv = 1.0 / rho;
    for (int x = 0; x < V; x++) {
        double a = p[x] * inv;
        b += a < q[x] ? a : q[x];
    }
    return b;
}

/* Bisection on the decreasing f; returns the feasible end hi (f(hi) <= 0), §12.8. */
double arb_spectr_rho(const double *p, const double *q, int V, int n, double tol)
{
    double lo = 1, hi = n;
    for (int it = 0; it < 200 && hi - lo > tol; it++) {
        double mid = 0.5 * (lo + hi);
        double b = arb_spectr_beta(p, q, V, mid);
        double f = 1 - pow(1 - b, n) - mid * b;
        if (f >= 0)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

static int solve_spectr(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                        arb_rng *rng, int32_t *nf)
{
    if (n == 1)
        return arb_ot_solve_naive(w, p, q, C, n, rng, nf);
    const int V = w->V;
    double rho = arb_spectr_rho(p, q, V, n, w->o->spectr_tol);
    double beta = arb_spectr_beta(p, q, V, rho);
    double A = 1 - pow(1 - beta, n);
    for (int i = 0; i < n; i++) {
        int x = C[i];
        if (q[x] > 0 && arb_rng_ratio(rng, p[x], rho * q[x]))
            return x;
    }
    double m = beta > 0 ? A / beta : n, inv = 1.0 / rho;
    for (int x = 0; x < V; x++) {
        double a = p[x] * inv, mn = a < q[x] ? a : q[x];
        double d = p[x] - m * mn;
        w->r[x] = d > 0 ? d : 0.0;
    }
    return arb_vf_sample_or(rng, w->r, p, V, nf);
}

static int spectr_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    return arb_ot_run(state, in, solve_spectr, true, out);
}

const arb_verifier_i arb_verifier_spectr = {
    .name = "spectr", .needs_q = true, .needs_logits = false, .sampling = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_NO, ARB_VALID_NO},
    .create = arb_ot_vt_create, .destroy = arb_ot_vt_destroy, .verify = spectr_verify,
};
