/* tokenizer_pre.c — the regex pre-tokenizers of byte-level BPE, by hand.
 *
 * Each tokenizer.ggml.pre family is a list of passes mirroring the regex list
 * llama.cpp uses for it (llama-vocab.cpp, llm_tokenizer_bpe). A pass walks each
 * current segment and cuts it into matches and the gaps between them, like
 * std::regex_iterator would (leftmost match, then continue after it). Two passes
 * are the GPT-2 and Llama-3 patterns, which llama.cpp also implements by hand;
 * the others are of the simple shapes  A?B+  B  [0-9]{3}  \s+$  below.
 *
 * Character classes follow llama.cpp's evaluation, which is not quite Unicode
 * regex: \p{X} tests the code point's category; \s is White_Space; classes with
 * explicit code point ranges see non-ASCII whitespace as U+000B (llama.cpp
 * rewrites it so that std::wregex's \s matches it).
 *
 * To add a family: write its pass list in arb_pretok_split and map its names in
 * tokenizer.c's pre-name table.
 */
#include "tokenizer_int.h"

#include "unicode.h"

#include <stdbool.h>
#include <string.h>

#define OUT_OF_RANGE 0xFFFFFFFFu

typedef struct seg_ctx {
    const uint32_t *cp;
    const uint16_t *fl;
    int ini, end;  /* current segment [ini, end) in code points */
    int prev_end;  /* end of the last emitted word */
    int32_t *out;
    int n_out;
} seg_ctx;

static uint32_t cpt(const seg_ctx *s, int pos) { return pos >= s->ini && pos < s->end ? s->cp[pos] : OUT_OF_RANGE; }
static uint16_t flg(const seg_ctx *s, int pos) { return pos >= s->ini && pos < s->end ? s->fl[pos] : 0; }

/* Emit the word ending at end (if non-empty); returns its length. */
static int add(seg_ctx *s, int end) {
    int len = end - s->prev_end;
    if (len > 0) s->out[s->n_out++] = len;
    s->prev_end = end;
    return len;
}

#define F_WS ARB_UC_WHITESPACE
#define F_L ARB_UC_LETTER
#define F_N ARB_UC_NUMBER

/* 's|'t|'re|'ve|'m|'ll|'d (ASCII case folded when fold): length matched or 0. */
static int contraction(const seg_ctx *s, int pos, bool fold) {
    if (cpt(s, pos) != '\'' || pos + 1 >= s->end) return 0;
    uint32_t a = cpt(s, pos + 1), b = pos + 2 < s->end ? cpt(s, pos + 2) : OUT_OF_RANGE;
    if (fold) {
        if (a < 128) a = (uint32_t)(a >= 'A' && a <= 'Z' ? a + 32 : a);
        if (b < 128) b = (uint32_t)(b >= 'A' && b <= 'Z' ? b + 32 : b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void seg_gpt2(seg_ctx *s) {
    for (int pos = s->ini; pos < s->end;) {
        const uint32_t c = cpt(s, pos);
        const uint16_t f = flg(s, pos);
        int k = contraction(s, pos, false);
        if (k) { pos += add(s, pos + k); continue; }
        uint16_t f2 = c == ' ' ? flg(s, pos + 1) : f;
        if (f2 & (F_L | F_N)) {
            const uint16_t cls = (f2 & F_L) ? F_L : F_N;
            pos += c == ' ';
            while (flg(s, pos) & cls) pos++;
            add(s, pos);
            continue;
        }
        if (!(f2 & (F_WS | F_L | F_N)) && f2) {
            pos += c == ' ';
            while (!(f2 & (F_WS | F_L | F_N)) && f2) f2 = flg(s, ++pos);
            add(s, pos);
            continue;
        }
        int nws = 0;
        while (flg(s, pos + nws) & F_WS) nws++;
        if (nws > 1 && cpt(s, pos + nws) != OUT_OF_RANGE) { /* \s+(?!\S) */
            pos += nws - 1;
            add(s, pos);
            continue;
        }
        if (nws > 0) { pos += nws; add(s, pos); continue; }
        add(s, ++pos);
    }
}

/* Llama-3 (max_digits 3) and Qwen2 (max_digits 1):
   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static void seg_llama3(seg_ctx *s, int max_digits) {
    for (int pos = s->ini; pos < s->end;) {
        const uint32_t c = cpt(s, pos);
        const uint16_t f = flg(s, pos);
        int k = contraction(s, pos, true);
        if (k) { pos += add(s, pos + k); continue; }
        if (!(c == '\r' || c == '\n' || (f & F_N)) && ((f & F_L) || (flg(s, pos + 1) & F_L))) {
            pos++;
            while (flg(s, pos) & F_L) pos++;
            add(s, pos);
            continue;
        }
        if (f & F_N) {
            int ini = pos;
            while (flg(s, pos) & F_N) {
                if (++pos - ini >= max_digits) { add(s, pos); ini = pos; }
            }
            add(s, pos);
            continue;
        }
        uint16_t f2 = c == ' ' ? flg(s, pos + 1) : f;
        if (!(f2 & (F_WS | F_L | F_N)) && f) {
            pos += c == ' ';
            while (!(f2 & (F_WS | F_L | F_N)) && f2) f2 = flg(s, ++pos);
            uint32_t c2 = cpt(s, pos);
            while (c2 == '\r' || c2 == '\n') c2 = cpt(s, ++pos);
            add(s, pos);
            continue;
        }
        int nws = 0, last_nl = 0;
        while (flg(s, pos + nws) & F_WS) {
            uint32_t c2 = cpt(s, pos + nws);
            if (c2 == '\r' || c2 == '\n') last_nl = pos + nws + 1;
            nws++;
        }
        if (last_nl > 0) { pos = last_nl; add(s, pos); continue; }            /* \s*[\r\n]+ */
        if (nws > 1 && cpt(s, pos + nws) != OUT_OF_RANGE) { pos += nws - 1; add(s, pos); continue; }
        if (nws > 0) { pos += nws; add(s, pos); continue; }
        add(s, ++pos);
    }
}

/* ---- simple regex shapes ---- */

typedef bool (*cls_fn)(uint32_t cp, uint16_t fl);

/* the code point as llama.cpp's std::wregex sees it */
static uint32_t wide(uint32_t cp, uint16_t fl) { return cp > 0x7F && (fl & F_WS) ? 0x0B : cp; }

static bool c_ws(uint32_t cp, uint16_t fl) { (void)cp; return fl & F_WS; }
static bool c_letter(uint32_t cp, uint16_t fl) { (void)cp; return fl & F_L; }
static bool c_number(uint32_t cp, uint16_t fl) { (void)cp; return fl & F_N; }
static bool c_punct(uint32_t cp, uint16_t fl) { (void)cp; return fl & ARB_UC_PUNCT; }
static bool c_crlf(uint32_t cp, uint16_t fl) { (void)fl; return cp == '\r' || cp == '\n'; }
static bool c_digit(uint32_t cp, uint16_t fl) { (void)fl; return cp >= '0' && cp <= '9'; }
static bool c_default_punct(uint32_t cp, uint16_t fl) { /* [\p{P}\$\+<=>\^~\|] */
    return (fl & ARB_UC_PUNCT) || (cp < 128 && cp && strchr("$+<=>^~|", (int)cp));
}
static bool c_falcon_punct(uint32_t cp, uint16_t fl) { /* [\p{P}\$\+<=>\^~\|`] */
    return (fl & ARB_UC_PUNCT) || (cp < 128 && cp && strchr("$+<=>^~|`", (int)cp));
}
static bool c_cjk(uint32_t cp, uint16_t fl) { /* [一-龥ࠀ-一가-퟿] */
    cp = wide(cp, fl);
    return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x0800 && cp <= 0x4E00) || (cp >= 0xAC00 && cp <= 0xD7FF);
}
static bool c_ds_letter(uint32_t cp, uint16_t fl) { return arb_unicode_is_deepseek_letter(wide(cp, fl)); }
static bool c_ds_punct(uint32_t cp, uint16_t fl) { /* [!-/:-~！-／：-～‘-‟　-。] */
    cp = wide(cp, fl);
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x7E) || (cp >= 0xFF01 && cp <= 0xFF0F) ||
           (cp >= 0xFF1A && cp <= 0xFF5E) || (cp >= 0x2018 && cp <= 0x201F) || (cp >= 0x3000 && cp <= 0x3002);
}

typedef enum shape { SH_RUN, SH_ONE, SH_DIGIT3, SH_TRAIL_WS } shape;

typedef struct pass {
    shape sh;
    cls_fn opt;  /* SH_RUN: optional leading class (A in A?B+), or NULL */
    cls_fn cls;  /* B */
} pass;

/* Match of the pass starting exactly at pos: its end, or -1. */
static int match_at(const seg_ctx *s, const pass *p, int pos) {
    const uint32_t *cp = s->cp;
    const uint16_t *fl = s->fl;
    switch (p->sh) {
    case SH_ONE:
        return p->cls(cp[pos], fl[pos]) ? pos + 1 : -1;
    case SH_DIGIT3:
        if (pos + 3 > s->end) return -1;
        for (int i = 0; i < 3; i++)
            if (!c_digit(cp[pos + i], 0)) return -1;
        return pos + 3;
    case SH_RUN: {
        int q = pos;
        if (p->opt && q + 1 < s->end && p->opt(cp[q], fl[q]) && p->cls(cp[q + 1], fl[q + 1])) q++;
        if (!p->cls(cp[q], fl[q])) return -1;
        while (q < s->end && p->cls(cp[q], fl[q])) q++;
        return q;
    }
    case SH_TRAIL_WS:
        break;
    }
    return -1;
}

static void seg_pass(seg_ctx *s, const pass *p) {
    if (p->sh == SH_TRAIL_WS) { /* \s+$ : the trailing whitespace run */
        int t = s->end;
        while (t > s->ini && (s->fl[t - 1] & F_WS)) t--;
        add(s, t);
        add(s, s->end);
        return;
    }
    for (int pos = s->ini; pos < s->end;) {
        int e = match_at(s, p, pos);
        if (e < 0) { pos++; continue; }
        add(s, pos);
        add(s, e);
        pos = e;
    }
    add(s, s->end);
}

typedef enum pass_kind { PK_GPT2, PK_LLAMA3, PK_QWEN2, PK_SIMPLE } pass_kind;
typedef struct pass_def { pass_kind kind; pass p; } pass_def;

#define SIMPLE(sh, opt, cls) {PK_SIMPLE, {sh, opt, cls}}
static const pass_def k_default[] = {SIMPLE(SH_RUN, NULL, c_default_punct), {PK_GPT2, {0}},
                                     SIMPLE(SH_RUN, NULL, c_number), SIMPLE(SH_DIGIT3, NULL, NULL)};
static const pass_def k_gpt2[] = {{PK_GPT2, {0}}};
static const pass_def k_starcoder[] = {SIMPLE(SH_ONE, NULL, c_number), {PK_GPT2, {0}}};
static const pass_def k_llama3[] = {{PK_LLAMA3, {0}}};
static const pass_def k_qwen2[] = {{PK_QWEN2, {0}}};
static const pass_def k_falcon[] = {SIMPLE(SH_RUN, NULL, c_falcon_punct), {PK_GPT2, {0}},
                                    SIMPLE(SH_DIGIT3, NULL, NULL)};
static const pass_def k_ds_llm[] = {SIMPLE(SH_ONE, NULL, c_crlf), SIMPLE(SH_RUN, c_ws, c_ds_letter),
                                    SIMPLE(SH_RUN, c_ws, c_ds_punct), SIMPLE(SH_TRAIL_WS, NULL, NULL),
                                    SIMPLE(SH_RUN, NULL, c_cjk), SIMPLE(SH_RUN, NULL, c_number)};
static const pass_def k_ds_coder[] = {SIMPLE(SH_ONE, NULL, c_crlf), SIMPLE(SH_RUN, c_ws, c_letter),
                                      SIMPLE(SH_RUN, c_ws, c_punct), SIMPLE(SH_RUN, NULL, c_cjk),
                                      SIMPLE(SH_ONE, NULL, c_number)};

int arb_pretok_split(arb_pre pre, const uint32_t *cp, const uint16_t *fl, int n,
                     int32_t *seg_a, int32_t *seg_b, int32_t **segs) {
    const pass_def *defs;
    int n_defs;
#define USE(a) (defs = (a), n_defs = (int)(sizeof(a) / sizeof((a)[0])))
    switch (pre) {
    case ARB_PRE_GPT2: USE(k_gpt2); break;
    case ARB_PRE_STARCODER: USE(k_starcoder); break;
    case ARB_PRE_LLAMA3: USE(k_llama3); break;
    case ARB_PRE_QWEN2: USE(k_qwen2); break;
    case ARB_PRE_FALCON: USE(k_falcon); break;
    case ARB_PRE_DEEPSEEK_LLM: USE(k_ds_llm); break;
    case ARB_PRE_DEEPSEEK_CODER: USE(k_ds_coder); break;
    case ARB_PRE_DEFAULT: default: USE(k_default); break;
    }
#undef USE
    int32_t *in = seg_a, *out = seg_b;
    int n_in = 0;
    if (n > 0) in[n_in++] = n;
    for (int d = 0; d < n_defs; d++) {
        seg_ctx s = {.cp = cp, .fl = fl, .out = out, .n_out = 0};
        int start = 0;
        for (int i = 0; i < n_in; i++) {
            s.ini = s.prev_end = start;
            s.end = start + in[i];
            switch (defs[d].kind) {
            case PK_GPT2: seg_gpt2(&s); break;
            case PK_LLAMA3: seg_llama3(&s, 3); break;
            case PK_QWEN2: seg_llama3(&s, 1); break;
            case PK_SIMPLE: seg_pass(&s, &defs[d].p); break;
            }
            start = s.end;
        }
        int32_t *t = in; in = out; out = t;
        n_in = s.n_out;
    }
    *segs = in;
    return n_in;
}
