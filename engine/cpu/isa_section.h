/* isa_section.h — compile the rest of a kernel file for an instruction set.
 *
 *     #if defined(__x86_64__) && defined(__GNUC__)
 *     ARB_ISA_SECTION_BEGIN("avx2,fma")
 *     #include <immintrin.h>
 *     ... kernels ...
 *     ARB_ISA_SECTION_END
 *     #else ...
 *
 * GCC: `#pragma GCC target` for the rest of the file. clang ignores that pragma (and then
 * refuses the intrinsics), so there the target goes on every function of the section through
 * `#pragma clang attribute`, which must be popped before the file ends. Either way the
 * functions of the section are compiled for `isa` and nothing else in the file is.
 */
#ifndef ARB_ISA_SECTION_H
#define ARB_ISA_SECTION_H

#define ARB_ISA_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define ARB_ISA_SECTION_BEGIN(isa)                                                                                  \
    ARB_ISA_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define ARB_ISA_SECTION_END ARB_ISA_PRAGMA(clang attribute pop)
#else
#define ARB_ISA_SECTION_BEGIN(isa) ARB_ISA_PRAGMA(GCC target(isa))
#define ARB_ISA_SECTION_END
#endif

#endif
