/* default_model.h — where the tests find the default model: $ARBOR_MODEL, else the cache
 * ($ARBOR_CACHE, else ~/.cache/arbor) that `arbor fetch-model` fills. One place, so every
 * model-suite test skips or runs on the same file. */
#ifndef ARB_TEST_DEFAULT_MODEL_H
#define ARB_TEST_DEFAULT_MODEL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Writes the path into path[cap]; true when the file exists. */
static inline bool arb_test_default_model(char *path, size_t cap)
{
    const char *env = getenv("ARBOR_MODEL"), *cache = getenv("ARBOR_CACHE"), *home = getenv("HOME");
    if (env && *env)
        snprintf(path, cap, "%s", env);
    else if (cache && *cache)
        snprintf(path, cap, "%s/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
    else
        snprintf(path, cap, "%s/.cache/arbor/models/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
    struct stat st;
    return stat(path, &st) == 0;
}

/* In a Criterion test or fixture: skip unless the default model and $ARBOR_DATA are there. */
#define ARB_TEST_NEED_MODEL_AND_DATA()                                                        \
    do {                                                                                   \
        char need_path_[2048];                                                             \
        if (!arb_test_default_model(need_path_, sizeof need_path_))                        \
            cr_skip("default model not found (%s): run `arbor fetch-model`", need_path_);  \
        if (!getenv("ARBOR_DATA"))                                                         \
            cr_skip("ARBOR_DATA not set: no prompts to run");                              \
    } while (0)

#endif
