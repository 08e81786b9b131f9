/* progress.h — progress of a long run: a redrawn bar with rate and ETA on a terminal, plain
 * periodic lines (every `interval` seconds) when stderr is a file or a pipe (CI logs).
 *
 *     arb_progress p;
 *     arb_progress_init(&p, stderr, n_units, 30.0);
 *     for (...) { work(); arb_progress_step(&p, 1, "GOOSE humaneval/3"); }
 *     arb_progress_finish(&p);
 */
#ifndef ARB_PROGRESS_H
#define ARB_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct arb_progress {
    FILE *f;
    bool tty;           /* redraw in place */
    int64_t total, done;
    int64_t done_timed; /* units that cost time (skipped ones do not count for the rate) */
    double t0, last;    /* seconds (monotonic) */
    double interval;    /* seconds between plain lines */
} arb_progress;

void arb_progress_init(arb_progress *p, FILE *f, int64_t total, double interval);
/* n units done; timed = they took real work (false: skipped, already in the database). */
void arb_progress_step(arb_progress *p, int64_t n, bool timed, const char *label);
void arb_progress_finish(arb_progress *p);
/* "1h02m", "3m05s", "12s" */
void arb_progress_fmt_secs(double s, char *buf, size_t cap);

#endif
