/* method.c — method specs, defaults, presets, the parameter table and the plug-in
 * registries (see method.h). */
#include "method.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "drafters/drafter.h"
#include "drafters/goose.h"
#include "schedulers/scheduler.h"
#include "drafters/lookahead.h"
#include "registry.h"
#include "topologies/topology.h"
#include "verifiers/verifier.h"

/* ---- registries (STYLE practice 11): one row per plug-in ---- */
static int none_create(const arb_method_spec *s, int n_vocab, void **st, arb_err *err)
{
    *st = NULL;
    return ARB_OK;
}
static void none_destroy(void *st) {}
static int none_begin(void *st, int n, bool new_run, arb_err *err) { return ARB_OK; }
static void none_append(void *st, const int32_t *tok, int n) {}
static void none_propose(void *st, const int32_t *S, int n_S, arb_tree *t, arb_step_record *rec)
{
    rec->mode = ARB_MODE_AR;
}
static size_t none_bytes(const void *st) { return 0; }
static int none_max_nodes(const arb_method_spec *s) { return 1; } /* the anchor alone */
static void none_defaults(arb_method_spec *s)
{
    snprintf(s->id, sizeof s->id, "AR");
    snprintf(s->scheduler, sizeof s->scheduler, "none");
    s->budget = 1;
}

const arb_drafter_i arb_drafter_none = {
    .name = "none", .create = none_create, .destroy = none_destroy, .begin = none_begin,
    .append = none_append, .propose = none_propose, .bytes = none_bytes, .max_nodes = none_max_nodes,
    .defaults = none_defaults,
};

static const arb_drafter_i *const drafters[] = {&arb_drafter_none, &arb_drafter_pld, &arb_drafter_tr,
                                                &arb_drafter_goose, &arb_drafter_draft, &arb_drafter_eagle2,
                                                &arb_drafter_medusa, &arb_drafter_hydra, &arb_drafter_rest,
                                                &arb_drafter_lookahead, &arb_drafter_eagle,
                                                &arb_drafter_eagle_dte};
/* GOOSE's spine-ratio rules (Algorithm 2), the `scheduler` key; not the tree-scheduler plug-ins
   of schedulers/scheduler.h (`tree_sched`): docs/ARCHITECTURE.md "Adding a plug-in". */
static const char *const schedulers[] = {"goose_tiers", "fixed", "none"};

const arb_drafter_i *arb_drafter_at(int i)
{
    return i >= 0 && (size_t)i < sizeof drafters / sizeof drafters[0] ? drafters[i] : NULL;
}

static const char *drafter_name_at(int i) { return arb_drafter_at(i) ? drafters[i]->name : NULL; }

const arb_drafter_i *arb_drafter_find(const char *name)
{
    if (name && !strcasecmp(name, "ar"))
        name = "none";
    return arb_drafter_at(arb_registry_index(drafter_name_at, name, true));
}

const char *arb_drafter_names(char *buf, size_t cap) { return arb_registry_names(drafter_name_at, buf, cap); }

static bool in_list(const char *const *l, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(l[i], name))
            return true;
    return false;
}

bool arb_method_known(const char *kind, const char *name)
{
#define N(a) (sizeof a / sizeof a[0])
    if (!strcmp(kind, "drafter"))
        return arb_drafter_find(name) != NULL;
    if (!strcmp(kind, "topology"))
        return arb_topology_find(name) != NULL;
    if (!strcmp(kind, "verifier"))
        return arb_verifier_find(name) != NULL; /* the registry is the one list */
    if (!strcmp(kind, "scheduler"))
        return in_list(schedulers, N(schedulers), name);
    if (!strcmp(kind, "consensus"))
        return arb_goose_consensus_find(name) >= 0;
    return false;
#undef N
}

const char *arb_method_names(const char *kind, char *buf, size_t cap)
{
    buf[0] = 0;
    if (!strcmp(kind, "drafter"))
        return arb_drafter_names(buf, cap);
    if (!strcmp(kind, "topology"))
        return arb_topology_names(buf, cap);
    if (!strcmp(kind, "verifier"))
        return arb_verifier_names(buf, cap);
    if (!strcmp(kind, "tree_sched"))
        return arb_tree_sched_names(buf, cap);
    if (!strcmp(kind, "consensus"))
        return arb_goose_consensus_names(buf, cap);
    if (!strcmp(kind, "scheduler"))
        for (size_t i = 0, n = 0; i < sizeof schedulers / sizeof schedulers[0] && n < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", schedulers[i]);
    return buf;
}

/* ---- parameter table ---- */
#define OFF(f) offsetof(arb_method_spec, f)
#define GOOSE "goose"
#define CTX "pld goose"
#define E2 "eagle2-draft"
static const arb_method_param params[] = {
    {"id", ARB_PARAM_STR, OFF(id), "*", 0, 0, "label in reports"},
    {"drafter", ARB_PARAM_STR, OFF(drafter), "*", 0, 0, "none | pld | tr | goose | draft | eagle2-draft"},
    {"topology", ARB_PARAM_STR, OFF(topology), GOOSE, 0, 0, "\"\" or spine (GOOSE's tree) | iso | sequoia | dynamic (per step; budget auto)"},
    {"verifier", ARB_PARAM_STR, OFF(verifier), "*", 0, 0, "greedy"},
    {"scheduler", ARB_PARAM_STR, OFF(scheduler), GOOSE, 0, 0, "goose_tiers | fixed | none"},
    {"budget", ARB_PARAM_INT, OFF(budget), GOOSE " " E2 " medusa hydra rest eagle pld tr", 1, 1024,
     "B: nodes per step incl. the anchor (medusa/hydra: tree auto), or \"auto\""},
    {"max_depth", ARB_PARAM_INT, OFF(max_depth), GOOSE " " E2 " eagle", 1, 62,
     "D: branch depth below its branch point (eagle2-draft: deepest draft node)"},
    {"topk", ARB_PARAM_INT, OFF(topk), "tr goose " E2 " eagle", 1, 16,
     "K: successors per adjacency entry (eagle2-draft: children per node and frontier width)"},
    {"rho", ARB_PARAM_DOUBLE, OFF(rho), GOOSE, 0, 1, "share of non-spine budget for root branches"},
    {"s_min", ARB_PARAM_DOUBLE, OFF(s_min), GOOSE, 0, 1, "successors below this score are pruned"},
    {"k", ARB_PARAM_INT, OFF(iso_k), GOOSE, 1, 16, "Iso(k) arity"},
    {"sequoia_p", ARB_PARAM_DOUBLE_LIST, OFF(sequoia_p), "tr " GOOSE, 0, 1, "positional acceptance p[1..]"},
    {"ngram_min", ARB_PARAM_INT, OFF(ngram_min), CTX, 1, 8, "shortest n-gram query"},
    {"ngram_max", ARB_PARAM_INT, OFF(ngram_max), CTX, 1, 8, "longest n-gram query"},
    {"max_draft", ARB_PARAM_INT, OFF(max_draft), CTX, 1, 64, "continuation length (PLD 10, GOOSE C_max 20)"},
    {"bypass_min", ARB_PARAM_INT, OFF(bypass_min), GOOSE, 1, 1000, "bypass when the chain is this long"},
    {"bypass_max", ARB_PARAM_INT, OFF(bypass_max), GOOSE, -1, 63, "bypass chain cap (-1: budget-1, 0: max_draft)"},
    {"pld_earliest", ARB_PARAM_BOOL, OFF(pld_earliest), CTX, 0, 1, "earliest occurrence (else most recent)"},
    {"ema", ARB_PARAM_DOUBLE, OFF(ema), GOOSE, 0, 1, "weight of the newest spine observation"},
    {"ema_geometric", ARB_PARAM_BOOL, OFF(ema_geometric), GOOSE, 0, 1, "spine observation acc/(acc+rejected)"},
    {"ps_init", ARB_PARAM_DOUBLE, OFF(ps_init), GOOSE, 0, 1, "initial spine acceptance estimate"},
    {"tier_lo", ARB_PARAM_DOUBLE, OFF(tier_lo), GOOSE, 0, 1, "p_s below this: r_lo"},
    {"tier_hi", ARB_PARAM_DOUBLE, OFF(tier_hi), GOOSE, 0, 1, "p_s below this: r_mid, else r_hi"},
    {"r_lo", ARB_PARAM_DOUBLE, OFF(r_lo), GOOSE, 0, 1, "spine ratio, low tier"},
    {"r_mid", ARB_PARAM_DOUBLE, OFF(r_mid), GOOSE, 0, 1, "spine ratio, middle tier"},
    {"r_hi", ARB_PARAM_DOUBLE, OFF(r_hi), GOOSE, 0, 1, "spine ratio, high tier"},
    {"fixed_r", ARB_PARAM_DOUBLE, OFF(fixed_r), GOOSE, -1, 1, "scheduler fixed: this r (< 0 unset)"},
    {"bigram_log2", ARB_PARAM_INT, OFF(bigram_log2), GOOSE, 1, 24, "bigram tier capacity 2^n"},
    {"spine_branches", ARB_PARAM_BOOL, OFF(spine_branches), GOOSE, 0, 1, "ablation: branches under spine nodes"},
    {"bigram", ARB_PARAM_BOOL, OFF(bigram), GOOSE, 0, 1, "ablation: bigram adjacency tier"},
    {"bypass", ARB_PARAM_BOOL, OFF(bypass), GOOSE, 0, 1, "ablation: linear bypass"},
    {"bypass_len", ARB_PARAM_BOOL, OFF(bypass_len), GOOSE, 0, 1, "bypass on long matches"},
    {"bypass_consensus", ARB_PARAM_BOOL, OFF(bypass_consensus), GOOSE, 0, 1, "bypass on consensus"},
    {"context_spine", ARB_PARAM_BOOL, OFF(context_spine), GOOSE, 0, 1, "ablation: context-match spine"},
    {"control_tr_spine", ARB_PARAM_BOOL, OFF(control_tr_spine), GOOSE, 0, 1, "control: spine tokens from TR"},
    {"control_bypass", ARB_PARAM_BOOL, OFF(control_bypass), GOOSE, 0, 1, "control: bypass chains from TR too"},
    {"bypass_match_len", ARB_PARAM_BOOL, OFF(bypass_match_len), GOOSE, 0, 1, "bypass length test on the match"},
    {"consensus", ARB_PARAM_STR, OFF(consensus), GOOSE, 0, 0, "any | distinct | long (consensus reading)"},
    {"extend_chain", ARB_PARAM_BOOL, OFF(extend_chain), GOOSE, 0, 1, "extension width 1 (Prop. 1 chains)"},
    {"hot_start", ARB_PARAM_BOOL, OFF(hot_start), "tr goose", 0, 1, "keep tables across prompts"},
    {"harvest_prefill", ARB_PARAM_BOOL, OFF(harvest_prefill), "tr goose", 0, 1, "harvest prefill logits"},
    {"tr_prune_unfilled", ARB_PARAM_BOOL, OFF(tr_prune_unfilled), "tr", 0, 1, "drop never-written rows"},
    {"ar_guard", ARB_PARAM_BOOL, OFF(ar_guard), "*", 0, 1, "AR steps while speculation measures slower than AR (greedy)"},
    {"verify_first_match", ARB_PARAM_BOOL, OFF(verify_first_match), "*", 0, 1, "greedy walk: Alg. 3 literal"},
    {"temperature", ARB_PARAM_DOUBLE, OFF(temperature), "*", 0, 100, "0 = greedy"},
    {"top_p", ARB_PARAM_DOUBLE, OFF(top_p), "*", 1e-9, 1, "nucleus mass"},
    {"top_k", ARB_PARAM_INT, OFF(top_k), "*", 0, 1 << 20, "top-k filter, 0 = off"},
    {"seed", ARB_PARAM_U64, OFF(seed), "*", 0, 1.8e19, "run seed"},
    {"draft_model", ARB_PARAM_STR, OFF(draft_model), "draft " E2, 0, 0, "self (target cut) | target (same GGUF, q = p) | GGUF path"},
    {"heads", ARB_PARAM_STR, OFF(heads), "medusa hydra eagle eagle-dte", 0, 0, "default | {cache}/NAME | heads GGUF path (arbor train)"},
    {"tree", ARB_PARAM_STR, OFF(tree), "medusa hydra", 0, 0, "mc_sim_7b_63 | auto (budget nodes from held-out rank accuracy)"},
    {"bank", ARB_PARAM_STR, OFF(bank), "medusa hydra", 0, 0, "EntMTP TopologyBank JSON (arbor entmtp bank)"},
    {"tree_sched", ARB_PARAM_STR, OFF(tree_sched), "medusa hydra", 0, 0, "\"\" | static | entmtp_tau | ladder (needs bank)"},
    {"feature", ARB_PARAM_STR, OFF(feature), "medusa hydra", 0, 0, "EntMTP scalar s: lit (p0) | gD | sum"},
    {"tau_on", ARB_PARAM_DOUBLE, OFF(tau_on), "medusa hydra", -1, 1, "entmtp_tau: - to + when s > tau_on (< 0: bank's tau)"},
    {"tau_off", ARB_PARAM_DOUBLE, OFF(tau_off), "medusa hydra", -1, 1, "entmtp_tau: + to - when s <= tau_off (< 0: tau_on)"},
    {"entmtp_all_heads", ARB_PARAM_BOOL, OFF(entmtp_all_heads), "medusa hydra", 0, 1, "feature lit: run every head on the rank-0 chain anyway"},
        {"draft_layers", ARB_PARAM_INT, OFF(draft_layers), "draft " E2, 1, 1024, "self-draft: target blocks evaluated"},
    {"paths", ARB_PARAM_INT, OFF(dte_k), "draft eagle-dte", 1, 16, "k: i.i.d. draft paths (branching factor)"},
    {"trunk", ARB_PARAM_INT, OFF(dte_l), "draft eagle-dte", 0, 32, "l: trunk length before the branch point"},
    {"branch_len", ARB_PARAM_INT, OFF(dte_b), "draft eagle-dte", 0, 32, "b: length of each branch (single chain: paths 1, trunk 0)"},
    {"selector", ARB_PARAM_STR, OFF(selector), "draft", 0, 0, "fixed (paths, trunk, branch_len) | nde (per-step argmax of a trained selector)"},
    {"selector_file", ARB_PARAM_STR, OFF(selector_file), "draft", 0, 0, "nde: selector JSON (arbor nde train --out)"},
    {"window", ARB_PARAM_INT, OFF(la_window), "lookahead", 1, ARB_LADE_W_MAX, "W: Lookahead window columns"},
    {"ngram", ARB_PARAM_INT, OFF(la_ngram), "lookahead", 3, ARB_LADE_N_MAX, "N: Lookahead n-gram size (N-1 window levels)"},
    {"guess", ARB_PARAM_INT, OFF(la_guess), "lookahead", 0, ARB_LADE_G_MAX, "G: Lookahead n-grams per key, verified per step"},
    {"pool_from_prompt", ARB_PARAM_BOOL, OFF(la_prompt_pool), "lookahead", 0, 1, "seed the Lookahead pool with the prompt's n-grams"},
    /* typical_*: in a run's config JSON only when the verifier is typical (config_method.c) */
    {"typical_eps", ARB_PARAM_DOUBLE, OFF(typical_eps), "draft " E2, 0, 1, "typical: posterior threshold epsilon"},
    {"typical_alpha", ARB_PARAM_DOUBLE, OFF(typical_alpha), "draft " E2, 0, 1e9, "typical: entropy factor alpha"},
    {"datastore", ARB_PARAM_STR, OFF(datastore), "rest", 0, 0, "auto | cache name (code, chat) | path (.ards)"},
    {"suffix_max", ARB_PARAM_INT, OFF(rest_suffix_max), "rest", 1, 64, "longest context suffix looked up"},
    {"suffix_min", ARB_PARAM_INT, OFF(rest_suffix_min), "rest", 1, 64, "shortest context suffix looked up"},
    {"matches", ARB_PARAM_INT, OFF(rest_matches), "rest", 1, 1000000, "occurrences retrieved"},
    {"cont_len", ARB_PARAM_INT, OFF(rest_cont_len), "rest", 1, 64, "continuation tokens per occurrence"},
};

const arb_method_param *arb_method_params(int *n)
{
    *n = (int)(sizeof params / sizeof params[0]);
    return params;
}

static bool applies(const char *list, const char *drafter)
{
    if (!drafter || !strcmp(list, "*"))
        return true;
    if (!strcasecmp(drafter, "ar"))
        drafter = "none";
    size_t n = strlen(drafter);
    for (const char *p = list; (p = strstr(p, drafter)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
            return true;
    return false;
}

const arb_method_param *arb_method_param_find(const char *drafter, const char *name)
{
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (!strcmp(params[i].name, name))
            return applies(params[i].drafters, drafter) ? &params[i] : NULL;
    return NULL;
}

/* ---- defaults and presets ---- */
int arb_method_spec_default(const char *drafter, arb_method_spec *s, arb_err *err)
{
    memset(s, 0, sizeof *s);
    const arb_drafter_i *d = drafter ? arb_drafter_find(drafter) : NULL;
    if (!d) {
        char names[256];
        return ARB_ERR(err, ARB_E_INVAL, "method: drafter: unknown '%s' (%s)", drafter ? drafter : "(null)",
                       arb_drafter_names(names, sizeof names));
    }
    snprintf(s->drafter, sizeof s->drafter, "%s", d->name);
    snprintf(s->verifier, sizeof s->verifier, "greedy");
    snprintf(s->scheduler, sizeof s->scheduler, "goose_tiers");
    /* The bypass reading the evidence supports (docs/greedy-methods.md, "Which reading"): the
       length test on the matched context, consensus only between different occurrences. The
       spec's literal reading (|d| >= 8, any two lengths) sends nearly every match to the bypass. */
    snprintf(s->consensus, sizeof s->consensus, "distinct");
    s->bypass_match_len = true;
    s->bypass_max = -1;
    s->budget = 60;
    s->max_depth = 6;
    s->topk = 10;
    s->rho = 0.5;
    s->s_min = 0.01;
    s->iso_k = 3;
    /* [CHOICE] a TR-like rank profile: the vector estimated from step logs (report sequoia-p) did
       not raise tau on the default model (docs/greedy-methods.md item 11) */
    static const double sq[] = {0.35, 0.12, 0.06, 0.04, 0.03, 0.02, 0.015, 0.01, 0.008, 0.006};
    memcpy(s->sequoia_p, sq, sizeof sq);
    s->ngram_min = 3;
    s->ngram_max = 5;
    s->max_draft = 20;
    s->bypass_min = 8;
    s->pld_earliest = false;
    s->ema = 0.3;
    s->ps_init = 0.3;
    s->tier_lo = 0.2;
    s->tier_hi = 0.4;
    s->r_lo = 0.15;
    s->r_mid = 0.30;
    s->r_hi = 0.50;
    s->fixed_r = -1.0;
    s->bigram_log2 = 15;
    s->spine_branches = s->bigram = s->bypass = s->bypass_len = s->bypass_consensus = true;
    s->context_spine = true;
    s->harvest_prefill = true;
    s->temperature = 0.0;
    s->top_p = 1.0;
    snprintf(s->heads, sizeof s->heads, "default");
    snprintf(s->tree, sizeof s->tree, "mc_sim_7b_63");
    snprintf(s->feature, sizeof s->feature, "lit"); /* EntMTP: s as written (docs/entmtp.md) */
    s->tau_on = s->tau_off = -1;
    snprintf(s->draft_model, sizeof s->draft_model, "self");
    s->draft_layers = 24;
    s->dte_k = 2;
    s->dte_l = 0;
    s->dte_b = 4;
    snprintf(s->selector, sizeof s->selector, "fixed");
    /* Lookahead: the paper's setting for 7B models (W, N, G) = (15, 5, 15), also llama.cpp's
       example; the reference README's (7, 5, 7) is the lookahead-small preset */
    s->la_window = 15;
    s->la_ngram = 5;
    s->la_guess = 15;
    s->typical_eps = 0.09; /* Medusa's medusa_generate defaults (docs/spec/verification.md §9) */
    s->typical_alpha = 0.3;
    snprintf(s->datastore, sizeof s->datastore, "auto");
    s->rest_suffix_max = 16, s->rest_suffix_min = 2, s->rest_matches = 5000, s->rest_cont_len = 10;
    /* The drafter's own values over the common ones above (its label at least). */
    if (d->defaults)
        d->defaults(s);
    else
        snprintf(s->id, sizeof s->id, "%s", d->name);
    return ARB_OK;
}

int arb_method_spec_preset(const char *name, arb_method_spec *s, arb_err *err)
{
    static const struct { const char *name, *drafter, *id; } base[] = {
        {"ar", "none", "AR"}, {"pld", "pld", "PLD"}, {"tr", "tr", "TR"}, {"goose", "goose", "GOOSE"},
        {"iso3", "goose", "Iso3"}, {"iso5", "goose", "Iso5"}, {"sequoia", "goose", "Sequoia"},
        {"goose-nospinebr", "goose", "GOOSE w/o spine branches"},
        {"goose-unigram", "goose", "GOOSE unigram-only"},
        {"goose-nobypass", "goose", "GOOSE w/o consensus bypass"},
        {"goose-nospine", "goose", "GOOSE w/o context-match spine"},
        {"goose-control", "goose", "GOOSE control (TR spine)"},
        {"draft", "draft", "Draft"}, {"eagle2", "eagle2-draft", "EAGLE2"},
        {"lookahead", "lookahead", "Lookahead"}, {"lookahead-small", "lookahead", "Lookahead-small"},
        {"medusa", "medusa", "Medusa"}, {"hydra", "hydra", "Hydra"},
        {"draft", "draft", "Draft"},
        {"rest", "rest", "REST"}, {"rest-code", "rest", "REST-code"}, {"rest-chat", "rest", "REST-chat"},
        /* EntMTP with the GSM8K bank made on this machine (docs/entmtp.md); the path is relative
           to the source tree, so run from there or --set bank=... */
        {"entmtp", "hydra", "EntMTP"}, {"entmtp-tau", "hydra", "EntMTPtau"}, {"entmtp-ll", "hydra", "EntMTP-ll"},
        {"eagle2-head", "eagle", "EAGLE2-head"}, /* EAGLE-2's tree on the trained EAGLE head (docs/heads.md) */
        /* budget "auto" (autobudget.h, docs/cost-model.md): this machine's cost profile picks the
           budget; the paper-budget presets above stay as they were */
        {"pld-auto", "pld", "PLD-auto"}, {"tr-auto", "tr", "TR-auto"}, {"goose-auto", "goose", "GOOSE-auto"},
        {"iso3-auto", "goose", "Iso3-auto"}, {"iso5-auto", "goose", "Iso5-auto"},
        {"sequoia-auto", "goose", "Sequoia-auto"},
        /* GOOSE's two sources in the per-step cost-aware tree (topologies/dynamic.h) */
        {"goose-dyn-auto", "goose", "GOOSE-dyn"},
        /* the heads' tree grown from their rank accuracies, its budget from them and the profile */
        {"medusa-auto", "medusa", "Medusa-auto"}, {"hydra-auto", "hydra", "Hydra-auto"},
        {"eagle-dte", "eagle-dte", "EAGLE-DTE"}, /* the EAGLE head as a sampling draft (docs/sampling.md) */
    };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        if (strcasecmp(name, base[i].name))
            continue;
        int rc = arb_method_spec_default(base[i].drafter, s, err);
        if (rc)
            return rc;
        snprintf(s->id, sizeof s->id, "%s", base[i].id);
        const char *n = base[i].name;
        char stem[32]; /* "<preset>-auto": the preset with budget "auto" */
        const size_t nl = strlen(n);
        if (nl > 5 && !strcmp(n + nl - 5, "-auto")) {
            snprintf(stem, sizeof stem, "%.*s", (int)(nl - 5), n);
            n = stem;
            s->budget_auto = true;
        }
        if (!strncmp(n, "iso", 3) || !strcmp(n, "sequoia")) {
            /* Iso/Sequoia: GOOSE's unigram tier, no PLD (docs/spec/drafting.md §4.6-4.7) */
            snprintf(s->topology, sizeof s->topology, "%s", n[0] == 'i' ? "iso" : "sequoia");
            snprintf(s->scheduler, sizeof s->scheduler, "none");
            s->iso_k = n[0] == 'i' ? n[3] - '0' : s->iso_k;
            s->bigram = false;
        } else if (!strcmp(n, "goose-dyn")) { /* the tree subsumes the bypass: a sure match is a chain */
            snprintf(s->topology, sizeof s->topology, "dynamic");
            s->bypass = false;
            /* [CHOICE] arbor's own method, tuned for what a CPU step costs: harvesting the prompt
               runs the output head over every prompt token (AR's prefill needs it for the last
               one only) and bought back less than it cost (tau +1..7 %, prefill +20..25 %, net
               -4..-9 % tok/s on all five GOOSE datasets at 128 tokens); the table kept across a
               run's prompts, as TR's is, gained on four of five (docs/cost-model.md, "The
               prompt's head"). The paper presets keep the spec's per-prompt table and harvest. */
            s->harvest_prefill = false;
            s->hot_start = true;
        } else if (!strcmp(n, "goose-nospinebr")) {
            s->spine_branches = false;
        } else if (!strcmp(n, "goose-unigram")) {
            s->bigram = false;
        } else if (!strcmp(n, "goose-nobypass")) {
            s->bypass = false;
        } else if (!strcmp(n, "goose-nospine")) {
            s->context_spine = false;
        } else if (!strcmp(n, "goose-control")) {
            s->control_tr_spine = true;
        } else if (!strncmp(n, "rest-", 5)) { /* a named datastore instead of "auto" */
            snprintf(s->datastore, sizeof s->datastore, "%s", n + 5);
        } else if (!strncmp(n, "entmtp", 6)) {
            snprintf(s->bank, sizeof s->bank, "configs/entmtp/gsm8k.json");
            snprintf(s->tree_sched, sizeof s->tree_sched, "%s",
                     !strcmp(n, "entmtp") ? "static" : !strcmp(n, "entmtp-tau") ? "entmtp_tau" : "ladder");
            snprintf(s->feature, sizeof s->feature, "gD"); /* the feature the bank's tau was calibrated on */
        } else if (s->budget_auto && (!strcmp(n, "medusa") || !strcmp(n, "hydra"))) {
            snprintf(s->tree, sizeof s->tree, "auto");
        } else if (!strcmp(n, "lookahead-small")) { /* [CHOICE] CPU: the reference README's (7, 5, 7) */
            s->la_window = 7;
            s->la_guess = 7;
        }
        return ARB_OK;
    }
    return ARB_ERR(err, ARB_E_INVAL,
                   "method: unknown '%s' (ar pld tr goose iso3 iso5 sequoia goose-nospinebr goose-unigram "
                   "goose-nobypass goose-nospine goose-control draft eagle2 medusa hydra rest rest-code rest-chat entmtp entmtp-tau entmtp-ll "
                   "lookahead lookahead-small eagle2-head pld-auto tr-auto goose-auto goose-dyn-auto iso3-auto iso5-auto sequoia-auto "
                   "medusa-auto hydra-auto eagle-dte)", name);
}

int arb_method_max_nodes(const arb_method_spec *s)
{
    const arb_drafter_i *d = arb_drafter_find(s->drafter); /* unknown: never validated, never run */
    return d && d->max_nodes ? d->max_nodes(s) : s->budget;
}

/* ---- validation and setting ---- */
/* The names of the drafters for which has(d) holds, sep-separated into buf (returns buf): the
   "needs drafter ..." of validation messages, read from the table. */
static bool has_q_rows(const arb_drafter_i *d) { return d->q_rows != NULL; }
static bool uses_topology(const arb_drafter_i *d) { return d->uses_topology; }
static bool ar_steps(const arb_drafter_i *d) { return d->ar_steps; }
static const char *drafters_with(bool (*has)(const arb_drafter_i *), const char *sep, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; arb_drafter_at(i) && n < cap; i++)
        if (has(arb_drafter_at(i)))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? sep : "", arb_drafter_at(i)->name);
    return buf;
}

static int check_range(const arb_method_spec *s, const arb_method_param *p, arb_err *err)
{
    const char *b = (const char *)s + p->offset;
    double v;
    switch (p->type) {
    case ARB_PARAM_INT: v = *(const int *)b; break;
    case ARB_PARAM_DOUBLE: v = *(const double *)b; break;
    default: return ARB_OK;
    }
    if (!(v >= p->lo && v <= p->hi))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: %g outside [%g, %g]", s->id, p->name, v, p->lo, p->hi);
    return ARB_OK;
}

int arb_method_spec_validate(const arb_method_spec *s, arb_err *err)
{
    char names[256]; /* the valid names, from each kind's table */
    if (!arb_method_known("drafter", s->drafter))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: drafter: unknown '%s' (%s)", s->id, s->drafter,
                       arb_drafter_names(names, sizeof names));
    if (!arb_method_known("topology", s->topology))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: topology: unknown '%s' (%s)", s->id, s->topology,
                       arb_topology_names(names, sizeof names));
    if (!arb_method_known("verifier", s->verifier))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: unknown '%s' (%s)", s->id, s->verifier,
                       arb_verifier_names(names, sizeof names));
    if (s->tree_sched[0] && !arb_tree_sched_find(s->tree_sched))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: tree_sched: unknown '%s' (%s)", s->id, s->tree_sched,
                       arb_tree_sched_names(names, sizeof names));
    if (s->tree_sched[0] && !s->bank[0])
        return ARB_ERR(err, ARB_E_INVAL, "method %s: tree_sched %s needs a bank (arbor entmtp bank)", s->id,
                       s->tree_sched);
    if (s->feature[0] && strcmp(s->feature, "lit") && strcmp(s->feature, "gD") && strcmp(s->feature, "sum"))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: feature: unknown '%s' (lit, gD, sum)", s->id, s->feature);
    if (!arb_method_known("scheduler", s->scheduler))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: scheduler: unknown '%s' (%s)", s->id, s->scheduler,
                       arb_method_names("scheduler", names, sizeof names));
    if (!arb_method_known("consensus", s->consensus))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: consensus: unknown '%s' (%s)", s->id, s->consensus,
                       arb_goose_consensus_names(names, sizeof names));
    if (s->topology[0] && !arb_drafter_find(s->drafter)->uses_topology)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: topology: '%s' needs drafter %s", s->id, s->topology,
                       drafters_with(uses_topology, " or ", names, sizeof names));
    if (!strcmp(s->topology, "dynamic") && !s->budget_auto && s->chain_cost.n_max < 2)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: topology dynamic sizes its tree from this machine's eval cost: "
                       "it needs \"budget\": \"auto\"", s->id);
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        int rc = check_range(s, &params[i], err);
        if (rc)
            return rc;
    }
    if (s->ngram_min > s->ngram_max)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: ngram_min: %d > ngram_max %d", s->id, s->ngram_min, s->ngram_max);
    if (s->tier_lo > s->tier_hi)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: tier_lo: %g > tier_hi %g", s->id, s->tier_lo, s->tier_hi);
    if (!strcmp(s->scheduler, "fixed") && s->fixed_r < 0)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: fixed_r: scheduler fixed needs fixed_r in [0,1]", s->id);
    const arb_drafter_i *d = arb_drafter_find(s->drafter);
    if (s->ar_guard && !d->ar_steps)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: ar_guard: drafter %s cannot skip a step's proposal (%s can)",
                       s->id, s->drafter, drafters_with(ar_steps, ", ", names, sizeof names));
    if (s->ar_guard && s->temperature > 0)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: ar_guard: greedy decoding only (temperature %g)", s->id,
                       s->temperature);
    if (d->validate) {
        int rc = d->validate(s, err);
        if (rc)
            return rc;
    }
    /* Sampling verifiers need a drafter that drafts for them: one with the q_rows slot (its draft
       laws; NULL rows for DET trees, whose verifiers read none). */
    if (!d->q_rows && strcmp(s->verifier, "greedy"))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: %s needs drafter %s", s->id, s->verifier,
                       drafters_with(has_q_rows, " or ", names, sizeof names));
    if (!strcmp(s->verifier, "typical") && (s->top_p < 1 || s->top_k > 0))
        return ARB_ERR(err, ARB_E_INVAL, "method %s: verifier: typical is defined on the unfiltered softmax(z/T); "
                       "set top_p 1 and top_k 0 (docs/spec/verification.md §9)", s->id);
    /* AR samples the target itself; every other drafter needs the draft laws (q_rows). The one
       by-name case left: "none" is method.c's own row, the drafter that drafts nothing. */
    if (s->temperature > 0 && d != &arb_drafter_none && !d->q_rows)
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "method %s: temperature: drafter %s is greedy only (it has no draft laws); sampling "
                       "runs with ar or drafter %s", s->id, s->drafter, drafters_with(has_q_rows, ", ", names, sizeof names));
    return ARB_OK;
}

static int parse_bool(const char *v, bool *out)
{
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "yes"))
        *out = true;
    else if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no"))
        *out = false;
    else
        return -1;
    return 0;
}

bool arb_method_param_takes_auto(const arb_method_param *p) { return p->offset == OFF(budget); }

size_t arb_method_param_cap(const arb_method_param *p)
{
    const arb_method_spec *s = NULL;
    if (p->offset == OFF(id))
        return sizeof s->id;
    if (p->offset == OFF(draft_model) || p->offset == OFF(selector_file) || p->offset == OFF(heads) ||
        p->offset == OFF(datastore) || p->offset == OFF(bank))
        return ARB_SPEC_PATH_MAX;
    return sizeof s->drafter; /* every other string field is a char[32] name */
}

int arb_method_param_set(arb_method_spec *s, const char *name, const char *value, arb_err *err)
{
    const arb_method_param *p = arb_method_param_find(NULL, name);
    if (!p)
        return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: unknown parameter", s->id, name);
    char *b = (char *)s + p->offset, *end = NULL;
    errno = 0;
    if (arb_method_param_takes_auto(p) && !strcmp(value, "auto")) {
        s->budget_auto = true;
        return ARB_OK;
    }
    switch (p->type) {
    case ARB_PARAM_INT: {
        long v = strtol(value, &end, 10);
        if (end == value || *end || errno || v < p->lo || v > p->hi)
            return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: '%s' is not an integer in [%g, %g]", s->id, name,
                           value, p->lo, p->hi);
        *(int *)b = (int)v;
        if (arb_method_param_takes_auto(p))
            s->budget_auto = false; /* a number overrides an earlier "auto" */
        return ARB_OK;
    }
    case ARB_PARAM_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (end == value || *end || errno || value[0] == '-')
            return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: '%s' is not an unsigned integer", s->id, name, value);
        *(uint64_t *)b = v;
        return ARB_OK;
    }
    case ARB_PARAM_DOUBLE: {
        double v = strtod(value, &end);
        if (end == value || *end || errno || !(v >= p->lo && v <= p->hi))
            return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: '%s' is not a number in [%g, %g]", s->id, name,
                           value, p->lo, p->hi);
        *(double *)b = v;
        return ARB_OK;
    }
    case ARB_PARAM_BOOL:
        if (parse_bool(value, (bool *)b))
            return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: '%s' is not a boolean", s->id, name, value);
        return ARB_OK;
    case ARB_PARAM_STR: {
        size_t cap = arb_method_param_cap(p);
        if (strlen(value) >= cap)
            return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: '%s' longer than %zu", s->id, name, value, cap - 1);
        snprintf(b, cap, "%s", value);
        return ARB_OK;
    }
    case ARB_PARAM_DOUBLE_LIST: {
        double *l = (double *)b;
        int n = 0;
        const char *q = value;
        while (*q) {
            double v = strtod(q, &end);
            if (end == q || !(v > 0 && v <= 1) || n >= ARB_SEQUOIA_K_MAX - 1)
                return ARB_ERR(err, ARB_E_INVAL, "method %s: %s: item %d of '%s' is not in (0, 1] (max %d items)",
                               s->id, name, n, value, ARB_SEQUOIA_K_MAX - 1);
            l[n++] = v;
            q = end;
            while (*q == ',' || isspace((unsigned char)*q))
                q++;
        }
        for (int i = n; i < ARB_SEQUOIA_K_MAX; i++)
            l[i] = 0.0;
        return ARB_OK;
    }
    }
    return ARB_E_INVAL;
}
