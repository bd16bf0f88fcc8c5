/* fused_avx512.c: the fused kernels (fused_kern.h) for x86-64 CPUs with
 * AVX-512 F and BW (and AVX2, FMA, BMI1, BMI2): vectors of eight doubles,
 * 32 registers, so every k <= 64 is one chunk with two accumulator sets.
 * Only these functions carry the target attribute, and fused.c calls them
 * only after CPUID (and the OS) said yes. Elsewhere this file is empty. */
#include "fused_impl.h"

#if FUSED_HAVE_X86
#include <immintrin.h>

#define KN(name) name##_avx512
#define FK_ATTR __attribute__((target("avx512f,avx512bw,avx2,fma,bmi,bmi2,popcnt")))

typedef __m512d vd;
#define FK_HW_POPCNT 1
#define VW 8
#define VLOAD(p) _mm512_loadu_pd(p)
#define VSTORE(p, v) _mm512_storeu_pd((p), (v))
#define VSPLAT(x) _mm512_set1_pd(x)
#define VZERO() _mm512_setzero_pd()
#define VADD(a, b) _mm512_add_pd((a), (b))
#define VFMA(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define FK_GATHER_NV 8
#define FK_GATHER_CASES FK_G(1) FK_G(2) FK_G(3) FK_G(4) FK_G(5) FK_G(6) FK_G(7) FK_G(8)
#define FK_GATHER1_NV 8 /* never wider than FK_GATHER_NV: kp <= 64 */
#define FK_GATHER1_CASES
#define FK_SCATTER_NV 8
#define FK_SCATTER_CASES FK_S(1) FK_S(2) FK_S(3) FK_S(4) FK_S(5) FK_S(6) FK_S(7) FK_S(8)
/* 32 bytes against the base at once */
#define FK_DOS8_MASK32(p, base)                                                                   \
  (~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(                                             \
      _mm256_loadu_si256((const __m256i *)(const void *)(p)), _mm256_set1_epi8((char)(base)))))

#include "fused_kern.h"

const fused_kernels fused_kernels_avx512 = FK_TABLE(8);
#else
typedef int fused_avx512_unused; /* ISO C wants a declaration in every file */
#endif
