/* alloc.c — see alloc.h. */
#include "alloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide because an allocation deep inside cJSON or SQLite has no handle to carry a
   per-object hook; tests only. countdown > 0 counts allocations down, the one reaching 0
   fails and leaves the hook off. */
static atomic_long countdown;
static atomic_bool fired;

static bool inject(void)
{
    if (atomic_load_explicit(&countdown, memory_order_relaxed) <= 0)
        return false;
    if (atomic_fetch_sub(&countdown, 1) != 1)
        return false;
    atomic_store(&fired, true);
    errno = ENOMEM; /* what a failing malloc sets; callers tell OOM from bad input by it */
    return true;
}

void *arb_malloc(size_t n) { return inject() ? NULL : malloc(n); }
void *arb_calloc(size_t n, size_t size) { return inject() ? NULL : calloc(n, size); }
void *arb_realloc(void *p, size_t n) { return inject() ? NULL : realloc(p, n); }

char *arb_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arb_malloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

void arb_alloc_fail_after(long n)
{
    atomic_store(&countdown, n > 0 ? n : 0);
    atomic_store(&fired, false);
}

bool arb_alloc_fired(void) { return atomic_load(&fired); }
