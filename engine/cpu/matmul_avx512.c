/* matmul_avx512.c — placeholder: the avx512 kernel family (filled in next). */
#include "matmul_int.h"

const mm_impl arb_mm_avx512 = {.name = "avx512"};
