/* test_tokenizer_model.c — the tokenizer and chat template of the real default model
 * (SmolLM2-135M-Instruct): ids against tests/fixtures/tokenizer_smollm2.{inp,out}
 * (HF tokenizers, see tokenizer_smollm2.md) and a ChatML prompt against llama.cpp's
 * ids. Skips cleanly when the model is not fetched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "modelfetch.h"
#include "tokenizer.h"

static arb_gguf *g_gguf;
static arb_tokenizer *g_tok;

static void setup(void) {
    char path[4096];
    arb_err err = {0};
    if (arb_model_resolve("default", path, sizeof path, &err) != ARB_OK) cr_skip("default model not available: %s", err.msg);
    cr_assert_eq(arb_gguf_open(path, &g_gguf, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_tokenizer_new_from_gguf(g_gguf, &g_tok, &err), ARB_OK, "%s", err.msg);
}
static void teardown(void) {
    arb_tokenizer_free(g_tok);
    arb_gguf_close(g_gguf);
    g_tok = NULL, g_gguf = NULL;
}

TestSuite(tokenizer_model, .init = setup, .fini = teardown);

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)len + 1);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    b[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return b;
}

Test(tokenizer_model, metadata) {
    cr_assert_eq(arb_tokenizer_n_vocab(g_tok), 49152);
    cr_assert_eq(arb_tokenizer_kind(g_tok), ARB_TOK_BPE);
    cr_assert_str_eq(arb_tokenizer_pre(g_tok), "smollm");
    cr_assert_eq(arb_tokenizer_bos(g_tok), 1);
    cr_assert_eq(arb_tokenizer_eos(g_tok), 2);
    cr_assert_eq(arb_tokenizer_eot(g_tok), 2, "<|im_end|>");
    cr_assert_not(arb_tokenizer_add_bos(g_tok), "add_bos_token = false in the GGUF");
    cr_assert(arb_tokenizer_is_eog(g_tok, 0), "<|endoftext|>");
    cr_assert(arb_tokenizer_is_eog(g_tok, 2), "<|im_end|>");
    cr_assert_not(arb_tokenizer_is_eog(g_tok, 1), "<|im_start|>");
    cr_assert_not(arb_tokenizer_is_eog(g_tok, 504));
}

Test(tokenizer_model, hf_reference_ids) {
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    if (!root) cr_skip("ARBOR_SOURCE_ROOT not set (run through meson test)");
    char pi[4096], po[4096];
    snprintf(pi, sizeof pi, "%s/tests/fixtures/tokenizer_smollm2.inp", root);
    snprintf(po, sizeof po, "%s/tests/fixtures/tokenizer_smollm2.out", root);
    size_t ni, no;
    char *inp = slurp(pi, &ni), *outp = slurp(po, &no);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *p = inp, *o = outp;
    int n_str = 0;
    while (p < inp + ni) {
        char *q = strstr(p, sep);
        cr_assert(q, "string %d: no separator", n_str);
        char *eol = strchr(o, '\n');
        cr_assert(eol, "fewer .out lines than strings");
        *eol = 0;
        int32_t want[512], got[512];
        int nw = 0, n = 0;
        for (char *s = o; *s;) {
            while (*s == ' ') s++;
            if (*s) want[nw++] = (int32_t)strtol(s, &s, 10);
        }
        arb_err err = {0};
        size_t len = (size_t)(q - p);
        cr_assert_eq(arb_tokenizer_encode(g_tok, p, len, false, true, got, 512, &n, &err), ARB_OK, "%s", err.msg);
        cr_assert_eq(n, nw, "string %d '%.*s': %d ids, want %d", n_str, (int)len, p, n, nw);
        for (int i = 0; i < n; i++) cr_assert_eq(got[i], want[i], "string %d '%.*s': id %d", n_str, (int)len, p, i);
        char dec[4096];
        int dn = arb_tokenizer_decode(g_tok, got, n, true, dec, sizeof dec);
        cr_assert(dn == (int)len && !memcmp(dec, p, len), "string %d does not round-trip", n_str);
        n_str++;
        p = q + sizeof sep - 1;
        o = eol + 1;
    }
    cr_assert_eq(n_str, 24);
    free(inp);
    free(outp);
}

Test(tokenizer_model, parse_special_off) {
    int32_t ids[64];
    int n;
    arb_err err = {0};
    cr_assert_eq(arb_tokenizer_encode(g_tok, "<|im_end|>", 10, false, true, ids, 64, &n, &err), ARB_OK);
    cr_assert(n == 1 && ids[0] == 2);
    cr_assert_eq(arb_tokenizer_encode(g_tok, "<|im_end|>", 10, false, false, ids, 64, &n, &err), ARB_OK);
    cr_assert_gt(n, 1, "as text, not the control token");
    for (int i = 0; i < n; i++) cr_assert_neq(ids[i], 2);
}

/* Chat template from the GGUF + tokenizer == llama.cpp c392e50's ids for this prompt
   (llama_tokenize, add_special=false, parse_special=true). */
Test(tokenizer_model, chat_prompt_matches_llama_cpp) {
    static const int32_t want[] = {1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018,
                                   411, 407, 19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47,
                                   16374, 13099, 638, 357, 2163, 260, 3575, 30, 2, 198, 1, 520, 9531, 198};
    const arb_chat_msg m[] = {{"user", "What is the capital of France? Explain briefly how it became the capital."}};
    char buf[1024];
    size_t len;
    arb_err err = {0};
    cr_assert_eq(arb_chat_apply_tmpl(NULL, g_gguf, m, 1, true, buf, sizeof buf, &len, &err), ARB_OK, "%s", err.msg);
    int32_t ids[128];
    int n;
    cr_assert_eq(arb_tokenizer_encode(g_tok, buf, len, true, true, ids, 128, &n, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(n, (int)(sizeof want / sizeof *want), "got %d ids", n);
    for (int i = 0; i < n; i++) cr_assert_eq(ids[i], want[i], "id %d", i);
}

Test(tokenizer_model, chat_multi_turn) {
    const arb_chat_msg m[] = {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Why?"}};
    char buf[1024];
    size_t len;
    arb_err err = {0};
    cr_assert_eq(arb_chat_apply_tmpl(NULL, g_gguf, m, 3, true, buf, sizeof buf, &len, &err), ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
                          "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
                          "<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
}
