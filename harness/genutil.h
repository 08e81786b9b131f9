/* genutil.h — what `arbor generate` and `arbor check-lossless` share: load the model and
 * one context, turn a user message into prompt tokens (chat template by default).
 *
 *     arb_model *m; arb_ctx *c;
 *     if (arb_gen_load("default", "cpu", 0, 0, &m, &c, &err)) ...;     // threads 0 = all cores
 *     int32_t *ids; int n;
 *     arb_gen_prompt(m, "Write a haiku", true, &ids, &n, &err);  // free(ids) after use
 */
#ifndef ARB_GENUTIL_H
#define ARB_GENUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* arb_load_default_opts() plus the CPU kernel switches from the environment:
   ARBOR_ISA=scalar|avx2|avx512 (.isa; another value is ignored), ARBOR_ATTN_SCALAR set
   (.attn_scalar), ARBOR_NO_PACK=1 (.no_pack; "" and "0" mean unset). The only place arbor
   reads them: the engine takes them as load options. Every model the harness loads
   (target, draft model, tokenizer, bench) starts from these options. */
arb_load_opts arb_gen_load_opts(void);
/* The CPU kernel family lo selects, as run metadata and cost-profile fingerprints name
   it: "avx2", "avx512vnni", "scalar", with "-nopack" when lo->no_pack keeps the GGUF
   layout (other kernels, other speed: a profile fitted on one must not budget the
   other). Writes into buf (32 bytes are enough) and returns it. */
const char *arb_gen_kernels_label(const arb_load_opts *lo, char *buf, size_t cap);
/* The cost-profile fingerprint of evals on c (costmodel.h): on the CPU, this machine's CPU,
   the kernel family (arb_gen_kernels_label of arb_gen_load_opts()) and n_threads (0: all
   cores); on a GPU backend the device's name and the backend, "cuda" or "cuda-exact" (host
   threads do not set a GPU's costs). The model's name and weight bytes either way. A profile
   of one therefore never budgets the other. ARB_E_NODEVICE if the device cannot be asked. */
int arb_gen_cost_fingerprint(const arb_ctx *c, int n_threads, char *buf, size_t cap, arb_err *err);

/* model_spec: "default" or a path (modelfetch.h). backend: "cpu", "cuda", "cuda-exact"
   (NULL = cpu). n_ctx 0 = the engine default; c NULL: the model only. Load options:
   arb_gen_load_opts(). */
int arb_gen_load(const char *model_spec, const char *backend, int n_threads, int n_ctx, arb_model **m, arb_ctx **c,
                 arb_err *err);
/* A context on m as arb_gen_load makes it (hidden rows reserved); n_ctx 0 = the engine default. */
int arb_gen_ctx_new(arb_model *m, int n_ctx, arb_ctx **c, arb_err *err);
/* The context one generation asks for: the prompt, max_new tokens and the largest tree an
   eval takes (ARB_GEN_TREE_ROOM), or 0 (the engine default) past the model's context length.
   A context's KV cache lies on huge pages and is resident in full from its first token
   (engine/bigmem.h: 184 MB for SmolLM2 at the default 4096 tokens), so a one-shot
   generation sizes its own. */
#define ARB_GEN_TREE_ROOM 512
int arb_gen_ctx_tokens(const arb_model *m, int n_prompt, int max_new);

/* chat: apply the model's chat template to one user turn (with the assistant prompt);
   else tokenize the text as is. *ids is malloc'ed (caller frees). */
int arb_gen_prompt(const arb_model *m, const char *text, bool chat, int32_t **ids, int *n, arb_err *err);

#endif
