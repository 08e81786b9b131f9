/* vexp_int.h — the vector bodies of vexp.c's exp, shared with PROCESS's fused passes
 * (process_simd.c). One sequence of operations (vexp.c's comment), written once per width;
 * a caller sends only lanes in [VEXP_NORMAL, VEXP_MAX] here and the rest to arb_vexp1. */
#ifndef ARB_VEXP_INT_H
#define ARB_VEXP_INT_H

#include <immintrin.h>

#include "vexp.h"

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

/* exp of each lane, every lane in [VEXP_NORMAL, VEXP_MAX]: one body for both widths (P the
   intrinsics' prefix, SI the vector width in bits, E64 the 64-bit broadcast). */
#define VEXP_DEF(NAME, TARGET, T, P, SI, E64)                                                       \
    TARGET static inline T NAME(T v)                                                                \
    {                                                                                               \
        const T shift = P##_set1_pd(VEXP_SHIFT);                                                    \
        const T t = P##_add_pd(P##_mul_pd(v, P##_set1_pd(VEXP_INV_LN2)), shift);                    \
        const T kd = P##_sub_pd(t, shift);                                                          \
        T r = P##_fnmadd_pd(kd, P##_set1_pd(VEXP_LN2_HI), v);                                       \
        r = P##_fnmadd_pd(kd, P##_set1_pd(VEXP_LN2_LO), r);                                         \
        T p = P##_set1_pd(vexp_c[0]);                                                               \
        for (int j = 1; j < 13; j++)                                                                \
            p = P##_fmadd_pd(p, r, P##_set1_pd(vexp_c[j]));                                         \
        p = P##_fmadd_pd(p, r, P##_set1_pd(1.0));                                                   \
        /* t's low mantissa bits hold k (offset 2^51): k + 1023 into the exponent field */          \
        const __m##SI##i e = P##_slli_epi64(                                                           \
            P##_add_epi64(P##_sub_epi64(P##_castpd_si##SI(t), P##_castpd_si##SI(shift)), E64(1023)), 52); \
        return P##_mul_pd(p, P##_castsi##SI##_pd(e));                                               \
    }
VEXP_DEF(vexp4, __attribute__((target("avx2,fma"))), __m256d, _mm256, 256, _mm256_set1_epi64x)
VEXP_DEF(vexp8, __attribute__((target("avx512f"))), __m512d, _mm512, 512, _mm512_set1_epi64)
#undef VEXP_DEF

/* Lanes that vexp4 / vexp8 may take (every lane of the vector in range) */
__attribute__((target("avx2,fma"))) static inline bool vexp4_in_range(__m256d v)
{
    const __m256d ok = _mm256_and_pd(_mm256_cmp_pd(v, _mm256_set1_pd(VEXP_NORMAL), _CMP_GE_OQ),
                                     _mm256_cmp_pd(v, _mm256_set1_pd(VEXP_MAX), _CMP_LE_OQ));
    return _mm256_movemask_pd(ok) == 0xf;
}
__attribute__((target("avx512f"))) static inline bool vexp8_in_range(__m512d v)
{
    return (_mm512_cmp_pd_mask(v, _mm512_set1_pd(VEXP_NORMAL), _CMP_GE_OQ) &
            _mm512_cmp_pd_mask(v, _mm512_set1_pd(VEXP_MAX), _CMP_LE_OQ)) == 0xff;
}

#endif
