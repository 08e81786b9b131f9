/* typical.c — typical acceptance (Medusa / Hydra; docs/spec/verification.md §9). NOT lossless.
 *
 * At every node v with target law π_v: entropy H_v = −Σ π_v ln(π_v + 1e-5), threshold
 * θ_v = min(ε, α·e^{−H_v}). A child c passes iff π_parent(c)(tok c) > θ_parent(c) (strict); the
 * accepted node is the deepest node whose whole root path passes (ties: the largest
 * Σ ln π along the path, then the lowest batch index), and the extra token is the target's
 * argmax there (Medusa `fast=True`, Hydra). When nothing passes the anchor is "accepted" and
 * the extra token is the anchor's argmax: the greedy fallback.
 *
 * π is the processed law p the decode loop hands every verifier, which is softmax(z/T) exactly
 * when top_k = 0 and top_p = 1 (method validation rejects typical with either filter, since
 * the Medusa rule is defined on the unfiltered softmax). At T = 0 the decode loop uses the
 * greedy walk (docs/spec/drafting.md §1.5); on a one-hot p this verifier gives the same answer.
 *
 * Why it is approximate: a fixed threshold on the target probability is not a test that
 * matches the target law; accepted continuations over-represent likely tokens and never hold a
 * token below θ. tests/test_verifiers.c measures the deviation (docs/sampling.md).
 */
#include <math.h>
#include <stdlib.h>

#include "greedy.h"
#include "sample.h"
#include "vf_int.h"

typedef struct typical_state {
    int V, n_max;
    double eps, alpha;
    double *theta;   /* n_max: θ_v, NAN until needed */
    double *ll;      /* n_max: Σ ln π along the root path */
    uint8_t *ok;     /* n_max: whole root path passes */
} typical_state;

double arb_typical_entropy(const double *pi, int V)
{
    double H = 0;
    for (int x = 0; x < V; x++)
        H -= pi[x] * log(pi[x] + 1e-5);
    return H;
}

double arb_typical_threshold(const double *pi, int V, double eps, double alpha)
{
    double a = alpha * exp(-arb_typical_entropy(pi, V));
    return a < eps ? a : eps;
}

static void typical_destroy(void *state)
{
    typical_state *s = state;
    if (!s)
        return;
    free(s->theta);
    free(s->ll);
    free(s->ok);
    free(s);
}

static int typical_create(const arb_verifier_opts *o, void **state, arb_err *err)
{
    *state = NULL;
    if (!(o->typical_eps >= 0 && o->typical_eps <= 1) || !(o->typical_alpha >= 0))
        return ARB_ERR(err, ARB_E_INVAL, "verifier typical: typical_eps %g must be in [0, 1] and typical_alpha %g "
                       ">= 0", o->typical_eps, o->typical_alpha);
    typical_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "verifier typical: out of memory");
    s->V = o->V;
    s->n_max = o->n_nodes_max;
    s->eps = o->typical_eps;
    s->alpha = o->typical_alpha;
    s->theta = malloc(sizeof(double) * (size_t)s->n_max);
    s->ll = malloc(sizeof(double) * (size_t)s->n_max);
    s->ok = malloc((size_t)s->n_max);
    if (!s->theta || !s->ll || !s->ok) {
        typical_destroy(s);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier typical: out of memory");
    }
    *state = s;
    return ARB_OK;
}

static int typical_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    typical_state *s = state;
    int rc = arb_vf_check_in(in, s->V, s->n_max, false);
    if (rc)
        return rc;
    const arb_tree *t = in->tree;
    const int V = in->V;
    for (int v = 0; v < t->n; v++)
        s->theta[v] = NAN;
    s->ok[0] = 1;
    s->ll[0] = 0;
    int best = 0;
    for (int v = 1; v < t->n; v++) { /* parents precede children (tree.h) */
        int u = t->parent[v];
        s->ok[v] = 0;
        if (!s->ok[u] || (t->flags[v] & ARB_NODE_NOACCEPT))
            continue;
        const double *pu = arb_vf_p(in, u);
        if (isnan(s->theta[u]))
            s->theta[u] = arb_typical_threshold(pu, V, s->eps, s->alpha);
        double pi = pu[t->tok[v]];
        if (!(pi > s->theta[u]))
            continue;
        s->ok[v] = 1;
        s->ll[v] = s->ll[u] + log(pi);
        /* deepest; then the largest path log-likelihood; then the lowest index (v grows) */
        if (t->depth[v] > t->depth[best] || (t->depth[v] == t->depth[best] && s->ll[v] > s->ll[best]))
            best = v;
    }
    out->node = best;
    out->depth = t->depth[best];
    out->extra = in->logits ? arb_greedy_argmax(in->logits + (size_t)best * V, V)
                            : (int32_t)arb_sample_argmax_d(arb_vf_p(in, best), V);
    out->extra_is_bonus = arb_tree_n_children(t, best) == 0;
    out->n_fallback = 0;
    return ARB_OK;
}

const arb_verifier_i arb_verifier_typical = {
    .name = "typical", .needs_q = false, .needs_logits = false, .sampling = true, .approximate = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES},
    .create = typical_create, .destroy = typical_destroy, .verify = typical_verify,
};
