/* fm_codec_dos8.h: one-byte dosages (docs/formats/dos8.md).
 *
 * A dosage d in [0, 2] (expected count of the counted allele) is stored as
 * the byte q = round(d * 127), so q in 0..254 and the decoded value is
 * q / 127: the quantization step is 1/127 and the largest rounding error is
 * 1/254. Byte 255 is missing. Column-major, one byte per value, columns of
 * col_stride >= n_rows bytes. Decoding is through fm_panel_decode. */
#ifndef FM_CODEC_DOS8_H
#define FM_CODEC_DOS8_H

#include "fm_base.h"

#define FM_DOS8_MISSING 255
#define FM_DOS8_STEPS 127.0 /* codes per unit dosage */
/* Encoding accepts [-FM_DOS8_TOL, 2 + FM_DOS8_TOL] (rounding noise of dosages
 * computed from probabilities) and clamps to [0, 2]. */
#define FM_DOS8_TOL 1e-9

/* Quantize doubles to dosage bytes.
 * Shape:  x is n_rows x n_cols, column-major, ld >= n_rows; out likewise with
 *         out_ld >= n_rows.
 * Units:  dosage in [0, 2]; NaN (including R's NA) -> missing.
 * Errors: FM_EARG naming the first element outside [0, 2] (infinities
 *         included) R-style, 1-based: "x[3, 2] = 2.5 is outside the dosage
 *         range [0, 2]"; out is then unspecified.
 * Owns:   borrows x; writes only out. */
FM_NODISCARD fm_status fm_codec_dos8_encode(const double *x, int64_t n_rows, int64_t n_cols,
                                            int64_t ld, uint8_t *out, int64_t out_ld,
                                            fm_err *err);

/* The dosage of one code (fm_na_value(), R's NA, for FM_DOS8_MISSING). */
double fm_codec_dos8_value(uint8_t code);

/* The 256-entry decode table of one column with its affine transform folded
 * in: lut_out[q] = (q / 127 - center) * scale for q < 255, lut_out[255] = fill.
 * Identity: center 0, scale 1, fill NAN. Same arithmetic as decoding then
 * transforming. Codes 255 is the only missing code. */
void fm_codec_dos8_lut(double center, double scale, double fill, double lut_out[256]);

/* out[i] = lut[col[i]] for i < n_rows (col already offset to the first row).
 * Owns: borrows col and lut; writes only out. Reentrant. */
void fm_codec_dos8_decode_col(const uint8_t *col, int64_t n_rows, const double lut[256],
                              double *out);

#endif
