/* heads_file.h — Medusa/Hydra heads as a GGUF file (version 3, F32 tensors), with what made
 * them: the base model's sha256 (loading for another model is an error), the training config,
 * the distill data's sha256, the seed and the held-out accuracy per head (docs/heads.md).
 *
 *     arb_heads_meta meta = {...};                       // filled by the trainer
 *     arb_heads_save("medusa.gguf", h, &meta, &err);
 *     arb_heads *h2; arb_heads_meta m2;
 *     arb_heads_load("medusa.gguf", model_sha, &h2, &m2, &err);   // model_sha NULL: no check
 *
 * Keys: general.architecture = "arbor-heads", arbor.heads.{kind,n_heads,n_embd,n_vocab},
 * arbor.base.{sha256,name}, arbor.train.{config,data_sha256,seed,rows,heldout_rows},
 * arbor.heldout.{top1,top5,rank_acc} (f32 arrays: K, K, K x ARB_HEADS_RANKS).
 * Tensors: heads.<k>.w [d_in x E], heads.<k>.b [E], Hydra also heads.<k>.r, heads.<k>.rb.
 * The file is read through engine.h's arb_gguf_* (validated like a model).
 */
#ifndef ARB_HEADS_FILE_H
#define ARB_HEADS_FILE_H

#include <stdint.h>

#include "eagle_head.h"
#include "heads.h"

typedef struct arb_heads_meta {
    char base_sha256[65];   /* hex sha256 of the base model's GGUF */
    char base_name[128];    /* its general.name */
    char config[2048];      /* training config as JSON */
    char data_sha256[65];   /* of the distill file's valid records */
    uint64_t seed;
    uint64_t rows, heldout_rows; /* training / held-out positions */
    float top1[ARB_HEADS_MAX], top5[ARB_HEADS_MAX];          /* held-out accuracy per head */
    float rank_acc[ARB_HEADS_MAX][ARB_HEADS_RANKS];          /* P(target is the r-th candidate) */
} arb_heads_meta;

int arb_heads_save(const char *path, const arb_heads *h, const arb_heads_meta *meta, arb_err *err);
/* expect_sha256: the base model's hex sha256, or NULL to skip the check. ARB_E_INVAL when the
   file was trained for another base model (the message names both), ARB_E_FORMAT for a file
   that is not a heads file (the key or tensor named), ARB_E_IO, ARB_E_NOMEM. */
int arb_heads_load(const char *path, const char *expect_sha256, arb_heads **out, arb_heads_meta *meta,
                   arb_err *err);

/* The EAGLE head (eagle_head.h) in the same container: kind "eagle", n_heads 1, its layer sizes
   as arbor.eagle.{n_head,n_head_kv,head_dim,n_ff,rope_base,rms_eps}, tensors eagle.fc.{weight,
   bias}, eagle.attn_{q,k,v,output}.weight, eagle.ffn_{norm,gate,up,down}.weight; meta's top1,
   top5, rank_acc[0] hold the token prediction's held-out accuracy. Same errors as above. */
int arb_eagle_save(const char *path, const arb_eagle *h, const arb_heads_meta *meta, arb_err *err);
int arb_eagle_load(const char *path, const char *expect_sha256, arb_eagle **out, arb_heads_meta *meta, arb_err *err);

#endif
