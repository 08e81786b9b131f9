/* cmd_generate.c — `arbor generate`: one prompt, one method, text streamed as tokens are
 * committed; τ, tok/s and time to first token on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "decode.h"
#include "genutil.h"
#include "method.h"

static const char usage[] =
    "usage: arbor generate --prompt TEXT [--model default|PATH] [-n N] [--method M]\n"
    "                      [--temperature T] [--top-p P] [--seed S] [--no-chat]\n"
    "                      [--set KEY=VALUE]... [--threads N] [--steps]\n"
    "                      [--backend cpu|cuda|cuda-exact]\n"
    "\n"
    "Generates up to N tokens (default 128) for one prompt with a decoding method and\n"
    "streams the text to stdout; prints tau (tokens per target call, bonus included),\n"
    "tok/s and time to first token to stderr. The prompt goes through the model's chat\n"
    "template unless --no-chat.\n"
    "\n"
    "  --method M       ar pld tr goose iso3 iso5 sequoia, or a GOOSE ablation:\n"
    "                  goose-nospinebr goose-unigram goose-nobypass goose-nospine goose-control,\n"
    "                  lookahead (W 15, N 5, G 15), lookahead-small (7, 5, 7), draft\n"
    "                  (default goose; T > 0 needs ar)\n"
    "  --set KEY=VALUE override a method parameter (e.g. --set budget=40 --set rho=0.4)\n"
    "  --steps         print one line per decoding step to stderr\n"
    "  --threads N     kernel threads (default: all cores)\n"
    "  --backend B     cpu (default), cuda (fast) or cuda-exact (batch-invariant)\n";

typedef struct gen_state {
    const arb_model *m;
    double t0, t_first;
    int n_tok;
    bool steps;
} gen_state;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int on_token(int32_t tok, void *ud)
{
    gen_state *g = ud;
    if (g->n_tok++ == 0)
        g->t_first = now_us();
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

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || *e || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int arb_cmd_generate(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    const char *model = "default", *prompt = NULL, *method = "goose", *backend = "cpu";
    const char *sets[64];
    int n_sets = 0, max_new = 128, threads = 0;
    bool chat = true, steps = false;
    double temp = 0.0, top_p = 1.0;
    unsigned long long seed = 0;
    bool have_t = false, have_p = false, have_seed = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool val = !strcmp(a, "--model") || !strcmp(a, "--prompt") || !strcmp(a, "-n") || !strcmp(a, "--method") ||
                   !strcmp(a, "--temperature") || !strcmp(a, "--top-p") || !strcmp(a, "--seed") ||
                   !strcmp(a, "--set") || !strcmp(a, "--threads") || !strcmp(a, "--backend");
        if (val && !v) {
            fprintf(stderr, "arbor generate: %s needs a value\n%s", a, usage);
            return 2;
        }
        char *e = NULL;
        if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--backend"))
            backend = v;
        else if (!strcmp(a, "--prompt"))
            prompt = v;
        else if (!strcmp(a, "--method"))
            method = v;
        else if (!strcmp(a, "-n")) {
            if (parse_int(v, 1, 1 << 20, &max_new)) {
                fprintf(stderr, "arbor generate: -n: '%s' is not an integer >= 1\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--threads")) {
            if (parse_int(v, 0, 1024, &threads)) {
                fprintf(stderr, "arbor generate: --threads: '%s' is not an integer in 0..1024\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--temperature")) {
            temp = strtod(v, &e);
            if (e == v || *e || !(temp >= 0)) {
                fprintf(stderr, "arbor generate: --temperature: '%s' is not a number >= 0\n", v);
                return 2;
            }
            have_t = true;
        } else if (!strcmp(a, "--top-p")) {
            top_p = strtod(v, &e);
            if (e == v || *e || !(top_p > 0 && top_p <= 1)) {
                fprintf(stderr, "arbor generate: --top-p: '%s' is not a number in (0, 1]\n", v);
                return 2;
            }
            have_p = true;
        } else if (!strcmp(a, "--seed")) {
            seed = strtoull(v, &e, 10);
            if (e == v || *e || v[0] == '-') {
                fprintf(stderr, "arbor generate: --seed: '%s' is not an unsigned integer\n", v);
                return 2;
            }
            have_seed = true;
        } else if (!strcmp(a, "--set")) {
            if (n_sets == 64 || !strchr(v, '=')) {
                fprintf(stderr, "arbor generate: --set: expected KEY=VALUE, got '%s'\n", v);
                return 2;
            }
            sets[n_sets++] = v;
        } else if (!strcmp(a, "--no-chat")) {
            chat = false;
            continue;
        } else if (!strcmp(a, "--steps")) {
            steps = true;
            continue;
        } else {
            fprintf(stderr, "arbor generate: unknown option '%s'\n%s", a, usage);
            return 2;
        }
        i++;
    }
    if (!prompt) {
        fprintf(stderr, "arbor generate: --prompt is required\n%s", usage);
        return 2;
    }
    arb_err err = {0};
    arb_method_spec spec;
    if (arb_method_spec_preset(method, &spec, &err)) {
        fprintf(stderr, "arbor generate: --method: %s\n", err.msg);
        return 2;
    }
    if (have_t)
        spec.temperature = temp;
    if (have_p)
        spec.top_p = top_p;
    if (have_seed)
        spec.seed = seed;
    for (int i = 0; i < n_sets; i++) {
        char key[64];
        const char *eq = strchr(sets[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - sets[i]), sets[i]);
        if (arb_method_param_set(&spec, key, eq + 1, &err)) {
            fprintf(stderr, "arbor generate: --set: %s\n", err.msg);
            return 2;
        }
    }
    if (arb_method_spec_validate(&spec, &err)) {
        fprintf(stderr, "arbor generate: %s\n", err.msg);
        return 2;
    }
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_decoder *d = NULL;
    int32_t *ids = NULL;
    int n_ids = 0, rc;
    if ((rc = arb_gen_load(model, backend, threads, 0, &m, &c, &err)) || (rc = arb_gen_prompt(m, prompt, chat, &ids, &n_ids, &err)) ||
        (rc = arb_decoder_new(c, &spec, &d, &err)))
        goto done;
    gen_state g = {.m = m, .steps = steps};
    arb_decode_cb cb = {.on_step = on_step, .on_token = on_token, .ud = &g};
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    arb_prompt_result r;
    g.t0 = now_us();
    if ((rc = arb_decoder_generate(d, ids, n_ids, &o, &cb, &r, &err)))
        goto done;
    fputc('\n', stdout);
    fflush(stdout);
    double tau = (double)r.n_generated / r.n_target_calls;
    fprintf(stderr,
            "\n[%s] %d prompt tokens, %d generated in %d target calls: tau %.3f, %.2f tok/s, "
            "time to first token %.1f ms, harness %.2f%% of eval, tables %.2f MB%s\n",
            spec.id, r.n_prompt, r.n_generated, r.n_target_calls, tau, r.n_generated / (r.wall_us / 1e6),
            (g.t_first - g.t0) / 1e3, r.eval_us > 0 ? 100.0 * r.harness_us / r.eval_us : 0.0,
            arb_decoder_table_bytes(d) / 1048576.0, r.stopped_eos ? " (stopped at EOS)" : "");
done:
    if (rc)
        fprintf(stderr, "arbor generate: %s\n", err.msg);
    free(ids);
    arb_decoder_free(d);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc ? 1 : 0;
}
