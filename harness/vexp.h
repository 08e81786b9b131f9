/* vexp.h — exp() of many doubles at once, for PROCESS (sample.c).
 *
 * Sampling turns a 49 152-logit row into a law with one exp per token; glibc's scalar exp
 * costs ~10 ns, so a row took ~0.5 ms on the host — as long as a GPU decode step, and paid
 * per draft token and per verified node (docs/gpu.md, sampling). This computes exp in
 * double precision (within 1 ulp of libm's, tested), eight values at a time with AVX-512F,
 * four with AVX2+FMA, when the CPU has them. Every path runs the same sequence of correctly
 * rounded operations, so the bits never depend on the CPU or on where a value sits in the
 * array (tested).
 *
 *     arb_vexp_inplace(x, n);    // x[i] = exp(x[i]); -inf -> 0
 *
 * Thread-safety: pure.
 */
#ifndef ARB_VEXP_H
#define ARB_VEXP_H

#include <stdbool.h>

/* x[i] = exp(x[i]) for every i < n: inputs below -745.2 (and -inf) give 0, above 709.78
   +inf, NaN stays NaN. PROCESS calls it on logits minus their maximum (x <= 0). */
void arb_vexp_inplace(double *x, int n);

/* The scalar path, one value (what every path computes). */
double arb_vexp1(double x);

/* The AVX2 path alone: false (nothing done) when the CPU lacks AVX2+FMA. For tests. */
bool arb_vexp_inplace_avx2(double *x, int n);
/* The AVX-512 path (8 lanes, the same operations): false when the CPU lacks AVX-512F. */
bool arb_vexp_inplace_avx512(double *x, int n);

#endif
