/* cuda.h — the CUDA forward: the whole transformer of an arb_eval on the device.
 *
 * The CPU backend works op by op on host buffers (backend.h). A GPU cannot: every
 * host round trip between ops costs more than the op. So the CUDA backend takes
 * one eval whole: forward.c hands it tokens, parents and positions, and it runs
 * every layer on device-resident weights, activations and KV cache, returning only
 * what the caller asked for (full logits rows, one argmax per node, or each node's
 * top-K ids and softmax probabilities).
 *
 *     arb_cuda_model_desc d = {...};                       // filled by model.c from arb_model
 *     arb_cuda_model *cm; arb_cuda_model_new(&d, false, &cm, &err);   // uploads once
 *     arb_cuda_ctx *cc;   arb_cuda_ctx_new(cm, n_ctx, n_batch_max, n_layer, cs, &cc, &err);
 *     arb_cuda_forward(cc, &step, &err);                   // one batch of nodes
 *     arb_cuda_kv_commit(cc, n_past, path, n, &err);       // keep a root-to-node path
 *
 * This header is plain C and knows nothing of arb_model: engine/cuda depends only on
 * its descriptor, so the kernels can be reviewed (and this interface tested) apart.
 *
 * Modes. exact: every matrix product is a quantized GEMV kernel (Q4_0/Q4_1/Q8_0: int8
 * activations and dp4a; 16+ nodes: the int8 tensor-core tree kernel, bit-identical to
 * it) whose reduction order for one (row, node) depends only on the row length, and the
 * attention of a node depends only on its key list, so a node's logits are
 * bit-identical alone or inside any tree (as on the CPU backend). fast (default): the
 * float-activation GEMV, and batches of ARB_CUDA_GEMM_MIN_NODES or more nodes use cuBLAS
 * on FP16 copies of the weights (FP32 accumulation): deterministic run to run, not
 * batch-invariant. ARBOR_CUDA_GEMV=dp4a|packed|rowwarp overrides the GEMV (docs/gpu.md).
 *
 * Built only when nvcc is found (ARB_HAVE_CUDA); without it, or without a device,
 * arb_cuda_model_new fails with ARB_E_NODEVICE and a one-line reason.
 * Thread-safety: a model is shared read-only; a ctx is used by one thread at a time.
 */
#ifndef ARB_CUDA_H
#define ARB_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "engine.h"

/* Batches of at least this many nodes use cuBLAS in fast mode. Below it the GEMV
   kernel reads the quantized weights once per 8 nodes, which costs less than one
   read of the FP16 copy. */
#define ARB_CUDA_GEMM_MIN_NODES 16
/* Evals of at least this many nodes run the int8 layout's matrices on the tensor-core tree
   kernel (bit-identical to the int8 GEMV, so exact mode stays batch-invariant). */
#define ARB_CUDA_TREE_MIN_NODES 16

/* One weight matrix as stored in the GGUF: n_out rows of n_in elements, row_bytes each. */
typedef struct arb_cuda_mat_desc {
    uint32_t type; /* ARB_TYPE_*: F32 F16 BF16 Q4_0 Q4_1 Q8_0 Q4_K Q6_K */
    int n_in, n_out;
    size_t row_bytes;
    const void *data; /* host, n_out * row_bytes */
} arb_cuda_mat_desc;

typedef struct arb_cuda_layer_desc {
    const float *attn_norm, *ffn_norm;         /* [n_embd] */
    const float *bq, *bk, *bv;                 /* biases or NULL */
    const float *q_norm, *k_norm;              /* [head_dim] or NULL */
    arb_cuda_mat_desc wq, wk, wv, wo, w_gate, w_up, w_down;
} arb_cuda_layer_desc;

typedef struct arb_cuda_model_desc {
    const char *path; /* for messages */
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    float eps;
    bool rope_neox;
    arb_cuda_mat_desc tok_embd, output; /* output may equal tok_embd (tied) */
    const float *output_norm;
    const arb_cuda_layer_desc *layers; /* n_layer */
} arb_cuda_model_desc;

typedef struct arb_cuda_model arb_cuda_model;
typedef struct arb_cuda_ctx arb_cuda_ctx;

/* Number of usable CUDA devices (0 without a driver, a device or a CUDA build). */
int arb_cuda_device_count(void);
/* ARB_E_NODEVICE (with the reason) when there is no device. */
int arb_cuda_device_get(arb_gpu_info *out, arb_err *err);
/* Measured device-to-device copy bandwidth (bytes read + written per second) over a
   `bytes` buffer; < 0 on failure. */
double arb_cuda_probe_bw(size_t bytes, int reps);

/* Upload the weights once. exact: see the header comment. ARB_E_NODEVICE without a
   device, ARB_E_NOMEM when the device memory is short (the message says how much was
   asked for), ARB_E_UNSUPPORTED for a weight type the kernels do not read. */
int arb_cuda_model_new(const arb_cuda_model_desc *d, bool exact, arb_cuda_model **out, arb_err *err);
void arb_cuda_model_free(arb_cuda_model *m); /* NULL-safe */
bool arb_cuda_model_exact(const arb_cuda_model *m);
size_t arb_cuda_model_device_bytes(const arb_cuda_model *m); /* weights + FP16 and packed copies */

/* A sequence: KV cache of n_layer x n_ctx rows, scratch for n_batch_max nodes.
   cs: n_ctx x head_dim RoPE (cos, sin) pairs, as forward.c builds them (copied). */
int arb_cuda_ctx_new(arb_cuda_model *m, int n_ctx, int n_batch_max, int n_layer, const float *cs,
                     arb_cuda_ctx **out, arb_err *err);
void arb_cuda_ctx_free(arb_cuda_ctx *c); /* NULL-safe */

/* One batch: n <= n_batch_max nodes whose KV rows go to n_prefix + i and who attend
   to rows 0..n_prefix-1, their ancestors and themselves (backend.h, arb_attn_args).
   Head rows head_from..n-1 produce outputs, row r of each output is node head_from+r. */
typedef struct arb_cuda_step {
    const int32_t *tok, *parent, *pos; /* n each; parents validated by the caller */
    int n, n_prefix, head_from;
    float *logits;   /* NULL, or (n - head_from) x n_vocab floats on the host */
    int32_t *argmax; /* NULL, or (n - head_from) ids on the host (lowest id on ties) */
    float *hidden;   /* NULL, or (n - head_from) x n_embd final-normed states on the host */
    int topk_k;      /* 0, or 1..ARB_TOPK_K_MAX: top-K ids and softmax probabilities per row */
    int32_t *topk_ids; /* NULL, or (n - head_from) x topk_k ids on the host, best first */
    float *topk_p;     /* NULL, or (n - head_from) x topk_k probabilities over the whole row */
} arb_cuda_step;
int arb_cuda_forward(arb_cuda_ctx *c, const arb_cuda_step *s, arb_err *err);

/* Row r of the last forward's logits (head row r: node head_from + r), computed on the
   device whatever the step returned, into `row` (n_vocab floats on the host). ARB_E_INVAL
   if the last forward computed no such row. */
int arb_cuda_logits_row(arb_cuda_ctx *c, int r, float *row, arb_err *err);

/* What an output-head call returns (host buffers; NULL / 0 = not asked): as arb_cuda_step's
   outputs of the same names, one row per hidden row. */
typedef struct arb_cuda_head_out {
    float *logits;     /* n x n_vocab */
    int32_t *argmax;   /* n */
    int topk_k;        /* 0, or 1..ARB_TOPK_K_MAX */
    int32_t *topk_ids; /* n x topk_k, best first */
    float *topk_p;     /* n x topk_k */
} arb_cuda_head_out;

/* The model's output head on n host rows of final-norm hidden state, 1 <= n <= n_batch_max:
   the forward's own head path on the device (arb_ctx_output_head_ex), then the forward's
   argmax and top-K kernels on its logits; only the outputs asked for in `o` are copied back.
   Overwrites the last forward's logits rows (arb_cuda_logits_row then refuses them). */
int arb_cuda_output_head(arb_cuda_ctx *c, const float *hidden, int n, const arb_cuda_head_out *o, arb_err *err);

/* Rows n_past + path[j] -> n_past + j for every layer (path strictly increasing). */
int arb_cuda_kv_commit(arb_cuda_ctx *c, int n_past, const int32_t *path, int n, arb_err *err);

/* ---- host-side pieces, built and tested without a GPU (cuda_host.c) ---- */

/* Position of node i = n_prefix + depth(i); false if a parent is not -1 or < i. */
bool arb_cuda_tree_positions(const int32_t *parent, int n, int n_prefix, int32_t *pos);
/* Node i's key rows in attention order: 0..n_prefix-1, its ancestors root first at
   n_prefix + a, itself at n_prefix + i. Writes up to cap rows; returns the count. */
int arb_cuda_key_rows(const int32_t *parent, int i, int n_prefix, int32_t *rows, int cap);
/* Bytes of device memory the weights of d take (raw blocks, norms), and the extra
   FP16 copies that fast mode adds; false if a type is not one the kernels read. */
bool arb_cuda_weight_bytes(const arb_cuda_model_desc *d, size_t *raw, size_t *fp16);
/* Whether the kernels read this block type. */
bool arb_cuda_type_supported(uint32_t type);
/* The packed layout of the decode GEMV (cuda_kernels.cu): quant and scale bytes per
   32-element block for the types it packs (Q4_0 16+2, Q4_1 16+4, Q8_0 32+2); false for
   the others, which the GEMV reads in their GGUF blocks. Rows are packed in chunks of
   32 blocks (1024 elements), the last one padded. */
bool arb_cuda_packed_block(uint32_t type, int *quant_bytes, int *scale_bytes);
/* Device bytes of the packed copies: every matrix a GEMV reads (7 per layer, the
   head once even when tied to the embedding), rows padded to whole chunks, quants and
   scales each rounded to 256. */
size_t arb_cuda_packed_bytes(const arb_cuda_model_desc *d);
/* One row of n_in elements (GGUF blocks of a packed type) into the packed layout
   (cuda_pack.h, the code the device's upload runs): qs gets ceil(n_in / 1024) x 32 x
   quant_bytes, sc ceil(n_in / 1024) x 32 x scale_bytes. false for other types. */
bool arb_cuda_pack_row(uint32_t type, const void *row, int n_in, uint8_t *qs, uint8_t *sc);
/* The same in either layout: q8x false, the float GEMV's (as arb_cuda_pack_row); true,
   the int8 GEMV's (ARBOR_CUDA_GEMV=dp4a; cuda_pack.h arb_pack_lane_q8x). */
bool arb_cuda_pack_row_layout(uint32_t type, const void *row, int n_in, bool q8x, uint8_t *qs, uint8_t *sc);

#ifdef __cplusplus
}
#endif

#endif
