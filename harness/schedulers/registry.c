/* registry.c — the tree scheduler table (see scheduler.h). */
#include <string.h>

#include "scheduler.h"

static const arb_tree_sched_i *const policies[] = {&arb_tree_sched_static, &arb_tree_sched_entmtp_tau,
                                                   &arb_tree_sched_ladder};

const arb_tree_sched_i *arb_tree_sched_find(const char *name)
{
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        if (!strcmp(policies[i]->name, name))
            return policies[i];
    return NULL;
}

arb_tree_sched_opts arb_tree_sched_default_opts(const arb_topobank *b)
{
    return (arb_tree_sched_opts){.static_idx = b->sched.static_idx, .t_plus = b->sched.t_plus,
                                 .t_minus = b->sched.t_minus, .tau_on = b->sched.tau, .tau_off = b->sched.tau,
                                 .n_ladder = b->sched.n_ladder, .ladder = b->sched.ladder};
}
