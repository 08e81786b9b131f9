/* vec_avx2.c — the AVX2/FMA vector kernels (vec_int.h): the attention scores four keys
 * at a time, RMSNorm's sum of squares in double lanes, and the shared SIMD body (exp,
 * weighted value sum, SwiGLU) on 8 lanes. Bit-identical to vec_scalar.c. */
#include "vec_int.h"
#include "isa_section.h"

#if defined(__x86_64__) && defined(__GNUC__)
ARB_ISA_SECTION_BEGIN("avx2,fma")
#include <immintrin.h>

/* arb_dot_f32 with one 8-lane register: the same FMAs per lane, then the same
   combining tree ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)). */
static inline float dot_f32_avx2(const float *a, const float *b, int n)
{
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float l[8];
    _mm256_storeu_ps(l, acc);
    float s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (; i < n; i++)
        s = fmaf(a[i], b[i], s);
    return s;
}

/* Four keys' accumulators -> their four dot products: m = lo + hi gives (l0+l4, l1+l5,
   l2+l6, l3+l7), and hadd(hadd(m0, m1), hadd(m2, m3)) yields (m[0]+m[1]) + (m[2]+m[3])
   per key — exactly arb_dot_f32's tree. */
static inline __m128 hsum4_dot_tree(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    const __m128 m0 = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
    const __m128 m1 = _mm_add_ps(_mm256_castps256_ps128(a1), _mm256_extractf128_ps(a1, 1));
    const __m128 m2 = _mm_add_ps(_mm256_castps256_ps128(a2), _mm256_extractf128_ps(a2, 1));
    const __m128 m3 = _mm_add_ps(_mm256_castps256_ps128(a3), _mm256_extractf128_ps(a3, 1));
    return _mm_hadd_ps(_mm_hadd_ps(m0, m1), _mm_hadd_ps(m2, m3));
}

/* Four keys (kr) for NH heads (16 ymm registers: 4 x NH accumulators, NH query vectors,
   one key vector): the scores s[h][0..3] of one key block. NH is a constant in each
   instantiation. */
static inline __attribute__((always_inline)) void block4_avx2(const float *const *q, const int NH,
                                                              const float *const *kr, int hd, float scale,
                                                              float *const *s, int j)
{
    __m256 acc[ARB_VEC_HEADS][4];
    for (int h = 0; h < NH; h++)
        for (int c = 0; c < 4; c++)
            acc[h][c] = _mm256_setzero_ps();
    for (int d = 0; d < hd; d += 8) {
        __m256 qv[ARB_VEC_HEADS];
        for (int h = 0; h < NH; h++)
            qv[h] = _mm256_loadu_ps(q[h] + d);
        for (int c = 0; c < 4; c++) {
            const __m256 kv = _mm256_loadu_ps(kr[c] + d);
            for (int h = 0; h < NH; h++)
                acc[h][c] = _mm256_fmadd_ps(qv[h], kv, acc[h][c]);
        }
    }
    for (int h = 0; h < NH; h++)
        _mm_storeu_ps(s[h] + j, _mm_mul_ps(hsum4_dot_tree(acc[h][0], acc[h][1], acc[h][2], acc[h][3]),
                                           _mm_set1_ps(scale)));
}

/* The key block for rows rb .. rb + nb - 1 (1 <= nb <= 3). */
static inline __attribute__((always_inline)) void block4_rows_avx2(const float *const *q, int nb,
                                                                   const float *const *kr, int hd, float scale,
                                                                   float *const *s, int j)
{
    switch (nb) {
    case 3: block4_avx2(q, 3, kr, hd, scale, s, j); break;
    case 2: block4_avx2(q, 2, kr, hd, scale, s, j); break;
    default: block4_avx2(q, 1, kr, hd, scale, s, j); break;
    }
}

/* Four keys at a time when hd % 8 == 0, for nh query rows in groups of up to 3 (the
   registers' limit): each group's pass over a 4-key block follows the previous group's, so a
   second group (a second tree node's heads, vec_int.h) finds the block's key rows in L1. Each
   key row is loaded once for a group's rows; per (row, key) the arithmetic is that of one
   row alone. The leftover keys one at a time. */
static void scores_rows_avx2(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                             int n_keys, int hd, float scale, float *const *s)
{
    const int pf = n_keys > ARB_VEC_PREFETCH_MIN;
    int j = 0;
    if (hd % 8 == 0) {
        for (; j + 4 <= n_keys; j += 4) {
            const float *kr[4];
            arb_vec_key_block(k, stride, rows, j, 4, n_keys, hd, pf, kr);
            for (int h0 = 0; h0 < nh; h0 += ARB_VEC_HEADS)
                block4_rows_avx2(q + h0, nh - h0 < ARB_VEC_HEADS ? nh - h0 : ARB_VEC_HEADS, kr, hd, scale, s + h0,
                                 j);
        }
    }
    for (; j < n_keys; j++)
        for (int h = 0; h < nh; h++)
            s[h][j] = dot_f32_avx2(q[h], k + (size_t)rows[j] * stride, hd) * scale;
}

void arb_vec_scores_avx2(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                         int n_keys, int hd, float scale, float *const *s)
{
    _Static_assert(ARB_VEC_HEADS == 3, "the register budget is written for 3 rows a pass");
    scores_rows_avx2(q, nh, k, stride, rows, n_keys, hd, scale, s);
}

/* arb_sumsq_ref with lanes 0-3 and 4-7 in two double registers. */
double arb_vec_sumsq_avx2(const float *x, int n)
{
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m256 v = _mm256_loadu_ps(x + k), sq = _mm256_mul_ps(v, v);
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    const __m256d m = _mm256_add_pd(lo, hi); /* (l0+l4, l1+l5, l2+l6, l3+l7) */
    double a[4];
    _mm256_storeu_pd(a, m);
    double s = (a[0] + a[1]) + (a[2] + a[3]);
    for (; k < n; k++)
        s += (double)(x[k] * x[k]);
    return s;
}

/* arb_max_ref with the 8 lanes in one register: maxps(x, m) is x > m ? x : m, the
   scalar comparison. */
float arb_vec_max_avx2(const float *s, int n)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    int j = 0;
    for (; j + 8 <= n; j += 8)
        m = _mm256_max_ps(_mm256_loadu_ps(s + j), m);
    float l[8];
    _mm256_storeu_ps(l, m);
    for (; j < n; j++)
        l[0] = s[j] > l[0] ? s[j] : l[0];
    for (int k = 1; k < 8; k++)
        l[0] = l[k] > l[0] ? l[k] : l[0];
    return l[0];
}

/* arb_sum_ref with the 8 lanes in one register, then the same tree. */
float arb_vec_sum_avx2(const float *s, int n)
{
    __m256 a = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= n; j += 8)
        a = _mm256_add_ps(a, _mm256_loadu_ps(s + j));
    float l[8];
    _mm256_storeu_ps(l, a);
    float t = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (; j < n; j++)
        t += s[j];
    return t;
}

static inline __m256 casti2f_avx2(__m256i x) { return _mm256_castsi256_ps(x); }
static inline __m256 select_ge_avx2(__m256 x, __m256 a)
{
    return _mm256_blendv_ps(a, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
}

#define VEC_T __m256
#define VEC_W 8
#define VEC_REGS 16
#define VEC_PFX _mm256_
#define VEC_SFX _avx2
#define VEC_EXP_TAIL arb_vec_scalar.exp
#define VEC_SWIGLU_TAIL arb_vec_scalar.swiglu
#define VEC_GEGLU_TAIL arb_vec_scalar.geglu
#include "vec_simd_body.h"

const vec_impl arb_vec_avx2 = {
    .name = "avx2",
    .scores = arb_vec_scores_avx2,
    .wsum = wsum_avx2,
    .exp = exp_avx2,
    .max = arb_vec_max_avx2,
    .sum = arb_vec_sum_avx2,
    .sumsq = arb_vec_sumsq_avx2,
    .swiglu = swiglu_avx2,
    .geglu = geglu_avx2,
};
ARB_ISA_SECTION_END
#else
const vec_impl arb_vec_avx2 = {.name = "avx2"}; /* no kernels: never selected */
#endif
