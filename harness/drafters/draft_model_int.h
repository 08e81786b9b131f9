/* draft_model_int.h — the draft model's state, shared by draft_model.c (lifecycle and the
 * "draft" drafter), delayed.c (the (l, k, b) delayed-tree sampler) and eagle2.c (the EAGLE-2
 * dynamic tree, drafter "eagle2-draft"). Not a public API. */
#ifndef ARB_DRAFT_MODEL_INT_H
#define ARB_DRAFT_MODEL_INT_H

#include "draft_model.h"

struct arb_draft_model {
    arb_model *own;          /* a separate draft GGUF (NULL for self-draft) */
    arb_ctx *ctx;            /* draft context */
    int V, n_max, n_batch;
    int n_done;              /* S tokens committed in ctx (prefix of the sequence) */
    float *logits;           /* n_batch x V */
    int32_t *btok, *bpar, *chain; /* n_batch: batch tokens/parents, chain scratch */
    int32_t *idx;            /* n_max x V: PROCESS scratch, one row per node of a branch level */
    int32_t *pos;            /* n_max: current node of each path */
    double *q_root;          /* V: law at the anchor of the last propose */
    float *lg_root, *lg_prev; /* V: draft logits at the anchor S[n_done-1] and at S[n_done-2]
                                 (what the NDE selector's features read; lg_prev = lg_root
                                 when the context holds one token) */
    int prepared;            /* n_S of the last arb_draft_model_prepare (-1: none since reset) */
};

/* Evaluate S[from..to) as a chain on top of the committed prefix and commit it, in chunks of
   n_batch; the last row's logits stay in d->logits[0] (delayed.c). */
int arb_draft_model_catch_up(arb_draft_model *d, const int32_t *S, int from, int to, arb_draft_stats *st,
                             arb_err *err);

#endif
