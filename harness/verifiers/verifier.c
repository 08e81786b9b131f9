/* verifier.c — the name → vtable registry, regime names, and helpers every verifier uses. */
#include "verifier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "process_simd.h"
#include "vf_int.h"

/* The registry (STYLE practice 11). Adding a row: see the checklist in verifier.h.
   greedy (greedy.c) is the T = 0 walk; the others are the sampling verifiers. */
static const arb_verifier_i *const registry[] = {
    &arb_verifier_greedy, &arb_verifier_nss,    &arb_verifier_naive,     &arb_verifier_naivetree, &arb_verifier_bv,
    &arb_verifier_spectr, &arb_verifier_specinfer, &arb_verifier_khisti,    &arb_verifier_traversal,
    &arb_verifier_typical, /* approximate (not lossless): docs/spec/verification.md §9 */
};

int arb_verifier_count(void)
{
    return (int)(sizeof registry / sizeof registry[0]);
}

const arb_verifier_i *arb_verifier_at(int i)
{
    return i >= 0 && (size_t)i < sizeof registry / sizeof registry[0] ? registry[i] : NULL;
}

static const char *name_at(int i) { return arb_verifier_at(i) ? registry[i]->name : NULL; }

const arb_verifier_i *arb_verifier_find(const char *name)
{
    return arb_verifier_at(arb_registry_index(name_at, name, false));
}

const char *arb_verifier_names(char *buf, size_t cap) { return arb_registry_names(name_at, buf, cap); }

const char *arb_verifier_sampling_names(arb_regime r, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; arb_verifier_at(i) && n < cap; i++) {
        const arb_verifier_i *v = arb_verifier_at(i);
        if (v->sampling && v->valid[r] != ARB_VALID_NO)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", v->name);
    }
    return buf;
}

static const char *const regime_names[ARB_REGIME_COUNT] = {"single", "iid", "delayed", "wor", "det"};

const char *arb_regime_name(arb_regime r)
{
    return (unsigned)r < ARB_REGIME_COUNT ? regime_names[r] : "?";
}

int arb_regime_parse(const char *s, arb_regime *out)
{
    for (int i = 0; s && i < ARB_REGIME_COUNT; i++)
        if (!strcmp(s, regime_names[i])) {
            *out = (arb_regime)i;
            return ARB_OK;
        }
    return ARB_E_INVAL;
}

int arb_verifier_check(const char *name, arb_regime r, arb_err *err)
{
    const arb_verifier_i *vi = arb_verifier_find(name);
    if (!vi)
        return ARB_ERR(err, ARB_E_INVAL, "verifier '%s': unknown", name ? name : "(null)");
    if ((unsigned)r >= ARB_REGIME_COUNT || vi->valid[r] == ARB_VALID_NO)
        return ARB_ERR(err, ARB_E_INVAL, "verifier '%s' is not valid for %s trees (docs/spec/verification.md §0.6)",
                       name, arb_regime_name(r));
    return ARB_OK;
}

arb_verifier_opts arb_verifier_default_opts(void)
{
    return (arb_verifier_opts){.V = 0, .n_nodes_max = 64, .specinfer_uniform = 0, .khisti_s = 5,
                               .spectr_tol = 1e-9, .greedy_first_match = 0, .typical_eps = 0.09,
                               .typical_alpha = 0.3};
}

int arb_verifier_new(const char *name, const arb_verifier_opts *o, arb_verifier **out, arb_err *err)
{
    *out = NULL;
    const arb_verifier_i *vi = arb_verifier_find(name);
    if (!vi)
        return ARB_ERR(err, ARB_E_INVAL, "verifier '%s': unknown", name ? name : "(null)");
    if (o->V <= 0 || o->n_nodes_max <= 0)
        return ARB_ERR(err, ARB_E_INVAL, "verifier '%s': V and n_nodes_max must be > 0", name);
    if (o->khisti_s < 2 || o->khisti_s > 15)
        return ARB_ERR(err, ARB_E_INVAL, "verifier '%s': khisti_s must be in [2, 15]", name);
    arb_verifier *v = calloc(1, sizeof *v);
    if (!v)
        return ARB_ERR(err, ARB_E_NOMEM, "verifier '%s': out of memory", name);
    v->iface = vi;
    int rc = vi->create(o, &v->ctx, err);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    return ARB_OK;
}

void arb_verifier_free(arb_verifier *v)
{
    if (!v)
        return;
    v->iface->destroy(v->ctx);
    free(v);
}

int arb_verifier_verify(arb_verifier *v, const arb_verify_in *in, arb_verify_out *out)
{
    return v->iface->verify(v->ctx, in, out);
}

/* ---------------- helpers ---------------- */

int arb_vf_children(const arb_tree *t, int v, int32_t *out)
{
    int n = 0;
    if (t->seq_len && t->seq_len[v] > 0) {
        for (int i = 0; i < t->seq_len[v]; i++) {
            int32_t c = t->child_seq[t->seq_start[v] + i];
            if (!(t->flags[c] & ARB_NODE_NOACCEPT))
                out[n++] = c;
        }
        return n;
    }
    for (int32_t c = t->first_child[v]; c >= 0; c = t->next_sibling[c])
        if (!(t->flags[c] & ARB_NODE_NOACCEPT))
            out[n++] = c;
    return n;
}

int arb_vf_distinct(const arb_tree *t, int v, int32_t *tmp, int32_t *out)
{
    int n = arb_vf_children(t, v, tmp), m = 0;
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < m && !dup; j++)
            dup = out[j] == tmp[i];
        if (!dup)
            out[m++] = tmp[i];
    }
    return m;
}

int arb_vf_check_in(const arb_verify_in *in, int V_max, int n_max, bool needs_q)
{
    if (!in || !in->tree || (!in->p && !in->p_row) || !in->rng || in->V <= 0 || in->V > V_max || in->tree->n > n_max ||
        in->tree->n < 1)
        return ARB_E_INVAL;
    if (needs_q && !in->q && in->tree->n > 1)
        return ARB_E_INVAL;
    return ARB_OK;
}

double arb_vf_residual(const double *x, double a, const double *y, int V, double *r)
{
    /* r = [a x - y]_+ and its index-order sum, at vector width with the zeros skipped (the same
       bits: y * 1 is y) */
    return arb_proc_residual_sum(arb_proc_isa_best(), x, a, y, 1.0, V, r, 0.0);
}

int arb_vf_sample_or(arb_rng *rng, const double *w, const double *p, int V, int32_t *n_fallback)
{
    int y = arb_sample_w(rng, w, V);
    if (y < 0) {
        (*n_fallback)++;
        y = arb_sample_w(rng, p, V);
        ARB_ASSERT(y >= 0);
    }
    return y;
}
