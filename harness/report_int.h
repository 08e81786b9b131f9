/* report_int.h — the table grid shared by report.c (which fills it) and report_fmt.c (which
 * writes it as md/csv/tex/json). Internal to the report module. */
#ifndef ARB_REPORT_INT_H
#define ARB_REPORT_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "report.h"

typedef struct arb_rcell {
    bool has;            /* false: empty cell */
    double v, lo, hi;    /* value and bootstrap interval (NAN when none) */
    double paper;        /* published value (NAN when none) */
    bool bold;           /* best in its column (group) */
    bool pct;            /* a relative change, printed as a signed percentage */
    bool count;          /* an integer count, printed without decimals */
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
} arb_grid;

int arb_grid_init(arb_grid *g, int n_rh, const char *const *rh_names, int nc);
int arb_grid_set_col(arb_grid *g, int j, const char *group, const char *name);
int arb_grid_add_row(arb_grid *g, const char *const *labels); /* row index, or -1 (no memory) */
arb_rcell *arb_grid_at(arb_grid *g, int r, int j);
void arb_grid_pop(arb_grid *g); /* drop the last row */
void arb_grid_bold_max(arb_grid *g, int j, int r0, int r1); /* bold the max of rows [r0, r1) */
void arb_grid_release(arb_grid *g);
int arb_grid_write(const arb_grid *g, arb_report_fmt fmt, FILE *f, arb_err *err);

#endif
