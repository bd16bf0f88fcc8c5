/* Tests for glm_logit_fit / glm_logit_null (stats_glm_logit.c), on
 * generated data. Oracle: the estimating equations themselves. The fit
 * reports only b, so the test profiles out the covariates a at the reported
 * b (its own Newton iteration, I_aa solved by Gauss-Jordan) and checks the
 * genotype's component of the score, X'(y - p) plain or
 * X'(y - p + h(1/2 - p)) Firth, and se = sqrt([(X'WX)^-1]_bb), all computed
 * here independently. Tolerances: the fit stops when max |step| < tol
 * (1e-10), so the score it leaves is below ||X'WX|| tol <= tol sum x^2 / 4;
 * se moves by a relative O(tol) over such a step.
 * The row kernels run at each instruction-set level the CPU has (fm_cpu.h;
 * the test hook fm_cpu_cap forces the portable one): each level must meet
 * the score equations, and the levels must agree on codes and Firth flags
 * and, within what the stopping rule leaves (a few tol), on the estimates;
 * FMA and the vector exp round differently, so not bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_cpu.h"
#include "fm_test.h"
#include "stats/stats_glm_impl.h"

#define TOL 1e-10
#define QMAX 17
#define KMAX (QMAX + 1)

static uint64_t rng = 20240611;

/* Inverse of the k x k matrix a (row-major) by Gauss-Jordan with partial
 * pivoting; 0 on success. */
static int gj_inverse(int k, const double *a, double *inv) {
  double m[KMAX][2 * KMAX];
  for (int i = 0; i < k; i++)
    for (int j = 0; j < 2 * k; j++) m[i][j] = j < k ? a[i * k + j] : (j - k == i);
  for (int c = 0; c < k; c++) {
    int piv = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(m[r][c]) > fabs(m[piv][c])) piv = r;
    if (m[piv][c] == 0) return -1;
    for (int j = 0; j < 2 * k; j++) {
      double t = m[c][j];
      m[c][j] = m[piv][j];
      m[piv][j] = t;
    }
    double d = m[c][c];
    for (int j = 0; j < 2 * k; j++) m[c][j] /= d;
    for (int r = 0; r < k; r++)
      if (r != c) {
        double f = m[r][c];
        for (int j = 0; j < 2 * k; j++) m[r][j] -= f * m[c][j];
      }
  }
  for (int i = 0; i < k; i++)
    for (int j = 0; j < k; j++) inv[i * k + j] = m[i][j + k];
  return 0;
}

/* Row i of X = [C x]. */
static double xv(const double *c, const double *x, int64_t n, int q, int64_t i, int j) {
  return j < q ? c[j * n + i] : x[i];
}

/* Score (plain or Firth) and inverse information at beta = (a, b). */
static void score_at(int64_t n, int q, const double *c, const double *y, const double *x,
                     const double *beta, int firth, double *u, double *inv) {
  int k = q + 1;
  double info[KMAX * KMAX] = {0};
  for (int64_t i = 0; i < n; i++) {
    double eta = 0;
    for (int j = 0; j < k; j++) eta += beta[j] * xv(c, x, n, q, i, j);
    double p = 1 / (1 + exp(-eta)), w = p * (1 - p);
    for (int a = 0; a < k; a++)
      for (int b = 0; b < k; b++) info[a * k + b] += w * xv(c, x, n, q, i, a) * xv(c, x, n, q, i, b);
  }
  CHECK(gj_inverse(k, info, inv) == 0);
  for (int j = 0; j < k; j++) u[j] = 0;
  for (int64_t i = 0; i < n; i++) {
    double eta = 0, xi[KMAX];
    for (int j = 0; j < k; j++) xi[j] = xv(c, x, n, q, i, j), eta += beta[j] * xi[j];
    double p = 1 / (1 + exp(-eta)), w = p * (1 - p), r = y[i] - p;
    if (firth) {
      double hq = 0;
      for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) hq += xi[a] * inv[a * k + b] * xi[b];
      r += w * hq * (0.5 - p);
    }
    for (int j = 0; j < k; j++) u[j] += xi[j] * r;
  }
}

/* At the reported b: a solving the covariates' score equations, then the
 * genotype's score *ub and sqrt([I^-1]_bb) *se. */
static void profile(int64_t n, int q, const double *c, const double *y, const double *x, double b,
                    int firth, double *ub, double *se) {
  int k = q + 1;
  double beta[KMAX] = {0}, u[KMAX], inv[KMAX * KMAX];
  beta[q] = b;
  for (int it = 0; it < 200; it++) {
    score_at(n, q, c, y, x, beta, firth, u, inv);
    /* Newton on a alone: (I_aa)^-1 = the Schur complement form of inv */
    double iaa[KMAX * KMAX];
    for (int i = 0; i < q; i++)
      for (int j = 0; j < q; j++)
        iaa[i * q + j] = inv[i * k + j] - inv[i * k + q] * inv[q * k + j] / inv[q * k + q];
    double smax = 0;
    for (int i = 0; i < q; i++) {
      double s = 0;
      for (int j = 0; j < q; j++) s += iaa[i * q + j] * u[j];
      beta[i] += s;
      smax = fmax(smax, fabs(s));
    }
    if (smax < 1e-13) break;
  }
  score_at(n, q, c, y, x, beta, firth, u, inv);
  *ub = u[q];
  *se = sqrt(inv[q * k + q]);
}

/* n rows: intercept, q - 1 normal covariates, genotype 0/1/2 (frequency f),
 * y from a logistic model with genotype effect b_true. */
static void gen(int64_t n, int q, double f, double b_true, double *c, double *y, double *x) {
  for (int64_t i = 0; i < n; i++) {
    c[i] = 1;
    double eta = -0.5;
    for (int j = 1; j < q; j++) {
      double z = fm_test_rng_unif(&rng) + fm_test_rng_unif(&rng) + fm_test_rng_unif(&rng) - 1.5;
      c[j * n + i] = z;
      eta += 0.7 * z;
    }
    x[i] = (fm_test_rng_unif(&rng) < f) + (fm_test_rng_unif(&rng) < f);
    eta += b_true * x[i];
    y[i] = fm_test_rng_unif(&rng) < 1 / (1 + exp(-eta));
  }
}

static double sumsq(const double *x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    if (!isnan(x[i])) s += x[i] * x[i];
  return s;
}

/* Fit with the null start; fast: with the shared parts of the fixed
 * covariate information fit (glm_logit_pre), as the GWAS driver does. */
static void fit_with(int64_t n, int q, const double *c, const double *y, const double *x,
                     int firth, int fast, glm_fit *out) {
  const int64_t qp = (q + 3) / 4 * 4;
  double *ws = malloc(glm_logit_ws_doubles(n, q) * sizeof *ws), start[QMAX];
  double *mem = malloc(((size_t)n * (size_t)qp + 2 * (size_t)(q * q) +
                       glm_logit_pre_doubles(n, q)) * sizeof *mem);
  CHECK(glm_logit_null(n, q, c, y, 25, TOL, start, ws) == 0);
  double *cr = mem, *cc = cr + n * qp, *lcc = cc + q * q;
  glm_logit_pre pre = {.n = n, .q = q, .qp = qp, .cr = cr, .cc = cc, .lcc = lcc};
  glm_logit_pre_place(&pre, lcc + q * q);
  CHECK(glm_logit_pre_rows(n, q, c, cr, cc, lcc) == 0);
  CHECK(glm_logit_pre_start(&pre, y, start, ws) == 0);
  glm_logit_fit(n, q, c, y, x, start, fast ? &pre : NULL, firth, 25, TOL, ws, out);
  free(ws);
  free(mem);
}

static void fit(int64_t n, int q, const double *c, const double *y, const double *x, int firth,
                glm_fit *out) {
  fit_with(n, q, c, y, x, firth, 1, out);
}

static void test_code_names(void) {
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_OK), "."));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_CONST_OMITTED_ALLELE), "CONST_OMITTED_ALLELE"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_SAMPLE_CT_LE_PREDICTOR), "SAMPLE_CT<=PREDICTOR_CT"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_RANK_DEFICIENT), "RANK_DEFICIENT"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_SEPARATION), "SEPARATION,ALT1"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_SEPARATION_REF), "SEPARATION,REF"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_LOGISTIC_CONVERGE_FAIL), "LOGISTIC_CONVERGE_FAIL"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_FIRTH_CONVERGE_FAIL), "FIRTH_CONVERGE_FAIL"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_UNFINISHED), "UNFINISHED"));
  CHECK(!strcmp(fm_glm_code_name(FM_GLM_CODE_COUNT), "?"));
  CHECK(!strcmp(fm_glm_code_name(-1), "?"));
}

/* The covariates-only fit solves C'(y - p) = 0. */
static void test_null_fit(void) {
  enum { N = 400, Q = 3 };
  double c[N * Q], y[N], x[N], beta[Q + 1], u[Q + 1], inv[(Q + 1) * (Q + 1)];
  gen(N, Q, 0.3, 0, c, y, x);
  double *ws = malloc(glm_logit_ws_doubles(N, Q) * sizeof *ws);
  CHECK(glm_logit_null(N, Q, c, y, 25, TOL, beta, ws) == 0);
  beta[Q] = 0;
  score_at(N, Q, c, y, x, beta, 0, u, inv);
  for (int j = 0; j < Q; j++) CHECK(fabs(u[j]) <= TOL * sumsq(c + j * N, N));
  free(ws);
}

/* The fixed covariate information fit decides itself on ordinary variants
 * (no fallback to the full iteration), at every level, with and without
 * missing calls, for small and large effects. */
static void test_fast_decides(void) {
  enum { N = 600, Q = 4, QP = 4 };
  static double c[N * Q], y[N], x[N], cr[N * QP], mem[3 * N + QP + 2 * Q * Q];
  double cc[Q * Q], lcc[Q * Q], start[Q];
  double *ws = malloc(glm_logit_ws_doubles(N, Q) * sizeof *ws);
  for (int lv = 0; lv < 2; lv++) {
    fm_cpu_cap(lv ? FM_ISA_PORTABLE : FM_ISA_AVX512);
    for (int effect = 0; effect < 3; effect++) {
      gen(N, Q, 0.3, effect * 0.5, c, y, x);
      if (effect == 2)
        for (int i = 3; i < N; i += 13) x[i] = NAN;
      CHECK(glm_logit_null(N, Q, c, y, 25, TOL, start, ws) == 0);
      glm_logit_pre pre = {.n = N, .q = Q, .qp = QP, .cr = cr, .cc = cc, .lcc = lcc};
      CHECK(glm_logit_pre_doubles(N, Q) == sizeof mem / sizeof *mem);
      glm_logit_pre_place(&pre, mem);
      CHECK(glm_logit_pre_rows(N, Q, c, cr, cc, lcc) == 0);
      CHECK(glm_logit_pre_start(&pre, y, start, ws) == 0);
      glm_fit f = {.code = FM_GLM_OK, .obs_ct = 0}, g;
      for (int i = 0; i < N; i++) f.obs_ct += !isnan(x[i]);
      CHECK(glm_logit_fit_fast(&pre, y, x, start, 25, TOL, ws, &f) == 1);
      glm_logit_fit(N, Q, c, y, x, start, NULL, FM_GLM_FIRTH_NEVER, 25, TOL, ws, &g);
      CHECK(f.code == FM_GLM_OK && g.code == FM_GLM_OK);
      CHECK(fabs(f.beta - g.beta) <= 100 * TOL * (1 + fabs(g.beta)));
      CHECK(fabs(f.se / g.se - 1) <= 100 * TOL);
    }
  }
  fm_cpu_cap(FM_ISA_AVX512);
  free(ws);
}

/* Plain maximum likelihood: zero score and se = sqrt([(X'WX)^-1]_bb). */
static void test_plain_mle(void) {
  enum { N = 500, Q = 3 };
  double c[N * Q], y[N], x[N], ub, se;
  gen(N, Q, 0.25, 0.4, c, y, x);
  glm_fit out;
  for (int mode = FM_GLM_FIRTH_NEVER; mode <= FM_GLM_FIRTH_FALLBACK; mode++) {
    fit(N, Q, c, y, x, mode, &out);
    CHECK(out.code == FM_GLM_OK && out.firth == 0 && out.obs_ct == N);
    profile(N, Q, c, y, x, out.beta, 0, &ub, &se);
    CHECK(fabs(ub) <= TOL * sumsq(x, N));
    CHECK_CLOSE(out.se, se, 1e-8);
    CHECK(out.stat == out.beta / out.se);
  }
}

/* Firth: zero modified score, se from X'WX at the penalized estimate. */
static void test_firth_always(void) {
  enum { N = 300, Q = 2 };
  double c[N * Q], y[N], x[N], ub, se;
  gen(N, Q, 0.1, 0.8, c, y, x);
  glm_fit out, plain;
  fit(N, Q, c, y, x, FM_GLM_FIRTH_ALWAYS, &out);
  CHECK(out.code == FM_GLM_OK && out.firth == 1 && out.obs_ct == N);
  profile(N, Q, c, y, x, out.beta, 1, &ub, &se);
  CHECK(fabs(ub) <= TOL * sumsq(x, N));
  CHECK_CLOSE(out.se, se, 1e-8);
  /* the penalty pulls the estimate towards 0 */
  fit(N, Q, c, y, x, FM_GLM_FIRTH_NEVER, &plain);
  CHECK(plain.code == FM_GLM_OK && fabs(out.beta) < fabs(plain.beta));
}

/* Complete separation (no A1 among the controls): SEPARATION without
 * Firth, a finite Firth estimate otherwise, the same in both Firth modes. */
static void test_separation(void) {
  enum { N = 200, Q = 2 };
  double c[N * Q], y[N], x[N], ub, se;
  gen(N, Q, 0.2, 0, c, y, x);
  for (int i = 0; i < N; i++) {
    y[i] = i % 3 == 0;
    x[i] = y[i] ? 1 + (i % 2) : 0;
  }
  glm_fit never, fb, al;
  fit(N, Q, c, y, x, FM_GLM_FIRTH_NEVER, &never);
  CHECK(never.code == FM_GLM_SEPARATION && never.firth == 0 && isnan(never.beta) &&
        isnan(never.se) && never.obs_ct == N);
  fit(N, Q, c, y, x, FM_GLM_FIRTH_FALLBACK, &fb);
  fit(N, Q, c, y, x, FM_GLM_FIRTH_ALWAYS, &al);
  CHECK(fb.code == FM_GLM_OK && fb.firth == 1 && isfinite(fb.beta) && fb.beta > 0);
  CHECK(al.code == FM_GLM_OK && al.firth == 1);
  CHECK(fb.beta == al.beta && fb.se == al.se);
  profile(N, Q, c, y, x, fb.beta, 1, &ub, &se);
  CHECK(fabs(ub) <= TOL * sumsq(x, N));
  CHECK_CLOSE(fb.se, se, 1e-8);
  /* every case homozygous for A1: the other allele is absent (plink2's
   * SEPARATION,REF) */
  for (int i = 0; i < N; i++) x[i] = y[i] ? 2 : (double)(i % 3 == 1);
  fit(N, Q, c, y, x, FM_GLM_FIRTH_NEVER, &never);
  CHECK(never.code == FM_GLM_SEPARATION_REF);
}

/* Constant over the rows used (here once the missing calls are gone). */
static void test_constant(void) {
  enum { N = 100, Q = 2 };
  double c[N * Q], y[N], x[N];
  gen(N, Q, 0.3, 0, c, y, x);
  for (int i = 0; i < N; i++) x[i] = i % 10 == 0 ? 2 : 1;
  glm_fit out;
  fit(N, Q, c, y, x, FM_GLM_FIRTH_FALLBACK, &out);
  CHECK(out.code == FM_GLM_OK);
  for (int i = 0; i < N; i += 10) x[i] = NAN;
  fit(N, Q, c, y, x, FM_GLM_FIRTH_FALLBACK, &out);
  CHECK(out.code == FM_GLM_CONST_OMITTED_ALLELE && out.obs_ct == N - 10 && isnan(out.beta) &&
        out.firth == 0);
}

/* Missing calls: the full iteration's fit is the one on the compacted
 * rows, bit for bit; the fast fit's (whose vector lanes and downdated
 * covariate information differ) within what the stopping rule leaves. */
static void test_missing_rows(void) {
  enum { N = 300, Q = 3 };
  double c[N * Q], y[N], x[N], cc[N * Q], yc[N], xc[N];
  gen(N, Q, 0.3, 0.3, c, y, x);
  for (int i = 0; i < N; i += 7) x[i] = NAN;
  int m = 0;
  for (int i = 0; i < N; i++)
    if (!isnan(x[i])) {
      for (int j = 0; j < Q; j++) cc[j * (N - 43) + m] = c[j * N + i];
      yc[m] = y[i], xc[m++] = x[i];
    }
  CHECK(m == N - 43);
  double *ws = malloc(glm_logit_ws_doubles(N, Q) * sizeof *ws), start[Q];
  CHECK(glm_logit_null(N, Q, c, y, 25, TOL, start, ws) == 0);
  for (int mode = FM_GLM_FIRTH_NEVER; mode <= FM_GLM_FIRTH_ALWAYS; mode++) {
    glm_fit full, comp;
    glm_logit_fit(N, Q, c, y, x, start, NULL, mode, 25, TOL, ws, &full);
    glm_logit_fit(m, Q, cc, yc, xc, start, NULL, mode, 25, TOL, ws, &comp);
    CHECK(full.code == FM_GLM_OK && full.obs_ct == m && comp.obs_ct == m);
    CHECK(full.beta == comp.beta && full.se == comp.se && full.stat == comp.stat);
    CHECK(full.firth == (mode == FM_GLM_FIRTH_ALWAYS));
    glm_fit fast_full, fast_comp;
    fit_with(N, Q, c, y, x, mode, 1, &fast_full);
    fit_with(m, Q, cc, yc, xc, mode, 1, &fast_comp);
    CHECK(fast_full.code == FM_GLM_OK && fast_comp.code == FM_GLM_OK);
    CHECK(fabs(fast_full.beta - fast_comp.beta) <= 100 * TOL * (1 + fabs(full.beta)));
    CHECK(fabs(fast_full.se / fast_comp.se - 1) <= 100 * TOL);
  }
  free(ws);
}

static void test_too_few_rows(void) {
  enum { N = 40, Q = 3 };
  double c[N * Q], y[N], x[N];
  gen(N, Q, 0.4, 0, c, y, x);
  for (int i = Q + 1; i < N; i++) x[i] = NAN; /* q + 1 rows left */
  x[0] = 0, x[1] = 1, x[2] = 2, x[3] = 1;
  glm_fit out;
  fit(N, Q, c, y, x, FM_GLM_FIRTH_FALLBACK, &out);
  CHECK(out.code == FM_GLM_SAMPLE_CT_LE_PREDICTOR && out.obs_ct == Q + 1 && isnan(out.beta));
}

/* x in the covariates' span (plink2: VIF_TOO_HIGH), or nearly so: the
 * variance inflation 1/(1 - R^2) above 50. */
static void test_collinear(void) {
  enum { N = 200, Q = 3 };
  double c[N * Q], y[N], x[N];
  gen(N, Q, 0.3, 0, c, y, x);
  glm_fit out;
  for (int i = 0; i < N; i++) x[i] = 3 - 2 * c[N + i];
  fit(N, Q, c, y, x, FM_GLM_FIRTH_FALLBACK, &out);
  CHECK(out.code == FM_GLM_RANK_DEFICIENT && isnan(out.beta) && out.firth == 0);
  /* VIF 25 and 100: x = c_1 + s r, r a +-1 pattern with the covariates
   * projected out, s setting RSS / TSS = 1 / VIF. */
  double proj[N];
  for (int i = 0; i < N; i++) proj[i] = (i % 2) ? 1 : -1;
  /* Gram-Schmidt of e against the columns of C */
  double qb[Q][N];
  for (int j = 0; j < Q; j++) {
    memcpy(qb[j], c + j * N, sizeof qb[j]);
    for (int l = 0; l < j; l++) {
      double d = 0;
      for (int i = 0; i < N; i++) d += qb[l][i] * qb[j][i];
      for (int i = 0; i < N; i++) qb[j][i] -= d * qb[l][i];
    }
    double s = sqrt(sumsq(qb[j], N));
    for (int i = 0; i < N; i++) qb[j][i] /= s;
    double d = 0;
    for (int i = 0; i < N; i++) d += qb[j][i] * proj[i];
    for (int i = 0; i < N; i++) proj[i] -= d * qb[j][i];
  }
  double fitted[N], mean = 0, tss = 0;
  for (int i = 0; i < N; i++) fitted[i] = c[N + i], mean += fitted[i] / N;
  for (int i = 0; i < N; i++) tss += (fitted[i] - mean) * (fitted[i] - mean);
  double rss = sumsq(proj, N);
  for (int vif = 0; vif < 2; vif++) {
    /* RSS / TSS(x) = 1/VIF with TSS(x) = TSS(fitted) + RSS */
    double target = vif ? 100 : 25, s = sqrt(tss / (target - 1) / rss);
    for (int i = 0; i < N; i++) x[i] = fitted[i] + s * proj[i];
    fit(N, Q, c, y, x, FM_GLM_FIRTH_FALLBACK, &out);
    CHECK(out.code == (vif ? FM_GLM_RANK_DEFICIENT : FM_GLM_OK));
  }
}

/* The kernels at every level: on randomized designs (q up to 11, the
 * GWAS's intercept + 10 PCs, and 17, beyond the vector kernels' widths;
 * row counts not a multiple of 4; common and rare genotypes, the latter
 * taking Firth), each level solves the (Firth) score equations, and the
 * levels agree. */
static void test_isa_paths(void) {
  static const int qs[] = {1, 2, 3, 5, 8, 11, 17};
  static const int64_t ns[] = {37, 203, 1111};
  const fm_isa top = fm_cpu_isa();
  printf("  kernels: %s and portable\n", fm_cpu_isa_name(top));
  int firth_seen = 0;
  for (size_t qi = 0; qi < sizeof qs / sizeof *qs; qi++)
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
      for (int rare = 0; rare < 2; rare++) {
        const int q = qs[qi];
        const int64_t n = ns[ni];
        if (n < 8 * (q + 1)) continue;
        double *c = malloc((size_t)n * (size_t)q * sizeof *c), *y = malloc((size_t)n * sizeof *y),
               *x = malloc((size_t)n * sizeof *x);
        gen(n, q, rare ? 3.0 / (double)n : 0.3, 0.5, c, y, x);
        if (rare) x[0] = 1, y[0] = 1; /* at least one allele, in a case */
        for (int64_t i = 5; i < n; i += 11) x[i] = NAN; /* missing calls */
        for (int mode = FM_GLM_FIRTH_FALLBACK; mode <= FM_GLM_FIRTH_ALWAYS; mode++) {
          /* per level, the fast fit (f[lv]) and the full iteration alone */
          glm_fit f[2], g[2];
          for (int lv = 0; lv < 2; lv++) {
            fm_cpu_cap(lv ? FM_ISA_PORTABLE : FM_ISA_AVX512);
            fit_with(n, q, c, y, x, mode, 1, &f[lv]);
            fit_with(n, q, c, y, x, mode, 0, &g[lv]);
          }
          fm_cpu_cap(FM_ISA_AVX512);
          for (int lv = 0; lv < 2; lv++) {
            CHECK(f[lv].code == g[lv].code && f[lv].firth == g[lv].firth);
            if (f[lv].code == FM_GLM_OK) {
              CHECK(fabs(f[lv].beta - g[lv].beta) <= 100 * TOL * (1 + fabs(g[lv].beta)));
              CHECK(fabs(f[lv].se / g[lv].se - 1) <= 100 * TOL);
            }
          }
          CHECK(f[0].code == f[1].code && f[0].firth == f[1].firth && f[0].obs_ct == f[1].obs_ct);
          if (f[0].code != FM_GLM_OK) continue;
          firth_seen += f[0].firth;
          CHECK(fabs(f[0].beta - f[1].beta) <= 100 * TOL * (1 + fabs(f[1].beta)));
          CHECK(fabs(f[0].se / f[1].se - 1) <= 100 * TOL);
          if (q <= 11 && n <= 203) { /* the oracle: the score at the estimate */
            double *cc = malloc((size_t)n * (size_t)q * sizeof *cc), *yc = malloc((size_t)n * sizeof *yc),
                   *xc = malloc((size_t)n * sizeof *xc), ub, se;
            int64_t m = 0;
            for (int64_t i = 0; i < n; i++)
              if (!isnan(x[i])) yc[m] = y[i], xc[m++] = x[i];
            for (int j = 0; j < q; j++)
              for (int64_t i = 0, t = 0; i < n; i++)
                if (!isnan(x[i])) cc[j * m + t++] = c[j * n + i];
            for (int lv = 0; lv < 2; lv++) {
              profile(m, q, cc, yc, xc, f[lv].beta, f[lv].firth, &ub, &se);
              CHECK(fabs(ub) <= TOL * sumsq(xc, m));
              CHECK_CLOSE(f[lv].se, se, 1e-8);
            }
            free(cc), free(yc), free(xc);
          }
        }
        free(c), free(y), free(x);
      }
  CHECK(firth_seen > 0);
}

int main(void) {
  FM_RUN(test_code_names);
  FM_RUN(test_null_fit);
  FM_RUN(test_plain_mle);
  FM_RUN(test_fast_decides);
  FM_RUN(test_firth_always);
  FM_RUN(test_separation);
  FM_RUN(test_constant);
  FM_RUN(test_missing_rows);
  FM_RUN(test_too_few_rows);
  FM_RUN(test_collinear);
  FM_RUN(test_isa_paths);
  FM_TEST_END();
}
