/* cmd_datasets.c — `arbor datasets`: list the benchmark datasets and check the local files
 * against the manifest (sha256, size, record count); `arbor datasets show` prints prompts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dataset.h"
#include "sha256.h"

static const char usage[] =
    "usage: arbor datasets [--data DIR] [--verify]\n"
    "       arbor datasets show NAME [--split SPLIT] [--limit N] [--data DIR]\n"
    "\n"
    "Lists every benchmark dataset: name, records (manifest), file, and whether the local\n"
    "file matches the manifest (size and sha256). --verify also parses every record and\n"
    "checks the record count. Exit status 1 if a file is present but corrupt; missing files\n"
    "are listed (run datasets/fetch) but are not an error.\n"
    "\n"
    "show prints the formatted user turns of the first N records (default 3, 0 = all) of\n"
    "split SPLIT (default \"test\"; \"all\"; mbpp: prompt/validation/train; or a category).\n"
    "\n"
    "DIR defaults to $ARBOR_DATA, else $ARBOR_CACHE/data or ~/.cache/arbor/data.\n";

static int bad_flag(const char *what, const char *arg)
{
    fprintf(stderr, "arbor datasets: %s '%s'\n%s", what, arg, usage);
    return 2;
}

static int show(int argc, char **argv, const char *data_flag)
{
    const char *name = NULL, *split = NULL, *data = data_flag;
    long limit = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--split") && i + 1 < argc) {
            split = argv[++i];
        } else if (!strcmp(argv[i], "--data") && i + 1 < argc) {
            data = argv[++i];
        } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            char *end;
            errno = 0;
            limit = strtol(argv[++i], &end, 10);
            if (*end || errno || limit < 0 || end == argv[i])
                return bad_flag("--limit needs an integer >= 0, got", argv[i]);
        } else if (argv[i][0] == '-' || name) {
            return bad_flag(argv[i][0] == '-' ? "unknown option (or missing value)"
                                              : "unexpected argument", argv[i]);
        } else {
            name = argv[i];
        }
    }
    if (!name) {
        fprintf(stderr, "arbor datasets: show needs a dataset NAME (see `arbor datasets`)\n%s", usage);
        return 2;
    }
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

int arb_cmd_datasets(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    const char *data = NULL;
    bool verify = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "show"))
            return show(argc - i, argv + i, data);
        if (!strcmp(argv[i], "--verify"))
            verify = true;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else
            return bad_flag(argv[i][0] == '-' ? "unknown option (or missing value)"
                                              : "unknown subcommand", argv[i]);
    }
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
