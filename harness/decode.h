/* decode.h — the speculative decoding loop for one prompt (docs/spec/drafting.md §1.1, §1.6–1.8):
 * prefill → [propose → eval → verify → observe/update → commit → record]* until EOS or
 * max_new. Every method (AR, PLD, TR, GOOSE, Iso, Sequoia) runs through this loop; the
 * decoder owns the drafter state, the tree and the logits buffer, all sized at creation,
 * so a step allocates nothing.
 *
 *     arb_method_spec s; arb_method_spec_preset("goose", &s, &err);
 *     arb_decoder *d;
 *     if (arb_decoder_new(ctx, &s, &d, &err)) ...;     // ctx: a fresh arb_ctx of the target
 *     arb_decode_opts o = arb_decode_default_opts();    // max_new 128, stop at EOS
 *     arb_decode_cb cb = { .on_step = log_step, .on_token = print_tok, .ud = f };
 *     arb_prompt_result r;
 *     arb_decoder_generate(d, prompt, n_prompt, &o, &cb, &r, &err);
 *     printf("tau %.2f\n", (double)r.n_generated / r.n_target_calls);
 *     arb_decoder_free(d);
 *
 * Thread-safety: one decoder per thread (it drives one arb_ctx).
 */
#ifndef ARB_DECODE_H
#define ARB_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "method.h"

enum { ARB_RANK_MAX = 16,         /* successor ranks whose offers/hits a step counts (0..15) */
       ARB_RANK_PATH_MAX = 64 };  /* accepted nodes whose rank a step keeps (the path's first 64) */
enum { ARB_STAT_PLD, ARB_STAT_TR, ARB_STAT_DRAFT, ARB_STAT_HEAD, ARB_STAT_LADE, ARB_STAT_REST,
       ARB_STAT_LADE_WINDOW, ARB_STAT_COUNT };            /* per-source counters */
typedef enum arb_step_mode { ARB_MODE_AR = 0, ARB_MODE_TREE, ARB_MODE_BYPASS, ARB_MODE_CHAIN } arb_step_mode;
typedef enum arb_path_cat {  /* docs/spec/drafting.md §4.5; AR fallback / bypass are told apart by mode */
    ARB_CAT_NONE = 0,        /* k = 0 */
    ARB_CAT_PURE_PLD,        /* every accepted node is spine / PLD (bypass with k > 0 too) */
    ARB_CAT_SPINE_CONT,      /* ≥ 1 spine node, then ≥ 1 TR node */
    ARB_CAT_PURE_TR,         /* first accepted node is TR */
    ARB_CAT_OTHER,           /* first accepted node from another source */
} arb_path_cat;

typedef struct arb_step_record {  /* one row of the `steps` table (docs/spec/drafting.md §1.8, §4.9) */
    int step;               /* 0 = first step after prefill */
    int L_cache;            /* committed KV rows before the step */
    int n_nodes;            /* tree nodes incl. anchor (= tokens sent to the engine) */
    int tree_depth;         /* deepest node */
    int stop_fanout;        /* children of the last accepted node (0: the walk ended at a leaf) */
    int accepted_k;         /* accepted draft nodes (bonus excluded) */
    int committed;          /* tokens committed: k + 1, less after EOS / max_new truncation */
    int32_t bonus_token;    /* argmax after the accepted path */
    int acc_by_src[ARB_STAT_COUNT];  /* accepted nodes per source */
    int prop_by_src[ARB_STAT_COUNT]; /* proposed nodes per source */
    arb_step_mode mode;
    bool ar_guard;          /* an AR step the AR guard took (arguard.h): nothing proposed */
    arb_path_cat category;
    int topology_id;        /* bank index, -1 if none */
    const char *extra_json; /* drafter's steps.extra members (no braces), valid until its next propose; NULL */
    /* GOOSE (zero / -1 for other methods) */
    int match_n;            /* n* of the context match, 0 if none */
    int d_len;              /* continuation length */
    bool consensus;         /* ≥ 2 n-gram lengths agree on the first token */
    bool consensus_distinct;/* ... at different occurrences */
    int agree_len;          /* agreement length of continuations at different occurrences */
    int match_len;          /* matched context length (common suffix, <= 64) */
    float r;                /* spine ratio used */
    float p_s_hat;          /* EMA of spine acceptance before this step's update */
    int bs, br, bsp, spine_alloc_sum; /* Algorithm 1 budget split */
    int n_spine, acc_spine; /* spine nodes proposed / accepted */
    int spine_break_depth;  /* first rejected spine depth, -1 if none */
    int bigram_hits;        /* successor lists that came from the bigram tier */
    int table_fill;         /* non-empty unigram rows */
    /* Positional acceptance (Sequoia's p[k], docs/results-db.md "Ranks"): a child is *ranked*
       when it came from a successor list at rank r (0 = best), i.e. rank >= 0, not spine/PLD. */
    int n_acc_rank;         /* entries in acc_rank: min(accepted_k, ARB_RANK_PATH_MAX) */
    int8_t acc_rank[ARB_RANK_PATH_MAX]; /* rank of the i-th accepted node, -1 if unranked */
    uint16_t rank_offer[ARB_RANK_MAX];  /* ranked children of rank r under the path's nodes
                                           (anchor .. stop node): trials of rank r */
    uint16_t rank_hit[ARB_RANK_MAX];    /* ... that were the accepted child: successes */
    /* microseconds per phase */
    double draft_us, eval_us, verify_us, update_us, commit_us;
} arb_step_record;

typedef struct arb_prompt_result {
    int n_prompt;           /* prompt tokens */
    int n_generated;        /* generated tokens (prefill's token included) */
    int n_target_calls;     /* arb_eval calls incl. prefill; tau = n_generated / n_target_calls */
    int n_steps;            /* decode steps after prefill */
    double wall_us;         /* whole generation incl. prefill */
    double cpu_us;          /* the process's CPU time over the same span (every thread: idle pool
                               workers' spinning too; with one thread, the compute) */
    double prefill_us;      /* prefill eval + first token */
    double harness_us;      /* Σ draft + verify + update + commit over steps */
    double eval_us;         /* Σ eval over steps (prefill excluded) */
    const int32_t *ids;     /* generated ids; decoder-owned, valid until the next generate/free */
    uint64_t hash;          /* FNV-1a 64 over the ids as little-endian int32 */
    bool stopped_eos;       /* ended on an end-of-generation token */
    int n_truncated;        /* tokens dropped by max_new truncation in the last step */
} arb_prompt_result;

typedef struct arb_decode_opts {
    int max_new;            /* generation limit (128) */
    int prompt_id;          /* keys the RNG with the run seed (sampling) */
    bool stop_at_eos;       /* stop on arb_token_is_eog (true) */
    bool full_rows;         /* every eval returns full logits rows and the top-K is computed on
                               the host, the path before arb_eval_out.topk (false: each eval
                               asks for what its consumers read). Same tokens and records;
                               for tests and before/after timings */
    bool fetch_stop_row;    /* greedy drafters with stop_logits: fetch the stop node's row alone
                               after verification (arb_eval_logits_row) on a CPU context too;
                               by default only on a device, where it saves copying every row.
                               Same tokens and records; for tests */
    bool fetch_p_rows;      /* speculative sampling: step evals return no logits rows and each
                               target law a verifier reads is made from its row fetched alone
                               (arb_eval_logits_row); by default only on a device, where it saves
                               copying every row (a CPU computes them anyway and fetching one
                               recomputes a head row). Same tokens and records; for tests */
} arb_decode_opts;
arb_decode_opts arb_decode_default_opts(void);

typedef struct arb_decode_cb {   /* every member optional */
    int (*on_step)(const arb_step_record *r, void *ud);   /* non-zero: stop generation */
    int (*on_token)(int32_t tok, void *ud);                /* each committed token, in order */
    void *ud;
} arb_decode_cb;

typedef struct arb_decoder arb_decoder;

/* target: context of the target model (not owned; reset per prompt). Allocates every buffer. */
int arb_decoder_new(arb_ctx *target, const arb_method_spec *s, arb_decoder **out, arb_err *err);
/* Generate for one prompt (n_prompt >= 1). Hot-start tables persist across calls. */
int arb_decoder_generate(arb_decoder *d, const int32_t *prompt, int n_prompt,
                         const arb_decode_opts *o, const arb_decode_cb *cb,
                         arb_prompt_result *out, arb_err *err);
void arb_decoder_reset_run(arb_decoder *d);  /* forget hot-start tables (new run) */
size_t arb_decoder_table_bytes(const arb_decoder *d); /* adjacency + index memory */
const arb_method_spec *arb_decoder_spec(const arb_decoder *d);
void arb_decoder_free(arb_decoder *d);       /* NULL-safe */

uint64_t arb_decode_hash(const int32_t *ids, int n); /* the result hash */
/* Add the rank fields of rec (acc_rank, rank_offer, rank_hit) for the accepted path
   path[0..np) (anchor .. stop node) of a finalized tree; the loop calls it after each greedy
   walk. Every ranked child of a path node is a trial of its rank, the one taken a hit. */
struct arb_tree;
void arb_decode_record_ranks(const struct arb_tree *t, const int32_t *path, int np, arb_step_record *rec);

#endif
