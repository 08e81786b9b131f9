/* rest.h — REST retrieval drafting (He et al. 2024; docs/spec/drafting.md §7): the longest
 * suffix of the context found in a datastore, the continuations at its occurrences counted
 * in a trie, and the most frequent prefixes drafted as a tree (docs/greedy-methods.md "REST").
 *
 *     arb_rest_opts o = arb_rest_default_opts();          // 16..2, 5000 matches, 10 tokens, 64 nodes
 *     arb_rest_retriever *r;
 *     arb_rest_retriever_new(&o, &r, &err);               // every buffer sized here
 *     arb_rest_result res;
 *     int n = arb_rest_retrieve(r, ds, S, n_S, &res);     // no allocation
 *     for (int i = 0; i < n; i++)                         // parents before children
 *         add(res.parent[i], res.tok[i], res.count[i]);   // parent -1 = the anchor
 *     arb_rest_retriever_free(r);
 *
 * The drafter `rest` (arb_drafter_rest in drafter.h) loads its datastore at bind time, when
 * the target model's tokenizer is known, and refuses one built for another tokenizer.
 */
#ifndef ARB_REST_H
#define ARB_REST_H

#include <stdint.h>

#include "datastore.h"

typedef struct arb_rest_opts {
    int suffix_max;   /* longest context suffix tried (16) */
    int suffix_min;   /* shortest (2); no match at any length = an AR step */
    int max_matches;  /* occurrences used, the first in suffix-array order (5000) */
    int cont_len;     /* continuation tokens per occurrence (10) */
    int n_draft;      /* trie nodes kept, the anchor excluded (64) */
} arb_rest_opts;

arb_rest_opts arb_rest_default_opts(void);

typedef struct arb_rest_retriever arb_rest_retriever;

typedef struct arb_rest_result {  /* views into the retriever, valid until the next call */
    int match_len;         /* suffix length that matched, 0 if none */
    int n_matches;         /* occurrences used (<= max_matches) */
    int n_trie;            /* trie nodes built, the root excluded */
    const int32_t *tok;    /* [n] drafted tokens, parents before children */
    const int32_t *parent; /* [n] index into these arrays, -1 = child of the anchor */
    const int32_t *count;  /* [n] continuations through the node */
    const int32_t *parent_count; /* [n] continuations through its parent (n_matches for the anchor) */
} arb_rest_result;

int arb_rest_retriever_new(const arb_rest_opts *o, arb_rest_retriever **out, arb_err *err);
void arb_rest_retriever_free(arb_rest_retriever *r); /* NULL-safe */
size_t arb_rest_retriever_bytes(const arb_rest_retriever *r);
/* Retrieve for the context S[0..n_S) (its last token is the anchor). Keeps the n_draft best
   trie nodes by (count desc, depth asc, first seen), a prefix-closed set because a node never
   counts more than its parent. Returns the number kept. Allocates nothing. */
int arb_rest_retrieve(arb_rest_retriever *r, const arb_datastore *ds, const int32_t *S, int n_S,
                      arb_rest_result *res);

/* The datastore "auto" stands for: "code" for code datasets (humaneval, mbpp, classeval,
   livecodebench), "chat" for every other (REST: The Stack for HumanEval, UltraChat for MT-Bench). */
const char *arb_rest_auto_datastore(const char *dataset);

#endif
