/* chat.c — chat templates rendered in C (see chat.h for the families).
 *
 * Detection looks for each family's markers in tokenizer.chat_template. The only
 * thing read out of the Jinja source itself is a ChatML template's built-in
 * default system message: a string literal of the form
 *     '<|im_start|>system\n<text><|im_end|>\n'
 * whose <text> is a constant (no quote inside it), as in SmolLM2's and Qwen2's
 * templates. It is emitted when the conversation does not start with a system turn.
 *
 * To add a family: an enum value in chat.h, a marker in arb_chat_detect, a name in
 * arb_chat_kind_from_name, a render_<family> function, and expected strings in
 * tests/test_chat.c.
 */
#include "chat.h"

#include <stdio.h>
#include <string.h>

/* Bounded appender: counts everything, writes what fits (keeping room for NUL). */
typedef struct out { char *buf; size_t cap, n; } out;

static void put(out *o, const char *s, size_t len) {
    if (o->n + 1 < o->cap) {
        size_t room = o->cap - 1 - o->n;
        memcpy(o->buf + o->n, s, len < room ? len : room);
    }
    o->n += len;
}
static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

arb_chat_kind arb_chat_detect(const char *src, size_t len) {
    if (!src) return ARB_CHAT_UNKNOWN;
    if (memmem(src, len, "<|im_start|>", 12)) return ARB_CHAT_CHATML;
    if (memmem(src, len, "<|start_header_id|>", 19))
        return memmem(src, len, "Cutting Knowledge Date", 22) ? ARB_CHAT_LLAMA31 : ARB_CHAT_LLAMA3;
    if (memmem(src, len, "USER:", 5) && memmem(src, len, "ASSISTANT:", 10)) return ARB_CHAT_VICUNA;
    if (memmem(src, len, "<start_of_turn>", 15)) return ARB_CHAT_GEMMA;
    return ARB_CHAT_UNKNOWN;
}

arb_chat_kind arb_chat_kind_from_name(const char *name) {
    static const struct { const char *name; arb_chat_kind k; } k_names[] = {
        {"chatml", ARB_CHAT_CHATML}, {"qwen", ARB_CHAT_CHATML},      {"smollm", ARB_CHAT_CHATML},
        {"llama3", ARB_CHAT_LLAMA3}, {"llama-3", ARB_CHAT_LLAMA3},   {"vicuna", ARB_CHAT_VICUNA},
        {"llama3.1", ARB_CHAT_LLAMA31}, {"llama-3.1", ARB_CHAT_LLAMA31},
        {"vicuna_v1.1", ARB_CHAT_VICUNA}, {"vicuna-v1.1", ARB_CHAT_VICUNA},
        {"gemma", ARB_CHAT_GEMMA},   {"gemma3", ARB_CHAT_GEMMA},
    };
    for (size_t i = 0; name && i < sizeof k_names / sizeof *k_names; i++)
        if (!strcmp(name, k_names[i].name)) return k_names[i].k;
    return ARB_CHAT_UNKNOWN;
}

const char *arb_chat_kind_name(arb_chat_kind k) {
    switch (k) {
    case ARB_CHAT_CHATML: return "chatml";
    case ARB_CHAT_LLAMA3: return "llama3";
    case ARB_CHAT_VICUNA: return "vicuna";
    case ARB_CHAT_LLAMA31: return "llama3.1";
    case ARB_CHAT_GEMMA: return "gemma";
    case ARB_CHAT_UNKNOWN: break;
    }
    return "unknown";
}

/* The constant default system message of a ChatML template, unescaped into
   buf (NUL-terminated); false if the template has none. */
static bool chatml_default_system(const char *src, size_t len, char *buf, size_t cap) {
    static const char *const k_heads[] = {"<|im_start|>system\n", "<|im_start|>system\\n"};
    for (int h = 0; h < 2 && src; h++) {
        const size_t hl = strlen(k_heads[h]);
        for (const char *p = src; (p = memmem(p, len - (size_t)(p - src), k_heads[h], hl)); p += hl) {
            if (p == src || (p[-1] != '\'' && p[-1] != '"')) continue; /* must open a literal */
            const char quote = p[-1];
            const char *b = p + hl, *end = src + len;
            const char *e = memmem(b, (size_t)(end - b), "<|im_end|>", 10);
            if (!e || e == b) continue;
            size_t k = 0;
            bool ok = true;
            for (const char *q = b; q < e && ok; q++) {
                char c = *q;
                if (c == quote) ok = false; /* the literal ends before <|im_end|>: not constant */
                else if (c == '\\' && q + 1 < e) {
                    c = *++q;
                    c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
                }
                if (ok && k + 1 < cap) buf[k++] = c;
            }
            if (!ok) continue;
            buf[k] = 0;
            return true;
        }
    }
    return false;
}

static bool is_role(const char *r, const char *want) { return r && !strcmp(r, want); }

static void render_chatml(out *o, const char *src, size_t src_len, const arb_chat_msg *m, int n, bool add_ass) {
    char sys[2048];
    if (n > 0 && !is_role(m[0].role, "system") && chatml_default_system(src, src_len, sys, sizeof sys)) {
        puts_(o, "<|im_start|>system\n");
        puts_(o, sys);
        puts_(o, "<|im_end|>\n");
    }
    for (int i = 0; i < n; i++) {
        puts_(o, "<|im_start|>");
        puts_(o, m[i].role);
        puts_(o, "\n");
        puts_(o, m[i].content);
        puts_(o, "<|im_end|>\n");
    }
    if (add_ass) puts_(o, "<|im_start|>assistant\n");
}

static void put_trimmed(out *o, const char *c) { /* Jinja |trim */
    const char *e = c + strlen(c);
    while (c < e && strchr(" \t\n\r\f\v", *c)) c++;
    while (e > c && strchr(" \t\n\r\f\v", e[-1])) e--;
    put(o, c, (size_t)(e - c));
}

static void render_llama3(out *o, const arb_chat_msg *m, int n, bool add_ass, bool v31) {
    int i = 0;
    if (v31) { /* 3.1 always opens with a system block (no tools, fixed date) */
        puts_(o, "<|start_header_id|>system<|end_header_id|>\n\n"
                 "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
        if (n > 0 && is_role(m[0].role, "system")) put_trimmed(o, m[i++].content);
        puts_(o, "<|eot_id|>");
    }
    for (; i < n; i++) {
        puts_(o, "<|start_header_id|>");
        puts_(o, m[i].role);
        puts_(o, "<|end_header_id|>\n\n");
        put_trimmed(o, m[i].content);
        puts_(o, "<|eot_id|>");
    }
    if (add_ass) puts_(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* FastChat's vicuna_v1.1: system + " ", then "USER: q " and "ASSISTANT: a</s>". */
static int render_vicuna(out *o, const arb_chat_msg *m, int n, bool add_ass, arb_err *err) {
    int i = 0;
    if (n > 0 && is_role(m[0].role, "system")) puts_(o, m[i++].content);
    else puts_(o, "A chat between a curious user and an artificial intelligence assistant. "
                  "The assistant gives helpful, detailed, and polite answers to the user's questions.");
    puts_(o, " ");
    for (; i < n; i++) {
        if (is_role(m[i].role, "user")) {
            puts_(o, "USER: ");
            puts_(o, m[i].content);
            puts_(o, " ");
        } else if (is_role(m[i].role, "assistant")) {
            puts_(o, "ASSISTANT: ");
            puts_(o, m[i].content);
            puts_(o, "</s>");
        } else {
            return ARB_ERR(err, ARB_E_INVAL, "chat: message %d: role '%s' not allowed in vicuna (user, assistant; "
                           "system first only)", i, m[i].role);
        }
    }
    if (add_ass) puts_(o, "ASSISTANT:");
    return ARB_OK;
}

/* Gemma-3's template: a leading system message becomes a prefix of the first turn
   ("<system>\n\n", not trimmed), roles must alternate user/model starting with user, assistant is
   written "model", every content |trim. */
static int render_gemma(out *o, const arb_chat_msg *m, int n, bool add_ass, arb_err *err) {
    int i = 0;
    const char *sys = NULL;
    if (n > 0 && is_role(m[0].role, "system")) sys = m[i++].content;
    for (int k = 0; i < n; i++, k++) {
        const bool user = is_role(m[i].role, "user");
        if (user != (k % 2 == 0) || (!user && !is_role(m[i].role, "assistant")))
            return ARB_ERR(err, ARB_E_INVAL, "chat: message %d: role '%s': gemma wants user and assistant turns "
                           "alternating, user first (system first only)", i, m[i].role);
        puts_(o, "<start_of_turn>");
        puts_(o, user ? "user" : "model");
        puts_(o, "\n");
        if (k == 0 && sys) { /* verbatim, as the template's first_user_prefix */
            puts_(o, sys);
            puts_(o, "\n\n");
        }
        put_trimmed(o, m[i].content);
        puts_(o, "<end_of_turn>\n");
    }
    if (add_ass) puts_(o, "<start_of_turn>model\n");
    return ARB_OK;
}

int arb_chat_apply_src(const char *name, const char *src, size_t src_len, const arb_chat_msg *msgs, int n_msgs,
                       bool add_assistant, char *buf, size_t cap, size_t *n_out, arb_err *err) {
    *n_out = 0;
    if (cap > 0) buf[0] = 0;
    arb_chat_kind k;
    if (name) {
        if ((k = arb_chat_kind_from_name(name)) == ARB_CHAT_UNKNOWN)
            return ARB_ERR(err, ARB_E_INVAL, "chat template '%s' unknown (chatml, qwen, smollm, llama3, llama3.1, vicuna, gemma)", name);
    } else if (!src) {
        return ARB_ERR(err, ARB_E_UNSUPPORTED, "tokenizer.chat_template: missing; name a template (chatml, llama3, vicuna, gemma)");
    } else if ((k = arb_chat_detect(src, src_len)) == ARB_CHAT_UNKNOWN) {
        return ARB_ERR(err, ARB_E_UNSUPPORTED,
                       "tokenizer.chat_template: not a known family (chatml, llama3, vicuna, gemma); name one to override");
    }
    if (n_msgs < 0 || (n_msgs > 0 && !msgs)) return ARB_ERR(err, ARB_E_INVAL, "chat: bad message list");
    for (int i = 0; i < n_msgs; i++)
        if (!msgs[i].role || !msgs[i].content)
            return ARB_ERR(err, ARB_E_INVAL, "chat: message %d: NULL role or content", i);
    out o = {buf, cap, 0};
    int rc = ARB_OK;
    switch (k) {
    case ARB_CHAT_CHATML:
        render_chatml(&o, arb_chat_detect(src, src_len) == ARB_CHAT_CHATML ? src : NULL, src_len, msgs, n_msgs,
                      add_assistant);
        break;
    case ARB_CHAT_LLAMA3:
    case ARB_CHAT_LLAMA31: render_llama3(&o, msgs, n_msgs, add_assistant, k == ARB_CHAT_LLAMA31); break;
    case ARB_CHAT_VICUNA: rc = render_vicuna(&o, msgs, n_msgs, add_assistant, err); break;
    case ARB_CHAT_GEMMA: rc = render_gemma(&o, msgs, n_msgs, add_assistant, err); break;
    case ARB_CHAT_UNKNOWN: break;
    }
    if (rc) return rc;
    if (cap > 0) buf[o.n < cap ? o.n : cap - 1] = 0;
    *n_out = o.n;
    return ARB_OK;
}

int arb_chat_apply_tmpl(const char *name, const arb_gguf *g, const arb_chat_msg *msgs, int n_msgs,
                        bool add_assistant, char *buf, size_t cap, size_t *n_out, arb_err *err) {
    arb_gguf_str s = {0};
    if (g && arb_gguf_find(g, "tokenizer.chat_template") &&
        arb_gguf_get_str(g, "tokenizer.chat_template", &s, NULL) != ARB_OK)
        s.ptr = NULL, s.len = 0;
    return arb_chat_apply_src(name, s.ptr, (size_t)s.len, msgs, n_msgs, add_assistant, buf, cap, n_out, err);
}
