/* matmul_int.h — internals shared by matmul.c and the per-ISA kernel files
 * (matmul_avx2.c, matmul_avx512.c). Not part of the engine API.
 *
 * Quantized activation row (one per token, `stride` bytes apart in work):
 *     int8_t  qs[n_in]        at 0              q = round_half_even(x / d)
 *     float   d[n_in / B]     at off_d          d = max|x| / 127 over the block
 *     int32_t isum[n_in / G]  at off_isum       sum of q over each group of G
 *     float   fsum[n_in / B]  at off_fsum       d * (sum of q over the block), B = 32 only
 *     int32_t corr[n_in / B]  at off_corr       B = 32 only, for the AVX-512 kernels on packed
 *                             Q4_0/Q8_0 weights: -C * (sum of q over the block), C = 8 / 128
 *     int16_t s16[n_in / 16]  at off_s16        B = 256 only: isum again as int16 (|sum| <= 2032)
 *     int16_t s32[n_in / 32]  at off_s32        B = 256 only: sums of q over each 32 elements,
 *                             int16 (|sum| <= 4064): the row-lane K-quant kernels read pairs of
 *                             them as one int32 broadcast for a madd against the rows' mins
 * For B = 32, d, isum and fsum are padded with zeros to nb16 = ceil(nb/16)*16 blocks,
 * so a kernel may read a whole vector or pair of blocks past the end.
 * B = 32, G = 32 for Q4_0/Q4_1/Q8_0 weights (the Q8_0 scheme, scale kept in f32);
 * B = 256, G = 16 for Q4_K/Q6_K weights (the Q8_K scheme). F32/F16 weights read x.
 *
 * A kernel computes rows [r0, r1) for every token. The batch-invariance rule for
 * kernel writers: the float operations applied to the (row, token) pair must be
 * the same sequence whatever n_tok is and whichever token group the pair falls in.
 */
#ifndef ARB_MATMUL_INT_H
#define ARB_MATMUL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "../quant.h"
#include "matmul.h"

typedef struct mm_layout {
    int B, G;         /* scale block and sum group, in elements; 0 = raw f32 activations */
    size_t off_d;     /* byte offsets inside one activation row */
    size_t off_isum;
    size_t off_fsum;
    size_t off_corr;
    size_t off_s16;   /* B = 256 only (0 otherwise) */
    size_t off_s32;
    size_t stride;    /* bytes per activation row (multiple of 64) */
} mm_layout;

typedef struct mm_job {
    const arb_qmat *w;
    const float *x;       /* n_tok x n_in (F32/F16 weights read it directly) */
    const uint8_t *act;   /* n_tok quantized rows, lay.stride apart */
    mm_layout lay;
    int n_tok;
    float *y;             /* n_tok x n_out */
} mm_job;

typedef void (*mm_rows_fn)(const mm_job *j, int r0, int r1);

/* One kernel family. rows_* may be NULL: the scalar kernel is used for that type
   (a per-type choice, so it never depends on n_tok). */
typedef struct mm_impl {
    const char *name;
    mm_rows_fn q4_0, q4_1, q8_0, q4_k, q5_k, q6_k, f16, f32;
} mm_impl;

extern const mm_impl arb_mm_scalar;
extern const mm_impl arb_mm_avx2;
extern const mm_impl arb_mm_avx512;

/* SIMD activation quantizer (matmul_avx2.c): the same bytes as the scalar one for
   the real blocks (padding and corr are added by matmul.c). */
void arb_mm_quant_avx2(const float *x, int n_in, const mm_layout *l, uint8_t *dst);
void arb_mm_quant_scalar(const float *x, int n_in, const mm_layout *l, uint8_t *dst);
/* y[r0..r1) += c[r0..r1) * s, one product and one add per row (never fused): the same bits
   on every path. For arb_qmat.bconst (matmul.c). */
void arb_mm_axpy_avx2(float *y, const float *c, float s, int r0, int r1);
mm_layout arb_mm_layout(uint32_t type, int n_in); /* the layout arb_matmul uses */

/* Rows of the activation for token t. */
static inline const int8_t *mm_qs(const mm_job *j, int t) { return (const int8_t *)(j->act + (size_t)t * j->lay.stride); }
static inline const float *mm_d(const mm_job *j, int t) { return (const float *)(j->act + (size_t)t * j->lay.stride + j->lay.off_d); }
static inline const int32_t *mm_isum(const mm_job *j, int t) { return (const int32_t *)(j->act + (size_t)t * j->lay.stride + j->lay.off_isum); }
static inline const float *mm_fsum(const mm_job *j, int t) { return (const float *)(j->act + (size_t)t * j->lay.stride + j->lay.off_fsum); }

/* Q4_K packed 6-bit scale/min of sub-block k (0..7), as ggml's get_scale_min_k4. */
static inline void mm_q4k_scale_min(int k, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (k < 4) {
        *sc = q[k] & 63;
        *m = q[k + 4] & 63;
    } else {
        *sc = (uint8_t)((q[k + 4] & 0xF) | ((q[k - 4] >> 6) << 4));
        *m = (uint8_t)((q[k + 4] >> 4) | ((q[k] >> 6) << 4));
    }
}

/* Geometry of a packed matrix (matmul_pack.c, which documents the layouts):
   cb = code bytes of one group (16 rows x one block; 0: no packed form), gb = all its
   bytes, bsz = GGUF block bytes, nb blocks per row. */
typedef struct mm_packed_geom {
    int cb, gb, bsz, nb;
} mm_packed_geom;

static inline mm_packed_geom mm_packed_geom_of(const arb_qmat *w)
{
    mm_packed_geom g = {0};
    if (w->n_in % 32 || w->n_in <= 0)
        return g;
    if (w->type == ARB_TYPE_Q4_0)
        g = (mm_packed_geom){.cb = 256, .bsz = 18};
    else if (w->type == ARB_TYPE_Q4_1)
        g = (mm_packed_geom){.cb = 256, .bsz = 20};
    else if (w->type == ARB_TYPE_Q8_0)
        g = (mm_packed_geom){.cb = 512, .bsz = 34};
    else if (w->type == ARB_TYPE_Q4_K && w->n_in % 256 == 0) {
        /* two 8-row halves of MM_Q4K_HALF bytes: 1024 of codes, 64 of scales, 64 of mins, 32 of d/dmin */
        g = (mm_packed_geom){.cb = 2048, .gb = 2 * 1184, .bsz = 144, .nb = w->n_in / 256};
        return g;
    } else if (w->type == ARB_TYPE_Q5_K && w->n_in % 256 == 0) {
        /* Q4_K's half plus a 256-byte plane of fifth bits */
        g = (mm_packed_geom){.cb = 2048, .gb = 2 * 1440, .bsz = 176, .nb = w->n_in / 256};
        return g;
    } else if (w->type == ARB_TYPE_Q6_K && w->n_in % 256 == 0) {
        /* two 8-row halves of MM_Q6K_HALF bytes: 1024 + 512 of code planes, 128 of scales, 16 of d, padding */
        g = (mm_packed_geom){.cb = 3072, .gb = 2 * 1728, .bsz = 210, .nb = w->n_in / 256};
        return g;
    } else
        return g;
    g.gb = g.cb + 64; /* 32-blocks: codes, then 64 bytes of scales */
    g.nb = w->n_in / 32;
    return g;
}

/* Q4_K / Q5_K / Q6_K packed: bytes of one 8-row half of a group (matmul_pack.c). */
#define MM_Q4K_HALF 1184
#define MM_Q5K_HALF 1440
#define MM_Q6K_HALF 1728

/* Bytes of one group (16 rows x one block). */
static inline size_t mm_packed_group_bytes(const mm_packed_geom *g) { return (size_t)g->gb; }

/* Row-block height for batched tiling: rows whose weights stay in L1/L2 while a
   group of tokens streams over them. Changing it never changes results. */
#define MM_ROW_BLOCK 16

/* Software prefetches of weights a row group ahead go to L2 (_MM_HINT_T1), not L1, in the
   kernels that serve many tokens per pass over a group (AVX-512 row lanes of every type,
   the AVX2 packed Q4 halves) and in the AVX2 one-token Q8_0 tiles. Into L1 (T0) they
   evicted what the pass was reading: with 8-16 tokens the activations of a 1536-wide
   matrix (~25 KB) plus the current group and the prefetched one (~15 KB each) exceed a
   32 KB L1, and the L1's few miss buffers stalled the prefetch bursts themselves (perf:
   14 % of the Q8_0 head's samples on one prefetcht0). Measured on a Zen 4 EPYC, one
   thread, SmolLM2 Q4_1 (docs/engine.md, "Prefetching into L2"): the AVX-512 head at 8 /
   16 tokens 3.5 / 5.0 -> 1.7 / 3.1 ms, wide-tree evals at 8 nodes -20 %, the AVX2 one-node
   eval 8.5 -> 5.8 ms. The K-quant AVX2 halves and the AVX2 token lanes measured no gain
   (token lanes: a loss) and keep T0. A hint never changes a result. */

/* CALL(t, nt) over tokens 0..n_tok-1: groups of 8 (or 4), then one group of the rest, nt a
   constant in every call so an always-inline kernel unrolls its token loops. Which group a
   token falls in never changes its result (the batch-invariance rule above). */
#define MM_TOKEN_GROUPS_(n_tok, G, CALL, TAIL)                                         \
    do {                                                                               \
        int t_ = 0;                                                                    \
        for (; t_ + (G) <= (n_tok); t_ += (G))                                         \
            CALL(t_, G);                                                               \
        switch ((n_tok) - t_) {                                                        \
            TAIL(CALL)                                                                 \
        default: break;                                                                \
        }                                                                              \
    } while (0)
#define MM_TAIL_3_(CALL)                                                               \
    case 3: CALL(t_, 3); break;                                                        \
    case 2: CALL(t_, 2); break;                                                        \
    case 1: CALL(t_, 1); break;
#define MM_TAIL_7_(CALL)                                                               \
    case 7: CALL(t_, 7); break;                                                        \
    case 6: CALL(t_, 6); break;                                                        \
    case 5: CALL(t_, 5); break;                                                        \
    case 4: CALL(t_, 4); break;                                                        \
    MM_TAIL_3_(CALL)
#define MM_TOKENS_BY_8(n_tok, CALL) MM_TOKEN_GROUPS_(n_tok, 8, CALL, MM_TAIL_7_)
#define MM_TOKENS_BY_4(n_tok, CALL) MM_TOKEN_GROUPS_(n_tok, 4, CALL, MM_TAIL_3_)

#endif
