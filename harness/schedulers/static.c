/* static.c — the static policy: always the bank's static task tree (EntMTP's "EntMTP" row). */
#include <stdlib.h>

#include "scheduler.h"

static int st_create(const arb_topobank *b, const arb_tree_sched_opts *o, void **st, arb_err *err)
{
    *st = NULL;
    if (o->static_idx < 0 || o->static_idx >= b->n)
        return ARB_ERR(err, ARB_E_INVAL, "scheduler static: static tree %d not in the bank (0..%d)", o->static_idx,
                       b->n - 1);
    int *k = malloc(sizeof *k);
    if (!k)
        return ARB_ERR(err, ARB_E_NOMEM, "scheduler static: out of memory");
    *k = o->static_idx;
    *st = k;
    return ARB_OK;
}

static void st_destroy(void *st) { free(st); }
static void st_begin(void *st) { (void)st; }
static int st_pick(void *st, double s) { return *(int *)st; }
static int st_state(const void *st) { return -1; }

const arb_tree_sched_i arb_tree_sched_static = {
    .name = "static", .create = st_create, .destroy = st_destroy, .begin = st_begin, .pick = st_pick,
    .state = st_state,
};
