/* cuda_attn.h — the split attention's partition and merge (cuda_kernels.cu,
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

#endif
