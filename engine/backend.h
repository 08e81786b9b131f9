/* backend.h — the operations the transformer forward calls, behind a vtable.
 *
 * model.c never touches a kernel directly: it calls arb_backend_*() wrappers,
 * which call through `iface` (the only place that does). A backend fills an
 * arb_backend_i with designated initialisers; a slot marked "optional" may be
 * NULL and gets the stated default. The CPU backend (engine/cpu/backend_cpu.c)
 * is the exact reference: every reduction runs in a fixed order that depends
 * only on the vector lengths, never on the number of nodes, the tree shape or
 * the thread count (batch invariance, docs/ARCHITECTURE.md "Conventions").
 *
 *     arb_backend be; arb_err err = {0};
 *     if (arb_backend_cpu_init(2, NULL, &be, &err)) die(err.msg);
 *     arb_backend_matmul(&be, &w, x, n_tok, y, work);        // y = x W^T, row by row
 *     arb_backend_attention(&be, &args);                     // tree attention over the KV cache
 *     arb_backend_release(&be);
 *
 * Adding a backend: one file implementing arb_backend_i, one init function
 * declared here (under #ifdef when it needs a toolchain), and a case in
 * arb_backend_init (backend.c).
 * Thread-safety: one backend object is used by one thread at a time (it owns a pool).
 */
#ifndef ARB_BACKEND_H
#define ARB_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/matmul.h"
#include "engine.h"

/* Tree attention for one layer. Node i's key list is, in this order: rows
   0..n_prefix-1 of K/V, then its ancestors (by depth, root first) at rows n_prefix+a,
   then itself at row n_prefix+i. Scores, max, exp, sum and the weighted V sum run
   sequentially over that list, so the result depends only on the list. */
/* Attention work is cut into up to this many pieces per thread, so that a thread the
   host slows down does not hold the others at the end of the run; each piece
   needs its own scratch slot. */
#define ARB_ATTN_SLOTS_PER_THREAD 4
/* Tree nodes whose attention is computed together (engine/cpu/backend_cpu.c): each
   block of cached keys and values is read once for up to this many nodes. */
#define ARB_ATTN_NODE_BLOCK 8
/* Rows of (n_prefix + n) floats per scratch slot: the scores of up to 3 query heads
   (ARB_VEC_HEADS) of one KV head for each node of a block, then the key-row lists
   (the shared one and one per node). */
#define ARB_ATTN_SCRATCH_ROWS (4 * ARB_ATTN_NODE_BLOCK + 1)

typedef struct arb_attn_args {
    const float *q;        /* n x n_head x head_dim (roped) */
    float *k, *v;          /* this layer's KV cache: row r of KV head h at h * kv_head_stride +
                              r * kv_stride floats (head-major, kv.h) */
    int kv_stride;         /* floats from one row of a KV head to the next (head_dim) */
    size_t kv_head_stride; /* floats from one KV head's rows to the next head's */
    const float *k_new, *v_new; /* n x n_head_kv x head_dim: this eval's keys (after RoPE) and
                              values; the attention first stores node i's at row n_prefix + i
                              (arb_attn_store_new), then reads them with the cached rows */
    int n_prefix;          /* rows every node attends to first */
    int n;                 /* nodes */
    const int32_t *parent; /* n entries, -1 or < i (relative to this batch) */
    int n_head, n_head_kv, head_dim;
    float scale;           /* 1/sqrt(head_dim) (Gemma-3 27B: 1/sqrt(n_embd/n_head)) */
    int window;            /* > 0: sliding window (Gemma-3 local layers): a node at position p sees
                              only keys at positions > p - window, the last `window` entries of
                              its key list (whose index is the key's position); 0: all */
    float *out;            /* n x n_head x head_dim */
    float *scratch;        /* ARB_ATTN_SLOTS_PER_THREAD x n_threads x scratch_stride floats */
    int scratch_stride;    /* >= ARB_ATTN_SCRATCH_ROWS * (n_prefix + n) */
} arb_attn_args;

/* Stores tokens t0..t1-1 of a->k_new / a->v_new into their cache rows (n_prefix + t). Every
   attention does this for all n tokens before reading; the rows of different tokens are
   disjoint, so slices may run on different threads. */
void arb_attn_store_new(const arb_attn_args *a, int t0, int t1);

/* RoPE of this eval's queries and new keys, as arb_backend_rope takes it. */
typedef struct arb_rope_args {
    float *q, *k;          /* n x n_head and n x n_head_kv rows of head_dim, rotated in place */
    const int32_t *pos;    /* n positions */
    const float *cs;       /* per position head_dim/2 (cos, sin) pairs */
    int neox;
} arb_rope_args;

typedef struct arb_backend_i {
    const char *name;
    /* optional: default does nothing */
    void (*free)(void *ctx);
    /* workspace bytes for matmul of n_tok rows */
    size_t (*matmul_work_bytes)(void *ctx, const arb_qmat *w, int n_tok);
    /* y[t*n_out+o] = dot(W[o], x[t]) */
    void (*matmul)(void *ctx, const arb_qmat *w, const float *x, int n_tok, float *y, void *work);
    /* optional: ws[0..nw) on the same x, results as separate matmuls (default: a loop) */
    void (*matmul_multi)(void *ctx, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                         float *const *ys, void *work);
    /* out[i] = dequantised row ids[i] of w (embedding lookup) */
    void (*get_rows)(void *ctx, const arb_qmat *w, const int32_t *ids, int n, float *out);
    /* out[t] = x[t] / rms(x[t]) * g, rows of dim floats; out may equal x */
    void (*rmsnorm)(void *ctx, const float *x, const float *g, int n, int dim, float eps, float *out);
    /* rotate n rows of n_head heads in place; cs: per position head_dim/2 (cos, sin)
       pairs; neox: pairs (j, j+hd/2) instead of (2j, 2j+1) */
    void (*rope)(void *ctx, float *x, int n, int n_head, int head_dim, const int32_t *pos,
                 const float *cs, int neox);
    void (*attention)(void *ctx, const arb_attn_args *a);
    /* optional: rope (r->q, r->k) then attention, fused where the backend can
       (default: two rope calls, then attention; the same results) */
    void (*rope_attention)(void *ctx, const arb_rope_args *r, const arb_attn_args *a);
    /* g[i] = silu(g[i]) * u[i], n*dim floats */
    void (*swiglu)(void *ctx, float *g, const float *u, int n, int dim);
    /* optional (required by models with GeGLU): g[i] = gelu_tanh(g[i]) * u[i], n*dim floats */
    void (*geglu)(void *ctx, float *g, const float *u, int n, int dim);
    /* x[t*dim+j] += b[j] (bias) for n rows */
    void (*add_bias)(void *ctx, float *x, const float *b, int n, int dim);
    /* x[i] += y[i] (residual), n floats */
    void (*add)(void *ctx, float *x, const float *y, size_t n);
    /* optional fused forms (default: the two ops one after the other; the same results):
       xb = rmsnorm(x, g) for n rows of dim, then ys[i] = ws[i] . xb */
    void (*norm_matmul_multi)(void *ctx, const float *x, const float *g, int dim, float eps, float *xb,
                              const arb_qmat *const *ws, int nw, int n, float *const *ys, void *work);
    /* g = silu(g) * u for n rows of dim, then y = w . g, then residual += y */
    void (*swiglu_matmul_add)(void *ctx, float *g, const float *u, int dim, const arb_qmat *w, int n, float *y,
                              void *work, float *residual);
    /* y = w . x, then residual += y */
    void (*matmul_add)(void *ctx, const arb_qmat *w, const float *x, int n, float *y, void *work, float *residual);
    /* optional: default 1 */
    int (*n_threads)(void *ctx);
    /* optional: default runs fn(ud, i, n) for i = 0..n-1 on the caller */
    void (*parallel_for)(void *ctx, int n, void (*fn)(void *ud, int i, int n), void *ud);
} arb_backend_i;

typedef struct arb_backend {
    const arb_backend_i *iface;
    void *ctx;
} arb_backend;

/* Initialise the backend of kind k with n_threads workers. vec_family: the CPU's vector
   kernels (attention, norm, SwiGLU; engine/cpu/vec_int.h arb_vec_select): "scalar",
   "avx2", or NULL/another matmul family name = the fastest the CPU has. Bit-identical
   whichever is picked. On failure be->iface is NULL. */
int arb_backend_init(arb_backend_kind k, int n_threads, const char *vec_family, arb_backend *be, arb_err *err);
int arb_backend_cpu_init(int n_threads, const char *vec_family, arb_backend *be, arb_err *err);
void arb_backend_release(arb_backend *be); /* safe on a zeroed or failed backend */

const char *arb_backend_name(const arb_backend *be);
int arb_backend_n_threads(const arb_backend *be);
size_t arb_backend_matmul_work_bytes(const arb_backend *be, const arb_qmat *w, int n_tok);
void arb_backend_matmul(const arb_backend *be, const arb_qmat *w, const float *x, int n_tok, float *y,
                        void *work);
void arb_backend_matmul_multi(const arb_backend *be, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                              float *const *ys, void *work);
void arb_backend_get_rows(const arb_backend *be, const arb_qmat *w, const int32_t *ids, int n, float *out);
void arb_backend_rmsnorm(const arb_backend *be, const float *x, const float *g, int n, int dim, float eps,
                         float *out);
void arb_backend_rope(const arb_backend *be, float *x, int n, int n_head, int head_dim, const int32_t *pos,
                      const float *cs, int neox);
void arb_backend_attention(const arb_backend *be, const arb_attn_args *a);
void arb_backend_rope_attention(const arb_backend *be, const arb_rope_args *r, const arb_attn_args *a);
void arb_backend_swiglu(const arb_backend *be, float *g, const float *u, int n, int dim);
void arb_backend_geglu(const arb_backend *be, float *g, const float *u, int n, int dim);
void arb_backend_norm_matmul_multi(const arb_backend *be, const float *x, const float *g, int dim, float eps,
                                   float *xb, const arb_qmat *const *ws, int nw, int n, float *const *ys, void *work);
void arb_backend_swiglu_matmul_add(const arb_backend *be, float *g, const float *u, int dim, const arb_qmat *w,
                                   int n, float *y, void *work, float *residual);
void arb_backend_matmul_add(const arb_backend *be, const arb_qmat *w, const float *x, int n, float *y, void *work,
                            float *residual);
void arb_backend_add_bias(const arb_backend *be, float *x, const float *b, int n, int dim);
void arb_backend_add(const arb_backend *be, float *x, const float *y, size_t n);
void arb_backend_parallel_for(const arb_backend *be, int n, void (*fn)(void *ud, int i, int n), void *ud);

#endif
