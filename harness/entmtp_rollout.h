/* entmtp_rollout.h — Hydra greedy self-rollouts for EntMTP's frontier (docs/spec/drafting.md
 * §10.1 score_all, §10.2 debiasing): the trajectory advances with tree T (its own acceptance
 * and commit) while every step evaluates the joint tree T ∪ F in one forward; each candidate
 * ν ∈ F is scored with the accept length T ∪ {ν} would have had at that step. With F empty it
 * is the canonical self-rollout of T (its own proposal, mask and KV updates).
 *
 *     arb_rollout *ro;
 *     arb_rollout_new(ctx, "hydra.gguf", &ro, &err);     // ctx: want_hidden, n_ctx large enough
 *     arb_rollout_set set = {.n = 4, .tok = toks, .len = lens, .max_new = 64};
 *     double aF[ARB_ETREE_MAX], aT;
 *     arb_rollout_score(ro, &T, F, nF, &set, aF, &aT, &err);   // a = mean (accepted + 1) per step
 *     arb_rollout_free(ro);
 *
 * Greedy only (T = 0; typical acceptance belongs to branch dyntree). A node's token depends only
 * on its own path (the head on that path's prefix, its rank in the head's top-k), so the joint
 * tree proposes for T's nodes exactly what T alone proposes. Not thread-safe (one ctx).
 */
#ifndef ARB_ENTMTP_ROLLOUT_H
#define ARB_ENTMTP_ROLLOUT_H

#include <stdint.h>

#include "engine.h"
#include "entmtp_frontier.h"

typedef struct arb_rollout arb_rollout;

typedef struct arb_rollout_set { /* calibration prompts (not owned) */
    int n;                       /* prompts */
    const int32_t *const *tok;   /* [n] token arrays */
    const int *len;              /* [n] their lengths */
    int max_new;                 /* generated tokens per prompt (prefill's token included) */
} arb_rollout_set;

/* Load Hydra heads (a path; checked against the model's sha256) for ctx's model. */
int arb_rollout_new(arb_ctx *ctx, const char *heads_path, arb_rollout **out, arb_err *err);
void arb_rollout_free(arb_rollout *r); /* NULL-safe */
int arb_rollout_n_heads(const arb_rollout *r);
/* Run every prompt of set with trajectory T, scoring T ∪ {F[c]}: a_F[c] (nF entries) and *a_T
   = mean accepted drafts + 1 per decode step; *n_steps (may be NULL) the steps. T's depth and
   the candidates' must not exceed the heads. */
int arb_rollout_score(arb_rollout *r, const arb_etree *T, const arb_epath *F, int nF, const arb_rollout_set *set,
                      double *a_F, double *a_T, long *n_steps, arb_err *err);

#endif
