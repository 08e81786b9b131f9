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
 * before head k). logits = W_lm z with the target's own output matrix, frozen and shared; no norm
 * on z (h already is the final-norm row). Training multiplies by the f32 copy of W_lm; drafting
 * scores z through an arb_lm_head: the engine's own quantized head when the context has one.
 *
 *     arb_heads *h;
 *     arb_heads_new(ARB_HEADS_MEDUSA, 4, E, V, &h, &err);
 *     arb_heads_init(h, seed);                          // W = 0, b ~ U(+-1/sqrt(d_in)), R = [I 0]
 *     arb_heads_ws *ws; arb_heads_ws_new(h, 32, &ws, &err);   // scratch for 32 rows
 *     double loss = arb_heads_step(h, k, w_lm, x, y, B, lambda, grad, ws, ranks);
 *     arb_lm_head lm = {.w_lm = w_lm};                  // or arb_lm_head_bind(&lm, ctx, w_lm, &err)
 *     arb_heads_topk(h, k, &lm, x, 10, ids, probs, ws);       // the drafter
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

/* What a draft head's output rows z (final-norm space, E floats) are scored with: logits = W_out z.
   The target context's own output head as stored (arb_ctx_output_head: quantized, the kernel
   arb_eval uses, ~7x fewer bytes than f32; on a GPU context the device's head) when ctx is set and
   f32 is false, else the f32 copy w_lm [V x E] (always set: the fallback where the context's call
   fails, e.g. more rows than its n_batch_max, and what training used).
   Neither applies the final norm, as training did not (z is already in the space the head sees).
   Shared by the Medusa, Hydra and EAGLE drafters. */
typedef struct arb_lm_head {
    const float *w_lm; /* [V x E] f32 */
    arb_ctx *ctx;      /* a context whose arb_ctx_output_head works, or NULL */
    bool f32;          /* score with w_lm even when ctx is set (benchmarks: the f32 path) */
} arb_lm_head;
/* lm = {w_lm, ctx if arb_ctx_output_head works on it (probed once on a zero row), false}.
   Allocates only for the probe; ARB_E_NOMEM is the only error. */
int arb_lm_head_bind(arb_lm_head *lm, arb_ctx *ctx, const float *w_lm, arb_err *err);
/* L [B x V] = W_out Z [B x E]. Rows are scored independently (both paths are batch-invariant);
   a context call that fails (e.g. B > its n_batch_max) falls back to the f32 copy. */
void arb_lm_head_logits(const arb_lm_head *lm, int V, int E, const float *Z, int B, float *L);
/* The k (1..ARB_TOPK_K_MAX) best tokens of each of the B rows of W_out Z, best first (ties: lower
   id), and their softmax probabilities: ids/probs [B x k], as arb_topk_softmax of
   arb_lm_head_logits' rows. Through the context they are computed where its logits are
   (arb_ctx_output_head_ex: a GPU copies back B short lists, not B x V floats; the CPU's are
   bit for bit the logits path's); the f32 copy, or a context call that fails, scores whole rows
   into logits [B x V] (scratch) first. */
void arb_lm_head_topk(const arb_lm_head *lm, int V, int E, const float *Z, int B, int k, int32_t *ids, float *probs,
                      float *logits);

typedef struct arb_heads_ws arb_heads_ws; /* scratch for up to n_rows rows */
int arb_heads_ws_new(const arb_heads *h, int n_rows, arb_heads_ws **out, arb_err *err);
void arb_heads_ws_free(arb_heads_ws *ws); /* NULL-safe */
/* Rows for the teacher's law in ws (arb_heads_step_teacher); a no-op when already there. */
int arb_heads_ws_teacher(arb_heads_ws *ws, const arb_heads *h, arb_err *err);

/* Head k on B rows (B <= ws rows): x [B x d_in[k]] inputs, y [B] target tokens (-1: no target,
   the row is skipped), w_lm [V x E] the frozen output matrix. Returns Σ over rows with a target
   of the cross-entropy (nats). If grad (n_params floats) is non-NULL, adds lambda x d(Σ CE)/dθ
   into it. If ranks is non-NULL, ranks[i] = how many logits beat the target's (0 = top-1;
   -1 for rows without a target). Allocates nothing. */
double arb_heads_step(const arb_heads *h, int k, const float *w_lm, const float *x, const int32_t *y, int B,
                      float lambda, float *grad, arb_heads_ws *ws, int32_t *ranks);
/* The same step against a mix of the hard target and the teacher's law (Hydra++'s teacher
   loss): per row (1 - alpha) CE(y) + alpha CE(p), p = softmax(W_lm tz_i), the base model's own
   distribution over the token y_i stands for (tz [B x E]: the hidden row whose logits predict
   it; read only where y_i >= 0), 0 <= alpha <= 1. Returns Σ of that loss; grad and ranks as
   arb_heads_step (ranks still of y). tz == NULL or alpha == 0 is arb_heads_step, bit for bit;
   otherwise ws needs arb_heads_ws_teacher first. Allocates nothing. */
double arb_heads_step_teacher(const arb_heads *h, int k, const float *w_lm, const float *x, const int32_t *y,
                              const float *tz, float alpha, int B, float lambda, float *grad, arb_heads_ws *ws,
                              int32_t *ranks);
/* Head k on one input: the n_top best tokens (best first, ties: lower id) and their softmax
   probabilities. n_top <= 16. Allocates nothing. */
void arb_heads_topk(const arb_heads *h, int k, const arb_lm_head *lm, const float *x, int n_top, int32_t *ids,
                    float *probs, arb_heads_ws *ws);

/* Every head on the same input x (Medusa: x = h) with one pass over the output head for all of
   them: the drafter's cost is reading it (V x E weights), once instead of once per head. Head k fills
   ids/probs[k * ARB_HEADS_RANKS ..) with its n_top[k] <= ARB_HEADS_RANKS best (0: skipped).
   Medusa only (every d_in is E); ws needs n_heads rows. Same results as arb_heads_topk. */
void arb_heads_topk_all(const arb_heads *h, const arb_lm_head *lm, const float *x, const int *n_top, int32_t *ids,
                        float *probs, arb_heads_ws *ws);

/* n rows at once, row i = head k[i] on input x[i] (d_in[k[i]] floats), one pass over the output
   head for all of them (Hydra: every internal node of one tree depth). Row i fills ids/probs[i *
   ARB_HEADS_RANKS ..) with its n_top[i] <= ARB_HEADS_RANKS best. ws needs n rows. */
void arb_heads_topk_batch(const arb_heads *h, const arb_lm_head *lm, int n, const int *k, const float *const *x,
                          const int *n_top, int32_t *ids, float *probs, arb_heads_ws *ws);

/* The vector kernels of the heads (AVX2+FMA when the CPU has it, else plain C), shared with the
   EAGLE head (eagle_head.c): a . b; y += a x; L[i x V + v] = W[v] . Z[i] (W [V x E], Z [B x E]);
   dZ[i] = Σ_v G[i x V + v] W[v] (dZ overwritten). Deterministic for a machine. */
float arb_heads_dot(const float *a, const float *b, int n);
void arb_heads_axpy(float *y, float a, const float *x, int n);
void arb_heads_logits(const float *W, int V, const float *Z, int B, int E, float *L);
/* fn(ud, p, parts) for every p in [0, parts): on ctx's kernel threads when it has more than one
   (arb_ctx_parallel_for), else in order on the caller (ctx NULL too). The heads' and the EAGLE
   layer's products cut their outputs into parts this way; fn's bits must not depend on which. */
void arb_heads_run_parts(arb_ctx *ctx, int parts, void (*fn)(void *ud, int p, int parts), void *ud);
/* log Σ_v exp(L_v) of one row, in double after the row's max (the losses' one expression). */
double arb_heads_row_lse(const float *L, int V);
void arb_heads_dz(const float *W, int V, const float *G, int B, int E, float *dZ);

/* The target's output matrix [V x E] in f32 (output.weight, or token_embd.weight when tied)
   and, if emb is non-NULL, its token embedding [V x E] (the same array when tied: *emb ==
   *w_lm, free once). Read through the model's GGUF (arb_gguf_open + arb_dequantize). */
int arb_heads_lm_weights(const arb_model *m, float **w_lm, float **emb, arb_err *err);

#endif
