/* sysinfo.h — the hardware and software a run was measured on, recorded with every run
 * (sessions table): CPU model and ISA flags, cores, memory (/proc), GPUs (nvidia-smi when
 * present), compiler, build type, git revision, arbor version, the CPU kernel family.
 *
 *     arb_sysinfo si;
 *     arb_sysinfo_get(&si);            // never fails; unknown fields read "unknown" / 0
 *     printf("%s, %d cores\n", si.cpu_model, si.n_cores);
 */
#ifndef ARB_SYSINFO_H
#define ARB_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

typedef struct arb_sysinfo {
    char hostname[128];
    char cpu_model[128];    /* /proc/cpuinfo "model name" */
    char cpu_flags[512];    /* the ISA flags kernels care about (avx2 fma avx512f ...) */
    int n_cores;            /* online logical CPUs */
    int64_t mem_bytes;      /* MemTotal */
    char gpu[512];          /* "NVIDIA H200, 143771 MiB, driver 570.x"; "" when none */
    char compiler[64], build_type[32], version[32];
    char git_rev[64];       /* `git describe --always --dirty` of the source tree, else the build's */
    char kernels[32];       /* CPU matmul family in use ("avx2", "scalar", ...) */
} arb_sysinfo;

void arb_sysinfo_get(arb_sysinfo *out);
/* Linux's transparent huge page mode ("always", "madvise", "never"; "" when unknown): whether
   the engine's weight copies can lie on 2 MB pages (arb_model_weight_pages). */
void arb_sysinfo_thp_mode(char *buf, size_t cap);

#endif
