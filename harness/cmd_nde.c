/* cmd_nde.c — `arbor nde data|train|eval`: the DTE paper's neural delayed-expansion selector
 * (docs/sampling.md, "NDE"). `arbor train nde ...` is the same as `arbor nde train ...`.
 * The work lives in nde_data.c (offline data) and nde_train.c (training, Tables 4-7). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "nde_data.h"
#include "nde_train.h"
#include "opts.h"

static const char usage[] =
    "usage: arbor nde data|train|eval [options]   (arbor nde VERB --help for each)\n"
    "  data   offline data: roots every N tokens of sampled target trajectories, exact BE per action\n"
    "         and verifier, modelled cost T(n, a), features; SQLite tables nde_* in --db (resumable, --shard)\n"
    "  train  the NDE MLP on one verifier's data (AdamW, early stopping on held-out prompts) -> JSON\n"
    "  eval   DTE Tables 4-7 on evaluation data: NDE vs the best fixed (k,b) and vs Traversal\n";

static int cmd_data(int argc, char **argv)
{
    arb_nde_data_opts o = arb_nde_data_default_opts();
    const char *settings = NULL, *shard = NULL;
    const arb_opt opts[] = {
        {.name = "--db", .kind = ARB_OPT_KIND_STR, .dst = &o.db, .metavar = "FILE", .help = "SQLite file (created)",
         .required = true},
        ARB_OPT_STR("--tag", "NAME", &o.tag, "names the data set (default train)"),
        {.name = "--datasets", .alias = "--dataset", .kind = ARB_OPT_KIND_STR, .dst = &o.datasets,
         .metavar = "NAME[,NAME]", .help = "datasets (default gsm8k-train)"},
        ARB_OPT_INT("--limit", "N", &o.limit, 0, 1 << 30, "prompts per dataset (default 20)"),
        ARB_OPT_INT("--offset", "N", &o.offset, 0, 1 << 30, "first prompt index (default 0)"),
        ARB_OPT_INT("--max-new", "N", &o.max_new, 1, 1 << 20, "trajectory tokens per prompt (default 96)"),
        ARB_OPT_INT("--every", "N", &o.every, 1, 1 << 20, "a root every N tokens (default 16)"),
        ARB_OPT_INT("--n-tree", "N", &o.n_tree, 1, 64, "trees per action and root (default 1)"),
        ARB_OPT_INT("--draft-layers", "L", &o.draft_layers, 1, 1 << 20, "self-draft: target blocks (default 24)"),
        ARB_OPT_STR("--settings", "T[:P][;T[:P]...]", &settings, "sampling settings (default 1:1)"),
        ARB_OPT_STR("--shard", "I/N", &shard, "this process takes prompts p with p % N == I (default 0/1)"),
        ARB_OPT_U64("--seed", "S", &o.seed, "seed of trajectories and drafts (default 0)"),
        ARB_OPT_STR("--data", "DIR", &o.data_dir, "dataset directory (default $ARBOR_DATA, else the cache)"),
        ARB_OPT_INT("--threads", "N", &o.threads, 0, 1024, "kernel threads (default 0 = all cores)"),
        ARB_OPT_STR("--model", "M", &o.model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--verifiers", "NAME[,NAME]", &o.verifiers, "verifiers scored (default: all 8 lossless sampling ones)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"nde data", NULL,
                              "Offline data for the NDE selector (docs/spec/drafting.md 11.8). Re-running with the "
                              "same --db and --tag continues where it stopped.\n", opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    char slash = 0;
    if (shard && (sscanf(shard, "%d%c%d", &o.shard, &slash, &o.n_shards) != 3 || slash != '/' || o.n_shards < 1 ||
                  o.shard < 0 || o.shard >= o.n_shards)) {
        fprintf(stderr, "arbor nde data: --shard '%s': expected I/N with 0 <= I < N\n", shard);
        return 2;
    }
    if (settings && arb_nde_data_parse_settings(settings, &o, &err)) {
        fprintf(stderr, "arbor nde data: %s\n", err.msg);
        return 2;
    }
    if (arb_nde_data_run(&o, stderr, &err)) {
        fprintf(stderr, "arbor nde data: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int cmd_train(int argc, char **argv)
{
    arb_nde_train_opts o = arb_nde_train_default_opts();
    const arb_opt opts[] = {
        {.name = "--db", .kind = ARB_OPT_KIND_STR, .dst = &o.db, .metavar = "FILE", .help = "data of arbor nde data",
         .required = true},
        {.name = "--out", .kind = ARB_OPT_KIND_STR, .dst = &o.out, .metavar = "FILE",
         .help = "selector JSON written (selector_file of a method)", .required = true},
        ARB_OPT_STR("--tag", "NAME", &o.tag, "training data set (default train)"),
        ARB_OPT_STR("--verifier", "NAME", &o.verifier, "whose BE the selector maximises (default spectr)"),
        ARB_OPT_STR("--objective", "throughput|be", &o.objective, "ratio maximised (default throughput)"),
        ARB_OPT_INT("--hidden", "H", &o.hidden, 1, 4096, "hidden units (default 32)"),
        ARB_OPT_INT("--steps", "N", &o.steps, 1, 1 << 24, "full-batch AdamW steps at most (default 3000)"),
        ARB_OPT_INT("--patience", "N", &o.patience, 1, 1 << 24, "early stop after N steps without a better held-out "
                    "loss (default 300)"),
        ARB_OPT_DOUBLE("--lr", "X", &o.lr, 1e-9, 10, "peak learning rate (default 3e-3)"),
        ARB_OPT_DOUBLE("--weight-decay", "X", &o.weight_decay, 0, 10, "AdamW decoupled decay (default 1e-2)"),
        ARB_OPT_DOUBLE("--lambda", "X", &o.lambda, 0, 100, "tail penalty weight (default 1)"),
        ARB_OPT_DOUBLE("--rho", "X", &o.rho, 1e-6, 1, "tail share of roots (default 0.1)"),
        ARB_OPT_DOUBLE("--heldout", "X", &o.heldout, 1e-6, 0.999, "share of prompts held out (default 0.25)"),
        ARB_OPT_U64("--seed", "S", &o.seed, "init and split seed (default 0)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"nde train", NULL,
                              "Train the NDE selector (docs/spec/drafting.md 11.6-11.7) on one verifier's offline "
                              "data; prompts are split into training and held-out, never rows.\n", opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    if (arb_nde_train(&o, stdout, &err)) {
        fprintf(stderr, "arbor nde train: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int cmd_eval(int argc, char **argv)
{
    arb_nde_eval_opts o = {.tag = "eval", .n_boot = 2000};
    const arb_opt opts[] = {
        {.name = "--db", .kind = ARB_OPT_KIND_STR, .dst = &o.db, .metavar = "FILE", .help = "data of arbor nde data",
         .required = true},
        {.name = "--selector", .kind = ARB_OPT_KIND_STR, .dst = &o.selector, .metavar = "FILE",
         .help = "trained selector (arbor nde train --out)", .required = true},
        ARB_OPT_STR("--tag", "NAME", &o.tag, "evaluation data set (default eval)"),
        ARB_OPT_INT("--boot", "N", &o.n_boot, 100, 1 << 20, "bootstrap resamples (default 2000)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"nde eval", NULL,
                              "DTE Tables 4-7 from exact expected block efficiency on evaluation prompts.\n", opts, 0,
                              0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    if (arb_nde_eval(&o, stdout, &err)) {
        fprintf(stderr, "arbor nde eval: %s\n", err.msg);
        return 1;
    }
    return 0;
}

int arb_cmd_nde_train(int argc, char **argv) { return cmd_train(argc, argv); }

int arb_cmd_nde(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "data"))
        return cmd_data(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train"))
        return cmd_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "eval"))
        return cmd_eval(argc - 1, argv + 1);
    const bool help = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
    fputs(usage, help ? stdout : stderr);
    if (help) { /* every verb's options too: one page documents the command */
        char h[] = "--help", d[] = "nde data", t[] = "nde train", e[] = "nde eval";
        char *av[3][2] = {{d, h}, {t, h}, {e, h}};
        fputc('\n', stdout);
        cmd_data(2, av[0]);
        fputc('\n', stdout);
        cmd_train(2, av[1]);
        fputc('\n', stdout);
        cmd_eval(2, av[2]);
    }
    return help ? 0 : 2;
}
