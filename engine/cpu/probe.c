/* probe.c — the machine side of a benchmark: CPU description, and two tiny
 * measurements that give the roofline a decode/tree result is compared with:
 *   - read bandwidth: every thread sums its slice of a buffer larger than the
 *     last-level cache, best of several passes;
 *   - int8 dot rate: 16 independent chains of the kernel family's integer dot
 *     instruction (vpdpbusd zmm with VNNI, maddubs+madd+add ymm on AVX2), counted
 *     in multiply-accumulates;
 *   - fp32 FMA rate: 16 independent chains of vfmadd (zmm with AVX-512, else ymm),
 *     counted in lane FMAs (one FMA = one multiply-accumulate);
 *   - Q4_1 instruction mix: the many-token Q4_1 kernels' instructions for one block of
 *     weights and 8 tokens, with every operand in L1 (the rate no scheduling or memory
 *     work on those kernels can beat; below).
 * These are the numbers behind `arbor bench engine` (engine.h, arb_machine_get).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "cpuinfo.h"
#include "matmul.h"
#include "threadpool.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void arb_machine_get(arb_machine *out)
{
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    memset(out, 0, sizeof *out);
    memcpy(out->cpu_model, ci.model, sizeof out->cpu_model);
    memcpy(out->cpu_flags, ci.flags, sizeof out->cpu_flags);
    out->n_cores = ci.n_cores;
    out->matmul_isa = arb_matmul_isa();
}

const char *arb_cpu_kernels(const char *isa)
{
    const struct mm_impl *k;
    return arb_matmul_kernels(isa, &k) == ARB_OK ? arb_matmul_kernels_name(k) : NULL;
}

/* ---------------------------------------------------------------- bandwidth */

typedef struct bw_job {
    const uint64_t *buf;
    size_t n;             /* uint64 words */
    uint64_t sink[64];    /* per-thread result, so the loads are not dead */
} bw_job;

static void bw_task(void *ud, int ith, int nth)
{
    bw_job *j = ud;
    const size_t a = j->n * (size_t)ith / (size_t)nth, b = j->n * (size_t)(ith + 1) / (size_t)nth;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = a;
    for (; i + 4 <= b; i += 4) { /* vectorized by the compiler; 4 chains hide latency */
        s0 += j->buf[i];
        s1 += j->buf[i + 1];
        s2 += j->buf[i + 2];
        s3 += j->buf[i + 3];
    }
    for (; i < b; i++)
        s0 += j->buf[i];
    j->sink[ith & 63] = s0 + s1 + s2 + s3;
}

double arb_probe_read_bw(size_t bytes, int n_threads, double seconds)
{
    arb_threadpool *tp = NULL;
    if (arb_threadpool_new(n_threads < 1 ? 1 : n_threads, &tp, NULL) != ARB_OK)
        return -1.0;
    uint64_t *buf = malloc(bytes);
    if (!buf) {
        arb_threadpool_free(tp);
        return -1.0;
    }
    for (size_t i = 0; i < bytes / 8; i++)
        buf[i] = i; /* touch every page: no zero-page sharing, no faults while timing */
    bw_job j = {.buf = buf, .n = bytes / 8};
    double best = 0.0, t_end = now_s() + seconds;
    arb_threadpool_run(tp, bw_task, &j); /* warm-up */
    for (int pass = 0; pass < 3 || now_s() < t_end; pass++) {
        const double t0 = now_s();
        arb_threadpool_run(tp, bw_task, &j);
        const double rate = (double)(j.n * 8) / (now_s() - t0);
        best = rate > best ? rate : best;
        if (pass > 1000)
            break;
    }
    free(buf);
    arb_threadpool_free(tp);
    return best;
}

/* ---------------------------------------------------------------- the Q4_1 instruction mix
   What the many-token Q4_1 kernels issue per block of 32 weights and token (matmul_avx512.c,
   group; matmul_avx2.c, packed_half), 8 tokens per pass over one group's weights, on a
   576-wide group whose weights, activations and scales all sit in L1. The integer dots are
   only half of it: per block and token the scales cost a multiply, a convert and two FMAs
   (Q4_1's min term), and the dot's activation operand is a broadcast from memory. On a
   Zen 4 EPYC (2026-11-27) the AVX-512 mix ran at 11.4 cycles per 16 rows x 32 weights and
   token against 8 for its 8 vpdpbusd alone with register operands (9.5 with the broadcast
   operands, no scales), and the AVX2 mix at 10.0 per 8 rows against 9 multiplies (8
   maddubs + 1 madd, one vector multiply per cycle there): the real kernels in cache run
   at this rate (docs/cost-model.md, "The kernels' floor"). */
#define MIX_NB 18 /* blocks per row: 576 weights, SmolLM2's n_embd */
#define MIX_T 8   /* tokens per pass, as the kernels */
#define MIX_PASSES 1024 /* ~0.5 ms a call: a pool round trip is noise against it */

typedef struct mix_data {
    uint8_t codes[MIX_NB][256] __attribute__((aligned(64))); /* 16 rows' nibbles, 4 steps x 64 bytes */
    uint16_t dm[MIX_NB][32] __attribute__((aligned(64)));    /* fp16 d of the 16 rows, then m */
    int8_t act[MIX_T][MIX_NB * 32] __attribute__((aligned(64)));
    float dx[MIX_T][MIX_NB], fsum[MIX_T][MIX_NB]; /* per token and block */
} mix_data;

static void mix_fill(mix_data *d)
{
    for (int b = 0; b < MIX_NB; b++) {
        for (int i = 0; i < 256; i++)
            d->codes[b][i] = (uint8_t)(i * 37 + b);
        for (int i = 0; i < 32; i++)
            d->dm[b][i] = 0x2000 + (uint16_t)i; /* small positive fp16 */
    }
    for (int k = 0; k < MIX_T; k++) {
        for (int i = 0; i < MIX_NB * 32; i++)
            d->act[k][i] = (int8_t)((i * 13 + k) % 255 - 127);
        for (int b = 0; b < MIX_NB; b++)
            d->dx[k][b] = d->fsum[k][b] = 1e-3f * (float)(b + k + 1);
    }
}

/* ---------------------------------------------------------------- int8 dot rate */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ITERS 100000

/* 16 independent chains: vpdpbusd and vfmadd have a latency of 4-5 cycles and,
   on cores with two 512-bit FMA ports, a throughput of 2 per cycle, so fewer
   chains measure the latency instead (8 chains gave 40 % less here). */
#define CHAINS16(OP, T, INIT)                                                                       \
    T c0 = INIT(0), c1 = INIT(1), c2 = INIT(2), c3 = INIT(3), c4 = INIT(4), c5 = INIT(5), c6 = INIT(6), \
      c7 = INIT(7), c8 = INIT(8), c9 = INIT(9), c10 = INIT(10), c11 = INIT(11), c12 = INIT(12),       \
      c13 = INIT(13), c14 = INIT(14), c15 = INIT(15);                                               \
    for (int i = 0; i < ITERS; i++) {                                                               \
        c0 = OP(c0); c1 = OP(c1); c2 = OP(c2); c3 = OP(c3); c4 = OP(c4); c5 = OP(c5);               \
        c6 = OP(c6); c7 = OP(c7); c8 = OP(c8); c9 = OP(c9); c10 = OP(c10); c11 = OP(c11);           \
        c12 = OP(c12); c13 = OP(c13); c14 = OP(c14); c15 = OP(c15);                                 \
        __asm__ volatile("" : "+v"(a), "+v"(b)); /* keep the loop from being folded */              \
    }

/* The chains' sum, so that none of them is dead code. */
#define SUM16(ADD)                                                                                  \
    ADD(ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7))),                          \
        ADD(ADD(ADD(c8, c9), ADD(c10, c11)), ADD(ADD(c12, c13), ADD(c14, c15))))

/* The two AVX-512 loops are written in assembly: GCC's register allocation of 16
   live vector chains adds register moves and spills that take the same ports and
   measured 40 % under the rate below. Accumulators zmm0-15, operands zmm30/31. */
#define ASM16(INS)                                                                                   \
    INS " %%zmm30, %%zmm31, %%zmm0\n\t" INS " %%zmm30, %%zmm31, %%zmm1\n\t" INS " %%zmm30, %%zmm31, %%zmm2\n\t" \
    INS " %%zmm30, %%zmm31, %%zmm3\n\t" INS " %%zmm30, %%zmm31, %%zmm4\n\t" INS " %%zmm30, %%zmm31, %%zmm5\n\t" \
    INS " %%zmm30, %%zmm31, %%zmm6\n\t" INS " %%zmm30, %%zmm31, %%zmm7\n\t" INS " %%zmm30, %%zmm31, %%zmm8\n\t" \
    INS " %%zmm30, %%zmm31, %%zmm9\n\t" INS " %%zmm30, %%zmm31, %%zmm10\n\t" INS " %%zmm30, %%zmm31, %%zmm11\n\t" \
    INS " %%zmm30, %%zmm31, %%zmm12\n\t" INS " %%zmm30, %%zmm31, %%zmm13\n\t" INS " %%zmm30, %%zmm31, %%zmm14\n\t" \
    INS " %%zmm30, %%zmm31, %%zmm15\n\t"
#define CLOBBER16 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                  "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm30", "xmm31"

__attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni"))) static uint64_t loop_vnni(void)
{
    int n = ITERS;
    __asm__ volatile("vpternlogd $0xff, %%zmm31, %%zmm31, %%zmm31\n\t" /* all ones */
                     "vpabsb %%zmm31, %%zmm30\n\t"
                     "1:\n\t" ASM16("vpdpbusd") "dec %0\n\tjnz 1b"
                     : "+r"(n)
                     :
                     : CLOBBER16, "cc");
    return (uint64_t)n;
}

/* fp32 FMAs (16 lanes of zmm with AVX-512, 8 of ymm otherwise). */
__attribute__((target("avx2,fma,avx512f"))) static uint64_t loop_fma512(void)
{
    int n = ITERS;
    __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
                     "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"
                     "1:\n\t" ASM16("vfmadd231ps") "dec %0\n\tjnz 1b"
                     : "+r"(n)
                     :
                     : CLOBBER16, "cc");
    return (uint64_t)n;
}

/* The AVX2 family's dot sequence (maddubs, madd, add: 32 MACs). Each chain feeds its
   own bytes back, so the compiler cannot share one product among the chains. */
__attribute__((target("avx2,fma"))) static uint64_t loop_avx2(void)
{
    __m256i a = _mm256_set1_epi16(1), b = _mm256_set1_epi8(5);
#define MD(c) _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(c, b), a), c)
    CHAINS16(MD, __m256i, _mm256_set1_epi32)
#undef MD
    const __m256i s = SUM16(_mm256_add_epi32);
    int32_t v[8];
    _mm256_storeu_si256((__m256i *)v, s);
    return (uint64_t)(uint32_t)v[0];
}

__attribute__((target("avx2,fma"))) static uint64_t loop_fma256(void)
{
    __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
#define FM(c) _mm256_fmadd_ps(c, a, b)
#define SET(k) _mm256_set1_ps((float)(k))
    CHAINS16(FM, __m256, SET)
#undef SET
#undef FM
    const __m256 s = SUM16(_mm256_add_ps);
    float v[8];
    _mm256_storeu_ps(v, s);
    return (uint64_t)v[0];
}

/* A mix loop's result as its bits (the sum may be negative: no float-to-unsigned conversion) */
static uint64_t mix_sink(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) static uint64_t
loop_mix_vnni(const mix_data *d)
{
    const __m512i nib = _mm512_set1_epi8(0x0F);
    __m512 acc[MIX_T];
    for (int k = 0; k < MIX_T; k++)
        acc[k] = _mm512_setzero_ps();
    for (int pass = 0; pass < MIX_PASSES; pass++)
        for (int b = 0; b < MIX_NB; b++) {
            __m512i w[8], s[MIX_T];
            for (int q = 0; q < 4; q++) {
                const __m512i c = _mm512_load_si512((const void *)(d->codes[b] + 64 * q));
                w[q] = _mm512_and_si512(c, nib);
                w[4 + q] = _mm512_and_si512(_mm512_srli_epi32(c, 4), nib);
            }
            const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)d->dm[b]));
            const __m512 mw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(d->dm[b] + 16)));
            for (int k = 0; k < MIX_T; k++)
                s[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++)
#pragma GCC unroll 8
                for (int k = 0; k < MIX_T; k++) /* the kernels' fused broadcast operand */
                    __asm__("vpdpbusd %2%{1to16%}, %1, %0"
                            : "+v"(s[k])
                            : "v"(w[q]), "m"(*(const int32_t *)(d->act[k] + 32 * b + 4 * q)));
#pragma GCC unroll 8
            for (int k = 0; k < MIX_T; k++) {
                const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(d->dx[k][b]));
                acc[k] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s[k]), acc[k]);
                acc[k] = _mm512_fmadd_ps(mw, _mm512_set1_ps(d->fsum[k][b]), acc[k]);
            }
        }
    __m512 t = acc[0];
    for (int k = 1; k < MIX_T; k++)
        t = _mm512_add_ps(t, acc[k]);
    return mix_sink(_mm512_reduce_add_ps(t));
}

/* One 8-row half per block (the AVX2 kernels' unit): lane l of a step is row l. */
__attribute__((target("avx2,fma,f16c"))) static uint64_t loop_mix_avx2(const mix_data *d)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[MIX_T], accm[MIX_T];
    for (int k = 0; k < MIX_T; k++)
        acc[k] = accm[k] = _mm256_setzero_ps();
    for (int pass = 0; pass < MIX_PASSES; pass++)
        for (int b = 0; b < MIX_NB; b++) {
            __m256i w[8];
            for (int q = 0; q < 4; q++) {
                const __m256i c = _mm256_load_si256((const __m256i *)(d->codes[b] + 64 * q));
                w[q] = _mm256_and_si256(c, m4);
                w[4 + q] = _mm256_and_si256(_mm256_srli_epi16(c, 4), m4);
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)d->dm[b]));
            const __m256 mw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(d->dm[b] + 16)));
#pragma GCC unroll 8
            for (int k = 0; k < MIX_T; k++) {
                const int8_t *ak = d->act[k] + 32 * b;
                __m256i a16 = _mm256_maddubs_epi16(w[0], _mm256_set1_epi32(*(const int32_t *)ak));
#pragma GCC unroll 7
                for (int q = 1; q < 8; q++)
                    a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(w[q], _mm256_set1_epi32(*(const int32_t *)(ak + 4 * q))));
                const __m256i s = _mm256_madd_epi16(a16, ones);
                acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(d->dx[k][b])), _mm256_cvtepi32_ps(s), acc[k]);
                accm[k] = _mm256_fmadd_ps(mw, _mm256_set1_ps(d->fsum[k][b]), accm[k]);
            }
        }
    float v[8];
    __m256 t = _mm256_add_ps(acc[0], accm[0]);
    for (int k = 1; k < MIX_T; k++)
        t = _mm256_add_ps(t, _mm256_add_ps(acc[k], accm[k]));
    _mm256_storeu_ps(v, t);
    return mix_sink(v[0]);
}
#endif

enum { DOT_NONE, DOT_AVX2, DOT_VNNI, FMA_256, FMA_512, MIX_AVX2, MIX_VNNI };

typedef struct dot_job {
    int kind;              /* DOT_* (int8 multiply-accumulates), FMA_* (fp32 FMAs) or MIX_* */
    const mix_data *mix;   /* MIX_*: the operands, shared read-only by every thread */
    uint64_t ops[64];      /* per thread: MACs or FMA lanes */
    uint64_t sink[64];     /* loop results, stored so the loops are not dead code */
} dot_job;

static void dot_task(void *ud, int ith, int nth)
{
    dot_job *j = ud;
    uint64_t n = 0, per_op = 0, reps = 0;
    (void)nth;
#if defined(__x86_64__) && defined(__GNUC__)
    reps = (uint64_t)ITERS * 16; /* instructions of a dot or FMA loop */
    switch (j->kind) {
    case DOT_VNNI: n = loop_vnni(), per_op = 64; break;
    case DOT_AVX2: n = loop_avx2(), per_op = 32; break;
    case FMA_512: n = loop_fma512(), per_op = 16; break;
    case FMA_256: n = loop_fma256(), per_op = 8; break;
    case MIX_VNNI: n = loop_mix_vnni(j->mix), per_op = 16 * 32, reps = (uint64_t)MIX_PASSES * MIX_NB * MIX_T; break;
    case MIX_AVX2: n = loop_mix_avx2(j->mix), per_op = 8 * 32, reps = (uint64_t)MIX_PASSES * MIX_NB * MIX_T; break;
    default: break;
    }
#endif
    j->sink[ith & 63] = n;
    j->ops[ith & 63] = reps * per_op;
}

/* Best rate of j's loop on n_threads threads over about `seconds`. */
static double probe_rate(dot_job *j, int n_threads, double seconds)
{
    arb_threadpool *tp = NULL;
    if (arb_threadpool_new(n_threads < 1 ? 1 : n_threads, &tp, NULL) != ARB_OK)
        return -1.0;
    double best = 0.0, t_end = now_s() + seconds;
    arb_threadpool_run(tp, dot_task, j); /* warm-up (AVX-512 frequency licence) */
    for (int pass = 0; pass < 3 || now_s() < t_end; pass++) {
        const double t0 = now_s();
        arb_threadpool_run(tp, dot_task, j);
        const double dt = now_s() - t0;
        uint64_t ops = 0;
        for (int i = 0; i < arb_threadpool_size(tp) && i < 64; i++)
            ops += j->ops[i];
        best = (double)ops / dt > best ? (double)ops / dt : best;
        if (pass > 10000)
            break;
    }
    arb_threadpool_free(tp);
    return best;
}

double arb_probe_int8_macs(const char *kernels, int n_threads, double seconds)
{
    const char *isa = arb_cpu_kernels(kernels);
    if (!isa)
        return -1.0;
    dot_job j = {.kind = !strcmp(isa, "avx512vnni") ? DOT_VNNI : !strcmp(isa, "avx2") ? DOT_AVX2 : DOT_NONE};
    return j.kind == DOT_NONE ? 0.0 : probe_rate(&j, n_threads, seconds);
}

double arb_probe_q4_mix_macs(const char *kernels, int n_threads, double seconds)
{
    const char *isa = arb_cpu_kernels(kernels);
    if (!isa)
        return -1.0;
    dot_job j = {.kind = !strcmp(isa, "avx512vnni") ? MIX_VNNI : !strcmp(isa, "avx2") ? MIX_AVX2 : DOT_NONE};
    if (j.kind == DOT_NONE)
        return 0.0;
    mix_data *d = aligned_alloc(64, sizeof *d);
    if (!d)
        return -1.0;
    mix_fill(d);
    j.mix = d;
    const double r = probe_rate(&j, n_threads, seconds);
    free(d);
    return r;
}

double arb_probe_fma_flops(int n_threads, double seconds)
{
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    dot_job j = {.kind = ci.avx512f ? FMA_512 : ci.avx2 && ci.fma ? FMA_256 : DOT_NONE};
    return j.kind == DOT_NONE ? 0.0 : probe_rate(&j, n_threads, seconds);
}
