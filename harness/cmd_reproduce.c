/* cmd_reproduce.c — `arbor reproduce PAPER`: run (or resume) the configs behind a paper's
 * claims (results/paper/claims.json) through the runner, then print each claim's verdict
 * (reproduce.h, docs/reproduce.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arb_config.h"
#include "claims.h"
#include "cli.h"
#include "config.h"
#include "drafters/medusa.h"
#include "modelfetch.h"
#include "opts.h"
#include "reproduce.h"
#include "runner.h"
#include "sha256.h"
#include "store.h"
#include <unistd.h>

#define MAX_CONFIGS 16

static const char description[] =
    "PAPER is goose, dte or entmtp. Runs every config behind the paper's claims (results/paper/claims.json)\n"
    "like `arbor run` (finished prompts are skipped, so a second call resumes), then prints per\n"
    "claim the paper's figure, ours, a 95% bootstrap interval over prompts and a verdict: holds,\n"
    "fails, inconclusive (the interval straddles the threshold, or one prompt), missing (no data), untestable\n"
    "(docs/reproduce.md).\n";

typedef struct args {
    const char *paper, *db, *json, *md, *plot, *claims, *data;
    int limit, max_new, threads, n_boot, n_min, shard_i, shard_n;
    uint64_t seed;
    bool no_run, quiet;
} args;

static volatile sig_atomic_t stop_flag; /* set by the signal handler, read between steps */

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL);
}

/* argv into *a; 0, or the exit status of a usage error (-1: --help). */
static int parse_args(int argc, char **argv, args *a)
{
    const char *shard = NULL;
    const arb_opt opts[] = {
        ARB_OPT_STR("--db", "PATH", &a->db, "one database for every config (default results/<config name>.db each)"),
        ARB_OPT_INT("--limit", "N", &a->limit, 1, 1 << 30, "at most N prompts per dataset (overrides the configs')"),
        ARB_OPT_STR("--shard", "i/N", &shard, "only prompts whose dataset index % N == i (then `arbor merge`)"),
        ARB_OPT_INT("--max-new", "N", &a->max_new, 1, 1 << 30,
                    "generation limit per turn for every dataset (default: the configs')"),
        ARB_OPT_FLAG("--no-run", &a->no_run, "only evaluate what the database(s) hold"),
        ARB_OPT_STR("--json", "FILE", &a->json, "write the verdicts as JSON (what a CI job gates on)"),
        ARB_OPT_STR("--md", "FILE", &a->md, "write the Markdown tables to FILE as well as stdout"),
        ARB_OPT_STR("--plot", "DIR", &a->plot, "after the verdicts, DIR/reproduce_PAPER.{dat,gp,png,svg}: per "
                    "table a panel, per cell ours with its interval, the paper's value and the threshold "
                    "(without gnuplot only .dat and .gp)"),
        ARB_OPT_STR("--claims", "FILE", &a->claims, "the claims (default results/paper/claims.json in the source tree)"),
        ARB_OPT_STR("--data", "DIR", &a->data, "dataset directory (default $ARBOR_DATA, else the cache)"),
        ARB_OPT_INT("--threads", "N", &a->threads, 1, 1 << 30, "threads per model"),
        ARB_OPT_INT("--boot", "N", &a->n_boot, 0, 1 << 30, "bootstrap resamples (1000)"),
        ARB_OPT_U64("--seed", "S", &a->seed, "the bootstrap's seed (0)"),
        ARB_OPT_INT("--min-n", "N", &a->n_min, 1, 1 << 30,
                    "the prompts per cell below which an interval is called uninformative (10)"),
        ARB_OPT_FLAG("--quiet", &a->quiet, "no progress output"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"reproduce", "PAPER", description, opts, 1, 1};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    a->paper = pos.v[0];
    if (strcmp(a->paper, "goose") && strcmp(a->paper, "dte") && strcmp(a->paper, "entmtp")) {
        fprintf(stderr, "arbor reproduce: PAPER must be goose, dte or entmtp (got '%s')\n", a->paper);
        arb_opts_usage(&cmd, stderr);
        return 2;
    }
    arb_err err = {0};
    if (shard && arb_runner_parse_shard(shard, &a->shard_i, &a->shard_n, &err)) {
        fprintf(stderr, "arbor reproduce: %s\n", err.msg);
        return 2;
    }
    return 0;
}

/* A config named by a claim: relative to the source tree (or as given if absolute). */
static int load_config(const char *rel, const args *a, arb_config **out, arb_err *err)
{
    char path[4096];
    const char *root = getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT;
    snprintf(path, sizeof path, "%s%s%s", rel[0] == '/' ? "" : root, rel[0] == '/' ? "" : "/", rel);
    int rc = arb_config_load(path, out, err);
    for (int d = 0; !rc && a->max_new > 0 && d < (*out)->n_datasets; d++)
        (*out)->datasets[d].max_new_tokens = a->max_new; /* part of the run key: new runs */
    return rc;
}

/* Every method id a claim names must be a method id of its config. */
static int check_methods(const arb_claim *c, const arb_config *cfg, arb_err *err)
{
    for (int j = -1; j < c->n_b; j++) {
        const char *id = j < 0 ? c->a : c->b[j];
        bool found = false;
        for (int m = 0; m < cfg->n_methods && !found; m++)
            found = !strcmp(cfg->methods[m].base_id, id);
        if (!found)
            return ARB_ERR(err, ARB_E_INVAL, "claim %s: method \"%s\" is not a method id of %s", c->id, id,
                           c->config);
    }
    return ARB_OK;
}

/* A config whose methods load trained heads that are not there (a fresh machine: `arbor train`
   has not run) cannot be run; its claims become untestable with the file named, instead of the
   whole reproduction stopping at the first such method. reason = "" when every file exists or
   the config needs none. A model that does not resolve is left to the runner's own error. */
static int missing_heads(const arb_config *cfg, char *reason, size_t cap, arb_err *err)
{
    reason[0] = '\0';
    for (int m = 0; m < cfg->n_models && !reason[0]; m++) {
        char model[4096], sha[65] = "", file[4096];
        arb_err ignore = {0};
        if (arb_model_resolve(cfg->models[m].path, model, sizeof model, &ignore))
            continue;
        for (int k = 0; k < cfg->n_methods && !reason[0]; k++) {
            const arb_method_spec *s = &cfg->methods[k].spec;
            int rc = arb_heads_file_for(s, model, NULL, file, sizeof file, err);
            if (rc)
                return rc;
            if (!file[0])
                continue;
            if (!sha[0] && (rc = arb_sha256_file(model, sha, err))) /* only when some method needs heads */
                return rc;
            if ((rc = arb_heads_file_for(s, model, sha, file, sizeof file, err)))
                return rc;
            if (access(file, R_OK))
                snprintf(reason, cap,
                         "%s: method %s needs the trained heads file %s, which does not exist "
                         "(train it: `arbor distill` then `arbor train %s`, docs/heads.md)",
                         cfg->path, cfg->methods[k].base_id, file, s->drafter);
        }
    }
    return ARB_OK;
}

static int run_config(const arb_config *cfg, const args *a, arb_err *err)
{
    arb_run_opts o = arb_run_default_opts();
    o.db_path = a->db, o.limit = a->limit, o.data_dir = a->data, o.threads = a->threads;
    o.shard_i = a->shard_i, o.shard_n = a->shard_n, o.log = a->quiet ? NULL : stderr, o.stop = &stop_flag;
    arb_run_summary s;
    if (!a->quiet)
        fprintf(stderr, "arbor reproduce: %s\n", cfg->path);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = arb_runner_run(cfg, &o, &s, err);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (!rc && !a->quiet)
        fprintf(stderr, "arbor reproduce: %s: %ld generations stored, %ld already present, %ld failed, %.1f s → %s\n",
                cfg->name, s.n_done, s.n_skipped, s.n_failed, s.seconds, s.db_path);
    return rc;
}

static int eval_claim(const arb_claim *c, const arb_config *cfg, const args *a, arb_repro_result *r,
                      arb_err *err)
{
    char db[4096], tsv[4096];
    const char *root = getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT;
    snprintf(db, sizeof db, a->db ? "%s" : "results/%s.db", a->db ? a->db : cfg->name);
    snprintf(tsv, sizeof tsv, "%s/results/paper/%s.tsv", root, c->paper);
    arb_repro_opts o = arb_repro_default_opts();
    o.n_boot = a->n_boot, o.seed = (uint64_t)a->seed, o.n_min = a->n_min;
    o.scope = cfg, o.max_new = a->max_new, o.paper_tsv = tsv;
    struct stat sb;
    arb_store *st = NULL;
    if (stat(db, &sb) != 0) { /* nothing measured yet: every cell is missing */
        int rc = arb_store_open(":memory:", &st, err);
        rc = rc ? rc : arb_repro_eval(arb_store_db(st), c, &o, r, err);
        arb_store_close(st);
        return rc;
    }
    int rc = arb_store_open(db, &st, err);
    if (!rc)
        rc = arb_repro_eval(arb_store_db(st), c, &o, r, err);
    arb_store_close(st);
    return rc;
}

static int write_out(const arb_repro_result *r, int n, const args *a, arb_err *err)
{
    int rc = arb_repro_write_md(r, n, stdout);
    FILE *f = NULL;
    if (!rc && a->md && (!(f = fopen(a->md, "w")) || arb_repro_write_md(r, n, f) || fclose(f)))
        return ARB_ERR(err, ARB_E_IO, "%s: cannot write", a->md);
    if (!rc && a->json) {
        arb_repro_opts o = arb_repro_default_opts();
        o.n_boot = a->n_boot, o.seed = (uint64_t)a->seed, o.n_min = a->n_min;
        if (!(f = fopen(a->json, "w")))
            return ARB_ERR(err, ARB_E_IO, "%s: cannot write", a->json);
        rc = arb_repro_write_json(r, n, &o, f, err);
        if (fclose(f) && !rc)
            rc = ARB_ERR(err, ARB_E_IO, "%s: write error", a->json);
    }
    if (!rc && a->plot) { /* no gnuplot: the .dat and .gp stay, say so, the verdicts still count */
        rc = arb_repro_write_plot(r, n, a->plot, NULL, true, err);
        if (rc == ARB_E_EXTERNAL)
            fprintf(stderr, "arbor reproduce: %s\n", err->msg), rc = ARB_OK;
        else if (!rc && !a->quiet)
            fprintf(stderr, "arbor reproduce: figure %s/reproduce_%s.{dat,gp,png,svg}\n", a->plot, a->paper);
    }
    return rc;
}

typedef struct plan {
    arb_claims *cl;
    int *cfg_of;                        /* per claim: index into cfgs, -1 = another paper or untestable */
    arb_config *cfgs[MAX_CONFIGS];
    const char *rel[MAX_CONFIGS];       /* each config as the claims name it */
    char *missing[MAX_CONFIGS];         /* why a config cannot run (missing_heads), else NULL */
    int n_cfg;
} plan;

static void plan_release(plan *p)
{
    for (int k = 0; k < p->n_cfg; k++)
        arb_config_free(p->cfgs[k]), free(p->missing[k]);
    free(p->cfg_of);
    arb_claims_free(p->cl);
}

/* Load the paper's claims and their configs (each config once, in claim order). */
static int plan_load(const args *a, plan *p, arb_err *err)
{
    char path[4096];
    const char *root = getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT;
    snprintf(path, sizeof path, a->claims ? "%s" : "%s/results/paper/claims.json", a->claims ? a->claims : root);
    int rc = arb_claims_load(path, &p->cl, err);
    if (!rc && !(p->cfg_of = malloc((size_t)p->cl->n * sizeof *p->cfg_of)))
        rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int i = 0; !rc && i < p->cl->n; i++) {
        const arb_claim *c = &p->cl->c[i];
        p->cfg_of[i] = -1;
        if (strcmp(c->paper, a->paper) || c->untestable)
            continue;
        int k = 0;
        while (k < p->n_cfg && strcmp(p->rel[k], c->config))
            k++;
        if (k == MAX_CONFIGS)
            return ARB_ERR(err, ARB_E_INVAL, "%s: more than %d configs", path, MAX_CONFIGS);
        if (k == p->n_cfg && !(rc = load_config(c->config, a, &p->cfgs[k], err))) {
            p->rel[p->n_cfg++] = c->config;
            char why[8192];
            if (!(rc = missing_heads(p->cfgs[k], why, sizeof why, err)) && why[0] && !(p->missing[k] = strdup(why)))
                rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        }
        if (!rc)
            rc = check_methods(c, p->cfgs[k], err);
        p->cfg_of[i] = k;
        if (!rc && p->missing[k]) { /* the claim is reported untestable, with the file to train */
            free(p->cl->c[i].untestable);
            if (!(p->cl->c[i].untestable = strdup(p->missing[k])))
                rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
            p->cfg_of[i] = -1;
        }
    }
    return rc;
}

/* Evaluate the paper's claims (untestable ones included) into r[0..*n). */
static int evaluate(const plan *p, const args *a, arb_repro_result *r, int *n, arb_err *err)
{
    int rc = ARB_OK;
    *n = 0;
    for (int i = 0; !rc && i < p->cl->n; i++) {
        const arb_claim *c = &p->cl->c[i];
        if (strcmp(c->paper, a->paper))
            continue;
        if (p->cfg_of[i] < 0) {
            arb_repro_opts o = arb_repro_default_opts();
            rc = arb_repro_eval(NULL, c, &o, &r[(*n)++], err); /* untestable: no database read */
        } else {
            rc = eval_claim(c, p->cfgs[p->cfg_of[i]], a, &r[*n], err);
            *n += !rc;
        }
    }
    return rc;
}

int arb_cmd_reproduce(int argc, char **argv)
{
    args a = {.n_boot = 1000, .n_min = 10, .shard_n = 1};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    /* --no-run reads what is there; a --db named by hand that is not there is a typo, not
       a database with nothing measured (the default results/<config>.db may be absent:
       those claims are missing) */
    struct stat sb;
    if (a.no_run && a.db && stat(a.db, &sb) != 0) {
        fprintf(stderr, "arbor reproduce: %s: no such database (--no-run only reads)\n", a.db);
        return 1;
    }
    arb_err err = {0};
    plan p = {0};
    if (plan_load(&a, &p, &err)) {
        fprintf(stderr, "arbor reproduce: %s\n", err.msg);
        plan_release(&p);
        return 2;
    }
    for (int k = 0; !a.no_run && !rc && k < p.n_cfg; k++)
        if (p.missing[k])
            fprintf(stderr, "arbor reproduce: skipping %s\n", p.missing[k]);
        else
            rc = run_config(p.cfgs[k], &a, &err);
    arb_repro_result *r = rc ? NULL : calloc((size_t)p.cl->n, sizeof *r);
    int n = 0;
    if (!rc && !r)
        rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    if (!rc && !(rc = evaluate(&p, &a, r, &n, &err)))
        rc = write_out(r, n, &a, &err);
    for (int i = 0; r && i < n; i++)
        arb_repro_result_release(&r[i]);
    free(r);
    plan_release(&p);
    if (rc == ARB_E_INTERRUPTED) {
        fprintf(stderr, "\narbor reproduce: interrupted; run the same command to resume\n");
        return 130;
    }
    if (rc)
        fprintf(stderr, "\narbor reproduce: %s\n", err.msg);
    return rc ? 1 : 0;
}
