/* test_costmodel.c — the eval cost model: the fit recovers a known cost surface, drops
 * knots no sample reaches, refuses what it cannot fit, round-trips through its file and
 * names the bad field of a broken one; the GPU roofline gives the textbook ratios. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costmodel.h"

/* a CPU-like surface: 1 node 9 ms, then ~linear in n, plus 0.5 us per node per key */
static double truth(int n, int L)
{
    const double w = n <= 8 ? 9000.0 + 1800.0 * (n - 1) : 21600.0 + 2500.0 * (n - 8);
    return w + 0.5 * n * L;
}

Test(costmodel, fit_recovers_a_piecewise_linear_surface)
{
    int n[200], L[200];
    double t[200];
    int m = 0;
    const int sizes[] = {1, 2, 4, 8, 16, 32, 64};
    for (int s = 0; s < 7; s++)
        for (int l = 0; l < 4; l++, m++)
            n[m] = sizes[s], L[m] = 64 + 400 * l, t[m] = truth(sizes[s], L[m]);
    arb_cost_model cm;
    arb_err err = {0};
    cr_assert_eq(arb_cost_fit(n, L, t, m, &cm, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(cm.n_knots, 7);
    cr_assert_float_eq(cm.ctx_us, 0.5, 1e-6);
    cr_assert_lt(cm.rms_rel, 1e-9, "rms %g", cm.rms_rel);
    for (int k = 1; k <= 64; k++) /* between knots the truth is linear too (knot 8 is a knot) */
        cr_assert_float_eq(arb_cost_us(&cm, k, 300), truth(k, 300), 1e-6 * truth(k, 300), "n=%d", k);
    /* beyond the last knot: its segment extended */
    cr_assert_float_eq(arb_cost_us(&cm, 80, 0), truth(80, 0), 1e-6 * truth(80, 0));
}

Test(costmodel, unreached_knots_are_dropped)
{
    /* samples at 1 and 81 nodes only (AR and TR): knots 2..64 have no sample */
    int n[6] = {1, 1, 1, 81, 81, 81}, L[6] = {10, 500, 1000, 10, 500, 1000};
    double t[6];
    for (int i = 0; i < 6; i++)
        t[i] = 1000.0 + 100.0 * (n[i] - 1) + 0.25 * n[i] * L[i];
    arb_cost_model cm;
    arb_err err = {0};
    cr_assert_eq(arb_cost_fit(n, L, t, 6, &cm, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(cm.n_knots, 2);
    cr_assert_eq(cm.knot[1], 81);
    cr_assert_float_eq(arb_cost_us(&cm, 41, 100), 1000.0 + 4000.0 + 0.25 * 41 * 100, 1e-3);
}

Test(costmodel, refuses_what_it_cannot_fit)
{
    arb_cost_model cm;
    arb_err err = {0};
    int n[3] = {2, 4, 8}, L[3] = {0, 0, 0};
    double t[3] = {1, 2, 3};
    cr_assert_eq(arb_cost_fit(n, L, t, 3, &cm, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "one-node"), "%s", err.msg);
    int n2[2] = {1, 0};
    double t2[2] = {1, 1};
    cr_assert_eq(arb_cost_fit(n2, L, t2, 2, &cm, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "sample 1"), "%s", err.msg);
}

Test(costmodel, negative_context_slope_is_dropped)
{
    /* time falls with L (noise): the context term would be negative; the fit keeps w only */
    int n[4] = {1, 1, 4, 4}, L[4] = {0, 1000, 0, 1000};
    double t[4] = {1000, 990, 2000, 1980};
    arb_cost_model cm;
    arb_err err = {0};
    cr_assert_eq(arb_cost_fit(n, L, t, 4, &cm, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(cm.ctx_us, 0.0);
}

Test(costmodel, file_round_trip_and_errors)
{
    char path[] = "/tmp/arb_costXXXXXX";
    const int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    arb_cost_model a = {.n_knots = 3, .knot = {1, 4, 16}, .w_us = {100, 250, 700}, .ctx_us = 0.125, .n_samples = 9,
                        .rms_rel = 0.03};
    snprintf(a.source, sizeof a.source, "unit test");
    snprintf(a.fingerprint, sizeof a.fingerprint, "cpu x, avx2, 2 threads");
    snprintf(a.build, sizeof a.build, "v1.2-3-gabcdef0");
    arb_err err = {0};
    cr_assert_eq(arb_cost_save(&a, path, &err), ARB_OK, "%s", err.msg);
    arb_cost_model b;
    cr_assert_eq(arb_cost_load(path, &b, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(b.n_knots, 3);
    cr_assert_eq(b.knot[2], 16);
    cr_assert_float_eq(b.w_us[1], 250.0, 1e-12);
    cr_assert_float_eq(b.ctx_us, 0.125, 1e-12);
    cr_assert_str_eq(b.fingerprint, a.fingerprint);
    cr_assert_str_eq(b.build, a.build);
    cr_assert_float_eq(arb_cost_us(&b, 10, 8), arb_cost_us(&a, 10, 8), 1e-9);
    /* knots out of order: the error names the field */
    FILE *f = fopen(path, "w");
    fputs("{\"knots\": [1, 8, 4], \"w_us\": [1, 2, 3], \"ctx_us\": 0}", f);
    fclose(f);
    cr_assert_eq(arb_cost_load(path, &b, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "'knots'") && strstr(err.msg, path), "%s", err.msg);
    f = fopen(path, "w");
    fputs("{\"knots\": [1, 4], \"w_us\": [1], \"ctx_us\": 0}", f);
    fclose(f);
    cr_assert_eq(arb_cost_load(path, &b, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "'w_us'"), "%s", err.msg);
    f = fopen(path, "w");
    fputs("{\"knots\": [1", f);
    fclose(f);
    cr_assert_eq(arb_cost_load(path, &b, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "not JSON"), "%s", err.msg);
    unlink(path);
    cr_assert_eq(arb_cost_load(path, &b, &err), ARB_E_NOTFOUND);
}

Test(costmodel, gpu_roofline_ratios)
{
    const arb_gpu_roofline *a100 = &arb_gpu_rooflines[1];
    cr_assert_str_eq(a100->name, "A100-80GB");
    /* 7B FP16: weights 14 GB at 2039 GB/s = 6.87 ms; one node's 14 GFLOP at 312 TF/s = 45 us,
       so c(n) = 1 until n = 2039 / 312 * 1000 / 1000 * ... = 153 nodes, then linear */
    cr_assert_float_eq(arb_cost_gpu_rel(a100, 7e9, 2.0, 1), 1.0, 1e-12);
    cr_assert_float_eq(arb_cost_gpu_rel(a100, 7e9, 2.0, 100), 1.0, 1e-12);
    cr_assert_float_eq(arb_cost_gpu_rel(a100, 7e9, 2.0, 306), 306.0 * 2039.0 / 312000.0, 1e-9);
}

/* ---- the report table on a database whose eval times follow a known cost surface ---- */

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "report.h"
#include "report_capture.h"
#include "store.h"

/* linear in n, so a fit on the other runs' node counts interpolates any run exactly */
static double lin_cost(int n, int L) { return 9000.0 + 1500.0 * (n - 1) + 0.5 * n * L; }

/* AR and three tree methods (8, 16, 32 nodes; k accepted per step), 4 prompts each; wall time =
   prefill + the eval times + 30 us of harness per step, exactly. turn_gap > 0: a second turn
   (MT-Bench) half way, whose own prompt of turn_gap tokens is prefilled (another 500 us) before
   the rest of the generation, so the contexts jump by turn_gap there. harvest_us > 0: the tree
   methods' prefill costs that much more than AR's (TR/GOOSE `harvest_prefill` runs the output
   head over every prompt position). */
static void build_cost_db(arb_store *st, int turn_gap, int n_methods, int harvest_us)
{
    static const char *const meth[] = {"AR", "T8", "T16", "T32"};
    static const int nodes[] = {1, 8, 16, 32}, k_acc[] = {0, 2, 3, 4};
    arb_err err = {0};
    for (int m = 0; m < n_methods; m++) {
        char key[17];
        snprintf(key, sizeof key, "c%015d", m);
        arb_store_run r = {.run_key = key, .config_name = "cost", .method = meth[m], .base_method = meth[m],
                           .drafter = m ? "goose" : "none", .topology = "", .sweep_json = "{}", .model_id = "tiny",
                           .model_sha256 = "00", .dataset = "humaneval", .max_new_tokens = 64, .top_p = 1};
        cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
        for (int p = 0; p < 4; p++) {
            arb_store_step steps[80];
            int32_t ids[80];
            const int n_prompt = 40 + 10 * p, gen_max = 60;
            int gen = 0, s = 0;
            double wall = 500.0 + (m ? harvest_us : 0), prefill = wall; /* prefill */
            int gap = 0;
            while (gen < gen_max) {
                if (turn_gap && !gap && gen >= gen_max / 2)
                    gap = turn_gap, wall += 500.0, prefill += 500.0;
                arb_store_step *x = &steps[s];
                memset(x, 0, sizeof *x);
                const int c = k_acc[m] + 1 < gen_max - gen ? k_acc[m] + 1 : gen_max - gen;
                x->step = s, x->n_nodes = nodes[m], x->l_cache = n_prompt + gap + gen, x->accepted = c - 1, x->committed = c;
                x->mode = m ? "tree" : "ar";
                x->eval_us = (int64_t)llround(lin_cost(nodes[m], x->l_cache));
                x->draft_us = m ? 30 : 0;
                wall += (double)x->eval_us + (double)x->draft_us;
                gen += c, s++;
            }
            for (int i = 0; i < gen; i++)
                ids[i] = 7 * p + i;
            char pid[16];
            snprintf(pid, sizeof pid, "P/%d", p);
            arb_store_prompt pr = {.prompt_id = pid, .prompt_idx = p, .n_prompt = n_prompt, .n_gen = gen,
                                   .n_calls = s + 1, .wall_us = (int64_t)wall, .prefill_us = (int64_t)prefill, .n_repeats = 1,
                                   .stop = "limit", .lossless = 1, .ids = ids};
            cr_assert_eq(arb_store_prompt_put(st, key, &pr, steps, s, &err), ARB_OK, "%s", err.msg);
        }
    }
}

/* A fresh database at dir/c.db (dir: a mkdtemp template) holding build_cost_db's runs. */
static arb_store *open_cost_db(char *dir, char *path, size_t cap, int turn_gap, int n_methods, int harvest_us)
{
    cr_assert(mkdtemp(dir));
    snprintf(path, cap, "%s/c.db", dir);
    arb_store *st = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &st, &err), ARB_OK, "%s", err.msg);
    build_cost_db(st, turn_gap, n_methods, harvest_us);
    return st;
}

static void close_cost_db(arb_store *st, const char *dir, const char *path)
{
    arb_store_close(st);
    unlink(path);
    rmdir(dir);
}

/* The cost table of st as JSON rows (one object per row; *out keeps the text for messages). */
static cJSON *cost_report_json(arb_store *st, char **out)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = "cost", o.fmt = ARB_FMT_JSON, o.n_boot = 0;
    int rc;
    *out = report_capture(st, &o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", *out);
    cJSON *j = cJSON_Parse(*out);
    cr_assert(cJSON_IsArray(j), "%s", *out);
    return j;
}

static void check_exact_predictions(int turn_gap, int harvest_us)
{
    char dir[] = "/tmp/arb_costdbXXXXXX", path[64];
    arb_store *st = open_cost_db(dir, path, sizeof path, turn_gap, 4, harvest_us);
    /* every tree method: the leave-one-run-out prediction equals the measured speedup (the
       surface is linear in n, so the other runs' knots interpolate it exactly) */
    char *out;
    cJSON *j = cost_report_json(st, &out);
    const cJSON *rows = j; /* the JSON format: one object per row, a cell is {"value": v} */
    cr_assert_eq(cJSON_GetArraySize(rows), 3, "%s", out);
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) {
        const cJSON *meas = cJSON_GetObjectItem(cJSON_GetObjectItem(row, "this machine speedup"), "value"),
                    *pred = cJSON_GetObjectItem(cJSON_GetObjectItem(row, "this machine predicted"), "value"),
                    *drift = cJSON_GetObjectItem(cJSON_GetObjectItem(row, "this machine eval drift"), "value");
        cr_assert(cJSON_IsNumber(meas) && cJSON_IsNumber(pred), "%s", out);
        cr_assert_float_eq(pred->valuedouble, meas->valuedouble, 2e-3 * meas->valuedouble, "%s", out);
        /* every eval on the surface, AR's too: no drift */
        cr_assert(cJSON_IsNumber(drift), "%s", out);
        cr_assert_float_eq(drift->valuedouble, 0.0, 1e-4, "%s", out);
    }
    cJSON_Delete(j);
    free(out);
    close_cost_db(st, dir, path);
}

Test(costmodel, report_table_predicts_an_exact_surface) { check_exact_predictions(0, 0); }

/* A second turn moves the contexts by its prompt: AR's side must follow the method's own trace
   (the step contexts), not n_prompt + j, or every multi-turn row is predicted too fast (MT-Bench
   was +15-18 % before). */
Test(costmodel, report_table_follows_a_second_turn) { check_exact_predictions(200, 0); }

/* A method whose prefill costs more than AR's (harvesting the prompt's top-K: 50 ms more per
   prompt here, ~10 % of AR's wall time): AR's side of the prediction must carry AR's own
   prefill of the same prompt, not the method's, or the row is predicted as if the extra
   prefill were free for the method (+3 ... +14 % on the harvesting rows of the 2026-11-27
   sittings; +9.2 % on every row here). */
Test(costmodel, report_table_takes_ar_prefill_from_the_ar_run) { check_exact_predictions(0, 50000); }

/* A prompt the AR run has no row for (a resumed or cut run): the caption says nothing while AR
   has every row; once one is gone, the method's own prefill stands in on both sides for that
   prompt and the caption counts it. */
Test(costmodel, report_table_counts_prompts_without_an_ar_row)
{
    char dir[] = "/tmp/arb_costaXXXXXX", path[64];
    arb_store *st = open_cost_db(dir, path, sizeof path, 0, 4, 50000);
    arb_report_opts o = arb_report_default_opts();
    o.table = "cost", o.fmt = ARB_FMT_MD, o.n_boot = 0;
    int rc;
    char *out = report_capture(st, &o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", out);
    cr_assert(strstr(out, "on AR's side the AR run's of the same prompt."), "%s", out);
    cr_assert(!strstr(out, "without an AR row"), "%s", out);
    free(out);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "DELETE FROM prompts WHERE run_key = 'c000000000000000' AND prompt_id = 'P/3'",
                              NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_changes(db), 1);
    sqlite3_close(db);
    out = report_capture(st, &o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", out);
    /* three tree runs, one prompt each */
    cr_assert(strstr(out, "(3 prompts without an AR row: the method's own prefill on both sides)"), "%s", out);
    free(out);
    close_cost_db(st, dir, path);
}

/* Write a profile fitted on `cost` at the bench's shapes (wide trees 1..64 nodes at 64 and
   512 cached tokens). */
static void write_profile(const char *path, double (*cost)(int, int))
{
    int n[14], L[14];
    double t[14];
    int m = 0;
    for (int k = 1; k <= 64; k *= 2)
        n[m] = k, L[m] = 64, t[m] = cost(k, 64), m++;
    for (int k = 1; k <= 64; k *= 4)
        n[m] = k, L[m] = 512, t[m] = cost(k, 512), m++;
    arb_cost_model cm;
    arb_err err = {0};
    cr_assert_eq(arb_cost_fit(n, L, t, m, &cm, &err), ARB_OK, "%s", err.msg);
    snprintf(cm.fingerprint, sizeof cm.fingerprint, "unit test cpu | avx2 | 1 threads | tiny 1MB");
    cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
}

static double twice_the_tree_cost(int n, int L) { return 9000.0 + 3000.0 * (n - 1) + 0.5 * n * L; }

/* Row `method`'s numeric cell `col` of a JSON report (NAN when empty). */
static double json_cell(const cJSON *rows, const char *method, const char *col)
{
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) {
        const cJSON *mm = cJSON_GetObjectItem(row, "Method");
        if (cJSON_IsString(mm) && !strcmp(mm->valuestring, method)) {
            const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(row, col), "value");
            return cJSON_IsNumber(v) ? v->valuedouble : NAN;
        }
    }
    return NAN;
}

/* A burst of the host: T16's evals on one prompt (P/2) ran 1.5x dearer, its wall time with them.
   Its eval drift is its measured evals over the surface (the fit on AR, T8 and T32 is exact),
   relative to AR's (exactly on it): the figure computed here from the rows. Its prediction now
   runs ahead of its measured speedup, in the drift's direction. */
Test(costmodel, report_table_names_the_hosts_eval_drift)
{
    char dir[] = "/tmp/arb_costdXXXXXX", path[64];
    arb_store *st = open_cost_db(dir, path, sizeof path, 0, 4, 0);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    static const char burst[] =
        "UPDATE prompts SET wall_us = wall_us + (SELECT SUM(eval_us) / 2 FROM steps WHERE run_key = 'c000000000000002'"
        " AND prompt_id = 'P/2') WHERE run_key = 'c000000000000002' AND prompt_id = 'P/2';"
        "UPDATE steps SET eval_us = eval_us * 3 / 2 WHERE run_key = 'c000000000000002' AND prompt_id = 'P/2';";
    cr_assert_eq(sqlite3_exec(db, burst, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    double meas = 0, surf = 0;
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT n_nodes, l_cache, eval_us FROM steps WHERE run_key = 'c000000000000002'",
                                    -1, &q, NULL), SQLITE_OK);
    while (sqlite3_step(q) == SQLITE_ROW)
        surf += lin_cost(sqlite3_column_int(q, 0), sqlite3_column_int(q, 1)), meas += sqlite3_column_double(q, 2);
    sqlite3_finalize(q);
    sqlite3_close(db);
    const double want = meas / surf - 1.0;
    cr_assert(want > 0.1 && want < 0.2, "burst share %.3f", want); /* one prompt of four at 1.5x */
    char *out;
    cJSON *j = cost_report_json(st, &out);
    const double d16 = json_cell(j, "T16", "this machine eval drift"), e16 = json_cell(j, "T16", "this machine error");
    cr_assert_float_eq(d16, want, 1e-4, "%s", out);
    cr_expect(e16 > 0.03, "T16 predicted faster than measured with its burst: %s", out);
    /* the burst also enters T8's and T32's fits (T32's from above the knots); every row's error
       is its drift, diluted by prefill and harness: the same sign, no larger */
    static const char *const meth[] = {"T8", "T16", "T32"};
    for (int k = 0; k < 3; k++) {
        const double d = json_cell(j, meth[k], "this machine eval drift"), e = json_cell(j, meth[k], "this machine error");
        cr_expect(fabs(d) > 0.01 && d * e > 0 && fabs(e) <= fabs(d) + 1e-3, "%s: drift %.4f error %.4f: %s", meth[k], d,
                  e, out);
    }
    cJSON_Delete(j);
    free(out);
    close_cost_db(st, dir, path);
}

/* A database holding two setups (sessions.kernels: here T16 ran with other kernels, its evals
   twice as dear): each run's leave-one-run-out fit takes only its own setup's runs, so T8 and
   T32 are still predicted exactly (a fit through T16's dear 16-node steps would put T8's 8-node
   cost between w(1) and a doubled w(16)), and T16, alone in its setup, gets no prediction. */
Test(costmodel, report_table_fits_each_setup_apart)
{
    char dir[] = "/tmp/arb_costsXXXXXX", path[64];
    arb_store *st = open_cost_db(dir, path, sizeof path, 0, 4, 0);
    arb_err err = {0};
    for (int m = 0; m < 4; m++) {
        char key[17], sess[8];
        snprintf(key, sizeof key, "c%015d", m);
        snprintf(sess, sizeof sess, "s%d", m);
        arb_store_session ss = {.session = sess, .run_key = key, .hostname = "h", .cpu_model = "cpu", .status = "done",
                                .kernels = m == 2 ? "avx2" : "avx512vnni", .n_threads = 1};
        cr_assert_eq(arb_store_session_put(st, &ss, &err), ARB_OK, "%s", err.msg);
    }
    cr_assert_eq(sqlite3_exec(arb_store_db(st),
                              "UPDATE steps SET eval_us = 2 * eval_us WHERE run_key = 'c000000000000002';"
                              "UPDATE prompts SET wall_us = wall_us + (SELECT SUM(eval_us) / 2 FROM steps s"
                              " WHERE s.run_key = prompts.run_key AND s.prompt_id = prompts.prompt_id)"
                              " WHERE run_key = 'c000000000000002'",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    char *out;
    cJSON *j = cost_report_json(st, &out);
    cr_assert_eq(cJSON_GetArraySize(j), 2, "T16 has no other run of its setup to fit on: %s", out);
    for (int k = 0; k < 2; k++) {
        const char *meth = k ? "T32" : "T8";
        const double meas = json_cell(j, meth, "this machine speedup"), pred = json_cell(j, meth, "this machine predicted");
        cr_assert(meas > 0.5, "%s", out);
        cr_assert_float_eq(pred, meas, 2e-3 * meas, "%s: %s", meth, out);
    }
    cJSON_Delete(j);
    free(out);
    close_cost_db(st, dir, path);
}

/* `report --table cost --profile FILE`: the bench profile's prediction is the measured
   speedup when the profile holds the surface the runs were timed on, moves when it does not,
   is the only prediction a database with one method and its AR gets, and a bad file is an
   error naming it. */
Test(costmodel, report_table_predicts_from_a_bench_profile)
{
    char dir[] = "/tmp/arb_costpXXXXXX", db[64], prof[64], prof2[64];
    cr_assert(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/c.db", dir);
    snprintf(prof, sizeof prof, "%s/p.json", dir);
    snprintf(prof2, sizeof prof2, "%s/p2.json", dir);
    write_profile(prof, lin_cost);
    write_profile(prof2, twice_the_tree_cost);
    for (int n_methods = 4; n_methods >= 2; n_methods -= 2) {
        unlink(db);
        arb_store *st = NULL;
        arb_err err = {0};
        cr_assert_eq(arb_store_open(db, &st, &err), ARB_OK, "%s", err.msg);
        build_cost_db(st, 0, n_methods, 0);
        arb_report_opts o = arb_report_default_opts();
        o.table = "cost", o.fmt = ARB_FMT_JSON, o.n_boot = 0, o.profile = prof;
        int rc;
        char *out = report_capture(st, &o, &rc);
        cr_assert_eq(rc, ARB_OK, "%s", out);
        cJSON *j = cJSON_Parse(out);
        cr_assert(cJSON_IsArray(j), "%s", out);
        cr_assert_eq(cJSON_GetArraySize(j), n_methods - 1, "%s", out);
        const double meas = json_cell(j, "T8", "this machine speedup"),
                     loo = json_cell(j, "T8", "this machine predicted"),
                     fromp = json_cell(j, "T8", "this machine from profile");
        cr_assert(meas > 1.0, "%s", out);
        cr_assert_float_eq(fromp, meas, 2e-3 * meas, "%s", out);
        if (n_methods == 4)
            cr_assert_float_eq(loo, meas, 2e-3 * meas, "%s", out);
        else /* AR and T8 alone: no other tree run to fit on, the profile still predicts */
            cr_assert(isnan(loo), "%s", out);
        cJSON_Delete(j);
        free(out);
        /* a profile whose trees cost twice as much per node predicts less */
        o.profile = prof2;
        out = report_capture(st, &o, &rc);
        cr_assert_eq(rc, ARB_OK, "%s", out);
        j = cJSON_Parse(out);
        const double slow = json_cell(j, "T8", "this machine from profile");
        cr_assert(slow < 0.9 * meas, "%g vs %g: %s", slow, meas, out);
        cJSON_Delete(j);
        free(out);
        /* the Markdown caption warns when the profile misses the runs' costs by more than 10 %
           (and names the fit's error when there is a fit), and only then */
        o.fmt = ARB_FMT_MD;
        out = report_capture(st, &o, &rc);
        cr_assert_eq(rc, ARB_OK, "%s", out);
        cr_assert(strstr(out, "Warning: the profile misses these runs' eval costs"), "%s", out);
        cr_assert(!strstr(out, "own steps stays within") == (n_methods != 4), "%s", out);
        free(out);
        o.profile = prof;
        out = report_capture(st, &o, &rc);
        cr_assert_eq(rc, ARB_OK, "%s", out);
        cr_assert(!strstr(out, "Warning:"), "an exact profile: no warning: %s", out);
        free(out);
        o.fmt = ARB_FMT_JSON;
        /* a missing profile: an error naming the file */
        char missing[80];
        snprintf(missing, sizeof missing, "%s/none.json", dir);
        o.profile = missing;
        out = report_capture(st, &o, &rc);
        cr_assert_neq(rc, ARB_OK);
        cr_assert(strstr(out, missing), "%s", out);
        free(out);
        arb_store_close(st);
    }
    unlink(db), unlink(prof), unlink(prof2);
    cr_assert_eq(rmdir(dir), 0);
}

/* The committed H100 profile the cost table projects with parses and says what docs/gpu.md
   measured (64-node wide tree = 1.49x one node, 128 = 1.79x). */
Test(costmodel, committed_h100_profile_matches_docs)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    cr_assert(root, "ARBOR_SOURCE_ROOT not set (run through meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/results/cost/h100-llama8b-q4_0.json", root);
    arb_cost_model cm;
    arb_err err = {0};
    cr_assert_eq(arb_cost_load(path, &cm, &err), ARB_OK, "%s", err.msg);
    cr_assert_float_eq(arb_cost_us(&cm, 64, 0) / arb_cost_us(&cm, 1, 0), 1.49, 0.005);
    cr_assert_float_eq(arb_cost_us(&cm, 128, 0) / arb_cost_us(&cm, 1, 0), 1.79, 0.005);
}

/* The per-eval context term b (one node at a long context costs more than a L alone says):
   recovered beside a from trees at two context lengths, and 0 on a surface without it. */
Test(costmodel, fit_recovers_the_per_eval_context_term)
{
    int n[40], L[40];
    double t[40];
    int m = 0;
    const int sizes[] = {1, 2, 4, 8, 16, 64};
    for (int s = 0; s < 6; s++)
        for (int l = 0; l < 2; l++, m++) {
            n[m] = sizes[s], L[m] = l ? 702 : 64;
            t[m] = truth(n[m], L[m]) + 3.6 * L[m];
        }
    arb_cost_model cm;
    arb_err err = {0};
    cr_assert_eq(arb_cost_fit(n, L, t, m, &cm, &err), ARB_OK, "%s", err.msg);
    cr_assert_float_eq(cm.ctx_us, 0.5, 1e-6);
    cr_assert_float_eq(cm.ctx0_us, 3.6, 1e-6);
    cr_assert_float_eq(arb_cost_us(&cm, 1, 700), truth(1, 700) + 3.6 * 700, 1e-3);
    for (int i = 0; i < m; i++)
        t[i] = truth(n[i], L[i]);
    cr_assert_eq(arb_cost_fit(n, L, t, m, &cm, &err), ARB_OK, "%s", err.msg);
    cr_assert_float_eq(cm.ctx0_us, 0.0, 1e-6);
    /* the file keeps it; a profile written before it existed loads with b = 0 */
    char path[] = "/tmp/arb_cost_bXXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cm.ctx0_us = 2.5;
    cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
    arb_cost_model back;
    cr_assert_eq(arb_cost_load(path, &back, &err), ARB_OK, "%s", err.msg);
    cr_assert_float_eq(back.ctx0_us, 2.5, 1e-12);
    FILE *f = fopen(path, "w");
    fputs("{\"knots\": [1, 8], \"w_us\": [1000, 2000], \"ctx_us\": 0.5}\n", f);
    fclose(f);
    cr_assert_eq(arb_cost_load(path, &back, &err), ARB_OK, "%s", err.msg);
    cr_assert_float_eq(back.ctx0_us, 0.0, 0);
    f = fopen(path, "w");
    fputs("{\"knots\": [1, 8], \"w_us\": [1000, 2000], \"ctx_us\": 0.5, \"ctx0_us\": -1}\n", f);
    fclose(f);
    cr_assert_eq(arb_cost_load(path, &back, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "ctx0_us"), "%s", err.msg);
    unlink(path);
}

/* A cost profile is keyed by the kernels that produced it: the GGUF-layout AVX2 kernels
   (ARBOR_NO_PACK) run at other speeds than the packed ones, so their label differs. */
#include "genutil.h"
Test(costmodel, fingerprint_names_the_weight_layout)
{
    if (!arb_cpu_kernels("avx2") || strcmp(arb_cpu_kernels("avx2"), "avx2"))
        cr_skip_test("no AVX2 on this CPU");
    arb_load_opts lo = arb_load_default_opts();
    lo.isa = "avx2";
    char kl[32], a[200], b[200];
    cr_assert_str_eq(arb_gen_kernels_label(&lo, kl, sizeof kl), "avx2");
    arb_cost_fingerprint(a, sizeof a, "cpu x", kl, 1, "m", 1e6);
    lo.no_pack = true;
    cr_assert_str_eq(arb_gen_kernels_label(&lo, kl, sizeof kl), "avx2-nopack");
    arb_cost_fingerprint(b, sizeof b, "cpu x", kl, 1, "m", 1e6);
    cr_assert_str_neq(a, b);
    lo.isa = "scalar"; /* the scalar kernels never read a packed copy */
    cr_assert_str_eq(arb_gen_kernels_label(&lo, kl, sizeof kl), "scalar");
}
