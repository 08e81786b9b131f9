/* cmd_dte_depth.c — `arbor dte-depth`: per-depth OTLP acceptance rates and L1(p, q) along
 * draft paths (DTE paper Fig. 1; docs/spec/verification.md §10.2). For each prompt a target trajectory
 * is sampled (T, top-p); every --every tokens the draft model drafts one path of --depth
 * tokens from the current root, one target pass scores it, and at each depth d the rates of
 * the OT solvers for n = --paths i.i.d. draws and ||p_v - q_v||_1 are averaged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "dataset.h"
#include "drafters/draft_model.h"
#include "genutil.h"
#include "plot.h"
#include "resample.h"
#include "sample.h"
#include "verifiers/otanalysis.h"
#include "verifiers/verifier.h"

static const char usage[] =
    "usage: arbor dte-depth [--dataset NAME[,NAME]] [--limit N] [--max-new N] [--every N]\n"
    "                       [--depth D] [--paths K] [--draft-layers L] [--temperature T]\n"
    "                       [--top-p P] [--seed S] [--data DIR] [--threads N] [--model M]\n"
    "                       [--settings T[:P][;T[:P]...]] [--shape K,L,B[;K,L,B...]]\n"
    "                       [--plot DIR] [--templates DIR]\n"
    "\n"
    "Per-depth acceptance rate of each OT verifier (NSS NaiveTree SpecInfer SpecTr Khisti;\n"
    "Khisti: the DTE lower bound) for K i.i.d. draws, and L1(p, q), along draft paths from\n"
    "roots every N tokens of sampled target trajectories (DTE Fig. 1). Defaults: math500,\n"
    "limit 3, max-new 96, every 16, depth 6, paths 3, self-draft 24 layers, T 1, top-p 1.\n"
    "With --shape it also drafts one (k, l, b) delayed tree per shape and root and prints each\n"
    "verifier's exact expected block efficiency 1 + E[accepted | tree] on the same trees\n"
    "(DTE Eq. 3; no verification randomness; naive and bv use path 1), the draft + target\n"
    "time per tree, and per verifier the best shape for BE and for tokens/s (DTE Tables 2/3).\n"
    "--settings pools several sampling settings (temperature T, top-p P, default 1) into one\n"
    "table, as the paper's Fig. 1 aggregates its sampling grid; it replaces --temperature/--top-p.\n"
    "With --plot DIR it also writes the per-depth table as DIR/dte_depth.{dat,md} and the\n"
    "figure DIR/dte_depth.{gp,png,svg} (gnuplot; template plots/dte_depth.gp or --templates).\n";

#define MAXD 16
#define MAXSH 16
#define N_VF 8      /* verifiers compared; Traversal is the last */
#define N_BOOT 2000 /* resamples of roots for the Traversal-gap intervals */

/* Per root: Traversal's exact block efficiency minus each verifier's, averaged over the shapes
   (the DTE claim "Traversal >= every other verifier" on the same trees), grown by doubling. */
typedef struct be_gaps {
    double *gap; /* [root][N_VF] */
    int n, cap;
} be_gaps;

static int gaps_push(be_gaps *g, const double be[MAXSH][N_VF], int n_sh, arb_err *err)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 256;
        double *x = realloc(g->gap, sizeof(double) * N_VF * (size_t)cap);
        if (!x)
            return ARB_ERR(err, ARB_E_NOMEM, "dte-depth: out of memory");
        g->gap = x, g->cap = cap;
    }
    for (int i = 0; i < N_VF; i++) {
        double s = 0;
        for (int si = 0; si < n_sh; si++)
            s += be[si][N_VF - 1] - be[si][i];
        g->gap[(size_t)g->n * N_VF + i] = s / n_sh;
    }
    g->n++;
    return ARB_OK;
}

/* Mean gap per verifier and a 95% percentile-bootstrap interval over roots (seed 0). Verdict:
   Traversal >= X holds when the interval's lower end is >= 0, fails when its upper end is < 0. */
static int print_gaps(const be_gaps *g, const char *const *vn, arb_err *err)
{
    double *v = malloc(sizeof(double) * N_BOOT);
    if (!v)
        return ARB_ERR(err, ARB_E_NOMEM, "dte-depth: out of memory");
    printf("\n# Traversal's expected block efficiency minus each verifier's on the same trees (mean over\n"
           "# shapes, then over %d roots; 95%% bootstrap interval over roots, %d resamples, seed 0)\n\n"
           "| verifier | Traversal - verifier | 95%% interval | Traversal >= verifier |\n|---|---|---|---|\n",
           g->n, N_BOOT);
    for (int i = 0; i + 1 < N_VF; i++) {
        double mean = 0;
        for (int r = 0; r < g->n; r++)
            mean += g->gap[(size_t)r * N_VF + i];
        mean /= g->n;
        uint64_t s = 0;
        for (int b = 0; b < N_BOOT; b++) {
            double sum = 0;
            for (int r = 0; r < g->n; r++)
                sum += g->gap[(arb_splitmix64(&s) % (uint64_t)g->n) * N_VF + i];
            v[b] = sum / g->n;
        }
        qsort(v, N_BOOT, sizeof *v, arb_cmp_double);
        double lo = arb_quantile_sorted(v, N_BOOT, 0.025), hi = arb_quantile_sorted(v, N_BOOT, 0.975);
        const double eps = 1e-9; /* exact expectations: equal verifiers differ by rounding only */
        printf("| %s | %+.4f | [%+.4f, %+.4f] | %s |\n", vn[i], mean, lo, hi,
               lo >= -eps ? "holds" : hi < -eps ? "fails" : "inconclusive");
    }
    free(v);
    return ARB_OK;
}

typedef struct depth_tab {   /* what the per-depth table and figure show */
    int D, K, n_roots;
    const double *l1, (*acc)[MAXD];
    const long *cnt;
} depth_tab;

static const char *const ot_names[ARB_OT_COUNT] = {"NSS", "NaiveTree", "SpecInfer", "SpecTr", "Khisti(bound)"};

/* One line per depth that has nodes: depth, nodes, mean L1, mean acceptance per
   verifier; as Markdown table cells, or as the space-separated columns of the .dat. */
static void put_depth_rows(FILE *f, const depth_tab *t, bool md)
{
    for (int d = 0; d < t->D; d++) {
        if (!t->cnt[d])
            continue;
        fprintf(f, md ? "| %d | %ld | %.4f |" : "%d %ld %.6f", d, t->cnt[d], t->l1[d] / t->cnt[d]);
        for (int mth = 0; mth < ARB_OT_COUNT; mth++)
            fprintf(f, md ? " %.4f |" : " %.6f", t->acc[mth][d] / t->cnt[d]);
        fputc('\n', f);
    }
}

static void print_depth_table(FILE *f, const depth_tab *t)
{
    fprintf(f, "| depth | nodes | L1(p,q) |");
    for (int mth = 0; mth < ARB_OT_COUNT; mth++)
        fprintf(f, " %s |", ot_names[mth]);
    fprintf(f, "\n|---|---|---|");
    for (int mth = 0; mth < ARB_OT_COUNT; mth++)
        fprintf(f, "---|");
    fprintf(f, "\n");
    put_depth_rows(f, t, true);
}

/* DIR/dte_depth.{dat,md,gp} and, through gnuplot, .png/.svg (DTE Fig. 1). */
static int write_plot(const char *dir, const char *templates, const depth_tab *t, const char *head,
                      const char *setting, arb_err *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", dir, strerror(errno));
    char path[4200];
    snprintf(path, sizeof path, "%s/dte_depth.dat", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", path, strerror(errno));
    fprintf(f, "%sdepth nodes L1 NSS NaiveTree SpecInfer SpecTr Khisti-LB\n", head);
    put_depth_rows(f, t, false);
    if (fclose(f) != 0)
        return ARB_ERR(err, ARB_E_IO, "%s: write error", path);
    snprintf(path, sizeof path, "%s/dte_depth.md", dir);
    if (!(f = fopen(path, "w")))
        return ARB_ERR(err, ARB_E_IO, "%s: %s", path, strerror(errno));
    fputs(head, f);
    fputc('\n', f);
    print_depth_table(f, t);
    if (fclose(f) != 0)
        return ARB_ERR(err, ARB_E_IO, "%s: write error", path);
    char vars[1024];
    snprintf(vars, sizeof vars, "ncols = %d\ntitle_text = 'Per-depth acceptance rate (n = %d i.i.d. draws) "
             "and L1(p,q): %s, %d roots'\n", 3 + ARB_OT_COUNT, t->K, setting, t->n_roots);
    int rc = arb_plot_script(dir, templates, "dte_depth", vars, 1000, 420, err);
    return rc ? rc : arb_plot_render(dir, "dte_depth", err);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int arb_cmd_dte_depth(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    const char *datasets = "math500", *data = NULL, *model = "default", *plot_dir = NULL, *templates = NULL;
    int limit = 3, max_new = 96, every = 16, D = 6, K = 3, layers = 24, threads = 0;
    double T = 1.0, top_p = 1.0;
    arb_draft_shape shp[MAXSH];
    int n_sh = 0;
    bool be_on = false, shape_ok = true;
    const char *settings = NULL;
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (!strcmp(a, "--dataset") && ok) datasets = v;
        else if (!strcmp(a, "--data") && ok) data = v;
        else if (!strcmp(a, "--model") && ok) model = v;
        else if (!strcmp(a, "--plot") && ok) plot_dir = v;
        else if (!strcmp(a, "--templates") && ok) templates = v;
        else if (!strcmp(a, "--limit") && ok) limit = atoi(v);
        else if (!strcmp(a, "--max-new") && ok) max_new = atoi(v);
        else if (!strcmp(a, "--every") && ok) every = atoi(v);
        else if (!strcmp(a, "--depth") && ok) D = atoi(v);
        else if (!strcmp(a, "--paths") && ok) K = atoi(v);
        else if (!strcmp(a, "--draft-layers") && ok) layers = atoi(v);
        else if (!strcmp(a, "--threads") && ok) threads = atoi(v);
        else if (!strcmp(a, "--temperature") && ok) T = atof(v);
        else if (!strcmp(a, "--top-p") && ok) top_p = atof(v);
        else if (!strcmp(a, "--settings") && ok) settings = v;
        else if (!strcmp(a, "--seed") && ok) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--shape") && ok) { /* K,L,B[;K,L,B...] */
            for (const char *sp = v; sp && *sp && shape_ok; sp = strchr(sp, ';') ? strchr(sp, ';') + 1 : NULL) {
                arb_draft_shape x;
                shape_ok = n_sh < MAXSH && sscanf(sp, "%d,%d,%d", &x.k, &x.l, &x.b) == 3 && x.k >= 1 &&
                           x.l >= 0 && x.b >= 0 && x.k * x.b + x.l >= 1 && arb_draft_shape_nodes(x) <= 64;
                if (shape_ok)
                    shp[n_sh++] = x;
            }
            be_on = true;
        }
        else {
            fprintf(stderr, "arbor dte-depth: unknown or incomplete option '%s'\n%s", a, usage);
            return 2;
        }
        i++;
    }
    double set_t[MAXSH] = {T}, set_p[MAXSH] = {top_p};
    int n_set = 1;
    bool set_ok = true;
    if (settings) { /* T[:P];T[:P]... */
        n_set = 0;
        for (const char *sp = settings; sp && *sp && set_ok; sp = strchr(sp, ';') ? strchr(sp, ';') + 1 : NULL) {
            set_p[n_set] = 1;
            int got = n_set < MAXSH ? sscanf(sp, "%lf:%lf", &set_t[n_set], &set_p[n_set]) : 0;
            set_ok = got >= 1 && set_t[n_set] > 0 && set_p[n_set] > 0 && set_p[n_set] <= 1;
            n_set += set_ok;
        }
        set_ok &= n_set > 0;
    } else {
        set_t[0] = T, set_p[0] = top_p;
    }
    if (!set_ok) {
        fprintf(stderr, "arbor dte-depth: --settings '%s': expected T[:P][;T[:P]...] with T > 0, P in (0, 1] "
                        "(at most %d)\n", settings, MAXSH);
        return 2;
    }
    if (limit < 1 || max_new < 1 || every < 1 || D < 1 || D > MAXD || K < 1 || K > 8 || !(T > 0) ||
        !(top_p > 0 && top_p <= 1) || !shape_ok) {
        fprintf(stderr, "arbor dte-depth: need limit, max-new, every >= 1, depth in 1..%d, paths in 1..8, "
                        "temperature > 0, top-p in (0, 1], shapes K,L,B with 1 + L + K*B <= 64 (at most %d)\n", MAXD, MAXSH);
        return 2;
    }
    arb_err err = {0};
    char dir[4096];
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_draft_model *dm = NULL;
    arb_otan *an = NULL;
    int rc = arb_dataset_dir(data, dir, sizeof dir, &err);
    if (!rc)
        rc = arb_gen_load(model, "cpu", threads, 4096, &m, &c, &err);
    arb_model_info mi = {0};
    if (!rc) {
        arb_model_get_info(m, &mi);
        arb_draft_model_opts o = arb_draft_model_default_opts();
        o.self_layers = layers;
        rc = arb_draft_model_new(m, &o, 64, &dm, &err);
    }
    const int V = mi.n_vocab;
    arb_verifier_opts vo = arb_verifier_default_opts();
    vo.V = V > 0 ? V : 1;
    vo.n_nodes_max = 64;
    if (!rc)
        rc = arb_otan_new(&vo, &an, &err);
    double *q = malloc(sizeof(double) * 64 * (size_t)vo.V);
    double *p = malloc(sizeof(double) * 64 * (size_t)vo.V);
    float *lg = malloc(sizeof(float) * 64 * (size_t)vo.V);
    const char *vn[N_VF]; /* the sampling verifiers in registry order (Traversal is its last row) */
    int n_vn = 0;
    for (int i = 0; i < arb_verifier_count(); i++)
        if (arb_verifier_at(i)->sampling && !arb_verifier_at(i)->approximate && n_vn < N_VF)
            vn[n_vn++] = arb_verifier_at(i)->name;
    if (!rc && (n_vn != N_VF || strcmp(vn[N_VF - 1], "traversal")))
        rc = ARB_ERR(&err, ARB_E_INVAL, "dte-depth: expected %d sampling verifiers ending with traversal", N_VF);
    be_gaps gaps = {0};
    arb_verifier *vf[8] = {0};
    double sum_be[MAXSH][8] = {{0}}, sum_us[MAXSH] = {0};
    for (int i = 0; !rc && be_on && i < 8; i++)
        rc = arb_verifier_new(vn[i], &vo, &vf[i], &err);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)vo.V);
    int32_t *S = malloc(sizeof(int32_t) * 8192);
    arb_tree t;
    memset(&t, 0, sizeof t);
    if (!rc)
        rc = arb_tree_init(&t, 64, &err);
    if (!rc && (!q || !p || !lg || !idx || !S))
        rc = ARB_ERR(&err, ARB_E_NOMEM, "dte-depth: out of memory");
    double sum_l1[MAXD] = {0}, sum_acc[ARB_OT_COUNT][MAXD] = {{0}};
    long cnt[MAXD] = {0};
    int n_roots = 0;
    arb_sampling sm = {.temperature = T, .top_k = 0, .top_p = top_p};
    char names[512], set_text[512] = "";
    for (int ss = 0; ss < n_set; ss++) {
        size_t at = strlen(set_text);
        snprintf(set_text + at, sizeof set_text - at, "%sT %.2g", ss ? "; " : "", set_t[ss]);
        if (set_p[ss] < 1 && strlen(set_text) < sizeof set_text)
            snprintf(set_text + strlen(set_text), sizeof set_text - strlen(set_text), " top-p %.2g", set_p[ss]);
    }
    for (int ss = 0; !rc && ss < n_set; ss++) { /* settings pooled into the same sums */
        sm.temperature = set_t[ss], sm.top_p = set_p[ss];
        snprintf(names, sizeof names, "%s", datasets);
        for (char *tokp = NULL, *name = strtok_r(names, ",", &tokp); !rc && name; name = strtok_r(NULL, ",", &tokp)) {
            arb_dataset *ds = NULL;
            if ((rc = arb_dataset_open(dir, name, NULL, &ds, &err)))
                break;
            for (size_t pi = 0; !rc && pi < arb_dataset_count(ds) && pi < (size_t)limit; pi++) {
                int32_t *ids;
                int n;
                if ((rc = arb_gen_prompt(m, arb_dataset_get(ds, pi)->turns[0], true, &ids, &n, &err)))
                    break;
                if (n + max_new + 2 > 4000) {
                    free(ids);
                    continue;
                }
                memcpy(S, ids, sizeof(int32_t) * (size_t)n);
                free(ids);
                arb_ctx_truncate(c, 0);
                arb_draft_model_reset(dm);
                /* prefill all but the last prompt token; the last one is the first anchor */
                int32_t *par = malloc(sizeof(int32_t) * (size_t)n), *path = malloc(sizeof(int32_t) * (size_t)n);
                for (int i = 0; i < n; i++)
                    par[i] = i - 1, path[i] = i;
                for (int at = 0; !rc && at < n - 1; at += 64) {
                    int nb = n - 1 - at < 64 ? n - 1 - at : 64;
                    rc = arb_eval(c, S + at, par, nb, lg, NULL, &err); /* lg holds 64 rows */
                    if (!rc)
                        rc = arb_commit(c, path, nb, &err);
                }
                free(par);
                free(path);
                int n_S = n;
                for (int g = 0; !rc && g < max_new; g++) {
                    bool root = g % every == every - 1;
                    double be_root[MAXSH][N_VF];
                    for (int si = 0; root && si < n_sh && !rc; si++) {
                        /* one (k, l, b) tree, one target pass, 8 exact expectations */
                        arb_rng r;
                        arb_rng_init(&r, seed, (uint32_t)pi, (uint32_t)(g * MAXSH + si), ARB_STREAM_AUX);
                        arb_tree_reset(&t, S[n_S - 1]);
                        double t0 = now_us();
                        if ((rc = arb_draft_model_propose(dm, S, n_S, shp[si], &sm, &r, &t, q, NULL, &err)))
                            break;
                        arb_tree_finalize(&t);
                        if ((rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, &err)))
                            break;
                        sum_us[si] += now_us() - t0; /* draft + target pass (verification excluded) */
                        for (int v = 0; v < t.n; v++)
                            arb_sample_process(lg + (size_t)v * V, V, &sm, p + (size_t)v * V, idx);
                        arb_verify_in in = {.tree = &t, .p = p, .q = q, .V = V, .rng = &r};
                        for (int i = 0; i < 8; i++) {
                            double e = 0;
                            arb_otan_expected_accepted(an, vf[i], &in, &e);
                            sum_be[si][i] += 1 + e;
                            be_root[si][i] = 1 + e;
                        }
                    }
                    if (!rc && root && be_on && n_sh > 0)
                        rc = gaps_push(&gaps, be_root, n_sh, &err);
                    arb_tree_reset(&t, S[n_S - 1]);
                    if (root) {
                        arb_rng r;
                        arb_rng_init(&r, seed, (uint32_t)pi, (uint32_t)g, ARB_STREAM_DRAFT);
                        arb_draft_shape sh = {1, 0, D};
                        if ((rc = arb_draft_model_propose(dm, S, n_S, sh, &sm, &r, &t, q, NULL, &err)))
                            break;
                    }
                    arb_tree_finalize(&t);
                    if ((rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, &err)))
                        break;
                    for (int v = 0; v < t.n; v++)
                        arb_sample_process(lg + (size_t)v * V, V, &sm, p + (size_t)v * V, idx);
                    for (int v = 0; root && v + 1 < t.n; v++) { /* node v at depth v has one child */
                        const double *pv = p + (size_t)v * V, *qv = q + (size_t)v * V;
                        double l1 = 0;
                        for (int x = 0; x < V; x++)
                            l1 += pv[x] > qv[x] ? pv[x] - qv[x] : qv[x] - pv[x];
                        sum_l1[v] += l1;
                        for (int mth = 0; mth < ARB_OT_COUNT; mth++)
                            sum_acc[mth][v] += arb_otan_accept_rate(an, (arb_ot_method)mth, pv, qv, K, V);
                        cnt[v]++;
                    }
                    n_roots += root;
                    int32_t zero = 0;
                    if ((rc = arb_commit(c, &zero, 1, &err)))
                        break;
                    arb_rng sr;
                    arb_rng_init(&sr, seed, (uint32_t)pi, (uint32_t)g, ARB_STREAM_SAMPLE);
                    S[n_S++] = arb_sample_w(&sr, p, V);
                    if (arb_token_is_eog(m, S[n_S - 1]))
                        break;
                }
            }
            arb_dataset_free(ds);
        }
    }
    if (!rc) {
        char head[1024];
        snprintf(head, sizeof head,
                 "# DTE Fig. 1: per-depth OTLP acceptance rate (n = %d i.i.d. draws) and L1(p,q)\n"
                 "# target %s, self-draft %d/%d layers, %s, datasets %s, %d roots\n",
                 K, mi.name, layers, mi.n_layer, set_text, datasets, n_roots);
        depth_tab tab = {D, K, n_roots, sum_l1, sum_acc, cnt};
        printf("%s\n", head);
        print_depth_table(stdout, &tab);
        char setting[600];
        snprintf(setting, sizeof setting, "%s, %s", set_text, datasets);
        for (char *sc = setting; *sc; sc++) /* a gnuplot string in single quotes */
            *sc = *sc == '\'' ? ' ' : *sc;
        if (plot_dir && (rc = write_plot(plot_dir, templates, &tab, head, setting, &err)))
            fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
        else if (plot_dir)
            fprintf(stderr, "arbor dte-depth: figure in %s/dte_depth.{png,svg}\n", plot_dir);
        if (be_on && n_roots > 0) {
            printf("\n# expected block efficiency 1 + E[accepted | tree] (%d trees per shape; naive, bv: path 1)\n"
                   "# and tokens/s = BE / (draft + target time of the tree) on this machine\n\n| shape (k,l,b) | ms |",
                   n_roots);
            for (int i = 0; i < 8; i++)
                printf(" %s |", vn[i]);
            printf("\n|---|---|");
            for (int i = 0; i < 8; i++)
                printf("---|");
            printf("\n");
            for (int si = 0; si < n_sh; si++) {
                printf("| (%d,%d,%d) | %.0f |", shp[si].k, shp[si].l, shp[si].b, sum_us[si] / n_roots / 1e3);
                for (int i = 0; i < 8; i++)
                    printf(" %.4f |", sum_be[si][i] / n_roots);
                printf("\n");
            }
            printf("\n| verifier | best BE | at (k,l,b) | best tok/s | at (k,l,b) |\n|---|---|---|---|---|\n");
            for (int i = 0; i < 8; i++) {
                int bb = 0, bt = 0;
                for (int si = 1; si < n_sh; si++) {
                    if (sum_be[si][i] > sum_be[bb][i])
                        bb = si;
                    if (sum_be[si][i] / sum_us[si] > sum_be[bt][i] / sum_us[bt])
                        bt = si;
                }
                printf("| %s | %.4f | (%d,%d,%d) | %.2f | (%d,%d,%d) |\n", vn[i], sum_be[bb][i] / n_roots, shp[bb].k,
                       shp[bb].l, shp[bb].b, sum_be[bt][i] / sum_us[bt] * 1e6, shp[bt].k, shp[bt].l, shp[bt].b);
            }
            if (gaps.n > 0 && (rc = print_gaps(&gaps, vn, &err)))
                fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
        }
    } else {
        fprintf(stderr, "arbor dte-depth: %s\n", err.msg);
    }
    arb_tree_release(&t);
    free(q); free(p); free(lg); free(idx); free(S); free(gaps.gap);
    arb_otan_free(an);
    for (int i = 0; i < 8; i++)
        arb_verifier_free(vf[i]);
    arb_draft_model_free(dm);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc ? 1 : 0;
}
