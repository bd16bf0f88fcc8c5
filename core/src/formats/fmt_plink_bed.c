/* fmt_bed.c: PLINK 1 BED/BIM/FAM reader (fm_fmt_plink.h) and the text
 * helpers shared with fmt_ped.c and fmt_tped.c (fmt_plink_impl.h). */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include "fmt_plink_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fm/fm_codec_bed2.h"

typedef long long ll;

/* ---- shared text helpers --------------------------------------------- */

fm_status fm_plink_lines_open(fm_plink_lines *L, const char *path, fm_err *err) {
  memset(L, 0, sizeof *L);
  L->path = path;
  if (!path) return fm_err_set(err, FM_EARG, "a PLINK file path must not be NULL");
  L->f = fopen(path, "rb");
  if (!L->f) return fm_err_set(err, FM_EIO, "cannot open '%s': %s", path, strerror(errno));
  return FM_OK;
}

int fm_plink_lines_next(fm_plink_lines *L, fm_err *err) {
  for (;;) {
    errno = 0;
    ssize_t n = getline(&L->buf, &L->cap, L->f);
    if (n < 0) {
      if (ferror(L->f) || errno == ENOMEM) {
        int e = errno;
        fm_err_set(err, e == ENOMEM ? FM_ENOMEM : FM_EIO, "cannot read '%s' after line %lld: %s",
                   L->path, (ll)L->line_no, strerror(e ? e : EIO));
        return e == ENOMEM ? -FM_ENOMEM : -FM_EIO;
      }
      return 0;
    }
    L->line_no++;
    for (ssize_t i = 0; i < n; i++) {
      const char c = L->buf[i];
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return 1;
    }
  }
}

void fm_plink_lines_close(fm_plink_lines *L) {
  if (!L) return;
  if (L->f) fclose(L->f);
  free(L->buf);
  memset(L, 0, sizeof *L);
}

fm_status fm_plink_lines_rewind(fm_plink_lines *L, fm_err *err) {
  if (fseek(L->f, 0, SEEK_SET) != 0)
    return fm_err_set(err, FM_EIO, "cannot rewind '%s': %s", L->path, strerror(errno));
  L->line_no = 0;
  return FM_OK;
}

/* Blank bytes: space, tab, CR, LF (and NUL, which ends the line). */
static const uint8_t blank[256] = {[0] = 1, [' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\n'] = 1};

int fm_plink_parse_int(const char *tok, long long *out) {
  long long v = 0;
  int k = 0;
  for (; k < 18 && tok[k] >= '0' && tok[k] <= '9'; k++) v = 10 * v + (tok[k] - '0');
  if (k > 0 && tok[k] == '\0') { /* 18 digits cannot overflow */
    *out = v;
    return 1;
  }
  char *e = NULL;
  errno = 0;
  v = strtoll(tok, &e, 10);
  if (errno || *e || e == tok) return 0;
  *out = v;
  return 1;
}

int64_t fm_plink_split(char *line, char **tok, int64_t max_tok) {
  int64_t n = 0;
  unsigned char *p = (unsigned char *)line;
  for (;;) {
    while (*p && blank[*p]) p++;
    if (!*p) break;
    if (n < max_tok) tok[n] = (char *)p;
    n++;
    while (!blank[*p]) p++;
    if (!*p) break;
    *p++ = '\0';
  }
  return n;
}

double fm_plink_parse_cm(const char *tok) {
  if (tok[0] == '0' && tok[1] == '\0') return 0; /* the usual "unknown" */
  char *e = NULL;
  const double v = strtod(tok, &e);
  return e != tok && *e == '\0' && isfinite(v) ? v : NAN;
}

fm_status fm_plink_count_lines(const char *path, int64_t *n_out, fm_err *err) {
  fm_plink_lines L;
  *n_out = 0;
  fm_status st = fm_plink_lines_open(&L, path, err);
  if (st != FM_OK) return st;
  int rc;
  int64_t n = 0;
  while ((rc = fm_plink_lines_next(&L, err)) == 1) n++;
  fm_plink_lines_close(&L);
  if (rc < 0) return (fm_status)-rc;
  *n_out = n;
  return FM_OK;
}

void fm_plink_free_ids(char **ids, int64_t n) {
  if (!ids) return;
  for (int64_t i = 0; i < n; i++) free(ids[i]);
  free(ids);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* "SEX" in any case (plink2 writes SEX). */
static int is_sex_name(const char *t) {
  return (t[0] == 'S' || t[0] == 's') && (t[1] == 'E' || t[1] == 'e') &&
         (t[2] == 'X' || t[2] == 'x') && t[3] == '\0';
}

fm_status fm_plink_read_samples(const char *path, int is_psam, char ***ids_out, int64_t *n_out,
                                uint8_t **sex_out, fm_err *err) {
  fm_plink_lines L;
  char **ids = NULL;
  uint8_t *sex = NULL;
  int64_t n = 0, cap = 0;
  int rc, iid_col = 1, sex_col = 4, first = 1;
  char *tok[64];
  *ids_out = NULL;
  *n_out = 0;
  if (sex_out) *sex_out = NULL;
  fm_status st = fm_plink_lines_open(&L, path, err);
  if (st != FM_OK) return st;
  while ((rc = fm_plink_lines_next(&L, err)) == 1) {
    if (is_psam && L.buf[0] == '#' && L.buf[1] == '#') continue;
    const int64_t nt = fm_plink_split(L.buf, tok, 64);
    /* nt == 0 (a line of NUL and blanks) leaves tok[0] unset */
    if (is_psam && first && nt > 0 && tok[0][0] == '#') { /* header: find the IID column */
      first = 0;
      iid_col = -1;
      sex_col = -1; /* a .psam without a SEX column knows no sex */
      for (int64_t k = 0; k < nt && k < 64; k++) {
        if (strcmp(tok[k] + (k == 0), "IID") == 0) iid_col = (int)k;
        if (is_sex_name(tok[k] + (k == 0))) sex_col = (int)k;
      }
      if (iid_col < 0) {
        st = fm_err_set(err, FM_EFORMAT, "'%s' line %lld: the header names no IID column", path,
                        (ll)L.line_no);
        goto fail;
      }
      continue;
    }
    first = 0;
    if (!is_psam && nt != 6) {
      st = fm_err_set(err, FM_EFORMAT, "'%s' line %lld has %lld fields; a .fam line has 6",
                      path, (ll)L.line_no, (ll)nt);
      goto fail;
    }
    if (nt <= iid_col) {
      st = fm_err_set(err, FM_EFORMAT, "'%s' line %lld has %lld fields; the IID is field %d",
                      path, (ll)L.line_no, (ll)nt, iid_col + 1);
      goto fail;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      char **t = realloc(ids, (size_t)cap * sizeof *t);
      if (!t) goto oom;
      ids = t;
      uint8_t *x = realloc(sex, (size_t)cap);
      if (!x) goto oom;
      sex = x;
    }
    if (!(ids[n] = dup_str(tok[iid_col]))) goto oom;
    /* a .fam-layout line without field 5 (a headerless .psam) knows no sex */
    sex[n] = sex_col >= 0 && sex_col < 64 && nt > sex_col ? fm_sex_code(tok[sex_col]) : 0;
    n++;
  }
  if (rc < 0) {
    st = (fm_status)-rc;
    goto fail;
  }
  fm_plink_lines_close(&L);
  if (!ids && !(ids = malloc(sizeof *ids))) goto oom_closed;
  if (sex_out && sex_col >= 0 && n > 0) {
    *sex_out = sex;
    sex = NULL;
  }
  free(sex);
  *ids_out = ids;
  *n_out = n;
  return FM_OK;
oom_closed:
  free(sex);
  return fm_err_set(err, FM_ENOMEM, "out of memory");
oom:
  st = fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", path);
fail:
  fm_plink_free_ids(ids, n);
  free(sex);
  fm_plink_lines_close(&L);
  return st;
}

char *fm_plink_swap_ext(const char *path, const char *from, const char *to) {
  size_t n = strlen(path), nf = strlen(from), nt = strlen(to);
  if (n >= nf && strcmp(path + n - nf, from) == 0) n -= nf;
  char *s = malloc(n + nt + 1);
  if (!s) return NULL;
  memcpy(s, path, n);
  memcpy(s + n, to, nt + 1);
  return s;
}

int fm_plink_allele_index(fm_plink_alleles *v, const char *tok) {
  if (tok[0] == '0' && tok[1] == '\0') return -1;
  for (int k = 0; k < 2; k++) {
    if (!v->a[k]) {
      if (!(v->a[k] = dup_str(tok))) return -3;
      return k;
    }
    if (v->a[k][0] == tok[0] && (tok[0] == '\0' || strcmp(v->a[k] + 1, tok + 1) == 0)) return k;
  }
  return -2;
}

void fm_plink_alleles_clear(fm_plink_alleles *v) {
  free(v->a[0]);
  free(v->a[1]);
  memset(v, 0, sizeof *v);
}

fm_status fm_plink_resolve(const fm_plink_alleles *v, const char *counted, const char *what,
                           const char *id, int *idx_out, const char **ref_out,
                           const char **alt_out, fm_err *err) {
  if (!counted) {
    if (!v->a[1]) {
      *idx_out = 2;
      *ref_out = v->a[0] ? v->a[0] : ".";
      *alt_out = ".";
    } else {
      const int k = v->cnt[1] <= v->cnt[0] ? 1 : 0; /* minor; second seen on a tie */
      *idx_out = k;
      *alt_out = v->a[k];
      *ref_out = v->a[1 - k];
    }
    return FM_OK;
  }
  for (int k = 0; k < 2; k++)
    if (v->a[k] && strcmp(v->a[k], counted) == 0) {
      *idx_out = k;
      *alt_out = v->a[k];
      *ref_out = v->a[1 - k] ? v->a[1 - k] : ".";
      return FM_OK;
    }
  if (v->a[1])
    return fm_err_set(err, FM_EMISMATCH,
                      "'%s' variant '%s': counted allele '%s' is neither of its alleles '%s' and "
                      "'%s'",
                      what, id, counted, v->a[0], v->a[1]);
  *idx_out = 2;
  *alt_out = counted;
  *ref_out = v->a[0] ? v->a[0] : ".";
  return FM_OK;
}

/* ---- BED reader --------------------------------------------------------- */

typedef struct bed_impl {
  FILE *bed;
  fm_plink_lines bim;
  char *bed_path, *bim_path, *fam_path;
  int64_t n_samples, n_variants, next;
  int64_t col_bytes;
  uint8_t *col;
  int8_t *hardcall;
  int8_t lut[256][4]; /* ALT counts of the 4 samples of a byte */
  char *tok[6];
} bed_impl;

static void bed_close(fm_reader *r) {
  bed_impl *b = r->impl;
  if (!b) return;
  if (b->bed) fclose(b->bed);
  fm_plink_lines_close(&b->bim);
  free(b->bed_path);
  free(b->bim_path);
  free(b->fam_path);
  free(b->col);
  free(b->hardcall);
  free(b);
  r->impl = NULL;
}

static fm_status bed_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  bed_impl *b = r->impl;
  if (b->next >= b->n_variants) return FM_FMT_END;
  int rc = fm_plink_lines_next(&b->bim, err);
  if (rc < 0) return (fm_status)-rc;
  if (rc == 0)
    return fm_err_set(err, FM_EFORMAT, "'%s' ended after %lld variants; %lld were counted at open",
                      b->bim_path, (ll)b->next, (ll)b->n_variants);
  const int64_t nt = fm_plink_split(b->bim.buf, b->tok, 6);
  if (nt != 6)
    return fm_err_set(err, FM_EFORMAT, "'%s' line %lld has %lld fields; a .bim line has 6",
                      b->bim_path, (ll)b->bim.line_no, (ll)nt);
  long long pos = 0;
  if (!fm_plink_parse_int(b->tok[3], &pos))
    return fm_err_set(err, FM_EFORMAT, "'%s' line %lld: position '%s' is not an integer",
                      b->bim_path, (ll)b->bim.line_no, b->tok[3]);
  const long long off = 3 + (long long)b->next * b->col_bytes;
  if (b->col_bytes > 0 && fread(b->col, 1, (size_t)b->col_bytes, b->bed) != (size_t)b->col_bytes)
    return fm_err_set(err, FM_EIO, "'%s': cannot read variant %lld at byte offset %lld",
                      b->bed_path, (ll)b->next + 1, off);
  rec->n_samples = b->n_samples;
  rec->chrom = b->tok[0];
  rec->id = b->tok[1];
  rec->pos = pos > 0 ? pos : 0;
  rec->cm = fm_plink_parse_cm(b->tok[2]);
  rec->alt = b->tok[4];
  rec->ref = b->tok[5];
  rec->dosage = NULL;
  rec->hap = NULL;
  rec->is_phased = 0;
  b->next++;
  if (r->is_hardcall_only) { /* the column is already bed2 */
    rec->hardcall = NULL;
    rec->bed2 = b->col;
    return FM_OK;
  }
  /* whole bytes through a 256 x 4 table, then the tail by bit arithmetic */
  static const int8_t val[4] = {2, FM_GT_MISSING, 1, 0};
  int8_t(*lut)[4] = b->lut;
  const uint8_t *c = b->col;
  const int64_t n4 = b->n_samples >> 2;
  for (int64_t j = 0; j < n4; j++) memcpy(b->hardcall + 4 * j, lut[c[j]], 4);
  for (int64_t i = 4 * n4; i < b->n_samples; i++)
    b->hardcall[i] = val[(c[i >> 2] >> (2 * (i & 3))) & 3u];
  rec->hardcall = b->hardcall;
  return FM_OK;
}

static const fm_reader_ops bed_ops = {bed_next, bed_close, NULL};

/* path without its directory when it is the directory of ref (a companion
 * beside the .bed), so that a message naming both fits in fm_err. */
static const char *beside(const char *path, const char *ref) {
  const char *slash = strrchr(ref, '/');
  if (!slash) return path;
  const size_t n = (size_t)(slash - ref) + 1;
  return strncmp(path, ref, n) == 0 && !strchr(path + n, '/') ? path + n : path;
}

fm_status fm_fmt_bed_open(const char *bed_path, const char *bim_path, const char *fam_path,
                          fm_reader **out, fm_err *err) {
  fm_status st;
  fm_reader *r = NULL;
  bed_impl *b = NULL;
  if (out) *out = NULL;
  if (!bed_path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_bed_open: bed_path and out must not be NULL");
  if (!(r = fm_reader_new(&bed_ops, sizeof *b)))
    return fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", bed_path);
  b = r->impl;
  r->info.format = "bed";
  r->info.has_cm = 1;
  b->bed_path = dup_str(bed_path);
  b->bim_path = bim_path ? dup_str(bim_path) : fm_plink_swap_ext(bed_path, ".bed", ".bim");
  b->fam_path = fam_path ? dup_str(fam_path) : fm_plink_swap_ext(bed_path, ".bed", ".fam");
  if (!b->bed_path || !b->bim_path || !b->fam_path) goto oom;
  if ((st = fm_plink_read_samples(b->fam_path, 0, &r->sample_ids, &b->n_samples, &r->sex,
                                  err)) != FM_OK)
    goto fail;
  r->info.n_samples = b->n_samples;
  if ((st = fm_plink_count_lines(b->bim_path, &b->n_variants, err)) != FM_OK) goto fail;
  r->info.n_variants = b->n_variants;
  if ((st = fm_plink_lines_open(&b->bim, b->bim_path, err)) != FM_OK) goto fail;
  b->bed = fopen(b->bed_path, "rb");
  if (!b->bed) {
    st = fm_err_set(err, FM_EIO, "cannot open '%s': %s", b->bed_path, strerror(errno));
    goto fail;
  }
  struct stat sb;
  if (fstat(fileno(b->bed), &sb) != 0) {
    st = fm_err_set(err, FM_EIO, "cannot stat '%s': %s", b->bed_path, strerror(errno));
    goto fail;
  }
  uint8_t magic[3] = {0, 0, 0};
  const size_t got = fread(magic, 1, 3, b->bed);
  if ((st = fm_codec_bed2_check_file(got == 3 ? magic : NULL, got == 3 ? (uint64_t)sb.st_size : got,
                                     b->n_samples, b->n_variants, b->bed_path, err)) != FM_OK) {
    /* a size that disagrees with the companions: say where N and M come from */
    if (got == 3 && magic[0] == 0x6c && magic[1] == 0x1b && magic[2] == 0x01 && err) {
      const size_t len = strlen(err->msg);
      snprintf(err->msg + len, sizeof err->msg - len, " (%lld samples in '%s', %lld variants in '%s')",
               (long long)b->n_samples, beside(b->fam_path, b->bed_path), (long long)b->n_variants,
               beside(b->bim_path, b->bed_path));
    }
    goto fail;
  }
  b->col_bytes = fm_codec_bed2_col_bytes(b->n_samples);
  b->col = malloc((size_t)(b->col_bytes > 0 ? b->col_bytes : 1));
  b->hardcall = malloc((size_t)(b->n_samples > 0 ? b->n_samples : 1));
  if (!b->col || !b->hardcall) goto oom;
  static const int8_t val[4] = {2, FM_GT_MISSING, 1, 0};
  for (int x = 0; x < 256; x++)
    for (int k = 0; k < 4; k++) b->lut[x][k] = val[(x >> (2 * k)) & 3];
  *out = r;
  return FM_OK;
oom:
  st = fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", bed_path);
fail:
  fm_reader_close(r);
  return st;
}
