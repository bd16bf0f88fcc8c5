/* fused_avx2.c: the fused kernels (fused_kern.h) for x86-64 CPUs with AVX2,
 * FMA, BMI1 and BMI2. Only these functions carry the target attribute (no
 * global -mavx2), and fused.c calls them only after CPUID said yes, so the
 * library still runs on CPUs without AVX2. Elsewhere this file is empty. */
#include "fused_impl.h"

#if FUSED_HAVE_X86
#include <immintrin.h>

#define KN(name) name##_avx2
#define FK_ATTR __attribute__((target("avx2,fma,bmi,bmi2,popcnt")))

typedef __m256d vd;
#define FK_HW_POPCNT 1
#define VW 4
#define VLOAD(p) _mm256_loadu_pd(p)
#define VSTORE(p, v) _mm256_storeu_pd((p), (v))
#define VSPLAT(x) _mm256_set1_pd(x)
#define VZERO() _mm256_setzero_pd()
#define VADD(a, b) _mm256_add_pd((a), (b))
#define VFMA(a, b, c) _mm256_fmadd_pd((a), (b), (c))
#define FK_GATHER_NV 6
#define FK_GATHER_CASES FK_G(1) FK_G(2) FK_G(3) FK_G(4) FK_G(5) FK_G(6)
#define FK_GATHER1_NV 12
#define FK_GATHER1_CASES FK_G(7) FK_G(8) FK_G(9) FK_G(10) FK_G(11) FK_G(12)
#define FK_SCATTER_NV 12
#define FK_SCATTER_CASES                                                                          \
  FK_S(1) FK_S(2) FK_S(3) FK_S(4) FK_S(5) FK_S(6) FK_S(7) FK_S(8) FK_S(9) FK_S(10) FK_S(11) FK_S(12)
/* 32 bytes against the base at once */
#define FK_DOS8_MASK32(p, base)                                                                   \
  (~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(                                             \
      _mm256_loadu_si256((const __m256i *)(const void *)(p)), _mm256_set1_epi8((char)(base)))))

#include "fused_kern.h"

const fused_kernels fused_kernels_avx2 = FK_TABLE(4);
#else
typedef int fused_avx2_unused; /* ISO C wants a declaration in every file */
#endif
