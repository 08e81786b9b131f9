/* traversal.c — Traversal verification (Weng et al. 2025; docs/spec/verification.md §8): bottom-up,
 * leaf to root. The first alive leaf in DFS order (children in first-appearance order) is
 * accepted with its sequence-level weight; on rejection it is deleted and its parent's
 * target law becomes the weighted residual, the parent's draft law loses the rejected
 * token (renormalized), and the weights below the parent are recomputed.
 *
 * State per node: P[v] (NULL until first read, then a pointer to p_v until the first
 * update, then a pool row), Q[v]
 * as the original q_v times a scale with the dead children's tokens removed, w[v].
 * On a chain this is exactly block verification (§8.4).
 */
#include <stdlib.h>
#include <string.h>

#include "process_simd.h"
#include "vf_int.h"

typedef struct trav_state {
    arb_ot_work w;
    int32_t *dlist, *dstart, *dlen; /* D(v) of every node, flat */
    int32_t *stack;                 /* n_max: RECOMPUTE */
    uint8_t *alive, *qzero;
    double *wt, *qscale;            /* n_max each */
    const double **P;               /* n_max: current target law of each node */
    double *pool;                   /* n_max x V: updated P rows (row v belongs to node v) */
    int broken;                     /* ARB_VF_BROKEN_* negative controls (tests only) */
    int isa;                        /* process_simd.h's vector path */
    int32_t *dead_tok;              /* n_max: reject's dead children, by token */
    double *dead_q;                 /* n_max: their Q */
} trav_state;

void arb_traversal_set_broken(void *state, int variant)
{
    ((trav_state *)state)->broken = variant;
}

static double qval(const trav_state *st, const arb_verify_in *in, int v, int x)
{
    if (st->qzero[v])
        return 0;
    for (int i = 0; i < st->dlen[v]; i++) {
        int c = st->dlist[st->dstart[v] + i];
        if (!st->alive[c] && in->tree->tok[c] == x)
            return st->broken == ARB_VF_BROKEN_TRAV_NO_RENORM ? in->q[(size_t)v * in->V + x] : 0;
    }
    return in->q[(size_t)v * in->V + x] * st->qscale[v];
}

/* P[v], taking p_v on first use (a caller with p_row processes only the rows read). */
static const double *cur_p(trav_state *st, const arb_verify_in *in, int v)
{
    if (!st->P[v])
        st->P[v] = arb_vf_p(in, v);
    return st->P[v];
}

static void recompute(trav_state *st, const arb_verify_in *in, int v0)
{
    int sp = 0;
    st->stack[sp++] = v0;
    while (sp > 0) {
        int v = st->stack[--sp];
        for (int i = 0; i < st->dlen[v]; i++) {
            int c = st->dlist[st->dstart[v] + i];
            if (!st->alive[c])
                continue;
            int x = in->tree->tok[c];
            double Q = qval(st, in, v, x), r = Q > 0 ? st->wt[v] * cur_p(st, in, v)[x] / Q : 0.0;
            st->wt[c] = r < 1 ? r : 1;
            st->stack[sp++] = c;
        }
    }
}

static int first_leaf(const trav_state *st, const arb_tree *t)
{
    if (st->broken == ARB_VF_BROKEN_TRAV_INDEX_ORDER) { /* lossy control: smallest index */
        for (int v = 1; v < t->n; v++) {
            if (!st->alive[v])
                continue;
            int leaf = 1;
            for (int i = 0; i < st->dlen[v] && leaf; i++)
                leaf = !st->alive[st->dlist[st->dstart[v] + i]];
            if (leaf)
                return v;
        }
        return 0;
    }
    int l = 0;
    for (;;) {
        int next = -1;
        for (int i = 0; i < st->dlen[l] && next < 0; i++)
            if (st->alive[st->dlist[st->dstart[l] + i]])
                next = st->dlist[st->dstart[l] + i];
        if (next < 0)
            return l;
        l = next;
    }
}

static void setup(trav_state *st, const arb_verify_in *in)
{
    const arb_tree *t = in->tree;
    int off = 0;
    for (int v = 0; v < t->n; v++) {
        st->dstart[v] = off;
        st->dlen[v] = arb_vf_distinct(t, v, st->w.cnode, st->dlist + off);
        off += st->dlen[v];
        st->alive[v] = 1;
        st->qzero[v] = 0;
        st->qscale[v] = 1;
        st->P[v] = NULL; /* p_v on first use (cur_p) */
    }
    st->wt[0] = 1;
    recompute(st, in, 0);
}

/* Reject leaf l: update its parent (§8.2). */
static void reject(trav_state *st, const arb_verify_in *in, int l, int32_t *n_fallback)
{
    const int V = in->V;
    int v = in->tree->parent[l], x = in->tree->tok[l];
    double om = st->wt[v] < 1 ? st->wt[v] : 1;
    /* Q before x is removed: q_v scaled, except the dead children's tokens (0, or their
       unscaled q in the lossy control). The residual [om P - Q]_+ and its index-order sum in
       one pass without writing Q (process_simd.h: vector terms, the running sum skipping exact
       zeros, the same bits), the few dead tokens as segment boundaries in id order. */
    const double *q = in->q + (size_t)v * V, *P = cur_p(st, in, v);
    const double qs = st->qzero[v] ? 0.0 : st->qscale[v]; /* q * 0 is the +0 the zero law had */
    double *r = st->w.r;
    int32_t *dt = st->dead_tok; /* a node's dead children: at most its children */
    double *dq = st->dead_q, m = q[x] * qs;
    int nd = 0;
    for (int i = 0; i < st->dlen[v]; i++) {
        const int c = st->dlist[st->dstart[v] + i];
        if (st->alive[c])
            continue;
        int32_t y = in->tree->tok[c];
        double val = st->broken == ARB_VF_BROKEN_TRAV_NO_RENORM ? q[y] : 0;
        if (y == x)
            m = val;
        int j = nd++; /* insertion by token */
        for (; j > 0 && dt[j - 1] > y; j--) {
            dt[j] = dt[j - 1];
            dq[j] = dq[j - 1];
        }
        dt[j] = y;
        dq[j] = val;
    }
    double S = 0;
    int a = 0;
    for (int j = 0; j <= nd; j++) {
        const int b = j < nd ? dt[j] : V;
        S = arb_proc_residual_sum(st->isa, P + a, om, q + a, qs, b - a, r + a, S);
        if (j < nd) {
            const double d = om * P[b] - dq[j];
            r[b] = d > 0 ? d : 0.0;
            S += r[b];
        }
        a = b + 1;
    }
    if (S > 0) {
        double *dst = st->pool + (size_t)v * V, inv = 1.0 / S;
        for (int y = 0; y < V; y++)
            dst[y] = r[y] * inv;
        st->P[v] = dst;
        double wv = S / (S + (1 - om)); /* not (S + 1) - om: S may be below 1 ulp */
        st->wt[v] = wv < 1 ? wv : 1;    /* §12.10 */
    } else {
        /* S = 0 with ω < 1: v can no longer be the answer (BV's h = 0), a legal state.
           With ω = 1 it is 0/0, unreachable in exact arithmetic (§12.1, §12.2). */
        st->wt[v] = 0;
        if (om >= 1)
            (*n_fallback)++;
    }
    if (st->broken != ARB_VF_BROKEN_TRAV_NO_RENORM) {
        if (m < 1)
            st->qscale[v] /= 1 - m;
        else
            st->qzero[v] = 1;
    }
    st->alive[l] = 0;
    recompute(st, in, v);
}

static int trav_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    trav_state *st = state;
    *out = (arb_verify_out){0};
    if (arb_vf_check_in(in, st->w.V, st->w.n_max, true))
        return ARB_E_INVAL;
    setup(st, in);
    for (;;) {
        int l = first_leaf(st, in->tree);
        if (l == 0 || arb_rng_bern(in->rng, st->wt[l])) {
            out->node = l;
            out->depth = in->tree->depth[l];
            out->extra = arb_vf_sample_or(in->rng, cur_p(st, in, l), arb_vf_p(in, l), in->V,
                                          &out->n_fallback);
            out->extra_is_bonus = st->dlen[l] == 0;
            return ARB_OK;
        }
        reject(st, in, l, &out->n_fallback);
    }
}

int arb_traversal_sequence(void *state, const arb_verify_in *in, int32_t *node, double *prob,
                           const double **law)
{
    trav_state *st = state;
    int32_t nf = 0;
    setup(st, in);
    double surv = 1;
    for (int n = 0;; n++) {
        int l = first_leaf(st, in->tree);
        double om = l == 0 ? 1.0 : st->wt[l];
        node[n] = l;
        prob[n] = surv * om;
        law[n] = cur_p(st, in, l);
        surv *= 1 - om;
        if (l == 0)
            return n + 1;
        reject(st, in, l, &nf);
    }
}

static void trav_destroy(void *state)
{
    trav_state *st = state;
    if (!st)
        return;
    arb_ot_work_release(&st->w);
    free(st->dlist); free(st->dstart); free(st->dlen); free(st->stack); free(st->alive);
    free(st->qzero); free(st->wt); free(st->qscale); free(st->P); free(st->pool);
    free(st->dead_tok); free(st->dead_q); free(st);
}

static int trav_create(const arb_verifier_opts *o, void **state, arb_err *err)
{
    *state = NULL;
    trav_state *st = calloc(1, sizeof *st);
    if (!st || arb_ot_work_init(&st->w, o, err)) {
        free(st);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier traversal: out of memory");
    }
    size_t n = (size_t)o->n_nodes_max;
    st->isa = arb_proc_isa_best();
    st->dlist = malloc(sizeof(int32_t) * n);
    st->dstart = malloc(sizeof(int32_t) * n);
    st->dlen = malloc(sizeof(int32_t) * n);
    st->stack = malloc(sizeof(int32_t) * n);
    st->alive = malloc(n);
    st->qzero = malloc(n);
    st->wt = malloc(sizeof(double) * n);
    st->qscale = malloc(sizeof(double) * n);
    st->P = malloc(sizeof(double *) * n);
    st->pool = malloc(sizeof(double) * n * (size_t)o->V);
    st->dead_tok = malloc(sizeof(int32_t) * n);
    st->dead_q = malloc(sizeof(double) * n);
    if (!st->dlist || !st->dstart || !st->dlen || !st->stack || !st->alive || !st->qzero || !st->wt ||
        !st->qscale || !st->P || !st->pool || !st->dead_tok || !st->dead_q) {
        trav_destroy(st);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier traversal: out of memory");
    }
    *state = st;
    return ARB_OK;
}

const arb_verifier_i arb_verifier_traversal = {
    .name = "traversal", .needs_q = true, .needs_logits = false, .sampling = true, .p_all_rows = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_NO},
    .create = trav_create, .destroy = trav_destroy, .verify = trav_verify,
};
