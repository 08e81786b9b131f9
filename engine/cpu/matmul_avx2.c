/* matmul_avx2.c — placeholder: the avx2 kernel family (filled in next). */
#include "matmul_int.h"

const mm_impl arb_mm_avx2 = {.name = "avx2"};
