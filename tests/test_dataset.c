/* test_dataset.c — dataset loaders: every manifest dataset loads with its record count and
 * known first records (needs $ARBOR_DATA, else those tests skip); malformed files written
 * here give file:line/field errors; datasets/fetch argument handling and checksum logic. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset.h"

static const char *data_or_skip(void)
{
    const char *d = getenv("ARBOR_DATA");
    if (!d || !*d)
        cr_skip("ARBOR_DATA not set: no benchmark data to test against");
    return d;
}

static arb_dataset *open_ok(const char *dir, const char *name, const char *split)
{
    arb_dataset *d = NULL;
    arb_err err = {0};
    int rc = arb_dataset_open(dir, name, split, &d, &err);
    cr_assert_eq(rc, ARB_OK, "%s/%s: %s", name, split ? split : "(default)", err.msg);
    cr_assert_not_null(d);
    return d;
}

static bool starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- the real files ---- */

Test(dataset, every_dataset_loads_with_the_manifest_record_count)
{
    const char *dir = data_or_skip();
    size_t n;
    const arb_dataset_info *list = arb_dataset_list(&n);
    cr_assert_eq(n, 28);
    for (size_t i = 0; i < n; i++) {
        arb_dataset *d = open_ok(dir, list[i].name, "all");
        cr_assert_eq(arb_dataset_n_read(d), list[i].n_records, "%s", list[i].name);
        /* sg_90k holds 20 first turns not by a human (16 system, 4 gpt) and one empty one by a
           human: they are no prompts. */
        size_t want = !strcmp(list[i].name, "sharegpt-90k")         ? 2957
                      : !strcmp(list[i].name, "sharegpt-multiturn") ? 3118 /* parts starting with a non-empty human turn */
                                                                    : list[i].n_records;
        cr_assert_eq(arb_dataset_count(d), want, "%s: %zu prompts", list[i].name, arb_dataset_count(d));
        for (size_t j = 0; j < arb_dataset_count(d); j++) {
            const arb_record *r = arb_dataset_get(d, j);
            cr_assert(r->id && *r->id, "%s[%zu]: empty id", list[i].name, j);
            cr_assert(r->n_turns >= 1 && r->n_turns <= 2, "%s[%zu]", list[i].name, j);
            for (int t = 0; t < r->n_turns; t++)
                cr_assert(r->turns[t] && *r->turns[t], "%s[%zu] turn %d empty", list[i].name, j, t);
        }
        /* ids are unique (they key results across runs) */
        size_t m = arb_dataset_count(d);
        const char **ids = malloc(m * sizeof *ids);
        cr_assert_not_null(ids);
        for (size_t j = 0; j < m; j++)
            ids[j] = arb_dataset_get(d, j)->id;
        qsort(ids, m, sizeof *ids, cmp_str);
        for (size_t j = 1; j < m; j++)
            cr_assert_str_neq(ids[j], ids[j - 1], "%s: duplicate id", list[i].name);
        free(ids);
        cr_assert_null(arb_dataset_get(d, arb_dataset_count(d)));
        cr_assert_eq(arb_dataset_get_info(d), &list[i]);
        arb_dataset_free(d);
    }
}

typedef struct first_fact {
    const char *name, *split, *id, *category, *prefix;
    int n_turns;
} first_fact;

/* Read off the files by hand (zcat | head -1, jq '.[0]'); they are the upstream data. */
static const first_fact firsts[] = {
    {"humaneval", NULL, "HumanEval/0", NULL, "from typing import List\n\n\ndef has_close_elements(", 1},
    {"gsm8k", NULL, "0", NULL, "Janet\xE2\x80\x99s ducks lay 16 eggs per day.", 1},
    {"mbpp", NULL, "11", NULL,
     "You are an expert Python programmer, and here is your task: Write a python function to "
     "remove first and last occurrence of a given character from the string. Your code should "
     "pass these tests:\n\nassert remove_Occ(\"hello\",\"l\") == \"heo\"\nassert "
     "remove_Occ(\"abcda\",\"a\") == \"bcd\"\nassert remove_Occ(\"PHP\",\"P\") == \"H\"", 1},
    {"mbpp", "all", "1", NULL, "You are an expert Python programmer, and here is your task: Write "
     "a function to find the minimum cost path", 1},
    {"classeval", NULL, "ClassEval_0", NULL, "Please complete the class AccessGatewayFilter in the "
     "following code.\nimport logging\nimport datetime\n\nclass AccessGatewayFilter:", 1},
    {"mt-bench", NULL, "81", "writing", "Compose an engaging travel blog post about a recent trip "
     "to Hawaii", 2},
    {"spec-bench", NULL, "81", "writing", "Compose an engaging travel blog post", 2},
    {"spec-bench", "translation", "161", "translation", "Translate German to English:", 1},
    {"math500", NULL, "test/precalculus/807.json", "Precalculus", "Convert the point $(0,3)$ in "
     "rectangular coordinates to polar coordinates.", 1},
    {"olympiadbench", NULL, "1606", "Combinatorics", "Xenia and Sergey play the following game.", 1},
    {"sharegpt", NULL, "fzcoUcK_0", NULL, "How to stop automatic updates from the WSUS Server", 1},
    {"sharegpt-1000", NULL, "wc1OQ5t_9", NULL, "a. A blog is a type of website", 1},
    {"sharegpt-90k", NULL, "pX51ZUz", NULL, "Below is the payment determination algorithm", 1},
    {"livecodebench", NULL, "abc365_b", NULL, "You will be given a question (problem specification) "
     "and will generate a correct Python program that matches the specification and passes all "
     "tests.\n\nQuestion: You are given an integer sequence A=(A_1,\\ldots,A_N) of length N.", 1},
    {"arc-challenge", NULL, "Mercury_7175875", NULL, "Question: An astronomer observes that a planet "
     "rotates faster after a meteorite impact. Which is the most likely effect of this increase in "
     "rotation?\nA. Planetary density will decrease.\nB. Planetary years will become longer.\nC. "
     "Planetary days will become shorter.\nD. Planetary gravity will become stronger.\nAnswer:", 1},
    {"arc-easy", NULL, "0", NULL, "Question: Which statement best explains why photosynthesis is the "
     "foundation of most food webs?\nA. Sunlight is the source of energy for nearly all ecosystems."
     "\nB. Most ecosystems are found on land instead of in water.\nC. Carbon dioxide is more "
     "available than other gases.\nD. The producers in all ecosystems are plants.\nAnswer:", 1},
    {"alpacaeval", NULL, "0", "helpful_base", "What are the names of some famous actors that started "
     "their careers on Broadway?", 1},
    {"alpacaeval", "vicuna", "725", "vicuna", "How can I improve my time management skills?", 1},
    {"alpaca", NULL, "0", NULL, "What would be the best type of exercise for a person who has arthritis?", 1},
    {"tatoeba-en-de", NULL, "0", NULL, "Translate this from English to German:\nEnglish: In 1935 "
     "Einstein was granted permanent residency in the United States and became a citizen in 1940.\nGerman:", 1},
    {"tatoeba-de-en", NULL, "0", NULL, "Translate this from German to English:\nGerman: 1935 erhielt "
     "Einstein von den Vereinigten Staaten eine dauerhafte Aufenthaltsgenehmigung und 1940 die "
     "Staatsb\xC3\xBCrgerschaft.\nEnglish:", 1},
    {"tatoeba-en-fr", NULL, "0", NULL, "Translate this from English to French:\nEnglish: 80% of all "
     "English words come from other languages.\nFrench:", 1},
    {"tatoeba-fr-en", NULL, "0", NULL, "Translate this from French to English:\nFrench: Quatre-vingt "
     "pour cent des mots anglais proviennent d'autres langues.\nEnglish:", 1},
    {"tatoeba-en-es", NULL, "0", NULL, "Translate this from English to Spanish:\nEnglish: 100 years is "
     "called a century.\nSpanish:", 1},
    {"tatoeba-es-en", NULL, "0", NULL, "Translate this from Spanish to English:\nSpanish: Cien a\xC3\xB1os "
     "se llama un siglo.\nEnglish:", 1},
    {"tatoeba-en-it", NULL, "0", NULL, "Translate this from English to Italian:\nEnglish: 95 years old! "
     "God Save the Queen!\nItalian:", 1},
    {"tatoeba-it-en", NULL, "0", NULL, "Translate this from Italian to English:\nItalian: 95 anni! Dio "
     "salvi la regina!\nEnglish:", 1},
    {"tatoeba-en-zh", NULL, "0", NULL, "Translate this from English to Chinese:\nEnglish: Tom got drunk "
     "with his friends in the park.\nChinese:", 1},
    {"tatoeba-zh-en", NULL, "0", NULL, "Translate this from Chinese to English:\nChinese: "
     "\xE6\xB1\xA4\xE5\xA7\x86\xE5\x92\x8C\xE4\xBB\x96\xE7\x9A\x84\xE6\x9C\x8B\xE5\x8F\x8B\xE4\xBB\xAC"
     "\xE5\x9C\xA8\xE5\x85\xAC\xE5\x9B\xAD\xE5\x96\x9D\xE9\x86\x89\xE4\xBA\x86\nEnglish:", 1},
    {"gsm8k-train", NULL, "0", NULL, "Natalia sold clips to 48 of her friends in April", 1},
    {"sharegpt-multiturn", NULL, "QWJhYvA_0", NULL, "Summarize the main ideas of Jeff Walker's", 1},
};

Test(dataset, first_record_of_each_has_the_known_id_and_prompt)
{
    const char *dir = data_or_skip();
    for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
        const first_fact *f = &firsts[i];
        arb_dataset *d = open_ok(dir, f->name, f->split);
        const arb_record *r = arb_dataset_get(d, 0);
        cr_assert_str_eq(r->id, f->id, "%s", f->name);
        if (f->category)
            cr_assert_str_eq(r->category, f->category, "%s", f->name);
        else
            cr_assert_null(r->category, "%s", f->name);
        cr_assert_eq(r->n_turns, f->n_turns, "%s", f->name);
        cr_assert(starts(r->turns[0], f->prefix), "%s: turn 0 is \"%.120s\"", f->name, r->turns[0]);
        arb_dataset_free(d);
    }
}

Test(dataset, mt_bench_has_two_turns_per_record)
{
    const char *dir = data_or_skip();
    arb_dataset *d = open_ok(dir, "mt-bench", NULL);
    cr_assert_eq(arb_dataset_count(d), 80);
    for (size_t i = 0; i < 80; i++)
        cr_assert_eq(arb_dataset_get(d, i)->n_turns, 2, "record %zu", i);
    cr_assert(starts(arb_dataset_get(d, 0)->turns[1], "Rewrite your previous response."));
    arb_dataset_free(d);
    /* Spec-Bench: its 80 MT-Bench questions have 2 turns, the 400 others 1. */
    d = open_ok(dir, "spec-bench", "all");
    size_t two = 0;
    for (size_t i = 0; i < arb_dataset_count(d); i++)
        two += arb_dataset_get(d, i)->n_turns == 2;
    cr_assert_eq(two, 80);
    arb_dataset_free(d);
}

Test(dataset, mbpp_splits_are_task_id_ranges)
{
    const char *dir = data_or_skip();
    static const struct { const char *split; size_t n; const char *first, *last; } want[] = {
        {NULL, 500, "11", "510"},      {"test", 500, "11", "510"},       {"all", 974, "1", "974"},
        {"prompt", 10, "1", "10"},     {"validation", 90, "511", "600"}, {"train", 374, "601", "974"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        arb_dataset *d = open_ok(dir, "mbpp", want[i].split);
        size_t n = arb_dataset_count(d);
        cr_assert_eq(n, want[i].n, "%s: %zu", want[i].split ? want[i].split : "default", n);
        cr_assert_str_eq(arb_dataset_get(d, 0)->id, want[i].first);
        cr_assert_str_eq(arb_dataset_get(d, n - 1)->id, want[i].last);
        cr_assert_eq(arb_dataset_n_read(d), 974);
        arb_dataset_free(d);
    }
}

Test(dataset, category_names_are_splits)
{
    const char *dir = data_or_skip();
    arb_dataset *d = open_ok(dir, "mt-bench", "coding");
    cr_assert_eq(arb_dataset_count(d), 10);
    for (size_t i = 0; i < 10; i++)
        cr_assert_str_eq(arb_dataset_get(d, i)->category, "coding");
    arb_dataset_free(d);
    d = open_ok(dir, "math500", "Number Theory");
    cr_assert_eq(arb_dataset_count(d), 62);
    arb_dataset_free(d);
    arb_err err = {0};
    cr_assert_eq(arb_dataset_open(dir, "mt-bench", "cooking", &d, &err), ARB_E_INVAL);
    cr_assert_null(d);
    cr_assert(strstr(err.msg, "unknown split \"cooking\"") && strstr(err.msg, "humanities"), "%s", err.msg);
}

/* ARC: every question renders its own number of lettered options (3 to 5 in ARC-Challenge, as
   the labels in the file; always 4 in the llm-foundry ARC-Easy copy); Tatoeba: the two files of
   a pair are line-aligned, so record i of tatoeba-en-de and of tatoeba-de-en are translations. */
Test(dataset, arc_options_and_tatoeba_alignment)
{
    const char *dir = data_or_skip();
    arb_dataset *d = open_ok(dir, "arc-challenge", NULL);
    size_t three = 0, five = 0;
    for (size_t i = 0; i < arb_dataset_count(d); i++) {
        const char *s = arb_dataset_get(d, i)->turns[0];
        cr_assert(starts(s, "Question: ") && strstr(s, "\nA. ") && strstr(s, "\nC. "), "%zu: %s", i, s);
        three += !strstr(s, "\nD. ");
        five += strstr(s, "\nE. ") != NULL;
        cr_assert(!strcmp(s + strlen(s) - 8, "\nAnswer:"), "%zu", i);
    }
    cr_assert_eq(three, 4);
    cr_assert_eq(five, 3);
    arb_dataset_free(d);
    static const char *const pairs[][2] = {{"tatoeba-en-de", "tatoeba-de-en"}, {"tatoeba-en-fr", "tatoeba-fr-en"},
        {"tatoeba-en-es", "tatoeba-es-en"}, {"tatoeba-en-it", "tatoeba-it-en"}, {"tatoeba-en-zh", "tatoeba-zh-en"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        arb_dataset *a = open_ok(dir, pairs[i][0], NULL), *b = open_ok(dir, pairs[i][1], NULL);
        size_t n = arb_dataset_count(a);
        cr_assert_eq(n, arb_dataset_count(b), "%s", pairs[i][0]);
        char last[32];
        snprintf(last, sizeof last, "%zu", n - 1);
        cr_assert_str_eq(arb_dataset_get(a, n - 1)->id, last); /* id = 0-based line index */
        cr_assert_str_eq(arb_dataset_get(b, n - 1)->id, last);
        arb_dataset_free(a);
        arb_dataset_free(b);
    }
}

/* ---- errors, on files written here ---- */

typedef struct tmpdir {
    char path[256];
} tmpdir;

static void tmp_make(tmpdir *t)
{
    snprintf(t->path, sizeof t->path, "/tmp/arbor-test-dataset-XXXXXX");
    cr_assert_not_null(mkdtemp(t->path));
}

/* Write `body` to dir/rel (creating the one subdirectory level). */
static void put(const tmpdir *t, const char *rel, const char *body, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", t->path, rel);
    char *slash = strrchr(p, '/');
    *slash = 0;
    mkdir(p, 0755);
    *slash = '/';
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    cr_assert_eq(fwrite(body, 1, len, f), len);
    fclose(f);
}
#define PUT(t, rel, lit) put((t), (rel), (lit), sizeof(lit) - 1)

static void tmp_remove(const tmpdir *t)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->path);
    cr_assert_eq(system(cmd), 0);
}

/* Open `name` in t, expect rc and a message containing `want`. */
static void expect_error(const tmpdir *t, const char *name, const char *split, int rc, const char *want)
{
    arb_dataset *d = (arb_dataset *)1;
    arb_err err = {0};
    cr_assert_eq(arb_dataset_open(t->path, name, split, &d, &err), rc, "%s: %s", name, err.msg);
    cr_assert_null(d);
    cr_assert(strstr(err.msg, want), "%s: message \"%s\" lacks \"%s\"", name, err.msg, want);
}

Test(dataset, malformed_lines_are_reported_with_file_line_and_field)
{
    tmpdir t;
    tmp_make(&t);
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": \"a\"}\n\n{\"question\": \"b\", \"answer\": \"1\"\n");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT, "gsm8k/test.jsonl:3: invalid JSON");
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": \"a\"}\r\n{\"question\": \"b\"}\r\n{\"answer\": \"1\"}\r\n");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT,
                 "gsm8k/test.jsonl:3: expected string field \"question\" (missing)");
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": 17}\n");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT,
                 "gsm8k/test.jsonl:1: expected string field \"question\", got a number");
    PUT(&t, "gsm8k/test.jsonl", "[\"question\"]\n");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT, "gsm8k/test.jsonl:1: expected a JSON object, got an array");
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": \"a\"} x\n");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT, "gsm8k/test.jsonl:1: text after the JSON value");
    PUT(&t, "gsm8k/test.jsonl", "");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT, "gsm8k/test.jsonl: no records");
    PUT(&t, "gsm8k/test.jsonl", "\n  \n");
    expect_error(&t, "gsm8k", NULL, ARB_E_FORMAT, "gsm8k/test.jsonl: no records");
    PUT(&t, "mbpp/mbpp.jsonl", "{\"task_id\": 11, \"text\": \"t\", \"test_list\": [\"a\", \"b\", 3]}\n");
    expect_error(&t, "mbpp", NULL, ARB_E_FORMAT, "mbpp/mbpp.jsonl:1: expected string field \"test_list[2]\", got a number");
    PUT(&t, "mbpp/mbpp.jsonl", "{\"task_id\": 1.5, \"text\": \"t\", \"test_list\": []}\n");
    expect_error(&t, "mbpp", NULL, ARB_E_FORMAT, "mbpp/mbpp.jsonl:1: expected non-empty string or integer field \"task_id\", got a number");
    PUT(&t, "mbpp/mbpp.jsonl", "{\"task_id\": \"x\", \"text\": \"t\", \"test_list\": []}\n");
    expect_error(&t, "mbpp", "test", ARB_E_FORMAT, "split \"test\" needs an integer task_id, got \"x\"");
    PUT(&t, "mt-bench/question.jsonl", "{\"question_id\": 1, \"category\": \"c\", \"turns\": [\"a\"]}\n"
        "{\"question_id\": 2, \"category\": \"c\", \"turns\": \"a\"}\n");
    expect_error(&t, "mt-bench", NULL, ARB_E_FORMAT, "mt-bench/question.jsonl:2: expected non-empty array-of-strings field \"turns\", got a string");
    PUT(&t, "mt-bench/question.jsonl", "{\"question_id\": 1, \"category\": \"c\", \"turns\": [\"a\", null]}\n");
    expect_error(&t, "mt-bench", NULL, ARB_E_FORMAT, "mt-bench/question.jsonl:1: expected string field \"turns[1]\", got null");
    PUT(&t, "mt-bench/question.jsonl", "{\"question_id\": 1, \"category\": 5, \"turns\": [\"a\"]}\n");
    expect_error(&t, "mt-bench", NULL, ARB_E_FORMAT, "mt-bench/question.jsonl:1: expected string field \"category\", got a number");
    tmp_remove(&t);
}

Test(dataset, malformed_json_arrays_are_reported_with_index_and_field)
{
    tmpdir t;
    tmp_make(&t);
    PUT(&t, "classeval/ClassEval_data.json", "[\n {\"task_id\": \"C0\", \"class_name\": \"A\", \"skeleton\": \"s\"},\n"
        " {\"task_id\": \"C1\", \"class_name\": \"B\"}\n]\n");
    expect_error(&t, "classeval", NULL, ARB_E_FORMAT, "classeval/ClassEval_data.json: [1]: expected string field \"skeleton\" (missing)");
    PUT(&t, "classeval/ClassEval_data.json", "[\n {\"task_id\": \"C0\",\n  \"skeleton\" \"s\"}\n]\n");
    expect_error(&t, "classeval", NULL, ARB_E_FORMAT, "classeval/ClassEval_data.json:3: invalid JSON");
    PUT(&t, "classeval/ClassEval_data.json", "{\"task_id\": \"C0\"}");
    expect_error(&t, "classeval", NULL, ARB_E_FORMAT, "expected a JSON array of records, got an object");
    PUT(&t, "classeval/ClassEval_data.json", "[]");
    expect_error(&t, "classeval", NULL, ARB_E_FORMAT, "no records");
    /* an empty conversation is no prompt (sharegpt-multiturn has 33); a `from` of another type is an error */
    PUT(&t, "sharegpt/ShareGPT_V3_filtered_500.json",
        "[{\"id\": \"a\", \"conversations\": []}, {\"id\": \"b\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}]");
    arb_dataset *d = open_ok(t.path, "sharegpt", NULL);
    cr_assert_eq(arb_dataset_count(d), 1);
    cr_assert_str_eq(arb_dataset_get(d, 0)->id, "b");
    arb_dataset_free(d);
    PUT(&t, "sharegpt/ShareGPT_V3_filtered_500.json", "[{\"id\": \"a\", \"conversations\": [{\"from\": 3}]}]");
    expect_error(&t, "sharegpt", NULL, ARB_E_FORMAT, "ShareGPT_V3_filtered_500.json: [0]: expected string field \"conversations[0].from\", got a number");
    tmp_remove(&t);
}

/* Plain-text line files (Tatoeba): the error names file and line. */
Test(dataset, malformed_text_lines_are_reported_with_file_and_line)
{
    tmpdir t;
    tmp_make(&t);
    const char *f = "opus100/tatoeba-test-v2021-08-07.deu-eng.eng";
    PUT(&t, f, "Hello.\nThis is fine.\n\nAfter a gap.\n");
    expect_error(&t, "tatoeba-en-de", NULL, ARB_E_FORMAT, "deu-eng.eng:3: empty line");
    PUT(&t, f, "Hello.\nBad \xC3\x28 byte.\n");
    expect_error(&t, "tatoeba-en-de", NULL, ARB_E_FORMAT, "deu-eng.eng:2: invalid UTF-8 (byte column 5)");
    PUT(&t, f, "ok\n\xED\xA0\x80 surrogate\n");
    expect_error(&t, "tatoeba-en-de", NULL, ARB_E_FORMAT, "deu-eng.eng:2: invalid UTF-8 (byte column 1)");
    PUT(&t, f, "ok\nok\nNUL\0here\n");
    expect_error(&t, "tatoeba-en-de", NULL, ARB_E_FORMAT, "deu-eng.eng:3: NUL byte (column 4)");
    PUT(&t, f, "");
    expect_error(&t, "tatoeba-en-de", NULL, ARB_E_FORMAT, "deu-eng.eng: no records");
    /* CRLF endings and a last line without a newline are fine; ids are line indices */
    PUT(&t, f, "One.\r\nTwo {x}.\r\nGr\xC3\xBC\xC3\x9F dich");
    arb_dataset *d = open_ok(t.path, "tatoeba-en-de", NULL);
    cr_assert_eq(arb_dataset_count(d), 3);
    cr_assert_str_eq(arb_dataset_get(d, 1)->id, "1");
    cr_assert_str_eq(arb_dataset_get(d, 1)->turns[0], "Translate this from English to German:\nEnglish: Two {x}.\nGerman:");
    cr_assert_str_eq(arb_dataset_get(d, 2)->turns[0], "Translate this from English to German:\nEnglish: Gr\xC3\xBC\xC3\x9F dich\nGerman:");
    arb_dataset_free(d);
    tmp_remove(&t);
}

/* "{field:abc}": lettered multiple-choice options (ARC). */
Test(dataset, lettered_options_render_and_reject_bad_choices)
{
    tmpdir t;
    tmp_make(&t);
    PUT(&t, "arc/arc_easy.jsonl", "{\"query\": \"Question: Q?\", \"choices\": [\"x\", \"y\", \"z\"], \"gold\": 0}\n");
    arb_dataset *d = open_ok(t.path, "arc-easy", NULL);
    cr_assert_str_eq(arb_dataset_get(d, 0)->turns[0], "Question: Q?\nA. x\nB. y\nC. z\nAnswer:");
    arb_dataset_free(d);
    PUT(&t, "arc/arc_easy.jsonl", "{\"query\": \"Q\", \"choices\": [\"x\"]}\n{\"query\": \"Q\", \"choices\": [\"x\", 2]}\n");
    expect_error(&t, "arc-easy", NULL, ARB_E_FORMAT, "arc_easy.jsonl:2: expected string field \"choices[1]\", got a number");
    PUT(&t, "arc/arc_easy.jsonl", "{\"query\": \"Q\", \"choices\": []}\n");
    expect_error(&t, "arc-easy", NULL, ARB_E_FORMAT, "arc_easy.jsonl:1: expected non-empty array-of-strings field \"choices\", got an array");
    PUT(&t, "arc/arc_easy.jsonl", "{\"query\": \"Q\", \"choices\": [\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\","
        "\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\",\"r\",\"s\",\"t\",\"u\",\"v\",\"w\",\"x\",\"y\",\"z\",\"27\"]}\n");
    expect_error(&t, "arc-easy", NULL, ARB_E_FORMAT, "arc_easy.jsonl:1: field \"choices\" has 27 options");
    PUT(&t, "arc/ARC-Challenge-Test.jsonl", "{\"id\": \"M_1\", \"question\": \"Q\", \"choices\": {\"label\": [\"A\"]}}\n");
    expect_error(&t, "arc-challenge", NULL, ARB_E_FORMAT, "ARC-Challenge-Test.jsonl:1: expected non-empty array-of-strings field \"choices.text\" (missing)");
    tmp_remove(&t);
}

Test(dataset, truncated_gzip_is_an_error)
{
    tmpdir t;
    tmp_make(&t);
    char dir[300], p[400];
    snprintf(dir, sizeof dir, "%s/humaneval", t.path);
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/HumanEval.jsonl.gz", dir);
    gzFile g = gzopen(p, "wb");
    cr_assert_not_null(g);
    for (int i = 0; i < 200; i++)
        gzprintf(g, "{\"task_id\": \"HumanEval/%d\", \"prompt\": \"def f%d(x):\\n    \\\"\\\"\\\" doc %d \\\"\\\"\\\"\\n\"}\n", i, i, i * 7919);
    gzclose(g);
    arb_dataset *d = open_ok(t.path, "humaneval", NULL); /* intact: 200 records, ids from the data */
    cr_assert_eq(arb_dataset_count(d), 200);
    cr_assert_str_eq(arb_dataset_get(d, 199)->id, "HumanEval/199");
    cr_assert_str_eq(arb_dataset_get(d, 3)->turns[0], "def f3(x):\n    \"\"\" doc 23757 \"\"\"\n");
    arb_dataset_free(d);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(truncate(p, st.st_size / 2), 0);
    expect_error(&t, "humaneval", NULL, ARB_E_FORMAT, "humaneval/HumanEval.jsonl.gz: gzip: unexpected end of file");
    tmp_remove(&t);
}

Test(dataset, small_valid_files_load_with_templates_filters_and_ids)
{
    tmpdir t;
    tmp_make(&t);
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": \"q0\"}\n\n{\"question\": \"q1\", \"answer\": \"#### 2\"}");
    arb_dataset *d = open_ok(t.path, "gsm8k", NULL);
    cr_assert_eq(arb_dataset_count(d), 2);
    cr_assert_str_eq(arb_dataset_get(d, 1)->id, "1"); /* no id field: the record index */
    cr_assert_str_eq(arb_dataset_get(d, 1)->turns[0], "q1");
    arb_dataset_free(d);
    /* optional [[context]] section: present -> "ctx\n\nq", null or absent -> "q" */
    PUT(&t, "olympiadbench/test.jsonl",
        "{\"id\": 1, \"subfield\": \"Algebra\", \"context\": \"ctx\", \"question\": \"q{1}\"}\n"
        "{\"id\": 2, \"subfield\": \"Algebra\", \"context\": null, \"question\": \"q2\"}\n"
        "{\"id\": 3, \"question\": \"q3\"}\n");
    d = open_ok(t.path, "olympiadbench", NULL);
    cr_assert_str_eq(arb_dataset_get(d, 0)->turns[0], "ctx\n\nq{1}");
    cr_assert_str_eq(arb_dataset_get(d, 1)->turns[0], "q2");
    cr_assert_str_eq(arb_dataset_get(d, 2)->turns[0], "q3");
    cr_assert_null(arb_dataset_get(d, 2)->category);
    arb_dataset_free(d);
    /* ShareGPT: first turns not from a human are read but are not prompts */
    PUT(&t, "sharegpt/ShareGPT_V3_filtered_1000.json",
        "[{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]},"
        " {\"id\": \"b\", \"conversations\": [{\"from\": \"gpt\", \"value\": \"yo\"}]}]");
    d = open_ok(t.path, "sharegpt-1000", NULL);
    cr_assert_eq(arb_dataset_n_read(d), 2);
    cr_assert_eq(arb_dataset_count(d), 1);
    cr_assert_str_eq(arb_dataset_get(d, 0)->turns[0], "hi");
    arb_dataset_free(d);
    tmp_remove(&t);
}

Test(dataset, unknown_names_splits_and_missing_paths)
{
    tmpdir t;
    tmp_make(&t);
    expect_error(&t, "humaneva1", NULL, ARB_E_INVAL, "unknown dataset \"humaneva1\" (known: humaneval, gsm8k, mbpp");
    expect_error(&t, "humaneva1", NULL, ARB_E_INVAL, "sharegpt-90k");
    expect_error(&t, "gsm8k", NULL, ARB_E_NOTFOUND, "/gsm8k/test.jsonl: No such file or directory");
    expect_error(&t, "gsm8k", NULL, ARB_E_NOTFOUND, "datasets/fetch");
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": \"q0\"}\n");
    expect_error(&t, "gsm8k", "validation", ARB_E_INVAL, "gsm8k: unknown split \"validation\" (known: test,all)");
    arb_dataset *d = (arb_dataset *)1;
    arb_err err = {0};
    cr_assert_eq(arb_dataset_open("/nonexistent/arbor-data", "gsm8k", NULL, &d, &err), ARB_E_NOTFOUND);
    cr_assert_null(d);
    cr_assert(strstr(err.msg, "/nonexistent/arbor-data") && strstr(err.msg, "ARBOR_DATA") &&
              strstr(err.msg, "datasets/fetch"), "%s", err.msg);
    arb_dataset_free(NULL);
    tmp_remove(&t);
}

Test(dataset, data_dir_resolution_order)
{
    char buf[4096];
    setenv("ARBOR_DATA", "/from/env", 1);
    cr_assert_eq(arb_dataset_dir("/from/flag", buf, sizeof buf, NULL), ARB_OK);
    cr_assert_str_eq(buf, "/from/flag");
    cr_assert_eq(arb_dataset_dir(NULL, buf, sizeof buf, NULL), ARB_OK);
    cr_assert_str_eq(buf, "/from/env");
    unsetenv("ARBOR_DATA");
    setenv("ARBOR_CACHE", "/cache", 1);
    cr_assert_eq(arb_dataset_dir("", buf, sizeof buf, NULL), ARB_OK);
    cr_assert_str_eq(buf, "/cache/data");
}

/* ---- the manifest file and datasets/fetch ---- */

static const char *source_root_or_skip(void)
{
    const char *r = getenv("ARBOR_SOURCE_ROOT");
    if (!r || !*r)
        cr_skip("ARBOR_SOURCE_ROOT not set (run through meson test)");
    return r;
}

Test(dataset, manifest_tsv_matches_the_table)
{
    const char *root = source_root_or_skip();
    char p[4096], line[2048];
    snprintf(p, sizeof p, "%s/datasets/manifest.tsv", root);
    FILE *f = fopen(p, "r");
    cr_assert_not_null(f, "%s", p);
    size_t n, row = 0;
    const arb_dataset_info *list = arb_dataset_list(&n);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char name[64], file[256], sha[80], url[1024];
        size_t recs, bytes;
        cr_assert_eq(sscanf(line, "%63[^\t]\t%255[^\t]\t%zu\t%zu\t%79[^\t]\t%1023[^\t\n]", name, file,
                            &recs, &bytes, sha, url), 6, "%s", line);
        cr_assert_lt(row, n);
        const arb_dataset_info *in = &list[row++];
        cr_assert_str_eq(name, in->name);
        cr_assert_str_eq(file, in->file);
        cr_assert_eq(recs, in->n_records, "%s", name);
        cr_assert_eq(bytes, in->n_bytes, "%s", name);
        cr_assert_str_eq(sha, in->sha256, "%s", name);
        /* "-": no upstream download (a derived file; datasets/README.md) */
        cr_assert(starts(url, "https://raw.githubusercontent.com/") || !strcmp(url, "-"), "%s", url);
    }
    fclose(f);
    cr_assert_eq(row, n);
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "%s", cmd);
    return WEXITSTATUS(st);
}

Test(dataset, fetch_script_arguments)
{
    const char *root = source_root_or_skip();
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --help >/dev/null", root);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --bogus >/dev/null 2>&1", root);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --only gsm8k,nope --dest /nonexistent >/dev/null 2>&1", root);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --dest >/dev/null 2>&1", root);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --from-dir /nonexistent/x >/dev/null 2>&1", root);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "test \"$(sh '%s/datasets/fetch' --list | wc -l)\" -eq 28", root);
    cr_assert_eq(sh(cmd), 0);
}

Test(dataset, fetch_script_copies_verified_files_and_rejects_corrupt_ones)
{
    const char *root = source_root_or_skip();
    const char *data = data_or_skip();
    tmpdir t, bad;
    tmp_make(&t);
    tmp_make(&bad);
    char cmd[8192];
    /* a good copy: installed, then loadable */
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --from-dir '%s' --dest '%s' --only gsm8k,mt-bench >/dev/null",
             root, data, t.path);
    cr_assert_eq(sh(cmd), 0);
    arb_dataset *d = open_ok(t.path, "mt-bench", NULL);
    cr_assert_eq(arb_dataset_count(d), 80);
    arb_dataset_free(d);
    /* a corrupt copy (one byte changed): rejected, exit 1, nothing installed; a missing one too */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/math500' && sed '1s/Convert/Konvert/' '%s/math500/test.jsonl' > '%s/math500/test.jsonl'",
             bad.path, data, bad.path);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --from-dir '%s' --dest '%s' --only math500 >/dev/null 2>&1",
             root, bad.path, t.path);
    cr_assert_eq(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --from-dir '%s' --dest '%s' --only gsm8k,classeval --force >/dev/null 2>&1",
             root, bad.path, t.path);
    cr_assert_eq(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "test ! -e '%s/math500/test.jsonl' && test ! -e '%s/classeval/ClassEval_data.json' "
             "&& test -z \"$(find '%s' -name '*.part.*')\"", t.path, t.path, t.path);
    cr_assert_eq(sh(cmd), 0, "a rejected file or a temporary was left in the data directory");
    /* a file without an upstream URL (arc-challenge, a derived file): named, exit 1, nothing left */
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --dest '%s' --only arc-challenge 2>&1 | "
             "grep -q 'NO URL   arc-challenge: arc/ARC-Challenge-Test.jsonl has no upstream download'", root, t.path);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "sh '%s/datasets/fetch' --dest '%s' --only arc-challenge >/dev/null 2>&1", root, t.path);
    cr_assert_eq(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "test ! -e '%s/arc' && sh '%s/datasets/fetch' --from-dir '%s' --dest '%s' "
             "--only arc-challenge >/dev/null", t.path, root, data, t.path);
    cr_assert_eq(sh(cmd), 0, "with --from-dir the derived file is copied and verified");
    /* the good gsm8k survives a failed --force re-fetch */
    d = open_ok(t.path, "gsm8k", NULL);
    cr_assert_eq(arb_dataset_count(d), 1319);
    arb_dataset_free(d);
    tmp_remove(&t);
    tmp_remove(&bad);
}

/* ---- `arbor datasets` ---- */

Test(dataset, cli_marks_corrupt_files_and_exits_non_zero)
{
    const char *b = getenv("ARBOR_BUILD_ROOT");
    if (!b || !*b)
        cr_skip("ARBOR_BUILD_ROOT not set (run through meson test)");
    tmpdir t;
    tmp_make(&t);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/harness/arbor' datasets --data '%s' >/dev/null", b, t.path);
    cr_assert_eq(sh(cmd), 0, "missing files are listed, not an error");
    PUT(&t, "gsm8k/test.jsonl", "{\"question\": \"q0\"}\n");
    snprintf(cmd, sizeof cmd, "'%s/harness/arbor' datasets --data '%s' 2>/dev/null | grep -q '^gsm8k .*CORRUPT'",
             b, t.path);
    cr_assert_eq(sh(cmd), 0, "the corrupt file is not marked");
    snprintf(cmd, sizeof cmd, "'%s/harness/arbor' datasets --data '%s' >/dev/null 2>&1", b, t.path);
    cr_assert_eq(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "'%s/harness/arbor' datasets show gsm8k --data '%s' | grep -qx q0", b, t.path);
    cr_assert_eq(sh(cmd), 0);
    tmp_remove(&t);
}
