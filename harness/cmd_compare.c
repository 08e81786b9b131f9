/* cmd_compare.c — `arbor compare`: a regression gate between two results databases.
 *
 * Runs are matched on their config properties (model, dataset, method label, sampling, seed,
 * generation limit), not on run_key, so a baseline written by an older arbor (whose resolved
 * parameter set, and so whose keys, may differ) still compares. The metric is computed on the
 * prompts both databases have, so a partial run compares fairly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "metrics.h"
#include "opts.h"
#include "store.h"

static const char description[] =
    "Prints base, new and the relative change of the metric for every run of BASE (matched in\n"
    "NEW on model, dataset, method, sampling, seed and max_new_tokens), computed on the prompts\n"
    "both have. Exit status: 0 all within --max-drop (default 2%), 1 a regression (or a BASE\n"
    "run missing from NEW, unless --allow-missing), 2 bad usage.\n";

/* --max-drop: "2%" or a fraction below 1 ("0.02"). */
static int parse_max_drop(const char *v, double *out)
{
    char *end;
    const double x = strtod(v, &end);
    const bool pct = *end == '%' && end[1] == 0;
    if (end == v || (*end && !pct) || !(x >= 0) || (!pct && x >= 1)) {
        fprintf(stderr, "arbor compare: --max-drop: expected a percentage (2%%) or a "
                        "fraction below 1 (0.02), got '%s'\n", v);
        return 2;
    }
    *out = pct ? x / 100 : x;
    return 0;
}

static bool same_props(const arb_run_info *a, const arb_run_info *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->dataset, b->dataset) &&
           !strcmp(a->method, b->method) && a->temperature == b->temperature &&
           a->top_p == b->top_p && a->top_k == b->top_k && a->seed == b->seed &&
           a->max_new_tokens == b->max_new_tokens;
}

/* Keep only the prompts whose ids are in `other` (both sorted); returns a shallow view. */
static arb_run_stats common(const arb_run_stats *s, const arb_run_stats *other, arb_prompt_stat *buf)
{
    arb_run_stats v = *s;
    int i = 0, j = 0, n = 0;
    while (i < s->n && j < other->n) {
        int c = strcmp(s->p[i].prompt_id, other->p[j].prompt_id);
        if (c == 0)
            buf[n++] = s->p[i], i++, j++;
        else if (c < 0)
            i++;
        else
            j++;
    }
    v.p = buf;
    v.n = n;
    return v;
}

typedef struct side {
    arb_store *st;
    arb_run_info *runs;
    int n;
} side;

static int open_side(const char *path, side *s, arb_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: no such database", path);
    int rc = arb_store_open(path, &s->st, err);
    if (!rc)
        rc = arb_metrics_list_runs(arb_store_db(s->st), &s->runs, &s->n, err);
    return rc;
}

/* Metric of run i of side s restricted to the prompts of `other`. */
static int value(side *s, int i, const arb_run_stats *other_stats, arb_metric m, const arb_run_stats *mine,
                 double *out, arb_err *err)
{
    arb_prompt_stat *buf = malloc(sizeof *buf * (size_t)(mine->n ? mine->n : 1));
    arb_prompt_stat *abuf = NULL;
    if (!buf)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    arb_run_stats view = common(mine, other_stats, buf), ar = {0}, arv;
    int a = arb_metric_paired(m) ? arb_metrics_find_ar(s->runs, s->n, i) : -1, rc = 0;
    if (a >= 0 && !(rc = arb_metrics_load(arb_store_db(s->st), &s->runs[a], &ar, err)) &&
        (abuf = malloc(sizeof *abuf * (size_t)(ar.n ? ar.n : 1))))
        arv = common(&ar, &view, abuf);
    arb_ci ci;
    arb_metrics_ci(&view, a >= 0 && abuf ? &arv : NULL, m, 0, 0, &ci);
    *out = ci.v;
    arb_run_stats_release(&ar);
    free(abuf);
    free(buf);
    return rc;
}

/* Parse argv into the two paths, the metric, the allowed drop and --allow-missing;
   0, or the exit status of a usage error. */
static int parse_args(int argc, char **argv, const char *paths[2], arb_metric *m, double *max_drop,
                      bool *allow_missing)
{
    const char *metric = "tau", *drop = "2%";
    const arb_opt opts[] = {
        ARB_OPT_STR("--metric", "M", &metric,
                    "tau tps speedup p_s p_t spine_share acc_len lossless tps_cpu speedup_cpu tps_decode\n"
                    "                         speedup_decode (higher is better; default tau)"),
        ARB_OPT_STR("--max-drop", "D", &drop, "allowed relative drop: 2% or 0.02 (default 2%)"),
        ARB_OPT_FLAG("--allow-missing", allow_missing, "a BASE run missing from NEW is not a failure"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"compare", "BASE.db NEW.db", description, opts, 2, 2};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    arb_err err = {0};
    /* n_prompts counts and repeat16 describes the text: neither is better higher */
    if (arb_metric_parse(metric, m, &err) || *m == ARB_METRIC_N_PROMPTS || *m == ARB_METRIC_REPEAT16) {
        fprintf(stderr, "arbor compare: --metric: %s\n",
                err.msg[0] ? err.msg : "not comparable (a count or a property of the text, not a quality)");
        return 2;
    }
    paths[0] = pos.v[0], paths[1] = pos.v[1];
    return parse_max_drop(drop, max_drop);
}

int arb_cmd_compare(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    arb_metric m = ARB_METRIC_TAU;
    double max_drop = 0.02;
    bool allow_missing = false;
    const int prc = parse_args(argc, argv, paths, &m, &max_drop, &allow_missing);
    if (prc)
        return prc < 0 ? 0 : prc;
    arb_err err = {0};
    side b = {0}, n = {0};
    int rc = open_side(paths[0], &b, &err);
    if (!rc)
        rc = open_side(paths[1], &n, &err);
    int regress = 0, missing = 0, matched = 0;
    /* tok/s and speedups are timings: say so when the two databases were measured on different
       setups (kernels, threads, CPU), where a change is not the code's (tau and the acceptance
       metrics do not depend on them) */
    const bool timing = m == ARB_METRIC_TPS || m == ARB_METRIC_SPEEDUP || m == ARB_METRIC_TPS_CPU ||
                        m == ARB_METRIC_SPEEDUP_CPU || m == ARB_METRIC_TPS_DECODE || m == ARB_METRIC_SPEEDUP_DECODE;
    char setup_b[512], setup_n[512];
    if (!rc && timing && !arb_store_setups(b.st, setup_b, sizeof setup_b, &err) &&
        !arb_store_setups(n.st, setup_n, sizeof setup_n, &err) && setup_b[0] && setup_n[0] && strcmp(setup_b, setup_n))
        fprintf(stderr, "arbor compare: NOTE: %s was measured with %s, %s with %s: %s compares different setups\n",
                paths[0], setup_b, paths[1], setup_n, arb_metric_name(m));
    if (!rc) {
        printf("| model | dataset | method | prompts | base %s | new %s | change | status |\n"
               "|---|---|---|---:|---:|---:|---:|---|\n", arb_metric_name(m), arb_metric_name(m));
    }
    for (int i = 0; !rc && i < b.n; i++) {
        const arb_run_info *r = &b.runs[i];
        int j = 0;
        while (j < n.n && !same_props(r, &n.runs[j]))
            j++;
        if (j == n.n) {
            printf("| %s | %s | %s | 0 | | | | missing in new |\n", r->model, r->dataset, r->method);
            missing++;
            continue;
        }
        arb_run_stats sb, sn;
        if ((rc = arb_metrics_load(arb_store_db(b.st), r, &sb, &err)))
            break;
        if ((rc = arb_metrics_load(arb_store_db(n.st), &n.runs[j], &sn, &err))) {
            arb_run_stats_release(&sb);
            break;
        }
        double vb = NAN, vn = NAN;
        arb_prompt_stat *tmp = malloc(sizeof *tmp * (size_t)(sb.n ? sb.n : 1));
        int n_common = tmp ? common(&sb, &sn, tmp).n : 0;
        free(tmp);
        rc = value(&b, i, &sn, m, &sb, &vb, &err);
        if (!rc)
            rc = value(&n, j, &sb, m, &sn, &vn, &err);
        arb_run_stats_release(&sb);
        arb_run_stats_release(&sn);
        if (rc)
            break;
        double ch = vn / vb - 1;
        const char *status = "ok";
        if (n_common == 0 || isnan(vb) || isnan(vn)) {
            status = "no common data";
            missing++;
        } else if (ch < -max_drop) {
            status = "REGRESSION";
            regress++;
        }
        matched++;
        printf("| %s | %s | %s | %d | %.4f | %.4f | %+.2f%% | %s |\n", r->model, r->dataset, r->method,
               n_common, vb, vn, 100 * ch, status);
    }
    if (!rc && b.n == 0)
        rc = ARB_ERR(&err, ARB_E_NOTFOUND, "%s: no runs", paths[0]);
    arb_metrics_free_runs(b.runs, b.n);
    arb_metrics_free_runs(n.runs, n.n);
    arb_store_close(b.st);
    arb_store_close(n.st);
    if (rc) {
        fprintf(stderr, "arbor compare: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "arbor compare: %d runs compared, %d regressions beyond %.2f%%, %d missing\n",
            matched, regress, 100 * max_drop, missing);
    return regress || (missing && !allow_missing) ? 1 : 0;
}
