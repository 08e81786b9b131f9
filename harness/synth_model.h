/* synth_model.h — GGUF files with the shape of a real Llama/Qwen model and random
 * weights: the timing model for GPU benchmarks (an 8B shape where the default 135M
 * model is too small to mean anything), and small K-quant models for the GPU tests.
 * The outputs of such a model are noise; its speed is the real shape's.
 *
 *     arb_err err = {0};
 *     if (arb_synth_model_write("llama-8b", "q4_0", 0, 1, "/tmp/l8b.gguf", true, &err)) die(err.msg);
 *
 * Weights: std about 1/sqrt(n_in) (finite block scales for every type), norms near 1.
 * No tokenizer. Streamed to disk (an 8B Q4_0 file is 4.6 GB); seeded, so reproducible.
 */
#ifndef ARB_SYNTH_MODEL_H
#define ARB_SYNTH_MODEL_H

#include <stdbool.h>

#include "engine.h"

#define ARB_SYNTH_SHAPES "tiny llama-1b llama-3b llama-8b qwen2-7b smollm2-135m"
#define ARB_SYNTH_TYPES "q4_0 q4_1 q8_0 q4_k q5_k q6_k f16 q5_1 q2_k q3_k iq4_nl iq4_xs"

/* layers: keep the first N blocks (0 = all). progress: a line (a counter on a terminal)
   on stderr. f32_reference: the same random blocks (same shape, type and seed),
   written dequantized as F32: a float reference for kernels that read the blocks.
   ARB_E_INVAL for an unknown shape/type, ARB_E_IO naming the file. */
int arb_synth_model_write(const char *shape, const char *type, int layers, unsigned long long seed, const char *out,
                          bool progress, bool f32_reference, arb_err *err);

#endif
