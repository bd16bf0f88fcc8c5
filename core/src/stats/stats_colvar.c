/* colvar.c: streamed column means and variances (fm_stats_colvar.h).
 *
 * Every column is reduced on its own, so the result never depends on how the
 * columns are grouped into blocks; blocks exist only to poll cancellation and
 * report progress at a bounded interval.
 *
 *   F64, I32  corrected two-pass (Chan, Golub and LeVeque 1983, eq. 1.7):
 *             m = sum(x)/n; then d = x - m, mean = m + sum(d)/n,
 *             ss = sum(d^2) - sum(d)^2/n.  (The mean refinement is R's mean().)
 *   BED2      exact from the genotype counts of fm_codec_bed2_col_counts.
 *   DOS8      exact from a 255-bin histogram of the observed bytes.
 *   EXT       (codecs without a path of their own) the F64 two-pass on the
 *             doubles fm_panel_decode gives, accumulated row by row in the
 *             same order as for F64 storage, so the result is bit-identical
 *             to F64 storage of the decoded values whatever the panel shape;
 *             a column taller than one panel is decoded twice (once per pass)
 *             rather than held whole.
 *
 * Design note (2024-05): for the counted codecs, values are small integers q
 * (0..2 for BED2; 0..254 for DOS8, dosage q/127) so S1 = sum q and S2 = sum q^2
 * are exact in int64 and n*S2 - S1^2 = n * sum (q - mean)^2 is an exact integer:
 * no cancellation happens, unlike the floating one-pass formula STYLE.md bans.
 * When n*S2 could overflow int64 we fall back to a two-pass over the histogram
 * in double (relative error a few ulp). Both give the variance of the decoded
 * (quantized) values, which is what fm_panel_decode would hand to a dense pass. */
#define _POSIX_C_SOURCE 200809L /* fm_fault.h */
#include "fm/fm_stats_colvar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_fault.h"

/* Target decoded bytes per block: polls stay far below 100 ms apart. The
 * panel budget (forced tiny by tests) can make blocks smaller still. */
#define COLVAR_BLOCK_BYTES ((size_t)8 << 20)

static int64_t stored_col(const fm_mat *x, int64_t j) { return x->col_index ? x->col_index[j] : j; }

static void put(double *mean_out, double *var_out, int64_t *n_obs_out, int64_t j, double mean,
                double var, int64_t n_obs) {
  if (mean_out) mean_out[j] = n_obs > 0 ? mean : NAN;
  if (var_out) var_out[j] = n_obs > 1 ? var : NAN;
  if (n_obs_out) n_obs_out[j] = n_obs;
}

static void col_f64(const unsigned char *col, int64_t n, double *mean, double *var, int64_t *nobs) {
  double s = 0.0;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    double v;
    memcpy(&v, col + 8 * i, sizeof v); /* the stride need not keep doubles aligned */
    if (!isnan(v)) {
      s += v;
      m++;
    }
  }
  *nobs = m;
  if (m == 0) return;
  const double mu = s / (double)m;
  if (!isfinite(mu)) { /* an infinite value: mean +-Inf (or NaN for both), as R's mean() */
    *mean = mu;
    *var = NAN;
    return;
  }
  double sd = 0.0, ss = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double v;
    memcpy(&v, col + 8 * i, sizeof v);
    if (!isnan(v)) {
      const double d = v - mu;
      sd += d;
      ss += d * d;
    }
  }
  *mean = mu + sd / (double)m;
  *var = m > 1 ? (ss - sd * sd / (double)m) / (double)(m - 1) : NAN;
}

static void col_i32(const unsigned char *col, int64_t n, double *mean, double *var, int64_t *nobs) {
  int64_t s = 0, m = 0; /* exact: |s| < 2^31 * n */
  for (int64_t i = 0; i < n; i++) {
    int32_t v;
    memcpy(&v, col + 4 * i, sizeof v);
    if (v != INT32_MIN) {
      s += v;
      m++;
    }
  }
  *nobs = m;
  if (m == 0) return;
  const double mu = (double)s / (double)m;
  double sd = 0.0, ss = 0.0;
  for (int64_t i = 0; i < n; i++) {
    int32_t v;
    memcpy(&v, col + 4 * i, sizeof v);
    if (v != INT32_MIN) {
      const double d = (double)v - mu;
      sd += d;
      ss += d * d;
    }
  }
  *mean = mu + sd / (double)m;
  *var = m > 1 ? (ss - sd * sd / (double)m) / (double)(m - 1) : NAN;
}

/* Mean and variance of integer codes q = 0..n_bins-1 with counts h[q], in code
 * units (divide by the code step afterwards). See the design note above. */
static void hist_moments(const int64_t *h, int n_bins, double *mean, double *var, int64_t *nobs) {
  int64_t m = 0, s1 = 0;
  for (int q = 0; q < n_bins; q++) {
    m += h[q];
    s1 += (int64_t)q * h[q];
  }
  *nobs = m;
  if (m == 0) return;
  *mean = (double)s1 / (double)m;
  if (m < 2) {
    *var = NAN;
    return;
  }
  const int64_t qmax = n_bins - 1;
  /* n*S2 <= qmax^2 * m^2 must stay below 2^63 for the exact path. */
  const double bound = (double)qmax * (double)qmax * (double)m * (double)m;
  if (bound < 9.0e18) {
    int64_t s2 = 0;
    for (int q = 0; q < n_bins; q++) s2 += (int64_t)q * q * h[q];
    const int64_t num = m * s2 - s1 * s1; /* = m * sum (q - mean)^2 >= 0, exact */
    *var = (double)num / ((double)m * (double)(m - 1));
  } else {
    const double mu = *mean;
    double sd = 0.0, ss = 0.0;
    for (int q = 0; q < n_bins; q++) {
      const double d = (double)q - mu, c = (double)h[q];
      sd += c * d;
      ss += c * d * d;
    }
    *var = (ss - sd * sd / (double)m) / (double)(m - 1);
  }
}

/* The generic path (EXT): per block of columns, the two passes of col_f64
 * over decoded panels. Row tiles are visited in row order in both passes,
 * so each column's sums run over its values in the same order as col_f64
 * on a dense column: the panel plan changes nothing but the work between
 * polls. Cancellation is polled before each panel decode. */
static fm_status colvar_decoded(const fm_mat *x, double *mean_out, double *var_out,
                                int64_t *n_obs_out, size_t budget, const fm_ctl *ctl,
                                fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  if (n == 0) {
    for (int64_t j = 0; j < p; j++) put(mean_out, var_out, n_obs_out, j, NAN, NAN, 0);
    if (p > 0) fm_ctl_progress(ctl, (double)p, (double)p);
    return FM_OK;
  }
  const fm_panel_plan plan = fm_panel_plan_for(x, budget);
  const int64_t rows = plan.rows < n ? plan.rows : n, cols = plan.cols < p ? plan.cols : p;
  const int one_tile = rows >= n;
  fm_status st = FM_OK;
  double *panel = malloc((size_t)rows * (size_t)cols * sizeof *panel);
  double *s = malloc((size_t)cols * 4 * sizeof *s); /* s, mu, sd, ss per column */
  int64_t *m = malloc((size_t)cols * sizeof *m);
  if (!panel || !s || !m) {
    st = fm_err_set(err, FM_ENOMEM, "fm_stats_colvar: cannot allocate a %lld x %lld panel",
                    (long long)rows, (long long)cols);
    goto fail;
  }
  double *mu = s + cols, *sd = s + 2 * cols, *ss = s + 3 * cols;
  for (int64_t c0 = 0; c0 < p; c0 += cols) {
    const int64_t nb = c0 + cols <= p ? cols : p - c0;
    for (int64_t b = 0; b < nb; b++) {
      s[b] = sd[b] = ss[b] = 0.0;
      m[b] = 0;
    }
    for (int pass = 1; pass <= 2; pass++) {
      if (pass == 2) {
        for (int64_t b = 0; b < nb; b++) mu[b] = m[b] > 0 ? s[b] / (double)m[b] : 0.0;
      }
      for (int64_t r0 = 0; r0 < n; r0 += rows) {
        const int64_t nr = r0 + rows <= n ? rows : n - r0;
        if (pass == 1 || !one_tile) {
          if (fm_ctl_cancelled(ctl)) {
            st = fm_err_set(err, FM_ECANCELLED,
                            "fm_stats_colvar: cancelled after %lld of %lld columns",
                            (long long)c0, (long long)p);
            goto fail;
          }
          st = fm_panel_decode(x, NULL, r0, nr, c0, nb, panel, nr, err);
          if (st != FM_OK) goto fail;
        }
        for (int64_t b = 0; b < nb; b++) {
          const double *col = panel + b * nr;
          if (pass == 1) {
            for (int64_t i = 0; i < nr; i++)
              if (!isnan(col[i])) {
                s[b] += col[i];
                m[b]++;
              }
          } else {
            for (int64_t i = 0; i < nr; i++)
              if (!isnan(col[i])) {
                const double d = col[i] - mu[b];
                sd[b] += d;
                ss[b] += d * d;
              }
          }
        }
      }
    }
    for (int64_t b = 0; b < nb; b++) {
      const int64_t k = m[b];
      const int finite = isfinite(mu[b]); /* else as col_f64: mean +-Inf or NaN, var NaN */
      const double mean = k == 0 ? NAN : finite ? mu[b] + sd[b] / (double)k : mu[b];
      const double var =
          k > 1 && finite ? (ss[b] - sd[b] * sd[b] / (double)k) / (double)(k - 1) : NAN;
      put(mean_out, var_out, n_obs_out, c0 + b, mean, var, k);
    }
    fm_ctl_progress(ctl, (double)(c0 + nb), (double)p);
  }
fail:
  free(panel);
  free(s);
  free(m);
  return st;
}

/* Columns [c0, c0 + nb) of the undecoded codecs, read in place. */
static void colvar_block(const fm_mat *x, int64_t c0, int64_t nb, int64_t *cols, int64_t *counts,
                         double *mean_out, double *var_out, int64_t *n_obs_out) {
  const int64_t n = x->n_rows;
  const unsigned char *base = x->data;
  if (x->codec == FM_CODEC_BED2) {
    for (int64_t b = 0; b < nb; b++) cols[b] = stored_col(x, c0 + b);
    if (n > 0)
      fm_codec_bed2_col_counts(base, n, x->col_stride, cols, nb, counts);
    else
      memset(counts, 0, (size_t)nb * 4 * sizeof *counts);
    for (int64_t b = 0; b < nb; b++) {
      double mean = NAN, var = NAN;
      int64_t m = 0;
      hist_moments(counts + 4 * b, 3, &mean, &var, &m); /* bins: 0, 1, 2 copies */
      put(mean_out, var_out, n_obs_out, c0 + b, mean, var, m);
    }
  } else {
    for (int64_t b = 0; b < nb; b++) {
      const int64_t j = c0 + b;
      const unsigned char *col = base ? base + stored_col(x, j) * x->col_stride : NULL;
      double mean = NAN, var = NAN;
      int64_t m = 0;
      if (n > 0) {
        if (x->codec == FM_CODEC_F64) {
          col_f64(col, n, &mean, &var, &m);
        } else if (x->codec == FM_CODEC_I32) {
          col_i32(col, n, &mean, &var, &m);
        } else {
          int64_t h[256] = {0};
          for (int64_t i = 0; i < n; i++) h[col[i]]++;
          hist_moments(h, 255, &mean, &var, &m); /* code 255 (missing) left out */
          mean /= FM_DOS8_STEPS;
          var /= FM_DOS8_STEPS * FM_DOS8_STEPS;
        }
      }
      put(mean_out, var_out, n_obs_out, j, mean, var, m);
    }
  }
}

/* fn(x, c0, nb, ud) over the column blocks [c0, c0 + nb) of x, block
 * columns at a time. Each call runs behind a jump point (fm_fault.h): a
 * SIGBUS reading the mapping (its file truncated from outside) is FM_EIO
 * naming the file, so fn reads in place, allocates nothing and calls no
 * callback; ctl is polled and progress reported between blocks (columns
 * done of x->n_cols), and each block is evicted once consumed (bounded
 * residency on file mappings, fm_panel.h). */
typedef void (*block_fn)(const fm_mat *x, int64_t c0, int64_t nb, void *ud);

static fm_status guarded(block_fn fn, const fm_mat *x, int64_t c0, int64_t nb, void *ud,
                         fm_err *err) {
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) return fm_fault_caught(&j, err);
  fn(x, c0, nb, ud);
  fm_fault_pop(&j);
  return FM_OK;
}

static fm_status each_block(const fm_mat *x, int64_t block, block_fn fn, void *ud,
                            const fm_ctl *ctl, const char *what, fm_err *err) {
  const int64_t p = x->n_cols;
  for (int64_t c0 = 0; c0 < p; c0 += block) {
    if (fm_ctl_cancelled(ctl))
      return fm_err_set(err, FM_ECANCELLED, "%s: cancelled after %lld of %lld columns", what,
                        (long long)c0, (long long)p);
    const int64_t nb = c0 + block <= p ? block : p - c0;
    const fm_status st = guarded(fn, x, c0, nb, ud, err);
    if (st != FM_OK) return st;
    fm_mat_evict_stream(x, c0, nb);
    fm_ctl_progress(ctl, (double)(c0 + nb), (double)p);
  }
  return FM_OK;
}

/* Columns per block: the panel budget (at most COLVAR_BLOCK_BYTES) over the
 * bytes of one column of elem-byte values, at least 1, at most p. */
static int64_t block_cols(const fm_mat *x, size_t elem, const fm_ctl *ctl) {
  size_t target = fm_panel_budget(ctl);
  if (target == 0 || target > COLVAR_BLOCK_BYTES) target = COLVAR_BLOCK_BYTES;
  const double col_bytes = (double)elem * (double)(x->n_rows > 0 ? x->n_rows : 1);
  int64_t block = (int64_t)((double)target / col_bytes);
  if (block < 1) block = 1;
  if (block > x->n_cols) block = x->n_cols > 0 ? x->n_cols : 1;
  return block;
}

typedef struct colvar_job {
  int64_t *cols, *counts;
  double *mean, *var;
  int64_t *n_obs;
} colvar_job;

static void colvar_fn(const fm_mat *x, int64_t c0, int64_t nb, void *ud) {
  colvar_job *o = ud;
  colvar_block(x, c0, nb, o->cols, o->counts, o->mean, o->var, o->n_obs);
}

fm_status fm_stats_colvar(const fm_mat *x, double *mean_out, double *var_out, int64_t *n_obs_out,
                          const fm_ctl *ctl, fm_err *err) {
  int64_t *cols = NULL, *counts = NULL;
  fm_status st = FM_OK;
  if (!x) return fm_err_set(err, FM_EARG, "fm_stats_colvar: x is NULL");
  const int64_t n = x->n_rows, p = x->n_cols;
  if (n < 0 || p < 0)
    return fm_err_set(err, FM_EARG, "fm_stats_colvar: dimensions %lld x %lld are negative",
                      (long long)n, (long long)p);
  if (p > 0 && !mean_out) return fm_err_set(err, FM_EARG, "fm_stats_colvar: mean_out is NULL");
  if (p > 0 && n > 0 && !x->data)
    return fm_err_set(err, FM_EARG, "fm_stats_colvar: x->data is NULL");
  if (x->col_index) {
    for (int64_t j = 0; j < p; j++)
      if (x->col_index[j] < 0)
        return fm_err_set(err, FM_EARG, "fm_stats_colvar: col_index[%lld] = %lld is negative",
                          (long long)j, (long long)x->col_index[j]);
  }
  size_t elem;
  switch (x->codec) {
  case FM_CODEC_F64: elem = 8; break;
  case FM_CODEC_I32: elem = 4; break;
  case FM_CODEC_BED2: elem = 1; break; /* a quarter byte, rounded up: block sizing only */
  case FM_CODEC_DOS8: elem = 1; break;
  case FM_CODEC_EXT: elem = 8; break; /* decoded doubles */
  case FM_CODEC_ALP: elem = 8; break; /* decoded doubles */
  default: return fm_err_set(err, FM_EARG, "fm_stats_colvar: unknown codec id %d", (int)x->codec);
  }
  const int64_t min_stride = fm_mat_min_stride(x->codec, n);
  if (p > 0 && x->col_stride < min_stride)
    return fm_err_set(err, FM_EARG,
                      "fm_stats_colvar: col_stride %lld is below %lld bytes for %lld rows",
                      (long long)x->col_stride, (long long)min_stride, (long long)n);

  size_t target = fm_panel_budget(ctl);
  if (target == 0 || target > COLVAR_BLOCK_BYTES) target = COLVAR_BLOCK_BYTES;
  const int64_t block = block_cols(x, elem, ctl);

  if (x->codec == FM_CODEC_EXT) {
    if (!x->ext || !x->ext->decode)
      return fm_err_set(err, FM_EARG, "fm_stats_colvar: the external codec has no decoder");
    return colvar_decoded(x, mean_out, var_out, n_obs_out, target, ctl, err);
  }
  /* ALP decodes whole vectors of rows; a panel of its doubles is as good as
   * any (the view was checked by fm_mat_init_alp). */
  if (x->codec == FM_CODEC_ALP)
    return colvar_decoded(x, mean_out, var_out, n_obs_out, target, ctl, err);

  if (x->codec == FM_CODEC_BED2) {
    cols = malloc((size_t)block * sizeof *cols);
    counts = malloc((size_t)block * 4 * sizeof *counts);
    if (!cols || !counts) {
      st = fm_err_set(err, FM_ENOMEM, "fm_stats_colvar: cannot allocate %lld column counts",
                      (long long)block);
      goto fail;
    }
  }

  colvar_job o = {cols, counts, mean_out, var_out, n_obs_out};
  st = each_block(x, block, colvar_fn, &o, ctl, "fm_stats_colvar", err);

fail:
  free(cols);
  free(counts);
  return st;
}

typedef struct counts_job {
  int64_t *cols, *counts;
} counts_job;

static void counts_fn(const fm_mat *x, int64_t c0, int64_t nb, void *ud) {
  counts_job *o = ud;
  for (int64_t b = 0; b < nb; b++) o->cols[b] = stored_col(x, c0 + b);
  if (x->n_rows > 0)
    fm_codec_bed2_col_counts(x->data, x->n_rows, x->col_stride, o->cols, nb, o->counts + 4 * c0);
  else
    memset(o->counts + 4 * c0, 0, (size_t)nb * 4 * sizeof *o->counts);
}

fm_status fm_stats_bed2_counts(const fm_mat *x, int64_t *counts_out, const fm_ctl *ctl,
                               fm_err *err) {
  if (!x || x->codec != FM_CODEC_BED2)
    return fm_err_set(err, FM_EARG, "fm_stats_bed2_counts: x must be a BED2 matrix");
  const int64_t p = x->n_cols;
  if (p > 0 && !counts_out) return fm_err_set(err, FM_EARG, "fm_stats_bed2_counts: counts_out is NULL");
  if (p > 0 && x->n_rows > 0 && !x->data)
    return fm_err_set(err, FM_EARG, "fm_stats_bed2_counts: x->data is NULL");
  for (int64_t j = 0; x->col_index && j < p; j++)
    if (x->col_index[j] < 0)
      return fm_err_set(err, FM_EARG, "fm_stats_bed2_counts: col_index[%lld] = %lld is negative",
                        (long long)j, (long long)x->col_index[j]);
  if (p == 0) return FM_OK;
  const int64_t block = block_cols(x, 1, ctl);
  counts_job o = {malloc((size_t)block * sizeof(int64_t)), counts_out};
  if (!o.cols) return fm_err_set(err, FM_ENOMEM, "fm_stats_bed2_counts: cannot allocate a block");
  const fm_status st = each_block(x, block, counts_fn, &o, ctl, "fm_stats_bed2_counts", err);
  free(o.cols);
  return st;
}
