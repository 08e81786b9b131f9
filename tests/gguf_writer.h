/* gguf_writer.h — a tiny GGUF writer for tests and fuzz seeds (header-only, test code).
 *
 * Emits raw little-endian fields, so tests can build valid files and also corrupt ones
 * field by field:
 *
 *     wbuf b = {0};
 *     w_header(&b, 3, 1, 1);                       // version, n_tensors, n_kv
 *     w_kv_str(&b, "general.architecture", "llama");
 *     w_tensor(&b, "w", 1, (uint64_t[]){8}, 0, 0);  // name, n_dims, ne, ggml type, offset
 *     w_pad(&b, 32);                                // data section
 *     for (int i = 0; i < 8; i++) w_f32(&b, i);
 *     // b.p / b.n hold the file; free(b.p)
 */
#ifndef ARB_TEST_GGUF_WRITER_H
#define ARB_TEST_GGUF_WRITER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct wbuf {
    uint8_t *p; /* bytes written */
    size_t n;   /* length */
    size_t cap; /* allocated */
} wbuf;

static inline void w_raw(wbuf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
}

static inline void w_le(wbuf *b, uint64_t v, int n)
{
    uint8_t t[8];
    for (int i = 0; i < n; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    w_raw(b, t, (size_t)n);
}

static inline void w_u8(wbuf *b, uint8_t v) { w_le(b, v, 1); }
static inline void w_u16(wbuf *b, uint16_t v) { w_le(b, v, 2); }
static inline void w_u32(wbuf *b, uint32_t v) { w_le(b, v, 4); }
static inline void w_u64(wbuf *b, uint64_t v) { w_le(b, v, 8); }
static inline void w_f32(wbuf *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    w_u32(b, u);
}
static inline void w_f64(wbuf *b, double f)
{
    uint64_t u;
    memcpy(&u, &f, 8);
    w_u64(b, u);
}
static inline void w_str(wbuf *b, const char *s)
{
    w_u64(b, strlen(s));
    w_raw(b, s, strlen(s));
}

static inline void w_header(wbuf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    w_raw(b, "GGUF", 4);
    w_u32(b, version);
    w_u64(b, n_tensors);
    w_u64(b, n_kv);
}
/* Key and value type; the caller writes the value. */
static inline void w_key(wbuf *b, const char *key, uint32_t type)
{
    w_str(b, key);
    w_u32(b, type);
}
static inline void w_kv_str(wbuf *b, const char *key, const char *val)
{
    w_key(b, key, 8);
    w_str(b, val);
}
/* Array header; the caller writes the n elements. */
static inline void w_arr(wbuf *b, uint32_t elem_type, uint64_t n)
{
    w_u32(b, elem_type);
    w_u64(b, n);
}
static inline void w_tensor(wbuf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                            uint64_t offset)
{
    w_str(b, name);
    w_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        w_u64(b, ne[d]);
    w_u32(b, type);
    w_u64(b, offset);
}
static inline uint64_t w_align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
static inline void w_pad_to(wbuf *b, size_t n)
{
    while (b->n < n)
        w_u8(b, 0);
}
static inline void w_pad(wbuf *b, uint64_t align) { w_pad_to(b, (size_t)w_align_up(b->n, align)); }

#endif
