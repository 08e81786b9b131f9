/* eagle2.c — the "eagle2-draft" drafter: EAGLE-2's dynamic tree (harness/dyntree.h,
 * docs/spec/drafting.md §8) fed by a draft language model (draft_model.h: the target cut after
 * draft_layers blocks, the target itself, or any GGUF with the target's vocabulary).
 *
 * One step: catch the draft context up to the committed sequence (its last row is the anchor's
 * law), then one draft arb_eval per tree level over the frontier. The engine keeps one scratch
 * tree on top of the committed prefix, not a growing one, so each level's batch is the
 * frontier together with its ancestors (at most topk per level), with parent indices into the
 * batch; a node's draft logits are the same as in a persistent tree cache because the CPU
 * kernels are batch-invariant. The draft's top-k at T = 1 (ids and log softmax, engine.h) is
 * what the tree ranks on, as EAGLE's logsoftmax of the head output.
 *
 * Trees are deterministic (regime DET): greedy at T = 0 (exact), NSS (lossless) or typical
 * acceptance (approximate) at T > 0. Nodes carry ARB_SRC_DRAFT, so the per-step rows count
 * them as acc_draft / prop_draft. Everything is sized at bind; a step allocates nothing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft_model_int.h"
#include "drafter.h"
#include "dyntree.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */
#include "verifiers/verifier.h"

typedef struct e2_state {
    arb_method_spec spec;
    arb_dyntree_opts o;
    arb_draft_model *dm;   /* created by bind (needs the target) */
    arb_dyntree *dt;
    int max_cands;
    int32_t *bidx;         /* max_cands: batch row of a candidate in this level's eval, -1 if absent */
    int32_t *marked;       /* max_cands: candidates in the batch, ascending */
    float *sc;             /* topk: top-k probabilities of one row */
    arb_draft_stats ds;    /* draft evals of the current step */
} e2_state;

/* dyntree source: the draft model's top-k below each frontier node */
static int e2_expand(void *ud, const arb_dyntree_cand *cand, const int32_t *front, int n, int k, int32_t *ids,
                     float *logp, arb_err *err)
{
    e2_state *e = ud;
    arb_draft_model *d = e->dm;
    const size_t V = (size_t)d->V;
    if (n == 1 && front[0] < 0) { /* the anchor: its row is the last catch-up row */
        arb_topk_softmax(d->logits, d->V, k, ids, e->sc);
        for (int j = 0; j < k; j++)
            logp[j] = logf(e->sc[j]);
        return ARB_OK;
    }
    /* the batch: the frontier and every ancestor, in candidate (creation) order, so a parent
       precedes its children; depth-1 candidates hang below the anchor (committed: parent -1) */
    int hi = 0, nb = 0;
    for (int i = 0; i < n; i++)
        hi = front[i] > hi ? front[i] : hi;
    for (int c = 0; c <= hi; c++)
        e->bidx[c] = -1;
    for (int i = 0; i < n; i++)
        for (int c = front[i]; c >= 0 && e->bidx[c] != 0; c = cand[c].parent)
            e->bidx[c] = 0; /* marked; the row is assigned below */
    for (int c = 0; c <= hi; c++)
        if (e->bidx[c] == 0)
            e->marked[nb++] = c;
    if (nb > d->n_batch)
        return ARB_ERR(err, ARB_E_RANGE, "eagle2-draft: level batch of %d nodes > draft batch %d", nb, d->n_batch);
    for (int r = 0; r < nb; r++) {
        int c = e->marked[r];
        e->bidx[c] = r;
        d->btok[r] = cand[c].tok;
        d->bpar[r] = cand[c].parent < 0 ? -1 : e->bidx[cand[c].parent];
    }
    int rc = arb_eval(d->ctx, d->btok, d->bpar, nb, d->logits, NULL, err);
    if (rc)
        return rc;
    e->ds.n_evals++;
    e->ds.n_tokens += nb;
    for (int i = 0; i < n; i++) {
        arb_topk_softmax(d->logits + (size_t)e->bidx[front[i]] * V, d->V, k, ids + i * k, e->sc);
        for (int j = 0; j < k; j++)
            logp[i * k + j] = logf(e->sc[j]);
    }
    return ARB_OK;
}

static void e2_destroy(void *st)
{
    e2_state *e = st;
    if (!e)
        return;
    arb_draft_model_free(e->dm);
    arb_dyntree_free(e->dt);
    free(e->bidx);
    free(e->marked);
    free(e->sc);
    free(e);
}

static int e2_create(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    *st = NULL;
    e2_state *e = calloc(1, sizeof *e);
    if (!e)
        return ARB_ERR(err, ARB_E_NOMEM, "drafter eagle2-draft: out of memory");
    e->spec = *s;
    int rc = arb_dyntree_for_method(s->id, s->max_depth, s->topk, s->budget, &e->o, &e->dt, err);
    if (!rc) {
        e->max_cands = arb_dyntree_max_cands(&e->o);
        e->bidx = malloc(sizeof(int32_t) * (size_t)e->max_cands);
        e->marked = malloc(sizeof(int32_t) * (size_t)e->max_cands);
        e->sc = malloc(sizeof(float) * (size_t)e->o.topk);
        if (!e->bidx || !e->marked || !e->sc)
            rc = ARB_ERR(err, ARB_E_NOMEM, "drafter eagle2-draft: out of memory");
    }
    if (rc) {
        e2_destroy(e);
        return rc;
    }
    *st = e;
    return ARB_OK;
}

static int e2_bind(void *st, arb_ctx *target, arb_err *err)
{
    e2_state *e = st;
    arb_draft_model_free(e->dm);
    e->dm = NULL;
    /* a level's batch holds at most topk nodes per depth above it */
    int nb = e->o.topk * e->o.depth;
    return arb_draft_model_from_spec(target, &e->spec, nb > e->o.total ? nb : e->o.total, &e->dm, err);
}

static int e2_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    e2_state *e = st;
    if (!e->dm)
        return ARB_ERR(err, ARB_E_INVAL, "drafter eagle2-draft: not bound to a target context");
    arb_draft_model_reset(e->dm);
    return ARB_OK;
}

static void e2_append(void *st, const int32_t *tok, int n) { (void)st; (void)tok; (void)n; }

static int e2_draft(e2_state *e, const int32_t *S, int n_S, arb_tree *t, arb_err *err)
{
    arb_draft_model *d = e->dm;
    memset(&e->ds, 0, sizeof e->ds);
    if (n_S <= d->n_done || d->n_done > arb_ctx_n_past(d->ctx)) /* new prompt (or anchor reused) */
        arb_draft_model_reset(d);
    int rc = arb_draft_model_catch_up(d, S, d->n_done, n_S, &e->ds, err);
    if (rc)
        return rc;
    d->n_done = n_S;
    arb_dyntree_source src = {.expand = e2_expand, .ud = e};
    return arb_dyntree_build(e->dt, &src, t, ARB_SRC_DRAFT, NULL, err);
}

static void e2_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    e2_state *e = st;
    arb_err err = {0};
    rec->mode = ARB_MODE_TREE;
    if (e2_draft(e, S, n_S, t, &err)) {
        arb_tree_reset(t, S[n_S - 1]); /* drafting failed (draft context full): an AR step */
        arb_draft_model_reset(e->dm);
        rec->mode = ARB_MODE_AR;
    }
}

/* DET trees carry no draft law: the valid sampling verifiers (nss, typical) do not read q. */
static const double *e2_q_rows(void *st) { (void)st; return NULL; }

static size_t e2_bytes(const void *st)
{
    const e2_state *e = st;
    return (sizeof(arb_dyntree_cand) + 3 * sizeof(int32_t)) * (size_t)e->max_cands;
}

/* EAGLE-2 reference: total_token 60, depth 5 (+1), top_k 10. */
static void e2_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "EAGLE2");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    snprintf(s->verifier, sizeof s->verifier, "nss"); /* T > 0; the greedy walk at T = 0 */
}

/* Top-k trees: regime DET (docs/spec/verification.md §0.6); max_nodes NULL: the budget. */
static int e2_validate(const arb_method_spec *s, arb_err *err)
{
    char names[256];
    if (s->temperature > 0 && !strcmp(s->verifier, "greedy"))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: greedy needs temperature 0 (%s)", s->id,
                       arb_verifier_sampling_names(ARB_REGIME_DET, names, sizeof names));
    arb_err ve = {0};
    if (strcmp(s->verifier, "greedy") && arb_verifier_check(s->verifier, ARB_REGIME_DET, &ve))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: %s", s->id, ve.msg);
    if (s->budget < 2)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: budget: %d leaves no draft node (>= 2)", s->id, s->budget);
    return ARB_OK;
}

const arb_drafter_i arb_drafter_eagle2 = {
    .name = "eagle2-draft", .create = e2_create, .destroy = e2_destroy, .begin = e2_begin, .append = e2_append,
    .propose = e2_propose, .bytes = e2_bytes, .bind = e2_bind, .q_rows = e2_q_rows, .validate = e2_validate,
    .defaults = e2_defaults,
};
