/* heads.c — Medusa/Hydra heads: forward, backward, top-k (see heads.h).
 *
 * The cost is the frozen LM head: per row and head, V x E multiply-adds for the logits and as
 * many again for dz = W_lm^T g. Both loops take the vocabulary outermost and the rows inside,
 * so each W_lm row (E floats) is read once per batch and reused across the B rows. */
#include "heads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HEADS_X86 1
#endif

struct arb_heads_ws {
    int rows;
    float *u, *z, *dz; /* [rows x E] */
    float *logits;     /* [rows x V] */
    float *teacher;    /* [rows x V]: the teacher's probabilities (arb_heads_ws_teacher; else NULL) */
    double *lse;       /* [rows] */
    int32_t *tk_ids;   /* [rows x ARB_TOPK_K_MAX]: the engine head's top-K lists (lm_head_topk) */
    float *tk_p;       /* [rows x ARB_TOPK_K_MAX] */
};

const char *arb_heads_kind_name(arb_heads_kind k) { return k == ARB_HEADS_HYDRA ? "hydra" : "medusa"; }

/* ---- the two vector kernels (a plain-C and an AVX2+FMA path, picked per call) ---- */

static float dot_c(const float *a, const float *b, int n)
{
    float s[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += a[i + j] * b[i + j];
    float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

static void axpy_c(float *y, float a, const float *x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

#ifdef HEADS_X86
__attribute__((target("avx2,fma"))) static float dot_avx2(const float *a, const float *b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s0 = _mm256_add_ps(s0, s1);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    float t = _mm_cvtss_f32(q);
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

__attribute__((target("avx2,fma"))) static void axpy_avx2(float *y, float a, const float *x, int n)
{
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* L[i x V + v] = W[v] . Z[i] for v < V, i < B: 4 vocabulary rows x 2 batch rows per block, so
   8 FMAs take 6 loads (a plain dot takes 2 per FMA). E % 8 == 0. */
__attribute__((target("avx2,fma"))) static float hsum8(__m256 s)
{
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

__attribute__((target("avx2,fma"))) static void logits_avx2(const float *W, int V, const float *Z, int B, int E,
                                                             float *L)
{
    int v = 0;
    for (; v + 4 <= V; v += 4) {
        const float *w0 = W + (size_t)v * E, *w1 = w0 + E, *w2 = w1 + E, *w3 = w2 + E;
        int i = 0;
        for (; i + 2 <= B; i += 2) {
            const float *z0 = Z + (size_t)i * E, *z1 = z0 + E;
            __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
                   a31 = a00;
            for (int e = 0; e < E; e += 8) {
                __m256 x0 = _mm256_loadu_ps(z0 + e), x1 = _mm256_loadu_ps(z1 + e), w;
                w = _mm256_loadu_ps(w0 + e), a00 = _mm256_fmadd_ps(w, x0, a00), a01 = _mm256_fmadd_ps(w, x1, a01);
                w = _mm256_loadu_ps(w1 + e), a10 = _mm256_fmadd_ps(w, x0, a10), a11 = _mm256_fmadd_ps(w, x1, a11);
                w = _mm256_loadu_ps(w2 + e), a20 = _mm256_fmadd_ps(w, x0, a20), a21 = _mm256_fmadd_ps(w, x1, a21);
                w = _mm256_loadu_ps(w3 + e), a30 = _mm256_fmadd_ps(w, x0, a30), a31 = _mm256_fmadd_ps(w, x1, a31);
            }
            float *l0 = L + (size_t)i * V + v, *l1 = l0 + V;
            l0[0] = hsum8(a00), l0[1] = hsum8(a10), l0[2] = hsum8(a20), l0[3] = hsum8(a30);
            l1[0] = hsum8(a01), l1[1] = hsum8(a11), l1[2] = hsum8(a21), l1[3] = hsum8(a31);
        }
        for (; i < B; i++) {
            const float *z0 = Z + (size_t)i * E;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int e = 0; e < E; e += 8) {
                __m256 x0 = _mm256_loadu_ps(z0 + e);
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + e), x0, a0);
                a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + e), x0, a1);
                a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + e), x0, a2);
                a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + e), x0, a3);
            }
            float *l0 = L + (size_t)i * V + v;
            l0[0] = hsum8(a0), l0[1] = hsum8(a1), l0[2] = hsum8(a2), l0[3] = hsum8(a3);
        }
    }
    for (; v < V; v++)
        for (int i = 0; i < B; i++)
            L[(size_t)i * V + v] = dot_avx2(W + (size_t)v * E, Z + (size_t)i * E, E);
}

/* dZ[i] = Σ_v G[i x V + v] W[v] (dZ overwritten): blocks of 64 vocabulary rows (kept in L2),
   4 batch rows x 8 lanes of accumulators per pass. E % 8 == 0. */
__attribute__((target("avx2,fma"))) static void dz_avx2(const float *W, int V, const float *G, int B, int E,
                                                         float *dZ)
{
    memset(dZ, 0, (size_t)B * E * sizeof *dZ);
    enum { VB = 64 };
    for (int v0 = 0; v0 < V; v0 += VB) {
        int v1 = v0 + VB < V ? v0 + VB : V;
        int i = 0;
        for (; i + 4 <= B; i += 4) {
            const float *g0 = G + (size_t)i * V, *g1 = g0 + V, *g2 = g1 + V, *g3 = g2 + V;
            for (int e = 0; e < E; e += 8) {
                float *d0 = dZ + (size_t)i * E + e;
                __m256 a0 = _mm256_loadu_ps(d0), a1 = _mm256_loadu_ps(d0 + E), a2 = _mm256_loadu_ps(d0 + 2 * E),
                       a3 = _mm256_loadu_ps(d0 + 3 * E);
                for (int v = v0; v < v1; v++) {
                    __m256 w = _mm256_loadu_ps(W + (size_t)v * E + e);
                    a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(g0 + v), w, a0);
                    a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(g1 + v), w, a1);
                    a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(g2 + v), w, a2);
                    a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(g3 + v), w, a3);
                }
                _mm256_storeu_ps(d0, a0), _mm256_storeu_ps(d0 + E, a1), _mm256_storeu_ps(d0 + 2 * E, a2),
                    _mm256_storeu_ps(d0 + 3 * E, a3);
            }
        }
        for (; i < B; i++)
            for (int v = v0; v < v1; v++)
                axpy_avx2(dZ + (size_t)i * E, G[(size_t)i * V + v], W + (size_t)v * E, E);
    }
}

static int have_avx2(void)
{
    static int have = -1; /* a cache of a CPU fact, not state: every thread computes the same */
    if (have < 0)
        have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return have;
}
#define DOT(a, b, n) (have_avx2() ? dot_avx2(a, b, n) : dot_c(a, b, n))
#define AXPY(y, a, x, n) (have_avx2() ? axpy_avx2(y, a, x, n) : axpy_c(y, a, x, n))
#else
#define DOT(a, b, n) dot_c(a, b, n)
#define AXPY(y, a, x, n) axpy_c(y, a, x, n)
#endif

static void logits_rows(const float *W, int V, const float *Z, int B, int E, float *L)
{
#ifdef HEADS_X86
    if (have_avx2() && E % 8 == 0) {
        logits_avx2(W, V, Z, B, E, L);
        return;
    }
#endif
    for (int v = 0; v < V; v++)
        for (int i = 0; i < B; i++)
            L[(size_t)i * V + v] = dot_c(W + (size_t)v * E, Z + (size_t)i * E, E);
}

static void dz_rows(const float *W, int V, const float *G, int B, int E, float *dZ)
{
#ifdef HEADS_X86
    if (have_avx2() && E % 8 == 0) {
        dz_avx2(W, V, G, B, E, dZ);
        return;
    }
#endif
    memset(dZ, 0, (size_t)B * E * sizeof *dZ);
    for (int v = 0; v < V; v++)
        for (int i = 0; i < B; i++)
            axpy_c(dZ + (size_t)i * E, G[(size_t)i * V + v], W + (size_t)v * E, E);
}

float arb_heads_dot(const float *a, const float *b, int n) { return DOT(a, b, n); }
void arb_heads_axpy(float *y, float a, const float *x, int n) { AXPY(y, a, x, n); }
void arb_heads_logits(const float *W, int V, const float *Z, int B, int E, float *L) { logits_rows(W, V, Z, B, E, L); }
void arb_heads_dz(const float *W, int V, const float *G, int B, int E, float *dZ) { dz_rows(W, V, G, B, E, dZ); }

/* ---- lifecycle ---- */

void arb_heads_free(arb_heads *h)
{
    if (!h)
        return;
    free(h->params);
    free(h);
}

int arb_heads_new(arb_heads_kind kind, int K, int E, int V, arb_heads **out, arb_err *err)
{
    *out = NULL;
    if (K < 1 || K > ARB_HEADS_MAX || E < 1 || V < 1 || (kind != ARB_HEADS_MEDUSA && kind != ARB_HEADS_HYDRA))
        return ARB_ERR(err, ARB_E_INVAL, "heads: %d heads (1..%d), n_embd %d, n_vocab %d", K, ARB_HEADS_MAX, E, V);
    arb_heads *h = calloc(1, sizeof *h);
    if (!h)
        return ARB_ERR(err, ARB_E_NOMEM, "heads: out of memory");
    h->kind = kind;
    h->n_heads = K;
    h->n_embd = E;
    h->n_vocab = V;
    size_t n = 0;
    for (int k = 0; k < K; k++) {
        h->d_in[k] = kind == ARB_HEADS_HYDRA ? E * (k + 2) : E;
        size_t per = (size_t)E * h->d_in[k] + E;
        n += kind == ARB_HEADS_HYDRA ? 2 * per : per;
    }
    h->n_params = n;
    if (!(h->params = calloc(n, sizeof *h->params))) {
        free(h);
        return ARB_ERR(err, ARB_E_NOMEM, "heads: cannot allocate %zu parameters", n);
    }
    float *p = h->params;
    for (int k = 0; k < K; k++) {
        size_t wn = (size_t)E * h->d_in[k];
        h->w[k] = p, p += wn;
        h->b[k] = p, p += E;
        if (kind == ARB_HEADS_HYDRA) {
            h->r[k] = p, p += wn;
            h->rb[k] = p, p += E;
        }
    }
    *out = h;
    return ARB_OK;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void arb_heads_init(arb_heads *h, uint64_t seed)
{
    uint64_t s = seed ^ 0x6d656475736148ull; /* "medusaH": heads draw from their own stream */
    memset(h->params, 0, h->n_params * sizeof *h->params);
    for (int k = 0; k < h->n_heads; k++) {
        float a = 1.0f / sqrtf((float)h->d_in[k]);
        for (int o = 0; o < h->n_embd; o++)
            h->b[k][o] = a * (float)((double)(splitmix(&s) >> 11) * 0x1p-53 * 2.0 - 1.0);
        if (h->r[k])
            for (int o = 0; o < h->n_embd; o++)
                h->r[k][(size_t)o * h->d_in[k] + o] = 1.0f;
    }
}

int arb_heads_ws_new(const arb_heads *h, int n_rows, arb_heads_ws **out, arb_err *err)
{
    *out = NULL;
    arb_heads_ws *ws = calloc(1, sizeof *ws);
    size_t re = (size_t)n_rows * h->n_embd;
    if (n_rows < 1 || !ws || !(ws->u = malloc(re * sizeof(float))) || !(ws->z = malloc(re * sizeof(float))) ||
        !(ws->dz = malloc(re * sizeof(float))) || !(ws->lse = malloc((size_t)n_rows * sizeof(double))) ||
        !(ws->logits = malloc((size_t)n_rows * h->n_vocab * sizeof(float))) ||
        !(ws->tk_ids = malloc((size_t)n_rows * ARB_TOPK_K_MAX * sizeof(int32_t))) ||
        !(ws->tk_p = malloc((size_t)n_rows * ARB_TOPK_K_MAX * sizeof(float)))) {
        arb_heads_ws_free(ws);
        return ARB_ERR(err, ARB_E_NOMEM, "heads: cannot allocate scratch for %d rows x %d vocab", n_rows,
                       h->n_vocab);
    }
    ws->rows = n_rows;
    *out = ws;
    return ARB_OK;
}

int arb_heads_ws_teacher(arb_heads_ws *ws, const arb_heads *h, arb_err *err)
{
    if (!ws->teacher && !(ws->teacher = malloc((size_t)ws->rows * h->n_vocab * sizeof(float))))
        return ARB_ERR(err, ARB_E_NOMEM, "heads: cannot allocate the teacher's rows (%d x %d vocab)", ws->rows,
                       h->n_vocab);
    return ARB_OK;
}

void arb_heads_ws_free(arb_heads_ws *ws)
{
    if (!ws)
        return;
    free(ws->u);
    free(ws->z);
    free(ws->dz);
    free(ws->lse);
    free(ws->logits);
    free(ws->teacher);
    free(ws->tk_ids);
    free(ws->tk_p);
    free(ws);
}

/* ---- forward / backward ---- */

static float sigm(float u) { return 1.0f / (1.0f + expf(-u)); }

/* u = W x + b, z = residual(x) + SiLU(u) for one row, outputs o0..o1-1. */
static void head_block_part(const arb_heads *h, int k, const float *x, float *u, float *z, int o0, int o1)
{
    const int D = h->d_in[k];
    for (int o = o0; o < o1; o++) {
        u[o] = h->b[k][o] + DOT(h->w[k] + (size_t)o * D, x, D);
        float res = h->r[k] ? h->rb[k][o] + DOT(h->r[k] + (size_t)o * D, x, D) : x[o];
        z[o] = res + u[o] * sigm(u[o]);
    }
}

static void head_block(const arb_heads *h, int k, const float *x, float *u, float *z)
{
    head_block_part(h, k, x, u, z, 0, h->n_embd);
}

/* The drafters' head blocks, n rows (row i: head k[i] on x[i]) into ws->u, ws->z, by parts of
   HEAD_PART outputs, every row inside a part, on the scoring context's threads when it has
   several. Each output is the same DOT whichever thread or part computes it, so the bits do not
   depend on the split. Why: a head's W (and Hydra's R) is E x d_in f32 — 1.3 MB per SmolLM2
   Medusa head, 4.6-8 MB per Hydra matrix — read from memory every step: one core took ~220 us
   for Medusa's four (twenty-eighth session), a GPU step's largest host cost once the logits
   stay on the device; and the rows of a Hydra tree level share their head, whose part a thread
   now reads once for all of them instead of once per row. */
#define HEAD_PART 32
typedef struct head_blocks_job {
    const arb_heads *h;
    const int *k;
    const float *const *x;
    float *u, *z;
    int n; /* rows */
} head_blocks_job;

static void head_blocks_part(void *ud, int part, int n_parts)
{
    (void)n_parts;
    const head_blocks_job *j = ud;
    const int E = j->h->n_embd, o0 = part * HEAD_PART, o1 = o0 + HEAD_PART < E ? o0 + HEAD_PART : E;
    for (int r = 0; r < j->n; r++)
        head_block_part(j->h, j->k[r], j->x[r], j->u + (size_t)r * E, j->z + (size_t)r * E, o0, o1);
}

static void head_blocks(const arb_heads *h, const arb_lm_head *lm, int n, const int *k, const float *const *x,
                        arb_heads_ws *ws)
{
    head_blocks_job j = {.h = h, .k = k, .x = x, .u = ws->u, .z = ws->z, .n = n};
    arb_heads_run_parts(lm->ctx, (h->n_embd + HEAD_PART - 1) / HEAD_PART, head_blocks_part, &j);
}

void arb_heads_run_parts(arb_ctx *ctx, int parts, void (*fn)(void *ud, int p, int parts), void *ud)
{
    if (ctx && arb_ctx_n_threads(ctx) > 1) {
        arb_ctx_parallel_for(ctx, parts, fn, ud);
        return;
    }
    for (int p = 0; p < parts; p++)
        fn(ud, p, parts);
}

double arb_heads_row_lse(const float *L, int V)
{
    float mx = L[0];
    for (int v = 1; v < V; v++)
        mx = L[v] > mx ? L[v] : mx;
    double s = 0;
    for (int v = 0; v < V; v++)
        s += exp((double)(L[v] - mx));
    return mx + log(s);
}

/* The teacher's law on B rows: softmax(W_lm tz_i) into ws->teacher (rows without a target: zeros). */
static void teacher_rows(const arb_heads *h, const float *w_lm, const float *tz, const int32_t *y, int B,
                         arb_heads_ws *ws)
{
    const int V = h->n_vocab;
    logits_rows(w_lm, V, tz, B, h->n_embd, ws->teacher);
    for (int i = 0; i < B; i++) {
        float *P = ws->teacher + (size_t)i * V;
        if (y[i] < 0) {
            memset(P, 0, (size_t)V * sizeof *P);
            continue;
        }
        const double lse = arb_heads_row_lse(P, V);
        for (int v = 0; v < V; v++)
            P[v] = (float)exp((double)P[v] - lse);
    }
}

double arb_heads_step(const arb_heads *h, int k, const float *w_lm, const float *x, const int32_t *y, int B,
                      float lambda, float *grad, arb_heads_ws *ws, int32_t *ranks)
{
    return arb_heads_step_teacher(h, k, w_lm, x, y, NULL, 0, B, lambda, grad, ws, ranks);
}

double arb_heads_step_teacher(const arb_heads *h, int k, const float *w_lm, const float *x, const int32_t *y,
                              const float *tz, float alpha, int B, float lambda, float *grad, arb_heads_ws *ws,
                              int32_t *ranks)
{
    const int E = h->n_embd, V = h->n_vocab, D = h->d_in[k];
    ARB_ASSERT(B <= ws->rows && k >= 0 && k < h->n_heads);
    const bool soft = tz && alpha > 0; /* alpha = 0: the hard-label step, bit for bit */
    ARB_ASSERT(!soft || (ws->teacher && alpha <= 1));
    if (soft)
        teacher_rows(h, w_lm, tz, y, B, ws);
    for (int i = 0; i < B; i++) {
        if (y[i] >= 0)
            head_block(h, k, x + (size_t)i * D, ws->u + (size_t)i * E, ws->z + (size_t)i * E);
        else /* computed with the others, never read */
            memset(ws->z + (size_t)i * E, 0, (size_t)E * sizeof(float));
    }
    logits_rows(w_lm, V, ws->z, B, E, ws->logits);
    double loss = 0;
    for (int i = 0; i < B; i++) {
        float *L = ws->logits + (size_t)i * V;
        if (y[i] < 0) {
            if (ranks)
                ranks[i] = -1;
            continue;
        }
        const double lse = arb_heads_row_lse(L, V);
        ws->lse[i] = lse;
        if (soft) { /* (1 - alpha) CE(y) + alpha CE(teacher): Σ_v p_v (lse - L_v), p summing to 1 */
            const float *P = ws->teacher + (size_t)i * V;
            double ce_t = 0;
            for (int v = 0; v < V; v++)
                ce_t += (double)P[v] * (lse - (double)L[v]);
            loss += (1.0 - alpha) * (lse - L[y[i]]) + alpha * ce_t;
        } else
            loss += lse - L[y[i]];
        if (ranks) { /* ties rank the lower id first, as arb_topk_softmax orders them */
            int r = 0;
            const float ly = L[y[i]];
            for (int v = 0; v < V; v++)
                r += L[v] > ly || (L[v] == ly && v < y[i]);
            ranks[i] = r;
        }
    }
    if (!grad)
        return loss;
    /* g = lambda (softmax - onehot) [soft: - alpha (p - onehot)], in place; dz = W_lm^T g */
    for (int i = 0; i < B; i++) {
        float *L = ws->logits + (size_t)i * V;
        if (y[i] < 0) {
            memset(L, 0, (size_t)V * sizeof *L);
            continue;
        }
        if (soft) { /* lambda (softmax - (1 - alpha) onehot - alpha p) */
            const float *P = ws->teacher + (size_t)i * V;
            for (int v = 0; v < V; v++)
                L[v] = lambda * ((float)exp((double)L[v] - ws->lse[i]) - alpha * P[v]);
            L[y[i]] -= lambda * (1.0f - alpha);
            continue;
        }
        for (int v = 0; v < V; v++)
            L[v] = lambda * (float)exp((double)L[v] - ws->lse[i]);
        L[y[i]] -= lambda;
    }
    dz_rows(w_lm, V, ws->logits, B, E, ws->dz);
    /* through the block: du = dz * SiLU'(u); dW += du x^T, db += du; Hydra: dR += dz x^T, drb += dz */
    float *gw = grad + (h->w[k] - h->params), *gb = grad + (h->b[k] - h->params);
    float *gr = h->r[k] ? grad + (h->r[k] - h->params) : NULL, *grb = h->r[k] ? grad + (h->rb[k] - h->params) : NULL;
    for (int i = 0; i < B; i++) {
        if (y[i] < 0)
            continue;
        const float *xi = x + (size_t)i * D, *u = ws->u + (size_t)i * E, *dz = ws->dz + (size_t)i * E;
        for (int o = 0; o < E; o++) {
            float sg = sigm(u[o]), du = dz[o] * sg * (1.0f + u[o] * (1.0f - sg));
            AXPY(gw + (size_t)o * D, du, xi, D);
            gb[o] += du;
            if (gr) {
                AXPY(gr + (size_t)o * D, dz[o], xi, D);
                grb[o] += dz[o];
            }
        }
    }
    return loss;
}

/* ---- scoring z rows: the engine's own output head, or the f32 copy ---- */

int arb_lm_head_bind(arb_lm_head *lm, arb_ctx *ctx, const float *w_lm, arb_err *err)
{
    *lm = (arb_lm_head){.w_lm = w_lm};
    arb_model_info mi;
    arb_model_get_info(arb_ctx_model(ctx), &mi);
    float *z = calloc((size_t)mi.n_embd, sizeof *z), *L = malloc((size_t)mi.n_vocab * sizeof *L);
    if (!z || !L) {
        free(z);
        free(L);
        return ARB_ERR(err, ARB_E_NOMEM, "output head: out of memory");
    }
    arb_err pe = {0}; /* a context whose call fails (e.g. no rows fit): the f32 copy it is */
    if (arb_ctx_output_head(ctx, z, 1, L, &pe) == ARB_OK)
        lm->ctx = ctx;
    free(z);
    free(L);
    return ARB_OK;
}

void arb_lm_head_logits(const arb_lm_head *lm, int V, int E, const float *Z, int B, float *L)
{
    arb_err err = {0};
    if (lm->f32 || !lm->ctx || arb_ctx_output_head(lm->ctx, Z, B, L, &err) != ARB_OK)
        logits_rows(lm->w_lm, V, Z, B, E, L);
}

void arb_lm_head_topk(const arb_lm_head *lm, int V, int E, const float *Z, int B, int k, int32_t *ids, float *probs,
                      float *logits)
{
    arb_err err = {0};
    const arb_eval_out o = {.topk_k = k, .topk_ids = ids, .topk_p = probs};
    if (!lm->f32 && lm->ctx && arb_ctx_output_head_ex(lm->ctx, Z, B, &o, &err) == ARB_OK)
        return;
    logits_rows(lm->w_lm, V, Z, B, E, logits);
    for (int i = 0; i < B; i++)
        arb_topk_softmax(logits + (size_t)i * V, V, k, ids + (size_t)i * k, probs + (size_t)i * k);
}

/* The n_top[i] best tokens of row i (none for n_top[i] <= 0) into ids/probs + i * stride: the
   lists of the largest n_top, cut. A list's first n entries are the top-n list, ids and
   probabilities alike (arb_topk_softmax's sum does not depend on K; tests/test_heads.c). */
static void lm_head_topk(const arb_lm_head *lm, int V, int E, const float *Z, int B, const int *n_top, size_t stride,
                         int32_t *ids, float *probs, arb_heads_ws *ws)
{
    int kmax = 0;
    for (int i = 0; i < B; i++)
        kmax = n_top[i] > kmax ? n_top[i] : kmax;
    if (kmax <= 0)
        return;
    arb_lm_head_topk(lm, V, E, Z, B, kmax, ws->tk_ids, ws->tk_p, ws->logits);
    for (int i = 0; i < B; i++)
        if (n_top[i] > 0) {
            memcpy(ids + i * stride, ws->tk_ids + (size_t)i * kmax, (size_t)n_top[i] * sizeof *ids);
            memcpy(probs + i * stride, ws->tk_p + (size_t)i * kmax, (size_t)n_top[i] * sizeof *probs);
        }
}

void arb_heads_topk(const arb_heads *h, int k, const arb_lm_head *lm, const float *x, int n_top, int32_t *ids,
                    float *probs, arb_heads_ws *ws)
{
    const int E = h->n_embd, V = h->n_vocab;
    head_blocks(h, lm, 1, &k, &x, ws);
    lm_head_topk(lm, V, E, ws->z, 1, &n_top, 0, ids, probs, ws);
}

void arb_heads_topk_all(const arb_heads *h, const arb_lm_head *lm, const float *x, const int *n_top, int32_t *ids,
                        float *probs, arb_heads_ws *ws)
{
    const int E = h->n_embd, V = h->n_vocab, K = h->n_heads;
    ARB_ASSERT(h->kind == ARB_HEADS_MEDUSA && ws->rows >= K);
    int ks[ARB_HEADS_MAX];
    const float *xs[ARB_HEADS_MAX];
    for (int k = 0; k < K; k++)
        ks[k] = k, xs[k] = x;
    head_blocks(h, lm, K, ks, xs, ws);
    lm_head_topk(lm, V, E, ws->z, K, n_top, ARB_HEADS_RANKS, ids, probs, ws);
}

void arb_heads_topk_batch(const arb_heads *h, const arb_lm_head *lm, int n, const int *k, const float *const *x,
                          const int *n_top, int32_t *ids, float *probs, arb_heads_ws *ws)
{
    const int E = h->n_embd, V = h->n_vocab;
    ARB_ASSERT(n <= ws->rows);
    head_blocks(h, lm, n, k, x, ws);
    lm_head_topk(lm, V, E, ws->z, n, n_top, ARB_HEADS_RANKS, ids, probs, ws);
}

/* ---- the target's output matrix and embedding in f32 ---- */

static int dequant_tensor(const arb_gguf *g, const char *name, int E, int V, float **out, arb_err *err)
{
    *out = NULL;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        if (t->name.len != strlen(name) || memcmp(t->name.ptr, name, t->name.len))
            continue;
        if (t->n_dims != 2 || t->ne[0] != (uint64_t)E || t->ne[1] != (uint64_t)V)
            return ARB_ERR(err, ARB_E_FORMAT, "heads: tensor %s is not %d x %d", name, V, E);
        float *w = malloc((size_t)V * E * sizeof *w);
        if (!w)
            return ARB_ERR(err, ARB_E_NOMEM, "heads: cannot allocate %s in f32 (%d x %d)", name, V, E);
        int rc = arb_dequantize(t->type, t->data, w, (size_t)V * E, err);
        if (rc) {
            free(w);
            return rc;
        }
        *out = w;
        return ARB_OK;
    }
    return ARB_E_NOTFOUND;
}

int arb_heads_lm_weights(const arb_model *m, float **w_lm, float **emb, arb_err *err)
{
    *w_lm = NULL;
    if (emb)
        *emb = NULL;
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    arb_gguf *g = NULL;
    int rc = arb_gguf_open(arb_model_path(m), &g, err);
    if (rc)
        return rc;
    float *te = NULL, *out = NULL;
    rc = dequant_tensor(g, "token_embd.weight", mi.n_embd, mi.n_vocab, &te, err);
    if (rc == ARB_E_NOTFOUND)
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: no token_embd.weight", arb_model_path(m));
    if (!rc) {
        rc = dequant_tensor(g, "output.weight", mi.n_embd, mi.n_vocab, &out, err);
        if (rc == ARB_E_NOTFOUND) /* tied embeddings: the output head is the embedding */
            rc = ARB_OK, out = te;
    }
    arb_gguf_close(g);
    if (rc) {
        if (out != te)
            free(out);
        free(te);
        return rc;
    }
    *w_lm = out;
    if (emb)
        *emb = te;
    else if (te != out)
        free(te);
    return ARB_OK;
}
