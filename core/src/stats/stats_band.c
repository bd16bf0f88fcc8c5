/* stats_band.c: products with a banded symmetric matrix (fm_band.h).
 *
 * y_i = sum_r R[r, i] b_r reads column i of R once for all k right-hand
 * sides: the band streams in order and each output is one thread's dot
 * product, so the bits do not depend on the thread count. Columns go to
 * threads in runs of 256 (consecutive columns share pages and cache lines
 * of the band). A band in a file mapping larger than the caller's memory
 * budget has its pages dropped as it is read; a smaller one stays resident
 * between products. Workers read the band: a band in a runtime file truncated
 * from outside would fault there, so the R side holds its runtime open. */
#include "fm/fm_band.h"

#include "stats_par.h"
#include "base/pages.h"

typedef long long ll;

#define BAND_RUN 256     /* columns per work item */
#define BAND_STRIPE 4096 /* columns between cancel polls and page drops */

typedef struct band_job {
  const fm_band *b;
  const double *B;
  double *Y;
  int64_t k, ldb, ldy, c0, c1;
} band_job;

static void band_run(void *ud, int64_t item, int t) {
  (void)t;
  const band_job *j = ud;
  const fm_band *b = j->b;
  const int64_t i0 = j->c0 + item * BAND_RUN;
  const int64_t i1 = i0 + BAND_RUN < j->c1 ? i0 + BAND_RUN : j->c1;
  for (int64_t i = i0; i < i1; i++) {
    const int64_t p0 = b->colptr[i], p1 = b->colptr[i + 1];
    const int32_t *ri = b->rowidx;
    for (int64_t c = 0; c < j->k; c++) {
      const double *x = j->B + c * j->ldb;
      double s = 0;
      if (b->dtype == FM_BAND_F32) {
        const float *v = b->values;
        for (int64_t q = p0; q < p1; q++) s += (double)v[q] * x[ri[q]];
      } else {
        const double *v = b->values;
        for (int64_t q = p0; q < p1; q++) s += v[q] * x[ri[q]];
      }
      j->Y[i + c * j->ldy] = s;
    }
  }
}

uint64_t fm_band_bytes(const fm_band *b) {
  if (!b || b->n <= 0 || !b->colptr || b->colptr[b->n] <= 0) return 0;
  return (uint64_t)b->colptr[b->n] * (b->dtype == FM_BAND_F32 ? 8u : 12u);
}

uint64_t fm_band_budget_auto(void) {
  const uint64_t phys = fm_phys_mem_bytes();
  return phys ? phys / 4 : (uint64_t)1 << 30;
}

fm_status fm_band_matmul(const fm_band *b, const double *B, int64_t k, int64_t ldb, double *Y,
                         int64_t ldy, uint64_t budget, const fm_ctl *ctl, fm_err *err) {
  if (!b) return fm_err_set(err, FM_EARG, "fm_band_matmul: b must not be NULL");
  const int64_t n = b->n;
  if (n < 0 || k < 0) return fm_err_set(err, FM_EARG, "fm_band_matmul: negative size");
  if (n == 0 || k == 0) return FM_OK;
  if (!b->colptr || !b->rowidx || !b->values || !B || !Y)
    return fm_err_set(err, FM_EARG, "fm_band_matmul: the band, B and Y must not be NULL");
  if (ldb < n || ldy < n)
    return fm_err_set(err, FM_EARG, "fm_band_matmul: ldb (%lld) and ldy (%lld) must be >= %lld",
                      (ll)ldb, (ll)ldy, (ll)n);
  const size_t vb = b->dtype == FM_BAND_F32 ? 4 : 8;
  const int nt = fm_threads(ctl);
  /* drop pages only when the band would not stay resident within the budget */
  if (budget == FM_BAND_BUDGET_AUTO) budget = fm_band_budget_auto();
  const int release = budget != FM_BAND_RESIDENT && fm_band_bytes(b) > budget;
  for (int64_t c0 = 0; c0 < n; c0 += BAND_STRIPE) {
    if (fm_ctl_cancelled(ctl)) return fm_err_set(err, FM_ECANCELLED, "fm_band_matmul: cancelled");
    const int64_t c1 = c0 + BAND_STRIPE < n ? c0 + BAND_STRIPE : n;
    band_job j = {b, B, Y, k, ldb, ldy, c0, c1};
    stats_par_for(band_run, &j, (c1 - c0 + BAND_RUN - 1) / BAND_RUN, nt);
    if (release) {
      fm_pages_release(b->rowidx, (size_t)b->colptr[c0] * 4, (size_t)b->colptr[c1] * 4,
                       FM_PAGES_INWARD, NULL);
      fm_pages_release(b->values, (size_t)b->colptr[c0] * vb, (size_t)b->colptr[c1] * vb,
                       FM_PAGES_INWARD, NULL);
    }
    fm_ctl_progress(ctl, (double)c1, (double)n);
  }
  return FM_OK;
}
