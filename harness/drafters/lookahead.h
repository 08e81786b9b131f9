/* lookahead.h — Lookahead decoding (Fu et al. 2024; docs/spec/drafting.md §6): the n-gram pool,
 * the 2-D Jacobi window, and the drafter that lays both out as one tree.
 *
 *     arb_lade_pool *p;
 *     arb_lade_pool_new(n_vocab, 5, 15, 4096, &p, &err);  // N = 5 (grams of N-1 = 4), G = 15
 *     arb_lade_pool_put(p, key, gram);                    // LRU: refresh, append, or evict oldest
 *     const int32_t *g; int n = arb_lade_pool_get(p, key, &g);  // n grams, oldest first
 *
 *     arb_lade_window w;
 *     arb_lade_window_init(&w, 15, 5, &err);
 *     arb_lade_window_start(&w, prompt, n_prompt, &rng);  // level 0 := W+N-3 random prompt tokens
 *     arb_tree_reset(&t, anchor); arb_lade_window_build(&w, &t);  // window nodes below the anchor
 *     ... arb_eval ...; y[i] = argmax of node i
 *     arb_lade_window_update(&w, anchor, y, 1, p);        // Jacobi step (+ pool harvest, shift)
 *     arb_lade_window_release(&w);
 *
 * The window is a tree (§6.1): column c's level-0 token is the anchor (c = 0) or level0[c-1],
 * level l >= 1 of column c hangs below level l-1 of column c, so node (l, c) sits at depth
 * c + l and sees exactly the reference mask's tokens (docs/greedy-methods.md "Lookahead").
 * Nothing here allocates after init / reserve.
 */
#ifndef ARB_LOOKAHEAD_H
#define ARB_LOOKAHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "sample.h"
#include "tree.h"

#define ARB_LADE_N_MAX 16  /* largest n-gram size N */
#define ARB_LADE_W_MAX 64  /* largest window W */
#define ARB_LADE_G_MAX 64  /* largest guess set G */
#define ARB_LADE_NODES_MAX 512 /* largest step tree: the engine's default n_batch_max */

/* ---- the n-gram pool: key token -> up to G grams of N-1 tokens, least recently put first ---- */
typedef struct arb_lade_pool arb_lade_pool;

/* Room for cap_keys distinct key tokens (capped at n_vocab). */
int arb_lade_pool_new(int n_vocab, int ngram, int guess, int cap_keys, arb_lade_pool **out, arb_err *err);
void arb_lade_pool_free(arb_lade_pool *p); /* NULL-safe */
void arb_lade_pool_clear(arb_lade_pool *p); /* O(keys used) */
/* Grow to cap_keys keys (clears). Between prompts only. */
int arb_lade_pool_reserve(arb_lade_pool *p, int cap_keys, arb_err *err);
/* The reference's LRU rule: an equal gram moves to the newest end; else append while fewer
   than G; else drop the oldest. Returns 0, or -1 when the key table is full (gram dropped). */
int arb_lade_pool_put(arb_lade_pool *p, int32_t key, const int32_t *gram);
/* The grams of key, oldest first (*grams: n x (N-1) tokens); 0 if none. */
int arb_lade_pool_get(const arb_lade_pool *p, int32_t key, const int32_t **grams);
int arb_lade_pool_keys(const arb_lade_pool *p); /* keys in use */
size_t arb_lade_pool_bytes(const arb_lade_pool *p);

/* ---- the 2-D window: N-1 levels; level 0 is the oldest ---- */
typedef struct arb_lade_window {
    int W, N;           /* window columns, n-gram size */
    int fill;           /* levels above level 0 holding tokens: 0 .. N-2 (N-2: warm-up over) */
    int len[ARB_LADE_N_MAX]; /* tokens per level (steady state: W-1, then W for levels 1..N-2) */
    int stride;         /* W + N: room per level */
    int32_t *lv;        /* [(N-1) * stride]: level l at lv + l * stride */
    int last_node0;     /* batch index of the newest level's first node in the last build */
} arb_lade_window;

int arb_lade_window_init(arb_lade_window *w, int W, int N, arb_err *err);
void arb_lade_window_release(arb_lade_window *w); /* NULL-safe, idempotent */
/* Warm-up start: level 0 := W+N-3 tokens drawn uniformly from src[0..n_src) (n_src >= 1). */
void arb_lade_window_start(arb_lade_window *w, const int32_t *src, int n_src, arb_rng *rng);
/* Add the window's nodes (NOACCEPT, ARB_SRC_LADE_WINDOW) below the anchor of t (node 0);
   returns the nodes added, or -1 if the tree is full. */
int arb_lade_window_build(arb_lade_window *w, arb_tree *t);
/* One Jacobi step from the argmax of every node of the last build (y[i * y_stride]):
   the newest level's predictions form the next level. Once the warm-up is over, each column
   c's n-gram (level 1..N-2 tokens, new token) is first put in pool under column c's level-0
   token (the anchor for c = 0). Then the levels shift down by one. */
void arb_lade_window_update(arb_lade_window *w, int32_t anchor, const int32_t *y, int y_stride,
                            arb_lade_pool *pool);
/* Nodes of the largest tree (anchor included) a drafter with these parameters builds. */
int arb_lade_max_nodes(int W, int N, int G);

#endif
