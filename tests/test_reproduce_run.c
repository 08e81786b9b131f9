/* test_reproduce_run.c — `arbor reproduce` end to end on the default model (model suite; skips
 * without the model or $ARBOR_DATA): claims pointed at configs/ci.json (2 HumanEval prompts)
 * run through the runner, every cell gets data and a verdict, the JSON is what --no-run
 * computes again from the same database (deterministic), and a claim naming a method its
 * config lacks is refused before anything runs. The full smoke, `arbor reproduce goose
 * --limit 2 --max-new 32`, is a documented command (docs/reproduce.md), not a test: minutes. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "default_model.h"

static char dir[256], bin[1024];

static void setup(void)
{
    ARB_TEST_NEED_MODEL_AND_DATA();
    cr_assert(getenv("ARBOR_BUILD_ROOT") && getenv("ARBOR_SOURCE_ROOT"), "run through meson test");
    snprintf(bin, sizeof bin, "%s/harness/arbor", getenv("ARBOR_BUILD_ROOT"));
    snprintf(dir, sizeof dir, "/tmp/arb_test_reproduce_XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static void write_claims(const char *b)
{
    char path[512];
    snprintf(path, sizeof path, "%s/claims.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    fprintf(f, "{\"claims\": [\n"
               " {\"id\": \"c1\", \"paper\": \"goose\", \"text\": \"t\", \"kind\": \"order\", \"paper_text\": \"p\",\n"
               "  \"config\": \"%s/configs/ci.json\", \"a\": \"GOOSE\", \"b\": [\"%s\", \"TR\"]},\n"
               " {\"id\": \"syn\", \"paper\": \"goose\", \"text\": \"t\", \"kind\": \"ratio\", \"paper_text\": \"p\",\n"
               "  \"config\": \"%s/configs/ci.json\", \"a\": \"GOOSE\", \"b\": [\"PLD\", \"TR\"],\n"
               "  \"paper_rows\": {\"table\": \"table3\", \"model\": \"Qwen3-8B\"}},\n"
               " {\"id\": \"e4\", \"paper\": \"goose\", \"text\": \"t\", \"kind\": \"bound\", \"paper_text\": \"p\",\n"
               "  \"config\": \"%s/configs/ci.json\", \"a\": \"GOOSE\"}]}\n", root, b, root, root);
    fclose(f);
}

static int reproduce(const char *extra, const char *json)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' reproduce goose --claims '%s/claims.json' --db '%s/r.db' --json '%s/%s' --quiet %s"
             " > '%s/out.md' 2> '%s/err.txt'", bin, dir, dir, dir, json, extra, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s missing", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

Test(reproduce_run, ci_config_end_to_end_and_deterministic, .init = setup, .fini = teardown, .timeout = 900)
{
    write_claims("PLD");
    cr_assert_eq(reproduce("--max-new 16", "a.json"), 0, "%s", slurp("err.txt"));
    char *a = slurp("a.json"), *md = slurp("out.md");
    cr_assert(strstr(md, "| c1 | humaneval vs PLD |") != NULL, "%s", md);
    cJSON *j = cJSON_Parse(a);
    cr_assert_not_null(j);
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "claims")) {
        const cJSON *cell;
        cJSON_ArrayForEach(cell, cJSON_GetObjectItem(c, "cells")) {
            cr_assert_str_neq(cJSON_GetObjectItem(cell, "verdict")->valuestring, "missing", "%s", a);
            cr_assert_eq(cJSON_GetObjectItem(cell, "n")->valueint, 2, "ci.json: 2 prompts");
            n++;
        }
    }
    cr_assert_eq(n, 4, "c1: 2 cells, syn: 1, e4: 1");
    cJSON_Delete(j);
    /* --no-run on the same database gives the same JSON (resampling is seeded) */
    cr_assert_eq(reproduce("--max-new 16 --no-run", "b.json"), 0, "%s", slurp("err.txt"));
    char *b = slurp("b.json");
    cr_assert_str_eq(a, b);
    free(a), free(b), free(md);
}

Test(reproduce_run, unknown_method_is_refused_before_running, .init = setup, .fini = teardown)
{
    write_claims("NoSuchMethod");
    cr_assert_eq(reproduce("--max-new 16", "a.json"), 2);
    char *err = slurp("err.txt");
    cr_assert(strstr(err, "claim c1: method \"NoSuchMethod\" is not a method id of") != NULL, "%s", err);
    struct stat sb;
    char db[512];
    snprintf(db, sizeof db, "%s/r.db", dir);
    cr_assert_neq(stat(db, &sb), 0, "nothing ran");
    free(err);
}

/* A config whose method loads a heads file that is not there (a fresh machine before `arbor
   train`): its claims are untestable with the file named, nothing runs, the exit status is 0. */
Test(reproduce_run, missing_heads_file_makes_the_claim_untestable, .init = setup, .fini = teardown)
{
    char path[512];
    snprintf(path, sizeof path, "%s/heads.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "{\"name\": \"heads-missing\", \"models\": [{\"id\": \"m\", \"path\": \"default\"}],\n"
               " \"datasets\": [{\"name\": \"humaneval\", \"limit\": 1, \"max_new_tokens\": 8}],\n"
               " \"methods\": [{\"id\": \"AR\", \"preset\": \"ar\"},\n"
               "   {\"id\": \"Hydra\", \"preset\": \"hydra\", \"heads\": \"no-such-heads.gguf\"}]}\n");
    fclose(f);
    snprintf(path, sizeof path, "%s/claims.json", dir);
    cr_assert((f = fopen(path, "w")));
    fprintf(f, "{\"claims\": [{\"id\": \"h\", \"paper\": \"goose\", \"text\": \"t\", \"kind\": \"order\",\n"
               " \"paper_text\": \"p\", \"config\": \"%s/heads.json\", \"a\": \"Hydra\", \"b\": [\"AR\"]}]}\n", dir);
    fclose(f);
    cr_assert_eq(reproduce("", "a.json"), 0, "%s", slurp("err.txt"));
    char *a = slurp("a.json"), *err = slurp("err.txt");
    cJSON *j = cJSON_Parse(a);
    cr_assert_not_null(j, "%s", a);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "claims"), 0);
    cr_assert_not_null(c, "%s", a);
    cr_assert_str_eq(cJSON_GetObjectItem(c, "verdict")->valuestring, "untestable", "%s", a);
    cr_assert(strstr(a, "no-such-heads.gguf") != NULL, "the reason names the file: %s", a);
    cr_assert(strstr(err, "skipping") != NULL, "%s", err);
    struct stat sb;
    snprintf(path, sizeof path, "%s/r.db", dir);
    cr_assert_neq(stat(path, &sb), 0, "nothing ran");
    cJSON_Delete(j);
    free(a), free(err);
}
