/* cuda_attn.h — the split attention's partition and merge (cuda_attention.cu,
 * attention_split_kernel / attention_merge_kernel), one definition for the device and the
 * host, so that the unit suite checks them on machines without a GPU
 * (tests/test_cuda_host.c).
 *
 * A node's key list (L keys: the prefix, its ancestors, itself) is cut into U =
 * arb_attn_parts_used(L, S, chunk) parts, part c = keys [arb_attn_part_begin(L, c, U),
 * arb_attn_part_begin(L, c + 1, U)): contiguous, sizes floor(L / U) or one more, some empty
 * when L < U; parts U..S-1 are empty. The partition depends on L, S and chunk alone (S on the
 * model's head count alone), so a node's sums are the same whether it is evaluated alone or
 * inside any tree. Each part leaves a partial of ARB_ATTN_PART(head_dim)
 * floats: m (its largest score; -inf when empty), s (the sum of exp(score - m); 0 when
 * empty), then o[head_dim] (the sum of exp(score - m) v). The merge adds the parts in part
 * order:
 *     M = max_c m_c,  out_j = (sum_c e^(m_c - M) o_c[j]) / (sum_c e^(m_c - M) s_c),
 * empty parts skipped. Plain C11 and CUDA: ARB_ATTN_HD marks the functions for both.
 */
#ifndef ARB_CUDA_ATTN_H
#define ARB_CUDA_ATTN_H

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define ARB_ATTN_HD __host__ __device__ __forceinline__
#else
#define ARB_ATTN_HD static inline
#endif

#define ARB_ATTN_MAX_SPLITS 32
/* Parts x heads per node that arb_attn_splits aims at, and the blocks per launch that
   arb_attn_groups aims at (about two per SM of an H100); the values the H100 runs of
   2026-11-27 used. */
#define ARB_ATTN_SPLIT_TARGET 256
#define ARB_ATTN_TARGET_BLOCKS 264

/* Floats of one part's partial. */
#define ARB_ATTN_PART(head_dim) ((head_dim) + 2)

/* Parts per key list for a model of n_head query heads: about ARB_ATTN_SPLIT_TARGET blocks
   per node at batch 1, whatever the GPU (so results do not depend on its SM count),
   1..ARB_ATTN_MAX_SPLITS. */
ARB_ATTN_HD int arb_attn_splits(int n_head)
{
    const int s = (ARB_ATTN_SPLIT_TARGET + n_head - 1) / n_head;
    return s < 1 ? 1 : s > ARB_ATTN_MAX_SPLITS ? ARB_ATTN_MAX_SPLITS : s;
}

/* First key of part c of S over L keys (c = S: L). */
ARB_ATTN_HD int arb_attn_part_begin(int L, int c, int S) { return (int)((long long)L * c / S); }

/* The parts a list of L keys is cut into: all S (chunk = 0, the default), or, with parts of
   about chunk keys (ARBOR_CUDA_ATTN=chunk:N), ceil(L / chunk) of them, 1..S; parts from
   there to S - 1 are empty. Either way a function of L alone. */
ARB_ATTN_HD int arb_attn_parts_used(int L, int S, int chunk)
{
    if (chunk <= 0)
        return S;
    const int u = (L + chunk - 1) / chunk;
    return u < 1 ? 1 : u > S ? S : u;
}

/* The most keys one part can hold in a context of n_ctx (L <= n_ctx): the shared memory
   the split kernel sizes its scores by. */
ARB_ATTN_HD int arb_attn_part_keys_max(int n_ctx, int S, int chunk)
{
    const int k = (n_ctx + S - 1) / S;
    return chunk > k ? chunk : k;
}

/* Blocks per (node, head) of a launch of n nodes (gridDim.z): S at batch 1 (one part per
   block), fewer as n grows, at least 1; block z computes parts z, z + Z, ... in turn. Only
   which block runs a part depends on it, not the part's arithmetic. */
ARB_ATTN_HD int arb_attn_groups(int n, int n_head, int S)
{
    const long long heads = (long long)n * n_head;
    const long long z = (ARB_ATTN_TARGET_BLOCKS + heads - 1) / heads;
    return z < 1 ? 1 : z > S ? S : (int)z;
}

/* The merge over S partials at pb (ARB_ATTN_PART(head_dim) floats apart): M, then the
   denominator, then element j's numerator, each in part order. */
ARB_ATTN_HD float arb_attn_merge_max(const float *pb, int S, int stride)
{
    float M = -INFINITY;
    for (int c = 0; c < S; c++)
        M = fmaxf(M, pb[(size_t)c * stride]);
    return M;
}

ARB_ATTN_HD float arb_attn_merge_den(const float *pb, int S, int stride, float M)
{
    float den = 0.0f;
    for (int c = 0; c < S; c++) {
        const float m = pb[(size_t)c * stride];
        if (m != -INFINITY)
            den = fmaf(expf(m - M), pb[(size_t)c * stride + 1], den);
    }
    return den;
}

ARB_ATTN_HD float arb_attn_merge_num(const float *pb, int S, int stride, float M, int j)
{
    float o = 0.0f;
    for (int c = 0; c < S; c++) {
        const float m = pb[(size_t)c * stride];
        if (m != -INFINITY)
            o = fmaf(expf(m - M), pb[(size_t)c * stride + 2 + j], o);
    }
    return o;
}

/* The warp attention (the default where it fits; cuda_attention.cu, attention_warp_kernel):
   one warp per part, lane t of the warp taking keys t, t + 32, ... of its part, so a part
   costs no block barrier. Parts lie at fixed places: part c = keys [c w, (c + 1) w) of the
   list (cut at L), w = arb_attn_warp_width(L, S, K): K keys (ARB_ATTN_WARP_KEYS;
   ARBOR_CUDA_ATTN=warp:K) while the list fits S such parts, else ceil(L / S). A function of
   L alone, as above; and while w = K a part's keys do not depend on L at all, so the nodes
   of one tree share their prefix parts (a later kernel may read them once). */
#define ARB_ATTN_WARP_KEYS 32

ARB_ATTN_HD int arb_attn_warp_width(int L, int S, int K)
{
    const int w = (L + S - 1) / S;
    return w > K ? w : K;
}

/* First key of part c (c * w, at most L). */
ARB_ATTN_HD int arb_attn_warp_begin(int L, int c, int w)
{
    const long long b = (long long)c * w;
    return b < L ? (int)b : L;
}

/* Four consecutive floats: one 16-byte load on the device (p 16-byte aligned: the kernel
   runs only for head_dim and row strides that are multiples of 4), four loads on the host. */
ARB_ATTN_HD void arb_attn_ld4(const float *p, float o[4])
{
#ifdef __CUDA_ARCH__
    const float4 t = *(const float4 *)p;
    o[0] = t.x, o[1] = t.y, o[2] = t.z, o[3] = t.w;
#else
    o[0] = p[0], o[1] = p[1], o[2] = p[2], o[3] = p[3];
#endif
}

/* One key's score, one lane: q . k over j in order, into four sums by j mod 4, added as
   (s0 + s1) + (s2 + s3), times scale (hd a multiple of 4). */
ARB_ATTN_HD float arb_attn_warp_dot(const float *q, const float *k, int hd, float scale)
{
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#ifdef __CUDA_ARCH__
#pragma unroll 8
#endif
    for (int j = 0; j < hd; j += 4) {
        float kk[4], qq[4];
        arb_attn_ld4(k + j, kk);
        arb_attn_ld4(q + j, qq);
        s0 = fmaf(qq[0], kk[0], s0), s1 = fmaf(qq[1], kk[1], s1);
        s2 = fmaf(qq[2], kk[2], s2), s3 = fmaf(qq[3], kk[3], s3);
    }
    return ((s0 + s1) + (s2 + s3)) * scale;
}

/* The warp's butterfly over its 32 lanes (lane l adds lane l ^ off's value, off = 16, 8, 4,
   2, 1): what __shfl_xor_sync sums give every lane; here on an array, for the host. */
ARB_ATTN_HD float arb_attn_butterfly_sum(float v[32])
{
    for (int off = 16; off > 0; off >>= 1) {
        float t[32];
        for (int l = 0; l < 32; l++)
            t[l] = v[l] + v[l ^ off];
        for (int l = 0; l < 32; l++)
            v[l] = t[l];
    }
    return v[0];
}

#endif
