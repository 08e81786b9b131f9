/* eagle_head.c — the EAGLE-1 head: forward, hand-written backward, drafting rows (see
 * eagle_head.h). Matrices are row-major [out x in]; every product is a dot of a weight row with
 * an input row (arb_heads_dot), taken for all of a call's rows per weight row (lin_rows), every
 * backward an axpy (arb_heads_axpy); the output matrix (V x E) dominates a training step. */
#include "eagle_head.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heads.h"

#define LC 32 /* rows per pass over the output matrix */

struct arb_eagle_ws {
    int rows, keys;
    arb_ctx *pool;         /* drafting: the layer's products on this context's threads (or NULL) */
    float *xin;            /* [rows x 2E] [e(tok), f] */
    float *h0, *h1, *n1;   /* [rows x E] */
    float *q, *o;          /* [rows x QD] */
    float *k, *v;          /* [rows x KD] (training: the sequence's own keys/values) */
    float *p;              /* [H x rows x keys] attention probabilities */
    float *rinv;           /* [rows] 1 / rms(h1) */
    float *gt, *up, *act;  /* [rows x F] (act = SiLU(gt) ⊙ up) */
    float *out;            /* [rows x E] */
    float *logits;         /* [LC x V] */
    float *dzt;            /* [LC x E] */
    double *lse;           /* [LC] */
    float *dout, *dh0;     /* [rows x E] */
    float *dq, *dob;       /* [rows x QD] */
    float *dk, *dv;        /* [rows x KD] */
    float *dact, *dgt, *dup, *dn1; /* [F], [F], [F], [E] */
    float *dp;             /* [keys] d(probability) of one query head */
    int *keyslot;          /* [keys] */
};

void arb_eagle_free(arb_eagle *h)
{
    if (!h)
        return;
    free(h->params);
    free(h);
}

int arb_eagle_new(const arb_eagle_cfg *c, arb_eagle **out, arb_err *err)
{
    *out = NULL;
    if (c->E < 1 || c->V < 1 || c->H < 1 || c->KVH < 1 || c->H % c->KVH || c->hd < 2 || c->hd % 2 || c->F < 1 ||
        !(c->rope_base > 1) || !(c->eps > 0))
        return ARB_ERR(err, ARB_E_INVAL,
                       "eagle head: n_embd %d, n_vocab %d, n_head %d, n_head_kv %d (must divide n_head), head_dim %d "
                       "(even), n_ff %d, rope_base %g (> 1), eps %g (> 0)",
                       c->E, c->V, c->H, c->KVH, c->hd, c->F, c->rope_base, c->eps);
    arb_eagle *h = calloc(1, sizeof *h);
    if (!h)
        return ARB_ERR(err, ARB_E_NOMEM, "eagle head: out of memory");
    h->c = *c;
    const size_t E = (size_t)c->E, QD = (size_t)c->H * c->hd, KD = (size_t)c->KVH * c->hd, F = (size_t)c->F;
    size_t sz[10] = {E * 2 * E, E, QD * E, KD * E, KD * E, E * QD, E, F * E, F * E, E * F};
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        n += sz[i];
    h->n_params = n;
    if (!(h->params = calloc(n, sizeof *h->params))) {
        free(h);
        return ARB_ERR(err, ARB_E_NOMEM, "eagle head: cannot allocate %zu parameters", n);
    }
    float **dst[10] = {&h->fc_w, &h->fc_b, &h->wq, &h->wk, &h->wv, &h->wo, &h->norm, &h->wg, &h->wu, &h->wd};
    float *p = h->params;
    for (int i = 0; i < 10; i++)
        *dst[i] = p, p += sz[i];
    *out = h;
    return ARB_OK;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void uniform(float *w, size_t n, int fan_in, uint64_t *s)
{
    float a = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++)
        w[i] = a * (float)((double)(splitmix(s) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

void arb_eagle_init(arb_eagle *h, uint64_t seed)
{
    const arb_eagle_cfg *c = &h->c;
    const size_t E = (size_t)c->E, QD = (size_t)c->H * c->hd, KD = (size_t)c->KVH * c->hd, F = (size_t)c->F;
    uint64_t s = seed ^ 0x4541474c45ull; /* "EAGLE": the head's own stream */
    uniform(h->fc_w, E * 2 * E, 2 * c->E, &s);
    uniform(h->fc_b, E, 2 * c->E, &s);
    uniform(h->wq, QD * E, c->E, &s);
    uniform(h->wk, KD * E, c->E, &s);
    uniform(h->wv, KD * E, c->E, &s);
    uniform(h->wo, E * QD, (int)QD, &s);
    for (size_t i = 0; i < E; i++)
        h->norm[i] = 1.0f;
    uniform(h->wg, F * E, c->E, &s);
    uniform(h->wu, F * E, c->E, &s);
    uniform(h->wd, E * F, c->F, &s);
}

static const arb_gguf_value *find_kv(const arb_gguf *g, const char *key)
{
    for (uint64_t i = 0; i < arb_gguf_n_kv(g); i++) {
        const arb_gguf_kv *kv = arb_gguf_kv_at(g, i);
        if (kv->key.len == strlen(key) && !memcmp(kv->key.ptr, key, kv->key.len))
            return &kv->value;
    }
    return NULL;
}

int arb_eagle_cfg_from_model(const arb_model *m, arb_eagle_cfg *c, arb_err *err)
{
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    *c = (arb_eagle_cfg){.E = mi.n_embd, .V = mi.n_vocab, .H = mi.n_head, .KVH = mi.n_head_kv, .hd = mi.head_dim,
                         .rope_base = 10000.0f, .eps = 1e-5f};
    arb_gguf *g = NULL;
    int rc = arb_gguf_open(arb_model_path(m), &g, err);
    if (rc)
        return rc;
    char key[160];
    snprintf(key, sizeof key, "%s.feed_forward_length", mi.arch);
    const arb_gguf_value *v = find_kv(g, key);
    if (v && (v->type == ARB_GGUF_U32 || v->type == ARB_GGUF_U64 || v->type == ARB_GGUF_I32))
        c->F = (int)v->v.u64;
    snprintf(key, sizeof key, "%s.rope.freq_base", mi.arch);
    if ((v = find_kv(g, key)) && v->type == ARB_GGUF_F32)
        c->rope_base = (float)v->v.f64;
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", mi.arch);
    if ((v = find_kv(g, key)) && v->type == ARB_GGUF_F32)
        c->eps = (float)v->v.f64;
    arb_gguf_close(g);
    if (c->F < 1)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: no %s.feed_forward_length", arb_model_path(m), mi.arch);
    return ARB_OK;
}

void arb_eagle_ws_free(arb_eagle_ws *ws)
{
    if (!ws)
        return;
    float *f[] = {ws->xin, ws->h0, ws->h1, ws->n1, ws->q, ws->o, ws->k, ws->v, ws->p, ws->rinv, ws->gt, ws->up, ws->act,
                  ws->out, ws->logits, ws->dzt, ws->dout, ws->dh0, ws->dq, ws->dob, ws->dk, ws->dv, ws->dact,
                  ws->dgt, ws->dup, ws->dn1, ws->dp};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        free(f[i]);
    free(ws->lse);
    free(ws->keyslot);
    free(ws);
}

void arb_eagle_ws_set_pool(arb_eagle_ws *ws, arb_ctx *pool) { ws->pool = pool; }

int arb_eagle_ws_new(const arb_eagle *h, int rows, int keys, arb_eagle_ws **out, arb_err *err)
{
    *out = NULL;
    const arb_eagle_cfg *c = &h->c;
    arb_eagle_ws *ws = calloc(1, sizeof *ws);
    if (!ws || rows < 1 || keys < rows) {
        free(ws);
        return ARB_ERR(err, ARB_E_INVAL, "eagle head: scratch for %d rows, %d keys", rows, keys);
    }
    ws->rows = rows, ws->keys = keys;
    const size_t R = (size_t)rows, E = (size_t)c->E, QD = (size_t)c->H * c->hd, KD = (size_t)c->KVH * c->hd,
                 F = (size_t)c->F;
    struct { float **p; size_t n; } a[] = {
        {&ws->xin, R * 2 * E}, {&ws->h0, R * E}, {&ws->h1, R * E}, {&ws->n1, R * E}, {&ws->q, R * QD},
        {&ws->o, R * QD}, {&ws->k, R * KD}, {&ws->v, R * KD}, {&ws->p, (size_t)c->H * R * (size_t)keys},
        {&ws->rinv, R}, {&ws->gt, R * F}, {&ws->up, R * F}, {&ws->act, R * F}, {&ws->out, R * E}, {&ws->logits, LC * (size_t)c->V},
        {&ws->dzt, LC * E}, {&ws->dout, R * E}, {&ws->dh0, R * E}, {&ws->dq, R * QD}, {&ws->dob, R * QD},
        {&ws->dk, R * KD}, {&ws->dv, R * KD}, {&ws->dact, F}, {&ws->dgt, F}, {&ws->dup, F}, {&ws->dn1, E}, {&ws->dp, (size_t)keys}};
    bool ok = (ws->lse = malloc(LC * sizeof *ws->lse)) && (ws->keyslot = malloc((size_t)keys * sizeof(int)));
    for (size_t i = 0; ok && i < sizeof a / sizeof a[0]; i++)
        ok = (*a[i].p = calloc(a[i].n, sizeof(float))) != NULL;
    if (!ok) {
        arb_eagle_ws_free(ws);
        return ARB_ERR(err, ARB_E_NOMEM, "eagle head: cannot allocate scratch for %d rows", rows);
    }
    *out = ws;
    return ARB_OK;
}

/* ---- pieces ---- */

/* Y[i][o] = (b ? b[o] : 0) + W[o] . X[i] for n rows, X [n x I], Y [n x O], W [O x I]: each weight
   row is read once for the n rows, and every output is that one expression, so the bits do not
   depend on n or on the split. With a pool, parts of LIN_PART outputs on its threads. Why:
   drafting scores a tree level's rows (up to 10) through a 4.2 M-weight layer (16.8 MB of f32),
   which one row at a time read n times from memory. */
#define LIN_PART 32
typedef struct lin_job {
    const float *W, *b, *X;
    float *Y;
    int O, I, n;
} lin_job;

static void lin_part(void *ud, int part, int n_parts)
{
    (void)n_parts;
    const lin_job *j = ud;
    const int o1 = (part + 1) * LIN_PART < j->O ? (part + 1) * LIN_PART : j->O;
    for (int o = part * LIN_PART; o < o1; o++)
        for (int i = 0; i < j->n; i++)
            j->Y[(size_t)i * j->O + o] =
                (j->b ? j->b[o] : 0.0f) + arb_heads_dot(j->W + (size_t)o * j->I, j->X + (size_t)i * j->I, j->I);
}

static void lin_rows(arb_ctx *pool, const float *W, const float *b, int O, int I, const float *X, int n, float *Y)
{
    lin_job j = {.W = W, .b = b, .X = X, .Y = Y, .O = O, .I = I, .n = n};
    arb_heads_run_parts(pool, (O + LIN_PART - 1) / LIN_PART, lin_part, &j);
}

/* dW[o] += dy[o] x; dx += Σ_o dy[o] W[o] (dx may be NULL) */
static void lin_back(const float *W, int O, int I, const float *x, const float *dy, float *dW, float *dx)
{
    for (int o = 0; o < O; o++) {
        if (dy[o] == 0.0f)
            continue;
        arb_heads_axpy(dW + (size_t)o * I, dy[o], x, I);
        if (dx)
            arb_heads_axpy(dx, dy[o], W + (size_t)o * I, I);
    }
}

/* RoPE on nh heads of hd floats at position pos; sign -1 applies the transpose (the backward). */
static void rope(float *v, int nh, int hd, int pos, float base, float sign)
{
    for (int j = 0; j < hd / 2; j++) {
        double th = (double)pos * pow((double)base, -2.0 * j / hd);
        float c = (float)cos(th), s = sign * (float)sin(th);
        for (int hh = 0; hh < nh; hh++) {
            float *x = v + (size_t)hh * hd + 2 * j, a = x[0], b = x[1];
            x[0] = a * c - b * s;
            x[1] = a * s + b * c;
        }
    }
}

static float sigm(float u) { return 1.0f / (1.0f + expf(-u)); }


/* One query head over nk keys (rows of K/V at stride KD, key index -> row via slot or identity):
   p[0..nk) the probabilities, o the head's output. */
static void attend(const float *q, const float *K, const float *Vv, const int *slot, int nk, int KD, int hd,
                   float *p, float *o)
{
    const float scale = 1.0f / sqrtf((float)hd);
    float mx = -INFINITY;
    for (int j = 0; j < nk; j++) {
        size_t r = (size_t)(slot ? slot[j] : j);
        p[j] = arb_heads_dot(q, K + r * KD, hd) * scale;
        mx = p[j] > mx ? p[j] : mx;
    }
    double s = 0;
    for (int j = 0; j < nk; j++)
        s += (p[j] = expf(p[j] - mx));
    float inv = (float)(1.0 / s);
    memset(o, 0, (size_t)hd * sizeof *o);
    for (int j = 0; j < nk; j++) {
        p[j] *= inv;
        arb_heads_axpy(o, p[j], Vv + (size_t)(slot ? slot[j] : j) * KD, hd);
    }
}


/* Rows 0..n-1 up to q, k, v (RoPE applied on q and k) in ws: xin, h0, q, k, v. f: [n x E]
   features, pos: the rows' positions (NULL: row i at position i). Stage by stage over the rows
   (lin_rows), each row's arithmetic its own. */
static void pre_rows(const arb_eagle *h, const float *emb, const float *f, const int32_t *tok, const int *pos, int n,
                     arb_eagle_ws *ws)
{
    const arb_eagle_cfg *c = &h->c;
    const int E = c->E, QD = c->H * c->hd, KD = c->KVH * c->hd;
    for (int i = 0; i < n; i++) {
        memcpy(ws->xin + (size_t)i * 2 * E, emb + (size_t)tok[i] * E, (size_t)E * sizeof(float));
        memcpy(ws->xin + (size_t)i * 2 * E + E, f + (size_t)i * E, (size_t)E * sizeof(float));
    }
    lin_rows(ws->pool, h->fc_w, h->fc_b, E, 2 * E, ws->xin, n, ws->h0);
    lin_rows(ws->pool, h->wq, NULL, QD, E, ws->h0, n, ws->q);
    lin_rows(ws->pool, h->wk, NULL, KD, E, ws->h0, n, ws->k);
    lin_rows(ws->pool, h->wv, NULL, KD, E, ws->h0, n, ws->v);
    for (int i = 0; i < n; i++) {
        rope(ws->q + (size_t)i * QD, c->H, c->hd, pos ? pos[i] : i, c->rope_base, 1.0f);
        rope(ws->k + (size_t)i * KD, c->KVH, c->hd, pos ? pos[i] : i, c->rope_base, 1.0f);
    }
}

/* Rows 0..n-1 after attention (ws->o): h1 = h0 + W_o o, n1 = g ⊙ h1 / rms(h1) (rinv kept), the
   SwiGLU MLP (gt, up and act = SiLU(gt) ⊙ up kept for the backward), out = h1 + W_d act. */
static void post_rows(const arb_eagle *h, int n, arb_eagle_ws *ws, float *out)
{
    const arb_eagle_cfg *c = &h->c;
    const int E = c->E, QD = c->H * c->hd, F = c->F;
    lin_rows(ws->pool, h->wo, NULL, E, QD, ws->o, n, ws->h1);
    for (int i = 0; i < n; i++) {
        float *h1 = ws->h1 + (size_t)i * E, *n1 = ws->n1 + (size_t)i * E;
        const float *h0 = ws->h0 + (size_t)i * E;
        double ss = 0;
        for (int e = 0; e < E; e++) {
            h1[e] += h0[e];
            ss += (double)h1[e] * h1[e];
        }
        ws->rinv[i] = (float)(1.0 / sqrt(ss / E + c->eps));
        for (int e = 0; e < E; e++)
            n1[e] = h->norm[e] * h1[e] * ws->rinv[i];
    }
    lin_rows(ws->pool, h->wg, NULL, F, E, ws->n1, n, ws->gt);
    lin_rows(ws->pool, h->wu, NULL, F, E, ws->n1, n, ws->up);
    for (size_t j = 0; j < (size_t)n * F; j++)
        ws->act[j] = ws->gt[j] * sigm(ws->gt[j]) * ws->up[j];
    lin_rows(ws->pool, h->wd, NULL, E, F, ws->act, n, out);
    for (size_t j = 0; j < (size_t)n * E; j++)
        out[j] += ws->h1[j];
}

/* ---- training ---- */

void arb_eagle_seq_step(const arb_eagle *h, const float *w_lm, const float *emb, const float *f, const float *f_in,
                        const int32_t *tok, const int32_t *y, int T, float w_reg, float w_cls, float *grad,
                        arb_eagle_ws *ws, arb_eagle_loss *lo, int32_t *ranks)
{
    const arb_eagle_cfg *c = &h->c;
    const int E = c->E, V = c->V, QD = c->H * c->hd, KD = c->KVH * c->hd, F = c->F, hd = c->hd;
    const int grp = c->H / c->KVH;
    ARB_ASSERT(T >= 1 && T <= ws->rows && T <= ws->keys);
    memset(lo, 0, sizeof *lo);
    lo->n = T;
    const size_t PK = (size_t)T; /* stride of one query row's probabilities */
    /* forward */
    pre_rows(h, emb, f_in ? f_in : f, tok, NULL, T, ws);
    for (int i = 0; i < T; i++)
        for (int hh = 0; hh < c->H; hh++) {
            int g = hh / grp;
            attend(ws->q + (size_t)i * QD + (size_t)hh * hd, ws->k + (size_t)g * hd, ws->v + (size_t)g * hd, NULL,
                   i + 1, KD, hd, ws->p + ((size_t)hh * T + i) * PK, ws->o + (size_t)i * QD + (size_t)hh * hd);
        }
    post_rows(h, T, ws, ws->out);
    /* feature regression: SmoothL1 (beta 1), mean over E */
    for (int i = 0; i < T; i++) {
        const float *fo = ws->out + (size_t)i * E, *ft = f + (size_t)(i + 1) * E;
        float *dout = ws->dout + (size_t)i * E;
        double s = 0;
        for (int e = 0; e < E; e++) {
            float d = fo[e] - ft[e], ad = fabsf(d);
            s += ad < 1.0f ? 0.5 * d * d : ad - 0.5;
            dout[e] = w_reg * (ad < 1.0f ? d : d > 0 ? 1.0f : -1.0f) / (float)E;
        }
        lo->reg += s / E;
    }
    /* token loss through the frozen output matrix, LC rows per pass */
    for (int i0 = 0; i0 < T; i0 += LC) {
        int B = T - i0 < LC ? T - i0 : LC;
        arb_heads_logits(w_lm, V, ws->out + (size_t)i0 * E, B, E, ws->logits);
        for (int b = 0; b < B; b++) {
            float *L = ws->logits + (size_t)b * V;
            int32_t yi = y[i0 + b];
            if (yi < 0) {
                if (ranks)
                    ranks[i0 + b] = -1;
                memset(L, 0, (size_t)V * sizeof *L);
                continue;
            }
            const double lse = arb_heads_row_lse(L, V);
            lo->ce += lse - L[yi];
            lo->n_tok++;
            if (ranks) { /* ties rank the lower id first, as arb_topk_softmax orders them */
                int r = 0;
                const float ly = L[yi];
                for (int t = 0; t < V; t++)
                    r += L[t] > ly || (L[t] == ly && t < yi);
                ranks[i0 + b] = r;
            }
            if (grad) {
                for (int t = 0; t < V; t++)
                    L[t] = w_cls * (float)exp((double)L[t] - lse);
                L[yi] -= w_cls;
            }
        }
        if (!grad)
            continue;
        arb_heads_dz(w_lm, V, ws->logits, B, E, ws->dzt);
        for (int b = 0; b < B; b++)
            arb_heads_axpy(ws->dout + (size_t)(i0 + b) * E, 1.0f, ws->dzt + (size_t)b * E, E);
    }
    if (!grad)
        return;
    float *g_fcw = grad + (h->fc_w - h->params), *g_fcb = grad + (h->fc_b - h->params);
    float *g_q = grad + (h->wq - h->params), *g_k = grad + (h->wk - h->params), *g_v = grad + (h->wv - h->params);
    float *g_o = grad + (h->wo - h->params), *g_n = grad + (h->norm - h->params);
    float *g_g = grad + (h->wg - h->params), *g_u = grad + (h->wu - h->params), *g_d = grad + (h->wd - h->params);
    /* MLP and norm, per row: dh1 into dh0 (the attention path adds to it below) */
    for (int i = 0; i < T; i++) {
        const float *dout = ws->dout + (size_t)i * E, *gt = ws->gt + (size_t)i * F, *up = ws->up + (size_t)i * F;
        const float *h1 = ws->h1 + (size_t)i * E, *n1 = ws->n1 + (size_t)i * E;
        float *dh1 = ws->dh0 + (size_t)i * E, ri = ws->rinv[i];
        memset(ws->dact, 0, (size_t)F * sizeof *ws->dact);
        lin_back(h->wd, E, F, ws->act + (size_t)i * F, dout, g_d, ws->dact);
        for (int j = 0; j < F; j++) {
            float sg = sigm(gt[j]);
            ws->dup[j] = ws->dact[j] * gt[j] * sg;
            ws->dgt[j] = ws->dact[j] * up[j] * sg * (1.0f + gt[j] * (1.0f - sg));
        }
        memset(ws->dn1, 0, (size_t)E * sizeof *ws->dn1);
        lin_back(h->wg, F, E, n1, ws->dgt, g_g, ws->dn1);
        lin_back(h->wu, F, E, n1, ws->dup, g_u, ws->dn1);
        double m = 0;
        for (int e = 0; e < E; e++) {
            float xh = h1[e] * ri;
            g_n[e] += ws->dn1[e] * xh;
            ws->dn1[e] *= h->norm[e]; /* d xhat */
            m += (double)ws->dn1[e] * xh;
        }
        m /= E;
        for (int e = 0; e < E; e++)
            dh1[e] = dout[e] + ri * (ws->dn1[e] - h1[e] * ri * (float)m);
    }
    /* W_o: d o = W_o^T dh1 */
    memset(ws->dob, 0, (size_t)T * QD * sizeof *ws->dob);
    for (int i = 0; i < T; i++)
        lin_back(h->wo, E, QD, ws->o + (size_t)i * QD, ws->dh0 + (size_t)i * E, g_o, ws->dob + (size_t)i * QD);
    /* attention */
    memset(ws->dq, 0, (size_t)T * QD * sizeof *ws->dq);
    memset(ws->dk, 0, (size_t)T * KD * sizeof *ws->dk);
    memset(ws->dv, 0, (size_t)T * KD * sizeof *ws->dv);
    const float scale = 1.0f / sqrtf((float)hd);
    float *dp = ws->dp;
    for (int i = 0; i < T; i++)
        for (int hh = 0; hh < c->H; hh++) {
            int g = hh / grp;
            const float *p = ws->p + ((size_t)hh * T + i) * PK, *doh = ws->dob + (size_t)i * QD + (size_t)hh * hd;
            const float *qi = ws->q + (size_t)i * QD + (size_t)hh * hd;
            float *dqi = ws->dq + (size_t)i * QD + (size_t)hh * hd;
            double sum = 0;
            for (int j = 0; j <= i; j++) {
                float d = arb_heads_dot(doh, ws->v + (size_t)j * KD + (size_t)g * hd, hd);
                sum += (double)p[j] * d;
                arb_heads_axpy(ws->dv + (size_t)j * KD + (size_t)g * hd, p[j], doh, hd);
                dp[j] = d;
            }
            for (int j = 0; j <= i; j++) {
                float ds = p[j] * (dp[j] - (float)sum) * scale;
                arb_heads_axpy(dqi, ds, ws->k + (size_t)j * KD + (size_t)g * hd, hd);
                arb_heads_axpy(ws->dk + (size_t)j * KD + (size_t)g * hd, ds, qi, hd);
            }
        }
    /* RoPE transposed, then the projections and the input layer */
    for (int i = 0; i < T; i++) {
        float *dq = ws->dq + (size_t)i * QD, *dk = ws->dk + (size_t)i * KD, *dh0 = ws->dh0 + (size_t)i * E;
        const float *h0 = ws->h0 + (size_t)i * E;
        rope(dq, c->H, hd, i, c->rope_base, -1.0f);
        rope(dk, c->KVH, hd, i, c->rope_base, -1.0f);
        lin_back(h->wq, QD, E, h0, dq, g_q, dh0);
        lin_back(h->wk, KD, E, h0, dk, g_k, dh0);
        lin_back(h->wv, KD, E, h0, ws->dv + (size_t)i * KD, g_v, dh0);
        lin_back(h->fc_w, E, 2 * E, ws->xin + (size_t)i * 2 * E, dh0, g_fcw, NULL);
        arb_heads_axpy(g_fcb, 1.0f, dh0, E);
    }
}

/* ---- drafting ---- */

int arb_eagle_kv_new(const arb_eagle *h, int cap, arb_eagle_kv **out, arb_err *err)
{
    *out = NULL;
    size_t KD = (size_t)h->c.KVH * h->c.hd;
    arb_eagle_kv *kv = calloc(1, sizeof *kv);
    if (!kv || cap < 1 || !(kv->k = malloc((size_t)cap * KD * sizeof(float))) ||
        !(kv->v = malloc((size_t)cap * KD * sizeof(float)))) {
        arb_eagle_kv_free(kv);
        return ARB_ERR(err, ARB_E_NOMEM, "eagle head: cannot allocate a cache of %d rows", cap);
    }
    kv->cap = cap;
    *out = kv;
    return ARB_OK;
}

void arb_eagle_kv_free(arb_eagle_kv *kv)
{
    if (!kv)
        return;
    free(kv->k);
    free(kv->v);
    free(kv);
}

void arb_eagle_rows(const arb_eagle *h, const float *emb, arb_eagle_kv *kv, int n, const float *f_in,
                    const int32_t *tok, const int *pos, const int *slot, int n_ctx, const int *vis, const int *n_vis,
                    int max_vis, float *out, arb_eagle_ws *ws)
{
    const arb_eagle_cfg *c = &h->c;
    const int QD = c->H * c->hd, KD = c->KVH * c->hd, hd = c->hd, grp = c->H / c->KVH;
    ARB_ASSERT(n <= ws->rows);
    /* the training forward's stages (pre_rows, post_rows: each matrix read once for the n rows,
       a row's f̂ independent of the rows beside it), with the keys and values in kv's slots,
       all written before any attention, and attention over the context and each row's path */
    pre_rows(h, emb, f_in, tok, pos, n, ws);
    for (int i = 0; i < n; i++) {
        ARB_ASSERT(slot[i] >= 0 && slot[i] < kv->cap);
        memcpy(kv->k + (size_t)slot[i] * KD, ws->k + (size_t)i * KD, (size_t)KD * sizeof(float));
        memcpy(kv->v + (size_t)slot[i] * KD, ws->v + (size_t)i * KD, (size_t)KD * sizeof(float));
    }
    for (int i = 0; i < n; i++) {
        int nk = n_ctx + n_vis[i];
        ARB_ASSERT(nk <= ws->keys);
        for (int j = 0; j < n_ctx; j++)
            ws->keyslot[j] = j;
        for (int j = 0; j < n_vis[i]; j++)
            ws->keyslot[n_ctx + j] = vis[(size_t)i * max_vis + j];
        for (int hh = 0; hh < c->H; hh++) {
            int g = hh / grp;
            attend(ws->q + (size_t)i * QD + (size_t)hh * hd, kv->k + (size_t)g * hd, kv->v + (size_t)g * hd,
                   ws->keyslot, nk, KD, hd, ws->p, ws->o + (size_t)i * QD + (size_t)hh * hd);
        }
    }
    post_rows(h, n, ws, out);
}
