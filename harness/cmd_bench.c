/* cmd_bench.c — `arbor bench engine`: how fast the engine is, next to the
 * machine's roofline and (optionally) llama.cpp's llama-bench in the same sitting.
 *
 * Measures: decode tok/s at batch 1 (AR steps from an empty context, as
 * llama-bench's tg test), prefill tok/s (one chain), and the time of evaluating
 * trees of 1..64 nodes (chains and wide trees whose nodes all hang off one root)
 * on a fixed prefix, as ratios to one node. The roofline: read bandwidth over a
 * buffer larger than the LLC divided by the weights' bytes (batch-1 tok/s bound),
 * and the int8 dot rate of the kernel family (compute bound for 64 nodes, at
 * ~n_params multiply-accumulates per node). Every figure is a ratio or a rate
 * measured in this run; nothing is compared with a stored number.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arb_git_rev.h"
#include "cli.h"
#include "engine.h"
#include "genutil.h"
#include "costmodel.h"
#include "fidelity.h"
#include "opts.h"
#include "resample.h"
#include "modelfetch.h"
#include "sysinfo.h"

static const char engine_description[] =
    "Benchmarks the engine on model M (default: the default model):\n"
    "  decode    tok/s at batch 1, --steps AR steps (default 128) from an empty context\n"
    "  prefill   tok/s of one --prefill-token chain (default 512), logits for every token, and\n"
    "            with the output head for the last token only (what a generation's prefill costs)\n"
    "  trees     time of 1,2,4,...,64-node chains and wide trees (all children of the\n"
    "            root) on a 64-token prefix, as ratios to one node (best of --reps, default 5)\n"
    "  roofline  measured read bandwidth / weight bytes (batch-1 tok/s bound) and the\n"
    "            int8 dot rate of the kernel family's instruction (compute bound for 64 nodes)\n"
    "  pause     a one-node eval after a 20 ms pause against one right after another (how\n"
    "            much of the weights a shared cache drops while the engine is idle)\n"
    "  kernels   the same evals' matrix products with the weights already in cache: what the\n"
    "            kernels themselves cost at 1, 8, 16, 64 nodes, as ratios to the measured 1-node eval;\n"
    "            for avx512vnni and avx2, whether issue #18's 8 / 16-node goal is out of reach of the\n"
    "            kernels here (the matrix products alone over the goal times the fastest 1-node eval);\n"
    "            under them the Q4_1 instruction mix (the kernels' instructions, operands in L1) and\n"
    "            the 8 / 16-node ratios no eval can beat with it\n"
    "  pages     how much of the weight copies lies on 2 MB (transparent huge) pages; the engine\n"
    "            asks for them for the copies and the KV cache (ARBOR_NO_HUGEPAGES=1: it does not)\n"
    "  memory    RSS and KV-cache bytes per token\n"
    "--llama-bench PATH runs `PATH -m M -p 0 -n STEPS -t N -r R` (R = --llama-reps, default 2)\n"
    "right after arbor's decode, --rounds times (default 2), and prints both rates and their ratio.\n"
    "The eval cost model t(n, L) = w(n) + (b + a n) L (harness/costmodel.h) is fitted on the wide\n"
    "trees at a 64-token context and at a long one; --save-profile writes it, with this machine's\n"
    "fingerprint, to $ARBOR_CACHE/cost/<fingerprint>.json (`arbor report --table cost`), where\n"
    "`budget: \"auto\"` reads it: the CPU's (kernels, threads) for CPU runs, the GPU's (device,\n"
    "cuda or cuda-exact) for runs on that backend.\n"
    "The long context is --context L (default: the longest a 64-node tree fits on); its 1-64-node\n"
    "ratios are printed too. --n-ctx N gives the context N tokens of KV capacity (default: what\n"
    "the timings need; `arbor run` takes the config's n_ctx or 4096) without moving that\n"
    "long context, to time the engine as a run holds it. --isa forces a CPU kernel family\n"
    "(scalar, avx2, avx512vnni: the load option isa); --trees-only skips the roofline, prefill,\n"
    "decode and memory lines;\n"
    "--cpu-time times the trees (and prefill) in process CPU time instead of wall time: on a\n"
    "shared machine and with --threads 1 it leaves out the time other processes hold the core.\n"
    "--backend cuda|cuda-exact: the GPU (README, GPU backend): trees up to 128 nodes, evals\n"
    "return one argmax per node (no logits rows to the host; one line shows the cost of\n"
    "copying them), the roofline is the measured device read bandwidth, and the cost model\n"
    "is fitted on the GPU's own trees.\n";

static const char usage[] =
    "usage: arbor bench engine|fidelity [options]   (arbor bench <benchmark> --help)\n"
    "  engine    decode/prefill tok/s, tree costs, roofline, the cost-model profile, llama-bench\n"
    "  fidelity  quantized kernels vs the F32-dequantized model: argmax agreement per block type\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Where the kernels' weight copies live: on 2 MB pages they cost ~50 TLB misses a step
   instead of ~24 000 (engine/bigmem.h; docs/engine.md, "Huge pages"). */
static void print_pages(const arb_model *m, const arb_load_opts *lo)
{
    uint64_t copy = 0, huge = 0;
    arb_err err = {0};
    char mode[32];
    arb_sysinfo_thp_mode(mode, sizeof mode);
    if (arb_model_weight_pages(m, &copy, &huge, &err) || !copy)
        return;
    printf("pages     weight copies %.1f MB, %.1f MB of them on huge pages (transparent huge pages: %s%s)\n", copy / 1e6,
           huge / 1e6, mode[0] ? mode : "unknown", lo->no_huge_pages ? "; ARBOR_NO_HUGEPAGES set" : "");
}

/* kB value of a /proc/self/status field ("VmRSS", "VmHWM"); -1 if absent. */
static long proc_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    const size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

typedef struct bench {
    arb_ctx *c;
    arb_model_info mi;
    float *logits;   /* n_max x n_vocab */
    int32_t *tok, *par, *am; /* am: n_max argmax ids */
    int n_max;
    int n_ctx;        /* the context's KV capacity (--n-ctx, or what the timings need) */
    bool argmax_only; /* evals return argmax ids, not logits rows (GPU) */
    bool cpu_time;    /* tree timings in process CPU time, not wall time (--cpu-time) */
    bool cold;        /* time each tree right after a tree of another size (--cold) */
} bench;

/* The clock of the tree timings: wall time, or with --cpu-time the process's CPU time,
   which on one thread leaves out the time other processes hold the core (a shared
   machine) but still counts the cache misses they cause. */
static double bench_now(const bench *b)
{
    if (!b->cpu_time)
        return now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_eval(bench *b, const int32_t *tok, const int32_t *par, int n, arb_err *err)
{
    const arb_eval_out o = {.logits = b->argmax_only ? NULL : b->logits, .argmax = b->am};
    return arb_eval_ex(b->c, tok, par, n, &o, err);
}

/* Decode `steps` tokens at batch 1 from an empty context; returns tok/s or < 0. */
static double run_decode(bench *b, int steps, arb_err *err)
{
    if (arb_ctx_truncate(b->c, 0))
        return -1;
    int32_t t = b->mi.bos >= 0 ? b->mi.bos : 1, par = -1, zero = 0;
    const double t0 = now_s();
    for (int s = 0; s < steps; s++) {
        if (bench_eval(b, &t, &par, 1, err) || arb_commit(b->c, &zero, 1, err))
            return -1;
        t = b->am[0];
    }
    return steps / (now_s() - t0);
}

/* How long the same tree runs untimed before its timed eval: on an Intel Xeon with a 260 MB L3
   (2026-11-27, docs/cost-model.md) a one-node eval after a 64-node one cost 1.7-1.8x its decode-
   loop time, and ~10 one-node evals (~30 ms) passed before it was back; one untimed eval was
   not enough there. */
#define BENCH_WARM_S 0.05

/* Chain (or, wide, a root and n - 1 children) of n pseudo-random tokens on top of the current
   prefix; seconds or < 0. The timed eval follows untimed ones of the same tree (at least one,
   for at least BENCH_WARM_S), as a run's step follows steps like it (AR: one node after one
   node), unless b->cold: then it follows whatever the caller evaluated last, in the rotations
   below a tree of another size. That matters on the CPU: measured on the AMD EPYC build machine
   (docs/cost-model.md), a one-node eval right after a 64-node one costs ~10 % more than in a
   decode loop, trees of 2-64 nodes ~1-4 %, and a profile timed cold over-predicted every
   speedup by 5-15 %; on the Intel machine above, one untimed eval left the one-node time 1.7x
   the runs' and the profile 30-66 % off them. */
static double run_eval(bench *b, int n, int wide, arb_err *err)
{
    for (int i = 0; i < n; i++) {
        b->tok[i] = (int32_t)((7919u * (unsigned)(i + 11)) % (unsigned)b->mi.n_vocab);
        b->par[i] = wide ? (i == 0 ? -1 : 0) : i - 1;
    }
    if (!b->cold) {
        const double w0 = now_s();
        do
            if (bench_eval(b, b->tok, b->par, n, err))
                return -1;
        while (now_s() - w0 < BENCH_WARM_S);
    }
    const double t0 = bench_now(b);
    if (bench_eval(b, b->tok, b->par, n, err))
        return -1;
    return bench_now(b) - t0;
}

/* A one-node eval right after the same eval, and right after a pause of PAUSE_MS; the
   medians of PAUSE_REPS pairs into *warm and *paused (seconds). On a host whose cache
   the weights share with other tenants (the Intel Xeon of docs/cost-model.md, "A shared
   L3 that forgets"), weights not re-read for a few milliseconds are partly evicted: there
   a one-node eval after a 40 ms pause cost 1.7-1.9x one after another, spinning or
   asleep. A run's evals that take longer than AR's, or follow longer ones, pay part of
   that, which the warm tree timings above do not show; on a host that streams the
   weights from DRAM anyway the ratio is ~1. */
#define PAUSE_MS 20
#define PAUSE_REPS 5
static int pause_times(bench *b, double *warm, double *paused, arb_err *err)
{
    double w[PAUSE_REPS], p[PAUSE_REPS];
    const struct timespec nap = {0, PAUSE_MS * 1000000L};
    for (int r = 0; r < PAUSE_REPS; r++) {
        if ((w[r] = run_eval(b, 1, 0, err)) < 0)
            return -1;
        nanosleep(&nap, NULL);
        const double t0 = bench_now(b);
        if (bench_eval(b, b->tok, b->par, 1, err))
            return -1;
        p[r] = bench_now(b) - t0;
    }
    qsort(w, PAUSE_REPS, sizeof *w, arb_cmp_double);
    qsort(p, PAUSE_REPS, sizeof *p, arb_cmp_double);
    *warm = w[PAUSE_REPS / 2];
    *paused = p[PAUSE_REPS / 2];
    return 0;
}

/* llama-bench's tg rate (avg_ts of the CSV row); < 0 if it failed. */
static double run_llama_bench(const char *exe, const char *model, int steps, int threads, int reps)
{
    if (strchr(exe, '\'') || strchr(model, '\''))
        return -1;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -m '%s' -p 0 -n %d -t %d -r %d -o csv 2>/dev/null", exe, model, steps, threads, reps);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[8192];
    int col = -1;
    double ts = -1;
    while (fgets(line, sizeof line, p)) {
        int k = 0;
        char *save = NULL;
        for (char *f = strtok_r(line, ",\n", &save); f; f = strtok_r(NULL, ",\n", &save), k++) {
            if (col < 0 && !strcmp(f, "avg_ts"))
                col = k;
            else if (col >= 0 && k == col) {
                const char *s = f[0] == '"' ? f + 1 : f;
                char *end;
                double v = strtod(s, &end);
                if (end != s)
                    ts = v;
            }
        }
    }
    return pclose(p) == 0 ? ts : -1;
}

/* Time of a tree of n nodes (chain or wide) on the 64-token prefix: best of reps. */
static int tree_times(bench *b, const int *sizes, int n_sizes, int reps, double tt[2][8], arb_err *err)
{
    for (int wide = 0; wide < 2; wide++)
        for (int k = 0; k < n_sizes; k++)
            tt[wide][k] = 1e30;
    /* Repetitions outermost: every size is measured once per round, so a slow minute
       of a shared machine hits all sizes alike instead of the few measured in it. */
    for (int r = 0; r < reps; r++)
        for (int wide = 0; wide < 2; wide++)
            for (int k = 0; k < n_sizes; k++) {
                const double t = run_eval(b, sizes[k], wide, err);
                if (t < 0)
                    return -1;
                tt[wide][k] = t < tt[wide][k] ? t : tt[wide][k];
            }
    return 0;
}

static int prefix64(bench *b, arb_err *err)
{
    int32_t path64[64];
    for (int i = 0; i < 64; i++)
        path64[i] = i;
    if (arb_ctx_truncate(b->c, 0) || run_eval(b, 64, 0, err) < 0 || arb_commit(b->c, path64, 64, err))
        return -1;
    return 0;
}

static int cost_profile(bench *b, const int *sizes, int n_sizes, const double *tt64, int reps, int L2,
                        const char *fingerprint, bool save, arb_err *err);

/* The GPU half of `bench engine`: device, measured bandwidth roofline, prefill, decode,
   1..128-node trees (argmax per node returned), the cost of full logits rows, and the cost
   model t(n, L) of this GPU and mode (fitted as on the CPU; saved with --save-profile under the
   device's fingerprint, arb_gen_cost_fingerprint, where `budget: "auto"` on this backend reads it). */
static int bench_gpu(bench *b, const char *backend, double t_load, int steps, int prefill, int reps, bool quick,
                     int L2, bool save_profile, arb_err *err)
{
    arb_gpu_info di;
    if (arb_gpu_info_get(&di, err))
        return -1;
    printf("device    %s (sm_%d%d, %d SMs), %.1f GB, backend %s; model upload %.2f s\n", di.name, di.cc_major,
           di.cc_minor, di.n_sm, di.mem_total / 1e9, backend, t_load);
    const double bw = arb_gpu_probe_bw((size_t)2 << 30, quick ? 3 : 10);
    const double roof_tok = bw > 0 ? bw / (double)b->mi.weight_bytes : 0;
    printf("roofline  device read bandwidth %.0f GB/s measured (%.0f GB/s from the memory clock) -> %.1f tok/s\n"
           "          at batch 1 (weights %.1f MB per token)\n", bw / 1e9, di.peak_bw / 1e9, roof_tok,
           b->mi.weight_bytes / 1e6);
    fflush(stdout);
    double best_pf = 0;
    for (int r = 0; r < 3; r++) {
        if (arb_ctx_truncate(b->c, 0))
            return -1;
        const double t = run_eval(b, prefill, 0, err);
        if (t < 0)
            return -1;
        best_pf = prefill / t > best_pf ? prefill / t : best_pf;
    }
    printf("prefill   %.1f tok/s (%d-token chain, argmax for every node, best of 3)\n", best_pf, prefill);
    double dec = 0;
    for (int r = 0; r < 2; r++) { /* the first round warms up kernels and clocks */
        dec = run_decode(b, steps, err);
        if (dec < 0)
            return -1;
    }
    printf("decode    %.1f tok/s at batch 1 (%d steps from an empty context, %.3f ms/token) = %.0f%% of the\n"
           "          bandwidth roofline\n", dec, steps, 1e3 / dec, roof_tok > 0 ? 100.0 * dec / roof_tok : 0.0);
    fflush(stdout);
    static const int sizes[8] = {1, 2, 4, 8, 16, 32, 64, 128};
    double tt[2][8];
    if (prefix64(b, err) || tree_times(b, sizes, 8, reps, tt, err))
        return -1;
    printf("trees     nodes:        1      2      4      8     16     32     64    128   (time / time of 1 node, "
           "best of %d)\n", reps);
    for (int wide = 0; wide < 2; wide++) {
        printf("          %-7s", wide ? "wide" : "chain");
        for (int k = 0; k < 8; k++)
            printf(" %6.2f", tt[wide][k] / tt[wide][0]);
        printf("   (1 node %.3f ms, 64 nodes %.3f ms)\n", 1e3 * tt[wide][0], 1e3 * tt[wide][6]);
    }
    printf("          64 nodes = %.2fx one node (goal <= 1.5)\n", tt[1][6] / tt[1][0]);
    b->argmax_only = false; /* the same trees returning every logits row to the host */
    double tl[2][8];
    if (tree_times(b, sizes, 8, reps, tl, err))
        return -1;
    b->argmax_only = true;
    printf("logits    full rows to the host: 1 node %.3f ms, 64 nodes %.3f ms, 128 nodes %.3f ms (wide; %.1f MB\n"
           "          at 64 nodes) = %.2fx the argmax-only eval at 64 nodes\n", 1e3 * tl[1][0], 1e3 * tl[1][6],
           1e3 * tl[1][7], 64.0 * b->mi.n_vocab * 4 / 1e6, tl[1][6] / tt[1][6]);
    char fp[200];
    if (arb_gen_cost_fingerprint(b->c, 0, fp, sizeof fp, err) ||
        cost_profile(b, sizes, 7, tt[1], reps, L2, fp, save_profile, err))
        return -1;
    const double kv_tok = 2.0 * b->mi.n_layer * b->mi.n_head_kv * b->mi.head_dim * sizeof(float);
    printf("memory    KV cache %.1f KB per token (f32, on the device), %d tokens' capacity\n", kv_tok / 1024.0,
           b->n_ctx);
    return 0;
}

/* The cost model: the 64-token wide-tree times (tt64, sizes[0..n_sizes)) and the same trees
   at a long context (the cache filled to L2 tokens), fitted; printed, and saved when asked. */
static int cost_profile(bench *b, const int *sizes, int n_sizes, const double *tt64, int reps, int L2,
                        const char *fingerprint, bool save, arb_err *err)
{
    int n[16], L[16];
    double t[16];
    int m = 0;
    for (int k = 0; k < n_sizes && m < 16; k++, m++)
        n[m] = sizes[k], L[m] = 64, t[m] = 1e6 * tt64[k];
    if (arb_ctx_truncate(b->c, 0))
        return -1;
    for (int done = 0; done < L2;) { /* fill the cache in chains of at most n_max */
        const int len = L2 - done < b->n_max ? L2 - done : b->n_max;
        int32_t path[b->n_max];
        for (int i = 0; i < len; i++)
            path[i] = i;
        if (run_eval(b, len, 0, err) < 0 || arb_commit(b->c, path, len, err))
            return -1;
        done += len;
    }
    static const int long_sizes[] = {1, 2, 4, 8, 16, 64};
    enum { N_LONG = sizeof long_sizes / sizeof *long_sizes };
    double best[N_LONG];
    for (int k = 0; k < N_LONG; k++)
        best[k] = 1e30;
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < N_LONG; k++) {
            const double x = run_eval(b, long_sizes[k], 1, err);
            if (x < 0)
                return -1;
            best[k] = x < best[k] ? x : best[k];
        }
    for (int k = 0; k < N_LONG && m < 16; k++, m++)
        n[m] = long_sizes[k], L[m] = L2, t[m] = 1e6 * best[k];
    printf("trees     at %d cached tokens, wide: nodes", L2);
    for (int k = 0; k < N_LONG; k++)
        printf(" %d: %.2f", long_sizes[k], best[k] / best[0]);
    printf("   (1 node %.2f ms)\n", 1e3 * best[0]);
    arb_cost_model cm;
    if (arb_cost_fit(n, L, t, m, &cm, err))
        return -1;
    snprintf(cm.source, sizeof cm.source, "arbor bench engine: wide trees at %d and %d cached tokens, best of %d",
             64, L2, reps);
    snprintf(cm.fingerprint, sizeof cm.fingerprint, "%s", fingerprint);
    snprintf(cm.build, sizeof cm.build, "%s", ARB_GIT_REV);
    printf("cost      t(n, L) = w(n) + (b + a n) L: w(1) %.2f ms, w(8) %.2f ms, w(64) %.2f ms, a = %.4f us per node per\n"
           "          cached token, b = %.4f us per cached token (%d tokens: 1 node %.2f ms, 64 nodes %.2f ms); fit rms\n"
           "          %.1f%% over %d trees\n",
           arb_cost_us(&cm, 1, 0) / 1e3, arb_cost_us(&cm, 8, 0) / 1e3, arb_cost_us(&cm, 64, 0) / 1e3, cm.ctx_us,
           cm.ctx0_us, L2, 1e3 * best[0], 1e3 * best[N_LONG - 1], 100.0 * cm.rms_rel, m);
    if (!save)
        return 0;
    char file[4400];
    if (arb_cost_profile_path(fingerprint, true, file, sizeof file, err) || arb_cost_save(&cm, file, err))
        return -1;
    printf("          saved to %s\n", file);
    return 0;
}

static int bench_engine(int argc, char **argv)
{
    const char *model = "default", *llama = NULL, *backend = "cpu", *isa = NULL;
    int threads = 0, steps = 128, prefill = 512, reps = 5, rounds = 2, llama_reps = 2, context = 0, n_ctx = 0;
    bool quick = false, save_profile = false, trees_only = false, cpu_time = false, cold = false;
    const arb_opt opts[] = {
        ARB_OPT_STR("--model", "M", &model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_INT("--threads", "N", &threads, 0, 1024, "kernel threads (default 0 = all cores)"),
        ARB_OPT_INT("--steps", "N", &steps, 1, 100000, "decode steps (default 128)"),
        ARB_OPT_INT("--prefill", "N", &prefill, 1, 100000, "prefill chain length (default 512)"),
        ARB_OPT_INT("--reps", "N", &reps, 1, 1000, "tree timings: best of N (default 5)"),
        ARB_OPT_STR("--llama-bench", "PATH", &llama, "a llama-bench binary to alternate with arbor's decode"),
        ARB_OPT_INT("--llama-reps", "R", &llama_reps, 1, 100, "llama-bench -r (default 2)"),
        ARB_OPT_INT("--rounds", "N", &rounds, 1, 100, "decode / llama-bench rounds (default 2)"),
        ARB_OPT_FLAG("--quick", &quick, "fewer steps and reps"),
        ARB_OPT_STR("--backend", "B", &backend, "cpu (default), cuda or cuda-exact"),
        ARB_OPT_FLAG("--save-profile", &save_profile, "write the fitted cost model to the cache"),
        ARB_OPT_STR("--isa", "NAME", &isa, "CPU kernel family: scalar, avx2, avx512vnni (default: the best)"),
        ARB_OPT_INT("--context", "L", &context, 0, 1 << 20, "long context of the tree timings (default 0 = the longest)"),
        ARB_OPT_INT("--n-ctx", "N", &n_ctx, 0, 1 << 24, "the context's KV capacity (default 0: what the timings need)"),
        ARB_OPT_FLAG("--trees-only", &trees_only, "only the tree timings and the cost model"),
        ARB_OPT_FLAG("--cpu-time", &cpu_time, "time trees in process CPU time (meaningful with --threads 1)"),
        ARB_OPT_FLAG("--cold", &cold, "time each tree right after one of another size (before 2026-11-26: the "
                                      "default), not after one like it"),
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"bench engine", NULL, engine_description, opts, 0, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    if (quick) {
        steps = steps > 32 ? 32 : steps;
        prefill = prefill > 128 ? 128 : prefill;
        reps = 2;
    }
    char path[4096];
    arb_err err = {0};
    if (arb_model_resolve(model, path, sizeof path, &err)) {
        fprintf(stderr, "arbor bench engine: %s\n", err.msg);
        return 1;
    }
    arb_machine mach;
    arb_machine_get(&mach);
    if (!threads)
        threads = mach.n_cores;

    arb_load_opts lo = arb_gen_load_opts();
    lo.n_threads = threads;
    if (isa) {
        if (!arb_cpu_kernels(isa)) {
            fprintf(stderr, "arbor bench engine: --isa: unknown kernel family '%s' (scalar, avx2, avx512vnni)\n", isa);
            return 2;
        }
        lo.isa = isa;
    }
    if (arb_load_opts_set_backend(&lo, backend, &err)) {
        fprintf(stderr, "arbor bench engine: --backend: %s\n", err.msg);
        return 2;
    }
    const bool gpu = lo.backend == ARB_BACKEND_CUDA;
    const int max_tree = gpu ? 128 : 64;
    arb_model *m = NULL;
    bench b = {.argmax_only = gpu, .cpu_time = cpu_time, .cold = cold};
    int rc = 1;
    const double tl0 = now_s();
    if (arb_model_load(path, &lo, &m, &err))
        goto fail;
    const double t_load = now_s() - tl0;
    arb_model_get_info(m, &b.mi);
    b.n_max = prefill > max_tree ? prefill : max_tree;
    arb_ctx_opts co = arb_ctx_default_opts();
    co.n_ctx = b.n_max + steps + 64 + 64;
    if (context > 0 && context + 66 > co.n_ctx)
        co.n_ctx = context + 66;
    /* The long context of the trees (default: the longest a 64-node tree fits on), whatever
       the capacity (--n-ctx only enlarges the cache, as `arbor run`'s 4096 does, to compare
       like with like) */
    const int l_long = context > 0 ? context : co.n_ctx - 66;
    if (n_ctx > co.n_ctx)
        co.n_ctx = n_ctx;
    b.n_ctx = co.n_ctx;
    if (co.n_ctx > b.mi.n_ctx_train && b.mi.n_ctx_train > 0) {
        fprintf(stderr, "arbor bench engine: --prefill + --steps (or --context, --n-ctx) exceed the model's context (%d)\n",
                b.mi.n_ctx_train);
        goto out;
    }
    co.n_batch_max = b.n_max;
    if (arb_ctx_new(m, &co, &b.c, &err))
        goto fail;
    b.logits = malloc(sizeof(float) * (size_t)b.n_max * (size_t)b.mi.n_vocab);
    b.tok = malloc(sizeof(int32_t) * (size_t)b.n_max);
    b.par = malloc(sizeof(int32_t) * (size_t)b.n_max);
    b.am = malloc(sizeof(int32_t) * (size_t)b.n_max);
    if (!b.logits || !b.tok || !b.par || !b.am) {
        fprintf(stderr, "arbor bench engine: out of memory\n");
        goto out;
    }

    printf("arbor bench engine: %s\n", path);
    char klabel[32];
    printf("machine   %s, %d cores, kernels %s, %d thread%s\n          flags: %s\n", mach.cpu_model,
           mach.n_cores, arb_gen_kernels_label(&lo, klabel, sizeof klabel), threads, threads == 1 ? "" : "s",
           mach.cpu_flags);
    printf("model     %s (%s), %d layers, n_embd %d, vocab %d, %.1f M params, %.1f MB weights\n", b.mi.name,
           b.mi.arch, b.mi.n_layer, b.mi.n_embd, b.mi.n_vocab, b.mi.n_params / 1e6, b.mi.weight_bytes / 1e6);
    if (!gpu)
        print_pages(m, &lo);
    fflush(stdout);
    if (gpu) {
        rc = bench_gpu(&b, backend, t_load, steps, prefill, reps, quick, l_long, save_profile, &err);
        if (rc < 0)
            goto fail;
        goto out;
    }

    double roof64 = 0, roof64f = 0;
    if (trees_only)
        goto trees;
    /* Roofline. */
    const double bw = arb_probe_read_bw((size_t)256 << 20, threads, quick ? 0.3 : 1.0);
    const double macs = arb_probe_int8_macs(lo.isa, threads, quick ? 0.2 : 0.5);
    const double fmas = arb_probe_fma_flops(threads, quick ? 0.2 : 0.5);
    const double roof_tok = bw > 0 ? bw / (double)b.mi.weight_bytes : 0;
    const double roof1 = bw > 0 ? (double)b.mi.weight_bytes / bw : 0;
    /* 64 nodes need 64 x n_params multiply-accumulates and one read of the weights */
    const double mac64 = 64.0 * (double)b.mi.n_params;
    roof64 = macs > 0 ? fmax(mac64 / macs, roof1) : 0;
    roof64f = fmas > 0 ? fmax(mac64 / fmas, roof1) : 0;
    printf("roofline  read bandwidth %.2f GB/s -> %.1f tok/s at batch 1 (weights %.1f MB per token)\n", bw / 1e9,
           roof_tok, b.mi.weight_bytes / 1e6);
    printf("          int8 dot rate %.1f GMAC/s -> 64 nodes >= %.2f ms (%.0f MMAC/node)\n", macs / 1e9, 1e3 * roof64,
           b.mi.n_params / 1e6);
    printf("          fp32 FMA rate %.1f GFMA/s -> 64 nodes >= %.2f ms\n", fmas / 1e9, 1e3 * roof64f);
    fflush(stdout);

    /* Prefill. */
    double best_pf = 0;
    for (int r = 0; r < (reps < 2 ? reps : 2); r++) {
        if (arb_ctx_truncate(b.c, 0))
            goto out;
        const double t = run_eval(&b, prefill, 0, &err);
        if (t < 0)
            goto fail;
        best_pf = prefill / t > best_pf ? prefill / t : best_pf;
    }
    printf("prefill   %.1f tok/s (%d-token chain, logits for every node, best of %d)\n", best_pf, prefill,
           reps < 2 ? reps : 2);
    /* What a generation's prefill costs when nothing reads the other tokens' rows (AR, PLD,
       TR, goose-dyn-auto: decode.c): arb_prefill_ex with the last token's argmax only. */
    double best_last = 0;
    for (int r = 0; r < (reps < 2 ? reps : 2); r++) {
        if (arb_ctx_truncate(b.c, 0))
            goto out;
        int32_t am = -1;
        const arb_eval_out last = {.argmax = &am};
        const double t0 = bench_now(&b);
        if (arb_prefill_ex(b.c, b.tok, prefill, &last, &err))
            goto fail;
        const double t = bench_now(&b) - t0;
        best_last = prefill / t > best_last ? prefill / t : best_last;
    }
    printf("          %.1f tok/s with the output head for the last token only (the decoder's prefill)\n", best_last);
    fflush(stdout);

    /* Decode, and llama-bench alternating with it. */
    for (int r = 0; r < (llama ? rounds : 1); r++) {
        const double dec = run_decode(&b, steps, &err);
        if (dec < 0)
            goto fail;
        printf("decode    %.1f tok/s at batch 1 (%d steps from an empty context) = %.0f%% of the bandwidth roofline\n",
               dec, steps, roof_tok > 0 ? 100.0 * dec / roof_tok : 0.0);
        fflush(stdout);
        if (llama) {
            const double lt = run_llama_bench(llama, path, steps, threads, llama_reps);
            if (lt < 0)
                printf("llama.cpp llama-bench failed (%s)\n", llama);
            else
                printf("llama.cpp %.1f tok/s (llama-bench -p 0 -n %d -t %d -r %d, mean)  arbor/llama.cpp = %.2f  [round %d]\n",
                       lt, steps, threads, llama_reps, dec / lt, r + 1);
        }
        fflush(stdout);
    }

trees:
    /* Trees on a 64-token prefix. */
    if (arb_ctx_truncate(b.c, 0) || run_eval(&b, 64, 0, &err) < 0)
        goto fail;
    int32_t path64[64];
    for (int i = 0; i < 64; i++)
        path64[i] = i;
    if (arb_commit(b.c, path64, 64, &err))
        goto fail;
    static const int sizes[] = {1, 2, 4, 8, 16, 32, 64};
    double tt[2][8]; /* tree_times: repetitions outermost, as its comment says */
    if (tree_times(&b, sizes, 7, reps, tt, &err))
        goto fail;
    printf("trees     nodes:        1      2      4      8     16     32     64   (time / time of 1 node, best of %d)\n", reps);
    for (int wide = 0; wide < 2; wide++) {
        printf("          %-7s", wide ? "wide" : "chain");
        for (int k = 0; k < 7; k++)
            printf(" %6.2f", tt[wide][k] / tt[wide][0]);
        printf("   (1 node %.2f ms, 64 nodes %.2f ms)\n", 1e3 * tt[wide][0], 1e3 * tt[wide][6]);
    }
    /* issue #18's goals for 8 / 16-node trees, per kernel family (docs/engine.md); {0, 0}: none */
    const char *fam = arb_cpu_kernels(lo.isa);
    double goal[2] = {0, 0};
    if (fam && !strcmp(fam, "avx512vnni"))
        goal[0] = 1.6, goal[1] = 2.5;
    else if (fam && !strcmp(fam, "avx2"))
        goal[0] = 2.0, goal[1] = 3.5;
    printf("          8 / 16 nodes = %.2f / %.2fx one node (wide)", tt[1][3] / tt[1][0], tt[1][4] / tt[1][0]);
    if (goal[0] > 0)
        printf(" (goal <= %.1f / %.1f with %s)", goal[0], goal[1], fam);
    printf("\n");
    if (!trees_only)
        printf("          64 nodes = %.2fx the int8 roofline, %.2fx the fp32 FMA roofline\n",
               roof64 > 0 ? tt[1][6] / roof64 : 0.0, roof64f > 0 ? tt[1][6] / roof64f : 0.0);
    double warm, paused;
    {
        if (pause_times(&b, &warm, &paused, &err))
            goto fail;
        printf("pause     one node %.2f ms right after another, %.2f ms after a %d ms pause = %.2fx (median of %d;\n"
               "          above ~1.1x the weights leave a shared cache while idle: docs/cost-model.md)\n",
               1e3 * warm, 1e3 * paused, PAUSE_MS, paused / warm, PAUSE_REPS);
        fflush(stdout);
    }
    { /* the kernels' own compute bound: the same matrix products with the weights in cache */
        static const int kn[] = {1, 8, 16, 64};
        double kus[4];
        for (int k = 0; k < 4; k++)
            if (arb_probe_matmul_us(b.c, kn[k], quick ? 0.1 : 0.3, &kus[k], &err))
                goto fail;
        printf("kernels   matmuls of an eval with the weights in cache (compute bound of these kernels):\n"
               "          1 node %.2f ms, 8 nodes %.2f, 16 nodes %.2f, 64 nodes %.2f = %.2f / %.2f / %.2f x the\n"
               "          measured 1-node eval (the least an 8 / 16 / 64-node eval can cost here, before attention)\n",
               kus[0] / 1e3, kus[1] / 1e3, kus[2] / 1e3, kus[3] / 1e3, kus[1] / 1e6 / tt[1][0], kus[2] / 1e6 / tt[1][0],
               kus[3] / 1e6 / tt[1][0]);
        /* A goal under what the matrix products alone cost with their weights already in cache
           cannot be met by any memory, prefetch or scheduling work here: say so per size, against
           the fastest one-node eval this bench timed (the weights warm, as a decode loop keeps
           them; a host state that slows the one-node eval, weights streamed from DRAM, lowers
           every ratio and can move the verdict: docs/cost-model.md, "The kernels' floor"). */
        double t1 = fmin(fmin(tt[0][0], tt[1][0]), warm);
        for (int k = 1; k <= 2 && goal[0] > 0; k++) {
            const double r = kus[k] / 1e6 / t1, g = goal[k - 1];
            printf("          %2d nodes: matmuls alone %.2fx the fastest 1-node eval (%.2f ms), goal %.1fx: %s\n", kn[k], r,
                   1e3 * t1, g, r > g ? "out of reach of these kernels here" : "not excluded by the kernels alone");
        }
        /* the floor under those kernels: their Q4_1 instructions with every operand in L1
           (probe.c), as if every matrix of the model ran at that rate */
        const double mix = arb_probe_q4_mix_macs(lo.isa, threads, quick ? 0.1 : 0.3);
        if (mix > 0) {
            const double per_node = (double)b.mi.n_params / mix;
            printf("          Q4_1 instruction mix %.1f GMAC/s (operands in L1): 8 / 16 nodes >= %.2f / %.2fx the\n"
                   "          1-node eval if every matrix ran at it (docs/cost-model.md, \"The kernels' floor\")\n",
                   mix / 1e9, 8 * per_node / tt[1][0], 16 * per_node / tt[1][0]);
        }
    }

    {
        char fp[200], kl[32];
        arb_cost_fingerprint(fp, sizeof fp, mach.cpu_model, arb_gen_kernels_label(&lo, kl, sizeof kl), threads, b.mi.name,
                             (double)b.mi.weight_bytes);
        if (cost_profile(&b, sizes, 7, tt[1], reps, l_long, fp, save_profile, &err))
            goto fail;
    }
    fflush(stdout);
    if (trees_only) {
        rc = 0;
        goto out;
    }

    const double kv_tok = 2.0 * b.mi.n_layer * b.mi.n_head_kv * b.mi.head_dim * sizeof(float);
    const double buf_mb = (double)sizeof(float) * b.n_max * b.mi.n_vocab / 1e6;
    printf("memory    RSS %.1f MB at the end, peak %.1f MB (weights are mmapped; includes %.1f MB of bench\n"
           "          logits buffers); KV cache %.1f KB per token (f32), %d tokens' capacity\n",
           proc_kb("VmRSS") / 1024.0, proc_kb("VmHWM") / 1024.0, buf_mb, kv_tok / 1024.0, b.n_ctx);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "arbor bench engine: %s\n", err.msg);
out:
    free(b.logits);
    free(b.tok);
    free(b.par);
    free(b.am);
    arb_ctx_free(b.c);
    arb_model_free(m);
    return rc;
}

/* `arbor bench fidelity`: the quantized kernels against the F32-dequantized model. */
static int bench_fidelity(int argc, char **argv)
{
    arb_fidelity_opts fo = {.model = "default", .dataset = "humaneval", .limit = 20, .max_new = 64, .n_boot = 1000};
    const arb_opt opts[] = {
        ARB_OPT_STR("--model", "M", &fo.model, "default (the cached SmolLM2-135M) or a GGUF path"),
        ARB_OPT_STR("--datasets", "A,B", &fo.dataset, "datasets whose first prompts are used (default humaneval)"),
        ARB_OPT_INT("--limit", "N", &fo.limit, 1, ARB_FIDELITY_MAX_PROMPTS, "prompts of each dataset (default 20)"),
        ARB_OPT_INT("--max-new", "N", &fo.max_new, 1, 512, "generated positions compared per prompt (default 64)"),
        ARB_OPT_INT("--threads", "N", &fo.threads, 0, 1024, "kernel threads (default 0 = all cores)"),
        ARB_OPT_STR("--data", "DIR", &fo.data_dir, "dataset directory (default $ARBOR_DATA)"),
        ARB_OPT_STR("--dump-ref", "FILE", &fo.dump_ref, "write the reference sequences (TSV) for another engine"),
        ARB_OPT_STR("--score", "F1,F2", &fo.score, "score other engines' teacher-forced argmax (TSV: prompt, position, id)"),
        ARB_OPT_STR("--dump-argmax", "FILE", &fo.dump_argmax, "write this run's own argmax (as stored) in the --score format"),
        ARB_OPT_STR("--ref", "FILE", &fo.ref_in, "read the reference from a --dump-ref file (its rows recomputed, checked)"),
        ARB_OPT_FLAG("--stored-only", &fo.stored_only, "only the file as stored, not each block type alone (faster)"),
        ARB_OPT_END};
    const arb_cmd_spec spec = {"bench fidelity", NULL,
                               "Teacher-forced greedy argmax agreement and logit error of the model as stored against\n"
                               "the same file dequantized to F32 at load (float weights and activations), for the\n"
                               "file as stored and, per quantized block type, with only that type quantized; 95%\n"
                               "bootstrap intervals over prompts (docs/kernels.md, Fidelity). --dump-ref and --score\n"
                               "put another engine (llama.cpp) on the same reference, paired with arbor's own argmax\n"
                               "(agreement difference with its interval); --dump-argmax lets another build or kernel\n"
                               "family be scored against this one. Formats in harness/fidelity.h.\n",
                               opts, 0, 0};
    const int prc = arb_opts_parse(&spec, argc, argv, NULL);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 0 : 2;
    arb_fidelity_result r;
    arb_err err = {0};
    if (arb_fidelity_run(&fo, &r, stderr, &err)) {
        fprintf(stderr, "arbor bench fidelity: %s\n", err.msg);
        return 1;
    }
    arb_fidelity_print(&r, stdout);
    return 0;
}

int arb_cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "fidelity"))
        return bench_fidelity(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "engine"))
        return bench_engine(argc - 1, argv + 1);
    if (arb_cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "arbor bench: unknown or missing benchmark%s%s (engine, fidelity)\n%s",
            argc >= 2 ? " " : "", argc >= 2 ? argv[1] : "", usage);
    return 2;
}
