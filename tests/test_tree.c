/* test_tree.c — the draft tree (docs/spec/drafting.md §1.2-1.4) and the greedy walk (§1.5). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tree.h"
#include "verifiers/greedy.h"

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

static void random_tree(arb_tree *t, int n, int vocab, int anchor)
{
    arb_tree_reset(t, anchor);
    while (t->n < n) {
        int p = (int)(rnd() % (uint32_t)t->n);
        arb_tree_add(t, p, (int32_t)(rnd() % (uint32_t)vocab), (rnd() & 1) ? ARB_SRC_PLD : ARB_SRC_TR, 0, 0.5f);
    }
    arb_tree_finalize(t);
}

Test(tree, init_reset_add_and_capacity)
{
    arb_tree t;
    arb_err err = {0};
    cr_assert_eq(arb_tree_init(&t, 4, &err), ARB_OK);
    arb_tree_reset(&t, 7);
    cr_assert_eq(t.n, 1);
    cr_assert_eq(t.parent[0], -1);
    cr_assert_eq(t.depth[0], 0);
    int a = arb_tree_add(&t, 0, 1, ARB_SRC_PLD, 0, NAN);
    int b = arb_tree_add(&t, a, 2, ARB_SRC_TR, 3, 0.25f);
    int c = arb_tree_add(&t, 0, 3, ARB_SRC_TR, 1, 0.5f);
    cr_assert_eq(arb_tree_add(&t, 0, 4, ARB_SRC_TR, 0, 1.0f), -1, "full tree must refuse");
    cr_assert_eq(t.depth[b], 2);
    cr_assert_eq(t.max_depth, 2);
    cr_assert_float_eq(t.path_logp[c], logf(0.5f), 1e-6);
    cr_assert(isnan(t.path_logp[b]), "NAN draft prob propagates");
    cr_assert_eq(arb_tree_find_child(&t, 0, 3), c, "find before finalize");
    arb_tree_finalize(&t);
    cr_assert_eq(arb_tree_find_child(&t, 0, 3), c);
    cr_assert_eq(arb_tree_find_child(&t, 0, 2), -1);
    cr_assert_eq(arb_tree_n_children(&t, 0), 2);
    int32_t path[4];
    cr_assert_eq(arb_tree_path(&t, b, path), 3);
    cr_assert(path[0] == 0 && path[1] == a && path[2] == b);
    arb_tree_release(&t);
    arb_tree_release(&t); /* idempotent */
    cr_assert_eq(arb_tree_init(&t, 0, &err), ARB_E_INVAL);
}

Test(tree, ancestors_and_child_lists_match_brute_force)
{
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 200, NULL), ARB_OK);
    uint64_t bits[200 * 4];
    for (int trial = 0; trial < 50; trial++) {
        int n = 1 + (int)(rnd() % 200);
        random_tree(&t, n, 5, 1);
        arb_tree_ancestors(&t, bits, 4);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                bool anc = false;
                for (int v = i; v >= 0; v = t.parent[v])
                    anc |= v == j;
                bool got = (bits[i * 4 + j / 64] >> (j % 64)) & 1;
                cr_assert_eq(got, anc, "anc[%d][%d]", i, j);
            }
            int prev = -1, cnt = 0;
            for (int c = t.first_child[i]; c >= 0; c = t.next_sibling[c]) {
                cr_assert_eq(t.parent[c], i);
                cr_assert_gt(c, prev, "children in index order");
                prev = c;
                cnt++;
            }
            int want = 0;
            for (int j = 1; j < n; j++)
                want += t.parent[j] == i;
            cr_assert_eq(cnt, want);
        }
    }
    arb_tree_release(&t);
}

Test(tree, child_seq_grouped_per_node_in_push_order)
{
    arb_tree t;
    cr_assert_eq(arb_tree_init_seq(&t, 16, 32, NULL), ARB_OK);
    arb_tree_reset(&t, 0);
    int a = arb_tree_add(&t, 0, 10, ARB_SRC_DRAFT, -1, 0.5f);
    int b = arb_tree_add(&t, 0, 11, ARB_SRC_DRAFT, -1, 0.5f);
    int a1 = arb_tree_add(&t, a, 12, ARB_SRC_DRAFT, -1, 0.5f);
    int a2 = arb_tree_add(&t, a, 13, ARB_SRC_DRAFT, -1, 0.5f);
    /* three paths, pushed path by path: 0->a->a1, 0->b, 0->a->a2 */
    arb_tree_push_seq(&t, 0, a);
    arb_tree_push_seq(&t, a, a1);
    arb_tree_push_seq(&t, 0, b);
    arb_tree_push_seq(&t, 0, a);
    arb_tree_push_seq(&t, a, a2);
    arb_tree_finalize(&t);
    cr_assert_eq(t.seq_len[0], 3);
    cr_assert_eq(t.child_seq[t.seq_start[0] + 0], a);
    cr_assert_eq(t.child_seq[t.seq_start[0] + 1], b);
    cr_assert_eq(t.child_seq[t.seq_start[0] + 2], a);
    cr_assert_eq(t.seq_len[a], 2);
    cr_assert_eq(t.child_seq[t.seq_start[a]], a1);
    cr_assert_eq(t.child_seq[t.seq_start[a] + 1], a2);
    cr_assert_eq(t.seq_len[b], 0);
    arb_tree_finalize(&t); /* idempotent */
    cr_assert_eq(t.child_seq[t.seq_start[a] + 1], a2);
    arb_tree_release(&t);
}

/* brute force: longest root-to-node path whose every node equals its parent's argmax */
static int brute_longest(const arb_tree *t, const int32_t *y)
{
    int best = 0;
    for (int v = 1; v < t->n; v++) {
        bool ok = true;
        for (int u = v; u > 0 && ok; u = t->parent[u])
            ok = t->tok[u] == y[t->parent[u]] && !(t->flags[u] & ARB_NODE_NOACCEPT);
        if (ok && t->depth[v] > best)
            best = t->depth[v];
    }
    return best;
}

Test(greedy, walk_is_the_longest_matching_path)
{
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 64, NULL), ARB_OK);
    int32_t y[64], best[64], path[64];
    for (int trial = 0; trial < 2000; trial++) {
        int n = 1 + (int)(rnd() % 64);
        random_tree(&t, n, 3, 0); /* 3 tokens: many equal siblings */
        for (int i = 1; i < n; i++)
            if (rnd() % 10 == 0)
                t.flags[i] |= ARB_NODE_NOACCEPT;
        for (int i = 0; i < n; i++)
            y[i] = (int32_t)(rnd() % 3);
        arb_verify_out o;
        arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &o);
        cr_assert_eq(o.depth, brute_longest(&t, y), "trial %d", trial);
        cr_assert_eq(o.extra, y[o.node]);
        int np = arb_tree_path(&t, o.node, path);
        for (int i = 1; i < np; i++) {
            cr_assert_eq(t.tok[path[i]], y[path[i - 1]]);
            cr_assert(!(t.flags[path[i]] & ARB_NODE_NOACCEPT));
        }
        /* first-match never goes deeper than the longest path */
        arb_verify_out f;
        arb_greedy_walk(&t, y, ARB_GREEDY_FIRST_MATCH, best, &f);
        cr_assert_leq(f.depth, o.depth);
    }
    arb_tree_release(&t);
}

Test(greedy, unique_siblings_make_both_modes_agree)
{
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 64, NULL), ARB_OK);
    int32_t y[64], best[64];
    for (int trial = 0; trial < 1000; trial++) {
        arb_tree_reset(&t, 0);
        int n = 1 + (int)(rnd() % 64);
        while (t.n < n) {
            int p = (int)(rnd() % (uint32_t)t.n);
            int32_t tok = (int32_t)(rnd() % 6);
            if (arb_tree_find_child(&t, p, tok) < 0)
                arb_tree_add(&t, p, tok, (rnd() & 1) ? ARB_SRC_PLD : ARB_SRC_TR, 0, 1.0f);
        }
        arb_tree_finalize(&t);
        for (int i = 0; i < n; i++)
            y[i] = (int32_t)(rnd() % 6);
        arb_verify_out a, b;
        arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &a);
        arb_greedy_walk(&t, y, ARB_GREEDY_FIRST_MATCH, best, &b);
        cr_assert_eq(a.node, b.node);
    }
    arb_tree_release(&t);
}

Test(greedy, equal_length_tie_goes_to_spine_then_lower_index)
{
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 8, NULL), ARB_OK);
    arb_tree_reset(&t, 0);
    int tr = arb_tree_add(&t, 0, 5, ARB_SRC_TR, 0, 0.9f);
    int sp = arb_tree_add(&t, 0, 5, ARB_SRC_PLD, 0, NAN);
    t.flags[sp] |= ARB_NODE_SPINE;
    int tr2 = arb_tree_add(&t, 0, 5, ARB_SRC_TR, 1, 0.1f);
    arb_tree_finalize(&t);
    int32_t y[8] = {5, 1, 1, 1}, best[8];
    arb_verify_out o;
    arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &o);
    cr_assert_eq(o.node, sp, "spine wins the tie");
    /* a longer TR path beats the spine */
    int deep = arb_tree_add(&t, tr2, 1, ARB_SRC_TR, 0, 0.5f);
    arb_tree_finalize(&t);
    y[deep] = 9;
    arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &o);
    cr_assert_eq(o.node, deep);
    cr_assert_eq(o.depth, 2);
    cr_assert_eq(o.extra, 9);
    /* first match takes the spine and stops */
    arb_greedy_walk(&t, y, ARB_GREEDY_FIRST_MATCH, best, &o);
    cr_assert_eq(o.node, sp);
    (void)tr;
    arb_tree_release(&t);
}

Test(greedy, argmax_ties_to_lowest_id_and_vtable)
{
    float row[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 2.0f};
    cr_assert_eq(arb_greedy_argmax(row, 6), 1);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 4, NULL), ARB_OK);
    arb_tree_reset(&t, 3);
    arb_tree_add(&t, 0, 1, ARB_SRC_PLD, 0, NAN);
    arb_tree_add(&t, 1, 4, ARB_SRC_PLD, 0, NAN);
    arb_tree_finalize(&t);
    float logits[3 * 6] = {0};
    logits[0 * 6 + 1] = 3; /* anchor predicts 1: accept node 1 */
    logits[1 * 6 + 2] = 3; /* node 1 predicts 2, drafted 4: reject */
    logits[2 * 6 + 5] = 3;
    void *st;
    arb_verifier_opts vo = arb_verifier_default_opts();
    vo.V = 6;
    vo.n_nodes_max = 4;
    cr_assert_eq(arb_verifier_greedy.create(&vo, &st, NULL), ARB_OK);
    arb_verify_in in = {.tree = &t, .logits = logits, .V = 6};
    arb_verify_out o;
    cr_assert_eq(arb_verifier_greedy.verify(st, &in, &o), ARB_OK);
    cr_assert_eq(o.node, 1);
    cr_assert_eq(o.depth, 1);
    cr_assert_eq(o.extra, 2);
    arb_verifier_greedy.destroy(st);
    arb_tree_release(&t);
}
