/* test_autobudget.c — `"budget": "auto"`: the pick follows the cost curve (a flat GPU-like
 * curve takes the largest tree, a linear CPU-like one the smallest), "auto" parses from
 * configs and --set and is refused where it does not apply, and resolution finds this
 * machine's profile or says which command makes one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arb_git_rev.h"
#include "autobudget.h"
#include "drafters/tr.h"
#include "genutil.h"
#include "heads_file.h"
#include "method.h"
#include "sha256.h"
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

/* rm -rf of a test's temporary directory. */
static void remove_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Where the bench saves a one-thread profile for model m on this machine (directories made). */
static void profile_path_for(const arb_model *m, char *path, size_t cap)
{
    arb_machine mach;
    arb_machine_get(&mach);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    char fp[200];
    arb_err err = {0};
    arb_cost_fingerprint(fp, sizeof fp, mach.cpu_model, arb_cpu_kernels(NULL), 1, mi.name, (double)mi.weight_bytes);
    cr_assert_eq(arb_cost_profile_path(fp, true, path, cap, &err), ARB_OK, "%s", err.msg);
}

/* A resolve test's setup: a fresh cache directory (dir, "/tmp/arb_autoXXXXXX") as
   ARBOR_CACHE, a synthetic llama on one CPU thread and a 64-token context on it. */
static arb_model *cache_model_ctx(char *dir, arb_ctx **c)
{
    cr_assert(mkdtemp(dir));
    setenv("ARBOR_CACHE", dir, 1);
    synth_opts so = {.arch = "llama", .seed = 3};
    arb_model *m = load_synth(&so, 1);
    arb_err err = {0};
    *c = NULL;
    cr_assert_eq(arb_ctx_new(m, &(arb_ctx_opts){.n_ctx = 64}, c, &err), ARB_OK, "%s", err.msg);
    return m;
}

Test(autobudget, resolve_finds_the_profile_or_names_the_command)
{
    char dir[] = "/tmp/arb_autoXXXXXX";
    arb_ctx *c;
    arb_model *m = cache_model_ctx(dir, &c);
    arb_method_spec s;
    arb_err err = {0};
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    s.budget_auto = true;
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "--save-profile") && strstr(err.msg, dir), "%s", err.msg);
    /* write the profile where the bench would, for this machine, model and thread count */
    char path[4400];
    profile_path_for(m, path, sizeof path);
    arb_cost_model cm = curve(1000.0);
    cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert(!s.budget_auto);
    cr_assert_eq(s.budget, 2);
    /* a node costs as much as the first: B = 2 is predicted at 1.6 / 2 = 0.8x AR, so the AR guard
       measures instead (greedy only) */
    cr_assert(s.ar_guard, "predicted below AR: ar_guard on");
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    s.budget_auto = true;
    s.temperature = 0.7;
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert_not(s.ar_guard, "sampling: no guard");
    s.temperature = 0;
    /* a profile of another build (or of none) is used, with a note that says so; this build's is not noted */
    const char *builds[3] = {"", "0123abc", ARB_GIT_REV};
    for (int k = 0; k < 3; k++) {
        snprintf(cm.build, sizeof cm.build, "%s", builds[k]);
        cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
        char *text = NULL;
        size_t len = 0;
        FILE *log = open_memstream(&text, &len);
        s.budget_auto = true;
        cr_assert_eq(arb_autobudget_resolve(c, 1, &s, log, &err), ARB_OK, "%s", err.msg);
        fclose(log);
        cr_assert_eq(s.budget, 2);
        cr_assert(strstr(text, "predicted below AR: ar_guard on"), "%s", text);
        s.ar_guard = false;
        const char *note = strstr(text, "note: this machine's cost profile was measured by");
        if (k == 2)
            cr_assert_null(note, "%s", text);
        else
            cr_assert(note && strstr(note, k ? "arbor 0123abc" : "no build recorded") && strstr(note, "--save-profile"),
                      "%s", text);
        free(text);
    }
    arb_ctx_free(c);
    arb_model_free(m);
    unlink(path);
    remove_dir(dir);
}

/* The fingerprint a run looks its profile up by (arb_gen_cost_fingerprint): on a CPU context
   the bench's CPU fingerprint (this CPU, the kernels, the threads; 0 = all cores), and a GPU's
   profile for the same model (arb_cost_fingerprint_gpu: device, backend) is not a CPU run's:
   with only that one saved, a CPU run still asks for its own. */
Test(autobudget, a_cpu_run_reads_the_cpu_profile_only)
{
    char dir[] = "/tmp/arb_autoXXXXXX";
    arb_ctx *c;
    arb_model *m = cache_model_ctx(dir, &c);
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    cr_assert_str_eq(mi.backend, "cpu");
    arb_machine mach;
    arb_machine_get(&mach);
    const arb_load_opts lo = arb_gen_load_opts();
    char got[200], want[200], kl[32];
    for (int t = 0; t <= 2; t++) {
        cr_assert_eq(arb_gen_cost_fingerprint(c, t, got, sizeof got, &err), ARB_OK, "%s", err.msg);
        arb_cost_fingerprint(want, sizeof want, mach.cpu_model, arb_gen_kernels_label(&lo, kl, sizeof kl),
                             t ? t : mach.n_cores, mi.name, (double)mi.weight_bytes);
        cr_assert_str_eq(got, want, "threads %d", t);
    }
    char gpu_fp[200], path[4400];
    arb_cost_fingerprint_gpu(gpu_fp, sizeof gpu_fp, "NVIDIA H100 80GB HBM3", "cuda-exact", mi.name,
                             (double)mi.weight_bytes);
    cr_assert(strcmp(gpu_fp, got) && strstr(gpu_fp, "H100") && strstr(gpu_fp, "cuda-exact"), "%s", gpu_fp);
    cr_assert_eq(arb_cost_profile_path(gpu_fp, true, path, sizeof path, &err), ARB_OK, "%s", err.msg);
    arb_cost_model cm = curve(0.0);
    cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), ARB_OK);
    s.budget_auto = true;
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_E_NOTFOUND, "the GPU's profile budgeted a CPU run");
    cr_assert(strstr(err.msg, "this machine's cost profile") && strstr(err.msg, "--threads 1"), "%s", err.msg);
    arb_ctx_free(c);
    arb_model_free(m);
    remove_dir(dir);
}

/* TR "auto": template 2.2.2 cut to its likeliest nodes under sequoia_p. */
Test(autobudget, tr_prune_keeps_the_likeliest_prefix_closed_nodes)
{
    static const double p[] = {0.35, 0.12, 0.06, 0.04, 0.03, 0.02, 0.015, 0.01, 0};
    int32_t parent[128];
    int16_t rank[128];
    const int n = arb_tr_template(parent, rank, 128);
    cr_assert_eq(n, 81);
    double prob[128], all = 0;
    prob[0] = 1;
    for (int i = 1; i < n; i++)
        prob[i] = prob[parent[i]] * p[rank[i]];
    for (int i = 0; i < n; i++)
        all += prob[i];
    for (int B = 1; B <= 81; B += 4) {
        int32_t pa[128];
        int16_t rk[128];
        memcpy(pa, parent, sizeof pa);
        memcpy(rk, rank, sizeof rk);
        double tau;
        const int m = arb_tr_template_prune(pa, rk, n, p, B, &tau);
        cr_assert_eq(m, B);
        /* prefix-closed, canonical (a parent before its child), and each kept node at least as
           likely as the B-th likeliest of the whole template */
        double kept[128], sorted[128];
        kept[0] = 1;
        for (int i = 1; i < m; i++) {
            cr_assert(pa[i] >= 0 && pa[i] < i);
            kept[i] = kept[pa[i]] * p[rk[i]];
        }
        memcpy(sorted, prob, sizeof(double) * (size_t)n);
        for (int i = 0; i < n; i++) /* descending selection sort */
            for (int j = i + 1; j < n; j++)
                if (sorted[j] > sorted[i]) {
                    const double x = sorted[i];
                    sorted[i] = sorted[j];
                    sorted[j] = x;
                }
        double want = 0, got = 0;
        for (int i = 0; i < m; i++)
            want += sorted[i], got += kept[i];
        cr_assert_float_eq(tau, want, 1e-12, "B %d", B);
        cr_assert_float_eq(got, want, 1e-12, "B %d", B);
    }
    double tau;
    cr_assert_eq(arb_tr_template_prune(parent, rank, n, p, 500, &tau), 81); /* whole */
    cr_assert_float_eq(tau, all, 1e-12);
}

Test(autobudget, tr_pick_follows_the_cost_curve)
{
    static const double p[] = {0.35, 0.12, 0.06, 0.04, 0.03, 0.02, 0.015, 0.01, 0};
    int B;
    double sp;
    arb_err err = {0};
    const arb_cost_model flat = curve(0.0), lin = curve(1000.0);
    cr_assert_eq(arb_autobudget_pick_tr(&flat, p, 512, 2, 128, &B, &sp, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(B, 81); /* free nodes: the whole template (it has 81) */
    cr_assert_eq(arb_autobudget_pick_tr(&lin, p, 512, 2, 128, &B, &sp, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(B, 2);
    cr_assert_float_eq(sp, 1.35 / 2.0, 1e-9);
}

Test(autobudget, auto_presets_and_what_resolve_sets)
{
    char dir[] = "/tmp/arb_auto2XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("ARBOR_CACHE", dir, 1);
    synth_opts so = {.arch = "llama", .seed = 3};
    arb_model *m = load_synth(&so, 1);
    arb_ctx *c = NULL;
    cr_assert_eq(arb_ctx_new(m, &(arb_ctx_opts){.n_ctx = 64}, &c, &(arb_err){0}), ARB_OK);
    arb_err err = {0};
    char path[4400];
    profile_path_for(m, path, sizeof path);
    /* this CPU's shape: w(1) 3.2 ms, +0.13 ms a node up to 64 nodes */
    arb_cost_model cm = {.n_knots = 2, .knot = {1, 64}, .w_us = {3200, 3200 + 130 * 63}, .ctx_us = 0.78,
                         .ctx0_us = 3.6};
    cr_assert_eq(arb_cost_save(&cm, path, &err), ARB_OK, "%s", err.msg);
    arb_method_spec s;
    /* PLD: the chain length per step (the cost table set, the budget = the longest chain) */
    cr_assert_eq(arb_method_spec_preset("pld-auto", &s, &err), ARB_OK, "%s", err.msg);
    cr_assert(s.budget_auto && !strcmp(s.id, "PLD-auto") && s.pld_earliest);
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert(!s.budget_auto);
    cr_assert_eq(s.budget, 1 + s.max_draft);
    cr_assert_eq(s.chain_cost.n_max, 1 + s.max_draft);
    cr_assert_float_eq(arb_chain_cost_us(&s.chain_cost, 5, 100), arb_cost_us(&cm, 5, 100), 1e-9);
    /* GOOSE: a tree budget per run, bypass chains per step */
    cr_assert_eq(arb_method_spec_preset("goose-auto", &s, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert(s.budget >= 2 && s.budget <= 64, "B %d", s.budget);
    cr_assert_not(s.ar_guard, "predicted above AR: no guard");
    cr_assert_eq(s.bypass_max, 63);
    cr_assert_eq(s.chain_cost.n_max, 64);
    /* Iso(3): the tree budget only (no context match, no chains); TR: the template cut */
    cr_assert_eq(arb_method_spec_preset("iso3-auto", &s, &err), ARB_OK, "%s", err.msg);
    cr_assert(!strcmp(s.topology, "iso") && s.iso_k == 3);
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(s.chain_cost.n_max, 0);
    cr_assert_eq(arb_method_spec_preset("tr-auto", &s, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert(s.budget >= 2 && s.budget < 81, "B %d", s.budget);
    cr_assert_eq(arb_method_max_nodes(&s), s.budget);
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_OK, "%s", err.msg);
    arb_ctx_free(c);
    arb_model_free(m);
    unlink(path);
    remove_dir(dir);
}

/* Medusa / Hydra with tree "auto": τ̂ is the grown tree's sum of path products; a flat (GPU-like)
   cost takes the largest tree, a steep one the smallest; Hydra's drafting passes (one per tree
   level) keep its tree shallower than Medusa's (one pass) on the same accuracies and cost. */
Test(autobudget, heads_budget_from_rank_accuracies)
{
    float acc[ARB_HEADS_MAX][ARB_HEADS_RANKS] = {{0}};
    for (int k = 0; k < 4; k++)
        for (int r = 0; r < ARB_HEADS_RANKS; r++)
            acc[k][r] = (float)((r == 0 ? 0.5 : 0.2 / r) * (k == 0 ? 1.0 : 0.8));
    arb_err err = {0};
    int B;
    double sp, tau;
    /* 3 nodes: the root (1), [0] (0.5), then [0,0] (0.5 x 0.4 = 0.2) ties [1] (0.2): 1.7 */
    const arb_cost_model flat = {.n_knots = 2, .knot = {1, 64}, .w_us = {1000, 1000}};
    cr_assert_eq(arb_autobudget_pick_heads(&flat, (const float(*)[ARB_HEADS_RANKS])acc, 4, false, 0, 0, 3, 3, &B, &sp,
                                           &tau, &err),
                 ARB_OK, "%s", err.msg);
    cr_assert_eq(B, 3);
    cr_assert_float_eq(tau, 1.7, 1e-6);
    cr_assert_float_eq(sp, 1.7, 1e-6);
    cr_assert_eq(arb_autobudget_pick_heads(&flat, (const float(*)[ARB_HEADS_RANKS])acc, 4, false, 0, 0, 2, 64, &B, &sp,
                                           &tau, &err),
                 ARB_OK);
    cr_assert_eq(B, 64);
    /* one node 1 ms, each further node 0.5 ms: a 2-node tree (1.5 tokens for 1.5 ms) wins */
    const arb_cost_model steep = {.n_knots = 2, .knot = {1, 64}, .w_us = {1000, 1000 + 500 * 63}};
    cr_assert_eq(arb_autobudget_pick_heads(&steep, (const float(*)[ARB_HEADS_RANKS])acc, 4, false, 0, 0, 2, 64, &B,
                                           &sp, &tau, &err),
                 ARB_OK);
    cr_assert_eq(B, 2);
    cr_assert_float_eq(tau, 1.5, 1e-6);
    /* a CPU-like cost (flat to 4 nodes, then steep): Medusa pays one pass, Hydra one per level */
    const arb_cost_model cpu = {.n_knots = 4, .knot = {1, 4, 16, 64}, .w_us = {3000, 3100, 7000, 30000}};
    int bm, bh;
    cr_assert_eq(arb_autobudget_pick_heads(&cpu, (const float(*)[ARB_HEADS_RANKS])acc, 4, false, 800, 0, 2, 64, &bm,
                                           &sp, &tau, &err),
                 ARB_OK);
    cr_assert_eq(arb_autobudget_pick_heads(&cpu, (const float(*)[ARB_HEADS_RANKS])acc, 4, true, 800, 0, 2, 64, &bh,
                                           &sp, &tau, &err),
                 ARB_OK);
    cr_assert(bh < bm, "hydra %d, medusa %d", bh, bm);
    /* refused: no accuracies, a range outside [2, 64] */
    float none[ARB_HEADS_MAX][ARB_HEADS_RANKS] = {{0}};
    cr_assert_eq(arb_autobudget_pick_heads(&flat, (const float(*)[ARB_HEADS_RANKS])none, 4, false, 0, 0, 2, 8, &B, &sp,
                                           &tau, &err),
                 ARB_E_INVAL);
    cr_assert(strstr(err.msg, "rank accuracies"), "%s", err.msg);
    cr_assert_eq(arb_autobudget_pick_heads(&flat, (const float(*)[ARB_HEADS_RANKS])acc, 4, false, 0, 0, 1, 8, &B, &sp,
                                           &tau, &err),
                 ARB_E_INVAL);
}

/* resolve for medusa/hydra with tree "auto": reads the heads file the method names (its rank
   accuracies) and times a drafting pass on the context; a missing heads file is an error naming
   it. */
Test(autobudget, resolve_reads_the_heads_file)
{
    char dir[] = "/tmp/arb_autohXXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("ARBOR_CACHE", dir, 1);
    synth_opts so = {.arch = "llama", .seed = 5};
    char *mpath = write_synth(&so);
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_err err = {0};
    arb_load_opts lo = arb_load_default_opts();
    lo.n_threads = 1;
    cr_assert_eq(arb_model_load(mpath, &lo, &m, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_new(m, &(arb_ctx_opts){.n_ctx = 64}, &c, &err), ARB_OK, "%s", err.msg);
    char path[4400];
    profile_path_for(m, path, sizeof path);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const arb_cost_model flat = {.n_knots = 2, .knot = {1, 64}, .w_us = {1e6, 1e6}};
    cr_assert_eq(arb_cost_save(&flat, path, &err), ARB_OK, "%s", err.msg);
    /* heads for this model with made-up held-out accuracies */
    char sha[65], hpath[200];
    cr_assert_eq(arb_sha256_file(mpath, sha, &err), ARB_OK, "%s", err.msg);
    snprintf(hpath, sizeof hpath, "%s/medusa.gguf", dir);
    arb_heads *h = NULL;
    cr_assert_eq(arb_heads_new(ARB_HEADS_MEDUSA, 3, mi.n_embd, mi.n_vocab, &h, &err), ARB_OK, "%s", err.msg);
    arb_heads_init(h, 1);
    arb_heads_meta meta = {0};
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%s", sha);
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < ARB_HEADS_RANKS; r++)
            meta.rank_acc[k][r] = r == 0 ? 0.6f : 0.02f;
    cr_assert_eq(arb_heads_save(hpath, h, &meta, &err), ARB_OK, "%s", err.msg);
    arb_heads_free(h);
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("medusa", &s, &err), ARB_OK, "%s", err.msg);
    snprintf(s.tree, sizeof s.tree, "auto");
    snprintf(s.heads, sizeof s.heads, "%s", hpath);
    s.budget_auto = true;
    /* a one-second node: the drafting pass is free beside it, so the largest tree the
       accuracies grow wins (3 heads: depth <= 3) */
    cr_assert_eq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert(!s.budget_auto);
    int B;
    double sp, tau;
    cr_assert_eq(arb_autobudget_pick_heads(&flat, (const float(*)[ARB_HEADS_RANKS])meta.rank_acc, 3, false, 0,
                                           ARB_AUTOBUDGET_L, 2, 64, &B, &sp, &tau, &err),
                 ARB_OK);
    cr_assert_eq(s.budget, B);
    cr_assert_eq(arb_method_max_nodes(&s), s.budget);
    /* the heads file missing: the error names it */
    unlink(hpath);
    s.budget_auto = true;
    cr_assert_neq(arb_autobudget_resolve(c, 1, &s, NULL, &err), ARB_OK);
    cr_assert(strstr(err.msg, hpath) && strstr(err.msg, "auto"), "%s", err.msg);
    arb_ctx_free(c);
    arb_model_free(m);
    unlink(mpath);
    free(mpath);
    remove_dir(dir);
}
