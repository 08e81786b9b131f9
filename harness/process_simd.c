/* process_simd.c — PROCESS's and SAMPLE's passes at three widths (process_simd.h).
 *
 * The scalar loops below are the reference (the code PROCESS and SAMPLE ran before these
 * existed). The vector passes, written once in process_simd_body.h and instantiated for AVX2
 * and AVX-512, apply the same operation to each element (a product, a maximum that keeps its
 * accumulator on ties and NaN like `a > m ? a : m`, a difference, vexp's exp, a quotient: each
 * correctly rounded, so the same bits), and the normalizing sum keeps eight partial sums
 * whatever the width: element x goes to partial x % 8 in order. Each vector pass covers a
 * prefix of the row; the scalar reference finishes it. */
#include "process_simd.h"

#include <math.h>

#include "vexp_int.h"

int arb_proc_isa_best(void)
{
    if (__builtin_cpu_supports("avx512f"))
        return ARB_PROC_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ARB_PROC_AVX2;
    return ARB_PROC_SCALAR;
}

bool arb_proc_isa_ok(int isa) { return isa >= ARB_PROC_SCALAR && isa <= arb_proc_isa_best(); }

/* One width's passes (process_simd_body.h): each returns where it stopped. */
typedef struct proc_impl {
    int (*scale_max)(const float *z, int V, double invT, double *pi, double *m);
    int (*exp_sum)(double *pi, int V, double m, double part[8]);
    int (*fmax)(const float *z, int V, double *m);
    int (*scale_exp_sum)(const float *z, int V, double invT, double m, double *pi, double part[8]);
    int (*div_count)(double *pi, int V, double S, int *n);
    int (*mass_above)(const double *e, int V, const double th[4], double mass[4]);
    int (*collect)(const double *pi, int V, double t, int32_t *idx, int *n);
    int (*keep)(double *pi, int V, double S);
    int (*seq_sum)(const double *w, int V, double *S);
    int (*seq_pick)(const double *w, int V, double t, double *c, int *last, int *got);
    int (*residual_sum)(const double *x, double a, const double *y, double ys, int V, double *r, double *S);
} proc_impl;

/* Each width's section is compiled for its ISA: GCC's push_options / target pragmas, and for
   clang (which ignores those; the libFuzzer build of tests/fuzz compiles this file with it)
   the same target through `#pragma clang attribute` on every function of the section. */
#define PS_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define PS_SECTION_BEGIN(isa) PS_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define PS_SECTION_END PS_PRAGMA(clang attribute pop)
#else
#define PS_SECTION_BEGIN(isa) PS_PRAGMA(GCC push_options) PS_PRAGMA(GCC target(isa))
#define PS_SECTION_END PS_PRAGMA(GCC pop_options)
#endif
PS_SECTION_BEGIN("avx2,fma")
/* s + the lanes of t in order, each a scalar add (add_sd) */
static inline __m128d add_lanes4(__m128d s, __m256d t)
{
    const __m128d a = _mm256_castpd256_pd128(t), b = _mm256_extractf128_pd(t, 1);
    s = _mm_add_sd(s, a);
    s = _mm_add_sd(s, _mm_unpackhi_pd(a, a));
    s = _mm_add_sd(s, b);
    return _mm_add_sd(s, _mm_unpackhi_pd(b, b));
}
#define PS_ADD_LANES(s, v) add_lanes4(s, v)
#define PS_T __m256d
#define PS_W 4
#define PS_PFX _mm256_
#define PS_SFX _avx2
#define PS_LOADF(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define PS_MASK(a, b, op) ((unsigned)_mm256_movemask_pd(_mm256_cmp_pd(a, b, op)))
#define PS_NEG_OR_ZERO(v, q) _mm256_and_pd(_mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_LT_OQ), q)
#define PS_KEEP_GE(v, t) _mm256_and_pd(_mm256_cmp_pd(v, t, _CMP_GE_OQ), v)
#define PS_KEEP_GT0(v) _mm256_and_pd(_mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_GT_OQ), v)
#define PS_VEXP(v) vexp4(v)
#define PS_VEXP_OK(v) vexp4_in_range(v)
#include "process_simd_body.h"
PS_SECTION_END

PS_SECTION_BEGIN("avx512f,avx2,fma") /* avx2,fma too: add_lanes4 inlines into this section */
static inline __m128d add_lanes8(__m128d s, __m512d t)
{
    return add_lanes4(add_lanes4(s, _mm512_castpd512_pd256(t)), _mm512_extractf64x4_pd(t, 1));
}
#define PS_ADD_LANES(s, v) add_lanes8(s, v)
#define PS_T __m512d
#define PS_W 8
#define PS_PFX _mm512_
#define PS_SFX _avx512
#define PS_LOADF(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define PS_MASK(a, b, op) ((unsigned)_mm512_cmp_pd_mask(a, b, op))
#define PS_NEG_OR_ZERO(v, q) _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_LT_OQ), q)
#define PS_KEEP_GE(v, t) _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(v, t, _CMP_GE_OQ), v)
#define PS_KEEP_GT0(v) _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ), v)
#define PS_VEXP(v) vexp8(v)
#define PS_VEXP_OK(v) vexp8_in_range(v)
#include "process_simd_body.h"
PS_SECTION_END

/* the vector passes of isa, or NULL for the scalar path */
static const proc_impl *impl_of(int isa)
{
    return isa == ARB_PROC_AVX512 ? &proc_avx512 : isa == ARB_PROC_AVX2 ? &proc_avx2 : NULL;
}

double arb_proc_scale_max(int isa, const float *z, int V, double invT, double *pi)
{
    const proc_impl *p = impl_of(isa);
    double m = -INFINITY;
    for (int x = p ? p->scale_max(z, V, invT, pi, &m) : 0; x < V; x++) {
        pi[x] = (double)z[x] * invT;
        m = pi[x] > m ? pi[x] : m;
    }
    return m;
}

double arb_proc_exp_sum(int isa, double *pi, int V, double m)
{
    const proc_impl *p = impl_of(isa);
    double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int x = p ? p->exp_sum(pi, V, m, part) : 0; x < V; x++) {
        pi[x] = arb_vexp1(pi[x] - m);
        part[x % 8] += pi[x];
    }
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

double arb_proc_fmax(int isa, const float *z, int V)
{
    const proc_impl *p = impl_of(isa);
    double m = -INFINITY;
    for (int x = p ? p->fmax(z, V, &m) : 0; x < V; x++)
        m = (double)z[x] > m ? (double)z[x] : m;
    return m;
}

double arb_proc_scale_exp_sum(int isa, const float *z, int V, double invT, double m, double *pi)
{
    const proc_impl *p = impl_of(isa);
    double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int x = p ? p->scale_exp_sum(z, V, invT, m, pi, part) : 0; x < V; x++) {
        pi[x] = arb_vexp1((double)z[x] * invT - m);
        part[x % 8] += pi[x];
    }
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

int arb_proc_div_count(int isa, double *pi, int V, double S)
{
    const proc_impl *p = impl_of(isa);
    int n = 0;
    for (int x = p ? p->div_count(pi, V, S, &n) : 0; x < V; x++) {
        pi[x] /= S;
        n += pi[x] > 0;
    }
    return n;
}

void arb_proc_mass_above(int isa, const double *e, int V, const double th[4], double mass[4])
{
    const proc_impl *p = impl_of(isa);
    for (int j = 0; j < 4; j++)
        mass[j] = 0;
    for (int x = p ? p->mass_above(e, V, th, mass) : 0; x < V; x++)
        for (int j = 0; j < 4; j++)
            mass[j] += e[x] >= th[j] ? e[x] : 0.0;
}

double arb_proc_residual_sum(int isa, const double *x, double a, const double *y, double ys, int V, double *r,
                             double S)
{
    const proc_impl *p = impl_of(isa);
    for (int i = p ? p->residual_sum(x, a, y, ys, V, r, &S) : 0; i < V; i++) {
        const double d = a * x[i] - y[i] * ys, t = d > 0 ? d : 0.0;
        if (r)
            r[i] = t;
        S += t;
    }
    return S;
}

int arb_proc_collect(int isa, const double *pi, int V, double t, int32_t *idx)
{
    const proc_impl *p = impl_of(isa);
    int n = 0;
    for (int x = p ? p->collect(pi, V, t, idx, &n) : 0; x < V; x++)
        if (pi[x] >= t && pi[x] > 0)
            idx[n++] = x;
    return n;
}

void arb_proc_keep(int isa, double *pi, int V, double S)
{
    const proc_impl *p = impl_of(isa);
    for (int x = p ? p->keep(pi, V, S) : 0; x < V; x++)
        pi[x] = pi[x] < 0 ? -pi[x] / S : 0.0;
}

double arb_proc_seq_sum(int isa, const double *w, int V)
{
    const proc_impl *p = impl_of(isa);
    double S = 0;
    for (int x = p ? p->seq_sum(w, V, &S) : 0; x < V; x++)
        S += w[x];
    return S;
}

double arb_proc_seq_sum_marks(int isa, const double *w, int V, int C, double *mark)
{
    const proc_impl *p = impl_of(isa);
    double S = 0;
    for (int x0 = 0, k = 0; x0 < V; x0 += C, k++) {
        mark[k] = S;
        const int n = V - x0 < C ? V - x0 : C;
        for (int x = p ? p->seq_sum(w + x0, n, &S) : 0; x < n; x++)
            S += w[x0 + x];
    }
    return S;
}

int arb_proc_seq_pick_from(int isa, const double *w, int V, int x0, double c, double t)
{
    const proc_impl *p = impl_of(isa);
    int got = -1, last = -1;
    int x = x0 + (p ? p->seq_pick(w + x0, V - x0, t, &c, &last, &got) : 0);
    if (got >= 0)
        return x0 + got;
    for (; x < V; x++) {
        c += w[x];
        if (w[x] > 0 && t < c)
            return x;
    }
    return -1;
}

int arb_proc_seq_pick(int isa, const double *w, int V, double t, int *last)
{
    const proc_impl *p = impl_of(isa);
    double c = 0;
    int got = -1;
    *last = -1;
    int x = p ? p->seq_pick(w, V, t, &c, last, &got) : 0;
    if (got >= 0)
        return got;
    for (; x < V; x++) {
        c += w[x];
        if (w[x] > 0) {
            *last = x;
            if (t < c)
                return x;
        }
    }
    return -1;
}
