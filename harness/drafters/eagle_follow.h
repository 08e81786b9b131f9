/* eagle_follow.h — the trained EAGLE head (eagle_head.h) following a generation's committed
 * sequence: the part the greedy `eagle` drafter (EAGLE-2's dynamic tree, eagle.c) and the
 * sampling draft `eagle-dte` (eagle_dte.c) share.
 *
 * The head keeps its own key/value cache over the committed sequence, starting at the last
 * prompt position (the trainer's sequences start there too): row i is the input
 * (f_i, e(x_{i+1})) with f_i the target's final-norm hidden state at position i. After prefill
 * the decoder's `hidden` slot gives the last prompt row; after each step `hidden_path` gives the
 * accepted path's rows and `verified` their tokens, so the rows (f(anchor), e(a1)), ..,
 * (f(a_m), e(next)) are pending; catch_up appends them in one call (causal among themselves) when
 * the next anchor is known, and the last row's output f̂ is the anchor's. The drafters then
 * evaluate their own tree rows in the slots after n_stable (nothing drafted enters the committed
 * part), with the buffers below.
 *
 *     arb_eagle_follow f = {0};
 *     arb_eagle_follow_bind(&f, target, spec.heads, "drafter eagle", pend_max, rows, vis_max, &err);
 *     arb_eagle_follow_begin(&f, n_tokens + pend_max + tree_slots, "drafter eagle", &err);
 *     ... slots: arb_eagle_follow_hidden / _hidden_path / _verified ...
 *     const float *root = arb_eagle_follow_catch_up(&f, anchor);   // in propose
 *     arb_eagle_follow_release(&f);
 */
#ifndef ARB_EAGLE_FOLLOW_H
#define ARB_EAGLE_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eagle_head.h"
#include "engine.h"
#include "error.h"
#include "heads.h"
#include "tree.h"

typedef struct arb_eagle_follow {
    arb_eagle *h;          /* loaded by bind */
    float *w_lm, *emb;     /* [V x E] f32 (the same array when tied) */
    arb_lm_head lm;        /* scores f̂: the target's own output head (quantized, as stored) on a CPU */
    arb_eagle_kv *kv;      /* committed rows [0, n_stable), then the caller's tree slots */
    arb_eagle_ws *ws;
    int cap;               /* kv rows (and ws keys) */
    int n_stable;          /* committed rows in kv */
    int n_pend;            /* pending committed rows (features in pf, tokens in ptok) */
    int pend_max;          /* committed rows a step can add: the anchor + the deepest accepted path */
    int rows, vis_max;     /* rows of one head call; visible slots per row */
    float *pf;             /* [pend_max x E] */
    int32_t *ptok;         /* [pend_max] (the last one is the anchor, known at catch_up) */
    bool path_seen;        /* this step's hidden_path came; the following `hidden` repeats it */
    float *fin, *out;      /* [rows x E] one call's inputs and outputs */
    int32_t *tok;          /* [rows] */
    int *pos, *slot, *nvis, *vis; /* [rows] x 3, [rows x vis_max] */
} arb_eagle_follow;

/* Load the head named by `heads` ("default": the model's default EAGLE head path, else a path;
   its base-model sha256 must match the target's), the f32 output matrix and embedding, and the
   buffers. who prefixes errors ("drafter eagle"); a missing file says how to train one.
   rows >= pend_max (catch_up uses them). */
int arb_eagle_follow_bind(arb_eagle_follow *f, arb_ctx *target, const char *heads, const char *who, int pend_max,
                          int rows, int vis_max, arb_err *err);
void arb_eagle_follow_release(arb_eagle_follow *f); /* NULL-safe fields; leaves f zeroed */

/* Before a generation: a cache of `need` rows (reallocated only when it grows); forgets the
   committed rows. */
int arb_eagle_follow_begin(arb_eagle_follow *f, int need, const char *who, arb_err *err);

/* The decoder's slots (drafter.h). */
void arb_eagle_follow_hidden(arb_eagle_follow *f, const float *h);
void arb_eagle_follow_hidden_path(arb_eagle_follow *f, const float *rows, const int32_t *path, int n_path,
                                  int n_embd);
void arb_eagle_follow_verified(arb_eagle_follow *f, const arb_tree *t, const int32_t *path, int n_path);

/* True when a propose can draft: a pending row exists and tree_slots more fit in the cache. */
bool arb_eagle_follow_ready(const arb_eagle_follow *f, int tree_slots);

/* Append the pending rows (their last token = anchor) to the committed cache; returns the
   anchor's f̂ (E floats in f->out, valid until the next head call). */
const float *arb_eagle_follow_catch_up(arb_eagle_follow *f, int32_t anchor);

/* Head parameters, output matrix (and embedding when untied) and cache, in bytes. */
size_t arb_eagle_follow_bytes(const arb_eagle_follow *f);

#endif
