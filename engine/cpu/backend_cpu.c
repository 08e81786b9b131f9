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
 * The attention kernels (scores, exp, weighted sum) exist in a scalar and an AVX2
 * version that perform the same float operations in the same order lane for lane
 * (multiplies and adds, never fused), so the ISA never changes a result either;
 * arb_load_opts.attn_scalar forces the scalar one (tests compare them).
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "../quant.h"
#include "matmul.h"
#include "threadpool.h"

/* Below this many elements an elementwise op runs on the caller: a pool round trip
   costs more than the work. Results never depend on the split. */
#define EW_PAR_MIN 8192

typedef struct cpu_ctx {
    arb_threadpool *tp; /* owned */
    bool avx2;          /* attention uses the AVX2 instantiation (same results) */
    bool avx512;        /* SwiGLU uses the AVX-512 one (same results) */
} cpu_ctx;

/* Fixed-lane dot product: 8 accumulator lanes (lane l sums elements i = l mod 8,
   each step one fused multiply-add, fmaf: a single rounding, the same as vfmadd),
   combined by a fixed tree, then a sequential tail. The association order is a
   function of n only. The AVX2+FMA version below performs exactly the same
   operations lane for lane, so both give bit-identical results (arbor compiles in
   ISO C mode: no implicit contraction elsewhere). FMA halves the instructions of
   both attention loops against a separate multiply and add. */
static inline float dot_f32(const float *a, const float *b, int n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] = fmaf(a[i + l], b[i + l], acc[l]);
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        s = fmaf(a[i], b[i], s);
    return s;
}

/* The two attention inner loops, per (node, head), over the key rows rows[0..n_keys):
     scores: s[j] = dot(q, K[rows[j]]) * scale      (dot_f32's lane layout)
     wsum:   out[d] = sum_j p[j] * V[rows[j]][d]     (sequential fmaf in j from 0.0f)
   k and v point at this KV head's first row; rows are in units of `stride` floats. */
/* Both take up to ATTN_HEADS query heads of one KV head (GQA): the key and value rows
   are read once for all of them. Per (key, head) the arithmetic is that of one head
   alone, so grouping changes no bit. */
#define ATTN_HEADS (ARB_ATTN_SCRATCH_ROWS - 1) /* 3: the AVX2 loops' 16 registers */
/* CALL(NH) for nh = 1..ATTN_HEADS, with NH a constant in each instantiation */
#define NH_SWITCH(CALL)                                                                                   \
    switch (nh) {                                                                                         \
    case 3: CALL(3); break;                                                                               \
    case 2: CALL(2); break;                                                                               \
    default: CALL(1); break;                                                                              \
    }
_Static_assert(ATTN_HEADS == 3, "NH_SWITCH and the 16-register AVX2 loops are written for 3 heads");
typedef void (*scores_fn)(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                          int n_keys, int hd, float scale, float *const *s);
typedef void (*wsum_fn)(const float *v, int stride, const int32_t *rows, const float *const *p, int nh,
                        int n_keys, int hd, float *const *out);

/* exp for the softmax, Cephes-style (range reduction by ln 2, degree-5 polynomial,
   ~1 ulp), written with plain multiplies and adds so that the AVX2 version below is
   bit-identical; round-to-nearest-even via the 1.5 * 2^23 trick. x <= 0 here. */
#define EXP_LO (-87.3f)
#define EXP_MAGIC 12582912.0f
static inline float exp_f32(float x)
{
    x = x < EXP_LO ? EXP_LO : x;
    const float n = (x * 1.44269504088896341f + EXP_MAGIC) - EXP_MAGIC;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = (y * (r * r) + r) + 1.0f;
    union { uint32_t u; float f; } e = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return y * e.f;
}

/* s[j] = exp(s[j] - mx) in place */
typedef void (*exp_fn)(float *s, int n, float mx);
static void exp_scalar(float *s, int n, float mx)
{
    for (int j = 0; j < n; j++)
        s[j] = exp_f32(s[j] - mx);
}

static void scores_scalar(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                          int n_keys, int hd, float scale, float *const *s)
{
    for (int h = 0; h < nh; h++)
        for (int j = 0; j < n_keys; j++)
            s[h][j] = dot_f32(q[h], k + (size_t)rows[j] * stride, hd) * scale;
}

static void wsum_scalar(const float *v, int stride, const int32_t *rows, const float *const *p, int nh,
                        int n_keys, int hd, float *const *out)
{
    for (int h = 0; h < nh; h++) {
        for (int d = 0; d < hd; d++)
            out[h][d] = 0.0f;
        for (int j = 0; j < n_keys; j++) {
            const float *vr = v + (size_t)rows[j] * stride;
            for (int d = 0; d < hd; d++)
                out[h][d] = fmaf(p[h][j], vr[d], out[h][d]);
        }
    }
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ARB_HAVE_AVX2_PATH 1
/* dot_f32 with one 8-lane register: the same FMAs per lane, then the same combining
   tree ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)). */
__attribute__((target("avx2,fma"))) static inline float dot_f32_avx2(const float *a, const float *b, int n)
{
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float l[8];
    _mm256_storeu_ps(l, acc);
    float s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (; i < n; i++)
        s = fmaf(a[i], b[i], s);
    return s;
}

/* Four keys at a time when hd % 8 == 0, for NH heads (16 ymm registers: 4 x NH
   accumulators, NH q vectors, one key vector): m = lo + hi gives (l0+l4, l1+l5,
   l2+l6, l3+l7), and hadd(hadd(m0, m1), hadd(m2, m3)) yields (m[0]+m[1]) + (m[2]+m[3])
   per key — exactly dot_f32's tree, so the scores are bit-identical to the scalar
   path, and each key row is loaded once for the NH heads. */
__attribute__((target("avx2,fma"))) static inline __m128 hsum4_dot_tree(__m256 a0, __m256 a1, __m256 a2,
                                                                       __m256 a3)
{
    const __m128 m0 = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
    const __m128 m1 = _mm_add_ps(_mm256_castps256_ps128(a1), _mm256_extractf128_ps(a1, 1));
    const __m128 m2 = _mm_add_ps(_mm256_castps256_ps128(a2), _mm256_extractf128_ps(a2, 1));
    const __m128 m3 = _mm_add_ps(_mm256_castps256_ps128(a3), _mm256_extractf128_ps(a3, 1));
    return _mm_hadd_ps(_mm_hadd_ps(m0, m1), _mm_hadd_ps(m2, m3));
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
scores4_avx2(const float *const *q, const int NH, const float *k, int stride, const int32_t *rows, int n_keys,
             int hd, float scale, float *const *s)
{
    int j = 0;
    if (hd % 8 == 0) {
        for (; j + 4 <= n_keys; j += 4) {
            const float *kr[4];
            for (int c = 0; c < 4; c++)
                kr[c] = k + (size_t)rows[j + c] * stride;
            __m256 acc[ATTN_HEADS][4];
            for (int h = 0; h < NH; h++)
                for (int c = 0; c < 4; c++)
                    acc[h][c] = _mm256_setzero_ps();
            for (int d = 0; d < hd; d += 8) {
                __m256 qv[ATTN_HEADS];
                for (int h = 0; h < NH; h++)
                    qv[h] = _mm256_loadu_ps(q[h] + d);
                for (int c = 0; c < 4; c++) {
                    const __m256 kv = _mm256_loadu_ps(kr[c] + d);
                    for (int h = 0; h < NH; h++)
                        acc[h][c] = _mm256_fmadd_ps(qv[h], kv, acc[h][c]);
                }
            }
            for (int h = 0; h < NH; h++)
                _mm_storeu_ps(s[h] + j, _mm_mul_ps(hsum4_dot_tree(acc[h][0], acc[h][1], acc[h][2], acc[h][3]),
                                                   _mm_set1_ps(scale)));
        }
    }
    for (; j < n_keys; j++)
        for (int h = 0; h < NH; h++)
            s[h][j] = dot_f32_avx2(q[h], k + (size_t)rows[j] * stride, hd) * scale;
}

__attribute__((target("avx2,fma"))) static void scores_avx2(const float *const *q, int nh, const float *k,
                                                        int stride, const int32_t *rows, int n_keys, int hd,
                                                        float scale, float *const *s)
{
#define SCORES(NH) scores4_avx2(q, NH, k, stride, rows, n_keys, hd, scale, s)
    NH_SWITCH(SCORES)
#undef SCORES
}

/* exp_f32 on a vector, the same operations lane for lane; P is the intrinsics prefix
   (_mm256 / _mm512), T the float vector type, CAST the integer-to-float bit cast. One
   body for both widths, so the AVX2 and AVX-512 versions cannot drift apart. */
#define EXP_VEC(P, T, CAST, x_in)                                                                          \
    do {                                                                                                   \
        const T magic = P##_set1_ps(EXP_MAGIC);                                                            \
        const T xc = P##_max_ps(x_in, P##_set1_ps(EXP_LO)); /* the scalar clamp (x is never NaN) */        \
        const T nf = P##_sub_ps(P##_add_ps(P##_mul_ps(xc, P##_set1_ps(1.44269504088896341f)), magic), magic); \
        T r = P##_sub_ps(xc, P##_mul_ps(nf, P##_set1_ps(0.693359375f)));                                    \
        r = P##_sub_ps(r, P##_mul_ps(nf, P##_set1_ps(-2.12194440e-4f)));                                   \
        T y = P##_set1_ps(1.9875691500e-4f);                                                               \
        y = P##_add_ps(P##_mul_ps(y, r), P##_set1_ps(1.3981999507e-3f));                                   \
        y = P##_add_ps(P##_mul_ps(y, r), P##_set1_ps(8.3334519073e-3f));                                   \
        y = P##_add_ps(P##_mul_ps(y, r), P##_set1_ps(4.1665795894e-2f));                                   \
        y = P##_add_ps(P##_mul_ps(y, r), P##_set1_ps(1.6666665459e-1f));                                   \
        y = P##_add_ps(P##_mul_ps(y, r), P##_set1_ps(5.0000001201e-1f));                                   \
        y = P##_add_ps(P##_add_ps(P##_mul_ps(y, P##_mul_ps(r, r)), r), P##_set1_ps(1.0f));                 \
        return P##_mul_ps(y, CAST(P##_slli_epi32(P##_add_epi32(P##_cvtps_epi32(nf), P##_set1_epi32(127)), 23))); \
    } while (0)

__attribute__((target("avx2"))) static inline __m256 exp8_avx2(__m256 x) { EXP_VEC(_mm256, __m256, _mm256_castsi256_ps, x); }

__attribute__((target("avx2"))) static void exp_avx2(float *s, int n, float mx)
{
    const __m256 vmx = _mm256_set1_ps(mx);
    int j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(s + j, exp8_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), vmx)));
    for (; j < n; j++)
        s[j] = exp_f32(s[j] - mx);
}

/* The weighted value sum for NH heads at once, on vectors of W floats (prefix P,
   type T): columns in blocks of 4W (4 x NH accumulators, NH broadcast weights, one
   value vector: 16 registers), then W, then single floats. Per element the sum over
   keys runs in the same order from 0.0f, one FMA per key, as the scalar path, so
   every width gives the same bits. One body for AVX2 (W = 8) and AVX-512 (W = 16). */
#define WSUM_HEADS(P, T, W)                                                                               \
    do {                                                                                                  \
        int d0 = 0;                                                                                       \
        for (; d0 + 4 * (W) <= hd; d0 += 4 * (W)) {                                                       \
            T o[ATTN_HEADS][4];                                                                           \
            for (int h = 0; h < NH; h++)                                                                  \
                for (int r = 0; r < 4; r++)                                                               \
                    o[h][r] = P##_setzero_ps();                                                           \
            for (int j = 0; j < n_keys; j++) {                                                            \
                const float *vr = v + (size_t)rows[j] * stride + d0;                                      \
                T pp[ATTN_HEADS];                                                                         \
                for (int h = 0; h < NH; h++)                                                              \
                    pp[h] = P##_set1_ps(p[h][j]);                                                         \
                for (int r = 0; r < 4; r++) {                                                             \
                    const T vv = P##_loadu_ps(vr + (W) * r);                                              \
                    for (int h = 0; h < NH; h++)                                                          \
                        o[h][r] = P##_fmadd_ps(pp[h], vv, o[h][r]);                                       \
                }                                                                                         \
            }                                                                                             \
            for (int h = 0; h < NH; h++)                                                                  \
                for (int r = 0; r < 4; r++)                                                               \
                    P##_storeu_ps(out[h] + d0 + (W) * r, o[h][r]);                                        \
        }                                                                                                 \
        for (; d0 + (W) <= hd; d0 += (W))                                                                 \
            for (int h = 0; h < NH; h++) {                                                                \
                T o = P##_setzero_ps();                                                                   \
                for (int j = 0; j < n_keys; j++)                                                          \
                    o = P##_fmadd_ps(P##_set1_ps(p[h][j]), P##_loadu_ps(v + (size_t)rows[j] * stride + d0), o); \
                P##_storeu_ps(out[h] + d0, o);                                                            \
            }                                                                                             \
        for (; d0 < hd; d0++)                                                                             \
            for (int h = 0; h < NH; h++) {                                                                \
                float o = 0.0f;                                                                           \
                for (int j = 0; j < n_keys; j++)                                                          \
                    o = fmaf(p[h][j], v[(size_t)rows[j] * stride + d0], o);                               \
                out[h][d0] = o;                                                                           \
            }                                                                                             \
    } while (0)


__attribute__((target("avx2,fma"), always_inline)) static inline void
wsum_heads_avx2(const float *v, int stride, const int32_t *rows, const float *const *p, const int NH, int n_keys,
                int hd, float *const *out)
{
    WSUM_HEADS(_mm256, __m256, 8);
}

__attribute__((target("avx2,fma"))) static void wsum_avx2(const float *v, int stride, const int32_t *rows,
                                                      const float *const *p, int nh, int n_keys, int hd,
                                                      float *const *out)
{
#define WSUM(NH) wsum_heads_avx2(v, stride, rows, p, NH, n_keys, hd, out)
    NH_SWITCH(WSUM)
#undef WSUM
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
    bool avx2;
} norm_job;

/* Sum of squares of a row: float squares, accumulated in double in 8 fixed lanes
   (lane l takes elements k = l mod 8, in order), then ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)),
   then the tail in order. One sequential double sum was a 4-cycle dependency per
   element (2300 cycles for a 576-wide row); the lanes cut that 8-fold. The AVX2
   version performs the same operations lane for lane. */
static double sumsq_scalar(const float *x, int n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += (double)(x[k + l] * x[k + l]);
    double s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; k < n; k++)
        s += (double)(x[k] * x[k]);
    return s;
}

#ifdef ARB_HAVE_AVX2_PATH
__attribute__((target("avx2"))) static double sumsq_avx2(const float *x, int n)
{
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd(); /* lanes 0-3, 4-7 */
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m256 v = _mm256_loadu_ps(x + k), sq = _mm256_mul_ps(v, v);
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    const __m256d m = _mm256_add_pd(lo, hi); /* (l0+l4, l1+l5, l2+l6, l3+l7) */
    double a[4];
    _mm256_storeu_pd(a, m);
    double s = (a[0] + a[1]) + (a[2] + a[3]);
    for (; k < n; k++)
        s += (double)(x[k] * x[k]);
    return s;
}
#endif

/* Rows t = ith, ith + nth, ...: a row is always normalized whole by one thread. */
static void rmsnorm_row(const norm_job *j, int t)
{
    const float *xr = j->x + (size_t)t * j->dim;
    float *o = j->out + (size_t)t * j->dim;
#ifdef ARB_HAVE_AVX2_PATH
    const double sum = j->avx2 ? sumsq_avx2(xr, j->dim) : sumsq_scalar(xr, j->dim);
#else
    const double sum = sumsq_scalar(xr, j->dim);
#endif
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
    norm_job j = {.x = x, .g = g, .n = n, .dim = dim, .eps = eps, .out = out, .avx2 = c->avx2};
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
    norm_job j = {.x = x, .g = g, .n = n, .dim = dim, .eps = eps, .out = xb, .avx2 = c->avx2};
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
   combining tree of dot_f32, then the tail in order: a function of the scores alone,
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

#ifdef ARB_HAVE_AVX2_PATH
static void exp_avx512(float *s, int n, float mx); /* with SwiGLU's AVX-512 code below */
static void wsum_avx512(const float *v, int stride, const int32_t *rows, const float *const *p, int nh, int n_keys,
                        int hd, float *const *out);
#endif

typedef struct attn_split {
    int per, n_task; /* heads per task, tasks */
} attn_split;

typedef struct attn_job {
    const arb_attn_args *a;
    arb_tp_phase *rope; /* NULL, or the queries' and new keys' RoPE, done first */
    attn_split split;
    scores_fn scores;
    exp_fn exp;
    wsum_fn wsum;
} attn_job;

/* Tasks are (node, head group) pairs: a group is the query heads of one KV head (up
   to ATTN_HEADS at a time), or a single head when there are too few groups to keep
   the threads busy (decode). Piece c of nc takes a contiguous range of tasks with
   scratch slot c; a thread rebuilds the key-row list only when its next task is for
   another node. Results do not depend on grouping or on the pieces. */
static attn_split attn_split_of(const arb_attn_args *a, int nth)
{
    const int group = a->n_head / a->n_head_kv;
    const int per = a->n * a->n_head_kv >= 4 * nth ? group : 1; /* >= 4 groups per thread */
    return (attn_split){per, a->n * (a->n_head / per)};
}

static void attn_task(void *ud, int c, int nc)
{
    const attn_job *job = ud;
    const arb_attn_args *a = job->a;
    const int hd = a->head_dim, group = a->n_head / a->n_head_kv, len = a->n_prefix + a->n;
    float *scratch = a->scratch + (size_t)c * a->scratch_stride;
    int32_t *rows = (int32_t *)(scratch + (size_t)ATTN_HEADS * len);
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
        for (int g0 = 0; g0 < per; g0 += ATTN_HEADS) {
            const int nh = per - g0 < ATTN_HEADS ? per - g0 : ATTN_HEADS;
            const float *q[ATTN_HEADS];
            float *sc[ATTN_HEADS], *out[ATTN_HEADS];
            for (int x = 0; x < nh; x++) {
                const size_t qo = ((size_t)i * a->n_head + (size_t)(h0 + g0 + x)) * hd;
                q[x] = a->q + qo;
                out[x] = a->out + qo;
                sc[x] = scratch + (size_t)x * len;
            }
            job->scores(q, nh, a->k + (size_t)kvh * hd, a->kv_stride, rows, n_keys, hd, a->scale, sc);
            float inv[ATTN_HEADS];
            for (int x = 0; x < nh; x++) {
                job->exp(sc[x], n_keys, max_f32(sc[x], n_keys));
                inv[x] = 1.0f / sum_f32(sc[x], n_keys);
            }
            job->wsum(a->v + (size_t)kvh * hd, a->kv_stride, rows, (const float *const *)sc, nh, n_keys, hd, out);
            for (int x = 0; x < nh; x++)
                for (int d = 0; d < hd; d++)
                    out[x][d] *= inv[x];
        }
    }
}

/* The attention run, with an optional first phase (RoPE). */
static void attn_run(const cpu_ctx *c, const arb_attn_args *a, arb_tp_phase *rope)
{
    attn_job job = {.a = a, .rope = rope, .scores = scores_scalar, .exp = exp_scalar, .wsum = wsum_scalar};
#ifdef ARB_HAVE_AVX2_PATH
    if (c->avx2) {
        job.scores = scores_avx2;
        job.exp = c->avx512 ? exp_avx512 : exp_avx2;
        job.wsum = c->avx512 ? wsum_avx512 : wsum_avx2;
    }
#endif
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

/* SiLU(g) * u with exp_f32 on -|g| (never overflows): g / (1 + e) for g >= 0, g e / (1 + e)
   below. Elementwise, the same operations in the scalar and AVX2 versions, so neither
   the batch, the ISA nor the thread split changes a bit. */
static void swiglu_scalar(float *g, const float *u, size_t i0, size_t i1)
{
    for (size_t i = i0; i < i1; i++) {
        const float x = g[i], e = exp_f32(x < 0 ? x : -x);
        g[i] = ((x >= 0 ? x : x * e) / (1.0f + e)) * u[i];
    }
}

#ifdef ARB_HAVE_AVX2_PATH
/* SwiGLU on vectors of W floats (prefix P, type T, exp EXPV): the scalar code's
   operations lane for lane, with -|x| as the scalar x < 0 ? x : -x (minps returns -x
   for +-0) and SELECT_GE(x, a) = x >= 0 ? x : a. One body for AVX2 and AVX-512;
   the leftover elements go to TAIL. */
#define SWIGLU_VEC(P, T, W, EXPV, SELECT_GE, TAIL)                                                       \
    do {                                                                                                  \
        size_t i = i0;                                                                                    \
        for (; i + (W) <= i1; i += (W)) {                                                                 \
            const T x = P##_loadu_ps(g + i);                                                              \
            const T e = EXPV(P##_min_ps(x, P##_sub_ps(P##_setzero_ps(), x)));                             \
            const T r = P##_div_ps(SELECT_GE(x, P##_mul_ps(x, e)), P##_add_ps(P##_set1_ps(1.0f), e));     \
            P##_storeu_ps(g + i, P##_mul_ps(r, P##_loadu_ps(u + i)));                                     \
        }                                                                                                 \
        TAIL(g, u, i, i1);                                                                                \
    } while (0)

#define GE_SELECT8(x, a) _mm256_blendv_ps(a, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ))
#define GE_SELECT16(x, a) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), a, x)

__attribute__((target("avx2"))) static void swiglu_avx2(float *g, const float *u, size_t i0, size_t i1)
{
    SWIGLU_VEC(_mm256, __m256, 8, exp8_avx2, GE_SELECT8, swiglu_scalar);
}

/* exp8_avx2 on 16 lanes: the same EXP_VEC body. */
__attribute__((target("avx2,avx512f"))) static inline __m512 exp16_avx512(__m512 x)
{
    EXP_VEC(_mm512, __m512, _mm512_castsi512_ps, x);
}

/* exp_avx2 on 16 lanes (the same bits). */
__attribute__((target("avx2,avx512f"))) static void exp_avx512(float *s, int n, float mx)
{
    const __m512 vmx = _mm512_set1_ps(mx);
    int j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(s + j, exp16_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + j), vmx)));
    exp_avx2(s + j, n - j, mx);
}

/* The weighted value sum on 16-float vectors: the same WSUM_HEADS body, so the same bits
   with half the instructions. */
__attribute__((target("avx2,fma,avx512f"), always_inline)) static inline void
wsum_heads_avx512(const float *v, int stride, const int32_t *rows, const float *const *p, const int NH,
                  int n_keys, int hd, float *const *out)
{
    WSUM_HEADS(_mm512, __m512, 16);
}

__attribute__((target("avx2,fma,avx512f"))) static void wsum_avx512(const float *v, int stride, const int32_t *rows,
                                                                const float *const *p, int nh, int n_keys, int hd,
                                                                float *const *out)
{
#define WSUM(NH) wsum_heads_avx512(v, stride, rows, p, NH, n_keys, hd, out)
    NH_SWITCH(WSUM)
#undef WSUM
}

/* swiglu_avx2 on 16 lanes (half the instructions; the same bits). */
__attribute__((target("avx2,avx512f"))) static void swiglu_avx512(float *g, const float *u, size_t i0, size_t i1)
{
    SWIGLU_VEC(_mm512, __m512, 16, exp16_avx512, GE_SELECT16, swiglu_avx2);
}
#endif

typedef struct ew_job {
    const cpu_ctx *c;
    float *g;
    const float *u;
    size_t n, dim; /* elements; per row (the fused form) */
} ew_job;

static void swiglu_range(const ew_job *j, size_t i0, size_t i1)
{
#ifdef ARB_HAVE_AVX2_PATH
    if (j->c->avx512) {
        swiglu_avx512(j->g, j->u, i0, i1);
        return;
    }
    if (j->c->avx2) {
        swiglu_avx2(j->g, j->u, i0, i1);
        return;
    }
#endif
    swiglu_scalar(j->g, j->u, i0, i1);
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
    .norm_matmul_multi = cpu_norm_matmul_multi,
    .swiglu_matmul_add = cpu_swiglu_matmul_add,
    .matmul_add = cpu_matmul_add,
    .add_bias = cpu_add_bias,
    .add = cpu_add,
    .n_threads = cpu_n_threads,
    .parallel_for = cpu_parallel_for,
};

int arb_backend_cpu_init(int n_threads, bool attn_scalar, arb_backend *be, arb_err *err)
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
    c->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !attn_scalar;
    c->avx512 = c->avx2 && __builtin_cpu_supports("avx512f");
#endif
    be->iface = &cpu_iface;
    be->ctx = c;
    return ARB_OK;
}
