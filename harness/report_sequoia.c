/* report_sequoia.c — Sequoia's positional acceptance vector estimated from step logs (part of
 * the report module, table "sequoia-p"; docs/results-db.md "Ranks", docs/spec/drafting.md §5).
 *
 * Sequoia's DP gives the k-th ranked child of a reached node the acceptance p[k]: the
 * probability that the target's token is that node's rank-k successor, given that the rank-k
 * successor was drafted under it. Greedy steps of ranked trees (Iso, Sequoia, TR, GOOSE
 * branches) log, per step, `rank_offer[r]`: ranked children of rank r under the accepted
 * path's nodes (anchor .. stop node), and `rank_hit[r]`: those the walk took. Every offer is one
 * Bernoulli trial of rank r at a node the walk reached, so Σ hit / Σ offer estimates p[r+1]
 * without the bias of "share of steps" (which counts nodes where rank r was never offered as
 * misses). Intervals: Wilson 95 % over trials (trials of one step share a context, so they
 * are a little optimistic). Rows: one block per method, then every selected method pooled.
 * The caption carries the pooled vector as a `sequoia_p` list: ranks from 1 while a rank has
 * at least SQ_MIN_TRIALS trials and a hit (the list is 0-terminated, so it stops there). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define SQ_K 16            /* ranks tracked (decode.h ARB_RANK_MAX) */
#define SQ_LIST_MAX 15     /* entries a config's sequoia_p takes (ARB_SEQUOIA_K_MAX - 1) */
#define SQ_MIN_TRIALS 30   /* a rank enters the pasted list with at least this many trials */

static const char sq_sql[] =
    "SELECT CAST(o.key AS INTEGER), SUM(o.value),"
    " SUM(COALESCE(json_extract(s.extra, '$.rank_hit[' || o.key || ']'), 0))"
    " FROM runs r JOIN steps s ON s.run_key = r.run_key, json_each(s.extra, '$.rank_offer') o"
    " WHERE json_valid(s.extra) AND COALESCE(r.temperature, 0) <= 0 AND r.method = ?1"
    " AND (?2 IS NULL OR r.dataset = ?2) AND (?3 IS NULL OR r.model = ?3)"
    " GROUP BY 1 ORDER BY 1";

/* Trials and hits per rank of one method (filtered by dataset / model). */
static int sq_counts(const arb_rctx *c, const char *method, int64_t *n, int64_t *h, arb_err *err)
{
    sqlite3_stmt *st = NULL;
    memset(n, 0, SQ_K * sizeof *n);
    memset(h, 0, SQ_K * sizeof *h);
    if (sqlite3_prepare_v2(c->db, sq_sql, -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "sequoia-p: %s", sqlite3_errmsg(c->db));
    sqlite3_bind_text(st, 1, method, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, c->o->dataset, -1, SQLITE_STATIC); /* NULL binds NULL */
    sqlite3_bind_text(st, 3, c->o->model, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int k = sqlite3_column_int(st, 0);
        if (k >= 0 && k < SQ_K)
            n[k] += sqlite3_column_int64(st, 1), h[k] += sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? ARB_OK : ARB_ERR(err, ARB_E_DB, "sequoia-p: %s", sqlite3_errmsg(c->db));
}

/* Wilson 95 % interval of h successes in n trials. */
static void wilson(int64_t h, int64_t n, double *lo, double *hi)
{
    const double z = 1.959964;
    double p = (double)h / (double)n, z2n = z * z / (double)n;
    double mid = (p + z2n / 2) / (1 + z2n);
    double half = z * sqrt(p * (1 - p) / (double)n + z2n / (4.0 * (double)n)) / (1 + z2n);
    *lo = mid - half < 0 ? 0 : mid - half;
    *hi = mid + half > 1 ? 1 : mid + half;
}

/* One row per rank with trials: k, trials, hits, p with its interval. */
static int sq_rows(arb_grid *g, const char *label, const int64_t *n, const int64_t *h, bool rule, arb_err *err)
{
    for (int k = 0; k < SQ_K; k++) {
        if (!n[k])
            continue;
        char kb[8];
        snprintf(kb, sizeof kb, "%d", k + 1);
        const char *lab[2] = {label, kb};
        int r = arb_grid_add_row(g, lab);
        if (r < 0)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        g->rule[r] = rule;
        rule = false;
        *arb_grid_at(g, r, 0) = (arb_rcell){.has = true, .v = (double)n[k], .lo = NAN, .hi = NAN,
                                            .paper = NAN, .count = true};
        *arb_grid_at(g, r, 1) = (arb_rcell){.has = true, .v = (double)h[k], .lo = NAN, .hi = NAN,
                                            .paper = NAN, .count = true};
        arb_rcell *x = arb_grid_at(g, r, 2);
        *x = (arb_rcell){.has = true, .v = (double)h[k] / (double)n[k], .paper = NAN};
        wilson(h[k], n[k], &x->lo, &x->hi);
    }
    return ARB_OK;
}

int arb_report_sequoia_p(arb_rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Method", "k"};
    static const char *const cn[] = {"trials", "hits", "p"};
    if (arb_grid_init(g, 2, rh, 3))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int j = 0; j < 3; j++)
        arb_grid_set_col(g, j, NULL, cn[j]);
    g->prec = 3;
    g->ci = true;
    int64_t n[SQ_K], h[SQ_K], pn[SQ_K] = {0}, ph[SQ_K] = {0};
    int n_methods = 0, rc = ARB_OK;
    char used[512] = "";
    for (int i = 0; i < c->n && !rc; i++) {
        const char *m = c->runs[i].method;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(c->runs[j].method, m);
        if (seen || (c->o->method && strcmp(m, c->o->method)) || (rc = sq_counts(c, m, n, h, err)))
            continue;
        int64_t tot = 0;
        for (int k = 0; k < SQ_K; k++)
            tot += n[k], pn[k] += n[k], ph[k] += h[k];
        if (!tot)
            continue; /* no ranked trees (AR, PLD, sampling runs, or logs from before ranks) */
        size_t u = strlen(used);
        snprintf(used + u, sizeof used - u, "%s%s", n_methods ? "+" : "", m);
        n_methods++;
        rc = sq_rows(g, m, n, h, false, err);
    }
    if (!rc && !n_methods)
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "sequoia-p: no greedy steps with ranks (rank_offer) in the "
                     "selection; record them with a ranked tree method (iso3, iso5, tr, goose, sequoia)");
    if (!rc && n_methods > 1)
        rc = sq_rows(g, "pooled", pn, ph, true, err);
    if (rc)
        return rc;
    int at = snprintf(g->caption, sizeof g->caption, "`sequoia_p` from %s%s%s: [", used,
                      c->o->dataset ? " on " : "", c->o->dataset ? c->o->dataset : "");
    for (int k = 0; k < SQ_LIST_MAX && pn[k] >= SQ_MIN_TRIALS && ph[k] > 0 && at > 0 &&
                    (size_t)at < sizeof g->caption; k++)
        at += snprintf(g->caption + at, sizeof g->caption - (size_t)at, "%s%.3g", k ? ", " : "",
                       (double)ph[k] / (double)pn[k]);
    if (at > 0 && (size_t)at < sizeof g->caption)
        snprintf(g->caption + at, sizeof g->caption - (size_t)at, "]");
    return ARB_OK;
}
