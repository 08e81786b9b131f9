/* adamw.h — AdamW with a linear warm-up + cosine learning-rate schedule and global-norm
 * gradient clipping, over one flat float vector (the heads trainer; reusable by any trainer
 * whose parameters sit in one array, e.g. EAGLE heads).
 *
 *     arb_adamw_opts o = arb_adamw_default_opts();  // lr 1e-3, betas .9/.999, eps 1e-8, clip 1
 *     o.total_steps = 2000; o.warmup_steps = 40;
 *     arb_adamw opt;
 *     arb_adamw_init(&opt, n_params, &o, &err);
 *     for (...) { grad = ...; double gn = arb_adamw_step(&opt, params, grad); }
 *     arb_adamw_release(&opt);
 *
 * Deterministic (fixed loop order, no threads); allocates only in init.
 */
#ifndef ARB_ADAMW_H
#define ARB_ADAMW_H

#include <stddef.h>

#include "error.h"

typedef struct arb_adamw_opts {
    double lr;            /* peak learning rate (1e-3, Medusa's) */
    double beta1, beta2;  /* moment decays (0.9, 0.999) */
    double eps;           /* denominator floor (1e-8) */
    double weight_decay;  /* decoupled decay per step x lr (0: Medusa's HF default) */
    double clip;          /* global gradient-norm cap (1.0, HF's max_grad_norm); <= 0: off */
    int warmup_steps;     /* linear ramp 0 -> lr over these steps (0: none) */
    int total_steps;      /* cosine from lr (end of warm-up) to lr_min_ratio x lr at total_steps */
    double lr_min_ratio;  /* floor of the cosine, as a share of lr (0) */
} arb_adamw_opts;
arb_adamw_opts arb_adamw_default_opts(void);

typedef struct arb_adamw {
    arb_adamw_opts o;
    size_t n;     /* parameters */
    float *m, *v; /* [n] first and second moments */
    int t;        /* steps taken */
} arb_adamw;

/* ARB_E_INVAL on a bad option (named), ARB_E_NOMEM. */
int arb_adamw_init(arb_adamw *a, size_t n, const arb_adamw_opts *o, arb_err *err);
void arb_adamw_release(arb_adamw *a); /* idempotent */
/* Learning rate at step t (0-based): warm-up, then cosine. */
double arb_adamw_lr(const arb_adamw_opts *o, int t);
/* One update of params from grad (grad is scaled in place when clipped). Returns the gradient's
   global L2 norm before clipping. */
double arb_adamw_step(arb_adamw *a, float *params, float *grad);

#endif
