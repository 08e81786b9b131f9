/* test_nde.c — the NDE selector's pieces (docs/sampling.md, "NDE"), no model needed:
 *  - the MLP objective's gradient equals central finite differences for every parameter;
 *  - the latency fit recovers exact coefficients; T(n, a) counts the passes the drafter makes;
 *  - the action set: distinct, folded (k = 1 only at l = 0), within ARB_NDE_NODES_MAX, baseline
 *    (2, 0, 4);
 *  - features on constructed laws (equal laws: KL = L1 = 0; uniform: entropy log V);
 *  - the selector table: fixed returns its shape; nde returns the argmax of the file's MLP,
 *    rejects a missing or altered file naming it; a selector file round-trips;
 *  - a config's unknown selector is an error naming the JSON path; nde without a file too;
 *  - training on constructed data learns the rule behind it and splits by prompt.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "nde_features.h"
#include "nde_mlp.h"
#include "nde_train.h"
#include "resample.h"
#include "selectors/selector.h"

static double urand(uint64_t *s) { return (double)(arb_splitmix64(s) >> 11) / 9007199254740992.0; }

Test(nde, gradient_equals_finite_differences)
{
    arb_err err = {0};
    arb_nde_mlp m;
    const int F = ARB_NDE_F, H = 6, A = ARB_NDE_N_ACTIONS, B = 24;
    cr_assert_eq(arb_nde_mlp_init(&m, F, H, A, 7, &err), 0, "%s", err.msg);
    uint64_t s = 11;
    for (size_t i = 0; i < m.n_params; i++) /* biases non-zero too */
        m.w[i] = (float)(urand(&s) - 0.5);
    for (int k = 0; k < F; k++)
        m.mu[k] = urand(&s) - 0.5, m.sd[k] = 0.5 + urand(&s);
    double X[24 * ARB_NDE_F], R[24 * ARB_NDE_N_ACTIONS];
    for (int i = 0; i < B * F; i++)
        X[i] = 2 * urand(&s) - 1;
    for (int i = 0; i < B * A; i++)
        R[i] = 0.4 + 1.2 * urand(&s);
    double *scratch = malloc(sizeof(double) * B * (2 * H + 2 * A + 1));
    float *g = malloc(sizeof(float) * m.n_params), *g2 = malloc(sizeof(float) * m.n_params);
    const double lams[] = {0, 1, 3};
    for (int li = 0; li < 3; li++) {
        const double lam = lams[li], rho = 0.25;
        arb_nde_mlp_loss(&m, X, R, B, lam, rho, g, scratch);
        double max_err = 0, max_g = 0;
        for (size_t j = 0; j < m.n_params; j++) {
            const float w0 = m.w[j];
            m.w[j] = w0 + 1e-2f;
            const double hp = m.w[j] - w0, lp = arb_nde_mlp_loss(&m, X, R, B, lam, rho, g2, scratch);
            m.w[j] = w0 - 1e-2f;
            const double hm = w0 - m.w[j], lm = arb_nde_mlp_loss(&m, X, R, B, lam, rho, g2, scratch);
            m.w[j] = w0;
            const double fd = (lp - lm) / (hp + hm);
            max_err = fmax(max_err, fabs(fd - g[j]));
            max_g = fmax(max_g, fabs(g[j]));
        }
        cr_assert_gt(max_g, 1e-3, "lambda %g: gradient vanishes", lam);
        cr_assert_lt(max_err, 2e-3 * fmax(1, max_g), "lambda %g: |fd - grad| %g (max |grad| %g)", lam, max_err, max_g);
    }
    free(scratch), free(g), free(g2);
    arb_nde_mlp_release(&m);
}

Test(nde, latency_fit_and_action_cost)
{
    int n[12], m[12];
    double us[12], c[3];
    const double want[3] = {8000, 1100, 3.0};
    for (int i = 0; i < 12; i++) {
        n[i] = 128 << (i / 4), m[i] = 1 + 7 * (i % 4);
        us[i] = arb_nde_latency_us(want, n[i], m[i]);
    }
    cr_assert_eq(arb_nde_latency_fit(n, m, us, 12, c), 0);
    for (int j = 0; j < 3; j++)
        cr_assert_float_eq(c[j], want[j], 1e-6 * fabs(want[j]));
    int same_m[3] = {4, 4, 4}, same_n[3] = {1, 2, 3};
    cr_assert_neq(arb_nde_latency_fit(same_n, same_m, us, 3, c), 0, "a singular design is an error");
    /* (3, 2, 4): 1 catch-up + 2 trunk passes, branch passes of 3, 6, 9 nodes, target 1 + 2 + 12 */
    const arb_nde_latency lat = {.target = {100, 10, 0}, .draft = {50, 1, 0}};
    const arb_draft_shape a = {3, 2, 4};
    const double t = 3 * 51 + (50 + 3) + (50 + 6) + (50 + 9) + (100 + 10 * 15);
    cr_assert_float_eq(arb_nde_action_us(&lat, 500, a), t, 1e-9);
}

Test(nde, action_set)
{
    int nmax = 0;
    for (int a = 0; a < ARB_NDE_N_ACTIONS; a++) {
        const arb_draft_shape x = arb_nde_actions[a];
        cr_assert(x.k >= 1 && x.l >= 0 && x.b >= 1);
        cr_assert(x.k > 1 || x.l == 0, "(1, l > 0, b) is (1, 0, l + b): folded");
        cr_assert_eq(arb_nde_action_index(x), a, "actions are distinct");
        nmax = arb_draft_shape_nodes(x) > nmax ? arb_draft_shape_nodes(x) : nmax;
    }
    cr_assert_eq(nmax, ARB_NDE_NODES_MAX);
    const arb_draft_shape base = arb_nde_actions[ARB_NDE_BASE];
    cr_assert(base.k == 2 && base.l == 0 && base.b == 4);
    cr_assert_eq(arb_nde_action_index((arb_draft_shape){5, 0, 1}), -1);
}

Test(nde, features_on_constructed_laws)
{
    enum { V = 50 };
    double u[V], p[V], f[ARB_NDE_F];
    for (int x = 0; x < V; x++)
        u[x] = 1.0 / V, p[x] = x < 10 ? 0.1 : 0;
    const arb_sampling sm = {.temperature = 0.7, .top_p = 0.9};
    const arb_nde_latency lat = {.target = {9000, 1000, 0}, .draft = {6000, 500, 0}};
    arb_nde_features(u, u, p, V, 100, &sm, &lat, f);
    cr_assert_float_eq(f[0], log(V), 1e-12);
    cr_assert_float_eq(f[2], log(10), 1e-12);
    cr_assert_float_eq(f[3], 0, 1e-12);
    cr_assert_float_eq(f[5], 0, 1e-12);
    cr_assert_float_eq(f[6], log(100), 1e-12);
    cr_assert_float_eq(f[7], 0.7, 0);
    cr_assert_float_eq(f[8], 0.9, 0);
    cr_assert_float_eq(f[9], 6.5, 1e-12);
    cr_assert_float_eq(f[10], 10, 1e-12);
    arb_nde_features(p, u, u, V, 100, &sm, &lat, f); /* p on 10 tokens vs uniform q */
    cr_assert_float_eq(f[3], log(V / 10.0), 1e-9);  /* KL(p || u) */
    cr_assert_float_eq(f[5], 2 * (1 - 10.0 / V), 1e-12);
    cr_assert_gt(f[4], 10, "KL(u || p) with zeros in p: floored, large, finite");
    cr_assert(isfinite(f[4]));
}

/* A selector file whose MLP always prefers action `want` (output bias), written to path. */
static void write_constant_selector(const char *path, int want)
{
    arb_err err = {0};
    arb_nde_mlp m;
    cr_assert_eq(arb_nde_mlp_init(&m, ARB_NDE_F, 4, ARB_NDE_N_ACTIONS, 3, &err), 0);
    float *b2 = m.w + m.n_params - ARB_NDE_N_ACTIONS;
    b2[want] = 100;
    arb_nde_prov pv = {.seed = 3, .lat = {.target = {1, 2, 3}, .draft = {4, 5, 6}}};
    snprintf(pv.verifier, sizeof pv.verifier, "spectr");
    cr_assert_eq(arb_nde_mlp_save(&m, &pv, path, &err), 0, "%s", err.msg);
    arb_nde_mlp_release(&m);
}

Test(nde, selector_table)
{
    arb_err err = {0};
    cr_assert_null(arb_selector_find("greedy"));
    const arb_selector_i *fx = arb_selector_find("fixed"), *nd = arb_selector_find("nde");
    cr_assert(fx && nd && !fx->needs_laws && nd->needs_laws);
    void *st;
    arb_selector_opts o = {.shape = {3, 1, 2}, .V = 8, .n_nodes_max = 32};
    cr_assert_eq(fx->create(&o, &st, &err), 0);
    arb_draft_shape a = fx->select(st, NULL);
    cr_assert(a.k == 3 && a.l == 1 && a.b == 2);
    fx->destroy(st);
    cr_assert_neq(nd->create(&o, &st, &err), 0, "nde without a file");
    cr_assert(strstr(err.msg, "selector_file"), "%s", err.msg);
    char path[] = "/tmp/arbor-nde-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    write_constant_selector(path, 13);
    o.file = path;
    o.n_nodes_max = 10;
    cr_assert_neq(nd->create(&o, &st, &err), 0, "a tree smaller than the action set");
    o.n_nodes_max = ARB_NDE_NODES_MAX;
    cr_assert_eq(nd->create(&o, &st, &err), 0, "%s", err.msg);
    enum { V = 8 };
    double pp[V], qp[V], qr[V];
    for (int x = 0; x < V; x++)
        pp[x] = qp[x] = qr[x] = 1.0 / V;
    const arb_sampling sm = {.temperature = 1, .top_p = 1};
    arb_selector_in in = {.p_prev = pp, .q_prev = qp, .q_root = qr, .V = V, .n_ctx = 40, .smp = &sm};
    a = nd->select(st, &in);
    cr_assert_eq(arb_nde_action_index(a), 13);
    nd->destroy(st);
    /* round trip, and an altered action set is rejected naming the file and field */
    arb_nde_mlp m;
    arb_nde_prov pv;
    cr_assert_eq(arb_nde_mlp_load(path, &m, &pv, &err), 0, "%s", err.msg);
    cr_assert_str_eq(pv.verifier, "spectr");
    cr_assert_float_eq(pv.lat.draft[2], 6, 0);
    cr_assert_float_eq(m.w[m.n_params - ARB_NDE_N_ACTIONS + 13], 100, 0);
    arb_nde_mlp_release(&m);
    FILE *f = fopen(path, "r");
    char *buf = calloc(1 << 20, 1);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *at = strstr(buf, "\"actions\"");
    cr_assert(at);
    at = strchr(at, '1'); /* the first action's k: 1 -> 7 */
    *at = '7';
    f = fopen(path, "w");
    fputs(buf, f);
    fclose(f);
    free(buf);
    cr_assert_neq(arb_nde_mlp_load(path, &m, &pv, &err), 0);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "actions[0]"), "%s", err.msg);
    unlink(path);
    cr_assert_neq(arb_nde_mlp_load(path, &m, &pv, &err), 0);
    cr_assert(strstr(err.msg, path), "%s", err.msg);
}

#define CFG(meth)                                                                                                      \
    "{\"name\":\"x\",\"models\":[{\"id\":\"m\",\"path\":\"default\"}],\"datasets\":[{\"name\":\"humaneval\"}],"    \
    "\"sampling\":[{\"temperature\":1}],\"methods\":[" meth "]}"

Test(nde, config_selector_field)
{
    arb_config *c = NULL;
    arb_err err = {0};
    cr_assert_neq(arb_config_parse(CFG("{\"id\":\"D\",\"preset\":\"draft\",\"verifier\":\"spectr\",\"selector\":\"nd\"}"),
                                   "t.json", &c, &err), 0);
    cr_assert(strstr(err.msg, "methods[0].selector: unknown selector \"nd\" (fixed, nde)"), "%s", err.msg);
    cr_assert_neq(arb_config_parse(CFG("{\"id\":\"D\",\"preset\":\"pld\",\"selector\":\"nde\"}"), "t.json", &c, &err), 0);
    cr_assert(strstr(err.msg, "methods[0].selector: not a parameter of drafter \"pld\""), "%s", err.msg);
    /* nde without a file: rejected when the method is validated */
    int rc = arb_config_parse(CFG("{\"id\":\"D\",\"preset\":\"draft\",\"verifier\":\"spectr\",\"selector\":\"nde\"}"),
                              "t.json", &c, &err);
    if (rc == 0) {
        arb_method_spec s = c->methods[0].spec;
        s.temperature = 1;
        rc = arb_method_spec_validate(&s, &err);
        arb_config_free(c);
        c = NULL;
    }
    cr_assert_neq(rc, 0);
    cr_assert(strstr(err.msg, "selector_file"), "%s", err.msg);
    /* fixed (the default) keeps a run's canonical JSON as before: no selector keys in it */
    cr_assert_eq(arb_config_parse(CFG("{\"id\":\"D\",\"preset\":\"draft\",\"verifier\":\"spectr\"}"), "t.json", &c, &err),
                 0, "%s", err.msg);
    char *js = arb_config_spec_json(&c->methods[0].spec);
    cr_assert(js && !strstr(js, "selector"), "%s", js);
    free(js);
    arb_config_free(c);
}

/* Constructed data: the best action is 0 when feature 5 (L1) > 1, else action 11; 40 prompts
   x 5 roots. Training must find the rule (held-out ratio above the best single action) and
   hold out whole prompts. */
Test(nde, training_learns_a_constructed_rule)
{
    char db[] = "/tmp/arbor-nde-db-XXXXXX", out[] = "/tmp/arbor-nde-sel-XXXXXX";
    int fd = mkstemp(db), fo = mkstemp(out);
    cr_assert(fd >= 0 && fo >= 0);
    close(fd), close(fo);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h,
        "CREATE TABLE nde_meta(tag TEXT PRIMARY KEY, model TEXT, model_sha256 TEXT, draft TEXT, every INTEGER,"
        " max_new INTEGER, n_tree INTEGER, seed INTEGER, actions TEXT, lat_target TEXT, lat_draft TEXT, created TEXT);"
        "CREATE TABLE nde_root(tag TEXT, dataset TEXT, prompt INTEGER, setting INTEGER, temperature REAL, top_p REAL,"
        " g INTEGER, n_ctx INTEGER, feat TEXT);"
        "CREATE TABLE nde_be(tag TEXT, dataset TEXT, prompt INTEGER, setting INTEGER, g INTEGER, action INTEGER,"
        " verifier TEXT, be REAL, us REAL);"
        "INSERT INTO nde_meta VALUES('t','m','abc','self:24',16,80,1,0,'','1 2 3','4 5 6','now');"
        "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    uint64_t s = 5;
    for (int pi = 0; pi < 40; pi++)
        for (int g = 0; g < 5; g++) {
            double f[ARB_NDE_F];
            for (int k = 0; k < ARB_NDE_F; k++)
                f[k] = urand(&s);
            f[5] = 2 * urand(&s);
            char sql[1024];
            int n = snprintf(sql, sizeof sql, "INSERT INTO nde_root VALUES('t','d',%d,0,1,1,%d,100,'", pi, g);
            for (int k = 0; k < ARB_NDE_F; k++)
                n += snprintf(sql + n, sizeof sql - (size_t)n, "%s%.17g", k ? " " : "", f[k]);
            snprintf(sql + n, sizeof sql - (size_t)n, "')");
            cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
            for (int a = 0; a < ARB_NDE_N_ACTIONS; a++) {
                const int best = f[5] > 1 ? 0 : 11;
                snprintf(sql, sizeof sql, "INSERT INTO nde_be VALUES('t','d',%d,0,%d,%d,'spectr',%.17g,1000)", pi, g, a,
                         a == best ? 3.0 : 1.5 + 0.2 * urand(&s));
                cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
            }
        }
    cr_assert_eq(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    arb_nde_train_opts o = arb_nde_train_default_opts();
    o.db = db, o.tag = "t", o.out = out, o.objective = "be", o.steps = 1500, o.seed = 1;
    arb_err err = {0};
    cr_assert_eq(arb_nde_train(&o, NULL, &err), 0, "%s", err.msg);
    arb_nde_mlp m;
    arb_nde_prov pv;
    cr_assert_eq(arb_nde_mlp_load(out, &m, &pv, &err), 0, "%s", err.msg);
    cr_assert_eq(pv.n_train + pv.n_heldout, 200);
    cr_assert(pv.n_heldout > 0 && pv.n_heldout % 5 == 0, "whole prompts held out: %d roots", pv.n_heldout);
    cr_assert_str_eq(pv.model_sha256, "abc");
    cr_assert_eq(strlen(pv.data_hash), 16);
    /* a single action is right on about half the roots (ratio ~ (1 + 3/1.6)/2 of the baseline);
       the rule is right on nearly all */
    cr_assert_gt(pv.heldout_ratio, pv.heldout_best_fixed + 0.3, "NDE %.3f vs best fixed %.3f", pv.heldout_ratio,
                 pv.heldout_best_fixed);
    arb_nde_mlp_release(&m);
    unlink(db), unlink(out);
}
