/* test_matmul.c — the quantized matmul: accuracy against a double-precision
 * reference built from quant.c's reference dequantisation, and batch invariance
 * (bits of a token's output independent of n_tok, token offset and thread count)
 * for every kernel family this CPU can run. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/matmul.h"
#include "cpu/threadpool.h"
#include "quant.h"

static const char *const isas[] = {"scalar", "avx2", "avx512"};
#define N_ISAS 3

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}
static float rndf(void) { return (float)rnd() / 2147483648.0f - 1.0f; } /* [-1, 1) */

/* Random but valid blocks of `type`: random codes, scales of realistic size. */
static void *random_weights(uint32_t type, int n_in, int n_out, size_t *row_bytes)
{
    const size_t rb = arb_type_row_bytes(type, (uint64_t)n_in);
    cr_assert(rb > 0);
    uint8_t *w = malloc(rb * (size_t)n_out);
    cr_assert(w);
    for (size_t i = 0; i < rb * (size_t)n_out; i++)
        w[i] = (uint8_t)rnd();
    const size_t be = arb_type_block_elems(type), bb = arb_type_block_bytes(type);
    const size_t nblk = rb / bb * (size_t)n_out;
    for (size_t b = 0; b < nblk; b++) {
        uint8_t *p = w + b * bb;
        uint16_t h1 = arb_f32_to_fp16(0.01f + 0.02f * (rndf() + 1.0f));
        uint16_t h2 = arb_f32_to_fp16(0.05f * rndf());
        switch (type) {
        case ARB_TYPE_Q4_0: case ARB_TYPE_Q8_0: memcpy(p, &h1, 2); break;
        case ARB_TYPE_Q4_1: memcpy(p, &h1, 2); memcpy(p + 2, &h2, 2); break;
        case ARB_TYPE_Q4_K: case ARB_TYPE_Q5_K: memcpy(p, &h1, 2); memcpy(p + 2, &h1, 2); break;
        case ARB_TYPE_Q6_K: memcpy(p + 208, &h1, 2); break;
        case ARB_TYPE_F16:
            for (size_t i = 0; i < be; i++) {
                uint16_t h = arb_f32_to_fp16(rndf());
                memcpy(p + 2 * i, &h, 2);
            }
            break;
        case ARB_TYPE_F32: {
            float f = rndf();
            memcpy(p, &f, 4);
            break;
        }
        }
    }
    *row_bytes = rb;
    return w;
}

/* The load-time packed copy the AVX-512 kernels read (matmul_pack.c), when the
   type and shape have one; other families ignore it. Free with free(). */
static void *attach_packed(arb_qmat *m)
{
    const size_t pb = arb_matmul_pack_bytes(m);
    if (!pb)
        return NULL;
    void *pk = aligned_alloc(64, (pb + 63) & ~(size_t)63);
    cr_assert(pk);
    arb_matmul_pack(m, pk);
    m->packed = pk;
    return pk;
}

/* The activation quantisation the kernels document (matmul_int.h). */
static void quant_ref(const float *x, int n, int B, double *xq)
{
    for (int b = 0; b < n / B; b++) {
        float amax = 0;
        for (int i = 0; i < B; i++)
            amax = fmaxf(amax, fabsf(x[b * B + i]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < B; i++) {
            float q = nearbyintf(x[b * B + i] * id);
            q = fminf(127.0f, fmaxf(-127.0f, q));
            xq[b * B + i] = (double)q * (double)d;
        }
    }
}

static int block_of(uint32_t type)
{
    if (type == ARB_TYPE_Q4_K || type == ARB_TYPE_Q5_K || type == ARB_TYPE_Q6_K)
        return 256;
    if (type == ARB_TYPE_F32 || type == ARB_TYPE_F16)
        return 0;
    return 32;
}

static void check_accuracy(uint32_t type, int n_in, int n_out, int n_tok)
{
    size_t rb;
    void *w = random_weights(type, n_in, n_out, &rb);
    arb_qmat m = {.type = type, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = w};
    void *pk = attach_packed(&m);
    float *x = malloc(sizeof(float) * (size_t)n_in * (size_t)n_tok);
    float *y = malloc(sizeof(float) * (size_t)n_out * (size_t)n_tok);
    float *wf = malloc(sizeof(float) * (size_t)n_in);
    double *xq = malloc(sizeof(double) * (size_t)n_in);
    void *work = malloc(arb_matmul_work_bytes(type, n_in, n_tok) + 1);
    for (int i = 0; i < n_in * n_tok; i++)
        x[i] = rndf() * (1.0f + (float)(i % 7));
    for (int k = 0; k < N_ISAS; k++) {
        if (arb_matmul_force_isa(isas[k]) != ARB_OK)
            continue;
        arb_matmul(NULL, &m, x, n_tok, y, work);
        for (int t = 0; t < n_tok; t++) {
            const int B = block_of(type);
            if (B)
                quant_ref(x + (size_t)t * n_in, n_in, B, xq);
            else
                for (int i = 0; i < n_in; i++)
                    xq[i] = x[(size_t)t * n_in + i];
            for (int o = 0; o < n_out; o++) {
                arb_dequant_row(type, (const uint8_t *)w + (size_t)o * rb, wf, (size_t)n_in);
                double ref = 0, mag = 0;
                for (int i = 0; i < n_in; i++) {
                    ref += (double)wf[i] * xq[i];
                    mag += fabs((double)wf[i] * xq[i]);
                }
                const double got = y[(size_t)t * n_out + o];
                cr_assert(fabs(got - ref) <= 3e-5 * mag + 1e-6,
                          "%s %s n_in=%d row %d tok %d: got %.9g want %.9g (mag %.3g)", isas[k],
                          arb_type_name(type), n_in, o, t, got, ref, mag);
            }
        }
    }
    arb_matmul_force_isa("auto");
    free(w); free(pk); free(x); free(y); free(wf); free(xq); free(work);
}

static const uint32_t types[] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q8_0, ARB_TYPE_Q4_K, ARB_TYPE_Q5_K,
                                 ARB_TYPE_Q6_K, ARB_TYPE_F16, ARB_TYPE_F32};
#define N_TYPES 8

Test(matmul, accuracy_vs_double_reference)
{
    rng_state = 1;
    for (int k = 0; k < N_TYPES; k++) {
        const int B = block_of(types[k]) ? block_of(types[k]) : 8;
        const int big = B == 256 ? 1536 : 576;
        check_accuracy(types[k], B == 8 ? 40 : B, 5, 3);      /* a single block per row */
        check_accuracy(types[k], big, 37, 4);                 /* model-like sizes, odd n_out */
        check_accuracy(types[k], 3 * (B == 8 ? 32 : B), 17, 2);
        if (B == 32) { /* packed shapes: whole chunks only, 1 + 2 and 2 + 15 tail blocks */
            check_accuracy(types[k], 512, 19, 17);
            check_accuracy(types[k], 1056, 33, 5);
            check_accuracy(types[k], 1504, 16, 3);
            check_accuracy(types[k], 32 * 131, 11, 9); /* AVX2 pair tiles, 2 chunks */
        }
    }
}

Test(matmul, isa_is_named)
{
    const char *s = arb_matmul_isa();
    cr_assert(!strcmp(s, "scalar") || !strcmp(s, "avx2") || !strcmp(s, "avx512vnni"), "isa %s", s);
    cr_assert_eq(arb_matmul_force_isa("no-such-isa"), ARB_E_UNSUPPORTED);
    cr_assert_eq(arb_matmul_force_isa("scalar"), ARB_OK);
    cr_assert_str_eq(arb_matmul_isa(), "scalar");
    arb_matmul_force_isa("auto");
}

/* Rows of y for tokens [t0, t0+n) computed as one batch must equal, bit for bit,
   each token computed alone; and 1/2/3 threads must agree. */
static void check_invariance(uint32_t type, int n_in, int n_out)
{
    enum { NT = 64 };
    size_t rb;
    void *w = random_weights(type, n_in, n_out, &rb);
    arb_qmat m = {.type = type, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = w};
    void *pk = attach_packed(&m);
    float *x = malloc(sizeof(float) * (size_t)n_in * NT);
    float *y1 = malloc(sizeof(float) * (size_t)n_out * NT);
    float *yb = malloc(sizeof(float) * (size_t)n_out * NT);
    void *work = malloc(arb_matmul_work_bytes(type, n_in, NT) + 1);
    for (int i = 0; i < n_in * NT; i++)
        x[i] = rndf() * 3.0f;
    arb_threadpool *tp[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(arb_threadpool_new(i + 1, &tp[i], NULL), ARB_OK);
    /* every token-group shape of the kernels: the AVX2 32-block kernels use pair tiles
       for 1 token, two-row token lanes for 2-4 (Q8_0: step pairs for 2), one-row token
       lanes for 5-8 (Q8_0: 4 + 1 and 4 + 2 for 5 and 6), two groups per pass for 16, and
       a group of 8 plus the rest for 9-15 (matmul_avx2.c): every size 1..16 */
    static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 21, 64};
    enum { N_NS = sizeof ns / sizeof ns[0] };
    for (int k = 0; k < N_ISAS; k++) {
        if (arb_matmul_force_isa(isas[k]) != ARB_OK)
            continue;
        for (int t = 0; t < NT; t++)
            arb_matmul(NULL, &m, x + (size_t)t * n_in, 1, y1 + (size_t)t * n_out, work);
        for (int a = 0; a < N_NS; a++) {
            const int n = ns[a];
            for (int th = 0; th < 3; th++) {
                const int t0 = (n * 5 + th) % (NT - n + 1); /* vary the offset too */
                memset(yb, 0xff, sizeof(float) * (size_t)n_out * NT);
                arb_matmul(tp[th], &m, x + (size_t)t0 * n_in, n, yb, work);
                cr_assert(!memcmp(yb, y1 + (size_t)t0 * n_out, sizeof(float) * (size_t)n_out * (size_t)n),
                          "%s %s n_in=%d n_out=%d: batch of %d at %d with %d threads differs from n_tok=1",
                          isas[k], arb_type_name(type), n_in, n_out, n, t0, th + 1);
            }
        }
    }
    arb_matmul_force_isa("auto");
    for (int i = 0; i < 3; i++)
        arb_threadpool_free(tp[i]);
    free(w); free(pk); free(x); free(y1); free(yb); free(work);
}

Test(matmul, batch_and_thread_invariance)
{
    rng_state = 2;
    for (int k = 0; k < N_TYPES; k++) {
        const int B = block_of(types[k]) ? block_of(types[k]) : 32;
        check_invariance(types[k], B, 19);
        check_invariance(types[k], B == 256 ? 768 : 576, 53);
        if (B == 32) { /* packed: no tail, and a 15-block tail over a partial row group */
            check_invariance(types[k], 512, 21);
            check_invariance(types[k], 1504, 35);
            /* rows wider than the AVX2 token lanes' 48 blocks and the pair tiles' 128-block
               scale tables: pair tiles for every group, accumulators across chunks */
            check_invariance(types[k], 32 * 131, 19);
        }
    }
}

/* Q8_0 at the limits of the integer paths: weight codes -128 and 127 against activation
   codes of +-127 (the AVX2 sign trick's int16 lanes reach 2 * 128 * 127 = 32512), checked
   bit for bit against the documented float sequence, y = sum over blocks in order of
   fma(dw * dx, (float)isum, acc) from 0, which the AVX2 and AVX-512 families share, for
   every token count 1..16 (each group shape of matmul_avx2.c). */
static void check_q8_0_exact(int n_in, int n_out)
{
    enum { NT = 16 };
    const int nb = n_in / 32;
    size_t rb;
    uint8_t *w = random_weights(ARB_TYPE_Q8_0, n_in, n_out, &rb);
    for (int o = 0; o < n_out; o++)
        for (int b = 0; b < nb; b++) {
            int8_t *qs = (int8_t *)(w + (size_t)o * rb + (size_t)b * 34 + 2);
            for (int i = 0; i < 32; i++) {
                const int kind = (o + b) % 4;
                if (kind == 0)
                    qs[i] = -128;
                else if (kind == 1)
                    qs[i] = 127;
                else if (kind == 2)
                    qs[i] = (int8_t)(i % 2 ? 127 : -128);
            }
        }
    arb_qmat m = {.type = ARB_TYPE_Q8_0, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = w};
    void *pk = attach_packed(&m);
    float *x = malloc(sizeof(float) * (size_t)n_in * NT);
    float *y = malloc(sizeof(float) * (size_t)n_out * NT);
    float *ref = malloc(sizeof(float) * (size_t)n_out * NT);
    int8_t *xq = malloc((size_t)n_in * NT);
    float *dx = malloc(sizeof(float) * (size_t)nb * NT);
    void *work = malloc(arb_matmul_work_bytes(ARB_TYPE_Q8_0, n_in, NT) + 1);
    cr_assert(x && y && ref && xq && dx && work);
    for (int t = 0; t < NT; t++)
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < 32; i++) {
                const int kind = (t + b) % 3; /* all codes -127, all +127, or random */
                x[(size_t)t * n_in + 32 * b + i] = kind == 0 ? -1.5f : kind == 1 ? 0.75f : rndf() * 2.0f;
            }
    /* the activation quantisation of matmul_int.h, then the float sequence */
    for (int t = 0; t < NT; t++)
        for (int b = 0; b < nb; b++) {
            const float *xb = x + (size_t)t * n_in + 32 * b;
            float amax = 0;
            for (int i = 0; i < 32; i++)
                amax = fmaxf(amax, fabsf(xb[i]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            dx[t * nb + b] = d;
            for (int i = 0; i < 32; i++)
                xq[(size_t)t * n_in + 32 * b + i] = (int8_t)fminf(127.0f, fmaxf(-127.0f, nearbyintf(xb[i] * id)));
        }
    for (int t = 0; t < NT; t++)
        for (int o = 0; o < n_out; o++) {
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = w + (size_t)o * rb + (size_t)b * 34;
                uint16_t h;
                memcpy(&h, blk, 2);
                int32_t is = 0;
                for (int i = 0; i < 32; i++)
                    is += (int8_t)blk[2 + i] * xq[(size_t)t * n_in + 32 * b + i];
                const float sc = arb_fp16_to_f32(h) * dx[t * nb + b];
                acc = fmaf(sc, (float)is, acc);
            }
            ref[(size_t)t * n_out + o] = acc;
        }
    static const char *const fams[] = {"avx2", "avx512"};
    for (int k = 0; k < 2; k++) {
        if (arb_matmul_force_isa(fams[k]) != ARB_OK)
            continue;
        for (int n = 1; n <= NT; n++) {
            memset(y, 0xff, sizeof(float) * (size_t)n_out * NT);
            arb_matmul(NULL, &m, x, n, y, work);
            for (int t = 0; t < n; t++)
                for (int o = 0; o < n_out; o++) {
                    const float got = y[(size_t)t * n_out + o], want = ref[(size_t)t * n_out + o];
                    cr_assert(!memcmp(&got, &want, sizeof got),
                              "%s Q8_0 n_in=%d n_tok=%d token %d row %d: %.9g, documented sequence %.9g",
                              arb_matmul_isa(), n_in, n, t, o, got, want);
                }
        }
    }
    arb_matmul_force_isa("auto");
    free(w); free(pk); free(x); free(y); free(ref); free(xq); free(dx); free(work);
}

Test(matmul, q8_0_extreme_codes_match_the_documented_sequence)
{
    rng_state = 5;
    check_q8_0_exact(576, 37);     /* SmolLM2's head rows; odd row count (a lone last row) */
    check_q8_0_exact(32 * 3, 19);  /* no packed copy: AVX-512 uses the AVX2 kernel */
    check_q8_0_exact(32 * 131, 21); /* wider than the token lanes: pair tiles for every group */
}

Test(matmul, work_bytes)
{
    cr_assert_eq(arb_matmul_work_bytes(ARB_TYPE_F32, 64, 4), 0);
    cr_assert_eq(arb_matmul_work_bytes(ARB_TYPE_Q4_1, 0, 4), 0);
    const size_t one = arb_matmul_work_bytes(ARB_TYPE_Q4_1, 576, 1);
    cr_assert(one >= 576 + 18 * 8);
    cr_assert(arb_matmul_work_bytes(ARB_TYPE_Q4_1, 576, 8) >= 8 * (one - 64));
}

/* The SIMD activation quantizer must give the scalar one's bytes exactly (both
   families' tests above rely on the documented formula). Includes exact ties
   (x = k/2 * d), zeros and a zero block. */
#include "cpu/matmul_int.h"
#include "cpu/cpuinfo.h"

Test(matmul, simd_quantizer_matches_scalar)
{
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    if (!(ci.avx2 && ci.fma && ci.f16c))
        cr_skip("no AVX2 on this CPU");
    rng_state = 3;
    /* 48, 18 (the 8-block passes plus a tail of 2) and 3 blocks of 32; K-quant blocks */
    static const uint32_t qt[] = {ARB_TYPE_Q4_1, ARB_TYPE_Q4_1, ARB_TYPE_Q4_1, ARB_TYPE_Q4_K};
    static const int qn[] = {1536, 576, 96, 1536};
    for (int k = 0; k < 4; k++) {
        const int n = qn[k], z0 = (n / 64) * 32; /* a zero block in the middle */
        const mm_layout l = arb_mm_layout(qt[k], n);
        float *x = malloc(sizeof(float) * n);
        uint8_t *a = calloc(1, l.stride), *b = calloc(1, l.stride);
        for (int rep = 0; rep < 20; rep++) {
            for (int i = 0; i < n; i++)
                x[i] = rndf() * (float)(1 + rep);
            for (int i = 0; i < 32; i++) /* ties: multiples of d/2 in a block whose max is 127 d */
                x[i] = i == 0 ? 127.0f : (float)((int)(rnd() % 255) - 127) * 0.5f;
            for (int i = z0; i < z0 + 32; i++)
                x[i] = 0.0f;
            arb_mm_quant_scalar(x, n, &l, a);
            arb_mm_quant_avx2(x, n, &l, b);
            cr_assert(!memcmp(a, b, l.off_corr ? l.off_corr : l.stride), "type %u n_in %d rep %d", qt[k], n, rep);
        }
        free(x); free(a); free(b);
    }
}

/* A matrix without a packed copy goes, under the AVX-512 family, to the AVX2
   kernel: its results are the AVX2 family's bit for bit (a per-matrix choice). */
Test(matmul, unpacked_matrix_uses_avx2_kernel)
{
    rng_state = 5;
    if (arb_matmul_force_isa("avx512") != ARB_OK) {
        arb_matmul_force_isa("auto");
        cr_skip("no AVX-512 VNNI: the packed layout is never read on this CPU");
    }
    enum { NT = 20, NOUT = 35, NIN = 576 };
    static const uint32_t pt[] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q8_0};
    for (int a = 0; a < 3; a++) {
        size_t rb;
        void *w = random_weights(pt[a], NIN, NOUT, &rb);
        arb_qmat m = {.type = pt[a], .n_in = NIN, .n_out = NOUT, .row_bytes = rb, .data = w};
        float *x = malloc(sizeof(float) * NIN * NT);
        float *y0 = malloc(sizeof(float) * NOUT * NT), *y1 = malloc(sizeof(float) * NOUT * NT);
        void *work = malloc(arb_matmul_work_bytes(pt[a], NIN, NT) + 1);
        for (int i = 0; i < NIN * NT; i++)
            x[i] = rndf() * 2.0f;
        arb_matmul_force_isa("avx512");
        arb_matmul(NULL, &m, x, NT, y0, work);
        arb_matmul_force_isa("avx2");
        arb_matmul(NULL, &m, x, NT, y1, work);
        cr_assert(!memcmp(y0, y1, sizeof(float) * NOUT * NT), "%s: unpacked avx512 != avx2", arb_type_name(pt[a]));
        /* packed: one group (codes, scales) per 16 rows and block, as documented;
           35 rows are 3 row groups, the last one padded */
        const size_t cb = pt[a] == ARB_TYPE_Q8_0 ? 512 : 256;
        cr_assert_eq(arb_matmul_pack_bytes(&m), 3 * (NIN / 32) * (cb + 64));
        free(w); free(x); free(y0); free(y1); free(work);
    }
    arb_qmat small = {.type = ARB_TYPE_Q4_1, .n_in = 100, .n_out = 2, .row_bytes = 0, .data = NULL};
    cr_assert_eq(arb_matmul_pack_bytes(&small), 0, "n_in not a whole number of blocks: no packed form");
    small.type = ARB_TYPE_Q3_K;
    small.n_in = 512;
    cr_assert_eq(arb_matmul_pack_bytes(&small), 0, "Q3_K: no packed form");
    small.type = ARB_TYPE_Q4_K; /* two 8-row halves of 1184 (Q6_K: 1728) bytes per 16 rows and 256-block */
    small.n_out = 17;
    cr_assert_eq(arb_matmul_pack_bytes(&small), 2 * (512 / 256) * 2 * 1184);
    small.type = ARB_TYPE_Q6_K;
    cr_assert_eq(arb_matmul_pack_bytes(&small), 2 * (512 / 256) * 2 * 1728);
    small.type = ARB_TYPE_Q5_K;
    cr_assert_eq(arb_matmul_pack_bytes(&small), 2 * (512 / 256) * 2 * 1440);
    arb_matmul_force_isa("auto");
}

/* The AVX2 Q4_0/Q4_1/Q4_K/Q6_K kernels read a packed copy when the matrix has one (row
   lanes, matmul_avx2.c) and the GGUF rows otherwise (pair tiles, token lanes; the
   K-quants' row-by-row kernels): the same bits for every token count, with 1 and 3
   threads, at the int16 limits of the step sums (codes 15 against activation codes
   +-127: 8 steps x 2 x 15 x 127 = 30480; Q4_K also with scales and mins 63; Q6_K codes
   63 over 2 steps, 32004, scales 127 and -128) and on random codes, with a partial last
   row group and rows wider than the token lanes. For the K-quants the AVX-512 family
   (its own Q4_K kernel on the packed copy) must give the same bits as well. */
Test(matmul, packed_equals_avx2_gguf_layout)
{
    rng_state = 9;
    if (arb_matmul_force_isa("avx2") != ARB_OK) {
        arb_matmul_force_isa("auto");
        cr_skip("no AVX2 on this CPU");
    }
    enum { NT = 40 };
    static const uint32_t pt[] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q4_K, ARB_TYPE_Q6_K, ARB_TYPE_Q5_K};
    static const int shapes[][2] = {{576, 45}, {1536, 19}, {32 * 60, 8}, {512, 45}, {2048, 19}, {256, 8}};
    arb_threadpool *tp3 = NULL;
    cr_assert_eq(arb_threadpool_new(3, &tp3, NULL), ARB_OK);
    for (int a = 0; a < 5; a++) {
        const int kq = pt[a] == ARB_TYPE_Q4_K || pt[a] == ARB_TYPE_Q6_K || pt[a] == ARB_TYPE_Q5_K;
        for (int sh = kq ? 3 : 0; sh < (kq ? 6 : 3); sh++) {
            const int nin = shapes[sh][0], nout = shapes[sh][1];
            const int B = kq ? 256 : 32, bsz = (int)arb_type_block_bytes(pt[a]);
            size_t rb;
            uint8_t *w = random_weights(pt[a], nin, nout, &rb);
            for (int o = 0; o < nout; o += 3) /* every third row: all codes 15 (or 0 for Q4_0: -8);
                                                 Q4_K: scales and mins 63; Q6_K: codes 63 (+31),
                                                 scales 127 or -128 */
                for (int b = 0; b < nin / B; b++) {
                    uint8_t *blk = w + (size_t)o * rb + (size_t)b * bsz;
                    if (pt[a] == ARB_TYPE_Q4_K || pt[a] == ARB_TYPE_Q5_K) { /* Q5_K: codes 31 */
                        memset(blk + 4, 0xFF, bsz - 4);
                    } else if (pt[a] == ARB_TYPE_Q6_K) {
                        memset(blk, 0xFF, 128 + 64);
                        memset(blk + 192, o % 2 ? 0x80 : 0x7F, 16);
                    } else {
                        memset(blk + bsz - 16, o % 2 ? 0x00 : 0xFF, 16);
                    }
                }
            arb_qmat m = {.type = pt[a], .n_in = nin, .n_out = nout, .row_bytes = rb, .data = w};
            float *x = malloc(sizeof(float) * (size_t)nin * NT);
            float *y0 = malloc(sizeof(float) * (size_t)nout * NT), *y1 = malloc(sizeof(float) * (size_t)nout * NT);
            void *work = malloc(arb_matmul_work_bytes(pt[a], nin, NT) + 1);
            cr_assert(x && y0 && y1 && work);
            for (int t = 0; t < NT; t++)
                for (int i = 0; i < nin; i++) /* tokens 0, 3, 6..: every block's codes +-127 */
                    x[(size_t)t * nin + i] = t % 3 ? rndf() * 2.0f : (t % 2 ? -1.0f : 1.0f);
            /* K-quants: the AVX-512 family's own Q4_K kernel on the packed copy (and the AVX2
               kernels it falls back to) must give these bits too: one float sequence */
            for (int fam = 0; fam < (kq ? 2 : 1); fam++) {
                if (arb_matmul_force_isa(fam ? "avx512" : "avx2") != ARB_OK)
                    continue;
                for (int n = 1; n <= NT; n += n < 17 ? 1 : 23) {
                    for (int th = 0; th < 2; th++) {
                        arb_threadpool *tp = th ? tp3 : NULL;
                        m.packed = NULL;
                        arb_matmul_force_isa("avx2"); /* the reference: avx2, GGUF layout */
                        memset(y0, 0xff, sizeof(float) * (size_t)nout * NT);
                        arb_matmul(tp, &m, x, n, y0, work);
                        void *pk = attach_packed(&m);
                        cr_assert(pk);
                        arb_matmul_force_isa(fam ? "avx512" : "avx2");
                        memset(y1, 0xff, sizeof(float) * (size_t)nout * NT);
                        arb_matmul(tp, &m, x, n, y1, work);
                        free(pk);
                        m.packed = NULL;
                        cr_assert(!memcmp(y0, y1, sizeof(float) * (size_t)nout * (size_t)n),
                                  "%s %dx%d, %d tokens, %d threads: packed %s differs from the avx2 GGUF layout",
                                  arb_type_name(pt[a]), nout, nin, n, th ? 3 : 1, fam ? "avx512" : "avx2");
                    }
                }
            }
            free(w); free(x); free(y0); free(y1); free(work);
        }
    }
    arb_threadpool_free(tp3);
    arb_matmul_force_isa("auto");
}

/* Packing by ranges of 16-row groups (what the model loader's threads do) gives the bytes
   of packing the whole matrix, padding rows of the last group included. */
Test(matmul, pack_groups_equal_whole_pack)
{
    rng_state = 11;
    static const uint32_t pt[] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q8_0, ARB_TYPE_Q4_K, ARB_TYPE_Q5_K, ARB_TYPE_Q6_K};
    for (int a = 0; a < 6; a++) {
        const int nin = pt[a] == ARB_TYPE_Q4_K || pt[a] == ARB_TYPE_Q5_K || pt[a] == ARB_TYPE_Q6_K ? 512 : 576, nout = 45;
        size_t rb;
        void *w = random_weights(pt[a], nin, nout, &rb);
        arb_qmat m = {.type = pt[a], .n_in = nin, .n_out = nout, .row_bytes = rb, .data = w};
        const size_t pb = arb_matmul_pack_bytes(&m);
        cr_assert(pb > 0);
        uint8_t *whole = aligned_alloc(64, (pb + 63) & ~(size_t)63), *parts = aligned_alloc(64, (pb + 63) & ~(size_t)63);
        cr_assert(whole && parts);
        memset(parts, 0xAB, pb);
        arb_matmul_pack(&m, whole);
        arb_matmul_pack_groups(&m, parts, 2, 3); /* out of order, the partial last group first */
        arb_matmul_pack_groups(&m, parts, 0, 1);
        arb_matmul_pack_groups(&m, parts, 1, 2);
        cr_assert(!memcmp(whole, parts, pb), "%s: packed by groups differs from the whole pack", arb_type_name(pt[a]));
        free(w), free(whole), free(parts);
    }
}

/* Several matrices on one input (Q/K/V, gate/up): bit-identical to separate calls
   in every family, with 1 and 3 threads, and when the types differ (no sharing). */
Test(matmul, multi_equals_separate_calls)
{
    rng_state = 9;
    enum { NT = 19, NIN = 576 };
    static const int nouts[3] = {70, 24, 33};
    arb_threadpool *tp3 = NULL;
    cr_assert_eq(arb_threadpool_new(3, &tp3, NULL), ARB_OK);
    for (int mixed = 0; mixed < 2; mixed++) {
        arb_qmat m[3];
        void *w[3], *pk[3];
        float *y0[3], *y1[3];
        for (int i = 0; i < 3; i++) {
            const uint32_t type = mixed && i == 2 ? ARB_TYPE_Q8_0 : ARB_TYPE_Q4_1;
            size_t rb;
            w[i] = random_weights(type, NIN, nouts[i], &rb);
            m[i] = (arb_qmat){.type = type, .n_in = NIN, .n_out = nouts[i], .row_bytes = rb, .data = w[i]};
            pk[i] = attach_packed(&m[i]);
            y0[i] = malloc(sizeof(float) * (size_t)nouts[i] * NT);
            y1[i] = malloc(sizeof(float) * (size_t)nouts[i] * NT);
        }
        float *x = malloc(sizeof(float) * NIN * NT);
        for (int i = 0; i < NIN * NT; i++)
            x[i] = rndf() * 2.0f;
        void *work = malloc(arb_matmul_work_bytes(ARB_TYPE_Q8_0, NIN, NT) + 1);
        const arb_qmat *ws[3] = {&m[0], &m[1], &m[2]};
        for (int k = 0; k < N_ISAS; k++) {
            if (arb_matmul_force_isa(isas[k]) != ARB_OK)
                continue;
            for (int th = 0; th < 2; th++) {
                arb_threadpool *tp = th ? tp3 : NULL;
                for (int i = 0; i < 3; i++)
                    arb_matmul(tp, &m[i], x, NT, y0[i], work);
                arb_matmul_multi(tp, ws, 3, x, NT, y1, work);
                for (int i = 0; i < 3; i++)
                    cr_assert(!memcmp(y0[i], y1[i], sizeof(float) * (size_t)nouts[i] * NT),
                              "%s mixed %d threads %d: matrix %d differs", isas[k], mixed, th ? 3 : 1, i);
            }
        }
        arb_matmul_force_isa("auto");
        for (int i = 0; i < 3; i++) {
            free(w[i]); free(pk[i]); free(y0[i]); free(y1[i]);
        }
        free(x);
        free(work);
    }
    arb_threadpool_free(tp3);
}

/* The roofline probes of `arbor bench engine` (probe.c): they run (the AVX-512 loops
   are hand-written assembly) and report a rate, not a timing claim. */
#include "engine.h"

/* An int8 probe (arb_probe_int8_macs, arb_probe_q4_mix_macs): a rate for each SIMD family
   this CPU runs, none for scalar, an error for a family that does not exist. */
static void check_int8_probe(double (*probe)(const char *, int, double), const char *what)
{
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    const double r = probe(NULL, 1, 0.01);
    if (strcmp(arb_matmul_isa(), "scalar"))
        cr_assert(r > 0 && isfinite(r), "%s %g", what, r);
    else
        cr_assert_eq(r, 0.0);
    /* a named family measures its own instructions: the AVX2 ones wherever AVX2 runs */
    if (ci.avx2 && ci.fma)
        cr_assert(probe("avx2", 2, 0.01) > 0, "%s, avx2 on two threads", what);
    cr_assert_eq(probe("scalar", 1, 0.01), 0.0);
    cr_assert(probe("sse9", 1, 0.01) < 0);
}

Test(matmul, roofline_probes_report_rates)
{
    check_int8_probe(arb_probe_int8_macs, "int8 dot rate");
    check_int8_probe(arb_probe_q4_mix_macs, "Q4_1 instruction mix");
    arb_cpuinfo ci;
    arb_cpuinfo_get(&ci);
    const double fmas = arb_probe_fma_flops(1, 0.01);
    if (ci.avx2 && ci.fma)
        cr_assert(fmas > 0 && isfinite(fmas), "fp32 FMA rate %g", fmas);
}

/* A producer fused into the matmul (arb_matmul_multi_pre / arb_matmul_ex: RMSNorm,
   SwiGLU in the forward) and a residual added per computed row: every row produced
   exactly once, and the results equal the separate steps bit for bit, on the pool
   path (>= 8192 elements, 3 threads) and the caller path (1 thread, a small batch). */
typedef struct pre_job {
    const float *src;
    float *x;
    int n_in;
    _Atomic int calls_rows;
} pre_job;

static void pre_double_plus_one(void *ud, int t0, int t1)
{
    pre_job *p = ud;
    for (int t = t0; t < t1; t++)
        for (int i = 0; i < p->n_in; i++)
            p->x[(size_t)t * p->n_in + i] = 2.0f * p->src[(size_t)t * p->n_in + i] + 1.0f;
    atomic_fetch_add(&p->calls_rows, t1 - t0);
}

Test(matmul, fused_producer_equals_separate_steps)
{
    rng_state = 13;
    enum { NIN = 576, NOUT = 70 };
    static const int nts[] = {40, 3};
    arb_threadpool *tp[2] = {NULL, NULL};
    cr_assert_eq(arb_threadpool_new(3, &tp[0], NULL), ARB_OK);
    cr_assert_eq(arb_threadpool_new(1, &tp[1], NULL), ARB_OK);
    size_t rb;
    void *w = random_weights(ARB_TYPE_Q4_1, NIN, NOUT, &rb);
    arb_qmat m = {.type = ARB_TYPE_Q4_1, .n_in = NIN, .n_out = NOUT, .row_bytes = rb, .data = w};
    void *pk = attach_packed(&m);
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 2; p++) {
            const int nt = nts[a];
            float *src = malloc(sizeof(float) * NIN * nt), *x = malloc(sizeof(float) * NIN * nt);
            float *y0 = malloc(sizeof(float) * NOUT * nt), *y1 = malloc(sizeof(float) * NOUT * nt);
            void *work = malloc(arb_matmul_work_bytes(ARB_TYPE_Q4_1, NIN, nt) + 64);
            for (int i = 0; i < NIN * nt; i++)
                src[i] = rndf();
            pre_job pj = {.src = src, .x = x, .n_in = NIN};
            pre_double_plus_one(&pj, 0, nt); /* the separate steps */
            const arb_qmat *ws[1] = {&m};
            float *ys1[1] = {y1};
            arb_matmul(tp[p], &m, x, nt, y0, work);
            memset(x, 0xff, sizeof(float) * NIN * nt); /* the fused call must produce x itself */
            atomic_store(&pj.calls_rows, 0);
            const arb_mm_pre pre = {pre_double_plus_one, &pj};
            arb_matmul_multi_pre(tp[p], ws, 1, x, nt, ys1, work, &pre);
            cr_assert_eq(atomic_load(&pj.calls_rows), nt, "every row produced once");
            cr_assert(!memcmp(y0, y1, sizeof(float) * NOUT * nt), "n_tok %d, %d threads", nt, p ? 1 : 3);
            /* arb_matmul_ex: the same producer, and a residual that must become base + y0 */
            float *res = malloc(sizeof(float) * NOUT * nt), *want = malloc(sizeof(float) * NOUT * nt);
            for (int i = 0; i < NOUT * nt; i++) {
                res[i] = rndf();
                want[i] = res[i] + y0[i];
            }
            memset(x, 0xff, sizeof(float) * NIN * nt);
            atomic_store(&pj.calls_rows, 0);
            arb_matmul_ex(tp[p], &m, x, nt, y1, work, &pre, res);
            cr_assert_eq(atomic_load(&pj.calls_rows), nt);
            cr_assert(!memcmp(y0, y1, sizeof(float) * NOUT * nt));
            cr_assert(!memcmp(res, want, sizeof(float) * NOUT * nt), "residual += y, n_tok %d", nt);
            free(res);
            free(want);
            free(src); free(x); free(y0); free(y1); free(work);
        }
    free(w); free(pk);
    arb_threadpool_free(tp[0]);
    arb_threadpool_free(tp[1]);
}
