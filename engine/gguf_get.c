/* gguf_get.c — lookups and typed getters over a validated GGUF directory (see gguf.c).
 *
 * Everything here reads what arb_gguf_open validated; nothing touches the file bytes
 * except through the views the directory holds.
 */
#include <string.h>

#include "gguf.h"
#include "gguf_int.h"

uint32_t arb_gguf_version(const arb_gguf *g) { return g->version; }
uint64_t arb_gguf_alignment(const arb_gguf *g) { return g->alignment; }
const char *arb_gguf_path(const arb_gguf *g) { return g->name; }
uint64_t arb_gguf_n_kv(const arb_gguf *g) { return g->n_kv; }
const arb_gguf_kv *arb_gguf_kv_at(const arb_gguf *g, uint64_t i) { return i < g->n_kv ? &g->kv[i] : NULL; }
uint64_t arb_gguf_n_tensors(const arb_gguf *g) { return g->n_tensors; }
const arb_gguf_tensor *arb_gguf_tensor_at(const arb_gguf *g, uint64_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const arb_gguf_value *arb_gguf_find(const arb_gguf *g, const char *key)
{
    uint64_t found;
    arb_gguf_int_probe(g, false, key, strlen(key), &found);
    return found ? &g->kv[found - 1].value : NULL;
}

const arb_gguf_tensor *arb_gguf_find_tensor(const arb_gguf *g, const char *name)
{
    uint64_t found;
    arb_gguf_int_probe(g, true, name, strlen(name), &found);
    return found ? &g->tensors[found - 1] : NULL;
}

static const arb_gguf_value *get(const arb_gguf *g, const char *key, arb_err *err, int *rc)
{
    const arb_gguf_value *v = arb_gguf_find(g, key);
    *rc = v ? ARB_OK : ARB_ERR(err, ARB_E_NOTFOUND, "%s: key '%s' not found", g->name, key);
    return v;
}

static int mismatch(const arb_gguf *g, const char *key, const char *want, const arb_gguf_value *v, arb_err *err)
{
    return ARB_ERR(err, ARB_E_FORMAT, "%s: key '%s': expected %s, found %s", g->name, key, want,
                   arb_gguf_type_name(v->type));
}

int arb_gguf_get_u64(const arb_gguf *g, const char *key, uint64_t *out, arb_err *err)
{
    int rc;
    const arb_gguf_value *v = get(g, key, err, &rc);
    if (!v)
        return rc;
    if (arb_gguf_int_unsigned(v->type) || (arb_gguf_int_signed(v->type) && v->v.i64 >= 0)) {
        *out = arb_gguf_int_unsigned(v->type) ? v->v.u64 : (uint64_t)v->v.i64;
        return ARB_OK;
    }
    return mismatch(g, key, "a non-negative integer", v, err);
}

int arb_gguf_get_i64(const arb_gguf *g, const char *key, int64_t *out, arb_err *err)
{
    int rc;
    const arb_gguf_value *v = get(g, key, err, &rc);
    if (!v)
        return rc;
    if (arb_gguf_int_signed(v->type) || (arb_gguf_int_unsigned(v->type) && v->v.u64 <= INT64_MAX)) {
        *out = arb_gguf_int_signed(v->type) ? v->v.i64 : (int64_t)v->v.u64;
        return ARB_OK;
    }
    return mismatch(g, key, "an integer that fits in i64", v, err);
}

int arb_gguf_get_f64(const arb_gguf *g, const char *key, double *out, arb_err *err)
{
    int rc;
    const arb_gguf_value *v = get(g, key, err, &rc);
    if (!v)
        return rc;
    if (v->type == ARB_GGUF_F32 || v->type == ARB_GGUF_F64)
        *out = v->v.f64;
    else if (arb_gguf_int_signed(v->type))
        *out = (double)v->v.i64;
    else if (arb_gguf_int_unsigned(v->type))
        *out = (double)v->v.u64;
    else
        return mismatch(g, key, "a number", v, err);
    return ARB_OK;
}

int arb_gguf_get_bool(const arb_gguf *g, const char *key, bool *out, arb_err *err)
{
    int rc;
    const arb_gguf_value *v = get(g, key, err, &rc);
    if (!v)
        return rc;
    if (v->type != ARB_GGUF_BOOL)
        return mismatch(g, key, "bool", v, err);
    *out = v->v.b;
    return ARB_OK;
}

int arb_gguf_get_str(const arb_gguf *g, const char *key, arb_gguf_str *out, arb_err *err)
{
    int rc;
    const arb_gguf_value *v = get(g, key, err, &rc);
    if (!v)
        return rc;
    if (v->type != ARB_GGUF_STRING)
        return mismatch(g, key, "string", v, err);
    *out = v->v.str;
    return ARB_OK;
}

void arb_gguf_str_copy(arb_gguf_str s, char *buf, size_t cap)
{
    if (!cap)
        return;
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = 0;
}
