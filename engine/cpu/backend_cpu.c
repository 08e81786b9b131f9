/* backend_cpu.c — the exact CPU backend: the op orchestration (threading, key lists,
 * fused phases) over two kernel tables, the quantized matmul (matmul.c, one file per
 * ISA behind mm_impl) and the vector kernels (vec_*.c, one file per ISA behind
 * vec_impl: attention inner loops, softmax exp, RMSNorm's sum of squares, SwiGLU).
 *
 * Batch invariance is the design constraint. Each output element is produced by
 * a reduction whose order depends only on vector lengths:
 *   - dot products use 8 fixed accumulator lanes over the vector, combined by a
 *     fixed tree, then a sequential tail — the same code for every n;
 *   - rmsnorm sums squares in double in 8 fixed lanes (vec_int.h);
 *   - attention walks node i's key list (prefix rows, ancestors, itself) in
 *     position order: scores, max, exp, sum and the weighted V sum are each
 *     sequential over that list. The loops run over blocks of keys outside and a
 *     block of up to 8 nodes inside, so the keys the nodes share (the prefix and
 *     their common ancestors) are read once per block, but each node's own
 *     sequence of operations is exactly the one it performs alone. Work is split
 *     across threads by whole (node block, head group) tasks, so neither the thread
 *     count nor the tree around a node changes a result.
 * Every vector-kernel family performs the same float operations in the same order
 * lane for lane (multiplies and adds never fused), so the ISA never changes a result
 * either; arb_load_opts.attn_scalar forces the scalar family (tests/test_vec.c and the
 * model tests compare them).
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "../quant.h"
#include "matmul.h"
#include "threadpool.h"
#include "vec_int.h"

_Static_assert(ARB_ATTN_SCRATCH_ROWS >= ARB_ATTN_NODE_BLOCK * (ARB_VEC_HEADS + 1) + 1,
               "a scratch slot holds a node block's scores and key lists");

/* Below this many elements an elementwise op runs on the caller: a pool round trip
   costs more than the work. Results never depend on the split. */
#define EW_PAR_MIN 8192

typedef struct cpu_ctx {
    arb_threadpool *tp;   /* owned */
    const vec_impl *vec;  /* attention, norm and SwiGLU kernels (vec_int.h): same bits in every family */
} cpu_ctx;

static void cpu_free(void *vctx)
{
    cpu_ctx *c = vctx;
    if (!c)
        return;
    arb_threadpool_free(c->tp);
    free(c);
}

static int cpu_n_threads(void *vctx) { return arb_threadpool_size(((cpu_ctx *)vctx)->tp); }

static size_t cpu_matmul_work_bytes(void *vctx, const arb_qmat *w, int n_tok)
{
    return arb_matmul_work_bytes(w->type, w->n_in, n_tok);
}

static void cpu_matmul(void *vctx, const arb_qmat *w, const float *x, int n_tok, float *y, void *work)
{
    arb_matmul(((cpu_ctx *)vctx)->tp, w, x, n_tok, y, work);
}

static void cpu_matmul_multi(void *vctx, const arb_qmat *const *ws, int nw, const float *x, int n_tok,
                             float *const *ys, void *work)
{
    arb_matmul_multi(((cpu_ctx *)vctx)->tp, ws, nw, x, n_tok, ys, work);
}

static void cpu_get_rows(void *vctx, const arb_qmat *w, const int32_t *ids, int n, float *out)
{
    for (int i = 0; i < n; i++)
        arb_dequant_row(w->type, (const uint8_t *)w->data + (size_t)ids[i] * w->row_bytes,
                        out + (size_t)i * w->n_in, (size_t)w->n_in);
}

typedef struct norm_job {
    const float *x, *g;
    int n, dim;
    float eps;
    float *out;
    const vec_impl *vec;
} norm_job;

/* Rows t = ith, ith + nth, ...: a row is always normalized whole by one thread. */
static void rmsnorm_row(const norm_job *j, int t)
{
    const float *xr = j->x + (size_t)t * j->dim;
    float *o = j->out + (size_t)t * j->dim;
    const double sum = j->vec->sumsq(xr, j->dim);
    const float scale = 1.0f / sqrtf((float)(sum / j->dim) + j->eps);
    for (int k = 0; k < j->dim; k++)
        o[k] = (xr[k] * scale) * j->g[k];
}

static void rmsnorm_task(void *ud, int ith, int nth)
{
    for (int t = ith; t < ((const norm_job *)ud)->n; t += nth)
        rmsnorm_row(ud, t);
}

/* rows t0..t1-1, as the producer of a matmul's input (arb_mm_pre) */
static void rmsnorm_pre(void *ud, int t0, int t1)
{
    for (int t = t0; t < t1; t++)
        rmsnorm_row(ud, t);
}

static void cpu_rmsnorm(void *vctx, const float *x, const float *g, int n, int dim, float eps, float *out)
{
    const cpu_ctx *c = vctx;
    norm_job j = {.x = x, .g = g, .n = n, .dim = dim, .eps = eps, .out = out, .vec = c->vec};
    if ((size_t)n * (size_t)dim < EW_PAR_MIN)
        rmsnorm_task(&j, 0, 1);
    else
        arb_threadpool_run(c->tp, rmsnorm_task, &j);
}

/* RMSNorm computed inside the matmul's pool run (one round trip less, matmul.h). */
static void cpu_norm_matmul_multi(void *vctx, const float *x, const float *g, int dim, float eps, float *xb,
                                  const arb_qmat *const *ws, int nw, int n, float *const *ys, void *work)
{
    const cpu_ctx *c = vctx;
    norm_job j = {.x = x, .g = g, .n = n, .dim = dim, .eps = eps, .out = xb, .vec = c->vec};
    const arb_mm_pre pre = {rmsnorm_pre, &j};
    arb_matmul_multi_pre(c->tp, ws, nw, xb, n, ys, work, &pre);
}

/* Rotate tokens t0..t1-1 of x (rows of n_head heads). */
static void rope_rows(float *x, int t0, int t1, int n_head, int head_dim, const int32_t *pos, const float *cs,
                      int neox)
{
    const int half = head_dim / 2;
    for (int t = t0; t < t1; t++) {
        const float *c = cs + (size_t)pos[t] * head_dim; /* half (cos, sin) pairs */
        for (int h = 0; h < n_head; h++) {
            float *v = x + ((size_t)t * n_head + h) * head_dim;
            for (int j = 0; j < half; j++) {
                const float co = c[2 * j], si = c[2 * j + 1];
                const int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * co - x1 * si;
                v[b] = x0 * si + x1 * co;
            }
        }
    }
}

static void cpu_rope(void *vctx, float *x, int n, int n_head, int head_dim, const int32_t *pos, const float *cs,
                     int neox)
{
    (void)vctx;
    rope_rows(x, 0, n, n_head, head_dim, pos, cs, neox);
}

/* Shared keys are scored and summed in blocks of this many: 64 keys of one KV head are
   16 KB of K (or of V) at head_dim 64, which stay in L1 while every node of a node
   block uses them. Any block size gives the same bits. */
#define ATTN_KEY_BLOCK 64
_Static_assert(ATTN_KEY_BLOCK <= ARB_VEC_PREFETCH_MIN, "key blocks are prefetched here, not by the kernels");
/* Node blocks of 2..ATTN_FEW_NODES nodes are memory-bound: per key they do too little
   arithmetic to hide the stream behind it, and the next-block prefetch bursts of the
   64-key blocks (256 lines of one head at once) stall the core. They use blocks of
   ATTN_FEW_KEY_BLOCK keys (64 KB of one head, from L2 for the second node on) and the
   kernels' own in-stream prefetch instead. Zen 4, 700 cached keys, one thread, attention
   alone: 2 nodes 4.27 -> 3.38 ms, 4 nodes 5.68 -> 4.85 ms; 8 and 16 nodes were 3-4 %
   slower that way, so they keep the L1 blocks (docs/engine.md, "The KV cache, head-major"). */
#define ATTN_FEW_NODES 4
#define ATTN_FEW_KEY_BLOCK 256
_Static_assert(ATTN_FEW_KEY_BLOCK > ARB_VEC_PREFETCH_MIN, "the kernels prefetch within these blocks");

typedef struct attn_split {
    int per;    /* query heads per task: the group of one KV head, or 1 */
    int n_hc;   /* head chunks, n_head / per */
    int n_blk;  /* node blocks, of at most ARB_ATTN_NODE_BLOCK nodes */
    int n_task; /* n_blk x n_hc */
} attn_split;

typedef struct attn_job {
    const arb_attn_args *a;
    arb_tp_phase *rope; /* NULL, or the queries' and new keys' RoPE, done first */
    attn_split split;
    const vec_impl *vec;
} attn_job;

/* Tasks are (node block, head chunk) pairs. A head chunk is the query heads of one KV
   head, or a single head when there are too few tasks to keep the threads busy (decode
   on many threads). Node blocks hold up to ARB_ATTN_NODE_BLOCK nodes; on
   several threads there are enough of them for 2 tasks per thread where that leaves
   no block of one node, else for 1 (pairs, attn_pair). Piece c of
   nc takes a contiguous range of tasks with scratch slot c. Results depend on neither
   the split nor the pieces. */
static attn_split attn_split_of(const arb_attn_args *a, int nth)
{
    const int group = a->n_head / a->n_head_kv;
    /* A task of a whole group costs about 0.45 of `group` single-head tasks (each key row
       is loaded once for the group, and the K and V streams are read once instead of
       `group` times; SmolLM2, 512 cached keys, one thread, K/V in cache: 2.6 against 6.2 ns
       per (head, key); docs/kernels.md), so
       the group wins unless splitting it is what keeps the threads busy: compare the
       rounds of tasks per thread, a group task counted as group / 2 single ones. */
    const int rounds_group = (a->n * a->n_head_kv + nth - 1) / nth;
    const int rounds_single = (a->n * a->n_head + nth - 1) / nth;
    const int per = rounds_group * group <= 2 * rounds_single ? group : 1;
    const int n_hc = a->n_head / per;
    int n_blk = (a->n + ARB_ATTN_NODE_BLOCK - 1) / ARB_ATTN_NODE_BLOCK;
    if (nth > 1) {
        int want = (2 * nth + n_hc - 1) / n_hc;
        want = want < a->n ? want : a->n;
        n_blk = want > n_blk ? want : n_blk;
        /* but no block of one node where blocks of two still give every thread a task:
           a pair reads its keys once (attn_pair). Two threads, 2 nodes: one block of 3
           tasks instead of two of 6, -2 ... -7 % of the eval (docs/engine.md) */
        const int pairs = a->n / 2 > 1 ? a->n / 2 : 1;
        if (n_blk > pairs && pairs * n_hc >= nth)
            n_blk = pairs;
    }
    return (attn_split){per, n_hc, n_blk, n_blk * n_hc};
}

/* The key lists of a node block. Node i's list is the prefix rows, its ancestors root
   first, itself (backend.h). The nodes of a block share the prefix and whatever
   root-first path they have in common (all of it for the nodes of a chain); that shared
   part is streamed once for the block, and each node then goes on with its own rows. */
typedef struct attn_block {
    int i0, nb;                              /* nodes i0 .. i0 + nb - 1 */
    int n_shared;                            /* length of shared[] */
    const int32_t *shared;                   /* rows every node of the block has first */
    const int32_t *own[ARB_ATTN_NODE_BLOCK]; /* each node's rows after those */
    int n_own[ARB_ATTN_NODE_BLOCK];
} attn_block;

/* Builds block b's lists in ints (capacity (1 + ARB_ATTN_NODE_BLOCK) x (n_prefix + n)). */
static void attn_block_init(const arb_attn_args *a, const attn_split *s, int b, int32_t *ints, attn_block *blk)
{
    const int len = a->n_prefix + a->n;
    blk->i0 = arb_tp_part(a->n, b, s->n_blk);
    blk->nb = arb_tp_part(a->n, b + 1, s->n_blk) - blk->i0;
    int32_t *shared = ints;
    int depth[ARB_ATTN_NODE_BLOCK], common = 0;
    for (int x = 0; x < blk->nb; x++) {
        int32_t *path = ints + (size_t)(1 + x) * len; /* root first, ends with the node */
        int d = 0;
        for (int p = blk->i0 + x; p >= 0; p = a->parent[p])
            d++;
        depth[x] = d;
        for (int p = blk->i0 + x, j = d - 1; p >= 0; p = a->parent[p], j--)
            path[j] = a->n_prefix + p;
        if (x == 0)
            common = d;
        else {
            const int32_t *path0 = ints + len;
            int k = 0;
            while (k < common && k < d && path[k] == path0[k])
                k++;
            common = k;
        }
    }
    for (int j = 0; j < a->n_prefix; j++)
        shared[j] = j;
    memcpy(shared + a->n_prefix, ints + len, (size_t)common * sizeof *shared);
    blk->shared = shared;
    blk->n_shared = a->n_prefix + common;
    for (int x = 0; x < blk->nb; x++) {
        blk->own[x] = ints + (size_t)(1 + x) * len + common;
        blk->n_own[x] = depth[x] - common;
    }
}


/* Sliding-window attention (Gemma-3 local layers) as a range restriction: a node's key
   list holds the keys of positions 0..p in order (prefix rows, ancestors root first,
   itself), so its window, the keys at positions > p - window, is the list's last `window`
   entries. The first key index to attend from; the list itself is unchanged. Counting
   positions along the node's path keeps a tree node's window that of its chain. */
static int attn_window_first(int n_keys, int window)
{
    return window > 0 && n_keys > window ? n_keys - window : 0;
}

/* Slice x of nb of the rows list[r0 .. r1) is prefetched (head_dim floats of each row
   from base): while a node block works on one key block, each node's kernel call is
   preceded by a part of the next block's requests, so that block arrives spread over the
   current one instead of in one burst. The kernels prefetch within their own key list
   (vec_int.h), which does not reach past a block's end. */
static void prefetch_slice(const float *base, int stride, const int32_t *list, int r0, int r1, int x, int nb, int hd)
{
    const int n = r1 - r0, a = r0 + arb_tp_part(n, x, nb), b = r0 + arb_tp_part(n, x + 1, nb);
    for (int r = a; r < b; r++)
        arb_vec_prefetch_row(base + (size_t)list[r] * stride, hd);
}

/* Whether nodes x and x + 1 of a block of nb go through the shared keys together (one
   scores / wsum call of 2 nh query rows, vec_int.h): both attend from the same first key
   (k0, a window's start). Each key row is then loaded once for the pair, so a block of
   2-4 nodes streams its keys from memory once and from cache half as often as node by
   node. Intel Xeon (260 MB L3), one thread, interleaved evals, median: 2 nodes -2.7 % /
   -5.0 % of the eval at 180 / 700 cached keys, 4 nodes -3.5 % / -6.7 %; two threads
   (blocks of 2-4 nodes from 4 nodes on) 4 nodes -3.0 % / -8.2 %, 8 nodes -3.1 % / -9.3 %;
   one thread's 8-node L1 blocks, already in cache, +-0.4 % (docs/engine.md). */
static int attn_pair(const int *k0, int x, int nb) { return x + 1 < nb && k0[x] == k0[x + 1]; }

/* The rows of nodes x .. x + m - 1 (m = 1 or 2), nh each, `off` floats in, into dst (the
   query rows of a scores call: pair_q; score or output rows: pair_rows). */
static void pair_q(const float *(*q)[ARB_VEC_HEADS], int x, int m, int nh, const float **dst)
{
    for (int i = 0; i < m; i++)
        for (int y = 0; y < nh; y++)
            dst[i * nh + y] = q[x + i][y];
}
static void pair_rows(float *(*r)[ARB_VEC_HEADS], int x, int m, int nh, size_t off, float **dst)
{
    for (int i = 0; i < m; i++)
        for (int y = 0; y < nh; y++)
            dst[i * nh + y] = r[x + i][y] + off;
}

/* Heads h..h+nh-1 (one KV head) of every node of blk. Per (node, head) the operations
   are those of the node alone, in the same order: its scores over its list (each score
   a function of its query and key only), max, exp and sum over the whole list, then the
   weighted V sum over the list in order, continued across the key blocks (vec_int.h,
   wsum acc). Only the loop nest changed: key blocks outside, nodes inside (two at a
   time through the shared keys, attn_pair), so that each block of cached K and V rows
   is read from memory once for the whole block. */
static void attn_heads(const attn_job *job, const attn_block *blk, int h, int nh, float *scratch)
{
    const arb_attn_args *a = job->a;
    const vec_impl *vec = job->vec;
    const int hd = a->head_dim, len = a->n_prefix + a->n, kvh = h / (a->n_head / a->n_head_kv);
    const float *kbase = a->k + (size_t)kvh * a->kv_head_stride, *vbase = a->v + (size_t)kvh * a->kv_head_stride;
    const int S = blk->n_shared;
    /* one node alone gains nothing from blocks: one pass, as the streaming prefetchers like
       it; a few nodes take large blocks that the kernels prefetch, more nodes L1 blocks that
       this function prefetches a block ahead (pf) */
    const int few = blk->nb <= ATTN_FEW_NODES, pf = !few;
    const int kb = blk->nb == 1 ? S : few ? ATTN_FEW_KEY_BLOCK : ATTN_KEY_BLOCK;
    const float *q[ARB_ATTN_NODE_BLOCK][ARB_VEC_HEADS];
    float *sc[ARB_ATTN_NODE_BLOCK][ARB_VEC_HEADS], *out[ARB_ATTN_NODE_BLOCK][ARB_VEC_HEADS];
    float inv[ARB_ATTN_NODE_BLOCK][ARB_VEC_HEADS];
    for (int x = 0; x < blk->nb; x++)
        for (int y = 0; y < nh; y++) {
            const size_t qo = ((size_t)(blk->i0 + x) * a->n_head + (size_t)(h + y)) * hd;
            q[x][y] = a->q + qo;
            out[x][y] = a->out + qo;
            sc[x][y] = scratch + (size_t)(x * ARB_VEC_HEADS + y) * len;
        }
    /* node x attends to list entries k0[x] .. n_keys - 1 (all of them without a window);
       every piece below is clipped to that range, and a node's first piece starts its V sum */
    int k0[ARB_ATTN_NODE_BLOCK];
    for (int x = 0; x < blk->nb; x++)
        k0[x] = attn_window_first(S + blk->n_own[x], a->window);
    const float *rq[ARB_VEC_QROWS];
    float *rs[ARB_VEC_QROWS], *ro[ARB_VEC_QROWS];
    for (int j0 = 0; j0 < S; j0 += kb) {
        const int j1 = S - j0 < kb ? S : j0 + kb;
        for (int x = 0, m; x < blk->nb; x += m) {
            m = attn_pair(k0, x, blk->nb) ? 2 : 1;
            /* the next K block (after the last one, V's first), a slice per node */
            for (int i = 0; i < m; i++)
                if (pf && j1 < S)
                    prefetch_slice(kbase, a->kv_stride, blk->shared, j1, S - j1 < kb ? S : j1 + kb, x + i, blk->nb, hd);
                else if (pf && kb < S)
                    prefetch_slice(vbase, a->kv_stride, blk->shared, 0, kb, x + i, blk->nb, hd);
            const int lo = j0 > k0[x] ? j0 : k0[x];
            if (lo >= j1)
                continue;
            pair_q(q, x, m, nh, rq);
            pair_rows(sc, x, m, nh, (size_t)lo, rs);
            vec->scores(rq, m * nh, kbase, a->kv_stride, blk->shared + lo, j1 - lo, hd, a->scale, rs);
        }
    }
    for (int x = 0; x < blk->nb; x++) {
        const int n_keys = S + blk->n_own[x], lo = S > k0[x] ? S : k0[x];
        if (lo < n_keys) {
            pair_rows(sc, x, 1, nh, (size_t)lo, rs);
            vec->scores(q[x], nh, kbase, a->kv_stride, blk->own[x] + (lo - S), n_keys - lo, hd, a->scale, rs);
        }
        for (int y = 0; y < nh; y++) {
            float *w = sc[x][y] + k0[x];
            vec->exp(w, n_keys - k0[x], vec->max(w, n_keys - k0[x]));
            inv[x][y] = 1.0f / vec->sum(w, n_keys - k0[x]);
        }
    }
    for (int j0 = 0; j0 < S; j0 += kb) {
        const int j1 = S - j0 < kb ? S : j0 + kb;
        for (int x = 0, m; x < blk->nb; x += m) {
            m = attn_pair(k0, x, blk->nb) ? 2 : 1;
            for (int i = 0; i < m && pf && j1 < S; i++)
                prefetch_slice(vbase, a->kv_stride, blk->shared, j1, S - j1 < kb ? S : j1 + kb, x + i, blk->nb, hd);
            const int lo = j0 > k0[x] ? j0 : k0[x];
            if (lo >= j1)
                continue;
            pair_rows(sc, x, m, nh, (size_t)lo, rs);
            pair_rows(out, x, m, nh, 0, ro);
            vec->wsum(vbase, a->kv_stride, blk->shared + lo, (const float *const *)rs, m * nh, j1 - lo, hd, ro,
                      lo > k0[x]);
        }
    }
    for (int x = 0; x < blk->nb; x++) {
        const int n_keys = S + blk->n_own[x], lo = S > k0[x] ? S : k0[x];
        if (lo < n_keys) {
            pair_rows(sc, x, 1, nh, (size_t)lo, rs);
            vec->wsum(vbase, a->kv_stride, blk->own[x] + (lo - S), (const float *const *)rs, nh, n_keys - lo, hd,
                      out[x], lo > k0[x]);
        }
        for (int y = 0; y < nh; y++)
            for (int d = 0; d < hd; d++)
                out[x][y][d] *= inv[x][y];
    }
}

static void attn_task(void *ud, int c, int nc)
{
    const attn_job *job = ud;
    const arb_attn_args *a = job->a;
    const attn_split *s = &job->split;
    const int len = a->n_prefix + a->n;
    float *scratch = a->scratch + (size_t)c * a->scratch_stride;
    int32_t *ints = (int32_t *)(scratch + (size_t)ARB_ATTN_NODE_BLOCK * ARB_VEC_HEADS * len);
    const int t0 = arb_tp_part(s->n_task, c, nc), t1 = arb_tp_part(s->n_task, c + 1, nc);
    attn_block blk = {0};
    int last_b = -1;
    arb_tp_phase_run(job->rope);
    for (int t = t0; t < t1; t++) {
        const int b = t / s->n_hc, h0 = (t % s->n_hc) * s->per;
        if (b != last_b) {
            attn_block_init(a, s, b, ints, &blk);
            last_b = b;
        }
        for (int g0 = 0; g0 < s->per; g0 += ARB_VEC_HEADS)
            attn_heads(job, &blk, h0 + g0, s->per - g0 < ARB_VEC_HEADS ? s->per - g0 : ARB_VEC_HEADS, scratch);
    }
}

/* The attention run, with an optional first phase (RoPE). */
static void attn_run(const cpu_ctx *c, const arb_attn_args *a, arb_tp_phase *rope)
{
    attn_job job = {.a = a, .rope = rope, .vec = c->vec};
    const int nth = arb_threadpool_size(c->tp);
    job.split = attn_split_of(a, nth);
    const int pieces = ARB_ATTN_SLOTS_PER_THREAD * nth;
    arb_threadpool_run_chunks(c->tp, attn_task, &job, job.split.n_task < pieces ? job.split.n_task : pieces);
}

/* RoPE and the store of the new K/V rows as the first phase of the attention run
   (threadpool.h): slice s rotates its tokens' queries and new keys (when r is set) and
   copies their keys and values into the cache, then every piece waits for all of them;
   one pool round trip and a serial pass less per layer. Same operations, so the same bits. */
typedef struct rope_job {
    const arb_rope_args *r; /* NULL: store only */
    const arb_attn_args *a;
} rope_job;

static void rope_slice(void *ud, int s, int n)
{
    const rope_job *j = ud;
    const int t0 = arb_tp_part(j->a->n, s, n), t1 = arb_tp_part(j->a->n, s + 1, n);
    if (j->r) {
        rope_rows(j->r->q, t0, t1, j->a->n_head, j->a->head_dim, j->r->pos, j->r->cs, j->r->neox);
        rope_rows(j->r->k, t0, t1, j->a->n_head_kv, j->a->head_dim, j->r->pos, j->r->cs, j->r->neox);
    }
    arb_attn_store_new(j->a, t0, t1);
}

static void cpu_rope_attention(void *vctx, const arb_rope_args *r, const arb_attn_args *a)
{
    const cpu_ctx *c = vctx;
    const int nth = arb_threadpool_size(c->tp);
    rope_job rj = {r, a};
    arb_tp_phase ph;
    arb_tp_phase_init(&ph, rope_slice, &rj, a->n < 2 * nth ? a->n : 2 * nth);
    attn_run(c, a, &ph);
}

static void cpu_attention(void *vctx, const arb_attn_args *a) { cpu_rope_attention(vctx, NULL, a); }

typedef struct ew_job {
    const cpu_ctx *c;
    float *g;
    const float *u;
    size_t n, dim; /* elements; per row (the fused form) */
} ew_job;

static void swiglu_range(const ew_job *j, size_t i0, size_t i1) { j->c->vec->swiglu(j->g, j->u, i0, i1); }

static void geglu_task(void *ud, int ith, int nth)
{
    const ew_job *j = ud;
    j->c->vec->geglu(j->g, j->u, j->n * (size_t)ith / (size_t)nth, j->n * (size_t)(ith + 1) / (size_t)nth);
}

/* GeGLU (Gemma): elementwise, so any split gives the same bits. */
static void cpu_geglu(void *vctx, float *g, const float *u, int n, int dim)
{
    const cpu_ctx *c = vctx;
    ew_job j = {.c = c, .g = g, .u = u, .n = (size_t)n * (size_t)dim};
    if (j.n < EW_PAR_MIN)
        geglu_task(&j, 0, 1);
    else
        arb_threadpool_run(c->tp, geglu_task, &j);
}

/* rows t0..t1-1, as the producer of a matmul's input (arb_mm_pre) */
static void swiglu_pre(void *ud, int t0, int t1)
{
    const ew_job *j = ud;
    swiglu_range(j, (size_t)t0 * j->dim, (size_t)t1 * j->dim);
}

static void swiglu_task(void *ud, int ith, int nth)
{
    const ew_job *j = ud;
    swiglu_range(j, j->n * (size_t)ith / (size_t)nth, j->n * (size_t)(ith + 1) / (size_t)nth);
}

static void cpu_swiglu(void *vctx, float *g, const float *u, int n, int dim)
{
    const cpu_ctx *c = vctx;
    ew_job j = {.c = c, .g = g, .u = u, .n = (size_t)n * (size_t)dim};
    if (j.n < EW_PAR_MIN)
        swiglu_task(&j, 0, 1);
    else
        arb_threadpool_run(c->tp, swiglu_task, &j);
}

/* SwiGLU computed inside the down projection's pool run, and the residual added by
   the thread that computed each output (matmul.h). */
static void cpu_swiglu_matmul_add(void *vctx, float *g, const float *u, int dim, const arb_qmat *w, int n, float *y,
                                  void *work, float *residual)
{
    const cpu_ctx *c = vctx;
    const ew_job j = {.c = c, .g = g, .u = u, .n = (size_t)n * (size_t)dim, .dim = (size_t)dim};
    const arb_mm_pre pre = {swiglu_pre, (void *)&j};
    arb_matmul_ex(c->tp, w, g, n, y, work, &pre, residual);
}

static void cpu_matmul_add(void *vctx, const arb_qmat *w, const float *x, int n, float *y, void *work,
                           float *residual)
{
    arb_matmul_ex(((cpu_ctx *)vctx)->tp, w, x, n, y, work, NULL, residual);
}

static void cpu_add_bias(void *vctx, float *x, const float *b, int n, int dim)
{
    for (int t = 0; t < n; t++)
        for (int j = 0; j < dim; j++)
            x[(size_t)t * dim + j] += b[j];
}

static void cpu_add(void *vctx, float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

static void cpu_parallel_for(void *vctx, int n, void (*fn)(void *ud, int i, int n), void *ud)
{
    arb_threadpool_run_chunks(((cpu_ctx *)vctx)->tp, fn, ud, n);
}

static const arb_backend_i cpu_iface = {
    .name = "cpu",
    .free = cpu_free,
    .matmul_work_bytes = cpu_matmul_work_bytes,
    .matmul = cpu_matmul,
    .matmul_multi = cpu_matmul_multi,
    .get_rows = cpu_get_rows,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .attention = cpu_attention,
    .rope_attention = cpu_rope_attention,
    .swiglu = cpu_swiglu,
    .geglu = cpu_geglu,
    .norm_matmul_multi = cpu_norm_matmul_multi,
    .swiglu_matmul_add = cpu_swiglu_matmul_add,
    .matmul_add = cpu_matmul_add,
    .add_bias = cpu_add_bias,
    .add = cpu_add,
    .n_threads = cpu_n_threads,
    .parallel_for = cpu_parallel_for,
};

int arb_backend_cpu_init(int n_threads, const char *vec_family, arb_backend *be, arb_err *err)
{
    memset(be, 0, sizeof *be);
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ARB_ERR(err, ARB_E_NOMEM, "backend cpu: out of memory");
    int rc = arb_threadpool_new(n_threads < 1 ? 1 : n_threads, &c->tp, err);
    if (rc != ARB_OK) {
        free(c);
        return rc;
    }
    c->vec = arb_vec_select(vec_family);
    be->iface = &cpu_iface;
    be->ctx = c;
    return ARB_OK;
}
