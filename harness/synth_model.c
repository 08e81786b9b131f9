/* synth_model.c — random-weight GGUF files of real model shapes (see synth_model.h). */
#include "synth_model.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct shape {
    const char *name, *arch;
    int n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab;
    float rope_base;
} shape;

static const shape shapes[] = {
    {"tiny", "llama", 256, 2, 4, 2, 512, 1000, 10000.0f}, /* tests: K-quant rows, small */
    /* tests: rows of 136 and 144 blocks of 32, so the GPU GEMV runs its 4-blocks-per-lane
       loop (128 blocks) and its tail on one row */
    {"wide", "llama", 4352, 1, 34, 2, 4608, 1000, 10000.0f},
    {"llama-1b", "llama", 2048, 16, 32, 8, 8192, 128256, 500000.0f},
    {"llama-3b", "llama", 3072, 28, 24, 8, 8192, 128256, 500000.0f},
    {"llama-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 500000.0f},
    {"qwen2-7b", "qwen2", 3584, 28, 28, 4, 18944, 152064, 1000000.0f},
    {"smollm2-135m", "llama", 576, 30, 9, 3, 1536, 49152, 100000.0f},
};

typedef struct qtype { const char *name; uint32_t id; int blk_elems, blk_bytes; } qtype;
static const qtype qtypes[] = {
    {"q4_0", 2, 32, 18}, {"q4_1", 3, 32, 20}, {"q8_0", 8, 32, 34},
    {"q4_k", 12, 256, 144}, {"q5_k", 13, 256, 176}, {"q6_k", 14, 256, 210}, {"f16", 1, 1, 2},
    /* widened at load (engine/model.c): Q5_1/Q2_K to F32, Q3_K to Q6_K, IQ4_NL/IQ4_XS to Q8_0 */
    {"q5_1", 7, 32, 24}, {"q2_k", 10, 256, 84}, {"q3_k", 11, 256, 110}, {"iq4_nl", 20, 32, 18},
    {"iq4_xs", 23, 256, 136},
};

typedef struct wr {
    FILE *f;
    uint64_t rng;
    int io_err;
} wr;

static void put(wr *w, const void *p, size_t n)
{
    if (!w->io_err && fwrite(p, 1, n, w->f) != n)
        w->io_err = errno ? errno : EIO;
}
static void put_u32(wr *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(wr *w, uint64_t v) { put(w, &v, 8); }
static void put_str(wr *w, const char *s) { put_u64(w, strlen(s)); put(w, s, strlen(s)); }
static void kv_str(wr *w, const char *k, const char *v) { put_str(w, k); put_u32(w, 8); put_str(w, v); }
static void kv_u32(wr *w, const char *k, uint32_t v) { put_str(w, k); put_u32(w, 4); put_u32(w, v); }
static void kv_f32(wr *w, const char *k, float v) { put_str(w, k); put_u32(w, 6); put(w, &v, 4); }

static uint64_t rnd(wr *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* IEEE half of a normal float in half range (the scales written here are). */
static uint16_t to_half(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t sign = (u >> 16) & 0x8000;
    const int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) { /* fp16 subnormal (truncated, like the normal case): Q5_K/Q6_K scales of
                     wide rows land here; flushing them to zero made those matrices all zero */
        const int sh = 14 - e;
        return (uint16_t)(sign | (sh > 24 ? 0u : (((u & 0x7fffffu) | 0x800000u) >> sh)));
    }
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((u >> 13) & 0x3ff));
}

/* type: as written; gen: the block type whose random bytes are drawn (differs only in a
   dequantized reference file, where type is F32). */
typedef struct tensor { char name[64]; uint32_t type, gen; uint64_t ne0, ne1; int n_dims; } tensor;

static uint64_t tensor_bytes(const tensor *t)
{
    if (t->type == 0)
        return t->ne0 * t->ne1 * 4;
    for (size_t i = 0; i < sizeof qtypes / sizeof qtypes[0]; i++)
        if (qtypes[i].id == t->type)
            return t->ne0 / (uint64_t)qtypes[i].blk_elems * (uint64_t)qtypes[i].blk_bytes * t->ne1;
    return 0;
}

/* Random data: weights of std about 1/sqrt(ne0), norms near 1, biases small. */
static void gen(wr *w, const tensor *t)
{
    const float sd = 1.0f / sqrtf((float)t->ne0);
    uint8_t buf[4096];
    float deq[4096 / 84 * 256]; /* the densest type (Q2_K: 256 elements in 84 bytes), 48 KiB */
    if (t->gen == 0) {
        const bool norm = strstr(t->name, "norm") != NULL;
        for (uint64_t i = 0; i < t->ne0 * t->ne1; i++) {
            const float u = (float)(rnd(w) >> 40) / (float)(1 << 24);
            const float v = norm ? 1.0f + 0.2f * (u - 0.5f) : 0.1f * sd * (u - 0.5f);
            put(w, &v, 4);
        }
        return;
    }
    const qtype *q = NULL;
    for (size_t i = 0; i < sizeof qtypes / sizeof qtypes[0]; i++)
        q = qtypes[i].id == t->gen ? &qtypes[i] : q;
    const tensor as_drawn = {.type = t->gen, .ne0 = t->ne0, .ne1 = t->ne1};
    const uint64_t total = tensor_bytes(&as_drawn);
    const int bb = q->blk_bytes;
    const uint16_t d = to_half(q->id == 8 ? sd / 73.0f : q->id == 1 ? 0 : sd / 4.6f);
    for (uint64_t off = 0; off < total;) {
        int n = 0;
        while (n + bb <= (int)sizeof buf && off + (uint64_t)n < total) {
            uint8_t *b = buf + n;
            for (int k = 0; k < bb; k += 8) {
                const uint64_t r = rnd(w);
                memcpy(b + k, &r, bb - k < 8 ? (size_t)(bb - k) : 8);
            }
            switch (q->id) {
            case 1: /* F16: one element; a random half in +-2 sd */
                memcpy(b, &(uint16_t){to_half(sd * 4.0f * ((float)(b[0] & 0xff) / 255.0f - 0.5f) + 1e-6f)}, 2);
                break;
            case 2: case 8: memcpy(b, &d, 2); break;                       /* Q4_0, Q8_0: d */
            case 3: memcpy(b, &d, 2); memcpy(b + 2, &(uint16_t){to_half(-7.5f * sd / 4.6f)}, 2); break;
            case 12: case 13: /* Q4_K, Q5_K: d, dmin; 6-bit scales (Q5_K codes reach 31: half the d) */
                for (int k = 4; k < 16; k++) b[k] &= 0x3f; /* small scales and mins */
                memcpy(b, &(uint16_t){to_half(sd / (q->id == 13 ? 600.0f : 300.0f))}, 2);
                /* Q5_K: mean code 15.5 x mean scale 31.5 x d against mean min 31.5 x dmin: dmin =
                   15.5 d keeps the weights centred (Q4_K keeps its earlier, biased values) */
                memcpy(b + 2, &(uint16_t){to_half(q->id == 13 ? sd * 15.5f / 600.0f : sd / 600.0f)}, 2);
                break;
            case 14: memcpy(b + 208, &(uint16_t){to_half(sd / 900.0f)}, 2); /* Q6_K: d (scales random int8) */
                break;
            case 7: /* Q5_1: d, m (codes 0..31 centred by m = -15.5 d) */
                memcpy(b, &(uint16_t){to_half(sd / 9.2f)}, 2);
                memcpy(b + 2, &(uint16_t){to_half(-15.5f * sd / 9.2f)}, 2);
                break;
            case 10: /* Q2_K: d, dmin (scale and min nibbles random: mean 7.5 x code 1.5 against 7.5 dmin) */
                memcpy(b + 80, &(uint16_t){to_half(sd / 20.0f)}, 2);
                memcpy(b + 82, &(uint16_t){to_half(1.5f * sd / 20.0f)}, 2);
                break;
            case 11: memcpy(b + 108, &(uint16_t){to_half(sd / 60.0f)}, 2); break; /* Q3_K: d (scales -32..31) */
            case 20: memcpy(b, &(uint16_t){to_half(sd / 73.0f)}, 2); break;       /* IQ4_NL: d (values to 127) */
            case 23: memcpy(b, &(uint16_t){to_half(sd / 1260.0f)}, 2); break;     /* IQ4_XS: d (scales -32..31) */
            }
            n += bb;
        }
        if (t->type == t->gen) {
            put(w, buf, (size_t)n);
        } else { /* the reference file: the same blocks, dequantized by the engine */
            const size_t elems = (size_t)(n / bb) * (size_t)q->blk_elems;
            arb_dequantize(q->id, buf, deq, elems, NULL);
            put(w, deq, elems * sizeof(float));
        }
        off += (uint64_t)n;
    }
}

int arb_synth_model_write(const char *shape_name, const char *type_name, int layers, unsigned long long seed,
                          const char *out, bool progress, bool f32_reference, arb_err *err)
{
    const shape *S = NULL;
    const qtype *Q = NULL;
    for (size_t i = 0; shape_name && i < sizeof shapes / sizeof shapes[0]; i++)
        S = !strcmp(shapes[i].name, shape_name) ? &shapes[i] : S;
    for (size_t i = 0; i < sizeof qtypes / sizeof qtypes[0]; i++)
        Q = !strcmp(qtypes[i].name, type_name) ? &qtypes[i] : Q;
    if (!S)
        return ARB_ERR(err, ARB_E_INVAL, "synth-model: shape '%s' unknown (%s)", shape_name ? shape_name : "",
                       ARB_SYNTH_SHAPES);
    if (!Q)
        return ARB_ERR(err, ARB_E_INVAL, "synth-model: type '%s' unknown (%s)", type_name, ARB_SYNTH_TYPES);
    const int L = layers && layers < S->n_layer ? layers : S->n_layer;
    const uint64_t E = (uint64_t)S->n_embd, hd = E / (uint64_t)S->n_head, qd = E;
    const uint64_t kvd = hd * (uint64_t)S->n_head_kv, F = (uint64_t)S->n_ff, V = (uint64_t)S->n_vocab;
    const bool qwen = !strcmp(S->arch, "qwen2");
    tensor *ts = calloc((size_t)(4 + 12 * L), sizeof *ts);
    if (!ts)
        return ARB_ERR(err, ARB_E_NOMEM, "synth-model: out of memory");
    int nt = 0;
#define T(nm, ty, a, b, nd) (snprintf(ts[nt].name, sizeof ts[nt].name, "%s", nm), ts[nt].gen = ty, \
                             ts[nt].type = f32_reference ? 0 : ty, \
                             ts[nt].ne0 = a, ts[nt].ne1 = b, ts[nt].n_dims = nd, nt++)
    /* K-quants need rows of 256: the embedding and head of every shape here qualify. */
    T("token_embd.weight", Q->id, E, V, 2);
    T("output_norm.weight", 0, E, 1, 1);
    T("output.weight", Q->id, E, V, 2);
    for (int l = 0; l < L; l++) {
        char nm[64];
#define TL(s, ty, a, b, nd) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), T(nm, ty, a, b, nd))
        TL("attn_norm.weight", 0, E, 1, 1);
        TL("attn_q.weight", Q->id, E, qd, 2);
        TL("attn_k.weight", Q->id, E, kvd, 2);
        TL("attn_v.weight", Q->id, E, kvd, 2);
        TL("attn_output.weight", Q->id, qd, E, 2);
        TL("ffn_norm.weight", 0, E, 1, 1);
        TL("ffn_gate.weight", Q->id, E, F, 2);
        TL("ffn_up.weight", Q->id, E, F, 2);
        TL("ffn_down.weight", Q->id, F, E, 2);
        if (qwen) {
            TL("attn_q.bias", 0, qd, 1, 1);
            TL("attn_k.bias", 0, kvd, 1, 1);
            TL("attn_v.bias", 0, kvd, 1, 1);
        }
#undef TL
    }
#undef T
    for (int i = 0; i < nt; i++)
        if (ts[i].gen && ts[i].ne0 % (uint64_t)Q->blk_elems) {
            const int rc = ARB_ERR(err, ARB_E_INVAL, "synth-model: %s rows of %llu are not a multiple of %s blocks "
                                   "(%d)", ts[i].name, (unsigned long long)ts[i].ne0, Q->name, Q->blk_elems);
            free(ts);
            return rc;
        }
    wr w = {.f = fopen(out, "wb"), .rng = seed * 2654435761ull + 12345};
    if (!w.f) {
        free(ts);
        return ARB_ERR(err, ARB_E_IO, "%s: %s", out, strerror(errno));
    }
    char name[96], k[128];
    snprintf(name, sizeof name, "synthetic %s %s%s (random weights, timing only)", S->name, Q->name,
             f32_reference ? " dequantized to F32" : "");
    put_u32(&w, 0x46554747u);
    put_u32(&w, 3);
    put_u64(&w, (uint64_t)nt);
    put_u64(&w, 11);
    kv_str(&w, "general.architecture", S->arch);
    kv_str(&w, "general.name", name);
#define KU(s, v) (snprintf(k, sizeof k, "%s.%s", S->arch, s), kv_u32(&w, k, (uint32_t)(v)))
    KU("embedding_length", E);
    KU("block_count", L);
    KU("feed_forward_length", F);
    KU("attention.head_count", S->n_head);
    KU("attention.head_count_kv", S->n_head_kv);
    KU("context_length", 8192);
    KU("vocab_size", V);
#undef KU
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", S->arch);
    kv_f32(&w, k, 1e-5f);
    snprintf(k, sizeof k, "%s.rope.freq_base", S->arch);
    kv_f32(&w, k, S->rope_base);
    uint64_t off = 0, hdr = 0;
    for (int i = 0; i < nt; i++) {
        put_str(&w, ts[i].name);
        put_u32(&w, (uint32_t)ts[i].n_dims);
        put_u64(&w, ts[i].ne0);
        if (ts[i].n_dims == 2)
            put_u64(&w, ts[i].ne1);
        put_u32(&w, ts[i].type);
        put_u64(&w, off);
        off = (off + tensor_bytes(&ts[i]) + 31) / 32 * 32;
    }
    hdr = (uint64_t)ftell(w.f);
    static const uint8_t zero[32];
    put(&w, zero, (size_t)((32 - hdr % 32) % 32));
    off = 0;
    for (int i = 0; i < nt; i++) {
        gen(&w, &ts[i]);
        const uint64_t b = tensor_bytes(&ts[i]);
        put(&w, zero, (size_t)((32 - b % 32) % 32));
        off += b;
        if (progress && isatty(2))
            fprintf(stderr, "\rarbor synth-model: %d/%d tensors, %.2f GB", i + 1, nt, off / 1e9);
    }
    const int close_err = fclose(w.f);
    free(ts);
    if (w.io_err || close_err)
        return ARB_ERR(err, ARB_E_IO, "%s: writing failed: %s", out, strerror(w.io_err ? w.io_err : errno));
    if (progress)
        fprintf(stderr, "%sarbor synth-model: %s: %s %s, %d layers, %.2f GB of weights\n", isatty(2) ? "\n" : "",
                out, S->name, Q->name, L, off / 1e9);
    return ARB_OK;
}
