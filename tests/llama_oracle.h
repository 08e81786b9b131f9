/* llama_oracle.h — llama.cpp reference fixtures (tests/fixtures/<name>_ref.tsv: a prompt, then 64
 * greedy steps with llama.cpp's argmax and top-5 ids and logits) and the teacher-forced
 * comparison against them, shared by test_engine.c (SmolLM2) and test_engine_gemma3.c.
 * Test-only code: static functions, included once per test file, after engine_check.h. */
#ifndef ARB_TEST_LLAMA_ORACLE_H
#define ARB_TEST_LLAMA_ORACLE_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_check.h"

#define ORACLE_NEAR_TIE 0.5 /* llama.cpp top-2 margin under which the argmax may differ */

typedef struct oracle {
    int n_prompt;
    int32_t prompt[1024];
    int n_steps;
    int32_t argmax[64];
    int32_t top_id[64][5];
    float top_logit[64][5];
} oracle;

static void read_oracle(oracle *o, const char *name)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", root ? root : ".", name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    memset(o, 0, sizeof *o);
    static char line[16384];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "prompt\t", 7)) {
            char *p = line + 7;
            o->n_prompt = (int)strtol(p, &p, 10);
            cr_assert(o->n_prompt > 0 && o->n_prompt <= 1024);
            for (int i = 0; i < o->n_prompt; i++) {
                p++; /* tab or comma */
                o->prompt[i] = (int32_t)strtol(p, &p, 10);
            }
        } else if (!strncmp(line, "step\t", 5)) {
            char *p = line + 5;
            int s = (int)strtol(p, &p, 10);
            cr_assert(s == o->n_steps && s < 64, "fixture: step %d out of order", s);
            o->argmax[s] = (int32_t)strtol(p + 1, &p, 10);
            for (int k = 0; k < 5; k++) {
                o->top_id[s][k] = (int32_t)strtol(p + 1, &p, 10);
                o->top_logit[s][k] = strtof(p + 1, &p);
            }
            o->n_steps++;
        }
    }
    fclose(f);
    cr_assert_eq(o->n_steps, 64);
}

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int j = 1; j < n; j++)
        if (l[j] > l[b])
            b = j;
    return b;
}

/* Teacher-forced on the oracle's greedy sequence: per step, does our argmax agree, and how
   far are our logits for the oracle's top-5 ids. */
typedef struct oracle_cmp {
    int agree;     /* steps whose argmax equals the oracle's */
    int near_miss; /* disagreeing steps where the oracle's top-2 margin < ORACLE_NEAR_TIE */
    double max_d;  /* max |dlogit| over 64 steps x top-5 */
    int worst_step;
} oracle_cmp;

static oracle_cmp oracle_compare(arb_model *m, const oracle *o, int n_vocab)
{
    oracle_cmp r = {.worst_step = -1};
    arb_ctx *c = check_ctx(m, 1024, 512, 0, false);
    const size_t V = (size_t)n_vocab;
    float *lg = malloc(sizeof(float) * V * (size_t)o->n_prompt), *l1 = malloc(sizeof(float) * V);
    cr_assert(lg && l1);
    check_prefill(c, o->prompt, o->n_prompt, lg);
    const float *cur = lg + (size_t)(o->n_prompt - 1) * V;
    const int32_t root = -1;
    for (int s = 0; s < 64; s++) {
        if (argmax(cur, n_vocab) == o->argmax[s])
            r.agree++;
        else if (o->top_logit[s][0] - o->top_logit[s][1] < ORACLE_NEAR_TIE)
            r.near_miss++;
        for (int k = 0; k < 5; k++) {
            const double d = fabs((double)cur[o->top_id[s][k]] - o->top_logit[s][k]);
            if (d > r.max_d)
                r.max_d = d, r.worst_step = s;
        }
        check_eval(c, &o->argmax[s], &root, 1, l1, NULL);
        check_commit_chain(c, 1);
        cur = l1;
    }
    free(lg);
    free(l1);
    arb_ctx_free(c);
    return r;
}

#endif
