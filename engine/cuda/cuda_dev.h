// cuda_dev.h — the device-side helpers every kernel file of the CUDA backend shares
// (cuda_kernels.cu, cuda_attention.cu): the launch with programmatic dependent launch, the
// fixed warp and block reductions, and the int8 quantization of a block of 32 activations.
// CUDA C++ only; in an anonymous namespace, so each file has its own copy of each.
#ifndef ARB_CUDA_DEV_H
#define ARB_CUDA_DEV_H

#include <utility>

#include "cuda_int.h"

namespace {

// Programmatic dependent launch (Hopper, sm_90+; kstream.pdl): every kernel of a step
// first waits until the grid before it has finished and its writes are visible
// (griddepcontrol.wait), then lets the grid after it start launching
// (launch_dependents). The next kernel's blocks can thus be scheduled, and their launch
// latency spent, while this one runs; none of them touches memory before the wait, so
// the order of every read and write is the serial one. Both instructions are no-ops
// for a kernel launched without the attribute; on sm_80/86 they are not emitted.
__device__ __forceinline__ void pdl_enter()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Launches kernel k on s: with the programmatic-serialization attribute when s.pdl. A
// launch error is left for the caller's cudaGetLastError, as with <<< >>>.
template <typename... P, typename... A>
void klaunch(kstream s, void (*k)(P...), dim3 grid, dim3 block, size_t smem, A &&...args)
{
    cudaLaunchAttribute at[1] = {};
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = s.st;
    cfg.attrs = s.pdl ? at : NULL, cfg.numAttrs = s.pdl ? 1 : 0;
    (void)cudaLaunchKernelEx(&cfg, k, std::forward<A>(args)...);
}

// Fixed butterfly over the lanes; every lane gets the row's sum.
__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// One block of 32 activations, one per lane (every lane active): this lane's int8 quant
// as arb_q8x_quant_block computes it (the max and the integer sum by butterflies, exact
// in any order; the scale and the rounding the same IEEE operations, no contraction),
// the block's scale *d and integer sum *sum.
__device__ __forceinline__ int warp_q8(float v, float *d, int *sum)
{
    float amax = fabsf(v);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, amax, off);
        amax = o > amax ? o : amax;
    }
    const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    int qi = __float2int_rn(__fmul_rn(v, id));
    qi = qi > 127 ? 127 : qi < -127 ? -127 : qi;
    int s = qi;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    *d = db;
    *sum = s;
    return qi;
}

// Sum of v over the block in a fixed order: butterfly within each warp, then warp
// results added by thread 0 in warp order. Every thread gets the result.
template <typename F> __device__ F block_sum(F v, F *red)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    const int w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads(); // red may still be read from a previous call
    if ((threadIdx.x & 31) == 0)
        red[w] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        F s = red[0];
        for (int i = 1; i < nw; i++)
            s += red[i];
        red[32] = s;
    }
    __syncthreads();
    return red[32];
}

__device__ float block_max(float v, float *red)
{
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    const int w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        red[w] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = red[0];
        for (int i = 1; i < nw; i++)
            s = fmaxf(s, red[i]);
        red[32] = s;
    }
    __syncthreads();
    return red[32];
}

} // namespace

#endif
