/* lookahead.c — Lookahead decoding: n-gram pool, Jacobi window and the drafter (see lookahead.h;
 * docs/spec/drafting.md §6, the choices in docs/greedy-methods.md "Lookahead").
 *
 * The reference is hao-ai-lab/LookaheadDecoding (lade/decoding.py, jacobi_sample_multilevel;
 * lade/models/modeling_llama.py, j_make_causal_mask_multilevel). Its `past_tokens[l]` is our
 * level l, `token_map` our pool, `fill_level` our `fill`.
 */
#include "lookahead.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafter.h"

/* ---- the pool ---- */

struct arb_lade_pool {
    int V;            /* vocabulary: key tokens are 0 .. V-1 */
    int n1;           /* tokens per gram: N - 1 */
    int G;            /* grams per key (0: the pool stays empty) */
    int cap_keys;     /* slots */
    int n_keys;       /* slots in use, in first-put order */
    int32_t *slot_of; /* [V] slot of a key token, -1 if none */
    int32_t *key_of;  /* [cap_keys] key token of a slot (clear resets slot_of through it) */
    int32_t *count;   /* [cap_keys] grams held */
    int32_t *grams;   /* [cap_keys * G * n1] oldest first */
};

static void pool_free_slots(arb_lade_pool *p)
{
    free(p->key_of);
    free(p->count);
    free(p->grams);
    p->key_of = p->count = p->grams = NULL;
    p->cap_keys = p->n_keys = 0;
}

int arb_lade_pool_reserve(arb_lade_pool *p, int cap_keys, arb_err *err)
{
    if (cap_keys > p->V)
        cap_keys = p->V; /* one slot per key token at most */
    if (cap_keys < 1)
        cap_keys = 1;
    arb_lade_pool_clear(p);
    if (cap_keys <= p->cap_keys)
        return ARB_OK;
    pool_free_slots(p);
    size_t c = (size_t)cap_keys, per = (size_t)p->G * (size_t)p->n1;
    p->key_of = malloc(c * sizeof *p->key_of);
    p->count = malloc(c * sizeof *p->count);
    p->grams = malloc((c * per > 0 ? c * per : 1) * sizeof *p->grams);
    if (!p->key_of || !p->count || !p->grams) {
        pool_free_slots(p);
        return ARB_ERR(err, ARB_E_NOMEM, "lookahead pool: cannot allocate %d keys x %d grams", cap_keys, p->G);
    }
    p->cap_keys = cap_keys;
    return ARB_OK;
}

int arb_lade_pool_new(int n_vocab, int ngram, int guess, int cap_keys, arb_lade_pool **out, arb_err *err)
{
    *out = NULL;
    if (n_vocab < 1 || ngram < 2 || ngram > ARB_LADE_N_MAX || guess < 0 || guess > ARB_LADE_G_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "lookahead pool: vocab %d, ngram %d (2..%d), guess %d (0..%d)", n_vocab,
                       ngram, ARB_LADE_N_MAX, guess, ARB_LADE_G_MAX);
    arb_lade_pool *p = calloc(1, sizeof *p);
    if (!p)
        return ARB_ERR(err, ARB_E_NOMEM, "lookahead pool: out of memory");
    p->V = n_vocab;
    p->n1 = ngram - 1;
    p->G = guess;
    p->slot_of = malloc((size_t)n_vocab * sizeof *p->slot_of);
    if (!p->slot_of) {
        free(p);
        return ARB_ERR(err, ARB_E_NOMEM, "lookahead pool: cannot allocate a %d-token key map", n_vocab);
    }
    for (int i = 0; i < n_vocab; i++)
        p->slot_of[i] = -1;
    int rc = arb_lade_pool_reserve(p, cap_keys, err);
    if (rc) {
        arb_lade_pool_free(p);
        return rc;
    }
    *out = p;
    return ARB_OK;
}

void arb_lade_pool_free(arb_lade_pool *p)
{
    if (!p)
        return;
    pool_free_slots(p);
    free(p->slot_of);
    free(p);
}

void arb_lade_pool_clear(arb_lade_pool *p)
{
    for (int s = 0; s < p->n_keys; s++)
        p->slot_of[p->key_of[s]] = -1;
    p->n_keys = 0;
}

int arb_lade_pool_put(arb_lade_pool *p, int32_t key, const int32_t *gram)
{
    ARB_ASSERT(key >= 0 && key < p->V);
    if (p->G == 0)
        return 0;
    int s = p->slot_of[key];
    if (s < 0) {
        if (p->n_keys == p->cap_keys)
            return -1;
        s = p->n_keys++;
        p->slot_of[key] = s;
        p->key_of[s] = key;
        p->count[s] = 0;
    }
    size_t n1 = (size_t)p->n1, gb = n1 * sizeof *gram;
    int32_t *g = p->grams + (size_t)s * (size_t)p->G * n1;
    int c = p->count[s];
    for (int i = 0; i < c; i++)
        if (!memcmp(g + i * n1, gram, gb)) { /* refresh: move to the newest end */
            memmove(g + i * n1, g + (i + 1) * n1, (size_t)(c - 1 - i) * gb);
            memcpy(g + (c - 1) * n1, gram, gb);
            return 0;
        }
    if (c < p->G) {
        memcpy(g + c * n1, gram, gb);
        p->count[s] = c + 1;
    } else { /* full: the least recently put gram goes */
        memmove(g, g + n1, (size_t)(c - 1) * gb);
        memcpy(g + (c - 1) * n1, gram, gb);
    }
    return 0;
}

int arb_lade_pool_get(const arb_lade_pool *p, int32_t key, const int32_t **grams)
{
    *grams = NULL;
    int s = key >= 0 && key < p->V ? p->slot_of[key] : -1;
    if (s < 0 || p->G == 0)
        return 0;
    *grams = p->grams + (size_t)s * (size_t)p->G * (size_t)p->n1;
    return p->count[s];
}

int arb_lade_pool_keys(const arb_lade_pool *p) { return p->n_keys; }

size_t arb_lade_pool_bytes(const arb_lade_pool *p)
{
    size_t c = (size_t)p->cap_keys;
    return (size_t)p->V * sizeof *p->slot_of + c * (2 * sizeof(int32_t) + (size_t)p->G * (size_t)p->n1 * sizeof(int32_t));
}

/* ---- the window ---- */

int arb_lade_window_init(arb_lade_window *w, int W, int N, arb_err *err)
{
    memset(w, 0, sizeof *w);
    if (W < 1 || W > ARB_LADE_W_MAX || N < 3 || N > ARB_LADE_N_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "lookahead window: W %d (1..%d), N %d (3..%d)", W, ARB_LADE_W_MAX, N,
                       ARB_LADE_N_MAX);
    w->W = W;
    w->N = N;
    w->stride = W + N;
    w->lv = calloc((size_t)(N - 1) * (size_t)w->stride, sizeof *w->lv);
    if (!w->lv)
        return ARB_ERR(err, ARB_E_NOMEM, "lookahead window: out of memory");
    return ARB_OK;
}

void arb_lade_window_release(arb_lade_window *w)
{
    if (!w)
        return;
    free(w->lv);
    w->lv = NULL;
}

static int32_t *level(arb_lade_window *w, int l) { return w->lv + (size_t)l * (size_t)w->stride; }

void arb_lade_window_start(arb_lade_window *w, const int32_t *src, int n_src, arb_rng *rng)
{
    ARB_ASSERT(n_src >= 1);
    /* The reference's set_token = copy_from: random.choice(prompt) for W + N - 3 tokens, so that
       after the N - 2 warm-up steps (each drops one token per level) level 0 holds W - 1. */
    memset(w->len, 0, sizeof w->len);
    w->fill = 0;
    w->len[0] = w->W + w->N - 3;
    for (int j = 0; j < w->len[0]; j++)
        level(w, 0)[j] = src[arb_rng_u64(rng) % (uint64_t)n_src];
}

int arb_lade_window_build(arb_lade_window *w, arb_tree *t)
{
    ARB_ASSERT(t->n == 1);
    int base0 = t->n, prev = 0;
    /* Level 0 is one chain below the anchor: together they are the mask's causal first block. */
    for (int j = 0; j < w->len[0]; j++)
        if ((prev = arb_tree_add(t, prev, level(w, 0)[j], ARB_SRC_LADE_WINDOW, -1, NAN)) < 0)
            return -1;
    int base_prev = base0;
    w->last_node0 = base0;
    for (int l = 1; l <= w->fill; l++) {
        ARB_ASSERT(w->len[l] <= w->len[0] + 1);
        int base = t->n;
        for (int c = 0; c < w->len[l]; c++) {
            /* column c: level 1 hangs below the anchor (c = 0) or level 0's token c-1; level
               l > 1 below level l-1 of the same column. Depth c + l = the reference position. */
            int par = l == 1 ? (c == 0 ? 0 : base0 + c - 1) : base_prev + c;
            if (arb_tree_add(t, par, level(w, l)[c], ARB_SRC_LADE_WINDOW, -1, NAN) < 0)
                return -1;
        }
        base_prev = base;
        w->last_node0 = base;
    }
    for (int i = base0; i < t->n; i++)
        t->flags[i] |= ARB_NODE_NOACCEPT; /* the window never commits */
    return t->n - base0;
}

void arb_lade_window_update(arb_lade_window *w, int32_t anchor, const int32_t *y, int y_stride,
                            arb_lade_pool *pool)
{
    const int f = w->fill, top = w->N - 2, n_new = w->len[f];
    const int32_t *ny = y + (size_t)w->last_node0 * (size_t)y_stride; /* newest level's argmax */
    if (f < top) {
        /* Warm-up (reference: past_tokens[fill_level + 1] = argmax(...)[1:] and every filled
           level drops its first token; the very first fill keeps all predictions). */
        int skip = f == 0 ? 0 : 1;
        for (int l = 0; l <= f; l++) {
            memmove(level(w, l), level(w, l) + 1, (size_t)(w->len[l] - 1) * sizeof *w->lv);
            w->len[l]--;
        }
        for (int c = skip; c < n_new; c++)
            level(w, f + 1)[c - skip] = ny[(size_t)c * (size_t)y_stride];
        w->len[f + 1] = n_new - skip;
        w->fill = f + 1;
        return;
    }
    /* Steady state: column c's gram is (level 1..N-2 of c, new token c), keyed by column c's
       level-0 token (reference update_token_map). */
    int32_t gram[ARB_LADE_N_MAX];
    for (int c = 0; c < w->W && pool; c++) {
        for (int l = 1; l <= top; l++)
            gram[l - 1] = level(w, l)[c];
        gram[top] = ny[(size_t)c * (size_t)y_stride];
        (void)arb_lade_pool_put(pool, c == 0 ? anchor : level(w, 0)[c - 1], gram);
    }
    /* Shift one level (reference ALWAYS_FWD_ONE = 1): level 0 := level 1 without its first
       token, level l := level l+1, the newest level := the predictions. */
    memcpy(level(w, 0), level(w, 1) + 1, (size_t)(w->W - 1) * sizeof *w->lv);
    w->len[0] = w->W - 1;
    for (int l = 1; l < top; l++)
        memcpy(level(w, l), level(w, l + 1), (size_t)w->W * sizeof *w->lv);
    for (int c = 0; c < w->W; c++)
        level(w, top)[c] = ny[(size_t)c * (size_t)y_stride];
}

int arb_lade_max_nodes(int W, int N, int G)
{
    int best = 1 + (W - 1) + (N - 2) * W + G * (N - 1); /* steady state: window + guesses */
    for (int f = 0; f <= N - 3; f++) {                    /* warm-up steps: window only, longer */
        int n = 1 + (W + N - 3 - f) + f * (W + N - 2 - f);
        best = n > best ? n : best;
    }
    return best;
}

/* ---- the drafter ---- */

typedef struct lade_state {
    int W, N, G;
    bool prompt_pool;      /* seed the pool with the prompt's n-grams */
    uint64_t seed;         /* run seed: keys the window's random tokens */
    arb_lade_pool *pool;
    arb_lade_window win;
    const arb_model *model;/* the target (bind): its end-of-generation tokens */
    int32_t *S;            /* committed tokens; the EOS refill draws from them */
    int n_S, cap_S;
    uint32_t prompt_id;
    int step;
    bool started;          /* the window was started for this prompt */
} lade_state;

static void lade_destroy(void *st)
{
    lade_state *s = st;
    if (!s)
        return;
    arb_lade_pool_free(s->pool);
    arb_lade_window_release(&s->win);
    free(s->S);
    free(s);
}

static int lade_create(const arb_method_spec *sp, int n_vocab, void **out, arb_err *err)
{
    *out = NULL;
    lade_state *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "lookahead: out of memory");
    s->W = sp->la_window;
    s->N = sp->la_ngram;
    s->G = sp->la_guess;
    s->prompt_pool = sp->la_prompt_pool;
    s->seed = sp->seed;
    int rc = arb_lade_window_init(&s->win, s->W, s->N, err);
    if (!rc)
        rc = arb_lade_pool_new(n_vocab, s->N, s->G, 1024, &s->pool, err);
    if (rc) {
        lade_destroy(s);
        return rc;
    }
    *out = s;
    return ARB_OK;
}

static int lade_bind(void *st, arb_ctx *target, arb_err *err)
{
    ((lade_state *)st)->model = arb_ctx_model(target);
    return ARB_OK;
}

static void lade_set_step(void *st, uint32_t prompt_id, int step)
{
    lade_state *s = st;
    s->prompt_id = prompt_id;
    s->step = step;
}

static int lade_begin(void *st, int n_tokens, bool new_run, arb_err *err)
{
    lade_state *s = st;
    if (n_tokens > s->cap_S) {
        int32_t *p = realloc(s->S, (size_t)n_tokens * sizeof *p);
        if (!p)
            return ARB_ERR(err, ARB_E_NOMEM, "lookahead: cannot hold %d tokens", n_tokens);
        s->S = p;
        s->cap_S = n_tokens;
    }
    /* Keys: at most one per prompt token (prompt pool) plus W per step, one step per token. The
       pool is per prompt, as the reference's token_map (created in every generate call). */
    int rc = arb_lade_pool_reserve(s->pool, (s->W + 1) * n_tokens, err);
    if (rc)
        return rc;
    s->n_S = 0;
    s->started = false;
    return ARB_OK;
}

static void lade_append(void *st, const int32_t *tok, int n)
{
    lade_state *s = st;
    for (int i = 0; i < n && s->n_S < s->cap_S; i++)
        s->S[s->n_S++] = tok[i];
}

static void lade_start(lade_state *s, const int32_t *S, int n_S)
{
    /* The prompt is S without the anchor (the prefill's token) at the first step. */
    int n_prompt = n_S > 1 ? n_S - 1 : n_S;
    arb_rng rng;
    arb_rng_init(&rng, s->seed, s->prompt_id, 0, ARB_STREAM_DRAFT);
    arb_lade_window_start(&s->win, S, n_prompt, &rng);
    for (int p = 0; s->prompt_pool && p + s->N <= n_prompt; p++) /* reference fill_pool_with_prompt */
        (void)arb_lade_pool_put(s->pool, S[p], S + p + 1);
    s->started = true;
}

static void lade_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    lade_state *s = st;
    if (!s->started)
        lade_start(s, S, n_S);
    rec->mode = ARB_MODE_TREE;
    if (arb_lade_window_build(&s->win, t) < 0)
        return; /* cannot happen: the tree is sized by arb_lade_max_nodes */
    if (s->win.fill < s->N - 2)
        return; /* warm-up: the reference verifies no guesses until the window is full */
    const int32_t *g;
    int n = arb_lade_pool_get(s->pool, S[n_S - 1], &g), n1 = s->N - 1;
    for (int i = 0; i < n; i++) /* each gram a chain below the anchor, pool order (oldest first) */
        for (int j = 0, par = 0; j < n1 && par >= 0; j++)
            par = arb_tree_add(t, par, g[(size_t)i * n1 + j], ARB_SRC_LADE_GUESS, -1, NAN);
}

static void lade_harvest(void *st, const arb_harvest *h)
{
    lade_state *s = st;
    if (!s->started)
        return;
    bool steady = s->win.fill == s->N - 2;
    arb_lade_window_update(&s->win, h->tok[0], h->ids, h->K, s->pool);
    if (!steady || !s->model || s->n_S < 1)
        return;
    /* Reference filter_window: an end-of-generation token in the newest level is replaced by a
       random committed token ("too many <EOS> in window lead to numerical error"). */
    arb_rng rng;
    arb_rng_init(&rng, s->seed, s->prompt_id, (uint32_t)s->step, ARB_STREAM_DRAFT);
    int32_t *top = s->win.lv + (size_t)(s->N - 2) * (size_t)s->win.stride;
    for (int c = 0; c < s->W; c++)
        if (arb_token_is_eog(s->model, top[c]))
            top[c] = s->S[arb_rng_u64(&rng) % (uint64_t)s->n_S];
}


static size_t lade_bytes(const void *st)
{
    const lade_state *s = st;
    return arb_lade_pool_bytes(s->pool) + (size_t)(s->N - 1) * (size_t)s->win.stride * sizeof(int32_t);
}

/* docs/spec/drafting.md §6 */
static void la_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "Lookahead");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->topk = 1; /* the window's Jacobi update needs only each node's argmax */
    s->harvest_prefill = false; /* the window starts at the first decode step */
}

static int la_max_nodes(const arb_method_spec *s) { return arb_lade_max_nodes(s->la_window, s->la_ngram, s->la_guess); }

static int la_validate(const arb_method_spec *s, arb_err *err)
{
    if (arb_method_max_nodes(s) > ARB_LADE_NODES_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: window: W %d, N %d, G %d make %d nodes per step "
                       "(1 + (W-1) + (N-2)W + G(N-1)); at most %d", s->id, s->la_window, s->la_ngram,
                       s->la_guess, arb_method_max_nodes(s), ARB_LADE_NODES_MAX);
    return ARB_OK;
}

const arb_drafter_i arb_drafter_lookahead = {
    .name = "lookahead",
    .create = lade_create,
    .destroy = lade_destroy,
    .begin = lade_begin,
    .append = lade_append,
    .propose = lade_propose,
    .harvest = lade_harvest,
    .verified = NULL,
    .bytes = lade_bytes,
    .bind = lade_bind,
    .set_step = lade_set_step,
    .max_nodes = la_max_nodes,
    .validate = la_validate,
    .defaults = la_defaults,
};
