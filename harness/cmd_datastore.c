/* cmd_datastore.c — `arbor datastore build|info`: REST datastores from a corpus, tokenised
 * with a model's tokenizer (datastore.h; docs/greedy-methods.md "REST").
 *
 * Corpora: `code` = the Python standard library sources Debian ships (libpython3.11-stdlib;
 * the REST paper used The Stack), one document per file in sorted path order; `chat` = the
 * assistant turns of the ShareGPT multi-turn dump in $ARBOR_DATA (the paper used UltraChat),
 * one document per turn. Evaluation prompts are kept out: every document whose tokens share an
 * n-gram (24 by default) with any prompt turn of the evaluation sets is dropped (for chat, the
 * whole conversation goes when any of its turns hits), and the counts are printed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
#include "datastore.h"
#include "dataset.h"
#include "engine.h"
#include "genutil.h"
#include "modelfetch.h"
#include "opts.h"
#include "progress.h"
#include "sha256.h"

static const char description[] =
    "build: a REST retrieval datastore (tokens + suffix array) from --corpus with a model's\n"
    "tokenizer, written to --out; info FILE|NAME: one's header. A NAME without '/' lives in\n"
    "$ARBOR_CACHE/datastores/NAME.ards, which configs name as {\"preset\": \"rest\", \"datastore\": \"NAME\"}.\n"
    "Corpora: code = *.py under --python-dir, one file a document; chat = the assistant turns of\n"
    "sharegpt-multiturn/ShareGPT_V3_unfiltered_cleaned_split.first5000.json in the data dir, one\n"
    "turn a document.\n";

/* Evaluation sets whose prompts must not be retrievable (every split). */
static const char *const k_eval_sets[] = {"humaneval", "mbpp", "classeval", "gsm8k", "mt-bench", "spec-bench",
                                          "sharegpt", "sharegpt-1000", "sharegpt-90k"};

typedef struct gramset {  /* open addressing set of n-gram hashes (0 = empty) */
    uint64_t *slot;
    size_t mask, used;
    int n;
} gramset;

static uint64_t gram_hash(const int32_t *t, int n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint32_t)t[i]) * 0x100000001B3ull, h ^= h >> 29;
    return h | 1;
}

static int gram_insert(gramset *g, uint64_t h)
{
    if (2 * (g->used + 1) > g->mask + 1) { /* keep it at most half full */
        size_t cap = g->mask ? 2 * (g->mask + 1) : 1 << 16;
        uint64_t *s = calloc(cap, sizeof *s);
        if (!s)
            return -1;
        for (size_t i = 0; g->slot && i <= g->mask; i++)
            if (g->slot[i]) {
                size_t j = g->slot[i] & (cap - 1);
                while (s[j])
                    j = (j + 1) & (cap - 1);
                s[j] = g->slot[i];
            }
        free(g->slot);
        g->slot = s, g->mask = cap - 1;
    }
    size_t j = h & g->mask;
    while (g->slot[j] && g->slot[j] != h)
        j = (j + 1) & g->mask;
    if (!g->slot[j])
        g->slot[j] = h, g->used++;
    return 0;
}

static bool gram_hits(const gramset *g, const int32_t *t, size_t n)
{
    if (!g->n || !g->slot)
        return false;
    for (size_t i = 0; i + (size_t)g->n <= n; i++) {
        uint64_t h = gram_hash(t + i, g->n);
        for (size_t j = h & g->mask; g->slot[j]; j = (j + 1) & g->mask)
            if (g->slot[j] == h)
                return true;
    }
    return false;
}

typedef struct build_ctx {
    arb_model *m;
    arb_datastore_builder *b;
    gramset eval;
    int32_t *ids;
    int cap_ids;
    uint64_t max_tokens;
    size_t n_docs, n_dropped;
    arb_progress prog;
} build_ctx;

static int tokenize(build_ctx *c, const char *text, size_t len, int *n, arb_err *err)
{
    int rc = arb_tokenize(c->m, text, len, false, false, c->ids, c->cap_ids, n, err);
    if (!rc && *n > c->cap_ids) {
        int32_t *more = realloc(c->ids, (size_t)*n * sizeof *more);
        if (!more)
            return ARB_ERR(err, ARB_E_NOMEM, "datastore: out of memory for %d tokens", *n);
        c->ids = more, c->cap_ids = *n;
        rc = arb_tokenize(c->m, text, len, false, false, c->ids, c->cap_ids, n, err);
    }
    return rc;
}

static int load_eval_grams(build_ctx *c, const char *data_dir, arb_err *err)
{
    size_t n_prompts = 0;
    for (size_t k = 0; k < sizeof k_eval_sets / sizeof k_eval_sets[0]; k++) {
        arb_dataset *d = NULL;
        arb_err e2 = {0};
        if (arb_dataset_open(data_dir, k_eval_sets[k], "all", &d, &e2)) {
            fprintf(stderr, "datastore: eval filter: skipping %s (%s)\n", k_eval_sets[k], e2.msg);
            continue;
        }
        for (size_t i = 0; i < arb_dataset_count(d); i++) {
            const arb_record *r = arb_dataset_get(d, i);
            for (int t = 0; t < r->n_turns; t++) {
                int n = 0, rc = tokenize(c, r->turns[t], strlen(r->turns[t]), &n, err);
                for (int j = 0; !rc && j + c->eval.n <= n; j++)
                    if (gram_insert(&c->eval, gram_hash(c->ids + j, c->eval.n)))
                        rc = ARB_ERR(err, ARB_E_NOMEM, "datastore: eval filter: out of memory");
                if (rc) {
                    arb_dataset_free(d);
                    return rc;
                }
            }
            n_prompts++;
        }
        arb_dataset_free(d);
    }
    fprintf(stderr, "datastore: eval filter: %zu prompts, %zu distinct %d-grams\n", n_prompts, c->eval.used,
            c->eval.n);
    return ARB_OK;
}

/* Add a tokenised document; *full when --max-tokens is reached. */
static int add_doc(build_ctx *c, const int32_t *ids, size_t n, bool *full, arb_err *err)
{
    uint64_t have = arb_datastore_builder_n_tokens(c->b);
    if (c->max_tokens && have + n + 1 > c->max_tokens) {
        n = have + 1 >= c->max_tokens ? 0 : (size_t)(c->max_tokens - have - 1);
        *full = true;
    }
    c->n_docs += n > 0;
    return arb_datastore_builder_add(c->b, ids, n, err);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every *.py under dir, recursively (site-/dist-packages skipped: not the standard library). */
static int list_py(const char *dir, char ***paths, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "site-packages") || !strcmp(e->d_name, "dist-packages") ||
            !strcmp(e->d_name, "__pycache__"))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0 || S_ISLNK(sb.st_mode))
            continue;
        if (S_ISDIR(sb.st_mode)) {
            rc = list_py(p, paths, n, cap);
        } else if (S_ISREG(sb.st_mode) && strlen(e->d_name) > 3 && !strcmp(e->d_name + strlen(e->d_name) - 3, ".py")) {
            if (*n == *cap) {
                char **np = realloc(*paths, (*cap = *cap ? 2 * *cap : 256) * sizeof *np);
                if (!np)
                    return -1;
                *paths = np;
            }
            if (!((*paths)[(*n)++] = strdup(p)))
                rc = -1;
        }
    }
    closedir(d);
    return rc;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)sz + 1))) {
            *len = fread(buf, 1, (size_t)sz, f);
            buf[*len] = 0;
        }
    }
    fclose(f);
    return buf;
}

static int corpus_code(build_ctx *c, const char *pydir, char *desc, size_t cap, arb_err *err)
{
    char **paths = NULL;
    size_t n = 0, pcap = 0;
    int rc = ARB_OK;
    if (list_py(pydir, &paths, &n, &pcap) != 0 || n == 0)
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "--python-dir %s: no *.py files (install libpython3.11-stdlib)", pydir);
    if (!rc)
        qsort(paths, n, sizeof *paths, cmp_str);
    arb_progress_init(&c->prog, stderr, (int64_t)n, 5.0);
    bool full = false;
    for (size_t i = 0; i < n && !rc && !full; i++) {
        size_t len = 0;
        char *text = read_file(paths[i], &len);
        int nt = 0;
        if (!text) {
            rc = ARB_ERR(err, ARB_E_IO, "%s: cannot read", paths[i]);
        } else if (!(rc = tokenize(c, text, len, &nt, err))) {
            if (gram_hits(&c->eval, c->ids, (size_t)nt))
                c->n_dropped++;
            else
                rc = add_doc(c, c->ids, (size_t)nt, &full, err);
        }
        free(text);
        arb_progress_step(&c->prog, 1, true, paths[i] + strlen(pydir));
    }
    arb_progress_finish(&c->prog);
    snprintf(desc, cap, "code: %s/**/*.py (%zu files, %zu dropped by the eval filter)", pydir, n, c->n_dropped);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    return rc;
}

static int corpus_chat(build_ctx *c, const char *data_dir, char *desc, size_t cap, arb_err *err)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/sharegpt-multiturn/ShareGPT_V3_unfiltered_cleaned_split.first5000.json",
                 data_dir) >= (int)sizeof path)
        return ARB_ERR(err, ARB_E_INVAL, "--data: path too long");
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text)
        return ARB_ERR(err, ARB_E_NOTFOUND, "%s: cannot read (set ARBOR_DATA or --data)", path);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return ARB_ERR(err, ARB_E_FORMAT, "%s: expected a JSON array of conversations", path);
    }
    int rc = ARB_OK, n_conv = cJSON_GetArraySize(root), idx = 0;
    size_t conv_dropped = 0;
    arb_progress_init(&c->prog, stderr, n_conv, 5.0);
    bool full = false;
    for (const cJSON *cv = root->child; cv && !rc && !full; cv = cv->next, idx++) {
        const cJSON *turns = cJSON_GetObjectItemCaseSensitive(cv, "conversations");
        if (!cJSON_IsArray(turns)) {
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s: [%d].conversations: expected an array", path, idx);
            break;
        }
        bool hit = false; /* any turn (human or assistant) near an eval prompt drops the conversation */
        for (const cJSON *t = turns->child; t && !rc && !hit; t = t->next) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "value");
            int nt = 0;
            if (cJSON_IsString(v) && !(rc = tokenize(c, v->valuestring, strlen(v->valuestring), &nt, err)))
                hit = gram_hits(&c->eval, c->ids, (size_t)nt);
        }
        conv_dropped += hit;
        for (const cJSON *t = turns->child; t && !rc && !hit && !full; t = t->next) {
            const cJSON *from = cJSON_GetObjectItemCaseSensitive(t, "from");
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "value");
            if (!cJSON_IsString(from) || !cJSON_IsString(v) ||
                (strcmp(from->valuestring, "gpt") && strcmp(from->valuestring, "chatgpt")))
                continue;
            int nt = 0;
            if (!(rc = tokenize(c, v->valuestring, strlen(v->valuestring), &nt, err)))
                rc = add_doc(c, c->ids, (size_t)nt, &full, err);
        }
        arb_progress_step(&c->prog, 1, true, "conversations");
    }
    arb_progress_finish(&c->prog);
    cJSON_Delete(root);
    c->n_dropped = conv_dropped;
    snprintf(desc, cap, "chat: ShareGPT first5000 assistant turns (%d conversations, %zu dropped by the eval filter)",
             n_conv, conv_dropped);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmd_info(const char *name)
{
    char path[4096];
    arb_err err = {0};
    arb_datastore *ds = NULL;
    if (arb_datastore_resolve(name, path, sizeof path, &err) || arb_datastore_load(path, NULL, &ds, &err)) {
        fprintf(stderr, "arbor datastore: %s\n", err.msg);
        return 1;
    }
    const arb_datastore_meta *m = arb_datastore_get_meta(ds);
    printf("file       %s\nformat     v%d, %d-byte tokens\nmodel      %s\ntokenizer  %s\ncorpus     %s\n"
           "tokens     %llu in %llu documents\nmemory     %.1f MiB (tokens + suffix array)\n",
           path, ARB_DATASTORE_VERSION, m->token_width, m->model, m->tokenizer_sha256, m->corpus,
           (unsigned long long)m->n_tokens, (unsigned long long)m->n_docs, arb_datastore_bytes(ds) / 1048576.0);
    arb_datastore_free(ds);
    return 0;
}

int arb_cmd_datastore(int argc, char **argv)
{
    const char *corpus = NULL, *out = NULL, *model = "default", *data = "", *pydir = "/usr/lib/python3.11";
    int max_tokens = 0, filter_n = 24;
    const arb_opt opts[] = {
        ARB_OPT_STR("--corpus", "code|chat", &corpus, "build: the corpus (required)"),
        ARB_OPT_STR("--out", "FILE|NAME", &out, "build: where to write, a NAME goes to the cache (required)"),
        ARB_OPT_STR("--model", "M", &model, "model whose tokenizer is used: default or a GGUF path"),
        ARB_OPT_INT("--max-tokens", "N", &max_tokens, 0, INT32_MAX, "stop after N corpus tokens (0: all)"),
        ARB_OPT_STR("--data", "DIR", &data, "dataset directory (default $ARBOR_DATA): chat corpus, eval prompts"),
        ARB_OPT_STR("--python-dir", "DIR", &pydir, "code corpus root (default /usr/lib/python3.11)"),
        ARB_OPT_INT("--filter-n", "N", &filter_n, 0, 1024,
                    "drop documents sharing an N-token n-gram with an eval prompt (24; 0 = off)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"datastore", "build|info [FILE|NAME]", description, opts, 1, 2};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    const char *why = NULL;
    if (!strcmp(pos.v[0], "info"))
        why = pos.n != 2 ? "info takes one FILE|NAME" : NULL;
    else if (strcmp(pos.v[0], "build"))
        why = "expected 'build' or 'info'";
    else if (pos.n != 1)
        why = "build takes no FILE|NAME (use --out)";
    else if (!corpus || (strcmp(corpus, "code") && strcmp(corpus, "chat")))
        why = "--corpus: expected code or chat";
    else if (!out)
        why = "--out FILE|NAME is required";
    if (why) {
        fprintf(stderr, "arbor datastore: %s\n", why);
        arb_opts_usage(&cmd, stderr);
        return 2;
    }
    if (!strcmp(pos.v[0], "info"))
        return cmd_info(pos.v[1]);
    arb_err err = {0};
    build_ctx c = {.max_tokens = (uint64_t)max_tokens, .eval.n = (int)filter_n};
    char path[4096], mpath[4096], data_dir[4096], desc[256], sha[65] = "";
    arb_datastore *ds = NULL;
    arb_load_opts lo = arb_gen_load_opts();
    lo.vocab_only = true;
    double t0 = now_s(), t_tok = 0, t_sa = 0;
    int rc = arb_datastore_resolve(out, path, sizeof path, &err);
    if (!rc)
        rc = arb_dataset_dir(data, data_dir, sizeof data_dir, &err);
    if (!rc)
        rc = arb_model_resolve(model, mpath, sizeof mpath, &err);
    if (!rc)
        rc = arb_model_load(mpath, &lo, &c.m, &err);
    arb_model_info mi = {0};
    if (!rc) {
        arb_model_get_info(c.m, &mi);
        rc = arb_datastore_builder_new(mi.n_vocab, &c.b, &err);
    }
    if (!rc && filter_n > 0)
        rc = load_eval_grams(&c, data_dir, &err);
    if (!rc)
        rc = !strcmp(corpus, "code") ? corpus_code(&c, pydir, desc, sizeof desc, &err)
                                     : corpus_chat(&c, data_dir, desc, sizeof desc, &err);
    t_tok = now_s() - t0;
    arb_datastore_meta meta = {.n_vocab = mi.n_vocab};
    if (!rc) {
        const char *mname = mi.name ? mi.name : mpath;
        size_t ml = strlen(mname);
        memcpy(meta.model, mname, ml < sizeof meta.model - 1 ? ml : sizeof meta.model - 1);
        snprintf(meta.corpus, sizeof meta.corpus, "%s", desc);
        rc = arb_datastore_tokenizer_sha256(c.m, meta.tokenizer_sha256, &err);
    }
    if (!rc) {
        fprintf(stderr, "datastore: sorting %llu suffixes (libdivsufsort)\n",
                (unsigned long long)arb_datastore_builder_n_tokens(c.b));
        double t1 = now_s();
        rc = arb_datastore_builder_finish(c.b, &meta, &ds, &err);
        c.b = NULL;
        t_sa = now_s() - t1;
    }
    if (!rc) { /* the cache directory may not exist yet */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        for (char *p = dir + 1; (p = strchr(p, '/')); *p++ = '/') {
            *p = 0;
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
                rc = ARB_ERR(&err, ARB_E_IO, "%s: cannot create directory: %s", dir, strerror(errno));
                break;
            }
        }
    }
    if (!rc)
        rc = arb_datastore_save(ds, path, &err);
    if (!rc)
        rc = arb_sha256_file(path, sha, &err);
    if (!rc) {
        const arb_datastore_meta *m = arb_datastore_get_meta(ds);
        struct stat sb = {0};
        if (stat(path, &sb) != 0) /* just written: only the size line would be wrong */
            sb.st_size = 0;
        printf("datastore  %s\ncorpus     %s\nmodel      %s (tokenizer %.16s...)\n"
               "tokens     %llu in %zu documents (%zu dropped by the %d-gram eval filter)\n"
               "size       %.1f MiB file, %.1f MiB in memory (%d-byte tokens + 4-byte suffix array)\n"
               "time       %.1f s tokenising, %.1f s suffix sort, %.1f s total\nsha256     %s\n",
               path, m->corpus, m->model, m->tokenizer_sha256, (unsigned long long)m->n_tokens, c.n_docs,
               c.n_dropped, filter_n, (double)sb.st_size / 1048576.0, arb_datastore_bytes(ds) / 1048576.0,
               m->token_width, t_tok, t_sa, now_s() - t0, sha);
    }
    if (rc)
        fprintf(stderr, "arbor datastore: %s\n", err.msg);
    arb_datastore_free(ds);
    arb_datastore_builder_free(c.b);
    arb_model_free(c.m);
    free(c.ids);
    free(c.eval.slot);
    return rc ? 1 : 0;
}
