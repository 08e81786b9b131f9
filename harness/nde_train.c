/* nde_train.c — NDE training and offline evaluation (nde_train.h). */
#include "nde_train.h"

#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "nde_mlp.h"
#include "resample.h"
#include "sha256.h"

#define A ARB_NDE_N_ACTIONS
#define F ARB_NDE_F
#define MAX_GROUPS 64

typedef struct roots {     /* one verifier's rows, one entry per complete root */
    int n, cap;
    int *ds, *prompt, *setting; /* ds: index into names */
    double *X, *be, *us, *temp, *top_p; /* X: n x F; be, us: n x A */
    char names[16][32];
    int n_names;
    char hash[17];         /* sha256 of the rows read, 16 hex digits */
    char sha[65], draft[64];
    arb_nde_latency lat;
} roots;

static void roots_free(roots *r)
{
    free(r->ds), free(r->prompt), free(r->setting), free(r->X), free(r->be), free(r->us), free(r->temp),
        free(r->top_p);
    memset(r, 0, sizeof *r);
}

static int roots_grow(roots *r)
{
    if (r->n < r->cap)
        return ARB_OK;
    const size_t cap = r->cap ? 2 * (size_t)r->cap : 256;
#define GROW(f, per)                                                                                                   \
    do {                                                                                                               \
        void *x = realloc(r->f, sizeof *r->f * (size_t)(per) * cap);                                                   \
        if (!x)                                                                                                        \
            return ARB_E_NOMEM;                                                                                        \
        r->f = x;                                                                                                      \
    } while (0)
    GROW(ds, 1); GROW(prompt, 1); GROW(setting, 1); GROW(X, F); GROW(be, A); GROW(us, A); GROW(temp, 1);
    GROW(top_p, 1);
#undef GROW
    r->cap = (int)cap;
    return ARB_OK;
}

/* The rows of tag for verifier vf, roots in (dataset, prompt, setting, g) order; roots missing
   an action are dropped (an interrupted unit never commits, so there are none in practice). */
static int roots_load(const char *db, const char *tag, const char *vf, roots *r, arb_err *err)
{
    memset(r, 0, sizeof *r);
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int rc = ARB_OK;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h, "SELECT model_sha256, draft, lat_target, lat_draft FROM nde_meta WHERE tag=?", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = ARB_ERR(err, ARB_E_IO, "%s: %s (run arbor nde data first)", db, sqlite3_errmsg(h));
        goto done;
    }
    sqlite3_bind_text(st, 1, tag, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: no NDE data with tag '%s'", db, tag);
        goto done;
    }
    snprintf(r->sha, sizeof r->sha, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(r->draft, sizeof r->draft, "%s", (const char *)sqlite3_column_text(st, 1));
    sscanf((const char *)sqlite3_column_text(st, 2), "%lf %lf %lf", &r->lat.target[0], &r->lat.target[1],
           &r->lat.target[2]);
    sscanf((const char *)sqlite3_column_text(st, 3), "%lf %lf %lf", &r->lat.draft[0], &r->lat.draft[1],
           &r->lat.draft[2]);
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(h, "SELECT r.dataset, r.prompt, r.setting, r.g, r.feat, b.action, b.be, b.us, "
                           "r.temperature, r.top_p FROM nde_root r JOIN nde_be b ON b.tag = r.tag AND "
                           "b.dataset = r.dataset AND b.prompt = r.prompt AND b.setting = r.setting AND b.g = r.g "
                           "WHERE r.tag = ?1 AND b.verifier = ?2 ORDER BY r.dataset, r.prompt, r.setting, r.g, "
                           "b.action", -1, &st, NULL) != SQLITE_OK) {
        rc = ARB_ERR(err, ARB_E_IO, "%s: %s", db, sqlite3_errmsg(h));
        goto done;
    }
    sqlite3_bind_text(st, 1, tag, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, vf, -1, SQLITE_TRANSIENT);
    arb_sha256 sh;
    arb_sha256_init(&sh);
    char key[128] = "", prev[128] = "";
    int seen = 0; /* actions of the current root */
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        const char *ds = (const char *)sqlite3_column_text(st, 0), *feat = (const char *)sqlite3_column_text(st, 4);
        const int pi = sqlite3_column_int(st, 1), ss = sqlite3_column_int(st, 2), g = sqlite3_column_int(st, 3),
                  a = sqlite3_column_int(st, 5);
        const double be = sqlite3_column_double(st, 6), us = sqlite3_column_double(st, 7);
        char line[512];
        int nl = snprintf(line, sizeof line, "%s %d %d %d %s %d %.17g %.17g\n", ds, pi, ss, g, feat, a, be, us);
        arb_sha256_update(&sh, line, (size_t)(nl < (int)sizeof line ? nl : (int)sizeof line - 1));
        snprintf(key, sizeof key, "%s/%d/%d/%d", ds, pi, ss, g);
        if (strcmp(key, prev)) { /* a new root */
            if (seen && seen != A)
                r->n--; /* the previous root was incomplete */
            snprintf(prev, sizeof prev, "%s", key);
            seen = 0;
            if (roots_grow(r)) {
                rc = ARB_ERR(err, ARB_E_NOMEM, "nde: out of memory");
                break;
            }
            int di = 0;
            while (di < r->n_names && strcmp(r->names[di], ds))
                di++;
            if (di == r->n_names && r->n_names < 16)
                snprintf(r->names[r->n_names++], 32, "%s", ds);
            r->ds[r->n] = di < 16 ? di : 15;
            r->prompt[r->n] = pi, r->setting[r->n] = ss;
            r->temp[r->n] = sqlite3_column_double(st, 8), r->top_p[r->n] = sqlite3_column_double(st, 9);
            double *x = r->X + (size_t)r->n * F;
            const char *fp = feat;
            for (int i = 0; i < F; i++) {
                char *end;
                x[i] = strtod(fp ? fp : "", &end);
                if (!fp || end == fp) {
                    rc = ARB_ERR(err, ARB_E_INVAL, "%s: nde_root %s: feat: expected %d numbers", db, key, F);
                    break;
                }
                fp = end;
            }
            r->n++;
        }
        if (a >= 0 && a < A && a == seen) {
            r->be[(size_t)(r->n - 1) * A + a] = be, r->us[(size_t)(r->n - 1) * A + a] = us;
            seen++;
        }
    }
    if (seen && seen != A)
        r->n--;
    uint8_t dg[32];
    arb_sha256_final(&sh, dg);
    for (int i = 0; i < 8; i++)
        snprintf(r->hash + 2 * i, 3, "%02x", dg[i]);
    if (!rc && r->n == 0)
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: tag '%s' has no complete roots for verifier '%s'", db, tag, vf);
done:
    sqlite3_finalize(st);
    sqlite3_close(h);
    if (rc)
        roots_free(r);
    return rc;
}

/* R[i][a]: the objective's ratio against the baseline action. */
static double ratio(const roots *r, int i, int a, bool thr)
{
    const double *be = r->be + (size_t)i * A, *us = r->us + (size_t)i * A;
    return thr ? (be[a] / us[a]) / (be[ARB_NDE_BASE] / us[ARB_NDE_BASE]) : be[a] / be[ARB_NDE_BASE];
}

static bool held_out(const roots *r, int i, double share, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)r->prompt[i] * 1000003u;
    for (const char *c = r->names[r->ds[i]]; *c; c++)
        s = s * 131 + (unsigned char)*c;
    return (double)(arb_splitmix64(&s) % 100000) < share * 100000;
}

arb_nde_train_opts arb_nde_train_default_opts(void)
{
    return (arb_nde_train_opts){.tag = "train", .verifier = "spectr", .objective = "throughput", .hidden = 32,
                                .steps = 3000, .patience = 300, .lr = 3e-3, .weight_decay = 1e-2, .lambda = 1,
                                .rho = 0.1, .heldout = 0.25};
}

/* Mean ratio of the argmax policy (fixed < 0) or of one fixed action over the roots in set. */
static double policy_ratio(const arb_nde_mlp *m, const roots *r, const bool *in, bool thr, int fixed, double *h)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < r->n; i++)
        if (in[i]) {
            int a = fixed >= 0 ? fixed : arb_nde_mlp_argmax(m, r->X + (size_t)i * F, h);
            s += ratio(r, i, a, thr), n++;
        }
    return n ? s / n : NAN;
}

int arb_nde_train(const arb_nde_train_opts *o, FILE *out, arb_err *err)
{
    const bool thr = !strcmp(o->objective, "throughput");
    if (!thr && strcmp(o->objective, "be"))
        return ARB_ERR(err, ARB_E_INVAL, "--objective '%s': expected throughput or be", o->objective);
    if (!o->db || !o->out || o->hidden < 1 || o->steps < 1 || o->patience < 1 || !(o->heldout > 0 && o->heldout < 1))
        return ARB_ERR(err, ARB_E_INVAL, "nde train: --db and --out required; --hidden, --steps, --patience >= 1; "
                       "--heldout in (0, 1)");
    roots r;
    int rc = roots_load(o->db, o->tag, o->verifier, &r, err);
    if (rc)
        return rc;
    arb_nde_mlp m = {0}, best = {0};
    bool *in_tr = calloc((size_t)r.n, 1), *in_ho = calloc((size_t)r.n, 1);
    double *Xt = malloc(sizeof(double) * F * (size_t)r.n), *Rt = malloc(sizeof(double) * A * (size_t)r.n);
    double *Xh = malloc(sizeof(double) * F * (size_t)r.n), *Rh = malloc(sizeof(double) * A * (size_t)r.n);
    double *scratch = NULL, h[2 * 4096 + A];
    float *grad = NULL;
    arb_adamw opt = {0};
    int nt = 0, nh = 0;
    if (!in_tr || !in_ho || !Xt || !Rt || !Xh || !Rh) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "nde train: out of memory");
        goto done;
    }
    for (int i = 0; i < r.n; i++) { /* split by prompt: every root of a prompt goes the same way */
        bool ho = held_out(&r, i, o->heldout, o->seed);
        double *X = ho ? Xh + (size_t)nh * F : Xt + (size_t)nt * F, *R = ho ? Rh + (size_t)nh * A : Rt + (size_t)nt * A;
        memcpy(X, r.X + (size_t)i * F, sizeof(double) * F);
        for (int a = 0; a < A; a++)
            R[a] = ratio(&r, i, a, thr);
        (ho ? in_ho : in_tr)[i] = true;
        nh += ho, nt += !ho;
    }
    if (nt == 0 || nh == 0) {
        rc = ARB_ERR(err, ARB_E_INVAL, "nde train: %d training and %d held-out roots: need prompts on both sides "
                     "(more prompts or another --heldout)", nt, nh);
        goto done;
    }
    if ((rc = arb_nde_mlp_init(&m, F, o->hidden, A, o->seed, err)) ||
        (rc = arb_nde_mlp_init(&best, F, o->hidden, A, o->seed, err)))
        goto done;
    for (int k = 0; k < F; k++) { /* standardisation from the training roots */
        double mu = 0, var = 0;
        for (int i = 0; i < nt; i++)
            mu += Xt[(size_t)i * F + k] / nt;
        for (int i = 0; i < nt; i++)
            var += (Xt[(size_t)i * F + k] - mu) * (Xt[(size_t)i * F + k] - mu) / nt;
        m.mu[k] = best.mu[k] = mu;
        m.sd[k] = best.sd[k] = var > 1e-18 ? sqrt(var) : 1;
    }
    const int nmax = nt > nh ? nt : nh;
    scratch = malloc(sizeof(double) * (size_t)nmax * (2 * (size_t)o->hidden + 2 * A + 1));
    grad = malloc(sizeof(float) * m.n_params);
    if (!scratch || !grad) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "nde train: out of memory");
        goto done;
    }
    arb_adamw_opts ao = arb_adamw_default_opts();
    ao.lr = o->lr, ao.weight_decay = o->weight_decay, ao.total_steps = o->steps, ao.lr_min_ratio = 0.1;
    if ((rc = arb_adamw_init(&opt, m.n_params, &ao, err)))
        goto done;
    double best_loss = INFINITY;
    int best_step = 0, step = 0;
    for (; step < o->steps && step - best_step <= o->patience; step++) {
        double lt = arb_nde_mlp_loss(&m, Xt, Rt, nt, o->lambda, o->rho, grad, scratch);
        arb_adamw_step(&opt, m.w, grad);
        double lh = arb_nde_mlp_loss(&m, Xh, Rh, nh, o->lambda, o->rho, grad, scratch);
        if (lh < best_loss) {
            best_loss = lh, best_step = step + 1;
            memcpy(best.w, m.w, sizeof(float) * m.n_params);
        }
        if (out && (step % 250 == 0))
            fprintf(out, "nde train: step %d  train loss %.5f  held-out loss %.5f\n", step, lt, lh);
    }
    /* the best single action on the training roots: the fixed baseline the selector must beat */
    int fixed = 0;
    double fbest = -INFINITY;
    for (int a = 0; a < A; a++) {
        double v = policy_ratio(&best, &r, in_tr, thr, a, h);
        if (v > fbest)
            fbest = v, fixed = a;
    }
    arb_nde_prov pv = {.seed = o->seed, .n_train = nt, .n_heldout = nh, .lat = r.lat};
    pv.heldout_ratio = policy_ratio(&best, &r, in_ho, thr, -1, h);
    pv.heldout_best_fixed = policy_ratio(&best, &r, in_ho, thr, fixed, h);
    snprintf(pv.model_sha256, sizeof pv.model_sha256, "%s", r.sha);
    snprintf(pv.draft, sizeof pv.draft, "%s", r.draft);
    snprintf(pv.verifier, sizeof pv.verifier, "%s", o->verifier);
    snprintf(pv.objective, sizeof pv.objective, "%s", o->objective);
    snprintf(pv.data_hash, sizeof pv.data_hash, "%s", r.hash);
    if ((rc = arb_nde_mlp_save(&best, &pv, o->out, err)))
        goto done;
    if (out)
        fprintf(out, "nde train: %s, %s, tag %s (data %s): %d training / %d held-out roots; stopped at step %d, best "
                "held-out loss %.5f at step %d\nnde train: held-out mean %s ratio vs (2,0,4): NDE %.4f, best fixed "
                "action on training roots (%d,%d,%d) %.4f\nnde train: wrote %s\n", o->verifier, o->objective, o->tag,
                r.hash, nt, nh, step, best_loss, best_step, thr ? "throughput" : "BE", pv.heldout_ratio,
                arb_nde_actions[fixed].k, arb_nde_actions[fixed].l, arb_nde_actions[fixed].b, pv.heldout_best_fixed,
                o->out);
done:
    arb_adamw_release(&opt);
    arb_nde_mlp_release(&m), arb_nde_mlp_release(&best);
    free(in_tr), free(in_ho), free(Xt), free(Rt), free(Xh), free(Rh), free(scratch), free(grad);
    roots_free(&r);
    return rc;
}

/* ---------------- offline evaluation: Tables 4-7 ---------------- */

/* 95% percentile interval of the mean of d over roots, resampling clusters (prompts) with
   replacement: cl[i] in 0..nc-1. */
static void boot_ci(const double *d, const int *cl, int n, int nc, int n_boot, double *lo, double *hi)
{
    double *cs = calloc((size_t)nc, sizeof *cs), *cn = calloc((size_t)nc, sizeof *cn),
           *v = malloc(sizeof(double) * (size_t)n_boot);
    *lo = *hi = NAN;
    if (cs && cn && v && nc > 0) {
        for (int i = 0; i < n; i++)
            cs[cl[i]] += d[i], cn[cl[i]]++;
        uint64_t s = 0;
        for (int b = 0; b < n_boot; b++) {
            double sum = 0, cnt = 0;
            for (int j = 0; j < nc; j++) {
                int c = (int)(arb_splitmix64(&s) % (uint64_t)nc);
                sum += cs[c], cnt += cn[c];
            }
            v[b] = cnt > 0 ? sum / cnt : 0;
        }
        qsort(v, (size_t)n_boot, sizeof *v, arb_cmp_double);
        *lo = arb_quantile_sorted(v, (size_t)n_boot, 0.025), *hi = arb_quantile_sorted(v, (size_t)n_boot, 0.975);
    }
    free(cs), free(cn), free(v);
}

static double value(const roots *r, int i, int a, bool thr)
{
    return thr ? r->be[(size_t)i * A + a] / r->us[(size_t)i * A + a] * 1e6 : r->be[(size_t)i * A + a];
}

/* The l = 0 action with the best mean value over the roots in idx. */
static int best_fixed(const roots *r, const int *idx, int n, bool thr)
{
    int best = -1;
    double bv = -INFINITY;
    for (int a = 0; a < A; a++) {
        if (arb_nde_actions[a].l != 0)
            continue;
        double s = 0;
        for (int j = 0; j < n; j++)
            s += value(r, idx[j], a, thr);
        if (s > bv)
            bv = s, best = a;
    }
    return best;
}


/* One table: rows per group, then the pooled row. other: the comparison verifier's roots. */
static int table(FILE *out, const char *title, const roots *r, const roots *other, const char *oname,
                 const int *pick, bool thr, int n_boot)
{
    const int n = r->n;
    int *idx = malloc(sizeof(int) * (size_t)n), *cl = malloc(sizeof(int) * (size_t)n),
        *pcl = malloc(sizeof(int) * (size_t)n);
    double *d = malloc(sizeof(double) * (size_t)n), *pd = malloc(sizeof(double) * (size_t)n);
    if (!idx || !cl || !pcl || !d || !pd) {
        free(idx), free(cl), free(pcl), free(d), free(pd);
        return ARB_E_NOMEM;
    }
    fprintf(out, "\n### %s\n\n| dataset | T | top-p | roots | NDE | %s best fixed (k,b) | ratio | NDE - fixed | 95%% "
            "interval |\n|---|---|---|---|---|---|---|---|---|\n", title, oname);
    int np = 0, npc = 0;
    double sa = 0, sb = 0;
    for (int ds = 0; ds < r->n_names; ds++)
        for (int ss = 0; ss < 64; ss++) {
            int m = 0, nc = 0, last = -1;
            for (int i = 0; i < n; i++)
                if (r->ds[i] == ds && r->setting[i] == ss) {
                    if (r->prompt[i] != last)
                        nc++, last = r->prompt[i], npc++;
                    idx[m] = i, cl[m] = nc - 1, pcl[np + m] = npc - 1, m++;
                }
            if (!m)
                continue;
            const int fb = best_fixed(other, idx, m, thr);
            double a = 0, b = 0;
            for (int j = 0; j < m; j++) {
                double va = value(r, idx[j], pick[idx[j]], thr), vb = value(other, idx[j], fb, thr);
                a += va / m, b += vb / m;
                d[j] = pd[np + j] = va - vb;
            }
            sa += a * m, sb += b * m, np += m;
            double lo, hi;
            boot_ci(d, cl, m, nc, n_boot, &lo, &hi);
            fprintf(out, "| %s | %.2g | %.2g | %d | %.4g | %.4g (%d,%d) | %.3f | %+.4g | [%+.4g, %+.4g]%s |\n",
                    r->names[ds], r->temp[idx[0]], r->top_p[idx[0]], m, a, b, arb_nde_actions[fb].k,
                    arb_nde_actions[fb].b, a / b, a - b, lo, hi, lo > 0 ? " NDE higher" : hi < 0 ? " NDE lower" : "");
        }
    double lo, hi;
    boot_ci(pd, pcl, np, npc, n_boot, &lo, &hi);
    fprintf(out, "| **all** | | | %d | %.4g | %.4g | %.3f | %+.4g | [%+.4g, %+.4g] |\n", np, sa / np, sb / np, sa / sb,
            (sa - sb) / np, lo, hi);
    free(idx), free(cl), free(pcl), free(d), free(pd);
    return ARB_OK;
}

int arb_nde_eval(const arb_nde_eval_opts *o, FILE *out, arb_err *err)
{
    arb_nde_mlp m;
    arb_nde_prov pv;
    int rc = arb_nde_mlp_load(o->selector, &m, &pv, err);
    if (rc)
        return rc;
    roots r = {0}, t = {0};
    int *pick = NULL;
    double h[2 * 4096 + A];
    if ((rc = roots_load(o->db, o->tag, pv.verifier, &r, err)) || (rc = roots_load(o->db, o->tag, "traversal", &t, err)))
        goto done;
    if (t.n != r.n) {
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: tag '%s': %d roots for %s but %d for traversal", o->db, o->tag, r.n,
                     pv.verifier, t.n);
        goto done;
    }
    if (strcmp(r.sha, pv.model_sha256))
        fprintf(out, "warning: the selector was trained on another model (sha256 %.12s, data %.12s)\n",
                pv.model_sha256, r.sha);
    if (!(pick = malloc(sizeof(int) * (size_t)r.n))) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "nde eval: out of memory");
        goto done;
    }
    int hist[A] = {0};
    for (int i = 0; i < r.n; i++)
        hist[pick[i] = arb_nde_mlp_argmax(&m, r.X + (size_t)i * F, h)]++;
    const int nb = o->n_boot > 0 ? o->n_boot : 2000;
    fprintf(out, "# DTE Tables 4-7 (offline, exact expected block efficiency): NDE-%s (%s objective, selector %s) "
            "on tag '%s'\n# throughput = BE / T(n, a) of the fitted latency model, tok/s; best fixed (k,b): "
            "l = 0 shape with the best mean on the same roots (in-sample, as the paper's baseline);\n# intervals: "
            "95%% bootstrap over prompts (%d resamples)\n\nNDE's actions:", pv.verifier, pv.objective, o->selector,
            o->tag, nb);
    for (int a = 0; a < A; a++)
        if (hist[a])
            fprintf(out, " (%d,%d,%d) x%d", arb_nde_actions[a].k, arb_nde_actions[a].l, arb_nde_actions[a].b, hist[a]);
    fprintf(out, "\n");
    char t4[160], t6[160];
    snprintf(t4, sizeof t4, "Table 4: block efficiency, NDE-%s vs %s", pv.verifier, pv.verifier);
    snprintf(t6, sizeof t6, "Table 6: block efficiency, NDE-%s vs Traversal", pv.verifier);
    if ((rc = table(out, t4, &r, &r, pv.verifier, pick, false, nb)) ||
        (rc = table(out, "Table 5: throughput (tok/s)", &r, &r, pv.verifier, pick, true, nb)) ||
        (rc = table(out, t6, &r, &t, "traversal", pick, false, nb)) ||
        (rc = table(out, "Table 7: throughput (tok/s) vs Traversal", &r, &t, "traversal", pick, true, nb)))
        rc = ARB_ERR(err, rc, "nde eval: out of memory");
done:
    free(pick);
    arb_nde_mlp_release(&m);
    roots_free(&r), roots_free(&t);
    return rc;
}
