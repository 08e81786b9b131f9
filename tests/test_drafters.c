/* test_drafters.c — the drafter table (drafters/drafter.h) as the method layer sees it: every
 * row's default spec validates and sizes its tree through the `max_nodes` slot; each drafter's
 * own checks (the `validate` slot) give exactly the messages method.c gave when they were
 * by-name cases there; the "needs drafter ..." lists come from the table; and the selector
 * table has the same verbs as the other kinds (find, at, names(buf, cap)). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "drafters/drafter.h"
#include "drafters/lookahead.h"
#include "method.h"
#include "registry.h"
#include "schedulers/scheduler.h"
#include "topologies/topology.h"
#include "nde_features.h"
#include "selectors/selector.h"
#include "verifiers/verifier.h"

/* Validation of s fails with code rc and exactly the message want. */
static void expect_error(const arb_method_spec *s, int rc, const char *want)
{
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_validate(s, &err), rc, "%s: expected rc %d (%s)", s->id, rc, err.msg);
    cr_assert_str_eq(err.msg, want);
}

static arb_method_spec preset(const char *name)
{
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset(name, &s, NULL), ARB_OK, "preset %s", name);
    return s;
}

Test(drafters, table_rows_validate_and_size_their_trees)
{
    int n = 0;
    for (const arb_drafter_i *d; (d = arb_drafter_at(n)); n++) {
        cr_assert_eq(arb_drafter_find(d->name), d, "%s: found by its name", d->name);
        for (int j = 0; j < n; j++)
            cr_assert_str_neq(arb_drafter_at(j)->name, d->name, "listed once");
        arb_method_spec s;
        arb_err err = {0};
        cr_assert_eq(arb_method_spec_default(d->name, &s, &err), ARB_OK, "%s: %s", d->name, err.msg);
        cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_OK, "%s: %s", d->name, err.msg);
        int cap = arb_method_max_nodes(&s);
        cr_assert_geq(cap, 1, "%s", d->name);
        cr_assert_eq(cap, d->max_nodes ? d->max_nodes(&s) : s.budget, "%s: the slot, else the budget", d->name);
    }
    cr_assert_null(arb_drafter_at(n));
    cr_assert_null(arb_drafter_at(-1));
    cr_assert_eq(arb_drafter_find("ar"), &arb_drafter_none);
}

Test(drafters, max_nodes_per_drafter)
{
    arb_method_spec s = preset("ar");
    s.budget = 40; /* AR proposes the anchor alone, whatever the budget says */
    cr_assert_eq(arb_method_max_nodes(&s), 1);
    s = preset("pld");
    cr_assert_eq(arb_method_max_nodes(&s), 1 + s.max_draft);
    s.max_draft = 7;
    cr_assert_eq(arb_method_max_nodes(&s), 8);
    s = preset("tr");
    cr_assert_eq(arb_method_max_nodes(&s), 1 + 8 + 8 * 8 + 8, "template 2.2.2");
    s = preset("draft");
    s.dte_k = 3, s.dte_l = 2, s.dte_b = 4;
    cr_assert_eq(arb_method_max_nodes(&s), 1 + 2 + 3 * 4);
    s.dte_k = 1, s.dte_l = 0, s.dte_b = 2;
    snprintf(s.selector, sizeof s.selector, "nde"); /* room for the largest action */
    cr_assert_eq(arb_method_max_nodes(&s), ARB_NDE_NODES_MAX);
    s = preset("lookahead");
    cr_assert_eq(arb_method_max_nodes(&s), arb_lade_max_nodes(s.la_window, s.la_ngram, s.la_guess));
    s = preset("medusa");
    cr_assert_eq(arb_method_max_nodes(&s), 64, "mc_sim_7b_63 + the anchor");
    snprintf(s.tree, sizeof s.tree, "auto");
    s.budget = 30;
    cr_assert_eq(arb_method_max_nodes(&s), 30);
    s = preset("entmtp");
    cr_assert_eq(arb_method_max_nodes(&s), ARB_BANK_TREE_MAX);
    const char *budget_sized[] = {"eagle2", "eagle2-head", "rest", "iso3"};
    for (size_t i = 0; i < sizeof budget_sized / sizeof budget_sized[0]; i++) {
        s = preset(budget_sized[i]);
        s.budget = 33;
        cr_assert_eq(arb_method_max_nodes(&s), 33, "%s", budget_sized[i]);
    }
    s = preset("goose"); /* the bypass chain may outgrow the budget */
    s.budget = 10;
    s.bypass_max = 0, s.max_draft = 20;
    cr_assert_eq(arb_method_max_nodes(&s), 21);
    s.max_draft = 5;
    cr_assert_eq(arb_method_max_nodes(&s), 10);
}

Test(drafters, validate_slots_keep_their_messages)
{
    arb_method_spec s = preset("rest");
    s.budget = 1;
    expect_error(&s, ARB_E_INVAL, "method REST: budget: REST needs at least 2 nodes (anchor + 1 draft)");
    s = preset("rest");
    s.rest_suffix_min = 5, s.rest_suffix_max = 4;
    expect_error(&s, ARB_E_INVAL, "method REST: suffix_min: 5 > suffix_max 4");
    s.rest_suffix_min = 2;
    s.datastore[0] = 0;
    expect_error(&s, ARB_E_INVAL, "method REST: datastore: empty (auto, a cache name, or a path)");

    s = preset("tr");
    s.topk = 4;
    expect_error(&s, ARB_E_INVAL, "method TR: topk: TR template 2.2.2 needs topk >= 8");

    s = preset("lookahead");
    s.la_window = 64, s.la_ngram = 8, s.la_guess = 15;
    int nodes = arb_lade_max_nodes(64, 8, 15);
    cr_assert_gt(nodes, ARB_LADE_NODES_MAX);
    char want[sizeof(arb_err){0}.msg + 64];
    snprintf(want, sizeof want, "method Lookahead: window: W 64, N 8, G 15 make %d nodes per step "
             "(1 + (W-1) + (N-2)W + G(N-1)); at most %d", nodes, ARB_LADE_NODES_MAX);
    expect_error(&s, ARB_E_INVAL, want);

    s = preset("draft");
    snprintf(s.selector, sizeof s.selector, "ndee");
    expect_error(&s, ARB_E_INVAL, "method Draft: selector: unknown 'ndee' (fixed, nde)");
    snprintf(s.selector, sizeof s.selector, "nde");
    expect_error(&s, ARB_E_INVAL, "method Draft: selector_file: selector nde needs the trained selector "
                                  "(arbor nde train --out FILE)");
    s = preset("draft");
    s.dte_k = 1, s.dte_b = 0, s.dte_l = 0;
    expect_error(&s, ARB_E_INVAL, "method Draft: branch_len: the draft tree is empty");

    s = preset("eagle2");
    s.budget = 1;
    expect_error(&s, ARB_E_INVAL, "method EAGLE2: budget: 1 leaves no draft node (>= 2)");
    s = preset("eagle2"); /* top-k trees are regime DET: SpecTr is not valid there (§0.6) */
    s.temperature = 0.8;
    snprintf(s.verifier, sizeof s.verifier, "spectr");
    arb_err ve = {0};
    cr_assert_eq(arb_verifier_check("spectr", ARB_REGIME_DET, &ve), ARB_E_INVAL);
    snprintf(want, sizeof want, "method EAGLE2: verifier: %s", ve.msg);
    expect_error(&s, ARB_E_INVAL, want);
    arb_err err = {0};
    snprintf(s.verifier, sizeof s.verifier, "greedy");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(!strncmp(err.msg, "method EAGLE2: verifier: greedy needs temperature 0 (nss", 56), "%s", err.msg);
}

Test(drafters, generic_checks_read_the_table)
{
    arb_method_spec s = preset("pld");
    snprintf(s.verifier, sizeof s.verifier, "spectr");
    expect_error(&s, ARB_E_INVAL, "method PLD: verifier: spectr needs drafter draft or eagle2-draft or eagle-dte");
    s = preset("pld");
    snprintf(s.topology, sizeof s.topology, "iso");
    expect_error(&s, ARB_E_INVAL, "method PLD: topology: 'iso' needs drafter goose");
    s = preset("medusa");
    s.temperature = 0.7;
    expect_error(&s, ARB_E_UNSUPPORTED, "method Medusa: temperature: drafter medusa is greedy only (it has no draft "
                                        "laws); sampling runs with ar or drafter draft, eagle2-draft, eagle-dte");
    s = preset("ar"); /* AR samples the target itself */
    s.temperature = 0.7;
    cr_assert_eq(arb_method_spec_validate(&s, NULL), ARB_OK);
    s = preset("eagle2"); /* a drafter with q_rows takes the sampling verifiers */
    s.temperature = 0.7;
    cr_assert_eq(arb_method_spec_validate(&s, NULL), ARB_OK, "%s", s.verifier);
}

Test(drafters, selector_table_has_the_common_verbs)
{
    char names[64];
    cr_assert_str_eq(arb_selector_names(names, sizeof names), "fixed, nde");
    int n = 0;
    for (; arb_selector_at(n); n++)
        cr_assert_eq(arb_selector_find(arb_selector_at(n)->name), arb_selector_at(n));
    cr_assert_eq(n, 2);
    cr_assert_null(arb_selector_at(-1));
    cr_assert_null(arb_selector_find("greedy"));
    cr_assert_null(arb_selector_find(NULL));
    char small[6]; /* truncation stays inside the buffer */
    arb_selector_names(small, sizeof small);
    cr_assert_eq(strlen(small), sizeof small - 1);
}

/* The shared lookup every table's find goes through: exact or case-folded, -1 for unknown or
   NULL, and name lists cut to the buffer without overrunning it. */
static const char *three_at(int i)
{
    static const char *const rows[] = {"alpha", "Beta", "gamma"};
    return i >= 0 && i < 3 ? rows[i] : NULL;
}

Test(drafters, registry_helpers_find_and_list)
{
    cr_expect_eq(arb_registry_index(three_at, "Beta", false), 1);
    cr_expect_eq(arb_registry_index(three_at, "beta", false), -1);
    cr_expect_eq(arb_registry_index(three_at, "beta", true), 1);
    cr_expect_eq(arb_registry_index(three_at, NULL, true), -1);
    char buf[64], small[9];
    cr_expect_str_eq(arb_registry_names(three_at, buf, sizeof buf), "alpha, Beta, gamma");
    cr_expect_str_eq(arb_registry_names(three_at, small, sizeof small), "alpha, B");
    /* every kind answers through it */
    cr_expect_eq(arb_drafter_find("AR"), arb_drafter_find("none"));
    cr_expect_null(arb_drafter_find(NULL));
    cr_expect_eq(arb_topology_find(""), arb_topology_find("spine"));
    cr_expect_not_null(arb_tree_sched_find("entmtp_tau"));
    cr_expect_null(arb_tree_sched_find("entmtp"));
    cr_expect_str_eq(arb_tree_sched_names(buf, sizeof buf), "static, entmtp_tau, ladder");
    cr_expect_str_eq(arb_topology_names(buf, sizeof buf), "spine, iso, sequoia, dynamic");
    cr_expect_eq(arb_verifier_find("traversal"), arb_verifier_at(8));
}
