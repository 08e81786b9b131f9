/* model_fixture.h — the default model and one 2048-token context, loaded by `setup` and freed
 * by `teardown` (Criterion .init/.fini) for the model-suite tests that drive drafters directly
 * (test_draft_model.c, test_eagle2.c). M stays NULL when the model is absent: each test then
 * skips with cr_skip_test. */
#ifndef ARB_TEST_MODEL_FIXTURE_H
#define ARB_TEST_MODEL_FIXTURE_H

#include <criterion/criterion.h>

#include "genutil.h"
#include "modelfetch.h"

static arb_model *M;
static arb_ctx *C;
static char model_path[4096];

static void setup(void)
{
    arb_err err = {0};
    if (arb_model_resolve("default", model_path, sizeof model_path, &err))
        return;
    if (arb_gen_load(model_path, "cpu", 0, 2048, &M, &C, &err))
        cr_log_warn("model load failed: %s", err.msg);
}

static void teardown(void)
{
    arb_ctx_free(C);
    arb_model_free(M);
}

#endif
