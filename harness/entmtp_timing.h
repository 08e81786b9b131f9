/* entmtp_timing.h — end-to-end timing of a decoding method on a prompt set, the way EntMTP's
 * throughput frontier and Table 1 measure it (docs/spec/drafting.md §10.3, §10.7): the same
 * decode loop as inference, prefill inside the timed region, one warm-up generation excluded.
 *
 *     arb_entmtp_prompts P; arb_entmtp_prompts_load(model, "gsm8k", 0, 20, 400, &P, &err);
 *     arb_entmtp_timing t; arb_entmtp_time(ctx, &spec, &P, 128, &t, &err);
 *     printf("%.1f tok/s, tau %.2f\n", t.tok_s, t.tau);
 *     arb_entmtp_prompts_free(&P);
 */
#ifndef ARB_ENTMTP_TIMING_H
#define ARB_ENTMTP_TIMING_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "method.h"

typedef struct arb_entmtp_prompts {
    int n;
    int32_t **tok; /* [n] chat-formatted prompt tokens (owned) */
    int *len;
} arb_entmtp_prompts;

/* n prompts of dataset (split "all") from record `skip` on, skipping prompts over max_len tokens. */
int arb_entmtp_prompts_load(const arb_model *m, const char *dataset, int skip, int n, int max_len,
                            arb_entmtp_prompts *out, arb_err *err);
void arb_entmtp_prompts_free(arb_entmtp_prompts *p);

#define ARB_ENTMTP_PROMPTS_MAX 256

typedef struct arb_entmtp_timing {
    double tok_s;        /* Σ generated / Σ time (prefill included): wall, or process CPU time */
    double wall_tok_s, cpu_tok_s; /* both clocks */
    double tau;          /* Σ generated / Σ target calls (arbor's τ, prefill counted as a call) */
    double tau_step;     /* mean (accepted + 1) per decode step (the paper's τ) */
    long gen, calls, steps;
    double wall_s, cpu_s;
    int n;                                   /* prompts timed */
    double prompt_tok_s[ARB_ENTMTP_PROMPTS_MAX]; /* per prompt (paired comparisons) */
    uint64_t hash[ARB_ENTMTP_PROMPTS_MAX];   /* token hashes (losslessness vs AR) */
    double *s_values;    /* optional (caller's, s_cap entries): the feature s of each step */
    int s_cap, n_s;
} arb_entmtp_timing;

/* One warm-up generation (the first prompt, untimed), then every prompt. use_cpu: tok_s and the
   per-prompt rates from the process CPU time (with one kernel thread: the work done, robust on a
   shared machine) instead of wall time (the paper's clock). */
int arb_entmtp_time(arb_ctx *ctx, const arb_method_spec *spec, const arb_entmtp_prompts *P, int max_new,
                    bool use_cpu, arb_entmtp_timing *t, arb_err *err);

#endif
