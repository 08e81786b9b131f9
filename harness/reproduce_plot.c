/* reproduce_plot.c — the reproduce module's figure (reproduce.h, `arbor reproduce --plot DIR`):
 * paper vs ours per cell, one panel per table of the paper. Separate from reproduce_fmt.c
 * (tables and JSON) because it goes through the plot helpers (plot.h) and gnuplot.
 *
 * A table is a claim id up to its last '.' ("goose.t2.no-bypass" → "goose.t2"), so the five
 * Table 2 ablations share one panel with one row each, and C1 / Table 1 get one row per dataset
 * (and per compared method). Per row: our statistic with its 95% bootstrap interval, the
 * paper's value for the cell (the claim's paper_value when the claim has one cell and no
 * per-cell value) and the claim's threshold (both ends of the band for op abs<). Relative
 * changes (order, sign) are drawn in %.
 *
 * DIR/reproduce_<paper>.dat: one gnuplot block per table (two blank lines apart), each opening
 * with the header line "pos label claim cell ours lo hi paper threshold n verdict op"; strings
 * are double-quoted, missing numbers NaN, statistics as in the JSON (fractions, not %).
 * DIR/reproduce_<paper>.gp: variables + plots/reproduce_cells.gp per terminal (plot.h).
 */
#include "reproduce.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plot.h"

#define MAX_TABLES 32

/* Length of the table prefix of a claim id ("goose.t2.x" → 8); the whole id if it has no '.'. */
static size_t table_len(const char *id)
{
    const char *dot = strrchr(id, '.');
    return dot ? (size_t)(dot - id) : strlen(id);
}

static bool same_table(const char *a, const char *b)
{
    size_t n = table_len(a);
    return n == table_len(b) && !strncmp(a, b, n);
}

static bool plotted(const arb_repro_result *r)
{
    return !r->claim->untestable && r->n_cells > 0;
}

/* A gnuplot string: double quotes become single ones. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fputc(*s == '"' ? '\'' : *s, f);
    fputc('"', f);
}

static void put_num(FILE *f, double v)
{
    isnan(v) ? fputs(" NaN", f) : fprintf(f, " %.6g", v);
}

/* Rows of one table (the claims r[i] with i >= first in first's table), into f. Returns rows. */
static int write_table(const arb_repro_result *r, int n, int first, FILE *f)
{
    const char *id0 = r[first].claim->id;
    int n_claims = 0, pos = 0;
    for (int i = first; i < n; i++)
        n_claims += plotted(&r[i]) && same_table(r[i].claim->id, id0);
    fputs("pos label claim cell ours lo hi paper threshold n verdict op\n", f);
    for (int i = first; i < n; i++) {
        if (!plotted(&r[i]) || !same_table(r[i].claim->id, id0))
            continue;
        const arb_claim *c = r[i].claim;
        const char *tail = c->id + table_len(c->id) + (c->id[table_len(c->id)] == '.');
        for (int k = 0; k < r[i].n_cells; k++) {
            const arb_repro_cell *e = &r[i].cells[k];
            char label[192];
            if (n_claims > 1)
                snprintf(label, sizeof label, "%s: %s", tail, e->label);
            else
                snprintf(label, sizeof label, "%s", e->label);
            double paper = !isnan(e->paper) ? e->paper : r[i].n_cells == 1 ? c->paper_value : NAN;
            fprintf(f, "%d ", pos++);
            put_str(f, label), fputc(' ', f), put_str(f, c->id), fputc(' ', f), put_str(f, e->label);
            put_num(f, e->v), put_num(f, e->lo), put_num(f, e->hi), put_num(f, paper);
            put_num(f, c->threshold);
            fprintf(f, " %d %s ", e->n, arb_verdict_name(e->verdict));
            put_str(f, arb_claim_op_name(c->op)), fputc('\n', f);
        }
    }
    return pos;
}

static const char *axis_label(const arb_claim *c)
{
    switch (c->kind) {
    case ARB_CLAIM_ORDER: return c->metric == ARB_METRIC_TAU ? "tau(A)/tau(B) - 1 (%)" : "m(A)/m(B) - 1 (%)";
    case ARB_CLAIM_SIGN: return "macro m(A)/m(B) - 1 (%)";
    case ARB_CLAIM_RATIO: return "m(A) / max(m(B), m(C)) (x)";
    default: return "tau measured - tau Eq. 1 (tokens/call)";
    }
}

int arb_repro_write_plot(const arb_repro_result *r, int n, const char *out_dir, const char *templates,
                         bool render, arb_err *err)
{
    if (n <= 0)
        return ARB_ERR(err, ARB_E_NOTFOUND, "reproduce --plot: no claims");
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", out_dir, strerror(errno));
    char name[96], path[4200];
    snprintf(name, sizeof name, "reproduce_%s", r[0].claim->paper);
    snprintf(path, sizeof path, "%s/%s.dat", out_dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", path, strerror(errno));
    /* Tables in claim order: a claim opens a block unless an earlier claim has its table. */
    int first[MAX_TABLES], rows[MAX_TABLES], nt = 0, max_rows = 0;
    for (int i = 0; i < n && nt < MAX_TABLES; i++) {
        bool seen = !plotted(&r[i]);
        for (int t = 0; t < nt && !seen; t++)
            seen = same_table(r[first[t]].claim->id, r[i].claim->id);
        if (seen)
            continue;
        if (nt)
            fputs("\n\n", f);
        first[nt] = i, rows[nt] = write_table(r, n, i, f);
        max_rows = rows[nt] > max_rows ? rows[nt] : max_rows;
        nt++;
    }
    if (fclose(f) != 0)
        return ARB_ERR(err, ARB_E_IO, "%s: write error", path);
    if (!nt)
        return ARB_ERR(err, ARB_E_NOTFOUND, "reproduce --plot: no testable claim has cells");
    /* Variables: per block a title, an x label, a scale (100: fractions drawn as %) and its rows. */
    char vars[8192];
    size_t o = 0;
    int ncol = nt < 2 ? 1 : 2, nrow = (nt + ncol - 1) / ncol;
    o += (size_t)snprintf(vars + o, sizeof vars - o, "nblocks = %d\nnrows = %d\nncols = %d\n"
                          "title_text = 'arbor reproduce %s: ours (95%% bootstrap CI) vs the paper'\n"
                          "array titles[%d]\narray xlabels[%d]\narray scales[%d]\narray nrows_b[%d]\n",
                          nt, nrow, ncol, r[0].claim->paper, nt, nt, nt, nt);
    for (int t = 0; t < nt && o < sizeof vars - 512; t++) {
        const arb_claim *c = r[first[t]].claim;
        bool pct = c->kind == ARB_CLAIM_ORDER || c->kind == ARB_CLAIM_SIGN;
        o += (size_t)snprintf(vars + o, sizeof vars - o,
                              "titles[%d] = '%.*s (%s, %s %g%s)'\nxlabels[%d] = '%s'\nscales[%d] = %d\n"
                              "nrows_b[%d] = %d\n",
                              t + 1, (int)table_len(c->id), c->id, arb_claim_kind_name(c->kind),
                              arb_claim_op_name(c->op), pct ? 100 * c->threshold : c->threshold,
                              pct ? "%" : "", t + 1, axis_label(c), t + 1, pct ? 100 : 1, t + 1, rows[t]);
    }
    int h = nrow * (80 + 22 * (max_rows < 3 ? 3 : max_rows)) + 60;
    int rc = arb_plot_script_tpl(out_dir, templates, "reproduce_cells", name, vars, 1400, h, err);
    return rc || !render ? rc : arb_plot_render(out_dir, name, err);
}
