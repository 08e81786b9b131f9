/* ot.c — the top-down driver shared by every OT-based verifier (docs/spec/verification.md §0.7) and
 * the init/free of verifiers whose state is just an arb_ot_work. The solvers live in their
 * own files: nss.c (§2), naivetree.c (§3.2), spectr.c, specinfer.c, khisti.c.
 *
 * OT_VERIFY: at the current node, a solver returns a token whose law is exactly p_v when
 * C(v) holds i.i.d. draws from q_v; if it is a drafted child, descend, else it is the
 * correction. A leaf gives the bonus from p_leaf.
 */
#include <stdlib.h>
#include <string.h>

#include "vf_int.h"

int arb_ot_work_init(arb_ot_work *w, const arb_verifier_opts *o, arb_err *err)
{
    memset(w, 0, sizeof *w);
    w->V = o->V;
    w->n_max = o->n_nodes_max;
    w->opts = *o;
    w->o = &w->opts;
    w->r = malloc(sizeof(double) * (size_t)o->V);
    w->r2 = malloc(sizeof(double) * (size_t)o->V);
    w->cnode = malloc(sizeof(int32_t) * (size_t)o->n_nodes_max);
    w->ctok = malloc(sizeof(int32_t) * (size_t)o->n_nodes_max);
    w->tmp = malloc(sizeof(int32_t) * (size_t)o->n_nodes_max);
    if (!w->r || !w->r2 || !w->cnode || !w->ctok || !w->tmp) {
        arb_ot_work_release(w);
        return ARB_ERR(err, ARB_E_NOMEM, "verifier: out of memory for V = %d", o->V);
    }
    return ARB_OK;
}

void arb_ot_work_release(arb_ot_work *w)
{
    if (!w)
        return;
    free(w->r);
    free(w->r2);
    free(w->cnode);
    free(w->ctok);
    free(w->tmp);
    memset(w, 0, sizeof *w);
}

int arb_ot_run(arb_ot_work *w, const arb_verify_in *in, arb_ot_solve_fn solve, bool needs_q,
               arb_verify_out *out)
{
    memset(out, 0, sizeof *out);
    if (arb_vf_check_in(in, w->V, w->n_max, needs_q))
        return ARB_E_INVAL;
    const arb_tree *t = in->tree;
    const int V = in->V;
    int v = 0;
    for (;;) {
        const double *p = arb_vf_p(in, v);
        int n = arb_vf_children(t, v, w->cnode);
        if (n == 0) {
            out->node = v;
            out->depth = t->depth[v];
            out->extra = arb_vf_sample_or(in->rng, p, p, V, &out->n_fallback);
            out->extra_is_bonus = 1;
            return ARB_OK;
        }
        for (int i = 0; i < n; i++)
            w->ctok[i] = t->tok[w->cnode[i]];
        const double *q = in->q ? in->q + (size_t)v * V : NULL;
        int y = solve(w, p, q, w->ctok, n, in->rng, &out->n_fallback);
        int next = -1;
        for (int i = 0; i < n && next < 0; i++)
            if (w->ctok[i] == y)
                next = w->cnode[i];
        if (next < 0) {
            out->node = v;
            out->depth = t->depth[v];
            out->extra = y;
            out->extra_is_bonus = 0;
            return ARB_OK;
        }
        v = next;
    }
}

/* ---------------- init/free of verifiers whose state is an arb_ot_work ---------------- */

int arb_ot_vt_create(const arb_verifier_opts *o, void **state, arb_err *err)
{
    *state = NULL;
    arb_ot_work *w = malloc(sizeof *w);
    if (!w)
        return ARB_ERR(err, ARB_E_NOMEM, "verifier: out of memory");
    int rc = arb_ot_work_init(w, o, err);
    if (rc) {
        free(w);
        return rc;
    }
    *state = w;
    return ARB_OK;
}

void arb_ot_vt_destroy(void *state)
{
    arb_ot_work_release(state);
    free(state);
}
