/* matmul.h — batch-invariant quantized matrix × activations on the CPU.
 *
 * W has n_out rows of n_in elements stored in a ggml block type (Q4_0, Q4_1, Q8_0,
 * Q4_K, Q5_K, Q6_K, F16, F32). Activations x are n_tok rows of n_in floats. Each x row is
 * quantized on the fly (Q8_0 blocks, or Q8_K for K-quant weights) into `work`, and
 *     y[t*n_out + o] = dot(W[o], x[t])
 * is computed with integer block dot products and a float accumulation whose order
 * depends only on n_in and the type, never on n_tok, the tree shape or the thread
 * count: a token's output is bit-identical alone or inside any batch.
 *
 *     size_t wb = arb_matmul_work_bytes(W.type, W.n_in, n_tok);   // reserve once
 *     arb_matmul(tp, &W, x, n_tok, y, work);
 *
 * The SIMD path (AVX2, or AVX-512/VNNI when the CPU has it) is chosen once at
 * start-up; arb_matmul_isa() names it. Allocates nothing.
 */
#ifndef ARB_MATMUL_H
#define ARB_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "threadpool.h"

typedef struct arb_qmat {
    uint32_t type;     /* ARB_TYPE_* of the rows */
    int n_in;          /* elements per row (ne0) */
    int n_out;         /* rows (ne1) */
    size_t row_bytes;  /* bytes per row */
    const void *data;  /* n_out * row_bytes, usually inside the GGUF mapping */
    const void *packed; /* NULL, or the same rows repacked for the SIMD kernels
                           (arb_matmul_pack); within a family that reads both
                           layouts (AVX2 Q4_0/Q4_1) the results are the same bits */
    const struct mm_impl *kern; /* kernel family: the model's (arb_load_opts.isa, set at
                                   bind time); NULL = the process default, arb_matmul_isa() */
    const float *bconst; /* NULL, or per-block constants of weights with a min (Q5_1 and Q2_K
                            widened at load, quant.h): after the kernel, y[t][r] += bconst[b *
                            n_out + r] * (sum of x[t] over block b), for b in order, x as given
                            (unquantized); one product and one add each, the same in every family */
    int bconst_n;        /* elements per constant block (32 or 16) */
} arb_qmat;

size_t arb_matmul_work_bytes(uint32_t type, int n_in, int n_tok);
void arb_matmul(arb_threadpool *tp, const arb_qmat *w, const float *x, int n_tok, float *y, void *work);
const char *arb_matmul_isa(void); /* process default: "avx512vnni", "avx2", "scalar" */
/* The family for a name (arb_load_opts.isa): NULL, "" or "auto" = the best this CPU
   has; "scalar", "avx2", "avx512"/"avx512vnni" = that family, or the best the CPU has
   when it lacks it. ARB_E_INVAL for another name (*out = NULL). */
int arb_matmul_kernels(const char *name, const struct mm_impl **out);
const char *arb_matmul_kernels_name(const struct mm_impl *k); /* "avx2", ... */

/* ws[0..nw) applied to the same x (Q, K, V; gate, up): when they share type, n_in
   and packing the activation is quantized once and one pool run covers all their
   rows (otherwise one arb_matmul each). ys[i] gets n_tok x ws[i]->n_out. Results
   are those of separate calls, bit for bit. work: the largest matrix's bytes. */
void arb_matmul_multi(arb_threadpool *tp, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                      float *const *ys, void *work);

/* A per-token producer of the matmul's input, run inside the matmul (RMSNorm into x,
   SwiGLU into x): fn(ud, t0, t1) must write x rows t0..t1-1 from data that no other
   row's call writes. Large batches run it on the pool with the activation
   quantization, before any row of the product is computed (one pool round trip
   saved per fused op); small ones on the caller. Results are those of running
   fn(ud, 0, n_tok) first and then the plain call. */
typedef struct arb_mm_pre {
    void (*fn)(void *ud, int t0, int t1);
    void *ud;
} arb_mm_pre;
void arb_matmul_multi_pre(arb_threadpool *tp, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                          float *const *ys, void *work, const arb_mm_pre *pre);
/* arb_matmul with an optional producer (pre, as above) and an optional residual: when
   residual is not NULL, residual[t][o] += y[t][o] for every output, added by the
   thread that computed it right after its rows (the residual stream of a layer,
   without a pass of its own); the same single float add as a separate x += y. */
void arb_matmul_ex(arb_threadpool *tp, const arb_qmat *w, const float *x, int n_tok, float *y, void *work,
                   const arb_mm_pre *pre, float *residual);

/* Load-time repacking (matmul_pack.c): bytes needed for w's packed copy, 0 when the
   type or shape has none (Q4_0/Q4_1/Q8_0 rows of whole 32-blocks and Q4_K/Q5_K/Q6_K rows
   of whole 256-blocks have one). Fill a 64-byte aligned buffer of that size with
   arb_matmul_pack, then point w->packed at it; which kernels read it:
   arb_matmul_reads_packed. */
size_t arb_matmul_pack_bytes(const arb_qmat *w);
void arb_matmul_pack(const arb_qmat *w, void *dst);
/* The same for the 16-row groups g0..g1-1 only (rows 16 g0 .. 16 g1 - 1): disjoint group
   ranges may be packed by different threads into one dst. */
void arb_matmul_pack_groups(const arb_qmat *w, void *dst, int g0, int g1);
/* Whether family k (NULL = the process default) reads w's packed copy: the AVX-512
   family for every packable type, the AVX2 family for all but Q8_0 (its Q8_0 kernels keep
   the GGUF layout). A loader packs only these; others would never be read. */
bool arb_matmul_reads_packed(const struct mm_impl *k, const arb_qmat *w);

/* Tests and benchmarks: force a kernel family ("scalar", "avx2", "avx512" or
   "avx512vnni", "auto" = the start-up choice) for the whole process. Returns
   ARB_E_UNSUPPORTED (and changes nothing) if this CPU or build lacks it. Not safe
   while another thread is inside arb_matmul. */
int arb_matmul_force_isa(const char *name);

#endif
