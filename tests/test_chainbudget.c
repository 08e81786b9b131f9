/* test_chainbudget.c — the per-step chain length of budget "auto" (chainbudget.h): the pick
 * against hand-computed optima on hand-built cost profiles, its monotonicity in the acceptance
 * estimate and the context length, the acceptance counts, and the PLD drafter using both
 * (a chain that keeps failing shrinks to one token, one that keeps copying grows). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "chainbudget.h"
#include "drafters/drafter.h"
#include "method.h"
#include "tree.h"

/* w(n) = w1 + slope (n - 1) up to 64 nodes, attention a per node per token, b per token. */
static arb_chain_cost profile(double w1, double slope, double a, double b)
{
    arb_cost_model cm = {.n_knots = 2, .knot = {1, 64}, .w_us = {w1, w1 + slope * 63}, .ctx_us = a, .ctx0_us = b};
    arb_chain_cost c;
    arb_chain_cost_init(&c, &cm, 64);
    return c;
}

/* brute force: argmax over k of (1 + p1 (1 + pc + ... + pc^(k-1))) / t(k + 1, L), first max */
static int brute(const arb_chain_cost *c, double p1, double pc, int k_min, int k_max, int L)
{
    int best = -1;
    double best_rate = -1;
    for (int k = k_min; k <= k_max; k++) {
        double tok = 1, term = p1;
        for (int j = 0; j < k; j++)
            tok += term, term *= pc;
        const double r = tok / arb_chain_cost_us(c, k + 1, L);
        if (r > best_rate)
            best_rate = r, best = k;
    }
    return best;
}

Test(chainbudget, hand_computed_optima)
{
    /* a whole eval per node: one more token never pays for itself at p <= 1/2 */
    arb_chain_cost lin = profile(1000, 1000, 0, 0);
    cr_assert_eq(arb_chain_pick(&lin, 0.5, 0.5, 0, 10, 0), 0);
    cr_assert_eq(arb_chain_pick(&lin, 0.5, 0.5, 1, 10, 0), 1); /* k_min holds */
    /* free nodes: the whole continuation */
    arb_chain_cost flat = profile(1000, 0, 0, 0);
    cr_assert_eq(arb_chain_pick(&flat, 0.3, 0.3, 1, 10, 0), 10);
    /* this CPU's shape (docs/cost-model.md: w(1) 3.2 ms, +0.13 ms a node, a 0.78, b 3.6 us):
       p1 0.9, pc 0.9 at 200 cached tokens. By hand: rate(k) = (1 + 9 (1 - 0.9^k)) / (3200 +
       130 k + (3.6 + 0.78 (k + 1)) 200); k = 10: 6.8619 / 6936 = 9.8932e-4, k = 11: 7.1757 /
       7222 = 9.9359e-4, k = 12: 7.4581 / 7508 = 9.9336e-4, so 11; cut to 10 by k_max 10 */
    arb_chain_cost cpu = profile(3200, 130, 0.78, 3.6);
    cr_assert_eq(arb_chain_pick(&cpu, 0.9, 0.9, 1, 20, 200), 11);
    cr_assert_eq(arb_chain_pick(&cpu, 0.9, 0.9, 1, 10, 200), 10);
    /* a 50 % first token: 1 + 0.5 (1 - 0.9^k) / 0.1 over the same costs peaks lower */
    cr_assert_eq(arb_chain_pick(&cpu, 0.5, 0.9, 1, 20, 200), brute(&cpu, 0.5, 0.9, 1, 20, 200));
    for (int i = 0; i < 200; i++) { /* and brute force agrees everywhere */
        const double p1 = (i % 10) / 9.0, pc = (i / 10 % 10) / 9.0;
        const int L = 50 * (i / 100);
        cr_assert_eq(arb_chain_pick(&cpu, p1, pc, 1, 20, L), brute(&cpu, p1, pc, 1, 20, L), "p1 %g pc %g L %d", p1,
                     pc, L);
    }
    /* unset cost: the fixed length; nothing to draft: 0; k_max clamped to the table */
    arb_chain_cost none = {0};
    cr_assert_eq(arb_chain_pick(&none, 0.1, 0.1, 1, 7, 100), 7);
    cr_assert_eq(arb_chain_pick(&cpu, 0.9, 0.9, 1, 0, 100), 0);
    cr_assert_eq(arb_chain_pick(&flat, 1.0, 1.0, 1, 500, 0), 63);
}

Test(chainbudget, longer_when_likelier_shorter_when_context_grows)
{
    arb_chain_cost cpu = profile(3200, 130, 0.78, 3.6);
    int last = 0;
    for (int i = 0; i <= 20; i++) { /* a likelier continuation never gets a shorter chain */
        const int k = arb_chain_pick(&cpu, 0.8, i / 20.0, 1, 30, 300);
        cr_assert_geq(k, last, "pc %g: %d after %d", i / 20.0, k, last);
        last = k;
    }
    cr_assert_geq(last, 20);
    last = 1000; /* every node reads the whole context: longer contexts never lengthen the chain */
    for (int L = 0; L <= 4000; L += 250) {
        const int k = arb_chain_pick(&cpu, 0.9, 0.9, 1, 30, L);
        cr_assert_leq(k, last, "L %d: %d after %d", L, k, last);
        last = k;
    }
    cr_assert_lt(last, arb_chain_pick(&cpu, 0.9, 0.9, 1, 30, 0));
}

Test(chainbudget, stats_count_first_and_later_tokens)
{
    arb_chain_stats s;
    arb_chain_stats_reset(&s);
    cr_assert_float_eq(arb_chain_stats_p1(&s), 0.5, 1e-12);
    cr_assert_float_eq(arb_chain_stats_pc(&s), 0.5, 1e-12);
    arb_chain_stats_observe(&s, 5, 2); /* tokens 1, 2 accepted, 3 tried and rejected, 4-5 not reached */
    cr_assert_float_eq(s.first_try, 1, 0);
    cr_assert_float_eq(s.first_hit, 1, 0);
    cr_assert_float_eq(s.cont_try, 2, 0);
    cr_assert_float_eq(s.cont_hit, 1, 0);
    arb_chain_stats_observe(&s, 4, 0); /* first token rejected */
    arb_chain_stats_observe(&s, 3, 3); /* all accepted: 2 later tokens tried, 2 hits */
    arb_chain_stats_observe(&s, 0, 0); /* nothing proposed: ignored */
    cr_assert_float_eq(s.first_try, 3, 0);
    cr_assert_float_eq(s.first_hit, 2, 0);
    cr_assert_float_eq(s.cont_try, 4, 0);
    cr_assert_float_eq(s.cont_hit, 3, 0);
    cr_assert_float_eq(arb_chain_stats_p1(&s), 3.0 / 5.0, 1e-12);
    cr_assert_float_eq(arb_chain_stats_pc(&s), 4.0 / 6.0, 1e-12);
}

/* The PLD drafter with a cost table: a sequence that repeats, so every step matches 10 tokens. */
static int pld_chain_after(const arb_chain_cost *c, bool accept_all, int rounds)
{
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("pld-auto", &s, &err), ARB_OK, "%s", err.msg);
    cr_assert(s.budget_auto);
    s.budget_auto = false; /* resolved by hand: */
    s.chain_cost = *c;
    void *st;
    cr_assert_eq(arb_drafter_pld.create(&s, 1000, &st, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_drafter_pld.begin(st, 4096, true, &err), ARB_OK, "%s", err.msg);
    int32_t S[400];
    int n_S = 0;
    for (; n_S < 120; n_S++)
        S[n_S] = 10 + n_S % 40; /* period 40: the last 3 tokens always recur */
    arb_drafter_pld.append(st, S, n_S);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, arb_method_max_nodes(&s), &err), ARB_OK);
    int k = -1;
    for (int r = 0; r < rounds; r++) {
        arb_step_record rec = {0};
        arb_tree_reset(&t, S[n_S - 1]);
        arb_drafter_pld.propose(st, S, n_S, &t, &rec);
        arb_tree_finalize(&t);
        k = t.n - 1;
        cr_assert_geq(k, 1);
        const int acc = accept_all ? k : 0;
        int32_t path[80];
        for (int i = 0; i <= acc; i++)
            path[i] = i; /* the chain is nodes 0..k */
        arb_drafter_pld.verified(st, &t, path, acc + 1, &rec);
        /* commit the accepted tokens and the (period-following) bonus */
        for (int i = 0; i <= acc; i++, n_S++)
            S[n_S] = 10 + n_S % 40;
        arb_drafter_pld.append(st, S + n_S - acc - 1, acc + 1);
    }
    arb_tree_release(&t);
    arb_drafter_pld.destroy(st);
    return k;
}

Test(chainbudget, pld_chain_follows_its_acceptance)
{
    const arb_chain_cost cpu = profile(3200, 130, 0.78, 3.6);
    const int k_fail = pld_chain_after(&cpu, false, 8), k_copy = pld_chain_after(&cpu, true, 8);
    cr_assert_eq(k_fail, 1, "chains that always fail: %d tokens", k_fail);
    cr_assert_eq(k_copy, 10, "chains that always copy: %d tokens (max_draft 10)", k_copy);
    const arb_chain_cost none = {0}; /* no cost table: PLD's fixed chain */
    cr_assert_eq(pld_chain_after(&none, false, 3), 10);
}
