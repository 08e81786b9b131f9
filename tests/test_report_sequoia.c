/* test_report_sequoia.c — the sequoia-p table (Sequoia's positional acceptance from logged
 * ranks) on a hand-built database whose answer follows from its inputs: p[k] = Σ rank_hit /
 * Σ rank_offer per method and pooled, Wilson intervals, the --method and --dataset filters,
 * sampling runs and steps without ranks ignored, the pasted `sequoia_p` list, and the error
 * when nothing has ranks. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_capture.h"
#include "store.h"

#define N_STEPS 40
static char dir[256];
static arb_store *st;
static int n_runs;

/* Iso3 on dataset d, step s: offers and hits of ranks 0..2 (hits <= offers, one hit per node). */
static int iso_offer(int d, int s, int r) { return r < 2 ? 3 : 1 + (s + d) % 2; }
static int iso_hit(int d, int s, int r)
{
    return r == 0 ? (s + d) % 3 == 0 ? 2 : 1 : r == 1 ? (s % 4 == 1) : (s + d) % 5 == 0 && iso_offer(d, s, 2) > 0;
}

/* TR (dataset 0 only): ranks 0..1, rank 0 hit every other step. */
static int tr_offer(int s, int r) { return r < 2 ? 2 : 0; }
static int tr_hit(int s, int r) { return r == 0 && s % 2 == 0; }

static void put_run(const char *method, const char *drafter, const char *topo, int d, double temp)
{
    char key[17];
    snprintf(key, sizeof key, "%016x", ++n_runs);
    const char *ds = d ? "b" : "a";
    arb_store_run r = {.run_key = key, .config_name = "sq-test", .method = method, .base_method = method,
                       .drafter = drafter, .topology = topo, .sweep_json = "{}", .model_id = "m",
                       .model_sha256 = "00", .dataset = ds, .max_new_tokens = 64, .temperature = temp,
                       .top_p = 1};
    arb_err err = {0};
    cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
    static arb_store_step steps[N_STEPS];
    static char extra[N_STEPS][256];
    memset(steps, 0, sizeof steps);
    bool iso = !strcmp(method, "Iso3") || !strcmp(method, "Samp"), tr = !strcmp(method, "TR");
    for (int s = 0; s < N_STEPS; s++) {
        steps[s] = (arb_store_step){.step = s, .n_nodes = 10, .accepted = 1, .committed = 2, .mode = "tree"};
        if (iso)
            snprintf(extra[s], sizeof extra[s], "{\"acc_ranks\":[0],\"rank_offer\":[%d,%d,%d],\"rank_hit\":[%d,%d,%d]}",
                     iso_offer(d, s, 0), iso_offer(d, s, 1), iso_offer(d, s, 2), iso_hit(d, s, 0),
                     iso_hit(d, s, 1), iso_hit(d, s, 2));
        else if (tr)
            snprintf(extra[s], sizeof extra[s], "{\"acc_ranks\":[],\"rank_offer\":[%d,%d],\"rank_hit\":[%d,%d]}",
                     tr_offer(s, 0), tr_offer(s, 1), tr_hit(s, 0), tr_hit(s, 1));
        else /* a GOOSE-like step without ranks, and one that is not JSON at all */
            snprintf(extra[s], sizeof extra[s], s % 2 ? "{\"match_n\":3}" : "not json");
        steps[s].extra_json = extra[s];
    }
    int32_t ids[2 * N_STEPS + 1] = {0};
    arb_store_prompt p = {.prompt_id = "P/0", .n_prompt = 20, .n_gen = 2 * N_STEPS + 1, .n_calls = N_STEPS + 1,
                          .wall_us = 1000, .n_repeats = 1, .stop = "limit", .lossless = -1, .ids = ids};
    cr_assert_eq(arb_store_prompt_put(st, key, &p, steps, N_STEPS, &err), ARB_OK, "%s", err.msg);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/arb_test_sqp_XXXXXX");
    cr_assert(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/s.db", dir);
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &st, &err), ARB_OK, "%s", err.msg);
    n_runs = 0;
    put_run("AR", "none", "", 0, 0);
    put_run("Iso3", "goose", "iso", 0, 0);
    put_run("Iso3", "goose", "iso", 1, 0);
    put_run("TR", "tr", "", 0, 0);
    put_run("GOOSE", "goose", "", 0, 0);
    put_run("Samp", "goose", "iso", 0, 1.0); /* ranks at T > 0 are not greedy acceptances */
}

static void teardown(void)
{
    arb_store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static char *report(const char *method, const char *dataset, arb_report_fmt fmt, int *rc)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = "sequoia-p";
    o.fmt = fmt;
    o.method = method;
    o.dataset = dataset;
    return report_capture(st, &o, rc);
}

/* Expected sums for one method over datasets (d_only < 0: both). */
static void expect_sums(const char *m, int d_only, int64_t n[3], int64_t h[3])
{
    memset(n, 0, 3 * sizeof *n), memset(h, 0, 3 * sizeof *h);
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < N_STEPS; s++)
            for (int r = 0; r < 3; r++) {
                if (d_only >= 0 && d != d_only)
                    continue;
                if (!strcmp(m, "Iso3"))
                    n[r] += iso_offer(d, s, r), h[r] += iso_hit(d, s, r);
                else if (d == 0)
                    n[r] += tr_offer(s, r), h[r] += tr_hit(s, r);
            }
}

/* The JSON row (method, k) of a report, or NULL. */
static const cJSON *row(const cJSON *a, const char *m, int k)
{
    char kb[8];
    snprintf(kb, sizeof kb, "%d", k);
    const cJSON *x;
    cJSON_ArrayForEach(x, a)
        if (!strcmp(cJSON_GetObjectItem(x, "Method")->valuestring, m) &&
            !strcmp(cJSON_GetObjectItem(x, "k")->valuestring, kb))
            return x;
    return NULL;
}

static double num(const cJSON *r, const char *col, const char *f)
{
    return cJSON_GetObjectItem(cJSON_GetObjectItem(r, col), f)->valuedouble;
}

static void check_rows(const cJSON *a, const char *label, const int64_t n[3], const int64_t h[3])
{
    for (int r = 0; r < 3; r++) {
        const cJSON *x = row(a, label, r + 1);
        cr_assert(x, "%s k=%d missing", label, r + 1);
        cr_expect_eq((int64_t)num(x, "trials", "value"), n[r], "%s k=%d trials", label, r + 1);
        cr_expect_eq((int64_t)num(x, "hits", "value"), h[r], "%s k=%d hits", label, r + 1);
        double p = (double)h[r] / (double)n[r];
        cr_expect_float_eq(num(x, "p", "value"), p, 1e-12, "%s k=%d", label, r + 1);
        /* Wilson 95 %: the interval holds p and is inside [0, 1] */
        double lo = num(x, "p", "lo"), hi = num(x, "p", "hi"), z = 1.959964, z2n = z * z / (double)n[r];
        double mid = (p + z2n / 2) / (1 + z2n);
        double half = z * sqrt(p * (1 - p) / (double)n[r] + z2n / (4.0 * (double)n[r])) / (1 + z2n);
        cr_expect_float_eq(lo, fmax(0, mid - half), 1e-9, "%s k=%d lo", label, r + 1);
        cr_expect_float_eq(hi, fmin(1, mid + half), 1e-9, "%s k=%d hi", label, r + 1);
        cr_expect(lo <= p && p <= hi);
    }
    cr_expect_null(row(a, label, 4), "%s has no rank 4", label);
}

Test(report_sequoia, per_method_and_pooled_estimates_match_the_logged_counts, .init = setup, .fini = teardown)
{
    int rc;
    char *js = report(NULL, NULL, ARB_FMT_JSON, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", js);
    cJSON *a = cJSON_Parse(js);
    cr_assert(cJSON_IsArray(a), "%s", js);
    int64_t ni[3], hi[3], nt[3], ht[3], np[3], hp[3];
    expect_sums("Iso3", -1, ni, hi);
    expect_sums("TR", -1, nt, ht);
    for (int r = 0; r < 3; r++)
        np[r] = ni[r] + nt[r], hp[r] = hi[r] + ht[r];
    check_rows(a, "Iso3", ni, hi);
    const cJSON *t1 = row(a, "TR", 1), *t2 = row(a, "TR", 2);
    cr_assert(t1 && t2 && !row(a, "TR", 3));
    cr_expect_eq((int64_t)num(t1, "trials", "value"), nt[0]);
    cr_expect_eq((int64_t)num(t1, "hits", "value"), ht[0]);
    cr_expect_float_eq(num(t2, "p", "value"), 0.0, 1e-12);
    check_rows(a, "pooled", np, hp);
    /* no rows for runs without ranks (AR, GOOSE fields only) or sampled at T > 0 */
    cr_expect_null(row(a, "AR", 1));
    cr_expect_null(row(a, "GOOSE", 1));
    cr_expect_null(row(a, "Samp", 1));
    cJSON_Delete(a);
    free(js);
}

Test(report_sequoia, filters_and_the_pasted_list, .init = setup, .fini = teardown)
{
    int rc;
    char *js = report("Iso3", "b", ARB_FMT_JSON, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", js);
    cJSON *a = cJSON_Parse(js);
    int64_t n[3], h[3];
    expect_sums("Iso3", 1, n, h);
    check_rows(a, "Iso3", n, h);
    cr_expect_null(row(a, "TR", 1));
    cr_expect_null(row(a, "pooled", 1), "one method: no pooled block");
    cJSON_Delete(a);
    free(js);
    /* the markdown caption carries p[1..3] to 3 significant digits as a sequoia_p list */
    char *md = report("Iso3", "b", ARB_FMT_MD, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", md);
    char want[128];
    snprintf(want, sizeof want, "from Iso3 on b: [%.3g, %.3g, %.3g]", (double)h[0] / n[0], (double)h[1] / n[1],
             (double)h[2] / n[2]);
    cr_expect(strstr(md, want) != NULL, "want '%s' in\n%s", want, md);
    free(md);
}

Test(report_sequoia, no_ranked_steps_is_an_error, .init = setup, .fini = teardown)
{
    int rc;
    char *msg = report("GOOSE", NULL, ARB_FMT_MD, &rc);
    cr_expect_eq(rc, ARB_E_NOTFOUND, "%s", msg);
    cr_expect(strstr(msg, "rank_offer") != NULL, "%s", msg);
    free(msg);
    msg = report("Samp", NULL, ARB_FMT_MD, &rc);
    cr_expect_eq(rc, ARB_E_NOTFOUND, "sampling runs are not estimated from: %s", msg);
    free(msg);
}
