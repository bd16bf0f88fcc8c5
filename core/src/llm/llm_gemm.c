/* llm_gemm.c: the fused batch products (llm_gemm.h) in the graph: llm_mm()
 * lowers a weight-times-activations product to a GGML custom operator
 * running our tiled kernels where they apply (Q8_0 and F16 weights, mapped
 * rather than repacked, a batch of at least LLM_GEMM_MIN_TOKENS), and to
 * ggml_mul_mat elsewhere. The activations are first coded as GGML's own
 * product codes them (ggml_cpy to the weights' type: GGML's quantize_row_q8_0,
 * or F16 rounding), so the two lowerings differ only in the order of F32
 * sums (llm_gemm.h). The kernel's ISA path is chosen per call from
 * fm_cpu_isa() (FM_ISA and the test cap apply), independently of the ISA
 * GGML was built for. */
#include "llm_gemm.h"

#include "fm/fm_cpu.h"
#include "llm_impl.h"

static int cpu_has_f16c(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("f16c");
#else
  return 0;
#endif
}

llm_gemm_fn llm_gemm_kernel(enum ggml_type type) {
  const int avx2 = fm_cpu_isa() >= FM_ISA_AVX2 && llm_gemm_q8_0_avx2 && cpu_has_f16c();
  switch (type) {
  case GGML_TYPE_Q8_0: return avx2 ? llm_gemm_q8_0_avx2 : llm_gemm_q8_0_portable;
  case GGML_TYPE_F16: return avx2 ? llm_gemm_f16_avx2 : llm_gemm_f16_portable;
  default: return NULL;
  }
}

/* GGML calls this on each of its nth threads: thread ith takes a
 * contiguous range of weight rows (a multiple of 4, the tile height). */
static void gemm_op(struct ggml_tensor *dst, int ith, int nth, void *userdata) {
  (void)userdata;
  const struct ggml_tensor *w = dst->src[0], *x = dst->src[1];
  const int64_t m = w->ne[1];
  const int64_t per = ((m + nth - 1) / nth + 3) / 4 * 4;
  const int64_t m0 = (int64_t)ith * per, m1 = m0 + per < m ? m0 + per : m;
  if (m0 >= m1) return;
  llm_gemm_task t = {(const uint8_t *)w->data, w->nb[1], (const uint8_t *)x->data, x->nb[1],
                     (float *)dst->data, (int64_t)(dst->nb[1] / sizeof(float)), w->ne[0], m0, m1,
                     x->ne[1]};
  llm_gemm_kernel(w->type)(&t);
}

int llm_gemm_applies(const struct ggml_tensor *w, const struct ggml_tensor *x) {
  return (w->type == GGML_TYPE_Q8_0 || w->type == GGML_TYPE_F16) && !w->extra &&
         w->nb[0] == ggml_type_size(w->type) && w->ne[2] == 1 && w->ne[3] == 1 &&
         x->type == GGML_TYPE_F32 && x->ne[0] == w->ne[0] && x->ne[2] == 1 && x->ne[3] == 1 &&
         x->ne[1] >= LLM_GEMM_MIN_TOKENS && ggml_is_contiguous(x);
}

struct ggml_tensor *llm_mm(llm_build *b, struct ggml_tensor *w, struct ggml_tensor *x) {
  struct ggml_context *ctx = b->ctx;
  /* the kernels are CPU code (a custom operator): never on a device */
  if (!b->m->fused_gemm || b->m->dev || !llm_gemm_applies(w, x)) return ggml_mul_mat(ctx, w, x);
  struct ggml_tensor *xc = ggml_cpy(ctx, x, ggml_new_tensor_2d(ctx, w->type, x->ne[0], x->ne[1]));
  struct ggml_tensor *args[2] = {w, xc};
  return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], 1, 1, args, 2, gemm_op,
                        GGML_N_TASKS_MAX, NULL);
}
