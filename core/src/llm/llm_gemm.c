/* llm_gemm.c: the fused batch products (llm_gemm.h) in the graph: llm_mm()
 * lowers a weight-times-activations product to a GGML custom operator
 * running our tiled kernels where they apply (weights mapped rather than
 * repacked, a batch of at least LLM_GEMM_MIN_TOKENS), and to ggml_mul_mat
 * elsewhere. Three routes:
 *  - F16 and F32 weights: kernels of their own, from one token (one
 *    column: a GEMV). For F16 weights the activations are first rounded as
 *    GGML's own product rounds them (ggml_cpy to F16; a single column in
 *    the thread's scratch instead), then widened back to F32 (exact) so
 *    that the kernels load them without converting; the two lowerings
 *    differ only in the order of F32 sums (llm_gemm.h).
 *  - quantized weights not repacked, one column (a decode step): GGML's
 *    own one-row product (type_traits_cpu->vec_dot, the column quantized
 *    by its from_float, as ggml_mul_mat does, so the result is GGML's bit
 *    for bit) taken row after row with the rows ahead prefetched
 *    (llm_gemv_prefetch): ggml_mul_mat's loop does not prefetch, and
 *    decode is a read of every weight from memory. Measured in the model
 *    (llama85m, one thread, idle): Q8_0 decode 1.7x, Q4_K_M (its Q6_K
 *    matrices) 1.2x (docs/notes/issue-17.md, sixth session).
 *  - quantized weights (Q8_0 from LLM_GEMM_Q8_MIN_TOKENS; Q4_0 and Q4_K
 *    when not repacked, Q5_0, Q6_K, ... from LLM_GEMM_DEQ_MIN_TOKENS): a
 *    codec panel, as elsewhere in this project: GGML's own to_float
 *    decodes LLM_GEMM_DEQ_ROWS weight rows to F32 (the code values times
 *    their scales; for types with block minimums, such as Q4_K, d * q - m
 *    is rounded once in F32 where GGML's product applies the minimum
 *    through integer sums), which the F32 kernel multiplies with the
 *    activations as they are. GGML instead quantizes the activations to 8
 *    bits (Q8_0/Q8_K) for these types, so this route is the more accurate;
 *    it differs from GGML's product by that activation rounding. The
 *    decoding is amortized over the batch's columns, hence the minimum
 *    batch. For Q8_0 this route is faster than an integer Q8_0 x Q8_0 tile
 *    (measured 1.2-1.6x at 16-512 tokens: the F32 tile's FMAs cost fewer
 *    instructions per product than sign/maddubs/madd/convert/scale per
 *    block; docs/notes/issue-17.md).
 * Where the kernels do not run (no AVX2/F16C, FM_ISA or the test cap below
 * avx2) every product stays GGML's. The kernel's ISA path (AVX2 or
 * AVX-512) is chosen per call from fm_cpu_isa() (FM_ISA and the test cap
 * apply), independently of the ISA GGML was built for. */
#include "llm_gemm.h"

#include <pthread.h>
#include <stdlib.h>

#include "fm/fm_cpu.h"
#include "llm_impl.h"

static int have_f16c;
static pthread_once_t f16c_once = PTHREAD_ONCE_INIT;

static void probe_f16c(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  have_f16c = __builtin_cpu_supports("f16c");
#endif
}

/* The kernel of a type (NULL: none): the AVX-512 one where fm_cpu_isa()
 * allows it, else the AVX2 one, whatever a cap below avx2 says (the route
 * was chosen where the kernels ran). */
static llm_gemm_fn kernel_of(enum ggml_type type) {
  const int wide = fm_cpu_isa() >= FM_ISA_AVX512;
  switch (type) {
  case GGML_TYPE_F16: return wide && llm_gemm_f16_avx512 ? llm_gemm_f16_avx512 : llm_gemm_f16_avx2;
  case GGML_TYPE_F32: return wide && llm_gemm_f32_avx512 ? llm_gemm_f32_avx512 : llm_gemm_f32_avx2;
  default: return NULL;
  }
}

llm_gemm_fn llm_gemm_kernel(enum ggml_type type) {
  (void)pthread_once(&f16c_once, probe_f16c);
  return fm_cpu_isa() >= FM_ISA_AVX2 && have_f16c ? kernel_of(type) : NULL;
}

/* The weight rows [m0, m1) of dst's product. Types with a kernel of their
 * own run it on the mapped rows (one column against F16 weights first
 * rounded to F16 and widened back into the scratch, k floats and k halves);
 * one column against another type is quantized into the scratch and
 * multiplied by GGML's one-row product; otherwise the weights are decoded by GGML's own
 * to_float, LLM_GEMM_DEQ_ROWS rows at a time, into the thread's slice of
 * the model's scratch (llm_gemm_reserve), then multiplied as F32 with the
 * F32 activations. */
static void gemm_rows(const struct ggml_tensor *dst, int64_t m0, int64_t m1, float *scratch) {
  const struct ggml_tensor *w = dst->src[0], *x = dst->src[1];
  const int64_t ldy = (int64_t)(dst->nb[1] / sizeof(float)), k = w->ne[0];
  llm_gemm_fn direct = kernel_of(w->type);
  if (direct) {
    const uint8_t *xd = (const uint8_t *)x->data;
    if (x->ne[1] == 1 && w->type == GGML_TYPE_F16) { /* rounded here, not by copy nodes (llm_mm) */
      ggml_fp16_t *h = (ggml_fp16_t *)(void *)(scratch + k);
      ggml_cpu_fp32_to_fp16((const float *)x->data, h, k);
      ggml_cpu_fp16_to_fp32(h, scratch, k);
      xd = (const uint8_t *)scratch;
    }
    llm_gemm_task t = {(const uint8_t *)w->data, w->nb[1], xd, x->nb[1],
                       (float *)dst->data, ldy, k, m0, m1, x->ne[1]};
    direct(&t);
    return;
  }
  if (x->ne[1] == 1) { /* one column: GGML's own one-row product, prefetched; each thread
                        * quantizes the column itself (k values: less than a graph node) */
    const struct ggml_type_traits_cpu *tr = ggml_get_type_traits_cpu(w->type);
    ggml_get_type_traits_cpu(tr->vec_dot_type)->from_float((const float *)x->data, scratch, k);
    const size_t row = ggml_row_size(w->type, k), len = (size_t)m1 * w->nb[1];
    for (int64_t i = m0; i < m1; i++) {
      llm_gemv_prefetch((const uint8_t *)w->data, (size_t)i * w->nb[1], row, len);
      tr->vec_dot((int)k, (float *)dst->data + i, 0, (const char *)w->data + (size_t)i * w->nb[1], 0,
                  scratch, 0, 1);
    }
    return;
  }
  const ggml_to_float_t to_float = ggml_get_type_traits(w->type)->to_float;
  llm_gemm_fn f32 = kernel_of(GGML_TYPE_F32);
  for (int64_t p0 = m0; p0 < m1; p0 += LLM_GEMM_DEQ_ROWS) {
    const int64_t rows = m1 - p0 < LLM_GEMM_DEQ_ROWS ? m1 - p0 : LLM_GEMM_DEQ_ROWS;
    for (int64_t r = 0; r < rows; r++)
      to_float((const char *)w->data + (size_t)(p0 + r) * w->nb[1], scratch + r * k, k);
    llm_gemm_task t = {(const uint8_t *)scratch, (size_t)k * sizeof(float),
                       (const uint8_t *)x->data, x->nb[1], (float *)dst->data + p0, ldy, k,
                       0, rows, x->ne[1]};
    f32(&t);
  }
}

/* GGML calls this on each of its nth threads: thread ith takes a
 * contiguous range of weight rows (a multiple of 4, the tile height). */
static void gemm_op(struct ggml_tensor *dst, int ith, int nth, void *userdata) {
  const llm_model *m = userdata;
  const int64_t rows = dst->src[0]->ne[1];
  const int64_t per = ((rows + nth - 1) / nth + 3) / 4 * 4;
  const int64_t m0 = (int64_t)ith * per, m1 = m0 + per < rows ? m0 + per : rows;
  if (m0 >= m1) return;
  gemm_rows(dst, m0, m1, m->gemm_scratch ? m->gemm_scratch + (size_t)ith * m->gemm_scratch_per : NULL);
}

/* 1: the type has a kernel of its own; 2: through decoded panels (a
 * batch) or GGML's one-row product (one column); 0: no (GGML's product). */
static int gemm_route(const struct ggml_tensor *w, const struct ggml_tensor *x) {
  if (!llm_gemm_kernel(GGML_TYPE_F32) || w->extra || w->nb[0] != ggml_type_size(w->type) || w->ne[2] != 1 || w->ne[3] != 1 ||
      x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->ne[2] != 1 || x->ne[3] != 1 ||
      !ggml_is_contiguous(x) || x->ne[1] < LLM_GEMM_MIN_TOKENS)
    return 0;
  if (llm_gemm_kernel(w->type)) return 1;
  if (!ggml_is_quantized(w->type)) return 0;
  const struct ggml_type_traits_cpu *tr = ggml_get_type_traits_cpu(w->type);
  if (x->ne[1] == 1) /* the quantized column (8-bit codes and scales) fits the scratch's k floats */
    return tr->vec_dot && ggml_get_type_traits_cpu(tr->vec_dot_type)->from_float ? 2 : 0;
  const int64_t min_tokens = w->type == GGML_TYPE_Q8_0 ? LLM_GEMM_Q8_MIN_TOKENS : LLM_GEMM_DEQ_MIN_TOKENS;
  return ggml_get_type_traits(w->type)->to_float && x->ne[1] >= min_tokens ? 2 : 0;
}

struct ggml_tensor *llm_mm(llm_build *b, struct ggml_tensor *w, struct ggml_tensor *x) {
  struct ggml_context *ctx = b->ctx;
  /* the kernels are CPU code (a custom operator): never on a device */
  const int route = b->m->fused_gemm && !b->m->dev ? gemm_route(w, x) : 0;
  if (!route) return ggml_mul_mat(ctx, w, x);
  struct ggml_tensor *xc = x;
  /* one column against F16 weights is rounded in the thread's scratch
   * (gemm_rows): two copy nodes per product would cost a decode step more
   * than the rounding */
  const int round_in_scratch = route == 1 && w->type == GGML_TYPE_F16 && x->ne[1] == 1;
  if (route == 1 && w->type != GGML_TYPE_F32 && !round_in_scratch) {
    xc = ggml_cpy(ctx, x, ggml_new_tensor_2d(ctx, w->type, x->ne[0], x->ne[1]));
    xc = ggml_cpy(ctx, xc, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1]));
  }
  if ((route == 2 || round_in_scratch) && w->ne[0] > b->m->gemm_scratch_k) b->m->gemm_scratch_k = w->ne[0];
  struct ggml_tensor *args[2] = {w, xc};
  return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], 1, 1, args, 2, gemm_op,
                        GGML_N_TASKS_MAX, b->m);
}

fm_status llm_gemm_reserve(llm_model *m, int n_threads, fm_err *err) {
  if (m->gemm_scratch_k == 0) return FM_OK;
  const size_t per = (size_t)LLM_GEMM_DEQ_ROWS * (size_t)m->gemm_scratch_k;
  if (m->gemm_scratch && m->gemm_scratch_per >= per && m->gemm_scratch_threads >= n_threads)
    return FM_OK;
  float *p = malloc(per * (size_t)n_threads * sizeof *p);
  if (!p)
    return fm_err_set(err, FM_ENOMEM, "out of memory for %d x %zu floats of decoded weight panels",
                      n_threads, per);
  free(m->gemm_scratch);
  m->gemm_scratch = p;
  m->gemm_scratch_per = per;
  m->gemm_scratch_threads = n_threads;
  return FM_OK;
}
