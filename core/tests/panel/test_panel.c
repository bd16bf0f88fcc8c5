/* Tests for fm_panel.h: views, F64 / I32 decode with missing values and the
 * affine transform, panel plans under tiny budgets, the global budget.
 * Oracle: element-by-element application of the documented transform. */
#include "fm/fm_panel.h"

#include "fm_test.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void test_min_stride_and_init(void) {
  fm_err err;
  CHECK(fm_mat_min_stride(FM_CODEC_F64, 5) == 40);
  CHECK(fm_mat_min_stride(FM_CODEC_I32, 5) == 20);
  CHECK(fm_mat_min_stride(FM_CODEC_BED2, 5) == 2);
  CHECK(fm_mat_min_stride(FM_CODEC_DOS8, 5) == 5);
  CHECK(fm_mat_min_stride((fm_codec_id)99, 5) == -1);
  CHECK(fm_mat_min_stride(FM_CODEC_F64, -1) == -1);

  double d[12];
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 4, 24, &err), &err);
  CHECK(x.n_rows == 3 && x.n_cols == 4 && x.col_stride == 24 && x.col_index == NULL);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 4, 16, &err) == FM_EARG);
  CHECK(strstr(err.msg, "16") != NULL && strstr(err.msg, "24") != NULL);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 2, 28, &err) == FM_EARG); /* misaligned stride */
  CHECK(fm_mat_init(&x, FM_CODEC_F64, (const char *)d + 4, 1, 1, 8, &err) == FM_EARG);
  CHECK(fm_mat_init(&x, (fm_codec_id)0, d, 3, 4, 24, &err) == FM_EARG);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, d, -1, 4, 24, &err) == FM_EARG);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, NULL, 3, 4, 24, &err) == FM_EARG);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, NULL, 0, 0, 0, &err), &err);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, d, 3, 1, 3, &err), &err);
}

static void test_f64(void) {
  fm_err err;
  /* 5 x 3 stored with stride 6 doubles (a gap row), NaN and R's NA inside */
  double na_real;
  {
    uint64_t bits = UINT64_C(0x7FF00000000007A2); /* R's NA_real_ */
    memcpy(&na_real, &bits, sizeof na_real);
  }
  double d[18] = {1, 2, NAN, 4, 5, -9, 0.5, na_real, 1.5, 2.5, 3.5, -9, 7, 8, 9, 10, 11, -9};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, d, 5, 3, 48, &err), &err);
  double out[20];
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 5, 0, 3, out, 5, &err), &err);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 5; i++) CHECK(same(out[i + 5 * j], d[i + 6 * j]));
  uint64_t bits;
  memcpy(&bits, &out[6], sizeof bits);
  CHECK(bits == UINT64_C(0x7FF00000000007A2)); /* NA payload kept */
  {
    double c2[3] = {1, 1, 1};
    fm_affine center_only = {c2, NULL, NULL};
    CHECK_OK(fm_panel_decode(&x, &center_only, 0, 5, 1, 1, out, 5, &err), &err);
    memcpy(&bits, &out[1], sizeof bits);
    CHECK(bits == UINT64_C(0x7FF00000000007A2)); /* still NA after centring */
    CHECK(out[0] == -0.5 && out[2] == 0.5);
  }

  double center[4] = {1, 2, 3, 4}, scale[4] = {2, 0.5, -1, 3}, fill[4] = {-1, -2, -3, -4};
  int64_t idx[4] = {2, 0, 1, 0};
  x.col_index = idx;
  x.n_cols = 4;
  fm_affine affs[4] = {{center, scale, fill}, {center, NULL, NULL}, {NULL, NULL, fill},
                       {NULL, scale, NULL}};
  for (int a = 0; a < 4; a++) {
    for (int i = 0; i < 20; i++) out[i] = -123;
    CHECK_OK(fm_panel_decode(&x, &affs[a], 1, 3, 1, 3, out, 4, &err), &err);
    for (int jj = 0; jj < 3; jj++) {
      int j = 1 + jj;
      for (int i = 0; i < 3; i++) {
        double v = d[1 + i + 6 * idx[j]];
        double c = affs[a].center ? center[j] : 0, s = affs[a].scale ? scale[j] : 1;
        double want = isnan(v) ? (affs[a].fill ? fill[j] : NAN) : (v - c) * s;
        CHECK(same(out[i + 4 * jj], want));
      }
      CHECK(out[3 + 4 * jj] == -123); /* rows beyond n_rows in ld untouched */
    }
  }
}

static void test_i32(void) {
  fm_err err;
  int32_t g[8] = {1, INT32_MIN, 3, -4, INT32_MIN, INT32_MIN, 7, INT32_MAX};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_I32, g, 4, 2, 16, &err), &err);
  double out[8];
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 4, 0, 2, out, 4, &err), &err);
  for (int i = 0; i < 8; i++)
    CHECK(g[i] == INT32_MIN ? isnan(out[i]) : out[i] == (double)g[i]);
  double center[2] = {0.5, 1}, fill[2] = {0, 42};
  fm_affine aff = {center, NULL, fill};
  CHECK_OK(fm_panel_decode(&x, &aff, 0, 4, 0, 2, out, 4, &err), &err);
  double want[8] = {0.5, 0, 2.5, -4.5, 42, 42, 6, (double)INT32_MAX - 1};
  for (int i = 0; i < 8; i++) CHECK(out[i] == want[i]);
}

static void test_decode_errors(void) {
  fm_err err;
  double d[6] = {0};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 2, 24, &err), &err);
  double out[6];
  CHECK(fm_panel_decode(&x, NULL, 1, 3, 0, 1, out, 3, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, -1, 1, 0, 1, out, 3, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 3, 1, 2, out, 3, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 3, 0, 1, out, 2, &err) == FM_EARG);
  CHECK(fm_panel_decode(NULL, NULL, 0, 3, 0, 1, out, 3, &err) == FM_EARG);
  int64_t idx[2] = {0, -1};
  x.col_index = idx;
  CHECK(fm_panel_decode(&x, NULL, 0, 3, 0, 2, out, 3, &err) == FM_EARG);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 3, 0, 1, out, 3, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 3, 0, 2, 0, NULL, 1, &err), &err); /* empty panel */
}

/* Regression (found by core/fuzz/fuzz_codecs): a rejected panel whose start
 * plus length overflows int64 must not overflow while writing the message
 * (signed overflow, reported by UBSan in the FM_SANITIZE build). */
static void test_decode_errors_huge(void) {
  fm_err err;
  uint8_t d[10] = {0};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, d, 5, 2, 5, &err), &err);
  double out[1];
  const int64_t big = INT64_MAX - 1;
  CHECK(fm_panel_decode(&x, NULL, big, big, 0, 1, out, 1, &err) == FM_EARG);
  CHECK(err.code == FM_EARG && strstr(err.msg, "9223372036854775806 rows") != NULL);
  CHECK(fm_panel_decode(&x, NULL, 0, 1, big, big, out, 1, &err) == FM_EARG);
  CHECK(err.code == FM_EARG && strstr(err.msg, "9223372036854775806 columns") != NULL);
  CHECK(fm_panel_decode(&x, NULL, INT64_MIN, -1, 0, 1, out, 1, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 1, INT64_MIN, -1, out, 1, &err) == FM_EARG);
}

static void check_plan(const fm_mat *x, size_t budget) {
  fm_panel_plan p = fm_panel_plan_for(x, budget);
  CHECK(p.rows >= 1 && p.cols >= 1);
  CHECK(p.rows <= (x->n_rows > 0 ? x->n_rows : 1) && p.cols <= (x->n_cols > 0 ? x->n_cols : 1));
  CHECK(p.rows <= INT_MAX && p.cols <= INT_MAX);
  if (budget >= 8) CHECK((size_t)p.rows * (size_t)p.cols * 8 <= budget);
}

static void test_plan(void) {
  fm_mat x = {FM_CODEC_F64, NULL, 1000, 50, 8000, NULL, NULL, 0, 0};
  /* plenty: all rows, all columns */
  fm_panel_plan p = fm_panel_plan_for(&x, (size_t)1 << 30);
  CHECK(p.rows == 1000 && p.cols == 50);
  /* room for 10 full columns: column streaming */
  p = fm_panel_plan_for(&x, 10 * 1000 * 8 + 7);
  CHECK(p.rows == 1000 && p.cols == 10);
  /* exactly a handful */
  p = fm_panel_plan_for(&x, FM_PANEL_MIN_COLS * 1000 * 8);
  CHECK(p.rows == 1000 && p.cols == FM_PANEL_MIN_COLS);
  /* fewer than a handful of columns fit: tile rows */
  p = fm_panel_plan_for(&x, 3 * 1000 * 8);
  CHECK(p.rows < 1000 && p.cols == FM_PANEL_MIN_COLS);
  /* the 8 * 3 * 5 budget on a 7 x 5 matrix */
  fm_mat small = {FM_CODEC_F64, NULL, 7, 5, 56, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&small, 8 * 3 * 5);
  CHECK(p.rows == 3 && p.cols == 5);
  /* fewer columns than a handful, all fit: whole matrix */
  p = fm_panel_plan_for(&small, 8 * 35);
  CHECK(p.rows == 7 && p.cols == 5);
  /* BED2 row tiles start on byte boundaries */
  fm_mat bed = {FM_CODEC_BED2, NULL, 1001, 100, 251, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&bed, 8 * 8 * 30);
  CHECK(p.rows == 28 && p.cols == 8);
  /* degenerate budgets and shapes */
  p = fm_panel_plan_for(&x, 1);
  CHECK(p.rows == 1 && p.cols == 1);
  fm_mat empty = {FM_CODEC_F64, NULL, 0, 0, 0, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&empty, 1024);
  CHECK(p.rows == 1 && p.cols == 1);
  /* more rows than BLAS integers hold */
  fm_mat tall = {FM_CODEC_DOS8, NULL, (int64_t)3 << 31, 4, (int64_t)3 << 31, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&tall, (size_t)1 << 40);
  CHECK(p.rows <= INT_MAX && p.cols >= 1);

  size_t budgets[] = {1, 8, 9, 64, 120, 1000, 8000, 80000, 1 << 20};
  int64_t shapes[][2] = {{1, 1}, {7, 5}, {13, 1}, {1, 13}, {1000, 50}, {1001, 3}, {4, 1000}};
  fm_codec_id codecs[] = {FM_CODEC_F64, FM_CODEC_BED2};
  for (int c = 0; c < 2; c++)
    for (int s = 0; s < 7; s++)
      for (int b = 0; b < 9; b++) {
        fm_mat m = {codecs[c], NULL, shapes[s][0], shapes[s][1], 8 * shapes[s][0], NULL, NULL, 0, 0};
        check_plan(&m, budgets[b]);
      }
}

static void test_budget(void) {
  CHECK(fm_panel_budget() == FM_PANEL_DEFAULT_BUDGET);
  fm_panel_set_budget(120);
  CHECK(fm_panel_budget() == 120);
  fm_mat small = {FM_CODEC_F64, NULL, 7, 5, 56, NULL, NULL, 0, 0};
  fm_panel_plan p = fm_panel_plan_for(&small, 0); /* 0 = the global budget */
  CHECK(p.rows == 3 && p.cols == 5);
  fm_panel_set_budget(0);
  CHECK(fm_panel_budget() == FM_PANEL_DEFAULT_BUDGET);
}

static uint64_t bits_of(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* Missing entries without a fill decode to R's NA bit pattern in every codec. */
static void test_missing_is_r_na(void) {
  fm_err err = {0};
  fm_mat x;
  double out[4];
  const uint8_t bed = 0x01u | (0x00u << 2) | (0x01u << 4) | (0x03u << 6); /* NA, 2, NA, 0 */
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, &bed, 4, 1, 1, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 4, 0, 1, out, 4, &err), &err);
  CHECK(bits_of(out[0]) == FM_NA_BITS && bits_of(out[2]) == FM_NA_BITS);
  CHECK(out[1] == 2.0 && out[3] == 0.0);
  const uint8_t dos[2] = {255, 127};
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, dos, 2, 1, 2, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 2, 0, 1, out, 2, &err), &err);
  CHECK(bits_of(out[0]) == FM_NA_BITS && out[1] == 1.0);
  const int32_t iv[2] = {INT32_MIN, 3};
  CHECK_OK(fm_mat_init(&x, FM_CODEC_I32, iv, 2, 1, 8, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 2, 0, 1, out, 2, &err), &err);
  CHECK(bits_of(out[0]) == FM_NA_BITS && out[1] == 3.0);
  CHECK(bits_of(fm_na_value()) == FM_NA_BITS);
}

int main(void) {
  FM_RUN(test_min_stride_and_init);
  FM_RUN(test_f64);
  FM_RUN(test_i32);
  FM_RUN(test_decode_errors);
  FM_RUN(test_decode_errors_huge);
  FM_RUN(test_plan);
  FM_RUN(test_budget);
  FM_RUN(test_missing_is_r_na);
  FM_TEST_END();
}
