/* test_report_dte.c — the DTE Tables 2/3 report (`--table dte`) on a small hand-built database
 * whose answer is known from its inputs: per (verifier, setting, dataset) the best (k, b) for
 * τ and, separately, for tok/s; the mean over datasets; the mean over settings; the top-p as
 * part of the setting key; several seeds of one shape averaged, not maxed; AR as a reference
 * row that is never bold; `auto` choosing dte here. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_capture.h"
#include "store.h"

/* Settings, written in a scrambled order (the table orders them like the paper). */
static const double set_t[3] = {1.0, 0.6, 1.0}, set_p[3] = {0.9, 1.0, 1.0};
/* Paper order of the settings above: T=0.6, T=1, T=1 p=0.9. */
static const int set_col[3] = {2, 0, 1};
static const char *const dss[2] = {"math500", "olympiadbench"};

/* V1: i.i.d. shapes k2b2, k2b4, k3b2; V2: single path k1b2, k1b4. Indexed [shape][setting in
   paper order][dataset]: tau10 = 10 τ (n_gen with 10 target calls), tps = tokens/s. */
static const int v1_k[3] = {2, 2, 3}, v1_b[3] = {2, 4, 2};
static const int v1_tau10[3][3][2] = {{{15, 20}, {11, 16}, {30, 24}},
                                      {{18, 14}, {12, 10}, {25, 28}},
                                      {{12, 22}, {13, 10}, {20, 26}}};
static const int v1_tps[3][3][2] = {{{40, 10}, {20, 40}, {10, 25}},
                                    {{20, 25}, {25, 10}, {10, 20}},
                                    {{50, 20}, {10, 20}, {50, 10}}};
static const int v2_b[2] = {2, 4};
static const int v2_tau10[2][3][2] = {{{14, 12}, {10, 13}, {20, 10}}, {{16, 10}, {11, 12}, {10, 20}}};
static const int v2_tps[2][3][2] = {{{50, 20}, {40, 10}, {25, 40}}, {{40, 25}, {50, 20}, {50, 10}}};

static char dir[256];
static arb_store *st;
static int n_runs;

static void put_run(const char *verifier, int k, int b, int s, int d, int seed, int tau10, int tps)
{
    char key[17], label[64], cell[512], sweep[64];
    snprintf(key, sizeof key, "%016x", ++n_runs);
    bool ar = !strcmp(verifier, "AR");
    snprintf(label, sizeof label, ar ? "AR" : "%s[paths=%d,branch_len=%d]", verifier, k, b);
    snprintf(sweep, sizeof sweep, ar ? "{}" : "{\"paths\":%d,\"branch_len\":%d}", k, b);
    snprintf(cell, sizeof cell,
             "{\"model\":{\"id\":\"m\"},\"dataset\":{\"name\":\"%s\"},\"method\":{\"id\":\"%s\","
             "\"drafter\":\"%s\",\"paths\":%d,\"trunk\":0,\"branch_len\":%d},"
             "\"sampling\":{\"temperature\":%g,\"top_p\":%g,\"top_k\":0},\"seed\":%d}",
             dss[d], verifier, ar ? "none" : "draft", k, b, set_t[s], set_p[s], seed);
    arb_store_run r = {.run_key = key, .config_name = "dte-test", .method = label,
                       .base_method = verifier, .drafter = ar ? "none" : "draft",
                       .verifier = ar ? "greedy" : verifier, .sweep_json = sweep, .model_id = "m",
                       .model_sha256 = "00", .dataset = dss[d], .max_new_tokens = 64,
                       .temperature = set_t[s], .top_p = set_p[s], .seed = seed, .cell_json = cell};
    arb_err err = {0};
    cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
    int32_t ids[64] = {0};
    /* one prompt: τ = n_gen / n_calls, tok/s = n_gen / wall */
    arb_store_prompt p = {.prompt_id = "P/0", .n_prompt = 20, .n_gen = tau10, .n_calls = 10,
                          .wall_us = (int64_t)tau10 * 1000000 / tps, .n_repeats = 1,
                          .stop = "limit", .lossless = -1, .ids = ids};
    cr_assert_eq(1000000 % tps, 0);
    cr_assert_eq(arb_store_prompt_put(st, key, &p, NULL, 0, &err), ARB_OK, "%s", err.msg);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/arb_test_dte_XXXXXX");
    cr_assert(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/d.db", dir);
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &st, &err), ARB_OK, "%s", err.msg);
    n_runs = 0;
    for (int s = 0; s < 3; s++)
        for (int d = 0; d < 2; d++) {
            int c = set_col[s];
            put_run("AR", 1, 1, s, d, 0, 10, 100);
            for (int h = 0; h < 3; h++)
                put_run("V1", v1_k[h], v1_b[h], s, d, 0, v1_tau10[h][c][d], v1_tps[h][c][d]);
            for (int h = 0; h < 2; h++)
                put_run("V2", 1, v2_b[h], s, d, 0, v2_tau10[h][c][d], v2_tps[h][c][d]);
        }
    /* a second seed of V1 k2b2 at T=0.6 on math500: τ 2.0 beats k2b4's 1.8, but the mean
       over the two seeds (1.75) does not, so k2b4 must stay the winner */
    put_run("V1", 2, 2, 1, 0, 1, 20, 40);
}

static void teardown(void)
{
    arb_store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static char *report(const char *table, arb_report_fmt fmt, int *rc)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = table;
    o.fmt = fmt;
    o.n_boot = 0;
    return report_capture(st, &o, rc);
}

/* The expected CSV row of a verifier, computed from the input tables by the paper's rule. */
static void expected_row(const char *name, int n_shape, const int (*tau10)[3][2],
                         const int (*tps)[3][2], const char *const *shape, char *out, size_t cap)
{
    int at = snprintf(out, cap, "m,%s", name);
    double avg[2] = {0, 0};
    for (int c = 0; c < 3; c++)
        for (int h = 0; h < 2; h++) {
            const int (*v)[3][2] = h ? tps : tau10;
            double sum = 0;
            char note[64] = "";
            for (int d = 0; d < 2; d++) {
                int best = 0;
                for (int x = 1; x < n_shape; x++)
                    if (v[x][c][d] > v[best][c][d])
                        best = x;
                sum += h ? v[best][c][d] : v[best][c][d] / 10.0;
                snprintf(note + strlen(note), sizeof note - strlen(note), "%s%s", d ? "; " : "", shape[best]);
            }
            avg[h] += sum / 2 / 3;
            at += snprintf(out + at, cap - (size_t)at, ",%.6g,%s", sum / 2, note);
        }
    snprintf(out + at, cap - (size_t)at, ",%.6g,,%.6g,\n", avg[0], avg[1]);
}

Test(report_dte, best_shape_per_dataset_and_setting_then_the_mean, .init = setup, .fini = teardown)
{
    int rc;
    char *csv = report("dte", ARB_FMT_CSV, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", csv);
    /* three settings in paper order, the top-p one separate from T=1, then the average */
    const char *head = "Model,Verifier,T=0.6 τ,T=0.6 τ at,T=0.6 tok/s,T=0.6 tok/s at,T=1 τ,T=1 τ at,"
                       "T=1 tok/s,T=1 tok/s at,T=1 p=0.9 τ,T=1 p=0.9 τ at,T=1 p=0.9 tok/s,"
                       "T=1 p=0.9 tok/s at,Avg. τ,Avg. τ at,Avg. tok/s,Avg. tok/s at\n";
    cr_assert(!strncmp(csv, head, strlen(head)), "%s", csv);
    const char *v1s[3] = {"k2b2", "k2b4", "k3b2"}, *v2s[2] = {"k1b2", "k1b4"};
    char want[512];
    expected_row("V1", 3, v1_tau10, v1_tps, v1s, want, sizeof want);
    cr_assert(strstr(csv, want), "%s\nwant %s", csv, want);
    expected_row("V2", 2, v2_tau10, v2_tps, v2s, want, sizeof want);
    cr_assert(strstr(csv, want), "%s\nwant %s", csv, want);
    /* the same row, hand-computed from the tables above (a check on expected_row itself):
       T=0.6 τ: math500 max(1.5|1.75 over seeds, 1.8, 1.2) = 1.8 (k2b4), olympiad 2.2 (k3b2) */
    cr_assert(strstr(csv, "m,V1,2,k2b4; k3b2,37.5,k3b2; k2b4,1.45,k3b2; k2b2,32.5,k2b4; k2b2,"
                          "2.9,k2b2; k2b4,37.5,k3b2; k2b2,2.11667,,35.8333,\n"), "%s", csv);
    /* AR: a reference row, last, τ 1 and its tok/s */
    cr_assert(strstr(csv, "m,V2,") < strstr(csv, "m,AR,1,,100,,1,,100,,1,,100,,1,,100,\n"), "%s", csv);
    free(csv);
}

Test(report_dte, markdown_latex_json_and_auto, .init = setup, .fini = teardown)
{
    int rc;
    char *md = report("auto", ARB_FMT_MD, &rc); /* a draft-model database: auto = dte */
    cr_assert_eq(rc, ARB_OK, "%s", md);
    cr_assert(strstr(md, "| Model | Verifier | T=0.6 τ | T=0.6 tok/s | T=1 τ | T=1 tok/s | "
                         "T=1 p=0.9 τ | T=1 p=0.9 tok/s | Avg. τ | Avg. tok/s |"), "%s", md);
    cr_assert(strstr(md, "| m | V1 | **2.00** (k2b4; k3b2) | **37.50** (k3b2; k2b4) |"), "%s", md);
    cr_assert(strstr(md, "| m | V2 | 1.40 (k1b4; k1b2) | **37.50** (k1b2; k1b4) |"), "%s", md);
    cr_assert(strstr(md, "| m | AR | 1.00 | 100.00 |"), "AR is never bold: %s", md);
    cr_assert(strstr(md, "MATH500, OlympiadBench"), "the caption names the dataset order: %s", md);
    free(md);
    char *tex = report("dte", ARB_FMT_TEX, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", tex);
    cr_assert(strstr(tex, "\\multicolumn{2}{c}{T=1 p=0.9}"), "%s", tex);
    cr_assert(strstr(tex, "\\textbf{2.90} {\\scriptsize (k2b2; k2b4)}"), "%s", tex);
    free(tex);
    char *js = report("dte", ARB_FMT_JSON, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", js);
    cr_assert(strstr(js, "\"at\":\t\"k1b4; k1b4\""), "%s", js);
    free(js);
}

Test(report_dte, top_p_and_sampling_pivot_keys, .init = setup, .fini = teardown)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = "pivot";
    o.rows = "method";
    o.cols = "sampling";
    o.fmt = ARB_FMT_CSV;
    o.n_boot = 0;
    int rc;
    char *buf = report_capture(st, &o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", buf);
    cr_assert(!strncmp(buf, "method,T=1 p=0.9,T=0.6,T=1\n", 27), "%s", buf);
    free(buf);
    o.cols = "top_p";
    buf = report_capture(st, &o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", buf);
    cr_assert(!strncmp(buf, "method,0.9,1\n", 13), "%s", buf);
    free(buf);
}

Test(report_dte, no_draft_runs_is_a_clear_error, .init = setup, .fini = teardown)
{
    cr_assert_eq(sqlite3_exec(arb_store_db(st), "DELETE FROM runs WHERE drafter = 'draft'", NULL, NULL, NULL),
                 SQLITE_OK);
    int rc;
    char *msg = report("dte", ARB_FMT_MD, &rc);
    cr_assert_eq(rc, ARB_E_NOTFOUND);
    cr_assert(strstr(msg, "no draft-model runs"), "%s", msg);
    free(msg);
    msg = report("auto", ARB_FMT_CSV, &rc); /* AR only: auto falls back to table3 */
    cr_assert_eq(rc, ARB_OK, "%s", msg);
    cr_assert(!strncmp(msg, "Model,Method,MATH500 Spd", 24), "%s", msg);
    free(msg);
}
