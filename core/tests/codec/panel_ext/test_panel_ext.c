/* Tests for external codecs (FM_CODEC_EXT in fm_panel.h): a toy codec that
 * stores a matrix row-major as int8 values with one float scale per row
 * (value = scale[i] * q, q == -128 missing), the layout shape of a GGML
 * block format. Panel decode (whole, tiny budgets, column index runs,
 * affine transform), the reference product and a backend that recognises
 * the codec are checked against an element-by-element oracle.
 * Oracle: toy_value() below, the codec's definition applied to one cell. */
#include "fm/fm_backend.h"
#include "fm/fm_panel.h"

#include "fm_test.h"

#include <string.h>

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

typedef struct toy {
  const int8_t *q;     /* (n_rows, n_cols) row-major */
  const float *scale;  /* n_rows */
  int calls;           /* decode calls (single-threaded test) */
  int64_t max_run;     /* widest column run asked for */
} toy;

static double toy_value(const toy *t, int64_t n_cols, int64_t i, int64_t j) {
  int8_t q = t->q[i * n_cols + j];
  return q == -128 ? NAN : (double)t->scale[i] * (double)q;
}

static fm_status toy_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                            int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  toy *t = (toy *)x->ext->ud;
  if ((const void *)t->q != x->data) return fm_err_set(err, FM_EINTERNAL, "toy: wrong data");
  t->calls++;
  if (n_cols > t->max_run) t->max_run = n_cols;
  const int64_t row_len = x->col_stride; /* bytes of one stored row */
  for (int64_t j = 0; j < n_cols; j++)
    for (int64_t i = 0; i < n_rows; i++)
      out[i + j * ld] = toy_value(t, row_len, r0 + i, c0 + j);
  return FM_OK;
}

static fm_status failing_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                                int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  (void)x; (void)r0; (void)n_rows; (void)c0; (void)n_cols; (void)out; (void)ld;
  return fm_err_set(err, FM_EFORMAT, "toy: block 3 is malformed");
}

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

enum { NR = 13, NC = 37 };
static int8_t q_data[NR * NC];
static float scales[NR];

static void fill_data(void) {
  uint64_t rng = 42;
  for (int i = 0; i < NR * NC; i++) q_data[i] = (int8_t)(fm_test_rng_next(&rng) % 255 - 127);
  q_data[5 * NC + 7] = -128;  /* missing */
  q_data[12 * NC + 36] = -128;
  for (int i = 0; i < NR; i++) scales[i] = 0.25f * (float)(i + 1);
}

static void test_init(void) {
  fm_err err;
  toy t = {q_data, scales, 0, 0};
  fm_ext_codec codec = {"toy", toy_decode, &t};
  fm_mat x;
  CHECK_OK(fm_mat_init_ext(&x, &codec, q_data, NR, NC, NC, &err), &err);
  CHECK(x.codec == FM_CODEC_EXT && x.ext == &codec && x.n_stored_cols == NC);
  CHECK(x.col_index == NULL && x.col_stride == NC);
  CHECK(fm_mat_min_stride(FM_CODEC_EXT, 10) == 0);
  fm_ext_codec none = {"none", NULL, NULL};
  CHECK(fm_mat_init_ext(&x, &none, q_data, NR, NC, NC, &err) == FM_EARG);
  CHECK(fm_mat_init_ext(&x, NULL, q_data, NR, NC, NC, &err) == FM_EARG);
  CHECK(fm_mat_init_ext(&x, &codec, NULL, NR, NC, NC, &err) == FM_EARG);
  CHECK(strstr(err.msg, "toy") != NULL);
  CHECK(fm_mat_init_ext(&x, &codec, q_data, -1, NC, NC, &err) == FM_EARG);
  CHECK_OK(fm_mat_init_ext(&x, &codec, NULL, 0, 0, 0, &err), &err);
  /* fm_mat_init does not make external matrices */
  CHECK(fm_mat_init(&x, FM_CODEC_EXT, q_data, NR, NC, NC, &err) == FM_EARG);
}

static void test_decode_panels(void) {
  fm_err err;
  toy t = {q_data, scales, 0, 0};
  fm_ext_codec codec = {"toy", toy_decode, &t};
  fm_mat x;
  CHECK_OK(fm_mat_init_ext(&x, &codec, q_data, NR, NC, NC, &err), &err);
  double out[NR * NC + 8];
  CHECK_OK(fm_panel_decode(&x, NULL, 0, NR, 0, NC, out, NR, &err), &err);
  CHECK(t.calls == 1 && t.max_run == NC); /* one call without a column index */
  for (int j = 0; j < NC; j++)
    for (int i = 0; i < NR; i++) CHECK(same(out[i + NR * j], toy_value(&t, NC, i, j)));
  CHECK(isnan(out[5 + NR * 7]));

  /* every tiny budget: tiles of the plan cover the matrix exactly */
  const size_t budgets[] = {8, 8 * 3, 8 * 5 * 2, 8 * 13, 8 * 13 * 9, 0};
  for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
    fm_panel_plan plan = fm_panel_plan_for(&x, budgets[b]);
    CHECK(plan.rows >= 1 && plan.cols >= 1);
    if (budgets[b]) CHECK((size_t)(plan.rows * plan.cols) * 8 <= budgets[b]);
    double got[NR * NC];
    for (int i = 0; i < NR * NC; i++) got[i] = -1;
    for (int64_t c0 = 0; c0 < NC; c0 += plan.cols) {
      int64_t nc = NC - c0 < plan.cols ? NC - c0 : plan.cols;
      for (int64_t r0 = 0; r0 < NR; r0 += plan.rows) {
        int64_t nr = NR - r0 < plan.rows ? NR - r0 : plan.rows;
        double panel[NR * NC];
        CHECK_OK(fm_panel_decode(&x, NULL, r0, nr, c0, nc, panel, nr, &err), &err);
        for (int64_t j = 0; j < nc; j++)
          for (int64_t i = 0; i < nr; i++) got[(r0 + i) + NR * (c0 + j)] = panel[i + nr * j];
      }
    }
    for (int i = 0; i < NR * NC; i++) CHECK(same(got[i], out[i]));
  }

  /* a leading dimension larger than the panel leaves the gap untouched */
  double wide[20 * 3];
  for (int i = 0; i < 60; i++) wide[i] = 99;
  CHECK_OK(fm_panel_decode(&x, NULL, 2, 4, 10, 3, wide, 20, &err), &err);
  for (int j = 0; j < 3; j++) {
    for (int i = 0; i < 4; i++) CHECK(same(wide[i + 20 * j], toy_value(&t, NC, 2 + i, 10 + j)));
    for (int i = 4; i < 20; i++) CHECK(wide[i + 20 * j] == 99);
  }

  /* outside the matrix */
  CHECK(fm_panel_decode(&x, NULL, 10, 4, 0, 1, out, 4, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 1, 30, 8, out, 1, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 4, 0, 1, out, 3, &err) == FM_EARG);
  /* zero-sized panels never call the codec */
  t.calls = 0;
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 0, 0, 5, out, 1, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 5, 3, 0, out, 5, &err), &err);
  CHECK(t.calls == 0);
}

static void test_col_index_and_affine(void) {
  fm_err err;
  toy t = {q_data, scales, 0, 0};
  fm_ext_codec codec = {"toy", toy_decode, &t};
  fm_mat x;
  CHECK_OK(fm_mat_init_ext(&x, &codec, q_data, NR, NC, NC, &err), &err);
  /* runs: 3 4 5 | 9 | 7 8 | 7 | 36 */
  const int64_t idx[] = {3, 4, 5, 9, 7, 8, 7, 36};
  const int64_t n_idx = 8;
  x.col_index = idx;
  x.n_cols = n_idx;
  double out[NR * 8];
  t.calls = 0;
  t.max_run = 0;
  CHECK_OK(fm_panel_decode(&x, NULL, 0, NR, 0, n_idx, out, NR, &err), &err);
  CHECK(t.calls == 5 && t.max_run == 3);
  for (int j = 0; j < n_idx; j++)
    for (int i = 0; i < NR; i++) CHECK(same(out[i + NR * j], toy_value(&t, NC, i, idx[j])));

  /* the affine transform: (v - c) * s, missing -> fill, per logical column */
  double center[8], scale[8], fill[8];
  for (int j = 0; j < 8; j++) {
    center[j] = 0.5 * j;
    scale[j] = 1.0 + j;
    fill[j] = -7.0 - j;
  }
  fm_affine aff = {.center = center, .scale = scale, .fill = fill};
  CHECK_OK(fm_panel_decode(&x, &aff, 1, 12, 2, 6, out, 12, &err), &err);
  for (int j = 0; j < 6; j++) {
    for (int i = 0; i < 12; i++) {
      double v = toy_value(&t, NC, 1 + i, idx[2 + j]);
      double want = isnan(v) ? fill[2 + j] : (v - center[2 + j]) * scale[2 + j];
      CHECK(same(out[i + 12 * j], want));
    }
  }
  /* without fill a missing value stays NaN after centring */
  fm_affine center_only = {.center = center};
  x.col_index = NULL;
  x.n_cols = NC;
  CHECK_OK(fm_panel_decode(&x, &center_only, 5, 1, 7, 1, out, 1, &err), &err);
  CHECK(isnan(out[0]));

  /* a column index past the codec's stored columns, and a negative one */
  const int64_t bad[] = {0, 37};
  x.col_index = bad;
  x.n_cols = 2;
  CHECK(fm_panel_decode(&x, NULL, 0, 1, 0, 2, out, 1, &err) == FM_EARG);
  CHECK(strstr(err.msg, "toy") != NULL && strstr(err.msg, "37") != NULL);
  const int64_t neg[] = {-1};
  x.col_index = neg;
  x.n_cols = 1;
  CHECK(fm_panel_decode(&x, NULL, 0, 1, 0, 1, out, 1, &err) == FM_EARG);
}

static void test_codec_error(void) {
  fm_err err;
  fm_ext_codec codec = {"broken", failing_decode, NULL};
  fm_mat x;
  CHECK_OK(fm_mat_init_ext(&x, &codec, q_data, NR, NC, NC, &err), &err);
  double out[NR];
  CHECK(fm_panel_decode(&x, NULL, 0, NR, 0, 1, out, NR, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "block 3") != NULL);
  double b[NC], y[NR];
  for (int i = 0; i < NC; i++) b[i] = 1;
  fm_product p = {FM_OP_XB, &x, NULL, b, NC, 1, y, NR};
  const char *used = NULL;
  CHECK(fm_backend_run(&p, &test_ctl, &used, &err) == FM_EFORMAT);
  CHECK(used && strcmp(used, "reference") == 0);
  /* a matrix claiming the external codec without one is refused */
  x.ext = NULL;
  CHECK(fm_backend_run(&p, &test_ctl, &used, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 1, 0, 1, out, 1, &err) == FM_EARG);
}

/* The reference product (decode panels + dgemm) over the external codec,
 * for XB and XTB, with and without a column index and a transform, at tiny
 * and default budgets; a codec without missing values so products are finite. */
static fm_status toy_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ctl;
  const fm_ext_codec *mine = (const fm_ext_codec *)ud;
  const fm_mat *x = p->x;
  if (x->codec != FM_CODEC_EXT || x->ext != mine || p->op != FM_OP_XB || x->col_index ||
      (p->aff && (p->aff->center || p->aff->scale || p->aff->fill)))
    return fm_err_set(err, FM_EUNSUPPORTED, "toy backend: only plain X b");
  const toy *t = (const toy *)mine->ud;
  for (int64_t c = 0; c < p->k; c++)
    for (int64_t i = 0; i < x->n_rows; i++) {
      double s = 0;
      for (int64_t j = 0; j < x->n_cols; j++)
        s += toy_value(t, x->col_stride, i, j) * p->b[j + c * p->ldb];
      p->y[i + c * p->ldy] = s;
    }
  return FM_OK;
}

static void test_products(void) {
  fm_err err;
  int8_t q[NR * NC];
  memcpy(q, q_data, sizeof q);
  for (int i = 0; i < NR * NC; i++)
    if (q[i] == -128) q[i] = 3;
  toy t = {q, scales, 0, 0};
  fm_ext_codec codec = {"toy", toy_decode, &t};
  const int64_t idx[] = {36, 0, 1, 2, 20, 20, 5};
  double center[NC], scale[NC];
  for (int j = 0; j < NC; j++) {
    center[j] = 0.1 * j;
    scale[j] = 1.0 / (1 + j);
  }
  const size_t budgets[] = {8, 8 * 7, 8 * 13 * 2, 0};
  uint64_t rng = 7;
  const int64_t k = 3;
  double b[NC * 3], y[NC * 3], want[NC * 3];
  for (int i = 0; i < NC * 3; i++) b[i] = fm_test_rng_unif(&rng) - 0.5;
  for (size_t bi = 0; bi < sizeof budgets / sizeof budgets[0]; bi++) {
    test_ctl.panel_bytes = budgets[bi];
    for (int use_idx = 0; use_idx < 2; use_idx++) {
      for (int use_aff = 0; use_aff < 2; use_aff++) {
        for (int op = FM_OP_XB; op <= FM_OP_XTB; op++) {
          fm_mat x;
          CHECK_OK(fm_mat_init_ext(&x, &codec, q, NR, NC, NC, &err), &err);
          if (use_idx) {
            x.col_index = idx;
            x.n_cols = 7;
          }
          fm_affine aff = {.center = center, .scale = scale};
          const int64_t p_ = x.n_cols, n = x.n_rows;
          const int64_t b_rows = op == FM_OP_XB ? p_ : n, y_rows = op == FM_OP_XB ? n : p_;
          fm_product pr = {(fm_op)op, &x, use_aff ? &aff : NULL, b, b_rows, k, y, y_rows};
          const char *used = NULL;
          CHECK_OK(fm_backend_run(&pr, &test_ctl, &used, &err), &err);
          CHECK(used && strcmp(used, "reference") == 0);
          for (int64_t c = 0; c < k; c++)
            for (int64_t r = 0; r < y_rows; r++) {
              double s = 0;
              for (int64_t l = 0; l < b_rows; l++) {
                int64_t i = op == FM_OP_XB ? r : l, j = op == FM_OP_XB ? l : r;
                int64_t sj = use_idx ? idx[j] : j;
                double v = toy_value(&t, NC, i, sj);
                if (use_aff) v = (v - center[j]) * scale[j];
                s += v * b[l + c * b_rows];
              }
              want[r + c * y_rows] = s;
            }
          for (int64_t i = 0; i < y_rows * k; i++) CHECK_CLOSE(y[i], want[i], 1e-12);
        }
      }
    }
  }
  test_ctl.panel_bytes = 0;

  /* a backend that recognises its codec takes plain X b and declines the rest */
  CHECK_OK(fm_backend_register("toy", toy_backend, &codec, &err), &err);
  fm_mat x;
  CHECK_OK(fm_mat_init_ext(&x, &codec, q, NR, NC, NC, &err), &err);
  fm_product pr = {FM_OP_XB, &x, NULL, b, NC, k, y, NR};
  const char *used = NULL;
  CHECK_OK(fm_backend_run(&pr, &test_ctl, &used, &err), &err);
  CHECK(used && strcmp(used, "toy") == 0);
  double ref[NR * 3];
  fm_product pr_ref = pr;
  pr_ref.y = ref;
  CHECK_OK(fm_backend_reference(&pr_ref, &test_ctl, &err), &err);
  for (int i = 0; i < NR * 3; i++) CHECK_CLOSE(y[i], ref[i], 1e-12);
  x.col_index = idx;
  x.n_cols = 7;
  fm_product pr_idx = {FM_OP_XB, &x, NULL, b, 7, k, y, NR};
  CHECK_OK(fm_backend_run(&pr_idx, &test_ctl, &used, &err), &err);
  CHECK(used && strcmp(used, "reference") == 0);
  CHECK(fm_backend_unregister("toy") == 1);
}

int main(void) {
  fill_data();
  FM_RUN(test_init);
  FM_RUN(test_decode_panels);
  FM_RUN(test_col_index_and_affine);
  FM_RUN(test_codec_error);
  FM_RUN(test_products);
  FM_TEST_END();
}
