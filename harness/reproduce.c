/* reproduce.c — see reproduce.h; the rules are written out in docs/reproduce.md.
 *
 * One claim at a time: list the runs, give each run of the claim's methods a role (0 = a,
 * 1 + j = b[j]), group them into cells, and per cell build one stratum per dataset: the
 * prompt ids all its runs share, with each run's per-prompt sums. The statistic of a
 * resample is a function of those sums only, so the paired, stratified bootstrap is a loop
 * over index draws.
 */
#include "reproduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "metrics.h"
#include "paper_tsv.h"
#include "resample.h"

enum { E4_ACC_S, E4_PROP_S, E4_ACC_T, E4_PROP_T, E4_LEN, E4_TREE, E4_N };
#define MAX_STRATA 64 /* datasets in one macro cell */

typedef struct prow { char *id; double num, den, e4[E4_N]; } prow; /* one prompt of one run */
typedef struct rdata { bool loaded; int n; prow *p; int budget, depth; } rdata;

typedef struct stratum {     /* one dataset of a cell */
    const char *dataset;
    int m, R;                /* shared prompts, runs */
    int role[3 * 64];        /* per run column: 0 = a, 1 = B, 2 = C */
    int run[3 * 64];         /* run index per column */
    double *num, *den;       /* m × R: the metric's numerator and denominator per prompt */
    double *e4;              /* m × E4_N of column 0 (kind bound) */
} stratum;


typedef struct ctx {
    sqlite3 *db;
    const arb_claim *c;
    const arb_repro_opts *o;
    arb_run_info *runs;
    int n_runs;
    rdata *rd;
    int *role;               /* per run: 0 = a, 1 + j = b[j], -1 = not the claim's or out of scope */
    arb_paper_rows paper;  /* the claim's (table, model) rows are looked up in it */
    arb_repro_result *out;
} ctx;

static const char *const verdict_names[] = {"holds", "fails", "inconclusive", "missing", "untestable"};

arb_repro_opts arb_repro_default_opts(void)
{
    return (arb_repro_opts){.n_boot = 1000, .seed = 0, .n_min = 10};
}

const char *arb_verdict_name(arb_verdict v)
{
    return (unsigned)v < ARB_VERDICT_COUNT ? verdict_names[v] : "?";
}

arb_verdict arb_repro_verdict(const arb_claim *c, double lo, double hi)
{
    if (isnan(lo) || isnan(hi))
        return ARB_VERDICT_MISSING;
    bool ok_lo = arb_claim_satisfied(c, lo), ok_hi = arb_claim_satisfied(c, hi);
    if (c->op == ARB_OP_ABS_LT) { /* the region is an interval around 0 */
        if (ok_lo && ok_hi)
            return ARB_VERDICT_HOLDS;
        bool above = !ok_lo && lo > 0, below = !ok_hi && hi < 0;
        return above || below ? ARB_VERDICT_FAILS : ARB_VERDICT_INCONCLUSIVE;
    }
    return ok_lo && ok_hi ? ARB_VERDICT_HOLDS : !ok_lo && !ok_hi ? ARB_VERDICT_FAILS : ARB_VERDICT_INCONCLUSIVE;
}

void arb_repro_result_release(arb_repro_result *r)
{
    if (!r)
        return;
    free(r->cells);
    memset(r, 0, sizeof *r);
}

/* ---- data ---------------------------------------------------------------------------- */

static bool in_scope(const ctx *x, const arb_run_info *r)
{
    int want = x->o->max_new;
    if (x->o->scope) {
        int d = 0;
        while (d < x->o->scope->n_datasets && strcmp(x->o->scope->datasets[d].name, r->dataset))
            d++;
        if (d == x->o->scope->n_datasets)
            return false;
        if (want <= 0)
            want = x->o->scope->datasets[d].max_new_tokens;
    }
    return want <= 0 || r->max_new_tokens == want;
}

static int role_of(const arb_claim *c, const char *base)
{
    if (c->a && !strcmp(c->a, base))
        return 0;
    for (int j = 0; j < c->n_b; j++)
        if (!strcmp(c->b[j], base))
            return 1 + j;
    return -1;
}

/* Per-prompt sums of one run: n_gen and n_calls (or wall seconds), and the Appendix E.4
   counts (tree and bypass steps; spine length over tree steps), as analysis.c takes them. */
static int load_run(ctx *x, int i, arb_err *err)
{
    static const char sql[] =
        "SELECT p.prompt_id, p.n_gen, p.n_calls, p.wall_us,"
        " TOTAL(CASE WHEN s.mode IN ('tree','bypass') THEN s.acc_spine END),"
        " TOTAL(CASE WHEN s.mode IN ('tree','bypass') THEN s.n_spine END),"
        " TOTAL(CASE WHEN s.mode IN ('tree','bypass') THEN s.acc_tr END),"
        " TOTAL(CASE WHEN s.mode IN ('tree','bypass') THEN s.prop_tr END),"
        " TOTAL(CASE WHEN s.mode = 'tree' THEN s.n_spine END), TOTAL(s.mode = 'tree'),"
        " (SELECT json_extract(params,'$.budget') FROM runs WHERE run_key=p.run_key),"
        " (SELECT json_extract(params,'$.max_depth') FROM runs WHERE run_key=p.run_key)"
        " FROM prompts p LEFT JOIN steps s ON s.run_key=p.run_key AND s.prompt_id=p.prompt_id"
        " WHERE p.run_key=? GROUP BY p.prompt_id ORDER BY p.prompt_id";
    rdata *d = &x->rd[i];
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "prompts: %s", sqlite3_errmsg(x->db));
    sqlite3_bind_text(st, 1, x->runs[i].run_key, -1, SQLITE_STATIC);
    int cap = 0, rc = ARB_OK;
    d->loaded = true;
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        if (d->n == cap) {
            prow *np = realloc(d->p, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *np);
            if (!np) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "prompts: out of memory");
                break;
            }
            d->p = np;
        }
        prow *p = &d->p[d->n];
        const unsigned char *id = sqlite3_column_text(st, 0);
        if (!(p->id = strdup(id ? (const char *)id : ""))) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "prompts: out of memory");
            break;
        }
        d->n++;
        p->num = (double)sqlite3_column_int64(st, 1);
        p->den = x->c->metric == ARB_METRIC_TPS ? sqlite3_column_int64(st, 3) / 1e6
                                                : (double)sqlite3_column_int64(st, 2);
        for (int k = 0; k < E4_N; k++)
            p->e4[k] = sqlite3_column_double(st, 4 + k);
        d->budget = sqlite3_column_int(st, 10);
        d->depth = sqlite3_column_int(st, 11);
    }
    sqlite3_finalize(st);
    return rc;
}

static void free_data(ctx *x)
{
    for (int i = 0; x->rd && i < x->n_runs; i++) {
        for (int k = 0; k < x->rd[i].n; k++)
            free(x->rd[i].p[k].id);
        free(x->rd[i].p);
    }
    free(x->rd), free(x->role);
    arb_paper_release(&x->paper);
    arb_metrics_free_runs(x->runs, x->n_runs);
}

/* The paper's numbers (results/paper/<paper>.tsv), when the claim names its (table, model). */
static int load_paper(ctx *x, arb_err *err)
{
    const arb_claim *c = x->c;
    if (!c->paper_table || !x->o->paper_tsv)
        return ARB_OK;
    arb_err e = {0};
    int rc = arb_paper_load(x->o->paper_tsv, &x->paper, &e);
    return rc ? ARB_ERR(err, rc, "%s (claim %s: paper_rows)", e.msg, c->id) : ARB_OK;
}

static double paper_tau(const ctx *x, const char *method, const char *ds)
{
    /* the claim's metric (EntMTP's Table 1 claims compare tok/s: results/paper/entmtp.tsv) */
    return arb_paper_value(&x->paper, x->c->paper_table, x->c->paper_model, method, ds,
                           x->c->metric == ARB_METRIC_TPS ? "tps" : "tau");
}

/* ---- statistic and bootstrap --------------------------------------------------------- */

/* The claim's statistic from the role values (best run per role) — shared by ours and the
   paper's, so the two columns are the same quantity. */
static double formula(arb_claim_kind k, const double v[3])
{
    switch (k) {
    case ARB_CLAIM_ORDER:
    case ARB_CLAIM_SIGN: return v[1] > 0 ? v[0] / v[1] - 1.0 : NAN;
    case ARB_CLAIM_RATIO: return fmax(v[1], v[2]) > 0 ? v[0] / fmax(v[1], v[2]) : NAN;
    default: return NAN;
    }
}

/* E.4 on the picked prompts of column 0: tau_meas - tau_eq1 (NAN when p_s, p_t unusable). */
static double bound_stat(const ctx *x, const stratum *s, const int *pick)
{
    arb_e4 e = {0};
    double gen = 0, calls = 0;
    for (int i = 0; i < s->m; i++) {
        const double *q = &s->e4[pick[i] * E4_N];
        e.acc_spine += q[E4_ACC_S], e.prop_spine += q[E4_PROP_S];
        e.acc_tr += q[E4_ACC_T], e.prop_tr += q[E4_PROP_T];
        e.spine_len_sum += q[E4_LEN], e.n_tree_steps += (int)q[E4_TREE];
        gen += s->num[pick[i] * s->R], calls += s->den[pick[i] * s->R];
    }
    const rdata *d = &x->rd[s->run[0]];
    arb_e4_finish(&e, d->budget, d->depth, (int)gen, (int)calls);
    return e.valid ? e.tau_meas - e.tau_eq1 : NAN;
}

static double stratum_stat(const ctx *x, const stratum *s, const int *pick)
{
    if (x->c->kind == ARB_CLAIM_BOUND)
        return bound_stat(x, s, pick);
    double best[3] = {NAN, NAN, NAN};
    for (int j = 0; j < s->R; j++) {
        double num = 0, den = 0;
        for (int i = 0; i < s->m; i++)
            num += s->num[pick[i] * s->R + j], den += s->den[pick[i] * s->R + j];
        double v = den > 0 ? num / den : NAN;
        int r = s->role[j];
        if (!isnan(v) && (isnan(best[r]) || v > best[r]))
            best[r] = v; /* a method counts with its best sweep point / shape */
    }
    return formula(x->c->kind, best);
}

/* Mean over strata; picks[k] holds stratum k's prompt indices. */
static double unit_stat(const ctx *x, const stratum *s, int ns, int *const *picks)
{
    double sum = 0;
    for (int k = 0; k < ns; k++) {
        double v = stratum_stat(x, &s[k], picks[k]);
        if (isnan(v))
            return NAN;
        sum += v;
    }
    return ns ? sum / ns : NAN;
}


static int bootstrap(const ctx *x, const stratum *s, int ns, arb_repro_cell *cell, arb_err *err)
{
    int *picks[MAX_STRATA] = {0}, total = 0, fewest = 0;
    double *vals = malloc((size_t)(x->o->n_boot > 0 ? x->o->n_boot : 1) * sizeof *vals);
    int rc = vals ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int k = 0; k < ns; k++) {
        picks[k] = rc ? NULL : malloc((size_t)s[k].m * sizeof *picks[k]);
        if (!picks[k] && !rc)
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        for (int i = 0; picks[k] && i < s[k].m; i++)
            picks[k][i] = i;
        total += s[k].m;
        fewest = k == 0 || s[k].m < fewest ? s[k].m : fewest;
    }
    cell->n = total;
    cell->uninformative = fewest < x->o->n_min;
    cell->v = cell->lo = cell->hi = rc ? NAN : unit_stat(x, s, ns, picks);
    uint64_t st = x->o->seed ^ 0x5eedb007ull;
    int nv = 0;
    for (int b = 0; !rc && total >= 2 && b < x->o->n_boot; b++) {
        for (int k = 0; k < ns; k++)
            for (int i = 0; i < s[k].m; i++)
                picks[k][i] = (int)(arb_splitmix64(&st) % (uint64_t)s[k].m);
        double v = unit_stat(x, s, ns, picks);
        if (!isnan(v))
            vals[nv++] = v;
    }
    if (nv > 0) {
        qsort(vals, (size_t)nv, sizeof *vals, arb_cmp_double);
        cell->lo = arb_quantile_sorted(vals, nv, 0.025), cell->hi = arb_quantile_sorted(vals, nv, 0.975);
    }
    for (int k = 0; k < ns; k++)
        free(picks[k]);
    free(vals);
    return rc;
}

/* ---- cells --------------------------------------------------------------------------- */

static bool same_group(const arb_run_info *a, const arb_run_info *b, bool per_dataset)
{
    return !strcmp(a->model, b->model) && !strcmp(a->model_sha256, b->model_sha256) &&
           a->temperature == b->temperature && a->top_p == b->top_p && a->top_k == b->top_k &&
           a->seed == b->seed &&
           (!per_dataset || (!strcmp(a->dataset, b->dataset) && a->max_new_tokens == b->max_new_tokens));
}

static int cmp_prow(const void *key, const void *p) { return strcmp(key, ((const prow *)p)->id); }

/* Index of prompt id in a run (its rows are sorted by id: SQLite's BINARY order is strcmp's). */
static int find_prompt(const rdata *d, const char *id)
{
    const prow *p = d->n ? bsearch(id, d->p, (size_t)d->n, sizeof *d->p, cmp_prow) : NULL;
    return p ? (int)(p - d->p) : -1;
}

/* Fill s->num/den/e4 with the prompts every column's run has. */
static int align_stratum(ctx *x, stratum *s, arb_err *err)
{
    const rdata *d0 = &x->rd[s->run[0]];
    size_t cap = (size_t)(d0->n ? d0->n : 1);
    s->num = malloc(cap * (size_t)s->R * sizeof *s->num);
    s->den = malloc(cap * (size_t)s->R * sizeof *s->den);
    s->e4 = malloc(cap * E4_N * sizeof *s->e4);
    if (!s->num || !s->den || !s->e4)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int i = 0; i < d0->n; i++) {
        int at[3 * 64];
        bool all = true;
        for (int j = 0; j < s->R && all; j++)
            all = (at[j] = find_prompt(&x->rd[s->run[j]], d0->p[i].id)) >= 0;
        if (!all)
            continue;
        for (int j = 0; j < s->R; j++) {
            const prow *p = &x->rd[s->run[j]].p[at[j]];
            s->num[s->m * s->R + j] = p->num, s->den[s->m * s->R + j] = p->den;
        }
        memcpy(&s->e4[s->m * E4_N], d0->p[i].e4, sizeof d0->p[i].e4);
        s->m++;
    }
    return ARB_OK;
}

/* The stratum of dataset ds in the group of run g (exact: g's own dataset and generation
   limit): runs with roles in want[0..nw) (as columns 0, 1, 2), role 0 first. Returns ARB_OK
   with s->m = 0 when a role has no run. */
static int build_stratum(ctx *x, int g, const char *ds, const int *want, int nw, bool exact, stratum *s,
                         arb_err *err)
{
    memset(s, 0, sizeof *s);
    s->dataset = ds;
    int per_role[3] = {0, 0, 0};
    for (int r = 0; r < nw; r++)
        for (int i = 0; i < x->n_runs; i++) {
            if (x->role[i] != want[r] || !same_group(&x->runs[g], &x->runs[i], exact) ||
                strcmp(x->runs[i].dataset, ds) || s->R == 3 * 64)
                continue;
            if (!x->rd[i].loaded) {
                int rc = load_run(x, i, err);
                if (rc)
                    return rc;
            }
            s->role[s->R] = r, s->run[s->R++] = i, per_role[r]++;
        }
    for (int r = 0; r < nw; r++)
        if (!per_role[r])
            return ARB_OK;
    return align_stratum(x, s, err);
}

static void release_strata(stratum *s, int ns)
{
    for (int k = 0; k < ns; k++)
        free(s[k].num), free(s[k].den), free(s[k].e4);
}

static arb_repro_cell *add_cell(ctx *x, arb_err *err)
{
    arb_repro_result *r = x->out;
    arb_repro_cell *nc = realloc(r->cells, (size_t)(r->n_cells + 1) * sizeof *nc);
    if (!nc) {
        ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        return NULL;
    }
    r->cells = nc;
    arb_repro_cell *c = &nc[r->n_cells++];
    memset(c, 0, sizeof *c);
    c->v = c->lo = c->hi = c->paper = NAN;
    c->verdict = ARB_VERDICT_MISSING;
    return c;
}

/* "humaneval", "math500 T=0.6 p=0.9", with " vs B" when the claim compares several. */
static void cell_label(const ctx *x, const arb_run_info *r, const char *ds, int bj, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s", ds);
    if (r && (r->temperature > 0 || r->top_p < 1) && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, r->top_p < 1 ? " T=%g p=%g" : " T=%g", r->temperature, r->top_p);
    if (x->c->kind == ARB_CLAIM_ORDER && x->c->n_b > 1 && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " vs %s", x->c->b[bj]);
}

/* The paper's statistic over datasets ds[0..nd) for roles want[0..nw), NAN if a value is absent. */
static double paper_stat(const ctx *x, const char *const *ds, int nd, const int *want, int nw)
{
    double sum = 0;
    for (int k = 0; k < nd; k++) {
        double pv[3] = {NAN, NAN, NAN};
        for (int r = 0; r < nw; r++)
            pv[r] = paper_tau(x, want[r] ? x->c->b[want[r] - 1] : x->c->a, ds[k]);
        sum += formula(x->c->kind, pv);
    }
    return nd > 0 ? sum / nd : NAN;
}

/* One cell: the datasets ds[0..nd) of group g, roles want[0..nw) (b index bj for labels). */
static int eval_cell(ctx *x, int g, const char *const *ds, int nd, const int *want, int nw, int bj,
                     arb_err *err)
{
    stratum s[MAX_STRATA];
    arb_repro_cell *cell = add_cell(x, err);
    if (!cell)
        return ARB_E_NOMEM;
    if (nd == 1)
        cell_label(x, &x->runs[g], ds[0], bj, cell->label, sizeof cell->label);
    else
        snprintf(cell->label, sizeof cell->label, "macro: %d datasets", nd);
    int ns = 0, rc = ARB_OK;
    bool complete = true;
    for (int k = 0; k < nd && k < MAX_STRATA && !rc; k++) {
        rc = build_stratum(x, g, ds[k], want, nw, nd == 1, &s[ns++], err);
        complete &= !rc && s[ns - 1].m > 0;
    }
    cell->paper = paper_stat(x, ds, nd, want, nw);
    if (!rc && complete)
        rc = bootstrap(x, s, ns, cell, err);
    /* One prompt has no interval (every resample is that prompt): inconclusive, whatever the
       point says. */
    if (!rc && complete)
        cell->verdict = cell->n < 2 ? ARB_VERDICT_INCONCLUSIVE : arb_repro_verdict(x->c, cell->lo, cell->hi);
    release_strata(s, ns);
    return rc;
}

/* Roles a kind compares: a alone (bound), a and B, or a, B and C (ratio). */
static int nw_of(arb_claim_kind k) { return k == ARB_CLAIM_BOUND ? 1 : k == ARB_CLAIM_RATIO ? 3 : 2; }

/* Datasets of a macro cell: the scope's, else the group's in run order. */
static int macro_datasets(const ctx *x, int g, const char **ds)
{
    int nd = 0;
    if (x->o->scope) {
        for (int d = 0; d < x->o->scope->n_datasets && nd < MAX_STRATA; d++)
            ds[nd++] = x->o->scope->datasets[d].name;
        return nd;
    }
    for (int i = 0; i < x->n_runs && nd < MAX_STRATA; i++) {
        bool seen = x->role[i] < 0 || !same_group(&x->runs[g], &x->runs[i], false);
        for (int k = 0; k < nd && !seen; k++)
            seen = !strcmp(ds[k], x->runs[i].dataset);
        if (!seen)
            ds[nd++] = x->runs[i].dataset;
    }
    return nd;
}

/* Missing cells for the scope's datasets no run of the claim covers. */
static int scope_missing(ctx *x, int bj, arb_err *err)
{
    for (int d = 0; x->o->scope && d < x->o->scope->n_datasets; d++) {
        const char *name = x->o->scope->datasets[d].name;
        bool any = false;
        for (int i = 0; i < x->n_runs && !any; i++)
            any = x->role[i] >= 0 && !strcmp(x->runs[i].dataset, name);
        arb_repro_cell *cell = any ? NULL : add_cell(x, err);
        if (!any && !cell)
            return ARB_E_NOMEM;
        int want[3] = {0, 1 + bj, 2};
        if (cell) {
            cell_label(x, NULL, name, bj, cell->label, sizeof cell->label);
            cell->paper = paper_stat(x, &name, 1, want, nw_of(x->c->kind));
        }
    }
    return ARB_OK;
}

/* One cell per group (first run of each key among the claim's runs) and, for order, per b. */
static int eval_cells(ctx *x, arb_err *err)
{
    const arb_claim *c = x->c;
    bool macro = c->kind == ARB_CLAIM_SIGN;
    int nb = c->kind == ARB_CLAIM_ORDER ? c->n_b : 1, rc = ARB_OK;
    for (int bj = 0; bj < nb && !rc; bj++) {
        for (int g = 0; g < x->n_runs && !rc; g++) {
            bool first = x->role[g] >= 0;
            for (int h = 0; h < g && first; h++)
                first = !(x->role[h] >= 0 && same_group(&x->runs[h], &x->runs[g], !macro));
            if (!first)
                continue;
            int want[3] = {0, 1 + bj, 2}, nw = nw_of(c->kind);
            const char *ds[MAX_STRATA] = {x->runs[g].dataset};
            int nd = macro ? macro_datasets(x, g, ds) : 1;
            rc = eval_cell(x, g, ds, nd, want, nw, bj, err);
        }
        if (!rc && !macro)
            rc = scope_missing(x, bj, err);
    }
    if (!rc && x->out->n_cells == 0) {
        arb_repro_cell *cell = add_cell(x, err);
        if (!cell)
            return ARB_E_NOMEM;
        snprintf(cell->label, sizeof cell->label, "%s", macro ? "macro" : "no runs");
        const char *ds[MAX_STRATA];
        int want[3] = {0, 1, 2}, nd = macro ? macro_datasets(x, 0, ds) : 0;
        cell->paper = x->o->scope ? paper_stat(x, ds, nd, want, nw_of(c->kind)) : NAN;
    }
    return rc;
}

static arb_verdict aggregate(const arb_repro_result *r)
{
    int cnt[ARB_VERDICT_COUNT] = {0};
    for (int i = 0; i < r->n_cells; i++)
        cnt[r->cells[i].verdict]++;
    if (cnt[ARB_VERDICT_FAILS])
        return ARB_VERDICT_FAILS;
    if (cnt[ARB_VERDICT_INCONCLUSIVE])
        return ARB_VERDICT_INCONCLUSIVE;
    return cnt[ARB_VERDICT_MISSING] || !r->n_cells ? ARB_VERDICT_MISSING : ARB_VERDICT_HOLDS;
}

int arb_repro_eval(sqlite3 *db, const arb_claim *c, const arb_repro_opts *o, arb_repro_result *out,
                   arb_err *err)
{
    memset(out, 0, sizeof *out);
    out->claim = c;
    out->n_min = o->n_min;
    if (c->untestable) {
        out->verdict = ARB_VERDICT_UNTESTABLE;
        return ARB_OK;
    }
    ctx x = {.db = db, .c = c, .o = o, .out = out};
    int rc = arb_metrics_list_runs(db, &x.runs, &x.n_runs, err);
    if (!rc) {
        x.rd = calloc((size_t)(x.n_runs ? x.n_runs : 1), sizeof *x.rd);
        x.role = malloc((size_t)(x.n_runs ? x.n_runs : 1) * sizeof *x.role);
        if (!x.rd || !x.role)
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    for (int i = 0; !rc && i < x.n_runs; i++)
        x.role[i] = in_scope(&x, &x.runs[i]) ? role_of(c, x.runs[i].base_method) : -1;
    if (!rc)
        rc = load_paper(&x, err);
    if (!rc)
        rc = eval_cells(&x, err);
    free_data(&x);
    if (rc) {
        arb_err_prefix(err, "claim %s", c->id);
        arb_repro_result_release(out);
        return rc;
    }
    out->verdict = aggregate(out);
    return ARB_OK;
}
