/* vec_int.h — the CPU backend's vector kernels (attention inner loops, the softmax max,
 * exp and sum, RMSNorm's sum of squares, SwiGLU), one table per ISA family, the way matmul_int.h
 * does it for the quantized matmul. Not part of the engine API.
 *
 * Every family performs the same float operations in the same order, lane for lane,
 * as the scalar one (multiplies and adds never fused unless the scalar code fuses them
 * with fmaf), so the ISA never changes a bit: backend_cpu.c picks a family at init for
 * speed alone, and tests/test_vec.c compares every family the CPU has with the scalar
 * one bitwise. The scalar reference formulas live here as inline functions because the
 * SIMD families finish their tails with them.
 *
 *     const vec_impl *k = arb_vec_select("avx2");      // at backend init
 *     k->scores(q, nh, K, stride, rows, n_keys, hd, scale, s);
 */
#ifndef ARB_VEC_INT_H
#define ARB_VEC_INT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Query heads per call: up to this many heads of one KV head (GQA) share each key and
   value row load. 3 fits the AVX2 loops' 16 registers (4 x 3 accumulators, 3 query
   vectors, one key vector). Per (key, head) the arithmetic is that of one head alone. */
#define ARB_VEC_HEADS 3
/* Query rows per scores / wsum call: the heads of one KV head for one tree node, or for
   two nodes that read the same key list (backend_cpu.c pairs the nodes of a block over
   their shared prefix), so that each key and value row is loaded once for both. Rows are
   independent: a row's results are those of a call with that row alone. */
#define ARB_VEC_QROWS (2 * ARB_VEC_HEADS)

/* The two attention inner loops, per (node, head group), over key rows rows[0..n_keys):
     scores: s[h][j] = dot_f32(q[h], K[rows[j]]) * scale
     wsum:   out[h][d] = sum_j p[h][j] * V[rows[j]][d]   (sequential fmaf in j from 0.0f)
   k and v point at this KV head's first row; rows are in units of `stride` floats;
   1 <= nh <= ARB_VEC_QROWS. wsum with acc != 0 continues from the sums already in out
   instead of 0.0f: a key list cut into consecutive pieces, each a call with acc set for
   every piece but the first, gives the bits of one call over the whole list (a float
   stored to out and loaded back is exact). This is what lets the backend stream a
   block of shared prefix keys once for several tree nodes (backend_cpu.c). */
typedef void (*vec_scores_fn)(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                              int n_keys, int hd, float scale, float *const *s);
typedef void (*vec_wsum_fn)(const float *v, int stride, const int32_t *rows, const float *const *p, int nh,
                            int n_keys, int hd, float *const *out, int acc);

typedef struct vec_impl {
    const char *name;
    vec_scores_fn scores;
    vec_wsum_fn wsum;
    void (*exp)(float *s, int n, float mx);                      /* s[j] = exp_f32(s[j] - mx) */
    float (*max)(const float *s, int n);                         /* arb_max_ref's order */
    float (*sum)(const float *s, int n);                         /* arb_sum_ref's order */
    double (*sumsq)(const float *x, int n);                      /* arb_sumsq_ref's order */
    void (*swiglu)(float *g, const float *u, size_t i0, size_t i1); /* g = silu(g) * u */
    void (*geglu)(float *g, const float *u, size_t i0, size_t i1);  /* g = gelu_tanh(g) * u (Gemma) */
} vec_impl;

extern const vec_impl arb_vec_scalar;
extern const vec_impl arb_vec_avx2;   /* AVX2 + FMA */
extern const vec_impl arb_vec_avx512; /* AVX-512F (its scores and sumsq are AVX2's) */

/* The AVX2 kernels the AVX-512 family shares (x86-64 builds only). */
void arb_vec_scores_avx2(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                         int n_keys, int hd, float scale, float *const *s);
double arb_vec_sumsq_avx2(const float *x, int n);
float arb_vec_max_avx2(const float *s, int n);
float arb_vec_sum_avx2(const float *s, int n);

/* The family for a matmul family name (matmul.h: "scalar", "avx2", "avx512vnni"; NULL =
   auto): the scalar one for "scalar", the AVX2 one for "avx2" where the CPU has it, else
   the fastest this CPU runs. Following the matmul family lets `isa = "avx2"` time an
   AVX2-only machine on an AVX-512 one; the bits are the same whichever is picked. */
const vec_impl *arb_vec_select(const char *family);
/* Whether this CPU runs family k. */
int arb_vec_supported(const vec_impl *k);

/* Software prefetch of the key and value rows: the cached K and V of a layer (786 KB at
   512 keys on SmolLM2) come from DRAM on every eval, since the weights stream through
   the caches in between. (One KV head's rows are contiguous, kv.h; in the earlier
   row-major cache a head's slice was 4 lines of every 12, a stride the hardware
   prefetchers followed poorly.) In a list longer than ARB_VEC_PREFETCH_MIN keys (the
   backend's single pass for one node, its large blocks for a few nodes) the kernels
   request row j + ARB_VEC_PREFETCH while they use row j (about 400 cycles of memory
   latency ahead at ~15 cycles a key); shorter lists are the backend's L1 key blocks,
   which it prefetches a block ahead itself (backend_cpu.c): there the kernels' own
   requests would only hit cache and cost issue slots (0.54 against 0.70 ns per (head,
   key) in AVX-512 wsum). Prefetches change no result. */
#define ARB_VEC_PREFETCH 24
#define ARB_VEC_PREFETCH_MIN 64
static inline void arb_vec_prefetch_row(const float *row, int n)
{
    for (int i = 0; i < n; i += 16) /* 16 floats = one 64-byte line */
        __builtin_prefetch(row + i);
}

/* The key block of a scores kernel: rows j..j+w-1 of the key list (k + rows[.] * stride)
   into kr, and when pf the rows ARB_VEC_PREFETCH further on prefetched (hd floats each). */
static inline void arb_vec_key_block(const float *k, int stride, const int32_t *rows, int j, int w, int n_keys,
                                     int hd, int pf, const float **kr)
{
    for (int c = 0; c < w; c++)
        kr[c] = k + (size_t)rows[j + c] * stride;
    for (int c = j + ARB_VEC_PREFETCH; pf && c < j + ARB_VEC_PREFETCH + w && c < n_keys; c++)
        arb_vec_prefetch_row(k + (size_t)rows[c] * stride, hd);
}

/* Fixed-lane dot product: 8 accumulator lanes (lane l sums elements i = l mod 8, each
   step one fmaf, a single rounding, the same as vfmadd), combined by the fixed tree
   ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)), then a sequential tail. The association order
   is a function of n only (arbor compiles in ISO C mode: no implicit contraction). */
static inline float arb_dot_f32(const float *a, const float *b, int n)
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

/* The softmax's max and sum over the scores. A single running max or sum is a chain
   of 4-cycle dependencies per key; 8 independent lanes are not. Both use 8 fixed lanes
   (lane l takes j = l mod 8, in order), then the tail in order: the max the tail into
   lane 0 and lanes 1..7 into lane 0 in turn (so even the sign of a zero maximum is a
   function of the scores alone), the sum arb_dot_f32's combining tree then the tail.
   The vector versions (one 8-lane register) do exactly this. */
static inline float arb_max_ref(const float *s, int n)
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

static inline float arb_sum_ref(const float *s, int n)
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

/* exp for the softmax and SiLU, Cephes-style (range reduction by ln 2, degree-5
   polynomial, ~1 ulp), written with plain multiplies and adds so that the vector
   versions are bit-identical; round-to-nearest-even via the 1.5 * 2^23 trick. Only
   called with x <= 0. The constants are shared with the vector bodies. */
#define ARB_EXP_LO (-87.3f)
#define ARB_EXP_MAGIC 12582912.0f
#define ARB_EXP_LOG2E 1.44269504088896341f
#define ARB_EXP_LN2_HI 0.693359375f
#define ARB_EXP_LN2_LO (-2.12194440e-4f)
#define ARB_EXP_P0 1.9875691500e-4f
#define ARB_EXP_P1 1.3981999507e-3f
#define ARB_EXP_P2 8.3334519073e-3f
#define ARB_EXP_P3 4.1665795894e-2f
#define ARB_EXP_P4 1.6666665459e-1f
#define ARB_EXP_P5 5.0000001201e-1f
static inline float arb_exp_f32(float x)
{
    x = x < ARB_EXP_LO ? ARB_EXP_LO : x;
    const float n = (x * ARB_EXP_LOG2E + ARB_EXP_MAGIC) - ARB_EXP_MAGIC;
    float r = x - n * ARB_EXP_LN2_HI;
    r = r - n * ARB_EXP_LN2_LO;
    float y = ARB_EXP_P0;
    y = y * r + ARB_EXP_P1;
    y = y * r + ARB_EXP_P2;
    y = y * r + ARB_EXP_P3;
    y = y * r + ARB_EXP_P4;
    y = y * r + ARB_EXP_P5;
    y = (y * (r * r) + r) + 1.0f;
    union { uint32_t u; float f; } e = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return y * e.f;
}

/* SiLU(g) * u with the exp on -|g| (never overflows): g / (1 + e) for g >= 0, g e / (1 + e)
   below. */
static inline float arb_swiglu_f32(float x, float u)
{
    const float e = arb_exp_f32(x < 0 ? x : -x);
    return ((x >= 0 ? x : x * e) / (1.0f + e)) * u;
}

/* GELU, tanh form (Gemma's gelu_pytorch_tanh), times u: 0.5 x (1 + tanh(y)) with
   y = sqrt(2/pi) (x + 0.044715 x^3) is x sigmoid(2y) = x / (1 + exp(-z)), z = 2y =
   x (C1 + C2 x^2). z has the sign of x, so as in SwiGLU the exp is taken of -|z| (never
   overflows): x / (1 + e) for x >= 0, x e / (1 + e) below. Exact math, no fp16 table
   (ggml's CPU GELU rounds its input and output to fp16; docs/engine.md). */
#define ARB_GELU_C1 1.5957691216057308f   /* 2 sqrt(2/pi) */
#define ARB_GELU_C2 0.0713548162726f      /* 2 sqrt(2/pi) 0.044715 */
static inline float arb_geglu_f32(float x, float u)
{
    const float z = x * (ARB_GELU_C1 + ARB_GELU_C2 * (x * x));
    const float e = arb_exp_f32(z < 0 ? z : -z);
    return ((x >= 0 ? x : x * e) / (1.0f + e)) * u;
}

/* Sum of squares of a row: float squares accumulated in double in 8 fixed lanes (lane
   l takes elements k = l mod 8, in order), then ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)),
   then the tail in order. One sequential double sum was a 4-cycle dependency per
   element; the lanes cut that 8-fold. */
static inline double arb_sumsq_ref(const float *x, int n)
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

#endif
