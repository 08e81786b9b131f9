/* eagle.h — the "eagle" drafter (EAGLE head + EAGLE-2 tree, eagle.c; vtable arb_drafter_eagle in
 * drafter.h). Its tree's top-k lists come from the target's own output head as the engine stores
 * it (arb_ctx_output_head: quantized, ~7x fewer bytes than the f32 copy) when the backend has one,
 * else from the f32 copy of the output matrix. */
#ifndef ARB_EAGLE_DRAFTER_H
#define ARB_EAGLE_DRAFTER_H

#include <stdbool.h>

/* After bind: score with the f32 copy (on) or the engine's head (off, where available). For
   arbor bench-harness's before/after comparison. */
void arb_eagle_drafter_use_f32_head(void *st, bool on);

#endif
