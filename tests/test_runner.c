/* test_runner.c — `arbor run` on the default model (model suite; skips without the model or
 * $ARBOR_DATA): a run killed with SIGKILL at several points and resumed stores exactly what an
 * uninterrupted run stores (same prompts, tokens and step rows, nothing lost or duplicated);
 * Ctrl-C (SIGINT) stops cleanly with status 130; shards merged equal the unsharded run;
 * every speculative method is lossless against AR; run metadata is recorded; an EntMTP bank path
 * with {dataset} gives each dataset its own bank, and a missing one is an error naming it; the AR
 * guard's steps are marked in steps.extra. */
#include <criterion/criterion.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "default_model.h"

static char dir[256], bin[1024], cfg[512];

static void need_model_and_data(void)
{
    ARB_TEST_NEED_MODEL_AND_DATA();
    const char *b = getenv("ARBOR_BUILD_ROOT");
    cr_assert(b, "ARBOR_BUILD_ROOT not set (run through meson test)");
    snprintf(bin, sizeof bin, "%s/harness/arbor", b);
}

/* Three short GSM8K prompts, 8 new tokens: AR, PLD, TR (hot start: tables kept across
   prompts, so resuming must replay), GOOSE. */
static const char config_text[] =
    "{\"name\": \"resume-test\",\n"
    " \"models\": [{\"id\": \"smollm2\", \"path\": \"default\"}],\n"
    " \"datasets\": [{\"name\": \"gsm8k\", \"limit\": 3, \"max_new_tokens\": 8}],\n"
    " \"methods\": [{\"id\": \"AR\", \"preset\": \"ar\"}, {\"id\": \"PLD\", \"preset\": \"pld\"},\n"
    "             {\"id\": \"TR\", \"preset\": \"tr\"}, {\"id\": \"GOOSE\", \"preset\": \"goose\"}],\n"
    " \"seed\": 0, \"warmup\": 0}\n";

static void setup(void)
{
    need_model_and_data();
    snprintf(dir, sizeof dir, "/tmp/arb_test_runner_XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(cfg, sizeof cfg, "%s/cfg.json", dir);
    FILE *f = fopen(cfg, "w");
    cr_assert(f);
    fputs(config_text, f);
    fclose(f);
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Start `arbor run cfg --db db [extra]`; if sig, send it after `after` seconds. Returns the
   exit status (128 + signal for a killed child) and the wall time in *secs. */
static int run_arbor(const char *db, const char *extra, int sig, double after, double *secs)
{
    double t0 = now_s();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char out[600];
        snprintf(out, sizeof out, "%s.log", db);
        if (!freopen(out, "a", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        char *argv[12] = {bin, "run", cfg, "--db", (char *)db, "--progress", "1", NULL};
        int a = 7;
        char shard[32];
        if (extra) {
            snprintf(shard, sizeof shard, "%s", extra);
            argv[a++] = "--shard";
            argv[a++] = shard;
            argv[a] = NULL;
        }
        execv(bin, argv);
        _exit(127);
    }
    int st = 0;
    if (sig) {
        while (now_s() - t0 < after) {
            if (waitpid(pid, &st, WNOHANG) == pid) /* finished before the signal */
                goto done;
            usleep(10000);
        }
        kill(pid, sig);
    }
    waitpid(pid, &st, 0);
done:
    if (secs)
        *secs = now_s() - t0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static sqlite3 *open_pair(const char *a, const char *b)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(a, &db), SQLITE_OK);
    char sql[1024];
    snprintf(sql, sizeof sql, "ATTACH '%s' AS b", b);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    return db;
}

static long long q1(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Everything but timings must be identical between main and b (both directions). */
static void expect_same_results(const char *a, const char *b, const char *what)
{
    sqlite3 *db = open_pair(a, b);
    static const char *const cols[][2] = {
        {"prompts", "run_key, prompt_id, prompt_idx, n_prompt, n_gen, n_calls, stop, lossless, gen_sha256"},
        {"tokens", "run_key, prompt_id, ids"},
        {"steps", "run_key, prompt_id, step, l_cache, n_nodes, tree_depth, accepted, committed, bonus, mode,"
                  " category, n_spine, acc_spine, acc_pld, acc_tr, prop_pld, prop_tr, extra"},
        {"runs", "run_key, method, drafter, params, model_sha256, dataset, seed, cell"},
    };
    for (int i = 0; i < 4; i++) {
        char sql[1024];
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM main.%s", cols[i][0]);
        long long na = q1(db, sql);
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM b.%s", cols[i][0]);
        cr_assert_eq(na, q1(db, sql), "%s: %s row counts differ", what, cols[i][0]);
        for (int dir_ = 0; dir_ < 2; dir_++) {
            snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM (SELECT %s FROM %s.%s EXCEPT SELECT %s FROM %s.%s)",
                     cols[i][1], dir_ ? "b" : "main", cols[i][0], cols[i][1], dir_ ? "main" : "b", cols[i][0]);
            cr_assert_eq(q1(db, sql), 0, "%s: %s rows differ", what, cols[i][0]);
        }
    }
    sqlite3_close(db);
}

Test(runner, resume_after_kill_equals_uninterrupted_and_shards_merge, .init = setup, .fini = teardown,
     .timeout = 1500)
{
    char ref[400], res[400], s0[400], s1[400], all[400];
    snprintf(ref, sizeof ref, "%s/ref.db", dir);
    snprintf(res, sizeof res, "%s/resumed.db", dir);
    double t_ref = 0;
    cr_assert_eq(run_arbor(ref, NULL, 0, 0, &t_ref), 0, "uninterrupted run failed (see %s.log)", ref);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(ref, &db), SQLITE_OK);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM prompts"), 3 * 4);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM prompts WHERE lossless = 1"), 3 * 4, "greedy methods must match AR");
    cr_assert_gt(q1(db, "SELECT COUNT(*) FROM steps"), 0);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM sessions WHERE status = 'done' AND cpu_model <> ''"
                        " AND n_cores > 0 AND mem_bytes > 0 AND git_rev <> '' AND compiler <> ''"), 4);
    /* the kernel family and threads as they ran (schema v4): all cores by default */
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM sessions WHERE kernels <> '' AND n_threads = n_cores"), 4);
    cr_assert_eq(q1(db, "SELECT COUNT(DISTINCT model_sha256) FROM runs WHERE length(model_sha256) = 64"), 1);
    sqlite3_close(db);

    /* Interrupt at pseudo-random points (seeded), SIGKILL three times and SIGINT once, then
       let it finish. The run redoes what a kill cut short and skips what was stored. */
    unsigned seed = 12345;
    const int sigs[4] = {SIGKILL, SIGKILL, SIGINT, SIGKILL};
    int interrupted = 0;
    for (int k = 0; k < 4; k++) {
        seed = seed * 1103515245u + 12345u;
        double frac = 0.1 + 0.5 * ((seed >> 8) % 1000) / 1000.0;
        int st = run_arbor(res, NULL, sigs[k], frac * t_ref, NULL);
        if (sigs[k] == SIGINT)
            cr_assert(st == 130 || st == 0, "Ctrl-C: status %d (see %s.log)", st, res);
        else
            cr_assert(st == 128 + SIGKILL || st == 0, "status %d", st);
        interrupted += st != 0;
    }
    cr_assert_gt(interrupted, 0, "no interruption landed (runs too fast?)");
    cr_assert_eq(run_arbor(res, NULL, 0, 0, NULL), 0, "resume failed (see %s.log)", res);
    expect_same_results(ref, res, "resumed vs uninterrupted");
    cr_assert_eq(run_arbor(res, NULL, 0, 0, NULL), 0);
    expect_same_results(ref, res, "a finished run re-run changes nothing");

    /* Shards: TR keeps its table across prompts, so a shard sees other prompts before a given
       one than the unsharded run does; compare the cold-start methods' step rows, and the
       tokens of all (greedy: identical regardless). */
    snprintf(s0, sizeof s0, "%s/s0.db", dir);
    snprintf(s1, sizeof s1, "%s/s1.db", dir);
    snprintf(all, sizeof all, "%s/all.db", dir);
    cr_assert_eq(run_arbor(s0, "0/2", 0, 0, NULL), 0);
    cr_assert_eq(run_arbor(s1, "1/2", 0, 0, NULL), 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s merge %s %s -o %s >/dev/null 2>&1", bin, s0, s1, all);
    cr_assert_eq(system(cmd), 0);
    db = open_pair(ref, all);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM b.prompts"), 3 * 4);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM (SELECT run_key, prompt_id, ids FROM main.tokens EXCEPT"
                        " SELECT run_key, prompt_id, ids FROM b.tokens)"), 0);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM (SELECT s.run_key, prompt_id, step, accepted, n_nodes FROM"
                        " main.steps s JOIN main.runs r USING(run_key) WHERE r.method <> 'TR' EXCEPT"
                        " SELECT run_key, prompt_id, step, accepted, n_nodes FROM b.steps)"), 0);
    cr_assert_eq(q1(db, "SELECT COUNT(*) FROM b.sessions WHERE shard IN ('0/2', '1/2')"), 8);
    sqlite3_close(db);
}

Test(runner, bad_invocations_fail_cleanly, .init = setup, .fini = teardown)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s run %s --shard 2/2 >/dev/null 2>&1", bin, cfg);
    int st = system(cmd);
    cr_assert_eq(WEXITSTATUS(st), 2);
    snprintf(cmd, sizeof cmd, "%s run %s/missing.json >/dev/null 2>&1", bin, dir);
    st = system(cmd);
    cr_assert_eq(WEXITSTATUS(st), 2);
    snprintf(cmd, sizeof cmd, "%s run %s --check | grep -q '4 methods'", bin, cfg);
    cr_assert_eq(system(cmd), 0);
}

/* Resuming into the same database with another thread count: the session that adds a run's
   first new prompt says that the run now mixes setups (once per run), and one that adds nothing
   says nothing. */
Test(runner, resume_on_another_setup_is_noted, .init = setup, .fini = teardown, .timeout = 600)
{
    char db[400], cmd[4096], log[440];
    snprintf(db, sizeof db, "%s/setup.db", dir);
    snprintf(log, sizeof log, "%s.log", db);
    static const char *const steps[] = {"--threads 1 --limit 1", "--threads 2 --limit 2", "--threads 2 --limit 2"};
    static char out[1 << 16];
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s run %s --db %s %s >/dev/null 2>%s", bin, cfg, db, steps[i], log);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        FILE *f = fopen(log, "r");
        cr_assert(f);
        const size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = 0;
        fclose(f);
        int notes = 0;
        for (const char *p = out; (p = strstr(p, "run: NOTE ")); p++)
            notes++;
        cr_assert_eq(notes, i == 1 ? 4 : 0, "run %d (%s): %s", i, steps[i], out);
        if (i == 1)
            cr_assert(strstr(out, "run: NOTE AR on gsm8k: earlier prompts of this run were measured with ") &&
                          strstr(out, ", 1 thread on "),
                      "%s", out);
    }
}

#include "runner.h"

Test(runner, shard_syntax)
{
    int i = -1, n = -1;
    arb_err err = {0};
    cr_assert_eq(arb_runner_parse_shard("0/4", &i, &n, &err), ARB_OK);
    cr_assert(i == 0 && n == 4);
    cr_assert_eq(arb_runner_parse_shard("3/4", &i, &n, &err), ARB_OK);
    cr_assert(i == 3 && n == 4);
    const char *bad[] = {"4/4", "-1/4", "1/0", "1", "a/b", "1/4x", "/4", "1/"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(arb_runner_parse_shard(bad[k], &i, &n, &err), ARB_E_INVAL, "%s accepted", bad[k]);
        cr_assert(strstr(err.msg, bad[k]) != NULL, "%s", err.msg);
    }
}

/* EntMTP per-dataset banks (runner.c entmtp_bank_for_dataset): "bank": "D/{dataset}.json" is
   filled per dataset, so each dataset's runs record their own bank and draft with it (two one-tree
   banks of different sizes: every step of a run has at most its own bank's node count, and reaches
   it), and a dataset without a bank file stops the run with an error naming the filled-in path.
   Random Hydra heads for the model (acceptance is not the point). Paths stay short: method
   parameters hold < 32 characters. */
#include "heads.h"
#include "heads_file.h"
#include "sha256.h"

static long long runs_q1(const char *db_path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    long long v = q1(db, sql);
    sqlite3_close(db);
    return v;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

Test(runner, entmtp_bank_path_filled_per_dataset, .timeout = 900)
{
    need_model_and_data();
    char mpath[2048], d[] = "/tmp/abXXXXXX";
    arb_test_default_model(mpath, sizeof mpath);
    cr_assert(mkdtemp(d));
    /* random 4-head Hydra heads for this model */
    arb_err err = {0};
    arb_load_opts lo = arb_load_default_opts();
    arb_model *m;
    cr_assert_eq(arb_model_load(mpath, &lo, &m, &err), ARB_OK, "%s", err.msg);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    arb_model_free(m);
    arb_heads *h;
    cr_assert_eq(arb_heads_new(ARB_HEADS_HYDRA, 4, mi.n_embd, mi.n_vocab, &h, &err), ARB_OK);
    arb_heads_init(h, 5);
    arb_heads_meta meta = {.seed = 5};
    cr_assert_eq(arb_sha256_file(mpath, meta.base_sha256, &err), ARB_OK, "%s", err.msg);
    char heads[64], text[2048], db[128], db2[128];
    snprintf(heads, sizeof heads, "%s/h.gguf", d);
    cr_assert_eq(arb_heads_save(heads, h, &meta, &err), ARB_OK, "%s", err.msg);
    arb_heads_free(h);
    /* gsm8k: a 3-node chain; humaneval: a 6-node tree */
    char bank_g[64], bank_h[64];
    snprintf(bank_g, sizeof bank_g, "%s/gsm8k.json", d);
    snprintf(bank_h, sizeof bank_h, "%s/humaneval.json", d);
    write_file(bank_g, "{\"trees\": [{\"choices\": [[0], [0, 0]]}], \"static\": 0, \"t_plus\": 0, \"t_minus\": 0}");
    write_file(bank_h, "{\"trees\": [{\"choices\": [[0], [1], [2], [0, 0], [1, 0]]}], \"static\": 0, \"t_plus\": 0, "
                       "\"t_minus\": 0}");
    static const char fmt[] =
        "{\"name\": \"bank-per-dataset\", \"models\": [{\"id\": \"smollm2\", \"path\": \"default\"}],\n"
        " \"datasets\": [{\"name\": \"gsm8k\", \"limit\": 1, \"max_new_tokens\": 16},\n"
        "              {\"name\": \"%s\", \"limit\": 1, \"max_new_tokens\": 16}],\n"
        " \"methods\": [{\"id\": \"E\", \"preset\": \"hydra\", \"heads\": \"%s\", \"bank\": \"%s/{dataset}.json\",\n"
        "               \"tree_sched\": \"static\"}], \"seed\": 0, \"warmup\": 0}\n";
    snprintf(cfg, sizeof cfg, "%s/c.json", d);
    snprintf(text, sizeof text, fmt, "humaneval", heads, d);
    write_file(cfg, text);
    snprintf(db, sizeof db, "%s/r.db", d);
    cr_assert_eq(run_arbor(db, NULL, 0, 0, NULL), 0, "arbor run failed: see %s.log", db);
    char sql[512];
    static const struct { const char *ds; int nodes; } want[] = {{"gsm8k", 3}, {"humaneval", 6}};
    for (int i = 0; i < 2; i++) {
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*) FROM runs WHERE dataset = '%s' AND json_extract(params, '$.bank') = '%s/%s.json'",
                 want[i].ds, d, want[i].ds);
        cr_assert_eq(runs_q1(db, sql), 1, "the %s run records its own bank", want[i].ds);
        snprintf(sql, sizeof sql, "SELECT MAX(s.n_nodes) FROM steps s JOIN runs r USING (run_key) WHERE r.dataset = '%s'",
                 want[i].ds);
        cr_assert_eq(runs_q1(db, sql), want[i].nodes, "the %s run drafts with its own bank's tree", want[i].ds);
    }
    /* a dataset without a bank file: an error naming the filled-in path, non-zero exit */
    snprintf(text, sizeof text, fmt, "mt-bench", heads, d);
    write_file(cfg, text);
    snprintf(db2, sizeof db2, "%s/r2.db", d);
    cr_assert_neq(run_arbor(db2, NULL, 0, 0, NULL), 0, "a missing bank must fail the run");
    char log[160], line[4096], missing[64];
    snprintf(log, sizeof log, "%s.log", db2);
    snprintf(missing, sizeof missing, "%s/mt-bench.json", d);
    FILE *f = fopen(log, "r");
    cr_assert(f);
    bool named = false;
    while (fgets(line, sizeof line, f))
        named = named || strstr(line, missing);
    fclose(f);
    cr_assert(named, "the error names %s (see %s)", missing, log);
    snprintf(line, sizeof line, "rm -rf '%s'", d);
    cr_expect_eq(system(line), 0);
}

/* The AR guard's steps are marked in steps.extra beside the drafter's own members (GOOSE's
   match fields; TR's ranks, or nothing), always as valid JSON, and the guarded runs stay
   lossless. GOOSE's paper budget (B = 60) and TR's 81-node template lose to AR on a CPU, and
   every prompt's first comparison re-measures AR with AR_PROBE guard steps in any case. */
Test(runner, ar_guard_steps_marked_in_extra, .timeout = 900)
{
    need_model_and_data();
    char d[] = "/tmp/agXXXXXX", db[128];
    cr_assert(mkdtemp(d));
    snprintf(cfg, sizeof cfg, "%s/c.json", d);
    write_file(cfg, "{\"name\": \"guard-extra\", \"models\": [{\"id\": \"smollm2\", \"path\": \"default\"}],\n"
                    " \"datasets\": [{\"name\": \"gsm8k\", \"limit\": 2, \"max_new_tokens\": 48}],\n"
                    " \"methods\": [{\"id\": \"AR\", \"preset\": \"ar\"},\n"
                    "             {\"id\": \"GOOSE-g\", \"preset\": \"goose\", \"ar_guard\": true},\n"
                    "             {\"id\": \"TR-g\", \"preset\": \"tr\", \"ar_guard\": true}],\n"
                    " \"seed\": 0, \"warmup\": 0}\n");
    snprintf(db, sizeof db, "%s/r.db", d);
    cr_assert_eq(run_arbor(db, NULL, 0, 0, NULL), 0, "arbor run failed: see %s.log", db);
    cr_assert_eq(runs_q1(db, "SELECT COUNT(*) FROM prompts"), 6);
    cr_assert_eq(runs_q1(db, "SELECT COUNT(*) FROM prompts WHERE lossless = 1"), 6, "guarded runs emit AR's tokens");
    cr_assert_eq(runs_q1(db, "SELECT COUNT(*) FROM steps WHERE extra IS NOT NULL AND NOT json_valid(extra)"), 0,
                 "every steps.extra is valid JSON");
    static const char *const methods[] = {"GOOSE-g", "TR-g"};
    char sql[512];
    for (int i = 0; i < 2; i++) {
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*) FROM steps s JOIN runs r USING (run_key) WHERE r.method = '%s' AND "
                 "json_extract(s.extra, '$.ar_guard') = 1",
                 methods[i]);
        cr_assert_geq(runs_q1(db, sql), 4, "%s: the guard's AR steps are marked", methods[i]);
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*) FROM steps s JOIN runs r USING (run_key) WHERE r.method = '%s' AND "
                 "json_extract(s.extra, '$.ar_guard') = 1 AND (s.n_nodes != 1 OR s.mode != 'ar')",
                 methods[i]);
        cr_assert_eq(runs_q1(db, sql), 0, "%s: a marked step is a one-node AR step", methods[i]);
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*) FROM steps s JOIN runs r USING (run_key) WHERE r.method = '%s' AND "
                 "json_extract(s.extra, '$.ar_guard') IS NULL AND s.n_nodes > 1",
                 methods[i]);
        cr_assert_gt(runs_q1(db, sql), 0, "%s: speculative steps carry no mark", methods[i]);
    }
    cr_assert_gt(runs_q1(db, "SELECT COUNT(*) FROM steps s JOIN runs r USING (run_key) WHERE r.method = 'GOOSE-g' AND "
                             "json_extract(s.extra, '$.ar_guard') = 1 AND json_extract(s.extra, '$.match_n') IS NOT NULL"),
                 0, "GOOSE's members stay beside the mark");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    cr_expect_eq(system(cmd), 0);
}
