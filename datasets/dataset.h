/* dataset.h — benchmark prompt sets: load a dataset file, format each record's user turns.
 *
 * Data files live outside the repository, in a data directory: --data DIR, else $ARBOR_DATA,
 * else $ARBOR_CACHE/data, $XDG_CACHE_HOME/arbor/data or ~/.cache/arbor/data (datasets/fetch
 * fills it). One table (arb_dataset_list) holds, per dataset, the file, its manifest facts
 * (records, bytes, sha256, license) and how a record becomes user turns (id and category
 * fields, prompt template); datasets/README.md says why each prompt format was chosen.
 *
 *     arb_dataset *d = NULL; arb_err err = {0};
 *     if (arb_dataset_open(dir, "mbpp", NULL, &d, &err)) die(err.msg);  // split "test": 500
 *     for (size_t i = 0; i < arb_dataset_count(d); i++) {
 *         const arb_record *r = arb_dataset_get(d, i);
 *         for (int t = 0; t < r->n_turns; t++) chat_user(r->turns[t]);  // then the model's answer
 *     }
 *     arb_dataset_free(d);
 *
 * Errors name the file and line (JSON Lines, text lines) or array index (JSON arrays) and the field:
 * "/data/gsm8k/test.jsonl:17: expected string field \"question\", got number".
 * Thread-safety: an open dataset is read-only; share it freely. The table is const. Open
 * datasets from one thread at a time (cJSON records parse errors in a global).
 */
#ifndef ARB_DATASET_H
#define ARB_DATASET_H

#include <stddef.h>

#include "error.h"

typedef struct arb_dataset arb_dataset;

typedef struct arb_record {
    const char *id;            /* stable id from the data: task_id, question_id, id, else the 0-based index */
    const char *category;      /* category / subject / subfield, NULL when the dataset has none */
    int n_turns;               /* user turns, >= 1 (MT-Bench: 2; later turns follow the model's answer) */
    const char *const *turns;  /* [n_turns] formatted user messages, UTF-8, NUL-terminated */
} arb_record;

typedef struct arb_dataset_info {
    const char *name;          /* "humaneval", "mbpp", "sharegpt-90k", ... (what configs name) */
    const char *file;          /* relative to the data directory; .jsonl[.gz] = JSON Lines, .json = array,
                                  any other name = plain UTF-8 text, one record {"text": LINE} a line */
    size_t n_records;          /* records in the file (manifest; before split/filter) */
    size_t n_bytes;            /* file size (manifest) */
    const char *sha256;        /* hex digest of the file (manifest) */
    const char *license;       /* license of the data */
    const char *splits;        /* "test=11-510,all,...": first = default; "=lo-hi" keeps ids in range */
    const char *id_field;      /* string/integer field; NULL: the 0-based record index */
    const char *category_field; /* NULL: none; else category names are splits too */
    const char *turns_field;   /* array of strings, one turn each; NULL: one turn from `prompt` */
    const char *prompt;        /* turn template (syntax in dataset.c) */
    const char *keep_field, *keep_value; /* keep only records with keep_field == keep_value */
    const char *summary;       /* one line: what it is and what the prompt is */
} arb_dataset_info;

/* Every known dataset, in a fixed order; *n gets the count. Never NULL. */
const arb_dataset_info *arb_dataset_list(size_t *n);
/* The entry named `name`, or NULL. */
const arb_dataset_info *arb_dataset_find(const char *name);

/* Data directory: `flag` if non-empty, else $ARBOR_DATA, else the cache (see above).
   Only resolves the path; does not check that it exists. */
int arb_dataset_dir(const char *flag, char *buf, size_t cap, arb_err *err);

/* Load dataset `name` from data_dir. split: NULL/"" = the first listed ("test"; "train" for the training sets; for MBPP the
   task_id 11..510 test split); "all" = every record; mbpp also "prompt" (1..10),
   "validation" (511..600), "train" (601..974); datasets with categories also take a
   category name ("coding", "Algebra", ...). Errors: ARB_E_INVAL unknown name or split (the
   message lists the known ones), ARB_E_NOTFOUND missing dir or file (names the path, suggests
   datasets/fetch or ARBOR_DATA), ARB_E_FORMAT malformed content (file:line: field), ARB_E_IO,
   ARB_E_NOMEM. *out = NULL on failure. */
int arb_dataset_open(const char *data_dir, const char *name, const char *split, arb_dataset **out,
                     arb_err *err);
/* The same from the file's bytes in memory (plain, not gzip); label stands for the path in
   messages. For tests and the fuzz target (tests/fuzz/fuzz_dataset.c). */
int arb_dataset_open_buffer(const char *name, const char *split, const char *data, size_t n,
                            const char *label, arb_dataset **out, arb_err *err);
void arb_dataset_free(arb_dataset *d); /* NULL-safe */

size_t arb_dataset_count(const arb_dataset *d);               /* records after split/filter */
size_t arb_dataset_n_read(const arb_dataset *d);              /* records parsed from the file */
const arb_record *arb_dataset_get(const arb_dataset *d, size_t i); /* i < count, else NULL */
const arb_dataset_info *arb_dataset_get_info(const arb_dataset *d);

#endif
