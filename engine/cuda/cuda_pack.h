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

#endif
