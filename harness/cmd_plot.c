/* cmd_plot.c — `arbor plot`: figures (gnuplot data + script → PNG and SVG). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "plot.h"
#include "store.h"

static const char usage[] =
    "usage: arbor plot --db PATH [--figure NAME] [--out DIR] [options]\n"
    "\n"
    "Figures (default all those the database has data for):\n"
    "  speedup      speedup over AR per model x dataset x method (GOOSE Fig. 3)\n"
    "  ps_pt        p_s vs p_t of the spine method per dataset (Fig. 5a)\n"
    "  tau_sweep    tau against a swept parameter (Fig. 4b)\n"
    "  accept_hist  share of steps accepting k draft tokens, per method\n"
    "  depth_accept acceptance rate by tree depth per method id, pooled over its runs\n"
    "               (realised; DTE Fig. 1's OTLP rates and L1: arbor dte-depth --plot DIR)\n"
    "For each: DIR/NAME.dat (data), DIR/NAME.gp (script; rerun with gnuplot NAME.gp in DIR),\n"
    "DIR/NAME.png and DIR/NAME.svg.\n"
    "\n"
    "Options:\n"
    "  --out DIR        output directory (results/fig)\n"
    "  --model ID       only this model\n"
    "  --dataset NAME   accept_hist, depth_accept: only this dataset\n"
    "  --spine LABEL    ps_pt: the spine method (GOOSE)\n"
    "  --param NAME     tau_sweep: the swept parameter (default: the first found)\n"
    "  --templates DIR  gnuplot templates (default: plots/ of the source tree)\n"
    "  --no-render      write .dat and .gp only\n";

int arb_cmd_plot(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    arb_plot_opts o = arb_plot_default_opts();
    const char *db = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-render")) {
            o.render = false;
            continue;
        }
        const char **slot = !strcmp(a, "--db") ? &db : !strcmp(a, "--figure") ? &o.figure
                          : !strcmp(a, "--out") ? &o.out_dir : !strcmp(a, "--model") ? &o.model
                          : !strcmp(a, "--dataset") ? &o.dataset : !strcmp(a, "--spine") ? &o.spine
                          : !strcmp(a, "--param") ? &o.param : !strcmp(a, "--templates") ? &o.templates
                          : NULL;
        if (!slot) {
            fprintf(stderr, "arbor plot: unknown option '%s'\n%s", a, usage);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "arbor plot: %s needs a value\n", a);
            return 2;
        }
        *slot = argv[++i];
    }
    if (!db) {
        fprintf(stderr, "arbor plot: --db PATH is required\n%s", usage);
        return 2;
    }
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
