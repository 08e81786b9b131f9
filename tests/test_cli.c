/* test_cli.c — every `arbor` subcommand answers --help with its usage (exit 0),
 * rejects an unknown flag with a non-zero exit, and the top level rejects an
 * unknown command. The command list is read from `arbor --help`, so a new
 * command is covered without editing this file. */
#include <criterion/criterion.h>
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
