/* fmt.c: the reader interface shared by every genotype format (fm_fmt.h). */
#include "fm/fm_fmt.h"

#include <math.h>
#include <stdlib.h>

fm_status fm_reader_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  if (!r || !r->ops || !rec) return fm_err_set(err, FM_EARG, "fm_reader_next: reader and record must not be NULL");
  rec->bed2 = NULL;
  return r->ops->next(r, rec, err);
}

void fm_reader_close(fm_reader *r) {
  if (!r) return;
  if (r->sample_ids) {
    for (int64_t i = 0; i < r->info.n_samples; i++) free(r->sample_ids[i]);
    free(r->sample_ids);
    r->sample_ids = NULL;
  }
  if (r->ops && r->ops->close) r->ops->close(r); /* frees impl */
  free(r);
}

/* ---- plink2's hardcall rule (fm_fmt.h) ----------------------------------- */

uint32_t fm_dosage_units(double d) {
  if (!(d >= 0.0 && d <= 2.5)) return UINT32_MAX;
  return (uint32_t)floor(d * (double)FM_DOSAGE_UNITS + 0.5); /* d * 16384 is exact */
}

int8_t fm_hardcall_from_dosage(double d) {
  const uint32_t u = fm_dosage_units(d);
  return u == UINT32_MAX ? FM_GT_MISSING : fm_hardcall_from_units(u);
}

uint32_t fm_dosage_units_ratio(uint64_t num, uint64_t den) {
  const uint64_t x = num * FM_DOSAGE_UNITS, q = x / den, r = x % den;
  return (uint32_t)(q + (2 * r > den || (2 * r == den && (q & 1))));
}

/* Smallest num in [0, 2 den + 1] whose units reach `units` (units is never
 * above fm_dosage_units_ratio(2 den + 1, den)). */
static uint64_t first_num_at(uint64_t den, uint64_t units) {
  uint64_t lo = 0, hi = 2 * den + 1;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (fm_dosage_units_ratio(mid, den) >= units) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

void fm_hardcall_bounds(uint64_t den, uint64_t bound[4]) {
  bound[0] = first_num_at(den, FM_HARDCALL_MAX_DIST + 1);
  bound[1] = first_num_at(den, FM_DOSAGE_UNITS - FM_HARDCALL_MAX_DIST);
  bound[2] = first_num_at(den, FM_DOSAGE_UNITS + FM_HARDCALL_MAX_DIST + 1);
  bound[3] = first_num_at(den, 2 * FM_DOSAGE_UNITS - FM_HARDCALL_MAX_DIST);
}
