/* vf_models.h — synthetic target/draft models and draft-tree regimes for the verifier tests
 * (docs/spec/verification.md §11.1, §0.3). Header-only, shared by test_verifiers.c and test_otanalysis.c.
 *
 * A model gives p(.|c) and q(.|c) for every context c = token path from the tree root up to
 * depth D (contexts numbered as a complete V-ary tree: child of id i by token t is V*i+t+1).
 * Trees are drafted with the production RNG (arb_rng, draft stream) and tree.h; p/q rows are
 * copied into n x V arrays, exactly what a verifier gets from the decode loop.
 */
#ifndef VF_MODELS_H
#define VF_MODELS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"
#include "tree.h"

#define VM_VMAX 8
#define VM_NMAX 64

typedef struct vm_model {
    int V, D;          /* vocabulary, deepest context depth */
    int n_ctx;
    double *p, *q;     /* n_ctx x V */
} vm_model;

static inline int vm_n_ctx(int V, int D)
{
    int n = 0, w = 1;
    for (int d = 0; d <= D; d++, w *= V)
        n += w;
    return n;
}

static inline int vm_child(const vm_model *m, int ctx, int t) { return ctx * m->V + t + 1; }

static inline void vm_alloc(vm_model *m, int V, int D)
{
    m->V = V;
    m->D = D;
    m->n_ctx = vm_n_ctx(V, D);
    m->p = calloc((size_t)m->n_ctx * V, sizeof(double));
    m->q = calloc((size_t)m->n_ctx * V, sizeof(double));
}

static inline void vm_free(vm_model *m)
{
    free(m->p);
    free(m->q);
    memset(m, 0, sizeof *m);
}

/* §11.1 random model: weights u^3, each zeroed w.p. 0.1 (redraw if all 0), normalized. */
static inline void vm_rand_row(arb_rng *r, double *row, int V)
{
    for (;;) {
        double S = 0;
        for (int x = 0; x < V; x++) {
            double u = arb_rng_u(r);
            row[x] = arb_rng_u(r) < 0.1 ? 0.0 : u * u * u;
            S += row[x];
        }
        if (S > 0) {
            for (int x = 0; x < V; x++)
                row[x] /= S;
            return;
        }
    }
}

static inline void vm_random(vm_model *m, int V, int D, uint64_t seed)
{
    vm_alloc(m, V, D);
    arb_rng r;
    arb_rng_init(&r, seed, 0, 0, ARB_STREAM_AUX);
    for (int c = 0; c < m->n_ctx; c++) {
        vm_rand_row(&r, m->p + (size_t)c * V, V);
        vm_rand_row(&r, m->q + (size_t)c * V, V);
    }
}

/* Sparse laws (top-p-like): in each context p lives on a window of 3 tokens and q on the window
   shifted by one, so p and q together have at most 4 of V >= 8 tokens (Khisti's sparse rounds,
   khisti.c). Weights u^3 + 0.05, the window start drawn per context. */
static inline void vm_sparse(vm_model *m, int V, int D, uint64_t seed)
{
    vm_alloc(m, V, D);
    arb_rng r;
    arb_rng_init(&r, seed, 0, 0, ARB_STREAM_AUX);
    for (int c = 0; c < m->n_ctx; c++) {
        const int w0 = (int)(arb_rng_u(&r) * (V - 3)) % (V - 3);
        double *p = m->p + (size_t)c * V, *q = m->q + (size_t)c * V, Sp = 0, Sq = 0;
        for (int i = 0; i < 3; i++) {
            double u = arb_rng_u(&r), v = arb_rng_u(&r);
            p[w0 + i] = u * u * u + 0.05;
            q[w0 + 1 + i] = v * v * v + 0.05;
            Sp += p[w0 + i];
            Sq += q[w0 + 1 + i];
        }
        for (int x = 0; x < V; x++) {
            p[x] /= Sp;
            q[x] /= Sq;
        }
    }
}

/* §11.1 hash model H3 (V = 3). */
static inline void vm_h3_fill(vm_model *m, int ctx, int h, int depth)
{
    double *p = m->p + (size_t)ctx * 3, *q = m->q + (size_t)ctx * 3, Sp = 0, Sq = 0;
    for (int x = 0; x < 3; x++) {
        p[x] = 1 + ((x * (h + 2) + h) % 5);
        q[x] = 1 + ((x * (h + 3) + 2 * h + 1) % 5);
        Sp += p[x];
        Sq += q[x];
    }
    for (int x = 0; x < 3; x++) {
        p[x] /= Sp;
        q[x] /= Sq;
    }
    if (depth < m->D)
        for (int t = 0; t < 3; t++)
            vm_h3_fill(m, vm_child(m, ctx, t), (7 * h + t + 1) % 11, depth + 1);
}

static inline void vm_h3(vm_model *m, int D)
{
    vm_alloc(m, 3, D);
    vm_h3_fill(m, 0, 3, 0);
}

/* Context-free model (cases A and B of §11.2): the same p, q everywhere. */
static inline void vm_const(vm_model *m, int V, int D, const double *p, const double *q)
{
    vm_alloc(m, V, D);
    for (int c = 0; c < m->n_ctx; c++) {
        memcpy(m->p + (size_t)c * V, p, sizeof(double) * V);
        memcpy(m->q + (size_t)c * V, q, sizeof(double) * V);
    }
}

/* ---------------- regimes ---------------- */
typedef struct vm_regime {
    int kind;     /* ARB_REGIME_* */
    int k, L;     /* IID: k paths of length L; SINGLE: L; WOR: m = k, depth L; DET: top-k, depth L */
    int l;        /* DELAYED: trunk l, then k paths of length L (= b) */
} vm_regime;


/* Token source for drafting: a real RNG (Monte Carlo) or a scripted odometer that walks
   every possible sequence of draws with its probability (exact enumeration). */
typedef struct vm_src {
    arb_rng *rng;        /* non-NULL: sample */
    int script[64], nopt[64], n_script, pos;
    double prob;         /* probability of the draws made so far (enumeration) */
} vm_src;

static inline int vm_pick(vm_src *s, const double *w, int V)
{
    if (s->rng)
        return arb_sample_w(s->rng, w, V);
    double S = 0;
    int opts[VM_VMAX], n = 0;
    for (int x = 0; x < V; x++)
        if (w[x] > 0) {
            S += w[x];
            opts[n++] = x;
        }
    if (n == 0)
        return -1;
    if (s->pos >= s->n_script) {
        s->script[s->n_script] = 0;
        s->nopt[s->n_script++] = n;
    }
    int x = opts[s->script[s->pos++]];
    s->prob *= w[x] / S;
    return x;
}

/* Enumeration: start, then after each drafted tree call vm_src_next until it returns 0. */
static inline void vm_src_enum_begin(vm_src *s)
{
    memset(s, 0, sizeof *s);
    s->prob = 1;
}

static inline int vm_src_next(vm_src *s)
{
    while (s->n_script > 0 && s->script[s->n_script - 1] + 1 >= s->nopt[s->n_script - 1])
        s->n_script--;
    if (s->n_script == 0)
        return 0;
    s->script[s->n_script - 1]++;
    s->pos = 0;
    s->prob = 1;
    return 1;
}

typedef struct vm_draft {
    arb_tree t;
    int32_t ctx[VM_NMAX]; /* context id of each node */
    double P[VM_NMAX * VM_VMAX], Q[VM_NMAX * VM_VMAX];
} vm_draft;

static inline int vm_add(vm_draft *d, const vm_model *m, int v, int x)
{
    int c = arb_tree_find_child(&d->t, v, x);
    if (c < 0) {
        c = arb_tree_add(&d->t, v, x, ARB_SRC_DRAFT, -1, (float)m->q[(size_t)d->ctx[v] * m->V + x]);
        d->ctx[c] = vm_child(m, d->ctx[v], x);
    }
    return c;
}

static inline int vm_chain(vm_draft *d, const vm_model *m, vm_src *r, int v, int len)
{
    for (int i = 0; i < len; i++) {
        int x = vm_pick(r, m->q + (size_t)d->ctx[v] * m->V, m->V);
        int c = vm_add(d, m, v, x);
        arb_tree_push_seq(&d->t, v, c);
        v = c;
    }
    return v;
}

static inline void vm_wor(vm_draft *d, const vm_model *m, vm_src *r, int v, int mwidth, int depth)
{
    if (depth == 0)
        return;
    double g[VM_VMAX];
    memcpy(g, m->q + (size_t)d->ctx[v] * m->V, sizeof(double) * m->V);
    int kids[VM_VMAX], nk = 0;
    for (int i = 0; i < mwidth; i++) {
        int x = vm_pick(r, g, m->V);
        if (x < 0)
            break;
        g[x] = 0;
        int c = vm_add(d, m, v, x);
        arb_tree_push_seq(&d->t, v, c);
        kids[nk++] = c;
    }
    for (int i = 0; i < nk; i++)
        vm_wor(d, m, r, kids[i], mwidth, depth - 1);
}

static inline void vm_det(vm_draft *d, const vm_model *m, int v, int width, int depth)
{
    if (depth == 0)
        return;
    int32_t idx[VM_VMAX];
    for (int x = 0; x < m->V; x++)
        idx[x] = x;
    arb_sample_order_desc(m->q + (size_t)d->ctx[v] * m->V, idx, m->V);
    for (int i = 0; i < width && i < m->V; i++) {
        int c = vm_add(d, m, v, idx[i]);
        vm_det(d, m, c, width, depth - 1);
    }
}

/* Draft one tree of the regime, finalize, fill P/Q rows. */
static inline void vm_draw_src(vm_draft *d, const vm_model *m, const vm_regime *g, vm_src *r)
{
    arb_tree_reset(&d->t, 0);
    d->ctx[0] = 0;
    switch (g->kind) {
    case ARB_REGIME_SINGLE:
        vm_chain(d, m, r, 0, g->L);
        break;
    case ARB_REGIME_IID:
        for (int j = 0; j < g->k; j++)
            vm_chain(d, m, r, 0, g->L);
        break;
    case ARB_REGIME_DELAYED: {
        int e = vm_chain(d, m, r, 0, g->l);
        for (int j = 0; j < g->k; j++)
            vm_chain(d, m, r, e, g->L);
        break;
    }
    case ARB_REGIME_WOR:
        vm_wor(d, m, r, 0, g->k, g->L);
        break;
    default:
        vm_det(d, m, 0, g->k, g->L);
        break;
    }
    arb_tree_finalize(&d->t);
    for (int v = 0; v < d->t.n; v++) {
        memcpy(d->P + (size_t)v * m->V, m->p + (size_t)d->ctx[v] * m->V, sizeof(double) * m->V);
        memcpy(d->Q + (size_t)v * m->V, m->q + (size_t)d->ctx[v] * m->V, sizeof(double) * m->V);
    }
}

static inline void vm_draw(vm_draft *d, const vm_model *m, const vm_regime *g, arb_rng *rng)
{
    vm_src s = {.rng = rng};
    vm_draw_src(d, m, g, &s);
}

/* Negative control of §0.3/§11.5: reorder every C(v) by token id. */
static inline void vm_sort_children(vm_draft *d)
{
    arb_tree *t = &d->t;
    for (int v = 0; v < t->n; v++) {
        int32_t *s = t->child_seq + t->seq_start[v];
        for (int i = 1; i < t->seq_len[v]; i++)
            for (int j = i; j > 0 && t->tok[s[j - 1]] > t->tok[s[j]]; j--) {
                int32_t x = s[j]; s[j] = s[j - 1]; s[j - 1] = x;
            }
    }
}

/* Exact target law of the first H tokens into law[V^H] (cell = y0*V^(H-1) + ... ). */
static inline void vm_target_law(const vm_model *m, int H, double *law)
{
    int cells = 1;
    for (int i = 0; i < H; i++)
        cells *= m->V;
    for (int c = 0; c < cells; c++) {
        double pr = 1;
        int ctx = 0, rem = c, div = cells / m->V;
        for (int i = 0; i < H; i++) {
            int y = rem / div;
            rem %= div;
            div = div > 1 ? div / m->V : 1;
            pr *= m->p[(size_t)ctx * m->V + y];
            ctx = vm_child(m, ctx, y);
        }
        law[c] = pr;
    }
}

#endif
