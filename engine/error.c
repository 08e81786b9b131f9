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
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", pre, old);
}

void arb_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "arbor: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
