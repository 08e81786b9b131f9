/* test_decode.c — the decode loop on the real default model: every greedy method emits
 * exactly the AR tokens (docs/spec/drafting.md §1, GOOSE "lossless"), step records add up, limits
 * and EOS stop, decoders are reusable across prompts. Skips without the model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <unistd.h>

#include "arguard.h"
#include "datastore.h"
#include "decode.h"
#include "eagle_head.h"
#include "entmtp_rollout.h"
#include "heads.h"
#include "heads_file.h"
#include "sha256.h"
#include "genutil.h"
#include "method.h"
#include "modelfetch.h"
#include "tree.h"
#include "verifiers/greedy.h"

static arb_model *M;
static arb_ctx *C;

static void setup(void)
{
    char path[4096];
    arb_err err = {0};
    if (arb_model_resolve("default", path, sizeof path, &err))
        return;
    if (arb_gen_load(path, "cpu", 0, 2048, &M, &C, &err))
        cr_log_warn("model load failed: %s", err.msg);
}

static void teardown(void)
{
    arb_ctx_free(C);
    arb_model_free(M);
}

static const char *prompts[] = {
    "Write a Python function that returns the n-th Fibonacci number, then call it for n = 1..5.",
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "Repeat this list exactly twice: apple, banana, cherry, date, elderberry, fig, grape.",
};

typedef struct rec_sum {
    int steps, committed, max_nodes;
    bool bad_k;
    bool bad_rank;          /* rank fields disagree with k or with each other */
    bool all_ranked;        /* set by the caller: every accepted node must carry a rank (no spine) */
    int rank_cap;           /* set by the caller: ranks must stay below this (iso3: 3), 0 = any */
    long hits;              /* Σ rank_hit */
    long acc_lade, prop_lade, acc_window, prop_window; /* Lookahead's per-source counters */
} rec_sum;

/* The rank fields of a step agree with its accepted length: one acc_rank per accepted node,
   rank_hit[r] = accepted nodes of rank r, hits <= offers, and offers only when a tree was built. */
static bool ranks_ok(const arb_step_record *r, const rec_sum *s)
{
    int n = r->accepted_k < ARB_RANK_PATH_MAX ? r->accepted_k : ARB_RANK_PATH_MAX, cnt[ARB_RANK_MAX] = {0};
    if (r->n_acc_rank != n)
        return false;
    for (int i = 0; i < n; i++) {
        int k = r->acc_rank[i];
        if ((s->all_ranked && k < 0) || (s->rank_cap && k >= s->rank_cap))
            return false;
        if (k >= 0 && k < ARB_RANK_MAX)
            cnt[k]++;
    }
    for (int k = 0; k < ARB_RANK_MAX; k++)
        if (cnt[k] != r->rank_hit[k] || r->rank_hit[k] > r->rank_offer[k] || (r->n_nodes == 1 && r->rank_offer[k]) ||
            (s->rank_cap && k >= s->rank_cap && r->rank_offer[k]))
            return false;
    return true;
}

static int on_step(const arb_step_record *r, void *ud)
{
    rec_sum *s = ud;
    s->steps++;
    s->committed += r->committed;
    if (r->n_nodes > s->max_nodes)
        s->max_nodes = r->n_nodes;
    if (r->accepted_k > r->tree_depth || r->committed > r->accepted_k + 1 || r->committed < 1)
        s->bad_k = true;
    s->bad_rank |= !ranks_ok(r, s);
    for (int k = 0; k < ARB_RANK_MAX; k++)
        s->hits += r->rank_hit[k];
    s->acc_lade += r->acc_by_src[ARB_STAT_LADE], s->prop_lade += r->prop_by_src[ARB_STAT_LADE];
    s->acc_window += r->acc_by_src[ARB_STAT_LADE_WINDOW], s->prop_window += r->prop_by_src[ARB_STAT_LADE_WINDOW];
    return 0;
}

static void generate_spec(const char *method, const arb_method_spec *sp, const char *prompt, int max_new,
                          int32_t *out, int *n_out, arb_prompt_result *res, rec_sum *sum)
{
    arb_err err = {0};
    arb_method_spec s = *sp;
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompt, true, &ids, &n, &err), ARB_OK, "%s", err.msg);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    memset(sum, 0, sizeof *sum);
    sum->all_ranked = !strncmp(method, "iso", 3) || !strcmp(method, "sequoia") || !strcmp(method, "tr");
    sum->rank_cap = !strncmp(method, "iso", 3) ? method[3] - '0' : 0;
    arb_decode_cb cb = {.on_step = on_step, .ud = sum};
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, &cb, res, &err), ARB_OK, "%s: %s", method, err.msg);
    memcpy(out, res->ids, (size_t)res->n_generated * sizeof *out);
    *n_out = res->n_generated;
    free(ids);
    arb_decoder_free(d);
}

/* prompts[p] (chat template) through decoder d, max_new tokens at most, steps to cb; the result
   in *r, and its tokens asserted equal to the reference (label names the run in a message). */
static void decode_like_ar(arb_decoder *d, size_t p, int max_new, const arb_decode_cb *cb, arb_prompt_result *r,
                           const int32_t *ref, int n_ref, const char *label)
{
    arb_err err = {0};
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompts[p], true, &ids, &n, &err), ARB_OK, "%s", err.msg);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, cb, r, &err), ARB_OK, "%s: %s", label, err.msg);
    free(ids);
    cr_assert_eq(r->n_generated, n_ref, "%s prompt %zu: %d vs %d tokens", label, p, r->n_generated, n_ref);
    for (int i = 0; i < n_ref; i++)
        cr_assert_eq(r->ids[i], ref[i], "%s prompt %zu: token %d differs", label, p, i);
}

static void generate(const char *method, const char *prompt, int max_new, int32_t *out, int *n_out,
                     arb_prompt_result *res, rec_sum *sum)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset(method, &s, &err), ARB_OK, "%s", err.msg);
    generate_spec(method, &s, prompt, max_new, out, n_out, res, sum);
}

/* The AR tokens of prompts[p], max_new at most, into ref; returns how many. */
static int ar_reference(size_t p, int max_new, int32_t *ref)
{
    int n_ref;
    arb_prompt_result ar;
    rec_sum sum;
    generate("ar", prompts[p], max_new, ref, &n_ref, &ar, &sum);
    return n_ref;
}

Test(decode, every_greedy_method_reproduces_ar, .init = setup, .fini = teardown, .timeout = 1500)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    /* every method on the first prompt; the main ones on the others (tree evals cost about
       one AR step per node on the CPU engine, so the suite stays within minutes) */
    static const char *methods[] = {"pld", "tr", "goose", "eagle2", "iso3", "iso5", "sequoia", "goose-nospinebr",
                                    "goose-unigram", "goose-nobypass", "goose-nospine", "goose-control",
                                    "lookahead", "lookahead-small"};
    const size_t n_methods[] = {sizeof methods / sizeof methods[0], 4, 4};
    int32_t ref[128], got[128];
    arb_err err = {0};
    for (size_t p = 0; p < sizeof prompts / sizeof prompts[0]; p++) {
        int n_ref, n;
        arb_prompt_result ar, r;
        rec_sum s;
        generate("ar", prompts[p], 32, ref, &n_ref, &ar, &s);
        cr_assert_eq(ar.n_target_calls, n_ref, "AR: one call per token");
        cr_assert_eq(s.committed + 1, n_ref);
        for (size_t m = 0; m < n_methods[p]; m++) {
            generate(methods[m], prompts[p], 32, got, &n, &r, &s);
            cr_assert_eq(n, n_ref, "%s prompt %zu: %d vs %d tokens", methods[m], p, n, n_ref);
            for (int i = 0; i < n; i++)
                cr_assert_eq(got[i], ref[i], "%s prompt %zu: token %d differs", methods[m], p, i);
            cr_assert_eq(r.hash, ar.hash);
            cr_assert_leq(r.n_target_calls, ar.n_target_calls, "%s never needs more calls than AR", methods[m]);
            cr_assert_eq(s.committed + 1, n, "%s: step records add up", methods[m]);
            cr_assert_eq(s.steps + 1, r.n_target_calls);
            cr_assert_not(s.bad_k, "%s: k <= depth, 1 <= committed <= k + 1", methods[m]);
            cr_assert_not(s.bad_rank, "%s: acc_rank / rank_hit / rank_offer agree with the path", methods[m]);
            if (s.all_ranked && r.n_generated > s.steps + 1)
                cr_assert_gt(s.hits, 0, "%s accepted drafts, so some rank was hit", methods[m]);
            arb_method_spec sp;
            cr_assert_eq(arb_method_spec_preset(methods[m], &sp, &err), ARB_OK);
            cr_assert_leq(s.max_nodes, arb_method_max_nodes(&sp), "%s: within its sized tree", methods[m]);
            cr_log_info("prompt %zu %-16s tau %.2f", p, methods[m], (double)n / r.n_target_calls);
        }
    }
}

/* GOOSE's sources in the per-step cost-aware tree (topologies/dynamic.h): whatever size and
   shape the cost table makes it pick — chains and wide trees (a node at 2 % of an eval), a few
   nodes (10 %), mostly AR steps (60 %) — the tokens are AR's. Budget "auto" would load this
   machine's profile; the tables here are set by hand so the test reaches each regime. */
/* harvest_prefill decides whether the prompt's rows reach the table (the decoder's prefill
   computes them only then): at the first step of a fresh decoder, TR's and GOOSE's tables hold
   rows exactly when the prompt was harvested (TR prunes unfilled rows, so without it the first
   step is an AR step); the tokens are AR's either way. */
typedef struct first_step { int steps, table_fill, n_nodes; } first_step;

static int on_first_step(const arb_step_record *r, void *ud)
{
    first_step *f = ud;
    if (f->steps++ == 0)
        f->table_fill = r->table_fill, f->n_nodes = r->n_nodes;
    return 0;
}

Test(decode, prompt_harvest_follows_the_spec, .init = setup, .fini = teardown, .timeout = 600)
{
    cr_assert(C, "default model not available");
    enum { MAX_NEW = 12 };
    int32_t ref[MAX_NEW];
    int n_ref = 0;
    for (int m = 0; m < 3; m++) {
        const char *preset = m == 0 ? "ar" : m == 1 ? "tr" : "goose";
        for (int harvest = 0; harvest < 2; harvest++) {
            if (m == 0 && harvest)
                continue;
            arb_err err = {0};
            arb_method_spec s;
            cr_assert_eq(arb_method_spec_preset(preset, &s, &err), ARB_OK, "%s", err.msg);
            s.harvest_prefill = harvest, s.hot_start = false, s.tr_prune_unfilled = true;
            arb_decoder *d;
            cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
            int32_t *ids;
            int n;
            cr_assert_eq(arb_gen_prompt(M, prompts[2], true, &ids, &n, &err), ARB_OK, "%s", err.msg);
            arb_decode_opts o = arb_decode_default_opts();
            o.max_new = MAX_NEW;
            first_step f = {0};
            arb_decode_cb cb = {.on_step = on_first_step, .ud = &f};
            arb_prompt_result res;
            cr_assert_eq(arb_decoder_generate(d, ids, n, &o, &cb, &res, &err), ARB_OK, "%s: %s", preset, err.msg);
            if (m == 0) {
                memcpy(ref, res.ids, (size_t)res.n_generated * sizeof *ref);
                n_ref = res.n_generated;
            } else {
                cr_assert_eq(res.n_generated, n_ref, "%s harvest %d", preset, harvest);
                cr_assert(memcmp(res.ids, ref, (size_t)n_ref * sizeof *ref) == 0, "%s harvest %d", preset, harvest);
                cr_assert_gt(f.steps, 0);
                if (harvest)
                    cr_assert_gt(f.table_fill, 0, "%s: the prompt harvested, yet an empty table", preset);
                else
                    cr_assert_eq(f.table_fill, 0, "%s: the prompt not harvested, yet %d rows", preset, f.table_fill);
                if (m == 1 && !harvest)
                    cr_assert_eq(f.n_nodes, 1, "TR, empty table, pruned: an AR step");
            }
            free(ids);
            arb_decoder_free(d);
        }
    }
}

Test(decode, dynamic_tree_reproduces_ar, .init = setup, .fini = teardown, .timeout = 600)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    static const double per_node[] = {0.02, 0.1, 0.6};
    int32_t ref[128], got[128];
    for (size_t p = 0; p < 2; p++) {
        int n_ref, n;
        arb_prompt_result ar, r;
        rec_sum s;
        generate("ar", prompts[p], 48, ref, &n_ref, &ar, &s);
        int max_nodes[3];
        for (size_t c = 0; c < sizeof per_node / sizeof per_node[0]; c++) {
            arb_method_spec sp;
            cr_assert_eq(arb_method_spec_preset("goose-dyn-auto", &sp, NULL), ARB_OK);
            sp.budget_auto = false;
            sp.budget = 32;
            sp.chain_cost.n_max = 32;
            for (int k = 1; k <= 32; k++)
                sp.chain_cost.w_us[k] = 2000.0 * (1.0 + per_node[c] * (k - 1));
            sp.chain_cost.ctx0_us = 1.0;
            generate_spec("goose-dyn", &sp, prompts[p], 48, got, &n, &r, &s);
            cr_assert_eq(n, n_ref, "per node %g prompt %zu: %d vs %d tokens", per_node[c], p, n, n_ref);
            for (int i = 0; i < n; i++)
                cr_assert_eq(got[i], ref[i], "per node %g prompt %zu: token %d differs", per_node[c], p, i);
            cr_assert_eq(s.committed + 1, n, "step records add up");
            cr_assert_not(s.bad_k);
            cr_assert_not(s.bad_rank);
            cr_assert_leq(s.max_nodes, 32);
            max_nodes[c] = s.max_nodes;
            cr_log_info("prompt %zu goose-dyn per node %.2f: tau %.2f, largest tree %d", p, per_node[c],
                        (double)n / r.n_target_calls, s.max_nodes);
        }
        cr_assert_gt(max_nodes[0], max_nodes[2], "cheaper nodes, larger trees (%d vs %d)", max_nodes[0],
                     max_nodes[2]);
    }
}

/* The AR guard (arguard.h): whatever it decides, greedy tokens are AR's; its opening is fixed
   (ARB_ARGUARD_SPEC_PROBE speculative steps, then ARB_ARGUARD_AR_PROBE AR steps to measure AR
   on a fresh decoder), and each of its AR steps is the anchor alone, recorded as such; a second
   prompt on the same decoder speculates first again. */
typedef struct guard_log {
    int n, n_guard;
    bool guard[256];
    bool bad; /* a guard step with more than the anchor, or a non-AR mode */
} guard_log;

static int on_guard_step(const arb_step_record *r, void *ud)
{
    guard_log *g = ud;
    if (g->n < 256)
        g->guard[g->n] = r->ar_guard;
    g->n++;
    g->n_guard += r->ar_guard;
    g->bad |= r->ar_guard && (r->n_nodes != 1 || r->accepted_k != 0 || r->mode != ARB_MODE_AR);
    return 0;
}

Test(decode, ar_guard_reproduces_ar, .init = setup, .fini = teardown, .timeout = 600)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    static const char *methods[] = {"pld", "tr", "goose"};
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        arb_err err = {0};
        arb_method_spec s;
        cr_assert_eq(arb_method_spec_preset(methods[m], &s, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_method_param_set(&s, "ar_guard", "true", &err), ARB_OK, "%s", err.msg);
        arb_decoder *d;
        cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
        for (size_t p = 0; p < 2; p++) {
            int32_t ref[128];
            arb_prompt_result r;
            const int n_ref = ar_reference(p, 64, ref);
            guard_log g = {0};
            decode_like_ar(d, p, 64, &(arb_decode_cb){.on_step = on_guard_step, .ud = &g}, &r, ref, n_ref, methods[m]);
            cr_assert_not(g.bad, "%s: a guard step is the anchor alone, mode AR", methods[m]);
            cr_assert_geq(g.n, ARB_ARGUARD_SPEC_PROBE + ARB_ARGUARD_AR_PROBE, "%s: %d steps", methods[m], g.n);
            /* a prompt opens with a probe: SPEC_PROBE steps on a fresh decoder, at least PROBE_MIN */
            for (int i = 0; i < (p == 0 ? ARB_ARGUARD_SPEC_PROBE : ARB_ARGUARD_PROBE_MIN); i++)
                cr_assert_not(g.guard[i], "%s prompt %zu: step %d speculates", methods[m], p, i);
            if (p == 0)
                for (int i = ARB_ARGUARD_SPEC_PROBE; i < ARB_ARGUARD_SPEC_PROBE + ARB_ARGUARD_AR_PROBE; i++)
                    cr_assert(g.guard[i], "%s: step %d measures AR", methods[m], i);
            cr_log_info("%s prompt %zu: %d of %d steps AR by the guard", methods[m], p, g.n_guard, g.n);
        }
        arb_decoder_free(d);
    }
}

/* Each eval asks the engine for the narrowest output (docs/gpu.md "No logits round trip"):
   the top-K for drafters that harvest (TR, GOOSE, Iso), the argmax for other greedy methods
   (AR, PLD), full rows for a drafter with stop_logits (draft). arb_decode_opts.full_rows forces
   the path before that (every row to the host, the top-K computed there). Both must give the
   same tokens and the same step records: accepted lengths, bonus tokens, proposals per source,
   GOOSE's table fill and spine split, ranks; the records of step s + 1 come from the tables the
   harvest of step s built, so equal records mean the harvests fed the drafters alike. */
enum { LOG_MAX = 128 };
typedef struct rec_log {
    arb_step_record r[LOG_MAX];
    int n;
} rec_log;

static int log_step(const arb_step_record *r, void *ud)
{
    rec_log *l = ud;
    cr_assert_lt(l->n, LOG_MAX);
    l->r[l->n++] = *r;
    return 0;
}

static void same_records(const char *method, const arb_step_record *a, const arb_step_record *b)
{
#define SAME(f) cr_assert_eq(a->f, b->f, "%s step %d: " #f " %d vs %d (narrow vs full rows)", method, a->step, \
                             (int)a->f, (int)b->f)
    /* every integer field (timings and extra_json, a pointer into the drafter, excepted) */
    SAME(step); SAME(L_cache); SAME(n_nodes); SAME(tree_depth); SAME(stop_fanout); SAME(accepted_k);
    SAME(committed); SAME(bonus_token); SAME(mode); SAME(category); SAME(topology_id); SAME(match_n); SAME(d_len);
    SAME(consensus); SAME(consensus_distinct); SAME(agree_len); SAME(match_len); SAME(bs); SAME(br); SAME(bsp);
    SAME(spine_alloc_sum); SAME(n_spine); SAME(acc_spine); SAME(spine_break_depth); SAME(bigram_hits);
    SAME(table_fill); SAME(n_acc_rank);
#undef SAME
    cr_assert(!memcmp(&a->r, &b->r, sizeof a->r) && !memcmp(&a->p_s_hat, &b->p_s_hat, sizeof a->p_s_hat),
              "%s step %d: spine ratio / p_s estimate", method, a->step);
    cr_assert(!memcmp(a->acc_by_src, b->acc_by_src, sizeof a->acc_by_src) &&
                  !memcmp(a->prop_by_src, b->prop_by_src, sizeof a->prop_by_src),
              "%s step %d: per-source counts", method, a->step);
    cr_assert(!memcmp(a->acc_rank, b->acc_rank, sizeof a->acc_rank) &&
                  !memcmp(a->rank_offer, b->rank_offer, sizeof a->rank_offer) &&
                  !memcmp(a->rank_hit, b->rank_hit, sizeof a->rank_hit),
              "%s step %d: ranks", method, a->step);
}

Test(decode, narrow_outputs_equal_the_full_rows_path, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    static const char *methods[] = {"ar", "pld", "tr", "goose", "iso3", "draft"};
    static rec_log logs[2];
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
        for (size_t p = 0; p < 2; p++) {
            arb_err err = {0};
            arb_method_spec s;
            cr_assert_eq(arb_method_spec_preset(methods[m], &s, &err), ARB_OK, "%s", err.msg);
            int32_t *ids, toks[2][64];
            int n, n_gen[2];
            uint64_t hash[2];
            cr_assert_eq(arb_gen_prompt(M, prompts[p], true, &ids, &n, &err), ARB_OK);
            size_t tables[2];
            for (int full = 0; full < 2; full++) {
                arb_decoder *d;
                cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
                arb_decode_opts o = arb_decode_default_opts();
                o.max_new = 48;
                o.full_rows = full;
                o.fetch_stop_row = !full; /* draft: the stop row alone, against every row */
                logs[full].n = 0;
                arb_decode_cb cb = {.on_step = log_step, .ud = &logs[full]};
                arb_prompt_result r;
                cr_assert_eq(arb_decoder_generate(d, ids, n, &o, &cb, &r, &err), ARB_OK, "%s", err.msg);
                n_gen[full] = r.n_generated;
                hash[full] = r.hash;
                memcpy(toks[full], r.ids, sizeof(int32_t) * (size_t)(r.n_generated < 64 ? r.n_generated : 64));
                tables[full] = arb_decoder_table_bytes(d);
                arb_decoder_free(d);
            }
            cr_assert_eq(n_gen[0], n_gen[1], "%s prompt %zu", methods[m], p);
            cr_assert(!memcmp(toks[0], toks[1], sizeof(int32_t) * (size_t)(n_gen[0] < 64 ? n_gen[0] : 64)));
            cr_assert_eq(hash[0], hash[1]);
            cr_assert_eq(tables[0], tables[1]);
            cr_assert_eq(logs[0].n, logs[1].n, "%s prompt %zu: %d vs %d steps", methods[m], p, logs[0].n, logs[1].n);
            cr_assert_gt(logs[0].n, 0);
            for (int i = 0; i < logs[0].n; i++)
                same_records(methods[m], &logs[0].r[i], &logs[1].r[i]);
            cr_log_info("%s prompt %zu: %d steps, %d tokens, equal with and without full rows", methods[m], p,
                        logs[0].n, n_gen[0]);
            free(ids);
        }
}

/* Lookahead (docs/spec/drafting.md §6) on every prompt: AR's tokens, the window is proposed every
   step and never accepted, and the verified n-grams are accepted on the default model. */
Test(decode, lookahead_window_never_commits, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    int32_t ref[128], got[128];
    long acc = 0;
    for (size_t p = 0; p < sizeof prompts / sizeof prompts[0]; p++) {
        int n_ref, n;
        arb_prompt_result ar, r;
        rec_sum s;
        generate("ar", prompts[p], 64, ref, &n_ref, &ar, &s);
        generate("lookahead-small", prompts[p], 64, got, &n, &r, &s);
        cr_assert_eq(n, n_ref);
        cr_assert_eq(memcmp(got, ref, (size_t)n * sizeof *got), 0, "prompt %zu: AR's tokens", p);
        cr_assert_eq(s.acc_window, 0, "window nodes are NOACCEPT");
        long want = 0; /* W 7, N 5: warm-up windows of 9, 17, 23 nodes, then (W-1) + (N-2)W = 27 */
        for (int i = 0; i < s.steps; i++)
            want += i < 3 ? (const int[]){9, 17, 23}[i] : 27;
        cr_assert_eq(s.prop_window, want, "every step carries the window");
        cr_assert_leq(s.acc_lade, s.prop_lade);
        cr_assert_eq(s.committed + 1, n);
        acc += s.acc_lade;
        cr_log_info("prompt %zu lookahead-small tau %.2f, %ld of %ld guess tokens accepted", p,
                    (double)n / r.n_target_calls, s.acc_lade, s.prop_lade);
    }
    cr_assert_gt(acc, 0, "some pooled n-gram was accepted");
}

/* Random heads for the default model (any heads exercise the tree: acceptance is not the point). */
static void write_random_heads(arb_heads_kind kind, const char *path)
{
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(M, &mi);
    arb_heads *h;
    cr_assert_eq(arb_heads_new(kind, 4, mi.n_embd, mi.n_vocab, &h, &err), ARB_OK);
    arb_heads_init(h, 11);
    uint64_t st = 99;
    for (size_t i = 0; i < h->n_params; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        h->params[i] += 0.02f * ((float)((st >> 40) * 0x1p-24) - 0.5f);
    }
    arb_heads_meta meta = {.seed = 11};
    cr_assert_eq(arb_sha256_file(arb_model_path(M), meta.base_sha256, &err), ARB_OK, "%s", err.msg);
    for (int k = 0; k < 4; k++)
        for (int r = 0; r < ARB_HEADS_RANKS; r++)
            meta.rank_acc[k][r] = 0.5f / (float)(k + 1) / (float)(r + 1);
    cr_assert_eq(arb_heads_save(path, h, &meta, &err), ARB_OK, "%s", err.msg);
    arb_heads_free(h);
}

/* EAGLE-2 on an EAGLE head (preset eagle2-head; a random head at the model's sizes: acceptance
   is not the point) emits the AR tokens with full dynamic trees; a head made for another model is
   refused by name. */
Test(decode, eagle_head_drafter_reproduces_ar, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_err err = {0};
    arb_eagle_cfg c;
    cr_assert_eq(arb_eagle_cfg_from_model(M, &c, &err), ARB_OK, "%s", err.msg);
    arb_eagle *h;
    cr_assert_eq(arb_eagle_new(&c, &h, &err), ARB_OK, "%s", err.msg);
    arb_eagle_init(h, 11);
    arb_heads_meta meta = {.seed = 11};
    cr_assert_eq(arb_sha256_file(arb_model_path(M), meta.base_sha256, &err), ARB_OK, "%s", err.msg);
    char path[] = "/tmp/arb_eh_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(arb_eagle_save(path, h, &meta, &err), ARB_OK, "%s", err.msg);
    for (size_t p = 0; p < 2; p++) {
        int32_t ref[128];
        int n_ref;
        arb_prompt_result ar, r;
        rec_sum sum;
        generate("ar", prompts[p], 32, ref, &n_ref, &ar, &sum);
        arb_method_spec s;
        cr_assert_eq(arb_method_spec_preset("eagle2-head", &s, &err), ARB_OK);
        cr_assert_eq(arb_method_param_set(&s, "heads", path, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_method_param_set(&s, "budget", "20", &err), ARB_OK, "%s", err.msg);
        arb_decoder *d;
        cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
        int32_t *ids;
        int n;
        cr_assert_eq(arb_gen_prompt(M, prompts[p], true, &ids, &n, &err), ARB_OK);
        arb_decode_opts o = arb_decode_default_opts();
        o.max_new = 32;
        memset(&sum, 0, sizeof sum);
        arb_decode_cb cb = {.on_step = on_step, .ud = &sum};
        cr_assert_eq(arb_decoder_generate(d, ids, n, &o, &cb, &r, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(r.n_generated, n_ref, "prompt %zu", p);
        for (int i = 0; i < n_ref; i++)
            cr_assert_eq(r.ids[i], ref[i], "eagle2-head prompt %zu: token %d differs", p, i);
        cr_assert_eq(sum.committed + 1, n_ref);
        cr_assert_not(sum.bad_k);
        cr_assert_not(sum.bad_rank, "ranks agree with the path");
        cr_assert_eq(sum.max_nodes, 20, "the dynamic tree fills its budget");
        free(ids);
        arb_decoder_free(d);
    }
    /* made for another model: refused by name */
    meta.base_sha256[0] = meta.base_sha256[0] == '0' ? '1' : '0';
    cr_assert_eq(arb_eagle_save(path, h, &meta, &err), ARB_OK);
    arb_method_spec s;
    arb_method_spec_preset("eagle2-head", &s, &err);
    arb_method_param_set(&s, "heads", path, &err);
    arb_decoder *d = (arb_decoder *)1;
    cr_assert_neq(arb_decoder_new(C, &s, &d, &err), ARB_OK);
    cr_assert(strstr(err.msg, "heads trained for base model"), "%s", err.msg);
    remove(path);
    arb_eagle_free(h);
}

/* The draft heads' scorer (heads.h arb_lm_head) on the real model: bound to a CPU context it uses
   the engine's own output head, which on the rows arb_eval's `hidden` returns reproduces arb_eval's
   logits bit for bit (the final norm is not applied twice: the heads' outputs live in that space,
   as in training); a row's logits do not depend on the batch; f32 = true is the f32 copy's logits
   exactly, and the two agree up to the weights' quantization. */
Test(decode, lm_head_scorer_engine_head_and_f32_copy, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(M, &mi);
    const int E = mi.n_embd, V = mi.n_vocab;
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompts[1], true, &ids, &n, &err), ARB_OK, "%s", err.msg);
    int32_t *par = malloc((size_t)n * sizeof *par);
    float *ev = malloc((size_t)n * V * sizeof *ev), *hid = malloc((size_t)n * E * sizeof *hid),
          *L = malloc((size_t)n * V * sizeof *L), *w_lm = NULL;
    cr_assert(par && ev && hid && L);
    for (int i = 0; i < n; i++)
        par[i] = i - 1;
    cr_assert_eq(arb_ctx_truncate(C, 0), ARB_OK);
    cr_assert_eq(arb_eval(C, ids, par, n, ev, hid, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_heads_lm_weights(M, &w_lm, NULL, &err), ARB_OK, "%s", err.msg);
    arb_lm_head lm;
    cr_assert_eq(arb_lm_head_bind(&lm, C, w_lm, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(lm.ctx, C, "a CPU context's own output head is used");
    cr_assert_not(lm.f32);
    arb_lm_head_logits(&lm, V, E, hid, n, L);
    cr_assert_arr_eq(L, ev, (size_t)n * V * sizeof *L, "engine head on eval's hidden rows = eval's logits");
    arb_lm_head_logits(&lm, V, E, hid + (size_t)(n - 1) * E, 1, L); /* the last row alone */
    cr_assert_arr_eq(L, ev + (size_t)(n - 1) * V, (size_t)V * sizeof *L, "batch-invariant");
    /* the f32 copy: arb_heads_logits exactly; same argmax as the engine's head on most rows */
    float *ref = malloc((size_t)n * V * sizeof *ref);
    cr_assert(ref);
    lm.f32 = true;
    arb_lm_head_logits(&lm, V, E, hid, n, L);
    arb_heads_logits(w_lm, V, hid, n, E, ref);
    cr_assert_arr_eq(L, ref, (size_t)n * V * sizeof *L, "f32 = true scores with the f32 copy");
    int same = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        int a = 0, b = 0;
        for (int v = 1; v < V; v++) {
            a = L[(size_t)i * V + v] > L[(size_t)i * V + a] ? v : a;
            b = ev[(size_t)i * V + v] > ev[(size_t)i * V + b] ? v : b;
            double dl = fabs((double)L[(size_t)i * V + v] - ev[(size_t)i * V + v]);
            worst = dl > worst ? dl : worst;
        }
        same += a == b;
    }
    cr_log_info("f32 copy vs engine head: argmax equal on %d / %d rows, max |dlogit| %.3g", same, n, worst);
    cr_assert_geq(same * 10, n * 9, "argmax equal on %d / %d rows only", same, n);
    cr_assert_eq(arb_ctx_truncate(C, 0), ARB_OK);
    free(ids), free(par), free(ev), free(hid), free(L), free(ref), free(w_lm);
}

/* Medusa and Hydra (trees mc_sim_7b_63 and auto) emit the AR tokens; head nodes are counted. */
Test(decode, head_drafters_reproduce_ar, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    static const struct { const char *method, *tree; } runs[] = {
        {"medusa", "mc_sim_7b_63"}, {"medusa", "auto"}, {"hydra", "auto"}};
    for (size_t m = 0; m < sizeof runs / sizeof runs[0]; m++) {
        char path[] = "/tmp/arb_hd_XXXXXX";
        int fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        close(fd);
        write_random_heads(!strcmp(runs[m].method, "hydra") ? ARB_HEADS_HYDRA : ARB_HEADS_MEDUSA, path);
        for (size_t p = 0; p < 2; p++) {
            int32_t ref[128];
            arb_prompt_result r;
            rec_sum sum;
            const int n_ref = ar_reference(p, 24, ref);
            arb_err err = {0};
            arb_method_spec s;
            cr_assert_eq(arb_method_spec_preset(runs[m].method, &s, &err), ARB_OK);
            cr_assert_eq(arb_method_param_set(&s, "heads", path, &err), ARB_OK, "%s", err.msg);
            cr_assert_eq(arb_method_param_set(&s, "tree", runs[m].tree, &err), ARB_OK, "%s", err.msg);
            cr_assert_eq(arb_method_param_set(&s, "budget", "20", &err), ARB_OK, "%s", err.msg);
            arb_decoder *d;
            cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
            memset(&sum, 0, sizeof sum);
            sum.all_ranked = true; /* every head node carries its rank */
            char label[64];
            snprintf(label, sizeof label, "%s/%s", runs[m].method, runs[m].tree);
            decode_like_ar(d, p, 24, &(arb_decode_cb){.on_step = on_step, .ud = &sum}, &r, ref, n_ref, label);
            cr_assert_eq(sum.committed + 1, n_ref);
            cr_assert_not(sum.bad_k);
            cr_assert_not(sum.bad_rank, "%s: ranks agree with the path", runs[m].method);
            cr_assert_leq(sum.max_nodes, !strcmp(runs[m].tree, "auto") ? 20 : 64);
            cr_assert_geq(sum.max_nodes, !strcmp(runs[m].tree, "auto") ? 20 : 64, "the whole tree is proposed");
            arb_decoder_free(d);
        }
        /* a heads file made for another model is refused by name */
        arb_heads *h;
        arb_heads_meta meta;
        arb_err err = {0};
        cr_assert_eq(arb_heads_load(path, NULL, &h, &meta, &err), ARB_OK);
        meta.base_sha256[0] = meta.base_sha256[0] == '0' ? '1' : '0';
        cr_assert_eq(arb_heads_save(path, h, &meta, &err), ARB_OK);
        arb_heads_free(h);
        arb_method_spec s;
        arb_method_spec_preset(runs[m].method, &s, &err);
        arb_method_param_set(&s, "heads", path, &err);
        arb_decoder *d = (arb_decoder *)1;
        cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_E_INVAL);
        cr_assert_null(d);
        cr_assert(strstr(err.msg, "not this model"), "%s", err.msg);
        unlink(path);
    }
}

Test(decode, limits_reuse_and_first_match_mode, .init = setup, .fini = teardown, .timeout = 600)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    arb_err err = {0};
    arb_method_spec s;
    arb_method_spec_preset("goose", &s, &err);
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
    int32_t *ids;
    int n;
    cr_assert_eq(arb_gen_prompt(M, prompts[2], true, &ids, &n, &err), ARB_OK);
    arb_decode_opts o = arb_decode_default_opts();
    arb_prompt_result r;
    o.max_new = 5;
    cr_assert_eq(arb_decoder_generate(d, ids, n, &o, NULL, &r, &err), ARB_OK, "%s", err.msg);
    cr_assert(r.n_generated == 5 || r.stopped_eos, "max_new truncates");
    /* reuse the same decoder (hot tables) on two prompts: still AR's tokens */
    int32_t ref[64], got[64];
    int n_ref, n_got;
    arb_prompt_result ar;
    rec_sum sum;
    for (int p = 0; p < 2; p++) {
        generate("ar", prompts[p], 48, ref, &n_ref, &ar, &sum);
        int32_t *pi;
        int np;
        arb_gen_prompt(M, prompts[p], true, &pi, &np, &err);
        o.max_new = 48;
        cr_assert_eq(arb_decoder_generate(d, pi, np, &o, NULL, &r, &err), ARB_OK);
        cr_assert_eq(r.n_generated, n_ref);
        cr_assert(!memcmp(r.ids, ref, (size_t)n_ref * sizeof *ref), "reused decoder, prompt %d", p);
        free(pi);
    }
    arb_decoder_free(d);
    /* GOOSE Algorithm 3 literal walk */
    s.verify_first_match = true;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK);
    generate("ar", prompts[0], 48, ref, &n_ref, &ar, &sum);
    int32_t *pi;
    int np;
    arb_gen_prompt(M, prompts[0], true, &pi, &np, &err);
    cr_assert_eq(arb_decoder_generate(d, pi, np, &o, NULL, &r, &err), ARB_OK);
    n_got = r.n_generated;
    memcpy(got, r.ids, (size_t)n_got * sizeof *got);
    cr_assert_eq(n_got, n_ref);
    cr_assert(!memcmp(got, ref, (size_t)n_ref * sizeof *ref));
    free(pi);
    free(ids);
    arb_decoder_free(d);
    /* bad input */
    arb_method_spec_preset("ar", &s, &err);
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK);
    cr_assert_eq(arb_decoder_generate(d, ref, 0, &o, NULL, &r, &err), ARB_E_INVAL);
    arb_decoder_free(d);
}

/* A synthetic tree through the greedy walk: the recorded ranks are those of the walked path's
   nodes, every ranked child of a path node (stop node included) is one offer, spine / PLD and
   NOACCEPT children are not candidates, and ranks >= ARB_RANK_MAX are kept in acc_rank only.
   Needs no model. */
Test(decode, ranks_follow_the_accepted_path)
{
    arb_err err = {0};
    arb_tree t;
    cr_assert_eq(arb_tree_init(&t, 32, &err), ARB_OK);
    arb_tree_reset(&t, 100);
    int sp = arb_tree_add(&t, 0, 50, ARB_SRC_TR, 0, NAN);    /* control spine child: not ranked */
    t.flags[sp] |= ARB_NODE_SPINE;
    int a0 = arb_tree_add(&t, 0, 10, ARB_SRC_TR, 0, 0.5f);
    int a1 = arb_tree_add(&t, 0, 11, ARB_SRC_TR, 1, 0.2f);
    int a2 = arb_tree_add(&t, 0, 12, ARB_SRC_TR, 2, 0.1f);
    int b0 = arb_tree_add(&t, a1, 20, ARB_SRC_TR, 0, 0.5f);
    int b1 = arb_tree_add(&t, a1, 21, ARB_SRC_TR, 1, 0.3f);
    arb_tree_add(&t, a1, 22, ARB_SRC_PLD, 0, NAN);           /* a PLD node: not ranked */
    int c20 = arb_tree_add(&t, b1, 30, ARB_SRC_TR, 20, 0.1f); /* a rank past ARB_RANK_MAX */
    int c0 = arb_tree_add(&t, c20, 40, ARB_SRC_TR, 0, 0.5f);
    int c3 = arb_tree_add(&t, c20, 43, ARB_SRC_TR, 3, 0.1f);
    int nx = arb_tree_add(&t, c20, 44, ARB_SRC_TR, 1, 0.1f);
    t.flags[nx] |= ARB_NODE_NOACCEPT;
    int s0 = arb_tree_add(&t, sp, 60, ARB_SRC_TR, 2, 0.1f);  /* branch under the spine */
    arb_tree_finalize(&t);
    (void)a0, (void)a2, (void)b0, (void)c0, (void)c3;
    /* target: anchor -> 11 (rank 1) -> 21 (rank 1) -> 30 (rank 20) -> 99 (no child): stop at c20 */
    int32_t y[32], best[32], path[32];
    for (int i = 0; i < t.n; i++)
        y[i] = 99;
    y[0] = 11, y[a1] = 21, y[b1] = 30, y[sp] = 60;
    arb_verify_out vo;
    arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &vo);
    cr_assert_eq(vo.node, c20);
    int np = arb_tree_path(&t, vo.node, path);
    arb_step_record rec = {0};
    arb_decode_record_ranks(&t, path, np, &rec);
    cr_assert_eq(rec.n_acc_rank, 3);
    cr_expect_eq(rec.acc_rank[0], 1);
    cr_expect_eq(rec.acc_rank[1], 1);
    cr_expect_eq(rec.acc_rank[2], 20);
    /* offers: anchor r0 r1 r2 (spine skipped); a1: r0 r1; c20 (stop): r0 r3 (NOACCEPT skipped) */
    static const int offer[ARB_RANK_MAX] = {3, 2, 1, 1}, hit[ARB_RANK_MAX] = {0, 2, 0, 0};
    for (int k = 0; k < ARB_RANK_MAX; k++) {
        cr_expect_eq(rec.rank_offer[k], offer[k], "offer[%d] = %d", k, rec.rank_offer[k]);
        cr_expect_eq(rec.rank_hit[k], hit[k], "hit[%d] = %d", k, rec.rank_hit[k]);
    }
    /* the target takes the spine, then its rank-2 branch: acc_rank -1, 2 */
    y[0] = 50;
    arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &vo);
    cr_assert_eq(vo.node, s0);
    np = arb_tree_path(&t, vo.node, path);
    rec = (arb_step_record){0};
    arb_decode_record_ranks(&t, path, np, &rec);
    cr_assert_eq(rec.n_acc_rank, 2);
    cr_expect_eq(rec.acc_rank[0], -1);
    cr_expect_eq(rec.acc_rank[1], 2);
    static const int offer2[ARB_RANK_MAX] = {1, 1, 2}, hit2[ARB_RANK_MAX] = {0, 0, 1};
    for (int k = 0; k < ARB_RANK_MAX; k++) {
        cr_expect_eq(rec.rank_offer[k], offer2[k], "spine path offer[%d] = %d", k, rec.rank_offer[k]);
        cr_expect_eq(rec.rank_hit[k], hit2[k], "spine path hit[%d] = %d", k, rec.rank_hit[k]);
    }
    arb_tree_release(&t);
}

/* REST (drafters/rest.h) on a datastore built here: the first half of each prompt's AR output
   plus a Python stdlib file as noise, so some drafts are right and many are wrong. The output
   must still be the AR tokens, and retrieval must actually have been accepted. */
static int rest_step(const arb_step_record *r, void *ud)
{
    int *acc = ud;
    acc[0] += r->acc_by_src[ARB_STAT_REST];
    acc[1] += r->prop_by_src[ARB_STAT_REST];
    return 0;
}

Test(decode, rest_reproduces_ar, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    enum { NP = sizeof prompts / sizeof prompts[0], NEW = 48 };
    int32_t ref[NP][128], got[128];
    int n_ref[NP];
    arb_prompt_result ar[NP], r;
    rec_sum s;
    for (int p = 0; p < NP; p++)
        generate("ar", prompts[p], NEW, ref[p], &n_ref[p], &ar[p], &s);
    arb_err err = {0};
    arb_model_info mi;
    arb_model_get_info(M, &mi);
    arb_datastore_builder *b;
    cr_assert_eq(arb_datastore_builder_new(mi.n_vocab, &b, &err), ARB_OK, "%s", err.msg);
    for (int p = 0; p < NP; p++) {
        int32_t *ids;
        int n;
        cr_assert_eq(arb_gen_prompt(M, prompts[p], true, &ids, &n, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_datastore_builder_add(b, ids, (size_t)n, &err), ARB_OK); /* prompt + half the answer */
        cr_assert_eq(arb_datastore_builder_add(b, ref[p], (size_t)n_ref[p] / 2, &err), ARB_OK);
        free(ids);
    }
    FILE *f = fopen("/usr/lib/python3.11/os.py", "rb");
    if (f) { /* noise: real code, most retrieved continuations from here are wrong */
        static char text[1 << 16];
        size_t len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        int32_t *ids = malloc(sizeof *ids * (len + 8));
        int n = 0;
        cr_assert_eq(arb_tokenize(M, text, len, false, false, ids, (int)len + 8, &n, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_datastore_builder_add(b, ids, (size_t)n, &err), ARB_OK);
        free(ids);
    }
    arb_datastore_meta meta = {.n_vocab = mi.n_vocab};
    cr_assert_eq(arb_datastore_tokenizer_sha256(M, meta.tokenizer_sha256, &err), ARB_OK, "%s", err.msg);
    arb_datastore *ds;
    cr_assert_eq(arb_datastore_builder_finish(b, &meta, &ds, &err), ARB_OK, "%s", err.msg);
    char path[32];
    snprintf(path, sizeof path, "/tmp/arb-rest-%d.ards", (int)getpid() % 100000);
    cr_assert_eq(arb_datastore_save(ds, path, &err), ARB_OK, "%s", err.msg);
    arb_datastore_free(ds);

    arb_method_spec sp;
    cr_assert_eq(arb_method_spec_preset("rest", &sp, &err), ARB_OK, "%s", err.msg);
    snprintf(sp.datastore, sizeof sp.datastore, "%s", path);
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &sp, &d, &err), ARB_OK, "%s", err.msg);
    int acc[2] = {0};
    for (int p = 0; p < NP; p++) {
        int32_t *ids;
        int n;
        cr_assert_eq(arb_gen_prompt(M, prompts[p], true, &ids, &n, &err), ARB_OK, "%s", err.msg);
        arb_decode_opts o = arb_decode_default_opts();
        o.max_new = NEW;
        arb_decode_cb cb = {.on_step = rest_step, .ud = acc};
        cr_assert_eq(arb_decoder_generate(d, ids, n, &o, &cb, &r, &err), ARB_OK, "%s", err.msg);
        free(ids);
        cr_assert_eq(r.n_generated, n_ref[p]);
        memcpy(got, r.ids, (size_t)r.n_generated * sizeof *got);
        for (int i = 0; i < n_ref[p]; i++)
            cr_assert_eq(got[i], ref[p][i], "rest prompt %d: token %d differs", p, i);
        cr_assert_eq(r.hash, ar[p].hash);
        cr_assert_lt(r.n_target_calls, ar[p].n_target_calls, "prompt %d: the stored half is retrieved", p);
        cr_log_info("prompt %d rest tau %.2f", p, (double)r.n_generated / r.n_target_calls);
    }
    cr_assert_gt(acc[0], NP * 4, "REST nodes accepted: %d of %d proposed", acc[0], acc[1]);
    cr_assert_gt(acc[1], acc[0], "some REST drafts were wrong, so the check covered rejection");
    arb_decoder_free(d);

    /* a datastore is tied to its tokenizer: one stamped with another fingerprint is refused */
    arb_datastore_builder *b2;
    cr_assert_eq(arb_datastore_builder_new(mi.n_vocab, &b2, &err), ARB_OK);
    cr_assert_eq(arb_datastore_builder_add(b2, ref[0], 8, &err), ARB_OK);
    arb_datastore_meta m2 = {.n_vocab = mi.n_vocab};
    snprintf(m2.tokenizer_sha256, sizeof m2.tokenizer_sha256, "%064d", 0);
    snprintf(m2.model, sizeof m2.model, "some-other-model");
    cr_assert_eq(arb_datastore_builder_finish(b2, &m2, &ds, &err), ARB_OK);
    cr_assert_eq(arb_datastore_save(ds, path, &err), ARB_OK);
    arb_datastore_free(ds);
    d = NULL;
    cr_assert_eq(arb_decoder_new(C, &sp, &d, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "another tokenizer") && strstr(err.msg, "some-other-model"), "%s", err.msg);
    unlink(path);
}

/* EntMTP (docs/spec/drafting.md §10): the three tree schedulers over a bank, with Medusa and Hydra
   heads, emit the AR tokens; every step names a bank tree and logs its features. */
typedef struct sched_sum {
    int steps, with_extra, bad_topo, n_tree[4];
    long accepted;
} sched_sum;

static int on_sched_step(const arb_step_record *r, void *ud)
{
    sched_sum *s = ud;
    s->steps++;
    s->accepted += r->accepted_k;
    s->with_extra += r->extra_json && strstr(r->extra_json, "\"s_lit\":") && strstr(r->extra_json, "\"H_ema\":[");
    if (r->mode == ARB_MODE_TREE && (r->topology_id < 0 || r->topology_id > 2))
        s->bad_topo++;
    else if (r->mode == ARB_MODE_TREE)
        s->n_tree[r->topology_id]++;
    return 0;
}

Test(decode, entmtp_schedulers_reproduce_ar, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    char bank[] = "/tmp/arb_bk_XXXXXX";
    int fd = mkstemp(bank);
    cr_assert_geq(fd, 0);
    /* three trees by size; tau 0.5 on p0 makes EntMTPtau switch on real text */
    static const char txt[] = "{\"trees\":[{\"choices\":[[0],[1]]},{\"choices\":[[0],[0,0],[1],[0,0,0]]},"
                              "{\"choices\":[[0],[0,0],[1],[0,1],[0,0,0],[1,0],[0,0,0,0],[2]]}],"
                              "\"static\":1,\"t_plus\":2,\"t_minus\":0,\"tau\":0.5,\"ladder\":[0.4,0.8]}";
    cr_assert_eq(write(fd, txt, sizeof txt - 1), (ssize_t)(sizeof txt - 1));
    close(fd);
    static const char *kinds[] = {"medusa", "hydra"}, *scheds[] = {"static", "entmtp_tau", "ladder"};
    for (int k = 0; k < 2; k++) {
        char path[] = "/tmp/arb_hd_XXXXXX";
        int hf = mkstemp(path);
        cr_assert_geq(hf, 0);
        close(hf);
        write_random_heads(k ? ARB_HEADS_HYDRA : ARB_HEADS_MEDUSA, path);
        for (int q = 0; q < 3; q++)
            for (size_t p = 0; p < 2; p++) {
                int32_t ref[128];
                arb_prompt_result r;
                const int n_ref = ar_reference(p, 32, ref);
                arb_err err = {0};
                arb_method_spec s;
                cr_assert_eq(arb_method_spec_preset(kinds[k], &s, &err), ARB_OK);
                cr_assert_eq(arb_method_param_set(&s, "heads", path, &err), ARB_OK, "%s", err.msg);
                cr_assert_eq(arb_method_param_set(&s, "bank", bank, &err), ARB_OK, "%s", err.msg);
                cr_assert_eq(arb_method_param_set(&s, "tree_sched", scheds[q], &err), ARB_OK, "%s", err.msg);
                arb_decoder *d;
                cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
                sched_sum ss = {0};
                char label[64];
                snprintf(label, sizeof label, "%s/%s", kinds[k], scheds[q]);
                decode_like_ar(d, p, 32, &(arb_decode_cb){.on_step = on_sched_step, .ud = &ss}, &r, ref, n_ref, label);
                cr_assert_eq(ss.bad_topo, 0);
                cr_assert_eq(ss.with_extra, ss.steps, "%s/%s: every step logs its features", kinds[k], scheds[q]);
                if (q == 0)
                    cr_assert_eq(ss.n_tree[1], ss.steps, "static: always the bank's static tree");
                cr_log_info("%s/%s prompt %zu: trees %d/%d/%d", kinds[k], scheds[q], p, ss.n_tree[0], ss.n_tree[1],
                            ss.n_tree[2]);
                arb_decoder_free(d);
            }
        unlink(path);
    }
    /* a bank tree deeper than the heads, or an unknown policy, is refused by name */
    arb_err err = {0};
    arb_method_spec s;
    arb_method_spec_preset("hydra", &s, &err);
    arb_method_param_set(&s, "tree_sched", "greedy_ladder", &err);
    arb_method_param_set(&s, "bank", bank, &err);
    cr_assert_eq(arb_method_spec_validate(&s, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "tree_sched"), "%s", err.msg);
    unlink(bank);
}

/* score_all on the model (§13): the joint-tree score of each candidate equals scoring that
   candidate alone with the same trajectory, and the self-rollout of a tree reproduces the decoder's
   per-step accept lengths with the Hydra drafter on the same tree. */
Test(decode, entmtp_score_all_equals_separate_rollouts, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!M)
        cr_skip_test("default model not available (arbor fetch-model)");
    char path[] = "/tmp/arb_hd_XXXXXX";
    int hf = mkstemp(path);
    cr_assert_geq(hf, 0);
    close(hf);
    write_random_heads(ARB_HEADS_HYDRA, path);
    arb_err err = {0};
    arb_rollout *ro;
    cr_assert_eq(arb_rollout_new(C, path, &ro, &err), ARB_OK, "%s", err.msg);
    int32_t *tok[2];
    int len[2];
    for (int p = 0; p < 2; p++)
        cr_assert_eq(arb_gen_prompt(M, prompts[p], true, &tok[p], &len[p], &err), ARB_OK);
    arb_rollout_set set = {.n = 2, .tok = (const int32_t *const *)tok, .len = len, .max_new = 24};
    static arb_etree T;
    cr_assert_eq(arb_etree_parse("[[0],[0,0],[1],[0,1],[0,0,0]]", &T, &err), ARB_OK);
    arb_epath F[ARB_ETREE_MAX];
    int nF = arb_frontier_next_children(&T, 4, F, ARB_ETREE_MAX);
    double aF[ARB_ETREE_MAX], aT, a1, aT1, aself;
    long steps, steps1;
    cr_assert_eq(arb_rollout_score(ro, &T, F, nF, &set, aF, &aT, &steps, &err), ARB_OK, "%s", err.msg);
    for (int c = 0; c < nF; c++) {
        cr_assert_eq(arb_rollout_score(ro, &T, &F[c], 1, &set, &a1, &aT1, &steps1, &err), ARB_OK);
        cr_assert_eq(steps1, steps);
        cr_assert_eq(aT1, aT);
        cr_assert_eq(a1, aF[c], "candidate %d: joint %.6f, alone %.6f", c, aF[c], a1);
        cr_assert_geq(aF[c], aT); /* a node added never shortens a step */
    }
    cr_assert_eq(arb_rollout_score(ro, &T, NULL, 0, &set, NULL, &aself, &steps1, &err), ARB_OK);
    cr_assert_eq(aself, aT);
    /* the decoder with this tree (a one-tree bank, policy static) */
    char bank[] = "/tmp/arb_bk_XXXXXX";
    int fd = mkstemp(bank);
    static const char txt[] = "{\"trees\":[{\"choices\":[[0],[0,0],[1],[0,1],[0,0,0]]}],\"static\":0}";
    cr_assert_eq(write(fd, txt, sizeof txt - 1), (ssize_t)(sizeof txt - 1));
    close(fd);
    arb_method_spec s;
    arb_method_spec_preset("hydra", &s, &err);
    arb_method_param_set(&s, "heads", path, &err);
    arb_method_param_set(&s, "bank", bank, &err);
    arb_method_param_set(&s, "tree_sched", "static", &err);
    arb_decoder *d;
    cr_assert_eq(arb_decoder_new(C, &s, &d, &err), ARB_OK, "%s", err.msg);
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = 24;
    sched_sum ss = {0};
    arb_decode_cb cb = {.on_step = on_sched_step, .ud = &ss};
    for (int p = 0; p < 2; p++) {
        arb_prompt_result r;
        cr_assert_eq(arb_decoder_generate(d, tok[p], len[p], &o, &cb, &r, &err), ARB_OK, "%s", err.msg);
    }
    long nst = ss.steps, acc = ss.steps + ss.accepted;
    cr_assert_eq(nst, steps, "decoder steps %ld, rollout steps %ld", nst, steps);
    cr_assert_float_eq((double)acc / nst, aself, 1e-12);
    arb_decoder_free(d);
    arb_rollout_free(ro);
    free(tok[0]);
    free(tok[1]);
    unlink(bank);
    unlink(path);
}

/* arbor generate's context (arb_gen_ctx_tokens): exactly the prompt + new tokens +
   ARB_GEN_TREE_ROOM, so a 542-token chain fits and a 543rd token does not; past the model's
   context length (8192) the engine default. */
Test(decode, generate_context_is_fitted_to_the_generation, .init = setup, .fini = teardown)
{
    if (!M)
        cr_skip_test("default model not available");
    cr_assert_eq(arb_gen_ctx_tokens(M, 3000, 6000), 0, "9512 tokens > 8192: the engine default");
    enum { N = 10 + 20 + ARB_GEN_TREE_ROOM };
    cr_assert_eq(arb_gen_ctx_tokens(M, 10, 20), N);
    arb_err err = {0};
    arb_ctx *c = NULL;
    cr_assert_eq(arb_gen_ctx_new(M, arb_gen_ctx_tokens(M, 10, 20), &c, &err), ARB_OK, "%s", err.msg);
    int32_t *tok = malloc(sizeof *tok * (N + 1));
    cr_assert_not_null(tok);
    for (int i = 0; i <= N; i++)
        tok[i] = 100 + i % 1000;
    cr_assert_eq(arb_prefill(c, tok, N, NULL, &err), ARB_OK, "%d tokens: %s", N, err.msg);
    cr_assert_eq(arb_prefill(c, tok + N, 1, NULL, &err), ARB_E_RANGE, "a token past %d fit", N);
    free(tok);
    arb_ctx_free(c);
}
