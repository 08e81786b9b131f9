/* report_capture.h — run `arb_report_write` into a heap string, for the report tests
 * (test_report.c, test_report_dte.c). */
#ifndef ARB_REPORT_CAPTURE_H
#define ARB_REPORT_CAPTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "store.h"

/* The report of st under o as a string (caller frees); on failure the error message,
   with the report's return code in *rc either way. */
static inline char *report_capture(arb_store *st, const arb_report_opts *o, int *rc)
{
    FILE *f = tmpfile();
    cr_assert(f);
    arb_err err = {0};
    *rc = arb_report_write(arb_store_db(st), o, f, &err);
    if (*rc) {
        fclose(f);
        return strdup(err.msg);
    }
    long n = ftell(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf);
    rewind(f);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

#endif
