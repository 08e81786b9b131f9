/* fidelity.h — how faithful the quantized kernels are: teacher-forced greedy argmax agreement
 * and logit error of a GGUF as stored against the same file dequantized to F32 (issue #18
 * item 4), per block type, with bootstrap intervals over prompts.
 *
 * The reference is the model with every multiplied matrix dequantized to F32 at load
 * (arb_load_opts.dequant_f32 = "all": exact weights, float activations). For each prompt it
 * generates max_new tokens greedily; every variant then evaluates prompt + that continuation
 * as one chain (batch-invariant, so the same logits as step by step) and, at each generated
 * position, its argmax is compared with the reference's token. Variants: the file as stored
 * (every type quantized, activations quantized by arbor's kernels), and for each quantized
 * type T present, "only T quantized" (dequant_f32 = "all-but-T"), which isolates T's share.
 * A disagreement's reference logit gap (reference top-1 minus the variant's pick, under the
 * reference) says whether it was a near-tie.
 *
 *     arb_fidelity_opts o = {.model = "default", .dataset = "humaneval,gsm8k", .limit = 20, .max_new = 64};
 *     arb_fidelity_result r;
 *     if (arb_fidelity_run(&o, &r, stdout, &err)) ...;     // progress lines on stdout
 *     arb_fidelity_print(&r, stdout);
 */
#ifndef ARB_FIDELITY_H
#define ARB_FIDELITY_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"

#define ARB_FIDELITY_MAX_VARIANTS 8
#define ARB_FIDELITY_MAX_PROMPTS 512
#define ARB_FIDELITY_MAX_SETS 16

typedef struct arb_fidelity_opts {
    const char *model;     /* "default" or a GGUF path */
    const char *data_dir;  /* NULL: $ARBOR_DATA or the cache */
    const char *dataset;   /* catalog names, comma-separated (chat template applied) */
    int limit;             /* prompts of each dataset (all of them together <= ARB_FIDELITY_MAX_PROMPTS) */
    int max_new;           /* generated positions per prompt */
    int threads;           /* 0 = all cores */
    int n_boot;            /* bootstrap resamples (1000) */
    const char *dump_ref;  /* write the reference sequences here (TSV, below), or NULL */
    const char *score;     /* score other engines' teacher-forced argmax from these TSVs (comma-
                              separated), or NULL */
    const char *ref_in;    /* read the reference sequences from a dump_ref file instead of generating
                              them (dataset and limit are then unused): each prompt's rows are
                              recomputed by one chain of the F32 model, and every continuation token
                              must be that chain's argmax (else the file came from another model) */
    bool stored_only;      /* only the file as stored, not the per-type variants (each of which
                              runs the other types dequantized to F32: most of a run's time) */
    const char *dump_argmax; /* write this run's own argmax (the file as stored) in the score
                                format, or NULL: another build, kernel family or machine can
                                then be scored against this one's */
} arb_fidelity_opts;

/* The files that let another engine (llama.cpp, a GPU backend) be scored on the same reference:
 *   dump_ref, one line per prompt:  i <TAB> n_prompt <TAB> n_gen <TAB> id,id,...   (prompt, then
 *     the reference's continuation; "#" lines are comments naming model, dataset and options,
 *     and "# set <name> <first> <count>" the prompts of each dataset, which --ref reads back);
 *   score, one line per position:   i <TAB> j <TAB> argmax   (prompt i, 0 <= j < n_gen: the
 *     engine's argmax of the row that predicts token n_prompt + j, given ids[0 .. n_prompt + j)).
 * Every position must be scored once; a missing, repeated or malformed line is an error naming
 * the file and line. The scored engine is one more variant ("external: <file name>") with
 * agreement, interval and gaps (under the reference's rows); its logit error is not known.
 * Each external variant is also paired with arbor's own (the file as stored, the same
 * prompts): the difference of their agreement rates with a percentile bootstrap over prompts
 * (both rates from the same resampled prompts), and at how many positions the two argmax
 * agree. Issue #18 asks that arbor not be below llama.cpp; this is the figure that says. */

typedef struct arb_fidelity_variant {
    char name[40];                               /* "as stored", "only Q4_1 quantized" */
    int n_pos, n_agree;                          /* positions compared, argmax equal */
    double rate, lo, hi;                         /* agreement and its 95% interval over prompts */
    double mean_abs_dlogit;                      /* mean |logit - reference logit| over positions × vocab */
    double gap_median, gap_max;                  /* reference logit gap at disagreements (NAN: none) */
    int agree_p[ARB_FIDELITY_MAX_PROMPTS];       /* per prompt: agreements ... */
    int pos_p[ARB_FIDELITY_MAX_PROMPTS];         /* ... of positions */
    /* external variants only (NAN / -1 otherwise): arbor as stored minus this variant */
    double diff, diff_lo, diff_hi;               /* agreement rate difference and its 95% interval */
    int same_as_stored;                          /* positions where this argmax equals arbor's */
} arb_fidelity_variant;

typedef struct arb_fidelity_result {
    int n_prompts, n_variants;
    arb_fidelity_variant v[ARB_FIDELITY_MAX_VARIANTS];
    int n_sets;                                  /* datasets, in prompt order */
    int n_boot;                                  /* resamples of the intervals */
    char set_name[ARB_FIDELITY_MAX_SETS][24];
    int set_first[ARB_FIDELITY_MAX_SETS], set_count[ARB_FIDELITY_MAX_SETS];
    char model_name[96], kernels[32], datasets[128];
} arb_fidelity_result;

/* Run the measurement; progress lines on `progress` (NULL: silent). */
int arb_fidelity_run(const arb_fidelity_opts *o, arb_fidelity_result *r, FILE *progress, arb_err *err);
/* One Markdown table: variant, positions, agreement [95% CI], mean |Δlogit|, gaps; then, when
   other engines were scored, arbor as stored minus each of them; with several datasets, each
   variant's agreement and each paired difference per dataset. */
void arb_fidelity_print(const arb_fidelity_result *r, FILE *f);

#endif
