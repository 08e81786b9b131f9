/* dte_depth.c — the DTE Fig. 1 experiment (dte_depth.h). For each prompt a target trajectory
 * is sampled (T, top-p); every `every` tokens the draft model drafts one path of `depth`
 * tokens from the current root, one target pass scores it, and at each depth d the rates of
 * the OT solvers for n = `paths` i.i.d. draws and ||p_v - q_v||_1 are averaged. With shapes,
 * each root also gets one (k, l, b) delayed tree per shape and every sampling verifier's exact
 * expected block efficiency on it (DTE Eq. 3).
 */
#include "dte_depth.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dataset.h"
#include "genutil.h"
#include "plot.h"
#include "resample.h"
#include "sample.h"
#include "verifiers/otanalysis.h"
#include "verifiers/verifier.h"

#define N_VF 8      /* verifiers compared; Traversal is the last */
#define N_BOOT 2000 /* resamples of roots for the Traversal-gap intervals */
#define N_NODES 64  /* tree capacity: a path of depth <= 16, a shape of <= 64 nodes */
#define N_CTX 4096  /* KV capacity; prompts with n + max_new + 2 > 4000 are skipped */
#define S_CAP 8192  /* the trajectory: prompt + generated tokens */

/* Per root: Traversal's exact block efficiency minus each verifier's, averaged over the shapes
   (the DTE claim "Traversal >= every other verifier" on the same trees), grown by doubling. */
typedef struct be_gaps {
    double *gap; /* [root][N_VF] */
    int n, cap;
} be_gaps;

static int gaps_push(be_gaps *g, const double be[ARB_DTE_MAX_SHAPES][N_VF], int n_sh, arb_err *err)
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
static int print_gaps(FILE *f, const be_gaps *g, const char *const *vn, arb_err *err)
{
    double *v = malloc(sizeof(double) * N_BOOT);
    if (!v)
        return ARB_ERR(err, ARB_E_NOMEM, "dte-depth: out of memory");
    fprintf(f, "\n# Traversal's expected block efficiency minus each verifier's on the same trees (mean over\n"
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
        /* one root: every resample is that root, so the "interval" is a point, no evidence */
        fprintf(f, "| %s | %+.4f | [%+.4f, %+.4f] | %s |\n", vn[i], mean, lo, hi,
               g->n < 2 ? "inconclusive (one root)" : lo >= -eps ? "holds" : hi < -eps ? "fails" : "inconclusive");
    }
    free(v);
    return ARB_OK;
}

typedef struct depth_tab {   /* what the per-depth table and figure show */
    int D, K, n_roots;
    const double *l1, (*acc)[ARB_DTE_MAX_DEPTH];
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


struct arb_dte_depth {
    arb_dte_depth_opts o;
    arb_model *m;
    arb_ctx *c;
    arb_draft_model *dm;
    arb_otan *an;
    arb_model_info mi;
    int V;                    /* vocabulary size */
    const char *vn[N_VF];     /* the sampling verifiers in registry order (Traversal last) */
    arb_verifier *vf[N_VF];   /* created only with shapes */
    double *q, *p;            /* [N_NODES][V] draft and target distributions */
    float *lg;                /* [N_NODES][V] target logits */
    int32_t *idx;             /* [V] arb_sample_process scratch */
    int32_t *S;               /* [S_CAP] the trajectory */
    int32_t *par, *path;      /* [N_CTX] the prefill's parents and commit path */
    arb_tree t;
    arb_sampling sm;          /* the setting being run */
    char set_text[512];       /* the settings, as the header shows them */
    /* sums */
    double sum_l1[ARB_DTE_MAX_DEPTH], sum_acc[ARB_OT_COUNT][ARB_DTE_MAX_DEPTH];
    long cnt[ARB_DTE_MAX_DEPTH];
    double sum_be[ARB_DTE_MAX_SHAPES][N_VF], sum_us[ARB_DTE_MAX_SHAPES];
    int n_roots;
    be_gaps gaps;
};

arb_dte_depth_opts arb_dte_depth_default_opts(void)
{
    return (arb_dte_depth_opts){.datasets = "math500", .model = "default", .limit = 3, .max_new = 96,
                                .every = 16, .depth = 6, .paths = 3, .draft_layers = 24,
                                .temperature = {1.0}, .top_p = {1.0}, .n_settings = 1};
}

/* The next ';'-separated item after sp, or NULL. */
static const char *next_item(const char *sp)
{
    const char *semi = strchr(sp, ';');
    return semi ? semi + 1 : NULL;
}

int arb_dte_depth_parse_shapes(const char *text, arb_dte_depth_opts *o, arb_err *err)
{
    o->n_shapes = 0;
    for (const char *sp = text; sp && *sp; sp = next_item(sp)) {
        arb_draft_shape x;
        if (o->n_shapes == ARB_DTE_MAX_SHAPES || sscanf(sp, "%d,%d,%d", &x.k, &x.l, &x.b) != 3 || x.k < 1 ||
            x.l < 0 || x.b < 0 || x.k * x.b + x.l < 1 || arb_draft_shape_nodes(x) > N_NODES)
            return ARB_ERR(err, ARB_E_INVAL, "--shape '%s': expected K,L,B[;K,L,B...] with 1 + L + K*B <= %d "
                           "(at most %d)", text, N_NODES, ARB_DTE_MAX_SHAPES);
        o->shapes[o->n_shapes++] = x;
    }
    if (o->n_shapes == 0)
        return ARB_ERR(err, ARB_E_INVAL, "--shape '%s': no shape given", text);
    return ARB_OK;
}

int arb_dte_depth_parse_settings(const char *text, arb_dte_depth_opts *o, arb_err *err)
{
    int n = 0;
    for (const char *sp = text; sp && *sp; sp = next_item(sp)) {
        double t = 0, p = 1;
        if (n == ARB_DTE_MAX_SETTINGS || sscanf(sp, "%lf:%lf", &t, &p) < 1 || !(t > 0) || !(p > 0 && p <= 1))
            return ARB_ERR(err, ARB_E_INVAL, "--settings '%s': expected T[:P][;T[:P]...] with T > 0, P in (0, 1] "
                           "(at most %d)", text, ARB_DTE_MAX_SETTINGS);
        o->temperature[n] = t, o->top_p[n] = p, n++;
    }
    if (n == 0)
        return ARB_ERR(err, ARB_E_INVAL, "--settings '%s': no setting given", text);
    o->n_settings = n;
    return ARB_OK;
}

/* "T 0.6; T 1 top-p 0.9": the settings as the header and the figure title show them. */
static void settings_text(const arb_dte_depth_opts *o, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int ss = 0; ss < o->n_settings; ss++) {
        size_t at = strlen(buf);
        snprintf(buf + at, cap - at, "%sT %.2g", ss ? "; " : "", o->temperature[ss]);
        if (o->top_p[ss] < 1 && strlen(buf) < cap)
            snprintf(buf + strlen(buf), cap - strlen(buf), " top-p %.2g", o->top_p[ss]);
    }
}

/* The verifier names, and with shapes one verifier object each. */
static int verifiers_new(arb_dte_depth *d, const arb_verifier_opts *vo, arb_err *err)
{
    int n_vn = 0;
    for (int i = 0; arb_verifier_at(i); i++)
        if (arb_verifier_at(i)->sampling && !arb_verifier_at(i)->approximate && n_vn < N_VF)
            d->vn[n_vn++] = arb_verifier_at(i)->name;
    if (n_vn != N_VF || strcmp(d->vn[N_VF - 1], "traversal"))
        return ARB_ERR(err, ARB_E_INVAL, "dte-depth: expected %d sampling verifiers ending with traversal", N_VF);
    int rc = ARB_OK;
    for (int i = 0; !rc && d->o.n_shapes > 0 && i < N_VF; i++)
        rc = arb_verifier_new(d->vn[i], vo, &d->vf[i], err);
    return rc;
}

int arb_dte_depth_new(const arb_dte_depth_opts *o, arb_dte_depth **out, arb_err *err)
{
    *out = NULL;
    arb_dte_depth *d = calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "dte-depth: out of memory");
    d->o = *o;
    settings_text(o, d->set_text, sizeof d->set_text);
    int rc = arb_gen_load(o->model, "cpu", o->threads, N_CTX, &d->m, &d->c, err);
    if (!rc) {
        arb_model_get_info(d->m, &d->mi);
        arb_draft_model_opts dmo = arb_draft_model_default_opts();
        dmo.self_layers = o->draft_layers;
        rc = arb_draft_model_new(d->m, &dmo, N_NODES, &d->dm, err);
    }
    d->V = d->mi.n_vocab > 0 ? d->mi.n_vocab : 1;
    arb_verifier_opts vo = arb_verifier_default_opts();
    vo.V = d->V;
    vo.n_nodes_max = N_NODES;
    if (!rc)
        rc = arb_otan_new(&vo, &d->an, err);
    if (!rc)
        rc = verifiers_new(d, &vo, err);
    if (!rc)
        rc = arb_tree_init(&d->t, N_NODES, err);
    const size_t nv = (size_t)N_NODES * (size_t)d->V;
    if (!rc && (!(d->q = malloc(sizeof(double) * nv)) || !(d->p = malloc(sizeof(double) * nv)) ||
                !(d->lg = malloc(sizeof(float) * nv)) || !(d->idx = malloc(sizeof(int32_t) * (size_t)d->V)) ||
                !(d->S = malloc(sizeof(int32_t) * S_CAP)) || !(d->par = malloc(sizeof(int32_t) * N_CTX)) ||
                !(d->path = malloc(sizeof(int32_t) * N_CTX))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "dte-depth: out of memory");
    if (rc) {
        arb_dte_depth_free(d);
        return rc;
    }
    *out = d;
    return ARB_OK;
}

void arb_dte_depth_free(arb_dte_depth *d)
{
    if (!d)
        return;
    arb_tree_release(&d->t);
    free(d->q), free(d->p), free(d->lg), free(d->idx), free(d->S), free(d->par), free(d->path);
    free(d->gaps.gap);
    arb_otan_free(d->an);
    for (int i = 0; i < N_VF; i++)
        arb_verifier_free(d->vf[i]);
    arb_draft_model_free(d->dm);
    arb_ctx_free(d->c);
    arb_model_free(d->m);
    free(d);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The target distributions p of the tree's nodes, from one target pass. */
static int score_tree(arb_dte_depth *d, arb_err *err)
{
    int rc = arb_eval(d->c, d->t.tok, d->t.parent, d->t.n, d->lg, NULL, err);
    for (int v = 0; !rc && v < d->t.n; v++)
        arb_sample_process(d->lg + (size_t)v * d->V, d->V, &d->sm, d->p + (size_t)v * d->V, d->idx);
    return rc;
}

/* At a root: one (k, l, b) tree per shape, one target pass each, every verifier's exact
   1 + E[accepted | tree]; the root's Traversal gaps appended. */
static int be_trees(arb_dte_depth *d, size_t pi, int g, int n_S, arb_err *err)
{
    double be_root[ARB_DTE_MAX_SHAPES][N_VF];
    int rc = ARB_OK;
    for (int si = 0; si < d->o.n_shapes && !rc; si++) {
        arb_rng r;
        arb_rng_init(&r, d->o.seed, (uint32_t)pi, (uint32_t)(g * ARB_DTE_MAX_SHAPES + si), ARB_STREAM_AUX);
        arb_tree_reset(&d->t, d->S[n_S - 1]);
        const double t0 = now_us();
        if ((rc = arb_draft_model_propose(d->dm, d->S, n_S, d->o.shapes[si], &d->sm, &r, &d->t, d->q, NULL, err)))
            break;
        arb_tree_finalize(&d->t);
        if ((rc = arb_eval(d->c, d->t.tok, d->t.parent, d->t.n, d->lg, NULL, err)))
            break;
        d->sum_us[si] += now_us() - t0; /* draft + target pass (verification excluded) */
        for (int v = 0; v < d->t.n; v++)
            arb_sample_process(d->lg + (size_t)v * d->V, d->V, &d->sm, d->p + (size_t)v * d->V, d->idx);
        arb_verify_in in = {.tree = &d->t, .p = d->p, .q = d->q, .V = d->V, .rng = &r};
        for (int i = 0; i < N_VF; i++) {
            double e = 0;
            arb_otan_expected_accepted(d->an, d->vf[i], &in, &e);
            d->sum_be[si][i] += 1 + e;
            be_root[si][i] = 1 + e;
        }
    }
    if (!rc && d->o.n_shapes > 0)
        rc = gaps_push(&d->gaps, be_root, d->o.n_shapes, err);
    return rc;
}

/* The per-depth sums of one drafted path (node v at depth v has one child). */
static void accumulate_path(arb_dte_depth *d)
{
    const int V = d->V;
    for (int v = 0; v + 1 < d->t.n; v++) {
        const double *pv = d->p + (size_t)v * V, *qv = d->q + (size_t)v * V;
        double l1 = 0;
        for (int x = 0; x < V; x++)
            l1 += pv[x] > qv[x] ? pv[x] - qv[x] : qv[x] - pv[x];
        d->sum_l1[v] += l1;
        for (int mth = 0; mth < ARB_OT_COUNT; mth++)
            d->sum_acc[mth][v] += arb_otan_accept_rate(d->an, (arb_ot_method)mth, pv, qv, d->o.paths, V);
        d->cnt[v]++;
    }
}

/* One trajectory token: at a root the shapes' trees and a drafted path of `depth` tokens,
   else the root node alone; one target pass; the next token sampled from the root's p and
   appended to S. *eog is set at an end-of-generation token. */
static int step(arb_dte_depth *d, size_t pi, int g, int *n_S, bool *eog, arb_err *err)
{
    const bool root = g % d->o.every == d->o.every - 1;
    int rc = root && d->o.n_shapes > 0 ? be_trees(d, pi, g, *n_S, err) : ARB_OK;
    if (rc)
        return rc;
    arb_tree_reset(&d->t, d->S[*n_S - 1]);
    if (root) {
        arb_rng r;
        arb_rng_init(&r, d->o.seed, (uint32_t)pi, (uint32_t)g, ARB_STREAM_DRAFT);
        const arb_draft_shape sh = {1, 0, d->o.depth};
        if ((rc = arb_draft_model_propose(d->dm, d->S, *n_S, sh, &d->sm, &r, &d->t, d->q, NULL, err)))
            return rc;
    }
    arb_tree_finalize(&d->t);
    if ((rc = score_tree(d, err)))
        return rc;
    if (root)
        accumulate_path(d);
    d->n_roots += root;
    int32_t zero = 0;
    if ((rc = arb_commit(d->c, &zero, 1, err)))
        return rc;
    arb_rng sr;
    arb_rng_init(&sr, d->o.seed, (uint32_t)pi, (uint32_t)g, ARB_STREAM_SAMPLE);
    d->S[(*n_S)++] = arb_sample_w(&sr, d->p, d->V);
    *eog = arb_token_is_eog(d->m, d->S[*n_S - 1]);
    return ARB_OK;
}

/* Prefill all but the last prompt token (the last one is the first root's anchor), 64 at a time. */
static int prefill(arb_dte_depth *d, int n, arb_err *err)
{
    arb_ctx_truncate(d->c, 0);
    arb_draft_model_reset(d->dm);
    for (int i = 0; i < n; i++)
        d->par[i] = i - 1, d->path[i] = i;
    int rc = ARB_OK;
    for (int at = 0; !rc && at < n - 1; at += N_NODES) {
        const int nb = n - 1 - at < N_NODES ? n - 1 - at : N_NODES;
        rc = arb_eval(d->c, d->S + at, d->par, nb, d->lg, NULL, err); /* lg holds N_NODES rows */
        if (!rc)
            rc = arb_commit(d->c, d->path, nb, err);
    }
    return rc;
}

/* One prompt's trajectory (skipped when it would not fit the context). */
static int run_prompt(arb_dte_depth *d, const char *turn, size_t pi, arb_err *err)
{
    int32_t *ids;
    int n;
    int rc = arb_gen_prompt(d->m, turn, true, &ids, &n, err);
    if (rc)
        return rc;
    if (n + d->o.max_new + 2 > N_CTX - 96) {
        free(ids);
        return ARB_OK;
    }
    memcpy(d->S, ids, sizeof(int32_t) * (size_t)n);
    free(ids);
    int n_S = n;
    bool eog = false;
    rc = prefill(d, n, err);
    for (int g = 0; !rc && !eog && g < d->o.max_new; g++)
        rc = step(d, pi, g, &n_S, &eog, err);
    return rc;
}

int arb_dte_depth_run(arb_dte_depth *d, arb_err *err)
{
    char dir[4096], names[512];
    int rc = arb_dataset_dir(d->o.data_dir, dir, sizeof dir, err);
    for (int ss = 0; !rc && ss < d->o.n_settings; ss++) { /* settings pooled into the same sums */
        d->sm = (arb_sampling){.temperature = d->o.temperature[ss], .top_k = 0, .top_p = d->o.top_p[ss]};
        snprintf(names, sizeof names, "%s", d->o.datasets);
        for (char *tokp = NULL, *name = strtok_r(names, ",", &tokp); !rc && name; name = strtok_r(NULL, ",", &tokp)) {
            arb_dataset *ds = NULL;
            if ((rc = arb_dataset_open(dir, name, NULL, &ds, err)))
                break;
            for (size_t pi = 0; !rc && pi < arb_dataset_count(ds) && pi < (size_t)d->o.limit; pi++)
                rc = run_prompt(d, arb_dataset_get(ds, pi)->turns[0], pi, err);
            arb_dataset_free(ds);
        }
    }
    return rc;
}

static void header(const arb_dte_depth *d, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "# DTE Fig. 1: per-depth OTLP acceptance rate (n = %d i.i.d. draws) and L1(p,q)\n"
             "# target %s, self-draft %d/%d layers, %s, datasets %s, %d roots\n",
             d->o.paths, d->mi.name, d->o.draft_layers, d->mi.n_layer, d->set_text, d->o.datasets, d->n_roots);
}

static depth_tab table_of(const arb_dte_depth *d)
{
    return (depth_tab){d->o.depth, d->o.paths, d->n_roots, d->sum_l1, d->sum_acc, d->cnt};
}

void arb_dte_depth_print_depth(const arb_dte_depth *d, FILE *f)
{
    char head[1024];
    header(d, head, sizeof head);
    const depth_tab tab = table_of(d);
    fprintf(f, "%s\n", head);
    print_depth_table(f, &tab);
}

int arb_dte_depth_write_plot(const arb_dte_depth *d, const char *dir, const char *templates, arb_err *err)
{
    char head[1024], setting[600];
    header(d, head, sizeof head);
    snprintf(setting, sizeof setting, "%s, %s", d->set_text, d->o.datasets);
    for (char *sc = setting; *sc; sc++) /* a gnuplot string in single quotes */
        *sc = *sc == '\'' ? ' ' : *sc;
    const depth_tab tab = table_of(d);
    return write_plot(dir, templates, &tab, head, setting, err);
}

int arb_dte_depth_print_be(const arb_dte_depth *d, FILE *f, arb_err *err)
{
    const int n_sh = d->o.n_shapes, nr = d->n_roots;
    const arb_draft_shape *shp = d->o.shapes;
    if (n_sh == 0 || nr == 0)
        return ARB_OK;
    fprintf(f, "\n# expected block efficiency 1 + E[accepted | tree] (%d trees per shape; naive, bv: path 1)\n"
               "# and tokens/s = BE / (draft + target time of the tree) on this machine\n\n| shape (k,l,b) | ms |", nr);
    for (int i = 0; i < N_VF; i++)
        fprintf(f, " %s |", d->vn[i]);
    fprintf(f, "\n|---|---|");
    for (int i = 0; i < N_VF; i++)
        fprintf(f, "---|");
    fprintf(f, "\n");
    for (int si = 0; si < n_sh; si++) {
        fprintf(f, "| (%d,%d,%d) | %.0f |", shp[si].k, shp[si].l, shp[si].b, d->sum_us[si] / nr / 1e3);
        for (int i = 0; i < N_VF; i++)
            fprintf(f, " %.4f |", d->sum_be[si][i] / nr);
        fprintf(f, "\n");
    }
    fprintf(f, "\n| verifier | best BE | at (k,l,b) | best tok/s | at (k,l,b) |\n|---|---|---|---|---|\n");
    for (int i = 0; i < N_VF; i++) {
        int bb = 0, bt = 0;
        for (int si = 1; si < n_sh; si++) {
            if (d->sum_be[si][i] > d->sum_be[bb][i])
                bb = si;
            if (d->sum_be[si][i] / d->sum_us[si] > d->sum_be[bt][i] / d->sum_us[bt])
                bt = si;
        }
        fprintf(f, "| %s | %.4f | (%d,%d,%d) | %.2f | (%d,%d,%d) |\n", d->vn[i], d->sum_be[bb][i] / nr, shp[bb].k,
                shp[bb].l, shp[bb].b, d->sum_be[bt][i] / d->sum_us[bt] * 1e6, shp[bt].k, shp[bt].l, shp[bt].b);
    }
    return d->gaps.n > 0 ? print_gaps(f, &d->gaps, d->vn, err) : ARB_OK;
}
