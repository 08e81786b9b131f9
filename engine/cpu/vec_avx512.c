/* vec_avx512.c — the AVX-512F vector kernels (vec_int.h): the attention scores 16 keys
 * at a time, two keys to a register, and the shared SIMD body (exp, weighted value sum,
 * SwiGLU) on 16 lanes; with full-width 512-bit FMA units (Zen 5 here: 2 per cycle at
 * either width) that is half the FMA instructions of AVX2 for the same bits. The softmax
 * max and sum and the sum of squares are AVX2's (their lanes are 8 by definition), and
 * the tails go to the AVX2 kernels. */
#include "vec_int.h"
#include "isa_section.h"

#if defined(__x86_64__) && defined(__GNUC__)
ARB_ISA_SECTION_BEGIN("avx2,fma,avx512f")
#include <immintrin.h>

/* Two keys' 8-dim slices in one register: key a in lanes 0-7, key b in lanes 8-15. */
static inline __m512 load_pair(const float *a, const float *b)
{
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(a))),
                                               _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}

/* Eight keys' accumulators (pairs as load_pair puts them) -> their eight dot products,
   in key order, by arb_dot_f32's tree. Per key, m = lo + hi gives (l0+l4, l1+l5, l2+l6,
   l3+l7): the 128-bit blocks of the four pairs are regrouped so that one add does four
   keys. Then t = (m0+m1, m2+m3) for the keys of both halves side by side and
   u = t0 + t1 = (m0+m1)+(m2+m3), the AVX2 hadd(hadd) of the same sums; the results
   sit in lanes 0 and 1 of each block and are gathered in order. Float adds commute
   exactly, so only the tree matters. */
static inline __m256 hsum8_dot_tree(__m512 a01, __m512 a23, __m512 a45, __m512 a67)
{
    const __m512 p = _mm512_add_ps(_mm512_shuffle_f32x4(a01, a23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(a01, a23, _MM_SHUFFLE(3, 1, 3, 1))); /* m of keys 0-3 */
    const __m512 q = _mm512_add_ps(_mm512_shuffle_f32x4(a45, a67, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(a45, a67, _MM_SHUFFLE(3, 1, 3, 1))); /* keys 4-7 */
    const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(p, q, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(p, q, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t, t, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(t, t, _MM_SHUFFLE(3, 1, 3, 1)));
    /* block b of u: lane 0 = key b, lane 1 = key 4 + b */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps256(_mm512_permutexvar_ps(order, u));
}

/* KEYS (16 or 8) keys at a time when hd % 8 == 0, for NQ query rows: each register holds a
   pair of keys (load_pair) and the query's 8-dim slice twice, so one 512-bit FMA does the work
   of two 256-bit ones in arb_dot_f32's lanes. KEYS / 2 x NQ accumulators, NQ query slices and
   a key pair fit the 32 registers: sixteen keys for up to 3 rows (one node's heads: 24 + 3 +
   1), eight for 4-6 (two nodes', vec_int.h: 24 + 6 + 1). Sixteen keys rather than eight load
   each query slice half as often: 0.83 -> 0.69 ns per (head, key) with the keys in L1 (a node
   block's key block). Per (row, key) the lanes, the FMA sequence and hsum8_dot_tree are the
   same whatever KEYS and NQ, so the bits are too. The leftover keys go to the AVX2 kernel
   (same bits). */
static inline __attribute__((always_inline)) void scores_rows_avx512(const float *const *q, const int NQ,
                                                                     const int KEYS, const float *k, int stride,
                                                                     const int32_t *rows, int n_keys, int hd,
                                                                     float scale, float *const *s)
{
    const int pf = n_keys > ARB_VEC_PREFETCH_MIN;
    int j = 0;
    if (hd % 8 == 0) {
        for (; j + KEYS <= n_keys; j += KEYS) {
            const float *kr[16];
            arb_vec_key_block(k, stride, rows, j, KEYS, n_keys, hd, pf, kr);
            __m512 acc[ARB_VEC_QROWS][8];
            for (int h = 0; h < NQ; h++)
                for (int c = 0; c < KEYS / 2; c++)
                    acc[h][c] = _mm512_setzero_ps();
            for (int d = 0; d < hd; d += 8) {
                __m512 qv[ARB_VEC_QROWS];
                for (int h = 0; h < NQ; h++)
                    qv[h] = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(q[h] + d))));
                for (int c = 0; c < KEYS / 2; c++) {
                    const __m512 kv = load_pair(kr[2 * c] + d, kr[2 * c + 1] + d);
                    for (int h = 0; h < NQ; h++)
                        acc[h][c] = _mm512_fmadd_ps(qv[h], kv, acc[h][c]);
                }
            }
            for (int h = 0; h < NQ; h++)
                for (int c = 0; c < KEYS / 2; c += 4) { /* 8 keys' dot products per tree */
                    const __m256 dots = hsum8_dot_tree(acc[h][c], acc[h][c + 1], acc[h][c + 2], acc[h][c + 3]);
                    _mm256_storeu_ps(s[h] + j + 2 * c, _mm256_mul_ps(dots, _mm256_set1_ps(scale)));
                }
        }
    }
    if (j < n_keys) {
        float *rest[ARB_VEC_QROWS];
        for (int h = 0; h < NQ; h++)
            rest[h] = s[h] + j;
        arb_vec_scores_avx2(q, NQ, k, stride, rows + j, n_keys - j, hd, scale, rest);
    }
}

static void scores_avx512(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                          int n_keys, int hd, float scale, float *const *s)
{
    _Static_assert(ARB_VEC_HEADS == 3 && ARB_VEC_QROWS == 6,
                   "the cases below and the register budget are written for 3 and 6 rows");
    switch (nh) {
    case 6: scores_rows_avx512(q, 6, 8, k, stride, rows, n_keys, hd, scale, s); break;
    case 5: scores_rows_avx512(q, 5, 8, k, stride, rows, n_keys, hd, scale, s); break;
    case 4: scores_rows_avx512(q, 4, 8, k, stride, rows, n_keys, hd, scale, s); break;
    case 3: scores_rows_avx512(q, 3, 16, k, stride, rows, n_keys, hd, scale, s); break;
    case 2: scores_rows_avx512(q, 2, 16, k, stride, rows, n_keys, hd, scale, s); break;
    default: scores_rows_avx512(q, 1, 16, k, stride, rows, n_keys, hd, scale, s); break;
    }
}

static inline __m512 casti2f_avx512(__m512i x) { return _mm512_castsi512_ps(x); }
static inline __m512 select_ge_avx512(__m512 x, __m512 a)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), a, x);
}

#define VEC_T __m512
#define VEC_W 16
#define VEC_REGS 32
#define VEC_PFX _mm512_
#define VEC_SFX _avx512
#define VEC_EXP_TAIL arb_vec_avx2.exp
#define VEC_SWIGLU_TAIL arb_vec_avx2.swiglu
#define VEC_GEGLU_TAIL arb_vec_avx2.geglu
#include "vec_simd_body.h"

const vec_impl arb_vec_avx512 = {
    .name = "avx512",
    .scores = scores_avx512,
    .sumsq = arb_vec_sumsq_avx2,
    .wsum = wsum_avx512,
    .exp = exp_avx512,
    .max = arb_vec_max_avx2,
    .sum = arb_vec_sum_avx2,
    .swiglu = swiglu_avx512,
    .geglu = geglu_avx512,
};
ARB_ISA_SECTION_END
#else
const vec_impl arb_vec_avx512 = {.name = "avx512"}; /* no kernels: never selected */
#endif
