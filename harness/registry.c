/* registry.c — name lookup and name lists for the plug-in tables (registry.h). */
#include "registry.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int arb_registry_index(arb_registry_name_fn name_at, const char *name, bool ignore_case)
{
    const char *row;
    for (int i = 0; name && (row = name_at(i)); i++)
        if (ignore_case ? !strcasecmp(row, name) : !strcmp(row, name))
            return i;
    return -1;
}

const char *arb_registry_names(arb_registry_name_fn name_at, char *buf, size_t cap)
{
    size_t n = 0;
    const char *row;
    buf[0] = 0;
    for (int i = 0; n < cap && (row = name_at(i)); i++) {
        const int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", row);
        n += w > 0 ? (size_t)w : 0; /* past cap once truncated: the loop ends */
    }
    return buf;
}
