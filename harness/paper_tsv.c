/* paper_tsv.c — see paper_tsv.h. */
#include "paper_tsv.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_line(const char *line, arb_paper_row *r)
{
    char f[5][128];
    double v;
    if (sscanf(line, "%127[^\t]\t%127[^\t]\t%127[^\t]\t%127[^\t]\t%127[^\t]\t%lf", f[0], f[1], f[2], f[3], f[4],
               &v) != 6)
        return -1;
    char *dst[5] = {r->table, r->model, r->method, r->dataset, r->metric};
    const size_t cap[5] = {sizeof r->table, sizeof r->model, sizeof r->method, sizeof r->dataset, sizeof r->metric};
    for (int i = 0; i < 5; i++)
        if ((size_t)snprintf(dst[i], cap[i], "%s", f[i]) >= cap[i])
            return -1;
    r->v = v;
    return 0;
}

int arb_paper_load(const char *path, arb_paper_rows *out, arb_err *err)
{
    *out = (arb_paper_rows){0};
    FILE *f = fopen(path, "r");
    if (!f)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot open the paper's numbers", path);
    char line[1024];
    int ln = 0, cap = 0, rc = ARB_OK;
    while (!rc && fgets(line, sizeof line, f)) {
        ln++;
        if (line[0] == '#' || line[0] == '\n' || !strncmp(line, "table\t", 6))
            continue;
        if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            arb_paper_row *np = realloc(out->row, (size_t)cap * sizeof *np);
            if (!np) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
                break;
            }
            out->row = np;
        }
        if (parse_line(line, &out->row[out->n]) != 0)
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s:%d: expected 6 tab-separated fields (table model method "
                         "dataset metric value)", path, ln);
        else
            out->n++;
    }
    fclose(f);
    if (rc)
        arb_paper_release(out);
    return rc;
}

static bool key_ok(const char *want, const char *have) { return !want || !strcmp(want, have); }

double arb_paper_value(const arb_paper_rows *p, const char *table, const char *model, const char *method,
                       const char *dataset, const char *metric)
{
    for (int i = 0; p && i < p->n; i++) {
        const arb_paper_row *r = &p->row[i];
        if (key_ok(table, r->table) && key_ok(model, r->model) && key_ok(method, r->method) &&
            key_ok(dataset, r->dataset) && key_ok(metric, r->metric))
            return r->v;
    }
    return NAN;
}

void arb_paper_release(arb_paper_rows *p)
{
    if (!p)
        return;
    free(p->row);
    *p = (arb_paper_rows){0};
}
