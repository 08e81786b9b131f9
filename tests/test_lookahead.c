/* test_lookahead.c — Lookahead decoding's pool, window and drafter (docs/spec/drafting.md §6): the
 * pool's LRU rule, the window's warm-up and Jacobi shift on a hand-traced example, the tree
 * against the reference implementation's attention mask and position ids, n-gram harvesting
 * and guess selection under a deterministic oracle, the presets and parameter validation.
 * The greedy losslessness on the default model is in test_decode (model suite). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "drafters/drafter.h"
#include "drafters/lookahead.h"
#include "method.h"
#include "tree.h"

/* ---- pool ---- */

Test(lookahead, pool_lru_refresh_append_evict)
{
    arb_err err = {0};
    arb_lade_pool *p;
    cr_assert_eq(arb_lade_pool_new(100, 3, 3, 8, &p, &err), ARB_OK, "%s", err.msg); /* grams of 2, G = 3 */
    const int32_t a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {5, 6}, d[2] = {7, 8};
    const int32_t *g;
    cr_assert_eq(arb_lade_pool_get(p, 9, &g), 0);
    arb_lade_pool_put(p, 9, a);
    arb_lade_pool_put(p, 9, b);
    arb_lade_pool_put(p, 9, c);
    cr_assert_eq(arb_lade_pool_get(p, 9, &g), 3);
    cr_assert(!memcmp(g, (int32_t[]){1, 2, 3, 4, 5, 6}, 6 * sizeof *g), "oldest first");
    arb_lade_pool_put(p, 9, a); /* present: moves to the newest end, nothing dropped */
    cr_assert_eq(arb_lade_pool_get(p, 9, &g), 3);
    cr_assert(!memcmp(g, (int32_t[]){3, 4, 5, 6, 1, 2}, 6 * sizeof *g));
    arb_lade_pool_put(p, 9, d); /* full: the least recently put (b) goes */
    cr_assert(!memcmp(g, (int32_t[]){5, 6, 1, 2, 7, 8}, 6 * sizeof *g));
    arb_lade_pool_put(p, 10, b);
    cr_assert_eq(arb_lade_pool_keys(p), 2);
    cr_assert_eq(arb_lade_pool_get(p, 10, &g), 1);
    cr_assert_eq(g[0], 3);
    arb_lade_pool_clear(p);
    cr_assert_eq(arb_lade_pool_keys(p), 0);
    cr_assert_eq(arb_lade_pool_get(p, 9, &g), 0);
    cr_assert_eq(arb_lade_pool_get(p, 10, &g), 0);
    arb_lade_pool_free(p);
}

Test(lookahead, pool_key_capacity_and_empty_guess_set)
{
    arb_err err = {0};
    arb_lade_pool *p;
    cr_assert_eq(arb_lade_pool_new(50, 4, 2, 2, &p, &err), ARB_OK);
    const int32_t g3[3] = {1, 2, 3};
    cr_assert_eq(arb_lade_pool_put(p, 1, g3), 0);
    cr_assert_eq(arb_lade_pool_put(p, 2, g3), 0);
    cr_assert_eq(arb_lade_pool_put(p, 3, g3), -1, "a third key does not fit");
    cr_assert_eq(arb_lade_pool_put(p, 2, g3), 0, "known keys still take grams");
    cr_assert_eq(arb_lade_pool_reserve(p, 1000, &err), ARB_OK);
    cr_assert_eq(arb_lade_pool_keys(p), 0, "reserve clears");
    cr_assert_eq(arb_lade_pool_put(p, 3, g3), 0);
    arb_lade_pool_free(p);
    cr_assert_eq(arb_lade_pool_new(50, 4, 0, 2, &p, &err), ARB_OK, "G = 0: window only");
    const int32_t *g;
    arb_lade_pool_put(p, 1, g3);
    cr_assert_eq(arb_lade_pool_get(p, 1, &g), 0);
    arb_lade_pool_free(p);
    cr_assert_eq(arb_lade_pool_new(50, 1, 2, 2, &p, &err), ARB_E_INVAL);
    cr_assert_null(p);
}

/* ---- window: warm-up and shift, traced by hand for W = 3, N = 4 ---- */

static int32_t lv(const arb_lade_window *w, int l, int c) { return w->lv[l * w->stride + c]; }

/* y[node] = token + 100: a deterministic "model" (each node's argmax depends on its token) */
static void oracle_plus100(const arb_tree *t, int32_t *y)
{
    for (int i = 0; i < t->n; i++)
        y[i] = t->tok[i] + 100;
}

Test(lookahead, window_warmup_and_shift_by_hand)
{
    arb_err err = {0};
    arb_lade_window w;
    cr_assert_eq(arb_lade_window_init(&w, 3, 4, &err), ARB_OK);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 64, &err), ARB_OK);
    /* level 0 := W + N - 3 = 4 tokens drawn from the source; a one-token source fixes them */
    arb_rng rng;
    arb_rng_init(&rng, 0, 0, 0, ARB_STREAM_AUX);
    const int32_t src[4] = {1, 2, 3, 4};
    arb_lade_window_start(&w, src, 4, &rng);
    cr_assert_eq(w.len[0], 4);
    for (int j = 0; j < 4; j++)
        cr_assert(lv(&w, 0, j) >= 1 && lv(&w, 0, j) <= 4, "drawn from the source");
    for (int j = 0; j < 4; j++)
        w.lv[j] = 1 + j; /* level 0 = a b c d = 1 2 3 4 */
    int32_t y[64];
    /* step 1 (fill 0): the anchor and level 0 form one chain */
    arb_tree_reset(&t, 50);
    cr_assert_eq(arb_lade_window_build(&w, &t), 4);
    arb_tree_finalize(&t);
    for (int i = 1; i < 5; i++)
        cr_assert(t.parent[i] == i - 1 && (t.flags[i] & ARB_NODE_NOACCEPT) && t.source[i] == ARB_SRC_LADE_WINDOW);
    oracle_plus100(&t, y);
    arb_lade_window_update(&w, 50, y, 1, NULL);
    cr_assert_eq(w.fill, 1);
    cr_assert(w.len[0] == 3 && lv(&w, 0, 0) == 2 && lv(&w, 0, 2) == 4, "level 0 drops its first token");
    cr_assert(w.len[1] == 4 && lv(&w, 1, 0) == 101 && lv(&w, 1, 3) == 104, "level 1 = all 4 predictions");
    /* step 2 (fill 1): level 1 column c below the anchor (c = 0) or level 0 token c-1 */
    arb_tree_reset(&t, 51);
    cr_assert_eq(arb_lade_window_build(&w, &t), 7);
    arb_tree_finalize(&t);
    const int32_t par2[8] = {-1, 0, 1, 2, 0, 1, 2, 3};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(t.parent[i], par2[i], "node %d", i);
    oracle_plus100(&t, y);
    arb_lade_window_update(&w, 51, y, 1, NULL);
    cr_assert_eq(w.fill, 2, "N - 2 = 2: warm-up over");
    cr_assert(w.len[0] == 2 && lv(&w, 0, 0) == 3 && lv(&w, 0, 1) == 4);
    cr_assert(w.len[1] == 3 && lv(&w, 1, 0) == 102 && lv(&w, 1, 2) == 104);
    cr_assert(w.len[2] == 3 && lv(&w, 2, 0) == 202 && lv(&w, 2, 2) == 204, "predictions without the first");
    /* step 3 (steady): harvest (key, gram) per column, then shift one level */
    arb_lade_pool *p;
    cr_assert_eq(arb_lade_pool_new(1000, 4, 4, 64, &p, &err), ARB_OK);
    arb_tree_reset(&t, 52);
    cr_assert_eq(arb_lade_window_build(&w, &t), 2 + 3 + 3);
    arb_tree_finalize(&t);
    oracle_plus100(&t, y);
    arb_lade_window_update(&w, 52, y, 1, p);
    const int32_t *g;
    cr_assert_eq(arb_lade_pool_get(p, 52, &g), 1, "column 0 is keyed by the anchor");
    cr_assert(!memcmp(g, (int32_t[]){102, 202, 302}, 3 * sizeof *g));
    cr_assert_eq(arb_lade_pool_get(p, 3, &g), 1, "column 1 by level 0's first token");
    cr_assert(!memcmp(g, (int32_t[]){103, 203, 303}, 3 * sizeof *g));
    cr_assert_eq(arb_lade_pool_get(p, 4, &g), 1);
    cr_assert(!memcmp(g, (int32_t[]){104, 204, 304}, 3 * sizeof *g));
    cr_assert_eq(arb_lade_pool_keys(p), 3);
    cr_assert(w.len[0] == 2 && lv(&w, 0, 0) == 103 && lv(&w, 0, 1) == 104, "level 0 := level 1 [1:]");
    cr_assert(lv(&w, 1, 0) == 202 && lv(&w, 1, 2) == 204, "level 1 := level 2");
    cr_assert(lv(&w, 2, 0) == 302 && lv(&w, 2, 2) == 304, "level 2 := predictions");
    arb_lade_pool_free(p);
    arb_tree_release(&t);
    arb_lade_window_release(&w);
}

/* ---- the tree against the reference mask (lade/models/modeling_llama.py) ---- */

/* The reference's j_make_causal_mask_multilevel restricted to the batch (the committed prefix is
   visible to all), with its position ids relative to the anchor: rows are anchor, level 0,
   levels 1..f, then n_guess grams of N-1 tokens. Written from the reference's loops. */
static void ref_mask(const int *len, int f, int n_guess, int n1, bool *m, int *pos, int n)
{
    memset(m, 0, (size_t)n * n * sizeof *m);
    int lg = n_guess * n1, nw = n - lg;
    if (f == 0) { /* is_prefill: causal over the window rows */
        for (int r = 0; r < nw; r++)
            for (int c = 0; c <= r; c++)
                m[r * n + c] = true;
    } else {
        int tiny = len[f]; /* level_sizes[-1]; all_offset = 0 since len[0] + 1 == len[f] */
        cr_assert_eq(len[0] + 1, tiny);
        for (int ll = 0; ll <= f; ll++)
            for (int i = 0; i < tiny; i++) {
                int r = tiny * ll + i;
                for (int c = 0; c <= i; c++)
                    m[r * n + c] = true; /* hm: block 0, causal */
                for (int row = 1; row <= ll; row++)
                    m[r * n + tiny * row + i] = true; /* fill_diagonal_ */
            }
    }
    for (int r = nw; r < n; r++) { /* grams: the anchor and the gram's own prefix */
        m[r * n] = true;
        for (int c = nw + (r - nw) / n1 * n1; c <= r; c++)
            m[r * n + c] = true;
    }
    pos[0] = 0;
    int k = 1;
    for (int j = 0; j < len[0]; j++)
        pos[k++] = 1 + j;
    for (int ll = 1; ll <= f; ll++)
        for (int i = 0; i < len[ll]; i++)
            pos[k++] = ll + (len[0] + 1 - len[ll]) + i;
    for (int q = 0; q < n_guess; q++)
        for (int j = 0; j < n1; j++)
            pos[k++] = 1 + j;
}

static void check_against_reference(int W, int N, int G)
{
    arb_err err = {0};
    arb_lade_window w;
    cr_assert_eq(arb_lade_window_init(&w, W, N, &err), ARB_OK);
    arb_lade_pool *p;
    cr_assert_eq(arb_lade_pool_new(4096, N, G, 4096, &p, &err), ARB_OK);
    int cap = arb_lade_max_nodes(W, N, G);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, cap, &err), ARB_OK);
    arb_rng rng;
    arb_rng_init(&rng, 7, 0, 0, ARB_STREAM_AUX);
    const int32_t src[6] = {10, 11, 12, 13, 14, 15};
    arb_lade_window_start(&w, src, 6, &rng);
    int words = (cap + 63) / 64;
    uint64_t *anc = calloc((size_t)cap * words, sizeof *anc);
    bool *m = malloc((size_t)cap * cap * sizeof *m);
    int *pos = malloc((size_t)cap * sizeof *pos);
    int32_t *y = malloc((size_t)cap * sizeof *y);
    int32_t anchor = 20, max_n = 0;
    for (int step = 0; step < N + 2; step++) {
        arb_tree_reset(&t, anchor);
        cr_assert_geq(arb_lade_window_build(&w, &t), 0);
        int n_guess = 0;
        if (w.fill == N - 2) { /* guesses for the anchor, as the drafter adds them */
            const int32_t *g;
            n_guess = arb_lade_pool_get(p, anchor, &g);
            for (int i = 0; i < n_guess; i++)
                for (int j = 0, par = 0; j < N - 1; j++)
                    par = arb_tree_add(&t, par, g[i * (N - 1) + j], ARB_SRC_LADE_GUESS, -1, NAN);
        }
        arb_tree_finalize(&t);
        max_n = t.n > max_n ? t.n : max_n;
        cr_assert_leq(t.n, cap);
        ref_mask(w.len, w.fill, n_guess, N - 1, m, pos, t.n);
        arb_tree_ancestors(&t, anc, words);
        for (int r = 0; r < t.n; r++) {
            cr_assert_eq(t.depth[r], pos[r], "W%d N%d step %d node %d: position", W, N, step, r);
            for (int c = 0; c < t.n; c++)
                cr_assert_eq((anc[r * words + c / 64] >> (c % 64)) & 1, (uint64_t)m[r * t.n + c],
                             "W%d N%d step %d: node %d sees %d", W, N, step, r, c);
        }
        /* a y that makes the anchor's own gram reappear: the next anchor is level 0's first
           token's column key, so guesses show up once the pool has it */
        for (int i = 0; i < t.n; i++)
            y[i] = 10 + (t.tok[i] * 7 + i) % 6;
        arb_lade_window_update(&w, anchor, y, 1, p);
        anchor = 10 + step % 2; /* anchors recur, so the pool has grams for them */
    }
    cr_assert_eq(max_n > 1 + (W - 1) + (N - 2) * W, true, "some step verified guesses (W%d N%d)", W, N);
    free(anc);
    free(m);
    free(pos);
    free(y);
    arb_tree_release(&t);
    arb_lade_pool_free(p);
    arb_lade_window_release(&w);
}

Test(lookahead, tree_equals_reference_mask_and_positions)
{
    check_against_reference(3, 4, 2);
    check_against_reference(7, 5, 7);
    check_against_reference(15, 5, 15);
    check_against_reference(4, 3, 3);
    check_against_reference(1, 6, 2);
}

Test(lookahead, max_nodes_formula)
{
    cr_assert_eq(arb_lade_max_nodes(7, 5, 7), 56, "docs/spec/drafting.md §6: 56 at (7, 5, 7)");
    cr_assert_eq(arb_lade_max_nodes(15, 5, 15), 1 + 14 + 45 + 60);
    /* W = 1, N = 6: steady 1 + 4 nodes; warm-up step f has 1 + (4 - f) + f (5 - f): 9 at f = 2 */
    cr_assert_eq(arb_lade_max_nodes(1, 6, 0), 9, "a warm-up step is the largest");
}

/* ---- the drafter: harvesting and guess selection on a real token sequence ---- */

/* An oracle "model" that knows one text: the argmax after token v is the token that follows v's
   first occurrence in the text (a bigram table). Tokens: the default model's (SmolLM2) ids for
   "def add(a, b):\n    return a + b\n\nprint(add(1, 2), add(3, 4))" (`arbor tokenize --ids`). */
static const int32_t text[] = {1604, 803, 24,  81,   28,  278, 727, 472, 1003, 253, 1232, 278, 198, 198, 3272,
                               24,   2104, 24, 33,   28,  216, 34,  643, 803,  24,  35,   28,  216, 36,  1292};
#define N_TEXT ((int)(sizeof text / sizeof text[0]))

static int32_t next_of(int32_t v)
{
    for (int i = 0; i + 1 < N_TEXT; i++)
        if (text[i] == v)
            return text[i + 1];
    return text[0];
}

Test(lookahead, drafter_harvests_ngrams_and_proposes_them)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("lookahead-small", &s, &err), ARB_OK);
    const arb_drafter_i *dr = arb_drafter_find("lookahead");
    cr_assert_not_null(dr);
    void *st;
    cr_assert_eq(dr->create(&s, 4096, &st, &err), ARB_OK, "%s", err.msg);
    int cap = arb_method_max_nodes(&s);
    cr_assert_eq(cap, 56);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, cap, &err), ARB_OK);
    int32_t S[256], y[64];
    int n_S = 12;
    memcpy(S, text, (size_t)n_S * sizeof *S); /* prompt = the first 11 tokens, anchor = the 12th */
    cr_assert_eq(dr->begin(st, 256, true, &err), ARB_OK);
    dr->append(st, S, n_S);
    int accepted_total = 0, guess_steps = 0;
    for (int step = 1; step <= 12; step++) {
        arb_step_record rec = {0};
        arb_tree_reset(&t, S[n_S - 1]);
        dr->set_step(st, 0, step);
        dr->propose(st, S, n_S, &t, &rec);
        arb_tree_finalize(&t);
        cr_assert_eq(rec.mode, ARB_MODE_TREE);
        int n_win = 0, n_guess = 0;
        for (int i = 1; i < t.n; i++) {
            bool win = t.source[i] == ARB_SRC_LADE_WINDOW;
            cr_assert_eq(win, (t.flags[i] & ARB_NODE_NOACCEPT) != 0, "window nodes and only they are NOACCEPT");
            n_win += win;
            n_guess += t.source[i] == ARB_SRC_LADE_GUESS;
        }
        cr_assert_eq(n_win, step <= 3 ? 7 + 5 - 3 - (step - 1) + (step - 1) * (7 + 5 - 2 - (step - 1)) : 6 + 3 * 7,
                     "step %d: window nodes", step);
        cr_assert_eq(n_guess % 4, 0, "whole grams of N - 1");
        cr_assert(step > 3 || n_guess == 0, "no guesses during the warm-up");
        guess_steps += n_guess > 0;
        for (int i = 0; i < t.n; i++)
            y[i] = next_of(t.tok[i]);
        /* greedy walk by hand: the longest guess chain that matches the oracle */
        int best = 0;
        for (int i = 1; i < t.n; i++) {
            if (t.source[i] != ARB_SRC_LADE_GUESS)
                continue;
            int d = 0;
            for (int v = i; v > 0 && t.tok[v] == y[t.parent[v]]; v = t.parent[v])
                d++;
            if (d == t.depth[i] && d > best)
                best = d;
        }
        int32_t ids[64];
        for (int i = 0; i < t.n; i++)
            ids[i] = y[i];
        arb_harvest h = {.n = t.n, .K = 1, .tok = t.tok, .ids = ids};
        dr->harvest(st, &h);
        accepted_total += best;
        for (int k = 0; k <= best; k++) /* k accepted + the bonus */
            S[n_S] = next_of(S[n_S - 1]), n_S++;
        dr->append(st, S + n_S - best - 1, best + 1);
    }
    /* the oracle is a bigram chain, so after the warm-up each column converges on a true
       continuation and the pool's grams for the anchor get accepted */
    cr_assert_gt(guess_steps, 0, "guesses were proposed");
    cr_assert_gt(accepted_total, 0, "harvested n-grams were accepted");
    cr_assert_gt(dr->bytes(st), 0);
    arb_tree_release(&t);
    dr->destroy(st);
}

/* ---- presets and parameters ---- */

Test(lookahead, presets_and_validation)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("lookahead", &s, &err), ARB_OK);
    cr_assert(s.la_window == 15 && s.la_ngram == 5 && s.la_guess == 15, "the paper's 7B setting");
    cr_assert_str_eq(s.id, "Lookahead");
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_method_max_nodes(&s), 120);
    cr_assert_eq(arb_method_spec_preset("lookahead-small", &s, &err), ARB_OK);
    cr_assert(s.la_window == 7 && s.la_ngram == 5 && s.la_guess == 7);
    cr_assert_not_null(arb_method_param_find("lookahead", "window"));
    cr_assert_null(arb_method_param_find("goose", "window"), "lookahead parameters only");
    cr_assert_eq(arb_method_param_set(&s, "window", "0", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "window"), "%s", err.msg);
    cr_assert_eq(arb_method_param_set(&s, "ngram", "2", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "ngram"), "%s", err.msg);
    cr_assert_eq(arb_method_param_set(&s, "guess", "x", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "guess"), "%s", err.msg);
    cr_assert_eq(arb_method_param_set(&s, "pool_from_prompt", "maybe", &err), ARB_E_INVAL);
    s.la_window = 64, s.la_ngram = 16, s.la_guess = 64; /* each in range, the tree is too big */
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "nodes per step"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("lookahead", &s, &err), ARB_OK);
    s.temperature = 0.7;
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_UNSUPPORTED, "greedy only");
}

Test(lookahead, prompt_pool_seeds_grams)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("lookahead-small", &s, &err), ARB_OK);
    s.la_prompt_pool = true;
    const arb_drafter_i *dr = arb_drafter_find("lookahead");
    void *st;
    cr_assert_eq(dr->create(&s, 4096, &st, &err), ARB_OK);
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, arb_method_max_nodes(&s), &err), ARB_OK);
    int32_t S[64];
    memcpy(S, text, N_TEXT * sizeof *S);
    S[N_TEXT] = 28; /* anchor ",": in the prompt at 4, 19 and 26 */
    cr_assert_eq(dr->begin(st, 64, true, &err), ARB_OK);
    dr->append(st, S, N_TEXT + 1);
    int32_t ids[64] = {0};
    for (int step = 1; step <= 3; step++) { /* past the warm-up */
        arb_step_record rec = {0};
        arb_tree_reset(&t, 28);
        dr->set_step(st, 0, step);
        dr->propose(st, S, N_TEXT + 1, &t, &rec);
        arb_tree_finalize(&t);
        for (int i = 0; i < t.n; i++)
            ids[i] = 3; /* predictions that never form a gram keyed by "," */
        arb_harvest h = {.n = t.n, .K = 1, .tok = t.tok, .ids = ids};
        dr->harvest(st, &h);
    }
    arb_step_record rec = {0};
    arb_tree_reset(&t, 28);
    dr->propose(st, S, N_TEXT + 1, &t, &rec);
    int first = -1, n_guess = 0;
    for (int i = 1; i < t.n; i++)
        if (t.source[i] == ARB_SRC_LADE_GUESS) {
            first = first < 0 ? i : first;
            n_guess++;
        }
    /* the prompt's grams after ",": (278 727 472 1003) (216 34 643 803) (216 36 1292 -) is cut
       short; the warm-up harvests nothing, so these two are all */
    cr_assert_eq(n_guess, 2 * 4);
    cr_assert_eq(t.tok[first], 278, "oldest prompt gram first");
    cr_assert_eq(t.tok[first + 4], 216);
    cr_assert_eq(t.parent[first], 0);
    arb_tree_release(&t);
    dr->destroy(st);
}
