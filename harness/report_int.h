/* report_int.h — the table grid shared by report.c and report_dte.c (which fill it) and
 * report_fmt.c (which writes it as md/csv/tex/json), and the context the table builders get.
 * Internal to the report module. */
#ifndef ARB_REPORT_INT_H
#define ARB_REPORT_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "paper_tsv.h"
#include "report.h"

typedef struct arb_rctx {     /* what a table builder reads */
    sqlite3 *db;
    const arb_report_opts *o;
    arb_run_info *runs;
    int n;
    arb_run_stats *st;        /* lazily loaded, one per run */
    bool *loaded;
    arb_paper_rows paper;     /* the published numbers (results/paper/goose.tsv) */
} arb_rctx;

typedef struct arb_rcell {
    bool has;            /* false: empty cell */
    double v, lo, hi;    /* value and bootstrap interval (NAN when none) */
    double paper;        /* published value (NAN when none) */
    bool bold;           /* best in its column (group) */
    bool pct;            /* a relative change, printed as a signed percentage */
    bool count;          /* an integer count, printed without decimals */
    char note[48];       /* short text after the value, e.g. the winning shape ("" = none) */
} arb_rcell;

typedef struct arb_grid {
    int n_rh;                  /* row-header columns */
    char rh_name[4][32];       /* their titles */
    int nr, nc, cap;
    char **rh;                 /* nr × n_rh labels */
    char **cgroup, **cname;    /* nc: column group (may be NULL) and name */
    arb_rcell *c;              /* nr × nc */
    bool *rule;                /* nr: a rule above this row (averages) */
    bool paper, ci;            /* print paper columns / intervals */
    int prec;                  /* decimals (2) */
    bool notes;                /* some cell has a note: CSV gets a "<column> at" column each */
    char caption[4096];        /* printed above the table in md (italics) and tex (comment) */
} arb_grid;

int arb_grid_init(arb_grid *g, int n_rh, const char *const *rh_names, int nc);
int arb_grid_set_col(arb_grid *g, int j, const char *group, const char *name);
int arb_grid_add_row(arb_grid *g, const char *const *labels); /* row index, or -1 (no memory) */
arb_rcell *arb_grid_at(arb_grid *g, int r, int j);
void arb_grid_pop(arb_grid *g); /* drop the last row */
void arb_grid_bold_max(arb_grid *g, int j, int r0, int r1); /* bold the max of rows [r0, r1) */
void arb_grid_release(arb_grid *g);
int arb_grid_write(const arb_grid *g, arb_report_fmt fmt, FILE *f, arb_err *err);

/* report.c: one run's metric as a cell (bootstrap interval when o->n_boot > 0). */
int arb_report_cell(arb_rctx *c, int i, arb_metric m, arb_rcell *out, arb_err *err);
const char *arb_report_ds_title(const char *id); /* "math500" -> "MATH500" */
bool arb_report_model_ok(const arb_rctx *c, int i);

/* report_dte.c: the DTE Tables 2/3 layout (table "dte"), the sampling-setting label
   ("T=0.6", "T=1 p=0.9") and whether a database holds only draft-model runs (table "auto"). */
int arb_report_dte(arb_rctx *c, arb_grid *g, arb_err *err);
void arb_report_setting(const arb_run_info *r, char *buf, size_t cap);
bool arb_report_is_dte(const arb_rctx *c);

/* report_sequoia.c: Sequoia's p[k] estimated from the logged ranks (table "sequoia-p"). */
int arb_report_sequoia_p(arb_rctx *c, arb_grid *g, arb_err *err);

/* report_cost.c: predicted (cost model, leave-one-run-out) beside measured speedup, and GPU
   roofline projections (table "cost"). */
int arb_report_cost(arb_rctx *c, arb_grid *g, arb_err *err);
/* report_machines.c: the sessions' machines, kernels, threads and builds (table "machines"). */
int arb_report_machines(arb_rctx *c, arb_grid *g, arb_err *err);

/* report_entmtp.c: EntMTP Table 1 (table "entmtp1"), the paper's numbers beside ours. */
int arb_report_entmtp1(arb_rctx *c, arb_grid *g, arb_err *err);

#endif
