/* vec_avx512.c — the AVX-512F vector kernels (vec_int.h): the shared SIMD body (exp,
 * weighted value sum, SwiGLU) on 16 lanes, half the instructions of AVX2 with the same
 * bits; the scores and the sum of squares are AVX2's (their reduction trees are 8-lane
 * by definition). Tails go to the AVX2 kernels. */
#include "vec_int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2,fma,avx512f")
#include <immintrin.h>

static inline __m512 casti2f_avx512(__m512i x) { return _mm512_castsi512_ps(x); }
static inline __m512 select_ge_avx512(__m512 x, __m512 a)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), a, x);
}

#define VEC_T __m512
#define VEC_W 16
#define VEC_PFX _mm512_
#define VEC_SFX _avx512
#define VEC_EXP_TAIL arb_vec_avx2.exp
#define VEC_SWIGLU_TAIL arb_vec_avx2.swiglu
#define VEC_GEGLU_TAIL arb_vec_avx2.geglu
#include "vec_simd_body.h"

const vec_impl arb_vec_avx512 = {
    .name = "avx512",
    .scores = arb_vec_scores_avx2,
    .sumsq = arb_vec_sumsq_avx2,
    .wsum = wsum_avx512,
    .exp = exp_avx512,
    .swiglu = swiglu_avx512,
    .geglu = geglu_avx512,
};
#else
const vec_impl arb_vec_avx512 = {.name = "avx512"}; /* no kernels: never selected */
#endif
