/* khisti.c — Khisti et al. multi-draft sampling as in the DTE reference code (docs/spec/verification.md §6):
 * a pairwise tournament over the draws in sampled order, each round resolved by a small LP
 * (truncated to the s best-ranked tokens) that makes the winner's law q_I as close to p as
 * possible, then one naive speculative step with draft law q_I.
 *
 * The LP is solved by a dense simplex with Bland's rule (deterministic vertex), in double.
 * Every right-hand side is >= 0, so the origin is feasible and no phase 1 is needed.
 *
 * A round's cost is its sort and passes over the vocabulary (the LP is 25 variables). The
 * masses below each token are running sums from the bottom of the order, which also give A2
 * and B2 and the normalizer (in that order: bottom-up, Ω2 then Ω1), so one gather pass does
 * what three scatters and two passes did. With top-p or top-k laws the rounds run over
 * U = supp p ∪ supp q only (arb_khisti_lp_support, vf_int.h): the same bits, tested against
 * the dense rounds. `arbor run` of 4 prompts, self-draft k = 4 paths of 4 tokens, one thread:
 * verification 1706 -> 257 us a step at top-p 0.9, 3038 -> 2297 at top-p 1 (docs/sampling.md).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vf_int.h"

#define KH_S_MAX 15
#define KH_PF 32 /* prefetch distance of the rank-order gathers, tokens */

struct arb_khisti_lp {
    int V, s_max;
    double *key;             /* V: p - a b of the last round (sparse: U's entries only) */
    int32_t *ord;            /* V: the last round's order, of every token (dense) or of U's (sparse) */
    uint64_t *sort_key;      /* 2V: arb_sample_order_desc_all's scratch */
    int32_t *sort_tmp;       /* V */
    int32_t *u;              /* V: the support U ascending (sparse mode) */
    double *ukey;            /* V: U's keys in U's order (the sparse sort's input) */
    uint8_t *in_u;           /* V: membership of U (all zero outside sparse mode) */
    int n_u;                 /* |U|; 0: dense mode */
    int v_u;                 /* the vocabulary size U was taken from */
    int s_eff;               /* s' of the last round */
    int32_t omega[KH_S_MAX]; /* Ω1 of the last round, best rank first */
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
    k->ord = malloc(sizeof(int32_t) * (size_t)V);
    k->tab = malloc(sizeof(double) * (size_t)(m + 1) * (size_t)cols);
    k->basic = malloc(sizeof(int) * (size_t)m);
    k->sort_key = malloc(sizeof(uint64_t) * 2 * (size_t)V);
    k->sort_tmp = malloc(sizeof(int32_t) * (size_t)V);
    k->u = malloc(sizeof(int32_t) * (size_t)V);
    k->ukey = malloc(sizeof(double) * (size_t)V);
    k->in_u = calloc((size_t)V, 1);
    if (!k->key || !k->ord || !k->tab || !k->basic || !k->sort_key || !k->sort_tmp || !k->u || !k->ukey ||
        !k->in_u) {
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
    free(k->key); free(k->ord); free(k->tab); free(k->basic); free(k->sort_key); free(k->sort_tmp);
    free(k->u); free(k->ukey); free(k->in_u);
    free(k);
}

bool arb_khisti_lp_support(arb_khisti_lp *k, const double *p, const double *q, int V, int max_n)
{
    ARB_ASSERT(k->n_u == 0 && V <= k->V);
    int n = 0;
    for (int x = 0; x < V && n <= max_n; x++)
        if (p[x] > 0 || q[x] > 0)
            k->u[n++] = x;
    if (n > max_n || n == 0)
        return false; /* dense mode: nothing set, nothing to end */
    for (int i = 0; i < n; i++)
        k->in_u[k->u[i]] = 1;
    k->v_u = V;
    k->n_u = n;
    return true;
}

void arb_khisti_lp_support_end(arb_khisti_lp *k, double *const *zero, int n_zero)
{
    for (int i = 0; i < k->n_u; i++) {
        const int32_t x = k->u[i];
        k->in_u[x] = 0;
        for (int j = 0; j < n_zero; j++)
            zero[j][x] = 0;
    }
    k->n_u = 0;
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

/* The rank order: x before y when its key is larger, ties by the smaller id (the radix sort's
   order); a token outside U in sparse mode has key 0 (p = a = b = 0 there). */
static double key_of(const arb_khisti_lp *k, int32_t x) { return k->n_u && !k->in_u[x] ? 0.0 : k->key[x]; }
static bool ranks_before(double kx, int32_t x, double ky, int32_t y) { return kx > ky || (kx == ky && x < y); }

/* Dense mode: every token's key, all V sorted; Ω1 = the first s'. */
static void order_dense(arb_khisti_lp *k, const double *p, const double *a, const double *b, int V, int sp)
{
    for (int x = 0; x < V; x++)
        k->key[x] = p[x] - a[x] * b[x];
    arb_sample_order_desc_all(k->key, V, k->ord, k->sort_key, k->sort_tmp);
    memcpy(k->omega, k->ord, sizeof(int32_t) * (size_t)sp);
}

/* Sparse mode: only U's keys are sorted (U ascending, so the sort's index ties are id ties).
   Every token outside U has key 0 and no mass: it can only matter as a member of Ω1, which is
   the first s' of the whole order, i.e. U's order merged with the zero keys outside U by id.
   Returns how many of U's tokens are in Ω1 (they are ord[0 .. that)). */
static int order_sparse(arb_khisti_lp *k, const double *p, const double *a, const double *b, int sp)
{
    const int n = k->n_u;
    for (int i = 0; i < n; i++) {
        const int32_t x = k->u[i];
        k->ukey[i] = k->key[x] = p[x] - a[x] * b[x];
    }
    arb_sample_order_desc_all(k->ukey, n, k->ord, k->sort_key, k->sort_tmp);
    for (int i = 0; i < n; i++)
        k->ord[i] = k->u[k->ord[i]];
    int iu = 0, y = -1, cnt = 0;
    const int V = k->v_u;
    do /* the first token outside U */
        y++;
    while (y < V && k->in_u[y]);
    while (cnt < sp) {
        const bool take_u = iu < n && (y >= V || ranks_before(k->key[k->ord[iu]], k->ord[iu], 0.0, y));
        if (take_u)
            k->omega[cnt++] = k->ord[iu++];
        else {
            k->omega[cnt++] = y;
            do
                y++;
            while (y < V && k->in_u[y]);
        }
    }
    return iu;
}

void arb_khisti_lp_solve(arb_khisti_lp *k, const double *p, const double *a, const double *b, int V,
                         int s, double *a_next)
{
    ARB_ASSERT(V <= k->V && (!k->n_u || V == k->v_u));
    int sp = s < V ? s : V;
    if (sp > k->s_max)
        sp = k->s_max;
    k->s_eff = sp;
    /* every token's rank is needed (the masses below it): a full sort per round, by radix
       (O(V); the heap sort's O(V log V) was ~80 % of Khisti's verification time), of U's
       tokens only in sparse mode */
    int n_ord = V, j = sp;
    if (k->n_u) {
        n_ord = k->n_u;
        j = order_sparse(k, p, a, b, sp);
    } else
        order_dense(k, p, a, b, V, sp);
    /* Ω2 from the bottom: the masses ranked strictly below x (Ta, Tb) are the running sums,
       q_I(x) = a b + a Tb + Ta b, and the sums at the top of Ω2 are A2, B2. A token outside U
       adds exact zeros, which is why the sparse order can skip it and give the same bits. */
    double sa = 0, sb = 0, S = 0;
    for (int i = n_ord - 1; i >= j; i--) {
        const int32_t x = k->ord[i];
        if (i >= j + KH_PF) { /* the gathers follow the rank order, i.e. no order: fetch ahead */
            const int32_t y = k->ord[i - KH_PF];
            __builtin_prefetch(a + y);
            __builtin_prefetch(b + y);
            __builtin_prefetch(a_next + y, 1);
        }
        const double ax = a[x], bx = b[x], v = ax * bx + ax * sb + sa * bx;
        a_next[x] = v;
        S += v;
        sa += ax;
        sb += bx;
    }
    const double A2 = sa, B2 = sb;
    double pa[KH_S_MAX], av[KH_S_MAX], bv[KH_S_MAX], base[KH_S_MAX];
    for (int i = 0; i < sp; i++) {
        const int32_t x = k->omega[i];
        pa[i] = p[x];
        av[i] = a[x];
        bv[i] = b[x];
    }
    for (int i = 0; i < sp; i++) {
        base[i] = av[i] * bv[i] + av[i] * B2 + A2 * bv[i];
        for (int jj = 0; jj < i; jj++)
            base[i] += av[i] * bv[jj] + av[jj] * bv[i];
    }
    if (sp >= 2 && lp_simplex(k, pa, av, bv, base, sp) != 0) {
        for (int i = 0; i < sp; i++) /* fallback: better rank always kept (still lossless) */
            for (int jj = 0; jj < sp; jj++)
                k->w[i][jj] = 1;
    }
    if (sp < 2)
        k->w[0][0] = 1;
    for (int i = sp - 1; i >= 0; i--) { /* Ω1 from the bottom, after Ω2 (a token outside U gets Q = 0) */
        double Q = av[i] * bv[i] + av[i] * B2 + A2 * bv[i];
        for (int jj = 0; jj < sp; jj++) {
            if (jj < i)
                Q += av[i] * bv[jj] * (1 - k->w[i][jj]) + av[jj] * bv[i] * (1 - k->w[jj][i]);
            else if (jj > i)
                Q += av[i] * bv[jj] * k->w[i][jj] + av[jj] * bv[i] * k->w[jj][i];
        }
        if (Q < 0)
            Q = 0; /* §12.9 */
        a_next[k->omega[i]] = Q;
        S += Q;
    }
    ARB_ASSERT(S > 0.5 && S < 1.5);
    if (k->n_u) /* the zeros outside U stay zero */
        for (int i = 0; i < k->n_u; i++)
            a_next[k->u[i]] /= S;
    else
        for (int x = 0; x < V; x++)
            a_next[x] /= S;
}

double arb_khisti_keep(const arb_khisti_lp *k, int x1, int x2)
{
    if (x1 == x2)
        return 1.0;
    int r1 = -1, r2 = -1;
    for (int i = 0; i < k->s_eff; i++) {
        r1 = k->omega[i] == x1 ? i : r1;
        r2 = k->omega[i] == x2 ? i : r2;
    }
    if (r1 >= 0 && r2 >= 0)
        return r1 < r2 ? k->w[r1][r2] : 1.0 - k->w[r1][r2];
    return ranks_before(key_of(k, x1), x1, key_of(k, x2), x2) ? 1.0 : 0.0;
}

/* ---------------- solver and vtable ---------------- */

typedef struct khisti_state {
    arb_ot_work w;
    arb_khisti_lp *lp;
    double *a, *a2; /* V each: winner law before / after a round */
    bool dirty;     /* a dense round left nonzeros in a / a2 (sparse rounds need zeros outside U) */
} khisti_state;

static int solve_khisti(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                        arb_rng *rng, int32_t *nf)
{
    if (n == 1)
        return arb_ot_solve_naive(w, p, q, C, n, rng, nf);
    khisti_state *st = (khisti_state *)w; /* w is the first member */
    const int V = w->V;
    /* top-p / top-k laws: the rounds over their support (the same bits, O(|U| log |U|) a
       round instead of O(V) sorts and passes; a single scan of p and q decides) */
    const bool sparse = arb_khisti_lp_support(st->lp, p, q, V, V / 2);
    if (sparse && st->dirty) {
        memset(st->a, 0, sizeof(double) * (size_t)V);
        memset(st->a2, 0, sizeof(double) * (size_t)V);
        st->dirty = false;
    }
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
    int tok;
    if (a[win] > 0 && arb_rng_ratio(rng, p[win], a[win]))
        tok = win;
    else {
        arb_vf_residual(p, 1.0, a, V, w->r);
        tok = arb_vf_sample_or(rng, w->r, p, V, nf);
    }
    if (sparse)
        arb_khisti_lp_support_end(st->lp, (double *const[]){st->a, st->a2}, 2);
    else
        st->dirty = true;
    return tok;
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
    st->a = calloc((size_t)o->V, sizeof(double));
    st->a2 = calloc((size_t)o->V, sizeof(double));
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
