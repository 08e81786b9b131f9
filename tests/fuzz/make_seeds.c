/* make_seeds.c — writes a small seed corpus of valid GGUF files for fuzz_gguf.
 * usage: make_seeds DIR   (DIR must exist). Each seed exercises one part of the format:
 * every value type, nested arrays, a vocab-like header, tensors of each dequantised type. */
#include <stdio.h>

#include "../gguf_writer.h"

static int save(const char *dir, const char *name, wbuf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b->p, 1, b->n, f) == b->n;
    if (f)
        ok &= fclose(f) == 0;
    if (!ok)
        fprintf(stderr, "make_seeds: cannot write %s\n", path);
    b->n = 0;
    return ok ? 0 : 1;
}

static void scalars(wbuf *b)
{
    w_key(b, "u8", 0), w_u8(b, 200);
    w_key(b, "i8", 1), w_u8(b, 0x9c);
    w_key(b, "u16", 2), w_u16(b, 60000);
    w_key(b, "i16", 3), w_u16(b, 0x8ad0);
    w_key(b, "u32", 4), w_u32(b, 4000000000u);
    w_key(b, "i32", 5), w_u32(b, 0x88ca6c00u);
    w_key(b, "f32", 6), w_f32(b, 1.5f);
    w_key(b, "bool", 7), w_u8(b, 1);
    w_kv_str(b, "str", "hello");
    w_key(b, "u64", 10), w_u64(b, UINT64_MAX);
    w_key(b, "i64", 11), w_u64(b, 1ull << 63);
    w_key(b, "f64", 12), w_f64(b, -2.5);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    wbuf b = {0};
    int bad = 0;

    w_header(&b, 3, 0, 12);
    scalars(&b);
    bad |= save(dir, "scalars_v3.gguf", &b);

    w_header(&b, 2, 0, 3);
    w_key(&b, "nested", 9), w_arr(&b, 9, 3);
    w_arr(&b, 2, 2), w_u16(&b, 1), w_u16(&b, 2);
    w_arr(&b, 8, 2), w_str(&b, "x"), w_str(&b, "yy");
    w_arr(&b, 9, 1), w_arr(&b, 4, 1), w_u32(&b, 7);
    w_key(&b, "bools", 9), w_arr(&b, 7, 3), w_u8(&b, 0), w_u8(&b, 1), w_u8(&b, 1);
    w_key(&b, "f64s", 9), w_arr(&b, 12, 2), w_f64(&b, 0.5), w_f64(&b, 1e300);
    bad |= save(dir, "nested_v2.gguf", &b);

    /* vocab-like: tokens, scores, types, merges; no tensors */
    w_header(&b, 3, 0, 6);
    w_kv_str(&b, "general.architecture", "llama");
    w_kv_str(&b, "tokenizer.ggml.model", "gpt2");
    w_key(&b, "tokenizer.ggml.tokens", 9), w_arr(&b, 8, 40);
    for (int i = 0; i < 40; i++) {
        char t[8];
        snprintf(t, sizeof t, "t%c%d", 'a' + i % 26, i);
        w_str(&b, t);
    }
    w_key(&b, "tokenizer.ggml.scores", 9), w_arr(&b, 6, 40);
    for (int i = 0; i < 40; i++)
        w_f32(&b, -(float)i);
    w_key(&b, "tokenizer.ggml.token_type", 9), w_arr(&b, 5, 40);
    for (int i = 0; i < 40; i++)
        w_u32(&b, (uint32_t)(1 + i % 3));
    w_key(&b, "tokenizer.ggml.merges", 9), w_arr(&b, 8, 3);
    w_str(&b, "t a"), w_str(&b, "a b"), w_str(&b, "ab c");
    bad |= save(dir, "vocab_v3.gguf", &b);

    /* one tensor of each dequantised type: F32 F16 Q4_0 Q4_1 Q8_0 Q4_K Q6_K BF16 */
    const struct { const char *name; uint32_t type; uint64_t ne0; size_t bytes; } ts[] = {
        {"f32", 0, 8, 32}, {"f16", 1, 8, 16}, {"q4_0", 2, 32, 18}, {"q4_1", 3, 32, 20},
        {"q8_0", 8, 32, 34}, {"q4_k", 12, 256, 144}, {"q6_k", 14, 256, 210}, {"bf16", 30, 8, 16},
    };
    const int nt = (int)(sizeof ts / sizeof ts[0]);
    w_header(&b, 3, (uint64_t)nt, 2);
    w_kv_str(&b, "general.architecture", "llama");
    w_key(&b, "general.alignment", 4), w_u32(&b, 64);
    uint64_t off = 0, offs[8];
    for (int i = 0; i < nt; i++) {
        offs[i] = off;
        w_tensor(&b, ts[i].name, i % 2 ? 2 : 1, (uint64_t[]){ts[i].ne0, 1}, ts[i].type, off);
        off = w_align_up(off + ts[i].bytes, 64);
    }
    w_pad(&b, 64);
    size_t data = b.n;
    for (int i = 0; i < nt; i++) {
        w_pad_to(&b, data + offs[i]);
        for (size_t k = 0; k < ts[i].bytes; k++)
            w_u8(&b, (uint8_t)(k * 37 + (size_t)i));
    }
    bad |= save(dir, "tensors_v3.gguf", &b);
    free(b.p);
    return bad;
}
