/* bigmem.c — large zeroed buffers, on transparent huge pages where Linux grants them. */
#include "bigmem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_BYTES ((size_t)2 << 20)

static size_t mapped_len(size_t bytes) { return (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1); }

void *arb_bigmem_alloc(size_t bytes, bool huge)
{
    if (bytes < HUGE_BYTES || ARB_BIGMEM_HEAP_ONLY) {
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes ? bytes : 1))
            return NULL;
        return memset(p, 0, bytes);
    }
    const size_t len = mapped_len(bytes);
    if (len > SIZE_MAX - HUGE_BYTES)
        return NULL;
    uint8_t *raw = mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    /* the 2 MB-aligned len bytes inside; the slack on either side goes back */
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p < raw + HUGE_BYTES)
        munmap(p + len, (size_t)(raw + HUGE_BYTES - p));
#ifdef MADV_HUGEPAGE
    if (huge)
        (void)madvise(p, len, MADV_HUGEPAGE); /* failure (THP never, old kernel): small pages */
#else
    (void)huge;
#endif
    return p;
}

void arb_bigmem_free(void *p, size_t bytes)
{
    if (p && bytes >= HUGE_BYTES && !ARB_BIGMEM_HEAP_ONLY)
        munmap(p, mapped_len(bytes));
    else
        free(p);
}

/* The part of [a, a + n) that lies in [lo, hi). */
static uint64_t overlap(uintptr_t a, size_t n, uintptr_t lo, uintptr_t hi)
{
    const uintptr_t b = a + n, s = a > lo ? a : lo, e = b < hi ? b : hi;
    return e > s ? (uint64_t)(e - s) : 0;
}

int arb_bigmem_huge_bytes(const void *const *p, const size_t *n, int k, uint64_t *huge)
{
    *huge = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    /* Per mapping "lo-hi perms ..." then "AnonHugePages: N kB"; a mapping that holds part of
       a region counts at most that part (madvise splits a mapping at the region's ends). */
    char line[512];
    uint64_t in_map = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, kb;
        const char *dash = strchr(line, '-'), *sp = strchr(line, ' ');
        if (dash && sp && dash < sp && sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in_map = 0;
            for (int i = 0; i < k; i++)
                if (p[i])
                    in_map += overlap((uintptr_t)p[i], n[i], (uintptr_t)lo, (uintptr_t)hi);
        } else if (in_map && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) {
            const uint64_t b = (uint64_t)kb << 10;
            *huge += b < in_map ? b : in_map;
        }
    }
    fclose(f);
    return 0;
}
