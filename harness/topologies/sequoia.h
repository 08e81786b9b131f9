/* sequoia.h — Sequoia's dynamic program for the best tree under a positional acceptance
 * vector (docs/spec/drafting.md §5, Infini-AI-Lab/Sequoia tree_search.py), and filling such a
 * static tree from a successor source.
 *
 *     double p[] = {0.6, 0.2, 0.1, 0.05};
 *     arb_sequoia *sq;
 *     arb_sequoia_new(p, 4, 60, 7, &sq, &err);            // budget 60 nodes, 7 levels
 *     double tau = arb_sequoia_best(sq, 10, 4);           // expected tokens, 2.86
 *     int n = arb_sequoia_tree(sq, 60, 7, parent, rank, 64);  // canonical order, anchor first
 *     arb_sequoia_fill(&t, a_prev, parent, rank, n, succ, ud);
 *     arb_sequoia_free(sq);
 *
 * T[m][l][b]: best expected tokens (root counts 1) of a tree of m nodes, at most l levels
 * (l = 1: a lone root), whose root has exactly b children; ties: first maximum.
 */
#ifndef ARB_SEQUOIA_H
#define ARB_SEQUOIA_H

#include <stdint.h>

#include "iso.h"
#include "tree.h"

typedef struct arb_sequoia arb_sequoia;

/* p[0..K) = acceptance of ranks 1..K; m_max nodes (root counts), l_max levels (root counts). */
int arb_sequoia_new(const double *p, int K, int m_max, int l_max, arb_sequoia **out, arb_err *err);
void arb_sequoia_free(arb_sequoia *s);
double arb_sequoia_best(const arb_sequoia *s, int m, int l);   /* -INFINITY if infeasible */
int arb_sequoia_best_b(const arb_sequoia *s, int m, int l);    /* root's child count */
/* The optimal tree as parent[]/rank[] in canonical (length, lexicographic) order, node 0 =
   root. Returns the node count (= m when feasible) or -1 if cap is too small. */
int arb_sequoia_tree(const arb_sequoia *s, int m, int l, int32_t *parent, int16_t *rank, int cap);
/* Fill a static template into t (holding the anchor): node i gets successor rank[i] of its
   parent; a node whose successor is missing is dropped with its subtree. Returns nodes added. */
int arb_sequoia_fill(arb_tree *t, int32_t a_prev, const int32_t *parent, const int16_t *rank, int n,
                     arb_succ_fn succ, void *ud);

#endif
