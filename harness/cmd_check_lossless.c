/* cmd_check_lossless.c — `arbor check-lossless`: every greedy method must emit exactly the
 * AR token sequence. Runs the first N prompts of HumanEval and GSM8K (default 20 each) at
 * max-new tokens through AR and each method, reports mismatches (first differing position),
 * and per method × dataset τ, tok/s, harness overhead and table memory as a Markdown table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "autobudget.h"
#include "cli.h"
#include "dataset.h"
#include "decode.h"
#include "genutil.h"
#include "method.h"
#include "opts.h"

static const char description[] =
    "Greedy losslessness check: the first --limit prompts (default 20) of each dataset (default\n"
    "humaneval,gsm8k) are generated with AR and with every method in --methods (default\n"
    "pld,tr,goose,iso3,iso5; any preset of `arbor generate`); each output must equal AR's token\n"
    "for token. Prints one row per method and dataset (tau, tok/s, harness share of eval time,\n"
    "mismatches) and exits 1 on any mismatch. Each method's first prompt is run once untimed as\n"
    "a warm-up. --backend cuda is fast (cuBLAS for large trees, near-tie mismatches possible);\n"
    "cuda-exact uses batch-invariant kernels only (README, GPU backend).\n";

typedef struct agg {
    long gen, calls, prompts, mismatches;
    double wall_us, eval_us, harness_us;
    arb_e4 e4; /* GOOSE Appendix E.4 inputs from the step records */
} agg;

static int on_step(const arb_step_record *r, void *ud)
{
    arb_e4_add(ud, r);
    return 0;
}

static int split_list(char *s, const char **out, int cap)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < cap; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

/* Where a method left AR: AR's own logits at that position (prompt + the k tokens both
   emitted), and the gap between AR's token and the method's. A gap of a few 1e-2 or less
   is a near-tie that a non-batch-invariant backend (cuda fast mode) may flip. */
static int ar_gap(arb_ctx *c, const int32_t *ids, int n_ids, const int32_t *ref, int k, int32_t other, char *out,
                  size_t cap, arb_err *err)
{
    const arb_model *m = arb_ctx_model(c);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    int32_t *seq = malloc((size_t)(n_ids + k) * sizeof *seq);
    float *lg = malloc((size_t)mi.n_vocab * sizeof *lg);
    int rc = seq && lg ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (!rc) {
        memcpy(seq, ids, (size_t)n_ids * sizeof *seq);
        memcpy(seq + n_ids, ref, (size_t)k * sizeof *seq);
        rc = arb_ctx_truncate(c, 0);
        if (!rc)
            rc = arb_prefill(c, seq, n_ids + k, lg, err);
    }
    if (!rc)
        snprintf(out, cap, "; AR logit %.4f (token %d) vs %.4f (token %d): gap %.4f", lg[ref[k]], ref[k], lg[other],
                 other, lg[ref[k]] - lg[other]);
    free(seq);
    free(lg);
    return rc;
}

int arb_cmd_check_lossless(int argc, char **argv)
{
    const char *data = NULL, *model = "default", *backend = "cpu";
    const char *methods = "pld,tr,goose,iso3,iso5", *sets = "humaneval,gsm8k";
    int n_prompts = 20, max_new = 128, threads = 0, skip = 0;
    bool no_chat = false, verbose = false;
    const arb_opt opts[] = {
        {.name = "--limit", .alias = "--n", .kind = ARB_OPT_KIND_INT, .dst = &n_prompts, .lo = 1, .hi = 100000,
         .metavar = "N", .help = "prompts per dataset (default 20)"},
        ARB_OPT_INT("--max-new", "N", &max_new, 1, 100000, "tokens per prompt (default 128)"),
        ARB_OPT_INT("--skip", "N", &skip, 0, 100000, "start at prompt N of each dataset (shard a long check)"),
        ARB_OPT_STR("--methods", "LIST", &methods, "comma-separated presets (default pld,tr,goose,iso3,iso5)"),
        {.name = "--datasets", .alias = "--dataset", .kind = ARB_OPT_KIND_STR, .dst = &sets, .metavar = "LIST",
         .help = "comma-separated datasets (default humaneval,gsm8k)"},
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--data", "DIR", &data, "dataset directory (default $ARBOR_DATA, then the cache)"),
        ARB_OPT_FLAG("--no-chat", &no_chat, "send the prompts raw, without the chat template"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 100000, "kernel threads (default 0 = all cores)"),
        ARB_OPT_STR("--backend", "B", &backend, "cpu (default), cuda or cuda-exact"),
        {.name = "--verbose", .alias = "-v", .kind = ARB_OPT_KIND_FLAG, .dst = &verbose,
         .help = "one line per generation on stderr (method, prompt, tau, tok/s, same/DIFF)"},
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"check-lossless", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    const bool chat = !no_chat;
    char methods_buf[512], sets_buf[256];
    if ((size_t)snprintf(methods_buf, sizeof methods_buf, "%s", methods) >= sizeof methods_buf ||
        (size_t)snprintf(sets_buf, sizeof sets_buf, "%s", sets) >= sizeof sets_buf) {
        fprintf(stderr, "arbor check-lossless: --methods or --datasets longer than %zu bytes\n", sizeof sets_buf - 1);
        return 2;
    }
    const char *mnames[32], *dnames[16];
    int n_m = split_list(methods_buf, mnames + 1, 31) + 1, n_d = split_list(sets_buf, dnames, 16);
    mnames[0] = "ar";
    arb_err err = {0};
    arb_method_spec specs[32];
    for (int i = 0; i < n_m; i++)
        if (arb_method_spec_preset(mnames[i], &specs[i], &err) || arb_method_spec_validate(&specs[i], &err)) {
            fprintf(stderr, "arbor check-lossless: --methods: %s\n", err.msg);
            return 2;
        }
    char dir[4096];
    if (arb_dataset_dir(data, dir, sizeof dir, &err)) {
        fprintf(stderr, "arbor check-lossless: %s\n", err.msg);
        return 2;
    }
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    int rc = arb_gen_load(model, backend, threads, 0, &m, &c, &err);
    if (rc) {
        fprintf(stderr, "arbor check-lossless: %s\n", err.msg);
        return 1;
    }
    arb_decoder *dec[32] = {0};
    for (int i = 0; i < n_m && !rc; i++) /* budget "auto" (the *-auto presets): this machine's pick */
        if (!(rc = arb_autobudget_resolve(c, threads, &specs[i], stderr, &err)))
            rc = arb_decoder_new(c, &specs[i], &dec[i], &err);
    agg tot[32][16];
    memset(tot, 0, sizeof tot);
    long total_mismatch = 0;
    int32_t *ref = malloc((size_t)(max_new + 1) * sizeof *ref);
    if (!ref && !rc)
        rc = ARB_ERR(&err, ARB_E_NOMEM, "out of memory");
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    for (int di = 0; di < n_d && !rc; di++) {
        arb_dataset *ds = NULL;
        if ((rc = arb_dataset_open(dir, dnames[di], NULL, &ds, &err)))
            break;
        size_t n = arb_dataset_count(ds) < (size_t)(skip + n_prompts) ? arb_dataset_count(ds)
                                                                        : (size_t)(skip + n_prompts);
        for (size_t pi = (size_t)skip; pi < n && !rc; pi++) {
            const arb_record *r = arb_dataset_get(ds, pi);
            int32_t *ids = NULL;
            int n_ids = 0, n_ref = 0;
            if ((rc = arb_gen_prompt(m, r->turns[0], chat, &ids, &n_ids, &err)))
                break;
            o.prompt_id = (int)pi;
            for (int mi = 0; mi < n_m && !rc; mi++) {
                arb_prompt_result res;
                if (di == 0 && pi == (size_t)skip) { /* warm-up, untimed; then start the run afresh */
                    rc = arb_decoder_generate(dec[mi], ids, n_ids, &o, NULL, &res, &err);
                    arb_decoder_reset_run(dec[mi]);
                    if (rc)
                        break;
                }
                agg *a = &tot[mi][di];
                arb_decode_cb cb = {.on_step = on_step, .ud = &a->e4};
                if ((rc = arb_decoder_generate(dec[mi], ids, n_ids, &o, &cb, &res, &err)))
                    break;
                a->gen += res.n_generated;
                a->calls += res.n_target_calls;
                a->prompts++;
                a->wall_us += res.wall_us;
                a->eval_us += res.eval_us;
                a->harness_us += res.harness_us;
                if (mi == 0) {
                    memcpy(ref, res.ids, (size_t)res.n_generated * sizeof *ref);
                    n_ref = res.n_generated;
                }
                int k = 0;
                while (k < n_ref && k < res.n_generated && ref[k] == res.ids[k])
                    k++;
                bool same = k == n_ref && k == res.n_generated;
                if (verbose) /* one line per generation, so an interrupted run still reports */
                    fprintf(stderr, "%-10s %-9s %3zu  %4d tokens %4d calls  tau %.3f  %7.2f tok/s  harness %.2f%%  %s\n",
                            specs[mi].id, dnames[di], pi, res.n_generated, res.n_target_calls,
                            (double)res.n_generated / res.n_target_calls, res.n_generated / (res.wall_us / 1e6),
                            res.eval_us > 0 ? 100.0 * res.harness_us / res.eval_us : 0.0, same ? "same" : "DIFF");
                if (!same) {
                    a->mismatches++;
                    total_mismatch++;
                    char gap[96] = "";
                    arb_err gerr = {0}; /* the gap is extra information: its failure ends nothing */
                    if (k < n_ref && k < res.n_generated)
                        (void)ar_gap(c, ids, n_ids, ref, k, res.ids[k], gap, sizeof gap, &gerr);
                    fprintf(stderr, "MISMATCH %s %s[%zu] (%s): first difference at token %d of %d/%d%s\n",
                            specs[mi].id, dnames[di], pi, r->id, k, n_ref, res.n_generated, gap);
                }
            }
            if (!verbose)
                fprintf(stderr, isatty(2) ? "\r%s %zu/%zu" : "%s %zu/%zu\n", dnames[di], pi + 1, n);
            free(ids);
        }
        fputc('\n', stderr);
        arb_dataset_free(ds);
    }
    if (!rc) {
        printf("| method | dataset | prompts | tokens | target calls | tau | tok/s | speedup | harness/eval | "
               "tables MB | mismatches |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int mi = 0; mi < n_m; mi++)
            for (int di = 0; di < n_d; di++) {
                agg *a = &tot[mi][di], *ar = &tot[0][di];
                double tps = a->gen / (a->wall_us / 1e6), ar_tps = ar->gen / (ar->wall_us / 1e6);
                printf("| %s | %s | %ld | %ld | %ld | %.3f | %.2f | %.2fx | %.2f%% | %.2f | %ld |\n", specs[mi].id,
                       dnames[di], a->prompts, a->gen, a->calls, (double)a->gen / a->calls, tps, tps / ar_tps,
                       a->eval_us > 0 ? 100.0 * a->harness_us / a->eval_us : 0.0,
                       arb_decoder_table_bytes(dec[mi]) / 1048576.0, a->mismatches);
            }
        bool any_spine = false; /* the table is about GOOSE's spine trees: none, no table */
        for (int mi = 0; mi < n_m; mi++)
            any_spine |= !strcmp(specs[mi].drafter, "goose") && !specs[mi].topology[0];
        if (any_spine)
            printf("\nGOOSE Appendix E.4 (Prop. 1 with Prop. 2 widths vs measured tau; Iso(3) yield at p_t):\n\n"
                   "| method | dataset | p_s | p_t | m | tau_eq1 | tau_iso | tau_meas | eq1 <= meas | eq1 > iso |\n"
                   "|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
        for (int mi = 0; mi < n_m; mi++)
            for (int di = 0; di < n_d && !strcmp(specs[mi].drafter, "goose") && !specs[mi].topology[0]; di++) {
                agg *a = &tot[mi][di];
                arb_e4_finish(&a->e4, specs[mi].budget, specs[mi].max_depth, (int)a->gen, (int)a->calls);
                printf("| %s | %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.3f | %s | %s |\n", specs[mi].id, dnames[di],
                       a->e4.p_s, a->e4.p_t, a->e4.m_mean, a->e4.tau_eq1, a->e4.tau_iso, a->e4.tau_meas,
                       a->e4.valid ? (a->e4.lower_ok ? "yes" : "NO") : "n/a",
                       a->e4.valid ? (a->e4.above_iso ? "yes" : "no") : "n/a");
            }
        printf("\n%ld mismatches over %d methods x %d datasets x up to %d prompts at %d new tokens\n", total_mismatch,
               n_m - 1, n_d, n_prompts, max_new);
    } else {
        fprintf(stderr, "arbor check-lossless: %s\n", err.msg);
    }
    free(ref);
    for (int i = 0; i < n_m; i++)
        arb_decoder_free(dec[i]);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc ? 1 : total_mismatch ? 1 : 0;
}
