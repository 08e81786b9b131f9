/* distill.c — the self-distillation file (layout in distill.h). */
#include "distill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "modelfetch.h"
#include "sha256.h"

static const char MAGIC[8] = {'A', 'R', 'B', 'D', 'I', 'S', 'T', 0};
#define TAG_REC 0x44434552u /* "RECD" */
#define REC_TOK_MAX (1 << 24) /* sanity bound on one record's tokens */

struct arb_distill_writer {
    FILE *f;
    char *path;
    uint32_t next_seq;
    int n_rec;
    uint64_t n_resp_tok;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Parse buf[0..n): meta into *meta (malloc'ed), records via cb; returns the byte offset just
   past the last valid record in *end. */
typedef struct scan {
    char *meta;
    size_t end;
    int n_rec;
    uint64_t n_tok, n_prompt, n_resp;
    uint32_t last_seq;
} scan;

static int scan_buf(const char *path, const uint8_t *buf, size_t n, scan *s, arb_distill_data *d, arb_err *err)
{
    memset(s, 0, sizeof *s);
    if (n < 16 || memcmp(buf, MAGIC, 8))
        return ARB_ERR(err, ARB_E_FORMAT, "%s: not an arbor distill file (bad magic)", path);
    uint32_t ver = rd32(buf + 8), n_meta = rd32(buf + 12);
    if (ver != ARB_DISTILL_VERSION)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: distill format version %u, this build reads %d", path, ver,
                       ARB_DISTILL_VERSION);
    if (n_meta > n - 16)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: meta of %u bytes past the end of the file", path, n_meta);
    if (!(s->meta = malloc((size_t)n_meta + 1)))
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    memcpy(s->meta, buf + 16, n_meta);
    s->meta[n_meta] = 0;
    size_t off = 16 + (size_t)n_meta;
    s->end = off;
    for (;;) {
        if (n - off < 16 || rd32(buf + off) != TAG_REC)
            break;
        uint32_t seq = rd32(buf + off + 4), np = rd32(buf + off + 8), nr = rd32(buf + off + 12);
        if (np > REC_TOK_MAX || nr > REC_TOK_MAX)
            break;
        size_t nt = (size_t)np + nr, len = 16 + nt * 4 + 8;
        if (n - off < len)
            break;
        uint64_t h = fnv(1469598103934665603ull, buf + off, 16 + nt * 4), want;
        memcpy(&want, buf + off + 16 + nt * 4, 8);
        if (h != want)
            break;
        if (d) {
            arb_distill_rec *r = &d->rec[s->n_rec];
            r->seq = seq;
            r->n_prompt = (int)np;
            r->n_resp = (int)nr;
            memcpy(d->tok + s->n_tok, buf + off + 16, nt * 4);
            r->tok = d->tok + s->n_tok;
        }
        s->n_rec++;
        s->n_tok += nt;
        s->n_prompt += np;
        s->n_resp += nr;
        s->last_seq = seq;
        off += len;
        s->end = off;
    }
    return ARB_OK;
}

static int read_all(const char *path, uint8_t **buf, size_t *n, arb_err *err)
{
    *buf = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, errno == ENOENT ? ARB_E_NOTFOUND : ARB_E_IO, "%s: %s", path, strerror(errno));
    int rc = ARB_OK;
    long sz = -1;
    if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot size the file", path);
    else if (!(*buf = malloc((size_t)sz + 1)))
        rc = ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory for %ld bytes", path, sz);
    else if (fread(*buf, 1, (size_t)sz, f) != (size_t)sz)
        rc = ARB_ERR(err, ARB_E_IO, "%s: short read", path);
    fclose(f);
    if (rc) {
        free(*buf);
        *buf = NULL;
    } else {
        *n = (size_t)sz;
    }
    return rc;
}

void arb_distill_free(arb_distill_data *d)
{
    if (!d)
        return;
    free(d->meta);
    free(d->rec);
    free(d->tok);
    free(d);
}

int arb_distill_load(const char *path, arb_distill_data **out, arb_err *err)
{
    *out = NULL;
    uint8_t *buf;
    size_t n;
    int rc = read_all(path, &buf, &n, err);
    if (rc)
        return rc;
    scan s;
    arb_distill_data *d = NULL;
    if ((rc = scan_buf(path, buf, n, &s, NULL, err)))
        goto done;
    free(s.meta);
    d = calloc(1, sizeof *d);
    if (!d || !(d->rec = calloc((size_t)s.n_rec + 1, sizeof *d->rec)) ||
        !(d->tok = malloc((size_t)(s.n_tok + 1) * sizeof *d->tok))) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory for %d records", path, s.n_rec);
        goto done;
    }
    if ((rc = scan_buf(path, buf, n, &s, d, err)))
        goto done;
    d->meta = s.meta;
    d->n_rec = s.n_rec;
    d->n_prompt_tok = s.n_prompt;
    d->n_resp_tok = s.n_resp;
    arb_sha256_hex(buf, s.end, d->sha256);
    *out = d;
    d = NULL;
done:
    arb_distill_free(d);
    free(buf);
    return rc;
}

uint32_t arb_distill_writer_next_seq(const arb_distill_writer *w) { return w->next_seq; }
int arb_distill_writer_n_rec(const arb_distill_writer *w) { return w->n_rec; }
uint64_t arb_distill_writer_n_resp_tok(const arb_distill_writer *w) { return w->n_resp_tok; }

void arb_distill_writer_close(arb_distill_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    free(w->path);
    free(w);
}

int arb_distill_writer_open(const char *path, const char *meta, arb_distill_writer **out, arb_err *err)
{
    *out = NULL;
    arb_distill_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", path);
    }
    uint8_t *buf = NULL;
    size_t n = 0;
    int rc = read_all(path, &buf, &n, err);
    if (rc == ARB_E_NOTFOUND) { /* a new file: write the header */
        rc = ARB_OK;
        uint32_t hdr[2] = {ARB_DISTILL_VERSION, (uint32_t)strlen(meta)};
        if (!(w->f = fopen(path, "wb")) || fwrite(MAGIC, 1, 8, w->f) != 8 || fwrite(hdr, 4, 2, w->f) != 2 ||
            fwrite(meta, 1, hdr[1], w->f) != hdr[1] || fflush(w->f))
            rc = ARB_ERR(err, ARB_E_IO, "%s: cannot write: %s", path, strerror(errno));
    } else if (!rc) {
        scan s;
        if (!(rc = scan_buf(path, buf, n, &s, NULL, err))) {
            if (strcmp(s.meta, meta))
                rc = ARB_ERR(err, ARB_E_INVAL,
                             "%s was made with other settings; delete it or pass another --out.\n  file: %s\n  now:  %s",
                             path, s.meta, meta);
            else if (truncate(path, (off_t)s.end) || !(w->f = fopen(path, "ab")))
                rc = ARB_ERR(err, ARB_E_IO, "%s: cannot reopen for appending: %s", path, strerror(errno));
            w->next_seq = s.n_rec ? s.last_seq + 1 : 0;
            w->n_rec = s.n_rec;
            w->n_resp_tok = s.n_resp;
        }
        free(s.meta);
    }
    free(buf);
    if (rc) {
        arb_distill_writer_close(w);
        return rc;
    }
    *out = w;
    return ARB_OK;
}

int arb_distill_writer_append(arb_distill_writer *w, uint32_t seq, const int32_t *prompt, int n_prompt,
                              const int32_t *resp, int n_resp, arb_err *err)
{
    if (n_prompt < 0 || n_resp < 0 || n_prompt > REC_TOK_MAX || n_resp > REC_TOK_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "%s: record of %d + %d tokens", w->path, n_prompt, n_resp);
    size_t nt = (size_t)n_prompt + (size_t)n_resp, len = 16 + nt * 4 + 8;
    uint8_t *rec = malloc(len); /* one buffer so the record goes out in one write */
    if (!rec)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory", w->path);
    uint32_t h[4] = {TAG_REC, seq, (uint32_t)n_prompt, (uint32_t)n_resp};
    memcpy(rec, h, 16);
    memcpy(rec + 16, prompt, (size_t)n_prompt * 4);
    memcpy(rec + 16 + (size_t)n_prompt * 4, resp, (size_t)n_resp * 4);
    uint64_t sum = fnv(1469598103934665603ull, rec, 16 + nt * 4);
    memcpy(rec + 16 + nt * 4, &sum, 8);
    int rc = ARB_OK;
    if (fwrite(rec, 1, len, w->f) != len || fflush(w->f))
        rc = ARB_ERR(err, ARB_E_IO, "%s: cannot append a record: %s", w->path, strerror(errno));
    free(rec);
    if (!rc) {
        w->next_seq = seq + 1;
        w->n_rec++;
        w->n_resp_tok += (uint64_t)n_resp;
    }
    return rc;
}

int arb_distill_default_path(const char *model_path, const char *sha256, int max_new, char *buf, size_t cap, arb_err *err)
{
    char dir[4096];
    int rc = arb_cache_dir(dir, sizeof dir, err);
    if (rc)
        return rc;
    size_t n = strlen(dir);
    if (n + 10 >= sizeof dir)
        return ARB_ERR(err, ARB_E_RANGE, "distill: cache path too long");
    mkdir(dir, 0755);
    strcat(dir, "/distill");
    mkdir(dir, 0755);
    const char *base = strrchr(model_path, '/');
    base = base ? base + 1 : model_path;
    if ((size_t)snprintf(buf, cap, "%s/%s.%.12s.n%d.dst", dir, base, sha256, max_new) >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "distill: output path too long");
    return ARB_OK;
}

