/* codec_dos8.c: one-byte dosages (docs/formats/dos8.md).
 * q = round(d * 127) for d in [0, 2]; 255 is missing; value = q / 127. */
#include "fm/fm_codec_dos8.h"
#include "fm/fm_panel.h"

#include <math.h>

double fm_codec_dos8_value(uint8_t code) {
  return code == FM_DOS8_MISSING ? fm_na_value() : (double)code / FM_DOS8_STEPS;
}

void fm_codec_dos8_lut(double center, double scale, double fill, double lut_out[256]) {
  for (int q = 0; q < FM_DOS8_MISSING; q++) lut_out[q] = ((double)q / FM_DOS8_STEPS - center) * scale;
  for (int q = FM_DOS8_MISSING; q < 256; q++) lut_out[q] = fill;
}

void fm_codec_dos8_decode_col(const uint8_t *col, int64_t n_rows, const double lut[256],
                              double *out) {
  for (int64_t i = 0; i < n_rows; i++) out[i] = lut[col[i]];
}

fm_status fm_codec_dos8_encode(const double *x, int64_t n_rows, int64_t n_cols, int64_t ld,
                               uint8_t *out, int64_t out_ld, fm_err *err) {
  if (n_rows < 0 || n_cols < 0)
    return fm_err_set(err, FM_EARG, "dos8 encode: n_rows (%lld) and n_cols (%lld) must be >= 0",
                      (long long)n_rows, (long long)n_cols);
  if (n_rows == 0 || n_cols == 0) return FM_OK;
  if (ld < n_rows || out_ld < n_rows)
    return fm_err_set(err, FM_EARG,
                      "dos8 encode: ld (%lld) and out_ld (%lld) must be >= n_rows (%lld)",
                      (long long)ld, (long long)out_ld, (long long)n_rows);
  if (!x || !out) return fm_err_set(err, FM_EARG, "dos8 encode: x and out must not be NULL");
  const double lo = -FM_DOS8_TOL, hi = 2.0 + FM_DOS8_TOL;
  for (int64_t j = 0; j < n_cols; j++) {
    const double *xj = x + j * ld;
    uint8_t *oj = out + j * out_ld;
    for (int64_t i = 0; i < n_rows; i++) {
      double d = xj[i];
      if (isnan(d)) {
        oj[i] = FM_DOS8_MISSING;
        continue;
      }
      if (!(d >= lo && d <= hi))
        return fm_err_set(err, FM_EARG, "x[%lld, %lld] = %g is outside the dosage range [0, 2]",
                          (long long)(i + 1), (long long)(j + 1), d);
      double q = round(d * FM_DOS8_STEPS);
      if (q < 0.0) q = 0.0;
      if (q > 254.0) q = 254.0;
      oj[i] = (uint8_t)q;
    }
  }
  return FM_OK;
}
