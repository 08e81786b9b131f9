/* dataset.c — see dataset.h. What differs between benchmarks (files, manifest facts, fields,
 * prompt templates) is data, in catalog.c; this file reads files, renders templates and splits.
 *
 * Turn templates: "{field}" inserts a string field; "{field:lines}" an array of strings joined
 * with "\n"; "{field:abc}" an array of strings as lettered lines "A. first\nB. second..." (the
 * multiple-choice options of ARC); a field may be a path such as "conversations[0].value";
 * "[[...]]" is an optional section, dropped when a field inside it is absent or null; "{{" and
 * "}}" are literal braces.
 *
 * File formats, by the file name: JSON Lines (.jsonl, .jsonl.gz), a JSON array of records
 * (.json), and any other name plain text with one record per line (the Tatoeba sentence files
 * .eng, .deu, ...): each line becomes the record {"text": LINE}, so the same templates apply.
 */
#include "dataset.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "alloc.h"
#include "dataset_int.h"
#include "modelfetch.h" /* arb_cache_dir */

struct arb_dataset {
    const arb_dataset_info *info;
    arb_record *recs;   /* [n] kept records; strings owned */
    size_t n, cap;
    size_t n_read;      /* records parsed from the file */
};

const arb_dataset_info *arb_dataset_list(size_t *n)
{
    *n = arb_dataset_catalog_n;
    return arb_dataset_catalog;
}

const arb_dataset_info *arb_dataset_find(const char *name)
{
    for (size_t i = 0; name && i < arb_dataset_catalog_n; i++)
        if (!strcmp(arb_dataset_catalog[i].name, name))
            return &arb_dataset_catalog[i];
    return NULL;
}

int arb_dataset_dir(const char *flag, char *buf, size_t cap, arb_err *err)
{
    const char *env = getenv("ARBOR_DATA");
    int n;
    if (flag && *flag) {
        n = snprintf(buf, cap, "%s", flag);
    } else if (env && *env) {
        n = snprintf(buf, cap, "%s", env);
    } else {
        char cache[4096];
        int rc = arb_cache_dir(cache, sizeof cache, err);
        if (rc)
            return rc;
        n = snprintf(buf, cap, "%s/data", cache);
    }
    if (n < 0 || (size_t)n >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "data directory path too long");
    return ARB_OK;
}

/* ---- growable byte buffer ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static int sbuf_add(sbuf *b, const char *s, size_t n, arb_err *err)
{
    if (n > SIZE_MAX - b->n - 1)
        return ARB_ERR(err, ARB_E_NOMEM, "string too long");
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap = cap > SIZE_MAX / 2 ? b->n + n + 1 : cap * 2;
        char *p = arb_realloc(b->p, cap);
        if (!p)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory (%zu bytes)", cap);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return ARB_OK;
}

/* ---- reading a whole file, gunzipping *.gz ---- */

#define MAX_FILE_BYTES ((size_t)1 << 30) /* no benchmark is near this; guards gzip bombs */

static int read_file(const char *path, sbuf *out, arb_err *err)
{
    size_t len = strlen(path);
    bool gz = len > 3 && !strcmp(path + len - 3, ".gz");
    gzFile f = gzopen(path, "rb"); /* reads plain files transparently too */
    if (!f)
        return ARB_ERR(err, errno == ENOENT ? ARB_E_NOTFOUND : ARB_E_IO, "%s: %s", path,
                       errno ? strerror(errno) : "cannot open");
    char chunk[65536];
    int rc = ARB_OK, got;
    while ((got = gzread(f, chunk, sizeof chunk)) > 0) {
        if (out->n + (size_t)got > MAX_FILE_BYTES) {
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s: larger than %zu bytes", path, MAX_FILE_BYTES);
            break;
        }
        if ((rc = sbuf_add(out, chunk, (size_t)got, err)))
            break;
    }
    int zerr = Z_OK;
    const char *zmsg = gzerror(f, &zerr);
    size_t np = strlen(path); /* zlib prefixes the message with the path: drop it */
    if (!strncmp(zmsg, path, np) && !strncmp(zmsg + np, ": ", 2))
        zmsg += np + 2;
    if (!rc && (got < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)))
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: %s: %s", path, gz ? "gzip" : "read",
                     zerr == Z_ERRNO ? strerror(errno) : zmsg);
    gzclose(f);
    if (!rc && !out->p)
        rc = sbuf_add(out, "", 0, err); /* empty file: still a valid NUL-terminated buffer */
    return rc;
}

/* ---- field access: "name", "a.b", "conversations[0].value" ---- */

static const cJSON *json_at(const cJSON *v, const char *path)
{
    char key[128];
    const char *p = path;
    while (v && *p) {
        if (*p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);
            ARB_ASSERT(*end == ']');
            v = cJSON_IsArray(v) && idx >= 0 && idx <= INT_MAX ? cJSON_GetArrayItem(v, (int)idx) : NULL;
            p = end + 1;
        } else {
            size_t k = strcspn(p, ".[");
            ARB_ASSERT(k > 0 && k < sizeof key);
            memcpy(key, p, k);
            key[k] = 0;
            v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
            p += k;
        }
        if (*p == '.')
            p++;
    }
    return v;
}

static const char *type_name(const cJSON *v)
{
    if (!v)
        return "nothing";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsArray(v))
        return "an array";
    return "an object";
}

/* Where a record sits, for messages: "path:LINE" (JSON Lines) or "path: [INDEX]" (array). */
typedef struct loc {
    const char *path;
    bool lines;
    size_t at;
} loc;

#define LOC_FMT "%s%s%zu%s"
#define LOC_ARGS(l) (l)->path, (l)->lines ? ":" : ": [", (l)->at, (l)->lines ? "" : "]"

static int bad_field(const loc *l, const char *what, const char *field, const cJSON *v, arb_err *err)
{
    if (!v)
        return ARB_ERR(err, ARB_E_FORMAT, LOC_FMT ": expected %s field \"%s\" (missing)",
                       LOC_ARGS(l), what, field);
    return ARB_ERR(err, ARB_E_FORMAT, LOC_FMT ": expected %s field \"%s\", got %s", LOC_ARGS(l),
                   what, field, type_name(v));
}

/* ---- turn templates ---- */

enum { SECTION_ABSENT = 1 }; /* render(): an optional section lost a field */

static int render(const char *s, const char *e, const cJSON *obj, bool optional, const loc *l,
                  sbuf *out, arb_err *err)
{
    int rc = ARB_OK;
    while (!rc && s < e) {
        if (s[0] == '[' && s + 1 < e && s[1] == '[') {
            const char *end = strstr(s + 2, "]]");
            ARB_ASSERT(end && end < e);
            size_t mark = out->n;
            rc = render(s + 2, end, obj, true, l, out, err);
            if (rc == SECTION_ABSENT) {
                out->n = mark;
                if (out->p)
                    out->p[mark] = 0;
                rc = ARB_OK;
            }
            s = end + 2;
        } else if ((s[0] == '{' || s[0] == '}') && s + 1 < e && s[1] == s[0]) {
            rc = sbuf_add(out, s, 1, err);
            s += 2;
        } else if (s[0] == '{') {
            const char *end = memchr(s, '}', (size_t)(e - s));
            ARB_ASSERT(end);
            char field[128];
            size_t k = (size_t)(end - s - 1);
            ARB_ASSERT(k > 0 && k < sizeof field);
            memcpy(field, s + 1, k);
            field[k] = 0;
            char *mod = strchr(field, ':');
            if (mod)
                *mod++ = 0;
            const cJSON *v = json_at(obj, field);
            if (optional && (!v || cJSON_IsNull(v)))
                return SECTION_ABSENT;
            if (mod) {
                bool abc = !strcmp(mod, "abc"); /* lettered options, else "lines" */
                ARB_ASSERT(abc || !strcmp(mod, "lines"));
                if (!cJSON_IsArray(v) || (abc && cJSON_GetArraySize(v) < 1))
                    return bad_field(l, abc ? "non-empty array-of-strings" : "array-of-strings", field, v, err);
                if (abc && cJSON_GetArraySize(v) > 26)
                    return ARB_ERR(err, ARB_E_FORMAT, LOC_FMT ": field \"%s\" has %d options, more "
                                   "than the 26 letters A-Z", LOC_ARGS(l), field, cJSON_GetArraySize(v));
                const cJSON *it;
                int i = 0;
                cJSON_ArrayForEach(it, v) {
                    if (!cJSON_IsString(it)) {
                        char at[160];
                        snprintf(at, sizeof at, "%s[%d]", field, i);
                        return bad_field(l, "string", at, it, err);
                    }
                    char letter[4] = {(char)('A' + i), '.', ' ', 0};
                    if ((i && (rc = sbuf_add(out, "\n", 1, err))) ||
                        (abc && (rc = sbuf_add(out, letter, 3, err))) ||
                        (rc = sbuf_add(out, it->valuestring, strlen(it->valuestring), err)))
                        return rc;
                    i++;
                }
            } else {
                if (!cJSON_IsString(v))
                    return bad_field(l, "string", field, v, err);
                rc = sbuf_add(out, v->valuestring, strlen(v->valuestring), err);
            }
            s = end + 1;
        } else {
            size_t k = strcspn(s, "[{}");
            if (k == 0)
                k = 1; /* a lone '[' or '}' is literal */
            if (k > (size_t)(e - s))
                k = (size_t)(e - s);
            rc = sbuf_add(out, s, k, err);
            s += k;
        }
    }
    return rc;
}

/* ---- records ---- */

static void record_release(arb_record *r)
{
    free((void *)r->id);
    free((void *)r->category);
    for (int t = 0; r->turns && t < r->n_turns; t++)
        free((void *)r->turns[t]);
    free((void *)r->turns);
    memset(r, 0, sizeof *r);
}

static int dup_str(const char *s, const char **out, arb_err *err)
{
    char *p = arb_strdup(s);
    if (!p)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    *out = p;
    return ARB_OK;
}

/* Build r from one JSON object. *keep = false when the keep filter rejects it. */
static int record_build(const arb_dataset_info *in, const cJSON *obj, size_t index, const loc *l,
                        arb_record *r, bool *keep, arb_err *err)
{
    int rc;
    memset(r, 0, sizeof *r);
    if (!cJSON_IsObject(obj))
        return ARB_ERR(err, ARB_E_FORMAT, LOC_FMT ": expected a JSON object, got %s", LOC_ARGS(l),
                       type_name(obj));
    char num[32];
    if (!in->id_field) {
        snprintf(num, sizeof num, "%zu", index);
        if ((rc = dup_str(num, &r->id, err)))
            return rc;
    } else {
        const cJSON *v = json_at(obj, in->id_field);
        if (cJSON_IsString(v) && v->valuestring[0]) {
            rc = dup_str(v->valuestring, &r->id, err);
        } else if (cJSON_IsNumber(v) && v->valuedouble > -9e15 && v->valuedouble < 9e15 &&
                   v->valuedouble == (double)(long long)v->valuedouble) { /* range: exact, no UB */
            snprintf(num, sizeof num, "%lld", (long long)v->valuedouble);
            rc = dup_str(num, &r->id, err);
        } else {
            rc = bad_field(l, "non-empty string or integer", in->id_field, v, err);
        }
        if (rc)
            return rc;
    }
    if (in->category_field) {
        const cJSON *v = json_at(obj, in->category_field);
        if (v && !cJSON_IsNull(v)) {
            if (!cJSON_IsString(v))
                return bad_field(l, "string", in->category_field, v, err);
            if ((rc = dup_str(v->valuestring, &r->category, err)))
                return rc;
        }
    }
    if (in->keep_field) {
        const cJSON *v = json_at(obj, in->keep_field);
        if (!v) { /* absent (sharegpt-multiturn: an empty conversation list): no prompt */
            *keep = false;
            return ARB_OK;
        }
        if (!cJSON_IsString(v))
            return bad_field(l, "string", in->keep_field, v, err);
        *keep = !strcmp(v->valuestring, in->keep_value);
        if (!*keep)
            return ARB_OK;
    }
    *keep = true;
    if (in->turns_field) {
        const cJSON *v = json_at(obj, in->turns_field);
        int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
        if (n < 1 && cJSON_IsArray(v))
            return ARB_ERR(err, ARB_E_FORMAT, LOC_FMT ": expected non-empty array-of-strings field "
                           "\"%s\", got an empty array", LOC_ARGS(l), in->turns_field);
        if (n < 1)
            return bad_field(l, "non-empty array-of-strings", in->turns_field, v, err);
        if (!(r->turns = arb_calloc((size_t)n, sizeof *r->turns)))
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        const cJSON *it;
        cJSON_ArrayForEach(it, v) {
            if (!cJSON_IsString(it)) {
                char at[160];
                snprintf(at, sizeof at, "%s[%d]", in->turns_field, r->n_turns);
                return bad_field(l, "string", at, it, err);
            }
            if ((rc = dup_str(it->valuestring, (const char **)&r->turns[r->n_turns], err)))
                return rc;
            r->n_turns++;
        }
        return ARB_OK;
    }
    sbuf b = {0};
    rc = render(in->prompt, in->prompt + strlen(in->prompt), obj, false, l, &b, err);
    if (!rc && !b.p)
        rc = sbuf_add(&b, "", 0, err);
    if (!rc && !(r->turns = arb_calloc(1, sizeof *r->turns)))
        rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (rc) {
        free(b.p);
        return rc;
    }
    ((const char **)r->turns)[0] = b.p;
    r->n_turns = 1;
    return ARB_OK;
}

static int dataset_add(arb_dataset *d, const cJSON *obj, const loc *l, arb_err *err)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        arb_record *p = arb_realloc(d->recs, cap * sizeof *p);
        if (!p)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory (%zu records)", cap);
        d->recs = p;
        d->cap = cap;
    }
    bool keep = false;
    int rc = record_build(d->info, obj, d->n_read, l, &d->recs[d->n], &keep, err);
    d->n_read++;
    /* An empty first user message is no benchmark prompt (sg_90k has one: id IXmHCvM). */
    if (!rc && keep && !d->recs[d->n].turns[0][0])
        keep = false;
    if (rc || !keep)
        record_release(&d->recs[d->n]);
    else
        d->n++;
    return rc;
}

static size_t line_of(const char *start, const char *pos)
{
    size_t line = 1;
    for (const char *p = start; p < pos; p++)
        line += *p == '\n';
    return line;
}

static int parse_jsonl(arb_dataset *d, const char *path, const sbuf *buf, arb_err *err)
{
    const char *p = buf->p, *end = buf->p + buf->n;
    size_t line = 0;
    int rc = ARB_OK;
    while (!rc && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < le) { /* blank lines (a trailing newline) carry no record */
            loc l = {path, true, line};
            const char *stop = NULL;
            errno = 0;
            cJSON *obj = cJSON_ParseWithLengthOpts(q, (size_t)(le - q), &stop, false);
            if (!obj && errno == ENOMEM) /* cJSON's NULL also means a failed allocation */
                return ARB_ERR(err, ARB_E_NOMEM, "%s:%zu: out of memory parsing JSON", path, line);
            if (!obj) {
                size_t col = stop && stop >= p && stop <= le ? (size_t)(stop - p) + 1 : 0;
                return ARB_ERR(err, ARB_E_FORMAT, "%s:%zu: invalid JSON (column %zu)", path, line, col);
            }
            while (stop && stop < le && (*stop == ' ' || *stop == '\t' || *stop == '\r'))
                stop++;
            if (stop && stop < le)
                rc = ARB_ERR(err, ARB_E_FORMAT, "%s:%zu: text after the JSON value (column %zu)",
                             path, line, (size_t)(stop - p) + 1);
            else
                rc = dataset_add(d, obj, &l, err);
            cJSON_Delete(obj);
        }
        p = le + 1;
    }
    return rc;
}

static int parse_array(arb_dataset *d, const char *path, const sbuf *buf, arb_err *err)
{
    const char *stop = NULL;
    errno = 0;
    cJSON *root = cJSON_ParseWithLengthOpts(buf->p, buf->n, &stop, false);
    if (!root && errno == ENOMEM) /* cJSON's NULL also means a failed allocation */
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory parsing JSON", path);
    if (!root) {
        if (buf->n == 0)
            return ARB_OK; /* reported as "no records" by the caller */
        const char *at = stop && stop >= buf->p && stop <= buf->p + buf->n ? stop : buf->p;
        return ARB_ERR(err, ARB_E_FORMAT, "%s:%zu: invalid JSON", path, line_of(buf->p, at));
    }
    int rc = ARB_OK;
    if (!cJSON_IsArray(root)) {
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: expected a JSON array of records, got %s", path,
                     type_name(root));
    } else {
        const cJSON *it;
        size_t i = 0;
        cJSON_ArrayForEach(it, root) {
            loc l = {path, false, i++};
            if ((rc = dataset_add(d, it, &l, err)))
                break;
        }
    }
    cJSON_Delete(root);
    return rc;
}

/* Length of the valid UTF-8 prefix of s[0..n) (n when all of it is valid): no overlong forms,
   no surrogates, nothing above U+10FFFF. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0 || i + k > n || (k == 2 && c < 0xC2) || (k == 4 && c > 0xF4))
            return i;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return i;
        if ((k == 3 && c == 0xE0 && s[i + 1] < 0xA0) || (k == 3 && c == 0xED && s[i + 1] >= 0xA0) ||
            (k == 4 && c == 0xF0 && s[i + 1] < 0x90) || (k == 4 && c == 0xF4 && s[i + 1] >= 0x90))
            return i;
        i += k;
    }
    return n;
}

/* Plain text: one record {"text": LINE} per line. A final newline ends the last line (it
   starts no record); a CR before a newline is dropped. An empty line, a NUL byte or invalid
   UTF-8 is an error naming the line: in a line-aligned translation file a missing sentence
   would silently shift every later pairing. */
static int parse_lines(arb_dataset *d, const char *path, const sbuf *buf, arb_err *err)
{
    const char *p = buf->p, *end = buf->p + buf->n;
    size_t line = 0;
    int rc = ARB_OK;
    while (!rc && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        if (le > p && le[-1] == '\r')
            le--;
        size_t n = (size_t)(le - p), ok = utf8_valid_prefix((const unsigned char *)p, n);
        const char *nul = memchr(p, 0, n);
        if (n == 0)
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%zu: empty line (a lines file holds one text per "
                           "line)", path, line);
        if (nul)
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%zu: NUL byte (column %zu)", path, line,
                           (size_t)(nul - p) + 1);
        if (ok < n)
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%zu: invalid UTF-8 (byte column %zu)", path, line,
                           ok + 1);
        char *text = arb_malloc(n + 1);
        if (!text)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        memcpy(text, p, n);
        text[n] = 0;
        cJSON *obj = cJSON_CreateObject();
        if (!obj || !cJSON_AddStringToObject(obj, "text", text))
            rc = ARB_ERR(err, ARB_E_NOMEM, "%s:%zu: out of memory", path, line);
        free(text);
        if (!rc) {
            loc l = {path, true, line};
            rc = dataset_add(d, obj, &l, err);
        }
        cJSON_Delete(obj);
        p = (nl ? nl : end) + 1;
    }
    return rc;
}

/* ---- splits ---- */

/* Find `split` in info->splits ("test=11-510,all,..."): *found, and the id range if any. */
static void split_lookup(const arb_dataset_info *in, const char *split, bool *found, bool *ranged,
                         long long *lo, long long *hi)
{
    *found = *ranged = false;
    size_t n = strlen(split);
    for (const char *p = in->splits; *p;) {
        size_t k = strcspn(p, ",");
        size_t name = strcspn(p, "=,");
        if (name == n && !strncmp(p, split, n)) {
            *found = true;
            if (name < k) {
                *ranged = true;
                ARB_ASSERT(sscanf(p + name + 1, "%lld-%lld", lo, hi) == 2);
            }
            return;
        }
        p += k + (p[k] == ',');
    }
}

static int apply_split(arb_dataset *d, const char *path, const char *split, arb_err *err)
{
    bool found, ranged;
    long long lo = 0, hi = 0;
    split_lookup(d->info, split, &found, &ranged, &lo, &hi);
    bool by_cat = !found && d->info->category_field;
    if (!found && !by_cat)
        return ARB_ERR(err, ARB_E_INVAL, "%s: unknown split \"%s\" (known: %s)", d->info->name,
                       split, d->info->splits);
    if (found && !ranged)
        return ARB_OK;
    char cats[512] = ""; /* distinct categories, for the message when none matches */
    size_t nc = 0;
    for (size_t i = 0; by_cat && i < d->n && nc < sizeof cats; i++) {
        const char *c = d->recs[i].category, *hit = c ? strstr(cats, c) : NULL;
        size_t k = c ? strlen(c) : 0;
        if (c && !(hit && (hit == cats || hit[-1] == ' ') && (hit[k] == ',' || !hit[k])))
            nc += (size_t)snprintf(cats + nc, sizeof cats - nc, "%s%s", nc ? ", " : "", c);
    }
    size_t kept = 0;
    for (size_t i = 0; i < d->n; i++) {
        arb_record *r = &d->recs[i];
        bool keep;
        if (by_cat) {
            keep = r->category && !strcmp(r->category, split);
        } else {
            char *end;
            errno = 0;
            long long id = strtoll(r->id, &end, 10);
            if (*end || errno || end == r->id) {
                int rc = ARB_ERR(err, ARB_E_FORMAT, "%s: record %zu: split \"%s\" needs an "
                                 "integer %s, got \"%s\"", path, i, split,
                                 d->info->id_field ? d->info->id_field : "id", r->id);
                for (size_t j = i; j < d->n; j++) /* [kept, i) are moved or released */
                    record_release(&d->recs[j]);
                d->n = kept;
                return rc;
            }
            keep = id >= lo && id <= hi;
        }
        if (keep)
            d->recs[kept++] = *r;
        else
            record_release(r);
    }
    d->n = kept;
    if (by_cat && kept == 0)
        return ARB_ERR(err, ARB_E_INVAL, "%s: unknown split \"%s\" (known: %s, or a %s: %s)",
                       d->info->name, split, d->info->splits, d->info->category_field, cats);
    return ARB_OK;
}

/* ---- open / free ---- */

static int unknown_name(const char *name, arb_err *err)
{
    char known[512] = "";
    size_t k = 0;
    for (size_t i = 0; i < arb_dataset_catalog_n && k < sizeof known; i++)
        k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", arb_dataset_catalog[i].name);
    return ARB_ERR(err, ARB_E_INVAL, "unknown dataset \"%s\" (known: %s)", name ? name : "(null)",
                   known);
}

static int parse_buffer(const arb_dataset_info *in, const char *split, const sbuf *buf,
                        const char *path, arb_dataset **out, arb_err *err);

int arb_dataset_open(const char *data_dir, const char *name, const char *split, arb_dataset **out,
                     arb_err *err)
{
    *out = NULL;
    const arb_dataset_info *in = arb_dataset_find(name);
    if (!in)
        return unknown_name(name, err);
    char first[32];
    if (!split || !*split) { /* the first listed split ("test" for benchmarks, "train" for training sets) */
        size_t n = strcspn(in->splits, ",=");
        snprintf(first, sizeof first, "%.*s", (int)(n < sizeof first ? n : sizeof first - 1), in->splits);
        split = first;
    }
    struct stat st;
    if (!data_dir || !*data_dir || stat(data_dir, &st) || !S_ISDIR(st.st_mode))
        return ARB_ERR(err, ARB_E_NOTFOUND, "data directory %s not found: run datasets/fetch "
                       "(it fills ~/.cache/arbor/data) or set ARBOR_DATA / --data to a directory "
                       "with the benchmark files", data_dir && *data_dir ? data_dir : "(none)");
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", data_dir, in->file) >= sizeof path)
        return ARB_ERR(err, ARB_E_RANGE, "%s/%s: path too long", data_dir, in->file);
    if (stat(path, &st))
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: %s (dataset %s): run `datasets/fetch --only %s` "
                       "or set ARBOR_DATA / --data to a directory that has %s", path,
                       strerror(errno), in->name, in->name, in->file);
    sbuf buf = {0};
    int rc = read_file(path, &buf, err);
    if (!rc)
        rc = parse_buffer(in, split, &buf, path, out, err);
    free(buf.p);
    return rc;
}

/* Records of a whole file held in buf (NUL-terminated), split applied; path labels messages. */
static int parse_buffer(const arb_dataset_info *in, const char *split, const sbuf *buf,
                        const char *path, arb_dataset **out, arb_err *err)
{
    arb_dataset *d = arb_calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    d->info = in;
    size_t k = strlen(in->file);
    bool jsonl = strstr(in->file, ".jsonl") != NULL;
    bool array = !jsonl && k >= 5 && !strcmp(in->file + k - 5, ".json");
    int rc = jsonl ? parse_jsonl(d, path, buf, err)
             : array ? parse_array(d, path, buf, err) : parse_lines(d, path, buf, err);
    if (!rc && d->n_read == 0)
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: no records (empty file?)", path);
    if (!rc)
        rc = apply_split(d, path, split, err);
    if (rc) {
        arb_dataset_free(d);
        return rc;
    }
    *out = d;
    return ARB_OK;
}

int arb_dataset_open_buffer(const char *name, const char *split, const char *data, size_t n,
                            const char *label, arb_dataset **out, arb_err *err)
{
    *out = NULL;
    const arb_dataset_info *in = arb_dataset_find(name);
    if (!in)
        return unknown_name(name, err);
    sbuf buf = {0};
    int rc = sbuf_add(&buf, data, n, err); /* the parsers want a NUL after the last byte */
    if (!rc)
        rc = parse_buffer(in, split && *split ? split : "test", &buf, label, out, err);
    free(buf.p);
    return rc;
}

void arb_dataset_free(arb_dataset *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        record_release(&d->recs[i]);
    free(d->recs);
    free(d);
}

size_t arb_dataset_count(const arb_dataset *d) { return d->n; }
size_t arb_dataset_n_read(const arb_dataset *d) { return d->n_read; }
const arb_dataset_info *arb_dataset_get_info(const arb_dataset *d) { return d->info; }

const arb_record *arb_dataset_get(const arb_dataset *d, size_t i)
{
    return i < d->n ? &d->recs[i] : NULL;
}
