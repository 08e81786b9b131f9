/* test_verifiers_long.c — the long Monte Carlo mode of docs/spec/verification.md §11.4 (meson
 * suite `stats-long`, not part of `unit`): every §11.4 configuration at 10^6 draws on each of
 * 20 random V = 4 models, and the power of the test against each §11.5 negative control,
 * measured over 20 independent replicates at 10^5, 4*10^5 (the unit suite's N) and 10^6 draws.
 *
 * Runs only when ARBOR_STATS_LONG is set (non-empty, not "0"); otherwise every test skips, so
 * a plain `meson test` stays short. Knobs (for a reduced run; the report says what was used):
 *   ARBOR_STATS_DRAWS   draws per (configuration, model)        default 1000000
 *   ARBOR_STATS_MODELS  random models per configuration         default 20
 *   ARBOR_STATS_REPS    replicates per negative control and N    default 20
 *   ARBOR_STATS_FILTER  run only configurations whose label "VERIFIER REGIME" contains this
 *                       text, e.g. "iid(k=4,L=3)" or "khisti/s5" (to shard the run)
 *
 *   ARBOR_STATS_LONG=1 nice build/tests/test_verifiers_long --jobs 1   # ~40 min on one core
 *   ARBOR_STATS_LONG=1 meson test -C build --suite stats-long          # the same
 *
 * Each configuration line prints the number of (model, H) χ² tests that failed at α = 1e-9
 * (expected 0: 2400 tests at 1e-9), the smallest p-value, the count of p < 0.01 (about 1 % under
 * the null), TV and paired-check failures and fallbacks; all must be 0. Each control prints its
 * detection rate (= power) per N; at 10^6 every replicate must be detected.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "vf_mc.h"

static long env_long(const char *name, long def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    cr_assert(*end == 0 && v > 0, "%s=%s: expected a positive integer", name, s);
    return v;
}

static void require_long_mode(void)
{
    const char *s = getenv("ARBOR_STATS_LONG");
    if (!s || !*s || !strcmp(s, "0"))
        cr_skip_test("long statistical mode: set ARBOR_STATS_LONG=1 (ARBOR_STATS_LONG=1 meson test --suite stats-long)");
}

#define MODELS_MAX 200

/* One §11.4 configuration over M random models: every (model, H) must pass. */
static void long_cfg(const vm_model *models, int M, long N, const mc_cfg *base, uint32_t id)
{
    char vb[32], rb[32], label[80];
    snprintf(label, sizeof label, "%s %s", cfg_label(base, vb, sizeof vb), regime_label(&base->g, rb, sizeof rb));
    const char *only = getenv("ARBOR_STATS_FILTER");
    if (only && *only && !strstr(label, only))
        return;
    int fail_x2 = 0, fail_tv = 0, fail_pair = 0, fallback = 0, p01 = 0;
    double pmin = 1, ratio_max = 0, tv2_max = 0, acc = 0;
    clock_t t0 = clock();
    for (int j = 0; j < M; j++) {
        mc_cfg c = *base;
        c.id = id;
        c.seed = 20261125 + (uint64_t)j; /* one RNG run per model */
        mc_stats s = run_mc(&models[j], &c, N);
        for (int h = 1; h <= 2; h++) {
            fail_x2 += s.x2[h] > s.crit[h];
            fail_tv += s.tv[h] > s.tv_bound[h];
            p01 += s.pval[h] < 0.01;
            pmin = fmin(pmin, s.pval[h]);
            ratio_max = fmax(ratio_max, s.x2[h] / s.crit[h]);
        }
        tv2_max = fmax(tv2_max, s.tv[2]);
        fail_pair += !paired_ok(&s);
        fallback += s.n_fallback;
        acc += s.mean_acc / M;
    }
    printf("[long] %-12s %-16s draws %ld models %d | X2 fail %d/%d  min p %.2e  p<0.01 %d/%d  "
           "max X2/crit %.3f | TV fail %d (max TV2 %.4f) | paired fail %d | fallback %d | E[acc] %.4f | %.0f s\n",
           vb, rb, N, M, fail_x2, 2 * M,
           pmin, p01, 2 * M, ratio_max, fail_tv, tv2_max, fail_pair, fallback, acc,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    fflush(stdout);
    cr_expect_eq(fail_x2, 0, "%s %s: %d X2 failures", vb, rb, fail_x2);
    cr_expect_eq(fail_tv, 0, "%s %s: %d TV failures", vb, rb, fail_tv);
    cr_expect_eq(fail_pair, 0, "%s %s: %d paired-check failures", vb, rb, fail_pair);
    cr_expect_eq(fallback, 0, "%s %s: %d fallbacks", vb, rb, fallback);
}

/* The i.i.d. / delayed verifier list of §11.4. */
static const mc_cfg TREE8[] = {
    {.verifier = "nss"}, {.verifier = "naivetree"}, {.verifier = "spectr"}, {.verifier = "specinfer"},
    {.verifier = "specinfer", .uniform = 1}, {.verifier = "khisti", .khisti_s = 2},
    {.verifier = "khisti", .khisti_s = 5}, {.verifier = "traversal"},
};
static const char *const SINGLE8[] = {"naive", "bv", "traversal", "nss", "naivetree", "spectr",
                                      "specinfer", "khisti"};

typedef struct long_env {
    long N;
    int M;
    vm_model m[MODELS_MAX];
} long_env;

static void long_begin(long_env *e)
{
    require_long_mode();
    e->N = env_long("ARBOR_STATS_DRAWS", 1000000);
    long M = env_long("ARBOR_STATS_MODELS", 20);
    cr_assert(M <= MODELS_MAX, "ARBOR_STATS_MODELS at most %d", MODELS_MAX);
    e->M = (int)M;
    for (int j = 0; j < e->M; j++) /* depth 4 covers every regime below (delayed (2,3,2)) */
        vm_random(&e->m[j], 4, 4, 7000 + (uint64_t)j);
}

static void long_end(long_env *e)
{
    for (int j = 0; j < e->M; j++)
        vm_free(&e->m[j]);
}

static long_env env; /* large: one per process, each test fills it */

Test(verifiers_long, single, .timeout = 0)
{
    long_begin(&env);
    for (int L = 1; L <= 3; L += 2)
        for (int i = 0; i < 8; i++) {
            mc_cfg c = {.verifier = SINGLE8[i], .g = {.kind = ARB_REGIME_SINGLE, .L = L}};
            long_cfg(env.m, env.M, env.N, &c, 1000 + 10 * (uint32_t)L + (uint32_t)i);
        }
    long_end(&env);
}

Test(verifiers_long, iid, .timeout = 0)
{
    long_begin(&env);
    for (int k = 2; k <= 4; k += 2)
        for (int L = 2; L <= 3; L++)
            for (int i = 0; i < 8; i++) {
                mc_cfg c = TREE8[i];
                c.g = (vm_regime){.kind = ARB_REGIME_IID, .k = k, .L = L};
                long_cfg(env.m, env.M, env.N, &c, 2000 + 100 * (uint32_t)k + 10 * (uint32_t)L + (uint32_t)i);
            }
    long_end(&env);
}

Test(verifiers_long, delayed_232, .timeout = 0)
{
    long_begin(&env);
    for (int i = 0; i < 8; i++) {
        mc_cfg c = TREE8[i];
        c.g = (vm_regime){.kind = ARB_REGIME_DELAYED, .l = 2, .k = 3, .L = 2};
        long_cfg(env.m, env.M, env.N, &c, 3000 + (uint32_t)i);
    }
    long_end(&env);
}

Test(verifiers_long, wor_and_det, .timeout = 0)
{
    long_begin(&env);
    const char *wor[] = {"nss", "naivetree", "traversal"};
    for (int i = 0; i < 3; i++) {
        mc_cfg c = {.verifier = wor[i], .g = {.kind = ARB_REGIME_WOR, .k = 2, .L = 2}};
        long_cfg(env.m, env.M, env.N, &c, 4000 + (uint32_t)i);
    }
    mc_cfg c = {.verifier = "nss", .g = {.kind = ARB_REGIME_DET, .k = 2, .L = 2}};
    long_cfg(env.m, env.M, env.N, &c, 4010);
    long_end(&env);
}

/* Power against each §11.5 control on H3: detection rate over R replicates (distinct seeds). */
Test(verifiers_long, negative_control_power, .timeout = 0)
{
    require_long_mode();
    const long R = env_long("ARBOR_STATS_REPS", 20), N_long = env_long("ARBOR_STATS_DRAWS", 1000000);
    vm_model m;
    vm_h3(&m, 3);
    const vm_regime k3 = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, wor = {.kind = ARB_REGIME_WOR, .k = 2, .L = 2};
    struct { const char *what; mc_cfg c; } ctl[] = {
        {"traversal, leaf = smallest node index", {.verifier = "traversal", .broken = ARB_VF_BROKEN_TRAV_INDEX_ORDER, .g = k3}},
        {"traversal without Q renormalisation", {.verifier = "traversal", .broken = ARB_VF_BROKEN_TRAV_NO_RENORM, .g = k3}},
        {"specinfer on WOR trees", {.verifier = "specinfer", .g = wor}},
        {"spectr on WOR trees", {.verifier = "spectr", .g = wor}},
        {"naivetree, children sorted by id", {.verifier = "naivetree", .sorted = 1, .g = k3}},
    };
    const long Ns[] = {100000, 400000, N_long};
    for (size_t i = 0; i < sizeof ctl / sizeof ctl[0]; i++)
        for (int n = 0; n < 3; n++) {
            if (n == 2 && N_long <= Ns[1])
                break;
            long detected = 0;
            double x2_min = INFINITY, x2_sum = 0;
            for (long r = 0; r < R; r++) {
                mc_cfg c = ctl[i].c;
                c.id = 5000 + 10 * (uint32_t)i;
                c.seed = 90000 + (uint64_t)(n * 1000 + r);
                mc_stats s = run_mc(&m, &c, Ns[n]);
                detected += !passes(&s);
                x2_min = fmin(x2_min, s.x2[2]);
                x2_sum += s.x2[2];
            }
            printf("[long] control %-38s N %7ld: detected %ld/%ld (power %.2f)  X2(H=2) mean %.1f min %.1f crit %.1f\n",
                   ctl[i].what, Ns[n], detected, R, (double)detected / (double)R, x2_sum / (double)R, x2_min,
                   chi2_crit(8));
            fflush(stdout);
            if (Ns[n] >= 1000000)
                cr_expect_eq(detected, R, "%s: missed at N = %ld", ctl[i].what, Ns[n]);
        }
    vm_free(&m);
}
