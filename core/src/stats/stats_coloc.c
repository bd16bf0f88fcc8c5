/* stats_coloc.c: coloc's five-hypothesis posteriors for every pair of
 * signals of two traits (fm_stats_coloc.h).
 *
 * One pass summarises each signal (row) of log BFs: its largest value a,
 * its first argmax, the scaled total T = sum_k exp(L_k - a) and the
 * log-sum-exp of the row without its argmax (for the exact H3 path). Then,
 * over blocks of signal pairs, E1 and E2 panels (rows of exp(L - a)) are
 * filled and S = E1 E2' comes from one dgemm per block; each pair's five
 * log numerators follow in O(1), except for the two soundness rules of the
 * header (underflow of S, cancellation in T1 T2 - S), which recompute that
 * pair in O(m) in the log domain.
 *
 * Design note (2026-12): blocks are bounded two ways: the E panels and S
 * fit the panel budget (2 r m + r^2 doubles), and r^2 m, the multiply-adds
 * between two cancel polls, stays below COLOC_BLOCK_FMA (about 30 ms with
 * the reference BLAS), so a poll comes well within 100 ms. The E2 panel is
 * refilled for each block of trait-1 signals (n2 m exp() per block row:
 * a few per cent of the product's cost at m in the thousands). */
#include "fm/fm_stats_coloc.h"

#include <math.h>
#include <stdlib.h>

#include "base/blas.h"
#include "fm/fm_panel.h"

/* S_ij below this may have lost terms to underflow (header, first rule). */
#define COLOC_UNDERFLOW 1e-250
/* S_ij above this fraction of T1_i T2_j: T1 T2 - S cancels (second rule). */
#define COLOC_CANCEL (15.0 / 16.0)
/* Multiply-adds of one block's dgemm: the work between two cancel polls. */
#define COLOC_BLOCK_FMA ((double)(1 << 25))

/* Summary of one signal's row of log BFs. */
typedef struct row_sum {
  double max;   /* a = max_k L_k */
  double t;     /* T = sum_k exp(L_k - a), in [1, m] */
  double lrest; /* lse of L over every SNP but kmax; -Inf when m = 1 */
  int64_t kmax; /* first argmax */
} row_sum;

/* Summaries of the n rows of l (n x m, leading dimension ld), checking that
 * every entry is finite. Two sweeps column by column (contiguous reads):
 * the largest and second largest values, then the scaled sums. */
static fm_status summarise(const double *l, int64_t n, int64_t ld, int64_t m, const char *name,
                           row_sum *rs, fm_err *err) {
  double *max2 = malloc((size_t)n * sizeof *max2);
  double *rest = malloc((size_t)n * sizeof *rest);
  if (!max2 || !rest) {
    free(max2);
    free(rest);
    return fm_err_set(err, FM_ENOMEM, "cannot allocate the summaries of %lld signals of %s",
                      (long long)n, name);
  }
  for (int64_t i = 0; i < n; i++) {
    rs[i].max = max2[i] = -INFINITY;
    rs[i].kmax = -1;
    rest[i] = 0.0;
  }
  for (int64_t k = 0; k < m; k++) {
    const double *col = l + k * ld;
    for (int64_t i = 0; i < n; i++) {
      const double v = col[i];
      if (!isfinite(v)) {
        free(max2);
        free(rest);
        return fm_err_set(err, FM_EARG, "%s[%lld, %lld] is %s: log Bayes factors must be finite",
                          name, (long long)(i + 1), (long long)(k + 1),
                          isnan(v) ? "NaN" : (v > 0 ? "Inf" : "-Inf"));
      }
      if (v > rs[i].max) {
        max2[i] = rs[i].max;
        rs[i].max = v;
        rs[i].kmax = k;
      } else if (v > max2[i]) {
        max2[i] = v;
      }
    }
  }
  /* rest = sum over k != kmax of exp(L_k - max2) >= 1 (holds the max2 term) */
  for (int64_t k = 0; k < m; k++) {
    const double *col = l + k * ld;
    for (int64_t i = 0; i < n; i++)
      if (k != rs[i].kmax) rest[i] += exp(col[i] - max2[i]);
  }
  for (int64_t i = 0; i < n; i++) {
    if (m == 1) {
      rs[i].t = 1.0;
      rs[i].lrest = -INFINITY;
    } else {
      rs[i].t = 1.0 + exp(max2[i] - rs[i].max) * rest[i];
      rs[i].lrest = max2[i] + log(rest[i]);
    }
  }
  free(max2);
  free(rest);
  return FM_OK;
}

/* lse_k (x_k + y_k) over m SNPs, max-shifted (the exact coupling). */
static double lse_sum(const double *x, int64_t sx, const double *y, int64_t sy, int64_t m) {
  double mx = -INFINITY;
  for (int64_t k = 0; k < m; k++) {
    const double v = x[k * sx] + y[k * sy];
    if (v > mx) mx = v;
  }
  double s = 0.0;
  for (int64_t k = 0; k < m; k++) s += exp(x[k * sx] + y[k * sy] - mx);
  return mx + log(s);
}

/* log sum_{k != l} exp(x_k + y_l) = lse_k (x_k + w_k), w_k = log sum_{l != k}
 * exp(y_l): for k != kmax(y), b + log(T - exp(y_k - b)) with T - exp(y_k - b)
 * >= max(1, T - 1) >= T / 2 (no cancellation beyond a factor 2); for kmax(y),
 * the summary's lrest. v is m doubles of scratch. -Inf when m = 1. */
static double lse_offdiag(const double *x, int64_t sx, const double *y, int64_t sy, int64_t m,
                          const row_sum *ry, double *v) {
  if (m == 1) return -INFINITY;
  double mx = -INFINITY;
  for (int64_t k = 0; k < m; k++) {
    const double w = k == ry->kmax ? ry->lrest : ry->max + log(ry->t - exp(y[k * sy] - ry->max));
    v[k] = x[k * sx] + w;
    if (v[k] > mx) mx = v[k];
  }
  double s = 0.0;
  for (int64_t k = 0; k < m; k++) s += exp(v[k] - mx);
  return mx + log(s);
}

/* Rows r0 .. r0 + w - 1 of exp(L - a) into the panel e (w x m, leading dimension lde). */
static void fill_panel(const double *l, int64_t ld, int64_t m, const row_sum *rs, int64_t r0,
                       int64_t w, double *e, int64_t lde) {
  for (int64_t k = 0; k < m; k++) {
    const double *col = l + k * ld + r0;
    double *out = e + k * lde;
    for (int64_t i = 0; i < w; i++) out[i] = exp(col[i] - rs[r0 + i].max);
  }
}

/* Signals per panel: 8 (2 r m + r^2) bytes within the budget and r^2 m <=
 * COLOC_BLOCK_FMA, at least 1, at most INT_MAX. */
static int64_t panel_rows(int64_t m, size_t budget) {
  const double md = (double)m;
  double r = floor(sqrt(md * md + (double)budget / 8.0) - md);
  const double rf = floor(sqrt(COLOC_BLOCK_FMA / md));
  if (rf < r) r = rf;
  if (r < 1.0) r = 1.0;
  if (r > (double)INT_MAX) r = (double)INT_MAX;
  return (int64_t)r;
}

/* The five log numerators of one pair into lh, then its posteriors into pp. */
static void posteriors(const double lh[5], double pp[5]) {
  double mx = 0.0; /* lH0 = 0 */
  for (int h = 1; h < 5; h++)
    if (lh[h] > mx) mx = lh[h];
  double s = 0.0;
  for (int h = 0; h < 5; h++) s += exp(lh[h] - mx);
  const double den = mx + log(s);
  for (int h = 0; h < 5; h++) pp[h] = exp(lh[h] - den);
}

static fm_status check_args(const double *l1, int64_t n1, int64_t ld1, const double *l2,
                            int64_t n2, int64_t ld2, int64_t m, const double pr[3],
                            const double *pp_out, fm_err *err) {
  static const char *const pname[3] = {"p1", "p2", "p12"};
  if (n1 < 0 || n2 < 0)
    return fm_err_set(err, FM_EARG, "signal counts must be >= 0, not n1 = %lld, n2 = %lld",
                      (long long)n1, (long long)n2);
  if (m < 1) return fm_err_set(err, FM_EARG, "m must be >= 1 SNP, not %lld", (long long)m);
  if (ld1 < (n1 > 1 ? n1 : 1) || ld2 < (n2 > 1 ? n2 : 1))
    return fm_err_set(err, FM_EARG,
                      "leading dimensions %lld and %lld are below n1 = %lld, n2 = %lld",
                      (long long)ld1, (long long)ld2, (long long)n1, (long long)n2);
  if ((n1 > 0 && !l1) || (n2 > 0 && !l2) || (n1 > 0 && n2 > 0 && !pp_out))
    return fm_err_set(err, FM_EARG, "l1, l2 and pp_out must not be NULL");
  for (int h = 0; h < 3; h++)
    if (!(pr[h] > 0.0 && pr[h] <= 1.0))
      return fm_err_set(err, FM_EARG, "prior %s must be in (0, 1], not %g", pname[h], pr[h]);
  int64_t cells;
  if (!fm_blas_dim_ok(m))
    return fm_err_set(err, FM_EUNSUPPORTED, "m = %lld SNPs exceeds a BLAS integer", (long long)m);
  if (!fm_mul_ok(n1, n2, &cells) || !fm_mul_ok(cells, 5, &cells) ||
      !fm_mul_ok(ld1, m, &cells) || !fm_mul_ok(ld2, m, &cells))
    return fm_err_set(err, FM_EARG, "n1 = %lld, n2 = %lld, m = %lld: sizes overflow",
                      (long long)n1, (long long)n2, (long long)m);
  return FM_OK;
}

fm_status fm_stats_coloc_pairs(const double *l1, int64_t n1, int64_t ld1, const double *l2,
                               int64_t n2, int64_t ld2, int64_t m, double p1, double p2,
                               double p12, double *pp_out, double *lh_out, int64_t *n_exact_out,
                               const fm_ctl *ctl, fm_err *err) {
  if (n_exact_out) n_exact_out[0] = n_exact_out[1] = 0;
  const double pr[3] = {p1, p2, p12};
  fm_status st = check_args(l1, n1, ld1, l2, n2, ld2, m, pr, pp_out, err);
  if (st != FM_OK) return st;
  row_sum *rs1 = NULL, *rs2 = NULL;
  double *e1 = NULL, *e2 = NULL, *s = NULL, *v = NULL;
  rs1 = malloc((size_t)(n1 > 0 ? n1 : 1) * sizeof *rs1);
  rs2 = malloc((size_t)(n2 > 0 ? n2 : 1) * sizeof *rs2);
  if (!rs1 || !rs2) {
    st = fm_err_set(err, FM_ENOMEM, "cannot allocate signal summaries (n1 = %lld, n2 = %lld)",
                    (long long)n1, (long long)n2);
    goto fail;
  }
  /* Every entry is checked, also when the other trait has no signal. */
  if ((st = summarise(l1, n1, ld1, m, "l1", rs1, err)) != FM_OK) goto fail;
  if ((st = summarise(l2, n2, ld2, m, "l2", rs2, err)) != FM_OK) goto fail;
  if (n1 == 0 || n2 == 0) goto fail; /* no pair: st is FM_OK */

  const int64_t r = panel_rows(m, fm_panel_budget(ctl));
  const int64_t r1 = n1 < r ? n1 : r, r2 = n2 < r ? n2 : r;
  e1 = malloc((size_t)r1 * (size_t)m * sizeof *e1);
  e2 = malloc((size_t)r2 * (size_t)m * sizeof *e2);
  s = malloc((size_t)r1 * (size_t)r2 * sizeof *s);
  v = malloc((size_t)m * sizeof *v);
  if (!e1 || !e2 || !s || !v) {
    st = fm_err_set(err, FM_ENOMEM, "cannot allocate panels of %lld and %lld signals x %lld SNPs",
                    (long long)r1, (long long)r2, (long long)m);
    goto fail;
  }
  const double lp1 = log(p1), lp2 = log(p2), lp12 = log(p12);
  const double total = (double)n1 * (double)n2;
  const int64_t plane = n1 * n2;
  int64_t e2_start = -1; /* the trait-2 rows the E2 panel holds */
  for (int64_t i0 = 0; i0 < n1; i0 += r1) {
    const int64_t w1 = n1 - i0 < r1 ? n1 - i0 : r1;
    fill_panel(l1, ld1, m, rs1, i0, w1, e1, r1);
    for (int64_t j0 = 0; j0 < n2; j0 += r2) {
      if (fm_ctl_cancelled(ctl)) {
        st = fm_err_set(err, FM_ECANCELLED, "colocalisation cancelled");
        goto fail;
      }
      const int64_t w2 = n2 - j0 < r2 ? n2 - j0 : r2;
      if (e2_start != j0) {
        fill_panel(l2, ld2, m, rs2, j0, w2, e2, r2);
        e2_start = j0;
      }
      const fm_blas_int bw1 = (fm_blas_int)w1, bw2 = (fm_blas_int)w2, bm = (fm_blas_int)m;
      const fm_blas_int b1 = (fm_blas_int)r1, b2 = (fm_blas_int)r2;
      const double one = 1.0, zero = 0.0;
      dgemm_("N", "T", &bw1, &bw2, &bm, &one, e1, &b1, e2, &b2, &zero, s, &b1, FM_FCONE,
             FM_FCONE);
      for (int64_t jj = 0; jj < w2; jj++) {
        const int64_t j = j0 + jj;
        const row_sum *B = &rs2[j];
        for (int64_t ii = 0; ii < w1; ii++) {
          const int64_t i = i0 + ii;
          const row_sum *A = &rs1[i];
          const double sij = s[ii + jj * r1], tt = A->t * B->t, ab = A->max + B->max;
          double lc, ld;
          if (!(sij >= COLOC_UNDERFLOW)) {
            lc = lse_sum(l1 + i, ld1, l2 + j, ld2, m);
            ld = ab + log(tt - exp(lc - ab)); /* exp(lc - ab) < ~1e-250 << tt */
            if (n_exact_out) n_exact_out[0]++;
          } else {
            lc = ab + log(sij);
            if (sij > COLOC_CANCEL * tt) {
              ld = lse_offdiag(l1 + i, ld1, l2 + j, ld2, m, B, v);
              if (n_exact_out) n_exact_out[1]++;
            } else {
              ld = ab + log(tt - sij);
            }
          }
          double lh[5], pp[5];
          lh[0] = 0.0;
          lh[1] = lp1 + A->max + log(A->t);
          lh[2] = lp2 + B->max + log(B->t);
          lh[3] = lp1 + lp2 + ld;
          lh[4] = lp12 + lc;
          posteriors(lh, pp);
          const int64_t cell = i + j * n1;
          for (int h = 0; h < 5; h++) {
            pp_out[cell + h * plane] = pp[h];
            if (lh_out) lh_out[cell + h * plane] = lh[h];
          }
        }
      }
      fm_ctl_progress(ctl, (double)i0 * (double)n2 + (double)(j0 + w2) * (double)w1, total);
    }
  }
  st = FM_OK;
fail:
  free(rs1);
  free(rs2);
  free(e1);
  free(e2);
  free(s);
  free(v);
  return st;
}
