/* test_plot.c — figures from the fixture database: the data files carry the metrics, the
 * scripts embed the templates, gnuplot renders real PNG and SVG files; bad figure names and
 * a missing template directory are errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture_db.h"
#include "metrics.h"
#include "plot.h"

static char dir[256], out[300];
static arb_store *st;

static void setup(void)
{
    arb_err err = {0};
    cr_assert_eq(fx_tmp_open("plot", dir, &st, &err), ARB_OK, "%s", err.msg);
    snprintf(out, sizeof out, "%s/fig", dir);
}

static void teardown(void)
{
    cr_expect_eq(fx_tmp_close(dir, st), 0);
}

static const char *templates(void)
{
    static char t[1024];
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    if (!root)
        cr_skip("ARBOR_SOURCE_ROOT not set (run through meson test)");
    snprintf(t, sizeof t, "%s/plots", root);
    return t;
}

/* The file at dir/name, up to cap - 1 bytes, NUL-terminated into buf. */
static void read_text(const char *dir_, const char *name, char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir_, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    size_t nb = fread(buf, 1, cap - 1, f);
    buf[nb] = 0;
    fclose(f);
}

/* Options for one figure into out/, rendered when gnuplot is installed. */
static arb_plot_opts figure_opts(const char *figure)
{
    arb_plot_opts o = arb_plot_default_opts();
    o.figure = figure;
    o.out_dir = out;
    o.templates = templates();
    o.render = system("gnuplot --version >/dev/null 2>&1") == 0;
    return o;
}

static bool starts_with_file(const char *path, const void *magic, size_t n)
{
    unsigned char buf[64];
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    return got == n && !memcmp(buf, magic, n);
}

Test(plot, speedup_data_matches_metrics_and_renders, .init = setup, .fini = teardown)
{
    arb_plot_opts o = figure_opts("speedup");
    arb_err err = {0};
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_OK, "%s", err.msg);
    /* tiny-b / mt-bench / GOOSE from the .dat equals the metric */
    char path[400], line[512];
    snprintf(path, sizeof path, "%s/speedup.dat", out);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    int block = 0, goose_col = -1;
    double got = NAN;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n') {
            block += line[0] == '\n';
            continue;
        }
        if (!strncmp(line, "dataset", 7)) {
            int col = 0;
            for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n"), col++)
                if (!strcmp(t, "GOOSE"))
                    goose_col = col;
            continue;
        }
        if (block == 2 && !strncmp(line, "mt-bench", 8)) { /* second model: blocks 0 and 2 */
            int col = 0;
            for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n"), col++)
                if (col == goose_col)
                    got = atof(t);
        }
    }
    fclose(f);
    arb_run_info *runs;
    int n;
    cr_assert_eq(arb_metrics_list_runs(arb_store_db(st), &runs, &n, &err), ARB_OK);
    char key[17];
    fx_key(1, 1, 3, key);
    int i = 0;
    while (strcmp(runs[i].run_key, key))
        i++;
    arb_run_stats s, ar;
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[i], &s, &err), ARB_OK);
    cr_assert_eq(arb_metrics_load(arb_store_db(st), &runs[arb_metrics_find_ar(runs, n, i)], &ar, &err), ARB_OK);
    arb_ci v;
    arb_metrics_ci(&s, &ar, ARB_METRIC_SPEEDUP, 0, 0, &v);
    cr_assert_float_eq(got, v.v, 1e-4, "dat %g vs metric %g", got, v.v);
    arb_run_stats_release(&s);
    arb_run_stats_release(&ar);
    arb_metrics_free_runs(runs, n);
    char body[8192];
    read_text(out, "speedup.gp", body, sizeof body);
    cr_assert(strstr(body, "datafile = 'speedup.dat'") && strstr(body, "nblocks = 2") &&
              strstr(body, "set style histogram clustered"), "%s", body);
    if (!o.render)
        cr_skip("gnuplot not installed: data and script checked, rendering skipped");
    snprintf(path, sizeof path, "%s/speedup.png", out);
    cr_assert(starts_with_file(path, "\x89PNG\r\n\x1a\n", 8), "%s is no PNG", path);
    snprintf(path, sizeof path, "%s/speedup.svg", out);
    cr_assert(starts_with_file(path, "<?xml", 5), "%s is no SVG", path);
}

Test(plot, all_figures_render, .init = setup, .fini = teardown)
{
    if (system("gnuplot --version >/dev/null 2>&1") != 0)
        cr_skip("gnuplot not installed");
    arb_plot_opts o = arb_plot_default_opts();
    o.out_dir = out;
    o.templates = templates();
    arb_err err = {0};
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_OK, "%s", err.msg);
    const char *names[] = {"speedup", "ps_pt", "tau_sweep", "accept_hist"};
    for (int i = 0; i < 4; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s.png", out, names[i]);
        cr_assert(starts_with_file(path, "\x89PNG", 4), "%s", path);
        snprintf(path, sizeof path, "%s/%s.log", out, names[i]);
        cr_assert(!starts_with_file(path, "", 0), "gnuplot left a log: %s", path);
    }
}

Test(plot, errors_name_the_problem, .init = setup, .fini = teardown)
{
    arb_plot_opts o = arb_plot_default_opts();
    o.out_dir = out;
    o.render = false;
    arb_err err = {0};
    o.figure = "pie";
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "pie") != NULL);
    o.figure = "speedup";
    o.templates = "/nonexistent/plots";
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "/nonexistent/plots/speedup.gp") != NULL, "%s", err.msg);
    o.templates = templates();
    o.figure = "tau_sweep";
    o.param = "colour";
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "colour") != NULL, "%s", err.msg);
}

/* More methods than one figure can show is an error naming the limit, never a figure that
   silently leaves some out. 121 extra + the fixture's 6 speculative methods = 127 fit; 2 more
   do not. */
Test(plot, too_many_series_is_an_error, .init = setup, .fini = teardown)
{
    arb_err err = {0};
    arb_plot_opts o = figure_opts("accept_hist");
    o.render = false;
    cr_assert_eq(fx_add_methods(st, 122, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_OK, "128 methods fit: %s", err.msg);
    arb_store_run_put(st, &(arb_store_run){.run_key = "y000000000000000", .config_name = "fixture",
                                           .method = "one-too-many", .base_method = "one-too-many",
                                           .drafter = "pld", .topology = "", .sweep_json = "{}",
                                           .model_id = "tiny-a", .model_sha256 = "00",
                                           .dataset = "humaneval", .max_new_tokens = 128, .top_p = 1},
                      &err);
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_E_RANGE);
    cr_assert(strstr(err.msg, "accept_hist") && strstr(err.msg, "128"), "%s", err.msg);
}

/* The helpers `arbor dte-depth --plot` uses: a .dat written by the caller, the dte_depth
   template (DTE Fig. 1: acceptance per depth and L1(p,q)) rendered to PNG and SVG. */
Test(plot, dte_depth_script_and_render_helpers, .init = setup, .fini = teardown)
{
    cr_assert_eq(mkdir(out, 0777), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/dte_depth.dat", out);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("# test\ndepth nodes L1 NSS NaiveTree SpecInfer SpecTr Khisti-LB\n", f);
    for (int d = 0; d < 6; d++)
        fprintf(f, "%d 10 %.3f %.3f %.3f %.3f %.3f %.3f\n", d, 0.5 + 0.1 * d, 0.6 - 0.05 * d, 0.65 - 0.05 * d,
                0.7 - 0.05 * d, 0.7 - 0.05 * d, 0.72 - 0.05 * d);
    cr_assert_eq(fclose(f), 0);
    arb_err err = {0};
    cr_assert_eq(arb_plot_script(out, "/nonexistent/plots", "dte_depth", "", 800, 400, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "/nonexistent/plots/dte_depth.gp"), "%s", err.msg);
    cr_assert_eq(arb_plot_script(out, templates(), "dte_depth", "ncols = 8\ntitle_text = 't'\n", 800, 400, &err),
                 ARB_OK, "%s", err.msg);
    char body[8192];
    read_text(out, "dte_depth.gp", body, sizeof body);
    cr_assert(strstr(body, "datafile = 'dte_depth.dat'\nncols = 8\n") && strstr(body, "set multiplot") &&
              strstr(body, "set output 'dte_depth.png'"), "%s", body);
    cr_assert_eq(arb_plot_render("/tmp/it's", "dte_depth", &err), ARB_E_INVAL);
    if (system("gnuplot --version >/dev/null 2>&1") != 0)
        cr_skip("gnuplot not installed: script checked, rendering skipped");
    cr_assert_eq(arb_plot_render(out, "dte_depth", &err), ARB_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/dte_depth.png", out);
    cr_assert(starts_with_file(path, "\x89PNG\r\n\x1a\n", 8), "%s is no PNG", path);
    snprintf(path, sizeof path, "%s/dte_depth.svg", out);
    cr_assert(starts_with_file(path, "<?xml", 5), "%s is no SVG", path);
}

Test(plot, depth_accept_pools_a_method_over_its_runs, .init = setup, .fini = teardown)
{
    arb_plot_opts o = figure_opts("depth_accept");
    arb_err err = {0};
    cr_assert_eq(arb_plot_write(arb_store_db(st), &o, &err), ARB_OK, "%s", err.msg);
    /* GOOSE (method 3), depth 2, over both models and datasets: steps with k >= 2 among those
       that could reach depth 2: k >= 2, or k = 1 with children under the accepted node (the
       fixture's stop_fanout) */
    long reach = 0, acc = 0;
    for (int mdl = 0; mdl < 2; mdl++)
        for (int d = 0; d < 2; d++)
            for (int p = 0; p < FX_N_PROMPTS; p++)
                for (int s = 0; s < fx_steps(p); s++) {
                    int k = fx_k(3, d, p, s);
                    reach += k >= 2 || (k == 1 && (p + s) % 3), acc += k >= 2;
                }
    char path[400], line[512];
    snprintf(path, sizeof path, "%s/depth_accept.dat", out);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    cr_assert(fgets(line, sizeof line, f));
    cr_assert(!strcmp(line, "depth PLD TR GOOSE Iso3 Iso5 no-bypass\n"), "%s", line); /* no AR */
    double got = NAN, pld, tr, goose;
    int depth;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d %lf %lf %lf", &depth, &pld, &tr, &goose) == 4 && depth == 2)
            got = goose;
    fclose(f);
    cr_assert_float_eq(got, (double)acc / (double)reach, 1e-5, "dat %g vs %ld/%ld", got, acc, reach);
    if (o.render) {
        snprintf(path, sizeof path, "%s/depth_accept.png", out);
        cr_assert(starts_with_file(path, "\x89PNG", 4), "%s", path);
    }
}
