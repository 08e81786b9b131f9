/* arguard.h — the AR guard: a speculative method that takes plain AR steps (a one-node tree,
 * nothing drafted) while its own measured tokens per second stay below AR's on this machine
 * (method parameter `ar_guard`; docs/cost-model.md, "The AR guard").
 *
 * Why measured and not predicted: the cost model predicts each method's speed from a bench
 * profile and an acceptance estimate, and both miss in the same direction where it matters —
 * Medusa/Hydra were predicted at 1.01–1.05x AR and measured at 0.81–0.98x (the drafting pass
 * leaves the caches cold, the heads accept less than on their held-out set). The guard compares
 * the two things the user will see: committed tokens over the wall time of the steps that
 * produced them, speculative against AR, both measured in this run.
 *
 * The schedule, a two-armed explore/exploit loop with no randomness (so a run is reproducible
 * up to timing):
 *   - each prompt starts speculating, its acceptance forgotten (it is the prompt's own);
 *   - AR's rate is measured by AR_PROBE AR steps when it is unknown or older than REFRESH
 *     speculative steps (it moves slowly, with the context length: kept across prompts);
 *   - then every CHECK steps the two rates are compared: speculation slower (even at its rate
 *     one standard error up: a step's accepted length varies) falls back to AR for
 *     `backoff` steps (16, doubled at each consecutive fallback up to 256, reset when
 *     speculation wins), after which it probes again with a fresh estimate.
 * A speculative probe after a fallback (or at the start of a prompt that follows one) costs at
 * most PROBE_SHARE (10 %) of that fallback's time: probe_len = PROBE_SHARE x fallback x (AR step time /
 * speculative step time), clamped to [PROBE_MIN, SPEC_PROBE] steps. Without that cap a method
 * whose step costs 8 AR steps (TR's 81-node template on a CPU) spent half its time probing.
 * Greedy verification makes any mix of AR and speculative steps emit exactly the AR tokens, so
 * the guard changes speed, never output. Plain data, no allocation.
 *
 *     arb_arguard g; arb_arguard_init(&g);                   // per run
 *     arb_arguard_begin_prompt(&g);                          // per prompt
 *     bool ar = arb_arguard_ar_step(&g);                     // before a step
 *     arb_arguard_observe(&g, committed, step_us);           // after it
 */
#ifndef ARB_ARGUARD_H
#define ARB_ARGUARD_H

#include <stdbool.h>

enum {
    ARB_ARGUARD_SPEC_PROBE = 8,    /* speculative steps of a probe (a prompt's first comparison) */
    ARB_ARGUARD_PROBE_MIN = 2,     /* ... at least, when capped by PROBE_SHARE */
    ARB_ARGUARD_AR_PROBE = 4,      /* AR steps that (re)measure AR's rate */
    ARB_ARGUARD_CHECK = 8,         /* speculative steps between comparisons */
    ARB_ARGUARD_REFRESH = 128,     /* speculative steps after which AR's rate is re-measured */
    ARB_ARGUARD_BACKOFF_MIN = 16,  /* first fallback's length (AR steps) */
    ARB_ARGUARD_BACKOFF_MAX = 256, /* longest fallback */
};
#define ARB_ARGUARD_PROBE_SHARE 0.1  /* a probe's time, at most, as a share of the fallback before it */

typedef struct arb_arguard {
    bool ar_phase;      /* the next step is an AR step */
    bool probing;       /* ... re-measuring AR (not a fallback) */
    int left;           /* steps left in the current phase */
    int since_ar;       /* speculative steps since AR's rate was last measured */
    int backoff;        /* the next fallback's length */
    int last_fallback;  /* the last fallback's length; 0 once speculation has won a comparison */
    int n_fallbacks;    /* fallbacks so far (the run's) */
    double spec_tok, spec_tok2, spec_us, spec_w, spec_w2; /* decayed sums over speculative steps
                                 (this probe or prompt): tokens, their squares, µs, weights (0:
                                 unmeasured), squared weights */
    double ar_tok, ar_us;     /* ... over AR steps (kept across prompts) */
    int ar_n;           /* AR steps behind ar_tok/ar_us (0: unmeasured) */
    double spec_step_us, ar_step_us; /* mean wall time of one step of each kind (run-long EMAs;
                                        0: unmeasured): the probe's cap */
} arb_arguard;

void arb_arguard_init(arb_arguard *g);
/* A new prompt: speculate first; the speculative rate is forgotten, AR's kept. */
void arb_arguard_begin_prompt(arb_arguard *g);
/* Whether the coming step should be a plain AR step. */
static inline bool arb_arguard_ar_step(const arb_arguard *g) { return g->ar_phase; }
/* The step just taken (of the kind arb_arguard_ar_step said) committed `committed` tokens in
   `us` microseconds of wall time (draft, eval, verify, update, commit). */
void arb_arguard_observe(arb_arguard *g, int committed, double us);
/* Measured rate in tokens per second of speculative (ar false) or AR steps; 0 if unmeasured. */
double arb_arguard_rate(const arb_arguard *g, bool ar);

#endif
