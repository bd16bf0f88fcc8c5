/* fm_fmt_plink.h: readers of PLINK 1 genotype files: binary BED/BIM/FAM
 * (variant-major), text PED/MAP and transposed TPED/TFAM (fm_fmt.h).
 *
 * Every reader yields one unphased biallelic record per variant in file
 * order: hardcall = count of the counted allele (ALT), FM_GT_MISSING when
 * missing; dosage and hap are NULL. sample_ids are the IIDs (column 2 of the
 * .fam/.ped/.tfam); r->sex (fm_fmt.h, the male-X rule) is their column 5
 * (1 male, 2 female, else unknown). Every record carries cm, the
 * centimorgans of column 3 of the .bim/.map/.tped (info.has_cm; NAN when
 * the field is not a number). Conventions: docs/formats/conventions.md.
 *  - BED: ALT = .bim column 5 (A1, the allele the bed codes count), REF =
 *    column 6 (A2). Only variant-major files (mode byte 0x01) are read; the
 *    .bed size must equal 3 + n_variants * ceil(n_samples / 4). Memory: one
 *    column; the .bim is read line by line alongside the .bed.
 *  - PED/TPED store allele letters, not REF/ALT. The counted allele of
 *    variant v is counted_alleles[v] when the caller gives the list (e.g. the
 *    ALT column of the matching .pvar/.bim); otherwise it is the minor allele
 *    over fully called genotypes, the allele seen second on a tie (plink 1.9's
 *    A1 rule). Allele "0" is missing; a genotype with one missing allele is a
 *    missing hardcall. A third distinct allele is an error naming the file,
 *    line and variant. A variant with one allele seen has ALT "." (all calls 0)
 *    unless counted_alleles names another allele. Missing alleles print ".".
 *    PED is sample-major: the whole file is read at open into 2 bits per
 *    genotype (n_samples * n_variants / 4 bytes). TPED streams line by line.
 * Errors name the file and the 1-based line (text) or byte offset (.bed).
 * Ownership: fm_reader_close frees everything. One reader per thread. */
#ifndef FM_FMT_PLINK_H
#define FM_FMT_PLINK_H

#include "fm_fmt.h"

/* Open a PLINK 1 binary fileset. bim_path / fam_path may be NULL: then the
 * .bed path with its ".bed" suffix replaced by ".bim" / ".fam".
 * Errors: FM_EIO (open/read failed, naming the path); FM_EFORMAT (bad magic,
 *         sample-major mode byte, .bim/.fam line with fewer than 6 fields,
 *         naming file and line; a .bed whose size disagrees with the .fam
 *         samples and .bim variants, truncated or not, with the numbers);
 *         FM_ENOMEM.
 * Owns:   *out owned (fm_reader_close). Source: PLINK 1.9 file-format
 *         reference; oracle core/tests/formats/fmt_plink/ against plink2's .traw. */
FM_NODISCARD fm_status fm_fmt_bed_open(const char *bed_path, const char *bim_path,
                                       const char *fam_path, fm_reader **out, fm_err *err);

/* Open a PED/MAP pair (.map: CHR ID cM POS; .ped: FID IID PAT MAT SEX PHENO
 * then two allele tokens per .map variant, whitespace separated).
 * counted_alleles: NULL, or n_counted borrowed strings (read during open
 * only), one per .map variant in order; n_counted must equal that count.
 * Errors: FM_EIO; FM_EFORMAT (wrong field count, third allele, naming file
 *         and line); FM_EMISMATCH (n_counted differs from the .map, or a
 *         counted allele is neither of two alleles seen); FM_ENOMEM. */
FM_NODISCARD fm_status fm_fmt_ped_open(const char *ped_path, const char *map_path,
                                       const char *const *counted_alleles, int64_t n_counted,
                                       fm_reader **out, fm_err *err);

/* Open a TPED/TFAM pair (.tped: CHR ID cM POS then two allele tokens per
 * .tfam sample; .tfam: the six .fam columns). counted_alleles as for PED,
 * one per .tped line; the .tped is counted once at open for n_variants.
 * Errors: as fm_fmt_ped_open; errors in records are raised by
 *         fm_reader_next, naming the .tped line. */
FM_NODISCARD fm_status fm_fmt_tped_open(const char *tped_path, const char *tfam_path,
                                        const char *const *counted_alleles, int64_t n_counted,
                                        fm_reader **out, fm_err *err);

#endif
