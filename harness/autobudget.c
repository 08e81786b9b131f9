/* autobudget.c — see autobudget.h. */
#include "autobudget.h"

#include <math.h>
#include <string.h>

#include "drafters/tr.h"
#include "genutil.h"
#include "topologies/sequoia.h"
#include "topologies/spine.h"
#include "topologies/topology.h"

int arb_autobudget_pick(const arb_cost_model *cm, const double *p, int levels, int L, int b_min, int b_max,
                        int *best, double *speedup, arb_err *err)
{
    int K = 0;
    while (K < ARB_SEQUOIA_K_MAX - 1 && p[K] > 0)
        K++;
    if (K == 0)
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: empty acceptance vector (sequoia_p)");
    if (b_min < 1 || b_max < b_min)
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: range [%d, %d] is empty", b_min, b_max);
    arb_sequoia *sq = NULL;
    int rc = arb_sequoia_new(p, K, b_max, levels, &sq, err);
    if (rc)
        return rc;
    const double t1 = arb_cost_us(cm, 1, L);
    *best = b_min;
    *speedup = -INFINITY;
    for (int B = b_min; B <= b_max; B++) {
        const double tau = arb_sequoia_best(sq, B, levels), tB = arb_cost_us(cm, B, L);
        if (!isfinite(tau) || !(tB > 0))
            continue; /* infeasible shape for this depth */
        const double s = tau * t1 / tB;
        if (s > *speedup)
            *speedup = s, *best = B;
    }
    arb_sequoia_free(sq);
    if (!isfinite(*speedup))
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: no feasible tree in [%d, %d] nodes at %d levels", b_min,
                       b_max, levels);
    return ARB_OK;
}

int arb_autobudget_pick_tr(const arb_cost_model *cm, const double *p, int L, int b_min, int b_max, int *best,
                           double *speedup, arb_err *err)
{
    if (!(p[0] > 0))
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: empty acceptance vector (sequoia_p)");
    if (b_min < 1 || b_max < b_min)
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: range [%d, %d] is empty", b_min, b_max);
    int32_t parent[128];
    int16_t rank[128];
    const int n_tpl = arb_tr_template(parent, rank, 128);
    const double t1 = arb_cost_us(cm, 1, L);
    *best = b_min;
    *speedup = -INFINITY;
    for (int B = b_min; B <= b_max && B <= n_tpl; B++) {
        int32_t pa[128];
        int16_t rk[128];
        memcpy(pa, parent, sizeof pa);
        memcpy(rk, rank, sizeof rk);
        double tau;
        const int n = arb_tr_template_prune(pa, rk, n_tpl, p, B, &tau);
        const double s = tau * t1 / arb_cost_us(cm, n, L);
        if (s > *speedup)
            *speedup = s, *best = n;
    }
    return ARB_OK;
}

/* Which kind of choice "auto" makes for s's drafter. */
typedef enum { AUTO_TREE, AUTO_TR, AUTO_CHAIN } auto_kind;

static auto_kind kind_of(const arb_method_spec *s)
{
    if (!strcmp(s->drafter, "pld"))
        return AUTO_CHAIN;
    if (!strcmp(s->drafter, "tr"))
        return AUTO_TR;
    return AUTO_TREE;
}

int arb_autobudget_resolve(const arb_model *m, int n_threads, arb_method_spec *s, FILE *log, arb_err *err)
{
    if (!s->budget_auto)
        return ARB_OK;
    arb_machine mach;
    arb_machine_get(&mach);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const arb_load_opts lo = arb_gen_load_opts();
    char fp[200], path[4400], kl[32];
    arb_cost_fingerprint(fp, sizeof fp, mach.cpu_model, arb_gen_kernels_label(&lo, kl, sizeof kl), n_threads > 0 ? n_threads : mach.n_cores,
                         mi.name, (double)mi.weight_bytes);
    int rc = arb_cost_profile_path(fp, false, path, sizeof path, err);
    if (rc)
        return rc;
    arb_cost_model cm;
    if ((rc = arb_cost_load(path, &cm, err))) {
        if (rc == ARB_E_NOTFOUND)
            return ARB_ERR(err, rc, "method %s: budget \"auto\" needs this machine's cost profile (%s): run "
                           "`arbor bench engine --model <the same model> --threads %d --save-profile` first",
                           s->id, path, n_threads > 0 ? n_threads : mach.n_cores);
        return rc;
    }
    const int b_max = cm.knot[cm.n_knots - 1] < 128 ? cm.knot[cm.n_knots - 1] : 128;
    const auto_kind kind = kind_of(s);
    s->budget_auto = false;
    if (kind == AUTO_CHAIN) { /* PLD: the chain length per step, up to max_draft */
        s->budget = 1 + s->max_draft;
        arb_chain_cost_init(&s->chain_cost, &cm, s->budget);
        if (log)
            fprintf(log, "[%s] budget auto: chain length per step, 1..%d tokens, from this prompt's chain "
                         "acceptance and t(n, L) (one node %.2f ms, %d nodes %.2f ms at %d cached tokens; profile %s)\n",
                    s->id, s->max_draft, arb_cost_us(&cm, 1, ARB_AUTOBUDGET_L) / 1e3, s->budget,
                    arb_cost_us(&cm, s->budget, ARB_AUTOBUDGET_L) / 1e3, ARB_AUTOBUDGET_L, path);
        return ARB_OK;
    }
    int B;
    double sp;
    if (kind == AUTO_TR)
        rc = arb_autobudget_pick_tr(&cm, s->sequoia_p, ARB_AUTOBUDGET_L, 2, b_max, &B, &sp, err);
    else
        rc = arb_autobudget_pick(&cm, s->sequoia_p, s->max_depth + 1, ARB_AUTOBUDGET_L, 2, b_max, &B, &sp, err);
    if (rc)
        return rc;
    s->budget = B;
    const arb_topology_i *ti = arb_topology_find(s->topology);
    const bool chain = !strcmp(s->drafter, "goose") && ti && ti->wants_match && s->bypass;
    if (chain) { /* GOOSE's bypass chain: its length per step, up to the spine cap */
        s->bypass_max = ARB_SPINE_MAX - 1 < b_max - 1 ? ARB_SPINE_MAX - 1 : b_max - 1;
        arb_chain_cost_init(&s->chain_cost, &cm, s->bypass_max + 1);
    }
    if (log)
        fprintf(log, "[%s] budget auto: B = %d (predicted %.2fx AR at %d cached tokens: tree %.2f ms vs one node "
                     "%.2f ms)%s; profile %s\n", s->id, B, sp, ARB_AUTOBUDGET_L, arb_cost_us(&cm, B, ARB_AUTOBUDGET_L) / 1e3,
                arb_cost_us(&cm, 1, ARB_AUTOBUDGET_L) / 1e3,
                chain ? "; bypass chains: length per step from their acceptance and t(n, L)" : "", path);
    return ARB_OK;
}
