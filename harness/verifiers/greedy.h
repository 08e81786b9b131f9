/* greedy.h — greedy (T = 0) verification: the longest accepted path (docs/spec/drafting.md §1.5,
 * docs/spec/verification.md §1), with source priority PLD/spine > TR > others as the tie-break.
 *
 *     int32_t y[n];  arb_greedy_argmax_rows(logits, n, V, y);   // y[v] = argmax, ties -> low id
 *     arb_verify_out o;
 *     arb_greedy_walk(&tree, y, ARB_GREEDY_LONGEST, best_scratch, &o);
 *     // commit root..o.node (o.depth + 1 nodes), then o.extra (= y[o.node])
 *
 * Modes: LONGEST (default) finds the longest path whose every node equals its parent's
 * argmax; FIRST_MATCH is GOOSE Algorithm 3 literally (first matching child in priority
 * order, no look-ahead). With distinct sibling tokens both give the same path.
 * Also registered as the verifier vtable `arb_verifier_greedy` (verifier.h; T = 0 only).
 */
#ifndef ARB_GREEDY_H
#define ARB_GREEDY_H

#include <stdint.h>

#include "tree.h"
#include "verifier.h"

typedef enum arb_greedy_mode { ARB_GREEDY_LONGEST = 0, ARB_GREEDY_FIRST_MATCH = 1 } arb_greedy_mode;

/* Argmax of one row (ties -> smallest id). */
int32_t arb_greedy_argmax(const float *row, int V);
void arb_greedy_argmax_rows(const float *logits, int n, int V, int32_t *y);

/* Source priority of node i: 0 spine/PLD, 1 TR, 2 others (lower wins). */
int arb_greedy_priority(const arb_tree *t, int i);

/* Walk a finalized tree given y[v] = target argmax at every node. best: n int32 scratch.
   Fills node, depth, extra (= y[node]), extra_is_bonus = 1, n_fallback = 0. No allocation. */
void arb_greedy_walk(const arb_tree *t, const int32_t *y, arb_greedy_mode mode, int32_t *best,
                     arb_verify_out *out);

extern const arb_verifier_i arb_verifier_greedy;

#endif
