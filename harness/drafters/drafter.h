/* drafter.h — the drafter plug-in interface the decode loop drives (STYLE practice 11).
 *
 * A drafter proposes a tree on the committed sequence, may harvest the top-K rows of
 * every forward (the decoder computes them once per node), learns from the verified
 * path, and sees every committed token. State is created once per decoder, so the
 * step loop allocates nothing.
 *
 * Adding a drafter: (1) harness/drafters/<name>.c defining `const arb_drafter_i
 * arb_drafter_<name>`, with its own defaults (`defaults`), its largest tree (`max_nodes`)
 * and its consistency checks (`validate`) as slots of the vtable; (2) an extern below and one row in the table in
 * method.c (and, for its parameters, fields of arb_method_spec with rows in the parameter
 * table naming it in their `drafters` field); (3) tests/test_<name>.c, and a row in
 * test_decode's losslessness list. Nothing else in method.c names a drafter.
 */
#ifndef ARB_DRAFTER_H
#define ARB_DRAFTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "method.h"
#include "tree.h"

typedef struct arb_harvest {   /* the top-K rows of one forward */
    int n;                     /* rows (batch nodes or prefill positions) */
    int K;                     /* entries per row */
    const int32_t *tok;        /* [n] token at each row */
    const int32_t *prev;       /* [n] previous token (parent / preceding position), -1 if none */
    const int32_t *ids;        /* [n*K] successors, best first (ties: lower id) */
    const float *scores;       /* [n*K] softmax probabilities at T = 1 */
} arb_harvest;

typedef struct arb_drafter_i {
    const char *name;
    /* Create state for vocabulary n_vocab; the spec is copied or read at creation only. */
    int (*create)(const arb_method_spec *s, int n_vocab, void **st, arb_err *err);
    void (*destroy)(void *st);                             /* NULL-safe */
    /* Before a prompt: capacity for n_tokens committed tokens (may allocate); new_run
       forgets hot-start tables. */
    int (*begin)(void *st, int n_tokens, bool new_run, arb_err *err);
    /* Committed tokens, in order (the prompt, then each step's tokens). */
    void (*append)(void *st, const int32_t *tok, int n);
    /* Build this step's tree: t is reset to the anchor S[n_S-1]; fill rec's drafter fields
       (mode, GOOSE fields). No allocation. */
    void (*propose)(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec);
    /* Optional (NULL: no top-K computed): learn from one forward; the prompt's rows only when
       the method's harvest_prefill is set (the decoder decides, decode.c). */
    void (*harvest)(void *st, const arb_harvest *h);
    /* Optional: the accepted path (root first, n_path = k + 1) of the last proposed tree. */
    void (*verified)(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec);
    size_t (*bytes)(const void *st);                       /* table + index memory */
    /* ---- optional slots of model drafters (draft_model.c); lookahead.c uses bind (the target's
       EOS ids) and set_step (its RNG key); NULL elsewhere ---- */
    /* After create: the target context (a self-draft shares its weights). */
    int (*bind)(void *st, arb_ctx *target, arb_err *err);
    /* Before propose: keys the drafting RNG (run seed from the spec, prompt id, step). */
    void (*set_step)(void *st, uint32_t prompt_id, int step);
    /* After propose: n x V doubles, row v = the law q_v v's children were sampled from
       (sampling verifiers, docs/spec/verification.md §0.5). */
    const double *(*q_rows)(void *st);
    /* ---- optional slot of head drafters (medusa.c); NULL elsewhere ---- */
    /* The target's last hidden state (final-norm output, n_embd floats) of the node whose
       logits gave the token just committed last: after prefill (the last prompt token) and
       after every step (the walk's stop node). Non-NULL makes the decoder ask arb_eval for
       hidden rows, so the target context must be created with want_hidden. */
    void (*hidden)(void *st, const float *h);
    /* Optional (EntMTP features): the same node's logits row (n_vocab floats), right after
       hidden (or where hidden would be called). */
    void (*stop_logits)(void *st, const float *row, int n_vocab);
    /* Optional (EAGLE, eagle.c; needs `hidden`): after every step, before `hidden`, the hidden
       rows of the whole accepted path: node path[i]'s row is rows + path[i] * n_embd (root
       first, n_path = accepted + 1). */
    void (*hidden_path)(void *st, const float *rows, const int32_t *path, int n_path, int n_embd);
    /* ---- the method layer's slots (method.c), so that it never names a drafter ---- */
    /* Optional (NULL: id = name): the drafter's own defaults (at least its report label `id`),
       applied by arb_method_spec_default over the values every drafter shares. */
    void (*defaults)(arb_method_spec *s);
    /* Optional (NULL: s->budget): the largest tree, nodes incl. the anchor, this drafter can
       propose for s; arb_method_max_nodes returns it and every tree buffer is sized by it. */
    int (*max_nodes)(const arb_method_spec *s);
    /* Optional (NULL: none): the drafter's own consistency checks of s, run by
       arb_method_spec_validate after the generic ones (known names, ranges); ARB_E_INVAL with
       "method <id>: <param>: ...". A drafter with q_rows takes the sampling verifiers and
       checks them here; the others are held to greedy by method.c. */
    int (*validate)(const arb_method_spec *s, arb_err *err);
    /* The drafter builds its tree with the topology table (spec.topology, topology.h); a
       non-empty topology on any other drafter is an error. */
    bool uses_topology;
    /* The decoder may skip propose and verified for some steps (a one-node tree: the AR guard,
       arguard.h, `ar_guard`) and the drafter stays consistent: each propose rebuilds its step
       state, and what it learns from comes through append, harvest, hidden and stop_logits,
       which still run. False for drafters that keep a draft model or window in step with
       every proposal (draft, eagle*, lookahead). */
    bool ar_steps;
    /* Optional (NULL: none): the kind of trained-heads file s loads ("medusa", "hydra",
       "eagle"; its `heads` field names it), so a caller can find a missing file before a run
       starts (arb_method_heads_file, `arbor reproduce`). */
    const char *(*heads_kind)(const arb_method_spec *s);
} arb_drafter_i;

extern const arb_drafter_i arb_drafter_none, arb_drafter_pld, arb_drafter_tr, arb_drafter_goose;
extern const arb_drafter_i arb_drafter_draft; /* draft model: single / iid / delayed (draft_model.c) */
extern const arb_drafter_i arb_drafter_lookahead; /* Jacobi window + n-gram pool (lookahead.c) */
extern const arb_drafter_i arb_drafter_eagle2; /* draft model + EAGLE-2 dynamic tree (eagle2.c) */
extern const arb_drafter_i arb_drafter_medusa, arb_drafter_hydra; /* trained heads (medusa.c) */
extern const arb_drafter_i arb_drafter_rest;   /* REST retrieval (rest.c) */
extern const arb_drafter_i arb_drafter_eagle;  /* EAGLE head + EAGLE-2 dynamic tree (eagle.c) */
extern const arb_drafter_i arb_drafter_eagle_dte; /* EAGLE head as a sampling draft, (l, k, b) trees (eagle_dte.c) */

/* The registry (method.c): drafter by name ("ar" is an alias of "none"), NULL if unknown;
   row i (NULL past the end); the names, ", "-separated, into buf (returns buf). */
const arb_drafter_i *arb_drafter_find(const char *name);
const arb_drafter_i *arb_drafter_at(int i);
const char *arb_drafter_names(char *buf, size_t cap);

#endif
