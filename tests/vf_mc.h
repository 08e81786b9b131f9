/* vf_mc.h — the Monte Carlo losslessness check of docs/spec/verification.md §11.4, shared by
 * test_verifiers.c (unit suite, 10^5 draws) and test_verifiers_long.c (stats-long suite, 10^6
 * draws on >= 20 random models). Header-only, test-only.
 *
 * One configuration = (verifier, regime, model). run_mc() drafts N trees with the production
 * drafting code and RNG (vf_models.h), verifies each, completes H = 2 tokens by plain target
 * sampling, and scores the first token and the first two tokens against the exact target law:
 * Pearson X² (cells expected below 20 merged; α = 1e-9, Wilson–Hilferty critical value), its
 * p-value, and TV against E[TV] + 6 sd. A paired check ties every 4th draw's realised accepted
 * length to its exact conditional mean (otanalysis.c).
 *
 * Negative controls (§11.5) are configurations with a deliberate flaw: children sorted by
 * token id (`sorted`), the Traversal variants of vf_int.h (`broken`, arb_traversal_set_broken),
 * or a verifier run on trees it is not valid for (SpecInfer / SpecTr on WOR trees: run_mc does
 * not consult the validity matrix, so any verifier can be fed any regime). passes() is the same
 * verdict for both: a correct method must pass it, a control must fail it.
 *
 *     mc_cfg c = {.verifier = "traversal", .g = {.kind = ARB_REGIME_IID, .k = 3, .L = 2}, .id = 7};
 *     mc_stats s = run_mc(&model, &c, 100000);
 *     cr_expect(passes(&s));
 */
#ifndef VF_MC_H
#define VF_MC_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "verifiers/otanalysis.h"
#include "verifiers/verifier.h"
#include "verifiers/vf_int.h"
#include "vf_models.h"

typedef struct mc_stats {
    double tv[3], x2[3], crit[3], tv_bound[3], pval[3]; /* [h], h = 1 (first token), 2 (two) */
    int df[3];
    double mean_diff, sd_diff; /* paired A - E */
    double mean_acc;
    int n_fallback;
    int paired; /* 1 if E was available */
    long n_pair;
} mc_stats;

typedef struct mc_cfg {
    const char *verifier;
    vm_regime g;
    int uniform;     /* specinfer mode */
    int khisti_s;
    int sorted;      /* negative control: C(v) sorted by token id */
    int broken;      /* negative control: ARB_VF_BROKEN_* (traversal only) */
    int deviates;    /* an approximate verifier (typical): the tests must flag it */
    uint32_t id;     /* RNG prompt id (distinct per config) */
    uint64_t seed;   /* RNG run seed; 0 = the default 20261122 */
} mc_cfg;

/* χ² critical value at α = 1e-9 by Wilson–Hilferty (slightly conservative in the tail). */
static inline double chi2_crit(int df)
{
    const double z = 5.9978;
    double a = 2.0 / (9.0 * df);
    double t = 1 - a + z * sqrt(a);
    return df * t * t * t;
}

/* Upper tail P(χ²_df > x) = Q(df/2, x/2), the regularised upper incomplete gamma function:
   series for x < a + 1, Lentz continued fraction otherwise (Numerical Recipes §6.2). */
static inline double chi2_pvalue(double x, int df)
{
    double a = df / 2.0, z = x / 2.0;
    if (z <= 0)
        return 1;
    double lg = a * log(z) - z - lgamma(a);
    if (z < a + 1) {
        double ap = a, sum = 1 / a, del = sum;
        for (int n = 0; n < 1000 && fabs(del) > fabs(sum) * 1e-15; n++) {
            ap += 1;
            del *= z / ap;
            sum += del;
        }
        return fmax(0, 1 - sum * exp(lg));
    }
    double b = z + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
    for (int i = 1; i < 1000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300)
            d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300)
            c = 1e-300;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15)
            break;
    }
    return exp(lg) * h;
}

static inline void mc_score(const double *law, const long *cnt, int cells, long N, int h, mc_stats *s)
{
    double tv = 0, etv = 0, vtv = 0, x2 = 0, mexp = 0, mobs = 0;
    int used = 0;
    for (int c = 0; c < cells; c++) {
        double e = law[c] * (double)N;
        tv += fabs((double)cnt[c] / (double)N - law[c]);
        /* |obs/N - p| ~ half-normal with sigma^2 = p(1-p)/N: mean sqrt(2/pi) sigma,
           variance (1 - 2/pi) sigma^2 (cells treated as independent) */
        double s2 = law[c] * (1 - law[c]) / (double)N;
        etv += sqrt(2 * s2 / M_PI);
        vtv += (1 - 2 / M_PI) * s2;
        if (e < 20) {
            mexp += e;
            mobs += (double)cnt[c];
        } else {
            x2 += ((double)cnt[c] - e) * ((double)cnt[c] - e) / e;
            used++;
        }
        if (law[c] == 0)
            cr_assert_eq(cnt[c], 0, "a zero-probability sequence was produced (cell %d)", c);
    }
    if (mexp > 0) {
        if (mexp >= 1)
            x2 += (mobs - mexp) * (mobs - mexp) / mexp;
        used++;
    }
    s->tv[h] = tv / 2;
    s->tv_bound[h] = etv / 2 + 6 * sqrt(vtv) / 2 + 1e-4; /* E[TV] + 6 sd */
    s->x2[h] = x2;
    s->df[h] = used > 1 ? used - 1 : 1;
    s->crit[h] = chi2_crit(s->df[h]);
    s->pval[h] = chi2_pvalue(x2, s->df[h]);
}

static inline mc_stats run_mc(const vm_model *m, const mc_cfg *c, long N)
{
    mc_stats s = {0};
    arb_err err = {0};
    arb_verifier_opts o = arb_verifier_default_opts();
    o.V = m->V;
    o.n_nodes_max = VM_NMAX;
    o.specinfer_uniform = c->uniform;
    if (c->khisti_s)
        o.khisti_s = c->khisti_s;
    arb_verifier *vf;
    cr_assert_eq(arb_verifier_new(c->verifier, &o, &vf, &err), 0, "%s", err.msg);
    if (c->broken) {
        cr_assert_str_eq(c->verifier, "traversal", "broken variants exist for traversal only");
        arb_traversal_set_broken(vf->ctx, c->broken);
    }
    arb_otan *an;
    cr_assert_eq(arb_otan_new(&o, &an, &err), 0, "%s", err.msg);
    static vm_draft d; /* large: keep off the stack */
    cr_assert_eq(arb_tree_init_seq(&d.t, VM_NMAX, 4 * VM_NMAX, &err), 0, "%s", err.msg);
    const int V = m->V;
    const uint64_t seed = c->seed ? c->seed : 20261122;
    double law1[VM_VMAX], law2[VM_VMAX * VM_VMAX];
    long cnt1[VM_VMAX] = {0}, cnt2[VM_VMAX * VM_VMAX] = {0};
    vm_target_law(m, 1, law1);
    vm_target_law(m, 2, law2);
    double sum_d = 0, sum_d2 = 0, sum_a = 0;
    long n_pair = 0;
    int32_t path[VM_NMAX];
    for (long i = 0; i < N; i++) {
        arb_rng dr, vr, sr;
        arb_rng_init(&dr, seed, c->id, (uint32_t)i, ARB_STREAM_DRAFT);
        arb_rng_init(&vr, seed, c->id, (uint32_t)i, ARB_STREAM_VERIFY);
        arb_rng_init(&sr, seed, c->id, (uint32_t)i, ARB_STREAM_SAMPLE);
        vm_draw(&d, m, &c->g, &dr);
        if (c->sorted)
            vm_sort_children(&d);
        arb_verify_in in = {.tree = &d.t, .p = d.P, .q = d.Q, .V = V, .rng = &vr};
        arb_verify_out out;
        cr_assert_eq(arb_verifier_verify(vf, &in, &out), 0);
        s.n_fallback += out.n_fallback;
        int np = arb_tree_path(&d.t, out.node, path), y[3], ny = 0;
        for (int j = 1; j < np && ny < 2; j++)
            y[ny++] = d.t.tok[path[j]];
        int ctx = 0;
        for (int j = 0; j < ny; j++)
            ctx = vm_child(m, ctx, y[j]);
        if (ny < 2) {
            y[ny++] = out.extra;
            ctx = vm_child(m, ctx, out.extra);
        }
        if (ny < 2)
            y[ny++] = arb_sample_w(&sr, m->p + (size_t)ctx * V, V);
        cnt1[y[0]]++;
        cnt2[y[0] * V + y[1]]++;
        double e; /* paired check on every 4th draw: the exact mean costs more than a verify */
        if (i % 4 == 0 && arb_otan_expected_accepted(an, vf, &in, &e) == ARB_OK) {
            double dd = out.depth - e;
            sum_d += dd;
            sum_d2 += dd * dd;
            n_pair++;
            s.paired = 1;
        }
        sum_a += out.depth;
    }
    mc_score(law1, cnt1, V, N, 1, &s);
    mc_score(law2, cnt2, V * V, N, 2, &s);
    s.n_pair = n_pair > 0 ? n_pair : 1;
    s.mean_diff = sum_d / (double)s.n_pair;
    s.sd_diff = sqrt(fmax(sum_d2 / (double)s.n_pair - s.mean_diff * s.mean_diff, 0));
    s.mean_acc = sum_a / (double)N;
    arb_tree_release(&d.t);
    arb_otan_free(an);
    arb_verifier_free(vf);
    return s;
}

static inline const char *regime_label(const vm_regime *g, char *buf, size_t n)
{
    if (g->kind == ARB_REGIME_DELAYED)
        snprintf(buf, n, "delayed(%d,%d,%d)", g->l, g->k, g->L);
    else if (g->kind == ARB_REGIME_SINGLE)
        snprintf(buf, n, "single(L=%d)", g->L);
    else
        snprintf(buf, n, "%s(k=%d,L=%d)", arb_regime_name((arb_regime)g->kind), g->k, g->L);
    return buf;
}

/* "nss", "specinfer/u", "khisti/s2": the verifier with its mode, for messages. */
static inline const char *cfg_label(const mc_cfg *c, char *buf, size_t n)
{
    if (c->uniform)
        snprintf(buf, n, "%s/u", c->verifier);
    else if (c->khisti_s)
        snprintf(buf, n, "%s/s%d", c->verifier, c->khisti_s);
    else
        snprintf(buf, n, "%s", c->verifier);
    return buf;
}

/* The paired accepted-length check: |mean(A - E)| <= 6 sd / sqrt(n). */
static inline bool paired_ok(const mc_stats *s)
{
    return !s->paired || s->sd_diff == 0 ||
           fabs(s->mean_diff) <= 6 * s->sd_diff / sqrt((double)s->n_pair) + 1e-12;
}

/* The §11.4 verdict: X² and TV for H = 1 and 2, and the paired check. */
static inline bool passes(const mc_stats *s)
{
    bool ok = paired_ok(s);
    for (int h = 1; h <= 2; h++)
        ok = ok && s->x2[h] <= s->crit[h] && s->tv[h] <= s->tv_bound[h];
    return ok;
}

#endif
