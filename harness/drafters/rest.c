/* rest.c — REST retrieval and the `rest` drafter (see rest.h). */
#include "rest.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"

arb_rest_opts arb_rest_default_opts(void)
{
    /* The reference's defaults (FasterDecoding/REST: token spans 16..2, DraftRetriever
       search k = 5000, long = 10, choices = 64). */
    return (arb_rest_opts){.suffix_max = 16, .suffix_min = 2, .max_matches = 5000, .cont_len = 10, .n_draft = 64};
}

struct arb_rest_retriever {
    arb_rest_opts o;
    int cap;              /* trie nodes incl. the root: 1 + max_matches * cont_len */
    /* the trie, node 0 = the root (the anchor); children in first-seen order */
    int32_t *tok, *parent, *count, *first_child, *last_child, *next_sibling;
    int16_t *depth;
    int32_t *path, *ptok; /* [cont_len] the previous continuation's nodes and tokens */
    int32_t *heap;        /* [cap] best-first frontier */
    int32_t *out_idx;     /* [cap] trie node -> index in the result */
    int32_t *res_tok, *res_parent, *res_count, *res_pcount; /* [n_draft] */
};

int arb_rest_retriever_new(const arb_rest_opts *o, arb_rest_retriever **out, arb_err *err)
{
    *out = NULL;
    if (o->suffix_min < 1 || o->suffix_max < o->suffix_min || o->suffix_max > 64 || o->max_matches < 1 ||
        o->max_matches > 1000000 || o->cont_len < 1 || o->cont_len > 64 || o->n_draft < 1 || o->n_draft > 1023)
        return ARB_ERR(err, ARB_E_INVAL, "rest: options out of range (suffix %d..%d, matches %d, cont_len %d, n_draft %d)",
                       o->suffix_min, o->suffix_max, o->max_matches, o->cont_len, o->n_draft);
    arb_rest_retriever *r = calloc(1, sizeof *r);
    if (!r)
        return ARB_ERR(err, ARB_E_NOMEM, "rest: out of memory");
    r->o = *o;
    r->cap = 1 + o->max_matches * o->cont_len;
    size_t c = (size_t)r->cap, k = (size_t)o->n_draft, L = (size_t)o->cont_len;
    r->tok = malloc(c * sizeof *r->tok);
    r->parent = malloc(c * sizeof *r->parent);
    r->count = malloc(c * sizeof *r->count);
    r->first_child = malloc(c * sizeof *r->first_child);
    r->last_child = malloc(c * sizeof *r->last_child);
    r->next_sibling = malloc(c * sizeof *r->next_sibling);
    r->depth = malloc(c * sizeof *r->depth);
    r->heap = malloc(c * sizeof *r->heap);
    r->out_idx = malloc(c * sizeof *r->out_idx);
    r->path = malloc(L * sizeof *r->path);
    r->ptok = malloc(L * sizeof *r->ptok);
    r->res_tok = malloc(k * sizeof *r->res_tok);
    r->res_parent = malloc(k * sizeof *r->res_parent);
    r->res_count = malloc(k * sizeof *r->res_count);
    r->res_pcount = malloc(k * sizeof *r->res_pcount);
    if (!r->tok || !r->parent || !r->count || !r->first_child || !r->last_child || !r->next_sibling || !r->depth ||
        !r->heap || !r->out_idx || !r->path || !r->ptok || !r->res_tok || !r->res_parent || !r->res_count ||
        !r->res_pcount) {
        arb_rest_retriever_free(r);
        return ARB_ERR(err, ARB_E_NOMEM, "rest: cannot allocate a trie of %d nodes", (int)c);
    }
    *out = r;
    return ARB_OK;
}

void arb_rest_retriever_free(arb_rest_retriever *r)
{
    if (!r)
        return;
    free(r->tok), free(r->parent), free(r->count), free(r->first_child), free(r->last_child);
    free(r->next_sibling), free(r->depth), free(r->heap), free(r->out_idx), free(r->path), free(r->ptok);
    free(r->res_tok), free(r->res_parent), free(r->res_count), free(r->res_pcount);
    free(r);
}

size_t arb_rest_retriever_bytes(const arb_rest_retriever *r)
{
    return sizeof *r + (size_t)r->cap * (8 * sizeof(int32_t) + sizeof(int16_t)) +
           (size_t)r->o.cont_len * 2 * sizeof(int32_t) + (size_t)r->o.n_draft * 4 * sizeof(int32_t);
}

static int new_node(arb_rest_retriever *r, int n, int parent, int32_t tok)
{
    r->tok[n] = tok, r->parent[n] = parent, r->count[n] = 1;
    r->depth[n] = (int16_t)(r->depth[parent] + 1);
    r->first_child[n] = r->last_child[n] = r->next_sibling[n] = -1;
    if (r->last_child[parent] < 0)
        r->first_child[parent] = n;
    else
        r->next_sibling[r->last_child[parent]] = n;
    r->last_child[parent] = n;
    return n;
}

/* Insert the occurrences' continuations. They arrive in suffix-array order, i.e. sorted, so
   every prefix's continuations are contiguous and a continuation shares nodes exactly with
   its predecessor, for their common prefix: the trie is built in one pass, no hashing. */
static int build_trie(arb_rest_retriever *r, const arb_datastore *ds, uint64_t lo, uint64_t hi, int m)
{
    uint64_t n_tok = arb_datastore_get_meta(ds)->n_tokens;
    int n = 1, plen = 0, L = r->o.cont_len;
    r->tok[0] = -1, r->parent[0] = -1, r->count[0] = 0, r->depth[0] = 0;
    r->first_child[0] = r->last_child[0] = r->next_sibling[0] = -1;
    for (uint64_t i = lo; i < hi; i++) {
        /* The occurrences sit at random places in the corpus: fetch a few rows ahead, or each
           one is a cache miss in a row (most of the retrieval time at 5000 occurrences). */
        if (i + 8 < hi)
            arb_datastore_prefetch(ds, arb_datastore_sa(ds, i + 8) + (uint64_t)m);
        uint64_t pos = arb_datastore_sa(ds, i) + (uint64_t)m;
        int j = 0;
        for (; j < L && pos + (uint64_t)j < n_tok; j++) {
            int32_t t = arb_datastore_token(ds, pos + (uint64_t)j);
            if (t < 0)
                break; /* the document's end */
            if (j < plen && r->ptok[j] == t) {
                r->count[r->path[j]]++;
                continue;
            }
            plen = j; /* diverged: the rest of this continuation is new */
            r->path[j] = new_node(r, n++, j ? r->path[j - 1] : 0, t);
            r->ptok[j] = t;
        }
        if (j > 0)
            r->count[0]++;
        plen = j;
    }
    return n;
}

/* Heap order: more continuations first, then shallower, then first seen (smaller id). A
   child never beats its parent, so popping n_draft nodes yields a prefix-closed set. */
static bool better(const arb_rest_retriever *r, int a, int b)
{
    if (r->count[a] != r->count[b])
        return r->count[a] > r->count[b];
    if (r->depth[a] != r->depth[b])
        return r->depth[a] < r->depth[b];
    return a < b;
}

static void heap_push(arb_rest_retriever *r, int *hn, int v)
{
    int i = (*hn)++;
    while (i > 0 && better(r, v, r->heap[(i - 1) / 2])) {
        r->heap[i] = r->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->heap[i] = v;
}

static int heap_pop(arb_rest_retriever *r, int *hn)
{
    int top = r->heap[0], v = r->heap[--*hn], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *hn)
            break;
        if (c + 1 < *hn && better(r, r->heap[c + 1], r->heap[c]))
            c++;
        if (!better(r, r->heap[c], v))
            break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    if (*hn > 0)
        r->heap[i] = v;
    return top;
}

int arb_rest_retrieve(arb_rest_retriever *r, const arb_datastore *ds, const int32_t *S, int n_S,
                      arb_rest_result *res)
{
    memset(res, 0, sizeof *res);
    res->tok = r->res_tok, res->parent = r->res_parent, res->count = r->res_count;
    res->parent_count = r->res_pcount;
    uint64_t lo = 0, hi = 0;
    int m = n_S < r->o.suffix_max ? n_S : r->o.suffix_max;
    for (; m >= r->o.suffix_min; m--) {
        arb_datastore_find(ds, S + n_S - m, m, &lo, &hi);
        if (hi > lo)
            break;
    }
    if (m < r->o.suffix_min || hi <= lo)
        return 0;
    if (hi - lo > (uint64_t)r->o.max_matches)
        hi = lo + (uint64_t)r->o.max_matches;
    res->match_len = m;
    res->n_matches = (int)(hi - lo);
    int n_nodes = build_trie(r, ds, lo, hi, m);
    res->n_trie = n_nodes - 1;
    int hn = 0, k = 0;
    r->out_idx[0] = -1;
    for (int c = r->first_child[0]; c >= 0; c = r->next_sibling[c])
        heap_push(r, &hn, c);
    while (hn > 0 && k < r->o.n_draft) {
        int v = heap_pop(r, &hn);
        int p = r->parent[v];
        r->out_idx[v] = k;
        r->res_tok[k] = r->tok[v];
        r->res_parent[k] = r->out_idx[p];
        r->res_count[k] = r->count[v];
        r->res_pcount[k] = r->count[p];
        k++;
        for (int c = r->first_child[v]; c >= 0; c = r->next_sibling[c])
            heap_push(r, &hn, c);
    }
    return k;
}

const char *arb_rest_auto_datastore(const char *dataset)
{
    static const char *const code[] = {"humaneval", "mbpp", "classeval", "livecodebench"};
    for (size_t i = 0; dataset && i < sizeof code / sizeof code[0]; i++)
        if (!strcmp(dataset, code[i]))
            return "code";
    return "chat";
}

/* ---- the drafter ---- */
typedef struct rest_state {
    arb_rest_retriever *r;
    arb_datastore *ds;          /* loaded at bind, when the target's tokenizer is known */
    char path[4096];            /* resolved datastore file */
    int32_t *tree_idx;          /* [n_draft] result index -> tree node */
} rest_state;

static void rest_destroy(void *st)
{
    rest_state *s = st;
    if (!s)
        return;
    arb_rest_retriever_free(s->r);
    arb_datastore_free(s->ds);
    free(s->tree_idx);
    free(s);
}

static int rest_create(const arb_method_spec *sp, int n_vocab, void **out, arb_err *err)
{
    *out = NULL;
    arb_rest_opts o = {.suffix_max = sp->rest_suffix_max, .suffix_min = sp->rest_suffix_min,
                       .max_matches = sp->rest_matches, .cont_len = sp->rest_cont_len, .n_draft = sp->budget - 1};
    rest_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "rest: out of memory");
    /* "auto" outside the runner (generate, check-lossless): no dataset known, the chat store */
    const char *name = strcmp(sp->datastore, "auto") ? sp->datastore : arb_rest_auto_datastore(NULL);
    int rc = arb_datastore_resolve(name, s->path, sizeof s->path, err);
    if (!rc)
        rc = arb_rest_retriever_new(&o, &s->r, err);
    if (!rc && !(s->tree_idx = malloc((size_t)o.n_draft * sizeof *s->tree_idx)))
        rc = ARB_ERR(err, ARB_E_NOMEM, "rest: out of memory");
    if (rc) {
        arb_err_prefix(err, "method %s", sp->id);
        rest_destroy(s);
        return rc;
    }
    *out = s;
    return ARB_OK;
}

static int rest_bind(void *st, arb_ctx *target, arb_err *err)
{
    rest_state *s = st;
    char sha[65];
    int rc = arb_datastore_tokenizer_sha256(arb_ctx_model(target), sha, err);
    if (!rc)
        rc = arb_datastore_load(s->path, sha, &s->ds, err);
    return rc;
}

static int rest_begin(void *st, int n_tokens, bool new_run, arb_err *err) { return ARB_OK; }
static void rest_append(void *st, const int32_t *tok, int n) {}

static void rest_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    rest_state *s = st;
    arb_rest_result res;
    int n = s->ds ? arb_rest_retrieve(s->r, s->ds, S, n_S, &res) : 0;
    for (int i = 0; i < n; i++) {
        int p = res.parent[i] < 0 ? 0 : s->tree_idx[res.parent[i]];
        /* REST's node probability: continuations through the node over those through its parent */
        float q = (float)res.count[i] / (float)res.parent_count[i];
        s->tree_idx[i] = arb_tree_add(t, p, res.tok[i], ARB_SRC_REST, -1, q);
        ARB_ASSERT(s->tree_idx[i] > 0);
    }
    rec->match_n = n ? res.match_len : 0;
    rec->d_len = n;
    rec->mode = t->n > 1 ? ARB_MODE_TREE : ARB_MODE_AR;
}

static size_t rest_bytes(const void *st)
{
    const rest_state *s = st;
    return arb_rest_retriever_bytes(s->r) + (s->ds ? arb_datastore_bytes(s->ds) : 0);
}

/* The reference's defaults: 64 drafted nodes + the anchor. */
static void rs_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "REST");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->budget = 65;
}

/* The method's checks (method.h arb_method_spec_validate): budget = 1 + drafted nodes. */
static int rs_validate(const arb_method_spec *s, arb_err *err)
{
    if (s->budget < 2)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: budget: REST needs at least 2 nodes (anchor + 1 draft)", s->id);
    if (s->rest_suffix_min > s->rest_suffix_max)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: suffix_min: %d > suffix_max %d", s->id, s->rest_suffix_min,
                       s->rest_suffix_max);
    if (!s->datastore[0])
        return ARB_ERR(err, ARB_E_INVAL, "method %s: datastore: empty (auto, a cache name, or a path)", s->id);
    return ARB_OK;
}

const arb_drafter_i arb_drafter_rest = {
    .name = "rest",
    .ar_steps = true,
    .create = rest_create,
    .destroy = rest_destroy,
    .begin = rest_begin,
    .append = rest_append,
    .propose = rest_propose,
    .harvest = NULL,
    .verified = NULL,
    .bytes = rest_bytes,
    .bind = rest_bind,
    .validate = rs_validate, /* max_nodes NULL: the budget */
    .defaults = rs_defaults,
};
