/* nde_data.h — the NDE selector's offline data (docs/spec/drafting.md §11.8; docs/sampling.md,
 * "NDE"), behind `arbor nde data`: per prompt and sampling setting a target trajectory is
 * sampled; every `every` tokens its root gets the scalar features (nde_features.h) and, for
 * every action of A and every lossless sampling verifier, the exact expected block
 * efficiency (DTE Eq. 3, arb_otan_expected_accepted) averaged over n_tree drafted trees, plus
 * the action's modelled cost T(n, a) from the latency model fitted on this machine.
 *
 *     arb_nde_data_opts o = arb_nde_data_default_opts();
 *     o.db = "results/nde.db"; o.tag = "train"; o.datasets = "gsm8k-train,mbpp";
 *     if (arb_nde_data_run(&o, stderr, &err)) die(err.msg);   // resumable; progress lines to stderr
 *
 * Tables (created if missing, in the given database beside the run tables): nde_meta (one row
 * per tag: model, sha256, draft, latency constants), nde_root (features per root), nde_be (BE
 * and T(n, a) per root, action and verifier), nde_done (finished (dataset, prompt, setting)
 * units). A unit's rows and its done mark commit in one transaction, so a killed run re-run
 * with the same arguments continues where it stopped; --shard i/N takes prompts p with
 * p % N == i, so N processes can share one database.
 */
#ifndef ARB_NDE_DATA_H
#define ARB_NDE_DATA_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define ARB_NDE_MAX_SETTINGS 8

typedef struct arb_nde_data_opts {
    const char *db;        /* SQLite file (created) */
    const char *tag;       /* names this data set in the tables ("train") */
    const char *datasets;  /* comma-separated ("gsm8k-train,mbpp") */
    const char *data_dir;  /* NULL: $ARBOR_DATA, else the cache */
    const char *model;     /* "default" or a GGUF path */
    const char *verifiers; /* comma-separated subset to score (NULL: all eight) */
    int limit;             /* prompts per dataset (20) */
    int offset;            /* first prompt index (0) */
    int max_new;           /* trajectory length (96) */
    int every;             /* a root every this many tokens (16) */
    int n_tree;            /* trees per action and root (1) */
    int draft_layers;      /* self-draft depth (24) */
    int threads;           /* kernel threads, 0 = all cores */
    int shard, n_shards;   /* this process's prompts: p % n_shards == shard (0/1) */
    uint64_t seed;         /* trajectories and drafts (0) */
    double temperature[ARB_NDE_MAX_SETTINGS], top_p[ARB_NDE_MAX_SETTINGS];
    int n_settings;        /* (T 1, top-p 1) */
} arb_nde_data_opts;

arb_nde_data_opts arb_nde_data_default_opts(void);
/* "T[:P][;T[:P]...]" into the settings; ARB_E_INVAL quoting the text. */
int arb_nde_data_parse_settings(const char *text, arb_nde_data_opts *o, arb_err *err);
/* Generate (or continue) the data set; one progress line per unit to progress (may be NULL).
   A tag made with another model, draft, every, n_tree or action set is ARB_E_INVAL. */
int arb_nde_data_run(const arb_nde_data_opts *o, FILE *progress, arb_err *err);

#endif
