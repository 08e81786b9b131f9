/* reproduce.h — verdicts on the papers' claims (claims.h) from a results database
 * (docs/reproduce.md): per cell the claim's statistic, a 95% percentile-bootstrap interval
 * over prompts and a verdict; pure functions of the database, the claim and the options.
 *
 * Cells: runs of the claim's methods (config method ids = `runs.base_method`; several runs of
 * one id in a cell are sweep points or (k, b) shapes, and the method counts with its best one,
 * as DTE Tables 2/3 do) grouped by model, dataset, generation limit, sampling and seed; a
 * macro claim (kind sign) averages the datasets of a group. The bootstrap resamples the
 * prompt ids every run of a cell shares, within each dataset, with one fixed-seed generator:
 * paired, stratified and deterministic.
 *
 * Verdict of a cell: holds when the whole interval satisfies the claim, fails when none of
 * it does, inconclusive when it straddles the threshold, missing without data. A claim fails
 * if any cell fails, else is inconclusive if any cell is, else missing if any cell is (or it
 * has none), else holds.
 *
 *     arb_repro_opts o = arb_repro_default_opts();
 *     arb_repro_result r;
 *     if (arb_repro_eval(db, &claims->c[i], &o, &r, &err)) die(err.msg);
 *     arb_repro_write_md(&r, 1, stdout);                  // or write_json for CI
 *     arb_repro_write_plot(&r, 1, "fig", NULL, true, &err); // fig/reproduce_goose.{dat,gp,png,svg}
 *     arb_repro_result_release(&r);
 */
#ifndef ARB_REPRODUCE_H
#define ARB_REPRODUCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "claims.h"
#include "config.h"
#include "error.h"

typedef enum arb_verdict {
    ARB_VERDICT_HOLDS, ARB_VERDICT_FAILS, ARB_VERDICT_INCONCLUSIVE, ARB_VERDICT_MISSING,
    ARB_VERDICT_UNTESTABLE, ARB_VERDICT_COUNT
} arb_verdict;

typedef struct arb_repro_opts {
    int n_boot;              /* bootstrap resamples (1000) */
    uint64_t seed;           /* bootstrap seed (0): same database, same intervals */
    int n_min;               /* a cell with a dataset of fewer prompts: "interval uninformative" (10) */
    const arb_config *scope; /* NULL: every run; else only its datasets, at their max_new_tokens */
    int max_new;             /* > 0: only runs with this generation limit (overrides the scope's) */
    const char *paper_tsv;   /* the paper's numbers for claims with paper_rows; NULL: none */
} arb_repro_opts;

typedef struct arb_repro_cell {
    char label[96];          /* "humaneval", "humaneval vs PLD", "macro: 5 datasets", "math500 T=0.6" */
    double v, lo, hi;        /* statistic and its interval (lo = hi = v with one prompt); NAN if missing */
    double paper;            /* the paper's statistic for this cell, NAN if none */
    int n;                   /* shared prompts (summed over the datasets of a macro cell) */
    arb_verdict verdict;
    bool uninformative;      /* some dataset of the cell has < n_min prompts: the interval says little */
} arb_repro_cell;

typedef struct arb_repro_result {
    const arb_claim *claim;  /* not owned */
    arb_verdict verdict;
    int n_cells;
    arb_repro_cell *cells;
    int n_min;               /* opts.n_min, for the writers */
} arb_repro_result;

arb_repro_opts arb_repro_default_opts(void);
const char *arb_verdict_name(arb_verdict v); /* "holds", "fails", ... */
/* Verdict of one interval [lo, hi] for claim c (NAN: missing). */
arb_verdict arb_repro_verdict(const arb_claim *c, double lo, double hi);
/* Evaluate one claim; out->cells is owned by out (arb_repro_result_release). */
int arb_repro_eval(sqlite3 *db, const arb_claim *c, const arb_repro_opts *o, arb_repro_result *out,
                   arb_err *err);
void arb_repro_result_release(arb_repro_result *r);

/* Markdown: a claim table (verdict per claim) and a cell table (paper vs ours, interval, n). */
int arb_repro_write_md(const arb_repro_result *r, int n, FILE *f);
/* JSON: {"n_boot", "seed", "summary": {verdict: count}, "claims": [... "cells": [...]]}. */
int arb_repro_write_json(const arb_repro_result *r, int n, const arb_repro_opts *o, FILE *f,
                         arb_err *err);
/* Figure (reproduce_plot.c): out_dir/reproduce_<paper>.{dat,gp}, one panel per table (claim id
   up to its last '.'), per cell ours with its interval, the paper's value and the threshold;
   rendered to .png/.svg when render (without gnuplot: ARB_E_EXTERNAL, .dat and .gp written).
   templates: directory of reproduce_cells.gp, NULL = <source root>/plots. */
int arb_repro_write_plot(const arb_repro_result *r, int n, const char *out_dir, const char *templates,
                         bool render, arb_err *err);

#endif
