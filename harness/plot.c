/* plot.c — see plot.h. Data comes from metrics.h; each figure writes <name>.dat, then
 * <name>.gp = variables + the template (plots/<name>.gp) wrapped in a loop over the PNG and
 * SVG terminals, and runs gnuplot in the output directory. */
#include "plot.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "arb_config.h"
#include "metrics.h"

typedef struct pctx {
    sqlite3 *db;
    const arb_plot_opts *o;
    arb_run_info *runs;
    int n;
} pctx;

arb_plot_opts arb_plot_default_opts(void)
{
    return (arb_plot_opts){.figure = "all", .out_dir = "results/fig", .spine = "GOOSE", .render = true};
}

/* gnuplot word lists and titles: no spaces or quotes inside one word. */
static void word(const char *s, char *buf, size_t cap)
{
    size_t i = 0;
    for (; *s && i + 1 < cap; s++)
        buf[i++] = (*s == ' ' || *s == '"' || *s == '\'') ? '_' : *s;
    buf[i] = 0;
}

static FILE *open_out(const pctx *c, const char *name, const char *ext, arb_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", c->o->out_dir, name, ext);
    FILE *f = fopen(path, "w");
    if (!f)
        ARB_ERR(err, ARB_E_IO, "%s: %s", path, strerror(errno));
    return f;
}

static bool model_ok(const pctx *c, int i)
{
    return !c->o->model || !strcmp(c->runs[i].model, c->o->model);
}

/* One figure holds at most PLOT_MAX_SERIES models, datasets or methods: beyond that the plot is
   unreadable, so the figure fails with ARB_E_RANGE (sl_check) instead of silently dropping some. */
enum { PLOT_MAX_SERIES = 128 };
typedef struct slist { const char *v[PLOT_MAX_SERIES]; int n; bool overflow; } slist;

static int sl_find(const slist *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return i;
    return -1;
}

static void sl_add(slist *l, const char *s)
{
    if (sl_find(l, s) >= 0)
        return;
    if (l->n < PLOT_MAX_SERIES)
        l->v[l->n++] = s;
    else
        l->overflow = true;
}

static int sl_check(const slist *l, const char *fig, const char *what, arb_err *err)
{
    if (!l->overflow)
        return ARB_OK;
    return ARB_ERR(err, ARB_E_RANGE, "%s: more than %d %s in one figure; select fewer runs "
                   "(--model, --dataset, or a smaller database)", fig, PLOT_MAX_SERIES, what);
}

static int run_of(const pctx *c, const char *model, const char *ds, const char *method)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->runs[i].model, model) && !strcmp(c->runs[i].dataset, ds) &&
            !strcmp(c->runs[i].method, method))
            return i;
    return -1;
}

static double metric(const pctx *c, int i, arb_metric m, int n_boot, arb_ci *ci, arb_err *err)
{
    arb_run_stats s = {0}, ar = {0};
    int a = arb_metric_paired(m) ? arb_metrics_find_ar(c->runs, c->n, i) : -1;
    ci->v = ci->lo = ci->hi = NAN;
    if (arb_metrics_load(c->db, &c->runs[i], &s, err))
        return NAN;
    if (a < 0 || !arb_metrics_load(c->db, &c->runs[a], &ar, err))
        arb_metrics_ci(&s, a >= 0 ? &ar : NULL, m, n_boot, (uint64_t)i, ci);
    arb_run_stats_release(&s);
    arb_run_stats_release(&ar);
    return ci->v;
}

/* Write <name>.gp: variables, then the template once per terminal. */
int arb_plot_script(const char *out_dir, const char *templates, const char *name, const char *vars,
                    int w, int h, arb_err *err)
{
    return arb_plot_script_tpl(out_dir, templates, name, name, vars, w, h, err);
}

int arb_plot_script_tpl(const char *out_dir, const char *templates, const char *tpl, const char *name,
                        const char *vars, int w, int h, arb_err *err)
{
    char tpath[4096], opath[4096];
    const char *root = getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT;
    if (templates)
        snprintf(tpath, sizeof tpath, "%s/%s.gp", templates, tpl);
    else
        snprintf(tpath, sizeof tpath, "%s/plots/%s.gp", root, tpl);
    FILE *t = fopen(tpath, "r");
    if (!t)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: gnuplot template not found (--templates DIR)", tpath);
    snprintf(opath, sizeof opath, "%s/%s.gp", out_dir, name);
    FILE *f = fopen(opath, "w");
    if (!f) {
        fclose(t);
        return ARB_ERR(err, ARB_E_IO, "%s: %s", opath, strerror(errno));
    }
    fprintf(f, "# %s.gp — written by arbor from %s; rerun: gnuplot %s.gp\n", name, tpath, name);
    fprintf(f, "datafile = '%s.dat'\n%s", name, vars);
    fprintf(f, "do for [arb_term = 1:2] {\n"
               "reset\n"
               "if (arb_term == 1) { set terminal pngcairo size %d,%d font ',10'; set output '%s.png' }\n"
               "if (arb_term == 2) { set terminal svg size %d,%d dynamic font ',10'; set output '%s.svg' }\n",
            w, h, name, w, h, name);
    char line[1024];
    while (fgets(line, sizeof line, t))
        fputs(line, f);
    fputs("unset output\n}\n", f);
    fclose(t);
    if (fclose(f) != 0)
        return ARB_ERR(err, ARB_E_IO, "%s: write error", opath);
    return ARB_OK;
}

static int write_script(const pctx *c, const char *name, const char *vars, int w, int h, arb_err *err)
{
    return arb_plot_script(c->o->out_dir, c->o->templates, name, vars, w, h, err);
}

int arb_plot_render(const char *out_dir, const char *name, arb_err *err)
{
    if (strchr(out_dir, '\''))
        return ARB_ERR(err, ARB_E_INVAL, "%s: output directory name must not contain a quote", out_dir);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp' 2>'%s.log'", out_dir, name, name);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
            return ARB_ERR(err, ARB_E_EXTERNAL, "gnuplot not found (apt-get install gnuplot-nox); "
                           "%s/%s.{dat,gp} are written", out_dir, name);
        return ARB_ERR(err, ARB_E_EXTERNAL, "gnuplot failed on %s/%s.gp (see %s.log)", out_dir,
                       name, name);
    }
    char log[4200];
    snprintf(log, sizeof log, "%s/%s.log", out_dir, name);
    remove(log);
    return ARB_OK;
}

static int render(const pctx *c, const char *name, arb_err *err)
{
    return c->o->render ? arb_plot_render(c->o->out_dir, name, err) : ARB_OK;
}

static int fig_speedup(pctx *c, arb_err *err)
{
    slist models = {0}, dss = {0}, meths = {0};
    for (int i = 0; i < c->n; i++)
        if (model_ok(c, i)) {
            sl_add(&models, c->runs[i].model), sl_add(&dss, c->runs[i].dataset);
            if (strcmp(c->runs[i].drafter, "none"))
                sl_add(&meths, c->runs[i].method);
        }
    if (!models.n || !meths.n)
        return ARB_ERR(err, ARB_E_NOTFOUND, "speedup: no speculative runs to plot");
    int rc0;
    if ((rc0 = sl_check(&models, "speedup", "models", err)) || (rc0 = sl_check(&dss, "speedup", "datasets", err)) ||
        (rc0 = sl_check(&meths, "speedup", "methods", err)))
        return rc0;
    FILE *f = open_out(c, "speedup", "dat", err);
    if (!f)
        return err->code;
    char blocks[PLOT_MAX_SERIES * 257] = "", vars[sizeof blocks + 256] = "", w[256]; /* every model name fits */
    for (int m = 0; m < models.n; m++) {
        word(models.v[m], w, sizeof w);
        snprintf(blocks + strlen(blocks), sizeof blocks - strlen(blocks), "%s%s", m ? " " : "", w);
        fprintf(f, "%sdataset", m ? "\n\n" : "");
        for (int k = 0; k < meths.n; k++)
            word(meths.v[k], w, sizeof w), fprintf(f, " %s", w);
        fputc('\n', f);
        for (int d = 0; d < dss.n; d++) {
            word(dss.v[d], w, sizeof w);
            fprintf(f, "%s", w);
            for (int k = 0; k < meths.n; k++) {
                int i = run_of(c, models.v[m], dss.v[d], meths.v[k]);
                arb_ci ci;
                double v = i >= 0 ? metric(c, i, ARB_METRIC_SPEEDUP, 0, &ci, err) : NAN;
                isnan(v) ? fputs(" NaN", f) : fprintf(f, " %.4f", v);
            }
            fputc('\n', f);
        }
    }
    fclose(f);
    snprintf(vars, sizeof vars, "nblocks = %d\nblocks = '%s'\nncols = %d\n", models.n, blocks, meths.n + 1);
    int rc = write_script(c, "speedup", vars, 480 * (models.n < 3 ? models.n : 3) + 160, 480, err);
    return rc ? rc : render(c, "speedup", err);
}

static int fig_ps_pt(pctx *c, arb_err *err)
{
    slist dss = {0};
    for (int i = 0; i < c->n; i++)
        if (model_ok(c, i) && !strcmp(c->runs[i].method, c->o->spine))
            sl_add(&dss, c->runs[i].dataset);
    if (!dss.n)
        return ARB_ERR(err, ARB_E_NOTFOUND, "ps_pt: no runs of method '%s' (--spine)", c->o->spine);
    if (sl_check(&dss, "ps_pt", "datasets", err))
        return err->code;
    FILE *f = open_out(c, "ps_pt", "dat", err);
    if (!f)
        return err->code;
    fputs("# dataset p_s p_t p_s/p_t (mean over models)\n", f);
    for (int d = 0; d < dss.n; d++) {
        double ps = 0, pt = 0;
        int n = 0;
        for (int i = 0; i < c->n; i++) {
            if (!model_ok(c, i) || strcmp(c->runs[i].method, c->o->spine) || strcmp(c->runs[i].dataset, dss.v[d]))
                continue;
            arb_ci a, b;
            double x = metric(c, i, ARB_METRIC_P_S, 0, &a, err), y = metric(c, i, ARB_METRIC_P_T, 0, &b, err);
            if (!isnan(x) && !isnan(y))
                ps += x, pt += y, n++;
        }
        char w[256];
        word(dss.v[d], w, sizeof w);
        if (n)
            fprintf(f, "%s %.4f %.4f %.3f\n", w, ps / n, pt / n, pt > 0 ? ps / pt : 0.0);
    }
    fclose(f);
    char vars[512];
    snprintf(vars, sizeof vars, "title_text = 'Acceptance by source (%s)'\n", c->o->spine);
    int rc = write_script(c, "ps_pt", vars, 720, 480, err);
    return rc ? rc : render(c, "ps_pt", err);
}

/* Value of parameter `param` in a run's sweep JSON (numbers, booleans as 0/1), or NAN. */
static double sweep_value(const char *json, const char *param)
{
    cJSON *o = cJSON_Parse(json ? json : "");
    const cJSON *it = o && cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, param) : NULL;
    double v = it && cJSON_IsNumber(it) ? it->valuedouble : it && cJSON_IsBool(it) ? cJSON_IsTrue(it) : NAN;
    cJSON_Delete(o);
    return v;
}

static int fig_tau_sweep(pctx *c, arb_err *err)
{
    char param[64] = "";
    if (c->o->param) {
        snprintf(param, sizeof param, "%s", c->o->param);
    } else { /* the first swept parameter of any run */
        for (int i = 0; i < c->n && !param[0]; i++) {
            cJSON *o = cJSON_Parse(c->runs[i].sweep_json);
            if (o && o->child && o->child->string)
                snprintf(param, sizeof param, "%s", o->child->string);
            cJSON_Delete(o);
        }
    }
    if (!param[0])
        return ARB_ERR(err, ARB_E_NOTFOUND, "tau_sweep: no swept parameter in any run");
    slist series = {0};
    char labels[PLOT_MAX_SERIES][256];
    int *sid = malloc((size_t)(c->n ? c->n : 1) * sizeof *sid); /* series of each run, -1: none */
    if (!sid)
        return ARB_ERR(err, ARB_E_NOMEM, "tau_sweep: out of memory");
    for (int i = 0; i < c->n; i++) {
        sid[i] = -1;
        if (!model_ok(c, i) || isnan(sweep_value(c->runs[i].sweep_json, param)))
            continue;
        char lab[256];
        snprintf(lab, sizeof lab, "%s/%s/%s", c->runs[i].model, c->runs[i].dataset, c->runs[i].base_method);
        int s = 0;
        while (s < series.n && strcmp(labels[s], lab))
            s++;
        if (s == PLOT_MAX_SERIES) {
            free(sid);
            return ARB_ERR(err, ARB_E_RANGE, "tau_sweep: more than %d model/dataset/method series in one "
                           "figure; select fewer runs (--model, --dataset)", PLOT_MAX_SERIES);
        }
        if (s == series.n)
            snprintf(labels[series.n++], sizeof labels[0], "%s", lab);
        sid[i] = s;
    }
    if (!series.n) {
        free(sid);
        return ARB_ERR(err, ARB_E_NOTFOUND, "tau_sweep: no run sweeps '%s'", param);
    }
    FILE *f = open_out(c, "tau_sweep", "dat", err);
    if (!f) {
        free(sid);
        return err->code;
    }
    for (int s = 0; s < series.n; s++) {
        char w[256];
        word(labels[s], w, sizeof w);
        fprintf(f, "%s%s %s\n", s ? "\n\n" : "", param, w);
        /* points in increasing x */
        double done = -INFINITY;
        for (;;) {
            int best = -1;
            double bx = INFINITY;
            for (int i = 0; i < c->n; i++) {
                double x = sid[i] == s ? sweep_value(c->runs[i].sweep_json, param) : NAN;
                if (!isnan(x) && x > done && x < bx)
                    bx = x, best = i;
            }
            if (best < 0)
                break;
            arb_ci ci;
            metric(c, best, ARB_METRIC_TAU, 500, &ci, err);
            fprintf(f, "%g %.4f %.4f %.4f\n", bx, ci.v, isnan(ci.lo) ? ci.v : ci.lo, isnan(ci.hi) ? ci.v : ci.hi);
            done = bx;
        }
    }
    fclose(f);
    free(sid);
    char vars[512];
    snprintf(vars, sizeof vars, "nblocks = %d\nxlabel_text = '%s'\n", series.n, param);
    int rc = write_script(c, "tau_sweep", vars, 800, 480, err);
    return rc ? rc : render(c, "tau_sweep", err);
}

static int fig_accept_hist(pctx *c, arb_err *err)
{
    slist meths = {0};
    for (int i = 0; i < c->n; i++)
        if (model_ok(c, i) && strcmp(c->runs[i].drafter, "none") &&
            (!c->o->dataset || !strcmp(c->runs[i].dataset, c->o->dataset)))
            sl_add(&meths, c->runs[i].method);
    if (!meths.n)
        return ARB_ERR(err, ARB_E_NOTFOUND, "accept_hist: no speculative runs");
    if (sl_check(&meths, "accept_hist", "methods", err))
        return err->code;
    static int64_t hist[PLOT_MAX_SERIES][ARB_METRICS_DMAX + 1];
    memset(hist, 0, sizeof hist);
    int kmax = 0;
    for (int i = 0; i < c->n; i++) {
        int k = sl_find(&meths, c->runs[i].method);
        if (k < 0 || !model_ok(c, i) || (c->o->dataset && strcmp(c->runs[i].dataset, c->o->dataset)))
            continue;
        arb_run_stats s;
        if (arb_metrics_load(c->db, &c->runs[i], &s, err))
            return err->code;
        for (int j = 0; j <= ARB_METRICS_DMAX; j++) {
            hist[k][j] += s.hist[j];
            if (s.hist[j] && j > kmax)
                kmax = j;
        }
        arb_run_stats_release(&s);
    }
    FILE *f = open_out(c, "accept_hist", "dat", err);
    if (!f)
        return err->code;
    fputs("k", f);
    for (int k = 0; k < meths.n; k++) {
        char w[256];
        word(meths.v[k], w, sizeof w);
        fprintf(f, " %s", w);
    }
    fputc('\n', f);
    for (int j = 0; j <= kmax; j++) {
        fprintf(f, "%d", j);
        for (int k = 0; k < meths.n; k++) {
            int64_t tot = 0;
            for (int q = 0; q <= ARB_METRICS_DMAX; q++)
                tot += hist[k][q];
            fprintf(f, " %.5f", tot ? (double)hist[k][j] / (double)tot : 0.0);
        }
        fputc('\n', f);
    }
    fclose(f);
    char vars[512];
    snprintf(vars, sizeof vars, "ncols = %d\ntitle_text = 'Accepted length per step%s%s'\n", meths.n + 1,
             c->o->dataset ? ": " : "", c->o->dataset ? c->o->dataset : "");
    int rc = write_script(c, "accept_hist", vars, 800, 480, err);
    return rc ? rc : render(c, "accept_hist", err);
}

/* Realised acceptance by depth per method (its id before the sweep suffix), pooled over its
   runs: P(the node at depth d is accepted | depths < d were and the tree reaches d). The stored
   counterpart of DTE Fig. 1 (whose OTLP rates and L1 come from `arbor dte-depth --plot`). */
static int fig_depth_accept(pctx *c, arb_err *err)
{
    slist meths = {0};
    for (int i = 0; i < c->n; i++)
        if (model_ok(c, i) && strcmp(c->runs[i].drafter, "none") &&
            (!c->o->dataset || !strcmp(c->runs[i].dataset, c->o->dataset)))
            sl_add(&meths, c->runs[i].base_method);
    if (!meths.n)
        return ARB_ERR(err, ARB_E_NOTFOUND, "depth_accept: no speculative runs");
    if (sl_check(&meths, "depth_accept", "methods", err))
        return err->code;
    static int64_t reach[PLOT_MAX_SERIES][ARB_METRICS_DMAX + 1], acc[PLOT_MAX_SERIES][ARB_METRICS_DMAX + 1];
    memset(reach, 0, sizeof reach), memset(acc, 0, sizeof acc);
    int dmax = 0;
    for (int i = 0; i < c->n; i++) {
        int k = sl_find(&meths, c->runs[i].base_method);
        if (k < 0 || !model_ok(c, i) || !strcmp(c->runs[i].drafter, "none") ||
            (c->o->dataset && strcmp(c->runs[i].dataset, c->o->dataset)))
            continue;
        arb_run_stats s;
        if (arb_metrics_load(c->db, &c->runs[i], &s, err))
            return err->code;
        for (int d = 1; d <= ARB_METRICS_DMAX; d++) {
            reach[k][d] += s.depth_reach[d], acc[k][d] += s.depth_acc[d];
            if (s.depth_reach[d] && d > dmax)
                dmax = d;
        }
        arb_run_stats_release(&s);
    }
    if (!dmax)
        return ARB_ERR(err, ARB_E_NOTFOUND, "depth_accept: no step reached depth 1");
    FILE *f = open_out(c, "depth_accept", "dat", err);
    if (!f)
        return err->code;
    fputs("depth", f);
    for (int k = 0; k < meths.n; k++) {
        char w[256];
        word(meths.v[k], w, sizeof w);
        fprintf(f, " %s", w);
    }
    fputc('\n', f);
    for (int d = 1; d <= dmax; d++) {
        fprintf(f, "%d", d);
        for (int k = 0; k < meths.n; k++)
            reach[k][d] ? fprintf(f, " %.5f", (double)acc[k][d] / (double)reach[k][d]) : fputs(" NaN", f);
        fputc('\n', f);
    }
    fclose(f);
    char vars[512];
    snprintf(vars, sizeof vars, "ncols = %d\ntitle_text = 'Acceptance rate by depth%s%s'\n", meths.n + 1,
             c->o->dataset ? ": " : "", c->o->dataset ? c->o->dataset : "");
    int rc = write_script(c, "depth_accept", vars, 800, 480, err);
    return rc ? rc : render(c, "depth_accept", err);
}

static const struct { const char *name; int (*fn)(pctx *, arb_err *); } figs[] = {
    {"speedup", fig_speedup}, {"ps_pt", fig_ps_pt}, {"tau_sweep", fig_tau_sweep},
    {"accept_hist", fig_accept_hist}, {"depth_accept", fig_depth_accept},
};

int arb_plot_write(sqlite3 *db, const arb_plot_opts *o, arb_err *err)
{
    bool all = !strcmp(o->figure, "all"), found = all;
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        found |= !strcmp(o->figure, figs[i].name);
    if (!found)
        return ARB_ERR(err, ARB_E_INVAL, "unknown figure '%s' (speedup ps_pt tau_sweep accept_hist depth_accept all)", o->figure);
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", o->out_dir, strerror(errno));
    pctx c = {.db = db, .o = o};
    int rc = arb_metrics_list_runs(db, &c.runs, &c.n, err);
    if (!rc && c.n == 0)
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "no runs in the database");
    int made = 0;
    for (size_t i = 0; !rc && i < sizeof figs / sizeof figs[0]; i++) {
        if (!all && strcmp(o->figure, figs[i].name))
            continue;
        arb_err e2 = {0};
        int r = figs[i].fn(&c, &e2);
        if (r == ARB_E_NOTFOUND && all)
            continue; /* "all": skip figures this database has no data for */
        if (r) {
            rc = r;
            *err = e2;
        } else {
            made++;
        }
    }
    if (!rc && !made)
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "no figure has data in this database");
    arb_metrics_free_runs(c.runs, c.n);
    return rc;
}
