/* llm_conv.c: direct convolution (llm_conv.h) in the graph: the kernel's
 * ISA path, and llm_conv1d(), the lowering of the program operator conv1d
 * to a GGML custom operator where the kernel applies. */
#include "llm_conv.h"

#include "fm/fm_cpu.h"
#include "llm_impl.h"

llm_conv_fn llm_conv_kernel(int64_t O) {
  if (!llm_gemm_kernel(GGML_TYPE_F32)) return NULL; /* AVX2, FMA, F16C as the other kernels */
  const int wide = fm_cpu_isa() >= FM_ISA_AVX512 && llm_conv_avx512;
  const int64_t vl = wide ? 16 : 8;
  if (O % vl != 0 || O / vl > LLM_CONV_MAX_VEC) return NULL;
  return wide ? llm_conv_avx512 : llm_conv_avx2;
}

/* userdata of the custom operator: the dilation (up to 2^20) and the
 * first output position, in one word. */
#define CONV_D_BITS 20

/* GGML calls this on each of its nth threads: thread ith takes a
 * contiguous range of the output positions o0 .. o0 + dst->ne[1] - 1. */
static void conv_op(struct ggml_tensor *dst, int ith, int nth, void *userdata) {
  const struct ggml_tensor *x = dst->src[0], *wr = dst->src[1], *b = dst->src[2];
  const uint64_t u = (uint64_t)(uintptr_t)userdata;
  const int64_t o0 = (int64_t)(u >> CONV_D_BITS), n = dst->ne[1], per = (n + nth - 1) / nth;
  const int64_t t0 = o0 + (int64_t)ith * per, t1 = t0 + per < o0 + n ? t0 + per : o0 + n;
  if (t0 >= t1) return;
  llm_conv_task t = {x->data, wr->data, b ? b->data : NULL, dst->data, x->ne[1], x->ne[0], wr->ne[0], wr->ne[2],
                     (int64_t)(u & ((1u << CONV_D_BITS) - 1)), t0, t1, o0};
  llm_conv_kernel(t.O)(&t);
}

struct ggml_tensor *llm_conv1d_direct(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *w,
                                      struct ggml_tensor *bias, int d, int64_t o0, int64_t n) {
  struct ggml_context *ctx = b->ctx;
  if (!b->m->fused_gemm || b->m->dev || !llm_conv_kernel(w->ne[2]) || !ggml_is_contiguous(x) ||
      d >= (1 << CONV_D_BITS) || o0 > INT32_MAX)
    return NULL;
  /* weights [k, I, O] to [O, I, k]: output channel fastest */
  struct ggml_tensor *wr = ggml_cont(ctx, ggml_permute(ctx, w, 2, 1, 0, 3));
  struct ggml_tensor *args[3] = {x, wr, bias};
  return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[2], n, 1, 1, args, bias ? 3 : 2, conv_op, GGML_N_TASKS_MAX,
                        (void *)(uintptr_t)((uint64_t)o0 << CONV_D_BITS | (uint64_t)d));
}
