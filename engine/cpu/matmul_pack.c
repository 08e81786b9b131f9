/* matmul_pack.c — the repacked weight layout read by the AVX-512 kernels.
 *
 * The AVX-512 kernel (matmul_avx512.c) computes 16 rows at once, one int32 lane
 * per row: for one block, 8 vpdpbusd of "bytes 4q..4q+3 of the block in row l's
 * lane l" against the token's 4 activation bytes 4q..4q+3 broadcast to all lanes.
 * From the GGUF layout each step would need a 16-row gather; packing does that
 * transposition once, at load time, so a group is 4 (Q4) or 8 (Q8) aligned 64-byte
 * loads plus one per scale vector, in the order the kernel streams them. The codes
 * and fp16 scales are the GGUF's, moved, and the codes unsigned: Q4 nibbles as
 * stored (0..15), Q8_0 codes + 128 (the kernel's vpdpbusd multiplies unsigned weight
 * bytes by the signed activation codes; the activation carries the matching
 * correction, -8 or -128 times its block sum, matmul_int.h). One group per 16 rows
 * and block, groups ordered by row group, then block (64-byte aligned, cb + 64 bytes):
 *     codes   cb = 256 (Q4_0/Q4_1) or 512 (Q8_0): step q (64 bytes) holds bytes
 *             4q..4q+3 of row l's block in bytes 4l..4l+3. For Q4 the bytes are
 *             the GGUF's packed nibbles (low nibble = element 4q+i, high = 16+4q+i).
 *     scales  16 fp16 d, then 16 fp16 m (Q4_1) or zeros
 * Rows past n_out in the last group are zeros.
 *
 * Q4_K (read by the AVX2 row-lane kernel, matmul_avx2.c, in both families): a group
 * of 16 rows and one 256-block is two 8-row halves of MM_Q4K_HALF = 1184 bytes, the
 * block's 6-bit scales and mins decoded once here (ggml's get_scale_min_k4):
 *     codes   1024: for c = 0..3, q = 0..7, 32 bytes at (8c + q) * 32 holding bytes
 *             32c + 4q .. + 3 of row l's qs in bytes 4l..4l+3 (low nibbles: sub-block
 *             2c, elements 4q..; high nibbles: sub-block 2c + 1)
 *     scales  64 at 1024: byte 8s + l = scale of sub-block s of row l
 *     mins    64 at 1088: byte 16p + 2l + e = min of sub-block 2p + e of row l (pairs,
 *             so that one widening gives the int16 pairs of a madd)
 *     d, dmin 8 fp16 each at 1152 and 1168.
 * Q5_K: the same 1184 bytes, then its fifth bits in 256 more (MM_Q5K_HALF = 1440): for
 *     q = 0..7, 32 bytes at 1184 + 32q holding bytes 4q..4q+3 of row l's qh in bytes
 *     4l..4l+3 (bit s: the 16 of element 4q.. of sub-block s).
 *
 * Q6_K (the same kernels' row lanes): two 8-row halves of MM_Q6K_HALF = 1728 bytes per
 * 16 rows and block, the GGUF bytes moved (1680 of 1728 used):
 *     low plane  1024: for n = 0..1, q = 0..15, 32 bytes at (16n + q) * 32 holding bytes
 *                64n + 4q .. + 3 of row l's ql in bytes 4l..4l+3 (low nibbles: the low 4
 *                bits of elements 128n + 4q.., high nibbles: of 128n + 64 + 4q..)
 *     high plane 512 at 1024: for n, q' = 0..7, 32 bytes at 1024 + (8n + q') * 32 holding
 *                bytes 32n + 4q' .. + 3 of row l's qh (bits 2k..2k+1: the top 2 bits of
 *                elements 128n + 32k + 4q'..)
 *     scales     128 at 1536: byte 16p + 2l + e = scale 2p + e of row l (int8, pairs)
 *     d          8 fp16 at 1664.
 */
#include <string.h>

#include "matmul_int.h"

size_t arb_matmul_pack_bytes(const arb_qmat *w)
{
    const mm_packed_geom g = mm_packed_geom_of(w);
    if (!g.cb)
        return 0;
    return (size_t)((w->n_out + 15) / 16) * (size_t)g.nb * mm_packed_group_bytes(&g);
}

/* Block blk's codes into lane l of the group at cp (Q8_0 made unsigned). */
static void put_codes(const mm_packed_geom *g, uint32_t type, const uint8_t *blk, uint8_t *cp, int l)
{
    const uint8_t *q = blk + (type == ARB_TYPE_Q4_1 ? 4 : 2);
    for (int s = 0; s < g->cb / 64; s++) /* Q4: packed bytes 4s..4s+3; Q8: codes 4s.. */
        for (int i = 0; i < 4; i++)
            cp[64 * s + 4 * l + i] = type == ARB_TYPE_Q8_0 ? (uint8_t)(q[4 * s + i] ^ 0x80u) : q[4 * s + i];
}

/* Q4_K / Q5_K: row r's blocks into lane r % 8 of their halves (layout above). The two
   block types share d, dmin, scales and qs; Q5_K adds qh. */
static void pack_q4_k(const arb_qmat *w, const mm_packed_geom *g, void *dst, int r0, int r1)
{
    const size_t gb = mm_packed_group_bytes(g);
    const int q5 = w->type == ARB_TYPE_Q5_K;
    const size_t half = q5 ? MM_Q5K_HALF : MM_Q4K_HALF, bsz = q5 ? 176 : 144;
    for (int r = r0; r < r1; r++) {
        const uint8_t *rowp = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        const int l = r % 8;
        for (int b = 0; b < g->nb; b++) {
            const uint8_t *blk = rowp + (size_t)b * bsz;
            arb_block_q4_k hdr; /* d, dmin, scales (the first 16 bytes of either type) */
            memcpy(&hdr, blk, 16);
            const uint8_t *qs = blk + (q5 ? 48 : 16);
            uint8_t *hp = (uint8_t *)dst + ((size_t)(r / 16) * g->nb + b) * gb + (size_t)((r / 8) % 2) * half;
            for (int c = 0; c < 4; c++)
                for (int q = 0; q < 8; q++)
                    memcpy(hp + (8 * c + q) * 32 + 4 * l, qs + 32 * c + 4 * q, 4);
            if (q5)
                for (int q = 0; q < 8; q++)
                    memcpy(hp + 1184 + 32 * q + 4 * l, blk + 16 + 4 * q, 4);
            for (int s = 0; s < 8; s++) {
                uint8_t sc, mn;
                mm_q4k_scale_min(s, hdr.scales, &sc, &mn);
                hp[1024 + 8 * s + l] = sc;
                hp[1088 + 16 * (s / 2) + 2 * l + s % 2] = mn;
            }
            memcpy(hp + 1152 + 2 * l, &hdr.d, 2);
            memcpy(hp + 1168 + 2 * l, &hdr.dmin, 2);
        }
    }
}

/* Q6_K: row r's blocks into lane r % 8 of their halves (layout above). */
static void pack_q6_k(const arb_qmat *w, const mm_packed_geom *g, void *dst, int r0, int r1)
{
    const size_t gb = mm_packed_group_bytes(g);
    for (int r = r0; r < r1; r++) {
        const arb_block_q6_k *row = (const arb_block_q6_k *)((const uint8_t *)w->data + (size_t)r * w->row_bytes);
        const int l = r % 8;
        for (int b = 0; b < g->nb; b++) {
            uint8_t *hp = (uint8_t *)dst + ((size_t)(r / 16) * g->nb + b) * gb + (size_t)((r / 8) % 2) * MM_Q6K_HALF;
            for (int n = 0; n < 2; n++) {
                for (int q = 0; q < 16; q++)
                    memcpy(hp + (16 * n + q) * 32 + 4 * l, row[b].ql + 64 * n + 4 * q, 4);
                for (int q = 0; q < 8; q++)
                    memcpy(hp + 1024 + (8 * n + q) * 32 + 4 * l, row[b].qh + 32 * n + 4 * q, 4);
            }
            for (int gi = 0; gi < 16; gi++)
                hp[1536 + 16 * (gi / 2) + 2 * l + gi % 2] = (uint8_t)row[b].scales[gi];
            memcpy(hp + 1664 + 2 * l, &row[b].d, 2);
        }
    }
}

void arb_matmul_pack_groups(const arb_qmat *w, void *dst, int g0, int g1)
{
    const mm_packed_geom g = mm_packed_geom_of(w);
    const size_t gb = mm_packed_group_bytes(&g);
    const int r0 = 16 * g0, r1 = 16 * g1 < w->n_out ? 16 * g1 : w->n_out;
    /* the groups' bytes first: rows past n_out in the last group stay zero */
    memset((uint8_t *)dst + (size_t)g0 * g.nb * gb, 0, (size_t)(g1 - g0) * g.nb * gb);
    if (w->type == ARB_TYPE_Q4_K || w->type == ARB_TYPE_Q5_K) {
        pack_q4_k(w, &g, dst, r0, r1);
        return;
    }
    if (w->type == ARB_TYPE_Q6_K) {
        pack_q6_k(w, &g, dst, r0, r1);
        return;
    }
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        const int l = r % 16;
        for (int b = 0; b < g.nb; b++) {
            const uint8_t *blk = row + (size_t)b * g.bsz;
            uint8_t *gp = (uint8_t *)dst + ((size_t)(r / 16) * g.nb + b) * gb;
            put_codes(&g, w->type, blk, gp, l);
            memcpy(gp + g.cb + 2 * l, blk, 2); /* d */
            if (w->type == ARB_TYPE_Q4_1)
                memcpy(gp + g.cb + 32 + 2 * l, blk + 2, 2); /* m */
        }
    }
}

void arb_matmul_pack(const arb_qmat *w, void *dst) { arb_matmul_pack_groups(w, dst, 0, (w->n_out + 15) / 16); }
