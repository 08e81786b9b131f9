/* test_sample.c — PROCESS (docs/spec/verification.md §0.2) and the RNG primitives (§0.4, §11.6). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "process_simd.h"
#include "sample.h"
#include "vexp.h"

Test(sample, philox_known_answers)
{
    /* Random123 kat_vectors, philox4x32_10 */
    uint32_t out[4];
    const uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
    arb_philox4x32(c0, k0, out);
    cr_assert(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu && out[3] == 0x9b00dbd8u,
              "%08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
    const uint32_t c1[4] = {~0u, ~0u, ~0u, ~0u}, k1[2] = {~0u, ~0u};
    arb_philox4x32(c1, k1, out);
    cr_assert(out[0] == 0x408f276du && out[1] == 0x41c83b0eu && out[2] == 0xa20bc7c6u && out[3] == 0x6d5451fdu,
              "%08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
    const uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k2[2] = {0xa4093822u, 0x299f31d0u};
    arb_philox4x32(c2, k2, out);
    cr_assert(out[0] == 0xd16cfe09u && out[1] == 0x94fdccebu && out[2] == 0x5001e420u && out[3] == 0x24126ea1u,
              "%08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
}

Test(sample, rng_is_keyed_and_reproducible)
{
    arb_rng a, b;
    arb_rng_init(&a, 42, 3, 7, ARB_STREAM_VERIFY);
    arb_rng_init(&b, 42, 3, 7, ARB_STREAM_VERIFY);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(arb_rng_u64(&a), arb_rng_u64(&b));
    /* any change of seed, prompt, step or stream gives another sequence */
    uint64_t ref;
    arb_rng_init(&a, 42, 3, 7, ARB_STREAM_VERIFY);
    ref = arb_rng_u64(&a);
    arb_rng_init(&b, 43, 3, 7, ARB_STREAM_VERIFY);
    cr_assert_neq(arb_rng_u64(&b), ref);
    arb_rng_init(&b, 42, 4, 7, ARB_STREAM_VERIFY);
    cr_assert_neq(arb_rng_u64(&b), ref);
    arb_rng_init(&b, 42, 3, 8, ARB_STREAM_VERIFY);
    cr_assert_neq(arb_rng_u64(&b), ref);
    arb_rng_init(&b, 42, 3, 7, ARB_STREAM_DRAFT);
    cr_assert_neq(arb_rng_u64(&b), ref);
    /* the words are the Philox block of counter (index, stream, step, prompt) */
    uint32_t blk[4], ctr[4] = {0, ARB_STREAM_VERIFY, 7, 3}, key[2] = {42, 0};
    arb_philox4x32(ctr, key, blk);
    cr_assert_eq(ref, ((uint64_t)blk[0] << 32) | blk[1]);
}

Test(sample, uniform_bern_ratio)
{
    arb_rng r;
    arb_rng_init(&r, 1, 0, 0, ARB_STREAM_AUX);
    double s = 0, mn = 1, mx = 0;
    const int N = 200000;
    int n_half = 0, n_ratio = 0;
    for (int i = 0; i < N; i++) {
        double u = arb_rng_u(&r);
        cr_assert(u >= 0 && u < 1);
        s += u;
        mn = fmin(mn, u);
        mx = fmax(mx, u);
        cr_assert(!arb_rng_bern(&r, 0.0));
        cr_assert(arb_rng_bern(&r, 1.0));
        n_half += arb_rng_bern(&r, 0.25);
        n_ratio += arb_rng_ratio(&r, 1.0, 3.0); /* min(1, 1/3) */
        cr_assert(arb_rng_ratio(&r, 2.0, 1.0)); /* num >= den: always */
        cr_assert(!arb_rng_ratio(&r, 0.0, 1.0));
    }
    /* 6-sigma bounds */
    cr_assert(fabs(s / N - 0.5) < 6 * sqrt(1.0 / 12 / N));
    cr_assert(fabs((double)n_half / N - 0.25) < 6 * sqrt(0.25 * 0.75 / N));
    cr_assert(fabs((double)n_ratio / N - 1.0 / 3) < 6 * sqrt(2.0 / 9 / N));
    cr_assert(mn < 1e-4 && mx > 1 - 1e-4);
}

Test(sample, sample_w_law_and_edge_cases)
{
    arb_rng r;
    arb_rng_init(&r, 2, 0, 0, ARB_STREAM_AUX);
    const double w[5] = {0.5, 0, 1.5, 0, 2.0}; /* unnormalized */
    long cnt[5] = {0};
    const int N = 200000;
    for (int i = 0; i < N; i++)
        cnt[arb_sample_w(&r, w, 5)]++;
    cr_assert_eq(cnt[1] + cnt[3], 0, "zero-weight tokens are never drawn");
    for (int x = 0; x < 5; x += 2) {
        double pe = w[x] / 4.0;
        cr_assert(fabs((double)cnt[x] / N - pe) < 6 * sqrt(pe * (1 - pe) / N), "x=%d", x);
    }
    const double z[3] = {0, 0, 0};
    arb_rng before = r;
    cr_assert_eq(arb_sample_w(&r, z, 3), -1);
    cr_assert(!memcmp(&before, &r, sizeof r), "an empty SAMPLE consumes no randomness");
    const double one[3] = {0, 0, 1e-300};
    cr_assert_eq(arb_sample_w(&r, one, 3), 2);
}

Test(sample, process_temperature_and_greedy)
{
    const float z[4] = {1.0f, 3.0f, 3.0f, -2.0f};
    double pi[4];
    int32_t idx[4];
    arb_sampling s = arb_sampling_default();
    s.temperature = 0;
    cr_assert_eq(arb_sample_process(z, 4, &s, pi, idx), 1);
    cr_assert(pi[1] == 1 && pi[0] == 0 && pi[2] == 0, "argmax ties -> smallest id");
    s.temperature = 0.5;
    arb_sample_process(z, 4, &s, pi, NULL);
    double S = 0, e[4];
    for (int x = 0; x < 4; x++)
        S += e[x] = exp((z[x] - 3.0) / 0.5);
    for (int x = 0; x < 4; x++)
        cr_assert(fabs(pi[x] - e[x] / S) < 1e-15, "x=%d %.17g vs %.17g", x, pi[x], e[x] / S);
}

Test(sample, process_top_p_rule)
{
    /* probabilities 0.4, 0.3, 0.2, 0.1 (ids permuted); top_p = 0.7: keep position i iff
       the mass before it is < 0.7 -> 0.4 (0 before), 0.3 (0.4 before); 0.2 has 0.7 before: cut */
    const float z[4] = {(float)log(0.2), (float)log(0.4), (float)log(0.1), (float)log(0.3)};
    double pi[4];
    int32_t idx[4];
    arb_sampling s = arb_sampling_default();
    s.top_p = 0.69;
    cr_assert_eq(arb_sample_process(z, 4, &s, pi, idx), 2);
    cr_assert(fabs(pi[1] - 4.0 / 7) < 1e-6 && fabs(pi[3] - 3.0 / 7) < 1e-6 && pi[0] == 0 && pi[2] == 0);
    s.top_p = 0.71;
    cr_assert_eq(arb_sample_process(z, 4, &s, pi, idx), 3);
    cr_assert(pi[2] == 0 && fabs(pi[0] - 0.2 / 0.9) < 1e-6);
    /* ties at the cut: equal probabilities are ordered by id, smaller kept first */
    const float t[4] = {0, 0, 0, 0};
    s.top_p = 0.5;
    cr_assert_eq(arb_sample_process(t, 4, &s, pi, idx), 2);
    cr_assert(pi[0] == 0.5 && pi[1] == 0.5 && pi[2] == 0 && pi[3] == 0);
    /* a big vocabulary with a long tail: the threshold search finds the same set as a sort */
    enum { V = 5000 };
    static float big[V];
    static double pb[V];
    static int32_t ib[V];
    for (int x = 0; x < V; x++)
        big[x] = (float)(-0.002 * x + ((x * 7919) % 13) * 0.01);
    s.temperature = 0.7;
    s.top_p = 0.9;
    int nz = arb_sample_process(big, V, &s, pb, ib);
    arb_sampling s1 = s;
    s1.top_p = 1;
    static double full[V];
    static int32_t ord[V];
    arb_sample_process(big, V, &s1, full, NULL);
    for (int x = 0; x < V; x++)
        ord[x] = x;
    arb_sample_order_desc(full, ord, V);
    double cum = 0;
    int keep = 0;
    while (keep < V && cum < 0.9)
        cum += full[ord[keep++]];
    cr_assert_eq(nz, keep);
    double S2 = 0; /* the kept mass summed in rank order: the renormalization's exact bits */
    for (int i = 0; i < keep; i++)
        S2 += full[ord[i]];
    for (int i = 0; i < V; i++) {
        cr_assert_eq(pb[ord[i]] > 0, i < keep, "rank %d", i);
        if (i < keep)
            cr_assert(pb[ord[i]] == full[ord[i]] / S2, "rank %d: %.17g vs %.17g", i, pb[ord[i]], full[ord[i]] / S2);
    }
    double S = 0;
    for (int x = 0; x < V; x++)
        S += pb[x];
    cr_assert(fabs(S - 1) < 1e-12);
}

Test(sample, process_top_k_ties)
{
    const float z[5] = {1, 2, 2, 0, 2};
    double pi[5];
    int32_t idx[5];
    arb_sampling s = arb_sampling_default();
    s.top_k = 2;
    cr_assert_eq(arb_sample_process(z, 5, &s, pi, idx), 2);
    cr_assert(pi[1] == 0.5 && pi[2] == 0.5 && pi[4] == 0, "ties -> smaller ids kept");
}

/* vexp.h: PROCESS's exp. Within 1 ulp of libm's exp over the range PROCESS uses (and the
   subnormal tail), the edge values exact, and the AVX2 path bit-identical to the scalar one
   at every offset and length (so a law never depends on the CPU). */
static double ulp_dist(double a, double b)
{
    if (a == b)
        return 0;
    const double u = nextafter(fabs(b), INFINITY) - fabs(b);
    return fabs(a - b) / u;
}

Test(sample, vexp_is_exp_within_an_ulp)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    double worst = 0, at = 0;
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        /* mostly the logit spreads PROCESS sees (0 .. -60), then the whole range */
        const double x = i % 4 ? -(double)(s >> 11) * 0x1.0p-53 * 60.0 : -(double)(s >> 11) * 0x1.0p-53 * 745.0;
        const double d = ulp_dist(arb_vexp1(x), exp(x));
        if (d > worst)
            worst = d, at = x;
    }
    cr_log_info("vexp: worst distance to libm exp %.3f ulp (at x = %.17g)", worst, at);
    cr_assert_leq(worst, 1.0, "%.3f ulp at %.17g", worst, at);
    cr_assert_eq(arb_vexp1(0.0), 1.0);
    cr_assert_eq(arb_vexp1(-INFINITY), 0.0);
    cr_assert_eq(arb_vexp1(-746.0), 0.0);
    cr_assert_eq(arb_vexp1(-745.0), exp(-745.0), "the smallest subnormals");
    cr_assert(isinf(arb_vexp1(710.0)));
    cr_assert(isnan(arb_vexp1(NAN)));
    cr_assert_eq(arb_vexp1(1.0), exp(1.0));
}

/* vexp's vector path `path` against the scalar one on 1031 values (tails of every size from
   offsets 0..offsets-1): large and small negatives, -inf, 0, the subnormal edge, NaN. False
   when this CPU lacks the path. */
static bool vexp_path_agrees(bool (*path)(double *, int), int offsets, const char *name)
{
    enum { N = 1031 };
    double a[N], b[N];
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        a[i] = -(double)(s >> 11) * 0x1.0p-53 * (i % 97 == 0 ? 800.0 : 40.0);
    }
    a[5] = -INFINITY, a[6] = 0.0, a[7] = -707.9, a[8] = -708.1, a[9] = NAN;
    for (int off = 0; off < offsets; off++) {
        const int n = N - off;
        memcpy(b, a + off, sizeof(double) * n);
        if (!path(b, n))
            return false;
        for (int i = 0; i < n; i++) {
            const double want = arb_vexp1(a[off + i]);
            cr_assert(memcmp(&b[i], &want, sizeof want) == 0 || (isnan(want) && isnan(b[i])),
                      "offset %d element %d: x %.17g %s %.17g scalar %.17g", off, i, a[off + i], name, b[i], want);
        }
    }
    return true;
}

Test(sample, vexp_paths_agree_bit_for_bit)
{
    if (!vexp_path_agrees(arb_vexp_inplace_avx2, 4, "avx2"))
        cr_skip_test("no AVX2+FMA here: the scalar path is the only one");
}

/* A logits row for the PROCESS path tests: uniform values over a width growing with spread (2,
   12, 900, 3000: the widest underflow exp), exact ties every 37, and +0, -0, -inf when V > 20. */
static void logits_row(float *z, int V, int spread, uint64_t *r)
{
    const double w = spread == 0 ? 2.0 : spread == 1 ? 12.0 : spread == 2 ? 900.0 : 3000.0;
    for (int i = 0; i < V; i++) {
        *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
        z[i] = (float)(((double)(*r >> 11) * 0x1.0p-53 - 0.5) * w);
        if (i % 37 == 5)
            z[i] = z[i - 1]; /* exact ties */
    }
    if (V > 20)
        z[3] = 0.0f, z[4] = -0.0f, z[11] = -INFINITY;
}

/* PROCESS as it was before its passes were fused (sample.c, tenth session): the scaled row, the
   maximum, top-k's cut, exp and sum, the division, then top-p over the normalized law (the
   largest, candidates by a threshold lowered sixteenfold, all of them sorted, the running sum).
   The reference for process_equals_the_unfused_passes. */
static int process_unfused(int isa, const float *z, int V, const arb_sampling *s, double *pi, int32_t *idx)
{
    const double m = arb_proc_scale_max(isa, z, V, 1.0 / s->temperature, pi);
    if (s->top_k > 0 && s->top_k < V) {
        static double cp[49152 + 7];
        memcpy(cp, pi, sizeof(double) * (size_t)V);
        for (int x = 0; x < V; x++)
            idx[x] = x;
        arb_sample_order_desc(cp, idx, V);
        for (int i = s->top_k; i < V; i++)
            pi[idx[i]] = -INFINITY;
    }
    const double S = arb_proc_exp_sum(isa, pi, V, m);
    for (int x = 0; x < V; x++) /* division, maximum and count: exact operations, any width */
        pi[x] /= S;
    if (s->top_p < 1) {
        double pmax = 0;
        for (int x = 0; x < V; x++)
            pmax = pi[x] > pmax ? pi[x] : pmax;
        int nc = 0;
        for (double t = pmax;; t *= 0.0625) {
            nc = arb_proc_collect(isa, pi, V, t, idx);
            double mass = 0;
            for (int i = 0; i < nc; i++)
                mass += pi[idx[i]];
            if (mass >= s->top_p + 1e-9 || t < 1e-300)
                break;
        }
        arb_sample_order_desc(pi, idx, nc);
        double cum = 0, S2 = 0;
        int keep = 0;
        while (keep < nc && cum < s->top_p)
            cum += pi[idx[keep++]];
        for (int i = 0; i < keep; i++)
            S2 += pi[idx[i]];
        for (int i = 0; i < keep; i++)
            pi[idx[i]] = -pi[idx[i]];
        arb_proc_keep(isa, pi, V, S2);
    }
    int n = 0;
    for (int x = 0; x < V; x++)
        n += pi[x] > 0;
    return n;
}

/* The fused passes (the maximum from the floats, products, exps and sum in one pass, division
   with the count; top-p's candidates from four thresholds at once, only they divided and
   ordered) give the unfused PROCESS's law bit for bit on every path: rows of 1..49 159 tokens,
   four spreads (exp underflow at the widest), exact ties, +-0, -inf; T 1 / 0.6 / 1.7, top-k
   50 and 40, top-p 0.9, 0.95, 0.5 and 0.999 (several candidate thresholds). */
Test(sample, process_equals_the_unfused_passes)
{
    enum { VMAX = 49152 + 7 };
    static float z[VMAX];
    static double ref[VMAX], got[VMAX];
    static int32_t idx[VMAX];
    const int Vs[] = {1, 7, 9, 1031, 49152, VMAX};
    const arb_sampling ss[] = {{1.0, 0, 1.0}, {0.6, 0, 1.0},  {1.7, 50, 1.0},  {1.0, 0, 0.9},
                               {0.8, 40, 0.95}, {1.0, 0, 0.5}, {1.3, 0, 0.999}, {0.7, 0, 0.95}};
    uint64_t r = 99;
    int compared = 0;
    for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++)
        for (int spread = 0; spread < 4; spread++) {
            const int V = Vs[vi];
            logits_row(z, V, spread, &r);
            for (int isa = 0; isa <= 2; isa++)
                for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
                    const int n2 = arb_sample_process_isa(isa, z, V, &ss[k], got, idx);
                    if (n2 < 0)
                        continue; /* no such path here */
                    const int nz = process_unfused(isa, z, V, &ss[k], ref, idx);
                    cr_assert_eq(n2, nz, "isa %d V %d spread %d setting %zu: %d vs %d tokens", isa, V, spread, k, n2,
                                 nz);
                    for (int x = 0; x < V; x++)
                        cr_assert(!memcmp(&got[x], &ref[x], sizeof ref[x]),
                                  "isa %d V %d spread %d setting %zu token %d: %.17g vs %.17g", isa, V, spread, k, x,
                                  got[x], ref[x]);
                    compared++;
                }
        }
    cr_assert_geq(compared, 6 * 4 * 8);
}

/* PROCESS on each vector width (process_simd.h) gives the scalar path's law bit for bit:
   rows of several lengths (tails of every size), logit spreads from tight to ones whose
   exp underflows into the subnormals and to 0 (the scalar fallback inside a vector), exact
   ties, +-0, a -inf logit, with temperature, top-k and top-p, and the vexp paths alone. */
Test(sample, process_paths_agree_bit_for_bit)
{
    enum { VMAX = 49152 + 7 };
    static float z[VMAX];
    static double ref[VMAX], got[VMAX];
    static int32_t idx[VMAX];
    const int Vs[] = {1, 7, 8, 9, 15, 1031, 49152, VMAX};
    const arb_sampling ss[] = {{1.0, 0, 1.0}, {0.6, 0, 1.0}, {1.7, 50, 1.0}, {1.0, 0, 0.9}, {0.8, 40, 0.95}};
    uint64_t r = 77;
    int compared = 0, isas = 0;
    for (int isa = 1; isa <= 2; isa++)
        isas += arb_sample_process_isa(isa, z, 1, &ss[0], got, idx) >= 0;
    if (!isas)
        cr_skip_test("no AVX2 or AVX-512 here: the scalar path is the only one");
    for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++)
        for (int spread = 0; spread < 4; spread++) {
            const int V = Vs[vi];
            logits_row(z, V, spread, &r);
            for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
                const int nz = arb_sample_process_isa(0, z, V, &ss[k], ref, idx);
                cr_assert_geq(nz, 1);
                for (int isa = 1; isa <= 2; isa++) {
                    const int n2 = arb_sample_process_isa(isa, z, V, &ss[k], got, idx);
                    if (n2 < 0)
                        continue;
                    cr_assert_eq(n2, nz, "isa %d V %d spread %d setting %zu: %d vs %d tokens kept", isa, V, spread,
                                 k, n2, nz);
                    for (int x = 0; x < V; x++)
                        cr_assert(!memcmp(&got[x], &ref[x], sizeof ref[x]),
                                  "isa %d V %d spread %d setting %zu token %d: %.17g vs %.17g", isa, V, spread, k, x,
                                  got[x], ref[x]);
                    compared++;
                }
            }
        }
    vexp_path_agrees(arb_vexp_inplace_avx512, 8, "avx512"); /* vexp alone, the AVX-512 path */
    cr_log_info("PROCESS: %d rows equal bit for bit on %d vector widths", compared, isas);
}

/* SAMPLE (arb_sample_w) skips exact zeros a vector at a time: the same token and the same
   coin on every width, on dense laws, on laws cut to a few tokens (top-p, residuals), with
   -0.0 entries. */
Test(sample, sample_w_paths_agree)
{
    enum { V = 1000 + 5 };
    static double w[V];
    uint64_t r = 4242;
    int n = 0;
    for (int law = 0; law < 60; law++) {
        const int keep = law % 3 == 0 ? V : law % 3 == 1 ? 7 : 1; /* dense, a few, one */
        for (int x = 0; x < V; x++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            w[x] = (double)(r >> 11) * 0x1.0p-53;
        }
        if (keep < V)
            for (int x = 0; x < V; x++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                w[x] = (int)(r % (uint64_t)V) < keep ? w[x] : (x % 2 ? 0.0 : -0.0);
            }
        for (int d = 0; d < 20; d++) {
            arb_rng a, b;
            arb_rng_init(&a, 9, (uint32_t)law, (uint32_t)d, ARB_STREAM_AUX);
            const int ref = arb_sample_w_isa(0, &a, w, V);
            for (int isa = 1; isa <= 2; isa++) {
                arb_rng_init(&b, 9, (uint32_t)law, (uint32_t)d, ARB_STREAM_AUX);
                if (arb_sample_w_isa(isa, &b, w, V) == -2)
                    continue;
                arb_rng_init(&b, 9, (uint32_t)law, (uint32_t)d, ARB_STREAM_AUX);
                const int got = arb_sample_w_isa(isa, &b, w, V);
                cr_assert_eq(got, ref, "law %d draw %d isa %d: token %d vs %d", law, d, isa, got, ref);
                cr_assert(!memcmp(&a, &b, sizeof a), "law %d: the same coins", law);
                n++;
            }
        }
    }
    cr_assert_gt(n, 0);
    cr_log_info("SAMPLE: %d draws equal across vector widths", n);
}

/* SAMPLE's pick resumed from the running sum's last mark at or below t (arb_sample_w) draws what
   the scan from the start draws (arb_proc_seq_sum, then arb_proc_seq_pick, the tenth session's
   SAMPLE), coins included: laws of 1 to 300 000 tokens (one mark per 1024, or 256 marks),
   dense, sparse, all mass in the last stretch, whole stretches of zeros, on every width. */
Test(sample, sample_w_resumes_from_a_mark)
{
    enum { VMAX = 300000 };
    static double w[VMAX];
    const int Vs[] = {1, 1024, 1025, 5000, 49152, VMAX};
    uint64_t g = 31337;
    int n = 0;
    for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++)
        for (int law = 0; law < 4; law++) {
            const int V = Vs[vi];
            for (int x = 0; x < V; x++) {
                g ^= g << 13, g ^= g >> 7, g ^= g << 17;
                const double u = (double)(g >> 11) * 0x1.0p-53;
                w[x] = law == 0 ? u : law == 1 ? (g % 97 == 0 ? u : 0.0) : law == 2 ? (x >= V - 700 ? u : 0.0)
                                                                                      : ((x / 1024) % 3 ? u : 0.0);
            }
            if (law == 1 || law == 3)
                w[V / 2] = 0.5; /* never all zero */
            for (int d = 0; d < 200; d++)
                for (int isa = 0; isa <= 2; isa++) {
                    if (!arb_proc_isa_ok(isa))
                        continue;
                    arb_rng a, b;
                    arb_rng_init(&a, 5, (uint32_t)(vi * 4 + law), (uint32_t)d, ARB_STREAM_AUX);
                    b = a;
                    const double S = arb_proc_seq_sum(isa, w, V), t = arb_rng_u(&a) * S;
                    int last;
                    const int x = arb_proc_seq_pick(isa, w, V, t, &last), want = x >= 0 ? x : last;
                    const int got = arb_sample_w_isa(isa, &b, w, V);
                    cr_assert_eq(got, want, "V %d law %d draw %d isa %d: %d vs %d", V, law, d, isa, got, want);
                    cr_assert(!memcmp(&a, &b, sizeof a));
                    n++;
                }
        }
    cr_assert_geq(n, 6 * 4 * 200);
}

/* Traversal's residual (arb_proc_residual_sum): the terms and the running sum from a given start
   equal the scalar loop's bits on every width: dense, sparse and single-token laws (with -0.0),
   weights om in (0, 1], the draft scale 0 (a zeroed law) or above 1, lengths 1..1005 so that
   the 8-blocks and the tail both run. */
Test(sample, residual_sum_paths_agree)
{
    enum { V = 1000 + 5 };
    static double x[V], y[V], r0[V], r1[V];
    uint64_t g = 99;
    int n = 0;
    for (int c = 0; c < 90; c++) {
        const int len = c % 5 == 4 ? 1 + c * 11 % V : V, keep = c % 3 == 0 ? V : c % 3 == 1 ? 9 : 1;
        for (int i = 0; i < V; i++) {
            g ^= g << 13, g ^= g >> 7, g ^= g << 17;
            x[i] = (int)(g % (uint64_t)V) < keep ? (double)(g >> 11) * 0x1.0p-53 : (i % 2 ? 0.0 : -0.0);
            g ^= g << 13, g ^= g >> 7, g ^= g << 17;
            y[i] = (int)(g % 5) ? (double)(g >> 11) * 0x1.0p-53 * 0.7 : 0.0;
        }
        const double om = c % 4 == 0 ? 1.0 : 0.25 + 0.01 * c, ys = c % 7 == 0 ? 0.0 : 1.0 + 0.03 * c;
        const double S0 = c % 2 ? 0.0 : 0.125;
        double want = S0;
        for (int i = 0; i < len; i++) {
            const double d = om * x[i] - y[i] * ys;
            r0[i] = d > 0 ? d : 0.0;
            want += r0[i];
        }
        for (int isa = 0; isa <= 2; isa++) {
            if (!arb_proc_isa_ok(isa))
                continue;
            memset(r1, 0xff, sizeof r1);
            const double got = arb_proc_residual_sum(isa, x, om, y, ys, len, r1, S0);
            cr_assert(!memcmp(&got, &want, sizeof got), "case %d isa %d: sum %.17g vs %.17g", c, isa, got, want);
            cr_assert(!memcmp(r1, r0, sizeof(double) * (size_t)len), "case %d isa %d: terms differ", c, isa);
            const double alone = arb_proc_residual_sum(isa, x, om, y, ys, len, NULL, S0); /* the sum only */
            cr_assert(!memcmp(&alone, &want, sizeof alone), "case %d isa %d: sum without terms", c, isa);
            n++;
        }
    }
    cr_assert_geq(n, 90);
}

/* arb_sample_order_desc_all (radix) gives arb_sample_order_desc's permutation: random values
   with many exact ties, negatives, +0.0 and -0.0 (equal under ==, so ordered by id), tiny
   and huge magnitudes, long runs of distinct values that agree on the keys' top 33 bits (the
   second level of the sort), n from 1 to a vocabulary. */
Test(sample, radix_order_equals_the_heap_order)
{
    const int ns[6] = {1, 2, 7, 100, 4096, 49152};
    uint64_t s = 777;
    for (int t = 0; t < 6; t++) {
        const int n = ns[t];
        double *v = malloc(sizeof(double) * n);
        int32_t *h = malloc(sizeof(int32_t) * n), *r = malloc(sizeof(int32_t) * n), *tmp = malloc(sizeof(int32_t) * n);
        uint64_t *key = malloc(sizeof(uint64_t) * 2 * n);
        for (int i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            switch (s % 7) {
            case 5: v[i] = 0.5 + (double)(s >> 40) * 0x1.0p-52; break; /* distinct, equal top 33 bits */
            case 0: v[i] = (double)(int)(s % 7) - 3.0; break;       /* many exact ties */
            case 1: v[i] = (s >> 8) & 1 ? 0.0 : -0.0; break;         /* signed zeros */
            case 2: v[i] = -(double)(s >> 11) * 0x1.0p-53 * 1e-300; break;
            case 3: v[i] = (double)(s >> 11) * 0x1.0p-53 * 1e300; break;
            default: v[i] = ((double)(s >> 11) * 0x1.0p-53 - 0.5) * 2.0; break;
            }
            h[i] = i;
        }
        arb_sample_order_desc(v, h, n);
        arb_sample_order_desc_all(v, n, r, key, tmp);
        for (int i = 0; i < n; i++)
            cr_assert_eq(r[i], h[i], "n %d position %d: radix %d heap %d", n, i, r[i], h[i]);
        free(v), free(h), free(r), free(tmp), free(key);
    }
}

/* PROCESS's top-k keeps exactly the first k of the (value desc, id asc) order, found by a
   selection instead of a sort: many ties, k from 1 to V - 1, against the heap sort's first k. */
Test(sample, process_top_k_is_the_sorted_prefix)
{
    enum { V = 3000 };
    static float z[V];
    static double pi[V], v[V];
    static int32_t idx[V], h[V];
    uint64_t s = 99;
    const int ks[6] = {1, 2, 17, 1000, 2999, 1500};
    for (int t = 0; t < 6; t++) {
        for (int i = 0; i < V; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            z[i] = t % 2 ? (float)(s % 13) : (float)((s >> 11) % 100000) * 1e-3f; /* ties, or few */
            v[i] = (double)z[i];
            h[i] = i;
        }
        arb_sample_order_desc(v, h, V);
        arb_sampling sm = arb_sampling_default();
        sm.top_k = ks[t];
        cr_assert_eq(arb_sample_process(z, V, &sm, pi, idx), ks[t]);
        for (int i = 0; i < V; i++)
            cr_assert_eq(pi[h[i]] > 0, i < ks[t], "k %d: sorted position %d (id %d)", ks[t], i, h[i]);
    }
}
