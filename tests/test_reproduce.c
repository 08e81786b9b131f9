/* test_reproduce.c — verdicts from hand-built results databases (store API): a claim that
 * clearly holds, clearly fails, straddles its threshold (noisy, overlapping), has no data;
 * the pairing of prompts across methods, stratified macro averages, best-of-sweep, the E.4
 * bound, scope filters, bootstrap determinism and the JSON a CI job reads. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "claims.h"
#include "reproduce.h"
#include "store.h"

static char dbpath[64];
static arb_store *st;

static void setup(void)
{
    snprintf(dbpath, sizeof dbpath, "/tmp/arb_test_repro_XXXXXX");
    int fd = mkstemp(dbpath);
    cr_assert(fd >= 0);
    close(fd);
    unlink(dbpath);
    arb_err err = {0};
    cr_assert_eq(arb_store_open(dbpath, &st, &err), ARB_OK, "%s", err.msg);
}

static void teardown(void)
{
    arb_store_close(st);
    char p[96];
    unlink(dbpath);
    snprintf(p, sizeof p, "%s-wal", dbpath), unlink(p);
    snprintf(p, sizeof p, "%s-shm", dbpath), unlink(p);
}

/* A run of `method` (label; base id = label up to '[') on `ds`, greedy, seed 0. */
static void put_run(const char *key, const char *method, const char *ds, int max_new)
{
    char base[32];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(method, "["), method);
    arb_store_run r = {.run_key = key, .config_name = "t", .method = method, .base_method = base,
                       .drafter = "goose", .topology = "", .sweep_json = "{}",
                       .params_json = "{\"budget\":60,\"max_depth\":6}", .model_id = "m",
                       .model_sha256 = "00", .dataset = ds, .max_new_tokens = max_new, .top_p = 1};
    arb_err err = {0};
    cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
}

/* Prompt p of run key with n_gen and n_calls; its steps carry E.4 counts: every step a tree
   step with 4 spine nodes (acc_s of them accepted per 4) and 20 TR nodes (acc_t per 20). */
static void put_prompt(const char *key, int p, int n_gen, int n_calls, int acc_s, int acc_t)
{
    arb_store_step steps[64];
    int n = n_calls - 1 < 64 ? n_calls - 1 : 64;
    memset(steps, 0, sizeof steps);
    for (int s = 0; s < n; s++) {
        steps[s].step = s, steps[s].mode = "tree", steps[s].category = -1, steps[s].topology_id = -1;
        steps[s].n_spine = 4, steps[s].acc_spine = acc_s;
        steps[s].prop_src[2] = 20, steps[s].acc_src[2] = acc_t;
    }
    char pid[32];
    snprintf(pid, sizeof pid, "P/%03d", p);
    static int32_t ids[16384]; /* the store writes n_gen ids */
    cr_assert(n_gen <= 16384);
    arb_store_prompt pr = {.prompt_id = pid, .prompt_idx = p, .n_prompt = 10, .n_gen = n_gen,
                           .n_calls = n_calls, .wall_us = 1000 * n_calls, .n_repeats = 1,
                           .stop = "limit", .lossless = -1, .ids = ids};
    arb_err err = {0};
    cr_assert_eq(arb_store_prompt_put(st, key, &pr, steps, n, &err), ARB_OK, "%s", err.msg);
}

/* n prompts with tau = base + amp * noise(p), noise in {-1, +1} alternating. */
static void put_series(const char *key, const char *method, const char *ds, int n, double base, double amp)
{
    put_run(key, method, ds, 64);
    for (int p = 0; p < n; p++) {
        double tau = base + amp * (p % 2 ? 1 : -1);
        put_prompt(key, p, (int)lround(1000 * tau), 1000, 2, 4);
    }
}

static arb_claim claim(arb_claim_kind kind, const char *a, const char *b0, const char *b1)
{
    arb_claim c = {.id = "t", .paper = "goose", .text = "t", .kind = kind, .config = "c",
                   .metric = ARB_METRIC_TAU, .a = (char *)a, .n_b = b1 ? 2 : b0 ? 1 : 0,
                   .paper_text = "p", .paper_value = NAN};
    c.b[0] = (char *)b0, c.b[1] = (char *)b1;
    static const arb_claim_op ops[] = {ARB_OP_GE, ARB_OP_LT, ARB_OP_GT, ARB_OP_GE};
    c.op = ops[kind];
    c.threshold = kind == ARB_CLAIM_RATIO ? 1 : 0;
    return c;
}

static arb_repro_result eval(const arb_claim *c, const arb_repro_opts *o)
{
    arb_repro_result r;
    arb_err err = {0};
    cr_assert_eq(arb_repro_eval(arb_store_db(st), c, o, &r, &err), ARB_OK, "%s", err.msg);
    return r;
}

/* A (tau 3.0) and B (2.0) on n HumanEval prompts each (noise amp), and the claim A >= B on them. */
static arb_repro_result a_over_b(int n, double amp)
{
    put_series("a0", "A", "humaneval", n, 3.0, amp);
    put_series("b0", "B", "humaneval", n, 2.0, amp);
    const arb_repro_opts o = arb_repro_default_opts();
    const arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.n_cells, 1);
    cr_assert_eq(r.cells[0].n, n);
    return r;
}

Test(reproduce, order_clearly_holds_and_clearly_fails, .init = setup, .fini = teardown)
{
    arb_repro_opts o = arb_repro_default_opts();
    arb_repro_result r = a_over_b(20, 0.1);
    cr_assert_str_eq(r.cells[0].label, "humaneval");
    cr_assert_float_eq(r.cells[0].v, 0.5, 1e-9, "3.0 / 2.0 - 1");
    cr_assert(r.cells[0].lo > 0.4 && r.cells[0].hi < 0.6, "[%g, %g]", r.cells[0].lo, r.cells[0].hi);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS);
    arb_repro_result_release(&r);
    arb_claim rev = claim(ARB_CLAIM_ORDER, "B", "A", NULL); /* B >= A is false */
    r = eval(&rev, &o);
    cr_assert_eq(r.verdict, ARB_VERDICT_FAILS);
    cr_assert(r.cells[0].hi < 0);
    arb_repro_result_release(&r);
}

Test(reproduce, overlapping_noise_is_inconclusive, .init = setup, .fini = teardown)
{
    /* A's prompts alternate 1.5 / 3.5 (mean 2.5), B's 2.6 / 2.2 in the other order: the paired
       differences swing both ways, so the interval of tau_A / tau_B - 1 straddles 0 */
    put_run("a0", "A", "humaneval", 64), put_run("b0", "B", "humaneval", 64);
    for (int p = 0; p < 30; p++) {
        put_prompt("a0", p, p % 2 ? 350 : 150, 100, 2, 4);
        put_prompt("b0", p, p % 2 ? 220 : 260, 100, 2, 4);
    }
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    arb_repro_result r = eval(&c, &o);
    cr_assert(r.cells[0].lo < 0 && r.cells[0].hi > 0, "[%g, %g]", r.cells[0].lo, r.cells[0].hi);
    cr_assert_eq(r.verdict, ARB_VERDICT_INCONCLUSIVE);
    arb_repro_result_release(&r);
}

Test(reproduce, no_data_is_missing_and_scope_adds_missing_datasets, .init = setup, .fini = teardown)
{
    put_series("a0", "A", "humaneval", 5, 3.0, 0.1);
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.n_cells, 1);
    cr_assert_eq(r.cells[0].verdict, ARB_VERDICT_MISSING);
    cr_assert(isnan(r.cells[0].v));
    cr_assert_eq(r.verdict, ARB_VERDICT_MISSING);
    arb_repro_result_release(&r);
    put_series("b0", "B", "humaneval", 5, 2.0, 0.1);
    arb_config *cfg = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_config_parse("{\"name\": \"s\", \"models\": [{\"id\": \"m\", \"path\": \"default\"}],"
                                  " \"datasets\": [{\"name\": \"humaneval\", \"max_new_tokens\": 64},"
                                  " {\"name\": \"gsm8k\", \"max_new_tokens\": 64}],"
                                  " \"methods\": [{\"id\": \"A\", \"preset\": \"goose\"}]}",
                                  "s.json", &cfg, &err), ARB_OK, "%s", err.msg);
    o.scope = cfg;
    r = eval(&c, &o);
    cr_assert_eq(r.n_cells, 2);
    cr_assert_eq(r.cells[0].verdict, ARB_VERDICT_HOLDS);
    cr_assert_str_eq(r.cells[1].label, "gsm8k");
    cr_assert_eq(r.cells[1].verdict, ARB_VERDICT_MISSING);
    cr_assert_eq(r.verdict, ARB_VERDICT_MISSING, "one dataset untested: not a pass");
    cr_assert(r.cells[0].uninformative, "5 prompts < n_min 10");
    arb_repro_result_release(&r);
    o.max_new = 128; /* the runs are at 64 */
    r = eval(&c, &o);
    cr_assert_eq(r.cells[0].verdict, ARB_VERDICT_MISSING);
    arb_repro_result_release(&r);
    arb_config_free(cfg);
}

Test(reproduce, pairs_prompts_across_methods, .init = setup, .fini = teardown)
{
    /* prompts differ widely (tau 1.2 .. 5), but A is B + 5% on every one: paired, the
       interval is tight around +5%; resampled independently it would straddle 0 */
    put_run("a0", "A", "mbpp", 64), put_run("b0", "B", "mbpp", 64);
    for (int p = 0; p < 24; p++) {
        int gen = 120 + 16 * p;
        put_prompt("b0", p, gen, 100, 2, 4);
        put_prompt("a0", p, (int)lround(gen * 1.05), 100, 2, 4);
    }
    put_prompt("a0", 99, 1000, 100, 2, 4); /* only A has it: not part of any comparison */
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    c.op = ARB_OP_GT;
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.cells[0].n, 24);
    cr_assert(r.cells[0].lo > 0.04 && r.cells[0].hi < 0.06, "[%g, %g]", r.cells[0].lo, r.cells[0].hi);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS);
    arb_repro_result_release(&r);
}

/* One prompt per method: the point says A is 50 % ahead, but a single prompt has no interval
   (every resample is that prompt), so the cell is inconclusive, not "holds"; with two prompts
   the same gap holds. */
Test(reproduce, a_single_prompt_is_inconclusive, .init = setup, .fini = teardown)
{
    arb_repro_result r = a_over_b(1, 0.0);
    cr_assert_float_eq(r.cells[0].v, 0.5, 1e-9);
    cr_assert(r.cells[0].uninformative);
    cr_assert_eq(r.cells[0].verdict, ARB_VERDICT_INCONCLUSIVE);
    cr_assert_eq(r.verdict, ARB_VERDICT_INCONCLUSIVE);
    arb_repro_result_release(&r);
    put_prompt("a0", 1, 3000, 1000, 2, 4);
    put_prompt("b0", 1, 2000, 1000, 2, 4);
    const arb_repro_opts o = arb_repro_default_opts();
    const arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    r = eval(&c, &o);
    cr_assert_eq(r.cells[0].n, 2);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS);
    arb_repro_result_release(&r);
}

Test(reproduce, sign_is_a_macro_over_datasets_and_abs_holds_within_tolerance, .init = setup, .fini = teardown)
{
    put_series("a0", "abl", "humaneval", 12, 2.7, 0.05), put_series("r0", "REF", "humaneval", 12, 3.0, 0.05);
    put_series("a1", "abl", "gsm8k", 12, 1.9, 0.05), put_series("r1", "REF", "gsm8k", 12, 2.0, 0.05);
    put_series("c0", "ctl", "humaneval", 12, 3.003, 0.05), put_series("c1", "ctl", "gsm8k", 12, 2.002, 0.05);
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_SIGN, "abl", "REF", NULL);
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.n_cells, 1);
    cr_assert_str_eq(r.cells[0].label, "macro: 2 datasets");
    cr_assert_float_eq(r.cells[0].v, (2.7 / 3.0 - 1 + 1.9 / 2.0 - 1) / 2, 1e-9);
    cr_assert_eq(r.cells[0].n, 24);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS);
    arb_repro_result_release(&r);
    arb_claim ctl = claim(ARB_CLAIM_SIGN, "ctl", "REF", NULL);
    ctl.op = ARB_OP_ABS_LT, ctl.threshold = 0.01;
    r = eval(&ctl, &o);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS, "[%g, %g]", r.cells[0].lo, r.cells[0].hi);
    arb_repro_result_release(&r);
    ctl.threshold = 0.0005; /* +0.1%: now outside the band on every resample */
    r = eval(&ctl, &o);
    cr_assert_eq(r.verdict, ARB_VERDICT_FAILS, "[%g, %g]", r.cells[0].lo, r.cells[0].hi);
    arb_repro_result_release(&r);
    ctl.threshold = 0.0005, ctl.tolerance = 0.01; /* the tolerance widens the band */
    r = eval(&ctl, &o);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS);
    arb_repro_result_release(&r);
}

Test(reproduce, generation_limits_are_separate_cells, .init = setup, .fini = teardown)
{
    put_series("a0", "A", "humaneval", 12, 3.0, 0.05), put_series("b0", "B", "humaneval", 12, 2.0, 0.05);
    put_run("a1", "A", "humaneval", 128); /* same method and dataset, another limit: not a sweep point */
    for (int p = 0; p < 12; p++)
        put_prompt("a1", p, 9000, 1000, 2, 4);
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.n_cells, 2);
    cr_assert_float_eq(r.cells[0].v, 0.5, 1e-9, "A at 64 vs B at 64 only");
    cr_assert_eq(r.cells[1].verdict, ARB_VERDICT_MISSING, "no B at 128");
    arb_repro_result_release(&r);
}

Test(reproduce, ratio_and_best_of_sweep, .init = setup, .fini = teardown)
{
    put_series("g0", "G", "humaneval", 12, 3.0, 0.05);
    put_series("p0", "P", "humaneval", 12, 2.0, 0.05);
    put_series("t0", "T[k=1]", "humaneval", 12, 1.5, 0.05);
    put_series("t1", "T[k=2]", "humaneval", 12, 2.5, 0.05); /* T counts with its best point */
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_RATIO, "G", "P", "T");
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.n_cells, 1);
    cr_assert_float_eq(r.cells[0].v, 3.0 / 2.5, 1e-9);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS);
    arb_repro_result_release(&r);
}

Test(reproduce, e4_bound_holds_and_fails, .init = setup, .fini = teardown)
{
    /* p_s = 2/4, p_t = 4/20, m = 4, B = 60, D = 6: tau_eq1 is about 2.3 */
    put_run("g0", "G", "humaneval", 64), put_run("h0", "H", "humaneval", 64);
    for (int p = 0; p < 12; p++) {
        put_prompt("g0", p, 400, 100, 2, 4); /* tau_meas 4: above the bound */
        put_prompt("h0", p, 110, 100, 2, 4); /* tau_meas 1.1: below it */
    }
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_BOUND, "G", NULL, NULL);
    arb_repro_result r = eval(&c, &o);
    cr_assert_eq(r.verdict, ARB_VERDICT_HOLDS, "%g", r.cells[0].v);
    double tau_eq1 = 4.0 - r.cells[0].v;
    cr_assert(tau_eq1 > 1.5 && tau_eq1 < 3.5, "tau_eq1 %g", tau_eq1);
    arb_repro_result_release(&r);
    c.a = "H";
    r = eval(&c, &o);
    cr_assert_eq(r.verdict, ARB_VERDICT_FAILS, "%g", r.cells[0].v);
    cr_assert_float_eq(1.1 - r.cells[0].v, tau_eq1, 1e-9, "same p_s, p_t: same bound");
    arb_repro_result_release(&r);
}

Test(reproduce, bootstrap_is_deterministic_in_its_seed, .init = setup, .fini = teardown)
{
    put_run("a0", "A", "humaneval", 64), put_run("b0", "B", "humaneval", 64);
    for (int p = 0; p < 25; p++) {
        put_prompt("a0", p, 150 + (p * 37) % 200, 100, 2, 4);
        put_prompt("b0", p, 150 + (p * 53) % 190, 100, 2, 4);
    }
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL);
    arb_repro_result r1 = eval(&c, &o), r2 = eval(&c, &o);
    cr_assert(r1.cells[0].lo == r2.cells[0].lo && r1.cells[0].hi == r2.cells[0].hi);
    o.seed = 7;
    arb_repro_result r3 = eval(&c, &o);
    cr_assert(r3.cells[0].lo != r1.cells[0].lo || r3.cells[0].hi != r1.cells[0].hi, "the seed matters");
    cr_assert_float_eq(r3.cells[0].v, r1.cells[0].v, 1e-12, "the point estimate does not");
    arb_repro_result_release(&r1), arb_repro_result_release(&r2), arb_repro_result_release(&r3);
}

Test(reproduce, verdict_rule_on_intervals)
{
    arb_claim c = claim(ARB_CLAIM_ORDER, "A", "B", NULL); /* s >= 0 */
    cr_assert_eq(arb_repro_verdict(&c, 0.01, 0.2), ARB_VERDICT_HOLDS);
    cr_assert_eq(arb_repro_verdict(&c, 0.0, 0.0), ARB_VERDICT_HOLDS, ">= admits a tie");
    cr_assert_eq(arb_repro_verdict(&c, -0.1, 0.2), ARB_VERDICT_INCONCLUSIVE);
    cr_assert_eq(arb_repro_verdict(&c, -0.3, -0.1), ARB_VERDICT_FAILS);
    cr_assert_eq(arb_repro_verdict(&c, NAN, NAN), ARB_VERDICT_MISSING);
    c.op = ARB_OP_GT;
    cr_assert_eq(arb_repro_verdict(&c, 0.0, 0.0), ARB_VERDICT_FAILS, "> does not");
    c.tolerance = 0.05;
    cr_assert_eq(arb_repro_verdict(&c, -0.04, 0.1), ARB_VERDICT_HOLDS);
    c.op = ARB_OP_ABS_LT, c.threshold = 0.01, c.tolerance = 0;
    cr_assert_eq(arb_repro_verdict(&c, -0.005, 0.005), ARB_VERDICT_HOLDS);
    cr_assert_eq(arb_repro_verdict(&c, -0.005, 0.02), ARB_VERDICT_INCONCLUSIVE);
    cr_assert_eq(arb_repro_verdict(&c, 0.02, 0.05), ARB_VERDICT_FAILS);
    cr_assert_eq(arb_repro_verdict(&c, -0.05, -0.02), ARB_VERDICT_FAILS);
}

Test(reproduce, json_and_markdown_name_every_claim_and_verdict, .init = setup, .fini = teardown)
{
    put_series("a0", "A", "humaneval", 20, 3.0, 0.1);
    put_series("b0", "B", "humaneval", 20, 2.0, 0.1);
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c1 = claim(ARB_CLAIM_ORDER, "A", "B", NULL), c2 = claim(ARB_CLAIM_ORDER, "B", "A", NULL);
    arb_claim c3 = claim(ARB_CLAIM_ORDER, NULL, NULL, NULL);
    c2.id = "t2", c3.id = "t3", c3.untestable = "no config";
    arb_repro_result r[3] = {eval(&c1, &o), eval(&c2, &o), eval(&c3, &o)};
    cr_assert_eq(r[2].verdict, ARB_VERDICT_UNTESTABLE);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    arb_err err = {0};
    cr_assert_eq(arb_repro_write_json(r, 3, &o, f, &err), ARB_OK);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    cr_assert_not_null(j, "%s", buf);
    const cJSON *sum = cJSON_GetObjectItem(j, "summary");
    cr_assert_eq(cJSON_GetObjectItem(sum, "holds")->valueint, 1);
    cr_assert_eq(cJSON_GetObjectItem(sum, "fails")->valueint, 1);
    cr_assert_eq(cJSON_GetObjectItem(sum, "untestable")->valueint, 1);
    const cJSON *cl = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "claims"), 0);
    const cJSON *cell = cJSON_GetArrayItem(cJSON_GetObjectItem(cl, "cells"), 0);
    cr_assert_float_eq(cJSON_GetObjectItem(cell, "value")->valuedouble, 0.5, 1e-9);
    cr_assert_eq(cJSON_GetObjectItem(cell, "n")->valueint, 20);
    cJSON_Delete(j);
    free(buf);
    f = open_memstream(&buf, &len);
    cr_assert_eq(arb_repro_write_md(r, 3, f), ARB_OK);
    fclose(f);
    cr_assert(strstr(buf, "| t | order | >= +0.0% | p | **holds** | 1/0/0/0 |") != NULL, "%s", buf);
    cr_assert(strstr(buf, "| t | humaneval | - | +50.0% | [") != NULL, "%s", buf);
    cr_assert(strstr(buf, "| t3 | order | >= +0.0% | p | **untestable** | no config |") != NULL, "%s", buf);
    free(buf);
    for (int i = 0; i < 3; i++)
        arb_repro_result_release(&r[i]);
}

/* `arbor reproduce --plot`: the .dat holds per cell ours, its interval, the paper's value and
   the threshold, one block per table (claim id up to its last '.'), untestable claims left out;
   gnuplot (when installed) renders a real PNG. */
static bool png_magic(const char *path)
{
    unsigned char buf[8];
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    return got == 8 && !memcmp(buf, "\x89PNG\r\n\x1a\n", 8);
}

Test(reproduce, plot_data_has_ours_interval_paper_and_threshold, .init = setup, .fini = teardown)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    if (!root)
        cr_skip("ARBOR_SOURCE_ROOT not set (run through meson test)");
    put_series("a0", "A", "humaneval", 20, 3.0, 0.1);
    put_series("b0", "B", "humaneval", 20, 2.0, 0.1);
    arb_repro_opts o = arb_repro_default_opts();
    arb_claim c1 = claim(ARB_CLAIM_ORDER, "A", "B", NULL), c2 = claim(ARB_CLAIM_ORDER, "B", "A", NULL);
    arb_claim c3 = claim(ARB_CLAIM_ORDER, "A", "B", NULL), c4 = claim(ARB_CLAIM_ORDER, NULL, NULL, NULL);
    c1.id = "goose.c1.x", c1.paper_value = 0.4;  /* one cell, no per-cell value: the claim's */
    c2.id = "goose.t2.y", c3.id = "goose.t2.z", c3.threshold = 0.1, c3.op = ARB_OP_ABS_LT;
    c4.id = "goose.u.none", c4.untestable = "no config";
    arb_repro_result r[4] = {eval(&c1, &o), eval(&c2, &o), eval(&c3, &o), eval(&c4, &o)};
    char dir[64], tpl[1024], path[256];
    snprintf(dir, sizeof dir, "/tmp/arb_test_repro_fig_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(tpl, sizeof tpl, "%s/plots", root);
    bool gp = system("gnuplot --version >/dev/null 2>&1") == 0;
    arb_err err = {0};
    cr_assert_eq(arb_repro_write_plot(r, 4, dir, tpl, gp, &err), ARB_OK, "%s", err.msg);

    snprintf(path, sizeof path, "%s/reproduce_goose.dat", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[512];
    int n_head = 0, n_row = 0, n_blank = 0;
    const char *want_label[] = {"humaneval", "y: humaneval", "z: humaneval"};
    const arb_repro_result *want[] = {&r[0], &r[1], &r[2]};
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n') {
            n_blank++;
            continue;
        }
        if (!strncmp(line, "pos label claim cell ours lo hi paper threshold n verdict op", 60)) {
            n_head++;
            continue;
        }
        int pos, n;
        char label[96], id[64], cell[96], verdict[32], op[8];
        double v, lo, hi, paper, thr;
        cr_assert_eq(sscanf(line, "%d \"%95[^\"]\" \"%63[^\"]\" \"%95[^\"]\" %lf %lf %lf %lf %lf %d %31s \"%7[^\"]\"",
                            &pos, label, id, cell, &v, &lo, &hi, &paper, &thr, &n, verdict, op), 12, "%s", line);
        cr_assert(n_row < 3, "%s", line);
        const arb_repro_result *e = want[n_row];
        cr_assert_eq(pos, n_row == 2 ? 1 : 0, "%s", line);
        cr_assert_str_eq(label, want_label[n_row]);
        cr_assert_str_eq(id, e->claim->id);
        cr_assert_str_eq(cell, "humaneval");
        cr_assert_float_eq(v, e->cells[0].v, 1e-5, "%s", line);
        cr_assert_float_eq(lo, e->cells[0].lo, 1e-5, "%s", line);
        cr_assert_float_eq(hi, e->cells[0].hi, 1e-5, "%s", line);
        cr_assert(lo < v && v < hi, "%s", line);
        if (n_row == 0)
            cr_assert_float_eq(paper, 0.4, 1e-9, "the claim's paper_value for its one cell");
        else
            cr_assert(isnan(paper), "%s", line);
        cr_assert_float_eq(thr, e->claim->threshold, 1e-9, "%s", line);
        cr_assert_eq(n, 20);
        cr_assert_str_eq(verdict, arb_verdict_name(e->cells[0].verdict));
        cr_assert_str_eq(op, arb_claim_op_name(e->claim->op));
        n_row++;
    }
    fclose(f);
    cr_assert_eq(n_head, 2, "one block per table: goose.c1, goose.t2 (goose.u is untestable)");
    cr_assert_eq(n_row, 3);
    cr_assert_eq(n_blank, 2, "blocks two blank lines apart");

    snprintf(path, sizeof path, "%s/reproduce_goose.gp", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char gpbuf[16384];
    size_t nb = fread(gpbuf, 1, sizeof gpbuf - 1, f);
    gpbuf[nb] = 0;
    fclose(f);
    cr_assert(strstr(gpbuf, "datafile = 'reproduce_goose.dat'") && strstr(gpbuf, "nblocks = 2"), "%s", gpbuf);
    cr_assert(strstr(gpbuf, "scales[1] = 100") && strstr(gpbuf, "titles[2] = 'goose.t2"), "%s", gpbuf);
    cr_assert(strstr(gpbuf, "set output 'reproduce_goose.png'"), "%s", gpbuf);

    const char *ext[] = {"dat", "gp", "png", "svg"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/reproduce_goose.%s", dir, ext[i]);
        if (i == 2 && gp)
            cr_assert(png_magic(path), "%s is no PNG", path);
        unlink(path);
    }
    rmdir(dir);
    for (int i = 0; i < 4; i++)
        arb_repro_result_release(&r[i]);
}
