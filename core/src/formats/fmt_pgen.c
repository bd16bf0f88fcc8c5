/* fmt_pgen.c: PLINK 2 PGEN/PVAR/PSAM reader (fm_fmt_pgen.h). Layout:
 * docs/formats/pgen.md, written from the PGEN specification (pgen_spec). */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include "fm/fm_fmt_pgen.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fm/fm_codec_bed2.h"
#include "fmt_plink_impl.h"

typedef long long ll;
typedef unsigned long long ull;

#define PGEN_BLOCK 65536
#define PVAR_MAX_TOK 16

typedef struct pgen_impl {
  FILE *f;
  char *pgen_path, *pvar_path, *psam_path;
  uint64_t file_bytes;
  int mode;                  /* 0x02 or 0x10 */
  int64_t n_samples, n_variants, next;
  /* mode 0x10 index */
  uint8_t *vrtype;           /* (n_variants) */
  uint32_t *vrlen;           /* (n_variants) record bytes */
  uint64_t *block_off;       /* (n_blocks) */
  uint64_t pos;              /* byte offset of record `next` */
  uint64_t fpos;             /* stdio position after the last read (UINT64_MAX unknown) */
  /* mode 0x02 */
  uint64_t fixed_off;
  /* buffers */
  uint8_t *rec;              /* record bytes */
  size_t rec_cap;
  uint8_t *cat;              /* (n_samples) main-track category 0..3 */
  uint8_t lut4[256][4];      /* the 4 categories of a byte */
  uint8_t *ldref;            /* (n_samples) categories of the last non-LD record */
  int has_ldref;
  /* hardcall-only reads (fm_reader.is_hardcall_only, latched at the first
   * record) keep the main track packed, 2 bits per sample as stored, and
   * skip the phase and dosage tracks of biallelic records */
  int packed, started;
  uint8_t *pk;               /* (ceil(n_samples / 4)) main-track categories, packed */
  uint8_t *pk_ldref;         /* (ceil(n_samples / 4)) packed categories of the last non-LD record */
  uint8_t *bed2;             /* (ceil(n_samples / 4)) the record's bed2 codes */
  uint16_t spread[256];      /* 8 bits -> 8 2-bit fields, 0b11 where the bit is set */
  uint32_t *didx;            /* (n_samples) difflist sample ids */
  uint8_t *dval;             /* (n_samples) difflist values */
  int8_t *hardcall, *hap;
  double *dosage;            /* (n_samples) when info.has_dosage */
  int has_dosage;
  /* multi-allelic split state */
  uint8_t *a1, *a2;          /* (n_samples) allele codes a1 <= a2, 255 missing */
  uint8_t *het_site;         /* (n_samples) a1 != a2, both known: the split records' het_site */
  uint8_t *ph;               /* (n_samples) 0 unphased/hom, 1 phased a1|a2, 2 phased a2|a1 */
  int split_k, split_j, split_all_phased;
  char *alts[256];
  int64_t split_pos;
  const char *split_id;
  /* .pvar */
  fm_plink_lines pvar;
  int bim_style, pending;    /* pending: buf holds the first record line */
  int c_chrom, c_pos, c_id, c_ref, c_alt, n_cols;
  int c_cm;                  /* the CM column (-1: none) */
  double line_cm;            /* the current .pvar line's cm, NAN when none */
  char *tok[PVAR_MAX_TOK];
} pgen_impl;

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static uint64_t rd_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* ---- .psam / .pvar ------------------------------------------------------ */

/* Count the record lines of a .pvar (lines not starting with '#') and the
 * biallelic records they split into (one per ALT allele). */
static fm_status count_pvar(const char *path, int64_t *n_out, int64_t *n_rec_out, fm_err *err) {
  fm_plink_lines L;
  *n_out = *n_rec_out = 0;
  fm_status st = fm_plink_lines_open(&L, path, err);
  if (st != FM_OK) return st;
  int rc, c_alt = 4;
  int64_t n = 0, n_rec = 0;
  char *tok[PVAR_MAX_TOK];
  while ((rc = fm_plink_lines_next(&L, err)) == 1) {
    if (L.buf[0] == '#') {
      if (L.buf[1] == '#') continue;
      const int64_t nt = fm_plink_split(L.buf, tok, PVAR_MAX_TOK);
      for (int k = 0; k < nt && k < PVAR_MAX_TOK; k++)
        if (strcmp(tok[k], "ALT") == 0) c_alt = k;
      continue;
    }
    n++;
    n_rec++;
    const int64_t nt = fm_plink_split(L.buf, tok, PVAR_MAX_TOK);
    if (nt > c_alt)
      for (const char *c = tok[c_alt]; *c; c++) n_rec += *c == ',';
  }
  fm_plink_lines_close(&L);
  if (rc < 0) return (fm_status)-rc;
  *n_out = n;
  *n_rec_out = n_rec;
  return FM_OK;
}

/* Open the .pvar and read up to its first record line (left pending). */
static fm_status pvar_start(pgen_impl *p, fm_err *err) {
  fm_status st = fm_plink_lines_open(&p->pvar, p->pvar_path, err);
  if (st != FM_OK) return st;
  int rc;
  p->bim_style = 1;
  p->c_chrom = 0, p->c_id = 1, p->c_pos = 3, p->c_alt = 4, p->c_ref = 5, p->n_cols = 6;
  p->c_cm = 2;
  while ((rc = fm_plink_lines_next(&p->pvar, err)) == 1) {
    char *b = p->pvar.buf;
    if (b[0] == '#' && b[1] == '#') continue;
    if (b[0] == '#') {
      const int64_t nt = fm_plink_split(b, p->tok, PVAR_MAX_TOK);
      p->bim_style = 0;
      p->c_chrom = p->c_pos = p->c_id = p->c_ref = p->c_alt = p->c_cm = -1;
      for (int k = 0; k < nt && k < PVAR_MAX_TOK; k++) {
        const char *t = p->tok[k] + (k == 0);
        if (strcmp(t, "CHROM") == 0) p->c_chrom = k;
        else if (strcmp(t, "POS") == 0) p->c_pos = k;
        else if (strcmp(t, "ID") == 0) p->c_id = k;
        else if (strcmp(t, "REF") == 0) p->c_ref = k;
        else if (strcmp(t, "ALT") == 0) p->c_alt = k;
        else if (strcmp(t, "CM") == 0) p->c_cm = k;
      }
      if (p->c_chrom != 0 || p->c_pos < 0 || p->c_ref < 0 || p->c_alt < 0)
        return fm_err_set(err, FM_EFORMAT,
                          "'%s' line %lld: the header must start with #CHROM and name POS, REF "
                          "and ALT",
                          p->pvar_path, (ll)p->pvar.line_no);
      p->n_cols = 0;
      const int cols[5] = {p->c_chrom, p->c_pos, p->c_id, p->c_ref, p->c_alt};
      for (int k = 0; k < 5; k++)
        if (cols[k] + 1 > p->n_cols) p->n_cols = cols[k] + 1;
      continue;
    }
    p->pending = 1;
    return FM_OK;
  }
  if (rc < 0) return (fm_status)-rc;
  return FM_OK;
}

/* ---- record decoding ------------------------------------------------------ */

static int rd_varint(const uint8_t **pp, const uint8_t *end, uint32_t *v) {
  const uint8_t *q = *pp;
  uint32_t x = 0;
  for (int shift = 0;; shift += 7) {
    if (q >= end || shift > 28) return -1;
    const uint8_t b = *q++;
    x |= (uint32_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  *pp = q;
  *v = x;
  return 0;
}

static int sample_id_bytes(int64_t n) {
  return n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffff ? 3 : 4;
}

/* Parse a difflist at *pp: *len_out entries into p->didx (and p->dval when
 * has_vals). Returns 0, or -1 when malformed or past end. */
static int parse_difflist(pgen_impl *p, const uint8_t **pp, const uint8_t *end, int has_vals,
                          uint32_t *len_out) {
  const uint8_t *q = *pp;
  uint32_t len;
  *len_out = 0;
  if (rd_varint(&q, end, &len) != 0) return -1;
  if (len == 0) {
    *pp = q;
    return 0;
  }
  if ((int64_t)len > p->n_samples) return -1;
  const uint32_t groups = (len + 63) / 64;
  const int sib = sample_id_bytes(p->n_samples);
  const uint8_t *starts = q;
  if ((uint64_t)(end - q) < (uint64_t)groups * (uint64_t)sib + (groups - 1)) return -1;
  q += (size_t)groups * (size_t)sib + (groups - 1); /* group starts, group byte counts */
  const uint8_t *vals = q;
  if (has_vals) {
    const size_t vb = (len + 3) / 4;
    if ((size_t)(end - q) < vb) return -1;
    q += vb;
  }
  uint32_t k = 0;
  for (uint32_t g = 0; g < groups; g++) {
    uint64_t id = rd_le(starts + (size_t)g * (size_t)sib, sib);
    const uint32_t gn = g + 1 < groups ? 64 : len - 64 * g;
    for (uint32_t j = 0; j < gn; j++) {
      if (j > 0) {
        uint32_t d;
        if (rd_varint(&q, end, &d) != 0 || d == 0) return -1;
        id += d;
      }
      if (id >= (uint64_t)p->n_samples) return -1;
      if (k > 0 && id <= p->didx[k - 1]) return -1;
      p->didx[k] = (uint32_t)id;
      if (has_vals) p->dval[k] = (uint8_t)((vals[k >> 2] >> (2 * (k & 3))) & 3u);
      k++;
    }
  }
  *len_out = len;
  *pp = q;
  return 0;
}

static void unpack2(const pgen_impl *p, uint8_t *cat, const uint8_t *src, int64_t n) {
  const int64_t n4 = n >> 2;
  for (int64_t j = 0; j < n4; j++) memcpy(cat + 4 * j, p->lut4[src[j]], 4);
  for (int64_t i = 4 * n4; i < n; i++) cat[i] = (uint8_t)((src[i >> 2] >> (2 * (i & 3))) & 3u);
}

static fm_status bad_record(pgen_impl *p, int64_t v, int vt, const char *what, fm_err *err) {
  return fm_err_set(err, FM_EFORMAT,
                    "'%s' variant %lld (record type 0x%02x at byte offset %llu): %s",
                    p->pgen_path, (ll)v + 1, vt, (ull)p->pos, what);
}

/* Decode the main track of record type vt (bits 0-2) from [*pp, end). */
static fm_status decode_main(pgen_impl *p, int64_t v, int vt, const uint8_t **pp,
                             const uint8_t *end, fm_err *err) {
  const int64_t n = p->n_samples;
  const uint8_t *q = *pp;
  uint32_t len = 0;
  const int t = vt & 7;
  switch (t) {
  case 0: {
    const size_t nb = (size_t)((n + 3) / 4);
    if ((size_t)(end - q) < nb) return bad_record(p, v, vt, "the 2-bit array is truncated", err);
    unpack2(p, p->cat, q, n);
    q += nb;
    break;
  }
  case 1: {
    const size_t nb = (size_t)((n + 7) / 8);
    if ((size_t)(end - q) < nb + 1) return bad_record(p, v, vt, "the 1-bit array is truncated", err);
    const int c = q[0];
    const uint8_t lo = (uint8_t)(c >> 2), hi = (uint8_t)((c >> 2) + (c & 3));
    if ((c & 3) == 0 || hi > 3) return bad_record(p, v, vt, "bad 1-bit category byte", err);
    q++;
    for (int64_t i = 0; i < n; i++) p->cat[i] = ((q[i >> 3] >> (i & 7)) & 1u) ? hi : lo;
    q += nb;
    if (parse_difflist(p, &q, end, 1, &len) != 0)
      return bad_record(p, v, vt, "malformed difflist", err);
    break;
  }
  case 2:
  case 3:
    if (!p->has_ldref || v % PGEN_BLOCK == 0)
      return bad_record(p, v, vt, "LD-compressed record without a previous non-LD record", err);
    memcpy(p->cat, p->ldref, (size_t)n);
    if (parse_difflist(p, &q, end, 1, &len) != 0)
      return bad_record(p, v, vt, "malformed difflist", err);
    break;
  case 4:
  case 6:
  case 7:
    memset(p->cat, t - 4, (size_t)n);
    if (parse_difflist(p, &q, end, 1, &len) != 0)
      return bad_record(p, v, vt, "malformed difflist", err);
    break;
  default:
    return bad_record(p, v, vt, "record type 5 is reserved", err);
  }
  for (uint32_t k = 0; k < len; k++) p->cat[p->didx[k]] = p->dval[k];
  if (t == 3)
    for (int64_t i = 0; i < n; i++)
      if (p->cat[i] != 1 && p->cat[i] != 3) p->cat[i] = (uint8_t)(2 - p->cat[i]);
  if (t != 2 && t != 3) {
    memcpy(p->ldref, p->cat, (size_t)n);
    p->has_ldref = 1;
  }
  *pp = q;
  return FM_OK;
}

/* decode_main for packed categories (p->pk, PGEN codes 0..3 per 2 bits):
 * the same checks, the same errors. */
static fm_status decode_main_packed(pgen_impl *p, int64_t v, int vt, const uint8_t **pp,
                                    const uint8_t *end, fm_err *err) {
  const int64_t n = p->n_samples;
  const size_t nb = (size_t)((n + 3) / 4);
  uint8_t *pk = p->pk;
  const uint8_t *q = *pp;
  uint32_t len = 0;
  const int t = vt & 7;
  switch (t) {
  case 0:
    if ((size_t)(end - q) < nb) return bad_record(p, v, vt, "the 2-bit array is truncated", err);
    memcpy(pk, q, nb);
    q += nb;
    break;
  case 1: {
    const size_t nb1 = (size_t)((n + 7) / 8);
    if ((size_t)(end - q) < nb1 + 1) return bad_record(p, v, vt, "the 1-bit array is truncated", err);
    const int c = q[0];
    const unsigned lo = (unsigned)c >> 2, hi = lo + ((unsigned)c & 3u);
    if ((c & 3) == 0 || hi > 3) return bad_record(p, v, vt, "bad 1-bit category byte", err);
    q++;
    /* each bit picks hi (set) or lo (clear) for its sample's 2-bit field */
    const unsigned lo16 = lo * 0x5555u, x16 = (lo ^ hi) * 0x5555u;
    for (size_t j = 0; j < nb1; j++) {
      const unsigned w = lo16 ^ (p->spread[q[j]] & x16);
      pk[2 * j] = (uint8_t)w;
      if (2 * j + 1 < nb) pk[2 * j + 1] = (uint8_t)(w >> 8);
    }
    q += nb1;
    if (parse_difflist(p, &q, end, 1, &len) != 0)
      return bad_record(p, v, vt, "malformed difflist", err);
    break;
  }
  case 2:
  case 3:
    if (!p->has_ldref || v % PGEN_BLOCK == 0)
      return bad_record(p, v, vt, "LD-compressed record without a previous non-LD record", err);
    memcpy(pk, p->pk_ldref, nb);
    if (parse_difflist(p, &q, end, 1, &len) != 0)
      return bad_record(p, v, vt, "malformed difflist", err);
    break;
  case 4:
  case 6:
  case 7:
    memset(pk, (t - 4) * 0x55, nb);
    if (parse_difflist(p, &q, end, 1, &len) != 0)
      return bad_record(p, v, vt, "malformed difflist", err);
    break;
  default:
    return bad_record(p, v, vt, "record type 5 is reserved", err);
  }
  for (uint32_t k = 0; k < len; k++) {
    const uint32_t i = p->didx[k];
    const unsigned sh = 2 * (i & 3u);
    pk[i >> 2] = (uint8_t)((pk[i >> 2] & ~(3u << sh)) | (unsigned)p->dval[k] << sh);
  }
  if (t == 3) /* swap hom REF and hom ALT: 0b00 <-> 0b10 where the low bit is 0 */
    for (size_t j = 0; j < nb; j++) pk[j] ^= (uint8_t)((~pk[j] & 0x55u) << 1);
  if (t != 2 && t != 3) {
    memcpy(p->pk_ldref, pk, nb);
    p->has_ldref = 1;
  }
  *pp = q;
  return FM_OK;
}

/* Phase track: fills p->hap; returns 1 when every het is phased, 0 when
 * some are not, -1 when malformed. */
static int decode_phase(pgen_impl *p, int64_t het, const uint8_t *q, const uint8_t *end,
                        size_t *used) {
  const int64_t n = p->n_samples;
  *used = 0;
  if (het == 0) return 1;
  const size_t first = (size_t)(1 + het / 8);
  if ((size_t)(end - q) < first) return -1;
  const int explicit_present = q[0] & 1;
  const uint8_t *info = q;
  int64_t info_bit = 1, present_bit = 1;
  *used = first;
  if (explicit_present) {
    int64_t n_present = 0;
    for (int64_t h = 0; h < het; h++) n_present += (q[(h + 1) >> 3] >> ((h + 1) & 7)) & 1u;
    if ((size_t)(end - q) < first + (size_t)((n_present + 7) / 8)) return -1;
    info = q + first;
    info_bit = 0;
    *used = first + (size_t)((n_present + 7) / 8);
  }
  int all = 1;
  int64_t h = 0;
  for (int64_t i = 0; i < n; i++) {
    if (p->cat[i] != 1) continue;
    int present = 1;
    if (explicit_present) {
      present = (q[present_bit >> 3] >> (present_bit & 7)) & 1u;
      present_bit++;
    }
    h++;
    if (!present) {
      all = 0;
      continue;
    }
    const int alt_first = (info[info_bit >> 3] >> (info_bit & 7)) & 1u;
    info_bit++;
    p->hap[2 * i] = (int8_t)alt_first;
    p->hap[2 * i + 1] = (int8_t)!alt_first;
  }
  (void)h;
  return all;
}

/* Phase track over the hets (a1 != a2, both known) of a multi-allelic
 * record: fills p->ph; returns 1 when every het is phased, 0 when some are
 * not, -1 when malformed. */
static int decode_phase_multi(pgen_impl *p, const uint8_t *q, const uint8_t *end) {
  const int64_t n = p->n_samples;
  int64_t het = 0;
  memset(p->ph, 0, (size_t)n);
  for (int64_t i = 0; i < n; i++) het += p->a1[i] != 255 && p->a1[i] != p->a2[i];
  if (het == 0) return 1;
  const size_t first = (size_t)(1 + het / 8);
  if ((size_t)(end - q) < first) return -1;
  const int explicit_present = q[0] & 1;
  const uint8_t *info = q;
  int64_t info_bit = 1, present_bit = 1;
  if (explicit_present) {
    int64_t n_present = 0;
    for (int64_t h = 0; h < het; h++) n_present += (q[(h + 1) >> 3] >> ((h + 1) & 7)) & 1u;
    if ((size_t)(end - q) < first + (size_t)((n_present + 7) / 8)) return -1;
    info = q + first;
    info_bit = 0;
  }
  int all = 1;
  for (int64_t i = 0; i < n; i++) {
    if (p->a1[i] == 255 || p->a1[i] == p->a2[i]) continue;
    int present = 1;
    if (explicit_present) {
      present = (q[present_bit >> 3] >> (present_bit & 7)) & 1u;
      present_bit++;
    }
    if (!present) {
      all = 0;
      continue;
    }
    p->ph[i] = (uint8_t)(1 + ((info[info_bit >> 3] >> (info_bit & 7)) & 1u));
    info_bit++;
  }
  return all;
}

/* Members of a track-1 patch set: format 0 = bit array over the samples in
 * main-track category c, 1 = list of sample ids (difflist without values).
 * Writes the ids to p->didx; returns the count or -1. */
static int64_t patch_set(pgen_impl *p, int fmt, int c, const uint8_t **pp, const uint8_t *end) {
  const uint8_t *q = *pp;
  int64_t m = 0;
  if (fmt == 15) return 0;
  if (fmt == 0) {
    int64_t nc = 0;
    for (int64_t i = 0; i < p->n_samples; i++) nc += p->cat[i] == c;
    const size_t nb = (size_t)((nc + 7) / 8);
    if ((size_t)(end - q) < nb) return -1;
    int64_t t = 0;
    for (int64_t i = 0; i < p->n_samples; i++) {
      if (p->cat[i] != c) continue;
      if ((q[t >> 3] >> (t & 7)) & 1u) p->didx[m++] = (uint32_t)i;
      t++;
    }
    *pp = q + nb;
    return m;
  }
  if (fmt == 1) {
    uint32_t len;
    if (parse_difflist(p, &q, end, 0, &len) != 0) return -1;
    for (uint32_t k = 0; k < len; k++)
      if (p->cat[p->didx[k]] != c) return -1;
    *pp = q;
    return len;
  }
  return -1;
}

static unsigned get_bits(const uint8_t *b, int64_t bit, int width) {
  unsigned v = 0;
  for (int k = 0; k < width; k++) v |= ((b[(bit + k) >> 3] >> ((bit + k) & 7)) & 1u) << k;
  return v;
}

/* Track 1 of a record with n_alleles alleles (REF included): patches the
 * allele codes in p->a1/a2 set from the main track. */
static int decode_track1(pgen_impl *p, int n_alleles, const uint8_t **pp, const uint8_t *end) {
  const uint8_t *q = *pp;
  if (q >= end) return -1;
  const int f01 = q[0] & 15, f10 = q[0] >> 4;
  q++;
  int64_t m = patch_set(p, f01, 1, &q, end);
  if (m < 0) return -1;
  if (n_alleles > 3 && m > 0) {
    const int w = n_alleles == 4 ? 1 : n_alleles <= 6 ? 2 : n_alleles <= 18 ? 4 : 8;
    const size_t nb = (size_t)((m * w + 7) / 8);
    if ((size_t)(end - q) < nb) return -1;
    for (int64_t e = 0; e < m; e++) {
      const unsigned x = get_bits(q, e * w, w) + 2;
      if ((int)x >= n_alleles) return -1;
      p->a2[p->didx[e]] = (uint8_t)x;
    }
    q += nb;
  } else {
    for (int64_t e = 0; e < m; e++) p->a2[p->didx[e]] = 2;
  }
  m = patch_set(p, f10, 2, &q, end);
  if (m < 0) return -1;
  if (m > 0) {
    if (n_alleles == 3) {
      const size_t nb = (size_t)((m + 7) / 8);
      if ((size_t)(end - q) < nb) return -1;
      for (int64_t e = 0; e < m; e++) {
        const unsigned b = get_bits(q, e, 1);
        p->a1[p->didx[e]] = (uint8_t)(b ? 2 : 1);
        p->a2[p->didx[e]] = 2;
      }
      q += nb;
    } else {
      const int w = n_alleles <= 5 ? 2 : n_alleles <= 17 ? 4 : 8;
      const size_t nb = (size_t)((2 * m * w + 7) / 8);
      if ((size_t)(end - q) < nb) return -1;
      for (int64_t e = 0; e < m; e++) {
        const unsigned x = get_bits(q, 2 * e * w, w) + 1, y = get_bits(q, (2 * e + 1) * w, w) + 1;
        if ((int)y >= n_alleles || x > y) return -1;
        p->a1[p->didx[e]] = (uint8_t)x;
        p->a2[p->didx[e]] = (uint8_t)y;
      }
      q += nb;
    }
  }
  *pp = q;
  return 0;
}

/* Fill the record for split allele j (1-based ALT index). */
static void emit_split(fm_reader *r, pgen_impl *p, fm_gt_record *rec) {
  const int j = p->split_j;
  int has_het = 0, all = 1;
  if (j == 1)
    for (int64_t i = 0; i < p->n_samples; i++)
      p->het_site[i] = p->a1[i] != 255 && p->a1[i] != p->a2[i];
  for (int64_t i = 0; i < p->n_samples; i++) {
    const uint8_t x = p->a1[i], y = p->a2[i];
    if (x == 255) {
      p->hardcall[i] = FM_GT_MISSING;
      p->hap[2 * i] = p->hap[2 * i + 1] = FM_GT_MISSING;
      continue;
    }
    const int8_t cx = x == j, cy = y == j;
    p->hardcall[i] = (int8_t)(cx + cy);
    if (cx != cy) {
      has_het = 1;
      if (!p->ph[i]) all = 0;
    }
    p->hap[2 * i] = p->ph[i] == 2 ? cy : cx;
    p->hap[2 * i + 1] = p->ph[i] == 2 ? cx : cy;
  }
  rec->n_samples = p->n_samples;
  rec->chrom = p->tok[p->c_chrom];
  rec->pos = p->split_pos;
  rec->cm = p->line_cm;
  rec->id = p->split_id;
  rec->ref = p->tok[p->c_ref];
  rec->alt = p->alts[j - 1];
  rec->hardcall = p->hardcall;
  rec->dosage = NULL;
  if (p->has_dosage) {
    for (int64_t i = 0; i < p->n_samples; i++)
      p->dosage[i] = p->hardcall[i] < 0 ? NAN : (double)p->hardcall[i];
    rec->dosage = p->dosage;
  }
  rec->hap = (all || !has_het) ? p->hap : NULL;
  rec->het_site = p->het_site;
  rec->is_phased = has_het && all && p->split_all_phased;
  if (rec->is_phased) r->info.is_phased = 1;
  p->split_j++;
  if (p->split_j > p->split_k) {
    p->split_k = 0;
    p->next++;
  }
}

/* Dosage tracks 3-4 (record-type bits 5-6) at q: p->dosage from the listed
 * values (16-bit, 16384 = one ALT copy, 65535 missing), the hardcall for
 * samples without one. Returns 0 or -1 when truncated. */
static int decode_dosage(pgen_impl *p, int vt, const uint8_t *q, const uint8_t *end) {
  const int64_t n = p->n_samples;
  static const double hd[4] = {0.0, 1.0, 2.0, NAN};
  for (int64_t i = 0; i < n; i++) p->dosage[i] = hd[p->cat[i]];
  const int mode = (vt >> 5) & 3;
  if (mode == 0) return 0;
  int64_t m = 0;
  if (mode == 1) { /* list of sample ids */
    uint32_t len;
    if (parse_difflist(p, &q, end, 0, &len) != 0) return -1;
    m = len;
  } else if (mode == 3) { /* bit array */
    const size_t nb = (size_t)((n + 7) / 8);
    if ((size_t)(end - q) < nb) return -1;
    for (int64_t i = 0; i < n; i++)
      if ((q[i >> 3] >> (i & 7)) & 1u) p->didx[m++] = (uint32_t)i;
    q += nb;
  } else { /* every sample */
    for (int64_t i = 0; i < n; i++) p->didx[i] = (uint32_t)i;
    m = n;
  }
  if ((uint64_t)(end - q) < 2 * (uint64_t)m) return -1;
  for (int64_t k = 0; k < m; k++) {
    const unsigned v = (unsigned)q[2 * k] | ((unsigned)q[2 * k + 1] << 8);
    if (v != 65535 && v > 32768) return -1;
    p->dosage[p->didx[k]] = v == 65535 ? NAN : v / 16384.0;
  }
  return 0;
}

/* Hardcalls and unphased hap slots (het as 0,1) from the categories in one
 * pass; returns the number of hets. */
static int64_t fill_calls(pgen_impl *p) {
  static const int8_t hc[4] = {0, 1, 2, FM_GT_MISSING};
  static const int8_t a[4][2] = {{0, 0}, {0, 1}, {1, 1}, {FM_GT_MISSING, FM_GT_MISSING}};
  int64_t het = 0;
  const uint8_t *cat = p->cat;
  int8_t *hcall = p->hardcall, *hap = p->hap;
  for (int64_t i = 0; i < p->n_samples; i++) {
    const uint8_t c = cat[i];
    hcall[i] = hc[c];
    memcpy(hap + 2 * i, a[c], 2);
    het += c == 1;
  }
  return het;
}

static fm_status read_bytes(pgen_impl *p, int64_t v, uint64_t off, size_t nb, fm_err *err) {
  if (off + nb > p->file_bytes)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' is truncated: variant %lld needs bytes %llu..%llu but the file has "
                      "%llu bytes",
                      p->pgen_path, (ll)v + 1, (ull)off, (ull)(off + nb), (ull)p->file_bytes);
  if (nb > p->rec_cap) {
    uint8_t *t = realloc(p->rec, nb);
    if (!t) return fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", p->pgen_path);
    p->rec = t;
    p->rec_cap = nb;
  }
  /* sequential records need no seek (a seek drops stdio's buffer) */
  if ((off != p->fpos && fseeko(p->f, (off_t)off, SEEK_SET) != 0) ||
      fread(p->rec, 1, nb, p->f) != nb) {
    p->fpos = UINT64_MAX;
    return fm_err_set(err, FM_EIO, "'%s': cannot read variant %lld at byte offset %llu",
                      p->pgen_path, (ll)v + 1, (ull)off);
  }
  p->fpos = off + nb;
  return FM_OK;
}

/* Complete a hardcall-only biallelic record whose bed2 codes are in p->bed2. */
static fm_status finish_packed(fm_reader *r, pgen_impl *p, fm_gt_record *rec, long long pos,
                               const char *id, const char *alt) {
  rec->n_samples = p->n_samples;
  rec->chrom = p->tok[p->c_chrom];
  rec->pos = pos > 0 ? pos : 0;
  rec->cm = p->line_cm;
  rec->id = id;
  rec->ref = p->tok[p->c_ref];
  rec->alt = alt;
  rec->hardcall = NULL;
  rec->dosage = NULL;
  rec->hap = NULL;
  rec->is_phased = 0;
  rec->bed2 = p->bed2;
  (void)r;
  p->next++;
  return FM_OK;
}

static fm_status pgen_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  pgen_impl *p = r->impl;
  if (p->next >= p->n_variants) return FM_FMT_END;
  const int64_t v = p->next;
  fm_status st;
  if (p->split_k) {
    emit_split(r, p, rec);
    return FM_OK;
  }
  if (!p->started) {
    p->started = 1;
    p->packed = r->is_hardcall_only;
  }
  /* .pvar line */
  if (!p->pending) {
    const int rc = fm_plink_lines_next(&p->pvar, err);
    if (rc < 0) return (fm_status)-rc;
    if (rc == 0)
      return fm_err_set(err, FM_EFORMAT, "'%s' ended after %lld variants; the .pgen has %lld",
                        p->pvar_path, (ll)v, (ll)p->n_variants);
  }
  if (!p->pending && p->pvar.buf[0] == '#')
    return fm_err_set(err, FM_EFORMAT, "'%s' line %lld: header line among the variants",
                      p->pvar_path, (ll)p->pvar.line_no);
  p->pending = 0;
  const int64_t nt = fm_plink_split(p->pvar.buf, p->tok, PVAR_MAX_TOK);
  if (nt < p->n_cols)
    return fm_err_set(err, FM_EFORMAT, "'%s' line %lld has %lld fields; %d expected",
                      p->pvar_path, (ll)p->pvar.line_no, (ll)nt, p->n_cols);
  p->line_cm = p->c_cm >= 0 && p->c_cm < nt ? fm_plink_parse_cm(p->tok[p->c_cm]) : NAN;
  const char *spos = p->tok[p->c_pos];
  long long pos = 0;
  if (!fm_plink_parse_int(spos, &pos))
    return fm_err_set(err, FM_EFORMAT, "'%s' line %lld: position '%s' is not an integer",
                      p->pvar_path, (ll)p->pvar.line_no, spos);
  const char *id = p->c_id >= 0 ? p->tok[p->c_id] : ".";
  const char *alt = p->tok[p->c_alt];
  int n_alt = 1;
  for (const char *c = alt; *c; c++) n_alt += *c == ',';
  if (n_alt > 1 && (n_alt > 254 || p->mode != 0x10))
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "'%s' variant %lld ('%s'): ALT '%s' with %d alleles is not supported",
                      p->pgen_path, (ll)v + 1, id, alt, n_alt);
  /* genotypes */
  int vt = 0, phased = 0, hap_filled = 0, has_het = 0;
  if (p->mode == 0x02) {
    const size_t nb = (size_t)((p->n_samples + 3) / 4);
    p->pos = p->fixed_off + (uint64_t)v * nb;
    if ((st = read_bytes(p, v, p->pos, nb, err)) != FM_OK) return st;
    if (p->packed) {
      fm_codec_bed2_from_count2(p->rec, (int64_t)nb, p->bed2);
      return finish_packed(r, p, rec, pos, id, alt);
    }
    unpack2(p, p->cat, p->rec, p->n_samples);
  } else {
    if (v % PGEN_BLOCK == 0) p->pos = p->block_off[v / PGEN_BLOCK];
    vt = p->vrtype[v];
    if ((vt & 0xe0) && n_alt > 1)
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "'%s' variant %lld ('%s'): record type 0x%02x (multi-allelic dosage) is "
                        "not supported yet",
                        p->pgen_path, (ll)v + 1, id, vt);
    if ((vt & 0x80) && !(vt & 0x60))
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "'%s' variant %lld ('%s'): record type 0x%02x (phased dosage without "
                        "unphased dosage) is not supported yet",
                        p->pgen_path, (ll)v + 1, id, vt);
    if ((vt & 8) && n_alt < 2)
      return bad_record(p, v, vt, "multi-allelic track but the .pvar lists one ALT", err);
    const size_t nb = p->vrlen[v];
    if ((st = read_bytes(p, v, p->pos, nb, err)) != FM_OK) return st;
    const uint8_t *q = p->rec, *end = p->rec + nb;
    if (p->packed) {
      if ((st = decode_main_packed(p, v, vt, &q, end, err)) != FM_OK) return st;
      if (n_alt == 1) {
        p->pos += nb; /* the phase and dosage tracks are not needed */
        const size_t nbp = (size_t)((p->n_samples + 3) / 4);
        fm_codec_bed2_from_count2(p->pk, (int64_t)nbp, p->bed2);
        return finish_packed(r, p, rec, pos, id, alt);
      }
      unpack2(p, p->cat, p->pk, p->n_samples);
    } else if ((st = decode_main(p, v, vt, &q, end, err)) != FM_OK) {
      return st;
    }
    if (n_alt > 1) {
      static const uint8_t c1[4] = {0, 0, 1, 255}, c2[4] = {0, 1, 1, 255};
      for (int64_t i = 0; i < p->n_samples; i++) {
        p->a1[i] = c1[p->cat[i]];
        p->a2[i] = c2[p->cat[i]];
      }
      if ((vt & 8) && decode_track1(p, n_alt + 1, &q, end) != 0)
        return bad_record(p, v, vt, "malformed multi-allelic track", err);
      int all = 1;
      if (vt & 0x10) {
        all = decode_phase_multi(p, q, end);
        if (all < 0) return bad_record(p, v, vt, "the phase track is truncated", err);
      } else {
        memset(p->ph, 0, (size_t)p->n_samples);
      }
      p->pos += nb;
      /* split the ALT list in place; the tokens live until the next line */
      char *a = p->tok[p->c_alt];
      for (int k = 0; k < n_alt; k++) {
        p->alts[k] = a;
        a = strchr(a, ',');
        if (a) *a++ = '\0';
      }
      p->split_k = n_alt;
      p->split_j = 1;
      p->split_all_phased = (vt & 0x10) && all;
      p->split_pos = pos > 0 ? pos : 0;
      p->split_id = id;
      emit_split(r, p, rec);
      return FM_OK;
    }
    const int64_t het = fill_calls(p);
    if (vt & 0x10) {
      size_t used = 0;
      const int rc = decode_phase(p, het, q, end, &used);
      if (rc < 0) return bad_record(p, v, vt, "the phase track is truncated", err);
      phased = rc;
      q += used;
    }
    /* phased-dosage tracks (bit 7) come last and are not needed for the
     * dosage: they are skipped with the rest of the record */
    if (p->has_dosage && decode_dosage(p, vt, q, end) != 0)
      return bad_record(p, v, vt, "malformed dosage track", err);
    has_het = het > 0;
    hap_filled = !has_het || phased;
    p->pos += nb;
  }
  if (p->mode == 0x02) {
    has_het = fill_calls(p) > 0;
    hap_filled = !has_het;
  }
  rec->n_samples = p->n_samples;
  rec->chrom = p->tok[p->c_chrom];
  rec->pos = pos > 0 ? pos : 0;
  rec->cm = p->line_cm;
  rec->id = id;
  rec->ref = p->tok[p->c_ref];
  rec->alt = alt;
  rec->hardcall = p->hardcall;
  rec->dosage = p->has_dosage ? p->dosage : NULL;
  rec->hap = hap_filled ? p->hap : NULL;
  rec->is_phased = phased && has_het;
  if (rec->is_phased) r->info.is_phased = 1;
  p->next++;
  return FM_OK;
}

static void pgen_close(fm_reader *r) {
  pgen_impl *p = r->impl;
  if (!p) return;
  if (p->f) fclose(p->f);
  fm_plink_lines_close(&p->pvar);
  free(p->pgen_path);
  free(p->pvar_path);
  free(p->psam_path);
  free(p->vrtype);
  free(p->vrlen);
  free(p->block_off);
  free(p->rec);
  free(p->cat);
  free(p->ldref);
  free(p->pk);
  free(p->pk_ldref);
  free(p->bed2);
  free(p->didx);
  free(p->dval);
  free(p->hardcall);
  free(p->hap);
  free(p->dosage);
  free(p->a1);
  free(p->a2);
  free(p->het_site);
  free(p->ph);
  free(p);
  r->impl = NULL;
}

static const fm_reader_ops pgen_ops = {pgen_next, pgen_close, NULL};

/* Read exactly nb bytes at the current position of the header. */
static fm_status hdr_read(pgen_impl *p, void *dst, size_t nb, uint64_t off, const char *what,
                          fm_err *err) {
  if (off + nb > p->file_bytes || fread(dst, 1, nb, p->f) != nb)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' is truncated: the %s at byte offset %llu needs %llu bytes but the file "
                      "has %llu",
                      p->pgen_path, what, (ull)off, (ull)nb, (ull)p->file_bytes);
  return FM_OK;
}

static fm_status read_index(pgen_impl *p, uint8_t hb, fm_err *err) {
  const int64_t nv = p->n_variants;
  if ((hb & 15) > 7)
    return fm_err_set(err, FM_EUNSUPPORTED, "'%s': header format byte 0x%02x at byte offset 11 "
                      "is not supported", p->pgen_path, hb);
  const int vt_bits = (hb & 15) < 4 ? 4 : 8;
  const int len_bytes = (hb & 3) + 1;
  const int ac_bytes = (hb >> 4) & 3;
  const int prov = hb >> 6;
  const int64_t n_blocks = (nv + PGEN_BLOCK - 1) / PGEN_BLOCK;
  /* the index must fit in the file before anything is sized from it */
  const uint64_t need = 12 + 8 * (uint64_t)n_blocks +
                        (uint64_t)nv * (uint64_t)len_bytes + (uint64_t)nv * (uint64_t)vt_bits / 8;
  if (need > p->file_bytes)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' is truncated: the record index of %lld variants at byte offset 12 "
                      "runs to offset %llu but the file has %llu bytes",
                      p->pgen_path, (ll)nv, (ull)need, (ull)p->file_bytes);
  p->block_off = malloc((size_t)(n_blocks > 0 ? n_blocks : 1) * sizeof *p->block_off);
  p->vrtype = malloc((size_t)(nv > 0 ? nv : 1));
  p->vrlen = malloc((size_t)(nv > 0 ? nv : 1) * sizeof *p->vrlen);
  uint8_t *tmp = malloc((size_t)PGEN_BLOCK * 4);
  fm_status st = FM_OK;
  if (!p->block_off || !p->vrtype || !p->vrlen || !tmp) {
    free(tmp);
    return fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", p->pgen_path);
  }
  uint64_t off = 12;
  for (int64_t b = 0; b < n_blocks; b++) {
    uint8_t e8[8];
    if ((st = hdr_read(p, e8, 8, off, "variant block offset table", err)) != FM_OK) goto done;
    p->block_off[b] = rd_le(e8, 8);
    off += 8;
  }
  for (int64_t b = 0; b < n_blocks; b++) {
    const int64_t v0 = b * PGEN_BLOCK;
    const int64_t cnt = nv - v0 < PGEN_BLOCK ? nv - v0 : PGEN_BLOCK;
    size_t nb = (size_t)(vt_bits == 8 ? cnt : (cnt + 1) / 2);
    if ((st = hdr_read(p, tmp, nb, off, "record-type array", err)) != FM_OK) goto done;
    for (int64_t j = 0; j < cnt; j++)
      p->vrtype[v0 + j] = vt_bits == 8 ? tmp[j] : (uint8_t)((tmp[j >> 1] >> (4 * (j & 1))) & 15u);
    off += nb;
    nb = (size_t)cnt * (size_t)len_bytes;
    if ((st = hdr_read(p, tmp, nb, off, "record-length array", err)) != FM_OK) goto done;
    uint64_t sum = 0;
    for (int64_t j = 0; j < cnt; j++) {
      p->vrlen[v0 + j] = (uint32_t)rd_le(tmp + (size_t)j * (size_t)len_bytes, len_bytes);
      sum += p->vrlen[v0 + j];
    }
    off += nb;
    nb = (size_t)cnt * (size_t)ac_bytes + (prov == 3 ? (size_t)(cnt + 7) / 8 : 0);
    if (nb && fseeko(p->f, (off_t)(off + nb), SEEK_SET) != 0) {
      st = fm_err_set(err, FM_EIO, "'%s': cannot seek to byte offset %llu", p->pgen_path,
                      (ull)(off + nb));
      goto done;
    }
    off += nb;
    /* no block_off + sum: a block offset near 2^64 wraps it into the file */
    if (p->block_off[b] < off || p->block_off[b] > p->file_bytes ||
        sum > p->file_bytes - p->block_off[b]) {
      st = fm_err_set(err, FM_EFORMAT,
                      "'%s': variant block %lld (variants %lld..%lld) spans bytes %llu..%llu but "
                      "the header ends at %llu and the file has %llu bytes",
                      p->pgen_path, (ll)b + 1, (ll)v0 + 1, (ll)(v0 + cnt), (ull)p->block_off[b],
                      (ull)(p->block_off[b] + sum), (ull)off, (ull)p->file_bytes);
      goto done;
    }
  }
  for (int64_t v = 0; v < nv; v++) {
    if (p->vrtype[v] & 0x10) p->has_ldref |= 2; /* some record carries phase */
    if (p->vrtype[v] & 0x60) p->has_dosage = 1;
  }
done:
  free(tmp);
  return st;
}

fm_status fm_fmt_pgen_open(const char *pgen_path, const char *pvar_path, const char *psam_path,
                           fm_reader **out, fm_err *err) {
  fm_status st;
  fm_reader *r = NULL;
  pgen_impl *p = NULL;
  if (out) *out = NULL;
  if (!pgen_path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_pgen_open: pgen_path and out must not be NULL");
  if (!(r = fm_reader_new(&pgen_ops, sizeof *p)))
    return fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", pgen_path);
  p = r->impl;
  r->info.format = "pgen";
  p->fpos = UINT64_MAX;
  p->pgen_path = dup_str(pgen_path);
  p->pvar_path = pvar_path ? dup_str(pvar_path) : fm_plink_swap_ext(pgen_path, ".pgen", ".pvar");
  p->psam_path = psam_path ? dup_str(psam_path) : fm_plink_swap_ext(pgen_path, ".pgen", ".psam");
  if (!p->pgen_path || !p->pvar_path || !p->psam_path) goto oom;
  p->f = fopen(p->pgen_path, "rb");
  if (!p->f) {
    st = fm_err_set(err, FM_EIO, "cannot open '%s': %s", p->pgen_path, strerror(errno));
    goto fail;
  }
  struct stat sb;
  if (fstat(fileno(p->f), &sb) != 0) {
    st = fm_err_set(err, FM_EIO, "cannot stat '%s': %s", p->pgen_path, strerror(errno));
    goto fail;
  }
  p->file_bytes = (uint64_t)sb.st_size;
  uint8_t h[12];
  const size_t got = fread(h, 1, 12, p->f);
  if (got < 3 || h[0] != 0x6c || h[1] != 0x1b) {
    st = fm_err_set(err, FM_EFORMAT,
                    "'%s' is not a PGEN file: it does not start with the magic bytes 0x6c 0x1b "
                    "(byte offset 0)",
                    p->pgen_path);
    goto fail;
  }
  p->mode = h[2];
  if (p->mode != 0x02 && p->mode != 0x10) {
    st = fm_err_set(err, FM_EUNSUPPORTED,
                    "'%s': storage mode 0x%02x (byte offset 2) is not supported; only 0x02 and "
                    "0x10 are read%s",
                    p->pgen_path, p->mode, p->mode == 0x01 ? " (0x01 is a PLINK 1 .bed)" : "");
    goto fail;
  }
  if (got < 12) {
    st = fm_err_set(err, FM_EFORMAT,
                    "'%s' is truncated: the header needs 12 bytes but the file has %llu",
                    p->pgen_path, (ull)p->file_bytes);
    goto fail;
  }
  p->n_variants = (int64_t)rd_le(h + 3, 4);
  p->n_samples = (int64_t)rd_le(h + 7, 4);
  r->info.n_variants = p->n_variants;
  r->info.n_samples = p->n_samples;
  if (p->mode == 0x10) {
    if ((st = read_index(p, h[11], err)) != FM_OK) goto fail;
    r->info.is_phased = (p->has_ldref & 2) != 0;
    r->info.has_dosage = p->has_dosage;
    p->has_ldref = 0;
  } else {
    const uint64_t data = (uint64_t)p->n_variants * (uint64_t)((p->n_samples + 3) / 4);
    const uint64_t prov = (uint64_t)(p->n_variants + 7) / 8;
    if (p->file_bytes == 12 + data) p->fixed_off = 12;
    else if ((h[11] >> 6) == 3 && p->file_bytes == 12 + prov + data) p->fixed_off = 12 + prov;
    else {
      st = fm_err_set(err, FM_EFORMAT,
                      "'%s' has %llu bytes but %lld samples x %lld variants in storage mode 0x02 "
                      "need 12 + %llu bytes",
                      p->pgen_path, (ull)p->file_bytes, (ll)p->n_samples, (ll)p->n_variants,
                      (ull)data);
      goto fail;
    }
  }
  int64_t n_ids = 0, n_pvar = 0, n_rec = 0;
  if ((st = fm_plink_read_samples(p->psam_path, 1, &r->sample_ids, &n_ids, &r->sex, err)) !=
      FM_OK)
    goto fail;
  if (n_ids != p->n_samples) {
    fm_plink_free_ids(r->sample_ids, n_ids);
    r->sample_ids = NULL;
    st = fm_err_set(err, FM_EMISMATCH,
                    "'%s' lists %lld samples but the header of '%s' says %lld (byte offset 7)",
                    p->psam_path, (ll)n_ids, p->pgen_path, (ll)p->n_samples);
    goto fail;
  }
  if ((st = count_pvar(p->pvar_path, &n_pvar, &n_rec, err)) != FM_OK) goto fail;
  if (n_pvar != p->n_variants) {
    st = fm_err_set(err, FM_EMISMATCH,
                    "'%s' lists %lld variants but the header of '%s' says %lld (byte offset 3)",
                    p->pvar_path, (ll)n_pvar, p->pgen_path, (ll)p->n_variants);
    goto fail;
  }
  r->info.n_variants = n_rec; /* records after splitting multi-allelic variants */
  if ((st = pvar_start(p, err)) != FM_OK) goto fail;
  r->info.has_cm = p->c_cm >= 0;
  const size_t ns = (size_t)(p->n_samples > 0 ? p->n_samples : 1);
  p->cat = malloc(ns);
  p->ldref = malloc(ns);
  p->pk = malloc((ns + 3) / 4);
  p->pk_ldref = malloc((ns + 3) / 4);
  p->bed2 = malloc((ns + 3) / 4);
  p->didx = malloc(ns * sizeof *p->didx);
  p->dval = malloc(ns);
  p->hardcall = malloc(ns);
  p->hap = malloc(2 * ns);
  p->a1 = malloc(ns);
  if (p->has_dosage && !(p->dosage = malloc(ns * sizeof *p->dosage))) goto oom;
  p->a2 = malloc(ns);
  p->het_site = malloc(ns);
  p->ph = malloc(ns);
  p->rec_cap = 1; /* a 0-byte record still reads from a non-NULL buffer */
  p->rec = malloc(p->rec_cap);
  for (int x = 0; x < 256; x++)
    for (int k = 0; k < 4; k++) p->lut4[x][k] = (uint8_t)((x >> (2 * k)) & 3);
  for (unsigned x = 0; x < 256; x++) {
    unsigned w = 0;
    for (int k = 0; k < 8; k++) w |= ((x >> k) & 1u) * (3u << (2 * k));
    p->spread[x] = (uint16_t)w;
  }
  if (!p->pk || !p->pk_ldref || !p->bed2) goto oom;
  if (!p->cat || !p->ldref || !p->didx || !p->dval || !p->hardcall || !p->hap || !p->a1 ||
      !p->a2 || !p->het_site || !p->ph || !p->rec)
    goto oom;
  *out = r;
  return FM_OK;
oom:
  st = fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", pgen_path);
fail:
  if (r->sample_ids == NULL) r->info.n_samples = 0;
  fm_reader_close(r);
  return st;
}
