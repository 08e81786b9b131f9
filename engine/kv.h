/* kv.h — the KV cache of one sequence: committed prefix rows, then the rows of
 * the nodes of the last evaluation (scratch), per layer, in f32.
 *
 * Layout per layer, head-major: K and V are each n_head_kv blocks of n_rows x
 * head_dim floats, so the rows of one KV head are contiguous. Attention reads one
 * KV head's rows at a time; in the row-major layout (a row of all heads, n_head_kv
 * x head_dim floats) that pass read 256 of every 768 bytes (SmolLM2) and streamed
 * at half the rate of a contiguous pass (docs/engine.md, "The KV cache, head-major").
 * Rows 0..n_past-1 hold the committed prefix; an eval of n nodes writes node i's
 * K/V at row n_past + i. Committing a root-to-node path moves those rows down to
 * n_past, n_past+1, ... (a chain needs no copy), so the cache never holds anything
 * but the prefix plus one tree.
 *
 *     arb_kv kv; arb_err err = {0};
 *     if (arb_kv_init(&kv, n_layer, n_rows, n_head_kv, head_dim, true, &err)) die(err.msg);
 *     float *k = arb_kv_k(&kv, layer, h, kv.n_past + i);  // node i's key of KV head h
 *     arb_kv_commit(&kv, path, n_path);                     // path: increasing batch indices
 *     arb_kv_release(&kv);
 */
#ifndef ARB_KV_H
#define ARB_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct arb_kv {
    int n_layer;   /* layers with a cache */
    int n_rows;    /* capacity in tokens (prefix + one tree) */
    int n_head_kv; /* KV heads */
    int head_dim;  /* floats per head row */
    int n_past;    /* committed rows */
    float *k;      /* n_layer x n_head_kv x n_rows x head_dim */
    float *v;      /* n_layer x n_head_kv x n_rows x head_dim */
    size_t bytes;  /* of k, and of v (arb_bigmem_free) */
} arb_kv;

/* Allocate (zeroed), on transparent huge pages when huge_pages (bigmem.h: at 2 MB pages a
   KV head's region of n_rows rows is resident from its first row, so the whole cache is,
   e.g. 184 MB for SmolLM2 at 4096 tokens, where 4 KB pages grow with the context).
   ARB_E_NOMEM / ARB_E_INVAL on overflowing sizes; kv is zeroed on failure. */
int arb_kv_init(arb_kv *kv, int n_layer, int n_rows, int n_head_kv, int head_dim, bool huge_pages, arb_err *err);
void arb_kv_release(arb_kv *kv); /* safe on a zeroed struct */

/* Floats from one KV head's rows to the next head's, within a layer. */
static inline size_t arb_kv_head_stride(const arb_kv *kv) { return (size_t)kv->n_rows * (size_t)kv->head_dim; }

static inline float *arb_kv_k(const arb_kv *kv, int layer, int head, int row)
{
    return kv->k + ((size_t)layer * kv->n_head_kv + (size_t)head) * arb_kv_head_stride(kv) +
           (size_t)row * kv->head_dim;
}
static inline float *arb_kv_v(const arb_kv *kv, int layer, int head, int row)
{
    return kv->v + ((size_t)layer * kv->n_head_kv + (size_t)head) * arb_kv_head_stride(kv) +
           (size_t)row * kv->head_dim;
}

/* Keep the scratch rows n_past + path[j] as rows n_past + j (j < n), for every layer
   and head, then n_past += n. path must be strictly increasing (a root-to-node path of
   a tree whose parents precede children), which makes the in-place move safe. */
void arb_kv_commit(arb_kv *kv, const int32_t *path, int n);

#endif
