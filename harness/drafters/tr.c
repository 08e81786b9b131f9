/* tr.c — adjacency tables, top-K softmax, the TR template and the TR drafter (see tr.h). */
#include "tr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TOPK_X86 1
#include <immintrin.h>
#endif

#define BIGRAM_PROBES 8

struct arb_adj {
    int V, K;
    int fill;               /* non-empty unigram rows */
    int32_t *u_ids;         /* [V*K] */
    uint16_t *u_sc;         /* [V*K] score * 65535 */
    uint8_t *u_cnt;         /* [V] 0 = never written */
    int b_log2;             /* 0: no bigram tier */
    uint64_t *b_key;        /* [cap] packed (prev, cur) + 1; 0 = empty */
    uint32_t *b_stamp;      /* [cap] write stamp */
    int32_t *b_ids;         /* [cap*K] */
    uint16_t *b_sc;         /* [cap*K] */
    uint8_t *b_cnt;         /* [cap] */
    uint32_t stamp;
};

int arb_adj_new(int n_vocab, int K, int bigram_log2, arb_adj **out, arb_err *err)
{
    *out = NULL;
    if (n_vocab < 1 || K < 1 || K > ARB_ADJ_K_MAX || bigram_log2 < 0 || bigram_log2 > 24)
        return ARB_ERR(err, ARB_E_INVAL, "adjacency: vocab %d, K %d (1..%d), bigram_log2 %d (0..24)",
                       n_vocab, K, ARB_ADJ_K_MAX, bigram_log2);
    arb_adj *a = calloc(1, sizeof *a);
    if (!a)
        return ARB_ERR(err, ARB_E_NOMEM, "adjacency: out of memory");
    a->V = n_vocab;
    a->K = K;
    a->b_log2 = bigram_log2;
    size_t vk = (size_t)n_vocab * K, cap = bigram_log2 ? (size_t)1 << bigram_log2 : 0;
    a->u_ids = malloc(vk * sizeof *a->u_ids);
    a->u_sc = malloc(vk * sizeof *a->u_sc);
    a->u_cnt = malloc((size_t)n_vocab);
    int ok = a->u_ids && a->u_sc && a->u_cnt;
    if (cap && ok) {
        a->b_key = malloc(cap * sizeof *a->b_key);
        a->b_stamp = malloc(cap * sizeof *a->b_stamp);
        a->b_ids = malloc(cap * K * sizeof *a->b_ids);
        a->b_sc = malloc(cap * K * sizeof *a->b_sc);
        a->b_cnt = malloc(cap);
        ok = a->b_key && a->b_stamp && a->b_ids && a->b_sc && a->b_cnt;
    }
    if (!ok) {
        arb_adj_free(a);
        return ARB_ERR(err, ARB_E_NOMEM, "adjacency: cannot allocate %d x %d", n_vocab, K);
    }
    arb_adj_clear(a);
    *out = a;
    return ARB_OK;
}

void arb_adj_free(arb_adj *a)
{
    if (!a)
        return;
    free(a->u_ids);
    free(a->u_sc);
    free(a->u_cnt);
    free(a->b_key);
    free(a->b_stamp);
    free(a->b_ids);
    free(a->b_sc);
    free(a->b_cnt);
    free(a);
}

void arb_adj_clear(arb_adj *a)
{
    size_t vk = (size_t)a->V * a->K;
    memset(a->u_ids, 0, vk * sizeof *a->u_ids); /* token 0, as the TR reference's zeros */
    memset(a->u_sc, 0, vk * sizeof *a->u_sc);
    memset(a->u_cnt, 0, (size_t)a->V);
    a->fill = 0;
    if (a->b_log2) {
        size_t cap = (size_t)1 << a->b_log2;
        memset(a->b_key, 0, cap * sizeof *a->b_key);
        memset(a->b_cnt, 0, cap);
    }
    a->stamp = 0;
}

static uint16_t sc16(float s)
{
    if (!(s > 0.0f))
        return 0;
    if (s >= 1.0f)
        return 65535;
    return (uint16_t)lrintf(s * 65535.0f);
}

static uint64_t bigram_key(int32_t prev, int32_t tok)
{
    return (((uint64_t)(uint32_t)prev << 32) | (uint32_t)tok) + 1;
}

static uint32_t bigram_home(const arb_adj *a, uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - a->b_log2));
}

void arb_adj_write(arb_adj *a, int32_t prev, int32_t tok, const int32_t *ids, const float *scores)
{
    if (tok < 0 || tok >= a->V)
        return;
    int K = a->K;
    int32_t *ri = a->u_ids + (size_t)tok * K;
    uint16_t *rs = a->u_sc + (size_t)tok * K;
    for (int j = 0; j < K; j++) {
        ri[j] = ids[j];
        rs[j] = sc16(scores[j]);
    }
    if (!a->u_cnt[tok])
        a->fill++;
    a->u_cnt[tok] = (uint8_t)K;
    if (!a->b_log2 || prev < 0)
        return;
    uint64_t key = bigram_key(prev, tok);
    uint32_t mask = ((uint32_t)1 << a->b_log2) - 1, s = bigram_home(a, key), pick = s;
    for (int p = 0; p < BIGRAM_PROBES; p++, s = (s + 1) & mask) {
        if (a->b_key[s] == key || a->b_key[s] == 0) {
            pick = s;
            break;
        }
        if (a->b_stamp[s] < a->b_stamp[pick]) /* evict the oldest in the window */
            pick = s;
    }
    a->b_key[pick] = key;
    a->b_stamp[pick] = ++a->stamp;
    a->b_cnt[pick] = (uint8_t)K;
    for (int j = 0; j < K; j++) {
        a->b_ids[(size_t)pick * K + j] = ids[j];
        a->b_sc[(size_t)pick * K + j] = sc16(scores[j]);
    }
}

const int32_t *arb_adj_row(const arb_adj *a, int32_t tok, bool *written)
{
    *written = a->u_cnt[tok] != 0;
    return a->u_ids + (size_t)tok * a->K;
}

int arb_adj_succ(const arb_adj *a, int32_t prev, int32_t tok, bool use_bigram, int32_t *ids,
                 float *scores, bool *bigram_hit)
{
    int K = a->K, n = 0;
    *bigram_hit = false;
    if (tok < 0 || tok >= a->V)
        return 0;
    if (use_bigram && a->b_log2 && prev >= 0) {
        uint64_t key = bigram_key(prev, tok);
        uint32_t mask = ((uint32_t)1 << a->b_log2) - 1, s = bigram_home(a, key);
        for (int p = 0; p < BIGRAM_PROBES; p++, s = (s + 1) & mask) {
            if (a->b_key[s] == key) {
                for (int j = 0; j < a->b_cnt[s]; j++) {
                    ids[n] = a->b_ids[(size_t)s * K + j];
                    scores[n++] = a->b_sc[(size_t)s * K + j] * (1.0f / 65535.0f);
                }
                *bigram_hit = n > 0;
                break;
            }
            if (a->b_key[s] == 0)
                break;
        }
    }
    int nb = n;
    for (int j = 0; j < a->u_cnt[tok] && n < K; j++) {
        int32_t x = a->u_ids[(size_t)tok * K + j];
        bool dup = false;
        for (int i = 0; i < nb; i++)
            dup |= ids[i] == x;
        if (dup)
            continue;
        ids[n] = x;
        scores[n++] = a->u_sc[(size_t)tok * K + j] * (1.0f / 65535.0f);
    }
    return n;
}

int arb_adj_fill(const arb_adj *a) { return a->fill; }
int arb_adj_k(const arb_adj *a) { return a->K; }

size_t arb_adj_bytes(const arb_adj *a)
{
    size_t vk = (size_t)a->V * a->K, cap = a->b_log2 ? (size_t)1 << a->b_log2 : 0;
    return sizeof *a + vk * (sizeof(int32_t) + sizeof(uint16_t)) + (size_t)a->V +
           cap * (sizeof(uint64_t) + sizeof(uint32_t) + 1 + (size_t)a->K * (sizeof(int32_t) + sizeof(uint16_t)));
}

/* ---- top-K + softmax of one logits row, in one pass ----
   The row is read once, in chunks of 128 values (prefetched 4 KB ahead; a chunk is re-read
   from L1 only). Per chunk: its maximum, as a vector; when some value beats the current K-th
   best (rare once the list is full) the chunk's values are inserted one by one in id order,
   so equal values keep the lower id exactly as a sequential scan would; online softmax: a
   chunk that raises the running maximum M first rescales the partial sums by 2^(u_old - u_new)
   (u = M log2 e); a chunk whose maximum is more than 24 below M is skipped (each term < e^-24
   of the max term, < 2e-6 relative over V = 49152); else e^(x - M) = 2^(x log2e - u) of each
   value at chunk offset o is added to accumulator lane o mod 64 (offset o, then o + 64).
   Exactness across CPUs: every path (AVX-512: 4 x 16 lanes, AVX2+FMA: 8 x 8, baseline: plain
   C with fmaf) runs the same IEEE operations per lane in the same order, fused where written
   fma and nowhere else (no a*b+c is left for a compiler to contract), then the same fixed tree
   over the 64 lanes, so ids and scores are bit-identical (tests/test_tr.c checks). exp2: round
   to nearest n, f in [-1/2, 1/2], degree-5 polynomial (relative error 1.6e-7), times 2^n. The
   rounding of u = x log2e - u_M shifts every term by the same factor, which the normalisation
   cancels; scores are within ~5e-6 relative of the exact softmax. They only weight branch
   widths and the 0.01 pruning (stored in 1/65535 units); ids and order are exact. */
#define TOPK_CHUNK 128
#define TOPK_LANES 64
#define TOPK_PF 1024 /* prefetch distance, floats */
#define TOPK_SKIP 24.0f
#define LOG2E 1.44269504088896341f
#define RND 12582912.0f /* 1.5 * 2^23: x + RND rounds x to an integer, held in the low bits */
static const float exp2_c[5] = {1.3264726149e-03f, 9.6715129912e-03f, 5.5507335812e-02f, 2.4022242427e-01f,
                                6.9314700365e-01f};

typedef struct topk_state {
    int K, cnt;               /* list length, entries so far */
    float thr;                /* K-th best value once full, else -inf */
    float M, uM;              /* running maximum (-inf before the first finite chunk), fl(M log2e) */
    float top[ARB_ADJ_K_MAX]; /* values of ids[], best first */
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
        scores[j] = s->M == -INFINITY ? 1.0f / (float)V : exp2_acc1(fmaf(s->top[j], LOG2E, -s->uM), 0.0f) / lane[0];
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
        acc[o % TOPK_LANES] = exp2_acc1(fmaf(x[o], LOG2E, -s->uM), acc[o % TOPK_LANES]);
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
/* The vector paths: the operations of exp2_acc1 / chunk_base, lane for lane. */
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f")))
#define UNROLL _Pragma("GCC unroll 16")
#define INL static inline __attribute__((always_inline))

AVX2 INL __m256 exp2_acc8(__m256 u, __m256 acc)
{
    const __m256 rnd = _mm256_set1_ps(RND);
    u = _mm256_max_ps(u, _mm256_set1_ps(-126.0f)); /* u > -126 ? u : -126 */
    __m256 t = _mm256_add_ps(u, rnd), f = _mm256_sub_ps(u, _mm256_sub_ps(t, rnd)), p = _mm256_set1_ps(exp2_c[0]);
    for (int k = 1; k < 5; k++)
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(exp2_c[k]));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
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
    if (s->cnt < s->K || _mm256_movemask_ps(_mm256_cmp_ps(mx, _mm256_set1_ps(s->thr), _CMP_GT_OQ)))
        topk_insert(s, x, i0, n);
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
    __m256 l2e = _mm256_set1_ps(LOG2E), nu = _mm256_set1_ps(-s->uM);
    UNROLL for (int q = 0; q < TOPK_CHUNK / 8; q++)
        acc[q % 8] = exp2_acc8(_mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * q), l2e, nu), acc[q % 8]);
}

AVX2 static void topk_avx2(topk_state *s, const float *row, int V, float *lane)
{
    float pad[TOPK_CHUNK];
    __m256 acc[TOPK_LANES / 8];
    UNROLL for (int q = 0; q < TOPK_LANES / 8; q++)
        acc[q] = _mm256_setzero_ps();
    int b0 = 0;
    for (; b0 + TOPK_CHUNK <= V; b0 += TOPK_CHUNK)
        chunk_avx2(s, acc, row + b0, b0, TOPK_CHUNK);
    if (b0 < V)
        chunk_avx2(s, acc, topk_tail(row, b0, V, pad), b0, V - b0);
    UNROLL for (int q = 0; q < TOPK_LANES / 8; q++)
        _mm256_storeu_ps(lane + 8 * q, acc[q]);
}

AVX512 INL __m512 exp2_acc16(__m512 u, __m512 acc)
{
    u = _mm512_max_ps(u, _mm512_set1_ps(-126.0f));
    __m512 n = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); /* = (u + RND) - RND */
    __m512 f = _mm512_sub_ps(u, n), p = _mm512_set1_ps(exp2_c[0]);
    for (int k = 1; k < 5; k++)
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(exp2_c[k]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_add_ps(acc, _mm512_scalef_ps(p, n)); /* p 2^n, rounded once, as p * en */
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
    if (s->cnt < s->K || _mm512_cmp_ps_mask(mx, _mm512_set1_ps(s->thr), _CMP_GT_OQ))
        topk_insert(s, x, i0, n);
    if (_mm512_cmp_ps_mask(mx, _mm512_set1_ps(s->M), _CMP_GT_OQ)) {
        __m512 f = _mm512_set1_ps(topk_new_max(s, _mm512_reduce_max_ps(mx)));
        UNROLL for (int q = 0; q < TOPK_LANES / 16; q++)
            acc[q] = _mm512_mul_ps(acc[q], f);
    }
    if (s->M == -INFINITY || !_mm512_cmp_ps_mask(mx, _mm512_set1_ps(s->M - TOPK_SKIP), _CMP_GE_OQ))
        return;
    __m512 l2e = _mm512_set1_ps(LOG2E), nu = _mm512_set1_ps(-s->uM);
    UNROLL for (int q = 0; q < TOPK_CHUNK / 16; q++)
        acc[q % 4] = exp2_acc16(_mm512_fmadd_ps(v[q], l2e, nu), acc[q % 4]);
}

AVX512 static void topk_avx512(topk_state *s, const float *row, int V, float *lane)
{
    float pad[TOPK_CHUNK];
    __m512 acc[TOPK_LANES / 16];
    UNROLL for (int q = 0; q < TOPK_LANES / 16; q++)
        acc[q] = _mm512_setzero_ps();
    int b0 = 0;
    for (; b0 + TOPK_CHUNK <= V; b0 += TOPK_CHUNK)
        chunk_avx512(s, acc, row + b0, b0, TOPK_CHUNK);
    if (b0 < V)
        chunk_avx512(s, acc, topk_tail(row, b0, V, pad), b0, V - b0);
    UNROLL for (int q = 0; q < TOPK_LANES / 16; q++)
        _mm512_storeu_ps(lane + 16 * q, acc[q]);
}
#endif

int arb_topk_isa_best(void)
{
#ifdef TOPK_X86
    if (__builtin_cpu_supports("avx512f"))
        return ARB_TOPK_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ARB_TOPK_AVX2;
#endif
    return ARB_TOPK_BASE;
}

bool arb_topk_softmax_isa(int isa, const float *row, int V, int K, int32_t *ids, float *scores)
{
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

/* ---- index-path templates ---- */
static const char tr_222[] =
    "[[0],[1],[2],[3],[4],[5],[6],[7],"
    "[0,0],[0,1],[0,2],[0,3],[0,4],[0,5],[0,6],[0,7],[1,0],[1,1],[1,2],[1,3],[2,0],[2,1],[2,2],[3,0],[3,1],[4,0],[5,0],[6,0],[7,0],"
    "[0,0,0],[0,0,1],[0,0,2],[0,0,3],[0,0,4],[0,0,5],[0,0,6],[0,0,7],[0,1,0],[0,1,1],[0,1,2],[0,2,0],[0,2,1],[0,3,0],[0,4,0],[0,5,0],[0,6,0],[0,7,0],[1,0,0],[1,0,1],[1,1,0],[2,0,0],[3,0,0],[4,0,0],[5,0,0],"
    "[0,0,0,0],[0,0,0,1],[0,0,0,2],[0,0,0,3],[0,0,0,4],[0,0,1,0],[0,0,1,1],[0,0,2,0],[0,0,3,0],[0,0,4,0],[0,1,0,0],[0,2,0,0],[1,0,0,0],[2,0,0,0],[3,0,0,0],"
    "[0,0,0,0,0],[0,0,0,0,1],[0,0,0,0,2],[0,0,0,1,0],[0,0,0,2,0],[0,0,1,0,0],[0,1,0,0,0],[1,0,0,0,0],"
    "[0,0,0,0,0,0],[0,0,0,0,0,1],[0,0,0,1,0,0]]";

#define PATH_MAX_LEN 16

typedef struct { int len; int16_t c[PATH_MAX_LEN]; } ipath;

static int path_cmp(const void *x, const void *y)
{
    const ipath *a = x, *b = y;
    if (a->len != b->len)
        return a->len - b->len;
    for (int i = 0; i < a->len; i++)
        if (a->c[i] != b->c[i])
            return a->c[i] - b->c[i];
    return 0;
}

static int find_path(const ipath *p, int n, const int16_t *c, int len)
{
    for (int i = 0; i < n; i++)
        if (p[i].len == len && !memcmp(p[i].c, c, (size_t)len * sizeof *c))
            return i;
    return -1;
}

int arb_choices_parse(const char *text, int32_t *parent, int16_t *rank, int cap, arb_err *err)
{
    ipath *p = malloc((size_t)cap * sizeof *p);
    if (!p)
        return ARB_ERR(err, ARB_E_NOMEM, "choices: out of memory");
    int n = 0, depth = 0, rc = ARB_OK;
    const char *s = text;
    for (; *s && rc == ARB_OK; s++) {
        if (*s == '[') {
            if (++depth == 2) {
                if (n >= cap - 1)
                    rc = ARB_ERR(err, ARB_E_RANGE, "choices: more than %d paths", cap - 1);
                else
                    p[n].len = 0;
            } else if (depth > 2)
                rc = ARB_ERR(err, ARB_E_FORMAT, "choices: nesting deeper than 2 at offset %ld", (long)(s - text));
        } else if (*s == ']') {
            if (depth == 2) {
                if (p[n].len == 0)
                    rc = ARB_ERR(err, ARB_E_FORMAT, "choices: empty path at offset %ld", (long)(s - text));
                n++;
            }
            depth--;
        } else if (*s >= '0' && *s <= '9' && depth == 2) {
            char *e;
            long v = strtol(s, &e, 10);
            if (p[n].len >= PATH_MAX_LEN || v > 1000)
                rc = ARB_ERR(err, ARB_E_RANGE, "choices: path %d too long or rank %ld too large", n, v);
            else
                p[n].c[p[n].len++] = (int16_t)v;
            s = e - 1;
        } else if (*s != ',' && *s != ' ' && *s != '\n') {
            rc = ARB_ERR(err, ARB_E_FORMAT, "choices: unexpected '%c' at offset %ld", *s, (long)(s - text));
        }
    }
    if (rc == ARB_OK && depth != 0)
        rc = ARB_ERR(err, ARB_E_FORMAT, "choices: unbalanced brackets");
    if (rc == ARB_OK) {
        qsort(p, (size_t)n, sizeof *p, path_cmp);
        parent[0] = -1;
        rank[0] = -1;
        for (int i = 0; i < n && rc == ARB_OK; i++) {
            int len = p[i].len, par = 0;
            if (i > 0 && !path_cmp(&p[i], &p[i - 1]))
                rc = ARB_ERR(err, ARB_E_FORMAT, "choices: duplicate path %d", i);
            if (rc == ARB_OK && len > 1 && (par = find_path(p, i, p[i].c, len - 1)) < 0)
                rc = ARB_ERR(err, ARB_E_FORMAT, "choices: path %d not prefix-closed", i);
            else if (len > 1)
                par += 1;
            if (rc == ARB_OK && p[i].c[len - 1] > 0) {
                int16_t c[PATH_MAX_LEN];
                memcpy(c, p[i].c, (size_t)len * sizeof *c);
                c[len - 1]--;
                if (find_path(p, i, c, len) < 0)
                    rc = ARB_ERR(err, ARB_E_FORMAT, "choices: path %d not rank-closed", i);
            }
            parent[i + 1] = par;
            rank[i + 1] = p[i].c[len - 1];
        }
    }
    free(p);
    return rc == ARB_OK ? n + 1 : rc;
}

int arb_tr_template(int32_t *parent, int16_t *rank, int cap)
{
    int n = arb_choices_parse(tr_222, parent, rank, cap, NULL);
    ARB_ASSERT(n == 81 || cap < 81);
    return n;
}

/* ---- the TR drafter: static template filled by BFS from the unigram table ---- */
typedef struct tr_state {
    arb_adj *adj;
    int n_tpl;
    int32_t tpl_parent[128];
    int16_t tpl_rank[128];
    bool prune_unfilled, harvest_prefill, hot_start;
} tr_state;

static void tr_destroy(void *st)
{
    tr_state *s = st;
    if (!s)
        return;
    arb_adj_free(s->adj);
    free(s);
}

static int tr_create(const arb_method_spec *sp, int n_vocab, void **out, arb_err *err)
{
    *out = NULL;
    tr_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "tr: out of memory");
    int rc = arb_adj_new(n_vocab, sp->topk, 0, &s->adj, err);
    if (rc) {
        free(s);
        return rc;
    }
    s->n_tpl = arb_tr_template(s->tpl_parent, s->tpl_rank, 128);
    s->prune_unfilled = sp->tr_prune_unfilled;
    s->harvest_prefill = sp->harvest_prefill;
    s->hot_start = sp->hot_start;
    for (int i = 1; i < s->n_tpl; i++)
        if (s->tpl_rank[i] >= sp->topk) {
            int need = s->tpl_rank[i] + 1;
            tr_destroy(s);
            return ARB_ERR(err, ARB_E_INVAL, "method %s: topk: TR template needs topk >= %d", sp->id, need);
        }
    *out = s;
    return ARB_OK;
}

static int tr_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    tr_state *s = st;
    if (new_run || !s->hot_start)
        arb_adj_clear(s->adj);
    return ARB_OK;
}

static void tr_append(void *st, const int32_t *tok, int n) {}

static void tr_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    tr_state *s = st;
    /* map template index -> tree index (-1 when pruned) */
    int32_t map[128];
    map[0] = 0;
    for (int i = 1; i < s->n_tpl; i++) {
        map[i] = -1;
        int p = map[s->tpl_parent[i]];
        if (p < 0)
            continue;
        bool written;
        const int32_t *row = arb_adj_row(s->adj, t->tok[p], &written);
        if (!written && s->prune_unfilled)
            continue;
        map[i] = arb_tree_add(t, p, row[s->tpl_rank[i]], ARB_SRC_TR, s->tpl_rank[i], NAN);
    }
    rec->mode = t->n > 1 ? ARB_MODE_TREE : ARB_MODE_AR;
    rec->table_fill = arb_adj_fill(s->adj);
}

static void tr_harvest(void *st, const arb_harvest *h)
{
    tr_state *s = st;
    if (h->prefill && !s->harvest_prefill)
        return;
    for (int i = 0; i < h->n; i++)
        arb_adj_write(s->adj, -1, h->tok[i], h->ids + (size_t)i * h->K, h->scores + (size_t)i * h->K);
}

static size_t tr_bytes(const void *st) { return arb_adj_bytes(((const tr_state *)st)->adj); }

const arb_drafter_i arb_drafter_tr = {
    .name = "tr",
    .create = tr_create,
    .destroy = tr_destroy,
    .begin = tr_begin,
    .append = tr_append,
    .propose = tr_propose,
    .harvest = tr_harvest,
    .verified = NULL,
    .bytes = tr_bytes,
};
