/* khisti.c — Khisti et al. multi-draft sampling as in the DTE reference code (docs/spec/verification.md §6):
 * a pairwise tournament over the draws in sampled order, each round resolved by a small LP
 * (truncated to the s best-ranked tokens) that makes the winner's law q_I as close to p as
 * possible, then one naive speculative step with draft law q_I.
 *
 * The LP is solved by a dense simplex with Bland's rule (deterministic vertex), in double.
 * Every right-hand side is >= 0, so the origin is feasible and no phase 1 is needed.
 */
#include <stdlib.h>
#include <string.h>

#include "vf_int.h"

#define KH_S_MAX 15

struct arb_khisti_lp {
    int V, s_max;
    double *key, *Ta, *Tb;   /* V each */
    int32_t *ord, *rank;     /* V each: tokens by rank, rank of each token */
    uint64_t *sort_key;      /* 2V: arb_sample_order_desc_all's scratch */
    int32_t *sort_tmp;       /* V */
    int s_eff;               /* s' of the last round */
    double w[KH_S_MAX][KH_S_MAX]; /* last round's pair probabilities (better-ranked kept) */
    double *tab;             /* (m+1) x (cols) simplex tableau for s_max */
    int *basic;              /* m basic variable per row */
};

static int lp_dims(int s, int *nv, int *m)
{
    *nv = s * (s - 1) + s;
    *m = 2 * s + *nv;
    return *nv + *m + 1; /* columns: variables, slacks, rhs */
}

int arb_khisti_lp_new(int V, int s_max, arb_khisti_lp **out)
{
    *out = NULL;
    if (s_max > KH_S_MAX)
        s_max = KH_S_MAX;
    arb_khisti_lp *k = calloc(1, sizeof *k);
    if (!k)
        return ARB_E_NOMEM;
    int nv, m, cols = lp_dims(s_max, &nv, &m);
    k->V = V;
    k->s_max = s_max;
    k->key = malloc(sizeof(double) * (size_t)V);
    k->Ta = malloc(sizeof(double) * (size_t)V);
    k->Tb = malloc(sizeof(double) * (size_t)V);
    k->ord = malloc(sizeof(int32_t) * (size_t)V);
    k->rank = malloc(sizeof(int32_t) * (size_t)V);
    k->tab = malloc(sizeof(double) * (size_t)(m + 1) * (size_t)cols);
    k->basic = malloc(sizeof(int) * (size_t)m);
    k->sort_key = malloc(sizeof(uint64_t) * 2 * (size_t)V);
    k->sort_tmp = malloc(sizeof(int32_t) * (size_t)V);
    if (!k->key || !k->Ta || !k->Tb || !k->ord || !k->rank || !k->tab || !k->basic || !k->sort_key || !k->sort_tmp) {
        arb_khisti_lp_free(k);
        return ARB_E_NOMEM;
    }
    *out = k;
    return ARB_OK;
}

void arb_khisti_lp_free(arb_khisti_lp *k)
{
    if (!k)
        return;
    free(k->key); free(k->Ta); free(k->Tb); free(k->ord); free(k->rank); free(k->tab); free(k->basic);
    free(k->sort_key); free(k->sort_tmp);
    free(k);
}

/* Variable index of w[i][j] (i != j) and of z[i]. */
static int wvar(int s, int i, int j) { return i * (s - 1) + (j < i ? j : j - 1); }
static int zvar(int s, int i) { return s * (s - 1) + i; }

/* Maximize Σ z subject to the rows described in §6.1. Returns 0 on success (w filled). */
static int lp_simplex(arb_khisti_lp *k, const double *pa, const double *av, const double *bv,
                      const double *base, int s)
{
    int nv, m, cols = lp_dims(s, &nv, &m);
    double *T = k->tab;
    memset(T, 0, sizeof(double) * (size_t)(m + 1) * (size_t)cols);
#define TB(r, c) T[(size_t)(r) * (size_t)cols + (size_t)(c)]
    for (int i = 0; i < s; i++) {
        TB(i, zvar(s, i)) = 1;                       /* z_i <= p(ω_i) */
        TB(i, cols - 1) = pa[i];
        int r = s + i;                               /* z_i - (w terms of Q_i) <= base_i */
        TB(r, zvar(s, i)) = 1;
        for (int j = 0; j < s; j++) {
            if (j == i)
                continue;
            double sg = j < i ? 1.0 : -1.0;
            TB(r, wvar(s, i, j)) += sg * av[i] * bv[j];
            TB(r, wvar(s, j, i)) += sg * av[j] * bv[i];
        }
        TB(r, cols - 1) = base[i];
    }
    for (int v = 0; v < nv; v++) {                   /* x <= 1 */
        TB(2 * s + v, v) = 1;
        TB(2 * s + v, cols - 1) = 1;
    }
    for (int r = 0; r < m; r++) {
        TB(r, nv + r) = 1;
        k->basic[r] = nv + r;
    }
    for (int i = 0; i < s; i++)
        TB(m, zvar(s, i)) = -1;                      /* objective row: -c */
    int ok = 0;
    for (int it = 0; it < 10000; it++) {
        int e = -1;
        for (int c = 0; c < cols - 1 && e < 0; c++)
            if (TB(m, c) < -1e-12)
                e = c;
        if (e < 0) {
            ok = 1;
            break;
        }
        int l = -1;
        double best = 0;
        for (int r = 0; r < m; r++) {
            double a = TB(r, e);
            if (a > 1e-12) {
                double ratio = TB(r, cols - 1) / a;
                if (l < 0 || ratio < best || (ratio == best && k->basic[r] < k->basic[l])) {
                    l = r;
                    best = ratio;
                }
            }
        }
        if (l < 0)
            break; /* unbounded: impossible with x <= 1 rows */
        double piv = TB(l, e);
        for (int c = 0; c < cols; c++)
            TB(l, c) /= piv;
        for (int r = 0; r <= m; r++) {
            if (r == l)
                continue;
            double f = TB(r, e);
            if (f != 0)
                for (int c = 0; c < cols; c++)
                    TB(r, c) -= f * TB(l, c);
        }
        k->basic[l] = e;
    }
    if (!ok)
        return -1;
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++)
            k->w[i][j] = 0;
    for (int r = 0; r < m; r++)
        if (k->basic[r] < s * (s - 1)) {
            int v = k->basic[r], i = v / (s - 1), jj = v % (s - 1), j = jj < i ? jj : jj + 1;
            double x = TB(r, cols - 1);
            k->w[i][j] = x < 0 ? 0 : x > 1 ? 1 : x;
        }
#undef TB
    return 0;
}

void arb_khisti_lp_solve(arb_khisti_lp *k, const double *p, const double *a, const double *b, int V,
                         int s, double *a_next)
{
    for (int x = 0; x < V; x++)
        k->key[x] = p[x] - a[x] * b[x];
    /* every token's rank is needed (the masses below it): a full sort per round, by radix
       (O(V); the heap sort's O(V log V) was ~80 % of Khisti's verification time) */
    arb_sample_order_desc_all(k->key, V, k->ord, k->sort_key, k->sort_tmp);
    double sa = 0, sb = 0; /* mass ranked strictly below, accumulated from the bottom */
    for (int i = V - 1; i >= 0; i--) {
        int x = k->ord[i];
        k->rank[x] = i;
        k->Ta[x] = sa;
        k->Tb[x] = sb;
        sa += a[x];
        sb += b[x];
    }
    int sp = s < V ? s : V;
    if (sp > k->s_max)
        sp = k->s_max;
    k->s_eff = sp;
    double A2 = 0, B2 = 0;
    for (int i = sp; i < V; i++) {
        int x = k->ord[i];
        A2 += a[x];
        B2 += b[x];
        a_next[x] = a[x] * b[x] + a[x] * k->Tb[x] + k->Ta[x] * b[x];
    }
    double pa[KH_S_MAX], av[KH_S_MAX], bv[KH_S_MAX], base[KH_S_MAX];
    for (int i = 0; i < sp; i++) {
        int x = k->ord[i];
        pa[i] = p[x];
        av[i] = a[x];
        bv[i] = b[x];
    }
    for (int i = 0; i < sp; i++) {
        base[i] = av[i] * bv[i] + av[i] * B2 + A2 * bv[i];
        for (int j = 0; j < i; j++)
            base[i] += av[i] * bv[j] + av[j] * bv[i];
    }
    if (sp >= 2 && lp_simplex(k, pa, av, bv, base, sp) != 0) {
        for (int i = 0; i < sp; i++) /* fallback: better rank always kept (still lossless) */
            for (int j = 0; j < sp; j++)
                k->w[i][j] = 1;
    }
    if (sp < 2)
        k->w[0][0] = 1;
    for (int i = 0; i < sp; i++) {
        double Q = av[i] * bv[i] + av[i] * B2 + A2 * bv[i];
        for (int j = 0; j < sp; j++) {
            if (j < i)
                Q += av[i] * bv[j] * (1 - k->w[i][j]) + av[j] * bv[i] * (1 - k->w[j][i]);
            else if (j > i)
                Q += av[i] * bv[j] * k->w[i][j] + av[j] * bv[i] * k->w[j][i];
        }
        a_next[k->ord[i]] = Q;
    }
    double S = 0;
    for (int x = 0; x < V; x++) {
        if (a_next[x] < 0)
            a_next[x] = 0; /* §12.9 */
        S += a_next[x];
    }
    ARB_ASSERT(S > 0.5 && S < 1.5);
    for (int x = 0; x < V; x++)
        a_next[x] /= S;
}

double arb_khisti_keep(const arb_khisti_lp *k, int x1, int x2)
{
    if (x1 == x2)
        return 1.0;
    int r1 = k->rank[x1], r2 = k->rank[x2];
    if (r1 < k->s_eff && r2 < k->s_eff)
        return r1 < r2 ? k->w[r1][r2] : 1.0 - k->w[r1][r2];
    return r1 < r2 ? 1.0 : 0.0;
}

/* ---------------- solver and vtable ---------------- */

typedef struct khisti_state {
    arb_ot_work w;
    arb_khisti_lp *lp;
    double *a, *a2; /* V each: winner law before / after a round */
} khisti_state;

static int solve_khisti(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                        arb_rng *rng, int32_t *nf)
{
    if (n == 1)
        return arb_ot_solve_naive(w, p, q, C, n, rng, nf);
    khisti_state *st = (khisti_state *)w; /* w is the first member */
    const int V = w->V;
    const double *a = q;
    int win = C[0];
    for (int r = 1; r < n; r++) {
        double *dst = a == st->a ? st->a2 : st->a;
        arb_khisti_lp_solve(st->lp, p, a, q, V, w->o->khisti_s, dst);
        double keep = arb_khisti_keep(st->lp, win, C[r]);
        if (win != C[r] && !arb_rng_bern(rng, keep))
            win = C[r];
        a = dst;
    }
    if (a[win] > 0 && arb_rng_ratio(rng, p[win], a[win]))
        return win;
    arb_vf_residual(p, 1.0, a, V, w->r);
    return arb_vf_sample_or(rng, w->r, p, V, nf);
}

static int khisti_create(const arb_verifier_opts *o, void **state, arb_err *err)
{
    *state = NULL;
    khisti_state *st = calloc(1, sizeof *st);
    if (!st)
        return ARB_ERR(err, ARB_E_NOMEM, "verifier khisti: out of memory");
    int rc = arb_ot_work_init(&st->w, o, err);
    if (rc) {
        free(st);
        return rc;
    }
    st->a = malloc(sizeof(double) * (size_t)o->V);
    st->a2 = malloc(sizeof(double) * (size_t)o->V);
    if (!st->a || !st->a2 || arb_khisti_lp_new(o->V, o->khisti_s, &st->lp)) {
        arb_ot_work_release(&st->w);
        free(st->a); free(st->a2); free(st);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier khisti: out of memory");
    }
    *state = st;
    return ARB_OK;
}

static void khisti_destroy(void *state)
{
    khisti_state *st = state;
    if (!st)
        return;
    arb_ot_work_release(&st->w);
    arb_khisti_lp_free(st->lp);
    free(st->a); free(st->a2); free(st);
}

static int khisti_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    return arb_ot_run(&((khisti_state *)state)->w, in, solve_khisti, true, out);
}

const arb_verifier_i arb_verifier_khisti = {
    .name = "khisti", .needs_q = true, .needs_logits = false, .sampling = true,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_NO, ARB_VALID_NO},
    .create = khisti_create, .destroy = khisti_destroy, .verify = khisti_verify,
};
