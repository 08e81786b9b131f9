/* test_cuda_host.c — the parts of the CUDA backend that run on the host (engine/cuda/
 * cuda_host.c: positions, key-row lists, device memory sizes), backend names, and the
 * error a CUDA load gives where no device (or no CUDA build) is. Unit suite: no GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "cuda/cuda_attn.h"
#include "cuda/cuda_pack.h"
#include "engine.h"
#include "quant.h"

Test(cuda_host, positions_follow_depth)
{
    const int32_t par[7] = {-1, 0, 1, 0, -1, 4, 2};
    int32_t pos[7];
    cr_assert(arb_cuda_tree_positions(par, 7, 10, pos));
    const int32_t want[7] = {10, 11, 12, 11, 10, 11, 13};
    cr_assert_arr_eq(pos, want, sizeof want);
    const int32_t bad[3] = {-1, 2, 0};
    cr_assert_not(arb_cuda_tree_positions(bad, 3, 0, pos), "parent 2 of node 1 is not before it");
}

Test(cuda_host, key_rows_are_prefix_ancestors_self)
{
    const int32_t par[6] = {-1, 0, 1, 0, -1, 3};
    int32_t rows[16];
    cr_assert_eq(arb_cuda_key_rows(par, 5, 3, rows, 16), 3 + 3);
    const int32_t want5[6] = {0, 1, 2, 3 + 0, 3 + 3, 3 + 5};
    cr_assert_arr_eq(rows, want5, sizeof want5);
    cr_assert_eq(arb_cuda_key_rows(par, 4, 0, rows, 16), 1);
    cr_assert_eq(rows[0], 4);
    /* a short buffer: the count is still the full length, nothing written past cap */
    rows[2] = 99;
    cr_assert_eq(arb_cuda_key_rows(par, 2, 3, rows, 2), 6);
    cr_assert_eq(rows[2], 99);
}

static arb_cuda_mat_desc mat(uint32_t type, int n_in, int n_out)
{
    static const uint8_t dummy[1];
    return (arb_cuda_mat_desc){.type = type, .n_in = n_in, .n_out = n_out,
                               .row_bytes = arb_type_row_bytes(type, (uint64_t)n_in), .data = dummy};
}

Test(cuda_host, weight_bytes_count_every_matrix_once)
{
    static const float v[64];
    arb_cuda_layer_desc L = {.attn_norm = v, .ffn_norm = v, .wq = mat(ARB_TYPE_Q4_0, 64, 64),
                             .wk = mat(ARB_TYPE_Q4_1, 64, 32), .wv = mat(ARB_TYPE_Q8_0, 64, 32),
                             .wo = mat(ARB_TYPE_Q4_K, 256, 64), .w_gate = mat(ARB_TYPE_Q6_K, 256, 128),
                             .w_up = mat(ARB_TYPE_F16, 64, 128), .w_down = mat(ARB_TYPE_F32, 128, 64)};
    arb_cuda_model_desc d = {.n_vocab = 100, .n_embd = 64, .n_layer = 1, .n_head = 4, .n_head_kv = 2,
                             .head_dim = 16, .n_ff = 128, .tok_embd = mat(ARB_TYPE_Q8_0, 64, 100),
                             .output_norm = v, .layers = &L};
    d.output = d.tok_embd; /* tied */
    size_t raw = 0, h = 0;
    cr_assert(arb_cuda_weight_bytes(&d, &raw, &h));
    /* raw: the blocks of 8 matrices (tied head once) + 3 norm vectors, each rounded to 256 */
    size_t want = 0;
    const arb_cuda_mat_desc *ms[8] = {&d.tok_embd, &L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
    size_t want_h = 0;
    for (int i = 0; i < 8; i++) {
        want += ((size_t)ms[i]->n_out * ms[i]->row_bytes + 255) / 256 * 256;
        want_h += ((size_t)ms[i]->n_out * ms[i]->n_in * 2 + 255) / 256 * 256;
    }
    want += 3 * 256;
    cr_assert_eq(raw, want);
    cr_assert_eq(h, want_h, "FP16 copies of the head and the 7 layer matrices");
    L.wq.type = ARB_TYPE_Q5_0;
    cr_assert_not(arb_cuda_weight_bytes(&d, &raw, &h), "Q5_0 is not read by the kernels");
}

Test(cuda_host, packed_bytes_cover_the_gemv_matrices_of_packed_types)
{
    static const float v[64];
    int qb = 0, sb = 0;
    cr_assert(arb_cuda_packed_block(ARB_TYPE_Q4_0, &qb, &sb) && qb == 16 && sb == 2);
    cr_assert(arb_cuda_packed_block(ARB_TYPE_Q4_1, &qb, &sb) && qb == 16 && sb == 4);
    cr_assert(arb_cuda_packed_block(ARB_TYPE_Q8_0, &qb, &sb) && qb == 32 && sb == 2);
    cr_assert_not(arb_cuda_packed_block(ARB_TYPE_Q4_K, &qb, &sb), "K-quants stay in their GGUF blocks");
    cr_assert_not(arb_cuda_packed_block(ARB_TYPE_F16, &qb, &sb));
    /* packed quants and scales are exactly the GGUF bytes, split in two */
    cr_assert_eq(16 + 2, (int)arb_type_row_bytes(ARB_TYPE_Q4_0, 32));
    cr_assert_eq(16 + 4, (int)arb_type_row_bytes(ARB_TYPE_Q4_1, 32));
    cr_assert_eq(32 + 2, (int)arb_type_row_bytes(ARB_TYPE_Q8_0, 32));
    arb_cuda_layer_desc L = {.attn_norm = v, .ffn_norm = v, .wq = mat(ARB_TYPE_Q4_0, 256, 64),
                             .wk = mat(ARB_TYPE_Q4_1, 256, 32), .wv = mat(ARB_TYPE_Q8_0, 256, 32),
                             .wo = mat(ARB_TYPE_Q4_K, 256, 256), .w_gate = mat(ARB_TYPE_Q6_K, 256, 128),
                             .w_up = mat(ARB_TYPE_F16, 256, 128), .w_down = mat(ARB_TYPE_F32, 128, 256)};
    arb_cuda_model_desc d = {.n_vocab = 100, .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2,
                             .head_dim = 64, .n_ff = 128, .tok_embd = mat(ARB_TYPE_Q8_0, 256, 100),
                             .output_norm = v, .layers = (arb_cuda_layer_desc[2]){L, L}};
    d.output = d.tok_embd; /* tied: packed once, as the head */
    /* rows of 256 elements padded to one chunk of 32 blocks: per layer wq 64 rows x 32
       blocks (16 B + 2 B), wk 32 x 32 (16 + 4), wv 32 x 32 (32 + 2); head 100 x 32
       (32 + 2); each array rounded up to 256 bytes */
    const size_t layer = 32768 + 4096 + 16384 + 4096 + 32768 + 2048;
    const size_t head = 102400 + 6400;
    cr_assert_eq(arb_cuda_packed_bytes(&d), 2 * layer + head);
}

Test(cuda_host, backend_names)
{
    arb_load_opts o = arb_load_default_opts();
    arb_err err = {0};
    cr_assert_str_eq(arb_load_opts_backend_name(&o), "cpu");
    cr_assert_eq(arb_load_opts_set_backend(&o, "cuda-exact", &err), ARB_OK);
    cr_assert(o.backend == ARB_BACKEND_CUDA && o.gpu_exact);
    cr_assert_str_eq(arb_load_opts_backend_name(&o), "cuda-exact");
    cr_assert_eq(arb_load_opts_set_backend(&o, "cuda", &err), ARB_OK);
    cr_assert(o.backend == ARB_BACKEND_CUDA && !o.gpu_exact);
    cr_assert_eq(arb_load_opts_set_backend(&o, "gpu", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "'gpu'") && strstr(err.msg, "cuda-exact"), "%s", err.msg);
}

Test(cuda_host, no_device_is_a_clear_error)
{
    if (arb_cuda_device_count() > 0)
        cr_skip_test("a CUDA device is present (the gpu suite covers loading)");
    arb_gpu_info di;
    arb_err err = {0};
    cr_assert_eq(arb_cuda_device_get(&di, &err), ARB_E_NODEVICE);
    cr_assert(strstr(err.msg, "cuda") != NULL, "%s", err.msg);
    arb_cuda_model *cm = NULL;
    arb_cuda_model_desc d = {.path = "x.gguf"};
    cr_assert_eq(arb_cuda_model_new(&d, false, &cm, &err), ARB_E_NODEVICE);
    cr_assert_null(cm);
}

/* The packed layout of the decode GEMV (engine/cuda/cuda_pack.h): arb_cuda_pack_row runs
   the code the device's upload runs. Random GGUF rows of the three packed types, row
   lengths with a partial last chunk and whole chunks: every element's quant is where the
   layout says, the padding is zero, and the device's order of arithmetic (emulated here
   from the documented order: per lane, chunks then steps i, a 4-term chain times the
   step's scale, then the xor butterfly) gives the dequantized row's dot product. */
static uint64_t pk_rng = 88172645463325252ull;
static uint32_t pk_next(void)
{
    pk_rng ^= pk_rng << 13, pk_rng ^= pk_rng >> 7, pk_rng ^= pk_rng << 17;
    return (uint32_t)pk_rng;
}

static uint16_t pk_f16(float f) /* positive normal halves only */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((((u >> 23) & 0xff) - 112) << 10 | ((u >> 13) & 0x3ff));
}

/* nb random GGUF blocks of a packed type (qb quant bytes, sb scale bytes: d, Q4_1 also m;
   positive normal scales) into row. */
static void pk_random_row(uint8_t *row, int nb, int qb, int sb)
{
    const int bb = qb + sb;
    for (int b = 0; b < nb; b++) {
        uint8_t *p = row + (size_t)b * bb;
        const uint16_t d = pk_f16(0.002f + (float)(pk_next() % 1000) * 1e-5f);
        const uint16_t m = pk_f16(0.01f + (float)(pk_next() % 1000) * 1e-5f);
        p[0] = (uint8_t)d, p[1] = (uint8_t)(d >> 8);
        if (sb == 4)
            p[2] = (uint8_t)m, p[3] = (uint8_t)(m >> 8);
        for (int k = 0; k < qb; k++)
            p[sb + k] = (uint8_t)pk_next();
    }
}

/* One random row of n elements of a packed type and room for its packed bytes (every
   byte preset to 0xAB: the packer must overwrite each one). */
typedef struct pk_case { int qb, sb; uint8_t *row, *qs, *sc; } pk_case;
static pk_case pk_case_new(uint32_t type, int n)
{
    pk_case k = {0};
    cr_assert(arb_cuda_packed_block(type, &k.qb, &k.sb));
    const int nb = n / 32, nch = (n + 1023) / 1024;
    k.row = malloc((size_t)nb * (k.qb + k.sb));
    k.qs = malloc((size_t)nch * 32 * k.qb);
    k.sc = malloc((size_t)nch * 32 * k.sb);
    cr_assert(k.row && k.qs && k.sc);
    pk_random_row(k.row, nb, k.qb, k.sb);
    memset(k.qs, 0xAB, (size_t)nch * 32 * k.qb);
    memset(k.sc, 0xAB, (size_t)nch * 32 * k.sb);
    return k;
}
static void pk_case_free(pk_case *k) { free(k->row), free(k->qs), free(k->sc); }

/* The device's exact dequant trick (cuda_kernels.cu nib/byt) on the host. */
static float pk_magic(uint32_t masked, float off)
{
    const uint32_t b = masked | 0x4b000000u;
    float f;
    memcpy(&f, &b, 4);
    return f - (8388608.0f + off);
}

static float pk_half(uint16_t h)
{
    const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const uint32_t u = (uint32_t)(h & 0x8000) << 16 | (e + 112) << 23 | m << 13;
    float f;
    memcpy(&f, &u, 4);
    return e ? f : 0.0f;
}

static double pk_device_order_dot(uint32_t type, const uint8_t *qs, const uint8_t *sc, int n_in, const float *x)
{
    const int q8 = type == ARB_TYPE_Q8_0, sb = type == ARB_TYPE_Q4_1 ? 4 : 2, qc = q8 ? 1024 : 512;
    const int nch = (n_in + 1023) / 1024, off = type == ARB_TYPE_Q4_0 ? 8 : 0;
    float acc[32] = {0};
    for (int lane = 0; lane < 32; lane++)
        for (int c = 0; c < nch; c++)
            for (int i = 0; i < 8; i++) {
                const int rem = n_in - c * 1024;
                if (rem < 1024 && 128 * i + 4 * lane >= rem)
                    continue;
                const uint8_t *s = sc + ((size_t)c * 32 + 4 * i + lane / 8) * sb;
                const float unscale = q8 ? (i & 1 ? 1.0f / 256 : 1.0f) : 1.0f / (float)(1 << (4 * (i & 3)));
                const float d = pk_half((uint16_t)(s[0] | s[1] << 8)) * unscale;
                const float mn = sb == 4 ? pk_half((uint16_t)(s[2] | s[3] << 8)) : 0.0f;
                float v[4];
                for (int j = 0; j < 4; j++) {
                    uint32_t w;
                    memcpy(&w, qs + (size_t)c * qc + (q8 ? 512 * (i / 4) : 0) + 16 * lane + 4 * j, 4);
                    if (q8) {
                        const int k = i & 3;
                        const uint32_t u = k < 2 ? w : w >> 16;
                        v[j] = pk_magic(u & (0xffu << (8 * (k & 1))), (float)(128 << (8 * (k & 1))));
                    } else {
                        const uint32_t u = i < 4 ? w : w >> 16;
                        v[j] = pk_magic(u & (0xfu << (4 * (i & 3))), (float)(off << (4 * (i & 3))));
                    }
                }
                const float *xa = x + (size_t)c * 1024 + 128 * i + 4 * lane;
                float dot = v[0] * xa[0];
                dot = fmaf(v[1], xa[1], dot);
                dot = fmaf(v[2], xa[2], dot);
                dot = fmaf(v[3], xa[3], dot);
                acc[lane] = fmaf(d, dot, acc[lane]);
                if (sb == 4)
                    acc[lane] = fmaf(mn, (xa[0] + xa[1]) + (xa[2] + xa[3]), acc[lane]);
            }
    return arb_slot_butterfly(acc); /* the xor butterfly's value (tree_tiles_... checks it) */
}

Test(cuda_host, packed_layout_holds_every_quant_and_dots_like_the_dequantized_row)
{
    const uint32_t types[3] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q8_0};
    const int lens[4] = {256, 576, 1024, 4352};
    /* the trick itself: every quant value at every offset the kernels use, exactly */
    for (uint32_t q = 0; q < 16; q++)
        for (int k = 0; k < 4; k++)
            cr_assert_eq(pk_magic(q << (4 * k), (float)(8 << (4 * k))), ((float)q - 8) * (float)(1 << (4 * k)));
    for (uint32_t q = 0; q < 256; q++)
        for (int k = 0; k < 2; k++)
            cr_assert_eq(pk_magic(q << (8 * k), (float)(128 << (8 * k))), ((float)q - 128) * (float)(1 << (8 * k)));
    for (int ti = 0; ti < 3; ti++)
        for (int li = 0; li < 4; li++) {
            const uint32_t type = types[ti];
            const int n = lens[li], nb = n / 32, nch = (n + 1023) / 1024;
            pk_case pc = pk_case_new(type, n);
            const int qb = pc.qb, sb = pc.sb, bb = qb + sb;
            uint8_t *row = pc.row, *qs = pc.qs, *sc = pc.sc;
            float *w = malloc(sizeof(float) * n), *x = malloc(sizeof(float) * (size_t)nch * 1024);
            cr_assert(arb_cuda_pack_row(type, row, n, qs, sc));
            /* every element where the layout says; the padding zero */
            for (int e = 0; e < nch * 1024; e++) {
                const int c = e / 1024, r = e % 1024, i = r / 128, lane = (r % 128) / 4, j = r % 4;
                uint32_t word;
                memcpy(&word, qs + (size_t)c * 32 * qb + (type == ARB_TYPE_Q8_0 ? 512 * (i / 4) : 0) + 16 * lane + 4 * j,
                       4);
                const uint32_t got = type == ARB_TYPE_Q8_0 ? (word >> (8 * (i % 4))) & 0xff : (word >> (4 * i)) & 0xf;
                uint32_t want = 0;
                if (e < n) {
                    const uint8_t *q = row + (size_t)(e / 32) * bb + sb;
                    const int t = e % 32;
                    want = type == ARB_TYPE_Q8_0 ? (uint32_t)(q[t] ^ 0x80) : t < 16 ? q[t] & 0xfu : (uint32_t)q[t - 16] >> 4;
                }
                cr_assert_eq(got, want, "type %u n %d element %d", type, n, e);
            }
            for (int b = 0; b < nch * 32; b++)
                for (int k = 0; k < sb; k++)
                    cr_assert_eq(sc[(size_t)b * sb + k], b < nb ? row[(size_t)b * bb + k] : 0, "scale of block %d", b);
            /* the device's order of arithmetic against the exact dequantized dot */
            arb_dequant_row(type, row, w, (size_t)n);
            double exact = 0, mag = 0;
            for (int e = 0; e < nch * 1024; e++)
                x[e] = e < n ? (float)((int)(pk_next() % 2001) - 1000) * 1e-3f : NAN; /* never read past n */
            for (int e = 0; e < n; e++)
                exact += (double)w[e] * x[e], mag += fabs((double)w[e] * x[e]);
            const double got = pk_device_order_dot(type, qs, sc, n, x);
            cr_assert(fabs(got - exact) <= 1e-6 * mag, "type %u n %d: %.9g vs %.9g (scale %.3g)", type, n, got, exact,
                      mag);
            pk_case_free(&pc), free(w), free(x);
        }
}

/* The int8 layout and arithmetic of the dp4a GEMV (cuda_pack.h: arb_pack_lane_q8x,
   arb_q8x_quant_block, arb_q8x_block_isum, arb_q8x_block_acc — the functions the device
   runs): every quant where the layout says, the padding zero, and the device's order
   (per lane: its blocks chunk by chunk, Q4_1's min terms apart; then the butterfly)
   against the CPU's kernel on the same row (scalar family: the same int8 activations,
   the same per-block expression; only the order of the float sum differs). */
static double q8x_device_order_dot(uint32_t type, const uint8_t *qs, const uint8_t *sc, int n_in, const float *x)
{
    const int q8 = type == ARB_TYPE_Q8_0, sb = type == ARB_TYPE_Q4_1 ? 4 : 2, qc = q8 ? 1024 : 512;
    const int nch = (n_in + 1023) / 1024, ti = type == ARB_TYPE_Q4_0 ? 0 : type == ARB_TYPE_Q4_1 ? 1 : 2;
    float acc[32] = {0}, accm[32] = {0};
    for (int lane = 0; lane < 32; lane++)
        for (int c = 0; c < nch; c++) {
            const int blk = c * 32 + lane;
            uint32_t w[8] = {0}, xw[8];
            for (int h = 0; h < (q8 ? 2 : 1); h++)
                memcpy(w + 4 * h, qs + (size_t)c * qc + 512 * h + 16 * lane, 16);
            const uint8_t *s = sc + (size_t)blk * sb;
            float dx;
            int xs;
            arb_q8x_quant_block(x + (size_t)blk * 32, blk * 32 < n_in ? 32 : 0, xw, &dx, &xs);
            const float dw = pk_half((uint16_t)(s[0] | s[1] << 8));
            const float mw = sb == 4 ? pk_half((uint16_t)(s[2] | s[3] << 8)) : 0.0f;
            arb_q8x_block_acc(ti, arb_q8x_block_isum(w, xw, q8), dw, mw, dx, xs, &acc[lane], &accm[lane]);
        }
    for (int l = 0; l < 32; l++)
        acc[l] += accm[l];
    return arb_slot_butterfly(acc);
}

Test(cuda_host, int8_layout_holds_every_block_and_dots_like_the_cpu_kernel)
{
    const uint32_t types[3] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q8_0};
    const int lens[4] = {256, 576, 1024, 4352};
    cr_assert_eq(arb_matmul_force_isa("scalar"), ARB_OK);
    /* dp4a emulation: signed bytes, all four lanes */
    cr_assert_eq(arb_dp4a(0x80ff7f01u, 0x7f02ff03u, 5), 5 + 3 - 127 - 2 - 128 * 127);
    for (int ti = 0; ti < 3; ti++)
        for (int li = 0; li < 4; li++) {
            const uint32_t type = types[ti];
            const int n = lens[li], nb = n / 32, nch = (n + 1023) / 1024;
            pk_case pc = pk_case_new(type, n);
            const int qb = pc.qb, sb = pc.sb, bb = qb + sb;
            uint8_t *row = pc.row, *qs = pc.qs, *sc = pc.sc;
            float *x = malloc(sizeof(float) * (size_t)nch * 1024);
            cr_assert(arb_cuda_pack_row_layout(type, row, n, true, qs, sc));
            for (int e = 0; e < nch * 1024; e++) {
                const int b = e / 32, c = b / 32, lane = b % 32, t = e % 32;
                const uint8_t *lq = qs + (size_t)c * 32 * qb + 16 * lane;
                const int got = type == ARB_TYPE_Q8_0 ? lq[512 * (t / 16) + t % 16]
                                                      : t < 16 ? lq[t] & 0xf : lq[t - 16] >> 4;
                int want = 0;
                if (e < n) {
                    const uint8_t *q = row + (size_t)b * bb + sb;
                    want = type == ARB_TYPE_Q8_0 ? q[t] : t < 16 ? q[t] & 0xf : q[t - 16] >> 4;
                }
                cr_assert_eq(got, want, "type %u n %d element %d", type, n, e);
            }
            for (int b = 0; b < nch * 32; b++)
                for (int k = 0; k < sb; k++)
                    cr_assert_eq(sc[(size_t)b * sb + k], b < nb ? row[(size_t)b * bb + k] : 0, "scale of block %d", b);
            for (int e = 0; e < nch * 1024; e++)
                x[e] = e < n ? (float)((int)(pk_next() % 2001) - 1000) * 1e-3f : NAN; /* never read past n */
            /* the CPU's kernel on the same row: same int8 activations and block sums */
            arb_qmat m = {.type = type, .n_in = n, .n_out = 1, .row_bytes = (size_t)nb * bb, .data = row};
            void *work = malloc(arb_matmul_work_bytes(type, n, 1) + 64);
            float y = 0;
            arb_matmul(NULL, &m, x, 1, &y, work);
            double mag = 0;
            float *wf = malloc(sizeof(float) * n);
            arb_dequant_row(type, row, wf, (size_t)n);
            for (int e = 0; e < n; e++)
                mag += fabs((double)wf[e] * x[e]);
            const double got = q8x_device_order_dot(type, qs, sc, n, x);
            cr_assert(fabs(got - y) <= 2e-6 * mag, "type %u n %d: device order %.9g vs the CPU kernel %.9g (scale %.3g)",
                      type, n, got, y, mag);
            pk_case_free(&pc), free(x), free(work), free(wf);
        }
}

/* arb_q8x_quant_block is the CPU's quantization: ties round to even, the clamp, zero. */
Test(cuda_host, int8_activation_blocks_round_like_the_cpu)
{
    float x[32] = {0};
    x[0] = 127.0f; /* d = 1: x itself is the quant */
    x[1] = 2.5f, x[2] = 3.5f, x[3] = -2.5f, x[4] = 0.5f, x[5] = -126.9f;
    uint32_t xw[8];
    float d;
    int s;
    arb_q8x_quant_block(x, 32, xw, &d, &s);
    cr_assert_eq(d, 1.0f);
    const int8_t *q = (const int8_t *)xw; /* little-endian words: byte k of word j = element 4j + k */
    cr_assert_eq(q[1], 2, "2.5 rounds to even");
    cr_assert_eq(q[2], 4, "3.5 rounds to even");
    cr_assert_eq(q[3], -2);
    cr_assert_eq(q[4], 0);
    cr_assert_eq(q[5], -127);
    cr_assert_eq(s, 127 + 2 + 4 - 2 + 0 - 127);
    float z[32] = {0};
    arb_q8x_quant_block(z, 32, xw, &d, &s);
    cr_assert(d == 0.0f && s == 0 && xw[0] == 0 && xw[7] == 0, "an all-zero block: scale 0, quants 0");
}

/* The tree kernel's tensor-core tiles (cuda_pack.h arb_mma_a_words): A fragments built the
   way tree_q8x_kernel builds them from the int8 layout, B from the activations' words, put
   through a host model of mma.m16n8k32 (the PTX ISA fragment layout written out in
   cuda_pack.h), must give every (row, node) block sum arb_q8x_block_isum gives; and
   arb_slot_butterfly is warp_sum's xor butterfly. */
static void mma_ref(const uint32_t a[32][4], const uint32_t b[32][2], int32_t d[32][4])
{
    int8_t A[16][32], B[32][8];
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane / 4, t = lane % 4;
        for (int i = 0; i < 4; i++) {
            A[g][4 * t + i] = (int8_t)(a[lane][0] >> (8 * i));
            A[g + 8][4 * t + i] = (int8_t)(a[lane][1] >> (8 * i));
            A[g][16 + 4 * t + i] = (int8_t)(a[lane][2] >> (8 * i));
            A[g + 8][16 + 4 * t + i] = (int8_t)(a[lane][3] >> (8 * i));
            B[4 * t + i][g] = (int8_t)(b[lane][0] >> (8 * i));
            B[16 + 4 * t + i][g] = (int8_t)(b[lane][1] >> (8 * i));
        }
    }
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane / 4, t = lane % 4;
        const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
        for (int k = 0; k < 4; k++) {
            int s = 0;
            for (int e = 0; e < 32; e++)
                s += A[rows[k]][e] * B[e][cols[k]];
            d[lane][k] = s;
        }
    }
}

Test(cuda_host, tree_tiles_give_the_gemv_block_sums)
{
    const uint32_t types[3] = {ARB_TYPE_Q4_0, ARB_TYPE_Q4_1, ARB_TYPE_Q8_0};
    for (int ti = 0; ti < 3; ti++) {
        const uint32_t type = types[ti];
        const int q8 = type == ARB_TYPE_Q8_0, n = 2048, nb = n / 32, nch = 2;
        int qb, sb;
        cr_assert(arb_cuda_packed_block(type, &qb, &sb));
        const int bb = qb + sb, QC = q8 ? 1024 : 512;
        uint8_t *rows = malloc((size_t)16 * nb * bb), *qs = malloc((size_t)16 * nch * 32 * qb);
        uint8_t *sc = malloc((size_t)16 * nch * 32 * sb);
        for (size_t i = 0; i < (size_t)16 * nb * bb; i++)
            rows[i] = (uint8_t)pk_next();
        for (int r = 0; r < 16; r++)
            cr_assert(arb_cuda_pack_row_layout(type, rows + (size_t)r * nb * bb, n, true, qs + (size_t)r * nch * QC,
                                               sc + (size_t)r * nch * 32 * sb));
        uint32_t xw[8][64][8]; /* node, block, words */
        for (int nd = 0; nd < 8; nd++)
            for (int b = 0; b < nb; b++)
                for (int k = 0; k < 8; k++)
                    xw[nd][b][k] = pk_next();
        for (int c = 0; c < nch; c++)
            for (int slot = 0; slot < 32; slot += 7) {
                const int blk = 32 * c + slot;
                uint32_t a[32][4], b[32][2];
                int32_t d[32][4];
                for (int lane = 0; lane < 32; lane++) {
                    const int g = lane / 4, t = lane % 4;
                    const size_t off = (size_t)c * QC + 16 * slot + 4 * t;
                    uint32_t w[4] = {0, 0, 0, 0};
                    memcpy(&w[0], qs + (size_t)g * nch * QC + off, 4);
                    memcpy(&w[1], qs + (size_t)(g + 8) * nch * QC + off, 4);
                    if (q8) {
                        memcpy(&w[2], qs + (size_t)g * nch * QC + off + 512, 4);
                        memcpy(&w[3], qs + (size_t)(g + 8) * nch * QC + off + 512, 4);
                    }
                    arb_mma_a_words(q8, w[0], w[1], w[2], w[3], a[lane]);
                    b[lane][0] = xw[g][blk][t], b[lane][1] = xw[g][blk][4 + t];
                }
                mma_ref(a, b, d);
                for (int lane = 0; lane < 32; lane++) {
                    const int g = lane / 4, t = lane % 4;
                    const int rows_k[4] = {g, g, g + 8, g + 8}, nodes_k[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
                    for (int k = 0; k < 4; k++) {
                        uint32_t lw[8];
                        const uint8_t *lq = qs + (size_t)rows_k[k] * nch * QC + (size_t)c * QC + 16 * slot;
                        memcpy(lw, lq, 16);
                        if (q8)
                            memcpy(lw + 4, lq + 512, 16);
                        const int want = arb_q8x_block_isum(lw, xw[nodes_k[k]][blk], q8);
                        cr_assert_eq(d[lane][k], want, "type %u chunk %d slot %d lane %d out %d", type, c, slot, lane, k);
                    }
                }
            }
        free(rows), free(qs), free(sc);
    }
    /* the butterfly: warp_sum's order, emulated lane by lane */
    float p[32], v[32];
    for (int l = 0; l < 32; l++)
        p[l] = v[l] = (float)((int)(pk_next() % 20001) - 10000) * 1.37e-3f;
    for (int off = 16; off > 0; off >>= 1) {
        float nv[32];
        for (int l = 0; l < 32; l++)
            nv[l] = v[l] + v[l ^ off];
        memcpy(v, nv, sizeof v);
    }
    const float bf = arb_slot_butterfly(p);
    cr_assert(memcmp(&bf, &v[0], 4) == 0, "butterfly %.9g vs warp_sum %.9g", bf, v[0]);
}

/* The split attention's partition (cuda_attn.h): parts tile every key list, contiguous and
   balanced, within the shared memory the kernel sizes by n_ctx; the part count depends on
   the head count alone and the blocks per (node, head) shrink as the eval grows. */
Test(cuda_host, split_attention_parts_tile_the_key_list)
{
    const int heads[] = {1, 2, 9, 12, 14, 16, 32, 40, 64, 300};
    for (size_t t = 0; t < sizeof heads / sizeof heads[0]; t++) {
        const int h = heads[t], S = arb_attn_splits(h);
        cr_assert(S >= 1 && S <= ARB_ATTN_MAX_SPLITS, "%d heads: %d parts", h, S);
        cr_assert(S == ARB_ATTN_MAX_SPLITS || S * h >= ARB_ATTN_SPLIT_TARGET, "%d heads x %d parts", h, S);
        cr_assert(S == 1 || (S - 1) * h < ARB_ATTN_SPLIT_TARGET, "%d heads: %d parts is one too many", h, S);
        cr_assert_eq(arb_attn_groups(1, h, S), S < (ARB_ATTN_TARGET_BLOCKS + h - 1) / h ? S : (ARB_ATTN_TARGET_BLOCKS + h - 1) / h);
        for (int n = 1, last = S; n <= 512; n++) {
            const int z = arb_attn_groups(n, h, S);
            cr_assert(z >= 1 && z <= last, "%d nodes, %d heads: %d groups after %d", n, h, z, last);
            last = z;
        }
    }
    const int chunks[] = {0, 1, 32, 64, 1000};
    for (size_t t = 0; t < sizeof chunks / sizeof chunks[0]; t++)
        for (int S = 1; S <= ARB_ATTN_MAX_SPLITS; S++)
            for (int L = 1; L <= 700; L++) {
                const int ch = chunks[t], U = arb_attn_parts_used(L, S, ch);
                cr_assert(U >= 1 && U <= S, "L %d, S %d, chunk %d: %d parts used", L, S, ch, U);
                cr_assert(ch == 0 ? U == S : U == S || U == (L + ch - 1) / ch, "L %d, S %d, chunk %d: %d", L, S, ch, U);
                cr_assert_eq(arb_attn_part_begin(L, 0, U), 0);
                cr_assert_eq(arb_attn_part_begin(L, U, U), L);
                for (int c = 0; c < U; c++) {
                    const int nk = arb_attn_part_begin(L, c + 1, U) - arb_attn_part_begin(L, c, U);
                    cr_assert(nk == L / U || nk == L / U + 1, "L %d, U %d: part %d holds %d keys", L, U, c, nk);
                    /* the kernel sizes its scores for the context, L <= n_ctx: L itself is the tightest */
                    cr_assert_leq(nk, arb_attn_part_keys_max(L, S, ch), "L %d, S %d, chunk %d: part %d over the "
                                  "shared memory", L, S, ch, c);
                }
            }
}

/* Each part's partial as the split kernel forms it (m, s, o; float), merged by the shared
   functions, equals the softmax-weighted sum of the values (double) — with empty parts
   (L < S), the default model's 29 parts, and parts of 64 keys (chunk:64), whose unused
   parts carry only their max (the rest NaN here: the merge must not read it). */
Test(cuda_host, split_attention_merge_equals_the_softmax)
{
    enum { HD = 64, LMAX = 517 };
    static float score[LMAX], v[LMAX * HD], part[ARB_ATTN_MAX_SPLITS * ARB_ATTN_PART(HD)];
    unsigned seed = 77;
    for (int k = 0; k < LMAX; k++) {
        seed = seed * 1103515245u + 12345u;
        score[k] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 16.0f;
        for (int j = 0; j < HD; j++) {
            seed = seed * 1103515245u + 12345u;
            v[k * HD + j] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        }
    }
    const int Ls[] = {1, 5, 28, 29, 30, 100, LMAX}, Ss[] = {1, 8, 29, 32}, chunks[] = {0, 64};
    const int st = ARB_ATTN_PART(HD);
    for (size_t a = 0; a < sizeof Ls / sizeof Ls[0]; a++)
        for (size_t b = 0; b < sizeof Ss / sizeof Ss[0] * 2; b++) {
            const int L = Ls[a], S = Ss[b / 2], U = arb_attn_parts_used(L, S, chunks[b % 2]);
            for (int c = U; c < S; c++) /* unused parts: only their max is written (the kernel's rule) */
                part[c * st] = -INFINITY, part[c * st + 1] = NAN, part[c * st + 2] = NAN;
            for (int c = 0; c < U; c++) {
                const int k0 = arb_attn_part_begin(L, c, U), k1 = arb_attn_part_begin(L, c + 1, U);
                float *po = part + c * st, m = -INFINITY, s = 0.0f;
                for (int k = k0; k < k1; k++)
                    m = fmaxf(m, score[k]);
                for (int j = 0; j < HD; j++)
                    po[2 + j] = 0.0f;
                for (int k = k0; k < k1; k++) {
                    const float e = expf(score[k] - m);
                    s += e;
                    for (int j = 0; j < HD; j++)
                        po[2 + j] = fmaf(e, v[k * HD + j], po[2 + j]);
                }
                po[0] = m, po[1] = s;
            }
            double mx = -INFINITY, den = 0.0;
            for (int k = 0; k < L; k++)
                mx = fmax(mx, score[k]);
            for (int k = 0; k < L; k++)
                den += exp(score[k] - mx);
            const float M = arb_attn_merge_max(part, S, st), inv = 1.0f / arb_attn_merge_den(part, S, st, M);
            cr_assert_eq(M, (float)mx, "L %d, S %d: the merged max is the list's", L, S);
            for (int j = 0; j < HD; j++) {
                double want = 0.0;
                for (int k = 0; k < L; k++)
                    want += exp(score[k] - mx) / den * v[k * HD + j];
                const float got = arb_attn_merge_num(part, S, st, M, j) * inv;
                cr_assert_leq(fabs(got - want), 2e-6, "L %d, S %d, element %d: %.9g vs %.9g", L, S, j, got, want);
            }
        }
}

/* The warp attention's parts (cuda_attn.h): fixed places c * w that tile every key list,
   w = ARB_ATTN_WARP_KEYS until S parts fill up, within the scores the kernel sizes for the
   context; and while w is ARB_ATTN_WARP_KEYS a part's keys do not depend on L. */
Test(cuda_host, warp_attention_parts_sit_at_fixed_places)
{
    const int S = ARB_ATTN_MAX_SPLITS, Ks[] = {1, 8, 16, ARB_ATTN_WARP_KEYS, 100};
    for (size_t kk = 0; kk < sizeof Ks / sizeof Ks[0]; kk++)
    for (int L = 1; L <= 3000; L++) {
        const int K = Ks[kk];
        const int w = arb_attn_warp_width(L, S, K), U = (L + w - 1) / w;
        cr_assert(U >= 1 && U <= S, "L %d: %d parts", L, U);
        cr_assert(w == K || L > K * S, "L %d, K %d: width %d", L, K, w);
        cr_assert_leq(w, arb_attn_warp_width(3000, S, K), "L %d: width %d over the context's", L, w);
        cr_assert_eq(arb_attn_warp_begin(L, 0, w), 0);
        cr_assert_eq(arb_attn_warp_begin(L, S, w), L, "L %d: the parts end at %d", L, arb_attn_warp_begin(L, S, w));
        for (int c = 0; c < S; c++) {
            const int k0 = arb_attn_warp_begin(L, c, w), k1 = arb_attn_warp_begin(L, c + 1, w);
            cr_assert(k1 >= k0 && k1 - k0 <= w, "L %d: part %d = [%d, %d)", L, c, k0, k1);
            cr_assert((k1 > k0) == (c < U), "L %d: part %d of %d used", L, c, U);
            if (w == K && k1 - k0 == w)
                cr_assert_eq(k0, c * K, "L %d: a full part moved", L);
        }
    }
}

/* The warp kernel's arithmetic, lane by lane as the device runs it (lane t: keys t, t + 32,
   ...; scores by arb_attn_warp_dot; max and sum by butterflies over the lanes' key-order
   partials; values per element in key order), merged by the shared functions, equals the
   softmax-weighted sum of the values in double, for head sizes 64 and 128 and lists from 1
   key to past the S * 32 keys where parts grow. Dropping a part's last key fails it. */
static void warp_partials(const float *q, const float *k, const float *v, int hd, int L, float scale, int drop,
                          float *part)
{
    const int S = ARB_ATTN_MAX_SPLITS, st = ARB_ATTN_PART(hd), w = arb_attn_warp_width(L, S, ARB_ATTN_WARP_KEYS);
    static float sc[4096];
    for (int c = 0; c < S; c++) {
        float *po = part + c * st;
        const int k0 = arb_attn_warp_begin(L, c, w), nk = arb_attn_warp_begin(L, c + 1, w) - k0 - (drop == c);
        if (nk <= 0) {
            po[0] = -INFINITY, po[1] = NAN;
            continue;
        }
        float lm[32], ls[32];
        for (int t = 0; t < nk; t++)
            sc[t] = arb_attn_warp_dot(q, k + (size_t)(k0 + t) * hd, hd, scale);
        for (int l = 0; l < 32; l++) {
            lm[l] = -INFINITY;
            for (int t = l; t < nk; t += 32)
                lm[l] = fmaxf(lm[l], sc[t]);
        }
        float m = -INFINITY;
        for (int l = 0; l < 32; l++)
            m = fmaxf(m, lm[l]); /* a max: any order gives the butterfly's */
        for (int l = 0; l < 32; l++) {
            ls[l] = 0.0f;
            for (int t = l; t < nk; t += 32) {
                sc[t] = expf(sc[t] - m);
                ls[l] += sc[t];
            }
        }
        po[0] = m, po[1] = arb_attn_butterfly_sum(ls);
        for (int j = 0; j < hd; j++) {
            float o = 0.0f;
            for (int t = 0; t < nk; t++)
                o = fmaf(sc[t], v[(size_t)(k0 + t) * hd + j], o);
            po[2 + j] = o;
        }
    }
}

Test(cuda_host, warp_attention_equals_the_softmax)
{
    enum { HDMAX = 128, LMAX = 1100 };
    static float q[HDMAX], k[LMAX * HDMAX], v[LMAX * HDMAX], part[ARB_ATTN_MAX_SPLITS * ARB_ATTN_PART(HDMAX)];
    unsigned seed = 91;
    for (int i = 0; i < LMAX * HDMAX; i++) {
        seed = seed * 1103515245u + 12345u;
        k[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    for (int j = 0; j < HDMAX; j++) {
        seed = seed * 1103515245u + 12345u;
        q[j] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 8.0f;
    }
    const int hds[] = {64, 128}, Ls[] = {1, 7, 31, 32, 33, 100, 517, 1024, 1025, LMAX};
    for (size_t a = 0; a < sizeof hds / sizeof hds[0]; a++)
        for (size_t b = 0; b < sizeof Ls / sizeof Ls[0]; b++)
            for (int drop = -1; drop <= 0; drop++) {
                const int hd = hds[a], L = Ls[b], st = ARB_ATTN_PART(hd);
                const float scale = 1.0f / sqrtf((float)hd);
                if (drop == 0 && L < 2)
                    continue;
                warp_partials(q, k, v, hd, L, scale, drop, part);
                double sc[LMAX], mx = -INFINITY, den = 0.0, err = 0.0;
                for (int t = 0; t < L; t++) {
                    double d = 0.0;
                    for (int j = 0; j < hd; j++)
                        d += (double)q[j] * k[(size_t)t * hd + j];
                    sc[t] = d * scale;
                    mx = fmax(mx, sc[t]);
                }
                for (int t = 0; t < L; t++)
                    den += exp(sc[t] - mx);
                const float M = arb_attn_merge_max(part, ARB_ATTN_MAX_SPLITS, st);
                const float inv = 1.0f / arb_attn_merge_den(part, ARB_ATTN_MAX_SPLITS, st, M);
                for (int j = 0; j < hd; j++) {
                    double want = 0.0;
                    for (int t = 0; t < L; t++)
                        want += exp(sc[t] - mx) / den * v[(size_t)t * hd + j];
                    const float got = arb_attn_merge_num(part, ARB_ATTN_MAX_SPLITS, st, M, j) * inv;
                    err = fmax(err, fabs(got - want));
                }
                if (drop < 0)
                    cr_assert_leq(err, 2e-6, "hd %d, L %d: off by %.3g", hd, L, err);
                else
                    cr_assert_gt(err, 2e-6, "hd %d, L %d: a missing key went unnoticed (%.3g)", hd, L, err);
            }
}

/* The parallel merge (ARBOR_CUDA_MERGE=parallel, attention_merge_parallel_kernel) reorders the
   serial merge's work without changing a sum: w_c = expf(m_c - M) formed once per part, the
   denominator in part order, element sums over parts 0..U-1 (U one past the last part used)
   in part order, skipping empty parts. Here its statements on the host against
   arb_attn_merge_*: the same bits, with empty parts in the middle (m = -inf, s = 0, o = 0: the
   split kernel's parts of a list shorter than S) and unused parts at the end (only m written;
   NaN elsewhere, never read). */
Test(cuda_host, parallel_merge_gives_the_serial_bits)
{
    enum { HD = 64, S = ARB_ATTN_MAX_SPLITS };
    const int st = ARB_ATTN_PART(HD);
    static float pb[S * ARB_ATTN_PART(HD)];
    unsigned seed = 5;
    for (int trial = 0; trial < 200; trial++) {
        const int used = 1 + trial % S;
        for (int c = 0; c < S; c++) {
            float *po = pb + c * st;
            seed = seed * 1103515245u + 12345u;
            const bool empty = c < used && c > 0 && (seed >> 20) % 5 == 0;
            if (c >= used) {
                po[0] = -INFINITY, po[1] = NAN;
                for (int j = 0; j < HD; j++)
                    po[2 + j] = NAN;
                continue;
            }
            po[0] = empty ? -INFINITY : ((float)(seed >> 8) / 16777216.0f - 0.5f) * 20.0f;
            po[1] = empty ? 0.0f : 1.0f + (float)(seed % 1000) / 37.0f;
            for (int j = 0; j < HD; j++) {
                seed = seed * 1103515245u + 12345u;
                po[2 + j] = empty ? 0.0f : (float)(seed >> 8) / 16777216.0f - 0.5f;
            }
        }
        /* the kernel's statements */
        float ms[S], ss[S], ws[S], M = -INFINITY, den = 0.0f;
        int U = 0;
        for (int c = 0; c < S; c++)
            ms[c] = pb[c * st], ss[c] = pb[c * st + 1];
        for (int c = 0; c < S; c++)
            M = fmaxf(M, ms[c]);
        for (int c = 0; c < S; c++)
            ws[c] = ms[c] != -INFINITY ? expf(ms[c] - M) : 0.0f;
        for (int c = 0; c < S; c++)
            if (ms[c] != -INFINITY)
                den = fmaf(ws[c], ss[c], den), U = c + 1;
        const float inv = 1.0f / den;
        /* the serial merge */
        const float M1 = arb_attn_merge_max(pb, S, st), inv1 = 1.0f / arb_attn_merge_den(pb, S, st, M1);
        cr_assert(memcmp(&inv, &inv1, sizeof inv) == 0, "trial %d: 1 / denominator %.9g vs %.9g", trial, inv, inv1);
        for (int j = 0; j < HD; j++) {
            float o = 0.0f;
            for (int c = 0; c < U; c++)
                if (ms[c] != -INFINITY)
                    o = fmaf(ws[c], pb[c * st + 2 + j], o);
            const float got = o * inv, want = arb_attn_merge_num(pb, S, st, M1, j) * inv1;
            cr_assert(memcmp(&got, &want, sizeof got) == 0, "trial %d, element %d: %.9g vs %.9g", trial, j, got, want);
        }
    }
}

/* The fused gate/up kernel (ARBOR_CUDA_GLU=fused, gemv_packed_glu_q8_kernel) quantizes what
   it computes: block b must compute exactly the rows of activation block b (32 b .. 32 b + 31,
   each once, in slot row - 32 b), its warps (arb_glu_q8_warps x 32 threads, within a block's
   1024) covering them, and the blocks it launches plus the padding the last block writes must
   be every activation block of the down matrix's input (arb_pack_chunks x 32) once. Checked
   for the node groups the GEMV uses (1, 2, 4, 8) and widths from one block to an 8B model's
   14336, SmolLM2's 1536 among them. */
Test(cuda_host, fused_glu_blocks_compute_their_activation_blocks)
{
    static const int widths[] = {1, 31, 32, 33, 128, 1000, 1024, 1536, 1537, 4096, 14336};
    static const int groups[] = {1, 2, 4, 8};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
            const int n_out = widths[wi], nt = groups[gi], W = arb_glu_q8_warps(nt), R = arb_glu_q8_rows_per_warp(nt);
            cr_assert_eq(W * R, 32, "nt %d: %d warps x %d rows", nt, W, R);
            cr_assert_leq(32 * W, 1024, "nt %d: %d threads", nt, 32 * W);
            const int nb = arb_glu_q8_blocks(n_out), ldb = arb_pack_chunks(n_out) * 32;
            cr_assert_leq(nb, ldb);
            static unsigned char seen[14336 + 32];
            memset(seen, 0, sizeof seen);
            for (int b = 0; b < nb; b++) {
                unsigned slots = 0;
                for (int w = 0; w < W; w++)
                    for (int k = 0; k < R; k++) {
                        const int row = arb_glu_q8_row(nt, b, w, k), slot = row - 32 * b;
                        cr_assert(slot >= 0 && slot < 32, "n_out %d, nt %d: block %d, warp %d row %d", n_out, nt, b,
                                  w, row);
                        cr_assert(!(slots >> slot & 1), "n_out %d, nt %d: slot %d twice in block %d", n_out, nt,
                                  slot, b);
                        slots |= 1u << slot;
                        if (row < n_out)
                            seen[row]++;
                    }
                cr_assert_eq(slots, 0xffffffffu, "n_out %d, nt %d: block %d leaves slots empty", n_out, nt, b);
            }
            for (int r = 0; r < n_out; r++)
                cr_assert_eq(seen[r], 1, "n_out %d, nt %d: row %d computed %d times", n_out, nt, r, seen[r]);
            /* blocks 0..nb-1 quantized by their own launch block; the kernel's padding loop in
               the last block (b = nb - 1, warp w: pb = b + 1 + w, + W ...) writes nb..ldb-1 */
            unsigned char pad[14336 / 32 + 64] = {0};
            for (int w = 0; w < W; w++)
                for (int pb = nb - 1 + 1 + w; pb < ldb; pb += W)
                    pad[pb]++;
            for (int pb = 0; pb < ldb; pb++)
                cr_assert_eq(pad[pb], pb >= nb, "n_out %d, nt %d: padding block %d written %d times", n_out, nt,
                             pb, pad[pb]);
        }
}
