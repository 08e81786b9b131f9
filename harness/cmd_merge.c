/* cmd_merge.c — `arbor merge`: combine shard databases into one. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "store.h"

static const char description[] =
    "Copies every run, session, prompt, step and token row of the inputs into --out (created\n"
    "if absent, added to if present). Rows are keyed by (run_key, prompt_id), so shards of one\n"
    "config (`arbor run --shard i/N`) combine into exactly what an unsharded run writes; a\n"
    "prompt present twice with different generated tokens is an error (the shards disagree).\n";

int arb_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const arb_opt opts[] = {
        {.name = "--out", .alias = "-o,--output", .kind = ARB_OPT_KIND_STR, .dst = &out, .metavar = "ALL.db",
         .required = true, .help = "the merged database"},
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"merge", "A.db B.db ...", description, opts, 1, 256};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    for (int i = 0; i < pos.n; i++)
        if (!strcmp(pos.v[i], out)) {
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
    for (int i = 0; i < pos.n && !rc; i++) {
        int n = 0;
        if ((rc = arb_store_merge_from(st, pos.v[i], &n, &err)))
            fprintf(stderr, "arbor merge: %s\n", err.msg);
        else
            fprintf(stderr, "arbor merge: %s: %d prompts added\n", pos.v[i], n), total += n;
    }
    arb_store_close(st);
    if (!rc)
        printf("%s: %d prompts added from %d databases\n", out, total, pos.n);
    return rc ? 1 : 0;
}
