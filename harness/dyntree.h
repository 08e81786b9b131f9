/* dyntree.h — EAGLE-2's dynamic draft tree (docs/spec/drafting.md §8) over any source of
 * per-node top-k draft distributions: a draft LM, a trained head, an adjacency table.
 *
 * The anchor's top-k children are the first frontier; each further level expands the
 * frontier (one source call), and the next frontier is the k children of that level with
 * the largest path value V = Σ log q. At the end the total - 1 best candidates of everything
 * drafted (ties: shallower, then older) become the tree. V never increases along a path, so
 * the kept set is closed under parents.
 *
 *     arb_dyntree_opts o = arb_dyntree_default_opts();     // depth 6, topk 10, total 60
 *     if (arb_dyntree_opts_check(&o, "method EAGLE2", &err)) ...;
 *     arb_dyntree *dt;
 *     arb_dyntree_new(&o, &dt, &err);                      // all scratch allocated here
 *     arb_dyntree_source src = {.expand = my_expand, .ud = my_model};
 *     arb_tree_reset(&t, anchor);                          // t.cap >= o.total
 *     arb_dyntree_build(dt, &src, &t, ARB_SRC_DRAFT, &st, &err);
 *     arb_tree_finalize(&t);
 *     arb_dyntree_free(dt);
 *
 * Not thread-safe (one per decoder); build allocates nothing.
 */
#ifndef ARB_DYNTREE_H
#define ARB_DYNTREE_H

#include <stdint.h>

#include "tree.h"

typedef struct arb_dyntree_opts {
    int depth; /* deepest draft node below the anchor (6 = the reference's depth 5 + the anchor's
                  expansion): depth - 1 frontier expansions after the anchor's */
    int topk;  /* children per expanded node and nodes per frontier (10); at most 16 */
    int total; /* tree nodes incl. the anchor (60 = the reference's total_token) */
} arb_dyntree_opts;
arb_dyntree_opts arb_dyntree_default_opts(void);
/* ARB_E_INVAL naming the field ("<who>: max_depth: ...") when a value is out of range. */
int arb_dyntree_opts_check(const arb_dyntree_opts *o, const char *who, arb_err *err);
int arb_dyntree_max_cands(const arb_dyntree_opts *o); /* topk + (depth - 1) * topk^2 */

typedef struct arb_dyntree_cand { /* one drafted candidate (creation order = index) */
    int32_t tok;
    int32_t parent;  /* candidate index; -1 = the anchor */
    int16_t depth;   /* 1 = child of the anchor */
    int16_t rank;    /* rank in its parent's top-k list (0 = best) */
    float logp;      /* log q(tok | parent's path) */
    float score;     /* path value: Σ logp from the anchor */
} arb_dyntree_cand;

typedef struct arb_dyntree_source {
    /* Evaluate the nodes front[0..n) (candidate indices into cand; -1 = the anchor, only ever
       alone in the first call) and write each one's k best next tokens, best first, into
       ids[i*k ..] with their log-probabilities in logp[i*k ..]; an id < 0 marks "no child".
       Non-zero return: the build stops and returns it. */
    int (*expand)(void *ud, const arb_dyntree_cand *cand, const int32_t *front, int n, int k, int32_t *ids,
                  float *logp, arb_err *err);
    void *ud;
} arb_dyntree_source;

typedef struct arb_dyntree_stats {
    int n_expand;      /* source calls (the anchor's included) */
    int n_cands;       /* candidates drafted */
    int n_selected;    /* draft nodes emitted (tree n - 1) */
    float min_score;   /* smallest path value kept (0 when none) */
    double select_us;  /* time in the builder itself, source calls excluded */
} arb_dyntree_stats;

typedef struct arb_dyntree arb_dyntree;
int arb_dyntree_new(const arb_dyntree_opts *o, arb_dyntree **out, arb_err *err);
/* A drafter's tree from its method parameters: *o = {depth, topk, total}, checked with errors
   naming "method <id>", then arb_dyntree_new. */
int arb_dyntree_for_method(const char *id, int depth, int topk, int total, arb_dyntree_opts *o,
                           arb_dyntree **out, arb_err *err);
void arb_dyntree_free(arb_dyntree *dt); /* NULL-safe */
/* Grow the tree below t's anchor (t holds only the anchor; t->cap >= total): nodes in
   (depth, creation) order, source tag src, rank, draft_prob = exp(logp). Expansion stops
   early once no frontier node can beat the total-1'th best value (exact: children never
   score above their parent and ties keep the older node). st may be NULL. */
int arb_dyntree_build(arb_dyntree *dt, const arb_dyntree_source *src, arb_tree *t, arb_src tag,
                      arb_dyntree_stats *st, arb_err *err);
/* The candidates of the last build (*n of them) and, for each, its tree node or -1. */
const arb_dyntree_cand *arb_dyntree_cands(const arb_dyntree *dt, int *n, const int32_t **node_of);

#endif
