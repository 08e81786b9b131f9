/* chainbudget.c — see chainbudget.h. */
#include "chainbudget.h"

#include <string.h>

void arb_chain_cost_init(arb_chain_cost *c, const arb_cost_model *cm, int n_max)
{
    memset(c, 0, sizeof *c);
    n_max = n_max < 1 ? 1 : n_max > ARB_CHAIN_NODES_MAX ? ARB_CHAIN_NODES_MAX : n_max;
    c->n_max = n_max;
    for (int n = 1; n <= n_max; n++)
        c->w_us[n] = arb_cost_us(cm, n, 0);
    c->ctx_us = cm->ctx_us;
    c->ctx0_us = cm->ctx0_us;
}

double arb_chain_cost_us(const arb_chain_cost *c, int n, int L)
{
    n = n < 1 ? 1 : n > c->n_max ? c->n_max : n;
    return c->w_us[n] + (c->ctx0_us + c->ctx_us * (double)n) * (double)(L > 0 ? L : 0);
}

int arb_chain_pick(const arb_chain_cost *c, double p1, double pc, int k_min, int k_max, int L)
{
    if (k_max <= 0)
        return 0;
    if (c->n_max <= 0)
        return k_max;
    k_max = k_max < c->n_max - 1 ? k_max : c->n_max - 1;
    k_min = k_min < 0 ? 0 : k_min > k_max ? k_max : k_min;
    /* E[tokens](k) built up term by term: 1 + p1 (1 + pc + ... + pc^(k-1)) */
    double tok = 1.0, term = p1, best_rate = -1.0;
    int best = k_min;
    for (int k = 0; k <= k_max; k++) {
        if (k > 0) {
            tok += term;
            term *= pc;
        }
        if (k < k_min)
            continue;
        const double t = arb_chain_cost_us(c, k + 1, L);
        const double rate = t > 0 ? tok / t : 0.0;
        if (rate > best_rate) /* strict: ties keep the shorter chain */
            best_rate = rate, best = k;
    }
    return best;
}

void arb_chain_stats_reset(arb_chain_stats *s) { memset(s, 0, sizeof *s); }

void arb_chain_stats_observe(arb_chain_stats *s, int proposed, int accepted)
{
    if (proposed <= 0)
        return;
    accepted = accepted < 0 ? 0 : accepted > proposed ? proposed : accepted;
    s->first_try += 1;
    if (accepted == 0)
        return;
    s->first_hit += 1;
    /* positions 2..proposed are tried while their predecessor was accepted: 2..min(accepted+1, proposed) */
    const int tried = (accepted + 1 < proposed ? accepted + 1 : proposed) - 1;
    s->cont_try += tried;
    s->cont_hit += accepted - 1;
}

void arb_chain_stats_decay(arb_chain_stats *s, double f)
{
    s->first_try *= f;
    s->first_hit *= f;
    s->cont_try *= f;
    s->cont_hit *= f;
}

double arb_chain_stats_p1(const arb_chain_stats *s) { return (s->first_hit + 1.0) / (s->first_try + 2.0); }
double arb_chain_stats_pc(const arb_chain_stats *s) { return (s->cont_hit + 1.0) / (s->cont_try + 2.0); }
