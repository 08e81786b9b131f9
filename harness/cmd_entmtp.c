/* cmd_entmtp.c — `arbor entmtp frontier`: EntMTP's greedy acceptance frontier on calibration
 * prompts (docs/spec/drafting.md §10.1–10.2, docs/entmtp.md). */
#include <cJSON.h>
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */
#include "entmtp_frontier.h"
#include "entmtp_rollout.h"
#include "entmtp_timing.h"
#include "genutil.h"
#include "opts.h"
#include "plot.h"
#include "schedulers/features.h"
#include "schedulers/scheduler.h"
#include "topobank.h"

int arb_entmtp_cmd_bank(int argc, char **argv);  /* cmd_entmtp_bank.c */
int arb_entmtp_cmd_analyze(int argc, char **argv); /* cmd_entmtp_analyze.c */
int arb_entmtp_cmd_table(int argc, char **argv);

static const char description[] =
    "Subcommand frontier: Algorithm 1 (EntMTP §3.1) for every D_max in 1..--max-depth up to\n"
    "--budget nodes, scoring each one-node augmentation of the current tree in one joint\n"
    "forward per step (score_all) over Hydra greedy self-rollouts of the calibration prompts;\n"
    "then the acceptance Pareto hull, every hull tree re-measured by its own canonical\n"
    "self-rollout (debiasing, both values logged), and the hull recomputed on the debiased\n"
    "means. Writes JSON (--out) with every point: n, depth, a (score_all), a_self (NaN: not\n"
    "debiased), hull flags and the index-path tree. Calibration prompts must be disjoint from\n"
    "evaluation prompts: use gsm8k-train / sharegpt-multiturn, or --skip past the evaluated ones.";

typedef struct scorer_ud {
    arb_rollout *ro;
    arb_rollout_set set;
    int calls;
} scorer_ud;

static int rollout_scorer(const arb_etree *T, const arb_epath *F, int nF, double *a, void *ud, arb_err *err)
{
    scorer_ud *u = ud;
    double aT;
    int rc = arb_rollout_score(u->ro, T, F, nF, &u->set, a, &aT, NULL, err);
    u->calls++;
    fprintf(stderr, "\r  |T| = %3d  candidates %2d  a(T) %.3f", T->n, nF, aT);
    return rc;
}

static int write_json(const char *path, const char *dataset, const arb_frontier_point *P, int n, const bool *hull_b,
                      const bool *hull_s, const arb_entmtp_prompts *pr, int max_new, arb_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "entmtp: cannot write %s", path);
    fprintf(f, "{\"dataset\":\"%s\",\"prompts\":%d,\"max_new\":%d,\"points\":[\n", dataset, pr->n, max_new);
    char *buf = malloc(8192);
    for (int i = 0; i < n && buf; i++) {
        arb_etree_format(&P[i].tree, buf, 8192);
        fprintf(f, "%s{\"n\":%d,\"depth\":%d,\"tree_depth\":%d,\"a\":%.6f,", i ? ",\n" : "", P[i].n, P[i].depth,
                P[i].tree.max_depth, P[i].a);
        if (isnan(P[i].a_self))
            fprintf(f, "\"a_self\":null,");
        else
            fprintf(f, "\"a_self\":%.6f,", P[i].a_self);
        fprintf(f, "\"hull\":%s,\"hull_self\":%s,\"choices\":%s}", hull_b[i] ? "true" : "false",
                hull_s[i] ? "true" : "false", buf);
    }
    fprintf(f, "\n]}\n");
    free(buf);
    if (fclose(f) || !buf)
        return ARB_ERR(err, ARB_E_IO, "entmtp: cannot write %s", path);
    return ARB_OK;
}

static int frontier(int argc, char **argv)
{
    const char *model = "default", *heads = NULL, *dataset = "gsm8k-train", *out = "entmtp-frontier.json";
    int max_depth = 4, budget = 30, n_prompts = 4, skip = 0, max_new = 64, threads = 1, max_len = 400;
    const arb_opt opts[] = {
        {.name = "--heads", .kind = ARB_OPT_KIND_STR, .dst = &heads, .metavar = "PATH", .required = true,
         .help = "Hydra heads GGUF (arbor train hydra)"},
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--dataset", "NAME", &dataset, "calibration prompts (default gsm8k-train)"),
        ARB_OPT_INT("--skip", "N", &skip, 0, 1 << 24, "records skipped first (default 0)"),
        ARB_OPT_INT("--prompts", "N", &n_prompts, 1, 100000, "calibration prompts (default 4; paper 100)"),
        ARB_OPT_INT("--max-new", "N", &max_new, 2, 4096, "rollout length in tokens (default 64; paper 256)"),
        ARB_OPT_INT("--max-prompt", "N", &max_len, 1, 1 << 20, "skip longer prompts (default 400 tokens)"),
        ARB_OPT_INT("--max-depth", "D", &max_depth, 1, ARB_ETREE_DEPTH, "D_max runs 1..D (default 4)"),
        ARB_OPT_INT("--budget", "B", &budget, 3, ARB_ETREE_MAX / 2, "B_max nodes incl. the anchor (default 30)"),
        ARB_OPT_STR("--out", "FILE", &out, "JSON output (default entmtp-frontier.json)"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "kernel threads (default 1)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"entmtp frontier", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_rollout *ro = NULL;
    arb_entmtp_prompts pr = {0};
    arb_frontier_point *all = NULL;
    int n_all = 0;
    int rc = arb_gen_load(model, "cpu", threads, 0, &m, &c, &err);
    if (!rc)
        rc = arb_rollout_new(c, heads, &ro, &err);
    if (!rc && max_depth > arb_rollout_n_heads(ro))
        rc = ARB_ERR(&err, ARB_E_INVAL, "--max-depth %d: %s has %d heads", max_depth, heads, arb_rollout_n_heads(ro));
    if (!rc)
        rc = arb_entmtp_prompts_load(m, dataset, skip, n_prompts, max_len, &pr, &err);
    scorer_ud ud = {.ro = ro, .set = {.n = pr.n, .tok = (const int32_t *const *)pr.tok, .len = pr.len,
                                      .max_new = max_new}};
    for (int D = 1; D <= max_depth && !rc; D++) {
        arb_frontier_point *H;
        int nH;
        fprintf(stderr, "D_max %d:\n", D);
        if ((rc = arb_frontier_grow(D, budget, rollout_scorer, &ud, &H, &nH, &err)))
            break;
        fputc('\n', stderr);
        arb_frontier_point *g = realloc(all, (size_t)(n_all + nH) * sizeof *g);
        if (!g) {
            free(H);
            rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
            break;
        }
        all = g;
        memcpy(all + n_all, H, (size_t)nH * sizeof *H);
        n_all += nH;
        free(H);
    }
    int *keep = rc ? NULL : malloc((size_t)(n_all + 1) * sizeof *keep);
    bool *hb = rc ? NULL : calloc((size_t)n_all + 1, 1), *hs = rc ? NULL : calloc((size_t)n_all + 1, 1);
    if (!rc && (!keep || !hb || !hs))
        rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    if (!rc) {
        int nk = arb_frontier_hull(all, n_all, false, keep);
        printf("acceptance hull (score_all): %d of %d trees\n", nk, n_all);
        printf("%5s %5s %9s %9s %8s\n", "n", "D", "biased", "self", "delta");
        double worst = 0;
        for (int k = 0; k < nk && !rc; k++) { /* debias: each hull tree's own self-rollout */
            arb_frontier_point *p = &all[keep[k]];
            hb[keep[k]] = true;
            rc = arb_rollout_score(ro, &p->tree, NULL, 0, &ud.set, NULL, &p->a_self, NULL, &err);
            double d = (p->a - p->a_self) / p->a_self;
            if (fabs(d) > fabs(worst))
                worst = d;
            printf("%5d %5d %9.4f %9.4f %+7.2f%%\n", p->n, p->tree.max_depth, p->a, p->a_self, 100 * d);
        }
        if (!rc) {
            /* the hull on the debiased means, over the debiased trees */
            arb_frontier_point *dp = malloc((size_t)nk * sizeof *dp);
            int *k2 = malloc((size_t)nk * sizeof *k2);
            if (!dp || !k2)
                rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
            for (int k = 0; !rc && k < nk; k++)
                dp[k] = all[keep[k]];
            int n2 = rc ? 0 : arb_frontier_hull(dp, nk, true, k2);
            for (int k = 0; k < n2; k++)
                hs[keep[k2[k]]] = true;
            if (!rc)
                printf("largest relative bias %+.2f%% (paper: within +-3.3%%); hull on debiased means keeps %d of "
                       "%d; node range %d..%d\n",
                       100 * worst, n2, nk, nk ? all[keep[0]].n : 0, nk ? all[keep[nk - 1]].n : 0);
            free(dp);
            free(k2);
        }
    }
    if (!rc)
        rc = write_json(out, dataset, all, n_all, hb, hs, &pr, max_new, &err);
    if (!rc)
        printf("wrote %s\n", out);
    free(keep);
    free(hb);
    free(hs);
    free(all);
    arb_entmtp_prompts_free(&pr);
    arb_rollout_free(ro);
    arb_ctx_free(c);
    arb_model_free(m);
    if (rc) {
        fprintf(stderr, "arbor entmtp frontier: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Scheduler overhead per step (§10.4 target < 0.1 ms): the base-distribution features over a
   real-size logits row (p0, H_t, EMAs), the path values from D head probabilities, the policy's
   pick and the bank pointer. Head calls are not included: with feature lit they are not needed;
   with gD / sum, D head calls are (docs/entmtp.md gives their cost from the step logs). */
static int overhead(int argc, char **argv)
{
    int V = 49152, iters = 2000;
    const arb_opt opts[] = {ARB_OPT_INT("--vocab", "V", &V, 2, 1 << 22, "logits row length (default 49152, SmolLM2)"),
                            ARB_OPT_INT("--iters", "N", &iters, 1, 1 << 24, "steps timed (default 2000)"),
                            ARB_OPT_END};
    const arb_cmd_spec cmd = {"entmtp overhead", NULL, "Times the EntMTP scheduler's per-step work (features + switch).",
                              opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    float *row = malloc((size_t)V * sizeof *row);
    const char *ch[2] = {"[[0],[1]]", "[[0],[0,0],[0,0,0],[0,0,0,0],[1]]"};
    arb_topobank *b = NULL;
    int rc = row ? arb_topobank_new(ch, 2, 4, &b, &err) : ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    void *st = NULL;
    const arb_tree_sched_i *si = arb_tree_sched_find("entmtp_tau");
    arb_tree_sched_opts o = {.t_plus = 1, .t_minus = 0, .tau_on = 0.5, .tau_off = 0.5};
    if (!rc)
        rc = si->create(b, &o, &st, &err);
    if (rc) {
        fprintf(stderr, "arbor entmtp overhead: %s\n", err.msg);
        free(row);
        arb_topobank_free(b);
        return 1;
    }
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < V; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        row[i] = (float)((x >> 40) * 0x1p-24) * 12.0f;
    }
    arb_entfeat f;
    arb_entfeat_reset(&f, ARB_ENTFEAT_SUM);
    const float p[4] = {0.6f, 0.5f, 0.4f, 0.3f};
    const int32_t t1[4] = {1, 2, 3, 4};
    char js[1024];
    struct timespec a, c, ca, cc;
    long sw = 0;
    const arb_topo *cur = &b->t[0], *prev = cur;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    for (int it = 0; it < iters; it++) {
        row[it % V] += 0.25f; /* a new distribution each step */
        arb_entfeat_base(&f, row, V);
        arb_entfeat_heads(&f, p, t1, 4);
        cur = &b->t[si->pick(st, (it / 7) % 2 ? 0.9 : 0.1)];
        sw += cur != prev;
        prev = cur;
        arb_entfeat_json(&f, js, sizeof js);
    }
    clock_gettime(CLOCK_MONOTONIC, &c);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cc);
    double us = ((c.tv_sec - a.tv_sec) * 1e6 + (c.tv_nsec - a.tv_nsec) / 1e3) / iters;
    double cpu = ((cc.tv_sec - ca.tv_sec) * 1e6 + (cc.tv_nsec - ca.tv_nsec) / 1e3) / iters;
    printf("scheduler overhead: %.2f us CPU (%.2f us wall) per step (features over V = %d, path values, pick, "
           "pointer, log JSON); %ld switches in %d steps; target < 100 us\n", cpu, us, V, sw, iters);
    /* the switch alone: policy + pointer, from the feature already computed */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    for (int it = 0; it < iters * 100; it++) {
        cur = &b->t[si->pick(st, (it / 7) % 2 ? 0.9 : 0.1)];
        sw += cur != prev;
        prev = cur;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cc);
    double sw_us = ((cc.tv_sec - ca.tv_sec) * 1e6 + (cc.tv_nsec - ca.tv_nsec) / 1e3) / (iters * 100.0);
    printf("of which the policy + tree switch: %.4f us CPU per step (%ld switches in all)\n", sw_us, sw);
    /* the row pass alone on each path this CPU has (features.c: plain C vs AVX2) */
    static const char *const isa_name[2] = {"plain C", "AVX2"};
    for (int isa = ARB_TOPK_BASE; isa <= ARB_TOPK_AVX2; isa++) {
        arb_entfeat_row r;
        if (!arb_entfeat_row_stats_isa(isa, row, V, &r))
            continue;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
        for (int it = 0; it < iters; it++) {
            row[it % V] += 0.25f;
            arb_entfeat_row_stats_isa(isa, row, V, &r);
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cc);
        printf("row pass (argmax, p0, H) on the %s path: %.2f us CPU\n", isa_name[isa],
               ((cc.tv_sec - ca.tv_sec) * 1e6 + (cc.tv_nsec - ca.tv_nsec) / 1e3) / iters);
    }
    si->destroy(st);
    arb_topobank_free(b);
    free(row);
    return 0;
}

/* A whole JSON file, parsed (NULL after a message in err). */
static cJSON *read_json(const char *path, arb_err *err)
{
    FILE *f = fopen(path, "rb");
    char *txt = f ? malloc(1 << 24) : NULL;
    size_t len = txt ? fread(txt, 1, (1 << 24) - 1, f) : 0;
    if (f)
        fclose(f);
    if (!txt) {
        ARB_ERR(err, ARB_E_IO, "cannot read %s", path);
        return NULL;
    }
    txt[len] = 0;
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    if (!root)
        ARB_ERR(err, ARB_E_FORMAT, "%s: not JSON", path);
    return root;
}

/* The throughput frontier from a bank file (`arbor entmtp bank`'s "timed" list): tok/s of every
   timed tree against its node count, the bank's trees, the static tree and the published default;
   DIR/entmtp_throughput.{dat,gp,png,svg}. */
static int plot_bank(const char *in, const char *dir, arb_err *err)
{
    cJSON *root = read_json(in, err);
    if (!root)
        return err->code;
    const cJSON *timed = cJSON_GetObjectItemCaseSensitive(root, "timed");
    const cJSON *trees = cJSON_GetObjectItemCaseSensitive(root, "trees");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "static");
    int rc = ARB_OK;
    if (!cJSON_IsArray(timed) || !cJSON_IsArray(trees) || !cJSON_IsNumber(st))
        rc = ARB_ERR(err, ARB_E_FORMAT,
                     "%s: $.timed, $.trees, $.static: missing (a bank written by arbor entmtp bank, which lists every "
                     "timed tree in $.timed)", in);
    char path[4200];
    snprintf(path, sizeof path, "%s/entmtp_throughput.dat", dir);
    FILE *o = rc ? NULL : fopen(path, "w");
    if (!rc && !o)
        rc = ARB_ERR(err, ARB_E_IO, "cannot write %s", path);
    /* blocks: 0 timed hull trees (n tok_s depth), 1 bank, 2 static, 3 published default */
    for (int blk = 0; !rc && blk < 4; blk++) {
        fprintf(o, "%s# %s\n", blk ? "\n\n" : "", (const char *[]){"hull trees", "bank", "static", "default"}[blk]);
        const cJSON *arr = blk == 0 || blk == 3 ? timed : trees, *p;
        int i = 0;
        cJSON_ArrayForEach(p, arr)
        {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "n");
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "tok_s");
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(p, "depth");
            const bool pub = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "published"));
            if (!cJSON_IsNumber(n) || !cJSON_IsNumber(v) || !cJSON_IsNumber(d)) {
                rc = ARB_ERR(err, ARB_E_FORMAT, "%s: $.%s[%d]: needs n, depth, tok_s", in,
                             arr == timed ? "timed" : "trees", i);
                break;
            }
            if ((blk == 0 && !pub) || blk == 1 || (blk == 2 && i == st->valueint) || (blk == 3 && pub))
                fprintf(o, "%d %.3f %d\n", n->valueint, v->valuedouble, d->valueint);
            i++;
        }
    }
    if (o)
        fclose(o);
    if (!rc) {
        char vars[256];
        const cJSON *ck = cJSON_GetObjectItemCaseSensitive(root, "clock");
        snprintf(vars, sizeof vars, "title_text = 'EntMTP throughput frontier, %s'\nclock_text = '%s'\n", in,
                 cJSON_IsString(ck) ? ck->valuestring : "wall");
        rc = arb_plot_script(dir, NULL, "entmtp_throughput", vars, 900, 600, err);
        if (!rc)
            rc = arb_plot_render(dir, "entmtp_throughput", err);
    }
    cJSON_Delete(root);
    if (!rc)
        printf("wrote %s/entmtp_throughput.{dat,gp,png,svg}\n", dir);
    return rc;
}

/* EntMTP Fig. 1 from a frontier file: DIR/entmtp_frontier.{dat,gp,png,svg}; with --bank the
   throughput frontier too. */
static int plot(int argc, char **argv)
{
    const char *in = NULL, *bank = NULL, *dir = "results/entmtp-plot";
    const arb_opt opts[] = {
        ARB_OPT_STR("--frontier", "FILE", &in, "JSON of arbor entmtp frontier (acceptance frontier)"),
        ARB_OPT_STR("--bank", "FILE", &bank, "bank JSON of arbor entmtp bank (throughput frontier)"),
        ARB_OPT_STR("--out", "DIR", &dir, "output directory (default results/entmtp-plot)"), ARB_OPT_END};
    const arb_cmd_spec cmd = {"entmtp plot", NULL,
                              "The acceptance frontier (EntMTP Fig. 1, --frontier) and the throughput frontier\n"
                              "(tok/s of every timed tree, --bank) via gnuplot; at least one of the two.",
                              opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    if (!in && !bank) {
        fprintf(stderr, "arbor entmtp plot: give --frontier FILE, --bank FILE or both\n");
        return 2;
    }
    arb_err err = {0};
    mkdir(dir, 0755);
    if (bank && plot_bank(bank, dir, &err)) {
        fprintf(stderr, "arbor entmtp plot: %s\n", err.msg);
        return 1;
    }
    if (!in)
        return 0;
    int rc = ARB_OK;
    FILE *f = fopen(in, "rb");
    char *txt = f ? malloc(1 << 24) : NULL;
    size_t len = txt ? fread(txt, 1, (1 << 24) - 1, f) : 0;
    if (f)
        fclose(f);
    cJSON *root = NULL;
    if (!txt)
        rc = ARB_ERR(&err, ARB_E_IO, "cannot read %s", in);
    else {
        txt[len] = 0;
        root = cJSON_Parse(txt);
    }
    const cJSON *pts = root ? cJSON_GetObjectItemCaseSensitive(root, "points") : NULL;
    if (!rc && !cJSON_IsArray(pts))
        rc = ARB_ERR(&err, ARB_E_FORMAT, "%s: $.points: not an array (a file of arbor entmtp frontier)", in);
    char path[4200];
    snprintf(path, sizeof path, "%s/entmtp_frontier.dat", dir);
    FILE *o = rc ? NULL : fopen(path, "w");
    if (!rc && !o)
        rc = ARB_ERR(&err, ARB_E_IO, "cannot write %s", path);
    for (int blk = 1; !rc && blk <= 5; blk++) { /* D_max 1..4, then the hull */
        fprintf(o, "%s# %s\n", blk > 1 ? "\n\n" : "", blk <= 4 ? "n a" : "hull: n a a_self");
        const cJSON *p;
        cJSON_ArrayForEach(p, pts)
        {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "n"), *d = cJSON_GetObjectItemCaseSensitive(p, "depth");
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(p, "a"), *as = cJSON_GetObjectItemCaseSensitive(p, "a_self");
            if (!cJSON_IsNumber(n) || !cJSON_IsNumber(d) || !cJSON_IsNumber(a)) {
                rc = ARB_ERR(&err, ARB_E_FORMAT, "%s: a point without n, depth, a", in);
                break;
            }
            if (blk <= 4 && d->valueint == blk)
                fprintf(o, "%d %.6f\n", n->valueint, a->valuedouble);
            if (blk == 5 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "hull")))
                fprintf(o, "%d %.6f %.6f\n", n->valueint, a->valuedouble, cJSON_IsNumber(as) ? as->valuedouble : NAN);
        }
    }
    if (o)
        fclose(o);
    if (!rc) {
        char vars[256];
        const cJSON *ds = cJSON_GetObjectItemCaseSensitive(root, "dataset");
        snprintf(vars, sizeof vars, "title_text = 'EntMTP acceptance frontier, %s (Hydra heads, greedy)'\n",
                 cJSON_IsString(ds) ? ds->valuestring : "?");
        rc = arb_plot_script(dir, NULL, "entmtp_frontier", vars, 900, 600, &err);
        if (!rc)
            rc = arb_plot_render(dir, "entmtp_frontier", &err);
    }
    cJSON_Delete(root);
    free(txt);
    if (rc) {
        fprintf(stderr, "arbor entmtp plot: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s/entmtp_frontier.{dat,gp,png,svg}\n", dir);
    return 0;
}

int arb_cmd_entmtp(int argc, char **argv)
{
    static const char usage[] = "usage: arbor entmtp frontier|bank|table|overhead|plot|analyze [options]   (arbor entmtp <sub> --help)\n"
                                "  frontier  acceptance frontier + debiasing on calibration prompts\n"
                                "  bank      throughput frontier, TopologyBank and scheduler calibration\n"
                                "  table     EntMTP Table 1 (AR, Hydra default, static, EntMTPtau) on eval prompts\n"
                                "  overhead  scheduler cost per step (features + switch)\n"
                                "  plot      the acceptance and throughput frontier figures (gnuplot)\n"
                                "  analyze   Appendix A from a results database: feature r, AUROC, lossless\n";
    if (argc >= 2 && !strcmp(argv[1], "frontier"))
        return frontier(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "plot"))
        return plot(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "overhead"))
        return overhead(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "bank"))
        return arb_entmtp_cmd_bank(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "analyze"))
        return arb_entmtp_cmd_analyze(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "table"))
        return arb_entmtp_cmd_table(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(usage, stdout);
        return 0;
    }
    fputs(usage, stderr);
    return 2;
}
