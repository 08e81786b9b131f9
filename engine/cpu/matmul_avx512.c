/* matmul_avx512.c — the AVX-512 (F, BW, VL) + VNNI kernel family.
 *
 * Two 32-element blocks fill one zmm: vpdpbusd gives 16 int32 lanes (lanes 0-7
 * belong to the first block, 8-15 to the second), which are converted, scaled by
 * [dw0*dx0 x8 | dw1*dx1 x8] and accumulated into the token's 16 float lanes.
 * Signed weights (Q4_0 as n-8, Q8_0) use |w| as the unsigned operand and negate
 * the activation bytes where w < 0 (a masked subtract), so every integer block sum
 * is exact. An odd last block is processed as a pair whose second half is masked
 * to zero, so the lane layout depends on n_in only. One weight row meets up to 8
 * tokens per pass, each token with its own accumulators and the same instruction
 * sequence as when it is alone (the batch-invariance rule, matmul_int.h).
 */
#include "matmul_int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#define AI static inline __attribute__((always_inline))
#define NT_MAX 8

/* Fixed reduction of 16 lanes: halves, then the avx2 tree (0+4, 1+5, ...). */
AI float hsum16(__m512 v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Two Q4 blocks' 16 packed bytes each -> 64 nibbles: [lo0 hi0 lo1 hi1]. */
AI __m512i unpack_pair(const uint8_t *qs0, const uint8_t *qs1, int has1)
{
    const __m128i a = _mm_loadu_si128((const __m128i *)qs0);
    const __m128i b = has1 ? _mm_loadu_si128((const __m128i *)qs1) : _mm_setzero_si128();
    const __m256i raw = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1), m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(raw, m), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m);
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); /* lo0 lo1 hi0 hi1 */
    return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

/* [x0 x8 | x1 x8] */
AI __m512 pair_bcast(float x0, float x1)
{
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(x0)),
                                               _mm256_castps_pd(_mm256_set1_ps(x1)), 1));
}

typedef struct tok_ptrs { const int8_t *qs; const float *d8, *fs; } tok_ptrs;

/* kind: 0 = Q4_1, 1 = Q4_0, 2 = Q8_0 */
AI void kern(const mm_job *j, int r, int t0, const int NT, const int kind)
{
    const uint8_t *row = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes;
    const int nb = j->w->n_in / 32;
    tok_ptrs tp[NT_MAX];
    __m512 acc[NT_MAX];
    __m128 accm[NT_MAX];
    for (int k = 0; k < NT; k++) {
        tp[k] = (tok_ptrs){mm_qs(j, t0 + k), mm_d8(j, t0 + k), mm_fsum(j, t0 + k)};
        acc[k] = _mm512_setzero_ps();
        accm[k] = _mm_setzero_ps();
    }
    for (int b = 0; b < nb; b += 2) {
        const int has1 = b + 1 < nb;
        __m512i wu;           /* unsigned operand */
        __mmask64 neg = 0;    /* bytes where the weight is negative */
        __m512 dwv;
        __m128 mw2 = _mm_setzero_ps();
        if (kind == 0) {
            const arb_block_q4_1 *b0 = (const arb_block_q4_1 *)row + b, *b1 = b0 + 1;
            wu = unpack_pair(b0->qs, b1->qs, has1);
            const __m128 f = _mm_cvtph_ps(_mm_setr_epi32((int)(b0->d | (uint32_t)b0->m << 16),
                                                         has1 ? (int)(b1->d | (uint32_t)b1->m << 16) : 0, 0, 0));
            dwv = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                                        _mm512_castps128_ps512(f));
            mw2 = _mm_shuffle_ps(f, f, _MM_SHUFFLE(3, 3, 3, 1)); /* m0 m1 (upper lanes unused) */
            mw2 = _mm_blend_ps(mw2, _mm_setzero_ps(), 0xC);
        } else if (kind == 1) {
            const arb_block_q4_0 *b0 = (const arb_block_q4_0 *)row + b, *b1 = b0 + 1;
            const __m512i n = unpack_pair(b0->qs, b1->qs, has1);
            const __m512i s = _mm512_sub_epi8(n, _mm512_set1_epi8(8));
            neg = _mm512_movepi8_mask(s);
            wu = _mm512_abs_epi8(s);
            if (!has1) /* masked-off half: zero weights, not |0-8| */
                wu = _mm512_maskz_mov_epi8(0xFFFFFFFFull, wu);
            dwv = pair_bcast(_cvtsh_ss(b0->d), has1 ? _cvtsh_ss(b1->d) : 0.0f);
        } else {
            const arb_block_q8_0 *b0 = (const arb_block_q8_0 *)row + b, *b1 = b0 + 1;
            const __m256i lo = _mm256_loadu_si256((const __m256i *)b0->qs);
            const __m256i hi = has1 ? _mm256_loadu_si256((const __m256i *)b1->qs) : _mm256_setzero_si256();
            const __m512i s = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
            neg = _mm512_movepi8_mask(s);
            wu = _mm512_abs_epi8(s);
            dwv = pair_bcast(_cvtsh_ss(b0->d), has1 ? _cvtsh_ss(b1->d) : 0.0f);
        }
        for (int k = 0; k < NT; k++) {
            __m512i q;
            __m512 dx;
            if (has1) {
                q = _mm512_loadu_si512((const void *)(tp[k].qs + 32 * b));
                dx = _mm512_loadu_ps(tp[k].d8 + 8 * b);
            } else {
                q = _mm512_maskz_loadu_epi8(0xFFFFFFFFull, tp[k].qs + 32 * b);
                dx = _mm512_maskz_loadu_ps(0x00FF, tp[k].d8 + 8 * b);
            }
            if (kind != 0)
                q = _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q);
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu, q);
            acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, dx), _mm512_cvtepi32_ps(s), acc[k]);
            if (kind == 0) {
                const __m128 fs = has1 ? _mm_castpd_ps(_mm_load_sd((const double *)(tp[k].fs + b)))
                                       : _mm_load_ss(tp[k].fs + b);
                accm[k] = _mm_fmadd_ps(mw2, fs, accm[k]);
            }
        }
    }
    for (int k = 0; k < NT; k++) {
        __m128 v = _mm_set_ss(hsum16(acc[k]));
        if (kind == 0) /* + (m0-lane sum + m1-lane sum) */
            v = _mm_add_ss(v, _mm_add_ss(accm[k], _mm_movehdup_ps(accm[k])));
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(v);
    }
}

/* Row blocks x token groups of 8 (then one group of 1-7). */
#define ROWS_LOOP(KIND)                                                         \
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {                            \
        const int re = rb + MM_ROW_BLOCK < r1 ? rb + MM_ROW_BLOCK : r1;         \
        int t = 0;                                                              \
        for (; t + 8 <= j->n_tok; t += 8)                                       \
            for (int r = rb; r < re; r++)                                       \
                kern(j, r, t, 8, KIND);                                         \
        const int rest = j->n_tok - t;                                          \
        for (int r = rb; r < re; r++) {                                         \
            switch (rest) {                                                     \
            case 7: kern(j, r, t, 7, KIND); break;                              \
            case 6: kern(j, r, t, 6, KIND); break;                              \
            case 5: kern(j, r, t, 5, KIND); break;                              \
            case 4: kern(j, r, t, 4, KIND); break;                              \
            case 3: kern(j, r, t, 3, KIND); break;                              \
            case 2: kern(j, r, t, 2, KIND); break;                              \
            case 1: kern(j, r, t, 1, KIND); break;                              \
            default: break;                                                     \
            }                                                                   \
        }                                                                       \
    }

static void rows_q4_1(const mm_job *j, int r0, int r1) { ROWS_LOOP(0) }
static void rows_q4_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(1) }
static void rows_q8_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(2) }

/* F16/F32 and the K-quants fall back to the AVX2 kernels (a per-type choice). */
const mm_impl arb_mm_avx512 = {
    .name = "avx512vnni",
    .q4_0 = rows_q4_0, .q4_1 = rows_q4_1, .q8_0 = rows_q8_0,
};

#else
const mm_impl arb_mm_avx512 = {.name = "avx512vnni"}; /* not x86-64: never selected */
#endif
