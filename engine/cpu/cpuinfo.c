/* cpuinfo.c — ISA flags via the compiler's cpu-supports runtime (which also checks
 * that the OS saves the AVX/AVX-512 state), brand string via cpuid. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cpuinfo.h"

static void brand(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
#if defined(__x86_64__) || defined(__i386__)
    unsigned r[12], max = __get_cpuid_max(0x80000000u, NULL);
    if (max < 0x80000004u)
        return;
    for (unsigned i = 0; i < 3; i++)
        __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    char s[49];
    memcpy(s, r, 48);
    s[48] = 0;
    const char *p = s;
    while (*p == ' ')
        p++;
    snprintf(out, cap, "%s", p);
#endif
}

void arb_cpuinfo_get(arb_cpuinfo *ci)
{
    memset(ci, 0, sizeof *ci);
    brand(ci->model, sizeof ci->model);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    ci->n_cores = n > 0 ? (int)n : 1;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    ci->sse42 = __builtin_cpu_supports("sse4.2");
    ci->avx = __builtin_cpu_supports("avx");
    ci->avx2 = __builtin_cpu_supports("avx2");
    ci->fma = __builtin_cpu_supports("fma");
    ci->avx512f = __builtin_cpu_supports("avx512f");
    ci->avx512bw = __builtin_cpu_supports("avx512bw");
    ci->avx512vl = __builtin_cpu_supports("avx512vl");
    ci->avx512vnni = __builtin_cpu_supports("avx512vnni");
    /* F16C has no cpu-supports name in older compilers: cpuid leaf 1, ecx bit 29. */
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d))
        ci->f16c = ci->avx && (c & (1u << 29));
#endif
    struct { bool on; const char *name; } f[] = {
        {ci->sse42, "sse4.2"}, {ci->avx, "avx"}, {ci->avx2, "avx2"}, {ci->fma, "fma"}, {ci->f16c, "f16c"},
        {ci->avx512f, "avx512f"}, {ci->avx512bw, "avx512bw"}, {ci->avx512vl, "avx512vl"},
        {ci->avx512vnni, "avx512vnni"},
    };
    size_t len = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].on && len + strlen(f[i].name) + 2 < sizeof ci->flags)
            len += (size_t)snprintf(ci->flags + len, sizeof ci->flags - len, "%s%s", len ? " " : "", f[i].name);
}
