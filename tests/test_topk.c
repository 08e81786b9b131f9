/* test_topk.c — engine/topk.c, the one top-K + softmax of a logits row (engine.h): what
 * arb_eval_ex's topk output, decode and the drafters use. The brute-force and adversarial
 * comparisons of every SIMD path live in test_tr.c (the adjacency tables' tests); here:
 * explicit ties and -inf rows, K = 1 against the argmax, K = V (a full sort), and a pinned
 * digest of the ids and score bits (the same on every CPU). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* A fixed set of rows through arb_topk_softmax, hashed (FNV-1a over ids and score bits). */
static uint64_t dg_state = 0x9e3779b97f4a7c15ull;
static uint32_t dg_rnd(void)
{
    dg_state ^= dg_state << 13;
    dg_state ^= dg_state >> 7;
    dg_state ^= dg_state << 17;
    return (uint32_t)(dg_state >> 16);
}
static uint64_t dg_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}
static uint64_t topk_digest(float *row) /* row: room for 49152 + 77 floats */
{
    static const int sizes[] = {1, 7, 16, 129, 1000, 49152 + 77};
    uint64_t h = 1469598103934665603ull;
    dg_state = 0x9e3779b97f4a7c15ull;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int kind = 0; kind < 4; kind++) {
            const int V = sizes[si];
            for (int i = 0; i < V; i++) {
                float g = (float)((int)(dg_rnd() % 4001) - 2000) / 150.0f; /* logit-like */
                row[i] = kind == 0 ? g : kind == 1 ? (float)(dg_rnd() % 5) /* ties */
                       : kind == 2 ? (dg_rnd() % 3 ? -INFINITY : g) : -INFINITY;
            }
            for (int K = 1; K <= 16; K += 5) {
                int32_t ids[16];
                float sc[16];
                arb_topk_softmax(row, V, K, ids, sc);
                h = dg_hash(h, ids, sizeof ids[0] * (size_t)K);
                h = dg_hash(h, sc, sizeof sc[0] * (size_t)K);
            }
        }
    return h;
}

/* The digest of these rows' ids and score bits, pinned when the sum's exp2 last changed
   (2026-11-26: floor reduction and a degree-4 polynomial; before it, 0xb2e0f14568e97eda since
   the move from harness/drafters/topk.c at 69db08b). Every SIMD path gives the same bits
   (test_tr.c), so this digest holds on every x86 CPU whatever family it runs: a CPU whose
   results differ, or a change that alters a bit without meaning to, fails here. Accuracy
   against a double-precision softmax is test_tr.c's. */
#define TOPK_DIGEST 0xb084307e28edb271ull

Test(topk, same_bits_on_every_cpu)
{
    float *row = malloc(sizeof(float) * (49152 + 77));
    cr_assert(row);
    cr_assert_eq(topk_digest(row), TOPK_DIGEST);
    free(row);
}

Test(topk, ties_list_the_smaller_id_first)
{
    const float row[] = {2, 5, 5, 1, 5, 2};
    int32_t ids[6];
    float p[6];
    arb_topk_softmax(row, 6, 6, ids, p);
    const int32_t want[] = {1, 2, 4, 0, 5, 3};
    cr_assert(!memcmp(ids, want, sizeof want));
    cr_assert(!memcmp(&p[0], &p[1], sizeof p[0]) && !memcmp(&p[0], &p[2], sizeof p[0]), "equal logits, equal bits");
    cr_assert(!memcmp(&p[3], &p[4], sizeof p[0]));
    double sum = 0, z = 3 * exp(5.0) + 2 * exp(2.0) + exp(1.0);
    for (int j = 0; j < 6; j++)
        sum += p[j];
    cr_assert(fabs(sum - 1.0) < 1e-5, "%.9g", sum);
    cr_assert(fabs(p[0] - exp(5.0) / z) < 1e-5 * p[0], "%.9g vs %.9g", p[0], exp(5.0) / z);
}

Test(topk, minus_infinity_ranks_last_and_weighs_nothing)
{
    const float row[] = {-INFINITY, 0, -INFINITY, 0};
    int32_t ids[4];
    float p[4];
    arb_topk_softmax(row, 4, 4, ids, p);
    const int32_t want[] = {1, 3, 0, 2};
    cr_assert(!memcmp(ids, want, sizeof want));
    cr_assert(fabs(p[0] - 0.5) < 1e-6 && fabs(p[1] - 0.5) < 1e-6, "%.9g %.9g", p[0], p[1]);
    cr_assert_lt(p[2], 1e-30f);
    cr_assert_lt(p[3], 1e-30f);
    const float all[] = {-INFINITY, -INFINITY, -INFINITY};
    arb_topk_softmax(all, 3, 2, ids, p); /* a row of -inf only: uniform, ids in order */
    cr_assert(ids[0] == 0 && ids[1] == 1 && p[0] == 1.0f / 3 && p[1] == 1.0f / 3);
}

Test(topk, k1_is_the_argmax_and_k_equal_v_sorts_the_row)
{
    float row[16];
    int32_t ids[16];
    float p[16];
    dg_state = 12345;
    for (int trial = 0; trial < 400; trial++) {
        const int V = 1 + trial % 16;
        for (int i = 0; i < V; i++) /* few distinct values (ties), some -inf */
            row[i] = dg_rnd() % 7 == 0 ? -INFINITY : (float)(dg_rnd() % 6) * 0.75f;
        arb_topk_softmax(row, V, 1, ids, p);
        cr_assert_eq(ids[0], arb_topk_argmax(row, V), "V %d", V);
        arb_topk_softmax(row, V, V, ids, p);
        bool seen[16] = {false};
        double sum = 0;
        for (int j = 0; j < V; j++) {
            cr_assert(ids[j] >= 0 && ids[j] < V && !seen[ids[j]], "V %d: ids are a permutation", V);
            seen[ids[j]] = true;
            sum += p[j];
            if (j > 0) {
                const float a = row[ids[j - 1]], b = row[ids[j]];
                cr_assert(a > b || (a == b && ids[j - 1] < ids[j]), "V %d rank %d: value desc, then id asc", V, j);
                cr_assert_geq(p[j - 1], p[j]);
            }
        }
        cr_assert(fabs(sum - 1.0) < 1e-5, "V %d: probabilities sum to %.9g", V, sum);
        if (V < 16) { /* K > V pads with id 0, probability 0 */
            arb_topk_softmax(row, V, V + 1, ids, p);
            cr_assert(ids[V] == 0 && p[V] == 0.0f);
        }
    }
}
