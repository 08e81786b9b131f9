/* otanalysis.c — output laws, acceptance rates and the block-efficiency estimator
 * (docs/spec/verification.md §10, §8.5). Each law mirrors its solver line by line (same ρ, same LP
 * vertex, same fallbacks), so the paired test of §11.4 can compare them with the real
 * verifiers draw by draw.
 */
#include "otanalysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vf_int.h"

struct arb_otan {
    arb_verifier_opts o;
    int V, n_max;
    double *r, *r2, *a, *a2, *o1; /* V each */
    double *reach;                /* n_max */
    int32_t *cnode, *ctok, *dnode;/* n_max */
    int32_t *seq_node;            /* n_max + 1 */
    double *seq_prob;
    const double **seq_law;
    arb_khisti_lp *lp;
};

static const char *const method_names[ARB_OT_COUNT] = {"nss", "naivetree", "specinfer", "spectr", "khisti"};

int arb_ot_method_parse(const char *name, arb_ot_method *out)
{
    if (name && !strcmp(name, "naive")) {
        *out = ARB_OT_NAIVETREE;
        return ARB_OK;
    }
    for (int i = 0; name && i < ARB_OT_COUNT; i++)
        if (!strcmp(name, method_names[i])) {
            *out = (arb_ot_method)i;
            return ARB_OK;
        }
    return ARB_E_INVAL;
}

void arb_otan_free(arb_otan *a)
{
    if (!a)
        return;
    free(a->r); free(a->r2); free(a->a); free(a->a2); free(a->o1); free(a->reach);
    free(a->cnode); free(a->ctok); free(a->dnode); free(a->seq_node); free(a->seq_prob);
    free(a->seq_law);
    arb_khisti_lp_free(a->lp);
    free(a);
}

int arb_otan_new(const arb_verifier_opts *o, arb_otan **out, arb_err *err)
{
    *out = NULL;
    arb_otan *a = calloc(1, sizeof *a);
    if (!a)
        return ARB_ERR(err, ARB_E_NOMEM, "otanalysis: out of memory");
    a->o = *o;
    a->V = o->V;
    a->n_max = o->n_nodes_max;
    size_t V = (size_t)o->V, n = (size_t)o->n_nodes_max + 1;
    a->r = malloc(sizeof(double) * V);
    a->r2 = malloc(sizeof(double) * V);
    a->a = malloc(sizeof(double) * V);
    a->a2 = malloc(sizeof(double) * V);
    a->o1 = malloc(sizeof(double) * V);
    a->reach = malloc(sizeof(double) * n);
    a->cnode = malloc(sizeof(int32_t) * n);
    a->ctok = malloc(sizeof(int32_t) * n);
    a->dnode = malloc(sizeof(int32_t) * n);
    a->seq_node = malloc(sizeof(int32_t) * n);
    a->seq_prob = malloc(sizeof(double) * n);
    a->seq_law = malloc(sizeof(double *) * n);
    if (!a->r || !a->r2 || !a->a || !a->a2 || !a->o1 || !a->reach || !a->cnode || !a->ctok ||
        !a->dnode || !a->seq_node || !a->seq_prob || !a->seq_law ||
        arb_khisti_lp_new(o->V, o->khisti_s, &a->lp)) {
        arb_otan_free(a);
        return ARB_ERR(err, ARB_E_NOMEM, "otanalysis: out of memory for V = %d", o->V);
    }
    *out = a;
    return ARB_OK;
}

/* norm(w) into w; if empty, copy fallback (the solvers' SAMPLE(p) fallback). */
static void normalize_or(double *w, double S, const double *fallback, int V)
{
    if (S > 0) {
        for (int x = 0; x < V; x++)
            w[x] /= S;
    } else {
        memcpy(w, fallback, sizeof(double) * (size_t)V);
    }
}

static double min2(double x, double y) { return x < y ? x : y; }

void arb_otan_out(arb_otan *a, arb_ot_method m, const double *p, const double *q, const int32_t *C,
                  int n, int V, double *out)
{
    if (m == ARB_OT_NSS) {
        memcpy(out, p, sizeof(double) * (size_t)V);
        return;
    }
    memset(out, 0, sizeof(double) * (size_t)V);
    if (n == 1 || m == ARB_OT_NAIVETREE) { /* every method but NSS reduces to naive at n = 1 */
        int x = C[0];
        double acc = q[x] > 0 ? min2(1, p[x] / q[x]) : 0;
        double S = arb_vf_residual(p, 1.0, q, V, a->r);
        normalize_or(a->r, S, p, V);
        for (int y = 0; y < V; y++)
            out[y] = (1 - acc) * a->r[y];
        out[x] += acc;
        return;
    }
    double surv = 1;
    if (m == ARB_OT_SPECINFER) {
        const double *r = p;
        for (int i = 0; i < n; i++) {
            int x = C[i];
            double acc = q[x] > 0 ? min2(1, r[x] / q[x]) : 0;
            out[x] += surv * acc;
            surv *= 1 - acc;
            double *dst = r == a->r ? a->r2 : a->r;
            double S = arb_vf_residual(r, 1.0, q, V, dst);
            if (S > 0) {
                for (int y = 0; y < V; y++)
                    dst[y] /= S;
                r = dst;
            }
        }
        for (int y = 0; y < V; y++)
            out[y] += surv * r[y];
        return;
    }
    if (m == ARB_OT_SPECTR) {
        double rho = arb_spectr_rho(p, q, V, n, a->o.spectr_tol), beta = arb_spectr_beta(p, q, V, rho);
        double A = 1 - pow(1 - beta, n);
        for (int i = 0; i < n; i++) {
            int x = C[i];
            double c = q[x] > 0 ? min2(1, p[x] / (rho * q[x])) : 0;
            out[x] += surv * c;
            surv *= 1 - c;
        }
        double mm = beta > 0 ? A / beta : n, S = 0;
        for (int y = 0; y < V; y++) {
            double d = p[y] - mm * min2(p[y] / rho, q[y]);
            a->r[y] = d > 0 ? d : 0;
            S += a->r[y];
        }
        normalize_or(a->r, S, p, V);
        for (int y = 0; y < V; y++)
            out[y] += surv * a->r[y];
        return;
    }
    /* Khisti: winner law over the (few) distinct drawn tokens, then the naive step. */
    int32_t *wt = a->ctok;
    double *wv = a->reach; /* reuse: at most n entries */
    int nw = 1;
    wt[0] = C[0];
    wv[0] = 1;
    const double *law = q;
    for (int r = 1; r < n; r++) {
        double *dst = law == a->a ? a->a2 : a->a;
        arb_khisti_lp_solve(a->lp, p, law, q, V, a->o.khisti_s, dst);
        int x = C[r], ix = -1;
        for (int i = 0; i < nw; i++)
            if (wt[i] == x)
                ix = i;
        if (ix < 0) {
            ix = nw++;
            wt[ix] = x;
            wv[ix] = 0;
        }
        double moved = 0;
        for (int i = 0; i < nw; i++) {
            if (i == ix)
                continue;
            double lose = wv[i] * (1 - arb_khisti_keep(a->lp, wt[i], x));
            wv[i] -= lose;
            moved += lose;
        }
        wv[ix] += moved;
        law = dst;
    }
    double S = arb_vf_residual(p, 1.0, law, V, a->r);
    normalize_or(a->r, S, p, V);
    for (int i = 0; i < nw; i++) {
        int z = wt[i];
        double acc = law[z] > 0 ? min2(1, p[z] / law[z]) : 0;
        out[z] += wv[i] * acc;
        for (int y = 0; y < V; y++)
            out[y] += wv[i] * (1 - acc) * a->r[y];
    }
}

double arb_otan_spectr_rho(const double *p, const double *q, int n, int V)
{
    return n <= 1 ? 1.0 : arb_spectr_rho(p, q, V, n, 1e-12);
}

double arb_otan_accept_rate(arb_otan *a, arb_ot_method m, const double *p, const double *q, int n, int V)
{
    double acc = 0;
    if (m == ARB_OT_NSS) {
        for (int x = 0; x < V; x++)
            acc += p[x] * (1 - pow(1 - q[x], n));
        return acc;
    }
    double overlap = 0;
    for (int x = 0; x < V; x++)
        overlap += min2(p[x], q[x]);
    if (n == 1)
        return overlap;
    switch (m) {
    case ARB_OT_NAIVETREE:
        acc = overlap;
        for (int x = 0; x < V; x++)
            if (p[x] > q[x])
                acc += (p[x] - q[x]) * (1 - pow(1 - q[x], n - 1));
        return acc;
    case ARB_OT_SPECINFER: {
        const double *r = p;
        double rej = 1;
        for (int j = 0; j < n; j++) {
            double ov = 0;
            for (int x = 0; x < V; x++)
                ov += min2(r[x], q[x]);
            rej *= 1 - ov;
            double *dst = r == a->r ? a->r2 : a->r;
            double S = arb_vf_residual(r, 1.0, q, V, dst);
            if (S > 0) {
                for (int x = 0; x < V; x++)
                    dst[x] /= S;
                r = dst;
            }
        }
        return 1 - rej;
    }
    case ARB_OT_SPECTR: {
        double rho = arb_spectr_rho(p, q, V, n, a->o.spectr_tol), beta = arb_spectr_beta(p, q, V, rho);
        if (beta >= 1)
            return 1;
        double A = 1 - pow(1 - beta, n), tail = 0;
        if (A >= 1)
            return 1;
        for (int x = 0; x < V; x++) {
            double mn = min2(p[x] / rho, q[x]);
            double res = (p[x] - mn * (beta > 0 ? A / beta : 0)) / (1 - A);
            double g = q[x] - p[x] / rho;
            g = g > 0 ? g / (1 - beta) : 0;
            if (res > 0)
                tail += res * (1 - pow(1 - g, n));
        }
        return A + (1 - A) * tail;
    }
    case ARB_OT_KHISTI: {
        const double *law = q;
        for (int r = 1; r < n; r++) {
            double *dst = law == a->a ? a->a2 : a->a;
            arb_khisti_lp_solve(a->lp, p, law, q, V, a->o.khisti_s, dst);
            law = dst;
        }
        for (int x = 0; x < V; x++)
            acc += min2(p[x], law[x]);
        return acc;
    }
    default:
        return 0;
    }
}

double arb_otan_be_tree(arb_otan *a, arb_ot_method m, const arb_tree *t, const double *p,
                        const double *q, int V, double *be_depth, int n_depth)
{
    for (int d = 0; d < n_depth; d++)
        be_depth[d] = 1;
    double total = 1;
    double *reach = a->seq_prob; /* n_max + 1 doubles, free here */
    reach[0] = 1;
    for (int v = 0; v < t->n; v++) {
        int n = arb_vf_children(t, v, a->cnode);
        if (n == 0)
            continue;
        for (int i = 0; i < n; i++)
            a->dnode[i] = t->tok[a->cnode[i]];
        arb_otan_out(a, m, p + (size_t)v * V, q ? q + (size_t)v * V : NULL, a->dnode, n, V, a->o1);
        int nd = arb_vf_distinct(t, v, a->seq_node, a->cnode);
        for (int i = 0; i < nd; i++) {
            int w = a->cnode[i];
            reach[w] = reach[v] * a->o1[t->tok[w]];
            total += reach[w];
            for (int d = t->depth[w]; d < n_depth; d++)
                be_depth[d] += reach[w];
        }
    }
    return total;
}

int arb_otan_expected_accepted(arb_otan *a, arb_verifier *vf, const arb_verify_in *in, double *out)
{
    *out = 0;
    if (!in->p) /* the exact analysis walks every node's law: the full array, not p_row */
        return ARB_E_INVAL;
    const char *name = vf->iface->name;
    const arb_tree *t = in->tree;
    const int V = in->V;
    arb_ot_method m;
    if (!strcmp(name, "naive")) {
        double reach = 1, e = 0;
        int v = 0;
        while (arb_vf_children(t, v, a->cnode) > 0) {
            int c = a->cnode[0], x = t->tok[c];
            const double *p = in->p + (size_t)v * V, *q = in->q + (size_t)v * V;
            reach *= q[x] > 0 ? min2(1, p[x] / q[x]) : 0;
            e += reach;
            v = c;
        }
        *out = e;
        return ARB_OK;
    }
    if (!strcmp(name, "bv") || !strcmp(name, "traversal")) {
        int n = !strcmp(name, "bv") ? arb_bv_sequence(vf->ctx, in, a->seq_node, a->seq_prob, a->seq_law)
                                    : arb_traversal_sequence(vf->ctx, in, a->seq_node, a->seq_prob, a->seq_law);
        double e = 0;
        for (int i = 0; i < n; i++)
            e += a->seq_prob[i] * t->depth[a->seq_node[i]];
        *out = e;
        return ARB_OK;
    }
    if (arb_ot_method_parse(name, &m))
        return ARB_E_UNSUPPORTED;
    if (m == ARB_OT_SPECINFER && a->o.specinfer_uniform)
        return ARB_E_UNSUPPORTED; /* the law given the tree differs from sequential mode */
    *out = arb_otan_be_tree(a, m, t, in->p, in->q, V, NULL, 0) - 1;
    return ARB_OK;
}
