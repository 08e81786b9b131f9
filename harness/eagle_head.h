/* eagle_head.h — the EAGLE-1 draft head (Li et al. 2024; docs/heads.md "EAGLE"): one Llama
 * decoder layer that predicts the target's next feature from (feature, next token embedding).
 *
 * Feature f_t: the target's last hidden state after the final RMSNorm (what arb_eval's `hidden`
 * returns and what the LM head multiplies) — the reference's EAGLE-1 feature too (HF LlamaModel's
 * last_hidden_state, already normed; its lm_head is applied to the head's output directly).
 * Input row i (position i): x_i = [e(x_{i+1}), f_i] (the reference's concat order), then
 *   h0 = W_fc x + b_fc                                (2E -> E, with bias, as the reference)
 *   q, k, v = W_q h0, W_k h0, W_v h0                  (no input RMSNorm: the reference drops it)
 *   RoPE on q, k (pairs (2j, 2j+1), base rope_base), causal GQA attention over the rows before
 *   and at i (n_head query heads share n_head_kv key/value heads), a = W_o o, h1 = h0 + a
 *   n1 = g ⊙ h1 / rms(h1)                              (post-attention RMSNorm)
 *   f̂_{i+1} = h1 + W_d (SiLU(W_g n1) ⊙ W_u n1)        (SwiGLU MLP)
 *   logits = W_lm f̂ (the target's frozen output matrix; no norm, as EAGLE-1)
 * Loss per row: SmoothL1(f̂, f_{i+1}) averaged over E, + w_cls · CE(logits, x_{i+2}).
 *
 *     arb_eagle_cfg c = {.E = 576, .V = 49152, .H = 9, .KVH = 3, .hd = 64, .F = 1536, ...};
 *     arb_eagle *h; arb_eagle_new(&c, &h, &err); arb_eagle_init(h, seed);
 *     arb_eagle_ws *ws; arb_eagle_ws_new(h, 128, 128, &ws, &err);
 *     arb_eagle_seq_step(h, w_lm, emb, f, NULL, tok, y, T, 1.0f, 0.1f, grad, ws, &loss, ranks);  // training
 *     arb_eagle_rows(h, emb, kv, n, ...);                                                  // drafting
 *
 * Parameters in one flat array (h->params), the optimizer's vector. Deterministic (fixed loop
 * order, no threads); step and rows allocate nothing.
 */
#ifndef ARB_EAGLE_HEAD_H
#define ARB_EAGLE_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

typedef struct arb_eagle_cfg {
    int E;            /* the target's hidden size */
    int V;            /* its vocabulary */
    int H, KVH, hd;   /* query heads, key/value heads (H % KVH == 0), head dim (even) */
    int F;            /* MLP inner size */
    float rope_base;  /* RoPE frequency base */
    float eps;        /* RMSNorm epsilon */
} arb_eagle_cfg;

typedef struct arb_eagle {
    arb_eagle_cfg c;
    float *fc_w, *fc_b;   /* [E x 2E], [E] */
    float *wq;            /* [H hd x E] */
    float *wk, *wv;       /* [KVH hd x E] */
    float *wo;            /* [E x H hd] */
    float *norm;          /* [E] post-attention RMSNorm weight */
    float *wg, *wu;       /* [F x E] */
    float *wd;            /* [E x F] */
    float *params;        /* all of the above, back to back (owned) */
    size_t n_params;
} arb_eagle;

/* ARB_E_INVAL naming the bad field. */
int arb_eagle_new(const arb_eagle_cfg *c, arb_eagle **out, arb_err *err);
void arb_eagle_free(arb_eagle *h); /* NULL-safe */
/* PyTorch Linear's default U(+-1/sqrt(in)) for every matrix and b_fc, norm weight 1. */
void arb_eagle_init(arb_eagle *h, uint64_t seed);
/* The base model's layer sizes (n_head, n_head_kv, head_dim, <arch>.feed_forward_length,
   <arch>.rope.freq_base, <arch>.attention.layer_norm_rms_epsilon) read from its GGUF. */
int arb_eagle_cfg_from_model(const arb_model *m, arb_eagle_cfg *c, arb_err *err);

typedef struct arb_eagle_ws arb_eagle_ws;
/* Scratch for sequences / batches of up to rows rows attending to at most keys keys. */
int arb_eagle_ws_new(const arb_eagle *h, int rows, int keys, arb_eagle_ws **out, arb_err *err);
void arb_eagle_ws_free(arb_eagle_ws *ws); /* NULL-safe */
/* Drafting (arb_eagle_rows) runs the layer's matrix products on pool's kernel threads
   (arb_ctx_parallel_for; NULL: the caller's thread). The bits do not depend on it. */
void arb_eagle_ws_set_pool(arb_eagle_ws *ws, arb_ctx *pool);

typedef struct arb_eagle_loss {
    double reg;  /* Σ over rows of SmoothL1 (mean over E) */
    double ce;   /* Σ over rows with a target token of the cross-entropy (nats) */
    int n;       /* rows */
    int n_tok;   /* rows with a target token */
} arb_eagle_loss;

/* One teacher-forced sequence of T rows (T <= ws rows): f [(T + 1) x E] the target's features
   f_0..f_T (row i is input i's feature, row i + 1 its regression target); f_in [T x E] the
   inputs instead of f's rows 0..T-1 when non-NULL (EAGLE's input noise: the targets stay clean);
   tok [T] the tokens
   x_1..x_T (input i embeds tok[i]); y [T] the next-token targets x_2..x_{T+1} (-1: none).
   emb [V x E] the token embedding, w_lm [V x E] the output matrix. Fills lo; if grad is non-NULL
   adds w_reg d(Σ reg)/dθ + w_cls d(Σ CE)/dθ. ranks (optional, [T]): how many logits beat the
   target's (0 = top-1; -1 without target). */
void arb_eagle_seq_step(const arb_eagle *h, const float *w_lm, const float *emb, const float *f, const float *f_in,
                        const int32_t *tok, const int32_t *y, int T, float w_reg, float w_cls, float *grad,
                        arb_eagle_ws *ws, arb_eagle_loss *lo, int32_t *ranks);

/* ---- drafting: the layer on a key/value cache ---- */

typedef struct arb_eagle_kv {
    int cap;        /* rows */
    float *k, *v;   /* [cap x KVH hd] (k after RoPE) */
} arb_eagle_kv;
int arb_eagle_kv_new(const arb_eagle *h, int cap, arb_eagle_kv **out, arb_err *err);
void arb_eagle_kv_free(arb_eagle_kv *kv); /* NULL-safe */

/* n rows (n <= ws rows): row i is the input (f_in[i], e(tok[i])) at position pos[i]; its key and
   value go to kv slot slot[i] (all n are written before any attention), then it attends to
   kv rows [0, n_ctx) and to the n_vis[i] slots vis[i * max_vis ..] (its tree ancestors and
   itself; slots >= n_ctx), n_ctx + n_vis[i] <= ws keys. Writes f̂ [n x E] to out. */
void arb_eagle_rows(const arb_eagle *h, const float *emb, arb_eagle_kv *kv, int n, const float *f_in,
                    const int32_t *tok, const int *pos, const int *slot, int n_ctx, const int *vis, const int *n_vis,
                    int max_vis, float *out, arb_eagle_ws *ws);

#endif
