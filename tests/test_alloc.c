/* test_alloc.c — allocation-failure injection (alloc.h): the n-th allocation of an operation
 * fails, for every n, and the operation must return a clean ARB_E_NOMEM / ARB_E_DB with a
 * message, leave nothing behind (the ASan stage of scripts/test.sh checks leaks) and work
 * again once the fault is off. Covered: opening a store and writing a prompt (SQLite's own
 * allocations included, through SQLITE_CONFIG_MALLOC), loading a config (cJSON's included,
 * through cJSON_InitHooks), loading a dataset file.
 *
 * The SQLite and cJSON hooks are process-wide; Criterion runs each test in its own process,
 * and each test installs them in .init and removes them in .fini all the same. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "config.h"
#include "dataset.h"
#include "store.h"

static char dir[256];

/* SQLite's allocator through arb_malloc: an 8-byte size header answers xSize. */
static void *sq_malloc(int n)
{
    int64_t *p = arb_malloc((size_t)n + 8);
    return p ? (*p = n, p + 1) : NULL;
}
static void sq_free(void *p) { free(p ? (int64_t *)p - 1 : NULL); }
static int sq_size(void *p) { return p ? (int)((int64_t *)p)[-1] : 0; }
static void *sq_realloc(void *p, int n)
{
    int64_t *q = arb_realloc(p ? (int64_t *)p - 1 : NULL, (size_t)n + 8);
    return q ? (*q = n, q + 1) : NULL;
}
static int sq_roundup(int n) { return (n + 7) & ~7; }
static int sq_init(void *ud) { (void)ud; return SQLITE_OK; }
static void sq_shutdown(void *ud) { (void)ud; }

static void hooks_on(void)
{
    static const sqlite3_mem_methods mm = {sq_malloc, sq_free, sq_realloc, sq_size, sq_roundup,
                                           sq_init, sq_shutdown, NULL};
    cr_assert_eq(sqlite3_shutdown(), SQLITE_OK);
    cr_assert_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &mm), SQLITE_OK);
    cr_assert_eq(sqlite3_initialize(), SQLITE_OK);
    cJSON_InitHooks(&(cJSON_Hooks){.malloc_fn = arb_malloc, .free_fn = free});
    /* tmpfs when there is one: the store sweep creates a database per allocation point and
       fsyncs on disk would make it minutes long */
    snprintf(dir, sizeof dir, "%s/arb_test_alloc_XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    cr_assert(mkdtemp(dir) != NULL);
}

static void hooks_off(void)
{
    arb_alloc_fail_after(0);
    cJSON_InitHooks(NULL);
    sqlite3_shutdown(); /* the next sqlite3_initialize() restores the default allocator */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
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

/* Open (creating the schema the first time), record a run and a 4-step prompt. */
static int open_and_put(const char *path, arb_err *err)
{
    arb_store *s = NULL;
    int rc = arb_store_open(path, &s, err);
    if (rc)
        return rc;
    arb_store_run r = {.run_key = "k1", .method = "PLD", .model_id = "m", .dataset = "humaneval",
                       .params_json = "{\"n\":1}", .max_new_tokens = 8, .top_p = 1};
    arb_store_step st[4] = {{0}};
    int32_t ids[5] = {1, 2, 3, 4, 5};
    for (int i = 0; i < 4; i++)
        st[i] = (arb_store_step){.step = i, .n_nodes = 3, .accepted = i % 2, .committed = 1,
                                 .mode = "tree", .stop_fanout = -1, .extra_json = "{\"x\":1}"};
    arb_store_prompt p = {.prompt_id = "HumanEval/0", .session = "s", .n_gen = 5, .n_calls = 5,
                          .n_repeats = 1, .stop = "eos", .lossless = -1, .ids = ids};
    if (!(rc = arb_store_run_put(s, &r, err)))
        rc = arb_store_prompt_put(s, "k1", &p, st, 4, err);
    arb_store_close(s);
    return rc;
}

static void expect_clean(int rc, const arb_err *err, long n, const char *what)
{
    cr_assert(rc == ARB_E_NOMEM || rc == ARB_E_DB, "%s: allocation %ld: rc %d: %s", what, n, rc,
              err->msg);
    cr_assert(err->msg[0], "%s: allocation %ld: no message", what, n);
}

/* Complete or absent: a prompt row always comes with its 4 steps and tokens. */
static void expect_consistent(const char *path, long n)
{
    arb_store *s = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_store_open(path, &s, &err), ARB_OK, "allocation %ld: reopen: %s", n, err.msg);
    int64_t np = count(s, "SELECT COUNT(*) FROM prompts");
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM steps"), 4 * np, "allocation %ld", n);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM tokens"), np, "allocation %ld", n);
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM prompts WHERE gen_sha256 IS NULL OR session IS NULL"
                          " OR stop IS NULL"), 0, "allocation %ld: a value went missing", n);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(arb_store_db(s), "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok", "allocation %ld", n);
    sqlite3_finalize(st);
    arb_store_close(s);
}

Test(alloc, store_open_and_prompt_put_fail_cleanly_at_every_allocation, .init = hooks_on,
     .fini = hooks_off)
{
    char path[512];
    long n = 1;
    for (;; n++) {
        snprintf(path, sizeof path, "%s/%ld.db", dir, n);
        arb_err err = {0};
        arb_alloc_fail_after(n);
        int rc = open_and_put(path, &err);
        bool fired = arb_alloc_fired();
        arb_alloc_fail_after(0);
        if (!fired) {
            cr_assert_eq(rc, ARB_OK, "%s", err.msg);
            break;
        }
        /* Some SQLite allocation failures are benign (caches): then the put must be whole. */
        if (rc)
            expect_clean(rc, &err, n, "store");
        expect_consistent(path, n);
        /* and the same file takes the prompt once the fault is gone (or already has it) */
        memset(&err, 0, sizeof err);
        rc = open_and_put(path, &err);
        cr_assert(rc == ARB_OK || (rc == ARB_E_DB && strstr(err.msg, "UNIQUE")),
                  "allocation %ld: retry: %s", n, err.msg);
        expect_consistent(path, n);
        unlink(path);
    }
    cr_assert_gt(n, 50, "the sweep saw only %ld allocation points: hooks not installed?", n);
    cr_log_info("store: %ld allocation points", n - 1);
}

Test(alloc, config_load_fails_cleanly_at_every_allocation, .init = hooks_on, .fini = hooks_off)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/configs/goose-table2.json", root ? root : ".");
    arb_config *c = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_config_load(path, &c, &err), ARB_OK, "%s", err.msg);
    int n_methods = c->n_methods;
    arb_config_free(c);
    long n = 1;
    for (;; n++) {
        memset(&err, 0, sizeof err);
        arb_alloc_fail_after(n);
        int rc = arb_config_load(path, &c, &err);
        bool fired = arb_alloc_fired();
        arb_alloc_fail_after(0);
        if (!fired) {
            cr_assert_eq(rc, ARB_OK, "%s", err.msg);
            cr_assert_eq(c->n_methods, n_methods);
            arb_config_free(c);
            break;
        }
        cr_assert_eq(rc, ARB_E_NOMEM, "allocation %ld: rc %d: %s", n, rc, err.msg);
        cr_assert(strstr(err.msg, "out of memory"), "allocation %ld: %s", n, err.msg);
        cr_assert_null(c);
    }
    cr_assert_gt(n, 20, "the sweep saw only %ld allocation points", n);
}

Test(alloc, dataset_open_fails_cleanly_at_every_allocation, .init = hooks_on, .fini = hooks_off)
{
    char path[512];
    snprintf(path, sizeof path, "%s/humaneval", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/humaneval/HumanEval.jsonl.gz", dir);
    FILE *f = fopen(path, "w"); /* plain text: gzread passes it through */
    cr_assert_not_null(f);
    for (int i = 0; i < 40; i++)
        fprintf(f, "{\"task_id\": \"HumanEval/%d\", \"prompt\": \"def f%d():\\n    pass\\n\"}\n", i, i);
    fclose(f);
    arb_dataset *d = NULL;
    long n = 1;
    for (;; n++) {
        arb_err err = {0};
        arb_alloc_fail_after(n);
        int rc = arb_dataset_open(dir, "humaneval", NULL, &d, &err);
        bool fired = arb_alloc_fired();
        arb_alloc_fail_after(0);
        if (!fired) {
            cr_assert_eq(rc, ARB_OK, "%s", err.msg);
            cr_assert_eq(arb_dataset_count(d), 40);
            arb_dataset_free(d);
            break;
        }
        cr_assert_eq(rc, ARB_E_NOMEM, "allocation %ld: rc %d: %s", n, rc, err.msg);
        cr_assert_null(d);
    }
    cr_assert_gt(n, 40, "the sweep saw only %ld allocation points", n);
}
