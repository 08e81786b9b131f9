// cuda_int.h — internal to engine/cuda: the device-resident model and the kernel
// launchers that cuda_model.cu and cuda_forward.cu share. C++ (nvcc) only.
#ifndef ARB_CUDA_INT_H
#define ARB_CUDA_INT_H

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda.h"

// A weight matrix on the device: the GGUF blocks as stored, plus (fast mode) an
// FP16 copy for cuBLAS, plus (Q4_0, Q4_1, Q8_0 matrices that a GEMV reads) the packed
// layout of the decode kernel: quants of every block contiguous, scales apart.
struct dmat {
    uint32_t type;
    int n_in, n_out;
    size_t row_bytes;
    const uint8_t *q;  // n_out * row_bytes
    const __half *h;   // n_out x n_in, or NULL
    const uint8_t *pq; // packed quants (n_out x n_in/32 x 16 or 32 B), or NULL
    const uint8_t *ps; // packed scales (n_out x n_in/32 x 2 or 4 B), or NULL
    bool q8x;          // pq/ps in the int8 layout (cuda_pack.h): the GEMV reads k_quant_q8's x
};

// Activations quantized to int8 per block of 32 (k_quant_q8), for the int8 GEMV: node t's
// values at q + t * ldq (whole chunks of 1024, the padding zero), the blocks' scales and
// integer sums at d + t * ldb, isum + t * ldb (ldq = 32 ldb).
struct xq8 {
    const int8_t *q;
    const float *d;
    const int32_t *isum;
    int ldq, ldb;
};

struct dlayer {
    const float *attn_norm, *ffn_norm, *bq, *bk, *bv, *q_norm, *k_norm;
    dmat wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct arb_cuda_model {
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    float eps;
    bool neox, exact;
    dmat tok_embd, output;
    const float *output_norm;
    dlayer *layers; // host array of device pointers
    void *arena;    // one device allocation holding everything above
    size_t arena_bytes;
    int device;
    size_t smem_optin; // largest dynamic shared memory a block may opt into
};

// Where a launcher's kernels go: a stream, and whether each may be launched while the
// kernel before it still runs (programmatic dependent launch, sm_90+: the kernels wait
// for their predecessor's grid before touching memory, so only launch latency overlaps;
// arb_cuda_ctx sets it, ARBOR_CUDA_PDL overrides). {} = the default stream, no overlap.
struct kstream {
    cudaStream_t st;
    bool pdl;
    int rows; // ARBOR_CUDA_ROWS: rows per warp of the int8 GEMV at 2-15 nodes (0 or 1: one)
};

// Kernel launchers (cuda_kernels.cu; k_attention* in cuda_attention.cu). All run on `st`; none
// synchronizes.
// y[t*ldy + o] (+)= dot(W[o], x[t*ldx ..]) for t < n: the quantized GEMV, 8 nodes per
// weight read, each (row, node) reduced in an order fixed by n_in alone.
// xq: x quantized by k_quant_q8, read when w is in the int8 layout (NULL: the float GEMV
// on w's GGUF blocks instead).
void k_gemv(kstream st, const dmat *w, const float *x, int ldx, int n, float *y, int ldy, bool accumulate,
            const xq8 *xq);
// x (n rows of n_in, stride ldx) to int8 blocks in out's buffers (arb_q8x_quant_block's
// arithmetic; ldq/ldb of out must be those of n_in: arb_pack_chunks(n_in) x 1024 / 32).
void k_quant_q8(kstream st, const float *x, int ldx, int n, int n_in, const xq8 *out);
// w's GGUF blocks (w->q) into the packed layout (arb_cuda_packed_block) at qs
// (16-byte aligned) and sc; nothing for a type that is not packed.
void k_pack(kstream st, const dmat *w, uint8_t *qs, uint8_t *sc);
// The packed GEMV of several matrices that read the same x (Q, K, V: up to 3), in
// one launch, each row summed exactly as k_gemv sums it (y[i]: n x w[i]->n_out, no
// accumulate). false, launching nothing, unless all are packed with one type and n_in.
bool k_gemv_multi(kstream st, const dmat *const *w, int nw, const float *x, int ldx, int n, float *const *y,
                  const xq8 *xq);
// Q, K and V (w[0..2], packed alike, n_out multiples of 4) on x, then llama's interleaved RoPE
// and the KV store as k_rope_store does them, in one launch (ARBOR_CUDA_QKV=fused): q (n x
// w[0]->n_out) rotated in place, K rotated and V into cache rows *n_prefix + i of kc / vc.
// false, launching nothing, unless the three are packed alike in the int8 layout (xq given)
// and n < ARB_CUDA_TREE_MIN_NODES.
bool k_gemv_qkv_rope(kstream st, const dmat *const *w, int n, const xq8 *xq, float *q, float *kc, float *vc,
                     int head_dim, const int32_t *pos, const float *cs, const int *n_prefix);
// y = SiLU(gate . x) * (up . x) in one launch, each dot exactly as k_gemv's and the
// SiLU as k_swiglu's (y: n x n_out). false, launching nothing, unless both are packed
// with one type and shape. oq (optional; ARBOR_CUDA_GLU=fused): y also quantized for the
// int8 GEMV into oq (n_in = n_out), as k_quant_q8 would write it; oq must not alias xq, and
// with oq the matrices must be in the int8 layout (else false).
bool k_gemv_glu(kstream st, const dmat *gate, const dmat *up, const float *x, int ldx, int n, float *y,
                const xq8 *xq, const xq8 *oq);
void k_get_rows(kstream st, const dmat *w, const int32_t *ids, int n, float *out);
void k_to_half(kstream st, const dmat *w, __half *out); // whole matrix, for fast mode
// out = x / rms(x) * g per row of dim (double sum of squares, fixed order); out16 optional.
// outq (optional): the rows also quantized for the int8 GEMV, as k_quant_q8 would (one
// launch less; dim % 32 == 0).
void k_rmsnorm(kstream st, const float *x, const float *g, int rows, int dim, float eps, float *out,
               __half *out16, const xq8 *outq);
void k_add_bias(kstream st, float *x, const float *b, int rows, int dim);
void k_swiglu(kstream st, float *g, const float *u, size_t n, __half *out16);
void k_to_half_f32(kstream st, const float *x, size_t n, __half *out);
struct attn_launch {
    const float *q, *k, *v;
    int kv_stride, n;
    const int *n_prefix; // device: rows every node attends to first
    const int32_t *parent;
    int n_head, n_head_kv, head_dim;
    float scale;
    float *out;
    int n_ctx, n_batch_max; // for the shared-memory size
    // splits > 1: split attention (cuda_attn.h, arb_attn_splits): each node's key list in `splits`
    // contiguous parts, one block each, their partials (n x n_head x splits x
    // (head_dim + 2) floats) merged in part order by a second kernel. 1: one block per
    // (node, head) over the whole list.
    int splits;
    int chunk; // keys per part (cuda_attn.h, arb_attn_parts_used); 0: always `splits` parts
    float *part;
    // 1: the warp kernel computes the partials (cuda_attn.h's fixed parts of warp_min keys,
    // wider for long lists; splits = their most), warp_keys floats of scores per warp.
    int warp, warp_min, warp_keys;
    int merge_parallel; // 1: the parallel merge (ARBOR_CUDA_MERGE=parallel; the same bits)
    // 1 (ARBOR_CUDA_MERGE=fused, the warp kernel only): the parallel merge in the warp kernel's
    // last block per (node, head); ticket: n_batch_max x n_head counters, zero between launches
    int merge_fused;
    int *ticket;
};
size_t k_attention_smem(int n_ctx, int n_batch_max, int head_dim);
// Whether the warp attention kernel can run this shape and context (16-byte rows,
// head_dim <= 256, its shared memory within the default 48 KB for parts of `keys` keys).
bool k_attention_warp_fits(int head_dim, int kv_stride, int n_ctx, int n_batch_max, int keys);
// Once per context: allow the attention kernels all the dynamic shared memory the device
// can give them (*max_dynamic).
cudaError_t k_attention_prepare(size_t smem_optin, size_t *max_dynamic);
// oq (or NULL): where the int8 GEMV wants the output quantized; *quantized says whether the
// merge did it (the parallel merge, head_dim a multiple of 32), else the caller quantizes.
void k_attention(kstream st, const attn_launch *a, const xq8 *oq, bool *quantized);
// Argmax per row (lowest id among equal maxima); scratch: k_argmax_scratch_bytes(rows).
size_t k_argmax_scratch_bytes(int rows);
void k_argmax(kstream st, const float *logits, int rows, int n_vocab, void *scratch, int32_t *out);
// RoPE on q (n x n_head heads, in place) and on kn (n x n_head_kv); the rotated keys and
// the values vn stored at cache rows n_prefix + i (n_prefix on the device) of kc, vc; kn
// itself is left as it was. One launch.
void k_rope_store(kstream st, float *q, const float *kn, const float *vn, float *kc, float *vc, int n,
                  int n_head, int n_head_kv, int head_dim, const int32_t *pos, const float *cs, bool neox,
                  const int *n_prefix);
// rows n_past + path[j] -> n_past + j of each layer's K and V (path on the device).
void k_kv_commit(kstream st, float *k, float *v, int n_layer, int n_ctx, int row_dim, int n_past,
                 const int32_t *path, int n);

// Per row: the k (1..ARB_TOPK_K_MAX) largest logits' ids, best first (ties: smaller id
// first), and their softmax probabilities over the whole row; ids, p: rows x k. onepass
// (ARBOR_CUDA_TOPK=onepass): one read of the row instead of k + 2 (the same ids).
void k_topk_softmax(kstream st, const float *logits, int rows, int n_vocab, int k, int32_t *ids, float *p,
                    bool onepass);

#endif
