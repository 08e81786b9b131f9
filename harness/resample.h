/* resample.h — the pieces every bootstrap in the harness shares: a seeded splitmix64 stream
 * (deterministic intervals for a seed) and the linearly interpolated quantile of sorted
 * values. Used by metrics.c (per-run intervals) and reproduce.c (claim verdicts).
 *
 *     uint64_t s = seed;  int j = (int)(arb_splitmix64(&s) % n);
 *     qsort(v, n, sizeof *v, arb_cmp_double);  double lo = arb_quantile_sorted(v, n, 0.025);
 */
#ifndef ARB_RESAMPLE_H
#define ARB_RESAMPLE_H

#include <stdint.h>

/* Next value of the splitmix64 stream whose state is *s (advances *s). */
uint64_t arb_splitmix64(uint64_t *s);
/* qsort comparator for doubles, ascending. */
int arb_cmp_double(const void *a, const void *b);
/* Quantile q in [0, 1] of v[0..n), sorted ascending, n >= 1 (linear interpolation). */
double arb_quantile_sorted(const double *v, int n, double q);

#endif
