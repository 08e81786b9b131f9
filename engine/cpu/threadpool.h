/* threadpool.h — a small persistent pool: N-1 workers plus the calling thread.
 *
 *     arb_threadpool *tp; arb_threadpool_new(2, &tp, &err);
 *     arb_threadpool_run(tp, my_kernel, &args);   // my_kernel(&args, ith, nth) on every thread
 *     arb_threadpool_free(tp);
 *
 * run() returns when every thread has finished; it allocates nothing. Workers spin
 * briefly then sleep on a condition variable, so an idle pool costs no CPU.
 * Work splitting is the kernel's business (by output rows, in a fixed partition,
 * so results never depend on the thread count).
 */
#ifndef ARB_THREADPOOL_H
#define ARB_THREADPOOL_H

#include "error.h"

typedef struct arb_threadpool arb_threadpool;
typedef void (*arb_task_fn)(void *ud, int ith, int nth);

int arb_threadpool_new(int n_threads, arb_threadpool **out, arb_err *err); /* n_threads >= 1 */
void arb_threadpool_free(arb_threadpool *tp);                               /* NULL-safe */
int arb_threadpool_size(const arb_threadpool *tp);
void arb_threadpool_run(arb_threadpool *tp, arb_task_fn fn, void *ud);

/* Run fn(ud, c, n_chunks) once for every chunk c in [0, n_chunks), on whichever
   threads claim them (the caller included); returns when all are done. run() is
   run_chunks(tp, fn, ud, size): each ith in [0, size) runs exactly once, though
   not necessarily on thread ith (a descheduled worker's share is taken over), so
   kernels must key work and scratch on ith, never on thread identity.
   tp may be NULL (everything runs on the caller). Allocates nothing. */
void arb_threadpool_run_chunks(arb_threadpool *tp, arb_task_fn fn, void *ud, int n_chunks);

/* Start of part i of k near-equal parts of [0, n): part i is
   [arb_tp_part(n, i, k), arb_tp_part(n, i + 1, k)), a function of (n, i, k) only. */
static inline int arb_tp_part(int n, int i, int k) { return (int)((long long)n * i / k); }

/* Guided chunks of [0, n) for nth threads: chunk c is [bounds[c], bounds[c + 1]), sized
   ceil(rest / nth) but at least min_chunk. The first chunks are long contiguous ranges
   (with two threads, half and then a quarter of the work), the last ones small, so a
   thread that runs out of work waits for part of a small chunk, and a descheduled
   thread's share is still taken over. Returns the chunk count K <= cap - 1 (bounds[0] =
   0, bounds[K] = n; at cap - 1 the last chunk takes what is left). A function of (n,
   nth, min_chunk, cap) only. n >= 1, nth >= 1, cap >= 2. */
int arb_tp_guided(int n, int nth, int min_chunk, int *bounds, int cap);

/* A first phase shared by the chunks of one run, instead of a run of its own (one
   publish-and-wait less): every chunk calls arb_tp_phase_run first, which claims
   slices fn(ud, s, n) from a shared counter until none is left, then waits until all
   are done. A thread only waits for slices another running thread has already
   taken, so the wait always ends. Nothing is allocated; ph lives on the caller's
   stack for the duration of the run. */
#include <stdatomic.h>
typedef struct arb_tp_phase {
    void (*fn)(void *ud, int s, int n);
    void *ud;
    int n;
    _Atomic int next, done;
} arb_tp_phase;
void arb_tp_phase_init(arb_tp_phase *ph, void (*fn)(void *ud, int s, int n), void *ud, int n);
void arb_tp_phase_run(arb_tp_phase *ph); /* NULL-safe */

#endif
