/* analysis.c — GOOSE Propositions 1-2, tree yield, Appendix E.4 (see analysis.h). */
#include "analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double arb_goose_ell(double p_t, int D)
{
    double l = 0.0, pw = 1.0;
    for (int j = 1; j <= D - 1; j++) {
        pw *= p_t;
        l += pw;
    }
    return l;
}

double arb_goose_prop1(double p_s, double p_t, int m, const double *w, int D)
{
    double ell = arb_goose_ell(p_t, D), tau = 1.0, ps_i = 1.0;
    for (int i = 0; i < m; i++) { /* ps_i = p_s^i */
        double phi = 1.0 - pow(1.0 - p_t, w[i]);
        tau += ps_i * (1.0 - p_s) * phi * (1.0 + ell);
        ps_i *= p_s;
        tau += ps_i; /* Σ_{i=1}^{m} p_s^i */
    }
    return tau;
}

int arb_goose_prop2(double p_s, double p_t, int m, double B_b, double *w, double *kappa)
{
    if (!(p_t > 0.0 && p_t < 1.0) || !(p_s > 0.0 && p_s <= 1.0) || m < 1 || !(B_b >= 0.0))
        return -1;
    double k = log(p_s) / log(1.0 - p_t); /* > 0 for p_s < 1; 0 at p_s = 1 (uniform) */
    int mp = m;
    double w0 = B_b / m;
    for (mp = m; mp >= 1; mp--) {
        w0 = (B_b + k * mp * (mp - 1) / 2.0) / mp;
        if (w0 - k * (mp - 1) >= 0.0)
            break;
    }
    if (mp < 1) { /* unreachable: m' = 1 gives w0 = B_b >= 0 */
        mp = 1;
        w0 = B_b;
    }
    for (int i = 0; i < m; i++)
        w[i] = i < mp ? w0 - k * i : 0.0;
    *kappa = k;
    return 0;
}

static double node_p(const arb_tree *t, int c, double p_s, double p_t)
{
    return (t->flags[c] & ARB_NODE_SPINE) ? p_s : p_t;
}

double arb_tree_yield(const arb_tree *t, double p_s, double p_t)
{
    enum { YMAX = 4096 };
    ARB_ASSERT(t->finalized && t->n <= YMAX);
    double V[YMAX];
    int ch[64];
    for (int v = t->n - 1; v >= 0; v--) {
        int nc = 0;
        for (int c = t->first_child[v]; c >= 0 && nc < 64; c = t->next_sibling[c]) {
            /* insertion by (spine first, rank, index); list order already gives index */
            int j = nc++;
            while (j > 0) {
                int o = ch[j - 1];
                int so = !(t->flags[o] & ARB_NODE_SPINE), sc = !(t->flags[c] & ARB_NODE_SPINE);
                if (so < sc || (so == sc && t->rank[o] <= t->rank[c]))
                    break;
                ch[j] = o;
                j--;
            }
            ch[j] = c;
        }
        double val = 0.0, miss = 1.0;
        for (int j = 0; j < nc; j++) {
            double p = node_p(t, ch[j], p_s, p_t);
            val += miss * p * (1.0 + V[ch[j]]);
            miss *= 1.0 - p;
        }
        V[v] = val;
    }
    return 1.0 + V[0];
}

double arb_iso_yield(int k, int B, double p)
{
    arb_tree t;
    if (arb_tree_init(&t, B, NULL))
        return NAN;
    arb_tree_reset(&t, 0);
    for (int v = 0; t.n < B; v++)
        for (int j = 0; j < k && t.n < B; j++)
            arb_tree_add(&t, v, j, ARB_SRC_TR, j, NAN);
    arb_tree_finalize(&t);
    double y = arb_tree_yield(&t, p, p);
    arb_tree_release(&t);
    return y;
}

void arb_e4_add(arb_e4 *e, const arb_step_record *r)
{
    if (r->mode != ARB_MODE_TREE && r->mode != ARB_MODE_BYPASS)
        return;
    e->prop_spine += r->n_spine;
    e->acc_spine += r->acc_spine;
    e->prop_tr += r->prop_by_src[ARB_STAT_TR];
    e->acc_tr += r->acc_by_src[ARB_STAT_TR];
    if (r->mode == ARB_MODE_TREE) {
        e->spine_len_sum += r->n_spine;
        e->n_tree_steps++;
    }
}

void arb_e4_finish(arb_e4 *e, int B, int D, int n_generated, int n_target_calls)
{
    e->p_s = e->prop_spine > 0 ? e->acc_spine / e->prop_spine : 0.0;
    e->p_t = e->prop_tr > 0 ? e->acc_tr / e->prop_tr : 0.0;
    e->m_mean = e->n_tree_steps > 0 ? e->spine_len_sum / e->n_tree_steps : 0.0;
    e->m = (int)lround(e->m_mean);
    if (e->m < 1)
        e->m = 1; /* [CHOICE] Prop. 1 needs an integer spine; at least the anchor's level */
    e->tau_meas = n_target_calls > 0 ? (double)n_generated / n_target_calls : 0.0;
    e->valid = e->p_t > 0.0 && e->p_t < 1.0 && e->p_s > 0.0;
    e->tau_iso = e->p_t > 0.0 ? arb_iso_yield(3, B, e->p_t) : 1.0;
    if (!e->valid) {
        e->tau_eq1 = NAN;
        e->lower_ok = e->above_iso = false;
        return;
    }
    double w[256];
    int m = e->m < 256 ? e->m : 256;
    arb_goose_prop2(e->p_s, e->p_t, m, (double)(B - m), w, &e->kappa);
    e->tau_eq1 = arb_goose_prop1(e->p_s, e->p_t, m, w, D);
    e->lower_ok = e->tau_eq1 <= e->tau_meas;
    e->above_iso = e->tau_eq1 > e->tau_iso;
}
