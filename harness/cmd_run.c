/* cmd_run.c — `arbor run CONFIG`: run an experiment config into a results database. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "config.h"
#include "drafters/medusa.h"
#include "opts.h"
#include "report.h"
#include "runner.h"
#include "store.h"

static const char description[] =
    "Runs every model x dataset x method x sampling x seed of the config (docs/config.md) and\n"
    "stores one row per decoding step, prompt and run in a SQLite database (docs/results-db.md).\n"
    "Re-running the same config resumes: finished prompts are skipped, an interrupted one is\n"
    "redone. Ctrl-C stops cleanly (the prompt in flight is dropped; run again to resume).\n";

static volatile sig_atomic_t stop_flag; /* set by the signal handler, read between steps */

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL); /* a second Ctrl-C ends the process at once */
}

typedef struct args {
    const char *config, *table; /* CONFIG.json; the table printed at the end, or NULL */
    bool check;                 /* validate and print the matrix only */
} args;

/* argv into *o and *a; 0, or the exit status of a usage error (-1: --help). */
static int parse_args(int argc, char **argv, arb_run_opts *o, args *a)
{
    const char *shard = NULL;
    bool quiet = false, have_progress = false;
    int progress = 0;
    const arb_opt opts[] = {
        ARB_OPT_STR("--db", "PATH", &o->db_path, "results database (default results/<config name>.db)"),
        ARB_OPT_STR("--shard", "i/N", &shard, "only prompts whose dataset index % N == i (0 <= i < N); "
                    "combine the shards with `arbor merge` (docs/scale-out.md)"),
        ARB_OPT_INT("--limit", "N", &o->limit, 1, 1 << 30, "at most N prompts per dataset (overrides the config's)"),
        ARB_OPT_STR("--data", "DIR", &o->data_dir, "dataset directory (default $ARBOR_DATA, else the cache)"),
        ARB_OPT_INT("--threads", "N", &o->threads, 1, 4096, "threads per model (default: the config's)"),
        {.name = "--table", .alias = "--report", .kind = ARB_OPT_KIND_STR, .dst = &a->table, .metavar = "NAME",
         .help = "print this table (arbor report --table) when the run finishes, e.g. table3"},
        {.name = "--progress", .kind = ARB_OPT_KIND_INT, .dst = &progress, .lo = 1, .hi = 86400, .metavar = "SEC",
         .seen = &have_progress, .help = "seconds between progress lines when stderr is not a terminal (30)"},
        ARB_OPT_FLAG("--quiet", &quiet, "no progress output"),
        ARB_OPT_FLAG("--check", &a->check, "validate the config, print its matrix and exit"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"run", "CONFIG.json", description, opts, 1, 1};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    a->config = pos.v[0];
    if (have_progress)
        o->progress_interval = progress;
    if (quiet)
        o->log = NULL;
    arb_err err = {0};
    if (shard && arb_runner_parse_shard(shard, &o->shard_i, &o->shard_n, &err)) {
        fprintf(stderr, "arbor run: %s\n", err.msg);
        return 2;
    }
    return 0;
}

/* --check: the run matrix and each method's drafter, topology and sweep. */
static void print_matrix(const char *path, const arb_config *c)
{
    printf("%s: %d models x %d datasets x %d methods x %d sampling x %d seeds = %d runs\n", path, c->n_models,
           c->n_datasets, c->n_methods, c->n_sampling, c->n_seeds,
           c->n_models * c->n_datasets * c->n_methods * c->n_sampling * c->n_seeds);
    for (int k = 0; k < c->n_methods; k++)
        printf("  method %-28s drafter %-6s topology %-8s %s\n", c->methods[k].label, c->methods[k].spec.drafter,
               c->methods[k].spec.topology[0] ? c->methods[k].spec.topology : "-", c->methods[k].sweep_json);
}

/* --table: the report of the database just written. */
static int print_table(const char *db, const char *table)
{
    arb_store *st = NULL;
    arb_err err = {0};
    arb_report_opts ro = arb_report_default_opts();
    ro.table = table;
    int rc = arb_store_open(db, &st, &err);
    if (!rc)
        rc = arb_report_write(arb_store_db(st), &ro, stdout, &err);
    arb_store_close(st);
    if (rc)
        fprintf(stderr, "arbor run: report: %s\n", err.msg);
    return rc;
}

/* --check: a heads file named by a method (a path or "{cache}/NAME"; "default" depends on the
   model's digest, which --check does not read) must exist, since a run would stop at it. */
static int check_heads_files(const char *path, const arb_config *c)
{
    for (int k = 0; k < c->n_methods; k++) {
        const arb_method_spec *s = &c->methods[k].spec;
        char kind[64], file[4096];
        arb_err err = {0};
        if (arb_heads_file_for(s, NULL, NULL, kind, sizeof kind, &err) || !kind[0] || !strcmp(s->heads, "default"))
            continue;
        struct stat sb;
        if (arb_heads_path(s->heads, kind, NULL, NULL, file, sizeof file, &err) || stat(file, &sb) != 0) {
            fprintf(stderr, "arbor run: %s: methods[%d].heads: %s: %s (train one with arbor train %s)\n", path, k,
                    err.msg[0] ? s->heads : file, err.msg[0] ? err.msg : "no such file", kind);
            return 2;
        }
    }
    return 0;
}

int arb_cmd_run(int argc, char **argv)
{
    arb_run_opts o = arb_run_default_opts();
    args a = {0};
    const int prc = parse_args(argc, argv, &o, &a);
    if (prc)
        return prc < 0 ? 0 : prc;
    arb_err err = {0};
    arb_config *c = NULL;
    if (arb_config_load(a.config, &c, &err)) {
        fprintf(stderr, "arbor run: %s\n", err.msg);
        return 2;
    }
    if (a.check) {
        print_matrix(a.config, c);
        const int hrc = check_heads_files(a.config, c);
        arb_config_free(c);
        return hrc;
    }
    o.stop = &stop_flag;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    arb_run_summary s;
    int rc = arb_runner_run(c, &o, &s, &err);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    arb_config_free(c);
    if (rc == ARB_E_INTERRUPTED) {
        fprintf(stderr, "\narbor run: interrupted after %ld new generations; run the same command to resume\n",
                s.n_done);
        return 130;
    }
    if (rc) {
        fprintf(stderr, "\narbor run: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "arbor run: %ld generations stored, %ld already present, %ld failed, %.1f s → %s\n",
            s.n_done, s.n_skipped, s.n_failed, s.seconds, s.db_path);
    if (a.table && print_table(s.db_path, a.table))
        return 1;
    return s.n_failed ? 1 : 0;
}
