/* adamw.c — AdamW, warm-up + cosine schedule, gradient clipping (see adamw.h). */
#include "adamw.h"

#include <math.h>
#include <stdlib.h>

arb_adamw_opts arb_adamw_default_opts(void)
{
    return (arb_adamw_opts){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0,
                            .clip = 1.0, .warmup_steps = 0, .total_steps = 1, .lr_min_ratio = 0};
}

int arb_adamw_init(arb_adamw *a, size_t n, const arb_adamw_opts *o, arb_err *err)
{
    *a = (arb_adamw){0};
    if (!(o->lr > 0) || !(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0) ||
        !(o->weight_decay >= 0))
        return ARB_ERR(err, ARB_E_INVAL, "adamw: lr %g, betas %g/%g, eps %g, weight_decay %g out of range", o->lr,
                       o->beta1, o->beta2, o->eps, o->weight_decay);
    if (o->total_steps < 1 || o->warmup_steps < 0 || o->warmup_steps > o->total_steps)
        return ARB_ERR(err, ARB_E_INVAL, "adamw: warmup_steps %d must be in [0, total_steps %d]", o->warmup_steps,
                       o->total_steps);
    if (!(o->lr_min_ratio >= 0 && o->lr_min_ratio <= 1))
        return ARB_ERR(err, ARB_E_INVAL, "adamw: lr_min_ratio %g must be in [0, 1]", o->lr_min_ratio);
    a->o = *o;
    a->n = n;
    a->m = calloc(n ? n : 1, sizeof *a->m);
    a->v = calloc(n ? n : 1, sizeof *a->v);
    if (!a->m || !a->v) {
        arb_adamw_release(a);
        return ARB_ERR(err, ARB_E_NOMEM, "adamw: cannot allocate moments for %zu parameters", n);
    }
    return ARB_OK;
}

void arb_adamw_release(arb_adamw *a)
{
    free(a->m);
    free(a->v);
    a->m = a->v = NULL;
}

double arb_adamw_lr(const arb_adamw_opts *o, int t)
{
    if (t < o->warmup_steps)
        return o->lr * (t + 1) / o->warmup_steps;
    int span = o->total_steps - o->warmup_steps;
    double p = span > 0 ? (double)(t - o->warmup_steps) / span : 1.0;
    if (p > 1)
        p = 1;
    double lo = o->lr * o->lr_min_ratio;
    return lo + (o->lr - lo) * 0.5 * (1.0 + cos(M_PI * p));
}

double arb_adamw_step(arb_adamw *a, float *params, float *grad)
{
    double ss = 0;
    for (size_t i = 0; i < a->n; i++)
        ss += (double)grad[i] * grad[i];
    double norm = sqrt(ss);
    float scale = a->o.clip > 0 && norm > a->o.clip ? (float)(a->o.clip / norm) : 1.0f;
    double lr = arb_adamw_lr(&a->o, a->t);
    a->t++;
    const float b1 = (float)a->o.beta1, b2 = (float)a->o.beta2;
    const double c1 = 1.0 - pow(a->o.beta1, a->t), c2 = 1.0 - pow(a->o.beta2, a->t);
    const float step = (float)(lr / c1), isc2 = (float)(1.0 / sqrt(c2)), eps = (float)a->o.eps;
    const float decay = (float)(1.0 - lr * a->o.weight_decay);
    for (size_t i = 0; i < a->n; i++) {
        float g = grad[i] *= scale;
        a->m[i] = b1 * a->m[i] + (1 - b1) * g;
        a->v[i] = b2 * a->v[i] + (1 - b2) * g * g;
        params[i] = params[i] * decay - step * a->m[i] / (sqrtf(a->v[i]) * isc2 + eps);
    }
    return norm;
}
