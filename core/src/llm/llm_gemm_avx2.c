/* llm_gemm_avx2.c: the batch-product kernels (llm_gemm.h) for x86-64 CPUs
 * with AVX2, FMA and F16C. Only these functions carry the target attribute
 * (no global -mavx2); llm_gemm.c calls them only after CPUID said yes.
 * Elsewhere the pointers are NULL.
 *
 * Each call walks its rows in panels of LLM_GEMM_PANEL (a panel of W stays
 * in L1/L2 while every column of X passes it) and computes tiles of RM rows
 * x RN columns with RM * RN vector accumulators of 8 lanes, summed
 * horizontally once per output. */
#include "llm_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx2,fma,f16c")))
#define INL __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

#define RM 4 /* rows of a full tile */
#define RN 3 /* columns of a full tile */
#define LLM_GEMM_PANEL 16
/* Tile loops unroll fully, so that the accumulators live in registers. */
#define UNROLL _Pragma("GCC unroll 4")

INL float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

INL float half(uint16_t h) { return _cvtsh_ss(h); }

/* ---- F16 x F16 and F32 x F32 ------------------------------------------------ */

INL __m256 load8(const void *p, int64_t e, const int f16) {
  return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)p + e)))
             : _mm256_loadu_ps((const float *)p + e);
}

INL float load1(const void *p, int64_t e, const int f16) {
  return f16 ? half(((const uint16_t *)p)[e]) : ((const float *)p)[e];
}

INL void tile_fp(const llm_gemm_task *t, int64_t i0, int64_t j0, const int rm, const int rn,
                 const int f16) {
  const void *w[RM], *x[RN];
  __m256 acc[RM][RN];
  UNROLL
  for (int i = 0; i < rm; i++) w[i] = t->w + (size_t)(i0 + i) * t->w_stride;
  UNROLL
  for (int j = 0; j < rn; j++) x[j] = t->x + (size_t)(j0 + j) * t->x_stride;
  UNROLL
  for (int i = 0; i < rm; i++)
    UNROLL
    for (int j = 0; j < rn; j++) acc[i][j] = _mm256_setzero_ps();
  const int64_t k8 = t->k & ~(int64_t)7;
  for (int64_t e = 0; e < k8; e += 8) {
    __m256 xv[RN];
    UNROLL
    for (int j = 0; j < rn; j++) xv[j] = load8(x[j], e, f16);
    UNROLL
    for (int i = 0; i < rm; i++) {
      const __m256 wv = load8(w[i], e, f16);
      UNROLL
      for (int j = 0; j < rn; j++) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  UNROLL
  for (int j = 0; j < rn; j++)
    UNROLL
    for (int i = 0; i < rm; i++) {
      float s = hsum8(acc[i][j]);
      for (int64_t e = k8; e < t->k; e++) s += load1(w[i], e, f16) * load1(x[j], e, f16);
      t->y[(j0 + j) * t->ldy + i0 + i] = s;
    }
}

INL void tile_f16(const llm_gemm_task *t, int64_t i0, int64_t j0, const int rm, const int rn) {
  tile_fp(t, i0, j0, rm, rn, 1);
}

INL void tile_f32(const llm_gemm_task *t, int64_t i0, int64_t j0, const int rm, const int rn) {
  tile_fp(t, i0, j0, rm, rn, 0);
}

/* One function per tile shape, so that each tile's loops unroll with its
 * accumulators in registers. */
#define TILE_CASES(K)                                                                             \
  switch (rm * 4 + rn) {                                                                          \
  case 4 + 1: K(t, i0, j0, 1, 1); break;                                                          \
  case 4 + 2: K(t, i0, j0, 1, 2); break;                                                          \
  case 4 + 3: K(t, i0, j0, 1, 3); break;                                                          \
  case 8 + 1: K(t, i0, j0, 2, 1); break;                                                          \
  case 8 + 2: K(t, i0, j0, 2, 2); break;                                                          \
  case 8 + 3: K(t, i0, j0, 2, 3); break;                                                          \
  case 12 + 1: K(t, i0, j0, 3, 1); break;                                                         \
  case 12 + 2: K(t, i0, j0, 3, 2); break;                                                         \
  case 12 + 3: K(t, i0, j0, 3, 3); break;                                                         \
  case 16 + 1: K(t, i0, j0, 4, 1); break;                                                         \
  case 16 + 2: K(t, i0, j0, 4, 2); break;                                                         \
  default: K(t, i0, j0, 4, 3); break;                                                             \
  }

ATTR static void tile_f16_any(const llm_gemm_task *t, int64_t i0, int64_t j0, int rm, int rn) {
  TILE_CASES(tile_f16)
}

ATTR static void tile_f32_any(const llm_gemm_task *t, int64_t i0, int64_t j0, int rm, int rn) {
  TILE_CASES(tile_f32)
}

typedef void (*tile_fn)(const llm_gemm_task *t, int64_t i0, int64_t j0, int rm, int rn);

INL void gemm(const llm_gemm_task *t, tile_fn tile) {
  for (int64_t p0 = t->m0; p0 < t->m1; p0 += LLM_GEMM_PANEL) {
    const int64_t p1 = p0 + LLM_GEMM_PANEL < t->m1 ? p0 + LLM_GEMM_PANEL : t->m1;
    for (int64_t j0 = 0; j0 < t->n; j0 += RN) {
      const int rn = (int)(t->n - j0 < RN ? t->n - j0 : RN);
      for (int64_t i0 = p0; i0 < p1; i0 += RM) {
        const int rm = (int)(p1 - i0 < RM ? p1 - i0 : RM);
        tile(t, i0, j0, rm, rn);
      }
    }
  }
}

ATTR static void gemm_f16(const llm_gemm_task *t) { gemm(t, tile_f16_any); }
ATTR static void gemm_f32(const llm_gemm_task *t) { gemm(t, tile_f32_any); }

const llm_gemm_fn llm_gemm_f16_avx2 = gemm_f16, llm_gemm_f32_avx2 = gemm_f32;
#else
const llm_gemm_fn llm_gemm_f16_avx2 = 0, llm_gemm_f32_avx2 = 0;
#endif
