/* fuzz_gguf.c — libFuzzer target for the GGUF reader.
 *
 * Opens the input with arb_gguf_open_buffer and, when it is accepted, walks everything a
 * consumer could touch: every kv through every getter, every array element (nested ones
 * too), every tensor by index and by name, and the first row of each tensor whose type
 * is dequantised. Any read outside the input is an ASan report; any inconsistency between
 * the directory and what open validated is an abort here.
 * Build and run: tests/fuzz/run.sh (clang, -fsanitize=fuzzer,address,undefined).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

#define CHECK(x) ((x) ? (void)0 : abort())

static void walk_value(const arb_gguf *g, const arb_gguf_value *v, int depth)
{
    CHECK(depth < 16);
    if (v->type == ARB_GGUF_STRING) {
        volatile char sink = 0;
        for (uint64_t i = 0; i < v->v.str.len; i++)
            sink ^= v->v.str.ptr[i];
        (void)sink;
        return;
    }
    if (v->type != ARB_GGUF_ARRAY)
        return;
    for (uint64_t i = 0; i < v->v.arr.n; i++) {
        arb_gguf_value e;
        CHECK(arb_gguf_arr_at(v, i, &e) == ARB_OK);
        CHECK(e.type == v->v.arr.elem_type);
        if (e.type == ARB_GGUF_STRING) {
            arb_gguf_str s;
            CHECK(arb_gguf_arr_str(g, v, i, &s) == ARB_OK && s.len == e.v.str.len && s.ptr == e.v.str.ptr);
        }
        double f;
        int64_t n;
        (void)arb_gguf_arr_f64(v, i, &f);
        (void)arb_gguf_arr_i64(v, i, &n);
        walk_value(g, &e, depth + 1);
    }
    arb_gguf_value e;
    CHECK(arb_gguf_arr_at(v, v->v.arr.n, &e) == ARB_E_RANGE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so ASan flags any read one byte past the input. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    arb_gguf *g = NULL;
    arb_err err = {0};
    int rc = arb_gguf_open_buffer(buf, size, "fuzz.gguf", &g, &err);
    if (rc != ARB_OK) {
        CHECK(g == NULL && err.msg[0]);
        free(buf);
        return 0;
    }
    char key[512];
    for (uint64_t i = 0; i < arb_gguf_n_kv(g); i++) {
        const arb_gguf_kv *kv = arb_gguf_kv_at(g, i);
        walk_value(g, &kv->value, 0);
        if (kv->key.len < sizeof key && !memchr(kv->key.ptr, 0, kv->key.len)) {
            arb_gguf_str_copy(kv->key, key, sizeof key);
            CHECK(arb_gguf_find(g, key) == &kv->value);
            uint64_t u;
            int64_t n;
            double f;
            bool b;
            arb_gguf_str s;
            (void)arb_gguf_get_u64(g, key, &u, &err);
            (void)arb_gguf_get_i64(g, key, &n, &err);
            (void)arb_gguf_get_f64(g, key, &f, &err);
            (void)arb_gguf_get_bool(g, key, &b, &err);
            (void)arb_gguf_get_str(g, key, &s, &err);
        }
    }
    float *row = malloc(65536 * sizeof *row);
    for (uint64_t i = 0; row && i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        const uint8_t *p = t->data;
        CHECK(p >= buf && p + t->n_bytes <= buf + size);
        CHECK(t->offset % arb_gguf_alignment(g) == 0 && t->n_dims >= 1 && t->n_dims <= 4);
        if (t->name.len < sizeof key && !memchr(t->name.ptr, 0, t->name.len)) {
            arb_gguf_str_copy(t->name, key, sizeof key);
            CHECK(arb_gguf_find_tensor(g, key) == t);
        }
        size_t rb = arb_type_row_bytes(t->type, t->ne[0]);
        if (arb_type_supported(t->type) && t->ne[0] <= 65536 && rb && rb <= t->n_bytes)
            arb_dequant_row(t->type, t->data, row, (size_t)t->ne[0]);
    }
    free(row);
    arb_gguf_close(g);
    free(buf);
    return 0;
}
