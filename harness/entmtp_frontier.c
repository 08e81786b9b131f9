/* entmtp_frontier.c — Algorithm 1, score_all and the acceptance hull (see entmtp_frontier.h). */
#include "entmtp_frontier.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drafters/tr.h"

/* Canonical order: shallower first, then lexicographic by rank (Medusa's sort of choices). */
static int path_cmp(const arb_epath *a, const arb_epath *b)
{
    if (a->len != b->len)
        return a->len - b->len;
    for (int i = 0; i < a->len; i++)
        if (a->r[i] != b->r[i])
            return a->r[i] - b->r[i];
    return 0;
}

static int path_qcmp(const void *a, const void *b) { return path_cmp(a, b); }

static int path_text(const arb_epath *p, char *buf, int cap)
{
    int n = snprintf(buf, (size_t)cap, "[");
    for (int i = 0; i < p->len && n < cap; i++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s%d", i ? "," : "", p->r[i]);
    if (n < cap)
        n += snprintf(buf + n, (size_t)(cap - n), "]");
    return n;
}

int arb_etree_find(const arb_etree *t, const arb_epath *p)
{
    for (int i = 0; i < t->n; i++)
        if (!path_cmp(&t->path[i], p))
            return i;
    return -1;
}

int arb_etree_canon(arb_etree *t, arb_err *err)
{
    if (t->n < 1 || t->n > ARB_ETREE_MAX || t->path[0].len != 0)
        return ARB_ERR(err, ARB_E_INVAL, "tree: %d nodes (1..%d) with the anchor first", t->n, ARB_ETREE_MAX);
    qsort(t->path + 1, (size_t)(t->n - 1), sizeof t->path[0], path_qcmp);
    t->parent[0] = -1, t->rank[0] = -1, t->depth[0] = 0, t->max_depth = 0;
    for (int i = 1; i < t->n; i++) {
        arb_epath *p = &t->path[i];
        char txt[64];
        if (p->len < 1 || p->len > ARB_ETREE_DEPTH || p->r[p->len - 1] < 0 || p->r[p->len - 1] >= ARB_ETREE_RANKS) {
            path_text(p, txt, sizeof txt);
            return ARB_ERR(err, ARB_E_INVAL, "tree: path %s: depth 1..%d, ranks 0..%d", txt, ARB_ETREE_DEPTH,
                           ARB_ETREE_RANKS - 1);
        }
        if (!path_cmp(p, &t->path[i - 1])) {
            path_text(p, txt, sizeof txt);
            return ARB_ERR(err, ARB_E_INVAL, "tree: duplicate path %s", txt);
        }
        arb_epath q = *p;
        q.len--;
        int par = -1;
        for (int j = i - 1; j >= 0 && par < 0; j--) /* parents come earlier (shallower) */
            if (!path_cmp(&t->path[j], &q))
                par = j;
        if (par < 0) {
            path_text(p, txt, sizeof txt);
            return ARB_ERR(err, ARB_E_INVAL, "tree: path %s has no parent path", txt);
        }
        t->parent[i] = par;
        t->rank[i] = p->r[p->len - 1];
        t->depth[i] = p->len;
        if (p->len > t->max_depth)
            t->max_depth = p->len;
    }
    return ARB_OK;
}

int arb_etree_parse(const char *text, arb_etree *t, arb_err *err)
{
    int32_t parent[ARB_ETREE_MAX];
    int16_t rank[ARB_ETREE_MAX];
    int n = arb_choices_parse(text, parent, rank, ARB_ETREE_MAX, err);
    if (n < 0)
        return n;
    memset(t, 0, sizeof *t);
    t->n = n;
    for (int i = 1; i < n; i++) {
        t->path[i] = t->path[parent[i]];
        if (t->path[i].len >= ARB_ETREE_DEPTH)
            return ARB_ERR(err, ARB_E_INVAL, "tree: a path deeper than %d", ARB_ETREE_DEPTH);
        t->path[i].r[t->path[i].len++] = (int8_t)(rank[i] < 127 ? rank[i] : 127);
    }
    return arb_etree_canon(t, err);
}

int arb_etree_format(const arb_etree *t, char *buf, int cap)
{
    int n = snprintf(buf, (size_t)cap, "[");
    for (int i = 1; i < t->n && n < cap; i++) {
        if (i > 1)
            n += snprintf(buf + n, (size_t)(cap - n), ",");
        if (n < cap)
            n += path_text(&t->path[i], buf + n, cap - n);
    }
    if (n < cap)
        n += snprintf(buf + n, (size_t)(cap - n), "]");
    return n < cap ? n : -1;
}

int arb_frontier_next_children(const arb_etree *T, int D, arb_epath *F, int cap)
{
    int nF = 0;
    for (int u = 0; u < T->n && nF < cap; u++) {
        if (T->path[u].len >= D || T->path[u].len >= ARB_ETREE_DEPTH)
            continue;
        int c = 0;
        for (int v = u + 1; v < T->n; v++)
            c += T->parent[v] == u;
        if (c >= ARB_ETREE_RANKS)
            continue;
        F[nF] = T->path[u];
        F[nF].r[F[nF].len++] = (int8_t)c;
        nF++;
    }
    return nF;
}

int arb_frontier_joint(const arb_etree *T, const arb_epath *F, int nF, arb_etree *J, int32_t *cand, arb_err *err)
{
    if (T->n + nF > ARB_ETREE_MAX)
        return ARB_ERR(err, ARB_E_RANGE, "frontier: joint tree of %d nodes (at most %d)", T->n + nF, ARB_ETREE_MAX);
    J->n = T->n + nF;
    memcpy(J->path, T->path, (size_t)T->n * sizeof J->path[0]);
    memcpy(J->path + T->n, F, (size_t)nF * sizeof J->path[0]);
    int rc = arb_etree_canon(J, err);
    if (rc)
        return rc;
    for (int v = 0; v < J->n; v++) {
        cand[v] = -1;
        for (int c = 0; c < nF; c++)
            if (!path_cmp(&J->path[v], &F[c]))
                cand[v] = c;
    }
    return ARB_OK;
}

int arb_frontier_score_step(const arb_etree *J, const int32_t *cand, int nF, const bool *pass, double *acc)
{
    bool ok[ARB_ETREE_MAX];
    int accT = 0, stop = 0;
    ok[0] = true;
    for (int v = 1; v < J->n; v++) {
        ok[v] = ok[J->parent[v]] && pass[v];
        /* T's nodes: parents of T nodes are T nodes (F nodes are leaves of J) */
        if (ok[v] && cand[v] < 0 && J->depth[v] > accT)
            accT = J->depth[v], stop = v;
    }
    for (int v = 1; v < J->n; v++)
        if (cand[v] >= 0 && cand[v] < nF) {
            int d = ok[v] ? J->depth[v] : 0;
            acc[cand[v]] += 1 + (d > accT ? d : accT);
        }
    return stop;
}

int arb_frontier_grow(int D, int B, arb_frontier_scorer fn, void *ud, arb_frontier_point **H, int *nH,
                      arb_err *err)
{
    *H = NULL, *nH = 0;
    if (D < 1 || D > ARB_ETREE_DEPTH || B < 2 || B > ARB_ETREE_MAX / 2)
        return ARB_ERR(err, ARB_E_INVAL, "frontier: depth %d (1..%d), budget %d (2..%d)", D, ARB_ETREE_DEPTH, B,
                       ARB_ETREE_MAX / 2);
    arb_etree *T = calloc(1, sizeof *T);
    arb_epath *F = malloc(ARB_ETREE_MAX * sizeof *F);
    double *a = malloc(ARB_ETREE_MAX * sizeof *a);
    arb_frontier_point *out = calloc((size_t)B, sizeof *out);
    int rc = ARB_OK, n = 0;
    if (!T || !F || !a || !out) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "frontier: out of memory");
        goto done;
    }
    /* T = {[0]}: the anchor and its rank-0 child */
    T->n = 2;
    T->path[1].len = 1;
    if ((rc = arb_etree_canon(T, err)))
        goto done;
    while (T->n < B) {
        int nF = arb_frontier_next_children(T, D, F, ARB_ETREE_MAX);
        if (nF == 0)
            break;
        if ((rc = fn(T, F, nF, a, ud, err)))
            goto done;
        int best = 0;
        for (int c = 1; c < nF; c++) { /* argmax (a, -Σν, -|ν|), lexicographic */
            int sb = 0, sc = 0;
            for (int i = 0; i < F[best].len; i++)
                sb += F[best].r[i];
            for (int i = 0; i < F[c].len; i++)
                sc += F[c].r[i];
            if (a[c] > a[best] || (a[c] == a[best] && (sc < sb || (sc == sb && F[c].len < F[best].len))))
                best = c;
        }
        T->path[T->n++] = F[best];
        if ((rc = arb_etree_canon(T, err)))
            goto done;
        out[n] = (arb_frontier_point){.n = T->n, .depth = D, .a = a[best], .a_self = NAN, .tree = *T};
        n++;
    }
done:
    free(T);
    free(F);
    free(a);
    if (rc) {
        free(out);
        return rc;
    }
    *H = out, *nH = n;
    return ARB_OK;
}

int arb_frontier_hull(const arb_frontier_point *p, int n, bool use_self, int *keep)
{
    int nk = 0;
    for (int i = 0; i < n; i++) {
        double vi = use_self ? p[i].a_self : p[i].a;
        bool dominated = false;
        for (int j = 0; j < n && !dominated; j++) {
            if (j == i)
                continue;
            double vj = use_self ? p[j].a_self : p[j].a;
            bool weak = p[j].n <= p[i].n && vj >= vi;
            bool strict = p[j].n < p[i].n || vj > vi;
            dominated = weak && (strict || j < i); /* equal points: the first stays */
        }
        if (!dominated)
            keep[nk++] = i;
    }
    for (int i = 1; i < nk; i++) /* insertion sort by node count */
        for (int j = i; j > 0 && p[keep[j]].n < p[keep[j - 1]].n; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1], keep[j - 1] = t;
        }
    return nk;
}
