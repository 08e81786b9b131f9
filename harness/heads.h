/* heads.h — Medusa and Hydra draft heads on the target's last hidden state (the final-norm
 * output the LM head sees): parameters, forward, hand-written backward (docs/heads.md,
 * docs/spec/drafting.md §9).
 *
 * Head k (0-based) predicts the token k + 2 positions after the hidden state's position (the
 * LM head itself predicts k = -1, the next token). Its input x has d_in[k] floats:
 *   Medusa: x = h                                   (d_in = E),  z = x + SiLU(W x + b)
 *   Hydra:  x = [h, e(t+1), .., e(t+k+1)]           (d_in = E (k+2)),
 *           z = R x + rb + SiLU(W x + b)   (Hydra's ResBlock with a projected residual)
 * where e() are rows of the model's token embedding (the anchor token, then the tokens drafted
 * before head k). logits = W_lm z with the target's own output matrix, frozen and shared.
 *
 *     arb_heads *h;
 *     arb_heads_new(ARB_HEADS_MEDUSA, 4, E, V, &h, &err);
 *     arb_heads_init(h, seed);                          // W = 0, b ~ U(+-1/sqrt(d_in)), R = [I 0]
 *     arb_heads_ws *ws; arb_heads_ws_new(h, 32, &ws, &err);   // scratch for 32 rows
 *     double loss = arb_heads_step(h, k, w_lm, x, y, B, lambda, grad, ws, ranks);
 *     arb_heads_topk(h, k, w_lm, x, 10, ids, probs, ws);      // the drafter
 *
 * Parameters live in one flat array (h->params, n_params floats): the optimizer's vector, and
 * the layout the gradient of arb_heads_step accumulates into. Deterministic: fixed loop order,
 * no threads. Thread-safety: a head set is read-only in step/topk; one ws per thread.
 */
#ifndef ARB_HEADS_H
#define ARB_HEADS_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define ARB_HEADS_MAX 8
#define ARB_HEADS_RANKS 10 /* ranks whose held-out hit rates are kept (tree building, §9.2) */

typedef enum arb_heads_kind { ARB_HEADS_MEDUSA = 0, ARB_HEADS_HYDRA = 1 } arb_heads_kind;

typedef struct arb_heads {
    arb_heads_kind kind;
    int n_heads;                 /* K */
    int n_embd;                  /* E: the target's hidden size */
    int n_vocab;                 /* V: the target's vocabulary */
    int d_in[ARB_HEADS_MAX];     /* input floats of head k: E (Medusa), E (k + 2) (Hydra) */
    float *w[ARB_HEADS_MAX];     /* [E x d_in] row-major (row o = weights of output o) */
    float *b[ARB_HEADS_MAX];     /* [E] */
    float *r[ARB_HEADS_MAX];     /* [E x d_in] Hydra residual projection; NULL for Medusa (identity) */
    float *rb[ARB_HEADS_MAX];    /* [E] Hydra residual bias; NULL for Medusa */
    float *params;               /* every tensor above, back to back (owned) */
    size_t n_params;
} arb_heads;

const char *arb_heads_kind_name(arb_heads_kind k); /* "medusa", "hydra" */
/* K in 1..ARB_HEADS_MAX, E >= 1, V >= 1; parameters zeroed. */
int arb_heads_new(arb_heads_kind kind, int K, int E, int V, arb_heads **out, arb_err *err);
void arb_heads_free(arb_heads *h); /* NULL-safe */
/* Medusa's initialisation: W = 0 (the head starts as the identity + SiLU(b)), b uniform in
   +-1/sqrt(d_in) (PyTorch's Linear default); Hydra's R = [I 0 ..] and rb = 0 (a choice: the
   head starts from the hidden state, like Medusa's identity residual). Deterministic in seed. */
void arb_heads_init(arb_heads *h, uint64_t seed);

typedef struct arb_heads_ws arb_heads_ws; /* scratch for up to n_rows rows */
int arb_heads_ws_new(const arb_heads *h, int n_rows, arb_heads_ws **out, arb_err *err);
void arb_heads_ws_free(arb_heads_ws *ws); /* NULL-safe */

/* Head k on B rows (B <= ws rows): x [B x d_in[k]] inputs, y [B] target tokens (-1: no target,
   the row is skipped), w_lm [V x E] the frozen output matrix. Returns Σ over rows with a target
   of the cross-entropy (nats). If grad (n_params floats) is non-NULL, adds lambda x d(Σ CE)/dθ
   into it. If ranks is non-NULL, ranks[i] = how many logits beat the target's (0 = top-1;
   -1 for rows without a target). Allocates nothing. */
double arb_heads_step(const arb_heads *h, int k, const float *w_lm, const float *x, const int32_t *y, int B,
                      float lambda, float *grad, arb_heads_ws *ws, int32_t *ranks);
/* Head k on one input: the n_top best tokens (best first, ties: lower id) and their softmax
   probabilities. n_top <= 16. Allocates nothing. */
void arb_heads_topk(const arb_heads *h, int k, const float *w_lm, const float *x, int n_top, int32_t *ids,
                    float *probs, arb_heads_ws *ws);

/* Every head on the same input x (Medusa: x = h) with one pass over w_lm for all of them: the
   drafter's cost is reading w_lm (V x E floats), once instead of once per head. Head k fills
   ids/probs[k * ARB_HEADS_RANKS ..) with its n_top[k] <= ARB_HEADS_RANKS best (0: skipped).
   Medusa only (every d_in is E); ws needs n_heads rows. Same results as arb_heads_topk. */
void arb_heads_topk_all(const arb_heads *h, const float *w_lm, const float *x, const int *n_top, int32_t *ids,
                        float *probs, arb_heads_ws *ws);

/* n rows at once, row i = head k[i] on input x[i] (d_in[k[i]] floats), one pass over w_lm for
   all of them (Hydra: every internal node of one tree depth). Row i fills ids/probs[i *
   ARB_HEADS_RANKS ..) with its n_top[i] <= ARB_HEADS_RANKS best. ws needs n rows. */
void arb_heads_topk_batch(const arb_heads *h, const float *w_lm, int n, const int *k, const float *const *x,
                          const int *n_top, int32_t *ids, float *probs, arb_heads_ws *ws);

/* The vector kernels of the heads (AVX2+FMA when the CPU has it, else plain C), shared with the
   EAGLE head (eagle_head.c): a . b; y += a x; L[i x V + v] = W[v] . Z[i] (W [V x E], Z [B x E]);
   dZ[i] = Σ_v G[i x V + v] W[v] (dZ overwritten). Deterministic for a machine. */
float arb_heads_dot(const float *a, const float *b, int n);
void arb_heads_axpy(float *y, float a, const float *x, int n);
void arb_heads_logits(const float *W, int V, const float *Z, int B, int E, float *L);
void arb_heads_dz(const float *W, int V, const float *G, int B, int E, float *dZ);

/* The target's output matrix [V x E] in f32 (output.weight, or token_embd.weight when tied)
   and, if emb is non-NULL, its token embedding [V x E] (the same array when tied: *emb ==
   *w_lm, free once). Read through the model's GGUF (arb_gguf_open + arb_dequantize). */
int arb_heads_lm_weights(const arb_model *m, float **w_lm, float **emb, arb_err *err);

#endif
