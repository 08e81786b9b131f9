/* sample.h — processed next-token laws and a counter-based RNG (docs/spec/verification.md §0.2, §0.4).
 *
 * PROCESS turns raw logits into the law the user asked for (temperature, top-k, top-p), in
 * double precision, identically for the target p and the draft q. The RNG is stateless
 * Philox4x32-10 keyed by the run seed; the counter holds (prompt, step, stream, index), so
 * any (run, prompt, step, stream) is reproducible on its own and shards agree.
 *
 *     arb_sampling s = arb_sampling_default();      // T = 1, top_p = 1, top_k = 0
 *     s.temperature = 0.8; s.top_p = 0.95;
 *     double *pi = ...V doubles...; int32_t *idx = ...V ints (top-p scratch)...;
 *     arb_sample_process(logits, V, &s, pi, idx);   // pi sums to 1
 *     arb_rng r;
 *     arb_rng_init(&r, run_seed, prompt_id, step, ARB_STREAM_DRAFT);
 *     int tok = arb_sample_w(&r, pi, V);            // SAMPLE(pi); -1 only if pi is all 0
 *     if (arb_rng_ratio(&r, p[tok], q[tok])) ...    // accept w.p. min(1, p/q)
 *
 * Thread-safety: all functions are pure apart from the arb_rng they are given.
 */
#ifndef ARB_SAMPLE_H
#define ARB_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct arb_sampling {
    double temperature; /* 0 = greedy (one-hot argmax, ties -> smallest id) */
    int top_k;          /* keep the top_k largest logits; 0 = off */
    double top_p;       /* nucleus mass in (0, 1]; 1 = off */
} arb_sampling;
arb_sampling arb_sampling_default(void); /* T = 1, top_k = 0, top_p = 1 */

/* PROCESS (docs/spec/verification.md §0.2): z[V] logits -> pi[V] (double, sums to 1).
   idx: V int32 scratch (used by top-k/top-p only; may be NULL when both are off).
   Returns the number of tokens with pi > 0. Allocates nothing. */
int arb_sample_process(const float *z, int V, const arb_sampling *s, double *pi, int32_t *idx);
/* The same on one vector width (process_simd.h: 0 scalar, 1 AVX2, 2 AVX-512), the same bits
   on each; -1 when this CPU lacks it. arb_sample_process takes the widest. For tests. */
int arb_sample_process_isa(int isa, const float *z, int V, const arb_sampling *s, double *pi, int32_t *idx);

/* Argmax with ties -> smallest id (float logits or double laws). */
int arb_sample_argmax_f(const float *z, int V);
int arb_sample_argmax_d(const double *x, int V);

/* Order idx[0..n) by (v[idx] desc, idx asc) in place (heap sort, no allocation). */
void arb_sample_order_desc(const double *v, int32_t *idx, int n);
/* The same order of ALL ids 0..n-1 into out[n], in O(n): an LSD radix sort on the values'
   bit patterns (-0.0 taken as +0.0, so the ties are those of ==; values must not be NaN),
   stable, from ids in ascending order. Scratch: key[2n] uint64, tmp[n] int32. The same
   permutation as arb_sample_order_desc on idx = 0..n-1 (tested), in O(n). */
void arb_sample_order_desc_all(const double *v, int n, int32_t *out, uint64_t *key, int32_t *tmp);

/* ---- counter-based RNG ---- */
enum { /* stream ids: separate sequences for drafting and verification (common random numbers) */
    ARB_STREAM_DRAFT = 0,
    ARB_STREAM_VERIFY = 1,
    ARB_STREAM_SAMPLE = 2, /* plain AR sampling (arbor generate, NSS-only AR steps) */
    ARB_STREAM_AUX = 3,    /* anything else (tests, tie breaks) */
};

typedef struct arb_rng {
    uint32_t key[2];  /* run seed */
    uint32_t ctr[4];  /* [0] block index, [1] stream, [2] step, [3] prompt */
    uint32_t buf[4];  /* last Philox output block */
    int n_buf;        /* unread 64-bit words left in buf (0, 1 or 2) */
} arb_rng;

void arb_rng_init(arb_rng *r, uint64_t seed, uint32_t prompt, uint32_t step, uint32_t stream);
uint64_t arb_rng_u64(arb_rng *r);
double arb_rng_u(arb_rng *r);                           /* U(): [0,1), 53 bits */
bool arb_rng_bern(arb_rng *r, double a);                /* BERN(a): U() < a */
bool arb_rng_ratio(arb_rng *r, double num, double den); /* RATIO: U()*den < num */
/* SAMPLE(w): w[V] >= 0, need not sum to 1. Returns a token, or -1 when Σw <= 0 (the caller
   falls back, docs/spec/verification.md §12). Consumes exactly one U() when Σw > 0, none otherwise. */
int arb_sample_w(arb_rng *r, const double *w, int V);
/* The same on one vector width (process_simd.h), the same token and draws on each; -2 when
   this CPU lacks the width. For tests. */
int arb_sample_w_isa(int isa, arb_rng *r, const double *w, int V);

/* Philox4x32-10 block function (exposed for the known-answer test). */
void arb_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

#endif
