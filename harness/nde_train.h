/* nde_train.h — training and offline evaluation of the NDE selector from the data of
 * `arbor nde data` (nde_data.h; docs/sampling.md, "NDE"): `arbor nde train` and `arbor nde eval`.
 *
 *     arb_nde_train_opts o = arb_nde_train_default_opts();
 *     o.db = "results/nde.db"; o.tag = "train"; o.verifier = "spectr"; o.out = "nde-spectr.json";
 *     if (arb_nde_train(&o, stdout, &err)) die(err.msg);
 *     arb_nde_eval_opts e = {.db = o.db, .tag = "eval", .selector = o.out};
 *     if (arb_nde_eval(&e, stdout, &err)) die(err.msg);    // Tables 4-7 from exact BE
 *
 * Roots are split by prompt, never by row: a held-out prompt's roots are all held out.
 */
#ifndef ARB_NDE_TRAIN_H
#define ARB_NDE_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

typedef struct arb_nde_train_opts {
    const char *db, *tag;   /* the data (nde_data.h) */
    const char *verifier;   /* whose BE the selector maximises ("spectr") */
    const char *objective;  /* "throughput" (BE / T(n, a)) | "be" */
    const char *out;        /* the selector JSON written */
    int hidden;             /* MLP hidden units (32) */
    int steps;              /* full-batch AdamW steps at most (3000) */
    int patience;           /* stop after this many steps without a better held-out loss (300) */
    double lr, weight_decay;/* 3e-3, 1e-2 */
    double lambda, rho;     /* tail penalty weight and share (1, 0.1) */
    double heldout;         /* share of prompts held out (0.25) */
    uint64_t seed;          /* init and split (0) */
} arb_nde_train_opts;
arb_nde_train_opts arb_nde_train_default_opts(void);
int arb_nde_train(const arb_nde_train_opts *o, FILE *out, arb_err *err);

typedef struct arb_nde_eval_opts {
    const char *db, *tag;   /* evaluation data (other prompts than the training tag's) */
    const char *selector;   /* trained selector JSON; its verifier and objective */
    int n_boot;             /* bootstrap resamples of prompts (2000) */
} arb_nde_eval_opts;
/* Per (dataset, setting): NDE (the file's verifier, argmax action per root) vs the best fixed
   (k, b) at l = 0 for that verifier and vs Traversal at its best fixed (k, b), in exact BE and in
   modelled throughput, with 95% bootstrap intervals over prompts; a Markdown table. */
int arb_nde_eval(const arb_nde_eval_opts *o, FILE *out, arb_err *err);

#endif
