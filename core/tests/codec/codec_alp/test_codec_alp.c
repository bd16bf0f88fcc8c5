/* Tests for fm_codec_alp.h and fm_backend_alp.h (generated data only).
 * Oracles: the dense input itself (round trips are compared bit for bit),
 * the element-wise affine transform of the dense input, fm_stats_colvar and
 * the reference product on the same values stored as F64, and a naive
 * triple loop for products. Corrupted blobs must be refused by
 * fm_codec_alp_check with FM_EFORMAT naming the byte offset. */
#include "fm/fm_backend.h"
#include "fm/fm_backend_alp.h"
#include "fm/fm_codec_alp.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_colvar.h"

#include "fm_test.h"

#include <float.h>
#include <stdint.h>
#include <string.h>

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

static uint64_t rng_state = 20230618;
static uint64_t rng_next(void) { return fm_test_rng_next(&rng_state); }
static double rng_unif(void) { return fm_test_rng_unif(&rng_state); }

static double from_bits(uint64_t b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, 8) == 0; }

/* A value with d decimals in [-scale, scale). */
static double decimal(int d, double scale) {
  const double p = pow(10.0, d);
  return round((2.0 * rng_unif() - 1.0) * scale * p) / p;
}

/* Values that ALP cannot write as digits, each a different trap. */
static double special(int k) {
  switch (k % 14) {
  case 0: return fm_na_value(); /* R's NA, payload 1954 */
  case 1: return NAN;
  case 2: return INFINITY;
  case 3: return -INFINITY;
  case 4: return -0.0;
  case 5: return DBL_TRUE_MIN; /* smallest denormal */
  case 6: return -DBL_MIN / 3.0; /* a negative denormal */
  case 7: return 9007199254740994.0; /* 2^53 + 2 */
  case 8: return 1152921504606846976.0; /* 2^60 */
  case 9: return DBL_MAX;
  case 10: return -1e300;
  case 11: return 2251799813685248.0; /* 2^51, just past the digit limit */
  case 12: return from_bits(UINT64_C(0xFFF8000000000123)); /* NaN, sign and payload */
  default: return 1e-310;
  }
}

/* Encode x (n x p, ld), check, decode the whole matrix through
 * fm_panel_decode and compare bit for bit; returns the blob (caller frees). */
static uint8_t *roundtrip(const double *x, int64_t n, int64_t p, int64_t ld, int32_t vs,
                          size_t *size_out) {
  fm_err err;
  uint8_t *blob = NULL;
  size_t size = 0;
  CHECK_OK(fm_codec_alp_encode(x, n, p, ld, vs, NULL, &blob, &size, &err), &err);
  if (!blob) return NULL;
  CHECK_OK(fm_codec_alp_check(blob, size, &err), &err);
  fm_alp_info info;
  CHECK_OK(fm_codec_alp_info(blob, size, &info, &err), &err);
  CHECK(info.n_rows == n && info.n_cols == p && (size_t)info.n_bytes == size);
  CHECK(info.vector_size == (vs ? vs : FM_ALP_VECTOR_SIZE));
  fm_mat m;
  CHECK_OK(fm_mat_init_alp(&m, blob, size, &err), &err);
  CHECK(m.codec == FM_CODEC_ALP && m.n_rows == n && m.n_cols == p && m.n_stored_cols == p);
  double *out = malloc(sizeof(double) * (size_t)(n * p + 1));
  for (int64_t i = 0; i < n * p; i++) out[i] = 12345.0;
  CHECK_OK(fm_panel_decode(&m, NULL, 0, n, 0, p, out, n > 0 ? n : 1, &err), &err);
  int bad = 0;
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++)
      if (!same_bits(out[i + j * n], x[i + j * ld]) && bad++ < 5)
        fprintf(stderr, "  [%lld, %lld]: %a decoded as %a\n", (long long)i, (long long)j,
                x[i + j * ld], out[i + j * n]);
  CHECK(bad == 0);
  free(out);
  *size_out = size;
  return blob;
}

static void roundtrip_free(const double *x, int64_t n, int64_t p, int64_t ld, int32_t vs) {
  size_t size;
  free(roundtrip(x, n, p, ld, vs, &size));
}

static void test_random_bits(void) {
  const int64_t n = 3000, p = 3;
  double *x = malloc(sizeof(double) * n * p);
  for (int64_t i = 0; i < n * p; i++) x[i] = from_bits(rng_next());
  size_t size;
  uint8_t *blob = roundtrip(x, n, p, n, 0, &size);
  /* Random bits do not compress: every vector is raw, 8 bytes a value. */
  fm_alp_info info;
  fm_err err;
  CHECK_OK(fm_codec_alp_info(blob, size, &info, &err), &err);
  CHECK(info.n_raw == info.n_vectors);
  CHECK(info.bits_per_value < 64.5);
  free(blob);
  free(x);
}

static void test_decimals_compress(void) {
  const int64_t n = 5000, p = 2;
  double *x = malloc(sizeof(double) * n * p);
  for (int64_t i = 0; i < n; i++) x[i] = 1.0 + round(rng_unif() * 99900.0) / 100.0; /* prices */
  for (int64_t i = 0; i < n; i++) x[n + i] = decimal(4, 50.0);
  size_t size;
  uint8_t *blob = roundtrip(x, n, p, n, 0, &size);
  fm_alp_info info;
  fm_err err;
  CHECK_OK(fm_codec_alp_info(blob, size, &info, &err), &err);
  /* Prices: 17-bit digits; 4 decimals in +-50: 20 bits. No (e, f) round
   * trips every decimal (d * 10^f * 10^-e rounds twice): a few exceptions. */
  CHECK(info.bits_per_value < 21.0);
  CHECK(info.n_exceptions < n * p / 100 && info.n_raw == 0);
  free(blob);
  free(x);
}

static void test_specials(void) {
  /* Specials sprinkled into decimals, and vectors made only of specials. */
  const int64_t n = 2500, p = 3;
  double *x = malloc(sizeof(double) * n * p);
  for (int64_t i = 0; i < n; i++) x[i] = rng_unif() < 0.1 ? special((int)i) : decimal(2, 1000.0);
  for (int64_t i = 0; i < n; i++) x[n + i] = special((int)i);
  for (int64_t i = 0; i < n; i++) x[2 * n + i] = i % 2 ? -0.0 : fm_na_value();
  size_t size;
  uint8_t *blob = roundtrip(x, n, p, n, 0, &size);
  fm_alp_info info;
  fm_err err;
  CHECK_OK(fm_codec_alp_info(blob, size, &info, &err), &err);
  CHECK(info.n_exceptions > 0);
  free(blob);
  /* The same with 64-row vectors, where many vectors are all exceptions. */
  roundtrip_free(x, n, p, n, 64);
  free(x);
}

static void test_shapes(void) {
  double one = 3.25;
  roundtrip_free(&one, 1, 1, 1, 0);
  double row[5] = {1.5, -0.0, NAN, 1e300, 0.1};
  roundtrip_free(row, 1, 5, 1, 0); /* a single row */
  roundtrip_free(NULL, 0, 4, 1, 0);  /* no rows */
  roundtrip_free(NULL, 7, 0, 7, 0);  /* no columns */
  roundtrip_free(NULL, 0, 0, 1, 0);
  const int64_t sizes[] = {63, 64, 65, 1023, 1024, 1025, 2047, 2049, 5000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    const int64_t n = sizes[s], ld = n + 3, p = 2;
    double *x = malloc(sizeof(double) * ld * p);
    for (int64_t i = 0; i < ld * p; i++) x[i] = decimal(3, 10.0);
    roundtrip_free(x, n, p, ld, 0); /* strided input */
    roundtrip_free(x, n, p, ld, 64);
    roundtrip_free(x, n, p, ld, 192);
    free(x);
  }
}

static void test_columns_of_kind(void) {
  const int64_t n = 3000, p = 6;
  double *x = malloc(sizeof(double) * n * p);
  for (int64_t i = 0; i < n; i++) {
    x[i] = 0.0;                                      /* zeros */
    x[n + i] = 42.0;                                 /* a constant */
    x[2 * n + i] = (double)(rng_next() >> 13);       /* integers < 2^51 */
    x[3 * n + i] = (double)((rng_next() >> 10) | 1); /* odd integers > 2^53: exceptions */
    x[4 * n + i] = decimal(1, 1e-8) * 1e-6;          /* tiny magnitudes */
    x[5 * n + i] = (rng_unif() < 0.5 ? -1 : 1) * pow(10.0, (double)(rng_next() % 40) - 20);
  }
  size_t size;
  uint8_t *blob = roundtrip(x, n, p, n, 0, &size);
  free(blob);
  /* A column of zeros takes width 0: headers only. */
  double *zeros = calloc((size_t)n, sizeof(double));
  blob = roundtrip(zeros, n, 1, n, 0, &size);
  CHECK(size < 200);
  free(blob);
  free(zeros);
  free(x);
}

static void test_rowgroups(void) {
  /* Three row groups of a 1024-row-vector column with different data: two
   * decimals, four decimals, random bits; and a changing mix inside. */
  const int64_t n = 250000;
  double *x = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) {
    if (i < 102400) x[i] = decimal(2, 500.0);
    else if (i < 204800) x[i] = decimal(4, 3.0);
    else x[i] = i % 1000 < 500 ? from_bits(rng_next()) : decimal(1, 1e6);
  }
  size_t size;
  uint8_t *blob = roundtrip(x, n, 1, n, 0, &size);
  fm_alp_info info;
  fm_err err;
  CHECK_OK(fm_codec_alp_info(blob, size, &info, &err), &err);
  CHECK(info.bits_per_value < 40.0);
  free(blob);
  free(x);
}

/* Every row window of every column, with and without a column index and an
 * affine transform, against the dense matrix transformed element by element. */
static void test_panel_windows(void) {
  const int64_t n = 200, p = 3;
  double x[600];
  for (int64_t i = 0; i < n * p; i++) x[i] = i % 17 == 0 ? special((int)i) : decimal(2, 100.0);
  fm_err err;
  uint8_t *blob = NULL;
  size_t size = 0;
  CHECK_OK(fm_codec_alp_encode(x, n, p, n, 64, NULL, &blob, &size, &err), &err);
  fm_mat m;
  CHECK_OK(fm_mat_init_alp(&m, blob, size, &err), &err);
  const int64_t idx[5] = {2, 0, 2, 1, 0};
  const double center[5] = {1.5, -2.0, 0.0, 10.0, 0.25};
  const double scale[5] = {2.0, 0.5, 1.0, -1.0, 3.0};
  const double fill[5] = {0.0, -7.0, 1.0, 2.0, 3.0};
  const fm_affine aff = {.center = center, .scale = scale, .fill = fill};
  const fm_affine aff_nofill = {.center = center, .scale = scale};
  double out[5 * 200], want;
  for (int variant = 0; variant < 4; variant++) {
    fm_mat v = m;
    const fm_affine *a = variant == 1 ? &aff : variant == 3 ? &aff_nofill : NULL;
    if (variant >= 1) {
      v.col_index = idx;
      v.n_cols = 5;
    }
    int bad = 0;
    for (int64_t r0 = 0; r0 < n; r0++)
      for (int64_t nr = 1; r0 + nr <= n; nr += (nr < 70 ? 1 : 13)) {
        for (int64_t c0 = 0; c0 < v.n_cols; c0++) {
          const int64_t nc = v.n_cols - c0 < 2 ? v.n_cols - c0 : 2;
          CHECK_OK(fm_panel_decode(&v, a, r0, nr, c0, nc, out, nr + 1, &err), &err);
          for (int64_t jj = 0; jj < nc; jj++)
            for (int64_t i = 0; i < nr; i++) {
              const int64_t j = c0 + jj, s = v.col_index ? v.col_index[j] : j;
              const double e = x[r0 + i + s * n];
              if (!a) want = e;
              else if (isnan(e)) want = a->fill ? a->fill[j] : e;
              else want = (e - a->center[j]) * a->scale[j];
              if (!same_bits(out[i + jj * (nr + 1)], want)) bad++;
            }
        }
      }
    CHECK(bad == 0);
  }
  /* Out of range panels and column indices are refused. */
  CHECK(fm_panel_decode(&m, NULL, 150, 51, 0, 1, out, 51, &err) == FM_EARG);
  const int64_t idx_bad[1] = {3};
  fm_mat v = m;
  v.col_index = idx_bad;
  v.n_cols = 1;
  CHECK(fm_panel_decode(&v, NULL, 0, 1, 0, 1, out, 1, &err) == FM_EARG);
  CHECK(fm_mat_min_stride(FM_CODEC_ALP, 10) == 0);
  CHECK(fm_mat_init(&v, FM_CODEC_ALP, blob, n, p, 8 * n, &err) == FM_EARG);
  free(blob);
}

static void test_colvar(void) {
  const int64_t n = 3000, p = 4;
  double *x = malloc(sizeof(double) * n * p);
  for (int64_t i = 0; i < n * p; i++) x[i] = rng_unif() < 0.05 ? fm_na_value() : decimal(2, 80.0);
  for (int64_t i = 0; i < n; i++) x[3 * n + i] = i % 3 ? NAN : decimal(1, 1.0);
  fm_err err;
  uint8_t *blob = NULL;
  size_t size = 0;
  CHECK_OK(fm_codec_alp_encode(x, n, p, n, 0, NULL, &blob, &size, &err), &err);
  fm_mat a, d;
  CHECK_OK(fm_mat_init_alp(&a, blob, size, &err), &err);
  CHECK_OK(fm_mat_init(&d, FM_CODEC_F64, x, n, p, 8 * n, &err), &err);
  const size_t budgets[2] = {64, 0};
  for (int b = 0; b < 2; b++) {
    test_ctl.panel_bytes = budgets[b];
    double ma[4], va[4], md[4], vd[4];
    int64_t oa[4], od[4];
    CHECK_OK(fm_stats_colvar(&a, ma, va, oa, &test_ctl, &err), &err);
    CHECK_OK(fm_stats_colvar(&d, md, vd, od, &test_ctl, &err), &err);
    for (int j = 0; j < p; j++) {
      CHECK(same_bits(ma[j], md[j]) && same_bits(va[j], vd[j]) && oa[j] == od[j]);
    }
  }
  test_ctl.panel_bytes = 0;
  free(blob);
  free(x);
}

/* ---- products -------------------------------------------------------------- */

typedef struct prod_case {
  int64_t n, p, k;
  int use_index, use_affine;
  fm_op op;
} prod_case;

/* Max over y of |y - ref| / (sum |x b| + tiny), from a naive loop. */
static double naive_err(const fm_mat *dense, const fm_affine *aff, const fm_product *p) {
  const fm_mat *x = dense;
  const int64_t n = x->n_rows, q = x->n_cols;
  const int64_t yr = p->op == FM_OP_XB ? n : q, inner = p->op == FM_OP_XB ? q : n;
  double worst = 0.0;
  double *col = malloc(sizeof(double) * (size_t)(n * q + 1));
  fm_err err;
  CHECK_OK(fm_panel_decode(x, aff, 0, n, 0, q, col, n > 0 ? n : 1, &err), &err);
  for (int64_t c = 0; c < p->k; c++)
    for (int64_t r = 0; r < yr; r++) {
      double s = 0.0, mag = 0.0;
      for (int64_t l = 0; l < inner; l++) {
        const double a = p->op == FM_OP_XB ? col[r + l * n] : col[l + r * n];
        const double t = a * p->b[l + c * p->ldb];
        s += t;
        mag += fabs(t);
      }
      const double y = p->y[r + c * p->ldy];
      if (isnan(s) || isnan(y)) {
        if (isnan(s) != isnan(y)) worst = INFINITY;
        continue;
      }
      const double e = fabs(y - s) / (mag + 1e-300);
      if (e > worst) worst = e;
    }
  free(col);
  return worst;
}

static void run_product_case(const prod_case *pc) {
  const int64_t n = pc->n, stored = pc->p;
  double *x = malloc(sizeof(double) * (size_t)(n * stored + 1));
  for (int64_t i = 0; i < n * stored; i++)
    x[i] = rng_unif() < 0.03 ? fm_na_value() : decimal(2, 10.0);
  fm_err err;
  uint8_t *blob = NULL;
  size_t size = 0;
  CHECK_OK(fm_codec_alp_encode(x, n, stored, n > 0 ? n : 1, 0, NULL, &blob, &size, &err), &err);
  fm_mat a, d;
  CHECK_OK(fm_mat_init_alp(&a, blob, size, &err), &err);
  CHECK_OK(fm_mat_init(&d, FM_CODEC_F64, x, n, stored, 8 * (n > 0 ? n : 1), &err), &err);
  int64_t q = stored;
  int64_t *idx = NULL;
  if (pc->use_index && stored > 0) {
    q = stored + 3;
    idx = malloc(sizeof(int64_t) * (size_t)q);
    for (int64_t j = 0; j < q; j++) idx[j] = (j * 7 + 2) % stored;
    a.col_index = d.col_index = idx;
    a.n_cols = d.n_cols = q;
  }
  double *center = malloc(sizeof(double) * (size_t)(q + 1));
  double *scale = malloc(sizeof(double) * (size_t)(q + 1));
  double *fill = malloc(sizeof(double) * (size_t)(q + 1));
  for (int64_t j = 0; j < q; j++) {
    center[j] = decimal(1, 2.0);
    scale[j] = 0.5 + rng_unif();
    fill[j] = 0.0;
  }
  const fm_affine aff = {.center = center, .scale = scale, .fill = fill};
  const fm_affine *ap = pc->use_affine ? &aff : NULL;
  const int64_t b_rows = pc->op == FM_OP_XB ? q : n, y_rows = pc->op == FM_OP_XB ? n : q;
  const int64_t ldb = b_rows + 2, ldy = y_rows + 1;
  double *b = malloc(sizeof(double) * (size_t)(ldb * pc->k + 1));
  for (int64_t i = 0; i < ldb * pc->k; i++) b[i] = 2.0 * rng_unif() - 1.0;
  double *y1 = malloc(sizeof(double) * (size_t)(ldy * pc->k + 1));
  double *y2 = malloc(sizeof(double) * (size_t)(ldy * pc->k + 1));
  for (int64_t i = 0; i < ldy * pc->k; i++) y1[i] = y2[i] = -99.0; /* pad rows stay */
  fm_product pa = {pc->op, &a, ap, b, ldb, pc->k, y1, ldy};
  fm_product pr = {pc->op, &a, ap, b, ldb, pc->k, y2, ldy};
  /* Forced on: the backend through the registry; forced off: the reference. */
  const char *used = NULL;
  CHECK_OK(fm_backend_run(&pa, &test_ctl, &used, &err), &err);
  CHECK(used && strcmp(used, FM_BACKEND_ALP_NAME) == 0);
  CHECK_OK(fm_backend_reference(&pr, &test_ctl, &err), &err);
  double worst = 0.0;
  int pad_ok = 1;
  for (int64_t c = 0; c < pc->k; c++) {
    for (int64_t r = 0; r < y_rows; r++) {
      const double u = y1[r + c * ldy], v = y2[r + c * ldy];
      if (isnan(u) || isnan(v)) {
        if (isnan(u) != isnan(v)) worst = INFINITY;
        continue;
      }
      const double e = fabs(u - v) / (fabs(u) + fabs(v) + 1.0);
      if (e > worst) worst = e;
    }
    pad_ok &= y1[y_rows + c * ldy] == -99.0;
  }
  CHECK(worst < 1e-12);
  CHECK(pad_ok);
  /* Both against the naive product of the dense matrix with the same view. */
  CHECK(naive_err(&d, ap, &pa) < 1e-12);
  CHECK(naive_err(&d, ap, &pr) < 1e-12);
  if (worst >= 1e-12)
    fprintf(stderr, "  case n=%lld p=%lld k=%lld op=%d: %g\n", (long long)n, (long long)q,
            (long long)pc->k, (int)pc->op, worst);
  free(b);
  free(y1);
  free(y2);
  free(center);
  free(scale);
  free(fill);
  free(idx);
  free(blob);
  free(x);
}

static void test_products(void) {
  fm_err err;
  CHECK_OK(fm_backend_register(FM_BACKEND_ALP_NAME, fm_backend_alp, NULL, &err), &err);
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 5, 2}, {7, 3, 1}, {1024, 4, 3}, {1500, 9, 10},
                               {3000, 5, 4}, {2100, 260, 2}};
  const size_t budgets[2] = {64, 0};
  for (int bi = 0; bi < 2; bi++) {
    test_ctl.panel_bytes = budgets[bi];
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
      for (int op = 1; op <= 2; op++)
        for (int v = 0; v < 4; v++) {
          const prod_case pc = {shapes[s][0], shapes[s][1], shapes[s][2], v & 1, (v >> 1) & 1,
                                (fm_op)op};
          if (bi == 0 && shapes[s][0] * shapes[s][1] > 20000) continue; /* slow under 64 B */
          run_product_case(&pc);
        }
  }
  test_ctl.panel_bytes = 0;
  CHECK(fm_backend_unregister(FM_BACKEND_ALP_NAME));
}

/* Ops the backend does not compute (X X' b, column sums) take the reference
 * path, which on the decoded values gives what it gives on F64 storage of
 * them, bit for bit (same panels, same BLAS calls). */
static void test_other_ops_reference(void) {
  fm_err err;
  CHECK_OK(fm_backend_register(FM_BACKEND_ALP_NAME, fm_backend_alp, NULL, &err), &err);
  const int64_t n = 1500, p = 7, k = 2;
  double *x = malloc(sizeof(double) * n * p), *b = malloc(sizeof(double) * n * k);
  double ya[1500 * 2], yd[1500 * 2];
  for (int64_t i = 0; i < n * p; i++) x[i] = decimal(3, 5.0);
  for (int64_t i = 0; i < n * k; i++) b[i] = rng_unif();
  uint8_t *blob = NULL;
  size_t size = 0;
  CHECK_OK(fm_codec_alp_encode(x, n, p, n, 0, NULL, &blob, &size, &err), &err);
  fm_mat a, d;
  CHECK_OK(fm_mat_init_alp(&a, blob, size, &err), &err);
  CHECK_OK(fm_mat_init(&d, FM_CODEC_F64, x, n, p, 8 * n, &err), &err);
  const fm_op ops[2] = {FM_OP_XXTB, FM_OP_COLSUMS};
  for (int o = 0; o < 2; o++) {
    const int64_t rows = ops[o] == FM_OP_XXTB ? n : p;
    fm_product pa = {ops[o], &a, NULL, b, n, k, ya, rows};
    fm_product pd = {ops[o], &d, NULL, b, n, k, yd, rows};
    const char *used = NULL;
    CHECK(fm_backend_alp(NULL, &pa, &test_ctl, &err) == FM_EUNSUPPORTED);
    CHECK_OK(fm_backend_run(&pa, &test_ctl, &used, &err), &err);
    CHECK(used && strcmp(used, "reference") == 0);
    CHECK_OK(fm_backend_reference(&pd, &test_ctl, &err), &err);
    CHECK(memcmp(ya, yd, sizeof(double) * (size_t)(rows * k)) == 0);
  }
  CHECK(fm_backend_unregister(FM_BACKEND_ALP_NAME));
  free(blob);
  free(b);
  free(x);
}

static int cancel_now(void *ud) {
  (void)ud;
  return 1;
}

static void test_backend_declines(void) {
  fm_err err;
  double x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, b[4] = {1, 1, 1, 1};
  double y[4] = {-1, -1, -1, -1};
  fm_mat d;
  CHECK_OK(fm_mat_init(&d, FM_CODEC_F64, x, 4, 3, 32, &err), &err);
  fm_product p = {FM_OP_XTB, &d, NULL, b, 4, 1, y, 4};
  CHECK(fm_backend_alp(NULL, &p, &test_ctl, &err) == FM_EUNSUPPORTED);
  CHECK(y[0] == -1 && y[3] == -1);
  uint8_t *blob = NULL;
  size_t size = 0;
  CHECK_OK(fm_codec_alp_encode(x, 4, 3, 4, 0, NULL, &blob, &size, &err), &err);
  fm_mat a;
  CHECK_OK(fm_mat_init_alp(&a, blob, size, &err), &err);
  p.x = &a;
  p.op = (fm_op)99; /* an op added to fm_op later */
  CHECK(fm_backend_alp(NULL, &p, &test_ctl, &err) == FM_EUNSUPPORTED);
  CHECK(y[0] == -1 && y[3] == -1);
  p.op = FM_OP_XTB;
  const fm_ctl ctl = {
      .cancel = cancel_now, .threads = test_ctl.threads, .panel_bytes = test_ctl.panel_bytes};
  CHECK(fm_backend_alp(NULL, &p, &ctl, &err) == FM_ECANCELLED);
  CHECK_OK(fm_backend_alp(NULL, &p, &test_ctl, &err), &err);
  CHECK(y[0] == 10 && y[1] == 26 && y[2] == 42);
  /* NaN propagates through b = 0. */
  x[1] = NAN;
  free(blob);
  CHECK_OK(fm_codec_alp_encode(x, 4, 3, 4, 0, NULL, &blob, &size, &err), &err);
  CHECK_OK(fm_mat_init_alp(&a, blob, size, &err), &err);
  const double b0[3] = {0, 1, 1};
  double y4[4];
  fm_product pb = {FM_OP_XB, &a, NULL, b0, 3, 1, y4, 4};
  CHECK_OK(fm_backend_alp(NULL, &pb, &test_ctl, &err), &err);
  CHECK(isnan(y4[1]) && y4[0] == 14 && y4[2] == 18);
  free(blob);
}

/* ---- checking ---------------------------------------------------------------- */

/* A small valid blob: 130 x 2, 64-row vectors, with exceptions and a raw
 * vector (rows 64..127 of column 1 are random bits). */
static uint8_t *sample_blob(size_t *size) {
  double x[260];
  for (int i = 0; i < 130; i++) x[i] = i % 10 == 3 ? special(i) : decimal(2, 9.0);
  for (int i = 0; i < 130; i++) x[130 + i] = i >= 64 && i < 128 ? from_bits(rng_next()) : i * 0.5;
  fm_err err;
  uint8_t *blob = NULL;
  CHECK_OK(fm_codec_alp_encode(x, 130, 2, 130, 64, NULL, &blob, size, &err), &err);
  return blob;
}

static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Mutate a copy with f, expect FM_EFORMAT at byte `at` ("byte AT:"). */
static void expect_bad(const uint8_t *blob, size_t size, void (*f)(uint8_t *, size_t),
                       uint64_t at, const char *what) {
  uint8_t *c = malloc(size);
  memcpy(c, blob, size);
  f(c, size);
  fm_err err;
  fm_err_clear(&err);
  const fm_status st = fm_codec_alp_check(c, size, &err);
  char want[48];
  snprintf(want, sizeof want, "byte %llu:", (unsigned long long)at);
  if (st != FM_EFORMAT || !strstr(err.msg, want) || !strstr(err.msg, what)) {
    fprintf(stderr, "  expected '%s ... %s', got %s: %s\n", want, what, fm_status_name(st),
            err.msg);
    CHECK(0);
  }
  fm_mat m;
  CHECK(fm_mat_init_alp(&m, c, size, &err) == FM_EFORMAT);
  free(c);
}

/* Offsets within the sample blob: column offsets at 48.., column 0's
 * headers at 72 (3 vectors), column 1's after column 0's data. */
#define COL0 72u
static uint64_t col1_of(const uint8_t *b) { return rd64(b + 56); }

static void m_magic(uint8_t *b, size_t n) { (void)n; b[1] = 'X'; }
static void m_version(uint8_t *b, size_t n) { (void)n; b[4] = 2; }
static void m_header(uint8_t *b, size_t n) { (void)n; b[6] = 40; }
static void m_vsize(uint8_t *b, size_t n) { (void)n; b[8] = 100; }
static void m_vsize_big(uint8_t *b, size_t n) { (void)n; b[9] = 8; }
static void m_res1(uint8_t *b, size_t n) { (void)n; b[13] = 1; }
static void m_res2(uint8_t *b, size_t n) { (void)n; b[47] = 1; }
static void m_total_big(uint8_t *b, size_t n) { wr64(b + 32, n + 1); }
static void m_ncols_huge(uint8_t *b, size_t n) { (void)n; wr64(b + 24, UINT64_C(1) << 60); }
static void m_nrows_more(uint8_t *b, size_t n) { (void)n; wr64(b + 16, 100000); }
static void m_col0(uint8_t *b, size_t n) { (void)n; wr64(b + 48, 80); }
static void m_col1_back(uint8_t *b, size_t n) { (void)n; wr64(b + 56, 60); }
static void m_last_end(uint8_t *b, size_t n) { wr64(b + 64, n - 8); }
static void m_kind(uint8_t *b, size_t n) { (void)n; b[COL0] = 7; }
static void m_exp(uint8_t *b, size_t n) { (void)n; b[COL0 + 1] = 19; }
static void m_fac(uint8_t *b, size_t n) { (void)n; b[COL0 + 2] = (uint8_t)(b[COL0 + 1] + 1); }
static void m_width(uint8_t *b, size_t n) { (void)n; b[COL0 + 3] = 65; }
static void m_nexc(uint8_t *b, size_t n) { (void)n; b[COL0 + 4] = 65; }
static void m_data_align(uint8_t *b, size_t n) { (void)n; b[COL0 + 16] |= 4; }
static void m_data_out(uint8_t *b, size_t n) { wr64(b + COL0 + 16, (uint64_t)n); }
static void m_data_in_hdrs(uint8_t *b, size_t n) { (void)n; wr64(b + COL0 + 16, COL0 + 8); }
static void m_raw_hdr(uint8_t *b, size_t n) {
  (void)n;
  const uint64_t h = col1_of(b) + 24; /* column 1, vector 1: raw */
  b[h + 9] = 1;
}

/* Exception positions of column 0, vector 0 (rows 3, 13, ... are specials). */
static uint64_t exc_pos_at(const uint8_t *b) {
  const uint64_t data = rd64(b + COL0 + 16);
  const int w = b[COL0 + 3];
  const uint32_t n_exc = (uint32_t)b[COL0 + 4] | (uint32_t)b[COL0 + 5] << 8;
  return data + (uint64_t)w * 8 + 8u * n_exc;
}
static void m_pos_order(uint8_t *b, size_t n) {
  (void)n;
  const uint64_t p = exc_pos_at(b);
  b[p + 2] = b[p];
  b[p + 3] = b[p + 1];
}
static void m_pos_range(uint8_t *b, size_t n) {
  (void)n;
  const uint64_t p = exc_pos_at(b);
  const uint32_t n_exc = (uint32_t)b[COL0 + 4];
  b[p + 2 * (n_exc - 1)] = 64; /* the vector has 64 rows */
}

static void test_check_refuses(void) {
  size_t size = 0;
  uint8_t *blob = sample_blob(&size);
  fm_err err;
  CHECK_OK(fm_codec_alp_check(blob, size, &err), &err);
  CHECK(blob[COL0] == 0 && blob[COL0 + 4] > 0); /* vector 0 has exceptions */
  CHECK(blob[col1_of(blob) + 24] == 1);         /* column 1, vector 1 is raw */
  const uint64_t c1 = col1_of(blob), pos = exc_pos_at(blob);
  const uint32_t n_exc = blob[COL0 + 4];
  /* each mutation, the byte offset the message names, and what it says */
  const struct {
    void (*mutate)(uint8_t *, size_t);
    uint64_t at;
    const char *what;
  } bad[] = {
      {m_magic, 0, "magic"},
      {m_version, 4, "version 1 expected"},
      {m_header, 6, "header size 48"},
      {m_vsize, 8, "vector size"},
      {m_vsize_big, 8, "vector size"},
      {m_res1, 12, "reserved"},
      {m_res2, 40, "reserved"},
      {m_total_big, 32, "blob size"},
      {m_ncols_huge, 24, "columns"},
      {m_nrows_more, 48, "vector headers"},
      {m_col0, 48, "column 0 at byte 72"},
      {m_col1_back, 56, "column 0's end"},
      {m_last_end, 64, "the last column's end"},
      {m_kind, COL0, "vector kind"},
      {m_exp, COL0 + 1, "exponent at most 18"},
      {m_fac, COL0 + 2, "factor at most"},
      {m_width, COL0 + 3, "bit width at most 64"},
      {m_nexc, COL0 + 4, "at most 64 exceptions"},
      {m_data_align, COL0 + 16, "aligned"},
      {m_data_out, COL0 + 16, "vector data offset"},
      {m_data_in_hdrs, COL0 + 16, "vector data offset"},
      {m_raw_hdr, c1 + 24 + 9, "raw vector"},
      {m_pos_order, pos + 2, "strictly increasing"},
      {m_pos_range, pos + 2 * (n_exc - 1), "exception position"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_bad(blob, size, bad[i].mutate, bad[i].at, bad[i].what);
  /* Every truncation is refused at the header's size field or before. */
  for (size_t cut = 0; cut < size; cut++) {
    const fm_status st = fm_codec_alp_check(blob, cut, &err);
    CHECK(st == FM_EFORMAT);
  }
  /* A larger buffer is fine: the blob's recorded size rules. */
  uint8_t *big = calloc(size + 16, 1);
  memcpy(big, blob, size);
  CHECK_OK(fm_codec_alp_check(big, size + 16, &err), &err);
  free(big);
  CHECK(fm_codec_alp_check(NULL, 10, &err) == FM_EARG);
  free(blob);
}

/* Random corruption: check either refuses the blob or it decodes (ASan and
 * valgrind watch the decode), and products on it run. */
static void test_random_corruption(void) {
  size_t size = 0;
  uint8_t *blob = sample_blob(&size);
  uint8_t *c = malloc(size);
  double out[260], b[130], y[130];
  for (int i = 0; i < 130; i++) b[i] = 1.0;
  int accepted = 0;
  for (int trial = 0; trial < 20000; trial++) {
    memcpy(c, blob, size);
    const int flips = 1 + (int)(rng_next() % 3);
    for (int f = 0; f < flips; f++) c[rng_next() % size] ^= (uint8_t)(1u << (rng_next() % 8));
    fm_err err;
    fm_mat m;
    const fm_status st = fm_mat_init_alp(&m, c, size, &err);
    CHECK(st == FM_OK || st == FM_EFORMAT);
    if (st != FM_OK) continue;
    accepted++;
    if (m.n_rows * m.n_cols <= 260 && m.n_rows > 0 && m.n_cols > 0) {
      CHECK_OK(fm_panel_decode(&m, NULL, 0, m.n_rows, 0, m.n_cols, out, m.n_rows, &err), &err);
      if (m.n_rows <= 130) {
        fm_product p = {FM_OP_XTB, &m, NULL, b, m.n_rows, 1, y, m.n_cols};
        CHECK_OK(fm_backend_alp(NULL, &p, &test_ctl, &err), &err);
      }
    }
  }
  CHECK(accepted > 0); /* flips inside packed digits are valid blobs */
  free(c);
  free(blob);
}

static void test_encode_errors(void) {
  fm_err err;
  uint8_t *blob = (uint8_t *)1;
  size_t size = 7;
  double x[4] = {1, 2, 3, 4};
  CHECK(fm_codec_alp_encode(x, 4, 1, 4, 100, NULL, &blob, &size, &err) == FM_EARG);
  CHECK(blob == NULL && size == 0);
  CHECK(fm_codec_alp_encode(x, 4, 1, 4, 2048, NULL, &blob, &size, &err) == FM_EARG);
  CHECK(fm_codec_alp_encode(x, -1, 1, 4, 0, NULL, &blob, &size, &err) == FM_EARG);
  CHECK(fm_codec_alp_encode(x, 4, 1, 3, 0, NULL, &blob, &size, &err) == FM_EARG);
  CHECK(fm_codec_alp_encode(NULL, 4, 1, 4, 0, NULL, &blob, &size, &err) == FM_EARG);
  CHECK(fm_codec_alp_encode(x, 4, 1, 4, 0, NULL, NULL, &size, &err) == FM_EARG);
  CHECK(fm_codec_alp_encode(x, INT64_MAX / 4, 4, INT64_MAX / 4, 0, NULL, &blob, &size, &err) ==
        FM_ENOMEM);
  const fm_ctl ctl = {
      .cancel = cancel_now, .threads = test_ctl.threads, .panel_bytes = test_ctl.panel_bytes};
  CHECK(fm_codec_alp_encode(x, 4, 1, 4, 0, &ctl, &blob, &size, &err) == FM_ECANCELLED);
  CHECK(blob == NULL);
}

int main(void) {
  FM_RUN(test_random_bits);
  FM_RUN(test_decimals_compress);
  FM_RUN(test_specials);
  FM_RUN(test_shapes);
  FM_RUN(test_columns_of_kind);
  FM_RUN(test_rowgroups);
  FM_RUN(test_panel_windows);
  FM_RUN(test_colvar);
  FM_RUN(test_products);
  FM_RUN(test_backend_declines);
  FM_RUN(test_other_ops_reference);
  FM_RUN(test_check_refuses);
  FM_RUN(test_random_corruption);
  FM_RUN(test_encode_errors);
  FM_TEST_END();
}
