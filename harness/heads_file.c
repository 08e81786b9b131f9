/* heads_file.c — heads GGUF writer and reader (see heads_file.h; GGUF layout: engine/gguf.h). */
#include "heads_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 32
#define T_F32 0 /* ggml type id */

/* ---- writer: little-endian fields into a growing buffer ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_str(buf *b, const char *k, const char *v)
{
    put_str(b, k);
    put_u32(b, ARB_GGUF_STRING);
    put_str(b, v);
}
static void kv_u32(buf *b, const char *k, uint32_t v)
{
    put_str(b, k);
    put_u32(b, ARB_GGUF_U32);
    put_u32(b, v);
}
static void kv_u64(buf *b, const char *k, uint64_t v)
{
    put_str(b, k);
    put_u32(b, ARB_GGUF_U64);
    put_u64(b, v);
}
static void kv_f32s(buf *b, const char *k, const float *v, uint64_t n)
{
    put_str(b, k);
    put_u32(b, ARB_GGUF_ARRAY);
    put_u32(b, ARB_GGUF_F32);
    put_u64(b, n);
    put(b, v, n * sizeof(float));
}

typedef struct tens {
    char name[48];
    uint64_t ne0, ne1; /* ne1 = 1: a vector */
    const float *data;
} tens;

static int list_tensors(const arb_heads *h, tens *t)
{
    int n = 0;
    for (int k = 0; k < h->n_heads; k++) {
        const float *p[4] = {h->w[k], h->b[k], h->r[k], h->rb[k]};
        static const char *suf[4] = {"w", "b", "r", "rb"};
        for (int j = 0; j < 4; j++) {
            if (!p[j])
                continue;
            snprintf(t[n].name, sizeof t[n].name, "heads.%d.%s", k, suf[j]);
            bool mat = j == 0 || j == 2;
            t[n].ne0 = mat ? (uint64_t)h->d_in[k] : (uint64_t)h->n_embd;
            t[n].ne1 = mat ? (uint64_t)h->n_embd : 1;
            t[n].data = p[j];
            n++;
        }
    }
    return n;
}

/* The file: the shared keys (kind, sizes, base model, training meta, held-out accuracy of K
   heads), the EAGLE layer's sizes when ecfg is non-NULL, then the F32 tensors. */
static int write_file(const char *path, const char *kind, int K, int E, int V, const arb_heads_meta *meta,
                      const arb_eagle_cfg *ecfg, const tens *t, int nt, arb_err *err)
{
    buf b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, (uint64_t)nt);
    put_u64(&b, ecfg ? 23 : 17);
    kv_str(&b, "general.architecture", "arbor-heads");
    kv_str(&b, "arbor.heads.kind", kind);
    kv_u32(&b, "arbor.heads.n_heads", (uint32_t)K);
    kv_u32(&b, "arbor.heads.n_embd", (uint32_t)E);
    kv_u32(&b, "arbor.heads.n_vocab", (uint32_t)V);
    kv_str(&b, "arbor.base.sha256", meta->base_sha256);
    kv_str(&b, "arbor.base.name", meta->base_name);
    kv_str(&b, "arbor.train.config", meta->config);
    kv_str(&b, "arbor.train.data_sha256", meta->data_sha256);
    kv_u64(&b, "arbor.train.seed", meta->seed);
    kv_u64(&b, "arbor.train.rows", meta->rows);
    kv_u64(&b, "arbor.train.heldout_rows", meta->heldout_rows);
    kv_f32s(&b, "arbor.heldout.top1", meta->top1, (uint64_t)K);
    kv_f32s(&b, "arbor.heldout.top5", meta->top5, (uint64_t)K);
    float ra[ARB_HEADS_MAX * ARB_HEADS_RANKS];
    for (int k = 0; k < K; k++)
        memcpy(ra + k * ARB_HEADS_RANKS, meta->rank_acc[k], sizeof meta->rank_acc[k]);
    kv_f32s(&b, "arbor.heldout.rank_acc", ra, (uint64_t)K * ARB_HEADS_RANKS);
    kv_u32(&b, "arbor.heads.ranks", ARB_HEADS_RANKS);
    kv_u32(&b, "general.alignment", ALIGN);
    if (ecfg) {
        kv_u32(&b, "arbor.eagle.n_head", (uint32_t)ecfg->H);
        kv_u32(&b, "arbor.eagle.n_head_kv", (uint32_t)ecfg->KVH);
        kv_u32(&b, "arbor.eagle.head_dim", (uint32_t)ecfg->hd);
        kv_u32(&b, "arbor.eagle.n_ff", (uint32_t)ecfg->F);
        kv_f32s(&b, "arbor.eagle.rope_base", &ecfg->rope_base, 1);
        kv_f32s(&b, "arbor.eagle.rms_eps", &ecfg->eps, 1);
    }
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
        put_str(&b, t[i].name);
        put_u32(&b, t[i].ne1 > 1 ? 2 : 1);
        put_u64(&b, t[i].ne0);
        if (t[i].ne1 > 1)
            put_u64(&b, t[i].ne1);
        put_u32(&b, T_F32);
        put_u64(&b, off);
        off += (t[i].ne0 * t[i].ne1 * 4 + ALIGN - 1) / ALIGN * ALIGN;
    }
    static const uint8_t zero[ALIGN] = {0};
    put(&b, zero, (ALIGN - b.n % ALIGN) % ALIGN);
    for (int i = 0; i < nt; i++) {
        size_t n = t[i].ne0 * t[i].ne1 * 4;
        put(&b, t[i].data, n);
        put(&b, zero, (ALIGN - n % ALIGN) % ALIGN);
    }
    if (b.oom) {
        free(b.p);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    int rc = ARB_OK;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b.p, 1, b.n, f) != b.n)
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) && !rc)
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot write: %s", path, strerror(errno));
    free(b.p);
    return rc;
}

int arb_heads_save(const char *path, const arb_heads *h, const arb_heads_meta *meta, arb_err *err)
{
    tens t[4 * ARB_HEADS_MAX];
    int nt = list_tensors(h, t);
    return write_file(path, arb_heads_kind_name(h->kind), h->n_heads, h->n_embd, h->n_vocab, meta, NULL, t, nt, err);
}

/* The EAGLE layer's tensors: name, [ne0 = in, ne1 = out] as GGUF orders a row-major [out x in]. */
static int eagle_tensors(const arb_eagle *h, tens *t)
{
    const arb_eagle_cfg *c = &h->c;
    const uint64_t E = (uint64_t)c->E, QD = (uint64_t)c->H * c->hd, KD = (uint64_t)c->KVH * c->hd,
                   F = (uint64_t)c->F;
    const struct { const char *name; uint64_t ne0, ne1; const float *p; } d[10] = {
        {"eagle.fc.weight", 2 * E, E, h->fc_w}, {"eagle.fc.bias", E, 1, h->fc_b},
        {"eagle.attn_q.weight", E, QD, h->wq},  {"eagle.attn_k.weight", E, KD, h->wk},
        {"eagle.attn_v.weight", E, KD, h->wv},  {"eagle.attn_output.weight", QD, E, h->wo},
        {"eagle.ffn_norm.weight", E, 1, h->norm}, {"eagle.ffn_gate.weight", E, F, h->wg},
        {"eagle.ffn_up.weight", E, F, h->wu},   {"eagle.ffn_down.weight", F, E, h->wd}};
    for (int i = 0; i < 10; i++) {
        snprintf(t[i].name, sizeof t[i].name, "%s", d[i].name);
        t[i].ne0 = d[i].ne0, t[i].ne1 = d[i].ne1, t[i].data = d[i].p;
    }
    return 10;
}

int arb_eagle_save(const char *path, const arb_eagle *h, const arb_heads_meta *meta, arb_err *err)
{
    tens t[10];
    int nt = eagle_tensors(h, t);
    return write_file(path, "eagle", 1, h->c.E, h->c.V, meta, &h->c, t, nt, err);
}

/* ---- reader ---- */

static const arb_gguf_value *find_kv(const arb_gguf *g, const char *key)
{
    for (uint64_t i = 0; i < arb_gguf_n_kv(g); i++) {
        const arb_gguf_kv *kv = arb_gguf_kv_at(g, i);
        if (kv->key.len == strlen(key) && !memcmp(kv->key.ptr, key, kv->key.len))
            return &kv->value;
    }
    return NULL;
}

static int get_str(const arb_gguf *g, const char *path, const char *key, char *out, size_t cap, arb_err *err)
{
    const arb_gguf_value *v = find_kv(g, key);
    if (!v || v->type != ARB_GGUF_STRING)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: key %s missing or not a string (not an arbor heads file?)", path, key);
    arb_gguf_str_copy(v->v.str, out, cap);
    return ARB_OK;
}

static int get_uint(const arb_gguf *g, const char *path, const char *key, uint64_t *out, arb_err *err)
{
    const arb_gguf_value *v = find_kv(g, key);
    if (!v || (v->type != ARB_GGUF_U32 && v->type != ARB_GGUF_U64))
        return ARB_ERR(err, ARB_E_FORMAT, "%s: key %s missing or not an unsigned integer", path, key);
    *out = v->v.u64;
    return ARB_OK;
}

static int get_f32s(const arb_gguf *g, const char *path, const char *key, float *out, uint64_t n, arb_err *err)
{
    const arb_gguf_value *v = find_kv(g, key);
    if (!v || v->type != ARB_GGUF_ARRAY || v->v.arr.elem_type != ARB_GGUF_F32 || v->v.arr.n != n)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: key %s missing or not %llu f32 values", path, key,
                       (unsigned long long)n);
    memcpy(out, v->v.arr.data, n * sizeof(float));
    return ARB_OK;
}

/* The keys every heads file carries (arb_heads_save and arb_eagle_save write them alike):
   dims = {n_heads, n_embd, n_vocab, ranks}, then the provenance into meta. */
static int get_common(const arb_gguf *g, const char *path, uint64_t *const dims[4], arb_heads_meta *meta,
                      arb_err *err)
{
    static const char *const dim_keys[4] = {"arbor.heads.n_heads", "arbor.heads.n_embd", "arbor.heads.n_vocab",
                                            "arbor.heads.ranks"};
    int rc = ARB_OK;
    for (int i = 0; i < 4 && !rc; i++)
        rc = get_uint(g, path, dim_keys[i], dims[i], err);
    if (rc || (rc = get_str(g, path, "arbor.base.sha256", meta->base_sha256, sizeof meta->base_sha256, err)) ||
        (rc = get_str(g, path, "arbor.base.name", meta->base_name, sizeof meta->base_name, err)) ||
        (rc = get_str(g, path, "arbor.train.config", meta->config, sizeof meta->config, err)) ||
        (rc = get_str(g, path, "arbor.train.data_sha256", meta->data_sha256, sizeof meta->data_sha256, err)) ||
        (rc = get_uint(g, path, "arbor.train.seed", &meta->seed, err)) ||
        (rc = get_uint(g, path, "arbor.train.rows", &meta->rows, err)))
        return rc;
    return get_uint(g, path, "arbor.train.heldout_rows", &meta->heldout_rows, err);
}

static int get_tensor(const arb_gguf *g, const char *path, const char *name, uint64_t ne0, uint64_t ne1, float *dst,
                      arb_err *err)
{
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        if (t->name.len != strlen(name) || memcmp(t->name.ptr, name, t->name.len))
            continue;
        uint64_t e1 = t->n_dims > 1 ? t->ne[1] : 1;
        if (t->type != T_F32 || t->ne[0] != ne0 || e1 != ne1 || t->n_dims > 2)
            return ARB_ERR(err, ARB_E_FORMAT, "%s: tensor %s: expected F32 %llu x %llu", path, name,
                           (unsigned long long)ne0, (unsigned long long)ne1);
        memcpy(dst, t->data, ne0 * ne1 * sizeof(float));
        return ARB_OK;
    }
    return ARB_ERR(err, ARB_E_FORMAT, "%s: tensor %s missing", path, name);
}

int arb_heads_load(const char *path, const char *expect_sha256, arb_heads **out, arb_heads_meta *meta,
                   arb_err *err)
{
    *out = NULL;
    memset(meta, 0, sizeof *meta);
    arb_gguf *g = NULL;
    arb_heads *h = NULL;
    int rc = arb_gguf_open(path, &g, err);
    if (rc)
        return rc;
    char arch[64], kind[32];
    uint64_t K = 0, E = 0, V = 0, ranks = 0;
    uint64_t *const dims[4] = {&K, &E, &V, &ranks};
    if ((rc = get_str(g, path, "general.architecture", arch, sizeof arch, err)))
        goto done;
    if (strcmp(arch, "arbor-heads")) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: general.architecture is '%s', not 'arbor-heads'", path, arch);
        goto done;
    }
    if ((rc = get_str(g, path, "arbor.heads.kind", kind, sizeof kind, err)) ||
        (rc = get_common(g, path, dims, meta, err)))
        goto done;
    if (expect_sha256 && strcmp(expect_sha256, meta->base_sha256)) {
        rc = ARB_ERR(err, ARB_E_INVAL,
                     "%s: heads trained for base model %s (sha256 %.16s...), not this model (sha256 %.16s...)", path,
                     meta->base_name, meta->base_sha256, expect_sha256);
        goto done;
    }
    arb_heads_kind hk = !strcmp(kind, "hydra") ? ARB_HEADS_HYDRA : ARB_HEADS_MEDUSA;
    if ((strcmp(kind, "hydra") && strcmp(kind, "medusa")) || K < 1 || K > ARB_HEADS_MAX || E < 1 || E > 1u << 16 ||
        V < 1 || V > 1u << 24 || ranks != ARB_HEADS_RANKS) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: kind '%s', %llu heads, n_embd %llu, n_vocab %llu, ranks %llu unsupported",
                     path, kind, (unsigned long long)K, (unsigned long long)E, (unsigned long long)V,
                     (unsigned long long)ranks);
        goto done;
    }
    if ((rc = arb_heads_new(hk, (int)K, (int)E, (int)V, &h, err)))
        goto done;
    float ra[ARB_HEADS_MAX * ARB_HEADS_RANKS];
    if ((rc = get_f32s(g, path, "arbor.heldout.top1", meta->top1, K, err)) ||
        (rc = get_f32s(g, path, "arbor.heldout.top5", meta->top5, K, err)) ||
        (rc = get_f32s(g, path, "arbor.heldout.rank_acc", ra, K * ARB_HEADS_RANKS, err)))
        goto done;
    for (uint64_t k = 0; k < K; k++)
        memcpy(meta->rank_acc[k], ra + k * ARB_HEADS_RANKS, sizeof meta->rank_acc[k]);
    for (int k = 0; k < (int)K && !rc; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "heads.%d.w", k);
        rc = get_tensor(g, path, nm, (uint64_t)h->d_in[k], E, h->w[k], err);
        snprintf(nm, sizeof nm, "heads.%d.b", k);
        if (!rc)
            rc = get_tensor(g, path, nm, E, 1, h->b[k], err);
        if (!rc && h->r[k]) {
            snprintf(nm, sizeof nm, "heads.%d.r", k);
            rc = get_tensor(g, path, nm, (uint64_t)h->d_in[k], E, h->r[k], err);
            snprintf(nm, sizeof nm, "heads.%d.rb", k);
            if (!rc)
                rc = get_tensor(g, path, nm, E, 1, h->rb[k], err);
        }
    }
done:
    arb_gguf_close(g);
    if (rc) {
        arb_heads_free(h);
        return rc;
    }
    *out = h;
    return ARB_OK;
}

static int get_f32(const arb_gguf *g, const char *path, const char *key, float *out, arb_err *err)
{
    return get_f32s(g, path, key, out, 1, err);
}

int arb_eagle_load(const char *path, const char *expect_sha256, arb_eagle **out, arb_heads_meta *meta, arb_err *err)
{
    *out = NULL;
    memset(meta, 0, sizeof *meta);
    arb_gguf *g = NULL;
    arb_eagle *h = NULL;
    int rc = arb_gguf_open(path, &g, err);
    if (rc)
        return rc;
    char arch[64], kind[32];
    uint64_t K = 0, E = 0, V = 0, ranks = 0, H = 0, KVH = 0, hd = 0, F = 0;
    uint64_t *const dims[4] = {&K, &E, &V, &ranks};
    arb_eagle_cfg c = {0};
    if ((rc = get_str(g, path, "general.architecture", arch, sizeof arch, err)))
        goto done;
    if (strcmp(arch, "arbor-heads")) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: general.architecture is '%s', not 'arbor-heads'", path, arch);
        goto done;
    }
    if ((rc = get_str(g, path, "arbor.heads.kind", kind, sizeof kind, err)))
        goto done;
    if (strcmp(kind, "eagle")) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: arbor.heads.kind is '%s', not 'eagle' (train one with `arbor train eagle`)",
                     path, kind);
        goto done;
    }
    if ((rc = get_common(g, path, dims, meta, err)) ||
        (rc = get_uint(g, path, "arbor.eagle.n_head", &H, err)) ||
        (rc = get_uint(g, path, "arbor.eagle.n_head_kv", &KVH, err)) ||
        (rc = get_uint(g, path, "arbor.eagle.head_dim", &hd, err)) ||
        (rc = get_uint(g, path, "arbor.eagle.n_ff", &F, err)) ||
        (rc = get_f32(g, path, "arbor.eagle.rope_base", &c.rope_base, err)) ||
        (rc = get_f32(g, path, "arbor.eagle.rms_eps", &c.eps, err)))
        goto done;
    if (expect_sha256 && strcmp(expect_sha256, meta->base_sha256)) {
        rc = ARB_ERR(err, ARB_E_INVAL,
                     "%s: heads trained for base model %s (sha256 %.16s...), not this model (sha256 %.16s...)", path,
                     meta->base_name, meta->base_sha256, expect_sha256);
        goto done;
    }
    if (K != 1 || E < 1 || E > 1u << 16 || V < 1 || V > 1u << 24 || ranks != ARB_HEADS_RANKS || H > 1024 ||
        KVH > 1024 || hd > 4096 || F > 1u << 20) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: eagle head with %llu heads, n_embd %llu, n_vocab %llu, ranks %llu, "
                     "n_head %llu, n_ff %llu unsupported", path, (unsigned long long)K, (unsigned long long)E,
                     (unsigned long long)V, (unsigned long long)ranks, (unsigned long long)H, (unsigned long long)F);
        goto done;
    }
    c.E = (int)E, c.V = (int)V, c.H = (int)H, c.KVH = (int)KVH, c.hd = (int)hd, c.F = (int)F;
    if ((rc = arb_eagle_new(&c, &h, err)))
        goto done;
    float ra[ARB_HEADS_RANKS];
    if ((rc = get_f32s(g, path, "arbor.heldout.top1", meta->top1, 1, err)) ||
        (rc = get_f32s(g, path, "arbor.heldout.top5", meta->top5, 1, err)) ||
        (rc = get_f32s(g, path, "arbor.heldout.rank_acc", ra, ARB_HEADS_RANKS, err)))
        goto done;
    memcpy(meta->rank_acc[0], ra, sizeof ra);
    tens t[10];
    eagle_tensors(h, t);
    for (int i = 0; i < 10 && !rc; i++)
        rc = get_tensor(g, path, t[i].name, t[i].ne0, t[i].ne1, (float *)t[i].data, err);
done:
    arb_gguf_close(g);
    if (rc) {
        arb_eagle_free(h);
        return rc;
    }
    *out = h;
    return ARB_OK;
}
