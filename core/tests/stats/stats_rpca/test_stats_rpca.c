/* Tests for fm_stats_rpca and the private RNG (generated data only).
 * Oracle: LAPACK dgesvd of the explicitly transformed dense matrix (and, for
 * the 3000 x 600 case, dsyev of its Gram matrix, which is cheaper with the
 * reference BLAS and accurate to ~1e-12 relative for the values checked);
 * for opts.v_release, the in-place path on a heap v, and the kernel's
 * page table (/proc/self/pagemap) for what stays resident. */
#define _DEFAULT_SOURCE /* fileno, ftruncate */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/blas.h"
#include "fm/fm_backend.h"
#include "fm/fm_base.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_colvar.h"
#include "fm/fm_stats_rpca.h"
#include "fm_test.h"
#include "fm/fm_rng.h"

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

/* ---------------------------------------------------------------- RNG ---- */

static void test_rng_reference_vectors(void) {
  /* xoshiro256** from state {1, 2, 3, 4}: published reference outputs. */
  static const uint64_t want[10] = {UINT64_C(11520),
                                    UINT64_C(0),
                                    UINT64_C(1509978240),
                                    UINT64_C(1215971899390074240),
                                    UINT64_C(1216172134540287360),
                                    UINT64_C(607988272756665600),
                                    UINT64_C(16172922978634559625),
                                    UINT64_C(8476171486693032832),
                                    UINT64_C(10595114339597558777),
                                    UINT64_C(2904607092377533576)};
  const uint64_t st[4] = {1, 2, 3, 4};
  fm_rng r;
  fm_rng_set_state(&r, st);
  for (int i = 0; i < 10; i++) CHECK(fm_rng_next(&r) == want[i]);
  /* splitmix64 reference (splitmix64.c): seed 1234567, and the first output from 0. */
  static const uint64_t sm[5] = {UINT64_C(6457827717110365317), UINT64_C(3203168211198807973),
                                 UINT64_C(9817491932198370423), UINT64_C(4593380528125082431),
                                 UINT64_C(16408922859458223821)};
  uint64_t s = 1234567;
  for (int i = 0; i < 5; i++) CHECK(fm_rng_splitmix64(&s) == sm[i]);
  s = 0;
  CHECK(fm_rng_splitmix64(&s) == UINT64_C(0xE220A8397B1DCDAF));
  /* seeding = four splitmix64 outputs */
  fm_rng a;
  fm_rng_seed(&a, 1234567);
  for (int i = 0; i < 4; i++) CHECK(a.s[i] == sm[i]);
}

static void test_rng_normals(void) {
  fm_rng a, b;
  fm_rng_seed(&a, 42);
  fm_rng_seed(&b, 42);
  const int64_t n = 200000;
  double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  fm_rng_norm_fill(&a, x, n);
  fm_rng_norm_fill(&b, y, n);
  CHECK(memcmp(x, y, (size_t)n * sizeof *x) == 0);
  double m = 0, v = 0, m4 = 0;
  for (int64_t i = 0; i < n; i++) m += x[i];
  m /= (double)n;
  for (int64_t i = 0; i < n; i++) {
    v += (x[i] - m) * (x[i] - m);
    m4 += pow(x[i] - m, 4);
  }
  v /= (double)(n - 1);
  m4 /= (double)n;
  CHECK(fabs(m) < 5.0 / sqrt((double)n));
  CHECK(fabs(v - 1.0) < 5.0 * sqrt(2.0 / (double)n));
  CHECK(fabs(m4 - 3.0) < 0.1);
  for (int64_t i = 0; i < n; i++) CHECK(isfinite(x[i]));
  /* Box-Muller pairs: the first two normals from the first two uniforms */
  fm_rng c, d;
  fm_rng_seed(&c, 7);
  fm_rng_seed(&d, 7);
  const double u1 = 1.0 - fm_rng_unif(&d), u2 = fm_rng_unif(&d);
  const double rad = sqrt(-2.0 * log(u1));
  CHECK(fm_rng_norm(&c) == rad * cos(6.283185307179586476925286766559 * u2));
  CHECK(fm_rng_norm(&c) == rad * sin(6.283185307179586476925286766559 * u2));
  /* jump: a different, deterministic stream */
  fm_rng j1, j2;
  fm_rng_seed(&j1, 42);
  fm_rng_seed(&j2, 42);
  fm_rng_jump(&j1);
  fm_rng_jump(&j2);
  CHECK(j1.s[0] == j2.s[0] && j1.s[3] == j2.s[3]);
  CHECK(fm_rng_next(&j1) != fm_rng_next(&a));
  free(x);
  free(y);
}

/* ------------------------------------------------------------ helpers ---- */

typedef struct svd_ref {
  int64_t n, p, m;
  double *s;  /* (m) */
  double *u;  /* (n x m) */
  double *vt; /* (m x p) */
} svd_ref;

static void svd_ref_free(svd_ref *r) {
  free(r->s);
  free(r->u);
  free(r->vt);
}

/* Full thin SVD of a (n x p, col-major) with dgesvd. */
static svd_ref dense_svd(const double *a, int64_t n, int64_t p) {
  svd_ref r = {n, p, n < p ? n : p, NULL, NULL, NULL};
  const fm_blas_int N = (fm_blas_int)n, P = (fm_blas_int)p, M = (fm_blas_int)r.m, q = -1;
  double *c = malloc((size_t)(n * p) * sizeof *c);
  memcpy(c, a, (size_t)(n * p) * sizeof *c);
  r.s = malloc((size_t)r.m * sizeof *r.s);
  r.u = malloc((size_t)(n * r.m) * sizeof *r.u);
  r.vt = malloc((size_t)(r.m * p) * sizeof *r.vt);
  fm_blas_int info = 0;
  double wq = 0;
  dgesvd_("S", "S", &N, &P, c, &N, r.s, r.u, &N, r.vt, &M, &wq, &q, &info, FM_FCONE, FM_FCONE);
  const fm_blas_int lw = (fm_blas_int)wq;
  double *work = malloc((size_t)lw * sizeof *work);
  dgesvd_("S", "S", &N, &P, c, &N, r.s, r.u, &N, r.vt, &M, work, &lw, &info, FM_FCONE, FM_FCONE);
  CHECK(info == 0);
  free(work);
  free(c);
  return r;
}

/* Compare the top k of res with ref: values to rtol relative, |cos| of
 * vectors >= 1 - ctol (ctol < 0 skips vectors). */
static void compare(const fm_rpca_result *res, const svd_ref *ref, int64_t k, double rtol,
                    double ctol) {
  CHECK(res->k == k && res->n == ref->n && res->p == ref->p);
  if (res->k != k) return;
  double worst_s = 0, worst_c = 0;
  for (int64_t j = 0; j < k; j++) {
    const double rel = fabs(res->d[j] - ref->s[j]) / ref->s[j];
    if (rel > worst_s) worst_s = rel;
    CHECK_CLOSE(res->d[j], ref->s[j], rtol);
    if (j > 0) CHECK(res->d[j] <= res->d[j - 1]);
    if (ctol < 0) continue;
    double cu = 0, cv = 0;
    for (int64_t i = 0; i < ref->n; i++) cu += res->u[i + j * ref->n] * ref->u[i + j * ref->n];
    for (int64_t i = 0; i < ref->p; i++) cv += res->v[i + j * ref->p] * ref->vt[j + i * ref->m];
    if (1 - fabs(cu) > worst_c) worst_c = 1 - fabs(cu);
    if (1 - fabs(cv) > worst_c) worst_c = 1 - fabs(cv);
    CHECK(fabs(cu) >= 1 - ctol);
    CHECK(fabs(cv) >= 1 - ctol);
    CHECK(cu * cv > 0); /* u and v flipped together */
  }
  if (worst_s > rtol || worst_c > ctol)
    fprintf(stderr, "  worst relative value error %.3g, worst 1-|cos| %.3g\n", worst_s, worst_c);
}

/* Orthonormality of the returned vectors and sign convention. */
static void check_structure(const fm_rpca_result *res) {
  const int64_t n = res->n, p = res->p, k = res->k;
  for (int64_t a = 0; a < k; a++) {
    for (int64_t b = 0; b <= a; b++) {
      double gu = 0, gv = 0;
      for (int64_t i = 0; i < n; i++) gu += res->u[i + a * n] * res->u[i + b * n];
      for (int64_t i = 0; i < p; i++) gv += res->v[i + a * p] * res->v[i + b * p];
      CHECK(fabs(gu - (a == b)) < 1e-12);
      CHECK(fabs(gv - (a == b)) < 1e-12);
    }
    int64_t imax = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(res->u[i + a * n]) > fabs(res->u[imax + a * n])) imax = i;
    CHECK(res->u[imax + a * n] > 0);
  }
}

/* n x p: sum_r w[r] * f_r l_r' + noise * N(0,1), generated. */
static double *planted(int64_t n, int64_t p, int rank, const double *w, double noise,
                       uint64_t seed) {
  fm_rng r;
  fm_rng_seed(&r, seed);
  double *a = malloc((size_t)(n * p) * sizeof *a);
  double *f = malloc((size_t)(n * rank) * sizeof *f), *l = malloc((size_t)(p * rank) * sizeof *l);
  fm_rng_norm_fill(&r, f, n * rank);
  fm_rng_norm_fill(&r, l, p * rank);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) {
      double s = noise * fm_rng_norm(&r);
      for (int t = 0; t < rank; t++) s += w[t] * f[i + t * n] * l[j + t * p];
      a[i + j * n] = s;
    }
  free(f);
  free(l);
  return a;
}

static fm_mat dense_mat(const double *a, int64_t n, int64_t p) {
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, a, n, p, n * 8, &err), &err);
  return m;
}

static const double W4[4] = {1.0, 0.8, 0.6, 0.4};

/* -------------------------------------------------------------- tests ---- */

static void test_planted_300x80(void) {
  const int64_t n = 300, p = 80, k = 6;
  double *a = planted(n, p, 4, W4, 1.0, 1);
  fm_mat x = dense_mat(a, n, p);
  svd_ref ref = dense_svd(a, n, p);
  fm_rpca_opts o = {k, 10, 300, 1e-13, 2024, 0};
  fm_rpca_result res;
  fm_err err = {0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
  CHECK(res.converged);
  printf("  300x80 planted rank 4, k 6, oversample 10, tol 1e-13: %d iterations\n", res.iterations);
  compare(&res, &ref, k, 1e-8, 1e-8);
  check_structure(&res);
  /* the four planted components converge fast; a loose tol is enough for them */
  fm_rpca_result r2;
  fm_rpca_opts o2 = {4, 10, 50, 1e-10, 5, 0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o2, &r2, &test_ctl, &err), &err);
  CHECK(r2.converged);
  printf("  300x80 planted rank 4, k 4, tol 1e-10: %d iterations\n", r2.iterations);
  compare(&r2, &ref, 4, 1e-10, 1e-8);
  fm_rpca_result_clear(&r2);
  fm_rpca_result_clear(&res);
  fm_rpca_result_clear(&res); /* idempotent */
  svd_ref_free(&ref);
  free(a);
}

/* Values scale with A down to tiny entries: at 1e-90, A A' q ~ 1e-178 and its
 * squares underflow, which once hid rank-deficient Krylov blocks (values
 * 4-12% low, reported converged). 100 x 60 noise: the basis fills R^n. */
static void test_tiny_scale(void) {
  const int64_t n = 100, p = 60, k = 3;
  fm_rng r;
  fm_rng_seed(&r, 18);
  double *a = malloc((size_t)(n * p) * sizeof *a), *b = malloc((size_t)(n * p) * sizeof *b);
  fm_rng_norm_fill(&r, a, n * p);
  fm_rpca_opts o = fm_rpca_opts_default(k);
  fm_rpca_result ref, res;
  fm_err err = {0};
  fm_mat x = dense_mat(a, n, p);
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &ref, &test_ctl, &err), &err);
  const double scales[4] = {1e-80, 1e-90, 1e-100, 1e-120};
  for (int t = 0; t < 4; t++) {
    for (int64_t i = 0; i < n * p; i++) b[i] = a[i] * scales[t];
    fm_mat xs = dense_mat(b, n, p);
    CHECK_OK(fm_stats_rpca(&xs, NULL, &o, &res, &test_ctl, &err), &err);
    for (int64_t j = 0; j < k && res.d; j++)
      CHECK(fabs(res.d[j] / scales[t] - ref.d[j]) <= 1e-12 * ref.d[j]);
    fm_rpca_result_clear(&res);
  }
  fm_rpca_result_clear(&ref);
  free(a);
  free(b);
}

/* Centre only, scale only, both: implicit affine equals explicit standardizing. */
static void test_affine_equals_explicit(void) {
  const int64_t n = 300, p = 80, k = 6;
  double *a = planted(n, p, 4, W4, 1.0, 2);
  for (int64_t j = 0; j < p; j++) /* column offsets and spreads to remove */
    for (int64_t i = 0; i < n; i++)
      a[i + j * n] = 5.0 + (double)j + (1.0 + 0.05 * (double)j) * a[i + j * n];
  fm_mat x = dense_mat(a, n, p);
  double mean[80], var[80], scale[80];
  fm_err err = {0};
  CHECK_OK(fm_stats_colvar(&x, mean, var, NULL, &test_ctl, &err), &err);
  for (int64_t j = 0; j < p; j++) scale[j] = 1.0 / sqrt(var[j]);
  double *e = malloc((size_t)(n * p) * sizeof *e);
  for (int mode = 0; mode < 3; mode++) {
    const int use_c = mode != 1, use_s = mode != 0;
    for (int64_t j = 0; j < p; j++)
      for (int64_t i = 0; i < n; i++)
        e[i + j * n] = (a[i + j * n] - (use_c ? mean[j] : 0.0)) * (use_s ? scale[j] : 1.0);
    fm_affine aff = {.center = use_c ? mean : NULL, .scale = use_s ? scale : NULL};
    svd_ref ref = dense_svd(e, n, p);
    fm_rpca_opts o = {k, 10, 300, 1e-13, 99, 0};
    fm_rpca_result res;
    CHECK_OK(fm_stats_rpca(&x, &aff, &o, &res, &test_ctl, &err), &err);
    CHECK(res.converged);
    printf("  affine mode %d (centre %d, scale %d): %d iterations\n", mode, use_c, use_s,
           res.iterations);
    compare(&res, &ref, k, 1e-8, 1e-8);
    fm_rpca_result_clear(&res);
    svd_ref_free(&ref);
  }
  free(e);
  free(a);
}

/* BED2 genotypes with missing calls: centre at the observed mean, scale by
 * 1/sd, fill 0 (mean imputation then centring) vs the dense imputed matrix. */
/* n x p genotypes (INT32_MIN missing, 5%) of two populations (the first
 * n / 3 rows and the rest) with their own allele frequencies per variant:
 * real structure. Caller frees. */
static int32_t *two_populations(fm_rng *r, int64_t n, int64_t p) {
  int32_t *g = malloc((size_t)(n * p) * sizeof *g);
  for (int64_t j = 0; j < p; j++) {
    const double f0 = 0.05 + 0.45 * fm_rng_unif(r), f1 = 0.05 + 0.45 * fm_rng_unif(r);
    for (int64_t i = 0; i < n; i++) {
      const double f = i < n / 3 ? f0 : f1;
      int32_t v = (fm_rng_unif(r) < f) + (fm_rng_unif(r) < f);
      if (fm_rng_unif(r) < 0.05) v = INT32_MIN;
      g[i + j * n] = v;
    }
  }
  return g;
}

static void test_bed2_mean_imputed(void) {
  const int64_t n = 203, p = 90, k = 5; /* n % 4 = 3 */
  fm_rng r;
  fm_rng_seed(&r, 3);
  int32_t *g = two_populations(&r, n, p);
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  uint8_t *bytes = malloc((size_t)(cb * p));
  fm_err err = {0};
  CHECK_OK(fm_codec_bed2_encode(g, n, p, n, bytes, &err), &err);
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, bytes, n, p, cb, &err), &err);
  double mean[90], var[90], scale[90], fill[90];
  CHECK_OK(fm_stats_colvar(&x, mean, var, NULL, &test_ctl, &err), &err);
  for (int64_t j = 0; j < p; j++) {
    scale[j] = var[j] > 0 ? 1.0 / sqrt(var[j]) : 1.0;
    fill[j] = 0.0;
  }
  double *e = malloc((size_t)(n * p) * sizeof *e);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) {
      const int32_t v = g[i + j * n];
      const double imputed = v == INT32_MIN ? mean[j] : (double)v;
      e[i + j * n] = (imputed - mean[j]) * scale[j];
    }
  svd_ref ref = dense_svd(e, n, p);
  fm_affine aff = {.center = mean, .scale = scale, .fill = fill};
  fm_rpca_opts o = {k, 15, 300, 1e-13, 7, 0};
  fm_rpca_result res;
  CHECK_OK(fm_stats_rpca(&x, &aff, &o, &res, &test_ctl, &err), &err);
  CHECK(res.converged);
  printf("  bed2 %lldx%lld mean-imputed, k %lld: %d iterations\n", (long long)n, (long long)p,
         (long long)k, res.iterations);
  compare(&res, &ref, k, 1e-8, 1e-8);
  check_structure(&res);
  fm_rpca_result_clear(&res);
  /* leaving missing values missing is refused */
  fm_affine nofill = {.center = mean, .scale = scale};
  CHECK(fm_stats_rpca(&x, &nofill, &o, &res, &test_ctl, &err) == FM_EARG);
  CHECK(res.d == NULL && res.u == NULL && res.v == NULL);
  svd_ref_free(&ref);
  free(e);
  free(bytes);
  free(g);
}

/* DOS8 through a permuted, repeated column index, centred: equals the SVD of
 * the explicitly decoded and centred dense matrix. */
static void test_dos8_col_index(void) {
  const int64_t n = 150, p_store = 70, p = 50, k = 4;
  fm_rng r;
  fm_rng_seed(&r, 9);
  double *d = malloc((size_t)(n * p_store) * sizeof *d);
  for (int64_t j = 0; j < p_store; j++) {
    const double f = 0.1 + 0.4 * fm_rng_unif(&r);
    for (int64_t i = 0; i < n; i++) {
      const double fi = i < n / 2 ? f : 1.0 - f; /* two groups */
      d[i + j * n] = 2.0 * fi * fm_rng_unif(&r);
    }
  }
  uint8_t *q = malloc((size_t)(n * p_store));
  fm_err err = {0};
  CHECK_OK(fm_codec_dos8_encode(d, n, p_store, n, q, n, &err), &err);
  int64_t idx[50];
  for (int64_t j = 0; j < p; j++) idx[j] = (j * 37 + 11) % p_store;
  idx[49] = idx[0]; /* a repeated column */
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, q, n, p_store, n, &err), &err);
  x.col_index = idx;
  x.n_cols = p;
  double mean[50];
  CHECK_OK(fm_stats_colvar(&x, mean, NULL, NULL, &test_ctl, &err), &err);
  double *e = malloc((size_t)(n * p) * sizeof *e);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) e[i + j * n] = fm_codec_dos8_value(q[i + idx[j] * n]) - mean[j];
  svd_ref ref = dense_svd(e, n, p);
  fm_affine aff = {.center = mean};
  fm_rpca_opts o = {k, 20, 300, 1e-13, 3, 0};
  fm_rpca_result res;
  CHECK_OK(fm_stats_rpca(&x, &aff, &o, &res, &test_ctl, &err), &err);
  CHECK(res.converged);
  compare(&res, &ref, k, 1e-8, 1e-8);
  fm_rpca_result_clear(&res);
  svd_ref_free(&ref);
  free(e);
  free(q);
  free(d);
}

static void test_seed_and_budget(void) {
  const int64_t n = 300, p = 80, k = 6;
  double *a = planted(n, p, 4, W4, 1.0, 4);
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {k, 10, 300, 1e-13, 123, 0};
  fm_rpca_result r1, r2, r3, r4;
  fm_err err = {0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &r1, &test_ctl, &err), &err);
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &r2, &test_ctl, &err), &err);
  /* same seed: identical bits */
  CHECK(r1.iterations == r2.iterations);
  CHECK(memcmp(r1.d, r2.d, (size_t)k * sizeof(double)) == 0);
  CHECK(memcmp(r1.u, r2.u, (size_t)(n * k) * sizeof(double)) == 0);
  CHECK(memcmp(r1.v, r2.v, (size_t)(p * k) * sizeof(double)) == 0);
  /* tiny panel budget: many small panels, same answer within 1e-10 */
  test_ctl.panel_bytes = 8 * 64;
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &r3, &test_ctl, &err), &err);
  test_ctl.panel_bytes = 0;
  /* different seed: same converged answer (signs are canonical) */
  o.seed = 124;
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &r4, &test_ctl, &err), &err);
  double dd = 0, du = 0, dv = 0, sd = 0, su = 0, sv = 0;
  for (int64_t j = 0; j < k; j++) {
    dd = fmax(dd, fabs(r1.d[j] - r3.d[j]) / r1.d[j]);
    sd = fmax(sd, fabs(r1.d[j] - r4.d[j]) / r1.d[j]);
  }
  for (int64_t i = 0; i < n * k; i++) {
    du = fmax(du, fabs(r1.u[i] - r3.u[i]));
    su = fmax(su, fabs(r1.u[i] - r4.u[i]));
  }
  for (int64_t i = 0; i < p * k; i++) {
    dv = fmax(dv, fabs(r1.v[i] - r3.v[i]));
    sv = fmax(sv, fabs(r1.v[i] - r4.v[i]));
  }
  printf("  tiny budget vs default: d %.2g, u %.2g, v %.2g; other seed: d %.2g, u %.2g, v %.2g\n",
         dd, du, dv, sd, su, sv);
  CHECK(dd <= 1e-10 && du <= 1e-10 && dv <= 1e-10);
  CHECK(sd <= 1e-10 && su <= 1e-6 && sv <= 1e-6);
  fm_rpca_result_clear(&r1);
  fm_rpca_result_clear(&r2);
  fm_rpca_result_clear(&r3);
  fm_rpca_result_clear(&r4);
  free(a);
}

/* k = min(n, p): exact in one pass, wide and tall. */
static void test_full_rank_k(void) {
  const int64_t dims[2][2] = {{40, 25}, {25, 40}};
  for (int t = 0; t < 2; t++) {
    const int64_t n = dims[t][0], p = dims[t][1], m = n < p ? n : p;
    double *a = planted(n, p, 4, W4, 1.0, 5 + (uint64_t)t);
    fm_mat x = dense_mat(a, n, p);
    svd_ref ref = dense_svd(a, n, p);
    fm_rpca_opts o = {m, 10, 5, 1e-10, 1, 0};
    fm_rpca_result res;
    fm_err err = {0};
    CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
    CHECK(res.converged && res.iterations <= 2);
    compare(&res, &ref, m, 1e-11, 1e-10);
    check_structure(&res);
    fm_rpca_result_clear(&res);
    /* max_iter 0: Algorithm 4.1 plus Rayleigh-Ritz, still exact at l = min(n, p) */
    o.max_iter = 0;
    CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
    CHECK(res.iterations == 0 && !res.converged);
    compare(&res, &ref, m, 1e-11, 1e-10);
    fm_rpca_result_clear(&res);
    svd_ref_free(&ref);
    free(a);
  }
  /* 1 x 1 and a single row */
  double one = -3.0;
  fm_mat x = dense_mat(&one, 1, 1);
  fm_rpca_opts o = {1, 10, 10, 1e-10, 1, 0};
  fm_rpca_result res;
  fm_err err = {0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
  CHECK(fabs(res.d[0] - 3.0) < 1e-15 && res.u[0] == 1.0 && res.v[0] == -1.0);
  fm_rpca_result_clear(&res);
}

static void test_arguments(void) {
  double a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13};
  fm_mat x = dense_mat(a, 4, 3);
  fm_rpca_result res;
  fm_err err = {0};
  fm_rpca_opts o = {0, 5, 10, 1e-10, 1, 0};
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
  CHECK(err.code == FM_EARG && res.d == NULL);
  o.k = 4;
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
  o.k = 3;
  o.oversample = -1;
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
  o.oversample = 0;
  o.max_iter = -1;
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
  o.max_iter = 3;
  o.tol = NAN;
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
  o.tol = 0; /* tol 0: runs to max_iter unless values stop changing */
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
  fm_rpca_result_clear(&res);
  CHECK(fm_stats_rpca(NULL, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
  CHECK(fm_stats_rpca(&x, NULL, NULL, &res, &test_ctl, &err) == FM_EARG);
  CHECK(fm_stats_rpca(&x, NULL, &o, NULL, &test_ctl, &err) == FM_EARG);
  /* empty matrix: no k is in range */
  fm_mat e = dense_mat(a, 0, 3);
  o.k = 1;
  CHECK(fm_stats_rpca(&e, NULL, &o, &res, &test_ctl, &err) == FM_EARG);
}

static void test_degenerate(void) {
  const int64_t n = 30, p = 12;
  double *a = calloc((size_t)(n * p), sizeof *a);
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {2, 5, 10, 1e-10, 1, 0};
  fm_rpca_result res;
  fm_err err = {0};
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EDEGENERATE);
  CHECK(res.d == NULL);
  /* constant columns centred at their (rounded) means: zero up to rounding */
  double mean[12];
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) a[i + j * n] = 0.1 * (double)(j + 1);
  CHECK_OK(fm_stats_colvar(&x, mean, NULL, NULL, &test_ctl, &err), &err);
  fm_affine aff = {.center = mean};
  CHECK(fm_stats_rpca(&x, &aff, &o, &res, &test_ctl, &err) == FM_EDEGENERATE);
  /* rank one is fine, even with k above the rank */
  for (int64_t i = 0; i < n; i++) a[i] = (double)i - 14.5;
  o.k = 3;
  CHECK_OK(fm_stats_rpca(&x, &aff, &o, &res, &test_ctl, &err), &err);
  CHECK(res.d[1] < 1e-12 * res.d[0] && res.converged);
  check_structure(&res);
  fm_rpca_result_clear(&res);
  free(a);
}

/* a (rows x m, m <= 12) := the Q factor of its QR. */
static void orthonormalize(double *a, int64_t rows, int64_t m) {
  const fm_blas_int R = (fm_blas_int)rows, M = (fm_blas_int)m, lw = 4096;
  fm_blas_int info = 0;
  double tau[12], *work = malloc(4096 * sizeof *work);
  dgeqrf_(&R, &M, a, &R, tau, work, &lw, &info);
  CHECK(info == 0);
  dorgqr_(&R, &M, &M, a, &R, tau, work, &lw, &info);
  CHECK(info == 0);
  free(work);
}
/* A = Uo diag(s) Vo' with s_j = 10^(-0.6 j), j = 0..11 (Uo, Vo orthonormal
 * from the QR of normals): values from 1 down to 10^-6.6 of the top. The
 * iteration works on A A' (squared values), so rounding at eps d0^2 limits
 * the subspace of small components: vectors lose up to about eps (d0/dj)^2
 * in angle (fm_stats_rpca.h); values come from the unsquared final step and
 * keep about eps d0/dj. The bounds are those, with a factor 10; the
 * measured errors (far smaller for all but the last components) are
 * printed. */
static void test_spectrum_decay(void) {
  const int64_t n = 300, p = 150, m = 12, k = 10;
  fm_rng r;
  fm_rng_seed(&r, 77);
  double *uo = malloc((size_t)(n * m) * sizeof *uo), *vo = malloc((size_t)(p * m) * sizeof *vo);
  fm_rng_norm_fill(&r, uo, n * m);
  fm_rng_norm_fill(&r, vo, p * m);
  orthonormalize(uo, n, m);
  orthonormalize(vo, p, m);
  double sv[12];
  for (int64_t j = 0; j < m; j++) sv[j] = pow(10.0, -0.6 * (double)j);
  double *a = calloc((size_t)(n * p), sizeof *a);
  for (int64_t c = 0; c < p; c++)
    for (int64_t j = 0; j < m; j++)
      for (int64_t i = 0; i < n; i++) a[i + c * n] += uo[i + j * n] * sv[j] * vo[c + j * p];
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {k, 10, 50, 1e-12, 11, 0};
  fm_rpca_result res;
  fm_err err = {0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
  CHECK(res.converged);
  check_structure(&res);
  printf("  singular values 10^(-0.6 j): %d iterations; per component d_j / d_0: relative "
         "value error, angle of u, angle of v\n",
         res.iterations);
  for (int64_t j = 0; j < k && res.d; j++) {
    double cu = 0, au = 0, av = 0;
    for (int64_t i = 0; i < n; i++) cu += res.u[i + j * n] * uo[i + j * n];
    const double sg = cu < 0 ? -1.0 : 1.0;
    for (int64_t i = 0; i < n; i++) au += pow(res.u[i + j * n] - sg * uo[i + j * n], 2);
    for (int64_t i = 0; i < p; i++) av += pow(res.v[i + j * p] - sg * vo[i + j * p], 2);
    au = sqrt(au);
    av = sqrt(av);
    const double rel = fabs(res.d[j] - sv[j]) / sv[j], ratio = sv[0] / sv[j];
    printf("    %.1e: %.1e %.1e %.1e\n", sv[j], rel, au, av);
    CHECK(rel <= 10 * DBL_EPSILON * ratio + 1e-14);
    CHECK(au <= 10 * DBL_EPSILON * ratio * ratio + 1e-13);
    CHECK(av <= 10 * DBL_EPSILON * ratio * ratio + 1e-13);
  }
  fm_rpca_result_clear(&res);
  free(a);
  free(uo);
  free(vo);
}

/* fm_stats_rpca_into writes the same bits into caller buffers. */
static void test_into(void) {
  const int64_t n = 120, p = 70, k = 4;
  double *a = planted(n, p, 4, W4, 1.0, 12);
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {k, 10, 100, 1e-12, 5, 0};
  fm_rpca_result res;
  fm_err err = {0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
  double d[4], *u = malloc((size_t)(n * k) * sizeof *u), *v = malloc((size_t)(p * k) * sizeof *v);
  int it = -1, conv = -1;
  CHECK_OK(fm_stats_rpca_into(&x, NULL, NULL, &o, d, u, v, &it, &conv, &test_ctl, &err), &err);
  CHECK(it == res.iterations && conv == res.converged && conv);
  CHECK(memcmp(d, res.d, sizeof d) == 0);
  CHECK(memcmp(u, res.u, (size_t)(n * k) * sizeof *u) == 0);
  CHECK(memcmp(v, res.v, (size_t)(p * k) * sizeof *v) == 0);
  CHECK_OK(fm_stats_rpca_into(&x, NULL, NULL, &o, d, u, v, NULL, NULL, &test_ctl, &err), &err);
  CHECK(fm_stats_rpca_into(&x, NULL, NULL, &o, d, u, NULL, &it, &conv, &test_ctl, &err) == FM_EARG);
  CHECK(it == 0 && conv == 0);
  CHECK(fm_stats_rpca_into(&x, NULL, NULL, &o, NULL, u, v, NULL, NULL, &test_ctl, &err) == FM_EARG);
  o.k = 0;
  CHECK(fm_stats_rpca_into(&x, NULL, NULL, &o, d, u, v, NULL, NULL, &test_ctl, &err) == FM_EARG);
  fm_rpca_result_clear(&res);
  free(u);
  free(v);
  free(a);
}

/* Column divisors (col_div) give the result of aff->scale = 1/col_div, with
 * a zero fill (centring at the mean) and with a nonzero one (imputation
 * without centring, where the fill is divided too). */
static void test_col_div(void) {
  const int64_t n = 203, p = 90, k = 4;
  fm_rng r;
  fm_rng_seed(&r, 15);
  int32_t *g = malloc((size_t)(n * p) * sizeof *g);
  for (int64_t j = 0; j < p; j++) {
    const double f0 = 0.05 + 0.45 * fm_rng_unif(&r), f1 = 0.05 + 0.45 * fm_rng_unif(&r);
    for (int64_t i = 0; i < n; i++) {
      const double f = i < n / 3 ? f0 : f1;
      int32_t v = (fm_rng_unif(&r) < f) + (fm_rng_unif(&r) < f);
      if (fm_rng_unif(&r) < 0.05) v = INT32_MIN;
      g[i + j * n] = v;
    }
  }
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  uint8_t *bytes = malloc((size_t)(cb * p));
  fm_err err = {0};
  CHECK_OK(fm_codec_bed2_encode(g, n, p, n, bytes, &err), &err);
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, bytes, n, p, cb, &err), &err);
  double mean[90], var[90], div[90], mult[90], zero[90], fill_scaled[90];
  CHECK_OK(fm_stats_colvar(&x, mean, var, NULL, &test_ctl, &err), &err);
  for (int64_t j = 0; j < p; j++) {
    div[j] = sqrt(var[j]);
    mult[j] = 1.0 / div[j];
    zero[j] = 0.0;
    fill_scaled[j] = mean[j] * mult[j];
  }
  const fm_affine scaled[2] = {{.center = mean, .scale = mult, .fill = zero},
                               {.scale = mult, .fill = fill_scaled}};
  const fm_affine unscaled[2] = {{.center = mean, .fill = zero}, {.fill = mean}};
  fm_rpca_opts o = {k, 15, 300, 1e-13, 7, 0};
  double d[4], *u = malloc((size_t)(n * k) * sizeof *u), *v = malloc((size_t)(p * k) * sizeof *v);
  for (int t = 0; t < 2; t++) {
    fm_rpca_result ref;
    CHECK_OK(fm_stats_rpca(&x, &scaled[t], &o, &ref, &test_ctl, &err), &err);
    int it = 0, conv = 0;
    CHECK_OK(fm_stats_rpca_into(&x, &unscaled[t], div, &o, d, u, v, &it, &conv, &test_ctl, &err),
             &err);
    CHECK(conv && ref.converged);
    double dd = 0, du = 0, dv = 0;
    for (int64_t j = 0; j < k; j++) dd = fmax(dd, fabs(d[j] - ref.d[j]) / ref.d[j]);
    for (int64_t i = 0; i < n * k; i++) du = fmax(du, fabs(u[i] - ref.u[i]));
    for (int64_t i = 0; i < p * k; i++) dv = fmax(dv, fabs(v[i] - ref.v[i]));
    printf("  col_div vs aff->scale (%s fill): d %.2g, u %.2g, v %.2g\n", t ? "nonzero" : "zero",
           dd, du, dv);
    CHECK(dd <= 1e-12 && du <= 1e-9 && dv <= 1e-9);
    fm_rpca_result_clear(&ref);
  }
  CHECK(fm_stats_rpca_into(&x, &scaled[0], div, &o, d, u, v, NULL, NULL, &test_ctl, &err) ==
        FM_EARG);
  div[7] = 0.0;
  CHECK(fm_stats_rpca_into(&x, &unscaled[0], div, &o, d, u, v, NULL, NULL, &test_ctl, &err) ==
        FM_EARG);
  CHECK(strstr(err.msg, "col_div[7]") != NULL);
  free(u);
  free(v);
  free(bytes);
  free(g);
}

/* A backend that records the ops it is offered and declines them all, so
 * the reference path computes: the passes over A are exactly the products. */
typedef struct op_log {
  int n_ops;
  fm_op ops[256];
  int64_t ks[256];
} op_log;

static fm_status logging_backend(void *ud, const fm_product *pr, const fm_ctl *ctl, fm_err *err) {
  (void)ctl;
  (void)err;
  op_log *lg = ud;
  if (lg->n_ops < 256) {
    lg->ops[lg->n_ops] = pr->op;
    lg->ks[lg->n_ops] = pr->k;
  }
  lg->n_ops++;
  return FM_EUNSUPPORTED;
}

/* One pass per iteration: iterations + 1 XXTB products with l columns, then
 * one XTB with k columns. */
static void test_passes(void) {
  const int64_t n = 150, p = 60, k = 3;
  double *a = planted(n, p, 4, W4, 1.0, 13);
  fm_mat x = dense_mat(a, n, p);
  op_log lg;
  memset(&lg, 0, sizeof lg);
  fm_err err = {0};
  CHECK_OK(fm_backend_register("test_logger", logging_backend, &lg, &err), &err);
  const int max_iters[2] = {0, 40};
  for (int t = 0; t < 2; t++) {
    lg.n_ops = 0;
    fm_rpca_opts o = {k, 7, max_iters[t], 1e-10, 3, 0};
    fm_rpca_result res;
    CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
    printf("  max_iter %d: %d iterations, %d passes\n", max_iters[t], res.iterations, lg.n_ops);
    CHECK(lg.n_ops == res.iterations + 2);
    for (int i = 0; i < lg.n_ops && i < 256; i++) {
      const int last = i == lg.n_ops - 1;
      CHECK(lg.ops[i] == (last ? FM_OP_XTB : FM_OP_XXTB));
      CHECK(lg.ks[i] == (last ? k : k + 7));
    }
    if (t == 1) CHECK(res.converged && res.iterations < 40);
    fm_rpca_result_clear(&res);
  }
  CHECK(fm_backend_unregister("test_logger"));
  free(a);
}

/* A A' must stay in double range: a matrix of values 1e-170 underflows in
 * the Gram product and is reported as numerically zero. */
static void test_underflow(void) {
  const int64_t n = 20, p = 10;
  double *a = planted(n, p, 4, W4, 1.0, 14);
  for (int64_t i = 0; i < n * p; i++) a[i] *= 1e-170;
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {2, 3, 10, 1e-10, 1, 0};
  fm_rpca_result res;
  fm_err err = {0};
  CHECK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err) == FM_EDEGENERATE);
  /* 1e-140 is fine: the values scale exactly */
  for (int64_t i = 0; i < n * p; i++) a[i] *= 1e30;
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &test_ctl, &err), &err);
  svd_ref ref = dense_svd(a, n, p);
  compare(&res, &ref, 2, 1e-10, 1e-8);
  fm_rpca_result_clear(&res);
  svd_ref_free(&ref);
  free(a);
}

typedef struct cstate {
  int polls, cancel_at;
  double done, total;
  int backwards; /* progress calls that went down */
} cstate;

static int cancel_cb(void *ud) {
  cstate *s = ud;
  return ++s->polls >= s->cancel_at;
}

static void progress_cb(void *ud, double done, double total) {
  cstate *s = ud;
  if (done < s->done) s->backwards++;
  s->done = done;
  s->total = total;
}

static void test_cancel(void) {
  const int64_t n = 120, p = 50;
  double *a = planted(n, p, 4, W4, 1.0, 8);
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {4, 6, 20, 0.0, 1, 0};
  fm_err err = {0};
  fm_rpca_result res;
  /* count polls of a full run, then cancel at every poll in turn */
  cstate s = {0, 1 << 30, 0, 0, 0};
  fm_ctl ctl = {.cancel = cancel_cb, .progress = progress_cb, .ud = &s};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &ctl, &err), &err);
  CHECK(s.done == s.total && s.total == 2 + 20 && s.backwards == 0);
  fm_rpca_result_clear(&res);
  /* many panels per pass: progress still monotone, in passes, ending at the total */
  ctl.panel_bytes = 8 * 200;
  s = (cstate){0, 1 << 30, 0, 0, 0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &ctl, &err), &err);
  CHECK(s.done == s.total && s.total == 2 + 20 && s.backwards == 0);
  CHECK(s.polls > 10 * (2 + 20));
  fm_rpca_result_clear(&res);
  ctl.panel_bytes = 0;
  s = (cstate){0, 1 << 30, 0, 0, 0};
  CHECK_OK(fm_stats_rpca(&x, NULL, &o, &res, &ctl, &err), &err);
  const int passes = res.iterations + 2;
  fm_rpca_result_clear(&res);
  const int polls = s.polls;
  CHECK(polls >= passes);
  for (int at = 1; at <= polls; at += (at < 8 ? 1 : 7)) {
    s = (cstate){0, at, 0, 0, 0};
    memset(&res, 0xff, sizeof res); /* garbage in: must come back zeroed */
    CHECK(fm_stats_rpca(&x, NULL, &o, &res, &ctl, &err) == FM_ECANCELLED);
    CHECK(err.code == FM_ECANCELLED);
    CHECK(res.d == NULL && res.u == NULL && res.v == NULL && res.k == 0);
    CHECK(s.total == 0 || s.done < s.total);
  }
  free(a);
}

/* Signal plus a noise bulk: 3 * F L + N(0, 1) (F n x 4, L 4 x p), centred;
 * k = 6 reaches two components inside the bulk, where gaps are small and
 * subspace iteration is slowest. With the default options every one of the
 * top 6 values must be within 1e-6 of the full decomposition (oracle:
 * eigenvalues of the Gram matrix of the explicitly centred data, accurate to
 * ~1e-12 relative here and much cheaper than dgesvd with the reference BLAS). */
static void noise_bulk_case(int64_t n, int64_t p, uint64_t seed) {
  const int64_t k = 6;
  const double w[4] = {3, 3, 3, 3};
  double *a = planted(n, p, 4, w, 1.0, seed);
  fm_mat x = dense_mat(a, n, p);
  double *mean = malloc((size_t)p * sizeof *mean);
  fm_err err = {0};
  CHECK_OK(fm_stats_colvar(&x, mean, NULL, NULL, &test_ctl, &err), &err);
  double *e = malloc((size_t)(n * p) * sizeof *e), *g = malloc((size_t)(p * p) * sizeof *g);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) e[i + j * n] = a[i + j * n] - mean[j];
  {
    const fm_blas_int N = (fm_blas_int)n, P = (fm_blas_int)p, q = -1;
    const double one = 1, zero = 0;
    dsyrk_("U", "T", &P, &N, &one, e, &N, &zero, g, &P, FM_FCONE, FM_FCONE);
    fm_blas_int info = 0;
    double wq = 0, *ev = malloc((size_t)p * sizeof *ev);
    dsyev_("N", "U", &P, g, &P, ev, &wq, &q, &info, FM_FCONE, FM_FCONE);
    const fm_blas_int lw = (fm_blas_int)wq;
    double *work = malloc((size_t)lw * sizeof *work);
    dsyev_("N", "U", &P, g, &P, ev, work, &lw, &info, FM_FCONE, FM_FCONE);
    CHECK(info == 0);
    for (int64_t j = 0; j < k; j++) g[j] = sqrt(ev[p - 1 - j]); /* top values, decreasing */
    free(work);
    free(ev);
  }
  fm_affine aff = {.center = mean};
  fm_rpca_opts o = fm_rpca_opts_default(k); /* oversample 30, max_iter 100, tol 1e-10 */
  o.seed = 42;
  fm_rpca_result res;
  const clock_t c0 = clock();
  CHECK_OK(fm_stats_rpca(&x, &aff, &o, &res, &test_ctl, &err), &err);
  const double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
  double worst = 0;
  for (int64_t j = 0; j < k && res.d; j++) worst = fmax(worst, fabs(res.d[j] - g[j]) / g[j]);
  printf("  %lldx%lld signal + noise bulk, centred, k 6, defaults (oversample %lld, max_iter %d, "
         "tol %g): %d iterations, converged %d, %.2f s CPU, worst relative value error %.2g\n",
         (long long)n, (long long)p, (long long)o.oversample, o.max_iter, o.tol, res.iterations,
         res.converged, secs, worst);
  CHECK(res.converged);
  CHECK(worst <= 1e-6);
  fm_rpca_result_clear(&res);
  free(g);
  free(e);
  free(mean);
  free(a);
}

static void test_noise_bulk_1000x200(void) { noise_bulk_case(1000, 200, 600); }

/* The 3000 x 600 acceptance example: about 8 s with the reference BLAS (more
 * under sanitizers), so it runs only with FM_TEST_BIG=1. */
static void test_3000x600(void) {
  const char *big = getenv("FM_TEST_BIG");
  if (!big || strcmp(big, "1") != 0) {
    printf("  3000x600 example skipped (set FM_TEST_BIG=1 to run it)\n");
    return;
  }
  noise_bulk_case(3000, 600, 600);
}

/* ------------------------------------------------ v in a file mapping ---- */

/* Pages of [addr, addr + bytes) mapped in this process (/proc/self/pagemap
 * bit 63); -1 when pagemap cannot be read. */
static long present_pages(const void *addr, size_t bytes) {
  const long ps = sysconf(_SC_PAGESIZE);
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  const uintptr_t a0 = (uintptr_t)addr / (uintptr_t)ps, a1 = ((uintptr_t)addr + bytes - 1) / (uintptr_t)ps;
  long n = 0;
  for (uintptr_t pg = a0; pg <= a1; pg++) {
    uint64_t e = 0;
    if (pread(fd, &e, sizeof e, (off_t)(pg * 8)) != (ssize_t)sizeof e) {
      close(fd);
      return -1;
    }
    n += (long)(e >> 63);
  }
  close(fd);
  return n;
}

/* A p x k double array in a MAP_SHARED mapping of an unlinked temporary
 * file (whole pages), as an fmalloc runtime holds it. */
static double *map_v(int64_t p, int64_t k, size_t *bytes_out) {
  const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  const size_t bytes = ((size_t)(p * k) * sizeof(double) + ps - 1) / ps * ps;
  *bytes_out = bytes;
  FILE *f = tmpfile();
  CHECK(f != NULL);
  if (!f) return NULL;
  CHECK(ftruncate(fileno(f), (off_t)bytes) == 0);
  void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
  fclose(f); /* the mapping keeps the file */
  CHECK(a != MAP_FAILED);
  return a == MAP_FAILED ? NULL : a;
}

/* fm_stats_rpca_into with v_release on a mapped v against the in-place
 * path on a heap v: values within 1e-12 relative (vs_d0: relative to d[0],
 * for values at rounding level of it), u and v within vtol; the pages of v
 * are not resident afterwards (at most the one after v's end, which the
 * page-aligned size here leaves out) and hold the values. */
static void release_case(const char *what, const fm_mat *x, const fm_affine *aff,
                         const double *col_div, fm_rpca_opts o, int vs_d0, double vtol) {
  const int64_t n = x->n_rows, p = x->n_cols, k = o.k;
  double *d0 = malloc((size_t)k * sizeof *d0), *d1 = malloc((size_t)k * sizeof *d1);
  double *u0 = malloc((size_t)(n * k) * sizeof *u0), *u1 = malloc((size_t)(n * k) * sizeof *u1);
  double *v0 = malloc((size_t)(p * k) * sizeof *v0);
  size_t bytes = 0;
  double *v1 = map_v(p, k, &bytes);
  fm_err err = {0};
  o.v_release = 0;
  CHECK_OK(fm_stats_rpca_into(x, aff, col_div, &o, d0, u0, v0, NULL, NULL, &test_ctl, &err), &err);
  o.v_release = 1;
  int it = 0, conv = 0;
  CHECK_OK(fm_stats_rpca_into(x, aff, col_div, &o, d1, u1, v1, &it, &conv, &test_ctl, &err), &err);
  const long present = present_pages(v1, bytes);
  double dd = 0, du = 0, dv = 0;
  for (int64_t j = 0; j < k; j++) dd = fmax(dd, fabs(d1[j] - d0[j]) / (vs_d0 ? d0[0] : d0[j]));
  for (int64_t i = 0; i < n * k; i++) du = fmax(du, fabs(u1[i] - u0[i]));
  for (int64_t i = 0; i < p * k; i++) dv = fmax(dv, fabs(v1[i] - v0[i]));
  printf("  v_release, %s: d %.2g, u %.2g, v %.2g; %ld of %ld pages of v resident after\n", what,
         dd, du, dv, present, (long)(bytes / (size_t)sysconf(_SC_PAGESIZE)));
  CHECK(dd <= 1e-12 && du <= vtol && dv <= vtol);
  if (present >= 0) CHECK(present == 0);
  free(d0);
  free(d1);
  free(u0);
  free(u1);
  free(v0);
  if (v1) munmap(v1, bytes);
}

/* Dense F64 (chunks as data offsets), many chunks and one; a wide spread of
 * values (10^(-0.6 j): d[9] = 4e-6 d[0], cond(Z) 2.5e5, CholeskyQR2's
 * path); BED2 with col_div and a nonzero fill (affine arrays offset) under a
 * column index (offset index); and the Householder fallback: d[9] = 1e-9
 * d[0] and a rank-2 matrix with k = 4, where CholeskyQR2 alone would fail. */
static void test_v_release(void) {
  const int64_t n = 150, p = 1024;
  double *a = planted(n, p, 4, W4, 1.0, 31);
  fm_mat x = dense_mat(a, n, p);
  fm_rpca_opts o = {4, 10, 100, 1e-12, 5, 0};
  test_ctl.panel_bytes = 16 * 8 * 4 * 37; /* chunks of 37 rows */
  release_case("planted, chunks of 37", &x, NULL, NULL, o, 0, 1e-10);
  test_ctl.panel_bytes = 0;
  release_case("planted, one chunk", &x, NULL, NULL, o, 0, 1e-10);

  /* wide spread and fallback: a = U diag(s) V' with orthonormal U, V */
  const int64_t m = 12, k = 10;
  fm_rng r;
  fm_rng_seed(&r, 78);
  double *uo = malloc((size_t)(n * m) * sizeof *uo), *vo = malloc((size_t)(p * m) * sizeof *vo);
  fm_rng_norm_fill(&r, uo, n * m);
  fm_rng_norm_fill(&r, vo, p * m);
  orthonormalize(uo, n, m);
  orthonormalize(vo, p, m);
  const double steps[2] = {-0.6, -1.0};
  for (int t = 0; t < 2; t++) {
    memset(a, 0, (size_t)(n * p) * sizeof *a);
    for (int64_t c = 0; c < p; c++)
      for (int64_t j = 0; j < m; j++)
        for (int64_t i = 0; i < n; i++)
          a[i + c * n] += uo[i + j * n] * pow(10.0, steps[t] * (double)j) * vo[c + j * p];
    fm_rpca_opts ok = {k, 10, 50, 1e-12, 11, 0};
    test_ctl.panel_bytes = 16 * 8 * 10 * 100;
    /* the fallback is the in-place path on the same Z (the dense reference
     * product gives each column the same bits in any chunk), so it agrees
     * bit for bit, which CholeskyQR2 would not */
    release_case(t == 0 ? "spread to 4e-6 d[0] (CholeskyQR2)" : "spread to 1e-9 d[0] (fallback)", &x,
                 NULL, NULL, ok, t == 1, t == 0 ? 1e-10 : 0.0);
    test_ctl.panel_bytes = 0;
  }
  free(uo);
  free(vo);
  /* rank 2, k = 4: Z'Z is singular */
  const double w2[2] = {1.0, 0.5};
  double *a2 = planted(n, p, 2, w2, 0.0, 32);
  fm_mat x2 = dense_mat(a2, n, p);
  fm_rpca_opts o2 = {4, 6, 20, 1e-12, 3, 0};
  test_ctl.panel_bytes = 16 * 8 * 4 * 100;
  release_case("rank 2, k = 4 (fallback)", &x2, NULL, NULL, o2, 1, 0.0);
  test_ctl.panel_bytes = 0;
  free(a2);

  /* progress stays monotone through the chunks and ends at the total; a
   * cancel at any poll of the final step is reported */
  {
    size_t vb = 0;
    double *vm = map_v(p, 4, &vb), dd[4];
    double *uu = malloc((size_t)(n * 4) * sizeof *uu);
    fm_rpca_opts oc = {4, 6, 20, 0.0, 1, 1};
    test_ctl.panel_bytes = 16 * 8 * 4 * 200;
    cstate cs = {0, 1 << 30, 0, 0, 0};
    fm_ctl ctl = {.cancel = cancel_cb,
                  .progress = progress_cb,
                  .ud = &cs,
                  .threads = test_ctl.threads,
                  .panel_bytes = test_ctl.panel_bytes};
    fm_err e2 = {0};
    CHECK_OK(fm_stats_rpca_into(&x, NULL, NULL, &oc, dd, uu, vm, NULL, NULL, &ctl, &e2), &e2);
    CHECK(cs.done == cs.total && cs.total == 2 + 20 && cs.backwards == 0);
    const int polls = cs.polls;
    for (int at = polls; at > polls - 12 && at > 0; at--) {
      cs = (cstate){0, at, 0, 0, 0};
      CHECK(fm_stats_rpca_into(&x, NULL, NULL, &oc, dd, uu, vm, NULL, NULL, &ctl, &e2) ==
            FM_ECANCELLED);
      CHECK(cs.backwards == 0 && cs.done < cs.total);
    }
    /* the chunks' products follow ctl.backend: with "reference" forced, a
     * registered logger is offered none of them; without, every chunk */
    op_log lg;
    memset(&lg, 0, sizeof lg);
    CHECK_OK(fm_backend_register("test_logger", logging_backend, &lg, &e2), &e2);
    fm_ctl forced = {
        .backend = "reference", .threads = test_ctl.threads, .panel_bytes = test_ctl.panel_bytes};
    CHECK_OK(fm_stats_rpca_into(&x, NULL, NULL, &oc, dd, uu, vm, NULL, NULL, &forced, &e2), &e2);
    CHECK(lg.n_ops == 0);
    int it = 0;
    CHECK_OK(fm_stats_rpca_into(&x, NULL, NULL, &oc, dd, uu, vm, &it, NULL, &test_ctl, &e2), &e2);
    CHECK(lg.n_ops == it + 1 + (p + 199) / 200); /* iterations + 1 XXTB, then the chunks */
    CHECK(fm_backend_unregister("test_logger"));
    test_ctl.panel_bytes = 0;
    free(uu);
    if (vm) munmap(vm, vb);
  }

  /* BED2, col_div, nonzero fill, column index */
  const int64_t pb = 700;
  fm_rng_seed(&r, 33);
  int32_t *g = two_populations(&r, n, pb);
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  uint8_t *bytes = malloc((size_t)(cb * pb));
  fm_err err = {0};
  CHECK_OK(fm_codec_bed2_encode(g, n, pb, n, bytes, &err), &err);
  fm_mat xb;
  CHECK_OK(fm_mat_init(&xb, FM_CODEC_BED2, bytes, n, pb, cb, &err), &err);
  const int64_t pc = 512;
  int64_t *idx = malloc((size_t)pc * sizeof *idx);
  for (int64_t j = 0; j < pc; j++) idx[j] = (j * 7 + 3) % pb; /* distinct: 7 and 700 coprime */
  xb.col_index = idx;
  xb.n_cols = pc;
  double *mean = malloc((size_t)pc * sizeof *mean), *var = malloc((size_t)pc * sizeof *var);
  double *div = malloc((size_t)pc * sizeof *div);
  CHECK_OK(fm_stats_colvar(&xb, mean, var, NULL, &test_ctl, &err), &err);
  for (int64_t j = 0; j < pc; j++) div[j] = sqrt(var[j]);
  const fm_affine imp = {.fill = mean};
  fm_rpca_opts ob = {4, 15, 300, 1e-13, 7, 0};
  test_ctl.panel_bytes = 16 * 8 * 4 * 29;
  release_case("bed2, col_div, fill, col_index", &xb, &imp, div, ob, 0, 1e-9);
  test_ctl.panel_bytes = 0;
  free(idx);
  free(mean);
  free(var);
  free(div);
  free(bytes);
  free(g);
  free(a);
}

int main(void) {
  FM_RUN(test_rng_reference_vectors);
  FM_RUN(test_rng_normals);
  FM_RUN(test_planted_300x80);
  FM_RUN(test_tiny_scale);
  FM_RUN(test_affine_equals_explicit);
  FM_RUN(test_bed2_mean_imputed);
  FM_RUN(test_dos8_col_index);
  FM_RUN(test_seed_and_budget);
  FM_RUN(test_full_rank_k);
  FM_RUN(test_arguments);
  FM_RUN(test_degenerate);
  FM_RUN(test_cancel);
  FM_RUN(test_spectrum_decay);
  FM_RUN(test_into);
  FM_RUN(test_col_div);
  FM_RUN(test_passes);
  FM_RUN(test_underflow);
  FM_RUN(test_noise_bulk_1000x200);
  FM_RUN(test_3000x600);
  FM_RUN(test_v_release);
  FM_TEST_END();
}
