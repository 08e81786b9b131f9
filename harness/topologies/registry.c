/* registry.c — the topology table (see topology.h): each topology listed once. */
#include "registry.h"
#include "topology.h"

static const arb_topology_i *const topologies[] = {&arb_topology_spine, &arb_topology_iso,
                                                   &arb_topology_sequoia, &arb_topology_dynamic};

static const char *name_at(int i) { return arb_topology_at(i) ? topologies[i]->name : NULL; }

const arb_topology_i *arb_topology_find(const char *name)
{
    if (name && !name[0]) /* "" = the drafter's own shape; GOOSE's is the spine tree */
        name = "spine";
    return arb_topology_at(arb_registry_index(name_at, name, false));
}

const arb_topology_i *arb_topology_at(int i)
{
    return i >= 0 && (size_t)i < sizeof topologies / sizeof topologies[0] ? topologies[i] : NULL;
}

const char *arb_topology_names(char *buf, size_t cap) { return arb_registry_names(name_at, buf, cap); }
