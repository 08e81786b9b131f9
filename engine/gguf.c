/* gguf.c — GGUF v2/v3 reader: one validating pass at open, then plain lookups.
 *
 * The parser walks the header with a bounds-checked cursor (struct cur). Every count read
 * from the file is compared with the bytes that remain BEFORE anything is allocated or
 * looped over: an element needs at least its minimum encoded size, so a hostile count
 * (n_kv = 2^60) fails at once and the total work stays linear in the file size.
 * Keys and tensor names go into open-addressing hash tables (duplicates rejected, O(1)
 * find); arrays of strings get an index of views so arb_gguf_arr_str is O(1).
 * The validation rules are listed in docs/gguf.md. Lookups and typed getters live in
 * gguf_get.c; the struct both files share is in gguf_int.h.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_int.h"
#include "quant.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DEPTH 8 /* nested arrays deeper than this are rejected (no real file nests) */

/* ---- bounds-checked cursor and error reporting ---- */

typedef struct cur {
    const uint8_t *p; /* file bytes */
    size_t size;      /* file size */
    size_t off;       /* read position */
    const char *name; /* file name */
    char what[128];   /* "kv 3 'general.name'" / "tensor 5 'output.weight'" for messages */
    arb_err *err;
} cur;

static int fail_at(cur *c, size_t at, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(cur *c, size_t at, int code, const char *fmt, ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ARB_ERR(c->err, code, "%s: byte %zu: %s%s%s", c->name, at, c->what, c->what[0] ? ": " : "", msg);
}
#define FAIL(c, ...) fail_at((c), (c)->off, ARB_E_FORMAT, __VA_ARGS__)

static size_t left(const cur *c) { return c->size - c->off; }

static int need(cur *c, uint64_t n, const char *field)
{
    if (n > left(c))
        return FAIL(c, "truncated: %s needs %llu bytes, %zu left", field, (unsigned long long)n, left(c));
    return ARB_OK;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int rd_u32(cur *c, uint32_t *v, const char *field)
{
    int rc = need(c, 4, field);
    if (rc)
        return rc;
    *v = (uint32_t)le(c->p + c->off, 4);
    c->off += 4;
    return ARB_OK;
}

static int rd_u64(cur *c, uint64_t *v, const char *field)
{
    int rc = need(c, 8, field);
    if (rc)
        return rc;
    *v = le(c->p + c->off, 8);
    c->off += 8;
    return ARB_OK;
}

static int rd_str(cur *c, arb_gguf_str *s, const char *field)
{
    uint64_t len;
    int rc = rd_u64(c, &len, field);
    if (rc)
        return rc;
    if (len > left(c))
        return FAIL(c, "%s length %llu exceeds the %zu bytes left", field, (unsigned long long)len, left(c));
    s->ptr = (const char *)c->p + c->off;
    s->len = len;
    c->off += (size_t)len;
    return ARB_OK;
}

/* A printable, truncated copy of a name from the file, for messages. */
static void printable(arb_gguf_str s, char *buf, size_t cap)
{
    size_t n = s.len < cap - 4 ? (size_t)s.len : cap - 4, i;
    for (i = 0; i < n; i++)
        buf[i] = s.ptr[i] >= 0x20 && s.ptr[i] < 0x7f ? s.ptr[i] : '?';
    strcpy(buf + i, s.len > n ? "..." : "");
}

/* ---- values ---- */

/* Encoded size of a fixed-size scalar; 0 for STRING/ARRAY; -1 for an invalid type id. */
static int scalar_size(uint32_t t)
{
    static const signed char sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < sizeof sz ? sz[t] : -1;
}

/* Smallest encoding of one element: strings are >= 8 bytes, arrays >= 12. */
static uint64_t min_size(uint32_t t)
{
    return t == ARB_GGUF_STRING ? 8 : t == ARB_GGUF_ARRAY ? 12 : (uint64_t)scalar_size(t);
}

static void decode_scalar(uint32_t t, const uint8_t *p, arb_gguf_value *v)
{
    uint64_t u = le(p, scalar_size(t));
    v->type = (arb_gguf_type)t;
    switch (t) {
    case ARB_GGUF_I8: v->v.i64 = (int8_t)u; break;
    case ARB_GGUF_I16: v->v.i64 = (int16_t)u; break;
    case ARB_GGUF_I32: v->v.i64 = (int32_t)u; break;
    case ARB_GGUF_I64: memcpy(&v->v.i64, &u, 8); break;
    case ARB_GGUF_F32: { uint32_t b = (uint32_t)u; float f; memcpy(&f, &b, 4); v->v.f64 = f; } break;
    case ARB_GGUF_F64: memcpy(&v->v.f64, &u, 8); break;
    case ARB_GGUF_BOOL: v->v.b = u != 0; break;
    default: v->v.u64 = u; break; /* U8 U16 U32 U64 */
    }
}

/* Read and validate one value of type t at the cursor (recursing into nested arrays). */
static int parse_value(cur *c, uint32_t t, arb_gguf_value *v, int depth)
{
    int rc, sz = scalar_size(t);
    memset(v, 0, sizeof *v);
    if (sz < 0)
        return FAIL(c, "invalid value type %u", t);
    if (sz > 0) {
        if ((rc = need(c, (uint64_t)sz, arb_gguf_type_name((arb_gguf_type)t))))
            return rc;
        if (t == ARB_GGUF_BOOL && c->p[c->off] > 1)
            return FAIL(c, "bool value %u is not 0 or 1", c->p[c->off]);
        decode_scalar(t, c->p + c->off, v);
        c->off += (size_t)sz;
        return ARB_OK;
    }
    v->type = (arb_gguf_type)t;
    if (t == ARB_GGUF_STRING)
        return rd_str(c, &v->v.str, "string");
    if (depth >= GGUF_MAX_DEPTH)
        return FAIL(c, "arrays nested deeper than %d", GGUF_MAX_DEPTH);
    uint32_t et;
    uint64_t n;
    if ((rc = rd_u32(c, &et, "array element type")) || (rc = rd_u64(c, &n, "array count")))
        return rc;
    if (scalar_size(et) < 0)
        return FAIL(c, "invalid array element type %u", et);
    if (n > left(c) / min_size(et))
        return FAIL(c, "array count %llu of %s exceeds what the %zu bytes left can hold (truncated or corrupt file)",
                    (unsigned long long)n, arb_gguf_type_name((arb_gguf_type)et), left(c));
    size_t start = c->off;
    v->v.arr.elem_type = (arb_gguf_type)et;
    v->v.arr.n = n;
    v->v.arr.data = c->p + start;
    if (scalar_size(et) > 0) {
        c->off += (size_t)(n * (uint64_t)scalar_size(et)); /* fits: checked above */
        if (et == ARB_GGUF_BOOL)
            for (size_t i = start; i < c->off; i++)
                if (c->p[i] > 1)
                    return fail_at(c, i, ARB_E_FORMAT, "bool array element %zu is %u, not 0 or 1", i - start, c->p[i]);
    } else {
        arb_gguf_value e;
        for (uint64_t i = 0; i < n; i++)
            if ((rc = parse_value(c, et, &e, depth + 1)))
                return rc;
    }
    v->v.arr.n_bytes = c->off - start;
    return ARB_OK;
}

/* ---- hash tables of names ---- */

static uint64_t hash(const char *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

static bool str_eqn(arb_gguf_str s, const char *p, uint64_t n) { return s.len == n && !memcmp(s.ptr, p, n); }

static int table_new(uint64_t n, uint64_t **tab, size_t *cap)
{
    size_t c = 8;
    while (c < 2 * n)
        c *= 2; /* n <= file size / 13, so this cannot overflow */
    *tab = calloc(c, sizeof **tab);
    *cap = c;
    return *tab ? ARB_OK : ARB_E_NOMEM;
}

size_t arb_gguf_int_probe(const arb_gguf *g, bool tensors, const char *p, uint64_t n, uint64_t *found)
{
    const uint64_t *tab = tensors ? g->t_hash : g->kv_hash;
    size_t mask = (tensors ? g->t_cap : g->kv_cap) - 1, s = (size_t)hash(p, n) & mask;
    for (*found = 0; tab[s]; s = (s + 1) & mask) {
        arb_gguf_str name = tensors ? g->tensors[tab[s] - 1].name : g->kv[tab[s] - 1].key;
        if (str_eqn(name, p, n)) {
            *found = tab[s];
            break;
        }
    }
    return s;
}

/* ---- open ---- */

/* Index the elements of an array of strings (validated already) for O(1) access. */
static int index_strings(arb_gguf *g, uint64_t i)
{
    const arb_gguf_value *v = &g->kv[i].value;
    uint64_t n = v->v.arr.n;
    if (n > SIZE_MAX / sizeof(arb_gguf_str))
        return ARB_E_NOMEM;
    arb_gguf_str *ix = malloc(n ? (size_t)n * sizeof *ix : 1);
    if (!ix)
        return ARB_E_NOMEM;
    const uint8_t *p = v->v.arr.data;
    for (uint64_t j = 0; j < n; j++) {
        ix[j].len = le(p, 8);
        ix[j].ptr = (const char *)p + 8;
        p += 8 + ix[j].len;
    }
    g->kv_strs[i] = ix;
    return ARB_OK;
}

static int parse_kvs(arb_gguf *g, cur *c)
{
    int rc;
    size_t slot;
    uint64_t found;
    if (g->n_kv > left(c) / 13) /* key length 8 + type 4 + value >= 1 */
        return FAIL(c, "n_kv %llu exceeds what the %zu bytes left can hold (truncated or corrupt file)",
                    (unsigned long long)g->n_kv, left(c));
    g->kv = calloc(g->n_kv ? (size_t)g->n_kv : 1, sizeof *g->kv);
    g->kv_strs = calloc(g->n_kv ? (size_t)g->n_kv : 1, sizeof *g->kv_strs);
    if (!g->kv || !g->kv_strs || table_new(g->n_kv, &g->kv_hash, &g->kv_cap))
        return ARB_ERR(c->err, ARB_E_NOMEM, "%s: out of memory for %llu keys", c->name, (unsigned long long)g->n_kv);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        arb_gguf_kv *kv = &g->kv[i];
        char key[80];
        uint32_t t;
        snprintf(c->what, sizeof c->what, "kv %llu", (unsigned long long)i);
        if ((rc = rd_str(c, &kv->key, "key")))
            return rc;
        printable(kv->key, key, sizeof key);
        snprintf(c->what, sizeof c->what, "kv %llu '%s'", (unsigned long long)i, key);
        slot = arb_gguf_int_probe(g, false, kv->key.ptr, kv->key.len, &found);
        if (found)
            return FAIL(c, "duplicate key (first at kv %llu)", (unsigned long long)(found - 1));
        g->kv_hash[slot] = i + 1;
        if ((rc = rd_u32(c, &t, "value type")) || (rc = parse_value(c, t, &kv->value, 0)))
            return rc;
        if (t == ARB_GGUF_ARRAY && kv->value.v.arr.elem_type == ARB_GGUF_STRING && (rc = index_strings(g, i)))
            return ARB_ERR(c->err, rc, "%s: %s: out of memory indexing strings", c->name, c->what);
        if (arb_gguf_str_eq(kv->key, "general.alignment")) {
            if (t != ARB_GGUF_U32)
                return FAIL(c, "must be u32, found %s", arb_gguf_type_name((arb_gguf_type)t));
            uint64_t a = kv->value.v.u64;
            if (a == 0 || (a & (a - 1)))
                return FAIL(c, "alignment %llu is not a power of two", (unsigned long long)a);
            g->alignment = a;
        }
    }
    return ARB_OK;
}

/* n_bytes from type and shape; at = byte offset of the type field, for messages. */
static int tensor_size(cur *c, arb_gguf_tensor *t, size_t at)
{
    uint64_t nel = 1, blk = arb_type_block_elems(t->type), rows;
    if (!arb_type_known(t->type))
        return fail_at(c, at, ARB_E_FORMAT, "unknown ggml type id %u: its size cannot be computed", t->type);
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (__builtin_mul_overflow(nel, t->ne[d], &nel) || nel > INT64_MAX)
            return fail_at(c, at, ARB_E_FORMAT, "element count overflows (dims product > 2^63)");
    if (t->ne[0] % blk)
        return fail_at(c, at, ARB_E_FORMAT, "row length %llu is not a multiple of the %s block size %llu",
                       (unsigned long long)t->ne[0], arb_type_name(t->type), (unsigned long long)blk);
    rows = t->ne[0] ? nel / t->ne[0] : 0;
    if (__builtin_mul_overflow(t->ne[0] / blk, (uint64_t)arb_type_block_bytes(t->type), &t->n_bytes) ||
        __builtin_mul_overflow(t->n_bytes, rows, &t->n_bytes))
        return fail_at(c, at, ARB_E_FORMAT, "byte size overflows");
    return ARB_OK;
}

static int parse_tensor_infos(arb_gguf *g, cur *c)
{
    int rc;
    size_t slot;
    uint64_t found;
    if (g->n_tensors > left(c) / 32) /* name 8 + n_dims 4 + dim 8 + type 4 + offset 8 */
        return FAIL(c, "n_tensors %llu exceeds what the %zu bytes left can hold (truncated or corrupt file)",
                    (unsigned long long)g->n_tensors, left(c));
    g->tensors = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *g->tensors);
    if (!g->tensors || table_new(g->n_tensors, &g->t_hash, &g->t_cap))
        return ARB_ERR(c->err, ARB_E_NOMEM, "%s: out of memory for %llu tensors", c->name,
                       (unsigned long long)g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        arb_gguf_tensor *t = &g->tensors[i];
        char nm[80];
        snprintf(c->what, sizeof c->what, "tensor %llu", (unsigned long long)i);
        if ((rc = rd_str(c, &t->name, "name")))
            return rc;
        printable(t->name, nm, sizeof nm);
        snprintf(c->what, sizeof c->what, "tensor %llu '%s'", (unsigned long long)i, nm);
        slot = arb_gguf_int_probe(g, true, t->name.ptr, t->name.len, &found);
        if (found)
            return FAIL(c, "duplicate tensor name (first at tensor %llu)", (unsigned long long)(found - 1));
        g->t_hash[slot] = i + 1;
        if ((rc = rd_u32(c, &t->n_dims, "n_dims")))
            return rc;
        if (t->n_dims < 1 || t->n_dims > 4)
            return fail_at(c, c->off - 4, ARB_E_FORMAT, "n_dims %u is not in 1..4", t->n_dims);
        for (uint32_t d = 0; d < 4; d++)
            if (d >= t->n_dims)
                t->ne[d] = 1;
            else if ((rc = rd_u64(c, &t->ne[d], "dims")))
                return rc;
        size_t at = c->off;
        if ((rc = rd_u32(c, &t->type, "type")) || (rc = rd_u64(c, &t->offset, "offset")) ||
            (rc = tensor_size(c, t, at)))
            return rc;
        if (t->offset % g->alignment)
            return fail_at(c, at + 4, ARB_E_FORMAT, "data offset %llu is not a multiple of the alignment %llu",
                           (unsigned long long)t->offset, (unsigned long long)g->alignment);
    }
    return ARB_OK;
}

/* Extent of each tensor, once the data section start is known. */
static int check_extents(arb_gguf *g, cur *c)
{
    uint64_t room = g->size - g->data_off;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        arb_gguf_tensor *t = &g->tensors[i];
        char nm[80];
        printable(t->name, nm, sizeof nm);
        snprintf(c->what, sizeof c->what, "tensor %llu '%s'", (unsigned long long)i, nm);
        if (t->offset > room || t->n_bytes > room - t->offset)
            return fail_at(c, (size_t)(t->offset > room ? g->size : g->data_off + t->offset), ARB_E_FORMAT,
                           "data [%llu, +%llu) runs past the end of the file (data section holds %llu bytes)",
                           (unsigned long long)t->offset, (unsigned long long)t->n_bytes, (unsigned long long)room);
        t->data = g->base + g->data_off + t->offset;
    }
    return ARB_OK;
}

static int parse(arb_gguf *g, arb_err *err)
{
    cur c = {.p = g->base, .size = g->size, .name = g->name, .err = err};
    int rc;
    if ((rc = need(&c, 4, "magic")))
        return rc;
    if (memcmp(g->base, "GGUF", 4))
        return FAIL(&c, "bad magic 0x%08x (not a GGUF file)", (unsigned)le(g->base, 4));
    c.off = 4;
    if ((rc = rd_u32(&c, &g->version, "version")))
        return rc;
    if (g->version == 1)
        return fail_at(&c, 4, ARB_E_UNSUPPORTED, "GGUF version 1 is not supported (re-convert to v3)");
    if (g->version != 2 && g->version != 3)
        return fail_at(&c, 4, ARB_E_UNSUPPORTED, "GGUF version %u is not supported (2 and 3 are)%s", g->version,
                       (g->version & 0xffff) == 0 ? "; big-endian files are not supported" : "");
    if ((rc = rd_u64(&c, &g->n_tensors, "n_tensors")) || (rc = rd_u64(&c, &g->n_kv, "n_kv")))
        return rc;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    if ((rc = parse_kvs(g, &c)))
        return rc;
    if ((rc = parse_tensor_infos(g, &c)))
        return rc;
    c.what[0] = 0;
    /* The data section starts at the next multiple of the alignment; files without
       tensors (vocab-only) may end before it. */
    uint64_t pad = (g->alignment - c.off % g->alignment) % g->alignment;
    g->data_off = c.off + pad;
    if (g->n_tensors && (pad > left(&c)))
        return FAIL(&c, "data section (aligned to %llu) starts past the end of the file",
                    (unsigned long long)g->alignment);
    return check_extents(g, &c);
}

void arb_gguf_close(arb_gguf *g)
{
    if (!g)
        return;
    if (g->kv_strs)
        for (uint64_t i = 0; i < g->n_kv; i++)
            free(g->kv_strs[i]);
    free(g->kv_strs);
    free(g->kv);
    free(g->tensors);
    free(g->kv_hash);
    free(g->t_hash);
    if (g->map)
        munmap(g->map, g->size);
    free(g->name);
    free(g);
}

static int open_common(arb_gguf *g, const char *name, arb_gguf **out, arb_err *err)
{
    g->name = strdup(name ? name : "<buffer>");
    int rc = g->name ? parse(g, err) : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (rc) {
        arb_gguf_close(g);
        return rc;
    }
    *out = g;
    return ARB_OK;
}

int arb_gguf_open_buffer(const void *buf, size_t len, const char *name, arb_gguf **out, arb_err *err)
{
    *out = NULL;
    arb_gguf *g = calloc(1, sizeof *g);
    if (!g)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", name ? name : "<buffer>");
    g->base = buf ? buf : (const void *)"";
    g->size = buf ? len : 0;
    return open_common(g, name, out, err);
}

int arb_gguf_open(const char *path, arb_gguf **out, arb_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) {
        int e = errno;
        close(fd);
        return ARB_ERR(err, ARB_E_IO, "%s: %s", path,
                       !S_ISREG(st.st_mode) ? "not a regular file" : st.st_size <= 0 ? "empty file" : strerror(e));
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED)
        return ARB_ERR(err, ARB_E_IO, "%s: mmap: %s", path, strerror(e));
    arb_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        munmap(map, (size_t)st.st_size);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    g->map = map;
    g->base = map;
    g->size = (size_t)st.st_size;
    return open_common(g, path, out, err);
}

/* ---- arrays ---- */

int arb_gguf_arr_at(const arb_gguf_value *arr, uint64_t i, arb_gguf_value *out)
{
    memset(out, 0, sizeof *out);
    if (arr->type != ARB_GGUF_ARRAY)
        return ARB_E_INVAL;
    if (i >= arr->v.arr.n)
        return ARB_E_RANGE;
    uint32_t et = arr->v.arr.elem_type;
    int sz = scalar_size(et);
    if (sz > 0) {
        decode_scalar(et, arr->v.arr.data + i * (uint64_t)sz, out);
        return ARB_OK;
    }
    /* Variable-size elements: walk (validated at open, so the walk stays inside). */
    cur c = {.p = arr->v.arr.data, .size = (size_t)arr->v.arr.n_bytes, .name = ""};
    for (uint64_t j = 0;; j++) {
        int rc = parse_value(&c, et, out, 1);
        if (rc || j == i)
            return rc;
    }
}

int arb_gguf_arr_str(const arb_gguf *g, const arb_gguf_value *arr, uint64_t i, arb_gguf_str *out)
{
    if (arr->type != ARB_GGUF_ARRAY)
        return ARB_E_INVAL;
    if (arr->v.arr.elem_type != ARB_GGUF_STRING)
        return ARB_E_FORMAT;
    if (i >= arr->v.arr.n)
        return ARB_E_RANGE;
    /* A top-level kv value has an index; an element of a nested array is walked. */
    uintptr_t a = (uintptr_t)arr, lo = (uintptr_t)g->kv, hi = (uintptr_t)(g->kv + g->n_kv);
    if (g->n_kv && a >= lo && a < hi) {
        size_t k = (a - lo) / sizeof *g->kv;
        if (&g->kv[k].value == arr && g->kv_strs[k]) {
            *out = g->kv_strs[k][i];
            return ARB_OK;
        }
    }
    arb_gguf_value v;
    int rc = arb_gguf_arr_at(arr, i, &v);
    if (!rc)
        *out = v.v.str;
    return rc;
}

int arb_gguf_arr_f64(const arb_gguf_value *arr, uint64_t i, double *out)
{
    arb_gguf_value v;
    if (arr->type == ARB_GGUF_ARRAY && scalar_size(arr->v.arr.elem_type) <= 0)
        return ARB_E_FORMAT;
    int rc = arb_gguf_arr_at(arr, i, &v);
    if (rc)
        return rc;
    if (v.type == ARB_GGUF_BOOL)
        return ARB_E_FORMAT;
    *out = arb_gguf_int_signed(v.type) ? (double)v.v.i64 : arb_gguf_int_unsigned(v.type) ? (double)v.v.u64 : v.v.f64;
    return ARB_OK;
}

int arb_gguf_arr_i64(const arb_gguf_value *arr, uint64_t i, int64_t *out)
{
    arb_gguf_value v;
    arb_gguf_type et = arr->v.arr.elem_type;
    if (arr->type == ARB_GGUF_ARRAY && !arb_gguf_int_signed(et) && !arb_gguf_int_unsigned(et))
        return ARB_E_FORMAT;
    int rc = arb_gguf_arr_at(arr, i, &v);
    if (rc)
        return rc;
    if (arb_gguf_int_unsigned(v.type) && v.v.u64 > INT64_MAX)
        return ARB_E_RANGE;
    *out = arb_gguf_int_signed(v.type) ? v.v.i64 : (int64_t)v.v.u64;
    return ARB_OK;
}

/* ---- helpers ---- */

bool arb_gguf_str_eq(arb_gguf_str s, const char *c) { return str_eqn(s, c, strlen(c)); }

const char *arb_gguf_type_name(arb_gguf_type t)
{
    static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "invalid";
}
