/* fm_fmt_text.h: readers of the line-oriented genotype formats: Oxford GEN,
 * Oxford HAPS (with .sample) and IMPUTE2 HAPS + LEGEND, and EIGENSTRAT
 * (text .geno, or packed ancestrymap .geno detected from its "GENO" magic).
 *
 * Every reader streams: it holds one line (or one packed record) of each input
 * at a time, so memory is bounded by the longest line, whatever the number of
 * variants. Input may be plain text or gzip (read through zlib, detected from
 * the bytes). Parsing is strict: a wrong field count, a bad allele or genotype
 * code, an unparsable number, a companion file with a different sample or
 * variant count, or a truncated packed record is an error whose message names
 * the file, the 1-based line (or 0-based packed record) and what was expected.
 *
 * PLINK 1 legacy dosage (plink 1.9 --dosage) is read here too.
 *
 * Conventions (fm_fmt.h; byte layouts in docs/formats/text_formats.md):
 *  - GEN, HAPS: the first allele is REF, the second is ALT and is counted.
 *  - EIGENSTRAT: .geno holds copies of the .snp column-5 allele, which is the
 *    counted allele (alt); column 6 is ref. 9 (text) or 3 (packed) = missing.
 *  - PLINK 1 dosage: A1 (column 2) is counted (alt), A2 is ref, as in .bim.
 *  - Sample IDs are the .sample ID_2 column (IID), the .ind column 1, or the
 *    .fam / dosage-header IID.
 *  - Sex (fm_reader.sex, for the male-X rule of fm_fmt.h): the .sample column
 *    named sex of type D (1 male, 2 female), the .ind column 2 (M, F, U),
 *    the .fam column 5 of a legacy dosage read.
 *
 * Ownership: open functions return an owned fm_reader (close it with
 * fm_reader_close); paths are copied. Thread safety: one reader per thread. */
#ifndef FM_FMT_TEXT_H
#define FM_FMT_TEXT_H

#include "fm_fmt.h"

/* Open an Oxford GEN file with its SAMPLE file.
 * Lines:  "chrom id pos a1 a2" then 3 probabilities per sample (P(a1a1),
 *         P(a1a2), P(a2a2)); a 6-column variant "chrom snpid rsid pos a1 a2"
 *         is accepted too (id = rsid). The .sample file has 2 header lines.
 * Units:  record dosage = P(a1a2) + 2 P(a2a2) (NaN when all three are 0);
 *         hardcall = plink2's rule on that dosage (fm_fmt.h: the nearest
 *         integer when within 0.1 of it in units of 1/16384), else missing.
 * Errors: FM_EARG on NULL arguments; FM_EIO when a file cannot be opened or
 *         read; FM_EFORMAT on a malformed line (named by file and line),
 *         including a field count that does not match the .sample count;
 *         FM_ENOMEM.
 * Owns:   *out (owned, fm_reader_close). info.n_variants is -1.
 * Source: docs/formats/text_formats.md; oracle: the .traw beside the fixture
 *         (core/tests/formats/fmt_text/test_fmt_text.c). */
FM_NODISCARD fm_status fm_fmt_gen_open(const char *gen_path, const char *sample_path,
                                       fm_reader **out, fm_err *err);

/* Set r's sex codes (fm_reader_set_sex) from the sex column of an Oxford
 * SAMPLE file listing r's samples in order (a BGEN read with the .sample
 * beside it): the column named sex (any case) whose type on line 2 is D,
 * 1 male, 2 female, else unknown. A SAMPLE file without such a column leaves
 * r unchanged. Errors: FM_EIO, FM_EFORMAT (a malformed line, named), and
 * FM_EMISMATCH when it lists another number of samples than r has. */
FM_NODISCARD fm_status fm_fmt_sample_sex(fm_reader *r, const char *sample_path, fm_err *err);

/* Open an Oxford HAPS file ("chrom id pos a0 a1" then 2 alleles per sample,
 * 0 = a0 = REF, 1 = a1 = ALT; "-" in the second slot marks a haploid call)
 * with its SAMPLE file.
 * Units:  rec->hap = alleles per slot (haploid: second slot FM_GT_MISSING),
 *         rec->hardcall = their sum (haploid: 2 x allele, PLINK style).
 * Errors: as fm_fmt_gen_open; a bad allele code is FM_EFORMAT naming file,
 *         line and sample.
 * Owns:   *out (owned). Source: docs/formats/text_formats.md. */
FM_NODISCARD fm_status fm_fmt_haps_open(const char *haps_path, const char *sample_path,
                                        fm_reader **out, fm_err *err);

/* Open an IMPUTE2 haplotype file (2 alleles per sample per line, nothing
 * else) with its LEGEND ("id position a0 a1" header, then one line per
 * variant) and SAMPLE file. chrom (may be NULL: "." is reported) is the
 * chromosome of every record, as neither file stores it.
 * Errors: as fm_fmt_haps_open; FM_EMISMATCH when the legend and the haps
 *         file have different line counts (named by file and line).
 * Owns:   *out (owned); chrom is copied. */
FM_NODISCARD fm_status fm_fmt_haps_legend_open(const char *haps_path, const char *legend_path,
                                               const char *sample_path, const char *chrom,
                                               fm_reader **out, fm_err *err);

/* Open EIGENSTRAT genotypes: .geno (text: one line per SNP, one character
 * 0/1/2/9 per individual; or packed ancestrymap: a header record starting
 * "GENO <n_ind> <n_snp> <ind hash> <snp hash>", then one record per SNP of
 * max(48, ceil(2 n_ind / 8)) bytes, 2 bits per individual, first individual
 * in the high bits, 3 = missing), .snp ("id chrom cM pos a1 a2") and .ind
 * ("id sex label").
 * Units:  hardcall = copies of the .snp column-5 allele (rec->alt).
 * Errors: as fm_fmt_gen_open; FM_EFORMAT names the packed record and byte
 *         offset when a record is short, or the extra bytes after the last
 *         (checked at open from the size of a .geno that is not gzip);
 *         FM_EMISMATCH when the packed header counts differ from .ind/.snp
 *         (checked at open: the .snp is counted in a pass of its own), or
 *         the files have different lengths;
 *         FM_EUNSUPPORTED for transposed packed files ("TGENO").
 * Owns:   *out (owned). info.n_variants is known for packed files only. */
FM_NODISCARD fm_status fm_fmt_eigenstrat_open(const char *geno_path, const char *snp_path,
                                              const char *ind_path, fm_reader **out,
                                              fm_err *err);

/* Open a PLINK 1 legacy dosage file (plink 1.9 --dosage): a header
 * "SNP A1 A2 FID1 IID1 FID2 IID2 ...", then per line "SNP A1 A2" and, per
 * sample, format 1: the A1 dosage in [0, 2]; format 2: P(A1A1) P(A1A2)
 * (P(A2A2) = the rest); format 3: P(A1A1) P(A1A2) P(A2A2). "NA" or "-9" is
 * missing. format 0 infers 1, 2 or 3 from the first data line's field count.
 * fam_path (may be NULL: IDs from the header) must list the header's IIDs in
 * order; map_path (may be NULL: chrom ".", pos 0) is a PLINK .map (3 or 4
 * columns) listing the same variants in the same order.
 * Units:  dosage = A1 dosage (format 1), or 2 P(A1A1) + P(A1A2);
 *         hardcall (every format): plink2's rule on the dosage (fm_fmt.h:
 *         the nearest integer when within 0.1 of it in units of 1/16384),
 *         else missing.
 * Errors: FM_EARG (NULL path or out, format not in 0..3); FM_EIO; FM_EFORMAT
 *         naming file and line; FM_EMISMATCH when the header, .fam and .map
 *         disagree (sample count or name, variant ID or count); FM_ENOMEM.
 * Owns:   *out (owned). Source: docs/formats/text_formats.md; oracle: the
 *         .traw of fixtures/genotypes/1kg_phase1_chr22_dosage. */
FM_NODISCARD fm_status fm_fmt_dosage_open(const char *dosage_path, const char *fam_path,
                                          const char *map_path, int format, fm_reader **out,
                                          fm_err *err);

#endif
