/* metrics.c — see metrics.h. Definitions follow docs/spec/drafting.md §1.7 and §4.8–4.9. */
#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
#include "resample.h"
#include "verifiers/verifier.h"

enum { SRC_PLD = 1, SRC_TR = 2 }; /* arb_src values (tree.h) */

static const char *const metric_names[ARB_METRIC_COUNT] = {
    "tau", "tps", "speedup", "p_s", "p_t", "spine_share", "acc_len", "lossless", "n_prompts", "tps_cpu",
    "speedup_cpu", "tps_decode", "speedup_decode", "repeat16",
};

bool arb_metric_paired(arb_metric m)
{
    return m == ARB_METRIC_SPEEDUP || m == ARB_METRIC_SPEEDUP_CPU || m == ARB_METRIC_SPEEDUP_DECODE;
}

const char *arb_metric_name(arb_metric m)
{
    return (unsigned)m < ARB_METRIC_COUNT ? metric_names[m] : "?";
}

int arb_metric_parse(const char *name, arb_metric *out, arb_err *err)
{
    for (int i = 0; i < ARB_METRIC_COUNT; i++)
        if (!strcmp(name, metric_names[i])) {
            *out = (arb_metric)i;
            return ARB_OK;
        }
    return ARB_ERR(err, ARB_E_INVAL,
                   "unknown metric '%s' (known: tau tps speedup p_s p_t spine_share acc_len "
                   "lossless n_prompts tps_cpu speedup_cpu tps_decode speedup_decode repeat16)",
                   name);
}

static char *dup_col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}

void arb_metrics_free_runs(arb_run_info *runs, int n)
{
    if (!runs)
        return;
    for (int i = 0; i < n; i++) {
        arb_run_info *r = &runs[i];
        char *f[] = {r->run_key, r->method,   r->base_method, r->model,      r->model_sha256,
                     r->dataset, r->drafter,  r->topology,    r->sweep_json, r->config_name};
        for (size_t j = 0; j < sizeof f / sizeof f[0]; j++)
            free(f[j]);
    }
    free(runs);
}

/* A run whose verifier is not lossless (typical acceptance at T > 0) carries the marker in its
   method labels, so every table that prints them shows it (docs/sampling.md, "Typical"). */
#define ARB_APPROX_MARK " (approximate)"
static int mark_approximate(arb_run_info *r, const char *verifier)
{
    const arb_verifier_i *vi = verifier ? arb_verifier_find(verifier) : NULL;
    if (!vi || !vi->approximate)
        return ARB_OK;
    char **lab[] = {&r->method, &r->base_method};
    for (int i = 0; i < 2; i++) {
        if (strstr(*lab[i], ARB_APPROX_MARK))
            continue;
        size_t n = strlen(*lab[i]);
        char *m = realloc(*lab[i], n + sizeof ARB_APPROX_MARK);
        if (!m)
            return ARB_E_NOMEM;
        memcpy(m + n, ARB_APPROX_MARK, sizeof ARB_APPROX_MARK);
        *lab[i] = m;
    }
    return ARB_OK;
}

int arb_metrics_list_runs(sqlite3 *db, arb_run_info **out, int *n, arb_err *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT run_key, method, base_method, model, model_sha256, dataset,"
                           " drafter, topology, sweep, config_name, max_new_tokens, top_k,"
                           " temperature, top_p, seed, verifier FROM runs ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "runs: %s", sqlite3_errmsg(db));
    int cap = 0, cnt = 0, rc = ARB_OK;
    arb_run_info *v = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            arb_run_info *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "runs: out of memory");
                break;
            }
            v = nv;
        }
        arb_run_info *r = &v[cnt++];
        memset(r, 0, sizeof *r);
        char **f[] = {&r->run_key, &r->method,   &r->base_method, &r->model,      &r->model_sha256,
                      &r->dataset, &r->drafter,  &r->topology,    &r->sweep_json, &r->config_name};
        for (int j = 0; j < 10; j++)
            if (!(*f[j] = dup_col(st, j)))
                rc = ARB_ERR(err, ARB_E_NOMEM, "runs: out of memory");
        r->max_new_tokens = sqlite3_column_int(st, 10);
        r->top_k = sqlite3_column_int(st, 11);
        r->temperature = sqlite3_column_double(st, 12);
        r->top_p = sqlite3_column_double(st, 13);
        r->seed = sqlite3_column_int64(st, 14);
        if (!rc && r->temperature > 0 && (rc = mark_approximate(r, (const char *)sqlite3_column_text(st, 15))))
            rc = ARB_ERR(err, rc, "runs: out of memory");
        if (rc)
            break;
    }
    sqlite3_finalize(st);
    if (rc) {
        arb_metrics_free_runs(v, cnt);
        return rc;
    }
    *out = v;
    *n = cnt;
    return ARB_OK;
}

/* Same model, dataset and sampling: the runs a table compares side by side. */
static int same_cell(const arb_run_info *a, const arb_run_info *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->model_sha256, b->model_sha256) &&
           !strcmp(a->dataset, b->dataset) && a->max_new_tokens == b->max_new_tokens &&
           a->temperature == b->temperature && a->top_p == b->top_p && a->top_k == b->top_k &&
           a->seed == b->seed;
}

int arb_metrics_find_ar(const arb_run_info *runs, int n, int i)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(runs[j].drafter, "none") && same_cell(&runs[i], &runs[j]))
            return j;
    return -1;
}

int arb_metrics_find_sibling(const arb_run_info *runs, int n, int i, const char *method)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(runs[j].method, method) && same_cell(&runs[i], &runs[j]))
            return j;
    return -1;
}

static int load_prompts(sqlite3 *db, const char *key, arb_run_stats *s, arb_err *err)
{
    sqlite3_stmt *st = NULL;
    static const char sql[] =
        "SELECT p.prompt_id, p.n_gen, p.n_calls, p.wall_us, COALESCE(p.lossless,-1),"
        " COUNT(s.step), TOTAL(s.accepted), TOTAL(s.n_spine), TOTAL(s.acc_spine),"
        " TOTAL(CASE WHEN s.category=2 THEN s.accepted ELSE 0 END),"
        " TOTAL(s.acc_pld), TOTAL(s.acc_tr), TOTAL(s.acc_draft), TOTAL(s.acc_head),"
        " TOTAL(s.acc_lade), TOTAL(s.acc_lade_window), TOTAL(s.acc_rest),"
        " TOTAL(s.prop_pld), TOTAL(s.prop_tr), TOTAL(s.prop_draft), TOTAL(s.prop_head),"
        " TOTAL(s.prop_lade), TOTAL(s.prop_lade_window), TOTAL(s.prop_rest), COALESCE(p.cpu_us,-1),"
        " COALESCE(p.prefill_us,-1)"
        " FROM prompts p LEFT JOIN steps s ON s.run_key=p.run_key AND s.prompt_id=p.prompt_id"
        " WHERE p.run_key=? GROUP BY p.prompt_id ORDER BY p.prompt_id";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "prompts: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int cap = 0, rc = ARB_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (s->n == cap) {
            cap = cap ? 2 * cap : 64;
            arb_prompt_stat *np = realloc(s->p, (size_t)cap * sizeof *np);
            if (!np) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "prompts: out of memory");
                break;
            }
            s->p = np;
        }
        arb_prompt_stat *p = &s->p[s->n++];
        memset(p, 0, sizeof *p);
        if (!(p->prompt_id = dup_col(st, 0))) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "prompts: out of memory");
            break;
        }
        p->n_gen = sqlite3_column_int64(st, 1);
        p->n_calls = sqlite3_column_int64(st, 2);
        p->wall_us = sqlite3_column_int64(st, 3);
        p->lossless = sqlite3_column_int(st, 4);
        p->steps = sqlite3_column_int64(st, 5);
        p->accepted = (int64_t)sqlite3_column_double(st, 6);
        p->n_spine = (int64_t)sqlite3_column_double(st, 7);
        p->acc_spine = (int64_t)sqlite3_column_double(st, 8);
        p->acc_spine_cont = (int64_t)sqlite3_column_double(st, 9);
        for (int j = 1; j < ARB_STORE_NSRC; j++) {
            p->acc_src[j] = (int64_t)sqlite3_column_double(st, 9 + j);
            p->prop_src[j] = (int64_t)sqlite3_column_double(st, 9 + ARB_STORE_NSRC - 1 + j);
        }
        p->cpu_us = sqlite3_column_int64(st, 9 + 2 * (ARB_STORE_NSRC - 1) + 1);
        p->prefill_us = sqlite3_column_int64(st, 9 + 2 * (ARB_STORE_NSRC - 1) + 2);
    }
    sqlite3_finalize(st);
    return rc;
}

int64_t arb_metrics_repeat_count(const int32_t *ids, int n, int w)
{
    if (w < 1 || n < w)
        return 0;
    /* Open addressing over the windows seen so far, keyed by arb_decode_hash (FNV-1a over the
       ids); a slot holds a window's end + 1 (0 = empty) and its hash, and a hash match is
       confirmed by comparing the ids, so a collision never counts a repeat. */
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    int32_t *end = calloc(cap, sizeof *end);
    uint64_t *hs = malloc(cap * sizeof *hs);
    if (!end || !hs) {
        free(end);
        free(hs);
        return -1;
    }
    int64_t rep = 0;
    for (int i = w - 1; i < n; i++) {
        const int32_t *win = ids + i - w + 1;
        const uint64_t h = arb_decode_hash(win, w);
        size_t at = (size_t)h & (cap - 1);
        bool seen = false;
        for (; end[at]; at = (at + 1) & (cap - 1))
            if (hs[at] == h && !memcmp(ids + end[at] - w, win, (size_t)w * sizeof *win)) {
                seen = true;
                break;
            }
        if (seen)
            rep++;
        else
            end[at] = i + 1, hs[at] = h;
    }
    free(end);
    free(hs);
    return rep;
}

/* Fill n_ids and n_repeat of s's prompts from the tokens table (both sorted by prompt_id). */
static int load_repeats(sqlite3 *db, const char *key, arb_run_stats *s, arb_err *err)
{
    for (int i = 0; i < s->n; i++)
        s->p[i].n_ids = -1, s->p[i].n_repeat = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT prompt_id, ids FROM tokens WHERE run_key=? ORDER BY prompt_id", -1, &st,
                           NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "tokens: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int32_t *buf = NULL;
    size_t cap = 0;
    int rc = ARB_OK, i = 0;
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        const char *pid = (const char *)sqlite3_column_text(st, 0);
        while (pid && i < s->n && strcmp(s->p[i].prompt_id, pid) < 0)
            i++;
        if (!pid || i == s->n || strcmp(s->p[i].prompt_id, pid))
            continue; /* ids without a prompts row are not counted */
        const size_t nb = (size_t)sqlite3_column_bytes(st, 1), n = nb / sizeof(int32_t);
        if (n > cap) { /* the blob's bytes are not aligned for int32: copied (little-endian, store.c) */
            int32_t *nbuf = realloc(buf, n * sizeof *nbuf);
            if (!nbuf) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "tokens: out of memory");
                break;
            }
            buf = nbuf, cap = n;
        }
        if (n)
            memcpy(buf, sqlite3_column_blob(st, 1), n * sizeof *buf);
        const int64_t rep = arb_metrics_repeat_count(buf, (int)n, ARB_METRICS_REPEAT_W);
        if (rep < 0)
            rc = ARB_ERR(err, ARB_E_NOMEM, "tokens: out of memory");
        s->p[i].n_ids = (int64_t)n, s->p[i].n_repeat = rep;
    }
    free(buf);
    sqlite3_finalize(st);
    return rc;
}

/* Acceptance by depth. Depth d was within reach on a step when the walk accepted d-1 nodes
   and the last of them had children (stop_fanout > 0), or accepted more. Rows written before
   schema v2 have no stop_fanout: for those, "the tree was at least d deep" stands in, exact for
   chains but an over-count for trees (a deep tree elsewhere does not put depth d under the
   accepted path). */
static int load_depths(sqlite3 *db, const char *key, arb_run_stats *s, arb_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT s.accepted, s.tree_depth, s.stop_fanout > 0, s.stop_fanout IS NULL, COUNT(*)"
                           " FROM steps s JOIN prompts p"
                           " ON s.run_key=p.run_key AND s.prompt_id=p.prompt_id WHERE s.run_key=?"
                           " GROUP BY 1, 2, 3, 4",
                           -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "steps: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int k = sqlite3_column_int(st, 0), depth = sqlite3_column_int(st, 1);
        bool open = sqlite3_column_int(st, 2) != 0, legacy = sqlite3_column_int(st, 3) != 0;
        int64_t c = sqlite3_column_int64(st, 4);
        if (k < 0 || depth < 0)
            continue;
        s->hist[k < ARB_METRICS_DMAX ? k : ARB_METRICS_DMAX] += c;
        for (int d = 1; d <= depth && d <= ARB_METRICS_DMAX; d++) {
            if (k >= d || (k == d - 1 && (legacy || open)))
                s->depth_reach[d] += c;
            if (k >= d)
                s->depth_acc[d] += c;
        }
    }
    sqlite3_finalize(st);
    return ARB_OK;
}

int arb_metrics_load(sqlite3 *db, const arb_run_info *info, arb_run_stats *out, arb_err *err)
{
    memset(out, 0, sizeof *out);
    out->info = info;
    int rc = load_prompts(db, info->run_key, out, err);
    if (!rc)
        rc = load_repeats(db, info->run_key, out, err);
    if (!rc)
        rc = load_depths(db, info->run_key, out, err);
    if (rc)
        arb_run_stats_release(out);
    return rc;
}

void arb_run_stats_release(arb_run_stats *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        free(s->p[i].prompt_id);
    free(s->p);
    memset(s, 0, sizeof *s);
}

/* Align k runs on their shared prompt ids (each sorted): writes m rows of k indices. */
static int align(const arb_run_stats *const *rs, int k, int *idx)
{
    int pos[3] = {0, 0, 0}, m = 0;
    for (;;) {
        for (int j = 0; j < k; j++)
            if (pos[j] >= rs[j]->n)
                return m;
        const char *mx = rs[0]->p[pos[0]].prompt_id;
        for (int j = 1; j < k; j++)
            if (strcmp(rs[j]->p[pos[j]].prompt_id, mx) > 0)
                mx = rs[j]->p[pos[j]].prompt_id;
        int all = 1;
        for (int j = 0; j < k; j++) {
            while (pos[j] < rs[j]->n && strcmp(rs[j]->p[pos[j]].prompt_id, mx) < 0)
                pos[j]++;
            if (pos[j] >= rs[j]->n)
                return m;
            all &= !strcmp(rs[j]->p[pos[j]].prompt_id, mx);
        }
        if (all) {
            for (int j = 0; j < k; j++)
                idx[m * k + j] = pos[j]++;
            m++;
        }
    }
}

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

/* Metric of run r over rows sel[0..m) (indices into r->p, stride k, column col). */
static double eval(const arb_run_stats *r, const arb_run_stats *ar, arb_metric met, const int *sel,
                   int m, int k, int col)
{
    double g = 0, c = 0, w = 0, st = 0, acc = 0, ns = 0, as = 0, sc = 0, ap = 0, pp = 0, at = 0,
           pt = 0, ll = 0, lk = 0, cpu = 0, dec = 0, gd = 0, rep = 0, ids = 0;
    bool cpu_known = true, dec_known = true, rep_known = true;
    for (int i = 0; i < m; i++) {
        const arb_prompt_stat *p = &r->p[sel[i * k + col]];
        g += p->n_gen, c += p->n_calls, w += p->wall_us, st += p->steps, acc += p->accepted;
        ns += p->n_spine, as += p->acc_spine, sc += p->acc_spine_cont;
        ap += p->acc_src[SRC_PLD], pp += p->prop_src[SRC_PLD];
        at += p->acc_src[SRC_TR], pt += p->prop_src[SRC_TR];
        if (p->lossless >= 0)
            ll += p->lossless == 1, lk++;
        cpu += (double)p->cpu_us, cpu_known = cpu_known && p->cpu_us > 0;
        /* after the first token: the prefill produces it (decode.c's prefill_us ends there) */
        gd += (double)(p->n_gen - 1), dec += (double)(p->wall_us - p->prefill_us);
        dec_known = dec_known && p->prefill_us >= 0;
        rep += (double)p->n_repeat, ids += (double)p->n_ids, rep_known = rep_known && p->n_ids >= 0;
    }
    switch (met) {
    case ARB_METRIC_TAU: return ratio(g, c);
    case ARB_METRIC_TPS: return ratio(g, w / 1e6);
    case ARB_METRIC_SPEEDUP:
        return ar ? ratio(ratio(g, w), eval(ar, NULL, ARB_METRIC_TPS, sel, m, k, 1 - col) / 1e6)
                  : NAN;
    case ARB_METRIC_P_S: return ns > 0 ? as / ns : ratio(ap, pp);
    case ARB_METRIC_P_T: return ratio(at, pt);
    case ARB_METRIC_SPINE_SHARE: return ratio(sc, acc);
    case ARB_METRIC_ACC_LEN: return ratio(acc, st);
    case ARB_METRIC_LOSSLESS: return ratio(ll, lk);
    case ARB_METRIC_N_PROMPTS: return m;
    case ARB_METRIC_TPS_CPU: return cpu_known ? ratio(g, cpu / 1e6) : NAN;
    case ARB_METRIC_SPEEDUP_CPU:
        return ar && cpu_known ? ratio(ratio(g, cpu), eval(ar, NULL, ARB_METRIC_TPS_CPU, sel, m, k, 1 - col) / 1e6)
                               : NAN;
    case ARB_METRIC_TPS_DECODE: return dec_known ? ratio(gd, dec / 1e6) : NAN;
    case ARB_METRIC_SPEEDUP_DECODE:
        return ar && dec_known
                   ? ratio(ratio(gd, dec), eval(ar, NULL, ARB_METRIC_TPS_DECODE, sel, m, k, 1 - col) / 1e6)
                   : NAN;
    case ARB_METRIC_REPEAT16: return rep_known ? ratio(rep, ids) : NAN;
    default: return NAN;
    }
}


/* Percentile bootstrap: fn evaluates one resample given as k-column rows. */
typedef double (*stat_fn)(const void *ctx, const int *rows, int m, int k);

static void bootstrap(const void *ctx, stat_fn fn, const int *rows, int m, int k, int n_boot,
                      uint64_t seed, arb_ci *out)
{
    out->v = fn(ctx, rows, m, k);
    out->lo = out->hi = NAN;
    if (n_boot <= 0 || m < 2)
        return;
    int *rs = malloc((size_t)m * k * sizeof *rs);
    double *vals = malloc((size_t)n_boot * sizeof *vals);
    if (!rs || !vals) {
        free(rs);
        free(vals);
        return;
    }
    uint64_t x = seed ^ 0x5eedb007ull;
    int nv = 0;
    for (int b = 0; b < n_boot; b++) {
        for (int i = 0; i < m; i++) {
            int j = (int)(arb_splitmix64(&x) % (uint64_t)m);
            memcpy(&rs[i * k], &rows[j * k], (size_t)k * sizeof *rs);
        }
        double v = fn(ctx, rs, m, k);
        if (!isnan(v))
            vals[nv++] = v;
    }
    if (nv > 0) {
        qsort(vals, (size_t)nv, sizeof *vals, arb_cmp_double);
        out->lo = arb_quantile_sorted(vals, nv, 0.025);
        out->hi = arb_quantile_sorted(vals, nv, 0.975);
    }
    free(rs);
    free(vals);
}

struct one_ctx { const arb_run_stats *r, *ar; arb_metric m; };

static double one_fn(const void *ctx, const int *rows, int m, int k)
{
    const struct one_ctx *c = ctx;
    return eval(c->r, c->ar, c->m, rows, m, k, 0);
}

void arb_metrics_ci(const arb_run_stats *r, const arb_run_stats *ar, arb_metric m, int n_boot,
                    uint64_t seed, arb_ci *out)
{
    out->v = out->lo = out->hi = NAN;
    bool paired = arb_metric_paired(m);
    if (paired && (!ar || ar->n == 0))
        return;
    int k = paired ? 2 : 1;
    int *rows = malloc((size_t)(r->n > 0 ? r->n : 1) * k * sizeof *rows);
    if (!rows)
        return;
    int n;
    if (paired) {
        const arb_run_stats *rs[2] = {r, ar};
        n = align(rs, 2, rows);
    } else {
        n = r->n;
        for (int i = 0; i < n; i++)
            rows[i] = i;
    }
    struct one_ctx c = {r, paired ? ar : NULL, m};
    if (n > 0)
        bootstrap(&c, one_fn, rows, n, k, m == ARB_METRIC_N_PROMPTS ? 0 : n_boot, seed, out);
    free(rows);
}

struct syn_ctx { const arb_run_stats *a, *b, *c; };

static double syn_fn(const void *ctx, const int *rows, int m, int k)
{
    const struct syn_ctx *s = ctx;
    double ta = eval(s->a, NULL, ARB_METRIC_TAU, rows, m, k, 0);
    double tb = eval(s->b, NULL, ARB_METRIC_TAU, rows, m, k, 1);
    double tc = eval(s->c, NULL, ARB_METRIC_TAU, rows, m, k, 2);
    return ratio(ta, fmax(tb, tc));
}

void arb_metrics_synergy(const arb_run_stats *a, const arb_run_stats *b, const arb_run_stats *c,
                         int n_boot, uint64_t seed, arb_ci *out)
{
    out->v = out->lo = out->hi = NAN;
    int *rows = malloc((size_t)(a->n > 0 ? a->n : 1) * 3 * sizeof *rows);
    if (!rows)
        return;
    const arb_run_stats *rs[3] = {a, b, c};
    int n = align(rs, 3, rows);
    struct syn_ctx ctx = {a, b, c};
    if (n > 0)
        bootstrap(&ctx, syn_fn, rows, n, 3, n_boot, seed, out);
    free(rows);
}
