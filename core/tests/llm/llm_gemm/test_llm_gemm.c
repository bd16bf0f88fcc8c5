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
 * the F32 kernel as decoded panels). */
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
    check_kernel(fn, type, 9, 4, k, 0, 9, 1);    /* extreme values */
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

int main(void) {
  FM_RUN(test_f16);
  FM_RUN(test_f32);
  FM_RUN(test_dispatch);
  FM_TEST_END();
}
