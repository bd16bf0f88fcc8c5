/* fm_fmt_vcf.h: the VCF/BCF genotype reader (fm_fmt.h interface), via htslib.
 *
 * Reads VCF (plain text or BGZF) and BCF, whole files or one region through
 * the index (.tbi/.csi beside the file). Each record yields one fm_gt_record
 * per ALT allele (multi-allelic records are split, fm_fmt.h conventions):
 *  - GT -> hardcall (ALT count), and hap slots when the record is phased;
 *  - FORMAT DS (Float, Number=A or 1) -> dosage, else dosage is NULL; a
 *    record without GT takes hardcalls from DS (nearest count within 0.1);
 *  - haploid calls count 0 or 2 (PLINK style), and fill both hap slots;
 *  - half-calls (`0|.`) -> hardcall missing, the known allele kept in its slot;
 *  - heterozygous haploid calls -> missing (see docs/formats/vcf.md for how a
 *    VCF, which stores no sex, tells a haploid sample);
 *  - ID: the record's ID, or CHROM:POS:REF:ALT when it is '.'.
 * The full rules and their reasons: docs/formats/vcf.md.
 *
 * Ownership: the reader owns the htslib handles and every record buffer;
 * record strings and arrays are borrowed until the next call on the reader.
 * Thread safety: one reader per thread. */
#ifndef FM_FMT_VCF_H
#define FM_FMT_VCF_H

#include "fm_base.h"
#include "fm_fmt.h"

/* Open path (VCF, VCF.gz or BCF; the format is detected from the bytes).
 * region: NULL reads the whole file in order; otherwise an htslib region
 *   string ("22", "22:16000000-17000000") read through the index beside the
 *   file (path.tbi or path.csi); a well-formed region of a contig absent
 *   from the index yields no records, and info.notice says so, naming the
 *   first contigs the index (VCF.gz) or header (BCF) lists ("region
 *   'chr22': contig 'chr22' is not in the index of x.vcf.gz, which lists
 *   22; no records read").
 * Out:    *out is a reader (owned; fm_reader_close), NULL on failure.
 *   info.format is "vcf" or "bcf", info.n_variants is -1, info.has_dosage is
 *   nonzero when the header declares FORMAT DS, info.is_phased becomes
 *   nonzero once a phased record has been read.
 * Errors: FM_EARG if path or out is NULL, or a region is given and the file
 *   has no index (or is not BGZF/BCF), or the region is empty or does not
 *   parse ("22:abc", "22:300-200"; checked even for an absent contig);
 *   FM_EIO if the file cannot be opened;
 *   FM_EFORMAT if it is not VCF/BCF (the message shows the bytes at offset
 *   0) or its header is malformed (naming its lines, or for BCF its offset),
 *   or the index puts the region past the end of the file (truncated, or a
 *   stale index; naming the byte offset); FM_ENOMEM.
 *   fm_reader_next returns FM_EFORMAT naming the file and the record (its
 *   line number and CHROM:POS in a whole-file text read, CHROM:POS and the
 *   region through an index, its number in a BCF) on a malformed record, a
 *   POS that is not a non-negative integer, or a GT allele index at or
 *   beyond the record's allele count; and FM_FMT_END after the last record.
 * Owns:   borrows path and region (copied as needed).
 * Source: VCF 4.3 / BCF2 specifications (samtools hts-specs), htslib 1.16;
 *   oracle core/tests/formats/fmt_vcf/ (plink2 .traw of the 1kg fixture). */
FM_NODISCARD fm_status fm_fmt_vcf_open(const char *path, const char *region, fm_reader **out,
                                       fm_err *err);

/* Count the records r has left (after the split of multi-allelic sites:
 * n_allele - 1 per site with an ALT), consuming r. Genotype columns are not
 * parsed (htslib reads only the first eight columns of a text line), so
 * this costs a fraction of reading; its result equals the number of records
 * fm_reader_next would return when every record reads.
 * Errors: FM_EARG if r is not a VCF/BCF reader or n_records_out is NULL;
 *   FM_EFORMAT for a malformed record, named as fm_reader_next names it;
 *   FM_ECANCELLED when ctl (may be NULL; polled every 4096 records) asks.
 * Owns:   borrows r (left at its end) and ctl; writes *n_records_out. */
FM_NODISCARD fm_status fm_fmt_vcf_count(fm_reader *r, int64_t *n_records_out, const fm_ctl *ctl,
                                        fm_err *err);

#endif
