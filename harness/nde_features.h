/* nde_features.h — what the NDE selector sees and what its actions cost (docs/spec/drafting.md
 * §11.2, §11.4, §11.5; docs/sampling.md, "NDE"): the action set A of delayed-tree shapes, the
 * latency model fitted to measured target and draft forward times, and the scalar features of
 * a root.
 *
 *     arb_nde_latency lat;                           // from arbor nde data (or a selector file)
 *     double us = arb_nde_action_us(&lat, n_ctx, arb_nde_actions[a]);   // T(n, a)
 *     double f[ARB_NDE_F];
 *     arb_nde_features(p_prev, q_prev, q_root, V, n_ctx, &smp, &lat, f);
 *
 * Pure functions of their inputs; nothing allocates.
 */
#ifndef ARB_NDE_FEATURES_H
#define ARB_NDE_FEATURES_H

#include "drafters/draft_model.h"
#include "sample.h"

#define ARB_NDE_N_ACTIONS 18 /* |A| */
#define ARB_NDE_F 11         /* scalar features */
#define ARB_NDE_NODES_MAX 25 /* the largest action's 1 + l + k*b */
#define ARB_NDE_BASE 6       /* index of the baseline action (2, 0, 4): the draft preset's shape */

/* A: k = 1 chains b in {2,4,6}; k in {2,3,4} x b in {2,4,6} at l = 0; k in {2,3,4} x b in {2,4}
   at l = 2. Order fixed (a selector file stores it and is checked against it). */
extern const arb_draft_shape arb_nde_actions[ARB_NDE_N_ACTIONS];
/* Feature names, for files and the docs. */
extern const char *const arb_nde_feature_names[ARB_NDE_F];
/* Index of shape s in A, or -1. */
int arb_nde_action_index(arb_draft_shape s);

/* One forward's wall time t(n, m) = c[0] + c[1] m + c[2] n m (µs) for m nodes on a context of
   n tokens, least-squares fit to the micro-benchmark of arbor nde data. */
typedef struct arb_nde_latency {
    double target[3], draft[3];
} arb_nde_latency;
double arb_nde_latency_us(const double c[3], int n, int m);
/* T(n, a) in µs: one draft catch-up pass, l trunk passes, b - 1 branch passes over the branch
   trie so far (widths k, 2k, ...), one target pass over 1 + l + k b nodes. */
double arb_nde_action_us(const arb_nde_latency *lat, int n, arb_draft_shape a);
/* Least squares of us[i] ~ c0 + c1 m[i] + c2 n[i] m[i] over n_pts points (>= 3). ARB_E_INVAL
   when the design is singular. */
int arb_nde_latency_fit(const int *n, const int *m, const double *us, int n_pts, double c[3]);

/* f[ARB_NDE_F]: entropies of p_prev, q_prev, q_root (nats); KL(p_prev||q_prev),
   KL(q_prev||p_prev) (zeros floored at 1e-12), L1(p_prev, q_prev); log n; T; top-p;
   t_d(n, 1), t_t(n, 1) in ms. */
void arb_nde_features(const double *p_prev, const double *q_prev, const double *q_root, int V, int n,
                      const arb_sampling *smp, const arb_nde_latency *lat, double *f);

#endif
