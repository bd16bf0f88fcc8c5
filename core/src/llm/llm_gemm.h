/* llm_gemm.h (private): products of GGUF-coded weight matrices with a
 * batch of activations (prefill) or one column (decode: a GEMV that reads
 * the rows in order, llm_gemm_kern.h). GGML (as ggmlR builds it) multiplies
 * F16 and F32 matrices one row-column pair at a time, each dot product one
 * dependency chain; llama.cpp reaches 1.4-2.5x that through a tiled GEMM
 * (llamafile's tinyBLAS) that ggmlR does not ship. These kernels compute a
 * tile of rows x columns at once, with one accumulator per output, so the
 * loads of a row serve several products and the sums run in parallel.
 * Quantized weights reach them as F32 panels decoded by GGML's own
 * to_float (llm_gemm.c). They exist for x86-64 with AVX2, FMA and F16C,
 * and with AVX-512 F and BW (wider tiles, llm_gemm_kern.h); the best the
 * CPU and FM_ISA allow runs. On other CPUs (and under FM_ISA=portable) the
 * graph keeps GGML's products, which have SIMD of their own there (NEON,
 * SSE); a plain-C tile is several times slower than those.
 *
 * Coding: the weights are F16 or F32; the activations are F32 in both
 * cases. Against F16 weights they hold values rounded to F16, as GGML's F16
 * product rounds them (llm_gemm.c rounds them and widens them back once
 * per product, so the tiles load them without converting). Formats: GGUF
 * specification (ggml/docs/gguf.md).
 *
 * Numerical contract: the product of two F16 values is exact in F32; an
 * F32 product is rounded once; the terms are summed in F32 in L lanes (8
 * for AVX2, 16 for AVX-512), each over every L-th element, the lanes summed
 * at the end in log2(L) steps. So |y - exact| <= gamma(n + 4) * sum_e
 * |w_e x_e| (gamma(n) = n u / (1 - n u), u = 2^-24, n the elements; the
 * depth of each sum is at most n / L + log2(L) + 1 <= n + 4;
 * core/tests/llm/llm_gemm/). The two paths differ only in that order. GGML's own product
 * is of the same form, so the fused and the unfused graph agree to twice
 * that per product.
 *
 * Thread safety: the kernels are pure; tasks over disjoint rows run in
 * parallel. */
#ifndef FM_LLM_GEMM_H
#define FM_LLM_GEMM_H

#include <stddef.h>
#include <stdint.h>

/* y[j * ldy + i] = sum_k W[i, k] * X[j, k] for rows i in [m0, m1) of W and
 * columns j in [0, n) of X. Row i of W starts at w + i * w_stride bytes,
 * column j of X at x + j * x_stride; a row of W holds k values in the
 * kernel's type (F16 or F32), a column of X k floats. */
typedef struct llm_gemm_task {
  const uint8_t *w;
  size_t w_stride;
  const uint8_t *x;
  size_t x_stride;
  float *y;
  int64_t ldy;
  int64_t k, m0, m1, n;
} llm_gemm_task;

typedef void (*llm_gemm_fn)(const llm_gemm_task *t);

/* A one-column product reads each weight row once, from memory. The
 * hardware prefetcher stops at each 4 KB page (the GGUF mapping's pages)
 * and, with a kernel's instructions between the loads, keeps too few
 * lines in flight: one thread read F16, Q8_0 and Q4_K rows from a mapping
 * 1.3-1.9x faster with the lines LLM_GEMV_AHEAD bytes ahead requested
 * first (docs/notes/issue-17.md, sixth session). Before row [at, at +
 * bytes) of a stream of `len` bytes: its lines that far ahead, none past
 * the stream's end. */
#define LLM_GEMV_AHEAD 4096
static inline void llm_gemv_prefetch(const uint8_t *stream, size_t at, size_t bytes, size_t len) {
  for (size_t o = at + LLM_GEMV_AHEAD; o < at + LLM_GEMV_AHEAD + bytes && o < len; o += 64)
    __builtin_prefetch(stream + o, 0, 3);
}

/* The kernels: _avx2 need AVX2, FMA and F16C, _avx512 also AVX-512 F and
 * BW; they are defined (non-NULL) on x86-64 builds only. */
extern const llm_gemm_fn llm_gemm_f16_avx2, llm_gemm_f32_avx2;
extern const llm_gemm_fn llm_gemm_f16_avx512, llm_gemm_f32_avx512;

#endif
