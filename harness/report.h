/* report.h — paper-style tables from a results database, as Markdown, CSV, LaTeX or JSON.
 *
 * Tables (docs/results-db.md lists the metrics):
 *   table1  τ of the spine tree vs Iso(3)/Iso(5) per model × dataset, Δ% over Iso(3) (GOOSE T1)
 *   table2  τ per ablation × dataset for one model, macro Δ% vs the reference method (GOOSE T2)
 *   table3  Spd and τ per model × method × dataset, averages, best per column in bold (GOOSE T3)
 *   pivot   any metric over any row/column keys (--rows model,method --cols dataset --metric tau)
 *   summary one row per run with every metric and its bootstrap 95% interval
 *   synergy τ_GOOSE / max(τ_PLD, τ_TR) and the spine-continuation share per model × dataset
 *   depth   acceptance rate by tree depth per run
 *   dte     τ and tok/s per verifier × sampling setting at the best (k, b) per dataset and
 *           setting, averaged over datasets; winners as cell notes (DTE Tables 2/3, Appendix F;
 *           no intervals: a cell is a mean of per-dataset maxima)
 *   sequoia-p  Sequoia's positional acceptance p[k] from the logged ranks, with counts, Wilson
 *           95% intervals and the `sequoia_p` list (report_sequoia.c)
 *   cost    τ, measured speedup, speedup predicted by the eval cost model t(n, L) fitted on
 *           the other runs' steps (costmodel.h), the error, and GPU roofline projections; with
 *           profile set, also the speedup predicted from that bench profile and its error
 *   loops   repeat16 and the speedup apart on the prompts whose output loops (more than 10% of
 *           its tokens end a repeated 16-token run) and on the loop-free ones
 *   auto    (the default) dte when every speculative run is a draft-model run, else table3
 * With paper_model set, each value column gets a neighbour with the published figure for that
 * paper model (results/paper/goose.tsv).
 *
 *     arb_report_opts o = arb_report_default_opts();
 *     o.table = "table3"; o.fmt = ARB_FMT_MD;
 *     if (arb_report_write(db, &o, stdout, &err)) die(err.msg);
 */
#ifndef ARB_REPORT_H
#define ARB_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sqlite3.h>

#include "error.h"
#include "metrics.h"

typedef enum arb_report_fmt { ARB_FMT_MD, ARB_FMT_CSV, ARB_FMT_TEX, ARB_FMT_JSON } arb_report_fmt;

typedef struct arb_report_opts {
    const char *table;        /* see above */
    arb_report_fmt fmt;
    const char *rows, *cols;  /* pivot keys, comma-separated: model method base_method dataset
                                 drafter topology sweep seed temperature top_p sampling config */
    arb_metric metric;        /* pivot metric */
    const char *model;        /* only this model id (table2: which model; default the first) */
    const char *paper_model;  /* print the published value of this paper model beside ours */
    const char *paper_path;   /* default $ARBOR_SOURCE_ROOT or the source tree's results/paper/goose.tsv */
    const char *spine, *iso3, *iso5; /* table1 method labels (GOOSE, Iso3, Iso5) */
    const char *ref;          /* table2 reference method (GOOSE) */
    const char *pld, *tr;     /* synergy baselines (PLD, TR) */
    int n_boot;               /* bootstrap resamples (1000); 0 = no intervals */
    bool ci;                  /* print intervals in table cells (summary always has them) */
    const char *method;       /* sequoia-p: only this method id (NULL: every ranked method) */
    const char *dataset;      /* sequoia-p: only this dataset (NULL: all) */
    const char *profile;      /* cost: a cost profile (`arbor bench engine --save-profile`) to
                                 predict from as well (NULL: the leave-one-run-out fit only) */
} arb_report_opts;

arb_report_opts arb_report_default_opts(void);
int arb_report_parse_fmt(const char *s, arb_report_fmt *out, arb_err *err);
int arb_report_write(sqlite3 *db, const arb_report_opts *o, FILE *out, arb_err *err);

#endif
