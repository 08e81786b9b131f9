/* topology.h — the topology plug-in interface: the shape a node budget buys, filled from the
 * drafter's token sources (STYLE practice 11; docs/spec/drafting.md §4, §4.7, §5).
 *
 * A drafter that owns token sources (GOOSE: the context match and the adjacency table) picks a
 * topology by the method's `topology` name, creates its state once, and each step hands it the
 * sources; the topology adds nodes to the tree. State (templates, BFS queues) is sized at
 * create, so build allocates nothing.
 *
 *     const arb_topology_i *ti = arb_topology_find(spec.topology);   // "" = the spine tree
 *     void *st;  ti->create(&spec, &st, &err);
 *     arb_topo_src src = {.succ = succ, .ud = ud, .a_prev = a_prev, .anchor = anchor,
 *                         .d = match, .m = match_len, .r = 0.3};
 *     arb_tree_reset(&t, anchor);  ti->build(st, &src, &t, &rec);
 *     ti->destroy(st);
 *
 * Adding a topology: (1) harness/topologies/<name>.c defining `const arb_topology_i
 * arb_topology_<name>` (create/destroy/build); (2) an extern below and one row in
 * topologies/registry.c (config validation, its error message and method.h's docs read the
 * table); (3) a case in tests/test_topology.c (the suite walks the table) and, if a preset
 * uses it, a row in test_decode's losslessness list.
 */
#ifndef ARB_TOPOLOGY_H
#define ARB_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "method.h"
#include "topologies/iso.h"
#include "tree.h"

typedef struct arb_topo_src { /* this step's token sources, filled by the drafter */
    arb_succ_fn succ;         /* successor lists (GOOSE: the two-tier adjacency table) */
    void *ud;                 /* succ's user data */
    int32_t a_prev, anchor;   /* the token before the anchor (-1 if none), the anchor */
    const int32_t *d;         /* context-match continuation (spine tokens); NULL when m = 0 */
    int m;                    /* its length */
    double r;                 /* spine ratio this step (GOOSE Algorithm 2) */
    int n_ctx;                /* cached tokens this step (the eval's context length L) */
} arb_topo_src;

typedef struct arb_topology_i {
    const char *name;
    /* true: build reads src->d, m and r, so the drafter runs its context match first (and GOOSE
       may send a long match out as a bypass chain instead); false: a fixed shape on succ. */
    bool wants_match;
    /* Validate and size state for spec s (budget, depth, arity, acceptance vector). s must
       outlive the state: a topology may keep the pointer and read it at build (the spine does;
       GOOSE passes its own copy). */
    int (*create)(const arb_method_spec *s, void **st, arb_err *err);
    void (*destroy)(void *st);                  /* NULL-safe */
    /* Grow t (reset to src->anchor by the caller) to at most the method's budget; fills rec's
       shape fields (spine topology: bs, br, bsp, spine_alloc_sum, r). No allocation. */
    void (*build)(void *st, const arb_topo_src *src, arb_tree *t, arb_step_record *rec);
    /* Optional (NULL: a shape that does not learn): the tree of the last build and its verified
       path (node indices from the anchor, n_path of them). */
    void (*verified)(void *st, const arb_tree *t, const int32_t *path, int n_path);
    /* Optional (NULL: nothing learned): forget what verified taught, as a new run starts (the
       drafter's begin with new_run: a run's first prompt, and after the runner's warm-up). */
    void (*reset)(void *st);
} arb_topology_i;

extern const arb_topology_i arb_topology_spine, arb_topology_iso, arb_topology_sequoia, arb_topology_dynamic;

/* The registry (topologies/registry.c): topology by name, NULL if unknown; "" is the
   drafter's own shape, which for GOOSE is "spine". */
const arb_topology_i *arb_topology_find(const char *name);
const arb_topology_i *arb_topology_at(int i);   /* row i, NULL past the end */
/* The names, ", "-separated, into buf (for errors, --help and the README); returns buf. */
const char *arb_topology_names(char *buf, size_t cap);

#endif
