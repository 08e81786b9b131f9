/* process_simd.c — PROCESS's pointwise passes at three widths (process_simd.h).
 *
 * The scalar functions are the reference (the code PROCESS ran before these existed); the
 * AVX2 and AVX-512 ones apply the same operation to each element (a product, a maximum
 * that keeps its accumulator on ties and NaN like `a > m ? a : m`, a difference, vexp's
 * exp, a quotient: each correctly rounded, so the same bits), and the sum keeps eight
 * partial sums whatever the width: element x goes to partial x % 8 in order, AVX2 holding
 * partials 0-3 and 4-7 in two registers, AVX-512 all eight in one. */
#include "process_simd.h"

#include <math.h>

#include "vexp_int.h"

int arb_proc_isa_best(void)
{
    if (__builtin_cpu_supports("avx512f"))
        return ARB_PROC_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ARB_PROC_AVX2;
    return ARB_PROC_SCALAR;
}

bool arb_proc_isa_ok(int isa) { return isa >= ARB_PROC_SCALAR && isa <= arb_proc_isa_best(); }

/* ---- scalar (the reference) ---- */

static double scale_max_scalar(const float *z, int x0, int V, double invT, double *pi, double m)
{
    for (int x = x0; x < V; x++) {
        pi[x] = (double)z[x] * invT;
        m = pi[x] > m ? pi[x] : m;
    }
    return m;
}

/* elements x0.. of the row into the partial sums part[x % 8] */
static void exp_sum_scalar(double *pi, int x0, int V, double m, double part[8])
{
    for (int x = x0; x < V; x++) {
        pi[x] = arb_vexp1(pi[x] - m);
        part[x % 8] += pi[x];
    }
}

static double combine(const double p[8])
{
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* ---- AVX2 ---- */

__attribute__((target("avx2,fma"))) static double scale_max_avx2(const float *z, int V, double invT, double *pi)
{
    const __m256d it = _mm256_set1_pd(invT);
    __m256d mv = _mm256_set1_pd(-INFINITY);
    int x = 0;
    for (; x + 4 <= V; x += 4) {
        const __m256d v = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(z + x)), it);
        _mm256_storeu_pd(pi + x, v);
        mv = _mm256_max_pd(v, mv); /* NaN or equal: the second operand, the accumulator */
    }
    double l[4];
    _mm256_storeu_pd(l, mv);
    double m = -INFINITY;
    for (int k = 0; k < 4; k++) /* the lanes' maxima are values of the row: any order gives the max */
        m = l[k] > m ? l[k] : m;
    return scale_max_scalar(z, x, V, invT, pi, m);
}

__attribute__((target("avx2,fma"))) static double exp_sum_avx2(double *pi, int V, double m)
{
    const __m256d mv = _mm256_set1_pd(m);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(); /* partials 0-3, 4-7 */
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        __m256d a = _mm256_sub_pd(_mm256_loadu_pd(pi + x), mv), b = _mm256_sub_pd(_mm256_loadu_pd(pi + x + 4), mv);
        if (vexp4_in_range(a))
            a = vexp4(a);
        else {
            double t[4];
            _mm256_storeu_pd(t, a);
            for (int k = 0; k < 4; k++)
                t[k] = arb_vexp1(t[k]);
            a = _mm256_loadu_pd(t);
        }
        if (vexp4_in_range(b))
            b = vexp4(b);
        else {
            double t[4];
            _mm256_storeu_pd(t, b);
            for (int k = 0; k < 4; k++)
                t[k] = arb_vexp1(t[k]);
            b = _mm256_loadu_pd(t);
        }
        _mm256_storeu_pd(pi + x, a);
        _mm256_storeu_pd(pi + x + 4, b);
        s0 = _mm256_add_pd(s0, a);
        s1 = _mm256_add_pd(s1, b);
    }
    double part[8];
    _mm256_storeu_pd(part, s0);
    _mm256_storeu_pd(part + 4, s1);
    exp_sum_scalar(pi, x, V, m, part);
    return combine(part);
}

__attribute__((target("avx2,fma"))) static void div_avx2(double *pi, int V, double S)
{
    const __m256d sv = _mm256_set1_pd(S);
    int x = 0;
    for (; x + 4 <= V; x += 4)
        _mm256_storeu_pd(pi + x, _mm256_div_pd(_mm256_loadu_pd(pi + x), sv));
    for (; x < V; x++)
        pi[x] /= S;
}

/* ---- AVX-512 ---- */

__attribute__((target("avx512f"))) static double scale_max_avx512(const float *z, int V, double invT, double *pi)
{
    const __m512d it = _mm512_set1_pd(invT);
    __m512d mv = _mm512_set1_pd(-INFINITY);
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        const __m512d v = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(z + x)), it);
        _mm512_storeu_pd(pi + x, v);
        mv = _mm512_max_pd(v, mv);
    }
    double l[8];
    _mm512_storeu_pd(l, mv);
    double m = -INFINITY;
    for (int k = 0; k < 8; k++)
        m = l[k] > m ? l[k] : m;
    return scale_max_scalar(z, x, V, invT, pi, m);
}

__attribute__((target("avx512f"))) static double exp_sum_avx512(double *pi, int V, double m)
{
    const __m512d mv = _mm512_set1_pd(m);
    __m512d s = _mm512_setzero_pd(); /* lane k: partial k */
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        __m512d a = _mm512_sub_pd(_mm512_loadu_pd(pi + x), mv);
        if (vexp8_in_range(a))
            a = vexp8(a);
        else {
            double t[8];
            _mm512_storeu_pd(t, a);
            for (int k = 0; k < 8; k++)
                t[k] = arb_vexp1(t[k]);
            a = _mm512_loadu_pd(t);
        }
        _mm512_storeu_pd(pi + x, a);
        s = _mm512_add_pd(s, a);
    }
    double part[8];
    _mm512_storeu_pd(part, s);
    exp_sum_scalar(pi, x, V, m, part);
    return combine(part);
}

__attribute__((target("avx512f"))) static void div_avx512(double *pi, int V, double S)
{
    const __m512d sv = _mm512_set1_pd(S);
    int x = 0;
    for (; x + 8 <= V; x += 8)
        _mm512_storeu_pd(pi + x, _mm512_div_pd(_mm512_loadu_pd(pi + x), sv));
    for (; x < V; x++)
        pi[x] /= S;
}

/* ---- dispatch ---- */

double arb_proc_scale_max(int isa, const float *z, int V, double invT, double *pi)
{
    switch (isa) {
    case ARB_PROC_AVX512: return scale_max_avx512(z, V, invT, pi);
    case ARB_PROC_AVX2: return scale_max_avx2(z, V, invT, pi);
    default: return scale_max_scalar(z, 0, V, invT, pi, -INFINITY);
    }
}

double arb_proc_exp_sum(int isa, double *pi, int V, double m)
{
    switch (isa) {
    case ARB_PROC_AVX512: return exp_sum_avx512(pi, V, m);
    case ARB_PROC_AVX2: return exp_sum_avx2(pi, V, m);
    default: {
        double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        exp_sum_scalar(pi, 0, V, m, part);
        return combine(part);
    }
    }
}

void arb_proc_div(int isa, double *pi, int V, double S)
{
    switch (isa) {
    case ARB_PROC_AVX512: div_avx512(pi, V, S); break;
    case ARB_PROC_AVX2: div_avx2(pi, V, S); break;
    default:
        for (int x = 0; x < V; x++)
            pi[x] /= S;
        break;
    }
}
