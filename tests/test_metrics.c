/* test_metrics.c — τ, tok/s, speedup (paired with AR), p_s/p_t, spine share, acceptance by
 * depth, synergy and the bootstrap intervals, on the synthetic fixture database; expected
 * values are recomputed here from the fixture's formulas. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_db.h"
#include "metrics.h"
#include "resample.h"

static char dir[256];
static arb_store *st;
static arb_run_info *runs;
static int n_runs;

static void setup(void)
{
    arb_err err = {0};
    cr_assert_eq(fx_tmp_open("metrics", dir, &st, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_metrics_list_runs(arb_store_db(st), &runs, &n_runs, &err), ARB_OK);
}

static void teardown(void)
{
    arb_metrics_free_runs(runs, n_runs);
    cr_expect_eq(fx_tmp_close(dir, st), 0);
}

static int run_index(int mdl, int d, int m)
{
    char key[17];
    fx_key(mdl, d, m, key);
    for (int i = 0; i < n_runs; i++)
        if (!strcmp(runs[i].run_key, key))
            return i;
    cr_assert_fail("run %s missing", key);
    return -1;
}

/* The stats of runs i and a (a method and its AR). */
static void load_pair(int i, int a, arb_run_stats *s, arb_run_stats *ar)
{
    arb_err err = {0};
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[i], s, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[a], ar, &err), ARB_OK, "%s", err.msg);
}

/* Expected sums for (mdl, d, m) straight from the fixture formulas. */
typedef struct sums { double gen, calls, wall, acc, steps, ap, pp, at, pt, cont; } sums;

static sums expect(int mdl, int d, int m)
{
    sums x = {0};
    for (int p = 0; p < FX_N_PROMPTS; p++) {
        int n = fx_steps(p);
        x.gen += 1, x.calls += n + 1, x.wall += (n + 1) * fx_call_us(mdl, m, p), x.steps += n;
        for (int s = 0; s < n; s++) {
            int k = fx_k(m, d, p, s);
            x.gen += k + 1, x.acc += k;
            x.ap += fx_acc_pld(m, k), x.pp += fx_prop_pld(m);
            x.at += k - fx_acc_pld(m, k), x.pt += fx_prop_tr(m);
            if (m >= 3 && k > 0 && s % 3 == 0)
                x.cont += k;
        }
    }
    return x;
}

Test(metrics, point_values_match_the_definitions, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    for (int mdl = 0; mdl < 2; mdl++)
        for (int d = 0; d < 2; d++)
            for (int m = 1; m < FX_N_METHODS; m++) {
                int i = run_index(mdl, d, m), a = arb_metrics_find_ar(runs, n_runs, i);
                cr_assert_eq(a, run_index(mdl, d, 0));
                arb_run_stats s, ar;
                cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[i], &s, &err), ARB_OK);
                cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[a], &ar, &err), ARB_OK);
                cr_assert_eq(s.n, FX_N_PROMPTS);
                sums x = expect(mdl, d, m), y = expect(mdl, d, 0);
                arb_ci v;
                arb_metrics_ci(&s, &ar, ARB_METRIC_TAU, 0, 0, &v);
                cr_assert_float_eq(v.v, x.gen / x.calls, 1e-12);
                arb_metrics_ci(&s, &ar, ARB_METRIC_TPS, 0, 0, &v);
                cr_assert_float_eq(v.v, x.gen / (x.wall / 1e6), 1e-9);
                arb_metrics_ci(&s, &ar, ARB_METRIC_SPEEDUP, 0, 0, &v);
                cr_assert_float_eq(v.v, (x.gen / x.wall) / (y.gen / y.wall), 1e-12);
                arb_metrics_ci(&s, &ar, ARB_METRIC_ACC_LEN, 0, 0, &v);
                cr_assert_float_eq(v.v, x.acc / x.steps, 1e-12);
                arb_metrics_ci(&s, NULL, ARB_METRIC_P_S, 0, 0, &v);
                if (x.pp > 0)
                    cr_assert_float_eq(v.v, x.ap / x.pp, 1e-12);
                else
                    cr_assert(isnan(v.v), "p_s with nothing proposed is undefined");
                arb_metrics_ci(&s, NULL, ARB_METRIC_P_T, 0, 0, &v);
                if (x.pt > 0)
                    cr_assert_float_eq(v.v, x.at / x.pt, 1e-12);
                else
                    cr_assert(isnan(v.v), "p_t with nothing proposed is undefined");
                arb_metrics_ci(&s, NULL, ARB_METRIC_SPINE_SHARE, 0, 0, &v);
                if (m >= 3)
                    cr_assert_float_eq(v.v, x.cont / x.acc, 1e-12);
                arb_metrics_ci(&s, NULL, ARB_METRIC_LOSSLESS, 0, 0, &v);
                cr_assert_float_eq(v.v, 1.0, 0);
                arb_metrics_ci(&s, NULL, ARB_METRIC_SPEEDUP, 0, 0, &v);
                cr_assert(isnan(v.v), "speedup without an AR run is undefined");
                arb_run_stats_release(&s);
                arb_run_stats_release(&ar);
            }
}

Test(metrics, acceptance_by_depth_and_histogram, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    int i = run_index(1, 1, 5);
    arb_run_stats s;
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[i], &s, &err), ARB_OK);
    int64_t hist[8] = {0}, reach[8] = {0}, acc[8] = {0};
    for (int p = 0; p < FX_N_PROMPTS; p++)
        for (int q = 0; q < fx_steps(p); q++) {
            int k = fx_k(5, 1, p, q);
            bool open = k < 6 && (p + q) % 3; /* the fixture's stop_fanout > 0 */
            hist[k]++;
            /* depth d was within reach iff k >= d, or k = d-1 and the last accepted node had
               children; accepted iff k >= d (tree depth 6) */
            for (int d = 1; d <= 6; d++) {
                reach[d] += k >= d || (k == d - 1 && open);
                acc[d] += k >= d;
            }
        }
    for (int k = 0; k < 8; k++)
        cr_assert_eq(s.hist[k], hist[k], "k=%d", k);
    for (int d = 1; d <= 6; d++) {
        cr_assert_eq(s.depth_reach[d], reach[d], "d=%d", d);
        cr_assert_eq(s.depth_acc[d], acc[d], "d=%d", d);
        if (d >= 2) /* reaching depth d needs d-1 accepted; some walks stop at a leaf */
            cr_assert_leq(s.depth_reach[d], s.depth_acc[d - 1], "d=%d", d);
    }
    cr_assert_eq(s.depth_reach[7], 0);
    arb_run_stats_release(&s);
}

Test(metrics, bootstrap_interval_brackets_and_is_deterministic, .init = setup, .fini = teardown)
{
    int i = run_index(0, 0, 3), a = run_index(0, 0, 0);
    arb_run_stats s, ar;
    load_pair(i, a, &s, &ar);
    for (int m = 0; m < ARB_METRIC_N_PROMPTS; m++) {
        arb_ci x, y;
        arb_metrics_ci(&s, &ar, (arb_metric)m, 500, 42, &x);
        arb_metrics_ci(&s, &ar, (arb_metric)m, 500, 42, &y);
        if (isnan(x.v))
            continue;
        cr_assert(x.lo <= x.v + 1e-12 && x.v <= x.hi + 1e-12, "%s: %g not in [%g, %g]",
                  arb_metric_name((arb_metric)m), x.v, x.lo, x.hi);
        cr_assert(x.lo == y.lo && x.hi == y.hi, "same seed, same interval");
    }
    /* τ varies across prompts here, so the interval has width */
    arb_ci t;
    arb_metrics_ci(&s, NULL, ARB_METRIC_TAU, 500, 1, &t);
    cr_assert_gt(t.hi - t.lo, 0);
    /* AR: τ is exactly 1 on every prompt, so every resample gives 1 */
    arb_metrics_ci(&ar, NULL, ARB_METRIC_TAU, 500, 1, &t);
    cr_assert(t.v == 1 && t.lo == 1 && t.hi == 1);
    arb_run_stats_release(&s);
    arb_run_stats_release(&ar);
}

Test(metrics, speedup_pairs_prompts_with_ar, .init = setup, .fini = teardown)
{
    int i = run_index(0, 1, 2), a = run_index(0, 1, 0);
    arb_run_stats s, ar;
    load_pair(i, a, &s, &ar);
    /* drop half of AR's prompts: speedup must use only the prompts both have */
    ar.n = 6;
    double g = 0, w = 0, ga = 0, wa = 0;
    for (int p = 0; p < 6; p++) {
        g += (double)s.p[p].n_gen, w += (double)s.p[p].wall_us;
        ga += (double)ar.p[p].n_gen, wa += (double)ar.p[p].wall_us;
    }
    arb_ci v;
    arb_metrics_ci(&s, &ar, ARB_METRIC_SPEEDUP, 0, 0, &v);
    cr_assert_float_eq(v.v, (g / w) / (ga / wa), 1e-12);
    ar.n = FX_N_PROMPTS;
    arb_run_stats_release(&s);
    arb_run_stats_release(&ar);
}

/* A paired rate metric (speedup_cpu, speedup_decode) and its rate (tps_cpu, tps_decode) on the
   fixture's run 2 against AR, checked against the sums written out: tokens less `first` per
   prompt over `time` per prompt (> 0 on every prompt). Then prompt 3's time made unknown (`forget`)
   must leave the speedup undefined. Returns the metric's and the wall speedup. */
static void check_paired_rate(arb_metric sp, arb_metric rate, double (*time)(const arb_prompt_stat *), int first,
                              void (*forget)(arb_prompt_stat *), double *v_sp, double *v_wall)
{
    int i = run_index(0, 1, 2), a = run_index(0, 1, 0);
    arb_run_stats s, ar;
    load_pair(i, a, &s, &ar);
    double g[2] = {0, 0}, t[2] = {0, 0};
    for (int r = 0; r < 2; r++)
        for (int p = 0; p < FX_N_PROMPTS; p++) {
            const arb_prompt_stat *x = r ? &ar.p[p] : &s.p[p];
            cr_assert_gt(time(x), 0, "prompt %d of %s", p, r ? "AR" : "the method");
            g[r] += (double)(x->n_gen - first), t[r] += time(x);
        }
    arb_ci v, w;
    arb_metrics_ci(&s, &ar, sp, 0, 0, &v);
    arb_metrics_ci(&s, &ar, ARB_METRIC_SPEEDUP, 0, 0, &w);
    cr_assert_float_eq(v.v, (g[0] / t[0]) / (g[1] / t[1]), 1e-12);
    *v_sp = v.v, *v_wall = w.v;
    arb_metrics_ci(&s, NULL, rate, 0, 0, &v);
    cr_assert_float_eq(v.v, g[0] / (t[0] / 1e6), 1e-9 * v.v);
    cr_assert(arb_metric_paired(sp) && !arb_metric_paired(rate));
    forget(&s.p[3]);
    arb_metrics_ci(&s, &ar, sp, 0, 0, &v);
    cr_assert(isnan(v.v));
    arb_run_stats_release(&s);
    arb_run_stats_release(&ar);
}

/* speedup_cpu: the same pairing over prompts.cpu_us (the fixture's methods spend 90 % of their
   wall time on the CPU, AR 100 %: 1/0.9 x the wall speedup); a prompt without cpu_us (a database
   from before schema 3) makes it undefined, not a number from the others. */
static double cpu_time(const arb_prompt_stat *p) { return (double)p->cpu_us; }
static void forget_cpu(arb_prompt_stat *p) { p->cpu_us = -1; }
Test(metrics, speedup_cpu_pairs_cpu_time, .init = setup, .fini = teardown)
{
    double v, w;
    check_paired_rate(ARB_METRIC_SPEEDUP_CPU, ARB_METRIC_TPS_CPU, cpu_time, 0, forget_cpu, &v, &w);
    cr_assert_float_eq(v, w / 0.9, 1e-3 * w);
}

/* speedup_decode: the tokens after the first over the time after the prefill, paired per prompt
   with AR (the fixture gives every method the same prefill, three AR calls long, which produced
   the first token); a prompt without prefill_us makes it undefined. */
static double time_after_prefill(const arb_prompt_stat *p)
{
    return p->prefill_us > 0 ? (double)(p->wall_us - p->prefill_us) : -1;
}
static void forget_prefill(arb_prompt_stat *p) { p->prefill_us = -1; }
Test(metrics, speedup_decode_leaves_out_the_prefill, .init = setup, .fini = teardown)
{
    double v, w;
    check_paired_rate(ARB_METRIC_SPEEDUP_DECODE, ARB_METRIC_TPS_DECODE, time_after_prefill, 1, forget_prefill, &v,
                      &w);
    cr_assert(fabs(v - w) > 1e-3 * w, "the prefill left out changes the ratio: %g vs %g", v, w);
    arb_metric m;
    arb_err err = {0};
    cr_assert_eq(arb_metric_parse("speedup_decode", &m, &err), ARB_OK);
    cr_assert_eq(m, ARB_METRIC_SPEEDUP_DECODE);
}

Test(metrics, synergy_is_tau_over_best_baseline, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    arb_run_stats g, p, t;
    int ig = run_index(1, 0, 3);
    cr_assert_eq(arb_metrics_find_sibling(runs, n_runs, ig, "PLD"), run_index(1, 0, 1));
    cr_assert_eq(arb_metrics_find_sibling(runs, n_runs, ig, "nope"), -1);
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[ig], &g, &err), ARB_OK);
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[run_index(1, 0, 1)], &p, &err), ARB_OK);
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[run_index(1, 0, 2)], &t, &err), ARB_OK);
    sums a = expect(1, 0, 3), b = expect(1, 0, 1), c = expect(1, 0, 2);
    arb_ci v;
    arb_metrics_synergy(&g, &p, &t, 200, 3, &v);
    cr_assert_float_eq(v.v, (a.gen / a.calls) / fmax(b.gen / b.calls, c.gen / c.calls), 1e-12);
    cr_assert(v.lo <= v.v && v.v <= v.hi);
    arb_run_stats_release(&g);
    arb_run_stats_release(&p);
    arb_run_stats_release(&t);
}

Test(metrics, metric_names_round_trip)
{
    arb_err err = {0};
    for (int m = 0; m < ARB_METRIC_COUNT; m++) {
        arb_metric x;
        cr_assert_eq(arb_metric_parse(arb_metric_name((arb_metric)m), &x, &err), ARB_OK);
        cr_assert_eq(x, m);
    }
    arb_metric x;
    cr_assert_eq(arb_metric_parse("taux", &x, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "taux") != NULL);
}

/* Runs of an approximate verifier (typical acceptance) at T > 0 carry "(approximate)" in the
   method labels every table prints; the same verifier at T = 0 is the exact greedy walk. */
Test(metrics, approximate_verifier_runs_are_labelled, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    const double temps[] = {0.7, 0.0};
    const char *verifiers[] = {"typical", "typical", "nss"};
    for (int i = 0; i < 3; i++) {
        char key[17];
        snprintf(key, sizeof key, "typ%d000000000000", i);
        arb_store_run r = {.run_key = key, .config_name = "fixture", .method = "EAGLE2", .base_method = "EAGLE2",
                           .drafter = "eagle2-draft", .topology = "", .verifier = verifiers[i], .sweep_json = "{}",
                           .model_id = "tiny-a", .model_sha256 = "00", .dataset = "humaneval",
                           .max_new_tokens = 128, .top_p = 1, .temperature = i == 1 ? temps[1] : temps[0]};
        cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
    }
    arb_run_info *rs;
    int n;
    cr_assert_eq(arb_metrics_list_runs(arb_store_db(st), &rs, &n, &err), ARB_OK, "%s", err.msg);
    int seen = 0;
    for (int i = 0; i < n; i++) {
        if (strncmp(rs[i].run_key, "typ", 3))
            continue;
        int which = rs[i].run_key[3] - '0';
        const char *want = which == 0 ? "EAGLE2 (approximate)" : "EAGLE2";
        cr_expect_str_eq(rs[i].method, want, "run %d", which);
        cr_expect_str_eq(rs[i].base_method, want, "run %d", which);
        seen++;
    }
    cr_expect_eq(seen, 3);
    arb_metrics_free_runs(rs, n);
}

/* The slow definition of arb_metrics_repeat_count: token i counts when its window of w ids equals
   the window ending at some earlier j. */
static int64_t repeats_by_definition(const int32_t *ids, int n, int w)
{
    int64_t rep = 0;
    for (int i = w - 1; i < n; i++)
        for (int j = w - 1; j < i; j++)
            if (!memcmp(ids + i - w + 1, ids + j - w + 1, (size_t)w * sizeof *ids)) {
                rep++;
                break;
            }
    return rep;
}

/* A prompt's text with loops planted in it: fresh tokens, then a period-p phrase repeated, then
   fresh tokens again; and runs of one token (overlapping windows) and near-misses (the phrase
   with one id changed, which must not count). */
static int planted(uint64_t *x, int32_t *ids, int n_max)
{
    int n = 0;
    while (n < n_max) {
        const int kind = (int)(arb_splitmix64(x) % 4), len = 8 + (int)(arb_splitmix64(x) % 60);
        if (kind == 0 || n < 20) { /* fresh ids from a small vocabulary: short chance repeats */
            for (int i = 0; i < len && n < n_max; i++)
                ids[n++] = (int32_t)(arb_splitmix64(x) % 7);
        } else if (kind == 1) { /* copy an earlier stretch: a verbatim loop */
            const int from = (int)(arb_splitmix64(x) % (uint64_t)(n - 1));
            for (int i = 0; i < len && n < n_max; i++, n++) /* from + i < n: may copy what it wrote */
                ids[n] = ids[from + i];
        } else if (kind == 2) { /* one token over and over */
            const int32_t t = (int32_t)(arb_splitmix64(x) % 7);
            for (int i = 0; i < len && n < n_max; i++)
                ids[n++] = t;
        } else { /* an earlier stretch with one id changed every 5 */
            const int from = (int)(arb_splitmix64(x) % (uint64_t)(n - 1));
            for (int i = 0; i < len && n < n_max; i++, n++)
                ids[n] = ids[from + i] + (i % 5 == 4 ? 100 : 0);
        }
    }
    return n;
}

Test(metrics, repeat_count_matches_its_definition)
{
    int32_t ids[600];
    uint64_t x = 42;
    const int ws[] = {1, 3, 16};
    int64_t some = 0;
    for (int trial = 0; trial < 40; trial++) {
        const int n = planted(&x, ids, 100 + 12 * trial);
        for (int k = 0; k < 3; k++) {
            const int64_t got = arb_metrics_repeat_count(ids, n, ws[k]);
            cr_assert_eq(got, repeats_by_definition(ids, n, ws[k]), "trial %d, n %d, w %d", trial, n, ws[k]);
            some += ws[k] == 16 ? got : 0;
        }
    }
    cr_assert_gt(some, 0, "the planted loops must give 16-token repeats");
    for (int i = 0; i < 40; i++)
        ids[i] = 9;
    cr_assert_eq(arb_metrics_repeat_count(ids, 40, 16), 40 - 16, "one token: every window after the first");
    cr_assert_eq(arb_metrics_repeat_count(ids, 15, 16), 0, "shorter than a window");
    for (int i = 0; i < 40; i++)
        ids[i] = i;
    cr_assert_eq(arb_metrics_repeat_count(ids, 40, 1), 0, "distinct ids");
}

/* repeat16 from the stored tokens: a run whose prompts' outputs loop, the share recomputed here
   from the ids written; a prompt without its ids leaves it undefined. The fixture's outputs are
   all distinct ids: 0. */
Test(metrics, repeat16_reads_the_stored_tokens, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    arb_store_run r = {.run_key = "loop000000000000", .config_name = "fixture", .method = "PLD", .base_method = "PLD",
                       .drafter = "pld", .topology = "", .sweep_json = "{}", .model_id = "tiny-c", .model_sha256 = "00",
                       .dataset = "humaneval", .max_new_tokens = 600, .top_p = 1};
    cr_assert_eq(arb_store_run_put(st, &r, &err), ARB_OK, "%s", err.msg);
    int32_t ids[600];
    uint64_t x = 7;
    double rep = 0, tot = 0;
    for (int p = 0; p < 5; p++) {
        const int n = planted(&x, ids, 200 + 80 * p);
        rep += (double)repeats_by_definition(ids, n, 16), tot += n;
        char pid[8];
        snprintf(pid, sizeof pid, "L/%d", p);
        arb_store_step step = {.step = 0, .n_nodes = 1, .accepted = 0, .committed = 1, .mode = "ar", .category = -1};
        arb_store_prompt pr = {.prompt_id = pid, .prompt_idx = p, .n_prompt = 10, .n_gen = n, .n_calls = n,
                               .wall_us = 1000, .n_repeats = 1, .stop = "limit", .lossless = 1, .ids = ids};
        cr_assert_eq(arb_store_prompt_put(st, r.run_key, &pr, &step, 1, &err), ARB_OK, "%s", err.msg);
    }
    cr_assert_gt(rep, 0);
    arb_run_info *rs;
    int n;
    cr_assert_eq(arb_metrics_list_runs(arb_store_db(st), &rs, &n, &err), ARB_OK, "%s", err.msg);
    int li = -1;
    for (int i = 0; i < n; i++)
        li = strcmp(rs[i].run_key, r.run_key) ? li : i;
    cr_assert_geq(li, 0);
    arb_run_stats s, f;
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &rs[li], &s, &err), ARB_OK, "%s", err.msg);
    arb_ci v;
    arb_metrics_ci(&s, NULL, ARB_METRIC_REPEAT16, 0, 0, &v);
    cr_assert_float_eq(v.v, rep / tot, 1e-12);
    s.p[2].n_ids = -1;
    arb_metrics_ci(&s, NULL, ARB_METRIC_REPEAT16, 0, 0, &v);
    cr_assert(isnan(v.v));
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &rs[run_index(0, 0, 1)], &f, &err), ARB_OK, "%s", err.msg);
    arb_metrics_ci(&f, NULL, ARB_METRIC_REPEAT16, 0, 0, &v);
    cr_assert_float_eq(v.v, 0.0, 1e-12);
    arb_run_stats_release(&s);
    arb_run_stats_release(&f);
    arb_metrics_free_runs(rs, n);
}
