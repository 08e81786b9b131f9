/* distill.h — the self-distillation file: the target's own greedy responses to training
 * prompts, as token ids (docs/heads.md). `arbor distill` writes it, `arbor train` reads it.
 *
 * Byte layout (little-endian, version 1):
 *     header  "ARBDIST\0" | u32 version | u32 n_meta | n_meta bytes of JSON meta
 *             (model sha256 and name, n_vocab, sets, limits, template: what made the file)
 *     record* u32 tag 'RECD' | u32 seq | u32 n_prompt | u32 n_resp |
 *             i32 tok[n_prompt + n_resp] (chat-formatted prompt, then the response) |
 *             u64 FNV-1a over the 16 header bytes and the tokens
 * A record is written with one fwrite + fflush, so a crash leaves at most one torn record at
 * the end: the reader stops at the first short or bad record, and the writer truncates it away
 * before appending (resume loses at most the record in flight).
 *
 *     arb_distill_writer *w;
 *     arb_distill_writer_open(path, meta_json, &w, &err);   // resumes: w's next_seq, counts
 *     arb_distill_writer_append(w, seq, prompt, n_p, resp, n_r, &err);
 *     arb_distill_writer_close(w);
 *     arb_distill_data *d;
 *     arb_distill_load(path, &d, &err);                    // every valid record, in order
 *     arb_distill_free(d);
 */
#ifndef ARB_DISTILL_H
#define ARB_DISTILL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define ARB_DISTILL_VERSION 1

typedef struct arb_distill_rec {
    uint32_t seq;      /* index of the prompt in the distill run's prompt list */
    int n_prompt;      /* prompt tokens (chat-formatted, BOS included if the model adds one) */
    int n_resp;        /* response tokens (the final EOS/EOT included when generation stopped on one) */
    const int32_t *tok;/* [n_prompt + n_resp], owned by the arb_distill_data */
} arb_distill_rec;

typedef struct arb_distill_data {
    char *meta;              /* the header's JSON (NUL-terminated) */
    int n_rec;
    arb_distill_rec *rec;    /* [n_rec] */
    int32_t *tok;            /* all tokens, records back to back */
    uint64_t n_prompt_tok, n_resp_tok;
    char sha256[65];         /* of the file's bytes up to the last valid record */
} arb_distill_data;

/* Read every valid record (a torn tail is ignored). ARB_E_IO, ARB_E_FORMAT (bad magic or
   version: the message names the file), ARB_E_NOMEM. *out = NULL on failure. */
int arb_distill_load(const char *path, arb_distill_data **out, arb_err *err);
void arb_distill_free(arb_distill_data *d); /* NULL-safe */

typedef struct arb_distill_writer arb_distill_writer;
/* Create the file with meta, or reopen an existing one whose meta is identical (else
   ARB_E_INVAL naming both), dropping a torn tail. */
int arb_distill_writer_open(const char *path, const char *meta, arb_distill_writer **out, arb_err *err);
/* seq of the next prompt to do (last record's seq + 1, 0 for a new file), records and tokens so far. */
uint32_t arb_distill_writer_next_seq(const arb_distill_writer *w);
int arb_distill_writer_n_rec(const arb_distill_writer *w);
uint64_t arb_distill_writer_n_resp_tok(const arb_distill_writer *w);
int arb_distill_writer_append(arb_distill_writer *w, uint32_t seq, const int32_t *prompt, int n_prompt,
                              const int32_t *resp, int n_resp, arb_err *err);
void arb_distill_writer_close(arb_distill_writer *w); /* NULL-safe */

/* The default file of a model: <cache>/distill/<model file>.<sha256[0:12]>.n<max_new>.dst
   (the cache directories are created). */
int arb_distill_default_path(const char *model_path, const char *sha256, int max_new, char *buf, size_t cap,
                             arb_err *err);

#endif
