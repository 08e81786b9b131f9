/* matmul_avx512.c — the AVX-512 (F, BW, VL) + VNNI kernel family, on packed weights.
 *
 * It reads only the repacked copy of a matrix (arb_qmat.packed, matmul_pack.c);
 * a matrix without one goes to the AVX2 kernel (a per-matrix choice, matmul.c).
 *
 * Whole chunks (16 blocks, 512 elements): the chunk's codes are stored transposed,
 * step q holding bytes 4q..4q+3 of block l in int32 lane l, and the activation row
 * has the same interleaving (qsi, built by the quantizer), so 8 vpdpbusd leave the
 * exact integer dot product of block l in lane l — no horizontal reduction. Then,
 * per chunk and token, one convert, one scale multiply (16 weight scales x 16
 * activation scales) and one FMA into 16 float lanes (lane l accumulates blocks l,
 * l+16, ... in order), plus the Q4_1 min term m * (dx * sum q) by a second FMA.
 * Q4_1 multiplies unsigned codes by signed activations; Q4_0 (n - 8) and Q8_0 are
 * signed, so their activations are stored as q + 128 and each block's accumulator
 * starts at -128 * sum(codes), precomputed at packing. At the end the 16 lanes are
 * summed by a fixed tree.
 *
 * The last nb % 16 blocks of a row (2 of the 18 in a 576-wide row) are stored per
 * block for 16 rows at once, lanes = rows: 8 vpdpbusd against the token's codes
 * broadcast 4 bytes at a time give 16 rows' block sums, then the same
 * scale / convert / FMA per block into a per-(row, token) tail sum, added to the
 * chunk sum last: y = hsum(chunk lanes) + tail. As expensive per element as a whole
 * chunk, instead of ~6 times that when a tail block used lanes for its own codes.
 *
 * The float sequence for a (row, token) pair depends on n_in only; one pass over a
 * row's weights serves up to 16 tokens, each with its own accumulators and the same
 * instructions as when alone (the batch-invariance rule, matmul_int.h).
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

/* Where row r's pieces live in the packed copy (matmul_int.h, mm_packed_*). */
typedef struct pk_row {
    const uint8_t *codes, *scales, *corr; /* chunk c at + c * cb, + c * 64, + c * 64 */
} pk_row;

AI pk_row pk_of(const mm_job *j, const mm_packed_geom *g, int r)
{
    const uint8_t *pk = (const uint8_t *)j->w->packed;
    const size_t n_out = (size_t)j->w->n_out, rc = (size_t)r * (size_t)g->nch;
    return (pk_row){pk + rc * g->cb, pk + n_out * g->nch * g->cb + rc * 64,
                    pk + n_out * g->nch * (g->cb + 64) + rc * 64};
}

/* 8 code steps of one packed group (a chunk: lanes = blocks; a tail block: lanes = rows)
   into w[0..7], bytes to multiply with activation steps 0..7. */
AI void load_codes(const uint8_t *cp, const int kind, __m512i w[8])
{
    if (kind == 2) {
        for (int q = 0; q < 8; q++)
            w[q] = _mm512_load_si512((const void *)(cp + 64 * q));
        return;
    }
    const __m512i nib = _mm512_set1_epi8(0x0F), off = _mm512_set1_epi8(kind == 1 ? 8 : 0); /* Q4_0: n - 8 */
    for (int q = 0; q < 4; q++) {
        const __m512i T = _mm512_load_si512((const void *)(cp + 64 * q));
        w[q] = _mm512_sub_epi8(_mm512_and_si512(T, nib), off);
        w[4 + q] = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi32(T, 4), nib), off);
    }
}

/* acc + w . x per lane: Q4_1 w unsigned x signed; Q4_0/Q8_0 x unsigned (q + 128). */
AI __m512i dpb(const int kind, __m512i acc, __m512i w, __m512i x)
{
    return kind != 0 ? _mm512_dpbusd_epi32(acc, x, w) : _mm512_dpbusd_epi32(acc, w, x);
}

/* kind: 0 = Q4_1, 1 = Q4_0, 2 = Q8_0. y for row r, tokens t0..t0+NT: the whole chunks. */
AI void kern(const mm_job *j, const mm_packed_geom *g, int r, int t0, const int NT, const int kind)
{
    const pk_row pr = pk_of(j, g, r);
    const uint8_t *a0 = j->act + (size_t)t0 * j->lay.stride; /* token k: a0 + k * st */
    const size_t st = j->lay.stride;
    __m512 acc[NT_MAX];
    for (int k = 0; k < NT; k++)
        acc[k] = _mm512_setzero_ps();
    for (int c = 0; c < g->nch; c++) {
        __m512i w[8];
        load_codes(pr.codes + (size_t)c * g->cb, kind, w);
        const uint8_t *sp = pr.scales + (size_t)c * 64;
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)sp));
        const __m512 mw = kind == 0 ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sp + 32))) : dw;
        const __m512i init = kind != 0 ? _mm512_load_si512((const void *)(pr.corr + (size_t)c * 64))
                                       : _mm512_setzero_si512();
        const size_t oq = j->lay.off_qsi + (size_t)c * 512, od = j->lay.off_d + (size_t)c * 64;
        const size_t of = j->lay.off_fsum + (size_t)c * 64;
        for (int k = 0; k < NT; k++) {
            const uint8_t *ak = a0 + (size_t)k * st, *x = ak + oq;
#define XS(q) _mm512_load_si512((const void *)(x + 64 * (q)))
            __m512i s;
            if (NT >= 4) { /* other tokens hide the latency of one chain of 8 */
                s = dpb(kind, init, w[0], XS(0));
                for (int q = 1; q < 8; q++)
                    s = dpb(kind, s, w[q], XS(q));
            } else { /* alone, one chain of 8 dependent vpdpbusd is latency-bound */
                __m512i s1 = dpb(kind, _mm512_setzero_si512(), w[4], XS(4));
                s = dpb(kind, init, w[0], XS(0));
                for (int q = 1; q < 4; q++) {
                    s = dpb(kind, s, w[q], XS(q));
                    s1 = dpb(kind, s1, w[4 + q], XS(4 + q));
                }
                s = _mm512_add_epi32(s, s1); /* integer: the split changes nothing */
            }
#undef XS
            const __m512 sc = _mm512_mul_ps(dw, _mm512_load_ps((const float *)(ak + od)));
            acc[k] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s), acc[k]);
            if (kind == 0)
                acc[k] = _mm512_fmadd_ps(mw, _mm512_load_ps((const float *)(ak + of)), acc[k]);
        }
    }
    if (NT < 4) {
        for (int k = 0; k < NT; k++)
            j->y[(size_t)(t0 + k) * j->w->n_out + r] = _mm_cvtss_f32(hsum16(acc[k]));
    } else {
        store_hsums(acc, NT, j->y + (size_t)t0 * j->w->n_out + r, j->w->n_out);
    }
}

/* Tail blocks of rows rb..rb+15 (rb a multiple of 16) for tokens t0..t0+NT, added to
   y: per (row, token) tail = sum over tail blocks i in order of
   fma(dw * dx, s, .) [and fma(m, fs, .)], from 0; then y += tail. */
AI void tail(const mm_job *j, const mm_packed_geom *g, int rb, int re, int t0, const int NT, const int kind)
{
    const size_t n_out = (size_t)j->w->n_out, tb = mm_packed_tail_bytes(g);
    const uint8_t *base = (const uint8_t *)j->w->packed + mm_packed_tail_off(g, j->w->n_out) +
                          (size_t)(rb / 16) * g->nt * tb;
    const __mmask16 live = (__mmask16)((1u << (re - rb)) - 1u);
    const uint8_t *a0 = j->act + (size_t)t0 * j->lay.stride;
    const size_t st = j->lay.stride, b0 = (size_t)16 * g->nch;
    __m512 tacc[NT_MAX];
    for (int k = 0; k < NT; k++)
        tacc[k] = _mm512_setzero_ps();
    for (int i = 0; i < g->nt; i++) {
        const uint8_t *p = base + (size_t)i * tb;
        __m512i w[8];
        load_codes(p, kind, w);
        const uint8_t *sp = p + g->cb;
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)sp));
        const __m512 mw = kind == 0 ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sp + 32))) : dw;
        const __m512i init = kind != 0 ? _mm512_load_si512((const void *)(sp + 64)) : _mm512_setzero_si512();
        /* the token's tail block codes, in element order (qsi after the whole chunks) */
        const size_t oq = j->lay.off_qsi + (size_t)g->nch * 512 + (size_t)i * 32;
        const size_t od = j->lay.off_d + (b0 + i) * 4, of = j->lay.off_fsum + (b0 + i) * 4;
        for (int k = 0; k < NT; k++) {
            const uint8_t *ak = a0 + (size_t)k * st, *x = ak + oq;
            /* step q of a Q4 block: elements 4q..4q+3 (low nibbles) and 16+4q.. (high);
               of a Q8 block: elements 4q..4q+3 */
#define XB(e) _mm512_set1_epi32(*(const int32_t *)(x + (e)))
            __m512i s = dpb(kind, init, w[0], XB(0));
            __m512i s1 = dpb(kind, _mm512_setzero_si512(), w[4], XB(16));
            for (int q = 1; q < 4; q++) {
                s = dpb(kind, s, w[q], XB(4 * q));
                s1 = dpb(kind, s1, w[4 + q], XB(16 + 4 * q));
            }
#undef XB
            s = _mm512_add_epi32(s, s1);
            const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(*(const float *)(ak + od)));
            tacc[k] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s), tacc[k]);
            if (kind == 0)
                tacc[k] = _mm512_fmadd_ps(mw, _mm512_set1_ps(*(const float *)(ak + of)), tacc[k]);
        }
    }
    for (int k = 0; k < NT; k++) {
        float *y = j->y + (size_t)(t0 + k) * n_out + rb;
        _mm512_mask_storeu_ps(y, live, _mm512_add_ps(_mm512_maskz_loadu_ps(live, y), tacc[k]));
    }
}

/* Row blocks x token groups of 16, then 8, then one group of 1-7; then the tail. */
#define FOR_TOKEN_GROUPS(CALL)                                                  \
    do {                                                                        \
        int t = 0;                                                              \
        for (; t + 16 <= j->n_tok; t += 16)                                     \
            CALL(t, 16);                                                        \
        if (t + 8 <= j->n_tok) {                                                \
            CALL(t, 8);                                                         \
            t += 8;                                                             \
        }                                                                       \
        switch (j->n_tok - t) {                                                 \
        case 7: CALL(t, 7); break;                                              \
        case 6: CALL(t, 6); break;                                              \
        case 5: CALL(t, 5); break;                                              \
        case 4: CALL(t, 4); break;                                              \
        case 3: CALL(t, 3); break;                                              \
        case 2: CALL(t, 2); break;                                              \
        case 1: CALL(t, 1); break;                                              \
        default: break;                                                         \
        }                                                                       \
    } while (0)

#define ROWS_LOOP(KIND)                                                         \
    const mm_packed_geom g = mm_packed_geom_of(j->w);                           \
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {                            \
        const int re = rb + MM_ROW_BLOCK < r1 ? rb + MM_ROW_BLOCK : r1;         \
        _Static_assert(MM_ROW_BLOCK == 16, "tails are packed per 16 rows");     \
        if (g.nch)                                                              \
            FOR_TOKEN_GROUPS(KCALL_##KIND);                                     \
        if (g.nt)                                                               \
            FOR_TOKEN_GROUPS(TCALL_##KIND);                                     \
    }

#define KCALL(t, n, KIND) for (int r = rb; r < re; r++) kern(j, &g, r, t, n, KIND)
#define KCALL_0(t, n) KCALL(t, n, 0)
#define KCALL_1(t, n) KCALL(t, n, 1)
#define KCALL_2(t, n) KCALL(t, n, 2)
#define TCALL_0(t, n) tail(j, &g, rb, re, t, n, 0)
#define TCALL_1(t, n) tail(j, &g, rb, re, t, n, 1)
#define TCALL_2(t, n) tail(j, &g, rb, re, t, n, 2)

static void rows_q4_1(const mm_job *j, int r0, int r1) { ROWS_LOOP(0) }
static void rows_q4_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(1) }
static void rows_q8_0(const mm_job *j, int r0, int r1) { ROWS_LOOP(2) }

/* Packed Q4_0/Q4_1/Q8_0 only; matmul.c sends everything else to the AVX2 kernels. */
const mm_impl arb_mm_avx512 = {
    .name = "avx512vnni",
    .q4_0 = rows_q4_0, .q4_1 = rows_q4_1, .q8_0 = rows_q8_0,
};

#else
const mm_impl arb_mm_avx512 = {.name = "avx512vnni"}; /* not x86-64: never selected */
#endif
