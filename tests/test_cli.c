/* test_cli.c — every `arbor` subcommand answers --help with its usage (exit 0),
 * rejects an unknown flag with a non-zero exit, and the top level rejects an
 * unknown command. The command list is read from `arbor --help`, so a new
 * command is covered without editing this file. For the commands on the option
 * parser (opts.h), README.md's "Command reference" synopsis names exactly the options
 * of `arbor <cmd> --help`, and every option in a README example exists in that --help. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char arbor_bin[4096];

static void find_binary(void)
{
    const char *b = getenv("ARBOR_BUILD_ROOT");
    cr_assert(b != NULL, "ARBOR_BUILD_ROOT not set (run through meson test)");
    snprintf(arbor_bin, sizeof arbor_bin, "%s/harness/arbor", b);
}

/* Run a shell command, capture up to cap bytes of stdout+stderr, return exit status. */
static int run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    cr_assert(p != NULL);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(cli, every_command_answers_help, .init = find_binary)
{
    static char out[1 << 16], cmd[8192], sub[1 << 16];
    snprintf(cmd, sizeof cmd, "%s --help 2>&1", arbor_bin);
    cr_assert_eq(run(cmd, out, sizeof out), 0);
    char *s = strstr(out, "commands:\n");
    cr_assert(s != NULL, "no command list in: %s", out);
    int n_cmds = 0;
    for (char *line = strtok(s + 10, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        if (sscanf(line, "  %63s", name) != 1 || line[0] != ' ')
            break;
        snprintf(cmd, sizeof cmd, "%s %s --help 2>&1", arbor_bin, name);
        cr_expect_eq(run(cmd, sub, sizeof sub), 0, "arbor %s --help failed", name);
        cr_expect(strstr(sub, "usage: arbor") != NULL, "arbor %s --help prints no usage", name);
        snprintf(cmd, sizeof cmd, "%s %s --no-such-flag-xyz 2>&1", arbor_bin, name);
        cr_expect_neq(run(cmd, sub, sizeof sub), 0, "arbor %s accepted an unknown flag", name);
        n_cmds++;
    }
    cr_assert_geq(n_cmds, 1);
}

Test(cli, unknown_command_fails, .init = find_binary)
{
    char out[4096], cmd[8192];
    snprintf(cmd, sizeof cmd, "%s frobnicate 2>&1", arbor_bin);
    cr_assert_eq(run(cmd, out, sizeof out), 2);
    cr_assert(strstr(out, "unknown command 'frobnicate'") != NULL);
}

/* Every command is on the option parser (opts.h), so the README checks below cover them all;
   a command that dispatches to subcommands (bench, entmtp) is checked through each
   subcommand's own --help (check_entries). */

/* The command names of `arbor --help`, into names[][64]; returns the count. */
static int command_names(char names[][64], int cap)
{
    static char out[1 << 16], cmd[16384];
    snprintf(cmd, sizeof cmd, "%s --help 2>&1", arbor_bin);
    cr_assert_eq(run(cmd, out, sizeof out), 0);
    char *s = strstr(out, "commands:\n");
    cr_assert(s != NULL);
    int n = 0;
    for (char *line = strtok(s + 10, "\n"); line && n < cap; line = strtok(NULL, "\n")) {
        if (line[0] != ' ' || sscanf(line, "  %63s", names[n]) != 1)
            break;
        n++;
    }
    return n;
}

/* The entries the README checks cover: every command of `arbor --help`, and for one whose
   usage dispatches ("usage: arbor bench engine|fidelity [options]   (arbor bench <benchmark>
   --help)") each "CMD SUB" after it; subs[i] is entry i's '|'-list of subcommands ("" if
   none). Returns the count. */
static int check_entries(char names[][64], char subs[][256], int cap)
{
    static char top[64][64], help[1 << 16], cmd[16384];
    const int n_top = command_names(top, 64);
    int n = 0;
    for (int i = 0; i < n_top && n < cap; i++) {
        snprintf(names[n], 64, "%.63s", top[i]);
        subs[n][0] = 0;
        snprintf(cmd, sizeof cmd, "%s %s --help 2>&1", arbor_bin, top[i]);
        cr_assert_eq(run(cmd, help, sizeof help), 0, "arbor %s --help", top[i]);
        char head[128];
        const int hl = snprintf(head, sizeof head, "usage: arbor %s ", top[i]);
        const char *u = strstr(help, head), *eol = u ? strchr(u, '\n') : NULL;
        const char *lt = u ? strstr(u, "<") : NULL;
        const bool dispatch = u && eol && lt && lt < eol && strstr(u, "--help)") < eol;
        const int parent = n++;
        if (!dispatch)
            continue;
        const char *l = u + hl;
        snprintf(subs[parent], 256, "%.*s", (int)strcspn(l, " \n"), l);
        char list[256];
        snprintf(list, sizeof list, "%s", subs[parent]);
        for (char *tp = NULL, *t = strtok_r(list, "|", &tp); t && n < cap; t = strtok_r(NULL, "|", &tp)) {
            snprintf(names[n], 64, "%.31s %.31s", top[i], t);
            subs[n++][0] = 0;
        }
    }
    return n;
}

/* Whether the README example after "arbor CMD" (at q) starts with one of the '|'-separated
   subcommands in subs: then its options belong to that subcommand's entry. */
static bool starts_with_sub(const char *q, const char *subs)
{
    q += strspn(q, " ");
    for (const char *s = subs; *s;) {
        const size_t n = strcspn(s, "|");
        if (n && !strncmp(q, s, n) && strchr(" `\n", q[n]))
            return true;
        s += n + (s[n] == '|');
    }
    return false;
}

/* The synopsis in text: from the line starting "usage: arbor CMD " to the first line not
   indented (blank, a fence, the next usage). Copied into syn; false if absent. */
static bool find_synopsis(const char *text, const char *cmd, char *syn, size_t cap)
{
    char head[4200];
    snprintf(head, sizeof head, "usage: arbor %s", cmd);
    const size_t hl = strlen(head);
    for (const char *p = text; (p = strstr(p, head)); p += hl) {
        if ((p != text && p[-1] != '\n') || (p[hl] != ' ' && p[hl] != '\n'))
            continue;
        const char *e = strchr(p, '\n');
        while (e && e[1] == ' ')
            e = strchr(e + 1, '\n');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(syn, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
        return true;
    }
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The options a synopsis names (words starting with '-' after a space, '[', '(' or '|'),
   sorted and space-joined into out. */
static void option_set(const char *syn, char *out, size_t cap)
{
    static char words[256][48];
    char *v[256];
    int n = 0;
    for (const char *p = syn; *p && n < 256; p++) {
        if (*p != '-' || (p != syn && !strchr(" [(|", p[-1])))
            continue;
        size_t k = 0;
        while ((isalnum((unsigned char)p[k]) || p[k] == '-') && k < 47)
            k++;
        if (k < 2 || !isalpha((unsigned char)p[k - 1]))
            continue;
        snprintf(words[n], sizeof words[n], "%.*s", (int)k, p);
        v[n] = words[n], n++;
        p += k - 1;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    out[0] = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || strcmp(v[i], v[i - 1]))
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " " : "", v[i]);
}

static char *read_readme(void)
{
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    cr_assert(root != NULL, "ARBOR_SOURCE_ROOT not set (run through meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", root);
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "%s: cannot open", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

Test(cli, readme_synopsis_names_the_help_options, .init = find_binary)
{
    char *readme = read_readme();
    char *sec = strstr(readme, "<!-- cli-reference:begin -->"), *end = strstr(readme, "<!-- cli-reference:end -->");
    cr_assert(sec && end && sec < end, "README.md has no Command reference markers");
    *end = 0;
    static char names[96][64], subs[96][256], help[1 << 16], cmd[16384], syn_help[4096], syn_readme[4096],
        a[4096], b[4096];
    const int n = check_entries(names, subs, 96);
    int checked = 0, checked_subs = 0;
    for (int i = 0; i < n; i++) {
        checked_subs += strchr(names[i], ' ') != NULL;
        snprintf(cmd, sizeof cmd, "%s %s --help", arbor_bin, names[i]);
        cr_assert_eq(run(cmd, help, sizeof help), 0, "arbor %s --help", names[i]);
        cr_assert(find_synopsis(help, names[i], syn_help, sizeof syn_help), "arbor %s --help: no usage", names[i]);
        cr_assert(find_synopsis(sec, names[i], syn_readme, sizeof syn_readme),
                  "README.md Command reference has no synopsis of %s (scripts/cli_reference.py)", names[i]);
        option_set(syn_help, a, sizeof a);
        option_set(syn_readme, b, sizeof b);
        cr_expect_str_eq(b, a, "README synopsis of %s names {%s}, --help names {%s} (scripts/cli_reference.py)",
                         names[i], b, a);
        cr_expect(strchr(a, '-') != NULL || !strcmp(names[i], "merge"), "%s: no options found in {%s}", names[i], a);
        checked++;
    }
    cr_assert_geq(checked, 13, "only %d commands checked", checked);
    cr_assert_geq(checked_subs, 2, "only %d subcommands checked (bench, entmtp)", checked_subs);
}

/* Whether `word` occurs in text as a whole option word (not inside a longer option). */
static bool has_word(const char *text, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = text; (p = strstr(p, word)); p++) {
        const bool left = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '-');
        const bool right = !(isalnum((unsigned char)p[n]) || p[n] == '-');
        if (left && right)
            return true;
    }
    return false;
}

Test(cli, readme_examples_use_existing_options, .init = find_binary)
{
    const char *readme = read_readme();
    static char names[96][64], subs[96][256], help[1 << 16], cmd[16384];
    const int n = check_entries(names, subs, 96);
    int n_flags = 0;
    for (int i = 0; i < n; i++) {
        snprintf(cmd, sizeof cmd, "%s %s --help", arbor_bin, names[i]);
        cr_assert_eq(run(cmd, help, sizeof help), 0);
        char head[4200];
        snprintf(head, sizeof head, "arbor %.63s", names[i]);
        const size_t hl = strlen(head);
        for (const char *p = readme; (p = strstr(p, head)); p += hl) {
            if (!strchr(" `)\n", p[hl]) || !strncmp(p - (p > readme ? 7 : 0), "usage: ", 7) ||
                (subs[i][0] && starts_with_sub(p + hl, subs[i])))
                continue;
            /* the example: up to the end of the line, a backtick or a # comment */
            const char *q = p + hl;
            const size_t len = strcspn(q, "`#\n");
            char seg[1024];
            snprintf(seg, sizeof seg, "%.*s", (int)(len < sizeof seg ? len : sizeof seg - 1), q);
            for (char *tp = NULL, *t = strtok_r(seg, " \t", &tp); t; t = strtok_r(NULL, " \t", &tp)) {
                t += strspn(t, "[(");
                t[strcspn(t, "=])|,")] = 0;
                if (t[0] != '-' || !isalpha((unsigned char)t[strspn(t, "-")]))
                    continue;
                cr_expect(has_word(help, t), "README example `arbor %s ...%s`: %s is not an option of "
                          "`arbor %s --help`", names[i], t, t, names[i]);
                n_flags++;
            }
        }
    }
    cr_assert_geq(n_flags, 20, "only %d example options found in README.md", n_flags);
}

/* Usage errors of the converted commands (no model or data needed): exit 2 and a message
   naming the option or argument; old spellings still parse (their aliases). */
Test(cli, usage_errors_exit_2_naming_the_option, .init = find_binary)
{
    static const struct {
        const char *args, *expect;
    } cases[] = {
        {"run", "missing argument: CONFIG.json"},
        {"run a.json --limit 0", "--limit: '0' is not an integer"},
        {"run a.json --shard 3/2", "shard"},
        {"report --db", "--db needs a value"},
        {"report --table t3", "--db is required"},
        {"report --db x.db --format yaml", "--format"},
        {"merge a.db", "--out is required"},
        {"merge a.db --output a.db", "a.db is both an input and the output"},
        {"merge a.db -o a.db", "a.db is both an input and the output"},
        {"compare a.db", "missing argument: BASE.db NEW.db"},
        {"compare a.db b.db --max-drop 5", "--max-drop"},
        {"compare a.db b.db --metric n_prompts", "--metric"},
        {"plot --out d", "--db is required"},
        {"datasets show", "show needs a dataset NAME"},
        {"datasets frob", "unknown subcommand"},
        {"datasets --limit 2", "--split and --limit apply to show"},
        {"reproduce nope", "PAPER must be goose, dte or entmtp (got 'nope')"},
        {"reproduce goose --boot -1", "--boot"},
        {"tokenize", "no TEXT (or --file FILE) given"},
        {"tokenize hi -f x", "give TEXT or --file FILE, not both"},
        {"tokenize hi --template chatml", "--template needs --chat"},
        {"inspect a b", "unexpected argument 'b'"},
        {"inspect x --items -1", "--items"},
        {"synth-model --shape llama-1b", "--out is required"},
        {"synth-model --shape llama-1b --out x --layers 0", "--layers"},
        {"dte-depth --depth 17", "--depth: '17' is not an integer in 1..16"},
        {"dte-depth --dataset math500 --shape 9,9,9", "--shape '9,9,9'"},
        {"dte-depth --settings 0:2", "--settings '0:2'"},
        {"fetch-model --quiet=1", "--quiet takes no value"},
        {"train", "missing argument: medusa|hydra|eagle|nde"},
        {"train mesuda", "the heads kind must be medusa, hydra, eagle or nde (got 'mesuda')"},
        {"train medusa --heads 9", "--heads: '9' is not an integer in 1..8"},
        {"train medusa --max-records 0", "--limit: '0' is not an integer"},
        {"train medusa --seed 1.5", "--seed"},
        {"train hydra --teacher 1.5", "--teacher"},
        {"train eagle --teacher 0.5", "--teacher is a medusa/hydra option"},
        {"train medusa --noise 0.2", "--noise is an eagle option"},
        {"datastore", "missing argument: build|info"},
        {"datastore frob", "expected 'build' or 'info'"},
        {"datastore info", "info takes one FILE|NAME"},
        {"datastore build --out x", "--corpus: expected code or chat"},
        {"datastore build --corpus code", "--out FILE|NAME is required"},
        {"datastore build x --corpus code --out y", "build takes no FILE|NAME"},
        {"datastore build --corpus code --out x --filter-n 2000", "--filter-n: '2000' is not an integer in 0..1024"},
    };
    static char out[1 << 16], cmd[16384];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>&1", arbor_bin, cases[i].args);
        cr_expect_eq(run(cmd, out, sizeof out), 2, "arbor %s: exit status", cases[i].args);
        cr_expect(strstr(out, cases[i].expect) != NULL, "arbor %s: no \"%s\" in: %s", cases[i].args, cases[i].expect,
                  out);
    }
}

/* A database path that is not there: commands that only read say so and exit 1 (`reproduce
   --no-run --db` used to print every claim as "missing" and exit 0, hiding a typo). */
Test(cli, reading_a_missing_database_fails_naming_it, .init = find_binary)
{
    static const char *const cases[] = {"report --db /nonexistent/a.db --table summary",
                                        "reproduce goose --no-run --db /nonexistent/a.db",
                                        "plot --db /nonexistent/a.db --out /tmp"};
    static char out[1 << 14], cmd[8192];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>&1", arbor_bin, cases[i]);
        cr_expect_eq(run(cmd, out, sizeof out), 1, "arbor %s: exit status (%s)", cases[i], out);
        cr_expect(strstr(out, "/nonexistent/a.db: no such database") != NULL, "arbor %s: %s", cases[i], out);
    }
}

/* `run --check` reads no model but does look for a heads file a method names: a path, or
   "{cache}/NAME" (a file in $ARBOR_CACHE, how the committed EntMTP configs name theirs). */
Test(cli, run_check_finds_a_missing_heads_file_in_the_cache, .init = find_binary)
{
    char dir[] = "/tmp/arb_cli_heads_XXXXXX", cfg[128], heads[128], cmd[8192];
    static char out[1 << 14];
    cr_assert(mkdtemp(dir));
    snprintf(cfg, sizeof cfg, "%s/c.json", dir);
    snprintf(heads, sizeof heads, "%s/hy.gguf", dir);
    FILE *f = fopen(cfg, "w");
    cr_assert(f);
    fputs("{\"name\": \"heads-check\", \"models\": [{\"id\": \"m\", \"path\": \"default\"}],\n"
          " \"datasets\": [{\"name\": \"gsm8k\", \"limit\": 1}],\n"
          " \"methods\": [{\"id\": \"AR\", \"preset\": \"ar\"},\n"
          "             {\"id\": \"H\", \"preset\": \"hydra\", \"heads\": \"{cache}/hy.gguf\"}]}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "ARBOR_CACHE=%s %s run %s --check 2>&1", dir, arbor_bin, cfg);
    cr_expect_eq(run(cmd, out, sizeof out), 2, "%s", out);
    char want[256];
    snprintf(want, sizeof want, "methods[1].heads: %s: no such file (train one with arbor train hydra)", heads);
    cr_expect(strstr(out, want) != NULL, "no \"%s\" in: %s", want, out);
    f = fopen(heads, "w"); /* --check only asks that the file is there */
    cr_assert(f);
    fclose(f);
    cr_expect_eq(run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "2 methods") != NULL, "%s", out);
    unlink(heads), unlink(cfg);
    cr_expect_eq(rmdir(dir), 0);
}

/* `bench engine --n-ctx N` gives the context N tokens of KV capacity (as `arbor run`'s 4096
   does) but times the trees at the same long context as without it: the memory line names the
   capacity, the trees line the same cached tokens; the pause line's ratio is its two times'.
   A one-layer SmolLM2-shaped model (33 MB). */
static void bench_line(const char *text, const char *prefix, char *line, size_t cap)
{
    const char *p = strstr(text, prefix);
    cr_assert(p != NULL, "no \"%s\" in: %s", prefix, text);
    size_t n = strcspn(p, ",\n");
    cr_assert(n < cap);
    memcpy(line, p, n);
    line[n] = 0;
}

Test(cli, bench_engine_n_ctx_sets_the_capacity_not_the_long_context, .init = find_binary, .timeout = 300)
{
    char dir[] = "/tmp/arb_cli_nctx_XXXXXX", model[128], cmd[8192], trees[2][128];
    static char out[2][1 << 16];
    cr_assert(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s synth-model --shape smollm2-135m --layers 1 --out %s 2>&1", arbor_bin, model);
    cr_assert_eq(run(cmd, out[0], sizeof out[0]), 0, "%s", out[0]);
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s bench engine --model %s --quick --threads 1 %s 2>&1", arbor_bin, model,
                 k ? "--n-ctx 3000" : "");
        cr_assert_eq(run(cmd, out[k], sizeof out[k]), 0, "%s", out[k]);
        bench_line(out[k], "trees     at ", trees[k], sizeof trees[k]);
    }
    cr_expect_str_eq(trees[1], trees[0], "the long context moved with --n-ctx: %s", out[1]);
    /* the pause line: both times and their ratio, consistent within the printed rounding */
    const char *pl = strstr(out[0], "pause     one node ");
    cr_assert(pl != NULL, "no pause line in: %s", out[0]);
    double w = 0, p = 0, r = 0;
    cr_assert_eq(sscanf(pl, "pause     one node %lf ms right after another, %lf ms after a 20 ms pause = %lfx", &w, &p,
                        &r), 3, "%s", pl);
    cr_expect(w > 0.005 && p > 0, "%s", pl);
    cr_expect(r >= (p - 0.005) / (w + 0.005) - 0.005 && r <= (p + 0.005) / (w - 0.005) + 0.005, "%s", pl);
    /* the kernels' verdict per goal: against the fastest one-node eval the bench timed (no slower
       than the wide trees' and the pause line's), out of reach exactly when the ratio is over */
    double t1w = 0;
    const char *wl = strstr(out[0], "          wide   ");
    cr_assert(wl != NULL && (wl = strstr(wl, "(1 node ")) != NULL && sscanf(wl, "(1 node %lf ms", &t1w) == 1, "%s", out[0]);
    int n_verdicts = 0;
    for (const char *v = strstr(out[0], "nodes: matmuls alone "); v; v = strstr(v + 1, "nodes: matmuls alone ")) {
        double rv = 0, t1 = 0, g = 0;
        cr_assert_eq(sscanf(v, "nodes: matmuls alone %lfx the fastest 1-node eval (%lf ms), goal %lfx", &rv, &t1, &g), 3,
                     "%.160s", v);
        cr_expect(t1 <= t1w + 0.005 && t1 <= w + 0.005, "t1 %.2f, wide %.2f, pause %.2f: %s", t1, t1w, w, out[0]);
        const bool out_of_reach = strstr(v, "out of reach") != NULL && strstr(v, "out of reach") < strchr(v, '\n');
        cr_expect(out_of_reach == (rv > g), "%.200s", v);
        n_verdicts++;
    }
    const bool goals = strstr(out[0], "kernels avx512vnni") != NULL || strstr(out[0], "kernels avx2") != NULL;
    cr_expect_eq(n_verdicts, goals ? 2 : 0, "%s", out[0]);
    cr_expect(strstr(out[1], "3000 tokens' capacity") != NULL, "%s", out[1]);
    cr_expect(strstr(out[0], "3000 tokens' capacity") == NULL, "%s", out[0]);
    snprintf(cmd, sizeof cmd, "%s bench engine --model %s --quick --threads 1 --n-ctx 100000 2>&1", arbor_bin, model);
    cr_expect_eq(run(cmd, out[0], sizeof out[0]), 1, "%s", out[0]);
    cr_expect(strstr(out[0], "--n-ctx) exceed the model's context (8192)") != NULL, "%s", out[0]);
    unlink(model);
    cr_expect_eq(rmdir(dir), 0);
}
