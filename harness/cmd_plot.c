/* cmd_plot.c — `arbor plot`: figures (gnuplot data + script → PNG and SVG). */
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"
#include "opts.h"
#include "plot.h"
#include "store.h"

static const char description[] =
    "Figures (--figure; default all those the database has data for):\n"
    "  speedup      speedup over AR per model x dataset x method (GOOSE Fig. 3)\n"
    "  ps_pt        p_s vs p_t of the spine method per dataset (Fig. 5a)\n"
    "  tau_sweep    tau against a swept parameter (Fig. 4b)\n"
    "  accept_hist  share of steps accepting k draft tokens, per method\n"
    "  depth_accept acceptance rate by tree depth per method id, pooled over its runs\n"
    "               (realised; DTE Fig. 1's OTLP rates and L1: arbor dte-depth --plot DIR)\n"
    "For each: DIR/NAME.dat (data), DIR/NAME.gp (script; rerun with gnuplot NAME.gp in DIR),\n"
    "DIR/NAME.png and DIR/NAME.svg.\n";

int arb_cmd_plot(int argc, char **argv)
{
    arb_plot_opts o = arb_plot_default_opts();
    const char *db = NULL;
    bool no_render = false;
    const arb_opt opts[] = {
        {.name = "--db", .kind = ARB_OPT_KIND_STR, .dst = &db, .metavar = "PATH", .required = true,
         .help = "results database"},
        ARB_OPT_STR("--figure", "NAME", &o.figure, "one figure (above; default all)"),
        ARB_OPT_STR("--out", "DIR", &o.out_dir, "output directory (results/fig)"),
        ARB_OPT_STR("--model", "ID", &o.model, "only this model"),
        ARB_OPT_STR("--dataset", "NAME", &o.dataset, "accept_hist, depth_accept: only this dataset"),
        ARB_OPT_STR("--spine", "LABEL", &o.spine, "ps_pt: the spine method (GOOSE)"),
        ARB_OPT_STR("--param", "NAME", &o.param, "tau_sweep: the swept parameter (default: the first found)"),
        ARB_OPT_STR("--templates", "DIR", &o.templates, "gnuplot templates (default: plots/ of the source tree)"),
        ARB_OPT_FLAG("--no-render", &no_render, "write .dat and .gp only"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"plot", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    if (no_render)
        o.render = false;
    struct stat sb;
    if (stat(db, &sb) != 0) {
        fprintf(stderr, "arbor plot: %s: no such database\n", db);
        return 1;
    }
    arb_store *st = NULL;
    arb_err err = {0};
    int rc = arb_store_open(db, &st, &err);
    if (!rc)
        rc = arb_plot_write(arb_store_db(st), &o, &err);
    arb_store_close(st);
    if (rc) {
        fprintf(stderr, "arbor plot: %s\n", err.msg);
        return rc == ARB_E_INVAL ? 2 : 1;
    }
    fprintf(stderr, "arbor plot: figures in %s/\n", o.out_dir);
    return 0;
}
