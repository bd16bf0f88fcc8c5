/* llm_attn.c: small-head attention (llm_attn.h) in the graph: the kernel's
 * ISA path, and llm_attn_small(), which lowers flash attention to a GGML
 * custom operator running it on GGML's threads. */
#include "llm_attn.h"

#include "fm/fm_cpu.h"
#include "llm_impl.h"

llm_attn_fn llm_attn_kernel(void) {
  /* the kernels run where the fused products do (AVX2, FMA, F16C) */
  if (!llm_gemm_kernel(GGML_TYPE_F32)) return NULL;
  return fm_cpu_isa() >= FM_ISA_AVX512 && llm_attn_avx512 ? llm_attn_avx512 : llm_attn_avx2;
}

/* GGML calls this on each of its nth threads: thread ith takes query rows
 * ith, ith + nth, ... */
static void attn_op(struct ggml_tensor *dst, int ith, int nth, void *userdata) {
  const llm_attn_fn fn = (llm_attn_fn)(uintptr_t)userdata;
  const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
  llm_attn_task t = {q->data, k->data, v->data, mask->data, dst->data,
                     q->ne[2], k->ne[0], q->ne[1], k->ne[2], q->ne[0], v->ne[1], ith, nth};
  fn(&t);
}

int llm_attn_small_applies(const llm_build *b, int64_t hk, int64_t hv) {
  return b->m->fused_gemm && !b->m->dev && hk <= LLM_ATTN_MAX_HEAD && hv <= LLM_ATTN_MAX_HEAD && llm_attn_kernel() != NULL;
}

struct ggml_tensor *llm_attn_small(llm_build *b, struct ggml_tensor *q, struct ggml_tensor *k,
                                   struct ggml_tensor *v, struct ggml_tensor *mask, float scale,
                                   int round_q) {
  struct ggml_context *ctx = b->ctx;
  if (round_q) q = ggml_cast(ctx, ggml_cast(ctx, q, GGML_TYPE_F16), GGML_TYPE_F32);
  q = ggml_scale(ctx, q, scale);
  /* keys transposed to [n_kv, hk, nkv] and both operands F32, contiguous:
   * copies linear in n_kv, against quadratic work */
  k = ggml_cast(ctx, ggml_permute(ctx, k, 1, 0, 2, 3), GGML_TYPE_F32);
  v = ggml_cast(ctx, v, GGML_TYPE_F32);
  struct ggml_tensor *args[4] = {q, k, v, mask};
  return ggml_custom_4d(ctx, GGML_TYPE_F32, v->ne[1] * q->ne[1], q->ne[2], 1, 1, args, 4, attn_op,
                        GGML_N_TASKS_MAX, (void *)(uintptr_t)llm_attn_kernel());
}
