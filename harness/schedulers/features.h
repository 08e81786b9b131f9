/* features.h — EntMTP's per-step features (docs/spec/drafting.md §10.5, Appendix A): the scheduler
 * scalar s from the base top-1 probability p0 and the heads' top-1 probabilities p_d along the
 * all-rank-0 path, plus the Appendix-A signals logged for analysis. Plain state, no allocation.
 *
 *     arb_entfeat f; arb_entfeat_reset(&f, ARB_ENTFEAT_LIT);   // per prompt
 *     arb_entfeat_base(&f, logits_row, V);      // the distribution that produced the anchor: p0, H_t
 *     arb_entfeat_heads(&f, p, top1, D);        // p_d, g_d, s_lit / s_gD / s_sum, s
 *     double s = f.s;                           // the scheduler's input for this step's tree
 *     arb_entfeat_accepted(&f, acc_tokens, k + 1);   // after verification: history, agreement
 *     arb_entfeat_json(&f, buf, sizeof buf);    // the step's steps.extra fields
 */
#ifndef ARB_FEATURES_H
#define ARB_FEATURES_H

#include <stdbool.h>
#include <stdint.h>

#define ARB_ENTFEAT_D 8    /* heads */
#define ARB_ENTFEAT_EMA 7  /* entropy EMA windows 4 8 12 16 24 32 64 */
#define ARB_ENTFEAT_HIST 16

typedef enum arb_entfeat_kind { ARB_ENTFEAT_LIT = 0, ARB_ENTFEAT_GD, ARB_ENTFEAT_SUM } arb_entfeat_kind;

typedef struct arb_entfeat {
    arb_entfeat_kind kind;          /* which reading is s */
    double p0;                      /* base top-1 probability (T = 1) */
    double H;                       /* its entropy (nats): block-start entropy H_t */
    double H_ema[ARB_ENTFEAT_EMA];  /* EMAs of H, alpha_w = 2 / (w + 1), first value as start */
    int D;                          /* heads in p */
    double p[ARB_ENTFEAT_D];        /* p[d-1] = head d's top-1 probability on the rank-0 path */
    int32_t top1[ARB_ENTFEAT_D];    /* ... and its token (head agreement) */
    double g[ARB_ENTFEAT_D + 1];    /* g[0] = p0, g[d] = p0 Π_{i<=d} p_i */
    double s_lit, s_gD, s_sum, s;   /* max(g) (= p0), g_D, Σ g; s = the chosen reading */
    double acc_ema;                 /* accept length (k + 1), alpha = 2/9 */
    double acc_mean[3], acc_min[3], acc_max[3]; /* over the last 4, 8, 16 steps */
    double head_agree;              /* previous step's top-1 chain vs the committed tokens */
    int n_steps;                    /* steps seen (accepted calls) */
    int hist[ARB_ENTFEAT_HIST];     /* ring of accept lengths */
    int32_t prev_top1[ARB_ENTFEAT_D];
    int prev_D;
} arb_entfeat;

/* "lit" | "gD" | "sum" -> kind; -1 if unknown. */
int arb_entfeat_kind_parse(const char *name);
void arb_entfeat_reset(arb_entfeat *f, arb_entfeat_kind kind);
/* One logits row's softmax (T = 1) statistics, from one vectorised pass after the maximum. */
typedef struct arb_entfeat_row {
    int32_t argmax; /* lowest id among equal maxima (arb_topk_argmax) */
    double p0, H;   /* top-1 probability, entropy in nats */
} arb_entfeat_row;
void arb_entfeat_row_stats(const float *row, int V, arb_entfeat_row *out);
/* The same on one path (ARB_TOPK_BASE or ARB_TOPK_AVX2 of engine.h; tests, benchmarks);
   false, writing nothing, if this CPU or build lacks it. */
bool arb_entfeat_row_stats_isa(int isa, const float *row, int V, arb_entfeat_row *out);
/* p0, H and the entropy EMAs from a row's statistics. */
void arb_entfeat_base_stats(arb_entfeat *f, const arb_entfeat_row *r);
/* = arb_entfeat_row_stats + arb_entfeat_base_stats. */
void arb_entfeat_base(arb_entfeat *f, const float *row, int V);
/* p[0..D) head top-1 probabilities (tokens top1) along the rank-0 path: g, the three s. */
void arb_entfeat_heads(arb_entfeat *f, const float *p, const int32_t *top1, int D);
/* The committed tokens of the step (n = k + 1: accepted drafts, then the bonus). */
void arb_entfeat_accepted(arb_entfeat *f, const int32_t *tok, int n);
/* The features as JSON object members (no braces); returns the length, or -1 if cut. */
int arb_entfeat_json(const arb_entfeat *f, char *buf, int cap);

#endif
