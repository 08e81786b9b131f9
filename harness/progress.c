/* progress.c — see progress.h. */
#include "progress.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void arb_progress_fmt_secs(double s, char *buf, size_t cap)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, cap, "%lds", t);
}

void arb_progress_init(arb_progress *p, FILE *f, int64_t total, double interval)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->tty = f && isatty(fileno(f));
    p->total = total;
    p->t0 = p->last = now_s();
    p->interval = interval > 0 ? interval : 30;
}

static void draw(arb_progress *p, const char *label, bool final)
{
    double el = now_s() - p->t0;
    int64_t timed = p->done_timed, left = p->total - p->done;
    char eta[32] = "?", elapsed[32];
    if (timed > 0)
        arb_progress_fmt_secs(el / (double)timed * (double)left, eta, sizeof eta);
    arb_progress_fmt_secs(el, elapsed, sizeof elapsed);
    double frac = p->total > 0 ? (double)p->done / (double)p->total : 1;
    if (p->tty) {
        char bar[31];
        int w = (int)(frac * 30 + 0.5);
        for (int i = 0; i < 30; i++)
            bar[i] = i < w ? '#' : '.';
        bar[30] = 0;
        fprintf(p->f, "\r[%s] %3d%% %lld/%lld  %s elapsed, ETA %s  %-32.32s", bar, (int)(100 * frac),
                (long long)p->done, (long long)p->total, elapsed, eta, label ? label : "");
        if (final)
            fputc('\n', p->f);
    } else {
        fprintf(p->f, "progress: %lld/%lld (%d%%), %s elapsed, ETA %s%s%s\n", (long long)p->done,
                (long long)p->total, (int)(100 * frac), elapsed, eta, label ? ", " : "", label ? label : "");
    }
    fflush(p->f);
}

void arb_progress_step(arb_progress *p, int64_t n, bool timed, const char *label)
{
    if (!p->f)
        return;
    p->done += n;
    if (timed)
        p->done_timed += n;
    double t = now_s();
    if (t - p->last >= (p->tty ? 0.2 : p->interval) || p->done == p->total) {
        p->last = t;
        draw(p, label, false);
    }
}

void arb_progress_finish(arb_progress *p)
{
    if (p->f)
        draw(p, "done", true);
}
