/* llm_simd_avx512.c: the fused kernels of the language-model graph for
 * x86-64 CPUs with AVX-512 F and BW (and AVX2, FMA, F16C): the batch
 * products (llm_gemm.h, written in llm_gemm_kern.h), small-head
 * attention (llm_attn.h, llm_attn_kern.h) and direct convolution
 * (llm_conv.h, llm_conv_kern.h), over vectors of 16 floats. With
 * 32 registers the product tiles are 4 rows x 6 columns (24 accumulators,
 * 6 activation vectors and a weight vector). Elsewhere the pointers are
 * NULL. */
#include "llm_attn.h"
#include "llm_conv.h"
#include "llm_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))
#define KN(name) name##_avx512
typedef __m512 vf;
#define VL 16
#define RN 6
#define VZERO() _mm512_setzero_ps()
#define VLOADF(p) _mm512_loadu_ps(p)
#define VLOADH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VHSUM(v) _mm512_reduce_add_ps(v)
#define VSET1(x) _mm512_set1_ps(x)
#define VMUL(a, b) _mm512_mul_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VMAX(a, b) _mm512_max_ps((a), (b))
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VHMAX(v) _mm512_reduce_max_ps(v)
#define VROUND(v) _mm512_roundscale_ps((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VPOW2I(n)                                                                                  \
  _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))
#define VKEEP_GE(v, x, lo) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask((x), (lo), _CMP_GE_OQ), (v))

#include "llm_gemm_kern.h"
#include "llm_attn_kern.h"
#define CONV_ACC 16
#include "llm_conv_kern.h"
#else
const llm_gemm_fn llm_gemm_f16_avx512 = 0, llm_gemm_f32_avx512 = 0;
const llm_attn_fn llm_attn_avx512 = 0;
const llm_conv_fn llm_conv_avx512 = 0;
const llm_attn_exp_fn llm_attn_exp_avx512 = 0;
#endif
