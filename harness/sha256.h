/* sha256.h — SHA-256 (FIPS 180-4) for model and dataset checksums.
 *
 *     char hex[65];
 *     if (arb_sha256_file("m.gguf", hex, &err)) ...;   // streams the file
 */
#ifndef ARB_SHA256_H
#define ARB_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct arb_sha256 {
    uint32_t h[8];      /* chaining state */
    uint64_t n_bytes;   /* total bytes absorbed */
    uint8_t buf[64];    /* partial block */
    size_t n_buf;       /* bytes in buf */
} arb_sha256;

void arb_sha256_init(arb_sha256 *s);
void arb_sha256_update(arb_sha256 *s, const void *data, size_t len);
void arb_sha256_final(arb_sha256 *s, uint8_t out[32]);
/* Hex digest of a buffer or a whole file into hex[65]. */
void arb_sha256_hex(const void *data, size_t len, char hex[65]);
int arb_sha256_file(const char *path, char hex[65], arb_err *err);

#endif
