/* tiny_models.h — tiny synthetic GGUF models for the engine tests (header-only, test
 * code, Criterion asserts): random seeded weights in Q8_0 / Q4_1 / Q5_0 / F32, 2 layers (or n_layer),
 * n_embd 64, 4 heads / 2 KV heads, head_dim 16, vocab 300 (test_model_synth.c's
 * header says which variants were checked against llama.cpp).
 *
 *     synth_opts o = {.arch = "qwen3", .seed = 7};
 *     arb_model *m = load_synth(&o, 1);                 // CPU, one thread
 *     arb_model *g = load_synth_opts(&o, &gpu_opts);    // any load options
 */
#ifndef ARB_TEST_TINY_MODELS_H
#define ARB_TEST_TINY_MODELS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "quant.h"

/* ---------------- a minimal GGUF v3 writer ---------------- */

typedef struct buf { uint8_t *p; size_t n, cap; } buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 1024;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }
static void kv_str(buf *b, const char *k, const char *v) { put_str(b, k); put_u32(b, 8); put_str(b, v); }
static void kv_u32(buf *b, const char *k, uint32_t v) { put_str(b, k); put_u32(b, 4); put_u32(b, v); }
static void kv_f32(buf *b, const char *k, float v) { put_str(b, k); put_u32(b, 6); put(b, &v, 4); }

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_unif(uint64_t *s) { return (float)((rng_next(s) >> 11) * (1.0 / 9007199254740992.0)); }

typedef struct tdesc { char name[64]; uint32_t type; uint64_t ne0, ne1; int n_dims; } tdesc;

/* Random weights with std about 1/sqrt(ne0) (or 1 +- 0.1 for norm vectors). */
static void gen_tensor(buf *d, const tdesc *t, uint64_t *s)
{
    const uint64_t n = t->ne0 * t->ne1;
    const float sd = 1.0f / sqrtf((float)t->ne0);
    if (t->type == ARB_TYPE_F32) {
        bool norm = strstr(t->name, "norm") != NULL, freqs = strstr(t->name, "rope_freqs") != NULL;
        for (uint64_t i = 0; i < n; i++) {
            float v = freqs ? 1.0f + 3.0f * rng_unif(s)
                    : norm  ? 1.0f + 0.2f * (rng_unif(s) - 0.5f)
                            : sd * 3.4f * (rng_unif(s) - 0.5f);
            put(d, &v, 4);
        }
    } else if (t->type == ARB_TYPE_Q8_0) {
        for (uint64_t i = 0; i < n / 32; i++) {
            uint16_t dd = arb_f32_to_fp16(sd / 73.0f * (0.8f + 0.4f * rng_unif(s)));
            put(d, &dd, 2);
            for (int j = 0; j < 32; j++) {
                int8_t q = (int8_t)((int)(rng_next(s) % 255) - 127);
                put(d, &q, 1);
            }
        }
    } else if (t->type == ARB_TYPE_Q5_0) { /* d, then random 5-bit values (qh and nibbles) */
        for (uint64_t i = 0; i < n / 32; i++) {
            uint16_t dd = arb_f32_to_fp16(sd / 9.0f * (0.8f + 0.4f * rng_unif(s)));
            put(d, &dd, 2);
            for (int j = 0; j < 20; j++) {
                uint8_t q = (uint8_t)rng_next(s);
                put(d, &q, 1);
            }
        }
    } else if (t->type != ARB_TYPE_Q4_1) { /* only for rejection tests: random bytes */
        for (uint64_t i = 0; i < arb_type_row_bytes(t->type, t->ne0) * t->ne1; i++) {
            uint8_t q = (uint8_t)rng_next(s);
            put(d, &q, 1);
        }
    } else { /* Q4_1 */
        for (uint64_t i = 0; i < n / 32; i++) {
            float dd = sd / 4.6f * (0.8f + 0.4f * rng_unif(s));
            uint16_t h[2] = {arb_f32_to_fp16(dd), arb_f32_to_fp16(-7.5f * dd)};
            put(d, h, 4);
            for (int j = 0; j < 16; j++) {
                uint8_t q = (uint8_t)rng_next(s);
                put(d, &q, 1);
            }
        }
    }
}

typedef struct synth_opts {
    const char *arch;  /* "llama", "qwen2", "qwen3", or anything (unknown-arch test) */
    bool tied;         /* no output.weight */
    const char *skip;  /* a tensor name to leave out (missing-tensor test), or NULL */
    uint64_t seed;
    bool all_f32;      /* every tensor F32 (the llama.cpp comparison: no quantization) */
    const char *retype; /* a tensor stored as retype_to instead (bytes are random) */
    uint32_t retype_to;
    const char *reshape; /* a tensor whose second dimension is doubled */
    const char *drop_key; /* an <arch>.<key> written under another name */
    bool rope_freqs;   /* add rope_freqs.weight (Llama-3.1 frequency factors, 1..4) */
    int head_dim;      /* 0: n_embd / n_head; else written as attention.key_length / value_length */
    const char *dump_as; /* with $ARBOR_SYNTH_DUMP set, also written to $ARBOR_SYNTH_DUMP/<dump_as>.gguf */
    int n_head_kv;     /* 0: S_HEAD_KV (GQA groups of 2); 1: one KV head for all 4 query heads */
    int n_layer;       /* 0: S_LAYER */
    int swa;           /* gemma3: attention.sliding_window (0: key absent, every layer global) */
    bool swa_base_same; /* gemma3: rope.freq_base_swa written equal to rope.freq_base */
    int n_ctx;         /* 0: S_CTX (the context_length written) */
    bool up_like_gate; /* ffn_up in ffn_gate's type (Q4_1), so one GPU kernel serves both (k_gemv_glu) */
    bool kv_like_q;    /* attn_k and attn_v in attn_q's type (Q4_1): one GPU launch for Q, K, V */
} synth_opts;

enum { S_EMBD = 64, S_LAYER = 2, S_HEAD = 4, S_HEAD_KV = 2, S_HD = 16, S_FF = 128, S_VOCAB = 300, S_CTX = 512 };

static void add_t(tdesc *ts, int *nt, const char *nm, uint32_t ty, uint64_t a, uint64_t b, int nd)
{
    snprintf(ts[*nt].name, sizeof ts[*nt].name, "%s", nm);
    ts[*nt].type = ty;
    ts[*nt].ne0 = a;
    ts[*nt].ne1 = b;
    ts[*nt].n_dims = nd;
    (*nt)++;
}

/* Write the model to a fresh temp file; returns its path (caller unlinks and frees). */
static void write_file(const char *path, const buf *h, const buf *d)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    bool ok = fwrite(h->p, 1, h->n, f) == h->n && fwrite(d->p, 1, d->n, f) == d->n;
    ok = fclose(f) == 0 && ok;
    cr_assert(ok, "cannot write %s", path);
}

static char *write_synth(const synth_opts *o)
{
    tdesc ts[256];
    int nt = 0;
    const int n_layer = o->n_layer ? o->n_layer : S_LAYER;
    const bool gemma = !strcmp(o->arch, "gemma3");
    cr_assert_leq(n_layer, 16);
    const uint64_t hd = o->head_dim ? (uint64_t)o->head_dim : S_HD;
    const uint64_t hkv = o->n_head_kv ? (uint64_t)o->n_head_kv : S_HEAD_KV;
#define T(nm, ty, a, b, nd) add_t(ts, &nt, nm, ty, a, b, nd)
    T("token_embd.weight", ARB_TYPE_Q8_0, S_EMBD, S_VOCAB, 2);
    T("output_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
    if (!o->tied)
        T("output.weight", ARB_TYPE_Q4_1, S_EMBD, S_VOCAB, 2);
    if (o->rope_freqs)
        T("rope_freqs.weight", ARB_TYPE_F32, hd / 2, 1, 1);
    for (int l = 0; l < n_layer; l++) {
        char nm[64];
#define TL(s, ty, a, b, nd) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), T(nm, ty, a, b, nd))
        TL("attn_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
        /* gemma3: Q5_0 where Gemma-3 270M's Q4_K_M file has it (640-wide rows) */
        TL("attn_q.weight", gemma ? ARB_TYPE_Q5_0 : ARB_TYPE_Q4_1, S_EMBD, S_HEAD * hd, 2);
        TL("attn_k.weight", o->kv_like_q && !gemma ? ARB_TYPE_Q4_1 : ARB_TYPE_Q8_0, S_EMBD, hkv * hd, 2);
        TL("attn_v.weight", o->kv_like_q && !gemma ? ARB_TYPE_Q4_1 : ARB_TYPE_F32, S_EMBD, hkv * hd, 2);
        TL("attn_output.weight", ARB_TYPE_Q4_1, S_HEAD * hd, S_EMBD, 2);
        TL("ffn_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
        TL("ffn_gate.weight", gemma ? ARB_TYPE_Q5_0 : ARB_TYPE_Q4_1, S_EMBD, S_FF, 2);
        TL("ffn_up.weight", o->up_like_gate && !gemma ? ARB_TYPE_Q4_1 : ARB_TYPE_Q8_0, S_EMBD, S_FF, 2);
        TL("ffn_down.weight", ARB_TYPE_Q4_1, S_FF, S_EMBD, 2);
        if (!strcmp(o->arch, "qwen2")) {
            TL("attn_q.bias", ARB_TYPE_F32, S_HEAD * hd, 1, 1);
            TL("attn_k.bias", ARB_TYPE_F32, hkv * hd, 1, 1);
            TL("attn_v.bias", ARB_TYPE_F32, hkv * hd, 1, 1);
        }
        if (!strcmp(o->arch, "qwen3") || gemma) {
            TL("attn_q_norm.weight", ARB_TYPE_F32, hd, 1, 1);
            TL("attn_k_norm.weight", ARB_TYPE_F32, hd, 1, 1);
        }
        if (gemma) {
            TL("post_attention_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
            TL("post_ffw_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
        }
#undef TL
    }
#undef T
    if (o->all_f32)
        for (int i = 0; i < nt; i++)
            ts[i].type = ARB_TYPE_F32;
    for (int i = 0; i < nt; i++) {
        if (o->retype && !strcmp(ts[i].name, o->retype))
            ts[i].type = o->retype_to;
        if (o->reshape && !strcmp(ts[i].name, o->reshape))
            ts[i].ne1 *= 2;
    }
    if (o->skip)
        for (int i = 0; i < nt; i++)
            if (!strcmp(ts[i].name, o->skip))
                ts[i--] = ts[--nt];

    buf h = {0}, d = {0}, kv = {0};
    int n_kv = 0;
    char k[96];
    kv_str(&kv, "general.architecture", o->arch), n_kv++;
    kv_str(&kv, "general.name", "synth"), n_kv++;
    kv_str(&kv, "tokenizer.ggml.model", "none"), n_kv++; /* lets llama.cpp load the file (no vocab) */
#define KU(s, v) \
    (snprintf(k, sizeof k, "%s.%s%s", o->arch, s, o->drop_key && !strcmp(o->drop_key, s) ? "_absent" : ""), \
     kv_u32(&kv, k, v), n_kv++)
    KU("embedding_length", S_EMBD);
    KU("block_count", (uint32_t)n_layer);
    KU("feed_forward_length", S_FF);
    KU("attention.head_count", S_HEAD);
    KU("attention.head_count_kv", (uint32_t)hkv);
    KU("context_length", (uint32_t)(o->n_ctx ? o->n_ctx : S_CTX));
    KU("vocab_size", S_VOCAB);
    if (o->head_dim) {
        KU("attention.key_length", (uint32_t)hd);
        KU("attention.value_length", (uint32_t)hd);
    }
    if (o->swa)
        KU("attention.sliding_window", (uint32_t)o->swa);
#undef KU
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", o->arch);
    kv_f32(&kv, k, 1e-5f), n_kv++;
    /* gemma3: global layers at base 1e6, local ones at rope.freq_base_swa (default 10000) */
    snprintf(k, sizeof k, "%s.rope.freq_base", o->arch);
    kv_f32(&kv, k, gemma ? 1e6f : 10000.0f), n_kv++;
    if (o->swa_base_same) {
        snprintf(k, sizeof k, "%s.rope.freq_base_swa", o->arch);
        kv_f32(&kv, k, 1e6f), n_kv++;
    }
    put_u32(&h, 0x46554747u); /* "GGUF" */
    put_u32(&h, 3);
    put_u64(&h, (uint64_t)nt);
    put_u64(&h, (uint64_t)n_kv);
    put(&h, kv.p, kv.n);
    free(kv.p);

    uint64_t s = o->seed * 2654435761u + 1;
    for (int i = 0; i < nt; i++) {
        while (d.n % 32)
            put(&d, "", 1);
        put_str(&h, ts[i].name);
        put_u32(&h, (uint32_t)ts[i].n_dims);
        put_u64(&h, ts[i].ne0);
        if (ts[i].n_dims == 2)
            put_u64(&h, ts[i].ne1);
        put_u32(&h, ts[i].type);
        put_u64(&h, d.n);
        gen_tensor(&d, &ts[i], &s);
    }
    while (h.n % 32)
        put(&h, "", 1);

    char *path = strdup("/tmp/arb_synth_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    write_file(path, &h, &d);
    const char *dump = getenv("ARBOR_SYNTH_DUMP");
    if (dump && *dump && o->dump_as) {
        char dp[1024];
        snprintf(dp, sizeof dp, "%s/%s.gguf", dump, o->dump_as);
        write_file(dp, &h, &d);
    }
    free(h.p);
    free(d.p);
    return path;
}

/* Write, load with lo, unlink. */
static arb_model *load_synth_opts(const synth_opts *o, const arb_load_opts *lo)
{
    char *path = write_synth(o);
    arb_model *m = NULL;
    arb_err err = {0};
    int rc = arb_model_load(path, lo, &m, &err);
    unlink(path);
    free(path);
    cr_assert_eq(rc, ARB_OK, "load %s: %s", o->arch, err.msg);
    return m;
}

static inline arb_model *load_synth(const synth_opts *o, int n_threads)
{
    arb_load_opts lo = arb_load_default_opts();
    lo.n_threads = n_threads;
    return load_synth_opts(o, &lo);
}

#endif
