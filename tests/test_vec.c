/* test_vec.c — the CPU vector kernels (engine/cpu/vec_int.h): every family this CPU
 * runs gives the scalar family's bits, on random data with lengths that exercise the
 * full-vector blocks, the single-vector steps and the scalar tails; and the reference
 * formulas themselves are accurate (exp within a few ulp of libm). Bit equality is the
 * contract that lets the backend pick a family for speed alone. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/vec_int.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static float rndf(void) /* [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(uint32_t)(rng_state >> 33) / 1073741824.0f - 1.0f;
}

static const vec_impl *const families[] = {&arb_vec_avx2, &arb_vec_avx512};
#define N_FAMILIES 2

static void fill(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rndf() * scale;
}


static int bits_equal(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }

Test(vec, exp_matches_scalar_bits)
{
    const int lens[] = {1, 7, 8, 15, 16, 17, 31, 33, 100, 513};
    float src[513], ref[513], got[513];
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!arb_vec_supported(families[f]))
            continue;
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            const int n = lens[li];
            fill(src, (size_t)n, 40.0f); /* reaches the clamp at -87.3 below mx */
            const float mx = 45.0f;
            memcpy(ref, src, sizeof src);
            memcpy(got, src, sizeof src);
            arb_vec_scalar.exp(ref, n, mx);
            families[f]->exp(got, n, mx);
            cr_assert(bits_equal(ref, got, (size_t)n), "%s exp differs from scalar at n=%d", families[f]->name, n);
        }
    }
}

/* The softmax's max and sum: lengths around the 8-lane grid, and maxima that are signed
   zeros (the lane order decides which zero wins; it must be the scalar order). */
Test(vec, max_and_sum_match_scalar_bits)
{
    const int lens[] = {1, 3, 8, 9, 16, 23, 64, 65, 513};
    float x[513];
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!arb_vec_supported(families[f]))
            continue;
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            const int n = lens[li];
            for (int zeros = 0; zeros < 2; zeros++) {
                fill(x, (size_t)n, 30.0f);
                if (zeros) /* everything <= 0, with +0 and -0 scattered: the max is a zero */
                    for (int j = 0; j < n; j++)
                        x[j] = j % 5 == 2 ? 0.0f : j % 7 == 3 ? -0.0f : -fabsf(x[j]);
                const float mr = arb_vec_scalar.max(x, n), mg = families[f]->max(x, n);
                cr_assert(bits_equal(&mr, &mg, 1), "%s max differs at n=%d (zeros %d): %a vs %a",
                          families[f]->name, n, zeros, (double)mr, (double)mg);
                const float sr = arb_vec_scalar.sum(x, n), sg = families[f]->sum(x, n);
                cr_assert(bits_equal(&sr, &sg, 1), "%s sum differs at n=%d: %a vs %a", families[f]->name, n,
                          (double)sr, (double)sg);
            }
        }
    }
}

Test(vec, swiglu_matches_scalar_bits)
{
    const size_t n = 1000;
    float g0[1000], u[1000], ref[1000], got[1000];
    fill(g0, n, 12.0f);
    fill(u, n, 3.0f);
    g0[0] = 0.0f, g0[1] = -0.0f, g0[2] = -100.0f, g0[3] = 100.0f; /* signed zeros, saturation */
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!arb_vec_supported(families[f]))
            continue;
        /* ranges that start and end off the vector grid */
        const size_t ranges[][2] = {{0, n}, {3, 997}, {5, 6}, {16, 48}, {17, 50}};
        for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
            memcpy(ref, g0, sizeof g0);
            memcpy(got, g0, sizeof g0);
            arb_vec_scalar.swiglu(ref, u, ranges[r][0], ranges[r][1]);
            families[f]->swiglu(got, u, ranges[r][0], ranges[r][1]);
            cr_assert(bits_equal(ref, got, n), "%s swiglu differs on [%zu, %zu)", families[f]->name,
                      ranges[r][0], ranges[r][1]);
        }
    }
}

/* GeGLU (Gemma): the same contract as SwiGLU, and the reference formula is the tanh GELU
   (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) to a few ulp in double. */
Test(vec, geglu_matches_scalar_bits_and_the_tanh_formula)
{
    const size_t n = 1000;
    float g0[1000], u[1000], ref[1000], got[1000];
    fill(g0, n, 12.0f);
    fill(u, n, 3.0f);
    g0[0] = 0.0f, g0[1] = -0.0f, g0[2] = -100.0f, g0[3] = 100.0f, g0[4] = 1e-30f, g0[5] = -1e-30f;
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!arb_vec_supported(families[f]))
            continue;
        const size_t ranges[][2] = {{0, n}, {3, 997}, {5, 6}, {16, 48}, {17, 50}};
        for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
            memcpy(ref, g0, sizeof g0);
            memcpy(got, g0, sizeof g0);
            arb_vec_scalar.geglu(ref, u, ranges[r][0], ranges[r][1]);
            families[f]->geglu(got, u, ranges[r][0], ranges[r][1]);
            cr_assert(bits_equal(ref, got, n), "%s geglu differs on [%zu, %zu)", families[f]->name,
                      ranges[r][0], ranges[r][1]);
        }
    }
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = g0[i];
        const double want = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i];
        const double got1 = arb_geglu_f32(g0[i], u[i]);
        const double err = fabs(got1 - want) / fmax(fabs(want), 1e-30);
        if (fabs(want) > 1e-6)
            worst = fmax(worst, err);
    }
    cr_assert_lt(worst, 1e-5, "geglu relative error %g", worst);
    cr_assert_eq(arb_geglu_f32(0.0f, 1.0f), 0.0f);
    cr_assert_lt(fabsf(arb_geglu_f32(-100.0f, 1.0f)), 1e-30f);
    cr_assert_eq(arb_geglu_f32(100.0f, 1.0f), 100.0f);
}

Test(vec, sumsq_matches_scalar_bits)
{
    float x[777];
    fill(x, 777, 5.0f);
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!arb_vec_supported(families[f]))
            continue;
        for (int n = 0; n <= 777; n += 37) {
            const double a = arb_vec_scalar.sumsq(x, n), b = families[f]->sumsq(x, n);
            cr_assert(!memcmp(&a, &b, sizeof a), "%s sumsq differs at n=%d", families[f]->name, n);
        }
    }
}

/* Attention: nh query rows (one node's heads of one KV head, or two nodes' heads: up to
   ARB_VEC_QROWS) over a scattered key list (as a tree node's ancestors are), head dims on and
   off the 8/16/64-float grids, key counts on and off the kernels' 8- and 16-key passes. Every
   family matches the scalar reference bitwise, and every row matches that row computed alone
   (the backend pairs tree nodes in one call on this property, backend_cpu.c). */
Test(vec, scores_and_wsum_match_scalar_bits)
{
    enum { N_ROWS = 70, STRIDE = 200, R = ARB_VEC_QROWS };
    const int hds[] = {64, 72, 36, 5};
    const int key_counts[] = {1, 7, 8, 9, 16, 24, 47, 70};
    float *kv = malloc(sizeof(float) * N_ROWS * STRIDE);
    cr_assert(kv);
    fill(kv, (size_t)N_ROWS * STRIDE, 1.0f);
    int32_t rows[N_ROWS];
    for (int j = 0; j < N_ROWS; j++)
        rows[j] = (j * 37) % N_ROWS; /* a permutation: keys out of storage order */
    float qb[R][72], sref[R][N_ROWS], sgot[R][N_ROWS], salone[N_ROWS];
    float oref[R][72], ogot[R][72], oalone[72];
    fill(&qb[0][0], sizeof qb / sizeof(float), 1.0f);
    const float *q[R];
    float *sr[R], *sg[R], *or_[R], *og[R];
    const float *p[R];
    for (int h = 0; h < R; h++)
        q[h] = qb[h], sr[h] = sref[h], sg[h] = sgot[h], or_[h] = oref[h], og[h] = ogot[h], p[h] = sref[h];
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!arb_vec_supported(families[f]))
            continue;
        for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
            for (int nh = 1; nh <= R; nh++)
                for (size_t ki = 0; ki < sizeof key_counts / sizeof *key_counts; ki++) {
                    const int hd = hds[hi], n_keys = key_counts[ki];
                    arb_vec_scalar.scores(q, nh, kv, STRIDE, rows, n_keys, hd, 0.125f, sr);
                    families[f]->scores(q, nh, kv, STRIDE, rows, n_keys, hd, 0.125f, sg);
                    for (int h = 0; h < nh; h++)
                        cr_assert(bits_equal(sref[h], sgot[h], (size_t)n_keys), "%s scores: hd %d nh %d keys %d",
                                  families[f]->name, hd, nh, n_keys);
                    arb_vec_scalar.wsum(kv + 3, STRIDE, rows, p, nh, n_keys, hd, or_, 0);
                    families[f]->wsum(kv + 3, STRIDE, rows, p, nh, n_keys, hd, og, 0);
                    for (int h = 0; h < nh; h++)
                        cr_assert(bits_equal(oref[h], ogot[h], (size_t)hd), "%s wsum: hd %d nh %d keys %d",
                                  families[f]->name, hd, nh, n_keys);
                    for (int h = 0; h < nh; h++) { /* row h alone: the same bits */
                        float *sa = salone, *oa = oalone;
                        families[f]->scores(q + h, 1, kv, STRIDE, rows, n_keys, hd, 0.125f, &sa);
                        cr_assert(bits_equal(sref[h], salone, (size_t)n_keys), "%s scores: row %d of %d alone",
                                  families[f]->name, h, nh);
                        families[f]->wsum(kv + 3, STRIDE, rows, p + h, 1, n_keys, hd, &oa, 0);
                        cr_assert(bits_equal(oref[h], oalone, (size_t)hd), "%s wsum: row %d of %d alone",
                                  families[f]->name, h, nh);
                    }
                }
    }
    free(kv);
}

/* wsum over a key list cut into consecutive pieces (acc set after the first) gives the
   bits of one call over the whole list, in every family: the backend streams shared
   prefix keys in blocks for several tree nodes on this property (backend_cpu.c). */
Test(vec, wsum_in_pieces_matches_one_call)
{
    enum { N_ROWS = 150, STRIDE = 200 };
    const int hds[] = {64, 72, 36, 5};
    const int cuts[][3] = {{64, 128, 150}, {1, 2, 150}, {37, 149, 150}, {0, 70, 150}}; /* piece ends */
    float *kv = malloc(sizeof(float) * N_ROWS * STRIDE);
    cr_assert(kv);
    fill(kv, (size_t)N_ROWS * STRIDE, 1.0f);
    int32_t rows[N_ROWS];
    for (int j = 0; j < N_ROWS; j++)
        rows[j] = (j * 37) % N_ROWS;
    float pb[ARB_VEC_QROWS][N_ROWS], oref[ARB_VEC_QROWS][72], ogot[ARB_VEC_QROWS][72];
    fill(&pb[0][0], sizeof pb / sizeof(float), 1.0f);
    float *or_[ARB_VEC_QROWS], *og[ARB_VEC_QROWS];
    const float *p[ARB_VEC_QROWS];
    for (int h = 0; h < ARB_VEC_QROWS; h++)
        or_[h] = oref[h], og[h] = ogot[h], p[h] = pb[h];
    const vec_impl *const all[] = {&arb_vec_scalar, &arb_vec_avx2, &arb_vec_avx512};
    for (int f = 0; f < 3; f++) {
        if (!arb_vec_supported(all[f]))
            continue;
        for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
            for (int nh = 1; nh <= ARB_VEC_QROWS; nh++)
                for (size_t ci = 0; ci < sizeof cuts / sizeof *cuts; ci++) {
                    const int hd = hds[hi];
                    all[f]->wsum(kv + 3, STRIDE, rows, p, nh, N_ROWS, hd, or_, 0);
                    memset(ogot, 0x7f, sizeof ogot); /* garbage that acc = 0 must ignore */
                    for (int k = 0, j0 = 0; k < 3; j0 = cuts[ci][k], k++) {
                        const float *pk[ARB_VEC_QROWS];
                        for (int h = 0; h < ARB_VEC_QROWS; h++)
                            pk[h] = pb[h] + j0;
                        all[f]->wsum(kv + 3, STRIDE, rows + j0, pk, nh, cuts[ci][k] - j0, hd, og, k > 0);
                    }
                    for (int h = 0; h < nh; h++)
                        cr_assert(bits_equal(oref[h], ogot[h], (size_t)hd), "%s wsum in pieces: hd %d nh %d cut %zu",
                                  all[f]->name, hd, nh, ci);
                }
    }
    free(kv);
}

/* The reference exp itself: within 2 ulp of libm's expf over the softmax's range. */
Test(vec, reference_exp_is_accurate)
{
    float worst = 0.0f;
    for (int i = 0; i <= 100000; i++) {
        const float x = -87.0f * (float)i / 100000.0f;
        const float a = arb_exp_f32(x), b = expf(x);
        const float ulp = nextafterf(b, INFINITY) - b;
        const float err = fabsf(a - b) / ulp;
        worst = err > worst ? err : worst;
    }
    cr_assert(worst <= 2.0f, "arb_exp_f32 is %.1f ulp from expf", (double)worst);
}

/* Selection: "scalar" always gives the scalar family; any other name a family the CPU runs. */
Test(vec, select_follows_the_matmul_family)
{
    cr_assert_eq(arb_vec_select("scalar"), &arb_vec_scalar);
    const char *names[] = {NULL, "auto", "avx2", "avx512vnni"};
    for (int i = 0; i < 4; i++)
        cr_assert(arb_vec_supported(arb_vec_select(names[i])), "select(%s) gave an unsupported family",
                  names[i] ? names[i] : "NULL");
    if (arb_vec_supported(&arb_vec_avx2))
        cr_assert_eq(arb_vec_select("avx2"), &arb_vec_avx2);
}
