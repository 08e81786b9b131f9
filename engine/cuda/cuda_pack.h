/* cuda_pack.h — the packed layout of the decode GEMV (cuda_kernels.cu), one definition
 * for the device (pack_kernel runs it per (row, chunk, lane) at upload) and the host
 * (cuda_host.c: arb_cuda_pack_row, arb_cuda_packed_value), so the layout is unit-tested
 * on machines without a GPU.
 *
 * A row of n_in elements is cut into chunks of ARB_PACK_CHUNK = 1024 (32 blocks of 32;
 * the last chunk padded with zero quants and scales). Lane L (0..31) of chunk c owns the
 * elements e(i, j) = 1024 c + 128 i + 4 L + j, i = 0..7, j = 0..3:
 *   - 4-bit (Q4_0, Q4_1): quant bytes of chunk c = 32 lanes x 16 bytes; lane L's word j
 *     (bytes 16 L + 4 j ..) holds q(e(i, j)) in bits 4i..4i+3 (the nibble as stored);
 *   - Q8_0: 32 lanes x 32 bytes as two halves of 512: word j of half h (bytes
 *     512 h + 16 L + 4 j ..) holds q(e(4h + k, j)) + 128 in byte k;
 *   - scales of chunk c: 32 entries of scale_bytes (2: d; Q4_1 4: d then m), entry L is
 *     block 32 c + L's (the GGUF block's leading bytes).
 * Plain C11 and CUDA: ARB_PACK_HD marks the functions for both.
 */
#ifndef ARB_CUDA_PACK_H
#define ARB_CUDA_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#ifdef __CUDACC__
#define ARB_PACK_HD __host__ __device__ __forceinline__
#else
#define ARB_PACK_HD static inline
#endif

#define ARB_PACK_CHUNK 1024

/* Chunks of a packed row of n_in elements (the last one padded). */
ARB_PACK_HD int arb_pack_chunks(int n_in) { return (n_in + ARB_PACK_CHUNK - 1) / ARB_PACK_CHUNK; }

/* Chunk c, lane `lane` of one row: the lane's quant words (q8: 8 words, else 4; w[4h + j]
   is word j of half h) and its scale entry (scale_bytes bytes at sc). row: the GGUF
   blocks (block_bytes each: scale_bytes of scales, then the quants). */
ARB_PACK_HD void arb_pack_lane(const uint8_t *row, int n_in, int block_bytes, int scale_bytes, int q8, int c,
                               int lane, uint32_t *w, uint8_t *sc)
{
    const int blk = c * 32 + lane;
    for (int k = 0; k < scale_bytes; k++)
        sc[k] = blk * 32 < n_in ? row[(size_t)blk * block_bytes + k] : 0;
    for (int k = 0; k < 8; k++)
        w[k] = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            const int e = c * ARB_PACK_CHUNK + 128 * i + 4 * lane + j;
            uint32_t q = 0;
            if (e < n_in) {
                const uint8_t *b = row + (size_t)(e / 32) * block_bytes + scale_bytes; /* the block's quants */
                const int t = e % 32;
                q = q8 ? (uint32_t)(uint8_t)(b[t] ^ 0x80) : (uint32_t)(t < 16 ? b[t] & 0xf : b[t - 16] >> 4);
            }
            if (q8)
                w[j + 4 * (i / 4)] |= q << (8 * (i % 4));
            else
                w[j] |= q << (4 * i);
        }
}

/* Where lane `lane`'s word j of half h goes in chunk c's quant bytes. */
ARB_PACK_HD size_t arb_pack_word_offset(int lane, int h, int j) { return (size_t)(512 * h + 16 * lane + 4 * j); }

/* arb_pack_lane's words into the chunk's quant bytes (chunk_q: 512 or, Q8_0, 1024 bytes). */
ARB_PACK_HD void arb_pack_store_lane(uint8_t *chunk_q, int lane, int q8, const uint32_t *w)
{
    for (int h = 0; h < (q8 ? 2 : 1); h++)
        for (int j = 0; j < 4; j++)
            memcpy(chunk_q + arb_pack_word_offset(lane, h, j), &w[4 * h + j], 4);
}

/* ---- The int8 layout (ARBOR_CUDA_GEMV=dp4a): the same chunks, scale entries and word
 * offsets (arb_pack_store_lane), but lane L's words hold block 32 c + L's own quants in
 * their GGUF order: 4-bit, word j = quant bytes 4j..4j+3 (low nibbles: elements 4j..4j+3
 * of the block, high nibbles: 16 + 4j..); Q8_0, word j of half h = quant bytes 16h + 4j..
 * (signed, as stored). A lane then owns one whole block, and its dot with the block of
 * activations quantized to int8 (arb_q8x_quant_block) is eight dp4a's and one scale. */
ARB_PACK_HD void arb_pack_lane_q8x(const uint8_t *row, int n_in, int block_bytes, int scale_bytes, int q8, int c,
                                   int lane, uint32_t *w, uint8_t *sc)
{
    const int blk = c * 32 + lane, real = blk * 32 < n_in;
    for (int k = 0; k < scale_bytes; k++)
        sc[k] = real ? row[(size_t)blk * block_bytes + k] : 0;
    for (int k = 0; k < 8; k++)
        w[k] = 0;
    if (!real)
        return;
    const uint8_t *b = row + (size_t)blk * block_bytes + scale_bytes;
    for (int k = 0; k < (q8 ? 8 : 4); k++)
        w[k] = (uint32_t)b[4 * k] | (uint32_t)b[4 * k + 1] << 8 | (uint32_t)b[4 * k + 2] << 16 |
               (uint32_t)b[4 * k + 3] << 24;
}

/* Four signed byte products summed into c: the device's __dp4a, emulated on the host. */
ARB_PACK_HD int arb_dp4a(uint32_t a, uint32_t b, int c)
{
#ifdef __CUDA_ARCH__
    return __dp4a((int)a, (int)b, c);
#else
    for (int k = 0; k < 4; k++)
        c += (int)(int8_t)(uint8_t)(a >> (8 * k)) * (int)(int8_t)(uint8_t)(b >> (8 * k));
    return c;
#endif
}

/* One block's integer dot: lane words w (the int8 layout) with the activation block's
   eight words xw (elements 4k..4k+3 in word k): the stored quants (0..15 for the 4-bit
   types, signed for Q8_0) times the int8 activations, exactly. */
ARB_PACK_HD int arb_q8x_block_isum(const uint32_t *w, const uint32_t *xw, int q8)
{
    int s = 0;
    if (q8) {
        for (int k = 0; k < 8; k++)
            s = arb_dp4a(w[k], xw[k], s);
    } else {
        for (int j = 0; j < 4; j++) {
            s = arb_dp4a(w[j] & 0x0f0f0f0fu, xw[j], s);
            s = arb_dp4a((w[j] >> 4) & 0x0f0f0f0fu, xw[4 + j], s);
        }
    }
    return s;
}

/* The block's share of the row's dot, added in the order the device adds it, which is
   the CPU kernels' per-block expression (matmul.c dot_q4_0/q4_1/q8_0): acc += (dw dx)
   isum' with isum' = isum - 8 xsum for Q4_0; Q4_1 adds mw (dx xsum) to accm apart.
   type: 0 Q4_0, 1 Q4_1, 2 Q8_0; dw, mw: the weight block's scales as floats; dx, xsum:
   the activation block's scale and integer sum. */
ARB_PACK_HD void arb_q8x_block_acc(int type, int isum, float dw, float mw, float dx, int xsum, float *acc,
                                   float *accm)
{
    if (type == 0)
        isum -= 8 * xsum;
    *acc = fmaf(dw * dx, (float)isum, *acc);
    if (type == 1)
        *accm = fmaf(mw, dx * (float)xsum, *accm);
}

/* One block of 32 activations (n_valid 32, or 0 for padding) to int8 as the CPU
   quantizes them (matmul.c arb_mm_quant_scalar): d = max |x| / 127, q = x * (1/d)
   rounded half to even, clamped to +-127; the words xw (4 per word, element order), d
   and the integer sum. The device's warp version (k_quant_q8) does the same IEEE
   operations, the max and the sum by shuffles (both exact). */
ARB_PACK_HD void arb_q8x_quant_block(const float *x, int n_valid, uint32_t *xw, float *d, int *isum)
{
    float amax = 0.0f;
    for (int i = 0; i < n_valid; i++) {
        const float a = fabsf(x[i]);
        amax = a > amax ? a : amax;
    }
    const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    int s = 0;
    for (int k = 0; k < 8; k++)
        xw[k] = 0;
    for (int i = 0; i < n_valid; i++) {
        int v = (int)rintf(x[i] * id);
        v = v > 127 ? 127 : v < -127 ? -127 : v;
        s += v;
        xw[i / 4] |= (uint32_t)(uint8_t)(int8_t)v << (8 * (i % 4));
    }
    *d = db;
    *isum = s;
}


/* ---- The tree kernel's tensor-core tiles (cuda_kernels.cu tree_q8x_kernel) ----
 * mma.sync.m16n8k32.row.col.s32.s8.s8.s32 multiplies a 16 x 32 int8 tile A (16 weight rows,
 * one block of 32 elements) by a 32 x 8 tile B (the same block of 8 nodes' int8 activations)
 * into 16 x 8 int32 block sums, exactly the integers arb_q8x_block_isum gives. PTX ISA
 * fragment layout, thread (g = lane / 4, t = lane % 4):
 *   A: a0 = row g, elements 4t..4t+3; a1 = row g + 8, the same; a2 = row g, 16 + 4t..;
 *      a3 = row g + 8, 16 + 4t..;  B: b0 = node g, elements 4t..4t+3; b1 = node g, 16 + 4t..;
 *   D: d0 = (row g, node 2t), d1 = (g, 2t + 1), d2 = (g + 8, 2t), d3 = (g + 8, 2t + 1).
 * In the int8 layout, a row's block words are: 4-bit, word t holds elements 4t..4t+3 (low
 * nibbles) and 16 + 4t.. (high nibbles); Q8_0, word t of half h holds 16h + 4t... So a
 * thread's A words come from word t of rows g and g + 8 (Q8_0: of each half). */
ARB_PACK_HD void arb_mma_a_words(int q8, uint32_t row_g_w0, uint32_t row_g8_w0, uint32_t row_g_w1,
                                 uint32_t row_g8_w1, uint32_t *a)
{
    if (q8) { /* w0: word t of half 0, w1: of half 1 */
        a[0] = row_g_w0, a[1] = row_g8_w0, a[2] = row_g_w1, a[3] = row_g8_w1;
    } else { /* w0: word t of the block's 16 bytes; w1 unused */
        a[0] = row_g_w0 & 0x0f0f0f0fu, a[1] = row_g8_w0 & 0x0f0f0f0fu;
        a[2] = (row_g_w0 >> 4) & 0x0f0f0f0fu, a[3] = (row_g8_w0 >> 4) & 0x0f0f0f0fu;
    }
}

/* The fixed butterfly of the GEMV's warp_sum, lane 0's value, on 32 slot partials p (slot L
   = lane L): ((p0 + p16) + (p8 + p24)) + ..., level by level (xor 16, 8, 4, 2, 1). */
ARB_PACK_HD float arb_slot_butterfly(const float *p)
{
    float s[16];
    for (int l = 0; l < 16; l++)
        s[l] = p[l] + p[l + 16];
    for (int w = 8; w >= 1; w >>= 1)
        for (int l = 0; l < w; l++)
            s[l] = s[l] + s[l + w];
    return s[0];
}

/* The gate/up GEMV with its output quantized (ARBOR_CUDA_GLU=fused, cuda_kernels.cu,
   gemv_packed_glu_q8_kernel): block b computes output rows 32 b .. 32 b + 31, which are
   exactly the activation block b that the int8 GEMV of the down matrix reads, so the block
   can quantize them itself (k_quant_q8's work, one launch less per layer). Its W warps
   (32 / rows per warp) take rows in turn: warp w computes rows 32 b + w + W k. At one node a
   warp computes one row (1024 threads, 64 registers: gemv_packed_glu_kernel's 8 blocks of
   128), at 2-8 nodes two (512 threads, 128 registers: its 4 blocks of 128). */
ARB_PACK_HD int arb_glu_q8_rows_per_warp(int nt) { return nt == 1 ? 1 : 2; }
ARB_PACK_HD int arb_glu_q8_warps(int nt) { return 32 / arb_glu_q8_rows_per_warp(nt); }
/* Output row of warp w's k-th row in block b. */
ARB_PACK_HD int arb_glu_q8_row(int nt, int b, int w, int k) { return 32 * b + w + arb_glu_q8_warps(nt) * k; }
/* Blocks of a launch for n_out rows; the last one also zeroes the activation blocks
   [arb_glu_q8_blocks(n_out), ldb) of its nodes, the padding k_quant_q8 writes as zeros. */
ARB_PACK_HD int arb_glu_q8_blocks(int n_out) { return (n_out + 31) / 32; }

#endif
