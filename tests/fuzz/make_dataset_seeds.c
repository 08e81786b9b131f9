/* make_dataset_seeds.c — seeds for fuzz_dataset from the data directory, made at run time so
 * that no dataset text is committed. usage: make_dataset_seeds DATA_DIR OUT_DIR
 * Per catalog entry with its file present: the first 3 records (JSON Lines) or the first 8 KiB
 * when that holds the whole array, behind the 2-byte header fuzz_dataset reads (entry, split). */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "dataset.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_dataset_seeds DATA_DIR OUT_DIR\n");
        return 2;
    }
    size_t n;
    const arb_dataset_info *all = arb_dataset_list(&n);
    static char buf[1 << 16];
    int made = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], all[i].file);
        gzFile f = gzopen(path, "rb");
        if (!f)
            continue;
        int got = gzread(f, buf, sizeof buf - 1);
        gzclose(f);
        if (got <= 0)
            continue;
        size_t len = (size_t)got;
        if (strstr(all[i].file, ".jsonl")) { /* keep 3 whole lines */
            size_t k = 0;
            for (int lines = 0; k < len && lines < 3; k++)
                lines += buf[k] == '\n';
            len = k;
        } else if (len > 8192) {
            continue; /* a cut array is no valid seed */
        }
        for (int split = 0; split < 2; split++) {
            snprintf(path, sizeof path, "%s/%s-%d", argv[2], all[i].name, split);
            FILE *o = fopen(path, "wb");
            unsigned char hdr[2] = {(unsigned char)i, (unsigned char)split};
            if (!o || fwrite(hdr, 1, 2, o) != 2 || fwrite(buf, 1, len, o) != len || fclose(o)) {
                fprintf(stderr, "make_dataset_seeds: cannot write %s\n", path);
                return 1;
            }
            made++;
        }
    }
    printf("make_dataset_seeds: %d seeds from %s\n", made, argv[1]);
    return 0;
}
