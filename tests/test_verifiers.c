/* test_verifiers.c — Monte Carlo losslessness of every sampling verifier on the real
 * sampling path (docs/spec/verification.md §11.4): production drafting (tree.h + arb_rng), the
 * verifier from the registry, plain target sampling to complete H = 2 tokens. For each
 * configuration the first token and the first two tokens are compared with the exact
 * target law by Pearson X² (cells with expected count < 20 merged, α = 1e-9) and by TV
 * against its expectation + 6 standard deviations at N draws; the paired acceptance-length check ties each
 * draw's realised accepted length to its exact conditional mean (otanalysis.c). The machinery
 * is tests/vf_mc.h; test_verifiers_long.c (suite stats-long) runs it at 10^6 draws on 20+ models.
 * Negative controls (§11.5, all five) must FAIL the same tests. Typical acceptance
 * (approximate, docs/spec/verification.md §9) is run as "expected to deviate": the same tests
 * must flag it, and its TV from the target law is printed (docs/sampling.md).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "method.h"
#include "verifiers/greedy.h"
#include "vf_mc.h"

/* 10^5 draws per configuration; under AddressSanitizer (a memory check, ~20x slower) 2*10^4:
   the X² and TV bounds are computed for the actual N, so they stay calibrated. */
#if defined(__SANITIZE_ADDRESS__)
#define N_DRAWS 20000
#else
#define N_DRAWS 100000
#endif
/* The three small-TV controls (exact TV 0.0067-0.0089 on H3) need more draws than the methods:
   their X² noncentrality is 4.7e-4..7.1e-4 per draw, so at 10^5 draws λ = 47..71 against a
   critical value of 61 (df 8, α = 1e-9) and the test catches them only part of the time. At
   4*10^5, λ = 188..284 and the miss probability is below 1e-5 (measured power in
   docs/sampling.md, "Tests"). Same N under ASan: the controls must fail there too. */
#define N_CONTROL 400000

static void check(const vm_model *m, const char *model_name, const mc_cfg *c)
{
    /* an expected deviation is measured at the full 10^5 draws even under the sanitizers, so
       the printed TV and the power of the check do not depend on the build */
    mc_stats s = run_mc(m, c, c->deviates ? 100000 : N_DRAWS);
    char buf[64], vb[32];
    printf("[verifiers] %-12s %-8s %-18s TV1 %.4f (bound %.4f) TV2 %.4f (bound %.4f) "
           "X2 %.1f/%.1f df %d  E[acc] %.4f  paired %+.5f (6sd/sqrtN %.5f) fallback %d\n",
           cfg_label(c, vb, sizeof vb), model_name,
           regime_label(&c->g, buf, sizeof buf), s.tv[1], s.tv_bound[1], s.tv[2], s.tv_bound[2],
           s.x2[2], s.crit[2], s.df[2], s.mean_acc, s.mean_diff, 6 * s.sd_diff / sqrt((double)s.n_pair),
           s.n_fallback);
    fflush(stdout);
    if (c->deviates) { /* approximate by design: the suite must see it, TV clearly above noise */
        cr_expect_not(passes(&s), "%s %s: an approximate verifier passed the losslessness tests", c->verifier,
                      regime_label(&c->g, buf, sizeof buf));
        cr_expect(s.x2[1] > s.crit[1] || s.x2[2] > s.crit[2], "%s: X2 does not flag it", c->verifier);
        cr_expect_gt(s.tv[1], s.tv_bound[1], "%s: the first-token TV %.4f is within noise (%.4f)", c->verifier,
                     s.tv[1], s.tv_bound[1]);
        cr_expect_eq(s.n_fallback, 0);
        return;
    }
    for (int h = 1; h <= 2; h++) {
        cr_expect_leq(s.x2[h], s.crit[h], "%s %s H=%d: X2 %.2f > %.2f (df %d)", c->verifier,
                      regime_label(&c->g, buf, sizeof buf), h, s.x2[h], s.crit[h], s.df[h]);
        cr_expect_leq(s.tv[h], s.tv_bound[h], "%s H=%d: TV %.5f > %.5f", c->verifier, h, s.tv[h],
                      s.tv_bound[h]);
    }
    if (s.paired)
        cr_expect_leq(fabs(s.mean_diff), 6 * s.sd_diff / sqrt((double)s.n_pair) + 1e-12,
                      "%s: realised accepted length disagrees with its exact mean", c->verifier);
    cr_expect_eq(s.n_fallback, 0, "%s: %d fallbacks", c->verifier, s.n_fallback);
}

static const char *const ALL8[] = {"nss", "naive", "naivetree", "bv", "spectr", "specinfer", "khisti",
                                   "traversal"};

Test(verifiers, registry_and_validity_matrix)
{
    cr_assert_not_null(arb_verifier_at(7));
    cr_assert_null(arb_verifier_at(-1));
    for (int i = 0; i < 8; i++) {
        const arb_verifier_i *vi = arb_verifier_find(ALL8[i]);
        cr_assert_not_null(vi, "%s missing", ALL8[i]);
        cr_assert_eq(arb_verifier_check(ALL8[i], ARB_REGIME_SINGLE, NULL), 0);
        cr_assert_eq(arb_verifier_check(ALL8[i], ARB_REGIME_IID, NULL), 0);
    }
    arb_err err = {0};
    cr_assert_eq(arb_verifier_check("spectr", ARB_REGIME_WOR, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "spectr") && strstr(err.msg, "wor"), "%s", err.msg);
    cr_assert_eq(arb_verifier_check("specinfer", ARB_REGIME_WOR, NULL), ARB_E_INVAL);
    cr_assert_eq(arb_verifier_check("khisti", ARB_REGIME_WOR, NULL), ARB_E_INVAL);
    cr_assert_eq(arb_verifier_check("traversal", ARB_REGIME_WOR, NULL), 0);
    cr_assert_eq(arb_verifier_check("naivetree", ARB_REGIME_WOR, NULL), 0);
    cr_assert_eq(arb_verifier_check("traversal", ARB_REGIME_DET, NULL), ARB_E_INVAL);
    cr_assert_eq(arb_verifier_check("nss", ARB_REGIME_DET, NULL), 0);
    cr_assert_eq(arb_verifier_find("naive")->valid[ARB_REGIME_IID], ARB_VALID_FIRST_PATH);
    cr_assert_eq(arb_verifier_check("nope", ARB_REGIME_IID, NULL), ARB_E_INVAL);
    arb_regime r;
    cr_assert_eq(arb_regime_parse("delayed", &r), 0);
    cr_assert_eq(r, ARB_REGIME_DELAYED);
    cr_assert_eq(arb_regime_parse("Delayed", &r), ARB_E_INVAL);
    for (int i = 0; arb_verifier_at(i); i++) { /* every entry: new/free pair, bad opts */
        const arb_verifier_i *vi = arb_verifier_at(i);
        arb_verifier_opts o = arb_verifier_default_opts();
        arb_verifier *vf = (arb_verifier *)1;
        cr_assert_eq(arb_verifier_new(vi->name, &o, &vf, &err), ARB_E_INVAL, "%s V = 0", vi->name);
        cr_assert_null(vf);
        o.V = 5;
        cr_assert_eq(arb_verifier_new(vi->name, &o, &vf, &err), 0, "%s", err.msg);
        arb_verifier_free(vf);
    }
    arb_verifier_free(NULL);
}

Test(verifiers, rejects_oversized_tree_and_missing_q)
{
    arb_err err = {0};
    arb_verifier_opts o = arb_verifier_default_opts();
    o.V = 3;
    o.n_nodes_max = 2;
    arb_verifier *vf;
    cr_assert_eq(arb_verifier_new("traversal", &o, &vf, &err), 0);
    static vm_draft d;
    arb_tree_init(&d.t, 8, &err);
    vm_model m;
    vm_h3(&m, 3);
    vm_regime g = {.kind = ARB_REGIME_SINGLE, .L = 2};
    arb_rng r;
    arb_rng_init(&r, 1, 0, 0, 0);
    vm_draw(&d, &m, &g, &r);
    arb_verify_in in = {.tree = &d.t, .p = d.P, .q = d.Q, .V = 3, .rng = &r};
    arb_verify_out out;
    cr_assert_eq(arb_verifier_verify(vf, &in, &out), ARB_E_INVAL); /* 3 nodes > 2 */
    arb_verifier_free(vf);
    o.n_nodes_max = 8;
    cr_assert_eq(arb_verifier_new("spectr", &o, &vf, &err), 0);
    in.q = NULL;
    cr_assert_eq(arb_verifier_verify(vf, &in, &out), ARB_E_INVAL);
    arb_verifier_free(vf);
    arb_tree_release(&d.t);
    vm_free(&m);
}

/* SINGLE chains L = 1 and L = 3, random V = 4 model: all eight verifiers. */
Test(verifiers, single_path_all, .timeout = 240)
{
    vm_model m;
    vm_random(&m, 4, 4, 11);
    for (int i = 0; i < 8; i++) {
        mc_cfg c = {.verifier = ALL8[i], .g = {.kind = ARB_REGIME_SINGLE, .L = 3}, .id = 100 + i};
        check(&m, "rand4", &c);
        mc_cfg c1 = {.verifier = ALL8[i], .g = {.kind = ARB_REGIME_SINGLE, .L = 1}, .id = 110 + i};
        check(&m, "rand4", &c1);
    }
    vm_free(&m);
}

/* IID k = 3, L = 2 on H3 and k = 2, L = 2 on a random V = 4 model: every verifier
   (naive/bv on path 1), SpecInfer in both modes, Khisti at s = 2 and 5. */
Test(verifiers, iid_all, .timeout = 300)
{
    vm_model h3, r4;
    vm_h3(&h3, 3);
    vm_random(&r4, 4, 3, 12);
    for (int i = 0; i < 8; i++) {
        mc_cfg c = {.verifier = ALL8[i], .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, .id = 200 + i};
        check(&h3, "H3", &c);
        mc_cfg c2 = {.verifier = ALL8[i], .g = {.kind = ARB_REGIME_IID, .k = 2, .L = 2}, .id = 220 + i};
        check(&r4, "rand4", &c2);
    }
    mc_cfg u = {.verifier = "specinfer", .uniform = 1, .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, .id = 240};
    check(&h3, "H3", &u);
    mc_cfg k2 = {.verifier = "khisti", .khisti_s = 2, .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, .id = 241};
    check(&r4, "rand4", &k2);
    vm_free(&h3);
    vm_free(&r4);
}

/* IID k = 4, L = 3 on a random V = 4 model: the §11.4 list (nss, naivetree, spectr, specinfer
   in both modes, khisti s = 2 and 5, traversal). */
Test(verifiers, iid_k4_l3, .timeout = 300)
{
    vm_model m;
    vm_random(&m, 4, 4, 14);
    mc_cfg c[] = {{.verifier = "nss"}, {.verifier = "naivetree"}, {.verifier = "spectr"},
                  {.verifier = "specinfer"}, {.verifier = "specinfer", .uniform = 1},
                  {.verifier = "khisti", .khisti_s = 2}, {.verifier = "khisti"}, {.verifier = "traversal"}};
    for (int i = 0; i < (int)(sizeof c / sizeof c[0]); i++) {
        c[i].g = (vm_regime){.kind = ARB_REGIME_IID, .k = 4, .L = 3};
        c[i].id = 250 + (uint32_t)i;
        check(&m, "rand4", &c[i]);
    }
    vm_free(&m);
}

/* Khisti on sparse laws (p and q on at most 4 of 8 tokens in every context): its rounds run
   over the support only (khisti.c), s = 5 taking zero-key tokens outside it into the truncated
   set; IID k = 3, L = 2 at s = 2 and 5, and DELAYED (1, 3, 2). */
Test(verifiers, khisti_sparse_laws, .timeout = 300)
{
    vm_model m;
    vm_sparse(&m, 8, 3, 17);
    mc_cfg c[] = {{.verifier = "khisti", .khisti_s = 2, .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}},
                  {.verifier = "khisti", .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}},
                  {.verifier = "khisti", .g = {.kind = ARB_REGIME_DELAYED, .l = 1, .k = 3, .L = 2}}};
    for (int i = 0; i < 3; i++) {
        c[i].id = 360 + (uint32_t)i;
        check(&m, "sparse8", &c[i]);
    }
    vm_free(&m);
}

/* DELAYED (1, 3, 2) on a random V = 4 model: the OT methods and Traversal. */
Test(verifiers, delayed, .timeout = 300)
{
    vm_model m;
    vm_random(&m, 4, 4, 13);
    const char *names[] = {"nss", "naivetree", "spectr", "specinfer", "khisti", "traversal"};
    for (int i = 0; i < 6; i++) {
        mc_cfg c = {.verifier = names[i], .g = {.kind = ARB_REGIME_DELAYED, .l = 1, .k = 3, .L = 2}, .id = 300 + i};
        check(&m, "rand4", &c);
    }
    vm_free(&m);
}

/* DELAYED (2, 3, 2), the §11.4 configuration (trunk 2, three chains of 2; depth 4). */
Test(verifiers, delayed_232, .timeout = 300)
{
    vm_model m;
    vm_random(&m, 4, 4, 15);
    mc_cfg c[] = {{.verifier = "nss"}, {.verifier = "naivetree"}, {.verifier = "spectr"},
                  {.verifier = "specinfer"}, {.verifier = "specinfer", .uniform = 1},
                  {.verifier = "khisti", .khisti_s = 2}, {.verifier = "khisti"}, {.verifier = "traversal"}};
    for (int i = 0; i < (int)(sizeof c / sizeof c[0]); i++) {
        c[i].g = (vm_regime){.kind = ARB_REGIME_DELAYED, .l = 2, .k = 3, .L = 2};
        c[i].id = 320 + (uint32_t)i;
        check(&m, "rand4", &c[i]);
    }
    vm_free(&m);
}

/* WOR m = 2, L = 2 (H3): the methods valid there; DET top-2 depth 2: NSS only. */
Test(verifiers, wor_and_det, .timeout = 200)
{
    vm_model m;
    vm_h3(&m, 3);
    const char *names[] = {"nss", "naivetree", "traversal"};
    for (int i = 0; i < 3; i++) {
        mc_cfg c = {.verifier = names[i], .g = {.kind = ARB_REGIME_WOR, .k = 2, .L = 2}, .id = 400 + i};
        check(&m, "H3", &c);
    }
    mc_cfg c = {.verifier = "nss", .g = {.kind = ARB_REGIME_DET, .k = 2, .L = 2}, .id = 410};
    check(&m, "H3", &c);
    vm_free(&m);
}

/* Laws on demand (arb_verify_in.p_row, the decoder's lazy PROCESS): every verifier gives the
   same draws reading rows through the callback as from the full n x V array, with the same
   verification coins; the top-down ones (everything but BV and Traversal, which say so with
   p_all_rows) read exactly the rows of the accepted path, root to the accepted node. */
typedef struct row_counter {
    const double *P;
    int V, n_reads, n_rows;
    uint8_t seen[VM_NMAX];
} row_counter;

static const double *count_row(void *ud, int v)
{
    row_counter *rc = ud;
    rc->n_reads++;
    if (!rc->seen[v]) {
        rc->seen[v] = 1;
        rc->n_rows++;
    }
    return rc->P + (size_t)v * (size_t)rc->V;
}

Test(verifiers, laws_on_demand_give_the_same_draws, .timeout = 120)
{
    vm_model m;
    vm_random(&m, 4, 4, 16);
    static vm_draft d;
    arb_err err = {0};
    cr_assert_eq(arb_tree_init_seq(&d.t, VM_NMAX, 4 * VM_NMAX, &err), 0, "%s", err.msg);
    const vm_regime regs[] = {{.kind = ARB_REGIME_SINGLE, .L = 3},
                              {.kind = ARB_REGIME_IID, .k = 4, .L = 3},
                              {.kind = ARB_REGIME_DELAYED, .l = 2, .k = 3, .L = 2}};
    for (int i = 0; i < 9; i++) {
        const char *name = i < 8 ? ALL8[i] : "typical";
        arb_verifier_opts o = arb_verifier_default_opts();
        o.V = m.V;
        o.n_nodes_max = VM_NMAX;
        arb_verifier *vf;
        cr_assert_eq(arb_verifier_new(name, &o, &vf, &err), 0, "%s", err.msg);
        long rows = 0, path_rows = 0, nodes = 0, trees = 0;
        for (int g = 0; g < 3; g++) {
            if (arb_verifier_check(name, (arb_regime)regs[g].kind, &err) == ARB_E_INVAL)
                continue;
            for (uint32_t k = 0; k < 2000; k++) {
                arb_rng dr, v1, v2;
                arb_rng_init(&dr, 7, 900 + (uint32_t)g, k, ARB_STREAM_DRAFT);
                arb_rng_init(&v1, 7, 900 + (uint32_t)g, k, ARB_STREAM_VERIFY);
                v2 = v1;
                vm_draw(&d, &m, &regs[g], &dr);
                arb_verify_in a = {.tree = &d.t, .p = d.P, .q = d.Q, .V = m.V, .rng = &v1};
                row_counter rc = {.P = d.P, .V = m.V};
                arb_verify_in b = {.tree = &d.t, .p_row = count_row, .p_ud = &rc, .q = d.Q, .V = m.V, .rng = &v2};
                arb_verify_out oa, ob;
                cr_assert_eq(arb_verifier_verify(vf, &a, &oa), 0);
                cr_assert_eq(arb_verifier_verify(vf, &b, &ob), 0, "%s: p_row alone is accepted", name);
                cr_assert(oa.node == ob.node && oa.depth == ob.depth && oa.extra == ob.extra &&
                              oa.extra_is_bonus == ob.extra_is_bonus && oa.n_fallback == ob.n_fallback,
                          "%s draw %u: node %d/%d extra %d/%d", name, k, oa.node, ob.node, oa.extra, ob.extra);
                cr_assert(!memcmp(&v1, &v2, sizeof v1), "%s: the same coins were drawn", name);
                if (!vf->iface->p_all_rows && strcmp(name, "typical"))
                    cr_assert_eq(rc.n_rows, ob.depth + 1, "%s draw %u: %d rows read, accepted depth %d", name, k,
                                 rc.n_rows, ob.depth);
                rows += rc.n_rows;
                path_rows += ob.depth + 1;
                nodes += d.t.n;
                trees++;
            }
        }
        cr_assert_gt(trees, 0, "%s ran on no regime", name);
        cr_log_info("%-9s rows read %.2f per tree of %.2f nodes (accepted path %.2f)", name,
                    (double)rows / (double)trees, (double)nodes / (double)trees, (double)path_rows / (double)trees);
        arb_verifier_free(vf);
    }
    arb_tree_release(&d.t);
    vm_free(&m);
}

/* Negative controls (§11.5): the same verdict (passes()) must FAIL for each deliberately wrong
   variant, on H3 where the spec gives the exact TV of the first two tokens. The large ones
   run at N_DRAWS, the small ones at N_CONTROL (see above). */
Test(verifiers, negative_controls_fail, .timeout = 300)
{
    vm_model m;
    vm_h3(&m, 3);
    const vm_regime k3 = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, wor = {.kind = ARB_REGIME_WOR, .k = 2, .L = 2};
    struct { const char *what; mc_cfg c; long n; double tv; } ctl[] = {
        {"naivetree, children sorted by id", {.verifier = "naivetree", .sorted = 1, .g = k3, .id = 500}, N_DRAWS, 0.29},
        {"spectr on WOR trees", {.verifier = "spectr", .g = wor, .id = 501}, N_DRAWS, 0.056},
        {"traversal, leaf = smallest node index",
         {.verifier = "traversal", .broken = ARB_VF_BROKEN_TRAV_INDEX_ORDER, .g = k3, .id = 502}, N_CONTROL, 0.0077},
        {"traversal without Q renormalisation",
         {.verifier = "traversal", .broken = ARB_VF_BROKEN_TRAV_NO_RENORM, .g = k3, .id = 503}, N_CONTROL, 0.0089},
        {"specinfer on WOR trees", {.verifier = "specinfer", .g = wor, .id = 504}, N_CONTROL, 0.0067},
    };
    for (size_t i = 0; i < sizeof ctl / sizeof ctl[0]; i++) {
        mc_stats s = run_mc(&m, &ctl[i].c, ctl[i].n);
        printf("[verifiers] negative control %-38s N %ld: TV2 %.4f (bound %.4f, exact %.4f) "
               "X2 %.1f/%.1f df %d p %.1e\n", ctl[i].what, ctl[i].n, s.tv[2], s.tv_bound[2], ctl[i].tv,
               s.x2[2], s.crit[2], s.df[2], s.pval[2]);
        fflush(stdout);
        cr_expect_not(passes(&s), "%s must be detected (exact TV %.4f)", ctl[i].what, ctl[i].tv);
        /* the measured TV estimates the exact one (sampling noise at these N is ~0.002) */
        cr_expect(fabs(s.tv[2] - ctl[i].tv) < 0.25 * ctl[i].tv + 0.004, "%s: TV %.4f, exact %.4f",
                  ctl[i].what, s.tv[2], ctl[i].tv);
    }
    /* Only the flaw differs: the correct Traversal on the same trees (same ids) passes. */
    mc_cfg ok = {.verifier = "traversal", .g = k3, .id = 502};
    mc_stats s = run_mc(&m, &ok, N_CONTROL);
    cr_expect(passes(&s), "correct traversal on the control's trees: X2 %.1f/%.1f TV2 %.4f", s.x2[2],
              s.crit[2], s.tv[2]);
    vm_free(&m);
}

/* Method validation uses the §0.6 matrix: sampling verifiers need sampled trees. */
Test(verifiers, method_validation)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("draft", &s, &err), 0, "%s", err.msg);
    s.temperature = 0.8;
    cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "%s", err.msg);
    for (int i = 0; i < 8; i++) {
        snprintf(s.verifier, sizeof s.verifier, "%s", ALL8[i]);
        cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "%s: %s", ALL8[i], err.msg);
    }
    snprintf(s.verifier, sizeof s.verifier, "typical"); /* valid on sampled trees too */
    cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "%s", err.msg);
    s.top_p = 0.9; /* the typical rule is defined on the unfiltered softmax */
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "typical") && strstr(err.msg, "top_p"), "%s", err.msg);
    s.top_p = 1;
    snprintf(s.verifier, sizeof s.verifier, "greedy");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL, "greedy at T > 0");
    s.temperature = 0;
    cr_assert_eq(arb_method_spec_validate(&s, &err), 0, "%s", err.msg);
    snprintf(s.verifier, sizeof s.verifier, "nosuch");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), 0);
    snprintf(s.verifier, sizeof s.verifier, "traversal");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL, "traversal on a deterministic GOOSE tree");
    cr_assert(strstr(err.msg, "traversal"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("draft", &s, &err), 0);
    s.dte_b = 0;
    s.dte_l = 0;
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL, "empty draft tree");
    cr_assert_eq(arb_method_max_nodes(&(arb_method_spec){.drafter = "draft", .dte_k = 3, .dte_l = 2, .dte_b = 4}), 15);
}

/* ---------------- typical acceptance (docs/spec/verification.md §9, §11.2, §11.6) ---------------- */

Test(verifiers, typical_thresholds)
{
    const double a[3] = {0.5, 0.3, 0.2}, b[3] = {0.9, 0.05, 0.05}, u[4] = {0.25, 0.25, 0.25, 0.25};
    cr_expect(fabs(arb_typical_entropy(a, 3) - 1.0296230146) < 1e-9, "H %.10f", arb_typical_entropy(a, 3));
    cr_expect(fabs(arb_typical_threshold(a, 3, 0.09, 0.3) - 0.09) < 1e-12);
    cr_expect(fabs(arb_typical_entropy(b, 3) - 0.3943676935) < 1e-9, "H %.10f", arb_typical_entropy(b, 3));
    cr_expect(fabs(arb_typical_threshold(b, 3, 0.09, 0.3) - 0.09) < 1e-12);
    cr_expect(fabs(arb_typical_entropy(u, 4) - 1.3862543619) < 1e-9, "H %.10f", arb_typical_entropy(u, 4));
    cr_expect(fabs(arb_typical_threshold(u, 4, 0.09, 0.3) - 0.0750030000) < 1e-9, "theta %.10f",
              arb_typical_threshold(u, 4, 0.09, 0.3));
}

/* A hand-built tree: anchor 0 with children 1 (tok 0), 2 (tok 1), 3 (tok 2); 1 has 4 (tok 1),
   2 has 5 (tok 0); every row of p is `row`. */
static void typical_tree(arb_tree *t, double *p, const double *row, int V)
{
    arb_err err = {0};
    arb_tree_init(t, 8, &err);
    arb_tree_reset(t, 0);
    arb_tree_add(t, 0, 0, ARB_SRC_DRAFT, 0, 0.5f);
    arb_tree_add(t, 0, 1, ARB_SRC_DRAFT, 1, 0.3f);
    arb_tree_add(t, 0, 2, ARB_SRC_DRAFT, 2, 0.2f);
    arb_tree_add(t, 1, 1, ARB_SRC_DRAFT, 0, 0.5f);
    arb_tree_add(t, 2, 0, ARB_SRC_DRAFT, 0, 0.5f);
    arb_tree_finalize(t);
    for (int v = 0; v < t->n; v++)
        memcpy(p + (size_t)v * V, row, sizeof(double) * (size_t)V);
}

static arb_verify_out typical_run(const arb_tree *t, const double *p, int V, double eps, double alpha)
{
    arb_err err = {0};
    arb_verifier_opts o = arb_verifier_default_opts();
    o.V = V;
    o.n_nodes_max = 64;
    o.typical_eps = eps;
    o.typical_alpha = alpha;
    arb_verifier *vf;
    cr_assert_eq(arb_verifier_new("typical", &o, &vf, &err), 0, "%s", err.msg);
    arb_rng r;
    arb_rng_init(&r, 1, 0, 0, ARB_STREAM_VERIFY);
    arb_verify_in in = {.tree = t, .p = p, .V = V, .rng = &r};
    arb_verify_out out;
    cr_assert_eq(arb_verifier_verify(vf, &in, &out), 0);
    arb_verifier_free(vf);
    return out;
}

Test(verifiers, typical_rules)
{
    cr_assert(arb_verifier_find("typical")->approximate, "typical is flagged approximate");
    for (int i = 0; i < 8; i++)
        cr_assert_not(arb_verifier_find(ALL8[i])->approximate, "%s is lossless", ALL8[i]);
    arb_tree t;
    double p[8 * 3];
    /* π = (0.5, 0.3, 0.2): θ = 0.09, every child passes; depth 2 is reached by 4 (ln .5 + ln .3)
       and 5 (ln .3 + ln .5): equal likelihood, the lower index wins; extra = argmax = 0 */
    const double a[3] = {0.5, 0.3, 0.2};
    typical_tree(&t, p, a, 3);
    arb_verify_out o = typical_run(&t, p, 3, 0.09, 0.3);
    cr_expect_eq(o.node, 4);
    cr_expect_eq(o.depth, 2);
    cr_expect_eq(o.extra, 0);
    cr_expect_eq(o.n_fallback, 0);
    /* make 5's path likelier: 2 -> 5 uses p_2(0); raise it */
    p[2 * 3 + 0] = 0.8, p[2 * 3 + 1] = 0.1, p[2 * 3 + 2] = 0.1;
    o = typical_run(&t, p, 3, 0.09, 0.3);
    cr_expect_eq(o.node, 5, "the deeper tie goes to the larger path likelihood, got %d", o.node);
    /* π = (0.9, 0.05, 0.05): only token 0 passes at every node: 1 (tok 0) then 4 (tok 1) fails */
    const double b[3] = {0.9, 0.05, 0.05};
    arb_tree_release(&t); /* typical_tree initialises a fresh tree */
    typical_tree(&t, p, b, 3);
    o = typical_run(&t, p, 3, 0.09, 0.3);
    cr_expect_eq(o.node, 1);
    cr_expect_eq(o.extra, 0);
    /* θ = 1 (ε = 1, α = 1e9): nothing passes, the greedy fallback at the anchor */
    o = typical_run(&t, p, 3, 1.0, 1e9);
    cr_expect_eq(o.node, 0);
    cr_expect_eq(o.depth, 0);
    cr_expect_eq(o.extra, 0);
    /* θ = 0 (α = 0): every child with π > 0 passes: the deepest node */
    o = typical_run(&t, p, 3, 0.09, 0.0);
    cr_expect_eq(o.depth, 2);
    arb_tree_release(&t);
}

/* On one-hot laws (T -> 0) typical acceptance is the greedy walk: random trees with repeated
   sibling tokens, an argmax per node that depends on its token path only. */
Test(verifiers, typical_on_one_hot_laws_is_greedy)
{
    enum { V = 4, N = 24 };
    arb_err err = {0};
    arb_tree t;
    arb_tree_init(&t, N, &err);
    static double p[N * V];
    int32_t y[N], best[N];
    arb_rng r;
    arb_rng_init(&r, 99, 0, 0, ARB_STREAM_AUX);
    for (int rep = 0; rep < 500; rep++) {
        arb_tree_reset(&t, 0);
        for (int v = 1; v < N; v++)
            arb_tree_add(&t, (int)(arb_rng_u(&r) * v), (int32_t)(arb_rng_u(&r) * V), ARB_SRC_DRAFT, 0, 0.5f);
        arb_tree_finalize(&t);
        uint32_t h[N], salt = (uint32_t)(arb_rng_u(&r) * 1e9);
        for (int v = 0; v < N; v++) { /* the argmax is a function of the path (as in a real model) */
            h[v] = v == 0 ? salt : (h[t.parent[v]] ^ (uint32_t)(t.tok[v] + 1)) * 2654435761u;
            y[v] = (int32_t)((h[v] >> 7) % V);
            for (int x = 0; x < V; x++)
                p[v * V + x] = x == y[v];
        }
        arb_verify_out g, o = typical_run(&t, p, V, 0.09, 0.3);
        arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &g);
        cr_assert_eq(o.depth, g.depth, "rep %d: typical depth %d, greedy %d", rep, o.depth, g.depth);
        cr_assert_eq(o.extra, g.extra);
        int32_t pa[N], pb[N];
        int na = arb_tree_path(&t, o.node, pa), nb = arb_tree_path(&t, g.node, pb);
        cr_assert_eq(na, nb);
        for (int i = 1; i < na; i++) /* the same tokens (equal siblings may differ by node) */
            cr_assert_eq(t.tok[pa[i]], t.tok[pb[i]]);
    }
    arb_tree_release(&t);
}

/* Approximate by design: the Monte Carlo suite must flag typical acceptance on the suite's
   models; the TVs it prints are the figures in docs/sampling.md. */
Test(verifiers, typical_deviates_from_the_target, .timeout = 300)
{
    vm_model r4, h3;
    vm_random(&r4, 4, 4, 11);
    vm_h3(&h3, 3);
    mc_cfg c1 = {.verifier = "typical", .deviates = 1, .g = {.kind = ARB_REGIME_SINGLE, .L = 3}, .id = 600};
    check(&r4, "rand4", &c1);
    mc_cfg c2 = {.verifier = "typical", .deviates = 1, .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, .id = 601};
    check(&h3, "H3", &c2);
    mc_cfg c3 = {.verifier = "typical", .deviates = 1, .g = {.kind = ARB_REGIME_DET, .k = 2, .L = 2}, .id = 602};
    check(&h3, "H3", &c3);
    vm_free(&r4);
    vm_free(&h3);
}
