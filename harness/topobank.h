/* topobank.h — EntMTP's TopologyBank (docs/spec/drafting.md §10.4): every index-path tree a
 * head drafter may use, preprocessed once (canonical parent/rank/depth, children per node,
 * candidates needed per head, the rank-0 chain), so switching trees in the step loop is storing
 * a pointer — no per-step mask or buffer building.
 *
 *     arb_topobank *b;
 *     arb_topobank_load("bank.json", 4, &b, &err);      // {"trees":[{"choices":[[0],..]}, ..], ...}
 *     const arb_topo *t = arb_topobank_get(b, k);      // node i: t->parent[i], t->rank[i], ...
 *     arb_topobank_free(b);
 *
 * The bank file is what `arbor entmtp bank` writes: trees sorted by node count, plus the
 * scheduler settings calibrated for them ("static", "t_plus", "t_minus", "tau", "ladder").
 */
#ifndef ARB_TOPOBANK_H
#define ARB_TOPOBANK_H

#include <stdbool.h>
#include <stdint.h>

#include "entmtp_frontier.h"
#include "error.h"

#define ARB_TOPOBANK_MAX 32 /* trees per bank */

typedef struct arb_topo {          /* one preprocessed tree; node 0 = the anchor */
    int n;                         /* nodes incl. the anchor */
    int max_depth;
    int32_t parent[ARB_ETREE_MAX]; /* canonical order: parent < index */
    int16_t rank[ARB_ETREE_MAX];   /* index among its parent's children */
    int16_t depth[ARB_ETREE_MAX];
    uint8_t n_kids[ARB_ETREE_MAX]; /* children per node */
    bool has_kids[ARB_ETREE_MAX];  /* n_kids > 0 */
    int level_start[ARB_ETREE_DEPTH + 2]; /* first node of each depth (n past the deepest) */
    int n_top[ARB_ETREE_DEPTH];    /* candidates head d-1 must offer: max rank at depth d + 1 */
    int chain[ARB_ETREE_DEPTH + 1];/* node of the all-zero path at depth d, -1 past its end */
} arb_topo;

typedef struct arb_topobank_sched { /* scheduler settings stored with the bank (-1 / NaN: unset) */
    int static_idx;                 /* static task tree (highest tok/s) */
    int t_plus, t_minus;            /* EntMTPτ pair */
    double tau;                     /* EntMTPτ threshold (tau_on = tau_off) */
    char feature[8];                /* the feature tau was calibrated on: lit | gD | sum */
    int n_ladder;                   /* ladder thresholds (bank size - 1, ascending) */
    double ladder[ARB_TOPOBANK_MAX];
} arb_topobank_sched;

typedef struct arb_topobank {
    int n;
    arb_topo t[ARB_TOPOBANK_MAX];
    arb_topobank_sched sched;
} arb_topobank;

/* Preprocess an index-path tree; ARB_E_INVAL when it is deeper than max_depth (the heads). */
int arb_topo_from_etree(const arb_etree *e, int max_depth, arb_topo *out, arb_err *err);
/* A bank holding the trees parsed from choices texts (n <= ARB_TOPOBANK_MAX); sched unset. */
int arb_topobank_new(const char *const *choices, int n, int max_depth, arb_topobank **out, arb_err *err);
/* A bank file (JSON): {"trees":[{"choices":[[..],..]}, ..], "static":k, "t_plus":k,
   "t_minus":k, "tau":x, "feature":"lit", "ladder":[..]}; errors name the file and JSON path. */
int arb_topobank_load(const char *path, int max_depth, arb_topobank **out, arb_err *err);
void arb_topobank_free(arb_topobank *b); /* NULL-safe */

#endif
