/* registry.c — the tree scheduler table (see scheduler.h). */
#include "registry.h"
#include "scheduler.h"

static const arb_tree_sched_i *const policies[] = {&arb_tree_sched_static, &arb_tree_sched_entmtp_tau,
                                                   &arb_tree_sched_ladder};

const arb_tree_sched_i *arb_tree_sched_at(int i)
{
    return i >= 0 && (size_t)i < sizeof policies / sizeof policies[0] ? policies[i] : NULL;
}

static const char *name_at(int i) { return arb_tree_sched_at(i) ? policies[i]->name : NULL; }

const arb_tree_sched_i *arb_tree_sched_find(const char *name)
{
    return arb_tree_sched_at(arb_registry_index(name_at, name, false));
}

const char *arb_tree_sched_names(char *buf, size_t cap) { return arb_registry_names(name_at, buf, cap); }

arb_tree_sched_opts arb_tree_sched_default_opts(const arb_topobank *b)
{
    return (arb_tree_sched_opts){.static_idx = b->sched.static_idx, .t_plus = b->sched.t_plus,
                                 .t_minus = b->sched.t_minus, .tau_on = b->sched.tau, .tau_off = b->sched.tau,
                                 .n_ladder = b->sched.n_ladder, .ladder = b->sched.ladder};
}
