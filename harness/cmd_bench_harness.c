/* cmd_bench_harness.c — `arbor bench-harness`: the harness's own costs, measured in one run.
 *
 * (1) ContextMatch / Saxena lookups as the context grows from 1k to 16k tokens (the n-gram
 * index should keep them flat), (2) adjacency + index memory, (3) per-step harness work at
 * B = 60 on synthetic logits (top-K harvest of every node, spine-tree build, greedy walk),
 * and with --model, the eval time of a 60-node tree on the real model for the ratio. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "decode.h"
#include "drafters/goose.h"
#include "drafters/pld.h"
#include "drafters/tr.h"
#include "genutil.h"
#include "method.h"
#include "verifiers/greedy.h"

static const char usage[] =
    "usage: arbor bench-harness [--model default|PATH] [--threads N]\n"
    "\n"
    "Measures the harness's own work: n-gram lookups at 1k..16k tokens of context, table\n"
    "memory, and the per-step cost of harvesting, tree building and verification at B = 60\n"
    "on synthetic logits. With --model, also one 60-node tree eval for the ratio.\n";

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
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

int arb_cmd_bench_harness(int argc, char **argv)
{
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    const char *model = NULL;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--model") || !strcmp(argv[i], "--threads")) && i + 1 < argc) {
            if (argv[i][2] == 'm')
                model = argv[++i];
            else
                threads = atoi(argv[++i]);
        } else {
            fprintf(stderr, "arbor bench-harness: unknown option '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
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

    arb_method_spec sp;
    arb_method_spec_preset("goose", &sp, NULL);
    arb_goose *g = NULL;
    float *logits = malloc((size_t)B * V * sizeof *logits);
    int32_t *ids = malloc((size_t)B * 10 * sizeof *ids), y[B], best[B], prev[B];
    float *sc = malloc((size_t)B * 10 * sizeof *sc);
    arb_tree t;
    if (!logits || !ids || !sc || arb_goose_new(&sp, V, &g, &err) || arb_tree_init(&t, 64, &err)) {
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
        arb_adj_write(arb_goose_adj(g), (int32_t)(rnd() % V), x, ids, sc);
    }
    printf("## memory\n\nGOOSE adjacency (K = 10, unigram + 2^15 bigram): %.2f MB; n-gram index {3,4,5} at %d "
           "tokens: %.2f MB\n\n",
           arb_adj_bytes(arb_goose_adj(g)) / 1048576.0, LMAX, arb_ngram_index_bytes(ix) / 1048576.0);
    const int R = 20; /* per-phase minimum over R steps (the machine is shared) */
    double t_topk = 1e30, t_build = 1e30, t_walk = 1e30, t_harv = 1e30;
    int32_t d[20];
    for (int i = 0; i < 20; i++)
        d[i] = (int32_t)(rnd() % V);
    for (int r = 0; r < R; r++) {
        double t0 = now_us();
        arb_tree_reset(&t, (int32_t)(rnd() % V));
        arb_step_record rec = {0};
        arb_goose_build(g, (int32_t)(rnd() % V), t.tok[0], d, 6, 0.3, &t, &rec);
        arb_tree_finalize(&t);
        double t1 = now_us();
        for (int i = 0; i < t.n; i++)
            arb_topk_softmax(logits + (size_t)i * V, V, 10, ids + i * 10, sc + i * 10);
        for (int i = 0; i < t.n; i++)
            y[i] = ids[i * 10];
        arb_verify_out vo;
        double t2 = now_us();
        arb_greedy_walk(&t, y, ARB_GREEDY_LONGEST, best, &vo);
        double t3 = now_us();
        for (int i = 0; i < t.n; i++) {
            prev[i] = i ? t.tok[t.parent[i]] : -1;
            arb_adj_write(arb_goose_adj(g), prev[i], t.tok[i], ids + i * 10, sc + i * 10);
        }
        double t4 = now_us();
        t_build = fmin(t_build, t1 - t0);
        t_topk = fmin(t_topk, t2 - t1);
        t_walk = fmin(t_walk, t3 - t2);
        t_harv = fmin(t_harv, t4 - t3);
    }
    double harness = t_build + t_topk + t_walk + t_harv;
    printf("## per-step harness work at B = %d (V = %d, best of %d steps, microseconds)\n\n", B, V, R);
    printf("| spine-tree build | top-K softmax of %d rows | greedy walk | table writes | total |\n"
           "|---:|---:|---:|---:|---:|\n| %.1f | %.1f | %.2f | %.1f | %.1f |\n\n",
           t.n, t_build, t_topk, t_walk, t_harv, harness);
    int rc = 0;
    if (model) {
        arb_model *m = NULL;
        arb_ctx *c = NULL;
        if ((rc = arb_gen_load(model, threads, 0, &m, &c, &err)) == 0) {
            int32_t chain[512], par[512], path[512];
            for (int i = 0; i < 512; i++) {
                chain[i] = (int32_t)(rnd() % V);
                par[i] = i - 1;
                path[i] = i;
            }
            arb_model_info mi;
            arb_model_get_info(m, &mi);
            float *lg = malloc((size_t)512 * mi.n_vocab * sizeof *lg);
            rc = lg ? arb_eval(c, chain, par, 256, lg, NULL, &err) : ARB_E_NOMEM;
            if (!rc)
                rc = arb_commit(c, path, 256, &err);
            double te = 1e30;
            for (int r = 0; r < 3 && !rc; r++) {
                double t0 = now_us();
                rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, &err);
                te = fmin(te, now_us() - t0);
            }
            if (!rc)
                printf("## against the model\n\n%d-node tree eval at 256 tokens of context: %.0f us (best of 3); "
                       "harness work %.1f us = %.2f%% of eval\n",
                       t.n, te, harness, 100.0 * harness / te);
            free(lg);
        }
        if (rc)
            fprintf(stderr, "arbor bench-harness: %s\n", err.msg);
        arb_ctx_free(c);
        arb_model_free(m);
    }
    (void)sink;
    arb_tree_release(&t);
    arb_goose_free(g);
    free(logits);
    free(ids);
    free(sc);
    free(S);
    arb_ngram_index_free(ix);
    arb_ngram_index_free(ix1);
    return rc ? 1 : 0;
}
