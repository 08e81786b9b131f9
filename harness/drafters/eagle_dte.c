/* eagle_dte.c — the "eagle-dte" drafter: the trained EAGLE head (eagle_head.h; `arbor train
 * eagle`) as the draft model of the random (l, k, b) delayed-tree sampler
 * (docs/spec/drafting.md §11.1), for the lossless sampling verifiers (docs/sampling.md, "EAGLE
 * head as a sampling draft"). Preset `eagle-dte`, config configs/dte-eagle.json.
 *
 * The tree is the one delayed.c draws with a draft model: a trunk of l tokens, then k i.i.d.
 * branches of length b from its end, level by level, identical siblings merged, C(v) kept in
 * path order; every token is sampled from q_v = PROCESS(W_out f̂_v) (docs/spec/verification.md
 * §0.2: the same temperature / top-k / top-p transform as the target's p_v), and the exact
 * q_v rows are what the verifier receives (q_rows). Only the draft model differs.
 *
 * The head's key/value cache follows the committed sequence as the greedy `eagle` drafter's
 * does: both use eagle_follow.h (after prefill `hidden` gives the last prompt row, after each
 * step `hidden_path` the accepted path's rows and `verified` their tokens; propose catches up
 * and the last row's output is the anchor's f̂). A speculative step
 * accepts a path and then *samples* the extra token at its stop node (a bonus or a residual
 * draw), so the pending rows are the same as in greedy decoding: the target's features of the
 * accepted nodes, paired with the next committed token.
 *
 * Drafted node v (depth d, tree index v >= 1) is the row (f̂ of its parent, e(tok_v)) at
 * position n_stable - 1 + d, written to cache slot n_stable + v - 1 and attending to the
 * committed rows and to its ancestors' slots (tree attention); a level evaluates only the nodes
 * it added (their ancestors' keys are already in their slots), so a level costs k rows of the
 * head plus k rows of the output head, not the whole branch trie. Nothing drafted enters the
 * committed part of the cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"
#include "draft_model.h"
#include "eagle_follow.h"
#include "sample.h"
#include "verifiers/verifier.h"

typedef struct ed_state {
    arb_method_spec spec;
    int V, E;
    int n_nodes;           /* 1 + l + k b: the tree, anchor included */
    int depth;             /* l + b */
    int pend_max;          /* committed rows a step can add: the anchor + depth accepted tokens */
    int rows, vis_max;     /* rows of one head call (max(k, pend_max)); visible slots per row */
    arb_eagle_follow f;    /* the head (W_out: the target's own output head), its cache over the
                              committed rows [0, n_stable) then this step's tree slots, buffers */
    float *nout;           /* [n_nodes x E] f̂ of every tree node (row 0: the anchor) */
    float *logits;         /* [rows x V] */
    double *q;             /* [n_nodes x V] q_v of every internal node (q_rows) */
    int32_t *idx;          /* [V] PROCESS scratch */
    int *cur;              /* [k] the node each branch has reached */
    uint32_t prompt_id;
    int step;
} ed_state;

static void ed_destroy(void *st)
{
    ed_state *e = st;
    if (!e)
        return;
    arb_eagle_follow_release(&e->f);
    free(e->nout), free(e->logits), free(e->q), free(e->idx), free(e->cur);
    free(e);
}

static int ed_create(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    *st = NULL;
    ed_state *e = calloc(1, sizeof *e);
    if (!e)
        return ARB_ERR(err, ARB_E_NOMEM, "drafter eagle-dte: out of memory");
    e->spec = *s;
    e->V = n_vocab;
    e->n_nodes = 1 + s->dte_l + s->dte_k * s->dte_b;
    e->depth = s->dte_l + s->dte_b;
    e->pend_max = e->depth + 2;
    e->rows = s->dte_k > e->pend_max ? s->dte_k : e->pend_max;
    e->vis_max = e->pend_max > e->depth ? e->pend_max : e->depth;
    *st = e;
    return ARB_OK;
}

/* Load the head for the target (its sha256 must match), the f32 output matrix and embedding, and
   size every buffer for the method's tree. */
static int ed_bind(void *st, arb_ctx *target, arb_err *err)
{
    ed_state *e = st;
    int rc = arb_eagle_follow_bind(&e->f, target, e->spec.heads, "drafter eagle-dte", e->pend_max, e->rows, e->vis_max,
                                   err);
    if (rc)
        return rc;
    if (e->f.h->c.V != e->V)
        return ARB_ERR(err, ARB_E_INVAL, "drafter eagle-dte: the head's vocabulary %d is not the target's %d",
                       e->f.h->c.V, e->V);
    const size_t E = (size_t)e->f.h->c.E, V = (size_t)e->V, R = (size_t)e->rows;
    e->E = (int)E;
    if (!(e->nout = malloc((size_t)e->n_nodes * E * sizeof *e->nout)) || !(e->logits = malloc(R * V * sizeof *e->logits)) ||
        !(e->q = malloc((size_t)e->n_nodes * V * sizeof *e->q)) || !(e->idx = malloc(V * sizeof *e->idx)) ||
        !(e->cur = malloc((size_t)e->spec.dte_k * sizeof *e->cur)))
        return ARB_ERR(err, ARB_E_NOMEM, "drafter eagle-dte: out of memory");
    return ARB_OK;
}

/* The cache holds every committed row of a generation plus one tree's slots. */
static int ed_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    ed_state *e = st;
    (void)new_run;
    return arb_eagle_follow_begin(&e->f, n_tokens + e->pend_max + e->n_nodes, "drafter eagle-dte", err);
}

static void ed_append(void *st, const int32_t *tok, int n) { (void)st, (void)tok, (void)n; }

static void ed_set_step(void *st, uint32_t prompt_id, int step)
{
    ed_state *e = st;
    e->prompt_id = prompt_id;
    e->step = step;
}

static void ed_hidden(void *st, const float *h) { arb_eagle_follow_hidden(&((ed_state *)st)->f, h); }

static void ed_hidden_path(void *st, const float *rows, const int32_t *path, int n_path, int n_embd)
{
    arb_eagle_follow_hidden_path(&((ed_state *)st)->f, rows, path, n_path, n_embd);
}

static void ed_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    (void)rec;
    arb_eagle_follow_verified(&((ed_state *)st)->f, t, path, n_path);
}

/* Evaluate the tree nodes [first, t->n) (parents already evaluated): their f̂ into nout, their
   processed laws into q. */
static void eval_nodes(ed_state *e, const arb_tree *t, int first, const arb_sampling *sm)
{
    arb_eagle_follow *f = &e->f;
    const int n = t->n - first, E = e->E;
    const size_t V = (size_t)e->V;
    ARB_ASSERT(n >= 1 && n <= e->rows);
    for (int i = 0; i < n; i++) {
        int v = first + i, d = t->depth[v];
        ARB_ASSERT(d >= 1 && d <= e->vis_max);
        memcpy(f->fin + (size_t)i * E, e->nout + (size_t)t->parent[v] * E, (size_t)E * sizeof *f->fin);
        f->tok[i] = t->tok[v];
        f->pos[i] = f->n_stable - 1 + d;
        f->slot[i] = f->n_stable + v - 1;
        /* its drafted ancestors and itself, root side first: the keys in the order an AR
           evaluation of the path sees them, so q_v is bit for bit the head's law on that path */
        f->nvis[i] = d;
        for (int a = v; a > 0; a = t->parent[a])
            f->vis[(size_t)i * f->vis_max + --d] = f->n_stable + a - 1;
    }
    arb_eagle_rows(f->h, f->emb, f->kv, n, f->fin, f->tok, f->pos, f->slot, f->n_stable, f->vis, f->nvis, f->vis_max,
                   f->out, f->ws);
    memcpy(e->nout + (size_t)first * E, f->out, (size_t)n * E * sizeof *e->nout);
    arb_lm_head_logits(&f->lm, e->V, E, f->out, n, e->logits);
    for (int i = 0; i < n; i++)
        arb_sample_process(e->logits + (size_t)i * V, e->V, sm, e->q + (size_t)(first + i) * V, e->idx);
}

/* Child x of v, merged with an identical sibling; C(v) gets the path's draw. -1: tree full. */
static int add_child(arb_tree *t, int v, int32_t x, const double *qv)
{
    int c = arb_tree_find_child(t, v, x);
    if (c < 0)
        c = arb_tree_add(t, v, x, ARB_SRC_HEAD, -1, (float)qv[x]);
    if (c >= 0 && arb_tree_push_seq(t, v, c))
        return -1;
    return c;
}

/* Level j < l: the trunk (one draw); level j >= l: one draw per branch, in branch order (the
   order delayed.c draws in). Every level but the last is then evaluated for its laws. */
static bool draw_tree(ed_state *e, arb_tree *t, arb_rng *r, const arb_sampling *sm)
{
    const int l = e->spec.dte_l, k = e->spec.dte_k;
    const size_t V = (size_t)e->V;
    int trunk = 0;
    for (int lev = 0; lev < e->depth; lev++) {
        int first = t->n;
        if (lev == l)
            for (int j = 0; j < k; j++)
                e->cur[j] = trunk;
        for (int j = 0; j < (lev < l ? 1 : k); j++) {
            int v = lev < l ? trunk : e->cur[j];
            int32_t x = arb_sample_w(r, e->q + (size_t)v * V, e->V);
            int c = x < 0 ? -1 : add_child(t, v, x, e->q + (size_t)v * V);
            if (c < 0)
                return false;
            if (lev < l)
                trunk = c;
            else
                e->cur[j] = c;
        }
        if (lev + 1 < e->depth) /* leaves need no law */
            eval_nodes(e, t, first, sm);
    }
    return true;
}

static void ed_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    ed_state *e = st;
    rec->mode = ARB_MODE_AR;
    if (!arb_eagle_follow_ready(&e->f, e->n_nodes))
        return; /* no feature yet, or the cache is full: an AR step */
    memcpy(e->nout, arb_eagle_follow_catch_up(&e->f, S[n_S - 1]), (size_t)e->E * sizeof *e->nout);
    arb_sampling sm = {.temperature = e->spec.temperature, .top_k = e->spec.top_k, .top_p = e->spec.top_p};
    arb_lm_head_logits(&e->f.lm, e->V, e->E, e->nout, 1, e->logits);
    arb_sample_process(e->logits, e->V, &sm, e->q, e->idx);
    arb_rng r;
    arb_rng_init(&r, e->spec.seed, e->prompt_id, (uint32_t)e->step, ARB_STREAM_DRAFT);
    if (draw_tree(e, t, &r, &sm))
        rec->mode = ARB_MODE_TREE;
    else
        arb_tree_reset(t, S[n_S - 1]); /* cannot happen with a tree sized by max_nodes: an AR step */
}

static const double *ed_q_rows(void *st) { return ((ed_state *)st)->q; }

static size_t ed_bytes(const void *st)
{
    const ed_state *e = st;
    return e->f.h ? arb_eagle_follow_bytes(&e->f) + (size_t)e->n_nodes * e->V * sizeof(double) : 0;
}

/* The `draft` drafter's defaults: i.i.d. (2, 0, 4) verified by Traversal. */
static void ed_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "EAGLE-DTE");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    snprintf(s->verifier, sizeof s->verifier, "traversal");
}

static int ed_max_nodes(const arb_method_spec *s) { return 1 + s->dte_l + s->dte_k * s->dte_b; }

/* As the `draft` drafter: the sampling verifier must be valid on the regime of the trees drafted
   (docs/spec/verification.md §0.6); no per-step selector (the NDE selector reads a draft context's
   laws, which this draft does not have). */
static int ed_validate(const arb_method_spec *s, arb_err *err)
{
    if (s->selector[0] && strcmp(s->selector, "fixed"))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: selector: drafter eagle-dte takes only 'fixed' (paths, trunk, "
                       "branch_len), not '%s'", s->id, s->selector);
    if (!s->heads[0])
        return ARB_ERR(err, ARB_E_INVAL, "method %s: heads: empty (default, or an EAGLE head GGUF from arbor train eagle)",
                       s->id);
    return arb_draft_shape_validate(s, false, err);
}

static const char *ed_heads_kind(const arb_method_spec *s)
{
    (void)s;
    return "eagle";
}

const arb_drafter_i arb_drafter_eagle_dte = {
    .name = "eagle-dte", .create = ed_create, .destroy = ed_destroy, .begin = ed_begin, .append = ed_append,
    .propose = ed_propose, .verified = ed_verified, .bytes = ed_bytes, .bind = ed_bind, .set_step = ed_set_step,
    .q_rows = ed_q_rows, .hidden = ed_hidden, .hidden_path = ed_hidden_path, .defaults = ed_defaults,
    .max_nodes = ed_max_nodes, .validate = ed_validate, .heads_kind = ed_heads_kind,
};
