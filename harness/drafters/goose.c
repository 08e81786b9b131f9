/* goose.c — GOOSE spine trees, Algorithm 2 routing, Iso(k)/Sequoia on GOOSE's sources
 * (see goose.h; docs/spec/drafting.md §4). */
#include "goose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"
#include "pld.h"
#include "topology/iso.h"
#include "topology/sequoia.h"

enum { TOPO_SPINE = 0, TOPO_ISO, TOPO_SEQUOIA };
enum { CONS_ANY = 0, CONS_DISTINCT, CONS_LONG }; /* arb_method_spec.consensus, parsed once */
#define SPINE_MAX 64

struct arb_goose {
    arb_method_spec sp;
    int topo;
    int consensus;          /* CONS_* */
    int c_byp, c_all;       /* bypass chain cap; continuation read (max of it and C_max) */
    int cap;                /* largest tree */
    arb_ngram_index *ix;
    arb_adj *adj;
    int32_t *sq_parent;     /* Sequoia template (canonical order) */
    int16_t *sq_rank;
    int sq_n;
    double p_s_hat;         /* EMA of spine acceptance */
    int m_sp;               /* spine nodes proposed by the last tree/bypass */
    int bigram_hits;        /* this step */
    int32_t *queue;         /* [cap] BFS queue of branch nodes */
    int16_t *rel;           /* [cap] depth below the branch point */
    int16_t *width;         /* [cap] extension allowance */
    int32_t spine_tok[SPINE_MAX]; /* control: TR-drawn spine */
};

void arb_goose_split(int B, int m, double r, double rho, int *bs, int *br, int *bsp, int *a)
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

int arb_goose_bypass_cap(const arb_method_spec *s)
{
    int c = s->bypass_max > 0 ? s->bypass_max : s->bypass_max < 0 ? s->budget - 1 : s->max_draft;
    c = c < SPINE_MAX - 1 ? c : SPINE_MAX - 1;
    return c > 1 ? c : 1;
}

double arb_goose_tier(const arb_method_spec *s, double p)
{
    if (!strcmp(s->scheduler, "fixed") && s->fixed_r >= 0.0)
        return s->fixed_r;
    if (p < s->tier_lo)
        return s->r_lo;
    if (p < s->tier_hi)
        return s->r_mid;
    return s->r_hi;
}

static int g_succ(void *ud, int32_t prev, int32_t tok, int32_t *ids, float *sc)
{
    arb_goose *g = ud;
    bool hit;
    int n = arb_adj_succ(g->adj, prev, tok, g->sp.bigram, ids, sc, &hit);
    g->bigram_hits += hit;
    return n;
}

void arb_goose_free(arb_goose *g)
{
    if (!g)
        return;
    arb_ngram_index_free(g->ix);
    arb_adj_free(g->adj);
    free(g->sq_parent);
    free(g->sq_rank);
    free(g->queue);
    free(g->rel);
    free(g->width);
    free(g);
}

int arb_goose_new(const arb_method_spec *s, int n_vocab, arb_goose **out, arb_err *err)
{
    *out = NULL;
    arb_goose *g = calloc(1, sizeof *g);
    if (!g)
        return ARB_ERR(err, ARB_E_NOMEM, "goose: out of memory");
    g->sp = *s;
    g->topo = !strcmp(s->topology, "iso") ? TOPO_ISO : !strcmp(s->topology, "sequoia") ? TOPO_SEQUOIA : TOPO_SPINE;
    g->consensus = !strcmp(s->consensus, "distinct") ? CONS_DISTINCT : !strcmp(s->consensus, "long") ? CONS_LONG : CONS_ANY;
    g->c_byp = arb_goose_bypass_cap(s);
    g->c_all = g->c_byp > s->max_draft ? g->c_byp : s->max_draft;
    g->cap = arb_method_max_nodes(s);
    int rc = arb_ngram_index_new(s->ngram_min, s->ngram_max, 4096, &g->ix, err);
    if (!rc)
        rc = arb_adj_new(n_vocab, s->topk, s->bigram ? s->bigram_log2 : 0, &g->adj, err);
    if (!rc) {
        g->queue = malloc((size_t)g->cap * sizeof *g->queue);
        g->rel = malloc((size_t)g->cap * sizeof *g->rel);
        g->width = malloc((size_t)g->cap * sizeof *g->width);
        if (!g->queue || !g->rel || !g->width)
            rc = ARB_ERR(err, ARB_E_NOMEM, "goose: out of memory");
    }
    if (!rc && g->topo == TOPO_SEQUOIA) {
        double p[ARB_SEQUOIA_K_MAX];
        int K = 0;
        while (K < ARB_SEQUOIA_K_MAX && s->sequoia_p[K] > 0.0 && K < s->topk) {
            p[K] = s->sequoia_p[K];
            K++;
        }
        arb_sequoia *sq = NULL;
        if (K == 0)
            rc = ARB_ERR(err, ARB_E_INVAL, "method %s: sequoia_p: empty acceptance vector", s->id);
        else
            rc = arb_sequoia_new(p, K, s->budget, s->max_depth + 1, &sq, err);
        if (!rc) {
            g->sq_parent = malloc((size_t)s->budget * sizeof *g->sq_parent);
            g->sq_rank = malloc((size_t)s->budget * sizeof *g->sq_rank);
            g->sq_n = g->sq_parent && g->sq_rank
                          ? arb_sequoia_tree(sq, s->budget, s->max_depth + 1, g->sq_parent, g->sq_rank, s->budget)
                          : -1;
            if (g->sq_n < 1)
                rc = ARB_ERR(err, ARB_E_INVAL, "method %s: sequoia: no tree for budget %d, depth %d", s->id,
                             s->budget, s->max_depth);
        }
        arb_sequoia_free(sq);
    }
    if (rc) {
        arb_goose_free(g);
        return rc;
    }
    g->p_s_hat = s->ps_init;
    *out = g;
    return ARB_OK;
}

arb_adj *arb_goose_adj(arb_goose *g) { return g->adj; }
double arb_goose_ps_hat(const arb_goose *g) { return g->p_s_hat; }

/* attach(u, prev, alloc) of docs/spec/drafting.md §4.4: top successors of u not already children of
   u and scoring >= s_min, at most min(alloc, K, budget left); each child's extension
   allowance is alloc shared by relative score. Children are queued for Step 4. */
static void attach(arb_goose *g, arb_tree *t, int u, int32_t prev, int alloc, int B, int rel_child,
                   int *tail)
{
    if (alloc <= 0 || t->n >= B)
        return;
    int32_t ids[ARB_ADJ_K_MAX], fid[ARB_ADJ_K_MAX];
    float sc[ARB_ADJ_K_MAX], fsc[ARB_ADJ_K_MAX];
    int16_t frank[ARB_ADJ_K_MAX];
    int ns = g_succ(g, prev, t->tok[u], ids, sc), nf = 0;
    for (int j = 0; j < ns; j++) {
        bool dup = false; /* already a child of u (spine continuation) or listed twice */
        for (int i = 0; i < nf; i++)
            dup |= fid[i] == ids[j];
        if (dup || sc[j] < g->sp.s_min || arb_tree_find_child(t, u, ids[j]) >= 0)
            continue;
        fid[nf] = ids[j];
        fsc[nf] = sc[j];
        frank[nf++] = (int16_t)j;
    }
    int take = nf;
    if (take > alloc)
        take = alloc;
    if (take > g->sp.topk)
        take = g->sp.topk;
    if (take > B - t->n)
        take = B - t->n;
    float sum = 0.0f;
    for (int j = 0; j < take; j++)
        sum += fsc[j];
    for (int j = 0; j < take; j++) {
        int c = arb_tree_add(t, u, fid[j], ARB_SRC_TR, frank[j], fsc[j]);
        if (c < 0)
            return;
        long w = g->sp.extend_chain || !(sum > 0.0f) ? 1 : lround(alloc * (double)fsc[j] / sum);
        if (w < 1)
            w = 1;
        if (w > g->sp.topk)
            w = g->sp.topk;
        g->rel[c] = (int16_t)rel_child;
        g->width[c] = (int16_t)w;
        g->queue[(*tail)++] = c;
    }
}

void arb_goose_build(arb_goose *g, int32_t a_prev, int32_t anchor, const int32_t *d, int m, double r,
                     arb_tree *t, arb_step_record *rec)
{
    int B = g->sp.budget < t->cap ? g->sp.budget : t->cap;
    int bs, br, bsp, a[SPINE_MAX];
    if (m > SPINE_MAX)
        m = SPINE_MAX;
    arb_goose_split(B, m, r, g->sp.rho, &bs, &br, &bsp, a);
    int spine[SPINE_MAX + 1];
    spine[0] = 0;
    g->rel[0] = 0;
    /* Step 1: the spine (control: TR-drawn tokens, still tagged spine for priority). */
    arb_src ssrc = g->sp.control_tr_spine ? ARB_SRC_TR : ARB_SRC_PLD;
    int n_sp = 0;
    for (int i = 1; i <= bs; i++) {
        int c = arb_tree_add(t, spine[i - 1], d[i - 1], ssrc, 0, NAN);
        if (c < 0)
            break;
        t->flags[c] |= ARB_NODE_SPINE;
        g->rel[c] = 0;
        spine[i] = c;
        n_sp = i;
    }
    int tail = 0, head = 0, sum_a = 0;
    /* Step 2: root branches. */
    attach(g, t, 0, a_prev, br, B, 1, &tail);
    /* Step 3: spine branches with harmonic allocation. */
    if (g->sp.spine_branches)
        for (int i = 1; i <= n_sp; i++) {
            sum_a += a[i - 1];
            attach(g, t, spine[i], t->tok[spine[i - 1]], a[i - 1], B, 1, &tail);
        }
    /* Step 4: BFS extension, shallow levels first, D levels below each branch point. */
    while (head < tail && t->n < B) {
        int v = g->queue[head++];
        if (g->rel[v] >= g->sp.max_depth)
            continue;
        attach(g, t, v, t->tok[t->parent[v]], g->width[v], B, g->rel[v] + 1, &tail);
    }
    rec->bs = n_sp;
    rec->br = br;
    rec->bsp = bsp;
    rec->spine_alloc_sum = sum_a;
    rec->r = (float)r;
    (void)anchor;
}

/* ---- the drafter ---- */
static int gd_create(const arb_method_spec *s, int n_vocab, void **out, arb_err *err)
{
    return arb_goose_new(s, n_vocab, (arb_goose **)out, err);
}

static void gd_destroy(void *st) { arb_goose_free(st); }

static int gd_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    arb_goose *g = st;
    if (new_run || !g->sp.hot_start)
        arb_adj_clear(g->adj);
    g->p_s_hat = g->sp.ps_init;
    g->m_sp = 0;
    return arb_ngram_index_reserve(g->ix, n_tokens, err);
}

static void gd_append(void *st, const int32_t *tok, int n)
{
    arb_goose *g = st;
    for (int i = 0; i < n; i++)
        ARB_ASSERT(arb_ngram_index_append(g->ix, tok[i]) == 0);
}

/* Control row (Table 2 "w/o PLD tokens, shape kept"): a chain of up to `max` tokens drawn
   from the adjacency table (each the top successor of the previous two), standing in for the
   context-match continuation in both the bypass chain and the tree spine. */
static int tr_chain(arb_goose *g, int32_t a_prev, int32_t anchor, int max, int32_t *out)
{
    int32_t ids[ARB_ADJ_K_MAX];
    float sc[ARB_ADJ_K_MAX];
    int32_t pp = a_prev, cur = anchor;
    int k = 0;
    max = max < SPINE_MAX ? max : SPINE_MAX;
    while (k < max && g_succ(g, pp, cur, ids, sc) > 0) {
        out[k++] = ids[0];
        pp = cur;
        cur = ids[0];
    }
    return k;
}

/* Does this match go to the linear bypass? The readings are compared in
   docs/greedy-methods.md ("Which reading"). */
static bool take_bypass(const arb_goose *g, const arb_pld_match *m)
{
    const arb_method_spec *sp = &g->sp;
    if (!sp->bypass || m->len <= 0)
        return false;
    int len_test = sp->bypass_match_len ? m->match_len : m->len;
    if (sp->bypass_len && len_test >= sp->bypass_min)
        return true;
    if (!sp->bypass_consensus)
        return false;
    switch (g->consensus) {
    case CONS_DISTINCT: return m->consensus_distinct;
    case CONS_LONG: return m->agree_len >= sp->bypass_min;
    default: return m->consensus;
    }
}

static void propose_bypass(arb_goose *g, int32_t a_prev, int32_t anchor, const arb_pld_match *m, arb_tree *t)
{
    const int32_t *d = m->d;
    int len = m->len;
    arb_src src = ARB_SRC_PLD;
    if (g->sp.control_tr_spine && g->sp.control_bypass) {
        len = tr_chain(g, a_prev, anchor, len, g->spine_tok);
        d = g->spine_tok;
        src = ARB_SRC_TR;
    }
    int p = 0;
    for (int i = 0; i < len && p >= 0; i++) {
        p = arb_tree_add(t, p, d[i], src, 0, NAN);
        if (p >= 0) {
            t->flags[p] |= ARB_NODE_SPINE;
            g->m_sp++;
        }
    }
}

static void propose_spine_tree(arb_goose *g, int32_t a_prev, int32_t anchor, const arb_pld_match *m,
                               arb_tree *t, arb_step_record *rec)
{
    const arb_method_spec *sp = &g->sp;
    double r = arb_goose_tier(sp, g->p_s_hat);
    const int32_t *d = m->d;
    int mm = sp->context_spine ? m->len : 0;
    if (sp->control_tr_spine && mm > 0) {
        /* same spine length as the real match would get, tokens from the table */
        int bs = (int)floor(sp->budget * r);
        mm = tr_chain(g, a_prev, anchor, bs < mm ? bs : mm, g->spine_tok);
        d = g->spine_tok;
    }
    arb_goose_build(g, a_prev, anchor, d, mm, r, t, rec);
    g->m_sp = rec->bs;
}

static void gd_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    arb_goose *g = st;
    const arb_method_spec *sp = &g->sp;
    int32_t anchor = S[n_S - 1], a_prev = n_S >= 2 ? S[n_S - 2] : -1;
    g->bigram_hits = 0;
    g->m_sp = 0;
    rec->p_s_hat = (float)g->p_s_hat;
    rec->spine_break_depth = -1;
    if (g->topo == TOPO_ISO) {
        arb_iso_build(t, a_prev, sp->iso_k, sp->budget, 0, g_succ, g, g->queue);
    } else if (g->topo == TOPO_SEQUOIA) {
        arb_sequoia_fill(t, a_prev, g->sq_parent, g->sq_rank, g->sq_n, g_succ, g);
    } else {
        arb_pld_match m;
        /* the continuation is read up to the longer of the tree spine's C_max and the bypass
           cap; each use trims it to its own length */
        arb_pld_context_match(g->ix, sp->ngram_min, sp->ngram_max, g->c_all, sp->pld_earliest, &m);
        int full = m.len;
        m.len = m.len < sp->max_draft ? m.len : sp->max_draft;
        rec->match_n = m.n;
        rec->d_len = m.len;
        rec->consensus = m.consensus;
        rec->consensus_distinct = m.consensus_distinct;
        rec->agree_len = m.agree_len;
        rec->match_len = m.match_len;
        if (take_bypass(g, &m)) {
            m.len = full < g->c_byp ? full : g->c_byp;
            propose_bypass(g, a_prev, anchor, &m, t);
            rec->mode = ARB_MODE_BYPASS;
            rec->table_fill = arb_adj_fill(g->adj);
            return;
        }
        int32_t ids[ARB_ADJ_K_MAX];
        float sc[ARB_ADJ_K_MAX];
        if (m.len > 0 || g_succ(g, a_prev, anchor, ids, sc) > 0)
            propose_spine_tree(g, a_prev, anchor, &m, t, rec);
    }
    rec->mode = t->n > 1 ? ARB_MODE_TREE : ARB_MODE_AR;
    rec->bigram_hits = g->bigram_hits;
    rec->table_fill = arb_adj_fill(g->adj);
}

static void gd_harvest(void *st, const arb_harvest *h)
{
    arb_goose *g = st;
    if (h->prefill && !g->sp.harvest_prefill)
        return;
    for (int i = 0; i < h->n; i++)
        arb_adj_write(g->adj, h->prev[i], h->tok[i], h->ids + (size_t)i * h->K, h->scores + (size_t)i * h->K);
}

static void gd_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    arb_goose *g = st;
    if (g->m_sp <= 0)
        return; /* [CHOICE] p̂_s moves only when a spine was proposed */
    int acc = 0;
    for (int i = 1; i < n_path; i++)
        acc += (t->flags[path[i]] & ARB_NODE_SPINE) != 0;
    /* acc / proposed (the spec) falls with the chain's length even at a fixed per-token rate;
       the geometric reading estimates that rate: acc successes, one failure if the walk left
       the spine before its end */
    double obs = g->sp.ema_geometric ? (double)acc / (acc + (acc < g->m_sp)) : (double)acc / g->m_sp;
    g->p_s_hat = g->sp.ema * obs + (1.0 - g->sp.ema) * g->p_s_hat;
}

static size_t gd_bytes(const void *st)
{
    const arb_goose *g = st;
    return arb_adj_bytes(g->adj) + arb_ngram_index_bytes(g->ix);
}

const arb_drafter_i arb_drafter_goose = {
    .name = "goose",
    .create = gd_create,
    .destroy = gd_destroy,
    .begin = gd_begin,
    .append = gd_append,
    .propose = gd_propose,
    .harvest = gd_harvest,
    .verified = gd_verified,
    .bytes = gd_bytes,
};
