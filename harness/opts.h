/* opts.h — the table-driven option parser every `arbor` command uses (git's
 * parse-options, in small): one row per option says its spelling, type, destination,
 * range and help; the same table parses argv and prints the usage, so `--help`, the
 * parser and the README synopsis (tests/test_cli.c compares them) cannot drift.
 *
 *     int max_new = 128; const char *model = "default"; bool steps = false;
 *     const arb_opt opts[] = {
 *         ARB_OPT_STR("--model", "M", &model, "model: default or a GGUF path"),
 *         ARB_OPT_INT("--max-new", "N", &max_new, 1, 1 << 20, "tokens to generate"),
 *         ARB_OPT_FLAG("--steps", &steps, "one line per decoding step on stderr"),
 *         ARB_OPT_END};
 *     const arb_cmd_spec spec = {"generate", "--prompt TEXT", "Generates ...", opts};
 *     int rc = arb_opts_parse(&spec, argc, argv, NULL);       // no positionals
 *     if (rc != ARB_OPTS_OK) return rc == ARB_OPTS_HELP ? 0 : 2;
 *
 * Rows with an alias, a `seen` flag or `required` are written with designated
 * initializers ({.name = "--max-new", .alias = "-n", .kind = ARB_OPT_KIND_INT, ...}).
 * Spelling: `--name VALUE` or `--name=VALUE`; an alias (`-n`, or an old spelling; several
 * separated by commas: "-o,--output") is accepted and listed in the help after the name. Errors name the command and the
 * option ("arbor generate: --max-new: 'x' is not an integer in 1..1048576"). Nothing is
 * allocated: values point into argv.
 */
#ifndef ARB_OPTS_H
#define ARB_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum arb_opt_kind {
    ARB_OPT_KIND_END = 0, /* the table's last row */
    ARB_OPT_KIND_FLAG,    /* bool, set to true; no value */
    ARB_OPT_KIND_STR,     /* const char * into argv */
    ARB_OPT_KIND_INT,     /* int in [lo, hi] */
    ARB_OPT_KIND_DOUBLE,  /* double in [lo, hi] (NaN rejected) */
    ARB_OPT_KIND_U64,     /* uint64_t, decimal */
    ARB_OPT_KIND_LIST,    /* repeatable: values appended to an arb_opt_list */
} arb_opt_kind;

typedef struct arb_opt_list {  /* the values of a repeatable option */
    const char **v;            /* caller's array of cap entries */
    int cap, n;
} arb_opt_list;

typedef struct arb_opt {
    const char *name;    /* "--max-new" (the one spelling documented) */
    const char *alias;   /* "-n" or an old spelling ("-o,--output": several), or NULL */
    arb_opt_kind kind;
    void *dst;           /* per kind: bool *, const char **, int *, double *, uint64_t *, arb_opt_list * */
    double lo, hi;       /* INT/DOUBLE range */
    const char *metavar; /* "N", "PATH" (NULL for flags) */
    const char *help;    /* one line */
    bool *seen;          /* optional: set when the option is given */
    bool required;       /* parsing fails without it; the synopsis shows it without [] */
} arb_opt;

#define ARB_OPT_FLAG(name, dst, help) {name, NULL, ARB_OPT_KIND_FLAG, dst, 0, 0, NULL, help, NULL, false}
#define ARB_OPT_STR(name, mv, dst, help) {name, NULL, ARB_OPT_KIND_STR, dst, 0, 0, mv, help, NULL, false}
#define ARB_OPT_INT(name, mv, dst, lo, hi, help) {name, NULL, ARB_OPT_KIND_INT, dst, lo, hi, mv, help, NULL, false}
#define ARB_OPT_DOUBLE(name, mv, dst, lo, hi, help) {name, NULL, ARB_OPT_KIND_DOUBLE, dst, lo, hi, mv, help, NULL, false}
#define ARB_OPT_U64(name, mv, dst, help) {name, NULL, ARB_OPT_KIND_U64, dst, 0, 0, mv, help, NULL, false}
#define ARB_OPT_LIST(name, mv, dst, help) {name, NULL, ARB_OPT_KIND_LIST, dst, 0, 0, mv, help, NULL, false}
#define ARB_OPT_END {NULL, NULL, ARB_OPT_KIND_END, NULL, 0, 0, NULL, NULL, NULL, false}

typedef struct arb_cmd_spec {
    const char *name;        /* "generate" (usage prints "arbor generate") */
    const char *positionals; /* synopsis of the positional arguments ("CONFIG"), or NULL */
    const char *description; /* paragraph(s) after the synopsis; may be NULL */
    const arb_opt *opts;     /* ends with ARB_OPT_END */
    int min_pos, max_pos;    /* positional count accepted (max_pos -1 = any) */
} arb_cmd_spec;

typedef struct arb_opt_pos { /* positional arguments, in order, pointing into argv */
    char **v;
    int n;
} arb_opt_pos;

enum { ARB_OPTS_OK = 0, ARB_OPTS_HELP = 1, ARB_OPTS_ERROR = 2 };

/* Parse argv[1..argc) (argv[0] is the command name) into the table's destinations;
   positionals are collected in *pos (its v must hold argc entries); pos NULL for a command
   that takes none (any positional is then an error). -h/--help prints
   the usage on stdout and returns ARB_OPTS_HELP; a bad option prints one line naming
   it plus the synopsis on stderr and returns ARB_OPTS_ERROR. "--" ends the options. */
int arb_opts_parse(const arb_cmd_spec *c, int argc, char **argv, arb_opt_pos *pos);

/* The full usage: synopsis, description, one line per option. */
void arb_opts_usage(const arb_cmd_spec *c, FILE *f);

#endif
