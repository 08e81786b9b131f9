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

#include "error.h"

typedef enum arb_gguf_type {
    ARB_GGUF_U8 = 0, ARB_GGUF_I8 = 1, ARB_GGUF_U16 = 2, ARB_GGUF_I16 = 3,
    ARB_GGUF_U32 = 4, ARB_GGUF_I32 = 5, ARB_GGUF_F32 = 6, ARB_GGUF_BOOL = 7,
    ARB_GGUF_STRING = 8, ARB_GGUF_ARRAY = 9, ARB_GGUF_U64 = 10, ARB_GGUF_I64 = 11,
    ARB_GGUF_F64 = 12,
} arb_gguf_type;

typedef struct arb_gguf_str {
    const char *ptr; /* points into the mapping, NOT NUL-terminated */
    uint64_t len;    /* bytes */
} arb_gguf_str;

/* One metadata value. Scalars are decoded; arrays keep a pointer to their raw
   elements in the mapping (validated at open), read them with the accessors.
   Decoded scalars: U8..U64 in v.u64, I8..I64 in v.i64, F32/F64 in v.f64, BOOL in v.b. */
typedef struct arb_gguf_value {
    arb_gguf_type type;
    union {
        uint64_t u64; int64_t i64; double f64; bool b; arb_gguf_str str;
        struct {
            arb_gguf_type elem_type; /* type of elements (may be ARRAY: nested) */
            uint64_t n;              /* element count */
            const uint8_t *data;     /* first element in the mapping */
            uint64_t n_bytes;        /* bytes spanned by all elements */
        } arr;
    } v;
} arb_gguf_value;

typedef struct arb_gguf_kv {
    arb_gguf_str key;
    arb_gguf_value value;
} arb_gguf_kv;

typedef struct arb_gguf_tensor {
    arb_gguf_str name;
    uint32_t n_dims;     /* 1..4 */
    uint64_t ne[4];      /* elements per dim, ne[0] fastest-varying (row length) */
    uint32_t type;       /* ggml type id, see quant.h ARB_TYPE_* */
    uint64_t offset;     /* from the start of the data section */
    uint64_t n_bytes;    /* size of the data, from type and shape */
    const void *data;    /* into the mapping */
} arb_gguf_tensor;

typedef struct arb_gguf arb_gguf;

/* Open and validate a file (mmap, read-only). On failure *out = NULL and err names
   the file and the byte offset. Returns ARB_OK, ARB_E_IO, ARB_E_FORMAT, ARB_E_NOMEM. */
int arb_gguf_open(const char *path, arb_gguf **out, arb_err *err);
/* Same, on a caller buffer (used by the fuzz target and tests); buf must outlive g. */
int arb_gguf_open_buffer(const void *buf, size_t len, const char *name, arb_gguf **out, arb_err *err);
void arb_gguf_close(arb_gguf *g); /* NULL-safe */

uint32_t arb_gguf_version(const arb_gguf *g);
uint64_t arb_gguf_alignment(const arb_gguf *g);
const char *arb_gguf_path(const arb_gguf *g);

uint64_t arb_gguf_n_kv(const arb_gguf *g);
const arb_gguf_kv *arb_gguf_kv_at(const arb_gguf *g, uint64_t i);
const arb_gguf_value *arb_gguf_find(const arb_gguf *g, const char *key); /* NULL if absent */

/* Typed getters: return ARB_OK, ARB_E_NOTFOUND, or ARB_E_FORMAT on type mismatch
   (integers of any width convert when the value fits). err names the key. */
int arb_gguf_get_u64(const arb_gguf *g, const char *key, uint64_t *out, arb_err *err);
int arb_gguf_get_i64(const arb_gguf *g, const char *key, int64_t *out, arb_err *err);
int arb_gguf_get_f64(const arb_gguf *g, const char *key, double *out, arb_err *err);
int arb_gguf_get_bool(const arb_gguf *g, const char *key, bool *out, arb_err *err);
/* String as a view into the mapping (not NUL-terminated). */
int arb_gguf_get_str(const arb_gguf *g, const char *key, arb_gguf_str *out, arb_err *err);

/* Array element access. arr must be an ARRAY value. Strings: O(1) after open
   (string arrays are indexed at open). Numbers are converted. */
int arb_gguf_arr_str(const arb_gguf *g, const arb_gguf_value *arr, uint64_t i, arb_gguf_str *out);
int arb_gguf_arr_f64(const arb_gguf_value *arr, uint64_t i, double *out);
int arb_gguf_arr_i64(const arb_gguf_value *arr, uint64_t i, int64_t *out);
/* Element i as a value (scalars decoded; strings and nested arrays as views). O(1) for
   fixed-size elements, O(i) walk for strings/arrays (use arb_gguf_arr_str for O(1)).
   ARB_E_INVAL if arr is not an array, ARB_E_RANGE if i >= n. */
int arb_gguf_arr_at(const arb_gguf_value *arr, uint64_t i, arb_gguf_value *out);

uint64_t arb_gguf_n_tensors(const arb_gguf *g);
const arb_gguf_tensor *arb_gguf_tensor_at(const arb_gguf *g, uint64_t i);
const arb_gguf_tensor *arb_gguf_find_tensor(const arb_gguf *g, const char *name); /* NULL if absent */

/* Helpers: compare a view with a C string; copy to a NUL-terminated buffer (truncates). */
bool arb_gguf_str_eq(arb_gguf_str s, const char *c);
void arb_gguf_str_copy(arb_gguf_str s, char *buf, size_t cap);
const char *arb_gguf_type_name(arb_gguf_type t);

#endif
