/* genutil.c — model loading and prompt formatting for the generation commands. */
#include "genutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "modelfetch.h"

arb_load_opts arb_gen_load_opts(void)
{
    arb_load_opts lo = arb_load_default_opts();
    const char *isa = getenv("ARBOR_ISA"), *no_pack = getenv("ARBOR_NO_PACK");
    /* Unknown names were always ignored (the best family); keep that for the variable,
       while arb_model_load rejects them as an option. */
    lo.isa = isa && arb_cpu_kernels(isa) ? isa : NULL; /* main() warns once about an unknown one */
    lo.attn_scalar = getenv("ARBOR_ATTN_SCALAR") != NULL;
    lo.no_pack = no_pack && *no_pack && *no_pack != '0';
    const char *no_huge = getenv("ARBOR_NO_HUGEPAGES");
    lo.no_huge_pages = no_huge && *no_huge && *no_huge != '0';
    return lo;
}

const char *arb_gen_kernels_label(const arb_load_opts *lo, char *buf, size_t cap)
{
    const char *k = arb_cpu_kernels(lo->isa);
    snprintf(buf, cap, "%s%s%s", k ? k : "unknown", lo->no_pack && k && strcmp(k, "scalar") ? "-nopack" : "",
             lo->no_huge_pages ? "-smallpages" : "");
    return buf;
}

int arb_gen_cost_fingerprint(const arb_ctx *c, int n_threads, char *buf, size_t cap, arb_err *err)
{
    arb_model_info mi;
    arb_model_get_info(arb_ctx_model(c), &mi);
    if (arb_ctx_on_device(c)) {
        arb_gpu_info gi;
        const int rc = arb_gpu_info_get(&gi, err);
        if (rc)
            return rc;
        arb_cost_fingerprint_gpu(buf, cap, gi.name, mi.backend, mi.name, (double)mi.weight_bytes);
        return ARB_OK;
    }
    arb_machine mach;
    arb_machine_get(&mach);
    const arb_load_opts lo = arb_gen_load_opts();
    char kl[32];
    arb_cost_fingerprint(buf, cap, mach.cpu_model, arb_gen_kernels_label(&lo, kl, sizeof kl),
                         n_threads > 0 ? n_threads : mach.n_cores, mi.name, (double)mi.weight_bytes);
    return ARB_OK;
}

int arb_gen_load(const char *model_spec, const char *backend, int n_threads, int n_ctx, arb_model **m, arb_ctx **c,
                 arb_err *err)
{
    *m = NULL;
    if (c)
        *c = NULL;
    char path[4096];
    int rc = arb_model_resolve(model_spec, path, sizeof path, err);
    if (rc)
        return rc;
    arb_load_opts lo = arb_gen_load_opts();
    lo.n_threads = n_threads;
    if (backend && (rc = arb_load_opts_set_backend(&lo, backend, err)))
        return rc;
    if ((rc = arb_model_load(path, &lo, m, err)))
        return rc;
    if (c && (rc = arb_gen_ctx_new(*m, n_ctx, c, err))) {
        arb_model_free(*m);
        *m = NULL;
    }
    return rc;
}

int arb_gen_ctx_new(arb_model *m, int n_ctx, arb_ctx **c, arb_err *err)
{
    arb_ctx_opts co = arb_ctx_default_opts();
    co.want_hidden = true; /* head drafters (medusa, hydra) read hidden rows; costs nothing unless asked */
    if (n_ctx > 0)
        co.n_ctx = n_ctx;
    return arb_ctx_new(m, &co, c, err);
}

int arb_gen_ctx_tokens(const arb_model *m, int n_prompt, int max_new)
{
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const int64_t need = (int64_t)n_prompt + max_new + ARB_GEN_TREE_ROOM;
    return mi.n_ctx_train > 0 && need > mi.n_ctx_train ? 0 : (int)need;
}

int arb_gen_prompt(const arb_model *m, const char *text, bool chat, int32_t **ids, int *n, arb_err *err)
{
    *ids = NULL;
    *n = 0;
    char *buf = NULL;
    const char *src = text;
    int rc = ARB_OK;
    if (chat) {
        arb_chat_msg msg = {.role = "user", .content = text};
        size_t need = 0;
        rc = arb_chat_apply(m, NULL, &msg, 1, true, NULL, 0, &need, err);
        if (rc && need == 0)
            return rc;
        buf = malloc(need + 1);
        if (!buf)
            return ARB_ERR(err, ARB_E_NOMEM, "prompt: out of memory");
        if ((rc = arb_chat_apply(m, NULL, &msg, 1, true, buf, need + 1, &need, err))) {
            free(buf);
            return rc;
        }
        src = buf;
    }
    size_t len = strlen(src);
    int cap = (int)len + 16, need = 0;
    int32_t *out = malloc((size_t)cap * sizeof *out);
    if (!out) {
        free(buf);
        return ARB_ERR(err, ARB_E_NOMEM, "prompt: out of memory");
    }
    rc = arb_tokenize(m, src, len, true, chat, out, cap, &need, err);
    if (!rc && need > cap) { /* more tokens than bytes + 16 cannot happen for BPE; be safe */
        int32_t *o2 = realloc(out, (size_t)need * sizeof *out);
        if (!o2)
            rc = ARB_ERR(err, ARB_E_NOMEM, "prompt: out of memory");
        else {
            out = o2;
            rc = arb_tokenize(m, src, len, true, chat, out, need, &need, err);
        }
    }
    free(buf);
    if (rc) {
        free(out);
        return rc;
    }
    if (need < 1) {
        free(out);
        return ARB_ERR(err, ARB_E_INVAL, "prompt: empty after tokenization");
    }
    *ids = out;
    *n = need;
    return ARB_OK;
}
