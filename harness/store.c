/* store.c — see store.h; the schema is documented in docs/results-db.md. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "sha256.h"

struct arb_store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *ins_step, *ins_prompt, *ins_tokens, *q_done; /* prepared once, reused */
    int fail_after; /* test hook: > 0 counts down write steps, the one reaching 0 fails */
};

/* Column suffixes of the per-source counters, indexed like arb_src (tree.h); 0 is unused. */
static const char *const src_col[ARB_STORE_NSRC] = {
    NULL, "pld", "tr", "draft", "head", "lade", "lade_window", "rest",
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS runs("
    " run_key TEXT PRIMARY KEY, config_name TEXT, method TEXT NOT NULL, base_method TEXT,"
    " drafter TEXT, topology TEXT, verifier TEXT, scheduler TEXT, params TEXT, sweep TEXT,"
    " model TEXT NOT NULL, model_path TEXT, model_sha256 TEXT, dataset TEXT NOT NULL, split TEXT,"
    " max_new_tokens INTEGER, temperature REAL, top_p REAL, top_k INTEGER, seed INTEGER,"
    " cell TEXT, created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));"
    "CREATE TABLE IF NOT EXISTS sessions("
    " session TEXT PRIMARY KEY, run_key TEXT NOT NULL, shard TEXT, hostname TEXT,"
    " cpu_model TEXT, cpu_flags TEXT, n_cores INTEGER, mem_bytes INTEGER, gpu TEXT,"
    " compiler TEXT, build_type TEXT, git_rev TEXT, version TEXT, status TEXT,"
    " started_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')), updated_at TEXT,"
    " kernels TEXT, n_threads INTEGER);"
    "CREATE TABLE IF NOT EXISTS prompts("
    " run_key TEXT NOT NULL, prompt_id TEXT NOT NULL, prompt_idx INTEGER, session TEXT,"
    " n_prompt INTEGER, n_gen INTEGER, n_calls INTEGER, wall_us INTEGER, prefill_us INTEGER,"
    " n_repeats INTEGER, stop TEXT, lossless INTEGER, gen_sha256 TEXT,"
    " finished_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')), cpu_us INTEGER,"
    " PRIMARY KEY(run_key, prompt_id));"
    "CREATE TABLE IF NOT EXISTS steps("
    " run_key TEXT NOT NULL, prompt_id TEXT NOT NULL, step INTEGER NOT NULL, l_cache INTEGER,"
    " n_nodes INTEGER, tree_depth INTEGER, stop_fanout INTEGER, accepted INTEGER, committed INTEGER, bonus INTEGER,"
    " mode TEXT, category INTEGER, topology_id INTEGER, n_spine INTEGER, acc_spine INTEGER,"
    " acc_pld INTEGER, acc_tr INTEGER, acc_draft INTEGER, acc_head INTEGER, acc_lade INTEGER,"
    " acc_lade_window INTEGER, acc_rest INTEGER,"
    " prop_pld INTEGER, prop_tr INTEGER, prop_draft INTEGER, prop_head INTEGER, prop_lade INTEGER,"
    " prop_lade_window INTEGER, prop_rest INTEGER,"
    " draft_us INTEGER, eval_us INTEGER, verify_us INTEGER, update_us INTEGER, commit_us INTEGER,"
    " extra TEXT, PRIMARY KEY(run_key, prompt_id, step));"
    "CREATE TABLE IF NOT EXISTS tokens(run_key TEXT NOT NULL, prompt_id TEXT NOT NULL,"
    " ids BLOB NOT NULL, PRIMARY KEY(run_key, prompt_id));"
    "CREATE TABLE IF NOT EXISTS model_hashes(path TEXT NOT NULL, size INTEGER NOT NULL,"
    " mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY(path, size, mtime_ns));"
    "CREATE INDEX IF NOT EXISTS runs_cell ON runs(model, dataset, method);";

static int db_err(arb_store *s, arb_err *err, const char *what)
{
    int code = sqlite3_errcode(s->db) == SQLITE_NOMEM ? ARB_E_NOMEM : ARB_E_DB;
    return ARB_ERR(err, code, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int exec(arb_store *s, const char *sql, arb_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = ARB_ERR(err, ARB_E_DB, "%s: %s", s->path, msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return rc;
    }
    return ARB_OK;
}

/* The fault-injection countdown (arb_store_fail_after): ARB_E_DB for the write that fails. */
static int fault(arb_store *s, arb_err *err, const char *what)
{
    if (s->fail_after > 0 && --s->fail_after == 0)
        return ARB_ERR(err, ARB_E_DB, "%s: %s: injected fault", s->path, what);
    return ARB_OK;
}

/* Step a write statement; honours the fault-injection countdown. */
static int step_write(arb_store *s, sqlite3_stmt *st, arb_err *err, const char *what)
{
    int frc = fault(s, err, what);
    if (frc) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return frc;
    }
    int rc = sqlite3_step(st);
    int out = (rc == SQLITE_DONE || rc == SQLITE_ROW) ? ARB_OK : db_err(s, err, what);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

static int prepare(arb_store *s, const char *sql, sqlite3_stmt **st, arb_err *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_err(s, err, "prepare");
    return ARB_OK;
}

static int prepare_inserts(arb_store *s, arb_err *err)
{
    char sql[2048];
    int n = snprintf(sql, sizeof sql,
                     "INSERT INTO steps(run_key,prompt_id,step,l_cache,n_nodes,tree_depth,stop_fanout,accepted,"
                     "committed,bonus,mode,category,topology_id,n_spine,acc_spine");
    for (int i = 1; i < ARB_STORE_NSRC; i++)
        n += snprintf(sql + n, sizeof sql - n, ",acc_%s", src_col[i]);
    for (int i = 1; i < ARB_STORE_NSRC; i++)
        n += snprintf(sql + n, sizeof sql - n, ",prop_%s", src_col[i]);
    n += snprintf(sql + n, sizeof sql - n,
                  ",draft_us,eval_us,verify_us,update_us,commit_us,extra) VALUES(?");
    for (int i = 1; i < 15 + 2 * (ARB_STORE_NSRC - 1) + 6; i++)
        n += snprintf(sql + n, sizeof sql - n, ",?");
    snprintf(sql + n, sizeof sql - n, ")");
    int rc = prepare(s, sql, &s->ins_step, err);
    if (!rc)
        rc = prepare(s,
                     "INSERT INTO prompts(run_key,prompt_id,prompt_idx,session,n_prompt,n_gen,"
                     "n_calls,wall_us,prefill_us,n_repeats,stop,lossless,gen_sha256,cpu_us)"
                     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     &s->ins_prompt, err);
    if (!rc)
        rc = prepare(s, "INSERT INTO tokens(run_key,prompt_id,ids) VALUES(?,?,?)", &s->ins_tokens,
                     err);
    if (!rc)
        rc = prepare(s, "SELECT 1 FROM prompts WHERE run_key=? AND prompt_id=?", &s->q_done, err);
    return rc;
}

int arb_store_open(const char *path, arb_store **out, arb_err *err)
{
    *out = NULL;
    arb_store *s = arb_calloc(1, sizeof *s);
    if (!s || !(s->path = arb_strdup(path))) {
        free(s);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    int rc = ARB_OK;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        rc = s->db ? db_err(s, err, "open") : ARB_ERR(err, ARB_E_NOMEM, "%s: sqlite open", path);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    /* WAL + synchronous=NORMAL: a committed prompt survives a process crash (kill -9). */
    if ((rc = exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", err)))
        goto fail;
    sqlite3_stmt *st = NULL;
    if ((rc = prepare(s, "PRAGMA user_version", &st, err)))
        goto fail;
    /* A failed step (SQLITE_NOMEM, SQLITE_BUSY) must not read as version 0: that would stamp
       a v1 database as current without its migration. */
    int r = sqlite3_step(st), version = r == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    if (r != SQLITE_ROW)
        rc = db_err(s, err, "PRAGMA user_version");
    sqlite3_finalize(st);
    if (rc)
        goto fail;
    if (version > ARB_STORE_SCHEMA_VERSION) {
        rc = ARB_ERR(err, ARB_E_UNSUPPORTED,
                     "%s: results schema version %d is newer than this arbor's (%d)", path, version,
                     ARB_STORE_SCHEMA_VERSION);
        goto fail;
    }
    if (version == 0) {
        char sql[sizeof schema_sql + 256];
        snprintf(sql, sizeof sql,
                 "BEGIN IMMEDIATE; %s INSERT OR REPLACE INTO meta VALUES('schema_version','%d');"
                 " PRAGMA user_version=%d; COMMIT;",
                 schema_sql, ARB_STORE_SCHEMA_VERSION, ARB_STORE_SCHEMA_VERSION);
        if ((rc = exec(s, sql, err))) {
            exec(s, "ROLLBACK", NULL);
            goto fail;
        }
    }
    if (version >= 1 && version < ARB_STORE_SCHEMA_VERSION) {
        /* v2 added steps.stop_fanout, v3 prompts.cpu_us, v4 sessions.kernels and n_threads;
           older rows keep NULL (unknown) */
        char sql[512];
        snprintf(sql, sizeof sql,
                 "BEGIN IMMEDIATE; %s%s%s"
                 " INSERT OR REPLACE INTO meta VALUES('schema_version','%d'); PRAGMA user_version=%d; COMMIT;",
                 version < 2 ? "ALTER TABLE steps ADD COLUMN stop_fanout INTEGER;" : "",
                 version < 3 ? "ALTER TABLE prompts ADD COLUMN cpu_us INTEGER;" : "",
                 version < 4 ? "ALTER TABLE sessions ADD COLUMN kernels TEXT; ALTER TABLE sessions ADD COLUMN n_threads INTEGER;"
                             : "",
                 ARB_STORE_SCHEMA_VERSION, ARB_STORE_SCHEMA_VERSION);
        if ((rc = exec(s, sql, err))) {
            exec(s, "ROLLBACK", NULL);
            goto fail;
        }
    }
    if ((rc = prepare_inserts(s, err)))
        goto fail;
    *out = s;
    return ARB_OK;
fail:
    arb_store_close(s);
    return rc;
}

void arb_store_close(arb_store *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->ins_step);
    sqlite3_finalize(s->ins_prompt);
    sqlite3_finalize(s->ins_tokens);
    sqlite3_finalize(s->q_done);
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

sqlite3 *arb_store_db(arb_store *s) { return s->db; }
const char *arb_store_path(const arb_store *s) { return s->path; }
void arb_store_fail_after(arb_store *s, int n) { s->fail_after = n; }

/* SQLITE_STATIC: every string outlives the step that uses it (step_write clears the bindings),
   and a TRANSIENT copy can fail to allocate, which sqlite3_bind_text reports only in its
   return value and the step would then store NULL in its place. */
static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

int arb_store_run_put(arb_store *s, const arb_store_run *r, arb_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s,
                     "INSERT OR IGNORE INTO runs(run_key,config_name,method,base_method,drafter,"
                     "topology,verifier,scheduler,params,sweep,model,model_path,model_sha256,dataset,"
                     "split,max_new_tokens,temperature,top_p,top_k,seed,cell)"
                     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     &st, err);
    if (rc)
        return rc;
    const char *txt[] = {r->run_key, r->config_name, r->method, r->base_method, r->drafter,
                         r->topology, r->verifier, r->scheduler, r->params_json, r->sweep_json,
                         r->model_id, r->model_path, r->model_sha256, r->dataset, r->split};
    for (int i = 0; i < 15; i++)
        bind_text(st, i + 1, txt[i]);
    sqlite3_bind_int(st, 16, r->max_new_tokens);
    sqlite3_bind_double(st, 17, r->temperature);
    sqlite3_bind_double(st, 18, r->top_p);
    sqlite3_bind_int(st, 19, r->top_k);
    sqlite3_bind_int64(st, 20, r->seed);
    bind_text(st, 21, r->cell_json);
    rc = step_write(s, st, err, "runs");
    sqlite3_finalize(st);
    return rc;
}

/* A session's setup as text, "avx2, 1 thread on AMD EPYC" (schema v4 columns; NULL without them). */
#define SETUP_SQL                                                                                                     \
    "kernels || ', ' || n_threads || CASE WHEN n_threads = 1 THEN ' thread' ELSE ' threads' END || ' on ' ||"          \
    " COALESCE(cpu_model, '?')"

int arb_store_session_other_setup(arb_store *s, const arb_store_session *x, char *buf, size_t cap, arb_err *err)
{
    buf[0] = 0;
    sqlite3_stmt *st = NULL;
    int rc = prepare(s,
                     "SELECT " SETUP_SQL " FROM sessions WHERE run_key = ?1 AND session <> ?2"
                     " AND kernels IS NOT NULL AND n_threads IS NOT NULL"
                     " AND (kernels <> ?3 OR n_threads <> ?4 OR COALESCE(cpu_model, '') <> ?5)"
                     " ORDER BY started_at LIMIT 1",
                     &st, err);
    if (rc)
        return rc;
    bind_text(st, 1, x->run_key);
    bind_text(st, 2, x->session);
    bind_text(st, 3, x->kernels ? x->kernels : "");
    sqlite3_bind_int(st, 4, x->n_threads);
    bind_text(st, 5, x->cpu_model ? x->cpu_model : "");
    const int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    else if (r != SQLITE_DONE)
        rc = db_err(s, err, "sessions");
    sqlite3_finalize(st);
    return rc;
}

int arb_store_setups(arb_store *s, char *buf, size_t cap, arb_err *err)
{
    buf[0] = 0;
    sqlite3_stmt *st = NULL;
    int rc = prepare(s,
                     "SELECT " SETUP_SQL " AS x FROM sessions"
                     " WHERE kernels IS NOT NULL AND n_threads IS NOT NULL GROUP BY x ORDER BY MIN(started_at), x",
                     &st, err);
    size_t n = 0;
    int r = SQLITE_DONE;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
        const int w = snprintf(buf + n, cap - n, "%s%s", n ? "; " : "", (const char *)sqlite3_column_text(st, 0));
        if (w < 0 || (size_t)w >= cap - n) {
            r = SQLITE_DONE; /* a long list is cut: it is only printed */
            break;
        }
        n += (size_t)w;
    }
    if (!rc && r != SQLITE_DONE)
        rc = db_err(s, err, "sessions");
    sqlite3_finalize(st);
    return rc;
}

int arb_store_session_put(arb_store *s, const arb_store_session *x, arb_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s,
                     "INSERT INTO sessions(session,run_key,shard,hostname,cpu_model,cpu_flags,gpu,"
                     "compiler,build_type,git_rev,version,status,n_cores,mem_bytes,updated_at,kernels,n_threads)"
                     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,strftime('%Y-%m-%dT%H:%M:%SZ','now'),?,?)"
                     " ON CONFLICT(session) DO UPDATE SET status=excluded.status,"
                     " updated_at=excluded.updated_at",
                     &st, err);
    if (rc)
        return rc;
    const char *txt[] = {x->session, x->run_key,  x->shard,    x->hostname, x->cpu_model, x->cpu_flags,
                         x->gpu,     x->compiler, x->build_type, x->git_rev, x->version,  x->status};
    for (int i = 0; i < 12; i++)
        bind_text(st, i + 1, txt[i]);
    sqlite3_bind_int(st, 13, x->n_cores);
    sqlite3_bind_int64(st, 14, x->mem_bytes);
    bind_text(st, 15, x->kernels);
    if (x->n_threads > 0)
        sqlite3_bind_int(st, 16, x->n_threads);
    rc = step_write(s, st, err, "sessions");
    sqlite3_finalize(st);
    return rc;
}

int arb_store_prompt_done(arb_store *s, const char *run_key, const char *prompt_id, bool *done,
                          arb_err *err)
{
    sqlite3_bind_text(s->q_done, 1, run_key, -1, SQLITE_STATIC); /* see bind_text */
    sqlite3_bind_text(s->q_done, 2, prompt_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s->q_done);
    *done = rc == SQLITE_ROW;
    sqlite3_reset(s->q_done);
    sqlite3_clear_bindings(s->q_done);
    return (rc == SQLITE_ROW || rc == SQLITE_DONE) ? ARB_OK : db_err(s, err, "prompts");
}

static int put_step(arb_store *s, const char *run_key, const char *pid, const arb_store_step *x,
                    arb_err *err)
{
    sqlite3_stmt *st = s->ins_step;
    int i = 1;
    sqlite3_bind_text(st, i++, run_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, pid, -1, SQLITE_STATIC);
    const int ints[] = {x->step,  x->l_cache,  x->n_nodes,     x->tree_depth,
                        x->accepted, x->committed, (int)x->bonus};
    for (int j = 0; j < 4; j++)
        sqlite3_bind_int(st, i++, ints[j]);
    if (x->stop_fanout >= 0)
        sqlite3_bind_int(st, i++, x->stop_fanout);
    else
        sqlite3_bind_null(st, i++);
    for (int j = 4; j < 7; j++)
        sqlite3_bind_int(st, i++, ints[j]);
    bind_text(st, i++, x->mode);
    sqlite3_bind_int(st, i++, x->category);
    sqlite3_bind_int(st, i++, x->topology_id);
    sqlite3_bind_int(st, i++, x->n_spine);
    sqlite3_bind_int(st, i++, x->acc_spine);
    for (int j = 1; j < ARB_STORE_NSRC; j++)
        sqlite3_bind_int(st, i++, x->acc_src[j]);
    for (int j = 1; j < ARB_STORE_NSRC; j++)
        sqlite3_bind_int(st, i++, x->prop_src[j]);
    const int64_t us[] = {x->draft_us, x->eval_us, x->verify_us, x->update_us, x->commit_us};
    for (int j = 0; j < 5; j++)
        sqlite3_bind_int64(st, i++, us[j]);
    bind_text(st, i, x->extra_json);
    return step_write(s, st, err, "steps");
}

int arb_store_prompt_put(arb_store *s, const char *run_key, const arb_store_prompt *p,
                         const arb_store_step *steps, int n_steps, arb_err *err)
{
    int rc = exec(s, "BEGIN IMMEDIATE", err);
    if (rc)
        return rc;
    for (int i = 0; i < n_steps && !rc; i++)
        rc = put_step(s, run_key, p->prompt_id, &steps[i], err);
    /* ids as little-endian int32 (the only byte order arbor builds for; documented). */
    char hex[65];
    size_t nb = (size_t)(p->n_gen > 0 ? p->n_gen : 0) * sizeof(int32_t);
    arb_sha256_hex(p->ids ? (const void *)p->ids : "", p->ids ? nb : 0, hex);
    if (!rc) {
        sqlite3_stmt *st = s->ins_tokens;
        sqlite3_bind_text(st, 1, run_key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, p->prompt_id, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, p->ids ? (const void *)p->ids : "", (int)(p->ids ? nb : 0),
                          SQLITE_STATIC);
        rc = step_write(s, st, err, "tokens");
    }
    if (!rc) {
        sqlite3_stmt *st = s->ins_prompt;
        sqlite3_bind_text(st, 1, run_key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, p->prompt_id, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, p->prompt_idx);
        bind_text(st, 4, p->session);
        sqlite3_bind_int(st, 5, p->n_prompt);
        sqlite3_bind_int(st, 6, p->n_gen);
        sqlite3_bind_int(st, 7, p->n_calls);
        sqlite3_bind_int64(st, 8, p->wall_us);
        sqlite3_bind_int64(st, 9, p->prefill_us);
        sqlite3_bind_int(st, 10, p->n_repeats);
        bind_text(st, 11, p->stop);
        if (p->lossless < 0)
            sqlite3_bind_null(st, 12);
        else
            sqlite3_bind_int(st, 12, p->lossless);
        sqlite3_bind_text(st, 13, hex, -1, SQLITE_STATIC);
        if (p->cpu_us <= 0) /* not measured (a zero-initialised struct included) */
            sqlite3_bind_null(st, 14);
        else
            sqlite3_bind_int64(st, 14, p->cpu_us);
        rc = step_write(s, st, err, "prompts");
    }
    if (!rc && !(rc = fault(s, err, "commit")))
        rc = exec(s, "COMMIT", err);
    if (rc) {
        exec(s, "ROLLBACK", NULL);
        arb_err_prefix(err, "prompt %s", p->prompt_id);
    }
    return rc;
}

int arb_store_tokens_get(arb_store *s, const char *run_key, const char *prompt_id, int32_t **ids,
                         int *n, arb_err *err)
{
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, "SELECT ids FROM tokens WHERE run_key=? AND prompt_id=?", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, run_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, prompt_id, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        int nb = sqlite3_column_bytes(st, 0);
        const void *b = sqlite3_column_blob(st, 0);
        *ids = arb_malloc(nb > 0 ? (size_t)nb : 1);
        if (!*ids)
            rc = ARB_ERR(err, ARB_E_NOMEM, "tokens: out of memory");
        else {
            if (nb > 0)
                memcpy(*ids, b, (size_t)nb);
            *n = nb / (int)sizeof(int32_t);
        }
    } else if (r != SQLITE_DONE) {
        rc = db_err(s, err, "tokens");
    }
    sqlite3_finalize(st);
    return rc;
}

int arb_store_model_sha256(arb_store *s, const char *path, char hex[65], arb_err *err)
{
    struct stat sb;
    hex[0] = 0;
    if (stat(path, &sb) != 0)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot stat model file", path);
    int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, "SELECT sha256 FROM model_hashes WHERE path=? AND size=? AND mtime_ns=?",
                     &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t)sb.st_size);
    sqlite3_bind_int64(st, 3, mt);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 64) {
        memcpy(hex, sqlite3_column_text(st, 0), 65);
        sqlite3_finalize(st);
        return ARB_OK;
    }
    sqlite3_finalize(st);
    if ((rc = arb_sha256_file(path, hex, err)))
        return rc;
    if ((rc = prepare(s, "INSERT OR REPLACE INTO model_hashes VALUES(?,?,?,?)", &st, err)))
        return rc;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t)sb.st_size);
    sqlite3_bind_int64(st, 3, mt);
    sqlite3_bind_text(st, 4, hex, -1, SQLITE_STATIC);
    rc = step_write(s, st, err, "model_hashes");
    sqlite3_finalize(st);
    return rc;
}

/* "c1,c2,..." of main.<table>, in its order. */
static int column_list(arb_store *s, const char *table, char *buf, size_t cap, arb_err *err)
{
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA main.table_info(%s)", table);
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    size_t n = 0;
    buf[0] = 0;
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 1);
        const int w = snprintf(buf + n, cap - n, "%s%s", n ? "," : "", c ? c : "");
        if (w < 0 || (size_t)w >= cap - n)
            rc = ARB_ERR(err, ARB_E_RANGE, "merge: table %s has too many columns", table);
        else
            n += (size_t)w;
    }
    sqlite3_finalize(st);
    if (!rc && n == 0)
        rc = ARB_ERR(err, ARB_E_DB, "%s: no table %s", s->path, table);
    return rc;
}

int arb_store_merge_from(arb_store *s, const char *src_path, int *n_prompts, arb_err *err)
{
    *n_prompts = 0;
    /* Open it on its own first so a missing or foreign file gets a clear message. */
    arb_store *src = NULL;
    struct stat sb;
    if (stat(src_path, &sb) != 0)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: no such database", src_path);
    int rc = arb_store_open(src_path, &src, err);
    arb_store_close(src);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    if ((rc = prepare(s, "ATTACH DATABASE ? AS src", &st, err)))
        return rc;
    sqlite3_bind_text(st, 1, src_path, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? ARB_OK : db_err(s, err, "attach");
    sqlite3_finalize(st);
    if (rc)
        return rc;
    /* Same prompt in both with different tokens: the shards disagree, refuse to guess. */
    if (!(rc = prepare(s,
                       "SELECT a.run_key, a.prompt_id FROM src.tokens a JOIN main.tokens b"
                       " ON a.run_key=b.run_key AND a.prompt_id=b.prompt_id WHERE a.ids<>b.ids"
                       " LIMIT 1",
                       &st, err))) {
        if (sqlite3_step(st) == SQLITE_ROW)
            rc = ARB_ERR(err, ARB_E_INVAL,
                         "%s: run %s prompt %s: generated tokens differ from %s's", src_path,
                         (const char *)sqlite3_column_text(st, 0),
                         (const char *)sqlite3_column_text(st, 1), s->path);
        sqlite3_finalize(st);
    }
    /* By column name, not position: a migrated database has its added columns at the end
       (ALTER TABLE appends) where a new one has them where schema_sql puts them. */
    static const struct { const char *table, *where; } part[] = {
        {"runs", ""}, {"sessions", ""}, {"model_hashes", ""},
        {"steps", " WHERE NOT EXISTS (SELECT 1 FROM main.prompts p WHERE p.run_key=x.run_key AND"
                  " p.prompt_id=x.prompt_id)"},
        {"tokens", " WHERE NOT EXISTS (SELECT 1 FROM main.prompts p WHERE p.run_key=x.run_key AND"
                   " p.prompt_id=x.prompt_id)"},
        {"prompts", ""}, /* last: sqlite3_changes then counts the prompts added */
    };
    char *merge_sql = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&merge_sql, &len);
    if (!rc && !ms)
        rc = ARB_ERR(err, ARB_E_NOMEM, "merge: out of memory");
    if (!rc)
        fputs("BEGIN IMMEDIATE;", ms);
    for (size_t i = 0; !rc && i < sizeof part / sizeof part[0]; i++) {
        char cols[1024];
        if (!(rc = column_list(s, part[i].table, cols, sizeof cols, err)))
            fprintf(ms, "INSERT OR IGNORE INTO main.%s(%s) SELECT %s FROM src.%s x%s;", part[i].table, cols, cols,
                    part[i].table, part[i].where);
    }
    if (ms && fclose(ms) && !rc)
        rc = ARB_ERR(err, ARB_E_NOMEM, "merge: out of memory");
    if (!rc) {
        rc = exec(s, merge_sql, err);
        if (!rc) {
            *n_prompts = sqlite3_changes(s->db); /* rows of the last statement: prompts added */
            rc = exec(s, "COMMIT", err);
        }
        if (rc)
            exec(s, "ROLLBACK", NULL);
    }
    free(merge_sql);
    exec(s, "DETACH DATABASE src", NULL);
    return rc;
}
