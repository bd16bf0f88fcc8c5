/* llm_simd_avx2.c: the fused kernels of the language-model graph for
 * x86-64 CPUs with AVX2, FMA and F16C: the batch products (llm_gemm.h,
 * written in llm_gemm_kern.h), small-head attention (llm_attn.h,
 * llm_attn_kern.h) and direct convolution (llm_conv.h, llm_conv_kern.h),
 * over vectors of 8 floats. With 16 registers the product tiles are 4
 * rows x 3 columns (12 accumulators), the convolution's 8 accumulators.
 * Elsewhere the pointers are NULL. */
#include "llm_attn.h"
#include "llm_conv.h"
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
#define VSET1(x) _mm256_set1_ps(x)
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMAX(a, b) _mm256_max_ps((a), (b))
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VHMAX(v) hmax8(v)
#define VROUND(v) _mm256_round_ps((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VPOW2I(n)                                                                                  \
  _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
#define VKEEP_GE(v, x, lo) _mm256_and_ps((v), _mm256_cmp_ps((x), (lo), _CMP_GE_OQ))

ATTR static inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

ATTR static inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#include "llm_gemm_kern.h"
#include "llm_attn_kern.h"
#define CONV_ACC 8
#include "llm_conv_kern.h"
#else
const llm_gemm_fn llm_gemm_f16_avx2 = 0, llm_gemm_f32_avx2 = 0;
const llm_attn_fn llm_attn_avx2 = 0;
const llm_conv_fn llm_conv_avx2 = 0;
const llm_attn_exp_fn llm_attn_exp_avx2 = 0;
#endif
