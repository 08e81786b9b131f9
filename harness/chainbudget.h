/* chainbudget.h — per-step chain length: how many drafted tokens of a linear chain (PLD's
 * continuation, GOOSE's bypass chain) to send to the target this step, from acceptance
 * estimates and this machine's eval cost at the current context length (docs/cost-model.md,
 * "budget auto").
 *
 *     E[tokens](k) = 1 + p1 · (1 + pc + pc^2 + ... + pc^(k-1))   (k drafted; the bonus counted)
 *     k* = argmax_{k_min <= k <= k_max}  E[tokens](k) / t(k + 1, L)
 *
 * p1 is the chance the chain's first token is accepted, pc that a later one is given its
 * predecessor was. Two numbers, not one geometric p: a context-match chain is bimodal (a wrong
 * match fails at its first token, a right one copies on), which one p fits neither way.
 * t(n, L) = w(n) + (b + a n) L is the cost model (costmodel.h) tabulated for n <= ARB_CHAIN_NODES_MAX.
 *
 *     arb_chain_cost c;   arb_chain_cost_init(&c, &cost_model, 33);      // at create/resolve
 *     arb_chain_stats s;  arb_chain_stats_reset(&s);                     // per prompt
 *     int k = arb_chain_pick(&c, arb_chain_stats_p1(&s), arb_chain_stats_pc(&s), 1, len, n_S);
 *     arb_chain_stats_observe(&s, k, accepted);                          // after verification
 *
 * [CHOICE] (the papers fix chain lengths: PLD 10, GOOSE's bypass C_max or B - 1): ratio
 * maximisation per step, the renewal-reward optimum for independent steps; Beta(1, 1) priors,
 * so a prompt starts at p1 = pc = 0.5. Plain data, no allocation: the step loop calls pick and
 * observe.
 */
#ifndef ARB_CHAINBUDGET_H
#define ARB_CHAINBUDGET_H

#include "costmodel.h"

#define ARB_CHAIN_NODES_MAX 64 /* longest chain tabulated, anchor counted */

typedef struct arb_chain_cost {
    int n_max;                            /* chains of up to n_max nodes (anchor counted); 0 = unset */
    double w_us[ARB_CHAIN_NODES_MAX + 1]; /* w(n) in µs for n = 1..n_max (index 0 unused) */
    double ctx_us;                        /* a: µs per node per cached token */
    double ctx0_us;                       /* b: µs per cached token per eval */
} arb_chain_cost;

/* Tabulate cm for chains of 1..n_max nodes (n_max clamped to [1, ARB_CHAIN_NODES_MAX]). */
void arb_chain_cost_init(arb_chain_cost *c, const arb_cost_model *cm, int n_max);
/* t(n, L) in µs; n clamped to [1, n_max]. */
double arb_chain_cost_us(const arb_chain_cost *c, int n, int L);

/* The number of drafted tokens k in [k_min, k_max] (k_max clamped to n_max - 1) maximising
   E[tokens](k) / t(k + 1, L); ties go to the shorter chain. Returns k_max when c is unset
   (n_max 0: no cost information, the fixed-length behaviour), 0 when k_max <= 0. */
int arb_chain_pick(const arb_chain_cost *c, double p1, double pc, int k_min, int k_max, int L);

/* Acceptance counts of the chains proposed so far (first token, later tokens). */
typedef struct arb_chain_stats {
    double first_try, first_hit; /* chains proposed / whose first token was accepted */
    double cont_try, cont_hit;   /* later tokens reached (predecessor accepted) / accepted */
} arb_chain_stats;

void arb_chain_stats_reset(arb_chain_stats *s);
/* A chain of `proposed` tokens of which the first `accepted` were accepted (0 <= accepted <=
   proposed; proposed 0 is ignored). */
void arb_chain_stats_observe(arb_chain_stats *s, int proposed, int accepted);
/* Every count times f (0 < f <= 1): older chains weigh less (the dynamic tree's decay). */
void arb_chain_stats_decay(arb_chain_stats *s, double f);
/* Beta(1, 1)-smoothed estimates (hits + 1) / (trials + 2): 0.5 before any observation. */
double arb_chain_stats_p1(const arb_chain_stats *s);
double arb_chain_stats_pc(const arb_chain_stats *s);

#endif
