/* otanalysis.h — closed forms behind the verifiers (docs/spec/verification.md §10, §8.5): each OT
 * solver's output law OUT(x | p, q, C) (its restriction to C(v) is the DTE branching
 * probability), the OTLP acceptance rate of n i.i.d. draws, and the expected block
 * efficiency of one drafted tree with no verification randomness (DTE Eqs. 1-3), which the
 * DTE selector's offline data and the paired acceptance test use.
 *
 *     arb_otan *a;
 *     arb_otan_new(&vo, &a, &err);                        // vo: the verifier options (V, n_max, khisti_s)
 *     double acc = arb_otan_accept_rate(a, ARB_OT_SPECTR, p, q, 3);   // §10.2
 *     double be[8];                                       // be[D]: tree cut at depth D
 *     double BE = arb_otan_be_tree(a, ARB_OT_SPECTR, &tree, P, Q, V, be, 8);
 *     double e;  arb_otan_expected_accepted(a, vf, &in, &e); // any of the 8 verifiers
 *     arb_otan_free(a);
 *
 * Everything is deterministic (Khisti's LP vertex by Bland's rule) and allocation-free
 * after arb_otan_new. Not thread-safe per object.
 */
#ifndef ARB_OTANALYSIS_H
#define ARB_OTANALYSIS_H

#include "verifier.h"

typedef enum arb_ot_method {
    ARB_OT_NSS = 0, ARB_OT_NAIVETREE, ARB_OT_SPECINFER, ARB_OT_SPECTR, ARB_OT_KHISTI, ARB_OT_COUNT
} arb_ot_method;
/* "nss" "naivetree" "specinfer" "spectr" "khisti" (also "naive": n = 1 laws). ARB_E_INVAL else. */
int arb_ot_method_parse(const char *name, arb_ot_method *out);

typedef struct arb_otan arb_otan;
int arb_otan_new(const arb_verifier_opts *o, arb_otan **out, arb_err *err);
void arb_otan_free(arb_otan *a); /* NULL-safe */

/* OUT(· | p, q, C) into out[V] (§10.1), C = n tokens in sampled order; n >= 1.
   SpecInfer uses the sequential order. */
void arb_otan_out(arb_otan *a, arb_ot_method m, const double *p, const double *q, const int32_t *C,
                  int n, int V, double *out);
/* P(output ∈ C) for n i.i.d. draws from q (§10.2). Khisti: the DTE lower bound Σ min(p, q_I). */
double arb_otan_accept_rate(arb_otan *a, arb_ot_method m, const double *p, const double *q, int n, int V);
/* SpecTr's ρ* for n draws (1 for n = 1). */
double arb_otan_spectr_rho(const double *p, const double *q, int n, int V);

/* BE_TREE (§10.3): 1 + Σ_{u ≠ root} reach(u) for a finalized tree with p, q rows (n x V).
   be_depth (optional, n_depth entries): be_depth[D] = the same sum over depth(u) <= D. */
double arb_otan_be_tree(arb_otan *a, arb_ot_method m, const arb_tree *t, const double *p,
                        const double *q, int V, double *be_depth, int n_depth);

/* Exact E[accepted length | tree] of verifier vf on in (OT methods: BE_TREE - 1; naive: path 1;
   bv / traversal: §8.5 candidate sequence). ARB_E_UNSUPPORTED for other verifiers; ARB_E_INVAL
   when in->p is NULL (it reads the full n x V array, not laws on demand). */
int arb_otan_expected_accepted(arb_otan *a, arb_verifier *vf, const arb_verify_in *in, double *out);

#endif
