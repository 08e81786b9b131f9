/* arguard.c — see arguard.h. */
#include "arguard.h"

#include <math.h>
#include <string.h>

/* Decay per observation: the speculative rate moves with the text (a window of ~20 steps), AR's
   only with the context length (~5 steps suffice; its steps cost the same every time). The step
   times are slower EMAs: a step's cost is the method's and the machine's, not the text's. */
#define SPEC_DECAY 0.95
#define AR_DECAY 0.8
#define STEP_EMA 0.1
#define CONF_Z 1.0 /* speculation falls back when even its rate one standard error up is slower */

void arb_arguard_init(arb_arguard *g)
{
    memset(g, 0, sizeof *g);
    g->backoff = ARB_ARGUARD_BACKOFF_MIN;
    arb_arguard_begin_prompt(g);
}

/* Speculative steps of the next probe: SPEC_PROBE, or after a fallback as many as fit in
   PROBE_SHARE of its time. */
static int probe_len(const arb_arguard *g)
{
    if (g->last_fallback == 0 || !(g->spec_step_us > 0) || !(g->ar_step_us > 0))
        return ARB_ARGUARD_SPEC_PROBE;
    const double n = ARB_ARGUARD_PROBE_SHARE * g->last_fallback * g->ar_step_us / g->spec_step_us;
    return n < ARB_ARGUARD_PROBE_MIN ? ARB_ARGUARD_PROBE_MIN : n > ARB_ARGUARD_SPEC_PROBE ? ARB_ARGUARD_SPEC_PROBE : (int)n;
}

static void start_probe(arb_arguard *g)
{
    g->ar_phase = g->probing = false;
    g->left = probe_len(g);
    g->spec_tok = g->spec_tok2 = g->spec_us = g->spec_w = g->spec_w2 = 0;
}

void arb_arguard_begin_prompt(arb_arguard *g) { start_probe(g); }

double arb_arguard_rate(const arb_arguard *g, bool ar)
{
    const double tok = ar ? g->ar_tok : g->spec_tok, us = ar ? g->ar_us : g->spec_us;
    return (ar ? g->ar_n > 0 : g->spec_w > 0) && us > 0 ? tok / us * 1e6 : 0.0;
}

/* Speculation's rate one standard error up: tokens per step vary (0 to the tree's depth
   accepted), and a few unlucky steps of a method that wins on average must not send it to AR;
   a method clearly slower falls back after its first probe even so. The decayed sums' effective
   sample size is (sum w)^2 / sum w^2. */
static double spec_rate_hi(const arb_arguard *g)
{
    if (!(g->spec_w > 0) || !(g->spec_us > 0))
        return 0.0;
    const double mean = g->spec_tok / g->spec_w, var = fmax(0.0, g->spec_tok2 / g->spec_w - mean * mean);
    const double n_eff = g->spec_w * g->spec_w / g->spec_w2;
    return (mean + CONF_Z * sqrt(var / n_eff)) / (g->spec_us / g->spec_w) * 1e6;
}

/* Compare the two measured rates: speculate on (ties and near-ties go to speculation, which
   also learns) or fall back to AR for the backoff. */
static void decide(arb_arguard *g)
{
    g->probing = false;
    if (spec_rate_hi(g) < arb_arguard_rate(g, true)) {
        g->ar_phase = true;
        g->left = g->last_fallback = g->backoff;
        g->backoff = g->backoff * 2 < ARB_ARGUARD_BACKOFF_MAX ? g->backoff * 2 : ARB_ARGUARD_BACKOFF_MAX;
        g->n_fallbacks++;
    } else {
        g->ar_phase = false;
        g->left = ARB_ARGUARD_CHECK;
        g->backoff = ARB_ARGUARD_BACKOFF_MIN;
        g->last_fallback = 0;
    }
}

static double ema(double old, double x) { return old > 0 ? (1 - STEP_EMA) * old + STEP_EMA * x : x; }

void arb_arguard_observe(arb_arguard *g, int committed, double us)
{
    if (us < 0)
        us = 0;
    if (g->ar_phase) {
        g->ar_tok = AR_DECAY * g->ar_tok + committed;
        g->ar_us = AR_DECAY * g->ar_us + us;
        g->ar_n++;
        g->ar_step_us = ema(g->ar_step_us, us);
    } else {
        g->spec_tok = SPEC_DECAY * g->spec_tok + committed;
        g->spec_tok2 = SPEC_DECAY * g->spec_tok2 + (double)committed * committed;
        g->spec_us = SPEC_DECAY * g->spec_us + us;
        g->spec_w = SPEC_DECAY * g->spec_w + 1;
        g->spec_w2 = SPEC_DECAY * SPEC_DECAY * g->spec_w2 + 1;
        g->since_ar++;
        g->spec_step_us = ema(g->spec_step_us, us);
    }
    if (--g->left > 0)
        return;
    if (!g->ar_phase) {
        if (g->ar_n == 0 || g->since_ar >= ARB_ARGUARD_REFRESH) { /* measure AR first */
            g->ar_phase = g->probing = true;
            g->left = ARB_ARGUARD_AR_PROBE;
            return;
        }
        decide(g);
        return;
    }
    g->since_ar = 0;
    if (g->probing) { /* AR re-measured: compare with the speculative rate at once */
        decide(g);
        return;
    }
    start_probe(g); /* a fallback ended: speculate again, judged on fresh steps only */
}
