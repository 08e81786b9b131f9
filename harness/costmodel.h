/* costmodel.h — what one target eval costs on this machine, as a function of its node
 * count n and context length L, fitted from measurements; and the speedup that follows.
 *
 *     t(n, L) = w(n) + (b + a · n) · L    (µs)
 *
 * w is piecewise linear in n between knots (1, 2, 4, ..., the largest n measured): the
 * weight-streaming and matmul part, which a CPU pays almost linearly in n and a GPU
 * almost not at all. a is the attention part: every node reads L cached keys; b is what a step
 * pays per cached token once, whatever its node count (one node at 700 cached tokens costs
 * ~1.6x one node at 64 on this CPU, far above a · L). The fit is
 * weighted least squares on relative error (ratios are what speedups are made of).
 * Sources: `arbor bench engine --save-profile` (trees of 1..64 nodes at two context
 * lengths: an independent measurement) or a results database's own step rows.
 *
 *     arb_cost_model cm;
 *     arb_cost_fit(n, L, t_us, m, &cm, &err);        // samples
 *     double c8 = arb_cost_us(&cm, 8, 500) / arb_cost_us(&cm, 1, 500);
 *     arb_cost_save(&cm, "~/.cache/arbor/cost/<fingerprint>.json", &err);
 *
 * GPU projections use a roofline instead of a fit (arb_cost_gpu_rel): clearly a
 * projection, never a measurement.
 */
#ifndef ARB_COSTMODEL_H
#define ARB_COSTMODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define ARB_COST_KNOTS 12

typedef struct arb_cost_model {
    int n_knots;
    int knot[ARB_COST_KNOTS];      /* node counts, increasing; knot[0] = 1 */
    double w_us[ARB_COST_KNOTS];   /* w(knot[j]) in µs (the context term excluded) */
    double ctx_us;                 /* a: µs per node per context token */
    double ctx0_us;                /* b: µs per context token per eval (0 when not identified) */
    int n_samples;                 /* samples the fit used */
    double rms_rel;                /* root-mean-square relative residual of the fit */
    char source[160];              /* where the samples came from (free text) */
    char fingerprint[200];         /* machine, kernels, threads, model: where it holds */
    char build[64];                /* the arbor build that measured it (git describe; "" in older
                                      profiles): an engine change can move every cost */
} arb_cost_model;

/* Fit from m samples (n[i] >= 1 nodes, L[i] >= 0 context tokens, t_us[i] > 0). Knots are
   the powers of two inside [1, max n] plus max n. ARB_E_INVAL with fewer samples than
   unknowns or when no sample has n = 1 (w(1) would be unanchored). */
int arb_cost_fit(const int *n, const int *L, const double *t_us, int m, arb_cost_model *out, arb_err *err);

/* Predicted eval time in µs; n beyond the last knot extrapolates its last segment. */
double arb_cost_us(const arb_cost_model *c, int n, int L);

/* JSON file round trip (the fit, its source, fingerprint and build). */
int arb_cost_save(const arb_cost_model *c, const char *path, arb_err *err);
int arb_cost_load(const char *path, arb_cost_model *out, arb_err *err);

/* Where a profile holds: "<cpu model> | <kernel family> | <threads> threads | <model name>
   <weight MB>MB" (the bench writes it, `budget: "auto"` looks it up). */
void arb_cost_fingerprint(char *buf, size_t cap, const char *cpu_model, const char *kernels, int threads,
                          const char *model_name, double weight_bytes);
/* A GPU's: "<device> | <backend> | gpu | <model name> <weight MB>MB". */
void arb_cost_fingerprint_gpu(char *buf, size_t cap, const char *device, const char *backend, const char *model_name,
                              double weight_bytes);
/* $ARBOR_CACHE/cost/<fingerprint as a file name>.json; mkdir creates cost/ when set. */
int arb_cost_profile_path(const char *fingerprint, bool mkdir_dir, char *buf, size_t cap, arb_err *err);

/* A GPU's roofline (dense FP16 tensor rate, memory bandwidth): the papers' setting. */
typedef struct arb_gpu_roofline {
    const char *name;   /* "A100-80GB" */
    double bw_gbs;      /* memory bandwidth, GB/s */
    double tflops;      /* dense FP16 tensor TFLOP/s */
} arb_gpu_roofline;

extern const arb_gpu_roofline arb_gpu_rooflines[3]; /* A40, A100-80GB, H100-SXM */

/* Projected cost of an n-node eval relative to one node for a model of `params`
   parameters stored at `bytes_per_param` (2: FP16) on GPU g: max(weights / bandwidth,
   2 · params · n / rate) over weights / bandwidth. Attention and launch overheads are
   not modelled (a lower bound on the cost, an upper bound on the speedup). */
double arb_cost_gpu_rel(const arb_gpu_roofline *g, double params, double bytes_per_param, int n);

#endif
