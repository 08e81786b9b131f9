/* vf_int.h — internals shared by the verifier files and otanalysis.c (not a public API).
 *
 * Child access: C(v) is tree->child_seq when the drafter recorded it (i.i.d./delayed
 * trees), else the child list in index order (chains, deterministic trees); nodes flagged
 * ARB_NODE_NOACCEPT are never offered. D(v) is C(v) with repeats dropped (first appearance).
 * OT solvers: one function per method with the signature of arb_ot_solve_fn; the driver
 * arb_ot_run walks the tree top-down (docs/spec/verification.md §0.7).
 */
#ifndef ARB_VF_INT_H
#define ARB_VF_INT_H

#include "verifier.h"

/* Row v of the target laws p: from in->p_row when the caller supplies rows on demand,
   else row v of in->p. Every read of p goes through here. */
static inline const double *arb_vf_p(const arb_verify_in *in, int v)
{
    return in->p_row ? in->p_row(in->p_ud, v) : in->p + (size_t)v * (size_t)in->V;
}

/* C(v) as node indices into out (capacity >= tree->n); returns n = |C(v)|. */
int arb_vf_children(const arb_tree *t, int v, int32_t *out);
/* D(v) as node indices (first-appearance order) into out; tmp: scratch >= tree->n. */
int arb_vf_distinct(const arb_tree *t, int v, int32_t *tmp, int32_t *out);
/* Common argument checks of verify(): sizes against init, q present when needed. */
int arb_vf_check_in(const arb_verify_in *in, int V_max, int n_max, bool needs_q);
/* Sum of [a*x - y]_+ into r (r may alias nothing); returns the sum. */
double arb_vf_residual(const double *x, double a, const double *y, int V, double *r);
/* SAMPLE(w) with fallback to SAMPLE(p) when w is empty (counts in *n_fallback). */
int arb_vf_sample_or(arb_rng *rng, const double *w, const double *p, int V, int32_t *n_fallback);

/* ---- OT driver ---- */
typedef struct arb_ot_work { /* scratch of every OT verifier, sized at init */
    int V, n_max;
    double *r, *r2;          /* V each: residual work vectors */
    int32_t *cnode, *ctok;   /* n_max each: C(v) as nodes and as tokens */
    int32_t *tmp;            /* n_max: solver scratch (SpecInfer's remaining draws) */
    void *solver;            /* method-specific state (SpecTr, Khisti) or NULL */
    const arb_verifier_opts *o;
    arb_verifier_opts opts;  /* copy of the init options */
} arb_ot_work;

typedef int (*arb_ot_solve_fn)(arb_ot_work *w, const double *p, const double *q,
                               const int32_t *C, int n, arb_rng *rng, int32_t *n_fallback);
int arb_ot_work_init(arb_ot_work *w, const arb_verifier_opts *o, arb_err *err);
void arb_ot_work_release(arb_ot_work *w);
/* init/free of a verifier whose state is just an arb_ot_work (vtable slots). */
int arb_ot_vt_create(const arb_verifier_opts *o, void **state, arb_err *err);
void arb_ot_vt_destroy(void *state);
int arb_ot_run(arb_ot_work *w, const arb_verify_in *in, arb_ot_solve_fn solve, bool needs_q,
               arb_verify_out *out);

/* Solvers (each lossless for C = i.i.d. draws from q; n >= 1). */
int arb_ot_solve_nss(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                     arb_rng *rng, int32_t *nf);
int arb_ot_solve_naive(arb_ot_work *w, const double *p, const double *q, const int32_t *C, int n,
                       arb_rng *rng, int32_t *nf);

/* ---- SpecTr (spectr.c) ---- */
double arb_spectr_beta(const double *p, const double *q, int V, double rho);
double arb_spectr_rho(const double *p, const double *q, int V, int n, double tol);

/* ---- Khisti (khisti.c): one tournament round's LP ---- */
typedef struct arb_khisti_lp arb_khisti_lp;
int arb_khisti_lp_new(int V, int s_max, arb_khisti_lp **out);
void arb_khisti_lp_free(arb_khisti_lp *k);
/* a_next (V) = law of the winner after the round; the round's w and order stay inside k. */
void arb_khisti_lp_solve(arb_khisti_lp *k, const double *p, const double *a, const double *b,
                         int V, int s, double *a_next);
/* Sparse mode, for laws with few nonzeros (top-p, top-k): U = {x : p(x) > 0 or q(x) > 0}; when
   1 <= |U| <= max_n (the scan stops past max_n) it is entered and true returned, and until
   _support_end every round sorts and sums over U only, writing a_next on U alone (it must hold
   zeros elsewhere); else nothing changes (dense mode, no _support_end needed). Requires
   supp(a), supp(b) within U, true of every round's a and b = q since a round's law lives where
   a or b does. The same bits as dense mode (tested): the tokens outside U have key 0 and no
   mass, so they can only matter as members of the truncated set, which merges them in by id.
   _support_end leaves sparse mode and zeroes the U entries of the n_zero buffers (the rounds'
   a_next). */
bool arb_khisti_lp_support(arb_khisti_lp *k, const double *p, const double *q, int V, int max_n);
void arb_khisti_lp_support_end(arb_khisti_lp *k, double *const *zero, int n_zero);
/* PAIR_SELECT keep probability of winner x1 against challenger x2 (1 if x1 == x2). */
double arb_khisti_keep(const arb_khisti_lp *k, int x1, int x2);

/* ---- Traversal / BV candidate sequences (§8.5): forced-reject run ---- */
/* Fills node[i], prob[i] (P(accept l_i)), law[i] (extra-token law, unnormalized ok,
   pointer valid until the next call); returns the count. Scratch lives in state. */
int arb_traversal_sequence(void *state, const arb_verify_in *in, int32_t *node, double *prob,
                           const double **law);
int arb_bv_sequence(void *state, const arb_verify_in *in, int32_t *node, double *prob,
                    const double **law);

/* ---- typical acceptance (typical.c, docs/spec/verification.md §9) ---- */
/* H = −Σ π ln(π + 1e-5) and θ = min(eps, alpha·e^{−H}) of one law. */
double arb_typical_entropy(const double *pi, int V);
double arb_typical_threshold(const double *pi, int V, double eps, double alpha);

/* Negative-control variants for tests only (docs/spec/verification.md §11.5); 0 = correct. */
enum { ARB_VF_BROKEN_NONE = 0, ARB_VF_BROKEN_TRAV_INDEX_ORDER = 1, ARB_VF_BROKEN_TRAV_NO_RENORM = 2 };
void arb_traversal_set_broken(void *state, int variant);

#endif
