/* draft_model.c — the draft model's lifecycle (a separate GGUF or a self-draft) and the
 * "draft" drafter of the method table (see draft_model.h). The (l, k, b) tree sampler that
 * every shape goes through (single chain, i.i.d. paths, delayed trees) is in delayed.c. */
#include "draft_model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genutil.h"
#include "nde_features.h"
#include "selectors/selector.h"
#include "verifiers/verifier.h"

arb_draft_model_opts arb_draft_model_default_opts(void)
{
    return (arb_draft_model_opts){.path = NULL, .self_layers = 24, .n_ctx = 0, .n_threads = 0};
}

void arb_draft_model_free(arb_draft_model *d)
{
    if (!d)
        return;
    arb_ctx_free(d->ctx);
    arb_model_free(d->own);
    free(d->logits); free(d->btok); free(d->bpar); free(d->chain); free(d->idx); free(d->pos);
    free(d->q_root); free(d->lg_root); free(d->lg_prev);
    free(d);
}

int arb_draft_model_new(arb_model *target, const arb_draft_model_opts *o, int n_nodes_max,
                        arb_draft_model **out, arb_err *err)
{
    *out = NULL;
    arb_draft_model_opts dflt = arb_draft_model_default_opts();
    if (!o)
        o = &dflt;
    if (n_nodes_max < 1)
        return ARB_ERR(err, ARB_E_INVAL, "draft model: n_nodes_max %d", n_nodes_max);
    arb_draft_model *d = calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "draft model: out of memory");
    arb_model_info ti, di;
    arb_model_get_info(target, &ti);
    arb_model *m = target;
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = o->n_ctx;
    int rc = ARB_OK;
    if (o->path && o->path[0]) {
        arb_load_opts lo = arb_gen_load_opts(); /* the target's CPU kernel switches */
        lo.n_threads = o->n_threads;
        if ((rc = arb_model_load(o->path, &lo, &d->own, err)))
            goto fail;
        arb_model_get_info(d->own, &di);
        if (di.n_vocab != ti.n_vocab) {
            rc = ARB_ERR(err, ARB_E_INVAL, "%s: draft vocabulary %d != target vocabulary %d", o->path,
                         di.n_vocab, ti.n_vocab);
            goto fail;
        }
        m = d->own;
    } else {
        if (o->self_layers < 1 || o->self_layers > ti.n_layer) {
            rc = ARB_ERR(err, ARB_E_INVAL, "draft model: self_layers %d outside 1..%d", o->self_layers, ti.n_layer);
            goto fail;
        }
        co.n_layer = o->self_layers; /* same weights, first L blocks, then the output head */
    }
    d->n_batch = n_nodes_max > 64 ? n_nodes_max : 64;
    co.n_batch_max = d->n_batch;
    if ((rc = arb_ctx_new(m, &co, &d->ctx, err)))
        goto fail;
    d->V = ti.n_vocab;
    d->n_max = n_nodes_max;
    size_t V = (size_t)d->V, nb = (size_t)d->n_batch;
    d->logits = malloc(sizeof(float) * nb * V);
    d->btok = malloc(sizeof(int32_t) * nb);
    d->bpar = malloc(sizeof(int32_t) * nb);
    d->chain = malloc(sizeof(int32_t) * nb);
    d->idx = malloc(sizeof(int32_t) * V * (size_t)n_nodes_max); /* a scratch row per node of a level */
    d->pos = malloc(sizeof(int32_t) * (size_t)n_nodes_max);
    d->q_root = malloc(sizeof(double) * V);
    d->lg_root = malloc(sizeof(float) * V);
    d->lg_prev = malloc(sizeof(float) * V);
    d->prepared = -1;
    if (!d->logits || !d->btok || !d->bpar || !d->chain || !d->idx || !d->pos || !d->q_root || !d->lg_root ||
        !d->lg_prev) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "draft model: out of memory (%zu x %zu logits)", nb, V);
        goto fail;
    }
    for (int i = 0; i < d->n_batch; i++)
        d->chain[i] = i;
    *out = d;
    return ARB_OK;
fail:
    arb_draft_model_free(d);
    return rc;
}

void arb_draft_model_reset(arb_draft_model *d)
{
    arb_ctx_truncate(d->ctx, 0);
    d->n_done = 0;
    d->prepared = -1;
}

const double *arb_draft_model_q_root(const arb_draft_model *d) { return d->q_root; }
int arb_draft_model_n_vocab(const arb_draft_model *d) { return d->V; }

/* ---------------- the "draft" drafter (drafter.h vtable) ---------------- */
#include "drafter.h"

typedef struct dm_state {
    arb_method_spec spec;
    int V, n_nodes;
    arb_draft_model *dm;  /* created by bind (needs the target) */
    double *q;            /* n_nodes x V */
    uint32_t prompt_id;
    int step;
    const arb_selector_i *sel; /* the per-step shape (selector.h); fixed: the spec's */
    void *sel_st;
    double *p_prev, *q_prev, *q_root; /* [V] each, only for a selector that reads the laws */
    int32_t *pidx;        /* [V] PROCESS scratch for p_prev */
    bool have_p_prev;     /* stop_logits has run since begin */
} dm_state;

static int dm_create(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    *st = NULL;
    dm_state *d = calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "drafter draft: out of memory");
    d->spec = *s;
    d->V = n_vocab;
    d->n_nodes = arb_method_max_nodes(s);
    d->q = malloc(sizeof(double) * (size_t)d->n_nodes * (size_t)n_vocab);
    if (!d->q) {
        int n = d->n_nodes;
        free(d);
        return ARB_ERR(err, ARB_E_NOMEM, "drafter draft: cannot allocate %d x %d draft laws", n, n_vocab);
    }
    *st = d;
    d->sel = arb_selector_find(s->selector[0] ? s->selector : "fixed");
    if (!d->sel) {
        char names[128];
        return ARB_ERR(err, ARB_E_INVAL, "drafter draft: selector: unknown '%s' (%s)", s->selector,
                       arb_selector_names(names, sizeof names));
    }
    arb_selector_opts so = {.shape = {s->dte_k, s->dte_l, s->dte_b}, .file = s->selector_file, .V = n_vocab,
                            .n_nodes_max = d->n_nodes};
    int rc = d->sel->create(&so, &d->sel_st, err);
    if (!rc && d->sel->needs_laws) {
        const size_t V = (size_t)n_vocab;
        if (!(d->p_prev = malloc(sizeof(double) * V)) || !(d->q_prev = malloc(sizeof(double) * V)) ||
            !(d->q_root = malloc(sizeof(double) * V)) || !(d->pidx = malloc(sizeof(int32_t) * V)))
            rc = ARB_ERR(err, ARB_E_NOMEM, "drafter draft: out of memory");
    }
    return rc; /* on error the caller destroys *st */
}

static void dm_destroy(void *st)
{
    dm_state *d = st;
    if (!d)
        return;
    arb_draft_model_free(d->dm);
    if (d->sel)
        d->sel->destroy(d->sel_st);
    free(d->q), free(d->p_prev), free(d->q_prev), free(d->q_root), free(d->pidx);
    free(d);
}

int arb_draft_model_from_spec(arb_ctx *target, const arb_method_spec *s, int n_nodes_max, arb_draft_model **out,
                              arb_err *err)
{
    arb_draft_model_opts o = arb_draft_model_default_opts();
    const arb_model *tm = arb_ctx_model(target);
    o.path = !strcmp(s->draft_model, "self")     ? NULL
             : !strcmp(s->draft_model, "target") ? arb_model_path(tm) /* q = p control */
                                                 : s->draft_model;
    o.self_layers = s->draft_layers;
    /* the target model is read-only after load; a self-draft context only reads its weights */
    return arb_draft_model_new((arb_model *)tm, &o, n_nodes_max, out, err);
}

static int dm_bind(void *st, arb_ctx *target, arb_err *err)
{
    dm_state *d = st;
    arb_draft_model_free(d->dm);
    d->dm = NULL;
    return arb_draft_model_from_spec(target, &d->spec, d->n_nodes, &d->dm, err);
}

static int dm_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    dm_state *d = st;
    if (!d->dm)
        return ARB_ERR(err, ARB_E_INVAL, "drafter draft: not bound to a target context");
    arb_draft_model_reset(d->dm);
    d->have_p_prev = false;
    return ARB_OK;
}

static void dm_append(void *st, const int32_t *tok, int n) { (void)st; (void)tok; (void)n; }

static void dm_set_step(void *st, uint32_t prompt_id, int step)
{
    dm_state *d = st;
    d->prompt_id = prompt_id;
    d->step = step;
}

static void dm_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    dm_state *d = st;
    arb_rng r;
    arb_rng_init(&r, d->spec.seed, d->prompt_id, (uint32_t)d->step, ARB_STREAM_DRAFT);
    arb_sampling sm = {.temperature = d->spec.temperature, .top_k = d->spec.top_k, .top_p = d->spec.top_p};
    arb_draft_shape sh = {.k = d->spec.dte_k, .l = d->spec.dte_l, .b = d->spec.dte_b};
    arb_draft_stats ds;
    arb_err err = {0};
    rec->mode = ARB_MODE_TREE;
    int rc = ARB_OK;
    if (d->sel->needs_laws) { /* the root's laws first: a function of the committed prefix only */
        if (!(rc = arb_draft_model_prepare(d->dm, S, n_S, &ds, &err))) {
            arb_draft_model_laws(d->dm, &sm, d->q_prev, d->q_root);
            arb_selector_in in = {.p_prev = d->have_p_prev ? d->p_prev : d->q_prev, .q_prev = d->q_prev,
                                  .q_root = d->q_root, .V = d->V, .n_ctx = n_S, .smp = &sm};
            sh = d->sel->select(d->sel_st, &in);
        }
    } else {
        sh = d->sel->select(d->sel_st, NULL);
    }
    if (d->sel->needs_laws) /* the chosen action in the step log (its index in A) */
        rec->topology_id = arb_nde_action_index(sh);
    if (rc || arb_draft_model_propose(d->dm, S, n_S, sh, &sm, &r, t, d->q, &ds, &err)) {
        arb_tree_reset(t, S[n_S - 1]); /* drafting failed (context full): an AR step */
        rec->mode = ARB_MODE_AR;
    }
}

/* The stop node's logits: the target law at the position before the next anchor (p_prev). */
static void dm_stop_logits(void *st, const float *row, int n_vocab)
{
    dm_state *d = st;
    if (!d->p_prev || n_vocab != d->V)
        return;
    arb_sampling sm = {.temperature = d->spec.temperature, .top_k = d->spec.top_k, .top_p = d->spec.top_p};
    arb_sample_process(row, n_vocab, &sm, d->p_prev, d->pidx);
    d->have_p_prev = true;
}

static const double *dm_q_rows(void *st) { return ((dm_state *)st)->q; }

static size_t dm_bytes(const void *st)
{
    const dm_state *d = st;
    return sizeof(double) * (size_t)d->n_nodes * (size_t)d->V;
}

/* Draft model, i.i.d. paths by default (DTE §4 baseline). */
static void dm_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "Draft");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    snprintf(s->verifier, sizeof s->verifier, "traversal");
}

/* The trunk and k branches; nde: its largest action as well. */
static int dm_max_nodes(const arb_method_spec *s)
{
    int n = 1 + s->dte_l + s->dte_k * s->dte_b;
    return !strcmp(s->selector, "nde") && n < ARB_NDE_NODES_MAX ? ARB_NDE_NODES_MAX : n;
}

/* Sampling verifiers: the validity matrix (docs/spec/verification.md §0.6) for the regime of the
   trees this method drafts. */
static int dm_validate(const arb_method_spec *s, arb_err *err)
{
    char names[256];
    if (!arb_selector_find(s->selector))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: selector: unknown '%s' (%s)", s->id, s->selector,
                       arb_selector_names(names, sizeof names));
    const bool nde = !strcmp(s->selector, "nde"); /* any action may be a delayed tree (the verifier must take them) */
    if (nde && !s->selector_file[0])
        return ARB_ERR(err, ARB_E_INVAL, "method %s: selector_file: selector nde needs the trained "
                       "selector (arbor nde train --out FILE)", s->id);
    return arb_draft_shape_validate(s, nde, err);
}

int arb_draft_shape_validate(const arb_method_spec *s, bool as_delayed, arb_err *err)
{
    char names[256];
    const arb_regime rg = as_delayed || s->dte_l > 0 ? ARB_REGIME_DELAYED
                          : s->dte_k > 1             ? ARB_REGIME_IID
                                                     : ARB_REGIME_SINGLE;
    if (s->temperature > 0 && !strcmp(s->verifier, "greedy"))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: greedy needs temperature 0 (%s)", s->id,
                       arb_verifier_sampling_names(rg, names, sizeof names));
    arb_err ve = {0};
    if (strcmp(s->verifier, "greedy") && arb_verifier_check(s->verifier, rg, &ve))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: %s", s->id, ve.msg);
    if (s->dte_k * s->dte_b + s->dte_l < 1)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: branch_len: the draft tree is empty", s->id);
    return ARB_OK;
}

const arb_drafter_i arb_drafter_draft = {
    .name = "draft", .create = dm_create, .destroy = dm_destroy, .begin = dm_begin, .append = dm_append,
    .propose = dm_propose, .bytes = dm_bytes, .bind = dm_bind, .q_rows = dm_q_rows, .set_step = dm_set_step,
    .stop_logits = dm_stop_logits, .max_nodes = dm_max_nodes, .validate = dm_validate,
    .defaults = dm_defaults,
};
