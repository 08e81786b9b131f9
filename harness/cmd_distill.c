/* cmd_distill.c — `arbor distill`: the target's own greedy answers to training prompts, for
 * training heads on what the model says rather than what a dataset says (Medusa-2 / Hydra
 * self-distillation; docs/heads.md). Resumable: records are appended one at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cJSON.h"
#include "cli.h"
#include "dataset.h"
#include "decode.h"
#include "distill.h"
#include "genutil.h"
#include "method.h"
#include "modelfetch.h"
#include "progress.h"
#include "opts.h"
#include "sha256.h"

static const char description[] =
    "Runs the target greedily (chat template, as `arbor generate`) over training prompts and\n"
    "appends each prompt + response (token ids) to a distill file. Re-running continues after\n"
    "the last complete record; a larger --limit extends a file. Progress + ETA on stderr.\n"
    "--sets takes datasets[:split], comma-separated, round-robin; training sets only (an\n"
    "evaluation set is refused). Default --out: <cache>/distill/<model file>.<sha256[0:12]>.n<N>.dst\n";

/* The sets a head may learn from: no benchmark file and no test split (docs/heads.md). */
static bool training_set(const char *name, const char *split)
{
    if (!strcmp(name, "gsm8k-train") || !strcmp(name, "sharegpt-multiturn"))
        return !split || !strcmp(split, "train") || !strcmp(split, "all");
    return !strcmp(name, "mbpp") && split && !strcmp(split, "train");
}

#define MAX_SETS 8

typedef struct dset {
    char name[64], split[64];
    arb_dataset *d;
    char **skip_ids; /* sharegpt-multiturn: ids of the ShareGPT evaluation sets, sorted */
    size_t n_skip;
} dset;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The ShareGPT evaluation sets are drawn from the same V3 conversations as sharegpt-multiturn:
   2540 of its 3118 prompts (human-first parts) are evaluation prompts (same conversation part). Collect
   their ids so the training list skips them. sg_90k ids carry no "_<part>" suffix: its first
   turn is part 0 of the conversation. Later parts of an evaluated conversation stay (other text). */
static void collect_eval_ids(const char *dir, dset *s)
{
    static const char *evals[] = {"sharegpt", "sharegpt-1000", "sharegpt-90k"};
    for (size_t e = 0; e < sizeof evals / sizeof evals[0]; e++) {
        arb_dataset *d = NULL;
        arb_err err = {0};
        if (arb_dataset_open(dir, evals[e], "all", &d, &err))
            continue; /* absent: nothing to exclude */
        size_t n = arb_dataset_count(d);
        char **p = realloc(s->skip_ids, (s->n_skip + n + 1) * sizeof *p);
        if (p) {
            s->skip_ids = p;
            for (size_t i = 0; i < n; i++) {
                const char *id = arb_dataset_get(d, i)->id;
                size_t len = strlen(id);
                char *c = malloc(len + 3);
                if (c) {
                    memcpy(c, id, len + 1);
                    if (!strchr(id, '_'))
                        strcat(c, "_0");
                    s->skip_ids[s->n_skip++] = c;
                }
            }
        }
        arb_dataset_free(d);
    }
    if (s->n_skip)
        qsort(s->skip_ids, s->n_skip, sizeof *s->skip_ids, cmp_str);
}

static bool skipped(const dset *s, const char *id)
{
    return s->n_skip && bsearch(&id, s->skip_ids, s->n_skip, sizeof *s->skip_ids, cmp_str);
}

int arb_cmd_distill(int argc, char **argv)
{
    const char *model = "default", *sets = "sharegpt-multiturn,gsm8k-train,mbpp:train", *out = NULL,
               *data = NULL;
    int limit = 0, max_new = 128, max_prompt = 512, threads = 1;
    const arb_opt opts[] = {
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--sets", "LIST", &sets, "training sets (default sharegpt-multiturn,gsm8k-train,mbpp:train)"),
        ARB_OPT_INT("--limit", "N", &limit, 0, 1000000000, "prompts in the list (default 0 = every prompt)"),
        {.name = "--max-new", .alias = "-n", .kind = ARB_OPT_KIND_INT, .dst = &max_new, .lo = 1, .hi = 1000000000,
         .metavar = "N", .help = "response tokens per prompt at most (default 128)"},
        ARB_OPT_INT("--max-prompt", "N", &max_prompt, 1, 1000000000, "skip longer prompts after templating (default 512)"),
        ARB_OPT_STR("--out", "FILE", &out, "the distill file (default in the cache, see above)"),
        ARB_OPT_STR("--data", "DIR", &data, "dataset directory (default $ARBOR_DATA)"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "kernel threads (default 1)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"distill", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_err err = {0};
    int rc = ARB_OK;
    dset ds[MAX_SETS] = {0};
    int n_sets = 0;
    char dir[4096], path[4096], sha[65], outbuf[4096];
    arb_model *m = NULL;
    arb_ctx *ctx = NULL;
    arb_decoder *dec = NULL;
    arb_distill_writer *w = NULL;
    char *meta = NULL;
    size_t *order_set = NULL, *order_rec = NULL;
    /* the sets */
    if ((rc = arb_dataset_dir(data, dir, sizeof dir, &err)))
        goto done;
    for (const char *p = sets; *p;) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len == 0 || len >= sizeof item || n_sets == MAX_SETS) {
            rc = ARB_ERR(&err, ARB_E_INVAL, "--sets: bad item '%.*s' (at most %d, name[:split])", (int)len, p, MAX_SETS);
            goto done;
        }
        memcpy(item, p, len);
        item[len] = 0;
        dset *s = &ds[n_sets++];
        char *colon = strchr(item, ':');
        if (colon)
            *colon = 0;
        snprintf(s->name, sizeof s->name, "%s", item);
        snprintf(s->split, sizeof s->split, "%s", colon ? colon + 1 : "train");
        if (!training_set(s->name, s->split)) {
            rc = ARB_ERR(&err, ARB_E_INVAL,
                         "--sets: %s:%s is not a training set (allowed: sharegpt-multiturn, gsm8k-train, "
                         "mbpp:train); evaluation prompts must never be distilled",
                         s->name, s->split);
            goto done;
        }
        if ((rc = arb_dataset_open(dir, s->name, s->split, &s->d, &err)))
            goto done;
        if (!strcmp(s->name, "sharegpt-multiturn"))
            collect_eval_ids(dir, s);
        p += len + (p[len] == ',');
    }
    /* the prompt list: round-robin over the sets, so any prefix mixes them */
    size_t total = 0, n_excluded = 0;
    for (int k = 0; k < n_sets; k++)
        total += arb_dataset_count(ds[k].d);
    order_set = malloc((total + 1) * sizeof *order_set);
    order_rec = malloc((total + 1) * sizeof *order_rec);
    if (!order_set || !order_rec) {
        rc = ARB_ERR(&err, ARB_E_NOMEM, "distill: out of memory");
        goto done;
    }
    size_t n_list = 0;
    for (size_t r = 0;; r++) {
        bool any = false;
        for (int k = 0; k < n_sets; k++) {
            if (r >= arb_dataset_count(ds[k].d))
                continue;
            any = true;
            if (skipped(&ds[k], arb_dataset_get(ds[k].d, r)->id)) {
                n_excluded++;
                continue;
            }
            order_set[n_list] = (size_t)k;
            order_rec[n_list++] = r;
        }
        if (!any)
            break;
    }
    if (limit > 0 && (size_t)limit < n_list)
        n_list = (size_t)limit;
    /* model, its identity, the file */
    if ((rc = arb_model_resolve(model, path, sizeof path, &err)) || (rc = arb_sha256_file(path, sha, &err)))
        goto done;
    if ((rc = arb_gen_load(path, "cpu", threads, 0, &m, &ctx, &err)))
        goto done;
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    if (!out) {
        if ((rc = arb_distill_default_path(path, sha, max_new, outbuf, sizeof outbuf, &err)))
            goto done;
        out = outbuf;
    }
    {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "format", "arbor-distill");
        cJSON_AddStringToObject(j, "model_sha256", sha);
        cJSON_AddStringToObject(j, "model", mi.name);
        cJSON_AddNumberToObject(j, "n_vocab", mi.n_vocab);
        cJSON_AddStringToObject(j, "sets", sets);
        cJSON_AddNumberToObject(j, "max_new", max_new);
        cJSON_AddNumberToObject(j, "max_prompt", max_prompt);
        cJSON_AddStringToObject(j, "decoding", "greedy, chat template of the model, stop at EOS");
        meta = j ? cJSON_PrintUnformatted(j) : NULL;
        cJSON_Delete(j);
        if (!meta) {
            rc = ARB_ERR(&err, ARB_E_NOMEM, "distill: out of memory");
            goto done;
        }
    }
    if ((rc = arb_distill_writer_open(out, meta, &w, &err)))
        goto done;
    arb_method_spec spec;
    if ((rc = arb_method_spec_preset("ar", &spec, &err)) || (rc = arb_decoder_new(ctx, &spec, &dec, &err)))
        goto done;
    uint32_t first = arb_distill_writer_next_seq(w);
    fprintf(stderr, "distill: %s -> %s\n  %zu prompts listed (%zu ShareGPT evaluation records excluded), "
                    "resuming at %u with %d records / %llu response tokens done\n",
            path, out, n_list, n_excluded, first, arb_distill_writer_n_rec(w),
            (unsigned long long)arb_distill_writer_n_resp_tok(w));
    arb_progress pr;
    arb_progress_init(&pr, stderr, (int64_t)n_list, 30.0);
    if (first > 0)
        arb_progress_step(&pr, first < n_list ? first : (int64_t)n_list, false, "resumed");
    size_t n_skipped = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t resp0 = arb_distill_writer_n_resp_tok(w);
    for (size_t q = first; q < n_list; q++) {
        const dset *s = &ds[order_set[q]];
        const arb_record *r = arb_dataset_get(s->d, order_rec[q]);
        int32_t *ids = NULL;
        int n_ids = 0;
        if ((rc = arb_gen_prompt(m, r->turns[0], true, &ids, &n_ids, &err)))
            goto done;
        char label[160];
        snprintf(label, sizeof label, "%s/%s", s->name, r->id);
        if (n_ids > max_prompt) {
            free(ids);
            n_skipped++;
            arb_progress_step(&pr, 1, false, label);
            continue;
        }
        arb_decode_opts o = arb_decode_default_opts();
        o.max_new = max_new;
        o.prompt_id = (int)q;
        arb_prompt_result res;
        rc = arb_decoder_generate(dec, ids, n_ids, &o, NULL, &res, &err);
        if (!rc)
            rc = arb_distill_writer_append(w, (uint32_t)q, ids, n_ids, res.ids, res.n_generated, &err);
        free(ids);
        if (rc)
            goto done;
        arb_progress_step(&pr, 1, true, label);
    }
    arb_progress_finish(&pr);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    uint64_t resp1 = arb_distill_writer_n_resp_tok(w);
    printf("distill: %s\n  records %d, response tokens %llu (this run: %llu in %.1f s, %.1f tok/s), "
           "prompts skipped as too long this run: %zu\n",
           out, arb_distill_writer_n_rec(w), (unsigned long long)resp1, (unsigned long long)(resp1 - resp0), secs,
           secs > 0 ? (double)(resp1 - resp0) / secs : 0.0, n_skipped);
done:
    if (rc)
        fprintf(stderr, "arbor distill: %s\n", err.msg);
    arb_decoder_free(dec);
    arb_distill_writer_close(w);
    arb_ctx_free(ctx);
    arb_model_free(m);
    free(meta);
    free(order_set);
    free(order_rec);
    for (int k = 0; k < n_sets; k++) {
        arb_dataset_free(ds[k].d);
        for (size_t i = 0; i < ds[k].n_skip; i++)
            free(ds[k].skip_ids[i]);
        free(ds[k].skip_ids);
    }
    return rc ? 1 : 0;
}
