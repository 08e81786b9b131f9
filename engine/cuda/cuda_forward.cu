// cuda_forward.cu — a sequence on the device (KV cache, scratch) and the forward of
// one batch of tree nodes, the counterpart of forward.c's forward() op for op.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_attn.h"
#include "cuda_int.h"
#include "cuda_pack.h"

// Profile classes (ARBOR_CUDA_PROFILE).
enum { PROF_EMBED, PROF_NORM, PROF_QKV, PROF_ROPE, PROF_ATTN, PROF_WO, PROF_FFN_IN, PROF_DOWN, PROF_HEAD,
       PROF_ARGMAX, PROF_QUANT, PROF_N };
static const char *const prof_names[PROF_N] = {"embed", "rmsnorm", "q/k/v", "rope+kv-store", "attention", "wo",
                                               "gate/up/silu", "down", "head", "argmax/top-K", "quantize x"};
static constexpr int kProfMax = 1024; // events per step

struct arb_cuda_ctx {
    arb_cuda_model *m;
    int n_ctx, n_batch_max, n_layer;
    cudaStream_t st;
    bool pdl;              // kernels launched with programmatic dependent launch (kstream)
    cublasHandle_t blas;   // NULL in exact mode
    float *k, *v;          // n_layer x n_ctx x kvd
    float *cs;             // n_ctx x head_dim
    float *x, *xb, *q, *att, *hg, *hu, *logits;
    __half *x16;           // n_batch_max x max(n_embd, q_dim, n_ff): cuBLAS input
    float *kn, *vn;        // n_batch_max x kvd: this step's K and V before they enter the cache
    int8_t *xq;            // the int8 GEMV's activations (k_quant_q8): n_batch_max x the widest input,
    float *xq_d;           // in whole chunks, and their block scales and integer sums
    int32_t *xq_isum;
    int8_t *xo;            // ARBOR_CUDA_GLU=fused: the gate/up kernel's quantized output (the down
    float *xo_d;           // matrix's input), apart from xq, which that kernel reads; else NULL
    int32_t *xo_isum;
    int32_t *d_ints;       // tok, parent, pos, argmax (n_batch_max each), then n_prefix
    int32_t *h_ints;       // pinned staging of the same
    size_t attn_smem;
    int attn_splits;       // arb_attn_splits (1: the block kernel; ARBOR_CUDA_ATTN=block)
    int attn_chunk;        // keys per part (ARBOR_CUDA_ATTN=chunk:N), 0: attn_splits parts
    int attn_block_from;   // evals of this many nodes or more run the block kernel (fast mode)
    int attn_warp;         // 1: the warp kernel computes the partials (the default where it fits)
    int attn_warp_keys;    // its parts' keys (cuda_attn.h, arb_attn_warp_width; ARBOR_CUDA_ATTN=warp:K)
    int attn_merge_parallel; // ARBOR_CUDA_MERGE=parallel|fused: the parallel merge (the same bits; k_attention)
    int attn_merge_fused;  // ARBOR_CUDA_MERGE=fused: ... in the warp kernel's last block (attn_ticket)
    int *attn_ticket;      // n_batch_max x n_head counters for it, zero between launches
    int topk_onepass;      // ARBOR_CUDA_TOPK=onepass: the top-K kernel reads each row once (the same ids)
    int gemv_rows;         // ARBOR_CUDA_ROWS=2|4: rows per warp of the int8 GEMV at 2-15 nodes (1: one)
    int glu_fused;         // ARBOR_CUDA_GLU=fused: SwiGLU's output quantized in the gate/up kernel
    int qkv_fused;         // ARBOR_CUDA_QKV=fused: RoPE and the KV store in the Q/K/V GEMV (llama)
    float *attn_part;      // the split kernel's partials: n_batch_max x n_head x splits x (head_dim + 2)
    void *blas_ws;         // cuBLAS workspace, fixed so that a step can be captured
    void *amax_scratch;    // k_argmax's per-part maxima, n_batch_max rows
    int32_t *topk_ids;     // n_batch_max x ARB_TOPK_K_MAX: per-row top-K ids (row r at r * k)
    float *topk_p;         // the same, probabilities
    // Captured steps (CUDA graphs) of tree evals (head_from 0), by node count and
    // output kind (bit 0: argmax, bit 1: top-K of graph_topk_k; logits rows always):
    // one launch replays the ~13 kernels x n_layer of a step. NULL until first used;
    // graphs_off after a failure.
    cudaGraphExec_t *graphs[4];
    int graph_topk_k;      // the k the top-K graphs were captured with (0: none yet)
    bool graphs_off;
    int head_rows;         // rows of c->logits the last forward computed (arb_cuda_logits_row)
    // ARBOR_CUDA_PROFILE=1: steps launch directly (no graphs) with an event after every
    // kernel class; arb_cuda_ctx_free prints the device time per class and step.
    struct {
        bool on;
        cudaEvent_t ev[kProfMax + 1];
        int lab[kProfMax + 1], n, steps;
        double ms[PROF_N];
    } prof;
};

// d_ints / h_ints layout (n_batch_max = nb): tok | parent | pos | argmax | n_prefix
#define INTS_TOK 0
#define INTS_PAR 1
#define INTS_POS 2
#define INTS_ARG 3
#define INTS_META 4
#define BLAS_WS_BYTES ((size_t)32 << 20)

namespace {

kstream ks(const arb_cuda_ctx *c) { return kstream{c->st, c->pdl, c->gemv_rows}; }

void *dalloc(size_t bytes, cudaError_t *e)
{
    void *p = NULL;
    if (*e == cudaSuccess)
        *e = cudaMalloc(&p, bytes);
    return *e == cudaSuccess ? p : NULL;
}

// y (+)= W . x for n rows: cuBLAS on the FP16 copy for a batch of 16+ nodes in fast mode
// (x16 holds x in FP16) unless W is in the int8 layout and xq is given; else k_gemv (the
// GEMVs, and for the int8 layout at 16+ nodes the tree kernel).
void matmul(arb_cuda_ctx *c, const dmat *w, const float *x, const __half *x16, int n, float *y, bool accumulate,
            const xq8 *xq)
{
    if (c->blas && w->h && x16 && n >= ARB_CUDA_GEMM_MIN_NODES && !(w->q8x && xq)) {
        const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
        // Row-major W (n_out x n_in) is column-major W^T; y^T = W x^T per column.
        cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, w->n_out, n, w->n_in, &one, w->h, CUDA_R_16F, w->n_in, x16,
                     CUDA_R_16F, w->n_in, &beta, y, CUDA_R_32F, w->n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        return;
    }
    k_gemv(ks(c), w, x, w->n_in, n, y, w->n_out, accumulate, xq);
}

// Whether matmul hands w to cuBLAS at ARB_CUDA_GEMM_MIN_NODES+ nodes: it has an FP16 copy
// (fast mode) and is not in the int8 layout (whose input is always quantized).
bool gemm_serves(const dmat *w) { return w->h && !w->q8x; }

bool model_uses_gemm(const arb_cuda_model *m)
{
    bool any = gemm_serves(&m->output);
    for (int l = 0; l < m->n_layer && !any; l++) {
        const dlayer *L = &m->layers[l];
        const dmat *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            any = any || gemm_serves(ws[i]);
    }
    return any;
}

// int8 activations of inputs of n_in elements in the buffers q, d, isum (strides for n_in:
// whole chunks, as k_quant_q8 writes them).
xq8 xq_layout(int8_t *q, float *d, int32_t *isum, int n_in)
{
    const int nblk = arb_pack_chunks(n_in) * 32;
    return xq8{q, d, isum, nblk * 32, nblk};
}

// ... in c's buffers.
xq8 xq_for(const arb_cuda_ctx *c, int n_in) { return xq_layout(c->xq, c->xq_d, c->xq_isum, n_in); }

// The value of the context-creation variable `var` among values[0..n) (values[dflt] when
// unset or empty) into *pick; ARB_E_INVAL naming them otherwise.
int env_pick(const char *var, const char *const *values, int n, int dflt, int *pick, arb_err *err)
{
    const char *v = getenv(var);
    *pick = dflt;
    if (!v || !*v)
        return ARB_OK;
    for (int i = 0; i < n; i++)
        if (!strcmp(v, values[i])) {
            *pick = i;
            return ARB_OK;
        }
    char list[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? (i == n - 1 ? " or " : ", ") : "",
                 values[i]);
    return ARB_ERR(err, ARB_E_INVAL, "%s=%s: expected %s", var, v, list);
}

// x (n rows of n_in) quantized for the int8 GEMV, when one of its readers is in the int8
// layout; NULL (nothing launched) otherwise.
const xq8 *quant_for(arb_cuda_ctx *c, const float *x, int n, int n_in, bool want, xq8 *buf)
{
    if (!want)
        return NULL;
    *buf = xq_for(c, n_in);
    k_quant_q8(ks(c), x, n_in, n, n_in, buf);
    return buf;
}

int fail(arb_err *err, cudaError_t e, const char *what)
{
    cudaGetLastError();
    return ARB_ERR(err, e == cudaErrorMemoryAllocation ? ARB_E_NOMEM : ARB_E_NODEVICE, "backend cuda: %s: %s", what,
                   cudaGetErrorString(e));
}

} // namespace

extern "C" int arb_cuda_ctx_new(arb_cuda_model *m, int n_ctx, int n_batch_max, int n_layer, const float *cs,
                                arb_cuda_ctx **out, arb_err *err)
{
    *out = NULL;
    arb_cuda_ctx *c = (arb_cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return ARB_ERR(err, ARB_E_NOMEM, "ctx: out of memory");
    c->m = m;
    c->n_ctx = n_ctx, c->n_batch_max = n_batch_max, c->n_layer = n_layer;
    c->attn_smem = k_attention_smem(n_ctx, n_batch_max, m->head_dim);
    size_t max_dyn = 0;
    const cudaError_t pe = k_attention_prepare(m->smem_optin, &max_dyn);
    if (pe != cudaSuccess || c->attn_smem > max_dyn) {
        const size_t need = c->attn_smem;
        free(c);
        if (pe != cudaSuccess)
            return fail(err, pe, "attention kernel attributes");
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "backend cuda: n_ctx %d needs %zu bytes of shared memory per attention block, the device "
                       "allows %zu (use a smaller n_ctx)", n_ctx, need, max_dyn);
    }
    const size_t nb = (size_t)n_batch_max, E = (size_t)m->n_embd, qd = (size_t)m->n_head * m->head_dim;
    const size_t kvd = (size_t)m->n_head_kv * m->head_dim, ff = (size_t)m->n_ff;
    const size_t xbd = qd > E ? qd : E, h16 = ff > xbd ? ff : xbd;
    const size_t kv_bytes = (size_t)n_layer * n_ctx * kvd * sizeof(float);
    // Which attention kernel (docs/gpu.md): exact mode runs the warp kernel at every node
    // count (a node's sums must not depend on the eval's size); fast mode runs it below
    // ARB_CUDA_GEMM_MIN_NODES and the one-block-per-head kernel for the big evals that
    // cuBLAS serves anyway (fewer, fuller blocks there). The split kernel (a block per part)
    // where the warp kernel does not fit (rows not 16-byte multiples, head_dim > 256, or
    // more than 48 KB of shared memory for its scores and the eval's ancestors).
    // ARBOR_CUDA_ATTN forces one kernel at every size, for comparisons: block, split,
    // chunk:N (the split kernel, parts of about N keys), warp or warp:K (parts of K keys,
    // default ARB_ATTN_WARP_KEYS).
    const char *attn = getenv("ARBOR_CUDA_ATTN");
    int chunk = 0, wkeys = ARB_ATTN_WARP_KEYS, used = 0;
    const bool forced = attn && *attn;
    if (forced && strcmp(attn, "block") && strcmp(attn, "split") && strcmp(attn, "warp") &&
        !(sscanf(attn, "chunk:%d%n", &chunk, &used) == 1 && !attn[used] && chunk >= 1 && chunk <= 4096) &&
        !(sscanf(attn, "warp:%d%n", &wkeys, &used) == 1 && !attn[used] && wkeys >= 1 && wkeys <= 1024)) {
        free(c);
        return ARB_ERR(err, ARB_E_INVAL,
                       "ARBOR_CUDA_ATTN=%s: expected block, split, chunk:N (1..4096 keys), warp or warp:K (1..1024 keys)",
                       attn);
    }
    c->attn_chunk = chunk, c->attn_warp_keys = wkeys;
    c->attn_splits = forced && !strcmp(attn, "block") ? 1 : arb_attn_splits(m->n_head);
    const bool want_warp = !forced || !strncmp(attn, "warp", 4);
    if (want_warp && k_attention_warp_fits(m->head_dim, m->n_head_kv * m->head_dim, n_ctx, n_batch_max, wkeys))
        c->attn_warp = 1, c->attn_splits = ARB_ATTN_MAX_SPLITS;
    // That is: the block kernel only where cuBLAS already makes big evals differ from
    // their chains. Where it serves no matrix (exact mode; fast mode with every matrix in
    // the int8 layout, ARBOR_CUDA_GEMV=dp4a, whose tree kernel is batch-invariant) the
    // warp (or split) kernel runs at every size.
    c->attn_block_from = !forced && model_uses_gemm(m) ? ARB_CUDA_GEMM_MIN_NODES : INT_MAX;
    // The merge of the split and warp kernels' partials: serial (a kernel of its own),
    // parallel (the same bits, fewer round trips, the output quantized in it for an int8 wo)
    // or fused (the parallel merge inside the warp kernel; the split kernel keeps the
    // parallel one). All three give the same bits (gpu suite). Default fused in fast mode,
    // serial in exact mode: on the H100 (2026-11-27, docs/gpu.md "twenty-fourth session") fused
    // made batch-1 decode 17-18 % faster on the default model and 3-7 % on the 8B shape in
    // both modes' benches, and fast mode's AR steps 13 % cheaper in `arbor run`; but exact
    // mode's AR steps in `arbor run` with the three fused variants together grew 7-9 % dearer
    // past ~100 keys of context, which the bench did not show and which is not yet pinned on
    // one of them.
    // SwiGLU's output for an int8 down matrix: quantized by k_quant_q8 (separate, the default)
    // or in the gate/up kernel itself (fused: the same bits, one launch less per layer). RoPE
    // and the KV store: their own launch (separate, the default) or the Q/K/V GEMV's epilogue
    // (fused: llama's interleaved RoPE without biases or q/k norms; the same bits). Both
    // fusions stay off: on the H100 they cost 1-4 % of the 8B shape's decode and made 8-node
    // trees 2-6 % dearer on both models.
    // The top-K kernel (arb_eval_out.topk_k, the output head's top-K): k + 2 reads of each row
    // (rounds, the default, run on the H100) or one (onepass: the same ids, probabilities
    // within rounding; written without a device, twenty-eighth session).
    static const char *const merges[] = {"serial", "parallel", "fused"}, *const fusing[] = {"separate", "fused"},
                             *const topks[] = {"rounds", "onepass"}, *const rows[] = {"1", "2", "4"};
    // Rows per warp of the int8 GEMV (and gate/up) at 2-15 nodes: 1 (the default, run on the
    // H100), 2 or 4 (each x load serves that many rows; the same bits; written without a
    // device, twenty-eighth session; 8-node groups take 2 either way).
    int merge, glu, qkv, topk, nrows, prc;
    if ((prc = env_pick("ARBOR_CUDA_MERGE", merges, 3, m->exact ? 0 : 2, &merge, err)) ||
        (prc = env_pick("ARBOR_CUDA_GLU", fusing, 2, 0, &glu, err)) ||
        (prc = env_pick("ARBOR_CUDA_QKV", fusing, 2, 0, &qkv, err)) ||
        (prc = env_pick("ARBOR_CUDA_TOPK", topks, 2, 0, &topk, err)) ||
        (prc = env_pick("ARBOR_CUDA_ROWS", rows, 3, 0, &nrows, err))) {
        free(c);
        return prc;
    }
    c->attn_merge_fused = merge == 2;
    c->attn_merge_parallel = merge >= 1;
    c->glu_fused = glu == 1;
    c->qkv_fused = qkv == 1;
    c->topk_onepass = topk == 1;
    c->gemv_rows = nrows == 0 ? 1 : nrows == 1 ? 2 : 4;
    cudaError_t e = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
    if (c->attn_splits > 1)
        c->attn_part = (float *)dalloc(nb * m->n_head * c->attn_splits * ARB_ATTN_PART(m->head_dim) * sizeof(float), &e);
    c->k = (float *)dalloc(kv_bytes, &e);
    c->v = (float *)dalloc(kv_bytes, &e);
    c->cs = (float *)dalloc((size_t)n_ctx * m->head_dim * sizeof(float), &e);
    c->x = (float *)dalloc(nb * E * sizeof(float), &e);
    c->xb = (float *)dalloc(nb * xbd * sizeof(float), &e);
    c->q = (float *)dalloc(nb * qd * sizeof(float), &e);
    c->att = (float *)dalloc(nb * qd * sizeof(float), &e);
    c->hg = (float *)dalloc(nb * ff * sizeof(float), &e);
    c->hu = (float *)dalloc(nb * ff * sizeof(float), &e);
    c->logits = (float *)dalloc(nb * (size_t)m->n_vocab * sizeof(float), &e);
    c->x16 = (__half *)dalloc(nb * h16 * sizeof(__half), &e);
    const size_t xq_w = (size_t)arb_pack_chunks((int)h16) * ARB_PACK_CHUNK; // h16: the widest input
    c->xq = (int8_t *)dalloc(nb * xq_w, &e);
    c->xq_d = (float *)dalloc(nb * xq_w / 32 * sizeof(float), &e);
    c->xq_isum = (int32_t *)dalloc(nb * xq_w / 32 * sizeof(int32_t), &e);
    if (c->glu_fused) {
        c->xo = (int8_t *)dalloc(nb * xq_w, &e);
        c->xo_d = (float *)dalloc(nb * xq_w / 32 * sizeof(float), &e);
        c->xo_isum = (int32_t *)dalloc(nb * xq_w / 32 * sizeof(int32_t), &e);
    }
    c->kn = (float *)dalloc(nb * kvd * sizeof(float), &e);
    c->vn = (float *)dalloc(nb * kvd * sizeof(float), &e);
    c->d_ints = (int32_t *)dalloc((4 * nb + 4) * sizeof(int32_t), &e);
    if (c->attn_merge_fused) {
        c->attn_ticket = (int *)dalloc(nb * m->n_head * sizeof(int), &e);
        if (e == cudaSuccess)
            e = cudaMemset(c->attn_ticket, 0, nb * m->n_head * sizeof(int));
    }
    c->amax_scratch = dalloc(k_argmax_scratch_bytes(n_batch_max), &e);
    if (!m->exact)
        c->blas_ws = dalloc(BLAS_WS_BYTES, &e);
    c->topk_ids = (int32_t *)dalloc(nb * ARB_TOPK_K_MAX * sizeof(int32_t), &e);
    c->topk_p = (float *)dalloc(nb * ARB_TOPK_K_MAX * sizeof(float), &e);
    for (int i = 0; i < 4; i++)
        if (e == cudaSuccess && !(c->graphs[i] = (cudaGraphExec_t *)calloc(nb + 1, sizeof(cudaGraphExec_t))))
            e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess)
        e = cudaMallocHost(&c->h_ints, (4 * nb + 4) * sizeof(int32_t));
    if (e == cudaSuccess)
        e = cudaMemcpy(c->cs, cs, (size_t)n_ctx * m->head_dim * sizeof(float), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        const int rc = ARB_ERR(err, e == cudaErrorMemoryAllocation ? ARB_E_NOMEM : ARB_E_NODEVICE,
                               "backend cuda: context of n_ctx %d, n_batch_max %d (%.1f MB of KV cache): %s", n_ctx,
                               n_batch_max, 2.0 * kv_bytes / 1e6, cudaGetErrorString(e));
        cudaGetLastError();
        arb_cuda_ctx_free(c);
        return rc;
    }
    if (!m->exact) {
        if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS ||
            cublasSetStream(c->blas, c->st) != CUBLAS_STATUS_SUCCESS ||
            cublasSetWorkspace(c->blas, c->blas_ws, BLAS_WS_BYTES) != CUBLAS_STATUS_SUCCESS) {
            arb_cuda_ctx_free(c);
            return ARB_ERR(err, ARB_E_NODEVICE, "backend cuda: cuBLAS could not be initialised");
        }
        // Deterministic run to run: cuBLAS picks one algorithm per shape; no atomics.
        cublasSetAtomicsMode(c->blas, CUBLAS_ATOMICS_NOT_ALLOWED);
    }
    // Programmatic dependent launch where the device has it (sm_90+): a step's ~10
    // kernels per layer are mostly a few microseconds each at batch 1, and the launch
    // of each then overlaps the one before it. ARBOR_CUDA_PDL=0|1 overrides.
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m->device);
    const char *pdl = getenv("ARBOR_CUDA_PDL");
    c->pdl = pdl && *pdl ? strcmp(pdl, "0") != 0 && major >= 9 : major >= 9;
    cudaGetLastError();
    const char *prof = getenv("ARBOR_CUDA_PROFILE");
    if (prof && *prof && strcmp(prof, "0")) {
        c->prof.on = true;
        for (int i = 0; i <= kProfMax && c->prof.on; i++)
            c->prof.on = cudaEventCreate(&c->prof.ev[i]) == cudaSuccess;
        cudaGetLastError();
    }
    *out = c;
    return ARB_OK;
}

extern "C" void arb_cuda_ctx_free(arb_cuda_ctx *c)
{
    if (!c)
        return;
    if (c->st)
        cudaStreamSynchronize(c->st);
    if (c->prof.on && c->prof.steps > 0) {
        double tot = 0;
        for (int i = 0; i < PROF_N; i++)
            tot += c->prof.ms[i];
        fprintf(stderr, "cuda profile (ARBOR_CUDA_PROFILE): %d steps, %.3f ms of device time per step\n",
                c->prof.steps, tot / c->prof.steps);
        for (int i = 0; i < PROF_N; i++)
            if (c->prof.ms[i] > 0)
                fprintf(stderr, "  %-13s %9.1f us/step  %5.1f %%\n", prof_names[i], 1e3 * c->prof.ms[i] / c->prof.steps,
                        100.0 * c->prof.ms[i] / tot);
    }
    for (int i = 0; i <= kProfMax; i++)
        if (c->prof.ev[i])
            cudaEventDestroy(c->prof.ev[i]);
    if (c->blas)
        cublasDestroy(c->blas);
    for (int i = 0; i < 4; i++) {
        for (int n = 0; c->graphs[i] && n <= c->n_batch_max; n++)
            if (c->graphs[i][n])
                cudaGraphExecDestroy(c->graphs[i][n]);
        free(c->graphs[i]);
    }
    void *bufs[] = {c->k, c->v, c->cs, c->x, c->xb, c->q, c->att, c->hg, c->hu, c->logits, c->x16, c->d_ints,
                    c->kn, c->vn, c->blas_ws, c->amax_scratch, c->topk_ids, c->topk_p, c->xq, c->xq_d,
                    c->xq_isum, c->xo, c->xo_d, c->xo_isum, c->attn_part, c->attn_ticket};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(c->h_ints);
    if (c->st)
        cudaStreamDestroy(c->st);
    cudaGetLastError();
    free(c);
}

// Everything one step runs on the device, launched on c->st. Depends only on n,
// head_from, the outputs wanted and device buffers (the prefix length is read on the
// device), so a step can be captured once and replayed.
static void prof_mark(arb_cuda_ctx *c, int lab)
{
    if (c->prof.on && c->prof.n < kProfMax) {
        c->prof.lab[++c->prof.n] = lab;
        cudaEventRecord(c->prof.ev[c->prof.n], c->st);
    }
}

static void enqueue_step(arb_cuda_ctx *c, int n, int head_from, bool head, bool argmax, int topk_k)
{
    const arb_cuda_model *m = c->m;
    const int E = m->n_embd, hd = m->head_dim, qd = m->n_head * hd, kvd = m->n_head_kv * hd;
    const size_t nb = (size_t)c->n_batch_max;
    const kstream st = ks(c);
    const int32_t *d_tok = c->d_ints + INTS_TOK * nb, *d_par = c->d_ints + INTS_PAR * nb;
    const int32_t *d_pos = c->d_ints + INTS_POS * nb, *d_pre = c->d_ints + INTS_META * nb;
    const bool gemm = c->blas && n >= ARB_CUDA_GEMM_MIN_NODES; // FP16 inputs wanted
    __half *x16 = gemm ? c->x16 : NULL;

    k_get_rows(st, &m->tok_embd, d_tok, n, c->x);
    prof_mark(c, PROF_EMBED);
    attn_launch aa = {};
    aa.q = c->q, aa.kv_stride = kvd, aa.n_prefix = d_pre, aa.n = n, aa.parent = d_par;
    aa.n_head = m->n_head, aa.n_head_kv = m->n_head_kv, aa.head_dim = hd, aa.scale = 1.0f / sqrtf((float)hd);
    aa.out = c->att, aa.n_ctx = c->n_ctx, aa.n_batch_max = c->n_batch_max;
    aa.splits = n >= c->attn_block_from ? 1 : c->attn_splits, aa.chunk = c->attn_chunk, aa.part = c->attn_part;
    aa.warp = c->attn_warp, aa.warp_min = c->attn_warp_keys, aa.merge_parallel = c->attn_merge_parallel;
    aa.merge_fused = c->attn_merge_fused, aa.ticket = c->attn_ticket;
    aa.warp_keys = arb_attn_warp_width(c->n_ctx, c->attn_splits, c->attn_warp_keys);
    const size_t layer_rows = (size_t)c->n_ctx * kvd;
    // The int8 GEMV's inputs are quantized once each: by the RMSNorms themselves, and
    // after attention and SwiGLU, for the matrices in the int8 layout (dmat.q8x: exact mode,
    // or ARBOR_CUDA_GEMV=dp4a). They take them at every node
    // count (the GEMV, then the tree kernel: batch-invariant in both modes); cuBLAS (fast
    // mode, 16+ nodes) serves the others from the FP16 copies.
    xq8 qb, qn = xq_for(c, E);
    // ARBOR_CUDA_GLU=fused: the gate/up kernel's int8 output, in the second buffer (its input
    // is in the first)
    const xq8 qo = xq_layout(c->xo, c->xo_d, c->xo_isum, m->n_ff);
    for (int l = 0; l < c->n_layer; l++) {
        const dlayer *L = &m->layers[l];
        float *kl = c->k + l * layer_rows, *vl = c->v + l * layer_rows;
        const bool qkv8 = L->wq.q8x || L->wk.q8x || L->wv.q8x;
        const xq8 *xq = qkv8 ? &qn : NULL;
        k_rmsnorm(st, c->x, L->attn_norm, n, E, m->eps, c->xb, x16, xq);
        prof_mark(c, PROF_NORM);
        const dmat *qkv[3] = {&L->wq, &L->wk, &L->wv};
        float *const qkv_out[3] = {c->q, c->kn, c->vn};
        // ARBOR_CUDA_QKV=fused: the GEMV rotates q and K and stores K and V itself (llama's
        // interleaved RoPE, nothing between the GEMV and RoPE)
        if (c->qkv_fused && !gemm && !m->neox && !L->bq && !L->bk && !L->bv && !L->q_norm &&
            k_gemv_qkv_rope(st, qkv, n, xq, c->q, kl, vl, hd, d_pos, c->cs, d_pre)) {
            prof_mark(c, PROF_QKV);
        } else {
            if (gemm || !k_gemv_multi(st, qkv, 3, c->xb, E, n, qkv_out, xq)) {
                matmul(c, &L->wq, c->xb, x16, n, c->q, false, xq);
                matmul(c, &L->wk, c->xb, x16, n, c->kn, false, xq);
                matmul(c, &L->wv, c->xb, x16, n, c->vn, false, xq);
            }
            prof_mark(c, PROF_QKV);
            if (L->bq)
                k_add_bias(st, c->q, L->bq, n, qd);
            if (L->bk)
                k_add_bias(st, c->kn, L->bk, n, kvd);
            if (L->bv)
                k_add_bias(st, c->vn, L->bv, n, kvd);
            if (L->q_norm) {
                k_rmsnorm(st, c->q, L->q_norm, n * m->n_head, hd, m->eps, c->q, NULL, NULL);
                k_rmsnorm(st, c->kn, L->k_norm, n * m->n_head_kv, hd, m->eps, c->kn, NULL, NULL);
            }
            prof_mark(c, PROF_NORM);
            k_rope_store(st, c->q, c->kn, c->vn, kl, vl, n, m->n_head, m->n_head_kv, hd, d_pos, c->cs, m->neox,
                         d_pre);
        }
        prof_mark(c, PROF_ROPE);
        aa.k = kl, aa.v = vl;
        xq8 qa = xq_for(c, qd);
        bool att_q = false;
        k_attention(st, &aa, L->wo.q8x ? &qa : NULL, &att_q);
        prof_mark(c, PROF_ATTN);
        if (gemm)
            k_to_half_f32(st, c->att, (size_t)n * qd, x16);
        xq = att_q ? &qa : quant_for(c, c->att, n, qd, L->wo.q8x, &qb);
        prof_mark(c, PROF_QUANT);
        matmul(c, &L->wo, c->att, x16, n, c->x, true, xq); // x += wo . att
        prof_mark(c, PROF_WO);
        const bool ffn8 = L->w_gate.q8x || L->w_up.q8x;
        xq = ffn8 ? &qn : NULL;
        k_rmsnorm(st, c->x, L->ffn_norm, n, E, m->eps, c->xb, x16, xq);
        prof_mark(c, PROF_NORM);
        // with ARBOR_CUDA_GLU=fused and an int8 down matrix, the gate/up kernel also
        // quantizes its output (qo)
        const bool fuse = c->glu_fused && L->w_down.q8x && L->w_gate.q8x && !gemm;
        bool glu_q = false;
        if (!gemm && k_gemv_glu(st, &L->w_gate, &L->w_up, c->xb, E, n, c->hg, xq, fuse ? &qo : NULL)) {
            glu_q = fuse;
        } else {
            matmul(c, &L->w_gate, c->xb, x16, n, c->hg, false, xq);
            matmul(c, &L->w_up, c->xb, x16, n, c->hu, false, xq);
            k_swiglu(st, c->hg, c->hu, (size_t)n * m->n_ff, x16);
        }
        prof_mark(c, PROF_FFN_IN);
        xq = glu_q ? &qo : quant_for(c, c->hg, n, m->n_ff, L->w_down.q8x, &qb);
        prof_mark(c, PROF_QUANT);
        matmul(c, &L->w_down, c->hg, x16, n, c->x, true, xq); // x += w_down . (silu(g) u)
        prof_mark(c, PROF_DOWN);
    }
    const int nh = n - head_from;
    if (nh <= 0 || !head)
        return;
    const bool hgemm = c->blas && nh >= ARB_CUDA_GEMM_MIN_NODES;
    const xq8 *hq = m->output.q8x ? &qn : NULL;
    k_rmsnorm(st, c->x + (size_t)head_from * E, m->output_norm, nh, E, m->eps, c->xb, hgemm ? c->x16 : NULL, hq);
    matmul(c, &m->output, c->xb, hgemm ? c->x16 : NULL, nh, c->logits, false, hq);
    prof_mark(c, PROF_HEAD);
    if (argmax)
        k_argmax(st, c->logits, nh, m->n_vocab, c->amax_scratch, c->d_ints + INTS_ARG * nb);
    if (topk_k > 0)
        k_topk_softmax(st, c->logits, nh, m->n_vocab, topk_k, c->topk_ids, c->topk_p, c->topk_onepass);
    prof_mark(c, PROF_ARGMAX);
}

// The captured step for (n, argmax, topk_k), capturing it on first use; NULL = launch
// directly. The top-K graphs hold one k (the decoder asks for one); another k launches
// directly.
static cudaGraphExec_t step_graph(arb_cuda_ctx *c, int n, bool argmax, int topk_k)
{
    if (topk_k > 0 && c->graph_topk_k > 0 && topk_k != c->graph_topk_k)
        return NULL;
    cudaGraphExec_t *slot = &c->graphs[(argmax ? 1 : 0) | (topk_k > 0 ? 2 : 0)][n];
    if (*slot || c->graphs_off)
        return *slot;
    if (topk_k > 0)
        c->graph_topk_k = topk_k;
    cudaGraph_t g = NULL;
    if (cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        c->graphs_off = true;
        return NULL;
    }
    enqueue_step(c, n, 0, true, argmax, topk_k);
    cudaError_t e = cudaStreamEndCapture(c->st, &g);
    if (e == cudaSuccess)
        e = cudaGraphInstantiate(slot, g, 0);
    if (g)
        cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        cudaGetLastError(); // not fatal
        *slot = NULL;
        if (c->pdl) { // a driver that cannot capture programmatic edges: capture without them
            fprintf(stderr, "backend cuda: capturing a step with programmatic dependent launch failed (%s); "
                            "launching without it\n", cudaGetErrorString(e));
            c->pdl = false;
            return step_graph(c, n, argmax, topk_k);
        }
        c->graphs_off = true; // this context launches its steps directly from now on
    }
    return *slot;
}

// A top-K request (a step's or an output-head call's): k in 0..ARB_TOPK_K_MAX, with both
// buffers when k > 0.
static int check_topk(int k, const int32_t *ids, const float *p, arb_err *err)
{
    if (k < 0 || k > ARB_TOPK_K_MAX || (k > 0 && (!ids || !p)))
        return ARB_ERR(err, ARB_E_INVAL, "backend cuda: top-K of %d (0..%d, with buffers)", k, ARB_TOPK_K_MAX);
    return ARB_OK;
}

extern "C" int arb_cuda_forward(arb_cuda_ctx *c, const arb_cuda_step *s, arb_err *err)
{
    const arb_cuda_model *m = c->m;
    const int n = s->n;
    if (n < 1 || n > c->n_batch_max || s->n_prefix < 0 || s->n_prefix + n > c->n_ctx || s->head_from < 0 ||
        s->head_from > n)
        return ARB_ERR(err, ARB_E_INVAL, "backend cuda: batch of %d nodes at %d (n_batch_max %d, n_ctx %d)", n,
                       s->n_prefix, c->n_batch_max, c->n_ctx);
    const int krc = check_topk(s->topk_k, s->topk_ids, s->topk_p, err);
    if (krc)
        return krc;
    const size_t nb = (size_t)c->n_batch_max;
    memcpy(c->h_ints + INTS_TOK * nb, s->tok, n * sizeof(int32_t));
    memcpy(c->h_ints + INTS_PAR * nb, s->parent, n * sizeof(int32_t));
    memcpy(c->h_ints + INTS_POS * nb, s->pos, n * sizeof(int32_t));
    c->h_ints[INTS_META * nb] = s->n_prefix;
    cudaStream_t st = c->st;
    cudaMemcpyAsync(c->d_ints, c->h_ints, (4 * nb + 1) * sizeof(int32_t), cudaMemcpyHostToDevice, st);
    const int nh = n - s->head_from;
    const bool head = nh > 0 && (s->logits || s->argmax || s->hidden || s->topk_k > 0);
    c->head_rows = 0;
    if (c->prof.on) {
        c->prof.n = 0;
        cudaEventRecord(c->prof.ev[0], st);
    }
    cudaGraphExec_t g =
        s->head_from == 0 && head && !c->prof.on ? step_graph(c, n, s->argmax != NULL, s->topk_k) : NULL;
    if (g)
        cudaGraphLaunch(g, st);
    else
        enqueue_step(c, n, s->head_from, head, s->argmax != NULL, s->topk_k);
    if (head) {
        if (s->hidden)
            cudaMemcpyAsync(s->hidden, c->xb, (size_t)nh * m->n_embd * sizeof(float), cudaMemcpyDeviceToHost, st);
        if (s->argmax)
            cudaMemcpyAsync(s->argmax, c->d_ints + INTS_ARG * nb, (size_t)nh * sizeof(int32_t),
                            cudaMemcpyDeviceToHost, st);
        if (s->topk_k > 0) {
            const size_t nk = (size_t)nh * s->topk_k;
            cudaMemcpyAsync(s->topk_ids, c->topk_ids, nk * sizeof(int32_t), cudaMemcpyDeviceToHost, st);
            cudaMemcpyAsync(s->topk_p, c->topk_p, nk * sizeof(float), cudaMemcpyDeviceToHost, st);
        }
        if (s->logits)
            cudaMemcpyAsync(s->logits, c->logits, (size_t)nh * m->n_vocab * sizeof(float), cudaMemcpyDeviceToHost,
                            st);
    }
    const cudaError_t e = cudaStreamSynchronize(st);
    if (e != cudaSuccess)
        return fail(err, e, "forward");
    const cudaError_t le = cudaGetLastError();
    if (le != cudaSuccess)
        return fail(err, le, "forward (kernel launch)");
    c->head_rows = head ? nh : 0; // the head GEMV wrote every row of c->logits, whatever was copied back
    if (c->prof.on && n == 1) { // decode steps only
        for (int i = 1; i <= c->prof.n; i++) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, c->prof.ev[i - 1], c->prof.ev[i]) == cudaSuccess)
                c->prof.ms[c->prof.lab[i]] += ms;
        }
        c->prof.steps++;
    }
    return ARB_OK;
}

extern "C" int arb_cuda_logits_row(arb_cuda_ctx *c, int r, float *row, arb_err *err)
{
    if (r < 0 || r >= c->head_rows || !row)
        return ARB_ERR(err, ARB_E_INVAL,
                       "backend cuda: logits row %d of the last forward's %d (none after an output head call)", r,
                       c->head_rows);
    const int V = c->m->n_vocab;
    const cudaError_t e =
        cudaMemcpyAsync(row, c->logits + (size_t)r * V, (size_t)V * sizeof(float), cudaMemcpyDeviceToHost, c->st);
    const cudaError_t se = e == cudaSuccess ? cudaStreamSynchronize(c->st) : e;
    return se == cudaSuccess ? ARB_OK : fail(err, se, "logits row");
}

extern "C" int arb_cuda_output_head(arb_cuda_ctx *c, const float *hidden, int n, const arb_cuda_head_out *o,
                                    arb_err *err)
{
    const arb_cuda_model *m = c->m;
    if (n < 1 || n > c->n_batch_max || !hidden || !o || (!o->logits && !o->argmax && o->topk_k == 0))
        return ARB_ERR(err, ARB_E_INVAL, "backend cuda: output head of %d rows (1..%d) or NULL buffers", n,
                       c->n_batch_max);
    const int krc = check_topk(o->topk_k, o->topk_ids, o->topk_p, err);
    if (krc)
        return krc;
    const int E = m->n_embd;
    const cudaStream_t st = c->st;
    // The rows go where the forward's final RMSNorm leaves its output (xb) and take the
    // forward's head path from there (enqueue_step): the FP16 copy for cuBLAS at 16+ rows,
    // the int8 blocks for a head in the int8 layout (k_quant_q8: warp_q8 of the same floats,
    // as the RMSNorm's own quantization), the same GEMV. So a forward's hidden rows give its
    // logits back bit for bit (exact mode; fast mode at the same row count). The head writes
    // c->logits: the last forward's rows are gone (arb_cuda_logits_row refuses them).
    c->head_rows = 0;
    cudaMemcpyAsync(c->xb, hidden, (size_t)n * E * sizeof(float), cudaMemcpyHostToDevice, st);
    const bool hgemm = c->blas && n >= ARB_CUDA_GEMM_MIN_NODES;
    if (hgemm)
        k_to_half_f32(ks(c), c->xb, (size_t)n * E, c->x16);
    xq8 qb;
    const xq8 *hq = quant_for(c, c->xb, n, E, m->output.q8x, &qb);
    matmul(c, &m->output, c->xb, hgemm ? c->x16 : NULL, n, c->logits, false, hq);
    // The forward's own selection kernels on these rows (enqueue_step's tail), so a row's
    // argmax and top-K are what an eval of the same hidden row returns.
    if (o->argmax) {
        int32_t *d_arg = c->d_ints + INTS_ARG * (size_t)c->n_batch_max;
        k_argmax(ks(c), c->logits, n, m->n_vocab, c->amax_scratch, d_arg);
        cudaMemcpyAsync(o->argmax, d_arg, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost, st);
    }
    if (o->topk_k > 0) {
        const size_t nk = (size_t)n * o->topk_k;
        k_topk_softmax(ks(c), c->logits, n, m->n_vocab, o->topk_k, c->topk_ids, c->topk_p, c->topk_onepass);
        cudaMemcpyAsync(o->topk_ids, c->topk_ids, nk * sizeof(int32_t), cudaMemcpyDeviceToHost, st);
        cudaMemcpyAsync(o->topk_p, c->topk_p, nk * sizeof(float), cudaMemcpyDeviceToHost, st);
    }
    if (o->logits)
        cudaMemcpyAsync(o->logits, c->logits, (size_t)n * m->n_vocab * sizeof(float), cudaMemcpyDeviceToHost, st);
    const cudaError_t e = cudaStreamSynchronize(st);
    if (e != cudaSuccess)
        return fail(err, e, "output head");
    const cudaError_t le = cudaGetLastError();
    return le == cudaSuccess ? ARB_OK : fail(err, le, "output head (kernel launch)");
}

extern "C" int arb_cuda_kv_commit(arb_cuda_ctx *c, int n_past, const int32_t *path, int n, arb_err *err)
{
    if (n <= 0)
        return ARB_OK;
    bool moves = false;
    for (int j = 0; j < n; j++)
        moves = moves || path[j] != j;
    if (!moves) // a chain prefix (a prefill of any length): the rows are already in place
        return ARB_OK;
    if (n > c->n_batch_max) // a moved path comes from one tree eval, at most n_batch_max nodes
        return ARB_ERR(err, ARB_E_INVAL, "backend cuda: commit of %d rows (n_batch_max %d)", n, c->n_batch_max);
    const size_t nb = (size_t)c->n_batch_max;
    int32_t *h_path = c->h_ints + INTS_ARG * nb, *d_path = c->d_ints + INTS_ARG * nb;
    memcpy(h_path, path, (size_t)n * sizeof(int32_t));
    cudaMemcpyAsync(d_path, h_path, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice, c->st);
    k_kv_commit(ks(c), c->k, c->v, c->n_layer, c->n_ctx, c->m->n_head_kv * c->m->head_dim, n_past, d_path, n);
    const cudaError_t e = cudaStreamSynchronize(c->st);
    return e == cudaSuccess ? ARB_OK : fail(err, e, "KV commit");
}
