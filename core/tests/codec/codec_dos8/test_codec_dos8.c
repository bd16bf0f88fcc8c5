/* Tests for fm_codec_dos8.h and the DOS8 path of fm_panel_decode.
 * Oracle: the documented quantization q = round(d * 127), value q / 127,
 * applied element by element. Data generated. */
#include "fm/fm_codec_dos8.h"
#include "fm/fm_panel.h"

#include "fm_test.h"

#include <stdint.h>
#include <string.h>

static uint64_t rng_state = 12345;
static uint64_t rng_next(void) { return fm_test_rng_next(&rng_state); }
static double rng_unif(void) { return fm_test_rng_unif(&rng_state); }
static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void test_values(void) {
  CHECK(fm_codec_dos8_value(0) == 0.0);
  CHECK(fm_codec_dos8_value(127) == 1.0);
  CHECK(fm_codec_dos8_value(254) == 2.0);
  CHECK(isnan(fm_codec_dos8_value(FM_DOS8_MISSING)));
  for (int q = 0; q < 255; q++) CHECK(fm_codec_dos8_value((uint8_t)q) == q / 127.0);
}

static void test_round_trip(void) {
  fm_err err;
  const int64_t ns[] = {1, 5, 63, 64, 65, 1001};
  for (int t = 0; t < 6; t++) {
    const int64_t n = ns[t], m = 4, ld = n + 1, out_ld = n + 3;
    double *x = malloc(sizeof(double) * (size_t)(ld * m));
    uint8_t *q = malloc((size_t)(out_ld * m));
    double *dec = malloc(sizeof(double) * (size_t)(n * m));
    for (int64_t i = 0; i < ld * m; i++) x[i] = rng_unif() < 0.1 ? NAN : 2.0 * rng_unif();
    x[0] = 0.0;
    if (n > 1) x[1] = 2.0;
    if (n > 2) x[2] = 2.0 + 1e-12; /* rounding noise above 2 is accepted */
    CHECK_OK(fm_codec_dos8_encode(x, n, m, ld, q, out_ld, &err), &err);
    fm_mat mat;
    CHECK_OK(fm_mat_init(&mat, FM_CODEC_DOS8, q, n, m, out_ld, &err), &err);
    CHECK_OK(fm_panel_decode(&mat, NULL, 0, n, 0, m, dec, n, &err), &err);
    double worst = 0.0;
    int bad = 0;
    for (int64_t j = 0; j < m; j++)
      for (int64_t i = 0; i < n; i++) {
        double d = x[i + j * ld], v = dec[i + j * n];
        uint8_t code = q[i + j * out_ld];
        if (isnan(d)) {
          bad += !(isnan(v) && code == FM_DOS8_MISSING);
          continue;
        }
        bad += code > 254 || code != (uint8_t)round((d > 2 ? 2 : d) * 127.0);
        if (fabs(v - d) > worst) worst = fabs(v - d);
      }
    CHECK(bad == 0);
    CHECK(worst <= 1.0 / 254.0 + 1e-12);
    CHECK(dec[0] == 0.0);
    if (n > 2) CHECK(dec[1] == 2.0 && dec[2] == 2.0);
    free(x);
    free(q);
    free(dec);
  }
}

/* The LUT path (>= 64 rows) and the direct path agree with decode-then-transform. */
static void test_affine_fusion(void) {
  fm_err err;
  const int64_t n = 300, m = 5;
  uint8_t *q = malloc((size_t)(n * m));
  for (int64_t i = 0; i < n * m; i++) q[i] = (uint8_t)(rng_next() % 256);
  double center[5], scale[5], fill[5];
  for (int j = 0; j < 5; j++) {
    center[j] = 2 * rng_unif();
    scale[j] = 0.1 + rng_unif();
    fill[j] = rng_unif();
  }
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, q, n, m, n, &err), &err);
  int64_t idx[5] = {4, 4, 0, 2, 1};
  x.col_index = idx;
  double *out = malloc(sizeof(double) * (size_t)(n * m));
  for (int mask = 0; mask < 8; mask++) {
    fm_affine aff = {.center = (mask & 1) ? center : NULL,
                     .scale = (mask & 2) ? scale : NULL,
                     .fill = (mask & 4) ? fill : NULL};
    const int64_t spans[][2] = {{0, 300}, {7, 13}, {100, 64}, {299, 1}, {3, 200}};
    for (int s = 0; s < 5; s++) {
      int64_t r0 = spans[s][0], nr = spans[s][1];
      CHECK_OK(fm_panel_decode(&x, &aff, r0, nr, 0, m, out, nr, &err), &err);
      int bad = 0;
      for (int64_t j = 0; j < m; j++)
        for (int64_t i = 0; i < nr; i++) {
          double v = fm_codec_dos8_value(q[r0 + i + idx[j] * n]);
          double c = aff.center ? center[j] : 0.0, sc = aff.scale ? scale[j] : 1.0;
          double want = isnan(v) ? (aff.fill ? fill[j] : NAN) : (v - c) * sc;
          bad += !same(out[i + j * nr], want);
        }
      CHECK(bad == 0);
    }
  }
  free(q);
  free(out);
}

static void test_rejects(void) {
  fm_err err;
  double x[6] = {0.5, 1.0, 1.5, 0.0, 2.5, 1.0};
  uint8_t q[6];
  CHECK(fm_codec_dos8_encode(x, 3, 2, 3, q, 3, &err) == FM_EARG);
  CHECK(strstr(err.msg, "x[2, 2] = 2.5") != NULL);
  x[4] = -0.01;
  CHECK(fm_codec_dos8_encode(x, 3, 2, 3, q, 3, &err) == FM_EARG);
  CHECK(strstr(err.msg, "x[2, 2]") != NULL);
  x[4] = INFINITY;
  CHECK(fm_codec_dos8_encode(x, 3, 2, 3, q, 3, &err) == FM_EARG);
  x[4] = 2.001;
  CHECK(fm_codec_dos8_encode(x, 3, 2, 3, q, 3, &err) == FM_EARG);
  x[4] = -1e-12; /* rounding noise below 0 clamps to 0 */
  CHECK_OK(fm_codec_dos8_encode(x, 3, 2, 3, q, 3, &err), &err);
  CHECK(q[4] == 0);
  CHECK(fm_codec_dos8_encode(x, 3, 2, 2, q, 3, &err) == FM_EARG);
  CHECK(fm_codec_dos8_encode(x, 3, 2, 3, q, 2, &err) == FM_EARG);
  CHECK_OK(fm_codec_dos8_encode(NULL, 0, 3, 0, NULL, 0, &err), &err);
}

static void test_all_missing(void) {
  fm_err err;
  double x[70];
  for (int i = 0; i < 70; i++) x[i] = NAN;
  uint8_t q[70];
  CHECK_OK(fm_codec_dos8_encode(x, 70, 1, 70, q, 70, &err), &err);
  for (int i = 0; i < 70; i++) CHECK(q[i] == FM_DOS8_MISSING);
  fm_mat m;
  CHECK_OK(fm_mat_init(&m, FM_CODEC_DOS8, q, 70, 1, 70, &err), &err);
  double fill = 0.0, center = 1.0;
  fm_affine aff = {.center = &center, .fill = &fill};
  double out[70];
  CHECK_OK(fm_panel_decode(&m, &aff, 0, 70, 0, 1, out, 70, &err), &err);
  for (int i = 0; i < 70; i++) CHECK(out[i] == 0.0);
}

int main(void) {
  FM_RUN(test_values);
  FM_RUN(test_round_trip);
  FM_RUN(test_affine_fusion);
  FM_RUN(test_rejects);
  FM_RUN(test_all_missing);
  FM_TEST_END();
}
