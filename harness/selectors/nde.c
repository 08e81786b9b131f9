/* nde.c — the `nde` selector (selector.h): the root's scalar features (nde_features.h) through
 * the trained MLP (nde_mlp.h), argmax over the action set, once per step. The file fixes the
 * latency model the features use (the one its training data was costed with). */
#include <stdlib.h>

#include "nde_mlp.h"
#include "selector.h"

typedef struct nde_sel {
    arb_nde_mlp m;
    arb_nde_prov prov;
    double *h;              /* [2H + A] forward scratch */
} nde_sel;

static void nde_destroy(void *st)
{
    nde_sel *s = st;
    if (!s)
        return;
    arb_nde_mlp_release(&s->m);
    free(s->h);
    free(s);
}

static int nde_create(const arb_selector_opts *o, void **st, arb_err *err)
{
    *st = NULL;
    if (!o->file || !o->file[0])
        return ARB_ERR(err, ARB_E_INVAL, "selector nde: needs selector_file (arbor nde train --out FILE)");
    if (o->n_nodes_max < ARB_NDE_NODES_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "selector nde: the tree holds %d nodes; the action set needs %d",
                       o->n_nodes_max, ARB_NDE_NODES_MAX);
    nde_sel *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR(err, ARB_E_NOMEM, "selector nde: out of memory");
    int rc = arb_nde_mlp_load(o->file, &s->m, &s->prov, err);
    if (!rc && !(s->h = malloc(sizeof(double) * (size_t)(2 * s->m.H + s->m.A))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "selector nde: out of memory");
    if (rc) {
        nde_destroy(s);
        return rc;
    }
    *st = s;
    return ARB_OK;
}

static arb_draft_shape nde_select(void *st, const arb_selector_in *in)
{
    nde_sel *s = st;
    double f[ARB_NDE_F];
    arb_nde_features(in->p_prev, in->q_prev, in->q_root, in->V, in->n_ctx, in->smp, &s->prov.lat, f);
    return arb_nde_actions[arb_nde_mlp_argmax(&s->m, f, s->h)];
}

const arb_selector_i arb_selector_nde = {
    .name = "nde", .needs_laws = true, .create = nde_create, .select = nde_select, .destroy = nde_destroy,
};
