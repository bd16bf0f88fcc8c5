/* fm_codec_bed2.h: PLINK 1 two-bit hardcalls, variant-major (docs/formats/bed.md).
 *
 * A matrix of n_samples x n_variants stores each variant (column) in
 * ceil(n_samples / 4) bytes; sample i sits in bits 2*(i%4)..2*(i%4)+1 of byte
 * i/4. Codes count the A1 allele (.bim column 5, plink2's ALT):
 *   0b00 -> 2 (hom A1)   0b01 -> missing   0b10 -> 1 (het)   0b11 -> 0 (hom A2)
 * Padding bits of a column's last byte are written as 0 and ignored on read.
 * A .bed file is the 3 bytes 0x6c 0x1b 0x01 (variant-major) then the columns.
 * Source: PLINK 1.9 file-format reference ("bed" section). Oracle:
 * core/tests/codec/codec_bed2/ (reference decoder by bit arithmetic) and plink2. */
#ifndef FM_CODEC_BED2_H
#define FM_CODEC_BED2_H

#include "fm_base.h"

#define FM_BED2_MAGIC_BYTES 3

/* Bytes per variant column: ceil(n_samples / 4). */
int64_t fm_codec_bed2_col_bytes(int64_t n_samples);

/* bed2 byte of four packed ALT counts: field k (bits 2k..2k+1) of the index
 * holds 0, 1, 2 or 3 = missing (PGEN's hardcall encoding; also the low 2
 * bits of an int8 count with FM_GT_MISSING = -1); the entry holds the four
 * bed2 codes in the same fields. */
extern const uint8_t fm_codec_bed2_of_count2[256];

/* The same translation over n_bytes bytes, 8 per step by bit arithmetic
 * (a field (h, l) becomes (!h, !(h ^ l))); src and dst may be equal.
 * Shape:  src and dst have n_bytes bytes (4 fields each).
 * Owns:   borrows src; writes only dst. Reentrant. */
void fm_codec_bed2_from_count2(const uint8_t *src, int64_t n_bytes, uint8_t *dst);

/* The decode table of one column with its affine transform folded in:
 * lut_out[code] = (value(code) - center) * scale for the three observed codes
 * and fill for code 0b01 (missing). Identity: center 0, scale 1, fill NAN.
 * The arithmetic is exactly that of fm_panel_decode's F64 path, so a fused
 * decode equals "decode, then transform" bit for bit.
 * Shape:  lut_out has 4 entries, indexed by the 2-bit code. */
void fm_codec_bed2_lut(double center, double scale, double fill, double lut_out[4]);

/* Decode samples [r0, r0+n_rows) of one stored column through lut.
 * r0 need not be a multiple of 4; only bytes r0/4 .. (r0+n_rows-1)/4 of col
 * are read, so padding bits never reach out.
 * Shape:  col is the column's fm_codec_bed2_col_bytes(N) bytes; out has
 *         n_rows doubles (contiguous).
 * Units:  lut values (see fm_codec_bed2_lut).
 * Owns:   borrows col and lut; writes only out. Reentrant. */
void fm_codec_bed2_decode_col(const uint8_t *col, int64_t r0, int64_t n_rows, const double lut[4],
                              double *out);

/* Encode genotype counts into two-bit columns.
 * Shape:  g is n_samples x n_cols int32, column-major, ld >= n_samples;
 *         out is n_cols columns of fm_codec_bed2_col_bytes(n_samples) bytes.
 * Units:  values 0, 1, 2 (count of A1) or INT32_MIN (missing).
 * Errors: FM_EARG naming the first offending element R-style, 1-based
 *         ("g[3, 2] = 7 is not a genotype count (0, 1, 2 or NA)"); out is
 *         then unspecified.
 * Owns:   borrows g; writes only out (padding bits written as 0). */
FM_NODISCARD fm_status fm_codec_bed2_encode(const int32_t *g, int64_t n_samples, int64_t n_cols,
                                            int64_t ld, uint8_t *out, fm_err *err);

/* Per-column genotype counts, exact.
 * Shape:  counts_out is 4 x n_cols int64: (n_hom_a2 [0 copies], n_het,
 *         n_hom_a1 [2 copies], n_missing) for each column j of cols.
 *         cols lists n_cols stored column indices; NULL means 0..n_cols-1.
 *         Padding bits of the last byte are ignored, whatever their value;
 *         only the ceil(n_samples / 4) bytes of each listed column are read.
 * Method: population counts of the low and high bit planes of 64-bit words
 *         (32 samples each). An AVX2 kernel runs when fm_cpu_isa() is
 *         FM_ISA_AVX2 or above (fm_cpu.h; its test hook fm_cpu_cap selects
 *         the portable one). Both give the same counts.
 * Owns:   borrows data (first byte of column 0); writes only counts_out.
 *         Reentrant.
 * Oracle: core/tests/codec/codec_bed2/ (per-sample bit arithmetic; both kernels). */
void fm_codec_bed2_col_counts(const uint8_t *data, int64_t n_samples, int64_t col_stride,
                              const int64_t *cols, int64_t n_cols, int64_t *counts_out);

/* Check a .bed image: magic, variant-major mode byte, and exact size
 * 3 + n_variants * ceil(n_samples / 4). `what` names the file in messages.
 * Errors: FM_EFORMAT naming the file, the expected and actual size, N and M,
 *         and the byte offset where file and layout part (a short file names
 *         its first incomplete variant); a sample-major mode byte is named as
 *         such; a wrong magic names the two bytes found. FM_EARG for negative
 *         N or M. Example: "'x.bed' has 1234 bytes but 1126 samples x 25161
 *         variants need 3 + 25161 * 282 = 7095405 bytes: the file ends at
 *         byte offset 1234, in variant 5 (1-based)". what may be NULL. */
FM_NODISCARD fm_status fm_codec_bed2_check_file(const uint8_t *bytes, uint64_t n_bytes,
                                                int64_t n_samples, int64_t n_variants,
                                                const char *what, fm_err *err);

#endif
