/* reproduce_fmt.c — the reproduce module's writers (reproduce.h): the Markdown claim and
 * cell tables a person reads and the JSON a CI job gates on. Separate from reproduce.c,
 * which computes the verdicts, so each file stays one concern. */
#include "reproduce.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

/* Relative changes as signed percentages, ratios with "x", E.4 differences in tokens/call. */
static void fmt_stat(const arb_claim *c, double v, char *buf, size_t cap)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else if (c->kind == ARB_CLAIM_ORDER || c->kind == ARB_CLAIM_SIGN)
        snprintf(buf, cap, "%+.1f%%", 100 * v);
    else if (c->kind == ARB_CLAIM_RATIO)
        snprintf(buf, cap, "%.3fx", v);
    else
        snprintf(buf, cap, "%+.3f", v);
}

static void md_claims(const arb_repro_result *r, int n, FILE *f)
{
    fprintf(f, "| claim | kind | statistic must be | paper | verdict | cells (holds/fails/inconcl./missing) |\n"
               "|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const arb_claim *c = r[i].claim;
        int cnt[ARB_VERDICT_COUNT] = {0};
        for (int k = 0; k < r[i].n_cells; k++)
            cnt[r[i].cells[k].verdict]++;
        char thr[32], pv[32];
        fmt_stat(c, c->threshold, thr, sizeof thr);
        fmt_stat(c, c->paper_value, pv, sizeof pv);
        fprintf(f, "| %s | %s | %s %s", c->id, arb_claim_kind_name(c->kind), arb_claim_op_name(c->op), thr);
        if (c->tolerance > 0)
            fprintf(f, " (tol %g)", c->tolerance);
        fprintf(f, " | %s%s%s | **%s** | ", c->paper_text, isnan(c->paper_value) ? "" : " = ",
                isnan(c->paper_value) ? "" : pv, arb_verdict_name(r[i].verdict));
        if (c->untestable)
            fprintf(f, "%s |\n", c->untestable);
        else
            fprintf(f, "%d/%d/%d/%d |\n", cnt[0], cnt[1], cnt[2], cnt[3]);
    }
}

int arb_repro_write_md(const arb_repro_result *r, int n, FILE *f)
{
    md_claims(r, n, f);
    fprintf(f, "\n| claim | cell | paper | ours | 95%% interval | n | verdict |\n|---|---|---:|---:|---|---:|---|\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < r[i].n_cells; k++) {
            const arb_repro_cell *e = &r[i].cells[k];
            char p[32], v[32], lo[32], hi[32];
            fmt_stat(r[i].claim, e->paper, p, sizeof p), fmt_stat(r[i].claim, e->v, v, sizeof v);
            fmt_stat(r[i].claim, e->lo, lo, sizeof lo), fmt_stat(r[i].claim, e->hi, hi, sizeof hi);
            fprintf(f, "| %s | %s | %s | %s | ", r[i].claim->id, e->label, p, v);
            if (isnan(e->v))
                fprintf(f, "- | %d | %s |\n", e->n, arb_verdict_name(e->verdict));
            else
                fprintf(f, "[%s, %s]%s | %d | %s |\n", lo, hi,
                        e->uninformative ? " interval uninformative" : "", e->n, arb_verdict_name(e->verdict));
        }
    return ferror(f) ? ARB_E_IO : ARB_OK;
}

static void add_num(cJSON *o, const char *k, double v)
{
    if (isnan(v))
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddNumberToObject(o, k, v);
}

static cJSON *claim_json(const arb_repro_result *r)
{
    const arb_claim *c = r->claim;
    cJSON *o = cJSON_CreateObject(), *b = cJSON_CreateArray(), *cells = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "paper", c->paper);
    cJSON_AddStringToObject(o, "kind", arb_claim_kind_name(c->kind));
    cJSON_AddStringToObject(o, "text", c->text);
    cJSON_AddStringToObject(o, "verdict", arb_verdict_name(r->verdict));
    if (c->untestable)
        cJSON_AddStringToObject(o, "untestable", c->untestable);
    if (c->config)
        cJSON_AddStringToObject(o, "config", c->config);
    cJSON_AddStringToObject(o, "metric", arb_metric_name(c->metric));
    if (c->a)
        cJSON_AddStringToObject(o, "a", c->a);
    for (int j = 0; j < c->n_b; j++)
        cJSON_AddItemToArray(b, cJSON_CreateString(c->b[j]));
    cJSON_AddItemToObject(o, "b", b);
    cJSON_AddStringToObject(o, "op", arb_claim_op_name(c->op));
    add_num(o, "threshold", c->threshold);
    add_num(o, "tolerance", c->tolerance);
    cJSON_AddStringToObject(o, "paper_text", c->paper_text);
    add_num(o, "paper_value", c->paper_value);
    for (int k = 0; k < r->n_cells; k++) {
        const arb_repro_cell *e = &r->cells[k];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "cell", e->label);
        add_num(x, "paper", e->paper), add_num(x, "value", e->v);
        add_num(x, "lo", e->lo), add_num(x, "hi", e->hi);
        cJSON_AddNumberToObject(x, "n", e->n);
        cJSON_AddBoolToObject(x, "interval_uninformative", e->uninformative);
        cJSON_AddStringToObject(x, "verdict", arb_verdict_name(e->verdict));
        cJSON_AddItemToArray(cells, x);
    }
    cJSON_AddItemToObject(o, "cells", cells);
    return o;
}

int arb_repro_write_json(const arb_repro_result *r, int n, const arb_repro_opts *o, FILE *f,
                         arb_err *err)
{
    cJSON *root = cJSON_CreateObject(), *sum = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int cnt[ARB_VERDICT_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        cnt[r[i].verdict]++;
        cJSON_AddItemToArray(arr, claim_json(&r[i]));
    }
    cJSON_AddNumberToObject(root, "n_boot", o->n_boot);
    cJSON_AddNumberToObject(root, "seed", (double)o->seed);
    cJSON_AddNumberToObject(root, "n_min", o->n_min);
    for (int v = 0; v < ARB_VERDICT_COUNT; v++)
        cJSON_AddNumberToObject(sum, arb_verdict_name((arb_verdict)v), cnt[v]);
    cJSON_AddItemToObject(root, "summary", sum);
    cJSON_AddItemToObject(root, "claims", arr);
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF ? ARB_ERR(err, ARB_E_IO, "write error") : ARB_OK;
    free(s);
    return rc;
}
