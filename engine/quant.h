/* quant.h — ggml block formats: sizes, dequantisation, activation quantisation.
 *
 * Type ids are ggml's (they appear in GGUF tensor entries). A row of ne0 elements
 * is ne0/block_elems blocks of block_bytes each.
 *
 *     size_t rb = arb_type_row_bytes(ARB_TYPE_Q4_1, 576);       // bytes per row
 *     arb_dequant_row(ARB_TYPE_Q4_1, row_ptr, out_f32, 576);    // exact reference dequant
 *
 * The fast dot-product kernels live in engine/cpu/; this module is the
 * reference (scalar, exact) and the single source of the block layouts.
 */
#ifndef ARB_QUANT_H
#define ARB_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h" /* arb_type_name */

typedef enum arb_type {
    ARB_TYPE_F32 = 0, ARB_TYPE_F16 = 1, ARB_TYPE_Q4_0 = 2, ARB_TYPE_Q4_1 = 3,
    ARB_TYPE_Q8_0 = 8, ARB_TYPE_Q8_1 = 9, ARB_TYPE_Q4_K = 12, ARB_TYPE_Q6_K = 14,
    ARB_TYPE_Q8_K = 15, ARB_TYPE_BF16 = 30, ARB_TYPE_Q5_K = 13,
    /* Dequantised here; the loader widens their matrices at load into a type the matmul
       kernels take (engine/model.c, widen_matrices): */
    ARB_TYPE_Q5_0 = 6,    /* -> Q8_0, every value kept */
    ARB_TYPE_Q3_K = 11,   /* -> Q6_K, every value kept */
    ARB_TYPE_IQ4_NL = 20, /* -> Q8_0, every value kept */
    ARB_TYPE_IQ4_XS = 23, /* -> Q8_0, each 32-block's scale rounded to fp16 */
    ARB_TYPE_Q5_1 = 7,    /* -> Q8_0 + a constant per 32-block (arb_qmat.bconst) */
    ARB_TYPE_Q2_K = 10,   /* -> Q6_K + a constant per 16-block */
    /* Known to the reader (sizes only, so any ggml file can be opened and inspected);
       arb_type_supported() is false for these: no dequantisation. */
    ARB_TYPE_IQ2_XXS = 16, ARB_TYPE_IQ2_XS = 17, ARB_TYPE_IQ3_XXS = 18,
    ARB_TYPE_IQ1_S = 19, ARB_TYPE_IQ3_S = 21, ARB_TYPE_IQ2_S = 22,
    ARB_TYPE_I8 = 24, ARB_TYPE_I16 = 25, ARB_TYPE_I32 = 26,
    ARB_TYPE_I64 = 27, ARB_TYPE_F64 = 28, ARB_TYPE_IQ1_M = 29, ARB_TYPE_TQ1_0 = 34,
    ARB_TYPE_TQ2_0 = 35,
} arb_type;

#define ARB_QK4_0 32
#define ARB_QK4_1 32
#define ARB_QK8_0 32
#define ARB_QK_K 256

/* ggml-compatible block layouts (packed, little-endian; fp16 stored as uint16_t). */
typedef struct { uint16_t d; uint8_t qs[ARB_QK4_0 / 2]; } arb_block_q4_0;          /* 18 B */
typedef struct { uint16_t d, m; uint8_t qs[ARB_QK4_1 / 2]; } arb_block_q4_1;       /* 20 B */
typedef struct { uint16_t d; int8_t qs[ARB_QK8_0]; } arb_block_q8_0;               /* 34 B */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[ARB_QK_K / 2]; } arb_block_q4_k; /* 144 B */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[ARB_QK_K / 8]; uint8_t qs[ARB_QK_K / 2]; } arb_block_q5_k; /* 176 B */
typedef struct { uint8_t ql[ARB_QK_K / 2]; uint8_t qh[ARB_QK_K / 4]; int8_t scales[ARB_QK_K / 16]; uint16_t d; } arb_block_q6_k; /* 210 B */

bool arb_type_known(uint32_t type);          /* one of the types above */
bool arb_type_supported(uint32_t type);      /* dequant implemented */
/* arb_type_name(type): engine.h ("Q4_1", or "type#N" for unknown) */
size_t arb_type_block_elems(uint32_t type);  /* 1 for F32/F16/BF16; 0 if unknown */
size_t arb_type_block_bytes(uint32_t type);  /* 0 if unknown */
/* Bytes of a row of n elements; 0 if n is not a multiple of the block size or type unknown. */
size_t arb_type_row_bytes(uint32_t type, uint64_t n);

float arb_fp16_to_f32(uint16_t h);
uint16_t arb_f32_to_fp16(float f);
float arb_bf16_to_f32(uint16_t h);

/* Q5_0 blocks (d, 5-bit q) rewritten as Q8_0 blocks (the same d, q - 16 as int8): every
   value is unchanged, so the Q8_0 matmul kernels serve Q5_0 matrices (model.c, load time).
   nb blocks: src 22 * nb bytes, dst 34 * nb. */
void arb_q5_0_to_q8_0(const void *src, void *dst, size_t nb);

/* IQ4_NL blocks (d, 4-bit indices into ggml's table kvalues_iq4nl) rewritten as Q8_0 blocks
   (the same d, the table's int8 values): every value unchanged. src 18 * nb, dst 34 * nb. */
void arb_iq4_nl_to_q8_0(const void *src, void *dst, size_t nb);
/* IQ4_XS super-blocks (nb of 136 B) as 8 * nb Q8_0 blocks: the table's int8 values, each
   32-block's scale d * (ls - 32) rounded to the nearest fp16 (relative error <= 2^-11; exact
   when it fits 11 significant bits). Returns how many block scales were rounded. */
size_t arb_iq4_xs_to_q8_0(const void *src, void *dst, size_t nb);
/* Weights with a per-block min (w = code part + c of the block) as a kernel type plus one
   float c per block, which the matmul adds as c * (sum of x over the block) (arb_qmat.bconst):
   Q5_1 (nb blocks of 24 B) -> Q8_0 (the same d, q - 16) and c = 16 d + m, one per block;
   Q2_K (nb of 84 B) -> Q6_K (the same d, scales the low nibbles, codes q + 32) and
   c = -dmin * min, 16 per super-block. d * code + c is each value (c rounded to f32). */
void arb_q5_1_to_q8_0(const void *src, void *dst, float *c, size_t nb);
void arb_q2_k_to_q6_k(const void *src, void *dst, float *c, size_t nb);
/* Q3_K super-blocks (nb of 110 B) rewritten as Q6_K (210 B): the same d, the same 16 scales
   (6-bit minus 32, as int8), each 3-bit code q in -4..3 as the 6-bit code q + 32; every value
   unchanged, so the Q6_K kernels of every family serve Q3_K matrices. */
void arb_q3_k_to_q6_k(const void *src, void *dst, size_t nb);

/* Reference dequantisation of n elements (n a multiple of the block size). */
void arb_dequant_row(uint32_t type, const void *src, float *dst, size_t n);

#endif
