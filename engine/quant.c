/* quant.c — ggml block formats: the size table and the scalar reference dequantisation.
 *
 * Every dequantiser follows ggml's dequantize_row_* (ggml/src/ggml-quants.c) operation by
 * operation, including the order of float multiplications, so that results are bit-identical
 * to ggml's reference path. Block fields are read with memcpy/byte loads, never through a
 * misaligned struct pointer, so any src pointer is fine.
 *
 * Adding a type: one row in type_table (block elems, block bytes, name, supported), and,
 * if it is dequantised, a case in arb_dequant_row with a test block in tests/test_quant.c.
 */
#include "quant.h"

#include "error.h"

#include <string.h>

_Static_assert(sizeof(arb_block_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(arb_block_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(arb_block_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(arb_block_q4_k) == 144, "q4_K block");
_Static_assert(sizeof(arb_block_q5_k) == 176, "q5_K block");
_Static_assert(sizeof(arb_block_q6_k) == 210, "q6_K block");

typedef struct type_info {
    const char *name;   /* ggml's name */
    uint16_t blk_elems; /* elements per block; 0 = no such type */
    uint16_t blk_bytes; /* bytes per block */
    bool supported;     /* arb_dequant_row handles it */
} type_info;

/* Indexed by ggml type id. Sizes from ggml-common.h's static_asserts (QK_K = 256). */
static const type_info type_table[] = {
    [ARB_TYPE_F32] = {"F32", 1, 4, true},         [ARB_TYPE_F16] = {"F16", 1, 2, true},
    [ARB_TYPE_Q4_0] = {"Q4_0", 32, 18, true},     [ARB_TYPE_Q4_1] = {"Q4_1", 32, 20, true},
    [ARB_TYPE_Q5_0] = {"Q5_0", 32, 22, true},    [ARB_TYPE_Q5_1] = {"Q5_1", 32, 24, true},
    [ARB_TYPE_Q8_0] = {"Q8_0", 32, 34, true},     [ARB_TYPE_Q8_1] = {"Q8_1", 32, 36, true},
    [ARB_TYPE_Q2_K] = {"Q2_K", 256, 84, true},    [ARB_TYPE_Q3_K] = {"Q3_K", 256, 110, true},
    [ARB_TYPE_Q4_K] = {"Q4_K", 256, 144, true},   [ARB_TYPE_Q5_K] = {"Q5_K", 256, 176, true},
    [ARB_TYPE_Q6_K] = {"Q6_K", 256, 210, true},   [ARB_TYPE_Q8_K] = {"Q8_K", 256, 292, true},
    [ARB_TYPE_IQ2_XXS] = {"IQ2_XXS", 256, 66, false}, [ARB_TYPE_IQ2_XS] = {"IQ2_XS", 256, 74, false},
    [ARB_TYPE_IQ3_XXS] = {"IQ3_XXS", 256, 98, false}, [ARB_TYPE_IQ1_S] = {"IQ1_S", 256, 50, false},
    [ARB_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18, true}, [ARB_TYPE_IQ3_S] = {"IQ3_S", 256, 110, false},
    [ARB_TYPE_IQ2_S] = {"IQ2_S", 256, 82, false}, [ARB_TYPE_IQ4_XS] = {"IQ4_XS", 256, 136, true},
    [ARB_TYPE_I8] = {"I8", 1, 1, false},          [ARB_TYPE_I16] = {"I16", 1, 2, false},
    [ARB_TYPE_I32] = {"I32", 1, 4, false},        [ARB_TYPE_I64] = {"I64", 1, 8, false},
    [ARB_TYPE_F64] = {"F64", 1, 8, false},        [ARB_TYPE_IQ1_M] = {"IQ1_M", 256, 56, false},
    [ARB_TYPE_BF16] = {"BF16", 1, 2, true},       [ARB_TYPE_TQ1_0] = {"TQ1_0", 256, 54, false},
    [ARB_TYPE_TQ2_0] = {"TQ2_0", 256, 66, false},
};
#define N_TYPES (sizeof type_table / sizeof type_table[0])

static const type_info *info(uint32_t type)
{
    return type < N_TYPES && type_table[type].blk_elems ? &type_table[type] : NULL;
}

bool arb_type_known(uint32_t type) { return info(type) != NULL; }
bool arb_type_supported(uint32_t type) { return info(type) && info(type)->supported; }
size_t arb_type_block_elems(uint32_t type) { return info(type) ? info(type)->blk_elems : 0; }
size_t arb_type_block_bytes(uint32_t type) { return info(type) ? info(type)->blk_bytes : 0; }

/* Names for ids no table row covers: a const table (there is no buffer to format into). */
static const char *const unknown_names[] = {
    "type#0", "type#1", "type#2", "type#3", "type#4", "type#5", "type#6", "type#7",
    "type#8", "type#9", "type#10", "type#11", "type#12", "type#13", "type#14", "type#15",
    "type#16", "type#17", "type#18", "type#19", "type#20", "type#21", "type#22", "type#23",
    "type#24", "type#25", "type#26", "type#27", "type#28", "type#29", "type#30", "type#31",
    "type#32", "type#33", "type#34", "type#35", "type#36", "type#37", "type#38", "type#39",
    "type#40", "type#41", "type#42", "type#43", "type#44", "type#45", "type#46", "type#47",
    "type#48", "type#49", "type#50", "type#51", "type#52", "type#53", "type#54", "type#55",
    "type#56", "type#57", "type#58", "type#59", "type#60", "type#61", "type#62", "type#63",
};

const char *arb_type_name(uint32_t type)
{
    if (info(type))
        return info(type)->name;
    return type < 64 ? unknown_names[type] : "type#>=64";
}

size_t arb_type_row_bytes(uint32_t type, uint64_t n)
{
    const type_info *t = info(type);
    if (!t || n % t->blk_elems)
        return 0;
    uint64_t blocks = n / t->blk_elems;
    if (blocks > SIZE_MAX / t->blk_bytes)
        return 0;
    return (size_t)blocks * t->blk_bytes;
}

/* ---- fp16 / bf16: exact bit-level conversions (no FPU half support assumed) ---- */

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float arb_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) /* inf / nan: keep the payload */
        return f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return f32_from_bits(sign);
        /* subnormal: mant * 2^-24, renormalise into an f32 normal */
        int e = -1;
        do {
            mant <<= 1;
            e++;
        } while (!(mant & 0x400));
        mant &= 0x3ff;
        return f32_from_bits(sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13));
    }
    return f32_from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t arb_f32_to_fp16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* nan -> quiet nan, as ggml */
        return sign | 0x7e00;
    if (ax >= 0x477ff000u) /* >= 65520 rounds (to even) past 65504: inf */
        return sign | 0x7c00;
    uint32_t e = ax >> 23, mant = ax & 0x7fffff;
    if (e < 102) /* below 2^-25: rounds to zero (2^-25 itself is a tie to even 0) */
        return sign;
    if (e < 113) { /* half subnormal: round(|f| / 2^-24) to nearest even */
        uint32_t m = mant | 0x800000, shift = 126 - e; /* 14..24 */
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++; /* may carry into the smallest normal (0x400): still the right encoding */
        return sign | (uint16_t)h;
    }
    uint32_t h = ((e - 112) << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++; /* carry into the exponent is correct; inf was excluded above */
    return sign | (uint16_t)h;
}

float arb_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* ---- block dequantisers (n elements, n a multiple of the block size) ---- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static float rdh(const uint8_t *p) { return arb_fp16_to_f32(rd16(p)); }

static void dq_q4_0(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 18, y += 32) {
        const float d = rdh(b);
        for (int j = 0; j < 16; j++) {
            const int x0 = (b[2 + j] & 0x0f) - 8, x1 = (b[2 + j] >> 4) - 8;
            y[j] = x0 * d;
            y[j + 16] = x1 * d;
        }
    }
}

static void dq_q4_1(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 20, y += 32) {
        const float d = rdh(b), m = rdh(b + 2);
        for (int j = 0; j < 16; j++) {
            const int x0 = b[4 + j] & 0x0f, x1 = b[4 + j] >> 4;
            y[j] = x0 * d + m;
            y[j + 16] = x1 * d + m;
        }
    }
}

/* Q5_0 (22 B: d, qh[4], qs[16]): element j < 16 is the low nibble of qs[j] with bit j of
   qh as its fifth bit, element j + 16 the high nibble with bit j + 16; minus 16. */
static int q5_0_elem(const uint8_t *b, int j)
{
    const uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
    const int lo = j < 16 ? b[6 + j] & 0x0f : b[6 + j - 16] >> 4;
    return (lo | (int)((qh >> j) & 1) << 4) - 16;
}

static void dq_q5_0(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 22, y += 32) {
        const float d = rdh(b);
        for (int j = 0; j < 32; j++)
            y[j] = q5_0_elem(b, j) * d;
    }
}

void arb_q5_0_to_q8_0(const void *src, void *dst, size_t nb)
{
    const uint8_t *b = src;
    uint8_t *o = dst;
    for (size_t i = 0; i < nb; i++, b += 22, o += 34) {
        o[0] = b[0], o[1] = b[1]; /* the same fp16 scale */
        for (int j = 0; j < 32; j++)
            o[2 + j] = (uint8_t)(int8_t)q5_0_elem(b, j);
    }
}

/* Q5_1 (24 B: d, m, qh[4], qs[16]): Q5_0's codes without the -16, plus the min m. */
static void dq_q5_1(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 24, y += 32) {
        const float d = rdh(b), m = rdh(b + 2);
        for (int j = 0; j < 32; j++)
            y[j] = (q5_0_elem(b + 2, j) + 16) * d + m; /* b + 2: Q5_0's qh/qs offsets */
    }
}

void arb_q5_1_to_q8_0(const void *src, void *dst, float *c, size_t nb)
{
    const uint8_t *b = src;
    uint8_t *o = dst;
    for (size_t i = 0; i < nb; i++, b += 24, o += 34) {
        o[0] = b[0], o[1] = b[1]; /* d: d * q + m = d * (q - 16) + (16 d + m) */
        for (int j = 0; j < 32; j++)
            o[2 + j] = (uint8_t)(int8_t)q5_0_elem(b + 2, j);
        c[i] = 16.0f * rdh(b) + rdh(b + 2);
    }
}

/* IQ4_NL / IQ4_XS: 4-bit indices into ggml's fixed non-linear table (kvalues_iq4nl). */
static const int8_t iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* Element j of an IQ4_NL block's 16 bytes of indices: low nibbles first, then high. */
static int iq4_elem(const uint8_t *qs, int j) { return iq4nl_values[j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4]; }

static void dq_iq4_nl(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 18, y += 32) {
        const float d = rdh(b);
        for (int j = 0; j < 32; j++)
            y[j] = d * iq4_elem(b + 2, j);
    }
}

void arb_iq4_nl_to_q8_0(const void *src, void *dst, size_t nb)
{
    const uint8_t *b = src;
    uint8_t *o = dst;
    for (size_t i = 0; i < nb; i++, b += 18, o += 34) {
        o[0] = b[0], o[1] = b[1];
        for (int j = 0; j < 32; j++)
            o[2 + j] = (uint8_t)(int8_t)iq4_elem(b + 2, j);
    }
}

/* IQ4_XS (136 B: d, scales_h (2 B), scales_l[4], qs[128]): eight 32-element sub-blocks of
   IQ4_NL indices, sub-block s scaled by d * (ls - 32), ls 6 bits: the low 4 in nibble s % 2
   of scales_l[s / 2], the top 2 in bits 2s..2s+1 of scales_h. */
static int iq4_xs_scale(const uint8_t *b, int s)
{
    const int lo = (b[4 + s / 2] >> 4 * (s % 2)) & 0x0f, hi = (rd16(b + 2) >> 2 * s) & 3;
    return (lo | hi << 4) - 32;
}

static void dq_iq4_xs(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 136) {
        const float d = rdh(b);
        for (int s = 0; s < 8; s++, y += 32) {
            const float dl = d * (float)iq4_xs_scale(b, s);
            for (int j = 0; j < 32; j++)
                y[j] = dl * iq4_elem(b + 8 + 16 * s, j);
        }
    }
}

size_t arb_iq4_xs_to_q8_0(const void *src, void *dst, size_t nb)
{
    const uint8_t *b = src;
    uint8_t *o = dst;
    size_t inexact = 0;
    for (size_t i = 0; i < nb; i++, b += 136) {
        const float d = rdh(b);
        for (int s = 0; s < 8; s++, o += 34) {
            const float dl = d * (float)iq4_xs_scale(b, s); /* exact in f32: 11 x 6 bits */
            const uint16_t h = arb_f32_to_fp16(dl);
            inexact += arb_fp16_to_f32(h) != dl;
            o[0] = (uint8_t)(h & 0xff), o[1] = (uint8_t)(h >> 8);
            for (int j = 0; j < 32; j++)
                o[2 + j] = (uint8_t)(int8_t)iq4_elem(b + 8 + 16 * s, j);
        }
    }
    return inexact;
}

/* Q2_K (84 B: scales[16], qs[64], d, dmin): sixteen 16-element sub-blocks; element
   e = 128h + 32j + 16k + l is 2 bits at shift 2j of qs[32h + 16k + l], sub-block
   e / 16 = 8h + 2j + k with scale byte (low nibble: scale, high: min). */
static void dq_q2_k(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 84) {
        const float d = rdh(b + 80), dmin = rdh(b + 82);
        for (int e = 0; e < ARB_QK_K; e++) {
            const int h = e / 128, j = e / 32 % 4, k = e / 16 % 2, l = e % 16, sc = b[e / 16];
            const int q = (b[16 + 32 * h + 16 * k + l] >> 2 * j) & 3;
            /* ggml's order: dl = d * scale and ml = dmin * min first */
            const float dl = d * (float)(sc & 0x0f), ml = dmin * (float)(sc >> 4);
            *y++ = dl * (float)q - ml;
        }
    }
}

/* Q3_K (110 B: hmask[32], qs[64], scales[12], d): sixteen 16-element sub-blocks, the same
   element order as Q2_K; each element 2 low bits in qs, its third bit in hmask[16k + l] bit
   4h + j (clear: minus 4), so q in -4..3; 6-bit scales minus 32, unpacked by q3_k_scales. */
static void q3_k_scales(const uint8_t *s, int8_t out[16])
{
    for (int i = 0; i < 16; i++) {
        const int g = i / 4, c = i % 4;
        const int lo = g == 0 ? s[c] & 0x0f : g == 1 ? s[4 + c] & 0x0f : g == 2 ? s[c] >> 4 : s[4 + c] >> 4;
        out[i] = (int8_t)((lo | ((s[8 + c] >> 2 * g) & 3) << 4) - 32);
    }
}

static int q3_k_elem(const uint8_t *b, int e)
{
    const int h = e / 128, j = e / 32 % 4, k = e / 16 % 2, l = e % 16;
    const int q = (b[32 + 32 * h + 16 * k + l] >> 2 * j) & 3;
    return q - ((b[16 * k + l] >> (4 * h + j)) & 1 ? 0 : 4);
}

static void dq_q3_k(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 110) {
        const float d = rdh(b + 108);
        int8_t sc[16];
        q3_k_scales(b + 96, sc);
        for (int e = 0; e < ARB_QK_K; e++)
            *y++ = d * (float)sc[e / 16] * (float)q3_k_elem(b, e);
    }
}

/* Q6_K from 256 codes q in -32..31, 16 int8 scales and d: element e = 128h + 32c + l goes
   to the low or high nibble (c >= 2) of ql[64h + 32(c % 2) + l], its top 2 bits to bits
   2c..2c+1 of qh[32h + l]; scale e / 16 (dq_q6_k's order). */
static void put_q6_k(uint8_t *o, const int8_t q[ARB_QK_K], const int8_t sc[16], uint16_t d)
{
    memset(o, 0, 192);
    for (int e = 0; e < ARB_QK_K; e++) {
        const int h = e / 128, c = e / 32 % 4, l = e % 32, u = q[e] + 32;
        o[64 * h + 32 * (c % 2) + l] |= (uint8_t)((u & 0x0f) << (c >= 2 ? 4 : 0));
        o[128 + 32 * h + l] |= (uint8_t)((u >> 4) << 2 * c);
    }
    memcpy(o + 192, sc, 16);
    o[208] = (uint8_t)(d & 0xff), o[209] = (uint8_t)(d >> 8);
}

void arb_q2_k_to_q6_k(const void *src, void *dst, float *c, size_t nb)
{
    const uint8_t *b = src;
    uint8_t *o = dst;
    for (size_t i = 0; i < nb; i++, b += 84, o += 210) {
        int8_t q[ARB_QK_K], sc[16];
        const float dmin = rdh(b + 82);
        for (int e = 0; e < ARB_QK_K; e++) {
            const int h = e / 128, j = e / 32 % 4, k = e / 16 % 2, l = e % 16;
            q[e] = (int8_t)((b[16 + 32 * h + 16 * k + l] >> 2 * j) & 3);
        }
        for (int s = 0; s < 16; s++) {
            sc[s] = (int8_t)(b[s] & 0x0f);
            c[16 * i + (size_t)s] = -(dmin * (float)(b[s] >> 4));
        }
        put_q6_k(o, q, sc, rd16(b + 80));
    }
}

void arb_q3_k_to_q6_k(const void *src, void *dst, size_t nb)
{
    const uint8_t *b = src;
    uint8_t *o = dst;
    for (size_t i = 0; i < nb; i++, b += 110, o += 210) {
        int8_t q[ARB_QK_K], sc[16];
        q3_k_scales(b + 96, sc);
        for (int e = 0; e < ARB_QK_K; e++)
            q[e] = (int8_t)q3_k_elem(b, e);
        put_q6_k(o, q, sc, rd16(b + 108));
    }
}

/* Q8_0 (34 B: d, qs[32]) and Q8_1 (36 B: d, s, qs[32]; s = d * sum(qs) is unused here). */
static void dq_q8(const uint8_t *b, float *y, size_t nb, size_t bytes, size_t qs_off)
{
    for (size_t i = 0; i < nb; i++, b += bytes, y += 32) {
        const float d = rdh(b);
        for (int j = 0; j < 32; j++)
            y[j] = (int8_t)b[qs_off + j] * d;
    }
}

/* 6-bit scale j and min j of a Q4_K super-block, packed in 12 bytes: scales 0..3 and
   mins 0..3 are the low 6 bits of bytes 0..3 / 4..7; 4..7 take their low 4 bits from
   bytes 8..11 and their top 2 bits from the spare high bits of bytes 0..7. */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q4_K, and Q5_K (q5): Q4_K's scales and mins plus a fifth bit per element, bit s of
   qh[l] worth 16 for element l of sub-block s (ggml's dequantize_row_q5_K: u1 = 1 << 2c
   for the low nibbles of chunk c, u2 = 2 << 2c for the high ones), qh before qs. */
static void dq_q4_k(const uint8_t *b, float *y, size_t nb, int q5)
{
    for (size_t i = 0; i < nb; i++, b += q5 ? 176 : 144) {
        const float d = rdh(b), min = rdh(b + 2);
        const uint8_t *sc = b + 4, *qh = b + 16, *q = b + (q5 ? 48 : 16);
        uint8_t s, m;
        for (int j = 0, is = 0; j < ARB_QK_K; j += 64, is += 2, q += 32) {
            scale_min_k4(is, sc, &s, &m);
            const float d1 = d * s, m1 = min * m;
            scale_min_k4(is + 1, sc, &s, &m);
            const float d2 = d * s, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * ((q[l] & 0xf) | (q5 ? ((qh[l] >> is) & 1) << 4 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * ((q[l] >> 4) | (q5 ? ((qh[l] >> (is + 1)) & 1) << 4 : 0)) - m2;
        }
    }
}

static void dq_q6_k(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 210) {
        const float d = rdh(b + 208);
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int n = 0; n < ARB_QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

/* Q8_K: f32 d, int8 qs[256], int16 bsums[16] (292 B). */
static void dq_q8_k(const uint8_t *b, float *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, b += 292) {
        float d;
        memcpy(&d, b, 4);
        for (int j = 0; j < ARB_QK_K; j++)
            *y++ = d * (int8_t)b[4 + j];
    }
}

void arb_dequant_row(uint32_t type, const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const type_info *t = info(type);
    /* A caller bug if it fails: the model loader checks types and row sizes at load. */
    ARB_ASSERT(t && t->supported && n % t->blk_elems == 0);
    size_t nb = n / t->blk_elems;
    switch (type) {
    case ARB_TYPE_F32:
        memcpy(dst, src, n * sizeof(float));
        break;
    case ARB_TYPE_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = arb_fp16_to_f32(rd16(b + 2 * i));
        break;
    case ARB_TYPE_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = arb_bf16_to_f32(rd16(b + 2 * i));
        break;
    case ARB_TYPE_Q4_0: dq_q4_0(b, dst, nb); break;
    case ARB_TYPE_Q4_1: dq_q4_1(b, dst, nb); break;
    case ARB_TYPE_Q5_0: dq_q5_0(b, dst, nb); break;
    case ARB_TYPE_Q5_1: dq_q5_1(b, dst, nb); break;
    case ARB_TYPE_Q2_K: dq_q2_k(b, dst, nb); break;
    case ARB_TYPE_Q3_K: dq_q3_k(b, dst, nb); break;
    case ARB_TYPE_IQ4_NL: dq_iq4_nl(b, dst, nb); break;
    case ARB_TYPE_IQ4_XS: dq_iq4_xs(b, dst, nb); break;
    case ARB_TYPE_Q8_0: dq_q8(b, dst, nb, 34, 2); break;
    case ARB_TYPE_Q8_1: dq_q8(b, dst, nb, 36, 4); break;
    case ARB_TYPE_Q4_K: dq_q4_k(b, dst, nb, 0); break;
    case ARB_TYPE_Q5_K: dq_q4_k(b, dst, nb, 1); break;
    case ARB_TYPE_Q6_K: dq_q6_k(b, dst, nb); break;
    case ARB_TYPE_Q8_K: dq_q8_k(b, dst, nb); break;
    default: break;
    }
}

int arb_dequantize(uint32_t type, const void *src, float *dst, size_t n, arb_err *err)
{
    const type_info *t = info(type);
    if (!t || !t->supported)
        return ARB_ERR(err, ARB_E_UNSUPPORTED, "dequantize: type %s not supported", arb_type_name(type));
    if (n % t->blk_elems)
        return ARB_ERR(err, ARB_E_INVAL, "dequantize: %zu elements is not a multiple of %s blocks", n,
                       arb_type_name(type));
    arb_dequant_row(type, src, dst, n);
    return ARB_OK;
}
