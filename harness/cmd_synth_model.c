/* cmd_synth_model.c — `arbor synth-model`: a random-weight GGUF of a real model shape
 * (harness/synth_model.h), the timing model for GPU benchmarks. */
#include <stdio.h>

#include "cli.h"
#include "opts.h"
#include "synth_model.h"

static const char description[] =
    "Writes a GGUF of shape S with random weights of block type T (every matrix; norms F32).\n"
    "A timing model only (`arbor bench engine --model PATH`): the weights are noise.\n";

int arb_cmd_synth_model(int argc, char **argv)
{
    const char *shape_name = NULL, *type_name = "q4_0", *out = NULL;
    uint64_t seed = 1;
    int layers = 0;
    bool f32ref = false;
    const arb_opt opts[] = {
        {.name = "--shape", .kind = ARB_OPT_KIND_STR, .dst = &shape_name, .metavar = "S", .required = true,
         .help = "llama-1b (Llama-3.2-1B), llama-3b (Llama-3.2-3B), llama-8b (Llama-3.1-8B), "
                 "qwen2-7b (Qwen2.5-7B, with q/k/v biases), smollm2-135m"},
        ARB_OPT_STR("--type", "T", &type_name, ARB_SYNTH_TYPES " (default q4_0)"),
        {.name = "--out", .kind = ARB_OPT_KIND_STR, .dst = &out, .metavar = "PATH", .required = true,
         .help = "the GGUF to write"},
        ARB_OPT_U64("--seed", "N", &seed, "weight seed (default 1)"),
        ARB_OPT_INT("--layers", "N", &layers, 1, 1 << 20,
                    "keep only the first N blocks (a smaller file with the real per-layer shape)"),
        ARB_OPT_FLAG("--f32-reference", &f32ref, "the same random blocks written dequantized (F32): a float reference"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"synth-model", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    const int rc = arb_synth_model_write(shape_name, type_name, layers, seed, out, true, f32ref, &err);
    if (rc)
        fprintf(stderr, "arbor synth-model: %s\n", err.msg);
    return rc == ARB_E_INVAL ? 2 : rc ? 1 : 0;
}
