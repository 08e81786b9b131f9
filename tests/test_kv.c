/* test_kv.c — the KV cache's head-major layout (kv.h), commit moving every head's rows,
 * and the attention's store of an eval's new keys and values (arb_attn_store_new). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "kv.h"

/* a value that names (layer, head, row, element) */
static float tag(int l, int h, int r, int d) { return (float)(((l * 8 + h) * 1000 + r) * 100 + d); }

Test(kv, rows_of_one_head_are_contiguous_and_heads_follow_each_other)
{
    arb_kv kv;
    arb_err err = {0};
    cr_assert_eq(arb_kv_init(&kv, 2, 10, 3, 4, true, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_kv_head_stride(&kv), 40u);
    cr_assert_eq(arb_kv_k(&kv, 0, 0, 1) - arb_kv_k(&kv, 0, 0, 0), 4);
    cr_assert_eq(arb_kv_k(&kv, 0, 1, 0) - arb_kv_k(&kv, 0, 0, 0), 40);
    cr_assert_eq(arb_kv_k(&kv, 1, 0, 0) - arb_kv_k(&kv, 0, 0, 0), 120);
    cr_assert_eq(arb_kv_v(&kv, 1, 2, 9) + 4, kv.v + 2 * 3 * 10 * 4, "the last row ends the buffer");
    arb_kv_release(&kv);
}

Test(kv, commit_moves_the_path_rows_of_every_layer_and_head)
{
    enum { NL = 3, NH = 2, NR = 12, HD = 5 };
    arb_kv kv;
    arb_err err = {0};
    cr_assert_eq(arb_kv_init(&kv, NL, NR, NH, HD, true, &err), ARB_OK, "%s", err.msg);
    kv.n_past = 4;
    for (int l = 0; l < NL; l++)
        for (int h = 0; h < NH; h++)
            for (int r = 0; r < NR; r++)
                for (int d = 0; d < HD; d++) {
                    arb_kv_k(&kv, l, h, r)[d] = tag(l, h, r, d);
                    arb_kv_v(&kv, l, h, r)[d] = -tag(l, h, r, d);
                }
    const int32_t path[3] = {0, 2, 5}; /* scratch rows 4, 6, 9 become rows 4, 5, 6 */
    arb_kv_commit(&kv, path, 3);
    cr_assert_eq(kv.n_past, 7);
    for (int l = 0; l < NL; l++)
        for (int h = 0; h < NH; h++)
            for (int r = 0; r < 7; r++) {
                const int from = r < 4 ? r : 4 + path[r - 4];
                for (int d = 0; d < HD; d++) {
                    cr_assert_eq(arb_kv_k(&kv, l, h, r)[d], tag(l, h, from, d), "K layer %d head %d row %d", l, h, r);
                    cr_assert_eq(arb_kv_v(&kv, l, h, r)[d], -tag(l, h, from, d), "V layer %d head %d row %d", l, h, r);
                }
            }
    arb_kv_release(&kv);
}

Test(kv, bad_shapes_are_errors)
{
    arb_kv kv;
    arb_err err = {0};
    cr_assert_eq(arb_kv_init(&kv, 1, 4, 0, 64, true, &err), ARB_E_INVAL);
    cr_assert_eq(kv.k, NULL);
    cr_assert_eq(arb_kv_init(&kv, 1, 1 << 30, 1 << 16, 1 << 16, true, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "overflow"), "%s", err.msg);
    arb_kv_release(&kv);
}

Test(kv, attention_store_puts_each_new_row_under_its_head)
{
    enum { NH = 3, NR = 9, HD = 4, N = 3, PREFIX = 5 };
    arb_kv kv;
    arb_err err = {0};
    cr_assert_eq(arb_kv_init(&kv, 2, NR, NH, HD, true, &err), ARB_OK, "%s", err.msg);
    float kn[N * NH * HD], vn[N * NH * HD];
    for (int t = 0; t < N; t++)
        for (int h = 0; h < NH; h++)
            for (int d = 0; d < HD; d++) {
                kn[(t * NH + h) * HD + d] = tag(1, h, t, d);
                vn[(t * NH + h) * HD + d] = -tag(1, h, t, d);
            }
    const arb_attn_args a = {.k = arb_kv_k(&kv, 1, 0, 0), .v = arb_kv_v(&kv, 1, 0, 0), .kv_stride = HD,
                             .kv_head_stride = arb_kv_head_stride(&kv), .k_new = kn, .v_new = vn,
                             .n_prefix = PREFIX, .n = N, .n_head_kv = NH, .head_dim = HD};
    arb_attn_store_new(&a, 1, N); /* slices: tokens 1..2, then 0 */
    arb_attn_store_new(&a, 0, 1);
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < NR; r++)
            for (int d = 0; d < HD; d++) {
                const int t = r - PREFIX;
                const float want = t >= 0 && t < N ? tag(1, h, t, d) : 0.0f;
                cr_assert_eq(arb_kv_k(&kv, 1, h, r)[d], want, "K head %d row %d", h, r);
                cr_assert_eq(arb_kv_v(&kv, 1, h, r)[d], -want, "V head %d row %d", h, r);
                cr_assert_eq(arb_kv_k(&kv, 0, h, r)[d], 0.0f, "layer 0 untouched");
            }
    arb_kv_release(&kv);
}
