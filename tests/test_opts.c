/* test_opts.c — the table-driven option parser (harness/opts.h): value forms, aliases,
 * ranges, required options, repeatable lists and their cap, unknown options, missing
 * values, positional counts and "--". Each case asserts the result class (OK, HELP,
 * ERROR: what the command turns into exit 0 or 2) and, for errors, that the message on
 * stderr names the command and the option. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"

typedef struct vals {
    int n;
    double x;
    uint64_t u;
    const char *s, *req;
    bool flag, n_seen;
    const char *lv[2];
    arb_opt_list list;
} vals;

/* The parse result, with stdout and stderr captured into out/err. */
typedef struct result {
    int rc;
    char out[4096], err[4096];
    char *pos_v[16];
    arb_opt_pos pos;
} result;

static void read_back(FILE *tmp, char *buf, size_t cap)
{
    rewind(tmp);
    const size_t n = fread(buf, 1, cap - 1, tmp);
    buf[n] = 0;
    fclose(tmp);
}

/* argv is a NULL-terminated list after the command name "t"; max_pos -2 = a command without
   positionals, parsed with pos NULL. */
static result parse(vals *v, bool with_req, int min_pos, int max_pos, const char *const *args)
{
    const arb_opt opts[] = {
        {.name = "--n", .alias = "-n", .kind = ARB_OPT_KIND_INT, .dst = &v->n, .lo = 1, .hi = 10, .metavar = "N",
         .seen = &v->n_seen, .help = "an int in 1..10"},
        ARB_OPT_DOUBLE("--x", "X", &v->x, 0, 1, "a number in [0, 1]"),
        ARB_OPT_U64("--u", "U", &v->u, "an unsigned integer"),
        {.name = "--out", .alias = "-o,--output", .kind = ARB_OPT_KIND_STR, .dst = &v->s, .metavar = "PATH",
         .help = "a string"},
        ARB_OPT_FLAG("--flag", &v->flag, "a flag"),
        ARB_OPT_LIST("--set", "KV", &v->list, "repeatable, at most 2"),
        {.name = "--req", .kind = ARB_OPT_KIND_STR, .dst = &v->req, .metavar = "R", .required = with_req,
         .help = "required when asked"},
        ARB_OPT_END};
    const bool no_pos = max_pos == -2;
    const arb_cmd_spec cmd = {"t", no_pos ? NULL : "FILE", "A test command.\n", opts, min_pos, no_pos ? 0 : max_pos};
    static char *argv[16];
    int argc = 0;
    argv[argc++] = "t";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    result r;
    memset(&r, 0, sizeof r);
    r.pos = (arb_opt_pos){r.pos_v, 0};
    v->list = (arb_opt_list){v->lv, 2, 0};
    FILE *to = tmpfile(), *te = tmpfile();
    cr_assert(to && te);
    fflush(stdout), fflush(stderr);
    const int so = dup(1), se = dup(2);
    dup2(fileno(to), 1), dup2(fileno(te), 2);
    r.rc = arb_opts_parse(&cmd, argc, argv, no_pos ? NULL : &r.pos);
    fflush(stdout), fflush(stderr);
    dup2(so, 1), dup2(se, 2);
    close(so), close(se);
    read_back(to, r.out, sizeof r.out);
    read_back(te, r.err, sizeof r.err);
    return r;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ERR_HAS(r, text) cr_assert(strstr((r).err, text) != NULL, "stderr lacks \"%s\": %s", text, (r).err)

Test(opts, value_forms)
{
    vals v = {0};
    result r = parse(&v, false, 0, -1, ARGS("--n", "3", "--x=0.25", "--u", "18446744073709551615", "--out=a=b", "--flag"));
    cr_assert_eq(r.rc, ARB_OPTS_OK, "%s", r.err);
    cr_assert_eq(v.n, 3);
    cr_assert_eq(v.x, 0.25);
    cr_assert_eq(v.u, UINT64_MAX);
    cr_assert_str_eq(v.s, "a=b"); /* only the first '=' separates name and value */
    cr_assert(v.flag && v.n_seen);
    vals w = {0};
    r = parse(&w, false, 0, -1, ARGS("--n=7"));
    cr_assert_eq(r.rc, ARB_OPTS_OK);
    cr_assert_eq(w.n, 7);
    cr_assert_str_eq(r.err, "");
}

Test(opts, aliases_set_the_same_destination)
{
    vals v = {0};
    cr_assert_eq(parse(&v, false, 0, -1, ARGS("-n", "4", "-o", "p1")).rc, ARB_OPTS_OK);
    cr_assert_eq(v.n, 4);
    cr_assert_str_eq(v.s, "p1");
    cr_assert_eq(parse(&v, false, 0, -1, ARGS("--output=p2")).rc, ARB_OPTS_OK);
    cr_assert_str_eq(v.s, "p2");
    /* a prefix of an alias list entry is not an alias */
    result r = parse(&v, false, 0, -1, ARGS("--outp", "x"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "unknown option '--outp'");
}

Test(opts, ranges_and_number_syntax)
{
    vals v = {0};
    result r = parse(&v, false, 0, -1, ARGS("--n", "11"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "arbor t: --n: '11' is not an integer in 1..10");
    r = parse(&v, false, 0, -1, ARGS("-n", "3x"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "--n: '3x' is not an integer");
    r = parse(&v, false, 0, -1, ARGS("--x", "nan"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "--x: 'nan' is not a number in [0, 1]");
    r = parse(&v, false, 0, -1, ARGS("--x=1.5"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "--x: '1.5'");
    r = parse(&v, false, 0, -1, ARGS("--u", "-1"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "--u: '-1' is not an unsigned integer");
    r = parse(&v, false, 0, -1, ARGS("--n", "10", "--x", "1", "--u", "0"));
    cr_assert_eq(r.rc, ARB_OPTS_OK, "the range ends are included: %s", r.err);
    cr_assert_eq(v.n, 10);
}

Test(opts, required_option)
{
    vals v = {0};
    result r = parse(&v, true, 0, -1, ARGS("--n", "2"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "arbor t: --req is required");
    ERR_HAS(r, "usage: arbor t FILE"); /* the synopsis follows the error */
    cr_assert_eq(parse(&v, true, 0, -1, ARGS("--req", "r")).rc, ARB_OPTS_OK);
    cr_assert_str_eq(v.req, "r");
}

Test(opts, repeatable_list_and_its_cap)
{
    vals v = {0};
    result r = parse(&v, false, 0, -1, ARGS("--set", "a=1", "--set=b=2"));
    cr_assert_eq(r.rc, ARB_OPTS_OK);
    cr_assert_eq(v.list.n, 2);
    cr_assert_str_eq(v.list.v[0], "a=1");
    cr_assert_str_eq(v.list.v[1], "b=2");
    r = parse(&v, false, 0, -1, ARGS("--set", "a", "--set", "b", "--set", "c"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "arbor t: --set: given more than 2 times");
}

Test(opts, unknown_option_and_flag_with_value)
{
    vals v = {0};
    result r = parse(&v, false, 0, -1, ARGS("--bogus=3"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "arbor t: unknown option '--bogus'");
    r = parse(&v, false, 0, -1, ARGS("-z"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "unknown option '-z'");
    r = parse(&v, false, 0, -1, ARGS("--flag=yes"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "--flag takes no value");
}

Test(opts, missing_value)
{
    vals v = {0};
    result r = parse(&v, false, 0, -1, ARGS("--n"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "arbor t: --n needs a value (N)");
    r = parse(&v, false, 0, -1, ARGS("--out"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "--out needs a value (PATH)");
}

Test(opts, positional_counts)
{
    vals v = {0};
    result r = parse(&v, false, 1, 2, ARGS("--flag"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "arbor t: missing argument: FILE");
    r = parse(&v, false, 1, 2, ARGS("a", "--n", "2", "b"));
    cr_assert_eq(r.rc, ARB_OPTS_OK);
    cr_assert_eq(r.pos.n, 2);
    cr_assert_str_eq(r.pos.v[0], "a");
    cr_assert_str_eq(r.pos.v[1], "b");
    r = parse(&v, false, 1, 2, ARGS("a", "b", "c"));
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "unexpected argument 'c'");
    r = parse(&v, false, 0, 0, ARGS("-")); /* "-" (stdin) is a positional, not an option */
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    ERR_HAS(r, "unexpected argument '-'");
}

Test(opts, double_dash_ends_options)
{
    vals v = {0};
    result r = parse(&v, false, 0, -1, ARGS("--n", "2", "--", "--n", "-x", "--help"));
    cr_assert_eq(r.rc, ARB_OPTS_OK, "%s", r.err);
    cr_assert_eq(v.n, 2);
    cr_assert_eq(r.pos.n, 3);
    cr_assert_str_eq(r.pos.v[0], "--n");
    cr_assert_str_eq(r.pos.v[2], "--help");
    cr_assert_str_eq(r.out, "", "--help after -- is an argument, not a request for help");
}

Test(opts, help_prints_the_table)
{
    vals v = {0};
    result r = parse(&v, true, 1, 1, ARGS("--n", "99", "-h")); /* left to right: the bad value first */
    cr_assert_eq(r.rc, ARB_OPTS_ERROR, "an error before -h is reported first");
    ERR_HAS(r, "--n: '99'");
    r = parse(&v, true, 1, 1, ARGS("--help"));
    cr_assert_eq(r.rc, ARB_OPTS_HELP, "--help needs neither the required option nor the positional");
    cr_assert_str_eq(r.err, "");
    /* the synopsis: positionals, then each option; a list with "...", a required one without [] */
    cr_assert(strstr(r.out, "usage: arbor t FILE [--n N] [--x X] [--u U] [--out PATH] [--flag] [--set KV]... --req R\n"),
              "%s", r.out);
    cr_assert(strstr(r.out, "  --n N (-n)"), "%s", r.out);
    cr_assert(strstr(r.out, "  --out PATH (-o, --output)"), "%s", r.out);
    cr_assert(strstr(r.out, "A test command.\n"), "%s", r.out);
}

Test(opts, no_positional_slot_rejects_positionals)
{
    vals v = {0};
    result r = parse(&v, false, 0, -2, (const char *const[]){"--n", "3", NULL});
    cr_assert_eq(r.rc, ARB_OPTS_OK, "%s", r.err);
    cr_assert_eq(v.n, 3);
    r = parse(&v, false, 0, -2, (const char *const[]){"--flag", "stray", NULL});
    cr_assert_eq(r.rc, ARB_OPTS_ERROR);
    cr_assert(strstr(r.err, "unexpected argument 'stray'"), "%s", r.err);
}
