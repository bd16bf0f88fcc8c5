/* fmt_text_impl.h (private): buffered line reading and field splitting shared
 * by the text genotype readers (fmt_gen.c, fmt_haps.c, fmt_eigenstrat.c). */
#ifndef FM_FMT_TEXT_IMPL_H
#define FM_FMT_TEXT_IMPL_H

#include "fm/fm_fmt.h"

#include <stddef.h>
#include <stdint.h>

/* A file read one line at a time through zlib (plain or gzip input). */
typedef struct fm_text_lines {
  void *gz;          /* owned gzFile */
  char *path;        /* owned copy, for messages */
  char *line;        /* owned: the current line, NUL-terminated, no "\n"/"\r\n" */
  size_t len, cap;
  int64_t line_no;   /* 1-based number of the current line */
  unsigned char *rbuf; /* owned read buffer */
  size_t rpos, rlen;
  int at_eof;
  size_t max_len;    /* longest line accepted (0: no limit); longer is FM_EFORMAT */
} fm_text_lines;

/* Open path; l is caller-allocated. Errors: FM_EIO naming the file, FM_ENOMEM. */
fm_status fm_text_lines_open(fm_text_lines *l, const char *path, fm_err *err);
/* Next line into l->line; FM_FMT_END at the end of the file; FM_EIO on a read
 * error; FM_EFORMAT when a line is longer than l->max_len (memory bound for
 * binary or mismatched input). */
fm_status fm_text_lines_next(fm_text_lines *l, fm_err *err);
/* Read exactly n bytes (binary records); *got_out = bytes read (< n at the end). */
fm_status fm_text_lines_read(fm_text_lines *l, void *dst, size_t n, size_t *got_out, fm_err *err);
/* Point *p_out at the next unread bytes without consuming them (fills the
 * buffer when it is empty); *n_out = how many (0 at the end of the file). */
fm_status fm_text_lines_peek(fm_text_lines *l, const unsigned char **p_out, size_t *n_out,
                             fm_err *err);
void fm_text_lines_close(fm_text_lines *l); /* safe on a zeroed struct */

/* Split s in place on spaces and tabs: NUL-terminates fields and stores the
 * first `cap` of them in fields; returns the total number of fields. */
int64_t fm_text_split(char *s, char **fields, int64_t cap);

/* Read a SAMPLE file (2 header lines, IID = column 2) or an .ind file (ID =
 * column 1, is_ind nonzero) into a malloc'd array of malloc'd strings.
 * sex_out (may be NULL): a malloc'd array of FM_SEX_* codes (fm_sex_code)
 * from the .ind's column 2 (M, F, U) or the .sample column named sex whose
 * type on line 2 is D (1 male, 2 female); NULL when the .sample has no such
 * column or there are no samples. */
fm_status fm_text_read_ids(const char *path, int is_ind, char ***ids_out, int64_t *n_out,
                           uint8_t **sex_out, fm_err *err);
void fm_text_free_ids(char **ids, int64_t n);

/* Parse a base-10 non-negative int64 (whole string); 0 on failure. */
int fm_text_parse_i64(const char *s, int64_t *out);
/* Allocate the reader shell (ops, ids moved in on success). */
char *fm_text_strdup(const char *s);

#endif
