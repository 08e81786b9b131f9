/* sysinfo.c — see sysinfo.h. Reads /proc and runs nvidia-smi / git when they exist; every
 * field has a fallback so a missing tool never stops a run. */
#include "sysinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arb_config.h"
#include "arb_git_rev.h"
#include "engine.h"
#include "genutil.h"

/* ISA flags worth recording: what the kernels dispatch on, and what explains a timing. */
static const char *const isa_flags[] = {
    "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512vl",
    "avx512dq", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16",
    "asimd", "sve", NULL,
};

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
}

static void read_cpuinfo(arb_sysinfo *s)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    bool have_flags = false;
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1 + (colon[1] == ' ');
        trim(v);
        if (!strncmp(line, "model name", 10) && !strcmp(s->cpu_model, "unknown"))
            snprintf(s->cpu_model, sizeof s->cpu_model, "%s", v);
        else if ((!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8)) && !have_flags) {
            have_flags = true;
            for (const char *const *fl = isa_flags; *fl; fl++) {
                size_t n = strlen(*fl);
                for (const char *p = v; (p = strstr(p, *fl)); p += n)
                    if ((p == v || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) {
                        size_t used = strlen(s->cpu_flags);
                        snprintf(s->cpu_flags + used, sizeof s->cpu_flags - used, "%s%s", used ? " " : "", *fl);
                        break;
                    }
            }
        }
    }
    if (f)
        fclose(f);
}

static void read_meminfo(arb_sysinfo *s)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
            s->mem_bytes = kb * 1024;
    if (f)
        fclose(f);
}

/* First lines of a command's stdout, joined by "; " (empty when it fails). */
static void run_cmd(const char *cmd, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        trim(line);
        size_t used = strlen(buf);
        if (line[0])
            snprintf(buf + used, cap - used, "%s%s", used ? "; " : "", line);
    }
    if (pclose(p) != 0)
        buf[0] = 0;
}

void arb_sysinfo_get(arb_sysinfo *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->cpu_model, sizeof s->cpu_model, "unknown");
    if (gethostname(s->hostname, sizeof s->hostname - 1) != 0)
        snprintf(s->hostname, sizeof s->hostname, "unknown");
    read_cpuinfo(s);
    read_meminfo(s);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    s->n_cores = n > 0 ? (int)n : 0;
    run_cmd("command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi "
            "--query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null",
            s->gpu, sizeof s->gpu);
    snprintf(s->compiler, sizeof s->compiler, "%s", ARB_COMPILER);
    snprintf(s->build_type, sizeof s->build_type, "%s", ARB_BUILD_TYPE);
    snprintf(s->version, sizeof s->version, "%s", ARB_VERSION);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "git -C '%s' describe --always --dirty 2>/dev/null", ARB_SOURCE_ROOT);
    run_cmd(strchr(ARB_SOURCE_ROOT, '\'') ? "false" : cmd, s->git_rev, sizeof s->git_rev);
    if (!s->git_rev[0])
        snprintf(s->git_rev, sizeof s->git_rev, "%s", ARB_GIT_REV);
    arb_machine m;
    arb_machine_get(&m);
    /* The family the run's models use: the best one unless ARBOR_ISA lowers it. */
    const arb_load_opts lo = arb_gen_load_opts();
    char kl[32];
    snprintf(s->kernels, sizeof s->kernels, "%s",
             arb_cpu_kernels(lo.isa) ? arb_gen_kernels_label(&lo, kl, sizeof kl) : m.matmul_isa ? m.matmul_isa : "unknown");
}

void arb_sysinfo_thp_mode(char *buf, size_t cap)
{
    buf[0] = 0;
    char line[128];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return;
    const char *a = fgets(line, sizeof line, f) ? strchr(line, '[') : NULL, *e = a ? strchr(a, ']') : NULL;
    if (a && e)
        snprintf(buf, cap, "%.*s", (int)(e - a - 1), a + 1);
    fclose(f);
}
