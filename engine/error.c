/* error.c — see error.h. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *arb_strerror(int code)
{
    switch (code) {
    case ARB_OK: return "ok";
    case ARB_E_NOMEM: return "out of memory";
    case ARB_E_IO: return "i/o error";
    case ARB_E_FORMAT: return "malformed input";
    case ARB_E_INVAL: return "invalid argument";
    case ARB_E_UNSUPPORTED: return "unsupported";
    case ARB_E_NOTFOUND: return "not found";
    case ARB_E_RANGE: return "out of range";
    case ARB_E_DB: return "database error";
    case ARB_E_EXTERNAL: return "external program failed";
    case ARB_E_INTERRUPTED: return "interrupted";
    case ARB_E_NODEVICE: return "device not available";
    default: return "unknown error";
    }
}

int arb_err_set(arb_err *err, const char *file, int line, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    err->file = file;
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void arb_err_prefix(arb_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char pre[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t np = strlen(pre), cap = sizeof err->msg;
    if (np + 2 >= cap)
        return;
    /* Shift the old message right (truncating its tail) and write "pre: " in front. */
    size_t nold = strnlen(err->msg, cap - 1);
    if (np + 2 + nold > cap - 1)
        nold = cap - 1 - np - 2;
    memmove(err->msg + np + 2, err->msg, nold);
    memcpy(err->msg, pre, np);
    err->msg[np] = ':';
    err->msg[np + 1] = ' ';
    err->msg[np + 2 + nold] = 0;
}

void arb_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "arbor: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
