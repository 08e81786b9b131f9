/* dynamic.h — the per-step cost-aware tree ("topology": "dynamic"): of every tree GOOSE's two
 * sources could fill this step, the one with the most expected tokens per second of eval on this
 * machine (docs/cost-model.md, "The dynamic tree").
 *
 * Each candidate node carries an acceptance estimate v = P(its whole path is accepted):
 *
 *     spine (the context match d[0..m)):  v(d[0]) = p1,  v(d[i]) = v(d[i-1]) · pc
 *     table (successor s of node u, score s_sc):  v = v(u) · cal(s_sc)
 *
 * p1, pc: this run's spine acceptance (first token, later ones; Beta(1, 1), decayed so a prompt's
 * own chains dominate); cal: the table's scores calibrated on this run's verified steps (16 score
 * bins, prior mean 0.8 × the bin's middle, as measured in docs/cost-model.md). Nodes are
 * taken best first (a node's children enter the frontier once it is taken, so every prefix of the
 * order is a tree, and the n-node prefix holds the n largest v of any n-node tree). With
 * τ̂(n) = 1 + Σ of the first n - 1 values, the step sends the n in [1, B] that maximises
 *
 *     τ̂(n) / t(n, L)        (t: the cost model, costmodel.h; L: the cached tokens)
 *
 * n = 1 is a plain AR step. B is the method's budget (the profile's largest knot under budget
 * "auto"). [CHOICE] The GOOSE paper fixes the budget and the spine ratio (Algorithm 2); this
 * topology keeps its two sources and its anisotropy (a confident match becomes a deep chain, a
 * doubtful one a few wide table branches) but sizes the tree per step from the cost of a node on
 * the machine at hand, as issue #18 asks of "auto" budgets.
 *
 * Needs the machine's cost table (arb_method_spec.chain_cost, set by budget "auto"). Learns from
 * verified steps through arb_topology_i.verified. No allocation after create.
 */
#ifndef ARB_TOPO_DYNAMIC_H
#define ARB_TOPO_DYNAMIC_H

#define ARB_DYN_BINS 16

/* Score bin of a table successor's score (0 <= s <= 1), and that bin's prior acceptance. */
int arb_dyn_bin(float s);
double arb_dyn_prior(int bin);

#endif
