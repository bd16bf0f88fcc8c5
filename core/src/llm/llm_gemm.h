/* llm_gemm.h (private): batch products of GGUF-coded weight matrices with
 * a batch of activations, for prefill. GGML (as ggmlR builds it) multiplies
 * Q8_0, F16 and F32 matrices one row-column pair at a time, each dot
 * product one dependency chain; llama.cpp reaches 1.4-2.5x that through a
 * tiled GEMM (llamafile's tinyBLAS) that ggmlR does not ship. These kernels
 * compute a tile of rows x columns at once, with one accumulator per
 * output, so the loads of a block serve several products and the sums run
 * in parallel. They exist for x86-64 with AVX2, FMA and F16C only: on
 * other CPUs (and under FM_ISA=portable) the graph keeps GGML's products,
 * which have SIMD of their own there (NEON, SSE); a plain-C tile is several
 * times slower than those.
 *
 * Coding: the weights and the activations come in the same GGML type, as
 * GGML's product quantizes them (the activations' "vec_dot_type"): Q8_0
 * against Q8_0 (activations quantized by GGML's own quantize_row_q8_0),
 * F16 against F16, F32 against F32. Formats: GGUF specification (ggml/docs/gguf.md) and
 * GGML's block layouts: a Q8_0 block is an IEEE half scale d and 32 signed
 * bytes q, value d * q.
 *
 * Numerical contract: integer dot products (of a block, or of a lane's 4
 * elements) are exact in int32 and in F32, given activation codes in
 * [-127, 127] as GGML's quantize_row_q8_0 writes them (weights may hold
 * -128: 2 * 128 * 127 still fits the 16-bit pair sums; an activation of
 * -128 against a negative weight would not, as in GGML's own kernel);
 * the scale product d_w * d_x of two halves and the product of two F16
 * values are exact in F32; each scaled term (and an F32 product) is
 * rounded at most once; the terms are
 * summed in F32 in eight lanes, each over blocks (Q8_0) or every eighth
 * element (F16, F32), the lanes summed at the end. So |y - exact| <=
 * gamma(n + 4) * sum_e |d_w d_x w_e x_e| (gamma(n) = n u / (1 - n u),
 * u = 2^-24, n the blocks or the elements; core/tests/llm/llm_gemm/).
 * GGML's own product is of the same form, so the fused and the unfused
 * graph agree to twice that per product; GGML's AVX2 Q8_0 product sums in
 * our order exactly (Rllm's tests check the logits are identical when
 * GGML is built for AVX2).
 *
 * Thread safety: the kernels are pure; tasks over disjoint rows run in
 * parallel. */
#ifndef FM_LLM_GEMM_H
#define FM_LLM_GEMM_H

#include <stddef.h>
#include <stdint.h>

#define LLM_QK8_0 32

typedef struct llm_q8_0 {
  uint16_t d;                /* IEEE binary16 scale */
  int8_t qs[LLM_QK8_0];
} llm_q8_0;

/* y[j * ldy + i] = sum_k W[i, k] * X[j, k] for rows i in [m0, m1) of W and
 * columns j in [0, n) of X. Row i of W starts at w + i * w_stride bytes,
 * column j of X at x + j * x_stride; each holds k values in the task's
 * type (Q8_0: k a multiple of 32). */
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

/* The kernels: they need AVX2, FMA and F16C, and are defined (non-NULL)
 * on x86-64 builds only. */
extern const llm_gemm_fn llm_gemm_q8_0_avx2, llm_gemm_f16_avx2, llm_gemm_f32_avx2;

#endif
