/* matmul.c — dispatch, activation quantisation, threading and the scalar kernels.
 *
 * arb_matmul quantizes each activation row once (Q8_0-style blocks of 32 with an
 * f32 scale, or Q8_K-style blocks of 256 for K-quant weights, see matmul_int.h),
 * then splits the output rows into fixed chunks that pool threads claim. Each
 * (row, token) pair is reduced by the same sequence of float operations whatever
 * n_tok, the tiling, the thread count or which thread computes it, which is what
 * makes the engine batch invariant. The kernel family is a property of each matrix
 * (arb_qmat.kern, set by the model from arb_load_opts.isa; NULL = the best family this
 * CPU has, chosen once from cpuid); SIMD families live in
 * matmul_avx2.c / matmul_avx512.c and may fall back to the scalar kernel per type.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpuinfo.h"
#include "matmul_int.h"

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static int is_kquant(uint32_t t) { return t == ARB_TYPE_Q4_K || t == ARB_TYPE_Q5_K || t == ARB_TYPE_Q6_K; }
static int is_raw(uint32_t t) { return t == ARB_TYPE_F32 || t == ARB_TYPE_F16; }

mm_layout arb_mm_layout(uint32_t type, int n_in)
{
    mm_layout l = {0};
    if (is_raw(type))
        return l;
    l.B = is_kquant(type) ? 256 : 32;
    l.G = is_kquant(type) ? 16 : 32;
    size_t nb = (size_t)n_in / (size_t)l.B, ng = (size_t)n_in / (size_t)l.G;
    if (l.B == 32) /* per-block arrays padded with zeros to whole 16-block chunks */
        nb = ng = (nb + 15) / 16 * 16;
    l.off_d = align64((size_t)n_in);
    l.off_isum = align64(l.off_d + nb * sizeof(float));
    l.off_fsum = align64(l.off_isum + ng * sizeof(int32_t));
    l.off_corr = align64(l.off_fsum + nb * sizeof(float));
    if (l.B == 32) {
        l.stride = align64(l.off_corr + nb * sizeof(int32_t));
        return l;
    }
    l.off_s16 = l.off_corr;
    l.off_s32 = align64(l.off_s16 + ng * sizeof(int16_t));
    l.stride = align64(l.off_s32 + (size_t)n_in / 32 * sizeof(int16_t));
    return l;
}

size_t arb_matmul_work_bytes(uint32_t type, int n_in, int n_tok)
{
    if (n_in <= 0 || n_tok <= 0)
        return 0;
    mm_layout l = arb_mm_layout(type, n_in);
    return l.stride ? l.stride * (size_t)n_tok + 64 : 0; /* +64: we align the base */
}

/* Round half to even for |v| < 2^22 under the default rounding mode: adding
   1.5 * 2^23 pushes the fraction out of the mantissa. Exact, branch-free, no libm
   call; the compiler may not fold it without -ffast-math (which arbor never uses). */
static inline int round_q(float v)
{
    const float magic = 12582912.0f;
    return (int)((v + magic) - magic);
}

/* Quantize one activation row into the layout (qs, d, isum, fsum of the real
   blocks). arb_mm_quant_avx2 computes the same bits with SIMD: max is exact, and
   x * (1/d) rounded half-to-even is the same IEEE operation in both. */
void arb_mm_quant_scalar(const float *x, int n_in, const mm_layout *l, uint8_t *dst)
{
    int8_t *qs = (int8_t *)dst;
    float *d = (float *)(dst + l->off_d);
    int32_t *isum = (int32_t *)(dst + l->off_isum);
    float *fsum = (float *)(dst + l->off_fsum);
    const int B = l->B, G = l->G;
    for (int b = 0; b < n_in / B; b++) {
        const float *xb = x + (size_t)b * B;
        float amax = 0.0f;
        for (int i = 0; i < B; i++) {
            float a = xb[i] < 0 ? -xb[i] : xb[i];
            amax = a > amax ? a : amax;
        }
        const float db = amax / 127.0f;
        const float id = db != 0.0f ? 1.0f / db : 0.0f;
        int8_t *q = qs + (size_t)b * B;
        int sb = 0;
        for (int i = 0; i < B; i++) {
            int v = round_q(xb[i] * id);
            v = v > 127 ? 127 : v < -127 ? -127 : v;
            q[i] = (int8_t)v;
            sb += v;
        }
        d[b] = db;
        if (B == 32)
            fsum[b] = db * (float)sb;
        for (int g = 0; g < B / G; g++) {
            int s = 0;
            for (int i = 0; i < G; i++)
                s += q[g * G + i];
            isum[(b * B) / G + g] = s;
        }
    }
}

/* Zero padding up to whole 16-block vectors and, for the AVX-512 kernels on packed
   Q4_0/Q8_0 weights (corr_c = 8 / 128), corr = -corr_c * isum (matmul_int.h). */
static void quant_finish(int n_in, const mm_layout *l, uint8_t *dst, int corr_c)
{
    if (l->B == 256) { /* the group sums again as int16, per 16 and per 32 elements */
        const int32_t *isum = (const int32_t *)(dst + l->off_isum);
        int16_t *s16 = (int16_t *)(dst + l->off_s16), *s32 = (int16_t *)(dst + l->off_s32);
        for (int g = 0; g < n_in / 16; g++)
            s16[g] = (int16_t)isum[g];
        for (int g = 0; g < n_in / 32; g++)
            s32[g] = (int16_t)(isum[2 * g] + isum[2 * g + 1]);
        return;
    }
    if (l->B != 32)
        return;
    float *d = (float *)(dst + l->off_d);
    int32_t *isum = (int32_t *)(dst + l->off_isum);
    float *fsum = (float *)(dst + l->off_fsum);
    const int nb = n_in / 32, nb16 = (nb + 15) / 16 * 16;
    for (int b = nb; b < nb16; b++) {
        d[b] = 0.0f;
        fsum[b] = 0.0f;
        isum[b] = 0;
    }
    if (!corr_c)
        return;
    int32_t *corr = (int32_t *)(dst + l->off_corr);
    for (int b = 0; b < nb; b++)
        corr[b] = -corr_c * isum[b];
}

/* ---------------------------------------------------------------- scalar kernels */

static inline float fp16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } o;
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) {
        o.u = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (!mant) {
            o.u = sign;
        } else {
            o.f = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24, exact */
            o.u |= sign;
        }
    } else {
        o.u = sign | ((exp + 112) << 23) | (mant << 13);
    }
    return o.f;
}

static inline const uint8_t *wrow(const mm_job *j, int r) { return (const uint8_t *)j->w->data + (size_t)r * j->w->row_bytes; }

static float dot_q4_0(const mm_job *j, int r, int t)
{
    const arb_block_q4_0 *w = (const arb_block_q4_0 *)wrow(j, r);
    const int8_t *q = mm_qs(j, t);
    const float *d = mm_d(j, t);
    float acc = 0.0f;
    for (int b = 0; b < j->w->n_in / 32; b++, q += 32) {
        int s = 0;
        for (int i = 0; i < 16; i++)
            s += ((w[b].qs[i] & 0xF) - 8) * q[i] + ((w[b].qs[i] >> 4) - 8) * q[i + 16];
        acc += (fp16_to_f32(w[b].d) * d[b]) * (float)s;
    }
    return acc;
}

static float dot_q4_1(const mm_job *j, int r, int t)
{
    const arb_block_q4_1 *w = (const arb_block_q4_1 *)wrow(j, r);
    const int8_t *q = mm_qs(j, t);
    const float *d = mm_d(j, t), *fs = mm_fsum(j, t);
    float acc = 0.0f, accm = 0.0f;
    for (int b = 0; b < j->w->n_in / 32; b++, q += 32) {
        int s = 0;
        for (int i = 0; i < 16; i++)
            s += (w[b].qs[i] & 0xF) * q[i] + (w[b].qs[i] >> 4) * q[i + 16];
        acc += (fp16_to_f32(w[b].d) * d[b]) * (float)s;
        accm += fp16_to_f32(w[b].m) * fs[b];
    }
    return acc + accm;
}

static float dot_q8_0(const mm_job *j, int r, int t)
{
    const arb_block_q8_0 *w = (const arb_block_q8_0 *)wrow(j, r);
    const int8_t *q = mm_qs(j, t);
    const float *d = mm_d(j, t);
    float acc = 0.0f;
    for (int b = 0; b < j->w->n_in / 32; b++, q += 32) {
        int s = 0;
        for (int i = 0; i < 32; i++)
            s += w[b].qs[i] * q[i];
        acc += (fp16_to_f32(w[b].d) * d[b]) * (float)s;
    }
    return acc;
}

/* Q4_K, and Q5_K (q5: a fifth bit per code, bit s of qh[i] for element i of sub-block s,
   worth 16; its qh sits between the scales and qs). */
static float dot_q4_k_or_q5(const mm_job *j, int r, int t, int q5)
{
    const size_t bsz = q5 ? 176 : 144;
    const uint8_t *row = (const uint8_t *)wrow(j, r);
    const int8_t *q = mm_qs(j, t);
    const float *d = mm_d(j, t);
    const int32_t *is = mm_isum(j, t);
    float acc = 0.0f;
    for (int b = 0; b < j->w->n_in / 256; b++, q += 256, is += 16) {
        const uint8_t *blk = row + (size_t)b * bsz, *qh = blk + 16;
        int32_t sumi = 0, summ = 0;
        for (int c = 0; c < 4; c++) { /* 64-element chunks: low nibbles then high */
            const uint8_t *qs = blk + (q5 ? 48 : 16) + 32 * c;
            uint8_t sc0, m0, sc1, m1;
            mm_q4k_scale_min(2 * c, blk + 4, &sc0, &m0);
            mm_q4k_scale_min(2 * c + 1, blk + 4, &sc1, &m1);
            int s0 = 0, s1 = 0;
            for (int i = 0; i < 32; i++) {
                const int h0 = q5 ? ((qh[i] >> (2 * c)) & 1) << 4 : 0, h1 = q5 ? ((qh[i] >> (2 * c + 1)) & 1) << 4 : 0;
                s0 += ((qs[i] & 0xF) | h0) * q[64 * c + i];
                s1 += ((qs[i] >> 4) | h1) * q[64 * c + 32 + i];
            }
            sumi += sc0 * s0 + sc1 * s1;
            summ += m0 * (is[4 * c] + is[4 * c + 1]) + m1 * (is[4 * c + 2] + is[4 * c + 3]);
        }
        uint16_t dh[2];
        memcpy(dh, blk, 4);
        const float dd = fp16_to_f32(dh[0]) * d[b], dm = fp16_to_f32(dh[1]) * d[b];
        acc += dd * (float)sumi - dm * (float)summ;
    }
    return acc;
}
static float dot_q4_k(const mm_job *j, int r, int t) { return dot_q4_k_or_q5(j, r, t, 0); }
static float dot_q5_k(const mm_job *j, int r, int t) { return dot_q4_k_or_q5(j, r, t, 1); }

static float dot_q6_k(const mm_job *j, int r, int t)
{
    const arb_block_q6_k *w = (const arb_block_q6_k *)wrow(j, r);
    const int8_t *q = mm_qs(j, t);
    const float *d = mm_d(j, t);
    const int32_t *is = mm_isum(j, t);
    float acc = 0.0f;
    for (int b = 0; b < j->w->n_in / 256; b++, q += 256, is += 16) {
        int32_t g[16] = {0}; /* sum of u*q per group of 16, u = unsigned 6-bit value */
        const uint8_t *ql = w[b].ql, *qh = w[b].qh;
        for (int h = 0; h < 2; h++, ql += 64, qh += 32) { /* two halves of 128 */
            const int8_t *qq = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                const int u1 = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
                const int u2 = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
                const int u3 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                const int u4 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                g[8 * h + l / 16 + 0] += u1 * qq[l];
                g[8 * h + l / 16 + 2] += u2 * qq[l + 32];
                g[8 * h + l / 16 + 4] += u3 * qq[l + 64];
                g[8 * h + l / 16 + 6] += u4 * qq[l + 96];
            }
        }
        int32_t sumi = 0;
        for (int k = 0; k < 16; k++)
            sumi += w[b].scales[k] * (g[k] - 32 * is[k]);
        acc += (fp16_to_f32(w[b].d) * d[b]) * (float)sumi;
    }
    return acc;
}

/* F32/F16 weights: 8 fixed lanes + a fixed combining tree, as arb_dot_f32 (vec_int.h). */
static float dot_raw(const mm_job *j, int r, int t)
{
    const int n = j->w->n_in;
    const float *x = j->x + (size_t)t * n;
    float acc[8] = {0};
    if (j->w->type == ARB_TYPE_F32) {
        const float *w = (const float *)wrow(j, r);
        for (int i = 0; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++)
                acc[l] += w[i + l] * x[i + l];
    } else {
        const uint16_t *w = (const uint16_t *)wrow(j, r);
        for (int i = 0; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++)
                acc[l] += fp16_to_f32(w[i + l]) * x[i + l];
    }
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    const int tail = n & ~7;
    for (int i = tail; i < n; i++)
        s += (j->w->type == ARB_TYPE_F32 ? ((const float *)wrow(j, r))[i] : fp16_to_f32(((const uint16_t *)wrow(j, r))[i])) * x[i];
    return s;
}

typedef float (*dot_fn)(const mm_job *j, int r, int t);

static void rows_generic(const mm_job *j, int r0, int r1, dot_fn dot)
{
    const int n_out = j->w->n_out;
    for (int rb = r0; rb < r1; rb += MM_ROW_BLOCK) {
        const int re = rb + MM_ROW_BLOCK < r1 ? rb + MM_ROW_BLOCK : r1;
        for (int t = 0; t < j->n_tok; t++)
            for (int r = rb; r < re; r++)
                j->y[(size_t)t * n_out + r] = dot(j, r, t);
    }
}

static void rows_q4_0(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_q4_0); }
static void rows_q4_1(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_q4_1); }
static void rows_q8_0(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_q8_0); }
static void rows_q4_k(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_q4_k); }
static void rows_q5_k(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_q5_k); }
static void rows_q6_k(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_q6_k); }
static void rows_raw(const mm_job *j, int r0, int r1) { rows_generic(j, r0, r1, dot_raw); }

const mm_impl arb_mm_scalar = {
    .name = "scalar",
    .q4_0 = rows_q4_0, .q4_1 = rows_q4_1, .q8_0 = rows_q8_0,
    .q4_k = rows_q4_k, .q5_k = rows_q5_k, .q6_k = rows_q6_k, .f16 = rows_raw, .f32 = rows_raw,
};

/* ---------------------------------------------------------------- dispatch */

/* The process default, for matrices that name no family (kern NULL: built outside a
   model, as tests and the probes do): the best family this CPU has. It stays a global
   because it is a fact of the machine, not configuration (a model's choice travels in
   its matrices, arb_load_opts.isa), cached because cpuid per call would cost more than a
   small matmul, and because tests switch the family under hand-built matrices with
   arb_matmul_force_isa, its only other writer. */
static _Atomic(const mm_impl *) g_impl;

static bool cpu_has(const arb_cpuinfo *ci, const mm_impl *p)
{
    if (p == &arb_mm_avx2)
        return ci->avx2 && ci->fma && ci->f16c && arb_mm_avx2.q4_1;
    if (p == &arb_mm_avx512)
        return ci->avx512f && ci->avx512bw && ci->avx512vl && ci->avx512vnni && arb_mm_avx512.q4_1;
    return p == &arb_mm_scalar;
}

static const mm_impl *best_impl(const arb_cpuinfo *ci)
{
    return cpu_has(ci, &arb_mm_avx512) ? &arb_mm_avx512 : cpu_has(ci, &arb_mm_avx2) ? &arb_mm_avx2 : &arb_mm_scalar;
}

/* A family by name, NULL if unknown ("auto" = best_impl). */
static const mm_impl *named_impl(const arb_cpuinfo *ci, const char *name)
{
    if (!name || !*name || !strcmp(name, "auto"))
        return best_impl(ci);
    if (!strcmp(name, "scalar"))
        return &arb_mm_scalar;
    if (!strcmp(name, "avx2"))
        return &arb_mm_avx2;
    if (!strcmp(name, "avx512") || !strcmp(name, arb_mm_avx512.name))
        return &arb_mm_avx512;
    return NULL;
}

static const mm_impl *impl(void)
{
    const mm_impl *p = atomic_load_explicit(&g_impl, memory_order_acquire);
    if (!p) {
        arb_cpuinfo ci;
        arb_cpuinfo_get(&ci);
        p = best_impl(&ci); /* idempotent: racing first calls store the same pointer */
        atomic_store_explicit(&g_impl, p, memory_order_release);
    }
    return p;
}

const char *arb_matmul_isa(void) { return impl()->name; }

int arb_matmul_kernels(const char *name, const mm_impl **out)
{
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    const mm_impl *p = named_impl(&ci, name);
    /* A family the CPU lacks falls back to the best it has (as ARBOR_ISA always did):
       a configuration written on one machine still runs on another. */
    *out = p ? (cpu_has(&ci, p) ? p : best_impl(&ci)) : NULL;
    return p ? ARB_OK : ARB_E_INVAL;
}

const char *arb_matmul_kernels_name(const mm_impl *k) { return k ? k->name : impl()->name; }

bool arb_matmul_reads_packed(const mm_impl *k, const arb_qmat *w)
{
    const mm_impl *p = k ? k : impl();
    if (!arb_matmul_pack_bytes(w))
        return false;
    if (is_kquant(w->type)) /* both families run the packed K-quant kernels */
        return p == &arb_mm_avx512 || p == &arb_mm_avx2;
    if (p == &arb_mm_avx512)
        return true;
    return p == &arb_mm_avx2 && (w->type == ARB_TYPE_Q4_0 || w->type == ARB_TYPE_Q4_1);
}

int arb_matmul_force_isa(const char *name)
{
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    const mm_impl *p = named_impl(&ci, name);
    if (!p || !name || !*name || !cpu_has(&ci, p))
        return ARB_E_UNSUPPORTED;
    atomic_store_explicit(&g_impl, p, memory_order_release);
    return ARB_OK;
}

static mm_rows_fn rows_of(const mm_impl *p, uint32_t type)
{
    switch (type) {
    case ARB_TYPE_Q4_0: return p->q4_0;
    case ARB_TYPE_Q4_1: return p->q4_1;
    case ARB_TYPE_Q8_0: return p->q8_0;
    case ARB_TYPE_Q4_K: return p->q4_k;
    case ARB_TYPE_Q5_K: return p->q5_k;
    case ARB_TYPE_Q6_K: return p->q6_k;
    case ARB_TYPE_F16: return p->f16;
    case ARB_TYPE_F32: return p->f32;
    default: return NULL;
    }
}

/* The family's kernel for this matrix, else the next family down (avx512 -> avx2
   -> scalar); the AVX-512 kernels read only packed matrices. A function of the
   family and the matrix, never of n_tok. */
static mm_rows_fn rows_for(const mm_impl *p, const arb_qmat *w)
{
    const uint32_t type = w->type;
    mm_rows_fn f = p == &arb_mm_avx512 && !w->packed ? NULL : rows_of(p, type);
    if (!f && p == &arb_mm_avx512)
        f = rows_of(&arb_mm_avx2, type);
    return f ? f : rows_of(&arb_mm_scalar, type);
}

/* Most chunks a run is split into (arb_tp_guided's cap): enough for 32 threads. */
#define MM_CHUNK_CAP 128

/* A run's chunks of its `units` 16-row units: guided (arb_tp_guided), none smaller than
   units / (8 nth). Against 4 nth equal chunks (the split before), at two threads on an
   Intel Xeon: evals of 1, 2, 8 and 16 nodes 2.5-7 % cheaper, 4 nodes 0-5 %, prefill up
   to 5 % (docs/engine.md, "Guided chunks for the matrix runs"): each thread streams long
   contiguous row ranges first, and the claims that end a run are small. Which rows a
   chunk holds never changes a row's result. */
static int mm_chunks(int units, int nth, int *chunk)
{
    return arb_tp_guided(units, nth, units / (8 * nth), chunk, MM_CHUNK_CAP);
}

typedef struct mm_run {
    mm_job job;
    mm_rows_fn rows;
    uint8_t *act;
    int simd_quant;  /* family is avx2 or avx512: SIMD quantizer (same bits) */
    int corr_c;      /* avx512 on packed Q4_0 (8) / Q8_0 (128): build corr, else 0 */
    arb_tp_phase *pro;       /* NULL, or the quantization still to do inside the rows run */
    const arb_mm_pre *pre;   /* the input's producer, run on a slice before quantizing it */
    float *residual;         /* NULL, or += y per computed row (arb_matmul_ex) */
    const int *chunk;        /* the run's chunks of 16-row units (mm_chunks) */
} mm_run;

/* Quantize token rows t0..t1-1 of x into m->act. */
static void quant_rows(mm_run *m, int t0, int t1)
{
    for (int t = t0; t < t1; t++) {
        const float *x = m->job.x + (size_t)t * m->job.w->n_in;
        uint8_t *dst = m->act + (size_t)t * m->job.lay.stride;
        if (m->simd_quant)
            arb_mm_quant_avx2(x, m->job.w->n_in, &m->job.lay, dst);
        else
            arb_mm_quant_scalar(x, m->job.w->n_in, &m->job.lay, dst);
        quant_finish(m->job.w->n_in, &m->job.lay, dst, m->corr_c);
    }
}

/* Quantization inside the rows run, instead of a pool run of its own (one
   publish-and-wait less per matmul, threadpool.h's phase): slice s of n produces
   (pre) and quantizes its token rows; which thread does it never changes the bytes. */
static void quant_slice(void *ud, int s, int n)
{
    mm_run *m = ud;
    const int t0 = arb_tp_part(m->job.n_tok, s, n), t1 = arb_tp_part(m->job.n_tok, s + 1, n);
    if (m->pre)
        m->pre->fn(m->pre->ud, t0, t1);
    quant_rows(m, t0, t1);
}

/* Rows r0..r1 of every token: y += the block constants' share (arb_qmat.bconst). Per (row,
   token) the additions run in block order with the block's sum of x (in element order), so a
   row's result does not depend on the rows, tokens or threads it runs with; the AVX2 and
   scalar loops give the same bits (a product and an add per row, never fused). */
static void add_bconst(const mm_run *m, const mm_job *j, int r0, int r1)
{
    const arb_qmat *w = j->w;
    const int bn = w->bconst_n, nb = w->n_in / bn;
    for (int t = 0; t < j->n_tok; t++) {
        const float *x = j->x + (size_t)t * w->n_in;
        float *y = j->y + (size_t)t * w->n_out;
        for (int b = 0; b < nb; b++) {
            float s = 0.0f;
            for (int i = 0; i < bn; i++)
                s += x[b * bn + i];
            const float *c = w->bconst + (size_t)b * w->n_out;
            if (m->simd_quant) {
                arb_mm_axpy_avx2(y, c, s, r0, r1);
            } else {
                for (int r = r0; r < r1; r++) {
                    const float p = c[r] * s;
                    y[r] += p;
                }
            }
        }
    }
}

/* Chunk ith of the run's chunks (mm_chunks): a fixed range of 16-row units (y cache lines
   are not shared).
   Any thread may run any chunk; a row's result never depends on which. */
static void rows_task(void *ud, int ith, int nth)
{
    mm_run *m = ud;
    arb_tp_phase_run(m->pro);
    (void)nth;
    const int u0 = m->chunk[ith], u1 = m->chunk[ith + 1];
    int r0 = u0 * 16, r1 = u1 * 16;
    if (r1 > m->job.w->n_out)
        r1 = m->job.w->n_out;
    if (r0 >= r1)
        return;
    m->rows(&m->job, r0, r1);
    if (m->job.w->bconst)
        add_bconst(m, &m->job, r0, r1);
    if (m->residual) {
        const size_t n_out = (size_t)m->job.w->n_out;
        for (int t = 0; t < m->job.n_tok; t++) {
            float *res = m->residual + (size_t)t * n_out;
            const float *y = m->job.y + (size_t)t * n_out;
            for (int r = r0; r < r1; r++)
                res[r] += y[r];
        }
    }
}

/* The run for w on x: layout, kernel, quantizer flavour (no work done yet). */
static void mm_setup(mm_run *m, const arb_qmat *w, const float *x, int n_tok, float *y, void *work)
{
    const mm_impl *p = w->kern ? w->kern : impl();
    *m = (mm_run){.job = {.w = w, .x = x, .lay = arb_mm_layout(w->type, w->n_in), .n_tok = n_tok, .y = y}};
    m->rows = rows_for(p, w);
    m->simd_quant = p != &arb_mm_scalar;
    if (p == &arb_mm_avx512 && w->packed) /* the kernels' unsigned Q4_0 / Q8_0 codes */
        m->corr_c = w->type == ARB_TYPE_Q4_0 ? 8 : w->type == ARB_TYPE_Q8_0 ? 128 : 0;
    ARB_ASSERT(m->rows != NULL);
    ARB_ASSERT(w->n_in % (m->job.lay.B ? m->job.lay.B : 1) == 0);
    m->act = (uint8_t *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
    m->job.act = m->act;
}

/* Produce (pre) and quantize the n_tok activation rows into m->act: small batches on
   the caller (a pool round trip costs more), larger ones inside the rows run (pro,
   set up here). Unquantized types only get their input produced, on the caller. */
static void mm_quantize(arb_threadpool *tp, mm_run *m, arb_tp_phase *pro, const arb_mm_pre *pre)
{
    const int nth = arb_threadpool_size(tp), n = m->job.n_tok;
    if (!m->job.lay.B || nth == 1 || (size_t)n * (size_t)m->job.w->n_in < 8192) {
        if (pre)
            pre->fn(pre->ud, 0, n);
        if (m->job.lay.B)
            quant_rows(m, 0, n);
        return;
    }
    m->pre = pre;
    arb_tp_phase_init(pro, quant_slice, m, n < 2 * nth ? n : 2 * nth);
    m->pro = pro;
}

void arb_matmul(arb_threadpool *tp, const arb_qmat *w, const float *x, int n_tok, float *y, void *work)
{
    arb_matmul_ex(tp, w, x, n_tok, y, work, NULL, NULL);
}

void arb_matmul_ex(arb_threadpool *tp, const arb_qmat *w, const float *x, int n_tok, float *y, void *work,
                   const arb_mm_pre *pre, float *residual)
{
    if (n_tok <= 0 || w->n_out <= 0)
        return;
    mm_run m;
    arb_tp_phase pro;
    mm_setup(&m, w, x, n_tok, y, work);
    m.residual = residual;
    mm_quantize(tp, &m, &pro, pre);
    int chunk[MM_CHUNK_CAP];
    const int n_chunk = mm_chunks((w->n_out + 15) / 16, arb_threadpool_size(tp), chunk);
    m.chunk = chunk;
    arb_threadpool_run_chunks(tp, rows_task, &m, n_chunk);
}

/* ---------------------------------------------------------------- several matrices, one input */

#define MM_MULTI_MAX 4

typedef struct mm_multi {
    mm_run run[MM_MULTI_MAX]; /* per matrix: job (w, y) and kernel; act shared */
    int nw, units[MM_MULTI_MAX + 1]; /* units[i]: first 16-row unit of matrix i (prefix sums) */
    int chunk[MM_CHUNK_CAP];         /* the run's chunks of the concatenated units */
} mm_multi;

/* Chunk ith of the run's chunks (mm_chunks): a fixed range of the matrices' concatenated
   16-row units. */
static void rows_multi_task(void *ud, int ith, int nth)
{
    mm_multi *mm = ud;
    arb_tp_phase_run(mm->run[0].pro);
    (void)nth;
    const int u0 = mm->chunk[ith], u1 = mm->chunk[ith + 1];
    for (int i = 0; i < mm->nw; i++) {
        const int a = u0 > mm->units[i] ? u0 : mm->units[i], b = u1 < mm->units[i + 1] ? u1 : mm->units[i + 1];
        if (a >= b)
            continue;
        const mm_run *m = &mm->run[i];
        const int r0 = (a - mm->units[i]) * 16;
        int r1 = (b - mm->units[i]) * 16;
        if (r1 > m->job.w->n_out)
            r1 = m->job.w->n_out;
        m->rows(&m->job, r0, r1);
        if (m->job.w->bconst)
            add_bconst(m, &m->job, r0, r1);
    }
}

void arb_matmul_multi(arb_threadpool *tp, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                      float *const *ys, void *work)
{
    arb_matmul_multi_pre(tp, ws, nw, x, n_tok, ys, work, NULL);
}

void arb_matmul_multi_pre(arb_threadpool *tp, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                          float *const *ys, void *work, const arb_mm_pre *pre)
{
    bool same = nw >= 1 && nw <= MM_MULTI_MAX;
    for (int i = 1; same && i < nw; i++)
        same = ws[i]->type == ws[0]->type && ws[i]->n_in == ws[0]->n_in && !ws[i]->packed == !ws[0]->packed &&
               ws[i]->kern == ws[0]->kern;
    if (!same || n_tok <= 0) {
        if (pre && n_tok > 0)
            pre->fn(pre->ud, 0, n_tok);
        for (int i = 0; i < nw; i++)
            arb_matmul(tp, ws[i], x, n_tok, ys[i], work);
        return;
    }
    mm_multi mm = {.nw = nw};
    arb_tp_phase pro;
    mm_setup(&mm.run[0], ws[0], x, n_tok, ys[0], work);
    mm_quantize(tp, &mm.run[0], &pro, pre);
    for (int i = 0; i < nw; i++) {
        if (i > 0) {
            mm.run[i] = mm.run[0];
            mm.run[i].job.w = ws[i];
            mm.run[i].job.y = ys[i];
        }
        mm.units[i + 1] = mm.units[i] + (ws[i]->n_out + 15) / 16;
    }
    const int n_chunk = mm_chunks(mm.units[nw], arb_threadpool_size(tp), mm.chunk);
    arb_threadpool_run_chunks(tp, rows_multi_task, &mm, n_chunk);
}
