/* report_cost.c — predicted beside measured speedup (part of the report module, table
 * "cost"; the model is costmodel.h).
 *
 * For each greedy speculative run with an AR sibling, the eval cost t(n, L) is fitted on
 * the step rows of every *other* run in the database (leave-one-run-out: the run's own
 * timings never enter its prediction; the AR runs' one-node steps anchor t(1, L)), and
 *     predicted speedup = Σ_prompts [prefill_AR + Σ_steps Σ_{j < committed_s} t̂(1, L_s + j)]
 *                       / Σ_prompts [prefill + Σ_steps (t̂(n_s, L_s) + harness_s)]
 * i.e. what AR would cost over the method's own step trace, both from the fit. The prefills
 * are not modelled but measured: the method's from its own rows, AR's from the AR sibling's
 * row of the same prompt (a drafter that harvests the prompt's top-K pays the output head on
 * every prompt position, 5-38 % more prefill, which AR does not; the method's own prefill
 * stands in only where the AR run has no row for the prompt). The harness's own work (draft,
 * verify, update, commit) comes from the run's rows.
 * Measured speedup is the paired per-prompt figure of the summary table. With a bench
 * profile (`--profile FILE`, what `arbor bench engine --save-profile` wrote: wide trees
 * timed on their own, no run's steps at all) the same prediction is made from it too, in two
 * more columns: the independent check of the model, and the only prediction a database with
 * a lone method and its AR gets. The GPU columns
 * are projections, not measurements of this run: Σ n_gen / Σ_steps c(n_s) with c(n) the
 * relative cost of an n-node eval (harness, prefill and attention growth ignored), from
 *   - a 7B FP16 target's roofline on an A100-80GB (arb_cost_gpu_rel; A40 and H100 give the
 *     same c = 1 up to 215 and 337 nodes, so one column stands for the three), and
 *   - arbor's own CUDA backend as measured on an H100 (results/cost/h100-llama8b-q4_0.json:
 *     `arbor bench engine --backend cuda` tree costs of an 8B Q4_0 model, docs/gpu.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "costmodel.h"
#include "report_int.h"

#define PROJ_PARAMS 7e9 /* the papers' smallest target (Vicuna-7B, Llama-2-7B), FP16 */
#define H100_PROFILE "results/cost/h100-llama8b-q4_0.json"

typedef struct cost_rows {   /* every step of the database, and every prompt */
    int n_steps, n_prompts;
    int *s_run, *s_n, *s_L;  /* run index (into rctx runs; -1 unknown), nodes, context */
    int *s_commit;           /* tokens the step committed (-1: an older database without it) */
    double *s_eval, *s_harn; /* µs */
    int *p_run, *p_prompt, *p_gen;
    double *p_prefill;       /* µs; < 0 unknown (a database without the column's value) */
    char **p_id;             /* prompt_id */
    char **setup;            /* per run (rctx index): "cpu|kernels|threads" of its session; "" unknown */
    int n_runs;
} cost_rows;

static void rows_release(cost_rows *r)
{
    free(r->s_run), free(r->s_n), free(r->s_L), free(r->s_commit), free(r->s_eval), free(r->s_harn);
    free(r->p_run), free(r->p_prompt), free(r->p_gen), free(r->p_prefill);
    for (int k = 0; r->p_id && k < r->n_prompts; k++)
        free(r->p_id[k]);
    free(r->p_id);
    for (int k = 0; r->setup && k < r->n_runs; k++)
        free(r->setup[k]);
    free(r->setup);
    memset(r, 0, sizeof *r);
}

static int run_index(const arb_rctx *c, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (key && !strcmp(c->runs[i].run_key, key))
            return i;
    return -1;
}

static int count(sqlite3 *db, const char *sql, int *n)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        *n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -1;
}

static int load_rows(const arb_rctx *c, cost_rows *r, arb_err *err)
{
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st = NULL;
    int ns = 0, np = 0;
    if (count(c->db, "SELECT COUNT(*) FROM steps WHERE eval_us > 0", &ns) ||
        count(c->db, "SELECT COUNT(*) FROM prompts", &np))
        return ARB_ERR(err, ARB_E_DB, "cost: %s", sqlite3_errmsg(c->db));
    const size_t S = (size_t)(ns ? ns : 1), P = (size_t)(np ? np : 1);
    r->s_run = malloc(S * sizeof(int)), r->s_n = malloc(S * sizeof(int)), r->s_L = malloc(S * sizeof(int));
    r->s_eval = malloc(S * sizeof(double)), r->s_harn = malloc(S * sizeof(double));
    r->s_commit = malloc(S * sizeof(int));
    r->p_run = malloc(P * sizeof(int)), r->p_prompt = malloc(P * sizeof(int)), r->p_gen = malloc(P * sizeof(int));
    r->p_prefill = malloc(P * sizeof(double));
    r->p_id = calloc(P, sizeof(char *));
    if (!r->s_run || !r->s_n || !r->s_L || !r->s_commit || !r->s_eval || !r->s_harn || !r->p_run || !r->p_prompt || !r->p_gen ||
        !r->p_prefill || !r->p_id) {
        rows_release(r);
        return ARB_ERR(err, ARB_E_NOMEM, "cost: out of memory for %d steps", ns);
    }
    static const char q_steps[] =
        "SELECT run_key, n_nodes, l_cache, eval_us,"
        " COALESCE(draft_us,0) + COALESCE(verify_us,0) + COALESCE(update_us,0) + COALESCE(commit_us,0),"
        " COALESCE(committed, -1) FROM steps WHERE eval_us > 0 ORDER BY run_key";
    int rc = sqlite3_prepare_v2(c->db, q_steps, -1, &st, NULL);
    const char *last = NULL;
    char last_key[40] = "";
    int last_i = -1;
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && r->n_steps < ns) {
        last = (const char *)sqlite3_column_text(st, 0);
        if (!last || strcmp(last, last_key)) {
            snprintf(last_key, sizeof last_key, "%s", last ? last : "");
            last_i = run_index(c, last);
        }
        const int k = r->n_steps++;
        r->s_run[k] = last_i;
        r->s_n[k] = sqlite3_column_int(st, 1);
        r->s_L[k] = sqlite3_column_int(st, 2);
        r->s_eval[k] = sqlite3_column_double(st, 3);
        r->s_harn[k] = sqlite3_column_double(st, 4);
        r->s_commit[k] = sqlite3_column_int(st, 5);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(c->db, "SELECT run_key, n_prompt, n_gen, COALESCE(prefill_us, -1), prompt_id FROM prompts",
                                -1, &st, NULL);
    bool oom = false;
    while (rc == SQLITE_OK && !oom && sqlite3_step(st) == SQLITE_ROW && r->n_prompts < np) {
        const int k = r->n_prompts++;
        r->p_run[k] = run_index(c, (const char *)sqlite3_column_text(st, 0));
        r->p_prompt[k] = sqlite3_column_int(st, 1);
        r->p_gen[k] = sqlite3_column_int(st, 2);
        r->p_prefill[k] = sqlite3_column_double(st, 3);
        const char *id = (const char *)sqlite3_column_text(st, 4);
        oom = !(r->p_id[k] = strdup(id ? id : ""));
    }
    sqlite3_finalize(st);
    st = NULL;
    /* Each run's setup (schema v4 sessions; older ones say only the CPU): the fit takes only
       runs of the predicted run's setup, since a database merged from several machines, kernel
       families or thread counts holds several cost surfaces. */
    r->n_runs = c->n;
    if (rc == SQLITE_OK && !oom && !(r->setup = calloc((size_t)(c->n ? c->n : 1), sizeof(char *))))
        oom = true;
    if (rc == SQLITE_OK && !oom)
        rc = sqlite3_prepare_v2(c->db,
                                "SELECT run_key, COALESCE(cpu_model, '') || '|' || COALESCE(kernels, '') || '|' ||"
                                " COALESCE(n_threads, 0) FROM sessions GROUP BY run_key",
                                -1, &st, NULL);
    while (rc == SQLITE_OK && !oom && sqlite3_step(st) == SQLITE_ROW) {
        const int i = run_index(c, (const char *)sqlite3_column_text(st, 0));
        const char *v = (const char *)sqlite3_column_text(st, 1);
        if (i >= 0 && !r->setup[i])
            oom = !(r->setup[i] = strdup(v ? v : ""));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK || oom) {
        rows_release(r);
        return oom ? ARB_ERR(err, ARB_E_NOMEM, "cost: out of memory for %d prompts", np)
                   : ARB_ERR(err, ARB_E_DB, "cost: %s", sqlite3_errmsg(c->db));
    }
    return ARB_OK;
}

static const char *setup_of(const cost_rows *r, int i) { return r->setup && r->setup[i] ? r->setup[i] : ""; }

/* Fit on the steps of every run but `skip` (-1: all) of the same model and setup as run `like`. */
static int fit_without(const arb_rctx *c, const cost_rows *r, int skip, int like, int *n, int *L, double *t,
                       arb_cost_model *cm, arb_err *err)
{
    int m = 0;
    for (int k = 0; k < r->n_steps; k++) {
        const int i = r->s_run[k];
        if (i < 0 || i == skip || strcmp(c->runs[i].model, c->runs[like].model) ||
            strcmp(setup_of(r, i), setup_of(r, like)))
            continue;
        n[m] = r->s_n[k] > 0 ? r->s_n[k] : 1, L[m] = r->s_L[k], t[m] = r->s_eval[k], m++;
    }
    return arb_cost_fit(n, L, t, m, cm, err);
}

/* AR's prefill of prompt row k (of a method run): the AR run ar's row with the same prompt_id,
   else row k's own (counted in *own). */
static double ar_prefill(const cost_rows *r, int k, int ar, int *own)
{
    for (int q = 0; ar >= 0 && q < r->n_prompts; q++)
        if (r->p_run[q] == ar && r->p_prefill[q] >= 0 && !strcmp(r->p_id[q], r->p_id[k]))
            return r->p_prefill[q];
    ++*own;
    return r->p_prefill[k] > 0 ? r->p_prefill[k] : 0;
}

/* How fast the host ran run i's evals against model cm: its measured eval time over what cm
   gives for the same steps (NAN without steps). */
static double eval_ratio(const cost_rows *r, int i, const arb_cost_model *cm)
{
    double meas = 0, fit = 0;
    for (int k = 0; k < r->n_steps; k++)
        if (r->s_run[k] == i)
            meas += r->s_eval[k], fit += arb_cost_us(cm, r->s_n[k] > 0 ? r->s_n[k] : 1, r->s_L[k]);
    return fit > 0 ? meas / fit : NAN;
}

/* Predicted speedup of run i (AR sibling ar) under model cm, and the GPU projections (A100
   roofline; the measured H100 profile h, NULL when absent). *own counts the prompts whose AR
   prefill had to be the method's own. */
static void predict(const cost_rows *r, int i, int ar, const arb_cost_model *cm, const arb_cost_model *h,
                    double *pred, double proj[2], int *own)
{
    /* AR's side over the method's own trace: each committed token at the context it was
       committed at (a step at L_s committing c tokens = AR steps at L_s .. L_s + c - 1). This
       follows multi-turn prompts (MT-Bench's second turn starts after a second prefill, at a
       context n_prompt + j would miss); databases without `committed` use n_prompt + j. */
    double t_ar = 0, t_ar_trace = 0, t_me = 0, gen = 0, cgpu[2] = {0, 0};
    bool trace = true;
    for (int k = 0; k < r->n_prompts; k++) {
        if (r->p_run[k] != i)
            continue;
        const double pf_ar = ar_prefill(r, k, ar, own), pf = r->p_prefill[k] > 0 ? r->p_prefill[k] : 0;
        t_ar += pf_ar, t_ar_trace += pf_ar, t_me += pf, gen += r->p_gen[k];
        for (int j = 0; j < r->p_gen[k]; j++)
            t_ar += arb_cost_us(cm, 1, r->p_prompt[k] + j);
    }
    for (int k = 0; k < r->n_steps; k++) {
        if (r->s_run[k] != i)
            continue;
        const int nn = r->s_n[k] > 0 ? r->s_n[k] : 1;
        trace = trace && r->s_commit[k] >= 0;
        for (int j = 0; trace && j < r->s_commit[k]; j++)
            t_ar_trace += arb_cost_us(cm, 1, r->s_L[k] + j);
        t_me += arb_cost_us(cm, nn, r->s_L[k]) + r->s_harn[k];
        cgpu[0] += arb_cost_gpu_rel(&arb_gpu_rooflines[1], PROJ_PARAMS, 2.0, nn);
        if (h)
            cgpu[1] += arb_cost_us(h, nn, 0) / arb_cost_us(h, 1, 0);
    }
    if (trace)
        t_ar = t_ar_trace;
    *pred = t_me > 0 ? t_ar / t_me : NAN;
    for (int g = 0; g < 2; g++)
        proj[g] = cgpu[g] > 0 ? gen / cgpu[g] : NAN;
}

int arb_report_cost(arb_rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Model", "Dataset", "Method"};
    /* Columns: τ, speedup, predicted, error, eval drift, [profile's predicted, error,] A100, H100. */
    arb_cost_model prof;
    const bool have_prof = c->o->profile != NULL;
    if (have_prof) {
        const int lrc = arb_cost_load(c->o->profile, &prof, err);
        if (lrc)
            return lrc;
    }
    const int nc = have_prof ? 9 : 7, c_gpu = have_prof ? 7 : 5, c_drift = 4;
    if (arb_grid_init(g, 3, rh, nc))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    const char *cn[9] = {"τ", "speedup", "predicted", "error", "eval drift", "from profile", "profile error", "", ""};
    cn[c_gpu] = "A100 7B FP16 roofline", cn[c_gpu + 1] = "H100 arbor CUDA (8B)";
    for (int j = 0; j < nc; j++)
        arb_grid_set_col(g, j, j < c_gpu ? "this machine" : "GPU projection", cn[j]);
    char hpath[4096];
    snprintf(hpath, sizeof hpath, "%s/" H100_PROFILE,
             getenv("ARBOR_SOURCE_ROOT") ? getenv("ARBOR_SOURCE_ROOT") : ARB_SOURCE_ROOT);
    arb_cost_model h100;
    arb_err he = {0};
    const bool have_h100 = arb_cost_load(hpath, &h100, &he) == ARB_OK;
    cost_rows r;
    int rc = load_rows(c, &r, err);
    if (rc)
        return rc;
    int *n = malloc(sizeof(int) * (size_t)(r.n_steps ? r.n_steps : 1)), *L = malloc(sizeof(int) * (size_t)(r.n_steps ? r.n_steps : 1));
    double *t = malloc(sizeof(double) * (size_t)(r.n_steps ? r.n_steps : 1));
    if (!n || !L || !t) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        goto out;
    }
    double worst[2] = {0, 0};
    int n_rows[2] = {0, 0}, n_own = 0;
    for (int i = 0; i < c->n && !rc; i++) {
        if (!arb_report_model_ok(c, i) || c->runs[i].temperature > 0 || !strcmp(c->runs[i].drafter, "none"))
            continue;
        const int ar = arb_metrics_find_ar(c->runs, c->n, i);
        if (ar < 0)
            continue;
        /* pred[0]: the leave-one-run-out fit; none without another tree run to fit on (a lone
           method and its AR: one knot, n = 1, and a tree would cost one node, so the
           "prediction" was about τ); pred[1]: the bench profile. */
        arb_cost_model cm;
        arb_err fe = {0};
        const bool have_fit = fit_without(c, &r, i, i, n, L, t, &cm, &fe) == ARB_OK && cm.n_knots >= 2;
        if (!have_fit && !have_prof)
            continue;
        double pred[2] = {NAN, NAN}, proj[2] = {NAN, NAN}, proj_p[2];
        int own = 0, own_p = 0;
        if (have_fit)
            predict(&r, i, ar, &cm, have_h100 ? &h100 : NULL, &pred[0], proj, &own);
        if (have_prof)
            predict(&r, i, ar, &prof, have_h100 ? &h100 : NULL, &pred[1], proj_p, &own_p);
        n_own += have_fit ? own : own_p;
        if (!have_fit)
            proj[0] = proj_p[0], proj[1] = proj_p[1]; /* the projections use no fit */
        const char *lab[3] = {c->runs[i].model, arb_report_ds_title(c->runs[i].dataset), c->runs[i].method};
        const int row = arb_grid_add_row(g, lab);
        if (row < 0) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
            break;
        }
        if ((rc = arb_report_cell(c, i, ARB_METRIC_TAU, arb_grid_at(g, row, 0), err)) ||
            (rc = arb_report_cell(c, i, ARB_METRIC_SPEEDUP, arb_grid_at(g, row, 1), err)))
            break;
        const arb_rcell *m = arb_grid_at(g, row, 1);
        /* The host's share of the error: this run's evals against the fit, relative to the AR
           run's against the same fit. Both sides of the prediction use the fit, so a run whose
           evals the host ran x % dearer than AR's (relative to the fit) is predicted too fast by
           about x % times the evals' share of its wall time, whatever the model's shape (a shared
           host's bursts, docs/cost-model.md). */
        const double drift = have_fit ? eval_ratio(&r, i, &cm) / eval_ratio(&r, ar, &cm) - 1.0 : NAN;
        *arb_grid_at(g, row, c_drift) = (arb_rcell){.has = isfinite(drift), .v = drift, .lo = NAN, .hi = NAN,
                                                    .paper = NAN, .pct = true};
        for (int p = 0; p < (have_prof ? 2 : 1); p++) {
            const int col = p ? c_drift + 1 : 2;
            *arb_grid_at(g, row, col) = (arb_rcell){.has = isfinite(pred[p]), .v = pred[p], .lo = NAN, .hi = NAN,
                                                    .paper = NAN};
            if (m->has && isfinite(pred[p]) && m->v > 0) {
                const double e = pred[p] / m->v - 1.0;
                *arb_grid_at(g, row, col + 1) = (arb_rcell){.has = true, .v = e, .lo = NAN, .hi = NAN, .paper = NAN,
                                                            .pct = true};
                worst[p] = fabs(e) > worst[p] ? fabs(e) : worst[p];
                n_rows[p]++;
            }
        }
        for (int k = 0; k < 2; k++)
            *arb_grid_at(g, row, c_gpu + k) = (arb_rcell){.has = isfinite(proj[k]), .v = proj[k], .lo = NAN,
                                                          .hi = NAN, .paper = NAN};
    }
    if (!rc) {
        arb_cost_model all;
        arb_err fe = {0};
        int first = -1;
        for (int i = 0; i < c->n && first < 0; i++)
            if (arb_report_model_ok(c, i))
                first = i;
        char fit[256] = "no fit (no other runs to fit on)", pro[512] = "";
        if (first >= 0 && !fit_without(c, &r, -1, first, n, L, t, &all, &fe))
            snprintf(fit, sizeof fit,
                     "fitted on every other run's steps (leave-one-run-out; all steps: %d samples, %d knots up to %d "
                     "nodes, a = %.4f us, b = %.4f us, rms relative residual %.1f%%); largest |error| %.1f%% over %d rows",
                     all.n_samples, all.n_knots, all.knot[all.n_knots - 1], all.ctx_us, all.ctx0_us,
                     100.0 * all.rms_rel, 100.0 * worst[0], n_rows[0]);
        if (have_prof)
            snprintf(pro, sizeof pro,
                     " From profile: %s (%s; %d samples, one node %.2f ms at 0 cached tokens, a = %.4f us, b = %.4f "
                     "us, rms %.1f%%); largest |error| %.1f%% over %d rows.",
                     c->o->profile, prof.fingerprint, prof.n_samples, arb_cost_us(&prof, 1, 0) / 1e3, prof.ctx_us,
                     prof.ctx0_us, 100.0 * prof.rms_rel, 100.0 * worst[1], n_rows[1]);
        /* The profile off by more than the issue's +-10 % on some row: say what it means (the
           machine ran this database's evals at other relative costs than the bench measured,
           e.g. a shared host's second vCPU at two threads, docs/cost-model.md), since budgets
           "auto" chose from those costs. */
        char drift[512] = "";
        if (have_prof && n_rows[1] > 0 && worst[1] > 0.10) {
            char own[128] = "";
            if (n_rows[0] > 0)
                snprintf(own, sizeof own, " while the fit on the database's own steps stays within %.1f%%",
                         100.0 * worst[0]);
            snprintf(drift, sizeof drift,
                     " Warning: the profile misses these runs' eval costs by up to %.1f%%%s: this machine ran the "
                     "trees at other costs than the bench measured, so budgets \"auto\" chosen from that profile "
                     "may be off; profile again right before the run, or run with --threads 1 on a shared host "
                     "(docs/cost-model.md).",
                     100.0 * worst[1], own);
        }
        char pf[160] = "";
        if (n_own > 0)
            snprintf(pf, sizeof pf, " (%d prompt%s without an AR row: the method's own prefill on both sides)", n_own,
                     n_own == 1 ? "" : "s");
        snprintf(g->caption, sizeof g->caption,
                 "Predicted speedup: eval cost t(n, L) = w(n) + (b + a n) L %s.%s%s Prefills are measured, not "
                 "modelled: the method's own, and on AR's side the AR run's of the same prompt%s. Eval drift: the "
                 "run's measured evals over the fit's for its steps, relative to the AR run's: how much dearer the "
                 "host ran this run's evals than AR's; it moves the prediction by about that much times the evals' "
                 "share of the wall time (a shared host's bursts and cache state, not the tree's shape). GPU columns are "
                 "projections of these step traces, not measurements: a 7B FP16 roofline (A100; A40/H100 give the "
                 "same below 215 nodes) and %s.",
                 fit, pro, drift, pf,
                 have_h100 ? "arbor's measured H100 tree costs (" H100_PROFILE ")"
                           : "no H100 profile (" H100_PROFILE " missing)");
    }
out:
    free(n), free(L), free(t);
    rows_release(&r);
    return rc;
}
