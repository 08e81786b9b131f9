/* cpuinfo.h — what the CPU can do: ISA flags for kernel dispatch, and the model
 * name, flags and core count recorded with every benchmark result.
 *
 *     arb_cpuinfo ci;
 *     arb_cpuinfo_get(&ci);
 *     printf("%s, %d cores, %s\n", ci.model, ci.n_cores, ci.flags);
 *     if (ci.avx512vnni) ...
 *
 * Flags come from cpuid (with OS support for the vector state checked by the
 * compiler's runtime), the model name from the cpuid brand string. Thread-safe,
 * allocates nothing.
 */
#ifndef ARB_CPUINFO_H
#define ARB_CPUINFO_H

#include <stdbool.h>

typedef struct arb_cpuinfo {
    char model[64];   /* brand string, e.g. "Intel(R) Xeon(R) Processor @ 2.50GHz"; "unknown" */
    int n_cores;      /* online logical CPUs */
    bool sse42, avx, avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512vnni;
    char flags[96];   /* the flags above that are present, space-separated */
} arb_cpuinfo;

void arb_cpuinfo_get(arb_cpuinfo *out);

#endif
