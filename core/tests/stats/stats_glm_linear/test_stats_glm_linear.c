/* test_stats_glm_linear.c: fm_stats_glm_linear against a dense least-squares
 * fit of each (variant, phenotype) done here independently (normal
 * equations of [C x] over the rows used, solved in long double by
 * Gauss-Jordan); block-size, thread and backend invariance; error codes and
 * errors.
 *
 * Tolerances: the kernel's quantities come from an orthonormal basis and
 * differences of sums over at most a few hundred rows of O(1) values; the
 * oracle's from a long-double solve of a system with condition below 1e4
 * (random covariates). Their relative difference is a few hundred ulp,
 * so 1e-9 has a margin of 1e3 or more. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_backend.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_fused.h"
#include "fm/fm_rng.h"
#include "fm/fm_stats_glm.h"
#include "fm_test.h"

enum { N = 211, P = 23, Q = 4, K = 3 };

typedef struct data {
  double x[N * P];  /* NaN: a missing call */
  int32_t g[N * P]; /* the same as counts (INT32_MIN missing) */
  double covar[N * Q];
  double pheno[N * K];
  double scale[N];
  unsigned char haploid[N];
} data;

static void make(data *d, uint64_t seed) {
  fm_rng r;
  fm_rng_seed(&r, seed);
  for (int64_t j = 0; j < P; j++) {
    const double maf = 0.05 + 0.45 * fm_rng_unif(&r);
    for (int64_t i = 0; i < N; i++) {
      int32_t v = (fm_rng_unif(&r) < maf) + (fm_rng_unif(&r) < maf);
      if (j % 4 != 0 && fm_rng_unif(&r) < 0.05) v = INT32_MIN;
      if (j == 5) v = 1;                       /* constant */
      if (j == 6) v = i == 3 ? 2 : (i == 9 ? INT32_MIN : 0); /* one carrier */
      d->g[i + j * N] = v;
      d->x[i + j * N] = v == INT32_MIN ? NAN : v;
    }
  }
  for (int64_t i = 0; i < N; i++) {
    d->covar[i] = 1.0;
    for (int64_t l = 1; l < Q; l++) d->covar[i + l * N] = fm_rng_unif(&r) * l - 0.3;
    for (int64_t c = 0; c < K; c++) {
      double y = 0.5 * (d->x[i + 2 * N] == d->x[i + 2 * N] ? d->x[i + 2 * N] : 0) +
                 d->covar[i + N] + fm_rng_unif(&r);
      if (c > 0 && i % (7 + c) == 0) y = NAN; /* phenotypes 2 and 3: their own samples */
      d->pheno[i + c * N] = y;
    }
    d->scale[i] = i % 2 ? 0.5 : 1.0;
    d->haploid[i] = i % 2;
  }
}

/* Gauss-Jordan solve of the m x m system a z = b in place (b gets z);
 * returns 0 when singular. a is destroyed. */
static int solve(long double *a, long double *b, int m, long double *inv_diag_last) {
  long double *inv = calloc((size_t)(m * m), sizeof *inv);
  for (int i = 0; i < m; i++) inv[i + i * m] = 1;
  for (int c = 0; c < m; c++) {
    int piv = c;
    for (int r = c + 1; r < m; r++)
      if (fabsl(a[r + c * m]) > fabsl(a[piv + c * m])) piv = r;
    if (fabsl(a[piv + c * m]) < 1e-14L) {
      free(inv);
      return 0;
    }
    for (int l = 0; l < m; l++) {
      long double t = a[c + l * m];
      a[c + l * m] = a[piv + l * m];
      a[piv + l * m] = t;
      t = inv[c + l * m];
      inv[c + l * m] = inv[piv + l * m];
      inv[piv + l * m] = t;
    }
    long double t = b[c];
    b[c] = b[piv];
    b[piv] = t;
    const long double dv = a[c + c * m];
    for (int l = 0; l < m; l++) {
      a[c + l * m] /= dv;
      inv[c + l * m] /= dv;
    }
    b[c] /= dv;
    for (int r = 0; r < m; r++) {
      if (r == c) continue;
      const long double f = a[r + c * m];
      for (int l = 0; l < m; l++) {
        a[r + l * m] -= f * a[c + l * m];
        inv[r + l * m] -= f * inv[c + l * m];
      }
      b[r] -= f * b[c];
    }
  }
  *inv_diag_last = inv[(m - 1) + (m - 1) * m];
  free(inv);
  return 1;
}

/* The oracle fit of phenotype c on covariates + x (x[i] NaN: row left out;
 * fill: the value a missing call takes instead, NaN for none). */
static void oracle(const data *d, const double *x, int use_scale, double fill, int64_t c,
                   double *beta, double *se, int64_t *obs) {
  const int m = Q + 1;
  long double a[(Q + 1) * (Q + 1)] = {0}, b[Q + 1] = {0}, yy = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < N; i++) {
    const double y = d->pheno[i + c * N];
    double xi = x[i];
    if (isnan(y)) continue;
    if (isnan(xi)) {
      if (isnan(fill)) continue;
      xi = fill;
    }
    if (use_scale) xi *= d->scale[i];
    long double row[Q + 1];
    for (int l = 0; l < Q; l++) row[l] = d->covar[i + l * N];
    row[Q] = xi;
    for (int r = 0; r < m; r++) {
      b[r] += row[r] * y;
      for (int l = 0; l < m; l++) a[r + l * m] += row[r] * row[l];
    }
    yy += (long double)y * y;
    n++;
  }
  long double a2[(Q + 1) * (Q + 1)], z[Q + 1], inv_last;
  memcpy(a2, a, sizeof a);
  memcpy(z, b, sizeof b);
  *obs = n;
  if (!solve(a2, z, m, &inv_last)) {
    *beta = *se = NAN;
    return;
  }
  long double fit = 0;
  for (int r = 0; r < m; r++) fit += z[r] * b[r];
  const long double rss = yy - fit, s2 = rss / (long double)(n - m);
  *beta = (double)z[Q];
  *se = (double)sqrtl(s2 * inv_last);
}

typedef struct res {
  double beta[P * K], se[P * K], stat[P * K];
  int64_t obs[P * K];
  int32_t code[P * K];
  double allele_ct[P * 2];
} res;

static fm_glm_out out_of(res *r) {
  return (fm_glm_out){r->beta, r->se, r->stat, r->obs, r->code, NULL, r->allele_ct};
}

/* The counted allele's count and the alleles over all observed calls,
 * haploid rows (with use_scale) counting x / 2 of one allele. */
static void check_freq(const data *d, const res *r, int use_scale) {
  for (int64_t j = 0; j < P; j++) {
    double a = 0, pl = 0;
    for (int64_t i = 0; i < N; i++) {
      const double x = d->x[i + j * N];
      if (isnan(x)) continue;
      const int hap = use_scale && d->haploid[i];
      a += hap ? x / 2 : x;
      pl += hap ? 1 : 2;
    }
    CHECK(r->allele_ct[j] == a && r->allele_ct[j + P] == pl); /* halves and integers: exact */
  }
}

static void check_oracle(const data *d, const res *r, int use_scale, int impute) {
  for (int64_t c = 0; c < K; c++)
    for (int64_t j = 0; j < P; j++) {
      const size_t at = (size_t)(j + c * P);
      const double *x = d->x + j * N;
      double fill = NAN;
      if (impute) {
        double s = 0;
        int64_t m = 0;
        for (int64_t i = 0; i < N; i++)
          if (!isnan(x[i])) {
            s += x[i];
            m++;
          }
        fill = s / (double)m;
      }
      double beta, se;
      int64_t obs;
      oracle(d, x, use_scale, fill, c, &beta, &se, &obs);
      CHECK(r->obs[at] == obs);
      if (j == 5) {
        CHECK(r->code[at] == FM_GLM_CONST_OMITTED_ALLELE);
        CHECK(isnan(r->beta[at]) && isnan(r->se[at]) && isnan(r->stat[at]));
        continue;
      }
      CHECK(r->code[at] == FM_GLM_OK);
      CHECK_CLOSE(r->beta[at], beta, 1e-9);
      CHECK_CLOSE(r->se[at], se, 1e-9);
      CHECK_CLOSE(r->stat[at], beta / se, 1e-9);
    }
}

static fm_glm_design design_of(const data *d, int use_scale) {
  return (fm_glm_design){N, Q, d->covar, K, d->pheno, use_scale ? d->scale : NULL,
                         use_scale ? d->haploid : NULL};
}

static void test_dense_oracle(void) {
  data *d = malloc(sizeof *d);
  res *r = malloc(sizeof *r);
  make(d, 11);
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, d->x, N, P, N * 8, &err), &err);
  for (int use_scale = 0; use_scale < 2; use_scale++)
    for (int impute = 0; impute < 2; impute++) {
      const fm_glm_design des = design_of(d, use_scale);
      const fm_glm_opts o = {.impute_mean = impute};
      const fm_glm_out out = out_of(r);
      CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err), &err);
      check_oracle(d, r, use_scale, impute);
      check_freq(d, r, use_scale);
    }
  free(d);
  free(r);
}

/* BED2 storage through the fused backend and through the reference path;
 * every panel budget and thread count gives the same bits. */
static void test_bed2_invariance(void) {
  data *d = malloc(sizeof *d);
  res *r = malloc(sizeof *r), *r2 = malloc(sizeof *r2);
  make(d, 12);
  const int64_t cb = fm_codec_bed2_col_bytes(N);
  uint8_t *bytes = malloc((size_t)(cb * P));
  fm_err err = {0};
  CHECK_OK(fm_codec_bed2_encode(d->g, N, P, N, bytes, &err), &err);
  fm_mat m;
  CHECK_OK(fm_mat_init(&m, FM_CODEC_BED2, bytes, N, P, cb, &err), &err);
  const fm_glm_design des = design_of(d, 1);
  const fm_glm_opts o = {0};
  fm_glm_out out = out_of(r);
  const fm_ctl ref = {.backend = "reference"};
  CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &out, &ref, &err), &err);
  check_oracle(d, r, 1, 0);
  CHECK_OK(fm_backend_register(FM_FUSED_BACKEND_NAME, fm_fused_backend, NULL, &err), &err);
  out = out_of(r);
  const fm_ctl fused = {.backend = FM_FUSED_BACKEND_NAME, .threads = 1};
  CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &out, &fused, &err), &err);
  check_oracle(d, r, 1, 0);
  const size_t budgets[3] = {8, 8 * N * 7, 0};
  for (int b = 0; b < 3; b++)
    for (int t = 1; t <= 2; t++) {
      const fm_ctl ctl = {.backend = FM_FUSED_BACKEND_NAME, .threads = t, .panel_bytes = budgets[b]};
      fm_glm_out o2 = out_of(r2);
      CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &o2, &ctl, &err), &err);
      CHECK(memcmp(r->beta, r2->beta, sizeof r->beta) == 0);
      CHECK(memcmp(r->se, r2->se, sizeof r->se) == 0);
      CHECK(memcmp(r->obs, r2->obs, sizeof r->obs) == 0);
    }
  /* the codes' moments (no genotype scale) against the decoding path (a
   * scale of ones): the same sums and missing rows, so the same bits */
  {
    double ones[N];
    for (int64_t i = 0; i < N; i++) ones[i] = 1.0;
    fm_glm_design dec = design_of(d, 0);
    const fm_glm_design codes = dec;
    dec.geno_scale = ones;
    fm_glm_out o2 = out_of(r2);
    out = out_of(r);
    CHECK_OK(fm_stats_glm_linear(&m, &codes, &o, &out, &fused, &err), &err);
    CHECK_OK(fm_stats_glm_linear(&m, &dec, &o, &o2, &fused, &err), &err);
    CHECK(memcmp(r->beta, r2->beta, sizeof r->beta) == 0);
    CHECK(memcmp(r->se, r2->se, sizeof r->se) == 0);
    CHECK(memcmp(r->obs, r2->obs, sizeof r->obs) == 0);
    CHECK(memcmp(r->code, r2->code, sizeof r->code) == 0);
    CHECK(memcmp(r->allele_ct, r2->allele_ct, sizeof r->allele_ct) == 0);
    check_oracle(d, r, 0, 0);
    const fm_glm_opts imp = {.impute_mean = 1};
    out = out_of(r);
    CHECK_OK(fm_stats_glm_linear(&m, &codes, &imp, &out, &fused, &err), &err);
    check_oracle(d, r, 0, 1);
    out = out_of(r);
    CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &out, &fused, &err), &err); /* back to the scaled run */
  }
  /* a column selection: the selected columns' rows of the full run */
  int64_t idx[3] = {7, 2, 7};
  fm_mat sel = m;
  sel.col_index = idx;
  sel.n_cols = 3;
  double beta[3 * K], se[3 * K], stat[3 * K];
  int64_t obs[3 * K];
  int32_t code[3 * K];
  const fm_glm_out o3 = {beta, se, stat, obs, code, NULL, NULL};
  CHECK_OK(fm_stats_glm_linear(&sel, &des, &o, &o3, &fused, &err), &err);
  for (int64_t c = 0; c < K; c++)
    for (int s = 0; s < 3; s++) CHECK(beta[s + 3 * c] == r->beta[idx[s] + P * c]);
  CHECK(fm_backend_unregister(FM_FUSED_BACKEND_NAME));
  free(bytes);
  free(d);
  free(r);
  free(r2);
}

/* One phenotype alone gives the rows it has among several. */
static void test_one_vs_many(void) {
  data *d = malloc(sizeof *d);
  res *r = malloc(sizeof *r);
  make(d, 13);
  fm_mat m;
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, d->x, N, P, N * 8, &err), &err);
  const fm_glm_design des = design_of(d, 0);
  const fm_glm_opts o = {0};
  const fm_glm_out out = out_of(r);
  CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err), &err);
  for (int64_t c = 0; c < K; c++) {
    const fm_glm_design one = {N, Q, d->covar, 1, d->pheno + c * N, NULL, NULL};
    double beta[P], se[P], stat[P];
    int64_t obs[P];
    int32_t code[P];
    const fm_glm_out o1 = {beta, se, stat, obs, code, NULL, NULL};
    CHECK_OK(fm_stats_glm_linear(&m, &one, &o, &o1, NULL, &err), &err);
    CHECK(memcmp(beta, r->beta + c * P, sizeof beta) == 0);
    CHECK(memcmp(se, r->se + c * P, sizeof se) == 0);
  }
  free(d);
  free(r);
}

static int cancel_now(void *ud) {
  (void)ud;
  return 1;
}

static void test_codes_and_errors(void) {
  data *d = malloc(sizeof *d);
  res *r = malloc(sizeof *r);
  make(d, 14);
  fm_err err = {0};
  fm_mat m;
  /* column 0 = covariate 1: rank deficient; column 1 on 4 rows only */
  for (int64_t i = 0; i < N; i++) {
    d->x[i] = d->covar[i + N];
    d->x[i + N] = i < 4 ? (double)(i % 2) : NAN;
  }
  CHECK_OK(fm_mat_init(&m, FM_CODEC_F64, d->x, N, P, N * 8, &err), &err);
  fm_glm_design des = design_of(d, 0);
  const fm_glm_opts o = {0};
  fm_glm_out out = out_of(r);
  CHECK_OK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err), &err);
  CHECK(r->code[0] == FM_GLM_RANK_DEFICIENT && isnan(r->beta[0]));
  CHECK(r->code[1] == FM_GLM_SAMPLE_CT_LE_PREDICTOR && r->obs[1] == 4);
  CHECK(strcmp(fm_glm_code_name(FM_GLM_SAMPLE_CT_LE_PREDICTOR), "SAMPLE_CT<=PREDICTOR_CT") == 0);
  CHECK(strcmp(fm_glm_code_name(FM_GLM_OK), ".") == 0);
  /* cancellation */
  const fm_ctl stop = {.cancel = cancel_now};
  CHECK(fm_stats_glm_linear(&m, &des, &o, &out, &stop, &err) == FM_ECANCELLED);
  /* an infinite genotype */
  d->x[5 + 3 * N] = INFINITY;
  CHECK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "variant 4") && strstr(err.msg, "row 6"));
  d->x[5 + 3 * N] = 1;
  /* a covariate collinear with the intercept */
  double saved = d->covar[7 + 2 * N];
  for (int64_t i = 0; i < N; i++) d->covar[i + 2 * N] = 3.0;
  CHECK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "covariate column 3"));
  d->covar[7 + 2 * N] = saved;
  make(d, 14);
  /* a phenotype without samples; a non-finite covariate on a used row */
  for (int64_t i = 0; i < N; i++) d->pheno[i + 2 * N] = NAN;
  CHECK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "phenotype 3 has no sample"));
  make(d, 14);
  d->covar[10 + N] = NAN;
  CHECK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "covariate 2") && strstr(err.msg, "row 11"));
  des.n_rows = N - 1;
  CHECK(fm_stats_glm_linear(&m, &des, &o, &out, NULL, &err) == FM_EARG);
  free(d);
  free(r);
}

int main(void) {
  FM_RUN(test_dense_oracle);
  FM_RUN(test_bed2_invariance);
  FM_RUN(test_one_vs_many);
  FM_RUN(test_codes_and_errors);
  FM_TEST_END();
}
