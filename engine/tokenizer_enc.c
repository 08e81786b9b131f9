/* tokenizer_enc.c — text to ids: special-token partition, then byte-level BPE or
 * SentencePiece BPE on each raw fragment (llama.cpp semantics, see tokenizer.c).
 *
 * Cost: the partition scans the text once per special token (memmem); merging
 * keeps candidate pairs in a binary heap, so a word of n bytes costs O(n log n)
 * and long inputs stay linear in the number of words. encode allocates its
 * scratch per call (it is not on the decode hot path) and frees it on return.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdlib.h>
#include <string.h>

#include "tokenizer_int.h"
#include "unicode.h"

/* ---- growable scratch ---- */

typedef struct frag { int32_t tok; size_t off, len; } frag; /* tok >= 0: a special token; else raw text */
typedef struct sym { int32_t prev, next; uint32_t start, n; } sym;  /* n == 0: merged away */
typedef struct pair { float pri; int32_t left, right; uint32_t size; } pair;

typedef struct scratch {
    int32_t *ids; size_t n_ids, cap_ids;     /* output */
    sym *sy; size_t cap_sy;
    pair *hp; size_t n_hp, cap_hp;
    char *buf; size_t cap_buf;               /* escaped / byte-encoded text */
    uint32_t *cp; uint16_t *fl; uint32_t *boff; int32_t *seg_a, *seg_b; size_t cap_cp;
    char *clean; size_t cap_clean;           /* UTF-8 re-encoded fragment */
    bool oom;
} scratch;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}
#define GROW(sc, ptr, cap, need) (grow((void **)&(sc)->ptr, &(sc)->cap, (need), sizeof *(sc)->ptr) || ((sc)->oom = true, false))

static void push_id(scratch *sc, int32_t id) {
    if (!GROW(sc, ids, cap_ids, sc->n_ids + 1)) return;
    sc->ids[sc->n_ids++] = id;
}

/* ---- heap of candidate merges: highest pri first, ties leftmost first ---- */

static bool before(const pair *a, const pair *b) { return a->pri > b->pri || (a->pri == b->pri && a->left < b->left); }

static void heap_push(scratch *sc, pair p) {
    if (!GROW(sc, hp, cap_hp, sc->n_hp + 1)) return;
    size_t i = sc->n_hp++;
    while (i > 0 && before(&p, &sc->hp[(i - 1) / 2])) {
        sc->hp[i] = sc->hp[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    sc->hp[i] = p;
}

static pair heap_pop(scratch *sc) {
    pair top = sc->hp[0], last = sc->hp[--sc->n_hp];
    size_t i = 0, n = sc->n_hp;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&sc->hp[c + 1], &sc->hp[c])) c++;
        if (!before(&sc->hp[c], &last)) break;
        sc->hp[i] = sc->hp[c];
        i = c;
    }
    if (n) sc->hp[i] = last;
    return top;
}

/* Candidate pair (l, r) over the text in sc->buf: BPE uses the merge rank,
   SPM the score of the concatenation's token. */
static void try_pair(const arb_tokenizer *t, scratch *sc, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const sym *a = &sc->sy[l], *b = &sc->sy[r];
    const char *s = sc->buf + a->start;
    pair p = {0, l, r, a->n + b->n};
    if (t->kind == ARB_TOK_BPE) {
        int rank = arb_tokenizer_merge_rank(t, s, a->n, sc->buf + b->start, b->n);
        if (rank < 0) return;
        p.pri = -(float)rank; /* exact: ranks < 2^24 */
    } else {
        int32_t id = arb_tokenizer_find(t, s, p.size);
        if (id < 0) return;
        p.pri = t->score[id];
    }
    heap_push(sc, p);
}

/* Merge the symbols sy[0..n) (a chain over sc->buf) until no candidate is left. */
static void merge_all(const arb_tokenizer *t, scratch *sc, int n) {
    sc->n_hp = 0;
    for (int i = 1; i < n; i++) try_pair(t, sc, i - 1, i);
    while (sc->n_hp && !sc->oom) {
        pair p = heap_pop(sc);
        sym *l = &sc->sy[p.left], *r = &sc->sy[p.right];
        /* stale if either side changed since the pair was queued */
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sc->sy[r->next].prev = p.left;
        try_pair(t, sc, l->prev, p.left);
        try_pair(t, sc, p.left, l->next);
    }
}

/* Symbols: one per UTF-8 sequence of buf[0..len) (lead byte decides, no validation). */
static int split_syms(scratch *sc, size_t len) {
    if (!GROW(sc, sy, cap_sy, len + 1)) return 0;
    int n = 0;
    for (size_t off = 0; off < len; n++) {
        size_t k = arb_utf8_len((uint8_t)sc->buf[off]);
        if (k > len - off) k = len - off;
        sc->sy[n] = (sym){n - 1, off + k == len ? -1 : n + 1, (uint32_t)off, (uint32_t)k};
        off += k;
    }
    return n;
}

/* ---- SentencePiece ---- */

static void spm_byte(const arb_tokenizer *t, scratch *sc, uint8_t b) {
    static const char hex[] = "0123456789ABCDEF";
    char name[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
    int32_t id = arb_tokenizer_find(t, name, 6);
    if (id < 0) id = arb_tokenizer_find(t, (const char *)&b, 1);
    if (id < 0) id = t->unk;
    if (id >= 0) push_id(sc, id);
}

static void spm_fragment(const arb_tokenizer *t, scratch *sc, const char *s, size_t len, bool prefix) {
    /* ' ' -> U+2581 (3 bytes), plus an optional leading one */
    if (!GROW(sc, buf, cap_buf, 3 * len + 3)) return;
    size_t k = 0;
    if (prefix) memcpy(sc->buf, "\xe2\x96\x81", 3), k = 3;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') memcpy(sc->buf + k, "\xe2\x96\x81", 3), k += 3;
        else sc->buf[k++] = s[i];
    }
    int n = split_syms(sc, k);
    if (!n) return;
    merge_all(t, sc, n);
    for (int i = 0; i != -1 && !sc->oom; i = sc->sy[i].next) {
        const sym *y = &sc->sy[i];
        int32_t id = arb_tokenizer_find(t, sc->buf + y->start, y->n);
        if (id >= 0) push_id(sc, id);
        else for (uint32_t j = 0; j < y->n; j++) spm_byte(t, sc, (uint8_t)sc->buf[y->start + j]);
    }
}

/* ---- byte-level BPE ---- */

static void bpe_word(const arb_tokenizer *t, scratch *sc, const char *w, size_t len) {
    if (!GROW(sc, buf, cap_buf, 2 * len + 1) || !GROW(sc, sy, cap_sy, len + 1)) return;
    size_t k = 0;
    for (size_t i = 0; i < len; i++) { /* one symbol per byte, in the GPT-2 alphabet */
        const char *e = t->byte_enc[(uint8_t)w[i]];
        size_t el = strlen(e);
        sc->sy[i] = (sym){(int32_t)i - 1, i + 1 == len ? -1 : (int32_t)i + 1, (uint32_t)k, (uint32_t)el};
        memcpy(sc->buf + k, e, el);
        k += el;
    }
    if (t->ignore_merges) {
        int32_t id = arb_tokenizer_find(t, sc->buf, k);
        if (id >= 0) { push_id(sc, id); return; }
    }
    merge_all(t, sc, (int)len);
    for (int i = 0; i != -1 && !sc->oom; i = sc->sy[i].next) {
        const sym *y = &sc->sy[i];
        int32_t id = arb_tokenizer_find(t, sc->buf + y->start, y->n);
        if (id >= 0) { push_id(sc, id); continue; }
        /* as llama.cpp: try each byte of the encoded text as a token, drop the rest */
        for (uint32_t j = 0; j < y->n; j++)
            if ((id = arb_tokenizer_find(t, sc->buf + y->start + j, 1)) >= 0) push_id(sc, id);
    }
}

/* The five per-code-point arrays share one capacity. */
static bool grow_cp(scratch *sc, size_t need) {
    if (need <= sc->cap_cp) return true;
    size_t c = sc->cap_cp ? sc->cap_cp : 64;
    while (c < need) c *= 2;
    void *p[5] = {realloc(sc->cp, c * sizeof *sc->cp), NULL, NULL, NULL, NULL};
    if (p[0]) sc->cp = p[0];
    if (p[0] && (p[1] = realloc(sc->fl, c * sizeof *sc->fl))) sc->fl = p[1];
    if (p[1] && (p[2] = realloc(sc->boff, c * sizeof *sc->boff))) sc->boff = p[2];
    if (p[2] && (p[3] = realloc(sc->seg_a, c * sizeof *sc->seg_a))) sc->seg_a = p[3];
    if (p[3] && (p[4] = realloc(sc->seg_b, c * sizeof *sc->seg_b))) sc->seg_b = p[4];
    if (!p[4]) return false;
    sc->cap_cp = c;
    return true;
}

static void bpe_fragment(const arb_tokenizer *t, scratch *sc, const char *s, size_t len) {
    if (!grow_cp(sc, len + 1) || !GROW(sc, clean, cap_clean, 3 * len + 1)) { sc->oom = true; return; }
    /* decode (invalid bytes -> U+FFFD, as llama.cpp) and re-encode */
    int n = 0;
    size_t cl = 0;
    for (size_t i = 0; i < len; n++) {
        size_t adv;
        uint32_t c = arb_utf8_decode(s + i, len - i, &adv);
        sc->cp[n] = c;
        sc->fl[n] = arb_unicode_flags(c);
        sc->boff[n] = (uint32_t)cl;
        cl += (size_t)arb_utf8_encode(c, sc->clean + cl);
        i += adv;
    }
    sc->boff[n] = (uint32_t)cl;
    int32_t *segs;
    int n_seg = arb_pretok_split((arb_pre)t->pre, sc->cp, sc->fl, n, sc->seg_a, sc->seg_b, &segs);
    int at = 0;
    for (int w = 0; w < n_seg && !sc->oom; w++) {
        bpe_word(t, sc, sc->clean + sc->boff[at], sc->boff[at + segs[w]] - sc->boff[at]);
        at += segs[w];
    }
}

/* ---- special-token partition ---- */

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Cut every occurrence of special token id out of the raw fragments of a into b. */
static bool partition_one(const arb_tokenizer *t, const char *text, const frag *a, size_t na, frag **b, size_t *nb,
                          size_t *cap_b, int32_t id) {
    const char *st = arb_tokenizer_token_text(t, id);
    const size_t sl = t->text_len[id];
    *nb = 0;
    for (size_t i = 0; i < na; i++) {
        if (!grow((void **)b, cap_b, *nb + 1, sizeof **b)) return false;
        if (a[i].tok >= 0) { (*b)[(*nb)++] = a[i]; continue; }
        size_t base = a[i].off, rem = a[i].len;
        while (rem > 0) {
            const char *m = memmem(text + base, rem, st, sl);
            if (!m) break;
            if (!grow((void **)b, cap_b, *nb + 3, sizeof **b)) return false;
            size_t mo = (size_t)(m - text), left = mo - base;
            if (t->attr[id] & A_LSTRIP)
                while (left > 0 && is_space(text[base + left - 1])) left--;
            if (left > 0) (*b)[(*nb)++] = (frag){-1, base, left};
            (*b)[(*nb)++] = (frag){id, mo, sl};
            size_t r_off = mo + sl, r_len = base + rem - r_off;
            if (t->attr[id] & A_RSTRIP)
                while (r_len > 0 && is_space(text[r_off])) r_off++, r_len--;
            base = r_off, rem = r_len;
        }
        if (rem > 0) (*b)[(*nb)++] = (frag){-1, base, rem};
    }
    return true;
}

int arb_tokenizer_encode(const arb_tokenizer *t, const char *text, size_t len, bool add_bos, bool parse_special,
                         int32_t *out, int cap, int *n_out, arb_err *err) {
    *n_out = 0;
    if (!text && len) return ARB_ERR(err, ARB_E_INVAL, "tokenize: NULL text");
    if (cap < 0 || (cap > 0 && !out)) return ARB_ERR(err, ARB_E_INVAL, "tokenize: bad output buffer");
    scratch sc = {0};
    frag *a = NULL, *b = NULL;
    size_t na = 0, nb = 0, cap_a = 0, cap_b = 0;
    int rc = ARB_OK;
    if (len > 0) {
        if (!grow((void **)&a, &cap_a, 1, sizeof *a)) goto oom;
        a[na++] = (frag){-1, 0, len};
        for (int k = 0; k < t->n_special; k++) {
            int32_t id = t->special[k];
            if (!parse_special && (t->attr[id] & (A_CONTROL | A_UNKNOWN))) continue;
            if (!partition_one(t, text, a, na, &b, &nb, &cap_b, id)) goto oom;
            frag *x = a; a = b; b = x;
            size_t c = cap_a; cap_a = cap_b; cap_b = c;
            na = nb;
        }
    }
    if (add_bos && t->add_bos && t->bos >= 0) push_id(&sc, t->bos);
    bool prev_special = true; /* SPM: a raw fragment at the start or after a special gets a space prefix */
    for (size_t i = 0; i < na && !sc.oom; i++) {
        if (a[i].tok >= 0) {
            push_id(&sc, a[i].tok);
            prev_special = true;
        } else if (t->kind == ARB_TOK_SPM) {
            spm_fragment(t, &sc, text + a[i].off, a[i].len, t->add_space_prefix && prev_special);
            prev_special = false;
        } else {
            bpe_fragment(t, &sc, text + a[i].off, a[i].len);
        }
    }
    if (sc.oom) goto oom;
    if (sc.n_ids > INT32_MAX) {
        rc = ARB_ERR(err, ARB_E_RANGE, "tokenize: %zu tokens", sc.n_ids);
        goto done;
    }
    *n_out = (int)sc.n_ids;
    if (cap > 0 && sc.n_ids) memcpy(out, sc.ids, sizeof(int32_t) * (sc.n_ids < (size_t)cap ? sc.n_ids : (size_t)cap));
    goto done;
oom:
    rc = ARB_ERR(err, ARB_E_NOMEM, "tokenize: out of memory (%zu bytes of text)", len);
done:
    free(a), free(b);
    free(sc.ids), free(sc.sy), free(sc.hp), free(sc.buf), free(sc.cp), free(sc.fl), free(sc.boff);
    free(sc.seg_a), free(sc.seg_b), free(sc.clean);
    return rc;
}
