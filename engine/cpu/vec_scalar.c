/* vec_scalar.c — the reference vector kernels (vec_int.h): plain C, any CPU. The SIMD
 * families reproduce these operations lane for lane. */
#include "vec_int.h"

static void scores_scalar(const float *const *q, int nh, const float *k, int stride, const int32_t *rows,
                          int n_keys, int hd, float scale, float *const *s)
{
    for (int h = 0; h < nh; h++)
        for (int j = 0; j < n_keys; j++)
            s[h][j] = arb_dot_f32(q[h], k + (size_t)rows[j] * stride, hd) * scale;
}

static void wsum_scalar(const float *v, int stride, const int32_t *rows, const float *const *p, int nh,
                        int n_keys, int hd, float *const *out, int acc)
{
    for (int h = 0; h < nh; h++) {
        for (int d = 0; d < hd && !acc; d++)
            out[h][d] = 0.0f;
        for (int j = 0; j < n_keys; j++) {
            const float *vr = v + (size_t)rows[j] * stride;
            for (int d = 0; d < hd; d++)
                out[h][d] = fmaf(p[h][j], vr[d], out[h][d]);
        }
    }
}

static void exp_scalar(float *s, int n, float mx)
{
    for (int j = 0; j < n; j++)
        s[j] = arb_exp_f32(s[j] - mx);
}

static void swiglu_scalar(float *g, const float *u, size_t i0, size_t i1)
{
    for (size_t i = i0; i < i1; i++)
        g[i] = arb_swiglu_f32(g[i], u[i]);
}

static void geglu_scalar(float *g, const float *u, size_t i0, size_t i1)
{
    for (size_t i = i0; i < i1; i++)
        g[i] = arb_geglu_f32(g[i], u[i]);
}

const vec_impl arb_vec_scalar = {
    .name = "scalar",
    .scores = scores_scalar,
    .wsum = wsum_scalar,
    .exp = exp_scalar,
    .max = arb_max_ref,
    .sum = arb_sum_ref,
    .sumsq = arb_sumsq_ref,
    .swiglu = swiglu_scalar,
    .geglu = geglu_scalar,
};

/* ---------------------------------------------------------------- selection */

#include <string.h>

#include "cpuinfo.h"

int arb_vec_supported(const vec_impl *k)
{
    if (!k->scores) /* a family not compiled for this architecture */
        return 0;
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    if (k == &arb_vec_avx512)
        return ci.avx2 && ci.fma && ci.avx512f;
    if (k == &arb_vec_avx2)
        return ci.avx2 && ci.fma;
    return k == &arb_vec_scalar;
}

const vec_impl *arb_vec_select(const char *family)
{
    if (family && !strcmp(family, "scalar"))
        return &arb_vec_scalar;
    if (family && !strcmp(family, "avx2") && arb_vec_supported(&arb_vec_avx2))
        return &arb_vec_avx2;
    return arb_vec_supported(&arb_vec_avx512) ? &arb_vec_avx512
           : arb_vec_supported(&arb_vec_avx2) ? &arb_vec_avx2
                                               : &arb_vec_scalar;
}
