/* tr.h — adjacency tables of top-K successors harvested from the target's logits, and
 * the Token Recycling drafter (docs/spec/drafting.md §3, GOOSE's two tiers §4.2).
 *
 *     arb_adj *a;
 *     arb_adj_new(n_vocab, 10, 15, &a, &err);        // K = 10, bigram tier 2^15 entries (0: off)
 *     arb_topk_softmax(logits_row, V, 10, ids, sc);  // best first, scores = softmax probs (engine.h)
 *     arb_adj_write(a, prev_tok, tok, ids, sc);      // unigram row tok (+ bigram (prev, tok))
 *     int n = arb_adj_succ(a, prev, tok, true, ids, sc, &from_bigram);
 *     arb_adj_free(a);
 *
 * Unigram tier: dense |V| x K ids (zero-filled, as the TR reference) + u16 scores (1/65535
 * units) + a written flag. Bigram tier: open addressing on (prev, cur), 8 probes, the oldest
 * entry in the probe window is overwritten when full (bounded memory, no allocation).
 * Writes overwrite (TR/GOOSE "last write wins").
 */
#ifndef ARB_TR_H
#define ARB_TR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */
#include "tree.h"

#define ARB_ADJ_K_MAX ARB_TOPK_K_MAX

typedef struct arb_adj arb_adj;

int arb_adj_new(int n_vocab, int K, int bigram_log2, arb_adj **out, arb_err *err);
void arb_adj_free(arb_adj *a);
void arb_adj_clear(arb_adj *a);
void arb_adj_write(arb_adj *a, int32_t prev, int32_t tok, const int32_t *ids, const float *scores);
/* arb_adj_write for n rows (prev[i] or, prev NULL, -1; tok[i]; ids / scores at i * stride),
   in order, with every row's table lines prefetched first. */
void arb_adj_write_rows(arb_adj *a, int n, const int32_t *prev, const int32_t *tok, const int32_t *ids,
                        const float *scores, int stride);
/* Unigram row of tok: K ids (zeros if never written); *written whether it ever was. */
const int32_t *arb_adj_row(const arb_adj *a, int32_t tok, bool *written);
/* succ(prev, tok): bigram list (if use_bigram and present), then unigram entries not yet
   listed, up to K, each with its score. Returns the count; *bigram_hit if tier 2 answered. */
int arb_adj_succ(const arb_adj *a, int32_t prev, int32_t tok, bool use_bigram, int32_t *ids,
                 float *scores, bool *bigram_hit);
int arb_adj_fill(const arb_adj *a);     /* non-empty unigram rows */
int arb_adj_k(const arb_adj *a);
size_t arb_adj_bytes(const arb_adj *a);


/* TR template "2.2.2": parent[] and rank[] of the 81 nodes (anchor first, canonical
   order). Returns the node count; cap must be >= 81. */
int arb_tr_template(int32_t *parent, int16_t *rank, int cap);
/* Parse index-path "choices" text ("[[0],[1],[0,0]]") into canonical-order parent/rank
   arrays (anchor = node 0); checks prefix- and rank-closure. Returns nodes or < 0. */
int arb_choices_parse(const char *text, int32_t *parent, int16_t *rank, int cap, arb_err *err);
/* Prune a canonical-order template (parent/rank, n nodes, anchor first) in place to its
   `budget` most probable nodes under the positional acceptance p (0-terminated, p[r] = rank r's;
   a node's probability is the product along its path: Sequoia's rank-only model). The kept set
   is prefix-closed (a child is never likelier than its parent; ties keep the earlier node) and
   stays in canonical order. Returns the node count (min(n, budget), >= 1); *tau (when not NULL)
   gets the expected tokens per step under p, the kept probabilities summed (anchor 1). */
int arb_tr_template_prune(int32_t *parent, int16_t *rank, int n, const double *p, int budget, double *tau);

#endif
