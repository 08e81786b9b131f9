/* topk.h — top-K ids and softmax probabilities of one logits row: the harvest of every
 * evaluated position (TR/GOOSE adjacency tables, tr.h) and the argmax verification uses.
 *
 *     int32_t ids[10];
 *     float sc[10];
 *     arb_topk_softmax(logits_row, n_vocab, 10, ids, sc);  // ids[0] = argmax, sc = probs at T = 1
 *     if (arb_topk_softmax_isa(ARB_TOPK_BASE, logits_row, n_vocab, 10, ids, sc)) ...  // force a path
 *
 * One pass over the row (read once, 4V bytes: at B = 60 nodes the rows are ~12 MB, so decode
 * runs one row per task on the target's threads, arb_ctx_parallel_for). The fastest path the
 * CPU has is picked per call (AVX-512, AVX2+FMA, else plain C). Every path returns the same
 * ids in the same order (ties: lower id first) and bit-identical scores, so draft trees never
 * depend on the machine. Scores are within ~5e-6 relative of the exact softmax over the whole
 * row. Values must be finite or -inf (a row of -inf only gives 1/V each). Thread-safe, no
 * allocation, no state.
 */
#ifndef ARB_TOPK_H
#define ARB_TOPK_H

#include <stdbool.h>
#include <stdint.h>

#define ARB_TOPK_K_MAX 16

enum { ARB_TOPK_BASE, ARB_TOPK_AVX2, ARB_TOPK_AVX512 };

/* ids[0..K) best first, scores[j] = softmax probability of ids[j]; 1 <= K <= ARB_TOPK_K_MAX,
   V >= 1 (V < K: ids and scores beyond V are 0). */
void arb_topk_softmax(const float *row, int V, int K, int32_t *ids, float *scores);
/* The same on one path (tests, benchmarks); false, writing nothing, if this CPU or build
   lacks it. */
bool arb_topk_softmax_isa(int isa, const float *row, int V, int K, int32_t *ids, float *scores);
int arb_topk_isa_best(void); /* the path arb_topk_softmax takes here */
/* ids[0] alone: the index of the largest value, the lowest one among equals (K = 1 without
   the softmax; a vector max, then the first index holding it). V >= 1. */
int32_t arb_topk_argmax(const float *row, int V);
int32_t arb_topk_argmax_isa(int isa, const float *row, int V); /* -1 if the path is unavailable */

#endif
