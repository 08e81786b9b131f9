/* entmtp_rollout.c — score_all and canonical self-rollouts on the model (see entmtp_rollout.h). */
#include "entmtp_rollout.h"

#include <stdlib.h>
#include <string.h>

#include "heads.h"
#include "heads_file.h"
#include "sha256.h"

#define PREFILL_CHUNK 64

struct arb_rollout {
    arb_ctx *ctx;
    const arb_model *model;
    int E, V;
    arb_heads *h;
    float *w_lm, *emb;   /* [V x E] f32; emb == w_lm when tied */
    arb_lm_head lm;      /* scores the heads as the hydra drafter does (the engine's head on a CPU) */
    arb_heads_ws *ws;
    float *x;            /* [d_in max] head input */
    float *hid;          /* [E] hidden state of the last committed node's producer */
    float *hrows;        /* [max(ARB_ETREE_MAX, PREFILL_CHUNK) x E] hidden rows of an eval */
    int32_t *y;          /* [same] argmax per row */
    int32_t tok[ARB_ETREE_MAX], par[ARB_ETREE_MAX], path[ARB_ETREE_MAX + 1];
    int32_t chain[PREFILL_CHUNK];
};

void arb_rollout_free(arb_rollout *r)
{
    if (!r)
        return;
    arb_heads_free(r->h);
    if (r->emb != r->w_lm)
        free(r->emb);
    free(r->w_lm);
    arb_heads_ws_free(r->ws);
    free(r->x);
    free(r->hid);
    free(r->hrows);
    free(r->y);
    free(r);
}

int arb_rollout_n_heads(const arb_rollout *r) { return r->h->n_heads; }

int arb_rollout_new(arb_ctx *ctx, const char *heads_path, arb_rollout **out, arb_err *err)
{
    *out = NULL;
    arb_rollout *r = calloc(1, sizeof *r);
    if (!r)
        return ARB_ERR(err, ARB_E_NOMEM, "rollout: out of memory");
    r->ctx = ctx;
    r->model = arb_ctx_model(ctx);
    arb_model_info mi;
    arb_model_get_info(r->model, &mi);
    r->E = mi.n_embd, r->V = mi.n_vocab;
    char sha[65];
    arb_heads_meta meta;
    int rc = arb_sha256_file(arb_model_path(r->model), sha, err);
    if (!rc && (rc = arb_heads_load(heads_path, sha, &r->h, &meta, err)))
        arb_err_prefix(err, "entmtp: heads %s", heads_path);
    if (!rc && (r->h->kind != ARB_HEADS_HYDRA || r->h->n_embd != r->E || r->h->n_vocab != r->V))
        rc = ARB_ERR(err, ARB_E_INVAL, "entmtp: %s: needs Hydra heads for n_embd %d, n_vocab %d (has %s, %d, %d)",
                     heads_path, r->E, r->V, arb_heads_kind_name(r->h->kind), r->h->n_embd, r->h->n_vocab);
    if (!rc)
        rc = arb_heads_lm_weights(r->model, &r->w_lm, &r->emb, err);
    if (!rc)
        rc = arb_lm_head_bind(&r->lm, ctx, r->w_lm, err);
    if (!rc)
        rc = arb_heads_ws_new(r->h, 1, &r->ws, err);
    size_t rows = ARB_ETREE_MAX > PREFILL_CHUNK ? ARB_ETREE_MAX : PREFILL_CHUNK;
    if (!rc) {
        r->x = malloc((size_t)r->h->d_in[r->h->n_heads - 1] * sizeof *r->x);
        r->hid = malloc((size_t)r->E * sizeof *r->hid);
        r->hrows = malloc(rows * (size_t)r->E * sizeof *r->hrows);
        r->y = malloc(rows * sizeof *r->y);
        if (!r->x || !r->hid || !r->hrows || !r->y)
            rc = ARB_ERR(err, ARB_E_NOMEM, "rollout: out of memory");
    }
    for (int i = 0; i < PREFILL_CHUNK; i++)
        r->chain[i] = i;
    if (rc) {
        arb_rollout_free(r);
        return rc;
    }
    *out = r;
    return ARB_OK;
}

/* Hydra's proposal for tree J (§9.5): the children of node u are the top-c_u tokens of head
   depth(u) on [h, e(anchor), e(tokens on u's path)]; tokens of the children are ranks 0..c_u-1. */
static void propose(arb_rollout *r, const arb_etree *J, int32_t anchor)
{
    const int E = r->E;
    r->tok[0] = anchor;
    r->par[0] = -1;
    int32_t ids[ARB_ETREE_RANKS];
    float pr[ARB_ETREE_RANKS];
    for (int u = 0, v = 1; u < J->n && v < J->n; u++) {
        int c = 0;
        for (int w = u + 1; w < J->n; w++)
            c += J->parent[w] == u;
        if (!c)
            continue;
        memcpy(r->x, r->hid, (size_t)E * sizeof *r->x);
        for (int a = u, i = J->depth[u]; i >= 0; a = J->parent[a], i--)
            memcpy(r->x + (size_t)(i + 1) * E, r->emb + (size_t)r->tok[a] * E, (size_t)E * sizeof *r->x);
        arb_heads_topk(r->h, J->depth[u], &r->lm, r->x, c, ids, pr, r->ws);
        for (int w = u + 1; w < J->n; w++)
            if (J->parent[w] == u) {
                r->tok[w] = ids[J->rank[w]];
                r->par[w] = u;
            }
    }
}

static int prefill(arb_rollout *r, const int32_t *tok, int n, int32_t *first, arb_err *err)
{
    int rc = arb_ctx_truncate(r->ctx, 0);
    if (rc)
        return ARB_ERR(err, rc, "rollout: cannot reset the context");
    int32_t parent[PREFILL_CHUNK];
    for (int i = 0; i < PREFILL_CHUNK; i++)
        parent[i] = i - 1;
    for (int c0 = 0; c0 < n; c0 += PREFILL_CHUNK) {
        int m = n - c0 < PREFILL_CHUNK ? n - c0 : PREFILL_CHUNK;
        arb_eval_out o = {.argmax = r->y, .hidden = r->hrows};
        if ((rc = arb_eval_ex(r->ctx, tok + c0, parent, m, &o, err)) || (rc = arb_commit(r->ctx, r->chain, m, err)))
            return rc;
        if (c0 + m == n) {
            *first = r->y[m - 1];
            memcpy(r->hid, r->hrows + (size_t)(m - 1) * r->E, (size_t)r->E * sizeof *r->hid);
        }
    }
    return ARB_OK;
}

int arb_rollout_score(arb_rollout *r, const arb_etree *T, const arb_epath *F, int nF, const arb_rollout_set *set,
                      double *a_F, double *a_T, long *n_steps, arb_err *err)
{
    arb_etree *J = malloc(sizeof *J);
    int32_t *cand = malloc(ARB_ETREE_MAX * sizeof *cand);
    if (!J || !cand) {
        free(J);
        free(cand);
        return ARB_ERR(err, ARB_E_NOMEM, "rollout: out of memory");
    }
    int rc = arb_frontier_joint(T, F, nF, J, cand, err);
    if (!rc && J->max_depth > r->h->n_heads)
        rc = ARB_ERR(err, ARB_E_INVAL, "rollout: tree depth %d, the heads file has %d heads", J->max_depth,
                     r->h->n_heads);
    for (int c = 0; c < nF; c++)
        a_F[c] = 0;
    double accT = 0;
    long steps = 0;
    bool pass[ARB_ETREE_MAX];
    for (int p = 0; p < set->n && !rc; p++) {
        int32_t anchor = -1;
        if ((rc = prefill(r, set->tok[p], set->len[p], &anchor, err)))
            break;
        int gen = 1;
        bool eos = arb_token_is_eog(r->model, anchor);
        while (!eos && gen < set->max_new) {
            propose(r, J, anchor);
            arb_eval_out o = {.argmax = r->y, .hidden = r->hrows};
            if ((rc = arb_eval_ex(r->ctx, r->tok, r->par, J->n, &o, err)))
                break;
            pass[0] = true;
            for (int v = 1; v < J->n; v++)
                pass[v] = r->tok[v] == r->y[J->parent[v]];
            int stop = arb_frontier_score_step(J, cand, nF, pass, a_F);
            int np = 0;
            for (int v = stop; v >= 0; v = J->parent[v])
                np++;
            for (int v = stop, i = np - 1; v >= 0; v = J->parent[v], i--)
                r->path[i] = v;
            if ((rc = arb_commit(r->ctx, r->path, np, err)))
                break;
            accT += np; /* accepted drafts + the bonus */
            steps++;
            for (int i = 1; i <= np && !eos && gen < set->max_new; i++) { /* a1..ak, bonus */
                int32_t t = i < np ? r->tok[r->path[i]] : r->y[stop];
                gen++;
                eos = arb_token_is_eog(r->model, t);
            }
            anchor = r->y[stop];
            memcpy(r->hid, r->hrows + (size_t)stop * r->E, (size_t)r->E * sizeof *r->hid);
        }
    }
    free(J);
    free(cand);
    if (rc)
        return rc;
    for (int c = 0; c < nF; c++)
        a_F[c] = steps ? a_F[c] / (double)steps : 0;
    *a_T = steps ? accT / (double)steps : 0;
    if (n_steps)
        *n_steps = steps;
    return ARB_OK;
}
