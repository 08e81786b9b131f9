/* spine.c — the GOOSE spine tree as a topology (see spine.h, topology.h; docs/spec/drafting.md
 * §4.4). Moved verbatim from drafters/goose.c: same node order, same tie-breaks. */
#include "spine.h"

#include <math.h>
#include <stdlib.h>

#include "drafters/tr.h" /* ARB_ADJ_K_MAX */
#include "topology.h"

typedef struct spine {
    const arb_method_spec *sp; /* the creator's spec (the drafter keeps it alive) */
    int32_t *queue;            /* [cap] BFS queue of branch nodes */
    int16_t *rel;              /* [cap] depth below the branch point */
    int16_t *width;            /* [cap] extension allowance */
} spine;

void arb_spine_split(int B, int m, double r, double rho, int *bs, int *br, int *bsp, int *a)
{
    int s = (int)floor(B * r);
    *bs = m < s ? m : s;
    if (*bs > B - 1)
        *bs = B - 1;
    if (*bs < 0)
        *bs = 0;
    *br = (int)floor((B - 1 - *bs) * (1.0 - rho));
    *bsp = B - 1 - *bs - *br;
    double H = 0.0;
    for (int j = 1; j <= *bs; j++)
        H += 1.0 / j;
    for (int i = 1; i <= *bs; i++)
        a[i - 1] = (int)floor(*bsp * (1.0 / i) / H);
}

static void spine_destroy(void *st)
{
    spine *g = st;
    if (!g)
        return;
    free(g->queue);
    free(g->rel);
    free(g->width);
    free(g);
}

static int spine_create(const arb_method_spec *s, void **out, arb_err *err)
{
    *out = NULL;
    spine *g = calloc(1, sizeof *g);
    int cap = arb_method_max_nodes(s);
    if (g) {
        g->sp = s;
        g->queue = malloc((size_t)cap * sizeof *g->queue);
        g->rel = malloc((size_t)cap * sizeof *g->rel);
        g->width = malloc((size_t)cap * sizeof *g->width);
    }
    if (!g || !g->queue || !g->rel || !g->width) {
        spine_destroy(g);
        return ARB_ERR(err, ARB_E_NOMEM, "topology spine: out of memory");
    }
    *out = g;
    return ARB_OK;
}

/* attach(u, prev, alloc) of docs/spec/drafting.md §4.4: top successors of u not already children of
   u and scoring >= s_min, at most min(alloc, K, budget left); each child's extension
   allowance is alloc shared by relative score. Children are queued for Step 4. */
static void attach(spine *g, const arb_topo_src *src, arb_tree *t, int u, int32_t prev, int alloc, int B,
                   int rel_child, int *tail)
{
    if (alloc <= 0 || t->n >= B)
        return;
    int32_t ids[ARB_ADJ_K_MAX], fid[ARB_ADJ_K_MAX];
    float sc[ARB_ADJ_K_MAX], fsc[ARB_ADJ_K_MAX];
    int16_t frank[ARB_ADJ_K_MAX];
    int ns = src->succ(src->ud, prev, t->tok[u], ids, sc), nf = 0;
    for (int j = 0; j < ns; j++) {
        bool dup = false; /* already a child of u (spine continuation) or listed twice */
        for (int i = 0; i < nf; i++)
            dup |= fid[i] == ids[j];
        if (dup || sc[j] < g->sp->s_min || arb_tree_find_child(t, u, ids[j]) >= 0)
            continue;
        fid[nf] = ids[j];
        fsc[nf] = sc[j];
        frank[nf++] = (int16_t)j;
    }
    int take = nf;
    if (take > alloc)
        take = alloc;
    if (take > g->sp->topk)
        take = g->sp->topk;
    if (take > B - t->n)
        take = B - t->n;
    float sum = 0.0f;
    for (int j = 0; j < take; j++)
        sum += fsc[j];
    for (int j = 0; j < take; j++) {
        int c = arb_tree_add(t, u, fid[j], ARB_SRC_TR, frank[j], fsc[j]);
        if (c < 0)
            return;
        long w = g->sp->extend_chain || !(sum > 0.0f) ? 1 : lround(alloc * (double)fsc[j] / sum);
        if (w < 1)
            w = 1;
        if (w > g->sp->topk)
            w = g->sp->topk;
        g->rel[c] = (int16_t)rel_child;
        g->width[c] = (int16_t)w;
        g->queue[(*tail)++] = c;
    }
}

static void spine_build(void *st, const arb_topo_src *src, arb_tree *t, arb_step_record *rec)
{
    spine *g = st;
    const arb_method_spec *sp = g->sp;
    int B = sp->budget < t->cap ? sp->budget : t->cap;
    int bs, br, bsp, a[ARB_SPINE_MAX];
    int m = src->m > ARB_SPINE_MAX ? ARB_SPINE_MAX : src->m;
    const int32_t *d = src->d;
    arb_spine_split(B, m, src->r, sp->rho, &bs, &br, &bsp, a);
    int spine_node[ARB_SPINE_MAX + 1];
    spine_node[0] = 0;
    g->rel[0] = 0;
    /* Step 1: the spine (control: TR-drawn tokens, still tagged spine for priority). */
    arb_src ssrc = sp->control_tr_spine ? ARB_SRC_TR : ARB_SRC_PLD;
    int n_sp = 0;
    for (int i = 1; i <= bs; i++) {
        int c = arb_tree_add(t, spine_node[i - 1], d[i - 1], ssrc, 0, NAN);
        if (c < 0)
            break;
        t->flags[c] |= ARB_NODE_SPINE;
        g->rel[c] = 0;
        spine_node[i] = c;
        n_sp = i;
    }
    int tail = 0, head = 0, sum_a = 0;
    /* Step 2: root branches. */
    attach(g, src, t, 0, src->a_prev, br, B, 1, &tail);
    /* Step 3: spine branches with harmonic allocation. */
    if (sp->spine_branches)
        for (int i = 1; i <= n_sp; i++) {
            sum_a += a[i - 1];
            attach(g, src, t, spine_node[i], t->tok[spine_node[i - 1]], a[i - 1], B, 1, &tail);
        }
    /* Step 4: BFS extension, shallow levels first, D levels below each branch point. */
    while (head < tail && t->n < B) {
        int v = g->queue[head++];
        if (g->rel[v] >= sp->max_depth)
            continue;
        attach(g, src, t, v, t->tok[t->parent[v]], g->width[v], B, g->rel[v] + 1, &tail);
    }
    rec->bs = n_sp;
    rec->br = br;
    rec->bsp = bsp;
    rec->spine_alloc_sum = sum_a;
    rec->r = (float)src->r;
}

const arb_topology_i arb_topology_spine = {
    .name = "spine",
    .wants_match = true,
    .create = spine_create,
    .destroy = spine_destroy,
    .build = spine_build,
};
