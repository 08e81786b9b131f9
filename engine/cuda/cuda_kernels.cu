// cuda_kernels.cu — the device kernels of the CUDA forward, each the counterpart of
// a CPU kernel (engine/cpu/backend_cpu.c, engine/cpu/matmul.c, engine/quant.c).
//
// Exactness rule, as on the CPU: every reduction runs in an order that depends only
// on the vector length (row length, key-list length), never on how many nodes share
// the launch. Blocks and warps reduce with fixed butterflies and a fixed sequential
// combine; no atomic adds of floats (the fused attention merge's integer ticket only picks
// which block merges), no split-K. The int8 GEMV and tree kernel quantize activations
// as the CPU backend does (its per-block integers, another float summation order); the
// float GEMVs multiply dequantized floats. Either way a node's result is the same alone
// or inside any tree. The attention kernels are in cuda_attention.cu, the helpers both files
// use (launch, reductions, int8 quantization) in cuda_dev.h.
#include <type_traits>
#include <utility>

#include "cuda_int.h"

#include "../quant.h"
#include "cuda_attn.h"
#include "cuda_dev.h"
#include "cuda_pack.h"

namespace {

constexpr int kWarp = 32;


__device__ __forceinline__ float h2f(uint16_t u) { return __half2float(__ushort_as_half(u)); }
__device__ __forceinline__ float bf2f(uint16_t u) { return __uint_as_float((uint32_t)u << 16); }
__device__ __forceinline__ uint16_t ld16(const uint8_t *p) { return *(const uint16_t *)p; }

// The 32 weights of sub-block sb of a row (32 consecutive elements), dequantized
// exactly as arb_dequant_row does (engine/quant.c).
template <int T> __device__ __forceinline__ void deq32(const uint8_t *row, int sb, float *w);

template <> __device__ __forceinline__ void deq32<ARB_TYPE_F32>(const uint8_t *row, int sb, float *w)
{
    const float4 *p = (const float4 *)(row + (size_t)sb * 128);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float4 v = p[i];
        w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
}

template <> __device__ __forceinline__ void deq32<ARB_TYPE_F16>(const uint8_t *row, int sb, float *w)
{
    const uint4 *p = (const uint4 *)(row + (size_t)sb * 64);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint4 v = p[i];
        const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            w[8 * i + 2 * k] = h2f((uint16_t)(u[k] & 0xffff));
            w[8 * i + 2 * k + 1] = h2f((uint16_t)(u[k] >> 16));
        }
    }
}

template <> __device__ __forceinline__ void deq32<ARB_TYPE_BF16>(const uint8_t *row, int sb, float *w)
{
    const uint4 *p = (const uint4 *)(row + (size_t)sb * 64);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint4 v = p[i];
        const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            w[8 * i + 2 * k] = bf2f((uint16_t)(u[k] & 0xffff));
            w[8 * i + 2 * k + 1] = bf2f((uint16_t)(u[k] >> 16));
        }
    }
}

// Q4_0: 18 B {d, qs[16]}; element j < 16 is low nibble of qs[j], j >= 16 the high one, minus 8.
template <> __device__ __forceinline__ void deq32<ARB_TYPE_Q4_0>(const uint8_t *row, int sb, float *w)
{
    const uint8_t *b = row + (size_t)sb * 18;
    const float d = h2f(ld16(b));
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint16_t q = ld16(b + 2 + 2 * i);
        const int q0 = q & 0xff, q1 = q >> 8;
        w[2 * i] = (float)((q0 & 0xf) - 8) * d;
        w[2 * i + 1] = (float)((q1 & 0xf) - 8) * d;
        w[2 * i + 16] = (float)((q0 >> 4) - 8) * d;
        w[2 * i + 17] = (float)((q1 >> 4) - 8) * d;
    }
}

// Q4_1: 20 B {d, m, qs[16]}: d * nibble + m.
template <> __device__ __forceinline__ void deq32<ARB_TYPE_Q4_1>(const uint8_t *row, int sb, float *w)
{
    const uint8_t *b = row + (size_t)sb * 20;
    const float d = h2f(ld16(b)), m = h2f(ld16(b + 2));
    const uint32_t *qs = (const uint32_t *)(b + 4);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t q = qs[i];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int v = (q >> (8 * k)) & 0xff;
            w[4 * i + k] = (float)(v & 0xf) * d + m;
            w[4 * i + k + 16] = (float)(v >> 4) * d + m;
        }
    }
}

// Q8_0: 34 B {d, qs[32]}.
template <> __device__ __forceinline__ void deq32<ARB_TYPE_Q8_0>(const uint8_t *row, int sb, float *w)
{
    const uint8_t *b = row + (size_t)sb * 34;
    const float d = h2f(ld16(b));
#pragma unroll
    for (int i = 0; i < 16; i++) {
        const uint16_t q = ld16(b + 2 + 2 * i);
        w[2 * i] = (float)(int8_t)(q & 0xff) * d;
        w[2 * i + 1] = (float)(int8_t)(q >> 8) * d;
    }
}

__device__ __forceinline__ void scale_min_k4(int j, const uint8_t *q, int *d, int *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Q4_K: 144 B super-blocks of 256 {d, dmin, scales[12], qs[128]}; sub-block j of 32
// takes nibbles (low for even j, high for odd) of qs[32 * (j / 2) ..], scale/min j.
template <> __device__ __forceinline__ void deq32<ARB_TYPE_Q4_K>(const uint8_t *row, int sb, float *w)
{
    const uint8_t *b = row + (size_t)(sb >> 3) * 144;
    const int j = sb & 7;
    const float d = h2f(ld16(b)), dmin = h2f(ld16(b + 2));
    int s, m;
    scale_min_k4(j, b + 4, &s, &m);
    const float d1 = d * (float)s, m1 = dmin * (float)m;
    const uint4 *q = (const uint4 *)(b + 16 + 32 * (j >> 1));
    const int sh = (j & 1) * 4;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const uint4 v = q[i];
        const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 16; k++)
            w[16 * i + k] = d1 * (float)((u[k >> 2] >> (8 * (k & 3) + sh)) & 0xf) - m1;
    }
}

// Q6_K: 210 B super-blocks {ql[128], qh[64], scales[16], d}; sub-block j of 32 is group
// j % 4 of half j / 4 (quant.c: dq_q6_k's y[l + 32 g]).
template <> __device__ __forceinline__ void deq32<ARB_TYPE_Q6_K>(const uint8_t *row, int sb, float *w)
{
    const uint8_t *b = row + (size_t)(sb >> 3) * 210;
    const int half = (sb & 7) >> 2, g = sb & 3;
    const float d = h2f(ld16(b + 208));
    const uint8_t *ql = b + 64 * half + (g & 1) * 32, *qh = b + 128 + 32 * half;
    const int8_t *sc = (const int8_t *)(b + 192 + 8 * half);
    const int lsh = (g >> 1) * 4, hsh = 2 * g;
#pragma unroll
    for (int l = 0; l < 32; l++) {
        const int q = ((ql[l] >> lsh) & 0xf) | (((qh[l] >> hsh) & 3) << 4);
        w[l] = d * (float)sc[l / 16 + 2 * g] * (float)(q - 32);
    }
}


// The 8 weights of group g (elements 8g..8g+7 of a row), dequantized as deq32 does.
// Four consecutive lanes share a 32-element block, so a warp reads 8 adjacent blocks
// at once (coalesced), where deq32 gave each lane a block of its own.
template <int T> __device__ __forceinline__ void deq8(const uint8_t *row, int g, float *w);

template <> __device__ __forceinline__ void deq8<ARB_TYPE_F32>(const uint8_t *row, int g, float *w)
{
    const float4 *p = (const float4 *)(row + (size_t)g * 32);
    const float4 a = p[0], b = p[1];
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
}

template <> __device__ __forceinline__ void deq8<ARB_TYPE_F16>(const uint8_t *row, int g, float *w)
{
    const uint4 v = *(const uint4 *)(row + (size_t)g * 16);
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; k++)
        w[2 * k] = h2f((uint16_t)(u[k] & 0xffff)), w[2 * k + 1] = h2f((uint16_t)(u[k] >> 16));
}

template <> __device__ __forceinline__ void deq8<ARB_TYPE_BF16>(const uint8_t *row, int g, float *w)
{
    const uint4 v = *(const uint4 *)(row + (size_t)g * 16);
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; k++)
        w[2 * k] = bf2f((uint16_t)(u[k] & 0xffff)), w[2 * k + 1] = bf2f((uint16_t)(u[k] >> 16));
}

// Q4_0: group k of a block: k < 2 low nibbles of qs[8k..8k+7], k >= 2 high nibbles of qs[8(k-2)..].
template <> __device__ __forceinline__ void deq8<ARB_TYPE_Q4_0>(const uint8_t *row, int g, float *w)
{
    const uint8_t *b = row + (size_t)(g >> 2) * 18;
    const int k = g & 3, sh = (k >> 1) * 4;
    const float d = h2f(ld16(b));
    const uint8_t *q = b + 2 + 8 * (k & 1);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint16_t v = ld16(q + 2 * i);
        w[2 * i] = (float)((((v & 0xff) >> sh) & 0xf) - 8) * d;
        w[2 * i + 1] = (float)((((v >> 8) >> sh) & 0xf) - 8) * d;
    }
}

template <> __device__ __forceinline__ void deq8<ARB_TYPE_Q4_1>(const uint8_t *row, int g, float *w)
{
    const uint8_t *b = row + (size_t)(g >> 2) * 20;
    const int k = g & 3, sh = (k >> 1) * 4;
    const float d = h2f(ld16(b)), m = h2f(ld16(b + 2));
    const uint32_t *q = (const uint32_t *)(b + 4 + 8 * (k & 1)); // 4-byte aligned (20-byte blocks)
    const uint32_t u[2] = {q[0], q[1]};
#pragma unroll
    for (int i = 0; i < 8; i++)
        w[i] = (float)((u[i >> 2] >> (8 * (i & 3) + sh)) & 0xf) * d + m;
}

template <> __device__ __forceinline__ void deq8<ARB_TYPE_Q8_0>(const uint8_t *row, int g, float *w)
{
    const uint8_t *b = row + (size_t)(g >> 2) * 34;
    const float d = h2f(ld16(b));
    const uint8_t *q = b + 2 + 8 * (g & 3);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint16_t v = ld16(q + 2 * i);
        w[2 * i] = (float)(int8_t)(v & 0xff) * d;
        w[2 * i + 1] = (float)(int8_t)(v >> 8) * d;
    }
}

// Q4_K: group g of a super-block is sub-block j = (g / 4) % 8, elements 8k..8k+7 (k = g % 4),
// the nibbles of bytes 8k..8k+7 of chunk j / 2.
template <> __device__ __forceinline__ void deq8<ARB_TYPE_Q4_K>(const uint8_t *row, int g, float *w)
{
    const uint8_t *b = row + (size_t)(g >> 5) * 144;
    const int j = (g >> 2) & 7, k = g & 3;
    const float d = h2f(ld16(b)), dmin = h2f(ld16(b + 2));
    int s, m;
    scale_min_k4(j, b + 4, &s, &m);
    const float d1 = d * (float)s, m1 = dmin * (float)m;
    const uint2 q = *(const uint2 *)(b + 16 + 32 * (j >> 1) + 8 * k); // 8-byte aligned (144 = 16 x 9)
    const uint32_t u[2] = {q.x, q.y};
    const int sh = (j & 1) * 4;
#pragma unroll
    for (int i = 0; i < 8; i++)
        w[i] = d1 * (float)((u[i >> 2] >> (8 * (i & 3) + sh)) & 0xf) - m1;
}

template <> __device__ __forceinline__ void deq8<ARB_TYPE_Q6_K>(const uint8_t *row, int g, float *w)
{
    const uint8_t *b = row + (size_t)(g >> 5) * 210;
    const int sb = (g >> 2) & 7, l0 = 8 * (g & 3);
    const int half = sb >> 2, gg = sb & 3;
    const float d = h2f(ld16(b + 208));
    const uint8_t *ql = b + 64 * half + (gg & 1) * 32, *qh = b + 128 + 32 * half;
    const int8_t *sc = (const int8_t *)(b + 192 + 8 * half);
    const int lsh = (gg >> 1) * 4, hsh = 2 * gg;
    const float ds = d * (float)sc[l0 / 16 + 2 * gg];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int l = l0 + i;
        const int q = ((ql[l] >> lsh) & 0xf) | (((qh[l] >> hsh) & 3) << 4);
        w[i] = ds * (float)(q - 32);
    }
}

// acc[t] += the 8-term dot of group g's weights with node t's activations (in order).
template <int NT> __device__ __forceinline__ void gemv_group(const float *w, const float *x, int ldx, int g, float *acc)
{
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const float4 *xp = (const float4 *)(x + (size_t)t * ldx + (size_t)g * 8);
        const float4 a = xp[0], b = xp[1];
        float s = w[0] * a.x;
        s = fmaf(w[1], a.y, s);
        s = fmaf(w[2], a.z, s);
        s = fmaf(w[3], a.w, s);
        s = fmaf(w[4], b.x, s);
        s = fmaf(w[5], b.y, s);
        s = fmaf(w[6], b.z, s);
        s = fmaf(w[7], b.w, s);
        acc[t] += s;
    }
}

// One warp per row; lane L takes the 8-element groups L, L+32, L+64, ... of the row
// (a warp covers 256 consecutive elements per step, so weight and activation loads
// are coalesced). Per node: an 8-term FMA chain per group, added to the lane's
// accumulator in group order, then a fixed butterfly over the lanes. The order
// depends on n_in alone: nothing depends on NT or on the other nodes.
template <int T, int NT>
__global__ void __launch_bounds__(128) gemv_kernel(const uint8_t *W, size_t row_bytes, int n_in, int n_out,
                                                    const float *x, int ldx, float *y, int ldy, bool accumulate)
{
    pdl_enter();
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= n_out)
        return;
    const uint8_t *wr = W + (size_t)row * row_bytes;
    const int ng = n_in / 8;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = 0.0f;
    // Four groups per lane in flight: their loads issue together (a warp reads 1 KB of
    // weights per round trip instead of 256 B); the sums still go in group order.
    int g = lane;
    for (; g + 3 * kWarp < ng; g += 4 * kWarp) {
        float w[4][8];
#pragma unroll
        for (int u = 0; u < 4; u++)
            deq8<T>(wr, g + u * kWarp, w[u]);
#pragma unroll
        for (int u = 0; u < 4; u++)
            gemv_group<NT>(w[u], x, ldx, g + u * kWarp, acc);
    }
    for (; g < ng; g += kWarp) {
        float w[8];
        deq8<T>(wr, g, w);
        gemv_group<NT>(w, x, ldx, g, acc);
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float v = acc[t];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, off);
        if (lane == 0) {
            float *o = y + (size_t)t * ldy + row;
            *o = accumulate ? *o + v : v;
        }
    }
}

// The node loop of every GEMV: 8 nodes per pass over the weights, then 4, 2, 1. f(t, G)
// gets the first node and the group size as a compile-time constant (G::value), so a
// caller instantiates its kernel for the group in one line.
template <typename F> void by_node_groups(int n, F &&f)
{
    for (int t = 0; t < n;) {
        const int rest = n - t;
        if (rest >= 8)
            f(t, std::integral_constant<int, 8>{}), t += 8;
        else if (rest >= 4)
            f(t, std::integral_constant<int, 4>{}), t += 4;
        else if (rest >= 2)
            f(t, std::integral_constant<int, 2>{}), t += 2;
        else
            f(t, std::integral_constant<int, 1>{}), t += 1;
    }
}

template <int T>
void gemv_type(kstream st, const dmat *w, const float *x, int ldx, int n, float *y, int ldy, bool acc)
{
    const dim3 grid((unsigned)((w->n_out + 3) / 4)), block(128);
    by_node_groups(n, [&](int t, auto g) {
        klaunch(st, gemv_kernel<T, decltype(g)::value>, grid, block, 0, w->q, w->row_bytes, w->n_in, w->n_out,
                                                                  x + (size_t)t * ldx, ldx, y + (size_t)t * ldy,
                                                                  ldy, acc);
    });
}

// ---- The packed GEMV (Q4_0, Q4_1, Q8_0): the decode kernel ----
//
// Batch-1 decode reads every weight once per token, so it is bound by how fast the
// weights stream, and by how the activations x reach the lanes. The GGUF blocks (18,
// 20, 34 bytes) admit only 2-byte loads, so at upload (cuda_model.cu) each such matrix
// is also stored packed, in chunks of 1024 elements (32 blocks) per row:
//   - lane L of the warp that owns the row takes, in chunk c, the 32 elements
//     e(i, j) = 1024c + 128i + 4L + j (i = 0..7, j = 0..3), so the warp's load of x for
//     one i is 512 contiguous bytes (one float4 per lane), and lane L's quants of the
//     chunk are one 16-byte load (Q8_0: two), the warp's 512 contiguous bytes;
//   - 4-bit: word j of lane L's 16 bytes holds q(e(i, j)) in bits 4i..4i+3; Q8_0: word
//     j + 4(i/4) holds it in byte i % 4;
//   - the 32 block scales of a chunk are an array of their own (block 4i + L/8 of the
//     chunk holds lane L's elements of step i): lane L loads the scale of block L and
//     the others come by warp shuffle.
// A row's last chunk is padded with zero quants and scales; its missing steps are
// skipped, so no x beyond n_in is read.
//
// Dequantizing without int-to-float conversions (quarter-rate on the GPU): a quant q at
// bit offset s < 23 of a word becomes the float 2^23 + q * 2^s when OR-ed into the
// mantissa of 2^23, so one AND/OR (a LOP3) and one FADD give q * 2^s exactly, with the
// offset of Q4_0 (q - 8) and Q8_0 (stored q + 128) folded into the subtracted constant.
// The four elements of one step share their bit offset, and 2^-s is folded into the
// block scale (exact: a power of two).
//
// Order, fixed by n_in alone (so a node's result is the same for any node count): lane L
// adds, chunk by chunk and step i = 0..7 within a chunk, d_i * dot_i where dot_i is the
// 4-term FMA chain over j (Q4_1: then m_i * ((x0 + x1) + (x2 + x3))); then the fixed
// butterfly over the lanes.

// Exact (q - off) * 2^(4k) for the nibble at bits 4k..4k+3 of u (k <= 3).
__device__ __forceinline__ float nib(uint32_t u, int k, int off)
{
    return __int_as_float((u & (0xfu << (4 * k))) | 0x4b000000u) - (8388608.0f + (float)(off << (4 * k)));
}
// Exact (q - 128) * 2^(8k) for the byte at bits 8k..8k+7 of u (k <= 1).
__device__ __forceinline__ float byt(uint32_t u, int k)
{
    return __int_as_float((u & (0xffu << (8 * k))) | 0x4b000000u) - (8388608.0f + (float)(128 << (8 * k)));
}

constexpr int kChunk = ARB_PACK_CHUNK; // elements per packed chunk: 32 lanes x 32 (cuda_pack.h)

template <int T> struct packed_traits;
template <> struct packed_traits<ARB_TYPE_Q4_0> { static constexpr int qc = 512, sb = 2; };
template <> struct packed_traits<ARB_TYPE_Q4_1> { static constexpr int qc = 512, sb = 4; };
template <> struct packed_traits<ARB_TYPE_Q8_0> { static constexpr int qc = 1024, sb = 2; };

// One lane's share of a chunk: its quant words and the scale of block L.
struct packed_lane {
    uint4 q[2]; // q[1] only for Q8_0
    uint32_t s; // d (low half), Q4_1: m (high half)
};

template <int T>
__device__ __forceinline__ packed_lane load_lane(const uint8_t *qr, const uint8_t *sr, int c, int lane)
{
    constexpr int QC = packed_traits<T>::qc, SB = packed_traits<T>::sb;
    packed_lane p;
    const uint4 *q = (const uint4 *)(qr + (size_t)c * QC) + lane;
    p.q[0] = q[0];
    if (QC == 1024)
        p.q[1] = q[32];
    const uint8_t *sp = sr + ((size_t)c * 32 + lane) * SB;
    p.s = SB == 4 ? *(const uint32_t *)sp : (uint32_t)*(const uint16_t *)sp;
    return p;
}

// Step i's four quants as exact floats, v[j] for element e(i, j), scaled by
// 2^(4 (i % 4)) (Q8_0: 2^(8 (i % 2))). i is a constant after unrolling.
template <int T> __device__ __forceinline__ void step_quants(const packed_lane &p, int i, float *v)
{
    if (T == ARB_TYPE_Q8_0) {
        const uint4 q = i < 4 ? p.q[0] : p.q[1];
        const uint32_t w[4] = {q.x, q.y, q.z, q.w};
        const int k = i & 3;
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = byt(k < 2 ? w[j] : w[j] >> 16, k & 1); // stored q + 128
        return;
    }
    const int off = T == ARB_TYPE_Q4_0 ? 8 : 0;
    const uint32_t w[4] = {p.q[0].x, p.q[0].y, p.q[0].z, p.q[0].w};
#pragma unroll
    for (int j = 0; j < 4; j++)
        v[j] = nib(i < 4 ? w[j] : w[j] >> 16, i & 3, off);
}

// Step i's scale with the 2^-s of its bit offset folded in (exact: a power of two), and
// Q4_1's min, by shuffle from the lane that loaded block 4i + L/8. Every lane must call it.
template <int T> __device__ __forceinline__ void step_scale(uint32_t s, int i, int lane, float *d, float *mn)
{
    const uint32_t si = __shfl_sync(0xffffffffu, s, 4 * i + (lane >> 3));
    const float unscale = T == ARB_TYPE_Q8_0 ? (i & 1 ? 1.0f / 256.0f : 1.0f)
                                             : (i & 3) == 0 ? 1.0f : (i & 3) == 1 ? 1.0f / 16.0f
                                             : (i & 3) == 2 ? 1.0f / 256.0f : 1.0f / 4096.0f;
    *d = h2f((uint16_t)(si & 0xffff)) * unscale;
    *mn = T == ARB_TYPE_Q4_1 ? h2f((uint16_t)(si >> 16)) : 0.0f;
}

// One node's eight x loads of the lane in chunk c, issued together (one at a time, each
// behind the previous step's FMAs, they made the GEMV latency-bound); padding of the
// last chunk (steps with 128 i + 4 L >= rem, rem a multiple of 32) reads nothing.
__device__ __forceinline__ void load_x_chunk(const float *x, int c, int lane, int rem, float4 *a)
{
    const float *xc = x + (size_t)c * kChunk + 4 * lane;
#pragma unroll
    for (int i = 0; i < 8; i++)
        a[i] = rem >= kChunk || 128 * i + 4 * lane < rem ? *(const float4 *)(xc + 128 * i)
                                                         : make_float4(0.f, 0.f, 0.f, 0.f);
}

// acc + step i of one node: the 4-term chain, then d * dot (Q4_1: then mn * sum x).
template <int T> __device__ __forceinline__ float step_acc(const float *v, float d, float mn, float4 a, float acc)
{
    float dot = v[0] * a.x;
    dot = fmaf(v[1], a.y, dot);
    dot = fmaf(v[2], a.z, dot);
    dot = fmaf(v[3], a.w, dot);
    acc = fmaf(d, dot, acc);
    if (T == ARB_TYPE_Q4_1)
        acc = fmaf(mn, (a.x + a.y) + (a.z + a.w), acc);
    return acc;
}

// acc[t] += chunk c of the row times node t's activations, for NT nodes, step by step
// (few registers: decode runs one wave of warps). One node loads its eight x first;
// several share each step's dequantized quants. The arithmetic is the same.
template <int T, int NT>
__device__ __forceinline__ void lane_chunk(const packed_lane &p, const float *x, int ldx, int c, int lane, int n_in,
                                           float *acc)
{
    const int rem = n_in - c * kChunk;
    if (NT == 1) {
        float4 a[8];
        load_x_chunk(x, c, lane, rem, a);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float v[4], d, mn;
            step_scale<T>(p.s, i, lane, &d, &mn);
            if (rem >= kChunk || 128 * i + 4 * lane < rem) {
                step_quants<T>(p, i, v);
                acc[0] = step_acc<T>(v, d, mn, a[i], acc[0]);
            }
        }
    } else {
        // step by step, each step's quants shared by the nodes: few registers for any NT
        const float *xc = x + (size_t)c * kChunk + 4 * lane;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float v[4], d, mn;
            step_scale<T>(p.s, i, lane, &d, &mn);
            if (rem >= kChunk || 128 * i + 4 * lane < rem) {
                float4 a[NT];
#pragma unroll
                for (int t = 0; t < NT; t++)
                    a[t] = *(const float4 *)(xc + (size_t)t * ldx + 128 * i);
                step_quants<T>(p, i, v);
#pragma unroll
                for (int t = 0; t < NT; t++)
                    acc[t] = step_acc<T>(v, d, mn, a[t], acc[t]);
            }
        }
    }
}


// One row of one packed matrix for NT nodes (acc[t]: lane L's part): chunks in order,
// four in flight (a warp has 2-4 KB of weights outstanding).
template <int T, int NT>
__device__ __forceinline__ void packed_row(const uint8_t *qr, const uint8_t *sr, int n_in, const float *x, int ldx,
                                           int lane, float *acc)
{
    const int nch = arb_pack_chunks(n_in);
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = 0.0f;
    int c = 0;
    for (; c + 3 < nch; c += 4) {
        packed_lane p[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            p[u] = load_lane<T>(qr, sr, c + u, lane);
#pragma unroll
        for (int u = 0; u < 4; u++)
            lane_chunk<T, NT>(p[u], x, ldx, c + u, lane, n_in, acc);
    }
    for (; c < nch; c++)
        lane_chunk<T, NT>(load_lane<T>(qr, sr, c, lane), x, ldx, c, lane, n_in, acc);
}



// ---- The int8 GEMV (ARBOR_CUDA_GEMV=dp4a): activations quantized per 32-block ----
//
// The float path spends several instructions per weight (dequantize, convert, FMA) and
// reads 4 bytes of x per weight. Here x is quantized once per matrix input to int8
// blocks (k_quant_q8, exactly as the CPU quantizes it), the weights sit in the int8
// layout (cuda_pack.h: lane L of chunk c owns block 32 c + L whole), and a block's dot is
// eight dp4a's (a quarter of an instruction per weight) and one scale, in the CPU
// kernels' per-block expression (arb_q8x_block_acc). Order, fixed by n_in alone: lane L
// adds its blocks chunk by chunk (Q4_1's min terms apart, added at the end), then the
// fixed butterfly.
template <int T> __host__ __device__ constexpr int q8x_type() { return T == ARB_TYPE_Q4_0 ? 0 : T == ARB_TYPE_Q4_1 ? 1 : 2; }

// A lane's weight block as arb_q8x_block_isum reads it (the words; Q4_0/Q4_1 use the first 4)
// and its scales as floats.
struct wblock {
    uint32_t w[8];
    float dw, mw;
};
template <int T> __device__ __forceinline__ wblock unpack_lane(const packed_lane &p)
{
    return wblock{{p.q[0].x, p.q[0].y, p.q[0].z, p.q[0].w, p.q[1].x, p.q[1].y, p.q[1].z, p.q[1].w},
                  h2f((uint16_t)(p.s & 0xffff)),
                  q8x_type<T>() == 1 ? h2f((uint16_t)(p.s >> 16)) : 0.0f};
}

// Node t's activation block blk: its 8 words, scale and integer sum.
struct xblock {
    uint32_t w[8];
    float d;
    int isum;
};
__device__ __forceinline__ xblock load_xblock(const xq8 &x, int t, int blk)
{
    const uint4 *xp = (const uint4 *)(x.q + (size_t)t * x.ldq + (size_t)blk * 32);
    const uint4 a = xp[0], b = xp[1];
    return xblock{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}, x.d[(size_t)t * x.ldb + blk],
                  x.isum[(size_t)t * x.ldb + blk]};
}

// One block of one row and node into acc / accm (arb_q8x_block_acc: the CPU's expression).
template <int T>
__device__ __forceinline__ void q8x_block(const wblock &wb, const xblock &xb, float *acc, float *accm)
{
    constexpr int type = q8x_type<T>();
    arb_q8x_block_acc(type, arb_q8x_block_isum(wb.w, xb.w, type == 2), wb.dw, wb.mw, xb.d, xb.isum, acc, accm);
}

template <int T, int NT>
__device__ __forceinline__ void q8x_chunk(const packed_lane &p, const xq8 &x, int c, int lane, float *acc,
                                          float *accm)
{
    const wblock wb = unpack_lane<T>(p);
    const int blk = c * 32 + lane;
#pragma unroll
    for (int t = 0; t < NT; t++)
        q8x_block<T>(wb, load_xblock(x, t, blk), &acc[t], &accm[t]);
}

template <int T, int NT>
__device__ __forceinline__ void q8x_row(const uint8_t *qr, const uint8_t *sr, int n_in, const xq8 &x, int lane,
                                        float *acc)
{
    const int nch = arb_pack_chunks(n_in);
    float accm[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = 0.0f, accm[t] = 0.0f;
    // one node: four chunks' weights in flight; several: one (each weight is used NT
    // times, and four chunks of NT nodes spill)
    constexpr int F = NT == 1 ? 4 : 1;
    int c = 0;
    for (; c + F - 1 < nch; c += F) {
        packed_lane p[F];
#pragma unroll
        for (int u = 0; u < F; u++)
            p[u] = load_lane<T>(qr, sr, c + u, lane);
#pragma unroll
        for (int u = 0; u < F; u++)
            q8x_chunk<T, NT>(p[u], x, c + u, lane, acc, accm);
    }
    for (; c < nch; c++)
        q8x_chunk<T, NT>(load_lane<T>(qr, sr, c, lane), x, c, lane, acc, accm);
    if (T == ARB_TYPE_Q4_1)
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[t] += accm[t];
}

// The activations a packed kernel reads: floats (the float layout) or int8 blocks (the
// int8 layout); row_dot picks the row function, x_from offsets to node t.
struct xf32 {
    const float *x;
    int ldx;
};
template <int T, int NT>
__device__ __forceinline__ void row_dot(const uint8_t *qr, const uint8_t *sr, int n_in, const xf32 &x, int lane,
                                        float *acc)
{
    packed_row<T, NT>(qr, sr, n_in, x.x, x.ldx, lane, acc);
}
template <int T, int NT>
__device__ __forceinline__ void row_dot(const uint8_t *qr, const uint8_t *sr, int n_in, const xq8 &x, int lane,
                                        float *acc)
{
    q8x_row<T, NT>(qr, sr, n_in, x, lane, acc);
}
xf32 x_from(const xf32 &x, int t) { return {x.x + (size_t)t * x.ldx, x.ldx}; }
xq8 x_from(const xq8 &x, int t)
{
    xq8 o = x;
    o.q += (size_t)t * x.ldq, o.d += (size_t)t * x.ldb, o.isum += (size_t)t * x.ldb;
    return o;
}

// Bytes of one packed row: quants, then (separately) scales.
template <int T> __device__ __forceinline__ size_t packed_row_q(int n_in)
{
    return (size_t)arb_pack_chunks(n_in) * packed_traits<T>::qc;
}
template <int T> __device__ __forceinline__ size_t packed_row_s(int n_in)
{
    return (size_t)arb_pack_chunks(n_in) * 32 * packed_traits<T>::sb;
}

// ---- The tree kernel on the int8 layout: tensor cores, the GEMV's bits ----
//
// For 16+ nodes the int8 GEMV re-reads the weights per 8 nodes and spends ~25 instructions
// per block and node. Here one mma.m16n8k32 (int8 tensor cores) gives the block sums of
// 16 rows x 8 nodes at once (cuda_pack.h: the fragment layout), and the result is the GEMV's
// bit for bit: warp w of the 32 in a thread block plays the GEMV's lane w, adding the
// blocks 32 c + w of its rows chunk by chunk with the same per-block expression
// (arb_q8x_block_acc), and the 32 slot partials are summed in the GEMV's butterfly order
// (arb_slot_butterfly) through shared memory. So exact mode stays batch-invariant: a node
// inside a tree equals the node alone. Tile: 16 rows x 32 nodes (four 8-node mma per block
// and warp: 16 accumulators, Q4_1 another 16, within the 64 registers 1024 threads allow).
constexpr int kTreeRows = 16, kTreeSub = 4, kTreeNodes = 8 * kTreeSub;

__device__ __forceinline__ void mma_s8(int *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

template <int T>
__global__ void __launch_bounds__(1024, 1) tree_q8x_kernel(const uint8_t *pq, const uint8_t *ps, int n_in, int n_out,
                                                           xq8 x, int n, float *y, int ldy, bool accumulate)
{
    pdl_enter();
    constexpr int QC = packed_traits<T>::qc, SB = packed_traits<T>::sb;
    constexpr int type = T == ARB_TYPE_Q4_0 ? 0 : T == ARB_TYPE_Q4_1 ? 1 : 2;
    constexpr bool q8 = T == ARB_TYPE_Q8_0;
    __shared__ float part[32][kTreeRows][16]; // slot partials of 16 rows x 16 nodes: 32 KB
    const int slot = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int r0 = blockIdx.x * kTreeRows, n0 = blockIdx.y * kTreeNodes;
    const int nch = arb_pack_chunks(n_in);
    const size_t rq = packed_row_q<T>(n_in), rs = packed_row_s<T>(n_in);
    const int ra = r0 + g, rb = r0 + g + 8;
    const bool va = ra < n_out, vb = rb < n_out;
    const uint8_t *qa = pq + (size_t)(va ? ra : 0) * rq, *qb = pq + (size_t)(vb ? rb : 0) * rq;
    const uint8_t *sa = ps + (size_t)(va ? ra : 0) * rs, *sb = ps + (size_t)(vb ? rb : 0) * rs;
    float acc[kTreeSub][4], accm[kTreeSub][4];
#pragma unroll
    for (int j = 0; j < kTreeSub; j++)
#pragma unroll
        for (int k = 0; k < 4; k++)
            acc[j][k] = 0.0f, accm[j][k] = 0.0f;
    for (int c = 0; c < nch; c++) {
        const int blk = c * 32 + slot;
        const size_t off = (size_t)c * QC + 16 * slot + 4 * t;
        const uint32_t wa0 = va ? *(const uint32_t *)(qa + off) : 0u, wb0 = vb ? *(const uint32_t *)(qb + off) : 0u;
        const uint32_t wa1 = q8 && va ? *(const uint32_t *)(qa + off + 512) : 0u;
        const uint32_t wb1 = q8 && vb ? *(const uint32_t *)(qb + off + 512) : 0u;
        uint32_t a[4];
        arb_mma_a_words(q8, wa0, wb0, wa1, wb1, a);
        uint32_t sca = 0, scb = 0;
        if (va)
            sca = SB == 4 ? *(const uint32_t *)(sa + (size_t)blk * SB) : (uint32_t)*(const uint16_t *)(sa + (size_t)blk * SB);
        if (vb)
            scb = SB == 4 ? *(const uint32_t *)(sb + (size_t)blk * SB) : (uint32_t)*(const uint16_t *)(sb + (size_t)blk * SB);
        const float dwa = h2f((uint16_t)(sca & 0xffff)), mwa = type == 1 ? h2f((uint16_t)(sca >> 16)) : 0.0f;
        const float dwb = h2f((uint16_t)(scb & 0xffff)), mwb = type == 1 ? h2f((uint16_t)(scb >> 16)) : 0.0f;
#pragma unroll
        for (int j = 0; j < kTreeSub; j++) {
            const int nb = n0 + 8 * j + g; // this thread's B column
            uint32_t b0 = 0, b1 = 0;
            if (nb < n) {
                const uint32_t *xp = (const uint32_t *)(x.q + (size_t)nb * x.ldq + (size_t)blk * 32);
                b0 = xp[t], b1 = xp[4 + t];
            }
            int d[4] = {0, 0, 0, 0};
            mma_s8(d, a, b0, b1);
#pragma unroll
            for (int k = 0; k < 2; k++) {
                const int nd = n0 + 8 * j + 2 * t + k; // this thread's D columns
                float dx = 0.0f;
                int xs = 0;
                if (nd < n)
                    dx = x.d[(size_t)nd * x.ldb + blk], xs = x.isum[(size_t)nd * x.ldb + blk];
                arb_q8x_block_acc(type, d[k], dwa, mwa, dx, xs, &acc[j][k], &accm[j][k]);
                arb_q8x_block_acc(type, d[2 + k], dwb, mwb, dx, xs, &acc[j][2 + k], &accm[j][2 + k]);
            }
        }
    }
    if (type == 1)
#pragma unroll
        for (int j = 0; j < kTreeSub; j++)
#pragma unroll
            for (int k = 0; k < 4; k++)
                acc[j][k] += accm[j][k];
    // the slot partials of 16 nodes at a time through shared memory, then the butterfly
#pragma unroll
    for (int h = 0; h < kTreeSub / 2; h++) {
#pragma unroll
        for (int jj = 0; jj < 2; jj++)
#pragma unroll
            for (int k = 0; k < 2; k++) {
                part[slot][g][8 * jj + 2 * t + k] = acc[2 * h + jj][k];
                part[slot][g + 8][8 * jj + 2 * t + k] = acc[2 * h + jj][2 + k];
            }
        __syncthreads();
        if (threadIdx.x < kTreeRows * 16) {
            const int rr = threadIdx.x >> 4, nn = threadIdx.x & 15;
            const int row = r0 + rr, node = n0 + 16 * h + nn;
            if (row < n_out && node < n) {
                float p[32];
#pragma unroll
                for (int l = 0; l < 32; l++)
                    p[l] = part[l][rr][nn];
                const float v = arb_slot_butterfly(p);
                float *o = y + (size_t)node * ldy + row;
                *o = accumulate ? *o + v : v;
            }
        }
        __syncthreads();
    }
}

template <int T>
void tree_q8x_type(kstream st, const dmat *w, const xq8 &x, int n, float *y, int ldy, bool acc)
{
    const dim3 grid((unsigned)((w->n_out + kTreeRows - 1) / kTreeRows), (unsigned)((n + kTreeNodes - 1) / kTreeNodes));
    klaunch(st, tree_q8x_kernel<T>, grid, 1024, 0, w->pq, w->ps, w->n_in, w->n_out, x, n, y, ldy, acc);
}

// Up to three packed matrices of one type and row length that read the same x (Q, K
// and V), their rows stacked: one launch, and the narrow K/V rows share it with Q's.
struct packed_set {
    const uint8_t *pq[3], *ps[3];
    float *y[3];
    int rows[3], ldy[3], n; // n matrices
};

// Row `row` of stacked matrices of r0 and r1 rows (then the third): its matrix *mi and,
// returned, its row there. The matrix's pointers by selects (set_pq, set_ps), not by a
// runtime index into the parameter arrays (that copies them to local memory).
__device__ __forceinline__ int set_row(int r0, int r1, int row, int *mi)
{
    *mi = row < r0 ? 0 : row < r0 + r1 ? 1 : 2;
    return row - (*mi == 0 ? 0 : *mi == 1 ? r0 : r0 + r1);
}
__device__ __forceinline__ const uint8_t *set_pq(const packed_set &ms, int mi)
{
    return mi == 0 ? ms.pq[0] : mi == 1 ? ms.pq[1] : ms.pq[2];
}
__device__ __forceinline__ const uint8_t *set_ps(const packed_set &ms, int mi)
{
    return mi == 0 ? ms.ps[0] : mi == 1 ? ms.ps[1] : ms.ps[2];
}

// One node: at most 64 registers, so that 8 blocks (32 warps) fit an SM and a 4096-row
// matrix runs in one wave on 132 SMs; more nodes: at most 128.
template <int T, int NT, typename X>
__global__ void __launch_bounds__(128, NT == 1 ? 8 : 4) gemv_packed_kernel(packed_set ms, int n_in, X x, bool accumulate)
{
    pdl_enter();
    const int srow = blockIdx.x * 4 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    const int r0 = ms.rows[0], r1 = ms.n > 1 ? ms.rows[1] : 0, r2 = ms.n > 2 ? ms.rows[2] : 0;
    if (srow >= r0 + r1 + r2)
        return;
    int mi;
    const int row = set_row(r0, r1, srow, &mi);
    const uint8_t *pq = set_pq(ms, mi), *ps = set_ps(ms, mi);
    float *y = mi == 0 ? ms.y[0] : mi == 1 ? ms.y[1] : ms.y[2];
    const int ldy = mi == 0 ? ms.ldy[0] : mi == 1 ? ms.ldy[1] : ms.ldy[2];
    float acc[NT];
    row_dot<T, NT>(pq + (size_t)row * packed_row_q<T>(n_in), ps + (size_t)row * packed_row_s<T>(n_in), n_in, x, lane,
                   acc);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const float v = warp_sum(acc[t]);
        if (lane == 0) {
            float *o = y + (size_t)t * ldy + row;
            *o = accumulate ? *o + v : v;
        }
    }
}

// RoPE and the KV store after the Q/K/V GEMV, for gemv_packed_rope_kernel: node t0 + t of the
// launch at position pos[t0 + t], its K and V rows to cache row *n_prefix + t0 + t.
struct rope_fuse {
    const int32_t *pos;
    const float *cs; // n_ctx x head_dim (cos, sin) pairs
    const int *n_prefix;
    float *kc, *vc; // this layer's cache
    int t0, head_dim, kvd;
};

// One RoPE pair: (x0, x1) rotated by (co, si), as the CPU computes it (rope_rows: two products,
// then a difference and a sum, each rounded; no contraction into an FMA, which nvcc would do
// by default). Shared by rope_store_kernel and the fused QKV GEMV, so both give these bits.
__device__ __forceinline__ void rope_pair(float x0, float x1, float co, float si, float *o0, float *o1)
{
    *o0 = __fsub_rn(__fmul_rn(x0, co), __fmul_rn(x1, si));
    *o1 = __fadd_rn(__fmul_rn(x0, si), __fmul_rn(x1, co));
}

// The Q/K/V GEMV with RoPE and the KV store of rope_store_kernel in its epilogue
// (ARBOR_CUDA_QKV=fused, llama's interleaved RoPE only: the pair (2j, 2j + 1) of a head is two
// adjacent rows; the separate launches' bits on the H100, but not faster on the 8B shape: off
// by default, docs/gpu.md). Each of the 4 warps computes its row as gemv_packed_kernel does
// (row_dot, the butterfly); the block's 4 rows are 2 whole pairs of one matrix (head_dim % 4 ==
// 0), so after a barrier thread 2t + p rotates pair p of node t (rope_pair: rope_store_kernel's
// operations) into q or the K cache, and for V thread 4t + k stores row k. One launch less per
// layer.
template <int T, int NT, typename X>
__global__ void __launch_bounds__(128, NT == 1 ? 8 : 4) gemv_packed_rope_kernel(packed_set ms, int n_in, X x,
                                                                                rope_fuse rf)
{
    pdl_enter();
    __shared__ float sv[NT][4];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x;
    const int r0 = ms.rows[0], r1 = ms.rows[1], r2 = ms.rows[2], rb = blockIdx.x * 4;
    if (rb >= r0 + r1 + r2) // block-uniform: the rows come in whole blocks of 4
        return;
    int mi;
    const int lr = set_row(r0, r1, rb, &mi); // the block's first row in its matrix
    const uint8_t *pq = set_pq(ms, mi), *ps = set_ps(ms, mi);
    // the row as gemv_packed_kernel computes it (its statements, kept apart so that its
    // code, the one measured on the H100, stays as it is)
    const int row = lr + warp;
    float acc[NT];
    row_dot<T, NT>(pq + (size_t)row * packed_row_q<T>(n_in), ps + (size_t)row * packed_row_s<T>(n_in), n_in, x, lane,
                   acc);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const float v = warp_sum(acc[t]);
        if (lane == 0)
            sv[t][warp] = v;
    }
    __syncthreads();
    const int n_prefix = *rf.n_prefix;
    if (mi == 2) {
        if (tid < 4 * NT) {
            const int t = tid >> 2, k = tid & 3;
            rf.vc[(size_t)(n_prefix + rf.t0 + t) * rf.kvd + lr + k] = sv[t][k];
        }
        return;
    }
    if (tid < 2 * NT) {
        const int t = tid >> 1, p = tid & 1, e = lr + 2 * p, j = (e % rf.head_dim) / 2;
        const float *cc = rf.cs + (size_t)rf.pos[rf.t0 + t] * rf.head_dim;
        float o0, o1;
        rope_pair(sv[t][2 * p], sv[t][2 * p + 1], cc[2 * j], cc[2 * j + 1], &o0, &o1);
        float *dst = mi == 0 ? ms.y[0] + (size_t)t * ms.ldy[0] : rf.kc + (size_t)(n_prefix + rf.t0 + t) * rf.kvd;
        dst[e] = o0;
        dst[e + 1] = o1;
    }
}

// SiLU(g) * u as the CPU computes it: exp of -|g| only, so it never overflows.
__device__ __forceinline__ float silu_mul(float g, float u)
{
    const float e = expf(-fabsf(g));
    const float s = g >= 0 ? g / (1.0f + e) : g * e / (1.0f + e);
    return s * u;
}

// SiLU(gate row . x) * (up row . x) of NT nodes by one warp: each dot summed exactly as
// gemv_packed_kernel sums it; every lane gets v[t].
template <int T, int NT, typename X>
__device__ __forceinline__ void glu_row(const uint8_t *gq, const uint8_t *gs, const uint8_t *uq, const uint8_t *us,
                                        int n_in, const X &x, int row, int lane, float *v)
{
    const size_t qo = (size_t)row * packed_row_q<T>(n_in), so = (size_t)row * packed_row_s<T>(n_in);
    float ag[NT], au[NT];
    row_dot<T, NT>(gq + qo, gs + so, n_in, x, lane, ag);
    row_dot<T, NT>(uq + qo, us + so, n_in, x, lane, au);
#pragma unroll
    for (int t = 0; t < NT; t++)
        v[t] = silu_mul(warp_sum(ag[t]), warp_sum(au[t]));
}

// Gate and up rows r in one warp, each summed exactly as gemv_packed_kernel sums it,
// and y = SiLU(gate) * up written directly: one launch instead of three. (glu_row's
// operations, written out: through the helper ptxas allocates 1-2 registers fewer in the
// 2-8-node variants, and this is the kernel the H100 measured.)
template <int T, int NT, typename X>
__global__ void __launch_bounds__(128, NT == 1 ? 8 : 4) gemv_packed_glu_kernel(const uint8_t *gq, const uint8_t *gs,
                                                               const uint8_t *uq, const uint8_t *us, int n_in,
                                                               int n_out, X x, float *y, int ldy)
{
    pdl_enter();
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= n_out)
        return;
    const size_t qo = (size_t)row * packed_row_q<T>(n_in), so = (size_t)row * packed_row_s<T>(n_in);
    float ag[NT], au[NT];
    row_dot<T, NT>(gq + qo, gs + so, n_in, x, lane, ag);
    row_dot<T, NT>(uq + qo, us + so, n_in, x, lane, au);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const float g = warp_sum(ag[t]), u = warp_sum(au[t]);
        if (lane == 0)
            y[(size_t)t * ldy + row] = silu_mul(g, u);
    }
}

// gemv_packed_glu_kernel with its output also quantized for the int8 GEMV of the down matrix
// (ARBOR_CUDA_GLU=fused; the separate launches' bits on the H100, but slower on the 8B shape:
// off by default, docs/gpu.md): block b computes rows 32 b .. 32 b + 31 (cuda_pack.h,
// arb_glu_q8_row), each as gemv_packed_glu_kernel computes it (glu_row, written to y as there),
// keeps the 32 values of each node in shared memory, and warp t then quantizes node t's block b
// as k_quant_q8 would (warp_q8 of the same floats, rows past n_out as zeros); the last block
// also writes the padding blocks up to oq.ldb. So y and the int8 blocks are the bits of the two
// launches they replace. oq must not alias x (the context's second int8 buffer, xo).
template <int T, int NT, typename X>
__global__ void __launch_bounds__(NT == 1 ? 1024 : 512, 1)
    gemv_packed_glu_q8_kernel(const uint8_t *gq, const uint8_t *gs, const uint8_t *uq, const uint8_t *us, int n_in,
                              int n_out, X x, float *y, int ldy, xq8 oq)
{
    pdl_enter();
    static_assert(NT <= 16, "one warp per node quantizes");
    constexpr int RPW = NT == 1 ? 1 : 2, W = 32 / RPW;
    __shared__ float ys[NT][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, b = blockIdx.x;
#pragma unroll
    for (int k = 0; k < RPW; k++) {
        const int row = arb_glu_q8_row(NT, b, warp, k), slot = row - 32 * b;
        if (row >= n_out) { // warp-uniform: the block's rows past the matrix quantize as zeros
            if (lane < NT)
                ys[lane][slot] = 0.0f;
            continue;
        }
        float v[NT];
        glu_row<T, NT>(gq, gs, uq, us, n_in, x, row, lane, v);
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (lane == 0) {
                y[(size_t)t * ldy + row] = v[t];
                ys[t][slot] = v[t];
            }
    }
    __syncthreads();
    if (warp < NT) {
        const int t = warp;
        float d;
        int sum;
        const int qi = warp_q8(ys[t][lane], &d, &sum);
        ((int8_t *)oq.q)[(size_t)t * oq.ldq + (size_t)b * 32 + lane] = (int8_t)qi;
        if (lane == 0) {
            ((float *)oq.d)[(size_t)t * oq.ldb + b] = d;
            ((int32_t *)oq.isum)[(size_t)t * oq.ldb + b] = sum;
        }
    }
    if (b == (int)gridDim.x - 1) // the padding blocks after the last row's block
        for (int pb = b + 1 + warp; pb < oq.ldb; pb += W)
#pragma unroll
            for (int t = 0; t < NT; t++) {
                ((int8_t *)oq.q)[(size_t)t * oq.ldq + (size_t)pb * 32 + lane] = 0;
                if (lane == 0) {
                    ((float *)oq.d)[(size_t)t * oq.ldb + pb] = 0.0f;
                    ((int32_t *)oq.isum)[(size_t)t * oq.ldb + pb] = 0;
                }
            }
}

// ---- Several rows per warp at 2-15 nodes (ARBOR_CUDA_ROWS=2|4; int8 layout) ----
//
// With NT nodes, gemv_packed_kernel's warp reads NT blocks of x (NT x 40 bytes per lane and
// chunk, from L1) for every 16-20 bytes of its row's weights: at 8 nodes the activations, not
// the weights, are what the SMs read most (by this estimate, 8-node trees of the 8B shape cost
// 2.4-2.9x one node, docs/gpu.md). Here a warp takes R rows and applies each x load to all of
// them, so x traffic drops R-fold. Per (row, node) the arithmetic is q8x_row's: lane L adds its
// blocks chunk by chunk with arb_q8x_block_acc (Q4_1's min terms apart, added at the end), then
// warp_sum; so the bits are gemv_packed_kernel's, which the gpu suite checks
// (rows_per_warp_gives_the_same_bits). Written without a device (twenty-eighth session).
template <int T, int NT, int R>
__device__ __forceinline__ void q8x_rows(const uint8_t *const *qr, const uint8_t *const *sr, const bool *ok, int n_in,
                                         const xq8 &x, int lane, float (*acc)[NT])
{
    float accm[R][NT];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[r][t] = 0.0f, accm[r][t] = 0.0f;
    const int nch = arb_pack_chunks(n_in);
    for (int c = 0; c < nch; c++) {
        wblock wb[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            packed_lane p = {};
            if (ok[r])
                p = load_lane<T>(qr[r], sr[r], c, lane);
            wb[r] = unpack_lane<T>(p);
        }
        const int blk = c * 32 + lane;
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const xblock xb = load_xblock(x, t, blk); // one load for the R rows
#pragma unroll
            for (int r = 0; r < R; r++)
                q8x_block<T>(wb[r], xb, &acc[r][t], &accm[r][t]);
        }
    }
    if (T == ARB_TYPE_Q4_1)
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++)
                acc[r][t] += accm[r][t];
}

// gemv_packed_kernel on the int8 layout with R rows per warp: warp w of block b takes stacked
// rows (4 b + w) R .. + R - 1 (each in its own matrix of the set, as set_row places it).
template <int T, int NT, int R>
__global__ void __launch_bounds__(128, 4) gemv_rows_q8x_kernel(packed_set ms, int n_in, xq8 x, bool accumulate)
{
    pdl_enter();
    const int lane = threadIdx.x & 31, base = (blockIdx.x * 4 + (threadIdx.x >> 5)) * R;
    const int r0 = ms.rows[0], r1 = ms.n > 1 ? ms.rows[1] : 0, r2 = ms.n > 2 ? ms.rows[2] : 0;
    if (base >= r0 + r1 + r2)
        return;
    const uint8_t *qr[R], *sr[R];
    float *yr[R];
    int ld[R];
    bool ok[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        ok[r] = base + r < r0 + r1 + r2;
        int mi;
        const int row = set_row(r0, r1, ok[r] ? base + r : base, &mi);
        qr[r] = set_pq(ms, mi) + (size_t)row * packed_row_q<T>(n_in);
        sr[r] = set_ps(ms, mi) + (size_t)row * packed_row_s<T>(n_in);
        yr[r] = (mi == 0 ? ms.y[0] : mi == 1 ? ms.y[1] : ms.y[2]) + row;
        ld[r] = mi == 0 ? ms.ldy[0] : mi == 1 ? ms.ldy[1] : ms.ldy[2];
    }
    float acc[R][NT];
    q8x_rows<T, NT, R>(qr, sr, ok, n_in, x, lane, acc);
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const float v = warp_sum(acc[r][t]);
            if (lane == 0 && ok[r]) {
                float *o = yr[r] + (size_t)t * ld[r];
                *o = accumulate ? *o + v : v;
            }
        }
}

// gemv_packed_glu_kernel with ARBOR_CUDA_ROWS: warp w of block b computes outputs
// (4 b + w) RO .. + RO - 1, reading the gate and up rows of each (2 RO rows) against one load
// of x; each output is silu_mul of the two warp sums, as there.
template <int T, int NT, int RO>
__global__ void __launch_bounds__(128, 4) gemv_glu_rows_q8x_kernel(const uint8_t *gq, const uint8_t *gs,
                                                                   const uint8_t *uq, const uint8_t *us, int n_in,
                                                                   int n_out, xq8 x, float *y, int ldy)
{
    pdl_enter();
    constexpr int R = 2 * RO;
    const int lane = threadIdx.x & 31, base = (blockIdx.x * 4 + (threadIdx.x >> 5)) * RO;
    if (base >= n_out)
        return;
    const uint8_t *qr[R], *sr[R];
    bool ok[R];
#pragma unroll
    for (int o = 0; o < RO; o++) {
        const int row = base + o < n_out ? base + o : base;
        const size_t qo = (size_t)row * packed_row_q<T>(n_in), so = (size_t)row * packed_row_s<T>(n_in);
        ok[2 * o] = ok[2 * o + 1] = base + o < n_out;
        qr[2 * o] = gq + qo, sr[2 * o] = gs + so;
        qr[2 * o + 1] = uq + qo, sr[2 * o + 1] = us + so;
    }
    float acc[R][NT];
    q8x_rows<T, NT, R>(qr, sr, ok, n_in, x, lane, acc);
#pragma unroll
    for (int o = 0; o < RO; o++)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const float g = warp_sum(acc[2 * o][t]), u = warp_sum(acc[2 * o + 1][t]);
            if (lane == 0 && base + o < n_out)
                y[(size_t)t * ldy + base + o] = silu_mul(g, u);
        }
}

// Which R a group of NT nodes may take without spilling (ptxas -v, sm_90, 128 registers at 4
// blocks per SM): the GEMV 4 rows at 2 nodes, else 2 (Q4_1 spills 28-40 bytes at 4 nodes x 4
// rows); gate/up 2 outputs (4 rows) up to 4 nodes, else 1. ARBOR_CUDA_ROWS=2 caps both at 2 rows.
template <int NT> constexpr bool rows4_fits() { return NT <= 2; }
template <int NT> constexpr bool glu2_fits() { return NT <= 4; }

template <int T, int NT, typename X>
void launch_packed(kstream st, const packed_set &ms, int n_in, const X &x, bool acc)
{
    int rows = 0;
    for (int i = 0; i < ms.n; i++)
        rows += ms.rows[i];
    if constexpr (std::is_same<X, xq8>::value && NT >= 2)
        if (st.rows >= 2) {
            if constexpr (rows4_fits<NT>())
                if (st.rows >= 4) {
                    klaunch(st, gemv_rows_q8x_kernel<T, NT, 4>, (unsigned)((rows + 15) / 16), 128, 0, ms, n_in, x,
                            acc);
                    return;
                }
            klaunch(st, gemv_rows_q8x_kernel<T, NT, 2>, (unsigned)((rows + 7) / 8), 128, 0, ms, n_in, x, acc);
            return;
        }
    klaunch(st, gemv_packed_kernel<T, NT, X>, (unsigned)((rows + 3) / 4), 128, 0, ms, n_in, x, acc);
}

template <int T, typename X>
void gemv_packed_type(kstream st, const dmat *const *w, int nw, const X &x, int n, float *const *y,
                      const int *ldy, bool acc)
{
    packed_set ms = {};
    ms.n = nw;
    const int n_in = w[0]->n_in;
    by_node_groups(n, [&](int t, auto g) {
        for (int i = 0; i < nw; i++) {
            ms.pq[i] = w[i]->pq, ms.ps[i] = w[i]->ps, ms.rows[i] = w[i]->n_out, ms.ldy[i] = ldy[i];
            ms.y[i] = y[i] + (size_t)t * ldy[i];
        }
        launch_packed<T, decltype(g)::value>(st, ms, n_in, x_from(x, t), acc);
    });
}

template <int T, typename X>
void glu_packed_type(kstream st, const dmat *gate, const dmat *up, const X &x, int n, float *y, const xq8 *oq)
{
    const int n_in = gate->n_in, no = gate->n_out;
    // fused only on int8 inputs (exact mode's layout): with float inputs the kernel would
    // spill at one node (ptxas, sm_90: 100-600 bytes), and k_gemv_glu's callers ask for it
    // only with gate in the int8 layout
    if constexpr (std::is_same<X, xq8>::value)
        if (oq) {
            const unsigned grid = (unsigned)arb_glu_q8_blocks(no);
            by_node_groups(n, [&](int t, auto g) {
                constexpr int G = decltype(g)::value;
                klaunch(st, gemv_packed_glu_q8_kernel<T, G, X>, grid, 32 * arb_glu_q8_warps(G), 0, gate->pq, gate->ps,
                        up->pq, up->ps, n_in, no, x_from(x, t), y + (size_t)t * no, no, x_from(*oq, t));
            });
            return;
        }
    const unsigned grid = (unsigned)((no + 3) / 4);
    by_node_groups(n, [&](int t, auto g) {
        constexpr int G = decltype(g)::value;
        if constexpr (std::is_same<X, xq8>::value && G >= 2)
            if (st.rows >= 2) { // ARBOR_CUDA_ROWS: the gate and up rows of RO outputs per warp
                if constexpr (glu2_fits<G>())
                    if (st.rows >= 4) {
                        klaunch(st, gemv_glu_rows_q8x_kernel<T, G, 2>, (unsigned)((no + 7) / 8), 128, 0, gate->pq,
                                gate->ps, up->pq, up->ps, n_in, no, x_from(x, t), y + (size_t)t * no, no);
                        return;
                    }
                klaunch(st, gemv_glu_rows_q8x_kernel<T, G, 1>, grid, 128, 0, gate->pq, gate->ps, up->pq, up->ps,
                        n_in, no, x_from(x, t), y + (size_t)t * no, no);
                return;
            }
        klaunch(st, gemv_packed_glu_kernel<T, G, X>, grid, 128, 0, 
            gate->pq, gate->ps, up->pq, up->ps, n_in, no, x_from(x, t), y + (size_t)t * no, no);
    });
}

// Activations to int8 blocks (k_quant_q8): one warp per block of 32 (warp_q8).
__global__ void quant_q8_kernel(const float *x, int ldx, int n_in, int nblk, int n, int8_t *q, float *d,
                                int32_t *isum)
{
    pdl_enter();
    const int wid = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (wid >= n * nblk)
        return;
    const int t = wid / nblk, b = wid % nblk, e = b * 32 + lane;
    float db;
    int sum;
    const int qi = warp_q8(e < n_in ? x[(size_t)t * ldx + e] : 0.0f, &db, &sum);
    q[(size_t)t * nblk * 32 + e] = (int8_t)qi;
    if (lane == 0) {
        d[(size_t)t * nblk + b] = db;
        isum[(size_t)t * nblk + b] = sum;
    }
}

// GGUF blocks (bb bytes: scales first, then quants) -> the packed layout (see the
// packed GEMV's comment): one thread per (row, chunk, lane), padding written as zeros.
__global__ void pack_kernel(const uint8_t *W, size_t row_bytes, int n_in, int n_out, int bb, int sb, bool q8,
                            bool q8x, uint8_t *qs, uint8_t *sc)
{
    pdl_enter();
    const int nch = arb_pack_chunks(n_in), qc = q8 ? 1024 : 512;
    const size_t total = (size_t)n_out * nch * 32;
    for (size_t it = blockIdx.x * (size_t)blockDim.x + threadIdx.x; it < total; it += (size_t)gridDim.x * blockDim.x) {
        const int lane = (int)(it % 32), c = (int)(it / 32 % nch);
        const size_t r = it / 32 / nch;
        uint8_t *qd = qs + (r * nch + c) * qc;
        uint32_t w[8];
        uint8_t *s = sc + ((r * nch + c) * 32 + lane) * sb;
        if (q8x)
            arb_pack_lane_q8x(W + r * row_bytes, n_in, bb, sb, q8, c, lane, w, s);
        else
            arb_pack_lane(W + r * row_bytes, n_in, bb, sb, q8, c, lane, w, s);
        arb_pack_store_lane(qd, lane, q8, w);
    }
}

template <int T> __global__ void get_rows_kernel(const uint8_t *W, size_t row_bytes, int n_in, const int32_t *ids,
                                                 float *out)
{
    pdl_enter();
    const uint8_t *wr = W + (size_t)ids[blockIdx.x] * row_bytes;
    float *o = out + (size_t)blockIdx.x * n_in;
    for (int sb = threadIdx.x; sb < n_in / 32; sb += blockDim.x) {
        float w[32];
        deq32<T>(wr, sb, w);
#pragma unroll
        for (int j = 0; j < 32; j++)
            o[sb * 32 + j] = w[j];
    }
}

template <int T> __global__ void to_half_kernel(const uint8_t *W, size_t row_bytes, int n_in, int n_out, __half *out)
{
    pdl_enter();
    const int nsb = n_in / 32;
    const size_t total = (size_t)nsb * n_out;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / nsb;
        const int sb = (int)(i % nsb);
        float w[32];
        deq32<T>(W + r * row_bytes, sb, w);
        __half *o = out + r * n_in + (size_t)sb * 32;
#pragma unroll
        for (int j = 0; j < 32; j++)
            o[j] = __float2half(w[j]);
    }
}


// Rows of dim (a multiple of 32 when oq is used: then a warp holds whole blocks). oq.q:
// also the rows quantized for the int8 GEMV (whole chunks, the padding zero), as
// k_quant_q8 would write them: one launch less per GEMV input.
__global__ void rmsnorm_kernel(const float *x, const float *g, int dim, float eps, float *out, __half *out16, xq8 oq)
{
    pdl_enter();
    __shared__ double red[33];
    const float *xr = x + (size_t)blockIdx.x * dim;
    double s = 0;
    for (int k = threadIdx.x; k < dim; k += blockDim.x)
        s += (double)xr[k] * (double)xr[k];
    s = block_sum(s, red);
    const float scale = 1.0f / sqrtf((float)(s / dim) + eps);
    float *o = out + (size_t)blockIdx.x * dim;
    const int end = oq.q ? oq.ldq : dim; // warp-uniform: dim, ldq and blockDim are multiples of 32 here
    for (int k = threadIdx.x; k < end; k += blockDim.x) {
        const float v = k < dim ? (xr[k] * scale) * g[k] : 0.0f;
        if (k < dim) {
            o[k] = v;
            if (out16)
                out16[(size_t)blockIdx.x * dim + k] = __float2half(v);
        }
        if (oq.q) {
            float d;
            int sum;
            ((int8_t *)oq.q)[(size_t)blockIdx.x * oq.ldq + k] = (int8_t)warp_q8(v, &d, &sum);
            if ((threadIdx.x & 31) == 0) {
                ((float *)oq.d)[(size_t)blockIdx.x * oq.ldb + k / 32] = d;
                ((int32_t *)oq.isum)[(size_t)blockIdx.x * oq.ldb + k / 32] = sum;
            }
        }
    }
}

__global__ void add_bias_kernel(float *x, const float *b, int dim, size_t total)
{
    pdl_enter();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        x[i] += b[i % dim];
}

// One block per (node, head): a decode step has one node, and one block per node
// left the GPU idle while it walked every head.
__global__ void swiglu_kernel(float *g, const float *u, size_t n, __half *out16)
{
    pdl_enter();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float r = silu_mul(g[i], u[i]);
        g[i] = r;
        if (out16)
            out16[i] = __float2half(r);
    }
}

__global__ void f32_to_half_kernel(const float *x, size_t n, __half *out)
{
    pdl_enter();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2half(x[i]);
}


// Argmax of each row, the lowest id among equal maxima (as the CPU greedy walk). That
// answer does not depend on the order of comparisons, so the row is split: block
// (row, p) of stage 1 takes the p-th of kArgParts contiguous parts, and one warp per
// row combines the parts (a decode step's 49k-150k logits were one block's serial walk).
constexpr int kArgParts = 32;

__device__ __forceinline__ void better(float &bv, int &bi, float ov, int oi)
{
    if (ov > bv || (ov == bv && oi < bi))
        bv = ov, bi = oi;
}

__global__ void argmax_part_kernel(const float *logits, int n_vocab, float *part_v, int32_t *part_i)
{
    pdl_enter();
    __shared__ float bv[256];
    __shared__ int bi[256];
    const float *r = logits + (size_t)blockIdx.x * n_vocab;
    const int p = blockIdx.y, per = (n_vocab + kArgParts - 1) / kArgParts;
    const int k0 = p * per, k1 = min(n_vocab, k0 + per);
    float best = -INFINITY;
    int id = 0x7fffffff;
    for (int k = k0 + threadIdx.x; k < k1; k += blockDim.x)
        if (r[k] > best) // strided in increasing k: keeps the first maximum of this thread
            best = r[k], id = k;
    bv[threadIdx.x] = best;
    bi[threadIdx.x] = id;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            better(bv[threadIdx.x], bi[threadIdx.x], bv[threadIdx.x + s], bi[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        part_v[blockIdx.x * kArgParts + p] = bv[0];
        part_i[blockIdx.x * kArgParts + p] = bi[0];
    }
}

__global__ void argmax_final_kernel(const float *part_v, const int32_t *part_i, int32_t *out)
{
    pdl_enter();
    float v = part_v[blockIdx.x * kArgParts + threadIdx.x];
    int i = part_i[blockIdx.x * kArgParts + threadIdx.x];
    for (int off = 16; off > 0; off >>= 1)
        better(v, i, __shfl_xor_sync(0xffffffffu, v, off), __shfl_xor_sync(0xffffffffu, i, off));
    if (threadIdx.x == 0)
        out[blockIdx.x] = i == 0x7fffffff ? 0 : i;
}

// This step's K and V rows (scratch, n x row_dim) into the cache at n_prefix + i.
// RoPE of the queries (in place) and of the keys, the keys and values written straight
// into their cache rows n_prefix + t: one launch for rope(q), rope(k) and the KV store,
// each element rotated as the CPU rotates it.
__global__ void rope_store_kernel(float *q, const float *kn, const float *vn, float *kc, float *vc, int n_head,
                                  int n_head_kv, int head_dim, const int32_t *pos, const float *cs, bool neox,
                                  const int *n_prefix)
{
    pdl_enter();
    const int t = blockIdx.x, hy = blockIdx.y, half = head_dim / 2;
    const float *c = cs + (size_t)pos[t] * head_dim;
    const bool isq = hy < n_head;
    const int h = isq ? hy : hy - n_head;
    const size_t kvd = (size_t)n_head_kv * head_dim;
    const float *src = isq ? q + ((size_t)t * n_head + h) * head_dim : kn + (size_t)t * kvd + (size_t)h * head_dim;
    float *dst = isq ? q + ((size_t)t * n_head + h) * head_dim
                     : kc + (size_t)(*n_prefix + t) * kvd + (size_t)h * head_dim;
    for (int j = threadIdx.x; j < half; j += blockDim.x) {
        const float co = c[2 * j], si = c[2 * j + 1];
        const int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
        float o0, o1;
        rope_pair(src[a], src[b], co, si, &o0, &o1);
        dst[a] = o0;
        dst[b] = o1;
    }
    if (!isq) {
        const float *vs = vn + (size_t)t * kvd + (size_t)h * head_dim;
        float *vd = vc + (size_t)(*n_prefix + t) * kvd + (size_t)h * head_dim;
        for (int e = threadIdx.x; e < head_dim; e += blockDim.x)
            vd[e] = vs[e];
    }
}

// One block per layer; rows in path order, a barrier between rows (row j may be
// the source of a later one, so the order matters).
__global__ void kv_commit_kernel(float *k, float *v, int n_ctx, int row_dim, int n_past, const int32_t *path, int n)
{
    pdl_enter();
    const size_t base = (size_t)blockIdx.x * n_ctx * row_dim;
    for (int j = 0; j < n; j++) {
        if (path[j] != j) {
            const size_t src = base + (size_t)(n_past + path[j]) * row_dim, dst = base + (size_t)(n_past + j) * row_dim;
            for (int e = threadIdx.x; e < row_dim; e += blockDim.x) {
                k[dst + e] = k[src + e];
                v[dst + e] = v[src + e];
            }
        }
        __syncthreads();
    }
}

unsigned blocks_for(size_t n, unsigned threads)
{
    const size_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

} // namespace

#define TYPE_SWITCH(type, F, ...)                                                                                  \
    switch (type) {                                                                                                \
    case ARB_TYPE_F32: F<ARB_TYPE_F32>(__VA_ARGS__); break;                                                        \
    case ARB_TYPE_F16: F<ARB_TYPE_F16>(__VA_ARGS__); break;                                                        \
    case ARB_TYPE_BF16: F<ARB_TYPE_BF16>(__VA_ARGS__); break;                                                      \
    case ARB_TYPE_Q4_0: F<ARB_TYPE_Q4_0>(__VA_ARGS__); break;                                                      \
    case ARB_TYPE_Q4_1: F<ARB_TYPE_Q4_1>(__VA_ARGS__); break;                                                      \
    case ARB_TYPE_Q8_0: F<ARB_TYPE_Q8_0>(__VA_ARGS__); break;                                                      \
    case ARB_TYPE_Q4_K: F<ARB_TYPE_Q4_K>(__VA_ARGS__); break;                                                      \
    case ARB_TYPE_Q6_K: F<ARB_TYPE_Q6_K>(__VA_ARGS__); break;                                                      \
    default: break; /* unreachable: arb_cuda_model_new rejects other types */                                      \
    }

// The packed GEMV of nw matrices of type T reading x: the int8 one when they are in the
// int8 layout (xq: x quantized by k_quant_q8), else the float one.
template <int T>
static void packed_dispatch(kstream st, const dmat *const *w, int nw, const float *x, int ldx, const xq8 *xq,
                            int n, float *const *y, const int *ldy, bool acc)
{
    if (w[0]->q8x)
        gemv_packed_type<T>(st, w, nw, *xq, n, y, ldy, acc);
    else
        gemv_packed_type<T>(st, w, nw, xf32{x, ldx}, n, y, ldy, acc);
}

// Whether w's packed kernel can run: packed, and for the int8 layout with xq given.
static bool packed_ready(const dmat *w, const xq8 *xq) { return w->pq && (!w->q8x || xq); }

void k_gemv(kstream st, const dmat *w, const float *x, int ldx, int n, float *y, int ldy, bool accumulate,
            const xq8 *xq)
{
    if (w->q8x && xq && w->pq && n >= ARB_CUDA_TREE_MIN_NODES) {
        switch (w->type) {
        case ARB_TYPE_Q4_0: tree_q8x_type<ARB_TYPE_Q4_0>(st, w, *xq, n, y, ldy, accumulate); return;
        case ARB_TYPE_Q4_1: tree_q8x_type<ARB_TYPE_Q4_1>(st, w, *xq, n, y, ldy, accumulate); return;
        case ARB_TYPE_Q8_0: tree_q8x_type<ARB_TYPE_Q8_0>(st, w, *xq, n, y, ldy, accumulate); return;
        default: break;
        }
    }
    if (packed_ready(w, xq)) {
        switch (w->type) {
        case ARB_TYPE_Q4_0: packed_dispatch<ARB_TYPE_Q4_0>(st, &w, 1, x, ldx, xq, n, &y, &ldy, accumulate); return;
        case ARB_TYPE_Q4_1: packed_dispatch<ARB_TYPE_Q4_1>(st, &w, 1, x, ldx, xq, n, &y, &ldy, accumulate); return;
        case ARB_TYPE_Q8_0: packed_dispatch<ARB_TYPE_Q8_0>(st, &w, 1, x, ldx, xq, n, &y, &ldy, accumulate); return;
        default: break; // arb_cuda_packed_block packs only these
        }
    }
    TYPE_SWITCH(w->type, gemv_type, st, w, x, ldx, n, y, ldy, accumulate)
}

// Whether matrices can share one packed launch: all packed in one layout, one type, one
// row length.
static bool same_packed(const dmat *const *w, int nw, const xq8 *xq)
{
    for (int i = 0; i < nw; i++)
        if (!packed_ready(w[i], xq) || w[i]->q8x != w[0]->q8x || w[i]->type != w[0]->type ||
            w[i]->n_in != w[0]->n_in)
            return false;
    return true;
}

bool k_gemv_multi(kstream st, const dmat *const *w, int nw, const float *x, int ldx, int n, float *const *y,
                  const xq8 *xq)
{
    if (nw < 1 || nw > 3 || !same_packed(w, nw, xq) || (w[0]->q8x && n >= ARB_CUDA_TREE_MIN_NODES))
        return false; // (tree sizes on the int8 layout: one tree kernel per matrix, through k_gemv)
    int ldy[3];
    for (int i = 0; i < nw; i++)
        ldy[i] = w[i]->n_out;
    switch (w[0]->type) {
    case ARB_TYPE_Q4_0: packed_dispatch<ARB_TYPE_Q4_0>(st, w, nw, x, ldx, xq, n, y, ldy, false); return true;
    case ARB_TYPE_Q4_1: packed_dispatch<ARB_TYPE_Q4_1>(st, w, nw, x, ldx, xq, n, y, ldy, false); return true;
    case ARB_TYPE_Q8_0: packed_dispatch<ARB_TYPE_Q8_0>(st, w, nw, x, ldx, xq, n, y, ldy, false); return true;
    default: return false;
    }
}

template <int T, typename X>
static void qkv_rope_type(kstream st, const dmat *const *w, const X &x, int n, float *q, const rope_fuse &rf0)
{
    packed_set ms = {};
    ms.n = 3;
    const int n_in = w[0]->n_in, rows = w[0]->n_out + w[1]->n_out + w[2]->n_out;
    by_node_groups(n, [&](int t, auto g) {
        for (int i = 0; i < 3; i++)
            ms.pq[i] = w[i]->pq, ms.ps[i] = w[i]->ps, ms.rows[i] = w[i]->n_out;
        ms.y[0] = q + (size_t)t * w[0]->n_out, ms.ldy[0] = w[0]->n_out; // K and V go to the cache
        rope_fuse rf = rf0;
        rf.t0 = t;
        klaunch(st, gemv_packed_rope_kernel<T, decltype(g)::value, X>, (unsigned)(rows / 4), 128, 0, ms, n_in,
                x_from(x, t), rf);
    });
}

// Int8 inputs only (the int8 layout: exact mode, ARBOR_CUDA_GEMV=dp4a): with float inputs the
// fused kernel spills at one node (ptxas, sm_80/sm_90: up to 640 bytes for Q8_0).
bool k_gemv_qkv_rope(kstream st, const dmat *const *w, int n, const xq8 *xq, float *q, float *kc, float *vc,
                     int head_dim, const int32_t *pos, const float *cs, const int *n_prefix)
{
    if (!same_packed(w, 3, xq) || !w[0]->q8x || n >= ARB_CUDA_TREE_MIN_NODES || head_dim % 4 != 0 ||
        w[0]->n_out % 4 != 0 || w[1]->n_out % 4 != 0 || w[1]->n_out != w[2]->n_out)
        return false;
    const rope_fuse rf = {pos, cs, n_prefix, kc, vc, 0, head_dim, w[1]->n_out};
    switch (w[0]->type) {
    case ARB_TYPE_Q4_0: qkv_rope_type<ARB_TYPE_Q4_0>(st, w, *xq, n, q, rf); return true;
    case ARB_TYPE_Q4_1: qkv_rope_type<ARB_TYPE_Q4_1>(st, w, *xq, n, q, rf); return true;
    case ARB_TYPE_Q8_0: qkv_rope_type<ARB_TYPE_Q8_0>(st, w, *xq, n, q, rf); return true;
    default: return false;
    }
}

template <int T>
static void glu_dispatch(kstream st, const dmat *gate, const dmat *up, const float *x, int ldx, const xq8 *xq,
                         int n, float *y, const xq8 *oq)
{
    if (gate->q8x)
        glu_packed_type<T>(st, gate, up, *xq, n, y, oq);
    else
        glu_packed_type<T>(st, gate, up, xf32{x, ldx}, n, y, oq);
}

bool k_gemv_glu(kstream st, const dmat *gate, const dmat *up, const float *x, int ldx, int n, float *y,
                const xq8 *xq, const xq8 *oq)
{
    const dmat *w[2] = {gate, up};
    if (!same_packed(w, 2, xq) || gate->n_out != up->n_out || (gate->q8x && n >= ARB_CUDA_TREE_MIN_NODES) ||
        (oq && !gate->q8x))
        return false;
    switch (gate->type) {
    case ARB_TYPE_Q4_0: glu_dispatch<ARB_TYPE_Q4_0>(st, gate, up, x, ldx, xq, n, y, oq); return true;
    case ARB_TYPE_Q4_1: glu_dispatch<ARB_TYPE_Q4_1>(st, gate, up, x, ldx, xq, n, y, oq); return true;
    case ARB_TYPE_Q8_0: glu_dispatch<ARB_TYPE_Q8_0>(st, gate, up, x, ldx, xq, n, y, oq); return true;
    default: return false;
    }
}

void k_quant_q8(kstream st, const float *x, int ldx, int n, int n_in, const xq8 *out)
{
    const int nblk = arb_pack_chunks(n_in) * 32;
    klaunch(st, quant_q8_kernel, (unsigned)(((size_t)n * nblk + 7) / 8), 256, 0, x, ldx, n_in, nblk, n, (int8_t *)out->q,
                                                                            (float *)out->d, (int32_t *)out->isum);
}

void k_pack(kstream st, const dmat *w, uint8_t *qs, uint8_t *sc)
{
    int qb, sb;
    if (!arb_cuda_packed_block(w->type, &qb, &sb))
        return;
    const int bb = (int)(w->row_bytes / (w->n_in / 32)), nch = arb_pack_chunks(w->n_in);
    klaunch(st, pack_kernel, blocks_for((size_t)w->n_out * nch * 32, 256), 256, 0, 
        w->q, w->row_bytes, w->n_in, w->n_out, bb, sb, w->type == ARB_TYPE_Q8_0, w->q8x, qs, sc);
}

template <int T> static void get_rows_type(kstream st, const dmat *w, const int32_t *ids, int n, float *out)
{
    klaunch(st, get_rows_kernel<T>, n, 128, 0, w->q, w->row_bytes, w->n_in, ids, out);
}

void k_get_rows(kstream st, const dmat *w, const int32_t *ids, int n, float *out)
{
    TYPE_SWITCH(w->type, get_rows_type, st, w, ids, n, out)
}

template <int T> static void to_half_type(kstream st, const dmat *w, __half *out)
{
    klaunch(st, to_half_kernel<T>, blocks_for((size_t)w->n_out * (w->n_in / 32), 256), 256, 0, w->q, w->row_bytes,
                                                                                          w->n_in, w->n_out, out);
}

void k_to_half(kstream st, const dmat *w, __half *out) { TYPE_SWITCH(w->type, to_half_type, st, w, out) }

void k_rmsnorm(kstream st, const float *x, const float *g, int rows, int dim, float eps, float *out,
               __half *out16, const xq8 *outq)
{
    // Up to 1024 threads: a decode step normalizes one row, on one SM.
    const int threads = dim >= 1024 ? 1024 : ((dim + 31) / 32) * 32;
    klaunch(st, rmsnorm_kernel, rows, threads, 0, x, g, dim, eps, out, out16, outq ? *outq : xq8{});
}

void k_add_bias(kstream st, float *x, const float *b, int rows, int dim)
{
    const size_t total = (size_t)rows * dim;
    klaunch(st, add_bias_kernel, blocks_for(total, 256), 256, 0, x, b, dim, total);
}

void k_swiglu(kstream st, float *g, const float *u, size_t n, __half *out16)
{
    klaunch(st, swiglu_kernel, blocks_for(n, 256), 256, 0, g, u, n, out16);
}

void k_to_half_f32(kstream st, const float *x, size_t n, __half *out)
{
    klaunch(st, f32_to_half_kernel, blocks_for(n, 256), 256, 0, x, n, out);
}


size_t k_argmax_scratch_bytes(int rows) { return (size_t)rows * kArgParts * (sizeof(float) + sizeof(int32_t)); }

void k_argmax(kstream st, const float *logits, int rows, int n_vocab, void *scratch, int32_t *out)
{
    float *pv = (float *)scratch;
    int32_t *pi = (int32_t *)(pv + (size_t)rows * kArgParts);
    klaunch(st, argmax_part_kernel, dim3((unsigned)rows, kArgParts), 256, 0, logits, n_vocab, pv, pi);
    klaunch(st, argmax_final_kernel, rows, kArgParts, 0, pv, pi, out);
}

void k_rope_store(kstream st, float *q, const float *kn, const float *vn, float *kc, float *vc, int n,
                  int n_head, int n_head_kv, int head_dim, const int32_t *pos, const float *cs, bool neox,
                  const int *n_prefix)
{
    const int half = head_dim / 2, threads = half >= 128 ? 128 : ((half + 31) / 32) * 32;
    klaunch(st, rope_store_kernel, dim3((unsigned)n, (unsigned)(n_head + n_head_kv)), threads, 0,
        q, kn, vn, kc, vc, n_head, n_head_kv, head_dim, pos, cs, neox, n_prefix);
}

void k_kv_commit(kstream st, float *k, float *v, int n_layer, int n_ctx, int row_dim, int n_past,
                 const int32_t *path, int n)
{
    klaunch(st, kv_commit_kernel, n_layer, 256, 0, k, v, n_ctx, row_dim, n_past, path, n);
}

// ---- top-K + softmax of each logits row: the device counterpart of arb_topk_softmax
// (engine/topk.c), so that an eval returns n x k ids and probabilities instead of n full
// rows (arb_eval_out.topk_k) ----
namespace {

constexpr int kTopkThreads = 256; // a power of two: the tree reductions below halve it

// (v, i) comes before (w, j) in top-K order: the larger value first, then the smaller id.
// False whenever v is NaN, so a NaN is never picked.
__device__ __forceinline__ bool topk_before(float v, int i, float w, int j) { return v > w || (v == w && i < j); }

// One block per row, three phases, each reduced in an order fixed by n_vocab alone:
// 1. M = the row maximum (strided maxima, then a fixed tree);
// 2. S = sum of exp(x - M), each thread in increasing index in double, then a fixed tree
//    (the CPU sums 64 float lanes of a degree-5 exp2; both are within ~5e-6 of exact);
// 3. k rounds of selection: round q takes the best element that comes strictly after
//    round q-1's pick in top-K order, so equal values list the smaller id first and each
//    id once, as topk_insert's strict '<' does on the CPU. p = exp(x - M) / S.
// A row of -inf only: M = -inf, every p = 1/V (the CPU's convention). Fewer than k values
// (V < k): the rest pad with id 0, p 0, as on the CPU. Cost: k reads of the row (the
// first from memory, the others mostly from L2).
__global__ void topk_softmax_kernel(const float *logits, int n_vocab, int k, int32_t *ids, float *p)
{
    pdl_enter();
    __shared__ float sv[kTopkThreads];
    __shared__ int si[kTopkThreads];
    __shared__ double ss[kTopkThreads];
    const float *r = logits + (size_t)blockIdx.x * n_vocab;
    const int t = threadIdx.x;
    float mx = -INFINITY;
    for (int j = t; j < n_vocab; j += kTopkThreads)
        mx = fmaxf(mx, r[j]); // fmaxf skips NaN
    sv[t] = mx;
    __syncthreads();
    for (int s = kTopkThreads / 2; s > 0; s >>= 1) {
        if (t < s)
            sv[t] = fmaxf(sv[t], sv[t + s]);
        __syncthreads();
    }
    const float M = sv[0];
    double sum = 0.0;
    if (M != -INFINITY)
        for (int j = t; j < n_vocab; j += kTopkThreads)
            sum += (double)expf(r[j] - M);
    ss[t] = sum;
    __syncthreads(); // also: every thread has read sv[0] before round 0 overwrites it
    for (int s = kTopkThreads / 2; s > 0; s >>= 1) {
        if (t < s)
            ss[t] += ss[t + s];
        __syncthreads();
    }
    const double S = ss[0];
    float pv = INFINITY; // the previous pick; every value comes after (+inf, -1)
    int pi = -1;
    for (int q = 0; q < k; q++) {
        float bv = -INFINITY;
        int bi = 0x7fffffff; // none: any value, -inf included, beats it
        for (int j = t; j < n_vocab; j += kTopkThreads) {
            const float x = r[j];
            if (topk_before(pv, pi, x, j) && topk_before(x, j, bv, bi))
                bv = x, bi = j;
        }
        sv[t] = bv;
        si[t] = bi;
        __syncthreads();
        for (int s = kTopkThreads / 2; s > 0; s >>= 1) {
            if (t < s && topk_before(sv[t + s], si[t + s], sv[t], si[t]))
                sv[t] = sv[t + s], si[t] = si[t + s];
            __syncthreads();
        }
        pv = sv[0];
        pi = si[0];
        __syncthreads(); // every thread has read the pick before the next round writes sv, si
        if (t == 0) {
            const size_t o = (size_t)blockIdx.x * k + q;
            const bool none = pi == 0x7fffffff;
            ids[o] = none ? 0 : pi;
            p[o] = none ? 0.0f : M == -INFINITY ? 1.0f / (float)n_vocab : (float)((double)expf(pv - M) / S);
        }
    }
}

// The same outputs from one read of the row (ARBOR_CUDA_TOPK=onepass): each thread keeps
// its own best ARB_TOPK_K_MAX (value, id) pairs in registers, sorted in top-K order (a new
// pair replaces the last and bubbles up by adjacent swaps, every index a constant), with its
// running maximum m_t and sum s_t = sum of exp(x - m_t) (rescaled by exp(m_t_old - m_t) in
// double when the maximum rises); then M = the block maximum, S = the block sum of
// s_t exp(m_t - M) (block_max / block_sum: fixed orders), and k rounds that each pick the
// best list head of the block (warp butterflies, then the warps' results read by every
// thread) and pop it from its thread's list. Ids are unique to a thread (j = t + 256 i), so
// the picks are the rounds kernel's: the global top-K is among the union of the threads'
// top-16 lists, and ties go to the smaller id by topk_before. S differs from the rounds
// kernel's in rounding only (a host emulation on 512 SmolLM2 rows, ties and -inf rows
// included: ids equal to arb_topk_softmax's, probabilities within 6.6e-6; not yet run on a
// device). p = exp(x - M) / S as there; an all -inf row gives 1/V, V < k pads id 0, p 0.
constexpr int kTopkList = ARB_TOPK_K_MAX;
constexpr int kTopkNone = 0x7fffffff;

__global__ void __launch_bounds__(kTopkThreads) topk_onepass_kernel(const float *logits, int n_vocab, int k,
                                                                    int32_t *ids, float *p)
{
    pdl_enter();
    __shared__ float red_f[33];
    __shared__ double red_d[33];
    __shared__ float wv[kTopkThreads / 32];
    __shared__ int wi[kTopkThreads / 32];
    const float *r = logits + (size_t)blockIdx.x * n_vocab;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float lv[kTopkList];
    int li[kTopkList];
#pragma unroll
    for (int q = 0; q < kTopkList; q++)
        lv[q] = -INFINITY, li[q] = kTopkNone;
    float m = -INFINITY;
    double s = 0.0;
    for (int j = t; j < n_vocab; j += kTopkThreads) {
        const float x = r[j];
        if (x > m) {
            s = s * exp((double)m - (double)x) + 1.0; // m = -inf: 0 * 0
            m = x;
        } else if (x != -INFINITY) {
            s += (double)expf(x - m); // a NaN value makes S NaN, as in the rounds kernel
        }
        if (topk_before(x, j, lv[kTopkList - 1], li[kTopkList - 1])) {
            lv[kTopkList - 1] = x, li[kTopkList - 1] = j;
#pragma unroll
            for (int q = kTopkList - 1; q > 0; q--)
                if (topk_before(lv[q], li[q], lv[q - 1], li[q - 1])) {
                    const float tv = lv[q];
                    const int ti = li[q];
                    lv[q] = lv[q - 1], li[q] = li[q - 1];
                    lv[q - 1] = tv, li[q - 1] = ti;
                }
        }
    }
    const float M = block_max(m, red_f);
    const double S = block_sum(m == -INFINITY ? 0.0 : s * exp((double)m - (double)M), red_d);
    for (int q = 0; q < k; q++) {
        float bv = lv[0];
        int bi = li[0];
        for (int off = 16; off > 0; off >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, off);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, off);
            if (topk_before(ov, oi, bv, bi))
                bv = ov, bi = oi;
        }
        if (lane == 0)
            wv[warp] = bv, wi[warp] = bi;
        __syncthreads();
        bv = wv[0], bi = wi[0];
        for (int w = 1; w < kTopkThreads / 32; w++)
            if (topk_before(wv[w], wi[w], bv, bi))
                bv = wv[w], bi = wi[w];
        __syncthreads(); // every thread has read wv, wi before the next round writes them
        const bool none = bi == kTopkNone;
        if (!none && li[0] == bi) { // this thread's head was picked: pop it
#pragma unroll
            for (int x = 0; x < kTopkList - 1; x++)
                lv[x] = lv[x + 1], li[x] = li[x + 1];
            lv[kTopkList - 1] = -INFINITY, li[kTopkList - 1] = kTopkNone;
        }
        if (t == 0) {
            const size_t o = (size_t)blockIdx.x * k + q;
            ids[o] = none ? 0 : bi;
            p[o] = none ? 0.0f : M == -INFINITY ? 1.0f / (float)n_vocab : (float)((double)expf(bv - M) / S);
        }
    }
}

} // namespace

void k_topk_softmax(kstream st, const float *logits, int rows, int n_vocab, int k, int32_t *ids, float *p,
                    bool onepass)
{
    if (onepass)
        klaunch(st, topk_onepass_kernel, rows, kTopkThreads, 0, logits, n_vocab, k, ids, p);
    else
        klaunch(st, topk_softmax_kernel, rows, kTopkThreads, 0, logits, n_vocab, k, ids, p);
}
