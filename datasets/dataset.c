/* dataset.c — see dataset.h.
 *
 * Everything that differs between benchmarks is one row of `specs` below: the file and its
 * manifest facts, where the id and category come from, and how the user turns are made.
 * Adding a dataset: add a row (and the same facts to datasets/manifest.tsv, which
 * datasets/fetch reads and tests/test_dataset.c compares with this table), then a first-record
 * fact to the test.
 *
 * Turn templates: "{field}" inserts a string field; "{field:lines}" an array of strings joined
 * with "\n"; a field may be a path such as "conversations[0].value"; "[[...]]" is an optional
 * section, dropped when a field inside it is absent or null; "{{" and "}}" are literal braces.
 * Why each template is what it is: datasets/README.md.
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

#include "modelfetch.h" /* arb_cache_dir */

/* MBPP splits: google-research mbpp/README.md ("Task IDs 11-510 are used for evaluation.
   Task IDs 1-10 and 511-1000 are used for training and/or prompting"); validation/train as in
   the HF loader. The prompt is the zero-shot form of the MBPP paper's prompt, as used by
   DeepSeek-Coder Evaluation/MBPP and bigcode-evaluation-harness (tests joined by "\n"). */
#define MBPP_PROMPT                                                                             \
    "You are an expert Python programmer, and here is your task: {text} Your code should pass " \
    "these tests:\n\n{test_list:lines}"
/* ClassEval holistic generation, FudanSELab/ClassEval generation/inference_pipeline.py. */
#define CLASSEVAL_PROMPT "Please complete the class {class_name} in the following code.\n{skeleton}"
#define SG_FIELDS "id", NULL, NULL, "{conversations[0].value}", "conversations[0].from", "human"
#define SG_LICENSE "Apache-2.0 (repo); ShareGPT terms"

/* name, file, records, bytes, sha256, license, splits,
   id, category, turns, prompt, keep field, keep value, summary */
static const arb_dataset_info specs[] = {
    {"humaneval", "humaneval/HumanEval.jsonl.gz", 164, 44877,
     "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef", "MIT", "test,all",
     "task_id", NULL, NULL, "{prompt}", NULL, NULL,
     "HumanEval: the function signature + docstring"},
    {"gsm8k", "gsm8k/test.jsonl", 1319, 749738,
     "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14", "MIT", "test,all",
     NULL, NULL, NULL, "{question}", NULL, NULL, "GSM8K test: the question"},
    {"mbpp", "mbpp/mbpp.jsonl", 974, 563743,
     "ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f", "CC-BY-4.0",
     "test=11-510,all,prompt=1-10,validation=511-600,train=601-974", "task_id", NULL, NULL,
     MBPP_PROMPT, NULL, NULL, "MBPP: task text + its 3 asserts (test = task_id 11..510)"},
    {"classeval", "classeval/ClassEval_data.json", 100, 2345518,
     "50a1ac0e4d0c238573c10c0ab11feae00b14a80ae9e4c9cc28148707ecf0b6a2", "CC-BY-NC-4.0",
     "test,all", "task_id", NULL, NULL, CLASSEVAL_PROMPT, NULL, NULL,
     "ClassEval: holistic instruction + class skeleton"},
    {"mt-bench", "mt-bench/question.jsonl", 80, 48929,
     "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7", "Apache-2.0",
     "test,all", "question_id", "category", "turns", NULL, NULL, NULL,
     "MT-Bench: two user turns per question"},
    {"spec-bench", "spec-bench/question.jsonl", 480, 698768,
     "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04", "Apache-2.0",
     "test,all", "question_id", "category", "turns", NULL, NULL, NULL,
     "Spec-Bench: MT-Bench (2 turns) + 5 tasks x 80 (1 turn)"},
    {"math500", "math500/test.jsonl", 500, 446564,
     "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132", "MIT", "test,all",
     "unique_id", "subject", NULL, "{problem}", NULL, NULL, "MATH500: the problem"},
    {"olympiadbench", "olympiadbench/test.jsonl", 675, 1493870,
     "bb8c1e38a16ea9eacb77530315a674d883f267fbff79183effc53681b4fcc416", "Apache-2.0",
     "test,all", "id", "subfield", NULL, "[[{context}\n\n]]{question}", NULL, NULL,
     "OlympiadBench OE_TO_maths_en_COMP: [context +] question"},
    {"sharegpt", "sharegpt/ShareGPT_V3_filtered_500.json", 500, 216075,
     "1dfcb9e6a6b794145128a3d2dd2f3c83aff8f11c806654e77aede2b0cda30e0e", SG_LICENSE, "test,all",
     SG_FIELDS, "ShareGPT V3: 500 first human turns"},
    {"sharegpt-1000", "sharegpt/ShareGPT_V3_filtered_1000.json", 1000, 863133,
     "68bf784305d30824de71732c59e53ebb00780e4fd136b0382cd7dee7f08ea5d3", SG_LICENSE, "test,all",
     SG_FIELDS, "ShareGPT V3: 1000 first human turns"},
    {"sharegpt-90k", "sharegpt/sg_90k_part1_html_cleaned_lang_first_sampled_sorted.json", 2978,
     2053294, "e95458dfb016a21e5ced20ced9b1694e8d8eeb7c9442005f588563fdd53318c9", SG_LICENSE,
     "test,all", SG_FIELDS, "ShareGPT sg_90k sample: non-empty first turns by a human (2957 of 2978)"},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

struct arb_dataset {
    const arb_dataset_info *info;
    arb_record *recs;   /* [n] kept records; strings owned */
    size_t n, cap;
    size_t n_read;      /* records parsed from the file */
};

const arb_dataset_info *arb_dataset_list(size_t *n)
{
    *n = N_SPECS;
    return specs;
}

const arb_dataset_info *arb_dataset_find(const char *name)
{
    for (size_t i = 0; name && i < N_SPECS; i++)
        if (!strcmp(specs[i].name, name))
            return &specs[i];
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
        char *p = realloc(b->p, cap);
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
                ARB_ASSERT(!strcmp(mod, "lines"));
                if (!cJSON_IsArray(v))
                    return bad_field(l, "array-of-strings", field, v, err);
                const cJSON *it;
                int i = 0;
                cJSON_ArrayForEach(it, v) {
                    if (!cJSON_IsString(it)) {
                        char at[160];
                        snprintf(at, sizeof at, "%s[%d]", field, i);
                        return bad_field(l, "string", at, it, err);
                    }
                    if ((i && (rc = sbuf_add(out, "\n", 1, err))) ||
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
    char *p = strdup(s);
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
        if (!(r->turns = calloc((size_t)n, sizeof *r->turns)))
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
    if (!rc && !(r->turns = calloc(1, sizeof *r->turns)))
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
        arb_record *p = realloc(d->recs, cap * sizeof *p);
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
            cJSON *obj = cJSON_ParseWithLengthOpts(q, (size_t)(le - q), &stop, false);
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
    cJSON *root = cJSON_ParseWithLengthOpts(buf->p, buf->n, &stop, false);
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
    for (size_t i = 0; i < N_SPECS && k < sizeof known; i++)
        k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", specs[i].name);
    return ARB_ERR(err, ARB_E_INVAL, "unknown dataset \"%s\" (known: %s)", name ? name : "(null)",
                   known);
}

int arb_dataset_open(const char *data_dir, const char *name, const char *split, arb_dataset **out,
                     arb_err *err)
{
    *out = NULL;
    const arb_dataset_info *in = arb_dataset_find(name);
    if (!in)
        return unknown_name(name, err);
    if (!split || !*split)
        split = "test";
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
    arb_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    d->info = in;
    sbuf buf = {0};
    int rc = read_file(path, &buf, err);
    bool jsonl = strstr(in->file, ".jsonl") != NULL;
    if (!rc)
        rc = jsonl ? parse_jsonl(d, path, &buf, err) : parse_array(d, path, &buf, err);
    free(buf.p);
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
