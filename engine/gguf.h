/* gguf.h — GGUF v2/v3 reader: mmap, metadata, tensor directory, validation.
 *
 * Byte layout (little-endian):
 *   u32 magic "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
 *   n_kv × { string key | u32 type | value }        string = u64 len + bytes
 *   n_tensors × { string name | u32 n_dims (1..4) | u64 dims[n_dims] | u32 ggml_type | u64 offset }
 *   padding to general.alignment (default 32) | tensor data (offsets relative to here)
 * Value types: 0 u8 1 i8 2 u16 3 i16 4 u32 5 i32 6 f32 7 bool 8 string
 *              9 array(u32 elem type, u64 count, elems; arrays may nest) 10 u64 11 i64 12 f64
 *
 * Every count, length and offset is checked against the file size before use,
 * so a truncated or hostile file yields ARB_E_FORMAT with the byte offset, never a crash.
 *
 *     arb_gguf *g; arb_err err = {0};
 *     if (arb_gguf_open("m.gguf", &g, &err)) die(err.msg);
 *     const char *arch = arb_gguf_get_str(g, "general.architecture");
 *     const arb_gguf_tensor *t = arb_gguf_find_tensor(g, "token_embd.weight");
 *     // t->data points into the mapping; valid until arb_gguf_close(g).
 *     arb_gguf_close(g);
 */
#ifndef ARB_GGUF_H
#define ARB_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The public half (engine.h): the value, kv and tensor views, arb_gguf_open/close,
   version/alignment, kv and tensor iteration, array elements, type names. What
   follows is what the model loader and the tests use on top of it. */
#include "engine.h"

/* arb_gguf_open on a caller buffer (used by the fuzz target and tests); buf must outlive g. */
int arb_gguf_open_buffer(const void *buf, size_t len, const char *name, arb_gguf **out, arb_err *err);

const char *arb_gguf_path(const arb_gguf *g);
const arb_gguf_value *arb_gguf_find(const arb_gguf *g, const char *key); /* NULL if absent */

/* Typed getters: return ARB_OK, ARB_E_NOTFOUND, or ARB_E_FORMAT on type mismatch
   (integers of any width convert when the value fits). err names the key. */
int arb_gguf_get_u64(const arb_gguf *g, const char *key, uint64_t *out, arb_err *err);
int arb_gguf_get_i64(const arb_gguf *g, const char *key, int64_t *out, arb_err *err);
int arb_gguf_get_f64(const arb_gguf *g, const char *key, double *out, arb_err *err);
int arb_gguf_get_bool(const arb_gguf *g, const char *key, bool *out, arb_err *err);
/* String as a view into the mapping (not NUL-terminated). */
int arb_gguf_get_str(const arb_gguf *g, const char *key, arb_gguf_str *out, arb_err *err);

/* Numeric array elements, converted (arr must be an ARRAY value). */
int arb_gguf_arr_f64(const arb_gguf_value *arr, uint64_t i, double *out);
int arb_gguf_arr_i64(const arb_gguf_value *arr, uint64_t i, int64_t *out);

const arb_gguf_tensor *arb_gguf_find_tensor(const arb_gguf *g, const char *name); /* NULL if absent */

/* Compare a view with a C string. */
bool arb_gguf_str_eq(arb_gguf_str s, const char *c);

#endif
