/* fmt_plink_impl.h: private helpers shared by the PLINK 1 readers
 * (fmt_bed.c, fmt_ped.c, fmt_tped.c); defined in fmt_bed.c. */
#ifndef FM_FMT_PLINK_IMPL_H
#define FM_FMT_PLINK_IMPL_H

#include <stdio.h>

#include "fm/fm_fmt_plink.h"

/* A text file read line by line; line_no is the 1-based number of the line
 * in buf. */
typedef struct fm_plink_lines {
  FILE *f;
  char *buf;
  size_t cap;
  int64_t line_no;
  const char *path; /* borrowed */
} fm_plink_lines;

fm_status fm_plink_lines_open(fm_plink_lines *L, const char *path, fm_err *err);
/* Next non-blank line into L->buf: 1 read, 0 end of file, or an fm_status
 * negated (-FM_EIO) with err set. */
int fm_plink_lines_next(fm_plink_lines *L, fm_err *err);
void fm_plink_lines_close(fm_plink_lines *L);
/* Rewind to the start. */
fm_status fm_plink_lines_rewind(fm_plink_lines *L, fm_err *err);

/* Split line in place on blanks into at most max_tok tokens; returns the
 * number of tokens in the line (may exceed max_tok; the rest are not stored). */
int64_t fm_plink_split(char *line, char **tok, int64_t max_tok);

/* A whole token as a base-10 integer, as strtoll reads it (sign, range):
 * 1 and *out, or 0 when the token is not one. Plain digits skip strtoll. */
int fm_plink_parse_int(const char *tok, long long *out);

/* A centimorgan field (.bim, .map, .tped column 3; a .pvar's CM): its value,
 * or NAN when it is not a finite number. */
double fm_plink_parse_cm(const char *tok);

/* Count the non-blank lines of path. */
fm_status fm_plink_count_lines(const char *path, int64_t *n_out, fm_err *err);

/* Read the sample IIDs of a .fam/.tfam (is_psam 0: 6 fields a line, IID
 * second) or a .psam (is_psam 1: "##" lines skipped, a "#FID"/"#IID" header
 * names the IID column, else the .fam layout): *ids_out = malloc'd array of
 * malloc'd IIDs. sex_out (may be NULL): a malloc'd array of FM_SEX_* codes
 * (fm_sex_code) from field 5 (.fam layout) or the header's SEX column; NULL
 * when a .psam header names no SEX column or there are no samples. */
fm_status fm_plink_read_samples(const char *path, int is_psam, char ***ids_out, int64_t *n_out,
                                uint8_t **sex_out, fm_err *err);
void fm_plink_free_ids(char **ids, int64_t n);

/* path with its suffix `from` replaced by `to` (or to appended); malloc'd. */
char *fm_plink_swap_ext(const char *path, const char *from, const char *to);

/* The alleles of one text-format variant, in the order first seen. */
typedef struct fm_plink_alleles {
  char *a[2];     /* owned, NULL when not seen */
  int64_t cnt[2]; /* copies in fully called genotypes */
} fm_plink_alleles;

/* Index (0/1) of allele tok in v, adding it when new; -1 for "0" (missing),
 * -2 for a third allele, -3 out of memory. */
int fm_plink_allele_index(fm_plink_alleles *v, const char *tok);
void fm_plink_alleles_clear(fm_plink_alleles *v);

/* Which stored allele is counted: *idx_out 0 or 1, or 2 when the counted
 * allele was never seen (every call counts 0). ref/alt borrowed from v or
 * counted (or "."). Errors: FM_EMISMATCH naming what and id. */
fm_status fm_plink_resolve(const fm_plink_alleles *v, const char *counted, const char *what,
                           const char *id, int *idx_out, const char **ref_out,
                           const char **alt_out, fm_err *err);

/* Hardcall from the stored count c of allele a[1] (0..2, 3 missing). */
static inline int8_t fm_plink_hardcall(unsigned c, int idx) {
  if (c > 2) return FM_GT_MISSING;
  if (idx == 1) return (int8_t)c;
  if (idx == 0) return (int8_t)(2 - c);
  return 0;
}

#endif
