/* pld.h — prompt lookup: an O(1)-amortised n-gram index over the committed sequence
 * (docs/spec/drafting.md §2.2), Saxena's PLD chain (§2.1) and GOOSE's ContextMatch (§2.3).
 *
 *     arb_ngram_index *ix;
 *     arb_ngram_index_new(1, 3, 4096, &ix, &err);    // n-gram lengths 1..3, capacity in tokens
 *     for (...) arb_ngram_index_append(ix, tok);     // once per committed token
 *     int p = arb_ngram_index_earliest(ix, 3, 10);   // Saxena: start of the matched n-gram
 *     arb_pld_match m;
 *     arb_pld_context_match(ix, 3, 5, 20, false, &m); // GOOSE: most recent, longest n, consensus
 *     arb_ngram_index_free(ix);
 *
 * Each n has an open-addressing table (FNV-1a over the tokens, tokens compared on hit)
 * whose slot keeps the first and last start position of that n-gram; prev[p] links each
 * occurrence to the previous one. Appending is O(n_max), lookups O(1), and nothing is
 * allocated after creation (capacity fixed; arb_ngram_index_reserve grows it between prompts).
 */
#ifndef ARB_PLD_H
#define ARB_PLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

typedef struct arb_ngram_index arb_ngram_index;

int arb_ngram_index_new(int n_min, int n_max, int cap_tokens, arb_ngram_index **out, arb_err *err);
void arb_ngram_index_free(arb_ngram_index *ix);
void arb_ngram_index_clear(arb_ngram_index *ix);
/* Grow to at least cap_tokens (clears the index). Not for the decode loop. */
int arb_ngram_index_reserve(arb_ngram_index *ix, int cap_tokens, arb_err *err);
/* Append one committed token; -1 when full. */
int arb_ngram_index_append(arb_ngram_index *ix, int32_t tok);
const int32_t *arb_ngram_index_tokens(const arb_ngram_index *ix, int *n);
size_t arb_ngram_index_bytes(const arb_ngram_index *ix);

/* Earliest occurrence p of the suffix n-gram with p + n + num_pred <= |S| and
   p + n < |S| - n (Saxena's validity), or -1. O(1). */
int arb_ngram_index_earliest(const arb_ngram_index *ix, int n, int num_pred);
/* Most recent occurrence p of the suffix n-gram other than the suffix itself
   (p + n <= |S| - 1), or -1. O(1). */
int arb_ngram_index_recent(const arb_ngram_index *ix, int n);

/* Saxena PLD: n = n_max down to n_min, earliest valid occurrence, continuation of
   exactly num_pred tokens into out. Returns its length (0 if none); *match_n = n used. */
int arb_pld_draft(const arb_ngram_index *ix, int n_min, int n_max, int num_pred, int32_t *out,
                  int *match_n);

typedef struct arb_pld_match {
    int n;              /* n* = largest matching n, 0 if none */
    int len;            /* continuation length (<= c_max) */
    const int32_t *d;   /* continuation tokens (points into the index's sequence) */
    bool consensus;     /* two different n with matches agree on the first token */
    int match_len;      /* matched context length: longest common suffix ending at p+n (<= 64) */
    /* Stricter consensus readings (docs/greedy-methods.md, "Which reading"): a 5-gram match
       implies 4- and 3-gram matches, often at the same occurrence, so `consensus` is nearly
       always true when n* >= 4. These count only matches at different occurrences. */
    bool consensus_distinct; /* two n whose occurrences differ agree on the first token */
    int agree_len;           /* longest agreement (tokens) between continuations of two
                                different occurrences, capped at c_max; 0 if none */
} arb_pld_match;

/* GOOSE ContextMatch over n in [n_min, n_max], continuation up to c_max tokens; earliest:
   use Saxena's earliest occurrence instead of the most recent (a flag). */
void arb_pld_context_match(const arb_ngram_index *ix, int n_min, int n_max, int c_max, bool earliest,
                           arb_pld_match *m);

#endif
