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

/* Quantize doubles to dosage bytes.
 * Shape:  x is n_rows x n_cols, column-major, ld >= n_rows; out likewise with
 *         out_ld >= n_rows.
 * Units:  dosage in [0, 2]; NaN (including R's NA) -> missing.
 * Errors: FM_EARG naming the first (row, col) outside [0, 2]. */
FM_NODISCARD fm_status fm_codec_dos8_encode(const double *x, int64_t n_rows, int64_t n_cols,
                                            int64_t ld, uint8_t *out, int64_t out_ld,
                                            fm_err *err);

/* The dosage of one code (NaN for FM_DOS8_MISSING). */
double fm_codec_dos8_value(uint8_t code);

#endif
