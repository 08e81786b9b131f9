/* claims.c — see claims.h; the file format is documented in docs/reproduce.md.
 *
 * Validated once, here: unknown or duplicate keys, wrong types, a kind without the methods it
 * needs and duplicate ids are errors naming the file and JSON path, so reproduce.c trusts
 * what it gets. Whether a claim's config and method ids exist is checked by the caller
 * (cmd_reproduce.c and tests/test_claims.c load the configs).
 */
#include "claims.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char *const kind_names[] = {"order", "sign", "ratio", "bound"};
static const char *const op_names[] = {">", ">=", "<", "<=", "abs<"};
static const char *const claim_keys[] = {
    "id", "paper", "text", "kind", "config", "metric", "a", "b", "op", "threshold", "tolerance",
    "paper_text", "paper_value", "paper_rows", "untestable", "comment", NULL};

static const char *json_type(const cJSON *v)
{
    return cJSON_IsBool(v) ? "boolean" : cJSON_IsNumber(v) ? "number" : cJSON_IsString(v) ? "string"
         : cJSON_IsArray(v) ? "array" : cJSON_IsObject(v) ? "object" : "null";
}

const char *arb_claim_kind_name(arb_claim_kind k)
{
    return (unsigned)k < 4 ? kind_names[k] : "?";
}

const char *arb_claim_op_name(arb_claim_op op)
{
    return (unsigned)op < 5 ? op_names[op] : "?";
}

bool arb_claim_satisfied(const arb_claim *c, double s)
{
    double t = c->threshold, tol = c->tolerance;
    switch (c->op) {
    case ARB_OP_GT: return s > t - tol;
    case ARB_OP_GE: return s >= t - tol;
    case ARB_OP_LT: return s < t + tol;
    case ARB_OP_LE: return s <= t + tol;
    case ARB_OP_ABS_LT: return fabs(s) < t + tol;
    }
    return false;
}

static void claim_release(arb_claim *c)
{
    free(c->id), free(c->paper), free(c->text), free(c->config), free(c->a);
    for (int j = 0; j < c->n_b; j++)
        free(c->b[j]);
    free(c->paper_text), free(c->paper_table), free(c->paper_model), free(c->untestable);
}

void arb_claims_free(arb_claims *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        claim_release(&c->c[i]);
    free(c->c);
    free(c);
}

/* Unknown and duplicate keys of one object. */
static int check_keys(const cJSON *o, const char *path, const char *const *known, arb_err *err)
{
    for (const cJSON *a = o->child; a; a = a->next) {
        for (const cJSON *b = o->child; b != a; b = b->next)
            if (!strcmp(a->string, b->string))
                return ARB_ERR(err, ARB_E_INVAL, "%s.%s: duplicate key", path, a->string);
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = !strcmp(*k, a->string);
        if (!ok)
            return ARB_ERR(err, ARB_E_INVAL, "%s.%s: unknown key", path, a->string);
    }
    return ARB_OK;
}

/* Optional non-empty string (required: missing is an error). */
static int get_str(const cJSON *o, const char *path, const char *key, bool required, char **out,
                   arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return required ? ARB_ERR(err, ARB_E_INVAL, "%s: missing required key \"%s\"", path, key) : ARB_OK;
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected non-empty string, got %s", path, key,
                       cJSON_IsString(v) ? "\"\"" : json_type(v));
    return (*out = strdup(v->valuestring)) ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
}

static int get_num(const cJSON *o, const char *path, const char *key, double lo, double *out,
                   arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return ARB_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo))
        return ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected a number >= %g, got %s", path, key, lo,
                       json_type(v));
    *out = v->valuedouble;
    return ARB_OK;
}

/* Index of s in names[0..n), or -1. */
static int find_name(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static int parse_enum(const cJSON *o, const char *path, const char *key, const char *const *names,
                      int n, int def, int *out, arb_err *err)
{
    char *s = NULL;
    int rc = get_str(o, path, key, false, &s, err);
    *out = def;
    if (rc || !s)
        return rc;
    int i = find_name(names, n, s);
    if (i < 0) {
        char known[64] = "";
        for (int j = 0; j < n; j++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", j ? "|" : "", names[j]);
        rc = ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected %s, got \"%s\"", path, key, known, s);
    }
    free(s);
    *out = i < 0 ? def : i;
    return rc;
}

static int parse_methods(const cJSON *o, const char *path, arb_claim *c, arb_err *err)
{
    int rc = get_str(o, path, "a", !c->untestable, &c->a, err);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "b");
    if (rc || !b)
        return rc;
    if (cJSON_IsString(b))
        return (c->b[c->n_b++] = strdup(b->valuestring)) ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    int n = cJSON_GetArraySize(b);
    if (!cJSON_IsArray(b) || n < 1 || n > ARB_CLAIM_MAX_B)
        return ARB_ERR(err, ARB_E_INVAL, "%s.b: expected a method id or 1 to %d of them", path, ARB_CLAIM_MAX_B);
    for (const cJSON *e = b->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return ARB_ERR(err, ARB_E_INVAL, "%s.b[%d]: expected a method id, got %s", path, c->n_b,
                           json_type(e));
        if (!(c->b[c->n_b++] = strdup(e->valuestring)))
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    return ARB_OK;
}

/* "paper_rows": {"table": "table2", "model": "Qwen3-8B"} */
static int parse_rows(const cJSON *o, const char *path, arb_claim *c, arb_err *err)
{
    static const char *const keys[] = {"table", "model", "comment", NULL};
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "paper_rows");
    char p[96];
    if (!r)
        return ARB_OK;
    snprintf(p, sizeof p, "%s.paper_rows", path);
    if (!cJSON_IsObject(r))
        return ARB_ERR(err, ARB_E_INVAL, "%s: expected an object {table, model}", p);
    int rc = check_keys(r, p, keys, err);
    if (!rc)
        rc = get_str(r, p, "table", true, &c->paper_table, err);
    return rc ? rc : get_str(r, p, "model", true, &c->paper_model, err);
}

/* What each kind needs, and its default comparison. */
static int check_kind(arb_claim *c, const char *path, bool has_op, bool has_thr, arb_err *err)
{
    static const arb_claim_op def_op[] = {ARB_OP_GE, ARB_OP_LT, ARB_OP_GT, ARB_OP_GE};
    static const int need_b[] = {1, 1, 2, 0};
    if (!has_op)
        c->op = def_op[c->kind];
    if (!has_thr)
        c->threshold = c->kind == ARB_CLAIM_RATIO ? 1.0 : 0.0;
    if (c->untestable)
        return ARB_OK;
    if (c->kind == ARB_CLAIM_RATIO ? c->n_b != 2 : c->n_b < need_b[c->kind])
        return ARB_ERR(err, ARB_E_INVAL, "%s.b: kind %s compares with %s method%s", path,
                       kind_names[c->kind], c->kind == ARB_CLAIM_RATIO ? "exactly 2" : "at least 1",
                       c->kind == ARB_CLAIM_RATIO ? "s" : "");
    if (c->kind == ARB_CLAIM_BOUND && c->metric != ARB_METRIC_TAU)
        return ARB_ERR(err, ARB_E_INVAL, "%s.metric: kind bound is about tau", path);
    if (c->metric != ARB_METRIC_TAU && c->metric != ARB_METRIC_TPS)
        return ARB_ERR(err, ARB_E_INVAL, "%s.metric: expected tau or tps", path);
    return ARB_OK;
}

static int parse_claim(const cJSON *o, const char *path, arb_claim *c, arb_err *err)
{
    static const char *const papers[] = {"goose", "dte", "entmtp"};
    static const char *const metrics[] = {"tau", "tps"};
    int rc = cJSON_IsObject(o) ? check_keys(o, path, claim_keys, err)
                               : ARB_ERR(err, ARB_E_INVAL, "%s: expected an object", path);
    int k = 0, op = 0, met = 0, pp = 0;
    c->paper_value = NAN;
    if (!rc && !(rc = get_str(o, path, "id", true, &c->id, err)) &&
        !(rc = parse_enum(o, path, "paper", papers, 3, -1, &pp, err)) && pp < 0)
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: missing required key \"paper\"", path);
    if (!rc)
        rc = (c->paper = strdup(papers[pp])) ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (!rc && !(rc = get_str(o, path, "text", true, &c->text, err)) &&
        !(rc = get_str(o, path, "untestable", false, &c->untestable, err)) &&
        !(rc = parse_enum(o, path, "kind", kind_names, 4, -1, &k, err)) && k < 0)
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: missing required key \"kind\"", path);
    c->kind = (arb_claim_kind)(k < 0 ? 0 : k);
    if (!rc && !(rc = get_str(o, path, "config", !c->untestable, &c->config, err)) &&
        !(rc = parse_enum(o, path, "metric", metrics, 2, 0, &met, err)) &&
        !(rc = parse_enum(o, path, "op", op_names, 5, 0, &op, err)) &&
        !(rc = get_num(o, path, "threshold", -1e9, &c->threshold, err)) &&
        !(rc = get_num(o, path, "tolerance", 0, &c->tolerance, err)) &&
        !(rc = get_num(o, path, "paper_value", -1e9, &c->paper_value, err)) &&
        !(rc = get_str(o, path, "paper_text", true, &c->paper_text, err)) &&
        !(rc = parse_rows(o, path, c, err)))
        rc = parse_methods(o, path, c, err);
    c->metric = met == 1 ? ARB_METRIC_TPS : ARB_METRIC_TAU;
    c->op = (arb_claim_op)op;
    if (!rc)
        rc = check_kind(c, path, cJSON_GetObjectItemCaseSensitive(o, "op") != NULL,
                        cJSON_GetObjectItemCaseSensitive(o, "threshold") != NULL, err);
    return rc;
}

static int parse_root(const cJSON *root, arb_claims *cl, arb_err *err)
{
    static const char *const keys[] = {"claims", "comment", "description", NULL};
    if (!cJSON_IsObject(root))
        return ARB_ERR(err, ARB_E_INVAL, "expected an object {\"claims\": [...]}");
    int rc = check_keys(root, "$", keys, err);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "claims");
    if (!rc && (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0))
        rc = ARB_ERR(err, ARB_E_INVAL, "claims: expected a non-empty array of objects");
    if (rc)
        return rc;
    int n = cJSON_GetArraySize(arr);
    if (!(cl->c = calloc((size_t)n, sizeof *cl->c)))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    for (const cJSON *o = arr->child; o && !rc; o = o->next) {
        char path[32];
        snprintf(path, sizeof path, "claims[%d]", cl->n);
        rc = parse_claim(o, path, &cl->c[cl->n++], err);
        for (int j = 0; !rc && j < cl->n - 1; j++)
            if (!strcmp(cl->c[j].id, cl->c[cl->n - 1].id))
                rc = ARB_ERR(err, ARB_E_INVAL, "%s.id: duplicate id \"%s\"", path, cl->c[j].id);
    }
    return rc;
}

int arb_claims_parse(const char *json, const char *name, arb_claims **out, arb_err *err)
{
    *out = NULL;
    cJSON *root = cJSON_Parse(json);
    if (!root)
        return ARB_ERR(err, ARB_E_FORMAT, "%s: malformed JSON near byte %ld", name,
                       (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - json : 0));
    arb_claims *cl = calloc(1, sizeof *cl);
    int rc = cl ? parse_root(root, cl, err) : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    cJSON_Delete(root);
    if (rc) {
        arb_err_prefix(err, "%s", name);
        arb_claims_free(cl);
        return rc;
    }
    *out = cl;
    return ARB_OK;
}

int arb_claims_load(const char *path, arb_claims **out, arb_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot open", path);
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n)
        buf[n] = 0;
    else
        free(buf), buf = NULL;
    fclose(f);
    if (!buf)
        return ARB_ERR(err, ARB_E_IO, "%s: read error", path);
    int rc = arb_claims_parse(buf, path, out, err);
    free(buf);
    return rc;
}
