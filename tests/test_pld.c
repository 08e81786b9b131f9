/* test_pld.c — the n-gram index against brute force, Saxena PLD, GOOSE ContextMatch
 * (docs/spec/drafting.md §2). */
#include <criterion/criterion.h>
#include <string.h>

#include "drafters/pld.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

static bool eq_at(const int32_t *S, int a, int b, int n)
{
    return !memcmp(S + a, S + b, (size_t)n * sizeof *S);
}

static int brute_earliest(const int32_t *S, int L, int n, int num_pred)
{
    if (L < n)
        return -1;
    for (int p = 0; p + n <= L; p++)
        if (eq_at(S, p, L - n, n)) {
            if (p + n + num_pred <= L && p + n < L - n)
                return p;
        }
    return -1;
}

static int brute_recent(const int32_t *S, int L, int n)
{
    if (L < n)
        return -1;
    for (int p = L - n - 1; p >= 0; p--)
        if (eq_at(S, p, L - n, n))
            return p;
    return -1;
}

Test(pld, index_lookups_equal_brute_force)
{
    arb_ngram_index *ix;
    cr_assert_eq(arb_ngram_index_new(1, 5, 2000, &ix, NULL), ARB_OK);
    int32_t S[2000];
    for (int trial = 0; trial < 12; trial++) {
        int vocab = 2 + trial % 4, L = 200 + (int)(rnd() % 1800);
        arb_ngram_index_clear(ix);
        for (int i = 0; i < L; i++) {
            S[i] = (int32_t)(rnd() % (uint32_t)vocab);
            cr_assert_eq(arb_ngram_index_append(ix, S[i]), 0);
            if (i % 7 && i < L - 1)
                continue; /* check every 7th prefix, plus the full sequence */
            for (int n = 1; n <= 5; n++) {
                int np = 1 + (int)(rnd() % 12);
                cr_assert_eq(arb_ngram_index_earliest(ix, n, np), brute_earliest(S, i + 1, n, np),
                             "earliest n=%d L=%d", n, i + 1);
                cr_assert_eq(arb_ngram_index_recent(ix, n), brute_recent(S, i + 1, n), "recent n=%d L=%d", n,
                             i + 1);
            }
        }
        int n;
        const int32_t *T = arb_ngram_index_tokens(ix, &n);
        cr_assert_eq(n, L);
        cr_assert(!memcmp(T, S, (size_t)L * sizeof *S));
    }
    cr_assert_eq(arb_ngram_index_earliest(ix, 6, 1), -1, "n outside the configured lengths");
    arb_ngram_index_free(ix);
}

Test(pld, append_refuses_past_capacity_and_reserve_grows)
{
    arb_ngram_index *ix;
    arb_err err = {0};
    cr_assert_eq(arb_ngram_index_new(3, 2, 10, &ix, &err), ARB_E_INVAL);
    cr_assert_null(ix);
    cr_assert_eq(arb_ngram_index_new(1, 3, 4, &ix, &err), ARB_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(arb_ngram_index_append(ix, i), 0);
    cr_assert_eq(arb_ngram_index_append(ix, 9), -1);
    cr_assert_eq(arb_ngram_index_reserve(ix, 100, &err), ARB_OK);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(arb_ngram_index_append(ix, i % 3), 0);
    cr_assert_eq(arb_ngram_index_recent(ix, 3), 100 - 3 - 3);
    cr_assert_gt(arb_ngram_index_bytes(ix), 100 * 4);
    arb_ngram_index_free(ix);
}

static arb_ngram_index *from(const int32_t *S, int L, int nmin, int nmax)
{
    arb_ngram_index *ix;
    cr_assert_eq(arb_ngram_index_new(nmin, nmax, 256, &ix, NULL), ARB_OK);
    for (int i = 0; i < L; i++)
        arb_ngram_index_append(ix, S[i]);
    return ix;
}

Test(pld, saxena_hand_cases)
{
    /* "a b c d e f g h i j k l a b c": the 3-gram "a b c" matches at 0; with num_pred = 4
       the draft is "d e f g" */
    int32_t S[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2, 3};
    arb_ngram_index *ix = from(S, 15, 1, 3);
    int32_t out[16];
    int n;
    cr_assert_eq(arb_pld_draft(ix, 1, 3, 4, out, &n), 4);
    cr_assert_eq(n, 3);
    cr_assert(out[0] == 4 && out[1] == 5 && out[2] == 6 && out[3] == 7);
    /* num_pred 10: start 3, end 13 <= |S| = 15: still a full continuation */
    cr_assert_eq(arb_pld_draft(ix, 1, 3, 10, out, &n), 10);
    cr_assert_eq(out[9], 1);
    /* num_pred 13: no full continuation at n = 3, 2 or 1 */
    cr_assert_eq(arb_pld_draft(ix, 1, 3, 13, out, &n), 0);
    cr_assert_eq(n, 0);
    arb_ngram_index_free(ix);
    /* match too close to the end: "x y z x y z" — the occurrence at 0 continues with x y z,
       which overlaps the suffix: start 3 < |S| - n = 3 fails, so n = 3 is skipped; n = 2
       ("y z" at 1: start 3 < 4 ok, end 3 + 2 = 5 <= 6) wins. */
    int32_t T[] = {7, 8, 9, 7, 8, 9};
    ix = from(T, 6, 1, 3);
    cr_assert_eq(arb_pld_draft(ix, 1, 3, 2, out, &n), 2);
    cr_assert_eq(n, 2);
    cr_assert(out[0] == 7 && out[1] == 8);
    arb_ngram_index_free(ix);
}

Test(pld, context_match_longest_n_and_consensus)
{
    /* 5-gram, 4-gram and 3-gram matches all continue with 50: consensus */
    int32_t A[] = {1, 2, 3, 4, 5, 50, 51, 52, 9, 9, 1, 2, 3, 4, 5};
    arb_ngram_index *ix = from(A, 15, 3, 5);
    arb_pld_match m;
    arb_pld_context_match(ix, 3, 5, 20, false, &m);
    cr_assert_eq(m.n, 5);
    cr_assert_eq(m.len, 10, "continuation up to the end of S (shorter than C_max)");
    cr_assert_eq(m.d[0], 50);
    cr_assert(m.consensus);
    cr_assert_not(m.consensus_distinct, "all three lengths matched the same occurrence");
    cr_assert_eq(m.agree_len, 0);
    cr_assert_geq(m.match_len, 5);
    arb_ngram_index_free(ix);
    /* the 4-gram "2 3 4 5" last occurred (more recently) followed by 60, the 5-gram only at 0:
       n* = 5 with continuation 50; 4-gram and 3-gram agree on 60 -> consensus from them */
    int32_t B[] = {1, 2, 3, 4, 5, 50, 7, 2, 3, 4, 5, 60, 8, 1, 2, 3, 4, 5};
    ix = from(B, 18, 3, 5);
    arb_pld_context_match(ix, 3, 5, 3, false, &m);
    cr_assert_eq(m.n, 5);
    cr_assert_eq(m.d[0], 50);
    cr_assert_eq(m.len, 3);
    cr_assert(m.consensus, "3- and 4-gram both continue with 60");
    cr_assert_not(m.consensus_distinct, "... from the same occurrence");
    arb_ngram_index_free(ix);
    /* two different occurrences agree: the 5-gram's (start 5: 50 51 52) and the more recent
       3-gram's (start 12: 50 51 53) agree on 2 tokens */
    int32_t F[] = {1, 2, 3, 4, 5, 50, 51, 52, 8, 3, 4, 5, 50, 51, 53, 9, 1, 2, 3, 4, 5};
    ix = from(F, 21, 3, 5);
    arb_pld_context_match(ix, 3, 5, 20, false, &m);
    cr_assert_eq(m.n, 5);
    cr_assert_eq(m.d[0], 50);
    cr_assert(m.consensus && m.consensus_distinct);
    cr_assert_eq(m.agree_len, 2);
    arb_ngram_index_free(ix);
    /* only the 3-gram matches, nothing to agree with */
    int32_t C[] = {3, 4, 5, 70, 1, 1, 3, 4, 5};
    ix = from(C, 9, 3, 5);
    arb_pld_context_match(ix, 3, 5, 20, false, &m);
    cr_assert_eq(m.n, 3);
    cr_assert_eq(m.d[0], 70);
    cr_assert_not(m.consensus);
    /* earliest vs most recent */
    arb_ngram_index_free(ix);
    int32_t D[] = {3, 4, 5, 70, 3, 4, 5, 80, 3, 4, 5};
    ix = from(D, 11, 3, 5);
    arb_pld_context_match(ix, 3, 5, 20, false, &m);
    cr_assert_eq(m.d[0], 80);
    arb_pld_context_match(ix, 3, 5, 20, true, &m);
    cr_assert_eq(m.d[0], 70);
    arb_ngram_index_free(ix);
    /* no match at all */
    int32_t E[] = {1, 2, 3, 4, 5, 6};
    ix = from(E, 6, 3, 5);
    arb_pld_context_match(ix, 3, 5, 20, false, &m);
    cr_assert_eq(m.n, 0);
    cr_assert_eq(m.len, 0);
    arb_ngram_index_free(ix);
}
