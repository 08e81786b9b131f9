/* nde_mlp.c — the NDE selector network, its objective and gradient, and its file (nde_mlp.h). */
#include "nde_mlp.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resample.h"
#include "sample.h"

#define FORMAT "arbor-nde-1"

int arb_nde_mlp_init(arb_nde_mlp *m, int F, int H, int A, uint64_t seed, arb_err *err)
{
    memset(m, 0, sizeof *m);
    if (F < 1 || F > ARB_NDE_F || H < 1 || H > 4096 || A < 1 || A > 1024)
        return ARB_ERR(err, ARB_E_INVAL, "nde mlp: shape F %d (1..%d), H %d (1..4096), A %d (1..1024)", F, ARB_NDE_F,
                       H, A);
    m->F = F, m->H = H, m->A = A;
    m->n_params = (size_t)H * F + H + (size_t)A * H + A;
    if (!(m->w = malloc(sizeof(float) * m->n_params)))
        return ARB_ERR(err, ARB_E_NOMEM, "nde mlp: out of memory");
    uint64_t s = seed ^ 0x6e64652d6d6c70ull; /* "nde-mlp" */
    float *w = m->w;
    for (int j = 0; j < H * F; j++) /* PyTorch's Linear init: U(±1/sqrt(fan_in)) */
        *w++ = (float)((2.0 * (double)(arb_splitmix64(&s) >> 11) / 9007199254740992.0 - 1) / sqrt(F));
    for (int j = 0; j < H; j++)
        *w++ = 0;
    for (int j = 0; j < A * H; j++)
        *w++ = (float)((2.0 * (double)(arb_splitmix64(&s) >> 11) / 9007199254740992.0 - 1) / sqrt(H));
    for (int j = 0; j < A; j++)
        *w++ = 0;
    for (int i = 0; i < ARB_NDE_F; i++)
        m->mu[i] = 0, m->sd[i] = 1;
    return ARB_OK;
}

void arb_nde_mlp_release(arb_nde_mlp *m)
{
    free(m->w);
    m->w = NULL;
}

static double gelu(double x) { return 0.5 * x * (1 + erf(x / M_SQRT2)); }
static double gelu_d(double x) { return 0.5 * (1 + erf(x / M_SQRT2)) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI); }

/* pre[H] (pre-activation), h = pre + H (GELU), z[A] */
void arb_nde_mlp_forward(const arb_nde_mlp *m, const double *f, double *z, double *h)
{
    const int F = m->F, H = m->H, A = m->A;
    const float *W1 = m->w, *b1 = W1 + (size_t)H * F, *W2 = b1 + H, *b2 = W2 + (size_t)A * H;
    double x[ARB_NDE_F];
    for (int i = 0; i < F; i++)
        x[i] = (f[i] - m->mu[i]) / m->sd[i];
    double *pre = h, *act = h + H;
    for (int j = 0; j < H; j++) {
        double s = b1[j];
        for (int i = 0; i < F; i++)
            s += (double)W1[(size_t)j * F + i] * x[i];
        pre[j] = s;
        act[j] = gelu(s);
    }
    for (int a = 0; a < A; a++) {
        double s = b2[a];
        for (int j = 0; j < H; j++)
            s += (double)W2[(size_t)a * H + j] * act[j];
        z[a] = s;
    }
}

int arb_nde_mlp_argmax(const arb_nde_mlp *m, const double *f, double *h)
{
    double *z = h + 2 * m->H;
    arb_nde_mlp_forward(m, f, z, h);
    return arb_sample_argmax_d(z, m->A);
}

typedef struct ranked { double r; int i; } ranked;
static int cmp_ranked(const void *a, const void *b) /* by r, ties by index: a total order */
{
    const ranked *x = a, *y = b;
    return x->r < y->r ? -1 : x->r > y->r ? 1 : x->i - y->i;
}

double arb_nde_mlp_loss(const arb_nde_mlp *m, const double *X, const double *R, int B, double lam, double rho,
                        float *grad, double *scratch)
{
    const int F = m->F, H = m->H, A = m->A;
    const float *W1 = m->w, *W2 = W1 + (size_t)H * F + H;
    const size_t stride = (size_t)2 * H + 2 * A + 1;
    double *r = scratch + (size_t)B * stride - B; /* the last B doubles (see the layout below) */
    /* forward: per root [pre H | act H | z A | π A], r[i] */
    for (int i = 0; i < B; i++) {
        double *s = scratch + (size_t)i * (stride - 1), *z = s + 2 * H, *pi = z + A;
        arb_nde_mlp_forward(m, X + (size_t)i * F, z, s);
        double mx = z[0], sum = 0, ri = 0;
        for (int a = 1; a < A; a++)
            mx = z[a] > mx ? z[a] : mx;
        for (int a = 0; a < A; a++)
            sum += pi[a] = exp(z[a] - mx);
        for (int a = 0; a < A; a++)
            ri += (pi[a] /= sum) * R[(size_t)i * A + a];
        r[i] = ri;
    }
    /* the worst ceil(ρB) roots (subgradient: the set is held fixed) */
    int nw = lam > 0 ? (int)ceil(rho * B) : 0;
    nw = nw < 1 && lam > 0 ? 1 : nw > B ? B : nw;
    ranked *ord = malloc(sizeof(ranked) * (size_t)B);
    double *dr = malloc(sizeof(double) * (size_t)B);
    if (!ord || !dr) {
        free(ord), free(dr);
        return NAN;
    }
    double loss = 0;
    for (int i = 0; i < B; i++) {
        loss -= r[i] / B;
        dr[i] = -1.0 / B;
        ord[i] = (ranked){r[i], i};
    }
    qsort(ord, (size_t)B, sizeof *ord, cmp_ranked);
    for (int w = 0; w < nw; w++) {
        int i = ord[w].i;
        if (r[i] < 1) {
            loss += lam * (1 - r[i]) / nw;
            dr[i] -= lam / nw;
        }
    }
    memset(grad, 0, sizeof(float) * m->n_params);
    float *gW1 = grad, *gb1 = gW1 + (size_t)H * F, *gW2 = gb1 + H, *gb2 = gW2 + (size_t)A * H;
    double gz[1024], gh[4096];
    for (int i = 0; i < B; i++) {
        const double *s = scratch + (size_t)i * (stride - 1), *pre = s, *act = s + H, *pi = s + 2 * H + A;
        double x[ARB_NDE_F];
        for (int k = 0; k < F; k++)
            x[k] = (X[(size_t)i * F + k] - m->mu[k]) / m->sd[k];
        for (int a = 0; a < A; a++) /* dr_i/dz_a = π_a (R_a - r_i) */
            gz[a] = dr[i] * pi[a] * (R[(size_t)i * A + a] - r[i]);
        for (int j = 0; j < H; j++)
            gh[j] = 0;
        for (int a = 0; a < A; a++) {
            gb2[a] += (float)gz[a];
            for (int j = 0; j < H; j++) {
                gW2[(size_t)a * H + j] += (float)(gz[a] * act[j]);
                gh[j] += gz[a] * W2[(size_t)a * H + j];
            }
        }
        for (int j = 0; j < H; j++) {
            double g = gh[j] * gelu_d(pre[j]);
            gb1[j] += (float)g;
            for (int k = 0; k < F; k++)
                gW1[(size_t)j * F + k] += (float)(g * x[k]);
        }
    }
    free(ord);
    free(dr);
    return loss;
}

/* ---------------- the selector file ---------------- */

static cJSON *num_array(const double *x, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]));
    return a;
}

int arb_nde_mlp_save(const arb_nde_mlp *m, const arb_nde_prov *p, const char *path, arb_err *err)
{
    cJSON *o = cJSON_CreateObject(), *acts = cJSON_CreateArray(), *feats = cJSON_CreateArray(),
          *w = cJSON_CreateArray(), *pv = cJSON_CreateObject();
    if (!o || !acts || !feats || !w || !pv) {
        cJSON_Delete(o), cJSON_Delete(acts), cJSON_Delete(feats), cJSON_Delete(w), cJSON_Delete(pv);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    cJSON_AddStringToObject(o, "format", FORMAT);
    for (int i = 0; i < m->F; i++)
        cJSON_AddItemToArray(feats, cJSON_CreateString(arb_nde_feature_names[i]));
    cJSON_AddItemToObject(o, "features", feats);
    for (int a = 0; a < m->A; a++) {
        const double s3[3] = {arb_nde_actions[a].k, arb_nde_actions[a].l, arb_nde_actions[a].b};
        cJSON_AddItemToArray(acts, num_array(s3, 3));
    }
    cJSON_AddItemToObject(o, "actions", acts);
    cJSON_AddNumberToObject(o, "hidden", m->H);
    cJSON_AddItemToObject(o, "mu", num_array(m->mu, (size_t)m->F));
    cJSON_AddItemToObject(o, "sd", num_array(m->sd, (size_t)m->F));
    for (size_t i = 0; i < m->n_params; i++)
        cJSON_AddItemToArray(w, cJSON_CreateNumber(m->w[i]));
    cJSON_AddItemToObject(o, "weights", w);
    cJSON_AddStringToObject(pv, "model_sha256", p->model_sha256);
    cJSON_AddStringToObject(pv, "draft", p->draft);
    cJSON_AddStringToObject(pv, "verifier", p->verifier);
    cJSON_AddStringToObject(pv, "objective", p->objective);
    cJSON_AddStringToObject(pv, "data_hash", p->data_hash);
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)p->seed);
    cJSON_AddStringToObject(pv, "seed", seed);
    cJSON_AddNumberToObject(pv, "n_train_roots", p->n_train);
    cJSON_AddNumberToObject(pv, "n_heldout_roots", p->n_heldout);
    cJSON_AddNumberToObject(pv, "heldout_ratio", p->heldout_ratio);
    cJSON_AddNumberToObject(pv, "heldout_best_fixed_ratio", p->heldout_best_fixed);
    cJSON_AddItemToObject(pv, "latency_target_us", num_array(p->lat.target, 3));
    cJSON_AddItemToObject(pv, "latency_draft_us", num_array(p->lat.draft, 3));
    cJSON_AddItemToObject(o, "provenance", pv);
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    if (!txt)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    FILE *f = fopen(path, "w");
    int rc = ARB_OK;
    if (!f)
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot write", path);
    else if (fputs(txt, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0)
        rc = ARB_ERR(err, ARB_E_IO, "%s: write error", path), f = NULL;
    free(txt);
    return rc;
}

/* arr[n] numbers from o.key; ARB_E_INVAL naming path and key. */
static int get_nums(const cJSON *o, const char *key, double *x, int n, const char *path, arb_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
        return ARB_ERR(err, ARB_E_INVAL, "%s: %s: expected an array of %d numbers", path, key, n);
    int i = 0;
    for (const cJSON *e = a->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
            return ARB_ERR(err, ARB_E_INVAL, "%s: %s[%d]: expected a finite number", path, key, i);
        x[i] = e->valuedouble;
    }
    return ARB_OK;
}

static void get_str(const cJSON *o, const char *key, char *dst, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static int load_json(const char *path, const cJSON *o, arb_nde_mlp *m, arb_nde_prov *p, arb_err *err)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, FORMAT))
        return ARB_ERR(err, ARB_E_INVAL, "%s: format: expected \"%s\"", path, FORMAT);
    const cJSON *feats = cJSON_GetObjectItemCaseSensitive(o, "features");
    if (!cJSON_IsArray(feats) || cJSON_GetArraySize(feats) != ARB_NDE_F)
        return ARB_ERR(err, ARB_E_INVAL, "%s: features: expected the %d features of this build", path, ARB_NDE_F);
    int i = 0;
    for (const cJSON *e = feats->child; e; e = e->next, i++)
        if (!cJSON_IsString(e) || strcmp(e->valuestring, arb_nde_feature_names[i]))
            return ARB_ERR(err, ARB_E_INVAL, "%s: features[%d]: expected \"%s\"", path, i, arb_nde_feature_names[i]);
    const cJSON *acts = cJSON_GetObjectItemCaseSensitive(o, "actions");
    if (!cJSON_IsArray(acts) || cJSON_GetArraySize(acts) != ARB_NDE_N_ACTIONS)
        return ARB_ERR(err, ARB_E_INVAL, "%s: actions: expected the %d actions of this build", path,
                       ARB_NDE_N_ACTIONS);
    i = 0;
    for (const cJSON *e = acts->child; e; e = e->next, i++) {
        double s3[3];
        char key[32];
        snprintf(key, sizeof key, "actions[%d]", i);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 3)
            return ARB_ERR(err, ARB_E_INVAL, "%s: %s: expected [k, l, b]", path, key);
        for (int j = 0; j < 3; j++)
            s3[j] = cJSON_IsNumber(cJSON_GetArrayItem(e, j)) ? cJSON_GetArrayItem(e, j)->valuedouble : -1;
        const arb_draft_shape a = arb_nde_actions[i];
        if (s3[0] != a.k || s3[1] != a.l || s3[2] != a.b)
            return ARB_ERR(err, ARB_E_INVAL, "%s: %s: expected [%d, %d, %d] (this build's action set)", path, key, a.k,
                           a.l, a.b);
    }
    const cJSON *hid = cJSON_GetObjectItemCaseSensitive(o, "hidden");
    if (!cJSON_IsNumber(hid) || !(hid->valuedouble >= 1 && hid->valuedouble <= 4096) ||
        hid->valuedouble != (int)hid->valuedouble)
        return ARB_ERR(err, ARB_E_INVAL, "%s: hidden: expected an integer in 1..4096", path);
    int rc = arb_nde_mlp_init(m, ARB_NDE_F, (int)hid->valuedouble, ARB_NDE_N_ACTIONS, 0, err);
    if (rc)
        return rc;
    double *w = malloc(sizeof(double) * m->n_params);
    if (!w)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    if (!(rc = get_nums(o, "mu", m->mu, ARB_NDE_F, path, err)) && !(rc = get_nums(o, "sd", m->sd, ARB_NDE_F, path, err)) &&
        !(rc = get_nums(o, "weights", w, (int)m->n_params, path, err)))
        for (size_t j = 0; j < m->n_params; j++)
            m->w[j] = (float)w[j];
    free(w);
    for (int j = 0; !rc && j < ARB_NDE_F; j++)
        if (!(m->sd[j] > 0))
            rc = ARB_ERR(err, ARB_E_INVAL, "%s: sd[%d]: expected > 0", path, j);
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(o, "provenance");
    if (!rc && !cJSON_IsObject(pv))
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: provenance: expected an object", path);
    if (!rc && (rc = get_nums(pv, "latency_target_us", p->lat.target, 3, path, err)) == ARB_OK)
        rc = get_nums(pv, "latency_draft_us", p->lat.draft, 3, path, err);
    if (rc) {
        arb_nde_mlp_release(m);
        return rc;
    }
    get_str(pv, "model_sha256", p->model_sha256, sizeof p->model_sha256);
    get_str(pv, "draft", p->draft, sizeof p->draft);
    get_str(pv, "verifier", p->verifier, sizeof p->verifier);
    get_str(pv, "objective", p->objective, sizeof p->objective);
    get_str(pv, "data_hash", p->data_hash, sizeof p->data_hash);
    char seed[24];
    get_str(pv, "seed", seed, sizeof seed);
    p->seed = strtoull(seed, NULL, 10);
    const cJSON *v;
    p->n_train = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(pv, "n_train_roots")) ? v->valueint : 0;
    p->n_heldout = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(pv, "n_heldout_roots")) ? v->valueint : 0;
    p->heldout_ratio = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(pv, "heldout_ratio")) ? v->valuedouble : NAN;
    p->heldout_best_fixed =
        cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(pv, "heldout_best_fixed_ratio")) ? v->valuedouble : NAN;
    return ARB_OK;
}

int arb_nde_mlp_load(const char *path, arb_nde_mlp *m, arb_nde_prov *p, arb_err *err)
{
    memset(m, 0, sizeof *m);
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot open the NDE selector file", path);
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
        buf[n] = 0;
    else
        free(buf), buf = NULL;
    fclose(f);
    if (!buf)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot read (or larger than 64 MiB)", path);
    cJSON *o = cJSON_Parse(buf);
    free(buf);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return ARB_ERR(err, ARB_E_INVAL, "%s: not a JSON object", path);
    }
    int rc = load_json(path, o, m, p, err);
    cJSON_Delete(o);
    return rc;
}
