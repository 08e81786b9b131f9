/* draft_model.h — a draft language model with its own context (docs/spec/drafting.md §11.1): any GGUF
 * that shares the target's vocabulary, or a self-draft (the target cut after layer L). It
 * drafts a single chain, k i.i.d. paths, or a delayed tree (trunk l, then k i.i.d. branches
 * of length b), merged into a trie with C(v) in path order, and keeps the exact processed
 * law q_v it sampled from at every internal node (what the sampling verifiers need).
 *
 *     arb_draft_model_opts o = arb_draft_model_default_opts();   // self-draft, 24 layers
 *     arb_draft_model *dm;
 *     arb_draft_model_new(target_model, &o, 64, &dm, &err);
 *     arb_draft_shape sh = {.k = 3, .l = 1, .b = 3};             // delayed (l, k, b)
 *     arb_rng r; arb_rng_init(&r, seed, prompt, step, ARB_STREAM_DRAFT);
 *     arb_tree_reset(&t, S[n_S - 1]);
 *     arb_draft_model_propose(dm, S, n_S, sh, &sampling, &r, &t, q, &st, &err);
 *     arb_tree_finalize(&t);     // q row v = q_v (n x V doubles) for internal nodes
 *     ...
 *     arb_draft_model_free(dm);
 *
 * KV: the draft context keeps the committed sequence; each propose catches up the tokens
 * committed since the last call (one chain eval), commits trunk tokens tentatively and
 * truncates back afterwards; branch level j re-evaluates the branch trie (one batched
 * pass per level). Not thread-safe; one per decoder.
 */
#ifndef ARB_DRAFT_MODEL_H
#define ARB_DRAFT_MODEL_H

#include <stdbool.h>

#include "engine.h"
#include "sample.h"
#include "tree.h"

typedef struct arb_draft_model_opts {
    const char *path;   /* draft GGUF (same vocabulary as the target); NULL or "" = self-draft */
    int self_layers;    /* self-draft: blocks of the target evaluated (default 24) */
    int n_ctx;          /* draft KV capacity; 0 = engine default */
    int n_threads;      /* draft model kernels (separate GGUF only); 0 = all cores */
} arb_draft_model_opts;
arb_draft_model_opts arb_draft_model_default_opts(void);

typedef struct arb_draft_shape { int k, l, b; } arb_draft_shape; /* single: {1,0,L}; iid: {k,0,L} */
struct arb_method_spec;

int arb_draft_shape_nodes(arb_draft_shape s); /* 1 + l + k*b */
/* The checks every (k, l, b) tree drafter shares (drafters `draft` and `eagle-dte`): greedy only
   at T = 0, a sampling verifier valid on the regime of the trees drafted (docs/spec/verification.md
   §0.6: the shape's own regime, or delayed when as_delayed — a per-step selector may draw any
   shape), a non-empty tree. Errors "method <id>: <param>: ...". */
int arb_draft_shape_validate(const struct arb_method_spec *s, bool as_delayed, arb_err *err);

typedef struct arb_draft_stats {
    double us;          /* wall time of the propose call */
    int n_evals;        /* draft forward passes (catch-up included) */
    int n_tokens;       /* tokens sent to the draft model */
} arb_draft_stats;

typedef struct arb_draft_model arb_draft_model;

/* target: the target model (self-draft shares its weights; a separate GGUF must have the same
   n_vocab). n_nodes_max: the largest tree to draft. */
int arb_draft_model_new(arb_model *target, const arb_draft_model_opts *o, int n_nodes_max,
                        arb_draft_model **out, arb_err *err);
/* The draft model a method spec names (draft_model "self" / "target" / a GGUF path,
   draft_layers) for the target context's model. */
int arb_draft_model_from_spec(arb_ctx *target, const struct arb_method_spec *s, int n_nodes_max,
                              arb_draft_model **out, arb_err *err);
void arb_draft_model_free(arb_draft_model *d); /* NULL-safe */
void arb_draft_model_reset(arb_draft_model *d); /* new prompt: forget the draft KV */
/* Draft on S[0..n_S) (anchor S[n_S-1]; t reset to it). q: t->cap x V doubles. rng: the
   drafting stream. Leaves t unfinalized (call arb_tree_finalize). Errors: context full. */
int arb_draft_model_propose(arb_draft_model *d, const int32_t *S, int n_S, arb_draft_shape sh,
                            const arb_sampling *smp, arb_rng *rng, arb_tree *t, double *q,
                            arb_draft_stats *st, arb_err *err);
/* Catch the draft context up with S[0..n_S) (one chain eval of the tokens it has not seen; a
   new prompt when n_S <= the tokens already seen). A propose with the same n_S then drafts from
   this state without evaluating again, so several trees can be drafted from one root (the NDE
   offline data) and a selector can read the laws before choosing the shape: S must be the same
   sequence until the next prepare or reset. */
int arb_draft_model_prepare(arb_draft_model *d, const int32_t *S, int n_S, arb_draft_stats *st, arb_err *err);
/* After prepare: the processed draft laws (V doubles each) at the position before the anchor
   (q_prev; = q_root for a one-token context) and at the anchor (q_root). Allocates nothing. */
void arb_draft_model_laws(arb_draft_model *d, const arb_sampling *smp, double *q_prev, double *q_root);
/* The draft law at the anchor of the last propose (V doubles) and the model's vocabulary. */
const double *arb_draft_model_q_root(const arb_draft_model *d);
int arb_draft_model_n_vocab(const arb_draft_model *d);

#endif
