/* features.c — EntMTP step features (see features.h). */
#include "features.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */

#if defined(__x86_64__) && defined(__GNUC__)
#define FEAT_X86 1
#include <immintrin.h>
#endif

static const int ema_w[ARB_ENTFEAT_EMA] = {4, 8, 12, 16, 24, 32, 64};
static const int last_k[3] = {4, 8, 16};

int arb_entfeat_kind_parse(const char *name)
{
    if (!strcmp(name, "lit"))
        return ARB_ENTFEAT_LIT;
    if (!strcmp(name, "gD"))
        return ARB_ENTFEAT_GD;
    if (!strcmp(name, "sum"))
        return ARB_ENTFEAT_SUM;
    return -1;
}

void arb_entfeat_reset(arb_entfeat *f, arb_entfeat_kind kind)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
}

/* ---- the base distribution's statistics in one pass ----
   p0 = 1/z and H = log z - (Σ x e^x)/z with x = l - max, z = Σ e^x: one read of the row after
   its maximum (arb_topk_argmax, vectorised). The exponential is Cephes' expf polynomial (the
   engine's arb_exp_f32: x clamped at -87.3, n = round(x log2e), r = x - n ln2 in two parts,
   degree-6 polynomial, times 2^n; ~1 ulp), the same operations lane by lane on every path, so
   the AVX2 and plain-C paths differ only in how the float lanes are added (32 lanes, flushed
   into doubles every 1024 values). Against a double-precision softmax p0 and H agree to
   ~1e-6 relative (tests/test_tree_sched.c). x is clamped at -87.3 before both uses, so a -inf
   logit adds e^-87.3 * -87.3 (nothing a double keeps) instead of -inf * 0 = NaN. libm's expf
   was the 172 us of the old two-pass loop: scalar, not vectorised. */
#define EXP_LO (-87.3f)
#define EXP_MAGIC 12582912.0f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO (-2.12194440e-4f)
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f
#define SUM_LANES 32
#define SUM_FLUSH 1024

static inline float exp_poly(float x)
{
    x = x < EXP_LO ? EXP_LO : x;
    const float n = (x * EXP_LOG2E + EXP_MAGIC) - EXP_MAGIC;
    float r = x - n * EXP_LN2_HI;
    r = r - n * EXP_LN2_LO;
    float y = EXP_P0;
    y = y * r + EXP_P1;
    y = y * r + EXP_P2;
    y = y * r + EXP_P3;
    y = y * r + EXP_P4;
    y = y * r + EXP_P5;
    y = (y * (r * r) + r) + 1.0f;
    union {
        uint32_t u;
        float f;
    } e = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return y * e.f;
}

/* plain C: 32 lanes the compiler may vectorise; then the tail */
static void sums_base(const float *row, int V, float mx, double *z, double *zl)
{
    int i = 0;
    while (i + SUM_LANES <= V) {
        float bz[SUM_LANES] = {0}, bl[SUM_LANES] = {0};
        const int end = i + SUM_FLUSH <= V ? i + SUM_FLUSH : V;
        for (; i + SUM_LANES <= end; i += SUM_LANES)
            for (int q = 0; q < SUM_LANES; q++) {
                const float x = fmaxf(row[i + q] - mx, EXP_LO), e = exp_poly(x);
                bz[q] += e;
                bl[q] += x * e;
            }
        for (int q = 0; q < SUM_LANES; q++)
            *z += bz[q], *zl += bl[q];
    }
    for (; i < V; i++) {
        const float x = fmaxf(row[i] - mx, EXP_LO), e = exp_poly(x);
        *z += e, *zl += x * e;
    }
}

#ifdef FEAT_X86
#define AVX2 __attribute__((target("avx2,fma")))
AVX2 static inline __m256 exp_avx2(__m256 x)
{
    const __m256 magic = _mm256_set1_ps(EXP_MAGIC);
    x = _mm256_max_ps(x, _mm256_set1_ps(EXP_LO));
    const __m256 n = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)), magic), magic);
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(EXP_LN2_HI)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(EXP_LN2_LO)));
    __m256 y = _mm256_set1_ps(EXP_P0);
    y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(EXP_P1));
    y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(EXP_P2));
    y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(EXP_P3));
    y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(EXP_P4));
    y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(EXP_P5));
    y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(y, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

/* 4 x 8 lanes (lane q*8+j holds values i + 8q + j, as in sums_base), no fused multiply-add */
AVX2 static void sums_avx2(const float *row, int V, float mx, double *z, double *zl)
{
    const __m256 vmx = _mm256_set1_ps(mx), lo = _mm256_set1_ps(EXP_LO);
    int i = 0;
    while (i + SUM_LANES <= V) {
        __m256 bz[4], bl[4];
        for (int q = 0; q < 4; q++)
            bz[q] = _mm256_setzero_ps(), bl[q] = _mm256_setzero_ps();
        const int end = i + SUM_FLUSH <= V ? i + SUM_FLUSH : V;
        for (; i + SUM_LANES <= end; i += SUM_LANES)
            for (int q = 0; q < 4; q++) {
                const __m256 x = _mm256_max_ps(_mm256_sub_ps(_mm256_loadu_ps(row + i + 8 * q), vmx), lo), e = exp_avx2(x);
                bz[q] = _mm256_add_ps(bz[q], e);
                bl[q] = _mm256_add_ps(bl[q], _mm256_mul_ps(x, e));
            }
        float lz[SUM_LANES], ll[SUM_LANES];
        for (int q = 0; q < 4; q++)
            _mm256_storeu_ps(lz + 8 * q, bz[q]), _mm256_storeu_ps(ll + 8 * q, bl[q]);
        for (int q = 0; q < SUM_LANES; q++)
            *z += lz[q], *zl += ll[q];
    }
    for (; i < V; i++) {
        const float x = fmaxf(row[i] - mx, EXP_LO), e = exp_poly(x);
        *z += e, *zl += x * e;
    }
}
#endif

bool arb_entfeat_row_stats_isa(int isa, const float *row, int V, arb_entfeat_row *out)
{
    const int32_t am = arb_topk_argmax(row, V);
    const float mx = row[am];
    double z = 0, zl = 0;
    if (isa == ARB_TOPK_BASE)
        sums_base(row, V, mx, &z, &zl);
#ifdef FEAT_X86
    else if (isa == ARB_TOPK_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        sums_avx2(row, V, mx, &z, &zl);
#endif
    else
        return false;
    out->argmax = am;
    out->p0 = 1.0 / z;
    out->H = log(z) - zl / z; /* -Σ π log π with π = e^x / z */
    return true;
}

void arb_entfeat_row_stats(const float *row, int V, arb_entfeat_row *out)
{
    /* AVX-512 machines take the AVX2 path: the pass is bound by the exp, 8 lanes suffice for
       the 0.1 ms step budget */
    if (!arb_entfeat_row_stats_isa(arb_topk_isa_best() >= ARB_TOPK_AVX2 ? ARB_TOPK_AVX2 : ARB_TOPK_BASE, row, V,
                                   out))
        arb_entfeat_row_stats_isa(ARB_TOPK_BASE, row, V, out);
}

void arb_entfeat_base_stats(arb_entfeat *f, const arb_entfeat_row *r)
{
    f->p0 = r->p0;
    f->H = r->H;
    for (int j = 0; j < ARB_ENTFEAT_EMA; j++) {
        double a = 2.0 / (ema_w[j] + 1);
        f->H_ema[j] = f->n_steps == 0 && f->H_ema[j] == 0 ? f->H : a * f->H + (1 - a) * f->H_ema[j];
    }
}

void arb_entfeat_base(arb_entfeat *f, const float *row, int V)
{
    arb_entfeat_row r;
    arb_entfeat_row_stats(row, V, &r);
    arb_entfeat_base_stats(f, &r);
}

void arb_entfeat_heads(arb_entfeat *f, const float *p, const int32_t *top1, int D)
{
    f->D = D < ARB_ENTFEAT_D ? D : ARB_ENTFEAT_D;
    f->g[0] = f->p0;
    f->s_sum = f->p0;
    f->s_lit = f->p0;
    for (int d = 1; d <= f->D; d++) {
        f->p[d - 1] = p[d - 1];
        f->top1[d - 1] = top1[d - 1];
        f->g[d] = f->g[d - 1] * p[d - 1];
        f->s_sum += f->g[d];
        f->s_lit = f->g[d] > f->s_lit ? f->g[d] : f->s_lit; /* = p0: every factor <= 1 */
    }
    f->s_gD = f->g[f->D];
    f->s = f->kind == ARB_ENTFEAT_GD ? f->s_gD : f->kind == ARB_ENTFEAT_SUM ? f->s_sum : f->s_lit;
}

void arb_entfeat_accepted(arb_entfeat *f, const int32_t *tok, int n)
{
    /* head agreement [CHOICE]: over the depths with a committed token, the share where this
       step's rank-0 head token equals it */
    int m = n < f->D ? n : f->D, agree = 0;
    for (int d = 0; d < m; d++)
        agree += f->top1[d] == tok[d];
    f->head_agree = m ? (double)agree / m : 0;
    f->acc_ema = f->n_steps == 0 ? n : (2.0 / 9) * n + (7.0 / 9) * f->acc_ema;
    f->hist[f->n_steps % ARB_ENTFEAT_HIST] = n;
    f->n_steps++;
    for (int j = 0; j < 3; j++) {
        int k = last_k[j] < f->n_steps ? last_k[j] : f->n_steps;
        double s = 0, lo = 1e9, hi = -1e9;
        for (int i = 0; i < k; i++) {
            int v = f->hist[(f->n_steps - 1 - i) % ARB_ENTFEAT_HIST];
            s += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        f->acc_mean[j] = s / k, f->acc_min[j] = lo, f->acc_max[j] = hi;
    }
}

int arb_entfeat_json(const arb_entfeat *f, char *buf, int cap)
{
    int n = snprintf(buf, (size_t)cap, "\"s_lit\":%.6g,\"s_gD\":%.6g,\"s_sum\":%.6g,\"p0\":%.6g,\"p_d\":[", f->s_lit,
                     f->s_gD, f->s_sum, f->p0);
    for (int d = 0; d < f->D && n < cap; d++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s%.6g", d ? "," : "", f->p[d]);
    if (n < cap)
        n += snprintf(buf + n, (size_t)(cap - n), "],\"H_t\":%.6g,\"H_ema\":[", f->H);
    for (int j = 0; j < ARB_ENTFEAT_EMA && n < cap; j++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s%.6g", j ? "," : "", f->H_ema[j]);
    if (n < cap)
        n += snprintf(buf + n, (size_t)(cap - n),
                      "],\"acc_ema\":%.6g,\"acc_last_k\":[[%.4g,%g,%g],[%.4g,%g,%g],[%.4g,%g,%g]],\"head_agree\":%.4g",
                      f->acc_ema, f->acc_mean[0], f->acc_min[0], f->acc_max[0], f->acc_mean[1], f->acc_min[1],
                      f->acc_max[1], f->acc_mean[2], f->acc_min[2], f->acc_max[2], f->head_agree);
    return n < cap ? n : -1;
}
