/* probe.c — the machine side of a benchmark: CPU description, and two tiny
 * measurements that give the roofline a decode/tree result is compared with:
 *   - read bandwidth: every thread sums its slice of a buffer larger than the
 *     last-level cache, best of several passes;
 *   - int8 dot rate: independent chains of the kernel family's integer dot
 *     instruction (vpdpbusd zmm with VNNI, maddubs+madd ymm on AVX2), counted in
 *     multiply-accumulates.
 * These are the numbers behind `arbor bench engine` (engine.h, arb_machine_get).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../engine.h"
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

/* ---------------------------------------------------------------- int8 dot rate */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ITERS 200000

__attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni"))) static uint64_t loop_vnni(void)
{
    __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
    /* distinct starting values: identical chains would be merged by the compiler */
    __m512i c0 = _mm512_set1_epi32(0), c1 = _mm512_set1_epi32(1), c2 = _mm512_set1_epi32(2),
            c3 = _mm512_set1_epi32(3), c4 = _mm512_set1_epi32(4), c5 = _mm512_set1_epi32(5),
            c6 = _mm512_set1_epi32(6), c7 = _mm512_set1_epi32(7);
    for (int i = 0; i < ITERS; i++) {
        c0 = _mm512_dpbusd_epi32(c0, a, b);
        c1 = _mm512_dpbusd_epi32(c1, a, b);
        c2 = _mm512_dpbusd_epi32(c2, a, b);
        c3 = _mm512_dpbusd_epi32(c3, a, b);
        c4 = _mm512_dpbusd_epi32(c4, a, b);
        c5 = _mm512_dpbusd_epi32(c5, a, b);
        c6 = _mm512_dpbusd_epi32(c6, a, b);
        c7 = _mm512_dpbusd_epi32(c7, a, b);
        __asm__ volatile("" : "+v"(a)); /* keep the loop from being folded */
    }
    __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)),
                                 _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7)));
    return (uint64_t)(uint32_t)_mm512_reduce_add_epi32(s) + (uint64_t)ITERS * 8 * 64;
}

__attribute__((target("avx2,fma"))) static uint64_t loop_avx2(void)
{
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5), one = _mm256_set1_epi16(1);
    __m256i c0 = _mm256_set1_epi32(0), c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2),
            c3 = _mm256_set1_epi32(3), c4 = _mm256_set1_epi32(4), c5 = _mm256_set1_epi32(5);
    for (int i = 0; i < ITERS; i++) {
        c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        c4 = _mm256_add_epi32(c4, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        c5 = _mm256_add_epi32(c5, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        __asm__ volatile("" : "+x"(a));
    }
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                                 _mm256_add_epi32(c4, c5));
    int32_t v[8];
    _mm256_storeu_si256((__m256i *)v, s);
    return (uint64_t)(uint32_t)v[0] + (uint64_t)ITERS * 6 * 32;
}
#endif

typedef struct dot_job {
    int kind;              /* 2 = vnni, 1 = avx2, 0 = none */
    uint64_t macs[64];     /* per thread */
    uint64_t sink[64];     /* loop results, stored so the loops are not dead code */
} dot_job;

static void dot_task(void *ud, int ith, int nth)
{
    dot_job *j = ud;
    uint64_t n = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (j->kind == 2)
        n = loop_vnni() & 0xFFFFFFFFull;
    else if (j->kind == 1)
        n = loop_avx2() & 0xFFFFFFFFull;
#endif
    j->sink[ith & 63] = n;
    j->macs[ith & 63] = j->kind == 2 ? (uint64_t)ITERS * 8 * 64 : j->kind == 1 ? (uint64_t)ITERS * 6 * 32 : 0;
}

double arb_probe_int8_macs(int n_threads, double seconds)
{
    const char *isa = arb_matmul_isa();
    dot_job j = {.kind = !strcmp(isa, "avx512vnni") ? 2 : !strcmp(isa, "avx2") ? 1 : 0};
    if (!j.kind)
        return 0.0;
    arb_threadpool *tp = NULL;
    if (arb_threadpool_new(n_threads < 1 ? 1 : n_threads, &tp, NULL) != ARB_OK)
        return -1.0;
    double best = 0.0, t_end = now_s() + seconds;
    arb_threadpool_run(tp, dot_task, &j); /* warm-up (AVX-512 frequency licence) */
    for (int pass = 0; pass < 3 || now_s() < t_end; pass++) {
        const double t0 = now_s();
        arb_threadpool_run(tp, dot_task, &j);
        const double dt = now_s() - t0;
        uint64_t macs = 0;
        for (int i = 0; i < arb_threadpool_size(tp) && i < 64; i++)
            macs += j.macs[i];
        best = (double)macs / dt > best ? (double)macs / dt : best;
        if (pass > 10000)
            break;
    }
    arb_threadpool_free(tp);
    return best;
}
