/* engine_stub.c — the engine functions the harness library references, for the config and
 * dataset fuzz targets. Parsing a config or a dataset never reaches the engine, and the
 * engine library does not build with clang's fuzzer flags (matmul_avx2.c relies on GCC's
 * target pragma), so each stub aborts: a call would itself be a finding. A harness change
 * that calls another engine function adds its stub here; .ci/run builds these targets, so
 * a missing one fails CI at link time. */
#include <stdlib.h>

#include "engine.h"

#define NOT_REACHED abort()

int arb_chat_apply(const arb_model *m, const char *t, const arb_chat_msg *msgs, int n, bool a,
                   char *buf, size_t cap, size_t *n_out, arb_err *err) { NOT_REACHED; }
int arb_commit(arb_ctx *c, const int32_t *path, int n, arb_err *err) { NOT_REACHED; }
const char *arb_cpu_kernels(const char *isa) { NOT_REACHED; }
arb_ctx_opts arb_ctx_default_opts(void) { NOT_REACHED; }
void arb_ctx_free(arb_ctx *c) { NOT_REACHED; }
bool arb_ctx_on_device(const arb_ctx *c) { NOT_REACHED; }
const arb_model *arb_ctx_model(const arb_ctx *c) { NOT_REACHED; }
int arb_ctx_n_past(const arb_ctx *c) { NOT_REACHED; }
int arb_ctx_new(arb_model *m, const arb_ctx_opts *o, arb_ctx **out, arb_err *err) { NOT_REACHED; }
int arb_ctx_truncate(arb_ctx *c, int n_past) { NOT_REACHED; }
int arb_eval(arb_ctx *c, const int32_t *tok, const int32_t *parent, int n, float *logits,
             float *hidden, arb_err *err) { NOT_REACHED; }
int arb_gpu_info_get(arb_gpu_info *out, arb_err *err) { NOT_REACHED; }
arb_load_opts arb_load_default_opts(void) { NOT_REACHED; }
void arb_machine_get(arb_machine *out) { NOT_REACHED; }
int arb_load_opts_set_backend(arb_load_opts *o, const char *name, arb_err *err) { NOT_REACHED; }
void arb_model_free(arb_model *m) { NOT_REACHED; }
void arb_model_get_info(const arb_model *m, arb_model_info *out) { NOT_REACHED; }
int arb_model_load(const char *path, const arb_load_opts *o, arb_model **out, arb_err *err) { NOT_REACHED; }
const char *arb_model_path(const arb_model *m) { NOT_REACHED; }
int arb_tokenize(const arb_model *m, const char *text, size_t len, bool bos, bool special,
                 int32_t *out, int cap, int *n_out, arb_err *err) { NOT_REACHED; }
int arb_ctx_output_head(arb_ctx *c, const float *hidden, int n, float *logits, arb_err *err) { NOT_REACHED; }
int arb_ctx_output_head_ex(arb_ctx *c, const float *hidden, int n, const arb_eval_out *o, arb_err *err)
{
    NOT_REACHED;
}
int arb_ctx_parallel_for(arb_ctx *c, int n, void (*fn)(void *ud, int i, int n), void *ud) { NOT_REACHED; }
int arb_ctx_n_threads(const arb_ctx *c) { NOT_REACHED; }
int arb_dequantize(uint32_t type, const void *src, float *dst, size_t n, arb_err *err) { NOT_REACHED; }
void arb_gguf_close(arb_gguf *g) { NOT_REACHED; }
const arb_gguf_kv *arb_gguf_kv_at(const arb_gguf *g, uint64_t i) { NOT_REACHED; }
uint64_t arb_gguf_n_kv(const arb_gguf *g) { NOT_REACHED; }
uint64_t arb_gguf_n_tensors(const arb_gguf *g) { NOT_REACHED; }
int arb_gguf_open(const char *path, arb_gguf **out, arb_err *err) { NOT_REACHED; }
void arb_gguf_str_copy(arb_gguf_str s, char *buf, size_t cap) { NOT_REACHED; }
const arb_gguf_tensor *arb_gguf_tensor_at(const arb_gguf *g, uint64_t i) { NOT_REACHED; }
bool arb_token_is_eog(const arb_model *m, int32_t tok) { NOT_REACHED; }
int arb_token_piece(const arb_model *m, int32_t tok, char *buf, int cap) { NOT_REACHED; }
int32_t arb_topk_argmax(const float *row, int V) { NOT_REACHED; }
int arb_topk_isa_best(void) { NOT_REACHED; }
void arb_topk_softmax(const float *row, int V, int K, int32_t *ids, float *scores) { NOT_REACHED; }
