/* iso.c — Iso(k) BFS k-ary trees (see iso.h). */
#include "iso.h"

#include <stdlib.h>

#include "topology.h"

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

/* ---- the topology plug-in (topology.h): Iso(k) on the drafter's successor source ---- */
typedef struct iso_state {
    int k, budget;
    int32_t *queue; /* [budget] BFS scratch */
} iso_state;

static void iso_destroy(void *st)
{
    iso_state *s = st;
    if (s)
        free(s->queue);
    free(s);
}

static int iso_create(const arb_method_spec *sp, void **out, arb_err *err)
{
    *out = NULL;
    iso_state *s = calloc(1, sizeof *s);
    int cap = arb_method_max_nodes(sp);
    if (s && !(s->queue = malloc((size_t)cap * sizeof *s->queue))) {
        free(s);
        s = NULL;
    }
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "topology iso: out of memory");
    s->k = sp->iso_k;
    s->budget = sp->budget;
    *out = s;
    return ARB_OK;
}

static void iso_topo_build(void *st, const arb_topo_src *src, arb_tree *t, arb_step_record *rec)
{
    iso_state *s = st;
    (void)rec;
    arb_iso_build(t, src->a_prev, s->k, s->budget, 0, src->succ, src->ud, s->queue);
}

const arb_topology_i arb_topology_iso = {
    .name = "iso",
    .create = iso_create,
    .destroy = iso_destroy,
    .build = iso_topo_build,
};
