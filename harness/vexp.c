/* vexp.c — exp of double arrays for PROCESS (vexp.h).
 *
 * exp(x) = 2^k * exp(r): k = round(x / ln 2) by the 1.5 * 2^52 shift, r = x - k ln 2 with
 * ln 2 split in two (two FMAs: |r| <= 0.347, its error well under an ulp of exp), exp(r)
 * the Taylor polynomial of degree 13 by Horner with FMAs (truncation below 4e-18
 * relative), and 2^k built in the exponent field (below 2^-1022, in two steps so that the
 * result is rounded once into the subnormals). Both paths evaluate exactly these
 * operations, each rounded once (FMA or a plain IEEE operation; the build never contracts,
 * -std=c17), so their results are identical. */
#include "vexp.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define VEXP_INV_LN2 0x1.71547652b82fep+0
#define VEXP_LN2_HI 0x1.62e42fefa39efp-1
#define VEXP_LN2_LO 0x1.abc9e3b39803fp-56
#define VEXP_SHIFT 0x1.8p52 /* adding it rounds to an integer, kept in the low mantissa bits */
#define VEXP_MIN (-745.2)   /* below: 0 (exp(-745.14) already rounds to 0) */
#define VEXP_MAX 709.78     /* above: +inf */
#define VEXP_NORMAL (-708.0) /* at or above: 2^k is a normal double (k >= -1022) */

/* 1/j! for j = 13 .. 1 (Horner order); the constant term 1 follows. */
static const double vexp_c[13] = {
    0x1.6124613a86d09p-33, 0x1.1eed8eff8d898p-29, 0x1.ae64567f544e4p-26, 0x1.27e4fb7789f5cp-22,
    0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10,
    0x1.1111111111111p-7, 0x1.5555555555555p-5, 0x1.5555555555555p-3, 0x1.0000000000000p-1,
    0x1.0000000000000p+0,
};

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
    const __m256d inv_ln2 = _mm256_set1_pd(VEXP_INV_LN2), shift = _mm256_set1_pd(VEXP_SHIFT);
    const __m256d ln2_hi = _mm256_set1_pd(VEXP_LN2_HI), ln2_lo = _mm256_set1_pd(VEXP_LN2_LO);
    const __m256d lo = _mm256_set1_pd(VEXP_NORMAL), hi = _mm256_set1_pd(VEXP_MAX), one = _mm256_set1_pd(1.0);
    const __m256i shift_bits = _mm256_castpd_si256(shift), bias = _mm256_set1_epi64x(1023);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d v = _mm256_loadu_pd(x + i);
        const __m256d ok = _mm256_and_pd(_mm256_cmp_pd(v, lo, _CMP_GE_OQ), _mm256_cmp_pd(v, hi, _CMP_LE_OQ));
        if (_mm256_movemask_pd(ok) != 0xf) { /* NaN, subnormal results, 0 or inf: the scalar path */
            for (int k = 0; k < 4; k++)
                x[i + k] = arb_vexp1(x[i + k]);
            continue;
        }
        const __m256d t = _mm256_add_pd(_mm256_mul_pd(v, inv_ln2), shift);
        const __m256d kd = _mm256_sub_pd(t, shift);
        __m256d r = _mm256_fnmadd_pd(kd, ln2_hi, v);
        r = _mm256_fnmadd_pd(kd, ln2_lo, r);
        __m256d p = _mm256_set1_pd(vexp_c[0]);
        for (int j = 1; j < 13; j++)
            p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(vexp_c[j]));
        p = _mm256_fmadd_pd(p, r, one);
        /* t's low mantissa bits hold k (offset 2^51): k + 1023 into the exponent field */
        const __m256i e = _mm256_slli_epi64(_mm256_add_epi64(_mm256_sub_epi64(_mm256_castpd_si256(t), shift_bits), bias), 52);
        _mm256_storeu_pd(x + i, _mm256_mul_pd(p, _mm256_castsi256_pd(e)));
    }
    for (; i < n; i++)
        x[i] = arb_vexp1(x[i]);
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
    if (arb_vexp_inplace_avx2(x, n))
        return;
    for (int i = 0; i < n; i++)
        x[i] = arb_vexp1(x[i]);
}
