/* test_gguf_model.c — the GGUF reader and reference dequantisation on the real default
 * model (SmolLM2-135M-Instruct Q4_1). Skips cleanly when the model is not fetched. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "modelfetch.h"
#include "quant.h"

static arb_gguf *open_model(void)
{
    char path[4096];
    arb_err err = {0};
    if (arb_model_resolve("default", path, sizeof path, &err) != ARB_OK)
        cr_skip("default model not available: %s", err.msg);
    arb_gguf *g = NULL;
    cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_OK, "%s", err.msg);
    return g;
}

Test(gguf_model, directory_and_metadata)
{
    arb_gguf *g = open_model();
    arb_err err = {0};
    arb_gguf_str arch;
    uint64_t blocks, embd;
    cr_assert_eq(arb_gguf_version(g), 3);
    cr_assert_eq(arb_gguf_n_tensors(g), 272);
    cr_assert_eq(arb_gguf_get_str(g, "general.architecture", &arch, &err), ARB_OK, "%s", err.msg);
    cr_assert(arb_gguf_str_eq(arch, "llama"));
    cr_assert_eq(arb_gguf_get_u64(g, "llama.block_count", &blocks, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(blocks, 30);
    cr_assert_eq(arb_gguf_get_u64(g, "llama.embedding_length", &embd, &err), ARB_OK);
    cr_assert_eq(embd, 576);
    const arb_gguf_value *toks = arb_gguf_find(g, "tokenizer.ggml.tokens");
    cr_assert(toks && toks->v.arr.n == 49152);
    arb_gguf_str s;
    cr_assert_eq(arb_gguf_arr_str(g, toks, 0, &s), ARB_OK);
    cr_assert(arb_gguf_str_eq(s, "<|endoftext|>"), "token 0 is %.*s", (int)s.len, s.ptr);
    uint64_t total = 0, n_q41 = 0, n_f32 = 0, n_blk = 0;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        cr_assert(arb_type_supported(t->type), "tensor %llu type %s", (unsigned long long)i, arb_type_name(t->type));
        cr_assert_eq(t->offset % arb_gguf_alignment(g), 0);
        total += t->n_bytes;
        n_q41 += t->type == ARB_TYPE_Q4_1;
        n_f32 += t->type == ARB_TYPE_F32;
        n_blk += t->name.len > 4 && !memcmp(t->name.ptr, "blk.", 4);
    }
    /* 1 embedding + 1 output norm + 9 per block (2 norms, q k v o, gate up down) */
    cr_assert_eq(n_blk, 30 * 9);
    cr_assert_eq(n_f32, 61, "norms are F32");
    cr_assert_eq(n_q41, 210, "7 matrices x 30 blocks are Q4_1");
    const arb_gguf_tensor *q = arb_gguf_find_tensor(g, "blk.29.attn_k.weight");
    cr_assert(q && q->ne[0] == 576 && q->ne[1] == 192, "3 kv heads x 64");
    cr_assert_gt(total, 50u << 20);
    arb_gguf_close(g);
}

Test(gguf_model, token_embd_rows_dequantise_to_finite_values)
{
    arb_gguf *g = open_model();
    const arb_gguf_tensor *t = arb_gguf_find_tensor(g, "token_embd.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->type, ARB_TYPE_Q8_0);
    cr_assert(t->n_dims == 2 && t->ne[0] == 576 && t->ne[1] == 49152);
    size_t rb = arb_type_row_bytes(t->type, t->ne[0]);
    cr_assert_eq(rb, 576 / 32 * 34);
    cr_assert_eq(t->n_bytes, rb * 49152);
    float row[576];
    const uint64_t rows[] = {0, 1, 100, 25000, 49151};
    for (size_t k = 0; k < 5; k++) {
        arb_dequant_row(t->type, (const uint8_t *)t->data + rows[k] * rb, row, 576);
        double ss = 0;
        for (int i = 0; i < 576; i++) {
            cr_assert(isfinite(row[i]), "row %llu [%d]", (unsigned long long)rows[k], i);
            ss += (double)row[i] * row[i];
        }
        cr_assert_gt(ss, 0.0, "row %llu is all zeros", (unsigned long long)rows[k]);
    }
    /* a Q4_1 matrix row too */
    const arb_gguf_tensor *w = arb_gguf_find_tensor(g, "blk.0.ffn_down.weight");
    cr_assert(w && w->type == ARB_TYPE_Q4_1 && w->ne[0] == 1536);
    float r2[1536];
    arb_dequant_row(w->type, w->data, r2, 1536);
    for (int i = 0; i < 1536; i++)
        cr_assert(isfinite(r2[i]));
    arb_gguf_close(g);
}
