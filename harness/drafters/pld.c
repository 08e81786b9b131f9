/* pld.c — n-gram index, Saxena PLD and GOOSE ContextMatch (see pld.h). */
#include "pld.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NGRAM_MAX 8

typedef struct ngram_slot {
    uint64_t h;      /* hash | 1, 0 = empty */
    int32_t first;   /* earliest start position */
    int32_t last;    /* latest start position */
} ngram_slot;

typedef struct ngram_table {
    ngram_slot *slot;  /* cap_slots, power of two, at most half full */
    int32_t *prev;     /* [p]: previous occurrence of the n-gram starting at p, -1 if none */
    int32_t *slot_of;  /* [p]: slot of the n-gram starting at p */
} ngram_table;

struct arb_ngram_index {
    int n_min, n_max;
    int cap;           /* tokens */
    int len;           /* tokens appended */
    uint32_t mask;     /* cap_slots - 1 */
    int32_t *S;        /* the sequence */
    ngram_table tab[NGRAM_MAX + 1];
};

static uint64_t fnv1a(const int32_t *t, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)t[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 1099511628211ull;
        }
    }
    return h | 1;
}

static void free_tables(arb_ngram_index *ix)
{
    for (int n = 0; n <= NGRAM_MAX; n++) {
        free(ix->tab[n].slot);
        free(ix->tab[n].prev);
        free(ix->tab[n].slot_of);
        memset(&ix->tab[n], 0, sizeof ix->tab[n]);
    }
    free(ix->S);
    ix->S = NULL;
}

static int alloc_tables(arb_ngram_index *ix, int cap, arb_err *err)
{
    size_t cs = 16;
    while (cs < 2 * (size_t)cap)
        cs <<= 1;
    ix->S = malloc((size_t)cap * sizeof *ix->S);
    int ok = ix->S != NULL;
    for (int n = ix->n_min; n <= ix->n_max && ok; n++) {
        ix->tab[n].slot = malloc(cs * sizeof *ix->tab[n].slot);
        ix->tab[n].prev = malloc((size_t)cap * sizeof *ix->tab[n].prev);
        ix->tab[n].slot_of = malloc((size_t)cap * sizeof *ix->tab[n].slot_of);
        ok = ix->tab[n].slot && ix->tab[n].prev && ix->tab[n].slot_of;
    }
    if (!ok) {
        free_tables(ix);
        return ARB_ERR(err, ARB_E_NOMEM, "ngram index: cannot allocate %d tokens", cap);
    }
    ix->cap = cap;
    ix->mask = (uint32_t)(cs - 1);
    arb_ngram_index_clear(ix);
    return ARB_OK;
}

int arb_ngram_index_new(int n_min, int n_max, int cap_tokens, arb_ngram_index **out, arb_err *err)
{
    *out = NULL;
    if (n_min < 1 || n_max < n_min || n_max > NGRAM_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "ngram index: lengths %d..%d outside 1..%d", n_min, n_max, NGRAM_MAX);
    if (cap_tokens < 1 || cap_tokens > (1 << 26))
        return ARB_ERR(err, ARB_E_INVAL, "ngram index: capacity %d out of range", cap_tokens);
    arb_ngram_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return ARB_ERR(err, ARB_E_NOMEM, "ngram index: out of memory");
    ix->n_min = n_min;
    ix->n_max = n_max;
    int rc = alloc_tables(ix, cap_tokens, err);
    if (rc) {
        free(ix);
        return rc;
    }
    *out = ix;
    return ARB_OK;
}

void arb_ngram_index_free(arb_ngram_index *ix)
{
    if (!ix)
        return;
    free_tables(ix);
    free(ix);
}

void arb_ngram_index_clear(arb_ngram_index *ix)
{
    ix->len = 0;
    for (int n = ix->n_min; n <= ix->n_max; n++)
        memset(ix->tab[n].slot, 0, ((size_t)ix->mask + 1) * sizeof *ix->tab[n].slot);
}

int arb_ngram_index_reserve(arb_ngram_index *ix, int cap_tokens, arb_err *err)
{
    if (cap_tokens <= ix->cap) {
        arb_ngram_index_clear(ix);
        return ARB_OK;
    }
    free_tables(ix);
    return alloc_tables(ix, cap_tokens, err);
}

int arb_ngram_index_append(arb_ngram_index *ix, int32_t tok)
{
    if (ix->len >= ix->cap)
        return -1;
    int i = ix->len++;
    ix->S[i] = tok;
    for (int n = ix->n_min; n <= ix->n_max; n++) {
        int p = i - n + 1;
        if (p < 0)
            break;
        ngram_table *tb = &ix->tab[n];
        uint64_t h = fnv1a(ix->S + p, n);
        uint32_t s = (uint32_t)h & ix->mask;
        for (;; s = (s + 1) & ix->mask) {
            ngram_slot *sl = &tb->slot[s];
            if (sl->h == 0) {
                sl->h = h;
                sl->first = sl->last = p;
                tb->prev[p] = -1;
                break;
            }
            if (sl->h == h && !memcmp(ix->S + sl->first, ix->S + p, (size_t)n * sizeof *ix->S)) {
                tb->prev[p] = sl->last;
                sl->last = p;
                break;
            }
        }
        tb->slot_of[p] = (int32_t)s;
    }
    return 0;
}

const int32_t *arb_ngram_index_tokens(const arb_ngram_index *ix, int *n)
{
    *n = ix->len;
    return ix->S;
}

size_t arb_ngram_index_bytes(const arb_ngram_index *ix)
{
    size_t b = sizeof *ix + (size_t)ix->cap * sizeof *ix->S;
    for (int n = ix->n_min; n <= ix->n_max; n++)
        b += ((size_t)ix->mask + 1) * sizeof(ngram_slot) + 2 * (size_t)ix->cap * sizeof(int32_t);
    return b;
}

int arb_ngram_index_earliest(const arb_ngram_index *ix, int n, int num_pred)
{
    int L = ix->len;
    if (n < ix->n_min || n > ix->n_max || L < n)
        return -1;
    int p = ix->tab[n].slot[ix->tab[n].slot_of[L - n]].first;
    /* Later occurrences are larger, so if the first fails both bounds, all fail. */
    if (p + n + num_pred <= L && p + n < L - n)
        return p;
    return -1;
}

int arb_ngram_index_recent(const arb_ngram_index *ix, int n)
{
    int L = ix->len;
    if (n < ix->n_min || n > ix->n_max || L < n)
        return -1;
    /* The last occurrence is the suffix itself; its predecessor is the answer. */
    return ix->tab[n].prev[L - n];
}

int arb_pld_draft(const arb_ngram_index *ix, int n_min, int n_max, int num_pred, int32_t *out, int *match_n)
{
    *match_n = 0;
    for (int n = n_max; n >= n_min; n--) {
        int p = arb_ngram_index_earliest(ix, n, num_pred);
        if (p >= 0) {
            memcpy(out, ix->S + p + n, (size_t)num_pred * sizeof *out);
            *match_n = n;
            return num_pred;
        }
    }
    return 0;
}

void arb_pld_context_match(const arb_ngram_index *ix, int n_min, int n_max, int c_max, bool earliest,
                           arb_pld_match *m)
{
    memset(m, 0, sizeof *m);
    int L = ix->len;
    int start_of[NGRAM_MAX + 1];
    int n_found = 0;
    for (int n = n_max; n >= n_min; n--) {
        int p = -1;
        if (earliest) {
            if (n >= ix->n_min && n <= ix->n_max && L >= n) {
                p = ix->tab[n].slot[ix->tab[n].slot_of[L - n]].first;
                if (p + n > L - 1)
                    p = -1;
            }
        } else {
            p = arb_ngram_index_recent(ix, n);
        }
        if (p < 0)
            continue;
        int start = p + n;
        start_of[n_found++] = start;
        if (m->n == 0) {
            int end = start + c_max < L ? start + c_max : L;
            m->n = n;
            m->d = ix->S + start;
            m->len = end - start;
            int k = 0; /* matched context length: common suffix of S[..start) and S */
            while (k < 64 && start - 1 - k >= 0 && ix->S[start - 1 - k] == ix->S[L - 1 - k] &&
                   start - 1 - k != L - 1 - k)
                k++;
            m->match_len = k;
        }
    }
    for (int a = 0; a < n_found; a++)
        for (int b = a + 1; b < n_found; b++) {
            int sa = start_of[a], sb = start_of[b];
            if (ix->S[sa] != ix->S[sb])
                continue;
            m->consensus = true;
            if (sa == sb)
                continue;
            m->consensus_distinct = true;
            int k = 0; /* both continuations end at L */
            while (k < c_max && sa + k < L && sb + k < L && ix->S[sa + k] == ix->S[sb + k])
                k++;
            if (k > m->agree_len)
                m->agree_len = k;
        }
}

/* ---- the PLD drafter (Saxena chain; AR step when nothing matches) ---- */
#include "drafter.h"

#include <math.h>

typedef struct pld_state {
    arb_ngram_index *ix;
    int n_min, n_max, num_pred;
    bool earliest;
    int32_t buf[256];
    /* budget "auto" (chain_cost set): the chain length is picked per step from the acceptance
       of this prompt's earlier chains (chainbudget.h). [CHOICE] the first token's counts per
       matched n-gram length (a 3-gram match is a better bet than a 1-gram one), later tokens'
       pooled (too few chains per prompt to split them too); reset per prompt, so a prompt's
       output never depends on the prompts before it (resume, sharding) */
    arb_chain_cost cost;
    arb_chain_stats first[NGRAM_MAX + 1], cont;
    int last_n, last_k;  /* the last proposed chain: its match length, tokens proposed */
    int chain_max;       /* tokens proposed at most: max_draft, or budget - 1 when smaller */
} pld_state;

static int pldd_max_nodes(const arb_method_spec *s);

static void pld_destroy(void *st)
{
    pld_state *s = st;
    if (!s)
        return;
    arb_ngram_index_free(s->ix);
    free(s);
}

static int pld_create(const arb_method_spec *sp, int n_vocab, void **out, arb_err *err)
{
    *out = NULL;
    if (sp->max_draft < 1 || sp->max_draft > 256)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: max_draft: %d outside 1..256", sp->id, sp->max_draft);
    pld_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "pld: out of memory");
    s->n_min = sp->ngram_min;
    s->n_max = sp->ngram_max;
    s->num_pred = sp->max_draft;
    s->chain_max = pldd_max_nodes(sp) - 1;
    s->earliest = sp->pld_earliest;
    s->cost = sp->chain_cost;
    int rc = arb_ngram_index_new(s->n_min, s->n_max, 4096, &s->ix, err);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return ARB_OK;
}

static int pld_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    pld_state *s = st;
    for (int n = 0; n <= NGRAM_MAX; n++)
        arb_chain_stats_reset(&s->first[n]);
    arb_chain_stats_reset(&s->cont);
    s->last_k = 0;
    return arb_ngram_index_reserve(s->ix, n_tokens, err);
}

static void pld_append(void *st, const int32_t *tok, int n)
{
    pld_state *s = st;
    for (int i = 0; i < n; i++)
        ARB_ASSERT(arb_ngram_index_append(s->ix, tok[i]) == 0);
}

static void pld_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    pld_state *s = st;
    int len = 0, n = 0;
    const int32_t *d = s->buf;
    if (s->earliest) {
        len = arb_pld_draft(s->ix, s->n_min, s->n_max, s->num_pred, s->buf, &n);
    } else { /* most-recent occurrence, continuation up to num_pred (GOOSE-style lookup) */
        arb_pld_match m;
        arb_pld_context_match(s->ix, s->n_min, s->n_max, s->num_pred, false, &m);
        len = m.len;
        n = m.n;
        d = m.d;
        rec->consensus = m.consensus;
    }
    len = len < s->chain_max ? len : s->chain_max; /* the match is still found on max_draft tokens */
    /* budget auto: this step's length. [CHOICE] at least one token when a match exists: a
       2-node eval costs about a 1-node one on the CPU profiles measured (docs/cost-model.md),
       and a chain never tried would never update its counts */
    if (s->cost.n_max > 0 && len > 0)
        len = arb_chain_pick(&s->cost, arb_chain_stats_p1(&s->first[n]), arb_chain_stats_pc(&s->cont), 1, len, n_S);
    s->last_n = n;
    s->last_k = len;
    int p = 0;
    for (int i = 0; i < len; i++) {
        p = arb_tree_add(t, p, d[i], ARB_SRC_PLD, 0, NAN);
        if (p < 0)
            break;
    }
    rec->match_n = n;
    rec->d_len = len;
    rec->mode = t->n > 1 ? ARB_MODE_CHAIN : ARB_MODE_AR;
}

/* The accepted prefix of the last chain feeds the per-step length choice. */
static void pld_verified(void *st, const arb_tree *t, const int32_t *path, int n_path, arb_step_record *rec)
{
    pld_state *s = st;
    (void)t, (void)path, (void)rec;
    if (s->cost.n_max <= 0 || s->last_k <= 0)
        return;
    arb_chain_stats_observe(&s->first[s->last_n], s->last_k, n_path - 1);
    arb_chain_stats_observe(&s->cont, s->last_k, n_path - 1);
}

static size_t pld_bytes(const void *st) { return arb_ngram_index_bytes(((const pld_state *)st)->ix); }

/* Saxena's reference (docs/spec/drafting.md §2.1). */
static void pldd_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "PLD");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->ngram_min = 1;
    s->ngram_max = 3;
    s->max_draft = 10;
    s->pld_earliest = true;
    s->budget = 65; /* 1 + the longest max_draft: no cut (budget "auto" picks per step) */
}

/* The anchor and one continuation of max_draft tokens, cut to the budget when that is smaller. */
static int pldd_max_nodes(const arb_method_spec *s)
{
    return s->budget >= 1 && s->budget < 1 + s->max_draft ? s->budget : 1 + s->max_draft;
}

const arb_drafter_i arb_drafter_pld = {
    .name = "pld",
    .ar_steps = true,
    .create = pld_create,
    .destroy = pld_destroy,
    .begin = pld_begin,
    .append = pld_append,
    .propose = pld_propose,
    .harvest = NULL,
    .verified = pld_verified,
    .bytes = pld_bytes,
    .max_nodes = pldd_max_nodes,
    .defaults = pldd_defaults,
};
