/* test_cuda_host.c — the parts of the CUDA backend that run on the host (engine/cuda/
 * cuda_host.c: positions, key-row lists, device memory sizes), backend names, and the
 * error a CUDA load gives where no device (or no CUDA build) is. Unit suite: no GPU. */
#include <criterion/criterion.h>
#include <string.h>

#include "cuda/cuda.h"
#include "engine.h"
#include "quant.h"

Test(cuda_host, positions_follow_depth)
{
    const int32_t par[7] = {-1, 0, 1, 0, -1, 4, 2};
    int32_t pos[7];
    cr_assert(arb_cuda_tree_positions(par, 7, 10, pos));
    const int32_t want[7] = {10, 11, 12, 11, 10, 11, 13};
    cr_assert_arr_eq(pos, want, sizeof want);
    const int32_t bad[3] = {-1, 2, 0};
    cr_assert_not(arb_cuda_tree_positions(bad, 3, 0, pos), "parent 2 of node 1 is not before it");
}

Test(cuda_host, key_rows_are_prefix_ancestors_self)
{
    const int32_t par[6] = {-1, 0, 1, 0, -1, 3};
    int32_t rows[16];
    cr_assert_eq(arb_cuda_key_rows(par, 5, 3, rows, 16), 3 + 3);
    const int32_t want5[6] = {0, 1, 2, 3 + 0, 3 + 3, 3 + 5};
    cr_assert_arr_eq(rows, want5, sizeof want5);
    cr_assert_eq(arb_cuda_key_rows(par, 4, 0, rows, 16), 1);
    cr_assert_eq(rows[0], 4);
    /* a short buffer: the count is still the full length, nothing written past cap */
    rows[2] = 99;
    cr_assert_eq(arb_cuda_key_rows(par, 2, 3, rows, 2), 6);
    cr_assert_eq(rows[2], 99);
}

static arb_cuda_mat_desc mat(uint32_t type, int n_in, int n_out)
{
    static const uint8_t dummy[1];
    return (arb_cuda_mat_desc){.type = type, .n_in = n_in, .n_out = n_out,
                               .row_bytes = arb_type_row_bytes(type, (uint64_t)n_in), .data = dummy};
}

Test(cuda_host, weight_bytes_count_every_matrix_once)
{
    static const float v[64];
    arb_cuda_layer_desc L = {.attn_norm = v, .ffn_norm = v, .wq = mat(ARB_TYPE_Q4_0, 64, 64),
                             .wk = mat(ARB_TYPE_Q4_1, 64, 32), .wv = mat(ARB_TYPE_Q8_0, 64, 32),
                             .wo = mat(ARB_TYPE_Q4_K, 256, 64), .w_gate = mat(ARB_TYPE_Q6_K, 256, 128),
                             .w_up = mat(ARB_TYPE_F16, 64, 128), .w_down = mat(ARB_TYPE_F32, 128, 64)};
    arb_cuda_model_desc d = {.n_vocab = 100, .n_embd = 64, .n_layer = 1, .n_head = 4, .n_head_kv = 2,
                             .head_dim = 16, .n_ff = 128, .tok_embd = mat(ARB_TYPE_Q8_0, 64, 100),
                             .output_norm = v, .layers = &L};
    d.output = d.tok_embd; /* tied */
    size_t raw = 0, h = 0;
    cr_assert(arb_cuda_weight_bytes(&d, &raw, &h));
    /* raw: the blocks of 8 matrices (tied head once) + 3 norm vectors, each rounded to 256 */
    size_t want = 0;
    const arb_cuda_mat_desc *ms[8] = {&d.tok_embd, &L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
    size_t want_h = 0;
    for (int i = 0; i < 8; i++) {
        want += ((size_t)ms[i]->n_out * ms[i]->row_bytes + 255) / 256 * 256;
        want_h += ((size_t)ms[i]->n_out * ms[i]->n_in * 2 + 255) / 256 * 256;
    }
    want += 3 * 256;
    cr_assert_eq(raw, want);
    cr_assert_eq(h, want_h, "FP16 copies of the head and the 7 layer matrices");
    L.wq.type = ARB_TYPE_Q5_0;
    cr_assert_not(arb_cuda_weight_bytes(&d, &raw, &h), "Q5_0 is not read by the kernels");
}

Test(cuda_host, packed_bytes_cover_the_gemv_matrices_of_packed_types)
{
    static const float v[64];
    int qb = 0, sb = 0;
    cr_assert(arb_cuda_packed_block(ARB_TYPE_Q4_0, &qb, &sb) && qb == 16 && sb == 2);
    cr_assert(arb_cuda_packed_block(ARB_TYPE_Q4_1, &qb, &sb) && qb == 16 && sb == 4);
    cr_assert(arb_cuda_packed_block(ARB_TYPE_Q8_0, &qb, &sb) && qb == 32 && sb == 2);
    cr_assert_not(arb_cuda_packed_block(ARB_TYPE_Q4_K, &qb, &sb), "K-quants stay in their GGUF blocks");
    cr_assert_not(arb_cuda_packed_block(ARB_TYPE_F16, &qb, &sb));
    /* packed quants and scales are exactly the GGUF bytes, split in two */
    cr_assert_eq(16 + 2, (int)arb_type_row_bytes(ARB_TYPE_Q4_0, 32));
    cr_assert_eq(16 + 4, (int)arb_type_row_bytes(ARB_TYPE_Q4_1, 32));
    cr_assert_eq(32 + 2, (int)arb_type_row_bytes(ARB_TYPE_Q8_0, 32));
    arb_cuda_layer_desc L = {.attn_norm = v, .ffn_norm = v, .wq = mat(ARB_TYPE_Q4_0, 256, 64),
                             .wk = mat(ARB_TYPE_Q4_1, 256, 32), .wv = mat(ARB_TYPE_Q8_0, 256, 32),
                             .wo = mat(ARB_TYPE_Q4_K, 256, 256), .w_gate = mat(ARB_TYPE_Q6_K, 256, 128),
                             .w_up = mat(ARB_TYPE_F16, 256, 128), .w_down = mat(ARB_TYPE_F32, 128, 256)};
    arb_cuda_model_desc d = {.n_vocab = 100, .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2,
                             .head_dim = 64, .n_ff = 128, .tok_embd = mat(ARB_TYPE_Q8_0, 256, 100),
                             .output_norm = v, .layers = (arb_cuda_layer_desc[2]){L, L}};
    d.output = d.tok_embd; /* tied: packed once, as the head */
    /* rows of 256 elements padded to one chunk of 32 blocks: per layer wq 64 rows x 32
       blocks (16 B + 2 B), wk 32 x 32 (16 + 4), wv 32 x 32 (32 + 2); head 100 x 32
       (32 + 2); each array rounded up to 256 bytes */
    const size_t layer = 32768 + 4096 + 16384 + 4096 + 32768 + 2048;
    const size_t head = 102400 + 6400;
    cr_assert_eq(arb_cuda_packed_bytes(&d), 2 * layer + head);
}

Test(cuda_host, backend_names)
{
    arb_load_opts o = arb_load_default_opts();
    arb_err err = {0};
    cr_assert_str_eq(arb_load_opts_backend_name(&o), "cpu");
    cr_assert_eq(arb_load_opts_set_backend(&o, "cuda-exact", &err), ARB_OK);
    cr_assert(o.backend == ARB_BACKEND_CUDA && o.gpu_exact);
    cr_assert_str_eq(arb_load_opts_backend_name(&o), "cuda-exact");
    cr_assert_eq(arb_load_opts_set_backend(&o, "cuda", &err), ARB_OK);
    cr_assert(o.backend == ARB_BACKEND_CUDA && !o.gpu_exact);
    cr_assert_eq(arb_load_opts_set_backend(&o, "gpu", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "'gpu'") && strstr(err.msg, "cuda-exact"), "%s", err.msg);
}

Test(cuda_host, no_device_is_a_clear_error)
{
    if (arb_cuda_device_count() > 0)
        cr_skip_test("a CUDA device is present (the gpu suite covers loading)");
    arb_gpu_info di;
    arb_err err = {0};
    cr_assert_eq(arb_cuda_device_get(&di, &err), ARB_E_NODEVICE);
    cr_assert(strstr(err.msg, "cuda") != NULL, "%s", err.msg);
    arb_cuda_model *cm = NULL;
    arb_cuda_model_desc d = {.path = "x.gguf"};
    cr_assert_eq(arb_cuda_model_new(&d, false, &cm, &err), ARB_E_NODEVICE);
    cr_assert_null(cm);
}
