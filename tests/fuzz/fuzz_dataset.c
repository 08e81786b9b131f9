/* fuzz_dataset.c — libFuzzer target for the dataset record parsers (datasets/dataset.c:
 * JSON Lines, JSON arrays, plain-text lines, field paths, turn templates, id/category/keep fields, splits).
 *
 * Input: byte 0 picks the catalog entry (mod the catalog size), byte 1 the split (even:
 * the default, odd: "all"), the rest is the file's content. An accepted dataset is walked
 * record by record; a rejection must come with a message and no dataset.
 * Build and run: tests/fuzz/run.sh; seeds come from real dataset lines (make_text_seeds.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

#define CHECK(x) ((x) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t n_ds;
    const arb_dataset_info *all = arb_dataset_list(&n_ds);
    const arb_dataset_info *in = &all[data[0] % n_ds];
    const char *split = data[1] & 1 ? "all" : NULL;
    arb_dataset *d = NULL;
    arb_err err = {0};
    int rc = arb_dataset_open_buffer(in->name, split, (const char *)data + 2, size - 2, "fuzz",
                                     &d, &err);
    if (rc != ARB_OK) {
        CHECK(d == NULL && err.msg[0] && rc < 0);
        return 0;
    }
    CHECK(arb_dataset_count(d) <= arb_dataset_n_read(d));
    volatile size_t sink = 0;
    for (size_t i = 0; i < arb_dataset_count(d); i++) {
        const arb_record *r = arb_dataset_get(d, i);
        CHECK(r && r->id && r->n_turns >= 1 && r->turns);
        sink += strlen(r->id) + (r->category ? strlen(r->category) : 0);
        for (int t = 0; t < r->n_turns; t++)
            sink += strlen(r->turns[t]);
    }
    CHECK(arb_dataset_get(d, arb_dataset_count(d)) == NULL);
    (void)sink;
    arb_dataset_free(d);
    return 0;
}
