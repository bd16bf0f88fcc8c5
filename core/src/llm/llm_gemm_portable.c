/* llm_gemm_portable.c: the batch-product kernels (llm_gemm.h) in plain C,
 * for every CPU: one running F32 sum per output, over blocks (Q8_0) or
 * elements (F16, F32) in order. */
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

/* One F16 or F32 value of a row as float. */
static inline float value(const uint8_t *row, int64_t e, int f16) {
  if (f16) {
    uint16_t h;
    memcpy(&h, row + e * 2, sizeof h);
    return llm_f16_to_f32(h);
  }
  float f;
  memcpy(&f, row + e * 4, sizeof f);
  return f;
}

static void gemm_fp(const llm_gemm_task *t, int f16) {
  for (int64_t j = 0; j < t->n; j++) {
    const uint8_t *x = t->x + (size_t)j * t->x_stride;
    for (int64_t i = t->m0; i < t->m1; i++) {
      const uint8_t *w = t->w + (size_t)i * t->w_stride;
      float acc = 0.0f;
      for (int64_t e = 0; e < t->k; e++) acc += value(w, e, f16) * value(x, e, f16);
      t->y[j * t->ldy + i] = acc;
    }
  }
}

void llm_gemm_f16_portable(const llm_gemm_task *t) { gemm_fp(t, 1); }
void llm_gemm_f32_portable(const llm_gemm_task *t) { gemm_fp(t, 0); }
