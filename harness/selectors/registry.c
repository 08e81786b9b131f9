/* registry.c — the selector table (see selector.h): each selector listed once. */
#include "registry.h"
#include "selector.h"

static const arb_selector_i *const selectors[] = {&arb_selector_fixed, &arb_selector_nde};

const arb_selector_i *arb_selector_at(int i)
{
    return i >= 0 && (size_t)i < sizeof selectors / sizeof selectors[0] ? selectors[i] : NULL;
}

static const char *name_at(int i) { return arb_selector_at(i) ? selectors[i]->name : NULL; }

const arb_selector_i *arb_selector_find(const char *name)
{
    return arb_selector_at(arb_registry_index(name_at, name, false));
}

const char *arb_selector_names(char *buf, size_t cap) { return arb_registry_names(name_at, buf, cap); }
