/* cmd_inspect.c — `arbor inspect FILE`: a GGUF file's header, metadata and tensor table.
 *
 * A file-format tool: it reads the GGUF through engine.h's file view (arb_gguf_open,
 * the kv and tensor tables, arb_type_name) rather than a loaded model. The file is
 * validated exactly as the model loader validates it, so this is also the way to see
 * why a file is rejected: the error names the byte offset and the kv/tensor index.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "engine.h"
#include "modelfetch.h"
#include "opts.h"

static const char description[] =
    "Validates a GGUF file (v2/v3) and prints its version, alignment, metadata (key, type,\n"
    "value; arrays as type[count] with their first elements) and tensor table (name, type,\n"
    "shape, bytes, offset) with totals: parameters, bytes, and bytes per tensor type.\n"
    "FILE may be `default` (the cached default model, see `arbor fetch-model`).\n";

typedef struct opts {
    int items; /* array elements shown */
    int width; /* string characters shown, 0 = all */
} opts;

/* ---- text ---- */

static void put_str(arb_gguf_str s, int width)
{
    uint64_t n = width > 0 && s.len > (uint64_t)width ? (uint64_t)width : s.len;
    putchar('"');
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c); /* UTF-8 passes through */
    }
    putchar('"');
    if (n < s.len)
        printf("...(%llu bytes)", (unsigned long long)s.len);
}

static void put_value(const arb_gguf *g, const arb_gguf_value *v, const opts *o)
{
    switch (v->type) {
    case ARB_GGUF_U8: case ARB_GGUF_U16: case ARB_GGUF_U32: case ARB_GGUF_U64:
        printf("%llu", (unsigned long long)v->v.u64);
        break;
    case ARB_GGUF_I8: case ARB_GGUF_I16: case ARB_GGUF_I32: case ARB_GGUF_I64:
        printf("%lld", (long long)v->v.i64);
        break;
    case ARB_GGUF_F32: case ARB_GGUF_F64: printf("%.9g", v->v.f64); break;
    case ARB_GGUF_BOOL: fputs(v->v.b ? "true" : "false", stdout); break;
    case ARB_GGUF_STRING: put_str(v->v.str, o->width); break;
    case ARB_GGUF_ARRAY: {
        uint64_t n = v->v.arr.n, shown = n < (uint64_t)o->items ? n : (uint64_t)o->items;
        putchar('[');
        for (uint64_t i = 0; i < shown; i++) {
            arb_gguf_value e;
            if (v->v.arr.elem_type == ARB_GGUF_STRING)
                arb_gguf_arr_str(g, v, i, &e.v.str), e.type = ARB_GGUF_STRING;
            else
                arb_gguf_arr_at(v, i, &e);
            fputs(i ? ", " : "", stdout);
            put_value(g, &e, o);
        }
        if (shown < n)
            printf("%s... %llu more", shown ? ", " : "", (unsigned long long)(n - shown));
        putchar(']');
        break;
    }
    }
}

/* "string[49152]", "array[3]" for array values, the scalar type name otherwise. */
static void type_label(const arb_gguf_value *v, char *buf, size_t cap)
{
    if (v->type == ARB_GGUF_ARRAY)
        snprintf(buf, cap, "%s[%llu]", arb_gguf_type_name(v->v.arr.elem_type), (unsigned long long)v->v.arr.n);
    else
        snprintf(buf, cap, "%s", arb_gguf_type_name(v->type));
}

static void shape_label(const arb_gguf_tensor *t, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n < (int)cap; d++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%llu", d ? ", " : "", (unsigned long long)t->ne[d]);
    if (n < (int)cap)
        snprintf(buf + n, cap - (size_t)n, "]");
}

static uint64_t n_elems(const arb_gguf_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

typedef struct type_total {
    uint64_t tensors, params, bytes;
} type_total;

static void print_text(const arb_gguf *g, const char *path, long long file_bytes, const opts *o, type_total *by)
{
    printf("file:      %s (%lld bytes)\nversion:   %u\nalignment: %llu\n", path, file_bytes, arb_gguf_version(g),
           (unsigned long long)arb_gguf_alignment(g));
    printf("\nmetadata (%llu keys):\n", (unsigned long long)arb_gguf_n_kv(g));
    for (uint64_t i = 0; i < arb_gguf_n_kv(g); i++) {
        const arb_gguf_kv *kv = arb_gguf_kv_at(g, i);
        char key[256], ty[48];
        arb_gguf_str_copy(kv->key, key, sizeof key);
        type_label(&kv->value, ty, sizeof ty);
        printf("  %-40s %-14s ", key, ty);
        put_value(g, &kv->value, o);
        putchar('\n');
    }
    printf("\ntensors (%llu):\n  %5s  %-36s %-7s %-22s %12s %12s\n", (unsigned long long)arb_gguf_n_tensors(g), "#",
           "name", "type", "shape", "bytes", "offset");
    uint64_t params = 0, bytes = 0;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        char name[256], shape[96];
        arb_gguf_str_copy(t->name, name, sizeof name);
        shape_label(t, shape, sizeof shape);
        printf("  %5llu  %-36s %-7s %-22s %12llu %12llu\n", (unsigned long long)i, name, arb_type_name(t->type), shape,
               (unsigned long long)t->n_bytes, (unsigned long long)t->offset);
        params += n_elems(t);
        bytes += t->n_bytes;
    }
    printf("\ntotals: %llu parameters (%.1f M), %llu bytes (%.1f MiB), %.3f bits/param\n", (unsigned long long)params,
           params / 1e6, (unsigned long long)bytes, bytes / 1048576.0, params ? 8.0 * bytes / params : 0.0);
    for (uint32_t ty = 0; ty < 64; ty++)
        if (by[ty].tensors)
            printf("  %-7s %4llu tensors %12llu params %12llu bytes\n", arb_type_name(ty),
                   (unsigned long long)by[ty].tensors, (unsigned long long)by[ty].params,
                   (unsigned long long)by[ty].bytes);
}

/* ---- JSON ---- */

static cJSON *json_str(arb_gguf_str s)
{
    char *c = malloc(s.len + 1); /* s.len <= file size: validated at open */
    if (!c)
        return NULL;
    arb_gguf_str_copy(s, c, s.len + 1);
    cJSON *j = cJSON_CreateString(c);
    free(c);
    return j;
}

static cJSON *json_value(const arb_gguf *g, const arb_gguf_value *v, const opts *o)
{
    switch (v->type) {
    case ARB_GGUF_U8: case ARB_GGUF_U16: case ARB_GGUF_U32: case ARB_GGUF_U64:
        return cJSON_CreateNumber((double)v->v.u64); /* > 2^53 loses precision: JSON numbers are doubles */
    case ARB_GGUF_I8: case ARB_GGUF_I16: case ARB_GGUF_I32: case ARB_GGUF_I64:
        return cJSON_CreateNumber((double)v->v.i64);
    case ARB_GGUF_F32: case ARB_GGUF_F64: return cJSON_CreateNumber(v->v.f64);
    case ARB_GGUF_BOOL: return cJSON_CreateBool(v->v.b);
    case ARB_GGUF_STRING: return json_str(v->v.str);
    case ARB_GGUF_ARRAY: {
        cJSON *a = cJSON_CreateObject(), *head = cJSON_CreateArray();
        cJSON_AddStringToObject(a, "elem_type", arb_gguf_type_name(v->v.arr.elem_type));
        cJSON_AddNumberToObject(a, "count", (double)v->v.arr.n);
        for (uint64_t i = 0; i < v->v.arr.n && i < (uint64_t)o->items; i++) {
            arb_gguf_value e;
            if (v->v.arr.elem_type == ARB_GGUF_STRING)
                arb_gguf_arr_str(g, v, i, &e.v.str), e.type = ARB_GGUF_STRING;
            else
                arb_gguf_arr_at(v, i, &e);
            cJSON_AddItemToArray(head, json_value(g, &e, o));
        }
        cJSON_AddItemToObject(a, "head", head);
        return a;
    }
    }
    return cJSON_CreateNull();
}

static int print_json(const arb_gguf *g, const char *path, long long file_bytes, const opts *o, type_total *by)
{
    cJSON *root = cJSON_CreateObject(), *md = cJSON_CreateArray(), *ts = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "file", path);
    cJSON_AddNumberToObject(root, "file_bytes", (double)file_bytes);
    cJSON_AddNumberToObject(root, "version", arb_gguf_version(g));
    cJSON_AddNumberToObject(root, "alignment", (double)arb_gguf_alignment(g));
    for (uint64_t i = 0; i < arb_gguf_n_kv(g); i++) {
        const arb_gguf_kv *kv = arb_gguf_kv_at(g, i);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "key", json_str(kv->key));
        cJSON_AddStringToObject(e, "type", arb_gguf_type_name(kv->value.type));
        cJSON_AddItemToObject(e, "value", json_value(g, &kv->value, o));
        cJSON_AddItemToArray(md, e);
    }
    uint64_t params = 0, bytes = 0;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        cJSON *e = cJSON_CreateObject(), *shape = cJSON_CreateArray();
        cJSON_AddItemToObject(e, "name", json_str(t->name));
        cJSON_AddStringToObject(e, "type", arb_type_name(t->type));
        for (uint32_t d = 0; d < t->n_dims; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddItemToObject(e, "shape", shape);
        cJSON_AddNumberToObject(e, "bytes", (double)t->n_bytes);
        cJSON_AddNumberToObject(e, "offset", (double)t->offset);
        cJSON_AddItemToArray(ts, e);
        params += n_elems(t);
        bytes += t->n_bytes;
    }
    cJSON_AddItemToObject(root, "metadata", md);
    cJSON_AddItemToObject(root, "tensors", ts);
    cJSON *tot = cJSON_AddObjectToObject(root, "totals"), *bt = cJSON_CreateObject();
    cJSON_AddNumberToObject(tot, "params", (double)params);
    cJSON_AddNumberToObject(tot, "bytes", (double)bytes);
    for (uint32_t ty = 0; ty < 64; ty++)
        if (by[ty].tensors) {
            cJSON *e = cJSON_AddObjectToObject(bt, arb_type_name(ty));
            cJSON_AddNumberToObject(e, "tensors", (double)by[ty].tensors);
            cJSON_AddNumberToObject(e, "params", (double)by[ty].params);
            cJSON_AddNumberToObject(e, "bytes", (double)by[ty].bytes);
        }
    cJSON_AddItemToObject(tot, "by_type", bt);
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s) {
        fprintf(stderr, "arbor inspect: out of memory\n");
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

int arb_cmd_inspect(int argc, char **argv)
{
    opts o = {.items = 5, .width = 60};
    bool json = false;
    const arb_opt table[] = {
        ARB_OPT_FLAG("--json", &json, "one JSON object on stdout instead of text"),
        ARB_OPT_INT("--items", "N", &o.items, 0, 1000000, "array elements shown per array (default 5)"),
        ARB_OPT_INT("--width", "N", &o.width, 0, 1000000,
                    "characters shown per string before truncating (default 60; 0 = all)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"inspect", "FILE", description, table, 1, 1};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    const char *file = pos.v[0];
    char path[4096];
    arb_err err = {0};
    arb_gguf *g = NULL;
    if (arb_model_resolve(file, path, sizeof path, &err) || arb_gguf_open(path, &g, &err)) {
        fprintf(stderr, "arbor inspect: %s\n", err.msg);
        return 1;
    }
    struct stat st;
    long long file_bytes = stat(path, &st) ? -1 : (long long)st.st_size;
    type_total by[64] = {{0}};
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        if (t->type < 64) { /* every known type id is < 64 */
            by[t->type].tensors++;
            by[t->type].params += n_elems(t);
            by[t->type].bytes += t->n_bytes;
        }
    }
    int rc = 0;
    if (json)
        rc = print_json(g, path, file_bytes, &o, by);
    else
        print_text(g, path, file_bytes, &o, by);
    arb_gguf_close(g);
    return rc;
}
