/* chat.h — render a conversation into a prompt string with a chat template.
 *
 * arbor does not run Jinja: it recognises the common template families by the
 * markers in tokenizer.chat_template (or by an override name) and renders them
 * in C, byte-exact with the HF template for the cases arbor uses (no tools):
 *   chatml  <|im_start|>role\ncontent<|im_end|>\n ... (SmolLM2, Qwen2/2.5/3);
 *           a default system message written in the template (SmolLM2's
 *           "You are a helpful AI assistant named SmolLM, ...", Qwen2.5's
 *           "You are Qwen, ...") is extracted and inserted when no system turn is given
 *   llama3  <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> (content
 *           trimmed; BOS is left to the tokenizer's add_bos)
 *   llama3.1  the same, always opened by a system block "Cutting Knowledge Date:
 *           December 2023\nToday Date: 26 Jul 2024\n\n<system content>" (no tools)
 *   vicuna  FastChat vicuna_v1.1: "SYSTEM USER: q ASSISTANT: a</s>USER: q2 ASSISTANT:"
 *   gemma   <start_of_turn>user\ncontent<end_of_turn>\n ... <start_of_turn>model\n (Gemma-3:
 *           the assistant role is "model", a system message is prefixed to the first user
 *           turn with a blank line, content trimmed; BOS is left to the tokenizer's add_bos)
 *
 *     arb_chat_msg msgs[] = {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Why?"}};
 *     char buf[4096]; size_t n; arb_err err = {0};
 *     if (arb_chat_apply_tmpl(NULL, g, msgs, 3, true, buf, sizeof buf, &n, &err)) die(err.msg);
 *     // buf: "<|im_start|>system\nYou are a helpful AI ...<|im_end|>\n<|im_start|>user\nHi..."
 *
 * Thread-safety: pure functions, no state.
 */
#ifndef ARB_CHAT_H
#define ARB_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h" /* arb_chat_msg */
#include "error.h"
#include "gguf.h"

typedef enum arb_chat_kind {
    ARB_CHAT_UNKNOWN = 0,
    ARB_CHAT_CHATML = 1, /* also Qwen (same format, own default system prompt) */
    ARB_CHAT_LLAMA3 = 2,
    ARB_CHAT_VICUNA = 3,
    ARB_CHAT_LLAMA31 = 4, /* Llama-3.1/3.2/3.3: llama3 plus the "Cutting Knowledge Date" system block */
    ARB_CHAT_GEMMA = 5,   /* Gemma-2/3: <start_of_turn>role ... <end_of_turn> */
} arb_chat_kind;

/* Family of a Jinja template source by its markers; ARB_CHAT_UNKNOWN if none match. */
arb_chat_kind arb_chat_detect(const char *src, size_t len);
/* Family by name: "chatml", "qwen", "smollm" -> CHATML; "llama3"/"llama-3" -> LLAMA3;
   "llama3.1"/"llama-3.1" -> LLAMA31;
   "vicuna"/"vicuna_v1.1" -> VICUNA; "gemma"/"gemma3" -> GEMMA; anything else -> ARB_CHAT_UNKNOWN. */
arb_chat_kind arb_chat_kind_from_name(const char *name);
const char *arb_chat_kind_name(arb_chat_kind k);

/* Render from a template source (src may be NULL when name is given). name overrides
   detection; for ChatML the default system prompt is still taken from src when src is
   a ChatML template. Roles are copied verbatim (system/user/assistant). Writes a
   NUL-terminated string (truncated to cap-1 bytes); *n_out = full length needed.
   Returns ARB_OK, ARB_E_UNSUPPORTED (unknown template), ARB_E_INVAL (bad role order
   for vicuna/NULL content). */
int arb_chat_apply_src(const char *name, const char *src, size_t src_len, const arb_chat_msg *msgs,
                       int n_msgs, bool add_assistant, char *buf, size_t cap, size_t *n_out,
                       arb_err *err);

/* Same, with src = the GGUF's tokenizer.chat_template (g may be NULL if name is set). */
int arb_chat_apply_tmpl(const char *name, const arb_gguf *g, const arb_chat_msg *msgs, int n_msgs,
                        bool add_assistant, char *buf, size_t cap, size_t *n_out, arb_err *err);

#endif
