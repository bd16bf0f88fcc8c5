/* llm_gemm_avx512.c: the batch-product kernels (llm_gemm.h, written in
 * llm_gemm_kern.h) for x86-64 CPUs with AVX-512 F and BW (and AVX2, FMA,
 * F16C): vectors of 16 floats, 32 registers, so tiles of 4 rows x 6
 * columns (24 accumulators, 6 activation vectors and a weight vector).
 * Elsewhere the pointers are NULL. */
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

#include "llm_gemm_kern.h"
#else
const llm_gemm_fn llm_gemm_f16_avx512 = 0, llm_gemm_f32_avx512 = 0;
#endif
