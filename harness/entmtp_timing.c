/* entmtp_timing.c — end-to-end method timing for EntMTP (see entmtp_timing.h). */
#include "entmtp_timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset.h"
#include "decode.h"
#include "genutil.h"

void arb_entmtp_prompts_free(arb_entmtp_prompts *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->tok[i]);
    free(p->tok);
    free(p->len);
    memset(p, 0, sizeof *p);
}

int arb_entmtp_prompts_load(const arb_model *m, const char *dataset, int skip, int n, int max_len,
                            arb_entmtp_prompts *out, arb_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1 || n > ARB_ENTMTP_PROMPTS_MAX)
        return ARB_ERR(err, ARB_E_INVAL, "entmtp: %d prompts (1..%d)", n, ARB_ENTMTP_PROMPTS_MAX);
    char dir[4096];
    arb_dataset *ds = NULL;
    int rc = arb_dataset_dir(NULL, dir, sizeof dir, err);
    if (!rc)
        rc = arb_dataset_open(dir, dataset, "all", &ds, err);
    if (rc)
        return rc;
    out->tok = calloc((size_t)n, sizeof *out->tok);
    out->len = calloc((size_t)n, sizeof *out->len);
    if (!out->tok || !out->len)
        rc = ARB_ERR(err, ARB_E_NOMEM, "entmtp: out of memory");
    for (size_t i = (size_t)skip; !rc && out->n < n && i < arb_dataset_count(ds); i++) {
        const arb_record *r = arb_dataset_get(ds, i);
        int32_t *ids;
        int k;
        if ((rc = arb_gen_prompt(m, r->turns[0], true, &ids, &k, err)))
            break;
        if (k > max_len) { /* the paper's max input (1400) scaled down: skipped, never cut */
            free(ids);
            continue;
        }
        out->tok[out->n] = ids;
        out->len[out->n++] = k;
    }
    arb_dataset_free(ds);
    if (!rc && out->n < n)
        rc = ARB_ERR(err, ARB_E_RANGE, "entmtp: %s has %d usable prompts from record %d (asked %d)", dataset, out->n,
                     skip, n);
    if (rc)
        arb_entmtp_prompts_free(out);
    return rc;
}

typedef struct step_ud {
    arb_entmtp_timing *t;
    const char *key; /* "\"s_lit\":" etc. */
} step_ud;

static int on_step(const arb_step_record *r, void *ud)
{
    step_ud *u = ud;
    u->t->steps++;
    u->t->tau_step += r->accepted_k + 1;
    if (u->t->s_values && u->t->n_s < u->t->s_cap && r->extra_json) {
        const char *p = strstr(r->extra_json, u->key);
        if (p)
            u->t->s_values[u->t->n_s++] = strtod(p + strlen(u->key), NULL);
    }
    return 0;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int arb_entmtp_time(arb_ctx *ctx, const arb_method_spec *spec, const arb_entmtp_prompts *P, int max_new,
                    bool use_cpu, arb_entmtp_timing *t, arb_err *err)
{
    double *sv = t->s_values;
    int s_cap = t->s_cap;
    memset(t, 0, sizeof *t);
    t->s_values = sv, t->s_cap = s_cap;
    arb_decoder *d = NULL;
    int rc = arb_decoder_new(ctx, spec, &d, err);
    if (rc)
        return rc;
    arb_decode_opts o = arb_decode_default_opts();
    o.max_new = max_new;
    char key[48];
    snprintf(key, sizeof key, "\"s_%s\":", spec->feature[0] ? spec->feature : "lit");
    step_ud u = {.t = t, .key = key};
    arb_decode_cb cb = {.on_step = on_step, .ud = &u};
    arb_prompt_result res;
    rc = arb_decoder_generate(d, P->tok[0], P->len[0], &o, NULL, &res, err); /* warm-up, untimed */
    double tau_steps = 0;
    for (int i = 0; i < P->n && !rc; i++) {
        o.prompt_id = i;
        double c0 = cpu_now();
        if ((rc = arb_decoder_generate(d, P->tok[i], P->len[i], &o, &cb, &res, err)))
            break;
        double cs = cpu_now() - c0;
        t->cpu_s += cs;
        t->gen += res.n_generated;
        t->calls += res.n_target_calls;
        t->wall_s += res.wall_us / 1e6;
        t->prompt_tok_s[i] = res.n_generated / (use_cpu ? cs : res.wall_us / 1e6);
        t->hash[i] = res.hash;
        t->n++;
    }
    tau_steps = t->tau_step;
    arb_decoder_free(d);
    if (rc)
        return rc;
    t->wall_tok_s = t->wall_s > 0 ? t->gen / t->wall_s : 0;
    t->cpu_tok_s = t->cpu_s > 0 ? t->gen / t->cpu_s : 0;
    t->tok_s = use_cpu ? t->cpu_tok_s : t->wall_tok_s;
    t->tau = t->calls ? (double)t->gen / t->calls : 0;
    t->tau_step = t->steps ? tau_steps / t->steps : 0;
    return ARB_OK;
}
