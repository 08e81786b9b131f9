/* cmd_generate.c — `arbor generate`: one prompt, one method, text streamed as tokens are
 * committed; τ, tok/s and time to first token on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autobudget.h"
#include "cli.h"
#include "decode.h"
#include "genutil.h"
#include "method.h"
#include "opts.h"
#include "drafters/drafter.h"
#include "schedulers/scheduler.h"
#include "topologies/topology.h"
#include "verifiers/verifier.h"

static const char description[] =
    "Generates up to --max-new tokens for one prompt with a decoding method and streams the\n"
    "text to stdout; prints tau (tokens per target call, bonus included), tok/s and time to\n"
    "first token to stderr. The prompt goes through the model's chat template unless\n"
    "--no-chat. Methods: the presets of `arbor run` configs (docs/config.md): ar pld tr goose\n"
    "iso3 iso5 sequoia draft eagle2, the GOOSE ablations goose-nospinebr goose-unigram\n"
    "goose-nobypass goose-nospine goose-control, and every other registered preset; T > 0\n"
    "needs ar, draft, eagle2 or eagle-dte (the draft's verifier: --set verifier=NAME;\n"
    "verifier=typical is typical acceptance, approximate: reports mark it).\n"
    "The summary also gives the process CPU time per decoding step (meaningful with\n"
    "--threads 1 on a busy machine). --full-rows copies every node's full logits row back\n"
    "from the engine and computes the top-K on the host, as before the engine returned it\n"
    "(docs/gpu.md \"No logits round trip\"): same tokens, for before/after timings.\n";

typedef struct gen_state {
    const arb_model *m;
    double t0, t_first;
    double cpu_first; /* process CPU time at the first token (prefill done) */
    int n_tok;
    bool steps;
} gen_state;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double cpu_us(void) /* this process, all threads */
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int on_token(int32_t tok, void *ud)
{
    gen_state *g = ud;
    if (g->n_tok++ == 0) {
        g->t_first = now_us();
        g->cpu_first = cpu_us();
    }
    char buf[256];
    int n = arb_token_piece(g->m, tok, buf, sizeof buf);
    if (n > 0)
        fwrite(buf, 1, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf), stdout);
    fflush(stdout);
    return 0;
}

static int on_step(const arb_step_record *r, void *ud)
{
    gen_state *g = ud;
    static const char *modes[] = {"ar", "tree", "bypass", "chain"};
    if (g->steps)
        fprintf(stderr, "\n[step %d] mode %s nodes %d depth %d k %d committed %d spine %d/%d r %.2f p_s %.2f "
                        "draft %.0fus eval %.0fus verify %.0fus update %.0fus commit %.0fus",
                r->step, modes[r->mode], r->n_nodes, r->tree_depth, r->accepted_k, r->committed, r->acc_spine,
                r->n_spine, r->r, r->p_s_hat, r->draft_us, r->eval_us, r->verify_us, r->update_us, r->commit_us);
    return 0;
}

/* The method preset with the sampling overrides given (NULL = the preset's) and each --set
   KEY=VALUE applied, validated; 0, or 2 after printing the error. */
static int method_spec(const char *method, const double *temp, const double *top_p, const uint64_t *seed,
                       const arb_opt_list *sets, arb_method_spec *spec)
{
    arb_err err = {0};
    if (arb_method_spec_preset(method, spec, &err)) {
        fprintf(stderr, "arbor generate: --method: %s\n", err.msg);
        return 2;
    }
    if (temp)
        spec->temperature = *temp;
    if (top_p)
        spec->top_p = *top_p;
    if (seed)
        spec->seed = *seed;
    for (int i = 0; i < sets->n; i++) {
        char key[64];
        const char *eq = strchr(sets->v[i], '=');
        if (!eq) {
            fprintf(stderr, "arbor generate: --set: expected KEY=VALUE, got '%s'\n", sets->v[i]);
            return 2;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - sets->v[i]), sets->v[i]);
        if (arb_method_param_set(spec, key, eq + 1, &err)) {
            fprintf(stderr, "arbor generate: --set: %s\n", err.msg);
            return 2;
        }
    }
    if (arb_method_spec_validate(spec, &err)) {
        fprintf(stderr, "arbor generate: %s\n", err.msg);
        return 2;
    }
    return 0;
}

int arb_cmd_generate(int argc, char **argv)
{
    const char *model = "default", *prompt = NULL, *method = "goose", *backend = "cpu";
    const char *set_v[64];
    arb_opt_list sets = {set_v, 64, 0};
    int max_new = 128, threads = 0;
    bool no_chat = false, steps = false, full_rows = false;
    double temp = 0.0, top_p = 1.0;
    uint64_t seed = 0;
    bool have_t = false, have_p = false, have_seed = false;
    const arb_opt opts[] = {
        {.name = "--prompt", .kind = ARB_OPT_KIND_STR, .dst = &prompt, .metavar = "TEXT", .required = true,
         .help = "the user message"},
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        {.name = "--max-new", .alias = "-n", .kind = ARB_OPT_KIND_INT, .dst = &max_new, .lo = 1, .hi = 1 << 20,
         .metavar = "N", .help = "tokens to generate (default 128)"},
        ARB_OPT_STR("--method", "M", &method, "decoding method preset (default goose; see above)"),
        {.name = "--temperature", .kind = ARB_OPT_KIND_DOUBLE, .dst = &temp, .lo = 0, .hi = 1e9, .metavar = "T",
         .seen = &have_t, .help = "sampling temperature (default: the method's; 0 = greedy)"},
        {.name = "--top-p", .kind = ARB_OPT_KIND_DOUBLE, .dst = &top_p, .lo = 1e-12, .hi = 1, .metavar = "P",
         .seen = &have_p, .help = "nucleus sampling mass in (0, 1]"},
        {.name = "--seed", .kind = ARB_OPT_KIND_U64, .dst = &seed, .metavar = "S", .seen = &have_seed,
         .help = "sampling seed"},
        ARB_OPT_LIST("--set", "KEY=VALUE", &sets, "override a method parameter (--set budget=40 --set rho=0.4)"),
        ARB_OPT_FLAG("--no-chat", &no_chat, "send the prompt raw, without the chat template"),
        ARB_OPT_FLAG("--steps", &steps, "one line per decoding step on stderr"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "kernel threads (default 0 = all cores)"),
        ARB_OPT_STR("--backend", "B", &backend, "cpu (default), cuda (fast) or cuda-exact (batch-invariant)"),
        ARB_OPT_FLAG("--full-rows", &full_rows, "every eval returns full logits rows, top-K on the host (timings)"),
        ARB_OPT_END};
    /* The plug-in names come from each kind's table (scripts/cli_reference.py copies this
       block into the README), so a new row shows up here without editing the text. */
    char help[2048], dn[256], tn[128], vn[256], sn[128];
    snprintf(help, sizeof help,
             "%s\nplug-ins (--set KEY=NAME; docs/ARCHITECTURE.md \"Adding a plug-in\"):\n"
             "  drafter     %s\n  topology    %s (\"\" = the drafter's own shape)\n"
             "  verifier    %s\n  tree_sched  %s\n",
             description, arb_drafter_names(dn, sizeof dn), arb_topology_names(tn, sizeof tn),
             arb_verifier_names(vn, sizeof vn), arb_tree_sched_names(sn, sizeof sn));
    const arb_cmd_spec cmd = {"generate", NULL, help, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    const bool chat = !no_chat;
    arb_err err = {0};
    arb_method_spec spec;
    if (method_spec(method, have_t ? &temp : NULL, have_p ? &top_p : NULL, have_seed ? &seed : NULL, &sets, &spec))
        return 2;
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_decoder *d = NULL;
    int32_t *ids = NULL;
    int n_ids = 0, rc;
    if ((rc = arb_gen_load(model, backend, threads, 0, &m, NULL, &err)) ||
        (rc = arb_gen_prompt(m, prompt, chat, &ids, &n_ids, &err)) ||
        (rc = arb_gen_ctx_new(m, arb_gen_ctx_tokens(m, n_ids, max_new), &c, &err)) ||
        (rc = arb_autobudget_resolve(c, threads, &spec, stderr, &err)) || (rc = arb_decoder_new(c, &spec, &d, &err)))
        goto done;
    gen_state g = {.m = m, .steps = steps};
    arb_decode_cb cb = {.on_step = on_step, .on_token = on_token, .ud = &g};
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    o.full_rows = full_rows;
    arb_prompt_result r;
    g.t0 = now_us();
    const double c0 = cpu_us();
    if ((rc = arb_decoder_generate(d, ids, n_ids, &o, &cb, &r, &err)))
        goto done;
    const double cpu_gen = cpu_us() - c0;
    fputc('\n', stdout);
    fflush(stdout);
    double tau = (double)r.n_generated / r.n_target_calls;
    fprintf(stderr,
            "\n[%s%s] %d prompt tokens, %d generated in %d target calls: tau %.3f, %.2f tok/s, "
            "time to first token %.1f ms, harness (drafting included) %.2f%% of eval, tables %.2f MB%s\n"
            "process CPU %.1f ms, %.3f ms per step after prefill%s\n",
            spec.id, spec.temperature > 0 && arb_verifier_find(spec.verifier)->approximate ? " (approximate)" : "",
            r.n_prompt, r.n_generated, r.n_target_calls, tau, r.n_generated / (r.wall_us / 1e6),
            (g.t_first - g.t0) / 1e3, r.eval_us > 0 ? 100.0 * r.harness_us / r.eval_us : 0.0,
            arb_decoder_table_bytes(d) / 1048576.0, r.stopped_eos ? " (stopped at EOS)" : "", cpu_gen / 1e3,
            r.n_steps > 0 ? (cpu_gen - (g.cpu_first - c0)) / 1e3 / r.n_steps : 0.0,
            full_rows ? " (full rows)" : "");
done:
    if (rc)
        fprintf(stderr, "arbor generate: %s\n", err.msg);
    free(ids);
    arb_decoder_free(d);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc ? 1 : 0;
}
