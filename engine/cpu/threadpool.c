/* threadpool.c — N-1 persistent workers plus the caller; a run is a set of
 * numbered chunks that any thread may claim.
 *
 * A run publishes its task in one of two slots and bumps a generation counter.
 * The chunks are claimed through one 64-bit word holding (generation, next
 * chunk): a compare-and-swap succeeds only while the word still carries the
 * claimer's generation, so a worker that wakes up late can never run a chunk of
 * a finished run nor read a half-written task. The caller claims chunks too and
 * returns when every chunk is done, so a worker that the OS has descheduled (a
 * busy machine) delays a run by at most the chunk it is in, instead of holding a
 * barrier. Which thread runs a chunk never matters to results: kernels give each
 * chunk a fixed piece of work.
 *
 * Idle workers spin (pause, then sched_yield so an oversubscribed machine still
 * makes progress) for ~2 ms — decode issues hundreds of runs per token a few
 * microseconds apart — then sleep on a condition variable. Nothing is allocated
 * after arb_threadpool_new.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#include "threadpool.h"

/* How long an idle worker spins before sleeping, in nanoseconds. */
#define SPIN_NS 2000000LL

typedef struct worker {
    struct arb_threadpool *tp; /* owner */
    pthread_t thread;
} worker;

/* Atomic fields: a late worker may read a slot while the caller rewrites it for
   a later run; its claim then fails, but the read itself must not be a race. */
typedef struct task {
    _Atomic(arb_task_fn) fn;
    _Atomic(void *) ud;
    _Atomic int n; /* chunks */
} task;

struct arb_threadpool {
    int n;                         /* threads, including the caller */
    worker *workers;               /* n-1 */
    task slot[2];                  /* run g uses slot[g & 1] */
    _Atomic uint32_t gen;          /* bumped once per run (and once at shutdown) */
    _Atomic uint64_t claim;        /* gen << 32 | next chunk to claim */
    _Atomic int n_done;            /* chunks finished in the current run */
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

/* Wait until gen differs from seen: spin, then yield, then sleep. */
static uint32_t wait_gen(struct arb_threadpool *tp, uint32_t seen)
{
    long long t0 = 0;
    for (unsigned i = 1;; i++) {
        uint32_t g = atomic_load(&tp->gen);
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
    /* seq_cst here and in publish() (the Dekker pattern): either the publisher sees
       this increment and broadcasts, or we see its new generation. */
    atomic_fetch_add(&tp->n_sleeping, 1);
    uint32_t g;
    while ((g = atomic_load(&tp->gen)) == seen)
        pthread_cond_wait(&tp->cv, &tp->mu);
    atomic_fetch_sub(&tp->n_sleeping, 1);
    pthread_mutex_unlock(&tp->mu);
    return g;
}

/* Claim and run chunks of run g until none is left (or the run is gone). */
static void work(struct arb_threadpool *tp, uint32_t g)
{
    task *t = &tp->slot[g & 1];
    for (;;) {
        uint64_t w = atomic_load(&tp->claim);
        if ((uint32_t)(w >> 32) != g)
            return;
        /* t->n may be read before the CAS: slot g & 1 is rewritten only for run
           g + 2, after claim moved on, and then the CAS below fails. */
        const int c = (int)(uint32_t)w, n = atomic_load_explicit(&t->n, memory_order_relaxed);
        if (c >= n)
            return;
        if (!atomic_compare_exchange_weak(&tp->claim, &w, w + 1))
            continue;
        /* the claim succeeded, so the slot still holds run g (acquired via claim) */
        const arb_task_fn fn = atomic_load_explicit(&t->fn, memory_order_relaxed);
        fn(atomic_load_explicit(&t->ud, memory_order_relaxed), c, n);
        atomic_fetch_add(&tp->n_done, 1);
    }
}

static void *worker_main(void *arg)
{
    worker *wk = arg;
    struct arb_threadpool *tp = wk->tp;
    uint32_t seen = 0;
    for (;;) {
        seen = wait_gen(tp, seen);
        if (atomic_load(&tp->stop))
            return NULL;
        work(tp, seen);
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
        worker *wk = &tp->workers[i - 1];
        wk->tp = tp;
        if (pthread_create(&wk->thread, NULL, worker_main, wk) != 0) {
            tp->n = i; /* only i-1 workers exist: free joins exactly those */
            arb_threadpool_free(tp);
            return ARB_ERR(err, ARB_E_NOMEM, "threadpool: cannot start thread %d of %d", i, n_threads);
        }
    }
    *out = tp;
    return ARB_OK;
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

void arb_threadpool_run_chunks(arb_threadpool *tp, arb_task_fn fn, void *ud, int n_chunks)
{
    if (n_chunks <= 0)
        return;
    if (!tp || tp->n == 1) {
        for (int c = 0; c < n_chunks; c++)
            fn(ud, c, n_chunks);
        return;
    }
    const uint32_t g = atomic_load(&tp->gen) + 1; /* the caller is the only publisher */
    task *t = &tp->slot[g & 1];
    atomic_store_explicit(&t->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&t->ud, ud, memory_order_relaxed);
    atomic_store_explicit(&t->n, n_chunks, memory_order_relaxed); /* published by the claim store */
    atomic_store(&tp->n_done, 0);
    atomic_store(&tp->claim, (uint64_t)g << 32);
    atomic_store(&tp->gen, g);
    if (atomic_load(&tp->n_sleeping) > 0) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_broadcast(&tp->cv);
        pthread_mutex_unlock(&tp->mu);
    }
    work(tp, g);
    /* All chunks are claimed; wait for those still running on workers. */
    for (unsigned i = 1; atomic_load(&tp->n_done) != n_chunks; i++) {
        if (i < 512)
            CPU_RELAX();
        else
            sched_yield(); /* the worker holding a chunk may be descheduled */
    }
}

void arb_threadpool_run(arb_threadpool *tp, arb_task_fn fn, void *ud)
{
    arb_threadpool_run_chunks(tp, fn, ud, arb_threadpool_size(tp));
}

int arb_tp_guided(int n, int nth, int min_chunk, int *bounds, int cap)
{
    int k = 0, at = 0;
    bounds[0] = 0;
    if (min_chunk < 1)
        min_chunk = 1;
    while (at < n) {
        const int rest = n - at, want = (rest + nth - 1) / nth;
        int sz = want > min_chunk ? want : min_chunk;
        if (sz > rest || k == cap - 2)
            sz = rest;
        at += sz;
        bounds[++k] = at;
    }
    return k;
}

void arb_tp_phase_init(arb_tp_phase *ph, void (*fn)(void *ud, int s, int n), void *ud, int n)
{
    ph->fn = fn;
    ph->ud = ud;
    ph->n = n;
    atomic_init(&ph->next, 0);
    atomic_init(&ph->done, 0);
}

void arb_tp_phase_run(arb_tp_phase *ph)
{
    if (!ph)
        return;
    for (int s; (s = atomic_fetch_add_explicit(&ph->next, 1, memory_order_relaxed)) < ph->n;) {
        ph->fn(ph->ud, s, ph->n);
        atomic_fetch_add_explicit(&ph->done, 1, memory_order_release);
    }
    for (unsigned i = 1; atomic_load_explicit(&ph->done, memory_order_acquire) < ph->n; i++) {
        if (i < 1024)
            CPU_RELAX();
        else
            sched_yield(); /* the thread holding a slice may be descheduled */
    }
}
