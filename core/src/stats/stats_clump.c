/* stats_clump.c: clumping, LD pruning and the haplotype-frequency r^2
 * (fm_stats_clump.h).
 *
 * Both greedy passes only need r^2 of pairs above a threshold, so they walk
 * the stored entries of one column at a time (rows ascending) and treat a
 * pair that is not stored as r^2 = 0. Each pass is sequential by nature
 * (a claim or removal changes every later decision), so there are no
 * threads; cancel is polled every few thousand columns.
 *
 * 2026-12-03, measured on the 1kg fixture's GWAS of QT: plink 1.9's --clump
 * r^2 is the haplotype-frequency estimate of --r2 dprime (its verbose RSQ
 * is within print rounding of it, and up to 0.1 from --r2's allele-count
 * r^2), so the clumps match plink's only with fm_stats_ld_hap_r2; its TOTAL
 * and bins count the variants above p2 too. plink2's --indep-pairwise
 * matched the rules of the header exactly on the autosomes once MAF ties
 * were exact (a ratio of counts, not 1 - af) and lone constant variants
 * were kept. */
#include "fm/fm_stats_clump.h"

#include <math.h>
#include <stdlib.h>

#define CLUMP_POLL_COLS 4096

/* r^2 of stored value k: the value squared, or the value itself. */
static double entry_r2(const fm_band *b, int values_are_r2, int64_t k) {
  const double v = fm_band_value(b, k);
  return values_are_r2 ? v : v * v;
}

/* Common checks of the band's arrays; column contents are checked as read. */
static fm_status check_band(const fm_band *b, const char *fn, fm_err *err) {
  if (!b) return fm_err_set(err, FM_EARG, "%s: band is NULL", fn);
  if (b->n < 0 || b->n > INT32_MAX)
    return fm_err_set(err, FM_EARG, "%s: n = %lld is out of range", fn, (long long)b->n);
  if (b->n == 0) return FM_OK;
  if (!b->colptr || (b->colptr[b->n] > 0 && (!b->rowidx || !b->values)))
    return fm_err_set(err, FM_EARG, "%s: band colptr, rowidx or values is NULL", fn);
  if (b->dtype != FM_BAND_F64 && b->dtype != FM_BAND_F32)
    return fm_err_set(err, FM_EARG, "%s: band dtype %d is unknown", fn, (int)b->dtype);
  if (b->colptr[0] != 0)
    return fm_err_set(err, FM_EARG, "%s: colptr[0] = %lld, not 0", fn, (long long)b->colptr[0]);
  return FM_OK;
}

/* Entry k of column j must name a row of the matrix and hold a correlation
 * (or an r^2 in [0, 1]). */
static fm_status check_entry(const fm_band *b, int values_are_r2, int64_t j, int64_t k,
                             const char *fn, fm_err *err) {
  const int32_t i = b->rowidx[k];
  if (i < 0 || i >= b->n)
    return fm_err_set(err, FM_EARG, "%s: row index %d of column %lld is outside 0..%lld", fn,
                      (int)i, (long long)j, (long long)b->n - 1);
  const double v = fm_band_value(b, k);
  if (!(fabs(v) <= 1.0) || (values_are_r2 && v < 0))
    return fm_err_set(err, FM_EARG, "%s: value %g of column %lld is not a%s", fn, v,
                      (long long)j, values_are_r2 ? "n r^2 in [0, 1]" : " correlation");
  return FM_OK;
}

static fm_status check_colptr(const fm_band *b, int64_t j, const char *fn, fm_err *err) {
  if (b->colptr[j + 1] < b->colptr[j])
    return fm_err_set(err, FM_EARG, "%s: colptr decreases at column %lld", fn, (long long)j);
  return FM_OK;
}

/* ---- clumping ---- */

typedef struct cand {
  double p;
  int64_t j;
} cand;

/* Ascending p, ties in variant order: a total order, so qsort's result does
 * not depend on its implementation. */
static int cand_cmp(const void *x, const void *y) {
  const cand *a = x, *b = y;
  if (a->p != b->p) return a->p < b->p ? -1 : 1;
  return (a->j > b->j) - (a->j < b->j);
}

/* plink's p-value bin of a counted variant: 1 NSIG .. 5 S0001 (column k of
 * counts_out; column 0 is TOTAL). */
static int p_bin(double p) {
  return p > 0.05 ? 1 : p > 0.01 ? 2 : p > 0.001 ? 3 : p > 1e-4 ? 4 : 5;
}

fm_status fm_stats_clump(const fm_band *b, int values_are_r2, const double *p,
                         const int32_t *chr, const double *pos, const fm_clump_opts *opts,
                         int32_t *clump_out, int64_t *index_out, int32_t *counts_out,
                         int64_t *n_index_out, const fm_ctl *ctl, fm_err *err) {
  static const char fn[] = "fm_stats_clump";
  fm_err_clear(err);
  if (n_index_out) *n_index_out = 0;
  fm_status st = check_band(b, fn, err);
  if (st != FM_OK) return st;
  if (!opts || !n_index_out) return fm_err_set(err, FM_EARG, "%s: opts or n_index_out is NULL", fn);
  if (!(opts->p1 > 0 && opts->p1 <= 1) || !(opts->p2 >= opts->p1 && opts->p2 <= 1))
    return fm_err_set(err, FM_EARG, "%s: p1 = %g and p2 = %g must satisfy 0 < p1 <= p2 <= 1", fn,
                      opts->p1, opts->p2);
  if (!(opts->r2 >= 0 && opts->r2 <= 1))
    return fm_err_set(err, FM_EARG, "%s: r2 = %g is outside [0, 1]", fn, opts->r2);
  if (!(opts->window_bp >= 0))
    return fm_err_set(err, FM_EARG, "%s: window_bp = %g is not a non-negative number", fn,
                      opts->window_bp);
  const int64_t n = b->n;
  if (n == 0) return FM_OK;
  if (!p || !chr || !pos || !clump_out)
    return fm_err_set(err, FM_EARG, "%s: p, chr, pos or clump_out is NULL", fn);
  int64_t n_cand = 0;
  for (int64_t j = 0; j < n; j++) {
    clump_out[j] = -1;
    if (isnan(p[j])) continue;
    if (!(p[j] >= 0 && p[j] <= 1))
      return fm_err_set(err, FM_EARG, "%s: p of variant %lld is %g, not in [0, 1]", fn,
                        (long long)j, p[j]);
    if (p[j] <= opts->p1) n_cand++;
  }
  if (n_cand > 0 && (!index_out || !counts_out))
    return fm_err_set(err, FM_EARG, "%s: index_out or counts_out is NULL", fn);
  for (int64_t t = 0; t < 6 * n_cand; t++) counts_out[t] = 0;
  cand *c = malloc((size_t)(n_cand ? n_cand : 1) * sizeof *c);
  if (!c) return fm_err_set(err, FM_ENOMEM, "%s: no memory for %lld candidates", fn,
                            (long long)n_cand);
  for (int64_t j = 0, t = 0; j < n; j++)
    if (p[j] <= opts->p1) c[t++] = (cand){p[j], j};
  qsort(c, (size_t)n_cand, sizeof *c, cand_cmp);
  int64_t n_index = 0;
  for (int64_t t = 0; t < n_cand; t++) {
    const int64_t i = c[t].j;
    if (t % CLUMP_POLL_COLS == CLUMP_POLL_COLS - 1) {
      if (fm_ctl_cancelled(ctl)) {
        st = fm_err_set(err, FM_ECANCELLED, "%s: cancelled after %lld candidates", fn,
                        (long long)t);
        goto fail;
      }
      fm_ctl_progress(ctl, (double)t, (double)n_cand);
    }
    if (clump_out[i] >= 0) continue; /* claimed by a stronger index variant */
    clump_out[i] = (int32_t)i;
    index_out[n_index] = i;
    int32_t *cnt = counts_out + n_index;
    n_index++;
    if ((st = check_colptr(b, i, fn, err)) != FM_OK) goto fail;
    for (int64_t k = b->colptr[i]; k < b->colptr[i + 1]; k++) {
      if ((st = check_entry(b, values_are_r2, i, k, fn, err)) != FM_OK) goto fail;
      const int32_t j = b->rowidx[k];
      if (j == i || isnan(p[j]) || chr[j] != chr[i] ||
          !(fabs(pos[j] - pos[i]) <= opts->window_bp) ||
          !(entry_r2(b, values_are_r2, k) >= opts->r2))
        continue;
      if (p[j] <= opts->p2) {
        if (clump_out[j] >= 0) continue; /* in an earlier clump: not counted again */
        clump_out[j] = (int32_t)i;
      }
      cnt[0] += 1;
      cnt[p_bin(p[j]) * n_cand] += 1;
    }
  }
  *n_index_out = n_index;
  fm_ctl_progress(ctl, (double)n_cand, (double)n_cand);
fail:
  free(c);
  return st;
}

/* ---- pruning ---- */

/* One window [s, e): plink's greedy pass over the kept variants. A window
 * of two or more variants first drops its constant variants (their r^2
 * with anything is 0, so when they go does not change other decisions); a
 * constant variant alone in every window holding it stays, as in plink2. */
static fm_status prune_window(const fm_band *b, int values_are_r2, const double *maf,
                              const uint8_t *is_constant, int64_t s, int64_t e, double r2,
                              uint8_t *keep, fm_err *err) {
  static const char fn[] = "fm_stats_prune";
  if (is_constant && e - s >= 2)
    for (int64_t i = s; i < e; i++)
      if (is_constant[i]) keep[i] = 0;
  for (int64_t i = s; i < e; i++) {
    if (!keep[i]) continue;
    fm_status st = check_colptr(b, i, fn, err);
    if (st != FM_OK) return st;
    for (int64_t k = b->colptr[i]; k < b->colptr[i + 1]; k++) {
      if ((st = check_entry(b, values_are_r2, i, k, fn, err)) != FM_OK) return st;
      const int64_t j = b->rowidx[k];
      if (j <= i) continue;
      if (j >= e) break; /* rows ascend: the rest lie beyond the window */
      if (!keep[j] || !(entry_r2(b, values_are_r2, k) > r2)) continue;
      if (maf[i] < maf[j]) {
        keep[i] = 0;
        break;
      }
      keep[j] = 0;
    }
  }
  return FM_OK;
}

fm_status fm_stats_prune(const fm_band *b, int values_are_r2, const double *maf,
                         const int32_t *chr, const int64_t *win_end, int64_t step, double r2,
                         const uint8_t *is_constant, uint8_t *keep_out, int64_t *n_kept_out,
                         const fm_ctl *ctl, fm_err *err) {
  static const char fn[] = "fm_stats_prune";
  fm_err_clear(err);
  if (n_kept_out) *n_kept_out = 0;
  fm_status st = check_band(b, fn, err);
  if (st != FM_OK) return st;
  if (!n_kept_out) return fm_err_set(err, FM_EARG, "%s: n_kept_out is NULL", fn);
  if (step < 1) return fm_err_set(err, FM_EARG, "%s: step = %lld is below 1", fn, (long long)step);
  if (!(r2 >= 0 && r2 <= 1))
    return fm_err_set(err, FM_EARG, "%s: r2 = %g is outside [0, 1]", fn, r2);
  const int64_t n = b->n;
  if (n == 0) return FM_OK;
  if (!maf || !chr || !win_end || !keep_out)
    return fm_err_set(err, FM_EARG, "%s: maf, chr, win_end or keep_out is NULL", fn);
  for (int64_t j = 0; j < n; j++) keep_out[j] = 1;
  int64_t cols_done = 0;
  for (int64_t c0 = 0; c0 < n;) {
    int64_t c1 = c0 + 1; /* chromosome [c0, c1) */
    while (c1 < n && chr[c1] == chr[c0]) c1++;
    for (int64_t j = c1; j < n; j++)
      if (chr[j] == chr[c0])
        return fm_err_set(err, FM_EARG,
                          "%s: variant %lld is on the chromosome of variant %lld but not next "
                          "to it: chromosomes must be grouped", fn, (long long)j, (long long)c0);
    for (int64_t s = c0; s < c1; s += step) {
      const int64_t e = win_end[s];
      if (e <= s || e > c1)
        return fm_err_set(err, FM_EARG,
                          "%s: win_end[%lld] = %lld is outside %lld..%lld (its chromosome)", fn,
                          (long long)s, (long long)e, (long long)s + 1, (long long)c1);
      st = prune_window(b, values_are_r2, maf, is_constant, s, e, r2, keep_out, err);
      if (st != FM_OK) return st;
      if (e == c1) break; /* the window has reached the chromosome's end */
      if (++cols_done % CLUMP_POLL_COLS == 0) {
        if (fm_ctl_cancelled(ctl))
          return fm_err_set(err, FM_ECANCELLED, "%s: cancelled at variant %lld", fn,
                            (long long)s);
        fm_ctl_progress(ctl, (double)s, (double)n);
      }
    }
    c0 = c1;
  }
  int64_t kept = 0;
  for (int64_t j = 0; j < n; j++) kept += keep_out[j];
  *n_kept_out = kept;
  fm_ctl_progress(ctl, (double)n, (double)n);
  return FM_OK;
}

/* ---- haplotype-frequency r^2 ---- */

/* x log(y), with 0 log(anything) = 0 (an empty class adds nothing). */
static double xlogy(double x, double y) { return x > 0 ? x * log(y) : 0.0; }

/* Log-likelihood of f_AB = f given the known haplotype counts x[4] (AB,
 * Ab, aB, ab) and h double heterozygotes. The four frequencies are taken
 * from y = N f - x_AB, the double heterozygotes counted as AB/ab, clamped to
 * [0, h]: each is then a count over N, never below 0 by rounding (a
 * boundary MLE, where some frequency is 0, is common). */
static double hap_freqs(double f, const double x[4], double h, double N, double fr[4]) {
  double y = N * f - x[0];
  y = y < 0 ? 0 : (y > h ? h : y);
  fr[0] = (x[0] + y) / N;
  fr[1] = (x[1] + h - y) / N;
  fr[2] = (x[2] + h - y) / N;
  fr[3] = (x[3] + y) / N;
  return xlogy(x[0], fr[0]) + xlogy(x[1], fr[1]) + xlogy(x[2], fr[2]) + xlogy(x[3], fr[3]) +
         xlogy(h, fr[0] * fr[3] + fr[1] * fr[2]);
}

static double cubic(const double a[4], double f) {
  return ((a[3] * f + a[2]) * f + a[1]) * f + a[0];
}

/* A root of the cubic in [lo, hi], where its sign changes, by bisection to
 * the last bit. */
static double bisect(const double a[4], double lo, double hi) {
  double flo = cubic(a, lo);
  for (int it = 0; it < 200; it++) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    const double fm = cubic(a, mid);
    if ((fm < 0) == (flo < 0)) {
      lo = mid;
      flo = fm;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

/* r^2 from the 3 x 3 table t[ga][gb] of genotype pairs (counts of A, B). */
static double hap_r2_table(double t[3][3]) {
  double n = 0;
  for (int u = 0; u < 3; u++)
    for (int v = 0; v < 3; v++) n += t[u][v];
  if (n <= 0) return 0.0;
  const double N = 2 * n;
  /* haplotypes whose phase the genotypes fix */
  const double x[4] = {2 * t[2][2] + t[2][1] + t[1][2], 2 * t[2][0] + t[2][1] + t[1][0],
                       2 * t[0][2] + t[0][1] + t[1][2], 2 * t[0][0] + t[0][1] + t[1][0]};
  const double h = t[1][1];
  const double pa = (x[0] + x[1] + h) / N, pb = (x[0] + x[2] + h) / N;
  const double den = pa * (1 - pa) * pb * (1 - pb);
  if (!(den > 0)) return 0.0;
  /* f_AB lies in [x_AB / N, (x_AB + h) / N]; its likelihood's stationary
   * points solve (N f - x_AB) S(f) = h f f_ab with S = f f_ab + f_Ab f_aB,
   * a cubic a3 f^3 + a2 f^2 + a1 f + a0. */
  const double lo = x[0] / N, hi = (x[0] + h) / N;
  double best = lo;
  if (h > 0) {
    const double c = 1 - 2 * pa - 2 * pb;
    const double a[4] = {-x[0] * pa * pb, N * pa * pb - x[0] * c - h * (1 - pa - pb),
                         N * c - 2 * x[0] - h, 2 * N};
    /* split [lo, hi] at the stationary points of the cubic, then bisect
     * each monotone piece whose ends differ in sign */
    double cuts[4] = {lo, hi, hi, hi};
    int nc = 1;
    const double qa = 3 * a[3], qb = 2 * a[2], qc = a[1], disc = qb * qb - 4 * qa * qc;
    if (disc > 0) {
      const double sq = sqrt(disc);
      double r1 = (-qb - sq) / (2 * qa), r2 = (-qb + sq) / (2 * qa);
      if (r1 > r2) {
        const double tmp = r1;
        r1 = r2;
        r2 = tmp;
      }
      if (r1 > lo && r1 < hi) cuts[nc++] = r1;
      if (r2 > lo && r2 < hi) cuts[nc++] = r2;
    }
    cuts[nc++] = hi;
    double cand_f[6] = {lo, hi};
    int ncand = 2;
    for (int s = 0; s + 1 < nc; s++) {
      const double u = cuts[s], w = cuts[s + 1];
      const double cu = cubic(a, u), cw = cubic(a, w);
      if (cu == 0) cand_f[ncand++] = u;
      else if ((cu < 0) != (cw < 0)) cand_f[ncand++] = bisect(a, u, w);
    }
    double best_ll = -INFINITY, fr[4];
    for (int s = 0; s < ncand; s++) {
      const double ll = hap_freqs(cand_f[s], x, h, N, fr);
      if (ll > best_ll) {
        best_ll = ll;
        best = fr[0];
      }
    }
  }
  const double d = best - pa * pb;
  const double r2 = d * d / den;
  return r2 > 1 ? 1.0 : r2;
}

fm_status fm_stats_ld_hap_r2(const double *ga, const double *G, int64_t n_samples, int64_t k,
                             int64_t ldg, double *r2_out, fm_err *err) {
  static const char fn[] = "fm_stats_ld_hap_r2";
  fm_err_clear(err);
  if (n_samples < 0 || k < 0)
    return fm_err_set(err, FM_EARG, "%s: n_samples = %lld and k = %lld must be non-negative", fn,
                      (long long)n_samples, (long long)k);
  if (k == 0) return FM_OK;
  if (!r2_out || (n_samples > 0 && (!ga || !G)))
    return fm_err_set(err, FM_EARG, "%s: ga, G or r2_out is NULL", fn);
  if (ldg < n_samples)
    return fm_err_set(err, FM_EARG, "%s: ldg = %lld is below n_samples = %lld", fn,
                      (long long)ldg, (long long)n_samples);
  for (int64_t s = 0; s < n_samples; s++)
    if (!isnan(ga[s]) && ga[s] != 0 && ga[s] != 1 && ga[s] != 2)
      return fm_err_set(err, FM_EARG, "%s: value %g of sample %lld of variant a is not 0, 1, 2 "
                        "or NaN", fn, ga[s], (long long)s);
  for (int64_t c = 0; c < k; c++) {
    const double *gb = G + c * ldg;
    double t[3][3] = {{0}};
    for (int64_t s = 0; s < n_samples; s++) {
      const double u = ga[s], v = gb[s];
      if (isnan(v)) continue;
      if (v != 0 && v != 1 && v != 2)
        return fm_err_set(err, FM_EARG, "%s: value %g of sample %lld of column %lld is not 0, "
                          "1, 2 or NaN", fn, v, (long long)s, (long long)c);
      if (isnan(u)) continue;
      t[(int)u][(int)v] += 1;
    }
    r2_out[c] = hap_r2_table(t);
  }
  return FM_OK;
}
