/* cmd_run.c — `arbor run CONFIG`: run an experiment config into a results database. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "report.h"
#include "runner.h"
#include "store.h"

static const char usage[] =
    "usage: arbor run CONFIG.json [--db PATH] [--shard i/N] [--limit N] [options]\n"
    "\n"
    "Runs every model x dataset x method x sampling x seed of the config (docs/config.md) and\n"
    "stores one row per decoding step, prompt and run in a SQLite database (docs/results-db.md).\n"
    "Re-running the same config resumes: finished prompts are skipped, an interrupted one is\n"
    "redone. Ctrl-C stops cleanly (the prompt in flight is dropped; run again to resume).\n"
    "\n"
    "Options:\n"
    "  --db PATH        results database (default results/<config name>.db)\n"
    "  --shard i/N      only prompts whose dataset index % N == i (0 <= i < N); combine the\n"
    "                   shard databases with `arbor merge` (docs/scale-out.md)\n"
    "  --limit N        at most N prompts per dataset (overrides the config's limits)\n"
    "  --data DIR       dataset directory (default $ARBOR_DATA, else the cache)\n"
    "  --threads N      threads per model (default: the config's, 0 = all cores)\n"
    "  --report TABLE   print this table (arbor report) when the run finishes, e.g. table3\n"
    "  --progress SEC   seconds between progress lines when stderr is not a terminal (30)\n"
    "  --quiet          no progress output\n"
    "  --check          validate the config, print its matrix and exit\n";

static volatile sig_atomic_t stop_flag; /* set by the signal handler, read between steps */

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL); /* a second Ctrl-C ends the process at once */
}

static int int_arg(const char *flag, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > hi) {
        fprintf(stderr, "arbor run: %s: expected an integer in [%d, %d], got '%s'\n", flag, lo, hi, v);
        return 2;
    }
    *out = (int)n;
    return 0;
}

int arb_cmd_run(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    arb_run_opts o = arb_run_default_opts();
    const char *config = NULL, *table = NULL;
    bool check = false;
    arb_err err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool valued = !strcmp(a, "--db") || !strcmp(a, "--shard") || !strcmp(a, "--limit") ||
                      !strcmp(a, "--data") || !strcmp(a, "--threads") || !strcmp(a, "--report") ||
                      !strcmp(a, "--progress");
        if (!strcmp(a, "--quiet")) {
            o.log = NULL;
        } else if (!strcmp(a, "--check")) {
            check = true;
        } else if (valued && !v) {
            fprintf(stderr, "arbor run: %s needs a value\n", a);
            return 2;
        } else if (valued) {
            i++;
            int x = 0, rc = 0;
            if (!strcmp(a, "--db"))
                o.db_path = v;
            else if (!strcmp(a, "--data"))
                o.data_dir = v;
            else if (!strcmp(a, "--report"))
                table = v;
            else if (!strcmp(a, "--limit"))
                rc = int_arg(a, v, 1, 1 << 30, &o.limit);
            else if (!strcmp(a, "--threads"))
                rc = int_arg(a, v, 1, 4096, &o.threads);
            else if (!strcmp(a, "--progress") && !(rc = int_arg(a, v, 1, 86400, &x)))
                o.progress_interval = x;
            else if (!strcmp(a, "--shard") && arb_runner_parse_shard(v, &o.shard_i, &o.shard_n, &err)) {
                fprintf(stderr, "arbor run: %s\n", err.msg);
                rc = 2;
            }
            if (rc)
                return rc;
        } else if (a[0] == '-') {
            fprintf(stderr, "arbor run: unknown option '%s'\n%s", a, usage);
            return 2;
        } else if (!config) {
            config = a;
        } else {
            fprintf(stderr, "arbor run: one config at a time ('%s' and '%s')\n", config, a);
            return 2;
        }
    }
    if (!config) {
        fprintf(stderr, "arbor run: CONFIG is required\n%s", usage);
        return 2;
    }
    arb_config *c = NULL;
    if (arb_config_load(config, &c, &err)) {
        fprintf(stderr, "arbor run: %s\n", err.msg);
        return 2;
    }
    if (check) {
        printf("%s: %d models x %d datasets x %d methods x %d sampling x %d seeds = %d runs\n", config,
               c->n_models, c->n_datasets, c->n_methods, c->n_sampling, c->n_seeds,
               c->n_models * c->n_datasets * c->n_methods * c->n_sampling * c->n_seeds);
        for (int k = 0; k < c->n_methods; k++)
            printf("  method %-28s drafter %-6s topology %-8s %s\n", c->methods[k].label,
                   c->methods[k].spec.drafter, c->methods[k].spec.topology[0] ? c->methods[k].spec.topology : "-",
                   c->methods[k].sweep_json);
        arb_config_free(c);
        return 0;
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
    if (table) {
        arb_store *st = NULL;
        arb_report_opts ro = arb_report_default_opts();
        ro.table = table;
        rc = arb_store_open(s.db_path, &st, &err);
        if (!rc)
            rc = arb_report_write(arb_store_db(st), &ro, stdout, &err);
        arb_store_close(st);
        if (rc) {
            fprintf(stderr, "arbor run: report: %s\n", err.msg);
            return 1;
        }
    }
    return s.n_failed ? 1 : 0;
}
