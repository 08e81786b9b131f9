/* test_dte_depth.c — the DTE Fig. 1 experiment library (harness/dte_depth.h) on the default
 * model and math500 (skips without either): the --shape/--settings grammars, and a tiny run
 * whose tables are deterministic for a seed and whose figures stay in their ranges (rates
 * in [0, 1], L1 in [0, 2], one node per root at each depth, block efficiency in
 * [1, 1 + tree depth]). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dte_depth.h"
#include "modelfetch.h"

Test(dte_depth, shape_and_settings_grammar)
{
    arb_err err = {0};
    arb_dte_depth_opts o = arb_dte_depth_default_opts();
    cr_assert_eq(arb_dte_depth_parse_shapes("1,0,4;3,1,3", &o, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(o.n_shapes, 2);
    cr_assert(o.shapes[1].k == 3 && o.shapes[1].l == 1 && o.shapes[1].b == 3);
    cr_assert_eq(arb_dte_depth_parse_shapes("8,0,8", &o, &err), ARB_E_INVAL, "1 + 64 nodes is over the cap");
    cr_assert(strstr(err.msg, "--shape '8,0,8'"), "%s", err.msg);
    cr_assert_eq(arb_dte_depth_parse_shapes("1,0", &o, &err), ARB_E_INVAL);
    cr_assert_eq(arb_dte_depth_parse_shapes("", &o, &err), ARB_E_INVAL);
    cr_assert_eq(arb_dte_depth_parse_settings("0.6;1:0.9", &o, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(o.n_settings, 2);
    cr_assert(o.temperature[0] == 0.6 && o.top_p[0] == 1 && o.temperature[1] == 1 && o.top_p[1] == 0.9);
    cr_assert_eq(arb_dte_depth_parse_settings("0", &o, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "--settings '0'"), "%s", err.msg);
    cr_assert_eq(arb_dte_depth_parse_settings("1:1.5", &o, &err), ARB_E_INVAL);
}

/* One tiny run's stdout (depth table, then the block-efficiency tables) into buf. */
static int run_once(const arb_dte_depth_opts *o, char *buf, size_t cap, arb_err *err)
{
    arb_dte_depth *d = NULL;
    int rc = arb_dte_depth_new(o, &d, err);
    if (!rc)
        rc = arb_dte_depth_run(d, err);
    FILE *f = tmpfile();
    cr_assert(f != NULL);
    if (!rc) {
        arb_dte_depth_print_depth(d, f);
        rc = arb_dte_depth_print_be(d, f, err);
    }
    rewind(f);
    const size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    arb_dte_depth_free(d);
    return rc;
}

/* Drop the timing columns (ms per tree, tok/s) so two runs compare. */
static void strip_times(char *s)
{
    char *be = strstr(s, "| shape (k,l,b)");
    if (be)
        *be = 0;
}

Test(dte_depth, tiny_run_is_deterministic_and_in_range, .timeout = 900)
{
    char path[4096];
    arb_err err = {0};
    if (arb_model_resolve("default", path, sizeof path, &err))
        cr_skip_test("default model not available (arbor fetch-model)");
    if (!getenv("ARBOR_DATA"))
        cr_skip_test("ARBOR_DATA not set (math500 needed)");
    arb_dte_depth_opts o = arb_dte_depth_default_opts();
    o.limit = 1, o.max_new = 8, o.every = 4, o.depth = 3, o.paths = 2, o.threads = 1, o.seed = 7;
    cr_assert_eq(arb_dte_depth_parse_shapes("1,0,2;2,0,1", &o, &err), ARB_OK);
    static char a[1 << 16], b[1 << 16];
    int rc = run_once(&o, a, sizeof a, &err);
    if (rc == ARB_E_NOTFOUND)
        cr_skip_test("%s", err.msg);
    cr_assert_eq(rc, ARB_OK, "%s", err.msg);
    cr_assert_eq(run_once(&o, b, sizeof b, &err), ARB_OK, "%s", err.msg);
    cr_assert(strstr(a, ", 2 roots\n"), "8 tokens, a root every 4: %s", a);
    /* per depth: "| d | nodes | L1 | NSS | NaiveTree | SpecInfer | SpecTr | Khisti |" */
    int rows = 0;
    for (const char *p = strstr(a, "|---|"); p && (p = strstr(p, "\n| ")) && p[3] >= '0' && p[3] <= '9'; p++) {
        int dd, nodes;
        double l1, r[5];
        cr_assert_eq(sscanf(p, "\n| %d | %d | %lf | %lf | %lf | %lf | %lf | %lf |", &dd, &nodes, &l1, &r[0], &r[1], &r[2],
                            &r[3], &r[4]), 8, "%.80s", p + 1);
        cr_assert_eq(dd, rows);
        cr_assert_eq(nodes, 2, "one node per root at depth %d", dd);
        cr_assert(l1 >= 0 && l1 <= 2 + 1e-9, "L1 %f", l1);
        for (int k = 0; k < 5; k++)
            cr_assert(r[k] >= 0 && r[k] <= 1 + 1e-9, "rate %f", r[k]);
        rows++;
    }
    cr_assert_eq(rows, 3, "depths 0..2: %s", a);
    /* block efficiency of each verifier on shape (1,0,2): in [1, 1 + 2] */
    const char *be = strstr(a, "| (1,0,2) | ");
    cr_assert(be != NULL, "%s", a);
    be = strchr(be + 12, '|');
    for (int i = 0; i < 8; i++) {
        double x = 0;
        cr_assert_eq(sscanf(be, "| %lf", &x), 1, "%.60s", be);
        cr_assert(x >= 1 - 1e-9 && x <= 3 + 1e-9, "BE %f", x);
        be = strchr(be + 1, '|');
    }
    strip_times(a);
    strip_times(b);
    cr_assert_str_eq(a, b, "same seed, same tables");
    /* one root: the Traversal-vs-verifier intervals are points, so no verdict but inconclusive */
    o.every = 8;
    cr_assert_eq(run_once(&o, a, sizeof a, &err), ARB_OK, "%s", err.msg);
    cr_assert(strstr(a, ", 1 roots\n"), "%s", a);
    cr_assert(strstr(a, "| inconclusive (one root) |"), "%s", a);
    cr_assert(!strstr(a, "| holds |") && !strstr(a, "| fails |"), "%s", a);
}
