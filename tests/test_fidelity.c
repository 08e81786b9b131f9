/* test_fidelity.c — `arbor bench fidelity`'s files for scoring another engine (model suite; skips
 * without the default model or $ARBOR_DATA): the dumped reference is the prompt and the
 * reference's continuation; a score file that repeats the reference agrees everywhere, one
 * changed token costs exactly one position with a non-negative gap, and a missing, repeated or
 * malformed line is an error naming the file (and line). Each scored engine is paired with
 * arbor's own argmax: arbor's dumped argmax scores as arbor (difference 0, every position
 * equal), the reference itself as 1 - arbor's rate. Several datasets take `limit` prompts
 * each, in the order named. A dumped reference read back (--ref) gives the run it came from bit
 * for bit (its rows recomputed by one chain each), with its datasets ("# set" lines; none: one
 * set "all"; lines that do not cover the prompts are refused), and one from another model is
 * refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "default_model.h"
#include "fidelity.h"

#define N_PROMPTS 2
#define MAX_NEW 6

typedef struct ref_line { int n_prompt, n_gen, n; int32_t ids[1024]; } ref_line;

static char dir[] = "/tmp/arb_fidXXXXXX";

static void setup(void)
{
    ARB_TEST_NEED_MODEL_AND_DATA();
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static int run_ex(const char *sets, int limit, const char *dump, const char *score, const char *argmax,
                  arb_fidelity_result *r, arb_err *err)
{
    const arb_fidelity_opts o = {.model = "default", .dataset = sets, .limit = limit, .max_new = MAX_NEW,
                                 .threads = 1, .n_boot = 50, .dump_ref = dump, .score = score, .dump_argmax = argmax};
    return arb_fidelity_run(&o, r, NULL, err);
}

static int run(const char *dump, const char *score, arb_fidelity_result *r, arb_err *err)
{
    return run_ex("humaneval", N_PROMPTS, dump, score, NULL, r, err);
}

static int read_ref(const char *path, ref_line *out)
{
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    static char line[1 << 16];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char *p = line;
        cr_assert_eq(strtol(p, &p, 10), n);
        ref_line *l = &out[n++];
        l->n_prompt = (int)strtol(p, &p, 10), l->n_gen = (int)strtol(p, &p, 10), l->n = 0;
        while (*p && *p != '\n') {
            if (*p == ',' || *p == '\t') {
                p++;
                continue;
            }
            l->ids[l->n++] = (int32_t)strtol(p, &p, 10);
        }
    }
    fclose(f);
    return n;
}

/* The reference's own tokens as scores, with position (wrong_i, wrong_j) changed (-1: none) and
   position (skip_i, skip_j) left out (-1: none). */
static void write_scores(const char *path, const ref_line *ref, int n, int wrong_i, int wrong_j, int skip_i,
                         int skip_j)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "# test scores\n");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < ref[i].n_gen; j++) {
            if (i == skip_i && j == skip_j)
                continue;
            int32_t id = ref[i].ids[ref[i].n_prompt + j];
            if (i == wrong_i && j == wrong_j)
                id = id == 7 ? 8 : 7;
            fprintf(f, "%d\t%d\t%d\n", i, j, id);
        }
    fclose(f);
}

Test(fidelity, another_engine_is_scored_on_the_dumped_reference, .init = setup, .fini = teardown)
{
    char dump[300], sc[300], sc2[600];
    snprintf(dump, sizeof dump, "%s/ref.tsv", dir);
    snprintf(sc, sizeof sc, "%s/same.tsv", dir);
    arb_fidelity_result r;
    arb_err err = {0};
    cr_assert_eq(run(dump, NULL, &r, &err), ARB_OK, "%s", err.msg);
    static ref_line ref[N_PROMPTS];
    cr_assert_eq(read_ref(dump, ref), N_PROMPTS);
    int total = 0;
    for (int i = 0; i < N_PROMPTS; i++) {
        cr_assert(ref[i].n_prompt > 0 && ref[i].n_gen >= 1 && ref[i].n_gen <= MAX_NEW);
        cr_assert_eq(ref[i].n, ref[i].n_prompt + ref[i].n_gen);
        total += ref[i].n_gen;
    }
    cr_assert_eq(r.v[0].n_pos, total); /* "as stored" compared the same positions */
    /* the reference itself, and then with one token changed */
    write_scores(sc, ref, N_PROMPTS, -1, -1, -1, -1);
    snprintf(sc2, sizeof sc2, "%s,%s/one_off.tsv", sc, dir);
    write_scores(sc2 + strlen(sc) + 1, ref, N_PROMPTS, 1, 0, -1, -1);
    cr_assert_eq(run(NULL, sc2, &r, &err), ARB_OK, "%s", err.msg);
    const arb_fidelity_variant *same = &r.v[r.n_variants - 2], *off = &r.v[r.n_variants - 1];
    cr_assert(strstr(same->name, "same.tsv") && strstr(off->name, "one_off.tsv"), "%s / %s", same->name, off->name);
    cr_assert_eq(same->n_pos, total);
    cr_assert_eq(same->n_agree, total);
    cr_assert_float_eq(same->rate, 1.0, 1e-12);
    cr_assert(isnan(same->mean_abs_dlogit) && isnan(same->gap_median));
    cr_assert_eq(off->n_agree, total - 1);
    cr_assert_eq(off->agree_p[1], off->pos_p[1] - 1);
    cr_assert(off->gap_max >= 0.0, "gap %g: the reference's own token is its argmax", off->gap_max);
    /* a position missing, a position twice, a malformed line: errors naming the file */
    write_scores(sc, ref, N_PROMPTS, -1, -1, 0, 1);
    cr_assert_neq(run(NULL, sc, &r, &err), ARB_OK);
    cr_assert(strstr(err.msg, sc) && strstr(err.msg, "prompt 0 position 1 not scored"), "%s", err.msg);
    FILE *f = fopen(sc, "a");
    fprintf(f, "0\t1\t5\n0\t1\t5\n");
    fclose(f);
    cr_assert_neq(run(NULL, sc, &r, &err), ARB_OK);
    cr_assert(strstr(err.msg, sc) && strstr(err.msg, "twice"), "%s", err.msg);
    f = fopen(sc, "w");
    fprintf(f, "0\tx\t5\n");
    fclose(f);
    cr_assert_neq(run(NULL, sc, &r, &err), ARB_OK);
    cr_assert(strstr(err.msg, ":1:"), "%s", err.msg);
}

Test(fidelity, scored_engines_are_paired_with_arbors_own_argmax, .init = setup, .fini = teardown)
{
    char dump[300], mine[300], refsc[300], both[700];
    snprintf(dump, sizeof dump, "%s/ref.tsv", dir);
    snprintf(mine, sizeof mine, "%s/arbor.tsv", dir);
    snprintf(refsc, sizeof refsc, "%s/ref_scores.tsv", dir);
    arb_fidelity_result r;
    arb_err err = {0};
    /* two datasets, one prompt each: humaneval's first, then gsm8k's */
    cr_assert_eq(run_ex("humaneval,gsm8k", 1, dump, NULL, mine, &r, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(r.n_prompts, 2);
    cr_assert_str_eq(r.datasets, "humaneval,gsm8k");
    cr_assert_eq(r.n_sets, 2);
    cr_assert_str_eq(r.set_name[0], "humaneval");
    cr_assert_str_eq(r.set_name[1], "gsm8k");
    cr_assert(r.set_first[0] == 0 && r.set_count[0] == 1 && r.set_first[1] == 1 && r.set_count[1] == 1);
    static ref_line ref[2];
    cr_assert_eq(read_ref(dump, ref), 2);
    arb_fidelity_result one;
    cr_assert_eq(run_ex("gsm8k", 1, NULL, NULL, NULL, &one, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(one.v[0].pos_p[0], r.v[0].pos_p[1], "gsm8k's prompt is the second");
    cr_assert_eq(one.v[0].agree_p[0], r.v[0].agree_p[1]);
    write_scores(refsc, ref, 2, -1, -1, -1, -1);
    snprintf(both, sizeof both, "%s,%s", mine, refsc);
    cr_assert_eq(run_ex("humaneval,gsm8k", 1, NULL, both, NULL, &r, &err), ARB_OK, "%s", err.msg);
    const arb_fidelity_variant *st = &r.v[0], *me = &r.v[r.n_variants - 2], *rf = &r.v[r.n_variants - 1];
    cr_assert(isnan(st->diff) && st->same_as_stored == -1, "the as-stored variant is not paired with itself");
    /* arbor's own argmax, read back: the same agreements, difference exactly 0 */
    cr_assert_eq(me->n_agree, st->n_agree);
    cr_assert_eq(me->same_as_stored, st->n_pos);
    cr_assert_float_eq(me->diff, 0.0, 1e-15);
    cr_assert(me->diff_lo == 0.0 && me->diff_hi == 0.0, "[%g, %g]", me->diff_lo, me->diff_hi);
    /* the reference itself: agrees everywhere; arbor's argmax equals it where arbor agrees */
    cr_assert_eq(rf->n_agree, rf->n_pos);
    cr_assert_eq(rf->same_as_stored, st->n_agree);
    cr_assert_float_eq(rf->diff, st->rate - 1.0, 1e-12);
    cr_assert(rf->diff_lo <= rf->diff + 1e-12 && rf->diff <= rf->diff_hi + 1e-12 && rf->diff_hi <= 1e-12,
              "%g in [%g, %g]", rf->diff, rf->diff_lo, rf->diff_hi);
    /* bad lists: an unknown name is named; limit x datasets over the cap is refused */
    cr_assert_neq(run_ex("humaneval,no-such-set", 1, NULL, NULL, NULL, &r, &err), ARB_OK);
    cr_assert(strstr(err.msg, "no-such-set"), "%s", err.msg);
    cr_assert_eq(run_ex("humaneval,gsm8k", ARB_FIDELITY_MAX_PROMPTS, NULL, NULL, NULL, &r, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "limit x datasets"), "%s", err.msg);
    /* a --score file that cannot be read is reported before the run, naming it */
    char none[300];
    snprintf(none, sizeof none, "%s/no_such_scores.tsv", dir);
    cr_assert_eq(run_ex("humaneval", 1, NULL, none, NULL, &r, &err), ARB_E_NOTFOUND);
    cr_assert(strstr(err.msg, none) && r.n_prompts == 0, "%s (%d prompts)", err.msg, r.n_prompts);
}

Test(fidelity, a_dumped_reference_read_back_gives_the_same_measurement, .init = setup, .fini = teardown)
{
    char dump[300], bad[300];
    snprintf(dump, sizeof dump, "%s/ref.tsv", dir);
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    arb_fidelity_result a, b;
    arb_err err = {0};
    cr_assert_eq(run_ex("humaneval,mbpp", 1, dump, NULL, NULL, &a, &err), ARB_OK, "%s", err.msg);
    const arb_fidelity_opts o = {.model = "default", .ref_in = dump, .threads = 1, .n_boot = 50};
    cr_assert_eq(arb_fidelity_run(&o, &b, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(b.n_prompts, a.n_prompts);
    cr_assert_eq(b.n_variants, a.n_variants);
    cr_assert_eq(b.n_sets, 2, "the dump's '# set' lines are read back");
    for (int k = 0; k < 2; k++)
        cr_assert(!strcmp(b.set_name[k], a.set_name[k]) && b.set_first[k] == a.set_first[k] &&
                  b.set_count[k] == a.set_count[k]);
    for (int k = 0; k < a.n_variants; k++) {
        cr_assert_str_eq(b.v[k].name, a.v[k].name);
        cr_assert_eq(b.v[k].n_pos, a.v[k].n_pos);
        cr_assert_eq(b.v[k].n_agree, a.v[k].n_agree);
        /* the same rows: the same logit error, to the last bit of the sum */
        cr_assert(b.v[k].mean_abs_dlogit == a.v[k].mean_abs_dlogit, "%s: %.17g vs %.17g", a.v[k].name,
                  b.v[k].mean_abs_dlogit, a.v[k].mean_abs_dlogit);
    }
    /* the file as stored only: one variant, the same one */
    const arb_fidelity_opts os = {.model = "default", .ref_in = dump, .threads = 1, .n_boot = 50, .stored_only = true};
    cr_assert_eq(arb_fidelity_run(&os, &b, NULL, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(b.n_variants, 1);
    cr_assert(b.v[0].n_agree == a.v[0].n_agree && b.v[0].mean_abs_dlogit == a.v[0].mean_abs_dlogit);
    /* a continuation token that is not the F32 model's argmax: another model's reference */
    static ref_line ref[2];
    cr_assert_eq(read_ref(dump, ref), 2);
    FILE *f = fopen(bad, "w");
    cr_assert(f);
    for (int i = 0; i < 2; i++) {
        fprintf(f, "%d\t%d\t%d\t", i, ref[i].n_prompt, ref[i].n_gen);
        for (int k = 0; k < ref[i].n; k++) {
            int32_t id = ref[i].ids[k];
            if (i == 1 && k == ref[i].n_prompt) /* the second prompt's first generated token */
                id = id == 7 ? 8 : 7;
            fprintf(f, "%s%d", k ? "," : "", id);
        }
        fputc('\n', f);
    }
    fclose(f);
    const arb_fidelity_opts ob = {.model = "default", .ref_in = bad, .threads = 1, .n_boot = 50};
    cr_assert_neq(arb_fidelity_run(&ob, &b, NULL, &err), ARB_OK);
    cr_assert(strstr(err.msg, bad) && strstr(err.msg, ":2:") && strstr(err.msg, "another model"), "%s", err.msg);
    /* without set lines: one set of every prompt; with set lines that do not cover them: refused */
    char line[1 << 14];
    for (int pass = 0; pass < 2; pass++) {
        FILE *in = fopen(dump, "r"), *out = fopen(bad, "w");
        cr_assert(in && out);
        if (pass == 1)
            fprintf(out, "# set humaneval 0 5\n");
        while (fgets(line, sizeof line, in))
            if (strncmp(line, "# set ", 6))
                fputs(line, out);
        fclose(in), fclose(out);
        const int rc = arb_fidelity_run(&(arb_fidelity_opts){.model = "default", .ref_in = bad, .threads = 1, .n_boot = 50,
                                                             .stored_only = true},
                                        &b, NULL, &err);
        if (pass == 0) {
            cr_assert_eq(rc, ARB_OK, "%s", err.msg);
            cr_assert(b.n_sets == 1 && !strcmp(b.set_name[0], "all") && b.set_count[0] == 2);
        } else {
            cr_assert_neq(rc, ARB_OK);
            cr_assert(strstr(err.msg, "cover 5 prompts of 2"), "%s", err.msg);
        }
    }
    /* a line with fewer ids than n_prompt + n_gen */
    f = fopen(bad, "w");
    fprintf(f, "0\t3\t2\t1,2,3,4\n");
    fclose(f);
    cr_assert_neq(arb_fidelity_run(&ob, &b, NULL, &err), ARB_OK);
    cr_assert(strstr(err.msg, ":1:") && strstr(err.msg, "n_prompt + n_gen"), "%s", err.msg);
}
