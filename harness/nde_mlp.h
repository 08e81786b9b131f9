/* nde_mlp.h — the NDE selector network and its objective (docs/spec/drafting.md §11.6–§11.7;
 * docs/sampling.md, "NDE"): standardised scalar features -> Linear(F, H) -> GELU ->
 * Linear(H, |A|) -> softmax π(a | c). Training maximises the policy's expected throughput
 * ratio against the baseline action and penalises the worst ρ share of roots:
 *
 *     r_i  = Σ_a π(a | c_i) R[i][a]          R = thr(a) / thr(base) per root (or BE ratios)
 *     loss = -mean_i r_i + λ · mean_{i in the ρB smallest r_i} max(0, 1 - r_i)
 *
 *     arb_nde_mlp m;
 *     arb_nde_mlp_init(&m, ARB_NDE_F, 32, ARB_NDE_N_ACTIONS, seed, &err);
 *     double loss = arb_nde_mlp_loss(&m, X, R, B, lam, rho, grad, scratch);  // grad: n_params
 *     int a = arb_nde_mlp_argmax(&m, f, h);                                 // online: one per step
 *     arb_nde_mlp_save(&m, &prov, path, &err);   arb_nde_mlp_load(path, &m, &prov, &err);
 *     arb_nde_mlp_release(&m);
 *
 * Parameters are one float vector (adamw.h); arithmetic is double. forward/argmax allocate
 * nothing (the online path); init, load and loss (training only: B indices) do.
 */
#ifndef ARB_NDE_MLP_H
#define ARB_NDE_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "nde_features.h"

typedef struct arb_nde_mlp {
    int F, H, A;     /* features, hidden units, actions */
    float *w;        /* [n_params]: W1[H][F], b1[H], W2[A][H], b2[A] */
    size_t n_params;
    double mu[ARB_NDE_F], sd[ARB_NDE_F]; /* feature standardisation (sd 1 where constant) */
} arb_nde_mlp;

typedef struct arb_nde_prov {  /* where a selector came from (written to and read from its file) */
    char model_sha256[65], draft[64], verifier[32], objective[16], data_hash[17];
    uint64_t seed;
    int n_train, n_heldout;    /* roots */
    double heldout_ratio;      /* held-out mean ratio of the argmax policy vs the baseline action */
    double heldout_best_fixed; /* the same for the best single action on the training roots */
    arb_nde_latency lat;       /* the latency model the features and objective used */
} arb_nde_prov;

/* F <= ARB_NDE_F; weights ~ U(±1/sqrt(fan_in)) from seed, mu 0, sd 1. */
int arb_nde_mlp_init(arb_nde_mlp *m, int F, int H, int A, uint64_t seed, arb_err *err);
void arb_nde_mlp_release(arb_nde_mlp *m); /* idempotent */
/* Logits z[A] of raw features f[F]; h: scratch of 2H doubles. */
void arb_nde_mlp_forward(const arb_nde_mlp *m, const double *f, double *z, double *h);
/* argmax_a z (ties: lower index); h: scratch of 2H + A doubles. */
int arb_nde_mlp_argmax(const arb_nde_mlp *m, const double *f, double *h);
/* The objective above over B roots (X: B x F raw features, R: B x A) and its gradient (grad:
   n_params floats, overwritten). scratch: B x (2H + 2A + 1) doubles. NAN when out of memory. */
double arb_nde_mlp_loss(const arb_nde_mlp *m, const double *X, const double *R, int B, double lam, double rho,
                        float *grad, double *scratch);
/* JSON file: format, feature names, action set, shape, mu/sd, weights, provenance. load checks
   every field and that the action set and features equal this build's; errors name the file. */
int arb_nde_mlp_save(const arb_nde_mlp *m, const arb_nde_prov *p, const char *path, arb_err *err);
int arb_nde_mlp_load(const char *path, arb_nde_mlp *m, arb_nde_prov *p, arb_err *err);

#endif
