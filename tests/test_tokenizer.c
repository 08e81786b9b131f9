/* test_tokenizer.c — the tokenizer on llama.cpp's tokenizer test vectors
 * ($ARBOR_DATA/tokenizer-vectors: vocab-only GGUFs with .inp/.out pairs, skipped
 * when ARBOR_DATA is unset) and on small synthetic vocabularies written with
 * tests/gguf_writer.h (merge order, specials, byte fallback, pieces, errors). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_writer.h"
#include "tokenizer.h"

/* ---- the llama.cpp vectors ---- */

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)len + 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    b[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Encode every .inp string of vocab `name` (add_bos false, parse_special as given,
   like test-tokenizer-0) and compare with the .out line; check decode(encode(s)) == s.
   Returns the number of strings checked. */
static int check_vectors(const char *dir, const char *name, bool parse_special) {
    char path[4096], pi[4200], po[4200];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    snprintf(pi, sizeof pi, "%s.inp", path);
    snprintf(po, sizeof po, "%s.out", path);
    arb_err err = {0};
    arb_gguf *g = NULL;
    arb_tokenizer *t = NULL;
    cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_tokenizer_new_from_gguf(g, &t, &err), ARB_OK, "%s: %s", name, err.msg);
    arb_gguf_close(g); /* the tokenizer keeps no pointer into the file */
    size_t ni, no;
    char *inp = slurp(pi, &ni), *outp = slurp(po, &no);
    cr_assert(inp && outp, "%s: missing .inp/.out", name);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sl = sizeof sep - 1;
    int n_str = 0;
    char *p = inp, *o = outp;
    static int32_t ids[8192], want[8192];
    static char dec[1 << 16];
    while (p < inp + ni) {
        char *q = strstr(p, sep);
        size_t len = q ? (size_t)(q - p) : strlen(p);
        char *eol = strchr(o, '\n');
        cr_assert(eol, "%s: .out has fewer lines than .inp has strings", name);
        *eol = 0;
        int nw = 0;
        for (char *s = o; *s;) {
            while (*s == ' ' || *s == '\r') s++;
            if (*s) want[nw++] = (int32_t)strtol(s, &s, 10);
        }
        int n = 0;
        cr_assert_eq(arb_tokenizer_encode(t, p, len, false, parse_special, ids, 8192, &n, &err), ARB_OK, "%s", err.msg);
        bool same = n == nw;
        for (int i = 0; same && i < n; i++) same = ids[i] == want[i];
        if (!same) {
            char got[1024] = "", exp[1024] = "";
            for (int i = 0; i < n && strlen(got) < 1000; i++) snprintf(got + strlen(got), 24, " %d", ids[i]);
            for (int i = 0; i < nw && strlen(exp) < 1000; i++) snprintf(exp + strlen(exp), 24, " %d", want[i]);
            cr_assert_fail("%s: string %d '%.*s'\n got:%s\n exp:%s", name, n_str, (int)len, p, got, exp);
        }
        int dn = arb_tokenizer_decode(t, ids, n, true, dec, sizeof dec);
        cr_assert(dn == (int)len && !memcmp(dec, p, len), "%s: string %d does not round-trip: '%.*s' -> '%.*s'", name,
                  n_str, (int)len, p, dn < 0 ? 0 : dn, dec);
        n_str++;
        p = q ? q + sl : p + len;
        o = eol + 1;
    }
    free(inp);
    free(outp);
    arb_tokenizer_free(t);
    return n_str;
}

static const char *vectors_dir(void) {
    static char dir[4096];
    const char *d = getenv("ARBOR_DATA");
    if (!d || !*d) cr_skip("ARBOR_DATA not set");
    snprintf(dir, sizeof dir, "%s/tokenizer-vectors", d);
    return dir;
}

#define VOCAB_TEST(id, name)                                                                                           \
    Test(tokenizer, vectors_##id) { cr_assert_eq(check_vectors(vectors_dir(), "ggml-vocab-" name, false), 46); }
VOCAB_TEST(gpt2, "gpt-2")
VOCAB_TEST(mpt, "mpt")
VOCAB_TEST(starcoder, "starcoder")
VOCAB_TEST(refact, "refact")
VOCAB_TEST(falcon, "falcon")
VOCAB_TEST(deepseek_llm, "deepseek-llm")
VOCAB_TEST(deepseek_coder, "deepseek-coder")
VOCAB_TEST(llama_spm, "llama-spm")
VOCAB_TEST(phi3, "phi-3")

Test(tokenizer, vectors_bert_unsupported) {
    char path[4200];
    snprintf(path, sizeof path, "%s/ggml-vocab-bert-bge.gguf", vectors_dir());
    arb_err err = {0};
    arb_gguf *g = NULL;
    arb_tokenizer *t = (arb_tokenizer *)&err;
    cr_assert_eq(arb_gguf_open(path, &g, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_tokenizer_new_from_gguf(g, &t, &err), ARB_E_UNSUPPORTED);
    cr_assert_null(t);
    cr_assert(strstr(err.msg, "tokenizer.ggml.model") && strstr(err.msg, "bert"), "%s", err.msg);
    arb_gguf_close(g);
}

/* ---- synthetic vocabularies ---- */

enum { T_NORMAL = 1, T_UNKNOWN = 2, T_CONTROL = 3, T_USER = 4, T_BYTE = 6 };

typedef struct vocab {
    const char *model, *pre;
    const char **tok; const int *type; const float *score; int n;
    const char **merge; int n_merge;
    int bos, eos;     /* -1: key absent */
    int add_bos;      /* -1: key absent */
    bool bad_types;   /* token_type with one entry too few */
} vocab;

static arb_tokenizer *build(const vocab *v, int want_rc, arb_err *err) {
    wbuf b = {0};
    int n_kv = 1 + (v->model != NULL) + (v->pre != NULL) + (v->tok != NULL) + (v->type != NULL) + (v->score != NULL) +
               (v->merge != NULL) + (v->bos >= 0) + (v->eos >= 0) + (v->add_bos >= 0);
    w_header(&b, 3, 0, (uint64_t)n_kv);
    w_kv_str(&b, "general.architecture", "llama");
    if (v->model) w_kv_str(&b, "tokenizer.ggml.model", v->model);
    if (v->pre) w_kv_str(&b, "tokenizer.ggml.pre", v->pre);
    if (v->tok) {
        w_key(&b, "tokenizer.ggml.tokens", 9), w_arr(&b, 8, (uint64_t)v->n);
        for (int i = 0; i < v->n; i++) w_str(&b, v->tok[i]);
    }
    if (v->type) {
        int n = v->n - v->bad_types;
        w_key(&b, "tokenizer.ggml.token_type", 9), w_arr(&b, 5, (uint64_t)n);
        for (int i = 0; i < n; i++) w_u32(&b, (uint32_t)v->type[i]);
    }
    if (v->score) {
        w_key(&b, "tokenizer.ggml.scores", 9), w_arr(&b, 6, (uint64_t)v->n);
        for (int i = 0; i < v->n; i++) w_f32(&b, v->score[i]);
    }
    if (v->merge) {
        w_key(&b, "tokenizer.ggml.merges", 9), w_arr(&b, 8, (uint64_t)v->n_merge);
        for (int i = 0; i < v->n_merge; i++) w_str(&b, v->merge[i]);
    }
    if (v->bos >= 0) w_key(&b, "tokenizer.ggml.bos_token_id", 4), w_u32(&b, (uint32_t)v->bos);
    if (v->eos >= 0) w_key(&b, "tokenizer.ggml.eos_token_id", 4), w_u32(&b, (uint32_t)v->eos);
    if (v->add_bos >= 0) w_key(&b, "tokenizer.ggml.add_bos_token", 7), w_u8(&b, (uint8_t)v->add_bos);
    w_pad(&b, 32);
    arb_gguf *g = NULL;
    arb_tokenizer *t = NULL;
    cr_assert_eq(arb_gguf_open_buffer(b.p, b.n, "synth.gguf", &g, err), ARB_OK, "%s", err->msg);
    int rc = arb_tokenizer_new_from_gguf(g, &t, err);
    cr_assert_eq(rc, want_rc, "rc %d: %s", rc, err->msg);
    if (rc) cr_assert_null(t);
    arb_gguf_close(g);
    free(b.p);
    return t;
}

/* A GPT-2 style vocabulary: the 256 byte symbols (ids 0..255, in the GPT-2 alphabet),
   then merged tokens, then specials. */
static const char *bpe_tok[256 + 9];
static int bpe_type[256 + 9];
static char bpe_bytes[256][3];
static const char *bpe_merges[] = {"h e", "l l", "e l", "he ll", "hell o", "\xc4\xa0 w"};
enum { B_HE = 256, B_LL, B_EL, B_HELL, B_HELLO, B_GW, B_X, B_XY, B_USER };

static arb_tokenizer *bpe_vocab(int add_bos) {
    int n = 0;
    for (int c = 0; c < 256; c++) { /* bytes_to_unicode */
        bool pr = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        uint32_t cp = pr ? (uint32_t)c : 256u + (uint32_t)n++;
        char *o = bpe_bytes[c];
        if (cp < 0x80) o[0] = (char)cp, o[1] = 0;
        else o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F)), o[2] = 0;
        bpe_tok[c] = o;
        bpe_type[c] = T_NORMAL;
    }
    const char *extra[] = {"he", "ll", "el", "hell", "hello", "\xc4\xa0w", "<|x|>", "<|x|>y", "<u>"};
    const int et[] = {1, 1, 1, 1, 1, 1, T_CONTROL, T_CONTROL, T_USER};
    for (int i = 0; i < 9; i++) bpe_tok[256 + i] = extra[i], bpe_type[256 + i] = et[i];
    vocab v = {"gpt2", "gpt-2", bpe_tok, bpe_type, NULL, 265, bpe_merges, 6, B_X, B_XY, add_bos, false};
    arb_err err = {0};
    return build(&v, ARB_OK, &err);
}

static int enc(const arb_tokenizer *t, const char *s, bool bos, bool special, int32_t *ids) {
    int n = 0;
    arb_err err = {0};
    cr_assert_eq(arb_tokenizer_encode(t, s, strlen(s), bos, special, ids, 64, &n, &err), ARB_OK, "%s", err.msg);
    return n;
}

#define ASSERT_IDS(t, s, bos, sp, ...)                                                                                \
    do {                                                                                                               \
        int32_t got_[64], want_[] = {__VA_ARGS__};                                                                     \
        int n_ = enc(t, s, bos, sp, got_);                                                                             \
        cr_assert_eq(n_, (int)(sizeof want_ / sizeof *want_), "'%s': %d ids", s, n_);                                  \
        for (int i_ = 0; i_ < n_; i_++) cr_assert_eq(got_[i_], want_[i_], "'%s': id %d", s, i_);                       \
    } while (0)

Test(tokenizer, bpe_merge_order) {
    arb_tokenizer *t = bpe_vocab(-1);
    cr_assert_eq(arb_tokenizer_kind(t), ARB_TOK_BPE);
    cr_assert_str_eq(arb_tokenizer_pre(t), "gpt-2");
    /* h e l l: "h e" (rank 0) first, then "l l" (1) beats "e l" (2), then "he ll" */
    ASSERT_IDS(t, "hell", false, false, B_HELL);
    ASSERT_IDS(t, "hello", false, false, B_HELLO);
    ASSERT_IDS(t, "hel", false, false, B_HE, 'l');
    ASSERT_IDS(t, "ell", false, false, 'e', B_LL); /* "l l" outranks "e l" */
    ASSERT_IDS(t, "hello world", false, false, B_HELLO, B_GW, 'o', 'r', 'l', 'd');
    arb_tokenizer_free(t);
}

Test(tokenizer, specials) {
    arb_tokenizer *t = bpe_vocab(-1);
    /* longest special first: "<|x|>y" wins over "<|x|>" at the first site */
    ASSERT_IDS(t, "h<|x|>y<|x|>e", false, true, 'h', B_XY, B_X, 'e');
    /* parse_special off: control texts are plain text; user-defined ones still match */
    int32_t ids[64];
    int n = enc(t, "<|x|>", false, false, ids);
    cr_assert_eq(n, 5, "'<|x|>' as text: < | x | >");
    ASSERT_IDS(t, "h<u>e", false, false, 'h', B_USER, 'e');
    cr_assert(arb_tokenizer_is_eog(t, B_XY), "EOS is end-of-generation");
    cr_assert_not(arb_tokenizer_is_eog(t, B_USER));
    cr_assert(arb_tokenizer_is_control(t, B_X));
    cr_assert_eq(arb_tokenizer_bos(t), B_X);
    cr_assert_eq(arb_tokenizer_eos(t), B_XY);
    /* gpt2 models do not add BOS unless the file says so */
    cr_assert_not(arb_tokenizer_add_bos(t));
    ASSERT_IDS(t, "he", true, false, B_HE);
    arb_tokenizer_free(t);
    t = bpe_vocab(1);
    cr_assert(arb_tokenizer_add_bos(t));
    ASSERT_IDS(t, "he", true, false, B_X, B_HE);
    ASSERT_IDS(t, "he", false, false, B_HE);
    arb_tokenizer_free(t);
}

Test(tokenizer, pieces_and_decode) {
    arb_tokenizer *t = bpe_vocab(-1);
    char buf[16];
    cr_assert_eq(arb_tokenizer_piece(t, B_GW, buf, sizeof buf), 2);
    cr_assert(!memcmp(buf, " w", 2), "GPT-2 'Ġ' decodes to a space");
    cr_assert_eq(arb_tokenizer_piece(t, B_XY, buf, sizeof buf), 6);
    cr_assert(!memcmp(buf, "<|x|>y", 6), "control tokens give their text");
    cr_assert_eq(arb_tokenizer_piece(t, B_HELLO, buf, 2), 5, "returns the full length when cap is short");
    cr_assert(!memcmp(buf, "he", 2));
    cr_assert_eq(arb_tokenizer_piece(t, 265, buf, sizeof buf), ARB_E_RANGE);
    cr_assert_eq(arb_tokenizer_piece(t, -1, buf, sizeof buf), ARB_E_RANGE);
    cr_assert_str_eq(arb_tokenizer_token_text(t, B_GW), "\xc4\xa0w");
    cr_assert_eq(arb_tokenizer_find(t, "hello", 5), B_HELLO);
    cr_assert_eq(arb_tokenizer_find(t, "hellx", 5), -1);
    /* every byte round-trips, and invalid UTF-8 becomes U+FFFD as in llama.cpp */
    int32_t ids[64];
    char s[] = "a\x01\x7f\xc3\xa9 \xe6\x97\xa5!";
    int n = enc(t, s, false, false, ids);
    char dec[64];
    cr_assert_eq(arb_tokenizer_decode(t, ids, n, true, dec, sizeof dec), (int)strlen(s));
    cr_assert_str_eq(dec, s);
    n = enc(t, "\xff", false, false, ids);
    cr_assert_eq(arb_tokenizer_decode(t, ids, n, true, dec, sizeof dec), 3);
    cr_assert_str_eq(dec, "\xef\xbf\xbd");
    /* a short output buffer: ids written up to cap, *n_out is the total */
    arb_err err = {0};
    int32_t two[2];
    cr_assert_eq(arb_tokenizer_encode(t, "hello world", 11, false, false, two, 2, &n, &err), ARB_OK);
    cr_assert_eq(n, 6);
    cr_assert(two[0] == B_HELLO && two[1] == B_GW);
    cr_assert_eq(arb_tokenizer_encode(t, "", 0, false, false, two, 2, &n, &err), ARB_OK);
    cr_assert_eq(n, 0);
    arb_tokenizer_free(t);
}

/* SentencePiece: ▁-escaped spaces, space prefix, scores, <0xXX> byte fallback. */
Test(tokenizer, spm) {
    static const char *tok[3 + 256 + 8];
    static int ty[3 + 256 + 8];
    static float sc[3 + 256 + 8];
    static char names[256][8];
    tok[0] = "<unk>", ty[0] = T_UNKNOWN, tok[1] = "<s>", ty[1] = T_CONTROL, tok[2] = "</s>", ty[2] = T_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(names[b], sizeof names[b], "<0x%02X>", b);
        tok[3 + b] = names[b], ty[3 + b] = T_BYTE;
    }
    const char *words[] = {"\xe2\x96\x81", "h", "e", "l", "o", "\xe2\x96\x81h", "ll", "\xe2\x96\x81hello"};
    const float ws[] = {-1, -2, -2, -2, -2, -3, -4, -5};
    for (int i = 0; i < 8; i++) tok[259 + i] = words[i], ty[259 + i] = T_NORMAL, sc[259 + i] = ws[i];
    enum { S_SP = 259, S_H, S_E, S_L, S_O, S_SPH, S_LL, S_HELLO };
    vocab v = {"llama", NULL, tok, ty, sc, 267, NULL, 0, -1, -1, -1, false};
    arb_err err = {0};
    arb_tokenizer *t = build(&v, ARB_OK, &err);
    cr_assert_eq(arb_tokenizer_kind(t), ARB_TOK_SPM);
    cr_assert(arb_tokenizer_add_bos(t), "SPM defaults to add_bos with BOS id 1");
    /* "▁hello" exists but "▁hell"/"ello" do not: merging stops at ▁h e ll o */
    ASSERT_IDS(t, "hello", true, false, 1, S_SPH, S_E, S_LL, S_O);
    ASSERT_IDS(t, "he lo", false, false, S_SPH, S_E, S_SP, S_L, S_O);
    /* 'é' (C3 A9) is not in the vocabulary: bytes */
    ASSERT_IDS(t, "h\xc3\xa9", false, false, S_SPH, 3 + 0xC3, 3 + 0xA9);
    /* a raw fragment after a special token gets its own space prefix */
    ASSERT_IDS(t, "<s>h", false, true, 1, S_SPH);
    char buf[8];
    cr_assert_eq(arb_tokenizer_piece(t, S_SPH, buf, sizeof buf), 2);
    cr_assert(!memcmp(buf, " h", 2));
    cr_assert_eq(arb_tokenizer_piece(t, 3 + 0x41, buf, sizeof buf), 1);
    cr_assert_eq(buf[0], 'A');
    int32_t ids[64];
    int n = enc(t, "he l\xc3\xa9", false, false, ids);
    char dec[32];
    cr_assert_eq(arb_tokenizer_decode(t, ids, n, true, dec, sizeof dec), 6);
    cr_assert_str_eq(dec, "he l\xc3\xa9");
    arb_tokenizer_free(t);
}

Test(tokenizer, errors) {
    static const char *tok[] = {"a", "b"};
    static const int ty[] = {1, 1};
    arb_err err = {0};
    vocab v = {"gpt2", "gpt-2", NULL, NULL, NULL, 2, NULL, 0, -1, -1, -1, false};
    build(&v, ARB_E_NOTFOUND, &err); /* no tokens */
    cr_assert(strstr(err.msg, "tokenizer.ggml.tokens"), "%s", err.msg);
    v.tok = tok, v.type = ty;
    build(&v, ARB_E_NOTFOUND, &err); /* gpt2 without merges */
    cr_assert(strstr(err.msg, "tokenizer.ggml.merges"), "%s", err.msg);
    static const char *merges[] = {"a b"};
    v.merge = merges, v.n_merge = 1, v.pre = "no-such-pre";
    build(&v, ARB_E_UNSUPPORTED, &err);
    cr_assert(strstr(err.msg, "no-such-pre"), "%s", err.msg);
    v.pre = "smollm", v.bad_types = true;
    build(&v, ARB_E_FORMAT, &err);
    cr_assert(strstr(err.msg, "tokenizer.ggml.token_type"), "%s", err.msg);
    v.bad_types = false, v.model = "t5";
    build(&v, ARB_E_UNSUPPORTED, &err);
    cr_assert(strstr(err.msg, "t5"), "%s", err.msg);
    v.model = NULL;
    build(&v, ARB_E_NOTFOUND, &err);
    cr_assert(strstr(err.msg, "tokenizer.ggml.model"), "%s", err.msg);
    v.model = "gpt2";
    arb_tokenizer *t = build(&v, ARB_OK, &err);
    int n;
    cr_assert_eq(arb_tokenizer_encode(t, NULL, 3, false, false, NULL, 0, &n, &err), ARB_E_INVAL);
    cr_assert_eq(arb_tokenizer_encode(t, "ab", 2, false, false, NULL, 4, &n, &err), ARB_E_INVAL);
    cr_assert_eq(arb_tokenizer_encode(t, "ab", 2, false, false, NULL, 0, &n, &err), ARB_OK, "counting only");
    cr_assert_eq(n, 2, "merged 'ab' is not a token: single-byte fallback, as llama.cpp");
    arb_tokenizer_free(t);
    arb_tokenizer_free(NULL);
}

/* Random valid UTF-8 (all planes, controls, spaces, specials' texts) round-trips
   through the synthetic BPE vocabulary; random bytes never fail or crash. */
Test(tokenizer, random_roundtrip) {
    arb_tokenizer *t = bpe_vocab(-1);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    static char s[4096], dec[4096];
    static int32_t ids[4096];
    arb_err err = {0};
    for (int iter = 0; iter < 100; iter++) {
        int len = 0;
        while (len < 4000) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t r = (uint32_t)(x >> 33), cp;
            switch (r % 6) {
            case 0: cp = r % 0x80; break;                      /* ASCII incl. controls */
            case 1: cp = " \t\n\r'sl0"[r % 8]; break;          /* separators, contractions, digits */
            case 2: cp = 0x80 + r % 0x780; break;              /* 2-byte */
            case 3: cp = 0x800 + r % 0xF800; break;            /* 3-byte */
            case 4: cp = 0x10000 + r % 0x100000; break;        /* 4-byte */
            default: cp = "<|x>yu"[r % 6]; break;              /* pieces of special texts */
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'a';        /* no surrogates */
            if (cp < 0x80) s[len++] = (char)cp;
            else if (cp < 0x800) s[len++] = (char)(0xC0 | (cp >> 6)), s[len++] = (char)(0x80 | (cp & 0x3F));
            else if (cp < 0x10000)
                s[len++] = (char)(0xE0 | (cp >> 12)), s[len++] = (char)(0x80 | ((cp >> 6) & 0x3F)),
                s[len++] = (char)(0x80 | (cp & 0x3F));
            else
                s[len++] = (char)(0xF0 | (cp >> 18)), s[len++] = (char)(0x80 | ((cp >> 12) & 0x3F)),
                s[len++] = (char)(0x80 | ((cp >> 6) & 0x3F)), s[len++] = (char)(0x80 | (cp & 0x3F));
        }
        int n = 0;
        bool sp = iter & 1;
        cr_assert_eq(arb_tokenizer_encode(t, s, (size_t)len, false, sp, ids, 4096, &n, &err), ARB_OK, "%s", err.msg);
        cr_assert_leq(n, 4096);
        int dn = arb_tokenizer_decode(t, ids, n, true, dec, sizeof dec);
        cr_assert(dn == len && !memcmp(dec, s, (size_t)len), "iteration %d does not round-trip", iter);
        for (int i = 0; i < len; i++) s[i] = (char)(x >> (i % 56)); /* arbitrary bytes */
        cr_assert_eq(arb_tokenizer_encode(t, s, (size_t)len, true, sp, ids, 4096, &n, &err), ARB_OK, "%s", err.msg);
    }
    arb_tokenizer_free(t);
}
