/* Tests for fm_stats_ldscore (generated data only).
 * Oracle: the correlation matrix of generated genotype-like columns,
 * computed densely here (two-pass), masked to a window of w variants each
 * side, then squared (or the LDSC-adjusted square) and summed per column
 * directly from the dense matrix; the band under test is built from the
 * same dense matrix, in f64 and f32. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_band.h"
#include "fm/fm_base.h"
#include "fm/fm_stats_ldscore.h"
#include "fm_test.h"
#include "fm_test_band.h"

/* The n x n correlation matrix of n generated columns of m samples with 0/1/2
 * values, neighbours correlated (each column copies some of the previous
 * one's values); column `constant` (if >= 0) is all 1: zero variance, so
 * its row and column are 0 and its diagonal 1 (the band's convention). */
static double *dense_corr(int64_t m, int64_t n, int64_t constant, uint64_t seed) {
  double *X = malloc((size_t)(m * n) * sizeof *X);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      if (j == constant) {
        X[i + j * m] = 1;
      } else if (j > 0 && j - 1 != constant && fm_test_rng_unif(&seed) < 0.7) {
        X[i + j * m] = X[i + (j - 1) * m];
      } else {
        X[i + j * m] = (double)(fm_test_rng_next(&seed) % 3);
      }
    }
  double *mu = calloc((size_t)n, sizeof *mu), *sd = calloc((size_t)n, sizeof *sd);
  for (int64_t j = 0; j < n; j++) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < m; i++) s += X[i + j * m];
    mu[j] = s / (double)m;
    for (int64_t i = 0; i < m; i++) ss += (X[i + j * m] - mu[j]) * (X[i + j * m] - mu[j]);
    sd[j] = sqrt(ss);
  }
  double *D = malloc((size_t)(n * n) * sizeof *D);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      if (i == j) {
        D[i + j * n] = 1;
      } else if (sd[i] == 0 || sd[j] == 0) {
        D[i + j * n] = 0;
      } else {
        double c = 0;
        for (int64_t r = 0; r < m; r++) c += (X[r + i * m] - mu[i]) * (X[r + j * m] - mu[j]);
        D[i + j * n] = c / (sd[i] * sd[j]);
      }
    }
  free(X);
  free(mu);
  free(sd);
  return D;
}

/* Dense oracle: sum over |i - j| <= w of f(D[i, j]). */
static double oracle(const double *D, int64_t n, int64_t j, int64_t w, int64_t n_samples) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) {
    if (llabs(i - j) > w) continue;
    double r2 = D[i + j * n] * D[i + j * n];
    s += n_samples > 2 ? r2 - (1 - r2) / (double)(n_samples - 2) : r2;
  }
  return s;
}

static void check_against_dense(int64_t m, int64_t n, int64_t w, int64_t constant,
                                fm_band_dtype dtype, int64_t n_samples, double rtol) {
  double *D = dense_corr(m, n, constant, (uint64_t)(n * 7919 + w));
  test_band t;
  band_make(&t, D, n, w, 0, 0, dtype);
  double *got = malloc((size_t)(n ? n : 1) * sizeof *got);
  fm_err err;
  CHECK_OK(fm_stats_ldscore(&t.b, n_samples, got, NULL, &err), &err);
  for (int64_t j = 0; j < n; j++) CHECK_CLOSE(got[j], oracle(D, n, j, w, n_samples), rtol);
  if (constant >= 0 && constant < n && n_samples == 0) CHECK(got[constant] == 1.0);
  free(got);
  band_free(&t);
  free(D);
}

static void test_dense_f64(void) {
  check_against_dense(50, 40, 5, -1, FM_BAND_F64, 0, 1e-14);
  check_against_dense(37, 60, 59, -1, FM_BAND_F64, 0, 1e-14); /* window = whole matrix */
  check_against_dense(20, 30, 0, -1, FM_BAND_F64, 0, 0);      /* diagonal only: exactly 1 */
  check_against_dense(64, 25, 3, 7, FM_BAND_F64, 0, 1e-14);   /* a constant column */
}

static void test_dense_f32(void) {
  /* floats hold r to 6e-8 relative: r^2 to about 1.2e-7, a sum no worse */
  check_against_dense(50, 40, 5, -1, FM_BAND_F32, 0, 2e-7);
  check_against_dense(64, 25, 3, 7, FM_BAND_F32, 0, 2e-7);
}

static void test_adjusted(void) {
  check_against_dense(50, 40, 5, -1, FM_BAND_F64, 50, 1e-13);
  check_against_dense(64, 25, 3, 7, FM_BAND_F64, 64, 1e-13);
  check_against_dense(50, 40, 5, -1, FM_BAND_F32, 3, 2e-6);
}

static void test_edges(void) {
  fm_err err;
  /* n = 0: nothing to write, scores_out may be NULL */
  int64_t cp0[1] = {0};
  fm_band b0 = {0, cp0, NULL, NULL, FM_BAND_F64};
  CHECK_OK(fm_stats_ldscore(&b0, 0, NULL, NULL, &err), &err);
  /* a column with no stored entry scores 0; one variant alone scores 1 */
  int64_t cp[3] = {0, 0, 1};
  int32_t ri[1] = {1};
  double v[1] = {1.0};
  fm_band b = {2, cp, ri, v, FM_BAND_F64};
  double out[2] = {-1, -1};
  CHECK_OK(fm_stats_ldscore(&b, 0, out, NULL, &err), &err);
  CHECK(out[0] == 0.0 && out[1] == 1.0);
  /* negative correlations square like positive ones */
  int64_t cp2[3] = {0, 2, 4};
  int32_t ri2[4] = {0, 1, 0, 1};
  double v2[4] = {1.0, -0.5, -0.5, 1.0};
  fm_band b2 = {2, cp2, ri2, v2, FM_BAND_F64};
  CHECK_OK(fm_stats_ldscore(&b2, 0, out, NULL, &err), &err);
  CHECK(out[0] == 1.25 && out[1] == 1.25);
}

static void test_errors(void) {
  fm_err err;
  double out[2];
  int64_t cp[3] = {0, 2, 4};
  int32_t ri[4] = {0, 1, 0, 1};
  double v[4] = {1.0, 0.5, 0.5, 1.0};
  fm_band b = {2, cp, ri, v, FM_BAND_F64};
  CHECK(fm_stats_ldscore(NULL, 0, out, NULL, &err) == FM_EARG);
  CHECK(fm_stats_ldscore(&b, 0, NULL, NULL, &err) == FM_EARG);
  CHECK(fm_stats_ldscore(&b, 2, out, NULL, &err) == FM_EARG);
  CHECK(fm_stats_ldscore(&b, -5, out, NULL, &err) == FM_EARG);
  fm_band bad = b;
  bad.dtype = (fm_band_dtype)7;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  bad = b;
  bad.n = -1;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  bad = b;
  bad.values = NULL;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  int64_t cpd[3] = {0, 3, 2};
  bad = b;
  bad.colptr = cpd;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "column 1") != NULL);
  int64_t cps[3] = {1, 2, 4};
  bad = b;
  bad.colptr = cps;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  double vn[4] = {1.0, NAN, 0.5, 1.0};
  bad = b;
  bad.values = vn;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "column 0") != NULL);
  float vf[4] = {1.0f, 0.5f, 1.5f, 1.0f};
  bad = b;
  bad.values = vf;
  bad.dtype = FM_BAND_F32;
  CHECK(fm_stats_ldscore(&bad, 0, out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "column 1") != NULL);
}

/* Cancellation: a callback that says stop at its first poll. */
static int polls;
static int stop_now(void *ud) {
  (void)ud;
  polls++;
  return 1;
}
static double last_done;
static void note(void *ud, double done, double total) {
  (void)ud;
  (void)total;
  last_done = done;
}

static void test_cancel_and_progress(void) {
  /* 3000 columns of 401 values: about 1.2e6 values, so one poll midway */
  const int64_t n = 3000, w = 200;
  double *D = calloc((size_t)(n * n), sizeof *D);
  for (int64_t j = 0; j < n; j++) D[j + j * n] = 1;
  test_band t;
  band_make(&t, D, n, w, 0, 0, FM_BAND_F64);
  double *out = malloc((size_t)n * sizeof *out);
  fm_err err;
  fm_ctl ctl;
  memset(&ctl, 0, sizeof ctl);
  ctl.cancel = stop_now;
  polls = 0;
  CHECK(fm_stats_ldscore(&t.b, 0, out, &ctl, &err) == FM_ECANCELLED);
  CHECK(polls == 1);
  memset(&ctl, 0, sizeof ctl);
  ctl.progress = note;
  last_done = 0;
  CHECK_OK(fm_stats_ldscore(&t.b, 0, out, &ctl, &err), &err);
  CHECK(last_done == (double)n);
  for (int64_t j = 0; j < n; j++) CHECK(out[j] == 1.0);
  free(out);
  band_free(&t);
  free(D);
}

int main(void) {
  FM_RUN(test_dense_f64);
  FM_RUN(test_dense_f32);
  FM_RUN(test_adjusted);
  FM_RUN(test_edges);
  FM_RUN(test_errors);
  FM_RUN(test_cancel_and_progress);
  FM_TEST_END();
}
