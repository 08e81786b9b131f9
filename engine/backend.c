/* backend.c — backend selection and the wrappers that call through the vtable.
 * These wrappers are the only code that dereferences `iface` (STYLE.md practice 10). */
#include "backend.h"

#include <string.h>

int arb_backend_init(arb_backend_kind k, int n_threads, const char *vec_family, arb_backend *be, arb_err *err)
{
    memset(be, 0, sizeof *be);
    switch (k) {
    case ARB_BACKEND_CPU:
        return arb_backend_cpu_init(n_threads, vec_family, be, err);
    case ARB_BACKEND_CUDA:
        /* The GPU does not run op by op through this table: a whole eval goes to
           engine/cuda (forward.c), whose contexts use the CPU backend's pool only. */
        return ARB_ERR(err, ARB_E_INVAL, "backend: cuda runs whole evals (engine/cuda/cuda.h), not ops");
    }
    return ARB_ERR(err, ARB_E_INVAL, "backend: unknown kind %d", (int)k);
}

void arb_backend_release(arb_backend *be)
{
    if (!be || !be->iface)
        return;
    if (be->iface->free)
        be->iface->free(be->ctx);
    memset(be, 0, sizeof *be);
}

const char *arb_backend_name(const arb_backend *be) { return be->iface ? be->iface->name : "none"; }

int arb_backend_n_threads(const arb_backend *be)
{
    return be->iface->n_threads ? be->iface->n_threads(be->ctx) : 1;
}

size_t arb_backend_matmul_work_bytes(const arb_backend *be, const arb_qmat *w, int n_tok)
{
    return be->iface->matmul_work_bytes(be->ctx, w, n_tok);
}

void arb_backend_matmul(const arb_backend *be, const arb_qmat *w, const float *x, int n_tok, float *y,
                        void *work)
{
    be->iface->matmul(be->ctx, w, x, n_tok, y, work);
}

void arb_backend_matmul_multi(const arb_backend *be, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                              float *const *ys, void *work)
{
    if (be->iface->matmul_multi) {
        be->iface->matmul_multi(be->ctx, ws, nw, x, n_tok, ys, work);
        return;
    }
    for (int i = 0; i < nw; i++)
        be->iface->matmul(be->ctx, ws[i], x, n_tok, ys[i], work);
}

void arb_backend_get_rows(const arb_backend *be, const arb_qmat *w, const int32_t *ids, int n, float *out)
{
    be->iface->get_rows(be->ctx, w, ids, n, out);
}

void arb_backend_rmsnorm(const arb_backend *be, const float *x, const float *g, int n, int dim, float eps,
                         float *out)
{
    be->iface->rmsnorm(be->ctx, x, g, n, dim, eps, out);
}

void arb_backend_rope(const arb_backend *be, float *x, int n, int n_head, int head_dim, const int32_t *pos,
                      const float *cs, int neox)
{
    be->iface->rope(be->ctx, x, n, n_head, head_dim, pos, cs, neox);
}

void arb_backend_attention(const arb_backend *be, const arb_attn_args *a) { be->iface->attention(be->ctx, a); }

void arb_attn_store_new(const arb_attn_args *a, int t0, int t1)
{
    const size_t hd = (size_t)a->head_dim, bytes = hd * sizeof(float);
    for (int t = t0; t < t1; t++)
        for (int h = 0; h < a->n_head_kv; h++) {
            const size_t src = ((size_t)t * a->n_head_kv + h) * hd;
            const size_t dst = h * a->kv_head_stride + (size_t)(a->n_prefix + t) * a->kv_stride;
            memcpy(a->k + dst, a->k_new + src, bytes);
            memcpy(a->v + dst, a->v_new + src, bytes);
        }
}

void arb_backend_rope_attention(const arb_backend *be, const arb_rope_args *r, const arb_attn_args *a)
{
    if (be->iface->rope_attention) {
        be->iface->rope_attention(be->ctx, r, a);
        return;
    }
    arb_backend_rope(be, r->q, a->n, a->n_head, a->head_dim, r->pos, r->cs, r->neox);
    arb_backend_rope(be, r->k, a->n, a->n_head_kv, a->head_dim, r->pos, r->cs, r->neox);
    arb_backend_attention(be, a);
}

void arb_backend_geglu(const arb_backend *be, float *g, const float *u, int n, int dim)
{
    be->iface->geglu(be->ctx, g, u, n, dim);
}

void arb_backend_swiglu(const arb_backend *be, float *g, const float *u, int n, int dim)
{
    be->iface->swiglu(be->ctx, g, u, n, dim);
}

void arb_backend_norm_matmul_multi(const arb_backend *be, const float *x, const float *g, int dim, float eps,
                                   float *xb, const arb_qmat *const *ws, int nw, int n, float *const *ys, void *work)
{
    if (be->iface->norm_matmul_multi) {
        be->iface->norm_matmul_multi(be->ctx, x, g, dim, eps, xb, ws, nw, n, ys, work);
        return;
    }
    arb_backend_rmsnorm(be, x, g, n, dim, eps, xb);
    arb_backend_matmul_multi(be, ws, nw, xb, n, ys, work);
}

void arb_backend_swiglu_matmul_add(const arb_backend *be, float *g, const float *u, int dim, const arb_qmat *w,
                                   int n, float *y, void *work, float *residual)
{
    if (be->iface->swiglu_matmul_add) {
        be->iface->swiglu_matmul_add(be->ctx, g, u, dim, w, n, y, work, residual);
        return;
    }
    arb_backend_swiglu(be, g, u, n, dim);
    arb_backend_matmul(be, w, g, n, y, work);
    arb_backend_add(be, residual, y, (size_t)n * (size_t)w->n_out);
}

void arb_backend_matmul_add(const arb_backend *be, const arb_qmat *w, const float *x, int n, float *y, void *work,
                            float *residual)
{
    if (be->iface->matmul_add) {
        be->iface->matmul_add(be->ctx, w, x, n, y, work, residual);
        return;
    }
    arb_backend_matmul(be, w, x, n, y, work);
    arb_backend_add(be, residual, y, (size_t)n * (size_t)w->n_out);
}

void arb_backend_add_bias(const arb_backend *be, float *x, const float *b, int n, int dim)
{
    be->iface->add_bias(be->ctx, x, b, n, dim);
}

void arb_backend_add(const arb_backend *be, float *x, const float *y, size_t n) { be->iface->add(be->ctx, x, y, n); }

void arb_backend_parallel_for(const arb_backend *be, int n, void (*fn)(void *ud, int i, int n), void *ud)
{
    if (be->iface->parallel_for) {
        be->iface->parallel_for(be->ctx, n, fn, ud);
        return;
    }
    for (int i = 0; i < n; i++)
        fn(ud, i, n);
}
