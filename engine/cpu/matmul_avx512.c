/* matmul_avx512.c — the AVX-512 (F, BW, VL) + VNNI kernel family.
 *
 * Block-interleaved dot products. A row is walked in chunks of 16 blocks (512
 * elements). The 16 blocks' codes are transposed in registers into 8 zmm "steps":
 * step j holds bytes 4j..4j+3 of block l in int32 lane l. The activation row has
 * the same interleaving (qsi, built once per token by the quantizer), so 8
 * vpdpbusd leave the exact integer dot product of block l in lane l — no
 * horizontal reduction. Then, per chunk and token, one convert, one scale
 * multiply (16 weight scales x 16 activation scales) and one FMA into 16 float
 * lanes (lane l accumulates blocks l, l+16, l+32, ... in order), then the Q4_1 min
 * term m * (dx * sum q) by a second FMA into the same lanes. Offsets are exact integer
 * corrections: Q4_0 codes n are used unsigned and 8 * sum(q) subtracted, Q8_0 codes
 * w are used as w ^ 0x80 = w + 128 and 128 * sum(q) subtracted.
 *
 * The float sequence for a (row, token) pair depends on n_in only; one pass over
 * the row's weights serves up to 16 tokens, each with its own accumulators and
 * the same instructions as when alone (the batch-invariance rule, matmul_int.h).
 */
#include "matmul_int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#define AI static inline __attribute__((always_inline))
#define NT_MAX 16

/* Fixed reduction of 16 lanes: halves, then (0+4, 1+5, 2+6, 3+7), pairs, the two. */
AI __m128 hsum16(__m512 v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_add_ss(s, _mm_movehdup_ps(s));
}

/* hsum16 of up to 16 accumulators at once, by the same pairing tree (lane i+8,
   then i+4, then i+2, then i+1; float addition is commutative, so operand order
   is free): bit-identical to hsum16 per token, in ~3 instead of ~8 instructions
   per token. Result k goes to y[k * ld]. Missing accumulators read as zero. */
AI void store_hsums(const __m512 *acc, const int NT, float *y, int ld)
{
    __m512 a[16], s1[8], s2[4];
    for (int k = 0; k < 16; k++)
        a[k] = k < NT ? acc[k] : _mm512_setzero_ps();
    for (int p = 0; p < 8; p++) /* [lo256 a | lo256 b] + [hi256 a | hi256 b] */
        s1[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int m = 0; m < 4; m++) /* 128-bit lane t of s2[m]: token 4m+t, (i + i+4) */
        s2[m] = _mm512_add_ps(_mm512_shuffle_f32x4(s1[2 * m], s1[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_f32x4(s1[2 * m], s1[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 u01 = _mm512_add_ps(_mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 u23 = _mm512_add_ps(_mm512_shuffle_ps(s2[2], s2[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_ps(s2[2], s2[3], _MM_SHUFFLE(3, 2, 3, 2)));
    /* element e of 128-bit lane t: token 4e + t */
    const __m512 res = _mm512_add_ps(_mm512_shuffle_ps(u01, u23, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_ps(u01, u23, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i tok = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __mmask16 live = _mm512_cmplt_epi32_mask(tok, _mm512_set1_epi32(NT)); /* by token, not position */
    _mm512_mask_i32scatter_ps(y, live, _mm512_mullo_epi32(tok, _mm512_set1_epi32(ld)), res, 4);
}

/* 4 zmm of [block i, 4+i, 8+i, 12+i] x 16 bytes -> T[j]: dword j of block l in lane l. */
AI void transpose4(__m512i z0, __m512i z1, __m512i z2, __m512i z3, __m512i T[4])
{
    const __m512i t0 = _mm512_unpacklo_epi32(z0, z1), t1 = _mm512_unpackhi_epi32(z0, z1);
    const __m512i t2 = _mm512_unpacklo_epi32(z2, z3), t3 = _mm512_unpackhi_epi32(z2, z3);
    T[0] = _mm512_unpacklo_epi64(t0, t2);
    T[1] = _mm512_unpackhi_epi64(t0, t2);
    T[2] = _mm512_unpacklo_epi64(t1, t3);
    T[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* Bytes [off, off+16) of the 16 blocks at p, p + bsz, ..., arranged for transpose4. */
AI void load16(const uint8_t *p, size_t bsz, int off, __m512i T[4])
{
#define LD(l) _mm_loadu_si128((const __m128i *)(p + (size_t)(l) * bsz + off))
    __m512i z[4]; /* written out: the lane index of inserti32x4 must be an immediate even at -O0 */
    for (int i = 0; i < 4; i++) {
        z[i] = _mm512_castsi128_si512(LD(i));
        z[i] = _mm512_inserti32x4(z[i], LD(4 + i), 1);
        z[i] = _mm512_inserti32x4(z[i], LD(8 + i), 2);
        z[i] = _mm512_inserti32x4(z[i], LD(12 + i), 3);
    }
#undef LD
    transpose4(z[0], z[1], z[2], z[3], T);
}

/* Two Q4 blocks' 16 packed bytes each -> 64 nibbles [lo0 hi0 lo1 hi1] (element order). */
AI __m512i unpack_pair(const uint8_t *qs0, const uint8_t *qs1, int has1)
{
    const __m128i a = _mm_loadu_si128((const __m128i *)qs0);
    const __m128i b = has1 ? _mm_loadu_si128((const __m128i *)qs1) : _mm_setzero_si128();
    const __m256i raw = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1), m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(raw, m), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m);
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); /* lo0 lo1 hi0 hi1 */
    return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

/* kind: 0 = Q4_1, 1 = Q4_0, 2 = Q8_0. Computes y for row r, tokens t0..t0+NT. */
AI void kern(const mm_job *j, int r, int t0, const int NT, const int kind)
{
    const size_t bsz = kind == 0 ? 20 : kind == 1 ? 18 : 34; /* block bytes */
    const int qoff = kind == 0 ? 4 : 2;                      /* codes offset in a block */
    const uint8_t *row = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes;
    const int nb = j->w->n_in / 32, nch = nb / 16; /* whole chunks; the rest in pairs */
    /* token k's activation row is a0 + k * st (one base, few live registers) */
    const uint8_t *a0 = j->act + (size_t)t0 * j->lay.stride;
    const size_t st = j->lay.stride;
    __m512 acc[NT_MAX]; /* one accumulator per token: scale terms and min terms alike */
    for (int k = 0; k < NT; k++)
        acc[k] = _mm512_setzero_ps();
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32((int)bsz));
    const __m512i nib = _mm512_set1_epi8(0x0F), lo16 = _mm512_set1_epi32(0xFFFF);
    for (int c = 0; c < nch; c++) {
        const uint8_t *p = row + (size_t)c * 16 * bsz;
        __m512i w[8], T[4];
        load16(p, bsz, qoff, T);
        if (kind == 2) {
            const __m512i flip = _mm512_set1_epi8((char)0x80);
            for (int q = 0; q < 4; q++)
                w[q] = _mm512_xor_si512(T[q], flip);
            load16(p, bsz, qoff + 16, T);
            for (int q = 0; q < 4; q++)
                w[4 + q] = _mm512_xor_si512(T[q], flip);
        } else {
            for (int q = 0; q < 4; q++) {
                w[q] = _mm512_and_si512(T[q], nib);
                w[4 + q] = _mm512_and_si512(_mm512_srli_epi32(T[q], 4), nib);
            }
        }
        /* scales: the first 4 bytes of each block are d (and m for Q4_1) */
        const __m512i g = _mm512_i32gather_epi32(idx, (const void *)p, 1);
        const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_and_si512(g, lo16)));
        const __m512 mw = kind == 0 ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(g, 16))) : dw;
        const size_t oq = j->lay.off_qsi + (size_t)c * 512, od = j->lay.off_d + (size_t)c * 64;
        const size_t of = j->lay.off_fsum + (size_t)c * 64, os = j->lay.off_isum + (size_t)c * 64;
        for (int k = 0; k < NT; k++) {
            const uint8_t *ak = a0 + (size_t)k * st, *x = ak + oq;
            /* 4 independent chains of 2: a single chain of 8 dependent vpdpbusd is
               latency-bound (the sum is integer, so the split changes nothing) */
            __m512i s4[4];
            for (int q = 0; q < 4; q++)
                s4[q] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[q], _mm512_loadu_si512((const void *)(x + 64 * q)));
            for (int q = 0; q < 4; q++)
                s4[q] = _mm512_dpbusd_epi32(s4[q], w[4 + q], _mm512_loadu_si512((const void *)(x + 256 + 64 * q)));
            __m512i s = _mm512_add_epi32(_mm512_add_epi32(s4[0], s4[1]), _mm512_add_epi32(s4[2], s4[3]));
            if (kind == 1)
                s = _mm512_sub_epi32(s, _mm512_slli_epi32(_mm512_loadu_si512((const void *)(ak + os)), 3));
            else if (kind == 2)
                s = _mm512_sub_epi32(s, _mm512_slli_epi32(_mm512_loadu_si512((const void *)(ak + os)), 7));
            const __m512 sc = _mm512_mul_ps(dw, _mm512_loadu_ps((const float *)(ak + od)));
            acc[k] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s), acc[k]);
            if (kind == 0)
                acc[k] = _mm512_fmadd_ps(mw, _mm512_loadu_ps((const float *)(ak + of)), acc[k]);
        }
    }
    /* The last nb % 16 blocks, two per zmm (lanes 0-7: block b, 8-15: block b+1),
       into the same accumulators. Signed codes use |w| and negate x where w < 0. */
    const __m512i bidx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    for (int b = 16 * nch; b < nb; b += 2) {
        const int has1 = b + 1 < nb;
        const uint8_t *p0 = row + (size_t)b * bsz, *p1 = p0 + bsz;
        __m512i wu;
        __mmask64 neg = 0;
        float d0 = _cvtsh_ss(*(const uint16_t *)p0), d1 = has1 ? _cvtsh_ss(*(const uint16_t *)p1) : 0.0f;
        __m512 mwz = _mm512_setzero_ps(); /* m0 in lane 0, m1 in lane 8 */
        if (kind == 0) {
            wu = unpack_pair(p0 + 4, p1 + 4, has1);
            const float m0 = _cvtsh_ss(*(const uint16_t *)(p0 + 2)), m1 = has1 ? _cvtsh_ss(*(const uint16_t *)(p1 + 2)) : 0.0f;
            mwz = _mm512_maskz_permutexvar_ps(0x0101, bidx, _mm512_castps128_ps512(_mm_setr_ps(m0, m1, 0, 0)));
        } else if (kind == 1) {
            const __m512i sw = _mm512_sub_epi8(unpack_pair(p0 + 2, p1 + 2, has1), _mm512_set1_epi8(8));
            neg = _mm512_movepi8_mask(sw);
            wu = _mm512_abs_epi8(sw);
        } else {
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(p0 + 2));
            const __m256i hi = has1 ? _mm256_loadu_si256((const __m256i *)(p1 + 2)) : _mm256_setzero_si256();
            const __m512i sw = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
            neg = _mm512_movepi8_mask(sw);
            wu = _mm512_abs_epi8(sw);
        }
        const __m512 dwv = _mm512_permutexvar_ps(bidx, _mm512_castps128_ps512(_mm_setr_ps(d0, d1, 0, 0)));
        for (int k = 0; k < NT; k++) {
            const uint8_t *ak = a0 + (size_t)k * st, *x = ak + 32 * (size_t)b;
            __m512i q = has1 ? _mm512_loadu_si512((const void *)x) : _mm512_maskz_loadu_epi8(0xFFFFFFFFull, x);
            if (kind != 0)
                q = _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q);
            const __m512i sq = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu, q);
            /* d and fsum are zero-padded to whole chunks: reading entry b+1 is safe */
            const __m512 dx = _mm512_permutexvar_ps(bidx, _mm512_castpd_ps(_mm512_castpd128_pd512(_mm_load_sd((const double *)(ak + j->lay.off_d + 4 * (size_t)b)))));
            acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, dx), _mm512_cvtepi32_ps(sq), acc[k]);
            if (kind == 0) {
                const __m512 fs = _mm512_permutexvar_ps(bidx, _mm512_castpd_ps(_mm512_castpd128_pd512(_mm_load_sd((const double *)(ak + j->lay.off_fsum + 4 * (size_t)b)))));
                acc[k] = _mm512_fmadd_ps(mwz, fs, acc[k]);
            }
        }
    }
    if (NT < 4) {
        for (int k = 0; k < NT; k++)
            j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(hsum16(acc[k]));
    } else {
        store_hsums(acc, NT, j->y + (size_t)t0 * j->w->n_out + r, j->w->n_out);
    }
}

/* Row blocks x token groups of 16, then 8, then one group of 1-7. */
#define ROWS_LOOP(KIND)                                                         \
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {                            \
        const int re = rb + MM_ROW_BLOCK < r1 ? rb + MM_ROW_BLOCK : r1;         \
        int t = 0;                                                              \
        for (; t + 16 <= j->n_tok; t += 16)                                     \
            for (int r = rb; r < re; r++)                                       \
                kern(j, r, t, 16, KIND);                                        \
        if (t + 8 <= j->n_tok) {                                                \
            for (int r = rb; r < re; r++)                                       \
                kern(j, r, t, 8, KIND);                                         \
            t += 8;                                                             \
        }                                                                       \
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
