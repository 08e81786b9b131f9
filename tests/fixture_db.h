/* fixture_db.h — builds a small synthetic results database through the store API, for the
 * report, metrics, plot, compare and merge tests (no binary database is committed).
 *
 * Two models × two datasets × seven methods; prompt p of method m has 6 + p % 4 steps and
 * step s accepts fx_k(m, p, s) drafts, so every figure a test checks can be recomputed from
 * the same formulas. Wall time is n_calls × fx_call_us(m, p). A shard (i, n) writes only the
 * prompts with p % n == i, which is how `arbor run --shard` partitions.
 */
#ifndef ARB_FIXTURE_DB_H
#define ARB_FIXTURE_DB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define FX_N_PROMPTS 12
static const char *const fx_models[] = {"tiny-a", "tiny-b"};
static const char *const fx_datasets[] = {"humaneval", "mt-bench"};
static const char *const fx_methods[] = {"AR", "PLD", "TR", "GOOSE", "Iso3", "Iso5", "no-bypass"};
static const char *const fx_drafters[] = {"none", "pld", "tr", "goose", "goose", "goose", "goose"};
#define FX_N_METHODS 7

static inline int fx_steps(int p) { return 6 + p % 4; }
/* accepted drafts at step s: AR 0; others grow with the method index, vary with p and s */
static inline int fx_k(int m, int d, int p, int s) { return m == 0 ? 0 : (m + d + p + s) % (m + 2); }
static inline int64_t fx_call_us(int mdl, int m, int p) { return 1000 + 150 * m + 10 * p + 100 * mdl; }
/* spine (PLD) vs branch (TR) split of the accepted drafts, and what was proposed */
static inline int fx_acc_pld(int m, int k) { return m == 2 ? 0 : m == 1 ? k : k / 2 + (k & 1); }
static inline int fx_prop_pld(int m) { return m == 2 ? 0 : 8; }
static inline int fx_prop_tr(int m) { return m == 1 || m == 0 ? 0 : 20; }

static inline void fx_key(int mdl, int d, int m, char key[17])
{
    snprintf(key, 17, "%02d%02d%02d0000000000", mdl, d, m);
}

/* Write the fixture (or one shard of it) into st. Returns ARB_OK or the store's code. */
static inline int fx_build(arb_store *st, int shard_i, int shard_n, arb_err *err)
{
    arb_store_step steps[16];
    int32_t ids[256];
    for (int mdl = 0; mdl < 2; mdl++)
        for (int d = 0; d < 2; d++)
            for (int m = 0; m < FX_N_METHODS; m++) {
                char key[17], sweep[32];
                fx_key(mdl, d, m, key);
                snprintf(sweep, sizeof sweep, "{\"budget\":%d}", 20 * (m + 1));
                arb_store_run r = {.run_key = key, .config_name = "fixture", .method = fx_methods[m],
                                   .base_method = fx_methods[m], .drafter = fx_drafters[m],
                                   .topology = m == 4 || m == 5 ? "iso" : "", .sweep_json = sweep,
                                   .model_id = fx_models[mdl], .model_sha256 = "00",
                                   .dataset = fx_datasets[d], .max_new_tokens = 128, .top_p = 1};
                int rc = arb_store_run_put(st, &r, err);
                for (int p = 0; p < FX_N_PROMPTS && !rc; p++) {
                    if (p % shard_n != shard_i)
                        continue;
                    int n = fx_steps(p), gen = 1;
                    memset(steps, 0, sizeof steps);
                    for (int s = 0; s < n; s++) {
                        arb_store_step *x = &steps[s];
                        int k = fx_k(m, d, p, s);
                        x->step = s, x->n_nodes = m ? 20 : 1, x->tree_depth = m ? 6 : 0;
                        x->stop_fanout = m && k < 6 && (p + s) % 3 ? 2 : 0; /* some walks end at leaves */
                        x->accepted = k, x->committed = k + 1, x->mode = m ? "tree" : "ar";
                        x->category = m >= 3 ? (k == 0 ? 0 : s % 3 == 0 ? 2 : 1) : -1;
                        x->acc_src[1] = fx_acc_pld(m, k), x->acc_src[2] = k - fx_acc_pld(m, k);
                        x->prop_src[1] = fx_prop_pld(m), x->prop_src[2] = fx_prop_tr(m);
                        x->eval_us = 900;
                        gen += k + 1;
                    }
                    for (int i = 0; i < gen && i < 256; i++)
                        ids[i] = 1000 * p + i; /* lossless: the same ids for every method */
                    char pid[32];
                    snprintf(pid, sizeof pid, "P/%02d", p);
                    arb_store_prompt pr = {.prompt_id = pid, .prompt_idx = p, .n_prompt = 50,
                                           .n_gen = gen, .n_calls = n + 1,
                                           .wall_us = (n + 1) * fx_call_us(mdl, m, p),
                                           .cpu_us = (n + 1) * fx_call_us(mdl, m, p) * (m ? 9 : 10) / 10,
                                           .prefill_us = 3 * fx_call_us(mdl, 0, p), /* AR's and every method's */
                                           .n_repeats = 1, .stop = "limit", .lossless = 1, .ids = ids};
                    rc = arb_store_prompt_put(st, key, &pr, steps, n, err);
                }
                if (rc)
                    return rc;
            }
    return ARB_OK;
}

/* n extra one-prompt speculative runs on model tiny-a / humaneval, methods "extra-000"…: enough
   of them overflow a figure or a pivot that once stopped silently at a fixed size. */
static inline int fx_add_methods(arb_store *st, int n, arb_err *err)
{
    int32_t ids[3] = {1, 2, 3};
    arb_store_step step = {.step = 0, .n_nodes = 4, .tree_depth = 2, .accepted = 2, .committed = 3,
                           .mode = "tree", .category = -1, .eval_us = 900};
    int rc = ARB_OK;
    for (int i = 0; i < n && !rc; i++) {
        char key[17], meth[32];
        snprintf(key, sizeof key, "x%015d", i);
        snprintf(meth, sizeof meth, "extra-%03d", i);
        arb_store_run r = {.run_key = key, .config_name = "fixture", .method = meth, .base_method = meth,
                           .drafter = "pld", .topology = "", .sweep_json = "{\"budget\":8}",
                           .model_id = "tiny-a", .model_sha256 = "00", .dataset = "humaneval",
                           .max_new_tokens = 128, .top_p = 1};
        arb_store_prompt pr = {.prompt_id = "P/00", .prompt_idx = 0, .n_prompt = 50, .n_gen = 3,
                               .n_calls = 2, .wall_us = 2000, .n_repeats = 1, .stop = "limit",
                               .lossless = 1, .ids = ids};
        if (!(rc = arb_store_run_put(st, &r, err)))
            rc = arb_store_prompt_put(st, key, &pr, &step, 1, err);
    }
    return rc;
}

/* A fresh temp directory "/tmp/arb_test_<tag>_XXXXXX" (written into dir) holding f.db with the
   unsharded fixture; fx_tmp_close closes the store and removes the directory. */
static inline int fx_tmp_open(const char *tag, char dir[256], arb_store **st, arb_err *err)
{
    snprintf(dir, 256, "/tmp/arb_test_%s_XXXXXX", tag);
    if (!mkdtemp(dir))
        return ARB_ERR(err, ARB_E_IO, "mkdtemp %s failed", dir);
    char path[300];
    snprintf(path, sizeof path, "%s/f.db", dir);
    int rc = arb_store_open(path, st, err);
    return rc ? rc : fx_build(*st, 0, 1, err);
}

static inline int fx_tmp_close(const char *dir, arb_store *st)
{
    arb_store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

#endif
