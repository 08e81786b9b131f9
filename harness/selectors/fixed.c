/* fixed.c — the `fixed` selector: the configured (k, l, b) every step (selector.h). */
#include <stdlib.h>

#include "selector.h"

static int fixed_create(const arb_selector_opts *o, void **st, arb_err *err)
{
    *st = NULL;
    arb_draft_shape *s = malloc(sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "selector fixed: out of memory");
    *s = o->shape;
    *st = s;
    return ARB_OK;
}

static arb_draft_shape fixed_select(void *st, const arb_selector_in *in)
{
    (void)in;
    return *(const arb_draft_shape *)st;
}

static void fixed_destroy(void *st) { free(st); }

const arb_selector_i arb_selector_fixed = {
    .name = "fixed", .needs_laws = false, .create = fixed_create, .select = fixed_select, .destroy = fixed_destroy,
};
