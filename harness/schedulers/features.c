/* features.c — EntMTP step features (see features.h). */
#include "features.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int ema_w[ARB_ENTFEAT_EMA] = {4, 8, 12, 16, 24, 32, 64};
static const int last_k[3] = {4, 8, 16};

int arb_entfeat_kind_parse(const char *name)
{
    if (!strcmp(name, "lit"))
        return ARB_ENTFEAT_LIT;
    if (!strcmp(name, "gD"))
        return ARB_ENTFEAT_GD;
    if (!strcmp(name, "sum"))
        return ARB_ENTFEAT_SUM;
    return -1;
}

void arb_entfeat_reset(arb_entfeat *f, arb_entfeat_kind kind)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
}

void arb_entfeat_base(arb_entfeat *f, const float *row, int V)
{
    float mx = row[0];
    for (int i = 1; i < V; i++)
        mx = row[i] > mx ? row[i] : mx;
    /* Σ e^(l - mx) and Σ (l - mx) e^(l - mx) in float (expf: the step budget is 0.1 ms for
       49k entries), summed per block of 256 into doubles */
    double z = 0, zl = 0;
    for (int i0 = 0; i0 < V; i0 += 256) {
        int i1 = i0 + 256 < V ? i0 + 256 : V;
        float bz = 0, bl = 0;
        for (int i = i0; i < i1; i++) {
            float x = row[i] - mx;
            float e = x > -40.0f ? expf(x) : 0.0f; /* e^-40 adds nothing a float sum keeps */
            bz += e;
            bl += x * e;
        }
        z += bz, zl += bl;
    }
    f->p0 = 1.0 / z;
    f->H = log(z) - zl / z; /* -Σ π log π with π = e^x / z */
    for (int j = 0; j < ARB_ENTFEAT_EMA; j++) {
        double a = 2.0 / (ema_w[j] + 1);
        f->H_ema[j] = f->n_steps == 0 && f->H_ema[j] == 0 ? f->H : a * f->H + (1 - a) * f->H_ema[j];
    }
}

void arb_entfeat_heads(arb_entfeat *f, const float *p, const int32_t *top1, int D)
{
    f->D = D < ARB_ENTFEAT_D ? D : ARB_ENTFEAT_D;
    f->g[0] = f->p0;
    f->s_sum = f->p0;
    f->s_lit = f->p0;
    for (int d = 1; d <= f->D; d++) {
        f->p[d - 1] = p[d - 1];
        f->top1[d - 1] = top1[d - 1];
        f->g[d] = f->g[d - 1] * p[d - 1];
        f->s_sum += f->g[d];
        f->s_lit = f->g[d] > f->s_lit ? f->g[d] : f->s_lit; /* = p0: every factor <= 1 */
    }
    f->s_gD = f->g[f->D];
    f->s = f->kind == ARB_ENTFEAT_GD ? f->s_gD : f->kind == ARB_ENTFEAT_SUM ? f->s_sum : f->s_lit;
}

void arb_entfeat_accepted(arb_entfeat *f, const int32_t *tok, int n)
{
    /* head agreement [CHOICE]: over the depths with a committed token, the share where this
       step's rank-0 head token equals it */
    int m = n < f->D ? n : f->D, agree = 0;
    for (int d = 0; d < m; d++)
        agree += f->top1[d] == tok[d];
    f->head_agree = m ? (double)agree / m : 0;
    f->acc_ema = f->n_steps == 0 ? n : (2.0 / 9) * n + (7.0 / 9) * f->acc_ema;
    f->hist[f->n_steps % ARB_ENTFEAT_HIST] = n;
    f->n_steps++;
    for (int j = 0; j < 3; j++) {
        int k = last_k[j] < f->n_steps ? last_k[j] : f->n_steps;
        double s = 0, lo = 1e9, hi = -1e9;
        for (int i = 0; i < k; i++) {
            int v = f->hist[(f->n_steps - 1 - i) % ARB_ENTFEAT_HIST];
            s += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        f->acc_mean[j] = s / k, f->acc_min[j] = lo, f->acc_max[j] = hi;
    }
}

int arb_entfeat_json(const arb_entfeat *f, char *buf, int cap)
{
    int n = snprintf(buf, (size_t)cap, "\"s_lit\":%.6g,\"s_gD\":%.6g,\"s_sum\":%.6g,\"p0\":%.6g,\"p_d\":[", f->s_lit,
                     f->s_gD, f->s_sum, f->p0);
    for (int d = 0; d < f->D && n < cap; d++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s%.6g", d ? "," : "", f->p[d]);
    if (n < cap)
        n += snprintf(buf + n, (size_t)(cap - n), "],\"H_t\":%.6g,\"H_ema\":[", f->H);
    for (int j = 0; j < ARB_ENTFEAT_EMA && n < cap; j++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s%.6g", j ? "," : "", f->H_ema[j]);
    if (n < cap)
        n += snprintf(buf + n, (size_t)(cap - n),
                      "],\"acc_ema\":%.6g,\"acc_last_k\":[[%.4g,%g,%g],[%.4g,%g,%g],[%.4g,%g,%g]],\"head_agree\":%.4g",
                      f->acc_ema, f->acc_mean[0], f->acc_min[0], f->acc_max[0], f->acc_mean[1], f->acc_min[1],
                      f->acc_max[1], f->acc_mean[2], f->acc_min[2], f->acc_max[2], f->head_agree);
    return n < cap ? n : -1;
}
