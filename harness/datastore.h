/* datastore.h — REST's retrieval datastore: a token corpus and its suffix array, in one
 * versioned, self-describing file (docs/spec/drafting.md §7, docs/greedy-methods.md "REST").
 *
 *     arb_datastore_builder *b;
 *     arb_datastore_builder_new(n_vocab, &b, &err);
 *     arb_datastore_builder_add(b, doc_tokens, n, &err);     // once per document
 *     arb_datastore_meta m = {.n_vocab = n_vocab};           // + tokenizer sha, model, corpus
 *     arb_datastore *ds;
 *     arb_datastore_builder_finish(b, &m, &ds, &err);        // suffix array (libdivsufsort); frees b
 *     arb_datastore_save(ds, "code.ards", &err);
 *     arb_datastore_free(ds);
 *     arb_datastore_load("code.ards", tok_sha, &ds, &err);   // mmap; wrong tokenizer = error
 *     uint64_t lo, hi;
 *     arb_datastore_find(ds, query, m, &lo, &hi);            // SA rows [lo, hi) start with query
 *
 * Tokens are stored big-endian in `token_width` bytes (2 when the vocabulary fits below
 * 0xFFFF, else 4), so the token array is itself the byte string libdivsufsort sorts: byte
 * order of token-aligned suffixes is token order. Documents are separated by the token
 * 0xFF..FF (never a real id), which no query matches, so continuations stop at a document's
 * end. Byte layout of the file (header little-endian, 512 bytes):
 *     0 "ARBORDS\n" | 8 u32 version (1) | 12 u32 token_width | 16 u64 n_tokens (separators
 *     included) | 24 u64 n_docs | 32 u32 n_vocab | 36 u32 header bytes (512) | 40 char[64]
 *     tokenizer sha256 (hex) | 104 char[128] model name | 232 char[256] corpus description |
 *     488 u64 tokens offset (512) | 496 u64 suffix-array offset | 504 u64 file bytes
 *     tokens: n_tokens x token_width bytes; suffix array: n_tokens x i32 (host order, LE).
 * Limits: the byte string must fit libdivsufsort's 32-bit index (token_width x n_tokens <
 * 2^31, about 10^9 tokens at width 2). Thread-safety: a loaded datastore is read-only.
 */
#ifndef ARB_DATASTORE_H
#define ARB_DATASTORE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define ARB_DATASTORE_VERSION 1
#define ARB_DATASTORE_EXT ".ards"

typedef struct arb_datastore arb_datastore;
typedef struct arb_datastore_builder arb_datastore_builder;

typedef struct arb_datastore_meta {
    int n_vocab;                /* token ids are < n_vocab */
    char tokenizer_sha256[65];  /* arb_datastore_tokenizer_sha256 of the model that tokenised it */
    char model[128];            /* model name, for people */
    char corpus[256];           /* what the tokens are ("python3.11 stdlib *.py, 668 files") */
    /* filled by finish/load: */
    int token_width;            /* bytes per stored token: 2 or 4 */
    uint64_t n_tokens;          /* stored tokens, document separators included */
    uint64_t n_docs;
} arb_datastore_meta;

/* Fingerprint of a model's tokenizer: sha256 over n_vocab and every token's piece bytes. */
int arb_datastore_tokenizer_sha256(const arb_model *m, char hex[65], arb_err *err);

int arb_datastore_builder_new(int n_vocab, arb_datastore_builder **out, arb_err *err);
/* Append one document (ids < n_vocab; an empty one is skipped). ARB_E_RANGE past the limit. */
int arb_datastore_builder_add(arb_datastore_builder *b, const int32_t *tok, size_t n, arb_err *err);
uint64_t arb_datastore_builder_n_tokens(const arb_datastore_builder *b);
/* Sort the suffixes. Takes ownership of b (freed on success and failure). */
int arb_datastore_builder_finish(arb_datastore_builder *b, const arb_datastore_meta *m, arb_datastore **out,
                                 arb_err *err);
void arb_datastore_builder_free(arb_datastore_builder *b); /* NULL-safe */

int arb_datastore_save(const arb_datastore *ds, const char *path, arb_err *err);
/* Map and validate a file (every count against the file size, every SA entry and token in
   range). tokenizer_sha256: NULL = any, else a different fingerprint is ARB_E_INVAL naming
   both models. ARB_E_FORMAT names the file and the field. */
int arb_datastore_load(const char *path, const char *tokenizer_sha256, arb_datastore **out, arb_err *err);
void arb_datastore_free(arb_datastore *ds); /* NULL-safe */

const arb_datastore_meta *arb_datastore_get_meta(const arb_datastore *ds);
size_t arb_datastore_bytes(const arb_datastore *ds);           /* tokens + suffix array */
/* Token at position pos (< n_tokens); a separator reads as -1. */
int32_t arb_datastore_token(const arb_datastore *ds, uint64_t pos);
uint64_t arb_datastore_sa(const arb_datastore *ds, uint64_t i); /* i-th smallest suffix's start */
void arb_datastore_prefetch(const arb_datastore *ds, uint64_t pos); /* a hint: token pos is read soon */
/* SA rows [*lo, *hi) whose suffix starts with q[0..m). O(m log n); allocates nothing. */
void arb_datastore_find(const arb_datastore *ds, const int32_t *q, int m, uint64_t *lo, uint64_t *hi);

/* "name" -> $ARBOR_CACHE/datastores/name.ards (see modelfetch.h for the cache); a value
   with a '/' or ending in .ards is a path and is copied. */
int arb_datastore_resolve(const char *name, char *buf, size_t cap, arb_err *err);

#endif
