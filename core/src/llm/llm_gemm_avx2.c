/* llm_gemm_avx2.c: the batch-product kernels (llm_gemm.h, written in
 * llm_gemm_kern.h) for x86-64 CPUs with AVX2, FMA and F16C: vectors of 8
 * floats, 16 registers, so tiles of 4 rows x 3 columns (12 accumulators).
 * Elsewhere the pointers are NULL. */
#include "llm_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx2,fma,f16c")))
#define KN(name) name##_avx2
typedef __m256 vf;
#define VL 8
#define RN 3
#define VZERO() _mm256_setzero_ps()
#define VLOADF(p) _mm256_loadu_ps(p)
#define VLOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VHSUM(v) hsum8(v)

ATTR static inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#include "llm_gemm_kern.h"
#else
const llm_gemm_fn llm_gemm_f16_avx2 = 0, llm_gemm_f32_avx2 = 0;
#endif
