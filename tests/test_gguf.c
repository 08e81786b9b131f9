/* test_gguf.c — the GGUF reader: a small writer builds valid files (v2, v3, every value
 * type, nested arrays, aligned tensors) whose every getter is checked; then one handcrafted
 * corrupt file per rejection rule, truncation at every byte, and the vocab GGUFs in
 * $ARBOR_DATA/tokenizer-vectors. The real-model checks are in test_gguf_model.c. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "gguf_writer.h"
#include "quant.h"

/* The valid file: every value type, nested arrays, three tensors whose data starts at
   `align`-aligned offsets; the last tensor ends exactly at the end of the file. */
static void build_valid(wbuf *b, uint32_t version, uint32_t align)
{
    w_header(b, version, 3, 22);
    w_kv_str(b, "general.architecture", "llama");
    w_key(b, "t.u8", ARB_GGUF_U8), w_u8(b, 200);
    w_key(b, "t.i8", ARB_GGUF_I8), w_u8(b, (uint8_t)-100);
    w_key(b, "t.u16", ARB_GGUF_U16), w_u16(b, 60000);
    w_key(b, "t.i16", ARB_GGUF_I16), w_u16(b, (uint16_t)-30000);
    w_key(b, "t.u32", ARB_GGUF_U32), w_u32(b, 4000000000u);
    w_key(b, "t.i32", ARB_GGUF_I32), w_u32(b, (uint32_t)-2000000000);
    w_key(b, "t.f32", ARB_GGUF_F32), w_f32(b, 1.5f);
    w_key(b, "t.bool", ARB_GGUF_BOOL), w_u8(b, 1);
    w_key(b, "t.u64", ARB_GGUF_U64), w_u64(b, (1ull << 63) + 5);
    w_key(b, "t.i64", ARB_GGUF_I64), w_u64(b, (uint64_t)-(1ll << 62));
    w_key(b, "t.f64", ARB_GGUF_F64), w_f64(b, 3.25);
    w_kv_str(b, "t.empty", "");
    w_key(b, "t.strs", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_STRING, 4);
    w_str(b, "a"), w_str(b, "bc"), w_str(b, ""), w_str(b, "def");
    w_key(b, "t.i32s", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_I32, 3);
    w_u32(b, 1), w_u32(b, (uint32_t)-2), w_u32(b, 3);
    w_key(b, "t.f32s", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_F32, 2), w_f32(b, 0.5f), w_f32(b, -1.25f);
    w_key(b, "t.u64s", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_U64, 2), w_u64(b, 7), w_u64(b, UINT64_MAX);
    w_key(b, "t.bools", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_BOOL, 3), w_u8(b, 0), w_u8(b, 1), w_u8(b, 0);
    w_key(b, "t.empty_arr", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_U8, 0);
    /* [[1, 2], [3], []] of u16, and [["x", "yy"], ["zzz"]] */
    w_key(b, "t.nested", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_ARRAY, 3);
    w_arr(b, ARB_GGUF_U16, 2), w_u16(b, 1), w_u16(b, 2);
    w_arr(b, ARB_GGUF_U16, 1), w_u16(b, 3);
    w_arr(b, ARB_GGUF_U16, 0);
    w_key(b, "t.nested_strs", ARB_GGUF_ARRAY), w_arr(b, ARB_GGUF_ARRAY, 2);
    w_arr(b, ARB_GGUF_STRING, 2), w_str(b, "x"), w_str(b, "yy");
    w_arr(b, ARB_GGUF_STRING, 1), w_str(b, "zzz");
    w_key(b, "general.alignment", ARB_GGUF_U32), w_u32(b, align);
    /* tensors: a F32 [3,2] (24 B), b Q4_1 [64] (40 B), c F16 [5,1,1,1] (10 B) */
    uint64_t off_b = w_align_up(24, align), off_c = w_align_up(off_b + 40, align);
    w_tensor(b, "a", 2, (uint64_t[]){3, 2}, ARB_TYPE_F32, 0);
    w_tensor(b, "b", 1, (uint64_t[]){64}, ARB_TYPE_Q4_1, off_b);
    w_tensor(b, "c", 4, (uint64_t[]){5, 1, 1, 1}, ARB_TYPE_F16, off_c);
    w_pad(b, align);
    size_t data = b->n;
    for (int i = 0; i < 6; i++)
        w_f32(b, (float)i + 0.25f);
    w_pad_to(b, data + off_b);
    for (int i = 0; i < 40; i++)
        w_u8(b, (uint8_t)i);
    w_pad_to(b, data + off_c);
    for (int i = 0; i < 5; i++)
        w_u16(b, arb_f32_to_fp16((float)-i));
}

static arb_gguf *open_ok(const wbuf *b, const char *name)
{
    arb_gguf *g = NULL;
    arb_err err = {0};
    int rc = arb_gguf_open_buffer(b->p, b->n, name, &g, &err);
    cr_assert_eq(rc, ARB_OK, "%s", err.msg);
    cr_assert_not_null(g);
    return g;
}

/* Open b expecting failure `code` with a message containing the file name, "byte " and `needle`. */
static void expect_fail(const wbuf *b, int code, const char *needle)
{
    arb_gguf *g = (arb_gguf *)1;
    arb_err err = {0};
    int rc = arb_gguf_open_buffer(b->p, b->n, "bad.gguf", &g, &err);
    cr_assert_eq(rc, code, "rc %d, want %d: %s", rc, code, err.msg);
    cr_assert_null(g);
    cr_assert(strstr(err.msg, "bad.gguf: byte ") == err.msg, "message: %s", err.msg);
    cr_assert(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

static void check_valid(uint32_t version, uint32_t align)
{
    wbuf b = {0};
    build_valid(&b, version, align);
    arb_gguf *g = open_ok(&b, "valid.gguf");
    arb_err err = {0};
    uint64_t u;
    int64_t i;
    double f;
    bool bo;
    arb_gguf_str s;
    cr_assert_eq(arb_gguf_version(g), version);
    cr_assert_eq(arb_gguf_alignment(g), align);
    cr_assert_str_eq(arb_gguf_path(g), "valid.gguf");
    cr_assert_eq(arb_gguf_n_kv(g), 22);
    cr_assert(arb_gguf_str_eq(arb_gguf_kv_at(g, 1)->key, "t.u8"));
    cr_assert_null(arb_gguf_kv_at(g, 22));
    cr_assert_eq(arb_gguf_get_str(g, "general.architecture", &s, &err), ARB_OK);
    cr_assert(arb_gguf_str_eq(s, "llama"));
    cr_assert_eq(arb_gguf_get_str(g, "t.empty", &s, &err), ARB_OK);
    cr_assert_eq(s.len, 0);
    cr_assert(arb_gguf_get_u64(g, "t.u8", &u, &err) == ARB_OK && u == 200);
    cr_assert(arb_gguf_get_i64(g, "t.u8", &i, &err) == ARB_OK && i == 200);
    cr_assert(arb_gguf_get_i64(g, "t.i8", &i, &err) == ARB_OK && i == -100);
    cr_assert_eq(arb_gguf_get_u64(g, "t.i8", &u, &err), ARB_E_FORMAT, "negative into u64");
    cr_assert(strstr(err.msg, "valid.gguf: key 't.i8'"), "%s", err.msg);
    cr_assert(arb_gguf_get_u64(g, "t.u16", &u, &err) == ARB_OK && u == 60000);
    cr_assert(arb_gguf_get_i64(g, "t.i16", &i, &err) == ARB_OK && i == -30000);
    cr_assert(arb_gguf_get_u64(g, "t.u32", &u, &err) == ARB_OK && u == 4000000000u);
    cr_assert(arb_gguf_get_i64(g, "t.i32", &i, &err) == ARB_OK && i == -2000000000);
    cr_assert(arb_gguf_get_f64(g, "t.f32", &f, &err) == ARB_OK && f == 1.5);
    cr_assert(arb_gguf_get_f64(g, "t.i32", &f, &err) == ARB_OK && f == -2e9);
    cr_assert(arb_gguf_get_bool(g, "t.bool", &bo, &err) == ARB_OK && bo);
    cr_assert(arb_gguf_get_u64(g, "t.u64", &u, &err) == ARB_OK && u == (1ull << 63) + 5);
    cr_assert_eq(arb_gguf_get_i64(g, "t.u64", &i, &err), ARB_E_FORMAT, "does not fit in i64");
    cr_assert(arb_gguf_get_i64(g, "t.i64", &i, &err) == ARB_OK && i == -(1ll << 62));
    cr_assert(arb_gguf_get_f64(g, "t.f64", &f, &err) == ARB_OK && f == 3.25);
    cr_assert_eq(arb_gguf_get_bool(g, "t.u8", &bo, &err), ARB_E_FORMAT);
    cr_assert_eq(arb_gguf_get_str(g, "t.u8", &s, &err), ARB_E_FORMAT);
    cr_assert(strstr(err.msg, "expected string, found u8"), "%s", err.msg);
    cr_assert_eq(arb_gguf_get_u64(g, "t.f32", &u, &err), ARB_E_FORMAT);
    cr_assert_eq(arb_gguf_get_f64(g, "t.strs", &f, &err), ARB_E_FORMAT);
    cr_assert_eq(arb_gguf_get_u64(g, "no.such.key", &u, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "no.such.key"), "%s", err.msg);
    cr_assert_null(arb_gguf_find(g, "t.u8 "));

    const arb_gguf_value *a = arb_gguf_find(g, "t.strs");
    cr_assert(a && a->type == ARB_GGUF_ARRAY && a->v.arr.elem_type == ARB_GGUF_STRING && a->v.arr.n == 4);
    const char *want[] = {"a", "bc", "", "def"};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(arb_gguf_arr_str(g, a, (uint64_t)k, &s), ARB_OK);
        cr_assert(arb_gguf_str_eq(s, want[k]), "element %d", k);
    }
    cr_assert_eq(arb_gguf_arr_str(g, a, 4, &s), ARB_E_RANGE);
    cr_assert_eq(arb_gguf_arr_i64(a, 0, &i), ARB_E_FORMAT);
    a = arb_gguf_find(g, "t.i32s");
    cr_assert(arb_gguf_arr_i64(a, 1, &i) == ARB_OK && i == -2);
    cr_assert(arb_gguf_arr_f64(a, 2, &f) == ARB_OK && f == 3);
    cr_assert_eq(arb_gguf_arr_str(g, a, 0, &s), ARB_E_FORMAT);
    cr_assert_eq(arb_gguf_arr_i64(a, 3, &i), ARB_E_RANGE);
    a = arb_gguf_find(g, "t.f32s");
    cr_assert(arb_gguf_arr_f64(a, 1, &f) == ARB_OK && f == -1.25);
    cr_assert_eq(arb_gguf_arr_i64(a, 0, &i), ARB_E_FORMAT);
    a = arb_gguf_find(g, "t.u64s");
    cr_assert(arb_gguf_arr_i64(a, 0, &i) == ARB_OK && i == 7);
    cr_assert_eq(arb_gguf_arr_i64(a, 1, &i), ARB_E_RANGE, "UINT64_MAX does not fit");
    a = arb_gguf_find(g, "t.bools");
    arb_gguf_value e;
    cr_assert(arb_gguf_arr_at(a, 1, &e) == ARB_OK && e.type == ARB_GGUF_BOOL && e.v.b);
    cr_assert_eq(arb_gguf_arr_f64(a, 1, &f), ARB_E_FORMAT);
    cr_assert_eq(arb_gguf_find(g, "t.empty_arr")->v.arr.n, 0);
    cr_assert_eq(arb_gguf_arr_at(arb_gguf_find(g, "t.u8"), 0, &e), ARB_E_INVAL);

    a = arb_gguf_find(g, "t.nested");
    cr_assert(a->v.arr.elem_type == ARB_GGUF_ARRAY && a->v.arr.n == 3);
    const uint64_t lens[] = {2, 1, 0};
    for (uint64_t k = 0; k < 3; k++) {
        cr_assert_eq(arb_gguf_arr_at(a, k, &e), ARB_OK);
        cr_assert(e.type == ARB_GGUF_ARRAY && e.v.arr.elem_type == ARB_GGUF_U16 && e.v.arr.n == lens[k]);
    }
    arb_gguf_arr_at(a, 1, &e);
    cr_assert(arb_gguf_arr_i64(&e, 0, &i) == ARB_OK && i == 3);
    cr_assert_eq(arb_gguf_arr_at(a, 3, &e), ARB_E_RANGE);
    a = arb_gguf_find(g, "t.nested_strs");
    cr_assert_eq(arb_gguf_arr_at(a, 1, &e), ARB_OK);
    cr_assert(arb_gguf_arr_str(g, &e, 0, &s) == ARB_OK && arb_gguf_str_eq(s, "zzz"), "nested strings are walked");
    arb_gguf_arr_at(a, 0, &e);
    cr_assert(arb_gguf_arr_str(g, &e, 1, &s) == ARB_OK && arb_gguf_str_eq(s, "yy"));

    cr_assert_eq(arb_gguf_n_tensors(g), 3);
    const arb_gguf_tensor *ta = arb_gguf_find_tensor(g, "a"), *tb = arb_gguf_find_tensor(g, "b"),
                          *tc = arb_gguf_find_tensor(g, "c");
    cr_assert(ta && tb && tc && !arb_gguf_find_tensor(g, "d"));
    cr_assert_eq(arb_gguf_tensor_at(g, 1), tb);
    cr_assert_null(arb_gguf_tensor_at(g, 3));
    cr_assert(ta->n_dims == 2 && ta->ne[0] == 3 && ta->ne[1] == 2 && ta->ne[2] == 1 && ta->ne[3] == 1);
    cr_assert(ta->type == ARB_TYPE_F32 && ta->n_bytes == 24 && ta->offset == 0);
    cr_assert(tb->type == ARB_TYPE_Q4_1 && tb->n_bytes == 40 && tb->offset % align == 0 && tb->offset >= 24);
    cr_assert(tc->n_dims == 4 && tc->n_bytes == 10 && tc->offset % align == 0);
    cr_assert_eq(((const uint8_t *)tc->data + 10) - (const uint8_t *)b.p, (ptrdiff_t)b.n, "c ends the file");
    cr_assert_eq((size_t)((const uint8_t *)ta->data - b.p) % align, 0, "data section aligned");
    float fa[6];
    memcpy(fa, ta->data, 24);
    cr_assert(fa[0] == 0.25f && fa[5] == 5.25f);
    cr_assert_eq(((const uint8_t *)tb->data)[39], 39);
    float fc[5];
    arb_dequant_row(tc->type, tc->data, fc, 5);
    cr_assert(fc[0] == 0 && fc[4] == -4);

    char buf[4];
    arb_gguf_str_copy(s, buf, sizeof buf);
    cr_assert_str_eq(buf, "yy");
    arb_gguf_get_str(g, "general.architecture", &s, NULL);
    arb_gguf_str_copy(s, buf, sizeof buf);
    cr_assert_str_eq(buf, "lla", "truncated copy");
    arb_gguf_close(g);
    free(b.p);
}

Test(gguf, valid_v3_every_type_align_32) { check_valid(3, 32); }
Test(gguf, valid_v2_align_64) { check_valid(2, 64); }
Test(gguf, valid_v3_align_1) { check_valid(3, 1); }

Test(gguf, type_names_and_close_null)
{
    cr_assert_str_eq(arb_gguf_type_name(ARB_GGUF_F64), "f64");
    cr_assert_str_eq(arb_gguf_type_name((arb_gguf_type)13), "invalid");
    arb_gguf_close(NULL);
}

Test(gguf, open_file_mmap_and_io_errors)
{
    wbuf b = {0};
    build_valid(&b, 3, 32);
    char path[] = "/tmp/arbor_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    arb_gguf *g = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(arb_gguf_path(g), path);
    cr_assert_eq(arb_gguf_n_tensors(g), 3);
    arb_gguf_close(g);
    unlink(path);
    cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_E_IO);
    cr_assert_null(g);
    cr_assert(strstr(err.msg, path), "%s", err.msg);
    cr_assert_eq(arb_gguf_open("/tmp", &g, &err), ARB_E_IO);
    cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
    strcpy(path, "/tmp/arbor_test_gguf_XXXXXX");
    fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_E_IO);
    cr_assert(strstr(err.msg, "empty"), "%s", err.msg);
    unlink(path);
    free(b.p);
}

/* Every prefix of a valid file must fail cleanly (ASan sees any read past the copy). */
Test(gguf, truncated_at_every_byte)
{
    wbuf b = {0};
    build_valid(&b, 3, 32);
    for (size_t n = 0; n < b.n; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, b.p, n);
        arb_gguf *g = NULL;
        arb_err err = {0};
        int rc = arb_gguf_open_buffer(n ? cut : NULL, n, "cut.gguf", &g, &err);
        cr_assert_eq(rc, ARB_E_FORMAT, "prefix of %zu bytes: rc %d %s", n, rc, err.msg);
        cr_assert_null(g);
        free(cut);
    }
    free(b.p);
}

Test(gguf, vocab_only_file_may_end_before_the_data_padding)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 1);
    w_kv_str(&b, "general.architecture", "gpt2"); /* 4+4+8+8 + 8+20+4+8+4 = 68: not a multiple of 32 */
    arb_gguf *g = open_ok(&b, "vocab.gguf");
    cr_assert_eq(arb_gguf_n_tensors(g), 0);
    arb_gguf_close(g);
    free(b.p);
}

/* ---- one corrupt file per rejection ---- */

Test(gguf, rejects_bad_magic)
{
    wbuf b = {0};
    build_valid(&b, 3, 32);
    b.p[3] = 'X';
    expect_fail(&b, ARB_E_FORMAT, "bad magic");
    free(b.p);
}

Test(gguf, rejects_version_1_and_99_and_big_endian)
{
    wbuf b = {0};
    w_header(&b, 1, 0, 0);
    expect_fail(&b, ARB_E_UNSUPPORTED, "version 1 is not supported");
    b.n = 0;
    w_header(&b, 99, 0, 0);
    expect_fail(&b, ARB_E_UNSUPPORTED, "version 99");
    b.n = 0;
    w_header(&b, 3u << 24, 0, 0);
    expect_fail(&b, ARB_E_UNSUPPORTED, "big-endian");
    free(b.p);
}

Test(gguf, rejects_huge_counts_before_allocating)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 1ull << 60);
    w_kv_str(&b, "k", "v");
    expect_fail(&b, ARB_E_FORMAT, "n_kv 1152921504606846976 exceeds");
    b.n = 0;
    w_header(&b, 3, UINT64_MAX, 0);
    w_u64(&b, 0);
    expect_fail(&b, ARB_E_FORMAT, "n_tensors");
    free(b.p);
}

Test(gguf, rejects_huge_string_length)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 1);
    w_key(&b, "k", ARB_GGUF_STRING), w_u64(&b, 1ull << 62), w_u64(&b, 0);
    expect_fail(&b, ARB_E_FORMAT, "kv 0 'k': string length 4611686018427387904 exceeds");
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_u64(&b, UINT64_MAX), w_u64(&b, 0); /* the key itself */
    expect_fail(&b, ARB_E_FORMAT, "kv 0: key length");
    free(b.p);
}

Test(gguf, rejects_huge_array_count)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 1);
    w_key(&b, "arr", ARB_GGUF_ARRAY), w_arr(&b, ARB_GGUF_U32, 1ull << 61), w_u32(&b, 1);
    expect_fail(&b, ARB_E_FORMAT, "array count 2305843009213693952 of u32 exceeds");
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_key(&b, "arr", ARB_GGUF_ARRAY), w_arr(&b, ARB_GGUF_STRING, 3), w_str(&b, "a"), w_str(&b, "b");
    expect_fail(&b, ARB_E_FORMAT, "array count 3 of string exceeds");
    free(b.p);
}

Test(gguf, rejects_nested_array_overflow_and_depth)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 1);
    w_key(&b, "n", ARB_GGUF_ARRAY), w_arr(&b, ARB_GGUF_ARRAY, 2);
    w_arr(&b, ARB_GGUF_U8, 1), w_u8(&b, 1);
    w_arr(&b, ARB_GGUF_U64, (1ull << 61) + 1), w_u64(&b, 0);
    expect_fail(&b, ARB_E_FORMAT, "kv 0 'n': array count 2305843009213693953 of u64 exceeds");
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_key(&b, "deep", ARB_GGUF_ARRAY);
    for (int d = 0; d < 9; d++)
        w_arr(&b, ARB_GGUF_ARRAY, 1);
    w_arr(&b, ARB_GGUF_U8, 0);
    expect_fail(&b, ARB_E_FORMAT, "nested deeper than 8");
    free(b.p);
}

Test(gguf, rejects_bad_value_types_and_bools)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 1);
    w_key(&b, "t", 13), w_u64(&b, 0);
    expect_fail(&b, ARB_E_FORMAT, "invalid value type 13");
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_key(&b, "t", ARB_GGUF_ARRAY), w_arr(&b, 99, 0);
    expect_fail(&b, ARB_E_FORMAT, "invalid array element type 99");
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_key(&b, "t", ARB_GGUF_BOOL), w_u8(&b, 2);
    expect_fail(&b, ARB_E_FORMAT, "bool value 2");
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_key(&b, "t", ARB_GGUF_ARRAY), w_arr(&b, ARB_GGUF_BOOL, 2), w_u8(&b, 1), w_u8(&b, 7);
    expect_fail(&b, ARB_E_FORMAT, "bool array element 1 is 7");
    free(b.p);
}

Test(gguf, rejects_duplicate_key)
{
    wbuf b = {0};
    w_header(&b, 3, 0, 3);
    w_kv_str(&b, "a", "x");
    w_kv_str(&b, "b", "y");
    w_kv_str(&b, "a", "z");
    expect_fail(&b, ARB_E_FORMAT, "kv 2 'a': duplicate key (first at kv 0)");
    free(b.p);
}

/* A file with one kv and the given tensor entries (data filled to `data_bytes`). */
static void one_tensor(wbuf *b, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off, size_t data_bytes)
{
    b->n = 0;
    w_header(b, 3, 1, 0);
    w_tensor(b, "w", n_dims, ne, type, off);
    w_pad(b, 32);
    for (size_t i = 0; i < data_bytes; i++)
        w_u8(b, 0);
}

Test(gguf, rejects_duplicate_tensor)
{
    wbuf b = {0};
    w_header(&b, 3, 2, 0);
    w_tensor(&b, "w", 1, (uint64_t[]){8}, ARB_TYPE_F32, 0);
    w_tensor(&b, "w", 1, (uint64_t[]){8}, ARB_TYPE_F32, 32);
    w_pad(&b, 32);
    for (int i = 0; i < 64; i++)
        w_u8(&b, 0);
    expect_fail(&b, ARB_E_FORMAT, "tensor 1 'w': duplicate tensor name (first at tensor 0)");
    free(b.p);
}

Test(gguf, rejects_n_dims_0_and_5)
{
    wbuf b = {0};
    one_tensor(&b, 0, NULL, ARB_TYPE_F32, 0, 32);
    expect_fail(&b, ARB_E_FORMAT, "tensor 0 'w': n_dims 0 is not in 1..4");
    one_tensor(&b, 5, (uint64_t[]){1, 1, 1, 1, 1}, ARB_TYPE_F32, 0, 32);
    expect_fail(&b, ARB_E_FORMAT, "n_dims 5");
    free(b.p);
}

Test(gguf, rejects_dims_product_overflow)
{
    wbuf b = {0};
    one_tensor(&b, 2, (uint64_t[]){1ull << 32, 1ull << 32}, ARB_TYPE_F32, 0, 32);
    expect_fail(&b, ARB_E_FORMAT, "element count overflows");
    /* elements fit in i64 but bytes do not: 2^62 F32 elements */
    one_tensor(&b, 2, (uint64_t[]){1ull << 31, 1ull << 31}, ARB_TYPE_F32, 0, 32);
    expect_fail(&b, ARB_E_FORMAT, "byte size overflows");
    free(b.p);
}

Test(gguf, rejects_data_past_end_misaligned_and_bad_shapes)
{
    wbuf b = {0};
    one_tensor(&b, 1, (uint64_t[]){8}, ARB_TYPE_F32, 0, 31);
    expect_fail(&b, ARB_E_FORMAT, "runs past the end of the file");
    one_tensor(&b, 1, (uint64_t[]){8}, ARB_TYPE_F32, 1ull << 40, 32);
    expect_fail(&b, ARB_E_FORMAT, "runs past the end of the file");
    one_tensor(&b, 1, (uint64_t[]){8}, ARB_TYPE_F32, 4, 64);
    expect_fail(&b, ARB_E_FORMAT, "data offset 4 is not a multiple of the alignment 32");
    one_tensor(&b, 1, (uint64_t[]){33}, ARB_TYPE_Q4_1, 0, 64);
    expect_fail(&b, ARB_E_FORMAT, "row length 33 is not a multiple of the Q4_1 block size 32");
    one_tensor(&b, 1, (uint64_t[]){8}, 99, 0, 64);
    expect_fail(&b, ARB_E_FORMAT, "tensor 0 'w': unknown ggml type id 99");
    /* a tensor whose data section would start past the end of the file */
    b.n = 0;
    w_header(&b, 3, 1, 0);
    w_tensor(&b, "w", 1, (uint64_t[]){0}, ARB_TYPE_F32, 0);
    expect_fail(&b, ARB_E_FORMAT, "data section");
    free(b.p);
}

Test(gguf, rejects_bad_alignment)
{
    const uint32_t bad[] = {0, 3, 48};
    wbuf b = {0};
    for (size_t k = 0; k < 3; k++) {
        b.n = 0;
        w_header(&b, 3, 0, 1);
        w_key(&b, "general.alignment", ARB_GGUF_U32), w_u32(&b, bad[k]);
        expect_fail(&b, ARB_E_FORMAT, "is not a power of two");
    }
    b.n = 0;
    w_header(&b, 3, 0, 1);
    w_key(&b, "general.alignment", ARB_GGUF_U64), w_u64(&b, 32);
    expect_fail(&b, ARB_E_FORMAT, "must be u32, found u64");
    free(b.p);
}

/* ---- real vocab files ---- */

Test(gguf, tokenizer_vector_vocab_files_open)
{
    const char *data = getenv("ARBOR_DATA");
    if (!data || !*data)
        cr_skip("ARBOR_DATA not set");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tokenizer-vectors", data);
    DIR *d = opendir(dir);
    if (!d)
        cr_skip("%s absent", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".gguf"))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        arb_gguf *g = NULL;
        arb_err err = {0};
        cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_OK, "%s", err.msg);
        const arb_gguf_value *toks = arb_gguf_find(g, "tokenizer.ggml.tokens");
        cr_assert(toks && toks->type == ARB_GGUF_ARRAY && toks->v.arr.elem_type == ARB_GGUF_STRING, "%s", path);
        cr_assert_gt(toks->v.arr.n, 1000, "%s", path);
        arb_gguf_str s;
        cr_assert_eq(arb_gguf_arr_str(g, toks, toks->v.arr.n - 1, &s), ARB_OK);
        arb_gguf_close(g);
        n++;
    }
    closedir(d);
    cr_assert_gt(n, 0, "no .gguf in %s", dir);
}
