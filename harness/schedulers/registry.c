/* registry.c — the tree scheduler table (see scheduler.h). */
#include <stdio.h>
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

const arb_tree_sched_i *arb_tree_sched_at(int i)
{
    return i >= 0 && (size_t)i < sizeof policies / sizeof policies[0] ? policies[i] : NULL;
}

const char *arb_tree_sched_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; arb_tree_sched_at(i) && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", arb_tree_sched_at(i)->name);
    return buf;
}

arb_tree_sched_opts arb_tree_sched_default_opts(const arb_topobank *b)
{
    return (arb_tree_sched_opts){.static_idx = b->sched.static_idx, .t_plus = b->sched.t_plus,
                                 .t_minus = b->sched.t_minus, .tau_on = b->sched.tau, .tau_off = b->sched.tau,
                                 .n_ladder = b->sched.n_ladder, .ladder = b->sched.ladder};
}
