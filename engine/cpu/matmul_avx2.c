/* matmul_avx2.c — the AVX2/FMA/F16C kernel family (the x86-64 baseline).
 *
 * Q4_0/Q4_1/Q8_0 (32-blocks): exact int32 block sums per (row, token) pair, float work
 * once per 8 pairs on 8 lanes; token groups of 2-16 as "token lanes" (lane = token, the
 * activations interleaved once per call), one token and very wide rows as "pair tiles".
 * Q4_K, Q6_K, F16/F32: one weight row against up to 4 tokens per pass, each token with
 * its own 8 float lanes. Either way every (row, token) pair sees
 * the same float operations whether it is computed alone or in any group — the
 * batch-invariance rule of matmul_int.h — and all float arithmetic is written as
 * intrinsics so the compiler cannot contract or reorder it per instance.
 * docs/kernels.md has the design and the measurements.
 */
#include <string.h>

#include "matmul_int.h"
#include "isa_section.h"

#if defined(__x86_64__) && defined(__GNUC__)
ARB_ISA_SECTION_BEGIN("avx2,fma,f16c")
#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

AI float f16(uint16_t h) { return _cvtsh_ss(h); }

/* Fixed reduction of 8 lanes: (0+4, 1+5, 2+6, 3+7), then pairs, then the two. */
AI float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 packed bytes -> 32 unsigned nibbles in element order (low nibbles are
   elements 0..15, high nibbles 16..31 in Q4_0/Q4_1). */
AI __m256i unpack_nib(const uint8_t *qs)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

AI __m256i dot_u8s8(__m256i u, __m256i s) /* 8 int32 lanes of sum u*s, no overflow for |u| <= 128 */
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* F16/F32 weights against f32 activations: 8 lanes, then a sequential tail. */
AI void kern_raw(const mm_job *j, int r, int t0, const int NT)
{
    const int n = j->w->n_in, is16 = j->w->type == ARB_TYPE_F16;
    const uint8_t *row = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes;
    __m256 acc[4];
    for (int k = 0; k < NT; k++)
        acc[k] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 wv = is16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * (size_t)i)))
                               : _mm256_loadu_ps((const float *)row + i);
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(j->x + (size_t)(t0 + k) * n + i), acc[k]);
    }
    for (int k = 0; k < NT; k++) {
        __m128 s = _mm_set_ss(hsum8(acc[k]));
        for (int e = i; e < n; e++) {
            const float wf = is16 ? f16(((const uint16_t *)row)[e]) : ((const float *)row)[e];
            s = _mm_fmadd_ss(_mm_set_ss(wf), _mm_load_ss(j->x + (size_t)(t0 + k) * n + e), s);
        }
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(s);
    }
}

/* Sum of the 8 int32 lanes (exact in any order). */
AI int32_t hsum8_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* The 8 six-bit scales and mins of a Q4_K block from its 12 packed bytes (ggml's
   get_scale_min_k4 for k = 0..7, mm_q4k_scale_min), all at once: bytes 0-7 of *sc the
   scales, of *mn the mins. Pure bit moves, so the same values. */
AI void q4k_scales_mins(const uint8_t *q, uint64_t *sc, uint64_t *mn)
{
    uint32_t u[3];
    memcpy(u, q, 12);
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    /* k < 4: scale q[k] & 63, min q[k+4] & 63; k >= 4: scale (q[k+4] & 15) | (q[k-4] >> 6) << 4,
       min (q[k+4] >> 4) | (q[k] >> 6) << 4 */
    const uint32_t s_lo = u[0] & m6, m_lo = u[1] & m6;
    const uint32_t s_hi = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
    const uint32_t m_hi = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
    *sc = (uint64_t)s_lo | (uint64_t)s_hi << 32;
    *mn = (uint64_t)m_lo | (uint64_t)m_hi << 32;
}

/* Q4_K x Q8_K. Per 256-block the exact int32 block sum isum = sum_s sc_s * (codes . q)_s
   (8 madd lanes, then their exact sum) and the exact min sum msum = sum_s m_s * (sum of q
   over sub-block s); the float sequence of a (row, token) pair is, from 0 and blocks in
   order,
       acc = fma(d * dx, (float)isum, acc)      accm = fma(dmin * dx, (float)msum, accm)
       y   = acc - accm
   — one rounding chain per pair, which the packed row-lane kernel (below) computes lane
   for lane, so a model gives the same bits with or without its packed copy. Per row
   and block the scales are decoded once for the token group (12 bytes, bit moves) and
   kept as the 8 madd multipliers; the min sum is one int32 multiply of 16 lanes (mins
   against the 16 group sums) and a lane sum. Q5_K (q5) is the same with a fifth bit on
   each code (bit s of qh[l] for element l of sub-block s). */
AI void kern_q4_k(const mm_job *j, int r, int t0, const int NT, const int q5)
{
    /* Q4_K (144 B) and Q5_K (176 B) share d, dmin and the scales; Q5_K's qh sits before qs */
    const size_t bsz = q5 ? 176 : 144, oqs = q5 ? 48 : 16;
    const uint8_t *rowp = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes;
    const int nb = j->w->n_in / 256;
    __m128 acc[4], accm[4];
    for (int k = 0; k < NT; k++)
        acc[k] = accm[k] = _mm_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int b = 0; b < nb; b++) {
        uint64_t sc8, mn8;
        const uint8_t *blk = rowp + (size_t)b * bsz;
        q4k_scales_mins(blk + 4, &sc8, &mn8);
        const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc8));
        __m256i scv[8];
        for (int s2 = 0; s2 < 8; s2++) /* scale of sub-block s2 in every int16 lane: its dword, then its half */
            scv[s2] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(s2 / 2)),
                                          _mm256_set1_epi16(s2 & 1 ? 0x0302 : 0x0100));
        /* mins per 16-element group: group g belongs to sub-block g / 2 */
        const __m256i mn32 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn8));
        const __m256i mg0 = _mm256_permutevar8x32_epi32(mn32, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
        const __m256i mg1 = _mm256_permutevar8x32_epi32(mn32, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
        uint16_t dh[2];
        memcpy(dh, blk, 4);
        const float d = f16(dh[0]), dmin = f16(dh[1]);
        __m256i wl[4], wh[4];
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + oqs + 32 * c));
            wl[c] = _mm256_and_si256(q, m4);
            wh[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (q5) { /* the fifth bits: bit 2c (low nibbles) and 2c + 1 (high) of qh, worth 16;
                         codes reach 31, a maddubs lane 2 x 31 x 127 = 7874 */
                const __m256i hb = _mm256_loadu_si256((const __m256i *)(blk + 16)), one = _mm256_set1_epi8(1);
                wl[c] = _mm256_or_si256(wl[c], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one), 4));
                wh[c] = _mm256_or_si256(wh[c], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one), 4));
            }
        }
        for (int k = 0; k < NT; k++) {
            const int8_t *x = mm_qs(j, t0 + k) + 256 * b;
            const int32_t *gs = mm_isum(j, t0 + k) + 16 * b;
            __m256i is = _mm256_setzero_si256();
            for (int c = 0; c < 4; c++) {
                const __m256i pl = _mm256_maddubs_epi16(wl[c], _mm256_loadu_si256((const __m256i *)(x + 64 * c)));
                const __m256i ph = _mm256_maddubs_epi16(wh[c], _mm256_loadu_si256((const __m256i *)(x + 64 * c + 32)));
                is = _mm256_add_epi32(is, _mm256_madd_epi16(pl, scv[2 * c]));
                is = _mm256_add_epi32(is, _mm256_madd_epi16(ph, scv[2 * c + 1]));
            }
            const int32_t ms = hsum8_epi32(
                _mm256_add_epi32(_mm256_mullo_epi32(mg0, _mm256_loadu_si256((const __m256i *)gs)),
                                 _mm256_mullo_epi32(mg1, _mm256_loadu_si256((const __m256i *)(gs + 8)))));
            const float dx = mm_d(j, t0 + k)[b];
            acc[k] = _mm_fmadd_ss(_mm_set_ss(d * dx), _mm_cvtsi32_ss(_mm_setzero_ps(), hsum8_epi32(is)), acc[k]);
            accm[k] = _mm_fmadd_ss(_mm_set_ss(dmin * dx), _mm_cvtsi32_ss(_mm_setzero_ps(), ms), accm[k]);
        }
    }
    for (int k = 0; k < NT; k++)
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(_mm_sub_ss(acc[k], accm[k]));
}

/* sum over q < n of madd(v[q], the int16 pair pairs[q] broadcast): a row-lane K-quant
   kernel's min sum (Q4_K, Q5_K) or correction (Q6_K), exact in int32. */
AI __m256i madd_pairs(const __m256i *v, const int32_t *pairs, const int n)
{
    __m256i acc = _mm256_madd_epi16(v[0], _mm256_set1_epi32(pairs[0]));
    for (int q = 1; q < n; q++)
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(v[q], _mm256_set1_epi32(pairs[q])));
    return acc;
}

/* Q4_K on the packed copy (matmul_pack.c): rows row0..row0+7 (one half of a 16-row
   group), tokens t0..t0+T-1. Lane l is row l. Per sub-block s, 8 steps of "the step's
   codes (a 32-byte load, low or high nibbles) maddubs the token's 4 activation codes
   broadcast", summed in int16 (exact: 8 x 2 x 15 x 127 = 30480), then one madd by the
   rows' scales of s (int16 pairs) into the int32 block sum; the min sum is 4 madds of
   the rows' min pairs against the token's 32-element sums (int16 pairs, s32 of the
   activation layout). Then the float sequence of kern_q4_k, lane for lane. Q5_K (q5):
   each step's codes get their fifth bit from the qh plane (bit s of a byte, worth 16),
   and with codes up to 31 the int16 sums take 4 steps (31496), so two madds per
   sub-block. */
#define MM_K_TG 4
AI void q4k_half(const mm_job *j, const uint8_t *grp, size_t gb, int nb, int row0, int t0, const int T,
                 const uint8_t *pf, const int q5)
{
    const size_t hb = q5 ? MM_Q5K_HALF : MM_Q4K_HALF, ho = (row0 & 8) ? hb : 0, st = j->lay.stride;
    const size_t od = j->lay.off_d, o32 = j->lay.off_s32;
    const uint8_t *a0 = j->act + (size_t)t0 * st;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[MM_K_TG], accm[MM_K_TG];
    for (int k = 0; k < T; k++)
        acc[k] = accm[k] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * gb + ho;
        if (pf) /* the same block of the next row group (this half's share of it) */
            for (size_t o = 0; o < hb; o += 64)
                _mm_prefetch((const char *)(pf + (size_t)b * gb + ho + o), _MM_HINT_T0);
        __m256i is[MM_K_TG];
        for (int k = 0; k < T; k++)
            is[k] = _mm256_setzero_si256();
        for (int s2 = 0; s2 < 8; s2++) {
            const uint8_t *cp = p + (size_t)(s2 / 2) * 256;
            __m256i w[8];
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) {
                const __m256i v = _mm256_load_si256((const __m256i *)(cp + 32 * q));
                w[q] = _mm256_and_si256(s2 & 1 ? _mm256_srli_epi16(v, 4) : v, m4);
                if (q5) { /* Q5_K: bit s2 of the step's qh bytes is 16 */
                    const __m256i h = _mm256_load_si256((const __m256i *)(p + 1184 + 32 * q));
                    w[q] = _mm256_or_si256(w[q], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, s2), _mm256_set1_epi8(1)), 4));
                }
            }
            const __m256i sc32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 1024 + 8 * s2)));
            const __m256i scv = _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16)); /* (sc, sc) per row lane */
#pragma GCC unroll 4
            for (int k = 0; k < T; k++) {
                const uint8_t *xk = a0 + (size_t)k * st + 256 * (size_t)b + 32 * (size_t)s2;
                if (q5) { /* codes up to 31: 4 steps per int16 sum (31496) */
                    __m256i a = _mm256_maddubs_epi16(w[0], _mm256_set1_epi32(*(const int32_t *)xk));
                    __m256i c = _mm256_maddubs_epi16(w[4], _mm256_set1_epi32(*(const int32_t *)(xk + 16)));
#pragma GCC unroll 3
                    for (int q = 1; q < 4; q++) {
                        a = _mm256_add_epi16(a, _mm256_maddubs_epi16(w[q], _mm256_set1_epi32(*(const int32_t *)(xk + 4 * q))));
                        c = _mm256_add_epi16(c, _mm256_maddubs_epi16(w[4 + q], _mm256_set1_epi32(*(const int32_t *)(xk + 16 + 4 * q))));
                    }
                    is[k] = _mm256_add_epi32(is[k], _mm256_add_epi32(_mm256_madd_epi16(a, scv), _mm256_madd_epi16(c, scv)));
                    continue;
                }
                __m256i a16 = _mm256_maddubs_epi16(w[0], _mm256_set1_epi32(*(const int32_t *)xk));
#pragma GCC unroll 7
                for (int q = 1; q < 8; q++)
                    a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(w[q], _mm256_set1_epi32(*(const int32_t *)(xk + 4 * q))));
                is[k] = _mm256_add_epi32(is[k], _mm256_madd_epi16(a16, scv));
            }
        }
        __m256i mn[4];
        for (int q = 0; q < 4; q++)
            mn[q] = _mm256_cvtepu8_epi16(_mm_load_si128((const __m128i *)(p + 1088 + 16 * q)));
        const __m256 dv = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p + 1152)));
        const __m256 dmv = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p + 1168)));
#pragma GCC unroll 4
        for (int k = 0; k < T; k++) {
            const uint8_t *ak = a0 + (size_t)k * st;
            const __m256i ms = madd_pairs(mn, (const int32_t *)(ak + o32) + 4 * (size_t)b, 4); /* s32 pairs */
            const __m256 dx = _mm256_set1_ps(*(const float *)(ak + od + 4 * (size_t)b));
            acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(dv, dx), _mm256_cvtepi32_ps(is[k]), acc[k]);
            accm[k] = _mm256_fmadd_ps(_mm256_mul_ps(dmv, dx), _mm256_cvtepi32_ps(ms), accm[k]);
        }
    }
    const size_t n_out = (size_t)j->w->n_out;
    const int live = (int)n_out - row0 < 8 ? (int)n_out - row0 : 8;
    for (int k = 0; k < T; k++) {
        float l[8];
        _mm256_storeu_ps(l, _mm256_sub_ps(acc[k], accm[k]));
        memcpy(j->y + (size_t)(t0 + k) * n_out + row0, l, sizeof(float) * (size_t)live);
    }
}

/* Q6_K x Q8_K: 6-bit codes u (value u - 32), 16 int8 scales per 256-block. The exact
   int32 block sum is isum = sum_g sc_g * (u . q)_g - 32 * sum_g sc_g * (sum q)_g (the
   correction's 16 products are one int32 multiply of two vectors and a lane sum), and the
   float sequence of a (row, token) pair is acc = fma(d * dx, (float)isum, acc) from 0,
   blocks in order — the packed row-lane kernel's, lane for lane. */
AI void kern_q6_k(const mm_job *j, int r, int t0, const int NT)
{
    const arb_block_q6_k *row = (const arb_block_q6_k *)((const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes);
    const int nb = j->w->n_in / 256;
    __m128 acc[4];
    for (int k = 0; k < NT; k++)
        acc[k] = _mm_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    for (int b = 0; b < nb; b++) {
        const float d = f16(row[b].d);
        __m256i u[8], scv[8]; /* part i of half h at 4h+i: 32 codes, and their 2 scales */
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)row[b].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8); /* the 16 scales as int16 */
        const __m256i sg0 = _mm256_cvtepi8_epi32(sc8), sg1 = _mm256_cvtepi8_epi32(_mm_srli_si128(sc8, 8));
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = row[b].ql + 64 * h, *qh = row[b].qh + 32 * h;
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
            u[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
            u[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
            u[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
            u[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
            for (int i = 0; i < 4; i++) { /* scales g = 8h+2i (lanes 0-7) and g+1 (lanes 8-15): dword g/2 */
                const __m256i q = _mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(4 * h + i));
                scv[4 * h + i] = _mm256_permute2x128_si256(_mm256_shuffle_epi8(q, _mm256_set1_epi16(0x0100)),
                                                           _mm256_shuffle_epi8(q, _mm256_set1_epi16(0x0302)), 0x20);
            }
        }
        for (int k = 0; k < NT; k++) {
            const int8_t *x = mm_qs(j, t0 + k) + 256 * b;
            const int32_t *gs = mm_isum(j, t0 + k) + 16 * b;
            __m256i is = _mm256_setzero_si256();
            for (int h = 0; h < 2; h++)
                for (int i = 0; i < 4; i++) {
                    const __m256i p = _mm256_maddubs_epi16(u[4 * h + i], _mm256_loadu_si256((const __m256i *)(x + 128 * h + 32 * i)));
                    is = _mm256_add_epi32(is, _mm256_madd_epi16(p, scv[4 * h + i]));
                }
            const int32_t corr = hsum8_epi32(
                _mm256_add_epi32(_mm256_mullo_epi32(sg0, _mm256_loadu_si256((const __m256i *)gs)),
                                 _mm256_mullo_epi32(sg1, _mm256_loadu_si256((const __m256i *)(gs + 8)))));
            const float dx = mm_d(j, t0 + k)[b];
            acc[k] = _mm_fmadd_ss(_mm_set_ss(d * dx), _mm_cvtsi32_ss(_mm_setzero_ps(), hsum8_epi32(is) - 32 * corr), acc[k]);
        }
    }
    for (int k = 0; k < NT; k++)
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(acc[k]);
}

/* Q6_K on the packed copy (matmul_pack.c): rows row0..row0+7, tokens t0..t0+T-1, lane
   l = row l. Per 32 elements (part k of half n) the 8 steps' codes are rebuilt from the
   two planes (low nibble | top 2 bits << 4, 0..63); per 16 elements (one scale) and
   token, 4 maddubs against the broadcast activation codes, summed two by two in int16
   (exact: 2 steps x 2 x 63 x 127 = 32004), each pair of steps madd'ed by the rows' scale
   into the int32 block sum; the correction is 8 madds of the rows' scale pairs against
   the token's 16-element sums (s16 pairs). Then kern_q6_k's float sequence per lane. */
AI void q6k_half(const mm_job *j, const uint8_t *grp, size_t gb, int nb, int row0, int t0, const int T,
                 const uint8_t *pf)
{
    const size_t ho = (row0 & 8) ? MM_Q6K_HALF : 0, st = j->lay.stride;
    const size_t od = j->lay.off_d, o16 = j->lay.off_s16;
    const uint8_t *a0 = j->act + (size_t)t0 * st;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    /* per dword (a row): its low int16 in both halves, or its high one (vpshufb indexes
       within a 128-bit lane, so each dword names its own bytes) */
    const __m256i lo16 = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                          0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i hi16 = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
                                          2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
    __m256 acc[MM_K_TG];
    for (int k = 0; k < T; k++)
        acc[k] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * gb + ho;
        if (pf)
            for (size_t o = 0; o < MM_Q6K_HALF; o += 64)
                _mm_prefetch((const char *)(pf + (size_t)b * gb + ho + o), _MM_HINT_T0);
        __m256i is[MM_K_TG];
        for (int k = 0; k < T; k++)
            is[k] = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++)
            for (int part = 0; part < 4; part++) {
                __m256i w[8];
#pragma GCC unroll 8
                for (int q = 0; q < 8; q++) {
                    const __m256i l4 = _mm256_load_si256((const __m256i *)(p + (16 * n + 8 * (part & 1) + q) * 32));
                    const __m256i h2 = _mm256_load_si256((const __m256i *)(p + 1024 + (8 * n + q) * 32));
                    const __m256i lo = _mm256_and_si256(part >= 2 ? _mm256_srli_epi16(l4, 4) : l4, m4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(h2, 2 * part), m2);
                    w[q] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                }
                /* the rows' scale pair (8n + 2 part, + 1), then each scale in both int16 halves */
                const __m256i sp = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)(p + 1536 + 16 * (4 * n + part))));
                const __m256i sa = _mm256_shuffle_epi8(sp, lo16), sb = _mm256_shuffle_epi8(sp, hi16);
#pragma GCC unroll 4
                for (int k = 0; k < T; k++) {
                    const int32_t *x = (const int32_t *)(a0 + (size_t)k * st + 256 * (size_t)b + 128 * (size_t)n + 32 * (size_t)part);
                    const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], _mm256_set1_epi32(x[0])),
                                                        _mm256_maddubs_epi16(w[1], _mm256_set1_epi32(x[1])));
                    const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], _mm256_set1_epi32(x[2])),
                                                        _mm256_maddubs_epi16(w[3], _mm256_set1_epi32(x[3])));
                    const __m256i p2 = _mm256_add_epi16(_mm256_maddubs_epi16(w[4], _mm256_set1_epi32(x[4])),
                                                        _mm256_maddubs_epi16(w[5], _mm256_set1_epi32(x[5])));
                    const __m256i p3 = _mm256_add_epi16(_mm256_maddubs_epi16(w[6], _mm256_set1_epi32(x[6])),
                                                        _mm256_maddubs_epi16(w[7], _mm256_set1_epi32(x[7])));
                    is[k] = _mm256_add_epi32(is[k], _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(p0, sa), _mm256_madd_epi16(p1, sa)),
                                                                     _mm256_add_epi32(_mm256_madd_epi16(p2, sb), _mm256_madd_epi16(p3, sb))));
                }
            }
        __m256i scp[8];
        for (int q = 0; q < 8; q++)
            scp[q] = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)(p + 1536 + 16 * q)));
        const __m256 dv = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p + 1664)));
#pragma GCC unroll 4
        for (int k = 0; k < T; k++) {
            const uint8_t *ak = a0 + (size_t)k * st;
            const __m256i corr = madd_pairs(scp, (const int32_t *)(ak + o16) + 8 * (size_t)b, 8); /* s16 pairs */
            const __m256i isum = _mm256_sub_epi32(is[k], _mm256_slli_epi32(corr, 5));
            const __m256 dx = _mm256_set1_ps(*(const float *)(ak + od + 4 * (size_t)b));
            acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(dv, dx), _mm256_cvtepi32_ps(isum), acc[k]);
        }
    }
    const size_t n_out = (size_t)j->w->n_out;
    const int live = (int)n_out - row0 < 8 ? (int)n_out - row0 : 8;
    for (int k = 0; k < T; k++) {
        float l[8];
        _mm256_storeu_ps(l, acc[k]);
        memcpy(j->y + (size_t)(t0 + k) * n_out + row0, l, sizeof(float) * (size_t)live);
    }
}

/* BODY once per 8-row half of the packed copy's 16-row groups that cover rows r0..r1-1 (r0 a
   multiple of 16), with grp (the group's blocks), gb, g.nb, rb (the group's first row), row0
   (the half's) and nx (the next group's blocks to prefetch; NULL after the last group). */
#define FOR_PACKED_HALVES(j, r0, r1, ...)                                                            \
    do {                                                                                             \
        const mm_packed_geom g = mm_packed_geom_of(j->w);                                            \
        const size_t gb = mm_packed_group_bytes(&g);                                                 \
        for (int rb = (r0); rb < (r1); rb += 16) {                                                   \
            const uint8_t *grp = (const uint8_t *)j->w->packed + (size_t)(rb / 16) * g.nb * gb;      \
            const uint8_t *nx = rb + 16 < j->w->n_out ? grp + (size_t)g.nb * gb : NULL;              \
            for (int row0 = rb; row0 < (r1) && row0 < rb + 16; row0 += 8)                            \
                __VA_ARGS__                                                                          \
        }                                                                                            \
    } while (0)

/* Packed K-quant rows r0..r1-1: per 8-row half, token groups of MM_K_TG, then the rest; the
   next group is prefetched during each half's first token group. kind: 0 = Q4_K, 1 = Q6_K,
   2 = Q5_K. */
#define KCALL(t, nt)                                                                                 \
    ((kind == 1 ? q6k_half(j, grp, gb, g.nb, row0, t, nt, pf) : q4k_half(j, grp, gb, g.nb, row0, t, nt, pf, kind == 2)), \
     pf = NULL)
AI void kquant_packed_rows(const mm_job *j, int r0, int r1, const int kind)
{
    _Static_assert(MM_K_TG == 4, "MM_TOKENS_BY_4");
    FOR_PACKED_HALVES(j, r0, r1, {
        const uint8_t *pf = nx;
        MM_TOKENS_BY_4(j->n_tok, KCALL);
    });
}
#undef KCALL

/* Blocks of 32 (Q4_0/Q4_1/Q8_0 weights) in three passes, so that the divisions run
   8 blocks per instruction instead of two scalar divisions per block: block maxima
   into d[], then d = amax / 127 and 1/d vector-wise (1/d parked in fsum[]), then the
   codes and their sums, then fsum = d * sum. Every value is the scalar quantizer's:
   max is exact, the divisions and the product are the same IEEE operations, and
   integer sums do not depend on their order. */
__attribute__((target("avx2,fma,f16c"))) static void quant_b32_avx2(const float *x, int n_in, const mm_layout *l,
                                                            uint8_t *dst)
{
    int8_t *qs = (int8_t *)dst;
    float *d = (float *)(dst + l->off_d), *fsum = (float *)(dst + l->off_fsum);
    int32_t *isum = (int32_t *)(dst + l->off_isum);
    const int nb = n_in / 32;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int b = 0; b < nb; b++) {
        const float *xb = x + (size_t)b * 32;
        __m256 mx = _mm256_andnot_ps(sign, _mm256_loadu_ps(xb));
        for (int i = 8; i < 32; i += 8)
            mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        d[b] = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    }
    int b = 0;
    for (; b + 8 <= nb; b += 8) {
        const __m256 db = _mm256_div_ps(_mm256_loadu_ps(d + b), _mm256_set1_ps(127.0f));
        const __m256 nz = _mm256_cmp_ps(db, _mm256_setzero_ps(), _CMP_NEQ_OQ);
        _mm256_storeu_ps(d + b, db);
        _mm256_storeu_ps(fsum + b, _mm256_and_ps(nz, _mm256_div_ps(_mm256_set1_ps(1.0f), db)));
    }
    for (; b < nb; b++) {
        d[b] = d[b] / 127.0f;
        fsum[b] = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    }
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (b = 0; b < nb; b++) {
        const float *xb = x + (size_t)b * 32;
        const __m256 vid = _mm256_set1_ps(fsum[b]);
        __m256i v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + 8 * k), vid));
            v[k] = _mm256_min_epi32(_mm256_max_epi32(v[k], lo), hi);
        }
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256((__m256i *)(qs + (size_t)b * 32), _mm256_permutevar8x32_epi32(p, perm));
        isum[b] = hsum8_epi32(_mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3])));
    }
    for (b = 0; b + 8 <= nb; b += 8)
        _mm256_storeu_ps(fsum + b, _mm256_mul_ps(_mm256_loadu_ps(d + b),
                                                 _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(isum + b)))));
    for (; b < nb; b++)
        fsum[b] = d[b] * (float)isum[b];
}

/* Activation quantisation, bit-identical to arb_mm_quant_scalar (matmul.c): the
   block max is exact, d = amax / 127 and 1/d are the same scalar operations, and
   cvtps rounds x * (1/d) half-to-even as the scalar magic-number rounding does. */
void arb_mm_axpy_avx2(float *y, const float *c, float s, int r0, int r1)
{
    const __m256 vs = _mm256_set1_ps(s);
    int r = r0;
    for (; r + 8 <= r1; r += 8) /* mul then add: the scalar loop's two roundings */
        _mm256_storeu_ps(y + r, _mm256_add_ps(_mm256_loadu_ps(y + r), _mm256_mul_ps(_mm256_loadu_ps(c + r), vs)));
    for (; r < r1; r++) {
        const float p = c[r] * s;
        y[r] += p;
    }
}

void arb_mm_quant_avx2(const float *x, int n_in, const mm_layout *l, uint8_t *dst)
{
    if (l->B == 32 && l->G == 32) {
        quant_b32_avx2(x, n_in, l, dst);
        return;
    }
    int8_t *qs = (int8_t *)dst;
    float *d = (float *)(dst + l->off_d);
    int32_t *isum = (int32_t *)(dst + l->off_isum);
    float *fsum = (float *)(dst + l->off_fsum);
    const int B = l->B, G = l->G;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int b = 0; b < n_in / B; b++) {
        const float *xb = x + (size_t)b * B;
        __m256 mx = _mm256_setzero_ps();
        for (int i = 0; i < B; i += 8)
            mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float db = amax / 127.0f;
        const float id = db != 0.0f ? 1.0f / db : 0.0f;
        const __m256 vid = _mm256_set1_ps(id);
        int sb = 0;
        for (int i = 0; i < B; i += 32) {
            __m256i v[4];
            for (int k = 0; k < 4; k++) {
                v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 8 * k), vid));
                v[k] = _mm256_min_epi32(_mm256_max_epi32(v[k], lo), hi);
            }
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
            _mm256_storeu_si256((__m256i *)(qs + (size_t)b * B + i), _mm256_permutevar8x32_epi32(p, perm));
            if (G == 32) {
                const int s = hsum8_epi32(_mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3])));
                isum[(b * B + i) / 32] = s;
                sb += s;
            } else { /* G == 16: elements i..i+15 are v[0], v[1]; i+16..i+31 are v[2], v[3] */
                const int s0 = hsum8_epi32(_mm256_add_epi32(v[0], v[1]));
                const int s1 = hsum8_epi32(_mm256_add_epi32(v[2], v[3]));
                isum[(b * B + i) / 16] = s0;
                isum[(b * B + i) / 16 + 1] = s1;
                sb += s0 + s1;
            }
        }
        d[b] = db;
        if (B == 32)
            fsum[b] = db * (float)sb;
    }
}

/* ------------------------------------------------------------ 32-blocks: tiles
 * Q4_0, Q4_1 and Q8_0 against Q8 activations. A tile is R rows x T tokens (R = 8/T
 * for T <= 4, R = 1 for T >= 5), at most 8 (row, token) pairs, one per lane of a
 * float vector. Per block, each pair's exact int32 block sum comes from maddubs +
 * madd (8 lanes), the 8 pairs' lanes are summed by a fixed transposing hadd tree
 * into one vector (integer sums are exact, so the tree's order costs no bits), and
 * the float work is done once for the whole tile on 8 lanes:
 *     acc  = fma(dw * dx, (float)isum, acc)      per pair, from 0, blocks in order
 *     accm = fma(m, dx * sum q, accm)            Q4_1 only
 *     y    = acc + accm                          (Q4_1), y = acc otherwise
 * Lanes are independent IEEE operations, so this is the float sequence of every
 * (row, token) pair whatever the tile shape, n_tok or token group: the batch-
 * invariance rule of matmul_int.h. The earlier kernel spent 6 float operations per
 * pair and block (8 lanes each); here they are shared by 8 pairs, and one pass
 * serves 8 tokens instead of 4.
 * The tile's per-lane scales come from small tables built per row block (dw, m of
 * the 16 rows, converted from fp16 once) and per token group (dx, dx * sum q), in
 * chunks of MM_TILE_NBC blocks so the tables stay small for any n_in; accumulators
 * cross a chunk boundary through memory, which is exact. */
#define MM_TILE_NBC 128
/* Q8_0 tiles (one token, the Q8_0 head at decode) prefetch the same block of the
   row MM_Q8_PF_BLOCKS row blocks below, one line per (row, block) as they go: 1 row
   block ahead in one burst (the Q4 rule) measured 1.25 ms for the 49152-row head,
   spread 1 ahead 1.04, 2 ahead 0.70, 3 ahead 0.73, 4 ahead 0.77 (the old row-by-row
   kernel 0.90; all into L1, on a Zen 5). Into L2 since (matmul_int.h): 3.9 -> 1.9 ms on
   a Zen 4 with a third of that machine's bandwidth. */
#define MM_Q8_PF_BLOCKS 2

typedef struct tile_tabs {
    float dw[MM_TILE_NBC][16] __attribute__((aligned(32))); /* rows' d, block b (rows past the end: 0) */
    float mw[MM_TILE_NBC][16] __attribute__((aligned(32))); /* rows' m (Q4_1) */
    float dx[MM_TILE_NBC][8] __attribute__((aligned(32)));  /* tokens' d */
    float fs[MM_TILE_NBC][8] __attribute__((aligned(32)));  /* tokens' d * sum q (Q4_1) */
} tile_tabs;

/* Sum of each of 8 int32x8 vectors, in lane order: a fixed tree of hadds. */
AI __m256i hsum8x8_epi32(const __m256i s[8])
{
    const __m256i h0 = _mm256_hadd_epi32(s[0], s[1]), h1 = _mm256_hadd_epi32(s[2], s[3]);
    const __m256i h2 = _mm256_hadd_epi32(s[4], s[5]), h3 = _mm256_hadd_epi32(s[6], s[7]);
    const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

/* kind: 0 = Q4_1, 1 = Q4_0, 2 = Q8_0. The tile of rows rb+ro.. (R rows, clamped to
   the nr real ones; extra lanes compute a copy and are not stored) and tokens
   t0..t0+T-1, over blocks c0..c0+nc-1; acc/accm carry the lanes across chunks. */
AI void tile_b32(const mm_job *j, const tile_tabs *tb, int rb, int ro, int nr, int t0, int c0, int nc,
                 const int T, const int kind, __m256 *accp, __m256 *accmp)
{
    const int R = T >= 5 ? 1 : 8 / T, bsz = kind == 0 ? 20 : kind == 1 ? 18 : 34;
    const uint8_t *wr[8], *pf[8];
    const int8_t *xq[8];
    const int pfd = MM_Q8_PF_BLOCKS * MM_ROW_BLOCK; /* Q8_0: prefetch distance in rows */
    for (int i = 0; i < R; i++) {
        const int r = rb + (ro + i < nr ? ro + i : nr - 1);
        wr[i] = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes + (size_t)c0 * bsz;
        /* the last rows prefetch themselves again rather than point past the matrix */
        pf[i] = wr[i] + (r + pfd < j->w->n_out ? (size_t)pfd * j->w->row_bytes : 0);
    }
    for (int k = 0; k < T; k++)
        xq[k] = mm_qs(j, t0 + k) + 32 * (size_t)c0;
    /* lane p holds row ro + p / T (table column) and token p % T */
    int ri[8], ti[8];
    for (int p = 0; p < 8; p++) {
        ri[p] = (ro & 7) + (p / T < R ? p / T : R - 1);
        ti[p] = p % T;
    }
    const __m256i rowi = _mm256_loadu_si256((const __m256i *)ri), toki = _mm256_loadu_si256((const __m256i *)ti);
    const int rcol = ro & ~7; /* the tile's rows lie in one aligned 8-column half of the tables */
    __m256 acc = *accp, accm = *accmp;
    for (int b = 0; b < nc; b++) {
        __m256i s[8];
#pragma GCC unroll 8
        for (int i = 0; i < R; i++) {
            const uint8_t *blk = wr[i] + (size_t)b * bsz;
            __m256i wv, wabs = _mm256_setzero_si256();
            if (kind == 2) {
                _mm_prefetch((const char *)(pf[i] + (size_t)b * bsz), _MM_HINT_T1);
                wv = _mm256_loadu_si256((const __m256i *)(blk + 2));
                wabs = _mm256_sign_epi8(wv, wv);
            } else if (kind == 1) {
                wv = _mm256_sub_epi8(unpack_nib(blk + 2), _mm256_set1_epi8(8));
                wabs = _mm256_sign_epi8(wv, wv);
            } else {
                wv = unpack_nib(blk + 4);
            }
#pragma GCC unroll 8
            for (int k = 0; k < T; k++) {
                const __m256i q = _mm256_loadu_si256((const __m256i *)(xq[k] + 32 * (size_t)b));
                s[i * T + k] = kind == 0 ? dot_u8s8(wv, q) : dot_u8s8(wabs, _mm256_sign_epi8(q, wv));
            }
        }
#pragma GCC unroll 8
        for (int p = R * T; p < 8; p++)
            s[p] = _mm256_setzero_si256();
        const __m256 isum = _mm256_cvtepi32_ps(hsum8x8_epi32(s));
        __m256 dwv, dxv;
        if (R == 1)
            dwv = _mm256_broadcast_ss(&tb->dw[b][ro]);
        else if (R == 8)
            dwv = _mm256_load_ps(&tb->dw[b][rcol]);
        else
            dwv = _mm256_permutevar8x32_ps(_mm256_load_ps(&tb->dw[b][rcol]), rowi);
        if (T == 1)
            dxv = _mm256_broadcast_ss(&tb->dx[b][0]);
        else if (T == 8)
            dxv = _mm256_load_ps(tb->dx[b]);
        else
            dxv = _mm256_permutevar8x32_ps(_mm256_load_ps(tb->dx[b]), toki);
        acc = _mm256_fmadd_ps(_mm256_mul_ps(dwv, dxv), isum, acc);
        if (kind == 0) {
            __m256 mwv, fsv;
            if (R == 1)
                mwv = _mm256_broadcast_ss(&tb->mw[b][ro]);
            else if (R == 8)
                mwv = _mm256_load_ps(&tb->mw[b][rcol]);
            else
                mwv = _mm256_permutevar8x32_ps(_mm256_load_ps(&tb->mw[b][rcol]), rowi);
            if (T == 1)
                fsv = _mm256_broadcast_ss(&tb->fs[b][0]);
            else if (T == 8)
                fsv = _mm256_load_ps(tb->fs[b]);
            else
                fsv = _mm256_permutevar8x32_ps(_mm256_load_ps(tb->fs[b]), toki);
            accm = _mm256_fmadd_ps(mwv, fsv, accm);
        }
    }
    *accp = acc;
    *accmp = accm;
}

/* Store a tile's finished lanes: y[token][row] for the real rows. */
AI void tile_store(const mm_job *j, int rb, int ro, int nr, int t0, const int T, __m256 v)
{
    const int R = T >= 5 ? 1 : 8 / T;
    float l[8];
    _mm256_storeu_ps(l, v);
    for (int p = 0; p < R * T; p++)
        if (ro + p / T < nr)
            j->y[(size_t)(t0 + p % T) * j->w->n_out + rb + ro + p / T] = l[p];
}

/* The row block's weight scales as f32 tables, 8 rows per gather: block b's first
   dword in each row holds d (and m for Q4_1) as fp16. Rows past nr repeat the last
   real row (their lanes are never stored). A hardware gather measured far slower here.*/
AI void weight_scales(const mm_job *j, tile_tabs *tb, int rb, int nr, int c0, int nc, const int kind)
{
    const int bsz = kind == 0 ? 20 : kind == 1 ? 18 : 34;
    /* bytes 0-1 of each dword (d) to quad 0 of each 128-bit lane, bytes 2-3 (m) to quad 1 */
    const __m256i ctrl = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                          0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (int h = 0; h < 2; h++) {
        const uint8_t *rp[8]; /* the 8 rows at block c0 */
        for (int i = 0; i < 8; i++)
            rp[i] = (const uint8_t *)j->w->data + (size_t)(rb + (8 * h + i < nr ? 8 * h + i : nr - 1)) * j->w->row_bytes +
                    (size_t)c0 * bsz;
        for (int b = 0; b < nc; b++) {
            const size_t o = (size_t)b * bsz;
            int32_t e[8];
            for (int i = 0; i < 8; i++)
                memcpy(&e[i], rp[i] + o, 4);
            const __m256i g = _mm256_setr_epi32(e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]);
            const __m256i v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(g, ctrl), _MM_SHUFFLE(3, 1, 2, 0));
            _mm256_store_ps(&tb->dw[b][8 * h], _mm256_cvtph_ps(_mm256_castsi256_si128(v)));
            if (kind == 0)
                _mm256_store_ps(&tb->mw[b][8 * h], _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1)));
        }
        if (nr <= 8)
            break; /* the tiles of rows 8-15 do not exist */
    }
    /* The next row block's bytes (rows are contiguous), one prefetch per cache line:
       the 8 row streams a 1-token tile reads at once defeat the hardware prefetcher
       (the 49152-row Q8_0 head ran 2.3x slower without this), and this pass is the
       row block's first touch. Q8_0 prefetches per (row, block) in tile_b32 instead
       (MM_Q8_PF_BLOCKS: faster for the head than this burst). */
    if (c0 == 0 && rb + 2 * MM_ROW_BLOCK <= j->w->n_out && kind != 2) {
        const char *nx = (const char *)j->w->data + (size_t)(rb + MM_ROW_BLOCK) * j->w->row_bytes;
        const size_t len = (size_t)MM_ROW_BLOCK * j->w->row_bytes;
        for (size_t o = 0; o < len; o += 64)
            _mm_prefetch(nx + o, _MM_HINT_T0);
    }
}

/* All tiles of one row block (rb, nr rows) and token group (t0, T), every chunk. */
AI void tiles_b32(const mm_job *j, tile_tabs *tb, int rb, int nr, int t0, const int T, const int kind, int first)
{
    const int R = T >= 5 ? 1 : 8 / T, nb = j->w->n_in / 32;
    const int ntile = (nr + R - 1) / R;
    __m256 acc[16], accm[16];
    for (int i = 0; i < ntile; i++)
        acc[i] = accm[i] = _mm256_setzero_ps();
    for (int c0 = 0; c0 < nb; c0 += MM_TILE_NBC) {
        const int nc = nb - c0 < MM_TILE_NBC ? nb - c0 : MM_TILE_NBC;
        /* Weight scales: once per row block when one chunk covers the row (the
           caller marks the table valid), else per chunk. */
        if (nb > MM_TILE_NBC || first)
            weight_scales(j, tb, rb, nr, c0, nc, kind);
        /* Token columns: lanes past T repeat token 0 (read by the permuting loads, never used). */
        for (int k = 0; k < (T == 1 ? 1 : 8); k++) {
            const float *d = mm_d(j, t0 + (k < T ? k : 0)) + c0, *fs = mm_fsum(j, t0 + (k < T ? k : 0)) + c0;
            for (int b = 0; b < nc; b++) {
                tb->dx[b][k] = d[b];
                tb->fs[b][k] = fs[b];
            }
        }
        for (int i = 0; i < ntile; i++)
            tile_b32(j, tb, rb, i * R, nr, t0, c0, nc, T, kind, &acc[i], &accm[i]);
    }
    for (int i = 0; i < ntile; i++)
        tile_store(j, rb, i * R, nr, t0, T, kind == 0 ? _mm256_add_ps(acc[i], accm[i]) : acc[i]);
}

/* ------------------------------------------------------------ 32-blocks: token lanes
 * Q4_0 and Q4_1 for 5-8 tokens: one row at a time, lane k of every vector is token k.
 * The token group's activation codes are interleaved once per rows call (xi: for
 * block b and step s, token k's codes 4s..4s+3 in bytes 4k..4k+3), so that per row
 * and block the 8 steps are "broadcast the weight's 4 codes of step s from memory,
 * maddubs against xi[b][s], add in int16": 2 arithmetic instructions per step for 8
 * tokens, where the pair tiles spend maddubs + madd + a share of the lane reduction
 * per token. The int16 sums are exact: a maddubs lane is at most 2 * 15 * 127 = 3810
 * and 8 steps add up to at most 30480 < 32767. One madd with ones then gives each
 * token's exact int32 block sum in its lane (Q4_0's nibbles stand for n - 8: minus 8
 * times the token's block sum of codes). The float work is the pair tiles', lane for
 * lane (fma(dw * dx, (float)isum, acc); fma(m, dx * sum q, accm); acc + accm), so a
 * (row, token) pair gets the same bits from either kernel. Rows wider than
 * MM_XI_NBC blocks use the pair tiles (the interleaved copy lives on the stack).
 *
 * Q8_0 (the tied output head) in the same lanes: its codes are signed, so a step is
 * the sign trick, maddubs(|w| broadcast, sign(x, w broadcast)), whose int16 lanes reach
 * 2 * 128 * 127 = 32512 and so are widened by a madd per step (no int16 step sums);
 * 8 tokens then cost 8 x (2 shuffles, sign, maddubs, madd, add) per row and block
 * against 8 x (sign, maddubs, madd, convert, multiply, FMA) in the old row-by-row
 * kernel, whose 8 float lanes per token also meant a different float sequence. The
 * float work is again the pair tiles' (and the AVX-512 family's): y = sum over blocks
 * of fma(dw * dx, (float)isum). Two tokens use step pairs (P2 below) so that no lane
 * is idle. */
#define MM_XI_NBC 48

typedef struct xi_tabs {
    int8_t xi[MM_XI_NBC][8][32] __attribute__((aligned(32)));
    float dx[MM_XI_NBC][8] __attribute__((aligned(32)));
    float fs[MM_XI_NBC][8] __attribute__((aligned(32)));
    int32_t is[MM_XI_NBC][8] __attribute__((aligned(32)));
} xi_tabs;

/* 8x8 transpose of int32: out[s] lane k = in[k] lane s. */
AI void transpose8_epi32(const __m256i in[8], __m256i out[8])
{
    __m256i a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        b[4 * i + 0] = _mm256_unpacklo_epi64(a[4 * i + 0], a[4 * i + 2]);
        b[4 * i + 1] = _mm256_unpackhi_epi64(a[4 * i + 0], a[4 * i + 2]);
        b[4 * i + 2] = _mm256_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm256_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        out[i] = _mm256_permute2x128_si256(b[i], b[4 + i], 0x20);
        out[4 + i] = _mm256_permute2x128_si256(b[i], b[4 + i], 0x31);
    }
}

/* Rows r0..r1-1, tokens t0..t0+T-1. R = 1: lane k is token k (5 <= T <= 8); R = 2:
   two rows per pass, lanes 0-3 the first row's tokens and 4-7 the second's (T <= 4;
   a 128-bit half per row, which is what the in-lane step broadcast allows). Lanes
   past T repeat token t0 and are not stored. kind: 0 = Q4_1, 1 = Q4_0, 2 = Q8_0. */
AI void toklanes_b32(const mm_job *j, xi_tabs *xt, int r0, int r1, int t0, const int T, const int R, const int NG,
                     const int kind)
{
    const int nb = j->w->n_in / 32, bsz = kind == 0 ? 20 : kind == 1 ? 18 : 34, NL = 8 / R;
    /* Q8_0 at 2 tokens: step pairs. Lanes of a half are (t0, t1) at step 2p and
       (t0, t1) at step 2p+1, 4 passes per block instead of 8; one in-lane swap and add
       completes the block sums. */
    const int P2 = kind == 2 && T == 2;
    for (int g = 0; g < NG; g++)
        for (int b = 0; b < nb; b++) {
            __m256i v[8], o[8];
            for (int k = 0; k < 8; k++) {
                const int t = P2 ? t0 + (k & 1) : t0 + 8 * g + (k % NL < T ? k % NL : 0);
                v[k] = _mm256_loadu_si256((const __m256i *)(mm_qs(j, t) + 32 * (size_t)b));
                xt[g].dx[b][k] = mm_d(j, t)[b];
                xt[g].fs[b][k] = mm_fsum(j, t)[b];
                xt[g].is[b][k] = mm_isum(j, t)[b];
            }
            transpose8_epi32(v, o);
            for (int s = 0; s < 8; s++)
                _mm256_store_si256((__m256i *)xt[g].xi[b][s], P2 && s < 4 ? _mm256_blend_epi32(o[2 * s], o[2 * s + 1], 0xCC) : o[s]);
        }
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i lo_idx = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), hi_idx = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);
    const size_t n_out = (size_t)j->w->n_out;
    const int qo = kind == 0 ? 4 : 2; /* codes offset in the block */
    for (int r = r0; r < r1; r += R) {
        const int rb2 = R == 2 && r + 1 < r1 ? r + 1 : r; /* the second row (or a copy) */
        const uint8_t *rowa = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes;
        const uint8_t *rowb = (const uint8_t *)j->w->data + (size_t)rb2 * j->w->row_bytes;
        __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, accm[2] = {acc[0], acc[1]};
        for (int b = 0; b < nb; b++) {
            const uint8_t *ba = rowa + (size_t)b * bsz, *bb = rowb + (size_t)b * bsz;
            /* The next pass's rows, R blocks ahead per block: reading two rows at once
               (R = 2) with 960-byte rows ran at half speed from memory without it. */
            if (r + 2 * R <= r1)
                _mm_prefetch((const char *)(rowa + (size_t)R * j->w->row_bytes + (size_t)b * R * bsz), _MM_HINT_T0);
            __m256i is32[2];
            if (kind == 2) {
                /* Q8_0: signed codes, so the sign trick (|w| against sign(x, w)); a
                   maddubs lane reaches 2 * 128 * 127 = 32512, so each step is widened
                   to int32 by its own madd. Bytes 0-15 are steps 0-3, 16-31 steps 4-7. */
                const __m128i a0 = _mm_loadu_si128((const __m128i *)(ba + 2)), a1 = _mm_loadu_si128((const __m128i *)(ba + 18));
                const __m256i p0 = R == 1 ? _mm256_broadcastsi128_si256(a0)
                                          : _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(bb + 2)), a0);
                const __m256i p1 = R == 1 ? _mm256_broadcastsi128_si256(a1)
                                          : _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(bb + 18)), a1);
                const __m256i u0 = _mm256_abs_epi8(p0), u1 = _mm256_abs_epi8(p1); /* -128 -> 128 unsigned */
                is32[0] = is32[1] = _mm256_setzero_si256();
#define STEP8(w, u, s, imm)                                                                                   \
    do {                                                                                                      \
        const __m256i ws = _mm256_shuffle_epi32(w, imm), us = _mm256_shuffle_epi32(u, imm);                   \
        for (int g = 0; g < NG; g++) {                                                                        \
            const __m256i xs = _mm256_sign_epi8(_mm256_load_si256((const __m256i *)xt[g].xi[b][s]), ws);      \
            is32[g] = _mm256_add_epi32(is32[g], _mm256_madd_epi16(_mm256_maddubs_epi16(us, xs), ones));        \
        }                                                                                                     \
    } while (0)
                if (P2) { /* steps (0,1), (2,3) of each half's dwords, then (4,5), (6,7) */
                    STEP8(p0, u0, 0, 0x50); STEP8(p0, u0, 1, 0xFA); STEP8(p1, u1, 2, 0x50); STEP8(p1, u1, 3, 0xFA);
                    is32[0] = _mm256_add_epi32(is32[0], _mm256_shuffle_epi32(is32[0], 0x4E));
                } else {
                    STEP8(p0, u0, 0, 0x00); STEP8(p0, u0, 1, 0x55); STEP8(p0, u0, 2, 0xAA); STEP8(p0, u0, 3, 0xFF);
                    STEP8(p1, u1, 4, 0x00); STEP8(p1, u1, 5, 0x55); STEP8(p1, u1, 6, 0xAA); STEP8(p1, u1, 7, 0xFF);
                }
#undef STEP8
            } else {
            /* Codes of the row (both halves) or of the two rows (a half each): low
               nibbles are steps 0-3, high nibbles 4-7; a step's broadcast is then one
               in-lane vpshufd, shared by the NG token groups. */
            const __m256i pk = R == 1 ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(ba + qo)))
                                      : _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(bb + qo)),
                                                         _mm_loadu_si128((const __m128i *)(ba + qo)));
            const __m256i wlo = _mm256_and_si256(pk, m4), whi = _mm256_and_si256(_mm256_srli_epi16(pk, 4), m4);
            __m256i a16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#define STEP(w, s, imm)                                                                                    \
    do {                                                                                                   \
        const __m256i ws = _mm256_shuffle_epi32(w, imm);                                                   \
        for (int g = 0; g < NG; g++)                                                                       \
            a16[g] = _mm256_add_epi16(a16[g], _mm256_maddubs_epi16(ws, _mm256_load_si256((const __m256i *)xt[g].xi[b][s]))); \
    } while (0)
            STEP(wlo, 0, 0x00); STEP(wlo, 1, 0x55); STEP(wlo, 2, 0xAA); STEP(wlo, 3, 0xFF);
            STEP(whi, 4, 0x00); STEP(whi, 5, 0x55); STEP(whi, 6, 0xAA); STEP(whi, 7, 0xFF);
#undef STEP
            for (int g = 0; g < NG; g++) {
                is32[g] = _mm256_madd_epi16(a16[g], ones);
                if (kind == 1)
                    is32[g] = _mm256_sub_epi32(is32[g], _mm256_slli_epi32(_mm256_load_si256((const __m256i *)xt[g].is[b]), 3));
            }
            }
            __m256 dw, mw = _mm256_setzero_ps();
            if (R == 1) {
                uint16_t h[2];
                memcpy(h, ba, kind == 0 ? 4 : 2);
                dw = _mm256_set1_ps(f16(h[0]));
                if (kind == 0)
                    mw = _mm256_set1_ps(f16(h[1]));
            } else { /* fp16 d, m of row a, then of row b: one conversion, two lane spreads */
                int32_t ea = 0, eb = 0;
                memcpy(&ea, ba, kind == 0 ? 4 : 2);
                memcpy(&eb, bb, kind == 0 ? 4 : 2);
                const __m256 f = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_setr_epi32(ea, eb, 0, 0)));
                dw = _mm256_permutevar8x32_ps(f, lo_idx);
                if (kind == 0)
                    mw = _mm256_permutevar8x32_ps(f, hi_idx);
            }
            for (int g = 0; g < NG; g++) {
                acc[g] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_load_ps(xt[g].dx[b])), _mm256_cvtepi32_ps(is32[g]), acc[g]);
                if (kind == 0)
                    accm[g] = _mm256_fmadd_ps(mw, _mm256_load_ps(xt[g].fs[b]), accm[g]);
            }
        }
        for (int g = 0; g < NG; g++) {
            float l[8];
            _mm256_storeu_ps(l, kind == 0 ? _mm256_add_ps(acc[g], accm[g]) : acc[g]);
            for (int k = 0; k < T; k++) {
                j->y[(size_t)(t0 + 8 * g + k) * n_out + r] = l[k];
                if (rb2 != r)
                    j->y[(size_t)(t0 + 8 * g + k) * n_out + rb2] = l[NL + k];
            }
        }
    }
}

/* ------------------------------------------------------------ 32-blocks: packed row lanes
 * Q4_0 and Q4_1 on the load-time packed copy (matmul_pack.c, the AVX-512 layout): lane
 * l of a vector is row l of an 8-row half of a 16-row group, so step q of a block is
 * one aligned 32-byte load (bytes 4q..4q+3 of each row's nibbles) and its low / high
 * nibbles are steps q and q + 4, already in row lanes: no per-row broadcast or
 * shuffle. Per token and block the 8 steps are "broadcast the token's 4 activation
 * codes from memory, maddubs against the step's codes, add in int16": 16 arithmetic
 * instructions for 8 rows, where the token lanes (below) spend 24 (a vpshufd per step
 * and row on top of the same maddubs + add). The int16 sums are exact for the token
 * lanes' reason (8 steps x 2 x 15 x 127 = 30480 < 32767), one madd with ones gives
 * the exact int32 block sum per row lane (Q4_0: minus 8 times the token's block sum),
 * and the float work is the pair tiles' lane for lane:
 *     acc  = fma(dw * dx, (float)isum, acc)      accm = fma(m, dx * sum q, accm)
 *     y    = acc + accm (Q4_1), acc (Q4_0)
 * so a (row, token) pair gets the same bits packed or not, at any token count. */
#define MM_PK_TG 8 /* tokens per pass over a half's weights */

/* Rows row0..row0+7 (a half: row0 % 16 is 0 or 8) of the group at grp, tokens
   t0..t0+T-1. One base pointer and the row stride address every activation read
   (per-token pointers ran out of registers and were spilled: 5 % slower at 8 tokens).
   probe.c's Q4_1 instruction mix repeats this loop's instructions: a change here goes
   there too. */
AI void packed_half(const mm_job *j, const uint8_t *grp, size_t gb, int nb, int row0, int t0, const int T,
                    const int kind, const uint8_t *pf)
{
    const int h = row0 & 8; /* the half's first row in the group: lanes 4h.. of a step, scales 2h.. */
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const size_t st = j->lay.stride;
    const uint8_t *a0 = j->act + (size_t)t0 * st;
    const size_t od = j->lay.off_d, of = j->lay.off_fsum, oi = j->lay.off_isum;
    __m256 acc[MM_PK_TG], accm[MM_PK_TG];
    for (int k = 0; k < T; k++)
        acc[k] = accm[k] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * gb;
        if (pf) /* the same block of the next row group: one group's work ahead */
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)(pf + (size_t)b * gb + o), _MM_HINT_T1);
        /* all 8 steps' codes stay in registers while the tokens go by */
        __m256i w[8];
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            const __m256i c = _mm256_load_si256((const __m256i *)(p + 64 * q + 4 * h));
            w[q] = _mm256_and_si256(c, m4);
            w[4 + q] = _mm256_and_si256(_mm256_srli_epi16(c, 4), m4);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p + 256 + 2 * h)));
        const __m256 mw = kind == 0 ? _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p + 288 + 2 * h))) : dw;
        const uint8_t *ab = a0 + 32 * (size_t)b;
#pragma GCC unroll 8
        for (int k = 0; k < T; k++) {
            const uint8_t *ak = ab + (size_t)k * st;
            __m256i a16 = _mm256_maddubs_epi16(w[0], _mm256_set1_epi32(*(const int32_t *)ak));
#pragma GCC unroll 7
            for (int s2 = 1; s2 < 8; s2++) /* step s2: activation codes 4 s2 .. 4 s2 + 3 */
                a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(w[s2], _mm256_set1_epi32(*(const int32_t *)(ak + 4 * s2))));
            __m256i s = _mm256_madd_epi16(a16, ones);
            const uint8_t *sk = a0 + (size_t)k * st + 4 * (size_t)b; /* the token's block scalars */
            if (kind == 1)
                s = _mm256_sub_epi32(s, _mm256_set1_epi32(*(const int32_t *)(sk + oi) * 8));
            acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(*(const float *)(sk + od))), _mm256_cvtepi32_ps(s),
                                     acc[k]);
            if (kind == 0)
                accm[k] = _mm256_fmadd_ps(mw, _mm256_set1_ps(*(const float *)(sk + of)), accm[k]);
        }
    }
    const size_t n_out = (size_t)j->w->n_out;
    const int live = (int)n_out - row0 < 8 ? (int)n_out - row0 : 8;
    for (int k = 0; k < T; k++) {
        const __m256 v = kind == 0 ? _mm256_add_ps(acc[k], accm[k]) : acc[k];
        float *y = j->y + (size_t)(t0 + k) * n_out + row0;
        if (live == 8) {
            _mm256_storeu_ps(y, v);
        } else {
            float l[8];
            _mm256_storeu_ps(l, v);
            memcpy(y, l, sizeof(float) * (size_t)live);
        }
    }
}

/* Rows r0..r1-1 (r0 a multiple of 16), every token: per 8-row half, token groups of
   MM_PK_TG, then one group of the rest; the next group is prefetched during the first half's
   first token group. */
#define PCALL(t, nt) (packed_half(j, grp, gb, g.nb, row0, t, nt, kind, pf), pf = NULL)
AI void packed_rows(const mm_job *j, int r0, int r1, const int kind)
{
    _Static_assert(MM_PK_TG == 8, "MM_TOKENS_BY_8");
    FOR_PACKED_HALVES(j, r0, r1, {
        const uint8_t *pf = row0 == rb ? nx : NULL;
        MM_TOKENS_BY_8(j->n_tok, PCALL);
    });
}
#undef PCALL

/* Token groups of 2-8 (16: two groups per pass) run as token lanes (whole row range
   per group), one token and rows wider than MM_XI_NBC blocks as pair tiles: row blocks
   of 16 x token groups of 8, then one group of 1-7. */
AI void rows_b32(const mm_job *j, int r0, int r1, const int kind)
{
    if (kind != 2 && j->w->packed) {
        packed_rows(j, r0, r1, kind);
        return;
    }
    int t = 0;
    if (j->w->n_in / 32 <= MM_XI_NBC) {
        xi_tabs x[2];
        for (; t + 16 <= j->n_tok; t += 16)
            toklanes_b32(j, x, r0, r1, t, 8, 1, 2, kind);
        if (t + 8 <= j->n_tok) {
            toklanes_b32(j, x, r0, r1, t, 8, 1, 1, kind);
            t += 8;
        }
        int rest = j->n_tok - t;
        if (kind == 2 && (rest == 5 || rest == 6)) {
            /* Q8_0 costs the same per 8-lane pass for 5-8 tokens (the head: 3.1 ms),
               so 5 and 6 run as 4 (two-row lanes, 1.7 ms) + 1 (tile, 0.75) or + 2. */
            toklanes_b32(j, x, r0, r1, t, 4, 2, 1, kind);
            t += 4;
            rest -= 4;
        }
        switch (rest) {
        case 7: toklanes_b32(j, x, r0, r1, t, 7, 1, 1, kind); t += 7; break;
        case 6: toklanes_b32(j, x, r0, r1, t, 6, 1, 1, kind); t += 6; break;
        case 5: toklanes_b32(j, x, r0, r1, t, 5, 1, 1, kind); t += 5; break;
        case 4: toklanes_b32(j, x, r0, r1, t, 4, 2, 1, kind); t += 4; break;
        case 3: toklanes_b32(j, x, r0, r1, t, 3, 2, 1, kind); t += 3; break;
        case 2: toklanes_b32(j, x, r0, r1, t, 2, 2, 1, kind); t += 2; break;
        default: break;
        }
        if (t == j->n_tok)
            return;
    }
    tile_tabs tb;
    const int tg = t;
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {
        const int nr = r1 - rb < MM_ROW_BLOCK ? r1 - rb : MM_ROW_BLOCK;
        _Static_assert(MM_ROW_BLOCK == 16, "the scale tables hold 16 rows");
        for (t = tg; t + 8 <= j->n_tok; t += 8)
            tiles_b32(j, &tb, rb, nr, t, 8, kind, t == tg);
        switch (j->n_tok - t) {
        case 7: tiles_b32(j, &tb, rb, nr, t, 7, kind, t == tg); break;
        case 6: tiles_b32(j, &tb, rb, nr, t, 6, kind, t == tg); break;
        case 5: tiles_b32(j, &tb, rb, nr, t, 5, kind, t == tg); break;
        case 4: tiles_b32(j, &tb, rb, nr, t, 4, kind, t == tg); break;
        case 3: tiles_b32(j, &tb, rb, nr, t, 3, kind, t == tg); break;
        case 2: tiles_b32(j, &tb, rb, nr, t, 2, kind, t == tg); break;
        case 1: tiles_b32(j, &tb, rb, nr, t, 1, kind, t == tg); break;
        default: break;
        }
    }
}

/* Row blocks x token groups of 4 (then a group of 1-3). */
#define ROWS_LOOP(KCALL)                                                        \
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {                            \
        const int re = rb + MM_ROW_BLOCK < r1 ? rb + MM_ROW_BLOCK : r1;         \
        int t = 0;                                                              \
        for (; t + 4 <= j->n_tok; t += 4)                                       \
            for (int r = rb; r < re; r++)                                       \
                KCALL(r, t, 4);                                                 \
        const int rest = j->n_tok - t;                                          \
        for (int r = rb; r < re; r++) {                                         \
            if (rest == 3)                                                      \
                KCALL(r, t, 3);                                                 \
            else if (rest == 2)                                                 \
                KCALL(r, t, 2);                                                 \
            else if (rest == 1)                                                 \
                KCALL(r, t, 1);                                                 \
        }                                                                       \
    }

#define K_RAW(r, t, n) kern_raw(j, r, t, n)
#define K_Q4_K(r, t, n) kern_q4_k(j, r, t, n, 0)
#define K_Q6_K(r, t, n) kern_q6_k(j, r, t, n)
#define K_Q5_K(r, t, n) kern_q4_k(j, r, t, n, 1)

static void rows_q4_1(const mm_job *j, int r0, int r1) { rows_b32(j, r0, r1, 0); }
static void rows_q4_0(const mm_job *j, int r0, int r1) { rows_b32(j, r0, r1, 1); }
static void rows_q8_0(const mm_job *j, int r0, int r1) { rows_b32(j, r0, r1, 2); }
static void rows_raw(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_RAW) }
static void rows_q4_k(const mm_job *j, int r0, int r1)
{
    if (j->w->packed) {
        kquant_packed_rows(j, r0, r1, 0);
        return;
    }
    ROWS_LOOP(K_Q4_K)
}
static void rows_q6_k(const mm_job *j, int r0, int r1)
{
    if (j->w->packed) {
        kquant_packed_rows(j, r0, r1, 1);
        return;
    }
    ROWS_LOOP(K_Q6_K)
}
static void rows_q5_k(const mm_job *j, int r0, int r1)
{
    if (j->w->packed) {
        kquant_packed_rows(j, r0, r1, 2);
        return;
    }
    ROWS_LOOP(K_Q5_K)
}

const mm_impl arb_mm_avx2 = {
    .name = "avx2",
    .q4_0 = rows_q4_0, .q4_1 = rows_q4_1, .q8_0 = rows_q8_0,
    .q4_k = rows_q4_k, .q5_k = rows_q5_k, .q6_k = rows_q6_k, .f16 = rows_raw, .f32 = rows_raw,
};

ARB_ISA_SECTION_END
#else
const mm_impl arb_mm_avx2 = {.name = "avx2"}; /* not x86-64: never selected */
void arb_mm_quant_avx2(const float *x, int n_in, const mm_layout *l, uint8_t *dst) { (void)x, (void)n_in, (void)l, (void)dst; }
void arb_mm_axpy_avx2(float *y, const float *c, float s, int r0, int r1) { (void)y, (void)c, (void)s, (void)r0, (void)r1; }
#endif
