/* tree.c — the draft tree (see tree.h, docs/spec/drafting.md §1.2–1.4).
 *
 * Structure of arrays with a fixed capacity: building a tree is a sequence of
 * arb_tree_add calls that only write into preallocated rows. Child lists and the
 * per-node grouping of child_seq are derived data, rebuilt by arb_tree_finalize.
 */
#include "tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int arb_tree_init_seq(arb_tree *t, int cap, int cap_seq, arb_err *err)
{
    memset(t, 0, sizeof *t);
    if (cap < 1 || cap > (1 << 20) || cap_seq < 0 || cap_seq > (1 << 24))
        return ARB_ERR(err, ARB_E_INVAL, "tree: capacity %d / seq capacity %d out of range", cap, cap_seq);
    size_t c = (size_t)cap, cs = (size_t)(cap_seq > 0 ? cap_seq : 1);
    t->tok = malloc(c * sizeof *t->tok);
    t->parent = malloc(c * sizeof *t->parent);
    t->depth = malloc(c * sizeof *t->depth);
    t->source = malloc(c * sizeof *t->source);
    t->flags = malloc(c * sizeof *t->flags);
    t->rank = malloc(c * sizeof *t->rank);
    t->draft_prob = malloc(c * sizeof *t->draft_prob);
    t->path_logp = malloc(c * sizeof *t->path_logp);
    t->first_child = malloc(c * sizeof *t->first_child);
    t->next_sibling = malloc(c * sizeof *t->next_sibling);
    t->seq_start = malloc(c * sizeof *t->seq_start);
    t->seq_len = malloc(c * sizeof *t->seq_len);
    t->child_seq = malloc(cs * sizeof *t->child_seq);
    t->seq_from = malloc(cs * sizeof *t->seq_from);
    t->seq_tmp = malloc(cs * sizeof *t->seq_tmp);
    if (!t->tok || !t->parent || !t->depth || !t->source || !t->flags || !t->rank || !t->draft_prob ||
        !t->path_logp || !t->first_child || !t->next_sibling || !t->seq_start || !t->seq_len ||
        !t->child_seq || !t->seq_from || !t->seq_tmp) {
        arb_tree_release(t);
        return ARB_ERR(err, ARB_E_NOMEM, "tree: cannot allocate %d nodes", cap);
    }
    t->cap = cap;
    t->cap_seq = cap_seq;
    arb_tree_reset(t, 0);
    return ARB_OK;
}

int arb_tree_init(arb_tree *t, int cap, arb_err *err)
{
    return arb_tree_init_seq(t, cap, cap > (1 << 20) / 8 ? cap : 8 * cap, err);
}

void arb_tree_release(arb_tree *t)
{
    if (!t)
        return;
    free(t->tok);
    free(t->parent);
    free(t->depth);
    free(t->source);
    free(t->flags);
    free(t->rank);
    free(t->draft_prob);
    free(t->path_logp);
    free(t->first_child);
    free(t->next_sibling);
    free(t->seq_start);
    free(t->seq_len);
    free(t->child_seq);
    free(t->seq_from);
    free(t->seq_tmp);
    memset(t, 0, sizeof *t);
}

void arb_tree_reset(arb_tree *t, int32_t anchor_tok)
{
    ARB_ASSERT(t->cap >= 1);
    t->n = 1;
    t->max_depth = 0;
    t->n_seq = 0;
    t->finalized = false;
    t->tok[0] = anchor_tok;
    t->parent[0] = -1;
    t->depth[0] = 0;
    t->source[0] = ARB_SRC_ROOT;
    t->flags[0] = 0;
    t->rank[0] = -1;
    t->draft_prob[0] = 1.0f;
    t->path_logp[0] = 0.0f;
    t->first_child[0] = -1;
    t->next_sibling[0] = -1;
    t->seq_start[0] = 0;
    t->seq_len[0] = 0;
}

int arb_tree_add(arb_tree *t, int parent, int32_t tok, arb_src src, int rank, float draft_prob)
{
    if (t->n >= t->cap)
        return -1;
    ARB_ASSERT(parent >= 0 && parent < t->n);
    int i = t->n++;
    t->tok[i] = tok;
    t->parent[i] = parent;
    t->depth[i] = (int16_t)(t->depth[parent] + 1);
    t->source[i] = (uint8_t)src;
    t->flags[i] = 0;
    t->rank[i] = (int16_t)rank;
    t->draft_prob[i] = draft_prob;
    /* NAN (no score) propagates as NAN; that is the honest value of the path score. */
    t->path_logp[i] = t->path_logp[parent] + logf(draft_prob);
    t->first_child[i] = -1;
    t->next_sibling[i] = -1;
    t->seq_start[i] = 0;
    t->seq_len[i] = 0;
    if (t->depth[i] > t->max_depth)
        t->max_depth = t->depth[i];
    t->finalized = false;
    return i;
}

int arb_tree_find_child(const arb_tree *t, int v, int32_t tok)
{
    if (t->finalized) {
        for (int c = t->first_child[v]; c >= 0; c = t->next_sibling[c])
            if (t->tok[c] == tok)
                return c;
        return -1;
    }
    for (int i = v + 1; i < t->n; i++)
        if (t->parent[i] == v && t->tok[i] == tok)
            return i;
    return -1;
}

int arb_tree_push_seq(arb_tree *t, int v, int c)
{
    if (t->n_seq >= t->cap_seq)
        return -1;
    ARB_ASSERT(v >= 0 && v < t->n && c > v && c < t->n && t->parent[c] == v);
    t->seq_from[t->n_seq] = v;
    t->child_seq[t->n_seq] = c;
    t->n_seq++;
    t->finalized = false;
    return 0;
}

void arb_tree_finalize(arb_tree *t)
{
    int n = t->n;
    ARB_ASSERT(n >= 1 && n <= t->cap);
    ARB_ASSERT(t->parent[0] == -1 && t->depth[0] == 0);
    int maxd = 0;
    for (int i = 0; i < n; i++) {
        t->first_child[i] = -1;
        t->next_sibling[i] = -1;
    }
    /* Walk backwards so each list ends up in increasing index order without a tail array. */
    for (int i = n - 1; i >= 1; i--) {
        int p = t->parent[i];
        ARB_ASSERT(p >= 0 && p < i);
        ARB_ASSERT(t->depth[i] == t->depth[p] + 1);
        t->next_sibling[i] = t->first_child[p];
        t->first_child[p] = i;
        if (t->depth[i] > maxd)
            maxd = t->depth[i];
    }
    t->max_depth = maxd;
    /* Group child_seq per node, keeping push order within a node (stable counting sort):
       i.i.d. trees are pushed path by path, so entries of one node are interleaved. */
    for (int i = 0; i < n; i++)
        t->seq_len[i] = 0;
    for (int j = 0; j < t->n_seq; j++)
        t->seq_len[t->seq_from[j]]++;
    int acc = 0;
    for (int i = 0; i < n; i++) {
        t->seq_start[i] = acc;
        acc += t->seq_len[i];
    }
    for (int i = 0; i < n; i++)
        t->seq_len[i] = 0;
    for (int j = 0; j < t->n_seq; j++) {
        int v = t->seq_from[j];
        t->seq_tmp[t->seq_start[v] + t->seq_len[v]++] = t->child_seq[j];
    }
    for (int j = 0; j < t->n_seq; j++)
        t->child_seq[j] = t->seq_tmp[j];
    for (int i = 0; i < n; i++)
        for (int j = t->seq_start[i]; j < t->seq_start[i] + t->seq_len[i]; j++)
            t->seq_from[j] = i;
    t->finalized = true;
}

int arb_tree_path(const arb_tree *t, int v, int32_t *path)
{
    ARB_ASSERT(v >= 0 && v < t->n);
    int d = t->depth[v];
    for (int i = d; i >= 0; i--) {
        path[i] = v;
        v = t->parent[v];
    }
    ARB_ASSERT(v == -1);
    return d + 1;
}

void arb_tree_ancestors(const arb_tree *t, uint64_t *bits, int words)
{
    ARB_ASSERT(words * 64 >= t->n);
    for (int i = 0; i < t->n; i++) {
        uint64_t *row = bits + (size_t)i * words;
        if (i == 0)
            memset(row, 0, (size_t)words * sizeof *row);
        else
            memcpy(row, bits + (size_t)t->parent[i] * words, (size_t)words * sizeof *row);
        row[i / 64] |= 1ull << (i % 64);
    }
}

int arb_tree_n_children(const arb_tree *t, int v)
{
    int k = 0;
    for (int c = t->first_child[v]; c >= 0; c = t->next_sibling[c])
        k++;
    return k;
}
