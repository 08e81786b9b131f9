/* process_simd_body.h — PROCESS's and SAMPLE's vector passes written once for both widths.
 * Included by process_simd.c twice, under `#pragma GCC target`, after it defines:
 *     PS_T          the double vector type (__m256d, __m512d)
 *     PS_W          its lanes (4, 8)
 *     PS_PFX        the intrinsics prefix (_mm256_, _mm512_)
 *     PS_SFX        the suffix of what is defined here (_avx2, _avx512)
 *     PS_LOADF(p)   PS_W floats at p, widened to doubles
 *     PS_MASK(a, b, op)  the lanes where the comparison holds, as an unsigned bit mask
 *     PS_NEG_OR_ZERO(v, q)  q in the lanes where v < 0, +0 elsewhere
 *     PS_KEEP_GE(v, t)  v in the lanes where v >= t, +0 elsewhere
 *     PS_KEEP_GT0(v)  v in the lanes where v > 0, +0 elsewhere
 *     PS_ADD_LANES(s, v)  s + v[0] + v[1] + ... in lane order, in the low lane of an __m128d
 *     PS_VEXP(v), PS_VEXP_OK(v)  vexp_int.h's exp and its range test for this width
 * Every function works on whole vectors (whole 8-blocks where the scalar path's grouping is
 * by 8) from element 0 and returns where it stopped; process_simd.c finishes with the scalar
 * reference, whose operations each lane repeats (process_simd.h). No include guard; the
 * parameters are undefined at the end.
 */
#define PS_CAT2(a, b) a##b
#define PS_CAT(a, b) PS_CAT2(a, b)
#define PF(op) PS_CAT(PS_PFX, op)        /* PF(add_pd) -> _mm256_add_pd */
#define PS_NAME(n) PS_CAT(n, PS_SFX)     /* PS_NAME(div) -> div_avx2 */

/* pi = z * invT, *m = the lanes' largest (max_pd keeps its second operand, the accumulator,
   on ties and NaN, as `a > m ? a : m` does) */
static int PS_NAME(scale_max)(const float *z, int V, double invT, double *pi, double *m)
{
    const PS_T it = PF(set1_pd)(invT);
    PS_T mv = PF(set1_pd)(-INFINITY);
    int x = 0;
    for (; x + PS_W <= V; x += PS_W) {
        const PS_T v = PF(mul_pd)(PS_LOADF(z + x), it);
        PF(storeu_pd)(pi + x, v);
        mv = PF(max_pd)(v, mv);
    }
    double l[PS_W];
    PF(storeu_pd)(l, mv);
    for (int k = 0; k < PS_W; k++) /* the lanes' maxima are values of the row: any order gives the max */
        *m = l[k] > *m ? l[k] : *m;
    return x;
}

/* exp of each lane: vexp's vector path, or its scalar one for NaN, subnormal results, 0 or inf */
static inline PS_T PS_NAME(exp_lanes)(PS_T a)
{
    if (PS_VEXP_OK(a))
        return PS_VEXP(a);
    double t[PS_W];
    PF(storeu_pd)(t, a);
    for (int k = 0; k < PS_W; k++)
        t[k] = arb_vexp1(t[k]);
    return PF(loadu_pd)(t);
}

/* pi = exp(x - m) in 8-blocks, x being pi itself (exp_sum) or z * invT (scale_exp_sum, z not
   NULL), part[k] = the sum of the elements x = k (mod 8) in order: 8 / PS_W registers of partial
   sums, lane j of register h holding part[h PS_W + j]. Inlined into both with z constant. */
static inline __attribute__((always_inline)) int PS_NAME(exp_sum_of)(const float *z, double invT, double *pi,
                                                                     int V, double m, double part[8])
{
    enum { H = 8 / PS_W };
    const PS_T mv = PF(set1_pd)(m), it = PF(set1_pd)(invT);
    PS_T s[H];
    for (int h = 0; h < H; h++)
        s[h] = PF(setzero_pd)();
    int x = 0;
    for (; x + 8 <= V; x += 8)
        for (int h = 0; h < H; h++) {
            const int o = x + h * PS_W;
            const PS_T in = z ? PF(mul_pd)(PS_LOADF(z + o), it) : PF(loadu_pd)(pi + o);
            const PS_T e = PS_NAME(exp_lanes)(PF(sub_pd)(in, mv));
            PF(storeu_pd)(pi + o, e);
            s[h] = PF(add_pd)(s[h], e);
        }
    for (int h = 0; h < H; h++)
        PF(storeu_pd)(part + h * PS_W, s[h]);
    return x;
}

static int PS_NAME(exp_sum)(double *pi, int V, double m, double part[8])
{
    return PS_NAME(exp_sum_of)(NULL, 1.0, pi, V, m, part);
}

/* the largest (double)z[x], from *m (NaN never taken: max_pd keeps its second operand) */
static int PS_NAME(fmax)(const float *z, int V, double *m)
{
    PS_T m0 = PF(set1_pd)(*m), m1 = m0;
    int x = 0;
    for (; x + 2 * PS_W <= V; x += 2 * PS_W) {
        m0 = PF(max_pd)(PS_LOADF(z + x), m0);
        m1 = PF(max_pd)(PS_LOADF(z + x + PS_W), m1);
    }
    double l[2 * PS_W];
    PF(storeu_pd)(l, m0);
    PF(storeu_pd)(l + PS_W, m1);
    for (int k = 0; k < 2 * PS_W; k++)
        *m = l[k] > *m ? l[k] : *m;
    return x;
}

/* scale_max's product and exp_sum's exp in one pass: pi = exp(z * invT - m), part[] as there */
static int PS_NAME(scale_exp_sum)(const float *z, int V, double invT, double m, double *pi, double part[8])
{
    return PS_NAME(exp_sum_of)(z, invT, pi, V, m, part);
}

/* div and count_pos in one pass */
static int PS_NAME(div_count)(double *pi, int V, double S, int *n)
{
    const PS_T sv = PF(set1_pd)(S), z = PF(setzero_pd)();
    int x = 0, k = 0;
    for (; x + PS_W <= V; x += PS_W) {
        const PS_T v = PF(div_pd)(PF(loadu_pd)(pi + x), sv);
        PF(storeu_pd)(pi + x, v);
        k += __builtin_popcount(PS_MASK(v, z, _CMP_GT_OQ));
    }
    *n += k;
    return x;
}

/* a residual in 8-blocks: r = d > 0 ? d : +0 with d = a * x - y * ys, and *S += each r in
   index order (one add_sd per lane, as the scalar loop's adds), blocks of zeros skipped (adding
   +0 leaves the sum as it is) (arb_vf_residual, Traversal's reject) */
static int PS_NAME(residual_sum)(const double *x, double a, const double *y, double ys, int V, double *r,
                                 double *S)
{
    const PS_T av = PF(set1_pd)(a), yv = PF(set1_pd)(ys), z = PF(setzero_pd)();
    __m128d sv = _mm_set_sd(*S);
    int i = 0;
    for (; i + 8 <= V; i += 8) {
        PS_T t[8 / PS_W];
        unsigned m = 0;
        for (int h = 0; h < 8 / PS_W; h++) {
            const int o = i + h * PS_W;
            const PS_T d = PF(sub_pd)(PF(mul_pd)(av, PF(loadu_pd)(x + o)), PF(mul_pd)(PF(loadu_pd)(y + o), yv));
            t[h] = PS_KEEP_GT0(d);
            if (r)
                PF(storeu_pd)(r + o, t[h]);
            m |= PS_MASK(t[h], z, _CMP_GT_OQ);
        }
        /* the whole block, lane by lane from the registers (reloading the lanes just stored
           stalls their store forwarding: 31 against the scalar loop's 23 us on a dense row);
           a mixed block's zeros add nothing, and walking its set bits mispredicts */
        if (m)
            for (int h = 0; h < 8 / PS_W; h++)
                sv = PS_ADD_LANES(sv, t[h]);
    }
    *S = _mm_cvtsd_f64(sv);
    return i;
}

/* top-p: mass[j] += the sum of the e[x] >= th[j] (4 thresholds, any order of addition) */
static int PS_NAME(mass_above)(const double *e, int V, const double th[4], double mass[4])
{
    PS_T acc[4], tv[4];
    for (int j = 0; j < 4; j++) {
        acc[j] = PF(setzero_pd)();
        tv[j] = PF(set1_pd)(th[j]);
    }
    int x = 0;
    for (; x + PS_W <= V; x += PS_W) {
        const PS_T v = PF(loadu_pd)(e + x);
        for (int j = 0; j < 4; j++)
            acc[j] = PF(add_pd)(acc[j], PS_KEEP_GE(v, tv[j]));
    }
    for (int j = 0; j < 4; j++) {
        double l[PS_W];
        PF(storeu_pd)(l, acc[j]);
        for (int k = 0; k < PS_W; k++)
            mass[j] += l[k];
    }
    return x;
}

/* top-p: the ids with t <= pi and 0 < pi, ascending, appended at idx + *n */
static int PS_NAME(collect)(const double *pi, int V, double t, int32_t *idx, int *n)
{
    const PS_T tv = PF(set1_pd)(t), z = PF(setzero_pd)();
    int x = 0, k = *n; /* in a local: idx may alias *n, which would reload it per store */
    for (; x + PS_W <= V; x += PS_W) {
        const PS_T v = PF(loadu_pd)(pi + x);
        for (unsigned b = PS_MASK(v, tv, _CMP_GE_OQ) & PS_MASK(v, z, _CMP_GT_OQ); b; b &= b - 1)
            idx[k++] = x + __builtin_ctz(b);
    }
    *n = k;
    return x;
}

/* top-p: pi = pi < 0 ? -pi / S : 0 (0 - pi is -pi for pi < 0) */
static int PS_NAME(keep)(double *pi, int V, double S)
{
    const PS_T sv = PF(set1_pd)(S), z = PF(setzero_pd)();
    int x = 0;
    for (; x + PS_W <= V; x += PS_W) {
        const PS_T v = PF(loadu_pd)(pi + x);
        PF(storeu_pd)(pi + x, PS_NEG_OR_ZERO(v, PF(div_pd)(PF(sub_pd)(z, v), sv)));
    }
    return x;
}

/* SAMPLE: the lanes of w[0..8) that are not exact zeros (NaN included) */
static inline unsigned PS_NAME(nonzero8)(const double *w)
{
    unsigned m = 0;
    for (int h = 0; h < 8 / PS_W; h++)
        m |= PS_MASK(PF(loadu_pd)(w + h * PS_W), PF(setzero_pd)(), _CMP_NEQ_UQ) << (h * PS_W);
    return m;
}

/* SAMPLE's running sum over 8-blocks: a dense block as the plain chain, a sparse one by its
   set bits (adding +-0 leaves the sum as it is) */
static int PS_NAME(seq_sum)(const double *w, int V, double *S)
{
    double s = *S; /* in a register: w may alias S */
    int x = 0;
    for (; x + 8 <= V; x += 8) {
        unsigned m = PS_NAME(nonzero8)(w + x);
        if (m == 0xff)
            for (int k = 0; k < 8; k++)
                s += w[x + k];
        else
            for (; m; m &= m - 1)
                s += w[x + __builtin_ctz(m)];
    }
    *S = s;
    return x;
}

/* SAMPLE's pick over 8-blocks: *got = the first id with w > 0 whose running sum *c passes t */
static int PS_NAME(seq_pick)(const double *w, int V, double t, double *c, int *last, int *got)
{
    double cc = *c; /* in registers: w may alias c */
    int x = 0, l = *last;
    for (; x + 8 <= V; x += 8)
        for (unsigned m = PS_NAME(nonzero8)(w + x); m; m &= m - 1) {
            const int i = x + __builtin_ctz(m);
            cc += w[i];
            if (w[i] > 0) {
                l = i;
                if (t < cc) {
                    *got = i;
                    goto out;
                }
            }
        }
out:
    *c = cc, *last = l;
    return x;
}

static const proc_impl PS_NAME(proc) = {
    .scale_max = PS_NAME(scale_max), .exp_sum = PS_NAME(exp_sum), .fmax = PS_NAME(fmax),
    .scale_exp_sum = PS_NAME(scale_exp_sum), .div_count = PS_NAME(div_count), .mass_above = PS_NAME(mass_above),
    .collect = PS_NAME(collect), .keep = PS_NAME(keep), .seq_sum = PS_NAME(seq_sum), .seq_pick = PS_NAME(seq_pick),
    .residual_sum = PS_NAME(residual_sum),
};

#undef PF
#undef PS_NAME
#undef PS_CAT
#undef PS_CAT2
/* the parameters too, so the next instance defines them afresh */
#undef PS_T
#undef PS_W
#undef PS_PFX
#undef PS_SFX
#undef PS_LOADF
#undef PS_MASK
#undef PS_NEG_OR_ZERO
#undef PS_KEEP_GE
#undef PS_KEEP_GT0
#undef PS_ADD_LANES
#undef PS_VEXP
#undef PS_VEXP_OK
