/* sample.c — PROCESS (temperature / top-k / top-p) and the Philox counter RNG.
 *
 * Why Philox: a counter-based generator needs no state beyond (key, counter), so the
 * random numbers of (run, prompt, step, stream) do not depend on how many were drawn
 * elsewhere — shards and re-runs agree, and every verifier sees the same draft trees
 * for the same seed (common random numbers, docs/spec/verification.md §0.4).
 */
#include "sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "process_simd.h"

arb_sampling arb_sampling_default(void)
{
    return (arb_sampling){.temperature = 1.0, .top_k = 0, .top_p = 1.0};
}

/* ---------------- Philox4x32-10 (Salmon et al., SC'11; Random123 constants) ---------------- */

void arb_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t m0 = (uint64_t)0xD2511F53u * c0;
        uint64_t m1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(m0 >> 32), lo0 = (uint32_t)m0;
        uint32_t hi1 = (uint32_t)(m1 >> 32), lo1 = (uint32_t)m1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

void arb_rng_init(arb_rng *r, uint64_t seed, uint32_t prompt, uint32_t step, uint32_t stream)
{
    r->key[0] = (uint32_t)seed;
    r->key[1] = (uint32_t)(seed >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = stream;
    r->ctr[2] = step;
    r->ctr[3] = prompt;
    r->n_buf = 0;
}

uint64_t arb_rng_u64(arb_rng *r)
{
    if (r->n_buf == 0) {
        arb_philox4x32(r->ctr, r->key, r->buf);
        r->ctr[0]++; /* 2^32 blocks = 2^33 words per (prompt, step, stream): never reached */
        r->n_buf = 2;
    }
    int i = 2 - r->n_buf--;
    return ((uint64_t)r->buf[2 * i] << 32) | r->buf[2 * i + 1];
}

double arb_rng_u(arb_rng *r)
{
    return (double)(arb_rng_u64(r) >> 11) * 0x1.0p-53;
}

bool arb_rng_bern(arb_rng *r, double a)
{
    return arb_rng_u(r) < a;
}

bool arb_rng_ratio(arb_rng *r, double num, double den)
{
    return arb_rng_u(r) * den < num;
}

int arb_sample_w(arb_rng *r, const double *w, int V)
{
    return arb_sample_w_isa(arb_proc_isa_best(), r, w, V);
}

int arb_sample_w_isa(int isa, arb_rng *r, const double *w, int V)
{
    if (!arb_proc_isa_ok(isa))
        return -2;
    /* two scans in index order (process_simd.h: exact zeros skipped, the same sums), the
       second resumed from the running sum's last mark at or below t */
    enum { MARKS = 256 };
    double mark[MARKS];
    const int C = V <= 1024 * MARKS ? 1024 : ((V + MARKS - 1) / MARKS + 7) / 8 * 8;
    const double S = arb_proc_seq_sum_marks(isa, w, V, C, mark);
    if (!(S > 0))
        return -1;
    const double t = arb_rng_u(r) * S;
    int k = (V - 1) / C;
    while (k > 0 && mark[k] > t)
        k--;
    const int y = arb_proc_seq_pick_from(isa, w, V, k * C, mark[k], t);
    if (y >= 0)
        return y;
    int last; /* rounding guard: t landed past the running sum; the last positive weight */
    const int x = arb_proc_seq_pick(isa, w, V, t, &last);
    return x >= 0 ? x : last;
}

/* ---------------- PROCESS ---------------- */

int arb_sample_argmax_f(const float *z, int V)
{
    int b = 0;
    for (int x = 1; x < V; x++)
        if (z[x] > z[b])
            b = x;
    return b;
}

int arb_sample_argmax_d(const double *x, int V)
{
    int b = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* Heap sort of an index list by (value desc, id asc): qsort cannot see the values
   without a global, and this order must be exact for the tie rules of §0.2. */
static bool before(const double *v, int32_t a, int32_t b)
{
    return v[a] > v[b] || (v[a] == v[b] && a < b);
}

static void sift(const double *v, int32_t *h, int n, int i)
{
    for (;;) { /* min-heap in the "before" order: the root is the element sorted LAST */
        int l = 2 * i + 1, m = i;
        if (l < n && before(v, h[m], h[l]))
            m = l;
        if (l + 1 < n && before(v, h[m], h[l + 1]))
            m = l + 1;
        if (m == i)
            return;
        int32_t t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

void arb_sample_order_desc(const double *v, int32_t *h, int n)
{
    for (int i = n / 2 - 1; i >= 0; i--)
        sift(v, h, n, i);
    for (int e = n - 1; e > 0; e--) {
        int32_t t = h[0]; h[0] = h[e]; h[e] = t;
        sift(v, h, e, 0);
    }
}

/* The heap the other way round: the root is the element sorted FIRST. */
static void sift_first(const double *v, int32_t *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < n && before(v, h[l], h[m]))
            m = l;
        if (l + 1 < n && before(v, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        int32_t t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

/* Top-p's nucleus from its candidates h[0..n): the first elements in the "before" order
   (value desc, id asc) until their running sum, in that order, reaches top_p or none is
   left. Only those are ordered (a heap, popped one at a time: O(n + k log n) for k kept
   where the full sort was O(n log n)); they end at h[n - k .. n) in reverse order (the
   first one last). Returns k. */
static int nucleus(const double *v, int32_t *h, int n, double top_p)
{
    for (int i = n / 2 - 1; i >= 0; i--)
        sift_first(v, h, n, i);
    double c = 0;
    int k = 0;
    for (int e = n; k < n && c < top_p; e--) {
        const int32_t x = h[0];
        h[0] = h[e - 1];
        h[e - 1] = x;
        sift_first(v, h, e - 1, 0);
        c += v[x];
        k++;
    }
    return k;
}

/* Partition h[0..n) so that its first k entries are the k first in the "before" order
   (value desc, id asc), in any order among themselves: quickselect with a median-of-three
   pivot. The order is total, so the set is the same whatever the pivots (the same set a
   full sort's first k would be). */
static void select_first(const double *v, int32_t *h, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        int32_t a = h[lo], b = h[mid], c = h[hi], p;
        if (before(v, a, b))
            p = before(v, b, c) ? b : before(v, a, c) ? c : a;
        else
            p = before(v, a, c) ? a : before(v, b, c) ? c : b;
        int i = lo, j = hi;
        while (i <= j) { /* Hoare partition around the pivot id p */
            while (before(v, h[i], p))
                i++;
            while (before(v, p, h[j]))
                j--;
            if (i <= j) {
                const int32_t t = h[i];
                h[i++] = h[j];
                h[j--] = t;
            }
        }
        if (k - 1 <= j)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            return;
    }
}

/* Sortable key of a double for a DESCENDING order: larger values get smaller keys. The usual
   map (flip all bits of negatives, the sign bit of the rest) gives ascending order; its
   complement descending. -0.0 is +0.0 first, so equal values (==) get equal keys. */
static uint64_t desc_key(double d)
{
    if (d == 0)
        d = 0.0;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    u = (u >> 63) ? ~u : (u | 0x8000000000000000ull);
    return ~u;
}

/* Stable LSD radix passes over (32-bit keys, ids) [0, n): 3 digits of 11, 11 and 10 bits. The
   data moves between the a and b buffers; on return *ka / *ia hold the result. hist (when not
   NULL): the digit counts, already taken (the caller's key loop did). */
enum { RADIX_BITS = 11, RADIX_R = 1 << RADIX_BITS, RADIX_PASSES = 3 };
static void radix32(uint32_t **ka, uint32_t **kb, int32_t **ia, int32_t **ib, int n, int32_t (*hist)[RADIX_R])
{
    int32_t own[RADIX_R];
    for (int pass = 0; pass < RADIX_PASSES; pass++) {
        const int sh = RADIX_BITS * pass;
        int32_t *count = hist ? hist[pass] : own;
        if (!hist) {
            memset(count, 0, sizeof own);
            for (int i = 0; i < n; i++)
                count[((*ka)[i] >> sh) & (RADIX_R - 1)]++;
        }
        if (count[((*ka)[0] >> sh) & (RADIX_R - 1)] == n)
            continue; /* one digit value everywhere: this pass would not move anything */
        int32_t sum = 0;
        for (int d = 0; d < RADIX_R; d++) {
            const int32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int i = 0; i < n; i++) {
            const int d = (int)(((*ka)[i] >> sh) & (RADIX_R - 1));
            (*kb)[count[d]] = (*ka)[i];
            (*ib)[count[d]++] = (*ia)[i];
        }
        uint32_t *tk = *ka; *ka = *kb; *kb = tk;
        int32_t *ti = *ia; *ia = *ib; *ib = ti;
    }
}

void arb_sample_order_desc_all(const double *v, int n, int32_t *out, uint64_t *key, int32_t *tmp)
{
    /* Stable in two levels, from ids in ascending order (so ties keep it): a radix sort on the
       high 32 bits of the keys (3 passes of 11, 11, 10 bits), which tell almost all of a law's
       values apart, then each run that agrees on them ordered by the low 32 bits, recomputed
       from v (insertion sort when short, the same 3 passes when longer than 32). The same
       permutation as the 6-pass sort of every bit it replaced: 406-408 -> 271-307 us on 49 152
       continuous values, about the same (434 -> 410-420) where many values share their top
       bits; the first level's histograms taken in its key loop, 276 -> 251-256 us; 32-bit
       keys (8 bytes moved per element and pass, the 33-bit first level of 64-bit keys moved
       12), 245-254 -> 229-243 us. Not kept: 8-bit digits (289 us), the scatter in two streams
       (each half of the input with its own offsets, 261-275 us). */
    uint32_t *ka = (uint32_t *)key, *kb = ka + n; /* 2n 32-bit keys in the caller's 2n 64-bit */
    int32_t *ia = out, *ib = tmp;
    int32_t hist[RADIX_PASSES][RADIX_R];
    memset(hist, 0, sizeof hist);
    for (int i = 0; i < n; i++) {
        const uint32_t k = (uint32_t)(desc_key(v[i]) >> 32);
        ka[i] = k;
        ia[i] = i;
        hist[0][k & (RADIX_R - 1)]++;
        hist[1][(k >> RADIX_BITS) & (RADIX_R - 1)]++;
        hist[2][(k >> (2 * RADIX_BITS)) & (RADIX_R - 1)]++;
    }
    radix32(&ka, &kb, &ia, &ib, n, hist);
    for (int s = 0; s < n;) {
        int e = s + 1;
        while (e < n && ka[e] == ka[s])
            e++;
        if (e - s > 32) { /* the run's own slots of both buffers hold its low halves */
            uint32_t *ra = ka + s, *rb = kb + s;
            int32_t *qa = ia + s, *qb = ib + s;
            for (int i = 0; i < e - s; i++)
                ra[i] = (uint32_t)desc_key(v[qa[i]]);
            radix32(&ra, &rb, &qa, &qb, e - s, NULL);
            if (qa != ia + s)
                memcpy(ia + s, qa, sizeof(int32_t) * (size_t)(e - s));
        } else if (e - s > 1) {
            uint64_t lo[32];
            for (int i = 0; i < e - s; i++)
                lo[i] = desc_key(v[ia[s + i]]);
            for (int i = 1; i < e - s; i++) { /* stable: equal keys keep their order */
                const uint64_t k = lo[i];
                const int32_t id = ia[s + i];
                int j = i - 1;
                for (; j >= 0 && lo[j] > k; j--) {
                    lo[j + 1] = lo[j];
                    ia[s + j + 1] = ia[s + j];
                }
                lo[j + 1] = k;
                ia[s + j + 1] = id;
            }
        }
        s = e;
    }
    if (ia != out)
        memcpy(out, ia, sizeof(int32_t) * (size_t)n);
}

int arb_sample_process(const float *z, int V, const arb_sampling *s, double *pi, int32_t *idx)
{
    return arb_sample_process_isa(arb_proc_isa_best(), z, V, s, pi, idx);
}

int arb_sample_process_isa(int isa, const float *z, int V, const arb_sampling *s, double *pi, int32_t *idx)
{
    if (!arb_proc_isa_ok(isa))
        return -1;
    if (s->temperature <= 0) {
        memset(pi, 0, sizeof(double) * (size_t)V);
        pi[arb_sample_argmax_f(z, V)] = 1.0;
        return 1;
    }
    const double invT = 1.0 / s->temperature;
    /* exp(pi - m) of the whole row (vexp.h: within an ulp of libm, the same bits on every
       CPU; -inf, top-k's cut, gives 0), summed in 8 interleaved partial sums combined in a
       fixed tree (eight independent chains instead of one V-long one), then the division:
       process_simd.h, the same bits at every vector width. Without top-k the maximum comes
       from the floats and the products, exps and sum from one pass (the same bits as the
       three passes, fewer doubles written and read). */
    double S;
    if (s->top_k > 0 && s->top_k < V && idx) {
        const double m = arb_proc_scale_max(isa, z, V, invT, pi);
        for (int x = 0; x < V; x++)
            idx[x] = x;
        select_first(pi, idx, V, s->top_k); /* the top_k in (value desc, id asc) order, O(V) */
        for (int i = s->top_k; i < V; i++)
            pi[idx[i]] = -INFINITY;
        S = arb_proc_exp_sum(isa, pi, V, m);
    } else
        S = arb_proc_scale_exp_sum(isa, z, V, invT, arb_proc_fmax(isa, z, V) * invT, pi);
    if (!(s->top_p < 1 && idx))
        return arb_proc_div_count(isa, pi, V, S);
    /* Top-p on e = exp(pi - m), the largest being 1: only tokens above some threshold t can be
       kept; the candidates are those with e >= t for the largest t of 2^-4, 2^-8, 2^-12, 2^-16
       (one pass sums all four) whose mass reaches top_p with a margin, then lower t
       sixteenfold until it does. Whichever t is taken, the candidates are a prefix of the
       order holding the nucleus, so the law is the same; only the candidates are divided by
       S (pi = e / S, the bits of the unfused division) and ordered. */
    static const double th[4] = {0x1p-4, 0x1p-8, 0x1p-12, 0x1p-16};
    const double need = (s->top_p + 1e-9) * S;
    double mass[4];
    arb_proc_mass_above(isa, pi, V, th, mass);
    double t = -1;
    for (int j = 0; j < 4 && t < 0; j++)
        t = mass[j] >= need ? th[j] : -1;
    int nc = 0;
    if (t > 0)
        nc = arb_proc_collect(isa, pi, V, t, idx);
    else
        for (t = th[3] * 0.0625;; t *= 0.0625) {
            nc = arb_proc_collect(isa, pi, V, t, idx);
            double mc = 0; /* over the candidates in id order, whatever the path */
            for (int i = 0; i < nc; i++)
                mc += pi[idx[i]];
            if (mc >= need || t < 1e-300)
                break;
        }
    for (int i = 0; i < nc; i++)
        pi[idx[i]] /= S;
    const int keep = nucleus(pi, idx, nc, s->top_p);
    const int32_t *kept = idx + nc - keep; /* in reverse order */
    double S2 = 0; /* in the nucleus's order, first one first */
    for (int i = keep - 1; i >= 0; i--)
        S2 += pi[kept[i]];
    /* mark kept tokens by negating their probability, then zero the rest */
    for (int i = 0; i < keep; i++)
        pi[kept[i]] = -pi[kept[i]];
    arb_proc_keep(isa, pi, V, S2);
    int n = 0;
    for (int i = 0; i < keep; i++)
        n += pi[kept[i]] > 0;
    return n;
}
