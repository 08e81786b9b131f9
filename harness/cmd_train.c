/* cmd_train.c — `arbor train medusa|hydra`: Medusa-1 / Hydra heads on a frozen target, from a
 * distill file (docs/heads.md). The target's last hidden states are recomputed once with a
 * teacher-forced prefill of each record and kept in memory; the heads train with AdamW, warm-up
 * + cosine, gradient clipping; a held-out split by record reports loss and top-1/top-5 per head. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adamw.h"
#include "cJSON.h"
#include "cli.h"
#include "distill.h"
#include "drafters/medusa.h"
#include "eagle_head.h"
#include "genutil.h"
#include "heads.h"
#include "heads_file.h"
#include "modelfetch.h"
#include "opts.h"
#include "progress.h"
#include "sha256.h"

static const char description[] =
    "Trains K heads on the target's last (final-norm) hidden state, sharing its frozen output\n"
    "head, on the responses of a distill file (`arbor distill`); head k (1-based) predicts token\n"
    "t + k + 1. Writes a GGUF with the heads, base model sha256, config, data sha256, accuracy.\n"
    "Optimizer steps: --steps N, else --epochs E passes over the rows (E = 1); --lr is the peak\n"
    "rate, reached after --warmup steps (default 5%), then cosine to 0.\n"
    "eagle: the EAGLE-1 head (one decoder layer on [e(x_t+1), f_t] predicting f_t+1; docs/heads.md):\n"
    "--batch B is records (sequences) per step (default 4), --lr defaults to 5e-4, --clip to 0.5,\n"
    "Adam beta2 0.95; --w-cls W weights the token loss (default 0.1) against the feature\n"
    "regression (SmoothL1, weight 1).\n";

typedef struct opts {
    arb_heads_kind kind;
    bool eagle;          /* arbor train eagle */
    double w_cls;        /* eagle: token-loss weight */
    double teacher;      /* medusa/hydra: weight of the teacher's law in the loss (Hydra++; 0 = hard labels) */
    double noise;        /* eagle: input-feature noise, EAGLE's uniform std (0 = none) */
    const char *model, *data, *out;
    int K, steps, epochs, batch, warmup, eval_every, eval_rows, max_records, threads;
    double lr, wd, clip, heldout;
    uint64_t seed;
} opts;

typedef struct rowref {
    int rec;   /* record index */
    int j;     /* response position: hidden of token n_prompt - 1 + j, predicts resp[j] */
} rowref;

typedef struct trainer {
    opts o;
    const arb_distill_data *d;
    arb_heads *h;
    arb_eagle *eh;         /* eagle */
    float *w_lm, *emb;     /* [V x E] (emb == w_lm when tied) */
    float **hid;           /* [n_rec] -> [n_resp x E] or NULL (record unused) */
    bool *held;            /* [n_rec] held-out record */
    rowref *train, *eval;
    size_t n_train, n_eval;
    arb_heads_ws *ws;
    float *x;              /* [batch x d_in max] */
    float *tz;             /* [batch x E]: the teacher's hidden rows (--teacher > 0) */
    int32_t *y, *ranks;    /* [batch] */
} trainer;

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fisher-Yates keyed by key (seeded, so a run is reproducible). */
static void shuffle(rowref *a, size_t n, uint64_t key)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(mix64(key ^ i) % i);
        rowref t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 0 = run, 1 = --help printed, 2 = usage error (printed). */
static int parse_opts(int argc, char **argv, opts *o)
{
    *o = (opts){.model = "default", .K = 4, .epochs = 1, .batch = 32, .warmup = -1, .eval_rows = 2000,
                .threads = 1, .lr = 1e-3, .clip = 1.0, .heldout = 0.05, .seed = 1, .w_cls = 0.1};
    bool seen_batch = false, seen_lr = false, seen_clip = false, seen_wcls = false, seen_teacher = false,
         seen_noise = false;
    const arb_opt table[] = {
        ARB_OPT_STR("--model", "M", &o->model, "model whose heads are trained: default or a GGUF path"),
        {.name = "--file", .alias = "--data", .kind = ARB_OPT_KIND_STR, .dst = &o->data, .metavar = "FILE",
         .help = "distill file (default: the model's default distill file, n = 128)"},
        ARB_OPT_STR("--out", "FILE", &o->out, "heads GGUF (default <cache>/heads/<kind>-<model file>.<sha12>.gguf)"),
        ARB_OPT_INT("--heads", "K", &o->K, 1, ARB_HEADS_MAX, "heads (default 4)"),
        ARB_OPT_INT("--steps", "N", &o->steps, 1, 1e9, "optimizer steps (default: --epochs passes over the rows)"),
        ARB_OPT_INT("--epochs", "E", &o->epochs, 1, 1000, "passes over the rows when --steps is not given (1)"),
        {.name = "--batch", .kind = ARB_OPT_KIND_INT, .dst = &o->batch, .lo = 1, .hi = 4096, .metavar = "B",
         .help = "rows (positions) per step (32; eagle: records per step, 4)", .seen = &seen_batch},
        {.name = "--lr", .kind = ARB_OPT_KIND_DOUBLE, .dst = &o->lr, .lo = 1e-9, .hi = 10, .metavar = "LR",
         .help = "peak learning rate (1e-3; eagle 5e-4)", .seen = &seen_lr},
        ARB_OPT_INT("--warmup", "N", &o->warmup, 0, 1e9, "warm-up steps (default 5% of the steps)"),
        ARB_OPT_DOUBLE("--weight-decay", "W", &o->wd, 0, 10, "decoupled weight decay (0)"),
        {.name = "--clip", .kind = ARB_OPT_KIND_DOUBLE, .dst = &o->clip, .lo = 0, .hi = 1e9, .metavar = "C",
         .help = "global gradient-norm cap (1.0; eagle 0.5)", .seen = &seen_clip},
        {.name = "--w-cls", .kind = ARB_OPT_KIND_DOUBLE, .dst = &o->w_cls, .lo = 0, .hi = 1e3, .metavar = "W",
         .help = "eagle: weight of the token loss against the feature regression (0.1)", .seen = &seen_wcls},
        {.name = "--teacher", .kind = ARB_OPT_KIND_DOUBLE, .dst = &o->teacher, .lo = 0, .hi = 1, .metavar = "A",
         .help = "medusa/hydra: loss (1 - A) CE(token) + A CE(the base model's law at that token), Hydra++'s "
                 "teacher loss (0: the token only)",
         .seen = &seen_teacher},
        {.name = "--noise", .kind = ARB_OPT_KIND_DOUBLE, .dst = &o->noise, .lo = 0, .hi = 100, .metavar = "S",
         .help = "eagle: uniform noise on the input features, (U - 1/2) S 512 / L for a sequence of L tokens, as "
                 "EAGLE's AddUniformNoise (its default S 0.2; here 0: none)",
         .seen = &seen_noise},
        ARB_OPT_U64("--seed", "S", &o->seed, "shuffling, initialisation and the held-out split (1)"),
        ARB_OPT_INT("--threads", "N", &o->threads, 0, 1024, "target threads for the hidden-state prefill (1)"),
        ARB_OPT_DOUBLE("--heldout", "F", &o->heldout, 0, 0.9, "share of records held out (0.05, at least one)"),
        ARB_OPT_INT("--eval-every", "N", &o->eval_every, 0, 1e9, "held-out evaluation every N steps (0: at the end)"),
        ARB_OPT_INT("--eval-rows", "N", &o->eval_rows, 1, 1e9, "held-out rows evaluated at most (2000)"),
        {.name = "--limit", .alias = "--max-records", .kind = ARB_OPT_KIND_INT, .dst = &o->max_records, .lo = 1,
         .hi = 1e9, .metavar = "N", .help = "use the first N records of the file (default all)"},
        ARB_OPT_END};
    const arb_cmd_spec cmd = {"train", "medusa|hydra|eagle|nde", description, table, 1, 1};
    char *pos_v[argc > 0 ? argc : 1];
    arb_opt_pos pos = {pos_v, 0};
    const int prc = arb_opts_parse(&cmd, argc, argv, &pos);
    if (prc != ARB_OPTS_OK)
        return prc == ARB_OPTS_HELP ? 1 : 2;
    if (strcmp(pos.v[0], "medusa") && strcmp(pos.v[0], "hydra") && strcmp(pos.v[0], "eagle")) {
        fprintf(stderr, "arbor train: the heads kind must be medusa, hydra, eagle or nde (got '%s')\n", pos.v[0]);
        arb_opts_usage(&cmd, stderr);
        return 2;
    }
    if ((o->eagle = !strcmp(pos.v[0], "eagle"))) { /* EAGLE's reference: bs 4, clip 0.5; lr a CHOICE */
        o->batch = seen_batch ? o->batch : 4;
        o->lr = seen_lr ? o->lr : 5e-4;
        o->clip = seen_clip ? o->clip : 0.5;
        if (seen_teacher) {
            fprintf(stderr, "arbor train: --teacher is a medusa/hydra option\n");
            arb_opts_usage(&cmd, stderr);
            return 2;
        }
    } else if (seen_wcls || seen_noise) {
        fprintf(stderr, "arbor train: %s is an eagle option\n", seen_wcls ? "--w-cls" : "--noise");
        arb_opts_usage(&cmd, stderr);
        return 2;
    }
    o->kind = strcmp(pos.v[0], "hydra") ? ARB_HEADS_MEDUSA : ARB_HEADS_HYDRA;
    return 0;
}

/* The hidden-state cache next to the distill file, <data>.<model sha256[0:12]>.hidden:
   "ARBHID1\0" | 64-char model sha256 | 64-char data sha256 | u32 records used | u32 n_embd |
   f32 rows of every used record, in order. Recomputing costs one prefill per record (minutes on
   one core for 40k positions); the cache costs 4 x n_embd bytes per position (2.3 KB at 576). */
static const char HID_MAGIC[8] = {'A', 'R', 'B', 'H', 'I', 'D', '1', 0};

static bool used(const arb_distill_rec *R) { return R->n_resp >= 2 && R->n_prompt >= 1; }

static bool cache_read(trainer *T, const char *path, const char *msha, int n_use, int E)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char hdr[8 + 64 + 64];
    uint32_t nu[2];
    bool ok = fread(hdr, 1, sizeof hdr, f) == sizeof hdr && fread(nu, 4, 2, f) == 2 && !memcmp(hdr, HID_MAGIC, 8) &&
              !memcmp(hdr + 8, msha, 64) && !memcmp(hdr + 72, T->d->sha256, 64) && nu[0] == (uint32_t)n_use &&
              nu[1] == (uint32_t)E;
    for (int r = 0; ok && r < n_use; r++) {
        const arb_distill_rec *R = &T->d->rec[r];
        if (!used(R))
            continue;
        ok = (T->hid[r] = malloc((size_t)R->n_resp * E * sizeof(float))) &&
             fread(T->hid[r], sizeof(float) * E, (size_t)R->n_resp, f) == (size_t)R->n_resp;
    }
    fclose(f);
    if (!ok)
        for (int r = 0; r < n_use; r++)
            free(T->hid[r]), T->hid[r] = NULL;
    return ok;
}

static void cache_write(const trainer *T, const char *path, const char *msha, int n_use, int E)
{
    /* this process's own part file: two trainings of one distill file (medusa and hydra side by
       side) write the same cache, each whole, and the later rename wins */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%.4160s.%ld.part", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    uint32_t nu[2] = {(uint32_t)n_use, (uint32_t)E};
    bool ok = fwrite(HID_MAGIC, 1, 8, f) == 8 && fwrite(msha, 1, 64, f) == 64 &&
              fwrite(T->d->sha256, 1, 64, f) == 64 && fwrite(nu, 4, 2, f) == 2;
    for (int r = 0; ok && r < n_use; r++)
        if (T->hid[r])
            ok = fwrite(T->hid[r], sizeof(float) * E, (size_t)T->d->rec[r].n_resp, f) ==
                 (size_t)T->d->rec[r].n_resp;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path)) {
        remove(tmp);
        fprintf(stderr, "train: warning: cannot write the hidden-state cache %s\n", path);
    }
}

/* Hidden states of every used record: prefill the prompt but its last token, then one chain
   over [last prompt token, resp[0 .. n_resp - 2]] returning hidden rows and argmax. The argmax
   of row j must be resp[j] (the file holds the target's own greedy answer): counted as a check. */
static int compute_hidden(trainer *T, arb_ctx *ctx, int E, const char *msha, arb_err *err)
{
    const arb_distill_data *d = T->d;
    int n_use = T->o.max_records > 0 && T->o.max_records < d->n_rec ? T->o.max_records : d->n_rec;
    char cpath[4200];
    snprintf(cpath, sizeof cpath, "%.4096s.%.12s.hidden", T->o.data, msha);
    if (cache_read(T, cpath, msha, n_use, E)) {
        fprintf(stderr, "train: hidden states from %s\n", cpath);
        return ARB_OK;
    }
    int cap = 0;
    for (int r = 0; r < n_use; r++)
        cap = d->rec[r].n_resp > cap ? d->rec[r].n_resp : cap;
    int32_t *par = malloc((size_t)(cap + 1) * sizeof *par), *am = malloc((size_t)(cap + 1) * sizeof *am);
    if (!par || !am) {
        free(par);
        free(am);
        return ARB_ERR(err, ARB_E_NOMEM, "train: out of memory");
    }
    for (int i = 0; i <= cap; i++)
        par[i] = i - 1;
    arb_progress pr;
    arb_progress_init(&pr, stderr, n_use, 30.0);
    uint64_t agree = 0, rows = 0;
    double t0 = now_s();
    int rc = ARB_OK;
    for (int r = 0; r < n_use && !rc; r++) {
        const arb_distill_rec *R = &d->rec[r];
        if (!used(R)) { /* no head has a target */
            arb_progress_step(&pr, 1, false, "skip");
            continue;
        }
        int n = R->n_resp; /* rows: positions n_prompt-1 .. n_prompt+n_resp-2 */
        if (!(T->hid[r] = malloc((size_t)n * E * sizeof(float)))) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "train: out of memory for hidden states (record %d)", r);
            break;
        }
        arb_eval_out eo = {.argmax = am, .hidden = T->hid[r]};
        if ((rc = arb_ctx_truncate(ctx, 0)) ||
            (R->n_prompt > 1 && (rc = arb_prefill(ctx, R->tok, R->n_prompt - 1, NULL, err))) ||
            (rc = arb_eval_ex(ctx, R->tok + R->n_prompt - 1, par, n, &eo, err))) {
            arb_err_prefix(err, "record %d (seq %u)", r, R->seq);
            break;
        }
        for (int j = 0; j < n; j++)
            agree += am[j] == R->tok[R->n_prompt + j];
        rows += (uint64_t)n;
        arb_progress_step(&pr, 1, true, "hidden states");
    }
    arb_progress_finish(&pr);
    free(par);
    free(am);
    if (!rc)
        cache_write(T, cpath, msha, n_use, E);
    if (!rc)
        fprintf(stderr, "train: hidden states of %llu positions in %.1f s; argmax = stored token at %.2f%% "
                        "(greedy self-distillation: 100%% expected on the CPU)\n",
                (unsigned long long)rows, now_s() - t0, rows ? 100.0 * (double)agree / (double)rows : 0.0);
    return rc;
}

/* Input row of head k at (rec, j): the hidden state, then (Hydra) the embeddings of resp[j]
   (the token the LM head gives: the tree's anchor) and of the k tokens before head k's target. */
static void build_x(const trainer *T, int k, const rowref *rr, float *x)
{
    const int E = T->h->n_embd;
    memcpy(x, T->hid[rr->rec] + (size_t)rr->j * E, (size_t)E * sizeof *x);
    if (T->h->kind != ARB_HEADS_HYDRA)
        return;
    const arb_distill_rec *R = &T->d->rec[rr->rec];
    const int32_t *resp = R->tok + R->n_prompt;
    for (int i = 0; i <= k; i++) {
        int idx = rr->j + i;
        int32_t t = idx < R->n_resp ? resp[idx] : 0; /* rows without a target never read x */
        memcpy(x + (size_t)(i + 1) * E, T->emb + (size_t)t * E, (size_t)E * sizeof *x);
    }
}

static int32_t target(const trainer *T, int k, const rowref *rr)
{
    const arb_distill_rec *R = &T->d->rec[rr->rec];
    int idx = rr->j + 1 + k;
    return idx < R->n_resp ? R->tok[R->n_prompt + idx] : -1;
}

/* The hidden row whose logits predict head k's target at (rec, j): the base model's own law over
   that token, Hydra++'s teacher (zeros where there is no target; never read there). */
static void teacher_row(const trainer *T, int k, const rowref *rr, float *tz)
{
    const int E = T->h->n_embd, idx = rr->j + 1 + k;
    if (idx < T->d->rec[rr->rec].n_resp)
        memcpy(tz, T->hid[rr->rec] + (size_t)idx * E, (size_t)E * sizeof *tz);
    else
        memset(tz, 0, (size_t)E * sizeof *tz);
}

static float head_weight(int k) { return powf(0.8f, (float)(k + 1)); }

typedef struct eval_res {
    double loss[ARB_HEADS_MAX];
    double top1[ARB_HEADS_MAX], top5[ARB_HEADS_MAX];
    double rank_acc[ARB_HEADS_MAX][ARB_HEADS_RANKS];
    long n[ARB_HEADS_MAX];
} eval_res;

static void evaluate(trainer *T, eval_res *ev)
{
    memset(ev, 0, sizeof *ev);
    const arb_heads *h = T->h;
    size_t n = T->n_eval < (size_t)T->o.eval_rows ? T->n_eval : (size_t)T->o.eval_rows;
    for (int k = 0; k < h->n_heads; k++)
        for (size_t b0 = 0; b0 < n; b0 += (size_t)T->o.batch) {
            int B = (int)(n - b0 < (size_t)T->o.batch ? n - b0 : (size_t)T->o.batch);
            for (int i = 0; i < B; i++) {
                build_x(T, k, &T->eval[b0 + i], T->x + (size_t)i * h->d_in[k]);
                T->y[i] = target(T, k, &T->eval[b0 + i]);
            }
            ev->loss[k] += arb_heads_step(h, k, T->w_lm, T->x, T->y, B, 1, NULL, T->ws, T->ranks);
            for (int i = 0; i < B; i++) {
                int r = T->ranks[i];
                if (r < 0)
                    continue;
                ev->n[k]++;
                ev->top1[k] += r == 0;
                ev->top5[k] += r < 5;
                if (r < ARB_HEADS_RANKS)
                    ev->rank_acc[k][r]++;
            }
        }
    for (int k = 0; k < h->n_heads; k++) {
        double m = ev->n[k] ? (double)ev->n[k] : 1;
        ev->loss[k] /= m;
        ev->top1[k] /= m;
        ev->top5[k] /= m;
        for (int r = 0; r < ARB_HEADS_RANKS; r++)
            ev->rank_acc[k][r] /= m;
    }
}

static void print_eval(const trainer *T, const eval_res *ev, int step)
{
    fprintf(stderr, "eval step %d (%zu held-out rows):", step,
            T->n_eval < (size_t)T->o.eval_rows ? T->n_eval : (size_t)T->o.eval_rows);
    for (int k = 0; k < T->h->n_heads; k++)
        fprintf(stderr, "  h%d loss %.3f top1 %.3f top5 %.3f", k + 1, ev->loss[k], ev->top1[k], ev->top5[k]);
    fprintf(stderr, "\n");
}

static void trainer_release(trainer *T)
{
    if (T->hid && T->d)
        for (int r = 0; r < T->d->n_rec; r++)
            free(T->hid[r]);
    free(T->hid);
    free(T->held);
    free(T->train);
    free(T->eval);
    if (T->emb != T->w_lm)
        free(T->emb);
    free(T->w_lm);
    arb_heads_ws_free(T->ws);
    arb_heads_free(T->h);
    arb_eagle_free(T->eh);
    free(T->x);
    free(T->tz);
    free(T->y);
    free(T->ranks);
}

/* ---- arbor train eagle: one sequence per record (its response), teacher-forced ---- */

typedef struct eagle_eval {
    double reg, ce, top1, top5, rank_acc[ARB_HEADS_RANKS];
    long n, n_tok;
} eagle_eval;

/* Record r as an EAGLE sequence: inputs (f_j, e(resp[j])) for j < n_resp - 1, with f_j the
   hidden row of position n_prompt - 1 + j; targets f_{j+1} and resp[j + 1]. */
static int eagle_len(const trainer *T, int r) { return T->d->rec[r].n_resp - 1; }
static const int32_t *eagle_resp(const trainer *T, int r) { return T->d->rec[r].tok + T->d->rec[r].n_prompt; }

static void eagle_evaluate(trainer *T, arb_eagle_ws *ws, int32_t *ranks, eagle_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    for (size_t i = 0; i < T->n_eval && ev->n < T->o.eval_rows; i++) {
        int r = T->eval[i].rec, n = eagle_len(T, r);
        const int32_t *resp = eagle_resp(T, r);
        arb_eagle_loss lo;
        arb_eagle_seq_step(T->eh, T->w_lm, T->emb, T->hid[r], NULL, resp, resp + 1, n, 1, 1, NULL, ws, &lo, ranks);
        ev->reg += lo.reg, ev->ce += lo.ce, ev->n += lo.n, ev->n_tok += lo.n_tok;
        for (int j = 0; j < n; j++) {
            ev->top1 += ranks[j] == 0;
            ev->top5 += ranks[j] >= 0 && ranks[j] < 5;
            if (ranks[j] >= 0 && ranks[j] < ARB_HEADS_RANKS)
                ev->rank_acc[ranks[j]]++;
        }
    }
    double m = ev->n_tok ? (double)ev->n_tok : 1;
    ev->reg /= ev->n ? (double)ev->n : 1;
    ev->ce /= m, ev->top1 /= m, ev->top5 /= m;
    for (int k = 0; k < ARB_HEADS_RANKS; k++)
        ev->rank_acc[k] /= m;
}

/* EAGLE's input noise (its AddUniformNoise on hidden_state_big, applied after the targets were
   cut from the clean states): (U - 1/2) x std x 512 / L on every input feature, L the sequence's
   length — here the record's, prompt and response, the tokens the base model saw. Row i of
   record r's n inputs into out; u from a counter hash of (seed, draw, element), reproducible. */
static void eagle_noise(const trainer *T, int r, int n, uint64_t draw, float *out)
{
    const int E = T->eh->c.E;
    const arb_distill_rec *R = &T->d->rec[r];
    const float amp = (float)(T->o.noise * 512.0 / (double)(R->n_prompt + R->n_resp));
    const uint64_t key = mix64(T->o.seed ^ 0x6e6f697365ull ^ mix64(draw));
    const float *f = T->hid[r];
    for (size_t i = 0; i < (size_t)n * E; i++) {
        const double u = (double)(mix64(key + i) >> 11) * 0x1p-53;
        out[i] = f[i] + (float)(u - 0.5) * amp;
    }
}

static int train_eagle(trainer *T, const char *model_name, const char *model_path, const char *sha, int n_used,
                       int n_held, arb_err *err)
{
    opts *o = &T->o;
    const arb_eagle *h = T->eh;
    /* sequences instead of rows: one rowref per record (j unused) */
    size_t n_tr = 0, n_ev = 0, pos_tr = 0, pos_ev = 0;
    int maxT = 1;
    for (int r = 0; r < T->d->n_rec; r++) {
        if (!T->hid[r])
            continue;
        int n = eagle_len(T, r);
        maxT = n > maxT ? n : maxT;
        if (T->held[r])
            T->eval[n_ev++] = (rowref){r, 0}, pos_ev += (size_t)n;
        else
            T->train[n_tr++] = (rowref){r, 0}, pos_tr += (size_t)n;
    }
    T->n_train = n_tr, T->n_eval = n_ev;
    shuffle(T->eval, T->n_eval, o->seed ^ 0xe7a1ull); /* so --eval-rows samples across records */
    arb_eagle_ws *ws = NULL;
    float *grad = calloc(h->n_params, sizeof *grad);
    int32_t *ranks = malloc((size_t)maxT * sizeof *ranks);
    float *noisy = o->noise > 0 ? malloc((size_t)maxT * h->c.E * sizeof *noisy) : NULL;
    arb_adamw opt = {0};
    int rc = ARB_OK;
    if (!grad || !ranks || (o->noise > 0 && !noisy)) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "train: out of memory");
        goto out;
    }
    if ((rc = arb_eagle_ws_new(h, maxT, maxT, &ws, err)))
        goto out;
    size_t per_epoch = (n_tr + (size_t)o->batch - 1) / (size_t)o->batch;
    int steps = o->steps > 0 ? o->steps : (int)(per_epoch * (size_t)o->epochs);
    arb_adamw_opts ao = arb_adamw_default_opts();
    ao.lr = o->lr;
    ao.beta2 = 0.95; /* EAGLE's b2 */
    ao.weight_decay = o->wd;
    ao.clip = o->clip;
    ao.total_steps = steps;
    ao.warmup_steps = o->warmup >= 0 ? (o->warmup < steps ? o->warmup : steps) : steps / 20;
    if ((rc = arb_adamw_init(&opt, h->n_params, &ao, err)))
        goto out;
    fprintf(stderr, "train eagle: 1 layer (n_head %d, n_head_kv %d, head_dim %d, n_ff %d, rope_base %g) on %s; "
                    "%d records used (%d held out), %zu training positions, %zu held-out positions; %d steps x %d "
                    "sequences (%.2f epochs), %zu parameters; input noise %g\n",
            h->c.H, h->c.KVH, h->c.hd, h->c.F, h->c.rope_base, model_name, n_used, n_held, pos_tr, pos_ev, steps,
            o->batch, (double)steps * o->batch / (double)n_tr, h->n_params, o->noise);
    double t0 = now_s(), acc_reg = 0, acc_ce = 0;
    long acc_n = 0, acc_top1 = 0, tok_done = 0;
    size_t cursor = n_tr;
    uint64_t epoch = 0;
    eagle_eval ev = {0};
    for (int step = 0; step < steps; step++) {
        memset(grad, 0, h->n_params * sizeof *grad);
        int rec[4096], npos = 0;
        for (int b = 0; b < o->batch; b++) {
            if (cursor >= n_tr) {
                shuffle(T->train, n_tr, o->seed ^ (epoch << 32));
                cursor = 0;
                epoch++;
            }
            rec[b] = T->train[cursor++].rec;
            npos += eagle_len(T, rec[b]);
        }
        /* loss = mean over the batch's positions of SmoothL1 + w_cls CE (EAGLE's v_w 1, p_w 0.1) */
        for (int b = 0; b < o->batch; b++) {
            int r = rec[b], n = eagle_len(T, r);
            const int32_t *resp = eagle_resp(T, r);
            arb_eagle_loss lo;
            if (noisy)
                eagle_noise(T, r, n, (uint64_t)step << 20 | (uint64_t)b, noisy);
            arb_eagle_seq_step(h, T->w_lm, T->emb, T->hid[r], noisy, resp, resp + 1, n, 1.0f / (float)npos,
                               (float)o->w_cls / (float)npos, grad, ws, &lo, ranks);
            acc_reg += lo.reg, acc_ce += lo.ce, acc_n += lo.n;
            for (int j = 0; j < n; j++)
                acc_top1 += ranks[j] == 0;
        }
        tok_done += npos;
        double gn = arb_adamw_step(&opt, T->eh->params, grad);
        bool last = step + 1 == steps;
        if ((step + 1) % 10 == 0 || last) {
            double el = now_s() - t0;
            fprintf(stderr, "step %d/%d lr %.2e |g| %.3f  %.0f tok/s  ETA %.0fs  train reg %.4f ce %.3f top1 %.3f\n",
                    step + 1, steps, arb_adamw_lr(&ao, step), gn, (double)tok_done / el,
                    el / (step + 1) * (steps - step - 1), acc_reg / (double)(acc_n ? acc_n : 1),
                    acc_ce / (double)(acc_n ? acc_n : 1), (double)acc_top1 / (double)(acc_n ? acc_n : 1));
            acc_reg = acc_ce = 0, acc_n = acc_top1 = 0;
        }
        if (n_ev && ((o->eval_every > 0 && (step + 1) % o->eval_every == 0) || last)) {
            eagle_evaluate(T, ws, ranks, &ev);
            fprintf(stderr, "eval step %d (%ld held-out positions): reg %.4f ce %.3f top1 %.3f top5 %.3f\n", step + 1,
                    ev.n, ev.reg, ev.ce, ev.top1, ev.top5);
        }
    }
    double train_s = now_s() - t0;
    arb_heads_meta meta = {0};
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%s", sha);
    snprintf(meta.base_name, sizeof meta.base_name, "%s", model_name);
    snprintf(meta.data_sha256, sizeof meta.data_sha256, "%s", T->d->sha256);
    meta.seed = o->seed;
    meta.rows = pos_tr;
    meta.heldout_rows = (uint64_t)ev.n;
    meta.top1[0] = (float)ev.top1, meta.top5[0] = (float)ev.top5;
    for (int k = 0; k < ARB_HEADS_RANKS; k++)
        meta.rank_acc[0][k] = (float)ev.rank_acc[k];
    snprintf(meta.config, sizeof meta.config,
             "{\"kind\":\"eagle\",\"steps\":%d,\"batch_sequences\":%d,\"lr\":%g,\"betas\":[0.9,0.95],\"warmup\":%d,"
             "\"schedule\":\"cosine\",\"weight_decay\":%g,\"clip\":%g,\"w_reg\":1,\"w_cls\":%g,\"feature\":"
             "\"final-norm output\",\"n_head\":%d,\"n_head_kv\":%d,\"head_dim\":%d,\"n_ff\":%d,\"rope_base\":%g,"
             "\"input_noise\":%g,\"heldout\":%g,\"eval_rows\":%d,\"max_records\":%d,\"data\":\"%s\",\"records\":%d}",
             steps, o->batch, o->lr, ao.warmup_steps, o->wd, o->clip, o->w_cls, h->c.H, h->c.KVH, h->c.hd, h->c.F,
             h->c.rope_base, o->noise, o->heldout, o->eval_rows, o->max_records, o->data, T->d->n_rec);
    char out[4096];
    if (!o->out) {
        if ((rc = arb_medusa_default_path("eagle", model_path, sha, out, sizeof out, err)))
            goto out;
        o->out = out;
    }
    if ((rc = arb_eagle_save(o->out, h, &meta, err)))
        goto out;
    printf("train eagle: %s\n  %d steps x %d sequences in %.1f s (%.1f tok/s); held-out (%ld positions): "
           "SmoothL1 %.4f  CE %.3f  top-1 %.3f  top-5 %.3f\n",
           o->out, steps, o->batch, train_s, (double)tok_done / train_s, ev.n, ev.reg, ev.ce, ev.top1, ev.top5);
out:
    arb_adamw_release(&opt);
    arb_eagle_ws_free(ws);
    free(grad);
    free(ranks);
    free(noisy);
    return rc;
}

static int run(trainer *T, arb_err *err)
{
    opts *o = &T->o;
    char path[4096], sha[65], dpath[4096], out[4096];
    arb_model *m = NULL;
    arb_ctx *ctx = NULL;
    arb_distill_data *d = NULL;
    float *grad = NULL;
    arb_adamw opt = {0};
    int rc;
    if ((rc = arb_model_resolve(o->model, path, sizeof path, err)) || (rc = arb_sha256_file(path, sha, err)))
        return rc;
    if (!o->data) {
        if ((rc = arb_distill_default_path(path, sha, 128, dpath, sizeof dpath, err)))
            return rc;
        o->data = dpath;
    }
    if ((rc = arb_distill_load(o->data, &d, err)))
        return rc;
    T->d = d;
    {
        cJSON *j = cJSON_Parse(d->meta);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "model_sha256");
        if (!cJSON_IsString(s) || strcmp(s->valuestring, sha))
            rc = ARB_ERR(err, ARB_E_INVAL, "%s: made with model sha256 %.16s..., not %s (sha256 %.16s...)", o->data,
                         cJSON_IsString(s) ? s->valuestring : "?", path, sha);
        cJSON_Delete(j);
        if (rc)
            goto done;
    }
    arb_load_opts lo = arb_gen_load_opts();
    lo.n_threads = o->threads;
    arb_ctx_opts co = arb_ctx_default_opts();
    co.want_hidden = true;
    if ((rc = arb_model_load(path, &lo, &m, err)) || (rc = arb_ctx_new(m, &co, &ctx, err)))
        goto done;
    arb_model_info mi;
    arb_model_get_info(m, &mi);
    const int E = mi.n_embd;
    T->hid = calloc((size_t)d->n_rec + 1, sizeof *T->hid);
    T->held = calloc((size_t)d->n_rec + 1, sizeof *T->held);
    if (!T->hid || !T->held) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "train: out of memory");
        goto done;
    }
    if (o->eagle) { /* its own loop below; the data, split and hidden states are shared */
        arb_eagle_cfg ec;
        if ((rc = arb_eagle_cfg_from_model(m, &ec, err)) || (rc = arb_eagle_new(&ec, &T->eh, err)) ||
            (rc = arb_heads_lm_weights(m, &T->w_lm, &T->emb, err)))
            goto done;
        arb_eagle_init(T->eh, o->seed);
    } else {
        if ((rc = arb_heads_new(o->kind, o->K, E, mi.n_vocab, &T->h, err)))
            goto done;
        arb_heads_init(T->h, o->seed);
        int dmax = T->h->d_in[o->K - 1];
        T->x = malloc((size_t)o->batch * dmax * sizeof *T->x);
        T->y = malloc((size_t)o->batch * sizeof *T->y);
        T->ranks = malloc((size_t)o->batch * sizeof *T->ranks);
        grad = calloc(T->h->n_params, sizeof *grad);
        if (!T->x || !T->y || !T->ranks || !grad) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "train: out of memory");
            goto done;
        }
        if (o->teacher > 0 && !(T->tz = malloc((size_t)o->batch * E * sizeof *T->tz))) {
            rc = ARB_ERR(err, ARB_E_NOMEM, "train: out of memory");
            goto done;
        }
        if ((rc = arb_heads_ws_new(T->h, o->batch, &T->ws, err)) ||
            (o->teacher > 0 && (rc = arb_heads_ws_teacher(T->ws, T->h, err))) ||
            (rc = arb_heads_lm_weights(m, &T->w_lm, o->kind == ARB_HEADS_HYDRA ? &T->emb : NULL, err)))
            goto done;
    }
    /* held-out records: a hash of (seed, seq) below the share; at least one */
    for (int r = 0; r < d->n_rec; r++)
        T->held[r] = (double)(mix64(o->seed * 0x100000001b3ull ^ d->rec[r].seq) >> 11) * 0x1p-53 < o->heldout;
    if ((rc = compute_hidden(T, ctx, E, sha, err)))
        goto done;
    arb_ctx_free(ctx), ctx = NULL; /* the model stays for nothing else: free its memory early */
    size_t n_rows = 0;
    int n_used = 0, n_held_used = 0, first_used = -1;
    for (int r = 0; r < d->n_rec; r++)
        if (T->hid[r]) {
            n_rows += (size_t)d->rec[r].n_resp - 1;
            first_used = first_used < 0 ? r : first_used;
            n_used++;
            n_held_used += T->held[r];
        }
    if (n_held_used == 0 && o->heldout > 0 && first_used >= 0)
        T->held[first_used] = true, n_held_used = 1;
    T->train = malloc((n_rows + 1) * sizeof *T->train);
    T->eval = malloc((n_rows + 1) * sizeof *T->eval);
    if (!T->train || !T->eval) {
        rc = ARB_ERR(err, ARB_E_NOMEM, "train: out of memory");
        goto done;
    }
    for (int r = 0; r < d->n_rec; r++)
        for (int j = 0; T->hid[r] && j < d->rec[r].n_resp - 1; j++) {
            rowref rr = {r, j};
            if (T->held[r])
                T->eval[T->n_eval++] = rr;
            else
                T->train[T->n_train++] = rr;
        }
    if (T->n_train == 0) {
        rc = ARB_ERR(err, ARB_E_INVAL, "%s: no training rows (records with >= 2 response tokens)", o->data);
        goto done;
    }
    if (o->eagle) {
        rc = train_eagle(T, mi.name, path, sha, n_used, n_held_used, err);
        goto done;
    }
    shuffle(T->eval, T->n_eval, o->seed ^ 0xe7a1ull); /* so --eval-rows samples across records */
    size_t per_epoch = (T->n_train + (size_t)o->batch - 1) / (size_t)o->batch;
    int steps = o->steps > 0 ? o->steps : (int)(per_epoch * (size_t)o->epochs);
    arb_adamw_opts ao = arb_adamw_default_opts();
    ao.lr = o->lr;
    ao.weight_decay = o->wd;
    ao.clip = o->clip;
    ao.total_steps = steps;
    ao.warmup_steps = o->warmup >= 0 ? (o->warmup < steps ? o->warmup : steps) : steps / 20;
    if ((rc = arb_adamw_init(&opt, T->h->n_params, &ao, err)))
        goto done;
    fprintf(stderr, "train %s: %d heads on %s; %d records used (%d held out), %zu training rows, %zu held-out rows; "
                    "%d steps x %d rows (%.2f epochs), %zu parameters; loss %s\n",
            arb_heads_kind_name(o->kind), o->K, mi.name, n_used, n_held_used, T->n_train, T->n_eval, steps,
            o->batch, (double)steps * o->batch / (double)T->n_train, T->h->n_params,
            o->teacher > 0 ? "with the teacher's law (--teacher)" : "CE of the token");
    double t0 = now_s(), loss_acc[ARB_HEADS_MAX] = {0};
    long loss_n[ARB_HEADS_MAX] = {0};
    size_t cursor = T->n_train; /* forces a shuffle on the first step */
    uint64_t epoch = 0;
    eval_res ev = {0};
    for (int step = 0; step < steps; step++) {
        memset(grad, 0, T->h->n_params * sizeof *grad);
        rowref batch[4096];
        int B = 0;
        while (B < o->batch) {
            if (cursor >= T->n_train) { /* a new epoch, its own order */
                shuffle(T->train, T->n_train, o->seed ^ (epoch << 32));
                cursor = 0;
                epoch++;
            }
            batch[B++] = T->train[cursor++];
        }
        for (int k = 0; k < o->K; k++) {
            int nv = 0;
            for (int i = 0; i < B; i++) {
                build_x(T, k, &batch[i], T->x + (size_t)i * T->h->d_in[k]);
                T->y[i] = target(T, k, &batch[i]);
                nv += T->y[i] >= 0;
                if (T->tz)
                    teacher_row(T, k, &batch[i], T->tz + (size_t)i * E);
            }
            if (!nv)
                continue;
            /* loss = Σ_k w_k mean_i L_ik, w_k = 0.8^k (1-based k); L = CE of the token, or with
               --teacher A: (1 - A) CE(token) + A CE(teacher's law) */
            double l = arb_heads_step_teacher(T->h, k, T->w_lm, T->x, T->y, T->tz, (float)o->teacher, B,
                                              head_weight(k) / (float)nv, grad, T->ws, NULL);
            loss_acc[k] += l;
            loss_n[k] += nv;
        }
        double gn = arb_adamw_step(&opt, T->h->params, grad);
        bool last = step + 1 == steps;
        if ((step + 1) % 50 == 0 || last) {
            double el = now_s() - t0;
            fprintf(stderr, "step %d/%d lr %.2e |g| %.3f  %.0f rows/s  ETA %.0fs  train loss", step + 1, steps,
                    arb_adamw_lr(&ao, step), gn, (double)(step + 1) * o->batch / el,
                    el / (step + 1) * (steps - step - 1));
            for (int k = 0; k < o->K; k++) {
                fprintf(stderr, " %.3f", loss_n[k] ? loss_acc[k] / (double)loss_n[k] : 0.0);
                loss_acc[k] = 0;
                loss_n[k] = 0;
            }
            fprintf(stderr, "\n");
        }
        if (T->n_eval && ((o->eval_every > 0 && (step + 1) % o->eval_every == 0) || last)) {
            evaluate(T, &ev);
            print_eval(T, &ev, step + 1);
        }
    }
    double train_s = now_s() - t0;
    /* the file */
    arb_heads_meta meta = {0};
    snprintf(meta.base_sha256, sizeof meta.base_sha256, "%s", sha);
    snprintf(meta.base_name, sizeof meta.base_name, "%s", mi.name);
    snprintf(meta.data_sha256, sizeof meta.data_sha256, "%s", d->sha256);
    meta.seed = o->seed;
    meta.rows = T->n_train;
    meta.heldout_rows = T->n_eval < (size_t)o->eval_rows ? T->n_eval : (size_t)o->eval_rows;
    for (int k = 0; k < o->K; k++) {
        meta.top1[k] = (float)ev.top1[k];
        meta.top5[k] = (float)ev.top5[k];
        for (int r = 0; r < ARB_HEADS_RANKS; r++)
            meta.rank_acc[k][r] = (float)ev.rank_acc[k][r];
    }
    snprintf(meta.config, sizeof meta.config,
             "{\"kind\":\"%s\",\"heads\":%d,\"steps\":%d,\"batch\":%d,\"lr\":%g,\"warmup\":%d,\"schedule\":\"cosine\","
             "\"weight_decay\":%g,\"clip\":%g,\"head_weights\":\"0.8^k\",\"teacher\":%g,\"heldout\":%g,"
             "\"eval_rows\":%d,\"max_records\":%d,\"data\":\"%s\",\"records\":%d}",
             arb_heads_kind_name(o->kind), o->K, steps, o->batch, o->lr, ao.warmup_steps, o->wd, o->clip, o->teacher,
             o->heldout, o->eval_rows, o->max_records, o->data, d->n_rec);
    if (!o->out) {
        if ((rc = arb_medusa_default_path(arb_heads_kind_name(o->kind), path, sha, out, sizeof out, err)))
            goto done;
        o->out = out;
    }
    if ((rc = arb_heads_save(o->out, T->h, &meta, err)))
        goto done;
    printf("train %s: %s\n  %d steps x %d rows in %.1f s (%.1f rows/s, %d heads); held-out (%llu rows):\n",
           arb_heads_kind_name(o->kind), o->out, steps, o->batch, train_s, (double)steps * o->batch / train_s, o->K,
           (unsigned long long)meta.heldout_rows);
    for (int k = 0; k < o->K; k++)
        printf("  head %d (token t+%d): loss %.3f  top-1 %.3f  top-5 %.3f\n", k + 1, k + 2, ev.loss[k], ev.top1[k],
               ev.top5[k]);
done:
    arb_adamw_release(&opt);
    free(grad);
    trainer_release(T);
    arb_distill_free(d);
    arb_ctx_free(ctx);
    arb_model_free(m);
    return rc;
}

int arb_cmd_train(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "nde")) /* the NDE selector: cmd_nde.c */
        return arb_cmd_nde_train(argc - 1, argv + 1);
    trainer T = {0};
    int prc = parse_opts(argc, argv, &T.o);
    if (prc)
        return prc == 1 ? 0 : 2;
    arb_err err = {0};
    int rc = run(&T, &err);
    if (rc)
        fprintf(stderr, "arbor train: %s\n", err.msg);
    return rc ? 1 : 0;
}
