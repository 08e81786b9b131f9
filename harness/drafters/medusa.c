/* medusa.c — Medusa / Hydra drafters on a static index-path tree (see medusa.h). */
#include "medusa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "drafter.h"
#include "head_sched.h"
#include "heads_file.h"
#include "modelfetch.h"
#include "sha256.h"
#include "tr.h"

const char arb_medusa_mc_sim_7b_63[] =
    "[[0], [0, 0], [1], [0, 1], [2], [0, 0, 0], [1, 0], [0, 2], [3], [0, 3], [4], [0, 4], [2, 0], [0, 5], "
    "[0, 0, 1], [5], [0, 6], [6], [0, 7], [0, 1, 0], [1, 1], [7], [0, 8], [0, 0, 2], [3, 0], [0, 9], [8], [9], "
    "[1, 0, 0], [0, 2, 0], [1, 2], [0, 0, 3], [4, 0], [2, 1], [0, 0, 4], [0, 0, 5], [0, 0, 0, 0], [0, 1, 1], "
    "[0, 0, 6], [0, 3, 0], [5, 0], [1, 3], [0, 0, 7], [0, 0, 8], [0, 0, 9], [6, 0], [0, 4, 0], [1, 4], [7, 0], "
    "[0, 1, 2], [2, 0, 0], [3, 1], [2, 2], [8, 0], [0, 5, 0], [1, 5], [1, 0, 1], [0, 2, 1], [9, 0], [0, 6, 0], "
    "[0, 0, 0, 1], [1, 6], [0, 7, 0]]";

#define TREE_MAX 256

int arb_medusa_tree_auto(const float (*acc)[ARB_HEADS_RANKS], int K, int n_nodes, int32_t *parent, int16_t *rank,
                         int cap, arb_err *err)
{
    if (n_nodes < 1 || n_nodes > TREE_MAX || n_nodes > cap || K < 1 || K > ARB_HEADS_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "medusa tree: %d nodes (1..%d), %d heads", n_nodes, TREE_MAX, K);
    typedef struct { int par, depth, next, r; double val; } cand;
    cand c[TREE_MAX];
    int n = 1;
    c[0] = (cand){-1, 0, 0, -1, 1.0};
    while (n < n_nodes) {
        int best = -1;
        double bv = 0;
        for (int i = 0; i < n; i++) {
            if (c[i].depth >= K || c[i].next >= ARB_HEADS_RANKS)
                continue;
            double v = c[i].val * acc[c[i].depth][c[i].next];
            if (v > bv)
                bv = v, best = i;
        }
        if (best < 0)
            break; /* every remaining candidate has value 0 */
        c[n] = (cand){best, c[best].depth + 1, 0, c[best].next++, bv};
        n++;
    }
    /* as index-path text, parsed into canonical order by the one parser */
    size_t tcap = (size_t)n * (ARB_HEADS_MAX * 4 + 4) + 8;
    char *text = malloc(tcap);
    if (!text)
        return ARB_ERR(err, ARB_E_NOMEM, "medusa tree: out of memory");
    size_t len = 0;
    text[len++] = '[';
    for (int i = 1; i < n; i++) {
        int path[ARB_HEADS_MAX], d = 0;
        for (int v = i; v > 0; v = c[v].par)
            path[d++] = c[v].r;
        len += (size_t)snprintf(text + len, tcap - len, "%s[", i > 1 ? "," : "");
        for (int j = d - 1; j >= 0; j--)
            len += (size_t)snprintf(text + len, tcap - len, "%d%s", path[j], j ? "," : "");
        text[len++] = ']';
    }
    text[len++] = ']';
    text[len] = 0;
    int rc = arb_choices_parse(text, parent, rank, cap, err);
    free(text);
    return rc;
}

int arb_medusa_default_path(const char *kind, const char *model_path, const char *sha256, char *buf, size_t cap,
                            arb_err *err)
{
    char dir[4096];
    int rc = arb_cache_dir(dir, sizeof dir, err);
    if (rc)
        return rc;
    if (strlen(dir) + 8 >= sizeof dir)
        return ARB_ERR(err, ARB_E_RANGE, "heads: cache path too long");
    mkdir(dir, 0755);
    strcat(dir, "/heads");
    mkdir(dir, 0755);
    const char *base = strrchr(model_path, '/');
    base = base ? base + 1 : model_path;
    if ((size_t)snprintf(buf, cap, "%s/%s-%s.%.12s.gguf", dir, kind, base, sha256) >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "heads: path too long");
    return ARB_OK;
}

int arb_heads_path(const char *heads, const char *kind, const char *model_path, const char *sha256, char *buf,
                   size_t cap, arb_err *err)
{
    if (!strcmp(heads, "default"))
        return arb_medusa_default_path(kind, model_path, sha256, buf, cap, err);
    /* "{cache}/NAME": a file in arbor's cache, so a committed config names a heads file
       trained on the user's machine without a home directory in it */
    if (!strncmp(heads, "{cache}/", 8)) {
        char dir[4096];
        const int rc = arb_cache_dir(dir, sizeof dir, err);
        if (rc)
            return rc;
        if ((size_t)snprintf(buf, cap, "%s/%s", dir, heads + 8) >= cap)
            return ARB_ERR(err, ARB_E_RANGE, "heads: path too long");
        return ARB_OK;
    }
    if ((size_t)snprintf(buf, cap, "%s", heads) >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "heads: path too long");
    return ARB_OK;
}

int arb_heads_file_for(const arb_method_spec *s, const char *model_path, const char *sha256, char *buf, size_t cap,
                       arb_err *err)
{
    const arb_drafter_i *d = arb_drafter_find(s->drafter);
    const char *kind = d && d->heads_kind ? d->heads_kind(s) : NULL;
    if (cap)
        buf[0] = '\0';
    if (!kind)
        return ARB_OK;
    if (!sha256) /* only asking whether s loads heads: no digest, no cache directories */
        return (size_t)snprintf(buf, cap, "%s", kind) < cap ? ARB_OK : ARB_ERR(err, ARB_E_RANGE, "heads: buffer too small");
    return arb_heads_path(s->heads, kind, model_path, sha256, buf, cap, err);
}

/* ---------------- the drafters (drafter.h vtable) ---------------- */

typedef struct md_tpl {      /* the tree a step proposes: the static template or a bank tree */
    int n;                     /* nodes incl. the anchor, canonical order */
    const int32_t *parent;
    const int16_t *rank, *depth;
    const int *n_top;          /* candidates per depth (max rank + 1) */
    const bool *has_kids;
    const int *level_start;    /* first node of each depth */
} md_tpl;

typedef struct md_state {
    arb_method_spec spec;
    arb_heads_kind want;      /* medusa or hydra: the vtable's kind */
    arb_heads *h;             /* loaded by bind */
    float *w_lm, *emb;        /* [V x E] f32 (emb == w_lm when tied; NULL for Medusa) */
    arb_lm_head lm;           /* scores the heads: the target's own output head on a CPU, else w_lm */
    arb_heads_ws *ws;         /* one row */
    int n_tpl;                /* template nodes incl. anchor */
    int32_t tpl_parent[TREE_MAX];
    int16_t tpl_rank[TREE_MAX], tpl_depth[TREE_MAX];
    int n_top[ARB_HEADS_MAX]; /* candidates needed per depth (max rank + 1) */
    bool has_kids[TREE_MAX];
    int level_start[ARB_HEADS_MAX + 2]; /* first template node of each depth (canonical order) */
    int32_t top_ids[TREE_MAX][ARB_HEADS_RANKS]; /* Medusa: [depth]; Hydra: [batch slot] */
    float top_p[TREE_MAX][ARB_HEADS_RANKS];
    int slot[TREE_MAX];       /* Hydra: batch row of an internal node in its level's pass */
    int bk[TREE_MAX], bn[TREE_MAX];  /* Hydra: head and list length of each batch row */
    const float *bx[TREE_MAX];       /* Hydra: input of each batch row (into x) */
    float *hid;               /* [E] the last hidden state */
    float *x;                 /* [n_tpl x d_in max] Hydra inputs */
    bool have_hidden;
    md_tpl tpl;               /* view of the static template */
    /* EntMTP (tree_sched set, docs/entmtp.md): bank, policy and features; one view per bank tree,
       so a step's switch is a pointer (§10.4) */
    arb_headsched *hs;
    md_tpl bank_view[ARB_TOPOBANK_MAX];
    int n_top_bank[ARB_HEADS_MAX]; /* Medusa: candidates per head over every bank tree (>= 1) */
    int32_t chain_ids[ARB_HEADS_MAX][ARB_HEADS_RANKS]; /* Hydra: the rank-0 chain's head outputs */
    float chain_p[ARB_HEADS_MAX][ARB_HEADS_RANKS];
} md_state;

static void md_destroy(void *st)
{
    md_state *d = st;
    if (!d)
        return;
    arb_headsched_free(d->hs);
    arb_heads_free(d->h);
    if (d->emb != d->w_lm)
        free(d->emb);
    free(d->w_lm);
    arb_heads_ws_free(d->ws);
    free(d->hid);
    free(d->x);
    free(d);
}

static int md_create_kind(const arb_method_spec *s, arb_heads_kind kind, void **st, arb_err *err)
{
    *st = NULL;
    md_state *d = calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "drafter %s: out of memory", arb_heads_kind_name(kind));
    d->spec = *s;
    d->want = kind;
    *st = d;
    return ARB_OK;
}

static int md_create_medusa(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    return md_create_kind(s, ARB_HEADS_MEDUSA, st, err);
}

static int md_create_hydra(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    return md_create_kind(s, ARB_HEADS_HYDRA, st, err);
}

/* Load the heads for the target (its sha256 must match), the f32 output matrix, the tree. */
static int md_bind(void *st, arb_ctx *target, arb_err *err)
{
    md_state *d = st;
    const arb_model *m = arb_ctx_model(target);
    const char *kname = arb_heads_kind_name(d->want);
    char sha[65], path[4096];
    int rc = arb_sha256_file(arb_model_path(m), sha, err);
    if (rc)
        return rc;
    if ((rc = arb_heads_path(d->spec.heads, kname, arb_model_path(m), sha, path, sizeof path, err)))
        return rc;
    arb_heads_meta meta;
    if ((rc = arb_heads_load(path, sha, &d->h, &meta, err))) {
        if (rc == ARB_E_IO || rc == ARB_E_NOTFOUND)
            arb_err_prefix(err, "drafter %s: heads file (train one with `arbor train %s`)", kname, kname);
        return rc;
    }
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    if (d->h->kind != d->want || d->h->n_embd != mi.n_embd || d->h->n_vocab != mi.n_vocab)
        return ARB_ERR(err, ARB_E_INVAL, "drafter %s: %s holds %s heads for n_embd %d, n_vocab %d (model: %d, %d)",
                       kname, path, arb_heads_kind_name(d->h->kind), d->h->n_embd, d->h->n_vocab, mi.n_embd,
                       mi.n_vocab);
    if ((rc = arb_heads_lm_weights(m, &d->w_lm, d->want == ARB_HEADS_HYDRA ? &d->emb : NULL, err)) ||
        (rc = arb_lm_head_bind(&d->lm, target, d->w_lm, err)))
        return rc;
    /* the tree */
    int n;
    if (!strcmp(d->spec.tree, "mc_sim_7b_63"))
        n = arb_choices_parse(arb_medusa_mc_sim_7b_63, d->tpl_parent, d->tpl_rank, TREE_MAX, err);
    else if (!strcmp(d->spec.tree, "auto"))
        n = arb_medusa_tree_auto((const float(*)[ARB_HEADS_RANKS])meta.rank_acc, d->h->n_heads, d->spec.budget,
                                 d->tpl_parent, d->tpl_rank, TREE_MAX, err);
    else
        return ARB_ERR(err, ARB_E_INVAL, "method %s: tree: unknown '%s' (mc_sim_7b_63, auto)", d->spec.id,
                       d->spec.tree);
    if (n < 0)
        return n;
    /* keep the nodes the heads can fill (depth <= K); deeper ones only have deeper children */
    d->n_tpl = 0;
    memset(d->n_top, 0, sizeof d->n_top);
    memset(d->has_kids, 0, sizeof d->has_kids);
    for (int i = 0; i < n; i++)
        d->tpl_depth[i] = (int16_t)(i == 0 ? 0 : d->tpl_depth[d->tpl_parent[i]] + 1);
    for (int i = 0; i < n; i++) {
        int dep = d->tpl_depth[i];
        if (dep > d->h->n_heads)
            continue;
        ARB_ASSERT(i == d->n_tpl); /* canonical order: every deeper node comes after these */
        if (i > 0) {
            d->has_kids[d->tpl_parent[i]] = true;
            if (d->tpl_rank[i] + 1 > d->n_top[dep - 1])
                d->n_top[dep - 1] = d->tpl_rank[i] + 1;
        }
        d->n_tpl++;
    }
    for (int k = 0; k < ARB_HEADS_MAX; k++)
        if (d->n_top[k] > ARB_HEADS_RANKS)
            return ARB_ERR(err, ARB_E_INVAL, "drafter %s: tree ranks up to %d (at most %d)", kname, d->n_top[k],
                           ARB_HEADS_RANKS);
    for (int dep = 0, i = 0; dep <= ARB_HEADS_MAX + 1; dep++) {
        while (i < d->n_tpl && d->tpl_depth[i] < dep)
            i++;
        d->level_start[dep] = i;
    }
    d->tpl = (md_tpl){.n = d->n_tpl, .parent = d->tpl_parent, .rank = d->tpl_rank, .depth = d->tpl_depth,
                      .n_top = d->n_top, .has_kids = d->has_kids, .level_start = d->level_start};
    /* EntMTP: the bank and its policy (none when tree_sched is empty) */
    int n_max = d->n_tpl;
    if ((rc = arb_headsched_new(&d->spec, d->h->n_heads, arb_method_max_nodes(&d->spec), &d->hs, err)))
        return rc;
    if (d->hs) {
        const arb_topobank *b = arb_headsched_bank(d->hs);
        for (int j = 0; j < b->n; j++) {
            const arb_topo *T = &b->t[j];
            d->bank_view[j] = (md_tpl){.n = T->n, .parent = T->parent, .rank = T->rank, .depth = T->depth,
                                       .n_top = T->n_top, .has_kids = T->has_kids, .level_start = T->level_start};
            n_max = T->n > n_max ? T->n : n_max;
        }
        for (int k = 0; k < d->h->n_heads; k++) {
            d->n_top_bank[k] = 1;
            for (int j = 0; j < b->n; j++)
                if (b->t[j].n_top[k] > d->n_top_bank[k])
                    d->n_top_bank[k] = b->t[j].n_top[k];
        }
    }
    /* scratch, sized once: Medusa K rows; Hydra one row per template node (largest bank tree) */
    int rows = d->want == ARB_HEADS_HYDRA ? n_max : d->h->n_heads;
    if ((rc = arb_heads_ws_new(d->h, rows, &d->ws, err)))
        return rc;
    d->hid = malloc((size_t)mi.n_embd * sizeof *d->hid);
    d->x = malloc((size_t)rows * d->h->d_in[d->h->n_heads - 1] * sizeof *d->x);
    if (!d->hid || !d->x)
        return ARB_ERR(err, ARB_E_NOMEM, "drafter %s: out of memory", kname);
    return ARB_OK;
}

static int md_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    md_state *d = st;
    if (!d->h)
        return ARB_ERR(err, ARB_E_INVAL, "drafter %s: not bound to a target context", arb_heads_kind_name(d->want));
    d->have_hidden = false;
    return ARB_OK;
}

static void md_append(void *st, const int32_t *tok, int n) { (void)st, (void)tok, (void)n; }

static void md_hidden(void *st, const float *h)
{
    md_state *d = st;
    memcpy(d->hid, h, (size_t)d->h->n_embd * sizeof *d->hid);
    d->have_hidden = true;
}

/* Hydra input of the head below node v: [h, e(anchor), e(tokens from depth 1 to v)]. */
static void hydra_x(const md_state *d, const arb_tree *t, int v, int dep, float *x)
{
    const int E = d->h->n_embd;
    memcpy(x, d->hid, (size_t)E * sizeof *x);
    for (int u = v, i = dep; i >= 0; u = t->parent[u], i--) /* u at depth i: slot i + 1 */
        memcpy(x + (size_t)(i + 1) * E, d->emb + (size_t)t->tok[u] * E, (size_t)E * sizeof *x);
}

/* Hydra: level by level, every internal node of a depth in one pass over the output head
   (a CPU reads it once per pass: ~4 passes for mc_sim_7b_63 instead of 20). */
static void hydra_propose(md_state *d, const md_tpl *T, arb_tree *t)
{
    const int dmax = d->h->d_in[d->h->n_heads - 1];
    for (int i = 1; i < T->n;) {
        int dep = T->depth[i], nb = 0; /* fill depth dep from the internal nodes at dep - 1 */
        for (int v = T->level_start[dep - 1]; v < i; v++) {
            if (!T->has_kids[v])
                continue;
            d->slot[v] = nb;
            d->bk[nb] = dep - 1;
            d->bn[nb] = T->n_top[dep - 1];
            d->bx[nb] = d->x + (size_t)nb * dmax;
            hydra_x(d, t, v, dep - 1, d->x + (size_t)nb * dmax);
            nb++;
        }
        arb_heads_topk_batch(d->h, &d->lm, nb, d->bk, d->bx, d->bn, d->top_ids[0], d->top_p[0], d->ws);
        for (; i < T->n && T->depth[i] == dep; i++) {
            int p = T->parent[i], r = T->rank[i], s = d->slot[p];
            int v = arb_tree_add(t, p, d->top_ids[s][r], ARB_SRC_HEAD, r, d->top_p[s][r]);
            ARB_ASSERT(v == i); /* the template is canonical and fits the tree (max nodes) */
        }
    }
}

/* EntMTP: the features for this step's decision, then the policy's bank tree. Medusa runs every
   head on h anyway (for every bank tree's candidates), so p_d is free. Hydra: p_d needs head k on
   the rank-0 chain [h, e(anchor), e(c_1..c_k)] (c_j the chain's top-1 tokens), one single-row
   pass each; with feature lit (s = p0) they are skipped unless entmtp_all_heads [CHOICE: on the
   CPU each pass reads the whole output matrix; docs/entmtp.md], and p_d is logged empty. */
static const md_tpl *sched_pick(md_state *d, const arb_tree *t, arb_step_record *rec)
{
    const int K = d->h->n_heads, E = d->h->n_embd;
    float p[ARB_HEADS_MAX];
    int32_t top1[ARB_HEADS_MAX];
    int D = K;
    if (d->want == ARB_HEADS_MEDUSA) {
        arb_heads_topk_all(d->h, &d->lm, d->hid, d->n_top_bank, d->top_ids[0], d->top_p[0], d->ws);
        for (int k = 0; k < K; k++)
            p[k] = d->top_p[k][0], top1[k] = d->top_ids[k][0];
    } else if (!strcmp(d->spec.feature, "lit") && !d->spec.entmtp_all_heads) {
        D = 0;
    } else {
        memcpy(d->x, d->hid, (size_t)E * sizeof *d->x);
        memcpy(d->x + E, d->emb + (size_t)t->tok[0] * E, (size_t)E * sizeof *d->x);
        for (int k = 0; k < K; k++) {
            arb_heads_topk(d->h, k, &d->lm, d->x, 1, d->chain_ids[k], d->chain_p[k], d->ws);
            p[k] = d->chain_p[k][0], top1[k] = d->chain_ids[k][0];
            if (k + 1 < K) /* the next head's input: this one's top-1 appended */
                memcpy(d->x + (size_t)(k + 2) * E, d->emb + (size_t)top1[k] * E, (size_t)E * sizeof *d->x);
        }
    }
    const arb_topo *T = arb_headsched_pick(d->hs, D ? p : NULL, D ? top1 : NULL, D, rec);
    return &d->bank_view[T - arb_headsched_bank(d->hs)->t];
}

static void md_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    md_state *d = st;
    if (d->hs)
        arb_headsched_verified(d->hs, t, path, n_path);
}

static void md_stop_logits(void *st, const float *row, int n_vocab)
{
    md_state *d = st;
    if (d->hs)
        arb_headsched_base(d->hs, row, n_vocab);
}

static void md_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    md_state *d = st;
    rec->mode = ARB_MODE_TREE;
    if (!d->have_hidden) {
        rec->mode = ARB_MODE_AR;
        return;
    }
    const md_tpl *T = d->hs ? sched_pick(d, t, rec) : &d->tpl; /* EntMTP: this step's bank tree */
    if (d->want == ARB_HEADS_HYDRA) {
        hydra_propose(d, T, t);
        return;
    }
    /* Medusa: one pass over the output matrix for every head, then the Cartesian product (with a
       bank, sched_pick ran it for every bank tree's candidates) */
    if (!d->hs)
        arb_heads_topk_all(d->h, &d->lm, d->hid, d->n_top, d->top_ids[0], d->top_p[0], d->ws);
    for (int i = 1; i < T->n; i++) {
        int p = T->parent[i], dep = T->depth[i], r = T->rank[i];
        int v = arb_tree_add(t, p, d->top_ids[dep - 1][r], ARB_SRC_HEAD, r, d->top_p[dep - 1][r]);
        ARB_ASSERT(v == i); /* the template is canonical and fits the tree (max nodes) */
    }
}

void arb_medusa_drafter_use_f32_head(void *st, bool on)
{
    md_state *d = st;
    d->lm.f32 = on;
}

static size_t md_bytes(const void *st)
{
    const md_state *d = st;
    if (!d->h)
        return 0;
    size_t lm = (size_t)d->h->n_vocab * d->h->n_embd * sizeof(float);
    return d->h->n_params * sizeof(float) + lm + (d->emb && d->emb != d->w_lm ? lm : 0);
}

/* docs/heads.md: Medusa's published tree (63 nodes + the anchor). */
static void md_defaults_medusa(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "Medusa");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->budget = 64;
}

static void md_defaults_hydra(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "Hydra");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->budget = 64;
}

/* The tree_sched bank's largest tree, the `auto` tree's budget, or mc_sim_7b_63: 63 nodes + anchor. */
static int md_max_nodes(const arb_method_spec *s)
{
    return s->tree_sched[0] ? ARB_BANK_TREE_MAX : !strcmp(s->tree, "auto") ? s->budget : 64;
}

static const char *md_heads_kind_medusa(const arb_method_spec *s)
{
    (void)s;
    return "medusa";
}

static const char *md_heads_kind_hydra(const arb_method_spec *s)
{
    (void)s;
    return "hydra";
}

const arb_drafter_i arb_drafter_medusa = {
    .name = "medusa", .create = md_create_medusa, .destroy = md_destroy, .begin = md_begin, .append = md_append,
    .ar_steps = true,
    .propose = md_propose, .bytes = md_bytes, .bind = md_bind, .hidden = md_hidden,
    .verified = md_verified, .stop_logits = md_stop_logits,
    .max_nodes = md_max_nodes, .defaults = md_defaults_medusa, .heads_kind = md_heads_kind_medusa,
};

const arb_drafter_i arb_drafter_hydra = {
    .name = "hydra", .create = md_create_hydra, .destroy = md_destroy, .begin = md_begin, .append = md_append,
    .ar_steps = true,
    .propose = md_propose, .bytes = md_bytes, .bind = md_bind, .hidden = md_hidden,
    .verified = md_verified, .stop_logits = md_stop_logits,
    .max_nodes = md_max_nodes, .defaults = md_defaults_hydra, .heads_kind = md_heads_kind_hydra,
};
