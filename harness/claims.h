/* claims.h — the papers' claims as data (results/paper/claims.json, docs/reproduce.md).
 *
 * A claim names the config that tests it, the methods it compares (by config method id), a
 * metric and a comparison kind; reproduce.h turns it into a statistic per cell of a results
 * database, a bootstrap interval and a verdict. The statistic s of one cell, by kind:
 *   order  s = m(A)/m(B) - 1, one cell per dataset (and sampling setting) and per B in b
 *   sign   s = mean over datasets of m(A)/m(B) - 1 (macro), B = b[0]
 *   ratio  s = m(A) / max(m(B), m(C)), B, C = b[0], b[1] (GOOSE Fig. 4a synergy)
 *   bound  s = tau_meas - tau_eq1 of A (GOOSE Prop. 1 via Appendix E.4, analysis.h)
 * The claim holds when s `op` threshold, the threshold moved by `tolerance` in the claim's
 * favour ("abs<": |s| < threshold + tolerance).
 *
 *     arb_claims *cl; arb_err err = {0};
 *     if (arb_claims_load("results/paper/claims.json", &cl, &err)) die(err.msg);
 *     for (int i = 0; i < cl->n; i++) if (!strcmp(cl->c[i].paper, "goose")) puts(cl->c[i].id);
 *     arb_claims_free(cl);
 */
#ifndef ARB_CLAIMS_H
#define ARB_CLAIMS_H

#include <stdbool.h>

#include "error.h"
#include "metrics.h"

#define ARB_CLAIM_MAX_B 8 /* compared methods per claim */

typedef enum arb_claim_kind { ARB_CLAIM_ORDER, ARB_CLAIM_SIGN, ARB_CLAIM_RATIO, ARB_CLAIM_BOUND } arb_claim_kind;
typedef enum arb_claim_op { ARB_OP_GT, ARB_OP_GE, ARB_OP_LT, ARB_OP_LE, ARB_OP_ABS_LT } arb_claim_op;

typedef struct arb_claim {
    char *id;                     /* unique, "goose.t2.no-bypass" */
    char *paper;                  /* "goose" | "dte" */
    char *text;                   /* the paper's sentence, short */
    arb_claim_kind kind;
    char *config;                 /* the config that tests it, relative to the source root */
    arb_metric metric;            /* tau (block efficiency) or tps */
    char *a;                      /* method id the claim is about (NULL for untestable) */
    char *b[ARB_CLAIM_MAX_B];     /* compared method ids */
    int n_b;
    arb_claim_op op;              /* default per kind: order >=, sign <, ratio >, bound >= */
    double threshold;             /* default 0 (ratio: 1) */
    double tolerance;             /* >= 0, default 0 */
    char *paper_text;             /* the paper's figure in words ("Table 2: -2.9% macro") */
    double paper_value;           /* the paper's statistic for the whole claim, NAN if none */
    char *paper_table, *paper_model; /* per-cell paper statistic from results/paper/<paper>.tsv
                                        rows (table, model, method, dataset, tau); NULL if none */
    char *untestable;             /* why the claim cannot be tested here; NULL if it can */
} arb_claim;

typedef struct arb_claims {
    int n;
    arb_claim *c;
} arb_claims;

/* Parse and validate a claims file; errors name the file and JSON path
   ("claims.json: claims[3].kind: expected order|sign|ratio|bound, got \"less\""). */
int arb_claims_load(const char *path, arb_claims **out, arb_err *err);
int arb_claims_parse(const char *json, const char *name, arb_claims **out, arb_err *err);
void arb_claims_free(arb_claims *c); /* NULL-safe */

const char *arb_claim_kind_name(arb_claim_kind k); /* "order", ... */
const char *arb_claim_op_name(arb_claim_op op);    /* ">=", ..., "abs<" */
/* True if s satisfies the claim (the threshold relaxed by the tolerance). */
bool arb_claim_satisfied(const arb_claim *c, double s);

#endif
