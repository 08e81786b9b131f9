/* fidelity.c — see fidelity.h. */
#include "fidelity.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
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
    int V, n, cap;            /* vocabulary, prompts kept, room for */
    ref_prompt *p;            /* [cap] */
    float *logits;            /* [MAX_TOKENS x V] chain scratch */
    int32_t *stored;          /* arbor's argmax (the file as stored) per position, prompt by
                                 prompt: what external variants are paired with */
    arb_fidelity_result *r;   /* the datasets' prompt ranges go to r->set_* */
} fid;

/* Record prompts [first, f->n) as dataset `name` (its first 23 characters). */
static int add_set(fid *f, const char *name, int first, arb_err *err)
{
    arb_fidelity_result *r = f->r;
    if (r->n_sets >= ARB_FIDELITY_MAX_SETS)
        return ARB_ERR(err, ARB_E_RANGE, "fidelity: at most %d datasets", ARB_FIDELITY_MAX_SETS);
    snprintf(r->set_name[r->n_sets], sizeof r->set_name[0], "%.23s", name);
    r->set_first[r->n_sets] = first, r->set_count[r->n_sets] = f->n - first;
    r->n_sets++;
    return ARB_OK;
}

/* The number of comma-separated names in list (empty names count too, and are refused by
   the dataset loader by name). */
static int list_count(const char *list)
{
    int n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    return n;
}

/* The next name of a comma-separated list into buf (cut to cap - 1 characters); *cur moves past
   it, to NULL after the last. false when the list is done (cur NULL or "" at the start). */
static bool list_next(const char **cur, char *buf, size_t cap)
{
    if (!*cur || !**cur)
        return false;
    const char *e = strchr(*cur, ',');
    snprintf(buf, cap, "%.*s", (int)(e ? e - *cur : (ptrdiff_t)strlen(*cur)), *cur);
    *cur = e ? e + 1 : NULL;
    return true;
}

/* Positions compared over all prompts (each prompt's continuation). */
static int positions(const fid *f)
{
    int n = 0;
    for (int i = 0; i < f->n; i++)
        n += f->p[i].n_gen;
    return n;
}

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

/* The reference's continuations of the first `limit` prompts of ds that fit, appended to f->p. */
static int reference_set(fid *f, arb_model *m, arb_ctx *c, const arb_model_info *mi, const arb_dataset *ds,
                         FILE *progress, arb_err *err)
{
    int rc = ARB_OK;
    const int n_rec = (int)arb_dataset_count(ds), n0 = f->n;
    for (int i = 0; i < n_rec && f->n - n0 < f->o->limit && !rc; i++) {
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
            if (tok == mi->eos || tok == mi->eot)
                break;
            const int32_t par = -1, zero = 0;
            if ((rc = arb_eval(c, &tok, &par, 1, f->logits, NULL, err)) || (rc = arb_commit(c, &zero, 1, err)))
                break;
            row = f->logits;
        }
        f->n++;
        if (progress)
            fprintf(progress, "fidelity: reference %d/%d (%s, %d + %d tokens)\n", f->n, f->cap, r->id, n_ids,
                    p->n_gen);
    }
    return rc;
}

/* One line of a dump_ref file into p (fidelity.h: i, n_prompt, n_gen, ids); a message naming the
   file and line otherwise. */
static int parse_ref_line(fid *f, char *line, const char *path, int ln, ref_prompt *p, arb_err *err)
{
    char *q = line, *e;
    long v[3];
    for (int k = 0; k < 3; k++) {
        v[k] = strtol(q, &e, 10);
        if (e == q || *e != '\t')
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%d: expected 'i<TAB>n_prompt<TAB>n_gen<TAB>ids'", path, ln);
        q = e + 1;
    }
    if (v[0] != f->n || v[1] < 1 || v[2] < 1 || v[1] + v[2] > MAX_TOKENS)
        return ARB_ERR(err, ARB_E_RANGE, "%s:%d: prompt %ld (expected %d), %ld + %ld tokens (1.., at most %d in all)", path,
                       ln, v[0], f->n, v[1], v[2], MAX_TOKENS);
    const int n = (int)(v[1] + v[2]);
    if (!(p->seq = malloc(sizeof(int32_t) * (size_t)n)) || !(p->rows = malloc(sizeof(float) * (size_t)v[2] * (size_t)f->V)))
        return ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
    for (int k = 0; k < n; k++) {
        const long id = strtol(q, &e, 10);
        if (e == q || id < 0 || id >= f->V)
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%d: id %d of %d: expected a token id below %d", path, ln, k + 1, n, f->V);
        if (k + 1 < n && (*e == '\n' || *e == 0))
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%d: %d ids where n_prompt + n_gen = %d", path, ln, k + 1, n);
        if (k + 1 < n ? *e != ',' : (*e != '\n' && *e != 0))
            return ARB_ERR(err, ARB_E_FORMAT, "%s:%d: after id %d of %d: expected %s", path, ln, k + 1, n,
                           k + 1 < n ? "a comma" : "the end of the line (more ids than n_prompt + n_gen)");
        p->seq[k] = (int32_t)id, q = e + 1;
    }
    p->n_prompt = (int)v[1], p->n_gen = (int)v[2];
    return ARB_OK;
}

/* The reference read from a dump_ref file: each prompt + continuation as one chain of the F32
   model (batch-invariant: the rows the step-by-step decode gave), every continuation token
   checked to be the chain's argmax. */
static int reference_from_file(fid *f, arb_ctx *c, const char *path, FILE *progress, arb_err *err)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot open the reference", path);
    f->cap = ARB_FIDELITY_MAX_PROMPTS;
    int rc = (f->p = calloc((size_t)f->cap, sizeof *f->p)) ? ARB_OK : ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
    char *line = NULL;
    size_t len = 0;
    int covered = 0; /* prompts the "# set" lines so far account for */
    for (int ln = 1; !rc && getline(&line, &len, in) > 0; ln++) {
        char name[24];
        int first, count;
        if (sscanf(line, "# set %23s %d %d", name, &first, &count) == 3) { /* sets, in prompt order */
            if (first != covered || count < 0)
                rc = ARB_ERR(err, ARB_E_FORMAT, "%s:%d: set %s of %d prompts starts at prompt %d, expected %d", path, ln,
                             name, count, first, covered);
            else if (!(rc = add_set(f, name, first, err)))
                f->r->set_count[f->r->n_sets - 1] = count, covered += count;
            continue;
        }
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (f->n >= f->cap) {
            rc = ARB_ERR(err, ARB_E_RANGE, "%s:%d: more than %d prompts", path, ln, ARB_FIDELITY_MAX_PROMPTS);
            break;
        }
        ref_prompt *p = &f->p[f->n];
        if ((rc = parse_ref_line(f, line, path, ln, p, err)) ||
            (rc = eval_chain(f, c, p->seq, p->n_prompt + p->n_gen - 1, err)))
            break;
        for (int j = 0; j < p->n_gen && !rc; j++) {
            const float *row = f->logits + (size_t)(p->n_prompt - 1 + j) * f->V;
            memcpy(p->rows + (size_t)j * f->V, row, sizeof(float) * (size_t)f->V);
            if (arb_sample_argmax_f(row, f->V) != p->seq[p->n_prompt + j])
                rc = ARB_ERR(err, ARB_E_INVAL,
                             "%s:%d: continuation token %d is not the F32 model's argmax there: a reference of "
                             "another model or file",
                             path, ln, j);
        }
        if (!rc && ++f->n % 50 == 0 && progress)
            fprintf(progress, "fidelity: reference %d read and recomputed\n", f->n);
    }
    free(line);
    fclose(in);
    if (!rc && f->n == 0)
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: no reference lines", path);
    if (!rc && f->r->n_sets && covered != f->n)
        rc = ARB_ERR(err, ARB_E_FORMAT, "%s: its '# set' lines cover %d prompts of %d", path, covered, f->n);
    if (!rc && !f->r->n_sets) /* a file without set lines: one set */
        rc = add_set(f, "all", 0, err);
    return rc;
}

/* The reference: greedy continuations of the F32-dequantized model, and their rows. */
static int reference(fid *f, const char *path, FILE *progress, arb_err *err)
{
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    arb_dataset *ds = NULL;
    char dir[4096];
    int rc = load(path, "all", f->o->threads, &m, &c, err);
    if (!rc && !f->o->ref_in)
        rc = arb_dataset_dir(f->o->data_dir, dir, sizeof dir, err);
    if (rc)
        goto out;
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    f->V = mi.n_vocab;
    if (f->o->ref_in) {
        if (!(f->logits = malloc(sizeof(float) * (size_t)MAX_TOKENS * (size_t)f->V)))
            rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
        else
            rc = reference_from_file(f, c, f->o->ref_in, progress, err);
        goto out;
    }
    f->cap = f->o->limit * list_count(f->o->dataset);
    if (!(f->logits = malloc(sizeof(float) * (size_t)MAX_TOKENS * (size_t)f->V)) ||
        !(f->p = calloc((size_t)f->cap, sizeof *f->p))) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
        goto out;
    }
    /* the first `limit` prompts that fit of each dataset, in the order named */
    const char *cur = f->o->dataset;
    for (char one[64]; !rc && list_next(&cur, one, sizeof one);) {
        arb_dataset_free(ds);
        ds = NULL;
        if ((rc = arb_dataset_open(dir, one, NULL, &ds, err)))
            break;
        const int first = f->n;
        if (!(rc = reference_set(f, m, c, &mi, ds, progress, err)))
            rc = add_set(f, one, first, err);
    }
out:
    arb_dataset_free(ds);
    arb_ctx_free(c);
    arb_model_free(m);
    return rc;
}

/* 95% percentile bootstrap over prompts [first, first + n): of a's pooled agreement rate (b
   NULL), or of rate(a) - rate(b) with both pooled over the same resampled prompts (paired: a
   prompt that is hard for one is hard for the other). NAN when out of memory. */
static void boot_interval(const arb_fidelity_variant *a, const arb_fidelity_variant *b, int first, int n, int n_boot,
                          double *lo, double *hi)
{
    double *bs = n_boot > 0 && n > 0 ? malloc(sizeof(double) * (size_t)n_boot) : NULL;
    *lo = *hi = NAN;
    if (!bs)
        return;
    uint64_t s = b ? 0xfa11edULL : 0x5eedULL;
    for (int k = 0; k < n_boot; k++) {
        long aa = 0, ba = 0, t = 0;
        for (int i = 0; i < n; i++) {
            const int j = first + (int)(arb_splitmix64(&s) % (uint64_t)n);
            aa += a->agree_p[j], ba += b ? b->agree_p[j] : 0, t += a->pos_p[j];
        }
        bs[k] = t ? (double)(aa - ba) / t : b ? 0.0 : NAN;
    }
    qsort(bs, (size_t)n_boot, sizeof *bs, arb_cmp_double);
    *lo = arb_quantile_sorted(bs, n_boot, 0.025), *hi = arb_quantile_sorted(bs, n_boot, 0.975);
    free(bs);
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
    boot_interval(v, NULL, 0, f->n, n_boot, &v->lo, &v->hi);
    if (progress)
        fprintf(progress, "fidelity: %s: %d/%d positions agree\n", v->name, v->n_agree, v->n_pos);
}

/* This run's own argmax (the file as stored) in the score format (fidelity.h). */
static int dump_argmax(const fid *f, const char *path, const arb_fidelity_result *r, arb_err *err)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot write the argmax", path);
    fprintf(out, "# arbor bench fidelity: argmax of %s as stored, kernels %s; datasets %s, %d prompts\n"
                 "# prompt\tposition\targmax\n",
            r->model_name, r->kernels, r->datasets, f->n);
    for (int i = 0, at = 0; i < f->n; i++)
        for (int j = 0; j < f->p[i].n_gen; j++)
            fprintf(out, "%d\t%d\t%d\n", i, j, f->stored[at++]);
    if (fclose(out))
        return ARB_ERR(err, ARB_E_IO, "%s: write failed", path);
    return ARB_OK;
}

/* The reference sequences as TSV (fidelity.h). */
static int dump_reference(const fid *f, const arb_fidelity_opts *o, const char *model, arb_err *err)
{
    FILE *out = fopen(o->dump_ref, "w");
    if (!out)
        return ARB_ERR(err, ARB_E_IO, "%s: cannot write the reference", o->dump_ref);
    fprintf(out, "# arbor bench fidelity reference: %s dequantized to F32, greedy; datasets %s (%d prompts of each "
                 "at most), %d prompts, max_new %d\n# i\tn_prompt\tn_gen\tids (prompt, then continuation)\n",
            model, o->dataset, o->limit, f->n, o->max_new);
    for (int k = 0; k < f->r->n_sets; k++)
        fprintf(out, "# set %s %d %d\n", f->r->set_name[k], f->r->set_first[k], f->r->set_count[k]);
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
static int score_external(fid *f, const char *path, const arb_fidelity_variant *stored, arb_fidelity_variant *v,
                          int n_boot, FILE *progress, arb_err *err)
{
    const char *b = strrchr(path, '/');
    snprintf(v->name, sizeof v->name, "external: %.29s", b ? b + 1 : path);
    FILE *in = fopen(path, "r");
    if (!in)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot open the scores", path);
    const int total = positions(f);
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
    v->same_as_stored = 0;
    for (int i = 0; !rc && i < f->n; i++) {
        const ref_prompt *p = &f->p[i];
        v->agree_p[i] = v->pos_p[i] = p->n_gen;
        for (int j = 0; j < p->n_gen; j++) {
            const int32_t want = p->seq[p->n_prompt + j], g = got[base[i] + j];
            v->same_as_stored += g == f->stored[base[i] + j];
            if (g != want)
                v->agree_p[i]--, gaps[n_gaps++] = (double)p->rows[(size_t)j * f->V + want] - p->rows[(size_t)j * f->V + g];
        }
        v->n_pos += v->pos_p[i], v->n_agree += v->agree_p[i];
    }
    if (!rc) {
        finish_variant(f, v, gaps, n_gaps, NAN, n_boot, progress);
        v->diff = stored->rate - v->rate;
        boot_interval(stored, v, 0, f->n, n_boot, &v->diff_lo, &v->diff_hi);
    }
    free(got), free(gaps), free(base);
    return rc;
}

/* One variant against the reference, prompt by prompt. */
static int variant(fid *f, const char *path, const char *dequant, arb_fidelity_variant *v, int32_t *keep, int n_boot,
                   FILE *progress, arb_err *err)
{
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    int rc = load(path, dequant, f->o->threads, &m, &c, err);
    double *gaps = NULL, sum_abs = 0;
    int n_gaps = 0;
    if (!rc && !(gaps = malloc(sizeof(double) * (size_t)(positions(f) + 1))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
    for (int i = 0; i < f->n && !rc; i++) {
        const ref_prompt *p = &f->p[i];
        if ((rc = eval_chain(f, c, p->seq, p->n_prompt + p->n_gen, err)))
            break;
        v->agree_p[i] = v->pos_p[i] = 0;
        for (int j = 0; j < p->n_gen; j++) {
            const float *row = f->logits + (size_t)(p->n_prompt - 1 + j) * f->V, *ref = p->rows + (size_t)j * f->V;
            const int32_t want = p->seq[p->n_prompt + j], got = arb_sample_argmax_f(row, f->V);
            if (keep)
                *keep++ = got;
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
    const int n_sets = o->dataset ? list_count(o->dataset) : 0;
    if (!o->ref_in && (o->limit < 1 || o->max_new < 1 || o->max_new >= MAX_TOKENS || n_sets < 1 ||
                       (long)o->limit * n_sets > ARB_FIDELITY_MAX_PROMPTS))
        return ARB_ERR(err, ARB_E_INVAL,
                       "fidelity: limit x datasets 1..%d (here %d x %d) and max_new 1..%d (here %d)",
                       ARB_FIDELITY_MAX_PROMPTS, o->limit, n_sets, MAX_TOKENS - 1, o->max_new);
    if (o->ref_in) {
        const char *b = strrchr(o->ref_in, '/');
        snprintf(r->datasets, sizeof r->datasets, "reference %s", b ? b + 1 : o->ref_in);
    } else {
        snprintf(r->datasets, sizeof r->datasets, "%s", o->dataset);
    }
    /* the --score files are read at the end of a long run: a typo is better found now */
    const char *cur = o->score;
    for (char file[4096]; list_next(&cur, file, sizeof file);) {
        FILE *t = fopen(file, "r");
        if (!t)
            return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot open the scores", file);
        fclose(t);
    }
    char path[4096];
    int rc = arb_model_resolve(o->model, path, sizeof path, err);
    uint32_t types[ARB_FIDELITY_MAX_VARIANTS - 1];
    int n_types = 0;
    if (!rc)
        rc = matrix_types(path, types, ARB_FIDELITY_MAX_VARIANTS - 1, &n_types, err);
    fid f = {.o = o, .r = r};
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
    r->n_boot = o->n_boot > 0 ? o->n_boot : 1000;
    if (!rc && o->dump_ref) /* before the variants, so that another engine can start on it */
        rc = dump_reference(&f, o, r->model_name, err);
    if (!rc && !(f.stored = malloc(sizeof(int32_t) * (size_t)(positions(&f) + 1))))
        rc = ARB_ERR(err, ARB_E_NOMEM, "fidelity: out of memory");
    /* as stored; then each type alone when there are several (with one type, the same run) */
    for (int k = -1; k < n_types && !rc; k++) {
        if (k >= 0 && (n_types < 2 || o->stored_only))
            break;
        arb_fidelity_variant *v = &r->v[r->n_variants++];
        char dq[48] = "";
        if (k < 0) {
            snprintf(v->name, sizeof v->name, "as stored (all types)");
        } else {
            snprintf(v->name, sizeof v->name, "only %s quantized", arb_type_name(types[k]));
            snprintf(dq, sizeof dq, "all-but-%s", arb_type_name(types[k]));
        }
        v->diff = v->diff_lo = v->diff_hi = NAN, v->same_as_stored = -1;
        rc = variant(&f, path, k < 0 ? NULL : dq, v, k < 0 ? f.stored : NULL, r->n_boot, progress, err);
    }
    if (!rc && o->dump_argmax)
        rc = dump_argmax(&f, o->dump_argmax, r, err);
    cur = o->score;
    for (char file[4096]; !rc && list_next(&cur, file, sizeof file);) {
        if (r->n_variants >= ARB_FIDELITY_MAX_VARIANTS)
            rc = ARB_ERR(err, ARB_E_RANGE, "fidelity: at most %d variants (the file's types and the --score files)",
                         ARB_FIDELITY_MAX_VARIANTS);
        else
            rc = score_external(&f, file, &r->v[0], &r->v[r->n_variants++], r->n_boot, progress, err);
    }
    for (int i = 0; f.p && i < f.cap; i++) /* calloc'd: a prompt torn by an error is freed too */
        free(f.p[i].seq), free(f.p[i].rows);
    free(f.p);
    free(f.logits);
    free(f.stored);
    return rc;
}

/* Arbor as stored minus each scored engine (arb_fidelity_print's second table). */
static void print_paired(const arb_fidelity_result *r, FILE *f)
{
    fprintf(f, "\nArbor as stored minus each scored engine, paired over the same prompts (percentile bootstrap):\n\n");
    fprintf(f, "| scored engine | agreement difference, points [95%% CI] | argmax equal to arbor's |\n");
    fprintf(f, "|---|---|---|\n");
    for (int i = 1; i < r->n_variants; i++) {
        const arb_fidelity_variant *v = &r->v[i];
        if (v->same_as_stored < 0)
            continue;
        fprintf(f, "| %s | %+.2f [%+.2f, %+.2f] | %d of %d |\n", v->name, 100.0 * v->diff, 100.0 * v->diff_lo,
                100.0 * v->diff_hi, v->same_as_stored, v->n_pos);
    }
}

/* Pooled agreement of v over prompts [first, first + n). */
static double set_rate(const arb_fidelity_variant *v, int first, int n)
{
    long a = 0, t = 0;
    for (int i = first; i < first + n; i++)
        a += v->agree_p[i], t += v->pos_p[i];
    return t ? (double)a / t : NAN;
}

/* With several datasets: each variant's agreement and each paired difference per dataset. */
static void print_sets(const arb_fidelity_result *r, FILE *f)
{
    if (r->n_sets < 2 || r->n_variants < 1)
        return;
    fprintf(f, "\nPer dataset: agreement of each variant; arbor as stored minus each scored engine, points [95%% CI]:\n\n");
    fprintf(f, "| dataset | prompts |");
    for (int i = 0; i < r->n_variants; i++)
        fprintf(f, " %s |", r->v[i].name);
    for (int i = 1; i < r->n_variants; i++)
        if (r->v[i].same_as_stored >= 0)
            fprintf(f, " minus %s |", r->v[i].name);
    fprintf(f, "\n|---|---:|");
    for (int i = 0; i < r->n_variants; i++)
        fprintf(f, "---:|");
    for (int i = 1; i < r->n_variants; i++)
        if (r->v[i].same_as_stored >= 0)
            fprintf(f, "---|");
    fputc('\n', f);
    for (int k = 0; k < r->n_sets; k++) {
        const int first = r->set_first[k], n = r->set_count[k];
        if (n < 1)
            continue;
        fprintf(f, "| %s | %d |", r->set_name[k], n);
        for (int i = 0; i < r->n_variants; i++)
            fprintf(f, " %.4f |", set_rate(&r->v[i], first, n));
        for (int i = 1; i < r->n_variants; i++) {
            if (r->v[i].same_as_stored < 0)
                continue;
            double lo, hi;
            boot_interval(&r->v[0], &r->v[i], first, n, r->n_boot, &lo, &hi);
            fprintf(f, " %+.2f [%+.2f, %+.2f] |", 100.0 * (set_rate(&r->v[0], first, n) - set_rate(&r->v[i], first, n)),
                    100.0 * lo, 100.0 * hi);
        }
        fputc('\n', f);
    }
}

void arb_fidelity_print(const arb_fidelity_result *r, FILE *f)
{
    fprintf(f, "Teacher-forced greedy argmax agreement with the F32-dequantized model (%s, %s, %d prompts, kernels %s)\n\n",
            r->model_name, r->datasets, r->n_prompts, r->kernels);
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
    bool paired = false;
    for (int i = 1; i < r->n_variants; i++)
        paired |= r->v[i].same_as_stored >= 0;
    if (paired)
        print_paired(r, f);
    print_sets(r, f);
}
