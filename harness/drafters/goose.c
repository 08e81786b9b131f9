/* goose.c — GOOSE spine trees, Algorithm 2 routing, Iso(k)/Sequoia on GOOSE's sources
 * (see goose.h; docs/spec/drafting.md §4). */
#include "goose.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"
#include "pld.h"
#include "topologies/spine.h"
#include "topologies/topology.h"

enum { CONS_ANY = 0, CONS_DISTINCT, CONS_LONG }; /* arb_method_spec.consensus, parsed once */
#define SPINE_MAX ARB_SPINE_MAX

/* The consensus readings (docs/greedy-methods.md "Which reading"): the one list config
   validation and the parse at create read. A rule, not a plug-in: one predicate on the match,
   no state (docs/ARCHITECTURE.md "Adding a plug-in"). */
static const char *const consensus_names[] = {[CONS_ANY] = "any", [CONS_DISTINCT] = "distinct",
                                              [CONS_LONG] = "long"};

struct arb_goose {
    arb_method_spec sp;
    const arb_topology_i *topo; /* the tree shape (topologies/topology.h) */
    void *tst;              /* its state */
    int consensus;          /* CONS_* */
    int c_byp, c_all;       /* bypass chain cap; continuation read (max of it and C_max) */
    arb_ngram_index *ix;
    arb_adj *adj;
    double p_s_hat;         /* EMA of spine acceptance */
    int m_sp;               /* spine nodes proposed by the last tree/bypass */
    int bigram_hits;        /* this step */
    int32_t spine_tok[SPINE_MAX]; /* control: TR-drawn spine */
    /* budget "auto" (sp.chain_cost set): the bypass chain's length is picked per step from the
       acceptance of this prompt's earlier bypass chains (chainbudget.h) */
    arb_chain_stats byp_stats;
    int byp_k;              /* tokens in this step's bypass chain, 0 when the step built a tree */
    int n_ctx;              /* this step's context length (the topology's t(n, L)) */
};

int arb_goose_consensus_find(const char *name)
{
    for (int i = 0; name && i < (int)(sizeof consensus_names / sizeof consensus_names[0]); i++)
        if (!strcmp(consensus_names[i], name))
            return i;
    return -1;
}

const char *arb_goose_consensus_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof consensus_names / sizeof consensus_names[0] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", consensus_names[i]);
    return buf;
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
    if (g->topo)
        g->topo->destroy(g->tst);
    free(g);
}

int arb_goose_new(const arb_method_spec *s, int n_vocab, arb_goose **out, arb_err *err)
{
    *out = NULL;
    arb_goose *g = calloc(1, sizeof *g);
    if (!g)
        return ARB_ERR(err, ARB_E_NOMEM, "goose: out of memory");
    g->sp = *s;
    g->topo = arb_topology_find(s->topology);
    g->consensus = arb_goose_consensus_find(s->consensus);
    if (!g->topo || g->consensus < 0) { /* arb_method_spec_validate says which */
        free(g);
        return ARB_ERR(err, ARB_E_INVAL, "method %s: goose: unknown topology '%s' or consensus '%s'", s->id,
                       s->topology, s->consensus);
    }
    g->c_byp = arb_goose_bypass_cap(s);
    g->c_all = g->c_byp > s->max_draft ? g->c_byp : s->max_draft;
    int rc = arb_ngram_index_new(s->ngram_min, s->ngram_max, 4096, &g->ix, err);
    if (!rc)
        rc = arb_adj_new(n_vocab, s->topk, s->bigram ? s->bigram_log2 : 0, &g->adj, err);
    if (!rc) /* after the tables: the spine topology reads g->sp, which must not move */
        rc = g->topo->create(&g->sp, &g->tst, err);
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

void arb_goose_build(arb_goose *g, int32_t a_prev, int32_t anchor, const int32_t *d, int m, double r,
                     arb_tree *t, arb_step_record *rec)
{
    arb_topo_src src = {.succ = g_succ, .ud = g, .a_prev = a_prev, .anchor = anchor, .d = d, .m = m, .r = r,
                        .n_ctx = g->n_ctx};
    g->topo->build(g->tst, &src, t, rec);
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
    if (new_run && g->topo->reset) /* what the topology learned belongs to the run, like the table */
        g->topo->reset(g->tst);
    g->p_s_hat = g->sp.ps_init;
    g->m_sp = 0;
    g->byp_k = 0;
    arb_chain_stats_reset(&g->byp_stats);
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
    g->byp_k = 0;
    g->n_ctx = n_S;
    rec->p_s_hat = (float)g->p_s_hat;
    rec->spine_break_depth = -1;
    if (!g->topo->wants_match) { /* a fixed shape on the adjacency table */
        arb_goose_build(g, a_prev, anchor, NULL, 0, 0.0, t, rec);
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
            if (sp->chain_cost.n_max > 0) /* budget auto: this step's length */
                m.len = arb_chain_pick(&sp->chain_cost, arb_chain_stats_p1(&g->byp_stats),
                                       arb_chain_stats_pc(&g->byp_stats), 1, m.len, n_S);
            propose_bypass(g, a_prev, anchor, &m, t);
            g->byp_k = g->m_sp;
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
    arb_adj_write_rows(g->adj, h->n, h->prev, h->tok, h->ids, h->scores, h->K);
}

static void gd_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    arb_goose *g = st;
    if (g->topo->verified && g->byp_k == 0)
        g->topo->verified(g->tst, t, path, n_path);
    if (g->byp_k > 0) /* the bypass chain is the whole tree: the path is its accepted prefix */
        arb_chain_stats_observe(&g->byp_stats, g->byp_k, n_path - 1);
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

/* The common defaults are GOOSE's (B = 60, D = 6, K = 10 ...): only the label. */
static void gd_defaults(arb_method_spec *s) { snprintf(s->id, sizeof s->id, "GOOSE"); }

/* The budget, or the bypass chain when the topology reads the continuation and the chain is longer. */
static int gd_max_nodes(const arb_method_spec *s)
{
    int n = s->budget;
    int byp = arb_goose_bypass_cap(s);
    int chain = byp > s->max_draft ? byp : s->max_draft;
    const arb_topology_i *ti = arb_topology_find(s->topology);
    if (ti && ti->wants_match && 1 + chain > n)
        n = 1 + chain; /* bypass chain */
    return n;
}

const arb_drafter_i arb_drafter_goose = {
    .name = "goose",
    .ar_steps = true,
    .create = gd_create,
    .destroy = gd_destroy,
    .begin = gd_begin,
    .append = gd_append,
    .propose = gd_propose,
    .harvest = gd_harvest,
    .verified = gd_verified,
    .bytes = gd_bytes,
    .max_nodes = gd_max_nodes,
    .defaults = gd_defaults,
    .uses_topology = true,
};
