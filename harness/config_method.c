/* config_method.c — the "methods" section of a config (part of the config module, config.h):
 * each entry is a preset or a drafter plus topology/verifier/scheduler and parameters from
 * method.h's table; a list where a parameter expects a value is a sweep, expanded here into
 * one method per point of the cartesian product. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "alloc.h"
#include "config_int.h"
#include "selectors/selector.h"

#define MAX_POINTS 4096 /* sweep points per method: more is almost surely a typo */
#define MAX_KEYS 64


static void range_text(const arb_method_param *p, char *buf, size_t cap)
{
    bool integer = p->type == ARB_PARAM_INT || p->type == ARB_PARAM_U64;
    const char *what = integer ? "integer" : "number";
    if (p->hi >= 1e9 && p->lo == 1 && integer)
        snprintf(buf, cap, "%s > 0", what);
    else if (p->hi >= 1e9)
        snprintf(buf, cap, "%s >= %g", what, p->lo);
    else
        snprintf(buf, cap, "%s in [%g, %g]", what, p->lo, p->hi);
}

/* One value of parameter p (not a sweep list). */
static int check_value(const arb_method_param *p, const cJSON *v, const char *path, arb_err *err)
{
    char want[96], got[64];
    if (cJSON_IsNumber(v))
        snprintf(got, sizeof got, "%g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(got, sizeof got, "\"%.40s\"", v->valuestring);
    else
        snprintf(got, sizeof got, "%s", arb_config_json_type(v));
    if (arb_method_param_takes_auto(p) && cJSON_IsString(v) && !strcmp(v->valuestring, "auto"))
        return ARB_OK;
    switch (p->type) {
    case ARB_PARAM_INT:
    case ARB_PARAM_U64:
    case ARB_PARAM_DOUBLE: {
        bool ok = p->type == ARB_PARAM_DOUBLE ? cJSON_IsNumber(v) : arb_config_json_is_int(v);
        if (ok && v->valuedouble >= p->lo && v->valuedouble <= p->hi)
            return ARB_OK;
        range_text(p, want, sizeof want);
        return ARB_ERR(err, ARB_E_INVAL, "%s: expected %s%s, got %s", path, want, arb_method_param_takes_auto(p) ? " or \"auto\"" : "",
                       got);
    }
    case ARB_PARAM_BOOL:
        if (cJSON_IsBool(v))
            return ARB_OK;
        return ARB_ERR(err, ARB_E_INVAL, "%s: expected boolean, got %s", path, got);
    case ARB_PARAM_STR:
        if (cJSON_IsString(v) && !strcmp(p->name, "selector") && !arb_selector_find(v->valuestring)) {
            char names[128];
            return ARB_ERR(err, ARB_E_INVAL, "%s: unknown selector \"%s\" (%s)", path, v->valuestring,
                           arb_selector_names(names, sizeof names));
        }
        if (cJSON_IsString(v) && strlen(v->valuestring) < arb_method_param_cap(p))
            return ARB_OK;
        return ARB_ERR(err, ARB_E_INVAL, "%s: expected string (< %zu bytes), got %s", path, arb_method_param_cap(p), got);
    case ARB_PARAM_DOUBLE_LIST: {
        int i = 0;
        if (!cJSON_IsArray(v))
            return ARB_ERR(err, ARB_E_INVAL, "%s: expected array of numbers, got %s", path, got);
        for (const cJSON *e = v->child; e; e = e->next, i++)
            if (!cJSON_IsNumber(e) || e->valuedouble < p->lo || e->valuedouble > p->hi)
                return ARB_ERR(err, ARB_E_INVAL, "%s[%d]: expected number in [%g, %g], got %s",
                               path, i, p->lo, p->hi, arb_config_json_type(e));
        return ARB_OK;
    }
    }
    return ARB_ERR(err, ARB_E_INVAL, "%s: unsupported parameter type", path);
}

/* Text form for arb_method_param_set; `label` uses the short %g form. False when it does
   not fit in cap (a long list): the caller reports it rather than parse a cut-off value. */
static bool value_text(const arb_method_param *p, const cJSON *v, bool label, char *buf, size_t cap)
{
    const char *fmt = label ? "%g" : "%.17g";
    buf[0] = 0;
    if (arb_method_param_takes_auto(p) && cJSON_IsString(v)) {
        snprintf(buf, cap, "%s", v->valuestring);
        return strlen(buf) + 1 < cap;
    }
    switch (p->type) {
    case ARB_PARAM_INT:
    case ARB_PARAM_U64: snprintf(buf, cap, "%lld", (long long)v->valuedouble); break;
    case ARB_PARAM_DOUBLE: snprintf(buf, cap, fmt, v->valuedouble); break;
    case ARB_PARAM_BOOL: snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false"); break;
    case ARB_PARAM_STR: snprintf(buf, cap, "%s", v->valuestring); break;
    case ARB_PARAM_DOUBLE_LIST:
        for (const cJSON *e = v->child; e; e = e->next) {
            size_t n = strlen(buf);
            snprintf(buf + n, cap - n, e == v->child ? fmt : label ? "/%g" : ",%.17g",
                     e->valuedouble);
        }
        break;
    }
    return strlen(buf) + 1 < cap;
}

typedef struct param_set {       /* one parameter key of a method entry */
    const char *name;
    const arb_method_param *p;
    const cJSON *v;              /* value, or the sweep list */
    int n;                       /* 1, or the sweep's length */
    bool sweep;
} param_set;

static int set_string(char *dst, size_t cap, const cJSON *e, const char *key, const char *path,
                      arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
    if (!v)
        return ARB_OK;
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= cap)
        return ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected non-empty string (< %zu bytes), got %s",
                       path, key, cap, arb_config_json_type(v));
    bool registry = !strcmp(key, "topology") || !strcmp(key, "verifier") || !strcmp(key, "scheduler");
    char names[256];
    if (registry && !arb_method_known(key, v->valuestring))
        return ARB_ERR(err, ARB_E_INVAL, "%s.%s: unknown %s \"%s\" (%s)", path, key, key, v->valuestring,
                       arb_method_names(key, names, sizeof names));
    snprintf(dst, cap, "%s", v->valuestring);
    return ARB_OK;
}

static int add_point(arb_config *c, const arb_method_spec *base, const param_set *ps, int n_ps,
                     const int *pick, int index, const char *path, arb_err *err)
{
    arb_cfg_method *m = &c->methods[c->n_methods];
    memset(m, 0, sizeof *m);
    m->spec = *base;
    m->index = index;
    char label[512], txt[1024];
    snprintf(label, sizeof label, "%s", base->id);
    cJSON *sw = cJSON_CreateObject();
    if (!sw)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    int n_sw = 0, rc = ARB_OK;
    for (int k = 0; k < n_ps && !rc; k++) {
        const cJSON *v = ps[k].sweep ? cJSON_GetArrayItem(ps[k].v, pick[k]) : ps[k].v;
        if (!value_text(ps[k].p, v, false, txt, sizeof txt)) {
            rc = ARB_ERR(err, ARB_E_INVAL, "%s.%s: value longer than %zu bytes", path, ps[k].name,
                         sizeof txt - 1);
            break;
        }
        if ((rc = arb_method_param_set(&m->spec, ps[k].name, txt, err))) {
            arb_err_prefix(err, "%s.%s", path, ps[k].name);
            break;
        }
        if (ps[k].sweep) {
            value_text(ps[k].p, v, true, txt, sizeof txt);
            size_t n = strlen(label);
            /* A cut label could collide with another point's or hide what was swept. */
            if ((size_t)snprintf(label + n, sizeof label - n, "%s%s=%s]", n_sw ? "," : "[",
                                 ps[k].name, txt) >= sizeof label - n) {
                rc = ARB_ERR(err, ARB_E_INVAL, "%s: sweep label \"%.40s...\" longer than %zu bytes: "
                             "fewer swept parameters or shorter values", path, label, sizeof label - 1);
                break;
            }
            label[strlen(label) - 1] = 0; /* the "]" was only reserved */
            cJSON *dup = cJSON_Duplicate(v, true);
            if (!dup || !cJSON_AddItemToObject(sw, ps[k].name, dup)) { /* else sweep_json lacks it */
                cJSON_Delete(dup);
                rc = ARB_ERR(err, ARB_E_NOMEM, "%s.%s: out of memory", path, ps[k].name);
                break;
            }
            n_sw++;
        }
    }
    if (n_sw)
        snprintf(label + strlen(label), sizeof label - strlen(label), "]");
    if (!rc && (rc = arb_method_spec_validate(&m->spec, err)))
        arb_err_prefix(err, "%s", path);
    char *swj = rc ? NULL : cJSON_PrintUnformatted(sw);
    cJSON_Delete(sw);
    if (rc)
        return rc;
    m->label = arb_strdup(label);
    m->base_id = arb_strdup(base->id);
    m->sweep_json = swj;
    if (!m->label || !m->base_id || !swj) {
        free(m->label), free(m->base_id), free(swj);
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    c->n_methods++;
    return ARB_OK;
}

static int parse_method(arb_config *c, const cJSON *e, int i, arb_err *err)
{
    static const char *const reserved[] = {"id", "preset", "drafter", "topology", "verifier",
                                           "scheduler", "comment", NULL};
    static const char *const sampling_keys[] = {"temperature", "top_p", "top_k", "seed", NULL};
    char path[64];
    snprintf(path, sizeof path, "methods[%d]", i);
    arb_method_spec spec;
    char id[ARB_METHOD_NAME_MAX] = "", preset[32] = "", drafter[32] = "";
    int rc;
    if ((rc = set_string(id, sizeof id, e, "id", path, err)) ||
        (rc = set_string(preset, sizeof preset, e, "preset", path, err)) ||
        (rc = set_string(drafter, sizeof drafter, e, "drafter", path, err)))
        return rc;
    if (!id[0])
        return ARB_ERR(err, ARB_E_INVAL, "%s: missing required key \"id\"", path);
    if (preset[0]) {
        if ((rc = arb_method_spec_preset(preset, &spec, err))) {
            arb_err_prefix(err, "%s.preset", path);
            return rc;
        }
        if (drafter[0] && strcmp(drafter, spec.drafter))
            return ARB_ERR(err, ARB_E_INVAL, "%s.drafter: \"%s\" conflicts with preset \"%s\" (%s)",
                           path, drafter, preset, spec.drafter);
    } else if ((rc = arb_method_spec_default(drafter[0] ? drafter : "none", &spec, err))) {
        arb_err_prefix(err, "%s.drafter", path);
        return rc;
    }
    snprintf(spec.id, sizeof spec.id, "%s", id);
    if ((rc = set_string(spec.topology, sizeof spec.topology, e, "topology", path, err)) ||
        (rc = set_string(spec.verifier, sizeof spec.verifier, e, "verifier", path, err)) ||
        (rc = set_string(spec.scheduler, sizeof spec.scheduler, e, "scheduler", path, err)))
        return rc;
    param_set ps[MAX_KEYS];
    int n_ps = 0;
    long total = 1;
    for (const cJSON *k = e->child; k; k = k->next) {
        char kp[128];
        snprintf(kp, sizeof kp, "%s.%s", path, k->string);
        for (const cJSON *b = e->child; b != k; b = b->next)
            if (!strcmp(b->string, k->string))
                return ARB_ERR(err, ARB_E_INVAL, "%s: duplicate key", kp);
        bool skip = false;
        for (const char *const *r = reserved; *r && !skip; r++)
            skip = !strcmp(*r, k->string);
        if (skip)
            continue;
        for (const char *const *r = sampling_keys; *r; r++)
            if (!strcmp(*r, k->string))
                return ARB_ERR(err, ARB_E_INVAL,
                               "%s: sampling settings go in the top-level \"sampling\" list and "
                               "seeds in \"seed\", not in a method",
                               kp);
        const arb_method_param *p = arb_method_param_find(spec.drafter, k->string);
        if (!p) {
            if (arb_method_param_find(NULL, k->string))
                return ARB_ERR(err, ARB_E_INVAL, "%s: not a parameter of drafter \"%s\"", kp,
                               spec.drafter);
            return ARB_ERR(err, ARB_E_INVAL, "%s: unknown key", kp);
        }
        if (n_ps == MAX_KEYS)
            return ARB_ERR(err, ARB_E_INVAL, "%s: too many parameters", kp);
        param_set *s = &ps[n_ps++];
        *s = (param_set){k->string, p, k, 1, false};
        /* A list is a sweep, except for list-valued parameters, where a list of lists is. */
        s->sweep = cJSON_IsArray(k) &&
                   (p->type != ARB_PARAM_DOUBLE_LIST || (k->child && cJSON_IsArray(k->child)));
        if (s->sweep) {
            s->n = cJSON_GetArraySize(k);
            if (s->n == 0)
                return ARB_ERR(err, ARB_E_INVAL, "%s: empty sweep list", kp);
            int j = 0;
            for (const cJSON *v = k->child; v; v = v->next, j++) {
                char ep[160];
                snprintf(ep, sizeof ep, "%s[%d]", kp, j);
                if ((rc = check_value(p, v, ep, err)))
                    return rc;
            }
            total *= s->n;
            if (total > MAX_POINTS)
                return ARB_ERR(err, ARB_E_INVAL, "%s: sweep has more than %d points", path,
                               MAX_POINTS);
        } else if ((rc = check_value(p, k, kp, err))) {
            return rc;
        }
    }
    arb_cfg_method *nm = arb_realloc(c->methods, (size_t)(c->n_methods + total) * sizeof *nm);
    if (!nm)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    c->methods = nm;
    int pick[MAX_KEYS] = {0};
    for (long t = 0; t < total; t++) {
        long r = t; /* mixed radix, last key fastest */
        for (int k = n_ps - 1; k >= 0; k--) {
            pick[k] = (int)(r % ps[k].n);
            r /= ps[k].n;
        }
        if ((rc = add_point(c, &spec, ps, n_ps, pick, i, path, err)))
            return rc;
    }
    return ARB_OK;
}

int arb_config_methods_parse(arb_config *c, const cJSON *root, arb_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "methods");
    if (!arr)
        return ARB_ERR(err, ARB_E_INVAL, "methods: missing required key");
    if (!cJSON_IsArray(arr) || !arr->child)
        return ARB_ERR(err, ARB_E_INVAL, "methods: expected a non-empty array of objects, got %s",
                       cJSON_IsArray(arr) ? "[]" : arb_config_json_type(arr));
    int i = 0, rc;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        if (!cJSON_IsObject(e))
            return ARB_ERR(err, ARB_E_INVAL, "methods[%d]: expected object, got %s", i,
                           arb_config_json_type(e));
        if ((rc = parse_method(c, e, i, err)))
            return rc;
    }
    for (int a = 0; a < c->n_methods; a++)
        for (int b = 0; b < a; b++)
            if (!strcmp(c->methods[a].label, c->methods[b].label))
                return ARB_ERR(err, ARB_E_INVAL, "methods[%d].id: duplicate id \"%s\" (also methods[%d])",
                               c->methods[a].index, c->methods[a].label, c->methods[b].index);
    /* AR-like methods first: their ids are the reference for the lossless check. */
    int w = 0;
    for (int r = 0; r < c->n_methods; r++)
        if (!strcmp(c->methods[r].spec.drafter, "none")) {
            arb_cfg_method t = c->methods[r];
            memmove(&c->methods[w + 1], &c->methods[w], (size_t)(r - w) * sizeof t);
            c->methods[w++] = t;
        }
    return ARB_OK;
}

/* Parameters that change nothing for this spec and were not keys before they applied to its
   drafter: left out so that older run keys stay (PLD's and TR's budget when it cuts nothing,
   TR's sequoia_p when the template is whole). */
static bool inert_param(const arb_method_spec *s, const char *name)
{
    const bool pld = !strcmp(s->drafter, "pld"), tr = !strcmp(s->drafter, "tr");
    if (!strcmp(name, "budget") && !s->budget_auto)
        return (pld && s->budget >= 1 + s->max_draft) || (tr && s->budget >= 81);
    if (!strcmp(name, "sequoia_p"))
        return tr && s->budget >= 81 && !s->budget_auto;
    return false;
}

char *arb_config_spec_json(const arb_method_spec *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", s->id);
    cJSON_AddStringToObject(o, "drafter", s->drafter);
    cJSON_AddStringToObject(o, "topology", s->topology);
    cJSON_AddStringToObject(o, "verifier", s->verifier);
    cJSON_AddStringToObject(o, "scheduler", s->scheduler);
    int n;
    const arb_method_param *tab = arb_method_params(&n);
    for (int i = 0; i < n; i++) {
        const arb_method_param *p = &tab[i];
        if (arb_method_param_find(s->drafter, p->name) != p || cJSON_GetObjectItem(o, p->name) ||
            !strcmp(p->name, "temperature") || !strcmp(p->name, "top_p") ||
            !strcmp(p->name, "top_k") || !strcmp(p->name, "seed") ||
            (!strncmp(p->name, "typical_", 8) && strcmp(s->verifier, "typical")) || /* older run keys stay */
            (!strcmp(p->name, "ar_guard") && !s->ar_guard) ||
            (!strncmp(p->name, "selector", 8) && !strcmp(s->selector, "fixed")) || inert_param(s, p->name))
            continue;
        const char *f = (const char *)s + p->offset;
        if (arb_method_param_takes_auto(p) && s->budget_auto) { /* unresolved: the config's word */
            cJSON_AddStringToObject(o, p->name, "auto");
            continue;
        }
        switch (p->type) {
        case ARB_PARAM_INT: cJSON_AddNumberToObject(o, p->name, *(const int *)f); break;
        case ARB_PARAM_U64: cJSON_AddNumberToObject(o, p->name, (double)*(const uint64_t *)f); break;
        case ARB_PARAM_DOUBLE: cJSON_AddNumberToObject(o, p->name, *(const double *)f); break;
        case ARB_PARAM_BOOL: cJSON_AddBoolToObject(o, p->name, *(const bool *)f); break;
        case ARB_PARAM_STR: cJSON_AddStringToObject(o, p->name, f); break;
        case ARB_PARAM_DOUBLE_LIST: {
            cJSON *a = cJSON_AddArrayToObject(o, p->name);
            const double *d = (const double *)f;
            for (int j = 0; a && j < ARB_SEQUOIA_K_MAX && d[j] > 0; j++)
                cJSON_AddItemToArray(a, cJSON_CreateNumber(d[j]));
            break;
        }
        }
    }
    /* budget "auto" resolved: the machine's cost table the run sized its chains and trees by, so a
       run records what its per-step choices came from (never in a config's spec, so run keys
       do not see it) */
    const arb_chain_cost *cc = &s->chain_cost;
    if (cc->n_max > 0) {
        cJSON *t = cJSON_AddObjectToObject(o, "cost_table");
        cJSON *w = t ? cJSON_AddArrayToObject(t, "w_us") : NULL;
        for (int k = 1; w && k <= cc->n_max; k++)
            cJSON_AddItemToArray(w, cJSON_CreateNumber(cc->w_us[k]));
        if (t) {
            cJSON_AddNumberToObject(t, "ctx_us", cc->ctx_us);
            cJSON_AddNumberToObject(t, "ctx0_us", cc->ctx0_us);
        }
    }
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return txt;
}
