/* model.h — internal: the loaded model (hyperparameters, bound weights,
 * tokenizer) shared read-only by all contexts. engine.h keeps arb_model opaque;
 * model.c (load, info, tokenizer wrappers) and forward.c (contexts, eval,
 * commit) both see the body through this header.
 *
 *     arb_model *m; arb_model_load(path, &lo, &m, &err);   // engine.h
 *     const arb_layer *L = &m->layers[0];                    // L->wq, L->attn_norm ...
 *
 * Adding an architecture: a row in model.c's arch table (name, rope style,
 * which optional tensors it requires), then any new per-layer tensor here and
 * its use in forward.c.
 */
#ifndef ARB_MODEL_H
#define ARB_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/matmul.h"
#include "engine.h"
#include "gguf.h"
#include "tokenizer.h"

typedef enum arb_arch {
    ARB_ARCH_LLAMA = 0, /* SmolLM2, Llama-2/3, Vicuna: adjacent-pair rope */
    ARB_ARCH_QWEN2 = 1, /* + q/k/v biases, NEOX rope */
    ARB_ARCH_QWEN3 = 2, /* + per-head q/k RMSNorm, NEOX rope */
    ARB_ARCH_GEMMA3 = 3, /* qwen3's q/k norms + post-attention/post-FFN norms, GeGLU, scaled
                            embeddings, sliding-window (local) layers with their own rope base */
} arb_arch;

typedef struct arb_layer {
    const float *attn_norm;     /* [n_embd] */
    arb_qmat wq, wk, wv;        /* n_embd -> n_head*head_dim, n_head_kv*head_dim (x2) */
    const float *bq, *bk, *bv;  /* qwen2 biases, else NULL */
    const float *q_norm, *k_norm; /* qwen3 per-head norms [head_dim], else NULL */
    arb_qmat wo;                /* n_head*head_dim -> n_embd */
    const float *post_attn_norm; /* gemma3: RMSNorm of the attention output [n_embd], else NULL */
    const float *ffn_norm;      /* [n_embd] */
    const float *post_ffn_norm; /* gemma3: RMSNorm of the FFN output [n_embd], else NULL */
    bool swa;                   /* gemma3 local layer: sliding window m->n_swa, rope table cs_swa */
    arb_qmat w_gate, w_up;      /* n_embd -> n_ff */
    arb_qmat w_down;            /* n_ff -> n_embd */
} arb_layer;

struct arb_model {
    char *path;             /* owned copy */
    arb_gguf *g;            /* owned; weights point into its mapping */
    arb_tokenizer *tok;     /* owned; NULL if the file has no tokenizer */
    arb_load_opts opts;     /* as passed (n_threads resolved; isa = the family's name, a
                               static string, not the caller's pointer) */
    const struct mm_impl *kern; /* CPU kernel family of every matrix (opts.isa) */
    arb_arch arch;
    char arch_name[16];     /* "llama", ... */
    char name[128];         /* general.name or file name */
    bool vocab_only;        /* no tensors bound: tokenizer/metadata only */
    int n_vocab;            /* rows of the output head */
    int n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    float eps;              /* RMSNorm epsilon */
    float rope_base;        /* rope.freq_base */
    float rope_freq_scale;  /* 1/linear scaling factor, 1 if none */
    bool rope_neox;         /* halves (qwen) vs adjacent pairs (llama) */
    const float *rope_freqs; /* [head_dim/2] divisors (Llama-3.1 rope_freqs.weight) or NULL */
    float attn_scale;       /* score scale: 1/sqrt(head_dim), Gemma-3 27B 1/sqrt(n_embd/n_head) */
    /* Gemma-3 (zero / false / 1 elsewhere): */
    int n_swa;              /* sliding window of the layers with swa set (attention.sliding_window) */
    float rope_base_swa;    /* rope base of those layers (rope.freq_base_swa, default 10000) */
    float embd_scale;       /* embeddings multiplied by this (sqrt(n_embd)); 1 = none */
    float logit_softcap;    /* final_logit_softcapping: logits = c tanh(logits / c); 0 = none */
    bool geglu;             /* FFN activation gelu_tanh(gate) * up instead of silu(gate) * up */
    arb_qmat tok_embd;      /* n_vocab rows of n_embd */
    const float *output_norm; /* [n_embd] */
    arb_qmat output;        /* n_vocab rows of n_embd (= tok_embd when tied) */
    arb_layer *layers;      /* n_layer */
    void *packed;           /* owned: repacked weights for the AVX-512 kernels, or NULL */
    void *widened;          /* owned: matrices widened at load (Q5_0/IQ4_NL/IQ4_XS -> Q8_0, Q3_K ->
                               Q6_K, Q5_1/Q2_K -> F32; model.c widen_matrices), or NULL */
    size_t widened_bytes;
    float *dequant;         /* owned: F32 copies of the matrices opts.dequant_f32 selected, or NULL */
    size_t packed_bytes, dequant_bytes; /* of packed and dequant (arb_bigmem_free) */
    struct arb_cuda_model *cuda; /* owned: the weights on the GPU (backend cuda), or NULL */
    uint64_t n_params, weight_bytes;
};

#endif
