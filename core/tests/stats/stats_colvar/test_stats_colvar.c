/* Tests for fm_stats_colvar (generated data only).
 * Oracle: the plain two-pass mean/variance of the observed decoded values,
 * computed here in long double straight from the values before encoding. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_colvar.h"
#include "fm_test.h"
#include "fm/fm_rng.h"

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

static double r_na_real(void) {
  /* R's NA_real_: a NaN with low word 1954 */
  uint64_t bits = UINT64_C(0x7FF00000000007A2);
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* Neumaier's compensated sum: accurate to a few ulps whatever n is. */
typedef struct ksum {
  double s, c;
} ksum;

static void kadd(ksum *k, double x) {
  double t = k->s + x;
  k->c += fabs(k->s) >= fabs(x) ? (k->s - t) + x : (x - t) + k->s;
  k->s = t;
}

static double kval(const ksum *k) { return isfinite(k->s) ? k->s + k->c : k->s; }

/* Oracle: the corrected two-pass algorithm (Chan, Golub and LeVeque 1983)
 * over the observed values (NaN = missing), with compensated sums and no long
 * double, so that it means the same under valgrind (which computes long
 * double in 64 bits). The mean is refined by the mean residual. */
static void naive(const double *col, int64_t n, double *mean, double *var, int64_t *nobs) {
  ksum s = {0, 0};
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (!isnan(col[i])) {
      kadd(&s, col[i]);
      m++;
    }
  *nobs = m;
  if (m == 0) {
    *mean = *var = NAN;
    return;
  }
  double mu = kval(&s) / (double)m;
  if (!isfinite(mu)) { /* R: mean(c(1, Inf)) is Inf, var() NaN */
    *mean = mu;
    *var = NAN;
    return;
  }
  ksum r = {0, 0};
  for (int64_t i = 0; i < n; i++)
    if (!isnan(col[i])) kadd(&r, col[i] - mu);
  mu += kval(&r) / (double)m;
  *mean = mu;
  if (m < 2) {
    *var = NAN;
    return;
  }
  ksum ss = {0, 0}, c = {0, 0};
  for (int64_t i = 0; i < n; i++)
    if (!isnan(col[i])) {
      kadd(&ss, (col[i] - mu) * (col[i] - mu));
      kadd(&c, col[i] - mu);
    }
  *var = (kval(&ss) - kval(&c) * kval(&c) / (double)m) / (double)(m - 1);
}

static int same_or_both_nan(double a, double b, double rtol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return 1; /* infinities too */
  return fabs(a - b) <= rtol * (fabs(a) + fabs(b)) + 1e-300;
}

/* Compare colvar on x against the oracle on dense (n x p doubles, the logical
 * columns after col_index), under the default and a tiny panel budget. */
static void check_against(const fm_mat *x, const double *dense, double rtol) {
  const int64_t n = x->n_rows, p = x->n_cols;
  double *m1 = malloc((size_t)(p + 1) * sizeof *m1), *v1 = malloc((size_t)(p + 1) * sizeof *v1);
  double *m2 = malloc((size_t)(p + 1) * sizeof *m2), *v2 = malloc((size_t)(p + 1) * sizeof *v2);
  int64_t *o1 = malloc((size_t)(p + 1) * sizeof *o1), *o2 = malloc((size_t)(p + 1) * sizeof *o2);
  fm_err err = {0};
  test_ctl.panel_bytes = 0;
  CHECK_OK(fm_stats_colvar(x, m1, v1, o1, &test_ctl, &err), &err);
  test_ctl.panel_bytes = 8; /* one column per block */
  CHECK_OK(fm_stats_colvar(x, m2, v2, o2, &test_ctl, &err), &err);
  test_ctl.panel_bytes = 0;
  for (int64_t j = 0; j < p; j++) {
    double mean, var;
    int64_t nobs;
    naive(dense + j * n, n, &mean, &var, &nobs);
    CHECK(o1[j] == nobs);
    CHECK(same_or_both_nan(m1[j], mean, rtol));
    CHECK(same_or_both_nan(v1[j], var, rtol));
    /* block size never changes a bit */
    CHECK(o2[j] == o1[j]);
    CHECK(memcmp(&m1[j], &m2[j], sizeof(double)) == 0);
    CHECK(memcmp(&v1[j], &v2[j], sizeof(double)) == 0);
  }
  free(m1);
  free(v1);
  free(m2);
  free(v2);
  free(o1);
  free(o2);
}

static void test_f64_random_with_nan(void) {
  const int64_t n = 203, p = 37;
  fm_rng r;
  fm_rng_seed(&r, 11);
  double *x = malloc((size_t)(n * p) * sizeof *x);
  for (int64_t i = 0; i < n * p; i++) {
    double u = fm_rng_unif(&r);
    x[i] = u < 0.05 ? NAN : u < 0.1 ? r_na_real() : 1e6 + 3.0 * fm_rng_norm(&r); /* big offset */
  }
  for (int64_t i = 0; i < n; i++) x[i + 3 * n] = NAN; /* all missing */
  for (int64_t i = 1; i < n; i++) x[i + 4 * n] = NAN; /* one observed */
  for (int64_t i = 0; i < n; i++) x[i + 5 * n] = 0.1; /* constant */
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, x, n, p, n * 8, &err), &err);
  check_against(&m, x, 1e-12);

  double mean[37], var[37];
  int64_t nobs[37];
  CHECK_OK(fm_stats_colvar(&m, mean, var, nobs, &test_ctl, &err), &err);
  CHECK(nobs[3] == 0 && isnan(mean[3]) && isnan(var[3]));
  CHECK(nobs[4] == 1 && mean[4] == x[4 * n] && isnan(var[4]));
  CHECK(mean[5] == 0.1 && var[5] == 0.0);

  /* col_index: permuted, repeated subset */
  int64_t idx[5] = {36, 0, 0, 17, 3};
  double *dense = malloc((size_t)(n * 5) * sizeof *dense);
  for (int j = 0; j < 5; j++) memcpy(dense + j * n, x + idx[j] * n, (size_t)n * sizeof *x);
  m.col_index = idx;
  m.n_cols = 5;
  check_against(&m, dense, 1e-12);
  free(dense);
  free(x);
}

static void test_f64_padded_stride(void) {
  const int64_t n = 10, p = 4, ld = 13;
  double x[13 * 4], dense[10 * 4];
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < ld; i++) {
      x[i + j * ld] =
          i < n ? (double)(i * i) - 3.0 * (double)j : 1e300; /* padding must be ignored */
      if (i < n) dense[i + j * n] = x[i + j * ld];
    }
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, x, n, p, ld * 8, &err), &err);
  check_against(&m, dense, 1e-14);
}

static void test_i32_with_na(void) {
  const int64_t n = 157, p = 23;
  fm_rng r;
  fm_rng_seed(&r, 12);
  int32_t *x = malloc((size_t)(n * p) * sizeof *x);
  double *dense = malloc((size_t)(n * p) * sizeof *dense);
  for (int64_t i = 0; i < n * p; i++) {
    const double u = fm_rng_unif(&r);
    x[i] = u < 0.1 ? INT32_MIN : (int32_t)(fm_rng_next(&r) % 2000001) - 1000000;
    dense[i] = x[i] == INT32_MIN ? NAN : (double)x[i];
  }
  x[0] = INT32_MAX;
  dense[0] = (double)INT32_MAX;
  x[1] = INT32_MIN + 1;
  dense[1] = (double)(INT32_MIN + 1);
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_I32, x, n, p, n * 4, &err), &err);
  check_against(&m, dense, 1e-12);
  int64_t idx[3] = {22, 1, 22};
  double d3[157 * 3];
  for (int j = 0; j < 3; j++) memcpy(d3 + j * n, dense + idx[j] * n, (size_t)n * sizeof *dense);
  m.col_index = idx;
  m.n_cols = 3;
  check_against(&m, d3, 1e-12);
  free(x);
  free(dense);
}

static void test_bed2_encoded(void) {
  const int64_t ns[4] = {1, 7, 64, 1001}; /* n % 4 = 1, 3, 0, 1 */
  for (int t = 0; t < 4; t++) {
    const int64_t n = ns[t], p = 29;
    fm_rng r;
    fm_rng_seed(&r, 100 + (uint64_t)t);
    int32_t *g = malloc((size_t)(n * p) * sizeof *g);
    double *dense = malloc((size_t)(n * p) * sizeof *dense);
    for (int64_t j = 0; j < p; j++) {
      const double maf = 0.5 * fm_rng_unif(&r), miss = j % 3 == 0 ? 0.0 : 0.2 * fm_rng_unif(&r);
      for (int64_t i = 0; i < n; i++) {
        int32_t v = (fm_rng_unif(&r) < maf) + (fm_rng_unif(&r) < maf);
        if (fm_rng_unif(&r) < miss) v = INT32_MIN;
        if (j == 1) v = INT32_MIN; /* all missing */
        if (j == 2) v = 2;         /* monomorphic */
        g[i + j * n] = v;
        dense[i + j * n] = v == INT32_MIN ? NAN : (double)v;
      }
    }
    const int64_t cb = fm_codec_bed2_col_bytes(n);
    uint8_t *bytes = malloc((size_t)(cb * p));
    fm_err err = {0};
    CHECK_OK(fm_codec_bed2_encode(g, n, p, n, bytes, &err), &err);
    fm_mat m;
    CHECK_OK(fm_mat_init(&m, FM_CODEC_BED2, bytes, n, p, cb, &err), &err);
    check_against(&m, dense, 1e-14);
    int64_t idx[4] = {28, 2, 5, 5};
    double *d4 = malloc((size_t)(n * 4) * sizeof *d4);
    for (int j = 0; j < 4; j++) memcpy(d4 + j * n, dense + idx[j] * n, (size_t)n * sizeof *dense);
    m.col_index = idx;
    m.n_cols = 4;
    check_against(&m, d4, 1e-14);
    /* genotype counts, streamed a few columns a block (a 16-byte budget) */
    int64_t counts[16], want[16] = {0};
    for (int j = 0; j < 4; j++)
      for (int64_t i = 0; i < n; i++) {
        const int32_t v = g[i + idx[j] * n];
        want[4 * j + (v == INT32_MIN ? 3 : v)]++;
      }
    const fm_ctl small = {.panel_bytes = 16};
    CHECK_OK(fm_stats_bed2_counts(&m, counts, &small, &err), &err);
    CHECK(memcmp(counts, want, sizeof want) == 0);
    CHECK(fm_stats_bed2_counts(&m, NULL, NULL, &err) == FM_EARG);
    free(d4);
    free(bytes);
    free(g);
    free(dense);
  }
}

static void test_dos8_encoded(void) {
  const int64_t n = 333, p = 19;
  fm_rng r;
  fm_rng_seed(&r, 13);
  double *d = malloc((size_t)(n * p) * sizeof *d);
  double *dense = malloc((size_t)(n * p) * sizeof *dense);
  for (int64_t i = 0; i < n * p; i++) d[i] = fm_rng_unif(&r) < 0.07 ? NAN : 2.0 * fm_rng_unif(&r);
  for (int64_t i = 0; i < n; i++) d[i + 2 * n] = NAN;
  uint8_t *q = malloc((size_t)(n * p));
  fm_err err = {0};
  CHECK_OK(fm_codec_dos8_encode(d, n, p, n, q, n, &err), &err);
  for (int64_t i = 0; i < n * p; i++) dense[i] = fm_codec_dos8_value(q[i]);
  fm_mat m;
  CHECK_OK(fm_mat_init(&m, FM_CODEC_DOS8, q, n, p, n, &err), &err);
  check_against(&m, dense, 1e-13);
  int64_t idx[3] = {2, 18, 0};
  double *d3 = malloc((size_t)(n * 3) * sizeof *d3);
  for (int j = 0; j < 3; j++) memcpy(d3 + j * n, dense + idx[j] * n, (size_t)n * sizeof *dense);
  m.col_index = idx;
  m.n_cols = 3;
  check_against(&m, d3, 1e-13);
  free(d3);
  free(q);
  free(d);
  free(dense);
}

/* The column (NA, 1, 2) has mean 1.5 and variance 0.5 in every codec. */
static void test_na_1_2_all_codecs(void) {
  fm_err err = {0};
  double mean = 0, var = 0;
  int64_t nobs = 0;
  fm_mat m;

  double f[3] = {r_na_real(), 1.0, 2.0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, f, 3, 1, 24, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, &mean, &var, &nobs, &test_ctl, &err), &err);
  CHECK(mean == 1.5 && var == 0.5 && nobs == 2);

  int32_t g[3] = {INT32_MIN, 1, 2};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_I32, g, 3, 1, 12, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, &mean, &var, &nobs, &test_ctl, &err), &err);
  CHECK(mean == 1.5 && var == 0.5 && nobs == 2);

  uint8_t b[1];
  CHECK_OK(fm_codec_bed2_encode(g, 3, 1, 3, b, &err), &err);
  CHECK_OK(fm_mat_init(&m, FM_CODEC_BED2, b, 3, 1, 1, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, &mean, &var, &nobs, &test_ctl, &err), &err);
  CHECK(mean == 1.5 && var == 0.5 && nobs == 2);

  uint8_t q[3];
  CHECK_OK(fm_codec_dos8_encode(f, 3, 1, 3, q, 3, &err), &err);
  CHECK_OK(fm_mat_init(&m, FM_CODEC_DOS8, q, 3, 1, 3, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, &mean, &var, &nobs, &test_ctl, &err), &err);
  CHECK(mean == 1.5 && var == 0.5 && nobs == 2);
}

static void test_empty_shapes(void) {
  fm_err err = {0};
  fm_mat m;
  double mean[2] = {0, 0}, var[2] = {0, 0};
  int64_t nobs[2] = {9, 9};
  /* 0 rows: every column is all-missing */
  static const double none[1] = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, none, 0, 2, 0, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, mean, var, nobs, &test_ctl, &err), &err);
  CHECK(isnan(mean[0]) && isnan(var[1]) && nobs[0] == 0 && nobs[1] == 0);
  CHECK_OK(fm_mat_init(&m, FM_CODEC_BED2, none, 0, 2, 0, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, mean, var, nobs, &test_ctl, &err), &err);
  CHECK(isnan(mean[1]) && nobs[1] == 0);
  /* 0 columns */
  CHECK_OK(fm_mat_init(&m, FM_CODEC_I32, NULL, 5, 0, 20, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, NULL, NULL, NULL, &test_ctl, &err), &err);
  /* var_out and n_obs_out may be NULL */
  double f[4] = {1, 2, 3, 4};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, f, 4, 1, 32, &err), &err);
  CHECK_OK(fm_stats_colvar(&m, mean, NULL, NULL, &test_ctl, &err), &err);
  CHECK(mean[0] == 2.5);
}

static void test_errors(void) {
  fm_err err = {0};
  double mean[2], f[4] = {1, 2, 3, 4};
  fm_mat m;
  CHECK(fm_stats_colvar(NULL, mean, NULL, NULL, &test_ctl, &err) == FM_EARG);
  CHECK(err.code == FM_EARG && err.msg[0] != '\0');
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, f, 2, 2, 16, &err), &err);
  CHECK(fm_stats_colvar(&m, NULL, NULL, NULL, &test_ctl, &err) == FM_EARG);
  int64_t bad[2] = {0, -1};
  m.col_index = bad;
  CHECK(fm_stats_colvar(&m, mean, NULL, NULL, &test_ctl, &err) == FM_EARG);
  m.col_index = NULL;
  m.codec = (fm_codec_id)99;
  CHECK(fm_stats_colvar(&m, mean, NULL, NULL, &test_ctl, &err) == FM_EARG);
  m.codec = FM_CODEC_F64;
  m.col_stride = 8; /* too small for 2 rows */
  CHECK(fm_stats_colvar(&m, mean, NULL, NULL, &test_ctl, &err) == FM_EARG);
}

typedef struct ctl_state {
  int polls, cancel_at;
  double last_done, last_total;
  int progress_calls;
} ctl_state;

static int cancel_cb(void *ud) {
  ctl_state *s = ud;
  return ++s->polls >= s->cancel_at;
}

static void progress_cb(void *ud, double done, double total) {
  ctl_state *s = ud;
  s->last_done = done;
  s->last_total = total;
  s->progress_calls++;
}

static void test_cancel_and_progress(void) {
  const int64_t n = 50, p = 40;
  double *x = calloc((size_t)(n * p), sizeof *x);
  double mean[40];
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, x, n, p, n * 8, &err), &err);
  test_ctl.panel_bytes = 8 * 100; /* two columns per block: 20 blocks */
  ctl_state s = {0, 1000000, 0, 0, 0};
  fm_ctl ctl = {.cancel = cancel_cb,
                .progress = progress_cb,
                .ud = &s,
                .threads = test_ctl.threads,
                .panel_bytes = test_ctl.panel_bytes};
  CHECK_OK(fm_stats_colvar(&m, mean, NULL, NULL, &ctl, &err), &err);
  CHECK(s.polls >= 2); /* polled per block, not once */
  CHECK(s.last_done == 40 && s.last_total == 40 && s.progress_calls >= 2);
  s = (ctl_state){0, 3, 0, 0, 0};
  CHECK(fm_stats_colvar(&m, mean, NULL, NULL, &ctl, &err) == FM_ECANCELLED);
  CHECK(err.code == FM_ECANCELLED);
  CHECK(s.last_done < 40);
  test_ctl.panel_bytes = 0;
  free(x);
}

/* ---- external codecs: the generic path over fm_panel_decode --------------- */

/* An external codec whose decoder is another matrix's panel decode (ud: the
 * inner fm_mat), so that every codec can be pushed through the generic path;
 * fail_at >= 0 makes the decode of a panel holding that row fail. */
typedef struct wrap {
  const fm_mat *inner;
  int64_t fail_at;
} wrap;

static fm_status wrap_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                             int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  const wrap *w = x->ext->ud;
  if (w->fail_at >= r0 && w->fail_at < r0 + n_rows)
    return fm_err_set(err, FM_EFORMAT, "wrap: row %lld is bad", (long long)w->fail_at);
  return fm_panel_decode(w->inner, NULL, r0, n_rows, c0, n_cols, out, ld, err);
}

static void wrapped(const fm_mat *inner, wrap *w, fm_ext_codec *codec, fm_mat *out) {
  fm_err err = {0};
  w->inner = inner;
  w->fail_at = -1;
  codec->name = "wrap";
  codec->decode = wrap_decode;
  codec->ud = w;
  CHECK_OK(fm_mat_init_ext(out, codec, inner->data ? inner->data : (const void *)codec,
                           inner->n_rows, inner->n_cols, 0, &err),
           &err);
}

/* colvar of the wrapped F64 matrix equals colvar of the F64 matrix bit for
 * bit under panels of every shape (whole, row tiles of 7, 1 x 1). */
static void test_ext_f64_bit_identical(void) {
  const int64_t n = 203, p = 37;
  fm_rng r;
  fm_rng_seed(&r, 21);
  double *x = malloc((size_t)(n * p) * sizeof *x);
  for (int64_t i = 0; i < n * p; i++) {
    double u = fm_rng_unif(&r);
    x[i] = u < 0.05 ? NAN : u < 0.1 ? r_na_real() : 1e6 + 3.0 * fm_rng_norm(&r);
  }
  for (int64_t i = 0; i < n; i++) x[i + 3 * n] = NAN; /* all missing */
  for (int64_t i = 1; i < n; i++) x[i + 4 * n] = NAN; /* one observed */
  x[7 + 6 * n] = INFINITY;
  fm_mat f, e;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&f, FM_CODEC_F64, x, n, p, n * 8, &err), &err);
  wrap w;
  fm_ext_codec codec;
  wrapped(&f, &w, &codec, &e);
  double mf[37], vf[37], me[37], ve[37];
  int64_t of[37], oe[37];
  CHECK_OK(fm_stats_colvar(&f, mf, vf, of, &test_ctl, &err), &err);
  const size_t budgets[] = {0, 8 * 7 * 8, 8};
  for (size_t b = 0; b < 3; b++) {
    test_ctl.panel_bytes = budgets[b];
    memset(me, 0, sizeof me);
    CHECK_OK(fm_stats_colvar(&e, me, ve, oe, &test_ctl, &err), &err);
    CHECK(memcmp(mf, me, sizeof mf) == 0);
    CHECK(memcmp(vf, ve, sizeof vf) == 0);
    CHECK(memcmp(of, oe, sizeof of) == 0);
  }
  test_ctl.panel_bytes = 0;
  CHECK(oe[3] == 0 && isnan(me[3]) && isnan(ve[3]));
  CHECK(oe[4] == 1 && me[4] == x[4 * n] && isnan(ve[4]));
  CHECK(isinf(me[6]) && isnan(ve[6]));
  check_against(&e, x, 1e-12);
  /* a column index through the external codec */
  int64_t idx[4] = {36, 0, 0, 17};
  double *dense = malloc((size_t)(n * 4) * sizeof *dense);
  for (int j = 0; j < 4; j++) memcpy(dense + j * n, x + idx[j] * n, (size_t)n * sizeof *x);
  e.col_index = idx;
  e.n_cols = 4;
  check_against(&e, dense, 1e-12);
  free(dense);
  free(x);
}

/* The other codecs through the generic path agree with the oracle. */
static void test_ext_other_codecs(void) {
  const int64_t n = 101, p = 11;
  fm_rng r;
  fm_rng_seed(&r, 22);
  int32_t *g = malloc((size_t)(n * p) * sizeof *g);
  double *dense = malloc((size_t)(n * p) * sizeof *dense), *d = malloc((size_t)(n * p) * sizeof *d);
  for (int64_t i = 0; i < n * p; i++) {
    g[i] = fm_rng_unif(&r) < 0.1 ? INT32_MIN : (int32_t)(fm_rng_next(&r) % 3);
    dense[i] = g[i] == INT32_MIN ? NAN : (double)g[i];
  }
  fm_err err = {0};
  fm_mat inner, e;
  wrap w;
  fm_ext_codec codec;
  CHECK_OK(fm_mat_init(&inner, FM_CODEC_I32, g, n, p, n * 4, &err), &err);
  wrapped(&inner, &w, &codec, &e);
  check_against(&e, dense, 1e-13);
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  uint8_t *bytes = malloc((size_t)(cb * p));
  CHECK_OK(fm_codec_bed2_encode(g, n, p, n, bytes, &err), &err);
  CHECK_OK(fm_mat_init(&inner, FM_CODEC_BED2, bytes, n, p, cb, &err), &err);
  wrapped(&inner, &w, &codec, &e);
  check_against(&e, dense, 1e-13);
  for (int64_t i = 0; i < n * p; i++) d[i] = fm_rng_unif(&r) < 0.07 ? NAN : 2.0 * fm_rng_unif(&r);
  uint8_t *q = malloc((size_t)(n * p));
  CHECK_OK(fm_codec_dos8_encode(d, n, p, n, q, n, &err), &err);
  for (int64_t i = 0; i < n * p; i++) dense[i] = fm_codec_dos8_value(q[i]);
  CHECK_OK(fm_mat_init(&inner, FM_CODEC_DOS8, q, n, p, n, &err), &err);
  wrapped(&inner, &w, &codec, &e);
  check_against(&e, dense, 1e-13);
  free(q);
  free(bytes);
  free(g);
  free(d);
  free(dense);
}

static void test_ext_errors_cancel_empty(void) {
  const int64_t n = 50, p = 40;
  double *x = calloc((size_t)(n * p), sizeof *x);
  double mean[40], var[40];
  int64_t nobs[40];
  fm_err err = {0};
  fm_mat f, e;
  wrap w;
  fm_ext_codec codec;
  CHECK_OK(fm_mat_init(&f, FM_CODEC_F64, x, n, p, n * 8, &err), &err);
  wrapped(&f, &w, &codec, &e);
  /* the codec's own error comes back */
  w.fail_at = 33;
  test_ctl.panel_bytes = 8 * 10; /* 10 x 1 panels: the failing one comes later */
  CHECK(fm_stats_colvar(&e, mean, var, nobs, &test_ctl, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "row 33") != NULL);
  w.fail_at = -1;
  /* cancellation polled per panel; progress per column block */
  ctl_state s = {0, 1000000, 0, 0, 0};
  fm_ctl ctl = {.cancel = cancel_cb,
                .progress = progress_cb,
                .ud = &s,
                .threads = test_ctl.threads,
                .panel_bytes = test_ctl.panel_bytes};
  CHECK_OK(fm_stats_colvar(&e, mean, var, nobs, &ctl, &err), &err);
  CHECK(s.polls >= 2 * 5 * 40); /* 5 row tiles, two passes, 40 columns */
  CHECK(s.last_done == 40 && s.last_total == 40);
  CHECK(mean[0] == 0 && var[0] == 0 && nobs[0] == n);
  s = (ctl_state){0, 3, 0, 0, 0};
  CHECK(fm_stats_colvar(&e, mean, NULL, NULL, &ctl, &err) == FM_ECANCELLED);
  test_ctl.panel_bytes = 0;
  /* a column index beyond the stored columns, no decoder */
  int64_t idx[1] = {40};
  e.col_index = idx;
  e.n_cols = 1;
  CHECK(fm_stats_colvar(&e, mean, NULL, NULL, &test_ctl, &err) == FM_EARG);
  e.col_index = NULL;
  e.n_cols = p;
  fm_ext_codec none = {"none", NULL, NULL};
  e.ext = &none;
  CHECK(fm_stats_colvar(&e, mean, NULL, NULL, &test_ctl, &err) == FM_EARG);
  /* 0 rows */
  e.ext = &codec;
  e.n_rows = 0;
  for (int j = 0; j < 40; j++) nobs[j] = 9;
  CHECK_OK(fm_stats_colvar(&e, mean, var, nobs, &test_ctl, &err), &err);
  CHECK(isnan(mean[0]) && isnan(var[39]) && nobs[0] == 0 && nobs[39] == 0);
  free(x);
}

int main(void) {
  FM_RUN(test_f64_random_with_nan);
  FM_RUN(test_f64_padded_stride);
  FM_RUN(test_i32_with_na);
  FM_RUN(test_bed2_encoded);
  FM_RUN(test_dos8_encoded);
  FM_RUN(test_na_1_2_all_codecs);
  FM_RUN(test_empty_shapes);
  FM_RUN(test_errors);
  FM_RUN(test_cancel_and_progress);
  FM_RUN(test_ext_f64_bit_identical);
  FM_RUN(test_ext_other_codecs);
  FM_RUN(test_ext_errors_cancel_empty);
  FM_TEST_END();
}
