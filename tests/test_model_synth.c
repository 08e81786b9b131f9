/* test_model_synth.c — the engine on tiny synthetic models written by this test:
 * loading (llama / qwen2 / qwen3, tied and separate heads, missing tensors,
 * unknown architectures), and the exactness contract: every node of a random
 * tree gets logits bit-identical (memcmp) to feeding its path one token at a time,
 * and committing a path leaves the cache exactly as a pure AR run would.
 *
 * The models are random (seeded) weights in Q8_0 / Q4_1 / F32 with 2 layers,
 * n_embd 64, 4 heads / 2 KV heads (GQA), head_dim 16, vocab 300.
 * The all-F32 llama (with and without rope_freqs.weight) and qwen2 variants were also
 * run through llama.cpp (c392e5094, F32 KV), and the qwen3 ones (head_dim 16, and 32
 * from attention.key_length) through llama.cpp 4227c9be4 (vendored in
 * llama-cpp-python 0.3.16, which reproduces the older fixtures bit for bit):
 * tests/fixtures/synth_{llama,llama_ropefreqs,qwen2,qwen3,qwen3_hd32}_f32_ref.tsv hold
 * its logits, which arbor matches to ~2e-6 (float summation order, exp polynomial).
 * ARBOR_SYNTH_DUMP=DIR makes those comparisons also write their models to
 * DIR/synth_<variant>_f32.gguf, for regenerating the fixtures with llama.cpp.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
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
    tdesc ts[64];
    int nt = 0;
    const uint64_t hd = o->head_dim ? (uint64_t)o->head_dim : S_HD;
    const uint64_t hkv = o->n_head_kv ? (uint64_t)o->n_head_kv : S_HEAD_KV;
#define T(nm, ty, a, b, nd) add_t(ts, &nt, nm, ty, a, b, nd)
    T("token_embd.weight", ARB_TYPE_Q8_0, S_EMBD, S_VOCAB, 2);
    T("output_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
    if (!o->tied)
        T("output.weight", ARB_TYPE_Q4_1, S_EMBD, S_VOCAB, 2);
    if (o->rope_freqs)
        T("rope_freqs.weight", ARB_TYPE_F32, hd / 2, 1, 1);
    for (int l = 0; l < S_LAYER; l++) {
        char nm[64];
#define TL(s, ty, a, b, nd) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), T(nm, ty, a, b, nd))
        TL("attn_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
        TL("attn_q.weight", ARB_TYPE_Q4_1, S_EMBD, S_HEAD * hd, 2);
        TL("attn_k.weight", ARB_TYPE_Q8_0, S_EMBD, hkv * hd, 2);
        TL("attn_v.weight", ARB_TYPE_F32, S_EMBD, hkv * hd, 2);
        TL("attn_output.weight", ARB_TYPE_Q4_1, S_HEAD * hd, S_EMBD, 2);
        TL("ffn_norm.weight", ARB_TYPE_F32, S_EMBD, 1, 1);
        TL("ffn_gate.weight", ARB_TYPE_Q4_1, S_EMBD, S_FF, 2);
        TL("ffn_up.weight", ARB_TYPE_Q8_0, S_EMBD, S_FF, 2);
        TL("ffn_down.weight", ARB_TYPE_Q4_1, S_FF, S_EMBD, 2);
        if (!strcmp(o->arch, "qwen2")) {
            TL("attn_q.bias", ARB_TYPE_F32, S_HEAD * hd, 1, 1);
            TL("attn_k.bias", ARB_TYPE_F32, hkv * hd, 1, 1);
            TL("attn_v.bias", ARB_TYPE_F32, hkv * hd, 1, 1);
        }
        if (!strcmp(o->arch, "qwen3")) {
            TL("attn_q_norm.weight", ARB_TYPE_F32, hd, 1, 1);
            TL("attn_k_norm.weight", ARB_TYPE_F32, hd, 1, 1);
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

    buf h = {0}, d = {0};
    put_u32(&h, 0x46554747u); /* "GGUF" */
    put_u32(&h, 3);
    put_u64(&h, (uint64_t)nt);
    put_u64(&h, o->head_dim ? 14 : 12);
    char k[96];
    kv_str(&h, "general.architecture", o->arch);
    kv_str(&h, "general.name", "synth");
    kv_str(&h, "tokenizer.ggml.model", "none"); /* lets llama.cpp load the file (no vocab) */
#define KU(s, v) \
    (snprintf(k, sizeof k, "%s.%s%s", o->arch, s, o->drop_key && !strcmp(o->drop_key, s) ? "_absent" : ""), \
     kv_u32(&h, k, v))
    KU("embedding_length", S_EMBD);
    KU("block_count", S_LAYER);
    KU("feed_forward_length", S_FF);
    KU("attention.head_count", S_HEAD);
    KU("attention.head_count_kv", (uint32_t)hkv);
    KU("context_length", S_CTX);
    KU("vocab_size", S_VOCAB);
    if (o->head_dim) {
        KU("attention.key_length", (uint32_t)hd);
        KU("attention.value_length", (uint32_t)hd);
    }
#undef KU
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", o->arch);
    kv_f32(&h, k, 1e-5f);
    snprintf(k, sizeof k, "%s.rope.freq_base", o->arch);
    kv_f32(&h, k, 10000.0f);

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

static arb_model *load_synth(const synth_opts *o, int n_threads)
{
    char *path = write_synth(o);
    arb_load_opts lo = arb_load_default_opts();
    lo.n_threads = n_threads;
    arb_model *m = NULL;
    arb_err err = {0};
    int rc = arb_model_load(path, &lo, &m, &err);
    unlink(path);
    free(path);
    cr_assert_eq(rc, ARB_OK, "load %s: %s", o->arch, err.msg);
    return m;
}

#include "engine_check.h"

/* ---------------- loading ---------------- */

Test(model_synth, loads_each_architecture)
{
    const char *archs[] = {"llama", "qwen2", "qwen3"};
    for (int a = 0; a < 3; a++) {
        synth_opts o = {.arch = archs[a], .tied = a != 1, .seed = 1};
        arb_model *m = load_synth(&o, 1);
        arb_model_info mi;
        arb_model_get_info(m, &mi);
        cr_assert_str_eq(mi.arch, archs[a]);
        cr_assert_str_eq(mi.name, "synth");
        cr_assert_eq(mi.n_vocab, S_VOCAB);
        cr_assert_eq(mi.n_embd, S_EMBD);
        cr_assert_eq(mi.n_layer, S_LAYER);
        cr_assert_eq(mi.n_head, S_HEAD);
        cr_assert_eq(mi.n_head_kv, S_HEAD_KV);
        cr_assert_eq(mi.head_dim, S_HD);
        cr_assert_eq(mi.n_ctx_train, S_CTX);
        cr_assert_eq(mi.bos, -1); /* no tokenizer in these files */
        cr_assert_gt(mi.n_params, (uint64_t)S_VOCAB * S_EMBD);
        arb_model_free(m);
    }
}

Test(model_synth, missing_tensor_is_named)
{
    synth_opts o = {.arch = "llama", .tied = true, .skip = "blk.1.ffn_up.weight", .seed = 2};
    char *path = write_synth(&o);
    arb_model *m = (arb_model *)1;
    arb_err err = {0};
    int rc = arb_model_load(path, NULL, &m, &err);
    cr_assert_eq(rc, ARB_E_NOTFOUND);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "blk.1.ffn_up.weight") && strstr(err.msg, path), "%s", err.msg);
    unlink(path);
    free(path);
}

Test(model_synth, qwen2_requires_biases)
{
    synth_opts o = {.arch = "qwen2", .skip = "blk.0.attn_k.bias", .seed = 2};
    char *path = write_synth(&o);
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, NULL, &m, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "blk.0.attn_k.bias"), "%s", err.msg);
    unlink(path);
    free(path);
}

static void expect_load_error(const synth_opts *o, int code, const char *needle)
{
    char *path = write_synth(o);
    arb_model *m = NULL;
    arb_err err = {0};
    cr_expect_eq(arb_model_load(path, NULL, &m, &err), code, "%s", err.msg);
    cr_expect_null(m);
    cr_expect(strstr(err.msg, needle) && strstr(err.msg, path), "'%s' lacks '%s' or the path", err.msg, needle);
    unlink(path);
    free(path);
}

Test(model_synth, bad_files_are_named)
{
    synth_opts o = {.arch = "llama", .seed = 5, .drop_key = "block_count"};
    expect_load_error(&o, ARB_E_NOTFOUND, "llama.block_count");
    synth_opts o2 = {.arch = "llama", .seed = 5, .reshape = "blk.0.attn_k.weight"};
    expect_load_error(&o2, ARB_E_FORMAT, "blk.0.attn_k.weight");
    synth_opts o3 = {.arch = "llama", .seed = 5, .retype = "blk.1.ffn_down.weight", .retype_to = ARB_TYPE_Q8_1};
    expect_load_error(&o3, ARB_E_UNSUPPORTED, "blk.1.ffn_down.weight");
    synth_opts o4 = {.arch = "llama", .seed = 5, .retype = "output_norm.weight", .retype_to = ARB_TYPE_F16};
    expect_load_error(&o4, ARB_E_UNSUPPORTED, "output_norm.weight");
}

Test(model_synth, unknown_architecture_is_rejected)
{
    synth_opts o = {.arch = "mamba", .seed = 3};
    char *path = write_synth(&o);
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, NULL, &m, &err), ARB_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "mamba"), "%s", err.msg);
    unlink(path);
    free(path);
}

Test(model_synth, bad_arguments_are_rejected)
{
    synth_opts o = {.arch = "llama", .tied = true, .seed = 4};
    arb_model *m = load_synth(&o, 1);
    arb_ctx *c = check_ctx(m, 32, 8, 0, false);
    float *lg = malloc(sizeof(float) * S_VOCAB * 64);
    arb_err err = {0};
    int32_t tok[4] = {1, 2, 3, 4}, par[4] = {-1, 0, 0, 1};
    int32_t badpar[2] = {-1, 1}, badtok[1] = {S_VOCAB};
    cr_assert_eq(arb_eval(c, tok, badpar, 2, lg, NULL, &err), ARB_E_INVAL);
    cr_assert_eq(arb_eval(c, badtok, par, 1, lg, NULL, &err), ARB_E_INVAL);
    cr_assert_eq(arb_eval(c, tok, par, 4, lg, lg, &err), ARB_E_INVAL); /* hidden without want_hidden */
    int32_t many_tok[16] = {0}, tree_par[16];
    for (int i = 0; i < 16; i++)
        tree_par[i] = i == 0 ? -1 : 0;
    cr_assert_eq(arb_eval(c, many_tok, tree_par, 16, lg, NULL, &err), ARB_E_INVAL); /* tree > n_batch_max */
    cr_assert_eq(arb_eval(c, tok, par, 4, lg, NULL, &err), ARB_OK, "%s", err.msg);
    int32_t notpath[2] = {0, 3}; /* 3's parent is 1 */
    cr_assert_eq(arb_commit(c, notpath, 2, &err), ARB_E_INVAL);
    int32_t path[3] = {0, 1, 3};
    cr_assert_eq(arb_commit(c, path, 3, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_past(c), 3);
    cr_assert_eq(arb_commit(c, path, 1, &err), ARB_E_INVAL); /* nothing left to commit */
    int32_t chain_par[32];
    for (int i = 0; i < 32; i++)
        chain_par[i] = i - 1;
    cr_assert_eq(arb_eval(c, many_tok, chain_par, 30, lg, NULL, &err), ARB_E_RANGE); /* 3 + 30 > 32 */
    cr_assert_eq(arb_ctx_truncate(c, 4), ARB_E_RANGE);
    cr_assert_eq(arb_ctx_truncate(c, 1), ARB_OK);
    cr_assert_eq(arb_ctx_n_past(c), 1);
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = S_CTX * 2;
    arb_ctx *c2 = NULL;
    cr_assert_eq(arb_ctx_new(m, &co, &c2, &err), ARB_E_RANGE);
    cr_assert_null(c2);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
}

/* ---------------- exactness ---------------- */

static void tree_trials(const char *arch, bool tied, int n_trees, uint64_t seed, int n_head_kv)
{
    synth_opts o = {.arch = arch, .tied = tied, .seed = seed, .n_head_kv = n_head_kv};
    arb_model *m = load_synth(&o, 1);
    check_stats st = {0};
    uint64_t s = seed * 7919 + 5;
    for (int t = 0; t < n_trees; t++)
        check_random_tree(m, &s, S_VOCAB, 200, &st);
    cr_log_info("%s: %d trees, %d nodes, %d mismatching nodes", arch, st.trees, st.nodes, st.mismatches);
    cr_assert_eq(st.mismatches, 0, "%s: %d of %d nodes differ from AR", arch, st.mismatches, st.nodes);
    arb_model_free(m);
}

/* 60 random trees here (the model suite adds 40 on SmolLM2), plus 10 with one KV head
   for the 4 query heads (attention groups of 3 + 1 heads; decode takes single heads). */
Test(model_synth, tree_logits_equal_ar_llama) { tree_trials("llama", true, 30, 11, 0); }
Test(model_synth, tree_logits_equal_ar_qwen2) { tree_trials("qwen2", false, 15, 12, 0); }
Test(model_synth, tree_logits_equal_ar_qwen3) { tree_trials("qwen3", true, 15, 13, 0); }
Test(model_synth, tree_logits_equal_ar_one_kv_head) { tree_trials("llama", true, 10, 14, 1); }

Test(model_synth, chunked_prefill_equals_ar_and_threads_do_not_matter)
{
    synth_opts o = {.arch = "llama", .seed = 21};
    arb_model *m1 = load_synth(&o, 1), *m2 = load_synth(&o, 2);
    uint64_t s = 99;
    check_chunked_prefill(m1, m2, &s, S_VOCAB, 100, 16);
    arb_model_free(m1);
    arb_model_free(m2);
}

Test(model_synth, commit_then_ar_equals_pure_ar)
{
    synth_opts o = {.arch = "qwen3", .seed = 31};
    arb_model *m = load_synth(&o, 1);
    uint64_t s = 5;
    for (int t = 0; t < 10; t++)
        check_commit(m, &s, S_VOCAB, 100);
    arb_model_free(m);
}

Test(model_synth, n_layer_and_hidden)
{
    synth_opts o = {.arch = "llama", .seed = 41};
    arb_model *m = load_synth(&o, 1);
    uint64_t s = 17;
    check_hidden_and_layers(m, &s, S_VOCAB, S_EMBD);
    arb_model_free(m);
}

Test(model_synth, vocab_only_needs_a_tokenizer)
{
    synth_opts o = {.arch = "llama", .seed = 51};
    char *path = write_synth(&o);
    arb_load_opts lo = arb_load_default_opts();
    lo.vocab_only = true;
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, &lo, &m, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "tokenizer"), "%s", err.msg);
    unlink(path);
    free(path);
}

/* The attention and SwiGLU AVX2 instantiations do the scalar code's operations lane for lane:
   logits are bit-identical with ARBOR_ATTN_SCALAR set (the scalar path). */
static void attention_paths_agree(int n_head_kv)
{
    synth_opts o = {.arch = "qwen2", .seed = 61, .n_head_kv = n_head_kv};
    arb_model *m = load_synth(&o, 1);
    enum { N = 40 };
    int32_t tok[N], par[N];
    uint64_t s = 3;
    random_tree(&s, N, S_VOCAB, tok, par);
    float *a = malloc(sizeof(float) * S_VOCAB * 100), *b = malloc(sizeof(float) * S_VOCAB * 100);
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            setenv("ARBOR_ATTN_SCALAR", "1", 1);
        arb_ctx *c = check_ctx(m, 256, 64, 0, false);
        int32_t pre[100], pp[100];
        for (int i = 0; i < 100; i++) {
            pre[i] = (i * 37) % S_VOCAB;
            pp[i] = i - 1;
        }
        check_eval(c, pre, pp, 100, pass ? b : a, NULL); /* a 100-key prefix, then the tree */
        check_commit_chain(c, 100);
        check_eval(c, tok, par, N, pass ? b : a, NULL);
        arb_ctx_free(c);
    }
    unsetenv("ARBOR_ATTN_SCALAR");
    cr_assert(memcmp(a, b, sizeof(float) * S_VOCAB * N) == 0);
    free(a);
    free(b);
    arb_model_free(m);
}
Test(model_synth, attention_isa_paths_agree) { attention_paths_agree(0); }
Test(model_synth, attention_isa_paths_agree_one_kv_head) { attention_paths_agree(1); }

/* llama.cpp's logits for the all-F32 synthetic models (see the file comment); variant
   names the fixture tests/fixtures/synth_<variant>_f32_ref.tsv and the dumped model. */
static void compare_llama_cpp(const char *variant, synth_opts o)
{
    char name[64], path[1024];
    snprintf(name, sizeof name, "synth_%s_f32", variant);
    o.tied = true;
    o.seed = 7;
    o.all_f32 = true;
    o.dump_as = name;
    arb_model *m = load_synth(&o, 1);
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/%s_ref.tsv", root ? root : ".", name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    static char line[16384];
    int32_t tok[64], par[64];
    int n = 0, nl = 0;
    float ref[S_VOCAB];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        if (!strncmp(line, "tokens\t", 7))
            for (p += 7; n < 64 && *p && *p != '\n'; n++, p += *p == ',') {
                tok[n] = (int32_t)strtol(p, &p, 10);
                par[n] = n - 1;
            }
        else if (!strncmp(line, "logits\t", 7))
            for (p += 7; nl < S_VOCAB && *p && *p != '\n'; nl++, p += *p == ',')
                ref[nl] = strtof(p, &p);
    }
    fclose(f);
    cr_assert(n > 0 && nl == S_VOCAB, "%s: %d tokens, %d logits", path, n, nl);
    arb_ctx *c = check_ctx(m, 64, 64, 0, false);
    float *lg = malloc(sizeof(float) * S_VOCAB * n);
    check_eval(c, tok, par, n, lg, NULL);
    double md = 0;
    for (int j = 0; j < S_VOCAB; j++)
        md = fmax(md, fabs((double)lg[(size_t)(n - 1) * S_VOCAB + j] - ref[j]));
    cr_log_info("%s vs llama.cpp: max |dlogit| %.3g", variant, md);
    cr_assert_lt(md, 2e-5, "%s: max |dlogit| %.3g vs llama.cpp", variant, md);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
}

Test(model_synth, llama_matches_llama_cpp_f32) { compare_llama_cpp("llama", (synth_opts){.arch = "llama"}); }
Test(model_synth, qwen2_matches_llama_cpp_f32) { compare_llama_cpp("qwen2", (synth_opts){.arch = "qwen2"}); }
Test(model_synth, qwen3_matches_llama_cpp_f32) { compare_llama_cpp("qwen3", (synth_opts){.arch = "qwen3"}); }
/* Llama-3.1-style rope frequency factors (rope_freqs.weight) */
Test(model_synth, llama_rope_freqs_matches_llama_cpp_f32)
{
    compare_llama_cpp("llama_ropefreqs", (synth_opts){.arch = "llama", .rope_freqs = true});
}
/* head_dim 32 from attention.key_length, n_head * head_dim = 128 != n_embd = 64, as in
   Qwen3 (0.6B: 16 x 128 over n_embd 1024) */
Test(model_synth, qwen3_key_length_matches_llama_cpp_f32)
{
    compare_llama_cpp("qwen3_hd32", (synth_opts){.arch = "qwen3", .head_dim = 32});
}

/* ---------------- no allocation in the decode loop ----------------
   Test-only malloc interposition (glibc's __libc_* entry points) counting calls while
   armed; skipped under ASan, which owns malloc. */
#if !defined(__SANITIZE_ADDRESS__)
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
static _Atomic long alloc_count;
static _Atomic int alloc_armed;
void *malloc(size_t n)
{
    if (alloc_armed)
        alloc_count++;
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    if (alloc_armed)
        alloc_count++;
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    if (alloc_armed)
        alloc_count++;
    return __libc_realloc(p, n);
}

Test(model_synth, eval_and_commit_allocate_nothing)
{
    synth_opts o = {.arch = "qwen3", .seed = 71};
    arb_model *m = load_synth(&o, 2);
    arb_ctx *c = check_ctx(m, 256, 16, 0, true);
    float *lg = malloc(sizeof(float) * S_VOCAB * 100), *hid = malloc(sizeof(float) * S_EMBD * 100);
    int32_t tok[100], par[100], path[100];
    uint64_t s = 9;
    for (int i = 0; i < 100; i++) {
        tok[i] = rnd(&s, S_VOCAB);
        par[i] = i - 1;
        path[i] = i;
    }
    arb_err err = {0};
    alloc_count = 0;
    alloc_armed = 1;
    int rc = arb_eval(c, tok, par, 40, lg, hid, &err); /* chunked prefill */
    rc |= arb_commit(c, path, 40, &err);
    for (int step = 0; step < 10; step++) {
        random_tree(&s, 16, S_VOCAB, tok, par);
        rc |= arb_eval(c, tok, par, 16, lg, hid, &err);
        rc |= arb_commit(c, path, 1, &err);
    }
    alloc_armed = 0;
    cr_assert_eq(rc, ARB_OK, "%s", err.msg);
    cr_assert_eq(alloc_count, 0, "%ld allocations in eval/commit", (long)alloc_count);
    alloc_armed = 1; /* the hook is live: creating a context does allocate */
    arb_ctx *c2 = check_ctx(m, 64, 8, 0, false);
    alloc_armed = 0;
    cr_assert_gt(alloc_count, 0);
    arb_ctx_free(c2);
    free(lg);
    free(hid);
    arb_ctx_free(c);
    arb_model_free(m);
}
#endif

/* arb_prefill = chain eval + commit, bit for bit (last row's logits, and what follows). */
Test(model_synth, prefill_equals_eval_commit)
{
    synth_opts o = {.arch = "llama", .seed = 81};
    arb_model *m = load_synth(&o, 1);
    enum { N = 100 };
    int32_t tok[N + 1];
    uint64_t s = 4;
    for (int i = 0; i <= N; i++)
        tok[i] = rnd(&s, S_VOCAB);
    arb_ctx *a = check_ctx(m, 256, 16, 0, false), *b = check_ctx(m, 256, 128, 0, false);
    float *la = malloc(sizeof(float) * S_VOCAB), *lb = malloc(sizeof(float) * S_VOCAB * N);
    arb_err err = {0};
    cr_assert_eq(arb_prefill(a, tok, 7, NULL, &err), ARB_OK, "%s", err.msg); /* no logits wanted */
    cr_assert_eq(arb_prefill(a, tok + 7, N - 7, la, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_past(a), N);
    check_prefill(b, tok, N, lb);
    cr_assert(memcmp(la, lb + (size_t)(N - 1) * S_VOCAB, sizeof(float) * S_VOCAB) == 0);
    const int32_t root = -1;
    check_eval(a, tok + N, &root, 1, la, NULL);
    check_eval(b, tok + N, &root, 1, lb, NULL);
    cr_assert(memcmp(la, lb, sizeof(float) * S_VOCAB) == 0);
    cr_assert_eq(arb_prefill(a, tok, 200, la, &err), ARB_E_RANGE);
    int32_t bad = S_VOCAB;
    cr_assert_eq(arb_prefill(a, &bad, 1, la, &err), ARB_E_INVAL);
    free(la);
    free(lb);
    arb_ctx_free(a);
    arb_ctx_free(b);
    arb_model_free(m);
}

/* arb_ctx_parallel_for runs fn once for every index (on 1 and 3 threads), each call
   seeing n, and n = 0 runs nothing. */
typedef struct pf_count {
    _Atomic int hits[97];
    _Atomic int bad_n;
} pf_count;

static void pf_fn(void *ud, int i, int n)
{
    pf_count *pc = ud;
    if (n != 97 || i < 0 || i >= 97)
        atomic_fetch_add(&pc->bad_n, 1);
    else
        atomic_fetch_add(&pc->hits[i], 1);
}

Test(model_synth, ctx_parallel_for_runs_each_index_once)
{
    synth_opts o = {.arch = "llama", .seed = 5};
    for (int th = 1; th <= 3; th += 2) {
        arb_model *m = load_synth(&o, th);
        arb_ctx *c = check_ctx(m, 64, 16, 0, false);
        for (int rep = 0; rep < 20; rep++) {
            pf_count pc = {0};
            cr_assert_eq(arb_ctx_parallel_for(c, 97, pf_fn, &pc), ARB_OK);
            cr_assert_eq(atomic_load(&pc.bad_n), 0);
            for (int i = 0; i < 97; i++)
                cr_assert_eq(atomic_load(&pc.hits[i]), 1, "%d threads: index %d ran %d times", th, i,
                             atomic_load(&pc.hits[i]));
        }
        pf_count none = {0};
        cr_assert_eq(arb_ctx_parallel_for(c, 0, pf_fn, &none), ARB_OK);
        cr_assert_eq(atomic_load(&none.bad_n), 0);
        arb_ctx_free(c);
        arb_model_free(m);
    }
}
