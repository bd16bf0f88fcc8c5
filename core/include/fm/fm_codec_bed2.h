/* fm_codec_bed2.h: PLINK 1 two-bit hardcalls, variant-major (docs/formats/bed.md).
 *
 * A matrix of n_samples x n_variants stores each variant (column) in
 * ceil(n_samples / 4) bytes; sample i sits in bits 2*(i%4)..2*(i%4)+1 of byte
 * i/4. Codes count the A1 allele (.bim column 5, plink2's ALT):
 *   0b00 -> 2 (hom A1)   0b01 -> missing   0b10 -> 1 (het)   0b11 -> 0 (hom A2)
 * Padding bits of a column's last byte are written as 0 and ignored on read.
 * A .bed file is the 3 bytes 0x6c 0x1b 0x01 (variant-major) then the columns.
 * Source: PLINK 1.9 file-format reference ("bed" section). Oracle:
 * core/tests/codec_bed2/ (reference decoder by bit arithmetic) and plink2. */
#ifndef FM_CODEC_BED2_H
#define FM_CODEC_BED2_H

#include "fm_base.h"

#define FM_BED2_MAGIC_BYTES 3

/* Bytes per variant column: ceil(n_samples / 4). */
int64_t fm_codec_bed2_col_bytes(int64_t n_samples);

/* Encode genotype counts into two-bit columns.
 * Shape:  g is n_samples x n_cols int32, column-major, ld >= n_samples;
 *         out is n_cols columns of fm_codec_bed2_col_bytes(n_samples) bytes.
 * Units:  values 0, 1, 2 (count of A1) or INT32_MIN (missing).
 * Errors: FM_EARG naming the first offending (row, col) for any other value.
 * Owns:   borrows g; writes only out. */
FM_NODISCARD fm_status fm_codec_bed2_encode(const int32_t *g, int64_t n_samples, int64_t n_cols,
                                            int64_t ld, uint8_t *out, fm_err *err);

/* Per-column genotype counts, exact.
 * Shape:  counts_out is 4 x n_cols int64: (n_hom_a2 [0 copies], n_het,
 *         n_hom_a1 [2 copies], n_missing) for each column j of cols.
 * Owns:   borrows data (first byte of column 0); writes only counts_out. */
void fm_codec_bed2_col_counts(const uint8_t *data, int64_t n_samples, int64_t col_stride,
                              const int64_t *cols, int64_t n_cols, int64_t *counts_out);

/* Check a .bed image: magic, variant-major mode byte, and exact size
 * 3 + n_variants * ceil(n_samples / 4). `what` names the file in messages.
 * Errors: FM_EFORMAT naming the file, the expected and actual size, N and M;
 *         a sample-major mode byte is named as such. */
FM_NODISCARD fm_status fm_codec_bed2_check_file(const uint8_t *bytes, uint64_t n_bytes,
                                                int64_t n_samples, int64_t n_variants,
                                                const char *what, fm_err *err);

#endif
