/* cmd_merge.c — `arbor merge`: combine shard databases into one. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store.h"

static const char usage[] =
    "usage: arbor merge A.db B.db ... -o ALL.db\n"
    "\n"
    "Copies every run, session, prompt, step and token row of the inputs into ALL.db (created\n"
    "if absent, added to if present). Rows are keyed by (run_key, prompt_id), so shards of one\n"
    "config (`arbor run --shard i/N`) combine into exactly what an unsharded run writes; a\n"
    "prompt present twice with different generated tokens is an error (the shards disagree).\n";

int arb_cmd_merge(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    const char *out = NULL;
    const char *in[256];
    int n_in = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "arbor merge: %s needs a path\n", argv[i]);
                return 2;
            }
            out = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "arbor merge: unknown option '%s'\n%s", argv[i], usage);
            return 2;
        } else if (n_in < 256) {
            in[n_in++] = argv[i];
        }
    }
    if (!out || n_in == 0) {
        fprintf(stderr, "arbor merge: need at least one input and -o OUTPUT\n%s", usage);
        return 2;
    }
    for (int i = 0; i < n_in; i++)
        if (!strcmp(in[i], out)) {
            fprintf(stderr, "arbor merge: %s is both an input and the output\n", out);
            return 2;
        }
    arb_store *st = NULL;
    arb_err err = {0};
    if (arb_store_open(out, &st, &err)) {
        fprintf(stderr, "arbor merge: %s\n", err.msg);
        return 1;
    }
    int rc = 0, total = 0;
    for (int i = 0; i < n_in && !rc; i++) {
        int n = 0;
        if ((rc = arb_store_merge_from(st, in[i], &n, &err)))
            fprintf(stderr, "arbor merge: %s\n", err.msg);
        else
            fprintf(stderr, "arbor merge: %s: %d prompts added\n", in[i], n), total += n;
    }
    arb_store_close(st);
    if (!rc)
        printf("%s: %d prompts added from %d databases\n", out, total, n_in);
    return rc ? 1 : 0;
}
