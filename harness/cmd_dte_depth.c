/* cmd_dte_depth.c — `arbor dte-depth`: per-depth OTLP acceptance rates and L1(p, q) along
 * draft paths (DTE paper Fig. 1; docs/spec/verification.md §10.2). The options go into an
 * arb_dte_depth_opts; the experiment and its tables live in dte_depth.c. */
#include <stdio.h>

#include "cli.h"
#include "dte_depth.h"
#include "opts.h"

static const char description[] =
    "Per-depth acceptance rate of each OT verifier (NSS NaiveTree SpecInfer SpecTr Khisti;\n"
    "Khisti: the DTE lower bound) for K i.i.d. draws, and L1(p, q), along draft paths from\n"
    "roots every N tokens of sampled target trajectories (DTE Fig. 1).\n"
    "With --shape it also drafts one (k, l, b) delayed tree per shape and root and prints each\n"
    "verifier's exact expected block efficiency 1 + E[accepted | tree] on the same trees\n"
    "(DTE Eq. 3; no verification randomness; naive and bv use path 1), the draft + target\n"
    "time per tree, and per verifier the best shape for BE and for tokens/s (DTE Tables 2/3).\n"
    "--settings pools several sampling settings (temperature T, top-p P, default 1) into one\n"
    "table, as the paper's Fig. 1 aggregates its sampling grid; it replaces --temperature/--top-p.\n"
    "With --plot DIR it also writes the per-depth table as DIR/dte_depth.{dat,md} and the\n"
    "figure DIR/dte_depth.{gp,png,svg} (gnuplot; template plots/dte_depth.gp or --templates).\n";

typedef struct args {
    arb_dte_depth_opts o;
    const char *plot_dir, *templates;
} args;

/* argv into *a; 0, or the exit status of a usage error (-1: --help). */
static int parse_args(int argc, char **argv, args *a)
{
    arb_dte_depth_opts *o = &a->o;
    const char *settings = NULL, *shapes = NULL;
    const arb_opt opts[] = {
        {.name = "--datasets", .alias = "--dataset", .kind = ARB_OPT_KIND_STR, .dst = &o->datasets,
         .metavar = "NAME[,NAME]", .help = "datasets (default math500)"},
        ARB_OPT_INT("--limit", "N", &o->limit, 1, 1 << 30, "prompts per dataset (default 3)"),
        ARB_OPT_INT("--max-new", "N", &o->max_new, 1, 1 << 20, "tokens sampled per trajectory (default 96)"),
        ARB_OPT_INT("--every", "N", &o->every, 1, 1 << 20, "a root every N tokens (default 16)"),
        ARB_OPT_INT("--depth", "D", &o->depth, 1, ARB_DTE_MAX_DEPTH, "draft path length (default 6)"),
        ARB_OPT_INT("--paths", "K", &o->paths, 1, ARB_DTE_MAX_PATHS, "i.i.d. draws per OT solver (default 3)"),
        ARB_OPT_INT("--draft-layers", "L", &o->draft_layers, 1, 1 << 20, "self-draft: target blocks (default 24)"),
        ARB_OPT_DOUBLE("--temperature", "T", &o->temperature[0], 1e-12, 1e9, "sampling temperature > 0 (default 1)"),
        ARB_OPT_DOUBLE("--top-p", "P", &o->top_p[0], 1e-12, 1, "nucleus mass in (0, 1] (default 1)"),
        ARB_OPT_U64("--seed", "S", &o->seed, "seed of drafts and trajectories (default 0)"),
        ARB_OPT_STR("--data", "DIR", &o->data_dir, "dataset directory (default $ARBOR_DATA, else the cache)"),
        ARB_OPT_INT("--threads", "N", &o->threads, 0, 1024, "kernel threads (default 0 = all cores)"),
        ARB_OPT_STR("--model", "M", &o->model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--settings", "T[:P][;T[:P]...]", &settings, "sampling settings pooled into one table"),
        ARB_OPT_STR("--shape", "K,L,B[;K,L,B...]", &shapes, "delayed-tree shapes for the block-efficiency tables"),
        ARB_OPT_STR("--plot", "DIR", &a->plot_dir, "write the per-depth table and figure into DIR"),
        ARB_OPT_STR("--templates", "DIR", &a->templates, "gnuplot templates (default: plots/ of the source tree)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"dte-depth", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    arb_err err = {0};
    if ((settings && arb_dte_depth_parse_settings(settings, o, &err)) ||
        (shapes && arb_dte_depth_parse_shapes(shapes, o, &err))) {
        fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
        return 2;
    }
    return 0;
}

int arb_cmd_dte_depth(int argc, char **argv)
{
    args a = {.o = arb_dte_depth_default_opts()};
    const int prc = parse_args(argc, argv, &a);
    if (prc)
        return prc < 0 ? 0 : prc;
    arb_err err = {0};
    arb_dte_depth *d = NULL;
    int rc = arb_dte_depth_new(&a.o, &d, &err);
    if (!rc)
        rc = arb_dte_depth_run(d, &err);
    if (rc) {
        fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
        arb_dte_depth_free(d);
        return 1;
    }
    arb_dte_depth_print_depth(d, stdout);
    if (a.plot_dir && (rc = arb_dte_depth_write_plot(d, a.plot_dir, a.templates, &err)))
        fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
    else if (a.plot_dir)
        fprintf(stderr, "arbor dte-depth: figure in %s/dte_depth.{png,svg}\n", a.plot_dir);
    const int rc_be = arb_dte_depth_print_be(d, stdout, &err);
    if (rc_be)
        fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
    arb_dte_depth_free(d);
    return rc || rc_be ? 1 : 0;
}
