/* report_machines.c — where a database's runs were measured (table "machines"; part of the
 * report module): one row per machine, kernel family and thread count, and build, from the
 * sessions table, with the runs, sessions and prompts measured there. Timings (tok/s,
 * speedups, the cost table's fit) compare only within one row; a database merged from several
 * machines, or a config re-run with ARBOR_ISA or --threads into another database and merged,
 * shows one row per setup. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_int.h"

int arb_report_machines(arb_rctx *c, arb_grid *g, arb_err *err)
{
    static const char *const rh[] = {"Machine", "Kernels", "Build", "GPU"};
    static const char *const cn[] = {"runs", "sessions", "prompts"};
    if (arb_grid_init(g, 4, rh, 3))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (int j = 0; j < 3; j++)
        arb_grid_set_col(g, j, NULL, cn[j]);
    /* schema v4 has kernels and n_threads; older sessions hold NULL there ("unknown") */
    static const char sql[] =
        "SELECT COALESCE(s.hostname, '?') || ': ' || COALESCE(s.cpu_model, '?') || ', '"
        "       || COALESCE(s.n_cores, '?') || ' cores',"
         " COALESCE(s.kernels, 'unknown')"
        "       || COALESCE(', ' || s.n_threads || CASE WHEN s.n_threads = 1 THEN ' thread' ELSE ' threads' END, ''),"
        " COALESCE(s.git_rev, '?') || ' ' || COALESCE(s.build_type, '') || ' ' || COALESCE(s.compiler, ''),"
        " COALESCE(NULLIF(s.gpu, ''), 'none'),"
        " COUNT(DISTINCT s.run_key), COUNT(DISTINCT s.session), COUNT(p.prompt_id)"
        " FROM sessions s LEFT JOIN prompts p ON p.session = s.session"
        " GROUP BY 1, 2, 3, 4 ORDER BY MIN(s.started_at), 1, 2, 3";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return ARB_ERR(err, ARB_E_DB, "machines: %s", sqlite3_errmsg(c->db));
    int rc = ARB_OK, rows = 0;
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        const char *lab[4];
        for (int k = 0; k < 4; k++)
            lab[k] = (const char *)sqlite3_column_text(st, k);
        const int r = arb_grid_add_row(g, lab);
        if (r < 0) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
            break;
        }
        for (int j = 0; j < 3; j++)
            *arb_grid_at(g, r, j) = (arb_rcell){.has = true, .v = (double)sqlite3_column_int64(st, 4 + j),
                                                .lo = NAN, .hi = NAN, .paper = NAN, .count = true};
        rows++;
    }
    sqlite3_finalize(st);
    if (!rc)
        snprintf(g->caption, sizeof g->caption,
                 "Where the runs were measured (the sessions table: one row per machine, kernel family and "
                 "threads, build; kernels and threads are unknown in databases written before schema v4).%s",
                 rows > 1 ? " Several setups: tok/s and speedups compare only within one of them (a run and its "
                            "AR sibling measured apart are not a speedup)."
                          : "");
    return rc;
}
