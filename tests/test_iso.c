/* test_iso.c — Iso(k) BFS k-ary trees (docs/spec/drafting.md §4.7). */
#include <criterion/criterion.h>

#include "topologies/iso.h"

/* plentiful distinct successors: tok -> tok*16+1 .. tok*16+16 (mod a large vocabulary) */
static int succ_many(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *sc)
{
    for (int j = 0; j < 16; j++) {
        ids[j] = (tok * 16 + 1 + j) % 1000003;
        sc[j] = 1.0f / (j + 2);
    }
    return 16;
}

/* only even tokens below 20 have successors, two of them */
static int succ_sparse(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *sc)
{
    if (tok % 2 || tok >= 20)
        return 0;
    ids[0] = tok + 1;
    ids[1] = tok + 2;
    sc[0] = 0.5f;
    sc[1] = 0.25f;
    return 2;
}

static void depth_counts(const arb_tree *t, int *c)
{
    for (int d = 0; d < 16; d++)
        c[d] = 0;
    for (int i = 0; i < t->n; i++)
        c[t->depth[i]]++;
}

Test(iso, k3_b60_is_3_9_27_20)
{
    arb_tree t;
    int32_t q[64];
    int c[16];
    cr_assert_eq(arb_tree_init(&t, 64, NULL), ARB_OK);
    arb_tree_reset(&t, 1);
    cr_assert_eq(arb_iso_build(&t, 0, 3, 60, 0, succ_many, NULL, q), 59);
    arb_tree_finalize(&t);
    depth_counts(&t, c);
    cr_assert(c[1] == 3 && c[2] == 9 && c[3] == 27 && c[4] == 20, "%d %d %d %d", c[1], c[2], c[3], c[4]);
    for (int i = 1; i < t.n; i++) {
        cr_assert_eq(t.source[i], ARB_SRC_TR);
        cr_assert_lt(t.rank[i], 3);
    }
    arb_tree_reset(&t, 1);
    arb_iso_build(&t, 0, 5, 60, 0, succ_many, NULL, q);
    arb_tree_finalize(&t);
    depth_counts(&t, c);
    cr_assert(c[1] == 5 && c[2] == 25 && c[3] == 29);
    arb_tree_reset(&t, 1);
    arb_iso_build(&t, 0, 3, 60, 2, succ_many, NULL, q);
    cr_assert_eq(t.n, 13, "depth limit 2: 1 + 3 + 9");
    arb_tree_release(&t);
}

Test(iso, missing_successors_leave_slots_empty)
{
    arb_tree t;
    int32_t q[64];
    cr_assert_eq(arb_tree_init(&t, 64, NULL), ARB_OK);
    arb_tree_reset(&t, 2);
    arb_iso_build(&t, 0, 3, 60, 0, succ_sparse, NULL, q);
    arb_tree_finalize(&t);
    /* 2 -> {3, 4}; 3 has none; 4 -> {5, 6}; ... 18 -> {19, 20}: a thin tree, never padded */
    cr_assert_eq(t.n, 19);
    for (int i = 0; i < t.n; i++) {
        cr_assert_leq(arb_tree_n_children(&t, i), 2);
        if (t.tok[i] % 2)
            cr_assert_eq(arb_tree_n_children(&t, i), 0);
    }
    arb_tree_reset(&t, 3);
    cr_assert_eq(arb_iso_build(&t, 0, 3, 60, 0, succ_sparse, NULL, q), 0, "no successors: anchor only");
    arb_tree_release(&t);
}
