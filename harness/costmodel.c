/* costmodel.c — see costmodel.h. */
#include "costmodel.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "modelfetch.h"

/* Published datasheet figures (dense FP16 tensor rate, no sparsity). */
const arb_gpu_roofline arb_gpu_rooflines[3] = {
    {"A40", 696.0, 149.7},
    {"A100-80GB", 2039.0, 312.0},
    {"H100-SXM", 3350.0, 989.4},
};

/* Hat basis: weight of knot j at node count x (linear interpolation; beyond the last
   knot, the last segment extended). */
static double hat(const arb_cost_model *c, int j, double x)
{
    const int K = c->n_knots;
    if (K == 1)
        return 1.0;
    int s = 0; /* segment [knot[s], knot[s+1]] holding x (clamped to the ends) */
    while (s < K - 2 && x > c->knot[s + 1])
        s++;
    const double x0 = c->knot[s], x1 = c->knot[s + 1], u = (x - x0) / (x1 - x0);
    if (j == s)
        return 1.0 - u;
    if (j == s + 1)
        return u;
    return 0.0;
}

double arb_cost_us(const arb_cost_model *c, int n, int L)
{
    double t = 0;
    for (int j = 0; j < c->n_knots; j++)
        t += c->w_us[j] * hat(c, j, n);
    return t + (c->ctx0_us + c->ctx_us * (double)n) * (double)L;
}

/* Solve A x = b (k x k, row-major, overwritten) by Gaussian elimination with partial
   pivoting. Returns -1 when singular. */
static int solve(double *A, double *b, int k, double *x)
{
    for (int col = 0; col < k; col++) {
        int p = col;
        for (int r = col + 1; r < k; r++)
            if (fabs(A[r * k + col]) > fabs(A[p * k + col]))
                p = r;
        if (fabs(A[p * k + col]) < 1e-300)
            return -1;
        if (p != col) {
            for (int c = 0; c < k; c++) {
                const double t = A[col * k + c];
                A[col * k + c] = A[p * k + c];
                A[p * k + c] = t;
            }
            const double t = b[col];
            b[col] = b[p];
            b[p] = t;
        }
        for (int r = col + 1; r < k; r++) {
            const double f = A[r * k + col] / A[col * k + col];
            for (int c = col; c < k; c++)
                A[r * k + c] -= f * A[col * k + c];
            b[r] -= f * b[col];
        }
    }
    for (int r = k - 1; r >= 0; r--) {
        double s = b[r];
        for (int c = r + 1; c < k; c++)
            s -= A[r * k + c] * x[c];
        x[r] = s / A[r * k + r];
    }
    return 0;
}

/* Weighted least squares on relative error for the knots' w and (when with_ctx) a, (when
   with_ctx0) b. */
static int fit_ls(arb_cost_model *c, const int *n, const int *L, const double *t, int m, bool with_ctx,
                  bool with_ctx0)
{
    const int K = c->n_knots, k = K + (with_ctx ? 1 : 0) + (with_ctx0 ? 1 : 0);
    double A[(ARB_COST_KNOTS + 2) * (ARB_COST_KNOTS + 2)] = {0}, b[ARB_COST_KNOTS + 2] = {0};
    double x[ARB_COST_KNOTS + 2] = {0}, row[ARB_COST_KNOTS + 2];
    /* Conditioning: the context column (n L, up to ~1e6) is scaled to O(1) like the hat
       columns, and each equation is divided by its t (relative residuals), so the normal
       equations stay well scaled whatever the units. */
    double ctx_scale = 1.0, ctx0_scale = 1.0;
    for (int i = 0; i < m; i++) {
        ctx_scale = fmax(ctx_scale, (double)n[i] * (double)L[i]);
        ctx0_scale = fmax(ctx0_scale, (double)L[i]);
    }
    const int jc = K, j0 = K + (with_ctx ? 1 : 0); /* columns of a and b */
    for (int i = 0; i < m; i++) {
        const double wgt = 1.0 / (t[i] * t[i]); /* residual / t: relative */
        for (int j = 0; j < K; j++)
            row[j] = hat(c, j, n[i]);
        if (with_ctx)
            row[jc] = (double)n[i] * (double)L[i] / ctx_scale;
        if (with_ctx0)
            row[j0] = (double)L[i] / ctx0_scale;
        for (int r = 0; r < k; r++) {
            b[r] += wgt * row[r] * t[i];
            for (int q = 0; q < k; q++)
                A[r * k + q] += wgt * row[r] * row[q];
        }
    }
    if (solve(A, b, k, x))
        return -1;
    for (int j = 0; j < K; j++)
        c->w_us[j] = x[j];
    c->ctx_us = with_ctx ? x[jc] / ctx_scale : 0.0;
    c->ctx0_us = with_ctx0 ? x[j0] / ctx0_scale : 0.0;
    return 0;
}

int arb_cost_fit(const int *n, const int *L, const double *t_us, int m, arb_cost_model *out, arb_err *err)
{
    memset(out, 0, sizeof *out);
    int n_max = 0;
    bool has1 = false;
    for (int i = 0; i < m; i++) {
        if (n[i] < 1 || L[i] < 0 || !(t_us[i] > 0))
            return ARB_ERR(err, ARB_E_INVAL, "cost model: sample %d (n %d, L %d, t %g us) out of range", i, n[i],
                           L[i], t_us[i]);
        n_max = n[i] > n_max ? n[i] : n_max;
        has1 |= n[i] == 1;
    }
    if (!has1)
        return ARB_ERR(err, ARB_E_INVAL, "cost model: no one-node sample (%d samples)", m);
    /* knots: 1, 2, 4, ... below n_max, then n_max; a knot no sample's basis reaches would
       be unidentified, so drop those (the interpolation then spans the gap) */
    int K = 0;
    for (int k = 1; k < n_max && K < ARB_COST_KNOTS - 1; k *= 2)
        out->knot[K++] = k;
    out->knot[K++] = n_max;
    out->n_knots = K;
    for (int j = 1; j < out->n_knots - 1;) {
        double mass = 0;
        for (int i = 0; i < m; i++)
            mass += hat(out, j, n[i]);
        if (mass > 0) {
            j++;
            continue;
        }
        memmove(out->knot + j, out->knot + j + 1, sizeof(int) * (size_t)(out->n_knots - j - 1));
        out->n_knots--;
    }
    K = out->n_knots;
    if (m < K + 1)
        return ARB_ERR(err, ARB_E_INVAL, "cost model: %d samples for %d unknowns", m, K + 1);
    /* Both context terms when the samples identify them (at least two context lengths; the
       one-node context term b is what a step pays once, whatever its node count); a term
       that comes out negative (noise, or too little spread in L or n) is dropped: first b,
       then a. */
    bool ok = m >= K + 2 && !fit_ls(out, n, L, t_us, m, true, true) && out->ctx_us >= 0 && out->ctx0_us >= 0;
    if (!ok)
        ok = !fit_ls(out, n, L, t_us, m, true, false) && out->ctx_us >= 0;
    if (!ok && fit_ls(out, n, L, t_us, m, false, false))
        return ARB_ERR(err, ARB_E_INVAL, "cost model: singular fit (%d samples, %d knots; does every "
                       "knot interval hold samples?)", m, K);
    double ss = 0;
    for (int i = 0; i < m; i++) {
        const double r = arb_cost_us(out, n[i], L[i]) / t_us[i] - 1.0;
        ss += r * r;
    }
    out->n_samples = m;
    out->rms_rel = sqrt(ss / m);
    return ARB_OK;
}

double arb_cost_gpu_rel(const arb_gpu_roofline *g, double params, double bytes_per_param, int n)
{
    const double t_mem = params * bytes_per_param / (g->bw_gbs * 1e9);
    const double t_cmp = 2.0 * params * (double)n / (g->tflops * 1e12);
    return (t_cmp > t_mem ? t_cmp : t_mem) / t_mem;
}

int arb_cost_save(const arb_cost_model *c, const char *path, arb_err *err)
{
    cJSON *o = cJSON_CreateObject(), *kn = cJSON_CreateArray(), *w = cJSON_CreateArray();
    if (!o || !kn || !w) {
        cJSON_Delete(o), cJSON_Delete(kn), cJSON_Delete(w);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    cJSON_AddItemToObject(o, "knots", kn);
    cJSON_AddItemToObject(o, "w_us", w);
    for (int j = 0; j < c->n_knots; j++) {
        cJSON_AddItemToArray(kn, cJSON_CreateNumber(c->knot[j]));
        cJSON_AddItemToArray(w, cJSON_CreateNumber(c->w_us[j]));
    }
    cJSON_AddNumberToObject(o, "ctx_us", c->ctx_us);
    cJSON_AddNumberToObject(o, "ctx0_us", c->ctx0_us);
    cJSON_AddNumberToObject(o, "n_samples", c->n_samples);
    cJSON_AddNumberToObject(o, "rms_rel", c->rms_rel);
    cJSON_AddStringToObject(o, "source", c->source);
    cJSON_AddStringToObject(o, "fingerprint", c->fingerprint);
    cJSON_AddStringToObject(o, "build", c->build);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    FILE *f = fopen(path, "w");
    int rc = ARB_OK;
    if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0)
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot write", path);
    if (f && fclose(f) && rc == ARB_OK)
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot write", path);
    free(text);
    return rc;
}

static int bad(const char *path, const char *field, arb_err *err)
{
    return ARB_ERR(err, ARB_E_INVAL, "%s: cost model: field '%s' missing or invalid", path, field);
}

int arb_cost_load(const char *path, arb_cost_model *out, arb_err *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot open", path);
    char buf[16384];
    const size_t nr = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[nr] = 0;
    cJSON *o = cJSON_Parse(buf);
    if (!o)
        return ARB_ERR(err, ARB_E_INVAL, "%s: not JSON (near byte %td)", path,
                       cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - buf : 0);
    int rc = ARB_OK;
    const cJSON *kn = cJSON_GetObjectItemCaseSensitive(o, "knots"), *w = cJSON_GetObjectItemCaseSensitive(o, "w_us");
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(o, "ctx_us");
    const cJSON *ctx0 = cJSON_GetObjectItemCaseSensitive(o, "ctx0_us"); /* optional: older profiles lack it */
    const int K = cJSON_GetArraySize(kn);
    if (!cJSON_IsArray(kn) || K < 1 || K > ARB_COST_KNOTS)
        rc = bad(path, "knots", err);
    else if (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != K)
        rc = bad(path, "w_us", err);
    else if (!cJSON_IsNumber(ctx) || ctx->valuedouble < 0)
        rc = bad(path, "ctx_us", err);
    else if (ctx0 && (!cJSON_IsNumber(ctx0) || ctx0->valuedouble < 0))
        rc = bad(path, "ctx0_us", err);
    for (int j = 0; rc == ARB_OK && j < K; j++) {
        const cJSON *a = cJSON_GetArrayItem(kn, j), *b = cJSON_GetArrayItem(w, j);
        if (!cJSON_IsNumber(a) || a->valueint < 1 || (j && a->valueint <= out->knot[j - 1]) || (!j && a->valueint != 1))
            rc = bad(path, "knots", err);
        else if (!cJSON_IsNumber(b))
            rc = bad(path, "w_us", err);
        else
            out->knot[j] = a->valueint, out->w_us[j] = b->valuedouble;
    }
    if (rc == ARB_OK) {
        out->n_knots = K;
        out->ctx_us = ctx->valuedouble;
        out->ctx0_us = ctx0 ? ctx0->valuedouble : 0.0;
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "n_samples"),
                    *r = cJSON_GetObjectItemCaseSensitive(o, "rms_rel"),
                    *src = cJSON_GetObjectItemCaseSensitive(o, "source"),
                    *fp = cJSON_GetObjectItemCaseSensitive(o, "fingerprint"),
                    *bd = cJSON_GetObjectItemCaseSensitive(o, "build"); /* optional: older profiles lack it */
        out->n_samples = cJSON_IsNumber(s) ? s->valueint : 0;
        out->rms_rel = cJSON_IsNumber(r) ? r->valuedouble : NAN;
        snprintf(out->source, sizeof out->source, "%s", cJSON_IsString(src) ? src->valuestring : "");
        snprintf(out->fingerprint, sizeof out->fingerprint, "%s", cJSON_IsString(fp) ? fp->valuestring : "");
        snprintf(out->build, sizeof out->build, "%s", cJSON_IsString(bd) ? bd->valuestring : "");
    } else {
        memset(out, 0, sizeof *out);
    }
    cJSON_Delete(o);
    return rc;
}

void arb_cost_fingerprint(char *buf, size_t cap, const char *cpu_model, const char *kernels, int threads,
                          const char *model_name, double weight_bytes)
{
    snprintf(buf, cap, "%s | %s | %d threads | %s %.1fMB", cpu_model, kernels, threads, model_name,
             weight_bytes / 1e6);
}

void arb_cost_fingerprint_gpu(char *buf, size_t cap, const char *device, const char *backend, const char *model_name,
                              double weight_bytes)
{
    snprintf(buf, cap, "%s | %s | gpu | %s %.1fMB", device, backend, model_name, weight_bytes / 1e6);
}

int arb_cost_profile_path(const char *fingerprint, bool mkdir_dir, char *buf, size_t cap, arb_err *err)
{
    char dir[4096], name[200];
    if (arb_cache_dir(dir, sizeof dir, err))
        return err->code ? err->code : ARB_E_IO;
    size_t j = 0; /* letters, digits and dots kept; anything else becomes '-' */
    for (const char *p = fingerprint; *p && j + 1 < sizeof name; p++)
        name[j++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.'
                        ? *p : '-';
    name[j] = 0;
    if (mkdir_dir) {
        snprintf(buf, cap, "%s/cost", dir);
        if (mkdir(buf, 0755) && errno != EEXIST)
            return ARB_ERR(err, ARB_E_IO, "%s: cannot create: %s", buf, strerror(errno));
    }
    if ((size_t)snprintf(buf, cap, "%s/cost/%s.json", dir, name) >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "cost profile path longer than %zu bytes", cap - 1);
    return ARB_OK;
}
