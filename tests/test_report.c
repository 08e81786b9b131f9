/* test_report.c — paper tables from the synthetic fixture database in every format: values
 * recomputed from the fixture formulas, bold = best per column, paper column from the
 * committed results/paper/goose.tsv, errors for unknown tables and keys. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "fixture_db.h"
#include "report.h"
#include "report_capture.h"

static char dir[256];
static arb_store *st;

static void setup(void)
{
    arb_err err = {0};
    cr_assert_eq(fx_tmp_open("report", dir, &st, &err), ARB_OK, "%s", err.msg);
}

static void teardown(void)
{
    cr_expect_eq(fx_tmp_close(dir, st), 0);
}

/* Run a report into a heap string (caller frees); on failure the error message. */
static char *report(const arb_report_opts *o, int *rc) { return report_capture(st, o, rc); }

static double tau_of(int d, int m)
{
    double g = 0, c = 0;
    for (int p = 0; p < FX_N_PROMPTS; p++) {
        c += fx_steps(p) + 1, g += 1;
        for (int s = 0; s < fx_steps(p); s++)
            g += fx_k(m, d, p, s) + 1;
    }
    return g / c;
}

Test(report, table3_markdown_has_every_cell_and_bolds_the_best, .init = setup, .fini = teardown)
{
    arb_report_opts o = arb_report_default_opts();
    o.n_boot = 0;
    int rc;
    char *md = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", md);
    cr_assert(strstr(md, "| Model | Method | HumanEval Spd | HumanEval τ | MT-Bench Spd |") != NULL,
              "%s", md);
    /* 2 models × 7 methods + header + separator */
    int lines = 0;
    for (char *p = md; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 2 + 2 * FX_N_METHODS);
    /* GOOSE τ on HumanEval, and the best τ per model block in bold */
    double best = 0;
    int best_m = 0;
    for (int m = 0; m < FX_N_METHODS; m++)
        if (tau_of(0, m) > best)
            best = tau_of(0, m), best_m = m;
    char want[64];
    snprintf(want, sizeof want, "| tiny-a | %s | ", fx_methods[best_m]);
    char *row = strstr(md, want);
    cr_assert(row, "%s", md);
    snprintf(want, sizeof want, "**%.2f**", best);
    cr_assert(strstr(row, want) && strstr(row, want) < strchr(row, '\n'), "%s\nwant %s", row, want);
    cr_assert(strstr(md, "| tiny-a | AR | 1.00 | 1.00 |") != NULL, "%s", md);
    free(md);
}

Test(report, table1_delta_is_spine_over_iso3, .init = setup, .fini = teardown)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = "table1";
    o.n_boot = 0;
    int rc;
    char *md = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", md);
    char want[160];
    snprintf(want, sizeof want, "| tiny-b | MT-Bench | %.2f | %.2f | %.2f | %+.1f%% |", tau_of(1, 3),
             tau_of(1, 4), tau_of(1, 5), 100 * (tau_of(1, 3) / tau_of(1, 4) - 1));
    cr_assert(strstr(md, want) != NULL, "%s\nwant %s", md, want);
    cr_assert(strstr(md, "| Average |") != NULL);
    free(md);
}

Test(report, table2_macro_delta_vs_reference, .init = setup, .fini = teardown)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = "table2";
    o.model = "tiny-a";
    o.n_boot = 0;
    int rc;
    char *md = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", md);
    double delta = 0.5 * (tau_of(0, 6) / tau_of(0, 3) - 1 + tau_of(1, 6) / tau_of(1, 3) - 1);
    char want[160];
    snprintf(want, sizeof want, "| no-bypass | %.2f | %.2f | %+.1f%% |", tau_of(0, 6), tau_of(1, 6),
             100 * delta);
    cr_assert(strstr(md, want) != NULL, "%s\nwant %s", md, want);
    cr_assert(strstr(md, "| GOOSE |") && strstr(strstr(md, "| GOOSE |"), "| — |"),
              "the reference has no delta: %s", md);
    free(md);
}

/* A pivot has one column per distinct label, however many: 300 methods give 300 + 7 columns
   (it once stopped silently at 256). */
Test(report, pivot_keeps_every_column, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    cr_assert_eq(fx_add_methods(st, 300, &err), ARB_OK, "%s", err.msg);
    arb_report_opts o = arb_report_default_opts();
    o.table = "pivot";
    o.rows = "model";
    o.cols = "method";
    o.metric = ARB_METRIC_TAU;
    o.fmt = ARB_FMT_CSV;
    int rc;
    char *csv = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", csv);
    const char *nl = strchr(csv, '\n');
    cr_assert(nl);
    int commas = 0;
    for (const char *q = csv; q < nl; q++)
        commas += *q == ',';
    cr_assert_eq(commas, 300 + FX_N_METHODS, "header: %.*s", (int)(nl - csv), csv);
    cr_assert(strstr(csv, "extra-299") != NULL);
    free(csv);
}

Test(report, csv_json_and_tex_carry_the_same_numbers, .init = setup, .fini = teardown)
{
    arb_report_opts o = arb_report_default_opts();
    o.table = "pivot";
    o.rows = "model,method";
    o.cols = "dataset";
    o.metric = ARB_METRIC_TAU;
    o.n_boot = 200;
    o.ci = true;
    int rc;
    o.fmt = ARB_FMT_CSV;
    char *csv = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", csv);
    cr_assert(strncmp(csv, "model,method,HumanEval,HumanEval lo,HumanEval hi,MT-Bench", 57) == 0, "%s", csv);
    char want[128];
    snprintf(want, sizeof want, "tiny-a,GOOSE,%.6g,", tau_of(0, 3));
    cr_assert(strstr(csv, want) != NULL, "%s\nwant %s", csv, want);
    free(csv);

    o.fmt = ARB_FMT_JSON;
    char *js = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK);
    cJSON *root = cJSON_Parse(js);
    cr_assert(cJSON_IsArray(root), "%s", js);
    cr_assert_eq(cJSON_GetArraySize(root), 2 * FX_N_METHODS);
    const cJSON *row = NULL;
    cJSON_ArrayForEach(row, root)
    {
        if (strcmp(cJSON_GetObjectItem(row, "model")->valuestring, "tiny-b") ||
            strcmp(cJSON_GetObjectItem(row, "method")->valuestring, "TR"))
            continue;
        const cJSON *c = cJSON_GetObjectItem(row, "MT-Bench");
        cr_assert_float_eq(cJSON_GetObjectItem(c, "value")->valuedouble, tau_of(1, 2), 1e-9);
        double lo = cJSON_GetObjectItem(c, "lo")->valuedouble, hi = cJSON_GetObjectItem(c, "hi")->valuedouble;
        cr_assert(lo <= tau_of(1, 2) && tau_of(1, 2) <= hi);
    }
    cJSON_Delete(root);
    free(js);

    o.fmt = ARB_FMT_TEX;
    o.table = "table3";
    o.ci = false;
    char *tex = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK);
    cr_assert(strstr(tex, "\\begin{tabular}") && strstr(tex, "\\toprule") &&
              strstr(tex, "\\multicolumn{2}{c}{HumanEval}") && strstr(tex, "$\\tau$") &&
              strstr(tex, "\\textbf{") && strstr(tex, "\\bottomrule"), "%s", tex);
    free(tex);
}

Test(report, paper_column_comes_from_the_transcribed_tsv, .init = setup, .fini = teardown)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    if (!root)
        cr_skip("ARBOR_SOURCE_ROOT not set (run through meson test)");
    char tsv[1024];
    snprintf(tsv, sizeof tsv, "%s/results/paper/goose.tsv", root);
    /* the paper value we expect, read from the file itself */
    FILE *f = fopen(tsv, "r");
    cr_assert(f);
    char line[256], want[32] = "";
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "table3\tQwen3-8B\tGOOSE\thumaneval\ttau\t", 35))
            snprintf(want, sizeof want, "%.2f", atof(line + 35));
    fclose(f);
    cr_assert(want[0], "goose.tsv lacks Qwen3-8B GOOSE HumanEval tau");
    arb_report_opts o = arb_report_default_opts();
    o.paper_model = "Qwen3-8B";
    o.paper_path = tsv;
    o.n_boot = 0;
    int rc;
    char *md = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", md);
    char *row = strstr(md, "| tiny-a | GOOSE |");
    cr_assert(row);
    char cell[64];
    snprintf(cell, sizeof cell, "| %s |", want);
    cr_assert(strstr(row, cell) && strstr(row, cell) < strchr(row, '\n'), "%s", row);
    cr_assert(strstr(md, "| HumanEval τ | paper |") != NULL);
    free(md);
    o.paper_path = "/nonexistent/goose.tsv";
    md = report(&o, &rc);
    cr_assert_eq(rc, ARB_E_NOTFOUND);
    free(md);
    /* a malformed row is an error naming the file and line, not a silently missing value */
    char bad[] = "/tmp/arb_paper_XXXXXX";
    int fd = mkstemp(bad);
    cr_assert(fd >= 0);
    FILE *bf = fdopen(fd, "w");
    fputs("# comment\ntable\tmodel\tmethod\tdataset\tmetric\tvalue\n"
          "table3\tQwen3-8B\tGOOSE\thumaneval\ttau\t2.80\ntable3 Qwen3-8B GOOSE mbpp tau 3.1\n", bf);
    fclose(bf);
    o.paper_path = bad;
    md = report(&o, &rc);
    cr_assert_eq(rc, ARB_E_FORMAT);
    cr_assert(strstr(md, ":4: expected 6 tab-separated fields"), "%s", md);
    free(md);
    unlink(bad);
}

Test(report, other_tables_and_errors, .init = setup, .fini = teardown)
{
    arb_report_opts o = arb_report_default_opts();
    o.n_boot = 50;
    const char *ok[] = {"summary", "synergy", "depth"};
    int rc;
    for (int i = 0; i < 3; i++) {
        o.table = ok[i];
        char *s = report(&o, &rc);
        cr_assert_eq(rc, ARB_OK, "%s: %s", ok[i], s);
        cr_assert(strstr(s, "tiny-b") != NULL);
        free(s);
    }
    o.table = "table9";
    char *s = report(&o, &rc);
    cr_assert_eq(rc, ARB_E_INVAL);
    cr_assert(strstr(s, "table9") != NULL);
    free(s);
    o.table = "pivot";
    o.rows = "model,colour";
    s = report(&o, &rc);
    cr_assert_eq(rc, ARB_E_INVAL);
    cr_assert(strstr(s, "colour") != NULL, "%s", s);
    free(s);
    arb_report_fmt fmt;
    arb_err err = {0};
    cr_assert_eq(arb_report_parse_fmt("tex", &fmt, &err), ARB_OK);
    cr_assert_eq(fmt, ARB_FMT_TEX);
    cr_assert_eq(arb_report_parse_fmt("html", &fmt, &err), ARB_E_INVAL);
}

/* ---- arbor compare / arbor merge, through the CLI ---- */

static int sh(const char *cmd)
{
    int st_ = system(cmd);
    return WIFEXITED(st_) ? WEXITSTATUS(st_) : -1;
}

static void build_db(const char *name, int shard_i, int shard_n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(fx_build(s, shard_i, shard_n, &err), ARB_OK, "%s", err.msg);
    arb_store_close(s);
}

static const char *arbor(void)
{
    static char bin[1024];
    const char *b = getenv("ARBOR_BUILD_ROOT");
    if (!b)
        cr_skip("ARBOR_BUILD_ROOT not set (run through meson test)");
    snprintf(bin, sizeof bin, "%s/harness/arbor", b);
    return bin;
}

Test(report, compare_exit_codes, .init = setup, .fini = teardown)
{
    const char *bin = arbor();
    build_db("base.db", 0, 1);
    build_db("new.db", 0, 1);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/new.db >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 0, "identical databases must pass");
    /* GOOSE on tiny-a/HumanEval loses every accepted token on half the prompts: τ drops */
    char path[400];
    snprintf(path, sizeof path, "%s/new.db", dir);
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK);
    char key[17], sql[512];
    fx_key(0, 0, 3, key);
    snprintf(sql, sizeof sql,
             "UPDATE prompts SET n_gen = n_gen - (SELECT SUM(accepted) FROM steps t WHERE"
             " t.run_key=prompts.run_key AND t.prompt_id=prompts.prompt_id) WHERE run_key='%s'"
             " AND prompt_idx %% 2 = 0", key);
    cr_assert_eq(sqlite3_exec(arb_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    arb_store_close(s);
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/new.db --metric tau --max-drop 2%% 2>/dev/null | grep -c REGRESSION", bin, dir, dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    cr_assert_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    cr_assert_eq(n, 1, "exactly the modified run regresses");
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/new.db --max-drop 2%% >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/new.db --max-drop 99%% >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 0, "a generous threshold passes");
    snprintf(cmd, sizeof cmd, "%s compare %s/new.db %s/base.db >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 0, "an improvement is no regression");
    /* a run of BASE missing from NEW fails unless allowed */
    build_db("part.db", 0, 1);
    snprintf(path, sizeof path, "%s/part.db", dir);
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK);
    cr_assert_eq(sqlite3_exec(arb_store_db(s), "DELETE FROM runs WHERE method='TR'", NULL, NULL, NULL), SQLITE_OK);
    arb_store_close(s);
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/part.db >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/part.db --allow-missing >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 0);
    /* usage errors */
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/new.db --max-drop lots >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db >/dev/null 2>&1", bin, dir);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/none.db >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 1);
}

/* The setup of each side (sessions.kernels, n_threads, cpu_model): compare notes it when a
   timing metric compares databases measured on different setups, and only then. */
static void put_setup(const char *name, const char *kernels, int threads)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK, "%s", err.msg);
    char key[17];
    fx_key(0, 0, 0, key);
    arb_store_session ss = {.session = "x", .run_key = key, .cpu_model = "EPYC", .status = "done", .kernels = kernels,
                            .n_threads = threads};
    cr_assert_eq(arb_store_session_put(s, &ss, &err), ARB_OK, "%s", err.msg);
    arb_store_close(s);
}

static int compare_notes(const char *bin, const char *metric)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s compare %s/base.db %s/new.db --metric %s 2>&1 >/dev/null | grep -c 'NOTE: .*base.db was "
             "measured with avx512vnni, 2 threads on EPYC, .*new.db with avx2, 1 thread on EPYC: '", bin, dir, dir, metric);
    FILE *p = popen(cmd, "r");
    int n = -1;
    cr_assert_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

Test(report, compare_notes_timings_across_setups, .init = setup, .fini = teardown)
{
    const char *bin = arbor();
    build_db("base.db", 0, 1);
    build_db("new.db", 0, 1);
    put_setup("base.db", "avx512vnni", 2);
    put_setup("new.db", "avx512vnni", 2);
    cr_assert_eq(compare_notes(bin, "speedup"), 0, "the same setup");
    char path[400]; /* new.db measured on another setup */
    snprintf(path, sizeof path, "%s/new.db", dir);
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK);
    cr_assert_eq(sqlite3_exec(arb_store_db(s), "UPDATE sessions SET kernels = 'avx2', n_threads = 1", NULL, NULL, NULL),
                 SQLITE_OK);
    arb_store_close(s);
    cr_assert_eq(compare_notes(bin, "speedup"), 1);
    cr_assert_eq(compare_notes(bin, "tps_cpu"), 1);
    cr_assert_eq(compare_notes(bin, "tau"), 0, "tau is no timing");
}

Test(report, merged_shards_equal_the_unsharded_database, .init = setup, .fini = teardown)
{
    const char *bin = arbor();
    build_db("s0.db", 0, 3);
    build_db("s1.db", 1, 3);
    build_db("s2.db", 2, 3);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s merge %s/s0.db %s/s1.db %s/s2.db -o %s/all.db >/dev/null 2>&1", bin,
             dir, dir, dir, dir);
    cr_assert_eq(sh(cmd), 0);
    /* every table and format agrees with the unsharded fixture (f.db), byte for byte */
    const char *tables[] = {"table3 --format csv --boot 200 --ci", "summary --format json",
                            "table1", "depth --format csv"};
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "cmp -s <(%s report --db %s/f.db --table %s) <(%s report --db %s/all.db --table %s)",
                 bin, dir, tables[i], bin, dir, tables[i]);
        char full[4200];
        snprintf(full, sizeof full, "bash -c '%s'", cmd);
        cr_assert_eq(sh(full), 0, "%s differs", tables[i]);
    }
    snprintf(cmd, sizeof cmd, "test \"$(sqlite3 %s/all.db 'SELECT COUNT(*) FROM steps')\" = \"$(sqlite3 %s/f.db 'SELECT COUNT(*) FROM steps')\"", dir, dir);
    cr_assert_eq(sh(cmd), 0);
    /* merging again adds nothing */
    snprintf(cmd, sizeof cmd, "%s merge %s/s1.db -o %s/all.db 2>&1 | grep -q '0 prompts added from 1'", bin, dir, dir);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s merge %s/s1.db -o %s/s1.db >/dev/null 2>&1", bin, dir, dir);
    cr_assert_eq(sh(cmd), 2);
}

/* `--table machines`: one row per machine, kernel family + threads and build, from the
   sessions table, with the runs, sessions and prompts of each; a second setup in the same
   database is said in the caption. */
Test(report, machines_groups_sessions_by_setup)
{
    char d[] = "/tmp/arb_machines_XXXXXX", path[64];
    cr_assert(mkdtemp(d));
    snprintf(path, sizeof path, "%s/m.db", d);
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK, "%s", err.msg);
    static const char *const keys[] = {"r0", "r1", "r2"}, *const kern[] = {"avx512vnni", "avx512vnni", "avx2"};
    int32_t ids[4] = {1, 2, 3, 4};
    for (int i = 0; i < 3; i++) {
        arb_store_run r = {.run_key = keys[i], .method = i ? "PLD" : "AR", .drafter = i ? "pld" : "none", .model_id = "m",
                           .dataset = "humaneval", .max_new_tokens = 4, .top_p = 1};
        cr_assert_eq(arb_store_run_put(s, &r, &err), ARB_OK, "%s", err.msg);
        char sess[16];
        snprintf(sess, sizeof sess, "s%d", i);
        arb_store_session ss = {.session = sess, .run_key = keys[i], .hostname = "h", .cpu_model = "EPYC", .n_cores = 2,
                                .git_rev = "abc", .build_type = "release", .compiler = "gcc", .status = "done",
                                .kernels = kern[i], .n_threads = i == 2 ? 1 : 2};
        cr_assert_eq(arb_store_session_put(s, &ss, &err), ARB_OK, "%s", err.msg);
        for (int p = 0; p <= i; p++) {
            char pid[16];
            snprintf(pid, sizeof pid, "P/%d", p);
            arb_store_prompt pr = {.prompt_id = pid, .prompt_idx = p, .session = sess, .n_prompt = 3, .n_gen = 4,
                                   .n_calls = 4, .wall_us = 100, .n_repeats = 1, .stop = "limit", .lossless = -1,
                                   .ids = ids};
            cr_assert_eq(arb_store_prompt_put(s, keys[i], &pr, NULL, 0, &err), ARB_OK, "%s", err.msg);
        }
    }
    arb_report_opts o = arb_report_default_opts();
    o.table = "machines";
    int rc;
    char *out = report_capture(s, &o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", out);
    cr_assert(strstr(out, "| h: EPYC, 2 cores | avx512vnni, 2 threads | abc release gcc | none | 2 | 2 | 3 |"), "%s", out);
    cr_assert(strstr(out, "| h: EPYC, 2 cores | avx2, 1 thread | abc release gcc | none | 1 | 1 | 3 |"), "%s", out);
    cr_assert(strstr(out, "Several setups"), "%s", out);
    free(out);
    arb_store_close(s);
    unlink(path);
    char p2[80];
    snprintf(p2, sizeof p2, "%s-wal", path), unlink(p2);
    snprintf(p2, sizeof p2, "%s-shm", path), unlink(p2);
    cr_assert_eq(rmdir(d), 0);
}

/* loops: six prompts of model "tiny-loop", three whose output loops (a 12-token phrase over and
   over after 20 fresh tokens) and three of distinct ids; the method is 1.25x AR on the loop-free
   ones and 2.5x on the looping ones. The table's split and pooled speedups are recomputed here. */
Test(report, loops_splits_the_speedup_by_the_outputs_repeats, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    const char *meth[2] = {"AR", "PLD"}, *drafter[2] = {"none", "pld"};
    double ar_wall[2] = {0, 0}, m_wall[2] = {0, 0}, rep = 0, ids_n = 0;
    for (int m = 0; m < 2; m++) {
        char key[17];
        snprintf(key, sizeof key, "loop%d00000000000", m);
        arb_store_run r = {.run_key = key, .config_name = "fixture", .method = meth[m], .base_method = meth[m],
                           .drafter = drafter[m], .topology = "", .sweep_json = "{}", .model_id = "tiny-loop",
                           .model_sha256 = "00", .dataset = "humaneval", .max_new_tokens = 200, .top_p = 1};
        cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
        for (int p = 0; p < 6; p++) {
            const bool loops = p >= 3;
            int32_t ids[200];
            const int n = 100 + 20 * p;
            for (int i = 0; i < n; i++)
                ids[i] = loops && i >= 20 ? 1000 + (i - 20) % 12 : 10 * p + i;
            const int64_t wall = 1000 * (p + 1) * (m == 0 ? 10 : loops ? 4 : 8);
            (m ? m_wall : ar_wall)[loops] += (double)wall;
            if (!m)
                rep += loops ? n - 20 - 15 - 12 : 0, ids_n += n; /* from the window ending at 20 + 15 + 12 */
            char pid[8];
            snprintf(pid, sizeof pid, "Q/%d", p);
            arb_store_step step = {.step = 0, .n_nodes = 1, .committed = 1, .mode = "ar", .category = -1};
            arb_store_prompt pr = {.prompt_id = pid, .prompt_idx = p, .n_prompt = 10, .n_gen = n, .n_calls = n,
                                   .wall_us = wall, .n_repeats = 1, .stop = "limit", .lossless = 1, .ids = ids};
            cr_assert_eq(arb_store_prompt_put(st, key, &pr, &step, 1, &err), ARB_OK, "%s", err.msg);
        }
    }
    arb_report_opts o = arb_report_default_opts();
    o.table = "loops";
    o.model = "tiny-loop";
    o.fmt = ARB_FMT_CSV;
    int rc;
    char *csv = report(&o, &rc);
    cr_assert_eq(rc, ARB_OK, "%s", csv);
    const char *row = strstr(csv, "tiny-loop,HumanEval,PLD,");
    cr_assert(row, "%s", csv);
    double r16, sp, nf, spf, nl, spl;
    cr_assert_eq(sscanf(row + strlen("tiny-loop,HumanEval,PLD,"), "%lf,%lf,%lf,%lf,%lf,%lf", &r16, &sp, &nf, &spf,
                        &nl, &spl),
                 6, "%s", row);
    cr_assert_float_eq(r16, rep / ids_n, 1e-5);
    cr_assert_float_eq(sp, (ar_wall[0] + ar_wall[1]) / (m_wall[0] + m_wall[1]), 1e-5);
    cr_assert_eq((int)nf, 3);
    cr_assert_eq((int)nl, 3);
    cr_assert_float_eq(spf, 1.25, 1e-5);
    cr_assert_float_eq(spl, 2.5, 1e-5);
    cr_assert(strstr(csv, "tiny-a") == NULL, "--model keeps the other models out");
    free(csv);
}
