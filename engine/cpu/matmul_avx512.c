/* matmul_avx512.c — the AVX-512 (F, BW, VL) + VNNI kernel family, on packed weights.
 *
 * It reads only the repacked copy of a matrix (arb_qmat.packed, matmul_pack.c);
 * a matrix without one goes to the AVX2 kernel (a per-matrix choice, matmul.c).
 *
 * Lanes are rows. For a group of 16 rows and one block, 8 vpdpbusd multiply the
 * rows' codes (step q: bytes 4q..4q+3 of row l's block in lane l) by the token's
 * activation bytes 4q..4q+3 broadcast to every lane, leaving the exact integer dot
 * product of row l's block in lane l. Then, per block and token, one scale multiply
 * (16 row scales x the token's block scale), one convert and one FMA into the 16
 * rows' float accumulators, plus the Q4_1 min term m * (dx * sum q) by a second FMA.
 * The accumulators end as the 16 outputs of the token: no horizontal reduction, and
 * a row of any width is whole groups (an earlier layout put 16 blocks of one row in
 * the lanes and paid a 16-lane reduction per row and token, plus a separate path for
 * the nb % 16 last blocks; this one runs 1.4-2x faster at 16 tokens).
 * Every type multiplies unsigned weight bytes by the signed activation codes, which
 * vpdpbusd can read from memory broadcast (one fused micro-op). Q4_1's nibbles are
 * its values; Q4_0's are n - 8 and Q8_0's were packed as c + 128, so each token's
 * block sum starts at the activation's corr = -8 or -128 * sum(q) (matmul_int.h).
 *
 * The float sequence of a (row, token) pair: from 0, for each block in order,
 * fma(dw * dx, (float)s, .) [then fma(m, fsum, .)] — it depends on n_in only. One
 * pass over a group's weights serves up to 8 tokens, each with its own accumulators
 * and the same instructions as when alone (the batch-invariance rule, matmul_int.h).
 */
#include "matmul_int.h"
#include "isa_section.h"

#if defined(__x86_64__) && defined(__GNUC__)
ARB_ISA_SECTION_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#define AI static inline __attribute__((always_inline))
#define NT_MAX 8

/* The 8 code steps of one group into w[0..7], bytes to multiply with activation
   steps 0..7: Q4 steps 0..3 are the low nibbles (elements 4q..4q+3), 4..7 the high
   ones (elements 16+4q..); Q8 step q is elements 4q..4q+3. */
AI void load_codes(const uint8_t *cp, const int kind, __m512i w[8])
{
    if (kind == 2) {
        for (int q = 0; q < 8; q++)
            w[q] = _mm512_load_si512((const void *)(cp + 64 * q));
        return;
    }
    const __m512i nib = _mm512_set1_epi8(0x0F);
    for (int q = 0; q < 4; q++) {
        const __m512i T = _mm512_load_si512((const void *)(cp + 64 * q));
        w[q] = _mm512_and_si512(T, nib);
        w[4 + q] = _mm512_and_si512(_mm512_srli_epi32(T, 4), nib);
    }
}

/* acc + w . (4 bytes at x, broadcast) with w unsigned and x signed, as one
   instruction with an embedded-broadcast memory operand (one fused micro-op). GCC
   emits a separate vpbroadcastd for _mm512_set1_epi32(*x) instead, and at 8 per
   token and block those extra micro-ops limit the front end. */
AI __m512i dpbusd_bcast(__m512i acc, __m512i w, const int32_t *x)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*x));
    return acc;
}

/* kind: 0 = Q4_1, 1 = Q4_0, 2 = Q8_0. y for rows rb..re-1 (one group, rb a multiple
   of 16) and tokens t0..t0+NT-1. probe.c's Q4_1 instruction mix (arb_probe_q4_mix_macs,
   the bench's floor line) repeats this loop's instructions: a change here goes there too. */
AI void group(const mm_job *j, const mm_packed_geom *g, int rb, int re, int t0, const int NT, const int kind)
{
    const size_t n_out = (size_t)j->w->n_out, gb = mm_packed_group_bytes(g);
    const uint8_t *base = (const uint8_t *)j->w->packed + (size_t)(rb / 16) * g->nb * gb;
    const __mmask16 live = (__mmask16)((1u << (re - rb)) - 1u);
    const size_t st = j->lay.stride;
    const uint8_t *a0 = j->act + (size_t)t0 * st;
    __m512 acc[NT_MAX];
    for (int k = 0; k < NT; k++)
        acc[k] = _mm512_setzero_ps();
    for (int b = 0; b < g->nb; b++) {
        const uint8_t *p = base + (size_t)b * gb;
        if (t0 == 0 && rb + 16 < (int)n_out) /* the same block of the next row group, a group's work ahead, into L2 (matmul_int.h) */
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)(p + (size_t)g->nb * gb + o), _MM_HINT_T1);
        __m512i w[8];
        load_codes(p, kind, w);
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(p + g->cb)));
        const __m512 mw = kind == 0 ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(p + g->cb + 32))) : dw;
        const size_t oq = (size_t)b * 32, oc = j->lay.off_corr + (size_t)b * 4; /* codes, corr */
        const size_t od = j->lay.off_d + (size_t)b * 4, of = j->lay.off_fsum + (size_t)b * 4;  /* d, fsum */
        /* Step-major: step q of every token, then step q + 1. Each token's chain of 8
           dependent vpdpbusd (~40 cycles) then has the other tokens' independent
           steps between its links, so the core keeps both ports busy without a long
           queue of waiting instructions. Token-major order (all 8 steps of a token,
           then the next token) measured 15-17 % slower at 16 tokens even with the
           chain split in two; the integer sums, and so the results, are the same. */
        __m512i s[NT_MAX];
#pragma GCC unroll 8
        for (int k = 0; k < NT; k++) /* Q4_0/Q8_0: the token's correction for unsigned codes */
            s[k] = kind == 0 ? _mm512_setzero_si512()
                             : _mm512_set1_epi32(*(const int32_t *)(a0 + (size_t)k * st + oc));
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) {
            const size_t e = oq + 4 * (size_t)q; /* Q4 steps 4..7, the high nibbles, are elements 16.. */
#pragma GCC unroll 8
            for (int k = 0; k < NT; k++)
                s[k] = dpbusd_bcast(s[k], w[q], (const int32_t *)(a0 + (size_t)k * st + e));
        }
#pragma GCC unroll 8
        for (int k = 0; k < NT; k++) {
            const uint8_t *ak = a0 + (size_t)k * st;
            const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(*(const float *)(ak + od)));
            acc[k] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s[k]), acc[k]);
            if (kind == 0)
                acc[k] = _mm512_fmadd_ps(mw, _mm512_set1_ps(*(const float *)(ak + of)), acc[k]);
        }
    }
    for (int k = 0; k < NT; k++)
        _mm512_mask_storeu_ps(j->y + (size_t)(t0 + k) * n_out + rb, live, acc[k]);
}

/* Q4_K on the AVX2 kernels' packed copy (matmul_pack.c: two 8-row halves per 16 rows and
   256-block), 16 rows per pass, lane l = row l: a step's 16 rows are the two halves'
   32-byte vectors side by side. Per sub-block s of 32 elements and token, 8 vpdpbusd of
   the step's codes (low or high nibbles) against the token's 4 activation bytes leave
   the exact dot product per row; one vpmulld by the rows' scales adds it to the int32
   block sum. The min sum is 4 vpdpwssd of the rows' min pairs against the token's
   32-element sums (int16 pairs). Then the AVX2 kernels' float sequence, lane for lane
   (matmul_avx2.c, kern_q4_k): the integers are the same, so the bits are too, and a
   matrix without a packed copy (the AVX2 row-by-row kernel) gives the same results.
   Q5_K (q5): the same, each step's codes with their fifth bit from the qh plane. */
#define K_TG 4 /* tokens per pass (8 spill: 2.5x slower) */
AI __m512i load_halves(const uint8_t *h0, const uint8_t *h1)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_load_si256((const __m256i *)h0)),
                              _mm256_load_si256((const __m256i *)h1), 1);
}
AI __m256i load_halves128(const uint8_t *h0, const uint8_t *h1)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_load_si128((const __m128i *)h0)),
                                   _mm_load_si128((const __m128i *)h1), 1);
}

AI void q4k_group(const mm_job *j, const mm_packed_geom *g, int rb, int re, int t0, const int T, const int q5)
{
    const size_t n_out = (size_t)j->w->n_out, gb = mm_packed_group_bytes(g), st = j->lay.stride;
    const uint8_t *base = (const uint8_t *)j->w->packed + (size_t)(rb / 16) * g->nb * gb;
    const __mmask16 live = (__mmask16)((1u << (re - rb)) - 1u);
    const uint8_t *a0 = j->act + (size_t)t0 * st;
    const size_t od = j->lay.off_d, o32 = j->lay.off_s32;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[K_TG], accm[K_TG];
    for (int k = 0; k < T; k++)
        acc[k] = accm[k] = _mm512_setzero_ps();
    for (int b = 0; b < g->nb; b++) {
        const uint8_t *p0 = base + (size_t)b * gb, *p1 = p0 + (q5 ? MM_Q5K_HALF : MM_Q4K_HALF);
        if (t0 == 0 && rb + 16 < (int)n_out) /* the same block of the next row group */
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)(p0 + (size_t)g->nb * gb + o), _MM_HINT_T1);
        __m512i is[K_TG];
        for (int k = 0; k < T; k++)
            is[k] = _mm512_setzero_si512();
        for (int s2 = 0; s2 < 8; s2++) {
            const size_t co = (size_t)(s2 / 2) * 256;
            __m512i ds[K_TG];
            for (int k = 0; k < T; k++)
                ds[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) {
                const __m512i v = load_halves(p0 + co + 32 * q, p1 + co + 32 * q);
                __m512i w = _mm512_and_si512(s2 & 1 ? _mm512_srli_epi16(v, 4) : v, m4);
                if (q5) { /* Q5_K: bit s2 of the step's qh bytes is 16 */
                    const __m512i h = load_halves(p0 + 1184 + 32 * q, p1 + 1184 + 32 * q);
                    w = _mm512_or_si512(w, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, s2), _mm512_set1_epi8(1)), 4));
                }
#pragma GCC unroll 4
                for (int k = 0; k < T; k++)
                    ds[k] = dpbusd_bcast(ds[k], w, (const int32_t *)(a0 + (size_t)k * st + 256 * (size_t)b + 32 * (size_t)s2 + 4 * (size_t)q));
            }
            const __m512i sc = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(p0 + 1024 + 8 * s2)),
                                                                       _mm_loadl_epi64((const __m128i *)(p1 + 1024 + 8 * s2))));
            for (int k = 0; k < T; k++)
                is[k] = _mm512_add_epi32(is[k], _mm512_mullo_epi32(ds[k], sc));
        }
        __m512i mn[4];
        for (int q = 0; q < 4; q++)
            mn[q] = _mm512_cvtepu8_epi16(load_halves128(p0 + 1088 + 16 * q, p1 + 1088 + 16 * q));
        const __m512 dv = _mm512_cvtph_ps(load_halves128(p0 + 1152, p1 + 1152));
        const __m512 dmv = _mm512_cvtph_ps(load_halves128(p0 + 1168, p1 + 1168));
        for (int k = 0; k < T; k++) {
            const uint8_t *ak = a0 + (size_t)k * st;
            const int32_t *sp = (const int32_t *)(ak + o32) + 4 * (size_t)b; /* s32 pairs (2q, 2q+1) */
            __m512i ms = _mm512_setzero_si512();
            for (int q = 0; q < 4; q++)
                ms = _mm512_dpwssd_epi32(ms, mn[q], _mm512_set1_epi32(sp[q]));
            const __m512 dx = _mm512_set1_ps(*(const float *)(ak + od + 4 * (size_t)b));
            acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(dv, dx), _mm512_cvtepi32_ps(is[k]), acc[k]);
            accm[k] = _mm512_fmadd_ps(_mm512_mul_ps(dmv, dx), _mm512_cvtepi32_ps(ms), accm[k]);
        }
    }
    for (int k = 0; k < T; k++)
        _mm512_mask_storeu_ps(j->y + (size_t)(t0 + k) * n_out + rb, live, _mm512_sub_ps(acc[k], accm[k]));
}

/* Q6_K on the packed copy (two 8-row halves per 16 rows and block, matmul_pack.c), 16
   rows per pass: per 32 elements the 8 steps' codes rebuilt from the two bit planes
   (low nibble | top 2 bits << 4); per 16 elements (one scale) and token, 4 vpdpbusd give
   the exact dot product per row, one vpmulld by the rows' scale adds it to the block
   sum; the correction is 8 vpdpwssd of the rows' scale pairs against the token's
   16-element sums. Then the AVX2 kernels' float sequence (kern_q6_k), lane for lane. */
AI void q6k_group(const mm_job *j, const mm_packed_geom *g, int rb, int re, int t0, const int T)
{
    const size_t n_out = (size_t)j->w->n_out, gb = mm_packed_group_bytes(g), st = j->lay.stride;
    const uint8_t *base = (const uint8_t *)j->w->packed + (size_t)(rb / 16) * g->nb * gb;
    const __mmask16 live = (__mmask16)((1u << (re - rb)) - 1u);
    const uint8_t *a0 = j->act + (size_t)t0 * st;
    const size_t od = j->lay.off_d, o16 = j->lay.off_s16;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    __m512 acc[K_TG];
    for (int k = 0; k < T; k++)
        acc[k] = _mm512_setzero_ps();
    for (int b = 0; b < g->nb; b++) {
        const uint8_t *p0 = base + (size_t)b * gb, *p1 = p0 + MM_Q6K_HALF;
        if (t0 == 0 && rb + 16 < (int)n_out)
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)(p0 + (size_t)g->nb * gb + o), _MM_HINT_T1);
        __m512i is[K_TG];
        for (int k = 0; k < T; k++)
            is[k] = _mm512_setzero_si512();
        for (int n = 0; n < 2; n++)
            for (int part = 0; part < 4; part++) {
                __m512i w[8];
#pragma GCC unroll 8
                for (int q = 0; q < 8; q++) {
                    const size_t lo_o = (size_t)(16 * n + 8 * (part & 1) + q) * 32, hi_o = 1024 + (size_t)(8 * n + q) * 32;
                    const __m512i l4 = load_halves(p0 + lo_o, p1 + lo_o), h2 = load_halves(p0 + hi_o, p1 + hi_o);
                    const __m512i lo = _mm512_and_si512(part >= 2 ? _mm512_srli_epi16(l4, 4) : l4, m4);
                    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(h2, 2 * part), m2);
                    w[q] = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
                }
                /* scales 8n + 2 part (steps 0-3) and + 1 (steps 4-7) of the 16 rows, as int32 */
                const size_t so = 1536 + 16 * (size_t)(4 * n + part);
                const __m512i sp = _mm512_cvtepi8_epi16(load_halves128(p0 + so, p1 + so));
                const __m512i sa = _mm512_srai_epi32(_mm512_slli_epi32(sp, 16), 16), sb = _mm512_srai_epi32(sp, 16);
#pragma GCC unroll 4
                for (int k = 0; k < T; k++) {
                    const int32_t *x = (const int32_t *)(a0 + (size_t)k * st + 256 * (size_t)b + 128 * (size_t)n + 32 * (size_t)part);
                    __m512i da = _mm512_setzero_si512(), db = _mm512_setzero_si512();
                    for (int q = 0; q < 4; q++) {
                        da = dpbusd_bcast(da, w[q], x + q);
                        db = dpbusd_bcast(db, w[4 + q], x + 4 + q);
                    }
                    is[k] = _mm512_add_epi32(is[k], _mm512_add_epi32(_mm512_mullo_epi32(da, sa), _mm512_mullo_epi32(db, sb)));
                }
            }
        __m512i scp[8];
        for (int q = 0; q < 8; q++)
            scp[q] = _mm512_cvtepi8_epi16(load_halves128(p0 + 1536 + 16 * q, p1 + 1536 + 16 * q));
        const __m512 dv = _mm512_cvtph_ps(load_halves128(p0 + 1664, p1 + 1664));
        for (int k = 0; k < T; k++) {
            const uint8_t *ak = a0 + (size_t)k * st;
            const int32_t *gp = (const int32_t *)(ak + o16) + 8 * (size_t)b; /* s16 pairs (2q, 2q+1) */
            __m512i corr = _mm512_setzero_si512();
            for (int q = 0; q < 8; q++)
                corr = _mm512_dpwssd_epi32(corr, scp[q], _mm512_set1_epi32(gp[q]));
            const __m512i isum = _mm512_sub_epi32(is[k], _mm512_slli_epi32(corr, 5));
            const __m512 dx = _mm512_set1_ps(*(const float *)(ak + od + 4 * (size_t)b));
            acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(dv, dx), _mm512_cvtepi32_ps(isum), acc[k]);
        }
    }
    for (int k = 0; k < T; k++)
        _mm512_mask_storeu_ps(j->y + (size_t)(t0 + k) * n_out + rb, live, acc[k]);
}

/* K-quant row groups x token groups of K_TG, then the rest. kind: 0 = Q4_K, 1 = Q6_K, 2 = Q5_K. */
#define KG(t, nt) (kind == 1 ? q6k_group(j, &g, rb, re, t, nt) : q4k_group(j, &g, rb, re, t, nt, kind == 2))
AI void kquant_rows(const mm_job *j, int r0, int r1, const int kind)
{
    _Static_assert(K_TG == 4, "MM_TOKENS_BY_4");
    const mm_packed_geom g = mm_packed_geom_of(j->w);
    for (int rb = r0; rb < r1; rb += 16) {
        const int re = rb + 16 < r1 ? rb + 16 : r1;
        MM_TOKENS_BY_4(j->n_tok, KG);
    }
}
#undef KG
static void rows_q4_k(const mm_job *j, int r0, int r1) { kquant_rows(j, r0, r1, 0); }
static void rows_q6_k(const mm_job *j, int r0, int r1) { kquant_rows(j, r0, r1, 1); }
static void rows_q5_k(const mm_job *j, int r0, int r1) { kquant_rows(j, r0, r1, 2); }

/* Row groups x token groups of 8, then one group of 1-7 (8 accumulators stay in
   registers; 16 were spilled and measured 3-7 % slower). */
#define ROWS_LOOP(KIND)                                                         \
    const mm_packed_geom g = mm_packed_geom_of(j->w);                           \
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {                            \
        const int re = rb + MM_ROW_BLOCK < r1 ? rb + MM_ROW_BLOCK : r1;         \
        _Static_assert(MM_ROW_BLOCK == 16, "weights are packed per 16 rows");   \
        MM_TOKENS_BY_8(j->n_tok, GCALL_##KIND);                                 \
    }

#define GCALL_0(t, n) group(j, &g, rb, re, t, n, 0)
#define GCALL_1(t, n) group(j, &g, rb, re, t, n, 1)
#define GCALL_2(t, n) group(j, &g, rb, re, t, n, 2)

static void rows_q4_1(const mm_job *j, int r0, int r1) { ROWS_LOOP(0) }
static void rows_q4_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(1) }
static void rows_q8_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(2) }

/* Packed Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K only; matmul.c sends everything else to the AVX2 kernels. */
const mm_impl arb_mm_avx512 = {
    .name = "avx512vnni",
    .q4_0 = rows_q4_0, .q4_1 = rows_q4_1, .q8_0 = rows_q8_0, .q4_k = rows_q4_k, .q5_k = rows_q5_k, .q6_k = rows_q6_k,
};

ARB_ISA_SECTION_END
#else
const mm_impl arb_mm_avx512 = {.name = "avx512vnni"}; /* not x86-64: never selected */
#endif
