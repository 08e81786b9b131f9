/* cmd_report.c — `arbor report`: paper-style tables from a results database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "report.h"
#include "store.h"

static const char usage[] =
    "usage: arbor report --db PATH [--table NAME] [--format md|csv|tex|json] [options]\n"
    "\n"
    "Tables:\n"
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
    "  auto     dte when every speculative run uses a draft model, else table3 (default)\n"
    "\n"
    "Options:\n"
    "  --rows K1,K2      pivot row keys (model,method); keys: model method base_method dataset\n"
    "                    drafter topology sweep seed temperature top_p sampling config\n"
    "                    (sampling: the whole setting, e.g. 'T=1 p=0.9')\n"
    "  --cols K          pivot column keys (dataset)\n"
    "  --metric M        pivot metric: tau tps speedup p_s p_t spine_share acc_len lossless n_prompts\n"
    "  --method ID       sequoia-p: only this method\n"
    "  --dataset NAME    sequoia-p: only this dataset\n"
    "  --model ID        only this model (table2: the model to show; default the first)\n"
    "  --paper MODEL     add the published value of this paper model beside ours\n"
    "                    (Vicuna-7B Llama-3-8B Qwen3-8B Vicuna-13B Vicuna-33B)\n"
    "  --paper-file P    the paper's numbers (default results/paper/goose.tsv in the source tree)\n"
    "  --ci              print bootstrap 95% intervals in the cells\n"
    "  --boot N          bootstrap resamples (1000; 0 = none)\n"
    "  --spine L --iso3 L --iso5 L --ref L --pld L --tr L   method labels the tables look for\n"
    "                    (GOOSE Iso3 Iso5 GOOSE PLD TR)\n"
    "  -o FILE           write to FILE instead of stdout\n";

int arb_cmd_report(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    arb_report_opts o = arb_report_default_opts();
    const char *db = NULL, *out = NULL;
    arb_err err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = !strcmp(a, "--db") ? &db : !strcmp(a, "--table") ? &o.table
                          : !strcmp(a, "--rows") ? &o.rows : !strcmp(a, "--cols") ? &o.cols
                          : !strcmp(a, "--model") ? &o.model : !strcmp(a, "--paper") ? &o.paper_model
                          : !strcmp(a, "--paper-file") ? &o.paper_path : !strcmp(a, "--spine") ? &o.spine
                          : !strcmp(a, "--iso3") ? &o.iso3 : !strcmp(a, "--iso5") ? &o.iso5
                          : !strcmp(a, "--ref") ? &o.ref : !strcmp(a, "--pld") ? &o.pld
                          : !strcmp(a, "--tr") ? &o.tr : !strcmp(a, "-o") ? &out
                          : !strcmp(a, "--method") ? &o.method : !strcmp(a, "--dataset") ? &o.dataset : NULL;
        if (!strcmp(a, "--ci")) {
            o.ci = true;
            continue;
        }
        bool valued = slot || !strcmp(a, "--format") || !strcmp(a, "--metric") || !strcmp(a, "--boot");
        if (!valued) {
            fprintf(stderr, "arbor report: unknown option '%s'\n%s", a, usage);
            return 2;
        }
        if (!v) {
            fprintf(stderr, "arbor report: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (slot) {
            *slot = v;
        } else if (!strcmp(a, "--format")) {
            if (arb_report_parse_fmt(v, &o.fmt, &err)) {
                fprintf(stderr, "arbor report: --format: %s\n", err.msg);
                return 2;
            }
        } else if (!strcmp(a, "--metric")) {
            if (arb_metric_parse(v, &o.metric, &err)) {
                fprintf(stderr, "arbor report: --metric: %s\n", err.msg);
                return 2;
            }
        } else {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 1000000) {
                fprintf(stderr, "arbor report: --boot: expected an integer in [0, 1000000], got '%s'\n", v);
                return 2;
            }
            o.n_boot = (int)n;
        }
    }
    if (!db) {
        fprintf(stderr, "arbor report: --db PATH is required\n%s", usage);
        return 2;
    }
    struct stat sb;
    if (stat(db, &sb) != 0) {
        fprintf(stderr, "arbor report: %s: no such database\n", db);
        return 1;
    }
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
