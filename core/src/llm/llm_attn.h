/* llm_attn.h (private): attention for small heads (a head size of at most
 * LLM_ATTN_MAX_HEAD), on the CPU, for batches that take flash attention.
 * GGML's tiled flash attention vectorizes along the head: with stories260K's
 * heads of 8 elements (AVX-512: 16 lanes, padded) most of each vector is
 * idle, and a 2,000-token prompt spent 70% of its prefill there (perf,
 * docs/notes/issue-17.md). These kernels vectorize along the keys instead:
 * keys and values transposed, one query's scores for VL keys are hk
 * fused multiply-adds, their exponentials one vector polynomial, and the
 * output hv more, whatever the head size.
 *
 * Method: softmax(q K^T + mask) V over the cells, one query at a time, in
 * tiles of LLM_ATTN_TILE keys with the running maximum and sum of online
 * softmax (Milakov and Gimelshein 2018; Dao et al. 2022, flash attention):
 * a tile's scores are computed and their maximum taken, the accumulators
 * rescaled by exp(old - new) where it grew, then its probabilities
 * exp(s - max) summed and multiplied with the values. Keys before the
 * first and after the last finite mask entry of a query's row are skipped
 * (a causal prompt's half of the square), so the mask is that of
 * flash attention: 0 or -inf, or a finite bias.
 *
 * Coding: every operand F32: queries already scaled (q * scale), keys as
 * [n_kv][hk] per KV head transposed to K[g][e][j] (row e of head g holds
 * element e of every key j), values V[g][e][j] likewise (the cache's own
 * transposed layout), the mask [n][n_kv]. Query head h reads KV head
 * h / (nh / nkv) (grouped-query attention). Output [n][nh * hv].
 *
 * Numerical contract: a score is an F32 sum of hk products in order
 * (|error| <= gamma(hk) sum_e |q_e k_je|, gamma(n) = n u / (1 - n u),
 * u = 2^-24); exp is a degree-7 Taylor polynomial on [-ln2/2, ln2/2] times
 * 2^n, within 3 u of exp relative (measured against exp() in double over
 * [-87, 0] by core/tests/llm/llm_attn/), and 0 below -87.3 (where exp is
 * under FLT_MIN, against a largest term of 1); probabilities and products
 * summed in F32 lanes (VL keys apart) then across lanes, as the fused
 * products (llm_gemm.h). Against exact arithmetic on the same operands an
 * output element is within (2 D + 8 u + gamma(n_kv / VL + LLM_ATTN_TILE
 * / VL + 5) * 2) * max_j |v_je| of the exact one, D the largest score
 * error (core/tests/llm/llm_attn/ derives and checks it). A row with every
 * key masked gives zeros (as GGML's flash attention).
 *
 * Thread safety: pure; tasks over disjoint query rows run in parallel. */
#ifndef FM_LLM_ATTN_H
#define FM_LLM_ATTN_H

#include <stddef.h>
#include <stdint.h>

#define LLM_ATTN_MAX_HEAD 32
#define LLM_ATTN_TILE 128

/* Rows i = i0, i0 + step, ... < n of the output (interleaved so that the
 * threads of a causal prompt share its longer rows). */
typedef struct llm_attn_task {
  const float *q; /* [n][nh][hk] */
  const float *k; /* [nkv][hk][n_kv] */
  const float *v; /* [nkv][hv][n_kv] */
  const float *mask; /* [n][n_kv] */
  float *out;        /* [n][nh * hv] */
  int64_t n, n_kv, nh, nkv, hk, hv, i0, step;
} llm_attn_task;

typedef void (*llm_attn_fn)(const llm_attn_task *t);

/* Per ISA (llm_simd_avx2.c, llm_simd_avx512.c); NULL where not built. */
extern const llm_attn_fn llm_attn_avx2, llm_attn_avx512;

/* The ISA path the CPU, FM_ISA and the test cap allow (as llm_gemm_kernel);
 * NULL below avx2, where the graph keeps GGML's flash attention. */
llm_attn_fn llm_attn_kernel(void);

/* The vector exponential of the kernels, for their test: y[i] = exp(x[i])
 * for x <= 0 (n a multiple of the ISA's lanes); NULL where not built. */
typedef void (*llm_attn_exp_fn)(const float *x, float *y, int64_t n);
extern const llm_attn_exp_fn llm_attn_exp_avx2, llm_attn_exp_avx512;

#endif
