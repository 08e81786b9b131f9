/* dynamic.c — the per-step cost-aware tree (see dynamic.h). */
#include "dynamic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chainbudget.h"
#include "drafters/tr.h"
#include "topology.h"

#define DYN_DECAY 0.97 /* spine counts: a chain observed k steps ago weighs 0.97^k (~33 steps) */
#define DYN_PRIOR_N 10.0 /* pseudo-observations of a score bin's prior */
#define DYN_NODES_MAX (ARB_CHAIN_NODES_MAX + 1) /* the budget is at most the cost table's length */

/* Bin edges of a table score; the last bin holds s >= 0.95. */
static const float bin_lo[ARB_DYN_BINS + 1] = {0.0f, 0.01f, 0.02f, 0.035f, 0.05f, 0.075f, 0.1f, 0.15f, 0.2f,
                                               0.3f, 0.4f, 0.5f,  0.6f,  0.7f,  0.8f,  0.95f, 1.01f};

int arb_dyn_bin(float s)
{
    int b = 0;
    while (b < ARB_DYN_BINS - 1 && !(s < bin_lo[b + 1]))
        b++;
    return b;
}

/* Measured on TR's 81-node template (22 HumanEval, GSM8K, MT-Bench generations, 20 k nodes whose
   parent was accepted): acceptance ≈ 0.6-0.85 × the score in every bin above 0.02, 0.77 at 0.9+. */
double arb_dyn_prior(int bin) { return 0.8 * 0.5 * (bin_lo[bin] + (bin_lo[bin + 1] < 1.0f ? bin_lo[bin + 1] : 1.0f)); }

typedef struct cand {
    double v;      /* P(path accepted) */
    int parent;    /* order index of the parent (0 = anchor) */
    int32_t tok;
    int16_t rank;  /* in the parent's successor list; -1 for a spine node */
    int16_t spine; /* index into d for a spine node, -1 for a table node */
    float score;   /* the table's score (NAN for a spine node) */
} cand;

typedef struct dyn_state {
    const arb_method_spec *sp;
    int B, K, cap;    /* budget; successors read per node; heap capacity */
    cand *heap;       /* max-heap on v */
    cand *order;      /* nodes taken, best first; order[0] is the anchor */
    double *ratio_lo; /* scratch: suffix minima of t(n, L) */
    double bin_try[ARB_DYN_BINS], bin_hit[ARB_DYN_BINS];
    arb_chain_stats spine; /* the spine's acceptance, counts decayed by DYN_DECAY a step */
} dyn_state;

static void dyn_destroy(void *st)
{
    dyn_state *s = st;
    if (!s)
        return;
    free(s->heap);
    free(s->order);
    free(s->ratio_lo);
    free(s);
}

static int dyn_create(const arb_method_spec *sp, void **out, arb_err *err)
{
    *out = NULL;
    if (sp->chain_cost.n_max < 2)
        return ARB_ERR(err, ARB_E_INVAL,
                       "method %s: topology dynamic needs this machine's eval cost: set \"budget\": \"auto\" "
                       "(docs/cost-model.md)", sp->id);
    dyn_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "topology dynamic: out of memory");
    s->sp = sp;
    s->B = sp->budget < sp->chain_cost.n_max ? sp->budget : sp->chain_cost.n_max; /* <= DYN_NODES_MAX - 1 */
    s->K = sp->topk < ARB_ADJ_K_MAX ? sp->topk : ARB_ADJ_K_MAX;
    s->cap = s->B * (s->K + 1) + 1;
    s->heap = malloc((size_t)s->cap * sizeof *s->heap);
    s->order = malloc((size_t)(s->B + 1) * sizeof *s->order);
    s->ratio_lo = malloc((size_t)(s->B + 2) * sizeof *s->ratio_lo);
    if (s->B < 1 || !s->heap || !s->order || !s->ratio_lo) {
        dyn_destroy(s);
        return ARB_ERR(err, ARB_E_NOMEM, "topology dynamic: out of memory (budget %d)", sp->budget);
    }
    *out = s;
    return ARB_OK;
}

static double cal(const dyn_state *s, float score)
{
    const int b = arb_dyn_bin(score);
    return (s->bin_hit[b] + DYN_PRIOR_N * arb_dyn_prior(b)) / (s->bin_try[b] + DYN_PRIOR_N);
}

static void heap_push(dyn_state *s, int *n, cand c)
{
    if (*n >= s->cap)
        return; /* cannot happen: B pops push at most K + 1 each */
    int i = (*n)++;
    while (i > 0 && s->heap[(i - 1) / 2].v < c.v) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = c;
}

static cand heap_pop(dyn_state *s, int *n)
{
    cand top = s->heap[0], last = s->heap[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && s->heap[c + 1].v > s->heap[c].v)
            c++;
        if (!(s->heap[c].v > last.v))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    s->heap[i] = last;
    return top;
}

/* The candidates below node `at` of the order (its token tok, after prev): the next spine token
   when `at` is on the spine, then its table successors (not the spine token again). */
static void push_children(dyn_state *s, int *nh, const arb_topo_src *src, int at, int32_t prev, int32_t tok,
                          int spine_next)
{
    const double v = s->order[at].v;
    int32_t skip = -1;
    if (spine_next >= 0 && spine_next < src->m) {
        const double p = spine_next == 0 ? arb_chain_stats_p1(&s->spine) : arb_chain_stats_pc(&s->spine);
        skip = src->d[spine_next];
        heap_push(s, nh, (cand){.v = v * p, .parent = at, .tok = skip, .rank = -1, .spine = (int16_t)spine_next,
                                .score = NAN});
    }
    int32_t ids[ARB_ADJ_K_MAX];
    float sc[ARB_ADJ_K_MAX];
    int n = src->succ(src->ud, prev, tok, ids, sc);
    n = n < s->K ? n : s->K;
    for (int j = 0; j < n; j++)
        if (ids[j] != skip && sc[j] >= s->sp->s_min)
            heap_push(s, nh, (cand){.v = v * cal(s, sc[j]), .parent = at, .tok = ids[j], .rank = (int16_t)j,
                                    .spine = -1, .score = sc[j]});
}

static void dyn_build(void *st, const arb_topo_src *src, arb_tree *t, arb_step_record *rec)
{
    dyn_state *s = st;
    const arb_chain_cost *cc = &s->sp->chain_cost;
    const int L = src->n_ctx, B = s->B < t->cap ? s->B : t->cap;
    /* suffix minima of t(n, L): no later n can cost less, which bounds what is left to gain */
    s->ratio_lo[B + 1] = INFINITY;
    for (int n = B; n >= 1; n--) {
        const double c = arb_chain_cost_us(cc, n, L);
        s->ratio_lo[n] = c < s->ratio_lo[n + 1] ? c : s->ratio_lo[n + 1];
    }
    s->order[0] = (cand){.v = 1.0, .parent = -1, .tok = src->anchor, .rank = -1, .spine = -1, .score = NAN};
    int nh = 0, n = 1, best_n = 1;
    double tau = 1.0, best = 1.0 / arb_chain_cost_us(cc, 1, L);
    push_children(s, &nh, src, 0, src->a_prev, src->anchor, src->m > 0 ? 0 : -1);
    while (n < B && nh > 0) {
        const cand c = heap_pop(s, &nh);
        /* every later node adds at most c.v: stop when even that cannot beat the best ratio */
        if ((tau + (B - n) * c.v) / s->ratio_lo[n + 1] <= best)
            break;
        s->order[n] = c;
        tau += c.v;
        n++;
        const double r = tau / arb_chain_cost_us(cc, n, L);
        if (r > best) {
            best = r;
            best_n = n;
        }
        push_children(s, &nh, src, n - 1, s->order[c.parent].tok, c.tok, c.spine >= 0 ? c.spine + 1 : -1);
    }
    /* the best prefix of the order, as a tree: order index i is tree node i (parents come first) */
    int n_sp = 0;
    for (int i = 1; i < best_n; i++) {
        const cand *c = &s->order[i];
        const int node = arb_tree_add(t, c->parent, c->tok, c->spine >= 0 ? ARB_SRC_PLD : ARB_SRC_TR, c->rank,
                                      c->score);
        if (node < 0)
            break;
        if (c->spine >= 0) {
            t->flags[node] |= ARB_NODE_SPINE;
            n_sp++;
        }
    }
    rec->bs = n_sp;
    rec->br = t->n - 1 - n_sp;
}

/* Learn from the verified path: the spine is a chain (its accepted prefix, chainbudget.h's
   counts); every table node whose parent was accepted is one trial of its score's bin. */
static void dyn_verified(void *st, const arb_tree *t, const int32_t *path, int n_path)
{
    dyn_state *s = st;
    uint8_t on[DYN_NODES_MAX];
    const int n = t->n < DYN_NODES_MAX ? t->n : DYN_NODES_MAX;
    memset(on, 0, (size_t)n);
    for (int k = 0; k < n_path; k++)
        if (path[k] < n)
            on[path[k]] = 1;
    int n_sp = 0, acc_sp = 0;
    for (int i = 1; i < n; i++) {
        if (t->flags[i] & ARB_NODE_SPINE) {
            n_sp++;
            acc_sp += on[i];
        } else if (on[t->parent[i]] && t->draft_prob[i] >= 0.0f) {
            const int b = arb_dyn_bin(t->draft_prob[i]);
            s->bin_try[b] += 1.0;
            s->bin_hit[b] += on[i];
        }
    }
    arb_chain_stats_decay(&s->spine, DYN_DECAY);
    arb_chain_stats_observe(&s->spine, n_sp, acc_sp);
}

static void dyn_reset(void *st)
{
    dyn_state *s = st;
    memset(s->bin_try, 0, sizeof s->bin_try);
    memset(s->bin_hit, 0, sizeof s->bin_hit);
    arb_chain_stats_reset(&s->spine);
}

const arb_topology_i arb_topology_dynamic = {
    .name = "dynamic",
    .wants_match = true,
    .create = dyn_create,
    .destroy = dyn_destroy,
    .build = dyn_build,
    .verified = dyn_verified,
    .reset = dyn_reset,
};
