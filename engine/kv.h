/* kv.h — the KV cache of one sequence: committed prefix rows, then the rows of
 * the nodes of the last evaluation (scratch), per layer, in f32.
 *
 * Layout per layer: K and V are each n_rows x row_dim floats (row_dim =
 * n_head_kv * head_dim). Rows 0..n_past-1 hold the committed prefix; an eval of
 * n nodes writes node i's K/V at row n_past + i. Committing a root-to-node path
 * moves those rows down to n_past, n_past+1, ... (a chain needs no copy), so the
 * cache never holds anything but the prefix plus one tree.
 *
 *     arb_kv kv; arb_err err = {0};
 *     if (arb_kv_init(&kv, n_layer, n_rows, row_dim, &err)) die(err.msg);
 *     float *k = arb_kv_k(&kv, layer, kv.n_past + i);    // write node i's key
 *     arb_kv_commit(&kv, path, n_path);                    // path: increasing batch indices
 *     arb_kv_release(&kv);
 */
#ifndef ARB_KV_H
#define ARB_KV_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct arb_kv {
    int n_layer; /* layers with a cache */
    int n_rows;  /* capacity in tokens (prefix + one tree) */
    int row_dim; /* floats per row: n_head_kv * head_dim */
    int n_past;  /* committed rows */
    float *k;    /* n_layer x n_rows x row_dim */
    float *v;    /* n_layer x n_rows x row_dim */
} arb_kv;

/* Allocate (zeroed). ARB_E_NOMEM / ARB_E_INVAL on overflowing sizes; kv is zeroed on failure. */
int arb_kv_init(arb_kv *kv, int n_layer, int n_rows, int row_dim, arb_err *err);
void arb_kv_release(arb_kv *kv); /* safe on a zeroed struct */

static inline float *arb_kv_k(const arb_kv *kv, int layer, int row)
{
    return kv->k + ((size_t)layer * kv->n_rows + (size_t)row) * kv->row_dim;
}
static inline float *arb_kv_v(const arb_kv *kv, int layer, int row)
{
    return kv->v + ((size_t)layer * kv->n_rows + (size_t)row) * kv->row_dim;
}

/* Keep the scratch rows n_past + path[j] as rows n_past + j (j < n), for every layer,
   then n_past += n. path must be strictly increasing (a root-to-node path of a tree
   whose parents precede children), which makes the in-place move safe. */
void arb_kv_commit(arb_kv *kv, const int32_t *path, int n);

#endif
