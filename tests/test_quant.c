/* test_quant.c — block formats: sizes, exact fp16/bf16 conversions, and dequantisation of
 * hand-built blocks whose values are known in closed form. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

Test(quant, sizes_match_ggml)
{
    cr_assert_eq(arb_type_block_bytes(ARB_TYPE_Q4_0), 18);
    cr_assert_eq(arb_type_block_bytes(ARB_TYPE_Q4_1), 20);
    cr_assert_eq(arb_type_block_bytes(ARB_TYPE_Q8_0), 34);
    cr_assert_eq(arb_type_block_bytes(ARB_TYPE_Q4_K), 144);
    cr_assert_eq(arb_type_block_bytes(ARB_TYPE_Q6_K), 210);
    cr_assert_eq(arb_type_block_bytes(ARB_TYPE_Q8_K), 292);
    cr_assert_eq(arb_type_block_elems(ARB_TYPE_Q4_K), 256);
    cr_assert_eq(arb_type_block_elems(ARB_TYPE_F16), 1);
    cr_assert_eq(arb_type_row_bytes(ARB_TYPE_Q4_1, 576), 18 * 20);
    cr_assert_eq(arb_type_row_bytes(ARB_TYPE_Q8_0, 576), 18 * 34);
    cr_assert_eq(arb_type_row_bytes(ARB_TYPE_F32, 7), 28);
    cr_assert_eq(arb_type_row_bytes(ARB_TYPE_Q4_1, 33), 0, "not a multiple of the block");
    cr_assert_eq(arb_type_row_bytes(99, 32), 0, "unknown type");
    cr_assert_eq(arb_type_row_bytes(ARB_TYPE_Q8_0, UINT64_MAX - 31), 0, "overflow");
}

Test(quant, known_supported_and_names)
{
    cr_assert(arb_type_known(ARB_TYPE_IQ2_XXS));
    cr_assert_not(arb_type_supported(ARB_TYPE_IQ2_XXS));
    const uint32_t sup[] = {ARB_TYPE_F32,  ARB_TYPE_F16,  ARB_TYPE_BF16, ARB_TYPE_Q4_0,   ARB_TYPE_Q4_1,
                            ARB_TYPE_Q8_0, ARB_TYPE_Q4_K, ARB_TYPE_Q5_K, ARB_TYPE_Q6_K,   ARB_TYPE_Q5_0,
                            ARB_TYPE_Q5_1, ARB_TYPE_Q2_K, ARB_TYPE_Q3_K, ARB_TYPE_IQ4_NL, ARB_TYPE_IQ4_XS};
    for (size_t i = 0; i < sizeof sup / sizeof sup[0]; i++)
        cr_assert(arb_type_supported(sup[i]), "type %u", sup[i]);
    cr_assert_not(arb_type_known(4), "Q4_2 was removed from ggml");
    cr_assert_not(arb_type_known(31));
    cr_assert_str_eq(arb_type_name(ARB_TYPE_Q4_1), "Q4_1");
    cr_assert_str_eq(arb_type_name(ARB_TYPE_BF16), "BF16");
    cr_assert_str_eq(arb_type_name(40), "type#40");
    cr_assert_str_eq(arb_type_name(1000), "type#>=64");
}

/* Q5_0: a hand-built block (element j = j - 16 with d = 0.5: low nibbles in qs, the fifth
   bit in qh), and its Q8_0 rewrite dequantizes to the same floats, bit for bit. */
Test(quant, q5_0_dequant_and_widening_to_q8_0)
{
    uint8_t b[2 * 22];
    for (int blk = 0; blk < 2; blk++) {
        uint8_t *p = b + 22 * blk;
        const uint16_t d = blk ? 0xb800 /* -0.5 */ : 0x3800; /* 0.5 */
        memcpy(p, &d, 2);
        uint32_t qh = 0;
        for (int j = 0; j < 32; j++)
            qh |= (uint32_t)((j >> 4) & 1) << j; /* q = j: bit 4 set for j >= 16 */
        memcpy(p + 2, &qh, 4);
        for (int j = 0; j < 16; j++)
            p[6 + j] = (uint8_t)((j & 15) | (((j + 16) & 15) << 4));
    }
    float ref[64], wide[64];
    arb_dequant_row(ARB_TYPE_Q5_0, b, ref, 64);
    for (int j = 0; j < 32; j++) {
        cr_assert_eq(ref[j], 0.5f * (float)(j - 16), "element %d: %g", j, ref[j]);
        cr_assert_eq(ref[32 + j], -0.5f * (float)(j - 16));
    }
    uint8_t q8[2 * 34];
    arb_q5_0_to_q8_0(b, q8, 2);
    arb_dequant_row(ARB_TYPE_Q8_0, q8, wide, 64);
    cr_assert(!memcmp(ref, wide, sizeof ref));
}

Test(quant, fp16_known_values)
{
    cr_assert_eq(arb_fp16_to_f32(0x3c00), 1.0f);
    cr_assert_eq(arb_fp16_to_f32(0xc000), -2.0f);
    cr_assert_eq(arb_fp16_to_f32(0x7bff), 65504.0f);
    cr_assert_eq(arb_fp16_to_f32(0x0400), ldexpf(1, -14), "smallest normal");
    cr_assert_eq(arb_fp16_to_f32(0x0001), ldexpf(1, -24), "smallest subnormal");
    cr_assert_eq(arb_fp16_to_f32(0x03ff), ldexpf(1023, -24), "largest subnormal");
    cr_assert_eq(arb_fp16_to_f32(0x8001), -ldexpf(1, -24));
    cr_assert_eq(bits(arb_fp16_to_f32(0x8000)), 0x80000000u, "-0");
    cr_assert(isinf(arb_fp16_to_f32(0x7c00)) && arb_fp16_to_f32(0x7c00) > 0);
    cr_assert(isinf(arb_fp16_to_f32(0xfc00)) && arb_fp16_to_f32(0xfc00) < 0);
    cr_assert(isnan(arb_fp16_to_f32(0x7e00)));
    cr_assert(isnan(arb_fp16_to_f32(0x7c01)), "signalling payload is still nan");
    cr_assert_eq(arb_f32_to_fp16(1.0f), 0x3c00);
    cr_assert_eq(arb_f32_to_fp16(65504.0f), 0x7bff);
    cr_assert_eq(arb_f32_to_fp16(65519.0f), 0x7bff, "below the halfway point to 65536");
    cr_assert_eq(arb_f32_to_fp16(65520.0f), 0x7c00, "tie rounds to even: inf");
    cr_assert_eq(arb_f32_to_fp16(1e9f), 0x7c00);
    cr_assert_eq(arb_f32_to_fp16(-INFINITY), 0xfc00);
    cr_assert_eq(arb_f32_to_fp16(NAN) & 0x7fff, 0x7e00);
    cr_assert_eq(arb_f32_to_fp16(ldexpf(1, -24)), 0x0001);
    cr_assert_eq(arb_f32_to_fp16(ldexpf(1, -25)), 0x0000, "tie between 0 and 2^-24 goes to even 0");
    cr_assert_eq(arb_f32_to_fp16(ldexpf(3, -26)), 0x0001, "0.75 ulp rounds up");
    cr_assert_eq(arb_f32_to_fp16(ldexpf(3, -25)), 0x0002, "1.5 ulp: tie to even 2");
    cr_assert_eq(arb_f32_to_fp16(ldexpf(5, -25)), 0x0002, "2.5 ulp: tie to even 2");
    cr_assert_eq(arb_f32_to_fp16(1.0f + ldexpf(1, -11)), 0x3c00, "tie at 1 + half ulp: even");
    cr_assert_eq(arb_f32_to_fp16(1.0f + ldexpf(3, -11)), 0x3c02, "tie at 1 + 1.5 ulp: even");
    cr_assert_eq(arb_f32_to_fp16(ldexpf(2047, -25)), 0x0400, "subnormal rounding carries into the normal range");
    cr_assert_eq(arb_f32_to_fp16(-0.0f), 0x8000);
    cr_assert_eq(arb_f32_to_fp16(ldexpf(1, -140)), 0x0000, "f32 far below half range");
}

Test(quant, fp16_roundtrip_is_exact_for_every_half)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = arb_fp16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            cr_assert(isnan(f), "0x%04x", h);
            continue;
        }
        cr_assert_eq(arb_f32_to_fp16(f), h, "0x%04x -> %a", h, (double)f);
    }
}

#ifdef __FLT16_MAX__
static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The compiler's _Float16 conversion (IEEE round-to-nearest-even) is an independent reference. */
Test(quant, f32_to_fp16_matches_compiler_float16)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float f = from_bits((uint32_t)s);
        if (i & 1) /* half of the draws near the half range, where the rounding is interesting */
            f = from_bits(((uint32_t)s & 0x80ffffffu) | ((uint32_t)(100 + (s >> 40) % 45) << 23));
        _Float16 r = (_Float16)f;
        uint16_t want;
        memcpy(&want, &r, 2);
        if (isnan(f))
            cr_assert_eq(arb_f32_to_fp16(f) & 0x7e00, 0x7e00);
        else
            cr_assert_eq(arb_f32_to_fp16(f), want, "%a", (double)f);
    }
}
#endif

Test(quant, bf16)
{
    cr_assert_eq(arb_bf16_to_f32(0x3f80), 1.0f);
    cr_assert_eq(arb_bf16_to_f32(0xc0a0), -5.0f);
    cr_assert_eq(bits(arb_bf16_to_f32(0x7f81)), 0x7f810000u);
    uint16_t v[3] = {0x3f80, 0x4000, 0xbf00};
    float out[3];
    arb_dequant_row(ARB_TYPE_BF16, v, out, 3);
    cr_assert(out[0] == 1.0f && out[1] == 2.0f && out[2] == -0.5f);
}

Test(quant, f16_and_f32_rows)
{
    uint16_t h[4] = {0x3c00, 0xbc00, 0x3800, 0x0001};
    float out[4], f[4] = {1.5f, -2, 0, 7};
    arb_dequant_row(ARB_TYPE_F16, h, out, 4);
    cr_assert(out[0] == 1 && out[1] == -1 && out[2] == 0.5f && out[3] == ldexpf(1, -24));
    arb_dequant_row(ARB_TYPE_F32, f, out, 4);
    cr_assert_arr_eq(out, f, sizeof f);
}

Test(quant, q4_0_block)
{
    arb_block_q4_0 b = {.d = 0x3800}; /* d = 0.5 */
    for (int j = 0; j < 16; j++)
        b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
    float y[32];
    arb_dequant_row(ARB_TYPE_Q4_0, &b, y, 32);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(y[j], (j - 8) * 0.5f, "low nibble %d", j);
        cr_assert_eq(y[j + 16], (7 - j) * 0.5f, "high nibble %d", j);
    }
}

Test(quant, q4_1_block)
{
    arb_block_q4_1 b[2] = {{.d = 0x3800, .m = 0xbc00}, {.d = 0x4000, .m = 0x3c00}}; /* (0.5,-1) (2,1) */
    for (int j = 0; j < 16; j++)
        b[0].qs[j] = b[1].qs[j] = (uint8_t)(j | ((15 - j) << 4));
    float y[64];
    arb_dequant_row(ARB_TYPE_Q4_1, b, y, 64);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(y[j], j * 0.5f - 1, "%d", j);
        cr_assert_eq(y[j + 16], (15 - j) * 0.5f - 1, "%d", j);
        cr_assert_eq(y[32 + j], j * 2.0f + 1, "%d", j);
        cr_assert_eq(y[48 + j], (15 - j) * 2.0f + 1, "%d", j);
    }
    cr_assert_eq(y[0], -1.0f);
    cr_assert_eq(y[16], 6.5f);
}

Test(quant, q8_0_and_q8_1_blocks)
{
    arb_block_q8_0 b = {.d = 0x3400}; /* 0.25 */
    uint8_t b1[36] = {0x00, 0x40, 0x12, 0x34}; /* d = 2, s ignored */
    for (int j = 0; j < 32; j++) {
        b.qs[j] = (int8_t)(j * 8 - 128);
        b1[4 + j] = (uint8_t)(int8_t)(j - 16);
    }
    float y[32];
    arb_dequant_row(ARB_TYPE_Q8_0, &b, y, 32);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[j], (j * 8 - 128) * 0.25f);
    arb_dequant_row(ARB_TYPE_Q8_1, b1, y, 32);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[j], (j - 16) * 2.0f);
}

/* Pack 8 (scale, min) 6-bit pairs the way ggml's quantize_row_q4_K does. */
static void pack_q4k_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t out[12])
{
    memset(out, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            out[j] = sc[j];
            out[j + 4] = mn[j];
        } else {
            out[j + 4] = (uint8_t)((sc[j] & 0xf) | ((mn[j] & 0xf) << 4));
            out[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            out[j] |= (uint8_t)((mn[j] >> 4) << 6);
        }
    }
}

Test(quant, q4_k_block)
{
    const uint8_t sc[8] = {1, 63, 17, 32, 48, 5, 60, 33}, mn[8] = {0, 7, 63, 16, 31, 50, 2, 47};
    arb_block_q4_k b = {.d = 0x3c00, .dmin = 0x3800}; /* d = 1, dmin = 0.5: every product exact */
    pack_q4k_scales(sc, mn, b.scales);
    /* 4 chunks of 64: the low nibbles of 32 bytes are sub-block 2c, the high ones 2c+1 */
    for (int i = 0; i < 128; i++)
        b.qs[i] = (uint8_t)((i % 16) | (((i * 7) % 16) << 4));
    float y[256];
    arb_dequant_row(ARB_TYPE_Q4_K, &b, y, 256);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int i = c * 32 + l, lo = i % 16, hi = (i * 7) % 16;
            cr_assert_eq(y[c * 64 + l], (float)(sc[2 * c] * lo) - 0.5f * mn[2 * c], "chunk %d l %d", c, l);
            cr_assert_eq(y[c * 64 + 32 + l], (float)(sc[2 * c + 1] * hi) - 0.5f * mn[2 * c + 1], "chunk %d l %d", c, l);
        }
    /* by hand: element 2*64+32+4 is sub-block 5 (scale 5, min 50), byte 68 high nibble 68*7%16 = 12 */
    cr_assert_eq(y[2 * 64 + 32 + 4], 35.0f);
}

Test(quant, q6_k_block)
{
    arb_block_q6_k b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    int q[256];
    for (int i = 0; i < 16; i++)
        b.scales[i] = (int8_t)(i * 3 - 20);
    /* Element e: half n = e / 128, quarter k = (e % 128) / 32, lane l = e % 32. Its low 4 bits
       sit in ql[64n + l + 32(k & 1)] (low nibble for k < 2, high for k >= 2), its top 2 bits in
       qh[32n + l] at bit 2k, and its scale is scales[8n + l / 16 + 2k]. */
    for (int e = 0; e < 256; e++) {
        int n = e / 128, k = (e % 128) / 32, l = e % 32;
        q[e] = (e * 37 + 11) % 64;
        b.ql[64 * n + l + 32 * (k & 1)] |= (uint8_t)((q[e] & 0xf) << (k < 2 ? 0 : 4));
        b.qh[32 * n + l] |= (uint8_t)((q[e] >> 4) << (2 * k));
    }
    float y[256];
    arb_dequant_row(ARB_TYPE_Q6_K, &b, y, 256);
    for (int e = 0; e < 256; e++) {
        int n = e / 128, k = (e % 128) / 32, l = e % 32;
        float want = 0.25f * b.scales[8 * n + l / 16 + 2 * k] * (q[e] - 32);
        cr_assert_eq(y[e], want, "element %d", e);
    }
    cr_assert_eq(y[0], 0.25f * -20 * (11 - 32), "element 0 by hand");
}

/* Q5_K (ggml's block_q5_K and dequantize_row_q5_K; gguf-py's Q5_K.dequantize_blocks reads
   it the same way): element e of sub-block s = e / 32 (lane l = e % 32) has its low 4 bits in
   qs[32 (s / 2) + l] (low nibble for even s, high for odd), its fifth bit at bit s of qh[l],
   and y = d * sc_s * code - dmin * m_s with Q4_K's 6-bit scales and mins. */
Test(quant, q5_k_block)
{
    arb_block_q5_k b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400;    /* 0.25 */
    b.dmin = 0x3800; /* 0.5 */
    /* scales 1..8 and mins 9..16 through the 12-byte packing: j < 4 in bytes j / j + 4, j >= 4
       split (low 4 bits in byte j + 4, top 2 in the spare bits of bytes j - 4 / j) */
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)(j + 1 + (j >= 4 ? 17 * (j - 4) : 0)); /* 5, 22, 39, 56: the top bits in use */
        mn[j] = (uint8_t)(j + 9 + (j >= 4 ? 8 * (j - 4) : 0));  /* 13, 22, 31, 40 */
    }
    for (int j = 0; j < 4; j++) {
        b.scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        b.scales[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
        b.scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
    int q[256];
    for (int e = 0; e < 256; e++) {
        const int s = e / 32, l = e % 32;
        q[e] = (e * 29 + 7) % 32;
        b.qs[32 * (s / 2) + l] |= (uint8_t)((q[e] & 15) << (s % 2 ? 4 : 0));
        b.qh[l] |= (uint8_t)((q[e] >> 4) << s);
    }
    float y[256];
    arb_dequant_row(ARB_TYPE_Q5_K, &b, y, 256);
    for (int e = 0; e < 256; e++) {
        const int s = e / 32;
        const float want = 0.25f * sc[s] * q[e] - 0.5f * mn[s];
        cr_assert_eq(y[e], want, "element %d: %g, want %g", e, y[e], want);
    }
    cr_assert_eq(y[0], 0.25f * 1 * 7 - 0.5f * 9, "element 0 by hand");
}

Test(quant, q8_k_block)
{
    uint8_t b[292] = {0};
    float d = -0.125f;
    memcpy(b, &d, 4);
    for (int j = 0; j < 256; j++)
        b[4 + j] = (uint8_t)(int8_t)(j - 128);
    float y[256];
    arb_dequant_row(ARB_TYPE_Q8_K, b, y, 256);
    for (int j = 0; j < 256; j++)
        cr_assert_eq(y[j], (j - 128) * -0.125f);
}

/* ggml's own dequantization of random blocks (tests/fixtures/ggml_dequant.tsv: a small program
   calling ggml_get_type_traits(t)->to_float, ggml 0.9.x of llama-cpp-python 0.3.36; fp16
   scales set to random halves in [2^-10, 2^-6) of either sign, every other byte random): each
   type's dequantizer gives ggml's floats bit for bit. */
Test(quant, ggml_dequant_fixture)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/ggml_dequant.tsv", root ? root : ".");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    static const struct { const char *name; uint32_t type; } names[] = {
        {"q5_1", ARB_TYPE_Q5_1}, {"q2_K", ARB_TYPE_Q2_K}, {"q3_K", ARB_TYPE_Q3_K},
        {"iq4_nl", ARB_TYPE_IQ4_NL}, {"iq4_xs", ARB_TYPE_IQ4_XS}};
    static char line[16384];
    int seen[5] = {0};
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        cr_assert_not_null(tab);
        *tab = 0;
        int k = -1;
        for (int i = 0; i < 5; i++)
            k = !strcmp(line, names[i].name) ? i : k;
        cr_assert_geq(k, 0, "fixture type %s", line);
        const uint32_t t = names[k].type;
        const size_t nb = arb_type_block_bytes(t), ne = arb_type_block_elems(t);
        uint8_t blk[256];
        char *p = tab + 1;
        for (size_t i = 0; i < nb; i++, p += 2) {
            unsigned v;
            cr_assert_eq(sscanf(p, "%2x", &v), 1);
            blk[i] = (uint8_t)v;
        }
        cr_assert_eq(*p, '\t');
        float y[256];
        arb_dequant_row(t, blk, y, ne);
        for (size_t i = 0; i < ne; i++) {
            const float want = strtof(p + 1, &p);
            cr_assert_eq(bits(y[i]), bits(want), "%s block %d element %zu: %a, ggml %a", names[k].name, seen[k], i,
                         y[i], want);
        }
        seen[k]++;
    }
    fclose(f);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(seen[i], 3, "%s: %d blocks in the fixture", names[i].name, seen[i]);
}

/* Q3_K by hand: d = 0.5, scale j = j + 1 (stored as j + 33 through the 12-byte packing: low
   nibbles of bytes 0..7 for j < 8, their high nibbles for j >= 8, top 2 bits in bytes 8..11
   at bits 2 (j / 4)), element e = 128h + 32j' + 16k + l with code q = (e * 5 + 3) % 8 - 4
   (2 bits at shift 2j' of qs[32h + 16k + l], third bit in hmask[16k + l] bit 4h + j', clear
   meaning minus 4). */
Test(quant, q3_k_block)
{
    uint8_t b[110] = {0};
    const uint16_t d = 0x3800;
    memcpy(b + 108, &d, 2);
    for (int j = 0; j < 16; j++) {
        const int v = j + 1 + 32, g = j / 4, c = j % 4;
        b[96 + (g % 2 ? 4 : 0) + c] |= (uint8_t)((v & 15) << (g >= 2 ? 4 : 0));
        b[96 + 8 + c] |= (uint8_t)((v >> 4) << 2 * g);
    }
    int q[256];
    for (int e = 0; e < 256; e++) {
        const int h = e / 128, jj = e / 32 % 4, k = e / 16 % 2, l = e % 16, u = (e * 5 + 3) % 8;
        q[e] = u - 4;
        b[32 + 32 * h + 16 * k + l] |= (uint8_t)((u & 3) << 2 * jj);
        b[16 * k + l] |= (uint8_t)((u >> 2) << (4 * h + jj));
    }
    float y[256];
    arb_dequant_row(ARB_TYPE_Q3_K, b, y, 256);
    for (int e = 0; e < 256; e++)
        cr_assert_eq(y[e], 0.5f * (float)(e / 16 + 1) * (float)q[e], "element %d: %g", e, y[e]);
}

/* The load-time widenings (engine/model.c): Q3_K -> Q6_K and IQ4_NL -> Q8_0 keep every value
   bit for bit; IQ4_XS -> Q8_0 moves each value by its 32-block scale's fp16 rounding only
   (<= 2^-11 relative), and counts the rounded scales exactly; Q5_1 -> Q8_0 and Q2_K -> Q6_K
   plus their block constants give each value back. Random blocks (any bytes are a
   valid block once the fp16 scales are finite). */
Test(quant, widenings_keep_the_values)
{
    uint64_t s = 0x2545f4914f6cdd1dull;
#define RND() (s ^= s << 13, s ^= s >> 7, s ^= s << 17, s)
    enum { NB = 64 };
    static uint8_t src[NB * 8 * 24], dst[NB * 8 * 34]; /* the largest: 8 NB Q5_1 blocks / Q8_0 blocks */
    static float a[NB * 256], w[NB * 256];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)RND();
    /* Q3_K: d at byte 108 of each 110 */
    for (int i = 0; i < NB; i++)
        memcpy(src + 110 * i + 108, &(uint16_t){(uint16_t)(0x1400 + RND() % 0x1000)}, 2);
    arb_q3_k_to_q6_k(src, dst, NB);
    arb_dequant_row(ARB_TYPE_Q3_K, src, a, NB * 256);
    arb_dequant_row(ARB_TYPE_Q6_K, dst, w, NB * 256);
    cr_assert(!memcmp(a, w, sizeof(float) * NB * 256), "Q3_K -> Q6_K");
    /* IQ4_NL: d at byte 0 of each 18 */
    for (int i = 0; i < NB * 8; i++)
        memcpy(src + 18 * i, &(uint16_t){(uint16_t)(0x1400 + RND() % 0x1000)}, 2);
    arb_iq4_nl_to_q8_0(src, dst, NB * 8);
    arb_dequant_row(ARB_TYPE_IQ4_NL, src, a, NB * 256);
    arb_dequant_row(ARB_TYPE_Q8_0, dst, w, NB * 256);
    cr_assert(!memcmp(a, w, sizeof(float) * NB * 256), "IQ4_NL -> Q8_0");
    /* IQ4_XS: d at byte 0 of each 136; the first super-block with d = 1 (every scale exact) */
    for (int i = 0; i < NB; i++)
        memcpy(src + 136 * i, &(uint16_t){i ? (uint16_t)(0x1400 + RND() % 0x1000) : 0x3c00}, 2);
    const size_t rounded = arb_iq4_xs_to_q8_0(src, dst, NB);
    arb_dequant_row(ARB_TYPE_IQ4_XS, src, a, NB * 256);
    arb_dequant_row(ARB_TYPE_Q8_0, dst, w, NB * 256);
    size_t differ = 0;
    for (int blk = 0; blk < NB * 8; blk++) {
        bool same = true;
        for (int j = 0; j < 32; j++) {
            const float x = a[32 * blk + j], y = w[32 * blk + j];
            cr_assert_leq(fabsf(y - x), fabsf(x) * 0x1p-11f, "block %d element %d: %a vs %a", blk, j, y, x);
            same &= x == y;
        }
        differ += !same;
        if (blk < 8)
            cr_assert(same, "d = 1: block %d exact", blk);
    }
    cr_assert_eq(rounded, differ, "rounded scales counted %zu, blocks that differ %zu", rounded, differ);
    cr_assert_gt(rounded, (size_t)NB * 8 / 2, "most random scales need more than 11 bits");
    /* Q5_1 (d, m at bytes 0, 2 of 24) and Q2_K (d, dmin at 80, 82 of 84): the kernel type's
       value plus the block constant is the value, to f32 rounding (Q5_1's 16 d + m) */
    static float cst[NB * 16];
    for (int i = 0; i < NB * 8; i++) {
        memcpy(src + 24 * i, &(uint16_t){(uint16_t)(0x1400 + RND() % 0x1000)}, 2);
        memcpy(src + 24 * i + 2, &(uint16_t){(uint16_t)(0x9400 + RND() % 0x1000)}, 2);
    }
    arb_q5_1_to_q8_0(src, dst, cst, NB * 8);
    arb_dequant_row(ARB_TYPE_Q5_1, src, a, NB * 256);
    arb_dequant_row(ARB_TYPE_Q8_0, dst, w, NB * 256);
    for (int e = 0; e < NB * 256; e++)
        cr_assert_leq(fabsf(w[e] + cst[e / 32] - a[e]), (fabsf(w[e]) + fabsf(cst[e / 32])) * 0x1p-23f,
                      "Q5_1 element %d: %a + %a vs %a", e, w[e], cst[e / 32], a[e]);
    for (int i = 0; i < NB; i++) {
        memcpy(src + 84 * i + 80, &(uint16_t){(uint16_t)(0x1400 + RND() % 0x1000)}, 2);
        memcpy(src + 84 * i + 82, &(uint16_t){(uint16_t)(0x1400 + RND() % 0x1000)}, 2);
    }
    arb_q2_k_to_q6_k(src, dst, cst, NB);
    arb_dequant_row(ARB_TYPE_Q2_K, src, a, NB * 256);
    arb_dequant_row(ARB_TYPE_Q6_K, dst, w, NB * 256);
    for (int e = 0; e < NB * 256; e++)
        cr_assert_eq(w[e] + cst[e / 16], a[e], "Q2_K element %d: %a + %a vs %a", e, w[e], cst[e / 16], a[e]);
#undef RND
}
