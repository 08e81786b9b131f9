/* bench_drafts.h — `arbor bench-harness` section "draft cost per token": what one drafted token
 * and one drafted (l, k, b) tree cost with each draft a sampling verifier can use (the
 * 24-of-30-layer self-draft, drafter `draft`; the trained EAGLE head, drafter `eagle-dte`),
 * against one target pass, measured in one process (issue 17 item 4).
 *
 *     arb_ctx *c;  ...  // the target, 256 tokens committed
 *     if (arb_bench_drafts(c, stdout, &err)) ...
 */
#ifndef ARB_BENCH_DRAFTS_H
#define ARB_BENCH_DRAFTS_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"

/* Prints a markdown section to out. c: the target context with a committed prefix (>= 2
   tokens); its KV is left as it was. The EAGLE head is the trained one at the default path when
   it exists, else a random head of the model's sizes (the cost does not depend on the weights;
   the section says which). Errors: the drafters' (memory, a draft context that cannot be made). */
int arb_bench_drafts(arb_ctx *c, FILE *out, arb_err *err);

/* The EAGLE head a timing uses: "default" into heads when the model's trained head loads, else a
   random head of the model's sizes saved to tmp (a mkstemp template; the caller removes it when
   *random) — timings do not depend on the weights. */
int arb_bench_eagle_head(arb_ctx *c, char *heads, size_t cap, char *tmp, bool *random, arb_err *err);

#endif
