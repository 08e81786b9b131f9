/* goose.h — GOOSE: anisotropic spine trees (docs/spec/drafting.md §4; Jin, Nguyen, Inoue 2026).
 *
 * Each cycle ContextMatch (pld.h) proposes a chain d; a long or consensus match goes out
 * as a linear bypass chain, otherwise a spine tree is built (Algorithm 1): the first bs
 * tokens of d as a spine, top successors from the two-tier adjacency table (tr.h) as root
 * branches and harmonically decaying spine branches, then confidence-aware BFS extension up
 * to D levels below each branch point; with no source at all an AR step. An EMA of spine
 * acceptance picks the spine ratio r from three tiers. Topologies "iso" and "sequoia" reuse
 * the same table and harvesting with a fixed-shape tree instead of the spine tree.
 *
 *     arb_goose *g;  arb_goose_new(&spec, n_vocab, &g, &err);     // spec from method.h
 *     arb_adj *a = arb_goose_adj(g);                              // fill it in tests
 *     arb_goose_build(g, a_prev, anchor, d, m, 0.3, &tree, &rec); // Algorithm 1 alone
 *     arb_goose_free(g);
 * The decode loop uses it through `arb_drafter_goose` (drafter.h).
 */
#ifndef ARB_GOOSE_H
#define ARB_GOOSE_H

#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "method.h"
#include "tr.h"
#include "tree.h"

typedef struct arb_goose arb_goose;

/* Consensus reading by name ("any", "distinct", "long"): its index, -1 if unknown; and the
   names, ", "-separated, into buf (config validation and its error). */
int arb_goose_consensus_find(const char *name);
const char *arb_goose_consensus_names(char *buf, size_t cap);
/* Spine-ratio tier of p̂_s (or spec->fixed_r when scheduler is "fixed"). */
double arb_goose_tier(const arb_method_spec *s, double p_s_hat);
/* Length cap of a bypass chain: bypass_max, budget - 1 for -1, max_draft (C_max) for 0;
   never more than 63. */
int arb_goose_bypass_cap(const arb_method_spec *s);

int arb_goose_new(const arb_method_spec *s, int n_vocab, arb_goose **out, arb_err *err);
void arb_goose_free(arb_goose *g);
arb_adj *arb_goose_adj(arb_goose *g);
double arb_goose_ps_hat(const arb_goose *g);
/* This method's topology (topologies/topology.h) into t (reset to the anchor by the caller) on
   GOOSE's adjacency table; for the spine tree (Algorithm 1, d[0..m) the spine candidates, r the
   spine ratio) it fills rec's bs/br/bsp/... fields. The budget split is arb_spine_split. */
void arb_goose_build(arb_goose *g, int32_t a_prev, int32_t anchor, const int32_t *d, int m, double r,
                     arb_tree *t, arb_step_record *rec);

#endif
