/* plot.h — figures from a results database: gnuplot data + script written next to the
 * output, then rendered to PNG (pngcairo) and SVG.
 *
 * Figures (templates in plots/<name>.gp; the script arbor writes sets the variables they
 * use, then runs the template once per terminal):
 *   speedup      speedup over AR per model (panel) × dataset × method (GOOSE Fig. 3)
 *   ps_pt        p_s and p_t of the spine method per dataset, ratio on top (Fig. 5a)
 *   tau_sweep    τ against a swept parameter per model/dataset/method (Fig. 4b)
 *   accept_hist  share of steps accepting k drafts, per method
 *   depth_accept realised acceptance rate by tree depth per method id (pooled over its runs)
 *
 *     arb_plot_opts o = arb_plot_default_opts();
 *     o.figure = "speedup"; o.out_dir = "results/fig";
 *     if (arb_plot_write(db, &o, &err)) die(err.msg);   // results/fig/speedup.{dat,gp,png,svg}
 *
 * Without gnuplot the .dat and .gp files are still written and the call returns
 * ARB_E_EXTERNAL naming the missing program.
 *
 * Figures whose data is computed live rather than read from a database (`arbor dte-depth
 * --plot DIR`: DTE Fig. 1, template plots/dte_depth.gp) write DIR/<name>.dat themselves and
 * then call arb_plot_script + arb_plot_render.
 */
#ifndef ARB_PLOT_H
#define ARB_PLOT_H

#include <stdbool.h>
#include <sqlite3.h>

#include "error.h"

typedef struct arb_plot_opts {
    const char *figure;     /* speedup | ps_pt | tau_sweep | accept_hist | depth_accept | all */
    const char *out_dir;    /* created if absent */
    const char *templates;  /* directory of <figure>.gp; default <source root>/plots */
    const char *model;      /* only this model id (NULL = all) */
    const char *dataset;    /* accept_hist, depth_accept: only this dataset (NULL = all, pooled) */
    const char *spine;      /* ps_pt: method label of the spine method ("GOOSE") */
    const char *param;      /* tau_sweep: swept parameter (NULL = the first one found) */
    bool render;            /* run gnuplot (true) */
} arb_plot_opts;

arb_plot_opts arb_plot_default_opts(void);
int arb_plot_write(sqlite3 *db, const arb_plot_opts *o, arb_err *err);

/* out_dir/<name>.gp = `vars` (gnuplot assignments, datafile = '<name>.dat' is set) + the template
   <templates or source root/plots>/<name>.gp once per terminal (PNG w×h, SVG). */
int arb_plot_script(const char *out_dir, const char *templates, const char *name, const char *vars,
                    int w, int h, arb_err *err);
/* The same with template <tpl>.gp for output <name> (`arbor reproduce --plot`: reproduce_cells
   → reproduce_<paper>). */
int arb_plot_script_tpl(const char *out_dir, const char *templates, const char *tpl, const char *name,
                        const char *vars, int w, int h, arb_err *err);
/* Run gnuplot on out_dir/<name>.gp (in out_dir): <name>.png and <name>.svg. */
int arb_plot_render(const char *out_dir, const char *name, arb_err *err);

#endif
