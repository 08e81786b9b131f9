/* test_eagle_head.c — the EAGLE head (eagle_head.c): the hand-written backward (causal
 * attention included) against central finite differences on a tiny random layer, the drafting
 * path (key/value cache, tree attention by slots) against the training forward, and the head
 * file's round trip and base-model check (heads_file.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eagle_head.h"
#include "heads_file.h"
#include "tiny_models.h"

static uint64_t rs = 777;
static float urand(void) /* [-1, 1) */
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rs >> 40) * 0x1p-24) * 2.0f - 1.0f;
}

enum { E = 8, V = 13, T = 6 };
static const arb_eagle_cfg tiny = {.E = E, .V = V, .H = 4, .KVH = 2, .hd = 4, .F = 12, .rope_base = 100.0f,
                                   .eps = 1e-5f};

typedef struct fixture {
    arb_eagle *h;
    arb_eagle_ws *ws;
    float w_lm[V * E], emb[V * E], f[(T + 1) * E];
    const float *f_in; /* inputs other than f's rows (NULL: f's), as the trainer's input noise */
    float noisy[T * E];
    int32_t tok[T], y[T];
} fixture;

static void setup_fixture(fixture *x)
{
    arb_err err = {0};
    cr_assert_eq(arb_eagle_new(&tiny, &x->h, &err), ARB_OK, "%s", err.msg);
    arb_eagle_init(x->h, 5);
    for (size_t i = 0; i < x->h->n_params; i++) /* away from the init: every term exercised */
        x->h->params[i] += 0.3f * urand();
    cr_assert_eq(arb_eagle_ws_new(x->h, T, T, &x->ws, &err), ARB_OK, "%s", err.msg);
    for (int i = 0; i < V * E; i++)
        x->w_lm[i] = urand(), x->emb[i] = urand();
    for (int i = 0; i < (T + 1) * E; i++)
        x->f[i] = 1.5f * urand(); /* some |f̂ - f| above 1: both SmoothL1 branches */
    for (int i = 0; i < T; i++)
        x->tok[i] = (int32_t)((i * 5 + 1) % V), x->y[i] = i == 3 ? -1 : (int32_t)((i * 7 + 2) % V);
    x->f_in = NULL;
    for (int i = 0; i < T * E; i++)
        x->noisy[i] = x->f[i] + 0.2f * urand();
}

static double loss_of(fixture *x, float *grad, arb_eagle_loss *lo)
{
    arb_eagle_seq_step(x->h, x->w_lm, x->emb, x->f, x->f_in, x->tok, x->y, T, 1.0f, 0.1f, grad, x->ws, lo, NULL);
    return lo->reg + 0.1 * lo->ce;
}

static void check_backward(bool noisy_inputs)
{
    fixture x;
    setup_fixture(&x);
    if (noisy_inputs) { /* inputs apart from the targets: the backward must follow the inputs */
        arb_eagle_loss l0, l1;
        const double clean = loss_of(&x, NULL, &l0);
        x.f_in = x.f; /* f's own rows given as inputs: the same bits as NULL */
        cr_assert(loss_of(&x, NULL, &l1) == clean);
        x.f_in = x.noisy;
        cr_assert(loss_of(&x, NULL, &l1) != clean);
    }
    arb_eagle *h = x.h;
    float *grad = calloc(h->n_params, sizeof *grad);
    arb_eagle_loss lo;
    loss_of(&x, grad, &lo);
    cr_assert_eq(lo.n, T);
    cr_assert_eq(lo.n_tok, T - 1, "the row without a target is not counted");
    const double eps = 1e-2;
    double worst = 0;
    size_t checked = 0;
    for (size_t p = 0; p < h->n_params; p++) {
        float keep = h->params[p];
        h->params[p] = keep + (float)eps;
        double lp = loss_of(&x, NULL, &lo);
        h->params[p] = keep - (float)eps;
        double lm = loss_of(&x, NULL, &lo);
        h->params[p] = keep;
        double fd = (lp - lm) / (2 * eps), an = grad[p];
        double e = fabs(fd - an) / (1e-3 + fabs(fd) + fabs(an));
        worst = e > worst ? e : worst;
        cr_assert(fabs(fd - an) <= 2e-3 + 2e-2 * fabs(an), "param %zu: analytic %.6g, finite difference %.6g", p, an,
                  fd);
        checked++;
    }
    cr_assert_eq(checked, h->n_params);
    cr_log_info("eagle: %zu parameters, worst relative gradient error %.2e", h->n_params, worst);
    /* the gradient of every tensor is exercised: none is all zero */
    float *t[10] = {h->fc_w, h->fc_b, h->wq, h->wk, h->wv, h->wo, h->norm, h->wg, h->wu, h->wd};
    for (int i = 0; i < 10; i++) {
        const float *g = grad + (t[i] - h->params);
        size_t n = (i + 1 < 10 ? (size_t)(t[i + 1] - t[i]) : h->n_params - (size_t)(t[i] - h->params));
        double s = 0;
        for (size_t j = 0; j < n; j++)
            s += fabs(g[j]);
        cr_assert_gt(s, 0, "tensor %d has a zero gradient", i);
    }
    free(grad);
    arb_eagle_ws_free(x.ws);
    arb_eagle_free(h);
}

Test(eagle_head, backward_matches_finite_differences) { check_backward(false); }
/* EAGLE's input noise: noisy inputs, clean targets (arbor train eagle --noise) */
Test(eagle_head, backward_with_noisy_inputs_matches_finite_differences) { check_backward(true); }

/* SmoothL1 of a row, mean over E: the regression term as the trainer defines it */
static double sl1(const float *a, const float *b)
{
    double s = 0;
    for (int e = 0; e < E; e++) {
        double d = fabs((double)a[e] - b[e]);
        s += d < 1 ? 0.5 * d * d : d - 0.5;
    }
    return s / E;
}

Test(eagle_head, cached_rows_and_tree_slots_match_the_training_forward)
{
    fixture x;
    setup_fixture(&x);
    arb_err err = {0};
    arb_eagle_loss lo;
    int32_t ranks[T];
    arb_eagle_seq_step(x.h, x.w_lm, x.emb, x.f, NULL, x.tok, x.y, T, 1, 0.1f, NULL, x.ws, &lo, ranks);
    cr_assert_eq(ranks[3], -1);
    arb_eagle_kv *kv;
    arb_eagle_ws *ws;
    cr_assert_eq(arb_eagle_kv_new(x.h, 16, &kv, &err), ARB_OK);
    cr_assert_eq(arb_eagle_ws_new(x.h, T, 16, &ws, &err), ARB_OK);
    float out[T * E];
    /* rows 0..2 in one call, causal through vis (each sees the chunk up to itself) */
    int pos[3] = {0, 1, 2}, slot[3] = {0, 1, 2}, vis[9] = {0, 0, 0, 0, 1, 0, 0, 1, 2}, nv[3] = {1, 2, 3};
    arb_eagle_rows(x.h, x.emb, kv, 3, x.f, x.tok, pos, slot, 0, vis, nv, 3, out, ws);
    /* rows 3, 4, 5 as a tree path in far slots, one call per level, over a 3-row context */
    int s3 = 9, s4 = 12, s5 = 7;
    int p3 = 3, v3[1] = {s3}, n3 = 1;
    arb_eagle_rows(x.h, x.emb, kv, 1, x.f + 3 * E, x.tok + 3, &p3, &s3, 3, v3, &n3, 1, out + 3 * E, ws);
    int p4 = 4, v4[2] = {s3, s4}, n4 = 2;
    arb_eagle_rows(x.h, x.emb, kv, 1, x.f + 4 * E, x.tok + 4, &p4, &s4, 3, v4, &n4, 2, out + 4 * E, ws);
    /* a sibling of row 4 in another slot must not change row 5's view */
    int pb = 4, sb = 13, vb[2] = {s3, sb}, nb = 2;
    float junk[E];
    int32_t other = (x.tok[4] + 1) % V;
    arb_eagle_rows(x.h, x.emb, kv, 1, x.f + 4 * E, &other, &pb, &sb, 3, vb, &nb, 2, junk, ws);
    int p5 = 5, v5[3] = {s3, s4, s5}, n5 = 3;
    arb_eagle_rows(x.h, x.emb, kv, 1, x.f + 5 * E, x.tok + 5, &p5, &s5, 3, v5, &n5, 3, out + 5 * E, ws);
    double reg = 0;
    for (int i = 0; i < T; i++)
        reg += sl1(out + i * E, x.f + (i + 1) * E);
    cr_assert(fabs(reg - lo.reg) <= 1e-5 * (1 + fabs(lo.reg)), "drafting path %.9g, training forward %.9g", reg,
              lo.reg);
    arb_eagle_kv_free(kv);
    arb_eagle_ws_free(ws);
    arb_eagle_ws_free(x.ws);
    arb_eagle_free(x.h);
}

/* Drafting rows stage by stage (each matrix read once for all of a call's rows, in parts of 32
   outputs on a pool's threads): a tree level's sibling rows in one call give the bits of one
   call per row, and a two-thread pool the bits of none. Sizes with several parts per matrix
   (E 64, F 96). */
Test(eagle_head, rows_batched_and_pooled_give_the_one_row_bits)
{
    const arb_eagle_cfg cfg = {.E = 64, .V = 13, .H = 4, .KVH = 2, .hd = 16, .F = 96, .rope_base = 100.0f,
                               .eps = 1e-5f};
    enum { EB = 64, NR = 3 };
    arb_err err = {0};
    arb_eagle *h;
    cr_assert_eq(arb_eagle_new(&cfg, &h, &err), ARB_OK, "%s", err.msg);
    arb_eagle_init(h, 9);
    for (size_t i = 0; i < h->n_params; i++)
        h->params[i] += 0.3f * urand();
    static float emb[13 * EB], f[2 * NR * EB];
    for (int i = 0; i < 13 * EB; i++)
        emb[i] = urand();
    for (int i = 0; i < 2 * NR * EB; i++)
        f[i] = urand();
    synth_opts so = {.arch = "llama", .seed = 3};
    arb_model *m = load_synth(&so, 2);
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = 64;
    arb_ctx *pool;
    cr_assert_eq(arb_ctx_new(m, &co, &pool, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_threads(pool), 2);
    static float out[3][NR * EB];
    for (int v = 0; v < 3; v++) { /* 0: one call, 1: one call per row, 2: one call on the pool */
        arb_eagle_kv *kv;
        arb_eagle_ws *ws;
        cr_assert_eq(arb_eagle_kv_new(h, 16, &kv, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_eagle_ws_new(h, NR, 16, &ws, &err), ARB_OK, "%s", err.msg);
        if (v == 2)
            arb_eagle_ws_set_pool(ws, pool);
        /* a 3-row context, causal, in one call */
        int32_t tok[NR] = {1, 7, 4};
        int pos[NR] = {0, 1, 2}, slot[NR] = {0, 1, 2}, vis[9] = {0, 0, 0, 0, 1, 0, 0, 1, 2}, nv[NR] = {1, 2, 3};
        float ctx_out[NR * EB];
        arb_eagle_rows(h, emb, kv, NR, f, tok, pos, slot, 0, vis, nv, 3, ctx_out, ws);
        /* three siblings at position 3 in slots 9, 10, 11, each seeing the context and itself */
        int32_t stok[NR] = {2, 11, 5};
        int spos[NR] = {3, 3, 3}, sslot[NR] = {9, 10, 11}, svis[NR] = {9, 10, 11}, snv[NR] = {1, 1, 1};
        memset(out[v], 0xff, sizeof out[v]);
        if (v == 1)
            for (int i = 0; i < NR; i++)
                arb_eagle_rows(h, emb, kv, 1, f + (size_t)(NR + i) * EB, stok + i, spos + i, sslot + i, 3, svis + i,
                               snv + i, 1, out[v] + (size_t)i * EB, ws);
        else
            arb_eagle_rows(h, emb, kv, NR, f + (size_t)NR * EB, stok, spos, sslot, 3, svis, snv, 1, out[v], ws);
        arb_eagle_kv_free(kv);
        arb_eagle_ws_free(ws);
    }
    cr_assert(!memcmp(out[0], out[1], sizeof out[0]), "siblings in one call differ from one call each");
    cr_assert(!memcmp(out[0], out[2], sizeof out[0]), "the pool's split changes the bits");
    arb_ctx_free(pool);
    arb_model_free(m);
    arb_eagle_free(h);
}

Test(eagle_head, new_rejects_bad_config)
{
    arb_err err = {0};
    arb_eagle *h = (arb_eagle *)1;
    arb_eagle_cfg c = tiny;
    c.KVH = 3; /* does not divide H = 4 */
    cr_assert_eq(arb_eagle_new(&c, &h, &err), ARB_E_INVAL);
    cr_assert_null(h);
    cr_assert(strstr(err.msg, "n_head_kv 3"), "%s", err.msg);
    c = tiny, c.hd = 3;
    cr_assert_eq(arb_eagle_new(&c, &h, &err), ARB_E_INVAL);
}

Test(eagle_head, file_round_trip_and_base_check)
{
    fixture x;
    setup_fixture(&x);
    arb_err err = {0};
    char path[] = "/tmp/arbor_eagle_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    arb_heads_meta meta = {.seed = 3, .rows = 100, .heldout_rows = 10};
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%064d", 7);
    snprintf(meta.base_name, sizeof meta.base_name, "tiny");
    snprintf(meta.config, sizeof meta.config, "{\"kind\":\"eagle\"}");
    snprintf(meta.data_sha256, sizeof meta.data_sha256, "%064d", 9);
    meta.top1[0] = 0.25f, meta.top5[0] = 0.5f, meta.rank_acc[0][1] = 0.125f;
    cr_assert_eq(arb_eagle_save(path, x.h, &meta, &err), ARB_OK, "%s", err.msg);
    arb_eagle *h2;
    arb_heads_meta m2;
    cr_assert_eq(arb_eagle_load(path, meta.base_sha256, &h2, &m2, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(h2->n_params, x.h->n_params);
    cr_assert_arr_eq(h2->params, x.h->params, x.h->n_params * sizeof(float));
    cr_assert_eq(h2->c.H, tiny.H);
    cr_assert_eq(h2->c.KVH, tiny.KVH);
    cr_assert_eq(h2->c.F, tiny.F);
    cr_assert_float_eq(h2->c.rope_base, tiny.rope_base, 0);
    cr_assert_float_eq(m2.top1[0], 0.25f, 0);
    cr_assert_float_eq(m2.rank_acc[0][1], 0.125f, 0);
    cr_assert_str_eq(m2.config, meta.config);
    arb_eagle_free(h2);
    char other[65];
    snprintf(other, sizeof other, "%064d", 8);
    arb_eagle *h3 = NULL;
    cr_assert_eq(arb_eagle_load(path, other, &h3, &m2, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "heads trained for base model tiny"), "%s", err.msg);
    cr_assert_null(h3);
    /* a Medusa reader refuses the file by kind, an EAGLE reader a Medusa file */
    arb_heads *mh = NULL;
    cr_assert_eq(arb_heads_load(path, NULL, &mh, &m2, &err), ARB_E_FORMAT);
    cr_assert(strstr(err.msg, "eagle"), "%s", err.msg);
    cr_assert_eq(arb_heads_new(ARB_HEADS_MEDUSA, 2, E, V, &mh, &err), ARB_OK);
    cr_assert_eq(arb_heads_save(path, mh, &meta, &err), ARB_OK);
    cr_assert_eq(arb_eagle_load(path, NULL, &h3, &m2, &err), ARB_E_FORMAT);
    cr_assert(strstr(err.msg, "not 'eagle'"), "%s", err.msg);
    arb_heads_free(mh);
    remove(path);
    arb_eagle_ws_free(x.ws);
    arb_eagle_free(x.h);
}
