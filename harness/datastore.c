/* datastore.c — REST datastore: build (libdivsufsort), save, mmap-load, suffix-array search
 * (see datastore.h for the byte layout). */
#include "datastore.h"

#include <divsufsort.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "modelfetch.h"
#include "sha256.h"

#define HEADER_BYTES 512
static const char MAGIC[8] = {'A', 'R', 'B', 'O', 'R', 'D', 'S', '\n'};

struct arb_datastore {
    arb_datastore_meta meta;
    const uint8_t *tok;   /* [n_tokens * token_width] big-endian tokens */
    const int32_t *sa;    /* [n_tokens] suffix starts, token order */
    uint32_t sep;         /* separator value: all token_width bytes 0xFF */
    /* ownership: either one mapping of the whole file or two heap buffers */
    void *map;
    size_t map_bytes;
    uint8_t *tok_heap;
    int32_t *sa_heap;
};

struct arb_datastore_builder {
    int n_vocab;
    int width;            /* bytes per token */
    uint8_t *tok;         /* packed big-endian tokens, cap bytes */
    size_t len, cap;      /* bytes */
    uint64_t n_docs;
};

static inline uint32_t load_be(const uint8_t *p, int w)
{
    return w == 2 ? (uint32_t)p[0] << 8 | p[1]
                  : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void store_be(uint8_t *p, int w, uint32_t v)
{
    for (int i = w - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

int arb_datastore_tokenizer_sha256(const arb_model *m, char hex[65], arb_err *err)
{
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    arb_sha256 h;
    arb_sha256_init(&h);
    arb_sha256_update(&h, "arbor-tokenizer-v1", 18);
    uint32_t v = (uint32_t)mi.n_vocab;
    arb_sha256_update(&h, &v, sizeof v);
    char piece[1024];
    for (int32_t t = 0; t < mi.n_vocab; t++) {
        int n = arb_token_piece(m, t, piece, (int)sizeof piece);
        if (n < 0)
            return ARB_ERR(err, ARB_E_FORMAT, "tokenizer fingerprint: token %d has no piece", t);
        uint32_t len = (uint32_t)n; /* a longer piece hashes its length and first 1024 bytes */
        arb_sha256_update(&h, &len, sizeof len);
        arb_sha256_update(&h, piece, n < (int)sizeof piece ? (size_t)n : sizeof piece);
    }
    uint8_t d[32];
    arb_sha256_final(&h, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return ARB_OK;
}

/* ---- building ---- */
int arb_datastore_builder_new(int n_vocab, arb_datastore_builder **out, arb_err *err)
{
    *out = NULL;
    if (n_vocab < 1 || n_vocab >= INT32_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "datastore: n_vocab %d out of range", n_vocab);
    arb_datastore_builder *b = calloc(1, sizeof *b);
    if (!b)
        return ARB_ERR(err, ARB_E_NOMEM, "datastore: out of memory");
    b->n_vocab = n_vocab;
    b->width = n_vocab < 0xFFFF ? 2 : 4; /* 0xFFFF / 0xFFFFFFFF stay free for the separator */
    *out = b;
    return ARB_OK;
}

void arb_datastore_builder_free(arb_datastore_builder *b)
{
    if (!b)
        return;
    free(b->tok);
    free(b);
}

uint64_t arb_datastore_builder_n_tokens(const arb_datastore_builder *b) { return b->len / (size_t)b->width; }

int arb_datastore_builder_add(arb_datastore_builder *b, const int32_t *tok, size_t n, arb_err *err)
{
    if (n == 0)
        return ARB_OK;
    size_t w = (size_t)b->width;
    if (n > (size_t)INT32_MAX / w || b->len + (n + 1) * w > (size_t)INT32_MAX)
        return ARB_ERR(err, ARB_E_RANGE, "datastore: more than %zu tokens (libdivsufsort's 32-bit index)",
                       (size_t)INT32_MAX / w);
    size_t need = b->len + (n + 1) * w;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < need)
            cap = cap > (size_t)INT32_MAX / 2 ? (size_t)INT32_MAX : 2 * cap;
        uint8_t *t = realloc(b->tok, cap);
        if (!t)
            return ARB_ERR(err, ARB_E_NOMEM, "datastore: cannot grow to %zu bytes", cap);
        b->tok = t, b->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        if (tok[i] < 0 || tok[i] >= b->n_vocab)
            return ARB_ERR(err, ARB_E_RANGE, "datastore: token %d at %zu outside the vocabulary (%d)", tok[i], i,
                           b->n_vocab);
        store_be(b->tok + b->len + i * w, b->width, (uint32_t)tok[i]);
    }
    memset(b->tok + b->len + n * w, 0xFF, w); /* the document separator */
    b->len += (n + 1) * w;
    b->n_docs++;
    return ARB_OK;
}

int arb_datastore_builder_finish(arb_datastore_builder *b, const arb_datastore_meta *m, arb_datastore **out,
                                 arb_err *err)
{
    *out = NULL;
    int rc = ARB_OK;
    arb_datastore *ds = calloc(1, sizeof *ds);
    size_t n = b->len / (size_t)b->width;
    /* The byte-level suffix array has width x n entries; only token-aligned ones are kept. */
    saidx_t *bsa = b->len ? malloc(b->len * sizeof *bsa) : NULL;
    if (!ds || (b->len && !bsa)) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "datastore: cannot allocate the suffix array (%zu bytes)",
                     b->len * sizeof *bsa);
        goto done;
    }
    if (b->len && divsufsort(b->tok, bsa, (saidx_t)b->len) != 0) {
        rc = ARB_ERR(err, ARB_E_EXTERNAL, "datastore: divsufsort failed on %zu bytes", b->len);
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < b->len; i++)
        if (bsa[i] % b->width == 0)
            bsa[k++] = bsa[i] / b->width;
    ARB_ASSERT(k == n);
    ds->meta = *m;
    ds->meta.n_vocab = b->n_vocab;
    ds->meta.token_width = b->width;
    ds->meta.n_tokens = n;
    ds->meta.n_docs = b->n_docs;
    ds->sep = b->width == 2 ? 0xFFFFu : 0xFFFFFFFFu;
    ds->tok_heap = b->tok, b->tok = NULL;
    ds->sa_heap = n ? realloc(bsa, n * sizeof *bsa) : bsa; /* shrink; the old block stays valid on failure */
    if (!ds->sa_heap)
        ds->sa_heap = bsa;
    bsa = NULL;
    ds->tok = ds->tok_heap;
    ds->sa = ds->sa_heap;
    *out = ds;
    ds = NULL;
done:
    free(bsa);
    arb_datastore_free(ds);
    arb_datastore_builder_free(b);
    return rc;
}

/* ---- file ---- */
static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

static uint64_t sa_offset(uint64_t n, int w) { return (HEADER_BYTES + n * (uint64_t)w + 7) & ~(uint64_t)7; }

int arb_datastore_save(const arb_datastore *ds, const char *path, arb_err *err)
{
    const arb_datastore_meta *m = &ds->meta;
    uint8_t h[HEADER_BYTES] = {0};
    uint64_t off_sa = sa_offset(m->n_tokens, m->token_width);
    uint64_t total = off_sa + m->n_tokens * sizeof(int32_t);
    memcpy(h, MAGIC, 8);
    put_u32(h + 8, ARB_DATASTORE_VERSION);
    put_u32(h + 12, (uint32_t)m->token_width);
    put_u64(h + 16, m->n_tokens);
    put_u64(h + 24, m->n_docs);
    put_u32(h + 32, (uint32_t)m->n_vocab);
    put_u32(h + 36, HEADER_BYTES);
    memcpy(h + 40, m->tokenizer_sha256, strnlen(m->tokenizer_sha256, 64));
    memcpy(h + 104, m->model, strnlen(m->model, 127));
    memcpy(h + 232, m->corpus, strnlen(m->corpus, 255));
    put_u64(h + 488, HEADER_BYTES);
    put_u64(h + 496, off_sa);
    put_u64(h + 504, total);
    /* Write beside the target and rename, so a reader never maps a half-written file. */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return ARB_ERR(err, ARB_E_INVAL, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
    size_t tb = (size_t)m->n_tokens * (size_t)m->token_width;
    static const uint8_t pad[8] = {0};
    bool ok = fwrite(h, 1, sizeof h, f) == sizeof h && fwrite(ds->tok, 1, tb, f) == tb &&
              fwrite(pad, 1, off_sa - HEADER_BYTES - tb, f) == off_sa - HEADER_BYTES - tb &&
              fwrite(ds->sa, sizeof *ds->sa, m->n_tokens, f) == m->n_tokens;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ARB_ERR(err, ARB_E_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return ARB_OK;
}

static int validate_payload(arb_datastore *ds, const char *path, arb_err *err)
{
    const arb_datastore_meta *m = &ds->meta;
    for (uint64_t i = 0; i < m->n_tokens; i++) {
        uint32_t t = load_be(ds->tok + i * (uint64_t)m->token_width, m->token_width);
        if (t != ds->sep && t >= (uint32_t)m->n_vocab)
            return ARB_ERR(err, ARB_E_FORMAT, "%s: tokens[%llu] = %u outside the vocabulary (%d): corrupt file",
                           path, (unsigned long long)i, t, m->n_vocab);
        if (ds->sa[i] < 0 || (uint64_t)ds->sa[i] >= m->n_tokens)
            return ARB_ERR(err, ARB_E_FORMAT, "%s: suffix_array[%llu] = %d outside [0, %llu): corrupt file", path,
                           (unsigned long long)i, ds->sa[i], (unsigned long long)m->n_tokens);
    }
    return ARB_OK;
}

int arb_datastore_load(const char *path, const char *tokenizer_sha256, arb_datastore **out, arb_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return ARB_ERR(err, errno == ENOENT ? ARB_E_NOTFOUND : ARB_E_IO,
                       "%s: cannot open datastore: %s (build one with `arbor datastore build`)", path, strerror(errno));
    struct stat sb;
    uint8_t h[HEADER_BYTES];
    if (fstat(fd, &sb) != 0 || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        close(fd);
        return ARB_ERR(err, ARB_E_FORMAT, "%s: shorter than the %d-byte datastore header", path, HEADER_BYTES);
    }
    int rc = ARB_OK;
    arb_datastore *ds = calloc(1, sizeof *ds);
    arb_datastore_meta *m = ds ? &ds->meta : NULL;
    if (!ds) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "datastore: out of memory");
        goto fail;
    }
    if (memcmp(h, MAGIC, 8)) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: magic: not an arbor datastore", path);
        goto fail;
    }
    uint32_t ver = get_u32(h + 8);
    if (ver != ARB_DATASTORE_VERSION) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: version: %u, this build reads %d (rebuild it)", path, ver,
                     ARB_DATASTORE_VERSION);
        goto fail;
    }
    m->token_width = (int)get_u32(h + 12);
    m->n_tokens = get_u64(h + 16);
    m->n_docs = get_u64(h + 24);
    m->n_vocab = (int)get_u32(h + 32);
    memcpy(m->tokenizer_sha256, h + 40, 64);
    memcpy(m->model, h + 104, 127);
    memcpy(m->corpus, h + 232, 255);
    uint64_t off_tok = get_u64(h + 488), off_sa = get_u64(h + 496), total = get_u64(h + 504);
    if (m->token_width != 2 && m->token_width != 4) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: token_width: %d, expected 2 or 4", path, m->token_width);
        goto fail;
    }
    if (m->n_vocab < 1 || (m->token_width == 2 && m->n_vocab >= 0xFFFF)) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: n_vocab: %d does not fit token_width %d", path, m->n_vocab,
                     m->token_width);
        goto fail;
    }
    if (get_u32(h + 36) != HEADER_BYTES || off_tok != HEADER_BYTES || m->n_tokens > (uint64_t)INT32_MAX ||
        off_sa != sa_offset(m->n_tokens, m->token_width) || total != off_sa + 4 * m->n_tokens ||
        total != (uint64_t)sb.st_size) {
        rc = ARB_ERR(err, ARB_E_FORMAT,
                     "%s: n_tokens: %llu tokens need %llu bytes, the file has %lld (truncated or corrupt)", path,
                     (unsigned long long)m->n_tokens, (unsigned long long)(sa_offset(m->n_tokens, m->token_width) +
                                                                           4 * m->n_tokens),
                     (long long)sb.st_size);
        goto fail;
    }
    if (tokenizer_sha256 && strcmp(tokenizer_sha256, m->tokenizer_sha256)) {
        rc = ARB_ERR(err, ARB_E_INVAL,
                     "%s: built for another tokenizer (model '%s', tokenizer sha256 %.12s...; this model's is "
                     "%.12s...): rebuild it with this model's --model",
                     path, m->model, m->tokenizer_sha256, tokenizer_sha256);
        goto fail;
    }
    ds->map_bytes = (size_t)total;
    ds->map = mmap(NULL, ds->map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (ds->map == MAP_FAILED) {
        ds->map = NULL;
        rc = ARB_ERR(err, ARB_E_IO, "%s: mmap: %s", path, strerror(errno));
        goto fail;
    }
    ds->tok = (const uint8_t *)ds->map + off_tok;
    ds->sa = (const int32_t *)((const uint8_t *)ds->map + off_sa);
    ds->sep = m->token_width == 2 ? 0xFFFFu : 0xFFFFFFFFu;
    if ((rc = validate_payload(ds, path, err)))
        goto fail;
    close(fd);
    *out = ds;
    return ARB_OK;
fail:
    close(fd);
    arb_datastore_free(ds);
    return rc;
}

void arb_datastore_free(arb_datastore *ds)
{
    if (!ds)
        return;
    if (ds->map)
        munmap(ds->map, ds->map_bytes);
    free(ds->tok_heap);
    free(ds->sa_heap);
    free(ds);
}

/* ---- queries ---- */
const arb_datastore_meta *arb_datastore_get_meta(const arb_datastore *ds) { return &ds->meta; }

size_t arb_datastore_bytes(const arb_datastore *ds)
{
    return (size_t)ds->meta.n_tokens * ((size_t)ds->meta.token_width + sizeof(int32_t));
}

int32_t arb_datastore_token(const arb_datastore *ds, uint64_t pos)
{
    uint32_t t = load_be(ds->tok + pos * (uint64_t)ds->meta.token_width, ds->meta.token_width);
    return t == ds->sep ? -1 : (int32_t)t;
}

uint64_t arb_datastore_sa(const arb_datastore *ds, uint64_t i) { return (uint64_t)ds->sa[i]; }

void arb_datastore_prefetch(const arb_datastore *ds, uint64_t pos)
{
    if (pos < ds->meta.n_tokens)
        __builtin_prefetch(ds->tok + pos * (uint64_t)ds->meta.token_width);
}

/* Compare the suffix at pos with q[0..m): <0, 0 (q is its prefix), >0. The separator is the
   largest value and the text's end the smallest, as in the byte order divsufsort used. */
static int cmp_suffix(const arb_datastore *ds, uint64_t pos, const int32_t *q, int m)
{
    int w = ds->meta.token_width;
    uint64_t n = ds->meta.n_tokens;
    for (int j = 0; j < m; j++) {
        if (pos + (uint64_t)j >= n)
            return -1;
        uint32_t t = load_be(ds->tok + (pos + (uint64_t)j) * (uint64_t)w, w);
        uint32_t v = (uint32_t)q[j];
        if (t != v)
            return t < v ? -1 : 1;
    }
    return 0;
}

void arb_datastore_find(const arb_datastore *ds, const int32_t *q, int m, uint64_t *lo, uint64_t *hi)
{
    uint64_t n = ds->meta.n_tokens;
    *lo = *hi = 0;
    for (int j = 0; j < m; j++)
        if (q[j] < 0 || q[j] >= ds->meta.n_vocab)
            return; /* never stored: no match (and never the separator) */
    uint64_t a = 0, b = n; /* first row whose suffix is >= q */
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        if (cmp_suffix(ds, (uint64_t)ds->sa[mid], q, m) < 0)
            a = mid + 1;
        else
            b = mid;
    }
    uint64_t first = a;
    b = n; /* first row whose suffix does not start with q */
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        if (cmp_suffix(ds, (uint64_t)ds->sa[mid], q, m) <= 0)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = first;
    *hi = a;
}

int arb_datastore_resolve(const char *name, char *buf, size_t cap, arb_err *err)
{
    if (!name || !*name)
        return ARB_ERR(err, ARB_E_INVAL, "datastore: empty name");
    size_t ln = strlen(name), le = strlen(ARB_DATASTORE_EXT);
    if (strchr(name, '/') || (ln > le && !strcmp(name + ln - le, ARB_DATASTORE_EXT))) {
        if (snprintf(buf, cap, "%s", name) >= (int)cap)
            return ARB_ERR(err, ARB_E_INVAL, "datastore: path too long: %s", name);
        return ARB_OK;
    }
    char dir[4000];
    int rc = arb_cache_dir(dir, sizeof dir, err);
    if (rc)
        return rc;
    if (snprintf(buf, cap, "%s/datastores/%s%s", dir, name, ARB_DATASTORE_EXT) >= (int)cap)
        return ARB_ERR(err, ARB_E_INVAL, "datastore: path too long for %s", name);
    return ARB_OK;
}
