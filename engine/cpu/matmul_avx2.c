/* matmul_avx2.c — the AVX2/FMA/F16C kernel family (the x86-64 baseline).
 *
 * One weight row is combined with up to 4 tokens per pass: the 32-byte block is
 * unpacked once and dotted with each token's Q8 block (maddubs + madd, 8 int32
 * lanes), then scaled and accumulated into that token's own 8 float lanes. Every
 * (row, token) pair therefore sees the same instruction sequence whether it is
 * computed alone or as one of 4 — the batch-invariance rule of matmul_int.h —
 * while a batch reads each weight block once per 4 tokens instead of once per token.
 * All float arithmetic is written as intrinsics so the compiler cannot contract or
 * reorder it differently in the 1-, 2-, 3- and 4-token instances.
 */
#include "matmul_int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2,fma,f16c")
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

typedef struct tok_ptrs { const int8_t *qs; const float *d, *fs; } tok_ptrs;

AI tok_ptrs tok(const mm_job *j, int t) { return (tok_ptrs){mm_qs(j, t), mm_d(j, t), mm_fsum(j, t)}; }

/* Q4_1 (is_q4_0 = 0) and Q4_0 (is_q4_0 = 1): the Q4_0 offset -8 is applied to the
   nibbles (signed weights, sign trick) so that its sum stays an exact integer. */
AI void kern_q4(const mm_job *j, int r, int t0, const int NT, const int is_q4_0)
{
    const uint8_t *row = (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes;
    const int nb = j->w->n_in / 32;
    tok_ptrs tp[4];
    __m256 acc[4];
    __m128 accm[4];
    for (int k = 0; k < NT; k++) {
        tp[k] = tok(j, t0 + k);
        acc[k] = _mm256_setzero_ps();
        accm[k] = _mm_setzero_ps();
    }
    for (int b = 0; b < nb; b++) {
        float dw, mw = 0.0f;
        __m256i wv, wabs = _mm256_setzero_si256();
        if (is_q4_0) {
            const arb_block_q4_0 *blk = (const arb_block_q4_0 *)row + b;
            dw = f16(blk->d);
            wv = _mm256_sub_epi8(unpack_nib(blk->qs), _mm256_set1_epi8(8));
            wabs = _mm256_sign_epi8(wv, wv);
        } else {
            const arb_block_q4_1 *blk = (const arb_block_q4_1 *)row + b;
            dw = f16(blk->d);
            mw = f16(blk->m);
            wv = unpack_nib(blk->qs);
        }
        const __m256 dwv = _mm256_set1_ps(dw);
        const __m128 mwv = _mm_set_ss(mw);
        for (int k = 0; k < NT; k++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(tp[k].qs + 32 * b));
            const __m256i s = is_q4_0 ? dot_u8s8(wabs, _mm256_sign_epi8(q, wv)) : dot_u8s8(wv, q);
            const __m256 sc = _mm256_mul_ps(dwv, _mm256_broadcast_ss(tp[k].d + b));
            acc[k] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s), acc[k]);
            if (!is_q4_0)
                accm[k] = _mm_fmadd_ss(mwv, _mm_load_ss(tp[k].fs + b), accm[k]);
        }
    }
    for (int k = 0; k < NT; k++) {
        const float v = is_q4_0 ? hsum8(acc[k]) : _mm_cvtss_f32(_mm_add_ss(_mm_set_ss(hsum8(acc[k])), accm[k]));
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = v;
    }
}

AI void kern_q8_0(const mm_job *j, int r, int t0, const int NT)
{
    const arb_block_q8_0 *row = (const arb_block_q8_0 *)((const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes);
    const int nb = j->w->n_in / 32;
    tok_ptrs tp[4];
    __m256 acc[4];
    for (int k = 0; k < NT; k++) {
        tp[k] = tok(j, t0 + k);
        acc[k] = _mm256_setzero_ps();
    }
    for (int b = 0; b < nb; b++) {
        const __m256i wv = _mm256_loadu_si256((const __m256i *)row[b].qs);
        const __m256i wabs = _mm256_sign_epi8(wv, wv);
        const __m256 dwv = _mm256_set1_ps(f16(row[b].d));
        for (int k = 0; k < NT; k++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(tp[k].qs + 32 * b));
            const __m256i s = dot_u8s8(wabs, _mm256_sign_epi8(q, wv));
            const __m256 sc = _mm256_mul_ps(dwv, _mm256_broadcast_ss(tp[k].d + b));
            acc[k] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s), acc[k]);
        }
    }
    for (int k = 0; k < NT; k++)
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = hsum8(acc[k]);
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

/* Q4_K x Q8_K. Per 256-block: integer sum of sc_s * (codes . q) over the 8
   sub-blocks in 8 int32 lanes, and the scalar min sum m_s * (sum of q over the
   sub-block), from the activation's 16-element group sums. y = sum d*dx*isum -
   sum dmin*dx*msum. */
AI void kern_q4_k(const mm_job *j, int r, int t0, const int NT)
{
    const arb_block_q4_k *row = (const arb_block_q4_k *)((const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes);
    const int nb = j->w->n_in / 256;
    __m256 acc[4];
    __m128 accm[4];
    for (int k = 0; k < NT; k++) {
        acc[k] = _mm256_setzero_ps();
        accm[k] = _mm_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int b = 0; b < nb; b++) {
        uint8_t sc[8], mn[8];
        for (int s = 0; s < 8; s++)
            mm_q4k_scale_min(s, row[b].scales, &sc[s], &mn[s]);
        const float d = f16(row[b].d), dmin = f16(row[b].dmin);
        __m256i wl[4], wh[4];
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(row[b].qs + 32 * c));
            wl[c] = _mm256_and_si256(q, m4);
            wh[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        }
        for (int k = 0; k < NT; k++) {
            const int8_t *x = mm_qs(j, t0 + k) + 256 * b;
            const int32_t *gs = mm_isum(j, t0 + k) + 16 * b;
            __m256i is = _mm256_setzero_si256();
            for (int c = 0; c < 4; c++) {
                const __m256i pl = _mm256_maddubs_epi16(wl[c], _mm256_loadu_si256((const __m256i *)(x + 64 * c)));
                const __m256i ph = _mm256_maddubs_epi16(wh[c], _mm256_loadu_si256((const __m256i *)(x + 64 * c + 32)));
                is = _mm256_add_epi32(is, _mm256_madd_epi16(pl, _mm256_set1_epi16(sc[2 * c])));
                is = _mm256_add_epi32(is, _mm256_madd_epi16(ph, _mm256_set1_epi16(sc[2 * c + 1])));
            }
            int32_t ms = 0;
            for (int s = 0; s < 8; s++)
                ms += mn[s] * (gs[2 * s] + gs[2 * s + 1]);
            const float dx = mm_d(j, t0 + k)[b];
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(is), acc[k]);
            accm[k] = _mm_fmadd_ss(_mm_set_ss(dmin * dx), _mm_set_ss((float)ms), accm[k]);
        }
    }
    for (int k = 0; k < NT; k++)
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(_mm_sub_ss(_mm_set_ss(hsum8(acc[k])), accm[k]));
}

/* Q6_K x Q8_K: 6-bit codes u (value u - 32), 16 int8 scales per 256-block. The
   integer block sum is sum_g sc_g * (u . q)_g - 32 * sum_g sc_g * (sum q)_g. */
AI void kern_q6_k(const mm_job *j, int r, int t0, const int NT)
{
    const arb_block_q6_k *row = (const arb_block_q6_k *)((const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes);
    const int nb = j->w->n_in / 256;
    __m256 acc[4];
    for (int k = 0; k < NT; k++)
        acc[k] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    for (int b = 0; b < nb; b++) {
        const float d = f16(row[b].d);
        __m256i u[8], scv[8]; /* part i of half h at 4h+i: 32 codes, and their 2 scales */
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
            for (int i = 0; i < 4; i++) {
                const int16_t sa = row[b].scales[8 * h + 2 * i], sb = row[b].scales[8 * h + 2 * i + 1];
                scv[4 * h + i] = _mm256_setr_epi16(sa, sa, sa, sa, sa, sa, sa, sa, sb, sb, sb, sb, sb, sb, sb, sb);
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
            int32_t corr = 0;
            for (int g = 0; g < 16; g++)
                corr += row[b].scales[g] * gs[g];
            is = _mm256_sub_epi32(is, _mm256_setr_epi32(32 * corr, 0, 0, 0, 0, 0, 0, 0));
            const float dx = mm_d(j, t0 + k)[b];
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(is), acc[k]);
        }
    }
    for (int k = 0; k < NT; k++)
        j->y[(size_t)(t0 + k) * j->w->n_out + r] = hsum8(acc[k]);
}

/* Blocks of 32 (Q4_0/Q4_1/Q8_0 weights) in three passes, so that the divisions run
   8 blocks per instruction instead of two scalar divisions per block: block maxima
   into d[], then d = amax / 127 and 1/d vector-wise (1/d parked in fsum[]), then the
   codes and their sums, then fsum = d * sum. Every value is the scalar quantizer's:
   max is exact, the divisions and the product are the same IEEE operations, and
   integer sums do not depend on their order. */
__attribute__((target("avx2,fma"))) static void quant_b32_avx2(const float *x, int n_in, const mm_layout *l,
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
        const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3]));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
        isum[b] = _mm_cvtsi128_si32(s4);
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
            int32_t s8[8];
            if (G == 32) {
                _mm256_storeu_si256((__m256i *)s8, _mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3])));
                const int s = s8[0] + s8[1] + s8[2] + s8[3] + s8[4] + s8[5] + s8[6] + s8[7];
                isum[(b * B + i) / 32] = s;
                sb += s;
            } else { /* G == 16: elements i..i+15 are v[0], v[1]; i+16..i+31 are v[2], v[3] */
                _mm256_storeu_si256((__m256i *)s8, _mm256_add_epi32(v[0], v[1]));
                const int s0 = s8[0] + s8[1] + s8[2] + s8[3] + s8[4] + s8[5] + s8[6] + s8[7];
                _mm256_storeu_si256((__m256i *)s8, _mm256_add_epi32(v[2], v[3]));
                const int s1 = s8[0] + s8[1] + s8[2] + s8[3] + s8[4] + s8[5] + s8[6] + s8[7];
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

#define K_Q4_0(r, t, n) kern_q4(j, r, t, n, 1)
#define K_Q4_1(r, t, n) kern_q4(j, r, t, n, 0)
#define K_Q8_0(r, t, n) kern_q8_0(j, r, t, n)
#define K_RAW(r, t, n) kern_raw(j, r, t, n)
#define K_Q4_K(r, t, n) kern_q4_k(j, r, t, n)
#define K_Q6_K(r, t, n) kern_q6_k(j, r, t, n)

static void rows_q4_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_Q4_0) }
static void rows_q4_1(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_Q4_1) }
static void rows_q8_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_Q8_0) }
static void rows_raw(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_RAW) }
static void rows_q4_k(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_Q4_K) }
static void rows_q6_k(const mm_job *j, int r0, int r1) { ROWS_LOOP(K_Q6_K) }

const mm_impl arb_mm_avx2 = {
    .name = "avx2",
    .q4_0 = rows_q4_0, .q4_1 = rows_q4_1, .q8_0 = rows_q8_0,
    .q4_k = rows_q4_k, .q6_k = rows_q6_k, .f16 = rows_raw, .f32 = rows_raw,
};

#else
const mm_impl arb_mm_avx2 = {.name = "avx2"}; /* not x86-64: never selected */
void arb_mm_quant_avx2(const float *x, int n_in, const mm_layout *l, uint8_t *dst) { (void)x, (void)n_in, (void)l, (void)dst; }
#endif
