/* registry.c — the topology table (see topology.h): each topology listed once. */
#include <stdio.h>
#include <string.h>

#include "topology.h"

static const arb_topology_i *const topologies[] = {&arb_topology_spine, &arb_topology_iso,
                                                   &arb_topology_sequoia};

const arb_topology_i *arb_topology_find(const char *name)
{
    if (name && !name[0]) /* "" = the drafter's own shape; GOOSE's is the spine tree */
        name = "spine";
    for (size_t i = 0; name && i < sizeof topologies / sizeof topologies[0]; i++)
        if (!strcmp(topologies[i]->name, name))
            return topologies[i];
    return NULL;
}

const arb_topology_i *arb_topology_at(int i)
{
    return i >= 0 && (size_t)i < sizeof topologies / sizeof topologies[0] ? topologies[i] : NULL;
}

const char *arb_topology_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; arb_topology_at(i) && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", arb_topology_at(i)->name);
    return buf;
}
