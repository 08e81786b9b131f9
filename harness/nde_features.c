/* nde_features.c — the NDE action set, latency model and root features (nde_features.h). */
#include "nde_features.h"

#include <math.h>

#include "error.h"

const arb_draft_shape arb_nde_actions[ARB_NDE_N_ACTIONS] = {
    {1, 0, 2}, {1, 0, 4}, {1, 0, 6},
    {2, 0, 2}, {3, 0, 2}, {4, 0, 2},
    {2, 0, 4}, /* ARB_NDE_BASE */
    {3, 0, 4}, {4, 0, 4},
    {2, 0, 6}, {3, 0, 6}, {4, 0, 6},
    {2, 2, 2}, {3, 2, 2}, {4, 2, 2},
    {2, 2, 4}, {3, 2, 4}, {4, 2, 4},
};

const char *const arb_nde_feature_names[ARB_NDE_F] = {
    "H_p_prev", "H_q_prev", "H_q_root", "KL_p_q_prev", "KL_q_p_prev", "L1_p_q_prev",
    "log_n", "temperature", "top_p", "t_draft_ms", "t_target_ms"};

int arb_nde_action_index(arb_draft_shape s)
{
    for (int a = 0; a < ARB_NDE_N_ACTIONS; a++)
        if (arb_nde_actions[a].k == s.k && arb_nde_actions[a].l == s.l && arb_nde_actions[a].b == s.b)
            return a;
    return -1;
}

double arb_nde_latency_us(const double c[3], int n, int m)
{
    return c[0] + c[1] * m + c[2] * (double)n * m;
}

double arb_nde_action_us(const arb_nde_latency *lat, int n, arb_draft_shape a)
{
    double us = (1 + a.l) * arb_nde_latency_us(lat->draft, n, 1);
    for (int j = 1; j < a.b; j++)
        us += arb_nde_latency_us(lat->draft, n, j * a.k);
    return us + arb_nde_latency_us(lat->target, n, arb_draft_shape_nodes(a));
}

int arb_nde_latency_fit(const int *n, const int *m, const double *us, int n_pts, double c[3])
{
    double A[3][4] = {{0}}; /* normal equations, augmented */
    for (int i = 0; i < n_pts; i++) {
        const double x[3] = {1, m[i], (double)n[i] * m[i]};
        for (int r = 0; r < 3; r++) {
            for (int s = 0; s < 3; s++)
                A[r][s] += x[r] * x[s];
            A[r][3] += x[r] * us[i];
        }
    }
    for (int col = 0; col < 3; col++) { /* Gauss-Jordan with partial pivoting */
        int piv = col;
        for (int r = col + 1; r < 3; r++)
            if (fabs(A[r][col]) > fabs(A[piv][col]))
                piv = r;
        if (fabs(A[piv][col]) < 1e-12 * (1 + fabs(A[0][0])))
            return ARB_E_INVAL;
        for (int s = 0; s < 4; s++) {
            double t = A[col][s];
            A[col][s] = A[piv][s], A[piv][s] = t;
        }
        for (int r = 0; r < 3; r++) {
            if (r == col)
                continue;
            double f = A[r][col] / A[col][col];
            for (int s = col; s < 4; s++)
                A[r][s] -= f * A[col][s];
        }
    }
    for (int r = 0; r < 3; r++)
        c[r] = A[r][3] / A[r][r];
    return ARB_OK;
}

static double entropy(const double *p, int V)
{
    double h = 0;
    for (int x = 0; x < V; x++)
        if (p[x] > 0)
            h -= p[x] * log(p[x]);
    return h;
}

static double kl(const double *p, const double *q, int V)
{
    double s = 0;
    for (int x = 0; x < V; x++)
        if (p[x] > 0)
            s += p[x] * log(p[x] / (q[x] > 1e-12 ? q[x] : 1e-12));
    return s;
}

void arb_nde_features(const double *p_prev, const double *q_prev, const double *q_root, int V, int n,
                      const arb_sampling *smp, const arb_nde_latency *lat, double *f)
{
    double l1 = 0;
    for (int x = 0; x < V; x++)
        l1 += fabs(p_prev[x] - q_prev[x]);
    f[0] = entropy(p_prev, V);
    f[1] = entropy(q_prev, V);
    f[2] = entropy(q_root, V);
    f[3] = kl(p_prev, q_prev, V);
    f[4] = kl(q_prev, p_prev, V);
    f[5] = l1;
    f[6] = log(n > 1 ? n : 1);
    f[7] = smp->temperature;
    f[8] = smp->top_p;
    f[9] = arb_nde_latency_us(lat->draft, n, 1) / 1e3;
    f[10] = arb_nde_latency_us(lat->target, n, 1) / 1e3;
}
