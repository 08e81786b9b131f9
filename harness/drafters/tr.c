/* tr.c — adjacency tables, the TR template and the TR drafter (see tr.h). */
#include "tr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"

#define BIGRAM_PROBES 8

struct arb_adj {
    int V, K;
    int fill;               /* non-empty unigram rows */
    int32_t *u_ids;         /* [V*K] */
    uint16_t *u_sc;         /* [V*K] score * 65535 */
    uint8_t *u_cnt;         /* [V] 0 = never written */
    int b_log2;             /* 0: no bigram tier */
    uint64_t *b_key;        /* [cap] packed (prev, cur) + 1; 0 = empty */
    uint32_t *b_stamp;      /* [cap] write stamp */
    int32_t *b_ids;         /* [cap*K] */
    uint16_t *b_sc;         /* [cap*K] */
    uint8_t *b_cnt;         /* [cap] */
    uint32_t stamp;
};

int arb_adj_new(int n_vocab, int K, int bigram_log2, arb_adj **out, arb_err *err)
{
    *out = NULL;
    if (n_vocab < 1 || K < 1 || K > ARB_ADJ_K_MAX || bigram_log2 < 0 || bigram_log2 > 24)
        return ARB_ERR(err, ARB_E_INVAL, "adjacency: vocab %d, K %d (1..%d), bigram_log2 %d (0..24)",
                       n_vocab, K, ARB_ADJ_K_MAX, bigram_log2);
    arb_adj *a = calloc(1, sizeof *a);
    if (!a)
        return ARB_ERR(err, ARB_E_NOMEM, "adjacency: out of memory");
    a->V = n_vocab;
    a->K = K;
    a->b_log2 = bigram_log2;
    size_t vk = (size_t)n_vocab * K, cap = bigram_log2 ? (size_t)1 << bigram_log2 : 0;
    a->u_ids = malloc(vk * sizeof *a->u_ids);
    a->u_sc = malloc(vk * sizeof *a->u_sc);
    a->u_cnt = malloc((size_t)n_vocab);
    int ok = a->u_ids && a->u_sc && a->u_cnt;
    if (cap && ok) {
        a->b_key = malloc(cap * sizeof *a->b_key);
        a->b_stamp = malloc(cap * sizeof *a->b_stamp);
        a->b_ids = malloc(cap * K * sizeof *a->b_ids);
        a->b_sc = malloc(cap * K * sizeof *a->b_sc);
        a->b_cnt = malloc(cap);
        ok = a->b_key && a->b_stamp && a->b_ids && a->b_sc && a->b_cnt;
    }
    if (!ok) {
        arb_adj_free(a);
        return ARB_ERR(err, ARB_E_NOMEM, "adjacency: cannot allocate %d x %d", n_vocab, K);
    }
    arb_adj_clear(a);
    *out = a;
    return ARB_OK;
}

void arb_adj_free(arb_adj *a)
{
    if (!a)
        return;
    free(a->u_ids);
    free(a->u_sc);
    free(a->u_cnt);
    free(a->b_key);
    free(a->b_stamp);
    free(a->b_ids);
    free(a->b_sc);
    free(a->b_cnt);
    free(a);
}

void arb_adj_clear(arb_adj *a)
{
    size_t vk = (size_t)a->V * a->K;
    memset(a->u_ids, 0, vk * sizeof *a->u_ids); /* token 0, as the TR reference's zeros */
    memset(a->u_sc, 0, vk * sizeof *a->u_sc);
    memset(a->u_cnt, 0, (size_t)a->V);
    a->fill = 0;
    if (a->b_log2) {
        size_t cap = (size_t)1 << a->b_log2;
        memset(a->b_key, 0, cap * sizeof *a->b_key);
        memset(a->b_cnt, 0, cap);
    }
    a->stamp = 0;
}

static uint16_t sc16(float s)
{
    if (!(s > 0.0f))
        return 0;
    if (s >= 1.0f)
        return 65535;
    return (uint16_t)lrintf(s * 65535.0f);
}

static uint64_t bigram_key(int32_t prev, int32_t tok)
{
    return (((uint64_t)(uint32_t)prev << 32) | (uint32_t)tok) + 1;
}

static uint32_t bigram_home(const arb_adj *a, uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - a->b_log2));
}

void arb_adj_write(arb_adj *a, int32_t prev, int32_t tok, const int32_t *ids, const float *scores)
{
    if (tok < 0 || tok >= a->V)
        return;
    int K = a->K;
    int32_t *ri = a->u_ids + (size_t)tok * K;
    uint16_t *rs = a->u_sc + (size_t)tok * K;
    for (int j = 0; j < K; j++) {
        ri[j] = ids[j];
        rs[j] = sc16(scores[j]);
    }
    if (!a->u_cnt[tok])
        a->fill++;
    a->u_cnt[tok] = (uint8_t)K;
    if (!a->b_log2 || prev < 0)
        return;
    uint64_t key = bigram_key(prev, tok);
    uint32_t mask = ((uint32_t)1 << a->b_log2) - 1, s = bigram_home(a, key), pick = s;
    for (int p = 0; p < BIGRAM_PROBES; p++, s = (s + 1) & mask) {
        if (a->b_key[s] == key || a->b_key[s] == 0) {
            pick = s;
            break;
        }
        if (a->b_stamp[s] < a->b_stamp[pick]) /* evict the oldest in the window */
            pick = s;
    }
    a->b_key[pick] = key;
    a->b_stamp[pick] = ++a->stamp;
    a->b_cnt[pick] = (uint8_t)K;
    for (int j = 0; j < K; j++) {
        a->b_ids[(size_t)pick * K + j] = ids[j];
        a->b_sc[(size_t)pick * K + j] = sc16(scores[j]);
    }
}

void arb_adj_write_rows(arb_adj *a, int n, const int32_t *prev, const int32_t *tok, const int32_t *ids,
                        const float *scores, int stride)
{
    /* The tables (~5 MB with the bigram tier) are cold after an eval has streamed the weights,
       and one write touches 4-8 lines of them: ask for every row's lines first, so that the
       misses overlap, then write in order (the same writes as one arb_adj_write per row). */
    const int K = a->K;
    for (int i = 0; i < n; i++) {
        const int32_t t = tok[i];
        if (t < 0 || t >= a->V)
            continue;
        __builtin_prefetch(a->u_ids + (size_t)t * K, 1, 3);
        __builtin_prefetch(a->u_ids + (size_t)t * K + K - 1, 1, 3);
        __builtin_prefetch(a->u_sc + (size_t)t * K, 1, 3);
        __builtin_prefetch(a->u_cnt + t, 1, 3);
        if (a->b_log2 && prev && prev[i] >= 0) {
            const uint32_t h = bigram_home(a, bigram_key(prev[i], t));
            __builtin_prefetch(a->b_key + h, 1, 3);
            __builtin_prefetch(a->b_stamp + h, 1, 3);
            __builtin_prefetch(a->b_ids + (size_t)h * K, 1, 3);
            __builtin_prefetch(a->b_sc + (size_t)h * K, 1, 3);
        }
    }
    for (int i = 0; i < n; i++)
        arb_adj_write(a, prev ? prev[i] : -1, tok[i], ids + (size_t)i * stride, scores + (size_t)i * stride);
}

const int32_t *arb_adj_row(const arb_adj *a, int32_t tok, bool *written)
{
    *written = a->u_cnt[tok] != 0;
    return a->u_ids + (size_t)tok * a->K;
}

int arb_adj_succ(const arb_adj *a, int32_t prev, int32_t tok, bool use_bigram, int32_t *ids,
                 float *scores, bool *bigram_hit)
{
    int K = a->K, n = 0;
    *bigram_hit = false;
    if (tok < 0 || tok >= a->V)
        return 0;
    if (use_bigram && a->b_log2 && prev >= 0) {
        uint64_t key = bigram_key(prev, tok);
        uint32_t mask = ((uint32_t)1 << a->b_log2) - 1, s = bigram_home(a, key);
        for (int p = 0; p < BIGRAM_PROBES; p++, s = (s + 1) & mask) {
            if (a->b_key[s] == key) {
                for (int j = 0; j < a->b_cnt[s]; j++) {
                    ids[n] = a->b_ids[(size_t)s * K + j];
                    scores[n++] = a->b_sc[(size_t)s * K + j] * (1.0f / 65535.0f);
                }
                *bigram_hit = n > 0;
                break;
            }
            if (a->b_key[s] == 0)
                break;
        }
    }
    int nb = n;
    for (int j = 0; j < a->u_cnt[tok] && n < K; j++) {
        int32_t x = a->u_ids[(size_t)tok * K + j];
        bool dup = false;
        for (int i = 0; i < nb; i++)
            dup |= ids[i] == x;
        if (dup)
            continue;
        ids[n] = x;
        scores[n++] = a->u_sc[(size_t)tok * K + j] * (1.0f / 65535.0f);
    }
    return n;
}

int arb_adj_fill(const arb_adj *a) { return a->fill; }
int arb_adj_k(const arb_adj *a) { return a->K; }

size_t arb_adj_bytes(const arb_adj *a)
{
    size_t vk = (size_t)a->V * a->K, cap = a->b_log2 ? (size_t)1 << a->b_log2 : 0;
    return sizeof *a + vk * (sizeof(int32_t) + sizeof(uint16_t)) + (size_t)a->V +
           cap * (sizeof(uint64_t) + sizeof(uint32_t) + 1 + (size_t)a->K * (sizeof(int32_t) + sizeof(uint16_t)));
}

/* ---- index-path templates ---- */
static const char tr_222[] =
    "[[0],[1],[2],[3],[4],[5],[6],[7],"
    "[0,0],[0,1],[0,2],[0,3],[0,4],[0,5],[0,6],[0,7],[1,0],[1,1],[1,2],[1,3],[2,0],[2,1],[2,2],[3,0],[3,1],[4,0],[5,0],[6,0],[7,0],"
    "[0,0,0],[0,0,1],[0,0,2],[0,0,3],[0,0,4],[0,0,5],[0,0,6],[0,0,7],[0,1,0],[0,1,1],[0,1,2],[0,2,0],[0,2,1],[0,3,0],[0,4,0],[0,5,0],[0,6,0],[0,7,0],[1,0,0],[1,0,1],[1,1,0],[2,0,0],[3,0,0],[4,0,0],[5,0,0],"
    "[0,0,0,0],[0,0,0,1],[0,0,0,2],[0,0,0,3],[0,0,0,4],[0,0,1,0],[0,0,1,1],[0,0,2,0],[0,0,3,0],[0,0,4,0],[0,1,0,0],[0,2,0,0],[1,0,0,0],[2,0,0,0],[3,0,0,0],"
    "[0,0,0,0,0],[0,0,0,0,1],[0,0,0,0,2],[0,0,0,1,0],[0,0,0,2,0],[0,0,1,0,0],[0,1,0,0,0],[1,0,0,0,0],"
    "[0,0,0,0,0,0],[0,0,0,0,0,1],[0,0,0,1,0,0]]";

#define PATH_MAX_LEN 16

typedef struct { int len; int16_t c[PATH_MAX_LEN]; } ipath;

static int path_cmp(const void *x, const void *y)
{
    const ipath *a = x, *b = y;
    if (a->len != b->len)
        return a->len - b->len;
    for (int i = 0; i < a->len; i++)
        if (a->c[i] != b->c[i])
            return a->c[i] - b->c[i];
    return 0;
}

static int find_path(const ipath *p, int n, const int16_t *c, int len)
{
    for (int i = 0; i < n; i++)
        if (p[i].len == len && !memcmp(p[i].c, c, (size_t)len * sizeof *c))
            return i;
    return -1;
}

int arb_choices_parse(const char *text, int32_t *parent, int16_t *rank, int cap, arb_err *err)
{
    ipath *p = malloc((size_t)cap * sizeof *p);
    if (!p)
        return ARB_ERR(err, ARB_E_NOMEM, "choices: out of memory");
    int n = 0, depth = 0, rc = ARB_OK;
    const char *s = text;
    for (; *s && rc == ARB_OK; s++) {
        if (*s == '[') {
            if (++depth == 2) {
                if (n >= cap - 1)
                    rc = ARB_ERR(err, ARB_E_RANGE, "choices: more than %d paths", cap - 1);
                else
                    p[n].len = 0;
            } else if (depth > 2)
                rc = ARB_ERR(err, ARB_E_FORMAT, "choices: nesting deeper than 2 at offset %ld", (long)(s - text));
        } else if (*s == ']') {
            if (depth == 2) {
                if (p[n].len == 0)
                    rc = ARB_ERR(err, ARB_E_FORMAT, "choices: empty path at offset %ld", (long)(s - text));
                n++;
            }
            depth--;
        } else if (*s >= '0' && *s <= '9' && depth == 2) {
            char *e;
            long v = strtol(s, &e, 10);
            if (p[n].len >= PATH_MAX_LEN || v > 1000)
                rc = ARB_ERR(err, ARB_E_RANGE, "choices: path %d too long or rank %ld too large", n, v);
            else
                p[n].c[p[n].len++] = (int16_t)v;
            s = e - 1;
        } else if (*s != ',' && *s != ' ' && *s != '\n') {
            rc = ARB_ERR(err, ARB_E_FORMAT, "choices: unexpected '%c' at offset %ld", *s, (long)(s - text));
        }
    }
    if (rc == ARB_OK && depth != 0)
        rc = ARB_ERR(err, ARB_E_FORMAT, "choices: unbalanced brackets");
    if (rc == ARB_OK) {
        qsort(p, (size_t)n, sizeof *p, path_cmp);
        parent[0] = -1;
        rank[0] = -1;
        for (int i = 0; i < n && rc == ARB_OK; i++) {
            int len = p[i].len, par = 0;
            if (i > 0 && !path_cmp(&p[i], &p[i - 1]))
                rc = ARB_ERR(err, ARB_E_FORMAT, "choices: duplicate path %d", i);
            if (rc == ARB_OK && len > 1 && (par = find_path(p, i, p[i].c, len - 1)) < 0)
                rc = ARB_ERR(err, ARB_E_FORMAT, "choices: path %d not prefix-closed", i);
            else if (len > 1)
                par += 1;
            if (rc == ARB_OK && p[i].c[len - 1] > 0) {
                int16_t c[PATH_MAX_LEN];
                memcpy(c, p[i].c, (size_t)len * sizeof *c);
                c[len - 1]--;
                if (find_path(p, i, c, len) < 0)
                    rc = ARB_ERR(err, ARB_E_FORMAT, "choices: path %d not rank-closed", i);
            }
            parent[i + 1] = par;
            rank[i + 1] = p[i].c[len - 1];
        }
    }
    free(p);
    return rc == ARB_OK ? n + 1 : rc;
}

int arb_tr_template(int32_t *parent, int16_t *rank, int cap)
{
    int n = arb_choices_parse(tr_222, parent, rank, cap, NULL);
    ARB_ASSERT(n == 81 || cap < 81);
    return n;
}

int arb_tr_template_prune(int32_t *parent, int16_t *rank, int n, const double *p, int budget, double *tau)
{
    double prob[128];
    bool keep[128] = {false};
    int K = 0;
    while (K < ARB_SEQUOIA_K_MAX - 1 && p[K] > 0)
        K++;
    n = n < 128 ? n : 128;
    budget = budget < 1 ? 1 : budget;
    prob[0] = 1.0;
    for (int i = 1; i < n; i++) /* canonical order: the parent comes first */
        prob[i] = prob[parent[i]] * (rank[i] < K ? p[rank[i]] : 0.0);
    keep[0] = true;
    double sum = 1.0;
    int m = 1;
    for (; m < budget && m < n; m++) { /* the likeliest node not kept yet (first on ties) */
        int best = -1;
        for (int i = 1; i < n; i++)
            if (!keep[i] && (best < 0 || prob[i] > prob[best]))
                best = i;
        keep[best] = true;
        sum += prob[best];
    }
    int32_t map[128];
    int j = 0;
    for (int i = 0; i < n; i++) {
        map[i] = -1;
        if (!keep[i])
            continue;
        ARB_ASSERT(i == 0 || map[parent[i]] >= 0); /* prefix-closed */
        parent[j] = i == 0 ? -1 : map[parent[i]];
        rank[j] = rank[i];
        map[i] = j++;
    }
    if (tau)
        *tau = sum;
    return j;
}

/* ---- the TR drafter: static template filled by BFS from the unigram table ---- */
typedef struct tr_state {
    arb_adj *adj;
    int n_tpl;
    int32_t tpl_parent[128];
    int16_t tpl_rank[128];
    bool prune_unfilled, hot_start;
} tr_state;

static void tr_destroy(void *st)
{
    tr_state *s = st;
    if (!s)
        return;
    arb_adj_free(s->adj);
    free(s);
}

static int tr_create(const arb_method_spec *sp, int n_vocab, void **out, arb_err *err)
{
    *out = NULL;
    tr_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "tr: out of memory");
    int rc = arb_adj_new(n_vocab, sp->topk, 0, &s->adj, err);
    if (rc) {
        free(s);
        return rc;
    }
    s->n_tpl = arb_tr_template(s->tpl_parent, s->tpl_rank, 128);
    if (sp->budget >= 1 && sp->budget < s->n_tpl) /* a smaller budget ("auto"): the likeliest nodes of 2.2.2 */
        s->n_tpl = arb_tr_template_prune(s->tpl_parent, s->tpl_rank, s->n_tpl, sp->sequoia_p, sp->budget, NULL);
    s->prune_unfilled = sp->tr_prune_unfilled;
    s->hot_start = sp->hot_start;
    for (int i = 1; i < s->n_tpl; i++)
        if (s->tpl_rank[i] >= sp->topk) {
            int need = s->tpl_rank[i] + 1;
            tr_destroy(s);
            return ARB_ERR(err, ARB_E_INVAL, "method %s: topk: TR template needs topk >= %d", sp->id, need);
        }
    *out = s;
    return ARB_OK;
}

static int tr_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    tr_state *s = st;
    if (new_run || !s->hot_start)
        arb_adj_clear(s->adj);
    return ARB_OK;
}

static void tr_append(void *st, const int32_t *tok, int n) {}

static void tr_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    tr_state *s = st;
    /* map template index -> tree index (-1 when pruned) */
    int32_t map[128];
    map[0] = 0;
    for (int i = 1; i < s->n_tpl; i++) {
        map[i] = -1;
        int p = map[s->tpl_parent[i]];
        if (p < 0)
            continue;
        bool written;
        const int32_t *row = arb_adj_row(s->adj, t->tok[p], &written);
        if (!written && s->prune_unfilled)
            continue;
        map[i] = arb_tree_add(t, p, row[s->tpl_rank[i]], ARB_SRC_TR, s->tpl_rank[i], NAN);
    }
    rec->mode = t->n > 1 ? ARB_MODE_TREE : ARB_MODE_AR;
    rec->table_fill = arb_adj_fill(s->adj);
}

static void tr_harvest(void *st, const arb_harvest *h)
{
    tr_state *s = st;
    arb_adj_write_rows(s->adj, h->n, NULL, h->tok, h->ids, h->scores, h->K);
}

static size_t tr_bytes(const void *st) { return arb_adj_bytes(((const tr_state *)st)->adj); }

/* Template 2.2.2, hot start across prompts. */
static void trd_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "TR");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->budget = 81;
    s->hot_start = true;
    s->harvest_prefill = false; /* the TR reference harvests decode forwards only */
}

/* Template 2.2.2: 1 + 8 + 8*8 + 8 nodes (the TR reference's fixed tree), or its budget likeliest. */
static int trd_max_nodes(const arb_method_spec *s) { return s->budget >= 1 && s->budget < 81 ? s->budget : 81; }

static int trd_validate(const arb_method_spec *s, arb_err *err)
{
    if (s->topk < 8)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: topk: TR template 2.2.2 needs topk >= 8", s->id);
    return ARB_OK;
}

const arb_drafter_i arb_drafter_tr = {
    .name = "tr",
    .ar_steps = true,
    .create = tr_create,
    .destroy = tr_destroy,
    .begin = tr_begin,
    .append = tr_append,
    .propose = tr_propose,
    .harvest = tr_harvest,
    .verified = NULL,
    .bytes = tr_bytes,
    .max_nodes = trd_max_nodes,
    .validate = trd_validate,
    .defaults = trd_defaults,
};
