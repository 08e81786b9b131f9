/* report_entmtp.c — EntMTP Table 1 (table "entmtp1"): per dataset, every method of the database
 * in run order (AR first, then Hydra's default tree, the EntMTP policies, the τ sweep points):
 * tok/s, speedup over AR, τ (generated tokens per target call, prefill counted), the paper's τ
 * (accept length per draft-verify cycle = accepted drafts per step + 1) and the share of
 * lossless prompts; the published numbers (results/paper/entmtp.tsv, Vicuna-7B on an A100)
 * beside tok/s, speedup and τ per step, matched by method id (configs/entmtp/table1.json). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "report_int.h"

enum { COL_TPS, COL_SPEEDUP, COL_TAU, COL_TAU_STEP, COL_LOSSLESS, N_COL };

static bool seen(const arb_rctx *c, int upto, const char *field_of_i, bool ds)
{
    for (int j = 0; j < upto; j++)
        if (arb_report_model_ok(c, j) && !strcmp(ds ? c->runs[j].dataset : c->runs[j].method, field_of_i))
            return true;
    return false;
}

int arb_report_entmtp1(arb_rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Dataset", "Method"};
    if (arb_grid_init(g, 2, rh, N_COL))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    arb_grid_set_col(g, COL_TPS, NULL, "tok/s");
    arb_grid_set_col(g, COL_SPEEDUP, NULL, "speedup");
    arb_grid_set_col(g, COL_TAU, NULL, "τ (per call)");
    arb_grid_set_col(g, COL_TAU_STEP, NULL, "τ (per step)");
    arb_grid_set_col(g, COL_LOSSLESS, NULL, "lossless");
    snprintf(g->caption, sizeof g->caption,
             "EntMTP Table 1: tok/s by wall time incl. prefill; τ per call = generated tokens / target calls "
             "(prefill counted), τ per step = accepted drafts per step + 1 (the paper's τ); paper: Vicuna-7B, A100, "
             "T = 0.7 (results/paper/entmtp.tsv)");
    char path[4096];
    snprintf(path, sizeof path, "%s/results/paper/entmtp.tsv",
             getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT);
    arb_paper_rows pr = {0};
    const bool have_paper = arb_paper_load(path, &pr, NULL) == ARB_OK; /* absent: our columns alone */
    g->paper = have_paper;
    int rc = ARB_OK;
    /* datasets in first-seen order; within each, methods in first-seen (config) order */
    for (int d = 0; d < c->n && !rc; d++) {
        if (!arb_report_model_ok(c, d) || seen(c, d, c->runs[d].dataset, true))
            continue;
        const char *ds = c->runs[d].dataset;
        for (int i = 0; i < c->n && !rc; i++) {
            if (!arb_report_model_ok(c, i) || strcmp(c->runs[i].dataset, ds))
                continue;
            bool dup = false; /* several runs of one method here (seeds, samplings): the first */
            for (int j = 0; j < i && !dup; j++)
                dup = arb_report_model_ok(c, j) && !strcmp(c->runs[j].dataset, ds) &&
                      !strcmp(c->runs[j].method, c->runs[i].method);
            if (dup)
                continue;
            const char *lab[2] = {!strcmp(ds, "sharegpt") ? "ShareGPT" : arb_report_ds_title(ds), c->runs[i].method};
            int r = arb_grid_add_row(g, lab);
            if (r < 0) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
                break;
            }
            static const arb_metric m[N_COL] = {ARB_METRIC_TPS, ARB_METRIC_SPEEDUP, ARB_METRIC_TAU, ARB_METRIC_ACC_LEN,
                                                ARB_METRIC_LOSSLESS};
            for (int k = 0; k < N_COL && !rc; k++)
                rc = arb_report_cell(c, i, m[k], arb_grid_at(g, r, k), err);
            if (rc)
                break;
            arb_rcell *ts = arb_grid_at(g, r, COL_TAU_STEP);
            ts->v += 1, ts->lo += 1, ts->hi += 1; /* accepted drafts -> tokens per cycle */
            static const char *const pm[N_COL] = {"tps", "speedup", NULL, "tau", NULL};
            for (int k = 0; k < N_COL; k++)
                arb_grid_at(g, r, k)->paper =
                    have_paper && pm[k] ? arb_paper_value(&pr, "table1", NULL, c->runs[i].method, ds, pm[k]) : NAN;
        }
    }
    arb_paper_release(&pr);
    return rc;
}
