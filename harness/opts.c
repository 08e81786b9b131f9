/* opts.c — the table-driven option parser (opts.h). */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether `alias` (one spelling, or several separated by commas: "-o,--output") has the
   spelling arg[0..len). */
static bool alias_has(const char *alias, const char *arg, size_t len)
{
    for (const char *a = alias; a && *a;) {
        const char *end = strchr(a, ',');
        const size_t n = end ? (size_t)(end - a) : strlen(a);
        if (n == len && !strncmp(a, arg, len))
            return true;
        a = end ? end + 1 : NULL;
    }
    return false;
}

/* The option named by arg[0..len) (the text before any "=value"), by its name or an
   alias; NULL if none. */
static const arb_opt *find_opt(const arb_opt *o, const char *arg, size_t len)
{
    for (; o->kind != ARB_OPT_KIND_END; o++)
        if ((strlen(o->name) == len && !strncmp(o->name, arg, len)) || alias_has(o->alias, arg, len))
            return o;
    return NULL;
}

static void synopsis(const arb_cmd_spec *c, FILE *f)
{
    /* "usage: arbor NAME [options] POSITIONALS", then the options wrapped at ~90 columns */
    char line[160];
    int n = snprintf(line, sizeof line, "usage: arbor %s", c->name);
    const int indent = n;
    if (c->positionals)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s", c->positionals);
    for (const arb_opt *o = c->opts; o->kind != ARB_OPT_KIND_END; o++) {
        char item[96];
        const char *l = o->required ? "" : "[", *r = o->required ? "" : "]";
        if (o->metavar)
            snprintf(item, sizeof item, " %s%s %s%s%s", l, o->name, o->metavar, r, o->kind == ARB_OPT_KIND_LIST ? "..." : "");
        else
            snprintf(item, sizeof item, " %s%s%s", l, o->name, r);
        if (n + (int)strlen(item) > 92) {
            fprintf(f, "%s\n", line);
            n = snprintf(line, sizeof line, "%*s", indent, "");
        }
        n += snprintf(line + n, sizeof line - (size_t)n, "%s", item);
    }
    fprintf(f, "%s\n", line);
}

void arb_opts_usage(const arb_cmd_spec *c, FILE *f)
{
    synopsis(c, f);
    if (c->description)
        fprintf(f, "\n%s", c->description);
    if (c->opts->kind == ARB_OPT_KIND_END)
        return;
    fprintf(f, "\noptions:\n");
    for (const arb_opt *o = c->opts; o->kind != ARB_OPT_KIND_END; o++) {
        char head[96];
        int n = snprintf(head, sizeof head, "%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        if (o->alias) { /* "(-o, --output)": the accepted other spellings */
            n += snprintf(head + n, sizeof head - (size_t)n, " (");
            for (const char *a = o->alias; *a && n < (int)sizeof head - 4; a++)
                n += *a == ',' ? snprintf(head + n, sizeof head - (size_t)n, ", ")
                               : snprintf(head + n, sizeof head - (size_t)n, "%c", *a);
            snprintf(head + n, sizeof head - (size_t)n, ")");
        }
        fprintf(f, "  %-22s %s\n", head, o->help ? o->help : "");
    }
}

static int fail(const arb_cmd_spec *c, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "arbor %s: ", c->name);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    synopsis(c, stderr);
    return ARB_OPTS_ERROR;
}

static int set_value(const arb_cmd_spec *c, const arb_opt *o, const char *v)
{
    char *e = NULL;
    char range[96];
    switch (o->kind) {
    case ARB_OPT_KIND_STR:
        *(const char **)o->dst = v;
        return ARB_OPTS_OK;
    case ARB_OPT_KIND_LIST: {
        arb_opt_list *l = o->dst;
        if (l->n >= l->cap) {
            snprintf(range, sizeof range, "%d times", l->cap);
            return fail(c, "%s: given more than %s", o->name, range);
        }
        l->v[l->n++] = v;
        return ARB_OPTS_OK;
    }
    case ARB_OPT_KIND_INT: {
        errno = 0;
        const long x = strtol(v, &e, 10);
        if (e == v || *e || errno || x < o->lo || x > o->hi) {
            snprintf(range, sizeof range, "'%s' is not an integer in %.0f..%.0f", v, o->lo, o->hi);
            return fail(c, "%s: %s", o->name, range);
        }
        *(int *)o->dst = (int)x;
        return ARB_OPTS_OK;
    }
    case ARB_OPT_KIND_DOUBLE: {
        const double x = strtod(v, &e);
        if (e == v || *e || isnan(x) || x < o->lo || x > o->hi) {
            snprintf(range, sizeof range, "'%s' is not a number in [%g, %g]", v, o->lo, o->hi);
            return fail(c, "%s: %s", o->name, range);
        }
        *(double *)o->dst = x;
        return ARB_OPTS_OK;
    }
    case ARB_OPT_KIND_U64: {
        errno = 0;
        const unsigned long long x = strtoull(v, &e, 10);
        if (e == v || *e || errno || v[0] == '-')
            return fail(c, "%s: '%s' is not an unsigned integer", o->name, v);
        *(uint64_t *)o->dst = (uint64_t)x;
        return ARB_OPTS_OK;
    }
    default:
        return fail(c, "%s: internal: bad option kind%s", o->name, "");
    }
}

int arb_opts_parse(const arb_cmd_spec *c, int argc, char **argv, arb_opt_pos *pos)
{
    if (pos)
        pos->n = 0;
    int n_opts = 0;
    while (c->opts[n_opts].kind != ARB_OPT_KIND_END)
        n_opts++;
    bool given[n_opts > 0 ? n_opts : 1];
    memset(given, 0, sizeof given);
    bool only_pos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || !a[1]) { /* "-" alone is a positional (stdin) */
            if (!pos)
                return fail(c, "unexpected argument '%s'%s", a, "");
            pos->v[pos->n++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            arb_opts_usage(c, stdout);
            return ARB_OPTS_HELP;
        }
        const char *eq = strchr(a, '=');
        const size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const arb_opt *o = find_opt(c->opts, a, len);
        if (!o) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(len < 60 ? len : 60), a);
            return fail(c, "unknown option '%s'%s (arbor <command> --help lists them)", name, "");
        }
        if (o->seen)
            *o->seen = true;
        given[o - c->opts] = true;
        if (o->kind == ARB_OPT_KIND_FLAG) {
            if (eq)
                return fail(c, "%s takes no value%s", o->name, "");
            *(bool *)o->dst = true;
            continue;
        }
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return fail(c, "%s needs a value (%s)", o->name, o->metavar ? o->metavar : "");
        const int rc = set_value(c, o, v);
        if (rc != ARB_OPTS_OK)
            return rc;
    }
    for (int k = 0; k < n_opts; k++)
        if (c->opts[k].required && !given[k])
            return fail(c, "%s is required%s", c->opts[k].name, "");
    const int n_pos = pos ? pos->n : 0;
    if (n_pos < c->min_pos || (c->max_pos >= 0 && n_pos > c->max_pos)) {
        if (n_pos < c->min_pos)
            return fail(c, "missing argument%s%s", c->positionals ? ": " : "", c->positionals ? c->positionals : "");
        return fail(c, "unexpected argument '%s'%s", pos->v[c->max_pos], "");
    }
    return ARB_OPTS_OK;
}
