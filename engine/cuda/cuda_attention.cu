// cuda_attention.cu — tree attention on the device, the counterpart of the CPU's
// (engine/cpu/backend_cpu.c, attn_heads): the block kernel (one block per node and query
// head over its whole key list), the split and warp kernels (partials over parts of the list
// at places that depend on its length alone, cuda_attn.h) and their merges, serial,
// parallel or inside the warp kernel. The exactness rule of cuda_kernels.cu holds here: every
// sum runs in an order fixed by the key list's length and head_dim.
#include "cuda_int.h"

#include "cuda_attn.h"
#include "cuda_dev.h"

namespace {

constexpr int kAttnThreads = 256;

// Node i's ancestors, root first, into anc; returns the depth (the node included).
// Thread 0 only.
__device__ int node_ancestors(const int32_t *parent, int i, int *anc)
{
    int d = 0;
    for (int p = i; p >= 0; p = parent[p])
        d++;
    const int depth = d;
    for (int p = i; p >= 0; p = parent[p])
        anc[--d] = p;
    return depth;
}

// Cache row of key k of a node's list: prefix row k, else the node's ancestor at depth
// k - n_prefix (anc: root first), stored at n_prefix + its index in the eval.
__device__ __forceinline__ int key_row(int k, int n_prefix, const int *anc)
{
    return k < n_prefix ? k : n_prefix + anc[k - n_prefix];
}

// Every attention kernel's start for node i, query head h: thread 0 writes the node's
// ancestors (root first) into anc, the block loads q into qs, then a barrier. Returns L,
// the length of the node's key list (the prefix, read on the device since a captured step
// replays at any prefix length, then the ancestors and the node).
__device__ int attn_node_start(const attn_launch &a, int i, int h, float *qs, int *anc)
{
    __shared__ int depth_s;
    if (threadIdx.x == 0)
        depth_s = node_ancestors(a.parent, i, anc);
    for (int j = threadIdx.x; j < a.head_dim; j += blockDim.x)
        qs[j] = a.q[((size_t)i * a.n_head + h) * a.head_dim + j];
    __syncthreads();
    return *a.n_prefix + depth_s;
}

// Scores of keys k0 .. k0 + nk of a node's list into sc[0..nk): warp w of the block takes
// keys w, w + W, ... (W warps), four at a time so that their loads are in flight together;
// each key's dot reads lane elements j = lane, lane + 32, ... in order (fmaf), then a fixed
// butterfly, times scale. kb: the head's first key element.
__device__ void block_scores(const float *kb, size_t kv_stride, int hd, const float *qs, float scale, int k0, int nk,
                             int n_prefix, const int *anc, float *sc)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int b = warp; b < nk; b += 4 * nw) {
        float sv[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int kk = b + u * nw;
            sv[u] = 0.0f;
            if (kk < nk) {
                const float *kr = kb + (size_t)key_row(k0 + kk, n_prefix, anc) * kv_stride;
                for (int j = lane; j < hd; j += 32)
                    sv[u] = fmaf(qs[j], kr[j], sv[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            float v = sv[u];
            for (int off = 16; off > 0; off >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, off);
            const int kk = b + u * nw;
            if (lane == 0 && kk < nk)
                sc[kk] = v * scale;
        }
    }
}

// Scores sc[0..nk) to exp(score - max) in place (max: block_max; the sum: block_sum, in
// their fixed orders). Every thread of the block calls it; *mx gets the maximum (-inf for
// nk = 0), the return value the sum. Ends with a barrier: sc is complete.
__device__ float block_softmax_terms(float *sc, int nk, float *red, float *mx)
{
    float m = -INFINITY;
    for (int k = threadIdx.x; k < nk; k += blockDim.x)
        m = fmaxf(m, sc[k]);
    m = block_max(m, red);
    float sum = 0.0f;
    for (int k = threadIdx.x; k < nk; k += blockDim.x) {
        const float e = expf(sc[k] - m);
        sc[k] = e;
        sum += e;
    }
    *mx = m;
    return block_sum(sum, red);
}

// The weights sc[0..nk) times the values of keys k0 .. k0 + nk of a node's list (prefix row
// k, or ancestor anc[k - n_prefix]; vb = the head's first value element), per element j of
// hd: G = blockDim.x / hd groups (1 for hd > blockDim.x) each take a contiguous part of the
// keys, summed in 4 interleaved partial sums (k mod 4) added as (s0 + s1) + (s2 + s3), then
// the groups in order. out(j, value) is called by one thread per j. part: blockDim.x floats.
template <typename Out>
__device__ void block_weighted_values(const float *vb, size_t kv_stride, int hd, const float *sc, int k0, int nk,
                                      int n_prefix, const int *anc, float *part, Out out)
{
    const int T = blockDim.x, G = hd <= T ? T / hd : 1, W = T / G;
    for (int j0 = 0; j0 < hd; j0 += W) {
        const int g = threadIdx.x / W, j = j0 + threadIdx.x % W;
        if (j < hd) {
            const int g0 = (int)((long long)nk * g / G), g1 = (int)((long long)nk * (g + 1) / G);
            float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            const float *vj = vb + j;
            int k = g0;
            for (; k + 3 < g1; k += 4) {
                float vv[4];
#pragma unroll
                for (int u = 0; u < 4; u++) { // the four loads in flight together
                    vv[u] = vj[(size_t)key_row(k0 + k + u, n_prefix, anc) * kv_stride];
                }
#pragma unroll
                for (int u = 0; u < 4; u++)
                    o[u] = fmaf(sc[k + u], vv[u], o[u]);
            }
            for (int u = 0; k < g1; k++, u++)
                o[u] = fmaf(sc[k], vj[(size_t)key_row(k0 + k, n_prefix, anc) * kv_stride], o[u]);
            part[threadIdx.x] = (o[0] + o[1]) + (o[2] + o[3]);
        }
        __syncthreads();
        if ((int)threadIdx.x < W && j0 + (int)threadIdx.x < hd) {
            float o = part[threadIdx.x];
            for (int gg = 1; gg < G; gg++)
                o += part[gg * W + threadIdx.x];
            out(j0 + (int)threadIdx.x, o);
        }
        __syncthreads(); // part (and sc) free again
    }
}

// Tree attention of node blockIdx.x, query head blockIdx.y. Key list (cuda.h,
// arb_cuda_key_rows): prefix rows, ancestors root first, the node itself. The order of
// every sum depends on the list length and head_dim alone:
//   score k (block_scores): one warp reads K row k coalesced (lane takes elements
//            lane + 32 i, in i order), then a fixed butterfly; scores stay in shared memory;
//   max, sum: block_softmax_terms (block_max / block_sum, fixed);
//   V (block_weighted_values): G = 256 / head_dim groups each take a contiguous part of
//      the list, summed in 4 interleaved partial sums (k mod 4) added as (s0 + s1) +
//      (s2 + s3), then the parts in group order.
// The split kernel below runs the same three helpers on parts of the list.
__global__ void __launch_bounds__(kAttnThreads) attention_kernel(attn_launch a)
{
    pdl_enter();
    extern __shared__ float sm[];
    __shared__ float red[33];
    const int i = blockIdx.x, h = blockIdx.y, hd = a.head_dim;
    const int kvh = h / (a.n_head / a.n_head_kv);
    float *qs = sm;                               // hd
    float *part = qs + hd;                        // kAttnThreads
    int *anc = (int *)(part + kAttnThreads);      // n_batch_max
    float *sc = (float *)(anc + a.n_batch_max);   // n_ctx
    const int L = attn_node_start(a, i, h, qs, anc), n_prefix = *a.n_prefix;
    const size_t koff = (size_t)kvh * hd;
    block_scores(a.k + koff, a.kv_stride, hd, qs, a.scale, 0, L, n_prefix, anc, sc);
    __syncthreads();
    float mx;
    const float inv = 1.0f / block_softmax_terms(sc, L, red, &mx);
    float *out = a.out + ((size_t)i * a.n_head + h) * hd;
    block_weighted_values(a.v + koff, a.kv_stride, hd, sc, 0, L, n_prefix, anc, part,
                          [&](int j, float o) { out[j] = o * inv; });
}

constexpr int kSplitThreads = 128;


// Split attention (the flash-decoding idea): at batch 1 the block kernel above runs
// n_head blocks, each walking the whole key list with one load in flight per warp, so a
// decode step's attention grew ~4.5 us per context token on the default model (30 layers,
// 9 heads; H100, 2026-11-27). Here node i's list (L = prefix + depth keys) is cut into
// S = a.splits parts (cuda_attn.h: the partition depends on L alone), and each part gets a
// partial: m = its largest score, s = sum of exp(score - m), o = sum of exp(score - m) v,
// by the block kernel's helpers. An empty part writes m = -inf, s = 0, o = 0. Block (i, h, z) of Z =
// gridDim.z computes parts z, z + Z, ... in turn: Z = S at batch 1 (one part per block),
// fewer for trees and prefills (the blocks then amortise the ancestor walk); a part's
// arithmetic does not depend on Z.
__global__ void __launch_bounds__(kSplitThreads) attention_split_kernel(attn_launch a)
{
    pdl_enter();
    extern __shared__ float sm[];
    __shared__ float red[33];
    const int i = blockIdx.x, h = blockIdx.y, S = a.splits, hd = a.head_dim;
    const int kvh = h / (a.n_head / a.n_head_kv);
    float *qs = sm;                              // hd
    float *part = qs + hd;                       // kSplitThreads
    int *anc = (int *)(part + kSplitThreads);    // n_batch_max
    float *sc = (float *)(anc + a.n_batch_max);  // at most ceil(n_ctx / S) keys
    const int L = attn_node_start(a, i, h, qs, anc), n_prefix = *a.n_prefix;
    const size_t koff = (size_t)kvh * hd;
    const int U = arb_attn_parts_used(L, S, a.chunk);
    for (int c = blockIdx.z; c < S; c += gridDim.z) {
        if (c >= U) { // an unused part: the merge skips it by its max
            if (threadIdx.x == 0)
                a.part[(((size_t)i * a.n_head + h) * S + c) * (size_t)ARB_ATTN_PART(hd)] = -INFINITY;
            continue;
        }
        const int k0 = arb_attn_part_begin(L, c, U), nk = arb_attn_part_begin(L, c + 1, U) - k0;
        block_scores(a.k + koff, a.kv_stride, hd, qs, a.scale, k0, nk, n_prefix, anc, sc);
        __syncthreads();
        float mx;
        const float sum = block_softmax_terms(sc, nk, red, &mx);
        float *po = a.part + (((size_t)i * a.n_head + h) * S + c) * (size_t)ARB_ATTN_PART(hd);
        if (threadIdx.x == 0)
            po[0] = mx, po[1] = sum;
        block_weighted_values(a.v + koff, a.kv_stride, hd, sc, k0, nk, n_prefix, anc, part,
                              [&](int j, float o) { po[2 + j] = o; });
    }
}

// Merges the S partials of node blockIdx.x, head blockIdx.y in part order (cuda_attn.h).
__global__ void attention_merge_kernel(attn_launch a)
{
    pdl_enter();
    const int i = blockIdx.x, h = blockIdx.y, S = a.splits, hd = a.head_dim, st = ARB_ATTN_PART(hd);
    const float *pb = a.part + ((size_t)i * a.n_head + h) * S * (size_t)st;
    const float M = arb_attn_merge_max(pb, S, st);
    const float inv = 1.0f / arb_attn_merge_den(pb, S, st, M);
    for (int j = threadIdx.x; j < hd; j += blockDim.x)
        a.out[((size_t)i * a.n_head + h) * hd + j] = arb_attn_merge_num(pb, S, st, M, j) * inv;
}

// The merge with the same arithmetic, in parallel (ARBOR_CUDA_MERGE=parallel; the serial
// merge's bits on the H100, and 8-9 % of a decode step faster, docs/gpu.md; not the default
// while exact-mode runs are unexplained there). The serial merge above walks the S partials
// three times per thread, each load waiting for the last: S round trips to memory per loop (the
// warp kernel's S is 32, also for lists of one part). Here thread c < S loads part c's m and s
// at once; every thread takes M over them in part order, thread c forms w_c = expf(m_c - M)
// once (the value arb_attn_merge_den / _num form for that part), thread 0 sums the denominator
// in part order and finds U, one past the last part used (the rest are skipped by both
// functions anyway); thread j then sums element j over parts 0..U-1 in order, eight parts'
// loads in flight. The same fmaf sequences: the same bits as the serial merge. One thread per
// element (blockDim = 32 ceil(head_dim / 32)). With oq (the wo matrix in the int8 layout,
// head_dim a multiple of 32), each warp also quantizes its 32 outputs as k_quant_q8 would
// (warp_q8), and the last head's block writes the row's padding blocks (zeros, as k_quant_q8
// writes them): one launch less per layer.
//
// The parallel merge of node i, head h by the calling block (every thread calls it; any
// blockDim that is a multiple of 32 and at least ARB_ATTN_MAX_SPLITS): thread j takes the
// elements j, j + blockDim, ... The partials are read past L1 (__ldcg): in the fused merge
// (attention_warp_kernel<R, true>) other blocks of this launch wrote them.
__device__ void merge_parallel_block(const attn_launch &a, int i, int h, const xq8 &oq)
{
    __shared__ float ms[ARB_ATTN_MAX_SPLITS], ss[ARB_ATTN_MAX_SPLITS], ws[ARB_ATTN_MAX_SPLITS];
    __shared__ float inv_s;
    __shared__ int used_s;
    const int S = a.splits, hd = a.head_dim, st = ARB_ATTN_PART(hd);
    const int tid = threadIdx.x, lane = threadIdx.x & 31;
    const float *pb = a.part + ((size_t)i * a.n_head + h) * S * (size_t)st;
    if (tid < S)
        ms[tid] = __ldcg(pb + (size_t)tid * st), ss[tid] = __ldcg(pb + (size_t)tid * st + 1);
    __syncthreads();
    float M = -INFINITY;
    for (int c = 0; c < S; c++)
        M = fmaxf(M, ms[c]);
    if (tid < S)
        ws[tid] = ms[tid] != -INFINITY ? expf(ms[tid] - M) : 0.0f;
    __syncthreads();
    if (tid == 0) {
        float den = 0.0f;
        int U = 0;
        for (int c = 0; c < S; c++)
            if (ms[c] != -INFINITY)
                den = fmaf(ws[c], ss[c], den), U = c + 1;
        inv_s = 1.0f / den, used_s = U;
    }
    __syncthreads();
    const int U = used_s;
    const int hd32 = 32 * ((hd + 31) / 32);
    for (int j0 = 0; j0 < hd32; j0 += blockDim.x) {
        const int j = j0 + tid;
        float o = 0.0f;
        if (j < hd)
            for (int c0 = 0; c0 < U; c0 += 8) {
                float v[8];
#pragma unroll
                for (int u = 0; u < 8; u++) // loaded whether used or not: a skipped part's value is never read
                    v[u] = c0 + u < U ? __ldcg(pb + (size_t)(c0 + u) * st + 2 + j) : 0.0f;
#pragma unroll
                for (int u = 0; u < 8; u++)
                    if (c0 + u < U && ms[c0 + u] != -INFINITY)
                        o = fmaf(ws[c0 + u], v[u], o);
            }
        const float out = o * inv_s;
        if (j < hd)
            a.out[((size_t)i * a.n_head + h) * hd + j] = out;
        if (!oq.q || j0 + (tid & ~31) >= hd) // warp-uniform (hd % 32 == 0 with oq)
            continue;
        // the head's 32-blocks of the row: every lane of this warp has an element
        const int blk = (h * hd + j) / 32;
        float db;
        int sum;
        const int qi = warp_q8(out, &db, &sum);
        ((int8_t *)oq.q)[(size_t)i * oq.ldq + h * hd + j] = (int8_t)qi;
        if (lane == 0) {
            ((float *)oq.d)[(size_t)i * oq.ldb + blk] = db;
            ((int32_t *)oq.isum)[(size_t)i * oq.ldb + blk] = sum;
        }
    }
    if (oq.q && h == a.n_head - 1) // the padding blocks after the row's n_head * hd values
        for (int b = a.n_head * hd / 32 + (tid >> 5); b < oq.ldb; b += blockDim.x >> 5) {
            ((int8_t *)oq.q)[(size_t)i * oq.ldq + b * 32 + lane] = 0;
            if (lane == 0) {
                ((float *)oq.d)[(size_t)i * oq.ldb + b] = 0.0f;
                ((int32_t *)oq.isum)[(size_t)i * oq.ldb + b] = 0;
            }
        }
}

__global__ void attention_merge_parallel_kernel(attn_launch a, xq8 oq)
{
    pdl_enter();
    merge_parallel_block(a, blockIdx.x, blockIdx.y, oq);
}

// Warp attention (the default where it fits; cuda_attn.h): the split kernel's partials, one warp
// per part. The split kernel spends a part on a whole block: two block reductions and four
// barriers per part, and its value sums walk the part's keys one at a time per thread, so a
// 64-node tree on the default model (each block walking 29 parts of ~20 keys) cost 5.2 ms.
// Here lane t takes keys t, t + 32, ... of the part: its score is arb_attn_warp_dot (lane
// t reads key t's row itself, 16 bytes at a time), the part's max and sum are warp
// butterflies (lane sums in key order first), and for the values lane t owns elements
// j = t + 32 r, summed over the part's keys in key order (fmaf), KB keys' loads in flight.
// Parts c = 4 z + w, then + 4 Z (block z of Z = gridDim.z, warp w): which warp runs a part
// does not change its arithmetic. R = ceil(head_dim / 32) elements per lane at most.
// FUSE (ARBOR_CUDA_MERGE=fused, fast mode's default; the same bits as the serial merge on the
// H100, docs/gpu.md): the last of the Z blocks of a (node, head) to finish merges the partials
// itself (merge_parallel_block, the parallel merge's statements, so the same bits), one launch
// less per layer. "Last" is a ticket: after its partials are written and fenced, each block's
// thread 0 adds 1 to the (node, head)'s counter; the block that draws Z - 1 merges and sets the
// counter back to 0 for the next launch (a captured step replays it). The ticket decides which
// block merges, never an order of float operations.
constexpr int kWarpAttnWarps = 4;

template <int R, bool FUSE>
__global__ void __launch_bounds__(kWarpAttnWarps * 32) attention_warp_kernel(attn_launch a, xq8 oq)
{
    pdl_enter();
    extern __shared__ __align__(16) float smw[]; // q is read 16 bytes at a time
    constexpr int KB = R > 4 ? 4 : 8; // keys whose value loads are in flight together
    const int i = blockIdx.x, h = blockIdx.y, S = a.splits, hd = a.head_dim;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (a.n_head / a.n_head_kv);
    float *qs = smw;                                                  // hd (a multiple of 4)
    int *anc = (int *)(qs + hd);                                      // n_batch_max
    float *sc = (float *)(anc + a.n_batch_max) + (size_t)warp * a.warp_keys; // this warp's part
    const int L = attn_node_start(a, i, h, qs, anc), n_prefix = *a.n_prefix;
    const int w = arb_attn_warp_width(L, S, a.warp_min);
    const float *kb = a.k + (size_t)kvh * hd, *vb = a.v + (size_t)kvh * hd;
    for (int c = blockIdx.z * kWarpAttnWarps + warp; c < S; c += gridDim.z * kWarpAttnWarps) {
        float *po = a.part + (((size_t)i * a.n_head + h) * S + c) * (size_t)ARB_ATTN_PART(hd);
        const int k0 = arb_attn_warp_begin(L, c, w), nk = arb_attn_warp_begin(L, c + 1, w) - k0;
        if (nk <= 0) { // an unused part: the merge skips it by its max
            if (lane == 0)
                po[0] = -INFINITY;
            continue;
        }
        float m = -INFINITY;
        for (int t = lane; t < nk; t += 32) {
            const float *kr = kb + (size_t)key_row(k0 + t, n_prefix, anc) * a.kv_stride;
            const float s = arb_attn_warp_dot(qs, kr, hd, a.scale);
            sc[t] = s;
            m = fmaxf(m, s);
        }
        for (int off = 16; off > 0; off >>= 1)
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        float sum = 0.0f;
        for (int t = lane; t < nk; t += 32) {
            const float e = expf(sc[t] - m);
            sc[t] = e;
            sum += e;
        }
        for (int off = 16; off > 0; off >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, off);
        __syncwarp(); // every lane's e in sc
        float o[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            o[r] = 0.0f;
        for (int t0 = 0; t0 < nk; t0 += KB) {
            float vv[KB][R];
#pragma unroll
            for (int u = 0; u < KB; u++) {
                const int t = t0 + u;
                const float *vr = vb + (size_t)key_row(k0 + (t < nk ? t : 0), n_prefix, anc) * a.kv_stride;
#pragma unroll
                for (int r = 0; r < R; r++)
                    vv[u][r] = t < nk && lane + 32 * r < hd ? vr[lane + 32 * r] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < KB; u++)
                if (t0 + u < nk) {
                    const float e = sc[t0 + u];
#pragma unroll
                    for (int r = 0; r < R; r++)
                        o[r] = fmaf(e, vv[u][r], o[r]);
                }
        }
        if (lane == 0)
            po[0] = m, po[1] = sum;
#pragma unroll
        for (int r = 0; r < R; r++)
            if (lane + 32 * r < hd)
                po[2 + lane + 32 * r] = o[r];
        __syncwarp(); // sc free for the warp's next part
    }
    if constexpr (FUSE) {
        __shared__ int last_s;
        __threadfence(); // this block's partials, visible device-wide before its ticket
        __syncthreads();
        if (threadIdx.x == 0) {
            int *ticket = a.ticket + (size_t)i * a.n_head + h;
            last_s = atomicAdd(ticket, 1) == (int)gridDim.z - 1;
            if (last_s)
                *ticket = 0;
        }
        __syncthreads();
        if (last_s) {
            __threadfence(); // the other blocks' partials: read past L1 in merge_parallel_block
            merge_parallel_block(a, i, h, oq);
        }
    }
}

} // namespace

// The warp kernel's dynamic shared memory: q, the ancestors, each warp's part scores.
static size_t warp_attention_smem(int head_dim, int n_batch_max, int warp_keys)
{
    return sizeof(float) * ((size_t)head_dim + (size_t)kWarpAttnWarps * warp_keys) + sizeof(int) * (size_t)n_batch_max;
}

bool k_attention_warp_fits(int head_dim, int kv_stride, int n_ctx, int n_batch_max, int keys)
{
    // 48 KB: the shared memory a kernel gets without an attribute (a context the block kernel
    // fits, up to ~56K keys, needs under 31 KB here at n_batch_max 512), less 1 KB for the
    // static arrays (the fused merge's, ~400 bytes).
    const size_t smem = warp_attention_smem(head_dim, n_batch_max,
                                            arb_attn_warp_width(n_ctx, ARB_ATTN_MAX_SPLITS, keys));
    return head_dim % 4 == 0 && kv_stride % 4 == 0 && head_dim <= 32 * 8 && smem + 1024 <= 48 * 1024;
}

size_t k_attention_smem(int n_ctx, int n_batch_max, int head_dim)
{
    return sizeof(float) * ((size_t)head_dim + kAttnThreads + (size_t)n_ctx) + sizeof(int) * (size_t)n_batch_max;
}

// The attribute is per kernel, not per launch: it is set to the most the device allows
// (its opt-in less the kernel's static shared memory), so a context with a smaller
// n_ctx cannot lower it under another context's needs.
cudaError_t k_attention_prepare(size_t smem_optin, size_t *max_dynamic)
{
    cudaFuncAttributes fa, fs;
    cudaError_t e = cudaFuncGetAttributes(&fa, attention_kernel);
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fs, attention_split_kernel);
    if (e != cudaSuccess)
        return e;
    *max_dynamic = smem_optin > fa.sharedSizeBytes ? smem_optin - fa.sharedSizeBytes : 0;
    const size_t split_max = smem_optin > fs.sharedSizeBytes ? smem_optin - fs.sharedSizeBytes : 0;
    e = cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)*max_dynamic);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attention_split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)split_max);
    if (split_max < *max_dynamic)
        *max_dynamic = split_max;
    return e;
}

// The merge of the partials: the serial kernel, or with a->merge_parallel the parallel one,
// which also quantizes the output for the int8 GEMV when oq is given (then *quantized).
static void launch_merge(kstream st, const attn_launch *a, const xq8 *oq, bool *quantized)
{
    const dim3 grid((unsigned)a->n, (unsigned)a->n_head);
    if (!a->merge_parallel) {
        klaunch(st, attention_merge_kernel, grid, 64, 0, *a);
        return;
    }
    const bool q = oq && a->head_dim % 32 == 0;
    klaunch(st, attention_merge_parallel_kernel, grid, 32 * ((a->head_dim + 31) / 32), 0, *a, q ? *oq : xq8{});
    *quantized = q;
}

void k_attention(kstream st, const attn_launch *a, const xq8 *oq, bool *quantized)
{
    *quantized = false;
    if (a->splits <= 1) {
        const dim3 grid((unsigned)a->n, (unsigned)a->n_head);
        klaunch(st, attention_kernel, grid, kAttnThreads, k_attention_smem(a->n_ctx, a->n_batch_max, a->head_dim),
                *a);
        return;
    }
    if (a->warp) {
        // Blocks per (node, head): enough for every part at batch 1 (4 warps each), fewer
        // as the eval grows (arb_attn_groups); the part's arithmetic does not depend on it.
        const int z = arb_attn_groups(a->n, a->n_head, (a->splits + kWarpAttnWarps - 1) / kWarpAttnWarps);
        const dim3 grid((unsigned)a->n, (unsigned)a->n_head, (unsigned)z);
        const size_t smem = warp_attention_smem(a->head_dim, a->n_batch_max, a->warp_keys);
        const int R = (a->head_dim + 31) / 32;
        if (a->merge_fused) { // the merge in the kernel's last block per (node, head)
            const bool q = oq && a->head_dim % 32 == 0;
            const xq8 o = q ? *oq : xq8{};
            if (R <= 1)
                klaunch(st, attention_warp_kernel<1, true>, grid, kWarpAttnWarps * 32, smem, *a, o);
            else if (R <= 2)
                klaunch(st, attention_warp_kernel<2, true>, grid, kWarpAttnWarps * 32, smem, *a, o);
            else if (R <= 4)
                klaunch(st, attention_warp_kernel<4, true>, grid, kWarpAttnWarps * 32, smem, *a, o);
            else
                klaunch(st, attention_warp_kernel<8, true>, grid, kWarpAttnWarps * 32, smem, *a, o);
            *quantized = q;
            return;
        }
        if (R <= 1)
            klaunch(st, attention_warp_kernel<1, false>, grid, kWarpAttnWarps * 32, smem, *a, xq8{});
        else if (R <= 2)
            klaunch(st, attention_warp_kernel<2, false>, grid, kWarpAttnWarps * 32, smem, *a, xq8{});
        else if (R <= 4)
            klaunch(st, attention_warp_kernel<4, false>, grid, kWarpAttnWarps * 32, smem, *a, xq8{});
        else
            klaunch(st, attention_warp_kernel<8, false>, grid, kWarpAttnWarps * 32, smem, *a, xq8{});
        launch_merge(st, a, oq, quantized);
        return;
    }
    // The split kernel's scores: at most ceil(n_ctx / splits) keys per part (less than
    // the block kernel's n_ctx, so k_attention_smem bounds it).
    const size_t keys = (size_t)arb_attn_part_keys_max(a->n_ctx, a->splits, a->chunk);
    const size_t smem = sizeof(float) * ((size_t)a->head_dim + kSplitThreads + keys) + sizeof(int) * (size_t)a->n_batch_max;
    const int z = arb_attn_groups(a->n, a->n_head, a->splits);
    klaunch(st, attention_split_kernel, dim3((unsigned)a->n, (unsigned)a->n_head, (unsigned)z), kSplitThreads, smem,
            *a);
    launch_merge(st, a, oq, quantized);
}
