/* model.c — load a GGUF into an arb_model: architecture and hyperparameters from
 * metadata, weights bound (not copied) into the mapping, tokenizer built; plus
 * model info and the tokenizer/chat wrappers of engine.h.
 *
 * Validation happens here, once: every tensor the forward uses is checked for
 * presence, shape and type, so forward.c can trust the model. Errors name the
 * file and the tensor or key ("m.gguf: tensor 'blk.3.attn_k.weight' missing").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bigmem.h"
#include "chat.h"
#include "cpu/threadpool.h"
#include "cuda/cuda.h"
#include "model.h"
#include "quant.h"

typedef struct arch_row {
    const char *name;
    arb_arch arch;
    bool neox;     /* rope style */
    bool qkv_bias; /* attn_{q,k,v}.bias required */
    bool qk_norm;  /* attn_{q,k}_norm.weight required */
} arch_row;

static const arch_row arch_table[] = {
    {"llama", ARB_ARCH_LLAMA, false, false, false},
    {"qwen2", ARB_ARCH_QWEN2, true, true, false},
    {"qwen3", ARB_ARCH_QWEN3, true, false, true},
    {"gemma3", ARB_ARCH_GEMMA3, true, false, true},
};

arb_load_opts arb_load_default_opts(void)
{
    arb_load_opts o = {.backend = ARB_BACKEND_CPU, .n_threads = 0, .isa = NULL, .vocab_only = false,
                       .gpu_exact = false, .attn_scalar = false, .no_pack = false,
                       .no_huge_pages = false};
    return o;
}

int arb_load_opts_set_backend(arb_load_opts *o, const char *name, arb_err *err)
{
    if (!strcmp(name, "cpu"))
        o->backend = ARB_BACKEND_CPU, o->gpu_exact = false;
    else if (!strcmp(name, "cuda"))
        o->backend = ARB_BACKEND_CUDA, o->gpu_exact = false;
    else if (!strcmp(name, "cuda-exact"))
        o->backend = ARB_BACKEND_CUDA, o->gpu_exact = true;
    else
        return ARB_ERR(err, ARB_E_INVAL, "backend '%s': expected cpu, cuda or cuda-exact", name);
    return ARB_OK;
}

const char *arb_load_opts_backend_name(const arb_load_opts *o)
{
    if (o->backend == ARB_BACKEND_CUDA)
        return o->gpu_exact ? "cuda-exact" : "cuda";
    return "cpu";
}

/* ---- metadata helpers ---- */

static int get_int(const arb_model *m, const char *suffix, bool required, int dflt, int *out, arb_err *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch_name, suffix);
    uint64_t v = 0;
    arb_err e2 = {0};
    int rc = arb_gguf_get_u64(m->g, key, &v, &e2);
    if (rc == ARB_E_NOTFOUND && !required) {
        *out = dflt;
        return ARB_OK;
    }
    if (rc == ARB_E_NOTFOUND)
        return ARB_ERR(err, rc, "%s: metadata key '%s' missing", m->path, key);
    if (rc != ARB_OK)
        return ARB_ERR(err, rc, "%s: %s", m->path, e2.msg);
    if (v < 1 || v > (1u << 30))
        return ARB_ERR(err, ARB_E_FORMAT, "%s: %s = %llu out of range", m->path, key, (unsigned long long)v);
    *out = (int)v;
    return ARB_OK;
}

static int get_float(const arb_model *m, const char *suffix, float dflt, float *out, arb_err *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch_name, suffix);
    double v = 0;
    arb_err e2 = {0};
    int rc = arb_gguf_get_f64(m->g, key, &v, &e2);
    if (rc == ARB_E_NOTFOUND) {
        *out = dflt;
        return ARB_OK;
    }
    if (rc != ARB_OK)
        return ARB_ERR(err, rc, "%s: %s", m->path, e2.msg);
    *out = (float)v;
    return ARB_OK;
}

/* ---- tensor binding ---- */

static const arb_gguf_tensor *find_t(const arb_model *m, const char *name, bool required, arb_err *err)
{
    const arb_gguf_tensor *t = arb_gguf_find_tensor(m->g, name);
    if (!t && required)
        ARB_ERR(err, ARB_E_NOTFOUND, "%s: tensor '%s' missing", m->path, name);
    return t;
}

/* The type widen_matrices turns a matrix of type t into (t itself: none). */
static uint32_t widened_type(uint32_t t)
{
    switch (t) {
    case ARB_TYPE_Q5_0: case ARB_TYPE_IQ4_NL: case ARB_TYPE_IQ4_XS: return ARB_TYPE_Q8_0;
    case ARB_TYPE_Q3_K: case ARB_TYPE_Q2_K: return ARB_TYPE_Q6_K;
    case ARB_TYPE_Q5_1: return ARB_TYPE_Q8_0;
    default: return t;
    }
}

/* The weight types engine/cpu/matmul.h takes. */
static bool matmul_type(uint32_t t)
{
    return t == ARB_TYPE_F32 || t == ARB_TYPE_F16 || t == ARB_TYPE_Q4_0 || t == ARB_TYPE_Q4_1 ||
           t == ARB_TYPE_Q8_0 || t == ARB_TYPE_Q4_K || t == ARB_TYPE_Q5_K || t == ARB_TYPE_Q6_K ||
           widened_type(t) != t; /* widened at load (widen_matrices) */
}

/* A matrix of n_out rows x n_in, in a type the matmul supports. */
static int bind_mat(const arb_model *m, const char *name, int n_in, int n_out, arb_qmat *out, arb_err *err)
{
    const arb_gguf_tensor *t = find_t(m, name, true, err);
    if (!t)
        return ARB_E_NOTFOUND;
    if (t->n_dims != 2 || t->ne[0] != (uint64_t)n_in || t->ne[1] != (uint64_t)n_out)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: tensor '%s': shape [%llu, %llu], expected [%d, %d]", m->path, name,
                       (unsigned long long)t->ne[0], (unsigned long long)(t->n_dims > 1 ? t->ne[1] : 1), n_in,
                       n_out);
    if (!matmul_type(t->type))
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "%s: tensor '%s': type %s not supported for matrices (F32 F16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 "
                       "Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS)",
                       m->path, name, arb_type_name(t->type));
    out->type = t->type;
    out->n_in = n_in;
    out->n_out = n_out;
    out->row_bytes = arb_type_row_bytes(t->type, (uint64_t)n_in);
    out->data = t->data;
    out->kern = m->kern;
    return ARB_OK;
}

/* An F32 vector of n elements (norm weights, biases); NULL result if optional and absent. */
static int bind_vec(const arb_model *m, const char *name, int n, bool required, const float **out, arb_err *err)
{
    *out = NULL;
    const arb_gguf_tensor *t = find_t(m, name, required, err);
    if (!t)
        return required ? ARB_E_NOTFOUND : ARB_OK;
    if (t->type != ARB_TYPE_F32)
        return ARB_ERR(err, ARB_E_UNSUPPORTED, "%s: tensor '%s': type %s, expected F32", m->path, name,
                       arb_type_name(t->type));
    if (t->n_dims != 1 || t->ne[0] != (uint64_t)n)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: tensor '%s': expected a vector of %d", m->path, name, n);
    *out = t->data;
    return ARB_OK;
}

static int bind_layer(const arb_model *m, const arch_row *ar, int il, arb_layer *L, arb_err *err)
{
    char nm[96];
    const int qd = m->n_head * m->head_dim, kvd = m->n_head_kv * m->head_dim;
    int rc;
#define NM(s) (snprintf(nm, sizeof nm, "blk.%d.%s", il, s), nm)
    if ((rc = bind_vec(m, NM("attn_norm.weight"), m->n_embd, true, &L->attn_norm, err)) ||
        (rc = bind_mat(m, NM("attn_q.weight"), m->n_embd, qd, &L->wq, err)) ||
        (rc = bind_mat(m, NM("attn_k.weight"), m->n_embd, kvd, &L->wk, err)) ||
        (rc = bind_mat(m, NM("attn_v.weight"), m->n_embd, kvd, &L->wv, err)) ||
        (rc = bind_mat(m, NM("attn_output.weight"), qd, m->n_embd, &L->wo, err)) ||
        (rc = bind_vec(m, NM("ffn_norm.weight"), m->n_embd, true, &L->ffn_norm, err)) ||
        (rc = bind_mat(m, NM("ffn_gate.weight"), m->n_embd, m->n_ff, &L->w_gate, err)) ||
        (rc = bind_mat(m, NM("ffn_up.weight"), m->n_embd, m->n_ff, &L->w_up, err)) ||
        (rc = bind_mat(m, NM("ffn_down.weight"), m->n_ff, m->n_embd, &L->w_down, err)))
        return rc;
    /* Biases: required for qwen2, used when present otherwise (some llama finetunes). */
    if ((rc = bind_vec(m, NM("attn_q.bias"), qd, ar->qkv_bias, &L->bq, err)) ||
        (rc = bind_vec(m, NM("attn_k.bias"), kvd, ar->qkv_bias, &L->bk, err)) ||
        (rc = bind_vec(m, NM("attn_v.bias"), kvd, ar->qkv_bias, &L->bv, err)))
        return rc;
    if (ar->qk_norm &&
        ((rc = bind_vec(m, NM("attn_q_norm.weight"), m->head_dim, true, &L->q_norm, err)) ||
         (rc = bind_vec(m, NM("attn_k_norm.weight"), m->head_dim, true, &L->k_norm, err))))
        return rc;
    /* Gemma-3: the norms after attention and after the FFN (GGUF names from llama.cpp's
       converter, which has already folded Gemma's (1 + w) into the stored weights) */
    if (m->arch == ARB_ARCH_GEMMA3 &&
        ((rc = bind_vec(m, NM("post_attention_norm.weight"), m->n_embd, true, &L->post_attn_norm, err)) ||
         (rc = bind_vec(m, NM("post_ffw_norm.weight"), m->n_embd, true, &L->post_ffn_norm, err))))
        return rc;
#undef NM
    return ARB_OK;
}

/* Gemma-3's extras, with llama.cpp's rules (src/models/gemma3.cpp) where the file is
   silent: with attention.sliding_window set, layer il is local (windowed, rope base
   rope.freq_base_swa, default 10000, no rope scaling) unless il % P == P - 1, P =
   attention.sliding_window_pattern (default 6: five local layers, then a global one);
   the score scale is 1/sqrt(head_dim), except for the 27B (62 layers), whose
   query_pre_attn_scalar is n_embd/n_head; embeddings are scaled by sqrt(n_embd);
   final_logit_softcapping, when present, caps the logits. */
static int load_gemma3_hparams(arb_model *m, arb_err *err)
{
    int rc, pattern = 6;
    if ((rc = get_int(m, "attention.sliding_window", false, 0, &m->n_swa, err)) ||
        (rc = get_int(m, "attention.sliding_window_pattern", false, 6, &pattern, err)) ||
        (rc = get_float(m, "rope.freq_base_swa", 10000.0f, &m->rope_base_swa, err)) ||
        (rc = get_float(m, "final_logit_softcapping", 0.0f, &m->logit_softcap, err)))
        return rc;
    if (m->logit_softcap < 0)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: gemma3.final_logit_softcapping = %g is negative", m->path,
                       (double)m->logit_softcap);
    m->layers = calloc((size_t)m->n_layer, sizeof *m->layers);
    if (!m->layers)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", m->path);
    for (int il = 0; il < m->n_layer; il++)
        m->layers[il].swa = m->n_swa > 0 && il % pattern < pattern - 1;
    if (m->n_layer == 62) /* Gemma-3 27B */
        m->attn_scale = 1.0f / sqrtf((float)(m->n_embd / m->n_head));
    m->embd_scale = sqrtf((float)m->n_embd);
    m->geglu = true;
    return ARB_OK;
}

static int load_hparams(arb_model *m, arb_err *err)
{
    int rc;
    if ((rc = get_int(m, "embedding_length", true, 0, &m->n_embd, err)) ||
        (rc = get_int(m, "block_count", true, 0, &m->n_layer, err)) ||
        (rc = get_int(m, "feed_forward_length", true, 0, &m->n_ff, err)) ||
        (rc = get_int(m, "attention.head_count", true, 0, &m->n_head, err)) ||
        (rc = get_int(m, "attention.head_count_kv", false, m->n_head, &m->n_head_kv, err)) ||
        (rc = get_int(m, "context_length", false, 2048, &m->n_ctx_train, err)) ||
        (rc = get_int(m, "attention.key_length", false, m->n_embd / m->n_head, &m->head_dim, err)) ||
        (rc = get_float(m, "attention.layer_norm_rms_epsilon", 1e-5f, &m->eps, err)) ||
        (rc = get_float(m, "rope.freq_base", 10000.0f, &m->rope_base, err)))
        return rc;
    int vlen = 0, n_rot = 0;
    if ((rc = get_int(m, "attention.value_length", false, m->head_dim, &vlen, err)) ||
        (rc = get_int(m, "rope.dimension_count", false, m->head_dim, &n_rot, err)))
        return rc;
    if (vlen != m->head_dim || n_rot != m->head_dim || m->head_dim % 2)
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "%s: key_length %d, value_length %d, rope.dimension_count %d: only equal, even sizes are "
                       "supported", m->path, m->head_dim, vlen, n_rot);
    if (m->n_head % m->n_head_kv)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: head_count %d not a multiple of head_count_kv %d", m->path,
                       m->n_head, m->n_head_kv);
    m->rope_freq_scale = 1.0f;
    m->attn_scale = 1.0f / sqrtf((float)m->head_dim);
    m->embd_scale = 1.0f;
    if (m->arch == ARB_ARCH_GEMMA3 && (rc = load_gemma3_hparams(m, err)))
        return rc;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch_name);
    arb_gguf_str st;
    if (arb_gguf_get_str(m->g, key, &st, NULL) == ARB_OK && arb_gguf_str_eq(st, "linear")) {
        float f = 1.0f;
        if ((rc = get_float(m, "rope.scaling.factor", 1.0f, &f, err)))
            return rc;
        if (f > 0)
            m->rope_freq_scale = 1.0f / f;
    }
    return ARB_OK;
}

static int load_tensors(arb_model *m, const arch_row *ar, arb_err *err)
{
    const arb_gguf_tensor *te = find_t(m, "token_embd.weight", true, err);
    if (!te)
        return ARB_E_NOTFOUND;
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > (1u << 24))
        return ARB_ERR(err, ARB_E_FORMAT, "%s: tensor 'token_embd.weight': bad shape", m->path);
    m->n_vocab = (int)te->ne[1];
    int rc;
    if ((rc = bind_mat(m, "token_embd.weight", m->n_embd, m->n_vocab, &m->tok_embd, err)) ||
        (rc = bind_vec(m, "output_norm.weight", m->n_embd, true, &m->output_norm, err)))
        return rc;
    if (arb_gguf_find_tensor(m->g, "output.weight")) {
        if ((rc = bind_mat(m, "output.weight", m->n_embd, m->n_vocab, &m->output, err)))
            return rc;
    } else {
        m->output = m->tok_embd; /* tied head */
    }
    if ((rc = bind_vec(m, "rope_freqs.weight", m->head_dim / 2, false, &m->rope_freqs, err)))
        return rc;
    if (!m->layers && !(m->layers = calloc((size_t)m->n_layer, sizeof *m->layers))) /* gemma3: in hparams */
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", m->path);
    for (int il = 0; il < m->n_layer; il++)
        if ((rc = bind_layer(m, ar, il, &m->layers[il], err)))
            return rc;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(m->g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(m->g, i);
        m->n_params += t->ne[0] * (t->n_dims > 1 ? t->ne[1] : 1) * (t->n_dims > 2 ? t->ne[2] : 1) *
                       (t->n_dims > 3 ? t->ne[3] : 1);
        m->weight_bytes += t->n_bytes;
    }
    return ARB_OK;
}

/* The matrices the forward multiplies (not tok_embd, which is only gathered). */
static int model_mats(arb_model *m, arb_qmat **out)
{
    int n = 0;
    for (int l = 0; l < m->n_layer; l++) {
        arb_layer *L = &m->layers[l];
        arb_qmat *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            out[n++] = ws[i];
    }
    out[n++] = &m->output;
    return n;
}

/* Elements per block constant of a widened type (0: none). */
static int bconst_elems(uint32_t from) { return from == ARB_TYPE_Q5_1 ? 32 : from == ARB_TYPE_Q2_K ? 16 : 0; }

/* One row; c receives its block constants (n_in / bconst_elems of them). */
static void widen_row(uint32_t from, const void *src, void *dst, float *c, int n_in)
{
    const size_t nb = (size_t)n_in / arb_type_block_elems(from);
    switch (from) {
    case ARB_TYPE_Q5_0: arb_q5_0_to_q8_0(src, dst, nb); break;
    case ARB_TYPE_Q5_1: arb_q5_1_to_q8_0(src, dst, c, nb); break;
    case ARB_TYPE_IQ4_NL: arb_iq4_nl_to_q8_0(src, dst, nb); break;
    case ARB_TYPE_IQ4_XS: (void)arb_iq4_xs_to_q8_0(src, dst, nb); break; /* the count: tests */
    case ARB_TYPE_Q3_K: arb_q3_k_to_q6_k(src, dst, nb); break;
    case ARB_TYPE_Q2_K: arb_q2_k_to_q6_k(src, dst, c, nb); break;
    default: ARB_ASSERT(!"widen_row: no widening for this type");
    }
}

/* Bytes of a widened matrix in m->widened: its rows, then its block constants (64-aligned). */
static size_t widened_bytes(const arb_qmat *q, uint32_t to, size_t *rows_bytes)
{
    const size_t rb = (arb_type_row_bytes(to, (uint64_t)q->n_in) * (size_t)q->n_out + 63) & ~(size_t)63;
    const int bn = bconst_elems(q->type);
    *rows_bytes = rb;
    return rb + (bn ? ((size_t)q->n_in / (size_t)bn * (size_t)q->n_out * sizeof(float) + 63) & ~(size_t)63 : 0);
}

/* The weight copies the kernels stream every eval (packed, widened, F32) on 2 MB pages
   unless opts.no_huge_pages (bigmem.h). Free with arb_bigmem_free and the same size. */
static void *weights_alloc(const arb_model *m, size_t bytes) { return arb_bigmem_alloc(bytes, !m->opts.no_huge_pages); }

/* Matrices in a block type without a matmul kernel, rewritten at load (into
   m->widened) into one that has kernels in every family:
   - Q5_0 (llama.cpp's fallback for k-quant rows that are not a multiple of 256, e.g. Gemma-3
     270M's 640-wide q/k/gate/up) -> Q8_0: the same scale and integers (q - 16);
   - IQ4_NL (the IQ mixes' fallback for such rows) -> Q8_0: the same scale, the table's int8s;
   - Q3_K -> Q6_K: the same d and 16-element scales, codes q + 32;
   - IQ4_XS -> Q8_0: the table's int8s, each 32-block scale d * (ls - 32) rounded to fp16
     (<= 2^-11 relative);
   - Q5_1 -> Q8_0 (d, q - 16) and Q2_K -> Q6_K (d, low-nibble scales, codes q + 32), each with
     one float per block (Q5_1: 32 elements, 16 d + m; Q2_K: 16, -dmin * min) that the matmul
     adds times the block's sum of x (arb_qmat.bconst, stored block-major after the rows).
   Every value but IQ4_XS's scales is unchanged (Q5_1's 16 d + m rounded to f32). llama.cpp
   multiplies these types with 8-bit activations too. A tied head widens the embedding table
   with it (one copy) unless it has block constants (the gather reads rows only). */
static int widen_matrices(arb_model *m, arb_err *err)
{
    arb_qmat **mats = malloc(sizeof *mats * (size_t)(7 * m->n_layer + 1));
    if (!mats)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", m->path);
    const int n = model_mats(m, mats);
    size_t total = 0, rows_bytes;
    int max_in = 0;
    for (int i = 0; i < n; i++) {
        const uint32_t to = widened_type(mats[i]->type);
        if (to != mats[i]->type)
            total += widened_bytes(mats[i], to, &rows_bytes);
        max_in = mats[i]->n_in > max_in ? mats[i]->n_in : max_in;
    }
    m->widened_bytes = total;
    float *c = total ? malloc(sizeof(float) * (size_t)(max_in / 16)) : NULL;
    if (total && (!c || !(m->widened = weights_alloc(m, total)))) {
        free(mats), free(c);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory for %zu MB of widened weights", m->path, total >> 20);
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        arb_qmat *q = mats[i];
        const uint32_t to = widened_type(q->type);
        if (to == q->type)
            continue;
        const bool tied = q == &m->output && q->data == m->tok_embd.data;
        const size_t rb = arb_type_row_bytes(to, (uint64_t)q->n_in), bytes = widened_bytes(q, to, &rows_bytes);
        const int bn = bconst_elems(q->type), nb = bn ? q->n_in / bn : 0;
        uint8_t *dst = (uint8_t *)m->widened + off;
        float *bconst = bn ? (float *)(dst + rows_bytes) : NULL;
        for (int r = 0; r < q->n_out; r++) {
            widen_row(q->type, (const uint8_t *)q->data + (size_t)r * q->row_bytes,
                                          dst + (size_t)r * rb, c, q->n_in);
            for (int b = 0; b < nb; b++) /* block-major: the matmul adds them a block at a time */
                bconst[(size_t)b * (size_t)q->n_out + (size_t)r] = c[b];
        }
        q->type = to;
        q->row_bytes = rb;
        q->data = dst;
        q->bconst = bconst;
        q->bconst_n = bn;
        if (tied && !bn)
            m->tok_embd = *q; /* one table: the gather reads the head's values (IQ4_XS: its
                                 rounded scales) */
        off += bytes;
    }
    free(mats), free(c);
    return ARB_OK;
}

/* opts.dequant_f32: replace the selected matrices by F32 copies (exact: every quantized value
   is a float), so the matmul reads float weights and float activations. Before packing, which
   then finds no quantized matrix to pack among them, and before widen_matrices: the types are
   the file's ("all-but-Q5_0" keeps the Q5_0 matrices, which are widened after), and the copies
   are of the file's values (IQ4_XS's scales unrounded). */
static int dequant_weights(arb_model *m, arb_err *err)
{
    const char *sel = m->opts.dequant_f32;
    m->opts.dequant_f32 = NULL; /* the caller's string is not ours to keep */
    if (!sel)
        return ARB_OK;
    uint32_t keep = UINT32_MAX; /* a type to leave quantized, or none */
    if (!strncmp(sel, "all-but-", 8)) {
        const char *tn = sel + 8;
        for (uint32_t t = 0; t < 64 && keep == UINT32_MAX; t++)
            if (!strcasecmp(arb_type_name(t), tn))
                keep = t;
        if (keep == UINT32_MAX)
            return ARB_ERR(err, ARB_E_INVAL, "%s: load option dequant_f32 '%s': unknown type '%s'", m->path, sel, tn);
    } else if (strcmp(sel, "all")) {
        return ARB_ERR(err, ARB_E_INVAL, "%s: load option dequant_f32 '%s' (all, all-but-<type>)", m->path, sel);
    }
    arb_qmat **mats = malloc(sizeof *mats * (size_t)(7 * m->n_layer + 1));
    if (!mats)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", m->path);
    const int n = model_mats(m, mats);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (mats[i]->type != ARB_TYPE_F32 && mats[i]->type != keep)
            total += (size_t)mats[i]->n_in * (size_t)mats[i]->n_out;
    if (total && !(m->dequant = weights_alloc(m, m->dequant_bytes = total * sizeof(float)))) {
        free(mats);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory for %zu MB of F32 weights", m->path,
                       total * sizeof(float) >> 20);
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        arb_qmat *q = mats[i];
        if (q->type == ARB_TYPE_F32 || q->type == keep)
            continue;
        float *dst = m->dequant + off;
        for (int r = 0; r < q->n_out; r++)
            arb_dequant_row(q->type, (const uint8_t *)q->data + (size_t)r * q->row_bytes, dst + (size_t)r * q->n_in,
                            (size_t)q->n_in);
        q->type = ARB_TYPE_F32;
        q->row_bytes = sizeof(float) * (size_t)q->n_in;
        q->data = dst;
        off += (size_t)q->n_in * (size_t)q->n_out;
    }
    free(mats);
    return ARB_OK;
}

/* Drop the mapping's pages of a packed tensor: clean private file pages, re-read
   from the file should a non-AVX-512 kernel ever touch them (tests). */
static void drop_pages(const void *data, size_t bytes)
{
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = ((uintptr_t)data + pg - 1) & ~(pg - 1);
    const uintptr_t e = ((uintptr_t)data + bytes) & ~(pg - 1);
    if (e > a)
        madvise((void *)a, e - a, MADV_DONTNEED); /* advisory: failure only costs memory */
}

/* On the CPU backend, repack once every matrix the model's kernel family reads packed
   (engine/cpu/matmul_pack.c; AVX-512: Q4_0/Q4_1/Q8_0 and the K-quants, AVX2: the same
   but Q8_0): a step then reads a row group's block with aligned loads, rows already in
   vector lanes, instead of a transposition. opts.no_pack keeps the GGUF layout: the
   results are the same bits either way (tests compare), except the AVX-512 family's
   32-block matrices, which then run the AVX2 kernels (another Q4_1 float sequence). */
/* The packing of several matrices split into chunks of 16-row groups for a thread pool:
   group ranges are disjoint, so threads never write the same bytes. */
typedef struct pack_run {
    arb_qmat *const *mats;
    uint8_t *const *dst;
    const int *first; /* first[i]: matrix i's first group in the concatenation; first[n] = all */
    int n;
} pack_run;

static void pack_task(void *ud, int ith, int nth)
{
    const pack_run *pr = ud;
    const int total = pr->first[pr->n];
    const int u0 = arb_tp_part(total, ith, nth), u1 = arb_tp_part(total, ith + 1, nth);
    for (int i = 0; i < pr->n; i++) {
        const int a = u0 > pr->first[i] ? u0 : pr->first[i], b = u1 < pr->first[i + 1] ? u1 : pr->first[i + 1];
        if (a < b)
            arb_matmul_pack_groups(pr->mats[i], pr->dst[i], a - pr->first[i], b - pr->first[i]);
    }
}

static int pack_weights(arb_model *m, arb_err *err)
{
    if (m->opts.backend != ARB_BACKEND_CPU || m->opts.no_pack)
        return ARB_OK;
    const int cap = 7 * m->n_layer + 1;
    arb_qmat **mats = malloc(sizeof *mats * (size_t)cap);
    uint8_t **dst = malloc(sizeof *dst * (size_t)cap);
    int *first = malloc(sizeof *first * (size_t)(cap + 1));
    if (!mats || !dst || !first) {
        free(mats), free(dst), free(first);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", m->path);
    }
    int n = model_mats(m, mats), k = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (arb_matmul_reads_packed(m->kern, mats[i])) {
            mats[k++] = mats[i];
            total += (arb_matmul_pack_bytes(mats[i]) + 63) & ~(size_t)63;
        }
    n = k;
    m->packed_bytes = total;
    if (total && !(m->packed = weights_alloc(m, total))) {
        free(mats), free(dst), free(first);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory for %zu bytes of packed weights", m->path, total);
    }
    size_t off = 0;
    first[0] = 0;
    for (int i = 0; i < n; i++) {
        dst[i] = (uint8_t *)m->packed + off;
        off += (arb_matmul_pack_bytes(mats[i]) + 63) & ~(size_t)63;
        first[i + 1] = first[i] + (mats[i]->n_out + 15) / 16;
    }
    /* on the model's threads (reading the file's pages and writing the copy: mostly page
       faults, which the cores take in parallel); the bytes do not depend on who packs */
    arb_threadpool *tp = NULL;
    int rc = n ? arb_threadpool_new(m->opts.n_threads, &tp, err) : ARB_OK;
    if (rc == ARB_OK && n) {
        const pack_run pr = {.mats = mats, .dst = dst, .first = first, .n = n};
        const int nth = m->opts.n_threads;
        arb_threadpool_run_chunks(tp, pack_task, (void *)&pr, first[n] < 4 * nth ? first[n] : 4 * nth);
        arb_threadpool_free(tp);
        for (int i = 0; i < n; i++) {
            mats[i]->packed = dst[i];
            /* a tied head is also the embedding table; widened matrices live on the
               heap, not in the file mapping, and are freed with the model instead */
            const uint8_t *d = mats[i]->data, *w = m->widened;
            if (d != m->tok_embd.data && !(w && d >= w && d < w + m->widened_bytes))
                drop_pages(mats[i]->data, (size_t)mats[i]->n_out * mats[i]->row_bytes);
        }
    }
    free(mats), free(dst), free(first);
    return rc;
}

static arb_cuda_mat_desc cuda_mat(const arb_qmat *q)
{
    return (arb_cuda_mat_desc){.type = q->type, .n_in = q->n_in, .n_out = q->n_out, .row_bytes = q->row_bytes,
                               .data = q->data};
}

/* CUDA backend: describe the bound weights to engine/cuda and upload them once. */
static int cuda_upload(arb_model *m, arb_err *err)
{
    if (m->opts.backend != ARB_BACKEND_CUDA)
        return ARB_OK;
    if (m->arch == ARB_ARCH_GEMMA3) /* engine/cuda has no GeGLU, extra norms or windows */
        return ARB_ERR(err, ARB_E_UNSUPPORTED, "%s: architecture gemma3 runs on the CPU backend only", m->path);
    bool bconst = m->output.bconst != NULL; /* engine/cuda has no block-constant pass */
    for (int l = 0; l < m->n_layer; l++) {
        const arb_layer *L = &m->layers[l];
        const arb_qmat *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            bconst |= ws[i]->bconst != NULL;
    }
    if (bconst)
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "%s: Q5_1 and Q2_K matrices (weights with per-block mins) run on the CPU backend only", m->path);
    arb_cuda_layer_desc *ls = calloc((size_t)m->n_layer, sizeof *ls);
    if (!ls)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", m->path);
    for (int l = 0; l < m->n_layer; l++) {
        const arb_layer *L = &m->layers[l];
        ls[l] = (arb_cuda_layer_desc){
            .attn_norm = L->attn_norm, .ffn_norm = L->ffn_norm, .bq = L->bq, .bk = L->bk, .bv = L->bv,
            .q_norm = L->q_norm, .k_norm = L->k_norm, .wq = cuda_mat(&L->wq), .wk = cuda_mat(&L->wk),
            .wv = cuda_mat(&L->wv), .wo = cuda_mat(&L->wo), .w_gate = cuda_mat(&L->w_gate),
            .w_up = cuda_mat(&L->w_up), .w_down = cuda_mat(&L->w_down),
        };
    }
    const arb_cuda_model_desc d = {
        .path = m->path, .n_vocab = m->n_vocab, .n_embd = m->n_embd, .n_layer = m->n_layer, .n_head = m->n_head,
        .n_head_kv = m->n_head_kv, .head_dim = m->head_dim, .n_ff = m->n_ff, .eps = m->eps,
        .rope_neox = m->rope_neox, .tok_embd = cuda_mat(&m->tok_embd), .output = cuda_mat(&m->output),
        .output_norm = m->output_norm, .layers = ls,
    };
    const int rc = arb_cuda_model_new(&d, m->opts.gpu_exact, &m->cuda, err);
    free(ls);
    return rc;
}

int arb_model_load(const char *path, const arb_load_opts *o, arb_model **out, arb_err *err)
{
    *out = NULL;
    arb_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    m->opts = o ? *o : arb_load_default_opts();
    if (m->opts.n_threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        m->opts.n_threads = nc > 0 ? (int)nc : 1;
    }
    m->vocab_only = m->opts.vocab_only;
    int rc = arb_matmul_kernels(m->opts.isa, &m->kern);
    if (rc != ARB_OK) {
        rc = ARB_ERR(err, rc, "%s: load option isa '%s' unknown (auto, scalar, avx2, avx512)", path, m->opts.isa);
        goto fail;
    }
    m->opts.isa = arb_matmul_kernels_name(m->kern);
    rc = arb_gguf_open(path, &m->g, err);
    if (rc != ARB_OK)
        goto fail;

    arb_gguf_str s;
    if (arb_gguf_get_str(m->g, "general.architecture", &s, NULL) != ARB_OK) {
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "%s: metadata key 'general.architecture' missing", path);
        goto fail;
    }
    arb_gguf_str_copy(s, m->arch_name, sizeof m->arch_name);
    const arch_row *ar = NULL;
    for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (arb_gguf_str_eq(s, arch_table[i].name))
            ar = &arch_table[i];
    if (ar)
        m->arch = ar->arch; /* also for vocab_only (the chat template fallback) */
    if (arb_gguf_get_str(m->g, "general.name", &s, NULL) == ARB_OK) {
        arb_gguf_str_copy(s, m->name, sizeof m->name);
    } else {
        const char *b = strrchr(path, '/');
        snprintf(m->name, sizeof m->name, "%s", b ? b + 1 : path);
    }

    if (arb_gguf_find(m->g, "tokenizer.ggml.tokens")) {
        if ((rc = arb_tokenizer_new_from_gguf(m->g, &m->tok, err)) != ARB_OK) {
            arb_err_prefix(err, "%s", path);
            goto fail;
        }
    } else if (m->vocab_only) {
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "%s: no tokenizer (tokenizer.ggml.tokens missing)", path);
        goto fail;
    }
    if (m->vocab_only) {
        m->n_vocab = arb_tokenizer_n_vocab(m->tok);
        *out = m;
        return ARB_OK;
    }
    if (!ar) {
        rc = ARB_ERR(err, ARB_E_UNSUPPORTED, "%s: architecture '%s' not supported (llama, qwen2, qwen3, gemma3)", path,
                     m->arch_name);
        goto fail;
    }
    m->arch = ar->arch;
    m->rope_neox = ar->neox;
    if ((rc = load_hparams(m, err)) || (rc = load_tensors(m, ar, err)) || (rc = dequant_weights(m, err)) ||
        (rc = widen_matrices(m, err)) ||
        (rc = pack_weights(m, err)) ||
        (rc = cuda_upload(m, err)))
        goto fail;
    *out = m;
    return ARB_OK;
fail:
    arb_model_free(m);
    return rc;
}

void arb_model_free(arb_model *m)
{
    if (!m)
        return;
    arb_cuda_model_free(m->cuda);
    arb_tokenizer_free(m->tok);
    arb_gguf_close(m->g);
    free(m->layers);
    arb_bigmem_free(m->packed, m->packed_bytes);
    arb_bigmem_free(m->widened, m->widened_bytes);
    arb_bigmem_free(m->dequant, m->dequant_bytes);
    free(m->path);
    free(m);
}

void arb_model_get_info(const arb_model *m, arb_model_info *out)
{
    memset(out, 0, sizeof *out);
    out->arch = m->arch_name;
    out->name = m->name;
    out->n_vocab = m->n_vocab;
    out->n_embd = m->n_embd;
    out->n_layer = m->n_layer;
    out->n_head = m->n_head;
    out->n_head_kv = m->n_head_kv;
    out->head_dim = m->head_dim;
    out->n_ctx_train = m->n_ctx_train;
    out->bos = m->tok ? arb_tokenizer_bos(m->tok) : -1;
    out->eos = m->tok ? arb_tokenizer_eos(m->tok) : -1;
    out->eot = m->tok ? arb_tokenizer_eot(m->tok) : -1;
    out->n_params = m->n_params;
    out->weight_bytes = m->weight_bytes;
    out->backend = arb_load_opts_backend_name(&m->opts);
}

int arb_model_weight_pages(const arb_model *m, uint64_t *copy_bytes, uint64_t *huge_bytes, arb_err *err)
{
    const void *p[3] = {m->packed, m->widened, m->dequant};
    const size_t n[3] = {m->packed_bytes, m->widened_bytes, m->dequant_bytes};
    *copy_bytes = 0;
    for (int i = 0; i < 3; i++)
        *copy_bytes += p[i] ? n[i] : 0;
    if (arb_bigmem_huge_bytes(p, n, 3, huge_bytes))
        return ARB_ERR(err, ARB_E_IO, "/proc/self/smaps: cannot read it (not Linux?)");
    return ARB_OK;
}

const char *arb_model_path(const arb_model *m) { return m->path; }

/* ---- tokenizer and chat wrappers ---- */

int arb_tokenize(const arb_model *m, const char *text, size_t len, bool add_bos, bool parse_special, int32_t *out,
                 int cap, int *n_out, arb_err *err)
{
    *n_out = 0;
    if (!m->tok)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: model has no tokenizer", m->path);
    return arb_tokenizer_encode(m->tok, text, len, add_bos, parse_special, out, cap, n_out, err);
}

int arb_token_piece(const arb_model *m, int32_t tok, char *buf, int cap)
{
    if (!m->tok)
        return ARB_E_NOTFOUND;
    return arb_tokenizer_piece(m->tok, tok, buf, cap);
}

bool arb_token_is_eog(const arb_model *m, int32_t tok) { return m->tok && arb_tokenizer_is_eog(m->tok, tok); }

int arb_chat_apply(const arb_model *m, const char *tmpl_override, const arb_chat_msg *msgs, int n_msgs,
                   bool add_assistant, char *buf, size_t cap, size_t *n_out, arb_err *err)
{
    /* Gemma-3 GGUFs converted from a base model carry no tokenizer.chat_template; the
       family's own turn format is the one its instruction-tuned siblings use. */
    if (!tmpl_override && m->arch == ARB_ARCH_GEMMA3 && !arb_gguf_find(m->g, "tokenizer.chat_template"))
        tmpl_override = "gemma";
    return arb_chat_apply_tmpl(tmpl_override, m->g, msgs, n_msgs, add_assistant, buf, cap, n_out, err);
}
