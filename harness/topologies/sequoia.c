/* sequoia.c — Sequoia DP and template filling (see sequoia.h). */
#include "sequoia.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"

#define SQ_PATH_MAX 64

struct arb_sequoia {
    int K, M, L;
    double *p;      /* [K+1], p[b] for b = 1..K */
    double *T;      /* [(M+1) * (L+1) * (K+1)] */
    int *arg;       /* same shape: maximising y */
    double *best;   /* [(M+1) * (L+1)] */
};

#define IDX(s, m, l, b) ((((size_t)(m) * ((s)->L + 1)) + (l)) * ((s)->K + 1) + (b))
#define BIDX(s, m, l) ((size_t)(m) * ((s)->L + 1) + (l))

int arb_sequoia_new(const double *p, int K, int m_max, int l_max, arb_sequoia **out, arb_err *err)
{
    *out = NULL;
    if (K < 1 || K > 64 || m_max < 1 || m_max > 4096 || l_max < 1 || l_max > 64)
        return ARB_ERR(err, ARB_E_INVAL, "sequoia: K %d, budget %d, levels %d out of range", K, m_max, l_max);
    for (int i = 0; i < K; i++)
        if (!(p[i] >= 0.0 && p[i] <= 1.0))
            return ARB_ERR(err, ARB_E_INVAL, "sequoia: p[%d] = %g outside [0,1]", i, p[i]);
    arb_sequoia *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "sequoia: out of memory");
    s->K = K;
    s->M = m_max;
    s->L = l_max;
    size_t nt = (size_t)(m_max + 1) * (l_max + 1) * (K + 1);
    s->p = calloc((size_t)K + 1, sizeof *s->p);
    s->T = malloc(nt * sizeof *s->T);
    s->arg = calloc(nt, sizeof *s->arg);
    s->best = malloc((size_t)(m_max + 1) * (l_max + 1) * sizeof *s->best);
    if (!s->p || !s->T || !s->arg || !s->best) {
        arb_sequoia_free(s);
        return ARB_ERR(err, ARB_E_NOMEM, "sequoia: out of memory");
    }
    for (int i = 0; i < K; i++)
        s->p[i + 1] = p[i];
    for (size_t i = 0; i < nt; i++)
        s->T[i] = -INFINITY;
    for (size_t i = 0; i < (size_t)(m_max + 1) * (l_max + 1); i++)
        s->best[i] = -INFINITY;
    for (int l = 1; l <= l_max; l++) {
        s->T[IDX(s, 1, l, 0)] = 1.0;
        s->best[BIDX(s, 1, l)] = 1.0;
    }
    for (int m = 2; m <= m_max; m++) {
        for (int l = 2; l <= l_max; l++) {
            double b1 = s->best[BIDX(s, m - 1, l - 1)];
            if (b1 > -INFINITY) {
                s->T[IDX(s, m, l, 1)] = 1.0 + s->p[1] * b1;
                s->arg[IDX(s, m, l, 1)] = m - 1;
            }
            for (int b = 2; b <= K; b++) {
                double bv = -INFINITY;
                int by = 0;
                for (int y = 1; y <= m - 1; y++) {
                    double a = s->T[IDX(s, y, l, b - 1)], c = s->best[BIDX(s, m - y, l - 1)];
                    if (a == -INFINITY || c == -INFINITY)
                        continue;
                    double v = a + s->p[b] * c;
                    if (v > bv) {
                        bv = v;
                        by = y;
                    }
                }
                s->T[IDX(s, m, l, b)] = bv;
                s->arg[IDX(s, m, l, b)] = by;
            }
            double bb = -INFINITY;
            for (int b = 0; b <= K; b++)
                if (s->T[IDX(s, m, l, b)] > bb)
                    bb = s->T[IDX(s, m, l, b)];
            s->best[BIDX(s, m, l)] = bb;
        }
    }
    *out = s;
    return ARB_OK;
}

void arb_sequoia_free(arb_sequoia *s)
{
    if (!s)
        return;
    free(s->p);
    free(s->T);
    free(s->arg);
    free(s->best);
    free(s);
}

double arb_sequoia_best(const arb_sequoia *s, int m, int l)
{
    if (m < 1 || m > s->M || l < 1 || l > s->L)
        return -INFINITY;
    return s->best[BIDX(s, m, l)];
}

int arb_sequoia_best_b(const arb_sequoia *s, int m, int l)
{
    int bb = -1;
    double bv = -INFINITY;
    for (int b = 0; b <= s->K; b++)
        if (s->T[IDX(s, m, l, b)] > bv) {
            bv = s->T[IDX(s, m, l, b)];
            bb = b;
        }
    return bb;
}

typedef struct { int len; int16_t c[SQ_PATH_MAX]; } sq_path;
typedef struct { sq_path *out; int n, cap; int overflow; } sq_emit;

static void emit(const arb_sequoia *s, sq_emit *e, int m, int l, int b, const sq_path *path)
{
    if (path->len > 0) {
        if (e->n >= e->cap) {
            e->overflow = 1;
            return;
        }
        e->out[e->n++] = *path;
    }
    while (b >= 1) {
        int y = b == 1 ? 1 : s->arg[IDX(s, m, l, b)];
        int sub_m = b == 1 ? m - 1 : m - y;
        sq_path child = *path;
        ARB_ASSERT(child.len < SQ_PATH_MAX);
        child.c[child.len++] = (int16_t)(b - 1);
        emit(s, e, sub_m, l - 1, arb_sequoia_best_b(s, sub_m, l - 1), &child);
        m = y;
        b = b - 1;
    }
}

static int path_cmp(const void *x, const void *y)
{
    const sq_path *a = x, *b = y;
    if (a->len != b->len)
        return a->len - b->len;
    for (int i = 0; i < a->len; i++)
        if (a->c[i] != b->c[i])
            return a->c[i] - b->c[i];
    return 0;
}

int arb_sequoia_tree(const arb_sequoia *s, int m, int l, int32_t *parent, int16_t *rank, int cap)
{
    if (m < 1 || m > s->M || l < 1 || l > s->L || cap < m || s->best[BIDX(s, m, l)] == -INFINITY)
        return -1;
    sq_emit e = {.out = malloc((size_t)m * sizeof(sq_path)), .n = 0, .cap = m - 1};
    if (!e.out)
        return -1;
    sq_path root = {.len = 0};
    emit(s, &e, m, l, arb_sequoia_best_b(s, m, l), &root);
    int n = e.n;
    qsort(e.out, (size_t)n, sizeof *e.out, path_cmp);
    parent[0] = -1;
    rank[0] = -1;
    for (int i = 0; i < n; i++) {
        int par = 0;
        for (int j = i - 1; j >= 0 && e.out[i].len > 1; j--)
            if (e.out[j].len == e.out[i].len - 1 &&
                !memcmp(e.out[j].c, e.out[i].c, (size_t)(e.out[j].len) * sizeof(int16_t))) {
                par = j + 1;
                break;
            }
        parent[i + 1] = par;
        rank[i + 1] = e.out[i].c[e.out[i].len - 1];
    }
    int ov = e.overflow;
    free(e.out);
    return ov ? -1 : n + 1;
}

int arb_sequoia_fill(arb_tree *t, int32_t a_prev, const int32_t *parent, const int16_t *rank, int n,
                     arb_succ_fn succ, void *ud)
{
    enum { FILL_MAX = 1024 };
    ARB_ASSERT(n <= FILL_MAX);
    int32_t map[FILL_MAX], ids[16];
    float sc[16];
    int n0 = t->n, cached = -1, ns = 0;
    map[0] = 0;
    for (int i = 1; i < n; i++) {
        int p = map[parent[i]];
        map[i] = -1;
        if (p < 0)
            continue;
        if (p != cached) { /* canonical order keeps siblings adjacent: one lookup per parent */
            ns = succ(ud, p == 0 ? a_prev : t->tok[t->parent[p]], t->tok[p], ids, sc);
            cached = p;
        }
        if (rank[i] < ns)
            map[i] = arb_tree_add(t, p, ids[rank[i]], ARB_SRC_TR, rank[i], sc[rank[i]]);
    }
    return t->n - n0;
}

/* ---- the topology plug-in (topology.h): the DP tree for the method's acceptance vector
   (sequoia_p, at most topk ranks), built once at create and filled from the drafter's
   successor source every step ---- */
typedef struct sq_state {
    int32_t *parent; /* [budget] template, canonical order */
    int16_t *rank;
    int n;
} sq_state;

static void sq_destroy(void *st)
{
    sq_state *s = st;
    if (!s)
        return;
    free(s->parent);
    free(s->rank);
    free(s);
}

static int sq_create(const arb_method_spec *sp, void **out, arb_err *err)
{
    *out = NULL;
    double p[ARB_SEQUOIA_K_MAX];
    int K = 0;
    while (K < ARB_SEQUOIA_K_MAX && sp->sequoia_p[K] > 0.0 && K < sp->topk) {
        p[K] = sp->sequoia_p[K];
        K++;
    }
    if (K == 0)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: sequoia_p: empty acceptance vector", sp->id);
    sq_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "topology sequoia: out of memory");
    arb_sequoia *sq = NULL;
    int rc = arb_sequoia_new(p, K, sp->budget, sp->max_depth + 1, &sq, err);
    if (!rc) {
        s->parent = malloc((size_t)sp->budget * sizeof *s->parent);
        s->rank = malloc((size_t)sp->budget * sizeof *s->rank);
        s->n = s->parent && s->rank
                   ? arb_sequoia_tree(sq, sp->budget, sp->max_depth + 1, s->parent, s->rank, sp->budget)
                   : -1;
        if (s->n < 1)
            rc = ARB_ERR(err, ARB_E_INVAL, "method %s: sequoia: no tree for budget %d, depth %d", sp->id,
                         sp->budget, sp->max_depth);
    }
    arb_sequoia_free(sq);
    if (rc) {
        sq_destroy(s);
        return rc;
    }
    *out = s;
    return ARB_OK;
}

static void sq_build(void *st, const arb_topo_src *src, arb_tree *t, arb_step_record *rec)
{
    sq_state *s = st;
    (void)rec;
    arb_sequoia_fill(t, src->a_prev, s->parent, s->rank, s->n, src->succ, src->ud);
}

const arb_topology_i arb_topology_sequoia = {
    .name = "sequoia",
    .create = sq_create,
    .destroy = sq_destroy,
    .build = sq_build,
};
