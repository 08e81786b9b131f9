/* entmtp_frontier.h — EntMTP's greedy acceptance frontier over index-path trees
 * (docs/spec/drafting.md §10.1–10.2): Algorithm 1, the one-joint-forward score_all step, and
 * the acceptance Pareto hull. Pure code: the model-side rollouts live in entmtp_rollout.h and
 * reach this module through a scorer callback, so the unit tests drive it with synthetic
 * acceptance statistics.
 *
 *     arb_etree T; arb_etree_parse("[[0],[0,0],[1]]", &T, &err);
 *     arb_epath F[ARB_ETREE_MAX]; int nF = arb_frontier_next_children(&T, 4, F, ARB_ETREE_MAX);
 *     arb_etree J; int cand[ARB_ETREE_MAX]; arb_frontier_joint(&T, F, nF, &J, cand, &err);
 *     // per step: pass[v] = (J's token at v == target argmax at parent(v))
 *     int stop = arb_frontier_score_step(&J, cand, nF, pass, acc);   // acc[c] += accept of T ∪ {F[c]}
 *     arb_frontier_point *H; int nH;
 *     arb_frontier_grow(4, 30, scorer, ud, &H, &nH, &err);          // Algorithm 1
 *     int keep[..]; int nk = arb_frontier_hull(H, nH, keep);         // Pareto hull
 */
#ifndef ARB_ENTMTP_FRONTIER_H
#define ARB_ENTMTP_FRONTIER_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define ARB_ETREE_MAX 256  /* nodes incl. the anchor: |T ∪ F| <= 2 |T| for |T| <= 128 */
#define ARB_ETREE_DEPTH 8  /* deepest index path (heads) */
#define ARB_ETREE_RANKS 10 /* ranks a head offers (top-10, §9.2) */

typedef struct arb_epath {   /* an index path [c1..c_len]; len 0 = the anchor */
    int8_t len;
    int8_t r[ARB_ETREE_DEPTH];
} arb_epath;

typedef struct arb_etree {   /* prefix-closed index-path tree in canonical order (depth, then path) */
    int n;                   /* nodes incl. the anchor (node 0) */
    int max_depth;
    arb_epath path[ARB_ETREE_MAX];
    int32_t parent[ARB_ETREE_MAX]; /* -1 for the anchor */
    int16_t rank[ARB_ETREE_MAX];   /* last index of the path, -1 for the anchor */
    int16_t depth[ARB_ETREE_MAX];
} arb_etree;

/* Sort t->path[1..n) canonically, fill parent/rank/depth/max_depth; path[0] must be the anchor.
   ARB_E_INVAL (naming the path) on a duplicate, a missing prefix, a rank >= 10, depth > 8. */
int arb_etree_canon(arb_etree *t, arb_err *err);
/* Index-path text "[[0],[0,0],[1]]" (the anchor implied) into a canonical tree. */
int arb_etree_parse(const char *text, arb_etree *t, arb_err *err);
/* The tree as index-path text; returns the length, or -1 if cap is too small. */
int arb_etree_format(const arb_etree *t, char *buf, int cap);
/* Node of path p in t, or -1 (linear). */
int arb_etree_find(const arb_etree *t, const arb_epath *p);

/* NextChildren (§10.1 [CHOICE]): for the anchor and every node u with len(u) < D, the single
   candidate u + [c_u], c_u = u's child count, if c_u < 10. Returns the count (<= cap). */
int arb_frontier_next_children(const arb_etree *T, int D, arb_epath *F, int cap);
/* J = T ∪ F canonically; cand[v] = index of J's node v in F, or -1 for T's nodes. */
int arb_frontier_joint(const arb_etree *T, const arb_epath *F, int nF, arb_etree *J, int32_t *cand,
                       arb_err *err);
/* One step of score_all on J: pass[v] = v's token is the target's choice after parent(v)
   (pass[0] ignored). ok[v] = ok[parent] && pass[v]; acc_T = deepest ok node of T; for every
   candidate c: acc[c] += 1 + max(acc_T, ok[F_c] ? depth : 0). Returns T's stop node (in J). */
int arb_frontier_score_step(const arb_etree *J, const int32_t *cand, int nF, const bool *pass, double *acc);

/* Scores T ∪ {F[c]} for every c: a[c] = mean accepted drafts + 1 per step. */
typedef int (*arb_frontier_scorer)(const arb_etree *T, const arb_epath *F, int nF, double *a, void *ud,
                                   arb_err *err);

typedef struct arb_frontier_point {
    int n;             /* nodes incl. the anchor */
    int depth;         /* D_max of the run that made it (the tree's own depth may be less) */
    double a;          /* score_all's mean accept length (biased, §10.2) */
    double a_self;     /* canonical self-rollout's mean (NAN until debiased) */
    arb_etree tree;
} arb_frontier_point;

/* Algorithm 1 for D_max = D, up to B nodes: *H (caller frees) gets one point per added node. */
int arb_frontier_grow(int D, int B, arb_frontier_scorer fn, void *ud, arb_frontier_point **H, int *nH,
                      arb_err *err);
/* Acceptance Pareto hull: keep[] gets the indices of points no other point dominates (<= nodes
   and >= value, one strictly; value = a_self when use_self, else a); equal points keep the first.
   Sorted by node count. Returns the count. */
int arb_frontier_hull(const arb_frontier_point *p, int n, bool use_self, int *keep);

#endif
