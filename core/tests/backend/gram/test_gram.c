/* test_gram.c: fm_gram (fm_gram.h) against sums written out term by term,
 * for dense and 2-bit genotype views, with and without a column index and
 * an affine transform, missing values, panel budgets from one value per
 * panel to the default, plus symmetry, progress, cancel and errors. */
#include "fm/fm_codec_bed2.h"
#include "fm/fm_gram.h"

#include "fm_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* X[i, j] of the view as decoded (the reference: one fm_panel_decode). */
static double *decoded(const fm_mat *x, const fm_affine *aff) {
  const int64_t n = x->n_rows, p = x->n_cols;
  double *d = malloc((size_t)(n * p > 0 ? n * p : 1) * sizeof(double));
  fm_err err;
  CHECK_OK(fm_panel_decode(x, aff, 0, n, 0, p, d, n > 0 ? n : 1, &err), &err);
  return d;
}

/* out (m x m) against sum_k a(i, k) a(j, k) in double, NaN in -> NaN out. */
static int agrees(const double *out, int64_t ld, const double *d, int64_t n, int64_t p,
                  fm_gram_kind kind) {
  const int64_t m = kind == FM_GRAM_CROSS ? p : n, len = kind == FM_GRAM_CROSS ? n : p;
  for (int64_t j = 0; j < m; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < len; k++) {
        const double a = kind == FM_GRAM_CROSS ? d[k + i * n] : d[i + k * n];
        const double b = kind == FM_GRAM_CROSS ? d[k + j * n] : d[j + k * n];
        s += a * b;
        mag += fabs(a * b);
      }
      const double o = out[i + j * ld];
      if (out[i + j * ld] != out[j + i * ld] && !(isnan(o) && isnan(out[j + i * ld]))) return 0;
      if (isnan(s) != isnan(o)) return 0;
      /* summation order differs: len terms, each rounding by 2^-53 */
      if (!isnan(s) && fabs(o - s) > 2.0 * (double)len * 0x1p-53 * mag + 1e-300) return 0;
    }
  return 1;
}

static void check_all_budgets(const fm_mat *x, const fm_affine *aff, const char *what) {
  const size_t budgets[] = {8, 8 * 3, 8 * 37, 0};
  double *d = decoded(x, aff);
  for (int kind = FM_GRAM_CROSS; kind <= FM_GRAM_TCROSS; kind++)
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
      const int64_t m = kind == FM_GRAM_CROSS ? x->n_cols : x->n_rows, ld = m + 2;
      double *out = malloc((size_t)(ld * (m > 0 ? m : 1)) * sizeof(double));
      const fm_ctl ctl = {.panel_bytes = budgets[b]};
      fm_err err;
      CHECK_OK(fm_gram(x, aff, (fm_gram_kind)kind, out, ld, &ctl, &err), &err);
      if (!agrees(out, ld, d, x->n_rows, x->n_cols, (fm_gram_kind)kind)) {
        fprintf(stderr, "  mismatch: %s, kind %d, budget %zu\n", what, kind, budgets[b]);
        CHECK(0);
      }
      free(out);
    }
  free(d);
}

static void dense_views(void) {
  uint64_t rng = 7;
  const int64_t n = 23, q = 11;
  double *a = malloc((size_t)(n * q) * sizeof(double));
  for (int64_t i = 0; i < n * q; i++) a[i] = fm_test_rng_unif(&rng) * 4 - 2;
  fm_mat x;
  fm_err err;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, a, n, q, n * 8, &err), &err);
  check_all_budgets(&x, NULL, "f64");
  /* a column index (repeats, reversed) and an affine transform */
  int64_t idx[] = {10, 3, 3, 0, 7, 5, 1};
  double center[7], scale[7];
  for (int j = 0; j < 7; j++) center[j] = 0.25 * j, scale[j] = 1.0 / (j + 1);
  x.col_index = idx;
  x.n_cols = 7;
  const fm_affine aff = {.center = center, .scale = scale};
  check_all_budgets(&x, &aff, "f64 subset, centred and scaled");
  /* a missing value: NaN wherever it takes part, also against zeros */
  a[5 + 3 * n] = NAN;
  a[6 + 3 * n] = 0;
  check_all_budgets(&x, NULL, "f64 with NaN");
  free(a);
}

static void genotype_views(void) {
  uint64_t rng = 11;
  const int64_t n = 37, q = 9, cb = fm_codec_bed2_col_bytes(n);
  int32_t *g = malloc((size_t)(n * q) * sizeof(int32_t));
  for (int64_t i = 0; i < n * q; i++) {
    const uint64_t r = fm_test_rng_next(&rng) % 10;
    g[i] = r == 0 ? INT32_MIN : (int32_t)(r % 3); /* about 10% missing */
  }
  uint8_t *bed = malloc((size_t)(cb * q));
  fm_err err;
  CHECK_OK(fm_codec_bed2_encode(g, n, q, n, bed, &err), &err);
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, bed, n, q, cb, &err), &err);
  check_all_budgets(&x, NULL, "bed2 with missing calls");
  double center[9], scale[9], fill[9];
  for (int j = 0; j < 9; j++) center[j] = 1.0 - 0.1 * j, scale[j] = 0.5 + j, fill[j] = 0;
  const fm_affine std = {.center = center, .scale = scale, .fill = fill};
  check_all_budgets(&x, &std, "bed2 standardized, missing filled");
  free(g);
  free(bed);
}

static int calls;
static double last_done, last_total;
static int cancel_at(void *ud) { return ++calls > *(int *)ud; }
static void progress(void *ud, double done, double total) {
  (void)ud;
  last_done = done;
  last_total = total;
}

static void progress_cancel_and_errors(void) {
  const int64_t n = 10, q = 6;
  double a[60], out[100];
  for (int i = 0; i < 60; i++) a[i] = i;
  fm_mat x;
  fm_err err;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, a, n, q, n * 8, &err), &err);
  int never = 1 << 30, two = 2;
  fm_ctl ctl = {.cancel = cancel_at, .progress = progress, .ud = &never, .panel_bytes = 8 * 6};
  CHECK_OK(fm_gram(&x, NULL, FM_GRAM_CROSS, out, q, &ctl, &err), &err);
  CHECK(last_done == 10 && last_total == 10); /* one row of 6 columns per panel */
  ctl.panel_bytes = 2 * 8 * 10 * 2;             /* two columns per panel */
  CHECK_OK(fm_gram(&x, NULL, FM_GRAM_TCROSS, out, n, &ctl, &err), &err);
  CHECK(last_done == 3 && last_total == 3);
  calls = 0;
  ctl.ud = &two;
  CHECK(fm_gram(&x, NULL, FM_GRAM_TCROSS, out, n, &ctl, &err) == FM_ECANCELLED);
  CHECK(strstr(err.msg, "cancelled after 2 of 3") != NULL);
  CHECK(fm_gram(&x, NULL, FM_GRAM_CROSS, out, q - 1, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "ld 5") != NULL);
  CHECK(fm_gram(&x, NULL, (fm_gram_kind)3, out, q, NULL, &err) == FM_EARG);
  CHECK(fm_gram(NULL, NULL, FM_GRAM_CROSS, out, q, NULL, &err) == FM_EARG);
  /* empty: a zero result, nothing decoded */
  fm_mat e;
  CHECK_OK(fm_mat_init(&e, FM_CODEC_F64, NULL, 0, 3, 0, &err), &err);
  for (int i = 0; i < 9; i++) out[i] = 7;
  CHECK_OK(fm_gram(&e, NULL, FM_GRAM_CROSS, out, 3, NULL, &err), &err);
  for (int i = 0; i < 9; i++) CHECK(out[i] == 0);
}

int main(void) {
  FM_RUN(dense_views);
  FM_RUN(genotype_views);
  FM_RUN(progress_cancel_and_errors);
  FM_TEST_END();
}
