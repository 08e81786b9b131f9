/* head_sched.h — what a head drafter (medusa.c) needs to switch trees per step (EntMTP,
 * docs/spec/drafting.md §10.4–10.6): the TopologyBank named by the method's `bank`, the policy
 * named by `tree_sched` (schedulers/scheduler.h), and the step features (schedulers/features.h)
 * logged into steps.extra. Everything is created at bind; a step allocates nothing.
 *
 *     arb_headsched *hs;
 *     arb_headsched_new(spec, n_heads, tree_cap, &hs, &err);   // NULL *hs when spec->tree_sched is ""
 *     arb_headsched_begin(hs);                               // per prompt
 *     arb_headsched_base(hs, stop_logits_row, V);            // p0, H_t; closes the last step's history
 *     const arb_topo *T = arb_headsched_pick(hs, p, top1, D, rec);   // this step's tree
 *     arb_headsched_verified(hs, tree, path, n_path);        // accepted tokens (bonus follows in base)
 */
#ifndef ARB_HEAD_SCHED_H
#define ARB_HEAD_SCHED_H

#include "decode.h"
#include "method.h"
#include "topobank.h"
#include "tree.h"

typedef struct arb_headsched arb_headsched;

/* Loads spec->bank (trees deeper than n_heads or larger than tree_cap are errors naming the
   file), creates the policy with the bank's settings (tau_on / tau_off override when >= 0). */
int arb_headsched_new(const arb_method_spec *spec, int n_heads, int tree_cap, arb_headsched **out, arb_err *err);
void arb_headsched_free(arb_headsched *hs); /* NULL-safe */
const arb_topobank *arb_headsched_bank(const arb_headsched *hs);
void arb_headsched_begin(arb_headsched *hs);
void arb_headsched_base(arb_headsched *hs, const float *row, int V);
/* p[0..D) / top1: the heads' top-1 probability and token along the rank-0 path. */
const arb_topo *arb_headsched_pick(arb_headsched *hs, const float *p, const int32_t *top1, int D,
                                   arb_step_record *rec);
void arb_headsched_verified(arb_headsched *hs, const arb_tree *t, const int32_t *path, int n_path);

#endif
