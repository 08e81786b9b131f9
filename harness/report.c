/* report.c — see report.h. Each table is a function that fills a grid (report_int.h);
 * report_fmt.c writes grids. Adding a table: one builder here and one row in `tables`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "report_int.h"

typedef arb_rctx rctx;

typedef struct strlist { const char *v[256]; int n; } strlist;

static void uniq_add(strlist *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return;
    if (l->n < 256)
        l->v[l->n++] = s;
}

arb_report_opts arb_report_default_opts(void)
{
    return (arb_report_opts){.table = "auto", .fmt = ARB_FMT_MD, .rows = "model,method",
                             .cols = "dataset", .metric = ARB_METRIC_TAU, .spine = "GOOSE",
                             .iso3 = "Iso3", .iso5 = "Iso5", .ref = "GOOSE", .pld = "PLD",
                             .tr = "TR", .n_boot = 1000};
}

int arb_report_parse_fmt(const char *s, arb_report_fmt *out, arb_err *err)
{
    static const char *const names[] = {"md", "csv", "tex", "json"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) {
            *out = (arb_report_fmt)i;
            return ARB_OK;
        }
    return ARB_ERR(err, ARB_E_INVAL, "unknown format '%s' (md, csv, tex, json)", s);
}

/* Paper-style dataset names (the GOOSE and DTE tables' headers); others print as they are. */
const char *arb_report_ds_title(const char *id)
{
    static const char *const map[][2] = {{"humaneval", "HumanEval"}, {"gsm8k", "GSM8K"},
                                         {"mbpp", "MBPP"},           {"classeval", "ClassEval"},
                                         {"mt-bench", "MT-Bench"},   {"math500", "MATH500"},
                                         {"spec-bench", "Spec-Bench"}, {"olympiadbench", "OlympiadBench"},
                                         {"livecodebench", "LiveCodeBench"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], id))
            return map[i][1];
    return id;
}

static const arb_run_stats *stats(rctx *c, int i, arb_err *err)
{
    if (i < 0)
        return NULL;
    if (!c->loaded[i]) {
        if (arb_metrics_load(c->db, &c->runs[i], &c->st[i], err))
            return NULL;
        c->loaded[i] = true;
    }
    return &c->st[i];
}

int arb_report_cell(rctx *c, int i, arb_metric m, arb_rcell *out, arb_err *err)
{
    const arb_run_stats *s = stats(c, i, err), *ar = NULL;
    if (!s)
        return err ? err->code : ARB_E_DB;
    if (arb_metric_paired(m)) {
        int a = arb_metrics_find_ar(c->runs, c->n, i);
        if (a >= 0 && !(ar = stats(c, a, err)))
            return err->code;
    }
    arb_ci ci;
    arb_metrics_ci(s, ar, m, c->o->n_boot, (uint64_t)i * 7919u, &ci);
    out->has = true;
    out->v = ci.v, out->lo = ci.lo, out->hi = ci.hi;
    return ARB_OK;
}

static double paper_get(const rctx *c, const char *model, const char *method, const char *ds,
                        const char *metric)
{
    return arb_paper_value(&c->paper, NULL, model, method, ds, metric);
}

static int load_paper(rctx *c, arb_err *err)
{
    char path[4096];
    if (c->o->paper_path)
        snprintf(path, sizeof path, "%s", c->o->paper_path);
    else
        snprintf(path, sizeof path, "%s/results/paper/goose.tsv",
                 getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT);
    int rc = arb_paper_load(path, &c->paper, err);
    return rc == ARB_E_NOTFOUND ? ARB_ERR(err, rc, "%s: cannot open the paper's numbers (--paper-file)", path) : rc;
}

bool arb_report_model_ok(const rctx *c, int i)
{
    return !c->o->model || !strcmp(c->runs[i].model, c->o->model);
}

static void lists(const rctx *c, strlist *models, strlist *datasets, strlist *methods)
{
    models->n = datasets->n = methods->n = 0;
    for (int i = 0; i < c->n; i++)
        if (arb_report_model_ok(c, i)) {
            uniq_add(models, c->runs[i].model);
            uniq_add(datasets, c->runs[i].dataset);
            uniq_add(methods, c->runs[i].method);
        }
}

/* First run with this model/dataset/method (sampling and seed: the first seen). */
static int find_run(const rctx *c, const char *model, const char *ds, const char *method)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->runs[i].model, model) && !strcmp(c->runs[i].dataset, ds) &&
            !strcmp(c->runs[i].method, method))
            return i;
    return -1;
}

/* Mean of the filled cells of column j over rows [r0, r1) into row `dst`. */
static void mean_row(arb_grid *g, int dst, int j, int r0, int r1)
{
    double s = 0;
    int k = 0;
    for (int r = r0; r < r1; r++) {
        arb_rcell *x = arb_grid_at(g, r, j);
        if (x->has && !isnan(x->v))
            s += x->v, k++;
    }
    arb_rcell *d = arb_grid_at(g, dst, j);
    d->has = k > 0;
    d->v = k ? s / k : NAN;
    d->pct = arb_grid_at(g, r0 < r1 ? r0 : dst, j)->pct;
}

static int table1(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Dataset"};
    strlist models, dss, meths;
    lists(c, &models, &dss, &meths);
    if (arb_grid_init(g, 2, rh, 4))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    const char *names[3] = {c->o->spine, c->o->iso3, c->o->iso5};
    for (int k = 0; k < 3; k++)
        arb_grid_set_col(g, k, NULL, k == 0 ? "Spine" : names[k]);
    arb_grid_set_col(g, 3, NULL, "Δ vs Iso3");
    const char *pm = c->o->paper_model;
    for (int m = 0; m < models.n; m++)
        for (int d = 0; d < dss.n; d++) {
            int s = find_run(c, models.v[m], dss.v[d], names[0]);
            if (s < 0)
                continue;
            const char *lab[2] = {models.v[m], arb_report_ds_title(dss.v[d])};
            int r = arb_grid_add_row(g, lab);
            if (r < 0)
                return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
            for (int k = 0; k < 3; k++) {
                int i = k ? arb_metrics_find_sibling(c->runs, c->n, s, names[k]) : s;
                int rc = i >= 0 ? arb_report_cell(c, i, ARB_METRIC_TAU, arb_grid_at(g, r, k), err) : 0;
                if (rc)
                    return rc;
                if (pm)
                    arb_grid_at(g, r, k)->paper = paper_get(c, pm, names[k], dss.v[d], "tau");
            }
            arb_rcell *a = arb_grid_at(g, r, 0), *b = arb_grid_at(g, r, 1), *x = arb_grid_at(g, r, 3);
            x->pct = true;
            x->has = a->has && b->has;
            x->v = x->has ? a->v / b->v - 1 : NAN;
            if (pm)
                x->paper = paper_get(c, pm, names[0], dss.v[d], "delta_iso3") / 100;
        }
    int nr = g->nr;
    if (nr > 1) {
        const char *lab[2] = {"Average", ""};
        int r = arb_grid_add_row(g, lab);
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        g->rule[r] = true;
        for (int j = 0; j < 4; j++)
            mean_row(g, r, j, 0, nr);
        if (pm)
            for (int k = 0; k < 4; k++)
                arb_grid_at(g, r, k)->paper =
                    k < 3 ? paper_get(c, "avg", names[k], "avg", "tau")
                          : paper_get(c, "avg", names[0], "avg", "delta_iso3") / 100;
    }
    return ARB_OK;
}

static int table2(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Config"};
    strlist models, dss, meths;
    lists(c, &models, &dss, &meths);
    const char *model = c->o->model ? c->o->model : models.n ? models.v[0] : "";
    if (arb_grid_init(g, 1, rh, dss.n + 1))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int d = 0; d < dss.n; d++)
        arb_grid_set_col(g, d, NULL, arb_report_ds_title(dss.v[d]));
    arb_grid_set_col(g, dss.n, NULL, "Δ");
    const char *pm = c->o->paper_model;
    for (int m = 0; m < meths.n; m++) {
        const char *lab[1] = {meths.v[m]};
        int r = arb_grid_add_row(g, lab), any = 0;
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        double sum = 0;
        int k = 0;
        for (int d = 0; d < dss.n; d++) {
            int i = find_run(c, model, dss.v[d], meths.v[m]);
            int ref = find_run(c, model, dss.v[d], c->o->ref);
            int rc = i >= 0 ? arb_report_cell(c, i, ARB_METRIC_TAU, arb_grid_at(g, r, d), err) : 0;
            if (rc)
                return rc;
            any |= i >= 0;
            if (pm)
                arb_grid_at(g, r, d)->paper = paper_get(c, pm, meths.v[m], dss.v[d], "tau");
            arb_rcell ref_c = {0};
            if (i >= 0 && ref >= 0 && strcmp(meths.v[m], c->o->ref)) {
                if ((rc = arb_report_cell(c, ref, ARB_METRIC_TAU, &ref_c, err)))
                    return rc;
                sum += arb_grid_at(g, r, d)->v / ref_c.v - 1, k++;
            }
        }
        arb_rcell *x = arb_grid_at(g, r, dss.n);
        x->pct = true;
        x->has = k > 0;
        x->v = k ? sum / k : NAN;
        if (pm)
            x->paper = paper_get(c, pm, meths.v[m], "macro", "delta") / 100;
        if (!any)
            arb_grid_pop(g); /* this method never ran on this model */
    }
    return ARB_OK;
}

static int table3(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Method"};
    strlist models, dss, meths;
    lists(c, &models, &dss, &meths);
    int nc = 2 * dss.n + 2;
    if (arb_grid_init(g, 2, rh, nc))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int d = 0; d <= dss.n; d++) {
        const char *t = d < dss.n ? arb_report_ds_title(dss.v[d]) : "Avg.";
        arb_grid_set_col(g, 2 * d, t, "Spd");
        arb_grid_set_col(g, 2 * d + 1, t, "τ");
    }
    const char *pm = c->o->paper_model;
    for (int m = 0; m < models.n; m++) {
        int r0 = g->nr;
        for (int k = 0; k < meths.n; k++) {
            int any = 0;
            for (int d = 0; d < dss.n; d++)
                any |= find_run(c, models.v[m], dss.v[d], meths.v[k]) >= 0;
            if (!any)
                continue;
            const char *lab[2] = {models.v[m], meths.v[k]};
            int r = arb_grid_add_row(g, lab), rc;
            if (r < 0)
                return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
            g->rule[r] = r == r0 && r > 0;
            for (int d = 0; d < dss.n; d++) {
                int i = find_run(c, models.v[m], dss.v[d], meths.v[k]);
                if (i >= 0 && ((rc = arb_report_cell(c, i, ARB_METRIC_SPEEDUP, arb_grid_at(g, r, 2 * d), err)) ||
                               (rc = arb_report_cell(c, i, ARB_METRIC_TAU, arb_grid_at(g, r, 2 * d + 1), err))))
                    return rc;
                if (pm) {
                    arb_grid_at(g, r, 2 * d)->paper = paper_get(c, pm, meths.v[k], dss.v[d], "speedup");
                    arb_grid_at(g, r, 2 * d + 1)->paper = paper_get(c, pm, meths.v[k], dss.v[d], "tau");
                }
            }
            for (int h = 0; h < 2; h++) { /* the average over datasets of each row */
                double s = 0;
                int n = 0;
                for (int d = 0; d < dss.n; d++) {
                    arb_rcell *x = arb_grid_at(g, r, 2 * d + h);
                    if (x->has && !isnan(x->v))
                        s += x->v, n++;
                }
                arb_rcell *a = arb_grid_at(g, r, 2 * dss.n + h);
                a->has = n > 0;
                a->v = n ? s / n : NAN;
            }
            if (pm)
                arb_grid_at(g, r, 2 * dss.n)->paper = paper_get(c, pm, meths.v[k], "avg", "speedup");
        }
        for (int j = 0; j < nc; j++)
            arb_grid_bold_max(g, j, r0, g->nr);
    }
    return ARB_OK;
}

/* A run's value for a pivot key. */
static void key_of(const arb_run_info *r, const char *key, char *buf, size_t cap)
{
    if (!strcmp(key, "model")) snprintf(buf, cap, "%s", r->model);
    else if (!strcmp(key, "method")) snprintf(buf, cap, "%s", r->method);
    else if (!strcmp(key, "base_method")) snprintf(buf, cap, "%s", r->base_method);
    else if (!strcmp(key, "dataset")) snprintf(buf, cap, "%s", arb_report_ds_title(r->dataset));
    else if (!strcmp(key, "drafter")) snprintf(buf, cap, "%s", r->drafter);
    else if (!strcmp(key, "topology")) snprintf(buf, cap, "%s", r->topology);
    else if (!strcmp(key, "sweep")) snprintf(buf, cap, "%s", r->sweep_json);
    else if (!strcmp(key, "seed")) snprintf(buf, cap, "%lld", (long long)r->seed);
    else if (!strcmp(key, "temperature")) snprintf(buf, cap, "%g", r->temperature);
    else if (!strcmp(key, "top_p")) snprintf(buf, cap, "%g", r->top_p);
    else if (!strcmp(key, "sampling")) arb_report_setting(r, buf, cap);
    else snprintf(buf, cap, "%s", r->config_name);
}

static int split_keys(const char *spec, char keys[4][32], int *n, arb_err *err)
{
    static const char *const known[] = {"model", "method", "base_method", "dataset", "drafter",
                                        "topology", "sweep", "seed", "temperature", "top_p",
                                        "sampling", "config"};
    *n = 0;
    for (const char *p = spec; *p;) {
        size_t l = strcspn(p, ",");
        if (*n == 4 || l == 0 || l >= 32)
            return ARB_ERR(err, ARB_E_INVAL, "pivot keys '%s': 1 to 4 comma-separated names", spec);
        memcpy(keys[*n], p, l);
        keys[*n][l] = 0;
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= !strcmp(known[i], keys[*n]);
        if (!ok)
            return ARB_ERR(err, ARB_E_INVAL, "unknown pivot key '%s' (model method base_method "
                           "dataset drafter topology sweep seed temperature top_p sampling config)", keys[*n]);
        (*n)++;
        p += l + (p[l] == ',');
    }
    return *n ? ARB_OK : ARB_ERR(err, ARB_E_INVAL, "pivot: empty key list");
}

static int pivot(rctx *c, arb_grid *g, arb_err *err)
{
    char rk[4][32], ck[4][32];
    int nrk, nck, rc;
    if ((rc = split_keys(c->o->rows, rk, &nrk, err)) || (rc = split_keys(c->o->cols, ck, &nck, err)))
        return rc;
    /* distinct column labels, in run order */
    /* at most one column per run: sized from the run count, so no run is ever dropped */
    enum { LAB_MAX = 256 };
    size_t nalloc = (size_t)(c->n ? c->n : 1);
    char (*cols)[LAB_MAX] = calloc(nalloc, sizeof *cols);
    int nc = 0;
    int *col_of = calloc(nalloc, sizeof *col_of);
    if (!cols || !col_of) {
        free(cols), free(col_of);
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->n; i++) {
        char lab[LAB_MAX] = "", part[128];
        size_t used = 0;
        for (int k = 0; k < nck; k++) {
            key_of(&c->runs[i], ck[k], part, sizeof part);
            int w = snprintf(lab + used, sizeof lab - used, "%s%s", k ? " / " : "", part);
            if (w < 0 || (size_t)w >= sizeof lab - used) {
                free(cols), free(col_of);
                return ARB_ERR(err, ARB_E_RANGE, "pivot: column label of run '%s' longer than %d bytes",
                               c->runs[i].run_key, LAB_MAX - 1);
            }
            used += (size_t)w;
        }
        int j = 0;
        while (j < nc && strcmp(cols[j], lab))
            j++;
        if (j == nc)
            memcpy(cols[nc++], lab, sizeof lab);
        col_of[i] = j;
    }
    const char *rhn[4] = {rk[0], rk[1], rk[2], rk[3]};
    if (arb_grid_init(g, nrk, rhn, nc)) {
        free(cols), free(col_of);
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    for (int j = 0; j < nc && !rc; j++)
        if (arb_grid_set_col(g, j, NULL, cols[j]))
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    free(cols);
    const char *mname = arb_metric_name(c->o->metric);
    for (int i = 0; i < c->n && !rc; i++) {
        if (!arb_report_model_ok(c, i) || col_of[i] < 0)
            continue;
        char lab[4][128];
        const char *lp[4];
        for (int k = 0; k < nrk; k++)
            key_of(&c->runs[i], rk[k], lab[k], sizeof lab[k]), lp[k] = lab[k];
        int r = 0;
        for (; r < g->nr; r++) {
            bool same = true;
            for (int k = 0; k < nrk; k++)
                same &= !strcmp(g->rh[r * nrk + k], lp[k]);
            if (same)
                break;
        }
        if (r == g->nr && (r = arb_grid_add_row(g, lp)) < 0)
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        arb_rcell *x = rc ? NULL : arb_grid_at(g, r, col_of[i]);
        if (x)
            x->count = c->o->metric == ARB_METRIC_N_PROMPTS;
        if (x && !x->has && !(rc = arb_report_cell(c, i, c->o->metric, x, err)) && c->o->paper_model)
            x->paper = paper_get(c, c->o->paper_model, c->runs[i].method, c->runs[i].dataset, mname);
    }
    free(col_of);
    return rc;
}

static int summary(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Dataset", "Method"};
    static const arb_metric ms[] = {ARB_METRIC_N_PROMPTS, ARB_METRIC_TAU, ARB_METRIC_TPS,
                                    ARB_METRIC_SPEEDUP, ARB_METRIC_P_S, ARB_METRIC_P_T,
                                    ARB_METRIC_SPINE_SHARE, ARB_METRIC_ACC_LEN, ARB_METRIC_LOSSLESS,
                                    ARB_METRIC_REPEAT16};
    int nm = (int)(sizeof ms / sizeof ms[0]);
    if (arb_grid_init(g, 3, rh, nm))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    g->ci = true;
    for (int k = 0; k < nm; k++)
        arb_grid_set_col(g, k, NULL, arb_metric_name(ms[k]));
    for (int i = 0; i < c->n; i++) {
        if (!arb_report_model_ok(c, i))
            continue;
        const char *lab[3] = {c->runs[i].model, arb_report_ds_title(c->runs[i].dataset), c->runs[i].method};
        int r = arb_grid_add_row(g, lab), rc;
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        for (int k = 0; k < nm; k++)
            if ((rc = arb_report_cell(c, i, ms[k], arb_grid_at(g, r, k), err)))
                return rc;
        arb_grid_at(g, r, 0)->count = true;
    }
    return ARB_OK;
}

static int synergy(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Dataset"};
    if (arb_grid_init(g, 2, rh, 7))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    const char *cn[7] = {"τ spine", "τ PLD", "τ TR", "synergy", "spine cont. share", "p_s", "p_t"};
    for (int j = 0; j < 7; j++)
        arb_grid_set_col(g, j, NULL, cn[j]);
    for (int i = 0; i < c->n; i++) {
        if (!arb_report_model_ok(c, i) || strcmp(c->runs[i].method, c->o->spine))
            continue;
        int ip = arb_metrics_find_sibling(c->runs, c->n, i, c->o->pld);
        int it = arb_metrics_find_sibling(c->runs, c->n, i, c->o->tr);
        const char *lab[2] = {c->runs[i].model, arb_report_ds_title(c->runs[i].dataset)};
        int r = arb_grid_add_row(g, lab), rc = 0;
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        int idx[3] = {i, ip, it};
        for (int k = 0; k < 3 && !rc; k++)
            if (idx[k] >= 0)
                rc = arb_report_cell(c, idx[k], ARB_METRIC_TAU, arb_grid_at(g, r, k), err);
        if (!rc && ip >= 0 && it >= 0) {
            arb_ci ci;
            arb_metrics_synergy(stats(c, i, err), stats(c, ip, err), stats(c, it, err),
                                c->o->n_boot, (uint64_t)i, &ci);
            *arb_grid_at(g, r, 3) = (arb_rcell){.has = true, .v = ci.v, .lo = ci.lo, .hi = ci.hi, .paper = NAN};
        }
        const arb_metric ms[3] = {ARB_METRIC_SPINE_SHARE, ARB_METRIC_P_S, ARB_METRIC_P_T};
        for (int k = 0; k < 3 && !rc; k++)
            rc = arb_report_cell(c, i, ms[k], arb_grid_at(g, r, 4 + k), err);
        if (rc)
            return rc;
    }
    return ARB_OK;
}

static int depth(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Dataset", "Method"};
    int dmax = 1;
    for (int i = 0; i < c->n; i++) {
        const arb_run_stats *s = arb_report_model_ok(c, i) ? stats(c, i, err) : NULL;
        if (arb_report_model_ok(c, i) && !s)
            return err->code;
        for (int d = 1; s && d <= ARB_METRICS_DMAX && d <= 16; d++)
            if (s->depth_reach[d] > 0 && d > dmax)
                dmax = d;
    }
    if (arb_grid_init(g, 3, rh, dmax))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int d = 1; d <= dmax; d++) {
        char t[16];
        snprintf(t, sizeof t, "d%d", d);
        arb_grid_set_col(g, d - 1, NULL, t);
    }
    for (int i = 0; i < c->n; i++) {
        if (!arb_report_model_ok(c, i))
            continue;
        const arb_run_stats *s = stats(c, i, err);
        const char *lab[3] = {c->runs[i].model, arb_report_ds_title(c->runs[i].dataset), c->runs[i].method};
        int r = arb_grid_add_row(g, lab);
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        for (int d = 1; d <= dmax; d++) {
            arb_rcell *x = arb_grid_at(g, r, d - 1);
            x->has = s->depth_reach[d] > 0;
            x->v = x->has ? (double)s->depth_acc[d] / (double)s->depth_reach[d] : NAN;
        }
    }
    return ARB_OK;
}

/* The speedup apart on prompts whose output loops and on the others: a model caught in verbatim
   repeats hands lookup drafters free tokens (docs/cost-model.md, "The paper's generation
   lengths"). A prompt is loop-free when at most LOOP_FREE_MAX of its own output ends a repeated
   16-token run (repeat16); lossless methods share AR's text, so their split is AR's. */
#define LOOP_FREE_MAX 0.10
static int loops(rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Dataset", "Method"};
    static const char *const cols[] = {"repeat16", "speedup", "loop-free prompts", "speedup loop-free",
                                       "looping prompts", "speedup looping"};
    if (arb_grid_init(g, 3, rh, 6))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int k = 0; k < 6; k++)
        arb_grid_set_col(g, k, NULL, cols[k]);
    snprintf(g->caption, sizeof g->caption,
             "A prompt loops when more than %.0f%% of its generated tokens end a 16-token run its output already "
             "holds (repeat16); speedup over AR pooled over each part's prompts (the same prompts on AR's side).",
             100 * LOOP_FREE_MAX);
    for (int i = 0; i < c->n; i++) {
        if (!arb_report_model_ok(c, i))
            continue;
        const arb_run_stats *s = stats(c, i, err), *ar = NULL;
        if (!s)
            return err->code;
        const int a = arb_metrics_find_ar(c->runs, c->n, i);
        if (a >= 0 && !(ar = stats(c, a, err)))
            return err->code;
        const char *lab[3] = {c->runs[i].model, arb_report_ds_title(c->runs[i].dataset), c->runs[i].method};
        const int r = arb_grid_add_row(g, lab);
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        int rc = arb_report_cell(c, i, ARB_METRIC_REPEAT16, arb_grid_at(g, r, 0), err);
        if (!rc)
            rc = arb_report_cell(c, i, ARB_METRIC_SPEEDUP, arb_grid_at(g, r, 1), err);
        if (rc)
            return rc;
        arb_run_stats part = *s; /* shares s's prompt ids: freed with free(part.p) only */
        if (!(part.p = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof *part.p)))
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        for (int looping = 0; looping < 2; looping++) {
            part.n = 0;
            for (int j = 0; j < s->n; j++) {
                const arb_prompt_stat *p = &s->p[j];
                if (p->n_ids >= 0 && ((double)p->n_repeat > LOOP_FREE_MAX * (double)p->n_ids) == looping)
                    part.p[part.n++] = *p;
            }
            arb_rcell *n = arb_grid_at(g, r, 2 + 2 * looping), *sp = arb_grid_at(g, r, 3 + 2 * looping);
            n->has = n->count = true;
            n->v = part.n, n->lo = n->hi = NAN;
            arb_ci ci = {NAN, NAN, NAN};
            if (part.n > 0 && ar)
                arb_metrics_ci(&part, ar, ARB_METRIC_SPEEDUP, c->o->n_boot, (uint64_t)i * 7919u + 1u + looping, &ci);
            sp->has = !isnan(ci.v);
            sp->v = ci.v, sp->lo = ci.lo, sp->hi = ci.hi;
        }
        free(part.p);
    }
    return ARB_OK;
}

static const struct { const char *name; int (*fn)(rctx *, arb_grid *, arb_err *); } tables[] = {
    {"table1", table1}, {"table2", table2}, {"table3", table3}, {"pivot", pivot},
    {"summary", summary}, {"synergy", synergy}, {"depth", depth}, {"dte", arb_report_dte},
    {"sequoia-p", arb_report_sequoia_p}, {"cost", arb_report_cost},
    {"entmtp1", arb_report_entmtp1}, {"machines", arb_report_machines}, {"loops", loops},
};

int arb_report_write(sqlite3 *db, const arb_report_opts *o, FILE *out, arb_err *err)
{
    int (*fn)(rctx *, arb_grid *, arb_err *) = NULL;
    bool autot = !o->table || !strcmp(o->table, "auto");
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (!autot && !strcmp(o->table, tables[i].name))
            fn = tables[i].fn;
    if (!fn && !autot)
        return ARB_ERR(err, ARB_E_INVAL, "unknown table '%s' (auto table1 table2 table3 pivot "
                       "summary synergy depth dte sequoia-p cost entmtp1 machines loops)", o->table);
    /* Intervals cost n_boot resamples per cell: compute them only where they are printed. */
    arb_report_opts eo = *o;
    if ((!o->ci && (autot || (strcmp(o->table, "summary") && strcmp(o->table, "synergy")))) ||
        (!autot && !strcmp(o->table, "dte"))) /* dte cells are means of best shapes: no interval */
        eo.n_boot = 0;
    rctx c = {.db = db, .o = &eo};
    arb_grid g = {0};
    int rc = arb_metrics_list_runs(db, &c.runs, &c.n, err);
    if (!rc && c.n == 0)
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "no runs in the database");
    if (!rc && autot) /* draft-model (verifier) configs get the DTE layout, the others table3 */
        fn = arb_report_is_dte(&c) ? arb_report_dte : table3;
    if (!rc && !((c.st = calloc((size_t)c.n, sizeof *c.st)) && (c.loaded = calloc((size_t)c.n, 1))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (!rc && o->paper_model)
        rc = load_paper(&c, err);
    if (!rc)
        rc = fn(&c, &g, err);
    if (!rc) {
        g.paper = g.paper || o->paper_model != NULL; /* entmtp1 reads its paper file itself */
        g.ci = g.ci || o->ci;
        rc = arb_grid_write(&g, o->fmt, out, err);
    }
    arb_grid_release(&g);
    for (int i = 0; c.st && i < c.n; i++)
        arb_run_stats_release(&c.st[i]);
    arb_paper_release(&c.paper);
    free(c.st), free(c.loaded);
    arb_metrics_free_runs(c.runs, c.n);
    return rc;
}
