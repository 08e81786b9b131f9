/* test_sequoia.c — Sequoia's DP (docs/spec/drafting.md §5): test vectors, reconstruction, k-ary limit. */
#include <criterion/criterion.h>
#include <math.h>

#include "topologies/sequoia.h"

/* value of a static tree under positional acceptance: f(v) = 1 + Σ_c p[rank c] f(c) */
static double tree_value(const int32_t *parent, const int16_t *rank, int n, const double *p)
{
    double f[256];
    for (int i = n - 1; i >= 0; i--) {
        f[i] = 1.0;
        for (int c = i + 1; c < n; c++)
            if (parent[c] == i)
                f[i] += p[rank[c]] * f[c];
    }
    return f[0];
}

Test(sequoia, test_vectors)
{
    double p[] = {0.6, 0.2, 0.1, 0.05};
    arb_sequoia *s;
    cr_assert_eq(arb_sequoia_new(p, 4, 16, 6, &s, NULL), ARB_OK);
    cr_assert_float_eq(arb_sequoia_best(s, 10, 4), 2.86, 1e-9);
    cr_assert_eq(arb_sequoia_best_b(s, 10, 4), 3);
    cr_assert_float_eq(arb_sequoia_best(s, 6, 3), 2.40, 1e-9);
    cr_assert_float_eq(arb_sequoia_best(s, 1, 1), 1.0, 1e-12);
    cr_assert(isinf(arb_sequoia_best(s, 2, 1)), "two nodes do not fit in one level");
    arb_sequoia_free(s);
    double u[] = {0.5, 0.5, 0.5};
    cr_assert_eq(arb_sequoia_new(u, 3, 13, 3, &s, NULL), ARB_OK);
    cr_assert_float_eq(arb_sequoia_best(s, 13, 3), 4.75, 1e-9);
    arb_sequoia_free(s);
}

Test(sequoia, reconstruction_has_m_nodes_and_the_dp_value)
{
    double p[] = {0.45, 0.15, 0.08, 0.05, 0.03, 0.02};
    arb_sequoia *s;
    cr_assert_eq(arb_sequoia_new(p, 6, 60, 7, &s, NULL), ARB_OK);
    int32_t parent[64];
    int16_t rank[64];
    for (int m = 1; m <= 60; m += 7)
        for (int l = 2; l <= 7; l++) {
            if (isinf(arb_sequoia_best(s, m, l)))
                continue;
            int n = arb_sequoia_tree(s, m, l, parent, rank, 64);
            cr_assert_eq(n, m, "m %d l %d", m, l);
            int depth[64] = {0};
            for (int i = 1; i < n; i++) {
                cr_assert_lt(parent[i], i);
                depth[i] = depth[parent[i]] + 1;
                cr_assert_lt(depth[i], l, "at most l levels");
            }
            cr_assert_float_eq(tree_value(parent, rank, n, p), arb_sequoia_best(s, m, l), 1e-9, "m %d l %d", m, l);
        }
    arb_sequoia_free(s);
}

Test(sequoia, uniform_acceptance_gives_the_bfs_kary_tree)
{
    double p[] = {0.3, 0.3, 0.3, 0, 0, 0};
    arb_sequoia *s;
    cr_assert_eq(arb_sequoia_new(p, 6, 60, 8, &s, NULL), ARB_OK);
    int32_t parent[64];
    int16_t rank[64];
    int n = arb_sequoia_tree(s, 40, 8, parent, rank, 64);
    cr_assert_eq(n, 40);
    int depth[64] = {0}, c[8] = {0};
    for (int i = 1; i < n; i++) {
        depth[i] = depth[parent[i]] + 1;
        c[depth[i]]++;
        cr_assert_lt(rank[i], 3);
    }
    cr_assert(c[1] == 3 && c[2] == 9 && c[3] == 27, "%d %d %d", c[1], c[2], c[3]);
    arb_sequoia_free(s);
}

static int succ(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *sc)
{
    int n = tok % 3; /* tok 0: none, 1: one, 2: two */
    for (int j = 0; j < n; j++) {
        ids[j] = tok * 3 + 1 + j;
        sc[j] = 0.5f;
    }
    return n;
}

Test(sequoia, fill_drops_missing_subtrees)
{
    int32_t parent[] = {-1, 0, 0, 1, 1, 2};
    int16_t rank[] = {-1, 0, 1, 0, 1, 0};
    arb_tree t;
    arb_tree_init(&t, 8, NULL);
    arb_tree_reset(&t, 2); /* 2 -> 7, 8 ; 7 (7%3 = 1) -> 22 only; 8 (8%3 = 2) -> 25 */
    cr_assert_eq(arb_sequoia_fill(&t, 0, parent, rank, 6, succ, NULL), 4);
    arb_tree_finalize(&t);
    cr_assert(t.tok[1] == 7 && t.tok[2] == 8 && t.tok[3] == 22 && t.tok[4] == 25);
    cr_assert_eq(t.parent[4], 2);
    arb_tree_release(&t);
}
