/* cmd_tokenize.c — `arbor tokenize`: show how a model's tokenizer splits a text.
 *
 * Loads only the vocabulary (arb_load_opts.vocab_only) and prints one token per
 * line: id, then the piece's bytes quoted and escaped (\n \t \r \\ \' and \xHH for
 * bytes that are not part of a complete UTF-8 character).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "genutil.h"
#include "modelfetch.h"
#include "opts.h"

static const char description[] =
    "Tokenize TEXT (or the contents of --file FILE, '-' for stdin) with a model's tokenizer and\n"
    "print one token per line: its id and its piece, quoted and escaped.\n";

static char *read_all(const char *path, size_t *n) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    if (f != stdin) fclose(f);
    *n = len;
    return b;
}

/* Length of a complete, valid UTF-8 sequence at s (>= 2 bytes), else 0. */
static int utf8_seq(const unsigned char *s, int n) {
    int k = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    if (s[0] >= 0xF5 || k == 0 || k > n) return 0;
    for (int i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return k;
}

static void print_escaped(const char *p, int n) {
    const unsigned char *s = (const unsigned char *)p;
    putchar('\'');
    for (int i = 0; i < n;) {
        unsigned char c = s[i];
        int k = c >= 0x80 ? utf8_seq(s + i, n - i) : 0;
        if (k) { fwrite(s + i, 1, (size_t)k, stdout); i += k; continue; }
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\\' || c == '\'') printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7F) printf("\\x%02X", c);
        else putchar(c);
        i++;
    }
    putchar('\'');
}

typedef struct args {
    const char *model, *file, *text, *tmpl;
    bool no_special, bos, chat, ids_only;
} args;

/* argv into *a; 0, or the exit status of a usage error (-1: --help). */
static int parse_args(int argc, char **argv, args *a)
{
    const arb_opt opts[] = {
        ARB_OPT_STR("--model", "M", &a->model, "GGUF path or 'default' (the fetched SmolLM2-135M-Instruct; default)"),
        ARB_OPT_FLAG("--no-special", &a->no_special, "treat special-token texts such as <|im_start|> as plain text"),
        ARB_OPT_FLAG("--bos", &a->bos, "prepend BOS when the model asks for it (tokenizer.ggml.add_bos_token)"),
        ARB_OPT_FLAG("--chat", &a->chat, "render TEXT as one user turn with the model's chat template first"),
        ARB_OPT_STR("--template", "NAME", &a->tmpl, "with --chat: chatml, qwen, smollm, llama3, llama3.1 or vicuna"),
        ARB_OPT_FLAG("--ids", &a->ids_only, "print only the ids, space-separated, on one line"),
        {.name = "--file", .alias = "-f", .kind = ARB_OPT_KIND_STR, .dst = &a->file, .metavar = "FILE",
         .help = "tokenize this file's contents instead of TEXT ('-': stdin)"},
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"tokenize", "[TEXT]", description, opts, 0, 1};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? -1 : 2;
    a->text = pos.n ? pos.v[0] : NULL;
    const char *why = !a->text == !a->file ? (a->text ? "give TEXT or --file FILE, not both" : "no TEXT (or --file FILE) given")
                    : a->tmpl && !a->chat ? "--template needs --chat" : NULL;
    if (why) {
        fprintf(stderr, "arbor tokenize: %s\n", why);
        arb_opts_usage(&cmd, stderr);
        return 2;
    }
    return 0;
}

int arb_cmd_tokenize(int argc, char **argv) {
    args a = {.model = "default"};
    const int prc = parse_args(argc, argv, &a);
    if (prc)
        return prc < 0 ? 0 : prc;
    const char *model = a.model, *file = a.file, *text = a.text, *tmpl = a.tmpl;
    const bool special = !a.no_special, bos = a.bos, chat = a.chat, ids_only = a.ids_only;
    int rc = 1;
    arb_err err = {0};
    arb_model *m = NULL;
    char *owned = NULL, *rendered = NULL;
    int32_t *ids = NULL;
    size_t len = text ? strlen(text) : 0;
    if (file && !(owned = read_all(file, &len))) {
        fprintf(stderr, "arbor tokenize: %s: cannot read\n", file);
        return 1;
    }
    if (file) text = owned;
    char path[4096];
    arb_load_opts lo = arb_gen_load_opts();
    lo.vocab_only = true;
    if (arb_model_resolve(model, path, sizeof path, &err) || arb_model_load(path, &lo, &m, &err)) {
        fprintf(stderr, "arbor tokenize: %s\n", err.msg);
        goto done;
    }
    if (chat) {
        char *msg = strndup(text, len);
        size_t need = 0;
        arb_chat_msg cm = {"user", msg};
        if (!msg || arb_chat_apply(m, tmpl, &cm, 1, true, NULL, 0, &need, &err) ||
            !(rendered = malloc(need + 1)) || arb_chat_apply(m, tmpl, &cm, 1, true, rendered, need + 1, &need, &err)) {
            fprintf(stderr, "arbor tokenize: %s\n", msg && err.code ? err.msg : "out of memory");
            free(msg);
            goto done;
        }
        free(msg);
        text = rendered, len = need;
    }
    int n = 0, cap = (int)(len < 1000000 ? len : 1000000) + 8;
    if (!(ids = malloc(sizeof *ids * (size_t)cap)) || arb_tokenize(m, text, len, bos, special, ids, cap, &n, &err)) {
        fprintf(stderr, "arbor tokenize: %s\n", ids ? err.msg : "out of memory");
        goto done;
    }
    if (n > cap) { /* more ids than bytes + 8 cannot happen today; stay correct anyway */
        int32_t *more = realloc(ids, sizeof *ids * (size_t)n);
        if (!more || arb_tokenize(m, text, len, bos, special, more, n, &n, &err)) {
            fprintf(stderr, "arbor tokenize: %s\n", more ? err.msg : "out of memory");
            if (more) ids = more;
            goto done;
        }
        ids = more;
    }
    char piece[4096];
    for (int i = 0; i < n; i++) {
        if (ids_only) {
            printf(i ? " %d" : "%d", ids[i]);
            continue;
        }
        int k = arb_token_piece(m, ids[i], piece, sizeof piece);
        printf("%7d  ", ids[i]);
        print_escaped(piece, k < 0 ? 0 : k < (int)sizeof piece ? k : (int)sizeof piece);
        putchar('\n');
    }
    if (ids_only) putchar('\n');
    fprintf(stderr, "%d tokens, %zu bytes\n", n, len);
    rc = 0;
done:
    free(ids);
    free(rendered);
    free(owned);
    arb_model_free(m);
    return rc;
}
