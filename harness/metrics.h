/* metrics.h — what the papers report, computed from a results database (store.h):
 * τ (generated tokens ÷ target calls, prefill = one call, bonus included), tok/s (tokens ÷
 * wall time incl. prefill), speedup vs the AR run of the same model/dataset/sampling/seed
 * (paired per prompt), acceptance by source p_s / p_t and by depth, the spine-continuation
 * share, and percentile-bootstrap 95% intervals over prompts.
 *
 *     arb_run_info *runs; int n;
 *     arb_metrics_list_runs(db, &runs, &n, &err);
 *     arb_run_stats g, ar;
 *     arb_metrics_load(db, &runs[i], &g, &err);
 *     arb_metrics_load(db, &runs[arb_metrics_find_ar(runs, n, i)], &ar, &err);
 *     arb_ci sp;
 *     arb_metrics_ci(&g, &ar, ARB_METRIC_SPEEDUP, 1000, 0, &sp);  // sp.v, sp.lo, sp.hi
 *     arb_run_stats_release(&g); arb_run_stats_release(&ar); arb_metrics_free_runs(runs, n);
 */
#ifndef ARB_METRICS_H
#define ARB_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

#include "error.h"
#include "store.h"

#define ARB_METRICS_DMAX 64 /* depths / accepted lengths tracked (the last bin collects the rest) */

typedef enum arb_metric {
    ARB_METRIC_TAU, ARB_METRIC_TPS, ARB_METRIC_SPEEDUP, ARB_METRIC_P_S, ARB_METRIC_P_T,
    ARB_METRIC_SPINE_SHARE, ARB_METRIC_ACC_LEN, ARB_METRIC_LOSSLESS, ARB_METRIC_N_PROMPTS,
    ARB_METRIC_TPS_CPU,     /* tokens per second of the process's CPU time (prompts.cpu_us) */
    ARB_METRIC_SPEEDUP_CPU, /* the speedup in CPU time, paired per prompt like speedup: a measure a
                               shared machine's load changes less (one thread; NAN when a prompt
                               has no cpu_us, i.e. a database from before schema 3) */
    ARB_METRIC_TPS_DECODE,     /* tokens after the first per second after it (wall_us - prefill_us;
                                  the prefill's time ends with the first token) */
    ARB_METRIC_SPEEDUP_DECODE, /* that rate against AR's, paired per prompt: the speedup without the
                                  prefill, which the methods share and cannot shorten (NAN when a
                                  prompt has no prefill_us) */
    ARB_METRIC_REPEAT16,       /* share of the generated tokens that end a run of 16 tokens the output
                                  already holds earlier: text caught in a verbatim loop, which a
                                  lookup drafter copies (from the tokens table; NAN when a prompt has
                                  none). A property of the text, the same for every lossless method */
    ARB_METRIC_COUNT
} arb_metric;

typedef struct arb_run_info {     /* one row of `runs` (strings owned by the array) */
    char *run_key, *method, *base_method, *model, *model_sha256, *dataset, *drafter, *topology;
    char *sweep_json, *config_name;
    int max_new_tokens, top_k;
    double temperature, top_p;
    int64_t seed;
} arb_run_info;

typedef struct arb_prompt_stat {  /* per-prompt sums over its steps */
    char *prompt_id;
    int64_t n_gen, n_calls, wall_us, steps, accepted;
    int64_t cpu_us;               /* -1: not measured */
    int64_t prefill_us;           /* -1: not stored */
    int64_t n_ids, n_repeat;      /* generated ids stored and those ending a repeated 16-token run
                                     (arb_metrics_repeat_count); n_ids -1: no tokens row */
    int64_t acc_src[ARB_STORE_NSRC], prop_src[ARB_STORE_NSRC];
    int64_t n_spine, acc_spine, acc_spine_cont;
    int lossless;                 /* 1, 0, -1 unknown */
} arb_prompt_stat;

typedef struct arb_run_stats {
    const arb_run_info *info;     /* not owned */
    int n;                        /* prompts, sorted by prompt_id */
    arb_prompt_stat *p;
    int64_t depth_reach[ARB_METRICS_DMAX + 1]; /* [d]: steps with k >= d-1 and tree depth >= d */
    int64_t depth_acc[ARB_METRICS_DMAX + 1];   /* [d]: steps with k >= d */
    int64_t hist[ARB_METRICS_DMAX + 1];        /* [k]: steps that accepted k drafts */
} arb_run_stats;

typedef struct arb_ci { double v, lo, hi; } arb_ci; /* NAN when undefined */

const char *arb_metric_name(arb_metric m);       /* "tau", "tps", "speedup", ... */
bool arb_metric_paired(arb_metric m);            /* speedup, speedup_cpu: against the AR run */
int arb_metric_parse(const char *name, arb_metric *out, arb_err *err);

int arb_metrics_list_runs(sqlite3 *db, arb_run_info **out, int *n, arb_err *err);
void arb_metrics_free_runs(arb_run_info *runs, int n);
/* Index of the AR run (drafter "none") paired with runs[i], or -1. */
int arb_metrics_find_ar(const arb_run_info *runs, int n, int i);
/* Index of the run with this method label and the same model/dataset/sampling/seed, or -1. */
int arb_metrics_find_sibling(const arb_run_info *runs, int n, int i, const char *method);

int arb_metrics_load(sqlite3 *db, const arb_run_info *info, arb_run_stats *out, arb_err *err);
void arb_run_stats_release(arb_run_stats *s);

/* Tokens i >= w-1 of ids[0..n) whose window ids[i-w+1..i] already ended at an earlier position
   (overlaps allowed): a verbatim repeat at least w tokens long. -1 when out of memory. */
#define ARB_METRICS_REPEAT_W 16
int64_t arb_metrics_repeat_count(const int32_t *ids, int n, int w);

/* Metric over the prompts of r (and of ar, for speedup/lossless: the prompts both have),
   with a percentile bootstrap (n_boot resamples, deterministic in seed; 0 = no interval). */
void arb_metrics_ci(const arb_run_stats *r, const arb_run_stats *ar, arb_metric m, int n_boot,
                    uint64_t seed, arb_ci *out);
/* Synergy τ_a / max(τ_b, τ_c) on the prompts all three share, with its bootstrap interval. */
void arb_metrics_synergy(const arb_run_stats *a, const arb_run_stats *b, const arb_run_stats *c,
                         int n_boot, uint64_t seed, arb_ci *out);

#endif
