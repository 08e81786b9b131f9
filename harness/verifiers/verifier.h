/* verifier.h — which drafted node is accepted and which token follows it (docs/spec/verification.md).
 *
 * A verifier reads the draft tree (tree.h), the processed target law p_v at every node and
 * the draft law q_v at every internal node (n_nodes x V double rows, sample.h PROCESS), and
 * returns the accepted node plus the correction/bonus token. Scratch is sized at init.
 *
 *     arb_verifier_opts o = arb_verifier_default_opts();  o.V = V; o.n_nodes_max = 64;
 *     arb_verifier *vf;
 *     if (arb_verifier_new("traversal", &o, &vf, &err)) ...;
 *     arb_verify_in in = { .tree = &t, .p = p, .q = q, .V = V, .rng = &rng };
 *     arb_verify_out out;
 *     arb_verifier_verify(vf, &in, &out);   // commit path root..out.node, then out.extra
 *     arb_verifier_free(vf);
 *
 * Adding a verifier: (1) one file harness/verifiers/<name>.c defining
 * `const arb_verifier_i arb_verifier_<name>` (name, needs_q/needs_logits, the validity row of
 * docs/spec/verification.md §0.6, approximate when it is not lossless, create/destroy/verify); (2) one row in the table in verifier.c and one
 * extern below; (3) a case in tests/test_verifiers.c (the suite walks the table).
 */
#ifndef ARB_VERIFIER_H
#define ARB_VERIFIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"
#include "tree.h"

typedef enum arb_regime { /* how the tree was drafted (docs/spec/verification.md §0.3) */
    ARB_REGIME_SINGLE = 0, ARB_REGIME_IID, ARB_REGIME_DELAYED, ARB_REGIME_WOR, ARB_REGIME_DET,
    ARB_REGIME_COUNT
} arb_regime;

typedef enum arb_validity { /* one cell of the §0.6 matrix */
    ARB_VALID_NO = 0,         /* config validation rejects the pair */
    ARB_VALID_YES = 1,
    ARB_VALID_FIRST_PATH = 2, /* valid on path 1 only (naive, bv on multi-path trees) */
} arb_validity;

typedef struct arb_verify_in {
    const arb_tree *tree;   /* finalized; child_seq = C(v) in sampled order (empty -> child list) */
    const double *p;        /* n x V target laws, processed; row v = p_v (leaves included);
                               may be NULL when p_row is set */
    /* optional: row v of p is p_row(p_ud, v) instead (never NULL; the decoder processes a
       row on first use, so a verifier that walks two nodes of a 60-node tree pays for two
       rows — and on a GPU copies two). Verifiers read p only through arb_vf_p (vf_int.h). */
    const double *(*p_row)(void *p_ud, int v);
    void *p_ud;
    const double *q;        /* n x V draft laws of internal nodes; NULL for greedy/nss */
    const float *logits;    /* n x V raw target logits (greedy, typical); may be NULL otherwise */
    int V;
    arb_rng *rng;           /* verification stream */
    /* ---- optional, for greedy: the decoder's work it need not redo ---- */
    const int32_t *argmax;  /* target argmax of node i at argmax[i * argmax_stride] (the first
                               column of the top-K rows a harvesting decoder computed); NULL:
                               the verifier takes it from logits */
    int argmax_stride;
    /* runs fn(ud, i, n) for every row i < n, possibly on several threads (the decoder passes
       the target's kernel pool: one logits row is a 4V-byte read); NULL: in order here */
    void (*for_rows)(void *pool, int n, void (*fn)(void *ud, int i, int n), void *ud);
    void *pool;
} arb_verify_in;

typedef struct arb_verify_out {
    int32_t node;           /* accepted node (0 = nothing accepted) */
    int32_t depth;          /* accepted length = depth(node) */
    int32_t extra;          /* correction or bonus token */
    int32_t extra_is_bonus; /* 1 if sampled from p at an original leaf */
    int32_t n_fallback;     /* empty residuals that fell back (§12); should stay 0 */
} arb_verify_out;

typedef struct arb_verifier_opts {
    int V;                  /* vocabulary size (scratch) */
    int n_nodes_max;        /* largest tree */
    int specinfer_uniform;  /* 0: sequential child order (default), 1: uniform (SpecInfer paper) */
    int khisti_s;           /* Khisti truncation, default 5, max 15 */
    double spectr_tol;      /* SpecTr bisection tolerance, default 1e-9 */
    int greedy_first_match; /* greedy: 0 longest (default), 1 GOOSE first match */
    double typical_eps;     /* typical: posterior threshold ε (0.09) */
    double typical_alpha;   /* typical: entropy factor α (0.3) */
} arb_verifier_opts;
arb_verifier_opts arb_verifier_default_opts(void);

typedef struct arb_verifier_i {
    const char *name;
    bool needs_q, needs_logits;
    bool sampling;                      /* false: T = 0 only (greedy) */
    bool approximate;                   /* true: NOT lossless (typical); reports mark its runs */
    bool p_all_rows;                    /* reads p at (almost) every node whatever it accepts (BV:
                                           the whole path; Traversal: every internal node): a
                                           caller with p_row and several threads processes
                                           all rows up front, in parallel, instead of one by
                                           one as they are read */
    uint8_t valid[ARB_REGIME_COUNT];    /* arb_validity per regime (§0.6) */
    int (*create)(const arb_verifier_opts *o, void **state, arb_err *err);
    void (*destroy)(void *state);       /* NULL-safe */
    /* No allocation. Returns ARB_OK or ARB_E_INVAL (tree larger than init, missing q). */
    int (*verify)(void *state, const arb_verify_in *in, arb_verify_out *out);
} arb_verifier_i;

typedef struct arb_verifier { const arb_verifier_i *iface; void *ctx; } arb_verifier;

extern const arb_verifier_i arb_verifier_greedy, arb_verifier_nss, arb_verifier_naive, arb_verifier_naivetree,
    arb_verifier_bv, arb_verifier_spectr, arb_verifier_specinfer, arb_verifier_khisti,
    arb_verifier_traversal, arb_verifier_typical;

/* The registry (verifier.c): verifier by name, NULL if unknown; row i, NULL past the end;
   the names, ", "-separated, into buf (returns buf). */
const arb_verifier_i *arb_verifier_find(const char *name);
const arb_verifier_i *arb_verifier_at(int i);
const char *arb_verifier_names(char *buf, size_t cap);
/* The sampling verifiers valid for regime r (their docs/spec/verification.md §0.6 row), ", "-separated
   into buf (returns buf): what a sampling drafter's validation offers instead of greedy. */
const char *arb_verifier_sampling_names(arb_regime r, char *buf, size_t cap);
int arb_verifier_count(void); /* rows (older callers; arb_verifier_at(i) == NULL past the end) */
/* Config validation: ARB_E_INVAL with "verifier 'x' is not valid for regime y" (§0.6). */
int arb_verifier_check(const char *name, arb_regime r, arb_err *err);
const char *arb_regime_name(arb_regime r);
int arb_regime_parse(const char *s, arb_regime *out); /* "single","iid","delayed","wor","det" */

int arb_verifier_new(const char *name, const arb_verifier_opts *o, arb_verifier **out, arb_err *err);
void arb_verifier_free(arb_verifier *v);           /* NULL-safe */
int arb_verifier_verify(arb_verifier *v, const arb_verify_in *in, arb_verify_out *out);

#endif
