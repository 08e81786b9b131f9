/* nde_data.c — the NDE offline data (nde_data.h). The trajectory loop mirrors dte_depth.c's
 * (prefill all but the anchor, then one root node per token, committed, next token sampled
 * from its p); at a root every action of A is drafted n_tree times from the same prepared
 * draft state (arb_draft_model_prepare) and scored by one target pass each, uncommitted. */
#include "nde_data.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset.h"
#include "drafters/draft_model.h"
#include "genutil.h"
#include "modelfetch.h"
#include "nde_features.h"
#include "sample.h"
#include "sha256.h"
#include "verifiers/otanalysis.h"
#include "verifiers/verifier.h"

#define N_VF 8      /* the lossless sampling verifiers (the registry's, Traversal last) */
#define N_CTX 4096
#define S_CAP 8192
#define N_NODES 64  /* tree and draft capacity (the largest action has ARB_NDE_NODES_MAX) */

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS nde_meta(tag TEXT PRIMARY KEY, model TEXT, model_sha256 TEXT, draft TEXT,"
    " every INTEGER, max_new INTEGER, n_tree INTEGER, seed INTEGER, actions TEXT, lat_target TEXT,"
    " lat_draft TEXT, created TEXT);"
    "CREATE TABLE IF NOT EXISTS nde_root(tag TEXT, dataset TEXT, prompt INTEGER, setting INTEGER,"
    " temperature REAL, top_p REAL, g INTEGER, n_ctx INTEGER, feat TEXT,"
    " PRIMARY KEY(tag, dataset, prompt, setting, g));"
    "CREATE TABLE IF NOT EXISTS nde_be(tag TEXT, dataset TEXT, prompt INTEGER, setting INTEGER, g INTEGER,"
    " action INTEGER, verifier TEXT, be REAL, us REAL,"
    " PRIMARY KEY(tag, dataset, prompt, setting, g, action, verifier));"
    "CREATE TABLE IF NOT EXISTS nde_done(tag TEXT, dataset TEXT, prompt INTEGER, setting INTEGER,"
    " PRIMARY KEY(tag, dataset, prompt, setting));";

typedef struct gen {
    arb_nde_data_opts o;
    sqlite3 *db;
    sqlite3_stmt *ins_root, *ins_be, *ins_done, *is_done;
    arb_model *m;
    arb_ctx *c;
    arb_draft_model *dm;
    arb_otan *an;
    arb_verifier *vf[N_VF];
    const char *vn[N_VF];
    int n_vf;                 /* verifiers scored (--verifiers; all N_VF by default) */
    int V;
    arb_nde_latency lat;
    arb_sampling sm;
    double *p, *q, *p_prev, *q_prev, *q_root; /* p, q: [N_NODES][V]; the rest [V] */
    float *lg;                                /* [N_NODES][V] */
    int32_t *idx, *S, *par, *path;
    arb_tree t;
    /* one unit's rows, written in one short transaction at its end (computing inside the
       transaction would starve other shards of the write lock) */
    struct { int g, n_ctx; char feat[ARB_NDE_F * 26]; } *rb; /* [max_new / every + 1] */
    struct { int g, a, vi; double be, us; } *bb;             /* [roots x A x N_VF] */
    int n_rb, n_bb;
} gen;

arb_nde_data_opts arb_nde_data_default_opts(void)
{
    return (arb_nde_data_opts){.tag = "train", .datasets = "gsm8k-train", .model = "default", .limit = 20,
                               .max_new = 96, .every = 16, .n_tree = 1, .draft_layers = 24, .n_shards = 1,
                               .temperature = {1.0}, .top_p = {1.0}, .n_settings = 1};
}

int arb_nde_data_parse_settings(const char *text, arb_nde_data_opts *o, arb_err *err)
{
    int n = 0;
    for (const char *sp = text; sp && *sp; sp = strchr(sp, ';') ? strchr(sp, ';') + 1 : NULL) {
        double t = 0, p = 1;
        if (n == ARB_NDE_MAX_SETTINGS || sscanf(sp, "%lf:%lf", &t, &p) < 1 || !(t > 0) || !(p > 0 && p <= 1))
            return ARB_ERR(err, ARB_E_INVAL, "--settings '%s': expected T[:P][;T[:P]...] with T > 0, P in (0, 1] "
                           "(at most %d)", text, ARB_NDE_MAX_SETTINGS);
        o->temperature[n] = t, o->top_p[n] = p, n++;
    }
    if (n == 0)
        return ARB_ERR(err, ARB_E_INVAL, "--settings '%s': no setting given", text);
    o->n_settings = n;
    return ARB_OK;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int sql_err(gen *g, arb_err *err)
{
    return ARB_ERR(err, ARB_E_IO, "%s: %s", g->o.db, sqlite3_errmsg(g->db));
}

/* ---- latency micro-benchmark: t(n, m) of the target and the self-draft, fitted ---- */

/* The fastest of 3 evals of an m-node chain on n committed tokens (the minimum is the least
   disturbed by the other processes sharing the machine). */
static int bench_one(arb_ctx *c, int n, int m, float *lg, int32_t *tok, int32_t *par, double *us, arb_err *err)
{
    double best = 1e300;
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < m; i++)
            tok[i] = 1000 + (n + i * 7) % 20000, par[i] = i - 1;
        double t0 = now_us();
        int rc = arb_eval(c, tok, par, m, lg, NULL, err);
        if (rc)
            return rc;
        double dt = now_us() - t0;
        best = dt < best ? dt : best;
    }
    *us = best;
    return ARB_OK;
}

static int fit_latency(gen *g, FILE *progress, arb_err *err)
{
    static const int ns[] = {128, 512, 1024}, ms[] = {1, 4, 12, 25};
    enum { NP = 12 };
    int pn[NP], pm[NP];
    double pt[NP], pd[NP];
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = 1100;
    co.n_batch_max = 64;
    co.n_layer = g->o.draft_layers;
    arb_ctx *dc = NULL;
    int rc = arb_ctx_new(g->m, &co, &dc, err);
    int k = 0;
    for (int a = 0; !rc && a < 3; a++) {
        for (arb_ctx *c = g->c; !rc && c; c = c == g->c ? dc : NULL) { /* context of ns[a] tokens */
            arb_ctx_truncate(c, 0);
            for (int at = 0; !rc && at < ns[a]; at += 64) {
                for (int i = 0; i < 64; i++)
                    g->S[i] = 1000 + (at + i) % 20000, g->par[i] = i - 1, g->path[i] = i;
                if (!(rc = arb_eval(c, g->S, g->par, 64, g->lg, NULL, err)))
                    rc = arb_commit(c, g->path, 64, err);
            }
        }
        for (int b = 0; !rc && b < 4; b++, k++) {
            pn[k] = ns[a], pm[k] = ms[b];
            if (!(rc = bench_one(g->c, ns[a], ms[b], g->lg, g->S, g->par, &pt[k], err)))
                rc = bench_one(dc, ns[a], ms[b], g->lg, g->S, g->par, &pd[k], err);
        }
    }
    arb_ctx_free(dc);
    arb_ctx_truncate(g->c, 0);
    if (rc)
        return rc;
    if (arb_nde_latency_fit(pn, pm, pt, NP, g->lat.target) || arb_nde_latency_fit(pn, pm, pd, NP, g->lat.draft))
        return ARB_ERR(err, ARB_E_INVAL, "nde data: latency fit is singular");
    if (progress)
        fprintf(progress, "nde data: latency t(n,m) = c0 + c1 m + c2 n m [us]: target %.0f %.1f %.4f, "
                "draft %.0f %.1f %.4f (%d points each)\n", g->lat.target[0], g->lat.target[1], g->lat.target[2],
                g->lat.draft[0], g->lat.draft[1], g->lat.draft[2], NP);
    return ARB_OK;
}

/* ---- nde_meta: one row per tag; a re-run must match it and reuses its latency model ---- */

static void actions_text(char *buf, size_t cap)
{
    buf[0] = 0;
    for (int a = 0; a < ARB_NDE_N_ACTIONS; a++) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s%d,%d,%d", a ? ";" : "", arb_nde_actions[a].k, arb_nde_actions[a].l,
                 arb_nde_actions[a].b);
    }
}

static int meta(gen *g, FILE *progress, arb_err *err)
{
    char path[4096], sha[65], draft[64], acts[512];
    int rc = arb_model_resolve(g->o.model, path, sizeof path, err);
    if (!rc)
        rc = arb_sha256_file(path, sha, err);
    if (rc)
        return rc;
    snprintf(draft, sizeof draft, "self:%d", g->o.draft_layers);
    actions_text(acts, sizeof acts);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(g->db, "SELECT model_sha256, draft, every, n_tree, actions, lat_target, lat_draft "
                           "FROM nde_meta WHERE tag = ?", -1, &st, NULL) != SQLITE_OK)
        return sql_err(g, err);
    sqlite3_bind_text(st, 1, g->o.tag, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *s0 = (const char *)sqlite3_column_text(st, 0), *s1 = (const char *)sqlite3_column_text(st, 1),
                   *s4 = (const char *)sqlite3_column_text(st, 4), *s5 = (const char *)sqlite3_column_text(st, 5),
                   *s6 = (const char *)sqlite3_column_text(st, 6);
        if (!s0 || !s1 || !s4 || !s5 || !s6 || strcmp(s0, sha) || strcmp(s1, draft) ||
            sqlite3_column_int(st, 2) != g->o.every || sqlite3_column_int(st, 3) != g->o.n_tree || strcmp(s4, acts) ||
            sscanf(s5, "%lf %lf %lf", &g->lat.target[0], &g->lat.target[1], &g->lat.target[2]) != 3 ||
            sscanf(s6, "%lf %lf %lf", &g->lat.draft[0], &g->lat.draft[1], &g->lat.draft[2]) != 3)
            rc = ARB_ERR(err, ARB_E_INVAL, "%s: tag '%s' was made with another model, draft, --every, --n-tree or "
                         "action set (use a new --tag)", g->o.db, g->o.tag);
        else if (progress)
            fprintf(progress, "nde data: continuing tag '%s' (its latency model: target %.0f %.1f %.4f, draft %.0f "
                    "%.1f %.4f)\n", g->o.tag, g->lat.target[0], g->lat.target[1], g->lat.target[2], g->lat.draft[0],
                    g->lat.draft[1], g->lat.draft[2]);
        sqlite3_finalize(st);
        return rc;
    }
    sqlite3_finalize(st);
    /* a new tag reuses the latency model of an earlier tag of the same model and draft, so that
       training and evaluation data are costed alike; else the micro-benchmark runs */
    if (sqlite3_prepare_v2(g->db, "SELECT lat_target, lat_draft, tag FROM nde_meta WHERE model_sha256 = ? AND "
                           "draft = ? ORDER BY created LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return sql_err(g, err);
    sqlite3_bind_text(st, 1, sha, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, draft, -1, SQLITE_TRANSIENT);
    bool reused = false;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *s0 = (const char *)sqlite3_column_text(st, 0), *s1 = (const char *)sqlite3_column_text(st, 1);
        reused = s0 && s1 &&
                 sscanf(s0, "%lf %lf %lf", &g->lat.target[0], &g->lat.target[1], &g->lat.target[2]) == 3 &&
                 sscanf(s1, "%lf %lf %lf", &g->lat.draft[0], &g->lat.draft[1], &g->lat.draft[2]) == 3;
        if (reused && progress)
            fprintf(progress, "nde data: tag '%s' uses the latency model of tag '%s'\n", g->o.tag,
                    (const char *)sqlite3_column_text(st, 2));
    }
    sqlite3_finalize(st);
    if (!reused && (rc = fit_latency(g, progress, err)))
        return rc;
    char lt[128], ld[128];
    snprintf(lt, sizeof lt, "%.17g %.17g %.17g", g->lat.target[0], g->lat.target[1], g->lat.target[2]);
    snprintf(ld, sizeof ld, "%.17g %.17g %.17g", g->lat.draft[0], g->lat.draft[1], g->lat.draft[2]);
    if (sqlite3_prepare_v2(g->db, "INSERT INTO nde_meta VALUES(?,?,?,?,?,?,?,?,?,?,?,datetime('now'))", -1, &st,
                           NULL) != SQLITE_OK)
        return sql_err(g, err);
    const char *txt[] = {g->o.tag, path, sha, draft};
    for (int i = 0; i < 4; i++)
        sqlite3_bind_text(st, i + 1, txt[i], -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, g->o.every);
    sqlite3_bind_int(st, 6, g->o.max_new);
    sqlite3_bind_int(st, 7, g->o.n_tree);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)g->o.seed);
    sqlite3_bind_text(st, 9, acts, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 10, lt, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 11, ld, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st) == SQLITE_DONE ? ARB_OK : sql_err(g, err);
    sqlite3_finalize(st);
    return rc;
}

/* ---- one root: features, then every action's BE per verifier ---- */

static int bind_unit(sqlite3_stmt *st, const gen *g, const char *ds, int pi, int ss)
{
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, g->o.tag, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, ds, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, pi);
    sqlite3_bind_int(st, 4, ss);
    return 5; /* next parameter */
}

static int root(gen *g, int pi, int gi, int n_S, arb_err *err)
{
    const int V = g->V;
    int rc = arb_draft_model_prepare(g->dm, g->S, n_S, NULL, err);
    if (rc)
        return rc;
    arb_draft_model_laws(g->dm, &g->sm, g->q_prev, g->q_root);
    double f[ARB_NDE_F];
    arb_nde_features(g->p_prev, g->q_prev, g->q_root, V, n_S, &g->sm, &g->lat, f);
    char ft[ARB_NDE_F * 26] = "";
    for (int i = 0; i < ARB_NDE_F; i++)
        snprintf(ft + strlen(ft), sizeof ft - strlen(ft), "%s%.17g", i ? " " : "", f[i]);
    g->rb[g->n_rb].g = gi, g->rb[g->n_rb].n_ctx = n_S;
    memcpy(g->rb[g->n_rb++].feat, ft, sizeof ft);
    for (int a = 0; a < ARB_NDE_N_ACTIONS; a++) {
        double be[N_VF] = {0};
        for (int tr = 0; tr < g->o.n_tree; tr++) {
            arb_rng r; /* common random numbers: every verifier sees the same trees */
            arb_rng_init(&r, g->o.seed, (uint32_t)pi, (uint32_t)((gi * 64 + a) * 16 + tr), ARB_STREAM_AUX);
            arb_tree_reset(&g->t, g->S[n_S - 1]);
            if ((rc = arb_draft_model_propose(g->dm, g->S, n_S, arb_nde_actions[a], &g->sm, &r, &g->t, g->q, NULL,
                                              err)))
                return rc;
            arb_tree_finalize(&g->t);
            if ((rc = arb_eval(g->c, g->t.tok, g->t.parent, g->t.n, g->lg, NULL, err)))
                return rc;
            for (int v = 0; v < g->t.n; v++)
                arb_sample_process(g->lg + (size_t)v * V, V, &g->sm, g->p + (size_t)v * V, g->idx);
            arb_verify_in in = {.tree = &g->t, .p = g->p, .q = g->q, .V = V, .rng = &r};
            for (int i = 0; i < g->n_vf; i++) {
                double e = 0;
                if ((rc = arb_otan_expected_accepted(g->an, g->vf[i], &in, &e)))
                    return ARB_ERR(err, rc, "nde data: no exact BE for verifier %s", g->vn[i]);
                be[i] += (1 + e) / g->o.n_tree;
            }
        }
        const double us = arb_nde_action_us(&g->lat, n_S, arb_nde_actions[a]);
        for (int i = 0; i < g->n_vf; i++) {
            g->bb[g->n_bb].g = gi, g->bb[g->n_bb].a = a, g->bb[g->n_bb].vi = i;
            g->bb[g->n_bb].be = be[i], g->bb[g->n_bb++].us = us;
        }
    }
    return ARB_OK;
}

/* ---- one (dataset, prompt, setting) unit: the trajectory, its roots, one transaction ---- */

static int prefill(gen *g, int n, arb_err *err)
{
    arb_ctx_truncate(g->c, 0);
    arb_draft_model_reset(g->dm);
    for (int i = 0; i < N_NODES; i++)
        g->par[i] = i - 1, g->path[i] = i;
    int rc = ARB_OK;
    for (int at = 0; !rc && at < n - 1; at += N_NODES) {
        const int nb = n - 1 - at < N_NODES ? n - 1 - at : N_NODES;
        if (!(rc = arb_eval(g->c, g->S + at, g->par, nb, g->lg, NULL, err)))
            rc = arb_commit(g->c, g->path, nb, err);
    }
    return rc;
}

static int unit(gen *g, const char *turn, int pi, int *n_roots, arb_err *err)
{
    int32_t *ids;
    int n;
    int rc = arb_gen_prompt(g->m, turn, true, &ids, &n, err);
    if (rc)
        return rc;
    *n_roots = 0;
    if (n + g->o.max_new + 2 > N_CTX - 96) { /* too long: marked done with no roots */
        free(ids);
        n = 0;
    } else {
        memcpy(g->S, ids, sizeof(int32_t) * (size_t)n);
        free(ids);
        rc = prefill(g, n, err);
    }
    int n_S = n;
    bool eog = n == 0;
    for (int gi = 0; !rc && !eog && gi < g->o.max_new; gi++) {
        if (gi % g->o.every == g->o.every - 1) { /* a root: p_prev is the law S[n_S-1] was drawn from */
            rc = root(g, pi, gi, n_S, err);
            (*n_roots)++;
        }
        if (rc)
            break;
        arb_tree_reset(&g->t, g->S[n_S - 1]);
        arb_tree_finalize(&g->t);
        if ((rc = arb_eval(g->c, g->t.tok, g->t.parent, 1, g->lg, NULL, err)))
            break;
        arb_sample_process(g->lg, g->V, &g->sm, g->p_prev, g->idx);
        int32_t zero = 0;
        if ((rc = arb_commit(g->c, &zero, 1, err)))
            break;
        arb_rng sr;
        arb_rng_init(&sr, g->o.seed, (uint32_t)pi, (uint32_t)gi, ARB_STREAM_SAMPLE);
        g->S[n_S++] = arb_sample_w(&sr, g->p_prev, g->V);
        eog = arb_token_is_eog(g->m, g->S[n_S - 1]);
    }
    return rc;
}

/* The unit's buffered rows and its done mark, in one transaction. */
static int write_unit(gen *g, const char *ds, int pi, int ss, arb_err *err)
{
    if (sqlite3_exec(g->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return sql_err(g, err);
    int ok = 1;
    for (int r = 0; ok && r < g->n_rb; r++) {
        int k = bind_unit(g->ins_root, g, ds, pi, ss);
        sqlite3_bind_double(g->ins_root, k++, g->sm.temperature);
        sqlite3_bind_double(g->ins_root, k++, g->sm.top_p);
        sqlite3_bind_int(g->ins_root, k++, g->rb[r].g);
        sqlite3_bind_int(g->ins_root, k++, g->rb[r].n_ctx);
        sqlite3_bind_text(g->ins_root, k++, g->rb[r].feat, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(g->ins_root) == SQLITE_DONE;
    }
    for (int r = 0; ok && r < g->n_bb; r++) {
        int k = bind_unit(g->ins_be, g, ds, pi, ss);
        sqlite3_bind_int(g->ins_be, k++, g->bb[r].g);
        sqlite3_bind_int(g->ins_be, k++, g->bb[r].a);
        sqlite3_bind_text(g->ins_be, k++, g->vn[g->bb[r].vi], -1, SQLITE_STATIC);
        sqlite3_bind_double(g->ins_be, k++, g->bb[r].be);
        sqlite3_bind_double(g->ins_be, k++, g->bb[r].us);
        ok = sqlite3_step(g->ins_be) == SQLITE_DONE;
    }
    if (ok) {
        bind_unit(g->ins_done, g, ds, pi, ss);
        ok = sqlite3_step(g->ins_done) == SQLITE_DONE;
    }
    int rc = ok ? ARB_OK : sql_err(g, err);
    if (sqlite3_exec(g->db, ok ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK && !rc)
        rc = sql_err(g, err);
    return rc;
}

static bool unit_done(gen *g, const char *ds, int pi, int ss)
{
    bind_unit(g->is_done, g, ds, pi, ss);
    return sqlite3_step(g->is_done) == SQLITE_ROW;
}

static void gen_free(gen *g)
{
    sqlite3_finalize(g->ins_root), sqlite3_finalize(g->ins_be), sqlite3_finalize(g->ins_done);
    sqlite3_finalize(g->is_done);
    sqlite3_close(g->db);
    arb_tree_release(&g->t);
    free(g->p), free(g->q), free(g->p_prev), free(g->q_prev), free(g->q_root), free(g->lg);
    free(g->idx), free(g->S), free(g->par), free(g->path), free(g->rb), free(g->bb);
    for (int i = 0; i < N_VF; i++)
        arb_verifier_free(g->vf[i]);
    arb_otan_free(g->an);
    arb_draft_model_free(g->dm);
    arb_ctx_free(g->c);
    arb_model_free(g->m);
}

static int gen_init(gen *g, arb_err *err)
{
    if (sqlite3_open_v2(g->o.db, &g->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        return sql_err(g, err);
    sqlite3_busy_timeout(g->db, 600000); /* shards share the file; each holds it briefly */
    sqlite3_exec(g->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL); /* readers (training) never block */
    if (sqlite3_exec(g->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(g->db, "INSERT OR REPLACE INTO nde_root VALUES(?,?,?,?,?,?,?,?,?)", -1, &g->ins_root,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(g->db, "INSERT OR REPLACE INTO nde_be VALUES(?,?,?,?,?,?,?,?,?)", -1, &g->ins_be, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(g->db, "INSERT OR REPLACE INTO nde_done VALUES(?,?,?,?)", -1, &g->ins_done, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(g->db, "SELECT 1 FROM nde_done WHERE tag=? AND dataset=? AND prompt=? AND setting=?", -1,
                           &g->is_done, NULL) != SQLITE_OK)
        return sql_err(g, err);
    int rc = arb_gen_load(g->o.model, "cpu", g->o.threads, N_CTX, &g->m, &g->c, err);
    arb_model_info mi;
    if (!rc) {
        arb_model_get_info(g->m, &mi);
        g->V = mi.n_vocab;
        arb_draft_model_opts dmo = arb_draft_model_default_opts();
        dmo.self_layers = g->o.draft_layers;
        rc = arb_draft_model_new(g->m, &dmo, N_NODES, &g->dm, err);
    }
    arb_verifier_opts vo = arb_verifier_default_opts();
    vo.V = g->V;
    vo.n_nodes_max = N_NODES;
    if (!rc)
        rc = arb_otan_new(&vo, &g->an, err);
    int n_vn = 0; /* the lossless sampling verifiers, or those of --verifiers among them */
    for (int i = 0; !rc && i < arb_verifier_count(); i++) {
        const arb_verifier_i *vi = arb_verifier_at(i);
        if (!vi->sampling || vi->approximate || n_vn == N_VF)
            continue;
        bool want = !g->o.verifiers || !g->o.verifiers[0];
        for (const char *at = g->o.verifiers; !want && at && (at = strstr(at, vi->name)); at++)
            want = (at == g->o.verifiers || at[-1] == ',') && (at[strlen(vi->name)] == 0 || at[strlen(vi->name)] == ',');
        if (want)
            g->vn[n_vn++] = vi->name;
    }
    if (!rc && n_vn == 0)
        rc = ARB_ERR(err, ARB_E_INVAL, "--verifiers '%s': no lossless sampling verifier named (nss, naive, bv, "
                     "naivetree, spectr, specinfer, khisti, traversal)", g->o.verifiers ? g->o.verifiers : "");
    g->n_vf = n_vn;
    for (int i = 0; !rc && i < n_vn; i++)
        rc = arb_verifier_new(g->vn[i], &vo, &g->vf[i], err);
    if (!rc)
        rc = arb_tree_init(&g->t, N_NODES, err);
    const size_t nv = (size_t)N_NODES * (size_t)g->V, V = (size_t)g->V;
    if (!rc && (!(g->p = malloc(sizeof(double) * nv)) || !(g->q = malloc(sizeof(double) * nv)) ||
                !(g->lg = malloc(sizeof(float) * nv)) || !(g->p_prev = malloc(sizeof(double) * V)) ||
                !(g->q_prev = malloc(sizeof(double) * V)) || !(g->q_root = malloc(sizeof(double) * V)) ||
                !(g->idx = malloc(sizeof(int32_t) * V)) || !(g->S = malloc(sizeof(int32_t) * S_CAP)) ||
                !(g->par = malloc(sizeof(int32_t) * N_CTX)) || !(g->path = malloc(sizeof(int32_t) * N_CTX)) ||
                !(g->rb = malloc(sizeof *g->rb * (size_t)(g->o.max_new / g->o.every + 1))) ||
                !(g->bb = malloc(sizeof *g->bb * (size_t)(g->o.max_new / g->o.every + 1) * ARB_NDE_N_ACTIONS * N_VF))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "nde data: out of memory");
    return rc;
}

int arb_nde_data_run(const arb_nde_data_opts *o, FILE *progress, arb_err *err)
{
    if (o->every < 1 || o->max_new < 1 || o->n_tree < 1 || o->limit < 0 || o->offset < 0 || o->n_shards < 1 ||
        o->shard < 0 || o->shard >= o->n_shards || !o->db || !o->tag || !o->tag[0])
        return ARB_ERR(err, ARB_E_INVAL, "nde data: bad options (every %d, max-new %d, n-tree %d, limit %d, shard "
                       "%d/%d; --db and --tag required)", o->every, o->max_new, o->n_tree, o->limit, o->shard,
                       o->n_shards);
    gen g = {.o = *o};
    int rc = gen_init(&g, err);
    char dir[4096], names[512];
    if (!rc)
        rc = arb_dataset_dir(o->data_dir, dir, sizeof dir, err);
    if (!rc && (rc = sqlite3_exec(g.db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) == SQLITE_OK) {
        rc = meta(&g, progress, err);
        rc = sqlite3_exec(g.db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK && !rc ? sql_err(&g, err)
                                                                                                  : rc;
    } else if (rc > 0) {
        rc = sql_err(&g, err);
    }
    snprintf(names, sizeof names, "%s", o->datasets);
    for (char *tp = NULL, *ds = strtok_r(names, ",", &tp); !rc && ds; ds = strtok_r(NULL, ",", &tp)) {
        arb_dataset *d = NULL;
        if ((rc = arb_dataset_open(dir, ds, NULL, &d, err)))
            break;
        for (int ss = 0; !rc && ss < o->n_settings; ss++) {
            g.sm = (arb_sampling){.temperature = o->temperature[ss], .top_k = 0, .top_p = o->top_p[ss]};
            for (int pi = o->offset; !rc && pi < o->offset + o->limit && (size_t)pi < arb_dataset_count(d); pi++) {
                if (pi % o->n_shards != o->shard || unit_done(&g, ds, pi, ss))
                    continue;
                const double t0 = now_us();
                int n_roots = 0;
                g.n_rb = g.n_bb = 0;
                rc = unit(&g, arb_dataset_get(d, (size_t)pi)->turns[0], pi, &n_roots, err);
                if (!rc)
                    rc = write_unit(&g, ds, pi, ss, err);
                if (!rc && progress)
                    fprintf(progress, "nde data: %s prompt %d setting T %.2g top-p %.2g: %d roots, %.1f s\n", ds, pi,
                            g.sm.temperature, g.sm.top_p, n_roots, (now_us() - t0) / 1e6);
            }
        }
        arb_dataset_free(d);
    }
    gen_free(&g);
    return rc;
}
