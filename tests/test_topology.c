/* test_topology.c — the topology table (topologies/topology.h): every row honours the
 * contract (create/build/destroy, budget, ranks from the successor source), the rows equal
 * the algorithms they wrap, and config validation names the table's topologies. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "drafters/tr.h"
#include "method.h"
#include "topologies/dynamic.h"
#include "topologies/sequoia.h"
#include "topologies/spine.h"
#include "topologies/topology.h"

/* plentiful distinct successors, scores falling with rank: tok -> tok*16+1 .. tok*16+16 */
static int succ_many(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *sc)
{
    int *calls = ud;
    if (calls)
        (*calls)++;
    for (int j = 0; j < 16; j++) {
        ids[j] = (tok * 16 + 1 + j) % 1000003;
        sc[j] = 1.0f / (j + 2);
    }
    return 16;
}

/* A cost table t(n, L) = w0 + w1 (n - 1) µs for n = 1..n_max, no context term (budget "auto"
   sets the machine's; these are shapes the tests reason about). */
static void cost_line(arb_method_spec *s, double w0, double w1, int n_max)
{
    memset(&s->chain_cost, 0, sizeof s->chain_cost);
    s->chain_cost.n_max = n_max;
    for (int n = 1; n <= n_max; n++)
        s->chain_cost.w_us[n] = w0 + w1 * (n - 1);
    s->budget = n_max;
}

/* The spec of a preset whose topology is `name` (goose: the spine tree; dynamic: with a cost
   table where a node costs a tenth of an eval, as "auto" would set one). */
static void spec_for(const char *name, arb_method_spec *s)
{
    const char *preset = !strcmp(name, "spine")     ? "goose"
                         : !strcmp(name, "iso")     ? "iso3"
                         : !strcmp(name, "dynamic") ? "goose-dyn-auto"
                                                    : name;
    cr_assert_eq(arb_method_spec_preset(preset, s, NULL), ARB_OK, "no preset for topology %s", name);
    cr_assert_eq(arb_topology_find(s->topology), arb_topology_find(name));
    if (!strcmp(name, "dynamic"))
        cost_line(s, 1000.0, 100.0, 32);
}

Test(topology, registry_lists_each_once_and_finds_by_name)
{
    char names[128];
    cr_assert_str_eq(arb_topology_names(names, sizeof names), "spine, iso, sequoia, dynamic");
    cr_assert_eq(arb_topology_find(""), &arb_topology_spine, "\"\" is GOOSE's own shape");
    cr_assert_null(arb_topology_find("isotropic"));
    cr_assert_null(arb_topology_find(NULL));
    int n = 0;
    for (; arb_topology_at(n); n++) {
        cr_assert_eq(arb_topology_find(arb_topology_at(n)->name), arb_topology_at(n));
        for (int j = 0; j < n; j++)
            cr_assert_str_neq(arb_topology_at(j)->name, arb_topology_at(n)->name);
    }
    cr_assert_eq(n, 4);
    cr_assert_null(arb_topology_at(-1));
    char small[8]; /* truncation stays inside the buffer */
    arb_topology_names(small, sizeof small);
    cr_assert_eq(strlen(small), sizeof small - 1);
}

Test(topology, validation_names_the_table)
{
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("goose", &s, NULL), ARB_OK);
    snprintf(s.topology, sizeof s.topology, "isotropic");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "topology: unknown 'isotropic' (spine, iso, sequoia, dynamic)") != NULL, "%s", err.msg);
    snprintf(s.topology, sizeof s.topology, "spine"); /* the explicit name of the default */
    cr_assert_eq(arb_method_spec_validate(&s, NULL), ARB_OK);
    snprintf(s.consensus, sizeof s.consensus, "most");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "consensus: unknown 'most' (any, distinct, long)") != NULL, "%s", err.msg);
    /* the other kinds' lists come from their tables too */
    cr_assert_eq(arb_method_spec_preset("goose", &s, NULL), ARB_OK);
    snprintf(s.verifier, sizeof s.verifier, "gredy");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "verifier: unknown 'gredy' (greedy, nss, naive,") != NULL, "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("draft", &s, NULL), ARB_OK);
    s.temperature = 0.7;
    snprintf(s.verifier, sizeof s.verifier, "greedy");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "greedy needs temperature 0 (nss, naive, naivetree, bv, spectr, specinfer, khisti, "
                              "traversal, typical)") != NULL, "%s", err.msg);
    snprintf(s.drafter, sizeof s.drafter, "drafty");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "drafter: unknown 'drafty' (none, pld, tr, goose,") != NULL, "%s", err.msg);
}

/* Every row: within budget, a tree (parents before children), every ranked node the
   successor of its parent at its rank, no allocation needed between builds (same result twice). */
Test(topology, every_row_honours_the_contract)
{
    for (int i = 0; arb_topology_at(i); i++) {
        const arb_topology_i *ti = arb_topology_at(i);
        arb_method_spec s;
        spec_for(ti->name, &s);
        void *st = NULL;
        cr_assert_eq(ti->create(&s, &st, NULL), ARB_OK, "%s: create", ti->name);
        arb_tree t, t2;
        int cap = arb_method_max_nodes(&s);
        cr_assert_eq(arb_tree_init(&t, cap, NULL), ARB_OK);
        cr_assert_eq(arb_tree_init(&t2, cap, NULL), ARB_OK);
        int32_t d[8] = {5, 6, 7, 8, 9, 10, 11, 12};
        int calls = 0;
        arb_topo_src src = {.succ = succ_many, .ud = &calls, .a_prev = 2, .anchor = 3, .d = d, .m = 8, .r = 0.3};
        arb_step_record rec = {0};
        arb_tree_reset(&t, 3);
        ti->build(st, &src, &t, &rec);
        arb_tree_reset(&t2, 3);
        ti->build(st, &src, &t2, &rec);
        cr_assert_gt(t.n, 1, "%s: nothing built", ti->name);
        cr_assert_leq(t.n, s.budget, "%s: %d nodes over budget %d", ti->name, t.n, s.budget);
        cr_assert_gt(calls, 0);
        cr_assert_eq(t.n, t2.n, "%s: not deterministic", ti->name);
        for (int v = 1; v < t.n; v++) {
            cr_assert_lt(t.parent[v], v);
            cr_assert_eq(t.tok[v], t2.tok[v]);
            if (t.flags[v] & ARB_NODE_SPINE) { /* spine tokens come from the match, in order */
                cr_assert_eq(t.tok[v], d[t.depth[v] - 1], "%s", ti->name);
                continue;
            }
            cr_assert_eq(t.tok[v], (t.tok[t.parent[v]] * 16 + 1 + t.rank[v]) % 1000003, "%s node %d", ti->name, v);
        }
        cr_assert_eq(ti->wants_match, ti == &arb_topology_spine || ti == &arb_topology_dynamic,
                     "only the spine and the dynamic tree read the match");
        ti->destroy(st);
        ti->destroy(NULL);
        arb_tree_release(&t);
        arb_tree_release(&t2);
    }
}

/* The rows are the algorithms they wrap: Iso(k) BFS and the Sequoia DP template. */
Test(topology, iso_and_sequoia_rows_equal_their_algorithms)
{
    arb_method_spec s;
    arb_tree a, b;
    int32_t q[128], parent[128];
    int16_t rank[128];
    arb_topo_src src = {.succ = succ_many, .a_prev = -1, .anchor = 1};
    arb_step_record rec = {0};

    spec_for("iso", &s);
    void *st = NULL;
    cr_assert_eq(arb_topology_iso.create(&s, &st, NULL), ARB_OK);
    cr_assert_eq(arb_tree_init(&a, s.budget, NULL), ARB_OK);
    cr_assert_eq(arb_tree_init(&b, s.budget, NULL), ARB_OK);
    arb_tree_reset(&a, 1);
    arb_topology_iso.build(st, &src, &a, &rec);
    arb_tree_reset(&b, 1);
    arb_iso_build(&b, -1, s.iso_k, s.budget, 0, succ_many, NULL, q);
    cr_assert_eq(a.n, b.n);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0);
    cr_assert_eq(memcmp(a.parent, b.parent, (size_t)a.n * sizeof *a.parent), 0);
    arb_topology_iso.destroy(st);
    arb_tree_release(&a);
    arb_tree_release(&b);

    spec_for("sequoia", &s);
    cr_assert_eq(arb_topology_sequoia.create(&s, &st, NULL), ARB_OK);
    double p[ARB_SEQUOIA_K_MAX];
    int K = 0;
    while (K < ARB_SEQUOIA_K_MAX && s.sequoia_p[K] > 0 && K < s.topk)
        p[K] = s.sequoia_p[K], K++;
    arb_sequoia *sq;
    cr_assert_eq(arb_sequoia_new(p, K, s.budget, s.max_depth + 1, &sq, NULL), ARB_OK);
    int n = arb_sequoia_tree(sq, s.budget, s.max_depth + 1, parent, rank, 128);
    arb_sequoia_free(sq);
    cr_assert_eq(arb_tree_init(&a, s.budget, NULL), ARB_OK);
    cr_assert_eq(arb_tree_init(&b, s.budget, NULL), ARB_OK);
    arb_tree_reset(&a, 1);
    arb_topology_sequoia.build(st, &src, &a, &rec);
    arb_tree_reset(&b, 1);
    arb_sequoia_fill(&b, -1, parent, rank, n, succ_many, NULL);
    cr_assert_eq(a.n, n);
    cr_assert_eq(memcmp(a.tok, b.tok, (size_t)a.n * sizeof *a.tok), 0);
    cr_assert_eq(memcmp(a.parent, b.parent, (size_t)a.n * sizeof *a.parent), 0);
    arb_topology_sequoia.destroy(st);
    arb_tree_release(&a);
    arb_tree_release(&b);
}

Test(topology, sequoia_rejects_an_empty_acceptance_vector)
{
    arb_method_spec s;
    arb_err err = {0};
    spec_for("sequoia", &s);
    s.sequoia_p[0] = 0;
    void *st = (void *)&s;
    cr_assert_eq(arb_topology_sequoia.create(&s, &st, &err), ARB_E_INVAL);
    cr_assert_null(st);
    cr_assert(strstr(err.msg, "sequoia_p: empty acceptance vector") != NULL, "%s", err.msg);
}

/* ---- the dynamic tree (topologies/dynamic.h) ---- */

/* A node's acceptance estimate as dynamic.h defines it, from a fresh state (no verified step
   yet): spine p1 = pc = 1/2, a table successor the prior of its score's bin. */
static double v_fresh(const arb_tree *t, int v)
{
    double x = 1.0;
    for (; v > 0; v = t->parent[v])
        x *= (t->flags[v] & ARB_NODE_SPINE) ? 0.5 : arb_dyn_prior(arb_dyn_bin(1.0f / (t->rank[v] + 2)));
    return x;
}

static void build_dynamic(void *st, arb_tree *t, const int32_t *d, int m)
{
    arb_topo_src src = {.succ = succ_many, .a_prev = 2, .anchor = 3, .d = d, .m = m, .n_ctx = 100};
    arb_step_record rec = {0};
    arb_tree_reset(t, 3);
    arb_topology_dynamic.build(st, &src, t, &rec);
    cr_assert_eq(rec.bs + rec.br, t->n - 1, "bs + br count the drafted nodes");
}

/* The size follows the cost of a node: free nodes fill the budget, nodes that cost a whole eval
   leave a plain AR step, and in between the tree stops where one more node no longer pays. */
Test(topology, dynamic_sizes_the_tree_by_cost)
{
    arb_method_spec s;
    spec_for("dynamic", &s);
    const int32_t d[8] = {5, 6, 7, 8, 9, 10, 11, 12};
    const struct { double w1; int lo, hi; } cases[] = {{0.0, 32, 32}, {1000.0, 1, 1}, {50.0, 3, 31}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cost_line(&s, 1000.0, cases[c].w1, 32);
        void *st = NULL;
        cr_assert_eq(arb_topology_dynamic.create(&s, &st, NULL), ARB_OK);
        arb_tree t;
        cr_assert_eq(arb_tree_init(&t, 32, NULL), ARB_OK);
        build_dynamic(st, &t, d, 8);
        cr_assert(t.n >= cases[c].lo && t.n <= cases[c].hi, "w1 %g: %d nodes", cases[c].w1, t.n);
        /* the chosen size maximises tau(n) / t(n) over the best-first prefixes: no smaller
           prefix of this order does better (prefix n of the tree is the order's prefix) */
        double tau = 1.0, ratio[33] = {0, 1.0 / 1000.0};
        for (int v = 1; v < t.n; v++) {
            tau += v_fresh(&t, v);
            ratio[v + 1] = tau / (1000.0 + cases[c].w1 * v);
        }
        for (int n = 1; n < t.n; n++)
            cr_assert_leq(ratio[n], ratio[t.n], "w1 %g: %d nodes beat the chosen %d", cases[c].w1, n, t.n);
        arb_topology_dynamic.destroy(st);
        arb_tree_release(&t);
    }
    arb_err err = {0}; /* without a cost table there is nothing to size by */
    s.chain_cost.n_max = 0;
    void *st = &s;
    cr_assert_eq(arb_topology_dynamic.create(&s, &st, &err), ARB_E_INVAL);
    cr_assert_null(st);
    cr_assert(strstr(err.msg, "needs this machine's eval cost") != NULL, "%s", err.msg);
    s.budget_auto = false;
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "topology dynamic") && strstr(err.msg, "budget"), "%s", err.msg);
}

/* Best first: every node in the tree is at least as likely as every candidate left out (the
   next spine token or a table successor of a node in the tree), and values fall along paths. */
Test(topology, dynamic_keeps_the_likeliest_nodes)
{
    arb_method_spec s;
    spec_for("dynamic", &s);
    cost_line(&s, 1000.0, 20.0, 24);
    void *st = NULL;
    cr_assert_eq(arb_topology_dynamic.create(&s, &st, NULL), ARB_OK);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 24, NULL), ARB_OK);
    const int32_t d[8] = {5, 6, 7, 8, 9, 10, 11, 12};
    build_dynamic(st, &t, d, 8);
    cr_assert_gt(t.n, 4);
    double in_min = 1.0, out_max = 0.0;
    for (int v = 1; v < t.n; v++)
        in_min = fmin(in_min, v_fresh(&t, v));
    for (int u = 0; u < t.n; u++) {
        const double vu = u ? v_fresh(&t, u) : 1.0;
        bool on_spine = u == 0 || (t.flags[u] & ARB_NODE_SPINE);
        int spine_i = u == 0 ? 0 : t.depth[u]; /* the next match token's index */
        if (on_spine && spine_i < 8) {
            bool taken = false;
            for (int w = 1; w < t.n; w++)
                taken |= t.parent[w] == u && (t.flags[w] & ARB_NODE_SPINE);
            if (!taken)
                out_max = fmax(out_max, vu * 0.5);
        }
        for (int j = 0; j < s.topk && j < 16; j++) {
            const int32_t tok = (t.tok[u] * 16 + 1 + j) % 1000003;
            bool taken = false;
            for (int w = 1; w < t.n; w++)
                taken |= t.parent[w] == u && t.tok[w] == tok;
            if (!taken && (!on_spine || spine_i >= 8 || tok != d[spine_i]))
                out_max = fmax(out_max, vu * arb_dyn_prior(arb_dyn_bin(1.0f / (j + 2))));
        }
    }
    cr_assert_geq(in_min, out_max, "a left-out candidate (%g) beats a node in the tree (%g)", out_max, in_min);
    for (int v = 1; v < t.n; v++) {
        cr_assert_lt(t.parent[v], v);
        if (t.flags[v] & ARB_NODE_SPINE)
            cr_assert_eq(t.tok[v], d[t.depth[v] - 1], "spine tokens are the match, in order");
        else
            cr_assert_eq(t.tok[v], (t.tok[t.parent[v]] * 16 + 1 + t.rank[v]) % 1000003);
    }
    arb_topology_dynamic.destroy(st);
    arb_tree_release(&t);
}

/* What verified steps teach: a match that is always accepted grows a deep spine, one whose
   first token is always rejected drops out of the tree; the table's bins learn the same way. */
Test(topology, dynamic_learns_from_verified_paths)
{
    arb_method_spec s;
    spec_for("dynamic", &s);
    cost_line(&s, 1000.0, 60.0, 32);
    const int32_t d[16] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    int32_t path[33];
    int spine_after[2];
    for (int good = 0; good < 2; good++) {
        void *st = NULL;
        cr_assert_eq(arb_topology_dynamic.create(&s, &st, NULL), ARB_OK);
        arb_tree t;
        cr_assert_eq(arb_tree_init(&t, 32, NULL), ARB_OK);
        build_dynamic(st, &t, d, 16);
        int spine0 = 0;
        for (int v = 1; v < t.n; v++)
            spine0 += (t.flags[v] & ARB_NODE_SPINE) != 0;
        cr_assert_gt(spine0, 0, "a fresh state tries the match");
        for (int step = 0; step < 40; step++) {
            build_dynamic(st, &t, d, 16);
            int n_path = 1;
            path[0] = 0;
            for (int v = 1; v < t.n; v++) /* good: the whole spine accepted; else a table child of the anchor */
                if (good ? (t.flags[v] & ARB_NODE_SPINE) && t.parent[v] == path[n_path - 1]
                         : n_path == 1 && t.parent[v] == 0 && !(t.flags[v] & ARB_NODE_SPINE))
                    path[n_path++] = v;
            arb_topology_dynamic.verified(st, &t, path, n_path);
        }
        build_dynamic(st, &t, d, 16);
        spine_after[good] = 0;
        for (int v = 1; v < t.n; v++)
            spine_after[good] += (t.flags[v] & ARB_NODE_SPINE) != 0;
        if (good)
            cr_assert_gt(spine_after[good], spine0, "accepted chains deepen the spine (%d -> %d)", spine0,
                         spine_after[good]);
        else
            cr_assert_eq(spine_after[good], 0, "a match never accepted leaves the tree");
        /* reset (a new run, e.g. after the runner's warm-up): the tree of a fresh state again */
        arb_topology_dynamic.reset(st);
        build_dynamic(st, &t, d, 16);
        int spine_reset = 0;
        for (int v = 1; v < t.n; v++)
            spine_reset += (t.flags[v] & ARB_NODE_SPINE) != 0;
        cr_assert_eq(spine_reset, spine0, "after reset: %d spine nodes, a fresh state's %d", spine_reset, spine0);
        arb_topology_dynamic.destroy(st);
        arb_tree_release(&t);
    }
}

Test(topology, dynamic_score_bins_cover_the_unit_interval)
{
    cr_assert_eq(arb_dyn_bin(0.0f), 0);
    cr_assert_eq(arb_dyn_bin(0.0099f), 0);
    cr_assert_eq(arb_dyn_bin(0.01f), 1);
    cr_assert_eq(arb_dyn_bin(1.0f), ARB_DYN_BINS - 1);
    for (int b = 1; b < ARB_DYN_BINS; b++)
        cr_assert_gt(arb_dyn_prior(b), arb_dyn_prior(b - 1), "priors rise with the score");
    cr_assert_leq(arb_dyn_prior(ARB_DYN_BINS - 1), 0.8);
}
