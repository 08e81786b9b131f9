/* report_fmt.c — the report grid and its four writers (part of the report module).
 *
 * Markdown and LaTeX are for reading (values rounded, best in bold, intervals as [lo, hi] when
 * asked); CSV and JSON are for machines (full precision, intervals and paper values in their
 * own fields, bold as a "best" flag). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

int arb_grid_init(arb_grid *g, int n_rh, const char *const *rh_names, int nc)
{
    memset(g, 0, sizeof *g);
    g->n_rh = n_rh;
    for (int i = 0; i < n_rh && i < 4; i++)
        snprintf(g->rh_name[i], sizeof g->rh_name[i], "%s", rh_names[i]);
    g->nc = nc;
    g->prec = 2;
    g->cgroup = calloc((size_t)(nc > 0 ? nc : 1), sizeof *g->cgroup);
    g->cname = calloc((size_t)(nc > 0 ? nc : 1), sizeof *g->cname);
    return g->cgroup && g->cname ? ARB_OK : ARB_E_NOMEM;
}

int arb_grid_set_col(arb_grid *g, int j, const char *group, const char *name)
{
    free(g->cgroup[j]);
    free(g->cname[j]);
    g->cgroup[j] = group ? strdup(group) : NULL;
    g->cname[j] = strdup(name ? name : "");
    return g->cname[j] && (!group || g->cgroup[j]) ? ARB_OK : ARB_E_NOMEM;
}

int arb_grid_add_row(arb_grid *g, const char *const *labels)
{
    if (g->nr == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        char **rh = realloc(g->rh, (size_t)cap * g->n_rh * sizeof *rh);
        if (rh)
            g->rh = rh;
        arb_rcell *c = realloc(g->c, (size_t)cap * (g->nc ? g->nc : 1) * sizeof *c);
        if (c)
            g->c = c;
        bool *rule = realloc(g->rule, (size_t)cap * sizeof *rule);
        if (rule)
            g->rule = rule;
        if (!rh || !c || !rule)
            return -1;
        g->cap = cap;
    }
    int r = g->nr;
    for (int i = 0; i < g->n_rh; i++)
        if (!(g->rh[r * g->n_rh + i] = strdup(labels[i] ? labels[i] : ""))) {
            while (i-- > 0)
                free(g->rh[r * g->n_rh + i]);
            return -1;
        }
    for (int j = 0; j < g->nc; j++)
        g->c[r * g->nc + j] = (arb_rcell){.v = NAN, .lo = NAN, .hi = NAN, .paper = NAN};
    g->rule[r] = false;
    g->nr++;
    return r;
}

arb_rcell *arb_grid_at(arb_grid *g, int r, int j) { return &g->c[r * g->nc + j]; }

void arb_grid_pop(arb_grid *g)
{
    if (g->nr == 0)
        return;
    g->nr--;
    for (int i = 0; i < g->n_rh; i++)
        free(g->rh[g->nr * g->n_rh + i]);
}

void arb_grid_bold_max(arb_grid *g, int j, int r0, int r1)
{
    double best = -INFINITY;
    for (int r = r0; r < r1; r++) {
        arb_rcell *c = arb_grid_at(g, r, j);
        if (c->has && !isnan(c->v) && c->v > best)
            best = c->v;
    }
    for (int r = r0; r < r1; r++) {
        arb_rcell *c = arb_grid_at(g, r, j);
        c->bold = c->has && !isnan(c->v) && c->v == best && isfinite(best);
    }
}

void arb_grid_release(arb_grid *g)
{
    for (int i = 0; i < g->nr * g->n_rh; i++)
        free(g->rh[i]);
    for (int j = 0; j < g->nc; j++) {
        free(g->cgroup ? g->cgroup[j] : NULL);
        free(g->cname ? g->cname[j] : NULL);
    }
    free(g->rh), free(g->cgroup), free(g->cname), free(g->c), free(g->rule);
    memset(g, 0, sizeof *g);
}

/* Human-readable number: "2.78", "+25.4%", "—" for none. */
static void fmt_num(double v, bool pct, int prec, const char *none, char *buf, size_t cap)
{
    if (isnan(v))
        snprintf(buf, cap, "%s", none);
    else if (pct)
        snprintf(buf, cap, "%+.1f%%", 100.0 * v);
    else
        snprintf(buf, cap, "%.*f", prec, v);
}

static void fmt_cell(const arb_grid *g, const arb_rcell *c, bool tex, char *buf, size_t cap)
{
    const char *none = tex ? "--" : "—";
    char v[64], lo[64], hi[64];
    if (!c->has) {
        snprintf(buf, cap, "%s", none);
        return;
    }
    fmt_num(c->v, c->pct, c->count ? 0 : g->prec, none, v, sizeof v);
    if (tex && c->pct && !isnan(c->v)) /* escape the percent sign */
        snprintf(v + strlen(v) - 1, sizeof v - strlen(v) + 1, "\\%%");
    const char *b0 = c->bold ? (tex ? "\\textbf{" : "**") : "", *b1 = c->bold ? (tex ? "}" : "**") : "";
    if (g->ci && !isnan(c->lo)) {
        fmt_num(c->lo, c->pct, g->prec, none, lo, sizeof lo);
        fmt_num(c->hi, c->pct, g->prec, none, hi, sizeof hi);
        if (tex && c->pct)
            lo[strlen(lo) - 1] = 0, hi[strlen(hi) - 1] = 0;
        snprintf(buf, cap, "%s%s%s [%s, %s]", b0, v, b1, lo, hi);
    } else {
        snprintf(buf, cap, "%s%s%s", b0, v, b1);
    }
    if (c->note[0]) /* the note names what produced the value (e.g. the winning shape) */
        snprintf(buf + strlen(buf), cap - strlen(buf), tex ? " {\\scriptsize (%s)}" : " (%s)", c->note);
}

static void col_title(const arb_grid *g, int j, char *buf, size_t cap)
{
    if (g->cgroup[j] && g->cname[j][0])
        snprintf(buf, cap, "%s %s", g->cgroup[j], g->cname[j]);
    else
        snprintf(buf, cap, "%s", g->cgroup[j] ? g->cgroup[j] : g->cname[j]);
}

static void tex_escape(const char *s, FILE *f)
{
    for (; *s; s++) {
        if (strchr("_%&#$", *s))
            fputc('\\', f);
        if (!strncmp(s, "τ", strlen("τ"))) {
            fputs("$\\tau$", f);
            s += strlen("τ") - 1;
            continue;
        }
        if (!strncmp(s, "Δ", strlen("Δ"))) {
            fputs("$\\Delta$", f);
            s += strlen("Δ") - 1;
            continue;
        }
        fputc(*s, f);
    }
}

static void csv_field(const char *s, FILE *f)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_md(const arb_grid *g, FILE *f)
{
    char t[256];
    if (g->caption[0])
        fprintf(f, "_%s_\n\n", g->caption);
    fputs("|", f);
    for (int i = 0; i < g->n_rh; i++)
        fprintf(f, " %s |", g->rh_name[i]);
    for (int j = 0; j < g->nc; j++) {
        col_title(g, j, t, sizeof t);
        fprintf(f, " %s |", t);
        if (g->paper)
            fprintf(f, " paper |");
    }
    fputs("\n|", f);
    for (int i = 0; i < g->n_rh; i++)
        fputs("---|", f);
    for (int j = 0; j < g->nc * (g->paper ? 2 : 1); j++)
        fputs("---:|", f);
    fputc('\n', f);
    for (int r = 0; r < g->nr; r++) {
        fputs("|", f);
        for (int i = 0; i < g->n_rh; i++)
            fprintf(f, " %s |", g->rh[r * g->n_rh + i]);
        for (int j = 0; j < g->nc; j++) {
            const arb_rcell *c = &g->c[r * g->nc + j];
            char buf[256];
            fmt_cell(g, c, false, buf, sizeof buf);
            fprintf(f, " %s |", buf);
            if (g->paper) {
                fmt_num(c->paper, c->pct, g->prec, "", buf, sizeof buf);
                fprintf(f, " %s |", buf);
            }
        }
        fputc('\n', f);
    }
}

static void write_csv(const arb_grid *g, FILE *f)
{
    char t[256];
    for (int i = 0; i < g->n_rh; i++)
        fprintf(f, "%s%s", i ? "," : "", g->rh_name[i]);
    for (int j = 0; j < g->nc; j++) {
        col_title(g, j, t, sizeof t);
        fputc(',', f);
        csv_field(t, f);
        if (g->ci)
            fprintf(f, ",%s lo,%s hi", t, t);
        if (g->paper)
            fprintf(f, ",%s paper", t);
        if (g->notes) {
            char n[300];
            snprintf(n, sizeof n, "%s at", t);
            fputc(',', f);
            csv_field(n, f);
        }
    }
    fputc('\n', f);
    for (int r = 0; r < g->nr; r++) {
        for (int i = 0; i < g->n_rh; i++) {
            if (i)
                fputc(',', f);
            csv_field(g->rh[r * g->n_rh + i], f);
        }
        for (int j = 0; j < g->nc; j++) {
            const arb_rcell *c = &g->c[r * g->nc + j];
            double vals[4] = {c->has ? c->v : NAN, c->lo, c->hi, c->paper};
            int n = 1 + (g->ci ? 2 : 0);
            for (int k = 0; k < n; k++)
                isnan(vals[k]) ? fputs(",", f) : fprintf(f, ",%.6g", vals[k]);
            if (g->paper)
                isnan(vals[3]) ? fputs(",", f) : fprintf(f, ",%.6g", vals[3]);
            if (g->notes) {
                fputc(',', f);
                csv_field(c->note, f);
            }
        }
        fputc('\n', f);
    }
}

static void write_tex(const arb_grid *g, FILE *f)
{
    int per = g->paper ? 2 : 1;
    if (g->caption[0])
        fprintf(f, "%% %s\n", g->caption);
    fputs("\\begin{tabular}{", f);
    for (int i = 0; i < g->n_rh; i++)
        fputc('l', f);
    for (int j = 0; j < g->nc * per; j++)
        fputc('r', f);
    fputs("}\n\\toprule\n", f);
    bool groups = false;
    for (int j = 0; j < g->nc; j++)
        groups |= g->cgroup[j] && g->cname[j][0];
    if (groups) { /* first header line: groups spanning their columns */
        for (int i = 0; i < g->n_rh; i++)
            fputs(i ? " & " : "", f);
        for (int j = 0; j < g->nc;) {
            int k = j + 1;
            while (k < g->nc && g->cgroup[k] && g->cgroup[j] && !strcmp(g->cgroup[k], g->cgroup[j]))
                k++;
            fprintf(f, " & \\multicolumn{%d}{c}{", (k - j) * per);
            tex_escape(g->cgroup[j] ? g->cgroup[j] : "", f);
            fputs("}", f);
            j = k;
        }
        fputs(" \\\\\n", f);
    }
    for (int i = 0; i < g->n_rh; i++) {
        fputs(i ? " & " : "", f);
        tex_escape(g->rh_name[i], f);
    }
    for (int j = 0; j < g->nc; j++) {
        char t[256];
        if (groups)
            snprintf(t, sizeof t, "%s", g->cname[j][0] ? g->cname[j] : g->cgroup[j] ? g->cgroup[j] : "");
        else
            col_title(g, j, t, sizeof t);
        fputs(" & ", f);
        tex_escape(t, f);
        if (g->paper)
            fputs(" & paper", f);
    }
    fputs(" \\\\\n\\midrule\n", f);
    for (int r = 0; r < g->nr; r++) {
        if (g->rule[r])
            fputs("\\midrule\n", f);
        for (int i = 0; i < g->n_rh; i++) {
            fputs(i ? " & " : "", f);
            tex_escape(g->rh[r * g->n_rh + i], f);
        }
        for (int j = 0; j < g->nc; j++) {
            const arb_rcell *c = &g->c[r * g->nc + j];
            char buf[256];
            fmt_cell(g, c, true, buf, sizeof buf);
            fprintf(f, " & %s", buf);
            if (g->paper) {
                fmt_num(c->paper, c->pct, g->prec, "", buf, sizeof buf);
                if (c->pct && buf[0])
                    buf[strlen(buf) - 1] = 0;
                fprintf(f, " & %s", buf);
            }
        }
        fputs(" \\\\\n", f);
    }
    fputs("\\bottomrule\n\\end{tabular}\n", f);
}

static cJSON *num_or_null(double v) { return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v); }

static int write_json(const arb_grid *g, FILE *f, arb_err *err)
{
    cJSON *root = cJSON_CreateArray();
    for (int r = 0; root && r < g->nr; r++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddItemToArray(root, row);
        for (int i = 0; i < g->n_rh; i++)
            cJSON_AddStringToObject(row, g->rh_name[i], g->rh[r * g->n_rh + i]);
        for (int j = 0; j < g->nc; j++) {
            const arb_rcell *c = &g->c[r * g->nc + j];
            char t[256];
            col_title(g, j, t, sizeof t);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(row, t, o);
            cJSON_AddItemToObject(o, "value", num_or_null(c->has ? c->v : NAN));
            if (!isnan(c->lo)) {
                cJSON_AddItemToObject(o, "lo", num_or_null(c->lo));
                cJSON_AddItemToObject(o, "hi", num_or_null(c->hi));
            }
            if (g->paper)
                cJSON_AddItemToObject(o, "paper", num_or_null(c->paper));
            if (c->bold)
                cJSON_AddTrueToObject(o, "best");
            if (c->note[0])
                cJSON_AddStringToObject(o, "at", c->note);
        }
    }
    char *txt = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!txt)
        return ARB_ERR(err, ARB_E_NOMEM, "report: out of memory");
    fprintf(f, "%s\n", txt);
    free(txt);
    return ARB_OK;
}

int arb_grid_write(const arb_grid *g, arb_report_fmt fmt, FILE *f, arb_err *err)
{
    switch (fmt) {
    case ARB_FMT_MD: write_md(g, f); break;
    case ARB_FMT_CSV: write_csv(g, f); break;
    case ARB_FMT_TEX: write_tex(g, f); break;
    case ARB_FMT_JSON: return write_json(g, f, err);
    }
    if (ferror(f))
        return ARB_ERR(err, ARB_E_IO, "report: write error");
    return ARB_OK;
}
