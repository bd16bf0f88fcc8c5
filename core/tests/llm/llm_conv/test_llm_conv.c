/* test_llm_conv.c: the direct dilated convolution (llm_conv.h), each ISA
 * path this CPU runs (AVX2, AVX-512: skipped with a message where absent),
 * against double precision: widths 1 to 41, dilations 1 to 25, input
 * channels 4 and 32, outputs of 1 to 4 vectors, sequences shorter than the
 * receptive field (every tap at an edge), with and without bias. Bound
 * (llm_conv.h): gamma(k I + 1) (|b| + sum |w x|) per output. Any split of
 * the positions into tasks (as GGML's threads take them) gives the same
 * bits. The dispatcher: no kernel for an output count that is not a
 * multiple of the lanes, none below avx2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_cpu.h"
#include "fm_test.h"
#include "llm/llm_conv.h"
#include "llm/llm_impl.h"

static uint64_t rng = 3;

static double gamma_n(double n) {
  const double u = ldexp(1.0, -24);
  return n * u / (1.0 - n * u);
}

static void check_case(llm_conv_fn fn, int64_t I, int64_t O, int64_t k, int64_t d, int64_t T, int with_bias) {
  const int64_t half = (k - 1) / 2;
  float *x = malloc((size_t)(T * I) * sizeof *x), *w = malloc((size_t)(k * I * O) * sizeof *w),
        *wr = malloc((size_t)(k * I * O) * sizeof *wr), *b = malloc((size_t)O * sizeof *b),
        *y = malloc((size_t)(T * O) * sizeof *y), *y2 = malloc((size_t)(T * O) * sizeof *y2);
  CHECK(x && w && wr && b && y && y2);
  if (!x || !w || !wr || !b || !y || !y2) goto done;
  for (int64_t i = 0; i < T * I; i++) x[i] = (float)(fm_test_rng_unif(&rng) * 4 - 2);
  for (int64_t i = 0; i < k * I * O; i++) w[i] = (float)(fm_test_rng_unif(&rng) - 0.5);
  for (int64_t i = 0; i < O; i++) b[i] = (float)(fm_test_rng_unif(&rng) - 0.5);
  /* w [k, I, O] (k fastest) to wr[j][i][o] */
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++)
      for (int64_t j = 0; j < k; j++) wr[(j * I + i) * O + o] = w[(o * I + i) * k + j];
  llm_conv_task t = {x, wr, with_bias ? b : NULL, y, T, I, O, k, d, 0, T, 0};
  fn(&t);
  int bad = 0;
  for (int64_t p = 0; p < T; p++)
    for (int64_t o = 0; o < O; o++) {
      double s = with_bias ? b[o] : 0, a = with_bias ? fabs(b[o]) : 0;
      for (int64_t j = 0; j < k; j++) {
        const int64_t q = p + (j - half) * d;
        if (q < 0 || q >= T) continue;
        for (int64_t i = 0; i < I; i++) {
          const double v = (double)w[(o * I + i) * k + j] * x[q * I + i];
          s += v;
          a += fabs(v);
        }
      }
      if (!(fabs(y[p * O + o] - s) <= gamma_n((double)(k * I + 1)) * a)) bad++;
    }
  if (bad)
    fprintf(stderr, "  I %lld O %lld k %lld d %lld T %lld: %d outputs outside the bound\n", (long long)I,
            (long long)O, (long long)k, (long long)d, (long long)T, bad);
  CHECK(bad == 0);
  /* three tasks over uneven ranges: the same bits */
  const int64_t cut[4] = {0, T / 3, T / 3 + (T > 5 ? 5 : 0), T};
  for (int c = 0; c < 3; c++) {
    llm_conv_task tc = {x, wr, with_bias ? b : NULL, y2, T, I, O, k, d, cut[c], cut[c + 1], 0};
    if (tc.t0 < tc.t1) fn(&tc);
  }
  CHECK(memcmp(y, y2, (size_t)(T * O) * sizeof *y) == 0);
  /* positions [a, T) only, written from y2's first row: the same bits */
  const int64_t a = T / 2;
  llm_conv_task ts = {x, wr, with_bias ? b : NULL, y2, T, I, O, k, d, a, T, a};
  memset(y2, 0, (size_t)(T * O) * sizeof *y2);
  fn(&ts);
  CHECK(memcmp(y + a * O, y2, (size_t)((T - a) * O) * sizeof *y) == 0);
done:
  free(x);
  free(w);
  free(wr);
  free(b);
  free(y);
  free(y2);
}

static void check_level(fm_isa cap) {
  fm_cpu_cap(cap);
  const llm_conv_fn fn = fm_cpu_isa() == cap ? llm_conv_kernel(32) : NULL;
  if (!fn) {
    fprintf(stderr, "  %s: not run here (CPU, F16C or FM_ISA): its kernel not tested\n", fm_cpu_isa_name(cap));
    fm_cpu_cap(FM_ISA_AVX512);
    return;
  }
  const int wide = cap == FM_ISA_AVX512;
  const int64_t vl = wide ? 16 : 8;
  CHECK(fn == (wide ? llm_conv_avx512 : llm_conv_avx2));
  CHECK(llm_conv_kernel(3) == NULL);
  CHECK(llm_conv_kernel(vl * (LLM_CONV_MAX_VEC + 1)) == NULL);
  static const int64_t shapes[][5] = {/* I, k, d, T, bias */
                                      {32, 11, 1, 300, 1}, {32, 11, 4, 257, 1}, {32, 21, 10, 700, 0},
                                      {32, 41, 25, 1500, 1}, {4, 1, 1, 37, 1},  {32, 1, 1, 19, 0},
                                      {32, 11, 4, 7, 1},    {32, 41, 25, 30, 1}, {32, 3, 2, 1, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int64_t nv = 1; nv <= LLM_CONV_MAX_VEC; nv++)
      check_case(fn, shapes[s][0], nv * vl, shapes[s][1], shapes[s][2], shapes[s][3], (int)shapes[s][4]);
  fm_cpu_cap(FM_ISA_PORTABLE);
  CHECK(llm_conv_kernel(32) == NULL);
  fm_cpu_cap(FM_ISA_AVX512);
}

static void test_kernels(void) {
  check_level(FM_ISA_AVX2);
  check_level(FM_ISA_AVX512);
}

int main(void) {
  FM_RUN(test_kernels);
  FM_TEST_END();
}
