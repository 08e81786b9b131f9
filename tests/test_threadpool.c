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
