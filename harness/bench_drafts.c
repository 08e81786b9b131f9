/* bench_drafts.c — `arbor bench-harness`: each sampling draft's cost per drafted token and per
 * drafted tree, relative to a target pass (see bench_drafts.h). The drafters are driven through
 * their vtables exactly as decode.c drives them (bind, begin, the hidden slots, set_step,
 * propose), so the figures are those of a run: catch-up of the token(s) committed since the last
 * step, the (l, k, b) tree with PROCESS of every internal node's law at T = 1, and, for the
 * target, one eval of the tree drafted. Best of R repetitions of each, wall and process CPU time
 * (the machine is shared: the minimum and the CPU clock are the robust figures). */
#include "bench_drafts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drafters/drafter.h"
#include "drafters/medusa.h"
#include "eagle_head.h"
#include "heads_file.h"
#include "method.h"
#include "sha256.h"

#define R 8 /* repetitions per figure (the first propose, a full catch-up, is not counted) */

static double clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

typedef struct bd_time { double wall, cpu; } bd_time; /* best of R, microseconds */

int arb_bench_eagle_head(arb_ctx *c, char *heads, size_t cap, char *tmp, bool *random, arb_err *err)
{
    const arb_model *m = arb_ctx_model(c);
    char sha[65], path[4096];
    int rc = arb_sha256_file(arb_model_path(m), sha, err);
    if (rc)
        return rc;
    arb_eagle *h = NULL;
    arb_heads_meta meta;
    arb_err e2 = {0};
    *random = false;
    if (arb_medusa_default_path("eagle", arb_model_path(m), sha, path, sizeof path, err) == ARB_OK &&
        arb_eagle_load(path, sha, &h, &meta, &e2) == ARB_OK) {
        arb_eagle_free(h);
        snprintf(heads, cap, "default");
        return ARB_OK;
    }
    arb_eagle_cfg ec;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return ARB_ERR(err, ARB_E_IO, "bench-harness: cannot create %s", tmp);
    close(fd);
    memset(&meta, 0, sizeof meta);
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%s", sha);
    if ((rc = arb_eagle_cfg_from_model(m, &ec, err)) || (rc = arb_eagle_new(&ec, &h, err)))
        return rc;
    arb_eagle_init(h, 1);
    rc = arb_eagle_save(tmp, h, &meta, err);
    arb_eagle_free(h);
    snprintf(heads, cap, "%s", tmp);
    *random = true;
    return rc;
}

/* One drafter at one shape on S (n0 tokens, then one more per repetition, as after AR steps):
   the best propose and the best target eval of the tree it drafted. */
static int bench_shape(arb_ctx *c, const char *drafter, const char *heads, int k, int l, int b, const int32_t *S,
                       int n0, bd_time *prop, bd_time *eval, int *nodes, arb_err *err)
{
    arb_model_info mi;
    arb_model_get_info(arb_ctx_model(c), &mi);
    const int V = mi.n_vocab, E = mi.n_embd;
    arb_method_spec s;
    int rc = arb_method_spec_default(drafter, &s, err);
    if (rc)
        return rc;
    s.dte_k = k, s.dte_l = l, s.dte_b = b, s.temperature = 1.0, s.top_p = 1.0;
    snprintf(s.heads, sizeof s.heads, "%s", heads);
    const arb_drafter_i *dr = arb_drafter_find(drafter);
    void *st = NULL;
    arb_tree t;
    memset(&t, 0, sizeof t);
    int cap = arb_method_max_nodes(&s);
    float *lg = malloc((size_t)cap * V * sizeof *lg), *hid = malloc((size_t)E * sizeof *hid);
    if (!lg || !hid)
        rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
    if (!rc && !(rc = arb_method_spec_validate(&s, err)) && !(rc = dr->create(&s, V, &st, err)) &&
        !(rc = dr->bind(st, c, err)) && !(rc = dr->begin(st, n0 + R + 1 + cap, true, err)))
        rc = arb_tree_init(&t, cap, err);
    for (int i = 0; i < E && hid; i++)
        hid[i] = sinf(0.37f * (float)i);
    *prop = *eval = (bd_time){1e30, 1e30};
    for (int r = 0; r <= R && !rc; r++) {
        const int n_S = n0 + r;
        arb_step_record rec = {0};
        if (dr->hidden && r == 0) {
            dr->hidden(st, hid); /* after prefill */
        } else if (dr->hidden) { /* after a step that accepted nothing: the root's row */
            int32_t root = 0;
            dr->verified(st, &t, &root, 1, &rec);
            dr->hidden_path(st, hid, &root, 1, E);
            dr->hidden(st, hid);
        }
        dr->set_step(st, 0, r + 1);
        arb_tree_reset(&t, S[n_S - 1]);
        double w0 = clock_us(CLOCK_MONOTONIC), c0 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
        dr->propose(st, S, n_S, &t, &rec);
        arb_tree_finalize(&t);
        double w1 = clock_us(CLOCK_MONOTONIC), c1 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
        if ((rc = arb_eval(c, t.tok, t.parent, t.n, lg, NULL, err)))
            break;
        double w2 = clock_us(CLOCK_MONOTONIC), c2 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
        if (r == 0)
            continue; /* the first propose catches up the whole prefix */
        *prop = (bd_time){fmin(prop->wall, w1 - w0), fmin(prop->cpu, c1 - c0)};
        *eval = (bd_time){fmin(eval->wall, w2 - w1), fmin(eval->cpu, c2 - c1)};
        *nodes = t.n;
    }
    if (st)
        dr->destroy(st);
    arb_tree_release(&t);
    free(lg);
    free(hid);
    return rc;
}

int arb_bench_drafts(arb_ctx *c, FILE *out, arb_err *err)
{
    arb_model_info mi;
    arb_model_get_info(arb_ctx_model(c), &mi);
    const int n0 = arb_ctx_n_past(c);
    if (n0 < 2)
        return ARB_ERR(err, ARB_E_INVAL, "bench-harness: drafts: the target context holds %d tokens (>= 2)", n0);
    char heads[sizeof ((arb_method_spec *)0)->heads], tmp[] = "/tmp/arb_eagle_dte_XXXXXX";
    bool random = false;
    int32_t *S = malloc((size_t)(n0 + R + 1) * sizeof *S);
    if (!S)
        return ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
    uint32_t x = 12345u;
    for (int i = 0; i < n0 + R + 1; i++) {
        x = x * 1664525u + 1013904223u;
        S[i] = (int32_t)((x >> 8) % (uint32_t)mi.n_vocab);
    }
    int rc = arb_bench_eagle_head(c, heads, sizeof heads, tmp, &random, err);
    static const struct { const char *drafter, *label; } drafts[] = {
        {"draft", "self-draft 24/30 (`draft`)"},
        {"eagle-dte", "EAGLE head (`eagle-dte`)"},
    };
    static const int shapes[][3] = {{1, 0, 1}, {1, 0, 4}, {2, 0, 4}, {3, 0, 3}, {3, 1, 3}, {4, 0, 4}};
    bd_time one_tok[2], t1 = {1e30, 1e30};
    { /* the target's one-token pass (an AR step), the unit of every ratio */
        int32_t tok = S[n0], par = -1;
        float *lg = rc ? NULL : malloc((size_t)mi.n_vocab * sizeof *lg);
        if (!rc && !lg)
            rc = ARB_ERR(err, ARB_E_NOMEM, "bench-harness: out of memory");
        for (int r = 0; r < R && !rc; r++) {
            double w0 = clock_us(CLOCK_MONOTONIC), c0 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
            rc = arb_eval(c, &tok, &par, 1, lg, NULL, err);
            t1 = (bd_time){fmin(t1.wall, clock_us(CLOCK_MONOTONIC) - w0),
                           fmin(t1.cpu, clock_us(CLOCK_PROCESS_CPUTIME_ID) - c0)};
        }
        free(lg);
    }
    if (!rc)
        fprintf(out, "## Draft cost per token (sampling drafts; T = 1, at %d tokens of context; %s EAGLE head)\n\n"
                     "Best of %d steps, each after a one-token commit; wall and process CPU time in us. "
                     "Shape (k, l, b): k branches of length b after a trunk of l; (1, 0, 1) drafts one token "
                     "(one draft pass + PROCESS of its law). Target one-token pass: %.0f us wall, %.0f us CPU.\n\n"
                     "| draft | (k, l, b) | nodes | propose wall | propose CPU | target eval of the tree, CPU | "
                     "propose / target 1-token pass (CPU) |\n|---|---|---:|---:|---:|---:|---:|\n",
                n0, random ? "a random (untrained)" : "the trained", R, t1.wall, t1.cpu);
    for (int d = 0; d < 2 && !rc; d++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !rc; i++) {
            bd_time p, e;
            int nodes = 0;
            rc = bench_shape(c, drafts[d].drafter, heads, shapes[i][0], shapes[i][1], shapes[i][2], S, n0, &p, &e,
                             &nodes, err);
            if (rc)
                break;
            if (i == 0)
                one_tok[d] = p;
            fprintf(out, "| %s | (%d, %d, %d) | %d | %.0f | %.0f | %.0f | %.2f |\n", drafts[d].label, shapes[i][0],
                    shapes[i][1], shapes[i][2], nodes, p.wall, p.cpu, e.cpu, p.cpu / t1.cpu);
        }
    if (!rc)
        fprintf(out, "\n**Cost per drafted token / one target pass (CPU):** self-draft %.2f, EAGLE head %.2f.\n\n",
                one_tok[0].cpu / t1.cpu, one_tok[1].cpu / t1.cpu);
    if (random)
        remove(tmp);
    free(S);
    return rc;
}
