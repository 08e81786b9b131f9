/* test_threadpool.c — the persistent pool: every thread runs each task once,
 * pools are reusable, thousands of tiny runs complete, sleeping workers wake. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "cpu/threadpool.h"

typedef struct counts {
    _Atomic int calls;
    _Atomic int seen[8]; /* calls per ith */
    _Atomic int bad_nth;
    int want_nth;
} counts;

static void count_task(void *ud, int ith, int nth)
{
    counts *c = ud;
    atomic_fetch_add(&c->calls, 1);
    if (ith >= 0 && ith < 8)
        atomic_fetch_add(&c->seen[ith], 1);
    if (nth != c->want_nth)
        atomic_fetch_add(&c->bad_nth, 1);
}

Test(threadpool, run_calls_every_thread_once)
{
    for (int n = 1; n <= 4; n++) {
        arb_threadpool *tp = NULL;
        cr_assert_eq(arb_threadpool_new(n, &tp, NULL), ARB_OK);
        cr_assert_eq(arb_threadpool_size(tp), n);
        counts c = {.want_nth = n};
        arb_threadpool_run(tp, count_task, &c);
        cr_assert_eq(atomic_load(&c.calls), n);
        for (int i = 0; i < n; i++)
            cr_assert_eq(atomic_load(&c.seen[i]), 1, "n=%d ith=%d", n, i);
        cr_assert_eq(atomic_load(&c.bad_nth), 0);
        arb_threadpool_free(tp);
    }
}

Test(threadpool, many_small_runs_and_reuse)
{
    arb_threadpool *tp = NULL;
    cr_assert_eq(arb_threadpool_new(3, &tp, NULL), ARB_OK);
    counts c = {.want_nth = 3};
    for (int r = 0; r < 20000; r++)
        arb_threadpool_run(tp, count_task, &c);
    cr_assert_eq(atomic_load(&c.calls), 3 * 20000);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(atomic_load(&c.seen[i]), 20000);
    arb_threadpool_free(tp);
}

typedef struct sum_job { const int *v; long long part[4]; int n; } sum_job;

static void sum_task(void *ud, int ith, int nth)
{
    sum_job *s = ud;
    long long acc = 0;
    for (int i = s->n * ith / nth; i < s->n * (ith + 1) / nth; i++)
        acc += s->v[i];
    s->part[ith] = acc;
}

Test(threadpool, results_visible_after_run_and_after_sleep)
{
    static int v[10000];
    for (int i = 0; i < 10000; i++)
        v[i] = i;
    arb_threadpool *tp = NULL;
    cr_assert_eq(arb_threadpool_new(4, &tp, NULL), ARB_OK);
    for (int round = 0; round < 3; round++) {
        sum_job s = {.v = v, .n = 10000};
        arb_threadpool_run(tp, sum_task, &s);
        cr_assert_eq(s.part[0] + s.part[1] + s.part[2] + s.part[3], 49995000LL);
        if (round == 1) { /* let the workers fall asleep, then they must wake up */
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    arb_threadpool_free(tp);
}

Test(threadpool, bad_size_and_null_free)
{
    arb_threadpool *tp = (arb_threadpool *)1;
    arb_err err = {0};
    cr_assert_eq(arb_threadpool_new(0, &tp, &err), ARB_E_INVAL);
    cr_assert_null(tp);
    cr_assert(err.msg[0]);
    arb_threadpool_free(NULL);
    counts c = {.want_nth = 1};
    arb_threadpool_run(NULL, count_task, &c); /* NULL pool = run inline */
    cr_assert_eq(atomic_load(&c.calls), 1);
}

typedef struct chunk_job { _Atomic int hits[1000]; _Atomic int bad; int n; } chunk_job;

static void chunk_task(void *ud, int c, int n)
{
    chunk_job *j = ud;
    if (n != j->n || c < 0 || c >= n)
        atomic_fetch_add(&j->bad, 1);
    else
        atomic_fetch_add(&j->hits[c], 1);
}

/* Every chunk runs exactly once, for chunk counts below, equal to and far above
   the thread count, many times in a row (late workers must not run stale runs). */
Test(threadpool, run_chunks_each_once)
{
    arb_threadpool *tp = NULL;
    cr_assert_eq(arb_threadpool_new(3, &tp, NULL), ARB_OK);
    static chunk_job j;
    static const int ns[] = {1, 2, 3, 7, 64, 1000};
    for (int rep = 0; rep < 300; rep++) {
        const int n = ns[rep % 6];
        memset(&j, 0, sizeof j);
        j.n = n;
        arb_threadpool_run_chunks(tp, chunk_task, &j, n);
        cr_assert_eq(atomic_load(&j.bad), 0);
        for (int c = 0; c < n; c++)
            cr_assert_eq(atomic_load(&j.hits[c]), 1, "rep %d n %d chunk %d", rep, n, c);
    }
    arb_threadpool_run_chunks(tp, chunk_task, &j, 0); /* no chunks: no call */
    arb_threadpool_run_chunks(NULL, chunk_task, &j, j.n);
    arb_threadpool_free(tp);
}

/* A shared first phase (arb_tp_phase): every slice runs exactly once, and no chunk
   goes on before all slices are done, with more chunks than threads and more
   slices than chunks, over many runs. */
typedef struct phase_job {
    arb_tp_phase ph;
    int slice_runs[64];
    _Atomic int early; /* chunks that saw an unfinished slice after the phase */
    int n_slices;
} phase_job;

static void phase_slice(void *ud, int s, int n)
{
    phase_job *j = ud;
    (void)n;
    j->slice_runs[s]++; /* each slice is claimed once: no race */
}

static void phase_chunk(void *ud, int c, int n)
{
    phase_job *j = ud;
    (void)c;
    (void)n;
    arb_tp_phase_run(&j->ph);
    for (int s = 0; s < j->n_slices; s++)
        if (j->slice_runs[s] != 1)
            atomic_fetch_add(&j->early, 1);
}

Test(threadpool, phase_runs_each_slice_once_before_the_chunks)
{
    arb_threadpool *tp = NULL;
    cr_assert_eq(arb_threadpool_new(3, &tp, NULL), ARB_OK);
    for (int rep = 0; rep < 200; rep++) {
        phase_job j = {.n_slices = 1 + rep % 40};
        arb_tp_phase_init(&j.ph, phase_slice, &j, j.n_slices);
        arb_threadpool_run_chunks(tp, phase_chunk, &j, 1 + rep % 12);
        cr_assert_eq(atomic_load(&j.early), 0, "rep %d: a chunk went on before the phase ended", rep);
        for (int s = 0; s < j.n_slices; s++)
            cr_assert_eq(j.slice_runs[s], 1, "rep %d: slice %d ran %d times", rep, s, j.slice_runs[s]);
    }
    arb_threadpool_free(tp);
}

/* arb_tp_guided: the chunks tile [0, n) in order, none empty, each at least min_chunk
   but the last, sized ceil(rest / nth) where that is larger (so the first is
   ceil(n / nth)), never more than cap - 1 of them; a mutation that drops the last
   remainder or ignores the cap fails here. */
Test(threadpool, guided_chunks_tile_the_range)
{
    int b[130];
    for (int n = 1; n <= 3100; n += n < 80 ? 1 : 97)
        for (int nth = 1; nth <= 16; nth++)
            for (int mc = 0; mc <= 5; mc += 5)
                for (int cap = 2; cap <= 130; cap += 64) {
                    const int k = arb_tp_guided(n, nth, mc, b, cap);
                    cr_assert(k >= 1 && k <= cap - 1, "n %d nth %d cap %d: %d chunks", n, nth, cap, k);
                    cr_assert_eq(b[0], 0);
                    cr_assert_eq(b[k], n, "n %d nth %d: chunks end at %d", n, nth, b[k]);
                    cr_assert_eq(b[1], cap == 2 ? n : ((n + nth - 1) / nth > mc ? (n + nth - 1) / nth : mc < n ? mc : n),
                                 "n %d nth %d min %d: first chunk %d", n, nth, mc, b[1]);
                    for (int c = 0; c < k; c++) {
                        const int sz = b[c + 1] - b[c], rest = n - b[c], want = (rest + nth - 1) / nth;
                        cr_assert(sz >= 1, "n %d nth %d: chunk %d empty", n, nth, c);
                        if (c + 1 < k)
                            cr_assert_eq(sz, want > mc ? want : mc, "n %d nth %d min %d: chunk %d has %d", n, nth, mc, c, sz);
                    }
                }
    /* QKV of the default model at two threads (36 units, min 36 / 16): 18 9 5 2 2 */
    cr_assert_eq(arb_tp_guided(36, 2, 2, b, 128), 5);
    cr_assert(b[1] == 18 && b[2] == 27 && b[3] == 32 && b[4] == 34 && b[5] == 36);
}
