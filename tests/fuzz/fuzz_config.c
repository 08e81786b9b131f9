/* fuzz_config.c — libFuzzer target for the JSON config parser (harness/config.c).
 *
 * Parses the input as a config with arb_config_parse and, when it is accepted, touches what
 * the runner would: every expanded method (label, sweep JSON, resolved spec JSON) and the
 * canonical cell JSON and run key of every cell. A rejection must come with a message and
 * no config; anything else that goes wrong is an ASan/UBSan report or an abort here.
 * Build and run: tests/fuzz/run.sh (clang, -fsanitize=fuzzer,address,undefined).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define CHECK(x) ((x) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = malloc(size + 1);
    if (!json)
        return 0;
    memcpy(json, data, size);
    json[size] = 0;
    arb_config *c = NULL;
    arb_err err = {0};
    int rc = arb_config_parse(json, "fuzz.json", &c, &err);
    free(json);
    if (rc != ARB_OK) {
        CHECK(c == NULL && err.msg[0] && rc < 0);
        return 0;
    }
    CHECK(c->n_models > 0 && c->n_datasets > 0 && c->n_methods > 0 && c->n_sampling > 0 &&
          c->n_seeds > 0 && c->name && c->name[0]);
    for (int m = 0; m < c->n_methods; m++) {
        CHECK(c->methods[m].label && c->methods[m].sweep_json && c->methods[m].base_id);
        char *spec = arb_config_spec_json(&c->methods[m].spec);
        CHECK(spec != NULL);
        free(spec);
    }
    /* Cells: bounded, since a sweep may expand to thousands. */
    long budget = 64;
    for (int m = 0; m < c->n_methods && budget > 0; m++)
        for (int s = 0; s < c->n_sampling && budget > 0; s++, budget--) {
            char *cell = NULL, key[17];
            int mo = budget % c->n_models, d = budget % c->n_datasets, sd = budget % c->n_seeds;
            CHECK(arb_config_cell(c, mo, d, m, s, sd, NULL, &cell, key, &err) == ARB_OK);
            CHECK(cell && strlen(key) == 16);
            free(cell);
        }
    arb_config_free(c);
    return 0;
}
