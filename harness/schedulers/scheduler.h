/* scheduler.h — per-step tree schedulers for head drafters (EntMTP, docs/spec/drafting.md §10.6):
 * a policy maps this step's scalar feature s (features.h) to an index into a TopologyBank
 * (topobank.h). Any tree drafter can drive one: create it once with the bank, `begin` per prompt,
 * `pick` once per step before proposing (the decision for step t+1 uses s computed after step t).
 *
 *     const arb_tree_sched_i *si = arb_tree_sched_find("entmtp_tau");
 *     arb_tree_sched_opts o = arb_tree_sched_default_opts(bank);    // the bank file's settings
 *     void *st; si->create(bank, &o, &st, &err);
 *     si->begin(st);                                 // a prompt starts in state − (T−)
 *     int k = si->pick(st, s);                       // tree = &bank->t[k]: a pointer swap
 *     si->destroy(st);
 *
 * Adding a policy: (1) harness/schedulers/<name>.c defining `const arb_tree_sched_i
 * arb_tree_sched_<name>`; (2) an extern below and a row in registry.c; (3) a case in
 * tests/test_tree_sched.c. pick allocates nothing.
 */
#ifndef ARB_SCHEDULER_H
#define ARB_SCHEDULER_H

#include <stddef.h>

#include "error.h"
#include "topobank.h"

typedef struct arb_tree_sched_opts {
    int static_idx;         /* static: the tree always used */
    int t_plus, t_minus;    /* entmtp_tau: aggressive / conservative tree */
    double tau_on, tau_off; /* entmtp_tau: − → + when s > tau_on; + → − when s <= tau_off */
    int n_ladder;           /* ladder: thresholds, bank size - 1 */
    const double *ladder;   /* ascending; tree k = #{j : s > ladder[j]} (0-based) */
} arb_tree_sched_opts;

typedef struct arb_tree_sched_i {
    const char *name;
    /* Validate o against the bank (indices in range, tau_off <= tau_on, ladder ascending). */
    int (*create)(const arb_topobank *bank, const arb_tree_sched_opts *o, void **st, arb_err *err);
    void (*destroy)(void *st);             /* NULL-safe */
    void (*begin)(void *st);               /* before a prompt: the initial state */
    int (*pick)(void *st, double s);       /* the bank index for the next step */
    int (*state)(const void *st);          /* for the log: hysteresis 0 (−) / 1 (+), else -1 */
} arb_tree_sched_i;

extern const arb_tree_sched_i arb_tree_sched_static, arb_tree_sched_entmtp_tau, arb_tree_sched_ladder;

/* The registry: policy by name ("static", "entmtp_tau", "ladder"), NULL if unknown. */
const arb_tree_sched_i *arb_tree_sched_find(const char *name);
const arb_tree_sched_i *arb_tree_sched_at(int i);          /* row i, NULL past the end */
const char *arb_tree_sched_names(char *buf, size_t cap);   /* ", "-separated into buf; returns buf */
/* The bank's stored settings (static, T+/T−, tau_on = tau_off = tau, ladder). */
arb_tree_sched_opts arb_tree_sched_default_opts(const arb_topobank *bank);

#endif
