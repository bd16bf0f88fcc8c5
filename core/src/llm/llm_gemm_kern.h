/* llm_gemm_kern.h (private): the batch-product kernels of llm_gemm.h,
 * written once over a vector of VL floats and included by one file per ISA
 * (llm_simd_avx2.c, llm_simd_avx512.c), which defines first:
 *   ATTR        the target attribute of its ISA (only these functions carry
 *               it; llm_gemm.c calls them only after CPUID said yes)
 *   KN(name)    an exported kernel's name for the ISA
 *   vf, VL      the float vector and its lanes
 *   VZERO(), VLOADF(p) (VL floats), VLOADH(p) (VL halves, widened),
 *   VFMA(a, b, c) (a * b + c, one rounding), VADD(a, b), VHSUM(v) (a float)
 *   RN          the columns of a full tile (at most 6; rows: RM = 4)
 * Each call walks its rows in panels of LLM_GEMM_PANEL (a panel of W stays
 * in L1/L2 while every column of X passes it) and computes tiles of RM rows
 * x RN columns with RM * RN vector accumulators, each summed horizontally
 * once per output; elements past the last multiple of VL are added in
 * scalar code. One column (a decode step) goes through gemv instead. */
#define RM 4
#define LLM_GEMM_PANEL 16
#define INL __attribute__((always_inline)) ATTR static inline
/* Tile loops unroll fully, so that the accumulators live in registers. */
#define UNROLL _Pragma("GCC unroll 6")

INL vf load_v(const void *p, int64_t e, const int f16) {
  return f16 ? VLOADH((const uint16_t *)p + e) : VLOADF((const float *)p + e);
}

INL float load1(const void *p, int64_t e, const int f16) {
  return f16 ? _cvtsh_ss(((const uint16_t *)p)[e]) : ((const float *)p)[e];
}

INL void tile_fp(const llm_gemm_task *t, int64_t i0, int64_t j0, const int rm, const int rn,
                 const int f16) {
  const void *w[RM];
  const float *x[RN];
  vf acc[RM][RN];
  UNROLL
  for (int i = 0; i < rm; i++) w[i] = t->w + (size_t)(i0 + i) * t->w_stride;
  UNROLL
  for (int j = 0; j < rn; j++) x[j] = (const float *)(const void *)(t->x + (size_t)(j0 + j) * t->x_stride);
  UNROLL
  for (int i = 0; i < rm; i++)
    UNROLL
    for (int j = 0; j < rn; j++) acc[i][j] = VZERO();
  const int64_t kv = t->k - t->k % VL;
  for (int64_t e = 0; e < kv; e += VL) {
    vf xv[RN];
    UNROLL
    for (int j = 0; j < rn; j++) xv[j] = VLOADF(x[j] + e);
    UNROLL
    for (int i = 0; i < rm; i++) {
      const vf wv = load_v(w[i], e, f16);
      UNROLL
      for (int j = 0; j < rn; j++) acc[i][j] = VFMA(wv, xv[j], acc[i][j]);
    }
  }
  UNROLL
  for (int j = 0; j < rn; j++)
    UNROLL
    for (int i = 0; i < rm; i++) {
      float s = VHSUM(acc[i][j]);
      for (int64_t e = kv; e < t->k; e++) s += load1(w[i], e, f16) * x[j][e];
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
#define TILE_CASE(K, r, c)                                                                        \
  case (r) * 8 + (c): K(t, i0, j0, r, c); break;
#if RN > 3
#define TILE_ROW_WIDE(K, r) TILE_CASE(K, r, 4) TILE_CASE(K, r, 5) TILE_CASE(K, r, 6)
#else
#define TILE_ROW_WIDE(K, r)
#endif
#define TILE_ROW(K, r) TILE_CASE(K, r, 1) TILE_CASE(K, r, 2) TILE_CASE(K, r, 3) TILE_ROW_WIDE(K, r)
#define TILE_CASES(K)                                                                             \
  switch (rm * 8 + rn) {                                                                          \
    TILE_ROW(K, 1) TILE_ROW(K, 2) TILE_ROW(K, 3) TILE_ROW(K, 4)                                   \
  default: break;                                                                                 \
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

/* One column: row after row, each with four accumulators over runs of 4
 * VL elements. Rows taken in order are one stream for the hardware
 * prefetcher; a tile's four rows at once are four streams, which read a
 * matrix from memory at 6.4-8.4 GB/s where this reads it at 9.8-10.0
 * (F16, AVX-512, one thread; GGML's one-row product 8.9-9.1; the memory
 * 10.7; docs/notes/issue-17.md). */
INL void gemv(const llm_gemm_task *t, const int f16) {
  const float *x = (const float *)(const void *)t->x;
  const int64_t k4 = t->k - t->k % (4 * VL), kv = t->k - t->k % VL;
  const size_t row = (size_t)t->k * (f16 ? 2 : 4), len = (size_t)t->m1 * t->w_stride;
  for (int64_t i = t->m0; i < t->m1; i++) {
    const void *w = t->w + (size_t)i * t->w_stride;
    llm_gemv_prefetch(t->w, (size_t)i * t->w_stride, row, len);
    vf a0 = VZERO(), a1 = VZERO(), a2 = VZERO(), a3 = VZERO();
    int64_t e = 0;
    for (; e < k4; e += 4 * VL) {
      a0 = VFMA(load_v(w, e, f16), VLOADF(x + e), a0);
      a1 = VFMA(load_v(w, e + VL, f16), VLOADF(x + e + VL), a1);
      a2 = VFMA(load_v(w, e + 2 * VL, f16), VLOADF(x + e + 2 * VL), a2);
      a3 = VFMA(load_v(w, e + 3 * VL, f16), VLOADF(x + e + 3 * VL), a3);
    }
    for (; e < kv; e += VL) a0 = VFMA(load_v(w, e, f16), VLOADF(x + e), a0);
    float s = VHSUM(VADD(VADD(a0, a1), VADD(a2, a3)));
    for (; e < t->k; e++) s += load1(w, e, f16) * x[e];
    t->y[i] = s;
  }
}

ATTR static void gemm_f16(const llm_gemm_task *t) {
  if (t->n == 1) gemv(t, 1);
  else gemm(t, tile_f16_any);
}

ATTR static void gemm_f32(const llm_gemm_task *t) {
  if (t->n == 1) gemv(t, 0);
  else gemm(t, tile_f32_any);
}

const llm_gemm_fn KN(llm_gemm_f16) = gemm_f16, KN(llm_gemm_f32) = gemm_f32;
