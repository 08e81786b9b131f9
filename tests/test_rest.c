/* test_rest.c — the REST datastore and retrieval (harness/datastore.h, harness/drafters/rest.h):
 * suffix-array lookups against a brute-force scan of real SmolLM2 token ids
 * (tests/fixtures/tokenizer_smollm2.out), the trie's count pruning, the file round trip and
 * the wrong-tokenizer / corrupt-file errors. The drafter's losslessness on the real model is
 * in test_decode.c (model suite). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datastore.h"
#include "drafters/rest.h"

#define MAXTOK 4096
static int32_t T[MAXTOK]; /* the fixture's ids, documents back to back */
static int doc_start[64], doc_len[64], n_docs;

static void load_fixture(void)
{
    char path[4096];
    const char *root = getenv("ARBOR_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer_smollm2.out", root ? root : ".");
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    char line[8192];
    int n = 0;
    n_docs = 0;
    while (fgets(line, sizeof line, f) && n_docs < 64) {
        doc_start[n_docs] = n;
        for (char *p = strtok(line, " \n"); p && n < MAXTOK; p = strtok(NULL, " \n"))
            T[n++] = atoi(p);
        doc_len[n_docs] = n - doc_start[n_docs];
        if (doc_len[n_docs] > 0)
            n_docs++;
    }
    fclose(f);
    cr_assert_gt(n_docs, 10);
}

/* Every fixture document twice (repeats give multi-occurrence matches), vocab 49152. */
static arb_datastore *build_fixture(void)
{
    arb_err err = {0};
    arb_datastore_builder *b;
    cr_assert_eq(arb_datastore_builder_new(49152, &b, &err), ARB_OK, "%s", err.msg);
    for (int rep = 0; rep < 2; rep++)
        for (int d = 0; d < n_docs; d++)
            cr_assert_eq(arb_datastore_builder_add(b, T + doc_start[d], (size_t)doc_len[d], &err), ARB_OK);
    arb_datastore_meta m = {.n_vocab = 49152};
    snprintf(m.tokenizer_sha256, sizeof m.tokenizer_sha256, "%064d", 7);
    snprintf(m.model, sizeof m.model, "fixture");
    snprintf(m.corpus, sizeof m.corpus, "tokenizer_smollm2.out x2");
    arb_datastore *ds;
    cr_assert_eq(arb_datastore_builder_finish(b, &m, &ds, &err), ARB_OK, "%s", err.msg);
    return ds;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Brute force: every start p where the stored text (separators included) begins with q. */
static int brute(const arb_datastore *ds, const int32_t *q, int m, uint64_t *out)
{
    uint64_t n = arb_datastore_get_meta(ds)->n_tokens;
    int k = 0;
    for (uint64_t p = 0; p + (uint64_t)m <= n; p++) {
        int j = 0;
        while (j < m && arb_datastore_token(ds, p + (uint64_t)j) == q[j])
            j++;
        if (j == m)
            out[k++] = p;
    }
    return k;
}

static long check_all_queries(const arb_datastore *ds) /* returns queries with > 2 matches */
{
    const arb_datastore_meta *md = arb_datastore_get_meta(ds);
    uint64_t n = md->n_tokens;
    uint64_t *bf = malloc(n * sizeof *bf), *sa = malloc(n * sizeof *sa);
    int32_t q[8];
    long checked = 0, multi = 0;
    for (uint64_t p = 0; p < n; p++)
        for (int m = 1; m <= 6 && p + (uint64_t)m <= n; m++) {
            bool sep = false;
            for (int j = 0; j < m; j++)
                sep |= (q[j] = arb_datastore_token(ds, p + (uint64_t)j)) < 0;
            if (sep)
                break;
            uint64_t lo, hi;
            arb_datastore_find(ds, q, m, &lo, &hi);
            int k = brute(ds, q, m, bf);
            cr_assert_eq(hi - lo, (uint64_t)k, "query at %llu len %d: SA %llu rows, brute force %d",
                         (unsigned long long)p, m, (unsigned long long)(hi - lo), k);
            for (uint64_t i = lo; i < hi; i++)
                sa[i - lo] = arb_datastore_sa(ds, i);
            qsort(sa, (size_t)k, sizeof *sa, cmp_u64);
            cr_assert_eq(memcmp(sa, bf, (size_t)k * sizeof *sa), 0, "positions differ at %llu len %d",
                         (unsigned long long)p, m);
            checked++;
            multi += k > 2;
        }
    int32_t absent[2] = {T[0], 49151}; /* 49151 never occurs in the fixture */
    uint64_t lo, hi;
    arb_datastore_find(ds, absent, 2, &lo, &hi);
    cr_assert_eq(hi, lo);
    int32_t sepq[1] = {-1}; /* the separator is never matched */
    arb_datastore_find(ds, sepq, 1, &lo, &hi);
    cr_assert_eq(hi, lo);
    cr_log_info("%ld queries checked", checked);
    free(bf);
    free(sa);
    return multi;
}

Test(rest, suffix_array_matches_brute_force_on_real_tokens)
{
    load_fixture();
    arb_datastore *ds = build_fixture();
    const arb_datastore_meta *m = arb_datastore_get_meta(ds);
    cr_assert_eq(m->token_width, 2);
    cr_assert_eq(m->n_docs, (uint64_t)(2 * n_docs));
    cr_assert_gt(check_all_queries(ds), 100, "the fixture repeats n-grams beyond the doubled copy");
    arb_datastore_free(ds);
}

Test(rest, wide_vocabulary_uses_four_byte_tokens)
{
    arb_err err = {0};
    arb_datastore_builder *b;
    cr_assert_eq(arb_datastore_builder_new(200000, &b, &err), ARB_OK);
    int32_t doc[] = {150000, 7, 150000, 7, 65535, 150000, 8};
    cr_assert_eq(arb_datastore_builder_add(b, doc, 7, &err), ARB_OK);
    int32_t bad = 200000;
    cr_assert_eq(arb_datastore_builder_add(b, &bad, 1, &err), ARB_E_RANGE);
    arb_datastore_meta m = {.n_vocab = 200000};
    arb_datastore *ds;
    cr_assert_eq(arb_datastore_builder_finish(b, &m, &ds, &err), ARB_OK, "%s", err.msg);
    cr_assert_eq(arb_datastore_get_meta(ds)->token_width, 4);
    check_all_queries(ds);
    int32_t q[2] = {150000, 7};
    uint64_t lo, hi;
    arb_datastore_find(ds, q, 2, &lo, &hi);
    cr_assert_eq(hi - lo, 2);
    arb_datastore_free(ds);
}

/* A datastore where the context [1 2] is followed by known continuations. */
static arb_datastore *build_counts(void)
{
    static const int32_t docs[][6] = {
        {1, 2, 3, 4, 5, 9}, {1, 2, 3, 4, 5, 9}, {1, 2, 3, 4, 5, 0}, {1, 2, 3, 4, 5, 0}, {1, 2, 3, 4, 5, 0},
        {1, 2, 3, 4, 6, 0}, {1, 2, 3, 4, 6, 0}, {1, 2, 3, 4, 6, 0}, {1, 2, 3, 7, 0, 0}, {1, 2, 3, 7, 0, 0},
        {1, 2, 8, 0, 0, 0}, {5, 1, 2, 8, 9, 9},
    };
    arb_err err = {0};
    arb_datastore_builder *b;
    cr_assert_eq(arb_datastore_builder_new(16, &b, &err), ARB_OK);
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++)
        cr_assert_eq(arb_datastore_builder_add(b, docs[d], 6, &err), ARB_OK);
    arb_datastore_meta m = {.n_vocab = 16};
    arb_datastore *ds;
    cr_assert_eq(arb_datastore_builder_finish(b, &m, &ds, &err), ARB_OK, "%s", err.msg);
    return ds;
}

Test(rest, trie_keeps_the_most_frequent_prefixes)
{
    arb_datastore *ds = build_counts();
    arb_err err = {0};
    arb_rest_opts o = arb_rest_default_opts();
    o.n_draft = 4, o.cont_len = 3;
    arb_rest_retriever *r;
    cr_assert_eq(arb_rest_retriever_new(&o, &r, &err), ARB_OK, "%s", err.msg);
    int32_t S[] = {0, 1, 2};
    arb_rest_result res;
    int n = arb_rest_retrieve(r, ds, S, 3, &res);
    /* [0 1 2] is nowhere (0 ends documents only as padding before the separator... and never
       precedes 1), so the longest matching suffix is [1 2]: 12 occurrences */
    cr_assert_eq(res.match_len, 2);
    cr_assert_eq(res.n_matches, 12);
    cr_assert_eq(n, 4);
    /* counts: 3:10, 3-4:8, 3-4-5:5, 3-4-6:3, 3-7:2, 8:2, 8-0:1, 8-9:1 ... */
    const int32_t tok[] = {3, 4, 5, 6}, cnt[] = {10, 8, 5, 3}, par[] = {-1, 0, 1, 1}, pc[] = {12, 10, 8, 8};
    for (int i = 0; i < n; i++) {
        cr_assert_eq(res.tok[i], tok[i], "node %d token", i);
        cr_assert_eq(res.count[i], cnt[i], "node %d count", i);
        cr_assert_eq(res.parent[i], par[i], "node %d parent", i);
        cr_assert_eq(res.parent_count[i], pc[i], "node %d parent count", i);
    }
    /* a larger budget takes the ties at count 2 shallower first: [8] (depth 1) before [3 7] */
    arb_rest_retriever_free(r);
    o.n_draft = 5;
    cr_assert_eq(arb_rest_retriever_new(&o, &r, &err), ARB_OK);
    n = arb_rest_retrieve(r, ds, S, 3, &res);
    cr_assert_eq(n, 5);
    cr_assert_eq(res.tok[4], 8);
    cr_assert_eq(res.parent[4], -1);
    cr_assert_eq(res.count[4], 2);
    /* max_matches caps the occurrences, taken in suffix-array order (continuation order) */
    arb_rest_retriever_free(r);
    o.max_matches = 3;
    cr_assert_eq(arb_rest_retriever_new(&o, &r, &err), ARB_OK);
    n = arb_rest_retrieve(r, ds, S, 3, &res);
    cr_assert_eq(res.n_matches, 3);
    cr_assert_eq(res.count[0], 3);
    /* a longer matching suffix wins over a shorter one with more occurrences */
    int32_t S2[] = {5, 1, 2};
    n = arb_rest_retrieve(r, ds, S2, 3, &res);
    cr_assert_eq(res.match_len, 3);
    cr_assert_eq(res.n_matches, 1);
    cr_assert_eq(n, 3); /* 8 9 9 */
    /* no suffix of length >= suffix_min matches: nothing drafted (an AR step) */
    int32_t S3[] = {9, 14, 15};
    cr_assert_eq(arb_rest_retrieve(r, ds, S3, 3, &res), 0);
    cr_assert_eq(res.match_len, 0);
    arb_rest_retriever_free(r);
    arb_datastore_free(ds);
}

/* On the real-token fixture: the kept set is prefix-closed, each count is the brute-force
   number of continuations with that prefix, and nothing left out counts more than the least
   kept node. */
Test(rest, trie_counts_match_brute_force)
{
    load_fixture();
    arb_datastore *ds = build_fixture();
    arb_err err = {0};
    arb_rest_opts o = arb_rest_default_opts();
    o.n_draft = 12, o.cont_len = 5;
    arb_rest_retriever *r;
    cr_assert_eq(arb_rest_retriever_new(&o, &r, &err), ARB_OK);
    int tested = 0;
    for (int d = 0; d < n_docs; d++)
        for (int e = 2; e <= doc_len[d]; e += 3) {
            const int32_t *S = T + doc_start[d];
            arb_rest_result res;
            int n = arb_rest_retrieve(r, ds, S, e, &res);
            if (n == 0)
                continue;
            tested++;
            /* the continuations, by brute force */
            uint64_t lo, hi, nt = arb_datastore_get_meta(ds)->n_tokens;
            arb_datastore_find(ds, S + e - res.match_len, res.match_len, &lo, &hi);
            cr_assert_eq((uint64_t)res.n_matches, hi - lo < 5000 ? hi - lo : 5000);
            int32_t path[16];
            int min_kept = 1 << 30;
            for (int i = 0; i < n; i++) {
                int depth = 0;
                for (int v = i; v >= 0; v = res.parent[v]) {
                    cr_assert_lt(res.parent[v], v, "parents come first");
                    depth++;
                }
                for (int v = i, k = depth - 1; v >= 0; v = res.parent[v], k--)
                    path[k] = res.tok[v];
                int c = 0;
                for (uint64_t s = lo; s < hi; s++) {
                    uint64_t p = arb_datastore_sa(ds, s) + (uint64_t)res.match_len;
                    int j = 0;
                    while (j < depth && p + (uint64_t)j < nt && arb_datastore_token(ds, p + (uint64_t)j) == path[j])
                        j++;
                    c += j == depth;
                }
                cr_assert_eq(res.count[i], c, "node %d: count %d, brute force %d", i, res.count[i], c);
                min_kept = c < min_kept ? c : min_kept;
            }
            /* first tokens left out count at most min_kept */
            for (uint64_t s = lo; s < hi && n == o.n_draft; s++) {
                int32_t t0 = arb_datastore_token(ds, arb_datastore_sa(ds, s) + (uint64_t)res.match_len);
                bool kept = false;
                for (int i = 0; i < n; i++)
                    kept |= res.parent[i] < 0 && res.tok[i] == t0;
                if (kept || t0 < 0)
                    continue;
                int c = 0;
                for (uint64_t s2 = lo; s2 < hi; s2++)
                    c += arb_datastore_token(ds, arb_datastore_sa(ds, s2) + (uint64_t)res.match_len) == t0;
                cr_assert_leq(c, min_kept);
            }
        }
    cr_assert_gt(tested, 50);
    arb_rest_retriever_free(r);
    arb_datastore_free(ds);
}

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/tmp/arb-test-rest-%ld-%s.ards", (long)getpid(), name);
}

Test(rest, file_round_trip_and_tokenizer_check)
{
    load_fixture();
    arb_datastore *ds = build_fixture();
    char path[256];
    tmp_path(path, sizeof path, "rt");
    arb_err err = {0};
    cr_assert_eq(arb_datastore_save(ds, path, &err), ARB_OK, "%s", err.msg);
    arb_datastore *back;
    const char *sha = arb_datastore_get_meta(ds)->tokenizer_sha256;
    cr_assert_eq(arb_datastore_load(path, sha, &back, &err), ARB_OK, "%s", err.msg);
    const arb_datastore_meta *a = arb_datastore_get_meta(ds), *b = arb_datastore_get_meta(back);
    cr_assert_eq(a->n_tokens, b->n_tokens);
    cr_assert_eq(a->n_docs, b->n_docs);
    cr_assert_eq(a->token_width, b->token_width);
    cr_assert_str_eq(a->corpus, b->corpus);
    cr_assert_str_eq(a->model, b->model);
    for (uint64_t i = 0; i < a->n_tokens; i++) {
        cr_assert_eq(arb_datastore_token(ds, i), arb_datastore_token(back, i));
        cr_assert_eq(arb_datastore_sa(ds, i), arb_datastore_sa(back, i));
    }
    check_all_queries(back);
    arb_datastore_free(back);
    /* another tokenizer: refused, naming the model it was built for */
    char other[65];
    snprintf(other, sizeof other, "%064d", 8);
    back = (arb_datastore *)1;
    cr_assert_eq(arb_datastore_load(path, other, &back, &err), ARB_E_INVAL);
    cr_assert_null(back);
    cr_assert(strstr(err.msg, "another tokenizer") && strstr(err.msg, "fixture"), "%s", err.msg);
    cr_assert_eq(arb_datastore_load("/nonexistent/x.ards", NULL, &back, &err), ARB_E_NOTFOUND);
    arb_datastore_free(ds);
    unlink(path);
}

/* Rewrite bytes of a saved file and expect a format error naming `field`. */
static void corrupt(const char *src, long off, const void *bytes, size_t n, long truncate_to, const char *field)
{
    char path[256];
    tmp_path(path, sizeof path, "bad");
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    cr_assert(in && out);
    int ch;
    long i = 0;
    while ((ch = fgetc(in)) != EOF && (truncate_to < 0 || i < truncate_to)) {
        fputc(off >= 0 && i >= off && i < off + (long)n ? ((const uint8_t *)bytes)[i - off] : ch, out);
        i++;
    }
    fclose(in);
    fclose(out);
    arb_err err = {0};
    arb_datastore *ds = (arb_datastore *)1;
    cr_assert_eq(arb_datastore_load(path, NULL, &ds, &err), ARB_E_FORMAT, "%s: %s", field, err.msg);
    cr_assert_null(ds);
    cr_assert(strstr(err.msg, field) && strstr(err.msg, path), "expected '%s' in: %s", field, err.msg);
    unlink(path);
}

Test(rest, corrupt_files_are_rejected)
{
    load_fixture();
    arb_datastore *ds = build_fixture();
    char path[256];
    tmp_path(path, sizeof path, "src");
    arb_err err = {0};
    cr_assert_eq(arb_datastore_save(ds, path, &err), ARB_OK, "%s", err.msg);
    uint64_t n = arb_datastore_get_meta(ds)->n_tokens;
    long sa_off = (long)((512 + 2 * n + 7) & ~(uint64_t)7);
    corrupt(path, 0, "XRBORDS\n", 8, -1, "magic");
    uint8_t v9[4] = {9, 0, 0, 0};
    corrupt(path, 8, v9, 4, -1, "version");
    uint8_t w3[4] = {3, 0, 0, 0};
    corrupt(path, 12, w3, 4, -1, "token_width");
    corrupt(path, -1, NULL, 0, sa_off + 40, "n_tokens");           /* truncated suffix array */
    uint8_t big[4] = {0xff, 0xff, 0xff, 0x7f};
    corrupt(path, sa_off + 4 * 3, big, 4, -1, "suffix_array[3]");  /* entry out of range */
    uint8_t tok[2] = {0xF0, 0x00};                                 /* 61440 >= n_vocab */
    corrupt(path, 512 + 2 * 5, tok, 2, -1, "tokens[5]");
    corrupt(path, -1, NULL, 0, 100, "header");
    arb_datastore_free(ds);
    unlink(path);
}

Test(rest, options_and_auto_datastore)
{
    arb_err err = {0};
    arb_rest_retriever *r = (arb_rest_retriever *)1;
    arb_rest_opts o = arb_rest_default_opts();
    cr_assert_eq(o.suffix_max, 16);
    cr_assert_eq(o.suffix_min, 2);
    cr_assert_eq(o.max_matches, 5000);
    cr_assert_eq(o.cont_len, 10);
    cr_assert_eq(o.n_draft, 64);
    o.suffix_min = 5, o.suffix_max = 4;
    cr_assert_eq(arb_rest_retriever_new(&o, &r, &err), ARB_E_INVAL);
    cr_assert_null(r);
    cr_assert_str_eq(arb_rest_auto_datastore("humaneval"), "code");
    cr_assert_str_eq(arb_rest_auto_datastore("mt-bench"), "chat");
    char buf[4096];
    cr_assert_eq(arb_datastore_resolve("x/y.ards", buf, sizeof buf, &err), ARB_OK);
    cr_assert_str_eq(buf, "x/y.ards");
    cr_assert_eq(arb_datastore_resolve("code", buf, sizeof buf, &err), ARB_OK);
    cr_assert(strstr(buf, "/datastores/code.ards"), "%s", buf);
}
