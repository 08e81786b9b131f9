/* test_topology.c — the topology table (topologies/topology.h): every row honours the
 * contract (create/build/destroy, budget, ranks from the successor source), the rows equal
 * the algorithms they wrap, and config validation names the table's topologies. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "drafters/tr.h"
#include "method.h"
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

/* The spec of a preset whose topology is `name` (goose: the spine tree). */
static void spec_for(const char *name, arb_method_spec *s)
{
    const char *preset = !strcmp(name, "spine") ? "goose" : !strcmp(name, "iso") ? "iso3" : name;
    cr_assert_eq(arb_method_spec_preset(preset, s, NULL), ARB_OK, "no preset for topology %s", name);
    cr_assert_eq(arb_topology_find(s->topology), arb_topology_find(name));
}

Test(topology, registry_lists_each_once_and_finds_by_name)
{
    char names[128];
    cr_assert_str_eq(arb_topology_names(names, sizeof names), "spine, iso, sequoia");
    cr_assert_eq(arb_topology_find(""), &arb_topology_spine, "\"\" is GOOSE's own shape");
    cr_assert_null(arb_topology_find("isotropic"));
    cr_assert_null(arb_topology_find(NULL));
    int n = 0;
    for (; arb_topology_at(n); n++) {
        cr_assert_eq(arb_topology_find(arb_topology_at(n)->name), arb_topology_at(n));
        for (int j = 0; j < n; j++)
            cr_assert_str_neq(arb_topology_at(j)->name, arb_topology_at(n)->name);
    }
    cr_assert_eq(n, 3);
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
    cr_assert(strstr(err.msg, "topology: unknown 'isotropic' (spine, iso, sequoia)") != NULL, "%s", err.msg);
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
        cr_assert_eq(ti->wants_match, ti == &arb_topology_spine, "only the spine reads the match");
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
