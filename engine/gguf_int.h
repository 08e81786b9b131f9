/* gguf_int.h — internals shared by gguf.c (parsing, validation, arrays) and gguf_get.c
 * (lookups, typed getters). Not for use outside engine/gguf*.c. */
#ifndef ARB_GGUF_INT_H
#define ARB_GGUF_INT_H

#include "gguf.h"

struct arb_gguf {
    char *name;               /* file name for messages (owned) */
    const uint8_t *base;      /* the whole file */
    size_t size;              /* its bytes */
    void *map;                /* mmap base, NULL for a caller buffer */
    uint32_t version;         /* 2 or 3 */
    uint64_t alignment;       /* general.alignment or 32, a power of two */
    uint64_t data_off;        /* file offset of the tensor data section */
    uint64_t n_kv;            /* metadata entries */
    arb_gguf_kv *kv;          /* [n_kv] */
    arb_gguf_str **kv_strs;   /* [n_kv]: index of views for arrays of strings, else NULL */
    uint64_t n_tensors;       /* tensor directory entries */
    arb_gguf_tensor *tensors; /* [n_tensors] */
    uint64_t *kv_hash;        /* [kv_cap]: kv index + 1, 0 = empty */
    uint64_t *t_hash;         /* [t_cap]: tensor index + 1, 0 = empty */
    size_t kv_cap, t_cap;     /* powers of two >= 2 n */
};

/* Probe the key table (tensors = false) or the tensor-name table for the name p[0..n).
   Returns the slot where it is or would go; *found = its index + 1, or 0 if absent. */
size_t arb_gguf_int_probe(const arb_gguf *g, bool tensors, const char *p, uint64_t n, uint64_t *found);

static inline bool arb_gguf_int_unsigned(arb_gguf_type t)
{
    return t == ARB_GGUF_U8 || t == ARB_GGUF_U16 || t == ARB_GGUF_U32 || t == ARB_GGUF_U64;
}
static inline bool arb_gguf_int_signed(arb_gguf_type t)
{
    return t == ARB_GGUF_I8 || t == ARB_GGUF_I16 || t == ARB_GGUF_I32 || t == ARB_GGUF_I64;
}

#endif
