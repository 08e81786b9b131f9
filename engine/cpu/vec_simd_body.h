/* vec_simd_body.h — the vector kernels written once for every SIMD width. Included by
 * vec_avx2.c (8 lanes) and vec_avx512.c (16 lanes), after they define:
 *     VEC_T            the float vector type (__m256, __m512)
 *     VEC_W            its lanes
 *     VEC_REGS         vector registers the ISA has (16, 32): picks the register plan
 *     VEC_PFX          the intrinsics prefix (_mm256_, _mm512_)
 *     VEC_SFX          the suffix of the functions defined here (_avx2, _avx512)
 *     VEC_EXP_TAIL     a narrower exp kernel for the leftover keys (vec_impl.exp form)
 *     VEC_SWIGLU_TAIL  a narrower SwiGLU kernel for the leftover elements
 *     VEC_GEGLU_TAIL   a narrower GeGLU kernel for the leftover elements
 *     and the inline functions VEC_NAME(casti2f) (integer-to-float bit cast) and
 *     VEC_NAME(select_ge)(x, a) = x >= 0 ? x : a, lane by lane.
 * One body for every width, so the families cannot drift apart: each lane performs the
 * scalar reference's operations (vec_int.h) in the same order. No include guard: it is
 * instantiated once per family. The macros below are expression macros naming
 * intrinsics and functions; no macro touches a caller's locals.
 */
#define VEC_CAT2(a, b) a##b
#define VEC_CAT(a, b) VEC_CAT2(a, b)
#define VF(op) VEC_CAT(VEC_PFX, op)        /* VF(add_ps) -> _mm256_add_ps */
#define VEC_NAME(n) VEC_CAT(n, VEC_SFX)    /* VEC_NAME(exp) -> exp_avx2 */
#define VEC_AI static inline __attribute__((always_inline))

/* arb_exp_f32 lane for lane (maxps is the scalar clamp: x is never NaN here). */
VEC_AI VEC_T VEC_NAME(exp_v)(VEC_T x)
{
    const VEC_T magic = VF(set1_ps)(ARB_EXP_MAGIC);
    const VEC_T xc = VF(max_ps)(x, VF(set1_ps)(ARB_EXP_LO));
    const VEC_T nf = VF(sub_ps)(VF(add_ps)(VF(mul_ps)(xc, VF(set1_ps)(ARB_EXP_LOG2E)), magic), magic);
    VEC_T r = VF(sub_ps)(xc, VF(mul_ps)(nf, VF(set1_ps)(ARB_EXP_LN2_HI)));
    r = VF(sub_ps)(r, VF(mul_ps)(nf, VF(set1_ps)(ARB_EXP_LN2_LO)));
    VEC_T y = VF(set1_ps)(ARB_EXP_P0);
    y = VF(add_ps)(VF(mul_ps)(y, r), VF(set1_ps)(ARB_EXP_P1));
    y = VF(add_ps)(VF(mul_ps)(y, r), VF(set1_ps)(ARB_EXP_P2));
    y = VF(add_ps)(VF(mul_ps)(y, r), VF(set1_ps)(ARB_EXP_P3));
    y = VF(add_ps)(VF(mul_ps)(y, r), VF(set1_ps)(ARB_EXP_P4));
    y = VF(add_ps)(VF(mul_ps)(y, r), VF(set1_ps)(ARB_EXP_P5));
    y = VF(add_ps)(VF(add_ps)(VF(mul_ps)(y, VF(mul_ps)(r, r)), r), VF(set1_ps)(1.0f));
    const VEC_T two_n = VEC_NAME(casti2f)(VF(slli_epi32)(VF(add_epi32)(VF(cvtps_epi32)(nf), VF(set1_epi32)(127)), 23));
    return VF(mul_ps)(y, two_n);
}

static void VEC_NAME(exp)(float *s, int n, float mx)
{
    const VEC_T vmx = VF(set1_ps)(mx);
    int j = 0;
    for (; j + VEC_W <= n; j += VEC_W)
        VF(storeu_ps)(s + j, VEC_NAME(exp_v)(VF(sub_ps)(VF(loadu_ps)(s + j), vmx)));
    VEC_EXP_TAIL(s + j, n - j, mx);
}

/* The weighted value sum for NH query rows at once (NH a constant in each instantiation;
   up to ARB_VEC_QROWS with 32 registers, ARB_VEC_HEADS with 16): columns in blocks of 4
   vectors (4 x NH accumulators, NH broadcast weights, the value vectors), then one vector,
   then single floats. Per element the sum over keys runs in
   the same order from 0.0f (or, with acc, from the value in out), one FMA per key, as
   the scalar path. */
VEC_AI void VEC_NAME(wsum_heads)(const float *v, int stride, const int32_t *rows, const float *const *p,
                                 const int NH, int n_keys, int hd, float *const *out, int acc)
{
    int d0 = 0;
    for (; d0 + 4 * VEC_W <= hd; d0 += 4 * VEC_W) {
        /* rows j < j_pf prefetch row j + ARB_VEC_PREFETCH, in the first pass of a long list */
        const int j_pf = d0 == 0 && n_keys > ARB_VEC_PREFETCH_MIN ? n_keys - ARB_VEC_PREFETCH : 0;
        VEC_T o[ARB_VEC_QROWS][4];
        for (int h = 0; h < NH; h++)
            for (int r = 0; r < 4; r++)
                o[h][r] = acc ? VF(loadu_ps)(out[h] + d0 + VEC_W * r) : VF(setzero_ps)();
        for (int j = 0; j < n_keys; j++) {
            const float *vr = v + (size_t)rows[j] * stride + d0;
            if (j < j_pf) /* the whole row: later passes find it in L2 */
                arb_vec_prefetch_row(v + (size_t)rows[j + ARB_VEC_PREFETCH] * stride, hd);
#if VEC_REGS >= 32
            /* the 4 value vectors loaded once into registers, then NH x 4 FMAs: with the
               loads folded into the FMAs instead, the compiler reloads each vector for
               every head (0.97 against 0.68 ns per (head, key) on Zen 5 at 64 keys); at
               NH = 6, 24 accumulators, 4 values and a weight fit the 32 registers */
            VEC_T vv[4];
            for (int r = 0; r < 4; r++)
                vv[r] = VF(loadu_ps)(vr + VEC_W * r);
            for (int h = 0; h < NH; h++) {
                const VEC_T pp = VF(set1_ps)(p[h][j]);
                for (int r = 0; r < 4; r++)
                    o[h][r] = VF(fmadd_ps)(pp, vv[r], o[h][r]);
            }
#else
            /* 16 registers: 12 accumulators, NH weights and one value vector at a time */
            VEC_T pp[ARB_VEC_HEADS];
            for (int h = 0; h < NH; h++)
                pp[h] = VF(set1_ps)(p[h][j]);
            for (int r = 0; r < 4; r++) {
                const VEC_T vv = VF(loadu_ps)(vr + VEC_W * r);
                for (int h = 0; h < NH; h++)
                    o[h][r] = VF(fmadd_ps)(pp[h], vv, o[h][r]);
            }
#endif
        }
        for (int h = 0; h < NH; h++)
            for (int r = 0; r < 4; r++)
                VF(storeu_ps)(out[h] + d0 + VEC_W * r, o[h][r]);
    }
    for (; d0 + VEC_W <= hd; d0 += VEC_W)
        for (int h = 0; h < NH; h++) {
            VEC_T o = acc ? VF(loadu_ps)(out[h] + d0) : VF(setzero_ps)();
            for (int j = 0; j < n_keys; j++)
                o = VF(fmadd_ps)(VF(set1_ps)(p[h][j]), VF(loadu_ps)(v + (size_t)rows[j] * stride + d0), o);
            VF(storeu_ps)(out[h] + d0, o);
        }
    for (; d0 < hd; d0++)
        for (int h = 0; h < NH; h++) {
            float o = acc ? out[h][d0] : 0.0f;
            for (int j = 0; j < n_keys; j++)
                o = fmaf(p[h][j], v[(size_t)rows[j] * stride + d0], o);
            out[h][d0] = o;
        }
}

static void VEC_NAME(wsum)(const float *v, int stride, const int32_t *rows, const float *const *p, int nh,
                           int n_keys, int hd, float *const *out, int acc)
{
    _Static_assert(ARB_VEC_HEADS == 3 && ARB_VEC_QROWS == 6,
                   "the cases below and the register budget are written for 3 and 6 rows");
#if VEC_REGS >= 32
    switch (nh) {
    case 6: VEC_NAME(wsum_heads)(v, stride, rows, p, 6, n_keys, hd, out, acc); break;
    case 5: VEC_NAME(wsum_heads)(v, stride, rows, p, 5, n_keys, hd, out, acc); break;
    case 4: VEC_NAME(wsum_heads)(v, stride, rows, p, 4, n_keys, hd, out, acc); break;
    case 3: VEC_NAME(wsum_heads)(v, stride, rows, p, 3, n_keys, hd, out, acc); break;
    case 2: VEC_NAME(wsum_heads)(v, stride, rows, p, 2, n_keys, hd, out, acc); break;
    default: VEC_NAME(wsum_heads)(v, stride, rows, p, 1, n_keys, hd, out, acc); break;
    }
#else
    for (int h0 = 0; h0 < nh; h0 += ARB_VEC_HEADS) /* 3 rows a pass (rows are independent) */
        switch (nh - h0 < ARB_VEC_HEADS ? nh - h0 : ARB_VEC_HEADS) {
        case 3: VEC_NAME(wsum_heads)(v, stride, rows, p + h0, 3, n_keys, hd, out + h0, acc); break;
        case 2: VEC_NAME(wsum_heads)(v, stride, rows, p + h0, 2, n_keys, hd, out + h0, acc); break;
        default: VEC_NAME(wsum_heads)(v, stride, rows, p + h0, 1, n_keys, hd, out + h0, acc); break;
        }
#endif
}

/* arb_swiglu_f32 lane for lane: -|x| as minps(x, 0 - x) (the scalar x < 0 ? x : -x,
   also for +-0). */
static void VEC_NAME(swiglu)(float *g, const float *u, size_t i0, size_t i1)
{
    size_t i = i0;
    for (; i + VEC_W <= i1; i += VEC_W) {
        const VEC_T x = VF(loadu_ps)(g + i);
        const VEC_T e = VEC_NAME(exp_v)(VF(min_ps)(x, VF(sub_ps)(VF(setzero_ps)(), x)));
        const VEC_T r = VF(div_ps)(VEC_NAME(select_ge)(x, VF(mul_ps)(x, e)), VF(add_ps)(VF(set1_ps)(1.0f), e));
        VF(storeu_ps)(g + i, VF(mul_ps)(r, VF(loadu_ps)(u + i)));
    }
    VEC_SWIGLU_TAIL(g, u, i, i1);
}

/* arb_geglu_f32 lane for lane: z = x (C1 + C2 x^2), -|z| as minps(z, 0 - z), the branch
   on the sign of x. */
static void VEC_NAME(geglu)(float *g, const float *u, size_t i0, size_t i1)
{
    size_t i = i0;
    for (; i + VEC_W <= i1; i += VEC_W) {
        const VEC_T x = VF(loadu_ps)(g + i);
        const VEC_T z = VF(mul_ps)(x, VF(add_ps)(VF(set1_ps)(ARB_GELU_C1),
                                                 VF(mul_ps)(VF(set1_ps)(ARB_GELU_C2), VF(mul_ps)(x, x))));
        const VEC_T e = VEC_NAME(exp_v)(VF(min_ps)(z, VF(sub_ps)(VF(setzero_ps)(), z)));
        const VEC_T r = VF(div_ps)(VEC_NAME(select_ge)(x, VF(mul_ps)(x, e)), VF(add_ps)(VF(set1_ps)(1.0f), e));
        VF(storeu_ps)(g + i, VF(mul_ps)(r, VF(loadu_ps)(u + i)));
    }
    VEC_GEGLU_TAIL(g, u, i, i1);
}

#undef VEC_AI
#undef VEC_NAME
#undef VF
#undef VEC_CAT
#undef VEC_CAT2
