/* dyntree.c — EAGLE-2's dynamic draft tree (see dyntree.h; docs/spec/drafting.md §8).
 *
 * Layout of one build, after SafeAILab/EAGLE `topK_genrate`:
 *   level 1   = expand(anchor): its k children, all of them the first frontier;
 *   level L+1 = expand(frontier of level L): k children per frontier node (k^2 candidates),
 *               the next frontier the k best of them by path value (ties: lower creation
 *               index; children are created frontier node by frontier node, the frontier in
 *               value order, as the reference lays out its k x k score matrix);
 *   tree      = the total - 1 best candidates of all levels (ties: lower creation index, i.e.
 *               shallower, then older), emitted in creation order so a parent precedes its
 *               children.
 * The running top-(total-1) list is kept while drafting, which gives the selection and the
 * early stop (a frontier whose best value cannot enter the list produces nothing that could).
 * Every list here is short (k <= 16, total <= 1024), so insertion beats sorting and needs no
 * memory beyond what create reserves.
 */
#include "dyntree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */

struct arb_dyntree {
    arb_dyntree_opts o;
    int max_cands;
    arb_dyntree_cand *cand; /* max_cands, creation order */
    int n_cand;
    int32_t *node_of;       /* max_cands: tree node of a candidate, -1 if not kept */
    int32_t *front;         /* topk: frontier (candidate indices), best first */
    int32_t *next;          /* topk: next frontier under construction */
    int32_t *ids;           /* topk * topk: the source's answers */
    float *logp;            /* topk * topk */
    int32_t *best;          /* total - 1: running selection, best first */
    int n_best;
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

arb_dyntree_opts arb_dyntree_default_opts(void)
{
    return (arb_dyntree_opts){.depth = 6, .topk = 10, .total = 60};
}

int arb_dyntree_opts_check(const arb_dyntree_opts *o, const char *who, arb_err *err)
{
    if (o->depth < 1 || o->depth > 62)
        return ARB_ERR(err, ARB_E_INVAL, "%s: max_depth: %d outside [1, 62] (EAGLE-2 tree depth)", who, o->depth);
    if (o->topk < 1 || o->topk > ARB_TOPK_K_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "%s: topk: %d outside [1, %d] (EAGLE-2 children per node)", who, o->topk,
                       ARB_TOPK_K_MAX);
    if (o->total < 2 || o->total > 1024)
        return ARB_ERR(err, ARB_E_INVAL, "%s: budget: %d outside [2, 1024] (EAGLE-2 tree nodes incl. the anchor)",
                       who, o->total);
    return ARB_OK;
}

int arb_dyntree_max_cands(const arb_dyntree_opts *o) { return o->topk + (o->depth - 1) * o->topk * o->topk; }

void arb_dyntree_free(arb_dyntree *dt)
{
    if (!dt)
        return;
    free(dt->cand);
    free(dt->node_of);
    free(dt->front);
    free(dt->next);
    free(dt->ids);
    free(dt->logp);
    free(dt->best);
    free(dt);
}

int arb_dyntree_for_method(const char *id, int depth, int topk, int total, arb_dyntree_opts *o,
                           arb_dyntree **out, arb_err *err)
{
    *o = (arb_dyntree_opts){.depth = depth, .topk = topk, .total = total};
    char who[96];
    snprintf(who, sizeof who, "method %s", id);
    int rc = arb_dyntree_opts_check(o, who, err);
    return rc ? rc : arb_dyntree_new(o, out, err);
}

int arb_dyntree_new(const arb_dyntree_opts *o, arb_dyntree **out, arb_err *err)
{
    *out = NULL;
    int rc = arb_dyntree_opts_check(o, "dyntree", err);
    if (rc)
        return rc;
    arb_dyntree *dt = calloc(1, sizeof *dt);
    if (!dt)
        return ARB_ERR(err, ARB_E_NOMEM, "dyntree: out of memory");
    dt->o = *o;
    dt->max_cands = arb_dyntree_max_cands(o);
    size_t mc = (size_t)dt->max_cands, k = (size_t)o->topk;
    dt->cand = malloc(mc * sizeof *dt->cand);
    dt->node_of = malloc(mc * sizeof *dt->node_of);
    dt->front = malloc(k * sizeof *dt->front);
    dt->next = malloc(k * sizeof *dt->next);
    dt->ids = malloc(k * k * sizeof *dt->ids);
    dt->logp = malloc(k * k * sizeof *dt->logp);
    dt->best = malloc((size_t)o->total * sizeof *dt->best);
    if (!dt->cand || !dt->node_of || !dt->front || !dt->next || !dt->ids || !dt->logp || !dt->best) {
        arb_dyntree_free(dt);
        return ARB_ERR(err, ARB_E_NOMEM, "dyntree: cannot allocate %d candidates", (int)mc);
    }
    *out = dt;
    return ARB_OK;
}

const arb_dyntree_cand *arb_dyntree_cands(const arb_dyntree *dt, int *n, const int32_t **node_of)
{
    *n = dt->n_cand;
    if (node_of)
        *node_of = dt->node_of;
    return dt->cand;
}

/* Insert candidate c into list[0..*n) (best first, capacity cap) if it ranks; candidates arrive
   in creation order, so a strict '>' keeps older equals ahead (the tie rule). */
static void rank_insert(const arb_dyntree_cand *cand, int32_t *list, int *n, int cap, int32_t c)
{
    float s = cand[c].score;
    if (*n == cap && !(s > cand[list[cap - 1]].score))
        return;
    int j = *n < cap ? (*n)++ : cap - 1;
    while (j > 0 && cand[list[j - 1]].score < s) {
        list[j] = list[j - 1];
        j--;
    }
    list[j] = c;
}

/* The source's answers for front[0..n) become candidates (children in front order, each
   node's list best first) and enter the running selection and the next frontier. */
static void add_children(arb_dyntree *dt, const int32_t *front, int n, int *n_next)
{
    const int k = dt->o.topk, m = dt->o.total - 1;
    for (int i = 0; i < n; i++) {
        int p = front[i];
        float base = p < 0 ? 0.0f : dt->cand[p].score;
        int16_t dep = (int16_t)(p < 0 ? 1 : dt->cand[p].depth + 1);
        for (int j = 0; j < k; j++) {
            int32_t x = dt->ids[i * k + j];
            float lp = dt->logp[i * k + j];
            if (x < 0 || isnan(lp) || dt->n_cand >= dt->max_cands)
                continue;
            int c = dt->n_cand++;
            /* base + lp <= base for lp <= 0 (rounding is monotone): values never rise on a path */
            dt->cand[c] = (arb_dyntree_cand){.tok = x, .parent = p, .depth = dep, .rank = (int16_t)j,
                                             .logp = lp > 0 ? 0.0f : lp, .score = base + (lp > 0 ? 0.0f : lp)};
            rank_insert(dt->cand, dt->best, &dt->n_best, m, c);
            rank_insert(dt->cand, dt->next, n_next, k, c);
        }
    }
}

int arb_dyntree_build(arb_dyntree *dt, const arb_dyntree_source *src, arb_tree *t, arb_src tag,
                      arb_dyntree_stats *st, arb_err *err)
{
    arb_dyntree_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    if (t->n != 1 || t->cap < dt->o.total)
        return ARB_ERR(err, ARB_E_INVAL, "dyntree: the tree must hold only its anchor and have room for %d nodes "
                       "(has %d of %d)", dt->o.total, t->n, t->cap);
    double t0 = now_us(), in_src = 0;
    const int k = dt->o.topk, m = dt->o.total - 1;
    dt->n_cand = 0;
    dt->n_best = 0;
    int n_front = 1;
    dt->front[0] = -1; /* the anchor */
    for (int level = 1; level <= dt->o.depth && n_front > 0; level++) {
        /* early stop: a child never scores above its parent and loses ties to older nodes */
        if (level > 1 && dt->n_best == m && !(dt->cand[dt->front[0]].score > dt->cand[dt->best[m - 1]].score))
            break;
        double s0 = now_us();
        int rc = src->expand(src->ud, dt->cand, dt->front, n_front, k, dt->ids, dt->logp, err);
        in_src += now_us() - s0;
        st->n_expand++;
        if (rc)
            return rc;
        int n_next = 0;
        add_children(dt, dt->front, n_front, &n_next);
        memcpy(dt->front, dt->next, (size_t)n_next * sizeof *dt->front);
        n_front = n_next;
    }
    /* emit in creation order: insertion sort of the kept indices */
    int32_t *sel = dt->best;
    for (int i = 1; i < dt->n_best; i++) {
        int32_t v = sel[i];
        int j = i;
        for (; j > 0 && sel[j - 1] > v; j--)
            sel[j] = sel[j - 1];
        sel[j] = v;
    }
    for (int c = 0; c < dt->n_cand; c++)
        dt->node_of[c] = -1;
    for (int i = 0; i < dt->n_best; i++) {
        const arb_dyntree_cand *c = &dt->cand[sel[i]];
        int pn = c->parent < 0 ? 0 : dt->node_of[c->parent];
        ARB_ASSERT(pn >= 0); /* closed under parents (see the header) */
        int v = arb_tree_add(t, pn, c->tok, tag, c->rank, expf(c->logp));
        ARB_ASSERT(v >= 0);
        dt->node_of[sel[i]] = v;
        st->min_score = i == 0 || c->score < st->min_score ? c->score : st->min_score;
    }
    st->n_cands = dt->n_cand;
    st->n_selected = dt->n_best;
    st->select_us = now_us() - t0 - in_src;
    return ARB_OK;
}
