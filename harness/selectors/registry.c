/* registry.c — the selector table (see selector.h): each selector listed once. */
#include <stdio.h>
#include <string.h>

#include "selector.h"

static const arb_selector_i *const selectors[] = {&arb_selector_fixed, &arb_selector_nde};

const arb_selector_i *arb_selector_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof selectors / sizeof selectors[0]; i++)
        if (!strcmp(selectors[i]->name, name))
            return selectors[i];
    return NULL;
}

const arb_selector_i *arb_selector_at(int i)
{
    return i >= 0 && (size_t)i < sizeof selectors / sizeof selectors[0] ? selectors[i] : NULL;
}

const char *arb_selector_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; arb_selector_at(i) && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", arb_selector_at(i)->name);
    return buf;
}
