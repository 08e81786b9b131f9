/* bigmem.h — the engine's large buffers (weight copies, KV cache) on 2 MB pages.
 *
 * A decode step streams every weight copy and, at long contexts, tens of MB of KV cache.
 * On 4 KB pages that is one TLB miss per 4 KB (~24 000 a step for the default model's
 * 98 MB of weights); on transparent huge pages, one per 2 MB. Linux grants them to a
 * region marked with madvise(MADV_HUGEPAGE) in its default "madvise" mode, and only to
 * pages first touched after the mark, so a buffer of 2 MB or more is its own fresh
 * anonymous mapping (zeroed, untouched), marked before anything writes it. A smaller one
 * comes from the heap, zeroed too. Advisory: where THP is off, the same memory on small
 * pages. Measured gains: docs/engine.md, "Huge pages".
 *
 *     void *p = arb_bigmem_alloc(bytes, true);   // NULL: out of memory
 *     ...
 *     arb_bigmem_free(p, bytes);                 // the same size
 */
#ifndef ARB_BIGMEM_H
#define ARB_BIGMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Under AddressSanitizer every buffer comes from the heap, where ASan guards its bounds
   (an mmap'd one it does not), and none is on huge pages. */
#if defined(__SANITIZE_ADDRESS__)
#define ARB_BIGMEM_HEAP_ONLY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARB_BIGMEM_HEAP_ONLY 1
#endif
#endif
#ifndef ARB_BIGMEM_HEAP_ONLY
#define ARB_BIGMEM_HEAP_ONLY 0
#endif

/* bytes zeroed, 64-byte aligned (2 MB aligned from 2 MB up but under ASan); huge: ask for
   huge pages. */
void *arb_bigmem_alloc(size_t bytes, bool huge);
void arb_bigmem_free(void *p, size_t bytes); /* NULL-safe */
/* How many bytes of the regions [p[i], p[i] + n[i]) (NULL p skipped) lie on transparent huge
   pages now, from /proc/self/smaps. -1 where it cannot be read (not Linux), else 0. */
int arb_bigmem_huge_bytes(const void *const *p, const size_t *n, int k, uint64_t *huge);

#endif
