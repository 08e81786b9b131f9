/* test_claims.c — the shipped results/paper/claims.json parses, covers both papers, and every
 * testable claim names a config that loads and method ids that config has; malformed claim
 * files are rejected with the JSON path in the message. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "config.h"

static const char *root(void)
{
    const char *r = getenv("ARBOR_SOURCE_ROOT");
    cr_assert_not_null(r, "ARBOR_SOURCE_ROOT is set by meson test");
    return r;
}

static bool has_method(const arb_config *cfg, const char *id)
{
    for (int m = 0; m < cfg->n_methods; m++)
        if (!strcmp(cfg->methods[m].base_id, id))
            return true;
    return false;
}

Test(claims, shipped_file_names_existing_configs_and_method_ids)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/results/paper/claims.json", root());
    arb_claims *cl = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_claims_load(path, &cl, &err), ARB_OK, "%s", err.msg);
    int per_kind[4] = {0}, goose = 0, dte = 0, entmtp = 0, untestable = 0;
    for (int i = 0; i < cl->n; i++) {
        const arb_claim *c = &cl->c[i];
        goose += !strcmp(c->paper, "goose"), dte += !strcmp(c->paper, "dte");
        entmtp += !strcmp(c->paper, "entmtp");
        if (c->untestable) {
            untestable++;
            continue;
        }
        per_kind[c->kind]++;
        snprintf(path, sizeof path, "%s/%s", root(), c->config);
        arb_config *cfg = NULL;
        cr_assert_eq(arb_config_load(path, &cfg, &err), ARB_OK, "claim %s: %s", c->id, err.msg);
        cr_assert(has_method(cfg, c->a), "claim %s: %s has no method %s", c->id, c->config, c->a);
        for (int j = 0; j < c->n_b; j++)
            cr_assert(has_method(cfg, c->b[j]), "claim %s: %s has no method %s", c->id, c->config, c->b[j]);
        arb_config_free(cfg);
    }
    for (int k = 0; k < 4; k++)
        cr_assert(per_kind[k] > 0, "no testable claim of kind %s", arb_claim_kind_name((arb_claim_kind)k));
    cr_assert(goose >= 9 && dte >= 2, "goose %d dte %d", goose, dte);
    cr_assert(entmtp >= 5, "entmtp %d", entmtp); /* Table 1 claims (configs/entmtp/table1.json) */
    cr_assert(untestable >= 1);
    arb_claims_free(cl);
}

/* Parse a one-claim file whose claim object is `body`; returns the code, message in err. */
static int parse_one(const char *body, arb_err *err)
{
    char json[2048];
    snprintf(json, sizeof json, "{\"claims\": [%s]}", body);
    arb_claims *cl = NULL;
    int rc = arb_claims_parse(json, "x.json", &cl, err);
    arb_claims_free(cl);
    return rc;
}

#define BASE "\"id\": \"c\", \"paper\": \"goose\", \"text\": \"t\", \"config\": \"configs/ci.json\", \"paper_text\": \"p\""

Test(claims, defaults_per_kind)
{
    arb_claims *cl = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_claims_parse("{\"claims\": [{" BASE ", \"kind\": \"ratio\", \"a\": \"G\", \"b\": [\"P\", \"T\"]},"
                                  " {\"id\": \"d\", \"paper\": \"dte\", \"text\": \"t\", \"paper_text\": \"p\","
                                  " \"config\": \"c\", \"kind\": \"sign\", \"a\": \"x\", \"b\": \"y\", \"tolerance\": 0.5}]}",
                                  "x.json", &cl, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(cl->n, 2);
    cr_assert_eq(cl->c[0].op, ARB_OP_GT);
    cr_assert_float_eq(cl->c[0].threshold, 1.0, 0);
    cr_assert(isnan(cl->c[0].paper_value));
    cr_assert_eq(cl->c[1].op, ARB_OP_LT);
    cr_assert_eq(cl->c[1].n_b, 1);
    cr_assert(arb_claim_satisfied(&cl->c[1], 0.4), "tolerance 0.5 relaxes < 0");
    cr_assert(!arb_claim_satisfied(&cl->c[1], 0.6));
    arb_claims_free(cl);
}

Test(claims, errors_name_the_json_path)
{
    static const struct { const char *body, *msg; } cases[] = {
        {"{" BASE ", \"kind\": \"less\", \"a\": \"A\", \"b\": \"B\"}", "claims[0].kind: expected order|sign|ratio|bound"},
        {"{" BASE ", \"kind\": \"order\", \"a\": \"A\", \"b\": \"B\", \"bogus\": 1}", "claims[0].bogus: unknown key"},
        {"{" BASE ", \"kind\": \"ratio\", \"a\": \"A\", \"b\": \"B\"}", "claims[0].b: kind ratio compares with exactly 2"},
        {"{" BASE ", \"kind\": \"order\", \"a\": \"A\"}", "claims[0].b: kind order compares with at least 1"},
        {"{" BASE ", \"kind\": \"order\", \"b\": \"B\"}", "claims[0]: missing required key \"a\""},
        {"{" BASE ", \"kind\": \"order\", \"a\": \"A\", \"b\": \"B\", \"tolerance\": -1}", "claims[0].tolerance: expected a number >= 0"},
        {"{" BASE ", \"kind\": \"order\", \"a\": \"A\", \"b\": \"B\", \"op\": \"=\"}", "claims[0].op: expected >|>=|<|<=|abs<"},
        {"{" BASE ", \"kind\": \"bound\", \"a\": \"A\", \"metric\": \"tps\"}", "claims[0].metric: kind bound is about tau"},
        {"{" BASE ", \"kind\": \"order\", \"a\": \"A\", \"b\": \"B\", \"paper_rows\": {\"table\": \"t\"}}",
         "claims[0].paper_rows: missing required key \"model\""},
        {"{" BASE ", \"kind\": \"order\", \"a\": \"A\", \"b\": \"B\"}, {" BASE ", \"kind\": \"order\", \"a\": \"A\", \"b\": \"B\"}",
         "claims[1].id: duplicate id \"c\""},
        {"{\"id\": \"c\", \"paper\": \"x\", \"text\": \"t\", \"kind\": \"order\"}", "claims[0].paper: expected goose|dte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        arb_err err = {0};
        cr_assert_eq(parse_one(cases[i].body, &err), ARB_E_INVAL, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].msg) != NULL, "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, "x.json") != NULL, "case %zu: %s", i, err.msg);
    }
    arb_err err = {0};
    arb_claims *cl = NULL;
    cr_assert_eq(arb_claims_parse("{\"claims\": [", "y.json", &cl, &err), ARB_E_FORMAT);
    cr_assert_null(cl);
    cr_assert_eq(arb_claims_parse("{\"claims\": []}", "y.json", &cl, &err), ARB_E_INVAL);
    cr_assert_eq(arb_claims_load("/nonexistent/claims.json", &cl, &err), ARB_E_IO);
}

Test(claims, untestable_needs_no_config_or_methods)
{
    arb_err err = {0};
    cr_assert_eq(parse_one("{\"id\": \"u\", \"paper\": \"dte\", \"text\": \"t\", \"kind\": \"order\","
                           " \"paper_text\": \"p\", \"untestable\": \"no trunk sweep\"}", &err),
                 ARB_OK, "%s", err.msg);
}
