/* test_autobudget.c — `"budget": "auto"`: the pick follows the cost curve (a flat GPU-like
 * curve takes the largest tree, a linear CPU-like one the smallest), "auto" parses from
 * configs and --set and is refused where it does not apply, and resolution finds this
 * machine's profile or says which command makes one. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autobudget.h"
#include "method.h"
#include "tiny_models.h"

static const double p_default[] = {0.6, 0.2, 0.1, 0.05, 0};

static arb_cost_model curve(double slope_per_node)
{
    arb_cost_model cm = {.n_knots = 2, .knot = {1, 128}, .w_us = {1000.0, 1000.0 + slope_per_node * 127}};
    return cm;
}

Test(autobudget, flat_cost_takes_the_largest_tree)
{
    const arb_cost_model cm = curve(0.0);
    int B;
    double sp;
    arb_err err = {0};
    cr_assert_eq(arb_autobudget_pick(&cm, p_default, 7, 512, 2, 64, &B, &sp, &err), ARB_OK, "%s", err.msg);
    /* τ̂ never falls with B, so with free nodes the largest feasible tree wins (ties: first) */
    cr_assert_geq(B, 40, "B = %d", B);
    cr_assert_gt(sp, 1.5);
}

Test(autobudget, linear_cost_takes_a_small_tree)
{
    const arb_cost_model cm = curve(1000.0); /* every node costs a whole eval */
    int B;
    double sp;
    arb_err err = {0};
    cr_assert_eq(arb_autobudget_pick(&cm, p_default, 7, 512, 2, 64, &B, &sp, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(B, 2, "B = %d", B); /* τ̂(2) / 2 = 0.8 is the best a linear cost allows */
    cr_assert_float_eq(sp, (1.0 + 0.6) / 2.0, 1e-9);
}

Test(autobudget, a_cheaper_node_never_picks_a_smaller_tree)
{
    int last = 0;
    for (int k = 0; k <= 10; k++) {
        const arb_cost_model cm = curve(1000.0 * (1.0 - k / 10.0));
        int B;
        double sp;
        arb_err err = {0};
        cr_assert_eq(arb_autobudget_pick(&cm, p_default, 7, 512, 2, 64, &B, &sp, &err), ARB_OK, "%s", err.msg);
        cr_assert_geq(B, last, "slope %d/10: B = %d after %d", 10 - k, B, last);
        last = B;
    }
}

Test(autobudget, auto_parses_and_numbers_override_it)
{
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    cr_assert_eq(arb_method_param_set(&s, "budget", "auto", &err), ARB_OK, "%s", err.msg);
    cr_assert(s.budget_auto);
    cr_assert_eq(arb_method_param_set(&s, "budget", "24", &err), ARB_OK);
    cr_assert(!s.budget_auto);
    cr_assert_eq(s.budget, 24);
    cr_assert_eq(arb_method_param_set(&s, "max_depth", "auto", &err), ARB_E_INVAL); /* budget only */
    cr_assert(strstr(err.msg, "max_depth"), "%s", err.msg);
    cr_assert_eq(arb_autobudget_pick(&(arb_cost_model){.n_knots = 1, .knot = {1}, .w_us = {1}}, (double[]){0}, 7,
                                     0, 2, 8, &(int){0}, &(double){0}, &err),
                 ARB_E_INVAL);
    cr_assert(strstr(err.msg, "empty acceptance"), "%s", err.msg);
}

Test(autobudget, resolve_finds_the_profile_or_names_the_command)
{
    char dir[] = "/tmp/arb_autoXXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("ARBOR_CACHE", dir, 1);
    synth_opts so = {.arch = "llama", .seed = 3};
    arb_model *m = load_synth(&so, 1);
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    s.budget_auto = true;
    cr_assert_eq(arb_autobudget_resolve(m, 1, &s, NULL, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "--save-profile") && strstr(err.msg, dir), "%s", err.msg);
    /* write the profile where the bench would, for this machine, model and thread count */
    arb_machine mach;
    arb_machine_get(&mach);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    char fp[200], path[4400];
    arb_cost_fingerprint(fp, sizeof fp, mach.cpu_model, arb_cpu_kernels(NULL), 1, mi.name, (double)mi.weight_bytes);
    cr_assert_eq(arb_cost_profile_path(fp, true, path, sizeof path, &err), ARB_OK, "%s", err.msg);
    arb_cost_model cm = curve(1000.0);
    cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_autobudget_resolve(m, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert(!s.budget_auto);
    cr_assert_eq(s.budget, 2);
    arb_model_free(m);
    unlink(path);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
