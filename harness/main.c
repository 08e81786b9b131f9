/* main.c — the `arbor` command-line entry: one table of subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "arb_git_rev.h"
#include "cli.h"
#include "engine.h"

struct arb_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct arb_cmd cmds[] = {
    {"fetch-model", arb_cmd_fetch_model, "download the default model (SmolLM2-135M Q4_1) into the cache"},
    {"inspect", arb_cmd_inspect, "validate a GGUF file and show its metadata and tensor table"},
    {"run", arb_cmd_run, "run an experiment config (JSON) into a results database; resumable, shardable"},
    {"report", arb_cmd_report, "paper tables (GOOSE Tables 1-3, pivots) from a results database"},
    {"reproduce", arb_cmd_reproduce, "run a paper's claims (goose, dte) and print verdicts: holds, fails, inconclusive"},
    {"compare", arb_cmd_compare, "regression gate: a metric of two results databases, exit 1 on a drop"},
    {"merge", arb_cmd_merge, "combine shard results databases into one"},
    {"plot", arb_cmd_plot, "figures (speedup bars, p_s vs p_t, tau sweeps, accepted lengths) via gnuplot"},
    {"datasets", arb_cmd_datasets, "list benchmark datasets, verify them, show their prompts"},
    {"tokenize", arb_cmd_tokenize, "show a model's token ids and pieces for a text (optionally chat-formatted)"},
    {"generate", arb_cmd_generate, "generate for one prompt with a method (ar pld tr goose iso3 iso5 ...), streamed"},
    {"check-lossless", arb_cmd_check_lossless, "greedy methods vs AR token for token on HumanEval/GSM8K prompts"},
    {"bench", arb_cmd_bench, "engine speed: decode/prefill tok/s, tree costs, roofline, vs llama-bench"},
    {"bench-harness", arb_cmd_bench_harness, "harness costs: n-gram lookups vs context, table memory, per-step work"},
    {"synth-model", arb_cmd_synth_model, "write a random-weight GGUF of a real 1B-8B shape (GPU timing model)"},
    {"distill", arb_cmd_distill, "the target's greedy answers to training prompts, for training heads (resumable)"},
    {"train", arb_cmd_train, "train Medusa, Hydra or EAGLE heads, or the NDE selector (frozen target, AdamW, held-out split)"},
    {"datastore", arb_cmd_datastore, "build a REST retrieval datastore (code or chat corpus) or show one's header"},
    {"entmtp", arb_cmd_entmtp, "EntMTP: acceptance frontier of Hydra trees (score_all + debiasing) on calibration prompts"},
    {"dte-depth", arb_cmd_dte_depth, "per-depth OT acceptance rates and L1(p,q) along draft paths (DTE Fig. 1)"},
    {"nde", arb_cmd_nde, "DTE's neural delayed-expansion selector: offline data, training, Tables 4-7 (data|train|eval)"},
};

bool arb_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return true;
    return false;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: arbor <command> [options]    (arbor <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-14s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\narbor %s (%s, %s, git %s)\n", ARB_VERSION, ARB_BUILD_TYPE, ARB_COMPILER, ARB_GIT_REV);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("arbor %s (%s, %s, git %s)\n", ARB_VERSION, ARB_BUILD_TYPE, ARB_COMPILER, ARB_GIT_REV);
        return 0;
    }
    /* arb_gen_load_opts ignores an unknown ARBOR_ISA (the best family runs); say so once per
       process, not at every model load */
    const char *isa = getenv("ARBOR_ISA");
    if (isa && *isa && !arb_cpu_kernels(isa))
        fprintf(stderr, "arbor: ARBOR_ISA=%s is not a kernel family here (scalar, avx2, avx512vnni where the "
                        "CPU has it); using the best\n", isa);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            exit(cmds[i].fn(argc - 1, argv + 1));
    fprintf(stderr, "arbor: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
