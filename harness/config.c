/* config.c — see config.h; the schema is documented in docs/config.md.
 *
 * Validation happens once, here, with the JSON path of every offending value in the
 * message; the runner trusts what comes out. Method parameters are checked against the
 * parameter table of method.h (name, type, range, drafters it applies to), so a parameter
 * added there is accepted by configs without touching this file.
 */
#include "config.h"
#include "config_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "alloc.h"
#include "sha256.h"
#include "topologies/topology.h"

#define PATH_MAX_ 256

const char *arb_config_json_type(const cJSON *v)
{
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsObject(v)) return "object";
    return "null";
}

bool arb_config_json_is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9007199254740992.0;
}

/* Reject duplicate keys (cJSON keeps them) and keys not in `allowed` (NULL-terminated;
   NULL = any key accepted here, the caller checks). */
static int check_keys(const cJSON *obj, const char *path, const char *const *allowed, arb_err *err)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        for (const cJSON *b = obj->child; b != a; b = b->next)
            if (!strcmp(a->string, b->string))
                return ARB_ERR(err, ARB_E_INVAL, "%s%s%s: duplicate key", path, *path ? "." : "",
                               a->string);
        if ((!strcmp(a->string, "comment") || !strcmp(a->string, "description")) && !cJSON_IsString(a))
            return ARB_ERR(err, ARB_E_INVAL, "%s%s%s: expected string, got %s", path, *path ? "." : "",
                           a->string, arb_config_json_type(a));
        if (!allowed)
            continue;
        bool ok = false;
        for (const char *const *k = allowed; *k && !ok; k++)
            ok = !strcmp(*k, a->string);
        if (!ok) {
            char known[512] = "";
            for (const char *const *k = allowed; *k; k++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         k == allowed ? "" : " ", *k);
            return ARB_ERR(err, ARB_E_INVAL, "%s%s%s: unknown key (known: %s)", path,
                           *path ? "." : "", a->string, known);
        }
    }
    return ARB_OK;
}

static int get_str(const cJSON *o, const char *path, const char *key, bool required, char **out,
                   arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v) {
        if (required)
            return ARB_ERR(err, ARB_E_INVAL, "%s: missing required key \"%s\"", path, key);
        return ARB_OK;
    }
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected non-empty string, got %s", path, key,
                       cJSON_IsString(v) ? "\"\"" : arb_config_json_type(v));
    if (!(*out = arb_strdup(v->valuestring)))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    return ARB_OK;
}

/* Integer in [lo, hi]; absent -> def. */
static int get_int(const cJSON *o, const char *path, const char *key, long long lo, long long hi,
                   long long def, long long *out, arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = def;
    if (!v)
        return ARB_OK;
    if (!arb_config_json_is_int(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        char got[64];
        if (cJSON_IsNumber(v))
            snprintf(got, sizeof got, "%g", v->valuedouble);
        else
            snprintf(got, sizeof got, "%s", arb_config_json_type(v));
        if (hi >= (1LL << 40))
            return ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected integer >= %lld, got %s", path, key,
                           lo, got);
        return ARB_ERR(err, ARB_E_INVAL, "%s.%s: expected integer in [%lld, %lld], got %s", path,
                       key, lo, hi, got);
    }
    *out = (long long)v->valuedouble;
    return ARB_OK;
}

/* Array of objects (or one object when `one_ok`): returns the array node in *arr. */
static int get_list(const cJSON *root, const char *key, bool one_ok, const cJSON **arr, arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *arr = v;
    if (!v)
        return ARB_ERR(err, ARB_E_INVAL, "%s: missing required key", key);
    if (cJSON_IsObject(v) && one_ok)
        return ARB_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
        return ARB_ERR(err, ARB_E_INVAL, "%s: expected a non-empty array of objects, got %s", key,
                       cJSON_IsArray(v) ? "[]" : arb_config_json_type(v));
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++)
        if (!cJSON_IsObject(e))
            return ARB_ERR(err, ARB_E_INVAL, "%s[%d]: expected object, got %s", key, i,
                           arb_config_json_type(e));
    return ARB_OK;
}

static int parse_models(arb_config *c, const cJSON *root, arb_err *err)
{
    static const char *const keys[] = {"id", "path", "threads", "n_ctx", "backend", "comment", NULL};
    const cJSON *arr;
    int rc = get_list(root, "models", false, &arr, err);
    if (rc)
        return rc;
    c->n_models = cJSON_GetArraySize(arr);
    if (!(c->models = arb_calloc((size_t)c->n_models, sizeof *c->models)))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        char p[PATH_MAX_];
        snprintf(p, sizeof p, "models[%d]", i);
        arb_cfg_model *m = &c->models[i];
        long long v;
        char *backend = NULL;
        if ((rc = check_keys(e, p, keys, err)) || (rc = get_str(e, p, "id", true, &m->id, err)) ||
            (rc = get_str(e, p, "path", true, &m->path, err)) ||
            (rc = get_int(e, p, "threads", 0, 1024, 0, &v, err)))
            return rc;
        m->threads = (int)v;
        if ((rc = get_int(e, p, "n_ctx", 0, 1 << 24, 0, &v, err)) ||
            (rc = get_str(e, p, "backend", false, &backend, err)))
            return rc;
        m->n_ctx = (int)v;
        if (backend && strcmp(backend, "cpu") && strcmp(backend, "cuda") && strcmp(backend, "cuda-exact"))
            rc = ARB_ERR(err, ARB_E_INVAL,
                         "%s.backend: expected \"cpu\", \"cuda\" or \"cuda-exact\", got \"%s\"", p, backend);
        m->cuda = backend && !strncmp(backend, "cuda", 4);
        m->gpu_exact = backend && !strcmp(backend, "cuda-exact");
        free(backend);
        for (int j = 0; j < i && !rc; j++)
            if (!strcmp(c->models[j].id, m->id))
                rc = ARB_ERR(err, ARB_E_INVAL, "%s.id: duplicate id \"%s\" (also models[%d])", p,
                             m->id, j);
        if (rc)
            return rc;
    }
    return ARB_OK;
}

static int parse_datasets(arb_config *c, const cJSON *root, arb_err *err)
{
    static const char *const keys[] = {"name", "split", "limit", "max_new_tokens", "comment", NULL};
    const cJSON *arr;
    int rc = get_list(root, "datasets", false, &arr, err);
    if (rc)
        return rc;
    c->n_datasets = cJSON_GetArraySize(arr);
    if (!(c->datasets = arb_calloc((size_t)c->n_datasets, sizeof *c->datasets)))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        char p[PATH_MAX_];
        snprintf(p, sizeof p, "datasets[%d]", i);
        arb_cfg_dataset *d = &c->datasets[i];
        long long v;
        if ((rc = check_keys(e, p, keys, err)) || (rc = get_str(e, p, "name", true, &d->name, err)) ||
            (rc = get_str(e, p, "split", false, &d->split, err)) ||
            (rc = get_int(e, p, "limit", 1, 1LL << 41, 0, &v, err)))
            return rc;
        d->limit = v > 1 << 30 ? 1 << 30 : (int)v;
        if ((rc = get_int(e, p, "max_new_tokens", 1, 1 << 20, 512, &v, err)))
            return rc;
        d->max_new_tokens = (int)v;
        if (!arb_dataset_find(d->name)) {
            size_t n;
            const arb_dataset_info *all = arb_dataset_list(&n);
            char known[1024] = "";
            for (size_t j = 0; j < n; j++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", j ? " " : "",
                         all[j].name);
            return ARB_ERR(err, ARB_E_INVAL, "%s.name: unknown dataset \"%s\" (known: %s)", p,
                           d->name, known);
        }
    }
    return ARB_OK;
}

static int parse_sampling(arb_config *c, const cJSON *root, arb_err *err)
{
    static const char *const keys[] = {"temperature", "top_p", "top_k", "comment", NULL};
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "sampling");
    int rc;
    if (!arr) {
        if (!(c->sampling = arb_calloc(1, sizeof *c->sampling)))
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        c->sampling[0] = (arb_cfg_sampling){0.0, 1.0, 0};
        c->n_sampling = 1;
        return ARB_OK;
    }
    if ((rc = get_list(root, "sampling", true, &arr, err)))
        return rc;
    int n_obj = cJSON_IsObject(arr) ? 1 : cJSON_GetArraySize(arr);
    for (int i = 0; i < n_obj; i++) {
        const cJSON *e = cJSON_IsObject(arr) ? arr : cJSON_GetArrayItem(arr, i);
        char p[PATH_MAX_];
        snprintf(p, sizeof p, cJSON_IsObject(arr) ? "sampling" : "sampling[%d]", i);
        if ((rc = check_keys(e, p, keys, err)))
            return rc;
        /* Each key: a value or a list of values (a sweep); expand the product. */
        const char *names[3] = {"temperature", "top_p", "top_k"};
        const double lo[3] = {0, 1e-9, 0}, hi[3] = {100, 1, 1 << 24}, def[3] = {0, 1, 0};
        double vals[3][64];
        int nv[3];
        for (int k = 0; k < 3; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, names[k]);
            nv[k] = 0;
            if (!v) {
                vals[k][nv[k]++] = def[k];
                continue;
            }
            const cJSON *it = cJSON_IsArray(v) ? v->child : v;
            if (cJSON_IsArray(v) && !it)
                return ARB_ERR(err, ARB_E_INVAL, "%s.%s: empty sweep list", p, names[k]);
            for (int j = 0; it; it = cJSON_IsArray(v) ? it->next : NULL, j++) {
                bool ok = k == 2 ? arb_config_json_is_int(it) : cJSON_IsNumber(it);
                if (nv[k] == 64)
                    return ARB_ERR(err, ARB_E_INVAL, "%s.%s: sweep list longer than 64 values", p,
                                   names[k]);
                if (!ok || it->valuedouble < lo[k] || it->valuedouble > hi[k])
                    return ARB_ERR(err, ARB_E_INVAL, "%s.%s%s: expected %s in [%g, %g], got %s", p,
                                   names[k], cJSON_IsArray(v) ? "[]" : "",
                                   k == 2 ? "integer" : "number", k == 1 ? 0.0 : lo[k], hi[k],
                                   arb_config_json_type(it));
                vals[k][nv[k]++] = it->valuedouble;
            }
        }
        int add = nv[0] * nv[1] * nv[2];
        arb_cfg_sampling *ns = arb_realloc(c->sampling, (size_t)(c->n_sampling + add) * sizeof *ns);
        if (!ns)
            return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
        c->sampling = ns;
        for (int a = 0; a < nv[0]; a++)
            for (int b = 0; b < nv[1]; b++)
                for (int d = 0; d < nv[2]; d++)
                    c->sampling[c->n_sampling++] =
                        (arb_cfg_sampling){vals[0][a], vals[1][b], (int)vals[2][d]};
    }
    return ARB_OK;
}

static int parse_seeds(arb_config *c, const cJSON *root, arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "seed");
    int n = !v ? 1 : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    if (n == 0)
        return ARB_ERR(err, ARB_E_INVAL, "seed: empty sweep list");
    if (!(c->seeds = arb_calloc((size_t)n, sizeof *c->seeds)))
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    c->n_seeds = n;
    const cJSON *it = v && cJSON_IsArray(v) ? v->child : v;
    for (int i = 0; it && i < n; i++, it = cJSON_IsArray(v) ? it->next : NULL) {
        if (!arb_config_json_is_int(it) || it->valuedouble < 0)
            return ARB_ERR(err, ARB_E_INVAL, "seed%s: expected integer >= 0, got %s",
                           cJSON_IsArray(v) ? "[]" : "", arb_config_json_type(it));
        c->seeds[i] = (int64_t)it->valuedouble;
    }
    return ARB_OK;
}


static int parse_root(arb_config *c, const cJSON *root, arb_err *err)
{
    static const char *const keys[] = {"name",     "description", "comment", "models",
                                       "datasets", "methods",     "sampling", "seed",
                                       "warmup",   "repeats",     "chat",    NULL};
    if (!cJSON_IsObject(root))
        return ARB_ERR(err, ARB_E_INVAL, "top level: expected an object, got %s", arb_config_json_type(root));
    int rc;
    long long v;
    if ((rc = check_keys(root, "", keys, err)) ||
        (rc = get_str(root, "top level", "name", true, &c->name, err)) ||
        (rc = parse_models(c, root, err)) || (rc = parse_datasets(c, root, err)) ||
        (rc = arb_config_methods_parse(c, root, err)) || (rc = parse_sampling(c, root, err)) ||
        (rc = parse_seeds(c, root, err)) || (rc = get_int(root, "", "warmup", 0, 100, 1, &v, err)))
        return rc;
    c->warmup = (int)v;
    if ((rc = get_int(root, "", "repeats", 1, ARB_CONFIG_MAX_REPEATS, 1, &v, err)))
        return rc;
    c->repeats = (int)v;
    /* A method that learns across generations (tables kept across prompts, or topology
       dynamic's acceptance and score calibration) would learn each repeat of a prompt from the
       one before it: measured with configs/quickstart.json and "repeats": 3, GOOSE-dyn's median
       wall time gave 1.68x AR against 1.24-1.27x in runs of one repeat, its τ 1.86 against 1.75. */
    for (int k = 0; k < c->n_methods && c->repeats > 1; k++) {
        const arb_method_spec *sp = &c->methods[k].spec;
        const arb_topology_i *topo = arb_topology_find(sp->topology); /* learns: has a verified hook */
        if (sp->hot_start || (topo && topo->verified))
            return ARB_ERR(err, ARB_E_INVAL,
                           "repeats: %d with methods[%d] (%s), which learns across generations (%s%s): each repeat "
                           "of a prompt would learn from the one before it; use \"repeats\": 1 (docs/config.md)",
                           c->repeats, c->methods[k].index, c->methods[k].label,
                           sp->hot_start ? "hot_start keeps its tables across prompts" : "topology ",
                           sp->hot_start ? "" : topo->name);
    }
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(root, "chat");
    if (ch && !cJSON_IsBool(ch))
        return ARB_ERR(err, ARB_E_INVAL, "chat: expected boolean, got %s", arb_config_json_type(ch));
    c->chat = !ch || cJSON_IsTrue(ch);
    return ARB_OK;
}

int arb_config_parse(const char *json, const char *name, arb_config **out, arb_err *err)
{
    *out = NULL;
    const char *end = NULL;
    errno = 0;
    cJSON *root = cJSON_ParseWithOpts(json, &end, true);
    /* cJSON returns NULL for both bad syntax and a failed allocation; only the latter sets
       errno to ENOMEM (its parser calls nothing else that does). */
    if (!root && errno == ENOMEM)
        return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory parsing JSON", name);
    if (!root) {
        int line = 1, col = 1;
        for (const char *q = json; end && q < end && *q; q++)
            *q == '\n' ? (line++, col = 1) : col++;
        return ARB_ERR(err, ARB_E_FORMAT, "%s:%d:%d: malformed JSON", name, line, col);
    }
    arb_config *c = arb_calloc(1, sizeof *c);
    int rc = c ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (!rc && !(c->path = arb_strdup(name)))
        rc = ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    if (!rc && (rc = parse_root(c, root, err)))
        arb_err_prefix(err, "%s", name);
    cJSON_Delete(root);
    if (rc) {
        arb_config_free(c);
        return rc;
    }
    *out = c;
    return ARB_OK;
}

int arb_config_load(const char *path, arb_config **out, arb_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 65536;
            char *nb = cap > (64u << 20) ? NULL : arb_realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                if (cap > (64u << 20))
                    return ARB_ERR(err, ARB_E_FORMAT, "%s: too large for a config (> 64 MiB)", path);
                return ARB_ERR(err, ARB_E_NOMEM, "%s: out of memory (%zu bytes)", path, cap);
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ARB_ERR(err, ARB_E_IO, "%s: read error", path);
    }
    buf[n] = 0;
    int rc = arb_config_parse(buf, path, out, err);
    free(buf);
    return rc;
}

void arb_config_free(arb_config *c)
{
    if (!c)
        return;
    for (int i = 0; c->models && i < c->n_models; i++)
        free(c->models[i].id), free(c->models[i].path);
    for (int i = 0; c->datasets && i < c->n_datasets; i++)
        free(c->datasets[i].name), free(c->datasets[i].split);
    for (int i = 0; c->methods && i < c->n_methods; i++)
        free(c->methods[i].label), free(c->methods[i].base_id), free(c->methods[i].sweep_json);
    free(c->models);
    free(c->datasets);
    free(c->methods);
    free(c->sampling);
    free(c->seeds);
    free(c->name);
    free(c->path);
    free(c);
}

int arb_config_cell(const arb_config *c, int model, int dataset, int method, int sampling,
                    int seed, const char *model_sha256, char **json, char key[17], arb_err *err)
{
    *json = NULL;
    key[0] = 0;
    const arb_cfg_model *m = &c->models[model];
    const arb_cfg_dataset *d = &c->datasets[dataset];
    const arb_cfg_sampling *s = &c->sampling[sampling];
    char *spec = arb_config_spec_json(&c->methods[method].spec);
    cJSON *o = cJSON_CreateObject(), *mo = cJSON_CreateObject(), *dso = cJSON_CreateObject(),
          *so = cJSON_CreateObject(), *sp = spec ? cJSON_Parse(spec) : NULL;
    free(spec);
    if (!o || !mo || !dso || !so || !sp) {
        cJSON_Delete(o), cJSON_Delete(mo), cJSON_Delete(dso), cJSON_Delete(so), cJSON_Delete(sp);
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(mo, "id", m->id);
    cJSON_AddStringToObject(mo, model_sha256 ? "sha256" : "path", model_sha256 ? model_sha256 : m->path);
    cJSON_AddItemToObject(o, "model", mo);
    cJSON_AddStringToObject(dso, "name", d->name);
    cJSON_AddStringToObject(dso, "split", d->split ? d->split : "");
    cJSON_AddNumberToObject(dso, "max_new_tokens", d->max_new_tokens);
    cJSON_AddItemToObject(o, "dataset", dso);
    cJSON_AddItemToObject(o, "method", sp);
    cJSON_AddNumberToObject(so, "temperature", s->temperature);
    cJSON_AddNumberToObject(so, "top_p", s->top_p);
    cJSON_AddNumberToObject(so, "top_k", s->top_k);
    cJSON_AddItemToObject(o, "sampling", so);
    cJSON_AddNumberToObject(o, "seed", (double)c->seeds[seed]);
    cJSON_AddBoolToObject(o, "chat", c->chat);
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!txt)
        return ARB_ERR(err, ARB_E_NOMEM, "out of memory");
    char hex[65];
    arb_sha256_hex(txt, strlen(txt), hex);
    memcpy(key, hex, 16);
    key[16] = 0;
    *json = txt;
    return ARB_OK;
}
