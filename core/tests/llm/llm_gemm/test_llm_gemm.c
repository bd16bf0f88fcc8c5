/* test_llm_gemm.c: the fused batch-product kernels (llm_gemm.h), each ISA
 * path this CPU runs (AVX2, AVX-512: skipped with a message where absent),
 * against a double-precision reference of the same values, on shapes with
 * partial tiles (rows not a multiple of 4, columns not a multiple of 3 or
 * 6, lengths not a multiple of 8 or 16) and extreme values (F16 subnormals
 * and 65504, F32 values of 1e30 and 1e-30).
 * Tolerance, from the arithmetic (llm_gemm.h): gamma(n + 4) * sum of
 * |w_e x_e|, gamma(n) = n u / (1 - n u), u = 2^-24, n the elements. Also:
 * the dispatcher follows the ISA cap (no kernel below avx2: GGML's
 * products), and quantized types have no kernel of their own (they reach
 * the F32 kernel as decoded panels).
 * The routes of llm_mm in a GGML graph on 1 and 3 threads, at each ISA
 * level, within the same bound: decoded panels (Q8_0, Q4_0, Q5_0, Q4_K and
 * Q6_K weights) against a double product of the rows GGML's to_float
 * decodes, GGML's own product below the route's minimum batch; one column
 * (a decode step) against F16 weights, rounded to F16 as GGML rounds it,
 * and against F32 weights; one column against those quantized weights,
 * GGML's one-row product taken row by row with prefetching, equal to
 * GGML's mul_mat bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_cpu.h"
#include "fm_test.h"
#include "llm/llm_gemm.h"
#include "llm/llm_impl.h"

static uint64_t rng = 42;

static double gamma_n(double n) {
  const double u = ldexp(1.0, -24);
  return n * u / (1.0 - n * u);
}

/* A random half with exponent in [lo, hi] (biased), random sign and mantissa. */
static uint16_t rand_half(int lo, int hi) {
  uint64_t r = fm_test_rng_next(&rng);
  unsigned e = (unsigned)(lo + (int)(r % (uint64_t)(hi - lo + 1)));
  return (uint16_t)(((r >> 20) & 1u) << 15 | e << 10 | ((r >> 32) & 0x3ffu));
}

enum { T_F16, T_F32 };

static double ref_fp(const void *w, const void *x, int64_t k, int f32, double *abs_sum) {
  double s = 0, a = 0;
  for (int64_t e = 0; e < k; e++) {
    double t = (f32 ? (double)((const float *)w)[e] : (double)ggml_fp16_to_fp32(((const uint16_t *)w)[e])) *
               ((const float *)x)[e];
    s += t;
    a += fabs(t);
  }
  *abs_sum = a;
  return s;
}

/* One kernel on an m x k weight matrix and n columns, rows [m0, m1). */
static void check_kernel(llm_gemm_fn fn, int type, int64_t m, int64_t n, int64_t k, int64_t m0,
                         int64_t m1, int extreme) {
  const size_t row = (size_t)k * (type == T_F32 ? sizeof(float) : 2), xrow = (size_t)k * sizeof(float);
  uint8_t *w = malloc((size_t)m * row), *x = malloc((size_t)n * xrow);
  const int64_t ldy = m + 5; /* a padded output: untouched cells stay NaN */
  float *y = malloc((size_t)(ldy * n) * sizeof *y);
  CHECK(w && x && y);
  if (!w || !x || !y) goto done;
  if (type == T_F32) {
    float *w32 = (float *)(void *)w, *x32 = (float *)(void *)x;
    for (int64_t i = 0; i < m * k; i++) w32[i] = (float)(fm_test_rng_unif(&rng) - 0.5) * (extreme && i % 5 == 0 ? 1e30f : 1.0f);
    for (int64_t i = 0; i < n * k; i++) x32[i] = (float)(fm_test_rng_unif(&rng) - 0.5) * (extreme && i % 7 == 0 ? 1e-30f : 1.0f);
  } else {
    /* activations: F16 values, widened (llm_gemm.h) */
    uint16_t *w16 = (uint16_t *)(void *)w;
    float *x32 = (float *)(void *)x;
    for (int64_t i = 0; i < m * k; i++) w16[i] = extreme && i % 5 == 0 ? (uint16_t)(i % 1024) : rand_half(8, 20);
    for (int64_t i = 0; i < n * k; i++)
      x32[i] = ggml_fp16_to_fp32(extreme && i % 7 == 0 ? 0x7bffu /* 65504 */ : rand_half(8, 20));
  }
  for (int64_t i = 0; i < ldy * n; i++) y[i] = NAN;
  llm_gemm_task t = {w, row, x, xrow, y, ldy, k, m0, m1, n};
  fn(&t);
  int bad = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < ldy; i++) {
      const float got = y[j * ldy + i];
      if (i < m0 || i >= m1) {
        bad += !isnan(got);
        continue;
      }
      double abs_sum;
      const double ref = ref_fp(w + (size_t)i * row, x + (size_t)j * xrow, k, type == T_F32, &abs_sum);
      const double bound = gamma_n((double)k + 4) * abs_sum + 1e-45;
      if (!(fabs(got - ref) <= bound)) {
        if (bad < 3)
          fprintf(stderr, "  %s k=%lld y[%lld,%lld] = %.9g, reference %.9g, bound %.3g\n",
                  type == T_F32 ? "F32" : "F16", (long long)k, (long long)i, (long long)j, got, ref, bound);
        bad++;
      }
    }
  CHECK(bad == 0);
done:
  free(w);
  free(x);
  free(y);
}

/* The kernel of `type` at ISA level `cap` (the dispatcher's choice, checked
 * to be that level's), run on every shape; skipped where the CPU or FM_ISA
 * does not reach the level. */
static void check_level(int type, fm_isa cap) {
  const llm_gemm_fn kernels[2][2] = {{llm_gemm_f16_avx2, llm_gemm_f32_avx2},
                                     {llm_gemm_f16_avx512, llm_gemm_f32_avx512}};
  static const enum ggml_type types[2] = {GGML_TYPE_F16, GGML_TYPE_F32};
  static const int64_t ks[] = {1, 7, 17, 75, 768};
  fm_cpu_cap(cap);
  llm_gemm_fn fn = fm_cpu_isa() == cap ? llm_gemm_kernel(types[type]) : NULL;
  if (!fn) {
    fprintf(stderr, "  %s: not run here (CPU, F16C or FM_ISA): its kernels not tested\n",
            fm_cpu_isa_name(cap));
    fm_cpu_cap(FM_ISA_AVX512);
    return;
  }
  CHECK(fn == kernels[cap == FM_ISA_AVX512][type]);
  for (int ik = 0; ik < 5; ik++) {
    const int64_t k = ks[ik];
    for (int64_t n = 1; n <= 13; n += 3) check_kernel(fn, type, 37, n, k, 0, 37, 0);
    check_kernel(fn, type, 37, 13, k, 5, 30, 0); /* a row range, as a thread takes */
    check_kernel(fn, type, 37, 1, k, 5, 30, 0);  /* one column (the GEMV) */
    check_kernel(fn, type, 9, 4, k, 0, 9, 1);    /* extreme values */
    check_kernel(fn, type, 9, 1, k, 0, 9, 1);
  }
  fm_cpu_cap(FM_ISA_AVX512);
}

static void check_type(int type) {
  check_level(type, FM_ISA_AVX2);
  check_level(type, FM_ISA_AVX512);
}

static void test_f16(void) { check_type(T_F16); }
static void test_f32(void) { check_type(T_F32); }

/* The dispatcher gives no kernel under a portable cap (the graph then
 * keeps GGML's products), the AVX2 ones under an avx2 cap and the widest
 * the CPU runs without a cap; none for quantized types (decoded panels). */
static void test_dispatch(void) {
  fm_cpu_cap(FM_ISA_PORTABLE);
  CHECK(llm_gemm_kernel(GGML_TYPE_F16) == NULL);
  CHECK(llm_gemm_kernel(GGML_TYPE_F32) == NULL);
  fm_cpu_cap(FM_ISA_AVX2);
  if (llm_gemm_kernel(GGML_TYPE_F32)) CHECK(llm_gemm_kernel(GGML_TYPE_F16) == llm_gemm_f16_avx2);
  fm_cpu_cap(FM_ISA_AVX512);
  if (llm_gemm_kernel(GGML_TYPE_F32)) {
    CHECK(fm_cpu_isa() >= FM_ISA_AVX2);
    CHECK(llm_gemm_kernel(GGML_TYPE_F16) ==
          (fm_cpu_isa() == FM_ISA_AVX512 ? llm_gemm_f16_avx512 : llm_gemm_f16_avx2));
  }
  CHECK(llm_gemm_kernel(GGML_TYPE_Q8_0) == NULL);
  CHECK(llm_gemm_kernel(GGML_TYPE_Q4_0) == NULL);
}

/* A product to lower: a model with the fused products on, and in ctx an
 * m x k matrix W of `type` coded from random values (their floats in wf,
 * m * k) and n random F32 columns X. 0 when out of memory. */
typedef struct route_case {
  llm_model *model;
  struct ggml_context *ctx;
  struct ggml_tensor *w, *x;
  float *wf;
} route_case;

static int route_case_new(route_case *c, enum ggml_type type, int64_t m, int64_t k, int64_t n) {
  c->model = calloc(1, sizeof *c->model);
  struct ggml_init_params ip = {(size_t)64 << 20, NULL, false};
  c->ctx = ggml_init(ip);
  c->wf = malloc((size_t)(m * k) * sizeof *c->wf);
  CHECK(c->model && c->ctx && c->wf);
  if (!c->model || !c->ctx || !c->wf) return 0;
  c->model->fused_gemm = 1;
  c->w = ggml_new_tensor_2d(c->ctx, type, k, m);
  c->x = ggml_new_tensor_2d(c->ctx, GGML_TYPE_F32, k, n);
  for (int64_t i = 0; i < m * k; i++) c->wf[i] = (float)(fm_test_rng_unif(&rng) - 0.5);
  ggml_quantize_chunk(type, c->wf, c->w->data, 0, m, k, NULL);
  for (int64_t i = 0; i < n * k; i++) ((float *)c->x->data)[i] = (float)(fm_test_rng_unif(&rng) - 0.5);
  return 1;
}

static void route_case_free(route_case *c) {
  free(c->wf);
  if (c->model) free(c->model->gemm_scratch);
  free(c->model);
  if (c->ctx) ggml_free(c->ctx);
}

static struct ggml_tensor *route_case_mm(route_case *c) {
  llm_build b = {0};
  b.m = c->model;
  b.ctx = c->ctx;
  return llm_mm(&b, c->w, c->x);
}

/* y = llm_mm(W, X) for W (m x k) of `type` coded from random values and
 * n random F32 columns, computed on n_threads; returns the number of
 * outputs off the double product of to_float's rows (and, against F16,
 * the columns rounded to F16) by more than the bound, or -1 when llm_mm
 * chose GGML's product (route 0). */
static int64_t route_bad(enum ggml_type type, int64_t m, int64_t k, int64_t n,
                               int n_threads) {
  route_case c;
  if (!route_case_new(&c, type, m, k, n)) {
    route_case_free(&c);
    return 1;
  }
  llm_model *model = c.model;
  struct ggml_context *ctx = c.ctx;
  struct ggml_tensor *w = c.w, *x = c.x, *y = route_case_mm(&c);
  float *wf = c.wf;
  int64_t bad = -1;
  if (y->op == GGML_OP_MUL_MAT) goto done;
  bad = 0;
  CHECK(model->gemm_scratch_k == (type == GGML_TYPE_F32 || (type == GGML_TYPE_F16 && n > 1) ? 0 : k));
  fm_err err = {0};
  CHECK_OK(llm_gemm_reserve(model, n_threads, &err), &err);
  struct ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, y);
  CHECK(ggml_graph_compute_with_ctx(ctx, gf, n_threads) == GGML_STATUS_SUCCESS);
  const ggml_to_float_t to_float = ggml_get_type_traits(type)->to_float;
  if (type == GGML_TYPE_F16)
    for (int64_t i = 0; i < n * k; i++)
      ((float *)x->data)[i] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(((float *)x->data)[i]));
  for (int64_t i = 0; i < m; i++) {
    const char *row = (const char *)w->data + (size_t)i * w->nb[1];
    if (type == GGML_TYPE_F32) memcpy(wf, row, (size_t)k * sizeof *wf);
    else to_float(row, wf, k); /* the row the route decodes */
    for (int64_t j = 0; j < n; j++) {
      double abs_sum;
      const double ref = ref_fp(wf, (const float *)x->data + j * k, k, 1, &abs_sum);
      const float got = ((const float *)y->data)[j * m + i];
      if (!(fabs(got - ref) <= gamma_n((double)k + 4) * abs_sum)) {
        if (bad < 3)
          fprintf(stderr, "  %s y[%lld,%lld] = %.9g, reference %.9g\n", ggml_type_name(type),
                  (long long)i, (long long)j, got, ref);
        bad++;
      }
    }
  }
done:
  route_case_free(&c);
  return bad;
}

/* One column against quantized weights: llm_mm takes GGML's own one-row
 * product (its vec_dot, the activations quantized by its from_float), so
 * the result is GGML's mul_mat's bit for bit, on 1 and 3 threads. */
static void check_one_column(enum ggml_type type, int64_t m, int64_t k) {
  route_case c;
  if (!route_case_new(&c, type, m, k, 1)) {
    route_case_free(&c);
    return;
  }
  llm_model *model = c.model;
  struct ggml_context *ctx = c.ctx;
  struct ggml_tensor *y = route_case_mm(&c), *ref = ggml_mul_mat(ctx, c.w, c.x);
  CHECK(y->op == GGML_OP_CUSTOM);
  CHECK(model->gemm_scratch_k == k);
  for (int threads = 1; threads <= 3; threads += 2) {
    fm_err err = {0};
    CHECK_OK(llm_gemm_reserve(model, threads, &err), &err);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    ggml_build_forward_expand(gf, ref);
    CHECK(ggml_graph_compute_with_ctx(ctx, gf, threads) == GGML_STATUS_SUCCESS);
    int64_t differ = 0;
    for (int64_t i = 0; i < m; i++) differ += ((float *)y->data)[i] != ((float *)ref->data)[i];
    if (differ) fprintf(stderr, "  %s one column, %d threads: %lld of %lld outputs differ\n",
                        ggml_type_name(type), threads, (long long)differ, (long long)m);
    CHECK(differ == 0);
  }
  route_case_free(&c);
}

static void test_routes(void) {
  static const enum ggml_type types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q5_0,
                                         GGML_TYPE_Q4_K, GGML_TYPE_Q6_K};
  static const fm_isa caps[] = {FM_ISA_AVX2, FM_ISA_AVX512};
  for (int c = 0; c < 2; c++) {
    fm_cpu_cap(caps[c]);
    if (fm_cpu_isa() != caps[c] || !llm_gemm_kernel(GGML_TYPE_F32)) {
      fprintf(stderr, "  routes at %s: not run here (CPU, F16C or FM_ISA)\n",
              fm_cpu_isa_name(caps[c]));
      continue;
    }
    for (int t = 0; t < 5; t++) {
      const int64_t min = types[t] == GGML_TYPE_Q8_0 ? LLM_GEMM_Q8_MIN_TOKENS : LLM_GEMM_DEQ_MIN_TOKENS;
      /* 37 rows: two full panels of 16 and a partial one, tiles of 4 and 1 */
      CHECK(route_bad(types[t], 37, 512, min - 1, 1) == -1);
      CHECK(route_bad(types[t], 37, 512, min, 1) == 0);
      CHECK(route_bad(types[t], 37, 256, min + 5, 3) == 0);
    }
    for (int t = 0; t < 5; t++) { /* one column: 37 rows, and 300 (prefetches within the rows) */
      check_one_column(types[t], 37, 512);
      check_one_column(types[t], 300, 256);
    }
    for (int t = 0; t < 2; t++) { /* one column: the GEMV */
      const enum ggml_type ty = t ? GGML_TYPE_F16 : GGML_TYPE_F32;
      CHECK(route_bad(ty, 37, 768, 1, 1) == 0);
      CHECK(route_bad(ty, 37, 75, 1, 3) == 0);
      CHECK(route_bad(ty, 37, 75, 2, 3) == 0);
    }
  }
  fm_cpu_cap(FM_ISA_PORTABLE); /* no kernels: GGML's product at any batch */
  CHECK(route_bad(GGML_TYPE_Q4_K, 8, 256, 64, 1) == -1);
  fm_cpu_cap(FM_ISA_AVX512);
}

int main(void) {
  FM_RUN(test_f16);
  FM_RUN(test_f32);
  FM_RUN(test_dispatch);
  FM_RUN(test_routes);
  FM_TEST_END();
}
