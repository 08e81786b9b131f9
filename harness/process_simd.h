/* process_simd.h — the pointwise passes of PROCESS (sample.c) for each x86 vector width.
 *
 * PROCESS's law must not depend on the CPU (a seed gives the same draws everywhere), so
 * every path here performs, per element, the same correctly rounded IEEE operations as
 * the scalar path, and the normalizing sum keeps its eight interleaved partial sums (lane
 * k of the 8-wide accumulator is the scalar path's part[k]) and their fixed combination.
 * Only the number of elements per instruction differs. Tested bit for bit against the
 * scalar path (tests/test_sample.c, process_paths_agree_bit_for_bit).
 *
 *     const int isa = arb_proc_isa_best();
 *     const double invT = 1.0 / T;
 *     double m = arb_proc_fmax(isa, z, V) * invT;                 // the largest z * invT
 *     double S = arb_proc_scale_exp_sum(isa, z, V, invT, m, pi);  // pi = exp(z * invT - m), S = sum
 *     int n = arb_proc_div_count(isa, pi, V, S);                 // pi /= S, n = how many > 0
 */
#ifndef ARB_PROCESS_SIMD_H
#define ARB_PROCESS_SIMD_H

#include <stdbool.h>
#include <stdint.h>

enum { ARB_PROC_SCALAR = 0, ARB_PROC_AVX2 = 1, ARB_PROC_AVX512 = 2 };

int arb_proc_isa_best(void);          /* the widest path this CPU runs */
bool arb_proc_isa_ok(int isa);        /* false: the CPU lacks it */
/* pi[x] = (double)z[x] * invT for x < V; returns the largest (the first operand kept on ties
   and NaN, as `pi[x] > m ? pi[x] : m` from -inf does) */
double arb_proc_scale_max(int isa, const float *z, int V, double invT, double *pi);
/* pi[x] = exp(pi[x] - m) (vexp.h); returns the sum in the fixed order described above */
double arb_proc_exp_sum(int isa, double *pi, int V, double m);

/* The same two passes fused, for a row without top-k (sample.c): the largest (double)z[x]
   (times invT it is scale_max's m: a product by invT > 0 keeps the order), then scale_max's
   products and exp_sum's exps and sum in one pass (the same bits); then pi[x] /= S, returning
   how many pi[x] > 0. */
double arb_proc_fmax(int isa, const float *z, int V);
double arb_proc_scale_exp_sum(int isa, const float *z, int V, double invT, double m, double *pi);
int arb_proc_div_count(int isa, double *pi, int V, double S);

/* Top-p's passes. mass[j] = the sum of the e[x] >= th[j], j < 4 (the order of addition is not
   fixed: it only picks the candidates' threshold, with a margin) */
void arb_proc_mass_above(int isa, const double *e, int V, const double th[4], double mass[4]);
/* idx[0..n) = the x with pi[x] >= t and pi[x] > 0, ascending; returns n */
int arb_proc_collect(int isa, const double *pi, int V, double t, int32_t *idx);
/* pi[x] = pi[x] < 0 ? -pi[x] / S : 0 (the kept tokens were marked by a negative sign) */
void arb_proc_keep(int isa, double *pi, int V, double S);

/* A residual and its running sum: r[i] = d > 0 ? d : +0, d = a * x[i] - y[i] * ys (each product
   and the difference rounded once), returns S + r[0] + r[1] + ... in index order (Traversal's
   reject; the zeros skipped, the same bits). r may be NULL: the sum alone. */
double arb_proc_residual_sum(int isa, const double *x, double a, const double *y, double ys, int V, double *r,
                             double S);

/* SAMPLE's two scans (sample.c arb_sample_w), with its exact arithmetic: the running sum of
   w[0..V) in index order, and the first x with w[x] > 0 whose running sum exceeds t (-1 if
   none; *last = the last x with w[x] > 0 before it or at the end). Exact zeros are skipped
   a vector at a time: adding +-0 leaves a running sum unchanged, so the sums are the same
   bits; a law cut by top-k/top-p or a residual is mostly zeros. */
double arb_proc_seq_sum(int isa, const double *w, int V);
int arb_proc_seq_pick(int isa, const double *w, int V, double t, int *last);
/* The same running sum, marking its value before every C-th element (mark[k] = the sum of
   w[0 .. k C), C a multiple of 8, ceil(V / C) marks); and the pick resumed at x0 (a mark's index)
   from the running sum c there: the first x >= x0 with w[x] > 0 whose running sum exceeds t, or
   -1. The sum is non-decreasing, so the pick lies after the last mark <= t: SAMPLE scans one
   stretch of C instead of the law up to the pick, with the same sums. */
double arb_proc_seq_sum_marks(int isa, const double *w, int V, int C, double *mark);
int arb_proc_seq_pick_from(int isa, const double *w, int V, int x0, double c, double t);

#endif
