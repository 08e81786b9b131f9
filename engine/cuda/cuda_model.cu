// cuda_model.cu — the device, and the model's weights uploaded once into one arena.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "cuda_pack.h"

extern "C" int arb_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); // clear the sticky "no driver" error
        return 0;
    }
    return n;
}

extern "C" int arb_cuda_device_get(arb_gpu_info *out, arb_err *err)
{
    memset(out, 0, sizeof *out);
    int n = 0, dev = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return ARB_ERR(err, ARB_E_NODEVICE, "backend cuda: no CUDA device (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none");
    }
    cudaDeviceProp p;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess)
        return ARB_ERR(err, ARB_E_NODEVICE, "backend cuda: cannot read the device's properties");
    snprintf(out->name, sizeof out->name, "%.95s", p.name);
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->n_sm = p.multiProcessorCount;
    cudaMemGetInfo(&out->mem_free, &out->mem_total);
    int clk_khz = 0, bus_bits = 0;
    // memoryClockRate left cudaDeviceProp in CUDA 13; the attributes remain.
    if (cudaDeviceGetAttribute(&clk_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess)
        out->peak_bw = 2.0 * clk_khz * 1e3 * (bus_bits / 8.0); // double data rate
    return ARB_OK;
}

__global__ static void read_sum_kernel(const float4 *p, size_t n, float *out)
{
    float4 s = make_float4(0, 0, 0, 0);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float4 v = p[i];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    if (s.x + s.y + s.z + s.w == 123.456f) // never true on zeroed memory; keeps the loads
        out[0] = s.x;
}

// Read bandwidth: a kernel summing a buffer (the decode kernels only read weights),
// best of reps. Bytes read per second.
extern "C" double arb_cuda_probe_bw(size_t bytes, int reps)
{
    float4 *buf = NULL;
    float *out = NULL;
    cudaEvent_t a = NULL, b = NULL;
    double best = -1;
    const size_t n = bytes / sizeof(float4);
    if (cudaMalloc(&buf, n * sizeof(float4)) != cudaSuccess || cudaMalloc(&out, sizeof(float)) != cudaSuccess ||
        cudaMemset(buf, 0, n * sizeof(float4)) != cudaSuccess || cudaEventCreate(&a) != cudaSuccess ||
        cudaEventCreate(&b) != cudaSuccess)
        goto done;
    for (int r = 0; r < reps + 1; r++) {
        cudaEventRecord(a);
        read_sum_kernel<<<132 * 8, 512>>>(buf, n, out);
        cudaEventRecord(b);
        if (cudaEventSynchronize(b) != cudaSuccess)
            goto done;
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        const double bw = (double)n * sizeof(float4) / (ms * 1e-3);
        if (r > 0 && bw > best) // the first run warms up
            best = bw;
    }
done:
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    cudaFree(buf);
    cudaFree(out);
    cudaGetLastError();
    return best;
}

namespace {

size_t al(size_t b) { return (b + 255) & ~(size_t)255; }

// Bump allocation inside the arena, with the host-to-device copy.
struct uploader {
    uint8_t *base;
    size_t off, cap;
    cudaError_t e;
    void *put(const void *src, size_t bytes)
    {
        if (e != cudaSuccess || !src)
            return NULL;
        void *dst = base + off;
        off += al(bytes);
        if (off > cap) {
            e = cudaErrorMemoryAllocation;
            return NULL;
        }
        e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
        return dst;
    }
    void *reserve(size_t bytes)
    {
        if (e != cudaSuccess)
            return NULL;
        void *dst = base + off;
        off += al(bytes);
        if (off > cap) {
            e = cudaErrorMemoryAllocation;
            return NULL;
        }
        return dst;
    }
    __half *reserve_half(size_t elems) { return (__half *)reserve(elems * 2); }
};

// The packed copy of a matrix the GEMV reads (cuda_kernels.cu), for the types it packs.
void pack_mat(uploader *u, dmat *m, bool q8x)
{
    int qb, sb;
    if (!arb_cuda_packed_block(m->type, &qb, &sb) || u->e != cudaSuccess)
        return;
    const size_t blocks = (size_t)m->n_out * (size_t)arb_pack_chunks(m->n_in) * 32; // whole chunks
    uint8_t *qs = (uint8_t *)u->reserve(blocks * (size_t)qb), *sc = (uint8_t *)u->reserve(blocks * (size_t)sb);
    if (!qs || !sc)
        return;
    m->q8x = q8x;
    k_pack(kstream{}, m, qs, sc);
    u->e = cudaGetLastError();
    m->pq = qs;
    m->ps = sc;
}

dmat up_mat(uploader *u, const arb_cuda_mat_desc *d, bool fp16, bool pack, bool q8x)
{
    dmat m = {};
    m.type = d->type;
    m.n_in = d->n_in;
    m.n_out = d->n_out;
    m.row_bytes = d->row_bytes;
    m.q = (const uint8_t *)u->put(d->data, (size_t)d->n_out * d->row_bytes);
    if (fp16) {
        __half *h = u->reserve_half((size_t)d->n_out * d->n_in);
        if (h && u->e == cudaSuccess) {
            k_to_half(kstream{}, &m, h);
            u->e = cudaGetLastError();
        }
        m.h = h;
    }
    if (pack)
        pack_mat(u, &m, q8x);
    return m;
}

} // namespace

extern "C" int arb_cuda_model_new(const arb_cuda_model_desc *d, bool exact, arb_cuda_model **out, arb_err *err)
{
    *out = NULL;
    arb_gpu_info di;
    int rc = arb_cuda_device_get(&di, err);
    if (rc)
        return rc;
    size_t raw = 0, h16 = 0;
    if (!arb_cuda_weight_bytes(d, &raw, &h16))
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "%s: backend cuda: a weight matrix has a type the CUDA kernels do not read "
                       "(F32 F16 BF16 Q4_0 Q4_1 Q8_0 Q4_K Q6_K)", d->path);
    // The quantized GEMV (docs/gpu.md): dp4a (int8 activations, the CPU's quantization
    // and per-block arithmetic; exact mode's default: batch-invariant, and 1.6x the float
    // GEMV's decode on an 8B Q4_0 model), packed (float activations, exact dequantization;
    // fast mode's default: its results stay near cuBLAS's FP16 batches, where int8
    // rounding amplifies the small FP16 differences 20x, measured) or rowwarp (the GGUF
    // blocks as stored; the first kernel, for comparisons). ARBOR_CUDA_GEMV overrides.
    const char *gv = getenv("ARBOR_CUDA_GEMV");
    if (gv && strcmp(gv, "packed") && strcmp(gv, "rowwarp") && strcmp(gv, "dp4a"))
        return ARB_ERR(err, ARB_E_INVAL, "ARBOR_CUDA_GEMV=%s: expected dp4a, packed or rowwarp", gv);
    const bool pack = !gv || strcmp(gv, "rowwarp");
    const bool q8x = gv ? !strcmp(gv, "dp4a") : exact;
    const size_t need = raw + (exact ? 0 : h16) + (pack ? arb_cuda_packed_bytes(d) : 0);
    arb_cuda_model *m = (arb_cuda_model *)calloc(1, sizeof *m);
    if (!m)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", d->path);
    m->layers = (dlayer *)calloc((size_t)d->n_layer, sizeof *m->layers);
    if (!m->layers) {
        free(m);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", d->path);
    }
    m->n_vocab = d->n_vocab, m->n_embd = d->n_embd, m->n_layer = d->n_layer, m->n_head = d->n_head;
    m->n_head_kv = d->n_head_kv, m->head_dim = d->head_dim, m->n_ff = d->n_ff, m->eps = d->eps;
    m->neox = d->rope_neox, m->exact = exact;
    cudaGetDevice(&m->device);
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, m->device);
    m->smem_optin = (size_t)optin;
    cudaError_t e = cudaMalloc(&m->arena, need);
    if (e != cudaSuccess) {
        cudaGetLastError();
        free(m->layers);
        free(m);
        return ARB_ERR(err, e == cudaErrorMemoryAllocation ? ARB_E_NOMEM : ARB_E_NODEVICE,
                       "%s: backend cuda: cannot allocate %.1f MB of device memory for the weights%s "
                       "(%.1f MB free of %.1f MB on %s): %s", d->path, need / 1e6,
                       exact ? "" : " and their FP16 copies", di.mem_free / 1e6, di.mem_total / 1e6, di.name,
                       cudaGetErrorString(e));
    }
    m->arena_bytes = need;
    uploader u = {(uint8_t *)m->arena, 0, need, cudaSuccess};
    m->tok_embd = up_mat(&u, &d->tok_embd, false, false, false); // read by rows only
    if (d->output.data == d->tok_embd.data) { // tied head: the same blocks
        m->output = m->tok_embd;
        if (!exact) {
            m->output.h = u.reserve_half((size_t)d->output.n_out * d->output.n_in);
            if (m->output.h && u.e == cudaSuccess) {
                k_to_half(kstream{}, &m->output, (__half *)m->output.h);
                u.e = cudaGetLastError();
            }
        }
        if (pack)
            pack_mat(&u, &m->output, q8x);
    } else {
        m->output = up_mat(&u, &d->output, !exact, pack, q8x);
    }
    m->output_norm = (const float *)u.put(d->output_norm, (size_t)d->n_embd * 4);
    const size_t E = (size_t)d->n_embd, qd = (size_t)d->n_head * d->head_dim, kvd = (size_t)d->n_head_kv * d->head_dim;
    for (int l = 0; l < d->n_layer && u.e == cudaSuccess; l++) {
        const arb_cuda_layer_desc *L = &d->layers[l];
        dlayer *D = &m->layers[l];
        D->attn_norm = (const float *)u.put(L->attn_norm, E * 4);
        D->ffn_norm = (const float *)u.put(L->ffn_norm, E * 4);
        D->bq = (const float *)u.put(L->bq, qd * 4);
        D->bk = (const float *)u.put(L->bk, kvd * 4);
        D->bv = (const float *)u.put(L->bv, kvd * 4);
        D->q_norm = (const float *)u.put(L->q_norm, (size_t)d->head_dim * 4);
        D->k_norm = (const float *)u.put(L->k_norm, (size_t)d->head_dim * 4);
        D->wq = up_mat(&u, &L->wq, !exact, pack, q8x);
        D->wk = up_mat(&u, &L->wk, !exact, pack, q8x);
        D->wv = up_mat(&u, &L->wv, !exact, pack, q8x);
        D->wo = up_mat(&u, &L->wo, !exact, pack, q8x);
        D->w_gate = up_mat(&u, &L->w_gate, !exact, pack, q8x);
        D->w_up = up_mat(&u, &L->w_up, !exact, pack, q8x);
        D->w_down = up_mat(&u, &L->w_down, !exact, pack, q8x);
    }
    if (u.e == cudaSuccess)
        u.e = cudaDeviceSynchronize();
    if (u.e != cudaSuccess) {
        const cudaError_t fe = u.e;
        cudaGetLastError();
        arb_cuda_model_free(m);
        return ARB_ERR(err, ARB_E_NODEVICE, "%s: backend cuda: uploading the weights failed: %s", d->path,
                       cudaGetErrorString(fe));
    }
    *out = m;
    return ARB_OK;
}

extern "C" void arb_cuda_model_free(arb_cuda_model *m)
{
    if (!m)
        return;
    cudaFree(m->arena);
    free(m->layers);
    free(m);
}

extern "C" bool arb_cuda_model_exact(const arb_cuda_model *m) { return m->exact; }
extern "C" size_t arb_cuda_model_device_bytes(const arb_cuda_model *m) { return m->arena_bytes; }
