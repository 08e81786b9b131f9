/* test_model_synth.c — the engine on tiny synthetic models written by this test:
 * loading (llama / qwen2 / qwen3, tied and separate heads, missing tensors,
 * unknown architectures), and the exactness contract: every node of a random
 * tree gets logits bit-identical (memcmp) to feeding its path one token at a time,
 * and committing a path leaves the cache exactly as a pure AR run would.
 *
 * The models are random (seeded) weights in Q8_0 / Q4_1 / F32 with 2 layers,
 * n_embd 64, 4 heads / 2 KV heads (GQA), head_dim 16, vocab 300.
 * The all-F32 llama (with and without rope_freqs.weight) and qwen2 variants were also
 * run through llama.cpp (c392e5094, F32 KV), and the qwen3 ones (head_dim 16, and 32
 * from attention.key_length) through llama.cpp 4227c9be4 (vendored in
 * llama-cpp-python 0.3.16, which reproduces the older fixtures bit for bit):
 * tests/fixtures/synth_{llama,llama_ropefreqs,qwen2,qwen3,qwen3_hd32}_f32_ref.tsv hold
 * its logits, which arbor matches to ~2e-6 (float summation order, exp polynomial).
 * ARBOR_SYNTH_DUMP=DIR makes those comparisons also write their models to
 * DIR/synth_<variant>_f32.gguf, for regenerating the fixtures with llama.cpp.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "quant.h"

#include "synth_model.h"
#include "tiny_models.h"

#include "engine_check.h"

/* ---------------- loading ---------------- */

Test(model_synth, loads_each_architecture)
{
    const char *archs[] = {"llama", "qwen2", "qwen3", "gemma3"};
    for (int a = 0; a < 4; a++) {
        synth_opts o = {.arch = archs[a], .tied = a != 1, .seed = 1};
        arb_model *m = load_synth(&o, 1);
        arb_model_info mi;
        arb_model_get_info(m, &mi);
        cr_assert_str_eq(mi.arch, archs[a]);
        cr_assert_str_eq(mi.name, "synth");
        cr_assert_eq(mi.n_vocab, S_VOCAB);
        cr_assert_eq(mi.n_embd, S_EMBD);
        cr_assert_eq(mi.n_layer, S_LAYER);
        cr_assert_eq(mi.n_head, S_HEAD);
        cr_assert_eq(mi.n_head_kv, S_HEAD_KV);
        cr_assert_eq(mi.head_dim, S_HD);
        cr_assert_eq(mi.n_ctx_train, S_CTX);
        cr_assert_eq(mi.bos, -1); /* no tokenizer in these files */
        cr_assert_gt(mi.n_params, (uint64_t)S_VOCAB * S_EMBD);
        arb_model_free(m);
    }
}

Test(model_synth, missing_tensor_is_named)
{
    synth_opts o = {.arch = "llama", .tied = true, .skip = "blk.1.ffn_up.weight", .seed = 2};
    char *path = write_synth(&o);
    arb_model *m = (arb_model *)1;
    arb_err err = {0};
    int rc = arb_model_load(path, NULL, &m, &err);
    cr_assert_eq(rc, ARB_E_NOTFOUND);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "blk.1.ffn_up.weight") && strstr(err.msg, path), "%s", err.msg);
    unlink(path);
    free(path);
}

Test(model_synth, qwen2_requires_biases)
{
    synth_opts o = {.arch = "qwen2", .skip = "blk.0.attn_k.bias", .seed = 2};
    char *path = write_synth(&o);
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, NULL, &m, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "blk.0.attn_k.bias"), "%s", err.msg);
    unlink(path);
    free(path);
}

static void expect_load_error(const synth_opts *o, int code, const char *needle)
{
    char *path = write_synth(o);
    arb_model *m = NULL;
    arb_err err = {0};
    cr_expect_eq(arb_model_load(path, NULL, &m, &err), code, "%s", err.msg);
    cr_expect_null(m);
    cr_expect(strstr(err.msg, needle) && strstr(err.msg, path), "'%s' lacks '%s' or the path", err.msg, needle);
    unlink(path);
    free(path);
}

Test(model_synth, bad_files_are_named)
{
    synth_opts o = {.arch = "llama", .seed = 5, .drop_key = "block_count"};
    expect_load_error(&o, ARB_E_NOTFOUND, "llama.block_count");
    synth_opts o2 = {.arch = "llama", .seed = 5, .reshape = "blk.0.attn_k.weight"};
    expect_load_error(&o2, ARB_E_FORMAT, "blk.0.attn_k.weight");
    synth_opts o3 = {.arch = "llama", .seed = 5, .retype = "blk.1.ffn_down.weight", .retype_to = ARB_TYPE_Q8_1};
    expect_load_error(&o3, ARB_E_UNSUPPORTED, "blk.1.ffn_down.weight");
    synth_opts o4 = {.arch = "llama", .seed = 5, .retype = "output_norm.weight", .retype_to = ARB_TYPE_F16};
    expect_load_error(&o4, ARB_E_UNSUPPORTED, "output_norm.weight");
}

Test(model_synth, unknown_architecture_is_rejected)
{
    synth_opts o = {.arch = "mamba", .seed = 3};
    char *path = write_synth(&o);
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, NULL, &m, &err), ARB_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "mamba"), "%s", err.msg);
    unlink(path);
    free(path);
}

Test(model_synth, bad_arguments_are_rejected)
{
    synth_opts o = {.arch = "llama", .tied = true, .seed = 4};
    arb_model *m = load_synth(&o, 1);
    arb_ctx *c = check_ctx(m, 32, 8, 0, false);
    float *lg = malloc(sizeof(float) * S_VOCAB * 64);
    arb_err err = {0};
    int32_t tok[4] = {1, 2, 3, 4}, par[4] = {-1, 0, 0, 1};
    int32_t badpar[2] = {-1, 1}, badtok[1] = {S_VOCAB};
    cr_assert_eq(arb_eval(c, tok, badpar, 2, lg, NULL, &err), ARB_E_INVAL);
    cr_assert_eq(arb_eval(c, badtok, par, 1, lg, NULL, &err), ARB_E_INVAL);
    cr_assert_eq(arb_eval(c, tok, par, 4, lg, lg, &err), ARB_E_INVAL); /* hidden without want_hidden */
    int32_t many_tok[16] = {0}, tree_par[16];
    for (int i = 0; i < 16; i++)
        tree_par[i] = i == 0 ? -1 : 0;
    cr_assert_eq(arb_eval(c, many_tok, tree_par, 16, lg, NULL, &err), ARB_E_INVAL); /* tree > n_batch_max */
    cr_assert_eq(arb_eval(c, tok, par, 4, lg, NULL, &err), ARB_OK, "%s", err.msg);
    int32_t notpath[2] = {0, 3}; /* 3's parent is 1 */
    cr_assert_eq(arb_commit(c, notpath, 2, &err), ARB_E_INVAL);
    int32_t path[3] = {0, 1, 3};
    cr_assert_eq(arb_commit(c, path, 3, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_past(c), 3);
    cr_assert_eq(arb_commit(c, path, 1, &err), ARB_E_INVAL); /* nothing left to commit */
    int32_t chain_par[32];
    for (int i = 0; i < 32; i++)
        chain_par[i] = i - 1;
    cr_assert_eq(arb_eval(c, many_tok, chain_par, 30, lg, NULL, &err), ARB_E_RANGE); /* 3 + 30 > 32 */
    cr_assert_eq(arb_ctx_truncate(c, 4), ARB_E_RANGE);
    cr_assert_eq(arb_ctx_truncate(c, 1), ARB_OK);
    cr_assert_eq(arb_ctx_n_past(c), 1);
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = S_CTX * 2;
    arb_ctx *c2 = NULL;
    cr_assert_eq(arb_ctx_new(m, &co, &c2, &err), ARB_E_RANGE);
    cr_assert_null(c2);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
}

/* ---------------- exactness ---------------- */

static void tree_trials_opts(synth_opts o, int n_trees)
{
    const char *arch = o.arch;
    const uint64_t seed = o.seed;
    arb_model *m = load_synth(&o, 1);
    check_stats st = {0};
    uint64_t s = seed * 7919 + 5;
    for (int t = 0; t < n_trees; t++)
        check_random_tree(m, &s, S_VOCAB, 200, &st);
    cr_log_info("%s: %d trees, %d nodes, %d mismatching nodes", arch, st.trees, st.nodes, st.mismatches);
    cr_assert_eq(st.mismatches, 0, "%s: %d of %d nodes differ from AR", arch, st.mismatches, st.nodes);
    arb_model_free(m);
}

static void tree_trials(const char *arch, bool tied, int n_trees, uint64_t seed, int n_head_kv)
{
    tree_trials_opts((synth_opts){.arch = arch, .tied = tied, .seed = seed, .n_head_kv = n_head_kv}, n_trees);
}

/* 60 random trees here (the model suite adds 40 on SmolLM2), plus 10 with one KV head
   for the 4 query heads (attention groups of 3 + 1 heads; decode takes single heads). */
Test(model_synth, tree_logits_equal_ar_llama) { tree_trials("llama", true, 30, 11, 0); }
Test(model_synth, tree_logits_equal_ar_qwen2) { tree_trials("qwen2", false, 15, 12, 0); }
Test(model_synth, tree_logits_equal_ar_qwen3) { tree_trials("qwen3", true, 15, 13, 0); }
Test(model_synth, tree_logits_equal_ar_one_kv_head) { tree_trials("llama", true, 10, 14, 1); }
/* Gemma-3: 6 layers (five local with a window of 8 positions, then a global one), so the
   prefixes (up to 200) and the trees (up to 64 nodes) cross the window everywhere; and
   with one KV head for the 4 query heads, as in Gemma-3 270M. */
Test(model_synth, tree_logits_equal_ar_gemma3)
{
    tree_trials_opts((synth_opts){.arch = "gemma3", .tied = true, .seed = 15, .n_layer = 6, .swa = 8}, 15);
    tree_trials_opts((synth_opts){.arch = "gemma3", .tied = true, .seed = 16, .n_layer = 6, .swa = 3, .n_head_kv = 1},
                     10);
}

Test(model_synth, commit_then_ar_equals_pure_ar_gemma3)
{
    synth_opts o = {.arch = "gemma3", .seed = 32, .n_layer = 6, .swa = 5};
    arb_model *m = load_synth(&o, 1);
    uint64_t s = 6;
    for (int t = 0; t < 10; t++)
        check_commit(m, &s, S_VOCAB, 100);
    arb_model_free(m);
}

/* The sliding window, without an oracle: with the local layers' rope base equal to the
   global one, a window of W changes nothing for positions < W (bit for bit: the same key
   lists) and changes every later position; a window wider than the context is no
   window at all. Also for a tree: a node's window counts positions along its path. */
static void chain_logits(const synth_opts *o, const int32_t *tok, int n, float *lg)
{
    arb_model *m = load_synth(o, 1);
    arb_ctx *c = check_ctx(m, 256, 64, 0, false);
    int32_t par[64];
    for (int i = 0; i < n; i++)
        par[i] = i - 1;
    check_eval(c, tok, par, n, lg, NULL);
    arb_ctx_free(c);
    arb_model_free(m);
}

Test(model_synth, gemma3_window_masks_exactly_the_far_keys)
{
    enum { N = 24, W = 6 };
    int32_t tok[N];
    uint64_t s = 77;
    for (int i = 0; i < N; i++)
        tok[i] = rnd(&s, S_VOCAB);
    float *none = malloc(sizeof(float) * S_VOCAB * N), *win = malloc(sizeof(float) * S_VOCAB * N),
          *wide = malloc(sizeof(float) * S_VOCAB * N);
    synth_opts o = {.arch = "gemma3", .seed = 9, .n_layer = 3, .swa_base_same = true};
    chain_logits(&o, tok, N, none);
    o.swa = W;
    chain_logits(&o, tok, N, win);
    o.swa = 1000;
    chain_logits(&o, tok, N, wide);
    const size_t row = sizeof(float) * S_VOCAB;
    for (int i = 0; i < N; i++) {
        const bool same = !memcmp(none + (size_t)i * S_VOCAB, win + (size_t)i * S_VOCAB, row);
        cr_assert_eq(same, i < W, "position %d: window %d %s the logits", i, W, same ? "left" : "changed");
    }
    cr_assert(!memcmp(none, wide, row * N), "a window wider than the context changed the logits");
    free(none), free(win), free(wide);
}

Test(model_synth, chunked_prefill_equals_ar_and_threads_do_not_matter)
{
    synth_opts o = {.arch = "llama", .seed = 21};
    arb_model *m1 = load_synth(&o, 1), *m2 = load_synth(&o, 2);
    uint64_t s = 99;
    check_chunked_prefill(m1, m2, &s, S_VOCAB, 100, 16);
    arb_model_free(m1);
    arb_model_free(m2);
}

Test(model_synth, commit_then_ar_equals_pure_ar)
{
    synth_opts o = {.arch = "qwen3", .seed = 31};
    arb_model *m = load_synth(&o, 1);
    uint64_t s = 5;
    for (int t = 0; t < 10; t++)
        check_commit(m, &s, S_VOCAB, 100);
    arb_model_free(m);
}

Test(model_synth, n_layer_and_hidden)
{
    synth_opts o = {.arch = "llama", .seed = 41};
    arb_model *m = load_synth(&o, 1);
    uint64_t s = 17;
    check_hidden_and_layers(m, &s, S_VOCAB, S_EMBD);
    arb_model_free(m);
}

/* arb_eval_ex's top-K (docs/gpu.md "No logits round trip") equals arb_topk_softmax of
   arb_eval's rows bit for bit: random trees of up to 64 nodes (two head chunks of 32),
   K = 1, 10, 16 (the cap); a 100-token chain on a context of n_batch_max 16 (chunked
   chain, outputs at offsets); bad top-K requests are refused. */
Test(model_synth, eval_topk_equals_host_topk)
{
    synth_opts o = {.arch = "qwen3", .seed = 61};
    arb_model *m = load_synth(&o, 2);
    uint64_t s = 23;
    arb_ctx *c = check_ctx(m, 256, 64, 0, false);
    int32_t tok[128], par[128];
    float *lg = malloc(sizeof(float) * S_VOCAB * 128);
    for (int i = 0; i < 20; i++)
        tok[i] = rnd(&s, S_VOCAB);
    check_prefill(c, tok, 20, lg);
    int rows = 0;
    const int Ks[] = {1, 10, ARB_TOPK_K_MAX};
    for (int t = 0; t < 6; t++) {
        const int n = t < 3 ? 33 + rnd(&s, 32) : 1 + rnd(&s, 64);
        random_tree(&s, n, S_VOCAB, tok, par);
        rows += check_topk_outputs(c, tok, par, n, S_VOCAB, Ks[t % 3]);
    }
    arb_ctx_free(c);
    c = check_ctx(m, 256, 16, 0, false);
    for (int i = 0; i < 100; i++) {
        tok[i] = rnd(&s, S_VOCAB);
        par[i] = i - 1;
    }
    rows += check_topk_outputs(c, tok, par, 100, S_VOCAB, 10);
    arb_err err = {0};
    int32_t ids[ARB_TOPK_K_MAX + 1];
    float p[ARB_TOPK_K_MAX + 1];
    arb_eval_out bad = {.topk_k = ARB_TOPK_K_MAX + 1, .topk_ids = ids, .topk_p = p};
    cr_assert_eq(arb_eval_ex(c, tok, par, 1, &bad, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "top-K"), "%s", err.msg);
    bad = (arb_eval_out){.topk_k = 4, .topk_ids = ids};
    cr_assert_eq(arb_eval_ex(c, tok, par, 1, &bad, &err), ARB_E_INVAL);
    bad = (arb_eval_out){.topk_k = -1, .topk_ids = ids, .topk_p = p};
    cr_assert_eq(arb_eval_ex(c, tok, par, 1, &bad, &err), ARB_E_INVAL);
    cr_log_info("eval top-K: %d rows bit-identical to the host's", rows);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
}

/* arb_probe_matmul_us (`arbor bench engine`, "kernels" line): a rate for every node count the
   context takes, an error for one it does not, and the context left as it was: the eval after
   the probe gives the logits of the eval before it, bit for bit (the probe has its own
   activations and output rows). No timing is asserted. */
Test(model_synth, matmul_probe_leaves_the_context_alone)
{
    synth_opts o = {.arch = "llama", .seed = 71};
    arb_model *m = load_synth(&o, 2);
    uint64_t s = 29;
    arb_ctx *c = check_ctx(m, 256, 16, 0, false);
    int32_t tok[16], par[16];
    float *lg = malloc(sizeof(float) * S_VOCAB * 16), *lg2 = malloc(sizeof(float) * S_VOCAB * 16);
    for (int i = 0; i < 12; i++)
        tok[i] = rnd(&s, S_VOCAB);
    check_prefill(c, tok, 12, lg);
    random_tree(&s, 9, S_VOCAB, tok, par);
    arb_err err = {0};
    cr_assert_eq(arb_eval(c, tok, par, 9, lg, NULL, &err), ARB_OK, "%s", err.msg);
    const int past = arb_ctx_n_past(c);
    for (int n = 1; n <= 16; n *= 2) {
        double us = -1;
        cr_assert_eq(arb_probe_matmul_us(c, n, 0.01, &us, &err), ARB_OK, "%s", err.msg);
        cr_assert(us > 0 && isfinite(us), "%d nodes: %g us", n, us);
    }
    double us = 0;
    cr_assert_eq(arb_probe_matmul_us(c, 17, 0.01, &us, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "17 nodes"), "%s", err.msg);
    cr_assert_eq(arb_probe_matmul_us(c, 0, 0.01, &us, &err), ARB_E_INVAL);
    cr_assert_eq(arb_ctx_n_past(c), past);
    cr_assert_eq(arb_eval(c, tok, par, 9, lg2, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(memcmp(lg, lg2, sizeof(float) * S_VOCAB * 9), 0, "the probe changed the next eval");
    free(lg);
    free(lg2);
    arb_ctx_free(c);
    arb_model_free(m);
}

/* arb_eval_logits_row: one node's row after an argmax or top-K eval (and after a commit)
   is the row a logits eval gives, bit for bit; it refuses nodes outside the last eval and
   after a prefill. */
Test(model_synth, eval_logits_row_equals_the_full_row)
{
    synth_opts o = {.arch = "llama", .seed = 62, .tied = true};
    arb_model *m = load_synth(&o, 2);
    uint64_t s = 29;
    arb_ctx *c = check_ctx(m, 256, 64, 0, false);
    int32_t tok[64], par[64], am[64], path[64];
    float *lg = malloc(sizeof(float) * S_VOCAB * 64), row[S_VOCAB];
    for (int i = 0; i < 20; i++)
        tok[i] = rnd(&s, S_VOCAB);
    arb_err err = {0};
    cr_assert_eq(arb_prefill(c, tok, 20, lg, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_eval_logits_row(c, 0, row, &err), ARB_E_INVAL, "a prefill leaves no eval rows");
    int rows = 0;
    for (int t = 0; t < 6; t++) {
        const int n = 1 + rnd(&s, 64);
        random_tree(&s, n, S_VOCAB, tok, par);
        check_eval(c, tok, par, n, lg, NULL); /* the reference rows */
        const arb_eval_out ao = {.argmax = am};
        cr_assert_eq(arb_eval_ex(c, tok, par, n, &ao, &err), ARB_OK, "%s", err.msg);
        for (int i = 0; i < n; i += 1 + rnd(&s, 4)) {
            cr_assert_eq(arb_eval_logits_row(c, i, row, &err), ARB_OK, "%s", err.msg);
            cr_assert(!memcmp(row, lg + (size_t)i * S_VOCAB, sizeof row), "tree %d node %d differs", t, i);
            rows++;
        }
        cr_assert_eq(arb_eval_logits_row(c, n, row, &err), ARB_E_INVAL);
        cr_assert_eq(arb_eval_logits_row(c, -1, row, &err), ARB_E_INVAL);
        /* a commit keeps the rows: the stop node's row is read after verification */
        int np = 0;
        for (int a = n - 1; a >= 0; a = par[a])
            np++;
        for (int a = n - 1, k = np - 1; a >= 0; a = par[a], k--)
            path[k] = a;
        cr_assert_eq(arb_commit(c, path, np, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_eval_logits_row(c, n - 1, row, &err), ARB_OK, "%s", err.msg);
        cr_assert(!memcmp(row, lg + (size_t)(n - 1) * S_VOCAB, sizeof row), "tree %d after the commit", t);
        rows++;
    }
    cr_log_info("eval logits row: %d rows bit-identical to the logits eval's", rows);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
}

Test(model_synth, vocab_only_needs_a_tokenizer)
{
    synth_opts o = {.arch = "llama", .seed = 51};
    char *path = write_synth(&o);
    arb_load_opts lo = arb_load_default_opts();
    lo.vocab_only = true;
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, &lo, &m, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, "tokenizer"), "%s", err.msg);
    unlink(path);
    free(path);
}

/* The attention and SwiGLU AVX2 instantiations do the scalar code's operations lane for lane:
   logits are bit-identical with arb_load_opts.attn_scalar set (the scalar path; this test
   set ARBOR_ATTN_SCALAR before the engine took it as a load option). */
static void attention_paths_agree(int n_head_kv)
{
    synth_opts o = {.arch = "qwen2", .seed = 61, .n_head_kv = n_head_kv};
    enum { N = 40 };
    int32_t tok[N], par[N];
    uint64_t s = 3;
    random_tree(&s, N, S_VOCAB, tok, par);
    float *a = malloc(sizeof(float) * S_VOCAB * 100), *b = malloc(sizeof(float) * S_VOCAB * 100);
    for (int pass = 0; pass < 2; pass++) {
        arb_load_opts lo = arb_load_default_opts();
        lo.n_threads = 1;
        lo.attn_scalar = pass == 1;
        arb_model *m = load_synth_opts(&o, &lo);
        arb_ctx *c = check_ctx(m, 256, 64, 0, false);
        int32_t pre[100], pp[100];
        for (int i = 0; i < 100; i++) {
            pre[i] = (i * 37) % S_VOCAB;
            pp[i] = i - 1;
        }
        check_eval(c, pre, pp, 100, pass ? b : a, NULL); /* a 100-key prefix, then the tree */
        check_commit_chain(c, 100);
        check_eval(c, tok, par, N, pass ? b : a, NULL);
        arb_ctx_free(c);
        arb_model_free(m);
    }
    cr_assert(memcmp(a, b, sizeof(float) * S_VOCAB * N) == 0);
    free(a);
    free(b);
}
Test(model_synth, attention_isa_paths_agree) { attention_paths_agree(0); }
Test(model_synth, attention_isa_paths_agree_one_kv_head) { attention_paths_agree(1); }

/* llama.cpp's logits for the all-F32 synthetic models (see the file comment); variant
   names the fixture tests/fixtures/synth_<variant>_f32_ref.tsv and the dumped model. */
static void compare_llama_cpp_tol(const char *variant, synth_opts o, double tol)
{
    char name[64], path[1024];
    snprintf(name, sizeof name, "synth_%s_f32", variant);
    o.tied = true;
    o.seed = 7;
    o.all_f32 = true;
    o.dump_as = name;
    arb_model *m = load_synth(&o, 1);
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/%s_ref.tsv", root ? root : ".", name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    static char line[16384];
    int32_t tok[64], par[64];
    int n = 0, nl = 0;
    float ref[S_VOCAB];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        if (!strncmp(line, "tokens\t", 7))
            for (p += 7; n < 64 && *p && *p != '\n'; n++, p += *p == ',') {
                tok[n] = (int32_t)strtol(p, &p, 10);
                par[n] = n - 1;
            }
        else if (!strncmp(line, "logits\t", 7))
            for (p += 7; nl < S_VOCAB && *p && *p != '\n'; nl++, p += *p == ',')
                ref[nl] = strtof(p, &p);
    }
    fclose(f);
    cr_assert(n > 0 && nl == S_VOCAB, "%s: %d tokens, %d logits", path, n, nl);
    arb_ctx *c = check_ctx(m, 64, 64, 0, false);
    float *lg = malloc(sizeof(float) * S_VOCAB * n);
    check_eval(c, tok, par, n, lg, NULL);
    double md = 0;
    for (int j = 0; j < S_VOCAB; j++)
        md = fmax(md, fabs((double)lg[(size_t)(n - 1) * S_VOCAB + j] - ref[j]));
    cr_log_info("%s vs llama.cpp: max |dlogit| %.3g", variant, md);
    cr_assert_lt(md, tol, "%s: max |dlogit| %.3g vs llama.cpp", variant, md);
    free(lg);
    arb_ctx_free(c);
    arb_model_free(m);
}

static void compare_llama_cpp(const char *variant, synth_opts o) { compare_llama_cpp_tol(variant, o, 2e-5); }

Test(model_synth, llama_matches_llama_cpp_f32) { compare_llama_cpp("llama", (synth_opts){.arch = "llama"}); }
Test(model_synth, qwen2_matches_llama_cpp_f32) { compare_llama_cpp("qwen2", (synth_opts){.arch = "qwen2"}); }
Test(model_synth, qwen3_matches_llama_cpp_f32) { compare_llama_cpp("qwen3", (synth_opts){.arch = "qwen3"}); }
/* Llama-3.1-style rope frequency factors (rope_freqs.weight) */
Test(model_synth, llama_rope_freqs_matches_llama_cpp_f32)
{
    compare_llama_cpp("llama_ropefreqs", (synth_opts){.arch = "llama", .rope_freqs = true});
}
/* head_dim 32 from attention.key_length, n_head * head_dim = 128 != n_embd = 64, as in
   Qwen3 (0.6B: 16 x 128 over n_embd 1024) */
Test(model_synth, qwen3_key_length_matches_llama_cpp_f32)
{
    compare_llama_cpp("qwen3_hd32", (synth_opts){.arch = "qwen3", .head_dim = 32});
}
/* Gemma-3: 6 layers, window 4 on layers 0-4 (rope base 10000), layer 5 global (base 1e6),
   head_dim 32 from key_length, 16 tokens. The bound is wider than the others' because
   llama.cpp's CPU GELU reads a table indexed by the fp16-rounded input and returns an
   fp16 value (GGML_GELU_FP16), ~1e-3 relative per activation; arbor computes GELU in
   float (vec_int.h). GELU_FP16_TOL is about 3x the measured difference (docs/engine.md). */
#define GELU_FP16_TOL 3e-3
Test(model_synth, gemma3_matches_llama_cpp_f32)
{
    compare_llama_cpp_tol("gemma3", (synth_opts){.arch = "gemma3", .n_layer = 6, .swa = 4, .head_dim = 32},
                          GELU_FP16_TOL);
}

/* ---------------- no allocation in the decode loop ----------------
   Test-only malloc interposition (glibc's __libc_* entry points) counting calls while
   armed; skipped under ASan, which owns malloc. */
#if !defined(__SANITIZE_ADDRESS__)
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
static _Atomic long alloc_count;
static _Atomic int alloc_armed;
void *malloc(size_t n)
{
    if (alloc_armed)
        alloc_count++;
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    if (alloc_armed)
        alloc_count++;
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    if (alloc_armed)
        alloc_count++;
    return __libc_realloc(p, n);
}

Test(model_synth, eval_and_commit_allocate_nothing)
{
    synth_opts o = {.arch = "qwen3", .seed = 71};
    arb_model *m = load_synth(&o, 2);
    arb_ctx *c = check_ctx(m, 256, 16, 0, true);
    float *lg = malloc(sizeof(float) * S_VOCAB * 100), *hid = malloc(sizeof(float) * S_EMBD * 100);
    int32_t tok[100], par[100], path[100];
    uint64_t s = 9;
    for (int i = 0; i < 100; i++) {
        tok[i] = rnd(&s, S_VOCAB);
        par[i] = i - 1;
        path[i] = i;
    }
    arb_err err = {0};
    alloc_count = 0;
    alloc_armed = 1;
    int rc = arb_eval(c, tok, par, 40, lg, hid, &err); /* chunked prefill */
    rc |= arb_commit(c, path, 40, &err);
    for (int step = 0; step < 10; step++) {
        random_tree(&s, 16, S_VOCAB, tok, par);
        rc |= arb_eval(c, tok, par, 16, lg, hid, &err);
        rc |= arb_commit(c, path, 1, &err);
    }
    alloc_armed = 0;
    cr_assert_eq(rc, ARB_OK, "%s", err.msg);
    cr_assert_eq(alloc_count, 0, "%ld allocations in eval/commit", (long)alloc_count);
    alloc_armed = 1; /* the hook is live: creating a context does allocate */
    arb_ctx *c2 = check_ctx(m, 64, 8, 0, false);
    alloc_armed = 0;
    cr_assert_gt(alloc_count, 0);
    arb_ctx_free(c2);
    free(lg);
    free(hid);
    arb_ctx_free(c);
    arb_model_free(m);
}
#endif

/* arb_prefill = chain eval + commit, bit for bit (last row's logits, and what follows). */
Test(model_synth, prefill_equals_eval_commit)
{
    synth_opts o = {.arch = "llama", .seed = 81};
    arb_model *m = load_synth(&o, 1);
    enum { N = 100 };
    int32_t tok[N + 1];
    uint64_t s = 4;
    for (int i = 0; i <= N; i++)
        tok[i] = rnd(&s, S_VOCAB);
    arb_ctx *a = check_ctx(m, 256, 16, 0, false), *b = check_ctx(m, 256, 128, 0, false);
    float *la = malloc(sizeof(float) * S_VOCAB), *lb = malloc(sizeof(float) * S_VOCAB * N);
    arb_err err = {0};
    cr_assert_eq(arb_prefill(a, tok, 7, NULL, &err), ARB_OK, "%s", err.msg); /* no logits wanted */
    cr_assert_eq(arb_prefill(a, tok + 7, N - 7, la, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_ctx_n_past(a), N);
    check_prefill(b, tok, N, lb);
    cr_assert(memcmp(la, lb + (size_t)(N - 1) * S_VOCAB, sizeof(float) * S_VOCAB) == 0);
    const int32_t root = -1;
    check_eval(a, tok + N, &root, 1, la, NULL);
    check_eval(b, tok + N, &root, 1, lb, NULL);
    cr_assert(memcmp(la, lb, sizeof(float) * S_VOCAB) == 0);
    cr_assert_eq(arb_prefill(a, tok, 200, la, &err), ARB_E_RANGE);
    int32_t bad = S_VOCAB;
    cr_assert_eq(arb_prefill(a, &bad, 1, la, &err), ARB_E_INVAL);
    free(la);
    free(lb);
    arb_ctx_free(a);
    arb_ctx_free(b);
    arb_model_free(m);
}

/* arb_prefill_ex: the last token's outputs equal that row of the chain eval (engine_check.h). */
Test(model_synth, prefill_ex_last_row_outputs)
{
    synth_opts o = {.arch = "llama", .seed = 82};
    arb_model *m = load_synth(&o, 1);
    check_prefill_ex(m, 9, S_VOCAB, S_EMBD, 0.0);
    arb_model_free(m);
}

/* arb_ctx_parallel_for runs fn once for every index (on 1 and 3 threads), each call
   seeing n, and n = 0 runs nothing. */
typedef struct pf_count {
    _Atomic int hits[97];
    _Atomic int bad_n;
} pf_count;

static void pf_fn(void *ud, int i, int n)
{
    pf_count *pc = ud;
    if (n != 97 || i < 0 || i >= 97)
        atomic_fetch_add(&pc->bad_n, 1);
    else
        atomic_fetch_add(&pc->hits[i], 1);
}

Test(model_synth, ctx_parallel_for_runs_each_index_once)
{
    synth_opts o = {.arch = "llama", .seed = 5};
    for (int th = 1; th <= 3; th += 2) {
        arb_model *m = load_synth(&o, th);
        arb_ctx *c = check_ctx(m, 64, 16, 0, false);
        for (int rep = 0; rep < 20; rep++) {
            pf_count pc = {0};
            cr_assert_eq(arb_ctx_parallel_for(c, 97, pf_fn, &pc), ARB_OK);
            cr_assert_eq(atomic_load(&pc.bad_n), 0);
            for (int i = 0; i < 97; i++)
                cr_assert_eq(atomic_load(&pc.hits[i]), 1, "%d threads: index %d ran %d times", th, i,
                             atomic_load(&pc.hits[i]));
        }
        pf_count none = {0};
        cr_assert_eq(arb_ctx_parallel_for(c, 0, pf_fn, &none), ARB_OK);
        cr_assert_eq(atomic_load(&none.bad_n), 0);
        arb_ctx_free(c);
        arb_model_free(m);
    }
}

/* arb_load_opts.dequant_f32 (the fidelity benchmark's reference): the dequantized model stays
   close to the quantized one (only activation quantization separates them), an all-F32 file
   is untouched bit for bit, and a bad selector is an error naming it. */
/* The first index of a row's largest value. */
static int row_argmax(const float *l, int n)
{
    int b = 0;
    for (int v = 1; v < n; v++)
        b = l[v] > l[b] ? v : b;
    return b;
}

static void eval_with(const synth_opts *o, const char *dequant, float *out, int n, const int32_t *tok,
                      const int32_t *par)
{
    arb_load_opts lo = arb_load_default_opts();
    lo.n_threads = 1;
    lo.dequant_f32 = dequant;
    arb_model *m = load_synth_opts(o, &lo);
    arb_ctx *c = check_ctx(m, 256, 64, 0, false);
    check_eval(c, tok, par, n, out, NULL);
    arb_ctx_free(c);
    arb_model_free(m);
}

Test(model_synth, dequant_f32_reference)
{
    enum { N = 24 };
    int32_t tok[N], par[N];
    uint64_t s = 9;
    random_tree(&s, N, S_VOCAB, tok, par);
    float *q = malloc(sizeof(float) * S_VOCAB * N), *f = malloc(sizeof(float) * S_VOCAB * N),
          *h = malloc(sizeof(float) * S_VOCAB * N);
    synth_opts o = {.arch = "llama", .seed = 5};
    eval_with(&o, NULL, q, N, tok, par);
    eval_with(&o, "all", f, N, tok, par);
    eval_with(&o, "all-but-Q8_0", h, N, tok, par);
    double dq = 0, dh = 0, scale = 0;
    int same = 0;
    for (int i = 0; i < N * S_VOCAB; i++) {
        dq = fmax(dq, fabs((double)q[i] - f[i]));
        dh = fmax(dh, fabs((double)h[i] - f[i]));
        scale = fmax(scale, fabs((double)f[i]));
    }
    for (int i = 0; i < N; i++)
        same += row_argmax(q + i * S_VOCAB, S_VOCAB) == row_argmax(f + i * S_VOCAB, S_VOCAB);
    cr_assert_gt(dq, 0.0, "the quantized path must differ somewhere (activation quantization)");
    cr_assert_lt(dq, 0.05 * scale, "quantized vs dequantized: max |dlogit| %g of %g", dq, scale);
    cr_assert_gt(dh, 0.0, "Q8_0 matrices left quantized must differ from all-F32");
    cr_assert_geq(same, N - 2, "argmax agrees on %d of %d nodes", same, N);
    /* Q5_0 matrices are widened to Q8_0 at load; "all-but-Q5_0" must still find them by their
       file type and leave them quantized (it had dequantized everything) */
    synth_opts og = {.arch = "gemma3", .seed = 5};
    eval_with(&og, "all", f, N, tok, par);
    eval_with(&og, "all-but-Q5_0", h, N, tok, par);
    cr_assert(memcmp(f, h, sizeof(float) * S_VOCAB * N), "Q5_0 matrices left quantized must differ from all-F32");
    /* a file with only F32 matrices: nothing to dequantize, bit-identical */
    synth_opts o32 = {.arch = "llama", .seed = 5, .all_f32 = true};
    eval_with(&o32, NULL, q, N, tok, par);
    eval_with(&o32, "all", f, N, tok, par);
    cr_assert(!memcmp(q, f, sizeof(float) * S_VOCAB * N));
    /* bad selectors */
    arb_load_opts lo = arb_load_default_opts();
    const char *bad[] = {"some", "all-but-q9_9"};
    for (int k = 0; k < 2; k++) {
        lo.dequant_f32 = bad[k];
        char *path = write_synth(&o);
        arb_model *m = NULL;
        arb_err err = {0};
        cr_assert_eq(arb_model_load(path, &lo, &m, &err), ARB_E_INVAL);
        cr_assert(strstr(err.msg, "dequant_f32") && strstr(err.msg, bad[k]), "%s", err.msg);
        unlink(path);
        free(path);
    }
    free(q), free(f), free(h);
}

/* The types widened at load (engine/model.c widen_matrices) on a synthetic model with K-quant
   rows ("tiny": 256 wide, 2 layers, vocab 1000; every matrix and the embedding in the type)
   against the same random blocks written dequantized (F32):
   - dequant_f32 = "all" gives the reference bit for bit (dequantization happens before the
     widening, from the file's blocks: IQ4_XS's scales unrounded);
   - as loaded (Q3_K, IQ4_NL, Q5_1 and Q2_K with every value kept, IQ4_XS with its scales
     rounded) they differ from it only by the 8-bit activations of the int8 kernels: close
     logits, the same argmax almost always;
   - a tree's logits are those of its nodes' paths one token at a time, bit for bit (Q5_1 and
     Q2_K add their block constants after the kernel, per row and token). */
static void eval_file(const char *path, const char *dequant, int n, const int32_t *tok, const int32_t *par,
                      float *out)
{
    arb_load_opts lo = arb_load_default_opts();
    lo.n_threads = 1;
    lo.dequant_f32 = dequant;
    arb_model *m = NULL;
    arb_err err = {0};
    cr_assert_eq(arb_model_load(path, &lo, &m, &err), ARB_OK, "%s", err.msg);
    arb_ctx *c = check_ctx(m, 256, 64, 0, false);
    check_eval(c, tok, par, n, out, NULL);
    arb_ctx_free(c);
    arb_model_free(m);
}

Test(model_synth, widened_types_match_their_f32_reference)
{
    enum { N = 16, V = 1000 };
    int32_t tok[N], par[N];
    uint64_t s = 21;
    random_tree(&s, N, V, tok, par);
    float *q = malloc(sizeof(float) * V * N), *f = malloc(sizeof(float) * V * N), *r = malloc(sizeof(float) * V * N);
    cr_assert(q && f && r);
    const char *types[] = {"q5_1", "q2_k", "q3_k", "iq4_nl", "iq4_xs"};
    for (int k = 0; k < 5; k++) {
        char path[] = "/tmp/arbor_widenXXXXXX", ref[] = "/tmp/arbor_widenrXXXXXX";
        const int fd = mkstemp(path), fr = mkstemp(ref);
        cr_assert(fd >= 0 && fr >= 0);
        close(fd), close(fr);
        arb_err err = {0};
        cr_assert_eq(arb_synth_model_write("tiny", types[k], 0, 7, path, false, false, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(arb_synth_model_write("tiny", types[k], 0, 7, ref, false, true, &err), ARB_OK, "%s", err.msg);
        eval_file(ref, NULL, N, tok, par, r);
        eval_file(path, "all", N, tok, par, f);
        cr_assert(!memcmp(f, r, sizeof(float) * V * N), "%s: dequant_f32=all != the F32 file", types[k]);
        eval_file(path, NULL, N, tok, par, q);
        double dq = 0, scale = 0;
        int same = 0;
        for (int i = 0; i < N * V; i++) {
            dq = fmax(dq, fabs((double)q[i] - r[i]));
            scale = fmax(scale, fabs((double)r[i]));
        }
        for (int i = 0; i < N; i++) {
            const int a = row_argmax(q + i * V, V), b = row_argmax(r + i * V, V);
            same += a == b;
            /* a different argmax only where the reference's own margin is within the error */
            cr_assert_leq((double)r[i * V + b] - r[i * V + a], 2 * dq, "%s node %d: argmax %d vs %d", types[k], i, a,
                          b);
        }
        cr_log_info("%s: max |dlogit| %g of %g, argmax %d/%d", types[k], dq, scale, same, N);
        cr_assert_gt(dq, 0.0, "%s: 8-bit activations must show somewhere", types[k]);
        cr_assert_lt(dq, 0.05 * scale, "%s: max |dlogit| %g of %g", types[k], dq, scale);
        cr_assert_geq(same, N - 4, "%s: argmax agrees on %d of %d nodes", types[k], same, N);
        arb_load_opts lo = arb_load_default_opts();
        lo.n_threads = 3;
        arb_model *m = NULL;
        cr_assert_eq(arb_model_load(path, &lo, &m, &err), ARB_OK, "%s", err.msg);
        check_stats st = {0};
        uint64_t ts = 40 + (uint64_t)k;
        for (int trial = 0; trial < 3; trial++)
            check_random_tree(m, &ts, V, 40, &st);
        cr_assert_eq(st.mismatches, 0, "%s: %d of %d tree nodes differ from their AR path", types[k], st.mismatches,
                     st.nodes);
        arb_model_free(m);
        unlink(path), unlink(ref);
    }
    free(q), free(f), free(r);
}
