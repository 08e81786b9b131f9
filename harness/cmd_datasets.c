/* cmd_datasets.c — `arbor datasets`: list the benchmark datasets and check the local files
 * against the manifest (sha256, size, record count); `arbor datasets show` prints prompts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dataset.h"
#include "opts.h"
#include "sha256.h"

static const char description[] =
    "Lists every benchmark dataset: name, records (manifest), file, and whether the local\n"
    "file matches the manifest (size and sha256). --verify also parses every record and\n"
    "checks the record count. Exit status 1 if a file is present but corrupt; missing files\n"
    "are listed (run datasets/fetch) but are not an error.\n"
    "\n"
    "`arbor datasets show NAME` prints the formatted user turns of the first --limit records\n"
    "(default 3, 0 = all) of split --split (default \"test\"; \"all\"; mbpp:\n"
    "prompt/validation/train; or a category).\n"
    "\n"
    "DIR defaults to $ARBOR_DATA, else $ARBOR_CACHE/data or ~/.cache/arbor/data.\n";

/* `arbor datasets show NAME`: the first `limit` records of a split. */
static int show(const char *name, const char *split, int limit, const char *data)
{
    char dir[4096];
    arb_err err = {0};
    arb_dataset *d = NULL;
    if (arb_dataset_dir(data, dir, sizeof dir, &err) || arb_dataset_open(dir, name, split, &d, &err)) {
        fprintf(stderr, "arbor datasets: %s\n", err.msg);
        return 1;
    }
    size_t n = arb_dataset_count(d);
    if (limit > 0 && (size_t)limit < n)
        n = (size_t)limit;
    const arb_dataset_info *in = arb_dataset_get_info(d);
    printf("# %s (split %s): %zu of %zu records (%zu in the file %s; license %s)\n", name,
           split ? split : "test", n, arb_dataset_count(d), arb_dataset_n_read(d), in->file,
           in->license);
    for (size_t i = 0; i < n; i++) {
        const arb_record *r = arb_dataset_get(d, i);
        printf("\n=== [%zu] id=%s", i, r->id);
        if (r->category)
            printf(" category=%s", r->category);
        printf(" turns=%d\n", r->n_turns);
        for (int t = 0; t < r->n_turns; t++)
            printf("--- user turn %d\n%s\n", t + 1, r->turns[t]);
    }
    arb_dataset_free(d);
    return 0;
}

/* `arbor datasets`: every manifest dataset and the state of its local file. */
static int list(const char *data, bool verify)
{
    char dir[4096];
    arb_err err = {0};
    if (arb_dataset_dir(data, dir, sizeof dir, &err)) {
        fprintf(stderr, "arbor datasets: %s\n", err.msg);
        return 1;
    }
    size_t n;
    const arb_dataset_info *list = arb_dataset_list(&n);
    int n_missing = 0, n_bad = 0;
    printf("data directory: %s\n\n%-14s %8s  %-8s  %s\n", dir, "name", "records", "status", "file");
    for (size_t i = 0; i < n; i++) {
        const arb_dataset_info *in = &list[i];
        char path[4096], hex[65], detail[1200] = "";
        const char *tag = "ok";
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, in->file) >= sizeof path) {
            fprintf(stderr, "arbor datasets: %s/%s: path too long\n", dir, in->file);
            return 1;
        }
        if (stat(path, &st)) {
            tag = "MISSING";
        } else if ((size_t)st.st_size != in->n_bytes) {
            tag = "CORRUPT";
            snprintf(detail, sizeof detail, "%lld bytes, manifest says %zu",
                     (long long)st.st_size, in->n_bytes);
        } else if (arb_sha256_file(path, hex, &err)) {
            tag = "CORRUPT";
            snprintf(detail, sizeof detail, "%s", err.msg);
        } else if (strcmp(hex, in->sha256)) {
            tag = "CORRUPT";
            snprintf(detail, sizeof detail, "sha256 %s, manifest says %s", hex, in->sha256);
        } else if (verify) {
            arb_dataset *d = NULL;
            if (arb_dataset_open(dir, in->name, "all", &d, &err)) {
                tag = "CORRUPT";
                snprintf(detail, sizeof detail, "%s", err.msg);
            } else if (arb_dataset_n_read(d) != in->n_records) {
                tag = "CORRUPT";
                snprintf(detail, sizeof detail, "%zu records parsed, manifest says %zu",
                         arb_dataset_n_read(d), in->n_records);
            } else {
                snprintf(detail, sizeof detail, "sha256 ok; %zu records parsed, %zu prompts",
                         arb_dataset_n_read(d), arb_dataset_count(d));
            }
            arb_dataset_free(d);
        }
        n_missing += !strcmp(tag, "MISSING");
        n_bad += !strcmp(tag, "CORRUPT");
        printf("%-14s %8zu  %-8s  %s\n", in->name, in->n_records, tag, in->file);
        if (*detail)
            printf("%35s%s\n", "", detail);
    }
    struct stat dst;
    if (n_missing == (int)n && (stat(dir, &dst) || !S_ISDIR(dst.st_mode)))
        printf("\ndata directory %s does not exist.", dir);
    if (n_missing)
        printf("\n%d of %zu files missing: run datasets/fetch (see datasets/README.md) or point "
               "ARBOR_DATA / --data at a directory that has them.\n", n_missing, n);
    if (n_bad)
        fprintf(stderr, "arbor datasets: %d file(s) present but corrupt (size, sha256 or records "
                "differ from the manifest); re-fetch them with datasets/fetch\n", n_bad);
    return n_bad ? 1 : 0;
}

typedef struct args {
    const char *data, *split; /* --data DIR, --split SPLIT (show) */
    int limit;                /* show: records shown, 0 = all */
    bool verify, have_split, have_limit;
} args;

/* argv into *a and the positionals into *pos; 0, or the exit status of a usage error
   (-1: --help). */
static int parse_args(int argc, char **argv, args *a, arb_opt_pos *pos)
{
    const arb_opt opts[] = {
        ARB_OPT_STR("--data", "DIR", &a->data, "dataset directory (default below)"),
        ARB_OPT_FLAG("--verify", &a->verify, "also parse every record and check the record count"),
        {.name = "--split", .kind = ARB_OPT_KIND_STR, .dst = &a->split, .metavar = "SPLIT", .seen = &a->have_split,
         .help = "show: the split (default test)"},
        {.name = "--limit", .kind = ARB_OPT_KIND_INT, .dst = &a->limit, .lo = 0, .hi = 1 << 30, .metavar = "N",
         .seen = &a->have_limit, .help = "show: records shown (default 3, 0 = all)"},
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"datasets", "[show NAME]", description, opts, 0, 2};
    const int prc = arb_opts_parse(&cmd, argc, argv, pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    const bool is_show = pos->n > 0 && !strcmp(pos->v[0], "show");
    const char *why = pos->n > 0 && !is_show ? "unknown subcommand (only `show NAME`)"
                    : is_show && pos->n < 2 ? "show needs a dataset NAME (see `arbor datasets`)"
                    : is_show && a->verify ? "--verify applies to the listing, not to show"
                    : !is_show && (a->have_split || a->have_limit) ? "--split and --limit apply to show"
                    : NULL;
    if (why) {
        fprintf(stderr, "arbor datasets: %s%s%s%s\n", why, pos->n ? " ('" : "", pos->n ? pos->v[0] : "",
                pos->n ? "')" : "");
        arb_opts_usage(&cmd, stderr);
        return 2;
    }
    return 0;
}

int arb_cmd_datasets(int argc, char **argv)
{
    args a = {.limit = 3};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = parse_args(argc, argv, &a, &pos);
    if (prc)
        return prc < 0 ? 0 : prc;
    if (pos.n)
        return show(pos.v[1], a.split, a.limit, a.data);
    return list(a.data, a.verify);
}
