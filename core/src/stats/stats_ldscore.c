/* stats_ldscore.c: LD scores of a band (fm_stats_ldscore.h).
 *
 * One pass over the band's columns; each column's sum is its own (storage
 * order, double accumulator), so blocks only bound the work between cancel
 * polls. The layout is checked as it is read (colptr monotone, values
 * finite and within [-1, 1]); row indices are not read at all, since the
 * score of a column does not depend on which rows its entries sit in. */
#include "fm/fm_stats_ldscore.h"

#include <math.h>

/* Stored values per cancel poll: about a millisecond of work. */
#define LDSCORE_BLOCK_VALUES ((int64_t)1 << 20)

fm_status fm_stats_ldscore(const fm_band *b, int64_t n_samples, double *scores_out,
                           const fm_ctl *ctl, fm_err *err) {
  fm_err_clear(err);
  if (!b) return fm_err_set(err, FM_EARG, "fm_stats_ldscore: band is NULL");
  if (b->n < 0) return fm_err_set(err, FM_EARG, "fm_stats_ldscore: n = %lld is negative",
                                  (long long)b->n);
  if (n_samples < 0 || n_samples == 1 || n_samples == 2)
    return fm_err_set(err, FM_EARG,
                      "fm_stats_ldscore: n_samples = %lld (0 for plain r^2, else above 2)",
                      (long long)n_samples);
  if (b->n == 0) return FM_OK;
  if (!scores_out) return fm_err_set(err, FM_EARG, "fm_stats_ldscore: scores_out is NULL");
  if (!b->colptr || (!b->values && b->colptr[b->n] > 0))
    return fm_err_set(err, FM_EARG, "fm_stats_ldscore: band colptr or values is NULL");
  if (b->dtype != FM_BAND_F64 && b->dtype != FM_BAND_F32)
    return fm_err_set(err, FM_EARG, "fm_stats_ldscore: band dtype %d is unknown", (int)b->dtype);
  if (b->colptr[0] != 0)
    return fm_err_set(err, FM_EARG, "fm_stats_ldscore: colptr[0] = %lld, not 0",
                      (long long)b->colptr[0]);
  /* r^2 - (1 - r^2)/(n - 2) = r^2 (1 + a) - a with a = 1/(n - 2) */
  const double a = n_samples > 2 ? 1.0 / (double)(n_samples - 2) : 0.0;
  int64_t since_poll = 0;
  for (int64_t j = 0; j < b->n; j++) {
    const int64_t k0 = b->colptr[j], k1 = b->colptr[j + 1];
    if (k1 < k0)
      return fm_err_set(err, FM_EARG, "fm_stats_ldscore: colptr decreases at column %lld",
                        (long long)j);
    double s = 0.0;
    for (int64_t k = k0; k < k1; k++) {
      const double r = fm_band_value(b, k);
      if (!(fabs(r) <= 1.0))
        return fm_err_set(err, FM_EARG,
                          "fm_stats_ldscore: value %lld of column %lld is %g, not a correlation",
                          (long long)(k - k0), (long long)j, r);
      s += a > 0 ? r * r * (1.0 + a) - a : r * r;
    }
    scores_out[j] = s;
    since_poll += k1 - k0 + 1;
    if (since_poll >= LDSCORE_BLOCK_VALUES && j + 1 < b->n) {
      since_poll = 0;
      if (fm_ctl_cancelled(ctl))
        return fm_err_set(err, FM_ECANCELLED, "fm_stats_ldscore: cancelled after column %lld",
                          (long long)j + 1);
      fm_ctl_progress(ctl, (double)(j + 1), (double)b->n);
    }
  }
  fm_ctl_progress(ctl, (double)b->n, (double)b->n);
  return FM_OK;
}
