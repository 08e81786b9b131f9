/* config.h — experiment configs: JSON → validated, sweep-expanded matrix (docs/config.md).
 *
 * A config names models, datasets, methods, sampling settings and seeds; every combination
 * is a *cell* and becomes one run in the results database. A list where a method or sampling
 * parameter expects a value is a sweep: the method expands into one entry per element of the
 * cartesian product of its lists ("GOOSE[budget=40,max_depth=6]"). Unknown or duplicate keys,
 * wrong types, missing fields and impossible values are errors naming the file and JSON path:
 * "configs/x.json: methods[2].budget: expected integer in [1, 1024], got -3".
 *
 *     arb_config *c; arb_err err = {0};
 *     if (arb_config_load("configs/ci.json", &c, &err)) die(err.msg);
 *     for (int m = 0; m < c->n_methods; m++) puts(c->methods[m].label);
 *     char *cell; char key[17];
 *     arb_config_cell(c, 0, 0, m, 0, 0, model_sha256, &cell, key, &err);  // run key
 *     free(cell); arb_config_free(c);
 */
#ifndef ARB_CONFIG_H
#define ARB_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "method.h"

typedef struct arb_cfg_model {
    char *id;              /* label in reports */
    char *path;            /* "default" or a GGUF path (resolved by the runner) */
    int threads;           /* 0 = all cores */
    int n_ctx;             /* 0 = engine default */
    bool cuda;             /* backend "cuda" or "cuda-exact" (default "cpu") */
    bool gpu_exact;        /* backend "cuda-exact": batch-invariant GPU kernels */
} arb_cfg_model;

typedef struct arb_cfg_dataset {
    char *name;            /* a dataset.h name ("humaneval") */
    char *split;           /* NULL = the dataset's default */
    int limit;             /* first `limit` prompts; 0 = all */
    int max_new_tokens;    /* generation limit per turn */
} arb_cfg_dataset;

typedef struct arb_cfg_method {
    arb_method_spec spec;  /* resolved; sampling fields are filled per cell */
    char *label;           /* "GOOSE" or "GOOSE[budget=40]" for a sweep point */
    char *base_id;         /* id as written */
    char *sweep_json;      /* {"budget":40} — the swept values of this point, {} if none */
    int index;             /* position in the config's methods array */
} arb_cfg_method;

typedef struct arb_cfg_sampling { double temperature, top_p; int top_k; } arb_cfg_sampling;

/* "repeats" above this is a config error (the runner keeps one wall time per repeat). */
#define ARB_CONFIG_MAX_REPEATS 100

typedef struct arb_config {
    char *name, *path;
    int n_models, n_datasets, n_methods, n_sampling, n_seeds;
    arb_cfg_model *models;
    arb_cfg_dataset *datasets;
    arb_cfg_method *methods;     /* expanded; AR-like methods (drafter "none") first */
    arb_cfg_sampling *sampling;  /* expanded */
    int64_t *seeds;
    int warmup;                  /* untimed generations per method before timing (1) */
    int repeats;                 /* timed generations per prompt; wall time = median (1);
                                    1..ARB_CONFIG_MAX_REPEATS, checked by the parser */
    bool chat;                   /* apply the model's chat template (true) */
} arb_config;

int arb_config_load(const char *path, arb_config **out, arb_err *err);
/* Parse JSON text; `name` labels error messages (a file name). */
int arb_config_parse(const char *json, const char *name, arb_config **out, arb_err *err);
void arb_config_free(arb_config *c); /* NULL-safe */

/* Canonical JSON of one cell (model, dataset, method, sampling, seed indices) with every
   resolved method parameter, and its run key: the first 16 hex digits of its sha256.
   model_sha256 may be NULL (then the model's path stands in). *json: caller frees. */
int arb_config_cell(const arb_config *c, int model, int dataset, int method, int sampling,
                    int seed, const char *model_sha256, char **json, char key[17], arb_err *err);
/* Resolved spec of a method as JSON (every parameter that applies to its drafter; after budget
   "auto" is resolved, also "cost_table": the t(n, L) table its per-step choices read). */
char *arb_config_spec_json(const arb_method_spec *s);

#endif
