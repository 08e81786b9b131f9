/* tokenizer_int.h — internals shared by tokenizer.c (vocabulary, special tokens,
 * BPE/SPM merging, pieces) and tokenizer_pre.c (the regex pre-tokenizers of
 * byte-level BPE, written by hand). Not part of the engine API.
 *
 * A pre-tokenizer is a list of passes; each pass refines a list of segments
 * (lengths in code points) the way llama.cpp's unicode_regex_split does: inside
 * every segment the pass's matches and the gaps between them become segments.
 */
#ifndef ARB_TOKENIZER_INT_H
#define ARB_TOKENIZER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "tokenizer.h"

/* Pre-tokenizer families (tokenizer.ggml.pre names map onto these). */
typedef enum arb_pre {
    ARB_PRE_DEFAULT = 0,   /* "default" or missing: punct runs, GPT-2, \p{N}+, [0-9]{3} */
    ARB_PRE_GPT2,          /* gpt-2, mpt, olmo, jais, phi-2, roberta-bpe, jina-*, gigachat */
    ARB_PRE_STARCODER,     /* starcoder, refact, command-r, smollm, codeshell, exaone, minerva-7b:
                              \p{N} then GPT-2 */
    ARB_PRE_LLAMA3,        /* llama3/llama-bpe/falcon3 (+ignore_merges), dbrx, smaug-bpe, chatglm-bpe */
    ARB_PRE_QWEN2,         /* qwen2, deepseek-r1-qwen, stablelm2, megrez: llama3 with single digits */
    ARB_PRE_FALCON,        /* falcon */
    ARB_PRE_DEEPSEEK_LLM,  /* deepseek-llm */
    ARB_PRE_DEEPSEEK_CODER,/* deepseek-coder */
} arb_pre;

enum { /* token attributes (GGUF token_type, plus strip flags) */
    A_NORMAL = 1, A_UNKNOWN = 2, A_CONTROL = 4, A_USER = 8, A_UNUSED = 16, A_BYTE = 32,
    A_UNDEF = 64, A_LSTRIP = 128, A_RSTRIP = 256,
};

struct arb_tokenizer {
    arb_tok_kind kind;
    int pre;              /* arb_pre */
    char pre_name[32];
    int n_vocab;
    char *text;            /* all token texts, each NUL-terminated */
    uint32_t *text_off;    /* [n_vocab] */
    uint32_t *text_len;    /* [n_vocab] */
    uint16_t *attr;        /* [n_vocab] A_* */
    float *score;          /* [n_vocab] SPM scores (0 when absent) */
    uint32_t *vslot;       /* text -> id+1 hash, open addressing, [vmask+1] */
    uint32_t vmask;
    char *merge;           /* merge strings "left right", NUL-terminated */
    uint32_t *merge_off;   /* [n_merges] */
    uint32_t *merge_split; /* [n_merges] byte index of the separating space */
    uint32_t *mslot;       /* (left,right) -> rank+1 hash, [mmask+1] */
    uint32_t mmask;
    int n_merges;
    int32_t *special;      /* ids of CONTROL/USER_DEFINED/UNKNOWN tokens, longest text first */
    int n_special;
    char *piece;           /* decoded pieces */
    uint32_t *piece_off, *piece_len;
    int32_t bos, eos, eot, eom, unk;
    int32_t eog[16];
    int n_eog;
    bool add_bos, add_space_prefix, ignore_merges;
    char byte_enc[256][3]; /* GPT-2 bytes_to_unicode as UTF-8 (1..2 bytes) + NUL */
    int16_t byte_dec[324]; /* inverse on code points < 324; -1 = none */
};

/* rank of the BPE merge (left, right), or -1 */
int arb_tokenizer_merge_rank(const arb_tokenizer *t, const char *l, size_t nl, const char *r, size_t nr);

/* Split n code points (cp, with their arb_unicode_flags in fl) into words.
   seg_a and seg_b are caller scratch of n + 1 entries each; returns the number
   of words and sets *segs to the array (one of seg_a/seg_b) holding their
   lengths in code points. */
int arb_pretok_split(arb_pre pre, const uint32_t *cp, const uint16_t *fl, int n,
                     int32_t *seg_a, int32_t *seg_b, int32_t **segs);

#endif
