/* head_sched.c — bank + policy + features for head drafters (see head_sched.h). */
#include "head_sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "schedulers/features.h"
#include "schedulers/scheduler.h"
#include "engine.h" /* arb_topk_softmax, ARB_TOPK_K_MAX */

struct arb_headsched {
    arb_topobank *bank;
    const arb_tree_sched_i *si;
    void *sst;
    arb_entfeat feat;
    int32_t acc[ARB_ETREE_DEPTH + 2]; /* this step's committed tokens: accepted drafts, then the bonus */
    int n_acc;                        /* 0: no verified step waiting for its bonus */
    char extra[1024];                 /* the step's steps.extra members */
};

void arb_headsched_free(arb_headsched *hs)
{
    if (!hs)
        return;
    if (hs->si)
        hs->si->destroy(hs->sst);
    arb_topobank_free(hs->bank);
    free(hs);
}

const arb_topobank *arb_headsched_bank(const arb_headsched *hs) { return hs->bank; }

int arb_headsched_new(const arb_method_spec *s, int n_heads, int tree_cap, arb_headsched **out, arb_err *err)
{
    *out = NULL;
    if (!s->tree_sched[0])
        return ARB_OK;
    const arb_tree_sched_i *si = arb_tree_sched_find(s->tree_sched);
    int kind = arb_entfeat_kind_parse(s->feature);
    if (!si || kind < 0)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: tree_sched '%s' / feature '%s' (static entmtp_tau ladder / lit gD sum)",
                       s->id, s->tree_sched, s->feature);
    arb_headsched *hs = calloc(1, sizeof *hs);
    if (!hs)
        return ARB_ERR(err, ARB_E_NOMEM, "method %s: out of memory", s->id);
    hs->si = NULL;
    int rc = arb_topobank_load(s->bank, n_heads, &hs->bank, err);
    if (rc)
        arb_err_prefix(err, "method %s", s->id);
    for (int k = 0; !rc && k < hs->bank->n; k++)
        if (hs->bank->t[k].n > tree_cap)
            rc = ARB_ERR(err, ARB_E_INVAL, "method %s: bank %s: tree %d has %d nodes (at most %d)", s->id, s->bank, k,
                         hs->bank->t[k].n, tree_cap);
    if (!rc) {
        arb_tree_sched_opts o = arb_tree_sched_default_opts(hs->bank);
        if (s->tau_on >= 0)
            o.tau_on = s->tau_on;
        if (s->tau_off >= 0)
            o.tau_off = s->tau_off;
        else if (s->tau_on >= 0)
            o.tau_off = s->tau_on;
        if ((rc = si->create(hs->bank, &o, &hs->sst, err)))
            arb_err_prefix(err, "method %s: bank %s", s->id, s->bank);
        else
            hs->si = si;
    }
    if (rc) {
        arb_headsched_free(hs);
        return rc;
    }
    arb_entfeat_reset(&hs->feat, (arb_entfeat_kind)kind);
    *out = hs;
    return ARB_OK;
}

void arb_headsched_begin(arb_headsched *hs)
{
    arb_entfeat_reset(&hs->feat, hs->feat.kind);
    hs->n_acc = 0;
    hs->si->begin(hs->sst);
}

void arb_headsched_base(arb_headsched *hs, const float *row, int V)
{
    arb_entfeat_row r; /* one pass: the bonus (argmax), p0 and H */
    arb_entfeat_row_stats(row, V, &r);
    if (hs->n_acc > 0) { /* the bonus closes the verified step */
        hs->acc[hs->n_acc - 1] = r.argmax;
        arb_entfeat_accepted(&hs->feat, hs->acc, hs->n_acc);
        hs->n_acc = 0;
    }
    arb_entfeat_base_stats(&hs->feat, &r);
}

const arb_topo *arb_headsched_pick(arb_headsched *hs, const float *p, const int32_t *top1, int D,
                                   arb_step_record *rec)
{
    arb_entfeat_heads(&hs->feat, p, top1, D);
    int k = hs->si->pick(hs->sst, hs->feat.s);
    rec->topology_id = k;
    int n = snprintf(hs->extra, sizeof hs->extra, "\"tree_id\":%d,\"state\":%d,", k, hs->si->state(hs->sst));
    if (arb_entfeat_json(&hs->feat, hs->extra + n, (int)sizeof hs->extra - n) < 0)
        hs->extra[0] = 0; /* cannot happen with these fields' widths; never a cut JSON */
    rec->extra_json = hs->extra;
    return &hs->bank->t[k];
}

void arb_headsched_verified(arb_headsched *hs, const arb_tree *t, const int32_t *path, int n_path)
{
    int m = n_path < ARB_ETREE_DEPTH + 1 ? n_path : ARB_ETREE_DEPTH + 1;
    for (int i = 1; i < m; i++)
        hs->acc[i - 1] = t->tok[path[i]];
    hs->n_acc = m; /* m - 1 drafts + the bonus slot */
}
