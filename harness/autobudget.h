/* autobudget.h — `"budget": "auto"`: the budget that maximises predicted tokens per second on
 * this machine, from the machine's cost profile (costmodel.h, written by `arbor bench engine
 * --save-profile`) and the method's positional acceptance vector (sequoia_p).
 *
 *     predicted speedup(B) = τ̂(B) · t(1, L) / t(B, L)
 *
 * Trees (GOOSE, Iso, Sequoia; EAGLE and REST as a stand-in): B once per run, τ̂(B) the
 * expected tokens per step of the best B-node tree under p (Sequoia's DP, topologies/sequoia.h,
 * root counted), an optimistic but monotone estimate; t the fitted eval cost at a
 * representative context L. TR: the same argmax over template 2.2.2 cut to its B likeliest
 * nodes (arb_tr_template_prune). Per run: the shape is fixed at create for Iso and Sequoia, the
 * choice needs no state in the hot loop and is recorded in the run's parameters (params_json).
 * Chains (PLD's continuation, GOOSE's bypass chain): resolve sets spec.chain_cost and the
 * drafter picks the length per step (chainbudget.h), since a chain's worth moves with each match.
 *
 *     arb_method_spec s = ...;            // s.budget_auto set by "budget": "auto" or a *-auto preset
 *     if (arb_autobudget_resolve(target_ctx, n_threads, &s, stdout_or_NULL, &err)) ...;
 */
#ifndef ARB_AUTOBUDGET_H
#define ARB_AUTOBUDGET_H

#include <stdio.h>

#include "costmodel.h"
#include "engine.h"
#include "heads.h"
#include "method.h"

#define ARB_AUTOBUDGET_L 512 /* representative context length (tokens) */

/* The best budget in [b_min, b_max] under cost model cm and the 0-terminated acceptance
   vector p (at most ARB_SEQUOIA_K_MAX - 1 entries), trees of at most `levels` levels (root
   counted); *speedup = its predicted speedup over AR. */
int arb_autobudget_pick(const arb_cost_model *cm, const double *p, int levels, int L, int b_min, int b_max,
                        int *best, double *speedup, arb_err *err);

/* TR: the best budget in [b_min, b_max] for template 2.2.2 pruned to its likeliest nodes under
   p (arb_tr_template_prune: tau is exact for the pruned template under rank-only acceptance). */
int arb_autobudget_pick_tr(const arb_cost_model *cm, const double *p, int L, int b_min, int b_max, int *best,
                           double *speedup, arb_err *err);

/* Medusa / Hydra with tree "auto" (arb_medusa_tree_auto): the best budget in [b_min, b_max]
   (2 <= b_min, b_max <= ARB_AUTOBUDGET_HEADS_MAX) for the tree grown from the heads' rank
   accuracies acc (K heads), τ̂ being the sum of its nodes' path products (root 1), and each step
   paying the eval t(B, L) plus the drafting passes over the output head: one for Medusa, one per
   tree level for Hydra, pass_us each. *best is the tree's node count, *tau its τ̂. */
#define ARB_AUTOBUDGET_HEADS_MAX 64
int arb_autobudget_pick_heads(const arb_cost_model *cm, const float (*acc)[ARB_HEADS_RANKS], int K, bool hydra,
                              double pass_us, int L, int b_min, int b_max, int *best, double *speedup, double *tau,
                              arb_err *err);

/* If s->budget_auto: load this machine's profile for the model of target context c at n_threads (0 = all cores) and
   clear budget_auto. PLD: budget = 1 + max_draft and chain_cost set (length per step). TR: the
   pruned template's budget. Others: the tree budget (levels = max_depth + 1, b_max = the
   profile's largest knot, at most 128); GOOSE with its spine topology and bypass on also gets
   chain_cost and bypass_max = min(63, b_max - 1) (bypass length per step). Medusa / Hydra
   with tree "auto": arb_autobudget_pick_heads on the heads file the method loads (an error
   naming it when it cannot be read), one drafting pass timed on c (its rows through
   arb_ctx_output_head and their top-K, before the run uses c; a GPU model: the head's parameter share of
   one node's weight pass). log (when not NULL)
   gets one line saying what was chosen and why. ARB_E_NOTFOUND when no profile exists, naming
   the command that makes one. */
int arb_autobudget_resolve(arb_ctx *c, int n_threads, arb_method_spec *s, FILE *log, arb_err *err);

#endif
