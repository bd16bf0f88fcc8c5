/* fm_fmt_pgen.h: reader of PLINK 2 PGEN/PVAR/PSAM filesets (fm_fmt.h).
 *
 * Byte layout and what is supported: docs/formats/pgen.md. Source: the PGEN
 * specification (plink-ng's pgen_spec); oracle core/tests/formats/fmt_pgen/ (every
 * record of the 1000 Genomes fixture equals the .bed decode of the same
 * genotypes; chr22 phase equals the .haps export; the split multi-allelic
 * records of 1kg.pgen equal plink2's VCF export; the dosage fixture equals
 * plink2's DS export).
 *
 * Records come out in file order, one per variant: hardcall = ALT count
 * (main-track category 0/1/2, category 3 -> FM_GT_MISSING). dosage is NULL
 * unless some record type has dosage bits 5-6 (info.has_dosage); then every
 * record's dosage is filled: the stored 16-bit value / 16384 (65535 -> NaN)
 * where the record lists one, else the hardcall (missing -> NaN).
 *  - Storage modes: 0x10 (variable-width, what plink2 writes) and 0x02
 *    (fixed-width unphased hardcalls). Other modes -> FM_EUNSUPPORTED naming
 *    the file and the mode byte.
 *  - Main-track record types 0 (2-bit array), 1 (1-bit array + difflist),
 *    2 and 3 (LD-compressed against the previous non-LD record, 3 inverted),
 *    4, 6, 7 (difflist against one common category).
 *  - Phase (record-type bit 4): hap holds the phased alleles and is_phased
 *    is 1 when every heterozygous call of the record is phased; a record with
 *    some unphased heterozygous calls is unphased (hap NULL), as in the VCF
 *    reader. A record without heterozygous calls gets hap filled (phase
 *    implied, is_phased 0), as fm_fmt.h allows.
 *  - Multi-allelic variants (.pvar ALT "A1,A2,..", record-type bit 3 for
 *    track 1) are split per fm_fmt.h into one record per ALT, in ALT order,
 *    each counting copies of its ALT, with hap slots when every het
 *    (ALTx/ALTy included) is phased; info.n_variants counts split records.
 *    Allele counts come from the .pvar (those in the .pgen header are
 *    skipped). Mode 0x02 with several ALTs -> FM_EUNSUPPORTED.
 *  - Phased dosages (bit 7) are skipped (the unphased dosage track holds
 *    the dosage). Not read: multi-allelic records with dosage tracks, and
 *    bit 7 without bits 5-6 -> fm_reader_next returns FM_EUNSUPPORTED
 *    naming the variant and its record type.
 * sample_ids are the .psam IIDs. The .pvar is read line by line alongside
 * the .pgen; memory is O(n_samples) plus 5 bytes per variant of header.
 * fm_reader_next also returns FM_EFORMAT for a malformed record (difflist,
 * track 1, phase track, LD record without a reference), naming the file,
 * the 1-based variant, its record type and byte offset.
 * Errors name the file and the variant or byte offset.
 * Ownership: fm_reader_close frees everything. One reader per thread. */
#ifndef FM_FMT_PGEN_H
#define FM_FMT_PGEN_H

#include "fm_fmt.h"

/* Open a PGEN fileset. pvar_path / psam_path may be NULL: then the .pgen
 * path with its ".pgen" suffix replaced by ".pvar" / ".psam".
 * .pvar: "##" lines skipped; a "#CHROM" header names the columns (POS, REF,
 * ALT required; ID and CM optional: info.has_cm says whether records carry
 * cm), otherwise the .bim layout is assumed (CHR ID CM POS ALT REF). .psam: a "#FID"/"#IID" header names the IID
 * column, otherwise the .fam layout (IID = column 2). r->sex (fm_fmt.h,
 * the male-X rule) comes from the header's SEX column (none without one) or
 * column 5 of the .fam layout. Split records of a multi-allelic variant
 * carry het_site.
 * Errors: FM_EIO (open/read failed, naming the path); FM_EFORMAT (bad magic,
 *         header or record index inconsistent with the file size or
 *         truncated, naming the file and byte offset; malformed .pvar/.psam
 *         lines naming file and line); FM_EMISMATCH (.pvar/.psam counts
 *         differ from the .pgen header's variant / sample counts); FM_EUNSUPPORTED (storage mode other
 *         than 0x02 / 0x10); FM_EARG (NULL pgen_path or out); FM_ENOMEM.
 * Owns:   *out owned (fm_reader_close); paths are copied. */
FM_NODISCARD fm_status fm_fmt_pgen_open(const char *pgen_path, const char *pvar_path,
                                        const char *psam_path, fm_reader **out, fm_err *err);

#endif
