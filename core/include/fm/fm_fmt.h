/* fm_fmt.h: genotype records, the reader interface every format implements,
 * and the destinations records stream into (Rpgen's core).
 *
 * A reader parses one format once and yields records in file order, one per
 * biallelic variant, into a caller-owned fm_gt_record. A destination turns
 * records into the bytes of an Rfmalloc codec column: hardcall (bed2),
 * dosage (dos8), haplotype (hap1 rows) or dense (f64). fm_fmt_stream drives a
 * reader into a destination with sample and variant subsets, in bounded
 * blocks, polling fm_ctl between blocks.
 *
 * Conventions, identical in every reader (docs/formats/conventions.md):
 *  - Counted allele: ALT (the .bim column-5 allele A1 for PLINK 1 files, the
 *    second allele of BGEN/GEN/HAPS, the .snp column-5 allele of EIGENSTRAT;
 *    docs/formats/conventions.md lists every format).
 *    Hardcalls are ALT counts 0, 1, 2; FM_GT_MISSING when missing.
 *  - Haploid calls (chrX males, chrY, MT) are coded PLINK style: 0 or 2;
 *    in hap the allele fills both slots, so slots sum to the hardcall.
 *    A heterozygous haploid call is impossible and becomes missing.
 *  - Males on X: on a record of the X chromosome outside the pseudo-autosomal
 *    regions (fm_chrom_is_x: X, chrX, 23; XY, 25, PAR1, PAR2 are the PARs and
 *    stay diploid), a sample the reader knows to be male (fm_reader.sex) is
 *    haploid: fm_reader_next makes his heterozygous call missing (hardcall,
 *    dosage, both hap slots), for every format alike; homozygous calls stay
 *    0 / 2 with the allele in both slots.
 *  - Half-calls (one allele known, `0|.`): the hardcall is missing; the
 *    haplotype slots keep the known allele in its slot and mark the other
 *    slot missing.
 *  - Multi-allelic records (REF plus ALT1..ALTk, k > 1) are split into k
 *    biallelic records, record j counting copies of ALTj (other ALTs count 0),
 *    with ID "<id>" kept and alt set to ALTj; a genotype with a missing allele
 *    is missing in every split record.
 *  - Probabilities (BGEN, GEN): dosage = P(het) + 2 P(hom ALT) over the
 *    probabilities as stored; when they sum to less than 1 the remainder is
 *    left unassigned (not renormalized); all three zero means missing.
 *  - Hardcalls of every format that stores dosages or probabilities (BGEN,
 *    GEN, PLINK 1 legacy dosage, VCF DS without GT) follow plink2's rule
 *    (--hard-call-threshold 0.1): the nearest integer of the dosage when it
 *    lies within 0.1 of it, measured in plink2's dosage units of 1/16384,
 *    else missing (fm_hardcall_from_units below). Haploid dosages are on the
 *    0..2 scale, so a haploid dosage near 1 is a heterozygous haploid call:
 *    missing.
 *
 * Ownership: readers own their buffers; strings in a record are borrowed
 * until the next call on the reader. Thread safety: one reader per thread. */
#ifndef FM_FMT_H
#define FM_FMT_H

#include "fm_base.h"

#define FM_GT_MISSING ((int8_t)-1)

/* One biallelic variant for all samples of the file. */
typedef struct fm_gt_record {
  int64_t n_samples;
  /* variant metadata, borrowed from the reader until its next call */
  const char *chrom;
  int64_t pos;        /* 1-based base-pair position, 0 when unknown */
  const char *id;
  const char *ref;    /* uncounted allele */
  const char *alt;    /* counted allele */
  double cm;          /* genetic position in centimorgans where the format stores one
                         (fm_fmt_info.has_cm); NAN otherwise, or when the field is not a
                         number (fm_reader_next sets NAN before each record) */
  /* genotypes, buffers owned by the reader (lengths in samples) */
  int8_t *hardcall;   /* (n_samples) ALT count 0/1/2 or FM_GT_MISSING */
  double *dosage;     /* (n_samples) ALT dosage in [0, 2], NaN missing; NULL when the
                         format stores hardcalls only (use hardcall) */
  int8_t *hap;        /* (2 n_samples) alleles per slot (0 REF, 1 ALT, FM_GT_MISSING),
                         slot order as stored; NULL when the record is unphased,
                         except that a reader may fill it for an unphased record
                         without heterozygous calls (phase is then implied;
                         is_phased stays 0) */
  int is_phased;      /* nonzero when hap holds phased alleles */
  const uint8_t *bed2;/* optional (ceil(n_samples / 4) bytes): the hardcalls already packed
                         as bed2 codes (docs/formats/bed.md; sample i in bits 2(i%4) of byte
                         i/4, pad bits unspecified), for a reader whose storage is 2-bit;
                         NULL otherwise. When hardcall is also set, the two agree. */
  const uint8_t *het_site; /* optional (n_samples), for a record split from a multi-allelic
                         site: nonzero where the sample's call at the site holds two
                         different known alleles (heterozygous at the site, even where
                         this record counts 0, as `0/2` in the ALT1 record). NULL: a
                         record's own hets are the site's. Read by the male-X rule. */
} fm_gt_record;

/* ---- hardcalls from dosages: plink2's rule, shared by every reader ------ */

/* plink2 keeps a dosage in units of 1/16384 ALT copies (0 .. 32768) and,
 * with its default --hard-call-threshold 0.1, calls the nearest integer c
 * when |u - 16384 c| <= 1638 (0.1 = 1638.4 units), else leaves the call
 * missing. Checked against plink2 --make-bed on BGEN (every 8-bit
 * probability pair, every 16-bit dosage, phased and haploid), GEN, legacy
 * dosage and VCF DS inputs (core/tests/formats/fmt_bgen, fmt_text, fmt_vcf). */
#define FM_DOSAGE_UNITS 16384u      /* one ALT copy */
#define FM_HARDCALL_MAX_DIST 1638u  /* 0.1 ALT copies, in those units */

/* The hardcall (0, 1, 2 or FM_GT_MISSING) of a dosage of u units. */
static inline int8_t fm_hardcall_from_units(uint64_t u) {
  const uint64_t c = (u + FM_DOSAGE_UNITS / 2) / FM_DOSAGE_UNITS;
  const uint64_t at = c * FM_DOSAGE_UNITS, dist = u > at ? u - at : at - u;
  return c <= 2 && dist <= FM_HARDCALL_MAX_DIST ? (int8_t)c : FM_GT_MISSING;
}

/* A dosage given as a double (NaN missing) in units: d * 16384 rounded to
 * the nearest integer, halves up (as plink2 converts a DS or legacy dosage
 * value). Returns UINT32_MAX for NaN, negative values and values above 2.5. */
uint32_t fm_dosage_units(double d);

/* fm_hardcall_from_units(fm_dosage_units(d)), missing for NaN. */
int8_t fm_hardcall_from_dosage(double d);

/* An exact dosage num / den ALT copies (BGEN: a sum of stored integer
 * probabilities over 2^B - 1, or over 32768 for layout 1) in units:
 * num * 16384 / den rounded to the nearest integer, halves to even (plink2's
 * rounding; a half occurs only for even den). den >= 1, num <= 2^47. */
uint32_t fm_dosage_units_ratio(uint64_t num, uint64_t den);

/* Since fm_dosage_units_ratio is nondecreasing in num, the hardcall of
 * num / den is one of four compares: 0 below bound[0], missing below
 * bound[1], 1 below bound[2], missing below bound[3], else 2. Fills bound
 * (four numerators in 0 .. 2 den + 1) for den >= 1, den <= 2^33. */
void fm_hardcall_bounds(uint64_t den, uint64_t bound[4]);

static inline int8_t fm_hardcall_from_bounds(uint64_t num, const uint64_t bound[4]) {
  return num < bound[0] ? 0 : num < bound[1] ? FM_GT_MISSING : num < bound[2] ? 1
         : num < bound[3] ? FM_GT_MISSING : 2;
}

/* What a reader knows before streaming. */
typedef struct fm_fmt_info {
  const char *format;   /* "bed", "pgen", "bgen", "vcf", ... */
  int64_t n_samples;
  int64_t n_variants;   /* -1 when unknown until the file is read */
  int is_phased;        /* some record carries phase */
  int has_dosage;       /* records carry dosages */
  int has_cm;           /* records carry cm: .bim, .pvar with a CM column (or in the
                           .bim layout), .map, .tped */
  const char *notice;   /* what the user should hear of this open although it
                           succeeded (a region whose contig the file does not
                           list, fm_fmt_vcf.h), or NULL; owned by the reader */
} fm_fmt_info;

typedef struct fm_reader fm_reader;

/* The operations of one format. `next` fills *rec with the next record and
 * returns FM_OK, or returns FM_FMT_END at the end of the file (no record);
 * errors, FM_EUNSUPPORTED for a record this reader cannot decode among them,
 * name the file and the record, line or byte offset. */
typedef struct fm_reader_ops {
  fm_status (*next)(fm_reader *r, fm_gt_record *rec, fm_err *err);
  void (*close)(fm_reader *r);
  /* Optional: *n_out = the records left, counted without decoding
   * genotypes (BGEN seeks over blocks, VCF/BCF reads sites' allele
   * counts), the reader left at its end; NULL: fm_reader_count reads them. */
  fm_status (*count)(fm_reader *r, int64_t *n_out, const fm_ctl *ctl, fm_err *err);
} fm_reader_ops;

/* Sex codes of fm_reader.sex. */
#define FM_SEX_UNKNOWN 0
#define FM_SEX_MALE 1
#define FM_SEX_FEMALE 2

struct fm_sex_state; /* private to fmt.c */

struct fm_reader {
  const fm_reader_ops *ops;
  fm_fmt_info info;
  /* Set by the consumer before the first record when it reads hardcalls
   * only (fm_fmt_stream does for a hardcall destination). A reader may then
   * fill bed2 instead of hardcall, leave dosage and hap NULL and is_phased 0,
   * and skip the tracks that hold them (their damage then goes unreported).
   * Readers that ignore it fill records as usual. */
  int is_hardcall_only;
  char **sample_ids;   /* owned: n_samples strings (IID) */
  void *impl;          /* owned by the format */
  /* owned (malloc): n_samples FM_SEX_* codes, or NULL when no sex is known.
   * Set at open from the companion that stores it (.fam, .psam SEX column,
   * .ped, .tfam, an Oxford .sample's D-type column named sex, EIGENSTRAT
   * .ind) or later by fm_reader_set_sex; read by fm_reader_next's male-X
   * rule (see the conventions above). */
  uint8_t *sex;
  struct fm_sex_state *sex_state; /* owned: that rule's male list and buffers */
};

#define FM_FMT_END FM_EEND

/* For format implementations: a zeroed reader with the given ops and a
 * zeroed impl of impl_size bytes, or NULL when out of memory. */
fm_reader *fm_reader_new(const fm_reader_ops *ops, size_t impl_size);

/* Each format's open function (fm_fmt_<format>_open in fm_fmt_<format>.h)
 * mallocs the fm_reader, fills ops, info, sample_ids (malloc'd array of
 * malloc'd strings) and impl. fm_reader_close calls ops->close, which frees
 * impl (and whatever it owns) only, then frees sample_ids and the reader. */
FM_NODISCARD fm_status fm_reader_next(fm_reader *r, fm_gt_record *rec, fm_err *err);
/* (fm_reader_next clears rec->bed2 and rec->het_site before asking the
 * format, so a format sets them only for records that have them.)
 *
 * The male-X rule, applied here to every record of every format: when
 * fm_chrom_is_x(rec->chrom) and r->sex marks sample s male, and s is
 * heterozygous (hardcall 1, or bed2 code 0b10; a dosage whose hardcall by
 * plink2's rule would be 1; two different known hap slots; het_site[s]),
 * then s gets hardcall FM_GT_MISSING, dosage NaN and both hap slots
 * FM_GT_MISSING. This is plink2's --set-hh-missing (which also erases the
 * dosage of such a call); other dosages of males stay as stored, on the
 * 0..2 scale plink2 keeps for them. The reader's buffers are not written:
 * the record points at copies held in r->sex_state (valid until the next
 * call on the reader). */
void fm_reader_close(fm_reader *r); /* safe on NULL */

/* The records left in r, the cheapest way its format offers (ops->count),
 * else by reading them (fm_reader_next; the male-X rule does not change a
 * count), polling ctl and reporting fm_ctl_progress(ctl, records, NaN)
 * every 4096 records; r is left at its end.
 * Errors: FM_EARG (r or n_out NULL); FM_ECANCELLED; the reader's own,
 *         naming the record. *n_out holds the records counted so far. */
FM_NODISCARD fm_status fm_reader_count(fm_reader *r, int64_t *n_out, const fm_ctl *ctl,
                                       fm_err *err);

/* Replace the reader's sex codes with n FM_SEX_* codes (n must be
 * r->info.n_samples; sex NULL clears them), e.g. for a VCF/BCF, which stores
 * no sex, or a BGEN whose sex is in a .sample. Call before reading records
 * (the rule uses the codes from the next record on). FM_EARG for a wrong n
 * or a code other than 0, 1, 2. */
FM_NODISCARD fm_status fm_reader_set_sex(fm_reader *r, const uint8_t *sex, int64_t n,
                                         fm_err *err);

/* The sex code of a companion-file token: "1", "M", "m" male; "2", "F", "f"
 * female; anything else (0, -9, NA, U) unknown. */
uint8_t fm_sex_code(const char *tok);

/* Nonzero when chrom names the X chromosome outside the pseudo-autosomal
 * regions: X, chrX, 23 or chr23 (letters in any case). PLINK's XY / 25 and
 * PAR1 / PAR2 (plink2 --split-par) are not X: their males stay diploid. A
 * file that writes the PARs under the name X has them treated as non-PAR,
 * as plink2 does without --split-par. */
int fm_chrom_is_x(const char *chrom);

/* ---- destinations ----------------------------------------------------- */

typedef enum fm_dest_kind {
  FM_DEST_HARDCALL = 1, /* bed2 columns: col_bytes = ceil(n_out / 4) */
  FM_DEST_DOSAGE = 2,   /* dos8 columns: col_bytes = n_out */
  FM_DEST_HAPLOTYPE = 3,/* hap1 rows of 2 n_out haplotypes + a missing-slot
                           bit plane of the same shape right after the allele
                           rows (docs/formats/hap1.md) */
  FM_DEST_DENSE = 4     /* f64 columns: col_bytes = 8 n_out, R's NA missing; the
                           record's dosage when it has one, else its hardcall */
} fm_dest_kind;

typedef struct fm_dest {
  fm_dest_kind kind;
  uint8_t *data;               /* borrowed: n_out_variants columns (or rows) */
  int64_t n_out_samples;       /* samples written per column */
  int64_t n_out_variants;
  const int64_t *sample_index; /* borrowed: (n_out_samples) 0-based input samples,
                                  duplicates allowed; NULL = all in order */
  int is_file_mapped;          /* data lies in a MAP_SHARED file mapping (an Rfmalloc
                                  runtime): a stream in file order may drop the pages it
                                  has written from memory (the file keeps them), so
                                  resident memory does not grow with the output. 0 for
                                  heap memory, whose dropped pages would read as zeros. */
} fm_dest;

/* The kind named name: "hardcall", "dosage", "haplotype" or "dense".
 * Errors: FM_EARG (another name, listing these; out NULL). */
FM_NODISCARD fm_status fm_dest_kind_by_name(const char *name, fm_dest_kind *out, fm_err *err);

/* The dtype of a kind's storage (fm_base.h): FM_DTYPE_BED2, FM_DTYPE_DOS8,
 * FM_DTYPE_HAP1 (allele rows, then the missing plane) or FM_DTYPE_F64;
 * FM_DTYPE_NONE for another value. */
fm_dtype fm_dest_dtype(fm_dest_kind kind);

/* Bytes the destination needs for n_out_samples x n_out_variants. */
FM_NODISCARD fm_status fm_dest_bytes(fm_dest_kind kind, int64_t n_out_samples,
                                     int64_t n_out_variants, uint64_t *n_bytes_out, fm_err *err);

/* Write record rec as output column `col`. Dosage destinations use
 * rec->dosage when present, else the hardcall; hardcall destinations use
 * rec->bed2 when present, else rec->hardcall; haplotype destinations need rec->hap (FM_EMISMATCH naming
 * the variant when the record is unphased). */
FM_NODISCARD fm_status fm_dest_put(const fm_dest *d, int64_t col, const fm_gt_record *rec,
                                   fm_err *err);

/* Stream r into d. variant_index (n_out_variants, sorted or not, duplicates
 * allowed; NULL = every record in order) selects input records by 0-based
 * position; each selected record is written to every output column that
 * requests it. Records are consumed in file order; cancel is polled every
 * block_records records and progress is reported in records.
 * Variant metadata of the written columns is reported through on_variant
 * (may be NULL), called once per input record that is selected. For a
 * hardcall destination it sets r->is_hardcall_only. Without variant_index,
 * a file-mapped hardcall, dosage or dense destination has its written whole
 * pages dropped from memory (madvise) at each block. */
typedef void (*fm_variant_fn)(void *ud, int64_t in_index, const fm_gt_record *rec);

FM_NODISCARD fm_status fm_fmt_stream(fm_reader *r, const fm_dest *d, const int64_t *variant_index,
                                     int64_t block_records, fm_variant_fn on_variant,
                                     void *on_variant_ud, const fm_ctl *ctl, fm_err *err);

#endif
