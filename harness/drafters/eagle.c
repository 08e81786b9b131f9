/* eagle.c — the "eagle" drafter: EAGLE-2's dynamic tree (dyntree.h) grown by the trained EAGLE
 * head (eagle_head.h; `arbor train eagle`), preset `eagle2-head` (docs/eagle2.md, docs/heads.md).
 *
 * The head's cache over the committed sequence is eagle_follow.h's (shared with eagle-dte):
 * propose catches it up, and the anchor's f̂ gives the first level. Each further level evaluates
 * the frontier in one call: candidate c's row is (f̂ of its parent, e(tok_c)) at position
 * n_stable - 1 + depth, its key/value in slot n_stable + c, attending to the committed rows and
 * to its ancestors' slots (tree attention); nothing drafted enters the committed part.
 * Verification is the decoder's greedy walk (exact: the tree only changes what is proposed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"
#include "dyntree.h"
#include "eagle.h"
#include "eagle_follow.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */

typedef struct eg_state {
    arb_method_spec spec;
    arb_dyntree_opts o;
    arb_dyntree *dt;
    int max_cands, pend_max;
    arb_eagle_follow f;    /* the head, its cache over the committed rows and one call's buffers */
    float *root;           /* [E] the anchor's f̂ */
    float *cand_out;       /* [max_cands x E] f̂ of every expanded candidate */
    float *logits;         /* [rows x V] */
    float *sc;             /* [rows x topk] */
} eg_state;

static void eg_destroy(void *st)
{
    eg_state *e = st;
    if (!e)
        return;
    arb_dyntree_free(e->dt);
    arb_eagle_follow_release(&e->f);
    free(e->root);
    free(e->cand_out);
    free(e->logits);
    free(e->sc);
    free(e);
}

static int eg_create(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    *st = NULL;
    eg_state *e = calloc(1, sizeof *e);
    if (!e)
        return ARB_ERR(err, ARB_E_NOMEM, "drafter eagle: out of memory");
    e->spec = *s;
    int rc = arb_dyntree_for_method(s->id, s->max_depth, s->topk, s->budget, &e->o, &e->dt, err);
    if (rc) {
        eg_destroy(e);
        return rc;
    }
    e->max_cands = arb_dyntree_max_cands(&e->o);
    e->pend_max = e->o.depth + 2; /* an accepted path: the anchor + at most depth drafts */
    *st = e;
    return ARB_OK;
}

/* Load the head for the target (its sha256 must match), the f32 output matrix and embedding. */
static int eg_bind(void *st, arb_ctx *target, arb_err *err)
{
    eg_state *e = st;
    const int k = e->o.topk, rows = k > e->pend_max ? k : e->pend_max;
    int rc = arb_eagle_follow_bind(&e->f, target, e->spec.heads, "drafter eagle", e->pend_max, rows,
                                   e->pend_max > e->o.depth ? e->pend_max : e->o.depth, err);
    if (rc)
        return rc;
    const int E = e->f.h->c.E, V = e->f.h->c.V;
    if (!(e->root = malloc((size_t)E * sizeof(float))) ||
        !(e->cand_out = malloc((size_t)e->max_cands * E * sizeof(float))) ||
        !(e->logits = malloc((size_t)rows * V * sizeof(float))) || !(e->sc = malloc((size_t)rows * k * sizeof(float))))
        return ARB_ERR(err, ARB_E_NOMEM, "drafter eagle: out of memory");
    return ARB_OK;
}

void arb_eagle_drafter_use_f32_head(void *st, bool on)
{
    eg_state *e = st;
    e->f.lm.f32 = on;
}

/* the k best tokens of each of n f̂ rows, ids/probs [n x k] (e->logits: the f32 path's scratch) */
static void head_topk(eg_state *e, const float *x, int n, int k, int32_t *ids, float *probs)
{
    arb_lm_head_topk(&e->f.lm, e->f.h->c.V, e->f.h->c.E, x, n, k, ids, probs, e->logits);
}

/* The cache holds every committed row of a generation plus one tree's slots. */
static int eg_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    eg_state *e = st;
    (void)new_run;
    return arb_eagle_follow_begin(&e->f, n_tokens + e->pend_max + e->max_cands, "drafter eagle", err);
}

static void eg_append(void *st, const int32_t *tok, int n) { (void)st, (void)tok, (void)n; }

static void eg_hidden(void *st, const float *h) { arb_eagle_follow_hidden(&((eg_state *)st)->f, h); }

static void eg_hidden_path(void *st, const float *rows, const int32_t *path, int n_path, int n_embd)
{
    arb_eagle_follow_hidden_path(&((eg_state *)st)->f, rows, path, n_path, n_embd);
}

static void eg_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    (void)rec;
    arb_eagle_follow_verified(&((eg_state *)st)->f, t, path, n_path);
}

/* dyntree source: the head's top-k below each frontier node */
static int eg_expand(void *ud, const arb_dyntree_cand *cand, const int32_t *front, int n, int k, int32_t *ids,
                     float *logp, arb_err *err)
{
    eg_state *e = ud;
    arb_eagle_follow *f = &e->f;
    const int E = f->h->c.E;
    if (n == 1 && front[0] < 0) { /* the anchor: f̂ from the catch-up */
        head_topk(e, e->root, 1, k, ids, e->sc);
        for (int j = 0; j < k; j++)
            logp[j] = logf(e->sc[j]);
        return ARB_OK;
    }
    ARB_ASSERT(n <= f->rows);
    for (int i = 0; i < n; i++) {
        int c = front[i], p = cand[c].parent, d = 0;
        memcpy(f->fin + (size_t)i * E, p < 0 ? e->root : e->cand_out + (size_t)p * E, (size_t)E * sizeof(float));
        f->tok[i] = cand[c].tok;
        f->pos[i] = f->n_stable - 1 + cand[c].depth;
        f->slot[i] = f->n_stable + c;
        for (int a = c; a >= 0 && d < f->vis_max; a = cand[a].parent) /* itself and its ancestors */
            f->vis[(size_t)i * f->vis_max + d++] = f->n_stable + a;
        f->nvis[i] = d;
    }
    arb_eagle_rows(f->h, f->emb, f->kv, n, f->fin, f->tok, f->pos, f->slot, f->n_stable, f->vis, f->nvis, f->vis_max,
                   f->out, f->ws);
    head_topk(e, f->out, n, k, ids, e->sc);
    for (int i = 0; i < n; i++) {
        memcpy(e->cand_out + (size_t)front[i] * E, f->out + (size_t)i * E, (size_t)E * sizeof(float));
        for (int j = 0; j < k; j++)
            logp[(size_t)i * k + j] = logf(e->sc[(size_t)i * k + j]);
    }
    return ARB_OK;
}

static void eg_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    eg_state *e = st;
    rec->mode = ARB_MODE_AR;
    if (!arb_eagle_follow_ready(&e->f, e->max_cands))
        return; /* no feature yet, or the cache is full: an AR step */
    const float *root = arb_eagle_follow_catch_up(&e->f, S[n_S - 1]);
    memcpy(e->root, root, (size_t)e->f.h->c.E * sizeof *e->root);
    rec->mode = ARB_MODE_TREE;
    arb_dyntree_source src = {.expand = eg_expand, .ud = e};
    arb_err err = {0};
    if (arb_dyntree_build(e->dt, &src, t, ARB_SRC_HEAD, NULL, &err)) /* the source never fails */
        rec->mode = ARB_MODE_AR;
}

static size_t eg_bytes(const void *st)
{
    const eg_state *e = st;
    return arb_eagle_follow_bytes(&e->f);
}

/* EAGLE-2 on the EAGLE head: the reference's 60 / 5 (+1) / 10; max_nodes NULL: the budget. */
static void eg_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "EAGLE2-head");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
}

static const char *eg_heads_kind(const arb_method_spec *s)
{
    (void)s;
    return "eagle";
}

const arb_drafter_i arb_drafter_eagle = {
    .name = "eagle", .create = eg_create, .destroy = eg_destroy, .begin = eg_begin, .append = eg_append,
    .propose = eg_propose, .verified = eg_verified, .bytes = eg_bytes, .bind = eg_bind, .hidden = eg_hidden,
    .hidden_path = eg_hidden_path, .defaults = eg_defaults, .heads_kind = eg_heads_kind,
};
