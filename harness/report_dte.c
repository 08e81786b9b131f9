/* report_dte.c — the DTE paper's Tables 2 and 3 (part of the report module, table "dte").
 *
 * The paper (Thomas et al. 2026, §4.2) reports, per verification method, block efficiency
 * (Table 2) and throughput (Table 3): "for each set of sampling parameters and dataset, we
 * select the branching factor and block length that maximizes the block-efficiency or
 * throughput", then averages over datasets and sampling settings (Appendix F breaks the
 * average down per setting). Here a verifier is a method id (`base_method`: the label before
 * the sweep suffix) of a draft-model run (drafter "draft"); its shape (k, l, b) = (paths,
 * trunk, branch_len) comes from the run's canonical cell JSON. Runs of one shape with several
 * seeds count as one shape (their values are averaged). τ and tok/s pick their best shape
 * separately, as the paper's two tables do. Columns: one group per sampling setting
 * (temperature, top-p, top-k: the whole key, so T 1 / top-p 0.9 is not T 1 / top-p 1),
 * ordered like the paper (top-p 1 by temperature, then top-p < 1), plus "Avg." over settings.
 * Each cell is the mean over datasets of the best value, with the winning shape per dataset
 * as its note, in dataset order. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define DTE_MAX 64 /* settings, datasets, verifier rows: each at most this many */

typedef struct dte_key { double t, p; int k; } dte_key;

typedef struct dte {
    int *set, *ds, *row;   /* per run: setting, dataset and row index, -1 = not a draft run */
    char (*shape)[24];     /* per run: "k4b6", "k2l2b4" */
    dte_key keys[DTE_MAX];
    const char *dss[DTE_MAX];
    const char *rows[DTE_MAX][2]; /* model, verifier */
    bool ref[DTE_MAX];     /* an AR row (drafter "none"): a reference, never bold */
    int n_set, n_ds, n_row;
} dte;

void arb_report_setting(const arb_run_info *r, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "T=%g", r->temperature);
    if (r->top_p < 1 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " p=%g", r->top_p);
    if (r->top_k > 0 && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " k=%d", r->top_k);
}

static bool is_draft(const arb_run_info *r) { return r->drafter && !strcmp(r->drafter, "draft"); }
static bool is_ar(const arb_run_info *r) { return r->drafter && !strcmp(r->drafter, "none"); }

bool arb_report_is_dte(const arb_rctx *c)
{
    int n_draft = 0;
    for (int i = 0; i < c->n; i++) {
        if (!arb_report_model_ok(c, i) || !strcmp(c->runs[i].drafter, "none"))
            continue; /* AR baselines do not decide the layout */
        if (!is_draft(&c->runs[i]))
            return false;
        n_draft++;
    }
    return n_draft > 0;
}

/* Paper order: top-p 1 (temperature sweep) before the top-p sweep; then T, top-p, top-k. */
static int key_cmp(const dte_key *a, const dte_key *b)
{
    int ga = a->p < 1, gb = b->p < 1;
    if (ga != gb)
        return ga - gb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->p != b->p)
        return a->p < b->p ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

/* (k, l, b) of a draft run from its cell JSON's method object: "k4b6", "k2l2b4", or "?". */
static int run_shape(sqlite3 *db, const char *run_key, char out[24], arb_err *err)
{
    sqlite3_stmt *st = NULL;
    snprintf(out, 24, "?");
    if (sqlite3_prepare_v2(db, "SELECT cell FROM runs WHERE run_key = ?", -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "report dte: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, run_key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        cJSON *cell = cJSON_Parse((const char *)sqlite3_column_text(st, 0));
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(cell, "method");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(m, "paths");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(m, "trunk");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "branch_len");
        const cJSON *sel = cJSON_GetObjectItemCaseSensitive(m, "selector");
        if (cJSON_IsString(sel) && strcmp(sel->valuestring, "fixed")) { /* a per-step shape (NDE) */
            snprintf(out, 24, "%s", sel->valuestring);
        } else if (cJSON_IsNumber(k) && cJSON_IsNumber(b)) {
            int lv = cJSON_IsNumber(l) ? l->valueint : 0;
            if (lv > 0)
                snprintf(out, 24, "k%dl%db%d", k->valueint, lv, b->valueint);
            else
                snprintf(out, 24, "k%db%d", k->valueint, b->valueint);
        }
        cJSON_Delete(cell);
    }
    sqlite3_finalize(st);
    return ARB_OK;
}

static int index_runs(arb_rctx *c, dte *x, arb_err *err)
{
    for (int i = 0; i < c->n; i++) {
        const arb_run_info *r = &c->runs[i];
        x->set[i] = x->ds[i] = x->row[i] = -1;
        if (!arb_report_model_ok(c, i) || (!is_draft(r) && !is_ar(r)))
            continue;
        dte_key k = {r->temperature, r->top_p, r->top_k};
        int s = 0, d = 0, w = 0;
        while (s < x->n_set && key_cmp(&x->keys[s], &k))
            s++;
        while (d < x->n_ds && strcmp(x->dss[d], r->dataset))
            d++;
        while (w < x->n_row && (strcmp(x->rows[w][0], r->model) || strcmp(x->rows[w][1], r->base_method)))
            w++;
        if (s == DTE_MAX || d == DTE_MAX || w == DTE_MAX)
            return ARB_ERR(err, ARB_E_INVAL, "report dte: more than %d settings, datasets or verifiers",
                           DTE_MAX);
        if (s == x->n_set)
            x->keys[x->n_set++] = k;
        if (d == x->n_ds)
            x->dss[x->n_ds++] = r->dataset;
        if (w == x->n_row)
            x->rows[w][0] = r->model, x->rows[w][1] = r->base_method, x->ref[w] = is_ar(r), x->n_row++;
        x->ds[i] = d, x->row[i] = w;
        int rc = is_ar(r) ? ARB_OK : run_shape(c->db, r->run_key, x->shape[i], err);
        if (rc)
            return rc;
    }
    /* per model (in order of first appearance): its verifiers in run order, then its AR row */
    int perm[DTE_MAX], np = 0, newi[DTE_MAX];
    for (int w = 0; w < x->n_row; w++) {
        bool seen = false;
        for (int v = 0; v < w && !seen; v++)
            seen = !strcmp(x->rows[v][0], x->rows[w][0]);
        for (int pass = 0; !seen && pass < 2; pass++)
            for (int v = w; v < x->n_row; v++)
                if (!strcmp(x->rows[v][0], x->rows[w][0]) && x->ref[v] == (pass == 1))
                    perm[np++] = v;
    }
    const char *rows[DTE_MAX][2] = {{0}};
    bool ref[DTE_MAX] = {0};
    for (int k = 0; k < np; k++) {
        rows[k][0] = x->rows[perm[k]][0], rows[k][1] = x->rows[perm[k]][1], ref[k] = x->ref[perm[k]];
        newi[perm[k]] = k;
    }
    memcpy(x->rows, rows, sizeof rows), memcpy(x->ref, ref, sizeof ref);
    for (int i = 0; i < c->n; i++)
        x->row[i] = x->row[i] < 0 ? -1 : newi[x->row[i]];
    /* settings in paper order: sort the keys, then give every run its sorted index */
    for (int a = 1; a < x->n_set; a++)
        for (int b = a; b > 0 && key_cmp(&x->keys[b - 1], &x->keys[b]) > 0; b--) {
            dte_key t = x->keys[b];
            x->keys[b] = x->keys[b - 1], x->keys[b - 1] = t;
        }
    for (int i = 0; i < c->n; i++) {
        if (x->row[i] < 0)
            continue;
        dte_key k = {c->runs[i].temperature, c->runs[i].top_p, c->runs[i].top_k};
        for (int s = 0; s < x->n_set; s++)
            if (!key_cmp(&x->keys[s], &k))
                x->set[i] = s;
    }
    return ARB_OK;
}

/* Best shape of one (row, setting, dataset) for metric m: the shape with the highest mean over
   its runs (seeds). *v = NAN when no run has a value. Ties: the shape seen first. */
static int best_shape(arb_rctx *c, const dte *x, int w, int s, int d, arb_metric m, double *v,
                      const char **shape, arb_err *err)
{
    *v = NAN;
    *shape = NULL;
    for (int i = 0; i < c->n; i++) {
        if (x->row[i] != w || x->set[i] != s || x->ds[i] != d)
            continue;
        bool first = true; /* average this shape once, at its first run */
        for (int j = 0; j < i && first; j++)
            first = !(x->row[j] == w && x->set[j] == s && x->ds[j] == d && !strcmp(x->shape[j], x->shape[i]));
        if (!first)
            continue;
        double sum = 0;
        int n = 0;
        for (int j = i; j < c->n; j++) {
            if (x->row[j] != w || x->set[j] != s || x->ds[j] != d || strcmp(x->shape[j], x->shape[i]))
                continue;
            arb_rcell cell = {0};
            int rc = arb_report_cell(c, j, m, &cell, err);
            if (rc)
                return rc;
            if (cell.has && !isnan(cell.v))
                sum += cell.v, n++;
        }
        if (n && (isnan(*v) || sum / n > *v))
            *v = sum / n, *shape = x->shape[i];
    }
    return ARB_OK;
}

static int fill(arb_rctx *c, const dte *x, arb_grid *g, arb_err *err)
{
    static const arb_metric ms[2] = {ARB_METRIC_TAU, ARB_METRIC_TPS};
    for (int w = 0; w < x->n_row; w++) {
        int r = arb_grid_add_row(g, x->rows[w]);
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        g->rule[r] = w > 0 && strcmp(x->rows[w][0], x->rows[w - 1][0]);
        for (int h = 0; h < 2; h++) {
            double ssum = 0;
            int sn = 0;
            for (int s = 0; s < x->n_set; s++) {
                arb_rcell *cell = arb_grid_at(g, r, 2 * s + h);
                double sum = 0;
                int n = 0;
                for (int d = 0; d < x->n_ds; d++) {
                    double v;
                    const char *shape;
                    int rc = best_shape(c, x, w, s, d, ms[h], &v, &shape, err);
                    if (rc)
                        return rc;
                    size_t at = strlen(cell->note);
                    if (!x->ref[w])
                        snprintf(cell->note + at, sizeof cell->note - at, "%s%s", d ? "; " : "",
                                 shape ? shape : "-");
                    if (!isnan(v))
                        sum += v, n++;
                }
                cell->has = n > 0;
                cell->v = n ? sum / n : NAN;
                if (!n)
                    cell->note[0] = 0;
                if (n)
                    ssum += cell->v, sn++;
            }
            arb_rcell *avg = arb_grid_at(g, r, 2 * x->n_set + h);
            avg->has = sn > 0;
            avg->v = sn ? ssum / sn : NAN;
        }
    }
    /* best per column among the verifiers of each model block, as in table3 */
    for (int r0 = 0; r0 < g->nr;) {
        int r1 = r0 + 1;
        while (r1 < g->nr && !g->rule[r1] && !x->ref[r1])
            r1++;
        for (int j = 0; j < g->nc && !x->ref[r0]; j++)
            arb_grid_bold_max(g, j, r0, r1);
        while (r1 < g->nr && !g->rule[r1] && x->ref[r1])
            r1++;
        r0 = r1;
    }
    return ARB_OK;
}

int arb_report_dte(arb_rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Verifier"};
    dte x = {0};
    size_t n = (size_t)(c->n ? c->n : 1);
    x.set = malloc(n * sizeof *x.set), x.ds = malloc(n * sizeof *x.ds), x.row = malloc(n * sizeof *x.row);
    x.shape = calloc(n, sizeof *x.shape);
    int rc = x.set && x.ds && x.row && x.shape ? index_runs(c, &x, err) : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    bool any = false;
    for (int w = 0; w < x.n_row; w++)
        any |= !x.ref[w];
    if (!rc && !any)
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "report dte: no draft-model runs (drafter \"draft\") in the database");
    if (!rc && arb_grid_init(g, 2, rh, 2 * x.n_set + 2))
        rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int s = 0; !rc && s <= x.n_set; s++) {
        char lab[64] = "Avg.";
        if (s < x.n_set) {
            arb_run_info ri = {.temperature = x.keys[s].t, .top_p = x.keys[s].p, .top_k = x.keys[s].k};
            arb_report_setting(&ri, lab, sizeof lab);
        }
        if (arb_grid_set_col(g, 2 * s, lab, "τ") || arb_grid_set_col(g, 2 * s + 1, lab, "tok/s"))
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    if (!rc) {
        g->notes = true;
        int at = snprintf(g->caption, sizeof g->caption,
                          "DTE Tables 2/3: per verifier, block efficiency τ and tokens/s at the best "
                          "(k,b) per dataset and setting (chosen separately for τ and tok/s), averaged "
                          "over %d dataset%s (AR: the plain decoding reference); winners (k paths, l trunk, "
                          "b branch) in dataset order:",
                          x.n_ds, x.n_ds == 1 ? "" : "s");
        for (int d = 0; d < x.n_ds && at > 0 && (size_t)at < sizeof g->caption; d++)
            at += snprintf(g->caption + at, sizeof g->caption - (size_t)at, "%s %s", d ? "," : "",
                           arb_report_ds_title(x.dss[d]));
        rc = fill(c, &x, g, err);
    }
    free(x.set), free(x.ds), free(x.row), free(x.shape);
    return rc;
}
