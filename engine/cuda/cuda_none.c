/* cuda_none.c — the CUDA entry points of a build without nvcc: every one says so. */
#include "cuda.h"

#define NOT_BUILT "backend cuda: this build has no CUDA support (nvcc was not found at configure time)"

int arb_cuda_device_count(void) { return 0; }
int arb_cuda_device_get(arb_gpu_info *out, arb_err *err)
{
    (void)out;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
double arb_cuda_probe_bw(size_t bytes, int reps)
{
    (void)bytes, (void)reps;
    return -1;
}
int arb_cuda_model_new(const arb_cuda_model_desc *d, bool exact, arb_cuda_model **out, arb_err *err)
{
    (void)d, (void)exact;
    *out = NULL;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
void arb_cuda_model_free(arb_cuda_model *m) { (void)m; }
bool arb_cuda_model_exact(const arb_cuda_model *m) { (void)m; return false; }
size_t arb_cuda_model_device_bytes(const arb_cuda_model *m) { (void)m; return 0; }
int arb_cuda_ctx_new(arb_cuda_model *m, int n_ctx, int n_batch_max, int n_layer, const float *cs,
                     arb_cuda_ctx **out, arb_err *err)
{
    (void)m, (void)n_ctx, (void)n_batch_max, (void)n_layer, (void)cs;
    *out = NULL;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
void arb_cuda_ctx_free(arb_cuda_ctx *c) { (void)c; }
int arb_cuda_forward(arb_cuda_ctx *c, const arb_cuda_step *s, arb_err *err)
{
    (void)c, (void)s;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
int arb_cuda_kv_commit(arb_cuda_ctx *c, int n_past, const int32_t *path, int n, arb_err *err)
{
    (void)c, (void)n_past, (void)path, (void)n;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
int arb_cuda_output_head(arb_cuda_ctx *c, const float *hidden, int n, const arb_cuda_head_out *o, arb_err *err)
{
    (void)c, (void)hidden, (void)n, (void)o;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
int arb_cuda_logits_row(arb_cuda_ctx *c, int r, float *row, arb_err *err)
{
    (void)c, (void)r, (void)row;
    return ARB_ERR(err, ARB_E_NODEVICE, NOT_BUILT);
}
