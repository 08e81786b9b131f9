/* cmd_entmtp_bank.c — `arbor entmtp bank` (throughput frontier, TopologyBank, scheduler
 * calibration; docs/spec/drafting.md §10.3) and `arbor entmtp table` (EntMTP Table 1, §10.7). */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafters/medusa.h"
#include "entmtp_timing.h"
#include "genutil.h"
#include "opts.h"
#include "topobank.h"

int arb_entmtp_cmd_bank(int argc, char **argv);
int arb_entmtp_cmd_table(int argc, char **argv);

#define CAND_MAX ARB_TOPOBANK_MAX
static const double tau_grid[] = {0.001, 0.005, 0.01, 0.02, 0.05}; /* §10.3, the paper's sweep */

typedef struct cand {
    char *choices; /* index-path JSON (owned) */
    int n, depth;
    double tok_s, tau;
    bool published; /* mc_sim_7b_63: timed for the table, never the hull's T+ */
} cand;

static int cand_cmp(const void *a, const void *b) { return ((const cand *)a)->n - ((const cand *)b)->n; }

/* A bank file with the trees of c[0..n) (and the scheduler fields given). The final file also
   lists every timed tree (timed[0..n_timed), the throughput frontier) for `arbor entmtp plot
   --bank`; the drafter's loader reads only trees and the scheduler fields. */
static int write_bank(const char *path, const cand *c, int n, int st, int tp, int tm, double tau, const char *feature,
                      const double *ladder, int n_ladder, const cand *timed, int n_timed, const char *clock,
                      arb_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "entmtp: cannot write %s", path);
    fprintf(f, "{\"trees\":[\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s{\"n\":%d,\"depth\":%d,\"tok_s\":%.3f,\"tau\":%.4f,\"choices\":%s}", i ? ",\n" : "", c[i].n,
                c[i].depth, c[i].tok_s, c[i].tau, c[i].choices);
    fprintf(f, "\n],\"static\":%d", st);
    if (tp >= 0)
        fprintf(f, ",\"t_plus\":%d,\"t_minus\":%d", tp, tm);
    if (!isnan(tau))
        fprintf(f, ",\"tau\":%g", tau);
    fprintf(f, ",\"feature\":\"%s\"", feature);
    if (n_ladder > 0) {
        fprintf(f, ",\"ladder\":[");
        for (int j = 0; j < n_ladder; j++)
            fprintf(f, "%s%.6g", j ? "," : "", ladder[j]);
        fprintf(f, "]");
    }
    if (n_timed > 0) {
        fprintf(f, ",\"clock\":\"%s\",\"timed\":[", clock);
        for (int i = 0; i < n_timed; i++)
            fprintf(f, "%s\n{\"n\":%d,\"depth\":%d,\"tok_s\":%.3f,\"tau\":%.4f,\"published\":%s}", i ? "," : "",
                    timed[i].n, timed[i].depth, timed[i].tok_s, timed[i].tau, timed[i].published ? "true" : "false");
        fprintf(f, "\n]");
    }
    fprintf(f, "}\n");
    return fclose(f) ? ARB_ERR(err, ARB_E_IO, "entmtp: cannot write %s", path) : ARB_OK;
}

/* The hull trees of a frontier file (hull_self, else hull), plus Medusa's default tree. */
static int read_frontier(const char *path, cand *c, int *n, arb_err *err)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "entmtp: cannot open %s", path);
    char *txt = malloc(1 << 24);
    size_t len = txt ? fread(txt, 1, (1 << 24) - 1, f) : 0;
    fclose(f);
    if (!txt)
        return ARB_ERR(err, ARB_E_NOMEM, "entmtp: out of memory");
    txt[len] = 0;
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    const cJSON *pts = root ? cJSON_GetObjectItemCaseSensitive(root, "points") : NULL;
    if (!cJSON_IsArray(pts)) {
        cJSON_Delete(root);
        return ARB_ERR(err, ARB_E_FORMAT, "entmtp: %s: $.points: not an array (a file of arbor entmtp frontier)", path);
    }
    bool any_self = false;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) any_self |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "hull_self"));
    int rc = ARB_OK, i = 0;
    cJSON_ArrayForEach(p, pts)
    {
        const char *key = any_self ? "hull_self" : "hull";
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, key))) {
            i++;
            continue;
        }
        const cJSON *ch = cJSON_GetObjectItemCaseSensitive(p, "choices");
        const cJSON *nn = cJSON_GetObjectItemCaseSensitive(p, "n"), *dd = cJSON_GetObjectItemCaseSensitive(p, "tree_depth");
        if (!cJSON_IsArray(ch) || !cJSON_IsNumber(nn) || !cJSON_IsNumber(dd)) {
            rc = ARB_ERR(err, ARB_E_FORMAT, "entmtp: %s: $.points[%d]: needs choices, n, tree_depth", path, i);
            break;
        }
        if (*n >= CAND_MAX - 1) {
            fprintf(stderr, "entmtp bank: more than %d hull trees; the rest are left out\n", CAND_MAX - 1);
            break;
        }
        c[*n] = (cand){.choices = cJSON_PrintUnformatted(ch), .n = nn->valueint, .depth = dd->valueint};
        if (!c[*n].choices) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "entmtp: out of memory");
            break;
        }
        (*n)++;
        i++;
    }
    cJSON_Delete(root);
    if (!rc) { /* the published default (Hydra's --hydra-choices mc_sim_7b_63) */
        c[*n] = (cand){.choices = strdup(arb_medusa_mc_sim_7b_63), .n = 64, .depth = 4, .published = true};
        if (!c[*n].choices)
            rc = ARB_ERR(err, ARB_E_NOMEM, "entmtp: out of memory");
        else
            (*n)++;
    }
    return rc;
}

static int hydra_spec(const char *heads, const char *bank, const char *sched, const char *feature, double tau,
                      arb_method_spec *s, arb_err *err)
{
    int rc = arb_method_spec_preset("hydra", s, err);
    if (rc)
        return rc;
    if (strlen(heads) >= sizeof s->heads || strlen(bank) >= sizeof s->bank)
        return ARB_ERR(err, ARB_E_RANGE, "entmtp: heads / bank paths must be shorter than %zu characters (%s, %s)",
                       sizeof s->heads, heads, bank);
    snprintf(s->heads, sizeof s->heads, "%s", heads);
    snprintf(s->bank, sizeof s->bank, "%s", bank);
    snprintf(s->tree_sched, sizeof s->tree_sched, "%s", sched);
    snprintf(s->feature, sizeof s->feature, "%s", feature);
    s->tau_on = s->tau_off = tau;
    return ARB_OK;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --clock: "wall" (the paper's tok/s) or "cpu" (process CPU time, for a shared machine).
   Nonzero, after a message naming the command, for anything else. */
static int clock_is_cpu(const char *cmd, const char *clock, bool *use_cpu)
{
    *use_cpu = !strcmp(clock, "cpu");
    if (*use_cpu || !strcmp(clock, "wall"))
        return 0;
    fprintf(stderr, "arbor %s: --clock: '%s' (wall, cpu)\n", cmd, clock);
    return 1;
}

int arb_entmtp_cmd_bank(int argc, char **argv)
{
    const char *model = "default", *heads = NULL, *frontier = NULL, *dataset = "gsm8k-train", *out = NULL;
    const char *feature = "lit", *clock = "wall";
    int n_prompts = 4, skip = 100, max_new = 64, threads = 1, max_len = 400;
    const arb_opt opts[] = {
        {.name = "--frontier", .kind = ARB_OPT_KIND_STR, .dst = &frontier, .metavar = "FILE", .required = true,
         .help = "JSON of arbor entmtp frontier (its debiased hull trees are timed)"},
        {.name = "--heads", .kind = ARB_OPT_KIND_STR, .dst = &heads, .metavar = "PATH", .required = true,
         .help = "Hydra heads GGUF"},
        {.name = "--out", .kind = ARB_OPT_KIND_STR, .dst = &out, .metavar = "FILE", .required = true,
         .help = "bank JSON to write"},
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--dataset", "NAME", &dataset, "timing prompts (default gsm8k-train)"),
        ARB_OPT_INT("--skip", "N", &skip, 0, 1 << 24, "records skipped first: past the calibration ones (default 100)"),
        ARB_OPT_INT("--prompts", "N", &n_prompts, 1, ARB_ENTMTP_PROMPTS_MAX, "timing prompts (default 4; paper 100)"),
        ARB_OPT_INT("--max-new", "N", &max_new, 2, 4096, "tokens per prompt (default 64; paper 256)"),
        ARB_OPT_INT("--max-prompt", "N", &max_len, 1, 1 << 20, "skip longer prompts (default 400 tokens)"),
        ARB_OPT_STR("--feature", "F", &feature, "scheduler scalar for the tau grid: lit | gD | sum (default lit)"),
        ARB_OPT_STR("--clock", "C", &clock, "tok/s from wall time (default, the paper's) or cpu (process CPU time)"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "kernel threads (default 1)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"entmtp bank", NULL,
                              "Times every debiased hull tree of a frontier file and the published default tree\n"
                              "(mc_sim_7b_63) end to end with the Hydra drafter (prefill included, one warm-up\n"
                              "generation excluded); keeps the throughput-Pareto trees as the bank (each beats every\n"
                              "smaller tree in tok/s); the static task tree is the fastest; T+ the fastest depth-4\n"
                              "bank tree; T- and tau by grid search (bank trees of depth <= 2 x tau in 0.001 0.005\n"
                              "0.01 0.02 0.05); ladder thresholds are equal-frequency quantiles of s in the T+ run.",
                              opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    bool use_cpu;
    if (clock_is_cpu("entmtp bank", clock, &use_cpu))
        return 2;
    cand *c = calloc(CAND_MAX, sizeof *c);
    int nc = 0, rc = c ? read_frontier(frontier, c, &nc, &err) : ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    if (!rc && strcmp(feature, "lit") && strcmp(feature, "gD") && strcmp(feature, "sum"))
        rc = ARB_ERR(&err, ARB_E_INVAL, "--feature: '%s' (lit, gD, sum)", feature);
    arb_model *m = NULL;
    arb_ctx *ctx = NULL;
    arb_entmtp_prompts P = {0};
    arb_entmtp_timing *t = calloc(1, sizeof *t);
    double *sv = malloc(100000 * sizeof *sv);
    if (!rc && (!t || !sv))
        rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    if (!rc)
        qsort(c, (size_t)nc, sizeof *c, cand_cmp);
    if (!rc)
        rc = arb_gen_load(model, "cpu", threads, 0, &m, &ctx, &err);
    if (!rc)
        rc = arb_entmtp_prompts_load(m, dataset, skip, n_prompts, max_len, &P, &err);
    arb_method_spec s;
    printf("throughput frontier: %d trees on %d %s prompts (from record %d), %d tokens\n", nc, P.n, dataset, skip,
           max_new);
    printf("%5s %5s %9s %7s\n", "n", "D", "tok/s", "tau");
    int best = 0;
    for (int k = 0; k < nc && !rc; k++) { /* each tree as the static tree of a bank of all candidates */
        if (!(rc = write_bank(out, c, nc, k, -1, -1, NAN, feature, NULL, 0, NULL, 0, NULL, &err)) &&
            !(rc = hydra_spec(heads, out, "static", feature, -1, &s, &err)) &&
            !(rc = arb_entmtp_time(ctx, &s, &P, max_new, use_cpu, t, &err))) {
            c[k].tok_s = t->tok_s, c[k].tau = t->tau;
            best = c[k].tok_s > c[best].tok_s ? k : best;
            printf("%5d %5d %9.2f %7.3f%s\n", c[k].n, c[k].depth, c[k].tok_s, c[k].tau,
                   strchr(c[k].choices, ' ') ? "  (default mc_sim_7b_63)" : "");
            fflush(stdout);
        }
    }
    /* the throughput-Pareto bank: sorted by size, each faster than every smaller tree */
    cand *b = calloc(CAND_MAX, sizeof *b);
    int nb = 0, st = 0, tp = -1, maxd = 0;
    if (!rc && !b)
        rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    double fastest = -1;
    for (int k = 0; k < nc && !rc; k++)
        if (c[k].tok_s > fastest) {
            fastest = c[k].tok_s;
            if (k == best)
                st = nb;
            b[nb++] = c[k];
        }
    /* [CHOICE] the deepest depth of the acceptance hull, not of the published default: on
       HumanEval the hull stopped at depth 3, and T+ = mc_sim_7b_63 (64 nodes, 2x slower than
       any hull tree) is no tree "from the per-task frontier" (paper §5.2) */
    for (int k = 0; k < nc; k++)
        maxd = !c[k].published && c[k].depth > maxd ? c[k].depth : maxd;
    for (int k = 0; k < nb; k++) /* T+: the fastest deepest-depth bank tree (depth 4 with 4 heads) */
        if (!b[k].published && b[k].depth == maxd && (tp < 0 || b[k].tok_s > b[tp].tok_s))
            tp = k;
    if (!rc && tp < 0) { /* [CHOICE] no bank tree that deep (a small tree won on this machine): the
                            fastest timed tree of that depth joins the bank as T+ */
        int j = -1;
        for (int k = 0; k < nc; k++)
            if (!c[k].published && c[k].depth == maxd && (j < 0 || c[k].tok_s > c[j].tok_s))
                j = k;
        int at = nb;
        while (at > 0 && b[at - 1].n > c[j].n)
            at--;
        memmove(b + at + 1, b + at, (size_t)(nb - at) * sizeof *b);
        b[at] = c[j];
        nb++;
        tp = at;
        st += st >= at;
        printf("no depth-%d tree in the throughput-Pareto bank: T+ = the fastest one timed (n = %d)\n", maxd, c[j].n);
    }
    if (!rc)
        printf("bank: %d trees; static task tree n = %d (%.2f tok/s); T+ n = %d\n", nb, b[st].n, b[st].tok_s,
               b[tp].n);
    /* T- and tau: grid search on the same prompts */
    int tm = -1;
    double tau = NAN, best_g = -1;
    for (int k = 0; k < nb && !rc; k++) {
        if (b[k].depth > 2 || k == tp)
            continue;
        for (size_t g = 0; g < sizeof tau_grid / sizeof tau_grid[0] && !rc; g++) {
            if (!(rc = write_bank(out, b, nb, st, tp, k, tau_grid[g], feature, NULL, 0, NULL, 0, NULL, &err)) &&
                !(rc = hydra_spec(heads, out, "entmtp_tau", feature, -1, &s, &err)) &&
                !(rc = arb_entmtp_time(ctx, &s, &P, max_new, use_cpu, t, &err))) {
                printf("  T- n = %3d  tau %.3f  %8.2f tok/s  tau_acc %.3f\n", b[k].n, tau_grid[g], t->tok_s, t->tau);
                if (t->tok_s > best_g)
                    best_g = t->tok_s, tm = k, tau = tau_grid[g];
            }
        }
    }
    if (!rc && tm < 0) /* no shallow bank tree: the pair degenerates to T+ alone */
        tm = tp, tau = tau_grid[0];
    /* ladder: equal-frequency quantiles of s over the T+ run */
    double lad[CAND_MAX];
    int nl = 0;
    if (!rc && nb > 1) {
        t->s_values = sv, t->s_cap = 100000;
        if (!(rc = write_bank(out, b, nb, tp, -1, -1, NAN, feature, NULL, 0, NULL, 0, NULL, &err)) &&
            !(rc = hydra_spec(heads, out, "static", feature, -1, &s, &err)) &&
            !(rc = arb_entmtp_time(ctx, &s, &P, max_new, use_cpu, t, &err)) && t->n_s > 0) {
            qsort(sv, (size_t)t->n_s, sizeof *sv, dcmp);
            for (int j = 1; j < nb; j++)
                lad[nl++] = sv[(size_t)((double)j / nb * (t->n_s - 1))];
        }
        t->s_values = NULL, t->s_cap = 0;
    }
    if (!rc)
        rc = write_bank(out, b, nb, st, tp, tm, tau, feature, lad, nl, c, nc, clock, &err);
    if (!rc)
        printf("EntMTPtau: T+ n = %d, T- n = %d, tau = %g (feature %s, %.2f tok/s); wrote %s\n", b[tp].n, b[tm].n, tau,
               feature, best_g, out);
    for (int k = 0; k < nc; k++)
        free(c[k].choices);
    free(c);
    free(b);
    free(t);
    free(sv);
    arb_entmtp_prompts_free(&P);
    arb_ctx_free(ctx);
    arb_model_free(m);
    if (rc) {
        fprintf(stderr, "arbor entmtp bank: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Mean and 95% half-width of the per-prompt ratio a/b (paired: same prompts, same order). */
static void ratio_ci(const arb_entmtp_timing *a, const arb_entmtp_timing *b, double *mean, double *hw)
{
    double s = 0, s2 = 0;
    int n = a->n < b->n ? a->n : b->n;
    for (int i = 0; i < n; i++) {
        double r = a->prompt_tok_s[i] / b->prompt_tok_s[i];
        s += r;
        s2 += r * r;
    }
    *mean = n ? s / n : NAN;
    double var = n > 1 ? (s2 - s * s / n) / (n - 1) : NAN;
    *hw = n > 1 ? 1.96 * sqrt(var / n) : NAN;
}

int arb_entmtp_cmd_table(int argc, char **argv)
{
    const char *model = "default", *heads = NULL, *bank = NULL, *dataset = "gsm8k";
    int n_prompts = 20, skip = 0, max_new = 64, threads = 1, max_len = 400;
    bool ladder = false;
    const char *clock = "wall";
    const arb_opt opts[] = {
        {.name = "--heads", .kind = ARB_OPT_KIND_STR, .dst = &heads, .metavar = "PATH", .required = true,
         .help = "Hydra heads GGUF"},
        {.name = "--bank", .kind = ARB_OPT_KIND_STR, .dst = &bank, .metavar = "FILE", .required = true,
         .help = "bank JSON of arbor entmtp bank for this dataset"},
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--dataset", "NAME", &dataset, "evaluation prompts (default gsm8k)"),
        ARB_OPT_INT("--skip", "N", &skip, 0, 1 << 24, "records skipped first (default 0)"),
        ARB_OPT_INT("--prompts", "N", &n_prompts, 1, ARB_ENTMTP_PROMPTS_MAX, "prompts (default 20; paper 100)"),
        ARB_OPT_INT("--max-new", "N", &max_new, 2, 4096, "tokens per prompt (default 64; paper 256)"),
        ARB_OPT_INT("--max-prompt", "N", &max_len, 1, 1 << 20, "skip longer prompts (default 400 tokens)"),
        ARB_OPT_FLAG("--ladder", &ladder, "add the threshold-ladder row"),
        ARB_OPT_STR("--clock", "C", &clock, "tok/s from wall time (default, the paper's) or cpu (process CPU time)"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "kernel threads (default 1)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"entmtp table", NULL,
                              "EntMTP Table 1 for one dataset: AR, Hydra with the published default tree\n"
                              "(mc_sim_7b_63), the static task tree and EntMTPtau of the bank; tok/s (prefill\n"
                              "included, one warm-up generation excluded), speedup over AR, tau (generated tokens\n"
                              "per target call) and the paper's tau (accept length per step). Every row must emit the\n"
                              "AR tokens (greedy); the paired per-prompt tok/s ratios carry 95% intervals.",
                              opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    bool use_cpu;
    if (clock_is_cpu("entmtp table", clock, &use_cpu))
        return 2;
    arb_model *m = NULL;
    arb_ctx *ctx = NULL;
    arb_entmtp_prompts P = {0};
    enum { ROWS = 5 };
    arb_entmtp_timing *t = calloc(ROWS, sizeof *t);
    const char *names[ROWS] = {"AR", "Hydra (default)", "EntMTP (static)", "EntMTPtau", "EntMTP-ladder"};
    int rc = t ? arb_gen_load(model, "cpu", threads, 0, &m, &ctx, &err) : ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    if (!rc)
        rc = arb_entmtp_prompts_load(m, dataset, skip, n_prompts, max_len, &P, &err);
    int n_rows = ladder ? 5 : 4, mism = 0;
    for (int r = 0; r < n_rows && !rc; r++) {
        arb_method_spec s;
        if (r == 0)
            rc = arb_method_spec_preset("ar", &s, &err);
        else if (r == 1 && !(rc = hydra_spec(heads, "", "", "lit", -1, &s, &err)))
            s.bank[0] = 0;
        else if (r >= 2)
            rc = hydra_spec(heads, bank, r == 2 ? "static" : r == 3 ? "entmtp_tau" : "ladder", "lit", -1, &s, &err);
        if (!rc && r >= 2) { /* the feature the bank's tau was calibrated on */
            arb_topobank *b = NULL;
            if (!(rc = arb_topobank_load(bank, 8, &b, &err)) && b->sched.feature[0])
                snprintf(s.feature, sizeof s.feature, "%s", b->sched.feature);
            arb_topobank_free(b);
        }
        if (!rc)
            rc = arb_entmtp_time(ctx, &s, &P, max_new, use_cpu, &t[r], &err);
        for (int i = 0; !rc && r > 0 && i < t[r].n; i++)
            mism += t[r].hash[i] != t[0].hash[i];
        if (!rc)
            fprintf(stderr, "%s: %.2f tok/s\n", names[r], t[r].tok_s);
    }
    if (!rc) {
        printf("EntMTP Table 1 — %s, %d prompts (from record %d), %d tokens, this CPU, tok/s by %s time\n", dataset,
               P.n, skip, max_new, use_cpu ? "process CPU" : "wall");
        printf("| method | tok/s | speedup | tau (gen/call) | tau (accept/step) | wall tok/s |\n"
               "|---|---|---|---|---|---|\n");
        for (int r = 0; r < n_rows; r++)
            printf("| %s | %.2f | %.2fx | %.3f | %.3f | %.2f |\n", names[r], t[r].tok_s, t[r].tok_s / t[0].tok_s,
                   t[r].tau, r ? t[r].tau_step : 1.0, t[r].wall_tok_s);
        double mu, hw;
        ratio_ci(&t[2], &t[1], &mu, &hw);
        printf("static / default: per-prompt tok/s ratio %.3f +- %.3f (95%%)\n", mu, hw);
        ratio_ci(&t[3], &t[2], &mu, &hw);
        printf("EntMTPtau / static: per-prompt tok/s ratio %.3f +- %.3f (95%%)\n", mu, hw);
        printf("lossless: %d mismatching generations vs AR\n", mism);
    }
    free(t);
    arb_entmtp_prompts_free(&P);
    arb_ctx_free(ctx);
    arb_model_free(m);
    if (rc) {
        fprintf(stderr, "arbor entmtp table: %s\n", err.msg);
        return 1;
    }
    return mism ? 1 : 0;
}
