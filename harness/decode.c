/* decode.c — the step loop (see decode.h; docs/spec/drafting.md §1.1, §1.6–1.8). */
#include "decode.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arguard.h"
#include "drafters/drafter.h"
#include "drafters/tr.h"
#include "sample.h"
#include "tree.h"
#include "verifiers/verifier.h"

#define PREFILL_CHUNK 64

struct arb_decoder {
    arb_ctx *ctx;
    const arb_model *model;
    int V;
    arb_method_spec spec;
    const arb_drafter_i *dr;
    void *dst;                /* drafter state */
    bool new_run;             /* next prompt starts a run (hot-start tables cleared) */
    arb_tree tree;
    int rows;                 /* logits rows = max(tree cap, prefill chunk) */
    /* What each eval asks the engine for (docs/gpu.md "No logits round trip"): full rows
       only for a consumer that reads them, else each node's top-K (the drafter harvests)
       or argmax (greedy verification), computed where the logits are. */
    bool want_rows;           /* T > 0 (sampling verifiers, pick_token's draw): every step's
                                 rows and the prefill's last row */
    float *stop_row;          /* [V] a drafter with stop_logits at T = 0 on a device: the stop
                                 node's row, fetched alone after verification
                                 (arb_eval_logits_row) */
    bool rows_now;            /* this generation's evals return full rows: want_rows, or
                                 stop_logits on a CPU context (its rows cost nothing extra
                                 there, and fetching one would recompute a head row) */
    float *logits;            /* [rows * V] when want_rows or after a full_rows run; else NULL */
    int32_t *nt, *path, *prev, *chain_parent, *chain_path; /* [rows] */
    int32_t *amax;            /* [rows] argmax per node (greedy without a harvest) */
    bool want_topk;
    int K;
    int32_t *topk_ids;        /* [rows * K] */
    float *topk_sc;
    double *pi;               /* [V] sampling law (T > 0) */
    int32_t *pidx;            /* [V] top-p scratch */
    int32_t *S;               /* committed sequence */
    int S_cap, n_S;
    int32_t *gen;             /* generated ids */
    int gen_cap;
    /* Every step's tree is verified through the verifier table (verifiers/verifier.h): "greedy"
       at T = 0, the method's verifier for speculative sampling (drafter with q_rows, T > 0,
       docs/spec/verification.md §0.5). */
    arb_verifier *vf;         /* NULL only for AR sampling (drafter none, T > 0): no tree */
    bool sampling;            /* vf is the sampling verifier: p (and q) rows are processed */
    double *P;                /* [tree cap * V] processed target laws (sampling only), row v
                                 processed when the verifier first reads it (p_row_lazy) */
    uint8_t *p_done;          /* [tree cap] row v of P is processed for this step */
    bool fetch_p;             /* this generation's sampling steps return no rows: each law's
                                 logits row is fetched alone (arb_eval_logits_row) when read */
    arb_sampling p_sm;        /* the step's PROCESS parameters */
    float *p_fetch;           /* [V] the fetched row (fetch_p) */
    int p_rc;                 /* first error of a fetch inside the verifier (ARB_OK: none) */
    arb_err p_err;
    int32_t *P_idx;           /* [tree cap * V] their top-k/top-p scratch, one row each (NULL
                                 when neither is on): rows may be processed in parallel */
    float *hid;               /* [rows * n_embd] hidden rows for a drafter with a hidden slot, else NULL */
    int E;
    arb_arguard guard;        /* spec.ar_guard: AR steps while speculation measures slower */
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double cpu_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

uint64_t arb_decode_hash(const int32_t *ids, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) {
            h ^= ((uint32_t)ids[i] >> (8 * b)) & 0xffu;
            h *= 1099511628211ull;
        }
    return h;
}

arb_decode_opts arb_decode_default_opts(void)
{
    return (arb_decode_opts){.max_new = 128, .prompt_id = 0, .stop_at_eos = true};
}

void arb_decoder_free(arb_decoder *d)
{
    if (!d)
        return;
    if (d->dr && d->dst)
        d->dr->destroy(d->dst);
    arb_tree_release(&d->tree);
    free(d->logits);
    free(d->stop_row);
    free(d->nt);
    free(d->path);
    free(d->prev);
    free(d->chain_parent);
    free(d->chain_path);
    free(d->amax);
    free(d->topk_ids);
    free(d->topk_sc);
    free(d->pi);
    free(d->pidx);
    free(d->S);
    free(d->gen);
    arb_verifier_free(d->vf);
    free(d->P);
    free(d->P_idx);
    free(d->p_done);
    free(d->p_fetch);
    free(d->hid);
    free(d);
}

int arb_decoder_new(arb_ctx *target, const arb_method_spec *s, arb_decoder **out, arb_err *err)
{
    *out = NULL;
    int rc = arb_method_spec_validate(s, err);
    if (rc)
        return rc;
    arb_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return ARB_ERR(err, ARB_E_NOMEM, "decoder: out of memory");
    d->ctx = target;
    d->model = arb_ctx_model(target);
    arb_model_info mi;
    arb_model_get_info(d->model, &mi);
    d->V = mi.n_vocab;
    d->E = mi.n_embd;
    d->spec = *s;
    d->new_run = true;
    arb_arguard_init(&d->guard);
    d->dr = arb_drafter_find(s->drafter);
    int cap = arb_method_max_nodes(s);
    d->rows = cap > PREFILL_CHUNK ? cap : PREFILL_CHUNK;
    d->want_topk = d->dr->harvest != NULL;
    d->K = s->topk;
    d->sampling = d->dr->q_rows && s->temperature > 0; /* speculative sampling */
    d->want_rows = s->temperature > 0;
    size_t r = (size_t)d->rows;
    rc = arb_tree_init(&d->tree, cap, err);
    if (!rc)
        rc = d->dr->create(s, d->V, &d->dst, err);
    if (!rc) {
        if (d->want_rows)
            d->logits = malloc(r * d->V * sizeof *d->logits);
        if (d->dr->stop_logits && !d->want_rows) /* used on a device, or with fetch_stop_row */
            d->stop_row = malloc((size_t)d->V * sizeof *d->stop_row);
        d->nt = malloc(r * sizeof *d->nt);
        d->amax = malloc(r * sizeof *d->amax);
        d->path = malloc(r * sizeof *d->path);
        d->prev = malloc(r * sizeof *d->prev);
        d->chain_parent = malloc(r * sizeof *d->chain_parent);
        d->chain_path = malloc(r * sizeof *d->chain_path);
        d->topk_ids = malloc(r * d->K * sizeof *d->topk_ids);
        d->topk_sc = malloc(r * d->K * sizeof *d->topk_sc);
        if (s->temperature > 0) {
            d->pi = malloc((size_t)d->V * sizeof *d->pi);
            d->pidx = malloc((size_t)d->V * sizeof *d->pidx);
        }
        const bool no_stop_row = d->dr->stop_logits && !d->want_rows && !d->stop_row;
        if ((d->want_rows && !d->logits) || no_stop_row || !d->nt || !d->amax || !d->path || !d->prev ||
            !d->chain_parent || !d->chain_path || !d->topk_ids || !d->topk_sc ||
            (s->temperature > 0 && (!d->pi || !d->pidx)))
            rc = ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot allocate buffers for %d rows x %d vocab", d->rows, d->V);
    }
    if (!rc && d->dr->hidden && !(d->hid = malloc(r * (size_t)d->E * sizeof *d->hid)))
        rc = ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot allocate %d hidden rows", d->rows);
    if (!rc && d->dr->bind)
        rc = d->dr->bind(d->dst, target, err);
    if (!rc && (s->temperature <= 0 || d->sampling)) {
        arb_verifier_opts vo = arb_verifier_default_opts();
        vo.V = d->V;
        vo.n_nodes_max = cap;
        vo.typical_eps = s->typical_eps;
        vo.typical_alpha = s->typical_alpha;
        vo.greedy_first_match = s->verify_first_match;
        /* [CHOICE] at T = 0 every law is one-hot and the verifier is greedy whatever the
           method names (validation lets a T = 0 sweep keep its sampling verifier's name) */
        rc = arb_verifier_new(d->sampling ? s->verifier : "greedy", &vo, &d->vf, err);
        if (!rc && d->sampling &&
            (!(d->P = malloc((size_t)cap * d->V * sizeof *d->P)) || !(d->p_done = calloc((size_t)cap, 1)) ||
             !(d->p_fetch = malloc((size_t)d->V * sizeof *d->p_fetch))))
            rc = ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot allocate %d x %d target laws", cap, d->V);
        if (!rc && d->sampling && (s->top_k > 0 || s->top_p < 1) &&
            !(d->P_idx = malloc((size_t)cap * d->V * sizeof *d->P_idx)))
            rc = ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot allocate %d x %d top-k/top-p scratch", cap, d->V);
    }
    if (rc) {
        arb_decoder_free(d);
        return rc;
    }
    for (int i = 0; i < d->rows; i++) {
        d->chain_parent[i] = i - 1;
        d->chain_path[i] = i;
    }
    *out = d;
    return ARB_OK;
}

void arb_decoder_reset_run(arb_decoder *d)
{
    d->new_run = true;
    arb_arguard_init(&d->guard); /* AR's rate too: a run may change the context length's range */
}
const arb_method_spec *arb_decoder_spec(const arb_decoder *d) { return &d->spec; }
size_t arb_decoder_table_bytes(const arb_decoder *d) { return d->dst ? d->dr->bytes(d->dst) : 0; }

static int stat_slot(int src)
{
    switch (src) {
    case ARB_SRC_PLD: return ARB_STAT_PLD;
    case ARB_SRC_TR: return ARB_STAT_TR;
    case ARB_SRC_DRAFT: return ARB_STAT_DRAFT;
    case ARB_SRC_HEAD: return ARB_STAT_HEAD;
    case ARB_SRC_LADE_GUESS: return ARB_STAT_LADE;
    case ARB_SRC_LADE_WINDOW: return ARB_STAT_LADE_WINDOW;
    case ARB_SRC_REST: return ARB_STAT_REST;
    default: return -1;
    }
}

/* Next token from one logits row: argmax at T = 0, else a draw from the processed law. */
static int32_t pick_token(arb_decoder *d, const float *row, int prompt_id, int step)
{
    if (d->spec.temperature <= 0)
        return arb_topk_argmax(row, d->V);
    arb_sampling sm = {.temperature = d->spec.temperature, .top_k = d->spec.top_k, .top_p = d->spec.top_p};
    arb_sample_process(row, d->V, &sm, d->pi, d->pidx);
    arb_rng rng;
    arb_rng_init(&rng, d->spec.seed, (uint32_t)prompt_id, (uint32_t)step, ARB_STREAM_SAMPLE);
    int tok = arb_sample_w(&rng, d->pi, d->V);
    return tok >= 0 ? tok : arb_topk_argmax(row, d->V);
}

static void topk_row(void *ud, int i, int n)
{
    arb_decoder *d = ud;
    arb_topk_softmax(d->logits + (size_t)i * d->V, d->V, d->K, d->topk_ids + (size_t)i * d->K,
                     d->topk_sc + (size_t)i * d->K);
}

/* fn for each of n logits rows, one row per task on the target's kernel threads: a row is a
   read of 4V bytes (~12 MB for 60 nodes) that one core cannot stream fast enough
   (bench-harness). A single row (AR steps) stays on the caller. */
static void per_row(arb_decoder *d, int n, void (*fn)(void *ud, int i, int n))
{
    if (n == 1)
        fn(d, 0, 1);
    else
        arb_ctx_parallel_for(d->ctx, n, fn, d);
}

/* Node `node`'s logits row of the last eval for a drafter's stop_logits: from the rows the
   eval returned when it returned them (T > 0, the full_rows hook), else that one row alone
   from the engine (greedy: the eval returned an argmax or a top-K). */
static int stop_logits_row(arb_decoder *d, int node, bool rows_here, const float **row, arb_err *err)
{
    if (rows_here) {
        *row = d->logits + (size_t)node * d->V;
        return ARB_OK;
    }
    float *buf = d->stop_row ? d->stop_row : d->p_fetch; /* p_fetch: sampling with fetch_p */
    *row = buf;
    return arb_eval_logits_row(d->ctx, node, buf, err);
}

/* Top-K + softmax of every evaluated row on the host (the full_rows path only). */
static void topk_rows(arb_decoder *d, int n) { per_row(d, n, topk_row); }

/* One eval of n nodes with the narrowest output its consumers read: full rows when
   `rows` (d->rows_now, or the full_rows hook), the top-K when the drafter harvests (its
   first column is the greedy argmax), else the argmax at T = 0. The full_rows hook is
   the path before arb_eval_out.topk: every row to the host, the top-K computed here. */
static int eval_nodes(arb_decoder *d, const int32_t *tok, const int32_t *parent, int n, bool rows, bool full_rows,
                      arb_err *err)
{
    arb_eval_out out = {.hidden = d->hid, .logits = rows || full_rows ? d->logits : NULL};
    if (!full_rows && d->want_topk) {
        out.topk_k = d->K;
        out.topk_ids = d->topk_ids;
        out.topk_p = d->topk_sc;
    } else if (!full_rows && !out.logits) {
        out.argmax = d->amax; /* at T > 0 only for a prefill chunk before the last: an eval
                                 returns something, and an argmax is the cheapest. With rows
                                 (a stop_logits drafter on the CPU) the greedy walk takes the
                                 argmax of the rows it visits only, as on the full_rows path:
                                 the engine's would cover every node of a 63-node tree */
    }
    int rc = arb_eval_ex(d->ctx, tok, parent, n, &out, err);
    if (!rc && full_rows && d->want_topk)
        topk_rows(d, n);
    return rc;
}

/* PROCESS of every row up front on the target's kernel threads, for a verifier that reads
   them all (arb_verifier_i.p_all_rows): rows are independent, the same laws whatever the
   thread count. */
static void process_row(void *ud, int i, int n)
{
    arb_decoder *d = ud;
    const size_t off = (size_t)i * d->V;
    arb_sample_process(d->logits + off, d->V, &d->p_sm, d->P + off, d->P_idx ? d->P_idx + off : NULL);
    d->p_done[i] = 1;
    (void)n;
}

/* The verifier's row v of the target laws (arb_verify_in.p_row): PROCESS of node v's
   logits on first read, from the eval's rows, or (fetch_p) from the row fetched alone. A
   verifier walking the tree top-down reads the rows of the nodes it reaches, not all n
   (NSS at 10.6 nodes and τ 1.4 processed 10.6 rows per step before, ~2.4 now; on a GPU only
   those rows cross to the host). A failed fetch leaves a one-hot law (the step is discarded
   after the verifier returns: p_rc). */
static const double *p_row_lazy(void *ud, int v)
{
    arb_decoder *d = ud;
    double *dst = d->P + (size_t)v * d->V;
    if (d->p_done[v])
        return dst;
    d->p_done[v] = 1;
    const float *row = d->logits + (size_t)v * d->V;
    if (d->fetch_p) {
        const int rc = d->p_rc ? d->p_rc : arb_eval_logits_row(d->ctx, v, d->p_fetch, &d->p_err);
        if (rc) {
            d->p_rc = rc;
            memset(dst, 0, (size_t)d->V * sizeof *dst);
            dst[0] = 1;
            return dst;
        }
        row = d->p_fetch;
    }
    arb_sample_process(row, d->V, &d->p_sm, dst, d->P_idx ? d->P_idx + (size_t)v * d->V : NULL);
    return dst;
}

/* The verifier's row pool (arb_verify_in.for_rows): the target's kernel threads. */
static void rows_on_target(void *pool, int n, void (*fn)(void *ud, int i, int n), void *ud)
{
    arb_ctx_parallel_for(pool, n, fn, ud);
}

static int ensure_capacity(arb_decoder *d, int n_prompt, int max_new, bool full_rows, arb_err *err)
{
    if ((full_rows || d->rows_now) && !d->logits && !(d->logits = malloc((size_t)d->rows * d->V * sizeof *d->logits)))
        return ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot allocate %d rows x %d vocab", d->rows, d->V);
    int need = n_prompt + max_new + d->tree.cap + 2;
    if (need > d->S_cap) {
        int32_t *s = realloc(d->S, (size_t)need * sizeof *s);
        if (!s)
            return ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot hold %d tokens", need);
        d->S = s;
        d->S_cap = need;
    }
    if (max_new + d->tree.cap + 1 > d->gen_cap) {
        int g = max_new + d->tree.cap + 1;
        int32_t *p = realloc(d->gen, (size_t)g * sizeof *p);
        if (!p)
            return ARB_ERR(err, ARB_E_NOMEM, "decoder: cannot hold %d tokens", g);
        d->gen = p;
        d->gen_cap = g;
    }
    return ARB_OK;
}

/* Append committed tokens (stops at EOS / max_new); returns how many were kept. */
static int push_tokens(arb_decoder *d, const int32_t *tok, int n, const arb_decode_opts *o,
                       const arb_decode_cb *cb, arb_prompt_result *res, bool *done)
{
    int kept = 0;
    for (int i = 0; i < n && !*done; i++) {
        d->S[d->n_S++] = tok[i];
        d->gen[res->n_generated++] = tok[i];
        kept++;
        if (cb && cb->on_token && cb->on_token(tok[i], cb->ud))
            *done = true;
        if (o->stop_at_eos && arb_token_is_eog(d->model, tok[i])) {
            res->stopped_eos = true;
            *done = true;
        }
        if (res->n_generated >= o->max_new)
            *done = true;
    }
    d->dr->append(d->dst, tok, kept);
    return kept;
}

/* The prompt in chunks of d->rows; the last chunk's outputs (rows, top-K, argmax) stay
   in the decoder's buffers for the first token. */
static int prefill(arb_decoder *d, const int32_t *prompt, int n_prompt, bool full_rows, arb_err *err)
{
    /* Nothing reads the other prompt tokens' outputs: one engine prefill, the output head
       for the last token only, its outputs in the row the loop below would leave them in.
       Not when the drafter harvests the prompt, on the full_rows hook, or when a stop_logits
       drafter fetches the last row afterwards (arb_eval_logits_row needs a whole eval). */
    const bool harvests = d->want_topk && d->spec.harvest_prefill;
    if (!full_rows && !harvests && !(d->dr->stop_logits && !d->rows_now)) {
        const size_t last = (size_t)((n_prompt - 1) % d->rows);
        arb_eval_out out = {.hidden = d->hid ? d->hid + last * d->E : NULL,
                            .logits = d->rows_now ? d->logits + last * d->V : NULL};
        if (d->want_topk) {
            out.topk_k = d->K;
            out.topk_ids = d->topk_ids + last * d->K;
            out.topk_p = d->topk_sc + last * d->K;
        } else if (!out.logits) {
            out.argmax = d->amax + last;
        }
        return arb_prefill_ex(d->ctx, prompt, n_prompt, &out, err);
    }
    for (int c0 = 0; c0 < n_prompt; c0 += d->rows) {
        int n = n_prompt - c0 < d->rows ? n_prompt - c0 : d->rows;
        int rc = eval_nodes(d, prompt + c0, d->chain_parent, n, d->rows_now && c0 + n == n_prompt, full_rows, err);
        if (rc)
            return rc;
        if (harvests) {
            for (int i = 0; i < n; i++)
                d->prev[i] = c0 + i > 0 ? prompt[c0 + i - 1] : -1;
            arb_harvest h = {.n = n, .K = d->K, .tok = prompt + c0, .prev = d->prev, .ids = d->topk_ids,
                             .scores = d->topk_sc};
            d->dr->harvest(d->dst, &h);
        }
        if ((rc = arb_commit(d->ctx, d->chain_path, n, err)))
            return rc;
    }
    return ARB_OK;
}

/* Ranks along the accepted path (docs/results-db.md "Ranks"): every ranked child of a path node
   (anchor .. stop node, np nodes) is one trial of its rank; the child the walk took is a hit.
   The stop node's children are all misses (none is the target's token). A spine/PLD child is
   not a ranked candidate: taking it records rank -1 and offers nothing. */
void arb_decode_record_ranks(const arb_tree *t, const int32_t *path, int np, arb_step_record *rec)
{
    for (int i = 0; i < np; i++) {
        int next = i + 1 < np ? path[i + 1] : -1;
        for (int c = t->first_child[path[i]]; c >= 0; c = t->next_sibling[c]) {
            int r = t->rank[c];
            bool ranked = r >= 0 && !(t->flags[c] & (ARB_NODE_SPINE | ARB_NODE_NOACCEPT)) &&
                          t->source[c] != ARB_SRC_PLD;
            if (c == next && i < ARB_RANK_PATH_MAX)
                rec->acc_rank[rec->n_acc_rank++] = (int8_t)(ranked && r < 128 ? r : -1);
            if (!ranked || r >= ARB_RANK_MAX)
                continue;
            rec->rank_offer[r]++;
            rec->rank_hit[r] += c == next;
        }
    }
}

static void classify(const arb_tree *t, const int32_t *path, int k, arb_step_record *rec)
{
    for (int i = 1; i < t->n; i++) {
        int s = stat_slot(t->source[i]);
        if (s >= 0)
            rec->prop_by_src[s]++;
        rec->n_spine += (t->flags[i] & ARB_NODE_SPINE) != 0;
    }
    bool all_spine = true;
    for (int i = 1; i <= k; i++) {
        int v = path[i], s = stat_slot(t->source[v]);
        if (s >= 0)
            rec->acc_by_src[s]++;
        rec->acc_spine += (t->flags[v] & ARB_NODE_SPINE) != 0;
        all_spine = all_spine && ((t->flags[v] & ARB_NODE_SPINE) || t->source[v] == ARB_SRC_PLD);
    }
    rec->spine_break_depth = rec->acc_spine < rec->n_spine ? rec->acc_spine + 1 : -1;
    if (k == 0) {
        rec->category = ARB_CAT_NONE;
        return;
    }
    int f = path[1];
    bool f_sp = (t->flags[f] & ARB_NODE_SPINE) || t->source[f] == ARB_SRC_PLD;
    if (f_sp)
        rec->category = all_spine ? ARB_CAT_PURE_PLD : ARB_CAT_SPINE_CONT;
    else
        rec->category = t->source[f] == ARB_SRC_TR ? ARB_CAT_PURE_TR : ARB_CAT_OTHER;
}

int arb_decoder_generate(arb_decoder *d, const int32_t *prompt, int n_prompt, const arb_decode_opts *o,
                         const arb_decode_cb *cb, arb_prompt_result *res, arb_err *err)
{
    memset(res, 0, sizeof *res);
    arb_decode_opts dflt = arb_decode_default_opts();
    if (!o)
        o = &dflt;
    if (n_prompt < 1 || o->max_new < 1)
        return ARB_ERR(err, ARB_E_INVAL, "generate: prompt of %d tokens, max_new %d (both must be >= 1)", n_prompt,
                       o->max_new);
    d->rows_now = d->want_rows || (d->dr->stop_logits && !o->fetch_stop_row && !arb_ctx_on_device(d->ctx));
    d->fetch_p = d->sampling && !o->full_rows && (o->fetch_p_rows || arb_ctx_on_device(d->ctx));
    /* the prefill's last row comes back whenever rows_now (the first token is drawn from it);
       a step's rows only without fetch_p */
    const bool step_rows = (d->rows_now && !d->fetch_p) || o->full_rows;
    int rc = ensure_capacity(d, n_prompt, o->max_new, o->full_rows, err);
    if (!rc)
        rc = d->dr->begin(d->dst, n_prompt + o->max_new + d->tree.cap + 2, d->new_run, err);
    if (rc)
        return rc;
    d->new_run = false;
    arb_arguard_begin_prompt(&d->guard);
    rc = arb_ctx_truncate(d->ctx, 0);
    if (rc)
        return ARB_ERR(err, rc, "generate: cannot reset the context");
    res->n_prompt = n_prompt;
    double t_start = now_us(), cpu_start = cpu_now_us();
    /* Prefill: one target call producing one token (docs/spec/drafting.md §1.1). */
    if ((rc = prefill(d, prompt, n_prompt, o->full_rows, err)))
        return rc;
    int last = (n_prompt - 1) % d->rows;
    int32_t first; /* greedy: the argmax, from the engine's top-K or argmax unless rows came back */
    if (d->rows_now || o->full_rows)
        first = pick_token(d, d->logits + (size_t)last * d->V, o->prompt_id, 0);
    else
        first = d->want_topk ? d->topk_ids[(size_t)last * d->K] : d->amax[last];
    if (d->hid)
        d->dr->hidden(d->dst, d->hid + (size_t)last * d->E);
    if (d->dr->stop_logits) {
        const float *row;
        if ((rc = stop_logits_row(d, last, d->rows_now || o->full_rows, &row, err)))
            return rc;
        d->dr->stop_logits(d->dst, row, d->V);
    }
    memcpy(d->S, prompt, (size_t)n_prompt * sizeof *prompt);
    d->n_S = n_prompt;
    d->dr->append(d->dst, prompt, n_prompt);
    res->n_target_calls = 1;
    bool done = false;
    push_tokens(d, &first, 1, o, cb, res, &done);
    res->prefill_us = now_us() - t_start;
    arb_tree *t = &d->tree;
    for (int step = 0; !done; step++) {
        arb_step_record rec = {0};
        rec.step = step;
        rec.L_cache = d->n_S - 1;
        rec.topology_id = -1;
        rec.spine_break_depth = -1;
        double t0 = now_us();
        arb_tree_reset(t, d->S[d->n_S - 1]);
        const bool ar_step = d->spec.ar_guard && arb_arguard_ar_step(&d->guard);
        if (ar_step) { /* the anchor alone: a plain AR step (the drafter's ar_steps contract) */
            rec.mode = ARB_MODE_AR;
            rec.ar_guard = true;
        } else {
            if (d->dr->set_step)
                d->dr->set_step(d->dst, (uint32_t)o->prompt_id, step + 1);
            d->dr->propose(d->dst, d->S, d->n_S, t, &rec);
        }
        arb_tree_finalize(t);
        double t1 = now_us();
        if ((rc = eval_nodes(d, t->tok, t->parent, t->n, d->rows_now && !d->fetch_p, o->full_rows, err)))
            return rc;
        res->n_target_calls++;
        double t2 = now_us();
        /* verify through the verifier table: greedy (argmax per node: the top-K rows' first
           column when the drafter harvests, else the engine's argmax, or from the rows on the
           full_rows path; then the walk) or a sampling verifier (rows, d->want_rows) */
        arb_verify_out vo;
        if (d->vf) {
            arb_verify_in in = {.tree = t, .logits = step_rows ? d->logits : NULL, .V = d->V,
                                .for_rows = rows_on_target, .pool = d->ctx};
            arb_rng vr;
            if (d->sampling) { /* p rows processed like q, each when the verifier reads it */
                d->p_sm = (arb_sampling){.temperature = d->spec.temperature, .top_k = d->spec.top_k,
                                         .top_p = d->spec.top_p};
                memset(d->p_done, 0, (size_t)t->n);
                d->p_rc = ARB_OK;
                /* BV, Traversal on several threads: every row up front, in parallel (2 threads
                   measured 13-28 % faster than row by row); on one, only the rows read (7-21 %
                   faster than every row: a leaf's law is read only if it is the answer) */
                if (d->vf->iface->p_all_rows && !d->fetch_p && arb_ctx_n_threads(d->ctx) > 1)
                    arb_ctx_parallel_for(d->ctx, t->n, process_row, d);
                arb_rng_init(&vr, d->spec.seed, (uint32_t)o->prompt_id, (uint32_t)(step + 1), ARB_STREAM_VERIFY);
                in.p_row = p_row_lazy;
                in.p_ud = d;
                in.q = d->dr->q_rows(d->dst);
                in.rng = &vr;
            } else if (d->want_topk) {
                in.argmax = d->topk_ids;
                in.argmax_stride = d->K;
            } else if (!o->full_rows && !d->rows_now) {
                in.argmax = d->amax;
                in.argmax_stride = 1;
            }
            if ((rc = arb_verifier_verify(d->vf, &in, &vo)))
                return ARB_ERR(err, rc, "generate: verifier %s rejected the step's tree", d->vf->iface->name);
            if (d->sampling && d->p_rc) {
                *err = d->p_err;
                arb_err_prefix(err, "generate: a target row for verifier %s", d->vf->iface->name);
                return d->p_rc;
            }
        } else { /* AR sampling (validated: drafter none) */
            vo = (arb_verify_out){.node = 0, .depth = 0, .extra = pick_token(d, d->logits, o->prompt_id, step + 1),
                                  .extra_is_bonus = 1};
        }
        int np = arb_tree_path(t, vo.node, d->path);
        double t3 = now_us();
        /* observe: harvest every node of this forward, learn from the path */
        if (d->want_topk) {
            for (int i = 0; i < t->n; i++)
                d->prev[i] = i == 0 ? (d->n_S >= 2 ? d->S[d->n_S - 2] : -1) : t->tok[t->parent[i]];
            arb_harvest h = {.n = t->n, .K = d->K, .tok = t->tok, .prev = d->prev, .ids = d->topk_ids,
                             .scores = d->topk_sc};
            d->dr->harvest(d->dst, &h);
        }
        if (d->dr->verified && !ar_step)
            d->dr->verified(d->dst, t, d->path, np, &rec);
        if (d->hid && d->dr->hidden_path) /* EAGLE: every accepted node's hidden state */
            d->dr->hidden_path(d->dst, d->hid, d->path, np, d->E);
        if (d->hid) /* the stop node's hidden state: its logits gave the bonus token */
            d->dr->hidden(d->dst, d->hid + (size_t)vo.node * d->E);
        if (d->dr->stop_logits) {
            const float *row;
            if ((rc = stop_logits_row(d, vo.node, step_rows, &row, err)))
                return rc;
            d->dr->stop_logits(d->dst, row, d->V);
        }
        double t4 = now_us();
        if ((rc = arb_commit(d->ctx, d->path, np, err)))
            return rc;
        double t5 = now_us();
        /* the accepted tokens a1..ak, then the bonus */
        int32_t *nt = d->nt;
        for (int i = 1; i < np; i++)
            nt[i - 1] = t->tok[d->path[i]];
        nt[np - 1] = vo.extra;
        rec.committed = push_tokens(d, nt, np, o, cb, res, &done);
        res->n_truncated = np - rec.committed;
        double t6 = now_us();
        rec.n_nodes = t->n;
        rec.tree_depth = t->max_depth;
        rec.stop_fanout = arb_tree_n_children(t, d->path[np - 1]);
        rec.accepted_k = np - 1;
        rec.bonus_token = vo.extra;
        classify(t, d->path, np - 1, &rec);
        if (!d->sampling) /* greedy: the accepted child is the target's token */
            arb_decode_record_ranks(t, d->path, np, &rec);
        rec.draft_us = t1 - t0;
        rec.eval_us = t2 - t1;
        rec.verify_us = t3 - t2;
        rec.update_us = (t4 - t3) + (t6 - t5); /* tables + index appends */
        rec.commit_us = t5 - t4;
        res->eval_us += rec.eval_us;
        res->harness_us += rec.draft_us + rec.verify_us + rec.update_us + rec.commit_us;
        res->n_steps++;
        if (d->spec.ar_guard)
            arb_arguard_observe(&d->guard, rec.committed, t6 - t0);
        if (cb && cb->on_step && cb->on_step(&rec, cb->ud))
            done = true;
    }
    res->wall_us = now_us() - t_start;
    res->cpu_us = cpu_now_us() - cpu_start;
    res->ids = d->gen;
    res->hash = arb_decode_hash(d->gen, res->n_generated);
    return ARB_OK;
}
