/* iso.h — Iso(k): the uniform-rate k-ary tree filled in BFS order under a node budget
 * (docs/spec/drafting.md §4.7), fed by any successor source (GOOSE's adjacency table).
 *
 *     int succ(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *sc);  // your source
 *     arb_tree_reset(&t, anchor);
 *     arb_iso_build(&t, a_prev, 3, 60, 0, succ, ud, queue);   // queue: budget int32 scratch
 *
 * Children are successors 0..k-1 of each node (rank order, no score pruning); missing
 * successors leave slots empty, the shape is never padded. For k = 3, B = 60 and plentiful
 * successors: 3/9/27/20 nodes at depths 1..4.
 */
#ifndef ARB_ISO_H
#define ARB_ISO_H

#include <stdint.h>

#include "tree.h"

/* Successor list of tok (preceded by prev, -1 if none): up to 16 ids and scores, best
   first, distinct. Returns the count. */
typedef int (*arb_succ_fn)(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *scores);

/* Grow t (holding the anchor; a_prev = the token before it) to at most budget nodes.
   max_depth 0 = unlimited. queue: budget int32 scratch. Returns nodes added. */
int arb_iso_build(arb_tree *t, int32_t a_prev, int k, int budget, int max_depth, arb_succ_fn succ,
                  void *ud, int32_t *queue);

#endif
