/* autobudget.c — see autobudget.h. */
#include "autobudget.h"

#include <math.h>
#include <string.h>

#include "genutil.h"
#include "topologies/sequoia.h"

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

int arb_autobudget_resolve(const arb_model *m, int n_threads, arb_method_spec *s, FILE *log, arb_err *err)
{
    if (!s->budget_auto)
        return ARB_OK;
    arb_machine mach;
    arb_machine_get(&mach);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const arb_load_opts lo = arb_gen_load_opts();
    char fp[200], path[4400];
    arb_cost_fingerprint(fp, sizeof fp, mach.cpu_model, arb_cpu_kernels(lo.isa), n_threads > 0 ? n_threads : mach.n_cores,
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
    int B;
    double sp;
    if ((rc = arb_autobudget_pick(&cm, s->sequoia_p, s->max_depth + 1, ARB_AUTOBUDGET_L, 2, b_max, &B, &sp, err)))
        return rc;
    s->budget = B;
    s->budget_auto = false;
    if (log)
        fprintf(log, "[%s] budget auto: B = %d (predicted %.2fx AR at %d cached tokens: tree %.2f ms vs one node "
                     "%.2f ms; profile %s)\n", s->id, B, sp, ARB_AUTOBUDGET_L, arb_cost_us(&cm, B, ARB_AUTOBUDGET_L) / 1e3,
                arb_cost_us(&cm, 1, ARB_AUTOBUDGET_L) / 1e3, path);
    return ARB_OK;
}
