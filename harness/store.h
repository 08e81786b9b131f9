/* store.h — the results database: SQLite (WAL), one transaction per prompt, resumable.
 *
 * Tables (docs/results-db.md): runs (one per resolved config cell, keyed by run_key, a hash
 * of the cell's config), sessions (one per `arbor run` invocation: hardware, software,
 * shard), prompts (one per finished prompt; UNIQUE(run_key, prompt_id)), steps (one per
 * decoding step), tokens (generated ids). A prompt's steps, tokens and prompt row are
 * written in one transaction, so `kill -9` leaves either all of a prompt or none of it.
 *
 *     arb_store *st; arb_err err = {0};
 *     if (arb_store_open("results/x.db", &st, &err)) die(err.msg);
 *     arb_store_run_put(st, &run, &err);                       // idempotent
 *     bool done; arb_store_prompt_done(st, run.run_key, "HumanEval/0", &done, &err);
 *     if (!done) arb_store_prompt_put(st, run.run_key, &prompt, steps, n_steps, &err);
 *     arb_store_close(st);
 *
 * Thread-safety: one arb_store per thread; processes may share a file (WAL, busy timeout).
 */
#ifndef ARB_STORE_H
#define ARB_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

#include "error.h"

#define ARB_STORE_SCHEMA_VERSION 4 /* 2: steps.stop_fanout; 3: prompts.cpu_us; 4: sessions.kernels, n_threads */
#define ARB_STORE_NSRC 8 /* source columns, indexed like arb_src in tree.h (0 = root, unused) */

typedef struct arb_store arb_store;

typedef struct arb_store_run {   /* strings may be NULL (stored as NULL) */
    const char *run_key;         /* 16 hex digits of sha256(canonical cell JSON) */
    const char *config_name, *method, *base_method; /* label (with sweep suffix) and id as written */
    const char *drafter, *topology, *verifier, *scheduler;
    const char *params_json;     /* fully resolved method spec */
    const char *sweep_json;      /* swept parameters of this cell, {} if none */
    const char *model_id, *model_path, *model_sha256, *dataset, *split;
    int max_new_tokens, top_k;
    double temperature, top_p;
    int64_t seed;
    const char *cell_json;       /* the canonical cell config the key hashes */
} arb_store_run;

typedef struct arb_store_session { /* one run in one invocation: where it was measured */
    const char *session, *run_key, *shard; /* unique id, run, "i/N" */
    const char *hostname, *cpu_model, *cpu_flags, *gpu, *compiler, *build_type, *git_rev, *version;
    const char *kernels;         /* the engine's kernel family as it ran ("avx2", "avx512vnni-smallpages",
                                    "cuda-exact"; NULL unknown): ARBOR_ISA and --backend change it */
    int n_threads;               /* kernel threads (0 unknown) */
    int n_cores;
    int64_t mem_bytes;
    const char *status;          /* "running" | "done" | "interrupted" | "failed" */
} arb_store_session;

typedef struct arb_store_step { /* one decoding step (docs/spec/drafting.md §1.8) */
    int step, l_cache, n_nodes, tree_depth;
    int stop_fanout;             /* children of the last accepted node; -1 unknown (stored NULL) */
    int accepted;                /* k: accepted draft tokens, bonus excluded */
    int committed;               /* tokens committed this step (k + 1 unless truncated) */
    int32_t bonus;
    const char *mode;            /* "tree" | "bypass" | "ar" | "chain" */
    int category;                /* GOOSE path: 0 none 1 pure PLD 2 spine cont. 3 pure TR; -1 n/a */
    int topology_id;             /* bank index or -1 */
    int n_spine, acc_spine;      /* spine nodes proposed / accepted */
    int acc_src[ARB_STORE_NSRC], prop_src[ARB_STORE_NSRC]; /* per arb_src */
    int64_t draft_us, eval_us, verify_us, update_us, commit_us;
    const char *extra_json;      /* method-specific fields (JSON), or NULL */
} arb_store_step;

typedef struct arb_store_prompt {
    const char *prompt_id;       /* dataset record id */
    int prompt_idx;              /* index in the dataset order */
    const char *session;
    int n_prompt, n_gen, n_calls; /* n_calls counts the prefill */
    int64_t wall_us, prefill_us;  /* median over repeats, prefill included */
    int64_t cpu_us;               /* process CPU time, median over repeats, prefill included (every
                                     thread of the process, idle pool workers' spinning too: one
                                     thread is where it means compute); <= 0: not measured */
    int n_repeats;
    const char *stop;            /* "eos" | "limit" */
    int lossless;                /* 1/0 vs the AR run's ids, -1 unknown */
    const int32_t *ids;          /* generated ids (n_gen) */
} arb_store_prompt;

int arb_store_open(const char *path, arb_store **out, arb_err *err); /* creates or opens */
void arb_store_close(arb_store *s);             /* NULL-safe */
sqlite3 *arb_store_db(arb_store *s);            /* for queries (report, metrics) */
const char *arb_store_path(const arb_store *s);
int arb_store_run_put(arb_store *s, const arb_store_run *r, arb_err *err);
/* Whether another session of x->run_key (not x->session) ran on another setup: a different CPU
   model, kernel family or thread count (sessions without the v4 columns are not compared).
   *buf = "" when none, else that session's "kernels, N threads on CPU". */
int arb_store_session_other_setup(arb_store *s, const arb_store_session *x, char *buf, size_t cap, arb_err *err);
/* The database's distinct setups ("kernels, N threads on CPU", schema v4 sessions only), "; "
   between them, in first-seen order; "" when none is recorded. */
int arb_store_setups(arb_store *s, char *buf, size_t cap, arb_err *err);
int arb_store_session_put(arb_store *s, const arb_store_session *x, arb_err *err); /* upsert */
int arb_store_prompt_done(arb_store *s, const char *run_key, const char *prompt_id, bool *done,
                          arb_err *err);
/* One transaction: steps, tokens, prompt row; a duplicate is ARB_E_DB and changes nothing. */
int arb_store_prompt_put(arb_store *s, const char *run_key, const arb_store_prompt *p,
                         const arb_store_step *steps, int n_steps, arb_err *err);
/* Generated ids of a finished prompt; *ids = NULL, *n = 0 when absent. Caller frees. */
int arb_store_tokens_get(arb_store *s, const char *run_key, const char *prompt_id, int32_t **ids,
                         int *n, arb_err *err);
/* Copy every row of the database at src_path into s; *n_prompts = prompts added. A prompt in
   both with different tokens is an error naming it. */
int arb_store_merge_from(arb_store *s, const char *src_path, int *n_prompts, arb_err *err);
/* sha256 of a model file, cached in the database by (path, size, mtime). */
int arb_store_model_sha256(arb_store *s, const char *path, char hex[65], arb_err *err);
/* Test hook: the n-th write from now (a row insert, or prompt_put's COMMIT) fails with
   ARB_E_DB "injected fault", once; 0 disarms. tests/test_store.c sweeps n over them. */
void arb_store_fail_after(arb_store *s, int n);

#endif
