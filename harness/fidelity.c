/* fidelity.c — see fidelity.h. */
#include "fidelity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "engine.h"
#include "genutil.h"
#include "modelfetch.h"
#include "resample.h"
#include "sample.h"

#define MAX_TOKENS 1024 /* prompt + continuation; longer prompts are skipped */

typedef struct ref_prompt {   /* the reference's continuation and its logits rows */
    int n_prompt, n_gen;
    int32_t *seq;             /* [n_prompt + n_gen] */
    float *rows;              /* [n_gen x V]: the row that predicted seq[n_prompt + j] */
} ref_prompt;

typedef struct fid {
    const arb_fidelity_opts *o;
    int V, n;                 /* vocabulary, prompts kept */
    ref_prompt *p;            /* [n] */
    float *logits;            /* [MAX_TOKENS x V] chain scratch */
} fid;

static int load(const char *path, const char *dequant, int threads, arb_model **m, arb_ctx **c, arb_err *err)
{
    arb_load_opts lo = arb_gen_load_opts();
    lo.n_threads = threads;
    lo.dequant_f32 = dequant;
    *c = NULL;
    int rc = arb_model_load(path, &lo, m, err);
    if (rc)
        return rc;
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = MAX_TOKENS;
    co.n_batch_max = MAX_TOKENS;
    if ((rc = arb_ctx_new(*m, &co, c, err))) {
        arb_model_free(*m);
        *m = NULL;
    }
    return rc;
}

/* Evaluate seq[0..n) as one chain on an empty context into f->logits. */
static int eval_chain(fid *f, arb_ctx *c, const int32_t *seq, int n, arb_err *err)
{
    int32_t par[MAX_TOKENS];
    for (int i = 0; i < n; i++)
        par[i] = i - 1;
    int rc = arb_ctx_truncate(c, 0);
    if (rc)
        return ARB_ERR(err, rc, "fidelity: cannot reset the context");
    return arb_eval(c, seq, par, n, f->logits, NULL, err);
}

/* The quantized matrix types of the file (2-D tensors the forward multiplies). */
static int matrix_types(const char *path, uint32_t *types, int cap, int *n, arb_err *err)
{
    arb_gguf *g = NULL;
    int rc = arb_gguf_open(path, &g, err);
    if (rc)
        return rc;
    bool has_output = false;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        char name[96];
        arb_gguf_str_copy(arb_gguf_tensor_at(g, i)->name, name, sizeof name);
        has_output |= !strcmp(name, "output.weight");
    }
    *n = 0;
    for (uint64_t i = 0; i < arb_gguf_n_tensors(g); i++) {
        const arb_gguf_tensor *t = arb_gguf_tensor_at(g, i);
        char name[96];
        arb_gguf_str_copy(t->name, name, sizeof name);
        const bool mat = t->n_dims == 2 && (!strncmp(name, "blk.", 4) || !strcmp(name, "output.weight") ||
                                            (!has_output && !strcmp(name, "token_embd.weight")));
        if (!mat || t->type == 0 /* F32 */)
            continue;
        bool seen = false;
        for (int k = 0; k < *n; k++)
            seen |= types[k] == t->type;
        if (!seen && *n < cap)
            types[(*n)++] = t->type;
    }
    arb_gguf_close(g);
    return ARB_OK;
}

/* The reference: greedy continuations of the F32-dequantized model, and their rows. */
static int reference(fid *f, const char *path, FILE *progress, arb_err *err)
{
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_dataset *ds = NULL;
    char dir[4096];
    int rc = load(path, "all", f->o->threads, &m, &c, err);
    if (!rc)
        rc = arb_dataset_dir(f->o->data_dir, dir, sizeof dir, err);
    if (!rc)
        rc = arb_dataset_open(dir, f->o->dataset, NULL, &ds, err);
    if (rc)
        goto out;
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    f->V = mi.n_vocab;
    if (!(f->logits = malloc(sizeof(float) * (size_t)MAX_TOKENS * (size_t)f->V)) ||
        !(f->p = calloc((size_t)f->o->limit, sizeof *f->p))) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
        goto out;
    }
    const int n_rec = (int)arb_dataset_count(ds);
    for (int i = 0; i < n_rec && f->n < f->o->limit && !rc; i++) {
        const arb_record *r = arb_dataset_get(ds, (size_t)i);
        int32_t *ids = NULL;
        int n_ids = 0;
        if ((rc = arb_gen_prompt(m, r->turns[0], true, &ids, &n_ids, err)))
            break;
        if (n_ids + f->o->max_new > MAX_TOKENS) { /* too long for the chain scratch: skip, say so */
            if (progress)
                fprintf(progress, "fidelity: %s skipped (%d prompt tokens)\n", r->id, n_ids);
            free(ids);
            continue;
        }
        ref_prompt *p = &f->p[f->n];
        p->seq = malloc(sizeof(int32_t) * (size_t)(n_ids + f->o->max_new));
        p->rows = malloc(sizeof(float) * (size_t)f->o->max_new * (size_t)f->V);
        if (!p->seq || !p->rows) {
            free(ids);
            rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
            break;
        }
        memcpy(p->seq, ids, sizeof(int32_t) * (size_t)n_ids);
        free(ids);
        p->n_prompt = n_ids;
        /* greedy: the chain's last row predicts the next token; re-evaluating the whole chain
           per token would be quadratic, so decode step by step on the committed prefix */
        int32_t prefix[MAX_TOKENS];
        for (int k = 0; k < n_ids; k++)
            prefix[k] = k;
        if ((rc = eval_chain(f, c, p->seq, n_ids, err)) || (rc = arb_commit(c, prefix, n_ids, err)))
            break;
        const float *row = f->logits + (size_t)(n_ids - 1) * f->V;
        for (int j = 0; j < f->o->max_new && !rc; j++) {
            memcpy(p->rows + (size_t)j * f->V, row, sizeof(float) * (size_t)f->V);
            const int32_t tok = arb_sample_argmax_f(row, f->V);
            p->seq[n_ids + j] = tok;
            p->n_gen = j + 1;
            if (tok == mi.eos || tok == mi.eot)
                break;
            const int32_t par = -1, zero = 0;
            if ((rc = arb_eval(c, &tok, &par, 1, f->logits, NULL, err)) || (rc = arb_commit(c, &zero, 1, err)))
                break;
            row = f->logits;
        }
        f->n++;
        if (progress)
            fprintf(progress, "fidelity: reference %d/%d (%s, %d + %d tokens)\n", f->n, f->o->limit, r->id, n_ids,
                    p->n_gen);
    }
out:
    arb_dataset_free(ds);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc;
}

/* Rate, mean |Δlogit| (NAN when sum_abs is), gaps and the bootstrap interval of v, whose
   per-prompt counts are filled; gaps[0..n_gaps) are sorted here. */
static void finish_variant(const fid *f, arb_fidelity_variant *v, double *gaps, int n_gaps, double sum_abs,
                           int n_boot, FILE *progress)
{
    v->rate = v->n_pos ? (double)v->n_agree / v->n_pos : NAN;
    v->mean_abs_dlogit = v->n_pos ? sum_abs / v->n_pos : NAN;
    qsort(gaps, (size_t)n_gaps, sizeof *gaps, arb_cmp_double);
    v->gap_median = n_gaps ? arb_quantile_sorted(gaps, n_gaps, 0.5) : NAN;
    v->gap_max = n_gaps ? gaps[n_gaps - 1] : NAN;
    /* percentile bootstrap over prompts of the pooled rate */
    double *bs = malloc(sizeof(double) * (size_t)(n_boot > 0 ? n_boot : 1));
    uint64_t s = 0x5eedULL;
    for (int b = 0; bs && b < n_boot; b++) {
        long a = 0, t = 0;
        for (int k = 0; k < f->n; k++) {
            const int j = (int)(arb_splitmix64(&s) % (uint64_t)f->n);
            a += v->agree_p[j], t += v->pos_p[j];
        }
        bs[b] = t ? (double)a / t : NAN;
    }
    if (bs && n_boot > 0) {
        qsort(bs, (size_t)n_boot, sizeof *bs, arb_cmp_double);
        v->lo = arb_quantile_sorted(bs, n_boot, 0.025), v->hi = arb_quantile_sorted(bs, n_boot, 0.975);
    } else {
        v->lo = v->hi = NAN;
    }
    free(bs);
    if (progress)
        fprintf(progress, "fidelity: %s: %d/%d positions agree\n", v->name, v->n_agree, v->n_pos);
}

/* The reference sequences as TSV (fidelity.h). */
static int dump_reference(const fid *f, const arb_fidelity_opts *o, const char *model, arb_err *err)
{
    FILE *out = fopen(o->dump_ref, "w");
    if (!out)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot write the reference", o->dump_ref);
    fprintf(out, "# arbor bench fidelity reference: %s dequantized to F32, greedy; dataset %s, %d prompts, "
                 "max_new %d\n# i\tn_prompt\tn_gen\tids (prompt, then continuation)\n",
            model, o->dataset, f->n, o->max_new);
    for (int i = 0; i < f->n; i++) {
        const ref_prompt *p = &f->p[i];
        fprintf(out, "%d\t%d\t%d\t", i, p->n_prompt, p->n_gen);
        for (int k = 0; k < p->n_prompt + p->n_gen; k++)
            fprintf(out, "%s%d", k ? "," : "", p->seq[k]);
        fputc('\n', out);
    }
    if (fclose(out))
        return ARB_ERR(err, ARB_E_IO, "%s: write failed", o->dump_ref);
    return ARB_OK;
}

/* Another engine's argmax per position (fidelity.h) as variant v. */
static int score_external(fid *f, const char *path, arb_fidelity_variant *v, int n_boot, FILE *progress, arb_err *err)
{
    const char *b = strrchr(path, '/');
    snprintf(v->name, sizeof v->name, "external: %.29s", b ? b + 1 : path);
    FILE *in = fopen(path, "r");
    if (!in)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot open the scores", path);
    int total = 0;
    for (int i = 0; i < f->n; i++)
        total += f->p[i].n_gen;
    int32_t *got = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
    double *gaps = malloc(sizeof(double) * (size_t)(total + 1));
    int *base = malloc(sizeof(int) * (size_t)(f->n + 1));
    int rc = got && gaps && base ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
    for (int i = 0, at = 0; !rc && i <= f->n; at += i < f->n ? f->p[i].n_gen : 0, i++)
        base[i] = at;
    for (int k = 0; !rc && k < total; k++)
        got[k] = -1;
    char line[256];
    for (int ln = 1; !rc && fgets(line, sizeof line, in); ln++) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        int i, j, id, used = 0;
        if (sscanf(line, "%d\t%d\t%d%n", &i, &j, &id, &used) != 3 || (line[used] != '\n' && line[used] != 0))
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s:%d: expected 'prompt<TAB>position<TAB>argmax'", path, ln);
        else if (i < 0 || i >= f->n || j < 0 || j >= f->p[i].n_gen || id < 0 || id >= f->V)
            rc = ARB_ERR(err, ARB_E_RANGE, "%s:%d: prompt %d position %d id %d outside the reference (%d prompts)",
                         path, ln, i, j, id, f->n);
        else if (got[base[i] + j] >= 0)
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s:%d: prompt %d position %d scored twice", path, ln, i, j);
        else
            got[base[i] + j] = id;
    }
    fclose(in);
    for (int k = 0; !rc && k < total; k++)
        if (got[k] < 0) {
            int i = 0;
            while (base[i + 1] <= k)
                i++;
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s: prompt %d position %d not scored", path, i, k - base[i]);
        }
    int n_gaps = 0;
    for (int i = 0; !rc && i < f->n; i++) {
        const ref_prompt *p = &f->p[i];
        v->agree_p[i] = v->pos_p[i] = p->n_gen;
        for (int j = 0; j < p->n_gen; j++) {
            const int32_t want = p->seq[p->n_prompt + j], g = got[base[i] + j];
            if (g != want)
                v->agree_p[i]--, gaps[n_gaps++] = (double)p->rows[(size_t)j * f->V + want] - p->rows[(size_t)j * f->V + g];
        }
        v->n_pos += v->pos_p[i], v->n_agree += v->agree_p[i];
    }
    if (!rc)
        finish_variant(f, v, gaps, n_gaps, NAN, n_boot, progress);
    free(got), free(gaps), free(base);
    return rc;
}

/* One variant against the reference, prompt by prompt. */
static int variant(fid *f, const char *path, const char *dequant, arb_fidelity_variant *v, int n_boot, FILE *progress,
                   arb_err *err)
{
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    int rc = load(path, dequant, f->o->threads, &m, &c, err);
    double *gaps = NULL, sum_abs = 0;
    int n_gaps = 0;
    if (!rc && !(gaps = malloc(sizeof(double) * (size_t)(f->n * f->o->max_new + 1))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
    for (int i = 0; i < f->n && !rc; i++) {
        const ref_prompt *p = &f->p[i];
        if ((rc = eval_chain(f, c, p->seq, p->n_prompt + p->n_gen, err)))
            break;
        v->agree_p[i] = v->pos_p[i] = 0;
        for (int j = 0; j < p->n_gen; j++) {
            const float *row = f->logits + (size_t)(p->n_prompt - 1 + j) * f->V, *ref = p->rows + (size_t)j * f->V;
            const int32_t want = p->seq[p->n_prompt + j], got = arb_sample_argmax_f(row, f->V);
            double s = 0;
            for (int k = 0; k < f->V; k++)
                s += fabs((double)row[k] - (double)ref[k]);
            sum_abs += s / f->V;
            v->pos_p[i]++;
            if (got == want)
                v->agree_p[i]++;
            else
                gaps[n_gaps++] = (double)ref[want] - (double)ref[got];
        }
        v->n_pos += v->pos_p[i], v->n_agree += v->agree_p[i];
    }
    if (!rc)
        finish_variant(f, v, gaps, n_gaps, sum_abs, n_boot, progress);
    free(gaps);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc;
}

int arb_fidelity_run(const arb_fidelity_opts *o, arb_fidelity_result *r, FILE *progress, arb_err *err)
{
    memset(r, 0, sizeof *r);
    if (o->limit < 1 || o->limit > ARB_FIDELITY_MAX_PROMPTS || o->max_new < 1 || o->max_new >= MAX_TOKENS)
        return ARB_ERR(err, ARB_E_INVAL, "fidelity: limit 1..%d and max_new 1..%d", ARB_FIDELITY_MAX_PROMPTS,
                       MAX_TOKENS - 1);
    char path[4096];
    int rc = arb_model_resolve(o->model, path, sizeof path, err);
    uint32_t types[ARB_FIDELITY_MAX_VARIANTS - 1];
    int n_types = 0;
    if (!rc)
        rc = matrix_types(path, types, ARB_FIDELITY_MAX_VARIANTS - 1, &n_types, err);
    fid f = {.o = o};
    if (!rc)
        rc = reference(&f, path, progress, err);
    r->n_prompts = f.n;
    const arb_load_opts lo = arb_gen_load_opts();
    char kl[32];
    snprintf(r->kernels, sizeof r->kernels, "%s", arb_gen_kernels_label(&lo, kl, sizeof kl));
    const char *b = strrchr(path, '/');
    snprintf(r->model_name, sizeof r->model_name, "%.95s", b ? b + 1 : path);
    if (!rc && f.n == 0)
        rc = ARB_ERR(err, ARB_E_INVAL, "fidelity: no prompt of %s fits %d tokens", o->dataset, MAX_TOKENS);
    /* as stored; then each type alone when there are several (with one type, the same run) */
    for (int k = -1; k < n_types && !rc; k++) {
        if (k >= 0 && n_types < 2)
            break;
        arb_fidelity_variant *v = &r->v[r->n_variants++];
        char dq[48] = "";
        if (k < 0) {
            snprintf(v->name, sizeof v->name, "as stored (all types)");
        } else {
            snprintf(v->name, sizeof v->name, "only %s quantized", arb_type_name(types[k]));
            snprintf(dq, sizeof dq, "all-but-%s", arb_type_name(types[k]));
        }
        rc = variant(&f, path, k < 0 ? NULL : dq, v, o->n_boot > 0 ? o->n_boot : 1000, progress, err);
    }
    if (!rc && o->dump_ref)
        rc = dump_reference(&f, o, r->model_name, err);
    for (const char *sc = o->score; !rc && sc && *sc;) { /* a comma-separated list of files */
        const char *e = strchr(sc, ',');
        const size_t len = e ? (size_t)(e - sc) : strlen(sc);
        char file[4096];
        if (len >= sizeof file)
            rc = ARB_ERR(err, ARB_E_RANGE, "fidelity: --score path too long");
        else if (r->n_variants >= ARB_FIDELITY_MAX_VARIANTS)
            rc = ARB_ERR(err, ARB_E_RANGE, "fidelity: at most %d variants (the file's types and the --score files)",
                         ARB_FIDELITY_MAX_VARIANTS);
        if (rc)
            break;
        memcpy(file, sc, len), file[len] = 0;
        rc = score_external(&f, file, &r->v[r->n_variants++], o->n_boot > 0 ? o->n_boot : 1000, progress, err);
        sc = e ? e + 1 : NULL;
    }
    for (int i = 0; i < f.n; i++)
        free(f.p[i].seq), free(f.p[i].rows);
    free(f.p);
    free(f.logits);
    return rc;
}

void arb_fidelity_print(const arb_fidelity_result *r, FILE *f)
{
    fprintf(f, "Teacher-forced greedy argmax agreement with the F32-dequantized model (%s, %d prompts, kernels %s)\n\n",
            r->model_name, r->n_prompts, r->kernels);
    fprintf(f, "| variant | positions | agree | rate [95%% CI] | mean abs dlogit | gap at disagreements: median / max |\n");
    fprintf(f, "|---|---:|---:|---|---:|---|\n");
    for (int i = 0; i < r->n_variants; i++) {
        const arb_fidelity_variant *v = &r->v[i];
        fprintf(f, "| %s | %d | %d | %.4f [%.4f, %.4f] | ", v->name, v->n_pos, v->n_agree, v->rate, v->lo, v->hi);
        if (isnan(v->mean_abs_dlogit))
            fprintf(f, "n/a | ");
        else
            fprintf(f, "%.4f | ", v->mean_abs_dlogit);
        if (isnan(v->gap_median))
            fprintf(f, "none |\n");
        else
            fprintf(f, "%.3f / %.3f |\n", v->gap_median, v->gap_max);
    }
}
