/* eagle.c — the "eagle" drafter: EAGLE-2's dynamic tree (dyntree.h) grown by the trained EAGLE
 * head (eagle_head.h; `arbor train eagle`), preset `eagle2-head` (docs/eagle2.md, docs/heads.md).
 *
 * The head keeps its own key/value cache over the committed sequence, starting at the last prompt
 * position (the trainer's sequences start there too): row i is the input (f_i, e(x_{i+1})) with
 * f_i the target's final-norm hidden state at position i. The decoder hands over the hidden rows
 * of every accepted path node (drafter.h's `hidden_path`; after prefill, `hidden` gives the last
 * prompt row), so after each step the rows (f(anchor), e(a1)), .., (f(a_m), e(bonus)) are
 * pending; propose appends them to the cache in one call (causal among themselves), and the last
 * row's output f̂ is the anchor's: its logits give the first level. Each further level evaluates
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
#include "eagle_head.h"
#include "heads.h"
#include "heads_file.h"
#include "medusa.h"
#include "sha256.h"
#include "topk.h"

typedef struct eg_state {
    arb_method_spec spec;
    arb_dyntree_opts o;
    arb_dyntree *dt;
    int max_cands, pend_max;
    arb_eagle *h;          /* loaded by bind */
    float *w_lm, *emb;     /* [V x E] f32 (the same array when tied) */
    arb_lm_head lm;        /* scores f̂: the target's own output head (quantized, as stored) on a CPU */
    arb_eagle_kv *kv;      /* committed rows [0, n_stable), then the tree's slots */
    arb_eagle_ws *ws;
    int cap;               /* kv rows (and ws keys) */
    int n_stable;
    int n_pend;            /* pending committed rows (features in pf, tokens in ptok) */
    float *pf;             /* [pend_max x E] */
    int32_t *ptok;         /* [pend_max] (the last one is the anchor, known at propose) */
    bool path_seen;        /* this step's hidden_path came; the following `hidden` repeats it */
    float *root;           /* [E] the anchor's f̂ */
    float *cand_out;       /* [max_cands x E] f̂ of every expanded candidate */
    float *fin, *out;      /* [rows x E] one call's inputs and outputs */
    float *logits;         /* [rows x V] */
    float *sc;             /* [topk] */
    int32_t *tok;          /* [rows] */
    int *pos, *slot, *nvis, *vis; /* [rows], [rows], [rows], [rows x vis_max] */
    int rows, vis_max;
} eg_state;

static void eg_destroy(void *st)
{
    eg_state *e = st;
    if (!e)
        return;
    arb_dyntree_free(e->dt);
    arb_eagle_free(e->h);
    if (e->emb != e->w_lm)
        free(e->emb);
    free(e->w_lm);
    arb_eagle_kv_free(e->kv);
    arb_eagle_ws_free(e->ws);
    free(e->pf);
    free(e->ptok);
    free(e->root);
    free(e->cand_out);
    free(e->fin);
    free(e->out);
    free(e->logits);
    free(e->sc);
    free(e->tok);
    free(e->pos);
    free(e->slot);
    free(e->nvis);
    free(e->vis);
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
    const arb_model *m = arb_ctx_model(target);
    char sha[65], path[4096];
    int rc = arb_sha256_file(arb_model_path(m), sha, err);
    if (rc)
        return rc;
    if (!strcmp(e->spec.heads, "default")) {
        if ((rc = arb_medusa_default_path("eagle", arb_model_path(m), sha, path, sizeof path, err)))
            return rc;
    } else {
        snprintf(path, sizeof path, "%s", e->spec.heads);
    }
    arb_heads_meta meta;
    if ((rc = arb_eagle_load(path, sha, &e->h, &meta, err))) {
        if (rc == ARB_E_IO || rc == ARB_E_NOTFOUND)
            arb_err_prefix(err, "drafter eagle: head file (train one with `arbor train eagle`)");
        return rc;
    }
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    if (e->h->c.E != mi.n_embd || e->h->c.V != mi.n_vocab)
        return ARB_ERR(err, ARB_E_INVAL, "drafter eagle: %s is a head for n_embd %d, n_vocab %d (model: %d, %d)", path,
                       e->h->c.E, e->h->c.V, mi.n_embd, mi.n_vocab);
    if ((rc = arb_heads_lm_weights(m, &e->w_lm, &e->emb, err)) || (rc = arb_lm_head_bind(&e->lm, target, e->w_lm, err)))
        return rc;
    const int E = mi.n_embd, V = mi.n_vocab, k = e->o.topk;
    e->rows = k > e->pend_max ? k : e->pend_max;
    e->vis_max = e->pend_max > e->o.depth ? e->pend_max : e->o.depth;
    if (!(e->pf = malloc((size_t)e->pend_max * E * sizeof *e->pf)) ||
        !(e->ptok = malloc((size_t)e->pend_max * sizeof *e->ptok)) || !(e->root = malloc((size_t)E * sizeof(float))) ||
        !(e->cand_out = malloc((size_t)e->max_cands * E * sizeof(float))) ||
        !(e->fin = malloc((size_t)e->rows * E * sizeof(float))) ||
        !(e->out = malloc((size_t)e->rows * E * sizeof(float))) ||
        !(e->logits = malloc((size_t)e->rows * V * sizeof(float))) || !(e->sc = malloc((size_t)k * sizeof(float))) ||
        !(e->tok = malloc((size_t)e->rows * sizeof(int32_t))) || !(e->pos = malloc((size_t)e->rows * sizeof(int))) ||
        !(e->slot = malloc((size_t)e->rows * sizeof(int))) || !(e->nvis = malloc((size_t)e->rows * sizeof(int))) ||
        !(e->vis = malloc((size_t)e->rows * e->vis_max * sizeof(int))))
        return ARB_ERR(err, ARB_E_NOMEM, "drafter eagle: out of memory");
    return ARB_OK;
}

void arb_eagle_drafter_use_f32_head(void *st, bool on)
{
    eg_state *e = st;
    e->lm.f32 = on;
}

/* logits [n x V] of n f̂ rows */
static void head_logits(eg_state *e, const float *x, int n, float *logits)
{
    arb_lm_head_logits(&e->lm, e->h->c.V, e->h->c.E, x, n, logits);
}

/* The cache holds every committed row of a generation plus one tree's slots. */
static int eg_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    eg_state *e = st;
    if (!e->h)
        return ARB_ERR(err, ARB_E_INVAL, "drafter eagle: not bound to a target context");
    int need = n_tokens + e->pend_max + e->max_cands;
    if (need > e->cap) {
        arb_eagle_kv_free(e->kv), e->kv = NULL;
        arb_eagle_ws_free(e->ws), e->ws = NULL;
        int rc = arb_eagle_kv_new(e->h, need, &e->kv, err);
        if (!rc)
            rc = arb_eagle_ws_new(e->h, e->rows, need, &e->ws, err);
        if (rc) {
            e->cap = 0;
            return rc;
        }
        e->cap = need;
    }
    e->n_stable = 0;
    e->n_pend = 0;
    e->path_seen = false;
    return ARB_OK;
}

static void eg_append(void *st, const int32_t *tok, int n) { (void)st, (void)tok, (void)n; }

/* After prefill: the last prompt row (its token, the anchor, comes with propose). After a step the
   accepted path's rows came through hidden_path already, and this is its last row again. */
static void eg_hidden(void *st, const float *h)
{
    eg_state *e = st;
    if (e->path_seen) {
        e->path_seen = false;
        return;
    }
    memcpy(e->pf, h, (size_t)e->h->c.E * sizeof *e->pf);
    e->n_pend = 1;
}

static void eg_hidden_path(void *st, const float *rows, const int32_t *path, int n_path, int n_embd)
{
    eg_state *e = st;
    int n = n_path < e->pend_max ? n_path : e->pend_max;
    for (int i = 0; i < n; i++)
        memcpy(e->pf + (size_t)i * n_embd, rows + (size_t)path[i] * n_embd, (size_t)n_embd * sizeof *e->pf);
    e->n_pend = n;
    e->path_seen = true;
}

/* The accepted tokens a1..am pair with the rows of their parents (the bonus, the last row's
   token, comes with the next propose). */
static void eg_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    eg_state *e = st;
    for (int i = 1; i < n_path && i - 1 < e->pend_max; i++)
        e->ptok[i - 1] = t->tok[path[i]];
}

/* dyntree source: the head's top-k below each frontier node */
static int eg_expand(void *ud, const arb_dyntree_cand *cand, const int32_t *front, int n, int k, int32_t *ids,
                     float *logp, arb_err *err)
{
    eg_state *e = ud;
    const int E = e->h->c.E, V = e->h->c.V;
    if (n == 1 && front[0] < 0) { /* the anchor: f̂ from the catch-up */
        head_logits(e, e->root, 1, e->logits);
        arb_topk_softmax(e->logits, V, k, ids, e->sc);
        for (int j = 0; j < k; j++)
            logp[j] = logf(e->sc[j]);
        return ARB_OK;
    }
    ARB_ASSERT(n <= e->rows);
    for (int i = 0; i < n; i++) {
        int c = front[i], p = cand[c].parent, d = 0;
        memcpy(e->fin + (size_t)i * E, p < 0 ? e->root : e->cand_out + (size_t)p * E, (size_t)E * sizeof(float));
        e->tok[i] = cand[c].tok;
        e->pos[i] = e->n_stable - 1 + cand[c].depth;
        e->slot[i] = e->n_stable + c;
        for (int a = c; a >= 0 && d < e->vis_max; a = cand[a].parent) /* itself and its ancestors */
            e->vis[(size_t)i * e->vis_max + d++] = e->n_stable + a;
        e->nvis[i] = d;
    }
    arb_eagle_rows(e->h, e->emb, e->kv, n, e->fin, e->tok, e->pos, e->slot, e->n_stable, e->vis, e->nvis, e->vis_max,
                   e->out, e->ws);
    head_logits(e, e->out, n, e->logits);
    for (int i = 0; i < n; i++) {
        memcpy(e->cand_out + (size_t)front[i] * E, e->out + (size_t)i * E, (size_t)E * sizeof(float));
        arb_topk_softmax(e->logits + (size_t)i * V, V, k, ids + (size_t)i * k, e->sc);
        for (int j = 0; j < k; j++)
            logp[(size_t)i * k + j] = logf(e->sc[j]);
    }
    return ARB_OK;
}

static void eg_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    eg_state *e = st;
    rec->mode = ARB_MODE_AR;
    if (e->n_pend < 1 || e->n_stable + e->n_pend + e->max_cands > e->cap)
        return; /* no feature yet, or the cache is full: an AR step */
    /* catch-up: the pending committed rows, causal among themselves */
    const int n = e->n_pend, E = e->h->c.E;
    e->ptok[n - 1] = S[n_S - 1];
    for (int i = 0; i < n; i++) {
        e->pos[i] = e->slot[i] = e->n_stable + i;
        e->nvis[i] = i + 1;
        for (int j = 0; j <= i; j++)
            e->vis[(size_t)i * e->vis_max + j] = e->n_stable + j;
    }
    arb_eagle_rows(e->h, e->emb, e->kv, n, e->pf, e->ptok, e->pos, e->slot, e->n_stable, e->vis, e->nvis, e->vis_max,
                   e->out, e->ws);
    memcpy(e->root, e->out + (size_t)(n - 1) * E, (size_t)E * sizeof *e->root);
    e->n_stable += n;
    e->n_pend = 0;
    rec->mode = ARB_MODE_TREE;
    arb_dyntree_source src = {.expand = eg_expand, .ud = e};
    arb_err err = {0};
    if (arb_dyntree_build(e->dt, &src, t, ARB_SRC_HEAD, NULL, &err)) /* the source never fails */
        rec->mode = ARB_MODE_AR;
}

static size_t eg_bytes(const void *st)
{
    const eg_state *e = st;
    if (!e->h)
        return 0;
    size_t lm = (size_t)e->h->c.V * e->h->c.E * sizeof(float);
    size_t kvb = (size_t)e->cap * e->h->c.KVH * e->h->c.hd * 2 * sizeof(float);
    return e->h->n_params * sizeof(float) + lm + (e->emb != e->w_lm ? lm : 0) + kvb;
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
