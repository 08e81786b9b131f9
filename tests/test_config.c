/* test_config.c — experiment configs: the shipped configs and a fixture load; sweeps expand
 * to their cartesian product; every kind of bad input is an error naming file and JSON path;
 * run keys depend on exactly the properties that change results. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *root_or_skip(void)
{
    const char *r = getenv("ARBOR_SOURCE_ROOT");
    if (!r)
        cr_skip("ARBOR_SOURCE_ROOT not set (run through meson test)");
    return r;
}

static arb_config *load(const char *rel)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", root_or_skip(), rel);
    arb_config *c = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_config_load(path, &c, &err), ARB_OK, "%s: %s", rel, err.msg);
    return c;
}

Test(config, shipped_configs_load)
{
    const char *files[] = {"configs/ci.json", "configs/quickstart.json", "configs/goose-table1.json",
                           "configs/goose-table2.json", "configs/goose-table3.json",
                           "configs/goose-fig4b.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        arb_config *c = load(files[i]);
        cr_assert_gt(c->n_methods, 0);
        cr_assert_eq(c->n_seeds, 1);
        cr_assert_eq(c->seeds[0], 0, "%s: the papers use seed 0", files[i]);
        arb_config_free(c);
    }
    /* and every other config the project ships, so a new one cannot go stale unnoticed */
    char pat[2048];
    snprintf(pat, sizeof pat, "%s/configs/*.json", root_or_skip());
    glob_t g;
    cr_assert_eq(glob(pat, 0, NULL, &g), 0, "%s", pat);
    cr_assert_gt(g.gl_pathc, sizeof files / sizeof files[0]);
    const size_t skip = strlen(root_or_skip()) + 1;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        arb_config *c = load(g.gl_pathv[i] + skip);
        cr_assert_gt(c->n_methods, 0, "%s", g.gl_pathv[i]);
        arb_config_free(c);
    }
    globfree(&g);
    arb_config *c = load("configs/goose-fig4b.json");
    cr_assert_eq(c->n_methods, 5 + 4 + 3 + 3);
    cr_assert_str_eq(c->methods[0].label, "GOOSE-B[budget=20]");
    arb_config_free(c);
}

Test(config, fixture_expands_sweeps)
{
    arb_config *c = load("tests/fixtures/config_sweep.json");
    cr_assert_str_eq(c->name, "sweep-fixture");
    cr_assert_eq(c->n_models, 2);
    cr_assert_eq(c->models[0].threads, 2);
    cr_assert_eq(c->models[1].n_ctx, 2048);
    cr_assert_eq(c->n_datasets, 2);
    cr_assert_str_eq(c->datasets[0].split, "coding");
    cr_assert_eq(c->datasets[1].limit, 0);
    cr_assert_eq(c->datasets[1].max_new_tokens, 512, "default generation limit");
    /* 2 x 3 GOOSE points + AR + 2 Sequoia points + PLD; AR moves first */
    cr_assert_eq(c->n_methods, 6 + 1 + 2 + 1);
    cr_assert_str_eq(c->methods[0].label, "AR");
    cr_assert_str_eq(c->methods[1].label, "GOOSE[budget=20,rho=0.25]");
    cr_assert_str_eq(c->methods[6].label, "GOOSE[budget=40,rho=0.75]");
    cr_assert_eq(c->methods[6].spec.budget, 40);
    cr_assert_float_eq(c->methods[6].spec.rho, 0.75, 0);
    cr_assert_str_eq(c->methods[6].sweep_json, "{\"budget\":40,\"rho\":0.75}");
    cr_assert_str_eq(c->methods[6].base_id, "GOOSE");
    cr_assert_str_eq(c->methods[7].label, "Seq[sequoia_p=0.6/0.3]");
    cr_assert_float_eq(c->methods[8].spec.sequoia_p[2], 0.2, 0);
    cr_assert_eq(c->methods[9].spec.max_draft, 8);
    cr_assert_str_eq(c->methods[9].sweep_json, "{}");
    /* sampling: 1 + 2 points; seeds; settings */
    cr_assert_eq(c->n_sampling, 3);
    cr_assert_float_eq(c->sampling[2].temperature, 1.0, 0);
    cr_assert_float_eq(c->sampling[2].top_p, 0.9, 0);
    cr_assert_eq(c->n_seeds, 3);
    cr_assert_eq(c->warmup, 0);
    cr_assert_eq(c->repeats, 3);
    cr_assert(!c->chat);
    arb_config_free(c);
}

Test(config, run_keys_follow_the_config_properties)
{
    arb_config *c = load("tests/fixtures/config_sweep.json");
    arb_err err = {0};
    char *j[6];
    char k[6][17];
    cr_assert_eq(arb_config_cell(c, 0, 0, 1, 0, 0, "aa", &j[0], k[0], &err), ARB_OK);
    cr_assert_eq(arb_config_cell(c, 0, 0, 1, 0, 0, "aa", &j[1], k[1], &err), ARB_OK);
    cr_assert_eq(arb_config_cell(c, 0, 0, 1, 0, 1, "aa", &j[2], k[2], &err), ARB_OK); /* seed */
    cr_assert_eq(arb_config_cell(c, 0, 0, 2, 0, 0, "aa", &j[3], k[3], &err), ARB_OK); /* method */
    cr_assert_eq(arb_config_cell(c, 0, 0, 1, 0, 0, "bb", &j[4], k[4], &err), ARB_OK); /* model file */
    cr_assert_eq(arb_config_cell(c, 0, 1, 1, 0, 0, "aa", &j[5], k[5], &err), ARB_OK); /* dataset */
    cr_assert_str_eq(k[0], k[1]);
    cr_assert_str_eq(j[0], j[1]);
    cr_assert_eq(strlen(k[0]), 16);
    for (int a = 1; a < 6; a++)
        for (int b = a + 1; b < 6; b++)
            cr_assert_str_neq(k[a], k[b], "cells %d and %d share a key", a, b);
    cr_assert(strstr(j[0], "\"budget\":20") && strstr(j[0], "\"sha256\":\"aa\"") &&
              strstr(j[0], "\"max_new_tokens\":64"), "%s", j[0]);
    for (int a = 0; a < 6; a++)
        free(j[a]);
    arb_config_free(c);
    /* limit is not part of the key: raising it resumes the same runs */
    const char *a = "{\"name\":\"x\",\"models\":[{\"id\":\"m\",\"path\":\"p\"}],"
                    "\"datasets\":[{\"name\":\"gsm8k\",\"limit\":%d}],\"methods\":[{\"id\":\"AR\"}]}";
    char buf[512];
    arb_config *c1, *c2;
    snprintf(buf, sizeof buf, a, 5);
    cr_assert_eq(arb_config_parse(buf, "a.json", &c1, &err), ARB_OK, "%s", err.msg);
    snprintf(buf, sizeof buf, a, 50);
    cr_assert_eq(arb_config_parse(buf, "b.json", &c2, &err), ARB_OK);
    char *x, *y, kx[17], ky[17];
    cr_assert_eq(arb_config_cell(c1, 0, 0, 0, 0, 0, NULL, &x, kx, &err), ARB_OK);
    cr_assert_eq(arb_config_cell(c2, 0, 0, 0, 0, 0, NULL, &y, ky, &err), ARB_OK);
    cr_assert_str_eq(kx, ky);
    free(x), free(y);
    arb_config_free(c1);
    arb_config_free(c2);
}

/* A minimal good config with one section replaced. */
#define BASE_MODELS "\"models\":[{\"id\":\"m\",\"path\":\"default\"}]"
#define BASE_DATA "\"datasets\":[{\"name\":\"humaneval\",\"limit\":2}]"
#define BASE_METH "\"methods\":[{\"id\":\"AR\",\"preset\":\"ar\"},{\"id\":\"G\",\"preset\":\"goose\"}]"

static const struct { const char *json, *want; } bad[] = {
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"a\",\"preset\":\"ar\"},"
     "{\"id\":\"b\",\"preset\":\"pld\"},{\"id\":\"G\",\"preset\":\"goose\",\"budget\":-3}]}",
     "t.json: methods[2].budget: expected integer in [1, 1024] or \"auto\", got -3"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"budget\":2.5}]}",
     "methods[0].budget: expected integer"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"rho\":\"half\"}]}",
     "methods[0].rho: expected number in [0, 1], got \"half\""},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"budget\":[20,\"x\"]}]}",
     "methods[0].budget[1]: expected integer"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"budget\":[]}]}",
     "methods[0].budget: empty sweep list"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"bugdet\":60}]}",
     "methods[0].bugdet: unknown key"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"P\",\"preset\":\"pld\",\"rho\":0.5}]}",
     "methods[0].rho: not a parameter of drafter \"pld\""},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"temperature\":0.5}]}",
     "methods[0].temperature: sampling settings go in the top-level \"sampling\""},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"preset\":\"goose\"}]}",
     "methods[0]: missing required key \"id\""},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"gooze\"}]}",
     "methods[0].preset"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"drafter\":\"goose\",\"topology\":\"star\"}]}",
     "methods[0].topology: unknown topology \"star\" (spine, iso, sequoia, dynamic)"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"pld\",\"drafter\":\"tr\"}]}",
     "methods[0].drafter: \"tr\" conflicts with preset \"pld\""},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\"},{\"id\":\"G\",\"preset\":\"tr\"}]}",
     "methods[1].id: duplicate id \"G\" (also methods[0])"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"G\",\"preset\":\"goose\",\"budget\":60,\"budget\":70}]}",
     "methods[0].budget: duplicate key"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[]}", "methods: expected a non-empty array of objects, got []"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[3]}", "methods[0]: expected object, got number"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "}", "methods: missing required key"},
    {"{" BASE_MODELS "," BASE_DATA "," BASE_METH "}", "top level: missing required key \"name\""},
    {"{\"name\":\"x\",\"modles\":[]," BASE_MODELS "," BASE_DATA "," BASE_METH "}", "modles: unknown key (known: name"},
    {"{\"name\":\"x\",\"models\":[{\"id\":\"m\"}]," BASE_DATA "," BASE_METH "}", "models[0]: missing required key \"path\""},
    {"{\"name\":\"x\",\"models\":[{\"id\":\"m\",\"path\":\"p\",\"backend\":\"tpu\"}]," BASE_DATA "," BASE_METH "}",
     "models[0].backend: expected \"cpu\", \"cuda\" or \"cuda-exact\", got \"tpu\""},
    {"{\"name\":\"x\",\"models\":[{\"id\":\"m\",\"path\":\"p\"},{\"id\":\"m\",\"path\":\"q\"}]," BASE_DATA "," BASE_METH "}",
     "models[1].id: duplicate id \"m\" (also models[0])"},
    {"{\"name\":\"x\"," BASE_MODELS ",\"datasets\":[{\"name\":\"humaneval\",\"limit\":0}]," BASE_METH "}",
     "datasets[0].limit: expected integer >= 1, got 0"},
    {"{\"name\":\"x\"," BASE_MODELS ",\"datasets\":[{\"name\":\"humaneval\",\"max_new_tokens\":\"many\"}]," BASE_METH "}",
     "datasets[0].max_new_tokens: expected integer in [1, 1048576], got string"},
    {"{\"name\":\"x\"," BASE_MODELS ",\"datasets\":[{\"name\":\"humaneva1\"}]," BASE_METH "}",
     "datasets[0].name: unknown dataset \"humaneva1\" (known: humaneval"},
    {"{\"name\":\"x\"," BASE_MODELS ",\"datasets\":[{\"name\":\"humaneval\",\"lmit\":3}]," BASE_METH "}",
     "datasets[0].lmit: unknown key"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"sampling\":[{\"temperature\":-1}]}",
     "sampling[0].temperature: expected number in [0, 100]"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"sampling\":{\"top_p\":[0.9,1.5]}}",
     "sampling.top_p[]: expected number in [0, 1]"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"sampling\":[{\"top_k\":2.5}]}",
     "sampling[0].top_k: expected integer"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"seed\":-1}", "seed: expected integer >= 0"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"seed\":[]}", "seed: empty sweep list"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"warmup\":-1}", "warmup: expected integer in [0, 100], got -1"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"repeats\":0}", "repeats: expected integer in [1, 100], got 0"},
    /* a method that learns across generations would learn each repeat from the one before */
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"AR\",\"preset\":\"ar\"},"
     "{\"id\":\"TR\",\"preset\":\"tr\"}],\"repeats\":3}",
     "repeats: 3 with methods[1] (TR), which learns across generations (hot_start keeps its tables across prompts)"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"D\",\"preset\":\"goose-dyn-auto\","
     "\"hot_start\":false}],\"repeats\":2}",
     "repeats: 2 with methods[0] (D), which learns across generations (topology dynamic)"},
    {"{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH ",\"chat\":\"yes\"}", "chat: expected boolean, got string"},
    {"{\"name\":\"x\",\n\"models\": [\n  {\"id\": \"m\" \"path\": \"p\"}]}", "t.json:3:14: malformed JSON"},
    {"[1, 2]", "top level: expected an object, got array"},
    {"{\"name\":\"x\",\"comment\":7," BASE_MODELS "," BASE_DATA "," BASE_METH "}", "comment: expected string, got number"},
    {"", "t.json:1:1: malformed JSON"},
};

Test(config, bad_inputs_name_file_and_json_path)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        arb_config *c = (arb_config *)1;
        arb_err err = {0};
        int rc = arb_config_parse(bad[i].json, "t.json", &c, &err);
        cr_assert_neq(rc, ARB_OK, "case %zu accepted: %s", i, bad[i].json);
        cr_assert_null(c);
        cr_assert(strstr(err.msg, bad[i].want) != NULL, "case %zu: got \"%s\", want \"%s\"", i,
                  err.msg, bad[i].want);
        cr_assert(!strncmp(err.msg, "t.json", 6), "case %zu: no file name: %s", i, err.msg);
    }
}

Test(config, missing_file_is_an_io_error)
{
    arb_config *c = (arb_config *)1;
    arb_err err = {0};
    cr_assert_eq(arb_config_load("/nonexistent/x.json", &c, &err), ARB_E_IO);
    cr_assert_null(c);
    cr_assert(strstr(err.msg, "/nonexistent/x.json") != NULL);
}

/* Limits that used to cut silently or report the wrong thing are errors naming the field. */
Test(config, sweep_limits_are_errors_naming_the_field)
{
    char json[4096];
    int n = snprintf(json, sizeof json, "{\"name\":\"x\"," BASE_MODELS "," BASE_DATA "," BASE_METH
                     ",\"sampling\":{\"temperature\":[0");
    for (int i = 1; i < 65; i++)
        n += snprintf(json + n, sizeof json - (size_t)n, ",%d", i);
    snprintf(json + n, sizeof json - (size_t)n, "]}}");
    arb_config *c = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_config_parse(json, "t.json", &c, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "sampling.temperature: sweep list longer than 64 values"), "%s", err.msg);
}

/* The typical_* keys enter a run's config JSON (and so its run key) only when the verifier is
   typical: runs recorded before the keys existed keep their keys and resume. */
Test(config, typical_keys_only_with_the_typical_verifier)
{
    arb_err err = {0};
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("draft", &s, &err), 0, "%s", err.msg);
    char *j = arb_config_spec_json(&s);
    cr_assert_not_null(j);
    cr_expect_null(strstr(j, "typical_"), "%s", j);
    free(j);
    cr_assert_eq(arb_method_param_set(&s, "verifier", "typical", &err), 0, "%s", err.msg);
    cr_assert_eq(arb_method_param_set(&s, "typical_alpha", "0.5", &err), 0, "%s", err.msg);
    j = arb_config_spec_json(&s);
    cr_expect(strstr(j, "\"typical_eps\":0.09") && strstr(j, "\"typical_alpha\":0.5"), "%s", j);
    free(j);
    cr_assert_eq(arb_method_param_set(&s, "typical_eps", "1.5", &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "typical_eps"), "%s", err.msg);
    cr_assert_eq(arb_method_spec_preset("goose", &s, &err), 0);
    cr_assert_null(arb_method_param_find("goose", "typical_eps"), "typical keys belong to model drafters");
}

/* A run's params carry the cost table budget "auto" resolved to (its per-step choices read it);
   an unresolved spec, the one run keys hash, has none. */
Test(config, resolved_auto_records_its_cost_table)
{
    arb_method_spec s;
    cr_assert_eq(arb_method_spec_preset("goose-dyn-auto", &s, NULL), 0);
    char *j = arb_config_spec_json(&s);
    cr_assert_not_null(j);
    cr_expect_null(strstr(j, "cost_table"), "%s", j);
    cr_expect(strstr(j, "\"budget\":\"auto\""), "%s", j);
    free(j);
    s.budget_auto = false;
    s.budget = 3;
    s.chain_cost.n_max = 3;
    s.chain_cost.w_us[1] = 2500, s.chain_cost.w_us[2] = 2600.5, s.chain_cost.w_us[3] = 2750;
    s.chain_cost.ctx_us = 0.25, s.chain_cost.ctx0_us = 1.5;
    j = arb_config_spec_json(&s);
    cr_expect(strstr(j, "\"cost_table\":{\"w_us\":[2500,2600.5,2750],\"ctx_us\":0.25,\"ctx0_us\":1.5}"), "%s", j);
    free(j);
}

/* File-path parameters (heads, draft_model, selector_file, datastore, bank) hold a real path
   (< ARB_SPEC_PATH_MAX bytes, was 32); name parameters stay < 32 bytes; both limits are errors
   naming the JSON path, never a silent cut. */
Test(config, path_parameters_hold_long_paths)
{
    char path[200], json[4096];
    memset(path, 'a', sizeof path - 1);
    path[0] = '/', path[sizeof path - 1] = '\0';
    arb_config *c = NULL;
    arb_err err = {0};
    snprintf(json, sizeof json, "{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"AR\",\"preset\":\"ar\"},"
             "{\"id\":\"H\",\"preset\":\"hydra\",\"heads\":\"%s\"}]}", path);
    cr_assert_eq(arb_config_parse(json, "t.json", &c, &err), ARB_OK, "%s", err.msg);
    int h = !strcmp(c->methods[0].base_id, "H") ? 0 : 1;
    cr_assert_str_eq(c->methods[h].base_id, "H");
    cr_assert_str_eq(c->methods[h].spec.heads, path);
    arb_config_free(c);
    char longer[300];
    memset(longer, 'b', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    snprintf(json, sizeof json, "{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"AR\",\"preset\":\"ar\"},"
             "{\"id\":\"H\",\"preset\":\"hydra\",\"heads\":\"%s\"}]}", longer);
    cr_assert_eq(arb_config_parse(json, "t.json", &c, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "methods[1].heads: expected string (< 256 bytes)"), "%s", err.msg);
    snprintf(json, sizeof json, "{\"name\":\"x\"," BASE_MODELS "," BASE_DATA ",\"methods\":[{\"id\":\"AR\",\"preset\":\"ar\"},"
             "{\"id\":\"G\",\"preset\":\"goose\",\"consensus\":\"%.40s\"}]}", longer);
    cr_assert_eq(arb_config_parse(json, "t.json", &c, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "methods[1].consensus: expected string (< 32 bytes)"), "%s", err.msg);
}
