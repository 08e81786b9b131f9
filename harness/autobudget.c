/* autobudget.c — see autobudget.h. */
#include "autobudget.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arb_git_rev.h"
#include "drafters/drafter.h"
#include "drafters/medusa.h"
#include "drafters/tr.h"
#include "genutil.h"
#include "heads_file.h"
#include "sha256.h"
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

int arb_autobudget_pick_heads(const arb_cost_model *cm, const float (*acc)[ARB_HEADS_RANKS], int K, bool hydra,
                              double pass_us, int L, int b_min, int b_max, int *best, double *speedup, double *tau,
                              arb_err *err)
{
    if (K < 1 || K > ARB_HEADS_MAX || !(acc[0][0] > 0))
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: the heads' rank accuracies are empty (%d heads)", K);
    if (b_min < 2 || b_max < b_min || b_max > ARB_AUTOBUDGET_HEADS_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "budget auto: range [%d, %d] is not inside [2, %d]", b_min, b_max,
                       ARB_AUTOBUDGET_HEADS_MAX);
    const double t1 = arb_cost_us(cm, 1, L);
    *best = b_min;
    *speedup = -INFINITY;
    *tau = NAN;
    for (int B = b_min; B <= b_max; B++) {
        int32_t parent[ARB_AUTOBUDGET_HEADS_MAX];
        int16_t rank[ARB_AUTOBUDGET_HEADS_MAX];
        int depth[ARB_AUTOBUDGET_HEADS_MAX];
        double val[ARB_AUTOBUDGET_HEADS_MAX];
        const int n = arb_medusa_tree_auto(acc, K, B, parent, rank, ARB_AUTOBUDGET_HEADS_MAX, err);
        if (n < 0)
            return n;
        /* the tree's value: each node's acceptance probability, the product of its path's rank
           accuracies (the root, the bonus token, counts 1), as arb_medusa_tree_auto grew it */
        double t = 0;
        int dmax = 0;
        for (int i = 0; i < n; i++) {
            depth[i] = i ? depth[parent[i]] + 1 : 0;
            val[i] = i ? val[parent[i]] * acc[depth[i] - 1][rank[i]] : 1.0;
            t += val[i];
            dmax = depth[i] > dmax ? depth[i] : dmax;
        }
        /* drafting: Medusa one pass over the output head for all heads; Hydra one per level
           that has internal nodes (hydra_propose batches a level) */
        const double draft = (hydra ? dmax : 1) * pass_us, sp = t * t1 / (arb_cost_us(cm, n, L) + draft);
        if (sp > *speedup)
            *speedup = sp, *best = n, *tau = t;
        if (n < B)
            break; /* every candidate left has value 0: larger budgets give this tree */
    }
    return ARB_OK;
}

/* Which kind of choice "auto" makes for s's drafter. */
typedef enum { AUTO_TREE, AUTO_TR, AUTO_CHAIN, AUTO_HEADS, AUTO_DYNAMIC } auto_kind;

static auto_kind kind_of(const arb_method_spec *s)
{
    if (!strcmp(s->drafter, "pld"))
        return AUTO_CHAIN;
    if (!strcmp(s->drafter, "tr"))
        return AUTO_TR;
    if ((!strcmp(s->drafter, "medusa") || !strcmp(s->drafter, "hydra")) && !strcmp(s->tree, "auto") &&
        !s->tree_sched[0])
        return AUTO_HEADS;
    if (!strcmp(s->topology, "dynamic"))
        return AUTO_DYNAMIC;
    return AUTO_TREE;
}

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* One drafting pass as the drafter runs it (heads.c: the rows through the context's own output
   head, then each row's top-K), timed on the target context before its run starts (the call
   uses only the context's scratch; on a GPU context the device's head with its copies): best of 3
   after one warm-up. 0 when arb_ctx_output_head fails (the context takes fewer rows). */
static double time_pass_us(arb_ctx *c, int rows)
{
    arb_model_info mi;
    arb_model_get_info(arb_ctx_model(c), &mi);
    float *z = malloc((size_t)rows * mi.n_embd * sizeof *z), *L = malloc((size_t)rows * mi.n_vocab * sizeof *L);
    double best = INFINITY;
    arb_err err = {0};
    for (int i = 0; z && i < rows * mi.n_embd; i++)
        z[i] = (float)((i * 7919) % 101 - 50) / 50.0f; /* any finite rows: the time does not depend on them */
    for (int r = 0; r < 4 && z && L; r++) {
        const double t0 = mono_us();
        if (arb_ctx_output_head(c, z, rows, L, &err)) {
            best = INFINITY;
            break;
        }
        int32_t ids[ARB_HEADS_RANKS];
        float p[ARB_HEADS_RANKS];
        for (int i = 0; i < rows; i++)
            arb_topk_softmax(L + (size_t)i * mi.n_vocab, mi.n_vocab, ARB_HEADS_RANKS, ids, p);
        const double t = mono_us() - t0;
        if (r > 0)
            best = t < best ? t : best;
    }
    free(z), free(L);
    return isfinite(best) ? best : 0;
}

/* A budget predicted to lose to AR: the AR guard measures instead (arguard.h), so that "auto" is
   never the slower choice for long (the prediction can be wrong either way: Medusa/Hydra were
   predicted at 1.01-1.05x and measured at 0.81-0.98x). Greedy drafters that can skip a step
   only; returns the text the resolve line appends. */
static const char *guard_if_losing(arb_method_spec *s, double speedup)
{
    if (speedup >= 1.0 || s->ar_guard || s->temperature > 0 || !arb_drafter_find(s->drafter)->ar_steps)
        return "";
    s->ar_guard = true;
    return "; predicted below AR: ar_guard on (AR steps while speculation measures slower)";
}

/* Medusa / Hydra with tree "auto": the budget from the heads file's held-out rank accuracies
   (the ones the drafter grows its tree from) and the cost of the drafting passes. */
static int resolve_heads(arb_ctx *c, const arb_cost_model *cm, const char *profile, int b_max,
                         arb_method_spec *s, FILE *log, arb_err *err)
{
    const arb_model *m = arb_ctx_model(c);
    char sha[65], file[4096];
    int rc = arb_sha256_file(arb_model_path(m), sha, err);
    if (rc || (rc = arb_heads_file_for(s, arb_model_path(m), sha, file, sizeof file, err)))
        return rc;
    arb_heads *h = NULL;
    arb_heads_meta meta;
    if ((rc = arb_heads_load(file, sha, &h, &meta, err))) {
        arb_err_prefix(err, "method %s: budget \"auto\" reads the heads' rank accuracies", s->id);
        return rc;
    }
    const int K = h->n_heads;
    arb_heads_free(h);
    /* One drafting pass: Medusa scores its K heads' rows in one pass over the output head, Hydra
       the internal nodes of one tree level (timed with 2 rows, the typical level of a small
       tree). Without an output-head call (GPU), its share of one node's weight pass from the
       profile: w(1) x the head's share of the parameters. */
    const bool hydra = !strcmp(s->drafter, "hydra");
    double pass_us = time_pass_us(c, hydra ? 2 : K);
    const bool timed = pass_us > 0;
    if (!timed) {
        arb_model_info mi;
        arb_model_get_info(m, &mi);
        const double share = mi.n_params ? (double)mi.n_vocab * mi.n_embd / (double)mi.n_params : 0.0;
        pass_us = arb_cost_us(cm, 1, 0) * (share < 1.0 ? share : 1.0);
    }
    const int hi = b_max < ARB_AUTOBUDGET_HEADS_MAX ? b_max : ARB_AUTOBUDGET_HEADS_MAX;
    int B;
    double sp, tau;
    if ((rc = arb_autobudget_pick_heads(cm, (const float(*)[ARB_HEADS_RANKS])meta.rank_acc, K, hydra, pass_us,
                                        ARB_AUTOBUDGET_L, 2, hi, &B, &sp, &tau, err)))
        return rc;
    s->budget = B;
    const char *guard = guard_if_losing(s, sp);
    if (log)
        fprintf(log, "[%s] budget auto: B = %d from the %d heads' rank accuracies (expected %.2f tokens per step; "
                     "predicted %.2fx AR at %d cached tokens: tree %.2f ms + %s of %.2f ms (%s) vs one node %.2f "
                     "ms)%s; "
                     "heads %s; profile %s\n",
                s->id, B, K, tau, sp, ARB_AUTOBUDGET_L, arb_cost_us(cm, B, ARB_AUTOBUDGET_L) / 1e3,
                hydra ? "a drafting pass per tree level" : "one drafting pass", pass_us / 1e3, timed ? "timed" : "estimated", arb_cost_us(cm, 1, ARB_AUTOBUDGET_L) / 1e3, guard, file, profile);
    return ARB_OK;
}

int arb_autobudget_resolve(arb_ctx *c, int n_threads, arb_method_spec *s, FILE *log, arb_err *err)
{
    const arb_model *m = arb_ctx_model(c);
    if (!s->budget_auto)
        return ARB_OK;
    arb_machine mach;
    arb_machine_get(&mach);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    char fp[200], path[4400];
    /* the CPU's profile for a CPU run, the GPU's (device and mode) for a GPU run */
    int rc = arb_gen_cost_fingerprint(c, n_threads, fp, sizeof fp, err);
    if (rc || (rc = arb_cost_profile_path(fp, false, path, sizeof path, err)))
        return rc;
    arb_cost_model cm;
    if ((rc = arb_cost_load(path, &cm, err))) {
        if (rc == ARB_E_NOTFOUND && arb_ctx_on_device(c))
            return ARB_ERR(err, rc, "method %s: budget \"auto\" needs this GPU's cost profile for backend %s (%s): "
                           "run `arbor bench engine --model <the same model> --backend %s --save-profile` first",
                           s->id, mi.backend, path, mi.backend);
        if (rc == ARB_E_NOTFOUND)
            return ARB_ERR(err, rc, "method %s: budget \"auto\" needs this machine's cost profile (%s): run "
                           "`arbor bench engine --model <the same model> --threads %d --save-profile` first",
                           s->id, path, n_threads > 0 ? n_threads : mach.n_cores);
        return rc;
    }
    if (log && strcmp(cm.build, ARB_GIT_REV) != 0) /* costs are the engine's: a newer one may differ */
        fprintf(log, "[%s] note: this machine's cost profile was measured by %s%s, this is arbor %s; engine changes "
                     "since may have moved its costs: `arbor bench engine --threads %d --save-profile` measures them "
                     "again\n",
                s->id, cm.build[0] ? "arbor " : "an older arbor (no build recorded)", cm.build, ARB_GIT_REV,
                n_threads > 0 ? n_threads : mach.n_cores);
    const int b_max = cm.knot[cm.n_knots - 1] < 128 ? cm.knot[cm.n_knots - 1] : 128;
    const auto_kind kind = kind_of(s);
    s->budget_auto = false;
    if (kind == AUTO_HEADS)
        return resolve_heads(c, &cm, path, b_max, s, log, err);
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
    if (kind == AUTO_DYNAMIC) { /* the tree's size per step (topologies/dynamic.h), up to the table's length */
        s->budget = b_max < ARB_CHAIN_NODES_MAX ? b_max : ARB_CHAIN_NODES_MAX;
        arb_chain_cost_init(&s->chain_cost, &cm, s->budget);
        if (log)
            fprintf(log, "[%s] budget auto: the tree and its size per step, 1..%d nodes, from the spine's and the "
                         "table's acceptance on this run and t(n, L) (one node %.2f ms, 8 nodes %.2f ms at %d cached "
                         "tokens; profile %s)\n",
                    s->id, s->budget, arb_cost_us(&cm, 1, ARB_AUTOBUDGET_L) / 1e3,
                    arb_cost_us(&cm, 8, ARB_AUTOBUDGET_L) / 1e3, ARB_AUTOBUDGET_L, path);
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
    const char *guard = guard_if_losing(s, sp);
    const arb_topology_i *ti = arb_topology_find(s->topology);
    const bool chain = !strcmp(s->drafter, "goose") && ti && ti->wants_match && s->bypass;
    if (chain) { /* GOOSE's bypass chain: its length per step, up to the spine cap */
        s->bypass_max = ARB_SPINE_MAX - 1 < b_max - 1 ? ARB_SPINE_MAX - 1 : b_max - 1;
        arb_chain_cost_init(&s->chain_cost, &cm, s->bypass_max + 1);
    }
    if (log)
        fprintf(log, "[%s] budget auto: B = %d (predicted %.2fx AR at %d cached tokens: tree %.2f ms vs one node "
                     "%.2f ms)%s%s; profile %s\n", s->id, B, sp, ARB_AUTOBUDGET_L, arb_cost_us(&cm, B, ARB_AUTOBUDGET_L) / 1e3,
                arb_cost_us(&cm, 1, ARB_AUTOBUDGET_L) / 1e3,
                chain ? "; bypass chains: length per step from their acceptance and t(n, L)" : "", guard, path);
    return ARB_OK;
}
