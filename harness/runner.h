/* runner.h — runs an experiment config into a results database (docs/config.md,
 * docs/results-db.md, docs/scale-out.md).
 *
 * Order: model → dataset → sampling → seed → prompt → method, AR-like methods first, so every
 * prompt of a partial run has all its methods (paired speedups stay fair) and a method's ids
 * can be checked against AR's (lossless flag, greedy only). Each finished prompt is one
 * transaction; prompts already in the database are skipped, so re-running the same config
 * resumes. Hot-start methods (TR keeps its table across prompts) replay the skipped prompts
 * untimed to rebuild their state, so a resumed run stores what an uninterrupted one would.
 * `warmup` untimed generations (16 new tokens at most) precede each method's first one in a
 * process; they are not stored.
 *
 *     arb_config *c; arb_config_load("configs/ci.json", &c, &err);
 *     arb_run_opts o = arb_run_default_opts();
 *     o.shard_i = 1; o.shard_n = 4;                     // prompts with index % 4 == 1
 *     arb_run_summary s;
 *     int rc = arb_runner_run(c, &o, &s, &err);          // ARB_E_INTERRUPTED after Ctrl-C
 */
#ifndef ARB_RUNNER_H
#define ARB_RUNNER_H

#include <signal.h>
#include <stdio.h>

#include "config.h"
#include "error.h"

typedef struct arb_run_opts {
    const char *db_path;         /* NULL: results/<config name>.db (directory created) */
    int shard_i, shard_n;        /* run the prompts whose dataset index % shard_n == shard_i */
    int limit;                   /* > 0: at most this many prompts per dataset (overrides config) */
    const char *data_dir;        /* NULL: $ARBOR_DATA, else the cache (dataset.h) */
    int threads;                 /* > 0: overrides every model's thread count */
    FILE *log;                   /* progress and notes; NULL = silent */
    double progress_interval;    /* seconds between plain progress lines (not a terminal) */
    volatile sig_atomic_t *stop; /* set by a signal handler: the prompt in flight is dropped */
} arb_run_opts;

typedef struct arb_run_summary {
    char db_path[4096];
    int n_runs;                  /* cells (runs) of the config */
    long n_done;                 /* prompt × method generations stored now */
    long n_skipped;              /* already in the database */
    long n_failed;               /* prompts that could not run (e.g. context overflow) */
    double seconds;
} arb_run_summary;

arb_run_opts arb_run_default_opts(void);
/* "i/N" with 0 <= i < N. */
int arb_runner_parse_shard(const char *s, int *i, int *n, arb_err *err);
int arb_runner_run(const arb_config *c, const arb_run_opts *o, arb_run_summary *sum, arb_err *err);

#endif
