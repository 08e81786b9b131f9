/* test_entmtp_frontier.c — EntMTP's acceptance frontier (docs/spec/drafting.md §10.1) on synthetic
 * acceptance statistics: score_all equals per-candidate evaluation, Algorithm 1 with an exact
 * scorer equals the brute-force best tree of every size, and the hull equals a dominance scan. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drafters/medusa.h"
#include "entmtp_frontier.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

Test(entmtp_frontier, parse_format_roundtrip_mc_sim)
{
    static arb_etree t, u;
    arb_err err = {0};
    cr_assert_eq(arb_etree_parse(arb_medusa_mc_sim_7b_63, &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.n, 64); /* 63 paths + the anchor */
    int per_depth[5] = {0};
    for (int v = 0; v < t.n; v++)
        per_depth[t.depth[v]]++;
    cr_assert(per_depth[1] == 10 && per_depth[2] == 28 && per_depth[3] == 23 && per_depth[4] == 2);
    char buf[4096];
    cr_assert_gt(arb_etree_format(&t, buf, sizeof buf), 0);
    cr_assert_eq(arb_etree_parse(buf, &u, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(&t, &u, sizeof t), 0);
    for (int v = 1; v < t.n; v++) /* canonical: parents first, depth = parent + 1 */
        cr_assert(t.parent[v] < v && t.depth[v] == t.depth[t.parent[v]] + 1);
}

Test(entmtp_frontier, canon_rejects_a_missing_parent)
{
    static arb_etree t;
    arb_err err = {0};
    t.n = 2;
    t.path[1] = (arb_epath){.len = 2, .r = {0, 0}};
    cr_assert_eq(arb_etree_canon(&t, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "[0,0]"), "%s", err.msg);
}

Test(entmtp_frontier, next_children_one_per_node)
{
    static arb_etree t;
    arb_err err = {0};
    cr_assert_eq(arb_etree_parse("[[0],[1],[0,0]]", &t, &err), 0);
    arb_epath F[16];
    int nF = arb_frontier_next_children(&t, 2, F, 16);
    /* anchor -> [2]; [0] -> [0,1]; [1] -> [1,0]; [0,0] is at depth 2 = D */
    cr_assert_eq(nF, 3);
    cr_assert(F[0].len == 1 && F[0].r[0] == 2);
    cr_assert(F[1].len == 2 && F[1].r[0] == 0 && F[1].r[1] == 1);
    cr_assert(F[2].len == 2 && F[2].r[0] == 1 && F[2].r[1] == 0);
    cr_assert_eq(arb_frontier_next_children(&t, 1, F, 16), 1);
}

/* A synthetic step: the target's choice at depth d is rank truth[d] (or none: 10). */
static void pass_flags(const arb_etree *J, const int *truth, bool *pass)
{
    for (int v = 1; v < J->n; v++)
        pass[v] = J->rank[v] == truth[J->depth[v]];
}

static int accept_len(const arb_etree *t, const int *truth)
{
    bool ok[ARB_ETREE_MAX];
    int best = 0;
    ok[0] = true;
    for (int v = 1; v < t->n; v++) {
        ok[v] = ok[t->parent[v]] && t->rank[v] == truth[t->depth[v]];
        if (ok[v] && t->depth[v] > best)
            best = t->depth[v];
    }
    return best + 1;
}

/* §13: score_all equals the per-candidate evaluation of T ∪ {ν} on the same steps. */
Test(entmtp_frontier, score_all_equals_separate_evaluation)
{
    static arb_etree T, J, Tc;
    arb_err err = {0};
    for (int trial = 0; trial < 40; trial++) {
        T.n = 1;
        memset(T.path, 0, sizeof T.path);
        cr_assert_eq(arb_etree_canon(&T, &err), 0);
        int grow = 1 + (int)(rnd() % 30);
        arb_epath F[ARB_ETREE_MAX];
        for (int g = 0; g < grow; g++) { /* random rank-closed tree */
            int nF = arb_frontier_next_children(&T, 4, F, ARB_ETREE_MAX);
            T.path[T.n++] = F[rnd() % (uint32_t)nF];
            cr_assert_eq(arb_etree_canon(&T, &err), 0, "%s", err.msg);
        }
        int nF = arb_frontier_next_children(&T, 4, F, ARB_ETREE_MAX);
        int32_t cand[ARB_ETREE_MAX];
        cr_assert_eq(arb_frontier_joint(&T, F, nF, &J, cand, &err), 0, "%s", err.msg);
        cr_assert_eq(J.n, T.n + nF);
        double acc[ARB_ETREE_MAX] = {0}, ref[ARB_ETREE_MAX] = {0};
        for (int step = 0; step < 50; step++) {
            int truth[ARB_ETREE_DEPTH + 1];
            for (int d = 1; d <= ARB_ETREE_DEPTH; d++)
                truth[d] = (int)(rnd() % 4); /* ranks 0..2 or a miss (3 is rarely in trees) */
            bool pass[ARB_ETREE_MAX];
            pass_flags(&J, truth, pass);
            int stop = arb_frontier_score_step(&J, cand, nF, pass, acc);
            cr_assert_eq(J.depth[stop] + 1, accept_len(&T, truth));
            for (int c = 0; c < nF; c++) {
                Tc = T;
                Tc.path[Tc.n++] = F[c];
                cr_assert_eq(arb_etree_canon(&Tc, &err), 0);
                ref[c] += accept_len(&Tc, truth);
            }
        }
        for (int c = 0; c < nF; c++)
            cr_assert_eq(acc[c], ref[c], "trial %d candidate %d: %g vs %g", trial, c, acc[c], ref[c]);
    }
}

/* Independent, mutually exclusive ranks: P(node passes | parent passed) = q[depth][rank], so the
   expected accept length of a tree is 1 + Σ_v Π_{path} q, computed exactly. */
static double q[ARB_ETREE_DEPTH + 1][ARB_ETREE_RANKS];

static double expected(const arb_etree *t)
{
    double val[ARB_ETREE_MAX], s = 1;
    val[0] = 1;
    for (int v = 1; v < t->n; v++) {
        val[v] = val[t->parent[v]] * q[t->depth[v]][t->rank[v]];
        s += val[v];
    }
    return s;
}

static int exact_scorer(const arb_etree *T, const arb_epath *F, int nF, double *a, void *ud, arb_err *err)
{
    static arb_etree Tc;
    for (int c = 0; c < nF; c++) {
        Tc = *T;
        Tc.path[Tc.n++] = F[c];
        if (arb_etree_canon(&Tc, err))
            return ARB_E_INVAL;
        a[c] = expected(&Tc);
    }
    (*(int *)ud)++;
    return ARB_OK;
}

/* Brute force: every rank-closed tree of up to nmax nodes and depth <= D, reached by adding
   next children in every order; best[n] = the largest expectation among trees of n nodes. */
static void brute(const arb_etree *t, int D, int nmax, double *best)
{
    double e = expected(t);
    if (e > best[t->n])
        best[t->n] = e;
    if (t->n == nmax)
        return;
    arb_epath F[ARB_ETREE_MAX];
    int nF = arb_frontier_next_children(t, D, F, ARB_ETREE_MAX);
    arb_etree *u = malloc(sizeof *u);
    for (int c = 0; c < nF; c++) {
        *u = *t;
        u->path[u->n++] = F[c];
        arb_etree_canon(u, NULL);
        brute(u, D, nmax, best);
    }
    free(u);
}

Test(entmtp_frontier, greedy_frontier_equals_brute_force_best)
{
    for (int trial = 0; trial < 6; trial++) {
        for (int d = 1; d <= ARB_ETREE_DEPTH; d++) { /* decreasing in rank, Σ_r q <= 1 */
            double left = 0.3 + 0.6 * (rnd() % 1000) / 1000.0;
            for (int r = 0; r < ARB_ETREE_RANKS; r++) {
                q[d][r] = left * (0.3 + 0.5 * (rnd() % 1000) / 1000.0);
                left -= q[d][r];
            }
            for (int r = 1; r < ARB_ETREE_RANKS; r++) /* sort: rank-closed trees stay optimal */
                for (int j = r; j > 0 && q[d][j] > q[d][j - 1]; j--) {
                    double x = q[d][j];
                    q[d][j] = q[d][j - 1], q[d][j - 1] = x;
                }
        }
        int D = 1 + trial % 3, B = 7, calls = 0;
        arb_frontier_point *H;
        int nH;
        arb_err err = {0};
        cr_assert_eq(arb_frontier_grow(D, B, exact_scorer, &calls, &H, &nH, &err), 0, "%s", err.msg);
        cr_assert_eq(nH, B - 2); /* one point per added node after {[0]} */
        cr_assert_eq(calls, nH);
        double best[ARB_ETREE_MAX];
        for (int i = 0; i < ARB_ETREE_MAX; i++)
            best[i] = -1;
        static arb_etree root;
        root.n = 1;
        arb_etree_canon(&root, NULL);
        brute(&root, D, B, best);
        for (int i = 0; i < nH; i++) {
            cr_assert_eq(H[i].n, i + 3);
            cr_assert(H[i].tree.max_depth <= D);
            cr_assert_float_eq(H[i].a, expected(&H[i].tree), 1e-12);
            cr_assert_float_eq(H[i].a, best[H[i].n], 1e-12, "D %d n %d: greedy %.6f, best %.6f", D, H[i].n,
                               H[i].a, best[H[i].n]);
        }
        free(H);
    }
}

Test(entmtp_frontier, hull_equals_dominance_scan)
{
    static arb_frontier_point p[60];
    for (int trial = 0; trial < 30; trial++) {
        int n = 5 + (int)(rnd() % 55);
        for (int i = 0; i < n; i++) {
            p[i].n = 2 + (int)(rnd() % 20);
            p[i].a = 1 + (rnd() % 40) / 10.0; /* coarse: ties happen */
            p[i].a_self = p[i].a + ((int)(rnd() % 5) - 2) / 10.0;
        }
        for (int self = 0; self < 2; self++) {
            int keep[60], nk = arb_frontier_hull(p, n, self, keep);
            bool in[60] = {0};
            for (int k = 0; k < nk; k++) {
                in[keep[k]] = true;
                if (k)
                    cr_assert_leq(p[keep[k - 1]].n, p[keep[k]].n);
            }
            for (int i = 0; i < n; i++) {
                double vi = self ? p[i].a_self : p[i].a;
                bool dom = false;
                for (int j = 0; j < n; j++) {
                    double vj = self ? p[j].a_self : p[j].a;
                    if (j != i && p[j].n <= p[i].n && vj >= vi && (p[j].n < p[i].n || vj > vi || j < i))
                        dom = true;
                }
                cr_assert_eq(in[i], !dom, "trial %d point %d", trial, i);
            }
        }
    }
}

Test(entmtp_frontier, grow_rejects_bad_arguments)
{
    arb_frontier_point *H = (void *)1;
    int nH = 7, calls = 0;
    arb_err err = {0};
    cr_assert_eq(arb_frontier_grow(0, 10, exact_scorer, &calls, &H, &nH, &err), ARB_E_INVAL);
    cr_assert(H == NULL && nH == 0);
    cr_assert(strstr(err.msg, "depth"));
}
