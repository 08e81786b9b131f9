/* vexp.c — exp of double arrays for PROCESS (vexp.h).
 *
 * exp(x) = 2^k * exp(r): k = round(x / ln 2) by the 1.5 * 2^52 shift, r = x - k ln 2 with
 * ln 2 split in two (two FMAs: |r| <= 0.347, its error well under an ulp of exp), exp(r)
 * the Taylor polynomial of degree 13 by Horner with FMAs (truncation below 4e-18
 * relative), and 2^k built in the exponent field (below 2^-1022, in two steps so that the
 * result is rounded once into the subnormals). Every path (scalar, AVX2, AVX-512) evaluates exactly these
 * operations, each rounded once (FMA or a plain IEEE operation; the build never contracts,
 * -std=c17), so their results are identical. */
#include "vexp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vexp_int.h"

static double pow2i(int64_t k) /* 2^k for -1022 <= k <= 1023 */
{
    const uint64_t b = (uint64_t)(k + 1023) << 52;
    double s;
    memcpy(&s, &b, sizeof s);
    return s;
}

double arb_vexp1(double x)
{
    if (x != x)
        return x;
    if (x < VEXP_MIN)
        return 0.0;
    if (x > VEXP_MAX)
        return INFINITY;
    const double t = x * VEXP_INV_LN2 + VEXP_SHIFT; /* two roundings: no contraction here */
    const double kd = t - VEXP_SHIFT;
    double r = fma(-kd, VEXP_LN2_HI, x);
    r = fma(-kd, VEXP_LN2_LO, r);
    double p = vexp_c[0];
    for (int j = 1; j < 13; j++)
        p = fma(p, r, vexp_c[j]);
    p = fma(p, r, 1.0);
    const int64_t k = (int64_t)kd;
    if (k >= -1022)
        return p * pow2i(k);
    return (p * pow2i(k + 600)) * pow2i(-600);
}

__attribute__((target("avx2,fma"))) static void vexp_avx2(double *x, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d v = _mm256_loadu_pd(x + i);
        if (!vexp4_in_range(v)) { /* NaN, subnormal results, 0 or inf: the scalar path */
            for (int k = 0; k < 4; k++)
                x[i + k] = arb_vexp1(x[i + k]);
            continue;
        }
        _mm256_storeu_pd(x + i, vexp4(v));
    }
    for (; i < n; i++)
        x[i] = arb_vexp1(x[i]);
}

__attribute__((target("avx512f"))) static void vexp_avx512(double *x, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512d v = _mm512_loadu_pd(x + i);
        if (!vexp8_in_range(v)) {
            for (int k = 0; k < 8; k++)
                x[i + k] = arb_vexp1(x[i + k]);
            continue;
        }
        _mm512_storeu_pd(x + i, vexp8(v));
    }
    for (; i < n; i++)
        x[i] = arb_vexp1(x[i]);
}

bool arb_vexp_inplace_avx512(double *x, int n)
{
    if (!__builtin_cpu_supports("avx512f"))
        return false;
    vexp_avx512(x, n);
    return true;
}

bool arb_vexp_inplace_avx2(double *x, int n)
{
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    vexp_avx2(x, n);
    return true;
}

void arb_vexp_inplace(double *x, int n)
{
    if (arb_vexp_inplace_avx512(x, n) || arb_vexp_inplace_avx2(x, n))
        return;
    for (int i = 0; i < n; i++)
        x[i] = arb_vexp1(x[i]);
}
