/* dte_depth.h — the DTE Fig. 1 experiment behind `arbor dte-depth` (docs/spec/verification.md
 * §10.2): per-depth OTLP acceptance rates and L1(p, q) along draft paths, and, for a list of
 * (k, l, b) shapes, every sampling verifier's exact expected block efficiency on the same trees.
 *
 *     arb_dte_depth_opts o = arb_dte_depth_default_opts();
 *     o.datasets = "math500"; o.limit = 1;
 *     if (arb_dte_depth_parse_shapes("1,0,4;3,0,4", &o, &err)) die(err.msg);
 *     arb_dte_depth *d = NULL;
 *     if (arb_dte_depth_new(&o, &d, &err) || arb_dte_depth_run(d, &err)) die(err.msg);
 *     arb_dte_depth_print_depth(d, stdout);            // the per-depth table
 *     arb_dte_depth_print_be(d, stdout, &err);         // with shapes: BE, best shape, Traversal gaps
 *     arb_dte_depth_free(d);
 *
 * Everything (models, buffers, the tree) is allocated by _new; _run allocates only when the
 * per-root Traversal gaps outgrow their array (doubling). Not thread-safe: one run per object.
 */
#ifndef ARB_DTE_DEPTH_H
#define ARB_DTE_DEPTH_H

#include <stdint.h>
#include <stdio.h>

#include "drafters/draft_model.h"
#include "error.h"

#define ARB_DTE_MAX_DEPTH 16  /* --depth at most */
#define ARB_DTE_MAX_SHAPES 16 /* --shape entries at most */
#define ARB_DTE_MAX_SETTINGS 16 /* --settings entries at most */
#define ARB_DTE_MAX_PATHS 8   /* --paths at most (the OT solvers' n) */

typedef struct arb_dte_depth_opts {
    const char *datasets;   /* comma-separated dataset names (math500) */
    const char *data_dir;   /* NULL: $ARBOR_DATA, else the cache */
    const char *model;      /* "default" or a GGUF path */
    int limit;              /* prompts per dataset (3) */
    int max_new;            /* target trajectory length per prompt (96) */
    int every;              /* a root every this many tokens (16) */
    int depth;              /* draft path length D, 1..ARB_DTE_MAX_DEPTH (6) */
    int paths;              /* i.i.d. draws n for the OT solvers, 1..ARB_DTE_MAX_PATHS (3) */
    int draft_layers;       /* self-draft: target blocks evaluated (24) */
    int threads;            /* kernel threads, 0 = all cores */
    uint64_t seed;          /* RNG seed of drafts and trajectories (0) */
    double temperature[ARB_DTE_MAX_SETTINGS], top_p[ARB_DTE_MAX_SETTINGS]; /* pooled settings */
    int n_settings;         /* >= 1 ({T 1, top-p 1}) */
    arb_draft_shape shapes[ARB_DTE_MAX_SHAPES];
    int n_shapes;           /* 0: no block-efficiency part */
} arb_dte_depth_opts;

arb_dte_depth_opts arb_dte_depth_default_opts(void);

/* "K,L,B[;K,L,B...]" into o->shapes (1 + L + K*B <= 64); "T[:P][;T[:P]...]" into the
   settings (T > 0, P in (0, 1], default 1). ARB_E_INVAL with a message quoting the text. */
int arb_dte_depth_parse_shapes(const char *text, arb_dte_depth_opts *o, arb_err *err);
int arb_dte_depth_parse_settings(const char *text, arb_dte_depth_opts *o, arb_err *err);

typedef struct arb_dte_depth arb_dte_depth;

/* Load the model and self-draft, allocate every buffer; copies *o. */
int arb_dte_depth_new(const arb_dte_depth_opts *o, arb_dte_depth **out, arb_err *err);
/* Sample the trajectories and accumulate the per-depth and block-efficiency sums. */
int arb_dte_depth_run(arb_dte_depth *d, arb_err *err);
/* The header lines and the per-depth Markdown table. */
void arb_dte_depth_print_depth(const arb_dte_depth *d, FILE *f);
/* With shapes and roots: the BE and best-shape tables and the Traversal gaps; else nothing. */
int arb_dte_depth_print_be(const arb_dte_depth *d, FILE *f, arb_err *err);
/* DIR/dte_depth.{dat,md,gp} and, through gnuplot, .png/.svg (DTE Fig. 1). */
int arb_dte_depth_write_plot(const arb_dte_depth *d, const char *dir, const char *templates, arb_err *err);
void arb_dte_depth_free(arb_dte_depth *d); /* NULL-safe */

#endif
