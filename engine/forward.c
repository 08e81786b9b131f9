/* forward.c — contexts and the transformer forward over a tree of nodes.
 *
 * One arb_eval of n nodes (n <= n_batch_max) is one pass of every layer over the
 * n rows at once: node i sits at position n_past + depth(i), writes its K/V at
 * cache row n_past + i, and attends to the committed prefix, its ancestors and
 * itself (backend.h, arb_attn_args). Every kernel is batch-invariant, so a node's
 * logits equal those of its root-to-node path fed one token at a time.
 * A chain longer than n_batch_max (a long prompt) is cut into chunks; chunk c
 * treats the rows of chunks < c as prefix, which is the same key list.
 *
 * Memory: everything is sized in arb_ctx_new for n_batch_max nodes and n_ctx
 * rows; arb_eval and arb_commit allocate nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cuda/cuda.h"
#include "kv.h"
#include "model.h"

struct arb_ctx {
    arb_model *m;
    arb_backend be;       /* owns the thread pool */
    arb_kv kv;            /* n_layer x n_ctx rows */
    int n_ctx, n_batch_max, n_layer;
    bool want_hidden;
    float *cs;            /* n_ctx x head_dim: (cos, sin) per position and pair */
    float *cs_swa;        /* the same for Gemma-3's local layers (their own base), or NULL */
    float *x;             /* n_batch_max x n_embd: residual stream */
    float *xb;            /* n_batch_max x max(n_embd, q_dim): normed input / projections */
    float *q;             /* n_batch_max x q_dim */
    float *att;           /* n_batch_max x q_dim */
    float *kn, *vn;       /* n_batch_max x kv_dim: an eval's new keys and values, stored into the
                             head-major cache by the attention (backend.h, k_new) */
    float *hg, *hu;       /* n_batch_max x n_ff: gate, up */
    float *attn_scratch;  /* n_threads x attn_stride */
    int attn_stride;
    void *work;           /* matmul workspace */
    int32_t *pos;         /* n_batch_max */
    int32_t *chain;       /* n_batch_max: chain parents (-1, 0, 1, ...) for chunks */
    int32_t *last_parent; /* parents of the last eval (when n <= n_batch_max) */
    int last_n;           /* nodes in the last eval; 0 = nothing to commit */
    int row_n;            /* head rows of the last eval arb_eval_logits_row can give (0: none) */
    bool last_is_chain;   /* last eval was a chain (any length) */
    arb_cuda_ctx *cuda;   /* backend cuda: the whole forward runs there (the host buffers
                             above stay NULL; kv only counts n_past) */
    float *head_buf;      /* ARB_HEAD_CHUNK x n_vocab: logits rows for evals without logits (CPU) */
};

/* Evals without logits (argmax, top-K) on the CPU compute the output head this many rows at a time. */
#define ARB_HEAD_CHUNK 32

arb_ctx_opts arb_ctx_default_opts(void)
{
    arb_ctx_opts o = {.n_ctx = 0, .n_batch_max = 512, .n_layer = 0, .want_hidden = false};
    return o;
}

/* Rope table as ggml computes it (float theta, multiplied by theta_scale per pair),
   so positions agree with llama.cpp to float rounding. */
static void rope_table(const arb_model *m, int n_ctx, float base, float freq_scale, const float *freqs, float *cs)
{
    const int half = m->head_dim / 2;
    const float theta_scale = powf(base, -2.0f / (float)m->head_dim);
    for (int p = 0; p < n_ctx; p++) {
        float theta = (float)p;
        for (int j = 0; j < half; j++) {
            const float ff = freqs ? freqs[j] : 1.0f;
            const float th = freq_scale * (theta / ff);
            cs[(size_t)p * m->head_dim + 2 * j] = cosf(th);
            cs[(size_t)p * m->head_dim + 2 * j + 1] = sinf(th);
            theta *= theta_scale;
        }
    }
}

static size_t max_work(const arb_ctx *c)
{
    const arb_model *m = c->m;
    size_t w = arb_backend_matmul_work_bytes(&c->be, &m->output, c->n_batch_max);
    for (int l = 0; l < c->n_layer; l++) {
        const arb_layer *L = &m->layers[l];
        const arb_qmat *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            size_t b = arb_backend_matmul_work_bytes(&c->be, ws[i], c->n_batch_max);
            w = b > w ? b : w;
        }
    }
    return w;
}

/* A context whose forward runs on the GPU: host arrays for positions and parents,
   everything else on the device (engine/cuda). */
static int cuda_ctx_new(arb_ctx *c, arb_ctx **out, arb_err *err)
{
    const arb_model *m = c->m;
    const size_t nb = (size_t)c->n_batch_max;
    int rc = ARB_OK;
    c->cs = malloc((size_t)c->n_ctx * m->head_dim * sizeof(float));
    c->pos = malloc(nb * sizeof(int32_t));
    c->chain = malloc(nb * sizeof(int32_t));
    c->last_parent = malloc(nb * sizeof(int32_t));
    if (!c->cs || !c->pos || !c->chain || !c->last_parent) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "ctx: out of memory");
        goto fail;
    }
    rope_table(m, c->n_ctx, m->rope_base, m->rope_freq_scale, m->rope_freqs, c->cs);
    for (int i = 0; i < c->n_batch_max; i++)
        c->chain[i] = i - 1;
    if ((rc = arb_cuda_ctx_new(m->cuda, c->n_ctx, c->n_batch_max, c->n_layer, c->cs, &c->cuda, err)))
        goto fail;
    free(c->cs); /* the device holds its copy */
    c->cs = NULL;
    *out = c;
    return ARB_OK;
fail:
    arb_ctx_free(c);
    return rc;
}

int arb_ctx_new(arb_model *m, const arb_ctx_opts *o, arb_ctx **out, arb_err *err)
{
    *out = NULL;
    if (m->vocab_only)
        return ARB_ERR(err, ARB_E_INVAL, "%s: loaded vocab-only, cannot evaluate", m->path);
    arb_ctx_opts co = o ? *o : arb_ctx_default_opts();
    if (co.n_ctx < 0 || co.n_batch_max < 0 || co.n_layer < 0 || co.n_layer > m->n_layer)
        return ARB_ERR(err, ARB_E_INVAL, "ctx: n_ctx %d, n_batch_max %d, n_layer %d (model has %d layers)",
                       co.n_ctx, co.n_batch_max, co.n_layer, m->n_layer);
    if (co.n_ctx == 0)
        co.n_ctx = m->n_ctx_train < 4096 ? m->n_ctx_train : 4096;
    if (co.n_ctx > m->n_ctx_train)
        return ARB_ERR(err, ARB_E_RANGE, "ctx: n_ctx %d exceeds the model's context length %d", co.n_ctx,
                       m->n_ctx_train);
    if (co.n_batch_max == 0)
        co.n_batch_max = 512;
    if (co.n_batch_max > co.n_ctx)
        co.n_batch_max = co.n_ctx;

    arb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ARB_ERR(err, ARB_E_NOMEM, "ctx: out of memory");
    c->m = m;
    c->n_ctx = co.n_ctx;
    c->n_batch_max = co.n_batch_max;
    c->n_layer = co.n_layer ? co.n_layer : m->n_layer;
    c->want_hidden = co.want_hidden;
    /* The CPU backend also serves a CUDA context: its pool runs arb_ctx_parallel_for. */
    /* The vector kernels follow the matmul family (isa) unless attn_scalar forces the
       scalar ones: same bits either way, only the speed differs. */
    int rc = arb_backend_init(ARB_BACKEND_CPU, m->opts.n_threads, m->opts.attn_scalar ? "scalar" : m->opts.isa,
                              &c->be, err);
    if (rc != ARB_OK)
        goto fail;
    if (m->cuda)
        return cuda_ctx_new(c, out, err);
    if ((rc = arb_kv_init(&c->kv, c->n_layer, c->n_ctx, m->n_head_kv, m->head_dim, !m->opts.no_huge_pages, err)))
        goto fail;

    const size_t nb = (size_t)c->n_batch_max, qd = (size_t)m->n_head * m->head_dim;
    const size_t xbd = qd > (size_t)m->n_embd ? qd : (size_t)m->n_embd;
    c->attn_stride = ARB_ATTN_SCRATCH_ROWS * c->n_ctx + 16; /* backend.h: scores, then key rows */
    c->cs = malloc((size_t)c->n_ctx * m->head_dim * sizeof(float));
    c->x = malloc(nb * m->n_embd * sizeof(float));
    c->xb = malloc(nb * xbd * sizeof(float));
    c->q = malloc(nb * qd * sizeof(float));
    c->att = malloc(nb * qd * sizeof(float));
    c->kn = malloc(nb * (size_t)m->n_head_kv * m->head_dim * sizeof(float));
    c->vn = malloc(nb * (size_t)m->n_head_kv * m->head_dim * sizeof(float));
    c->hg = malloc(nb * m->n_ff * sizeof(float));
    c->hu = malloc(nb * m->n_ff * sizeof(float));
    c->attn_scratch = malloc((size_t)ARB_ATTN_SLOTS_PER_THREAD * (size_t)arb_backend_n_threads(&c->be) *
                             (size_t)c->attn_stride * sizeof(float));
    c->pos = malloc(nb * sizeof(int32_t));
    c->chain = malloc(nb * sizeof(int32_t));
    c->last_parent = malloc(nb * sizeof(int32_t));
    c->work = malloc(max_work(c) + 64);
    c->head_buf = malloc((size_t)ARB_HEAD_CHUNK * m->n_vocab * sizeof(float));
    if (!c->cs || !c->x || !c->xb || !c->q || !c->att || !c->kn || !c->vn || !c->hg || !c->hu || !c->attn_scratch ||
        !c->pos || !c->chain || !c->last_parent || !c->work || !c->head_buf) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "ctx: out of memory for scratch (n_batch_max %d)", c->n_batch_max);
        goto fail;
    }
    rope_table(m, c->n_ctx, m->rope_base, m->rope_freq_scale, m->rope_freqs, c->cs);
    if (m->n_swa > 0) { /* local layers: their own base, no scaling or frequency factors (llama.cpp) */
        if (!(c->cs_swa = malloc((size_t)c->n_ctx * m->head_dim * sizeof(float)))) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "ctx: out of memory for the local rope table");
            goto fail;
        }
        rope_table(m, c->n_ctx, m->rope_base_swa, 1.0f, NULL, c->cs_swa);
    }
    for (int i = 0; i < c->n_batch_max; i++)
        c->chain[i] = i - 1;
    *out = c;
    return ARB_OK;
fail:
    arb_ctx_free(c);
    return rc;
}

void arb_ctx_free(arb_ctx *c)
{
    if (!c)
        return;
    arb_cuda_ctx_free(c->cuda);
    arb_backend_release(&c->be);
    arb_kv_release(&c->kv);
    free(c->head_buf);
    free(c->cs);
    free(c->cs_swa);
    free(c->x);
    free(c->xb);
    free(c->q);
    free(c->att);
    free(c->kn);
    free(c->vn);
    free(c->hg);
    free(c->hu);
    free(c->attn_scratch);
    free(c->pos);
    free(c->chain);
    free(c->last_parent);
    free(c->work);
    free(c);
}

int arb_ctx_n_past(const arb_ctx *c) { return c->kv.n_past; }
const arb_model *arb_ctx_model(const arb_ctx *c) { return c->m; }

int arb_ctx_truncate(arb_ctx *c, int n_past)
{
    c->row_n = 0;
    if (n_past < 0 || n_past > c->kv.n_past)
        return ARB_E_RANGE;
    c->kv.n_past = n_past;
    c->last_n = 0;
    return ARB_OK;
}

/* Gemma's final logit soft-capping, c tanh(x / c), when the model has one; elementwise. */
static void softcap(const arb_model *m, float *x, size_t n)
{
    const float cap = m->logit_softcap;
    if (cap > 0)
        for (size_t i = 0; i < n; i++)
            x[i] = cap * tanhf(x[i] / cap);
}

/* The per-row outputs (argmax, top-K) of k logits rows that are rows r0.. of the eval's
   head: one row per task on the context's threads (a row is a 4V-byte read that one core
   streams too slowly at 60 rows, as decode found), the caller alone for one row. */
typedef struct head_rows_job {
    const float *rows; /* k x V */
    int V, r0;
    const arb_eval_out *o;
} head_rows_job;

static void head_row(void *ud, int i, int n)
{
    (void)n;
    const head_rows_job *j = ud;
    const float *row = j->rows + (size_t)i * j->V;
    const size_t r = (size_t)(j->r0 + i), K = (size_t)j->o->topk_k;
    if (j->o->argmax)
        j->o->argmax[r] = arb_topk_argmax(row, j->V);
    if (K)
        arb_topk_softmax(row, j->V, (int)K, j->o->topk_ids + r * K, j->o->topk_p + r * K);
}

static void head_outputs(arb_ctx *c, const float *rows, int k, const arb_eval_out *o, int r0)
{
    if (!o->argmax && o->topk_k <= 0)
        return;
    head_rows_job j = {.rows = rows, .V = c->m->n_vocab, .r0 = r0, .o = o};
    if (k == 1)
        head_row(&j, 0, 1);
    else
        arb_backend_parallel_for(&c->be, k, head_row, &j);
}

/* One batch of n <= n_batch_max nodes; KV rows at n_prefix + i. The final norm and
   output head run for rows head_from..n-1 only (logits/hidden receive those rows). */
static void forward_cpu(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n, int n_prefix,
                        const arb_eval_out *o, int head_from)
{
    const arb_model *m = c->m;
    const arb_backend *be = &c->be;
    const int E = m->n_embd, hd = m->head_dim, qd = m->n_head * hd, kvd = m->n_head_kv * hd;

    arb_backend_get_rows(be, &m->tok_embd, tok, n, c->x);
    if (m->embd_scale != 1.0f) /* Gemma: embeddings times sqrt(n_embd) */
        for (size_t i = 0; i < (size_t)n * E; i++)
            c->x[i] *= m->embd_scale;

    arb_attn_args aa = {
        .q = c->q, .kv_stride = hd, .kv_head_stride = arb_kv_head_stride(&c->kv), .k_new = c->kn, .v_new = c->vn,
        .n_prefix = n_prefix, .n = n, .parent = parent, .n_head = m->n_head,
        .n_head_kv = m->n_head_kv, .head_dim = hd, .scale = m->attn_scale, .out = c->att,
        .scratch = c->attn_scratch, .scratch_stride = c->attn_stride,
    };
    for (int l = 0; l < c->n_layer; l++) {
        const arb_layer *L = &m->layers[l];
        float *kr = c->kn, *vr = c->vn; /* into the cache with the attention */

        { /* RMSNorm, then Q, K, V from one quantized input; K and V to kn, vn */
            const arb_qmat *ws[3] = {&L->wq, &L->wk, &L->wv};
            float *ys[3] = {c->q, kr, vr};
            arb_backend_norm_matmul_multi(be, c->x, L->attn_norm, E, m->eps, c->xb, ws, 3, n, ys, c->work);
        }
        if (L->bq)
            arb_backend_add_bias(be, c->q, L->bq, n, qd);
        if (L->bk)
            arb_backend_add_bias(be, kr, L->bk, n, kvd);
        if (L->bv)
            arb_backend_add_bias(be, vr, L->bv, n, kvd);
        if (L->q_norm) { /* qwen3: RMSNorm of every head vector */
            arb_backend_rmsnorm(be, c->q, L->q_norm, n * m->n_head, hd, m->eps, c->q);
            arb_backend_rmsnorm(be, kr, L->k_norm, n * m->n_head_kv, hd, m->eps, kr);
        }

        aa.k = arb_kv_k(&c->kv, l, 0, 0);
        aa.v = arb_kv_v(&c->kv, l, 0, 0);
        aa.window = L->swa ? m->n_swa : 0;
        const arb_rope_args ra = {.q = c->q, .k = kr, .pos = c->pos, .cs = L->swa ? c->cs_swa : c->cs,
                                  .neox = m->rope_neox};
        arb_backend_rope_attention(be, &ra, &aa);
        if (L->post_attn_norm) { /* gemma3: x += norm(wo . att) */
            arb_backend_matmul(be, &L->wo, c->att, n, c->xb, c->work);
            arb_backend_rmsnorm(be, c->xb, L->post_attn_norm, n, E, m->eps, c->xb);
            arb_backend_add(be, c->x, c->xb, (size_t)n * E);
        } else {
            arb_backend_matmul_add(be, &L->wo, c->att, n, c->xb, c->work, c->x); /* x += wo . att */
        }

        {
            const arb_qmat *ws[2] = {&L->w_gate, &L->w_up};
            float *ys[2] = {c->hg, c->hu};
            arb_backend_norm_matmul_multi(be, c->x, L->ffn_norm, E, m->eps, c->xb, ws, 2, n, ys, c->work);
        }
        if (m->geglu) { /* gemma3: x += norm(w_down . (gelu(gate) * up)) */
            arb_backend_geglu(be, c->hg, c->hu, n, m->n_ff);
            arb_backend_matmul(be, &L->w_down, c->hg, n, c->xb, c->work);
            if (L->post_ffn_norm)
                arb_backend_rmsnorm(be, c->xb, L->post_ffn_norm, n, E, m->eps, c->xb);
            arb_backend_add(be, c->x, c->xb, (size_t)n * E);
        } else {
            arb_backend_swiglu_matmul_add(be, c->hg, c->hu, m->n_ff, &L->w_down, n, c->xb, c->work, c->x);
        }
    }
    const int nh = n - head_from;
    if (nh <= 0)
        return;
    arb_backend_rmsnorm(be, c->x + (size_t)head_from * E, m->output_norm, nh, E, m->eps, c->xb);
    if (o->hidden)
        memcpy(o->hidden, c->xb, (size_t)nh * E * sizeof(float));
    if (o->logits) {
        arb_backend_matmul(be, &m->output, c->xb, nh, o->logits, c->work);
        softcap(m, o->logits, (size_t)nh * m->n_vocab);
        head_outputs(c, o->logits, nh, o, 0);
        return;
    }
    /* argmax / top-K only: no n x n_vocab buffer. The head is batch-invariant, so a row
       computed in a chunk of 32 equals the same row of the full product bit for bit. */
    for (int r0 = 0; (o->argmax || o->topk_k > 0) && r0 < nh; r0 += ARB_HEAD_CHUNK) {
        const int k = nh - r0 < ARB_HEAD_CHUNK ? nh - r0 : ARB_HEAD_CHUNK;
        arb_backend_matmul(be, &m->output, c->xb + (size_t)r0 * E, k, c->head_buf, c->work);
        softcap(m, c->head_buf, (size_t)k * m->n_vocab); /* tanh can merge near-equal maxima: same argmax as logits */
        head_outputs(c, c->head_buf, k, o, r0);
    }
}

/* One batch, on whichever device holds the model. pos: n_prefix + depth. */
static int forward(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n, int n_prefix,
                   const arb_eval_out *o, int head_from, arb_err *err)
{
    for (int i = 0; i < n; i++) /* depth via parents (parent < i): pos = n_prefix + depth */
        c->pos[i] = parent[i] < 0 ? n_prefix : c->pos[parent[i]] + 1;
    if (!c->cuda) {
        forward_cpu(c, tok, parent, n, n_prefix, o, head_from);
        return ARB_OK;
    }
    const arb_cuda_step st = {.tok = tok, .parent = parent, .pos = c->pos, .n = n, .n_prefix = n_prefix,
                              .head_from = head_from, .logits = o->logits, .argmax = o->argmax,
                              .hidden = o->hidden, .topk_k = o->topk_k, .topk_ids = o->topk_ids,
                              .topk_p = o->topk_p};
    return arb_cuda_forward(c->cuda, &st, err);
}

/* The top-K and hidden requests of o, which arb_eval_ex, arb_prefill_ex and arb_ctx_output_head_ex
   check alike. */
static int check_outputs(const arb_ctx *c, const arb_eval_out *o, const char *who, arb_err *err)
{
    if (o->topk_k < 0 || o->topk_k > ARB_TOPK_K_MAX || (o->topk_k > 0 && (!o->topk_ids || !o->topk_p)))
        return ARB_ERR(err, ARB_E_INVAL, "%s: top-K of %d (must be 0..%d, with ids and probability buffers)", who,
                       o->topk_k, ARB_TOPK_K_MAX);
    if (o->hidden && !c->want_hidden)
        return ARB_ERR(err, ARB_E_INVAL, "%s: hidden states requested but ctx created without want_hidden", who);
    return ARB_OK;
}

int arb_ctx_output_head_ex(arb_ctx *c, const float *hidden, int n, const arb_eval_out *o, arb_err *err)
{
    if (n < 1 || n > c->n_batch_max || !hidden || !o || (!o->logits && !o->argmax && o->topk_k == 0))
        return ARB_ERR(err, ARB_E_INVAL, "output head: %d rows (1..%d) or NULL buffers (hidden, or no logits, "
                       "argmax or top-K)", n, c->n_batch_max);
    if (o->hidden)
        return ARB_ERR(err, ARB_E_INVAL, "output head: hidden states are its input, not an output");
    int rc = check_outputs(c, o, "output head", err);
    if (rc)
        return rc;
    if (c->cuda) {
        const arb_cuda_head_out ho = {.logits = o->logits, .argmax = o->argmax, .topk_k = o->topk_k,
                                      .topk_ids = o->topk_ids, .topk_p = o->topk_p};
        return arb_cuda_output_head(c->cuda, hidden, n, &ho, err);
    }
    const arb_model *m = c->m;
    if (o->logits) {
        arb_backend_matmul(&c->be, &m->output, hidden, n, o->logits, c->work);
        head_outputs(c, o->logits, n, o, 0);
        return ARB_OK;
    }
    /* argmax / top-K only: in chunks through head_buf, as forward_cpu's head (the kernel is
       batch-invariant, so a row's logits do not depend on its chunk) */
    for (int r0 = 0; r0 < n; r0 += ARB_HEAD_CHUNK) {
        const int k = n - r0 < ARB_HEAD_CHUNK ? n - r0 : ARB_HEAD_CHUNK;
        arb_backend_matmul(&c->be, &m->output, hidden + (size_t)r0 * m->n_embd, k, c->head_buf, c->work);
        head_outputs(c, c->head_buf, k, o, r0);
    }
    return ARB_OK;
}

int arb_ctx_output_head(arb_ctx *c, const float *hidden, int n, float *logits, arb_err *err)
{
    if (!logits)
        return ARB_ERR(err, ARB_E_INVAL, "output head: NULL logits buffer");
    const arb_eval_out o = {.logits = logits};
    return arb_ctx_output_head_ex(c, hidden, n, &o, err);
}

int arb_eval(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n, float *logits, float *hidden,
             arb_err *err)
{
    if (!logits)
        return ARB_ERR(err, ARB_E_INVAL, "eval: NULL logits buffer");
    const arb_eval_out o = {.logits = logits, .hidden = hidden};
    return arb_eval_ex(c, tok, parent, n, &o, err);
}


int arb_eval_ex(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n, const arb_eval_out *o,
                arb_err *err)
{
    const arb_model *m = c->m;
    c->last_n = 0;
    c->row_n = 0;
    if (n < 1 || !tok || !parent || !o || (!o->logits && !o->argmax && o->topk_k == 0))
        return ARB_ERR(err, ARB_E_INVAL, "eval: n = %d with %s", n,
                       n < 1 ? "no nodes" : "NULL buffers (tokens, parents, or no logits, argmax or top-K)");
    int rc = check_outputs(c, o, "eval", err);
    if (rc)
        return rc;
    if (n > c->n_ctx - c->kv.n_past)
        return ARB_ERR(err, ARB_E_RANGE, "eval: %d nodes on %d committed tokens exceed n_ctx %d", n, c->kv.n_past,
                       c->n_ctx);
    bool is_chain = true;
    for (int i = 0; i < n; i++) {
        if (tok[i] < 0 || tok[i] >= m->n_vocab)
            return ARB_ERR(err, ARB_E_INVAL, "eval: token[%d] = %d outside vocabulary [0, %d)", i, tok[i],
                           m->n_vocab);
        if (parent[i] < -1 || parent[i] >= i)
            return ARB_ERR(err, ARB_E_INVAL, "eval: parent[%d] = %d (must be -1 or < %d)", i, parent[i], i);
        is_chain = is_chain && parent[i] == i - 1;
    }
    if (n > c->n_batch_max && !is_chain)
        return ARB_ERR(err, ARB_E_INVAL, "eval: %d nodes exceed n_batch_max %d (only chains are chunked)", n,
                       c->n_batch_max);

    if (n <= c->n_batch_max) {
        rc = forward(c, tok, parent, n, c->kv.n_past, o, 0, err);
        memcpy(c->last_parent, parent, (size_t)n * sizeof(int32_t));
    } else {
        for (int off = 0; off < n && !rc; off += c->n_batch_max) {
            const int k = n - off < c->n_batch_max ? n - off : c->n_batch_max;
            const arb_eval_out oc = {
                .logits = o->logits ? o->logits + (size_t)off * m->n_vocab : NULL,
                .argmax = o->argmax ? o->argmax + off : NULL,
                .hidden = o->hidden ? o->hidden + (size_t)off * m->n_embd : NULL,
                .topk_k = o->topk_k,
                .topk_ids = o->topk_k ? o->topk_ids + (size_t)off * o->topk_k : NULL,
                .topk_p = o->topk_k ? o->topk_p + (size_t)off * o->topk_k : NULL,
            };
            rc = forward(c, tok + off, c->chain, k, c->kv.n_past + off, &oc, 0, err);
        }
    }
    if (rc)
        return rc;
    c->last_n = n;
    c->last_is_chain = is_chain;
    c->row_n = n <= c->n_batch_max ? n : 0; /* a chunked chain left only its last chunk */
    return ARB_OK;
}

bool arb_ctx_on_device(const arb_ctx *c) { return c->cuda != NULL; }

int arb_eval_logits_row(arb_ctx *c, int node, float *row, arb_err *err)
{
    if (!row || node < 0 || node >= c->row_n)
        return ARB_ERR(err, ARB_E_INVAL, "eval row: node %d of the last eval's %d rows%s", node, c->row_n,
                       row ? "" : " (NULL buffer)");
    if (c->cuda)
        return arb_cuda_logits_row(c->cuda, node, row, err);
    /* the final hidden states of the last eval are still in xb: the head is batch-invariant,
       so one row here equals that row of the eval's full product bit for bit */
    arb_backend_matmul(&c->be, &c->m->output, c->xb + (size_t)node * c->m->n_embd, 1, row, c->work);
    softcap(c->m, row, (size_t)c->m->n_vocab);
    return ARB_OK;
}

int arb_commit(arb_ctx *c, const int32_t *path, int n, arb_err *err)
{
    if (n == 0) {
        c->last_n = 0;
        return ARB_OK;
    }
    if (n < 0 || !path || n > c->last_n)
        return ARB_ERR(err, ARB_E_INVAL, "commit: %d nodes, last eval had %d", n, c->last_n);
    for (int j = 0; j < n; j++) {
        if (path[j] < 0 || path[j] >= c->last_n)
            return ARB_ERR(err, ARB_E_INVAL, "commit: path[%d] = %d outside the last eval's %d nodes", j, path[j],
                           c->last_n);
        const int32_t want = j == 0 ? -1 : path[j - 1];
        const int32_t par = c->last_is_chain ? path[j] - 1 : c->last_parent[path[j]];
        if (par != want)
            return ARB_ERR(err, ARB_E_INVAL, "commit: path[%d] = %d is not a child of %d", j, path[j], want);
    }
    if (c->cuda) {
        const int rc = arb_cuda_kv_commit(c->cuda, c->kv.n_past, path, n, err);
        if (rc)
            return rc;
        c->kv.n_past += n;
    } else {
        arb_kv_commit(&c->kv, path, n);
    }
    c->last_n = 0; /* scratch rows moved: the last eval can no longer be committed from */
    return ARB_OK;
}

int arb_prefill_ex(arb_ctx *c, const int32_t *tok, int n, const arb_eval_out *last, arb_err *err)
{
    const arb_model *m = c->m;
    const arb_eval_out none = {0};
    if (!last)
        last = &none;
    c->last_n = 0;
    c->row_n = 0;
    if (n < 1 || !tok)
        return ARB_ERR(err, ARB_E_INVAL, "prefill: n = %d%s", n, tok ? "" : " with NULL tokens");
    int rc = check_outputs(c, last, "prefill", err);
    if (rc)
        return rc;
    if (n > c->n_ctx - c->kv.n_past)
        return ARB_ERR(err, ARB_E_RANGE, "prefill: %d tokens on %d committed tokens exceed n_ctx %d", n,
                       c->kv.n_past, c->n_ctx);
    for (int i = 0; i < n; i++)
        if (tok[i] < 0 || tok[i] >= m->n_vocab)
            return ARB_ERR(err, ARB_E_INVAL, "prefill: token[%d] = %d outside vocabulary [0, %d)", i, tok[i],
                           m->n_vocab);
    const bool outputs = last->logits || last->argmax || last->hidden || last->topk_k > 0;
    for (int off = 0; off < n; off += c->n_batch_max) {
        const int k = n - off < c->n_batch_max ? n - off : c->n_batch_max;
        const bool at_end = off + k == n;
        /* head_from = k: no row gets the final norm or the head */
        rc = forward(c, tok + off, c->chain, k, c->kv.n_past, at_end ? last : &none, at_end && outputs ? k - 1 : k,
                     err);
        if (rc)
            return rc;
        c->kv.n_past += k; /* a chain's rows are already in place: committing is just this */
    }
    return ARB_OK;
}

int arb_prefill(arb_ctx *c, const int32_t *tok, int n, float *last_logits, arb_err *err)
{
    const arb_eval_out last = {.logits = last_logits};
    return arb_prefill_ex(c, tok, n, &last, err);
}

int arb_ctx_parallel_for(arb_ctx *c, int n, void (*fn)(void *ud, int i, int n), void *ud)
{
    if (n > 0)
        arb_backend_parallel_for(&c->be, n, fn, ud);
    return ARB_OK;
}

int arb_ctx_n_threads(const arb_ctx *c) { return arb_backend_n_threads(&c->be); }

/* ---- arb_probe_matmul_us: the eval's matrix products with the weights in cache ---- */

/* One class of matrices the kernels treat alike: type, width and layout (the family is the
   model's). Rows of every matrix of the class add up in `rows`. */
typedef struct mm_class {
    const arb_qmat *w; /* the first matrix of the class (its leading rows are timed) */
    double rows;
    double us_per_row;
} mm_class;

#define MM_PROBE_CLASSES 32

/* false when the table is full (the probe then refuses rather than leave rows out) */
static bool class_add(mm_class *cl, int *ncl, const arb_qmat *w)
{
    for (int i = 0; i < *ncl; i++)
        if (cl[i].w->type == w->type && cl[i].w->n_in == w->n_in && !cl[i].w->packed == !w->packed) {
            cl[i].rows += w->n_out;
            return true;
        }
    if (*ncl == MM_PROBE_CLASSES)
        return false;
    cl[(*ncl)++] = (mm_class){.w = w, .rows = w->n_out};
    return true;
}

static double probe_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

int arb_probe_matmul_us(arb_ctx *c, int n, double seconds, double *us, arb_err *err)
{
    *us = 0;
    if (c->cuda)
        return ARB_ERR(err, ARB_E_UNSUPPORTED, "probe matmul: CPU contexts only");
    if (n < 1 || n > c->n_batch_max)
        return ARB_ERR(err, ARB_E_INVAL, "probe matmul: %d nodes (1..%d)", n, c->n_batch_max);
    const arb_model *m = c->m;
    mm_class cl[MM_PROBE_CLASSES];
    int ncl = 0;
    bool fits = class_add(cl, &ncl, &m->output);
    for (int l = 0; l < c->n_layer; l++) {
        const arb_layer *L = &m->layers[l];
        const arb_qmat *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++)
            fits = fits && class_add(cl, &ncl, ws[i]);
    }
    if (!fits)
        return ARB_ERR(err, ARB_E_UNSUPPORTED, "probe matmul: more than %d kinds of matrices", MM_PROBE_CLASSES);
    /* Leading rows of each class's first matrix, about 192 KB of weights per thread: in L2
       on the cores this runs on, and large enough that one pool run is not mostly dispatch. */
    const int nt = arb_backend_n_threads(&c->be);
    int rows_max = 0, in_max = 0;
    size_t work_max = 0;
    int rows[MM_PROBE_CLASSES];
    for (int i = 0; i < ncl; i++) {
        const arb_qmat *w = cl[i].w;
        int r = (int)((size_t)192 * 1024 * (size_t)(nt < 1 ? 1 : nt) / (w->row_bytes ? w->row_bytes : 1)) / 16 * 16;
        r = r < 16 ? 16 : r > w->n_out ? w->n_out : r;
        rows[i] = r;
        rows_max = r > rows_max ? r : rows_max;
        in_max = w->n_in > in_max ? w->n_in : in_max;
        arb_qmat v = *w;
        v.n_out = r;
        const size_t wb = arb_backend_matmul_work_bytes(&c->be, &v, n);
        work_max = wb > work_max ? wb : work_max;
    }
    float *x = malloc((size_t)n * in_max * sizeof *x), *y = malloc((size_t)n * rows_max * sizeof *y);
    void *work = malloc(work_max ? work_max : 1);
    if (!x || !y || !work) {
        free(x), free(y), free(work);
        return ARB_ERR(err, ARB_E_NOMEM, "probe matmul: %d x %d activations", n, in_max);
    }
    uint32_t s = 12345u; /* activations of a realistic spread: uniform in [-1, 1) */
    for (size_t i = 0; i < (size_t)n * in_max; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
    }
    const double budget = 1e6 * (seconds > 0 ? seconds : 0.2) / ncl;
    for (int i = 0; i < ncl; i++) {
        arb_qmat v = *cl[i].w;
        v.n_out = rows[i];
        arb_backend_matmul(&c->be, &v, x, n, y, work); /* brings the rows into cache */
        double best = 1e30;
        const double t_end = probe_now_us() + budget;
        for (int it = 0; it < 3 || probe_now_us() < t_end; it++) { /* best of groups of 4 calls */
            const double t0 = probe_now_us();
            for (int k = 0; k < 4; k++)
                arb_backend_matmul(&c->be, &v, x, n, y, work);
            const double dt = (probe_now_us() - t0) / 4;
            best = dt < best ? dt : best;
        }
        cl[i].us_per_row = best / rows[i];
        *us += cl[i].us_per_row * cl[i].rows;
    }
    free(x), free(y), free(work);
    return ARB_OK;
}
