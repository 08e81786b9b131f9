/* topobank.c — preprocessed index-path trees for head drafters (see topobank.h). */
#include "topobank.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int arb_topo_from_etree(const arb_etree *e, int max_depth, arb_topo *t, arb_err *err)
{
    if (e->max_depth > max_depth)
        return ARB_ERR(err, ARB_E_INVAL, "tree of depth %d: the heads reach depth %d", e->max_depth, max_depth);
    memset(t, 0, sizeof *t);
    t->n = e->n;
    t->max_depth = e->max_depth;
    for (int d = 0; d <= ARB_ETREE_DEPTH; d++)
        t->chain[d] = -1;
    t->chain[0] = 0;
    for (int i = 0; i < e->n; i++) {
        t->parent[i] = e->parent[i];
        t->rank[i] = e->rank[i];
        t->depth[i] = e->depth[i];
        if (i == 0)
            continue;
        t->n_kids[e->parent[i]]++;
        int d = e->depth[i];
        if (e->rank[i] + 1 > t->n_top[d - 1])
            t->n_top[d - 1] = e->rank[i] + 1;
        if (e->rank[i] == 0 && t->chain[d - 1] == e->parent[i])
            t->chain[d] = i;
        t->has_kids[e->parent[i]] = true;
    }
    for (int dep = 0, i = 0; dep <= ARB_ETREE_DEPTH + 1; dep++) {
        while (i < t->n && t->depth[i] < dep)
            i++;
        t->level_start[dep] = i;
    }
    return ARB_OK;
}

int arb_topobank_new(const char *const *choices, int n, int max_depth, arb_topobank **out, arb_err *err)
{
    *out = NULL;
    if (n < 1 || n > ARB_TOPOBANK_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "bank: %d trees (1..%d)", n, ARB_TOPOBANK_MAX);
    arb_topobank *b = calloc(1, sizeof *b);
    arb_etree *e = malloc(sizeof *e);
    int rc = !b || !e ? ARB_ERR(err, ARB_E_NOMEM, "bank: out of memory") : ARB_OK;
    for (int i = 0; i < n && !rc; i++) {
        if (!(rc = arb_etree_parse(choices[i], e, err)))
            rc = arb_topo_from_etree(e, max_depth, &b->t[i], err);
        if (rc)
            arb_err_prefix(err, "bank: tree %d", i);
    }
    free(e);
    if (rc) {
        free(b);
        return rc;
    }
    b->n = n;
    b->sched = (arb_topobank_sched){.static_idx = -1, .t_plus = -1, .t_minus = -1, .tau = NAN};
    *out = b;
    return ARB_OK;
}

void arb_topobank_free(arb_topobank *b) { free(b); }

static int get_idx(const cJSON *root, const char *key, int n, int *dst, const char *path, arb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v)
        return ARB_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != (int)v->valuedouble || v->valueint < 0 || v->valueint >= n)
        return ARB_ERR(err, ARB_E_INVAL, "%s: $.%s: a tree index in 0..%d", path, key, n - 1);
    *dst = v->valueint;
    return ARB_OK;
}

int arb_topobank_load(const char *path, int max_depth, arb_topobank **out, arb_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ARB_ERR(err, ARB_E_IO, "bank: cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *txt = len >= 0 && len < (1 << 24) ? malloc((size_t)len + 1) : NULL;
    size_t got = txt ? fread(txt, 1, (size_t)len, f) : 0;
    fclose(f);
    if (!txt || got != (size_t)len) {
        free(txt);
        return ARB_ERR(err, ARB_E_IO, "bank: cannot read %s", path);
    }
    txt[len] = 0;
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    if (!root)
        return ARB_ERR(err, ARB_E_FORMAT, "bank: %s: not JSON", path);
    const cJSON *trees = cJSON_GetObjectItemCaseSensitive(root, "trees");
    int n = cJSON_IsArray(trees) ? cJSON_GetArraySize(trees) : -1, rc = ARB_OK;
    const char *ch[ARB_TOPOBANK_MAX];
    char *owned[ARB_TOPOBANK_MAX] = {0};
    if (n < 1 || n > ARB_TOPOBANK_MAX)
        rc = ARB_ERR(err, ARB_E_FORMAT, "bank: %s: $.trees: an array of 1..%d trees", path, ARB_TOPOBANK_MAX);
    for (int i = 0; i < n && !rc; i++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(trees, i), "choices");
        if (!cJSON_IsArray(c) || !(owned[i] = cJSON_PrintUnformatted(c)))
            rc = ARB_ERR(err, ARB_E_FORMAT, "bank: %s: $.trees[%d].choices: an array of index paths", path, i);
        ch[i] = owned[i];
    }
    arb_topobank *b = NULL;
    if (!rc && (rc = arb_topobank_new(ch, n, max_depth, &b, err)))
        arb_err_prefix(err, "%s", path);
    if (!rc)
        rc = get_idx(root, "static", n, &b->sched.static_idx, path, err);
    if (!rc)
        rc = get_idx(root, "t_plus", n, &b->sched.t_plus, path, err);
    if (!rc)
        rc = get_idx(root, "t_minus", n, &b->sched.t_minus, path, err);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "tau");
    if (!rc && v && !cJSON_IsNull(v)) {
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1))
            rc = ARB_ERR(err, ARB_E_INVAL, "bank: %s: $.tau: a number in [0, 1]", path);
        else
            b->sched.tau = v->valuedouble;
    }
    v = cJSON_GetObjectItemCaseSensitive(root, "feature");
    if (!rc && v) {
        if (!cJSON_IsString(v) || (strcmp(v->valuestring, "lit") && strcmp(v->valuestring, "gD") &&
                                   strcmp(v->valuestring, "sum")))
            rc = ARB_ERR(err, ARB_E_INVAL, "bank: %s: $.feature: lit | gD | sum", path);
        else
            snprintf(b->sched.feature, sizeof b->sched.feature, "%s", v->valuestring);
    }
    v = cJSON_GetObjectItemCaseSensitive(root, "ladder");
    if (!rc && v) {
        int k = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
        if (k != n - 1)
            rc = ARB_ERR(err, ARB_E_INVAL, "bank: %s: $.ladder: %d ascending thresholds (one fewer than trees)", path,
                         n - 1);
        for (int i = 0; i < k && !rc; i++) {
            const cJSON *x = cJSON_GetArrayItem(v, i);
            if (!cJSON_IsNumber(x) || (i && x->valuedouble < b->sched.ladder[i - 1]))
                rc = ARB_ERR(err, ARB_E_INVAL, "bank: %s: $.ladder[%d]: not an ascending number", path, i);
            else
                b->sched.ladder[i] = x->valuedouble;
        }
        if (!rc)
            b->sched.n_ladder = k;
    }
    for (int i = 0; i < n && i < ARB_TOPOBANK_MAX; i++)
        cJSON_free(owned[i]);
    cJSON_Delete(root);
    if (rc) {
        arb_topobank_free(b);
        return rc;
    }
    *out = b;
    return ARB_OK;
}
