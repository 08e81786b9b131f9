/* test_arguard.c — the AR guard's schedule (arguard.h) on synthetic step timings: the fixed
 * opening (speculate, then measure AR), falling back while speculation is slower and backing
 * off, staying with speculation while it is faster and re-measuring AR now and then, following a
 * change of regime either way, and what a new prompt forgets; plus the method-level checks
 * (drafters that can skip a proposal, greedy only, run keys unchanged when off). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "arguard.h"
#include "config.h"
#include "method.h"

/* A step of either kind: speculation commits spec_tok tokens in spec_us, AR one in ar_us. */
typedef struct regime {
    double spec_tok, spec_us, ar_us;
} regime;

/* Run n steps under r; returns how many were AR steps. */
static int drive(arb_arguard *g, const regime *r, int n)
{
    int n_ar = 0;
    for (int i = 0; i < n; i++) {
        const bool ar = arb_arguard_ar_step(g);
        n_ar += ar;
        if (ar)
            arb_arguard_observe(g, 1, r->ar_us);
        else
            arb_arguard_observe(g, (int)r->spec_tok, r->spec_us);
    }
    return n_ar;
}

Test(arguard, opens_with_speculation_then_measures_ar)
{
    arb_arguard g;
    arb_arguard_init(&g);
    const regime fast = {3, 10e3, 5e3};
    for (int i = 0; i < ARB_ARGUARD_SPEC_PROBE; i++) {
        cr_assert_not(arb_arguard_ar_step(&g), "step %d speculates", i);
        arb_arguard_observe(&g, 3, 10e3);
    }
    for (int i = 0; i < ARB_ARGUARD_AR_PROBE; i++) {
        cr_assert(arb_arguard_ar_step(&g), "probe step %d is AR", i);
        arb_arguard_observe(&g, 1, 5e3);
    }
    cr_assert_float_eq(arb_arguard_rate(&g, true), 200.0, 1e-9);  /* 1 token / 5 ms */
    cr_assert_float_eq(arb_arguard_rate(&g, false), 300.0, 1e-9); /* 3 tokens / 10 ms */
    cr_assert_not(arb_arguard_ar_step(&g), "300 tok/s beats 200: speculate");
    cr_assert_eq(g.n_fallbacks, 0);
    (void)fast;
}

/* A probe after a fallback of f AR steps: PROBE_SHARE x f x (AR step / speculative step) steps,
   within [PROBE_MIN, SPEC_PROBE]. */
static int expected_probe(int f, double ar_us, double spec_us)
{
    int n = (int)(ARB_ARGUARD_PROBE_SHARE * f * ar_us / spec_us);
    return n < ARB_ARGUARD_PROBE_MIN ? ARB_ARGUARD_PROBE_MIN : n > ARB_ARGUARD_SPEC_PROBE ? ARB_ARGUARD_SPEC_PROBE : n;
}

Test(arguard, slower_speculation_falls_back_and_backs_off)
{
    arb_arguard g;
    arb_arguard_init(&g);
    const regime slow = {1.0, 6e3, 5e3}; /* speculation commits 1 token in 6 ms: 167 vs 200 tok/s */
    int n_ar = drive(&g, &slow, ARB_ARGUARD_SPEC_PROBE + ARB_ARGUARD_AR_PROBE);
    cr_assert_eq(n_ar, ARB_ARGUARD_AR_PROBE);
    cr_assert(arb_arguard_ar_step(&g), "slower speculation falls back at the first comparison");
    cr_assert_eq(g.n_fallbacks, 1);
    /* first fallback 16 AR steps, then a probe of at most 10 % of its time (1.3 steps of 6 ms
       after 16 of 5 ms: PROBE_MIN), then 32, 64, 128, 256, 256, ... */
    n_ar = drive(&g, &slow, ARB_ARGUARD_BACKOFF_MIN);
    cr_assert_eq(n_ar, ARB_ARGUARD_BACKOFF_MIN);
    const int probe = expected_probe(ARB_ARGUARD_BACKOFF_MIN, 5e3, 6e3);
    cr_assert_eq(probe, ARB_ARGUARD_PROBE_MIN);
    n_ar = drive(&g, &slow, probe);
    cr_assert_eq(n_ar, 0, "the fallback ends in a speculative probe");
    cr_assert_eq(g.n_fallbacks, 2);
    cr_assert_eq(g.left, 2 * ARB_ARGUARD_BACKOFF_MIN, "the next fallback is twice as long");
    n_ar = drive(&g, &slow, 4000);
    cr_assert_gt(n_ar, 3800, "AR steps %d of 4000", n_ar); /* probes of 8 per fallback of 256 */
    cr_assert_eq(g.backoff, ARB_ARGUARD_BACKOFF_MAX, "the backoff reached its cap");
    /* a speculative step as dear as 8 AR steps: its probes shrink to PROBE_MIN */
    arb_arguard_init(&g);
    const regime dear = {2.0, 40e3, 5e3};
    n_ar = drive(&g, &dear, 4000);
    cr_assert_eq(expected_probe(ARB_ARGUARD_BACKOFF_MIN, 5e3, 40e3), ARB_ARGUARD_PROBE_MIN);
    cr_assert_gt(n_ar, 3900, "AR steps %d of 4000", n_ar); /* 3 of 8 AR steps' cost per 256 */
}

Test(arguard, faster_speculation_stays_and_remeasures_ar)
{
    arb_arguard g;
    arb_arguard_init(&g);
    const regime fast = {2.0, 6e3, 5e3}; /* 333 vs 200 tok/s */
    const int n = 4 * ARB_ARGUARD_REFRESH;
    const int n_ar = drive(&g, &fast, n);
    /* the opening probe, then one probe per REFRESH speculative steps */
    cr_assert_geq(n_ar, ARB_ARGUARD_AR_PROBE * 3, "AR re-measured: %d AR steps", n_ar);
    cr_assert_leq(n_ar, ARB_ARGUARD_AR_PROBE * 5, "only probes: %d AR steps", n_ar);
    cr_assert_eq(g.n_fallbacks, 0);
}

Test(arguard, follows_a_change_of_regime)
{
    arb_arguard g;
    arb_arguard_init(&g);
    const regime fast = {2.0, 6e3, 5e3}, slow = {1.0, 8e3, 5e3};
    drive(&g, &fast, 100);
    cr_assert_eq(g.n_fallbacks, 0);
    /* speculation turns slow: a fallback within a few comparisons (the decayed estimate needs
       a few comparisons to cross AR's rate) */
    int steps = 0;
    while (!arb_arguard_ar_step(&g) && steps < 100)
        drive(&g, &slow, 1), steps++;
    cr_assert_lt(steps, 5 * ARB_ARGUARD_CHECK, "fell back after %d slow steps", steps);
    /* ... and fast again: speculation resumes by the end of the current backoff and probe */
    drive(&g, &slow, 200);
    const int backoff = g.backoff;
    steps = 0;
    int spec_run = 0;
    while (spec_run < 2 * ARB_ARGUARD_CHECK && steps < 10 * ARB_ARGUARD_BACKOFF_MAX) {
        spec_run = arb_arguard_ar_step(&g) ? 0 : spec_run + 1;
        drive(&g, &fast, 1), steps++;
    }
    cr_assert_lt(steps, backoff + 4 * ARB_ARGUARD_CHECK, "speculating again %d steps after the change", steps);
}

/* Steps committing 1 and 3 tokens in turn (mean 2) in us each; AR 1 token in 5 ms. */
static int drive_varied(arb_arguard *g, double us, int n)
{
    int n_ar = 0;
    for (int i = 0; i < n; i++) {
        const bool ar = arb_arguard_ar_step(g);
        n_ar += ar;
        arb_arguard_observe(g, ar ? 1 : 1 + 2 * (i & 1), ar ? 5e3 : us);
    }
    return n_ar;
}

Test(arguard, near_ties_stay_speculative)
{
    /* 2 tokens per 10.5 ms: 190 tok/s, 5 % under AR's 200 but within a standard error of it
       after the opening: speculation stays (only the AR probes) */
    arb_arguard g;
    arb_arguard_init(&g);
    int n_ar = drive_varied(&g, 10.5e3, 1000);
    cr_assert_eq(g.n_fallbacks, 0, "%d fallbacks", g.n_fallbacks);
    cr_assert_leq(n_ar, ARB_ARGUARD_AR_PROBE * (1 + 1000 / ARB_ARGUARD_REFRESH), "%d AR steps", n_ar);
    /* the same spread at 14 ms a step (143 tok/s): clearly slower, mostly AR */
    arb_arguard_init(&g);
    n_ar = drive_varied(&g, 14e3, 1000);
    cr_assert_gt(g.n_fallbacks, 0);
    cr_assert_gt(n_ar, 800, "%d AR steps of 1000", n_ar);
}

Test(arguard, a_new_prompt_forgets_speculation_keeps_ar)
{
    arb_arguard g;
    arb_arguard_init(&g);
    const regime slow = {1.0, 8e3, 5e3};
    drive(&g, &slow, 50);
    cr_assert_gt(g.ar_n, 0);
    cr_assert_gt(g.last_fallback, 0);
    arb_arguard_begin_prompt(&g);
    cr_assert_float_eq(g.spec_w, 0.0, 0.0);
    cr_assert_not(arb_arguard_ar_step(&g), "a prompt starts speculating");
    cr_assert_float_eq(arb_arguard_rate(&g, true), 200.0, 1e-6);
    /* after a fallback, the prompt's probe is capped like any probe after one */
    const int probe = expected_probe(g.last_fallback, 5e3, 8e3);
    cr_assert_lt(probe, ARB_ARGUARD_SPEC_PROBE);
    for (int i = 0; i < probe; i++) {
        cr_assert_not(arb_arguard_ar_step(&g), "probe step %d speculates", i);
        arb_arguard_observe(&g, 3, 8e3);
    }
    /* AR is known: compared at once, no AR probe; 375 > 200 tok/s */
    cr_assert_not(arb_arguard_ar_step(&g));
    cr_assert_eq(g.last_fallback, 0);
    /* speculation won: the next prompt gets the full opening probe */
    arb_arguard_begin_prompt(&g);
    cr_assert_eq(g.left, ARB_ARGUARD_SPEC_PROBE);
}

Test(arguard, method_checks)
{
    arb_err err = {0};
    arb_method_spec s;
    const char *ok[] = {"pld", "tr", "goose", "goose-auto", "sequoia-auto", "rest"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cr_assert_eq(arb_method_spec_preset(ok[i], &s, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_method_param_set(&s, "ar_guard", "true", &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_OK, "%s: %s", ok[i], err.msg);
    }
    cr_assert_eq(arb_method_spec_preset("lookahead", &s, &err), ARB_OK);
    cr_assert_eq(arb_method_param_set(&s, "ar_guard", "true", &err), ARB_OK);
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "ar_guard") && strstr(err.msg, "lookahead"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    cr_assert_eq(arb_method_param_set(&s, "ar_guard", "true", &err), ARB_OK);
    s.temperature = 0.7;
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "ar_guard") && strstr(err.msg, "greedy"), "%s", err.msg);
    /* off: absent from the method's JSON (run keys made before the guard stay); on: present */
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    char *js = arb_config_spec_json(&s);
    cr_assert_not_null(js);
    cr_assert_null(strstr(js, "ar_guard"), "%s", js);
    free(js);
    s.ar_guard = true;
    js = arb_config_spec_json(&s);
    cr_assert(strstr(js, "\"ar_guard\":true"), "%s", js);
    free(js);
}
