/* fm_fmt_bgen.h: BGEN genotype reader (v1.1 layout 1; v1.2/v1.3 layout 2).
 *
 * Reads the BGEN format (https://www.well.ox.ac.uk/~gav/bgen_format/spec/latest.html)
 * sequentially, one variant block at a time, into fm_gt_record (fm_fmt.h).
 * Byte layout, rules and decisions: docs/formats/bgen.md.
 *
 * What is read:
 *  - header block, flags: compression 0 (none), 1 (zlib), 2 (zstd); 3 is
 *    FM_EFORMAT naming the flag; layout 1 or 2 (other layouts FM_EUNSUPPORTED);
 *  - the embedded sample identifier block (flag bit 31) into r->sample_ids;
 *    when the file has none, r->sample_ids is NULL and the caller (glue) reads
 *    the external .sample file;
 *  - layout 1: three uint16 probabilities / 32768 per sample, diploid;
 *  - layout 2: probabilities of B = 1..32 bits, phased or unphased, ploidy 0,
 *    1 or 2 per sample (missing bit honoured); ploidy > 2 is FM_EFORMAT
 *    naming the variant and sample.
 *
 * Conventions (fm_fmt.h): the counted allele is the second allele (ALT; files
 * are ref-first). Dosage = sum over genotypes of ALT count x probability as
 * stored (not renormalized; phased: the sum of the haplotypes' P(ALT));
 * haploid samples get 2 P(ALT) (0..2 scale) and hardcalls 0/2. Hardcall =
 * plink2's rule on that dosage (fm_fmt.h: the nearest integer when within
 * 0.1 of it in units of 1/16384, from the exact integer ratio; layout-1
 * halves to even, as plink2), else missing; a haploid dosage near 1 is
 * missing. Missing samples (ploidy byte bit 7, or layout-1 all
 * zero probabilities) are FM_GT_MISSING / NaN. Phased records fill rec->hap:
 * a slot holds the allele whose haplotype probability is >= 0.9, else it is
 * missing; haploid samples repeat their hardcall's allele in both slots. Unphased
 * records without a heterozygous hardcall are phase-unambiguous and also
 * fill rec->hap (from the hardcalls; is_phased stays 0). Multi-allelic
 * variants (K > 2 alleles) are split into K-1 biallelic records, record j
 * counting ALTj (its dosage the expected count of ALTj, its hardcall the
 * same rule on that dosage). info.n_variants is the exact record count: layout 2 files
 * are scanned once at open (variant headers only, genotype blocks seeked
 * over); layout 1 (always biallelic) takes M from the header.
 *
 * Errors name the file and the byte offset or variant. Memory: one
 * compressed and one decompressed block buffer, reused; per-sample arrays.
 * Thread safety: one reader per thread. */
#ifndef FM_FMT_BGEN_H
#define FM_FMT_BGEN_H

#include "fm_fmt.h"

/* Open a BGEN file for sequential reading.
 * Shape:  *out gets info.n_samples = N of the header, info.n_variants = the
 *         number of records (sum of K-1 over variants; one header scan).
 * Units:  records as in fm_fmt.h; dosages always present (has_dosage = 1).
 * Errors: FM_EARG for NULL path/out; FM_EUNSUPPORTED for a variant with
 *         1 allele (named); FM_EIO if the file cannot be opened or
 *         read; FM_EFORMAT for wrong magic, short header, compression flag 3,
 *         inconsistent sample block, a truncated or inconsistent variant
 *         header anywhere in a layout-2 file, a variant of 0 alleles, or a
 *         header N (byte offset 12) that the first variant's genotype block
 *         cannot hold (its length, uncompressed length or own N; the
 *         variant's N in layout 1) (file and byte offsets named);
 *         FM_EUNSUPPORTED for layouts other than 1 and 2; FM_ENOMEM.
 * Owns:   *out is owned by the caller (fm_reader_close); path is borrowed.
 * Source: BGEN spec v1.3; oracle core/tests/formats/fmt_bgen (plink2 .traw). */
FM_NODISCARD fm_status fm_fmt_bgen_open(const char *path, fm_reader **out, fm_err *err);

/* Skip the next n_records records without decoding genotypes (only variant
 * headers are read; genotype blocks are seeked over). Split records of a
 * multi-allelic variant count one each.
 * Errors: FM_EARG if r is not a BGEN reader or n_records < 0; FM_FMT_END if
 *         the file ends first (*n_skipped_out says how many were skipped);
 *         FM_EIO / FM_EFORMAT as fm_reader_next.
 * Owns:   borrows r; n_skipped_out may be NULL. */
FM_NODISCARD fm_status fm_fmt_bgen_skip(fm_reader *r, int64_t n_records, int64_t *n_skipped_out,
                                        fm_err *err);

#endif
