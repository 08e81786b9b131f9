/* backend_cpu.c — the exact CPU backend: every op except the quantized matmul
 * (engine/cpu/matmul.c, which this file calls) lives here.
 *
 * Batch invariance is the design constraint. Each output element is produced by
 * a reduction whose order depends only on vector lengths:
 *   - dot products use 8 fixed accumulator lanes over the vector, combined by a
 *     fixed tree, then a sequential tail — the same code for every n;
 *   - rmsnorm sums squares sequentially in double (as ggml does);
 *   - attention walks node i's key list (prefix rows, ancestors, itself) in
 *     position order: scores, max, exp, sum and the weighted V sum are each
 *     sequential over that list. Work is split across threads by whole
 *     (node, head) tasks, so the thread count never changes a result.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "../quant.h"
#include "matmul.h"
#include "threadpool.h"

typedef struct cpu_ctx {
    arb_threadpool *tp; /* owned */
    bool avx2;          /* attention uses the AVX2 instantiation (same results) */
} cpu_ctx;

/* Fixed-lane dot product: 8 accumulator lanes (lane l sums elements i = l mod 8,
   each step a separate multiply then add, never fused), combined by a fixed tree,
   then a sequential tail. The association order is a function of n only. The AVX2
   version below performs exactly the same operations lane for lane, so both give
   bit-identical results (arbor compiles in ISO C mode: no implicit FMA contraction). */
static inline float dot_f32(const float *a, const float *b, int n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += a[i + l] * b[i + l];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* out[d] += p * v[d], elementwise (no reduction, any vector width gives the same bits). */
static inline void axpy_f32(float *out, float p, const float *v, int n)
{
    for (int d = 0; d < n; d++)
        out[d] += p * v[d];
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ARB_HAVE_AVX2_PATH 1
__attribute__((target("avx2"))) static inline float dot_f32_avx2(const float *a, const float *b, int n)
{
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    float l[8];
    _mm256_storeu_ps(l, acc);
    float s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}
__attribute__((target("avx2"))) static inline void axpy_f32_avx2(float *out, float p, const float *v, int n)
{
    const __m256 pp = _mm256_set1_ps(p);
    int d = 0;
    for (; d + 8 <= n; d += 8)
        _mm256_storeu_ps(out + d, _mm256_add_ps(_mm256_loadu_ps(out + d), _mm256_mul_ps(pp, _mm256_loadu_ps(v + d))));
    for (; d < n; d++)
        out[d] += p * v[d];
}
#endif

static void cpu_free(void *vctx)
{
    cpu_ctx *c = vctx;
    if (!c)
        return;
    arb_threadpool_free(c->tp);
    free(c);
}

static int cpu_n_threads(void *vctx) { return arb_threadpool_size(((cpu_ctx *)vctx)->tp); }

static size_t cpu_matmul_work_bytes(void *vctx, const arb_qmat *w, int n_tok)
{
    return arb_matmul_work_bytes(w->type, w->n_in, n_tok);
}

static void cpu_matmul(void *vctx, const arb_qmat *w, const float *x, int n_tok, float *y, void *work)
{
    arb_matmul(((cpu_ctx *)vctx)->tp, w, x, n_tok, y, work);
}

static void cpu_get_rows(void *vctx, const arb_qmat *w, const int32_t *ids, int n, float *out)
{
    for (int i = 0; i < n; i++)
        arb_dequant_row(w->type, (const uint8_t *)w->data + (size_t)ids[i] * w->row_bytes,
                        out + (size_t)i * w->n_in, (size_t)w->n_in);
}

static void cpu_rmsnorm(void *vctx, const float *x, const float *g, int n, int dim, float eps, float *out)
{
    for (int t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * dim;
        float *o = out + (size_t)t * dim;
        double sum = 0.0;
        for (int j = 0; j < dim; j++)
            sum += (double)(xr[j] * xr[j]);
        const float scale = 1.0f / sqrtf((float)(sum / dim) + eps);
        for (int j = 0; j < dim; j++)
            o[j] = (xr[j] * scale) * g[j];
    }
}

static void cpu_rope(void *vctx, float *x, int n, int n_head, int head_dim, const int32_t *pos, const float *cs,
                     int neox)
{
    const int half = head_dim / 2;
    for (int t = 0; t < n; t++) {
        const float *c = cs + (size_t)pos[t] * head_dim; /* half (cos, sin) pairs */
        for (int h = 0; h < n_head; h++) {
            float *v = x + ((size_t)t * n_head + h) * head_dim;
            for (int j = 0; j < half; j++) {
                const float co = c[2 * j], si = c[2 * j + 1];
                const int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * co - x1 * si;
                v[b] = x0 * si + x1 * co;
            }
        }
    }
}

/* One (node, head) task: softmax(q K^T * scale) V over the node's key list.
   Instantiated once per vector ISA (same operations, same bits). */
#define ATTN_ONE(NAME, ATTR, DOT, AXPY)                                                                          \
    ATTR static void NAME(const arb_attn_args *a, int i, int h, float *scores, int32_t *chain)                   \
    {                                                                                                           \
        const int hd = a->head_dim;                                                                             \
        const int kvh = h / (a->n_head / a->n_head_kv);                                                         \
        const float *q = a->q + ((size_t)i * a->n_head + h) * hd;                                               \
        float *out = a->out + ((size_t)i * a->n_head + h) * hd;                                                 \
        /* ancestors root-first, then the node itself, as batch indices */                                      \
        int depth = 0;                                                                                          \
        for (int p = i; p >= 0; p = a->parent[p])                                                               \
            chain[depth++] = p;                                                                                 \
        for (int l = 0, r = depth - 1; l < r; l++, r--) {                                                       \
            int32_t tmp = chain[l];                                                                             \
            chain[l] = chain[r];                                                                                \
            chain[r] = tmp;                                                                                     \
        }                                                                                                       \
        const int n_keys = a->n_prefix + depth;                                                                 \
        float mx = -INFINITY;                                                                                   \
        for (int j = 0; j < n_keys; j++) {                                                                      \
            const int row = j < a->n_prefix ? j : a->n_prefix + chain[j - a->n_prefix];                        \
            const float s = DOT(q, a->k + (size_t)row * a->kv_stride + (size_t)kvh * hd, hd) * a->scale;        \
            scores[j] = s;                                                                                      \
            mx = s > mx ? s : mx;                                                                               \
        }                                                                                                       \
        float sum = 0.0f;                                                                                       \
        for (int j = 0; j < n_keys; j++) {                                                                      \
            const float e = expf(scores[j] - mx);                                                               \
            scores[j] = e;                                                                                      \
            sum += e;                                                                                           \
        }                                                                                                       \
        for (int d = 0; d < hd; d++)                                                                            \
            out[d] = 0.0f;                                                                                      \
        for (int j = 0; j < n_keys; j++) {                                                                      \
            const int row = j < a->n_prefix ? j : a->n_prefix + chain[j - a->n_prefix];                        \
            AXPY(out, scores[j], a->v + (size_t)row * a->kv_stride + (size_t)kvh * hd, hd);                     \
        }                                                                                                       \
        const float inv = 1.0f / sum;                                                                           \
        for (int d = 0; d < hd; d++)                                                                            \
            out[d] *= inv;                                                                                      \
    }

ATTN_ONE(attn_one, , dot_f32, axpy_f32)
#ifdef ARB_HAVE_AVX2_PATH
ATTN_ONE(attn_one_avx2, __attribute__((target("avx2"))), dot_f32_avx2, axpy_f32_avx2)
#endif

typedef struct attn_job {
    const arb_attn_args *a;
    bool avx2;
} attn_job;

static void attn_task(void *ud, int ith, int nth)
{
    const attn_job *job = ud;
    const arb_attn_args *a = job->a;
    float *scores = a->scratch + (size_t)ith * a->scratch_stride;
    int32_t *chain = (int32_t *)(scores + a->n_prefix + a->n);
    const int n_task = a->n * a->n_head;
    for (int t = ith; t < n_task; t += nth) {
#ifdef ARB_HAVE_AVX2_PATH
        if (job->avx2) {
            attn_one_avx2(a, t / a->n_head, t % a->n_head, scores, chain);
            continue;
        }
#endif
        attn_one(a, t / a->n_head, t % a->n_head, scores, chain);
    }
}

static void cpu_attention(void *vctx, const arb_attn_args *a)
{
    const cpu_ctx *c = vctx;
    attn_job job = {.a = a, .avx2 = c->avx2};
    arb_threadpool_run(c->tp, attn_task, &job);
}

static void cpu_swiglu(void *vctx, float *g, const float *u, int n, int dim)
{
    const size_t total = (size_t)n * dim;
    for (size_t i = 0; i < total; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static void cpu_add_bias(void *vctx, float *x, const float *b, int n, int dim)
{
    for (int t = 0; t < n; t++)
        for (int j = 0; j < dim; j++)
            x[(size_t)t * dim + j] += b[j];
}

static void cpu_add(void *vctx, float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

static const arb_backend_i cpu_iface = {
    .name = "cpu",
    .free = cpu_free,
    .matmul_work_bytes = cpu_matmul_work_bytes,
    .matmul = cpu_matmul,
    .get_rows = cpu_get_rows,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .attention = cpu_attention,
    .swiglu = cpu_swiglu,
    .add_bias = cpu_add_bias,
    .add = cpu_add,
    .n_threads = cpu_n_threads,
};

int arb_backend_cpu_init(int n_threads, arb_backend *be, arb_err *err)
{
    memset(be, 0, sizeof *be);
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ARB_ERR(err, ARB_E_NOMEM, "backend cpu: out of memory");
    int rc = arb_threadpool_new(n_threads < 1 ? 1 : n_threads, &c->tp, err);
    if (rc != ARB_OK) {
        free(c);
        return rc;
    }
#ifdef ARB_HAVE_AVX2_PATH
    c->avx2 = __builtin_cpu_supports("avx2") && !getenv("ARBOR_ATTN_SCALAR");
#endif
    be->iface = &cpu_iface;
    be->ctx = c;
    return ARB_OK;
}
