/* Tests for fm_stats_coloc_pairs (generated log Bayes factors only).
 * Oracle: each pair on its own, from the definitions of the header, in long
 * double and in the log domain throughout: lse of each row, lse_k (x_k +
 * y_k), and the H3 sum lse_k (x_k + lse_{l != k} y_l) with the inner sums
 * from prefix and suffix log-sums (no subtraction anywhere, so no
 * cancellation and no underflow, also where valgrind computes long double
 * in 64 bits). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_stats_coloc.h"
#include "fm_test.h"

/* ---- the oracle ---- */

static long double lae(long double a, long double b) { /* log(e^a + e^b) */
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const long double mx = a > b ? a : b;
  return mx + log1pl(expl(-fabsl(a - b)));
}

static long double ref_lse(const long double *x, int64_t m) {
  long double mx = -INFINITY, s = 0.0L;
  for (int64_t k = 0; k < m; k++)
    if (x[k] > mx) mx = x[k];
  for (int64_t k = 0; k < m; k++) s += expl(x[k] - mx);
  return mx + logl(s);
}

/* lh[0..4] of pair (x, y) (rows of m entries) and the posteriors. */
static void ref_pair(const double *x, const double *y, int64_t m, double p1, double p2,
                     double p12, long double lh[5], long double pp[5]) {
  long double *t = malloc((size_t)m * sizeof *t), *pre = malloc((size_t)(m + 1) * sizeof *pre),
              *suf = malloc((size_t)(m + 1) * sizeof *suf);
  for (int64_t k = 0; k < m; k++) t[k] = x[k];
  const long double l1 = ref_lse(t, m);
  for (int64_t k = 0; k < m; k++) t[k] = y[k];
  const long double l2 = ref_lse(t, m);
  for (int64_t k = 0; k < m; k++) t[k] = (long double)x[k] + (long double)y[k];
  const long double lc = ref_lse(t, m);
  pre[0] = -INFINITY; /* pre[k] = lse(y_0 .. y_{k-1}); suf[k] = lse(y_k .. y_{m-1}) */
  for (int64_t k = 0; k < m; k++) pre[k + 1] = lae(pre[k], y[k]);
  suf[m] = -INFINITY;
  for (int64_t k = m - 1; k >= 0; k--) suf[k] = lae(suf[k + 1], y[k]);
  long double ld = -INFINITY;
  for (int64_t k = 0; k < m; k++) ld = lae(ld, x[k] + lae(pre[k], suf[k + 1]));
  lh[0] = 0.0L;
  lh[1] = logl(p1) + l1;
  lh[2] = logl(p2) + l2;
  lh[3] = logl(p1) + logl(p2) + ld;
  lh[4] = logl(p12) + lc;
  const long double den = ref_lse(lh, 5);
  for (int h = 0; h < 5; h++) pp[h] = expl(lh[h] - den);
  free(t);
  free(pre);
  free(suf);
}

/* ---- helpers ---- */

typedef struct case_ {
  int64_t n1, n2, m;
  double *l1, *l2; /* n1 x m, n2 x m column-major */
} case_;

static case_ case_new(int64_t n1, int64_t n2, int64_t m) {
  case_ c = {n1, n2, m, calloc((size_t)(n1 * m + 1), sizeof(double)),
             calloc((size_t)(n2 * m + 1), sizeof(double))};
  return c;
}

static void case_free(case_ *c) {
  free(c->l1);
  free(c->l2);
}

static void row(const double *l, int64_t n, int64_t m, int64_t i, double *out) {
  for (int64_t k = 0; k < m; k++) out[k] = l[i + k * n];
}

/* A noisy background in [lo, lo + spread) plus, per row, a peak of height
 * h at a random SNP (and a second, lower one half of the time). */
static void fill(double *l, int64_t n, int64_t m, double lo, double spread, double h,
                 uint64_t *rng) {
  for (int64_t i = 0; i < n; i++) {
    for (int64_t k = 0; k < m; k++) l[i + k * n] = lo + spread * fm_test_rng_unif(rng);
    int64_t k1 = (int64_t)(fm_test_rng_unif(rng) * (double)m);
    l[i + k1 * n] += h * (0.2 + fm_test_rng_unif(rng));
    if (fm_test_rng_unif(rng) < 0.5) {
      int64_t k2 = (int64_t)(fm_test_rng_unif(rng) * (double)m);
      l[i + k2 * n] += 0.5 * h * fm_test_rng_unif(rng);
    }
  }
}

/* A case whose rows are fill()ed: trait 1 from lo1, trait 2 from lo2. */
static case_ random_case(int64_t n1, int64_t n2, int64_t m, double lo1, double lo2,
                         double spread, double h, uint64_t seed) {
  case_ c = case_new(n1, n2, m);
  fill(c.l1, n1, m, lo1, spread, h, &seed);
  fill(c.l2, n2, m, lo2, spread, h, &seed);
  return c;
}

/* Run the core on c with budget (0: default) and compare every pair with the
 * oracle: log numerators to tol_lh (absolute, -Inf exactly), posteriors to
 * tol_pp (absolute). Returns the exact-path counts in exact. */
static void check_case(const case_ *c, double p1, double p2, double p12, size_t budget,
                       double tol_lh, double tol_pp, int64_t exact[2]) {
  const int64_t cells = c->n1 * c->n2 * 5;
  double *pp = malloc((size_t)(cells + 1) * sizeof *pp),
         *lh = malloc((size_t)(cells + 1) * sizeof *lh);
  double *x = malloc((size_t)c->m * sizeof *x), *y = malloc((size_t)c->m * sizeof *y);
  fm_ctl ctl = {.panel_bytes = budget};
  fm_err err;
  fm_err_clear(&err);
  CHECK_OK(fm_stats_coloc_pairs(c->l1, c->n1, c->n1, c->l2, c->n2, c->n2, c->m, p1, p2, p12, pp,
                                lh, exact, &ctl, &err),
           &err);
  double worst_lh = 0, worst_pp = 0;
  for (int64_t j = 0; j < c->n2; j++) {
    row(c->l2, c->n2, c->m, j, y);
    for (int64_t i = 0; i < c->n1; i++) {
      row(c->l1, c->n1, c->m, i, x);
      long double rl[5], rp[5];
      ref_pair(x, y, c->m, p1, p2, p12, rl, rp);
      double psum = 0;
      for (int h = 0; h < 5; h++) {
        const int64_t cell = i + j * c->n1 + h * c->n1 * c->n2;
        const double got = lh[cell], want = (double)rl[h];
        if (isinf(want)) {
          CHECK(got == want);
        } else {
          const double d = fabs(got - want);
          if (!(d <= worst_lh)) worst_lh = d;
        }
        const double dp = fabs(pp[cell] - (double)rp[h]);
        if (!(dp <= worst_pp)) worst_pp = dp;
        psum += pp[cell];
      }
      CHECK(fabs(psum - 1.0) < 1e-14);
    }
  }
  if (!(worst_lh <= tol_lh && worst_pp <= tol_pp))
    fprintf(stderr, "worst |lh - ref| = %.3g (tol %.3g), |pp - ref| = %.3g (tol %.3g)\n",
            worst_lh, tol_lh, worst_pp, tol_pp);
  CHECK(worst_lh <= tol_lh);
  CHECK(worst_pp <= tol_pp);
  free(pp);
  free(lh);
  free(x);
  free(y);
}

/* ---- cases ---- */

/* Ordinary signals, default budget and tiny budgets (many panels, a
 * partial last panel on both sides), the same answers. */
static void test_random_all_budgets(void) {
  case_ c = random_case(37, 23, 211, -1.0, -1.0, 3.0, 30.0, 11);
  const size_t budgets[] = {0, 8, 8 * (2 * 211 + 1) * 4, 8 * (2 * 211 * 5 + 25)};
  for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
    int64_t exact[2];
    check_case(&c, 1e-4, 1e-4, 1e-5, budgets[b], 1e-11, 1e-12, exact);
  }
  /* other priors, as coloc.bf_bf's default p12 */
  int64_t exact[2];
  check_case(&c, 1e-4, 2e-4, 5e-6, 0, 1e-11, 1e-12, exact);
  check_case(&c, 1.0, 1.0, 1.0, 0, 1e-11, 1e-12, exact);
  case_free(&c);
}

/* Very negative log BFs (BF ~ e^-5000): the max shift keeps everything
 * representable; PP.H0 ~ 1. */
static void test_very_negative(void) {
  case_ c = random_case(5, 6, 50, -5000.0, -5200.0, 40.0, 10.0, 12);
  int64_t exact[2];
  check_case(&c, 1e-4, 1e-4, 1e-5, 0, 1e-11, 1e-12, exact);
  case_free(&c);
}

/* Signals peaking at disjoint SNPs with heights making S underflow (every
 * product term below 1e-250, most exactly 0): the exact coupling path. A
 * height of 400 stays on the BLAS path (S ~ e^-400 > 1e-250), both agree. */
static void test_disjoint_underflow(void) {
  const double heights[] = {400.0, 600.0, 800.0, 2000.0};
  for (size_t t = 0; t < sizeof heights / sizeof heights[0]; t++) {
    case_ c = case_new(4, 3, 40);
    for (int64_t i = 0; i < c.n1; i++) c.l1[i + (2 * i) * c.n1] = heights[t] + (double)i;
    for (int64_t j = 0; j < c.n2; j++) c.l2[j + (2 * j + 1) * c.n2] = heights[t] - (double)j;
    int64_t exact[2] = {-1, -1};
    /* lH up to 2 * 2000: a few ulp of that scale */
    check_case(&c, 1e-4, 1e-4, 1e-5, 0, 1e-12 + 2e-15 * heights[t], 1e-12, exact);
    if (heights[t] >= 600.0)
      CHECK(exact[0] == c.n1 * c.n2);
    else
      CHECK(exact[0] == 0);
    case_free(&c);
  }
}

/* Both signals put nearly all their mass on the same SNP: lse L1 + lse L2
 * and the coupling agree to 1e-16 or closer, and H3 comes from the exact
 * path; the plain difference T1 T2 - S would have no correct digit. */
static void test_nearly_equal_h3(void) {
  const double heights[] = {20.0, 40.0, 60.0};
  for (size_t t = 0; t < sizeof heights / sizeof heights[0]; t++) {
    case_ c = case_new(3, 2, 100);
    uint64_t rng = 13 + t;
    fill(c.l1, c.n1, c.m, -0.5, 1.0, 0.0, &rng);
    fill(c.l2, c.n2, c.m, -0.5, 1.0, 0.0, &rng);
    for (int64_t i = 0; i < c.n1; i++) c.l1[i + 17 * c.n1] = heights[t] + 0.1 * (double)i;
    for (int64_t j = 0; j < c.n2; j++) c.l2[j + 17 * c.n2] = heights[t] - 0.2 * (double)j;
    int64_t exact[2] = {-1, -1};
    check_case(&c, 1e-4, 1e-4, 1e-5, 0, 1e-11, 1e-13, exact);
    CHECK(exact[0] == 0 && exact[1] == c.n1 * c.n2);
    case_free(&c);
  }
}

/* One SNP: no two distinct SNPs, so H3 has probability 0. */
static void test_one_snp(void) {
  case_ c = case_new(2, 3, 1);
  c.l1[0] = 3.0;
  c.l1[1] = -2.0;
  c.l2[0] = 0.5;
  c.l2[1] = 7.0;
  c.l2[2] = -1.0;
  int64_t exact[2];
  check_case(&c, 1e-4, 1e-4, 1e-5, 0, 1e-12, 1e-14, exact);
  double pp[30], lh[30];
  fm_err err;
  CHECK_OK(fm_stats_coloc_pairs(c.l1, 2, 2, c.l2, 3, 3, 1, 1e-4, 1e-4, 1e-5, pp, lh, NULL, NULL,
                                &err),
           &err);
  for (int64_t cell = 0; cell < 6; cell++) {
    CHECK(pp[cell + 3 * 6] == 0.0);
    CHECK(isinf(lh[cell + 3 * 6]) && lh[cell + 3 * 6] < 0);
  }
  case_free(&c);
}

/* Padded leading dimensions: rows are read through ld, not n. */
static void test_leading_dimension(void) {
  case_ c = random_case(6, 4, 30, -1.0, -1.0, 2.0, 15.0, 14);
  const int64_t ld1 = 9, ld2 = 5;
  double *p1 = malloc((size_t)(ld1 * c.m) * sizeof *p1),
         *p2 = malloc((size_t)(ld2 * c.m) * sizeof *p2);
  for (int64_t k = 0; k < c.m; k++) {
    for (int64_t i = 0; i < ld1; i++) p1[i + k * ld1] = i < c.n1 ? c.l1[i + k * c.n1] : NAN;
    for (int64_t j = 0; j < ld2; j++) p2[j + k * ld2] = j < c.n2 ? c.l2[j + k * c.n2] : NAN;
  }
  double a[120], b[120];
  fm_err err;
  CHECK_OK(fm_stats_coloc_pairs(c.l1, 6, 6, c.l2, 4, 4, 30, 1e-4, 1e-4, 1e-5, a, NULL, NULL, NULL,
                                &err),
           &err);
  CHECK_OK(fm_stats_coloc_pairs(p1, 6, ld1, p2, 4, ld2, 30, 1e-4, 1e-4, 1e-5, b, NULL, NULL, NULL,
                                &err),
           &err);
  CHECK(memcmp(a, b, sizeof a) == 0);
  free(p1);
  free(p2);
  case_free(&c);
}

static void test_errors(void) {
  double l1[6] = {0, 1, 2, 3, 4, 5}, l2[4] = {0, 1, 2, 3}, pp[4 * 5];
  fm_err err;
  /* no pair: fine, nothing written */
  CHECK(fm_stats_coloc_pairs(l1, 0, 1, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, NULL, NULL, NULL, NULL,
                             &err) == FM_OK);
  CHECK(fm_stats_coloc_pairs(l1, 2, 2, l2, 2, 2, 0, 1e-4, 1e-4, 1e-5, pp, NULL, NULL, NULL,
                             &err) == FM_EARG);
  CHECK(fm_stats_coloc_pairs(l1, 3, 2, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, pp, NULL, NULL, NULL,
                             &err) == FM_EARG);
  CHECK(fm_stats_coloc_pairs(l1, -1, 1, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, pp, NULL, NULL, NULL,
                             &err) == FM_EARG);
  CHECK(fm_stats_coloc_pairs(NULL, 2, 2, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, pp, NULL, NULL, NULL,
                             &err) == FM_EARG);
  CHECK(fm_stats_coloc_pairs(l1, 2, 2, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, NULL, NULL, NULL, NULL,
                             &err) == FM_EARG);
  const double bad_priors[] = {0.0, -1e-4, 1.5, NAN, INFINITY};
  for (size_t b = 0; b < sizeof bad_priors / sizeof bad_priors[0]; b++) {
    CHECK(fm_stats_coloc_pairs(l1, 2, 2, l2, 2, 2, 2, bad_priors[b], 1e-4, 1e-5, pp, NULL, NULL,
                               NULL, &err) == FM_EARG);
    CHECK(fm_stats_coloc_pairs(l1, 2, 2, l2, 2, 2, 2, 1e-4, 1e-4, bad_priors[b], pp, NULL, NULL,
                               NULL, &err) == FM_EARG);
    CHECK(strstr(err.msg, "p12") != NULL);
  }
  /* non-finite log BFs, named by matrix, row and column (1-based) */
  l1[3] = NAN; /* row 2, column 2 of a 2 x 3 matrix */
  CHECK(fm_stats_coloc_pairs(l1, 2, 2, l2, 2, 2, 3, 1e-4, 1e-4, 1e-5, pp, NULL, NULL, NULL,
                             &err) == FM_EARG);
  CHECK(strstr(err.msg, "l1[2, 2] is NaN") != NULL);
  l1[3] = 3;
  l2[2] = -INFINITY; /* row 1, column 2 of a 2 x 2 matrix */
  CHECK(fm_stats_coloc_pairs(l1, 2, 2, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, pp, NULL, NULL, NULL,
                             &err) == FM_EARG);
  CHECK(strstr(err.msg, "l2[1, 2] is -Inf") != NULL);
  /* also checked when the other trait has no signal */
  CHECK(fm_stats_coloc_pairs(l1, 0, 1, l2, 2, 2, 2, 1e-4, 1e-4, 1e-5, NULL, NULL, NULL, NULL,
                             &err) == FM_EARG);
}

typedef struct cb_state {
  int polls, cancel_at, progress_calls;
  double last_done, last_total;
} cb_state;

static int cancel_cb(void *ud) {
  cb_state *s = ud;
  return ++s->polls >= s->cancel_at;
}

static void progress_cb(void *ud, double done, double total) {
  cb_state *s = ud;
  s->last_done = done;
  s->last_total = total;
  s->progress_calls++;
}

static void test_cancel_and_progress(void) {
  case_ c = random_case(10, 7, 20, -1.0, -1.0, 2.0, 15.0, 15);
  double pp[10 * 7 * 5];
  fm_err err;
  cb_state s = {0, 1000000, 0, 0, 0};
  /* a budget for 3 signals a panel: 4 x 3 blocks */
  fm_ctl ctl = {.cancel = cancel_cb, .progress = progress_cb, .ud = &s,
                .panel_bytes = 8 * (2 * 3 * 20 + 9)};
  CHECK_OK(fm_stats_coloc_pairs(c.l1, 10, 10, c.l2, 7, 7, 20, 1e-4, 1e-4, 1e-5, pp, NULL, NULL,
                                &ctl, &err),
           &err);
  CHECK(s.last_done == 70 && s.last_total == 70 && s.progress_calls == 12 && s.polls == 12);
  cb_state s2 = {0, 3, 0, 0, 0};
  ctl.ud = &s2;
  CHECK(fm_stats_coloc_pairs(c.l1, 10, 10, c.l2, 7, 7, 20, 1e-4, 1e-4, 1e-5, pp, NULL, NULL,
                             &ctl, &err) == FM_ECANCELLED);
  CHECK(s2.polls == 3);
  case_free(&c);
}

int main(void) {
  FM_RUN(test_random_all_budgets);
  FM_RUN(test_very_negative);
  FM_RUN(test_disjoint_underflow);
  FM_RUN(test_nearly_equal_h3);
  FM_RUN(test_one_snp);
  FM_RUN(test_leading_dimension);
  FM_RUN(test_errors);
  FM_RUN(test_cancel_and_progress);
  FM_TEST_END();
}
