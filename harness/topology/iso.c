/* iso.c — Iso(k) BFS k-ary trees (see iso.h). */
#include "iso.h"

int arb_iso_build(arb_tree *t, int32_t a_prev, int k, int budget, int max_depth, arb_succ_fn succ,
                  void *ud, int32_t *queue)
{
    int32_t ids[16];
    float sc[16];
    int n0 = t->n, head = 0, tail = 0;
    if (budget > t->cap)
        budget = t->cap;
    queue[tail++] = 0;
    while (head < tail && t->n < budget) {
        int v = queue[head++];
        if (max_depth > 0 && t->depth[v] >= max_depth)
            continue;
        int32_t prev = v == 0 ? a_prev : t->tok[t->parent[v]];
        int ns = succ(ud, prev, t->tok[v], ids, sc);
        for (int j = 0; j < k && j < ns && t->n < budget; j++) {
            int c = arb_tree_add(t, v, ids[j], ARB_SRC_TR, j, sc[j]);
            if (c < 0)
                break;
            if (tail < budget)
                queue[tail++] = c;
        }
    }
    return t->n - n0;
}
