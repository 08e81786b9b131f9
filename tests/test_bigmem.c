/* test_bigmem.c — the engine's large buffers (engine/bigmem.h): zeroed, aligned, freed whole,
 * and on transparent huge pages when asked for where Linux grants them. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bigmem.h"
#include "kv.h"
#include "sysinfo.h"

#define MB ((size_t)1 << 20)

/* NULL where a buffer asked for huge pages should get them, else why not. */
static const char *no_huge_pages_because(char *mode, size_t cap)
{
    arb_sysinfo_thp_mode(mode, cap);
    if (ARB_BIGMEM_HEAP_ONLY)
        return "AddressSanitizer build: every buffer on the heap, small pages";
    if (strcmp(mode, "madvise") && strcmp(mode, "always"))
        return "transparent huge pages not granted on request here";
    return NULL;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

Test(bigmem, small_and_large_buffers_are_zeroed_aligned_and_writable)
{
    const size_t sizes[] = {1, 1000, 2 * MB - 1, 2 * MB, 3 * MB + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int huge = 0; huge < 2; huge++) {
            uint8_t *p = arb_bigmem_alloc(sizes[i], huge);
            cr_assert_not_null(p, "%zu bytes", sizes[i]);
            cr_assert_eq((uintptr_t)p % (sizes[i] >= 2 * MB && !ARB_BIGMEM_HEAP_ONLY ? 2 * MB : 64), 0, "%zu bytes at %p", sizes[i], (void *)p);
            cr_assert(all_zero(p, sizes[i]), "%zu bytes not zeroed", sizes[i]);
            memset(p, 0xA5, sizes[i]); /* every byte writable (ASan checks the small ones' bounds) */
            arb_bigmem_free(p, sizes[i]);
        }
    arb_bigmem_free(NULL, 5 * MB);
}

/* Touched after the mark, a 2 MB-aligned buffer lies on huge pages where THP grants them
   (in "madvise" mode only when asked); the count never exceeds the buffer. */
Test(bigmem, huge_pages_when_asked_and_granted)
{
    const size_t n = 6 * MB + 4096;
    uint8_t *p[2] = {arb_bigmem_alloc(n, true), arb_bigmem_alloc(n, false)};
    cr_assert(p[0] && p[1]);
    memset(p[0], 1, n);
    memset(p[1], 1, n);
    uint64_t huge[2];
    for (int i = 0; i < 2; i++) {
        const void *r[1] = {p[i]};
        const size_t len[1] = {n};
        cr_assert_eq(arb_bigmem_huge_bytes(r, len, 1, &huge[i]), 0, "/proc/self/smaps unreadable");
        cr_assert_leq(huge[i], n);
    }
    char mode[32];
    const char *why = no_huge_pages_because(mode, sizeof mode);
    printf("THP '%s': %llu / %llu bytes on huge pages when asked, %llu when not\n", mode,
           (unsigned long long)huge[0], (unsigned long long)n, (unsigned long long)huge[1]);
    arb_bigmem_free(p[0], n);
    arb_bigmem_free(p[1], n);
    if (why)
        cr_skip_test("%s (THP mode '%s')", why, mode);
    cr_assert_geq(huge[0], 6 * MB, "asked: only %llu bytes on huge pages", (unsigned long long)huge[0]);
    if (!strcmp(mode, "madvise"))
        cr_assert_eq(huge[1], 0, "not asked, in madvise mode: %llu bytes on huge pages", (unsigned long long)huge[1]);
}

/* The KV cache: zeroed rows, and with huge_pages its K and V on huge pages once written. */
Test(bigmem, kv_cache_on_huge_pages)
{
    arb_kv kv;
    arb_err err = {0};
    cr_assert_eq(arb_kv_init(&kv, 4, 4096, 2, 64, true, &err), ARB_OK, "%s", err.msg); /* 8 MB each */
    cr_assert_eq(kv.bytes, (size_t)4 * 4096 * 2 * 64 * sizeof(float));
    cr_assert(all_zero((const uint8_t *)kv.k, kv.bytes) && all_zero((const uint8_t *)kv.v, kv.bytes));
    for (int l = 0; l < 4; l++)
        for (int h = 0; h < 2; h++)
            arb_kv_k(&kv, l, h, 0)[0] = arb_kv_v(&kv, l, h, 0)[0] = 1.0f; /* each head's first row */
    const void *r[2] = {kv.k, kv.v};
    const size_t len[2] = {kv.bytes, kv.bytes};
    uint64_t huge = 0;
    cr_assert_eq(arb_bigmem_huge_bytes(r, len, 2, &huge), 0);
    arb_kv_release(&kv);
    char mode[32];
    const char *why = no_huge_pages_because(mode, sizeof mode);
    if (why)
        cr_skip_test("%s (THP mode '%s')", why, mode);
    /* 8 heads' regions of 1 MB in K and in V, the first row of each written: 2 MB pages hold them all */
    cr_assert_eq(huge, 2 * (size_t)4 * 4096 * 2 * 64 * sizeof(float), "%llu bytes on huge pages", (unsigned long long)huge);
}
