/* tokenizer.c — vocabulary from GGUF metadata, special-token partitioning, BPE
 * and SentencePiece merging, token pieces. Pre-tokenizers: tokenizer_pre.c.
 *
 * The semantics are llama.cpp's (llama-vocab.cpp at c392e50, the commit of the
 * test vectors in $ARBOR_DATA/tokenizer-vectors), re-implemented in C:
 *  - special tokens (CONTROL, UNKNOWN when parse_special; USER_DEFINED always) are
 *    cut out of the raw text first, longest text first, each over all fragments;
 *  - byte-level BPE ("gpt2"): invalid UTF-8 becomes U+FFFD, pre-tokenize, map bytes
 *    to the GPT-2 printable alphabet, merge the lowest-rank pair first (ties: leftmost);
 *  - SentencePiece ("llama"): ' ' -> U+2581, a space prefix before each raw fragment
 *    that follows a special token or starts the text (add_space_prefix), merge the
 *    highest-score pair whose concatenation is a token, unknown chars -> <0xXX>.
 * Everything is copied out of the GGUF: the tokenizer does not point into it.
 */
#include "tokenizer.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_int.h"
#include "unicode.h"

/* ---- hashing ---- */

static uint32_t fnv(uint32_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}
#define FNV0 2166136261u

int32_t arb_tokenizer_find(const arb_tokenizer *t, const char *s, size_t n) {
    for (uint32_t i = fnv(FNV0, s, n) & t->vmask;; i = (i + 1) & t->vmask) {
        uint32_t v = t->vslot[i];
        if (!v) return -1;
        if (t->text_len[v - 1] == n && !memcmp(t->text + t->text_off[v - 1], s, n)) return (int32_t)v - 1;
    }
}

int arb_tokenizer_merge_rank(const arb_tokenizer *t, const char *l, size_t nl, const char *r, size_t nr) {
    if (!t->mslot) return -1;
    uint32_t h = fnv(fnv(fnv(FNV0, l, nl), " ", 1), r, nr);
    for (uint32_t i = h & t->mmask;; i = (i + 1) & t->mmask) {
        uint32_t v = t->mslot[i];
        if (!v) return -1;
        const char *m = t->merge + t->merge_off[v - 1];
        if (t->merge_split[v - 1] == nl && !memcmp(m, l, nl) && !memcmp(m + nl + 1, r, nr) && m[nl + 1 + nr] == 0)
            return (int)v - 1;
    }
}

static uint32_t pow2_above(uint64_t n) {
    uint32_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
}

/* ---- loading ---- */

typedef struct pre_name { const char *name; arb_pre pre; bool llama3; } pre_name; /* llama3: ignore_merges + add_bos */
static const pre_name k_pre_names[] = {
    {"default", ARB_PRE_DEFAULT, false}, {"llama3", ARB_PRE_LLAMA3, true}, {"llama-v3", ARB_PRE_LLAMA3, true},
    {"llama-bpe", ARB_PRE_LLAMA3, true}, {"falcon3", ARB_PRE_LLAMA3, true}, {"dbrx", ARB_PRE_LLAMA3, false},
    {"smaug-bpe", ARB_PRE_LLAMA3, false}, {"chatglm-bpe", ARB_PRE_LLAMA3, false},
    {"deepseek-llm", ARB_PRE_DEEPSEEK_LLM, false}, {"deepseek-coder", ARB_PRE_DEEPSEEK_CODER, false},
    {"falcon", ARB_PRE_FALCON, false}, {"mpt", ARB_PRE_GPT2, false}, {"gpt-2", ARB_PRE_GPT2, false}, {"phi-2", ARB_PRE_GPT2, false},
    {"jina-es", ARB_PRE_GPT2, false}, {"jina-de", ARB_PRE_GPT2, false}, {"gigachat", ARB_PRE_GPT2, false},
    {"jina-v1-en", ARB_PRE_GPT2, false}, {"jina-v2-es", ARB_PRE_GPT2, false}, {"jina-v2-de", ARB_PRE_GPT2, false},
    {"jina-v2-code", ARB_PRE_GPT2, false}, {"roberta-bpe", ARB_PRE_GPT2, false}, {"olmo", ARB_PRE_GPT2, false},
    {"jais", ARB_PRE_GPT2, false}, {"starcoder", ARB_PRE_STARCODER, false}, {"refact", ARB_PRE_STARCODER, false},
    {"command-r", ARB_PRE_STARCODER, false}, {"smollm", ARB_PRE_STARCODER, false}, {"codeshell", ARB_PRE_STARCODER, false},
    {"exaone", ARB_PRE_STARCODER, false}, {"minerva-7b", ARB_PRE_STARCODER, false}, {"qwen2", ARB_PRE_QWEN2, false},
    {"deepseek-r1-qwen", ARB_PRE_QWEN2, false}, {"stablelm2", ARB_PRE_QWEN2, false}, {"megrez", ARB_PRE_QWEN2, false},
};

static void init_byte_map(arb_tokenizer *t) {
    int n = 0;
    for (int i = 0; i < 324; i++) t->byte_dec[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        uint32_t cp = printable ? (uint32_t)b : 256u + (uint32_t)n++;
        int k = arb_utf8_encode(cp, t->byte_enc[b]);
        t->byte_enc[b][k] = 0;
        t->byte_dec[cp] = (int16_t)b;
    }
}

static int opt_id(const arb_gguf *g, const char *key, int n_vocab, int32_t *id) {
    const arb_gguf_value *v = arb_gguf_find(g, key);
    if (!v) return ARB_OK;
    uint64_t u;
    arb_err e = {0};
    if (arb_gguf_get_u64(g, key, &u, &e) != ARB_OK) return ARB_E_FORMAT;
    if (u < (uint64_t)n_vocab) *id = (int32_t)u; /* out of range: keep the default, like llama.cpp */
    return ARB_OK;
}

static void opt_bool(const arb_gguf *g, const char *key, bool *b) {
    bool v;
    if (arb_gguf_find(g, key) && arb_gguf_get_bool(g, key, &v, NULL) == ARB_OK) *b = v;
}

static const char *tok_text(const arb_tokenizer *t, int32_t id) { return t->text + t->text_off[id]; }

static int load_vocab(arb_tokenizer *t, const arb_gguf *g, arb_err *err) {
    const arb_gguf_value *tv = arb_gguf_find(g, "tokenizer.ggml.tokens");
    if (!tv) return ARB_ERR(err, ARB_E_NOTFOUND, "tokenizer.ggml.tokens: missing");
    if (tv->type != ARB_GGUF_ARRAY || tv->v.arr.elem_type != ARB_GGUF_STRING)
        return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.tokens: not an array of strings");
    if (tv->v.arr.n == 0 || tv->v.arr.n > (1u << 24))
        return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.tokens: %llu entries", (unsigned long long)tv->v.arr.n);
    const int n = t->n_vocab = (int)tv->v.arr.n;
    const arb_gguf_value *ty = arb_gguf_find(g, "tokenizer.ggml.token_type");
    const arb_gguf_value *sc = arb_gguf_find(g, "tokenizer.ggml.scores");
    if (ty && (ty->type != ARB_GGUF_ARRAY || ty->v.arr.n != (uint64_t)n))
        return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.token_type: not an array of %d", n);
    if (sc && (sc->type != ARB_GGUF_ARRAY || sc->v.arr.n != (uint64_t)n))
        return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.scores: not an array of %d", n);
    uint64_t total = 0;
    arb_gguf_str s;
    for (int i = 0; i < n; i++) {
        if (arb_gguf_arr_str(g, tv, (uint64_t)i, &s)) return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.tokens[%d]: unreadable", i);
        total += (s.len ? s.len : 24) + 1;
    }
    if (total > UINT32_MAX) return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.tokens: %llu bytes", (unsigned long long)total);
    t->text = malloc(total);
    t->text_off = malloc(sizeof(uint32_t) * (size_t)n);
    t->text_len = malloc(sizeof(uint32_t) * (size_t)n);
    t->attr = malloc(sizeof(uint16_t) * (size_t)n);
    t->score = calloc((size_t)n, sizeof(float));
    t->vmask = pow2_above((uint64_t)n) - 1;
    t->vslot = calloc((size_t)t->vmask + 1, sizeof(uint32_t));
    if (!t->text || !t->text_off || !t->text_len || !t->attr || !t->score || !t->vslot)
        return ARB_ERR(err, ARB_E_NOMEM, "tokenizer: out of memory for %d tokens", n);
    uint32_t off = 0;
    for (int i = 0; i < n; i++) {
        arb_gguf_arr_str(g, tv, (uint64_t)i, &s);
        t->text_off[i] = off;
        if (s.len) {
            memcpy(t->text + off, s.ptr, s.len);
            t->text_len[i] = (uint32_t)s.len;
        } else { /* as llama.cpp: an empty token gets a placeholder text */
            t->text_len[i] = (uint32_t)snprintf(t->text + off, 25, "[EMPTY_%d]", i);
        }
        off += t->text_len[i];
        t->text[off++] = 0;
        int64_t ty_v = 1;
        double sc_v = 0;
        if (ty && arb_gguf_arr_i64(ty, (uint64_t)i, &ty_v)) return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.token_type[%d]: not an integer", i);
        if (sc && arb_gguf_arr_f64(sc, (uint64_t)i, &sc_v)) return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.scores[%d]: not a number", i);
        static const uint16_t k_attr[7] = {A_UNDEF, A_NORMAL, A_UNKNOWN, A_CONTROL, A_USER, A_UNUSED, A_BYTE};
        t->attr[i] = ty_v >= 0 && ty_v <= 6 ? k_attr[ty_v] : A_UNDEF;
        t->score[i] = (float)sc_v;
        /* insert; a duplicate text maps to the later id (llama.cpp's token_to_id[word] = i) */
        const char *w = tok_text(t, i);
        uint32_t j = fnv(FNV0, w, t->text_len[i]) & t->vmask;
        for (;; j = (j + 1) & t->vmask) {
            uint32_t v = t->vslot[j];
            if (!v || (t->text_len[v - 1] == t->text_len[i] && !memcmp(tok_text(t, v - 1), w, t->text_len[i]))) break;
        }
        t->vslot[j] = (uint32_t)i + 1;
    }
    return ARB_OK;
}

static int load_merges(arb_tokenizer *t, const arb_gguf *g, arb_err *err) {
    const arb_gguf_value *mv = arb_gguf_find(g, "tokenizer.ggml.merges");
    if (!mv) return ARB_ERR(err, ARB_E_NOTFOUND, "tokenizer.ggml.merges: missing (required for model gpt2)");
    if (mv->type != ARB_GGUF_ARRAY || mv->v.arr.elem_type != ARB_GGUF_STRING || mv->v.arr.n > (1u << 24))
        return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.merges: not an array of strings");
    const int n = t->n_merges = (int)mv->v.arr.n;
    uint64_t total = 0;
    arb_gguf_str s;
    for (int i = 0; i < n; i++) {
        if (arb_gguf_arr_str(g, mv, (uint64_t)i, &s)) return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.merges[%d]: unreadable", i);
        total += s.len + 1;
    }
    if (total > UINT32_MAX) return ARB_ERR(err, ARB_E_FORMAT, "tokenizer.ggml.merges: too large");
    t->merge = malloc(total ? total : 1);
    t->merge_off = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    t->merge_split = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    t->mmask = pow2_above((uint64_t)n) - 1;
    t->mslot = calloc((size_t)t->mmask + 1, sizeof(uint32_t));
    if (!t->merge || !t->merge_off || !t->merge_split || !t->mslot)
        return ARB_ERR(err, ARB_E_NOMEM, "tokenizer: out of memory for %d merges", n);
    uint32_t off = 0;
    for (int i = 0; i < n; i++) {
        arb_gguf_arr_str(g, mv, (uint64_t)i, &s);
        char *m = t->merge + off;
        memcpy(m, s.ptr, s.len);
        m[s.len] = 0;
        t->merge_off[i] = off;
        off += (uint32_t)s.len + 1;
        /* split at the first space after position 0 (a merge may start with a space) */
        const char *sp = s.len > 1 ? memchr(m + 1, ' ', s.len - 1) : NULL;
        if (!sp) continue; /* malformed entry: never matches, like llama.cpp's ("","") pair */
        uint32_t split = (uint32_t)(sp - m);
        t->merge_split[i] = split;
        uint32_t j = fnv(FNV0, m, s.len) & t->mmask;
        for (;; j = (j + 1) & t->mmask) {
            uint32_t v = t->mslot[j];
            if (!v) break;
            if (t->merge_split[v - 1] == split && !strcmp(t->merge + t->merge_off[v - 1], m)) break;
        }
        if (!t->mslot[j]) t->mslot[j] = (uint32_t)i + 1; /* duplicates: the first rank wins */
    }
    return ARB_OK;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* EOT/EOG detection by token text, as llama.cpp does (its converter does not
   always write tokenizer.ggml.eot_token_id). */
static const char *const k_eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                          "<EOT>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"};
static const char *const k_eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                          "<|eom_id|>", "<EOT>"};

static void add_eog(arb_tokenizer *t, int32_t id) {
    if (id < 0 || t->n_eog >= (int)(sizeof t->eog / sizeof t->eog[0])) return;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return;
    t->eog[t->n_eog++] = id;
}

/* A control-looking token found by its text becomes CONTROL whatever its GGUF type
   (llama.cpp does the same), so that parse_special governs it. */
static int32_t find_control(arb_tokenizer *t, const char *text) {
    int32_t id = arb_tokenizer_find(t, text, strlen(text));
    if (id >= 0) t->attr[id] = (uint16_t)((t->attr[id] & ~0x7F) | A_CONTROL);
    return id;
}

static int build_specials(arb_tokenizer *t, const arb_gguf *g, arb_err *err) {
    if (t->eot < 0)
        for (size_t i = 0; i < sizeof k_eot_texts / sizeof *k_eot_texts && t->eot < 0; i++)
            t->eot = find_control(t, k_eot_texts[i]);
    if (t->eom < 0) t->eom = find_control(t, "<|eom_id|>");
    for (size_t i = 0; i < sizeof k_eog_texts / sizeof *k_eog_texts; i++) add_eog(t, find_control(t, k_eog_texts[i]));
    add_eog(t, t->eos);
    add_eog(t, t->eot);
    add_eog(t, t->eom);

    /* longest text first (ties: lower id first; llama.cpp leaves ties unspecified) */
    uint64_t *key = malloc(sizeof(uint64_t) * (size_t)t->n_vocab);
    t->special = malloc(sizeof(int32_t) * (size_t)t->n_vocab);
    if (!key || !t->special) {
        free(key);
        return ARB_ERR(err, ARB_E_NOMEM, "tokenizer: out of memory");
    }
    for (int i = 0; i < t->n_vocab; i++)
        if (t->attr[i] & (A_CONTROL | A_USER | A_UNKNOWN))
            key[t->n_special++] = ((uint64_t)(UINT32_MAX - t->text_len[i]) << 32) | (uint32_t)i;
    qsort(key, (size_t)t->n_special, sizeof *key, cmp_u64);
    for (int i = 0; i < t->n_special; i++) t->special[i] = (int32_t)(key[i] & UINT32_MAX);
    free(key);

    /* Phi-3: special tokens eat the whitespace after them (llama.cpp's per-model rule). */
    arb_gguf_str name;
    char lname[128] = "";
    if (arb_gguf_find(g, "general.name") && arb_gguf_get_str(g, "general.name", &name, NULL) == ARB_OK) {
        arb_gguf_str_copy(name, lname, sizeof lname);
        for (char *p = lname; *p; p++) *p = (char)tolower((unsigned char)*p);
    }
    if (strstr(lname, "phi-3") || strstr(lname, "phi3")) {
        for (int i = 0; i < t->n_special; i++) t->attr[t->special[i]] |= A_RSTRIP;
        int32_t id = arb_tokenizer_find(t, "</s>", 4);
        if (id >= 0) t->attr[id] |= A_RSTRIP;
        static const char *const k_no[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (int i = 0; i < 3; i++)
            if ((id = arb_tokenizer_find(t, k_no[i], strlen(k_no[i]))) >= 0) t->attr[id] &= (uint16_t)~A_RSTRIP;
    }
    return ARB_OK;
}

static int build_pieces(arb_tokenizer *t, arb_err *err) {
    size_t cap = 0;
    for (int i = 0; i < t->n_vocab; i++) cap += t->text_len[i];
    const size_t nv = (uint32_t)t->n_vocab; /* 1..2^24, checked at load */
    t->piece = malloc(cap + 1);
    t->piece_off = malloc(sizeof(uint32_t) * nv);
    t->piece_len = calloc(nv, sizeof(uint32_t));
    if (!t->piece || !t->piece_off || !t->piece_len) return ARB_ERR(err, ARB_E_NOMEM, "tokenizer: out of memory");
    uint32_t off = 0;
    for (int i = 0; i < t->n_vocab; i++) {
        const char *s = tok_text(t, i);
        const uint32_t n = t->text_len[i];
        char *o = t->piece + off;
        uint32_t k = 0;
        t->piece_off[i] = off;
        if (t->attr[i] & (A_CONTROL | A_UNKNOWN | A_USER)) {
            memcpy(o, s, n);
            k = n;
        } else if (t->kind == ARB_TOK_SPM && (t->attr[i] & A_NORMAL)) {
            for (uint32_t j = 0; j < n; j++) { /* U+2581 -> ' ' (never longer) */
                if (j + 2 < n && !memcmp(s + j, "\xe2\x96\x81", 3)) { o[k++] = ' '; j += 2; }
                else o[k++] = s[j];
            }
        } else if (t->kind == ARB_TOK_SPM && (t->attr[i] & A_BYTE)) {
            if (n == 6 && !memcmp(s, "<0x", 3)) o[k++] = (char)strtol(s + 3, NULL, 16);
        } else if (t->kind == ARB_TOK_BPE && (t->attr[i] & A_NORMAL)) {
            for (size_t j = 0; j < n;) { /* GPT-2 alphabet back to bytes (never longer) */
                size_t adv;
                uint32_t cp = arb_utf8_decode(s + j, n - j, &adv);
                if (cp < 324 && t->byte_dec[cp] >= 0) o[k++] = (char)t->byte_dec[cp];
                else { memcpy(o + k, s + j, adv); k += (uint32_t)adv; } /* not in the alphabet: keep */
                j += adv;
            }
        } /* UNUSED / UNDEFINED (and BYTE in BPE vocabularies): empty piece, as llama.cpp */
        t->piece_len[i] = k;
        off += k;
    }
    return ARB_OK;
}

int arb_tokenizer_new_from_gguf(const arb_gguf *g, arb_tokenizer **out, arb_err *err) {
    *out = NULL;
    arb_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return ARB_ERR(err, ARB_E_NOMEM, "tokenizer: out of memory");
    int rc;
    arb_gguf_str model = {0}, pre = {0};
    if (!arb_gguf_find(g, "tokenizer.ggml.model")) {
        rc = ARB_ERR(err, ARB_E_NOTFOUND, "tokenizer.ggml.model: missing");
        goto fail;
    }
    if ((rc = arb_gguf_get_str(g, "tokenizer.ggml.model", &model, err))) goto fail;
    if (arb_gguf_find(g, "tokenizer.ggml.pre") && (rc = arb_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err))) goto fail;
    init_byte_map(t);
    t->eot = t->eom = -1;
    if (arb_gguf_str_eq(model, "llama")) {
        t->kind = ARB_TOK_SPM;
        t->pre = ARB_PRE_DEFAULT;
        snprintf(t->pre_name, sizeof t->pre_name, "default");
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_space_prefix = t->add_bos = true;
    } else if (arb_gguf_str_eq(model, "gpt2")) {
        t->kind = ARB_TOK_BPE;
        t->bos = t->eos = t->unk = -1;
        if (pre.len == 0) {
            t->pre = ARB_PRE_DEFAULT;
            snprintf(t->pre_name, sizeof t->pre_name, "default");
        } else {
            size_t i, n = sizeof k_pre_names / sizeof *k_pre_names;
            for (i = 0; i < n && !arb_gguf_str_eq(pre, k_pre_names[i].name); i++) {}
            if (i == n) {
                char nm[64];
                arb_gguf_str_copy(pre, nm, sizeof nm);
                rc = ARB_ERR(err, ARB_E_UNSUPPORTED, "tokenizer.ggml.pre: pre-tokenizer '%s' not supported", nm);
                goto fail;
            }
            t->pre = k_pre_names[i].pre;
            snprintf(t->pre_name, sizeof t->pre_name, "%s", k_pre_names[i].name);
            if (k_pre_names[i].llama3) t->ignore_merges = t->add_bos = true;
            if (!strcmp(k_pre_names[i].name, "chatglm-bpe")) t->bos = -1;
        }
    } else {
        char nm[64];
        arb_gguf_str_copy(model, nm, sizeof nm);
        rc = ARB_ERR(err, ARB_E_UNSUPPORTED, "tokenizer.ggml.model: '%s' not supported (llama, gpt2)", nm);
        goto fail;
    }
    opt_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
    if ((rc = load_vocab(t, g, err))) goto fail;
    if (t->kind == ARB_TOK_BPE && (rc = load_merges(t, g, err))) goto fail;
    static const char *const k_ids[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                        "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
                                        "tokenizer.ggml.unknown_token_id"};
    int32_t *dst[] = {&t->bos, &t->eos, &t->eot, &t->eom, &t->unk};
    for (int i = 0; i < 5; i++)
        if (opt_id(g, k_ids[i], t->n_vocab, dst[i])) {
            rc = ARB_ERR(err, ARB_E_FORMAT, "%s: not a non-negative integer", k_ids[i]);
            goto fail;
        }
    if (t->bos >= t->n_vocab) t->bos = -1;
    if (t->eos >= t->n_vocab) t->eos = -1;
    if (t->unk >= t->n_vocab) t->unk = -1;
    opt_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos);
    if ((rc = build_specials(t, g, err)) || (rc = build_pieces(t, err))) goto fail;
    *out = t;
    return ARB_OK;
fail:
    arb_tokenizer_free(t);
    return rc;
}

void arb_tokenizer_free(arb_tokenizer *t) {
    if (!t) return;
    free(t->text), free(t->text_off), free(t->text_len), free(t->attr), free(t->score), free(t->vslot);
    free(t->merge), free(t->merge_off), free(t->merge_split), free(t->mslot);
    free(t->special), free(t->piece), free(t->piece_off), free(t->piece_len);
    free(t);
}

/* ---- accessors ---- */

int arb_tokenizer_piece(const arb_tokenizer *t, int32_t id, char *buf, int cap) {
    if (id < 0 || id >= t->n_vocab) return ARB_E_RANGE;
    int n = (int)t->piece_len[id];
    if (cap > 0) memcpy(buf, t->piece + t->piece_off[id], (size_t)(n < cap ? n : cap));
    return n;
}

int arb_tokenizer_decode(const arb_tokenizer *t, const int32_t *ids, int n, bool skip_leading_space, char *buf,
                         int cap) {
    long total = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab) return ARB_E_RANGE;
        const char *p = t->piece + t->piece_off[ids[i]];
        long k = t->piece_len[ids[i]];
        if (i == 0 && skip_leading_space && t->kind == ARB_TOK_SPM && t->add_space_prefix && k > 0 && p[0] == ' ')
            p++, k--;
        if (total < cap) memcpy(buf + total, p, (size_t)(total + k <= cap ? k : cap - total));
        total += k;
        if (total > INT32_MAX) return ARB_E_RANGE;
    }
    if (total < cap) buf[total] = 0;
    return (int)total;
}

const char *arb_tokenizer_token_text(const arb_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? tok_text(t, id) : NULL;
}

bool arb_tokenizer_is_eog(const arb_tokenizer *t, int32_t id) {
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}

bool arb_tokenizer_is_control(const arb_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && (t->attr[id] & A_CONTROL);
}

int arb_tokenizer_n_vocab(const arb_tokenizer *t) { return t->n_vocab; }
arb_tok_kind arb_tokenizer_kind(const arb_tokenizer *t) { return t->kind; }
const char *arb_tokenizer_pre(const arb_tokenizer *t) { return t->pre_name; }
int32_t arb_tokenizer_bos(const arb_tokenizer *t) { return t->bos; }
int32_t arb_tokenizer_eos(const arb_tokenizer *t) { return t->eos; }
int32_t arb_tokenizer_eot(const arb_tokenizer *t) { return t->eot; }
bool arb_tokenizer_add_bos(const arb_tokenizer *t) { return t->add_bos && t->bos >= 0; }
