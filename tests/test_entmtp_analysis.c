/* test_entmtp_analysis.c — EntMTP Appendix A statistics (harness/entmtp_analysis.h): Pearson r
 * against hand-computed values, the cluster bootstrap (interval brackets r, degenerate input),
 * logistic regression recovering a separable rule and AUROC with ties. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "entmtp_analysis.h"

Test(entmtp_analysis, pearson_known_values)
{
    const double x[5] = {1, 2, 3, 4, 5}, y[5] = {2, 4, 6, 8, 10}, z[5] = {5, 4, 3, 2, 1};
    const double w[5] = {1, 3, 2, 5, 4}, c[5] = {7, 7, 7, 7, 7};
    cr_assert_float_eq(arb_pearson(x, y, 5), 1.0, 1e-12);
    cr_assert_float_eq(arb_pearson(x, z, 5), -1.0, 1e-12);
    /* sxy = 8, sxx = syy = 10 */
    cr_assert_float_eq(arb_pearson(x, w, 5), 0.8, 1e-12);
    cr_assert(isnan(arb_pearson(x, c, 5)));
    cr_assert(isnan(arb_pearson(x, y, 1)));
}

Test(entmtp_analysis, bootstrap_brackets_r_and_is_deterministic)
{
    enum { G = 12, PER = 20, N = G * PER };
    double x[N], y[N];
    int grp[N];
    uint64_t s = 42;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double)(s >> 11) * 0x1p-53;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double v = (double)(s >> 11) * 0x1p-53;
        x[i] = u, y[i] = u + 0.5 * v, grp[i] = i / PER;
    }
    const double r = arb_pearson(x, y, N);
    double lo, hi, lo2, hi2;
    cr_assert_eq(arb_pearson_boot(x, y, grp, N, G, 500, 7, &lo, &hi), ARB_OK);
    cr_assert(lo < r && r < hi && hi - lo < 0.3, "r %g [%g, %g]", r, lo, hi);
    cr_assert_eq(arb_pearson_boot(x, y, grp, N, G, 500, 7, &lo2, &hi2), ARB_OK);
    cr_assert(lo == lo2 && hi == hi2);
    int one[N] = {0}; /* one prompt: no interval */
    cr_assert_eq(arb_pearson_boot(x, y, one, N, 1, 500, 7, &lo, &hi), ARB_OK);
    cr_assert(isnan(lo) && isnan(hi));
}

Test(entmtp_analysis, logreg_learns_a_threshold_and_auroc)
{
    enum { N = 200, F = 2 };
    double X[N * F], sc[N];
    int y[N];
    for (int i = 0; i < N; i++) {
        X[i * F] = (i % 50) * 0.1;         /* informative: y = 1 iff x0 > 2.45 */
        X[i * F + 1] = (i * 37 % 11) * 3.0; /* noise on another scale */
        y[i] = X[i * F] > 2.45;
    }
    arb_logreg m;
    arb_logreg_opts o = arb_logreg_default_opts();
    arb_err err = {0};
    cr_assert_eq(arb_logreg_fit(X, y, N, F, &o, &m, &err), ARB_OK, "%s", err.msg);
    cr_assert_gt(m.w[0], 1.0);
    for (int i = 0; i < N; i++)
        sc[i] = arb_logreg_predict(&m, X + i * F);
    cr_assert_float_eq(arb_auroc(sc, y, N), 1.0, 1e-12);
    cr_assert_eq(arb_logreg_fit(X, y, N, 0, &o, &m, &err), ARB_E_INVAL);
    /* AUROC by hand: scores 1 2 2 3, labels 0 1 0 1 -> pairs (pos > neg): 3 wins + 1 tie of 4 */
    const double s4[4] = {1, 2, 2, 3};
    const int y4[4] = {0, 1, 0, 1};
    cr_assert_float_eq(arb_auroc(s4, y4, 4), 0.875, 1e-12);
    const int all1[4] = {1, 1, 1, 1};
    cr_assert(isnan(arb_auroc(s4, all1, 4)));
}
