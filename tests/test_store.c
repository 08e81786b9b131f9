/* test_store.c — the results database: round trip, one transaction per prompt (a failure in
 * the middle leaves nothing), duplicate refusal, schema version, merge, the sha256 cache. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sha256.h"
#include "store.h"

static char dir[256];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "/tmp/arb_test_store_XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
}

static void rm_tmp(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static arb_store *open_db(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK, "%s", err.msg);
    return s;
}

static int64_t count(arb_store *s, const char *sql)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(arb_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void put_run(arb_store *s, const char *key)
{
    arb_store_run r = {.run_key = key, .method = "GOOSE", .drafter = "goose", .model_id = "m",
                       .dataset = "humaneval", .max_new_tokens = 64, .top_p = 1};
    arb_err err = {0};
    cr_assert_eq(arb_store_run_put(s, &r, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_store_run_put(s, &r, &err), ARB_OK, "run_put must be idempotent");
}

/* n steps whose accepted lengths and sources depend on seed, tokens = seed*1000 + i. */
static int put_prompt(arb_store *s, const char *key, const char *pid, int seed, int n, arb_err *err)
{
    arb_store_step st[16];
    int32_t ids[64];
    int gen = 1;
    memset(st, 0, sizeof st);
    for (int i = 0; i < n; i++) {
        st[i].step = i;
        st[i].n_nodes = 10 + i;
        st[i].tree_depth = 4;
        st[i].stop_fanout = i == 0 ? -1 : i % 3; /* -1: unknown, stored as NULL */
        st[i].accepted = (seed + i) % 4;
        st[i].committed = st[i].accepted + 1;
        st[i].mode = "tree";
        st[i].category = 1;
        st[i].acc_src[1] = st[i].accepted;
        st[i].prop_src[1] = 4;
        st[i].prop_src[2] = 6;
        st[i].eval_us = 1000 + i;
        gen += st[i].committed;
    }
    for (int i = 0; i < gen && i < 64; i++)
        ids[i] = seed * 1000 + i;
    arb_store_prompt p = {.prompt_id = pid, .prompt_idx = seed, .n_prompt = 20, .n_gen = gen,
                          .n_calls = n + 1, .wall_us = 5000, .cpu_us = 4000 + seed, .n_repeats = 1,
                          .stop = "eos", .lossless = -1, .ids = ids};
    return arb_store_prompt_put(s, key, &p, st, n, err);
}

Test(store, round_trip_and_reopen, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *s = open_db("a.db");
    put_run(s, "k1");
    arb_err err = {0};
    bool done = true;
    cr_assert_eq(arb_store_prompt_done(s, "k1", "p0", &done, &err), ARB_OK);
    cr_assert(!done);
    cr_assert_eq(put_prompt(s, "k1", "p0", 3, 5, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_store_prompt_done(s, "k1", "p0", &done, &err), ARB_OK);
    cr_assert(done);
    arb_store_close(s);

    s = open_db("a.db");
    cr_assert_eq(count(s, "PRAGMA user_version"), ARB_STORE_SCHEMA_VERSION);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps WHERE run_key='k1'"), 5);
    cr_assert_eq(count(s, "SELECT SUM(accepted) FROM steps"), 3 + 0 + 1 + 2 + 3);
    cr_assert_eq(count(s, "SELECT SUM(acc_pld) FROM steps"), 9);
    int32_t *ids = NULL;
    int n = 0;
    cr_assert_eq(arb_store_tokens_get(s, "k1", "p0", &ids, &n, &err), ARB_OK);
    cr_assert_eq(n, 1 + 4 + 1 + 2 + 3 + 4);
    for (int i = 0; i < n; i++)
        cr_assert_eq(ids[i], 3000 + i);
    /* the stored hash is sha256 of the ids as little-endian int32 */
    char hex[65];
    arb_sha256_hex(ids, (size_t)n * 4, hex);
    char q[256];
    snprintf(q, sizeof q, "SELECT COUNT(*) FROM prompts WHERE gen_sha256='%s'", hex);
    cr_assert_eq(count(s, q), 1);
    free(ids);
    cr_assert_eq(arb_store_tokens_get(s, "k1", "nope", &ids, &n, &err), ARB_OK);
    cr_assert_null(ids);
    arb_store_close(s);
}

Test(store, duplicate_prompt_is_refused_and_changes_nothing, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *s = open_db("a.db");
    put_run(s, "k1");
    arb_err err = {0};
    cr_assert_eq(put_prompt(s, "k1", "p0", 1, 3, &err), ARB_OK);
    cr_assert_eq(put_prompt(s, "k1", "p0", 2, 6, &err), ARB_E_DB);
    cr_assert(strstr(err.msg, "p0") != NULL, "%s", err.msg);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps"), 3);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM prompts"), 1);
    arb_store_close(s);
}

static void expect_no_partial_rows(arb_store *s, const char *pid, int at)
{
    char q[256];
    static const char *const tabs[] = {"steps", "tokens", "prompts"};
    for (int t = 0; t < 3; t++) {
        snprintf(q, sizeof q, "SELECT COUNT(*) FROM %s WHERE run_key='k1' AND prompt_id='%s'",
                 tabs[t], pid);
        cr_assert_eq(count(s, q), 0, "fault at write %d left rows in %s", at, tabs[t]);
    }
}

static void expect_integrity_ok(arb_store *s)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(arb_store_db(s), "PRAGMA integrity_check", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
}

/* The fault at every write point of a put: 6 step rows, tokens, prompt row, COMMIT. The
   sweep runs until a put succeeds, so a write added later is covered without editing this. */
Test(store, failure_mid_prompt_rolls_back_everything, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *s = open_db("a.db");
    put_run(s, "k1");
    arb_err err = {0};
    cr_assert_eq(put_prompt(s, "k1", "p0", 2, 3, &err), ARB_OK, "%s", err.msg); /* a neighbour */
    int fail = 1;
    for (;; fail++) {
        arb_store_fail_after(s, fail);
        memset(&err, 0, sizeof err);
        int rc = put_prompt(s, "k1", "p1", 1, 6, &err);
        if (rc == ARB_OK)
            break;
        cr_assert_eq(rc, ARB_E_DB, "write %d: %s", fail, err.msg);
        cr_assert(strstr(err.msg, "prompt p1") && strstr(err.msg, "injected fault") &&
                      strstr(err.msg, "a.db"), "write %d: %s", fail, err.msg);
        expect_no_partial_rows(s, "p1", fail);
        cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps WHERE prompt_id='p0'"), 3);
        expect_integrity_ok(s);
        cr_assert_lt(fail, 100, "the fault never stops firing");
    }
    cr_assert_eq(fail - 1, 6 + 3, "write points of a 6-step put: steps, tokens, prompt, commit");
    arb_store_fail_after(s, 0);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps WHERE prompt_id='p1'"), 6);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM prompts"), 2);
    expect_integrity_ok(s);
    arb_store_close(s);
    s = open_db("a.db"); /* and what a fresh connection sees */
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM tokens"), 2);
    expect_integrity_ok(s);
    arb_store_close(s);
}

Test(store, newer_schema_is_refused, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *s = open_db("a.db");
    cr_assert_eq(sqlite3_exec(arb_store_db(s), "PRAGMA user_version=99", NULL, NULL, NULL),
                 SQLITE_OK);
    arb_store_close(s);
    char path[512];
    snprintf(path, sizeof path, "%s/a.db", dir);
    arb_err err = {0};
    s = (arb_store *)1;
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_E_UNSUPPORTED);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "99") != NULL, "%s", err.msg);
}

Test(store, merge_unions_and_detects_conflicts, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *a = open_db("a.db"), *b = open_db("b.db"), *c = open_db("c.db");
    arb_err err = {0};
    put_run(a, "k1");
    put_run(b, "k1");
    put_run(c, "k1");
    cr_assert_eq(put_prompt(a, "k1", "p0", 0, 3, &err), ARB_OK);
    cr_assert_eq(put_prompt(a, "k1", "p2", 2, 4, &err), ARB_OK);
    cr_assert_eq(put_prompt(b, "k1", "p1", 1, 5, &err), ARB_OK);
    cr_assert_eq(put_prompt(b, "k1", "p2", 2, 4, &err), ARB_OK); /* overlap, same tokens */
    cr_assert_eq(put_prompt(c, "k1", "p1", 9, 5, &err), ARB_OK); /* different tokens */
    char pa[512], pb[512], pc[512];
    snprintf(pa, sizeof pa, "%s/a.db", dir);
    snprintf(pb, sizeof pb, "%s/b.db", dir);
    snprintf(pc, sizeof pc, "%s/c.db", dir);
    arb_store_close(a);
    arb_store_close(b);
    arb_store_close(c);
    arb_store *m = open_db("m.db");
    int n = 0;
    cr_assert_eq(arb_store_merge_from(m, pa, &n, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(arb_store_merge_from(m, pb, &n, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(count(m, "SELECT COUNT(*) FROM prompts"), 3);
    cr_assert_eq(count(m, "SELECT COUNT(*) FROM steps"), 3 + 4 + 5);
    cr_assert_eq(count(m, "SELECT COUNT(*) FROM runs"), 1);
    cr_assert_eq(arb_store_merge_from(m, pc, &n, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "p1") != NULL, "%s", err.msg);
    cr_assert_eq(count(m, "SELECT COUNT(*) FROM steps"), 12, "a refused merge adds nothing");
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none.db", dir);
    cr_assert_eq(arb_store_merge_from(m, missing, &n, &err), ARB_E_NOTFOUND);
    arb_store_close(m);
}

Test(store, model_sha256_is_cached, .init = mkdir_tmp, .fini = rm_tmp)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.bin", dir);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    for (int i = 0; i < 100000; i++)
        fputc(i * 7, f);
    fclose(f);
    char want[65], got[65];
    arb_err err = {0};
    cr_assert_eq(arb_sha256_file(path, want, &err), ARB_OK);
    arb_store *s = open_db("a.db");
    cr_assert_eq(arb_store_model_sha256(s, path, got, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(got, want);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM model_hashes"), 1);
    /* second call is served from the table: poison the row and see it come back */
    sqlite3_exec(arb_store_db(s), "UPDATE model_hashes SET sha256=replace(sha256,substr(sha256,1,1),'z')",
                 NULL, NULL, NULL);
    cr_assert_eq(arb_store_model_sha256(s, path, got, &err), ARB_OK);
    cr_assert_eq(got[0], 'z');
    cr_assert_eq(arb_store_model_sha256(s, "/nonexistent/x.gguf", got, &err), ARB_E_NOTFOUND);
    arb_store_close(s);
}

/* SQL that turns a database into what arbor wrote before schema v2 / v3 / v4. */
#define NO_V4 "ALTER TABLE sessions DROP COLUMN kernels; ALTER TABLE sessions DROP COLUMN n_threads;"
#define BEFORE_V2 NO_V4 "ALTER TABLE steps DROP COLUMN stop_fanout; ALTER TABLE prompts DROP COLUMN cpu_us; PRAGMA user_version=1;"
#define BEFORE_V3 NO_V4 "ALTER TABLE prompts DROP COLUMN cpu_us; PRAGMA user_version=2;"
#define BEFORE_V4 NO_V4 "PRAGMA user_version=3;"

/* Run k1 with prompt p0 (seed, 5 steps) written, `downgrade` applied, then reopened (so migrated). */
static arb_store *migrated_db(const char *name, int seed, const char *downgrade)
{
    arb_store *s = open_db(name);
    put_run(s, "k1");
    arb_err err = {0};
    cr_assert_eq(put_prompt(s, "k1", "p0", seed, 5, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(sqlite3_exec(arb_store_db(s), downgrade, NULL, NULL, NULL), SQLITE_OK);
    arb_store_close(s);
    s = open_db(name);
    cr_assert_eq(count(s, "PRAGMA user_version"), ARB_STORE_SCHEMA_VERSION);
    return s;
}

/* A v1 database gains steps.stop_fanout, prompts.cpu_us and sessions.kernels / n_threads, a v2
   one the last three, a v3 one the sessions' two; the old rows keep NULL there, new rows fill
   them. */
Test(store, older_databases_migrate_and_keep_their_rows, .init = mkdir_tmp, .fini = rm_tmp)
{
    static const char *const name[] = {"", "old1.db", "old2.db", "old3.db"}, *const down[] = {"", BEFORE_V2, BEFORE_V3,
                                                                                             BEFORE_V4};
    for (int v = 1; v <= 3; v++) {
        arb_store *s = open_db(name[v]);
        arb_err err = {0};
        arb_store_session ss = {.session = "s0", .run_key = "k1", .hostname = "h", .cpu_model = "c", .status = "done",
                                .kernels = "avx2", .n_threads = 2};
        cr_assert_eq(arb_store_session_put(s, &ss, &err), ARB_OK, "%s", err.msg);
        arb_store_close(s);
        s = migrated_db(name[v], 3, down[v]);
        cr_assert_eq(count(s, "SELECT COUNT(*) FROM sessions WHERE kernels IS NULL AND n_threads IS NULL"), 1);
        ss.session = "s1";
        cr_assert_eq(arb_store_session_put(s, &ss, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(count(s, "SELECT n_threads FROM sessions WHERE session = 's1' AND kernels = 'avx2'"), 2);
        cr_assert_eq(count(s, "SELECT COUNT(*) FROM prompts WHERE cpu_us IS NULL AND wall_us = 5000"), v < 3);
        cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps WHERE stop_fanout IS NULL"), v == 1 ? 5 : 1);
        cr_assert_eq(put_prompt(s, "k1", "p1", 4, 5, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps"), 10);
        cr_assert_eq(count(s, "SELECT SUM(stop_fanout) FROM steps WHERE prompt_id = 'p1'"), 1 + 2 + 0 + 1);
        cr_assert_eq(count(s, "SELECT cpu_us FROM prompts WHERE prompt_id = 'p1'"), 4004);
        arb_store_close(s);
    }
}

/* A migrated database has its added columns last (ALTER TABLE appends), a new one where the
   schema puts them: merging one into the other matches columns by name. */
Test(store, merge_matches_columns_by_name, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *a = migrated_db("v1.db", 2, BEFORE_V2); /* steps.stop_fanout is now its last column */
    arb_err err = {0};
    cr_assert_eq(put_prompt(a, "k1", "p1", 3, 4, &err), ARB_OK, "%s", err.msg);
    char pa[512];
    snprintf(pa, sizeof pa, "%s/v1.db", dir);
    const int64_t acc = count(a, "SELECT SUM(accepted) FROM steps"), fan = count(a, "SELECT SUM(stop_fanout) FROM steps"),
                  nodes = count(a, "SELECT SUM(n_nodes) FROM steps");
    arb_store_close(a);
    arb_store *m = open_db("new.db");
    int n = 0;
    cr_assert_eq(arb_store_merge_from(m, pa, &n, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(count(m, "SELECT SUM(accepted) FROM steps"), acc);
    cr_assert_eq(count(m, "SELECT SUM(stop_fanout) FROM steps"), fan);
    cr_assert_eq(count(m, "SELECT SUM(n_nodes) FROM steps"), nodes);
    cr_assert_eq(count(m, "SELECT COUNT(*) FROM prompts WHERE cpu_us IS NULL"), 1); /* p0, before v3 */
    cr_assert_eq(count(m, "SELECT cpu_us FROM prompts WHERE prompt_id = 'p1'"), 4003);
    arb_store_close(m);
}

/* A run resumed on another setup: the store names an earlier session of the run whose CPU,
   kernel family or thread count differs; the same setup, another run's sessions and sessions
   without the v4 columns do not count. */
Test(store, session_other_setup_names_a_differing_earlier_session, .init = mkdir_tmp, .fini = rm_tmp)
{
    arb_store *s = open_db("setup.db");
    arb_err err = {0};
    put_run(s, "k1");
    put_run(s, "k2");
    arb_store_session a = {.session = "a", .run_key = "k1", .cpu_model = "EPYC", .status = "done", .kernels = "avx2",
                           .n_threads = 1};
    arb_store_session old = {.session = "old", .run_key = "k1", .cpu_model = "Xeon", .status = "done"}; /* pre-v4 */
    arb_store_session other = {.session = "o", .run_key = "k2", .cpu_model = "Xeon", .status = "done",
                               .kernels = "scalar", .n_threads = 4};
    cr_assert_eq(arb_store_session_put(s, &a, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_store_session_put(s, &old, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_store_session_put(s, &other, &err), ARB_OK, "%s", err.msg);
    char buf[160];
    arb_store_session b = a;
    b.session = "b";
    cr_assert_eq(arb_store_session_other_setup(s, &b, buf, sizeof buf, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, "", "same setup");
    b.n_threads = 2;
    cr_assert_eq(arb_store_session_other_setup(s, &b, buf, sizeof buf, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, "avx2, 1 thread on EPYC");
    b.n_threads = 1, b.kernels = "avx512vnni";
    cr_assert_eq(arb_store_session_other_setup(s, &b, buf, sizeof buf, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, "avx2, 1 thread on EPYC");
    b.kernels = "avx2", b.cpu_model = "Xeon";
    cr_assert_eq(arb_store_session_other_setup(s, &b, buf, sizeof buf, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, "avx2, 1 thread on EPYC");
    cr_assert_eq(arb_store_session_other_setup(s, &a, buf, sizeof buf, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, "", "a session is not compared with itself");
    arb_store_close(s);
}
