/* fmt_vcf.c: VCF/BCF reader over htslib (fm_fmt_vcf.h, docs/formats/vcf.md).
 *
 * Text lines whose FORMAT is exactly GT skip htslib's sample parser (most of
 * a read's time): the GT columns are parsed here into htslib's own GT
 * encoding, and htslib parses only the first eight columns, so the checks
 * of those columns and every rule downstream are the same. A GT column
 * outside the plain grammar (alleles of digits or '.', '/' or '|' between,
 * ploidy 1 or 2) sends the whole line through htslib, as do FORMAT other
 * than GT and BCF. */
#include "fm/fm_fmt_vcf.h"

#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include <htslib/hts.h>
#include <htslib/kseq.h>
#include <htslib/tbx.h>
#include <htslib/vcf.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct vcf_impl {
  char *path;          /* owned copy, for messages */
  char *region;        /* owned copy of the region read, NULL for a whole-file read */
  htsFile *fp;         /* owned */
  bcf_hdr_t *hdr;      /* owned */
  bcf1_t *rec;         /* owned: the current htslib record */
  int is_bcf;
  hts_idx_t *idx;      /* owned: BCF index when a region is read */
  tbx_t *tbx;          /* owned: tabix index of a VCF.gz when a region is read */
  hts_itr_t *itr;      /* owned: region iterator, NULL for a whole-file read */
  int itr_empty;       /* the region names no contig of the index: no records */
  char *notice;        /* owned: info.notice (that contig's absence), or NULL */
  kstring_t line;      /* owned: the current text line (VCF; BCF reads need none) */
  char *chunk;         /* owned: (CHUNK_BYTES) decompressed text of a whole-file read */
  size_t chunk_len, chunk_pos;
  int chunk_eof;
  int gt_fast;         /* GT declared as a FORMAT String and samples present: text lines
                          with FORMAT "GT" may take the fast parser */
  int is_fast;         /* v->gt and v->ploidy of the current record came from the fast parser */
  int is_simple;       /* ... and every call is diploid with alleles 0 or 1, both known: the
                          parser then also left its hardcalls (and hap slots) in place */
  int simple_phased;   /* ... and every such call is phased */
  int is_gt_filled;    /* ... and v->gt, v->ploidy hold it (else only its hardcalls do) */
  const char *gt_text, *gt_end; /* its GT columns in v->line (intact after htslib's parse
                                   of the first eight columns) */
  int hc_only;         /* fm_reader.is_hardcall_only, latched at the first record: the
                          parser leaves hap slots alone and out->hap is NULL */
  int started;
  int64_t n_hap1;      /* ... and this many calls are haploid and known */
  int64_t n_hap_chrom; /* hap_chrom flags set on hap_rid */
  int64_t n;           /* samples */
  /* the record being split: its ALTs are emitted one at a time */
  int has_rec;         /* rec holds a record with ALTs left to emit */
  int next_alt;        /* 1-based allele index of the next split record */
  int32_t *gt;         /* owned by htslib's getter convention: (n_gt) GT values */
  int n_gt_alloc;
  int n_gt;            /* values in gt, < 0 when the record has no GT */
  float *ds;           /* (n_ds) DS values */
  int n_ds_alloc;
  int n_ds;            /* values in ds, < 0 when the record has no DS */
  /* per-record outputs */
  int8_t *hardcall;    /* (n) */
  double *dosage;      /* (n) */
  int8_t *hap;         /* (2 n) */
  uint8_t *ploidy;     /* (n) ploidy of each sample's call in the current record */
  uint8_t *hap_chrom;  /* (n) 1 when the sample had a non-missing haploid call on hap_rid */
  uint8_t *het_site;   /* (n) the split records' het_site: two different known alleles */
  int hap_rid;         /* contig the hap_chrom flags belong to, -1 none yet */
  char *id_buf;        /* owned: synthesized CHROM:POS:REF:ALT */
  size_t id_cap;
  char last_chrom[128];/* last good record, for messages */
  int64_t last_pos;
  int64_t n_lines;     /* text lines after the header taken so far (whole-file text reads) */
  int64_t n_hdr_lines; /* lines of the text header, counted when a message needs them; 0 not yet */
  int64_t n_bcf_recs;  /* BCF records read so far */
  unsigned gt_or;      /* OR of the allele indexes of the GT columns parse_gt_columns filled
                          (at least their largest) */
  int64_t n_bad_dosage;/* problems log: DS values outside [0, 2] set to NaN */
} vcf_impl;

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void vr_close(fm_reader *r) {
  vcf_impl *v = r ? r->impl : NULL;
  if (!v) return;
  if (v->itr) hts_itr_destroy(v->itr);
  if (v->idx) hts_idx_destroy(v->idx);
  if (v->tbx) tbx_destroy(v->tbx);
  if (v->rec) bcf_destroy(v->rec);
  if (v->hdr) bcf_hdr_destroy(v->hdr);
  if (v->fp) hts_close(v->fp);
  free(v->line.s);
  free(v->chunk);
  free(v->gt);
  free(v->ds);
  free(v->hardcall);
  free(v->dosage);
  free(v->hap);
  free(v->ploidy);
  free(v->hap_chrom);
  free(v->het_site);
  free(v->id_buf);
  free(v->region);
  free(v->notice);
  free(v->path);
  free(v);
  r->impl = NULL;
}

static int ensure_gt(vcf_impl *v, size_t n_values) {
  if (n_values <= (size_t)(v->n_gt_alloc > 0 ? v->n_gt_alloc : 0)) return 1;
  int32_t *g = realloc(v->gt, n_values * sizeof *g);
  if (!g) return 0;
  v->gt = g;
  v->n_gt_alloc = (int)n_values;
  return 1;
}

/* One column "a|b" or "a/b" of alleles 0 or 1 at p, then a tab (not last)
 * or the end (last): its sum into hc, its alleles into hap (may be NULL),
 * *phased cleared for '/'. Returns 0 for any other column. */
static inline int simple_column(const char *p, const char *end, int last, int8_t *hc,
                                int8_t *hap, unsigned *phased) {
  if (end - p < 3) return 0;
  const unsigned a = (unsigned)(unsigned char)p[0] - '0', b = (unsigned)(unsigned char)p[2] - '0';
  if (a > 1 || b > 1 || (p[1] != '|' && p[1] != '/')) return 0;
  if (last ? end - p != 3 : end - p < 4 || p[3] != '\t') return 0;
  *phased &= p[1] == '|';
  *hc = (int8_t)(a + b);
  if (hap) hap[0] = (int8_t)a, hap[1] = (int8_t)b;
  return 1;
}

/* The common line: every GT column "a|b" or "a/b" with alleles 0 or 1, a
 * tab between columns. Writes only the hardcalls (sums) and, unless
 * hardcall-only, the hap slots; v->gt is left unfilled (is_gt_filled 0) for
 * parse_gt_columns to fill when a rule needs it. Returns 1 for such a line,
 * else 0 (nothing it wrote is used). */
static int parse_gt_simple(vcf_impl *v, const char *p, const char *end) {
  const int64_t n = v->n;
  int8_t *hap = v->hc_only ? NULL : v->hap;
  unsigned phased = 1;
  int64_t s = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* Two columns per step as the bytes a sep b \t a sep b \t of one 64-bit
   * word, alleles in bit 0 of bytes 0, 2, 4, 6: one compare when both
   * separators are '|' (or both '/'), column by column otherwise. */
  const uint64_t mask = UINT64_C(0xfffefffefffefffe), bits = UINT64_C(0x0001000100010001);
  const uint64_t both_phased = UINT64_C(0x09307c3009307c30), both_unphased = UINT64_C(0x09302f3009302f30);
  uint64_t seps = UINT64_C(0x4000); /* bit 6 of byte 1: set in '|' (0x7c), clear in '/' (0x2f) */
  int64_t n_pairs = n > 2 ? (n - 1) / 2 : 0; /* the last column has no tab after it */
  if (n_pairs > (end - p) / 8) n_pairs = (end - p) / 8;
  for (; s < 2 * n_pairs; s += 2, p += 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    const uint64_t m = w & mask;
    if (m != both_phased && m != both_unphased) {
      if (!simple_column(p, end, 0, v->hardcall + s, hap ? hap + 2 * s : NULL, &phased) ||
          !simple_column(p + 4, end, 0, v->hardcall + s + 1, hap ? hap + 2 * s + 2 : NULL, &phased))
        return 0;
      continue;
    }
    seps &= m;
    const uint64_t u = w & bits, t = u + (u >> 16); /* sums in bytes 0 and 4 */
    const uint16_t hc2 = (uint16_t)((t & 0xffu) | (t >> 24 & 0xff00u));
    memcpy(v->hardcall + s, &hc2, 2);
    if (hap) {
      const uint32_t h = (uint32_t)((u & 1u) | (u >> 8 & 0x100u) | (u >> 16 & 0x10000u) |
                                    (u >> 24 & 0x1000000u));
      memcpy(hap + 2 * s, &h, 4);
    }
  }
  phased &= (unsigned)(seps >> 14) & 1u;
#endif
  for (; s < n; s++, p += 4)
    if (!simple_column(p, end, s + 1 == n, v->hardcall + s, hap ? hap + 2 * s : NULL, &phased))
      return 0;
  v->is_simple = 1;
  v->simple_phased = (int)phased;
  v->n_hap1 = 0;
  v->is_gt_filled = 0;
  return 1;
}

/* The GT columns [p, end) of a line whose FORMAT is GT, into v->gt (2 values
 * per sample) as htslib encodes them: allele a -> (a + 1) << 1, '.' -> 0,
 * each ORed with 1 when '|' precedes it; a haploid call is padded with
 * bcf_int32_vector_end. Also v->ploidy, n_hap1, is_simple, simple_phased,
 * and, for the calls of alleles 0 and 1, hardcall (their sum) and the hap
 * slots (as vr_next would set them for a biallelic record of a contig
 * where no sample is haploid). Returns 1, or 0 for any column outside that
 * grammar (then htslib reads the line). */
static int parse_gt_columns(vcf_impl *v, const char *p, const char *end) {
  int32_t *g = v->gt;
  const int64_t n = v->n;
  const int with_hap = !v->hc_only;
  int64_t n_other = 0, n_hap1 = 0;
  unsigned big = 0;    /* some allele index is 2 or more */
  unsigned any = 0;    /* OR of the allele indexes */
  unsigned phased = 1; /* every diploid call so far is phased */
  int64_t s = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* Two columns per step while both are "a|b" or "a/b" with alleles 0 or 1
   * and a tab after each: bytes a sep b \t a sep b \t of one 64-bit word. */
  for (; s + 2 < n && end - p >= 8; s += 2, p += 8, g += 4) {
    uint64_t w;
    memcpy(&w, p, 8);
    const unsigned x = (unsigned)(w >> 8) & 0xffu, y = (unsigned)(w >> 40) & 0xffu;
    if ((w & UINT64_C(0xfffe00fefffe00fe)) != UINT64_C(0x0930003009300030) ||
        (x != '|' && x != '/') || (y != '|' && y != '/'))
      break;
    const unsigned a0 = (unsigned)w & 1u, b0 = (unsigned)(w >> 16) & 1u;
    const unsigned a1 = (unsigned)(w >> 32) & 1u, b1 = (unsigned)(w >> 48) & 1u;
    g[0] = (int32_t)((a0 + 1) << 1);
    g[1] = (int32_t)((b0 + 1) << 1 | (x == '|'));
    g[2] = (int32_t)((a1 + 1) << 1);
    g[3] = (int32_t)((b1 + 1) << 1 | (y == '|'));
    phased &= (x == '|') & (y == '|');
    v->ploidy[s] = v->ploidy[s + 1] = 2;
    v->hardcall[s] = (int8_t)(a0 + b0);
    v->hardcall[s + 1] = (int8_t)(a1 + b1);
    if (with_hap) {
      const uint32_t h = a0 | b0 << 8 | a1 << 16 | b1 << 24;
      memcpy(v->hap + 2 * s, &h, 4);
    }
  }
#endif
  for (; s < n; s++, g += 2) {
    /* the common column: one-digit alleles, "a|b" or "a/b", then a tab or the end */
    if (end - p >= 3) {
      const unsigned d0 = (unsigned)(unsigned char)p[0] - '0', d1 = (unsigned)(unsigned char)p[2] - '0';
      const char sep = p[1];
      const int last = s + 1 == n;
      if (d0 < 10 && d1 < 10 && (sep == '|' || sep == '/') &&
          (last ? end - p == 3 : end - p > 3 && p[3] == '\t')) {
        g[0] = (int32_t)(d0 + 1) << 1;
        g[1] = (int32_t)((d1 + 1) << 1 | (sep == '|'));
        big |= (d0 | d1) > 1;
        any |= d0 | d1;
        phased &= sep == '|';
        v->ploidy[s] = 2;
        v->hardcall[s] = (int8_t)(d0 + d1);
        v->hap[2 * s] = (int8_t)d0;
        v->hap[2 * s + 1] = (int8_t)d1;
        p += last ? 3 : 4;
        continue;
      }
    }
    int k = 0, known = 0;
    int32_t phase = 0;
    for (;;) {
      int32_t a;
      if (p < end && *p == '.') {
        a = 0;
        p++;
      } else {
        int digits = 0;
        a = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 6) a = 10 * a + (*p++ - '0'), digits++;
        if (digits == 0 || (p < end && *p >= '0' && *p <= '9')) return 0;
        big |= a > 1;
        any |= (unsigned)a;
        known++;
        a = (a + 1) << 1;
      }
      if (k == 2) return 0; /* ploidy above 2: htslib's general path */
      g[k++] = a | phase;
      if (p < end && (*p == '/' || *p == '|')) {
        phase = *p++ == '|';
        continue;
      }
      break;
    }
    if (k == 1) g[1] = bcf_int32_vector_end;
    v->ploidy[s] = (uint8_t)k;
    n_other += k != 2 || known != 2;
    n_hap1 += k == 1 && known == 1;
    if (k == 2 && known == 2) { /* alleles >= 2 make the record not simple */
      phased &= (unsigned)g[1] & 1u;
      v->hap[2 * s] = (int8_t)((g[0] >> 1) - 1);
      v->hap[2 * s + 1] = (int8_t)((g[1] >> 1) - 1);
      v->hardcall[s] = (int8_t)(v->hap[2 * s] + v->hap[2 * s + 1]);
    }
    if (s + 1 < n) {
      if (p >= end || *p != '\t') return 0;
      p++;
    }
  }
  v->is_simple = n_other == 0 && !big;
  v->simple_phased = (int)phased;
  v->n_hap1 = n_hap1;
  v->is_gt_filled = 1;
  v->gt_or = any | 1u; /* the two-column steps above: alleles 0 and 1 */
  return p == end;
}

/* Whole-file text reads take the text in 64 KiB pieces, one BGZF block's
 * worth, and split lines with memchr (hts_getline's bgzf_getline moves one
 * byte at a time). A piece no larger than a block keeps a damaged block's
 * error after the records before it: bgzf_read drops what it had copied
 * in a call that fails. */
#define CHUNK_BYTES ((size_t)1 << 16)

/* Next text line into v->line, as hts_getline(KS_SEP_LINE) gives it (no
 * "\n" or "\r\n"; a last line without one counts): its length, -1 at the
 * end, -3 when compressed input cannot be read, -2 on another error. */
static int next_line(vcf_impl *v) {
  if (v->itr) return tbx_itr_next(v->fp, v->tbx, v->itr, &v->line);
  v->line.l = 0;
  int have = 0;
  for (;;) {
    if (v->chunk_pos == v->chunk_len) {
      if (v->chunk_eof) break;
      const ssize_t got = v->fp->format.compression == no_compression
                              ? hread(v->fp->fp.hfile, v->chunk, CHUNK_BYTES)
                              : bgzf_read(v->fp->fp.bgzf, v->chunk, CHUNK_BYTES);
      if (got < 0) return v->fp->format.compression != no_compression ? -3 : -2;
      v->chunk_len = (size_t)got;
      v->chunk_pos = 0;
      if (got == 0) {
        /* htslib's threaded BGZF reader reports a truncated or corrupt block
         * as the end of the data, with errcode set: an error, not the end */
        if (v->fp->format.compression != no_compression && v->fp->fp.bgzf->errcode) return -3;
        v->chunk_eof = 1;
        break;
      }
    }
    const char *a = v->chunk + v->chunk_pos;
    const size_t left = v->chunk_len - v->chunk_pos;
    const char *nl = memchr(a, '\n', left);
    const size_t take = nl ? (size_t)(nl - a) : left;
    if (kputsn(a, take, &v->line) < 0) return -2;
    have = 1;
    v->chunk_pos += take + (nl != NULL);
    if (nl) break;
  }
  if (!have) return -1;
  v->n_lines++;
  if (v->line.l > 0 && v->line.s[v->line.l - 1] == '\r') v->line.s[--v->line.l] = '\0';
  if (v->line.l > INT_MAX) return -2;
  return (int)v->line.l;
}

/* Parse the text line in v->line: through the fast GT parser when it
 * applies (only the first eight columns then go to htslib), else htslib's
 * whole-line parser. count_only: GT is not needed, never parse it. */
static int parse_line(vcf_impl *v, int count_only) {
  char *s = v->line.s, *end = s + v->line.l, *q = s;
  v->is_fast = 0;
  if (v->gt_fast || count_only) {
    for (int tabs = 0; q && tabs < 8; tabs++) {
      q = memchr(q, '\t', (size_t)(end - q));
      if (q) q++;
    }
    /* q: start of FORMAT, or NULL for a line of 8 columns or fewer */
    if (q) {
      const int is_gt = end - q >= 3 && q[0] == 'G' && q[1] == 'T' && q[2] == '\t';
      if (count_only || (is_gt && ensure_gt(v, 2 * (size_t)v->n) &&
                         (parse_gt_simple(v, q + 3, end) || parse_gt_columns(v, q + 3, end)))) {
        v->gt_text = q + 3;
        v->gt_end = end;
        q[-1] = '\0';
        v->line.l = (size_t)(q - 1 - s);
        v->is_fast = !count_only;
      }
    }
  }
  return vcf_parse1(&v->line, v->hdr, v->rec) < 0 ? -2 : 0;
}

/* Lines of the text header of path: through its first line that starts
 * with '#' but not "##", where htslib's header ends; 0 when unreadable. */
static int64_t header_lines(const char *path) {
  htsFile *fp = hts_open(path, "r");
  kstring_t line = {0, 0, NULL};
  int64_t n = 0;
  if (!fp) return 0;
  while (hts_getline(fp, KS_SEP_LINE, &line) >= 0) {
    n++;
    if (line.l >= 1 && line.s[0] == '#' && (line.l < 2 || line.s[1] != '#')) break;
  }
  hts_close(fp);
  free(line.s);
  return n;
}

/* Column col (0-based) of the current text line, up to a tab or a NUL
 * (htslib's parser writes NULs over the tabs of what it parsed), copied
 * into out (n bytes, cut with "..." when longer). */
static void line_column(const vcf_impl *v, int col, char *out, size_t n) {
  const char *p = v->line.s, *end = v->line.s ? v->line.s + v->line.l : NULL;
  out[0] = '\0';
  if (!p) return;
  for (int c = 0; c < col; c++) {
    while (p < end && *p != '\t' && *p != '\0') p++;
    if (p == end) return;
    p++;
  }
  size_t k = 0;
  while (p + k < end && p[k] != '\t' && p[k] != '\0') k++;
  if (k < n) {
    memcpy(out, p, k);
    out[k] = '\0';
  } else {
    snprintf(out, n, "%.*s...", (int)(n - 4), p);
  }
}

/* The record just read (or that failed to read), for messages: "record at
 * line 7 (1:600)" (whole-file text: the line number in the file), "record
 * at 1:600 in region '1'" (text through the index), "record 5 (1:600)" or
 * "record 5 (after 1:500)" (BCF: its number in the file or region; the
 * record's own CHROM:POS only when rec_ok, htslib having decoded them). */
static const char *where(vcf_impl *v, int rec_ok, char *buf, size_t n) {
  if (!v->is_bcf) {
    char chrom[64], pos[32];
    line_column(v, 0, chrom, sizeof chrom);
    line_column(v, 1, pos, sizeof pos);
    char at[112];
    snprintf(at, sizeof at, "%s%s%s", chrom, pos[0] ? ":" : "", pos);
    if (v->itr) {
      snprintf(buf, n, "record at %s in region '%s'", at, v->region);
    } else {
      if (v->n_hdr_lines == 0) v->n_hdr_lines = header_lines(v->path);
      snprintf(buf, n, at[0] ? "record at line %lld (%s)" : "record at line %lld%s",
               (long long)(v->n_hdr_lines + v->n_lines), at);
    }
    return buf;
  }
  const char *c = rec_ok && v->rec->rid >= 0 && v->rec->rid < v->hdr->n[BCF_DT_CTG] &&
                          v->rec->pos >= -1
                      ? bcf_hdr_id2name(v->hdr, v->rec->rid)
                      : NULL;
  char num[48] = "";
  if (v->itr) snprintf(num, sizeof num, " in region '%.24s'", v->region);
  if (c)
    snprintf(buf, n, "record %lld%s (%s:%lld)", (long long)v->n_bcf_recs, num, c,
             (long long)v->rec->pos + 1);
  else if (v->last_pos > 0)
    snprintf(buf, n, "record %lld%s (after %s:%lld)", (long long)v->n_bcf_recs, num,
             v->last_chrom, (long long)v->last_pos);
  else
    snprintf(buf, n, "record %lld%s", (long long)v->n_bcf_recs, num);
  return buf;
}

/* The POS column of the text line in v->line: digits only (VCF: a
 * non-negative integer; htslib 1.16 reads "abc" or "-5" as 0 and "12x" as
 * 12). 1 when it is, or when the line has no second column (htslib then
 * refuses the line). */
static int pos_column_ok(const vcf_impl *v) {
  const char *s = v->line.s, *end = s + v->line.l;
  const char *p = memchr(s, '\t', v->line.l);
  if (!p) return 1;
  p++;
  const char *q = p;
  while (q < end && *q >= '0' && *q <= '9') q++;
  return q > p && (q == end || *q == '\t');
}

/* Read the next htslib record into v->rec: 0 ok, 1 end, -1 error (err set).
 * count_only: only the allele count of the record is needed. */
static int read_rec_logged(vcf_impl *v, fm_err *err, int count_only) {
  int ret;
  char at[256];
  if (v->itr_empty) return 1;
  if (v->is_bcf) {
    v->n_bcf_recs++;
    ret = v->itr ? bcf_itr_next(v->fp, v->itr, v->rec) : bcf_read(v->fp, v->hdr, v->rec);
    /* a BGZF read error (the threaded reader ends a truncated file early) */
    if (ret < 0 && v->fp->fp.bgzf && v->fp->fp.bgzf->errcode) ret = -3;
    /* POS below 0 (-1 here is POS 0, a telomere): htslib 1.16 reads the
     * int32 of any other negative POS as unsigned, 2^32 - 6 for -5 */
    if (ret == 0 && (v->rec->pos < -1 || v->rec->pos > INT32_MAX)) {
      const int64_t p = v->rec->pos <= (int64_t)UINT32_MAX && v->rec->pos > INT32_MAX
                            ? v->rec->pos - ((int64_t)1 << 32)
                            : v->rec->pos;
      fm_err_set(err, FM_EFORMAT, "%s: invalid POS %lld (a non-negative integer expected) in the %s",
                 v->path, (long long)p + 1, where(v, 0, at, sizeof at));
      return -1;
    }
  } else {
    ret = next_line(v);
    if (ret >= 0 && !pos_column_ok(v)) {
      char pos[32];
      line_column(v, 1, pos, sizeof pos);
      fm_err_set(err, FM_EFORMAT, "%s: invalid POS '%s' (a non-negative integer expected) in the %s",
                 v->path, pos, where(v, 1, at, sizeof at));
      return -1;
    }
    if (ret >= 0) ret = parse_line(v, count_only);
  }
  if (ret == -1) return 1;
  /* Undefined contigs and tags are added to the header by htslib with a
   * warning; every other error code marks a record we cannot trust. */
  int bad = ret < -1 || (v->rec->errcode & ~(BCF_ERR_CTG_UNDEF | BCF_ERR_TAG_UNDEF)) != 0;
  if (!bad && bcf_unpack(v->rec, count_only ? BCF_UN_STR : BCF_UN_STR | BCF_UN_FMT) < 0) bad = 1;
  if (!bad && v->rec->n_allele < 1) bad = 1;
  if (bad && ret == -3) {
    if (v->last_pos > 0)
      fm_err_set(err, FM_EFORMAT,
                 "%s: the compressed data after record %s:%lld cannot be read (a truncated or "
                 "corrupt BGZF block)", v->path, v->last_chrom, (long long)v->last_pos);
    else
      fm_err_set(err, FM_EFORMAT,
                 "%s: the compressed data before the first record cannot be read (a truncated or "
                 "corrupt BGZF block)", v->path);
    return -1;
  }
  if (bad) {
    fm_err_set(err, FM_EFORMAT, "%s: malformed %s", v->path, where(v, ret >= -1, at, sizeof at));
    return -1;
  }
  snprintf(v->last_chrom, sizeof v->last_chrom, "%s", bcf_seqname(v->hdr, v->rec));
  v->last_pos = (int64_t)v->rec->pos + 1;
  return 0;
}

/* htslib's own log lines ("[W::vcf_parse] ..." on stderr) are off while it
 * reads for this reader, whose errors say what went wrong instead: an R
 * session shows no console lines beside its conditions. */
static int quiet_htslib(void) {
  const int level = hts_get_log_level();
  hts_set_log_level(HTS_LOG_OFF);
  return level;
}

static int read_rec(vcf_impl *v, fm_err *err, int count_only) {
  const int level = quiet_htslib();
  const int rc = read_rec_logged(v, err, count_only);
  hts_set_log_level(level);
  return rc;
}

static fm_status set_ploidy(vcf_impl *v);

/* Every allele index of v->gt names an allele of the record (plink2: "invalid
 * GT field"); htslib encodes "0/9" of a biallelic record as it reads. */
static fm_status check_gt_alleles(vcf_impl *v, fm_err *err) {
  const int n_allele = v->rec->n_allele;
  const int per = v->n_gt > 0 && v->n > 0 ? v->n_gt / (int)v->n : 0;
  for (int i = 0; per && i < v->n_gt; i++) {
    const int32_t g = v->gt[i];
    if (g == bcf_int32_vector_end || bcf_gt_is_missing(g) || bcf_gt_allele(g) < n_allele) continue;
    char at[256];
    return fm_err_set(err, FM_EFORMAT,
                      "%s: invalid GT field in the %s: sample %s has allele %d but the record has "
                      "%d alleles (REF and %d ALT)",
                      v->path, where(v, 1, at, sizeof at), v->hdr->samples[i / per],
                      bcf_gt_allele(g), n_allele, n_allele - 1);
  }
  return FM_OK;
}

/* Fetch GT and DS of v->rec once per htslib record. */
static fm_status load_fields(vcf_impl *v, fm_err *err) {
  char at[256];
  if (v->is_fast) { /* GT from the fast parser; no DS (FORMAT is GT alone) */
    v->n_gt = (int)(2 * v->n);
    v->n_ds = -1;
    fm_status st = set_ploidy(v);
    /* the sums left by parse_gt_simple serve a biallelic record of a contig
     * without haploid samples; any other rule reads v->gt */
    if (!v->is_gt_filled && (v->rec->n_allele != 2 || v->n_hap_chrom > 0) &&
        !parse_gt_columns(v, v->gt_text, v->gt_end))
      return fm_err_set(err, FM_EINTERNAL, "%s: GT columns of the %s parsed once but not twice",
                        v->path, where(v, 1, at, sizeof at));
    /* parse_gt_simple takes alleles 0 and 1 only */
    if (st == FM_OK && v->is_gt_filled && v->gt_or >= (unsigned)v->rec->n_allele)
      st = check_gt_alleles(v, err);
    return st;
  }
  /* htslib 1.16's bcf_get_format_values calls exit(1) on a FORMAT entry of
   * any storage type other than int8/16/32 or float (e.g. a GT with no
   * values, from a FORMAT column with empty keys "::GT", or a BCF type byte
   * out of range): refuse the record before asking for GT or DS. Only the
   * tags htslib would decode are checked (declared GT String, DS Float). */
  int gt_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "GT"), ds_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "DS");
  if (gt_id < 0 || !bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, gt_id) ||
      bcf_hdr_id2type(v->hdr, BCF_HL_FMT, gt_id) != BCF_HT_STR)
    gt_id = -1;
  if (ds_id < 0 || !bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, ds_id) ||
      bcf_hdr_id2type(v->hdr, BCF_HL_FMT, ds_id) != BCF_HT_REAL)
    ds_id = -1;
  for (int i = 0; i < (int)v->rec->n_fmt; i++) {
    const bcf_fmt_t *f = &v->rec->d.fmt[i];
    if (!f->p || f->id < 0 || (f->id != gt_id && f->id != ds_id)) continue;
    if (f->type != BCF_BT_INT8 && f->type != BCF_BT_INT16 && f->type != BCF_BT_INT32 &&
        f->type != BCF_BT_FLOAT)
      return fm_err_set(err, FM_EFORMAT, "%s: malformed %s field in the %s", v->path,
                        f->id == gt_id ? "GT" : "DS", where(v, 1, at, sizeof at));
  }
  v->n_gt = bcf_get_genotypes(v->hdr, v->rec, &v->gt, &v->n_gt_alloc);
  if (v->n_gt == -4) return fm_err_set(err, FM_ENOMEM, "%s: out of memory at %s:%lld", v->path, v->last_chrom, (long long)v->last_pos);
  if (v->n_gt >= 0 && v->n_gt % (v->n > 0 ? v->n : 1) != 0)
    return fm_err_set(err, FM_EFORMAT, "%s: GT of the %s has %d values for %lld samples",
                      v->path, where(v, 1, at, sizeof at), v->n_gt, (long long)v->n);
  if (v->n_gt > 0) {
    fm_status st = check_gt_alleles(v, err);
    if (st != FM_OK) return st;
  }
  v->n_ds = bcf_get_format_float(v->hdr, v->rec, "DS", &v->ds, &v->n_ds_alloc);
  if (v->n_ds == -4) return fm_err_set(err, FM_ENOMEM, "%s: out of memory at %s:%lld", v->path, v->last_chrom, (long long)v->last_pos);
  if (v->n_ds >= 0 && (v->n == 0 || v->n_ds % v->n != 0)) v->n_ds = -1;
  return set_ploidy(v);
}

/* Ploidy of each call and the haploid-on-this-contig flags, from the whole
 * record before any split record is emitted. */
static fm_status set_ploidy(vcf_impl *v) {
  if (v->hap_rid != v->rec->rid) {
    memset(v->hap_chrom, 0, (size_t)v->n);
    v->hap_rid = v->rec->rid;
    v->n_hap_chrom = 0;
  }
  int per = v->n_gt > 0 && v->n > 0 ? v->n_gt / (int)v->n : 0;
  if (v->is_fast && v->n_hap1 == 0) return FM_OK; /* ploidy set by the parser */
  for (int64_t s = 0; s < v->n; s++) {
    int k = 0;
    const int32_t *g = per ? v->gt + s * per : NULL;
    while (k < per && g[k] != bcf_int32_vector_end) k++;
    v->ploidy[s] = (uint8_t)(k > 255 ? 255 : k);
    if (k == 1 && !bcf_gt_is_missing(g[0]) && !v->hap_chrom[s]) {
      v->hap_chrom[s] = 1;
      v->n_hap_chrom++;
    }
  }
  return FM_OK;
}

static const char *make_id(vcf_impl *v, const char *alt, fm_err *err, fm_status *st) {
  const char *id = v->rec->d.id;
  *st = FM_OK;
  if (id && strcmp(id, ".") != 0) return id;
  const char *chrom = bcf_seqname(v->hdr, v->rec);
  size_t need = strlen(chrom) + strlen(v->rec->d.allele[0]) + strlen(alt) + 32;
  if (need > v->id_cap) {
    char *b = realloc(v->id_buf, need);
    if (!b) {
      *st = fm_err_set(err, FM_ENOMEM, "%s: out of memory at %s:%lld", v->path, v->last_chrom,
                       (long long)v->last_pos);
      return NULL;
    }
    v->id_buf = b;
    v->id_cap = need;
  }
  snprintf(v->id_buf, v->id_cap, "%s:%lld:%s:%s", chrom, (long long)v->rec->pos + 1,
           v->rec->d.allele[0], alt);
  return v->id_buf;
}

static fm_status vr_next(fm_reader *r, fm_gt_record *out, fm_err *err) {
  vcf_impl *v = r->impl;
  memset(out, 0, sizeof *out);
  out->n_samples = v->n;
  if (!v->has_rec) {
    if (!v->started) {
      v->started = 1;
      v->hc_only = r->is_hardcall_only;
    }
    for (;;) {
      int rc = read_rec(v, err, 0);
      if (rc < 0) return err ? err->code : FM_EFORMAT;
      if (rc > 0) return FM_FMT_END;
      /* A record with no ALT ('.') has nothing to count: skipped. */
      if (v->rec->n_allele < 2) continue;
      fm_status st = load_fields(v, err);
      if (st != FM_OK) return st;
      v->has_rec = 1;
      v->next_alt = 1;
      break;
    }
  }
  const int j = v->next_alt; /* counted allele index */
  const int n_allele = v->rec->n_allele;
  const int per = v->n_gt > 0 && v->n > 0 ? v->n_gt / (int)v->n : 0;
  int all_phased = per > 0;
  /* Every call diploid, known, 0 or 1, and no sample haploid on this
   * contig: the rules below reduce to the sums the parser left in place. */
  const int simple = v->is_fast && v->is_simple && n_allele == 2 && v->n_hap_chrom == 0;
  if (simple) all_phased = v->simple_phased;
  for (int64_t s = 0; !simple && s < v->n; s++) {
    const int32_t *g = per ? v->gt + s * per : NULL;
    const int k = per ? v->ploidy[s] : 0;
    int8_t hc = FM_GT_MISSING, h0 = FM_GT_MISSING, h1 = FM_GT_MISSING;
    v->het_site[s] = 0;
    if (k == 1) {
      if (!bcf_gt_is_missing(g[0])) {
        int a = bcf_gt_allele(g[0]);
        if (a < n_allele) {
          h0 = h1 = (int8_t)(a == j);
          hc = (int8_t)(2 * (a == j));
        }
      }
    } else if (k == 2) {
      if (!bcf_gt_is_phased(g[1])) all_phased = 0;
      int m0 = bcf_gt_is_missing(g[0]), m1 = bcf_gt_is_missing(g[1]);
      int a0 = m0 ? -1 : bcf_gt_allele(g[0]), a1 = m1 ? -1 : bcf_gt_allele(g[1]);
      if (a0 >= n_allele) a0 = -1, m0 = 1;
      if (a1 >= n_allele) a1 = -1, m1 = 1;
      if (!m0) h0 = (int8_t)(a0 == j);
      if (!m1) h1 = (int8_t)(a1 == j);
      if (!m0 && !m1) {
        v->het_site[s] = a0 != a1;
        if (a0 != a1 && v->hap_chrom[s]) {
          /* heterozygous call of a sample haploid on this contig */
          h0 = h1 = FM_GT_MISSING;
        } else {
          hc = (int8_t)((a0 == j) + (a1 == j));
        }
      }
    } else if (k > 2) {
      all_phased = 0; /* polyploid: not representable, missing */
    }
    v->hardcall[s] = hc;
    v->hap[2 * s] = h0;
    v->hap[2 * s + 1] = h1;
  }
  out->hardcall = v->hardcall;
  if (n_allele > 2) out->het_site = v->het_site; /* a split record: the site's hets */
  out->is_phased = all_phased && v->n > 0;
  if (v->hc_only) out->is_phased = 0;
  out->hap = out->is_phased ? v->hap : NULL;
  if (out->is_phased) r->info.is_phased = 1;
  /* DS: Number=A (one per ALT) or one value for a biallelic record. */
  int ds_per = v->n_ds > 0 && v->n > 0 ? v->n_ds / (int)v->n : 0;
  if (ds_per >= n_allele - 1 || (ds_per == 1 && n_allele == 2)) {
    for (int64_t s = 0; s < v->n; s++) {
      float f = v->ds[s * ds_per + (j - 1)];
      double d = NAN;
      if (!bcf_float_is_missing(f) && !bcf_float_is_vector_end(f)) {
        d = (double)f;
        if (per && v->ploidy[s] == 1) d *= 2.0; /* haploid: PLINK 0..2 scale */
        if (!(d >= 0.0 && d <= 2.0 + 1e-6)) {
          v->n_bad_dosage++;
          d = NAN;
        } else if (d > 2.0) {
          d = 2.0;
        }
      }
      v->dosage[s] = d;
    }
    out->dosage = v->dosage;
    /* No GT: hardcalls from DS by plink2's rule (fm_fmt.h): the nearest
     * count when within 0.1 of it in 1/16384 units, else missing. DS is a
     * float32, so 1.1 is 1.10000002: 18022.4 units, 1638 from 1, called. */
    if (!per) {
      for (int64_t s = 0; s < v->n; s++) v->hardcall[s] = fm_hardcall_from_dosage(v->dosage[s]);
    }
  }
  fm_status st;
  out->chrom = bcf_seqname(v->hdr, v->rec);
  out->pos = (int64_t)v->rec->pos + 1;
  out->ref = v->rec->d.allele[0];
  out->alt = v->rec->d.allele[j];
  out->id = make_id(v, out->alt, err, &st);
  if (st != FM_OK) return st;
  if (++v->next_alt >= n_allele) v->has_rec = 0;
  return FM_OK;
}

static fm_status vr_count(fm_reader *r, int64_t *n_out, const fm_ctl *ctl, fm_err *err) {
  return fm_fmt_vcf_count(r, n_out, ctl, err);
}

static const fm_reader_ops vr_ops = {vr_next, vr_close, vr_count};

fm_status fm_fmt_vcf_count(fm_reader *r, int64_t *n_records_out, const fm_ctl *ctl, fm_err *err) {
  if (n_records_out) *n_records_out = 0;
  if (!r || r->ops != &vr_ops || !n_records_out)
    return fm_err_set(err, FM_EARG, "fm_fmt_vcf_count: r must be a VCF/BCF reader and n_records_out not NULL");
  vcf_impl *v = r->impl;
  int64_t n = 0;
  if (v->has_rec) { /* split records of the current site not yet returned */
    n = v->rec->n_allele - v->next_alt;
    v->has_rec = 0;
  }
  for (int64_t sites = 1;; sites++) {
    if ((sites & 4095) == 0 && fm_ctl_cancelled(ctl))
      return fm_err_set(err, FM_ECANCELLED, "%s: counting records was cancelled after %lld",
                        v->path, (long long)n);
    const int rc = read_rec(v, err, 1);
    if (rc < 0) return err ? err->code : FM_EFORMAT;
    if (rc > 0) break;
    if (v->rec->n_allele >= 2) n += v->rec->n_allele - 1;
  }
  *n_records_out = n;
  return FM_OK;
}

/* Where a header htslib refused lies, for its message: a text VCF's
 * leading '#' lines ("lines 1 to 4, where the file ends" when no record
 * follows, e.g. a file cut inside its header); a BCF's header text, which
 * starts at byte 9 of the decompressed stream. */
static void header_extent(const char *path, int is_bcf, char *out, size_t n_out) {
  if (is_bcf) {
    snprintf(out, n_out, "its text at decompressed byte offset 9");
    return;
  }
  htsFile *fp = hts_open(path, "r");
  kstring_t line = {0, 0, NULL};
  long long n = 0;
  int at_end = 1;
  if (fp) {
    while (hts_getline(fp, KS_SEP_LINE, &line) >= 0) {
      if (line.l == 0 || line.s[0] != '#') {
        at_end = 0;
        break;
      }
      n++;
    }
    hts_close(fp);
  }
  free(line.s);
  if (!fp || n == 0)
    snprintf(out, n_out, "line 1");
  else
    snprintf(out, n_out, "lines 1 to %lld%s", n, at_end ? ", where the file ends" : "");
}

/* The first bytes of path, as hex and then as text when printable, for a
 * wrong-magic message ("23 23 6e 6f 74 76 \"##notv\""); 0 when the file
 * cannot be read. A VCF starts with "##fileformat=VCF", a BCF with "BCF\2",
 * either possibly inside BGZF (1f 8b). */
static int first_bytes_hex(const char *path, char *out, size_t n_out) {
  unsigned char b[6];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  const size_t got = fread(b, 1, sizeof b, f);
  const int failed = ferror(f); /* e.g. a directory */
  fclose(f);
  if (failed) return 0;
  size_t k = 0;
  int text = got > 0;
  out[0] = '\0';
  if (got == 0) snprintf(out, n_out, "the file is empty");
  for (size_t i = 0; i < got && k < n_out; i++) {
    k += (size_t)snprintf(out + k, n_out - k, i ? " %02x" : "%02x", (unsigned)b[i]);
    if (b[i] < 0x20 || b[i] > 0x7e) text = 0;
  }
  if (text && k < n_out) snprintf(out + k, n_out - k, " \"%.*s\"", (int)got, (const char *)b);
  return 1;
}

/* Contig name -> id callbacks for hts_parse_region: the BCF header's
 * contigs, the tabix index's names. */
static int bcf_name2id(void *hdr, const char *name) {
  return bcf_hdr_id2int((const bcf_hdr_t *)hdr, BCF_DT_CTG, name);
}
static int tbx_name2id_f(void *tbx, const char *name) { return tbx_name2id((tbx_t *)tbx, name); }
/* Any name but the whole region string (ctx), which must split at a colon. */
static int any_prefix(void *region, const char *name) {
  return strcmp((const char *)region, name) == 0 ? -1 : 0;
}

/* The contig of a region whose coordinates region_ok accepted: the text
 * before its last ':' when what follows is coordinates, else all of it. */
typedef struct contig_of {
  const char *region;
  const char *name; /* the prefix hts_parse_region tried last */
  size_t len;
} contig_of;
static int note_prefix(void *ctx, const char *name) {
  contig_of *c = ctx;
  if (strcmp(c->region, name) == 0) return -1;
  c->name = c->region, c->len = strlen(name);
  return 0;
}

/* info.notice for a region of a contig the file does not list: the contig
 * and the first names it does list (BCF header contigs, tabix names). */
static void note_absent_contig(vcf_impl *v, const char *region) {
  contig_of c = {region, region, strlen(region)};
  int tid = -1;
  hts_pos_t beg, end;
  if (strchr(region, ':') &&
      !hts_parse_region(region, &tid, &beg, &end, note_prefix, &c, HTS_PARSE_THOUSANDS_SEP))
    c.name = region, c.len = strlen(region);
  int n = 0;
  const char **names = v->is_bcf ? bcf_hdr_seqnames(v->hdr, &n) : tbx_seqnames(v->tbx, &n);
  char list[160] = "";
  size_t k = 0;
  for (int i = 0; i < n && i < 8 && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names[i]);
  if (n > 8 && k < sizeof list) snprintf(list + k, sizeof list - k, " and %d more", n - 8);
  free(names);
  const char *base = strrchr(v->path, '/');
  base = base ? base + 1 : v->path;
  const char *fmt = "region '%s': contig '%.*s' is not in the %s of %s, which lists %s; no records read";
  const char *where = v->is_bcf ? "header" : "index";
  const char *listed = n ? list : "no contigs";
  int len = snprintf(NULL, 0, fmt, region, (int)c.len, c.name, where, base, listed);
  if (len > 0 && (v->notice = malloc((size_t)len + 1)))
    snprintf(v->notice, (size_t)len + 1, fmt, region, (int)c.len, c.name, where, base, listed);
}

/* Whether region parses as htslib's queries parse it (hts_parse_region):
 * with the contig known to name2id, as it would be queried; else with any
 * contig name, so that the coordinates of a region of a contig absent from
 * the index are checked too ("22:abc" is malformed, "22:1-10" reads as
 * no records). "." and "*" are htslib's whole-file and unplaced queries. */
static int region_ok(const char *region, hts_name2id_f name2id, void *names) {
  int tid = -1;
  hts_pos_t beg, end;
  if (strcmp(region, ".") == 0 || strcmp(region, "*") == 0) return 1;
  if (hts_parse_region(region, &tid, &beg, &end, name2id, names, HTS_PARSE_THOUSANDS_SEP))
    return 1;
  if (tid != -1) return 0; /* a known contig, coordinates that do not parse (or -2: no memory) */
  if (!strchr(region, ':')) return 1; /* a contig name alone: absent */
  tid = -1;
  return hts_parse_region(region, &tid, &beg, &end, any_prefix, (void *)region,
                          HTS_PARSE_THOUSANDS_SEP) != NULL;
}

static fm_status open_logged(const char *path, const char *region, fm_reader **out, fm_err *err) {
  fm_reader *r = NULL;
  vcf_impl *v = NULL;
  fm_status st = FM_OK;
  if (out) *out = NULL;
  if (!path || !out) return fm_err_set(err, FM_EARG, "fm_fmt_vcf_open: path and out must not be NULL");
  r = fm_reader_new(&vr_ops, sizeof *v);
  if (!r) return fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
  v = r->impl;
  v->hap_rid = -1;
  if (!(v->path = dup_str(path))) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
    goto fail;
  }
  v->fp = hts_open(path, "r");
  if (!v->fp) {
    /* htslib also refuses a readable file whose first bytes it cannot place */
    char magic[48];
    if (!first_bytes_hex(path, magic, sizeof magic)) {
      st = fm_err_set(err, FM_EIO, "%s: cannot open the file", path);
      goto fail;
    }
    st = fm_err_set(err, FM_EFORMAT, "%s: not a VCF or BCF file (byte offset 0: %s)", path, magic);
    goto fail;
  }
  const htsFormat *fmt = hts_get_format(v->fp);
  if (fmt->category != variant_data || (fmt->format != vcf && fmt->format != bcf)) {
    char magic[48];
    if (!first_bytes_hex(path, magic, sizeof magic)) snprintf(magic, sizeof magic, "unreadable");
    st = fm_err_set(err, FM_EFORMAT, "%s: not a VCF or BCF file (byte offset 0: %s)", path, magic);
    goto fail;
  }
  v->is_bcf = fmt->format == bcf;
  v->hdr = bcf_hdr_read(v->fp);
  if (!v->hdr) {
    char where[96];
    header_extent(path, v->is_bcf, where, sizeof where);
    st = fm_err_set(err, FM_EFORMAT, "%s: cannot read the %s header (%s)", path,
                    v->is_bcf ? "BCF" : "VCF", where);
    goto fail;
  }
  v->rec = bcf_init();
  if (!v->rec) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
    goto fail;
  }
  v->n = bcf_hdr_nsamples(v->hdr);
  const int gt_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "GT");
  v->gt_fast = !v->is_bcf && v->n > 0 && gt_id >= 0 &&
               bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, gt_id) &&
               bcf_hdr_id2type(v->hdr, BCF_HL_FMT, gt_id) == BCF_HT_STR;
  /* (No htslib decompression thread: measured on 2 cores, its hand-offs cost
   * more than libdeflate takes to inflate in this thread, 2026-11-30.) */
  if (!region && !v->is_bcf && !(v->chunk = malloc(CHUNK_BYTES))) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
    goto fail;
  }
  if (region) {
    if (!(v->region = dup_str(region))) {
      st = fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
      goto fail;
    }
    if (!region[0]) {
      st = fm_err_set(err, FM_EARG, "%s: region '' is empty (expected CHROM, CHROM:BEG or CHROM:BEG-END)", path);
      goto fail;
    }
    hts_name2id_f name2id;
    void *names;
    if (v->is_bcf) {
      v->idx = bcf_index_load(path);
      if (!v->idx) {
        st = fm_err_set(err, FM_EARG, "%s: region '%s' needs an index (.csi) beside the file", path, region);
        goto fail;
      }
      name2id = bcf_name2id;
      names = v->hdr;
    } else {
      if (fmt->compression != bgzf || !(v->tbx = tbx_index_load(path))) {
        st = fm_err_set(err, FM_EARG, "%s: region '%s' needs a BGZF file with an index (.tbi/.csi) beside it", path, region);
        goto fail;
      }
      name2id = tbx_name2id_f;
      names = v->tbx;
    }
    if (!region_ok(region, name2id, names)) {
      st = fm_err_set(err, FM_EARG,
                      "%s: region '%s' is malformed (expected CHROM, CHROM:BEG or CHROM:BEG-END, "
                      "positions 1-based and BEG <= END)", path, region);
      goto fail;
    }
    v->itr = v->is_bcf ? bcf_itr_querys(v->idx, v->hdr, region) : tbx_itr_querys(v->tbx, region);
    /* a well-formed region of a contig the index does not list: no records */
    if (!v->itr) {
      v->itr_empty = 1;
      note_absent_contig(v, region);
      r->info.notice = v->notice;
    }
    /* An index over a longer file (this one truncated, or the index stale)
     * lists chunks past the end, which would read as no records. */
    struct stat sb;
    if (v->itr && stat(path, &sb) == 0) {
      for (int i = 0; i < v->itr->n_off; i++) {
        const unsigned long long beg = v->itr->off[i].u >> 16, end = v->itr->off[i].v >> 16;
        /* a chunk may end exactly at the end of a file without the EOF block */
        if (beg >= (unsigned long long)sb.st_size || end > (unsigned long long)sb.st_size) {
          st = fm_err_set(err, FM_EFORMAT,
                          "%s: the index puts region '%s' at byte offset %llu but the file has %lld "
                          "bytes (truncated, or the index is not this file's)",
                          path, region, beg >= (unsigned long long)sb.st_size ? beg : end,
                          (long long)sb.st_size);
          goto fail;
        }
      }
    }
  }
  size_t n = (size_t)(v->n > 0 ? v->n : 1);
  v->hardcall = malloc(n);
  v->dosage = malloc(n * sizeof(double));
  v->hap = malloc(2 * n);
  v->ploidy = calloc(n, 1);
  v->hap_chrom = calloc(n, 1);
  v->het_site = calloc(n, 1);
  r->sample_ids = calloc(n, sizeof(char *));
  if (!v->hardcall || !v->dosage || !v->hap || !v->ploidy || !v->hap_chrom || !v->het_site ||
      !r->sample_ids) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory for %lld samples", path, (long long)v->n);
    goto fail;
  }
  r->info.format = v->is_bcf ? "bcf" : "vcf";
  r->info.n_samples = v->n; /* set before sample_ids so close frees what exists */
  for (int64_t s = 0; s < v->n; s++) {
    if (!(r->sample_ids[s] = dup_str(v->hdr->samples[s]))) {
      st = fm_err_set(err, FM_ENOMEM, "%s: out of memory for sample names", path);
      goto fail;
    }
  }
  r->info.n_variants = -1;
  r->info.is_phased = 0;
  int ds_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "DS");
  r->info.has_dosage = ds_id >= 0 && bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, ds_id) &&
                       bcf_hdr_id2type(v->hdr, BCF_HL_FMT, ds_id) == BCF_HT_REAL;
  *out = r;
  return FM_OK;
fail:
  fm_reader_close(r);
  return st;
}

fm_status fm_fmt_vcf_open(const char *path, const char *region, fm_reader **out, fm_err *err) {
  const int level = quiet_htslib();
  const fm_status st = open_logged(path, region, out, err);
  hts_set_log_level(level);
  return st;
}
