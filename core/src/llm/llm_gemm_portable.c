/* llm_gemm_portable.c: the batch-product kernels (llm_gemm.h) in plain C,
 * for every CPU: one running F32 sum per output, over blocks (Q8_0) or
 * elements (F16) in order. */
#include <string.h>

#include "llm_gemm.h"

float llm_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (man << 13); /* infinity or NaN */
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13); /* rebias 15 -> 127 */
  } else if (man == 0) {
    bits = sign;
  } else { /* subnormal: normalize */
    exp = 113u;
    while (!(man & 0x400u)) {
      man <<= 1;
      exp--;
    }
    bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

void llm_gemm_q8_0_portable(const llm_gemm_task *t) {
  const int64_t nb = t->k / LLM_QK8_0;
  for (int64_t j = 0; j < t->n; j++) {
    const llm_q8_0 *x = (const llm_q8_0 *)(const void *)(t->x + (size_t)j * t->x_stride);
    for (int64_t i = t->m0; i < t->m1; i++) {
      const llm_q8_0 *w = (const llm_q8_0 *)(const void *)(t->w + (size_t)i * t->w_stride);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; b++) {
        int32_t dot = 0;
        for (int e = 0; e < LLM_QK8_0; e++) dot += (int32_t)w[b].qs[e] * (int32_t)x[b].qs[e];
        acc += (float)dot * (llm_f16_to_f32(w[b].d) * llm_f16_to_f32(x[b].d));
      }
      t->y[j * t->ldy + i] = acc;
    }
  }
}

void llm_gemm_f16_portable(const llm_gemm_task *t) {
  for (int64_t j = 0; j < t->n; j++) {
    const uint16_t *x = (const uint16_t *)(const void *)(t->x + (size_t)j * t->x_stride);
    for (int64_t i = t->m0; i < t->m1; i++) {
      const uint16_t *w = (const uint16_t *)(const void *)(t->w + (size_t)i * t->w_stride);
      float acc = 0.0f;
      for (int64_t e = 0; e < t->k; e++) acc += llm_f16_to_f32(w[e]) * llm_f16_to_f32(x[e]);
      t->y[j * t->ldy + i] = acc;
    }
  }
}
