/* tree.h — the draft tree every drafter builds and every verifier walks
 * (docs/spec/drafting.md §1.2–1.6).
 *
 * Node 0 is the anchor (the last committed token, parent -1, depth 0); every other
 * node has 0 <= parent < own index and depth = depth[parent] + 1. Capacity is fixed
 * at init, so the decode loop never allocates.
 *
 *     arb_tree t;
 *     arb_tree_init(&t, 128, &err);                  // once per decoder
 *     arb_tree_reset(&t, anchor_token);              // every step
 *     int a = arb_tree_add(&t, 0, tok, ARB_SRC_PLD, 0, NAN);   // child of the anchor
 *     arb_tree_finalize(&t);                         // child lists (+ invariant check)
 *     arb_eval(ctx, t.tok, t.parent, t.n, logits, NULL, &err);
 *     arb_tree_release(&t);
 *
 * For i.i.d./delayed trees (docs/spec/verification.md §0.3) equal siblings are merged into one
 * node and the sampled order of next tokens through each node is kept in child_seq.
 */
#ifndef ARB_TREE_H
#define ARB_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

typedef enum arb_src {     /* source tag of a draft node */
    ARB_SRC_ROOT = 0,      /* the anchor */
    ARB_SRC_PLD,           /* context match (prompt lookup): GOOSE spine */
    ARB_SRC_TR,            /* adjacency table (Token Recycling, GOOSE branches) */
    ARB_SRC_DRAFT,         /* a draft language model */
    ARB_SRC_HEAD,          /* Medusa / Hydra head */
    ARB_SRC_LADE_GUESS,    /* Lookahead n-gram pool */
    ARB_SRC_LADE_WINDOW,   /* Lookahead window (never acceptable) */
    ARB_SRC_REST,          /* REST retrieval */
    ARB_SRC_COUNT
} arb_src;

enum {
    ARB_NODE_NOACCEPT = 1u << 0, /* a verifier must never step onto this node */
    ARB_NODE_SPINE = 1u << 1,    /* GOOSE spine (also the TR-control spine) */
};

typedef struct arb_tree {
    int n;              /* nodes in use, anchor included */
    int cap;            /* capacity fixed at init */
    int max_depth;      /* deepest node's depth (set by add) */
    /* Structure of arrays, each cap long; tok/parent are exactly arb_eval's inputs. */
    int32_t *tok;       /* token id */
    int32_t *parent;    /* batch index of the parent, -1 for node 0 */
    int16_t *depth;     /* 0 for the anchor */
    uint8_t *source;    /* arb_src */
    uint8_t *flags;     /* ARB_NODE_* */
    int16_t *rank;      /* rank in the candidate list it came from (0 = best), -1 if none */
    float *draft_prob;  /* drafter confidence given the parent; 1 for anchor; NAN if none */
    float *path_logp;   /* sum of log draft_prob from the anchor; 0 for the anchor */
    /* Child lists, rebuilt by arb_tree_finalize(): first_child[v], next_sibling[c] (-1 ends). */
    int32_t *first_child, *next_sibling;
    /* Sampled child order (i.i.d./delayed trees): child_seq[seq_start[v] .. +seq_len[v]) lists
       the child node of v taken by each drafted path through v, in path order (multiset C(v)).
       Empty (seq_len 0) for deterministic trees. Filled by arb_tree_push_seq(). */
    int32_t *seq_start, *seq_len, *child_seq;
    int n_seq, cap_seq;
    /* (added) push order before finalize groups child_seq per node: seq_from[j] is the
       node v of the j-th push; seq_tmp is grouping scratch. finalized: child lists valid. */
    int32_t *seq_from, *seq_tmp;
    bool finalized;
} arb_tree;

int arb_tree_init(arb_tree *t, int cap, arb_err *err); /* cap_seq = 8 * cap */
/* (added) Same with an explicit child_seq capacity (i.i.d. trees: k paths x depth). */
int arb_tree_init_seq(arb_tree *t, int cap, int cap_seq, arb_err *err);
void arb_tree_release(arb_tree *t); /* NULL-safe, idempotent */
/* Start a new tree holding only the anchor. */
void arb_tree_reset(arb_tree *t, int32_t anchor_tok);
/* Append a node; returns its index, or -1 if the tree is full. parent < t->n. */
int arb_tree_add(arb_tree *t, int parent, int32_t tok, arb_src src, int rank, float draft_prob);
/* Child of v carrying tok, or -1 (linear in v's children; valid after finalize or
   during building, since it scans nodes after v when lists are stale). */
int arb_tree_find_child(const arb_tree *t, int v, int32_t tok);
/* Record that a drafted path went from v to child c (appends to C(v)); call in path order,
   node by node, before finalize. Returns 0 or -1 when cap_seq is exceeded. */
int arb_tree_push_seq(arb_tree *t, int v, int c);
/* Rebuild child lists in index order and check invariants (ARB_ASSERT). */
void arb_tree_finalize(arb_tree *t);
/* Write the root-to-v batch indices into path (anchor first); returns the count (depth+1). */
int arb_tree_path(const arb_tree *t, int v, int32_t *path);
/* (added) Ancestor bitsets (docs/spec/drafting.md §1.3): row i (words uint64 per row) has bit j set
   iff j is an ancestor of i or j == i. words >= (n + 63) / 64. */
void arb_tree_ancestors(const arb_tree *t, uint64_t *bits, int words);
/* (added) Number of children of v (after finalize). */
int arb_tree_n_children(const arb_tree *t, int v);

#endif
