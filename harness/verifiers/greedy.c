/* greedy.c — the greedy walk (see greedy.h). */
#include "greedy.h"

#include <stdlib.h>

#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */
#include "vf_int.h"  /* arb_vf_p */

int32_t arb_greedy_argmax(const float *row, int V)
{
    /* Strict '>' keeps the first (smallest id) maximum. */
    int32_t best = 0;
    float m = row[0];
    for (int i = 1; i < V; i++)
        if (row[i] > m) {
            m = row[i];
            best = i;
        }
    return best;
}

void arb_greedy_argmax_rows(const float *logits, int n, int V, int32_t *y)
{
    for (int i = 0; i < n; i++)
        y[i] = arb_greedy_argmax(logits + (size_t)i * V, V);
}

int arb_greedy_priority(const arb_tree *t, int i)
{
    if ((t->flags[i] & ARB_NODE_SPINE) || t->source[i] == ARB_SRC_PLD)
        return 0;
    return t->source[i] == ARB_SRC_TR ? 1 : 2;
}

static int acceptable(const arb_tree *t, int c, int32_t want)
{
    return !(t->flags[c] & ARB_NODE_NOACCEPT) && t->tok[c] == want;
}

void arb_greedy_walk(const arb_tree *t, const int32_t *y, arb_greedy_mode mode, int32_t *best,
                     arb_verify_out *out)
{
    ARB_ASSERT(t->finalized);
    int n = t->n, v = 0;
    if (mode == ARB_GREEDY_LONGEST) {
        /* best[v] = longest matching chain below v; children have larger indices, so one
           reverse pass computes it bottom-up. */
        for (int i = 0; i < n; i++)
            best[i] = 0;
        for (int i = n - 1; i >= 1; i--) {
            int p = t->parent[i];
            if (acceptable(t, i, y[p]) && best[i] + 1 > best[p])
                best[p] = best[i] + 1;
        }
        for (;;) {
            int pick = -1;
            for (int c = t->first_child[v]; c >= 0; c = t->next_sibling[c]) {
                if (!acceptable(t, c, y[v]))
                    continue;
                /* children are visited in increasing index, so '<' on priority and strict '>'
                   on length keep the lower index among equals */
                if (pick < 0 || best[c] > best[pick] ||
                    (best[c] == best[pick] && arb_greedy_priority(t, c) < arb_greedy_priority(t, pick)))
                    pick = c;
            }
            if (pick < 0)
                break;
            v = pick;
        }
    } else {
        for (;;) {
            int pick = -1;
            for (int pr = 0; pr <= 2 && pick < 0; pr++)
                for (int c = t->first_child[v]; c >= 0; c = t->next_sibling[c])
                    if (arb_greedy_priority(t, c) == pr && acceptable(t, c, y[v])) {
                        pick = c;
                        break;
                    }
            if (pick < 0)
                break;
            v = pick;
        }
    }
    out->node = v;
    out->depth = t->depth[v];
    out->extra = y[v];
    out->extra_is_bonus = 1;
    out->n_fallback = 0;
}

/* ---- verifier vtable (verifier.h): the decoder's only T = 0 verification path; argmax per
   node (given, or from the logits on the caller's row pool), then the walk ---- */
typedef struct greedy_state {
    int n_max;
    int first_match;
    int32_t *y, *best;
} greedy_state;

static int greedy_create(const arb_verifier_opts *o, void **state, arb_err *err)
{
    *state = NULL;
    if (o->n_nodes_max < 1)
        return ARB_ERR(err, ARB_E_INVAL, "verifier greedy: n_nodes_max %d < 1", o->n_nodes_max);
    greedy_state *g = calloc(1, sizeof *g);
    if (g) {
        g->y = malloc((size_t)o->n_nodes_max * sizeof *g->y);
        g->best = malloc((size_t)o->n_nodes_max * sizeof *g->best);
    }
    if (!g || !g->y || !g->best) {
        if (g) {
            free(g->y);
            free(g->best);
        }
        free(g);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier greedy: out of memory");
    }
    g->n_max = o->n_nodes_max;
    g->first_match = o->greedy_first_match;
    *state = g;
    return ARB_OK;
}

static void greedy_destroy(void *state)
{
    greedy_state *g = state;
    if (!g)
        return;
    free(g->y);
    free(g->best);
    free(g);
}

typedef struct argmax_job {
    const float *logits; /* [n * V] */
    int V;
    int32_t *y;          /* [n] */
} argmax_job;

/* One row's argmax with the decoder's kernel (SIMD, ties -> smallest id, = arb_greedy_argmax). */
static void argmax_row(void *ud, int i, int n)
{
    const argmax_job *j = ud;
    (void)n;
    j->y[i] = arb_topk_argmax(j->logits + (size_t)i * j->V, j->V);
}

static int greedy_verify(void *state, const arb_verify_in *in, arb_verify_out *out)
{
    greedy_state *g = state;
    const arb_tree *t = in->tree;
    if (t->n > g->n_max || (!in->argmax && !in->logits && !in->p && !in->p_row))
        return ARB_E_INVAL;
    if (in->argmax) { /* the first column of the decoder's top-K rows */
        for (int i = 0; i < t->n; i++)
            g->y[i] = in->argmax[(size_t)i * (size_t)in->argmax_stride];
    } else if (in->logits) {
        argmax_job j = {.logits = in->logits, .V = in->V, .y = g->y};
        if (in->for_rows && t->n > 1)
            in->for_rows(in->pool, t->n, argmax_row, &j);
        else
            for (int i = 0; i < t->n; i++)
                argmax_row(&j, i, t->n);
    } else {
        for (int i = 0; i < t->n; i++) { /* p at T = 0 is one-hot: argmax of the law */
            const double *r = arb_vf_p(in, i);
            int32_t b = 0;
            for (int x = 1; x < in->V; x++)
                if (r[x] > r[b])
                    b = x;
            g->y[i] = b;
        }
    }
    arb_greedy_walk(t, g->y, g->first_match ? ARB_GREEDY_FIRST_MATCH : ARB_GREEDY_LONGEST, g->best, out);
    return ARB_OK;
}

const arb_verifier_i arb_verifier_greedy = {
    .name = "greedy",
    .needs_q = false,
    .needs_logits = true,
    .sampling = false,
    .valid = {ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES, ARB_VALID_YES},
    .create = greedy_create,
    .destroy = greedy_destroy,
    .verify = greedy_verify,
};
