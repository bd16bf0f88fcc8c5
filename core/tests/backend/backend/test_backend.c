/* Tests for fm_backend.h: the reference panel product against a naive triple
 * loop over an element-wise decoded matrix, for every codec, both ops, with
 * the panel budget forced tiny and at its default; registry behaviour;
 * declining and partial backends; one named backend and the forced setting;
 * the per-thread record of the backends used; cancellation and progress.
 * Oracle: naive_product() below (obviously correct, no blocking, no BLAS).
 * Data generated. */
#include "fm/fm_backend.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_stats_rpca.h"

#include "fm_test.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

static uint64_t rng_state = 2024;
static uint64_t rng_next(void) { return fm_test_rng_next(&rng_state); }
static double rng_unif(void) { return fm_test_rng_unif(&rng_state); }

/* The logical matrix after its affine transform, element by element from the
 * stored values (not through fm_panel_decode). */
static double element(const fm_mat *x, const fm_affine *aff, int64_t i, int64_t j) {
  int64_t s = x->col_index ? x->col_index[j] : j;
  const uint8_t *col = (const uint8_t *)x->data + s * x->col_stride;
  double v = NAN;
  switch (x->codec) {
  case FM_CODEC_F64: {
    double d;
    memcpy(&d, col + 8 * i, 8);
    v = d;
    break;
  }
  case FM_CODEC_I32: {
    int32_t g;
    memcpy(&g, col + 4 * i, 4);
    v = g == INT32_MIN ? NAN : (double)g;
    break;
  }
  case FM_CODEC_BED2: {
    int code = (col[i / 4] >> (2 * (i % 4))) & 3;
    v = code == 0 ? 2.0 : code == 2 ? 1.0 : code == 3 ? 0.0 : NAN;
    break;
  }
  case FM_CODEC_DOS8: v = col[i] == 255 ? NAN : col[i] / 127.0; break;
  case FM_CODEC_EXT: break; /* external codecs: tests/panel_ext */
  case FM_CODEC_ALP: break; /* compressed doubles: tests/codec_alp */
  }
  if (!aff) return v;
  if (isnan(v)) return aff->fill ? aff->fill[j] : aff->fill_all_set ? aff->fill_all : NAN;
  return (v - (aff->center ? aff->center[j] : 0.0)) * (aff->scale ? aff->scale[j] : 1.0);
}

/* Rows of y for op on x. */
static int64_t y_rows_of(const fm_product *p) {
  return p->op == FM_OP_XB || p->op == FM_OP_XXTB ? p->x->n_rows : p->x->n_cols;
}

/* z = X' b (q x k) and |X'| |b| for XTB and the inner half of XXTB. */
static void naive_xtb(const fm_product *p, double *z, double *zmag) {
  const fm_mat *x = p->x;
  const int64_t n = x->n_rows, q = x->n_cols;
  for (int64_t c = 0; c < p->k; c++)
    for (int64_t r = 0; r < q; r++) {
      double s = 0.0, m = 0.0;
      for (int64_t l = 0; l < n; l++) {
        double t = element(x, p->aff, l, r) * p->b[l + c * p->ldb];
        s += t;
        m += fabs(t);
      }
      z[r + c * q] = s;
      zmag[r + c * q] = m;
    }
}

/* y and a bound on |terms| for the relative tolerance. */
static void naive_product(const fm_product *p, double *y, double *mag) {
  const fm_mat *x = p->x;
  const int64_t n = x->n_rows, q = x->n_cols;
  if (p->op == FM_OP_XTB) {
    naive_xtb(p, y, mag);
    return;
  }
  if (p->op == FM_OP_COLSUMS) { /* k = 3: the missing entries as stored */
    for (int64_t r = 0; r < q; r++) {
      double s = 0.0, ss = 0.0, m = 0.0, miss = 0.0;
      for (int64_t l = 0; l < n; l++) {
        double a = element(x, p->aff, l, r);
        s += a;
        ss += a * a;
        m += fabs(a);
        miss += isnan(element(x, NULL, l, r));
      }
      y[r] = s;
      mag[r] = m;
      y[r + q] = ss;
      mag[r + q] = ss;
      if (p->k == 3) {
        y[r + 2 * q] = miss;
        mag[r + 2 * q] = 0;
      }
    }
    return;
  }
  /* XB: y = X b; XXTB: y = X z with z = X' b (magnitudes through |z| bounds) */
  double *z = NULL, *zmag = NULL;
  const double *bb = p->b;
  int64_t ldbb = p->ldb;
  if (p->op == FM_OP_XXTB) {
    z = malloc(sizeof(double) * (size_t)(q * p->k + 1));
    zmag = malloc(sizeof(double) * (size_t)(q * p->k + 1));
    naive_xtb(p, z, zmag);
    bb = z;
    ldbb = q;
  }
  for (int64_t c = 0; c < p->k; c++)
    for (int64_t r = 0; r < n; r++) {
      double s = 0.0, m = 0.0;
      for (int64_t l = 0; l < q; l++) {
        double a = element(x, p->aff, r, l);
        double t = a * bb[l + c * ldbb];
        s += t;
        m += zmag ? fabs(a) * zmag[l + c * q] : fabs(t);
      }
      y[r + c * n] = s;
      mag[r + c * n] = m;
    }
  free(z);
  free(zmag);
}

/* Compare p->y against the oracle within 1e-12 of the magnitude of the terms. */
static int matches_naive(const fm_product *p) {
  const int64_t yr = y_rows_of(p);
  double *y = malloc(sizeof(double) * (size_t)(yr * p->k + 1));
  double *mag = malloc(sizeof(double) * (size_t)(yr * p->k + 1));
  naive_product(p, y, mag);
  int bad = 0;
  for (int64_t c = 0; c < p->k; c++)
    for (int64_t r = 0; r < yr; r++) {
      double got = p->y[r + c * p->ldy], want = y[r + c * yr];
      if (isnan(want) || isnan(got)) {
        bad += !(isnan(want) && isnan(got));
        continue;
      }
      if (fabs(got - want) > 1e-12 * (mag[r + c * yr] + 1e-300)) {
        if (bad < 3)
          fprintf(stderr, "  y[%lld, %lld] = %.17g, naive %.17g\n", (long long)r, (long long)c,
                  got, want);
        bad++;
      }
    }
  free(y);
  free(mag);
  return bad == 0;
}

/* A generated test matrix of one codec with owned storage. */
typedef struct test_mat {
  fm_mat x;
  void *store;
  double center[64], scale[64], fill[64];
  int64_t idx[64];
} test_mat;

static void make_mat(test_mat *t, fm_codec_id codec, int64_t n, int64_t stored_cols,
                     int64_t stride_pad) {
  fm_err err;
  memset(t, 0, sizeof *t);
  int64_t stride = fm_mat_min_stride(codec, n) + stride_pad;
  if (codec == FM_CODEC_F64) stride = 8 * (n + stride_pad);
  if (codec == FM_CODEC_I32) stride = 4 * (n + stride_pad);
  size_t bytes = (size_t)(stride * stored_cols) + 8;
  t->store = malloc(bytes);
  uint8_t *u = t->store;
  for (int64_t j = 0; j < stored_cols; j++) {
    uint8_t *col = u + j * stride;
    for (int64_t i = 0; i < n; i++) {
      int miss = rng_unif() < 0.08;
      switch (codec) {
      case FM_CODEC_F64: {
        double d = miss ? NAN : 4.0 * rng_unif() - 2.0;
        memcpy(col + 8 * i, &d, 8);
        break;
      }
      case FM_CODEC_I32: {
        int32_t g = miss ? INT32_MIN : (int32_t)(rng_next() % 7) - 3;
        memcpy(col + 4 * i, &g, 4);
        break;
      }
      case FM_CODEC_BED2: break; /* whole columns below */
      case FM_CODEC_DOS8: col[i] = miss ? 255 : (uint8_t)(rng_next() % 255); break;
      case FM_CODEC_EXT: break; /* external codecs: tests/panel_ext */
      case FM_CODEC_ALP: break; /* compressed doubles: tests/codec_alp */
      }
    }
  }
  if (codec == FM_CODEC_BED2) {
    int32_t *g = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    for (int64_t j = 0; j < stored_cols; j++) {
      for (int64_t i = 0; i < n; i++) g[i] = rng_unif() < 0.08 ? INT32_MIN : (int32_t)(rng_next() % 3);
      CHECK_OK(fm_codec_bed2_encode(g, n, 1, n, u + j * stride, &err), &err);
    }
    free(g);
  }
  CHECK_OK(fm_mat_init(&t->x, codec, t->store, n, stored_cols, stride, &err), &err);
  for (int j = 0; j < 64; j++) {
    t->center[j] = 2.0 * rng_unif();
    t->scale[j] = 0.2 + rng_unif();
    t->fill[j] = rng_unif() - 0.5;
  }
}

static const fm_codec_id all_codecs[] = {FM_CODEC_F64, FM_CODEC_I32, FM_CODEC_BED2,
                                         FM_CODEC_DOS8};

/* Run op on t with the current budget and compare with the oracle. */
static int run_and_compare(test_mat *t, const fm_affine *aff, fm_op op, int64_t k,
                           const char *expect_used) {
  fm_err err;
  const int64_t n = t->x.n_rows, q = t->x.n_cols;
  const int64_t br = op == FM_OP_XB ? q : n;
  const int64_t yr = op == FM_OP_XB || op == FM_OP_XXTB ? n : q;
  const int64_t ldb = br + 1, ldy = yr + 2;
  double *b = malloc(sizeof(double) * (size_t)(ldb * k));
  double *y = malloc(sizeof(double) * (size_t)(ldy * k));
  for (int64_t i = 0; i < ldb * k; i++) b[i] = rng_unif() - 0.5;
  for (int64_t i = 0; i < ldy * k; i++) y[i] = 1e300; /* must be overwritten */
  fm_product p = {op, &t->x, aff, b, ldb, k, y, ldy};
  const char *used = NULL;
  int ok = 1;
  fm_status st = fm_backend_run(&p, &test_ctl, &used, &err);
  if (st != FM_OK) {
    fprintf(stderr, "  fm_backend_run: %s: %s\n", fm_status_name(st), err.msg);
    ok = 0;
  } else {
    ok = matches_naive(&p) && used && strcmp(used, expect_used) == 0;
    for (int64_t c = 0; c < k; c++) /* padding rows of y untouched */
      for (int64_t r = yr; r < ldy; r++) ok &= y[r + c * ldy] == 1e300;
  }
  free(b);
  free(y);
  return ok;
}

static void product_matrix(const char *expect_used) {
  const size_t budgets[] = {8 * 3 * 5, 8 * 17, 8 * 1000, 0};
  const int64_t shapes[][2] = {{7, 5}, {13, 9}, {1001, 23}, {1, 4}, {5, 1}};
  for (int c = 0; c < 4; c++)
    for (int s = 0; s < 5; s++) {
      test_mat t;
      const int64_t n = shapes[s][0], q = shapes[s][1];
      make_mat(&t, all_codecs[c], n, q + 3, s % 2);
      for (int64_t j = 0; j < q; j++) t.idx[j] = (int64_t)(rng_next() % (uint64_t)(q + 3));
      t.x.n_cols = q;
      for (int use_idx = 0; use_idx < 2; use_idx++) {
        t.x.col_index = use_idx ? t.idx : NULL;
        fm_affine affs[4] = {{.center = t.center, .scale = t.scale, .fill = t.fill},
                             {.center = t.center, .fill = t.fill},
                             {0},
                             {.center = t.center, .fill_all_set = 1, .fill_all = 0.25}};
        for (int b = 0; b < 4; b++) {
          test_ctl.panel_bytes = budgets[b];
          for (int a = 0; a < 4; a++)
            for (int op = FM_OP_XB; op <= FM_OP_COLSUMS; op++)
              for (int64_t k = 1; k <= 3; k += 2) {
                /* COLSUMS: sum, sumsq, and with k = 3 the missing count */
                const int64_t kk = op == FM_OP_COLSUMS ? (k == 1 ? 2 : 3) : k;
                const fm_affine *aff = a == 2 ? NULL : &affs[a];
                if (!run_and_compare(&t, aff, (fm_op)op, kk, expect_used)) {
                  fprintf(stderr,
                          "  mismatch: codec %d, %lld x %lld, idx %d, budget %zu, aff %d, op %d, "
                          "k %lld\n",
                          (int)all_codecs[c], (long long)n, (long long)q, use_idx, budgets[b], a,
                          op, (long long)kk);
                  CHECK(0);
                }
              }
        }
      }
      free(t.store);
    }
  test_ctl.panel_bytes = 0;
}

static void test_reference_all_codecs(void) {
  CHECK(fm_backend_count() == 0);
  product_matrix("reference");
}

/* NaN left by the affine transform propagates (b nonzero). */
static void test_nan_propagates(void) {
  fm_err err;
  double x[6] = {1, NAN, 3, 4, 5, 6};
  fm_mat m;
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, x, 3, 2, 24, &err), &err);
  double b[2] = {1, 1}, y[3];
  fm_product p = {FM_OP_XB, &m, NULL, b, 2, 1, y, 3};
  CHECK_OK(fm_backend_run(&p, &test_ctl, NULL, &err), &err);
  CHECK(y[0] == 5 && isnan(y[1]) && y[2] == 9);
  double bt[3] = {1, 1, 1}, yt[2];
  fm_product pt = {FM_OP_XTB, &m, NULL, bt, 3, 1, yt, 2};
  CHECK_OK(fm_backend_run(&pt, &test_ctl, NULL, &err), &err);
  CHECK(isnan(yt[0]) && yt[1] == 15);
}

static void test_empty_shapes(void) {
  fm_err err;
  fm_mat m;
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, NULL, 4, 0, 32, &err), &err);
  double y[8];
  for (int i = 0; i < 8; i++) y[i] = 7;
  fm_product p = {FM_OP_XB, &m, NULL, NULL, 1, 2, y, 4};
  CHECK_OK(fm_backend_run(&p, &test_ctl, NULL, &err), &err);
  for (int i = 0; i < 8; i++) CHECK(y[i] == 0.0); /* X (4 x 0) b (0 x 2) = 0 */
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, NULL, 0, 3, 0, &err), &err);
  double b[1] = {0};
  fm_product pt = {FM_OP_XB, &m, NULL, b, 3, 1, y, 1};
  CHECK_OK(fm_backend_run(&pt, &test_ctl, NULL, &err), &err);
}

static void test_bad_args(void) {
  fm_err err;
  double x[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0}, y[6];
  fm_mat m;
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, x, 3, 2, 24, &err), &err);
  fm_product p = {FM_OP_XB, &m, NULL, b, 1, 1, y, 3}; /* ldb < p = 2 */
  CHECK(fm_backend_run(&p, &test_ctl, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "ldb") != NULL);
  p.ldb = 2;
  p.ldy = 2; /* < n = 3 */
  CHECK(fm_backend_run(&p, &test_ctl, NULL, &err) == FM_EARG);
  p.ldy = 3;
  p.k = 0;
  CHECK(fm_backend_run(&p, &test_ctl, NULL, &err) == FM_EARG);
  p.k = 1;
  p.op = (fm_op)9;
  CHECK(fm_backend_run(&p, &test_ctl, NULL, &err) == FM_EARG);
  p.op = FM_OP_XB;
  p.k = (int64_t)1 << 32; /* BLAS integers are 32-bit */
  CHECK(fm_backend_reference(&p, &test_ctl, &err) == FM_EARG);
  CHECK(strstr(err.msg, "BLAS") != NULL);
  p.k = 1;
  CHECK(fm_backend_run(NULL, &test_ctl, NULL, &err) == FM_EARG);
  p.y = NULL;
  CHECK(fm_backend_run(&p, &test_ctl, NULL, &err) == FM_EARG);
}

/* ---- registered backends ---- */

static int decline_calls;
static fm_status decline_all(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  (void)p;
  (void)ctl;
  decline_calls++;
  return fm_err_set(err, FM_EUNSUPPORTED, "declined");
}

/* Accepts only k == 1 and computes naively through fm_panel_decode of one
 * column at a time. */
static int k1_calls;
static fm_status only_k1(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ctl;
  if (p->k != 1) return FM_EUNSUPPORTED;
  (*(int *)ud)++;
  const fm_mat *x = p->x;
  const int64_t n = x->n_rows, q = x->n_cols;
  double *col = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!col) return fm_err_set(err, FM_ENOMEM, "no memory");
  const int64_t yr = p->op == FM_OP_XB ? n : q;
  for (int64_t r = 0; r < yr; r++) p->y[r] = 0.0;
  for (int64_t j = 0; j < q; j++) {
    fm_status st = fm_panel_decode(x, p->aff, 0, n, j, 1, col, n > 0 ? n : 1, err);
    if (st != FM_OK) {
      free(col);
      return st;
    }
    for (int64_t i = 0; i < n; i++) {
      if (p->op == FM_OP_XB)
        p->y[i] += col[i] * p->b[j];
      else
        p->y[j] += col[i] * p->b[i];
    }
  }
  free(col);
  return FM_OK;
}

static fm_status failing(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  (void)p;
  (void)ctl;
  return fm_err_set(err, FM_EIO, "device lost");
}

static fm_status failing_silent(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  (void)p;
  (void)ctl;
  (void)err;
  return FM_EINTERNAL;
}

static void test_registry(void) {
  fm_err err;
  CHECK(fm_backend_count() == 0);
  CHECK(fm_backend_name(0) == NULL);
  CHECK_OK(fm_backend_register("decline", decline_all, NULL, &err), &err);
  CHECK_OK(fm_backend_register("k1", only_k1, &k1_calls, &err), &err);
  CHECK(fm_backend_count() == 2);
  CHECK(strcmp(fm_backend_name(0), "decline") == 0);
  CHECK(strcmp(fm_backend_name(1), "k1") == 0);
  CHECK(fm_backend_name(2) == NULL && fm_backend_name(-1) == NULL);
  CHECK(fm_backend_register("k1", only_k1, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "'k1'") != NULL);
  CHECK(fm_backend_register("", only_k1, NULL, &err) == FM_EARG);
  CHECK(fm_backend_register(NULL, only_k1, NULL, &err) == FM_EARG);
  CHECK(fm_backend_register("reference", only_k1, NULL, &err) == FM_EARG);
  CHECK(fm_backend_register("nofn", NULL, NULL, &err) == FM_EARG);
  char longname[FM_BACKEND_NAME_MAX + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK(fm_backend_register(longname, only_k1, NULL, &err) == FM_EARG);
  longname[FM_BACKEND_NAME_MAX] = '\0'; /* exactly the maximum length */
  CHECK_OK(fm_backend_register(longname, decline_all, NULL, &err), &err);
  CHECK(fm_backend_unregister(longname) == 1);

  /* k == 1 products go to "k1", k == 3 fall through both to the reference;
   * every result equals the naive oracle. */
  decline_calls = 0;
  k1_calls = 0;
  const size_t budgets[] = {8 * 3 * 5, 0};
  for (int bi = 0; bi < 2; bi++) {
    test_ctl.panel_bytes = budgets[bi];
    for (int c = 0; c < 4; c++) {
      test_mat t;
      make_mat(&t, all_codecs[c], 13, 6, 0);
      fm_affine aff = {.center = t.center, .scale = t.scale, .fill = t.fill};
      for (int op = FM_OP_XB; op <= FM_OP_XTB; op++) {
        CHECK(run_and_compare(&t, &aff, (fm_op)op, 1, "k1"));
        CHECK(run_and_compare(&t, &aff, (fm_op)op, 3, "reference"));
      }
      free(t.store);
    }
  }
  test_ctl.panel_bytes = 0;
  CHECK(k1_calls == 16);
  CHECK(decline_calls == 32);

  /* a backend error (not a decline) is returned, with the backend named */
  CHECK_OK(fm_backend_register("failing", failing, NULL, &err), &err);
  CHECK(fm_backend_unregister("k1") == 1);
  CHECK(fm_backend_unregister("k1") == 0);
  CHECK(fm_backend_count() == 2);
  CHECK(strcmp(fm_backend_name(1), "failing") == 0);
  test_mat t;
  make_mat(&t, FM_CODEC_F64, 5, 3, 0);
  double b[5] = {1, 2, 3, 4, 5}, y[5];
  fm_product p = {FM_OP_XTB, &t.x, NULL, b, 5, 1, y, 3};
  const char *used = NULL;
  CHECK(fm_backend_run(&p, &test_ctl, &used, &err) == FM_EIO);
  CHECK(used && strcmp(used, "failing") == 0);
  CHECK(strcmp(err.msg, "device lost") == 0);
  CHECK(fm_backend_unregister("failing") == 1);
  CHECK_OK(fm_backend_register("silent", failing_silent, NULL, &err), &err);
  fm_err_clear(&err);
  CHECK(fm_backend_run(&p, &test_ctl, &used, &err) == FM_EINTERNAL);
  CHECK(err.code == FM_EINTERNAL && strstr(err.msg, "'silent'") != NULL);
  CHECK(fm_backend_unregister("silent") == 1);
  /* the reference path alone ignores registered backends */
  CHECK_OK(fm_backend_reference(&p, &test_ctl, &err), &err);
  CHECK(decline_calls == 34);
  CHECK_OK(fm_backend_run(&p, &test_ctl, &used, &err), &err);
  CHECK(decline_calls == 35 && strcmp(used, "reference") == 0);
  free(t.store);

  /* fill the registry */
  char name[16];
  int added = 0;
  for (int i = 0; i < FM_BACKEND_MAX + 2; i++) {
    snprintf(name, sizeof name, "b%d", i);
    fm_status st = fm_backend_register(name, decline_all, NULL, &err);
    if (st == FM_OK) added++;
    else CHECK(st == FM_ENOSPC);
  }
  CHECK(added == FM_BACKEND_MAX - 1);
  CHECK(fm_backend_count() == FM_BACKEND_MAX);
  for (int i = 0; i < FM_BACKEND_MAX + 2; i++) {
    snprintf(name, sizeof name, "b%d", i);
    fm_backend_unregister(name);
  }
  CHECK(fm_backend_unregister("decline") == 1);
  CHECK(fm_backend_count() == 0);
}

/* The full differential matrix with a declining backend registered gives the
 * same answers, reported as "reference". */
static void test_decliner_matches_reference(void) {
  fm_err err;
  CHECK_OK(fm_backend_register("decline", decline_all, NULL, &err), &err);
  product_matrix("reference");
  CHECK(fm_backend_unregister("decline") == 1);
}

/* ---- one named backend, and the forced setting ---- */

static void test_named_and_forced(void) {
  fm_err err;
  CHECK_OK(fm_backend_register("decline", decline_all, NULL, &err), &err);
  CHECK_OK(fm_backend_register("k1", only_k1, &k1_calls, &err), &err);
  test_mat t;
  make_mat(&t, FM_CODEC_BED2, 13, 6, 0);
  fm_affine aff = {.center = t.center, .scale = t.scale, .fill = t.fill};
  double b[13 * 3], y[13 * 3], yref[13 * 3];
  for (int i = 0; i < 13 * 3; i++) b[i] = rng_unif() - 0.5;

  /* a backend that takes the product computes it */
  fm_product p = {FM_OP_XB, &t.x, &aff, b, 13, 1, y, 13};
  k1_calls = 0;
  CHECK_OK(fm_backend_run_named("k1", &p, NULL, &err), &err);
  CHECK(k1_calls == 1 && matches_naive(&p));

  /* a decline is an error naming backend, op, columns of B, codec and shape */
  p.k = 3;
  CHECK(fm_backend_run_named("k1", &p, NULL, &err) == FM_EUNSUPPORTED);
  CHECK(err.code == FM_EUNSUPPORTED);
  CHECK(strcmp(err.msg, "backend 'k1' does not support X %*% B with B of 3 columns on codec "
                        "bed2 (13 x 6)") == 0);
  fm_product pt = {FM_OP_XTB, &t.x, &aff, b, 13, 1, y, 13};
  decline_calls = 0;
  CHECK(fm_backend_run_named("decline", &pt, NULL, &err) == FM_EUNSUPPORTED);
  CHECK(decline_calls == 1);
  CHECK(strcmp(err.msg, "backend 'decline' does not support crossprod(X, B) with B of 1 column "
                        "on codec bed2 (13 x 6): declined") == 0);
  fm_product pc = {FM_OP_COLSUMS, &t.x, &aff, NULL, 1, 2, y, 13};
  CHECK(fm_backend_run_named("k1", &pc, NULL, &err) == FM_EUNSUPPORTED);
  CHECK(strstr(err.msg, "does not support column sums on codec bed2") != NULL);

  /* "reference" is the reference path, bit for bit, asking no backend */
  p.k = 3;
  CHECK_OK(fm_backend_run_named("reference", &p, NULL, &err), &err);
  memcpy(yref, y, sizeof y);
  memset(y, 0, sizeof y);
  CHECK_OK(fm_backend_reference(&p, &test_ctl, &err), &err);
  CHECK(memcmp(y, yref, sizeof y) == 0 && decline_calls == 1);

  /* unknown or empty names; invalid products are refused before any backend */
  CHECK(fm_backend_run_named("nope", &p, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "'nope'") && strstr(err.msg, "(registered: decline, k1, reference)"));
  CHECK(fm_backend_run_named(NULL, &p, NULL, &err) == FM_EARG);
  CHECK(fm_backend_run_named("", &p, NULL, &err) == FM_EARG);
  p.ldy = 2;
  CHECK(fm_backend_run_named("decline", &p, NULL, &err) == FM_EARG && decline_calls == 1);
  p.ldy = 13;

  /* forcing through the call's ctl: fm_backend_run follows ctl.backend, with
   * no fallback; other calls (no ctl, or a ctl without a backend) do not */
  const char *used = NULL;
  CHECK_OK(fm_backend_check("k1", &err), &err);
  CHECK_OK(fm_backend_check("reference", &err), &err);
  CHECK(fm_backend_check("nope", &err) == FM_EARG);
  CHECK(strcmp(err.msg, "no backend named 'nope' is registered (registered: decline, k1, "
                        "reference)") == 0);
  CHECK(fm_backend_check("", &err) == FM_EARG && fm_backend_check(NULL, &err) == FM_EARG);
  fm_ctl forced = {
      .backend = "k1", .threads = test_ctl.threads, .panel_bytes = test_ctl.panel_bytes};
  p.k = 1;
  CHECK_OK(fm_backend_run(&p, &forced, &used, &err), &err);
  CHECK(used && strcmp(used, "k1") == 0 && matches_naive(&p));
  p.k = 3;
  CHECK(fm_backend_run(&p, &forced, &used, &err) == FM_EUNSUPPORTED);
  CHECK(used && strcmp(used, "k1") == 0 && strstr(err.msg, "backend 'k1'") != NULL);
  CHECK_OK(fm_backend_run(&p, &test_ctl, &used, &err), &err); /* falls back as usual */
  CHECK(strcmp(used, "reference") == 0 && memcmp(y, yref, sizeof y) == 0 && decline_calls == 2);
  forced.backend = "reference";
  CHECK_OK(fm_backend_run(&p, &forced, &used, &err), &err);
  CHECK(strcmp(used, "reference") == 0 && memcmp(y, yref, sizeof y) == 0 && decline_calls == 2);
  forced.backend = "nope";
  CHECK(fm_backend_run(&p, &forced, &used, &err) == FM_EARG);
  CHECK(strstr(err.msg, "'nope'") != NULL);
  /* products run inside the core follow the caller's ctl: fm_stats_rpca's
   * relay passes ctl.backend on (a forced decliner fails its first pass) */
  fm_rpca_opts ro = fm_rpca_opts_default(1);
  fm_rpca_result rr;
  forced.backend = "decline";
  CHECK(fm_stats_rpca(&t.x, &aff, &ro, &rr, &forced, &err) == FM_EUNSUPPORTED);
  CHECK(strstr(err.msg, "backend 'decline'") != NULL && decline_calls == 3);
  forced.backend = "reference";
  CHECK_OK(fm_stats_rpca(&t.x, &aff, &ro, &rr, &forced, &err), &err);
  CHECK(decline_calls == 3 && rr.d[0] > 0);
  fm_rpca_result_clear(&rr);
  /* a forced backend that goes away: that call fails */
  forced.backend = "decline";
  CHECK(fm_backend_unregister("decline") == 1);
  CHECK(fm_backend_run(&p, &forced, &used, &err) == FM_EARG);
  CHECK(strstr(err.msg, "'decline'") != NULL);
  forced.backend = "";
  CHECK_OK(fm_backend_run(&p, &forced, &used, &err), &err);
  CHECK(strcmp(used, "reference") == 0 && memcmp(y, yref, sizeof y) == 0);
  CHECK(fm_backend_unregister("k1") == 1);
  CHECK(fm_backend_count() == 0);
  free(t.store);
}

/* ---- the per-thread record of the backends used ---- */

typedef struct used_thread_args {
  fm_product p;
  char seen_before[8], seen_after[300];
} used_thread_args;

static void *used_in_thread(void *arg) {
  used_thread_args *a = arg;
  fm_err err;
  snprintf(a->seen_before, sizeof a->seen_before, "%s", fm_backend_used());
  if (fm_backend_run(&a->p, &test_ctl, NULL, &err) != FM_OK) a->seen_after[0] = '!';
  else snprintf(a->seen_after, sizeof a->seen_after, "%s", fm_backend_used());
  return NULL;
}

/* Distinct names in order of first use; declines in the fallback do not
 * count, a forced backend does whatever its status; clear empties it; each
 * thread keeps its own. */
static void test_used_record(void) {
  fm_err err;
  CHECK_OK(fm_backend_register("decline", decline_all, NULL, &err), &err);
  CHECK_OK(fm_backend_register("k1", only_k1, &k1_calls, &err), &err);
  test_mat t;
  make_mat(&t, FM_CODEC_F64, 7, 4, 0);
  double b[7 * 3], y[7 * 3];
  for (int i = 0; i < 7 * 3; i++) b[i] = rng_unif() - 0.5;
  fm_product p1 = {FM_OP_XTB, &t.x, NULL, b, 7, 1, y, 7};
  fm_product p3 = {FM_OP_XTB, &t.x, NULL, b, 7, 3, y, 7};
  fm_backend_used_clear();
  CHECK(strcmp(fm_backend_used(), "") == 0);
  CHECK_OK(fm_backend_run(&p3, &test_ctl, NULL, &err), &err);
  CHECK(strcmp(fm_backend_used(), "reference") == 0);
  CHECK_OK(fm_backend_run(&p1, &test_ctl, NULL, &err), &err);
  CHECK_OK(fm_backend_run(&p3, &test_ctl, NULL, &err), &err);
  CHECK_OK(fm_backend_run(&p1, &test_ctl, NULL, &err), &err);
  CHECK(strcmp(fm_backend_used(), "reference+k1") == 0);
  fm_backend_used_clear();
  CHECK(strcmp(fm_backend_used(), "") == 0);
  CHECK(fm_backend_run_named("k1", &p3, NULL, &err) == FM_EUNSUPPORTED);
  CHECK_OK(fm_backend_run_named("reference", &p1, NULL, &err), &err);
  CHECK(strcmp(fm_backend_used(), "k1+reference") == 0);
  /* an invalid product chooses nothing */
  fm_backend_used_clear();
  p1.ldy = 2;
  CHECK(fm_backend_run(&p1, &test_ctl, NULL, &err) == FM_EARG);
  p1.ldy = 7;
  CHECK(strcmp(fm_backend_used(), "") == 0);
  /* another thread starts empty and records only its own products */
  CHECK_OK(fm_backend_run(&p1, &test_ctl, NULL, &err), &err);
  used_thread_args a = {p3, "x", ""};
  double y_thread[7 * 3];
  a.p.y = y_thread;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, used_in_thread, &a) == 0);
  pthread_join(th, NULL);
  CHECK(strcmp(a.seen_before, "") == 0 && strcmp(a.seen_after, "reference") == 0);
  CHECK(strcmp(fm_backend_used(), "k1") == 0);
  fm_backend_used_clear();
  CHECK(fm_backend_unregister("decline") == 1);
  CHECK(fm_backend_unregister("k1") == 1);
  free(t.store);
}

/* ---- cancellation and progress ---- */

typedef struct ctl_state {
  int polls, cancel_after;
  double last_done, last_total;
  int progress_calls, monotone;
} ctl_state;

static int cancel_cb(void *ud) {
  ctl_state *s = ud;
  return ++s->polls > s->cancel_after;
}

static void progress_cb(void *ud, double done, double total) {
  ctl_state *s = ud;
  if (done < s->last_done) s->monotone = 0;
  s->last_done = done;
  s->last_total = total;
  s->progress_calls++;
}

static void test_cancel_and_progress(void) {
  fm_err err;
  test_mat t;
  make_mat(&t, FM_CODEC_BED2, 101, 40, 0);
  double b[101 * 2], y[40 * 2];
  for (int i = 0; i < 202; i++) b[i] = rng_unif();
  fm_product p = {FM_OP_XTB, &t.x, NULL, b, 101, 2, y, 40};

  test_ctl.panel_bytes = 8 * 101 * 8; /* 8 columns per panel: 5 panels */
  ctl_state s = {0, 1000, 0, 0, 0, 1};
  fm_ctl ctl = {.cancel = cancel_cb,
                .progress = progress_cb,
                .ud = &s,
                .threads = test_ctl.threads,
                .panel_bytes = test_ctl.panel_bytes};
  CHECK_OK(fm_backend_run(&p, &ctl, NULL, &err), &err);
  CHECK(s.polls == 5 && s.progress_calls == 5);
  CHECK(s.last_done == 5 && s.last_total == 5 && s.monotone);

  ctl_state s2 = {0, 2, 0, 0, 0, 1};
  fm_ctl ctl2 = {.cancel = cancel_cb,
                 .progress = progress_cb,
                 .ud = &s2,
                 .threads = test_ctl.threads,
                 .panel_bytes = test_ctl.panel_bytes};
  CHECK(fm_backend_run(&p, &ctl2, NULL, &err) == FM_ECANCELLED);
  CHECK(err.code == FM_ECANCELLED);
  CHECK(s2.polls == 3 && s2.progress_calls == 2);

  ctl_state s3 = {0, 0, 0, 0, 0, 1}; /* cancelled before the first panel */
  fm_ctl ctl3 = {.cancel = cancel_cb,
                 .ud = &s3,
                 .threads = test_ctl.threads,
                 .panel_bytes = test_ctl.panel_bytes};
  CHECK(fm_backend_reference(&p, &ctl3, &err) == FM_ECANCELLED);
  test_ctl.panel_bytes = 0;
  free(t.store);
}

int main(void) {
  FM_RUN(test_reference_all_codecs);
  FM_RUN(test_nan_propagates);
  FM_RUN(test_empty_shapes);
  FM_RUN(test_bad_args);
  FM_RUN(test_registry);
  FM_RUN(test_decliner_matches_reference);
  FM_RUN(test_named_and_forced);
  FM_RUN(test_used_record);
  FM_RUN(test_cancel_and_progress);
  FM_TEST_END();
}
