/* process_simd.c — PROCESS's pointwise passes at three widths (process_simd.h).
 *
 * The scalar functions are the reference (the code PROCESS ran before these existed); the
 * AVX2 and AVX-512 ones apply the same operation to each element (a product, a maximum
 * that keeps its accumulator on ties and NaN like `a > m ? a : m`, a difference, vexp's
 * exp, a quotient: each correctly rounded, so the same bits), and the sum keeps eight
 * partial sums whatever the width: element x goes to partial x % 8 in order, AVX2 holding
 * partials 0-3 and 4-7 in two registers, AVX-512 all eight in one. */
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

/* ---- scalar (the reference) ---- */

static double scale_max_scalar(const float *z, int x0, int V, double invT, double *pi, double m)
{
    for (int x = x0; x < V; x++) {
        pi[x] = (double)z[x] * invT;
        m = pi[x] > m ? pi[x] : m;
    }
    return m;
}

/* elements x0.. of the row into the partial sums part[x % 8] */
static void exp_sum_scalar(double *pi, int x0, int V, double m, double part[8])
{
    for (int x = x0; x < V; x++) {
        pi[x] = arb_vexp1(pi[x] - m);
        part[x % 8] += pi[x];
    }
}

static double combine(const double p[8])
{
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* ---- AVX2 ---- */

__attribute__((target("avx2,fma"))) static double scale_max_avx2(const float *z, int V, double invT, double *pi)
{
    const __m256d it = _mm256_set1_pd(invT);
    __m256d mv = _mm256_set1_pd(-INFINITY);
    int x = 0;
    for (; x + 4 <= V; x += 4) {
        const __m256d v = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(z + x)), it);
        _mm256_storeu_pd(pi + x, v);
        mv = _mm256_max_pd(v, mv); /* NaN or equal: the second operand, the accumulator */
    }
    double l[4];
    _mm256_storeu_pd(l, mv);
    double m = -INFINITY;
    for (int k = 0; k < 4; k++) /* the lanes' maxima are values of the row: any order gives the max */
        m = l[k] > m ? l[k] : m;
    return scale_max_scalar(z, x, V, invT, pi, m);
}

__attribute__((target("avx2,fma"))) static double exp_sum_avx2(double *pi, int V, double m)
{
    const __m256d mv = _mm256_set1_pd(m);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(); /* partials 0-3, 4-7 */
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        __m256d a = _mm256_sub_pd(_mm256_loadu_pd(pi + x), mv), b = _mm256_sub_pd(_mm256_loadu_pd(pi + x + 4), mv);
        if (vexp4_in_range(a))
            a = vexp4(a);
        else {
            double t[4];
            _mm256_storeu_pd(t, a);
            for (int k = 0; k < 4; k++)
                t[k] = arb_vexp1(t[k]);
            a = _mm256_loadu_pd(t);
        }
        if (vexp4_in_range(b))
            b = vexp4(b);
        else {
            double t[4];
            _mm256_storeu_pd(t, b);
            for (int k = 0; k < 4; k++)
                t[k] = arb_vexp1(t[k]);
            b = _mm256_loadu_pd(t);
        }
        _mm256_storeu_pd(pi + x, a);
        _mm256_storeu_pd(pi + x + 4, b);
        s0 = _mm256_add_pd(s0, a);
        s1 = _mm256_add_pd(s1, b);
    }
    double part[8];
    _mm256_storeu_pd(part, s0);
    _mm256_storeu_pd(part + 4, s1);
    exp_sum_scalar(pi, x, V, m, part);
    return combine(part);
}

__attribute__((target("avx2,fma"))) static void div_avx2(double *pi, int V, double S)
{
    const __m256d sv = _mm256_set1_pd(S);
    int x = 0;
    for (; x + 4 <= V; x += 4)
        _mm256_storeu_pd(pi + x, _mm256_div_pd(_mm256_loadu_pd(pi + x), sv));
    for (; x < V; x++)
        pi[x] /= S;
}

/* ---- AVX-512 ---- */

__attribute__((target("avx512f"))) static double scale_max_avx512(const float *z, int V, double invT, double *pi)
{
    const __m512d it = _mm512_set1_pd(invT);
    __m512d mv = _mm512_set1_pd(-INFINITY);
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        const __m512d v = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(z + x)), it);
        _mm512_storeu_pd(pi + x, v);
        mv = _mm512_max_pd(v, mv);
    }
    double l[8];
    _mm512_storeu_pd(l, mv);
    double m = -INFINITY;
    for (int k = 0; k < 8; k++)
        m = l[k] > m ? l[k] : m;
    return scale_max_scalar(z, x, V, invT, pi, m);
}

__attribute__((target("avx512f"))) static double exp_sum_avx512(double *pi, int V, double m)
{
    const __m512d mv = _mm512_set1_pd(m);
    __m512d s = _mm512_setzero_pd(); /* lane k: partial k */
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        __m512d a = _mm512_sub_pd(_mm512_loadu_pd(pi + x), mv);
        if (vexp8_in_range(a))
            a = vexp8(a);
        else {
            double t[8];
            _mm512_storeu_pd(t, a);
            for (int k = 0; k < 8; k++)
                t[k] = arb_vexp1(t[k]);
            a = _mm512_loadu_pd(t);
        }
        _mm512_storeu_pd(pi + x, a);
        s = _mm512_add_pd(s, a);
    }
    double part[8];
    _mm512_storeu_pd(part, s);
    exp_sum_scalar(pi, x, V, m, part);
    return combine(part);
}

__attribute__((target("avx512f"))) static void div_avx512(double *pi, int V, double S)
{
    const __m512d sv = _mm512_set1_pd(S);
    int x = 0;
    for (; x + 8 <= V; x += 8)
        _mm512_storeu_pd(pi + x, _mm512_div_pd(_mm512_loadu_pd(pi + x), sv));
    for (; x < V; x++)
        pi[x] /= S;
}

/* ---- top-p's passes ---- */

static double max_scalar(const double *pi, int x0, int V, double m)
{
    for (int x = x0; x < V; x++)
        if (pi[x] > m)
            m = pi[x];
    return m;
}

static int collect_scalar(const double *pi, int x0, int V, double t, int32_t *idx, int n)
{
    for (int x = x0; x < V; x++)
        if (pi[x] >= t && pi[x] > 0)
            idx[n++] = x;
    return n;
}

static void keep_scalar(double *pi, int x0, int V, double S)
{
    for (int x = x0; x < V; x++)
        pi[x] = pi[x] < 0 ? -pi[x] / S : 0.0;
}

static int count_pos_scalar(const double *pi, int x0, int V, int n)
{
    for (int x = x0; x < V; x++)
        n += pi[x] > 0;
    return n;
}

__attribute__((target("avx2,fma"))) static double max_avx2(const double *pi, int V)
{
    __m256d mv = _mm256_setzero_pd();
    int x = 0;
    for (; x + 4 <= V; x += 4)
        mv = _mm256_max_pd(_mm256_loadu_pd(pi + x), mv);
    double l[4];
    _mm256_storeu_pd(l, mv);
    return max_scalar(pi, x, V, max_scalar(l, 0, 4, 0.0));
}

__attribute__((target("avx2,fma"))) static int collect_avx2(const double *pi, int V, double t, int32_t *idx)
{
    const __m256d tv = _mm256_set1_pd(t), z = _mm256_setzero_pd();
    int n = 0, x = 0;
    for (; x + 4 <= V; x += 4) {
        const __m256d v = _mm256_loadu_pd(pi + x);
        int bits = _mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(v, tv, _CMP_GE_OQ), _mm256_cmp_pd(v, z, _CMP_GT_OQ)));
        for (; bits; bits &= bits - 1)
            idx[n++] = x + __builtin_ctz((unsigned)bits);
    }
    return collect_scalar(pi, x, V, t, idx, n);
}

__attribute__((target("avx2,fma"))) static void keep_avx2(double *pi, int V, double S)
{
    const __m256d sv = _mm256_set1_pd(S), z = _mm256_setzero_pd();
    int x = 0;
    for (; x + 4 <= V; x += 4) {
        const __m256d v = _mm256_loadu_pd(pi + x);
        const __m256d q = _mm256_div_pd(_mm256_sub_pd(z, v), sv); /* -v / S (0 - v = -v for v < 0) */
        _mm256_storeu_pd(pi + x, _mm256_and_pd(_mm256_cmp_pd(v, z, _CMP_LT_OQ), q));
    }
    keep_scalar(pi, x, V, S);
}

__attribute__((target("avx2,fma"))) static int count_pos_avx2(const double *pi, int V)
{
    const __m256d z = _mm256_setzero_pd();
    int n = 0, x = 0;
    for (; x + 4 <= V; x += 4)
        n += __builtin_popcount((unsigned)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(pi + x), z, _CMP_GT_OQ)));
    return count_pos_scalar(pi, x, V, n);
}

__attribute__((target("avx512f"))) static double max_avx512(const double *pi, int V)
{
    __m512d mv = _mm512_setzero_pd();
    int x = 0;
    for (; x + 8 <= V; x += 8)
        mv = _mm512_max_pd(_mm512_loadu_pd(pi + x), mv);
    double l[8];
    _mm512_storeu_pd(l, mv);
    return max_scalar(pi, x, V, max_scalar(l, 0, 8, 0.0));
}

__attribute__((target("avx512f"))) static int collect_avx512(const double *pi, int V, double t, int32_t *idx)
{
    const __m512d tv = _mm512_set1_pd(t), z = _mm512_setzero_pd();
    const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int n = 0, x = 0;
    for (; x + 8 <= V; x += 8) {
        const __m512d v = _mm512_loadu_pd(pi + x);
        const __mmask8 k = _mm512_cmp_pd_mask(v, tv, _CMP_GE_OQ) & _mm512_cmp_pd_mask(v, z, _CMP_GT_OQ);
        if (k) {
            const __m512i ids = _mm512_castsi256_si512(_mm256_add_epi32(_mm256_set1_epi32(x), step));
            _mm512_mask_compressstoreu_epi32(idx + n, (__mmask16)k, ids);
            n += __builtin_popcount((unsigned)k);
        }
    }
    return collect_scalar(pi, x, V, t, idx, n);
}

__attribute__((target("avx512f"))) static void keep_avx512(double *pi, int V, double S)
{
    const __m512d sv = _mm512_set1_pd(S), z = _mm512_setzero_pd();
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        const __m512d v = _mm512_loadu_pd(pi + x);
        const __mmask8 neg = _mm512_cmp_pd_mask(v, z, _CMP_LT_OQ);
        _mm512_storeu_pd(pi + x, _mm512_maskz_div_pd(neg, _mm512_sub_pd(z, v), sv));
    }
    keep_scalar(pi, x, V, S);
}

__attribute__((target("avx512f"))) static int count_pos_avx512(const double *pi, int V)
{
    const __m512d z = _mm512_setzero_pd();
    int n = 0, x = 0;
    for (; x + 8 <= V; x += 8)
        n += __builtin_popcount((unsigned)_mm512_cmp_pd_mask(_mm512_loadu_pd(pi + x), z, _CMP_GT_OQ));
    return count_pos_scalar(pi, x, V, n);
}

/* ---- SAMPLE's scans ---- */

/* Lanes of w[x..x+8) that are not exact zeros (NaN included), as a bit mask. */
__attribute__((target("avx2,fma"))) static inline unsigned nonzero8_avx2(const double *w)
{
    const __m256d z = _mm256_setzero_pd();
    const unsigned a = (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(w), z, _CMP_NEQ_UQ));
    const unsigned b = (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(w + 4), z, _CMP_NEQ_UQ));
    return a | b << 4;
}
__attribute__((target("avx512f"))) static inline unsigned nonzero8_avx512(const double *w)
{
    return (unsigned)_mm512_cmp_pd_mask(_mm512_loadu_pd(w), _mm512_setzero_pd(), _CMP_NEQ_UQ);
}

/* The scans over whole 8-blocks from x = 0 (the caller finishes the tail), one body per width
   so that the mask test inlines: a dense block is the plain chain, a sparse one its set bits. */
#define SEQ_SCANS(SFX, TARGET)                                                                      \
    TARGET static double seq_sum_##SFX(const double *w, int V, int *x_end)                         \
    {                                                                                              \
        double S = 0;                                                                              \
        int x = 0;                                                                                 \
        for (; x + 8 <= V; x += 8) {                                                               \
            unsigned m = nonzero8_##SFX(w + x);                                                    \
            if (m == 0xff)                                                                         \
                for (int k = 0; k < 8; k++)                                                        \
                    S += w[x + k];                                                                 \
            else                                                                                   \
                for (; m; m &= m - 1)                                                              \
                    S += w[x + __builtin_ctz(m)];                                                  \
        }                                                                                          \
        *x_end = x;                                                                                \
        return S;                                                                                  \
    }                                                                                              \
    TARGET static int seq_pick_##SFX(const double *w, int V, double t, double *c_io, int *last, int *x_end) \
    {                                                                                              \
        double c = *c_io;                                                                          \
        int x = 0;                                                                                 \
        for (; x + 8 <= V; x += 8)                                                                 \
            for (unsigned m = nonzero8_##SFX(w + x); m; m &= m - 1) {                              \
                const int i = x + __builtin_ctz(m);                                                \
                c += w[i];                                                                         \
                if (w[i] > 0) {                                                                    \
                    *last = i;                                                                     \
                    if (t < c)                                                                     \
                        return i;                                                                  \
                }                                                                                  \
            }                                                                                      \
        *c_io = c;                                                                                 \
        *x_end = x;                                                                                \
        return -1;                                                                                 \
    }
SEQ_SCANS(avx2, __attribute__((target("avx2,fma"))))
SEQ_SCANS(avx512, __attribute__((target("avx512f"))))
#undef SEQ_SCANS

double arb_proc_seq_sum(int isa, const double *w, int V)
{
    double S = 0;
    int x = 0;
    if (isa == ARB_PROC_AVX512)
        S = seq_sum_avx512(w, V, &x);
    else if (isa == ARB_PROC_AVX2)
        S = seq_sum_avx2(w, V, &x);
    for (; x < V; x++)
        S += w[x];
    return S;
}

int arb_proc_seq_pick(int isa, const double *w, int V, double t, int *last)
{
    double c = 0;
    int x = 0, got = -1;
    *last = -1;
    if (isa == ARB_PROC_AVX512)
        got = seq_pick_avx512(w, V, t, &c, last, &x);
    else if (isa == ARB_PROC_AVX2)
        got = seq_pick_avx2(w, V, t, &c, last, &x);
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

/* ---- dispatch ---- */

double arb_proc_max(int isa, const double *pi, int V)
{
    return isa == ARB_PROC_AVX512 ? max_avx512(pi, V) : isa == ARB_PROC_AVX2 ? max_avx2(pi, V) : max_scalar(pi, 0, V, 0.0);
}

int arb_proc_collect(int isa, const double *pi, int V, double t, int32_t *idx)
{
    return isa == ARB_PROC_AVX512 ? collect_avx512(pi, V, t, idx)
           : isa == ARB_PROC_AVX2 ? collect_avx2(pi, V, t, idx)
                                  : collect_scalar(pi, 0, V, t, idx, 0);
}

void arb_proc_keep(int isa, double *pi, int V, double S)
{
    if (isa == ARB_PROC_AVX512)
        keep_avx512(pi, V, S);
    else if (isa == ARB_PROC_AVX2)
        keep_avx2(pi, V, S);
    else
        keep_scalar(pi, 0, V, S);
}

int arb_proc_count_pos(int isa, const double *pi, int V)
{
    return isa == ARB_PROC_AVX512 ? count_pos_avx512(pi, V)
           : isa == ARB_PROC_AVX2 ? count_pos_avx2(pi, V)
                                  : count_pos_scalar(pi, 0, V, 0);
}

double arb_proc_scale_max(int isa, const float *z, int V, double invT, double *pi)
{
    switch (isa) {
    case ARB_PROC_AVX512: return scale_max_avx512(z, V, invT, pi);
    case ARB_PROC_AVX2: return scale_max_avx2(z, V, invT, pi);
    default: return scale_max_scalar(z, 0, V, invT, pi, -INFINITY);
    }
}

double arb_proc_exp_sum(int isa, double *pi, int V, double m)
{
    switch (isa) {
    case ARB_PROC_AVX512: return exp_sum_avx512(pi, V, m);
    case ARB_PROC_AVX2: return exp_sum_avx2(pi, V, m);
    default: {
        double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        exp_sum_scalar(pi, 0, V, m, part);
        return combine(part);
    }
    }
}

void arb_proc_div(int isa, double *pi, int V, double S)
{
    switch (isa) {
    case ARB_PROC_AVX512: div_avx512(pi, V, S); break;
    case ARB_PROC_AVX2: div_avx2(pi, V, S); break;
    default:
        for (int x = 0; x < V; x++)
            pi[x] /= S;
        break;
    }
}
