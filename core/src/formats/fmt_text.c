/* fmt_text.c: line reading and field splitting for the text genotype readers
 * (fmt_text_impl.h). Input goes through zlib, so gzip and plain text read alike. */
#include "fmt_text_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define RBUF_BYTES (1u << 16)

char *fm_text_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

fm_status fm_text_lines_open(fm_text_lines *l, const char *path, fm_err *err) {
  memset(l, 0, sizeof *l);
  if (!path) return fm_err_set(err, FM_EARG, "a genotype file path is NULL");
  l->path = fm_text_strdup(path);
  l->rbuf = malloc(RBUF_BYTES);
  l->cap = 4096;
  l->line = malloc(l->cap);
  if (!l->path || !l->rbuf || !l->line) {
    fm_text_lines_close(l);
    return fm_err_set(err, FM_ENOMEM, "out of memory opening %s", path);
  }
  errno = 0;
  gzFile gz = gzopen(path, "rb");
  if (!gz) {
    int e = errno;
    fm_text_lines_close(l);
    return fm_err_set(err, FM_EIO, "cannot open %s: %s", path, e ? strerror(e) : "zlib error");
  }
  l->gz = gz;
  return FM_OK;
}

void fm_text_lines_close(fm_text_lines *l) {
  if (!l) return;
  if (l->gz) gzclose((gzFile)l->gz);
  free(l->path);
  free(l->line);
  free(l->rbuf);
  memset(l, 0, sizeof *l);
}

/* zlib's message without the "<path>: " prefix it adds. */
static const char *zmsg(fm_text_lines *l, int *zerr) {
  const char *m = gzerror((gzFile)l->gz, zerr);
  size_t n = strlen(l->path);
  if (!m) return "zlib error";
  if (strncmp(m, l->path, n) == 0 && m[n] == ':' && m[n + 1] == ' ') m += n + 2;
  return m;
}

static fm_status fill(fm_text_lines *l, fm_err *err) {
  if (l->at_eof) return FM_OK;
  int n = gzread((gzFile)l->gz, l->rbuf, RBUF_BYTES);
  if (n < 0) {
    int zerr = 0;
    const char *m = zmsg(l, &zerr);
    return fm_err_set(err, zerr == Z_ERRNO ? FM_EIO : FM_EFORMAT, "cannot read %s after line %lld: %s",
                      l->path, (long long)l->line_no, m);
  }
  if (n == 0) {
    int zerr = 0;
    const char *m = zmsg(l, &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END)
      return fm_err_set(err, zerr == Z_ERRNO ? FM_EIO : FM_EFORMAT, "cannot read %s after line %lld: %s",
                        l->path, (long long)l->line_no, m);
    l->at_eof = 1;
  }
  l->rpos = 0;
  l->rlen = (size_t)n;
  return FM_OK;
}

static fm_status append(fm_text_lines *l, const unsigned char *p, size_t n, fm_err *err) {
  if (l->max_len && l->len + n > l->max_len)
    return fm_err_set(err, FM_EFORMAT, "%s line %lld: longer than the %zu bytes a line of this file can need",
                      l->path, (long long)(l->line_no + 1), l->max_len);
  if (l->len + n + 1 > l->cap) {
    size_t cap = l->cap;
    while (l->len + n + 1 > cap) cap *= 2;
    char *nl = realloc(l->line, cap);
    if (!nl) return fm_err_set(err, FM_ENOMEM, "out of memory reading line %lld of %s",
                               (long long)(l->line_no + 1), l->path);
    l->line = nl;
    l->cap = cap;
  }
  memcpy(l->line + l->len, p, n);
  l->len += n;
  return FM_OK;
}

fm_status fm_text_lines_next(fm_text_lines *l, fm_err *err) {
  fm_status st;
  l->len = 0;
  int got_any = 0;
  for (;;) {
    if (l->rpos == l->rlen) {
      if ((st = fill(l, err)) != FM_OK) return st;
      if (l->rlen == 0 || l->at_eof) {
        if (!got_any) return FM_FMT_END;
        break;
      }
    }
    const unsigned char *s = l->rbuf + l->rpos;
    size_t avail = l->rlen - l->rpos;
    const unsigned char *nl = memchr(s, '\n', avail);
    size_t take = nl ? (size_t)(nl - s) : avail;
    if ((st = append(l, s, take, err)) != FM_OK) return st;
    got_any = 1;
    l->rpos += take + (nl ? 1 : 0);
    if (nl) break;
  }
  if (l->len > 0 && l->line[l->len - 1] == '\r') l->len--;
  l->line[l->len] = '\0';
  l->line_no++;
  return FM_OK;
}

fm_status fm_text_lines_read(fm_text_lines *l, void *dst, size_t n, size_t *got_out, fm_err *err) {
  fm_status st;
  size_t got = 0;
  unsigned char *d = dst;
  while (got < n) {
    if (l->rpos == l->rlen) {
      if ((st = fill(l, err)) != FM_OK) return st;
      if (l->rlen == 0 || l->at_eof) break;
    }
    size_t take = l->rlen - l->rpos;
    if (take > n - got) take = n - got;
    memcpy(d + got, l->rbuf + l->rpos, take);
    got += take;
    l->rpos += take;
  }
  *got_out = got;
  return FM_OK;
}

fm_status fm_text_lines_peek(fm_text_lines *l, const unsigned char **p_out, size_t *n_out,
                             fm_err *err) {
  if (l->rpos == l->rlen) {
    fm_status st = fill(l, err);
    if (st != FM_OK) return st;
  }
  *p_out = l->rbuf + l->rpos;
  *n_out = l->rlen - l->rpos;
  return FM_OK;
}

int64_t fm_text_split(char *s, char **fields, int64_t cap) {
  int64_t n = 0;
  char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    if (n < cap) fields[n] = p;
    n++;
    while (*p && *p != ' ' && *p != '\t') p++;
    if (!*p) break;
    *p++ = '\0';
  }
  return n;
}

int fm_text_parse_i64(const char *s, int64_t *out) {
  int64_t v = 0;
  if (!*s) return 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return 0;
    if (v > (INT64_MAX - 9) / 10) return 0;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 1;
}

void fm_text_free_ids(char **ids, int64_t n) {
  if (!ids) return;
  for (int64_t i = 0; i < n; i++) free(ids[i]);
  free(ids);
}

/* "sex" in any case: the Oxford .sample column that holds sex. */
static int is_sex_name(const char *t) {
  return (t[0] == 'S' || t[0] == 's') && (t[1] == 'E' || t[1] == 'e') &&
         (t[2] == 'X' || t[2] == 'x') && t[3] == '\0';
}

/* The fields of a .sample line read: ID_2 and the sex column. */
#define SAMPLE_MAX_FIELDS 4096

fm_status fm_text_read_ids(const char *path, int is_ind, char ***ids_out, int64_t *n_out,
                           uint8_t **sex_out, fm_err *err) {
  *ids_out = NULL;
  *n_out = 0;
  if (sex_out) *sex_out = NULL;
  fm_text_lines l;
  char **ids = NULL;
  uint8_t *sex = NULL;
  int64_t n = 0, cap = 0;
  /* .ind: column 2 is M, F or U; .sample: the column named sex (header
   * line 1) whose type (line 2) is D, when there is one */
  int64_t sex_col = is_ind ? 1 : -1;
  char *small[3], **f = small;
  int64_t f_cap = 3;
  fm_status st = fm_text_lines_open(&l, path, err);
  if (st != FM_OK) return st;
  for (;;) {
    st = fm_text_lines_next(&l, err);
    if (st == FM_FMT_END) break;
    if (st != FM_OK) goto fail;
    int64_t nf = fm_text_split(l.line, f, f_cap);
    if (!is_ind && l.line_no <= 2) {
      if (nf < 2) {
        st = fm_err_set(err, FM_EFORMAT, "%s line %lld: expected a SAMPLE header line of at least 2 columns (ID_1 ID_2 ...), found %lld",
                        path, (long long)l.line_no, (long long)nf);
        goto fail;
      }
      if (l.line_no == 1 && nf > 2) { /* column names: find sex (line 2 is split again below) */
        const int64_t want = nf < SAMPLE_MAX_FIELDS ? nf : SAMPLE_MAX_FIELDS;
        char **big = malloc((size_t)want * sizeof *big);
        if (!big) { st = fm_err_set(err, FM_ENOMEM, "out of memory reading %s", path); goto fail; }
        /* the line is split in place already: its fields are NUL-separated */
        char *p = l.line;
        for (int64_t k = 0; k < want; k++) {
          while (*p == '\0' || *p == ' ' || *p == '\t') p++;
          big[k] = p;
          p += strlen(p);
        }
        for (int64_t k = 2; k < want && sex_col < 0; k++)
          if (is_sex_name(big[k])) sex_col = k;
        f = big;
        f_cap = want;
      } else if (l.line_no == 2 && sex_col >= 0 &&
                 !(nf > sex_col && (f[sex_col][0] == 'D' || f[sex_col][0] == 'd') &&
                   f[sex_col][1] == '\0')) {
        sex_col = -1; /* a sex column that is not discrete (D) is not read as sex */
      }
      continue;
    }
    if (nf == 0) continue; /* blank line */
    if (nf < (is_ind ? 1 : 2)) {
      st = fm_err_set(err, FM_EFORMAT, "%s line %lld: expected at least 2 columns (ID_1 ID_2), found %lld",
                      path, (long long)l.line_no, (long long)nf);
      goto fail;
    }
    if (n == cap) {
      int64_t nc = cap ? 2 * cap : 256;
      char **ni = realloc(ids, (size_t)nc * sizeof *ni);
      if (!ni) { st = fm_err_set(err, FM_ENOMEM, "out of memory reading %s", path); goto fail; }
      ids = ni;
      uint8_t *nx = realloc(sex, (size_t)nc);
      if (!nx) { st = fm_err_set(err, FM_ENOMEM, "out of memory reading %s", path); goto fail; }
      sex = nx;
      cap = nc;
    }
    ids[n] = fm_text_strdup(f[is_ind ? 0 : 1]);
    if (!ids[n]) { st = fm_err_set(err, FM_ENOMEM, "out of memory reading %s", path); goto fail; }
    sex[n] = sex_col >= 0 && nf > sex_col && sex_col < f_cap ? fm_sex_code(f[sex_col]) : 0;
    n++;
  }
  if (!is_ind && l.line_no < 2) {
    st = fm_err_set(err, FM_EFORMAT, "%s: expected 2 SAMPLE header lines, found %lld lines", path,
                    (long long)l.line_no);
    goto fail;
  }
  fm_text_lines_close(&l);
  if (f != small) free(f);
  if (sex_out && sex_col >= 0 && n > 0) {
    *sex_out = sex;
    sex = NULL;
  }
  free(sex);
  *ids_out = ids;
  *n_out = n;
  return FM_OK;
fail:
  fm_text_lines_close(&l);
  if (f != small) free(f);
  fm_text_free_ids(ids, n);
  free(sex);
  return st;
}
