/* eagle_follow.c — the EAGLE head's cache over the committed sequence (eagle_follow.h). */
#include "eagle_follow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heads_file.h"
#include "medusa.h"
#include "sha256.h"

int arb_eagle_follow_bind(arb_eagle_follow *f, arb_ctx *target, const char *heads, const char *who, int pend_max,
                          int rows, int vis_max, arb_err *err)
{
    ARB_ASSERT(rows >= pend_max && vis_max >= pend_max);
    const arb_model *m = arb_ctx_model(target);
    char sha[65], path[4096];
    int rc = arb_sha256_file(arb_model_path(m), sha, err);
    if (rc)
        return rc;
    if ((rc = arb_heads_path(heads, "eagle", arb_model_path(m), sha, path, sizeof path, err)))
        return rc;
    arb_heads_meta meta;
    if ((rc = arb_eagle_load(path, sha, &f->h, &meta, err))) {
        if (rc == ARB_E_IO || rc == ARB_E_NOTFOUND) {
            char pre[256];
            snprintf(pre, sizeof pre, "%s: heads: no usable EAGLE head (train one for this model: `arbor distill` then "
                     "`arbor train eagle`, which writes the default path, or scripts/train_heads.sh; docs/heads.md)", who);
            arb_err_prefix(err, pre);
        }
        return rc;
    }
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    if (f->h->c.E != mi.n_embd || f->h->c.V != mi.n_vocab)
        return ARB_ERR(err, ARB_E_INVAL, "%s: %s is a head for n_embd %d, n_vocab %d (model: %d, %d)", who, path,
                       f->h->c.E, f->h->c.V, mi.n_embd, mi.n_vocab);
    if ((rc = arb_heads_lm_weights(m, &f->w_lm, &f->emb, err)) || (rc = arb_lm_head_bind(&f->lm, target, f->w_lm, err)))
        return rc;
    const size_t E = (size_t)mi.n_embd, R = (size_t)rows;
    f->pend_max = pend_max, f->rows = rows, f->vis_max = vis_max;
    if (!(f->pf = malloc((size_t)pend_max * E * sizeof *f->pf)) || !(f->ptok = malloc((size_t)pend_max * sizeof *f->ptok)) ||
        !(f->fin = malloc(R * E * sizeof *f->fin)) || !(f->out = malloc(R * E * sizeof *f->out)) ||
        !(f->tok = malloc(R * sizeof *f->tok)) || !(f->pos = malloc(R * sizeof *f->pos)) ||
        !(f->slot = malloc(R * sizeof *f->slot)) || !(f->nvis = malloc(R * sizeof *f->nvis)) ||
        !(f->vis = malloc(R * (size_t)vis_max * sizeof *f->vis)))
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", who);
    return ARB_OK;
}

void arb_eagle_follow_release(arb_eagle_follow *f)
{
    arb_eagle_free(f->h);
    if (f->emb != f->w_lm)
        free(f->emb);
    free(f->w_lm);
    arb_eagle_kv_free(f->kv);
    arb_eagle_ws_free(f->ws);
    free(f->pf), free(f->ptok), free(f->fin), free(f->out), free(f->tok);
    free(f->pos), free(f->slot), free(f->nvis), free(f->vis);
    memset(f, 0, sizeof *f);
}

int arb_eagle_follow_begin(arb_eagle_follow *f, int need, const char *who, arb_err *err)
{
    if (!f->h)
        return ARB_ERR(err, ARB_E_INVAL, "%s: not bound to a target context", who);
    if (need > f->cap) {
        arb_eagle_kv_free(f->kv), f->kv = NULL;
        arb_eagle_ws_free(f->ws), f->ws = NULL;
        int rc = arb_eagle_kv_new(f->h, need, &f->kv, err);
        if (!rc)
            rc = arb_eagle_ws_new(f->h, f->rows, need, &f->ws, err);
        if (!rc) /* the layer's products on the target's kernel threads (between its evals) */
            arb_eagle_ws_set_pool(f->ws, f->lm.ctx);
        if (rc) {
            f->cap = 0;
            return rc;
        }
        f->cap = need;
    }
    f->n_stable = 0;
    f->n_pend = 0;
    f->path_seen = false;
    return ARB_OK;
}

/* After prefill: the last prompt row (its token, the anchor, comes with catch_up). After a step
   the accepted path's rows came through hidden_path already, and this is its last row again. */
void arb_eagle_follow_hidden(arb_eagle_follow *f, const float *h)
{
    if (f->path_seen) {
        f->path_seen = false;
        return;
    }
    memcpy(f->pf, h, (size_t)f->h->c.E * sizeof *f->pf);
    f->n_pend = 1;
}

void arb_eagle_follow_hidden_path(arb_eagle_follow *f, const float *rows, const int32_t *path, int n_path,
                                  int n_embd)
{
    int n = n_path < f->pend_max ? n_path : f->pend_max;
    for (int i = 0; i < n; i++)
        memcpy(f->pf + (size_t)i * n_embd, rows + (size_t)path[i] * n_embd, (size_t)n_embd * sizeof *f->pf);
    f->n_pend = n;
    f->path_seen = true;
}

/* The accepted tokens a1..am pair with the rows of their parents (the token after the stop
   node, the last row's, is the next anchor). */
void arb_eagle_follow_verified(arb_eagle_follow *f, const arb_tree *t, const int32_t *path, int n_path)
{
    for (int i = 1; i < n_path && i - 1 < f->pend_max; i++)
        f->ptok[i - 1] = t->tok[path[i]];
}

bool arb_eagle_follow_ready(const arb_eagle_follow *f, int tree_slots)
{
    return f->n_pend >= 1 && f->n_stable + f->n_pend + tree_slots <= f->cap;
}

const float *arb_eagle_follow_catch_up(arb_eagle_follow *f, int32_t anchor)
{
    const int n = f->n_pend;
    f->ptok[n - 1] = anchor;
    for (int i = 0; i < n; i++) {
        f->pos[i] = f->slot[i] = f->n_stable + i;
        f->nvis[i] = i + 1;
        for (int j = 0; j <= i; j++)
            f->vis[(size_t)i * f->vis_max + j] = f->n_stable + j;
    }
    arb_eagle_rows(f->h, f->emb, f->kv, n, f->pf, f->ptok, f->pos, f->slot, f->n_stable, f->vis, f->nvis, f->vis_max,
                   f->out, f->ws);
    f->n_stable += n;
    f->n_pend = 0;
    return f->out + (size_t)(n - 1) * f->h->c.E;
}

size_t arb_eagle_follow_bytes(const arb_eagle_follow *f)
{
    if (!f->h)
        return 0;
    size_t lm = (size_t)f->h->c.V * f->h->c.E * sizeof(float);
    size_t kvb = (size_t)f->cap * f->h->c.KVH * f->h->c.hd * 2 * sizeof(float);
    return f->h->n_params * sizeof(float) + lm + (f->emb != f->w_lm ? lm : 0) + kvb;
}
