/* fm_codec_hap1.h: phased haplotypes, one bit per haplotype, locus-major rows
 * (docs/formats/hap1.md). Not a matrix codec: it keeps the allele meaning for
 * Li-Stephens style HMM kernels that walk loci in order.
 *
 * Row l holds the n_haps alleles (0 = REF, 1 = ALT) of locus l; haplotype h is
 * bit h % 64 of 64-bit word h / 64 (least significant bit first). Each row
 * occupies fm_codec_hap1_row_bytes(n_haps) bytes, a multiple of 64, so every
 * row starts 64-byte aligned when the block does. Padding bits are 0. */
#ifndef FM_CODEC_HAP1_H
#define FM_CODEC_HAP1_H

#include "fm_base.h"

/* Bytes per locus row: ceil(n_haps / 512) * 64. */
int64_t fm_codec_hap1_row_bytes(int64_t n_haps);

/* Pack alleles into rows.
 * Shape:  h is n_haps x n_loci int32, column-major (one column per locus),
 *         ld >= n_haps; out is n_loci rows of row_bytes.
 * Units:  0 or 1. Errors: FM_EARG naming the first other value (R's NA
 *         included: phased haplotypes have no missing code). */
FM_NODISCARD fm_status fm_codec_hap1_encode(const int32_t *h, int64_t n_haps, int64_t n_loci,
                                            int64_t ld, uint8_t *out, fm_err *err);

/* Borrowed pointer to the words of row `locus` (no bounds check beyond the
 * caller's: 0 <= locus < n_loci). */
static inline const uint64_t *fm_codec_hap1_row(const uint8_t *data, int64_t n_haps,
                                                int64_t locus) {
  return (const uint64_t *)(const void *)(data + locus * fm_codec_hap1_row_bytes(n_haps));
}

/* Allele of haplotype h at locus (0 or 1). No bounds check: 0 <= h < n_haps. */
int fm_codec_hap1_get(const uint8_t *data, int64_t n_haps, int64_t locus, int64_t h);

/* Unpack loci [l0, l0+n_loci) into int32 alleles.
 * Shape: out is n_haps x n_loci, column-major (one column per locus),
 *        ld >= n_haps; rows n_haps..ld-1 are not written.
 * Owns:  borrows data; writes only out. */
void fm_codec_hap1_decode_rows(const uint8_t *data, int64_t n_haps, int64_t l0, int64_t n_loci,
                               int32_t *out, int64_t ld);

#endif
