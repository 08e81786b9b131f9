/* cmd_bench_harness.c — `arbor bench-harness`: the harness's own costs, measured in one run.
 *
 * (1) ContextMatch / Saxena lookups as the context grows from 1k to 16k tokens (the n-gram
 * index should keep them flat), (2) adjacency + index memory, (3) per-step harness work at
 * B = 60 on synthetic logits (top-K harvest of every node on 1 thread and, with --model, on
 * the target's threads as decode runs it; spine-tree build, the greedy verifier called through
 * the verifier table as decode calls it, table writes), GOOSE's dynamic tree build (flat and
 * CPU-like cost tables), (4) the
 * EAGLE-2 dynamic tree builder at depth 6 / topk 10 / total 60 on synthetic rows, and
 * with --model, the eval time of a 60-node tree on the real model and the top-K of its real
 * logits rows straight after that eval, for the ratio. (4) REST: datastore memory, build and
 * retrieval latency as a synthetic corpus grows 10^6 -> 10^7 (-> 10^8 with --rest-1e8), and
 * with --model, retrieval on the cached code datastore against a 65-node tree eval. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "bench_drafts.h"
#include "cli.h"
#include "decode.h"
#include "drafters/drafter.h"
#include "drafters/eagle.h"
#include "drafters/goose.h"
#include "drafters/medusa.h"
#include "drafters/pld.h"
#include "drafters/rest.h"
#include "drafters/tr.h"
#include "dyntree.h"
#include "eagle_head.h"
#include "heads.h"
#include "heads_file.h"
#include "sha256.h"
#include "genutil.h"
#include "method.h"
#include "opts.h"
#include "verifiers/greedy.h"

static const char description[] =
    "Measures the harness's own work: n-gram lookups at 1k..16k tokens of context, table\n"
    "memory, and the per-step cost of harvesting, tree building and verification at B = 60\n"
    "on synthetic logits, and EAGLE-2's dynamic tree (selection vs the top-K of expanded rows).\n"
    "With --model, also one 60-node tree eval, the top-K of its real\n"
    "logits rows on 1 thread and on the target's --threads, and the ratio to eval time.\n"
    "REST: datastore memory, build time and retrieval latency on a synthetic corpus of 10^6\n"
    "and 10^7 tokens (--rest-1e8 adds 10^8: minutes, ~3 GB), and with --model, retrieval on\n"
    "--datastore (default code, see arbor datastore) against one 65-node tree eval.\n"
    "Last, the Lookahead drafter (preset lookahead, W 15 N 5 G 15): its propose (window +\n"
    "guesses) and pool update per step, and with --model their share of its tree's eval.\n"
    "With --model, the EAGLE head drafter (preset eagle2-head, 60 / 6 / 10): its propose per step\n"
    "(catch-up + dynamic tree) against one eval of the tree it drafts (the trained head at the\n"
    "default path when there is one, else a random head of the model's sizes).\n"
    "With --model, the Medusa and Hydra drafters (trained heads at the default path): their\n"
    "propose per step scored with the f32 copy and with the engine's own output head, against\n"
    "one eval of the tree they draft.\n"
    "With --model, each sampling draft (self-draft 24/30, EAGLE head `eagle-dte`): its cost per\n"
    "drafted token and per (k, l, b) tree at T = 1, relative to one target pass (CPU time).\n";

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* EAGLE-2 tree source on synthetic rows: candidate c reads row c % n_rows (the anchor row 0),
   top-K + log as the eagle2-draft source does after its draft eval; the time goes to us. */
typedef struct e2_bench { const float *lg; int V, n_rows; double us; } e2_bench;
static double now_us(void);
static int e2_bench_expand(void *ud, const arb_dyntree_cand *cand, const int32_t *front, int n, int k, int32_t *ids,
                           float *logp, arb_err *err)
{
    e2_bench *b = ud;
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        int row = front[i] < 0 ? 0 : (front[i] + 1) % b->n_rows;
        arb_topk_softmax(b->lg + (size_t)row * b->V, b->V, k, ids + i * k, logp + i * k);
        for (int j = 0; j < k; j++)
            logp[i * k + j] = logf(logp[i * k + j]);
    }
    b->us += now_us() - t0;
    return ARB_OK;
}

static uint64_t rs = 0x853c49e6748fea9bull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}

/* a text-like stream: mostly fresh tokens, with copies of earlier spans (code/maths repeat) */
static void stream(int32_t *S, int L, int V)
{
    for (int i = 0; i < L;) {
        if (i > 64 && rnd() % 4 == 0) {
            int len = 4 + (int)(rnd() % 24), from = (int)(rnd() % (uint32_t)(i - len > 1 ? i - len : 1));
            for (int j = 0; j < len && i < L; j++)
                S[i++] = S[from + j];
        } else {
            S[i++] = (int32_t)(rnd() % (uint32_t)V);
        }
    }
}

/* top-K of row i, as the CPU engine runs it for arb_eval_out.topk (one row per task on the target's threads) */
typedef struct topk_job {
    const float *lg;
    int V;
    int32_t *ids;
    float *sc;
} topk_job;

static void topk_job_row(void *ud, int i, int n)
{
    topk_job *j = ud;
    arb_topk_softmax(j->lg + (size_t)i * j->V, j->V, 10, j->ids + (size_t)i * 10, j->sc + (size_t)i * 10);
}

/* Process CPU time: the REST figures are per-call microseconds on a shared machine, where
   wall time includes whole time slices given to other processes. */
static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Zipf-like tokens (rank ~ u^3 of the vocabulary) with copied spans: a corpus where short
   suffixes match thousands of times and long ones a few, as in text. */
static void zipf_stream(int32_t *S, size_t L, int V)
{
    for (size_t i = 0; i < L;) {
        if (i > 64 && rnd() % 3 == 0) {
            size_t len = 4 + rnd() % 40, from = (size_t)(((uint64_t)rnd() << 21 ^ rnd()) % (i - 1 > len ? i - len : 1));
            for (size_t j = 0; j < len && i < L; j++)
                S[i++] = S[from + j];
        } else {
            double u = (rnd() & 0xFFFFF) / 1048576.0;
            S[i++] = (int32_t)(u * u * u * (V - 1));
        }
    }
}

/* Mean and worst microseconds of one retrieval (suffix search + trie + selection); best of 3
   rounds. Half the contexts end in 2..5 corpus tokens after random ones, so the longest match
   is short and has up to thousands of occurrences (the costly case, common in decoding); the
   other half are random (mostly no match: the 15 failed searches). */
static double rest_latency(arb_rest_retriever *r, const arb_datastore *ds, const int32_t *corpus, size_t L, int V,
                           double *hit_rate, double *nodes, double *worst)
{
    enum { NQ = 400, CTX = 32 };
    int32_t (*q)[CTX] = malloc(sizeof(int32_t[NQ][CTX]));
    if (!q)
        return NAN;
    for (int i = 0; i < NQ; i++) {
        size_t at = (size_t)(((uint64_t)rnd() << 21 ^ rnd()) % (L - CTX));
        int m = i % 2 ? 2 + i / 2 % 4 : 0;
        for (int j = 0; j < CTX; j++)
            q[i][j] = j >= CTX - m ? corpus[at + (size_t)j] : (int32_t)(rnd() % (uint32_t)V);
    }
    double best = 1e30;
    long hits = 0, n_nodes = 0;
    *worst = 1e30;
    for (int round = 0; round < 3; round++) {
        double tot = 0, mx = 0;
        hits = n_nodes = 0;
        for (int i = 0; i < NQ; i++) {
            arb_rest_result res;
            double t0 = cpu_us();
            int n = arb_rest_retrieve(r, ds, q[i], CTX, &res);
            double dt = cpu_us() - t0;
            tot += dt, mx = fmax(mx, dt);
            hits += n > 0;
            n_nodes += n;
        }
        best = fmin(best, tot / NQ);
        *worst = fmin(*worst, mx);
    }
    *hit_rate = (double)hits / NQ;
    *nodes = (double)n_nodes / NQ;
    free(q);
    return best;
}

static int bench_rest(bool big, const char *ds_name, bool ds_named, arb_ctx *c, arb_err *err)
{
    enum { V = 49152 };
    arb_rest_opts o = arb_rest_default_opts();
    arb_rest_retriever *r = NULL;
    int rc = arb_rest_retriever_new(&o, &r, err);
    printf("## REST datastore scaling (synthetic Zipf corpus with copied spans, V = %d; retrieval = "
           "suffix 16..2, 5000 matches, 10 tokens, 64 nodes)\n\n"
           "CPU time per call (the machine is shared).\n\n"
           "| tokens | memory (MiB) | suffix sort (s) | retrieval mean (us) | worst (us) | with a draft | nodes |\n"
           "|---:|---:|---:|---:|---:|---:|---:|\n", V);
    for (size_t L = 1000000; !rc && L <= (big ? 100000000u : 10000000u); L *= 10) {
        int32_t *S = malloc(L * sizeof *S);
        arb_datastore_builder *b = NULL;
        arb_datastore *ds = NULL;
        if (!S) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: %zu tokens", L);
            break;
        }
        zipf_stream(S, L, V);
        rc = arb_datastore_builder_new(V, &b, err);
        for (size_t at = 0; !rc && at < L; at += 100000) /* documents of 10^5 tokens */
            rc = arb_datastore_builder_add(b, S + at, L - at < 100000 ? L - at : 100000, err);
        arb_datastore_meta m = {.n_vocab = V};
        double t0 = cpu_us();
        if (!rc)
            rc = arb_datastore_builder_finish(b, &m, &ds, err);
        else
            arb_datastore_builder_free(b);
        double t_sort = (cpu_us() - t0) / 1e6, hit = 0, nodes = 0, worst = 0;
        if (!rc) {
            double lat = rest_latency(r, ds, S, L, V, &hit, &nodes, &worst);
            printf("| %zu | %.1f | %.1f | %.1f | %.0f | %.0f%% | %.1f |\n", L, arb_datastore_bytes(ds) / 1048576.0,
                   t_sort, lat, worst, 100 * hit, nodes);
            fflush(stdout);
        }
        arb_datastore_free(ds);
        free(S);
    }
    if (!rc && c) { /* the real datastore, real contexts (its own documents), against a tree eval */
        char path[4096];
        char sha[65];
        arb_datastore *ds = NULL;
        rc = arb_datastore_resolve(ds_name, path, sizeof path, err);
        struct stat sb;
        if (!rc && !ds_named && stat(path, &sb) != 0) {
            /* the default datastore not built yet: the other figures stand; say how to get this one */
            printf("\nRetrieval on %s: skipped, no datastore there (arbor datastore build --corpus code --out %s)\n",
                   path, ds_name);
            printf("\n");
            arb_rest_retriever_free(r);
            return ARB_OK;
        }
        if (!rc)
            rc = arb_datastore_tokenizer_sha256(arb_ctx_model(c), sha, err);
        if (!rc)
            rc = arb_datastore_load(path, sha, &ds, err);
        if (!rc) {
            uint64_t n = arb_datastore_get_meta(ds)->n_tokens;
            int32_t *S = malloc(n * sizeof *S);
            if (!S)
                rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
            for (uint64_t i = 0; S && i < n; i++)
                S[i] = arb_datastore_token(ds, i) < 0 ? 0 : arb_datastore_token(ds, i);
            double hit = 0, nodes = 0, worst = 0, lat = S ? rest_latency(r, ds, S, (size_t)n, V, &hit, &nodes, &worst) : 0;
            /* one REST-sized tree (65 nodes) on the target, best of 3 */
            int32_t tok[65], par[65];
            float *lg = malloc((size_t)65 * V * sizeof *lg);
            double te = 1e30;
            for (int i = 0; i < 65; i++)
                tok[i] = (int32_t)(rnd() % V), par[i] = i ? (i - 1) / 4 : -1;
            for (int k = 0; k < 3 && !rc && lg; k++) {
                double t0 = cpu_us();
                rc = arb_eval(c, tok, par, 65, lg, NULL, err);
                te = fmin(te, cpu_us() - t0);
            }
            if (!rc && lg)
                printf("\nRetrieval on %s (%llu tokens, %.1f MiB): %.1f us mean (worst %.0f us), %.0f%% with a draft, "
                       "%.1f nodes; 65-node tree eval: %.0f us; retrieval = %.3f%% of eval (worst %.2f%%)\n", path,
                       (unsigned long long)n, arb_datastore_bytes(ds) / 1048576.0, lat, worst, 100 * hit, nodes, te,
                       100 * lat / te, 100 * worst / te);
            free(lg);
            free(S);
        }
        arb_datastore_free(ds);
    }
    printf("\n");
    arb_rest_retriever_free(r);
    return rc;
}

/* Lookahead (docs/spec/drafting.md §6): the drafter's own work per step, through its vtable as
   decode drives it. One anchor recurs, so after the fill steps its pool list is full (G grams)
   and every step proposes the whole 1 + (W-1) + (N-2)W + G(N-1) tree and puts W full-list
   grams; the argmax rows are random tokens. With c, that tree's eval on the model. */
/* EAGLE head drafter: propose (catch-up of an accepted path of 3 rows + EAGLE-2 tree) against the
   eval of the tree it drafts, on the target at 256 tokens of context. */
static int bench_eagle(arb_ctx *c, arb_err *err)
{
    const arb_model *m = arb_ctx_model(c);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const int E = mi.n_embd, V = mi.n_vocab;
    arb_method_spec s;
    int rc = arb_method_spec_preset("eagle2-head", &s, err);
    char tmp[] = "/tmp/arb_bench_eagle_XXXXXX";
    bool random_head = false;
    if (!rc)
        rc = arb_bench_eagle_head(c, s.heads, sizeof s.heads, tmp, &random_head, err);
    const arb_drafter_i *dr = arb_drafter_find("eagle");
    void *st = NULL;
    arb_tree t;
    memset(&t, 0, sizeof t);
    float *hid = malloc((size_t)4 * E * sizeof *hid), *lg = malloc((size_t)s.budget * V * sizeof *lg);
    if (!rc && (!hid || !lg))
        rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
    if (!rc && !(rc = dr->create(&s, V, &st, err)) && !(rc = dr->bind(st, c, err)) &&
        !(rc = dr->begin(st, 1024, true, err)))
        rc = arb_tree_init(&t, s.budget, err);
    double t_prop[2] = {1e30, 1e30}, t_eval = 1e30, t_lm = 1e30, t_lmq = 1e30;
    int nodes = 0;
    for (int r = 0; r < 10 && !rc; r++) { /* alternate: engine head (even), f32 copy (odd) */
        for (int i = 0; i < 4 * E; i++)
            hid[i] = (float)((int)(rnd() % 2001) - 1000) * 1e-3f;
        int32_t S[2] = {1, (int32_t)(rnd() % V)}, acc[3] = {0, 1, 2};
        arb_tree_reset(&t, S[1]);
        arb_tree_add(&t, 0, (int32_t)(rnd() % V), ARB_SRC_HEAD, 0, 1.0f);
        arb_tree_add(&t, 1, (int32_t)(rnd() % V), ARB_SRC_HEAD, 0, 1.0f);
        arb_step_record rec = {0};
        if (r == 0)
            dr->hidden(st, hid); /* after prefill */
        else { /* after a step that accepted 2 drafts */
            dr->verified(st, &t, acc, 3, &rec);
            dr->hidden_path(st, hid, acc, 3, E);
            dr->hidden(st, hid + 2 * E);
        }
        arb_eagle_drafter_use_f32_head(st, r % 2 == 1);
        arb_tree_reset(&t, S[1]);
        double t0 = now_us();
        dr->propose(st, S, 2, &t, &rec);
        arb_tree_finalize(&t);
        double t1 = now_us();
        if (r > 0)
            t_prop[r % 2] = fmin(t_prop[r % 2], t1 - t0);
        nodes = t.n;
        if ((rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, err)))
            break;
        t_eval = fmin(t_eval, now_us() - t1);
    }
    if (!rc) { /* one level's scoring alone, 10 rows: the f32 copy against the engine's head */
        float *w_lm = NULL, *z = calloc((size_t)10 * E, sizeof *z), *L = malloc((size_t)10 * V * sizeof *L);
        for (int i = 0; z && i < 10 * E; i++)
            z[i] = (float)((int)(rnd() % 2001) - 1000) * 1e-3f;
        if (!z || !L)
            rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
        if (!rc && !(rc = arb_heads_lm_weights(m, &w_lm, NULL, err)))
            for (int r = 0; r < 3 && !rc; r++) {
                double t0 = now_us();
                arb_heads_logits(w_lm, V, z, 10, E, L);
                double t1 = now_us();
                rc = arb_ctx_output_head(c, z, 10, L, err);
                t_lm = fmin(t_lm, t1 - t0);
                t_lmq = fmin(t_lmq, now_us() - t1);
            }
        free(w_lm);
        free(z);
        free(L);
    }
    if (!rc)
        printf("## EAGLE head drafter (preset eagle2-head: budget %d, depth %d, topk %d; %s head)\n\n"
               "Propose per step = catch-up of a 3-row accepted path + the dynamic tree (best of 4 or 5), against "
               "one target eval of the %d-node tree it drafts (best of 10).\n\n"
               "| scoring f̂ with | propose | draft / target call | one level's scoring (10 rows) |\n"
               "|---|---:|---:|---:|\n"
               "| f32 copy of the output matrix (%.0f MB) | %.0f us | %.2f | %.0f us |\n"
               "| engine output head, as stored (arb_ctx_output_head) | %.0f us | %.2f | %.0f us |\n\n"
               "Target eval of the tree: %.0f us.\n\n",
               s.budget, s.max_depth, s.topk, random_head ? "a random" : "the trained", nodes,
               (double)V * E * 4 / 1e6, t_prop[1], t_prop[1] / t_eval, t_lm, t_prop[0], t_prop[0] / t_eval, t_lmq,
               t_eval);
    if (st)
        dr->destroy(st);
    arb_tree_release(&t);
    free(hid);
    free(lg);
    if (random_head)
        remove(tmp);
    return rc;
}

/* Medusa / Hydra drafters (presets medusa, hydra, and hydra tree=auto budget=24, the trained heads
   at the default path): propose per step (the heads' blocks + their output-head passes + the
   tree) with each scorer, against one target eval of the tree they draft. Skipped, saying so,
   when the model has no trained heads file. */
static int bench_heads(arb_ctx *c, arb_err *err)
{
    const arb_model *m = arb_ctx_model(c);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const int E = mi.n_embd, V = mi.n_vocab;
    static const struct { const char *preset, *tree; int budget; } cfg[] = {
        {"medusa", NULL, 0}, {"hydra", NULL, 0}, {"hydra", "auto", 24}};
    char sha[65];
    int rc = arb_sha256_file(arb_model_path(m), sha, err);
    if (rc)
        return rc;
    printf("## Medusa / Hydra drafters (trained heads at the default path)\n\n"
           "Propose per step (best of 5 each, alternating) against one target eval of the tree it drafts "
           "(best of 10). The f32 copy is the scoring main used before the engine's head.\n\n"
           "| method | tree | nodes | propose, f32 copy | share | propose, engine head | share | target eval |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t ci = 0; ci < sizeof cfg / sizeof cfg[0] && !rc; ci++) {
        arb_method_spec s;
        char path[4096];
        if ((rc = arb_method_spec_preset(cfg[ci].preset, &s, err)))
            break;
        if (cfg[ci].tree) {
            snprintf(s.tree, sizeof s.tree, "%s", cfg[ci].tree);
            s.budget = cfg[ci].budget;
        }
        snprintf(s.heads, sizeof s.heads, "default");
        arb_heads *h = NULL;
        arb_heads_meta meta;
        arb_err e2 = {0};
        if ((rc = arb_medusa_default_path(cfg[ci].preset, arb_model_path(m), sha, path, sizeof path, err)))
            break;
        if (arb_heads_load(path, sha, &h, &meta, &e2) != ARB_OK) {
            printf("| %s | %s | - | skipped: no heads file %s (`arbor train %s`) |\n", cfg[ci].preset, s.tree, path,
                   cfg[ci].preset);
            continue;
        }
        arb_heads_free(h);
        const arb_drafter_i *dr = arb_drafter_find(s.drafter);
        void *st = NULL;
        arb_tree t;
        memset(&t, 0, sizeof t);
        const int cap = arb_method_max_nodes(&s);
        float *hid = malloc((size_t)E * sizeof *hid), *lg = malloc((size_t)cap * V * sizeof *lg);
        if (!hid || !lg)
            rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
        if (!rc && !(rc = dr->create(&s, V, &st, err)) && !(rc = dr->bind(st, c, err)) &&
            !(rc = dr->begin(st, 1024, true, err)))
            rc = arb_tree_init(&t, cap, err);
        double t_prop[2] = {1e30, 1e30}, t_eval = 1e30;
        int nodes = 0;
        for (int r = 0; r < 10 && !rc; r++) { /* alternate: engine head (even), f32 copy (odd) */
            for (int i = 0; i < E; i++)
                hid[i] = (float)((int)(rnd() % 2001) - 1000) * 1e-3f;
            int32_t S[2] = {1, (int32_t)(rnd() % V)};
            dr->hidden(st, hid);
            arb_medusa_drafter_use_f32_head(st, r % 2 == 1);
            arb_step_record rec = {0};
            arb_tree_reset(&t, S[1]);
            double t0 = now_us();
            dr->propose(st, S, 2, &t, &rec);
            arb_tree_finalize(&t);
            double t1 = now_us();
            t_prop[r % 2] = fmin(t_prop[r % 2], t1 - t0);
            nodes = t.n;
            if ((rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, err)))
                break;
            t_eval = fmin(t_eval, now_us() - t1);
        }
        if (!rc)
            printf("| %s | %s | %d | %.0f us | %.0f %% | %.0f us | %.0f %% | %.0f us |\n", cfg[ci].preset, s.tree,
                   nodes, t_prop[1], 100 * t_prop[1] / t_eval, t_prop[0], 100 * t_prop[0] / t_eval, t_eval);
        if (st)
            dr->destroy(st);
        arb_tree_release(&t);
        free(hid);
        free(lg);
    }
    if (!rc)
        printf("\n");
    return rc;
}

static int bench_lookahead(arb_ctx *c, int V, arb_err *err)
{
    arb_method_spec sp;
    arb_method_spec_preset("lookahead", &sp, NULL);
    const arb_drafter_i *dr = arb_drafter_find("lookahead");
    int cap = arb_method_max_nodes(&sp), rc;
    void *st = NULL;
    arb_tree t = {0};
    int32_t S[64], *y = malloc((size_t)cap * sizeof *y);
    float *lg = c ? malloc((size_t)cap * V * sizeof *lg) : NULL;
    if (!y || (c && !lg)) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
        goto out;
    }
    for (int i = 0; i < 64; i++)
        S[i] = (int32_t)(rnd() % V);
    if ((rc = dr->create(&sp, V, &st, err)) || (rc = arb_tree_init(&t, cap, err)) ||
        (rc = dr->begin(st, 4096, true, err)))
        goto out;
    dr->append(st, S, 64);
    const int FILL = 40, R = 20;
    double t_prop = 1e30, t_upd = 1e30;
    for (int step = 1; step <= FILL + R; step++) {
        double t0 = now_us();
        arb_step_record rec = {0};
        arb_tree_reset(&t, S[63]);
        dr->set_step(st, 0, step);
        dr->propose(st, S, 64, &t, &rec);
        arb_tree_finalize(&t);
        double t1 = now_us();
        for (int i = 0; i < t.n; i++)
            y[i] = (int32_t)(rnd() % V);
        double t2 = now_us();
        arb_harvest h = {.n = t.n, .K = 1, .tok = t.tok, .ids = y};
        dr->harvest(st, &h);
        double t3 = now_us();
        if (step > FILL) {
            t_prop = fmin(t_prop, t1 - t0);
            t_upd = fmin(t_upd, t3 - t2);
        }
    }
    printf("## Lookahead drafter per step (W %d, N %d, G %d; best of %d steps, microseconds)\n\n"
           "| tree nodes | propose (window + guesses) | pool update (Jacobi + harvest) | total |\n"
           "|---:|---:|---:|---:|\n| %d | %.1f | %.1f | %.1f |\n\n",
           sp.la_window, sp.la_ngram, sp.la_guess, R, t.n, t_prop, t_upd, t_prop + t_upd);
    if (c) {
        double te = 1e30;
        for (int r = 0; r < 3 && !rc; r++) {
            double t0 = now_us();
            rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, err);
            te = fmin(te, now_us() - t0);
        }
        if (!rc)
            printf("%d-node Lookahead tree eval at 256 tokens of context: %.0f us (best of 3); "
                   "propose + pool update = %.4f%% of eval\n",
                   t.n, te, 100.0 * (t_prop + t_upd) / te);
    }
out:
    if (st)
        dr->destroy(st);
    arb_tree_release(&t);
    free(y);
    free(lg);
    return rc;
}

int arb_cmd_bench_harness(int argc, char **argv)
{
    const char *model = NULL, *ds_name = NULL; /* NULL: the default code datastore, skipped when not built */
    int threads = 0;
    bool rest_big = false;
    const arb_opt opts[] = {
        ARB_OPT_STR("--model", "M", &model, "default or a GGUF path: adds the real-eval comparisons"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "the target's kernel threads (default 0 = all cores)"),
        ARB_OPT_FLAG("--rest-1e8", &rest_big, "REST scaling also at 10^8 tokens (minutes, ~3 GB)"),
        ARB_OPT_STR("--datastore", "NAME", &ds_name, "REST datastore for the real retrieval (default code)"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"bench-harness", NULL, description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    enum { V = 49152, LMAX = 16384, Q = 20000, B = 60 };
    arb_err err = {0};
    int32_t *S = malloc(LMAX * sizeof *S), out[16];
    arb_ngram_index *ix = NULL, *ix1 = NULL;
    if (!S || arb_ngram_index_new(3, 5, LMAX, &ix, &err) || arb_ngram_index_new(1, 3, LMAX, &ix1, &err)) {
        fprintf(stderr, "arbor bench-harness: %s\n", err.msg);
        free(S);
        arb_ngram_index_free(ix);
        return 1;
    }
    stream(S, LMAX, V);
    printf("## n-gram lookups vs context length (ns per lookup, best of 7 rounds of %d)\n\n", Q);
    printf("| context | ContextMatch {3,4,5} | Saxena PLD {1,2,3} | append (ns/token) |\n|---:|---:|---:|---:|\n");
    double first = 0, last = 0;
    int filled = 0;
    volatile int sink = 0;
    for (int L = 1024; L <= LMAX; L *= 2) {
        int from = filled;
        double t0 = now_us();
        for (; filled < L; filled++) {
            arb_ngram_index_append(ix, S[filled]);
            arb_ngram_index_append(ix1, S[filled]);
        }
        double t_app = (now_us() - t0) * 1e3 / (L - from);
        double t_cm = 1e30, t_sx = 1e30;
        for (int round = 0; round < 7; round++) { /* the machine is shared: keep the best round */
            arb_pld_match m;
            t0 = now_us();
            for (int q = 0; q < Q; q++) {
                arb_pld_context_match(ix, 3, 5, 20, false, &m);
                sink += m.len;
            }
            double a = (now_us() - t0) * 1e3 / Q;
            t0 = now_us();
            for (int q = 0; q < Q; q++) {
                int n;
                sink += arb_pld_draft(ix1, 1, 3, 10, out, &n);
            }
            double b = (now_us() - t0) * 1e3 / Q;
            t_cm = a < t_cm ? a : t_cm;
            t_sx = b < t_sx ? b : t_sx;
        }
        printf("| %d | %.1f | %.1f | %.1f |\n", L, t_cm, t_sx, t_app);
        if (L == 1024)
            first = t_cm;
        last = t_cm;
    }
    printf("\nContextMatch 16k/1k time ratio: %.2f (flat = 1)\n\n", last / first);

    arb_method_spec sp, sp_dyn[2];
    arb_method_spec_preset("goose", &sp, NULL);
    /* the dynamic tree (topologies/dynamic.h) with cost tables set here: a flat one (a free node:
       the tree fills its budget, the most work a build does) and a CPU-like one (7 % a node) */
    for (int k = 0; k < 2; k++) {
        arb_method_spec_preset("goose-dyn-auto", &sp_dyn[k], NULL);
        sp_dyn[k].budget_auto = false;
        sp_dyn[k].budget = 64;
        sp_dyn[k].chain_cost.n_max = 64;
        for (int n = 1; n <= 64; n++)
            sp_dyn[k].chain_cost.w_us[n] = 3000.0 * (1.0 + (k ? 0.07 : 0.0) * (n - 1));
    }
    arb_goose *g = NULL, *g_dyn[2] = {NULL, NULL};
    float *logits = malloc((size_t)B * V * sizeof *logits);
    int32_t *ids = malloc((size_t)B * 10 * sizeof *ids), prev[B];
    float *sc = malloc((size_t)B * 10 * sizeof *sc);
    arb_tree t;
    arb_verifier *vf = NULL; /* the decoder's T = 0 path: the registered greedy verifier */
    arb_verifier_opts vopt = arb_verifier_default_opts();
    vopt.V = V;
    vopt.n_nodes_max = 64;
    if (!logits || !ids || !sc || arb_goose_new(&sp, V, &g, &err) || arb_goose_new(&sp_dyn[0], V, &g_dyn[0], &err) ||
        arb_goose_new(&sp_dyn[1], V, &g_dyn[1], &err) ||
        arb_tree_init(&t, 64, &err) ||
        arb_verifier_new("greedy", &vopt, &vf, &err)) {
        fprintf(stderr, "arbor bench-harness: %s\n", err.msg[0] ? err.msg : "out of memory");
        return 1;
    }
    for (size_t i = 0; i < (size_t)B * V; i++) /* logit-like: a few large values over a Gaussian-ish bulk */
        logits[i] = (float)((int)(rnd() % 2000) - 1000) / 100.0f + ((rnd() % 5000) == 0 ? 15.0f : 0.0f);
    /* fill the tables as a long generation would */
    for (int x = 0; x < V; x++) {
        arb_topk_softmax(logits + (size_t)(x % B) * V, V, 10, ids, sc);
        for (int j = 0; j < 10; j++)
            ids[j] = (ids[j] + x) % V;
        const int32_t pv = (int32_t)(rnd() % V);
        arb_adj_write(arb_goose_adj(g), pv, x, ids, sc);
        arb_adj_write(arb_goose_adj(g_dyn[0]), pv, x, ids, sc);
        arb_adj_write(arb_goose_adj(g_dyn[1]), pv, x, ids, sc);
    }
    printf("## memory\n\nGOOSE adjacency (K = 10, unigram + 2^15 bigram): %.2f MB; n-gram index {3,4,5} at %d "
           "tokens: %.2f MB\n\n",
           arb_adj_bytes(arb_goose_adj(g)) / 1048576.0, LMAX, arb_ngram_index_bytes(ix) / 1048576.0);
    /* with --model: the target (its kernel threads run the top-K rows, as in decode) */
    arb_model *m = NULL;
    arb_ctx *c = NULL;
    float *lg = NULL;
    int rc = 0, nth = 1;
    if (model) {
        int32_t chain[256], par[256], path[256];
        for (int i = 0; i < 256; i++) {
            chain[i] = (int32_t)(rnd() % V);
            par[i] = i - 1;
            path[i] = i;
        }
        rc = arb_gen_load(model, "cpu", threads, 0, &m, &c, &err);
        if (!rc && !(lg = malloc((size_t)256 * V * sizeof *lg)))
            rc = ARB_ERR(&err, ARB_E_NOMEM, "bench-harness: out of memory");
        if (!rc)
            rc = arb_eval(c, chain, par, 256, lg, NULL, &err);
        if (!rc)
            rc = arb_commit(c, path, 256, &err);
        if (rc)
            goto done;
        nth = threads; /* 0: all cores */
    }
    const int R = 20; /* per-phase minimum over R steps (the machine is shared) */
    double t_topk = 1e30, t_topk_mt = 1e30, t_build = 1e30, t_walk = 1e30, t_harv = 1e30, t_harv1 = 1e30;
    int32_t d[20];
    for (int i = 0; i < 20; i++)
        d[i] = (int32_t)(rnd() % V);
    topk_job job = {.lg = logits, .V = V, .ids = ids, .sc = sc};
    for (int r = 0; r < R; r++) {
        double t0 = now_us();
        arb_tree_reset(&t, (int32_t)(rnd() % V));
        arb_step_record rec = {0};
        arb_goose_build(g, (int32_t)(rnd() % V), t.tok[0], d, 6, 0.3, &t, &rec);
        arb_tree_finalize(&t);
        double t1 = now_us();
        for (int i = 0; i < t.n; i++)
            arb_topk_softmax(logits + (size_t)i * V, V, 10, ids + i * 10, sc + i * 10);
        /* as decode.c verifies: the argmax per node is the top-K rows' first column */
        arb_verify_in vin = {.tree = &t, .logits = logits, .V = V, .argmax = ids, .argmax_stride = 10};
        arb_verify_out vo;
        double t2 = now_us();
        ARB_ASSERT(arb_verifier_verify(vf, &vin, &vo) == ARB_OK);
        for (int i = 0; i < t.n; i++)
            prev[i] = i ? t.tok[t.parent[i]] : -1;
        /* the table writes as decode runs them (every row's lines prefetched first), and on
           alternate steps one row at a time, the same writes without the prefetch */
        double t3 = now_us();
        if (r % 2)
            arb_adj_write_rows(arb_goose_adj(g), t.n, prev, t.tok, ids, sc, 10);
        else
            for (int i = 0; i < t.n; i++)
                arb_adj_write(arb_goose_adj(g), prev[i], t.tok[i], ids + i * 10, sc + i * 10);
        double t4 = now_us();
        if (c) { /* the same rows on the target's threads, as decode runs them */
            arb_ctx_parallel_for(c, t.n, topk_job_row, &job);
            t_topk_mt = fmin(t_topk_mt, now_us() - t4);
        }
        t_build = fmin(t_build, t1 - t0);
        t_topk = fmin(t_topk, t2 - t1);
        t_walk = fmin(t_walk, t3 - t2);
        if (r % 2)
            t_harv = fmin(t_harv, t4 - t3);
        else
            t_harv1 = fmin(t_harv1, t4 - t3);
    }
    static const char *isa_name[] = {"baseline", "AVX2", "AVX-512"};
    double t_topk_run = c ? t_topk_mt : t_topk, harness = t_build + t_topk_run + t_walk + t_harv;
    char thr_s[32];
    if (nth > 0)
        snprintf(thr_s, sizeof thr_s, "%d thread%s", nth, nth > 1 ? "s" : "");
    else
        snprintf(thr_s, sizeof thr_s, "all cores");
    printf("## per-step harness work at B = %d (V = %d, best of %d steps, microseconds)\n\n"
           "Synthetic rows; top-K path %s. The total counts top-K as decode runs it (%s).\n\n",
           B, V, R, isa_name[arb_topk_isa_best()], c ? "on the target's threads" : "1 thread");
    printf("| spine-tree build | top-K softmax of %d rows, 1 thread | same, target's %s | greedy verify | "
           "table writes | total |\n|---:|---:|---:|---:|---:|---:|\n",
           t.n, c ? thr_s : "threads");
    if (c)
        printf("| %.1f | %.1f | %.1f | %.2f | %.1f | %.1f |\n\n", t_build, t_topk, t_topk_mt, t_walk, t_harv, harness);
    else
        printf("| %.1f | %.1f | - | %.2f | %.1f | %.1f |\n\n", t_build, t_topk, t_walk, t_harv, harness);
    printf("Table writes with every row's lines prefetched first (arb_adj_write_rows, as decode runs them): "
           "%.1f us; one row at a time (alternate steps): %.1f us.\n\n", t_harv, t_harv1);
    { /* GOOSE's dynamic tree (topology dynamic): build per step, a 6-token match and the tables above.
         Its own tree: t keeps the B-node spine tree that the model section below evaluates. */
        double tb[2] = {1e30, 1e30};
        int nodes[2] = {0, 0};
        arb_tree td;
        if ((rc = arb_tree_init(&td, 64, &err)))
            goto done;
        for (int k = 0; k < 2; k++) {
            for (int r = 0; r < R; r++) {
                arb_tree_reset(&td, (int32_t)(rnd() % V));
                arb_step_record rec = {0};
                double t0 = now_us();
                arb_goose_build(g_dyn[k], (int32_t)(rnd() % V), td.tok[0], d, 6, 0.0, &td, &rec);
                tb[k] = fmin(tb[k], now_us() - t0);
                nodes[k] = td.n > nodes[k] ? td.n : nodes[k];
            }
        }
        arb_tree_release(&td);
        printf("## GOOSE's dynamic tree (topology dynamic, budget 64; best of %d builds, microseconds)\n\n"
               "| cost table | build | nodes |\n|---|---:|---:|\n| flat (a node is free: the budget fills) | %.1f | %d "
               "|\n| a node at 7 %% of an eval | %.1f | %d |\n\n",
               R, tb[0], nodes[0], tb[1], nodes[1]);
    }
    { /* the EAGLE-2 dynamic tree builder (dyntree.h) at the eagle2 preset's shape */
        arb_dyntree_opts eo = arb_dyntree_default_opts();
        arb_dyntree *dt = NULL;
        arb_tree et;
        memset(&et, 0, sizeof et);
        if (arb_dyntree_new(&eo, &dt, &err) || arb_tree_init(&et, eo.total, &err)) {
            fprintf(stderr, "arbor bench-harness: %s\n", err.msg);
            rc = 1;
        }
        double t_sel = 1e30, t_src = 1e30;
        arb_dyntree_stats es = {0};
        for (int r = 0; r < R && !rc; r++) {
            e2_bench eb = {.lg = logits, .V = V, .n_rows = B};
            arb_dyntree_source src = {.expand = e2_bench_expand, .ud = &eb};
            arb_tree_reset(&et, 1);
            if ((rc = arb_dyntree_build(dt, &src, &et, ARB_SRC_DRAFT, &es, &err)))
                break;
            t_sel = fmin(t_sel, es.select_us);
            t_src = fmin(t_src, eb.us);
        }
        if (!rc)
            printf("## EAGLE-2 dynamic tree (depth %d, topk %d, total %d; best of %d builds, microseconds)\n\n"
                   "| tree building (selection, source excluded) | top-K + log of the expanded rows, 1 thread | "
                   "expansions | candidates | nodes |\n|---:|---:|---:|---:|---:|\n| %.1f | %.1f | %d | %d | %d |\n\n",
                   eo.depth, eo.topk, eo.total, R, t_sel, t_src, es.n_expand, es.n_cands, et.n);
        arb_tree_release(&et);
        arb_dyntree_free(dt);
        if (rc)
            goto done;
    }
    if (c) {
        double te = 1e30, tr1 = 1e30, trm = 1e30;
        for (int r = 0; r < 3 && !rc; r++) {
            double t0 = now_us();
            rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, &err);
            te = fmin(te, now_us() - t0);
        }
        job.lg = lg; /* the tree's real logits rows, straight after the eval that wrote them */
        for (int r = 0; r < 6 && !rc; r++) { /* alternate: 1 thread, then the target's threads */
            double t0 = now_us();
            if (r % 2 == 0)
                for (int i = 0; i < t.n; i++)
                    arb_topk_softmax(lg + (size_t)i * V, V, 10, ids + i * 10, sc + i * 10);
            else
                arb_ctx_parallel_for(c, t.n, topk_job_row, &job);
            double dt = now_us() - t0;
            if (r % 2 == 0)
                tr1 = fmin(tr1, dt);
            else
                trm = fmin(trm, dt);
            rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, &err);
        }
        if (!rc) {
            double real = harness - t_topk_run + trm;
            printf("## against the model\n\n%d-node tree eval at 256 tokens of context: %.0f us (best of 3).\n"
                   "Top-K of its %d real logits rows, straight after the eval: %.1f us on 1 thread, %.1f us on %s.\n"
                   "Harness work per step (real rows, top-K on %s): %.1f us = %.2f%% of eval\n",
                   t.n, te, t.n, tr1, trm, thr_s, thr_s, real, 100.0 * real / te);
        }
    }
    if (!rc && c)
        rc = bench_eagle(c, &err);
    if (!rc && c) /* each sampling draft's cost per token against a target pass (bench_drafts.h) */
        rc = arb_bench_drafts(c, stdout, &err);
    if (!rc && c)
        rc = bench_heads(c, &err);
    if (!rc)
        rc = bench_rest(rest_big, ds_name ? ds_name : "code", ds_name != NULL, c, &err);
    if (!rc) {
        printf("\n");
        rc = bench_lookahead(c, V, &err);
    }
done:
    if (rc)
        fprintf(stderr, "arbor bench-harness: %s\n", err.msg);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
    (void)sink;
    arb_tree_release(&t);
    arb_goose_free(g);
    arb_goose_free(g_dyn[0]);
    arb_goose_free(g_dyn[1]);
    arb_verifier_free(vf);
    free(logits);
    free(ids);
    free(sc);
    free(S);
    arb_ngram_index_free(ix);
    arb_ngram_index_free(ix1);
    return rc ? 1 : 0;
}
