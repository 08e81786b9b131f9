/* ladder.c — the threshold ladder (docs/spec/drafting.md §10.6): bank trees sorted by size,
 * thresholds τ_1 < .. < τ_{K-1}; tree T_k with k = 1 + #{j : s > τ_j} (0-based here). */
#include <stdlib.h>

#include "scheduler.h"

typedef struct ld_state {
    int n;                             /* thresholds */
    double tau[ARB_TOPOBANK_MAX];
} ld_state;

static int ld_create(const arb_topobank *b, const arb_tree_sched_opts *o, void **st, arb_err *err)
{
    *st = NULL;
    if (o->n_ladder != b->n - 1 || !o->ladder)
        return ARB_ERR(err, ARB_E_INVAL, "scheduler ladder: %d thresholds for %d trees (need %d)", o->n_ladder, b->n,
                       b->n - 1);
    for (int j = 1; j < o->n_ladder; j++)
        if (!(o->ladder[j] >= o->ladder[j - 1]))
            return ARB_ERR(err, ARB_E_INVAL, "scheduler ladder: thresholds not ascending at %d", j);
    for (int k = 1; k < b->n; k++)
        if (b->t[k].n < b->t[k - 1].n)
            return ARB_ERR(err, ARB_E_INVAL, "scheduler ladder: bank trees not sorted by size at %d", k);
    ld_state *l = calloc(1, sizeof *l);
    if (!l)
        return ARB_ERR(err, ARB_E_NOMEM, "scheduler ladder: out of memory");
    l->n = o->n_ladder;
    for (int j = 0; j < l->n; j++)
        l->tau[j] = o->ladder[j];
    *st = l;
    return ARB_OK;
}

static void ld_destroy(void *st) { free(st); }
static void ld_begin(void *st) { (void)st; }

static int ld_pick(void *st, double s)
{
    const ld_state *l = st;
    int k = 0;
    for (int j = 0; j < l->n; j++)
        k += s > l->tau[j];
    return k;
}

static int ld_state_of(const void *st) { return -1; }

const arb_tree_sched_i arb_tree_sched_ladder = {
    .name = "ladder", .create = ld_create, .destroy = ld_destroy, .begin = ld_begin, .pick = ld_pick,
    .state = ld_state_of,
};
