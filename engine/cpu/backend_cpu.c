/* backend_cpu.c — the exact CPU backend: the op orchestration (threading, key lists,
 * fused phases) over two kernel tables, the quantized matmul (matmul.c, one file per
 * ISA behind mm_impl) and the vector kernels (vec_*.c, one file per ISA behind
 * vec_impl: attention inner loops, softmax exp, RMSNorm's sum of squares, SwiGLU).
 *
 * Batch invariance is the design constraint. Each output element is produced by
 * a reduction whose order depends only on vector lengths:
 *   - dot products use 8 fixed accumulator lanes over the vector, combined by a
 *     fixed tree, then a sequential tail — the same code for every n;
 *   - rmsnorm sums squares in double in 8 fixed lanes (vec_int.h);
 *   - attention walks node i's key list (prefix rows, ancestors, itself) in
 *     position order: scores, max, exp, sum and the weighted V sum are each
 *     sequential over that list. Work is split across threads by whole
 *     (node, head) tasks, so the thread count never changes a result.
 * Every vector-kernel family performs the same float operations in the same order
 * lane for lane (multiplies and adds never fused), so the ISA never changes a result
 * either; arb_load_opts.attn_scalar forces the scalar family (tests/test_vec.c and the
 * model tests compare them).
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "../quant.h"
#include "matmul.h"
#include "threadpool.h"
#include "vec_int.h"

/* Below this many elements an elementwise op runs on the caller: a pool round trip
   costs more than the work. Results never depend on the split. */
#define EW_PAR_MIN 8192

typedef struct cpu_ctx {
    arb_threadpool *tp;   /* owned */
    const vec_impl *vec;  /* attention, norm and SwiGLU kernels (vec_int.h): same bits in every family */
} cpu_ctx;

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

static void cpu_matmul_multi(void *vctx, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                             float *const *ys, void *work)
{
    arb_matmul_multi(((cpu_ctx *)vctx)->tp, ws, nw, x, n_tok, ys, work);
}

static void cpu_get_rows(void *vctx, const arb_qmat *w, const int32_t *ids, int n, float *out)
{
    for (int i = 0; i < n; i++)
        arb_dequant_row(w->type, (const uint8_t *)w->data + (size_t)ids[i] * w->row_bytes,
                        out + (size_t)i * w->n_in, (size_t)w->n_in);
}

typedef struct norm_job {
    const float *x, *g;
    int n, dim;
    float eps;
    float *out;
    const vec_impl *vec;
} norm_job;

/* Rows t = ith, ith + nth, ...: a row is always normalized whole by one thread. */
static void rmsnorm_row(const norm_job *j, int t)
{
    const float *xr = j->x + (size_t)t * j->dim;
    float *o = j->out + (size_t)t * j->dim;
    const double sum = j->vec->sumsq(xr, j->dim);
    const float scale = 1.0f / sqrtf((float)(sum / j->dim) + j->eps);
    for (int k = 0; k < j->dim; k++)
        o[k] = (xr[k] * scale) * j->g[k];
}

static void rmsnorm_task(void *ud, int ith, int nth)
{
    for (int t = ith; t < ((const norm_job *)ud)->n; t += nth)
        rmsnorm_row(ud, t);
}

/* rows t0..t1-1, as the producer of a matmul's input (arb_mm_pre) */
static void rmsnorm_pre(void *ud, int t0, int t1)
{
    for (int t = t0; t < t1; t++)
        rmsnorm_row(ud, t);
}

static void cpu_rmsnorm(void *vctx, const float *x, const float *g, int n, int dim, float eps, float *out)
{
    const cpu_ctx *c = vctx;
    norm_job j = {.x = x, .g = g, .n = n, .dim = dim, .eps = eps, .out = out, .vec = c->vec};
    if ((size_t)n * (size_t)dim < EW_PAR_MIN)
        rmsnorm_task(&j, 0, 1);
    else
        arb_threadpool_run(c->tp, rmsnorm_task, &j);
}

/* RMSNorm computed inside the matmul's pool run (one round trip less, matmul.h). */
static void cpu_norm_matmul_multi(void *vctx, const float *x, const float *g, int dim, float eps, float *xb,
                                  const arb_qmat *const *ws, int nw, int n, float *const *ys, void *work)
{
    const cpu_ctx *c = vctx;
    norm_job j = {.x = x, .g = g, .n = n, .dim = dim, .eps = eps, .out = xb, .vec = c->vec};
    const arb_mm_pre pre = {rmsnorm_pre, &j};
    arb_matmul_multi_pre(c->tp, ws, nw, xb, n, ys, work, &pre);
}

/* Rotate tokens t0..t1-1 of x (rows of n_head heads). */
static void rope_rows(float *x, int t0, int t1, int n_head, int head_dim, const int32_t *pos, const float *cs,
                      int neox)
{
    const int half = head_dim / 2;
    for (int t = t0; t < t1; t++) {
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

static void cpu_rope(void *vctx, float *x, int n, int n_head, int head_dim, const int32_t *pos, const float *cs,
                     int neox)
{
    (void)vctx;
    rope_rows(x, 0, n, n_head, head_dim, pos, cs, neox);
}

/* The softmax's max and sum over the scores. A single running max or sum is a chain
   of 4-cycle dependencies per key; 8 independent lanes are not. The max is exact in
   any order; the sum uses 8 fixed lanes (lane l takes j = l mod 8, in order), the
   combining tree of arb_dot_f32, then the tail in order: a function of the scores alone,
   the same on every path. */
static float max_f32(const float *s, int n)
{
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++)
            m[l] = s[j + l] > m[l] ? s[j + l] : m[l];
    for (; j < n; j++)
        m[0] = s[j] > m[0] ? s[j] : m[0];
    for (int l = 1; l < 8; l++)
        m[0] = m[l] > m[0] ? m[l] : m[0];
    return m[0];
}

static float sum_f32(const float *s, int n)
{
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++)
            a[l] += s[j + l];
    float t = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (; j < n; j++)
        t += s[j];
    return t;
}

typedef struct attn_split {
    int per, n_task; /* heads per task, tasks */
} attn_split;

typedef struct attn_job {
    const arb_attn_args *a;
    arb_tp_phase *rope; /* NULL, or the queries' and new keys' RoPE, done first */
    attn_split split;
    const vec_impl *vec;
} attn_job;

/* Tasks are (node, head group) pairs: a group is the query heads of one KV head (up
   to ARB_VEC_HEADS at a time), or a single head when there are too few groups to keep
   the threads busy (decode). Piece c of nc takes a contiguous range of tasks with
   scratch slot c; a thread rebuilds the key-row list only when its next task is for
   another node. Results do not depend on grouping or on the pieces. */
static attn_split attn_split_of(const arb_attn_args *a, int nth)
{
    const int group = a->n_head / a->n_head_kv;
    const int per = a->n * a->n_head_kv >= 4 * nth ? group : 1; /* >= 4 groups per thread */
    return (attn_split){per, a->n * (a->n_head / per)};
}

/* Sliding-window attention (Gemma-3 local layers) as a range restriction: a node's key
   list holds the keys of positions 0..p in order (prefix rows, ancestors root first,
   itself), so its window, the keys at positions > p - window, is the list's last `window`
   entries. The first key index to attend from; the list itself is unchanged. Counting
   positions along the node's path keeps a tree node's window that of its chain. */
static int attn_window_first(int n_keys, int window)
{
    return window > 0 && n_keys > window ? n_keys - window : 0;
}

static void attn_task(void *ud, int c, int nc)
{
    const attn_job *job = ud;
    const arb_attn_args *a = job->a;
    const int hd = a->head_dim, group = a->n_head / a->n_head_kv, len = a->n_prefix + a->n;
    float *scratch = a->scratch + (size_t)c * a->scratch_stride;
    int32_t *rows = (int32_t *)(scratch + (size_t)ARB_VEC_HEADS * len);
    const int per = job->split.per, n_task = job->split.n_task;
    const int t0 = arb_tp_part(n_task, c, nc), t1 = arb_tp_part(n_task, c + 1, nc);
    int last_i = -1, n_keys = 0;
    arb_tp_phase_run(job->rope);
    for (int t = t0; t < t1; t++) {
        const int i = t / (a->n_head / per), h0 = (t % (a->n_head / per)) * per, kvh = h0 / group;
        if (i != last_i) {
            /* prefix rows, then ancestors root first, then the node itself */
            for (int j = 0; j < a->n_prefix; j++)
                rows[j] = j;
            int depth = 0;
            for (int p = i; p >= 0; p = a->parent[p])
                depth++;
            n_keys = a->n_prefix + depth;
            for (int p = i, j = n_keys - 1; p >= 0; p = a->parent[p], j--)
                rows[j] = a->n_prefix + p;
            last_i = i;
        }
        for (int g0 = 0; g0 < per; g0 += ARB_VEC_HEADS) {
            const int nh = per - g0 < ARB_VEC_HEADS ? per - g0 : ARB_VEC_HEADS;
            const float *q[ARB_VEC_HEADS];
            float *sc[ARB_VEC_HEADS], *out[ARB_VEC_HEADS];
            for (int x = 0; x < nh; x++) {
                const size_t qo = ((size_t)i * a->n_head + (size_t)(h0 + g0 + x)) * hd;
                q[x] = a->q + qo;
                out[x] = a->out + qo;
                sc[x] = scratch + (size_t)x * len;
            }
            const int k0 = attn_window_first(n_keys, a->window), nk = n_keys - k0;
            job->vec->scores(q, nh, a->k + (size_t)kvh * hd, a->kv_stride, rows + k0, nk, hd, a->scale, sc);
            float inv[ARB_VEC_HEADS];
            for (int x = 0; x < nh; x++) {
                job->vec->exp(sc[x], nk, max_f32(sc[x], nk));
                inv[x] = 1.0f / sum_f32(sc[x], nk);
            }
            job->vec->wsum(a->v + (size_t)kvh * hd, a->kv_stride, rows + k0, (const float *const *)sc, nh, nk, hd, out);
            for (int x = 0; x < nh; x++)
                for (int d = 0; d < hd; d++)
                    out[x][d] *= inv[x];
        }
    }
}

/* The attention run, with an optional first phase (RoPE). */
static void attn_run(const cpu_ctx *c, const arb_attn_args *a, arb_tp_phase *rope)
{
    attn_job job = {.a = a, .rope = rope, .vec = c->vec};
    const int nth = arb_threadpool_size(c->tp);
    job.split = attn_split_of(a, nth);
    const int pieces = ARB_ATTN_SLOTS_PER_THREAD * nth;
    arb_threadpool_run_chunks(c->tp, attn_task, &job, job.split.n_task < pieces ? job.split.n_task : pieces);
}

static void cpu_attention(void *vctx, const arb_attn_args *a) { attn_run(vctx, a, NULL); }

/* RoPE as the first phase of the attention run (threadpool.h): slice s rotates its
   tokens' queries and new keys, then every piece waits for all of them; one pool round
   trip and a serial pass less per layer. Same operations, so the same bits. */
typedef struct rope_job {
    const arb_rope_args *r;
    const arb_attn_args *a;
} rope_job;

static void rope_slice(void *ud, int s, int n)
{
    const rope_job *j = ud;
    const int t0 = arb_tp_part(j->a->n, s, n), t1 = arb_tp_part(j->a->n, s + 1, n);
    rope_rows(j->r->q, t0, t1, j->a->n_head, j->a->head_dim, j->r->pos, j->r->cs, j->r->neox);
    rope_rows(j->r->k, t0, t1, j->a->n_head_kv, j->a->head_dim, j->r->pos, j->r->cs, j->r->neox);
}

static void cpu_rope_attention(void *vctx, const arb_rope_args *r, const arb_attn_args *a)
{
    const cpu_ctx *c = vctx;
    const int nth = arb_threadpool_size(c->tp);
    rope_job rj = {r, a};
    arb_tp_phase ph;
    arb_tp_phase_init(&ph, rope_slice, &rj, a->n < 2 * nth ? a->n : 2 * nth);
    attn_run(c, a, &ph);
}

typedef struct ew_job {
    const cpu_ctx *c;
    float *g;
    const float *u;
    size_t n, dim; /* elements; per row (the fused form) */
} ew_job;

static void swiglu_range(const ew_job *j, size_t i0, size_t i1) { j->c->vec->swiglu(j->g, j->u, i0, i1); }

static void geglu_task(void *ud, int ith, int nth)
{
    const ew_job *j = ud;
    j->c->vec->geglu(j->g, j->u, j->n * (size_t)ith / (size_t)nth, j->n * (size_t)(ith + 1) / (size_t)nth);
}

/* GeGLU (Gemma): elementwise, so any split gives the same bits. */
static void cpu_geglu(void *vctx, float *g, const float *u, int n, int dim)
{
    const cpu_ctx *c = vctx;
    ew_job j = {.c = c, .g = g, .u = u, .n = (size_t)n * (size_t)dim};
    if (j.n < EW_PAR_MIN)
        geglu_task(&j, 0, 1);
    else
        arb_threadpool_run(c->tp, geglu_task, &j);
}

/* rows t0..t1-1, as the producer of a matmul's input (arb_mm_pre) */
static void swiglu_pre(void *ud, int t0, int t1)
{
    const ew_job *j = ud;
    swiglu_range(j, (size_t)t0 * j->dim, (size_t)t1 * j->dim);
}

static void swiglu_task(void *ud, int ith, int nth)
{
    const ew_job *j = ud;
    swiglu_range(j, j->n * (size_t)ith / (size_t)nth, j->n * (size_t)(ith + 1) / (size_t)nth);
}

static void cpu_swiglu(void *vctx, float *g, const float *u, int n, int dim)
{
    const cpu_ctx *c = vctx;
    ew_job j = {.c = c, .g = g, .u = u, .n = (size_t)n * (size_t)dim};
    if (j.n < EW_PAR_MIN)
        swiglu_task(&j, 0, 1);
    else
        arb_threadpool_run(c->tp, swiglu_task, &j);
}

/* SwiGLU computed inside the down projection's pool run, and the residual added by
   the thread that computed each output (matmul.h). */
static void cpu_swiglu_matmul_add(void *vctx, float *g, const float *u, int dim, const arb_qmat *w, int n, float *y,
                                  void *work, float *residual)
{
    const cpu_ctx *c = vctx;
    const ew_job j = {.c = c, .g = g, .u = u, .n = (size_t)n * (size_t)dim, .dim = (size_t)dim};
    const arb_mm_pre pre = {swiglu_pre, (void *)&j};
    arb_matmul_ex(c->tp, w, g, n, y, work, &pre, residual);
}

static void cpu_matmul_add(void *vctx, const arb_qmat *w, const float *x, int n, float *y, void *work,
                           float *residual)
{
    arb_matmul_ex(((cpu_ctx *)vctx)->tp, w, x, n, y, work, NULL, residual);
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

static void cpu_parallel_for(void *vctx, int n, void (*fn)(void *ud, int i, int n), void *ud)
{
    arb_threadpool_run_chunks(((cpu_ctx *)vctx)->tp, fn, ud, n);
}

static const arb_backend_i cpu_iface = {
    .name = "cpu",
    .free = cpu_free,
    .matmul_work_bytes = cpu_matmul_work_bytes,
    .matmul = cpu_matmul,
    .matmul_multi = cpu_matmul_multi,
    .get_rows = cpu_get_rows,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .attention = cpu_attention,
    .rope_attention = cpu_rope_attention,
    .swiglu = cpu_swiglu,
    .geglu = cpu_geglu,
    .norm_matmul_multi = cpu_norm_matmul_multi,
    .swiglu_matmul_add = cpu_swiglu_matmul_add,
    .matmul_add = cpu_matmul_add,
    .add_bias = cpu_add_bias,
    .add = cpu_add,
    .n_threads = cpu_n_threads,
    .parallel_for = cpu_parallel_for,
};

int arb_backend_cpu_init(int n_threads, const char *vec_family, arb_backend *be, arb_err *err)
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
    c->vec = arb_vec_select(vec_family);
    be->iface = &cpu_iface;
    be->ctx = c;
    return ARB_OK;
}
