/* hysteresis.c — EntMTPτ, the hysteretic binary policy (docs/spec/drafting.md §10.6): state −
 * uses T−, state + uses T+; − → + when s > tau_on, + → − when s <= tau_off. With tau_off <
 * tau_on a feature that stays between the two never switches (no per-step jitter). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "scheduler.h"

typedef struct hy_state {
    int t_plus, t_minus;
    double on, off;
    bool plus; /* current state */
} hy_state;

static int hy_create(const arb_topobank *b, const arb_tree_sched_opts *o, void **st, arb_err *err)
{
    *st = NULL;
    if (o->t_plus < 0 || o->t_plus >= b->n || o->t_minus < 0 || o->t_minus >= b->n)
        return ARB_ERR(err, ARB_E_INVAL, "scheduler entmtp_tau: T+ %d / T- %d not in the bank (0..%d)", o->t_plus,
                       o->t_minus, b->n - 1);
    if (!(o->tau_off <= o->tau_on) || isnan(o->tau_on))
        return ARB_ERR(err, ARB_E_INVAL, "scheduler entmtp_tau: tau_off %g must be <= tau_on %g (both set)",
                       o->tau_off, o->tau_on);
    hy_state *h = calloc(1, sizeof *h);
    if (!h)
        return ARB_ERR(err, ARB_E_NOMEM, "scheduler entmtp_tau: out of memory");
    *h = (hy_state){.t_plus = o->t_plus, .t_minus = o->t_minus, .on = o->tau_on, .off = o->tau_off};
    *st = h;
    return ARB_OK;
}

static void hy_destroy(void *st) { free(st); }
static void hy_begin(void *st) { ((hy_state *)st)->plus = false; } /* initial − [CHOICE, §10.6] */

static int hy_pick(void *st, double s)
{
    hy_state *h = st;
    if (!h->plus && s > h->on)
        h->plus = true;
    else if (h->plus && s <= h->off)
        h->plus = false;
    return h->plus ? h->t_plus : h->t_minus;
}

static int hy_state_of(const void *st) { return ((const hy_state *)st)->plus; }

const arb_tree_sched_i arb_tree_sched_entmtp_tau = {
    .name = "entmtp_tau", .create = hy_create, .destroy = hy_destroy, .begin = hy_begin, .pick = hy_pick,
    .state = hy_state_of,
};
