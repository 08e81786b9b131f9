/* cuda_host.c — the host-side parts of the CUDA backend that need no GPU: tree
 * positions, key-row lists and weight sizes. Built in every configuration, so the
 * CPU-only CI tests them, and the device code mirrors these definitions. */
#include "cuda.h"

#include "../quant.h"
#include "cuda_pack.h"

bool arb_cuda_tree_positions(const int32_t *parent, int n, int n_prefix, int32_t *pos)
{
    for (int i = 0; i < n; i++) {
        if (parent[i] < -1 || parent[i] >= i)
            return false;
        pos[i] = parent[i] < 0 ? n_prefix : pos[parent[i]] + 1;
    }
    return true;
}

int arb_cuda_key_rows(const int32_t *parent, int i, int n_prefix, int32_t *rows, int cap)
{
    int depth = 0;
    for (int a = i; a >= 0; a = parent[a])
        depth++;
    const int total = n_prefix + depth;
    for (int k = 0; k < n_prefix && k < cap; k++)
        rows[k] = k;
    int k = total;
    for (int a = i; a >= 0; a = parent[a])
        if (--k < cap)
            rows[k] = n_prefix + a;
    return total;
}

bool arb_cuda_type_supported(uint32_t type)
{
    switch (type) {
    case ARB_TYPE_F32: case ARB_TYPE_F16: case ARB_TYPE_BF16: case ARB_TYPE_Q4_0:
    case ARB_TYPE_Q4_1: case ARB_TYPE_Q8_0: case ARB_TYPE_Q4_K: case ARB_TYPE_Q6_K:
        return true;
    default:
        return false;
    }
}

/* Device allocations are rounded up to 256 bytes (the same rule as cuda_model.cu). */
static size_t al(size_t b) { return (b + 255) & ~(size_t)255; }

bool arb_cuda_weight_bytes(const arb_cuda_model_desc *d, size_t *raw, size_t *fp16)
{
    size_t r = 0, h = 0;
    const size_t E = (size_t)d->n_embd;
    const arb_cuda_mat_desc *tied = d->output.data == d->tok_embd.data ? NULL : &d->output;
    const arb_cuda_mat_desc *top[2] = {&d->tok_embd, tied};
    for (int i = 0; i < 2; i++) {
        if (!top[i])
            continue;
        if (!arb_cuda_type_supported(top[i]->type) || top[i]->n_in % 32)
            return false;
        r += al((size_t)top[i]->n_out * top[i]->row_bytes);
    }
    h += al((size_t)d->output.n_out * (size_t)d->output.n_in * 2);
    r += al(E * 4); /* output norm */
    for (int l = 0; l < d->n_layer; l++) {
        const arb_cuda_layer_desc *L = &d->layers[l];
        const arb_cuda_mat_desc *ms[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++) {
            if (!arb_cuda_type_supported(ms[i]->type) || ms[i]->n_in % 32)
                return false;
            r += al((size_t)ms[i]->n_out * ms[i]->row_bytes);
            h += al((size_t)ms[i]->n_out * (size_t)ms[i]->n_in * 2);
        }
        const size_t qd = (size_t)d->n_head * d->head_dim, kvd = (size_t)d->n_head_kv * d->head_dim;
        r += 2 * al(E * 4);
        r += L->bq ? al(qd * 4) : 0;
        r += L->bk ? al(kvd * 4) : 0;
        r += L->bv ? al(kvd * 4) : 0;
        r += L->q_norm ? 2 * al((size_t)d->head_dim * 4) : 0;
    }
    *raw = r;
    *fp16 = h;
    return true;
}

bool arb_cuda_packed_block(uint32_t type, int *quant_bytes, int *scale_bytes)
{
    switch (type) {
    case ARB_TYPE_Q4_0: *quant_bytes = 16, *scale_bytes = 2; return true;
    case ARB_TYPE_Q4_1: *quant_bytes = 16, *scale_bytes = 4; return true;
    case ARB_TYPE_Q8_0: *quant_bytes = 32, *scale_bytes = 2; return true;
    default: return false;
    }
}

static size_t packed_mat_bytes(const arb_cuda_mat_desc *m)
{
    int qb, sb;
    if (!arb_cuda_packed_block(m->type, &qb, &sb))
        return 0;
    /* rows padded to chunks of 32 blocks (1024 elements) */
    const size_t blocks = (size_t)m->n_out * (size_t)arb_pack_chunks(m->n_in) * 32;
    return al(blocks * (size_t)qb) + al(blocks * (size_t)sb);
}

size_t arb_cuda_packed_bytes(const arb_cuda_model_desc *d)
{
    size_t b = packed_mat_bytes(&d->output);
    for (int l = 0; l < d->n_layer; l++) {
        const arb_cuda_layer_desc *L = &d->layers[l];
        const arb_cuda_mat_desc *ms[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++)
            b += packed_mat_bytes(ms[i]);
    }
    return b;
}

bool arb_cuda_pack_row_layout(uint32_t type, const void *row, int n_in, bool q8x, uint8_t *qs, uint8_t *sc)
{
    int qb, sb;
    if (!arb_cuda_packed_block(type, &qb, &sb) || n_in <= 0 || n_in % 32)
        return false;
    const int q8 = type == ARB_TYPE_Q8_0, bb = sb + qb, nch = arb_pack_chunks(n_in);
    for (int c = 0; c < nch; c++)
        for (int lane = 0; lane < 32; lane++) {
            uint32_t w[8];
            uint8_t *s = sc + ((size_t)c * 32 + lane) * sb;
            if (q8x)
                arb_pack_lane_q8x((const uint8_t *)row, n_in, bb, sb, q8, c, lane, w, s);
            else
                arb_pack_lane((const uint8_t *)row, n_in, bb, sb, q8, c, lane, w, s);
            arb_pack_store_lane(qs + (size_t)c * 32 * qb, lane, q8, w);
        }
    return true;
}

bool arb_cuda_pack_row(uint32_t type, const void *row, int n_in, uint8_t *qs, uint8_t *sc)
{
    return arb_cuda_pack_row_layout(type, row, n_in, false, qs, sc);
}

/* engine.h's GPU entry points (this file is built with and without CUDA). */
int arb_gpu_info_get(arb_gpu_info *out, arb_err *err) { return arb_cuda_device_get(out, err); }
double arb_gpu_probe_bw(size_t bytes, int reps) { return arb_cuda_probe_bw(bytes, reps); }
