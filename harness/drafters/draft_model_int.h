/* draft_model_int.h — the draft model's state, shared by draft_model.c (lifecycle and the
 * "draft" drafter) and delayed.c (the (l, k, b) delayed-tree sampler). Not a public API. */
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
    int32_t *idx;            /* V: PROCESS scratch */
    int32_t *pos;            /* n_max: current node of each path */
    double *q_root;          /* V: law at the anchor of the last propose */
};

#endif
