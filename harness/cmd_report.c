/* cmd_report.c — `arbor report`: paper-style tables from a results database. */
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"
#include "opts.h"
#include "report.h"
#include "store.h"

static const char description[] =
    "Tables (--table):\n"
    "  table1   tau of the spine tree vs Iso(3)/Iso(5) per model x dataset, delta over Iso3\n"
    "  table2   tau per ablation x dataset for one model, macro delta vs --ref\n"
    "  table3   Spd and tau per model x method x dataset, averages, best in bold\n"
    "  pivot    --metric over --rows keys x --cols keys\n"
    "  summary  every metric per run with bootstrap 95% intervals\n"
    "  synergy  tau_spine / max(tau_PLD, tau_TR), spine-continuation share, p_s, p_t\n"
    "  depth    acceptance rate by tree depth per run\n"
    "  dte      tau and tok/s per verifier x sampling setting (T, top-p) at the best (k, b)\n"
    "           per dataset and setting, averaged over datasets; the winning (k,b) per\n"
    "           dataset in parentheses (DTE Tables 2/3)\n"
    "  sequoia-p  Sequoia's positional acceptance p[k] estimated from the ranks logged by\n"
    "           greedy ranked-tree runs (iso3 iso5 tr goose sequoia): trials, hits, p with a\n"
    "           Wilson 95% interval per method and pooled, and the sequoia_p list to paste\n"
    "  entmtp1  EntMTP Table 1: tok/s, speedup, tau per call and per step, lossless share per\n"
    "           dataset x method, the paper's numbers beside (configs/entmtp/table1.json)\n"
    "  cost     tau, measured speedup, the speedup the eval cost model t(n, L) predicts (fitted on\n"
    "           the database's other runs; with --profile also from a bench profile) and GPU\n"
    "           roofline projections, per greedy method x dataset\n"
    "  machines where the runs were measured: machine, kernel family and threads, build, GPU,\n"
    "           with the runs, sessions and prompts of each (timings compare within one row)\n"
    "  loops    repeat16 and the speedup apart on the prompts whose output loops (over 10% of\n"
    "           its tokens end a repeated 16-token run) and on the others, per method x dataset\n"
    "  auto     dte when every speculative run uses a draft model, else table3 (default)\n"
    "Pivot keys (--rows, --cols): model method base_method dataset drafter topology sweep seed\n"
    "temperature top_p sampling config (sampling: the whole setting, e.g. 'T=1 p=0.9').\n";

/* The options into *o, *db and *out; 0, or the exit status of a usage error (-1: --help). */
static int parse_args(int argc, char **argv, arb_report_opts *o, const char **db, const char **out)
{
    const char *fmt = NULL, *metric = NULL;
    const arb_opt opts[] = {
        {.name = "--db", .kind = ARB_OPT_KIND_STR, .dst = db, .metavar = "PATH", .required = true,
         .help = "results database"},
        ARB_OPT_STR("--table", "NAME", &o->table, "the table (above; default auto)"),
        ARB_OPT_STR("--format", "F", &fmt, "md (default), csv, tex or json"),
        ARB_OPT_STR("--rows", "K1,K2", &o->rows, "pivot row keys (model,method)"),
        ARB_OPT_STR("--cols", "K", &o->cols, "pivot column keys (dataset)"),
        ARB_OPT_STR("--metric", "M", &metric,
                    "pivot metric: tau tps speedup p_s p_t spine_share acc_len lossless n_prompts tps_cpu speedup_cpu\n"
                    "                         tps_decode speedup_decode repeat16 (share of the output in\n"
                    "                         verbatim 16-token repeats)"),
        ARB_OPT_STR("--method", "ID", &o->method, "sequoia-p: only this method"),
        ARB_OPT_STR("--dataset", "NAME", &o->dataset, "sequoia-p: only this dataset"),
        ARB_OPT_STR("--profile", "FILE", &o->profile,
                    "cost: also predict from this cost profile (arbor bench engine --save-profile)"),
        ARB_OPT_STR("--model", "ID", &o->model, "only this model (table2: the model to show; default the first)"),
        ARB_OPT_STR("--paper", "MODEL", &o->paper_model, "add the published value of this paper model beside ours "
                    "(Vicuna-7B Llama-3-8B Qwen3-8B Vicuna-13B Vicuna-33B)"),
        ARB_OPT_STR("--paper-file", "P", &o->paper_path,
                    "the paper's numbers (default results/paper/goose.tsv in the source tree)"),
        ARB_OPT_FLAG("--ci", &o->ci, "print bootstrap 95% intervals in the cells"),
        ARB_OPT_INT("--boot", "N", &o->n_boot, 0, 1000000, "bootstrap resamples (1000; 0 = none)"),
        ARB_OPT_STR("--spine", "L", &o->spine, "method label of the spine tree (GOOSE)"),
        ARB_OPT_STR("--iso3", "L", &o->iso3, "method label of Iso(3) (Iso3)"),
        ARB_OPT_STR("--iso5", "L", &o->iso5, "method label of Iso(5) (Iso5)"),
        ARB_OPT_STR("--ref", "L", &o->ref, "table2's reference method label (GOOSE)"),
        ARB_OPT_STR("--pld", "L", &o->pld, "method label of PLD (PLD)"),
        ARB_OPT_STR("--tr", "L", &o->tr, "method label of TR (TR)"),
        {.name = "--out", .alias = "-o", .kind = ARB_OPT_KIND_STR, .dst = out, .metavar = "FILE",
         .help = "write to FILE instead of stdout"},
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"report", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    arb_err err = {0};
    if (fmt && arb_report_parse_fmt(fmt, &o->fmt, &err)) {
        fprintf(stderr, "arbor report: --format: %s\n", err.msg);
        return 2;
    }
    if (metric && arb_metric_parse(metric, &o->metric, &err)) {
        fprintf(stderr, "arbor report: --metric: %s\n", err.msg);
        return 2;
    }
    return 0;
}

int arb_cmd_report(int argc, char **argv)
{
    arb_report_opts o = arb_report_default_opts();
    const char *db = NULL, *out = NULL;
    const int prc = parse_args(argc, argv, &o, &db, &out);
    if (prc)
        return prc < 0 ? 0 : prc;
    struct stat sb;
    if (stat(db, &sb) != 0) {
        fprintf(stderr, "arbor report: %s: no such database\n", db);
        return 1;
    }
    arb_err err = {0};
    arb_store *st = NULL;
    if (arb_store_open(db, &st, &err)) {
        fprintf(stderr, "arbor report: %s\n", err.msg);
        return 1;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    int rc = f ? arb_report_write(arb_store_db(st), &o, f, &err)
               : ARB_ERR(&err, ARB_E_IO, "%s: cannot write", out);
    if (f && f != stdout && fclose(f) != 0 && !rc)
        rc = ARB_ERR(&err, ARB_E_IO, "%s: write error", out);
    arb_store_close(st);
    if (rc) {
        fprintf(stderr, "arbor report: %s\n", err.msg);
        return 1;
    }
    return 0;
}
