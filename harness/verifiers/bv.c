/* bv.c — block verification (Sun et al., Alg. 2; docs/spec/verification.md §7): sequence-level weights
 * w_i along the chain, h_i = probability that prefix i is the answer given no longer prefix
 * was, coins from the longest prefix down, and a weighted residual for the extra token.
 * Optimal among single-path verifiers. On multi-path trees it runs on path 1.
 */
#include <stdlib.h>

#include "process_simd.h"
#include "vf_int.h"

typedef struct bv_state {
    arb_ot_work w;
    int32_t *path; /* n_max: root..leaf of path 1 */
    double *wt, *h; /* n_max: w_i, h_i */
    double *law;   /* n_max x V: residual laws for arb_bv_sequence */
    int isa;       /* process_simd.h's vector path */
} bv_state;

/* Fills path/wt/h; returns L. */
static int bv_prepare(bv_state *st, const arb_verify_in *in)
{
    const arb_tree *t = in->tree;
    const int V = in->V;
    int L = 0, v = 0;
    st->path[0] = 0;
    while (arb_vf_children(t, v, st->w.cnode) > 0) {
        v = st->w.cnode[0];
        st->path[++L] = v;
    }
    st->wt[0] = 1;
    st->h[0] = 1;
    for (int i = 1; i <= L; i++) {
        const double *p = arb_vf_p(in, st->path[i - 1]), *q = in->q + (size_t)st->path[i - 1] * V;
        int x = t->tok[st->path[i]];
        double r = q[x] > 0 ? st->wt[i - 1] * p[x] / q[x] : 0.0;
        st->wt[i] = r < 1 ? r : 1;
        if (i < L) {
            const double *pi = arb_vf_p(in, st->path[i]), *qi = in->q + (size_t)st->path[i] * V;
            const double S = arb_proc_residual_sum(st->isa, pi, st->wt[i], qi, 1.0, V, NULL, 0.0);
            double den = S + (1 - st->wt[i]);
            st->h[i] = den > 0 ? S / den : 1.0; /* §12.2 */
        } else {
            st->h[i] = st->wt[i];
        }
    }
    return L;
}

static int bv_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    bv_state *st = state;
    *out = (arb_verify_out){0};
    if (arb_vf_check_in(in, st->w.V, st->w.n_max, true))
        return ARB_E_INVAL;
    const int V = in->V;
    int L = bv_prepare(st, in), tau = 0;
    for (int i = L; i >= 1 && !tau; i--)
        if (arb_rng_bern(in->rng, st->h[i]))
            tau = i;
    int v = st->path[tau];
    const double *p = arb_vf_p(in, v);
    out->node = v;
    out->depth = in->tree->depth[v];
    if (tau == L) {
        out->extra = arb_vf_sample_or(in->rng, p, p, V, &out->n_fallback);
        out->extra_is_bonus = 1;
    } else {
        arb_vf_residual(p, st->wt[tau], in->q + (size_t)v * V, V, st->w.r);
        out->extra = arb_vf_sample_or(in->rng, st->w.r, p, V, &out->n_fallback);
    }
    return ARB_OK;
}

int arb_bv_sequence(void *state, const arb_verify_in *in, int32_t *node, double *prob,
                    const double **law)
{
    bv_state *st = state;
    const int V = in->V;
    int L = bv_prepare(st, in), n = 0;
    double surv = 1;
    for (int i = L; i >= 0; i--) {
        int v = st->path[i];
        node[n] = v;
        prob[n] = surv * st->h[i];
        surv *= 1 - st->h[i];
        if (i == L) {
            law[n] = arb_vf_p(in, v);
        } else {
            double *r = st->law + (size_t)i * V;
            arb_vf_residual(arb_vf_p(in, v), st->wt[i], in->q + (size_t)v * V, V, r);
            law[n] = r;
        }
        n++;
    }
    return n;
}

static void bv_destroy(void *state)
{
    bv_state *st = state;
    if (!st)
        return;
    arb_ot_work_release(&st->w);
    free(st->path); free(st->wt); free(st->h); free(st->law); free(st);
}

static int bv_create(const arb_verifier_opts *o, void **state, arb_err *err)
{
    *state = NULL;
    bv_state *st = calloc(1, sizeof *st);
    if (!st || arb_ot_work_init(&st->w, o, err)) {
        free(st);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier bv: out of memory");
    }
    size_t n = (size_t)o->n_nodes_max;
    st->isa = arb_proc_isa_best();
    st->path = malloc(sizeof(int32_t) * n);
    st->wt = malloc(sizeof(double) * n);
    st->h = malloc(sizeof(double) * n);
    st->law = malloc(sizeof(double) * n * (size_t)o->V);
    if (!st->path || !st->wt || !st->h || !st->law) {
        bv_destroy(st);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier bv: out of memory");
    }
    *state = st;
    return ARB_OK;
}

const arb_verifier_i arb_verifier_bv = {
    .name = "bv", .needs_q = true, .needs_logits = false, .sampling = true, .p_all_rows = true,
    .valid = {ARB_VALID_YES, ARB_VALID_FIRST_PATH, ARB_VALID_FIRST_PATH, ARB_VALID_FIRST_PATH,
              ARB_VALID_NO},
    .create = bv_create, .destroy = bv_destroy, .verify = bv_verify,
};
