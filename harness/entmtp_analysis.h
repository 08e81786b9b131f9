/* entmtp_analysis.h — EntMTP Appendix A statistics over per-step rows (docs/entmtp.md,
 * "Analyses"): Pearson r of a feature with the next accept length and its bootstrap interval
 * over prompts (cluster resampling: a prompt's steps are not independent), an L2-regularised
 * logistic regression trained with AdamW (harness/adamw.h) on standardised features, and
 * AUROC. Rows carry their prompt index so every split and resample is by prompt (the paper's
 * sample_idx), never by row.
 *
 *     double r = arb_pearson(x, y, n);                         // NAN if a side is constant
 *     double lo, hi;
 *     arb_pearson_boot(x, y, grp, n, n_grp, 1000, seed, &lo, &hi);    // resamples prompts
 *     arb_logreg lr;  arb_logreg_fit(X, yb, rows, F, &opts, &lr, &err);  // X row-major
 *     double p = arb_logreg_predict(&lr, X + i * F);
 *     double auc = arb_auroc(score, yb, n);                    // ties count one half
 */
#ifndef ARB_ENTMTP_ANALYSIS_H
#define ARB_ENTMTP_ANALYSIS_H

#include <stdint.h>

#include "error.h"

#define ARB_LOGREG_FMAX 64

/* Pearson correlation of x and y over n rows; NAN when n < 2 or either side is constant. */
double arb_pearson(const double *x, const double *y, int n);

/* 95 % percentile interval of Pearson r over `boot` cluster resamples: groups (prompts,
   grp[i] in 0..n_grp) drawn with replacement, all rows of a drawn group kept. Deterministic
   for a seed. *lo = *hi = NAN if fewer than two groups or every resample is degenerate.
   Allocates its scratch (O(n + n_grp + boot)); ARB_E_NOMEM on failure. */
int arb_pearson_boot(const double *x, const double *y, const int *grp, int n, int n_grp, int boot, uint64_t seed,
                     double *lo, double *hi);

typedef struct arb_logreg_opts {
    int steps;      /* full-batch AdamW steps (400) */
    double lr;      /* peak learning rate (0.05) */
    double l2;      /* L2 penalty on the weights (not the bias) added to the mean log-loss (1e-3) */
} arb_logreg_opts;

arb_logreg_opts arb_logreg_default_opts(void);

typedef struct arb_logreg {
    int F;                         /* features */
    double mean[ARB_LOGREG_FMAX];  /* standardisation from the training rows */
    double sd[ARB_LOGREG_FMAX];    /* (1 where a feature is constant) */
    double w[ARB_LOGREG_FMAX + 1]; /* weights, then the bias */
} arb_logreg;

/* Fit P(y = 1 | x) = sigmoid(w . z + b), z the standardised x, on rows X[0..n) × F (row-major)
   with labels y in {0, 1}: mean log-loss, AdamW. 1 <= F <= ARB_LOGREG_FMAX, n >= 1. */
int arb_logreg_fit(const double *X, const int *y, int n, int F, const arb_logreg_opts *o, arb_logreg *out,
                   arb_err *err);
double arb_logreg_predict(const arb_logreg *m, const double *x);

/* Area under the ROC curve of score for labels y (1 positive): the Mann-Whitney statistic with
   ties counted one half; NAN if a class is empty. Allocates an index (ARB_E_NOMEM: NAN). */
double arb_auroc(const double *score, const int *y, int n);

#endif
