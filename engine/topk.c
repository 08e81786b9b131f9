/* topk.c — top-K + softmax of a logits row (declared in engine.h, "Top-K of a logits row"):
   the one implementation decode, the drafters and arb_eval_ex's top-K output share. */
#include "engine.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define TOPK_X86 1
#include <immintrin.h>
#endif

/* ---- top-K + softmax of one logits row, in one pass ----
   The row is read once, in chunks of 128 values (prefetched 4 KB ahead; a chunk is re-read
   from L1 only). Per chunk: its maximum, as a vector; when some value beats the current K-th
   best (rare once the list is full: ~12-16 chunks of 384 on real rows) the values above it
   are inserted one by one in id order (the vector paths find them by a compare per vector),
   so equal values keep the lower id exactly as a sequential scan would; online softmax: a
   chunk that raises the running maximum M first rescales the partial sums by 2^(u_old - u_new)
   (u = M log2 e); a chunk whose maximum is more than 24 below M is skipped (each term < e^-24
   of the max term, < 2e-6 relative over V = 49152); else e^(x - M) / 2 = 2^w, w = x log2e - u - 1,
   of each value at chunk offset o is added to accumulator lane o mod 64 (offset o, then o + 64).
   Exactness across CPUs: every path (AVX-512F+DQ: 4 x 16 lanes, AVX2+FMA: 8 x 8, baseline: plain
   C with fmaf) runs the same IEEE operations per lane in the same order, fused where written
   fma and nowhere else (no a*b+c is left for a compiler to contract), then the same fixed tree
   over the 64 lanes, so ids and scores are bit-identical (tests/test_tr.c checks). The sum's
   2^w (the hot loop: ~10 vector operations per 16 values, the cost of the whole top-K on rows in
   cache): n = floor(w), f = w - n in [0, 1), a degree-4 polynomial with p(0) = 1 (relative error
   3.0e-6), times 2^n; AVX-512 does it as vreduceps (f) and vscalefps (p 2^floor(w)), no separate
   n. The -1 in w keeps f exact: w <= -1 + ulp(u_M)/2 for every value of the row (x <= M), and
   w - floor(w) is exact for w <= -1/2, so the vector reduction (rounding down) and floorf agree
   to the bit (for |M| < 5.8e6, i.e. |u_M| < 2^23: any real logits row).
   The K numerators and the rescale factors: exp2 with round-to-nearest n, f in [-1/2, 1/2],
   degree 5 (relative error 1.6e-7). The rounding of u = x log2e - u_M shifts every term by the
   same factor, which the normalisation cancels; scores are within ~1e-5 relative of the exact
   softmax (on 240 real SmolLM2 rows, against a double-precision softmax: max 7.0e-6, mean
   3.0e-6; 4.3e-6 / 2.0e-6 with the degree-5 sum before 2026-11-26). They only weight branch
   widths and the 0.01 pruning (stored in 1/65535 units); ids and order are exact. */
#define TOPK_CHUNK 128
#define TOPK_LANES 64
#define TOPK_PF 1024 /* prefetch distance, floats */
#define TOPK_SKIP 24.0f
#define LOG2E 1.44269504088896341f
#define RND 12582912.0f /* 1.5 * 2^23: x + RND rounds x to an integer, held in the low bits */
/* 2^f on [0, 1), p(0) = 1: minimax relative error 3.0e-6 (fitted, then evaluated in float) */
static const float exp2_s[4] = {1.3426668011e-02f, 5.2242498845e-02f, 2.4128019810e-01f, 6.9304484129e-01f};
static const float exp2_c[5] = {1.3264726149e-03f, 9.6715129912e-03f, 5.5507335812e-02f, 2.4022242427e-01f,
                                6.9314700365e-01f};

typedef struct topk_state {
    int K, cnt;               /* list length, entries so far */
    float thr;                /* K-th best value once full, else -inf */
    float M, uM;              /* running maximum (-inf before the first finite chunk), fl(M log2e) */
    float top[ARB_TOPK_K_MAX]; /* values of ids[], best first */
    int32_t *ids;
} topk_state;

/* values v[0..n) with ids i0.. into the list; once full, only values > thr can enter */
static void topk_insert(topk_state *s, const float *v, int i0, int n)
{
    for (int i = 0; i < n; i++) {
        float x = v[i];
        if (s->cnt == s->K && !(x > s->thr))
            continue;
        int j = s->cnt < s->K ? s->cnt++ : s->K - 1;
        while (j > 0 && s->top[j - 1] < x) { /* strict: earlier (lower id) equals stay ahead */
            s->top[j] = s->top[j - 1];
            s->ids[j] = s->ids[j - 1];
            j--;
        }
        s->top[j] = x;
        s->ids[j] = i0 + i;
        if (s->cnt == s->K)
            s->thr = s->top[s->K - 1];
    }
}

/* Value j (< n) of a full list's chunk, found above thr by a vector compare: inserted as
   topk_insert would, in id order (thr only rises, so a value the compare left out stays out). */
static inline void topk_insert_one(topk_state *s, const float *v, int i0, int n, int j)
{
    if (j < n)
        topk_insert(s, v + j, i0 + j, 1);
}

/* acc + 2^u for u <= 0 (u below -126, or NaN, counts as -126: never below 2^-127) */
static inline float exp2_acc1(float u, float acc)
{
    u = u > -126.0f ? u : -126.0f;
    float t = u + RND, n = t - RND, f = u - n, p = exp2_c[0];
    for (int k = 1; k < 5; k++)
        p = fmaf(p, f, exp2_c[k]);
    p = fmaf(p, f, 1.0f);
    uint32_t b, e;
    memcpy(&b, &t, sizeof b);
    e = (b + 127u) << 23; /* the low bits of t hold n: 2^n */
    float en;
    memcpy(&en, &e, sizeof en);
    return acc + p * en; /* not fused: AVX-512 scales with vscalefps, then adds */
}

/* acc + 2^w for w <= -1/2 (w below -126, or NaN, counts as -126): the sum's term */
static inline float exp2_sum1(float w, float acc)
{
    w = w > -126.0f ? w : -126.0f;
    float n = floorf(w), f = w - n, p = exp2_s[0]; /* f exact (w <= -1/2) */
    for (int k = 1; k < 4; k++)
        p = fmaf(p, f, exp2_s[k]);
    p = fmaf(p, f, 1.0f);
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23;
    float en;
    memcpy(&en, &e, sizeof en);
    return acc + p * en; /* not fused: AVX-512 scales with vscalefps, then adds */
}

/* a chunk that raises the maximum to m2: the factor that rescales the partial sums */
static float topk_new_max(topk_state *s, float m2)
{
    float u2 = m2 * LOG2E, f = s->M == -INFINITY ? 0.0f : exp2_acc1(s->uM - u2, 0.0f);
    s->M = m2;
    s->uM = u2;
    return f;
}

static void topk_finish(topk_state *s, int V, float *lane, float *scores)
{
    for (int w = TOPK_LANES / 2; w >= 1; w /= 2) /* fixed pairwise tree over the lanes */
        for (int j = 0; j < w; j++)
            lane[j] += lane[j + w];
    for (int j = 0; j < s->cnt; j++) /* a row of -inf only: uniform, as any all-equal row */
        scores[j] = s->M == -INFINITY ? 1.0f / (float)V
                                      : exp2_acc1(fmaf(s->top[j], LOG2E, -s->uM - 1.0f), 0.0f) / lane[0];
    for (int j = s->cnt; j < s->K; j++) { /* V < K: pad (never happens for real vocabularies) */
        s->ids[j] = 0;
        scores[j] = 0.0f;
    }
}

/* The last V % 128 values, padded with -inf (2^-126 per pad value, never listed). */
static const float *topk_tail(const float *row, int b0, int V, float *pad)
{
    for (int i = 0; i < TOPK_CHUNK; i++)
        pad[i] = b0 + i < V ? row[b0 + i] : -INFINITY;
    return pad;
}

/* TOPK_PF floats past x (integer arithmetic: the address may lie past the row; a prefetch
   never faults) */
#define PF_AHEAD(x, off) __builtin_prefetch((const void *)((uintptr_t)(x) + sizeof(float) * (TOPK_PF + (off))))

/* Each path: the chunks of the row into s and the 64 partial sums into lane[]. */
static void chunk_base(topk_state *s, float *acc, const float *x, int i0, int n)
{
    for (int o = 0; o < TOPK_CHUNK; o += 16)
        PF_AHEAD(x, o);
    float mx = x[0];
    for (int i = 1; i < TOPK_CHUNK; i++)
        mx = x[i] > mx ? x[i] : mx;
    if (s->cnt < s->K || mx > s->thr)
        topk_insert(s, x, i0, n);
    if (mx > s->M) {
        float f = topk_new_max(s, mx);
        for (int l = 0; l < TOPK_LANES; l++)
            acc[l] *= f;
    }
    if (s->M == -INFINITY || !(mx >= s->M - TOPK_SKIP))
        return;
    for (int o = 0; o < TOPK_CHUNK; o++)
        acc[o % TOPK_LANES] = exp2_sum1(fmaf(x[o], LOG2E, -s->uM - 1.0f), acc[o % TOPK_LANES]);
}

static void topk_base(topk_state *s, const float *row, int V, float *lane)
{
    float pad[TOPK_CHUNK];
    memset(lane, 0, TOPK_LANES * sizeof *lane);
    int b0 = 0;
    for (; b0 + TOPK_CHUNK <= V; b0 += TOPK_CHUNK)
        chunk_base(s, lane, row + b0, b0, TOPK_CHUNK);
    if (b0 < V)
        chunk_base(s, lane, topk_tail(row, b0, V, pad), b0, V - b0);
}

#ifdef TOPK_X86
/* The vector paths: the operations of exp2_sum1 / chunk_base, lane for lane. */
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f,avx512dq")))
#define UNROLL _Pragma("GCC unroll 16")
#define INL static inline __attribute__((always_inline))

AVX2 INL __m256 exp2_sum8(__m256 w, __m256 acc)
{
    w = _mm256_max_ps(w, _mm256_set1_ps(-126.0f)); /* w > -126 ? w : -126 */
    __m256 n = _mm256_floor_ps(w), f = _mm256_sub_ps(w, n), p = _mm256_set1_ps(exp2_s[0]);
    for (int k = 1; k < 4; k++)
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(exp2_s[k]));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_add_ps(acc, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

AVX2 INL void chunk_avx2(topk_state *s, __m256 *acc, const float *x, int i0, int n)
{
    __m256 mx = _mm256_loadu_ps(x);
    UNROLL for (int q = 0; q < TOPK_CHUNK / 8; q++) {
        if (q % 2 == 0)
            PF_AHEAD(x, 8 * q);
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + 8 * q));
    }
    if (s->cnt < s->K)
        topk_insert(s, x, i0, n);
    else if (_mm256_movemask_ps(_mm256_cmp_ps(mx, _mm256_set1_ps(s->thr), _CMP_GT_OQ)))
        for (int q = 0; q < TOPK_CHUNK / 8; q++) /* only the values above the K-th best */
            for (unsigned k = (unsigned)_mm256_movemask_ps(
                     _mm256_cmp_ps(_mm256_loadu_ps(x + 8 * q), _mm256_set1_ps(s->thr), _CMP_GT_OQ));
                 k; k &= k - 1)
                topk_insert_one(s, x, i0, n, 8 * q + __builtin_ctz(k));
    if (_mm256_movemask_ps(_mm256_cmp_ps(mx, _mm256_set1_ps(s->M), _CMP_GT_OQ))) {
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
        __m256 f = _mm256_set1_ps(topk_new_max(s, _mm_cvtss_f32(h)));
        UNROLL for (int q = 0; q < TOPK_LANES / 8; q++)
            acc[q] = _mm256_mul_ps(acc[q], f);
    }
    if (s->M == -INFINITY ||
        !_mm256_movemask_ps(_mm256_cmp_ps(mx, _mm256_set1_ps(s->M - TOPK_SKIP), _CMP_GE_OQ)))
        return;
    __m256 l2e = _mm256_set1_ps(LOG2E), nu = _mm256_set1_ps(-s->uM - 1.0f);
    UNROLL for (int q = 0; q < TOPK_CHUNK / 8; q++)
        acc[q % 8] = exp2_sum8(_mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * q), l2e, nu), acc[q % 8]);
}

/* A row in whole chunks, then the padded tail, into TOPK_LANES / W accumulator vectors
   of W floats (prefix P, type T), stored to lane[] at the end: the row loop of every
   SIMD path. */
#define TOPK_ROW(P, T, W, CHUNK)                                                            \
    do {                                                                                    \
        float pad[TOPK_CHUNK];                                                              \
        T acc[TOPK_LANES / (W)];                                                            \
        UNROLL for (int q = 0; q < TOPK_LANES / (W); q++)                                   \
            acc[q] = P##_setzero_ps();                                                      \
        int b0 = 0;                                                                         \
        for (; b0 + TOPK_CHUNK <= V; b0 += TOPK_CHUNK)                                      \
            CHUNK(s, acc, row + b0, b0, TOPK_CHUNK);                                        \
        if (b0 < V)                                                                         \
            CHUNK(s, acc, topk_tail(row, b0, V, pad), b0, V - b0);                          \
        UNROLL for (int q = 0; q < TOPK_LANES / (W); q++)                                   \
            P##_storeu_ps(lane + (W) * q, acc[q]);                                          \
    } while (0)

AVX2 static void topk_avx2(topk_state *s, const float *row, int V, float *lane)
{
    TOPK_ROW(_mm256, __m256, 8, chunk_avx2);
}

AVX512 INL __m512 exp2_sum16(__m512 w, __m512 acc)
{
    w = _mm512_max_ps(w, _mm512_set1_ps(-126.0f));
    /* f = w - floor(w) in one uop (vreduceps, rounding down; exact here, as floorf's); vscalefps
       multiplies by 2^floor(w) itself, so n is never formed */
    __m512 f = _mm512_reduce_ps(w, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), p = _mm512_set1_ps(exp2_s[0]);
    for (int k = 1; k < 4; k++)
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(exp2_s[k]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_add_ps(acc, _mm512_scalef_ps(p, w)); /* p 2^n, exact (normal), as p * en */
}

AVX512 INL void chunk_avx512(topk_state *s, __m512 *acc, const float *x, int i0, int n)
{
    __m512 v[TOPK_CHUNK / 16];
    UNROLL for (int q = 0; q < TOPK_CHUNK / 16; q++) {
        PF_AHEAD(x, 16 * q);
        v[q] = _mm512_loadu_ps(x + 16 * q);
    }
    __m512 mx = _mm512_max_ps(_mm512_max_ps(_mm512_max_ps(v[0], v[1]), _mm512_max_ps(v[2], v[3])),
                              _mm512_max_ps(_mm512_max_ps(v[4], v[5]), _mm512_max_ps(v[6], v[7])));
    if (s->cnt < s->K)
        topk_insert(s, x, i0, n);
    else if (_mm512_cmp_ps_mask(mx, _mm512_set1_ps(s->thr), _CMP_GT_OQ))
        UNROLL for (int q = 0; q < TOPK_CHUNK / 16; q++) /* only the values above the K-th best */
            for (unsigned k = _mm512_cmp_ps_mask(v[q], _mm512_set1_ps(s->thr), _CMP_GT_OQ); k; k &= k - 1)
                topk_insert_one(s, x, i0, n, 16 * q + __builtin_ctz(k));
    if (_mm512_cmp_ps_mask(mx, _mm512_set1_ps(s->M), _CMP_GT_OQ)) {
        __m512 f = _mm512_set1_ps(topk_new_max(s, _mm512_reduce_max_ps(mx)));
        UNROLL for (int q = 0; q < TOPK_LANES / 16; q++)
            acc[q] = _mm512_mul_ps(acc[q], f);
    }
    if (s->M == -INFINITY || !_mm512_cmp_ps_mask(mx, _mm512_set1_ps(s->M - TOPK_SKIP), _CMP_GE_OQ))
        return;
    __m512 l2e = _mm512_set1_ps(LOG2E), nu = _mm512_set1_ps(-s->uM - 1.0f);
    UNROLL for (int q = 0; q < TOPK_CHUNK / 16; q++)
        acc[q % 4] = exp2_sum16(_mm512_fmadd_ps(v[q], l2e, nu), acc[q % 4]);
}

AVX512 static void topk_avx512(topk_state *s, const float *row, int V, float *lane)
{
    TOPK_ROW(_mm512, __m512, 16, chunk_avx512);
}

/* Argmax: the row maximum (4 independent vector maxima), then the first index holding it. */
AVX2 static int32_t argmax_avx2(const float *row, int V)
{
    __m256 m[4] = {_mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY),
                   _mm256_set1_ps(-INFINITY)};
    int i = 0;
    for (; i + 32 <= V; i += 32)
        UNROLL for (int q = 0; q < 4; q++)
            m[q] = _mm256_max_ps(m[q], _mm256_loadu_ps(row + i + 8 * q));
    __m256 a = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    float mx = _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
    for (int j = i; j < V; j++)
        mx = row[j] > mx ? row[j] : mx;
    __m256 mv = _mm256_set1_ps(mx);
    for (i = 0; i + 8 <= V; i += 8) {
        int k = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(row + i), mv, _CMP_EQ_OQ));
        if (k)
            return i + __builtin_ctz((unsigned)k);
    }
    for (; i < V; i++)
        if (row[i] == mx)
            return i;
    return -1; /* NaN somewhere: the caller falls back to the scalar scan */
}

AVX512 static int32_t argmax_avx512(const float *row, int V)
{
    __m512 m[4] = {_mm512_set1_ps(-INFINITY), _mm512_set1_ps(-INFINITY), _mm512_set1_ps(-INFINITY),
                   _mm512_set1_ps(-INFINITY)};
    int i = 0;
    for (; i + 64 <= V; i += 64) {
        PF_AHEAD(row + i, 0);
        PF_AHEAD(row + i, 32);
        UNROLL for (int q = 0; q < 4; q++)
            m[q] = _mm512_max_ps(m[q], _mm512_loadu_ps(row + i + 16 * q));
    }
    float mx = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
    for (int j = i; j < V; j++)
        mx = row[j] > mx ? row[j] : mx;
    __m512 mv = _mm512_set1_ps(mx);
    for (i = 0; i + 16 <= V; i += 16) {
        __mmask16 k = _mm512_cmp_ps_mask(_mm512_loadu_ps(row + i), mv, _CMP_EQ_OQ);
        if (k)
            return i + __builtin_ctz((unsigned)k);
    }
    for (; i < V; i++)
        if (row[i] == mx)
            return i;
    return -1;
}
#endif

int arb_topk_isa_best(void)
{
#ifdef TOPK_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return ARB_TOPK_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ARB_TOPK_AVX2;
#endif
    return ARB_TOPK_BASE;
}

bool arb_topk_softmax_isa(int isa, const float *row, int V, int K, int32_t *ids, float *scores)
{
    ARB_ASSERT(V >= 1 && K >= 1 && K <= ARB_TOPK_K_MAX);
    if (isa > arb_topk_isa_best())
        return false;
    topk_state s = {.K = K, .thr = -INFINITY, .M = -INFINITY, .ids = ids};
    float lane[TOPK_LANES];
    switch (isa) {
#ifdef TOPK_X86
    case ARB_TOPK_AVX512: topk_avx512(&s, row, V, lane); break;
    case ARB_TOPK_AVX2: topk_avx2(&s, row, V, lane); break;
#endif
    case ARB_TOPK_BASE: topk_base(&s, row, V, lane); break;
    default: return false;
    }
    topk_finish(&s, V, lane, scores);
    return true;
}

void arb_topk_softmax(const float *row, int V, int K, int32_t *ids, float *scores)
{
    arb_topk_softmax_isa(arb_topk_isa_best(), row, V, K, ids, scores);
}

/* The scalar scan: strict '>' keeps the first maximum. */
static int32_t argmax_base(const float *row, int V)
{
    int32_t best = 0;
    for (int i = 1; i < V; i++)
        if (row[i] > row[best])
            best = i;
    return best;
}

int32_t arb_topk_argmax_isa(int isa, const float *row, int V)
{
    ARB_ASSERT(V >= 1);
    if (isa > arb_topk_isa_best())
        return -1;
    int32_t r = -1;
#ifdef TOPK_X86
    if (isa == ARB_TOPK_AVX512)
        r = argmax_avx512(row, V);
    else if (isa == ARB_TOPK_AVX2)
        r = argmax_avx2(row, V);
#endif
    return r >= 0 ? r : argmax_base(row, V);
}

int32_t arb_topk_argmax(const float *row, int V) { return arb_topk_argmax_isa(arb_topk_isa_best(), row, V); }
