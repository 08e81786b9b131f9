/* paper_tsv.h — the papers' published numbers (results/paper/<paper>.tsv): one row per
 * table, model, method, dataset and metric. Read by `arbor report --paper` and by
 * `arbor reproduce` (paper values beside ours).
 *
 *     arb_paper_rows pr = {0};
 *     if (arb_paper_load("results/paper/goose.tsv", &pr, &err) == ARB_OK)
 *         v = arb_paper_value(&pr, "table2", "Qwen3-8B", "GOOSE", "humaneval", "tau");  // NAN if none
 *     arb_paper_release(&pr);
 */
#ifndef ARB_PAPER_TSV_H
#define ARB_PAPER_TSV_H

#include "error.h"

typedef struct arb_paper_row {
    char table[32], model[64], method[64], dataset[64], metric[32];
    double v;
} arb_paper_row;

typedef struct arb_paper_rows {
    arb_paper_row *row;
    int n;
} arb_paper_rows;

/* Tab-separated "table model method dataset metric value"; '#' lines, blank lines and the
   header are skipped. Any other line that does not parse, or a field too long, is an error
   naming the file and line. */
int arb_paper_load(const char *path, arb_paper_rows *out, arb_err *err);
/* The value of the first row matching every non-NULL key (table NULL: any table); NAN if none. */
double arb_paper_value(const arb_paper_rows *p, const char *table, const char *model, const char *method,
                       const char *dataset, const char *metric);
void arb_paper_release(arb_paper_rows *p); /* NULL-safe */

#endif
