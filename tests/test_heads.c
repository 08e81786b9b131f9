/* test_heads.c — Medusa/Hydra heads (heads.c): the hand-written backward against central finite
 * differences on tiny random heads, AdamW and its schedule, the heads GGUF round trip and its
 * base-model check, the distill file (torn tail, resume, settings mismatch), the trees of
 * medusa.c, and a CI-sized training run on a tiny synthetic model: the held-out loss drops. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adamw.h"
#include "distill.h"
#include "drafters/medusa.h"
#include "drafters/tr.h"
#include "heads.h"
#include "heads_file.h"
#include "tiny_models.h"

static uint64_t rs = 12345;
static float urand(void) /* [-1, 1) */
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rs >> 40) * 0x1p-24) * 2.0f - 1.0f;
}

static void randomize(arb_heads *h, float scale)
{
    for (size_t i = 0; i < h->n_params; i++)
        h->params[i] = scale * urand();
}

/* Σ_k lambda_k Σ_i loss of heads h on inputs x (per head), targets y (per head): CE of y, or with
   teacher rows tz (per head) (1 - alpha) CE(y) + alpha CE(softmax(W_lm tz)). */
static double total_loss(const arb_heads *h, const float *w_lm, float **x, int32_t **y, float **tz, float alpha,
                         int B, const float *lam, float *grad, arb_heads_ws *ws)
{
    double l = 0;
    for (int k = 0; k < h->n_heads; k++)
        l += lam[k] * (tz ? arb_heads_step_teacher(h, k, w_lm, x[k], y[k], tz[k], alpha, B, lam[k], grad, ws, NULL)
                          : arb_heads_step(h, k, w_lm, x[k], y[k], B, lam[k], grad, ws, NULL));
    return l;
}

static void check_gradient_alpha(arb_heads_kind kind, float alpha)
{
    const int K = 3, E = 8, V = 37, B = 5;
    arb_err err = {0};
    arb_heads *h;
    cr_assert_eq(arb_heads_new(kind, K, E, V, &h, &err), ARB_OK, "%s", err.msg);
    arb_heads_init(h, 3);
    randomize(h, 0.4f); /* away from W = 0, so every term of the backward is exercised */
    float *w_lm = malloc(sizeof(float) * V * E), *x[3];
    int32_t *y[3];
    for (int i = 0; i < V * E; i++)
        w_lm[i] = urand();
    float lam[3] = {0.8f, 0.64f, 0.512f};
    for (int k = 0; k < K; k++) {
        x[k] = malloc(sizeof(float) * B * h->d_in[k]);
        y[k] = malloc(sizeof(int32_t) * B);
        for (int i = 0; i < B * h->d_in[k]; i++)
            x[k][i] = urand();
        for (int i = 0; i < B; i++)
            y[k][i] = i == 2 && k == 1 ? -1 : (int32_t)((i * 7 + k * 3) % V); /* one row without a target */
    }
    float *tz[3]; /* the teacher's hidden rows (alpha > 0) */
    for (int k = 0; k < K; k++) {
        tz[k] = malloc(sizeof(float) * B * E);
        for (int i = 0; i < B * E; i++)
            tz[k][i] = 2 * urand();
    }
    float **T = alpha > 0 ? tz : NULL;
    arb_heads_ws *ws;
    cr_assert_eq(arb_heads_ws_new(h, B, &ws, &err), ARB_OK);
    cr_assert_eq(arb_heads_ws_teacher(ws, h, &err), ARB_OK);
    float *grad = calloc(h->n_params, sizeof *grad);
    const double l0 = total_loss(h, w_lm, x, y, T, alpha, B, lam, grad, ws);
    if (alpha > 0) { /* the teacher's term is there: the loss differs from the hard one */
        const double lh = total_loss(h, w_lm, x, y, NULL, 0, B, lam, NULL, ws);
        cr_assert(fabs(l0 - lh) > 1e-3 * fabs(lh), "teacher loss %.6g vs hard %.6g", l0, lh);
    } else { /* alpha = 0 with teacher rows given: the hard step, bit for bit */
        float *g2 = calloc(h->n_params, sizeof *g2);
        const double l2 = total_loss(h, w_lm, x, y, tz, 0, B, lam, g2, ws);
        cr_assert(l2 == l0);
        cr_assert_arr_eq(g2, grad, h->n_params * sizeof *grad);
        free(g2);
    }
    /* every parameter of a tiny head set: W, b (and R, rb) of every head */
    const double eps = 1e-2;
    double worst = 0;
    for (size_t p = 0; p < h->n_params; p++) {
        float keep = h->params[p];
        h->params[p] = keep + (float)eps;
        double lp = total_loss(h, w_lm, x, y, T, alpha, B, lam, NULL, ws);
        h->params[p] = keep - (float)eps;
        double lm = total_loss(h, w_lm, x, y, T, alpha, B, lam, NULL, ws);
        h->params[p] = keep;
        double fd = (lp - lm) / (2 * eps), an = grad[p];
        double e = fabs(fd - an) / (1e-3 + fabs(fd) + fabs(an));
        worst = e > worst ? e : worst;
        cr_assert(fabs(fd - an) <= 2e-3 + 1e-2 * fabs(an), "%s param %zu: analytic %.6g, finite difference %.6g",
                  arb_heads_kind_name(kind), p, an, fd);
    }
    cr_log_info("%s, teacher weight %.2f: %zu parameters, worst relative gradient error %.2e",
                arb_heads_kind_name(kind), alpha, h->n_params, worst);
    /* ranks: the eval path agrees with the logits */
    int32_t ranks[5], ids[4];
    float pr[4];
    const arb_lm_head lmh = {.w_lm = w_lm}; /* no context here: the f32 copy */
    arb_heads_step(h, 0, w_lm, x[0], y[0], B, 1, NULL, ws, ranks);
    arb_heads_topk(h, 0, &lmh, x[0], 4, ids, pr, ws);
    cr_assert_eq(ranks[0] == 0, ids[0] == y[0][0], "rank 0 iff the target is the top-1 token");
    { /* rows of different heads in one pass (Hydra's levels): the same lists as one at a time */
        int hk[3] = {0, 2, 1}, n_top[3] = {4, 3, 2};
        const float *xs[3] = {x[0] + h->d_in[0], x[2], x[1] + 2 * h->d_in[1]};
        int32_t b_ids[3 * ARB_HEADS_RANKS], one[4];
        float b_p[3 * ARB_HEADS_RANKS], one_p[4];
        arb_heads_topk_batch(h, &lmh, 3, hk, xs, n_top, b_ids, b_p, ws);
        for (int i = 0; i < 3; i++) {
            arb_heads_topk(h, hk[i], &lmh, xs[i], n_top[i], one, one_p, ws);
            cr_assert_arr_eq(one, b_ids + i * ARB_HEADS_RANKS, (size_t)n_top[i] * sizeof *one, "row %d", i);
            cr_assert_arr_eq(one_p, b_p + i * ARB_HEADS_RANKS, (size_t)n_top[i] * sizeof *one_p, "row %d", i);
        }
    }
    if (kind == ARB_HEADS_MEDUSA) { /* all heads in one pass: the same lists as one at a time */
        int n_top[3] = {4, 0, 3};
        int32_t all_ids[3 * ARB_HEADS_RANKS], one[4];
        float all_p[3 * ARB_HEADS_RANKS], one_p[4];
        arb_heads_topk_all(h, &lmh, x[0], n_top, all_ids, all_p, ws);
        for (int k = 0; k < 3; k += 2) {
            arb_heads_topk(h, k, &lmh, x[0], n_top[k], one, one_p, ws);
            cr_assert_arr_eq(one, all_ids + k * ARB_HEADS_RANKS, (size_t)n_top[k] * sizeof *one, "head %d", k);
            cr_assert_arr_eq(one_p, all_p + k * ARB_HEADS_RANKS, (size_t)n_top[k] * sizeof *one_p, "head %d", k);
        }
    }
    cr_assert(pr[0] >= pr[1] && pr[1] >= pr[2] && pr[0] <= 1 && pr[3] > 0);
    for (int k = 0; k < K; k++)
        free(x[k]), free(y[k]), free(tz[k]);
    free(grad);
    free(w_lm);
    arb_heads_ws_free(ws);
    arb_heads_free(h);
}
static void check_gradient(arb_heads_kind kind) { check_gradient_alpha(kind, 0); }

Test(heads, medusa_backward_matches_finite_differences) { check_gradient(ARB_HEADS_MEDUSA); }
Test(heads, hydra_backward_matches_finite_differences) { check_gradient(ARB_HEADS_HYDRA); }
/* Hydra++'s teacher loss: the mixed and the pure teacher objective's backward */
Test(heads, teacher_loss_backward_matches_finite_differences)
{
    check_gradient_alpha(ARB_HEADS_MEDUSA, 0.5f);
    check_gradient_alpha(ARB_HEADS_HYDRA, 0.5f);
    check_gradient_alpha(ARB_HEADS_HYDRA, 1.0f);
}

Test(heads, new_rejects_bad_shapes_and_init_is_medusas)
{
    arb_err err = {0};
    arb_heads *h = (arb_heads *)1;
    cr_assert_eq(arb_heads_new(ARB_HEADS_MEDUSA, 0, 8, 10, &h, &err), ARB_E_INVAL);
    cr_assert_null(h);
    cr_assert_eq(arb_heads_new(ARB_HEADS_MEDUSA, ARB_HEADS_MAX + 1, 8, 10, &h, &err), ARB_E_INVAL);
    cr_assert_eq(arb_heads_new(ARB_HEADS_HYDRA, 2, 4, 10, &h, &err), ARB_OK);
    cr_assert_eq(h->d_in[0], 8);
    cr_assert_eq(h->d_in[1], 12);
    cr_assert_eq(h->n_params, (size_t)2 * (4 * 8 + 4) + 2 * (4 * 12 + 4));
    arb_heads_init(h, 9);
    for (int o = 0; o < 4; o++) {
        cr_assert_float_eq(h->r[1][o * 12 + o], 1.0f, 0);
        cr_assert_eq(h->w[1][o * 12 + o], 0.0f);
        cr_assert(fabsf(h->b[0][o]) <= 1.0f / sqrtf(8.0f));
    }
    arb_heads_free(h);
    arb_heads_free(NULL);
}

Test(heads, adamw_schedule_clipping_and_descent)
{
    arb_adamw_opts o = arb_adamw_default_opts();
    o.total_steps = 110;
    o.warmup_steps = 10;
    o.lr = 0.1;
    cr_assert_float_eq(arb_adamw_lr(&o, 0), 0.01, 1e-12);
    cr_assert_float_eq(arb_adamw_lr(&o, 9), 0.1, 1e-12);
    cr_assert_float_eq(arb_adamw_lr(&o, 60), 0.05, 1e-12); /* half-way down the cosine */
    cr_assert_float_eq(arb_adamw_lr(&o, 110), 0.0, 1e-12);
    arb_adamw a;
    arb_err err = {0};
    arb_adamw_opts bad = o;
    bad.warmup_steps = 200;
    cr_assert_eq(arb_adamw_init(&a, 2, &bad, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "warmup_steps"), "%s", err.msg);
    cr_assert_eq(arb_adamw_init(&a, 2, &o, &err), ARB_OK);
    float p[2] = {3, -2}, g[2];
    for (int t = 0; t < 110; t++) { /* f = p0^2 + 10 p1^2 */
        g[0] = 2 * p[0] * 10; /* large: clipped to norm 1 */
        g[1] = 20 * p[1] * 10;
        double n = arb_adamw_step(&a, p, g);
        cr_assert(n > 0);
        if (t == 0)
            cr_assert_float_eq(sqrt(g[0] * g[0] + g[1] * g[1]), 1.0, 1e-5); /* clipped in place */
    }
    cr_assert_lt(fabsf(p[0]), 0.5f);
    cr_assert_lt(fabsf(p[1]), 0.5f);
    arb_adamw_release(&a);
}

Test(heads, file_round_trip_and_wrong_base_model)
{
    arb_err err = {0};
    arb_heads *h, *g;
    cr_assert_eq(arb_heads_new(ARB_HEADS_HYDRA, 2, 8, 20, &h, &err), ARB_OK);
    randomize(h, 1);
    arb_heads_meta m = {.seed = 77, .rows = 100, .heldout_rows = 10}, m2;
    snprintf(m.base_sha256, sizeof m.base_sha256, "%064d", 1);
    snprintf(m.base_name, sizeof m.base_name, "tiny");
    snprintf(m.config, sizeof m.config, "{\"steps\":3}");
    m.top1[0] = 0.5f, m.top5[1] = 0.75f, m.rank_acc[1][9] = 0.125f;
    char path[] = "/tmp/arb_heads_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(arb_heads_save(path, h, &m, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_heads_load(path, m.base_sha256, &g, &m2, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(g->kind, ARB_HEADS_HYDRA);
    cr_assert_eq(g->n_params, h->n_params);
    cr_assert_arr_eq(g->params, h->params, h->n_params * sizeof(float));
    cr_assert_str_eq(m2.config, "{\"steps\":3}");
    cr_assert_eq(m2.seed, 77);
    cr_assert_eq(m2.top1[0], 0.5f);
    cr_assert_eq(m2.top5[1], 0.75f);
    cr_assert_eq(m2.rank_acc[1][9], 0.125f);
    arb_heads_free(g);
    char other[65];
    snprintf(other, sizeof other, "%064d", 2);
    g = (arb_heads *)1;
    cr_assert_eq(arb_heads_load(path, other, &g, &m2, &err), ARB_E_INVAL);
    cr_assert_null(g);
    cr_assert(strstr(err.msg, "trained for base model tiny") && strstr(err.msg, "not this model"), "%s", err.msg);
    /* a model file is no heads file */
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_SET);
    fputs("XXXX", f);
    fclose(f);
    cr_assert_neq(arb_heads_load(path, NULL, &g, &m2, &err), ARB_OK);
    unlink(path);
    arb_heads_free(h);
}

Test(heads, distill_file_resumes_after_a_torn_record)
{
    char path[] = "/tmp/arb_distill_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    unlink(path);
    arb_err err = {0};
    arb_distill_writer *w;
    cr_assert_eq(arb_distill_writer_open(path, "{\"a\":1}", &w, &err), ARB_OK, "%s", err.msg);
    int32_t p[3] = {1, 2, 3}, r[4] = {7, 8, 9, 10};
    for (uint32_t s = 0; s < 3; s++)
        cr_assert_eq(arb_distill_writer_append(w, s * 2, p, 3, r, (int)s + 2, &err), ARB_OK);
    arb_distill_writer_close(w);
    FILE *f = fopen(path, "ab"); /* a crash in the middle of the 4th record */
    uint32_t torn[5] = {0x44434552u, 6, 3, 4, 1};
    fwrite(torn, 4, 5, f);
    fclose(f);
    arb_distill_data *d;
    cr_assert_eq(arb_distill_load(path, &d, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(d->n_rec, 3);
    cr_assert_eq(d->rec[2].seq, 4);
    cr_assert_eq(d->rec[2].n_resp, 4);
    cr_assert_eq(d->rec[2].tok[3 + 3], 10);
    cr_assert_eq(d->n_resp_tok, 2 + 3 + 4);
    cr_assert_str_eq(d->meta, "{\"a\":1}");
    arb_distill_free(d);
    cr_assert_eq(arb_distill_writer_open(path, "{\"a\":2}", &w, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "other settings"), "%s", err.msg);
    cr_assert_eq(arb_distill_writer_open(path, "{\"a\":1}", &w, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_distill_writer_next_seq(w), 5);
    cr_assert_eq(arb_distill_writer_n_rec(w), 3);
    cr_assert_eq(arb_distill_writer_append(w, 5, p, 3, r, 1, &err), ARB_OK);
    arb_distill_writer_close(w);
    cr_assert_eq(arb_distill_load(path, &d, &err), ARB_OK);
    cr_assert_eq(d->n_rec, 4, "the torn tail was dropped, the new record kept");
    cr_assert_eq(d->rec[3].seq, 5);
    arb_distill_free(d);
    f = fopen(path, "r+b");
    fputs("NOTDIST", f);
    fclose(f);
    cr_assert_eq(arb_distill_load(path, &d, &err), ARB_E_FORMAT);
    cr_assert(strstr(err.msg, "bad magic"), "%s", err.msg);
    unlink(path);
}

Test(heads, trees_mc_sim_and_auto)
{
    int32_t par[256];
    int16_t rk[256];
    arb_err err = {0};
    int n = arb_choices_parse(arb_medusa_mc_sim_7b_63, par, rk, 256, &err);
    cr_assert_eq(n, 64, "%s", err.msg);
    int depth[64] = {0}, count[5] = {0};
    for (int i = 1; i < n; i++)
        count[depth[i] = depth[par[i]] + 1]++;
    cr_assert_eq(count[1], 10);
    cr_assert_eq(count[2], 28);
    cr_assert_eq(count[3], 23);
    cr_assert_eq(count[4], 2);
    /* auto: head 1 is sure of its top-1, later heads less so */
    float acc[3][ARB_HEADS_RANKS] = {{0.9f, 0.05f}, {0.5f, 0.2f, 0.1f}, {0.3f, 0.1f}};
    n = arb_medusa_tree_auto(acc, 3, 6, par, rk, 256, &err);
    cr_assert_eq(n, 6, "%s", err.msg);
    /* values: [0] .9, [0,0] .45, [0,0,0] .135, [0,1] .18, [0,2] .09, [1] .05 -> top 5 */
    int32_t want_par[6] = {-1, 0, 1, 1, 1, 2};
    int16_t want_rk[6] = {-1, 0, 0, 1, 2, 0};
    for (int i = 1; i < 6; i++) {
        cr_assert_eq(par[i], want_par[i], "node %d", i);
        cr_assert_eq(rk[i], want_rk[i], "node %d", i);
    }
    cr_assert_lt(arb_medusa_tree_auto(acc, 3, 0, par, rk, 256, &err), 0);
}

/* ---- a CI-sized training run on a tiny synthetic model ---- */

Test(heads, tiny_model_training_lowers_held_out_loss, .timeout = 120)
{
    synth_opts so = {.arch = "llama", .seed = 5};
    arb_model *m = load_synth(&so, 1);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    arb_err err = {0};
    arb_ctx_opts co = arb_ctx_default_opts();
    co.want_hidden = true;
    co.n_ctx = 256;
    arb_ctx *c;
    cr_assert_eq(arb_ctx_new(m, &co, &c, &err), ARB_OK, "%s", err.msg);
    float *w_lm = NULL;
    /* the synthetic model's file is gone after load: build the output matrix from the logits'
       own definition instead, a fixed random matrix (what matters is that it is frozen) */
    w_lm = malloc(sizeof(float) * mi.n_vocab * mi.n_embd);
    for (int i = 0; i < mi.n_vocab * mi.n_embd; i++)
        w_lm[i] = urand() * 0.3f;
    /* data: hidden states of a repeating token pattern, so token t+2 is predictable from h_t */
    enum { T = 96 };
    int32_t tok[T], par[T], am[T];
    for (int i = 0; i < T; i++)
        tok[i] = (int32_t)((i * 5) % 11 + 3), par[i] = i - 1;
    float *hid = malloc(sizeof(float) * T * mi.n_embd);
    arb_eval_out eo = {.argmax = am, .hidden = hid};
    cr_assert_eq(arb_eval_ex(c, tok, par, T, &eo, &err), ARB_OK, "%s", err.msg);
    arb_heads *h;
    cr_assert_eq(arb_heads_new(ARB_HEADS_MEDUSA, 2, mi.n_embd, mi.n_vocab, &h, &err), ARB_OK);
    arb_heads_init(h, 1);
    arb_heads_ws *ws;
    cr_assert_eq(arb_heads_ws_new(h, T, &ws, &err), ARB_OK);
    int32_t y[2][T];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < T; i++)
            y[k][i] = i + 2 + k < T ? tok[i + 2 + k] : -1;
    float *grad = malloc(sizeof(float) * h->n_params);
    arb_adamw_opts o = arb_adamw_default_opts();
    o.total_steps = 60;
    o.warmup_steps = 3;
    o.lr = 1e-2;
    arb_adamw a;
    cr_assert_eq(arb_adamw_init(&a, h->n_params, &o, &err), ARB_OK);
    /* train on the first 64 positions, hold out the rest */
    double l0 = 0, l1 = 0;
    for (int k = 0; k < 2; k++)
        l0 += arb_heads_step(h, k, w_lm, hid + 64 * mi.n_embd, y[k] + 64, T - 64, 1, NULL, ws, NULL);
    for (int s = 0; s < o.total_steps; s++) {
        memset(grad, 0, sizeof(float) * h->n_params);
        for (int k = 0; k < 2; k++)
            arb_heads_step(h, k, w_lm, hid, y[k], 64, 0.8f / 64, grad, ws, NULL);
        arb_adamw_step(&a, h->params, grad);
    }
    for (int k = 0; k < 2; k++)
        l1 += arb_heads_step(h, k, w_lm, hid + 64 * mi.n_embd, y[k] + 64, T - 64, 1, NULL, ws, NULL);
    cr_log_info("tiny model: held-out loss %.3f -> %.3f", l0, l1);
    cr_assert_lt(l1, 0.5 * l0, "held-out loss %.3f -> %.3f", l0, l1);
    /* and the trained heads survive a file round trip bit for bit */
    arb_heads_meta meta = {.seed = 1}, m2;
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%064d", 5);
    char path[] = "/tmp/arb_heads_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    cr_assert_eq(arb_heads_save(path, h, &meta, &err), ARB_OK, "%s", err.msg);
    arb_heads *g;
    cr_assert_eq(arb_heads_load(path, meta.base_sha256, &g, &m2, &err), ARB_OK, "%s", err.msg);
    cr_assert_arr_eq(g->params, h->params, h->n_params * sizeof(float));
    unlink(path);
    arb_heads_free(g);
    arb_adamw_release(&a);
    free(grad);
    arb_heads_ws_free(ws);
    arb_heads_free(h);
    free(hid);
    free(w_lm);
    arb_ctx_free(c);
    arb_model_free(m);
}

/* Scoring through the engine's head (arb_lm_head bound to a context): arb_lm_head_topk asks the
   context for the top-K lists only (arb_ctx_output_head_ex), and must give exactly what the rows
   gave (arb_lm_head_logits, then arb_topk_softmax), as must the f32 path; the heads' per-row cut
   of one list (Medusa's n_top per head) equals each head's own call, and a head with n_top 0 is
   not written. */
Test(heads, topk_lists_through_the_context_equal_the_rows)
{
    synth_opts so = {.arch = "llama", .seed = 9};
    arb_model *m = load_synth(&so, 1);
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const int V = mi.n_vocab, E = mi.n_embd, B = 4, K = 8;
    arb_err err = {0};
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = 64;
    arb_ctx *c;
    cr_assert_eq(arb_ctx_new(m, &co, &c, &err), ARB_OK, "%s", err.msg);
    float *w_lm = malloc(sizeof(float) * V * E), *Z = malloc(sizeof(float) * B * E);
    float *L = malloc(sizeof(float) * B * V), *scratch = malloc(sizeof(float) * B * V);
    for (int i = 0; i < V * E; i++)
        w_lm[i] = urand() * 0.3f;
    for (int i = 0; i < B * E; i++)
        Z[i] = urand();
    arb_lm_head lm;
    cr_assert_eq(arb_lm_head_bind(&lm, c, w_lm, &err), ARB_OK, "%s", err.msg);
    cr_assert(lm.ctx == c, "the synthetic model's context serves the head");
    int32_t ids[4 * 8], ids_ref[8];
    float p[4 * 8], p_ref[8];
    for (int f32 = 0; f32 < 2; f32++) {
        lm.f32 = f32;
        arb_lm_head_logits(&lm, V, E, Z, B, L);
        arb_lm_head_topk(&lm, V, E, Z, B, K, ids, p, scratch);
        for (int i = 0; i < B; i++) {
            arb_topk_softmax(L + (size_t)i * V, V, K, ids_ref, p_ref);
            cr_assert(!memcmp(ids + i * K, ids_ref, sizeof ids_ref) && !memcmp(p + i * K, p_ref, sizeof p_ref),
                      "%s path, row %d: the top-K lists differ from the rows'", f32 ? "f32" : "context", i);
        }
    }
    lm.f32 = false;
    arb_heads *h;
    cr_assert_eq(arb_heads_new(ARB_HEADS_MEDUSA, 3, E, V, &h, &err), ARB_OK, "%s", err.msg);
    randomize(h, 0.2f);
    arb_heads_ws *ws;
    cr_assert_eq(arb_heads_ws_new(h, 4, &ws, &err), ARB_OK, "%s", err.msg);
    const int n_top[3] = {8, 3, 0};
    int32_t all_ids[3 * ARB_HEADS_RANKS], one_ids[ARB_HEADS_RANKS];
    float all_p[3 * ARB_HEADS_RANKS], one_p[ARB_HEADS_RANKS];
    for (int i = 0; i < 3 * ARB_HEADS_RANKS; i++)
        all_ids[i] = -7, all_p[i] = -7.0f;
    arb_heads_topk_all(h, &lm, Z, n_top, all_ids, all_p, ws);
    for (int k = 0; k < 3; k++) {
        const int32_t *gi = all_ids + k * ARB_HEADS_RANKS;
        const float *gp = all_p + k * ARB_HEADS_RANKS;
        if (!n_top[k]) {
            cr_assert(gi[0] == -7 && gp[0] == -7.0f, "head %d with n_top 0 was written", k);
            continue;
        }
        arb_heads_topk(h, k, &lm, Z, n_top[k], one_ids, one_p, ws);
        cr_assert(!memcmp(gi, one_ids, sizeof(int32_t) * n_top[k]) && !memcmp(gp, one_p, sizeof(float) * n_top[k]),
                  "head %d: the cut list differs from the head's own top-%d", k, n_top[k]);
        cr_assert_eq(gi[n_top[k]], -7, "head %d: written past its n_top", k);
    }
    /* the head blocks on a two-thread context (parts of 64 outputs on its threads) give the
       one-thread context's bits (E = 64: two parts of 32 per row) */
    arb_model *m2 = load_synth(&so, 2);
    arb_ctx *c2;
    cr_assert_eq(arb_ctx_new(m2, &co, &c2, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_threads(c2), 2);
    arb_lm_head lm2;
    cr_assert_eq(arb_lm_head_bind(&lm2, c2, w_lm, &err), ARB_OK, "%s", err.msg);
    const int n_all[3] = {8, 8, 8};
    int32_t ids1[3 * ARB_HEADS_RANKS], ids2[3 * ARB_HEADS_RANKS];
    float p1[3 * ARB_HEADS_RANKS], p2[3 * ARB_HEADS_RANKS];
    cr_assert_eq(arb_ctx_n_threads(c), 1);
    arb_heads_ws *ws2; /* its own scratch: no row of the serial call left in it */
    cr_assert_eq(arb_heads_ws_new(h, 4, &ws2, &err), ARB_OK, "%s", err.msg);
    arb_heads_topk_all(h, &lm2, Z + E, n_all, ids2, p2, ws2);
    arb_heads_topk_all(h, &lm, Z + E, n_all, ids1, p1, ws);
    for (int k = 0; k < 3; k++)
        cr_assert(!memcmp(ids1 + k * ARB_HEADS_RANKS, ids2 + k * ARB_HEADS_RANKS, sizeof(int32_t) * 8) &&
                      !memcmp(p1 + k * ARB_HEADS_RANKS, p2 + k * ARB_HEADS_RANKS, sizeof(float) * 8),
                  "head %d: two threads differ from one", k);
    /* Hydra: a tree level's rows share their head (each part of it read once for all of them);
       each row must still get its own call's lists */
    arb_heads *hy;
    cr_assert_eq(arb_heads_new(ARB_HEADS_HYDRA, 3, E, V, &hy, &err), ARB_OK, "%s", err.msg);
    randomize(hy, 0.1f);
    arb_heads_ws *wsh;
    cr_assert_eq(arb_heads_ws_new(hy, 4, &wsh, &err), ARB_OK, "%s", err.msg);
    const int D = hy->d_in[1];
    float *xh = malloc(sizeof(float) * 3 * D);
    for (int i = 0; i < 3 * D; i++)
        xh[i] = urand();
    const int hk[3] = {1, 1, 1}, hn[3] = {8, 5, 8};
    const float *hx[3] = {xh, xh + D, xh + 2 * D};
    int32_t bids[3 * ARB_HEADS_RANKS];
    float bp[3 * ARB_HEADS_RANKS];
    arb_heads_topk_batch(hy, &lm2, 3, hk, hx, hn, bids, bp, wsh);
    for (int i = 0; i < 3; i++) {
        arb_heads_topk(hy, 1, &lm, hx[i], hn[i], one_ids, one_p, wsh);
        cr_assert(!memcmp(bids + i * ARB_HEADS_RANKS, one_ids, sizeof(int32_t) * hn[i]) &&
                      !memcmp(bp + i * ARB_HEADS_RANKS, one_p, sizeof(float) * hn[i]),
                  "hydra row %d: the level's batch differs from the row alone", i);
    }
    free(xh);
    arb_heads_ws_free(wsh);
    arb_heads_free(hy);
    arb_heads_ws_free(ws2);
    arb_ctx_free(c2);
    arb_model_free(m2);
    arb_heads_ws_free(ws);
    arb_heads_free(h);
    free(w_lm), free(Z), free(L), free(scratch);
    arb_ctx_free(c);
    arb_model_free(m);
}

/* A method's `heads` value as a file: "default" is the cache's file for the model (kind, model
   file name, 12 hex of its digest), "{cache}/NAME" is NAME in the cache directory, anything else
   is the path itself; the cache is $ARBOR_CACHE. */
Test(heads, heads_values_resolve_to_files)
{
    char dir[] = "/tmp/arb_heads_path_XXXXXX", path[4096], want[4096];
    cr_assert(mkdtemp(dir));
    const char *old = getenv("ARBOR_CACHE");
    char *saved = old ? strdup(old) : NULL;
    setenv("ARBOR_CACHE", dir, 1);
    arb_err err = {0};
    static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    cr_assert_eq(arb_heads_path("{cache}/hyE.gguf", "hydra", "/m/model.gguf", sha, path, sizeof path, &err), ARB_OK,
                 "%s", err.msg);
    snprintf(want, sizeof want, "%s/hyE.gguf", dir);
    cr_assert_str_eq(path, want);
    cr_assert_eq(arb_heads_path("default", "hydra", "/m/model.gguf", sha, path, sizeof path, &err), ARB_OK, "%s", err.msg);
    snprintf(want, sizeof want, "%s/heads/hydra-model.gguf.0123456789ab.gguf", dir);
    cr_assert_str_eq(path, want);
    cr_assert_eq(arb_heads_path("/x/{cache}/h.gguf", "hydra", "/m/model.gguf", sha, path, sizeof path, &err), ARB_OK);
    cr_assert_str_eq(path, "/x/{cache}/h.gguf", "only a leading {cache}/ is the cache");
    cr_assert_eq(arb_heads_path("{cache}/h.gguf", "hydra", "/m/model.gguf", sha, path, 8, &err), ARB_E_RANGE);
    if (saved)
        setenv("ARBOR_CACHE", saved, 1), free(saved);
    else
        unsetenv("ARBOR_CACHE");
    snprintf(want, sizeof want, "%s/heads", dir);
    rmdir(want);
    cr_assert_eq(rmdir(dir), 0);
}
