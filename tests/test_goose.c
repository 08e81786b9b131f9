/* test_goose.c — GOOSE budget arithmetic, BuildSpineTree invariants, Algorithm 2 routing,
 * the EMA/tier scheduler and the Table 2 ablation switches (docs/spec/drafting.md §4). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "drafters/drafter.h"
#include "drafters/goose.h"
#include "topologies/spine.h"

static uint64_t rs = 0xDEADBEEFCAFEull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

Test(goose, budget_split_test_vectors)
{
    struct { int m; double r; int bs, br, bsp; int a[20]; int na; } v[] = {
        {6, 0.30, 6, 26, 27, {11, 5, 3, 2, 2, 1}, 6},
        {0, 0.15, 0, 29, 30, {0}, 0},
        {3, 0.50, 3, 28, 28, {15, 7, 5}, 3},
        {20, 0.15, 9, 25, 25, {8, 4, 2, 2, 1, 1, 1, 1, 0}, 9},
        {20, 0.50, 20, 19, 20, {5, 2, 1, 1, 1}, 20},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int bs, br, bsp, a[64];
        arb_spine_split(60, v[i].m, v[i].r, 0.5, &bs, &br, &bsp, a);
        cr_assert_eq(bs, v[i].bs, "row %zu bs", i);
        cr_assert_eq(br, v[i].br, "row %zu br", i);
        cr_assert_eq(bsp, v[i].bsp, "row %zu bsp", i);
        for (int j = 0; j < v[i].na; j++)
            cr_assert_eq(a[j], v[i].a[j], "row %zu a_%d", i, j + 1);
    }
}

static arb_method_spec spec(void)
{
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("goose", &s, NULL), ARB_OK);
    return s;
}

/* fill the table with random successor lists (scores decreasing, some below 0.01) */
static void random_table(arb_adj *a, int V)
{
    int32_t ids[10];
    float sc[10];
    for (int x = 0; x < V; x++) {
        float left = 1.0f;
        for (int j = 0; j < 10; j++) { /* distinct, as a real top-K */
            ids[j] = (int32_t)((x * 31 + (int)(rnd() % 7) + 7 * j) % V);
            sc[j] = left * (0.2f + 0.5f * (float)(rnd() % 100) / 100.0f);
            left -= sc[j];
        }
        arb_adj_write(a, (int32_t)(rnd() % (uint32_t)V), x, ids, sc);
    }
}

Test(goose, spine_tree_invariants_on_random_tables)
{
    arb_method_spec s = spec();
    arb_goose *g;
    cr_assert_eq(arb_goose_new(&s, 200, &g, NULL), ARB_OK);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, arb_method_max_nodes(&s), NULL), ARB_OK);
    int32_t d[20];
    for (int trial = 0; trial < 300; trial++) {
        if (trial % 50 == 0) {
            arb_adj_clear(arb_goose_adj(g));
            random_table(arb_goose_adj(g), 200);
        }
        int m = (int)(rnd() % 21);
        for (int i = 0; i < m; i++)
            d[i] = (int32_t)(rnd() % 200);
        double r = (double[]){0.15, 0.30, 0.50}[trial % 3];
        arb_tree_reset(&t, (int32_t)(rnd() % 200));
        arb_step_record rec = {0};
        arb_goose_build(g, (int32_t)(rnd() % 200), t.tok[0], d, m, r, &t, &rec);
        arb_tree_finalize(&t); /* parent < index, depths */
        cr_assert_leq(t.n, 60);
        int bs = m < (int)floor(60 * r) ? m : (int)floor(60 * r);
        cr_assert_eq(rec.bs, bs);
        for (int i = 1; i <= bs; i++) { /* spine chain first, in order */
            cr_assert_eq(t.parent[i], i - 1);
            cr_assert_eq(t.tok[i], d[i - 1]);
            cr_assert(t.flags[i] & ARB_NODE_SPINE);
        }
        for (int i = 1; i < t.n; i++) {
            if (t.flags[i] & ARB_NODE_SPINE)
                continue;
            cr_assert_eq(t.source[i], ARB_SRC_TR);
            cr_assert_geq(t.draft_prob[i], 0.01f, "no node below s_min");
            /* depth below the branch point (nearest spine/anchor ancestor) <= D */
            int rel = 0, v = i;
            while (!(t.flags[v] & ARB_NODE_SPINE) && v != 0) {
                v = t.parent[v];
                rel++;
            }
            cr_assert_leq(rel, 6);
        }
        for (int i = 0; i < t.n; i++) /* no duplicate sibling tokens */
            for (int c = t.first_child[i]; c >= 0; c = t.next_sibling[c])
                for (int e = t.next_sibling[c]; e >= 0; e = t.next_sibling[e])
                    cr_assert_neq(t.tok[c], t.tok[e]);
    }
    arb_tree_release(&t);
    arb_goose_free(g);
}

Test(goose, budget_is_spent_when_successors_are_plentiful)
{
    arb_method_spec s = spec();
    arb_goose *g;
    cr_assert_eq(arb_goose_new(&s, 5000, &g, NULL), ARB_OK);
    /* every token has 10 distinct successors with scores 0.09 each: BFS extension fills B */
    int32_t ids[10];
    float sc[10];
    for (int x = 0; x < 5000; x++) {
        for (int j = 0; j < 10; j++) {
            ids[j] = (x * 7 + j * 13 + 1) % 5000;
            sc[j] = 0.09f;
        }
        arb_adj_write(arb_goose_adj(g), -1, x, ids, sc);
    }
    arb_tree t;
    arb_tree_init(&t, 64, NULL);
    arb_tree_reset(&t, 3);
    arb_step_record rec = {0};
    arb_goose_build(g, -1, 3, NULL, 0, 0.3, &t, &rec);
    cr_assert_eq(t.n, 60);
    arb_tree_release(&t);
    arb_goose_free(g);
}

/* drive the drafter on a sequence; returns the mode */
static arb_step_mode run_propose(const arb_drafter_i *dr, void *st, const int32_t *S, int n, arb_tree *t,
                                 arb_step_record *rec)
{
    memset(rec, 0, sizeof *rec);
    dr->begin(st, 256, true, NULL);
    dr->append(st, S, n);
    arb_tree_reset(t, S[n - 1]);
    dr->propose(st, S, n, t, rec);
    arb_tree_finalize(t);
    return rec->mode;
}

static void harvest_one(const arb_drafter_i *dr, void *st, int32_t prev, int32_t tok, int32_t succ)
{
    int32_t ids[10];
    float sc[10];
    for (int j = 0; j < 10; j++) {
        ids[j] = succ + j;
        sc[j] = j == 0 ? 0.6f : 0.04f;
    }
    arb_harvest h = {.n = 1, .K = 10, .tok = &tok, .prev = &prev, .ids = ids, .scores = sc};
    dr->harvest(st, &h);
}

Test(goose, algorithm2_mode_selection)
{
    /* the spec's literal reading (|d| >= 8, any two lengths agree); the default reading is
       covered by consensus_readings_and_match_length */
    arb_method_spec s = spec();
    s.bypass_match_len = false;
    snprintf(s.consensus, sizeof s.consensus, "any");
    const arb_drafter_i *dr = &arb_drafter_goose;
    void *st;
    cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
    arb_tree t;
    arb_tree_init(&t, 64, NULL);
    arb_step_record rec;
    /* long match (continuation >= 8): bypass chain of the whole continuation */
    int32_t A[40];
    for (int i = 0; i < 20; i++)
        A[i] = A[20 + i] = 100 + i;
    cr_assert_eq(run_propose(dr, st, A, 23, &t, &rec), ARB_MODE_BYPASS);
    cr_assert_eq(t.n, 1 + 20, "C_max = 20 tokens");
    cr_assert_eq(t.tok[1], 103);
    cr_assert(t.flags[1] & ARB_NODE_SPINE);
    /* a continuation of 9 >= 8 tokens (only the 3-gram matches): bypass by length */
    int32_t B[] = {1, 2, 3, 50, 51, 52, 9, 8, 7, 1, 2, 3};
    cr_assert_eq(run_propose(dr, st, B, 12, &t, &rec), ARB_MODE_BYPASS);
    cr_assert_eq(rec.d_len, 9);
    cr_assert_not(rec.consensus);
    /* a short continuation (6 tokens), no consensus: spine tree */
    int32_t C[] = {9, 1, 2, 3, 50, 51, 7, 1, 2, 3};
    cr_assert_eq(run_propose(dr, st, C, 10, &t, &rec), ARB_MODE_TREE);
    cr_assert_eq(rec.d_len, 6);
    cr_assert_not(rec.consensus);
    cr_assert_eq(rec.bs, (int)fmin(6, floor(60 * 0.30)), "p_s_hat 0.3 -> r = 0.30");
    /* consensus (4- and 3-gram agree), short continuation: bypass */
    int32_t D[] = {9, 1, 2, 3, 50, 51, 7, 9, 1, 2, 3};
    cr_assert_eq(run_propose(dr, st, D, 11, &t, &rec), ARB_MODE_BYPASS);
    cr_assert(rec.consensus);
    /* no match, no successors: AR */
    int32_t E[] = {1, 2, 3, 4, 5};
    cr_assert_eq(run_propose(dr, st, E, 5, &t, &rec), ARB_MODE_AR);
    cr_assert_eq(t.n, 1);
    /* no match but the anchor has successors (after begin, which resets the table): TR-only tree */
    dr->begin(st, 256, true, NULL);
    dr->append(st, E, 5);
    harvest_one(dr, st, 4, 5, 600);
    arb_tree_reset(&t, 5);
    memset(&rec, 0, sizeof rec);
    dr->propose(st, E, 5, &t, &rec);
    cr_assert_eq(rec.mode, ARB_MODE_TREE);
    cr_assert_eq(t.tok[1], 600);
    cr_assert_eq(rec.bigram_hits, 2, "the existence check and the root attach used (4,5)");
    dr->destroy(st);
    arb_tree_release(&t);
}

Test(goose, consensus_readings_and_match_length)
{
    /* D: the 4- and 3-gram agree, but from the same occurrence; continuation 7 < 8 */
    int32_t D[] = {9, 1, 2, 3, 50, 51, 7, 9, 1, 2, 3};
    /* F: two different occurrences agree on 2 tokens; continuation 16, matched context 5 */
    int32_t F[] = {1, 2, 3, 4, 5, 50, 51, 52, 8, 3, 4, 5, 50, 51, 53, 9, 1, 2, 3, 4, 5};
    static const struct { const char *consensus; bool match_len; int min; arb_step_mode d, f; } cases[] = {
        {"any", false, 8, ARB_MODE_BYPASS, ARB_MODE_BYPASS},
        {"distinct", false, 8, ARB_MODE_TREE, ARB_MODE_BYPASS},   /* F bypasses by |d| = 16 */
        {"distinct", true, 8, ARB_MODE_TREE, ARB_MODE_BYPASS},    /* F by distinct consensus */
        {"long", true, 8, ARB_MODE_TREE, ARB_MODE_TREE},          /* 2 agreeing tokens < 8 */
        {"long", true, 2, ARB_MODE_BYPASS, ARB_MODE_BYPASS},      /* matched contexts 4 and 5 >= 2 */
        {"any", true, 8, ARB_MODE_BYPASS, ARB_MODE_BYPASS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        arb_method_spec s = spec();
        snprintf(s.consensus, sizeof s.consensus, "%s", cases[i].consensus);
        s.bypass_match_len = cases[i].match_len;
        s.bypass_min = cases[i].min;
        cr_assert_eq(arb_method_spec_validate(&s, NULL), ARB_OK);
        const arb_drafter_i *dr = &arb_drafter_goose;
        void *st;
        cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
        arb_tree t;
        arb_tree_init(&t, 64, NULL);
        arb_step_record rec;
        cr_assert_eq(run_propose(dr, st, D, 11, &t, &rec), cases[i].d, "case %zu, D", i);
        cr_assert_eq(run_propose(dr, st, F, 21, &t, &rec), cases[i].f, "case %zu, F", i);
        cr_assert(rec.consensus_distinct);
        cr_assert_eq(rec.agree_len, 2);
        cr_assert_eq(rec.match_len, 5);
        dr->destroy(st);
        arb_tree_release(&t);
    }
    arb_method_spec s = spec();
    snprintf(s.consensus, sizeof s.consensus, "most");
    cr_assert_neq(arb_method_spec_validate(&s, NULL), ARB_OK, "unknown consensus reading");
}

/* begin, append S, write the successor pairs (prev, tok) -> succ, then propose */
static void propose_after(const arb_drafter_i *dr, void *st, const int32_t *S, int n, const int32_t (*succ)[3],
                          int n_succ, arb_tree *t, arb_step_record *rec)
{
    memset(rec, 0, sizeof *rec);
    dr->begin(st, 256, true, NULL);
    dr->append(st, S, n);
    for (int i = 0; i < n_succ; i++)
        harvest_one(dr, st, succ[i][0], succ[i][1], succ[i][2]);
    arb_tree_reset(t, S[n - 1]);
    dr->propose(st, S, n, t, rec);
    arb_tree_finalize(t);
}

Test(goose, control_bypass_chain_holds_no_pld_tokens)
{
    /* control_bypass: the control row swaps every PLD token for a TR-drawn one, the bypass
       chain included; the default control leaves bypass chains alone */
    int32_t A[40];
    for (int i = 0; i < 20; i++)
        A[i] = A[20 + i] = 100 + i;
    static const int32_t succ[][3] = {{101, 102, 500}, {102, 500, 501}}; /* (a_prev, anchor) -> 500 -> 501 */
    for (int swap = 1; swap >= 0; swap--) {
        arb_method_spec s;
        cr_assert_eq(arb_method_spec_preset("goose-control", &s, NULL), ARB_OK);
        s.control_bypass = swap;
        s.bypass_match_len = false; /* bypass on |d| = 20 */
        const arb_drafter_i *dr = &arb_drafter_goose;
        void *st;
        cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
        arb_tree t;
        arb_tree_init(&t, 64, NULL);
        arb_step_record rec;
        propose_after(dr, st, A, 23, succ, 2, &t, &rec);
        cr_assert_eq(rec.mode, ARB_MODE_BYPASS, "the real match still decides the mode");
        if (swap) {
            cr_assert_eq(t.n, 3, "chain stops where the table has no successor");
            cr_assert(t.tok[1] == 500 && t.tok[2] == 501);
        } else {
            cr_assert_eq(t.n, 21, "the real 20-token continuation");
            cr_assert_eq(t.tok[1], 103);
        }
        for (int i = 1; i < t.n; i++) {
            cr_assert_eq(t.source[i], swap ? ARB_SRC_TR : ARB_SRC_PLD);
            cr_assert(t.flags[i] & ARB_NODE_SPINE, "spine priority kept");
        }
        dr->destroy(st);
        arb_tree_release(&t);
    }
}

Test(goose, ema_and_tiers)
{
    arb_method_spec s = spec();
    cr_assert_float_eq(arb_goose_tier(&s, 0.19), 0.15, 1e-12);
    cr_assert_float_eq(arb_goose_tier(&s, 0.2), 0.30, 1e-12);
    cr_assert_float_eq(arb_goose_tier(&s, 0.39), 0.30, 1e-12);
    cr_assert_float_eq(arb_goose_tier(&s, 0.4), 0.50, 1e-12);
    snprintf(s.scheduler, sizeof s.scheduler, "fixed");
    s.fixed_r = 0.42;
    cr_assert_float_eq(arb_goose_tier(&s, 0.9), 0.42, 1e-12);
    s = spec();
    const arb_drafter_i *dr = &arb_drafter_goose;
    void *st;
    cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
    arb_tree t;
    arb_tree_init(&t, 64, NULL);
    arb_step_record rec;
    int32_t A[40];
    for (int i = 0; i < 20; i++)
        A[i] = A[20 + i] = 100 + i;
    run_propose(dr, st, A, 30, &t, &rec); /* matched context 10 >= 8: bypass, 20 spine nodes */
    cr_assert_eq(rec.mode, ARB_MODE_BYPASS);
    cr_assert_eq(t.n, 21);
    cr_assert_float_eq(rec.p_s_hat, 0.3, 1e-6);
    int32_t path[21];
    for (int i = 0; i <= 5; i++)
        path[i] = i; /* 5 of 20 accepted: obs 0.25 */
    dr->verified(st, &t, path, 6, &rec);
    cr_assert_float_eq(arb_goose_ps_hat(st), 0.3 * 0.25 + 0.7 * 0.3, 1e-12);
    /* all rejected, repeatedly: the estimate falls through 0.2 within a few cycles */
    int cycles = 0;
    while (arb_goose_ps_hat(st) >= 0.2) {
        dr->verified(st, &t, path, 1, &rec);
        cycles++;
    }
    cr_assert_eq(cycles, 1, "0.285 * 0.7 = 0.1995");
    dr->destroy(st);
    arb_tree_release(&t);
}

static int spine_children_tr(const arb_tree *t)
{
    int n = 0;
    for (int i = 1; i < t->n; i++)
        if (!(t->flags[i] & ARB_NODE_SPINE) && t->parent[i] > 0 && (t->flags[t->parent[i]] & ARB_NODE_SPINE))
            n++;
    return n;
}

Test(goose, ablation_switches_change_the_documented_structure)
{
    int32_t S[] = {9, 1, 2, 3, 50, 51, 7, 1, 2, 3};
    arb_tree t;
    arb_tree_init(&t, 64, NULL);
    arb_step_record rec;
    const arb_drafter_i *dr = &arb_drafter_goose;
    const char *presets[] = {"goose", "goose-nospinebr", "goose-nospine", "goose-control", "goose-nobypass",
                             "goose-unigram"};
    int n_spine[6], spine_br[6], bypass_modes[6], bigram[6];
    for (int p = 0; p < 6; p++) {
        arb_method_spec s;
        cr_assert_eq(arb_method_spec_preset(presets[p], &s, NULL), ARB_OK);
        void *st;
        cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
        dr->begin(st, 256, true, NULL);
        dr->append(st, S, 10);
        /* successors for every token of the sequence and of the spine */
        for (int x = 0; x < 1000; x++)
            harvest_one(dr, st, -1, x, (x * 7 + 1) % 990);
        for (int x = 0; x < 100; x++)
            for (int pv = 0; pv < 100; pv += 33)
                harvest_one(dr, st, pv, x, 200 + x);
        harvest_one(dr, st, 2, 3, 300);
        harvest_one(dr, st, 3, 50, 310);
        arb_tree_reset(&t, 3);
        memset(&rec, 0, sizeof rec);
        dr->propose(st, S, 10, &t, &rec);
        arb_tree_finalize(&t);
        n_spine[p] = 0;
        for (int i = 1; i < t.n; i++)
            n_spine[p] += (t.flags[i] & ARB_NODE_SPINE) != 0;
        spine_br[p] = spine_children_tr(&t);
        bigram[p] = rec.bigram_hits;
        /* a consensus state (two occurrences agree; short matched context): does it bypass? */
        int32_t F[] = {1, 2, 3, 4, 5, 50, 51, 52, 8, 3, 4, 5, 50, 51, 53, 9, 1, 2, 3, 4, 5};
        bypass_modes[p] = run_propose(dr, st, F, 21, &t, &rec) == ARB_MODE_BYPASS;
        dr->destroy(st);
    }
    cr_assert_gt(n_spine[0], 0);
    cr_assert_gt(spine_br[0], 0, "default: branches under spine nodes");
    cr_assert_eq(spine_br[1], 0, "spine_branches off: no TR child under a spine node");
    cr_assert_gt(n_spine[1], 0);
    cr_assert_eq(n_spine[2], 0, "context_spine off: TR-only tree");
    cr_assert_eq(n_spine[3], n_spine[0], "control keeps the spine length");
    cr_assert(bypass_modes[0] && bypass_modes[1] && bypass_modes[3]);
    cr_assert_not(bypass_modes[4], "bypass off");
    cr_assert_gt(bigram[0], 0);
    cr_assert_eq(bigram[5], 0, "unigram only");
    arb_tree_release(&t);
}

Test(goose, control_spine_tokens_come_from_the_table)
{
    arb_method_spec s;
    arb_method_spec_preset("goose-control", &s, NULL);
    const arb_drafter_i *dr = &arb_drafter_goose;
    void *st;
    cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
    int32_t S[] = {9, 1, 2, 3, 50, 51, 7, 1, 2, 3};
    dr->begin(st, 256, true, NULL);
    dr->append(st, S, 10);
    harvest_one(dr, st, 2, 3, 400);   /* d'_1 = 400 */
    harvest_one(dr, st, 3, 400, 500); /* d'_2 = 500 */
    arb_tree t;
    arb_tree_init(&t, 64, NULL);
    arb_tree_reset(&t, 3);
    arb_step_record rec = {0};
    dr->propose(st, S, 10, &t, &rec);
    arb_tree_finalize(&t);
    cr_assert_eq(rec.mode, ARB_MODE_TREE);
    cr_assert_eq(t.tok[1], 400);
    cr_assert_eq(t.source[1], ARB_SRC_TR);
    cr_assert(t.flags[1] & ARB_NODE_SPINE);
    cr_assert_eq(t.tok[2], 500);
    cr_assert_eq(t.parent[2], 1);
    dr->destroy(st);
    arb_tree_release(&t);
}

Test(goose, bypass_chain_cap)
{
    /* a 60-token repeat: the bypass chain is C_max = 20 long with bypass_max 0 (the spec), B - 1
       with -1 (the default), bypass_max long otherwise */
    int32_t A[120];
    for (int i = 0; i < 60; i++)
        A[i] = A[60 + i] = 1000 + i;
    const int caps[] = {0, 40, 10, -1};
    const int want[] = {20, 40, 10, 59}; /* -1: B - 1 */
    for (int c = 0; c < 4; c++) {
        arb_method_spec s = spec();
        s.bypass_max = caps[c];
        cr_assert_eq(arb_method_spec_validate(&s, NULL), ARB_OK);
        cr_assert_geq(arb_method_max_nodes(&s), 1 + want[c]);
        const arb_drafter_i *dr = &arb_drafter_goose;
        void *st;
        cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
        arb_tree t;
        arb_tree_init(&t, arb_method_max_nodes(&s), NULL);
        arb_step_record rec;
        cr_assert_eq(run_propose(dr, st, A, 70, &t, &rec), ARB_MODE_BYPASS, "cap %d", caps[c]);
        cr_assert_eq(t.n, 1 + want[c], "cap %d", caps[c]);
        cr_assert_eq(t.tok[t.n - 1], 1000 + (10 + want[c] - 1) % 60);
        cr_assert_eq(rec.d_len, 20, "the tree spine's C_max is unchanged");
        dr->destroy(st);
        arb_tree_release(&t);
    }
}

Test(goose, ema_geometric_observation)
{
    /* 5 of a 20-token bypass chain accepted: the spec's observation is 5/20, the geometric
       reading's 5/6 (five successes, one failure); a fully accepted chain observes 1 */
    int32_t A[40];
    for (int i = 0; i < 20; i++)
        A[i] = A[20 + i] = 100 + i;
    arb_method_spec s = spec();
    s.ema_geometric = true;
    const arb_drafter_i *dr = &arb_drafter_goose;
    void *st;
    cr_assert_eq(dr->create(&s, 1000, &st, NULL), ARB_OK);
    arb_tree t;
    arb_tree_init(&t, 64, NULL);
    arb_step_record rec;
    cr_assert_eq(run_propose(dr, st, A, 30, &t, &rec), ARB_MODE_BYPASS);
    cr_assert_eq(t.n, 21);
    int32_t path[21];
    for (int i = 0; i <= 20; i++)
        path[i] = i;
    dr->verified(st, &t, path, 6, &rec);
    cr_assert_float_eq(arb_goose_ps_hat(st), 0.3 * (5.0 / 6.0) + 0.7 * 0.3, 1e-12);
    double before = arb_goose_ps_hat(st);
    dr->verified(st, &t, path, 21, &rec);
    cr_assert_float_eq(arb_goose_ps_hat(st), 0.3 * 1.0 + 0.7 * before, 1e-12);
    dr->destroy(st);
    arb_tree_release(&t);
}
