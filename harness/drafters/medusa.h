/* medusa.h — the Medusa and Hydra drafters: trained heads (heads.h) on the target's last
 * hidden state fill a static index-path tree (docs/spec/drafting.md §1.4, §9; docs/heads.md).
 *
 * After every verified step the decoder hands the drafter the hidden state of the node whose
 * logits gave the bonus token (drafter.h's `hidden` slot); the bonus is the next anchor. A node
 * at depth d with rank path [c1..cd] carries:
 *   Medusa: the c_d-th best token of head d (Cartesian product of per-head top-k lists);
 *   Hydra:  the c_d-th best token of head d run on [h, e(anchor), e(tokens on the path)].
 * Before the first hidden state (never: prefill gives one) a step is AR.
 *
 * Method parameters: heads ("default" = <cache>/heads/<kind>-<model file>.<sha12>.gguf, or a
 * path), tree ("mc_sim_7b_63", Medusa's published 63-node tree; "auto" = the `budget`-node
 * tree of largest expected acceptance from the file's held-out rank accuracies, §9.2).
 *
 * The heads' outputs are scored with the target's own output head as the engine stores it
 * (arb_ctx_output_head, quantized) on a CPU context, else with the f32 copy (heads.h arb_lm_head).
 */
#ifndef ARB_MEDUSA_H
#define ARB_MEDUSA_H

#include <stdbool.h>
#include <stdint.h>

#include "heads.h"
#include "method.h"

/* Medusa's mc_sim_7b_63 (FasterDecoding/Medusa medusa/model/medusa_choices.py). */
extern const char arb_medusa_mc_sim_7b_63[];

/* The prefix- and rank-closed tree of n_nodes (anchor included) that maximises the sum of path
   values Π_d acc[d][c_d] (acc: the heads' held-out rank accuracies, K heads x ARB_HEADS_RANKS),
   grown greedily one node at a time (the largest value first; equal values: the earlier
   candidate). Writes canonical-order parent/rank (anchor = node 0); returns the node count, or < 0. */
int arb_medusa_tree_auto(const float (*acc)[ARB_HEADS_RANKS], int K, int n_nodes, int32_t *parent, int16_t *rank,
                         int cap, arb_err *err);

/* The default heads file of a model: <cache>/heads/<kind>-<model file>.<sha256[0:12]>.gguf
   (the directories are created). */
int arb_medusa_default_path(const char *kind, const char *model_path, const char *sha256, char *buf, size_t cap,
                            arb_err *err);

/* A method's `heads` value as a file: "default" (the path above), "{cache}/NAME" (NAME in
   arbor's cache directory, how committed configs name a file trained on the user's machine),
   or the path itself. */
int arb_heads_path(const char *heads, const char *kind, const char *model_path, const char *sha256, char *buf,
                   size_t cap, arb_err *err);

/* The trained-heads file method s loads for the model at model_path (sha256 its hex digest):
   its drafter's heads_kind slot names the kind, s->heads resolves by arb_heads_path. buf = "" when s loads no heads file. sha256 NULL: only whether it loads
   one (buf = its kind, nothing computed or created). */
int arb_heads_file_for(const arb_method_spec *s, const char *model_path, const char *sha256, char *buf, size_t cap,
                       arb_err *err);

/* After bind (medusa or hydra state): score with the f32 copy (on) or the engine's head (off,
   where available). For arbor bench-harness's before/after comparison. */
void arb_medusa_drafter_use_f32_head(void *st, bool on);

#endif
