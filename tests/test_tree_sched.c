/* test_tree_sched.c — EntMTP's TopologyBank, policies and features (docs/spec/drafting.md
 * §10.4–10.6): preprocessing of a real tree, bank files and their errors, the three policies
 * on constructed feature sequences, the feature formulas on known distributions. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drafters/medusa.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */
#include "schedulers/features.h"
#include "schedulers/scheduler.h"
#include "topobank.h"

Test(tree_sched, topo_preprocessing_of_mc_sim)
{
    const char *ch[1] = {arb_medusa_mc_sim_7b_63};
    arb_topobank *b;
    arb_err err = {0};
    cr_assert_eq(arb_topobank_new(ch, 1, 4, &b, &err), 0, "%s", err.msg);
    const arb_topo *t = &b->t[0];
    cr_assert_eq(t->n, 64);
    cr_assert_eq(t->max_depth, 4);
    int leaves = 0, kids = 0;
    for (int v = 0; v < t->n; v++) {
        leaves += t->n_kids[v] == 0;
        kids += t->n_kids[v];
    }
    cr_assert_eq(leaves, 42); /* 42 retrieve rows (§9.2) */
    cr_assert_eq(kids, 63);
    cr_assert_eq(t->n_top[0], 10); /* ranks 0..9 at depth 1 */
    for (int d = 1; d <= 4; d++) { /* [0,0,0,0] exists: the chain reaches depth 4 */
        int v = t->chain[d];
        cr_assert_geq(v, 1);
        cr_assert(t->rank[v] == 0 && t->parent[v] == t->chain[d - 1] && t->depth[v] == d);
    }
    arb_topobank_free(b);
    cr_assert_eq(arb_topobank_new(ch, 1, 3, &b, &err), ARB_E_INVAL); /* 3 heads: depth 4 refused */
    cr_assert(strstr(err.msg, "depth 4"), "%s", err.msg);
}

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/test_tree_sched_%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

Test(tree_sched, bank_file_and_errors)
{
    arb_topobank *b;
    arb_err err = {0};
    const char *p = write_tmp("{\"trees\":[{\"choices\":[[0]]},{\"choices\":[[0],[0,0],[1]]}],"
                              "\"static\":1,\"t_plus\":1,\"t_minus\":0,\"tau\":0.5,\"feature\":\"gD\",\"ladder\":[0.3]}");
    cr_assert_eq(arb_topobank_load(p, 4, &b, &err), 0, "%s", err.msg);
    cr_assert(b->n == 2 && b->t[1].n == 4 && b->sched.static_idx == 1 && b->sched.t_minus == 0);
    cr_assert(b->sched.tau == 0.5 && !strcmp(b->sched.feature, "gD") && b->sched.n_ladder == 1);
    arb_topobank_free(b);
    p = write_tmp("{\"trees\":[{\"choices\":[[0]]}],\"t_plus\":3}");
    cr_assert_eq(arb_topobank_load(p, 4, &b, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "$.t_plus") && strstr(err.msg, p), "%s", err.msg);
    p = write_tmp("{\"trees\":[{\"choices\":[[0]]},{\"choices\":[[1]]}]}");
    cr_assert_neq(arb_topobank_load(p, 4, &b, &err), 0); /* [1] without [0]: not rank-closed */
    cr_assert(strstr(err.msg, "tree 1"), "%s", err.msg);
    p = write_tmp("{\"trees\":[{\"choices\":[[0]]},{\"choices\":[[0],[1]]}],\"ladder\":[0.1,0.2]}");
    cr_assert_eq(arb_topobank_load(p, 4, &b, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "$.ladder"), "%s", err.msg);
    remove(p);
}

static arb_topobank *bank3(void)
{
    const char *ch[3] = {"[[0]]", "[[0],[0,0]]", "[[0],[0,0],[0,0,0],[1]]"};
    arb_topobank *b;
    cr_assert_eq(arb_topobank_new(ch, 3, 4, &b, NULL), 0);
    return b;
}

/* §13: hysteresis never switches twice when s stays between tau_off and tau_on. */
Test(tree_sched, hysteresis_switches_only_on_crossings)
{
    arb_topobank *b = bank3();
    const arb_tree_sched_i *si = arb_tree_sched_find("entmtp_tau");
    cr_assert_not_null(si);
    arb_tree_sched_opts o = {.t_plus = 2, .t_minus = 0, .tau_on = 0.6, .tau_off = 0.3};
    void *st;
    arb_err err = {0};
    cr_assert_eq(si->create(b, &o, &st, &err), 0, "%s", err.msg);
    si->begin(st);
    cr_assert_eq(si->pick(st, 0.5), 0); /* starts in −; 0.5 is not above tau_on */
    cr_assert_eq(si->state(st), 0);
    cr_assert_eq(si->pick(st, 0.61), 2); /* − → + */
    int switches = 0, prev = 2;
    for (int i = 0; i < 200; i++) { /* anything in (tau_off, tau_on]: stays + */
        int k = si->pick(st, 0.31 + 0.29 * ((i * 37) % 100) / 100.0);
        switches += k != prev;
        prev = k;
    }
    cr_assert_eq(switches, 0);
    cr_assert_eq(si->pick(st, 0.3), 0); /* s <= tau_off: + → − */
    cr_assert_eq(si->pick(st, 0.6), 0); /* not above tau_on */
    si->begin(st);
    cr_assert_eq(si->state(st), 0);
    si->destroy(st);
    o.tau_off = 0.7; /* tau_off > tau_on is refused */
    cr_assert_eq(si->create(b, &o, &st, &err), ARB_E_INVAL);
    o = (arb_tree_sched_opts){.t_plus = 5, .t_minus = 0, .tau_on = 0.5, .tau_off = 0.5};
    cr_assert_eq(si->create(b, &o, &st, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "T+ 5"), "%s", err.msg);
    arb_topobank_free(b);
}

Test(tree_sched, ladder_and_static)
{
    arb_topobank *b = bank3();
    const double th[2] = {0.2, 0.5};
    arb_tree_sched_opts o = {.n_ladder = 2, .ladder = th, .static_idx = 1};
    void *st;
    arb_err err = {0};
    const arb_tree_sched_i *ld = arb_tree_sched_find("ladder");
    cr_assert_eq(ld->create(b, &o, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(ld->pick(st, 0.1), 0);
    cr_assert_eq(ld->pick(st, 0.2), 0); /* k counts thresholds strictly below s */
    cr_assert_eq(ld->pick(st, 0.3), 1);
    cr_assert_eq(ld->pick(st, 0.9), 2);
    ld->destroy(st);
    o.n_ladder = 1;
    cr_assert_eq(ld->create(b, &o, &st, &err), ARB_E_INVAL);
    const arb_tree_sched_i *sc = arb_tree_sched_find("static");
    cr_assert_eq(sc->create(b, &o, &st, &err), 0);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(sc->pick(st, i / 4.0), 1);
    sc->destroy(st);
    cr_assert_null(arb_tree_sched_find("goose_tiers"));
    arb_topobank_free(b);
}

Test(tree_sched, feature_formulas)
{
    enum { V = 5 };
    const float row[V] = {2.0f, 1.0f, 0.0f, 0.0f, -1.0f};
    double z = 0, h = 0;
    for (int i = 0; i < V; i++)
        z += exp(row[i]);
    for (int i = 0; i < V; i++)
        h -= exp(row[i]) / z * log(exp(row[i]) / z);
    arb_entfeat f;
    arb_entfeat_reset(&f, ARB_ENTFEAT_GD);
    arb_entfeat_base(&f, row, V);
    cr_assert_float_eq(f.p0, exp(2.0) / z, 1e-6); /* float sums (features.c) */
    cr_assert_float_eq(f.H, h, 1e-6);
    for (int j = 0; j < ARB_ENTFEAT_EMA; j++)
        cr_assert_float_eq(f.H_ema[j], f.H, 1e-15); /* first value starts every EMA */
    const float p[3] = {0.5f, 0.4f, 0.2f};
    const int32_t top1[3] = {7, 8, 9};
    arb_entfeat_heads(&f, p, top1, 3);
    double g1 = f.p0 * 0.5, g2 = g1 * 0.4f, g3 = g2 * 0.2f;
    cr_assert_float_eq(f.s_lit, f.p0, 1e-12); /* the literal max is p0 (§10.5) */
    cr_assert_float_eq(f.s_gD, g3, 1e-9);
    cr_assert_float_eq(f.s_sum, f.p0 + g1 + g2 + g3, 1e-9);
    cr_assert_float_eq(f.s, f.s_gD, 1e-15);
    const int32_t acc[2] = {7, 5}; /* depth 1 agrees, depth 2 does not */
    arb_entfeat_accepted(&f, acc, 2);
    cr_assert_float_eq(f.head_agree, 0.5, 1e-12);
    cr_assert_float_eq(f.acc_ema, 2, 1e-12);
    const int32_t acc2[4] = {1, 2, 3, 4};
    arb_entfeat_accepted(&f, acc2, 4);
    cr_assert_float_eq(f.acc_ema, 2.0 / 9 * 4 + 7.0 / 9 * 2, 1e-12);
    cr_assert(f.acc_mean[0] == 3 && f.acc_min[0] == 2 && f.acc_max[0] == 4);
    char buf[1024];
    cr_assert_gt(arb_entfeat_json(&f, buf, sizeof buf), 0);
    cr_assert(strstr(buf, "\"s_gD\":") && strstr(buf, "\"H_ema\":["), "%s", buf);
    cr_assert_eq(arb_entfeat_json(&f, buf, 20), -1);
    cr_assert_eq(arb_entfeat_kind_parse("sum"), ARB_ENTFEAT_SUM);
    cr_assert_eq(arb_entfeat_kind_parse("max"), -1);
}

/* The one-pass statistics (features.c) on a real-size row: every path against a double-
   precision softmax, the argmax with a tie (lowest id wins), and a -inf logit that must not
   turn the entropy into NaN. */
Test(tree_sched, row_stats_paths_match_double_softmax)
{
    enum { V = 49152 + 7 }; /* SmolLM2's vocabulary plus a tail no lane block covers */
    static float row[V];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < V; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        row[i] = (float)((x >> 40) * 0x1p-24) * 20.0f - 10.0f;
    }
    row[4000] = 14.5f, row[30000] = 14.5f; /* a tie at the top */
    row[123] = -INFINITY;
    double mx = 14.5, z = 0, zl = 0;
    for (int i = 0; i < V; i++) {
        double e = exp((double)row[i] - mx);
        z += e;
        zl += row[i] == -INFINITY ? 0 : ((double)row[i] - mx) * e;
    }
    const double p0 = 1 / z, H = log(z) - zl / z;
    int paths = 0;
    for (int isa = ARB_TOPK_BASE; isa <= ARB_TOPK_AVX2; isa++) {
        arb_entfeat_row r;
        if (!arb_entfeat_row_stats_isa(isa, row, V, &r))
            continue;
        paths++;
        cr_assert_eq(r.argmax, 4000, "isa %d", isa);
        cr_assert(fabs(r.p0 - p0) <= 1e-6 * p0, "isa %d: p0 %.9g vs %.9g", isa, r.p0, p0);
        cr_assert(fabs(r.H - H) <= 1e-6 * H, "isa %d: H %.9g vs %.9g", isa, r.H, H);
    }
    cr_assert_geq(paths, 1);
    arb_entfeat_row d;
    arb_entfeat_row_stats(row, V, &d);
    cr_assert(fabs(d.H - H) <= 1e-6 * H);
}

/* `arbor entmtp bank`'s final file lists every timed tree under $.timed (for the throughput
   frontier plot): the drafter's loader reads the same bank with it, and `arbor entmtp plot
   --bank` writes the hull trees, the bank, the static tree and the published default as four
   data blocks; a bank without $.timed is refused naming the field. */
Test(tree_sched, bank_timed_list_and_throughput_plot)
{
    const char *root = getenv("ARBOR_BUILD_ROOT");
    cr_assert(root != NULL, "ARBOR_BUILD_ROOT not set (run through meson test)");
    const char *p = write_tmp("{\"trees\":[{\"n\":2,\"depth\":1,\"tok_s\":50,\"choices\":[[0]]},"
                              "{\"n\":3,\"depth\":2,\"tok_s\":60,\"choices\":[[0],[0,0]]}],"
                              "\"static\":1,\"t_plus\":1,\"t_minus\":0,\"tau\":0.05,\"feature\":\"gD\","
                              "\"clock\":\"cpu\",\"timed\":["
                              "{\"n\":2,\"depth\":1,\"tok_s\":50,\"tau\":1.2,\"published\":false},"
                              "{\"n\":3,\"depth\":2,\"tok_s\":60,\"tau\":1.5,\"published\":false},"
                              "{\"n\":5,\"depth\":2,\"tok_s\":40,\"tau\":1.6,\"published\":false},"
                              "{\"n\":64,\"depth\":4,\"tok_s\":20,\"tau\":2.1,\"published\":true}]}");
    arb_topobank *b;
    arb_err err = {0};
    cr_assert_eq(arb_topobank_load(p, 4, &b, &err), 0, "%s", err.msg);
    cr_assert(b->n == 2 && b->sched.static_idx == 1 && b->sched.t_plus == 1);
    arb_topobank_free(b);
    char dir[64], cmd[512], dat[128];
    snprintf(dir, sizeof dir, "/tmp/test_tree_sched_plot_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s/harness/arbor entmtp plot --bank %s --out %s >/dev/null 2>&1", root, p, dir);
    (void)system(cmd); /* exit 1 without gnuplot: the .dat is written before rendering */
    snprintf(dat, sizeof dat, "%s/entmtp_throughput.dat", dir);
    FILE *f = fopen(dat, "r");
    cr_assert(f != NULL, "no %s", dat);
    char text[1024] = {0};
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    const char *want = "# hull trees\n2 50.000 1\n3 60.000 2\n5 40.000 2\n\n\n# bank\n2 50.000 1\n3 60.000 2\n\n\n"
                       "# static\n3 60.000 2\n\n\n# default\n64 20.000 4\n";
    cr_assert_str_eq(text, want);
    p = write_tmp("{\"trees\":[{\"choices\":[[0]]}],\"static\":0}");
    snprintf(cmd, sizeof cmd, "%s/harness/arbor entmtp plot --bank %s --out %s 2>&1", root, p, dir);
    FILE *o = popen(cmd, "r");
    cr_assert(o != NULL);
    len = fread(text, 1, sizeof text - 1, o);
    text[len] = 0;
    const int st = pclose(o);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s", text);
    cr_assert(strstr(text, "$.timed") && strstr(text, p), "%s", text);
    remove(p);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)system(cmd);
}
