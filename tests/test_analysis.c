/* test_analysis.c — GOOSE Propositions 1-2, the tree-yield evaluator (against Monte Carlo)
 * and the Appendix E.4 accumulator (docs/spec/drafting.md §4.8). */
#include <criterion/criterion.h>
#include <math.h>

#include "analysis.h"

Test(analysis, proposition_test_vectors)
{
    double w[6], kappa;
    cr_assert_eq(arb_goose_prop2(0.21, 0.033, 6, 54, w, &kappa), 0);
    cr_assert_float_eq(kappa, 46.5077, 1e-4);
    cr_assert_float_eq(w[0], 50.254, 1e-3);
    cr_assert_float_eq(w[1], 3.746, 1e-3);
    for (int i = 2; i < 6; i++)
        cr_assert_float_eq(w[i], 0.0, 1e-12);
    cr_assert_float_eq(w[0] + w[1], 54.0, 1e-9, "widths spend B_b");
    cr_assert_float_eq(arb_goose_prop1(0.21, 0.033, 6, w, 6), 1.9517, 1e-4);
    cr_assert_eq(arb_goose_prop2(0.5, 0.0, 6, 54, w, &kappa), -1, "p_t must be in (0,1)");
    /* p_s = 1: kappa = 0, uniform widths */
    cr_assert_eq(arb_goose_prop2(1.0, 0.2, 4, 40, w, &kappa), 0);
    cr_assert_float_eq(kappa, 0.0, 1e-12);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(w[i], 10.0, 1e-9);
    cr_assert_float_eq(arb_goose_ell(0.5, 3), 0.75, 1e-12);
}

Test(analysis, iso_yield_vectors)
{
    cr_assert_float_eq(arb_iso_yield(3, 60, 0.033), 1.10584, 1e-5);
    cr_assert_float_eq(arb_iso_yield(3, 60, 0.3), 2.44503, 1e-5);
    cr_assert_float_eq(arb_iso_yield(3, 1, 0.9), 1.0, 1e-12);
}

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static double urand(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) * 0x1.0p-53;
}

Test(analysis, yield_matches_monte_carlo_of_the_independent_model)
{
    /* a spine tree: anchor -> s1 -> s2 (spine), TR children under anchor and s1 */
    arb_tree t;
    arb_tree_init(&t, 16, NULL);
    arb_tree_reset(&t, 0);
    int s1 = arb_tree_add(&t, 0, 1, ARB_SRC_PLD, 0, NAN);
    int s2 = arb_tree_add(&t, s1, 2, ARB_SRC_PLD, 0, NAN);
    t.flags[s1] |= ARB_NODE_SPINE;
    t.flags[s2] |= ARB_NODE_SPINE;
    int b0 = arb_tree_add(&t, 0, 3, ARB_SRC_TR, 0, 0.5f);
    arb_tree_add(&t, 0, 4, ARB_SRC_TR, 1, 0.2f);
    arb_tree_add(&t, b0, 5, ARB_SRC_TR, 0, 0.5f);
    arb_tree_add(&t, s1, 6, ARB_SRC_TR, 0, 0.5f);
    arb_tree_finalize(&t);
    double ps = 0.6, pt = 0.25;
    double y = arb_tree_yield(&t, ps, pt);
    /* simulate: at each node try children spine first then by rank; each is correct with its p */
    const int N = 1000000;
    double sum = 0, sum2 = 0;
    for (int it = 0; it < N; it++) {
        int v = 0, tok = 1;
        for (;;) {
            int next = -1;
            /* order: spine children first, then rank (the list is index order; spine first
               here because spine nodes were added first) */
            for (int c = t.first_child[v]; c >= 0 && next < 0; c = t.next_sibling[c]) {
                double p = (t.flags[c] & ARB_NODE_SPINE) ? ps : pt;
                if (urand() < p)
                    next = c;
            }
            if (next < 0)
                break;
            v = next;
            tok++;
        }
        sum += tok;
        sum2 += (double)tok * tok;
    }
    double mean = sum / N, var = sum2 / N - mean * mean, se = sqrt(var / N);
    cr_assert_leq(fabs(mean - y), 3 * se, "MC %.5f vs exact %.5f (se %.5f)", mean, y, se);
    arb_tree_release(&t);
}

Test(analysis, e4_accumulates_tree_and_bypass_steps)
{
    arb_e4 e = {0};
    arb_step_record r = {0};
    r.mode = ARB_MODE_TREE;
    r.n_spine = 6;
    r.acc_spine = 2;
    r.prop_by_src[ARB_STAT_TR] = 50;
    r.acc_by_src[ARB_STAT_TR] = 2;
    for (int i = 0; i < 10; i++)
        arb_e4_add(&e, &r);
    r.mode = ARB_MODE_AR; /* ignored */
    arb_e4_add(&e, &r);
    r.mode = ARB_MODE_BYPASS; /* counts for p_s, not for m */
    r.n_spine = 20;
    r.acc_spine = 10;
    r.prop_by_src[ARB_STAT_TR] = 0;
    r.acc_by_src[ARB_STAT_TR] = 0;
    arb_e4_add(&e, &r);
    arb_e4_finish(&e, 60, 6, 300, 100);
    cr_assert_float_eq(e.p_s, 30.0 / 80.0, 1e-12);
    cr_assert_float_eq(e.p_t, 20.0 / 500.0, 1e-12);
    cr_assert_float_eq(e.m_mean, 6.0, 1e-12);
    cr_assert_float_eq(e.tau_meas, 3.0, 1e-12);
    cr_assert(e.valid);
    double w[6], k;
    arb_goose_prop2(e.p_s, e.p_t, 6, 54, w, &k);
    cr_assert_float_eq(e.tau_eq1, arb_goose_prop1(e.p_s, e.p_t, 6, w, 6), 1e-12);
    cr_assert_eq(e.lower_ok, e.tau_eq1 <= 3.0);
    cr_assert_float_eq(e.tau_iso, arb_iso_yield(3, 60, e.p_t), 1e-12);
}
