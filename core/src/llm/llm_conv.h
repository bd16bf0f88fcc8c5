/* llm_conv.h (private): dilated 1-D convolution, direct (no im2col), on the
 * CPU, for OpenSpliceAI-style networks (the program operator conv1d,
 * fm_llm_program.h). GGML's im2col writes k x I floats per position before
 * its product (41 x 32 in OpenSpliceAI's widest group): half of a
 * splice-site evaluation was that copy (perf, docs/notes/issue-18.md).
 * These kernels read the input columns in place: for a tile of CP
 * positions and all O output channels (O / VL vectors), every tap j and
 * input channel i loads O / VL weight vectors once and broadcasts one
 * input value per position.
 *
 * Coding: x [I][T] as GGML lays out an activation (channel fastest:
 * x[t I + i]); weights repacked per evaluation to wr[j][i][o] (output
 * channel fastest; the graph copies the [k, I, O] parameter, k I O floats);
 * bias [O] or NULL; y [n][O]: output position t at y[(t - o0) O + o], so
 * that a graph computes only the positions it needs. Zero "same" padding:
 * tap j reads position t + d (j - (k - 1) / 2), zero outside [0, T).
 *
 * Numerical contract: each output is bias + the k I products in the order
 * j, then i, one F32 FMA chain per lane: |error| <= gamma(k I + 1) (|b| +
 * sum |w x|), gamma(n) = n u / (1 - n u), u = 2^-24
 * (core/tests/llm/llm_conv/); the same bits on any number of threads.
 *
 * Applies when O is a multiple of the ISA's lanes, at most
 * LLM_CONV_MAX_VEC vectors (O = 32 on both ISAs); other shapes keep the
 * im2col path. Thread safety: pure; tasks over disjoint positions run in
 * parallel. */
#ifndef FM_LLM_CONV_H
#define FM_LLM_CONV_H

#include <stddef.h>
#include <stdint.h>

#define LLM_CONV_MAX_VEC 4

typedef struct llm_conv_task {
  const float *x;  /* [T][I] */
  const float *wr; /* [k][I][O] */
  const float *bias; /* [O] or NULL */
  float *y;        /* [n][O]: positions o0 .. o0 + n - 1 */
  int64_t T, I, O, k, d;
  int64_t t0, t1; /* the output positions of this task, within [o0, o0 + n) */
  int64_t o0;     /* the position of y's first row */
} llm_conv_task;

typedef void (*llm_conv_fn)(const llm_conv_task *t);

/* Per ISA (llm_simd_avx2.c, llm_simd_avx512.c; NULL where not built), and
 * the lanes of each. */
extern const llm_conv_fn llm_conv_avx2, llm_conv_avx512;

/* The ISA path for O output channels (NULL: none; the graph keeps
 * im2col), as llm_attn_kernel. */
llm_conv_fn llm_conv_kernel(int64_t O);

#endif
