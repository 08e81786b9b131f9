/* engine.h — the one header the harness includes: load a model, evaluate trees
 * of candidate tokens on top of a committed prefix, commit an accepted path,
 * tokenize, apply chat templates.
 *
 *     arb_model *m; arb_ctx *c; arb_err err = {0};
 *     arb_load_opts lo = arb_load_default_opts();
 *     if (arb_model_load(path, &lo, &m, &err)) die(err.msg);
 *     arb_ctx_opts co = arb_ctx_default_opts();          // n_ctx, n_batch_max, threads
 *     if (arb_ctx_new(m, &co, &c, &err)) die(err.msg);
 *     // prefill: a chain (parent[i] = i-1, parent[0] = -1), then commit all of it
 *     arb_eval(c, toks, parents, n, logits, NULL, &err);
 *     arb_commit(c, path_0_to_n_minus_1, n, &err);
 *     // a tree step: n nodes, parent[i] < i or -1; logits is n x n_vocab
 *     arb_eval(c, tree_tok, tree_parent, n, logits, NULL, &err);
 *     arb_commit(c, accepted_nodes, n_acc, &err);        // indices into the last eval
 *     // or only what the caller reads per node (no n x n_vocab rows; on a GPU, no row copies)
 *     arb_eval_ex(c, tree_tok, tree_parent, n, &(arb_eval_out){.topk_k = 10, .topk_ids = ids,
 *                 .topk_p = probs}, &err);                // ids[i*10] = argmax of node i
 *     arb_ctx_free(c); arb_model_free(m);
 *
 * Exactness: on the CPU backend a node's logits are bit-identical whether it is
 * evaluated alone (AR order) or inside any tree (batch invariance).
 * Thread-safety: an arb_model is read-only after load and may be shared by many
 * contexts; an arb_ctx is used by one thread at a time.
 */
#ifndef ARB_ENGINE_H
#define ARB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct arb_model arb_model; /* weights, hyperparameters, tokenizer; shared, read-only */
typedef struct arb_ctx arb_ctx;     /* one sequence: KV cache + scratch */

typedef enum arb_backend_kind {
    ARB_BACKEND_CPU = 0,
    ARB_BACKEND_CUDA = 1,
} arb_backend_kind;

typedef struct arb_load_opts {
    arb_backend_kind backend; /* default CPU */
    int n_threads;            /* worker threads for this model's kernels; 0 = all cores */
    const char *isa;          /* CPU matmul kernel family for this model: NULL or "auto" = the
                                 best this CPU has; "scalar", "avx2", "avx512" (= "avx512vnni")
                                 = that family, or the best the CPU has when it lacks it. Other
                                 names: ARB_E_INVAL. Copied at load (arb_cpu_kernels names it) */
    const char *dequant_f32;  /* NULL: weights as stored. "all": every matrix the forward multiplies
                                 is dequantized to F32 at load (the reference a quantized run is
                                 measured against: float activations, no activation quantization);
                                 "all-but-<type>" (e.g. "all-but-q4_1"): all except matrices of that
                                 GGUF type, to isolate one block type's error. ARB_E_INVAL otherwise */
    bool vocab_only;          /* metadata + tokenizer only, no tensors (tokenize/inspect);
                                 arb_ctx_new then fails with ARB_E_INVAL */
    bool gpu_exact;           /* CUDA: batch-invariant kernels only (bit-identical trees and
                                 chains, like the CPU); false = "fast": cuBLAS FP16 GEMMs for
                                 large batches, deterministic but not batch-invariant */
    bool attn_scalar;         /* CPU: the scalar attention/norm/SwiGLU kernels instead of the
                                 SIMD family that follows isa (bit-identical; for tests that
                                 compare them) */
    bool no_pack;             /* CPU: keep the GGUF layout instead of repacking Q4_0/Q4_1 and
                                 the K-quants (and Q8_0 for AVX-512) for the SIMD kernels: the
                                 same bits, slower, except AVX-512's 32-block matrices, which
                                 then run the AVX2 kernels */
    bool no_huge_pages;       /* CPU: the weight copies and the contexts' KV caches on ordinary
                                 pages instead of asking Linux for transparent huge pages
                                 (madvise); the same bits, slower, a KV cache then resident only
                                 as far as it is filled */
} arb_load_opts;
/* "cpu", "cuda" (fast mode) or "cuda-exact" into o->backend / o->gpu_exact;
   ARB_E_INVAL naming the accepted spellings otherwise. */
int arb_load_opts_set_backend(arb_load_opts *o, const char *name, arb_err *err);
const char *arb_load_opts_backend_name(const arb_load_opts *o);
arb_load_opts arb_load_default_opts(void);

typedef struct arb_ctx_opts {
    int n_ctx;        /* KV capacity in tokens (prefix + one tree); 0 = min(model max, 4096) */
    int n_batch_max;  /* most nodes one arb_eval may take; default 512 (prefill is chunked) */
    int n_layer;      /* evaluate only the first n_layer blocks (self-draft); 0 = all */
    bool want_hidden; /* reserve buffers for final hidden states (heads, selectors) */
} arb_ctx_opts;
arb_ctx_opts arb_ctx_default_opts(void);

typedef struct arb_model_info {
    const char *arch;   /* "llama", "qwen2", "qwen3", "gemma3" */
    const char *name;   /* general.name or file name */
    int n_vocab;        /* logits per node */
    int n_embd;         /* hidden size */
    int n_layer;
    int n_head, n_head_kv, head_dim;
    int n_ctx_train;    /* model's context limit */
    int32_t bos, eos, eot; /* -1 when absent */
    uint64_t n_params;
    uint64_t weight_bytes; /* bytes of tensor data as stored (quantized) */
    const char *backend;   /* where it runs: "cpu", "cuda" or "cuda-exact" (arb_load_opts_backend_name) */
} arb_model_info;

/* Load a GGUF (llama/qwen2/qwen3/gemma3). Errors name the file and the missing tensor or key. */
int arb_model_load(const char *path, const arb_load_opts *o, arb_model **out, arb_err *err);
void arb_model_free(arb_model *m); /* NULL-safe; all contexts must be freed first */
void arb_model_get_info(const arb_model *m, arb_model_info *out);
/* Bytes of the weight copies the CPU kernels stream (packed, widened, F32; 0 when the
   kernels read the file's mapping) and how many of them lie on transparent huge pages now
   (Linux /proc/self/smaps; load option no_huge_pages). ARB_E_IO where smaps is unreadable. */
int arb_model_weight_pages(const arb_model *m, uint64_t *copy_bytes, uint64_t *huge_bytes, arb_err *err);

int arb_ctx_new(arb_model *m, const arb_ctx_opts *o, arb_ctx **out, arb_err *err);
void arb_ctx_free(arb_ctx *c); /* NULL-safe */

/* Evaluate n nodes on top of the committed prefix. parent[i] == -1 attaches node i to
   the prefix end; otherwise 0 <= parent[i] < i. Position = n_past + depth(i) (depth 0
   for parent -1). logits: n x n_vocab floats (required); hidden: n x n_embd or NULL.
   n > n_batch_max is allowed for chains (prefill, chunked internally) only.
   Returns ARB_E_RANGE if the context would overflow, ARB_E_INVAL on bad parents/tokens.
   Allocates nothing. Scratch KV rows of the last eval stay valid until the next eval. */
int arb_eval(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n,
             float *logits, float *hidden, arb_err *err);

/* What one evaluation returns per node; any pointer may be NULL, but not all of logits,
   argmax and topk. Each output is computed where the logits are, so a GPU eval copies
   back only what was asked for ("no logits round trip", docs/gpu.md):
   - logits: n x n_vocab floats, only for consumers that read whole rows (sampling).
   - argmax: the greedy token of each node (the smallest id among equal maxima).
   - topk_k, topk_ids, topk_p: the topk_k (1..ARB_TOPK_K_MAX) largest logits of each node,
     best first (ties: smaller id first), and their softmax probabilities over the whole
     row at T = 1; n x topk_k each, row i at i * topk_k; topk_k = 0: none. Exactly what
     arb_topk_softmax returns for the row (TR/GOOSE harvest it; topk_ids[0] is the argmax).
   On the CPU an eval without logits computes the output head in chunks of rows and needs
   no n x n_vocab buffer; every output is bit-identical to arb_eval's logits (and
   arb_topk_softmax of them). On a GPU, ids are the top-k of the GPU's own logits and
   probabilities agree with arb_topk_softmax of those logits to ~1e-5 relative. */
typedef struct arb_eval_out {
    float *logits;     /* n x n_vocab */
    int32_t *argmax;   /* n */
    float *hidden;     /* n x n_embd (ctx created with want_hidden) */
    int topk_k;        /* 0, or 1..ARB_TOPK_K_MAX */
    int32_t *topk_ids; /* n x topk_k */
    float *topk_p;     /* n x topk_k */
} arb_eval_out;
int arb_eval_ex(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n, const arb_eval_out *o,
                arb_err *err);

/* The full logits row of node `node` of the last arb_eval / arb_eval_ex, whatever that eval
   returned (argmax, top-K): bit for bit the row a logits eval would have given. For callers
   that need one row known only after verification (a drafter's stop node) without copying
   every row of the eval. CPU: the node's output head, recomputed from the eval's final
   hidden state (one row of the head); CUDA: the row the device computed, copied. Valid until
   the next eval, prefill or truncate (a commit keeps it); ARB_E_INVAL for a node outside the
   last eval, or after a chain longer than n_batch_max (chunked). */
int arb_eval_logits_row(arb_ctx *c, int node, float *row, arb_err *err);

/* Whether this context's evals run on a device (CUDA): there a full-rows eval copies every
   row to the host and arb_eval_logits_row one; on the CPU the rows are computed anyway and
   arb_eval_logits_row recomputes one head row. */
bool arb_ctx_on_device(const arb_ctx *c);

/* Keep the KV rows of nodes path[0..n) of the last arb_eval, in order, as the new
   prefix tail (path must be a root-to-node chain: parent[path[0]] == -1 and
   parent[path[i]] == path[i-1]). n == 0 is allowed. */
int arb_commit(arb_ctx *c, const int32_t *path, int n, arb_err *err);

/* Prefill: evaluate the chain tok[0..n) on top of the committed prefix and commit all of
   it, computing the output head for the last token only (n_vocab floats into last_logits;
   NULL = none). Equal to arb_eval of the chain + arb_commit, bit for bit, without an
   n x n_vocab buffer or the other rows' head. Chunked by n_batch_max; allocates nothing. */
int arb_prefill(arb_ctx *c, const int32_t *tok, int n, float *last_logits, arb_err *err);
/* arb_prefill with arb_eval_ex's outputs for the last token only: each non-NULL pointer of
   `last` receives one row (n_vocab logits, one argmax, n_embd hidden floats, topk_k ids
   and probabilities), bit for bit that token's row of arb_eval_ex over the chain. last =
   NULL or with no output asked: the KV rows only. A caller that reads nothing of the other
   prompt tokens (a greedy baseline, a drafter that does not harvest the prompt) skips
   their output head: 28 M of SmolLM2's 134 M multiply-adds per token. */
int arb_prefill_ex(arb_ctx *c, const int32_t *tok, int n, const arb_eval_out *last, arb_err *err);

/* The model's own output head, as stored (quantized), on n caller rows of final-norm hidden
   state — the rows arb_eval's `hidden` returns, so the final RMSNorm is not applied again:
   logits[r] = W_out hidden[r] (n x n_vocab). For draft heads that predict hidden states (EAGLE).
   1 <= n <= the context's n_batch_max; the same kernel as arb_eval's head, so a row's logits do
   not depend on n or on the other rows (batch-invariant), and equal arb_eval's logits for its own
   hidden rows. On a GPU backend the rows go to the device and take the eval's own head path
   there (bit for bit arb_eval's logits for its hidden rows in exact mode; in fast mode at the
   same row count, since cuBLAS serves 16+ rows), the logits come back, and the last eval's rows
   are gone (arb_eval_logits_row refuses them until the next eval). Allocates nothing; uses the
   context's scratch, so not concurrently with an eval on the same context. */
int arb_ctx_output_head(arb_ctx *c, const float *hidden, int n, float *logits, arb_err *err);
/* arb_ctx_output_head with arb_eval_ex's per-row outputs (o->hidden must be NULL: the rows are
   the input): full logits rows, argmax and/or top-K ids and probabilities of each row's logits,
   computed where the logits are. On a GPU only what was asked for comes back — a Medusa step's
   four top-10 lists instead of four 49152-float rows ("No logits round trip", docs/gpu.md). CPU:
   bit for bit arb_topk_softmax / arb_topk_argmax of arb_ctx_output_head's rows, with no n x
   n_vocab buffer when no logits are asked for; GPU: as arb_eval_ex's outputs on the device. */
int arb_ctx_output_head_ex(arb_ctx *c, const float *hidden, int n, const arb_eval_out *o, arb_err *err);

int arb_ctx_n_past(const arb_ctx *c);          /* committed prefix length */
int arb_ctx_truncate(arb_ctx *c, int n_past);  /* drop committed tokens beyond n_past */
const arb_model *arb_ctx_model(const arb_ctx *c);
/* Run fn(ud, i, n) once for every i in [0, n) on the context's kernel threads (the
   caller included), returning when all are done; lets the caller's per-row work (e.g.
   top-K of each logits row) use the eval's threads. Which thread runs which i is not
   fixed: fn must key its work on i. Between evals only; allocates nothing. */
int arb_ctx_parallel_for(arb_ctx *c, int n, void (*fn)(void *ud, int i, int n), void *ud);
/* How many threads arb_ctx_parallel_for runs on (the caller included): a caller with work
   that only pays in parallel (one pass over every row instead of the rows it reads) asks. */
int arb_ctx_n_threads(const arb_ctx *c);

/* ---- Top-K of a logits row: the one implementation arb_eval_ex's topk output, decode and
   the drafters share (engine/topk.c). One pass over the row; the fastest path this CPU has
   (AVX-512, AVX2+FMA, plain C), every path returning the same ids and bit-identical scores.
   Scores are within ~1e-5 relative of the exact softmax (engine/topk.c: measured max 7e-6).
   Values must be finite or -inf (a row of -inf only gives 1/V each). Thread-safe, no allocation, no state. ---- */
#define ARB_TOPK_K_MAX 16 /* largest K of arb_topk_softmax and arb_eval_out.topk_k */
enum { ARB_TOPK_BASE, ARB_TOPK_AVX2, ARB_TOPK_AVX512 };
/* ids[0..K) best first (ties: lower id first), scores[j] = softmax probability of ids[j]
   over the whole row; 1 <= K <= ARB_TOPK_K_MAX, V >= 1 (V < K: ids and scores beyond V are 0). */
void arb_topk_softmax(const float *row, int V, int K, int32_t *ids, float *scores);
/* The same on one path (tests, benchmarks); false, writing nothing, if this CPU or build
   lacks it. */
bool arb_topk_softmax_isa(int isa, const float *row, int V, int K, int32_t *ids, float *scores);
int arb_topk_isa_best(void); /* the path arb_topk_softmax takes here */
/* ids[0] alone: the index of the largest value, the lowest one among equals. V >= 1. */
int32_t arb_topk_argmax(const float *row, int V);
int32_t arb_topk_argmax_isa(int isa, const float *row, int V); /* -1 if the path is unavailable */

/* ---- tokenizer (from the GGUF's tokenizer.ggml.* metadata) ---- */
/* Encode UTF-8 text. parse_special: "<|im_start|>" etc. map to their special ids.
   add_bos follows the model's add_bos_token flag when true. Writes up to cap ids,
   returns the total count needed in *n_out (call again with a larger buffer if > cap). */
int arb_tokenize(const arb_model *m, const char *text, size_t len, bool add_bos, bool parse_special,
                 int32_t *out, int cap, int *n_out, arb_err *err);
/* Bytes of one token's piece (raw bytes, may be a partial UTF-8 sequence). Returns
   byte count (may exceed cap: nothing written past cap), or < 0 on a bad id. */
int arb_token_piece(const arb_model *m, int32_t tok, char *buf, int cap);
bool arb_token_is_eog(const arb_model *m, int32_t tok); /* EOS, EOT, <|im_end|>, ... */

/* ---- chat templates ---- */
typedef struct arb_chat_msg { const char *role; const char *content; } arb_chat_msg;
/* Render messages with the model's template (or `tmpl_override`: "chatml", "llama3",
   "vicuna", "gemma", NULL = from metadata; a gemma3 model without one gets "gemma").
   add_assistant: append the assistant prompt.
   Writes a NUL-terminated string into buf; *n_out is the length needed. */
int arb_chat_apply(const arb_model *m, const char *tmpl_override, const arb_chat_msg *msgs,
                   int n_msgs, bool add_assistant, char *buf, size_t cap, size_t *n_out, arb_err *err);

/* ---- the machine, for run metadata and `arbor bench engine` (engine/cpu/probe.c) ---- */
typedef struct arb_machine {
    char cpu_model[64];     /* cpuid brand string, "unknown" if absent */
    char cpu_flags[96];     /* kernel-relevant ISA flags present, space-separated */
    int n_cores;            /* online logical CPUs */
    const char *matmul_isa; /* best CPU kernel family here (what isa = NULL selects):
                               "avx512vnni", "avx2", "scalar" */
} arb_machine;
void arb_machine_get(arb_machine *out);
/* The CPU kernel family arb_load_opts.isa = isa selects on this machine ("avx512vnni",
   "avx2", "scalar"); NULL if isa is not a known name. */
const char *arb_cpu_kernels(const char *isa);
/* Best read bandwidth (bytes/s) summing a `bytes` buffer (make it larger than the
   last-level cache) on n_threads threads for about `seconds`; < 0 if out of memory. */
double arb_probe_read_bw(size_t bytes, int n_threads, double seconds);
/* Peak int8 multiply-accumulates per second of the dot instruction of the kernel family
   that arb_load_opts.isa = kernels selects (NULL = the best here: vpdpbusd zmm for
   avx512vnni, maddubs + madd ymm for avx2) on n_threads threads; 0 for the scalar family,
   < 0 on failure or an unknown name. */
double arb_probe_int8_macs(const char *kernels, int n_threads, double seconds);
/* Multiply-accumulates per second of the kernel family's many-token Q4_1 instruction
   sequence (per block of 32 weights and token: the integer dots with their broadcast
   activation operands, then the scale multiply, convert and two FMAs; 8 tokens per pass),
   every operand in L1: the most a Q4_1 product over many tokens reaches with these
   kernels' instructions, whatever the scheduling or memory traffic. 0 for the scalar
   family, < 0 on failure or an unknown name. */
double arb_probe_q4_mix_macs(const char *kernels, int n_threads, double seconds);
/* Microseconds the matrix products of one n-node eval on context c take when the weights are
   already in cache: the kernels' compute bound at n nodes, against which an eval that streams
   its weights from memory is measured (`arbor bench engine`, "kernels" line). Each class of the
   model's matrices (block type, width, packed or not) is timed on the leading rows of one of
   them (~192 KB of weights per thread), best of repeated calls over about `seconds` in all,
   and scaled to the class's rows. CPU contexts only (ARB_E_UNSUPPORTED on a GPU); allocates
   its own activations and leaves the context's state (KV, last eval) untouched. */
int arb_probe_matmul_us(arb_ctx *c, int n, double seconds, double *us, arb_err *err);
/* Peak fp32 fused multiply-adds per second (vector lanes x instructions) on
   n_threads threads (0 without AVX2+FMA); < 0 on failure. */
double arb_probe_fma_flops(int n_threads, double seconds);

/* ---- the GPU of the CUDA backend, for run metadata and `arbor bench engine` ---- */
typedef struct arb_gpu_info {
    char name[96];
    int cc_major, cc_minor, n_sm;
    size_t mem_total, mem_free;
    double peak_bw; /* bytes/s from the memory clock and bus width, 0 if unknown */
} arb_gpu_info;
/* ARB_E_NODEVICE with the reason (no CUDA build, no driver, no device). */
int arb_gpu_info_get(arb_gpu_info *out, arb_err *err);
/* Measured device read bandwidth (bytes/s, best of reps) over a `bytes` buffer; < 0 on failure. */
double arb_gpu_probe_bw(size_t bytes, int reps);

/* ---- weight blocks ---- */
/* Dequantize n elements of ggml block type `type` (F32 F16 BF16 Q4_0 Q4_1 Q8_0 Q4_K Q6_K;
   n a multiple of its block size), the reference dequantization the kernels follow.
   ARB_E_UNSUPPORTED for another type, ARB_E_INVAL for a bad n. */
int arb_dequantize(uint32_t type, const void *src, float *dst, size_t n, arb_err *err);

/* ---- a GGUF file as stored, for `arbor inspect` (engine/gguf.c) ----
   Byte layout and validation: engine/gguf.h. Every count, length and offset is checked
   at open, so the views below point into the read-only mapping and stay valid until
   arb_gguf_close. Strings are views, NOT NUL-terminated. */
typedef enum arb_gguf_type {
    ARB_GGUF_U8 = 0, ARB_GGUF_I8 = 1, ARB_GGUF_U16 = 2, ARB_GGUF_I16 = 3,
    ARB_GGUF_U32 = 4, ARB_GGUF_I32 = 5, ARB_GGUF_F32 = 6, ARB_GGUF_BOOL = 7,
    ARB_GGUF_STRING = 8, ARB_GGUF_ARRAY = 9, ARB_GGUF_U64 = 10, ARB_GGUF_I64 = 11,
    ARB_GGUF_F64 = 12,
} arb_gguf_type;

typedef struct arb_gguf_str {
    const char *ptr; /* points into the mapping, NOT NUL-terminated */
    uint64_t len;    /* bytes */
} arb_gguf_str;

/* One metadata value. Scalars are decoded; arrays keep a pointer to their raw
   elements in the mapping (validated at open), read them with the accessors.
   Decoded scalars: U8..U64 in v.u64, I8..I64 in v.i64, F32/F64 in v.f64, BOOL in v.b. */
typedef struct arb_gguf_value {
    arb_gguf_type type;
    union {
        uint64_t u64; int64_t i64; double f64; bool b; arb_gguf_str str;
        struct {
            arb_gguf_type elem_type; /* type of elements (may be ARRAY: nested) */
            uint64_t n;              /* element count */
            const uint8_t *data;     /* first element in the mapping */
            uint64_t n_bytes;        /* bytes spanned by all elements */
        } arr;
    } v;
} arb_gguf_value;

typedef struct arb_gguf_kv {
    arb_gguf_str key;
    arb_gguf_value value;
} arb_gguf_kv;

typedef struct arb_gguf_tensor {
    arb_gguf_str name;
    uint32_t n_dims;     /* 1..4 */
    uint64_t ne[4];      /* elements per dim, ne[0] fastest-varying (row length) */
    uint32_t type;       /* ggml type id (arb_type_name) */
    uint64_t offset;     /* from the start of the data section */
    uint64_t n_bytes;    /* size of the data, from type and shape */
    const void *data;    /* into the mapping */
} arb_gguf_tensor;

typedef struct arb_gguf arb_gguf; /* an open, validated GGUF file */

/* Open and validate a file (mmap, read-only), exactly as arb_model_load does. On failure
   *out = NULL and err names the file and the byte offset. Returns ARB_OK, ARB_E_IO,
   ARB_E_FORMAT, ARB_E_NOMEM. */
int arb_gguf_open(const char *path, arb_gguf **out, arb_err *err);
void arb_gguf_close(arb_gguf *g); /* NULL-safe */
uint32_t arb_gguf_version(const arb_gguf *g);
uint64_t arb_gguf_alignment(const arb_gguf *g);
uint64_t arb_gguf_n_kv(const arb_gguf *g);
const arb_gguf_kv *arb_gguf_kv_at(const arb_gguf *g, uint64_t i);         /* i < n_kv */
uint64_t arb_gguf_n_tensors(const arb_gguf *g);
const arb_gguf_tensor *arb_gguf_tensor_at(const arb_gguf *g, uint64_t i); /* i < n_tensors */
/* Element i of an ARRAY value (scalars decoded; strings and nested arrays as views).
   O(1) for fixed-size elements, O(i) walk for strings/arrays; arb_gguf_arr_str is O(1)
   for string arrays (indexed at open). ARB_E_INVAL if arr is not an array, ARB_E_RANGE
   if i >= n; arb_gguf_arr_str: ARB_E_FORMAT if the elements are not strings. */
int arb_gguf_arr_at(const arb_gguf_value *arr, uint64_t i, arb_gguf_value *out);
int arb_gguf_arr_str(const arb_gguf *g, const arb_gguf_value *arr, uint64_t i, arb_gguf_str *out);
void arb_gguf_str_copy(arb_gguf_str s, char *buf, size_t cap); /* NUL-terminated, truncates */
const char *arb_gguf_type_name(arb_gguf_type t);                 /* "u32", "string", ... */
const char *arb_type_name(uint32_t type); /* ggml tensor type: "Q4_1", or "type#N" if unknown */

/* ---- low-level: the GGUF behind a model, for inspect/metadata ---- */
const char *arb_model_path(const arb_model *m);

#endif
