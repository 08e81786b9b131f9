/* selector.h — per-step action selectors for the draft-model drafter (docs/spec/drafting.md
 * §11.2, §11.6; docs/sampling.md, "NDE"): before each step a selector picks the delayed-tree
 * shape a = (k, l, b) the draft model drafts from the current root. `fixed` always returns the
 * configured shape (the behaviour of every run before selectors existed); `nde` reads the
 * root's features and returns argmax_a π(a | c) of a trained MLP (nde_mlp.h).
 *
 *     const arb_selector_i *si = arb_selector_find("nde");
 *     arb_selector_opts o = {.shape = {2, 0, 4}, .file = "results/nde-spectr.json", .V = V};
 *     void *st;  if (si->create(&o, &st, &err)) die(err.msg);
 *     arb_selector_in in = {.p_prev = p, .q_prev = qp, .q_root = qr, .V = V, .n_ctx = n, .smp = &sm};
 *     arb_draft_shape a = si->select(st, &in);        // once per step; allocates nothing
 *     si->destroy(st);
 *
 * The action may depend only on the committed prefix (the laws above are functions of it),
 * never on this step's draft or verification randomness: that is what keeps every lossless
 * verifier lossless under a selector (docs/sampling.md, "NDE", losslessness).
 *
 * Adding a selector: (1) harness/selectors/<name>.c defining `const arb_selector_i
 * arb_selector_<name>`; (2) an extern below and a row in registry.c; (3) a case in
 * tests/test_nde.c.
 */
#ifndef ARB_SELECTOR_H
#define ARB_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "drafters/draft_model.h"
#include "error.h"
#include "sample.h"

typedef struct arb_selector_opts {
    arb_draft_shape shape; /* fixed: the shape returned */
    const char *file;      /* nde: the trained selector (arbor nde train) */
    int V;                 /* vocabulary of the laws select reads */
    int n_nodes_max;       /* nde: every action must fit (1 + l + k*b <= this) */
} arb_selector_opts;

typedef struct arb_selector_in {
    const double *p_prev;  /* [V] target law at the position before the anchor */
    const double *q_prev;  /* [V] draft law there */
    const double *q_root;  /* [V] draft law at the anchor */
    int V;
    int n_ctx;             /* committed tokens (the anchor included) */
    const arb_sampling *smp;
} arb_selector_in;

typedef struct arb_selector_i {
    const char *name;
    bool needs_laws;       /* select reads the laws of arb_selector_in (else they may be NULL) */
    /* Validate o (nde: load and check the file); ARB_E_INVAL / ARB_E_IO naming the file. */
    int (*create)(const arb_selector_opts *o, void **st, arb_err *err);
    arb_draft_shape (*select)(void *st, const arb_selector_in *in);
    void (*destroy)(void *st);  /* NULL-safe */
} arb_selector_i;

extern const arb_selector_i arb_selector_fixed, arb_selector_nde;

/* The registry: selector by name ("fixed", "nde"), NULL if unknown; row i (NULL past the end);
   the names, ", "-separated, into buf (returns buf). */
const arb_selector_i *arb_selector_find(const char *name);
const arb_selector_i *arb_selector_at(int i);
const char *arb_selector_names(char *buf, size_t cap);

#endif
