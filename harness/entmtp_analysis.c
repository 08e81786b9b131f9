/* entmtp_analysis.c — see entmtp_analysis.h. */
#include "entmtp_analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "resample.h"

double arb_pearson(const double *x, const double *y, int n)
{
    if (n < 2)
        return NAN;
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++)
        mx += x[i], my += y[i];
    mx /= n, my /= n;
    double sxy = 0, sxx = 0, syy = 0; /* centred sums: no cancellation from raw moments */
    for (int i = 0; i < n; i++) {
        const double a = x[i] - mx, b = y[i] - my;
        sxy += a * b, sxx += a * a, syy += b * b;
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

int arb_pearson_boot(const double *x, const double *y, const int *grp, int n, int n_grp, int boot, uint64_t seed,
                     double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n_grp < 2 || boot < 1)
        return ARB_OK;
    /* rows ordered by group once: ord[start[g] .. start[g+1]) are group g's */
    int *start = calloc((size_t)n_grp + 1, sizeof *start), *fill = calloc((size_t)n_grp, sizeof *fill);
    int *ord = malloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    double *rs = malloc((size_t)boot * sizeof *rs), *bx = NULL;
    int rc = start && fill && ord && rs ? ARB_OK : ARB_E_NOMEM, maxg = 0;
    for (int i = 0; !rc && i < n; i++)
        start[grp[i] + 1]++;
    for (int g = 0; !rc && g < n_grp; g++) {
        maxg = start[g + 1] > maxg ? start[g + 1] : maxg;
        start[g + 1] += start[g];
    }
    for (int i = 0; !rc && i < n; i++)
        ord[start[grp[i]] + fill[grp[i]]++] = i;
    /* a resample draws n_grp groups of at most maxg rows: x in the first half, y the second */
    if (!rc && !(bx = malloc((size_t)2 * (maxg > 0 ? maxg : 1) * n_grp * sizeof *bx)))
        rc = ARB_E_NOMEM;
    int k = 0;
    uint64_t s = seed;
    for (int b = 0; !rc && b < boot; b++) {
        double *by = bx + (size_t)maxg * n_grp;
        int m = 0;
        for (int j = 0; j < n_grp; j++) {
            const int g = (int)(arb_splitmix64(&s) % (uint64_t)n_grp);
            for (int t = start[g]; t < start[g + 1]; t++)
                bx[m] = x[ord[t]], by[m] = y[ord[t]], m++;
        }
        const double r = arb_pearson(bx, by, m);
        if (!isnan(r))
            rs[k++] = r;
    }
    if (!rc && k > 0) {
        qsort(rs, (size_t)k, sizeof *rs, arb_cmp_double);
        *lo = arb_quantile_sorted(rs, k, 0.025);
        *hi = arb_quantile_sorted(rs, k, 0.975);
    }
    free(start), free(fill), free(ord), free(rs), free(bx);
    return rc;
}

arb_logreg_opts arb_logreg_default_opts(void)
{
    return (arb_logreg_opts){.steps = 400, .lr = 0.05, .l2 = 1e-3};
}

static double sigmoid(double z)
{
    return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z));
}

double arb_logreg_predict(const arb_logreg *m, const double *x)
{
    double z = m->w[m->F];
    for (int f = 0; f < m->F; f++)
        z += m->w[f] * (x[f] - m->mean[f]) / m->sd[f];
    return sigmoid(z);
}

int arb_logreg_fit(const double *X, const int *y, int n, int F, const arb_logreg_opts *o, arb_logreg *out,
                   arb_err *err)
{
    if (F < 1 || F > ARB_LOGREG_FMAX || n < 1)
        return ARB_ERR(err, ARB_E_INVAL, "logistic regression: %d features (1..%d), %d rows", F, ARB_LOGREG_FMAX, n);
    memset(out, 0, sizeof *out);
    out->F = F;
    for (int f = 0; f < F; f++) {
        double s = 0, ss = 0;
        for (int i = 0; i < n; i++)
            s += X[(size_t)i * F + f];
        const double mu = s / n;
        for (int i = 0; i < n; i++) {
            const double d = X[(size_t)i * F + f] - mu;
            ss += d * d;
        }
        out->mean[f] = mu;
        out->sd[f] = ss > 0 ? sqrt(ss / n) : 1;
    }
    arb_adamw_opts ao = arb_adamw_default_opts();
    ao.lr = o->lr, ao.total_steps = o->steps, ao.warmup_steps = 0, ao.weight_decay = 0, ao.clip = 0;
    ao.lr_min_ratio = 0.1;
    arb_adamw opt;
    int rc = arb_adamw_init(&opt, (size_t)F + 1, &ao, err);
    if (rc)
        return rc;
    float p[ARB_LOGREG_FMAX + 1] = {0}, g[ARB_LOGREG_FMAX + 1];
    for (int t = 0; t < o->steps; t++) {
        double gd[ARB_LOGREG_FMAX + 1] = {0};
        for (int i = 0; i < n; i++) {
            const double *x = X + (size_t)i * F;
            double z = p[F];
            for (int f = 0; f < F; f++)
                z += p[f] * (x[f] - out->mean[f]) / out->sd[f];
            const double e = sigmoid(z) - y[i]; /* d(log-loss)/dz */
            for (int f = 0; f < F; f++)
                gd[f] += e * (x[f] - out->mean[f]) / out->sd[f];
            gd[F] += e;
        }
        for (int f = 0; f <= F; f++)
            g[f] = (float)(gd[f] / n + (f < F ? 2 * o->l2 * p[f] : 0));
        arb_adamw_step(&opt, p, g);
    }
    arb_adamw_release(&opt);
    for (int f = 0; f <= F; f++)
        out->w[f] = p[f];
    return ARB_OK;
}

typedef struct scored {
    double s;
    int y;
} scored;

static int cmp_scored(const void *a, const void *b)
{
    const double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return (x > y) - (x < y);
}

double arb_auroc(const double *score, const int *y, int n)
{
    scored *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return NAN;
    long pos = 0, neg = 0;
    for (int i = 0; i < n; i++) {
        v[i] = (scored){score[i], y[i] != 0};
        pos += v[i].y, neg += !v[i].y;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_scored);
    /* sum of positive ranks, tied blocks at their mean rank */
    double rank_sum = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && v[j].s == v[i].s)
            j++;
        const double mid = (i + 1 + j) / 2.0; /* ranks i+1 .. j */
        for (int t = i; t < j; t++)
            rank_sum += v[t].y ? mid : 0;
        i = j;
    }
    free(v);
    if (!pos || !neg)
        return NAN;
    return (rank_sum - pos * (pos + 1) / 2.0) / ((double)pos * neg);
}
