/* delayed.c — random (l, k, b) delayed trees drafted with a draft model (docs/spec/drafting.md §11.1):
 * a trunk of l tokens, then k i.i.d. branches of length b from its end, merged into a trie
 * with C(v) in path order and q_v kept at every internal node. A single chain is (1, 0, L)
 * and i.i.d. multi-path drafting is (k, 0, L). The draft model's state is in
 * draft_model_int.h; its lifecycle and the "draft" drafter are in draft_model.c. */
#include "draft_model_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int arb_draft_shape_nodes(arb_draft_shape s) { return 1 + s.l + s.k * s.b; }

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int arb_draft_model_catch_up(arb_draft_model *d, const int32_t *S, int from, int to, arb_draft_stats *st,
                             arb_err *err)
{
    while (from < to) {
        int n = to - from < d->n_batch ? to - from : d->n_batch;
        for (int i = 0; i < n; i++)
            d->bpar[i] = i - 1;
        int rc = arb_eval(d->ctx, S + from, d->bpar, n, d->logits, NULL, err);
        if (!rc)
            rc = arb_commit(d->ctx, d->chain, n, err);
        if (rc)
            return rc;
        /* the anchor's row and the one before it (the previous anchor's when only one is new) */
        const size_t V = (size_t)d->V;
        if (n > 1)
            memcpy(d->lg_prev, d->logits + (size_t)(n - 2) * V, sizeof(float) * V);
        else
            memcpy(d->lg_prev, from > 0 ? d->lg_root : d->logits, sizeof(float) * V);
        memcpy(d->lg_root, d->logits + (size_t)(n - 1) * V, sizeof(float) * V);
        if (n > 1) /* keep the last row first (eagle2.c reads it there) */
            memmove(d->logits, d->logits + (size_t)(n - 1) * V, sizeof(float) * V);
        st->n_evals++;
        st->n_tokens += n;
        from += n;
    }
    return ARB_OK;
}

int arb_draft_model_prepare(arb_draft_model *d, const int32_t *S, int n_S, arb_draft_stats *st, arb_err *err)
{
    arb_draft_stats dummy = {0};
    if (!st)
        st = &dummy;
    if (n_S < 1)
        return ARB_ERR(err, ARB_E_INVAL, "draft model: empty sequence");
    if (n_S <= d->n_done || d->n_done > arb_ctx_n_past(d->ctx)) /* new prompt (or anchor reused) */
        arb_draft_model_reset(d);
    int rc = arb_draft_model_catch_up(d, S, d->n_done, n_S, st, err); /* the anchor is always evaluated here */
    if (rc)
        return rc;
    d->n_done = n_S;
    d->prepared = n_S;
    return ARB_OK;
}

void arb_draft_model_laws(arb_draft_model *d, const arb_sampling *smp, double *q_prev, double *q_root)
{
    arb_sample_process(d->lg_prev, d->V, smp, q_prev, d->idx);
    arb_sample_process(d->lg_root, d->V, smp, q_root, d->idx);
}

/* A branch level's laws (rows of one eval, independent) on the draft context's kernel
   threads, each row with its own top-k/top-p scratch: the same laws whatever the thread
   count. */
typedef struct level_job {
    const float *logits; /* the level's first row */
    double *q;
    int32_t *idx;        /* a scratch row per level node */
    int V, row0;         /* row0: the level's first node */
    const arb_sampling *smp;
} level_job;

static void level_row(void *ud, int i, int n)
{
    const level_job *j = ud;
    const size_t V = (size_t)j->V;
    arb_sample_process(j->logits + (size_t)i * V, j->V, j->smp, j->q + (size_t)(j->row0 + i) * V, j->idx + (size_t)i * V);
    (void)n;
}

static int add_child(arb_tree *t, int v, int32_t x, const double *qv)
{
    int c = arb_tree_find_child(t, v, x);
    if (c < 0)
        c = arb_tree_add(t, v, x, ARB_SRC_DRAFT, -1, (float)qv[x]);
    if (c >= 0 && arb_tree_push_seq(t, v, c))
        return -1;
    return c;
}

int arb_draft_model_propose(arb_draft_model *d, const int32_t *S, int n_S, arb_draft_shape sh,
                            const arb_sampling *smp, arb_rng *rng, arb_tree *t, double *q,
                            arb_draft_stats *st, arb_err *err)
{
    double t0 = now_us();
    arb_draft_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    if (sh.k < 1 || sh.l < 0 || sh.b < 0 || arb_draft_shape_nodes(sh) > t->cap || arb_draft_shape_nodes(sh) > d->n_max ||
        sh.k * sh.b > d->n_batch)
        return ARB_ERR(err, ARB_E_INVAL, "draft model: shape (l=%d, k=%d, b=%d) exceeds the tree capacity %d",
                       sh.l, sh.k, sh.b, t->cap);
    if (n_S < 1)
        return ARB_ERR(err, ARB_E_INVAL, "draft model: empty sequence");
    int rc = d->prepared == n_S ? ARB_OK : arb_draft_model_prepare(d, S, n_S, st, err);
    if (rc)
        return rc;
    const size_t V = (size_t)d->V;
    arb_sample_process(d->lg_root, d->V, smp, q, d->idx);
    memcpy(d->q_root, q, sizeof(double) * V);
    /* trunk: l tokens, committed tentatively so that each next law is one eval away */
    int cur = 0, rc2 = ARB_OK;
    for (int i = 0; i < sh.l; i++) {
        int32_t x = arb_sample_w(rng, q + (size_t)cur * V, d->V);
        int c = add_child(t, cur, x, q + (size_t)cur * V);
        if (c < 0)
            return ARB_ERR(err, ARB_E_RANGE, "draft model: tree full");
        cur = c;
        if (i + 1 == sh.l && sh.b == 0)
            break; /* last trunk node is a leaf: no law needed */
        d->bpar[0] = -1;
        if ((rc2 = arb_eval(d->ctx, &x, d->bpar, 1, d->logits, NULL, err)) ||
            (rc2 = arb_commit(d->ctx, d->chain, 1, err)))
            break;
        st->n_evals++;
        st->n_tokens++;
        arb_sample_process(d->logits, d->V, smp, q + (size_t)cur * V, d->idx);
    }
    /* branches: k i.i.d. paths of length b from the trunk end, level by level */
    int e = cur;
    for (int j = 0; j < sh.k && !rc2; j++)
        d->pos[j] = e;
    for (int lev = 0; lev < sh.b && !rc2; lev++) {
        int first_new = t->n;
        for (int j = 0; j < sh.k; j++) {
            const double *qv = q + (size_t)d->pos[j] * V;
            int32_t x = arb_sample_w(rng, qv, d->V);
            int c = add_child(t, d->pos[j], x, qv);
            if (c < 0)
                return ARB_ERR(err, ARB_E_RANGE, "draft model: tree full");
            d->pos[j] = c;
        }
        if (lev + 1 == sh.b)
            break; /* leaves: no law needed */
        int nb = t->n - (e + 1); /* the branch trie so far, in index order */
        for (int i = 0; i < nb; i++) {
            int v = e + 1 + i;
            d->btok[i] = t->tok[v];
            d->bpar[i] = t->parent[v] == e ? -1 : t->parent[v] - (e + 1);
        }
        if ((rc2 = arb_eval(d->ctx, d->btok, d->bpar, nb, d->logits, NULL, err)))
            break;
        st->n_evals++;
        st->n_tokens += nb;
        level_job lj = {.logits = d->logits + (size_t)(first_new - (e + 1)) * V, .q = q, .idx = d->idx, .V = d->V,
                        .row0 = first_new, .smp = smp};
        arb_ctx_parallel_for(d->ctx, t->n - first_new, level_row, &lj);
    }
    /* drop the tentative trunk rows: the draft context holds exactly S again */
    int rc3 = arb_ctx_truncate(d->ctx, n_S);
    st->us = now_us() - t0;
    if (rc2)
        return rc2;
    return rc3 ? ARB_ERR(err, rc3, "draft model: cannot truncate the draft context") : ARB_OK;
}
