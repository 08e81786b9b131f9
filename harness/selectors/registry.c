/* registry.c — the selector table (see selector.h). */
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

const char *arb_selector_names(void) { return "fixed, nde"; }
