/* spine.h — GOOSE's anisotropic spine tree (Algorithm 1; docs/spec/drafting.md §4.4): the first
 * bs tokens of the context-match continuation as a spine, top successors as root branches and
 * harmonically decaying spine branches, then confidence-aware BFS extension up to D levels below
 * each branch point. Registered as `arb_topology_spine` (topology.h), GOOSE's default shape.
 *
 *     int bs, br, bsp, a[64];
 *     arb_spine_split(60, 12, 0.3, 0.5, &bs, &br, &bsp, a);   // budget split, lines 1-3, 10
 */
#ifndef ARB_SPINE_H
#define ARB_SPINE_H

#define ARB_SPINE_MAX 64 /* longest spine (and bypass chain + 1) */

/* Budget split of Algorithm 1 (lines 1-3, 10): bs, br, bsp and a[0..bs) (before the K cap);
   a holds at least min(m, ARB_SPINE_MAX) entries. */
void arb_spine_split(int B, int m, double r, double rho, int *bs, int *br, int *bsp, int *a);

#endif
