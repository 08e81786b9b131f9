/* kv.c — KV cache storage and commit (see kv.h for the layout). */
#include "kv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"

int arb_kv_init(arb_kv *kv, int n_layer, int n_rows, int n_head_kv, int head_dim, bool huge_pages, arb_err *err)
{
    memset(kv, 0, sizeof *kv);
    if (n_layer < 1 || n_rows < 1 || n_head_kv < 1 || head_dim < 1)
        return ARB_ERR(err, ARB_E_INVAL, "kv: bad shape %d x %d x %d x %d", n_layer, n_head_kv, n_rows, head_dim);
    const size_t row_dim = (size_t)n_head_kv * (size_t)head_dim;
    size_t per = (size_t)n_rows * row_dim;
    if (row_dim > SIZE_MAX / (size_t)n_rows || per > SIZE_MAX / sizeof(float) / (size_t)n_layer)
        return ARB_ERR(err, ARB_E_INVAL, "kv: %d x %d x %d x %d floats overflow", n_layer, n_head_kv, n_rows,
                       head_dim);
    size_t total = per * (size_t)n_layer;
    kv->bytes = total * sizeof(float);
    kv->k = arb_bigmem_alloc(kv->bytes, huge_pages);
    kv->v = arb_bigmem_alloc(kv->bytes, huge_pages);
    if (!kv->k || !kv->v) {
        arb_kv_release(kv);
        return ARB_ERR(err, ARB_E_NOMEM, "kv: out of memory for %zu MiB",
                       2 * total * sizeof(float) >> 20);
    }
    kv->n_layer = n_layer;
    kv->n_rows = n_rows;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    return ARB_OK;
}

void arb_kv_release(arb_kv *kv)
{
    if (!kv)
        return;
    arb_bigmem_free(kv->k, kv->bytes);
    arb_bigmem_free(kv->v, kv->bytes);
    memset(kv, 0, sizeof *kv);
}

void arb_kv_commit(arb_kv *kv, const int32_t *path, int n)
{
    const size_t bytes = (size_t)kv->head_dim * sizeof(float);
    for (int l = 0; l < kv->n_layer; l++)
        for (int h = 0; h < kv->n_head_kv; h++)
            for (int j = 0; j < n; j++) {
                if (path[j] == j)
                    continue; /* already in place (chains) */
                memmove(arb_kv_k(kv, l, h, kv->n_past + j), arb_kv_k(kv, l, h, kv->n_past + path[j]), bytes);
                memmove(arb_kv_v(kv, l, h, kv->n_past + j), arb_kv_v(kv, l, h, kv->n_past + path[j]), bytes);
            }
    kv->n_past += n;
}
