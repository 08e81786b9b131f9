/* method.h — a speculative-decoding method: drafter × topology × verifier × scheduler
 * plus every parameter, with defaults (docs/spec/drafting.md §1.9, §4.1, §4.6), and the table of
 * parameter names/types the config layer validates keys against.
 *
 *     arb_method_spec s;
 *     arb_method_spec_default("goose", &s, &err);        // GOOSE defaults (B=60, D=6, K=10 ...)
 *     s.budget = 40;                                     // or via the param table:
 *     const arb_method_param *p = arb_method_param_find("goose", "rho");
 *     *(double *)((char *)&s + p->offset) = 0.4;         // p->type == ARB_PARAM_DOUBLE
 *     if (arb_method_spec_validate(&s, &err)) ...        // "method GOOSE: rho: must be in [0,1]"
 *     arb_method_spec_preset("iso3", &s, &err);          // CLI names: ar pld tr goose iso3 iso5 sequoia
 *
 * Drafters: "none" (AR), "pld", "tr", "goose", "lookahead", "draft", "eagle2-draft", "medusa", "hydra",
 * "rest" (retrieval, drafters/rest.h). Topologies (the table in topologies/topology.h): "" (the
 * drafter's own: PLD chain, TR template 2.2.2, GOOSE spine tree = "spine"), "iso" (k-ary BFS, GOOSE
 * sources), "sequoia" (DP tree for a positional acceptance vector, GOOSE sources). Verifiers: "greedy" (T = 0; sampling
 * verifiers belong to verifiers/verifier.h). Schedulers: "goose_tiers" (EMA of spine
 * acceptance → spine ratio), "fixed" (fixed_r), "none".
 * Adding a parameter: one field here with its default in method.c and one row in the param
 * table there (name, type, offset, drafters it applies to).
 */
#ifndef ARB_METHOD_H
#define ARB_METHOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chainbudget.h"
#include "engine.h"

#define ARB_METHOD_NAME_MAX 64
#define ARB_SEQUOIA_K_MAX 16
#define ARB_BANK_TREE_MAX 128 /* nodes of the largest TopologyBank tree (EntMTP) */

/* Capacity of the string parameters that name files (draft_model, selector_file, heads,
   datastore, bank); the other strings are short names (char[32]). */
#define ARB_SPEC_PATH_MAX 256

typedef struct arb_method_spec {
    char id[ARB_METHOD_NAME_MAX];        /* label in reports: "AR", "GOOSE", "Iso3" */
    char drafter[32];                    /* "none" | "pld" | "tr" | "goose" */
    char topology[32];                   /* "" (drafter's own) | "spine" | "iso" | "sequoia" */
    char verifier[32];                   /* "greedy" (default at T = 0) */
    char scheduler[32];                  /* "goose_tiers" | "fixed" | "none" */
    /* ---- shape ---- */
    int budget;           /* B: nodes per step incl. the anchor (goose/iso/sequoia 60) */
    bool budget_auto;     /* "budget": "auto": resolved once per run from this machine's cost
                             profile before the decoder is made (autobudget.h) */
    int max_depth;        /* D: branch depth below its branch point (6); sequoia: levels */
    int topk;             /* K: successors stored per adjacency entry (goose 10, tr 8) */
    double rho;           /* ρ: share of non-spine budget kept for root branches (0.5) */
    double s_min;         /* successors scoring below this are never attached (0.01) */
    int iso_k;            /* Iso(k) arity (3) */
    double sequoia_p[ARB_SEQUOIA_K_MAX]; /* positional acceptance p[1..], 0-terminated */
    /* ---- context match / PLD ---- */
    int ngram_min, ngram_max; /* query lengths: goose 3..5, pld 1..3 (Saxena) */
    int max_draft;        /* continuation length: pld 10 (num_pred), goose C_max 20 */
    int bypass_min;       /* θ_byp: bypass when the match is at least this long (8) */
    int bypass_max;       /* bypass chain length cap: -1 = budget - 1 (default: "the tree reduces to a
                             deep linear chain"), 0 = max_draft (C_max, the spec's reading), else
                             this many (<= 63); docs/greedy-methods.md, "Which reading" */
    bool pld_earliest;    /* occurrence choice: earliest (Saxena, pld) / most recent (goose) */
    /* ---- scheduler (GOOSE Algorithm 2) ---- */
    double ema;           /* weight of the newest spine-acceptance observation (0.3) */
    bool ema_geometric;   /* observation = per-token acceptance acc / (acc + [a spine token was
                             rejected]) instead of acc / proposed (off; docs/greedy-methods.md) */
    double ps_init;       /* initial p̂_s (0.3) */
    double tier_lo, tier_hi;   /* p̂_s thresholds (0.2, 0.4) */
    double r_lo, r_mid, r_hi;  /* spine ratios per tier (0.15, 0.30, 0.50) */
    double fixed_r;       /* scheduler "fixed": this r every cycle; < 0 = unset */
    /* ---- adjacency tables ---- */
    int bigram_log2;      /* tier-2 capacity = 2^bigram_log2 entries (15) */
    /* ---- ablations and choices (docs/spec/drafting.md §4.6) ---- */
    bool spine_branches;  /* attach branches under spine nodes (on) */
    bool bigram;          /* use the bigram tier (on; Iso default off) */
    bool bypass;          /* linear bypass for long / consensus matches (on) */
    bool bypass_len;      /* ... triggered by length (on) */
    bool bypass_consensus;/* ... triggered by consensus (on) */
    bool context_spine;   /* tree mode uses the context-match spine (on) */
    bool control_tr_spine;/* control: spine shape kept, tokens from TR (off) */
    bool control_bypass;  /* ... the bypass chain's tokens too (off: tree spines only, which is
                             what the paper's Table 2 numbers imply; docs/greedy-methods.md) */
    bool bypass_match_len;/* length test on the matched context, not the chain (on) */
    char consensus[32];   /* consensus reading: "distinct" (default), "any" (two n agree on the first token), "distinct"
                             (... at different occurrences), "long" (different occurrences agree
                             on >= bypass_min tokens); docs/greedy-methods.md */
    bool extend_chain;    /* extension nodes get width 1 (off: confidence-aware BFS) */
    bool hot_start;       /* keep tables across prompts (goose off; tr on, as the reference) */
    bool harvest_prefill; /* harvest the prefill logits (goose on; tr off, reference quirk) */
    bool tr_prune_unfilled; /* TR: drop template nodes whose row was never written (off) */
    bool verify_first_match; /* greedy walk: GOOSE Alg. 3 literal instead of longest path */
    bool ar_guard;        /* fall back to plain AR steps while speculating measures slower than AR
                             in this run (arguard.h; greedy, drafters with ar_steps; off) */
    /* ---- sampling (docs/spec/verification.md §0.2) ---- */
    double temperature;   /* 0 = greedy */
    double top_p;         /* 1 = off */
    int top_k;            /* 0 = off */
    uint64_t seed;        /* run seed; RNG keyed by (seed, prompt id, step, stream) */
    /* ---- draft model and delayed trees (drafter "draft", docs/spec/drafting.md §11) ---- */
    char draft_model[ARB_SPEC_PATH_MAX]; /* "self" (target cut after draft_layers), "target" (its GGUF again), a path */
    int draft_layers;     /* self-draft depth (24) */
    int dte_k, dte_l, dte_b; /* k i.i.d. paths of length b after a trunk of l (single chain: 1, 0, L) */
    char selector[32];    /* per-step shape: "fixed" (dte_k, dte_l, dte_b) | "nde" (selectors/selector.h) */
    char selector_file[ARB_SPEC_PATH_MAX]; /* nde: the trained selector JSON (arbor nde train --out) */
    /* ---- Lookahead (drafter "lookahead", docs/spec/drafting.md §6) ---- */
    int la_window;        /* W: window columns (15, the paper's 7B setting) */
    int la_ngram;         /* N: n-gram size; the window keeps N - 1 levels (5) */
    int la_guess;         /* G: n-grams kept per key token and verified per step (15) */
    bool la_prompt_pool;  /* seed the pool with the prompt's n-grams (off, as the reference) */
    /* ---- typical acceptance (verifier "typical", docs/spec/verification.md §9; NOT lossless) ---- */
    double typical_eps;   /* posterior threshold ε (0.09) */
    double typical_alpha; /* entropy factor α (0.3): θ = min(ε, α e^{-H}) */
    /* ---- trained heads (drafters "medusa", "hydra"; docs/heads.md) ---- */
    char heads[ARB_SPEC_PATH_MAX];       /* "default" (<cache>/heads/<kind>-<model file>.<sha12>.gguf) or a heads GGUF path */
    char tree[32];        /* "mc_sim_7b_63" (Medusa's published tree) | "auto" (budget nodes from the
                             file's held-out rank accuracies) */
    /* ---- REST retrieval (drafter "rest", docs/spec/drafting.md §7; budget = 1 + drafted nodes) ---- */
    char datastore[ARB_SPEC_PATH_MAX];   /* cache name ("code", "chat"), a path, or "auto": code for code datasets,
                             chat otherwise (resolved by the runner per dataset) */
    int rest_suffix_max, rest_suffix_min; /* context suffix lengths tried, long to short (16, 2) */
    int rest_matches;     /* occurrences used (5000) */
    int rest_cont_len;    /* continuation tokens per occurrence (10) */
    /* ---- EntMTP tree scheduling (drafters "medusa", "hydra"; docs/entmtp.md) ---- */
    char bank[ARB_SPEC_PATH_MAX];        /* TopologyBank JSON (`arbor entmtp bank`); replaces `tree` when tree_sched is set */
    char tree_sched[32];  /* "" (the static `tree`) | "static" | "entmtp_tau" | "ladder" (schedulers/scheduler.h) */
    char feature[32];     /* scheduler scalar s: "lit" (p0, the paper as written) | "gD" | "sum" */
    double tau_on, tau_off; /* entmtp_tau thresholds; < 0 = the bank's tau (tau_off < 0: = tau_on) */
    bool entmtp_all_heads; /* Hydra + feature lit: still run every head on the rank-0 chain (p_d logged) */
    /* ---- budget "auto", per step (autobudget.h; not a config key) ---- */
    arb_chain_cost chain_cost; /* this machine's t(n, L) for chains, set by arb_autobudget_resolve
                                  (n_max 0 = unset: fixed chain lengths); PLD's chain and GOOSE's
                                  bypass chain then pick their length per step (chainbudget.h) */
} arb_method_spec;

typedef enum arb_param_type { ARB_PARAM_INT, ARB_PARAM_DOUBLE, ARB_PARAM_BOOL, ARB_PARAM_STR,
                              ARB_PARAM_U64, ARB_PARAM_DOUBLE_LIST } arb_param_type;

typedef struct arb_method_param {
    const char *name;     /* config key, e.g. "budget", "rho", "spine_branches" */
    arb_param_type type;  /* storage type at offset (STR: char[arb_method_param_cap]; DOUBLE_LIST: sequoia_p) */
    size_t offset;        /* offsetof(arb_method_spec, field) */
    const char *drafters; /* space-separated drafters it applies to, "*" = all */
    double lo, hi;        /* valid range for INT/DOUBLE/U64 (inclusive) */
    const char *doc;      /* one line */
} arb_method_param;

/* Whether p also takes the value "auto" (today only budget: autobudget.h). */
bool arb_method_param_takes_auto(const arb_method_param *p);

/* Defaults for a drafter ("none"/"ar", "pld", "tr", "goose", "lookahead", "draft"). ARB_E_INVAL on
   unknown names. */
int arb_method_spec_default(const char *drafter, arb_method_spec *out, arb_err *err);
/* Named presets: ar pld tr goose iso3 iso5 sequoia, and goose ablations goose-nospinebr,
   goose-unigram, goose-nobypass, goose-nospine, goose-control, draft, rest (datastore "auto"),
   rest-code, rest-chat, lookahead, lookahead-small (case-insensitive). */
int arb_method_spec_preset(const char *name, arb_method_spec *out, arb_err *err);
/* Range and consistency checks; messages "method <id>: <param>: ...". */
int arb_method_spec_validate(const arb_method_spec *s, arb_err *err);

/* All parameters: returns the table, *n its length (static storage). */
const arb_method_param *arb_method_params(int *n);
/* Parameter `name` if it applies to `drafter` (NULL drafter = any), else NULL. */
const arb_method_param *arb_method_param_find(const char *drafter, const char *name);
/* Bytes a STR parameter's field holds, terminator included (ARB_SPEC_PATH_MAX for file paths). */
size_t arb_method_param_cap(const arb_method_param *p);
/* Set from text ("60", "0.5", "true", "goose", "0.6,0.2,0.1"); errors name the key. */
int arb_method_param_set(arb_method_spec *s, const char *name, const char *value, arb_err *err);

/* Registry queries (STYLE practice 11): is this a known drafter/topology/verifier/scheduler? */
bool arb_method_known(const char *kind, const char *name); /* kind: "drafter" "topology" ... */
/* The names `kind` accepts ("drafter", "topology", "verifier", "tree_sched", "scheduler",
   "consensus"), ", "-separated into buf, from the kind's table; returns buf ("" if unknown kind). */
const char *arb_method_names(const char *kind, char *buf, size_t cap);
/* Largest tree (nodes incl. anchor) this method can propose: sizes every buffer. */
int arb_method_max_nodes(const arb_method_spec *s);

#endif
