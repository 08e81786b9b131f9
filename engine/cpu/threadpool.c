/* threadpool.c — N-1 persistent workers plus the caller, fork/join per run().
 *
 * A run publishes (fn, ud) and bumps a generation counter. Workers spin on the
 * counter for a short while (decode issues hundreds of runs per token, a few
 * microseconds apart, so waking a sleeping thread each time would cost more than
 * the kernels) and then sleep on a condition variable so that an idle pool uses
 * no CPU. The caller runs share 0 itself and then waits for the n-1 workers to
 * report done. Nothing is allocated after arb_threadpool_new.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif
#include <sched.h>

#include "threadpool.h"

/* How long an idle worker spins before sleeping, in nanoseconds. */
#define SPIN_NS 2000000LL

typedef struct worker {
    struct arb_threadpool *tp; /* owner */
    int ith;                   /* 1..n-1 (0 is the caller) */
    pthread_t thread;
} worker;

struct arb_threadpool {
    int n;                         /* threads, including the caller */
    worker *workers;               /* n-1 */
    arb_task_fn fn;                /* current task, valid while a run is in flight */
    void *ud;
    _Atomic unsigned gen;          /* bumped once per run (and once at shutdown) */
    _Atomic int n_done;            /* workers finished with the current generation */
    _Atomic int n_sleeping;        /* workers waiting on cv */
    _Atomic int stop;              /* set at free */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Wait until gen differs from seen: spin, then yield, then sleep. Yielding early
   matters when threads outnumber free cores (other processes, or a pool larger
   than the machine): a spinning waiter would otherwise hold the core that the
   thread it waits for needs. Returns the new generation. */
static unsigned wait_gen(struct arb_threadpool *tp, unsigned seen)
{
    long long t0 = 0;
    for (unsigned i = 1;; i++) {
        unsigned g = atomic_load_explicit(&tp->gen, memory_order_acquire);
        if (g != seen)
            return g;
        if (i < 512) {
            CPU_RELAX();
            continue;
        }
        sched_yield();
        if ((i & 63) == 0) {
            long long t = now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                break;
        }
    }
    pthread_mutex_lock(&tp->mu);
    atomic_fetch_add(&tp->n_sleeping, 1);
    unsigned g;
    while ((g = atomic_load(&tp->gen)) == seen)
        pthread_cond_wait(&tp->cv, &tp->mu);
    atomic_fetch_sub(&tp->n_sleeping, 1);
    pthread_mutex_unlock(&tp->mu);
    return g;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct arb_threadpool *tp = w->tp;
    unsigned seen = 0;
    for (;;) {
        seen = wait_gen(tp, seen);
        if (atomic_load_explicit(&tp->stop, memory_order_acquire))
            return NULL;
        tp->fn(tp->ud, w->ith, tp->n);
        atomic_fetch_add_explicit(&tp->n_done, 1, memory_order_acq_rel);
    }
}

int arb_threadpool_new(int n_threads, arb_threadpool **out, arb_err *err)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return ARB_ERR(err, ARB_E_INVAL, "threadpool: n_threads %d out of range 1..1024", n_threads);
    struct arb_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp)
        return ARB_ERR(err, ARB_E_NOMEM, "threadpool: out of memory");
    tp->n = n_threads;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv, NULL);
    if (n_threads > 1) {
        tp->workers = calloc((size_t)n_threads - 1, sizeof *tp->workers);
        if (!tp->workers) {
            arb_threadpool_free(tp);
            return ARB_ERR(err, ARB_E_NOMEM, "threadpool: out of memory");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker *w = &tp->workers[i - 1];
        w->tp = tp;
        w->ith = i;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            tp->n = i; /* only i-1 workers exist: free joins exactly those */
            arb_threadpool_free(tp);
            return ARB_ERR(err, ARB_E_NOMEM, "threadpool: cannot start thread %d of %d", i, n_threads);
        }
    }
    *out = tp;
    return ARB_OK;
}

static void publish(struct arb_threadpool *tp)
{
    /* seq_cst on both sides (here and in wait_gen) is the Dekker pattern: either we
       see the worker's n_sleeping increment, or it sees our new gen. */
    atomic_fetch_add(&tp->gen, 1);
    if (atomic_load(&tp->n_sleeping) > 0) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_broadcast(&tp->cv);
        pthread_mutex_unlock(&tp->mu);
    }
}

void arb_threadpool_free(arb_threadpool *tp)
{
    if (!tp)
        return;
    if (tp->workers) {
        atomic_store(&tp->stop, 1);
        /* Broadcast under the lock: a worker between its gen check and cond_wait
           holds the mutex, so it cannot miss this wake-up. */
        pthread_mutex_lock(&tp->mu);
        atomic_fetch_add(&tp->gen, 1);
        pthread_cond_broadcast(&tp->cv);
        pthread_mutex_unlock(&tp->mu);
        for (int i = 1; i < tp->n; i++)
            pthread_join(tp->workers[i - 1].thread, NULL);
        free(tp->workers);
    }
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->cv);
    free(tp);
}

int arb_threadpool_size(const arb_threadpool *tp) { return tp ? tp->n : 1; }

void arb_threadpool_run(arb_threadpool *tp, arb_task_fn fn, void *ud)
{
    if (!tp || tp->n == 1) {
        fn(ud, 0, 1);
        return;
    }
    tp->fn = fn;
    tp->ud = ud;
    atomic_store_explicit(&tp->n_done, 0, memory_order_relaxed);
    publish(tp);
    fn(ud, 0, tp->n);
    const int want = tp->n - 1;
    for (unsigned i = 1; atomic_load_explicit(&tp->n_done, memory_order_acquire) != want; i++) {
        if (i < 512)
            CPU_RELAX();
        else
            sched_yield(); /* a worker may be descheduled on a busy machine */
    }
}
