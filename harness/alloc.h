/* alloc.h — the allocation calls of the store, config and dataset modules, and a test-only
 * fault hook that makes the n-th of them fail (SQLite's faultsim idea, test_malloc.c).
 *
 * arb_malloc/arb_calloc/arb_realloc/arb_strdup behave like the libc functions (NULL and
 * errno = ENOMEM on failure). A test arms the hook, runs an operation and sweeps n over
 * every allocation point until the operation no longer sees a fault:
 *
 *     for (long n = 1;; n++) {
 *         arb_alloc_fail_after(n);
 *         int rc = arb_config_parse(json, "x.json", &c, &err);   // ARB_E_NOMEM or ARB_OK
 *         bool fired = arb_alloc_fired();
 *         arb_alloc_fail_after(0);
 *         arb_config_free(c);
 *         if (!fired) break;                                     // n is past the last point
 *     }
 *
 * Tests may route cJSON (cJSON_InitHooks) and SQLite (SQLITE_CONFIG_MALLOC) through
 * arb_malloc too, so their allocations become fault points (tests/test_alloc.c).
 * Thread-safety: the wrappers are; the hook is process-wide, for single-threaded tests.
 */
#ifndef ARB_ALLOC_H
#define ARB_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *arb_malloc(size_t n);
void *arb_calloc(size_t n, size_t size);
void *arb_realloc(void *p, size_t n);
char *arb_strdup(const char *s);

/* Test hook, the one writable global of this module (STYLE.md practice 19 (c)): the n-th
   allocation from now fails, once; then the hook is off again by itself. 0 disarms. */
void arb_alloc_fail_after(long n);
/* Whether the armed fault has fired since the last arb_alloc_fail_after. */
bool arb_alloc_fired(void);

#endif
