/* test_stats_ldpred2.c: LDpred2 (fm_stats_ldpred2.h) on generated bands.
 * Oracles: a dense Cholesky solve for inf (f64 and f32 bands); for the
 * Gibbs samplers, the posterior mean of the infinitesimal model (p = 1 makes
 * grid's model that of inf), reproducibility for a seed, independence of
 * the thread count, and divergence on an indefinite "LD" matrix. */
#include "fm/fm_stats_ldpred2.h"

#include "fm_test.h"
#include "stats/stats_ldpred2_impl.h"

#include <string.h>

/* A generated LD band: AR(1) correlations rho^|i-j| for |i-j| <= w (a
 * positive definite Toeplitz matrix cut to a band), both triangles; with
 * gen_band_gap set, the pairs |i-j| == 2 are not stored (columns whose rows
 * are not one consecutive run). */
static int gen_band_gap;
typedef struct gen_band {
  fm_band b;
  int64_t *colptr;
  int32_t *rowidx;
  double *v64;
  float *v32;
  double *dense; /* m x m, the band's values as stored (float-rounded for f32) */
} gen_band;

static void gen_band_make(gen_band *g, int64_t m, int64_t w, double rho, fm_band_dtype dt) {
  g->colptr = calloc((size_t)m + 1, sizeof *g->colptr);
  g->rowidx = calloc((size_t)m * (size_t)(2 * w + 1), sizeof *g->rowidx);
  g->v64 = calloc((size_t)m * (size_t)(2 * w + 1), sizeof *g->v64);
  g->v32 = calloc((size_t)m * (size_t)(2 * w + 1), sizeof *g->v32);
  g->dense = calloc((size_t)m * (size_t)m, sizeof *g->dense);
  int64_t k = 0;
  for (int64_t j = 0; j < m; j++) {
    for (int64_t i = j - w; i <= j + w; i++) {
      if (i < 0 || i >= m || (gen_band_gap && llabs(i - j) == 2)) continue;
      const double v = pow(rho, (double)llabs(i - j));
      g->rowidx[k] = (int32_t)i;
      g->v64[k] = v;
      g->v32[k] = (float)v;
      g->dense[j * m + i] = dt == FM_BAND_F32 ? (double)(float)v : v;
      k++;
    }
    g->colptr[j + 1] = k;
  }
  g->b = (fm_band){m, g->colptr, g->rowidx, dt == FM_BAND_F32 ? (void *)g->v32 : (void *)g->v64,
                   dt};
}

static void gen_band_free(gen_band *g) {
  free(g->colptr);
  free(g->rowidx);
  free(g->v64);
  free(g->v32);
  free(g->dense);
}

/* Summary statistics of m variants from true effects (a few nonzero) with
 * noise, on the scale of standardized genotypes with sd(y) = 1: beta_hat =
 * R b + e / sqrt(N); beta = beta_hat * s_j / sd_j for made-up allele sds. */
typedef struct gen_data {
  double *beta, *se, *n;
  fm_ldpred2_data d;
} gen_data;

static void gen_data_make(gen_data *g, const gen_band *band, double N, uint64_t seed) {
  const int64_t m = band->b.n;
  g->beta = calloc((size_t)m, sizeof *g->beta);
  g->se = calloc((size_t)m, sizeof *g->se);
  g->n = calloc((size_t)m, sizeof *g->n);
  double *bt = calloc((size_t)m, sizeof *bt);
  uint64_t s = seed;
  for (int64_t j = 0; j < m; j += 10) bt[j] = (fm_test_rng_unif(&s) - 0.5) * 0.1;
  for (int64_t j = 0; j < m; j++) {
    double bh = 0;
    for (int64_t i = 0; i < m; i++) bh += band->dense[j * m + i] * bt[i];
    const double u1 = fm_test_rng_unif(&s) + 1e-12, u2 = fm_test_rng_unif(&s);
    bh += sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2) / sqrt(N);
    const double sdj = 0.3 + 0.5 * fm_test_rng_unif(&s); /* sd of the genotype */
    /* marginal effect and se of a regression of y (sd 1) on G_j (sd sdj) */
    g->beta[j] = bh / sdj;
    g->se[j] = sqrt((1 - bh * bh) / N) / sdj;
    g->n[j] = N;
  }
  free(bt);
  g->d = (fm_ldpred2_data){m, g->beta, g->se, g->n};
}

static void gen_data_free(gen_data *g) {
  free(g->beta);
  free(g->se);
  free(g->n);
}

/* Solve A x = b in place (A m x m symmetric positive definite, destroyed). */
static int chol_solve(double *A, double *b, int64_t m) {
  for (int64_t j = 0; j < m; j++) {
    double s = A[j * m + j];
    for (int64_t k = 0; k < j; k++) s -= A[k * m + j] * A[k * m + j];
    if (!(s > 0)) return 0;
    A[j * m + j] = sqrt(s);
    for (int64_t i = j + 1; i < m; i++) {
      double t = A[j * m + i];
      for (int64_t k = 0; k < j; k++) t -= A[k * m + i] * A[k * m + j];
      A[j * m + i] = t / A[j * m + j]; /* L[i, j] stored at (i, j) col-major as A[j*m+i] */
    }
  }
  /* L y = b, then L' x = y (L[i, k] at A[k*m+i]) */
  for (int64_t i = 0; i < m; i++) {
    double t = b[i];
    for (int64_t k = 0; k < i; k++) t -= A[k * m + i] * b[k];
    b[i] = t / A[i * m + i];
  }
  for (int64_t i = m - 1; i >= 0; i--) {
    double t = b[i];
    for (int64_t k = i + 1; k < m; k++) t -= A[i * m + k] * b[k];
    b[i] = t / A[i * m + i];
  }
  return 1;
}

/* The inf solution by a dense Cholesky solve (allele scale). */
static void dense_inf(const gen_band *g, const gen_data *dd, double h2, double shrink,
                      double *x) {
  const int64_t m = g->b.n;
  double *A = malloc((size_t)(m * m) * sizeof *A);
  for (int64_t j = 0; j < m; j++)
    for (int64_t i = 0; i < m; i++)
      A[j * m + i] = (i == j ? 1 : shrink) * g->dense[j * m + i] +
                     (i == j ? (double)m / (h2 * dd->n[j]) : 0);
  double *sc = malloc((size_t)m * sizeof *sc);
  for (int64_t j = 0; j < m; j++) {
    sc[j] = sqrt(dd->n[j] * dd->se[j] * dd->se[j] + dd->beta[j] * dd->beta[j]);
    x[j] = dd->beta[j] / sc[j];
  }
  CHECK(chol_solve(A, x, m));
  for (int64_t j = 0; j < m; j++) x[j] *= sc[j];
  free(A);
  free(sc);
}

static double rel_l2(const double *a, const double *b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return sqrt(num / den);
}

static void inf_vs_dense(fm_band_dtype dt, double shrink, double rho) {
  gen_band g;
  gen_band_make(&g, 300, 12, rho, dt);
  gen_data dd;
  gen_data_make(&dd, &g, 2000, 7);
  double *x = malloc(300 * sizeof *x), *ref = malloc(300 * sizeof *ref);
  dense_inf(&g, &dd, 0.3, shrink, ref);
  fm_err err;
  fm_ldpred2_inf_info info;
  const fm_ldpred2_inf_opts o = {shrink, 0, 0};
  CHECK_OK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, &o, x, &info, NULL, &err), &err);
  CHECK(rel_l2(x, ref, 300) < 1e-10);
  CHECK(info.rel_residual < 1e-11 && info.iterations > 0);
  fm_ctl ctl = {0};
  ctl.threads = 3;
  double *x3 = malloc(300 * sizeof *x3);
  CHECK_OK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, &o, x3, NULL, &ctl, &err), &err);
  CHECK(memcmp(x, x3, 300 * sizeof *x) == 0);
  free(x);
  free(x3);
  free(ref);
  gen_data_free(&dd);
  gen_band_free(&g);
}

static void test_inf_f64(void) { inf_vs_dense(FM_BAND_F64, 1, 0.9); }
static void test_inf_f32(void) { inf_vs_dense(FM_BAND_F32, 1, 0.9); }
static void test_inf_shrink(void) { inf_vs_dense(FM_BAND_F64, 0.9, 0.9); }
static void test_inf_gapped(void) {
  gen_band_gap = 1;
  inf_vs_dense(FM_BAND_F64, 1, 0.5);
  inf_vs_dense(FM_BAND_F32, 0.95, 0.5);
  gen_band_gap = 0;
}

/* p = 1: grid's model is inf's, and the average of the conditional means
 * approaches its posterior mean, the inf solution. */
static void test_grid_p1_is_inf(void) {
  const int64_t m = 200;
  gen_band g;
  gen_band_make(&g, m, 8, 0.5, FM_BAND_F64);
  gen_data dd;
  gen_data_make(&dd, &g, 1e5, 11);
  double *ref = malloc((size_t)m * sizeof *ref), *bg = malloc((size_t)m * 2 * sizeof *bg);
  dense_inf(&g, &dd, 0.5, 1, ref);
  const double p[2] = {1, 1}, h2[2] = {0.5, 0.5};
  const int32_t sparse[2] = {0, 1};
  int32_t status[2];
  int64_t div[2];
  const fm_ldpred2_grid_out out = {bg, status, div};
  const fm_ldpred2_gibbs_opts o = {100, 1000, 1, 42};
  fm_err err;
  CHECK_OK(fm_stats_ldpred2_grid(&g.b, &dd.d, 2, p, h2, sparse, &o, &out, NULL, &err), &err);
  CHECK(status[0] == FM_LDPRED2_OK && div[0] == 0);
  const double e0 = rel_l2(bg, ref, m), e1 = rel_l2(bg + m, ref, m);
  if (!(e0 < 0.02 && e1 < 0.02)) fprintf(stderr, "p=1 grid vs inf: %g %g\n", e0, e1);
  CHECK(e0 < 0.02);
  CHECK(e1 < 0.02); /* sparse has no effect at p = 1 */
  free(ref);
  free(bg);
  gen_data_free(&dd);
  gen_band_free(&g);
}

/* Same seed: bit-identical for 1 and 3 threads; another seed differs. */
static void test_grid_reproducible(void) {
  const int64_t m = 150, K = 5;
  gen_band g;
  gen_band_make(&g, m, 6, 0.7, FM_BAND_F32);
  gen_data dd;
  gen_data_make(&dd, &g, 5000, 3);
  const double p[5] = {0.01, 0.1, 1, 0.03, 0.3}, h2[5] = {0.2, 0.3, 0.4, 0.2, 0.3};
  const int32_t sparse[5] = {0, 1, 0, 1, 0};
  double *b1 = malloc((size_t)(m * K) * sizeof *b1), *b3 = malloc((size_t)(m * K) * sizeof *b3);
  int32_t st1[5], st3[5];
  int64_t d1[5], d3[5];
  fm_ldpred2_gibbs_opts o = {20, 30, 1, 99};
  fm_err err;
  fm_ctl c1 = {0}, c3 = {0};
  c1.threads = 1;
  c3.threads = 3;
  const fm_ldpred2_grid_out o1 = {b1, st1, d1}, o3 = {b3, st3, d3};
  CHECK_OK(fm_stats_ldpred2_grid(&g.b, &dd.d, K, p, h2, sparse, &o, &o1, &c1, &err), &err);
  CHECK_OK(fm_stats_ldpred2_grid(&g.b, &dd.d, K, p, h2, sparse, &o, &o3, &c3, &err), &err);
  CHECK(memcmp(b1, b3, (size_t)(m * K) * sizeof *b1) == 0);
  /* set k is the same model whatever the others: run set 3 alone as set 0
   * would differ (another stream), but set 0 alone equals set 0 of five */
  CHECK_OK(fm_stats_ldpred2_grid(&g.b, &dd.d, 1, p, h2, sparse, &o, &o3, &c3, &err), &err);
  CHECK(memcmp(b1, b3, (size_t)m * sizeof *b1) == 0);
  o.seed = 100;
  CHECK_OK(fm_stats_ldpred2_grid(&g.b, &dd.d, K, p, h2, sparse, &o, &o3, &c1, &err), &err);
  CHECK(memcmp(b1, b3, (size_t)(m * K) * sizeof *b1) != 0);
  int sparse_zeros = 0;
  for (int64_t j = 0; j < m; j++) sparse_zeros += b1[m + j] == 0;
  CHECK(sparse_zeros > 0); /* the sparse set has exact zeros */
  free(b1);
  free(b3);
  gen_data_free(&dd);
  gen_band_free(&g);
}

typedef struct auto_bufs {
  double *beta, *postp, *corr, *pp, *ph, *pa, pe[4], he[4], ae[4];
  int32_t st[4];
  int64_t dv[4];
  fm_ldpred2_auto_out out;
} auto_bufs;

static void auto_bufs_make(auto_bufs *a, int64_t m, int64_t total, int64_t K) {
  a->beta = malloc((size_t)(m * K) * sizeof(double));
  a->postp = malloc((size_t)(m * K) * sizeof(double));
  a->corr = malloc((size_t)(m * K) * sizeof(double));
  a->pp = malloc((size_t)(total * K) * sizeof(double));
  a->ph = malloc((size_t)(total * K) * sizeof(double));
  a->pa = malloc((size_t)(total * K) * sizeof(double));
  a->out = (fm_ldpred2_auto_out){a->beta, a->postp, a->corr, a->pp, a->ph, a->pa,
                                 a->pe,   a->he,    a->ae,   a->st, a->dv};
}

static void auto_bufs_free(auto_bufs *a) {
  free(a->beta);
  free(a->postp);
  free(a->corr);
  free(a->pp);
  free(a->ph);
  free(a->pa);
}

/* auto on data with 10% causal variants and a known h2: estimates in range,
 * reproducible, thread-count independent. */
static void test_auto(void) {
  const int64_t m = 400, K = 4;
  gen_band g;
  gen_band_make(&g, m, 10, 0.6, FM_BAND_F64);
  gen_data dd;
  gen_data_make(&dd, &g, 20000, 5);
  const double p_init[4] = {0.001, 0.01, 0.1, 0.5};
  const fm_ldpred2_auto_opts ao = {K, p_init, 0.1, 0, 1, {1e-5, 1}, {-1.5, 0.5}};
  const fm_ldpred2_gibbs_opts o = {200, 200, 0.95, 1};
  auto_bufs a1, a3;
  auto_bufs_make(&a1, m, 400, K);
  auto_bufs_make(&a3, m, 400, K);
  fm_err err;
  fm_ctl c1 = {0}, c3 = {0};
  c1.threads = 1;
  c3.threads = 3;
  CHECK_OK(fm_stats_ldpred2_auto(&g.b, &dd.d, &ao, &o, &a1.out, &c1, &err), &err);
  CHECK_OK(fm_stats_ldpred2_auto(&g.b, &dd.d, &ao, &o, &a3.out, &c3, &err), &err);
  CHECK(memcmp(a1.beta, a3.beta, (size_t)(m * K) * sizeof(double)) == 0);
  CHECK(memcmp(a1.pp, a3.pp, (size_t)(400 * K) * sizeof(double)) == 0);
  /* true h2: var of R b over standardized genotypes ~ sum b_i b_j R_ij */
  for (int64_t k = 0; k < K; k++) {
    CHECK(a1.st[k] == FM_LDPRED2_OK);
    CHECK(a1.pe[k] > 0.01 && a1.pe[k] < 0.5);
    CHECK(a1.he[k] > 0.005 && a1.he[k] < 0.2);
    CHECK(a1.ae[k] >= -1.5 && a1.ae[k] <= 0.5);
    for (int64_t j = 0; j < m; j++) CHECK(isfinite(a1.beta[k * m + j]));
  }
  /* without MLE alpha is NaN and sigma2 = h2 / (m p) */
  fm_ldpred2_auto_opts ao2 = ao;
  ao2.use_mle = 0;
  ao2.allow_jump_sign = 1;
  CHECK_OK(fm_stats_ldpred2_auto(&g.b, &dd.d, &ao2, &o, &a3.out, &c3, &err), &err);
  CHECK(isnan(a3.ae[0]) && isfinite(a3.pe[0]) && isfinite(a3.he[0]));
  auto_bufs_free(&a1);
  auto_bufs_free(&a3);
  gen_data_free(&dd);
  gen_band_free(&g);
}

/* An indefinite "LD" matrix (r12 = r23 = 0.99, r13 = -0.99) makes the
 * sampler explode: reported with its sweep, effects NaN; inf reports the
 * matrix not positive definite with a small diagonal. */
static void test_divergence(void) {
  const int64_t colptr[4] = {0, 3, 6, 9};
  const int32_t rowidx[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  const double v[9] = {1, 0.99, -0.99, 0.99, 1, 0.99, -0.99, 0.99, 1};
  const fm_band b = {3, colptr, rowidx, v, FM_BAND_F64};
  const double beta[3] = {0.5, -0.4, 0.5}, se[3] = {1e-3, 1e-3, 1e-3}, n[3] = {1e6, 1e6, 1e6};
  const fm_ldpred2_data d = {3, beta, se, n};
  const double p[2] = {1, 1}, h2[2] = {1, 1};
  const int32_t sparse[2] = {0, 0};
  double bg[6];
  int32_t st[2];
  int64_t dv[2];
  const fm_ldpred2_grid_out out = {bg, st, dv};
  const fm_ldpred2_gibbs_opts o = {10, 10, 1, 5};
  fm_err err;
  CHECK_OK(fm_stats_ldpred2_grid(&b, &d, 2, p, h2, sparse, &o, &out, NULL, &err), &err);
  CHECK(st[0] != FM_LDPRED2_OK && dv[0] >= 1 && dv[0] <= 20);
  CHECK(isnan(bg[0]) && isnan(bg[2]));
  const double p_init[2] = {1, 0.5};
  const fm_ldpred2_auto_opts ao = {2, p_init, 1, 1, 1, {1e-5, 1}, {-1.5, 0.5}};
  auto_bufs a;
  auto_bufs_make(&a, 3, 20, 2);
  CHECK_OK(fm_stats_ldpred2_auto(&b, &d, &ao, &o, &a.out, NULL, &err), &err);
  CHECK(a.st[0] != FM_LDPRED2_OK && a.dv[0] >= 1);
  CHECK(isnan(a.beta[0]) && isnan(a.pe[0]) && isnan(a.pp[19]));
  if (a.dv[0] > 1) CHECK(isfinite(a.pp[0]));
  auto_bufs_free(&a);
  double x[3];
  CHECK(fm_stats_ldpred2_inf(&b, &d, 1, NULL, x, NULL, NULL, &err) == FM_EDEGENERATE);
  CHECK(strstr(err.msg, "shrink") != NULL);
}

static int cancel_now(void *ud) {
  (void)ud;
  return 1;
}

static void test_errors(void) {
  gen_band g;
  gen_band_make(&g, 20, 2, 0.5, FM_BAND_F64);
  gen_data dd;
  gen_data_make(&dd, &g, 1000, 1);
  double x[20];
  fm_err err;
  dd.se[3] = 0;
  CHECK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, NULL, x, NULL, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "beta_se[4]") != NULL);
  dd.se[3] = 0.01;
  dd.n[5] = NAN;
  CHECK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, NULL, x, NULL, NULL, &err) == FM_EARG);
  dd.n[5] = 1000;
  CHECK(fm_stats_ldpred2_inf(&g.b, &dd.d, -1, NULL, x, NULL, NULL, &err) == FM_EARG);
  const fm_ldpred2_inf_opts bad = {1.5, 0, 0};
  CHECK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, &bad, x, NULL, NULL, &err) == FM_EARG);
  g.v64[0] = 0.5; /* diagonal of column 1 */
  CHECK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, NULL, x, NULL, NULL, &err) == FM_EFORMAT);
  g.v64[0] = 1;
  fm_ldpred2_data short_d = dd.d;
  short_d.n = 19;
  CHECK(fm_stats_ldpred2_inf(&g.b, &short_d, 0.3, NULL, x, NULL, NULL, &err) == FM_EARG);
  fm_ctl ctl = {0};
  ctl.cancel = cancel_now;
  CHECK(fm_stats_ldpred2_inf(&g.b, &dd.d, 0.3, NULL, x, NULL, &ctl, &err) == FM_ECANCELLED);
  const double p[1] = {0.1}, h2[1] = {0.3};
  const int32_t sp[1] = {0};
  double bg[20];
  int32_t st[1];
  int64_t dv[1];
  const fm_ldpred2_grid_out out = {bg, st, dv};
  fm_ldpred2_gibbs_opts o = {1000, 1000, 1, 1};
  CHECK(fm_stats_ldpred2_grid(&g.b, &dd.d, 1, p, h2, sp, &o, &out, &ctl, &err) == FM_ECANCELLED);
  ctl.threads = 2;
  const double p2[2] = {1, 1}, h22[2] = {0.01, 0.01}; /* no divergence: runs until cancelled */
  const int32_t sp2[2] = {0, 0};
  double bg2[40];
  int32_t st2[2];
  int64_t dv2[2];
  const fm_ldpred2_grid_out out2 = {bg2, st2, dv2};
  o.burn_in = 2000000; /* long enough for the 50 ms poll */
  const fm_status stc = fm_stats_ldpred2_grid(&g.b, &dd.d, 2, p2, h22, sp2, &o, &out2, &ctl, &err);
  if (stc != FM_ECANCELLED)
    fprintf(stderr, "threaded cancel: %s %s\n", fm_status_name(stc), err.msg);
  CHECK(stc == FM_ECANCELLED);
  const double pbad[1] = {0};
  o.burn_in = 1;
  CHECK(fm_stats_ldpred2_grid(&g.b, &dd.d, 1, pbad, h2, sp, &o, &out, NULL, &err) == FM_EARG);
  gen_data_free(&dd);
  gen_band_free(&g);
}

/* Beta draws (p's update) have the right mean and variance; the mean LD
 * score is the stored squares over m. */
static void test_draws_mean_ld(void) {
  fm_rng r;
  fm_rng_seed(&r, 17);
  const double a = 1.5, b = 40;
  double s1 = 0, s2 = 0;
  for (int i = 0; i < 200000; i++) {
    const double x = ldp_rbeta(&r, a, b);
    s1 += x;
    s2 += x * x;
  }
  const double mean = s1 / 200000, var = s2 / 200000 - mean * mean;
  CHECK_CLOSE(mean, a / (a + b), 0.01);
  CHECK_CLOSE(var, a * b / ((a + b) * (a + b) * (a + b + 1)), 0.03);
  gen_band g;
  gen_band_make(&g, 50, 2, 0.5, FM_BAND_F64);
  double s = 0;
  for (int64_t k = 0; k < g.colptr[50]; k++) s += g.v64[k] * g.v64[k];
  CHECK_CLOSE(fm_stats_ldpred2_mean_ld(&g.b), s / 50, 1e-14);
  gen_band_free(&g);
}

int main(void) {
  FM_RUN(test_inf_f64);
  FM_RUN(test_inf_f32);
  FM_RUN(test_inf_shrink);
  FM_RUN(test_inf_gapped);
  FM_RUN(test_grid_p1_is_inf);
  FM_RUN(test_grid_reproducible);
  FM_RUN(test_auto);
  FM_RUN(test_divergence);
  FM_RUN(test_errors);
  FM_RUN(test_draws_mean_ld);
  FM_TEST_END();
}
