/* matmul_pack.c — the repacked weight layout read by the AVX-512 kernels.
 *
 * The AVX-512 kernel works on chunks of 16 blocks whose codes it wants transposed
 * ("step q holds bytes 4q..4q+3 of block l in int32 lane l", matmul_avx512.c).
 * From the GGUF layout that costs 16 loads, 12 inserts, 8 unpacks and a 16-lane
 * gather for the scales per chunk and row, more than the dot products themselves
 * when one token is evaluated. Packing does the transposition once, at load time:
 * a chunk is then 4 (Q4) or 8 (Q8) aligned 64-byte loads plus one per scale vector.
 * The codes and fp16 scales are the GGUF's, only moved. Regions, 64-byte aligned:
 *     codes   n_out x nch x cb     cb = 256 (Q4_0/Q4_1) or 512 (Q8_0), lanes = blocks
 *     scales  n_out x nch x 64     16 fp16 d, then 16 fp16 m (Q4_1) or zeros
 *     corr    n_out x nch x 64     Q4_0/Q8_0: 16 int32, -128 * sum of the block's codes
 *     tail    ceil(n_out/16) x nt groups of cb + 64 (+ 64): for 16 rows and one of the
 *             nb % 16 last blocks, codes with lanes = rows, then d, m and corr per row
 * nch = nb / 16 whole chunks of the nb = n_in / 32 blocks, nt = nb % 16. Rows past
 * n_out in the last group of 16 are zeros. With corr the kernel multiplies the
 * signed codes (Q8_0 as stored, Q4_0 as n - 8) by activations stored as q + 128
 * and starts each block's integer sum at corr: no per-token correction.
 */
#include <string.h>

#include "matmul_int.h"

size_t arb_matmul_pack_bytes(const arb_qmat *w)
{
    const mm_packed_geom g = mm_packed_geom_of(w);
    if (!g.cb)
        return 0;
    return mm_packed_tail_off(&g, w->n_out) + (size_t)((w->n_out + 15) / 16) * g.nt * mm_packed_tail_bytes(&g);
}

/* Block blk's codes into the transposed group at cp, lane l; returns the sum of
   its signed codes when corr needs it (Q4_0, Q8_0), else 0. */
static int32_t put_codes(const mm_packed_geom *g, uint32_t type, const uint8_t *blk, uint8_t *cp, int l)
{
    const uint8_t *q = blk + (type == ARB_TYPE_Q4_1 ? 4 : 2);
    for (int s = 0; s < g->cb / 64; s++) /* Q4: packed bytes 4s..4s+3; Q8: codes 4s.. */
        memcpy(cp + 64 * s + 4 * l, q + 4 * s, 4);
    int32_t sum = 0;
    if (type == ARB_TYPE_Q8_0)
        for (int i = 0; i < 32; i++)
            sum += (int8_t)q[i];
    else if (type == ARB_TYPE_Q4_0)
        for (int i = 0; i < 16; i++)
            sum += (q[i] & 0xF) + (q[i] >> 4) - 16;
    return sum;
}

static void put_scales(const arb_qmat *w, const uint8_t *blk, uint8_t *sp, int l)
{
    memcpy(sp + 2 * l, blk, 2); /* d */
    if (w->type == ARB_TYPE_Q4_1)
        memcpy(sp + 32 + 2 * l, blk + 2, 2); /* m */
}

void arb_matmul_pack(const arb_qmat *w, void *dst)
{
    const mm_packed_geom g = mm_packed_geom_of(w);
    const size_t n_out = (size_t)w->n_out, tb = mm_packed_tail_bytes(&g);
    uint8_t *codes = dst, *scales = codes + n_out * g.nch * g.cb, *corrb = scales + n_out * g.nch * 64;
    uint8_t *tail = (uint8_t *)dst + mm_packed_tail_off(&g, w->n_out);
    memset(dst, 0, arb_matmul_pack_bytes(w)); /* padding lanes and rows */
    for (int r = 0; r < w->n_out; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        for (int c = 0; c < g.nch; c++) {
            const size_t rc = (size_t)r * g.nch + c;
            for (int l = 0; l < 16; l++) {
                const uint8_t *blk = row + (size_t)(16 * c + l) * g.bsz;
                const int32_t sum = put_codes(&g, w->type, blk, codes + rc * g.cb, l);
                put_scales(w, blk, scales + rc * 64, l);
                if (g.corr)
                    ((int32_t *)(corrb + rc * 64))[l] = -128 * sum;
            }
        }
        for (int i = 0; i < g.nt; i++) {
            const uint8_t *blk = row + (size_t)(16 * g.nch + i) * g.bsz;
            uint8_t *tp = tail + ((size_t)(r / 16) * g.nt + i) * tb;
            const int32_t sum = put_codes(&g, w->type, blk, tp, r % 16);
            put_scales(w, blk, tp + g.cb, r % 16);
            if (g.corr)
                ((int32_t *)(tp + g.cb + 64))[r % 16] = -128 * sum;
        }
    }
}
