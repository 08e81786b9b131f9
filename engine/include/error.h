/* error.h — arbor's error convention: int return codes plus a message holder.
 *
 * Every fallible function returns int: ARB_OK (0) or a negative ARB_E_* code.
 * When it fails and the caller passed an arb_err, the message names what was
 * wrong (file, field, byte offset, JSON path) and where in arbor it was found.
 *
 *     arb_err err = {0};
 *     arb_gguf *g = NULL;
 *     if (arb_gguf_open(path, &g, &err) != ARB_OK) {
 *         fprintf(stderr, "arbor: %s\n", err.msg);   // "x.gguf: tensor 3 ... "
 *         return 1;
 *     }
 *
 * Inside a function, ARB_ERR records the origin (__FILE__:__LINE__) and returns
 * the code so that a failure is one line:  return ARB_ERR(err, ARB_E_FORMAT, "%s: bad magic", p);
 * ARB_ASSERT is for broken invariants (bugs), not bad input: it aborts with file:line.
 */
#ifndef ARB_ERROR_H
#define ARB_ERROR_H

#include <stddef.h>

enum {
    ARB_OK = 0,
    ARB_E_NOMEM = -1,    /* allocation failed */
    ARB_E_IO = -2,       /* open/read/write/mmap failed (errno text in msg) */
    ARB_E_FORMAT = -3,   /* malformed file contents (GGUF, JSON, dataset line) */
    ARB_E_INVAL = -4,    /* bad argument, flag or config value */
    ARB_E_UNSUPPORTED = -5, /* valid input that arbor does not implement */
    ARB_E_NOTFOUND = -6, /* missing tensor, key, file or record */
    ARB_E_RANGE = -7,    /* value out of range: context full, token id >= vocab */
    ARB_E_DB = -8,       /* SQLite error */
    ARB_E_EXTERNAL = -9, /* an external program (pip, gnuplot) failed */
    ARB_E_INTERRUPTED = -10, /* stopped by a signal (Ctrl-C) */
    ARB_E_NODEVICE = -11, /* backend not available on this machine (no GPU) */
};

typedef struct arb_err {
    int code;           /* last error code, ARB_OK if none */
    char msg[1024];     /* human-readable message, NUL-terminated */
    const char *file;   /* arbor source file that raised it */
    int line;           /* and its line */
} arb_err;

/* Static text for a code ("out of memory", "malformed input", ...). Never NULL. */
const char *arb_strerror(int code);

/* Fill err (if non-NULL) with code and a printf-style message; returns code.
   Use through ARB_ERR so the origin is recorded. */
int arb_err_set(arb_err *err, const char *file, int line, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prepend "prefix: " to an existing message (e.g. the file name at a boundary). */
void arb_err_prefix(arb_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ARB_ERR(err, code, ...) arb_err_set((err), __FILE__, __LINE__, (code), __VA_ARGS__)

/* Invariant check kept on in release builds; prints file:line and aborts. */
void arb_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#define ARB_ASSERT(x) ((x) ? (void)0 : arb_assert_fail(#x, __FILE__, __LINE__))

#endif
