/* cmd_synth_model.c — `arbor synth-model`: a random-weight GGUF of a real model shape
 * (harness/synth_model.h), the timing model for GPU benchmarks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "synth_model.h"

static const char usage[] =
    "usage: arbor synth-model --shape S --type T --out PATH [--seed N] [--layers N] [--f32-reference]\n"
    "\n"
    "Writes a GGUF of shape S with random weights of block type T (every matrix; norms F32).\n"
    "A timing model only (`arbor bench engine --model PATH`): the weights are noise.\n"
    "  --shape   llama-1b (Llama-3.2-1B), llama-3b (Llama-3.2-3B), llama-8b (Llama-3.1-8B),\n"
    "            qwen2-7b (Qwen2.5-7B, with q/k/v biases), smollm2-135m\n"
    "  --type    q4_0 q4_1 q8_0 q4_k q6_k f16 (default q4_0)\n"
    "  --layers  keep only the first N blocks (a smaller file with the real per-layer shape)\n"
    "  --f32-reference  the same random blocks written dequantized (F32): a float reference\n";

int arb_cmd_synth_model(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    const char *shape_name = NULL, *type_name = "q4_0", *out = NULL;
    unsigned long long seed = 1;
    int layers = 0;
    bool f32ref = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--f32-reference")) {
            f32ref = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "arbor synth-model: %s needs a value\n%s", a, usage);
            return 2;
        }
        char *e = NULL;
        if (!strcmp(a, "--shape")) shape_name = v;
        else if (!strcmp(a, "--type")) type_name = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--seed")) { seed = strtoull(v, &e, 10); if (!*v || *e) goto bad; }
        else if (!strcmp(a, "--layers")) { layers = (int)strtol(v, &e, 10); if (!*v || *e || layers < 1) goto bad; }
        else {
            fprintf(stderr, "arbor synth-model: unknown option '%s'\n%s", a, usage);
            return 2;
        }
        i++;
        continue;
    bad:
        fprintf(stderr, "arbor synth-model: %s: '%s' is not a valid number\n", a, v);
        return 2;
    }
    arb_err err = {0};
    if (!out) {
        fprintf(stderr, "arbor synth-model: --out missing\n%s", usage);
        return 2;
    }
    const int rc = arb_synth_model_write(shape_name, type_name, layers, seed, out, true, f32ref, &err);
    if (rc)
        fprintf(stderr, "arbor synth-model: %s\n", err.msg);
    return rc == ARB_E_INVAL ? 2 : rc ? 1 : 0;
}
