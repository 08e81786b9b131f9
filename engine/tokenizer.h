/* tokenizer.h — text <-> token ids from a GGUF's tokenizer.ggml.* metadata.
 *
 * Supports byte-level BPE (tokenizer.ggml.model = "gpt2", with the pre-tokenizer
 * named by tokenizer.ggml.pre: smollm, gpt-2, llama-bpe/llama3, qwen2, deepseek-llm,
 * deepseek-coder, falcon, mpt, starcoder, refact, command-r, ...) and
 * SentencePiece BPE (model = "llama": scores, <0xXX> byte fallback, '▁' spaces).
 * Special tokens (CONTROL / USER_DEFINED) are matched in the raw text first when
 * parse_special is set. Semantics follow llama.cpp's llama_tokenize.
 *
 *     arb_tokenizer *t; arb_err err = {0};
 *     if (arb_tokenizer_new_from_gguf(g, &t, &err)) die(err.msg);
 *     int32_t ids[256]; int n;
 *     arb_tokenizer_encode(t, "Hello", 5, true, true, ids, 256, &n, &err);
 *     char piece[64];
 *     for (int i = 0; i < n && i < 256; i++) {
 *         int k = arb_tokenizer_piece(t, ids[i], piece, sizeof piece);  // raw bytes
 *         fwrite(piece, 1, k, stdout);
 *     }
 *     arb_tokenizer_free(t);
 *
 * Lifetime: the tokenizer copies everything it needs out of the GGUF (vocab
 * strings, merges, scores), so the arb_gguf may be closed right after
 * arb_tokenizer_new_from_gguf returns.
 * Thread-safety: read-only after construction; encode/piece may run concurrently
 * from many threads (encode allocates its own temporary buffers).
 */
#ifndef ARB_TOKENIZER_H
#define ARB_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "gguf.h"

typedef struct arb_tokenizer arb_tokenizer;

typedef enum arb_tok_kind {
    ARB_TOK_SPM = 1, /* "llama": SentencePiece BPE */
    ARB_TOK_BPE = 2, /* "gpt2": byte-level BPE */
} arb_tok_kind;

/* Build from tokenizer.ggml.{model,pre,tokens,token_type,scores,merges,*_token_id,
   add_bos_token,add_space_prefix}. Returns ARB_OK, ARB_E_NOTFOUND (no tokens array),
   ARB_E_FORMAT (bad types/ids), ARB_E_UNSUPPORTED (model "bert"/"t5"/... or an unknown
   pre name), ARB_E_NOMEM. On failure *out = NULL; err names the key. */
int arb_tokenizer_new_from_gguf(const arb_gguf *g, arb_tokenizer **out, arb_err *err);
void arb_tokenizer_free(arb_tokenizer *t); /* NULL-safe */

/* Encode len bytes of UTF-8 text. Invalid UTF-8 is not an error: byte-level BPE reads
   each bad byte as U+FFFD (as llama.cpp), SentencePiece falls back to <0xXX> tokens.
   add_bos: prepend BOS if the model's add_bos_token flag says so (and BOS exists).
   parse_special: match CONTROL token texts ("<|im_start|>") in the raw text first;
   USER_DEFINED tokens are matched either way (as llama.cpp and HF tokenizers).
   Writes min(total, cap) ids to out; *n_out = total needed (retry with a larger
   buffer if > cap). Returns ARB_OK or ARB_E_NOMEM / ARB_E_INVAL. */
int arb_tokenizer_encode(const arb_tokenizer *t, const char *text, size_t len, bool add_bos,
                         bool parse_special, int32_t *out, int cap, int *n_out, arb_err *err);

/* Raw bytes of one token as it appears in decoded text (byte-level BPE mapped back
   to bytes, '▁' -> ' ', <0xXX> -> the byte; CONTROL tokens give their text).
   Returns the byte count (may exceed cap; nothing is written past cap), or
   ARB_E_RANGE for a bad id. No NUL terminator is written. */
int arb_tokenizer_piece(const arb_tokenizer *t, int32_t id, char *buf, int cap);

/* Decode ids to text: concatenated pieces; when skip_leading_space and the model is
   SPM with add_space_prefix, one leading ' ' of the first piece is dropped (so that
   decode(encode(s)) == s). Returns total bytes (may exceed cap), NUL-terminates when
   room, ARB_E_RANGE on a bad id. */
int arb_tokenizer_decode(const arb_tokenizer *t, const int32_t *ids, int n,
                         bool skip_leading_space, char *buf, int cap);

/* The vocabulary entry's text as stored (GPT-2 byte-mapped or '▁'); NULL if bad id. */
const char *arb_tokenizer_token_text(const arb_tokenizer *t, int32_t id);
/* Id of an exact vocabulary string, or -1. */
int32_t arb_tokenizer_find(const arb_tokenizer *t, const char *text, size_t len);

bool arb_tokenizer_is_eog(const arb_tokenizer *t, int32_t id);     /* EOS, EOT, <|im_end|>, ... */
bool arb_tokenizer_is_control(const arb_tokenizer *t, int32_t id); /* CONTROL token type */
int arb_tokenizer_n_vocab(const arb_tokenizer *t);
arb_tok_kind arb_tokenizer_kind(const arb_tokenizer *t);
const char *arb_tokenizer_pre(const arb_tokenizer *t); /* "smollm", "default", ... */
int32_t arb_tokenizer_bos(const arb_tokenizer *t);     /* -1 when absent */
int32_t arb_tokenizer_eos(const arb_tokenizer *t);
int32_t arb_tokenizer_eot(const arb_tokenizer *t);
bool arb_tokenizer_add_bos(const arb_tokenizer *t);    /* tokenizer.ggml.add_bos_token */

#endif
