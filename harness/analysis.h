/* analysis.h — GOOSE's theory checks (docs/spec/drafting.md §4.8): Proposition 1 (lower bound on
 * τ for a spine tree), Proposition 2 (optimal branch widths, water-filled), the exact
 * tree-yield evaluator under the independent acceptance model, and the Appendix E.4
 * procedure computed from step records (τ_eq1 <= τ_meas, τ_eq1 > τ_iso).
 *
 *     double w[6], kappa;
 *     arb_goose_prop2(0.21, 0.033, 6, 54, w, &kappa);        // w ≈ (50.25, 3.75, 0, 0, 0, 0)
 *     double tau = arb_goose_prop1(0.21, 0.033, 6, w, 6);     // ≈ 1.9517
 *     arb_e4 e = {0};
 *     for (...) arb_e4_add(&e, &step_record);                 // every step of a run
 *     arb_e4_finish(&e, 60, 6, n_generated, n_target_calls);  // e.tau_eq1, e.tau_iso, e.tau_meas
 */
#ifndef ARB_ANALYSIS_H
#define ARB_ANALYSIS_H

#include <stdbool.h>

#include "decode.h"
#include "tree.h"

/* ℓ = Σ_{j=1}^{D-1} p_t^j. */
double arb_goose_ell(double p_t, int D);
/* Proposition 1 lower bound with widths w[0..m) (w[i] at spine node i, 0 = anchor). */
double arb_goose_prop1(double p_s, double p_t, int m, const double *w, int D);
/* Proposition 2: w[i] = w0 - κ i water-filled to Σ w = B_b, w >= 0. Needs 0 < p_t < 1,
   0 < p_s <= 1, m >= 1. Returns 0, or -1 on bad input. */
int arb_goose_prop2(double p_s, double p_t, int m, double B_b, double *w, double *kappa);
/* Exact expected tokens per step (bonus included) of a finalized tree when spine nodes
   are accepted with p_s and others with p_t, independently; the walk takes the first
   correct child in (spine, rank, index) order. */
double arb_tree_yield(const arb_tree *t, double p_s, double p_t);
/* Yield of the BFS k-ary tree of B nodes (anchor included) with every node at p. */
double arb_iso_yield(int k, int B, double p);

typedef struct arb_e4 {            /* Appendix E.4 accumulator and results */
    double acc_spine, prop_spine;  /* tree + bypass steps */
    double acc_tr, prop_tr;
    double spine_len_sum;          /* Σ spine length over tree-mode steps */
    int n_tree_steps;
    double p_s, p_t, m_mean;       /* after finish */
    int m;                         /* round(m_mean), >= 1 */
    double kappa, tau_eq1, tau_iso, tau_meas;
    bool lower_ok;                 /* τ_eq1 <= τ_meas */
    bool above_iso;                /* τ_eq1 > τ_iso */
    bool valid;                    /* p_s, p_t usable (0 < p_t < 1, p_s > 0) */
} arb_e4;

void arb_e4_add(arb_e4 *e, const arb_step_record *r);
void arb_e4_finish(arb_e4 *e, int B, int D, int n_generated, int n_target_calls);

#endif
