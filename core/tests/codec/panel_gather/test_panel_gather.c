/* test_panel_gather.c: fm_panel_gather and fm_panel_gather_cells against
 * picking from one whole-matrix fm_panel_decode, over dense and 2-bit
 * genotype views with a column index and a transform, at budgets from one
 * value per panel to the default; index errors and cancel. */
#include "fm/fm_codec_bed2.h"
#include "fm/fm_panel.h"

#include "fm_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static void check_view(const fm_mat *x, const fm_affine *aff, const char *what) {
  const int64_t n = x->n_rows, p = x->n_cols;
  double *all = malloc((size_t)(n * p) * sizeof(double));
  fm_err err;
  CHECK_OK(fm_panel_decode(x, aff, 0, n, 0, p, all, n, &err), &err);
  const int64_t rows[] = {n - 1, 0, 2, 2, n / 2};
  const int64_t cols[] = {p - 1, 1, 1, 0, p / 2, 3};
  const size_t budgets[] = {8, 8 * 7, 0};
  for (size_t b = 0; b < 3; b++) {
    const fm_ctl ctl = {.panel_bytes = budgets[b]};
    double out[5 * 6], whole[64 * 16];
    CHECK_OK(fm_panel_gather(x, aff, rows, 5, cols, 6, out, 5, &ctl, &err), &err);
    int bad = 0;
    for (int j = 0; j < 6; j++)
      for (int i = 0; i < 5; i++) bad += !same(out[i + j * 5], all[rows[i] + cols[j] * n]);
    CHECK_OK(fm_panel_gather(x, aff, NULL, n, NULL, p, whole, n, &ctl, &err), &err);
    for (int64_t k = 0; k < n * p; k++) bad += !same(whole[k], all[k]);
    double cell[7];
    const int64_t cr[] = {0, n - 1, 3, 3, 1, 0, 2}, cc[] = {p - 1, 0, 2, 2, p - 1, 4, 0};
    CHECK_OK(fm_panel_gather_cells(x, aff, cr, cc, 7, cell, &ctl, &err), &err);
    for (int k = 0; k < 7; k++) bad += !same(cell[k], all[cr[k] + cc[k] * n]);
    if (bad) fprintf(stderr, "  %s, budget %zu: %d values differ\n", what, budgets[b], bad);
    CHECK(bad == 0);
  }
  free(all);
}

static void views(void) {
  uint64_t rng = 3;
  const int64_t n = 13, q = 8, cb = fm_codec_bed2_col_bytes(n);
  double a[13 * 8];
  int32_t g[13 * 8];
  for (int i = 0; i < n * q; i++) {
    a[i] = fm_test_rng_unif(&rng) - 0.5;
    const uint64_t r = fm_test_rng_next(&rng) % 8;
    g[i] = r == 0 ? INT32_MIN : (int32_t)(r % 3);
  }
  a[4] = NAN;
  uint8_t bed[8 * 4];
  fm_err err;
  CHECK_OK(fm_codec_bed2_encode(g, n, q, n, bed, &err), &err);
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, a, n, q, n * 8, &err), &err);
  check_view(&x, NULL, "f64");
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, bed, n, q, cb, &err), &err);
  check_view(&x, NULL, "bed2");
  int64_t idx[] = {7, 6, 0, 0, 2, 5};
  double center[6] = {1, 0.5, 0, 2, 1, 1}, scale[6] = {2, 1, 1, 0.5, 3, 1}, fill[6] = {0};
  const fm_affine aff = {.center = center, .scale = scale, .fill = fill};
  x.col_index = idx;
  x.n_cols = 6;
  check_view(&x, &aff, "bed2 subset, standardized");
}

static int cancel_now(void *ud) {
  (void)ud;
  return 1;
}

static void errors(void) {
  double a[12] = {0}, out[12];
  fm_mat x;
  fm_err err;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, a, 4, 3, 32, &err), &err);
  const int64_t bad_row[] = {4}, ok_col[] = {0}, bad_col[] = {-1};
  CHECK(fm_panel_gather(&x, NULL, bad_row, 1, ok_col, 1, out, 1, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "row index 4 is outside 0..3") != NULL);
  CHECK(fm_panel_gather(&x, NULL, NULL, 4, bad_col, 1, out, 4, NULL, &err) == FM_EARG);
  CHECK(fm_panel_gather(&x, NULL, NULL, 3, NULL, 3, out, 4, NULL, &err) == FM_EARG);
  CHECK(fm_panel_gather_cells(&x, NULL, bad_row, ok_col, 1, out, NULL, &err) == FM_EARG);
  const fm_ctl stop = {.cancel = cancel_now};
  CHECK(fm_panel_gather(&x, NULL, NULL, 4, NULL, 3, out, 4, &stop, &err) == FM_ECANCELLED);
  CHECK(fm_panel_gather_cells(&x, NULL, ok_col, ok_col, 1, out, &stop, &err) == FM_ECANCELLED);
  CHECK_OK(fm_panel_gather(&x, NULL, NULL, 4, ok_col, 0, out, 4, NULL, &err), &err);
}

int main(void) {
  FM_RUN(views);
  FM_RUN(errors);
  FM_TEST_END();
}
