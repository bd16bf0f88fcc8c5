/* fmt_bgen.c: BGEN reader (fm_fmt_bgen.h, docs/formats/bgen.md).
 * Follows the BGEN spec v1.3 (layouts 1 and 2, compression none/zlib/zstd). */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_fmt_bgen.h"
#include "fmt_bgen_ahead.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <libdeflate.h>
#include <zstd.h>

/* A haplotype slot holds the allele whose haplotype probability is at least
 * this (hardcalls follow plink2's dosage rule instead, fm_fmt.h). */
#define HC_THRESHOLD 0.9
/* Smaller files are read in one thread (a fuzzing build may set 0, so that
 * its small inputs exercise the worker). */
#ifndef FM_BGEN_AHEAD_MIN_BYTES
#define FM_BGEN_AHEAD_MIN_BYTES ((uint64_t)1 << 20)
#endif

typedef struct bgen {
  FILE *f;
  char *path;
  uint64_t file_size;
  uint64_t off;          /* current byte offset in the file */
  uint64_t fpos;         /* the stream's real position */
  uint8_t *ibuf;         /* read buffer: file bytes [ibase, ibase + ilen) */
  uint64_t ibase;
  size_t ilen;
  uint32_t n;            /* samples */
  uint32_t m;            /* variants in the header */
  unsigned compression;  /* 0, 1, 2 */
  unsigned layout;       /* 1, 2 */
  uint32_t v;            /* variants started (index of the current one + 1) */
  uint64_t v_off;        /* byte offset of the current variant block */
  /* current variant metadata: strings in one arena */
  char *arena;
  size_t arena_len, arena_cap;
  size_t *str_off;       /* 3 + k offsets: snpid, rsid, chrom, alleles */
  size_t str_cap;
  uint32_t pos;
  uint32_t k;
  uint64_t geno_len;     /* bytes of genotype data after the header fields */
  uint64_t geno_start;   /* byte offset of the genotype data */
  int geno_pending;      /* genotype bytes not yet consumed */
  uint32_t next_j;       /* next split record (1..k-1); 0 = none pending */
  int is_phased_var;
  int direct;            /* the record buffers were filled by the decoder (k == 2, layout 2) */
  int hc_only;           /* fm_reader.is_hardcall_only, latched at the first record: no
                            dosages, no haplotype slots */
  int all_diploid;       /* every ploidy byte of the current block is 2 (no missing bit) */
  int has_bed2;          /* the current block's hardcalls are in bed2 (hardcall-only) */
  uint8_t *bed2;         /* (ceil(n / 4)) bed2 codes of an all-diploid 8/16-bit block */
  /* decompressors, created at the first block that needs them; zlib
   * blocks go through libdeflate (whole-buffer, about twice zlib's speed,
   * same zlib-format checks including the Adler-32) */
  struct libdeflate_decompressor *zs;
  ZSTD_DCtx *zd;
  /* compressed files of FM_BGEN_AHEAD_MIN_BYTES or more: blocks decompressed ahead
   * on a worker thread (fmt_bgen_ahead.h), started at the first block */
  bgen_ahead *ahead;
  int ahead_tried;
  /* buffers */
  uint8_t *comp;
  size_t comp_cap;
  uint8_t *raw;
  size_t raw_cap;
  /* per-sample decode of the current variant */
  uint8_t *miss;         /* (n) sample missing */
  uint8_t *hapl;         /* (n) 1 haploid, 2 diploid */
  int32_t *hapa;         /* (2n) phased hap alleles or -1 */
  uint64_t *ecn;         /* (n k) expected allele counts x den (exact integers) */
  size_t ecn_cap;
  uint64_t den;          /* denominator of ecn: 2^B - 1, or 32768 for layout 1 */
  uint64_t hcb[4];       /* fm_hardcall_bounds(hcb_den) */
  uint64_t hcb_den;      /* 0 = not computed */
  /* record buffers */
  int8_t *hardcall;
  double *dosage;
  int8_t *hap;
} bgen;

static const fm_reader_ops bgen_ops;

static fm_status trunc_err(bgen *b, const char *what, fm_err *err) {
  if (b->f && ferror(b->f))
    return fm_err_set(err, FM_EIO, "bgen %s: read error at byte offset %llu while reading %s: %s",
                      b->path, (unsigned long long)b->off, what, strerror(errno));
  return fm_err_set(err, FM_EFORMAT, "bgen %s: file truncated at byte offset %llu while reading %s",
                    b->path, (unsigned long long)b->off, what);
}

/* Reads go through one 64 KiB buffer (ibuf holds file bytes [ibase, ibase +
 * ilen)); seeks only move b->off, so skipping a genotype block that is
 * already buffered costs no system call. Reads of a buffer or more bypass it. */
#define IBUF_CAP ((size_t)1 << 16)

static fm_status read_bytes(bgen *b, void *dst, size_t len, const char *what, fm_err *err) {
  uint8_t *out = dst;
  if (len == 0) return FM_OK;
  if (b->off + len > b->file_size) return trunc_err(b, what, err);
  while (len > 0) {
    if (b->off >= b->ibase && b->off < b->ibase + b->ilen) {
      size_t have = (size_t)(b->ibase + b->ilen - b->off), n = have < len ? have : len;
      memcpy(out, b->ibuf + (b->off - b->ibase), n);
      out += n;
      len -= n;
      b->off += n;
      continue;
    }
    if (b->fpos != b->off) {
      if (fseeko(b->f, (off_t)b->off, SEEK_SET) != 0)
        return fm_err_set(err, FM_EIO, "bgen %s: cannot seek to byte offset %llu: %s", b->path,
                          (unsigned long long)b->off, strerror(errno));
      b->fpos = b->off;
    }
    if (len >= IBUF_CAP) {
      size_t got = fread(out, 1, len, b->f);
      b->fpos += got;
      if (got != len) {
        b->off += got;
        return trunc_err(b, what, err);
      }
      b->off += len;
      return FM_OK;
    }
    size_t got = fread(b->ibuf, 1, IBUF_CAP, b->f);
    b->ibase = b->off;
    b->ilen = got;
    b->fpos += got;
    if (got == 0) return trunc_err(b, what, err);
  }
  return FM_OK;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint64_t le64(const uint8_t *p) {
  uint64_t w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&w, p, 8);
#else
  w = 0;
  for (int i = 7; i >= 0; i--) w = (w << 8) | p[i];
#endif
  return w;
}

static fm_status read_u32(bgen *b, uint32_t *x, const char *what, fm_err *err) {
  uint8_t t[4];
  fm_status st = read_bytes(b, t, 4, what, err);
  if (st == FM_OK) *x = le32(t);
  return st;
}
static fm_status read_u16(bgen *b, uint16_t *x, const char *what, fm_err *err) {
  uint8_t t[2];
  fm_status st = read_bytes(b, t, 2, what, err);
  if (st == FM_OK) *x = le16(t);
  return st;
}

static fm_status seek_to(bgen *b, uint64_t off, const char *what, fm_err *err) {
  if (off > b->file_size) {
    b->off = b->file_size;
    return trunc_err(b, what, err);
  }
  b->off = off; /* read_bytes positions the stream */
  return FM_OK;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  void *q = realloc(*p, nc * elem);
  if (!q) return 0;
  *p = q;
  *cap = nc;
  return 1;
}

/* Append a string of len bytes read from the file to the arena as string #idx. */
static fm_status read_str(bgen *b, size_t idx, uint64_t len, const char *what, fm_err *err) {
  if (b->off + len > b->file_size) return trunc_err(b, what, err);
  if (!grow((void **)&b->str_off, &b->str_cap, idx + 1, sizeof(size_t)) ||
      !grow((void **)&b->arena, &b->arena_cap, b->arena_len + (size_t)len + 1, 1))
    return fm_err_set(err, FM_ENOMEM, "bgen %s: out of memory for %s (%llu bytes)", b->path, what,
                      (unsigned long long)len);
  b->str_off[idx] = b->arena_len;
  fm_status st = read_bytes(b, b->arena + b->arena_len, (size_t)len, what, err);
  if (st != FM_OK) return st;
  b->arena_len += (size_t)len;
  b->arena[b->arena_len++] = '\0';
  return FM_OK;
}

static const char *str_at(const bgen *b, size_t idx) { return b->arena + b->str_off[idx]; }
static const char *var_name(const bgen *b) {
  const char *rs = str_at(b, 1);
  return rs[0] ? rs : str_at(b, 0);
}

/* Read the identifying data of the next variant; leaves the file at its
 * genotype data. FM_FMT_END after M variants. */
static fm_status read_variant_header(bgen *b, fm_err *err) {
  fm_status st;
  if (b->v >= b->m) return FM_FMT_END;
  b->v_off = b->off;
  b->arena_len = 0;
  if (b->layout == 1) {
    uint32_t nv;
    if ((st = read_u32(b, &nv, "the sample count of a layout-1 variant", err))) return st;
    if (nv != b->n)
      return fm_err_set(err, FM_EFORMAT,
                        "bgen %s: variant %lu at byte offset %llu has %lu samples, the header %lu "
                        "(byte offset 12)",
                        b->path, (unsigned long)b->v + 1, (unsigned long long)b->v_off,
                        (unsigned long)nv, (unsigned long)b->n);
  }
  static const char *const what[3] = {"a variant SNPID", "a variant RSID", "a variant chromosome"};
  for (size_t i = 0; i < 3; i++) {
    uint16_t len;
    if ((st = read_u16(b, &len, what[i], err))) return st;
    if ((st = read_str(b, i, len, what[i], err))) return st;
  }
  if ((st = read_u32(b, &b->pos, "a variant position", err))) return st;
  uint64_t k_off = b->off;
  if (b->layout == 2) {
    uint16_t k;
    if ((st = read_u16(b, &k, "a variant allele count", err))) return st;
    b->k = k;
  } else {
    b->k = 2;
  }
  if (b->k == 0) /* malformed: every variant has a reference allele */
    return fm_err_set(err, FM_EFORMAT,
                      "bgen %s: variant %lu (%s) at byte offset %llu has 0 alleles (allele count at "
                      "byte offset %llu)",
                      b->path, (unsigned long)b->v + 1, var_name(b), (unsigned long long)b->v_off,
                      (unsigned long long)k_off);
  for (uint32_t a = 0; a < b->k; a++) {
    uint32_t len;
    if ((st = read_u32(b, &len, "an allele length", err))) return st;
    if ((st = read_str(b, 3 + (size_t)a, len, "an allele", err))) return st;
  }
  if (b->k < 2)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "bgen %s: variant %lu (%s) at byte offset %llu has %lu allele(s); need at least 2",
                      b->path, (unsigned long)b->v + 1, var_name(b), (unsigned long long)b->v_off,
                      (unsigned long)b->k);
  if (b->layout == 1 && b->compression == 0) {
    b->geno_len = 6 * (uint64_t)b->n;
  } else {
    uint32_t c;
    if ((st = read_u32(b, &c, "a genotype block length", err))) return st;
    b->geno_len = c;
  }
  if (b->off + b->geno_len > b->file_size) {
    uint64_t at = b->off;
    b->off = b->file_size;
    return fm_err_set(err, FM_EFORMAT,
                      "bgen %s: variant %lu (%s): genotype block of %llu bytes at byte offset %llu "
                      "runs past the end of the file (%llu bytes)",
                      b->path, (unsigned long)b->v + 1, var_name(b), (unsigned long long)b->geno_len,
                      (unsigned long long)at, (unsigned long long)b->file_size);
  }
  b->v++;
  b->geno_start = b->off;
  b->geno_pending = 1;
  return FM_OK;
}

static fm_status skip_geno(bgen *b, fm_err *err) {
  if (!b->geno_pending) return FM_OK;
  b->geno_pending = 0;
  return seek_to(b, b->off + b->geno_len, "a genotype block", err);
}

#define VERR(code, ...) verr(b, err, code, __VA_ARGS__)
static fm_status verr(bgen *b, fm_err *err, fm_status code, const char *fmt, ...) FM_PRINTF(4, 5);

#include <stdarg.h>
static fm_status verr(bgen *b, fm_err *err, fm_status code, const char *fmt, ...) {
  char detail[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return fm_err_set(err, code, "bgen %s: variant %lu (%s) at byte offset %llu: %s", b->path,
                    (unsigned long)b->v, var_name(b), (unsigned long long)b->v_off, detail);
}

/* Read the genotype block of the current variant and decompress it into
 * b->raw (8 zero bytes of padding after it); *len_out = uncompressed bytes. */
static fm_status load_geno(bgen *b, size_t *len_out, fm_err *err) {
  fm_status st;
  uint64_t clen = b->geno_len, dlen;
  const uint8_t *src;
  b->geno_pending = 0;
  if (b->layout == 1) {
    dlen = 6 * (uint64_t)b->n;
  } else if (b->compression == 0) {
    dlen = clen;
  } else {
    uint32_t d;
    if (clen < 4) return VERR(FM_EFORMAT, "genotype block of %llu bytes is too short", (unsigned long long)clen);
    if ((st = read_u32(b, &d, "an uncompressed block length", err))) return st;
    clen -= 4;
    dlen = d;
  }
  /* bound the uncompressed size: header + ploidy + at most 32 bits per stored value */
  uint64_t kk = b->k, per = kk * (kk + 1) / 2 - 1;
  if (2 * (kk - 1) > per) per = 2 * (kk - 1);
  double max_d = 10.0 + b->n + (double)b->n * (double)per * 4 + 64; /* double: no overflow */
  if (b->layout == 2 && (double)dlen > max_d)
    return VERR(FM_EFORMAT, "uncompressed length %llu exceeds the %.0f bytes %lu samples can need",
                (unsigned long long)dlen, max_d, (unsigned long)b->n);
  /* zlib inflates at most 1032:1: refuse a larger claim before allocating it
   * (N and the uncompressed length come from the file) */
  if (b->compression == 1 && (double)dlen > (double)clen * 1032.0 + 64)
    return VERR(FM_EFORMAT, "zlib block of %llu bytes cannot inflate to %llu bytes",
                (unsigned long long)clen, (unsigned long long)dlen);
  /* zstd: each block yields at most 128 KiB and costs at least 4 bytes
   * (3-byte header + 1 RLE byte) */
  if (b->compression == 2 && (double)dlen > ((double)clen / 4.0 + 1.0) * 131072.0)
    return VERR(FM_EFORMAT, "zstd block of %llu bytes cannot decompress to %llu bytes",
                (unsigned long long)clen, (unsigned long long)dlen);
  if (dlen > SIZE_MAX - 16 || clen > SIZE_MAX - 16)
    return VERR(FM_ENOMEM, "block of %llu bytes does not fit in memory", (unsigned long long)dlen);
  if (b->compression != 0 && b->layout == 2) {
    if (!b->ahead_tried && b->file_size + 1 > (uint64_t)FM_BGEN_AHEAD_MIN_BYTES) {
      b->ahead_tried = 1;
      b->ahead = bgen_ahead_start(fileno(b->f), b->off + clen, b->file_size, b->m - b->v, b->n,
                                  b->compression);
    }
    if (bgen_ahead_take(b->ahead, b->off, clen, dlen, &b->raw, &b->raw_cap)) {
      b->off += clen; /* the worker read and decompressed it */
      *len_out = (size_t)dlen;
      return FM_OK;
    }
  }
  if (!grow((void **)&b->raw, &b->raw_cap, (size_t)dlen + 8, 1))
    return VERR(FM_ENOMEM, "cannot allocate %llu bytes", (unsigned long long)dlen);
  if (b->compression == 0) {
    if (clen != dlen) return VERR(FM_EINTERNAL, "block length mismatch");
    if ((st = read_bytes(b, b->raw, (size_t)clen, "a genotype block", err))) return st;
  } else {
    if (!grow((void **)&b->comp, &b->comp_cap, (size_t)clen + 1, 1))
      return VERR(FM_ENOMEM, "cannot allocate %llu bytes", (unsigned long long)clen);
    if ((st = read_bytes(b, b->comp, (size_t)clen, "a genotype block", err))) return st;
    src = b->comp;
    if (b->compression == 1) { /* one decompressor, reused */
      if (!b->zs && !(b->zs = libdeflate_alloc_decompressor()))
        return VERR(FM_ENOMEM, "cannot create a zlib decompressor");
      size_t got = 0;
      enum libdeflate_result zr =
          libdeflate_zlib_decompress(b->zs, src, (size_t)clen, b->raw, (size_t)dlen, &got);
      if (zr != LIBDEFLATE_SUCCESS || got != dlen)
        return VERR(FM_EFORMAT, "zlib block of %llu bytes does not inflate to %llu bytes (%s, got %llu)",
                    (unsigned long long)clen, (unsigned long long)dlen,
                    zr == LIBDEFLATE_SUCCESS ? "short output"
                    : zr == LIBDEFLATE_INSUFFICIENT_SPACE ? "longer output" : "bad data",
                    (unsigned long long)got);
    } else { /* one zstd context, reused */
      if (!b->zd && !(b->zd = ZSTD_createDCtx())) return VERR(FM_ENOMEM, "cannot create a zstd context");
      size_t got = ZSTD_decompressDCtx(b->zd, b->raw, (size_t)dlen, src, (size_t)clen);
      if (ZSTD_isError(got) || got != dlen)
        return VERR(FM_EFORMAT, "zstd block of %llu bytes does not decompress to %llu bytes (%s)",
                    (unsigned long long)clen, (unsigned long long)dlen,
                    ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
    }
  }
  memset(b->raw + dlen, 0, 8);
  *len_out = (size_t)dlen;
  return FM_OK;
}

static inline uint64_t bits_at(const uint8_t *p, uint64_t bitpos, uint64_t mask) {
  const uint8_t *q = p + (bitpos >> 3);
  uint64_t w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&w, q, 8);
#else
  w = 0;
  for (int i = 7; i >= 0; i--) w = (w << 8) | q[i];
#endif
  return (w >> (bitpos & 7)) & mask;
}

static fm_status ensure_ecn(bgen *b, fm_err *err) {
  size_t need = (size_t)b->n * b->k;
  if (!grow((void **)&b->ecn, &b->ecn_cap, need ? need : 1, sizeof(uint64_t)))
    return VERR(FM_ENOMEM, "cannot allocate %llu expected counts", (unsigned long long)need);
  return FM_OK;
}

static void set_missing(bgen *b, uint32_t i) {
  b->miss[i] = 1;
  b->hapa[2 * i] = b->hapa[2 * i + 1] = -1;
}

/* The hardcall bounds of dosages num / den (fm_fmt.h), cached per den. */
static const uint64_t *hc_bounds(bgen *b, uint64_t den) {
  if (b->hcb_den != den) {
    fm_hardcall_bounds(den, b->hcb);
    b->hcb_den = den;
  }
  return b->hcb;
}

/* Layout 1: three uint16 / 32768 per sample, diploid biallelic. The ALT
 * dosage is (v1 + 2 v2) / 32768 as stored (a sum below 32768 is not
 * renormalized); its units of 1/16384 are (v1 + 2 v2) / 2 with halves to
 * even, as plink2 rounds them (measured: all 32,768 odd numerators). */
static fm_status decode_layout1(bgen *b, const uint8_t *d, fm_err *err) {
  b->is_phased_var = 0;
  b->direct = 0;
  b->den = 32768;
  for (uint32_t i = 0; i < b->n; i++) {
    const uint8_t *s = d + 6 * (size_t)i;
    uint32_t v0 = le16(s), v1 = le16(s + 2), v2 = le16(s + 4);
    b->hapl[i] = 2;
    b->hapa[2 * i] = b->hapa[2 * i + 1] = -1;
    if (v0 + v1 + v2 == 0) {
      set_missing(b, i);
      continue;
    }
    if (v0 + v1 + v2 > 32768 + 3)
      return VERR(FM_EFORMAT, "sample %lu: probabilities %lu/%lu/%lu sum to more than 32768",
                  (unsigned long)i + 1, (unsigned long)v0, (unsigned long)v1, (unsigned long)v2);
    b->miss[i] = 0;
    b->ecn[2 * (size_t)i] = 2 * (uint64_t)v0 + v1;
    b->ecn[2 * (size_t)i + 1] = v1 + 2 * (uint64_t)v2;
  }
  return FM_OK;
}

/* Smallest stored value x with x / maxv >= HC_THRESHOLD, computed in the
 * same double arithmetic as the rule, so integer compares equal it exactly. */
static uint64_t threshold_int(uint64_t maxv, double inv) {
  uint64_t t = (uint64_t)(HC_THRESHOLD * (double)maxv);
  while (t > 0 && (double)(t - 1) * inv >= HC_THRESHOLD) t--;
  while ((double)t * inv < HC_THRESHOLD) t++;
  return t;
}

/* bed2 code of a hardcall (0 -> 0b11, 1 -> 0b10, 2 -> 0b00, missing -> 0b01). */
static const uint8_t bed2_of_hc[4] = {1, 3, 2, 0}; /* indexed by hardcall + 1 */

/* The constants of bed2_lanes for ALT numerators s over maxv whose
 * hardcall bounds are bound[4] (fm_fmt.h). Each sample stores two values
 * x0, x1 (unphased: P(REF/REF), P(REF/ALT); phased: P(REF) of each
 * haplotype), and t = 2 x0 + x1 (unphased) or x0 + x1 (phased) is
 * 2 maxv - s. So s >= bound[i] is t < k_i = 2 maxv + 1 - bound[i], and
 * with T_i = [t >= k_i] (the carry out of t + 2^L - k_i in a lane whose
 * bit L is free) the code's high bit is T0 ^ T1 ^ T2 and its low bit
 * T1 ^ T2 ^ T3: (T0..T3) = 1111 -> 0b11 (s below bound[0]: 0 copies),
 * 0111 and 0001 -> 0b01 (missing), 0011 -> 0b10 (1 copy), 0000 -> 0b00
 * (2 copies). */
typedef struct lane_consts {
  uint64_t k[4]; /* one * (2^L - k_i) */
} lane_consts;

static void lane_setup(lane_consts *lc, uint64_t one, unsigned L, uint64_t maxv, const uint64_t bound[4]) {
  for (int i = 0; i < 4; i++) lc->k[i] = one * ((UINT64_C(1) << L) - (2 * maxv + 1 - bound[i]));
}

/* Codes (two bits at the bottom of each lane) of the t values in the lanes of t. */
static inline uint64_t lane_codes(uint64_t t, const lane_consts *lc, uint64_t one, unsigned L) {
  const uint64_t t0 = t + lc->k[0], t1 = t + lc->k[1], t2 = t + lc->k[2], t3 = t + lc->k[3];
  const uint64_t cb = one << L, hi = (t0 ^ t1 ^ t2) & cb, lo = (t1 ^ t2 ^ t3) & cb;
  return (hi >> (L - 1)) | (lo >> L);
}

/* bed2 codes of an all-diploid block of w-byte values (w 1 or 2), four
 * samples a step: 8-bit values in 16-bit lanes (one word, t in bits
 * 0..9, carry bit 15), 16-bit values in 32-bit lanes (two words, t in bits
 * 0..17, carry bit 31). Unphased blocks also check x0 + x1 <= maxv (the
 * carry out of x0 + x1 + 2^(B+1) - 1 - maxv); returns 0 when some sum
 * exceeds maxv (nothing written is used then). */
static inline int bed2_lanes(const uint8_t *p, uint32_t n, unsigned w, int phased, uint64_t maxv,
                             const uint64_t bound[4], uint8_t *out) {
  uint64_t over = 0;
  uint32_t i = 0;
  uint8_t *q = out;
  lane_consts lc;
  const unsigned sh = phased ? 0 : 1;
  if (w == 1) {
    const uint64_t one = UINT64_C(0x0001000100010001), vm = one * 0xff;
    const uint64_t o = one * (511 - maxv), ob = one << 9;
    lane_setup(&lc, one, 15, maxv, bound);
    for (; i + 4 <= n; i += 4, p += 8, q++) {
      const uint64_t x = le64(p), x0 = x & vm, x1 = (x >> 8) & vm;
      if (!phased) over |= (x0 + x1 + o) & ob;
      const uint64_t c = lane_codes((x0 << sh) + x1, &lc, one, 15);
      *q = (uint8_t)((c & 3u) | (c >> 14 & 0xcu) | (c >> 28 & 0x30u) | (c >> 42 & 0xc0u));
    }
  } else {
    const uint64_t one = UINT64_C(0x0000000100000001), vm = one * 0xffff;
    const uint64_t o = one * (131071 - maxv), ob = one << 17;
    lane_setup(&lc, one, 31, maxv, bound);
    for (; i + 4 <= n; i += 4, p += 16, q++) {
      const uint64_t x = le64(p), x0 = x & vm, x1 = (x >> 16) & vm;
      const uint64_t y = le64(p + 8), y0 = y & vm, y1 = (y >> 16) & vm;
      if (!phased) over |= ((x0 + x1 + o) | (y0 + y1 + o)) & ob;
      const uint64_t c = lane_codes((x0 << sh) + x1, &lc, one, 31);
      const uint64_t d = lane_codes((y0 << sh) + y1, &lc, one, 31);
      *q = (uint8_t)((c & 3u) | (c >> 30 & 0xcu) | (d & 3u) << 4 | (d >> 26 & 0xc0u));
    }
  }
  if (i < n) { /* the last 1..3 samples */
    unsigned byte = 0;
    for (unsigned k = 0; i < n; i++, k++, p += 2 * w) {
      const uint64_t x0 = w == 1 ? p[0] : le16(p), x1 = w == 1 ? p[1] : le16(p + 2);
      if (!phased) over |= x0 + x1 > maxv;
      const uint64_t t = (x0 << sh) + x1;
      const uint64_t s = t > 2 * maxv ? 0 : 2 * maxv - t;
      byte |= (unsigned)bed2_of_hc[fm_hardcall_from_bounds(s, bound) + 1] << (2 * k);
    }
    *q = (uint8_t)byte;
  }
  return over == 0;
}

/* Hardcalls of a two-allele block whose values take w whole bytes (8 or
 * 16 bits): the rule of decode_bi_direct without dosages or haplotype
 * slots. Inlined with w and phased constant, so each gets its own loop. */
static inline fm_status hardcalls_bytes(bgen *b, const uint8_t *ploidy, const uint8_t *p, unsigned w,
                                        int phased, uint64_t maxv, const uint64_t bound[4], fm_err *err) {
  int8_t *hc = b->hardcall;
  if (b->all_diploid && bed2_lanes(p, b->n, w, phased, maxv, bound, b->bed2)) {
    b->has_bed2 = 1;
    return FM_OK;
  }
  /* ploidies other than 2, or an unphased sum over maxv (named below) */
  for (uint32_t i = 0; i < b->n; i++) {
    const unsigned pl = ploidy[i];
    if (pl == 2) {
      const uint64_t x0 = w == 1 ? p[0] : (uint64_t)le16(p), x1 = w == 1 ? p[1] : (uint64_t)le16(p + 2);
      p += 2 * w;
      if (!phased && x0 + x1 > maxv) goto oversum;
      hc[i] = fm_hardcall_from_bounds(2 * maxv - (phased ? x0 : 2 * x0) - x1, bound);
    } else if (pl == 1) { /* haploid: 2 P(ALT), 0/2 coded; near 1 is a het: missing */
      const uint64_t x0 = w == 1 ? p[0] : (uint64_t)le16(p);
      p += w;
      const int8_t h = fm_hardcall_from_bounds(2 * (maxv - x0), bound);
      hc[i] = h == 1 ? FM_GT_MISSING : h;
    } else {
      p += (pl & 63u) * w;
      hc[i] = FM_GT_MISSING;
    }
    continue;
  oversum:
    return VERR(FM_EFORMAT, "sample %lu: stored probabilities sum to more than 1", (unsigned long)i + 1);
  }
  return FM_OK;
}

/* Layout 2, two alleles: decode straight into the record buffers. Dosage =
 * s / maxv with s the ALT numerator: P(REF/ALT) + 2 P(ALT/ALT) unphased,
 * the sum of the haplotypes' P(ALT) phased, 2 P(ALT) haploid; the hardcall
 * is plink2's rule on it (fm_hardcall_bounds of maxv). */
static fm_status decode_bi_direct(bgen *b, const uint8_t *ploidy, const uint8_t *p, unsigned nb,
                                  uint64_t maxv, fm_err *err) {
  const uint32_t n = b->n;
  const double inv = 1.0 / (double)maxv;
  const uint64_t *bound = hc_bounds(b, maxv);
  int8_t *hc = b->hardcall, *hap = b->hap;
  double *dos = b->dosage;
  uint64_t bp = 0;
  b->has_bed2 = 0;
  b->den = maxv;
  if (b->hc_only && (nb == 8 || nb == 16)) {
    if (b->is_phased_var)
      return nb == 8 ? hardcalls_bytes(b, ploidy, p, 1, 1, maxv, bound, err)
                     : hardcalls_bytes(b, ploidy, p, 2, 1, maxv, bound, err);
    return nb == 8 ? hardcalls_bytes(b, ploidy, p, 1, 0, maxv, bound, err)
                   : hardcalls_bytes(b, ploidy, p, 2, 0, maxv, bound, err);
  }
  if (!b->is_phased_var) {
    for (uint32_t i = 0; i < n; i++) {
      unsigned pl = ploidy[i];
      if (pl == 2) { /* diploid, present: P(RR) = x0, P(RA) = x1, P(AA) = rest */
        uint64_t x0 = bits_at(p, bp, maxv), x1 = bits_at(p, bp + nb, maxv);
        bp += 2 * (uint64_t)nb;
        if (x0 + x1 > maxv) goto oversum;
        const uint64_t s = x1 + 2 * (maxv - x0 - x1);
        dos[i] = (double)s * inv;
        hc[i] = fm_hardcall_from_bounds(s, bound);
      } else if (pl == 1) { /* haploid: P(R) = x0, P(A) = rest; PLINK 0/2 */
        uint64_t x0 = bits_at(p, bp, maxv);
        bp += nb;
        const uint64_t s = 2 * (maxv - x0);
        dos[i] = (double)s * inv;
        const int8_t h = fm_hardcall_from_bounds(s, bound);
        hc[i] = h == 1 ? FM_GT_MISSING : h;
      } else { /* missing bit or ploidy 0 */
        bp += (uint64_t)(pl & 63) * nb;
        dos[i] = NAN;
        hc[i] = FM_GT_MISSING;
      }
      continue;
    oversum:
      return VERR(FM_EFORMAT, "sample %lu: stored probabilities sum to more than 1", (unsigned long)i + 1);
    }
    return FM_OK;
  }
  const uint64_t thr = threshold_int(maxv, inv); /* haplotype slots */
  for (uint32_t i = 0; i < n; i++) {
    unsigned pl = ploidy[i];
    if (pl != 1 && pl != 2) {
      bp += (uint64_t)(pl & 63) * nb;
      dos[i] = NAN;
      hc[i] = hap[2 * i] = hap[2 * i + 1] = FM_GT_MISSING;
      continue;
    }
    /* per haplotype: stored P(REF) = x, P(ALT) = maxv - x */
    uint64_t r0 = bits_at(p, bp, maxv), r1 = pl == 2 ? bits_at(p, bp + nb, maxv) : r0;
    bp += (uint64_t)pl * nb;
    uint64_t a0 = maxv - r0, a1 = maxv - r1;
    const uint64_t s = a0 + a1; /* haploid: 2 P(ALT) */
    dos[i] = (double)s * inv;
    const int8_t h = fm_hardcall_from_bounds(s, bound);
    if (pl == 1) { /* 0/2 coded, the allele in both slots; near 1 is a het: missing */
      hc[i] = h == 1 ? FM_GT_MISSING : h;
      hap[2 * i] = hap[2 * i + 1] = hc[i] == FM_GT_MISSING ? FM_GT_MISSING : (int8_t)(hc[i] / 2);
    } else {
      hc[i] = h;
      hap[2 * i] = a0 >= thr ? 1 : r0 >= thr ? 0 : FM_GT_MISSING;
      hap[2 * i + 1] = a1 >= thr ? 1 : r1 >= thr ? 0 : FM_GT_MISSING;
    }
  }
  return FM_OK;
}

/* Layout 2 probability data. */
static fm_status decode_layout2(bgen *b, const uint8_t *d, size_t len, fm_err *err) {
  if (len < 10 + (size_t)b->n)
    return VERR(FM_EFORMAT, "genotype data of %llu bytes is shorter than its header and %lu ploidy bytes",
                (unsigned long long)len, (unsigned long)b->n);
  uint32_t n = le32(d), k = le16(d + 4);
  unsigned pmin = d[6], pmax = d[7];
  if (n != b->n) return VERR(FM_EFORMAT, "genotype data has %lu samples, the header %lu", (unsigned long)n, (unsigned long)b->n);
  if (k != b->k) return VERR(FM_EFORMAT, "genotype data has %lu alleles, the variant %lu", (unsigned long)k, (unsigned long)b->k);
  const uint8_t *ploidy = d + 8;
  unsigned phased = d[8 + n], nb = d[9 + n];
  if (phased > 1) return VERR(FM_EFORMAT, "phased flag is %u (must be 0 or 1)", phased);
  if (nb < 1 || nb > 32) return VERR(FM_EFORMAT, "bits per probability is %u (must be 1..32)", nb);
  (void)pmin;
  (void)pmax;
  b->is_phased_var = (int)phased;
  const uint8_t *p = d + 10 + n;
  uint64_t avail_bits = (uint64_t)(len - 10 - n) * 8;
  uint64_t need_bits = 0;
  int summed = 0; /* need_bits is final */
  if (k == 2) { /* one value per allele copy, phased or not: nb x the sum of ploidies */
    unsigned over = 0, not2 = 0;
    uint32_t i = 0;
    /* all diploid (the usual block): 8 ploidy bytes of 2 per compare */
    for (; i + 8 <= n; i += 8) {
      uint64_t x;
      memcpy(&x, ploidy + i, 8);
      if (x != UINT64_C(0x0202020202020202)) break;
      need_bits += 16;
    }
    for (; i < n; i++) {
      const unsigned z = ploidy[i] & 63u;
      over |= z > 2;
      not2 |= ploidy[i] ^ 2u;
      need_bits += z;
    }
    summed = !over; /* else the loop below names the first bad sample */
    need_bits = summed ? need_bits * nb : 0;
    b->all_diploid = !not2;
  }
  for (uint32_t i = 0; !summed && i < n; i++) {
    unsigned z = ploidy[i] & 63;
    /* beyond diploid: refused as malformed for this reader, naming the sample */
    if (z > 2)
      return VERR(FM_EFORMAT, "sample %lu has ploidy %u (only 0, 1 and 2 are read)",
                  (unsigned long)i + 1, z);
    uint64_t nv = phased ? (uint64_t)z * (k - 1)
                         : (z == 0 ? 0 : z == 1 ? k - 1 : (uint64_t)k * (k + 1) / 2 - 1);
    need_bits += nv * nb;
    if (need_bits > avail_bits) break; /* (keeps the sum far from overflow) */
  }
  if (need_bits > avail_bits)
    return VERR(FM_EFORMAT, "probabilities need %llu bits, the block holds %llu",
                (unsigned long long)need_bits, (unsigned long long)avail_bits);
  const uint64_t maxv = nb == 32 ? UINT64_C(0xffffffff) : ((UINT64_C(1) << nb) - 1);
  b->direct = k == 2;
  if (k == 2) return decode_bi_direct(b, ploidy, p, nb, maxv, err);
  fm_status st = ensure_ecn(b, err);
  if (st != FM_OK) return st;
  const uint64_t thr = threshold_int(maxv, 1.0 / (double)maxv); /* haplotype slots */
  uint64_t bp = 0;
  b->den = maxv;
  for (uint32_t i = 0; i < n; i++) {
    unsigned z = ploidy[i] & 63;
    int miss = (ploidy[i] & 0x80) != 0 || z == 0;
    uint64_t *ec = b->ecn + (size_t)i * k;
    b->hapl[i] = (uint8_t)(z == 1 ? 1 : 2);
    b->hapa[2 * i] = b->hapa[2 * i + 1] = -1;
    if (phased) {
      uint64_t nv = (uint64_t)z * (k - 1);
      if (miss) {
        bp += nv * nb;
        set_missing(b, i);
        continue;
      }
      /* ec[a] = the haplotypes' P(allele a), summed (haploid: twice) */
      for (uint32_t a = 0; a < k; a++) ec[a] = 0;
      for (unsigned h = 0; h < z; h++) {
        uint64_t sum = 0;
        int32_t ha = -1;
        for (uint32_t a = 0; a + 1 < k; a++) {
          uint64_t x = bits_at(p, bp, maxv);
          bp += nb;
          sum += x;
          ec[a] += z == 1 ? 2 * x : x;
          if (x >= thr) ha = (int32_t)a;
        }
        if (sum > maxv)
          return VERR(FM_EFORMAT, "sample %lu haplotype %u: stored probabilities sum to more than 1",
                      (unsigned long)i + 1, h + 1);
        ec[k - 1] += z == 1 ? 2 * (maxv - sum) : maxv - sum;
        if (maxv - sum >= thr) ha = (int32_t)(k - 1);
        b->hapa[2 * i + h] = ha;
      }
      if (z == 1) b->hapa[2 * i + 1] = b->hapa[2 * i];
      b->miss[i] = 0;
    } else {
      uint64_t nv = z == 0 ? 0 : z == 1 ? k - 1 : (uint64_t)k * (k + 1) / 2 - 1;
      if (miss) {
        bp += nv * nb;
        set_missing(b, i);
        continue;
      }
      /* ec[a] = sum over genotypes of P(genotype) x its copies of allele a */
      for (uint32_t a = 0; a < k; a++) ec[a] = 0;
      uint64_t sum = 0;
      uint32_t ga = 0, gc = 0; /* genotype g = gc (gc + 1) / 2 + ga, ga <= gc */
      for (uint64_t g = 0; g < nv; g++) {
        uint64_t x = bits_at(p, bp, maxv);
        bp += nb;
        sum += x;
        if (z == 1) {
          ec[g] += 2 * x;
        } else {
          ec[ga] += x;
          ec[gc] += x;
          if (++ga > gc) gc++, ga = 0;
        }
      }
      if (sum > maxv)
        return VERR(FM_EFORMAT, "sample %lu: stored probabilities sum to more than 1", (unsigned long)i + 1);
      ec[k - 1] += 2 * (maxv - sum); /* haploid: allele k-1; diploid: hom k-1 */
      b->miss[i] = 0;
    }
  }
  return FM_OK;
}

/* Per-sample buffers, allocated at the first decode (after the block proved
 * that N samples are really there). */
static fm_status ensure_samples(bgen *b, fm_err *err) {
  if (b->hardcall) return FM_OK;
  size_t n = b->n ? b->n : 1;
  b->miss = malloc(n);
  b->hapl = malloc(n);
  b->hapa = malloc(2 * n * sizeof(int32_t));
  b->dosage = malloc(n * sizeof(double));
  b->hap = malloc(2 * n);
  b->hardcall = malloc(n);
  b->bed2 = malloc((n + 3) / 4);
  if (!b->miss || !b->hapl || !b->hapa || !b->hardcall || !b->dosage || !b->hap ||
      !b->bed2) {
    free(b->miss), free(b->hapl), free(b->hapa), free(b->dosage), free(b->hap), free(b->hardcall);
    free(b->bed2);
    b->miss = b->hapl = NULL, b->hapa = NULL, b->dosage = NULL, b->hap = NULL, b->hardcall = NULL;
    b->bed2 = NULL;
    return fm_err_set(err, FM_ENOMEM, "bgen %s: out of memory for %lu samples", b->path, (unsigned long)b->n);
  }
  return FM_OK;
}

static fm_status decode_current(bgen *b, fm_err *err) {
  size_t len = 0;
  fm_status st = load_geno(b, &len, err);
  if (st != FM_OK) return st;
  /* a layout-2 block whose sample count differs from the header's proves
   * nothing: decode_layout2 refuses it before any per-sample buffer is used,
   * so do not allocate N (from the header) first */
  if (b->layout == 2 && (len < 10 + (size_t)b->n || le32(b->raw) != b->n))
    return decode_layout2(b, b->raw, len, err);
  if ((st = ensure_samples(b, err))) return st;
  if (b->layout == 1) {
    if ((st = ensure_ecn(b, err))) return st;
    return decode_layout1(b, b->raw, err);
  }
  return decode_layout2(b, b->raw, len, err);
}

static void fill_record(bgen *b, fm_reader *r, uint32_t j, fm_gt_record *rec) {
  uint32_t n = b->n, k = b->k;
  /* split record j counts allele j: dosage ecn / den, plink2's hardcall
   * rule on it (haploid: 0/2, the allele in both slots) */
  const uint64_t *bound = b->direct ? NULL : hc_bounds(b, b->den);
  const double inv = 1.0 / (double)b->den;
  for (uint32_t i = 0; !b->direct && i < n; i++) {
    if (b->miss[i]) {
      b->hardcall[i] = FM_GT_MISSING;
      b->dosage[i] = NAN;
      b->hap[2 * i] = b->hap[2 * i + 1] = FM_GT_MISSING;
      continue;
    }
    const uint64_t s = b->ecn[(size_t)i * k + j];
    const double dv = (double)s * inv;
    b->dosage[i] = dv > 2 ? 2 : dv;
    int8_t h = fm_hardcall_from_bounds(s, bound);
    if (b->hapl[i] == 1) {
      if (h == 1) h = FM_GT_MISSING;
      b->hap[2 * i] = b->hap[2 * i + 1] = h == FM_GT_MISSING ? FM_GT_MISSING : (int8_t)(h / 2);
    } else {
      for (int t = 0; t < 2; t++) {
        int32_t a = b->hapa[2 * i + t];
        b->hap[2 * i + t] = a < 0 ? FM_GT_MISSING : (int8_t)(a == (int32_t)j);
      }
    }
    b->hardcall[i] = h;
  }
  rec->n_samples = n;
  rec->chrom = str_at(b, 2);
  rec->pos = b->pos;
  rec->id = var_name(b);
  rec->ref = str_at(b, 3);
  rec->alt = str_at(b, 3 + (size_t)j);
  rec->hardcall = b->hardcall;
  if (b->hc_only) {
    if (b->direct && b->has_bed2) {
      rec->hardcall = NULL;
      rec->bed2 = b->bed2;
    }
    rec->dosage = NULL;
    rec->hap = NULL;
    rec->is_phased = 0;
    return;
  }
  rec->dosage = b->dosage;
  /* An unphased record without a heterozygous call is phase-unambiguous:
   * its slots come from the hardcalls (0 -> 0|0, 2 -> 1|1), so phased files
   * whose all-homozygous variants were stored unphased still fill a
   * haplotype destination. is_phased stays 0 (as stored). */
  int has_hap = b->is_phased_var;
  if (!has_hap) {
    uint32_t i = 0;
    while (i < n && b->hardcall[i] != 1) i++;
    if (i == n) {
      for (i = 0; i < n; i++) {
        int8_t h = b->hardcall[i];
        b->hap[2 * i] = b->hap[2 * i + 1] = h < 0 ? FM_GT_MISSING : (int8_t)(h / 2);
      }
      has_hap = 1;
    }
  }
  rec->hap = has_hap ? b->hap : NULL;
  rec->is_phased = b->is_phased_var;
  if (b->is_phased_var) r->info.is_phased = 1;
}

static fm_status bgen_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  bgen *b = r->impl;
  fm_status st;
  if (b->v == 0) b->hc_only = r->is_hardcall_only;
  if (b->next_j == 0) {
    if ((st = skip_geno(b, err))) return st;
    if ((st = read_variant_header(b, err))) return st;
    if ((st = decode_current(b, err))) {
      /* leave the file at the next variant so a caller may go on */
      b->geno_pending = 0;
      fm_err tmp;
      if (seek_to(b, b->geno_start + b->geno_len, "the next variant", &tmp) != FM_OK) b->off = b->file_size;
      return st;
    }
    b->next_j = 1;
  }
  fill_record(b, r, b->next_j, rec);
  b->next_j = b->next_j + 1 < b->k ? b->next_j + 1 : 0;
  return FM_OK;
}

fm_status fm_fmt_bgen_skip(fm_reader *r, int64_t n_records, int64_t *n_skipped_out, fm_err *err) {
  if (n_skipped_out) *n_skipped_out = 0;
  if (!r || r->ops != &bgen_ops || n_records < 0)
    return fm_err_set(err, FM_EARG, "fm_fmt_bgen_skip: r must be a BGEN reader and n_records (%lld) >= 0",
                      (long long)n_records);
  bgen *b = r->impl;
  int64_t done = 0;
  fm_status st = FM_OK;
  while (done < n_records) {
    if (b->next_j != 0) {
      int64_t left = (int64_t)b->k - b->next_j;
      int64_t take = left < n_records - done ? left : n_records - done;
      done += take;
      b->next_j = (uint32_t)(b->next_j + take) < b->k ? (uint32_t)(b->next_j + take) : 0;
      continue;
    }
    if ((st = skip_geno(b, err))) break;
    if ((st = read_variant_header(b, err))) break;
    if ((int64_t)b->k - 1 <= n_records - done) { /* every record of it skipped: no decode */
      if ((st = skip_geno(b, err))) break;
      done += (int64_t)b->k - 1;
      continue;
    }
    if ((st = decode_current(b, err))) break; /* the caller resumes inside this variant */
    b->next_j = (uint32_t)(1 + (n_records - done));
    done = n_records;
  }
  if (n_skipped_out) *n_skipped_out = done;
  if (st == FM_FMT_END)
    fm_err_set(err, FM_FMT_END, "bgen %s: end of file after skipping %lld of %lld records", b->path,
               (long long)done, (long long)n_records);
  return st;
}

static void bgen_close(fm_reader *r) {
  bgen *b = r ? r->impl : NULL;
  if (!b) return;
  bgen_ahead_stop(b->ahead); /* before fclose: the worker reads the descriptor */
  if (b->f) fclose(b->f);
  if (b->zs) libdeflate_free_decompressor(b->zs);
  ZSTD_freeDCtx(b->zd);
  free(b->path);
  free(b->ibuf);
  free(b->arena);
  free(b->str_off);
  free(b->comp);
  free(b->raw);
  free(b->miss);
  free(b->hapl);
  free(b->hapa);
  free(b->ecn);
  free(b->hardcall);
  free(b->bed2);
  free(b->dosage);
  free(b->hap);
  free(b);
  r->impl = NULL;
}

/* Every record left, seeking over the genotype blocks (fm_fmt_bgen_skip). */
static fm_status bgen_count(fm_reader *r, int64_t *n_out, const fm_ctl *ctl, fm_err *err) {
  (void)ctl;
  fm_status st = fm_fmt_bgen_skip(r, INT64_MAX, n_out, err);
  return st == FM_FMT_END ? FM_OK : st;
}

static const fm_reader_ops bgen_ops = {bgen_next, bgen_close, bgen_count};

/* Most bytes c compressed bytes can yield: zlib inflates at most 1032:1, a
 * zstd block yields at most 128 KiB for at least 4 bytes (load_geno's
 * bounds); c itself when uncompressed. */
static double max_inflated(unsigned compression, uint64_t c) {
  if (compression == 1) return (double)c * 1032.0 + 64;
  if (compression == 2) return ((double)c / 4.0 + 1.0) * 131072.0;
  return (double)c;
}

/* The header's N (byte offset 12) against the first variant's genotype
 * block, at open: without a sample block nothing else backs N, and callers
 * size per-sample arrays (sample IDs) by it before reading a record, so a
 * header claiming 2^31 - 1 samples beside blocks of a few hundred bytes must
 * fail here. The block must hold N samples: layout 2, N + 10 bytes
 * uncompressed (its N, K, Pmin, Pmax, N ploidy bytes, phased, B), and its own
 * N when stored as is; layout 1, its variant's own N (read_variant_header)
 * and 6 N bytes. Leaves the file at the first variant, none read. */
static fm_status check_first_block(bgen *b, uint64_t first_variant, fm_err *err) {
  if (b->m == 0) return FM_OK;
  fm_status st = read_variant_header(b, err);
  if (st != FM_OK) return st;
  const uint64_t at = b->geno_start, c = b->geno_len;
  const double need = b->layout == 2 ? 10.0 + b->n : 6.0 * b->n;
  double can = 0;
  char what[160];
  if (b->layout == 1 && b->compression == 0) {
    can = need; /* 6 N bytes, which read_variant_header found in the file */
  } else if (b->layout == 2 && b->compression == 0) {
    can = (double)c;
    snprintf(what, sizeof what, "%llu bytes", (unsigned long long)c);
    if (can >= need) {
      uint32_t n_block;
      if ((st = read_u32(b, &n_block, "the sample count of the first genotype block", err))) return st;
      if (n_block != b->n)
        return fm_err_set(err, FM_EFORMAT,
                          "bgen %s: header N %lu (byte offset 12) but the first genotype block (byte "
                          "offset %llu) says %lu samples",
                          b->path, (unsigned long)b->n, (unsigned long long)at, (unsigned long)n_block);
    }
  } else if (b->layout == 2) {
    uint32_t d = 0;
    if (c >= 4 && (st = read_u32(b, &d, "an uncompressed block length", err))) return st;
    const double most = c >= 4 ? max_inflated(b->compression, c - 4) : 0;
    can = c >= 4 && (double)d < most ? (double)d : most;
    snprintf(what, sizeof what, "%s, %llu bytes, %lu uncompressed", b->compression == 1 ? "zlib" : "zstd",
             (unsigned long long)c, (unsigned long)d);
  } else {
    can = max_inflated(b->compression, c);
    snprintf(what, sizeof what, "%s, %llu bytes", b->compression == 1 ? "zlib" : "zstd",
             (unsigned long long)c);
  }
  if (can < need)
    return fm_err_set(err, FM_EFORMAT,
                      "bgen %s: header N %lu (byte offset 12) does not fit the first genotype block "
                      "(byte offset %llu: %s; N samples need %.0f bytes)",
                      b->path, (unsigned long)b->n, (unsigned long long)at, what, need);
  b->v = 0;
  b->geno_pending = 0;
  return seek_to(b, first_variant, "the first variant", err);
}

fm_status fm_fmt_bgen_open(const char *path, fm_reader **out, fm_err *err) {
  fm_status st = FM_OK;
  fm_reader *r = NULL;
  bgen *b = NULL;
  if (out) *out = NULL;
  if (!path || !out) return fm_err_set(err, FM_EARG, "fm_fmt_bgen_open: path and out must not be NULL");
  r = fm_reader_new(&bgen_ops, sizeof *b);
  if (!r) return fm_err_set(err, FM_ENOMEM, "bgen %s: out of memory opening the file", path);
  b = r->impl;
  b->path = malloc(strlen(path) + 1);
  b->ibuf = malloc(IBUF_CAP);
  if (!b->path || !b->ibuf) {
    st = fm_err_set(err, FM_ENOMEM, "bgen %s: out of memory opening the file", path);
    goto fail;
  }
  strcpy(b->path, path);
  b->f = fopen(path, "rb");
  if (!b->f) {
    st = fm_err_set(err, FM_EIO, "bgen %s: cannot open: %s", path, strerror(errno));
    goto fail;
  }
  struct stat sb;
  if (fstat(fileno(b->f), &sb) != 0) {
    st = fm_err_set(err, FM_EIO, "bgen %s: cannot stat: %s", path, strerror(errno));
    goto fail;
  }
  b->file_size = (uint64_t)sb.st_size;

  uint32_t first_off, lh;
  if ((st = read_u32(b, &first_off, "the offset of the first variant", err))) goto fail;
  if ((st = read_u32(b, &lh, "the header block length", err))) goto fail;
  if (lh < 20) {
    st = fm_err_set(err, FM_EFORMAT, "bgen %s: header block length %lu at byte offset 4 is below 20",
                    path, (unsigned long)lh);
    goto fail;
  }
  uint8_t hb[16];
  if ((st = read_bytes(b, hb, 12, "the header block", err))) goto fail;
  b->m = le32(hb);
  b->n = le32(hb + 4);
  if (memcmp(hb + 8, "bgen", 4) != 0 && memcmp(hb + 8, "\0\0\0\0", 4) != 0) {
    st = fm_err_set(err, FM_EFORMAT,
                    "bgen %s: wrong magic number at byte offset 16 (bytes %02x %02x %02x %02x, expected \"bgen\")",
                    path, hb[8], hb[9], hb[10], hb[11]);
    goto fail;
  }
  uint32_t flags;
  if ((st = seek_to(b, 4 + (uint64_t)lh - 4, "the header flags", err))) goto fail;
  if ((st = read_u32(b, &flags, "the header flags", err))) goto fail;
  b->compression = flags & 3;
  b->layout = (flags >> 2) & 15;
  if (b->compression == 3) {
    st = fm_err_set(err, FM_EFORMAT,
                    "bgen %s: compression flag 3 (header flags 0x%08lx at byte offset %llu) is not defined "
                    "by the BGEN spec (0 none, 1 zlib, 2 zstd)",
                    path, (unsigned long)flags, (unsigned long long)lh);
    goto fail;
  }
  if (b->layout != 1 && b->layout != 2) {
    st = fm_err_set(err, FM_EUNSUPPORTED, "bgen %s: layout %u (header flags 0x%08lx) is not read; only layouts 1 and 2",
                    path, b->layout, (unsigned long)flags);
    goto fail;
  }
  if ((uint64_t)lh > first_off) {
    st = fm_err_set(err, FM_EFORMAT, "bgen %s: header block length %lu exceeds the first-variant offset %lu",
                    path, (unsigned long)lh, (unsigned long)first_off);
    goto fail;
  }
  if ((uint64_t)first_off + 4 > b->file_size) {
    st = fm_err_set(err, FM_EFORMAT,
                    "bgen %s: the first-variant offset %lu (byte offset 0) points past the end of the "
                    "file (%llu bytes)",
                    path, (unsigned long)first_off, (unsigned long long)b->file_size);
    goto fail;
  }
  r->info.format = "bgen";
  r->info.n_samples = b->n;
  r->info.n_variants = b->m;
  r->info.is_phased = 0;
  r->info.has_dosage = 1;

  if (flags & UINT32_C(0x80000000)) {
    uint32_t lsi, ns;
    uint64_t start = b->off;
    if ((st = read_u32(b, &lsi, "the sample block length", err))) goto fail;
    if ((st = read_u32(b, &ns, "the sample block count", err))) goto fail;
    if (ns != b->n) {
      st = fm_err_set(err, FM_EFORMAT, "bgen %s: sample block at byte offset %llu lists %lu samples, the header %lu",
                      path, (unsigned long long)start, (unsigned long)ns, (unsigned long)b->n);
      goto fail;
    }
    if ((uint64_t)lh + lsi > first_off || start + lsi > b->file_size || lsi < 8 ||
        (uint64_t)(lsi - 8) / 2 < ns) {
      st = fm_err_set(err, FM_EFORMAT,
                      "bgen %s: sample block at byte offset %llu has length %lu, inconsistent with %lu samples "
                      "and the first-variant offset %lu",
                      path, (unsigned long long)start, (unsigned long)lsi, (unsigned long)ns,
                      (unsigned long)first_off);
      goto fail;
    }
    r->sample_ids = calloc(ns ? ns : 1, sizeof(char *));
    if (!r->sample_ids) {
      st = fm_err_set(err, FM_ENOMEM, "bgen %s: out of memory for %lu sample IDs", path, (unsigned long)ns);
      goto fail;
    }
    for (uint32_t i = 0; i < ns; i++) {
      uint16_t len;
      if ((st = read_u16(b, &len, "a sample identifier", err))) goto fail;
      if (b->off + len > start + lsi) {
        st = fm_err_set(err, FM_EFORMAT, "bgen %s: sample identifier %lu at byte offset %llu runs past the sample block",
                        path, (unsigned long)i + 1, (unsigned long long)b->off);
        goto fail;
      }
      char *s = malloc((size_t)len + 1);
      if (!s) {
        st = fm_err_set(err, FM_ENOMEM, "bgen %s: out of memory for sample IDs", path);
        goto fail;
      }
      r->sample_ids[i] = s;
      if ((st = read_bytes(b, s, len, "a sample identifier", err))) goto fail;
      s[len] = '\0';
    }
  }
  if ((st = seek_to(b, (uint64_t)first_off + 4, "the first variant", err))) goto fail;
  if ((st = check_first_block(b, (uint64_t)first_off + 4, err))) goto fail;
  if (b->layout == 2) { /* count records: K-1 per variant, reading only variant headers */
    int64_t n_rec = 0;
    while ((st = read_variant_header(b, err)) == FM_OK) {
      n_rec += (int64_t)b->k - 1;
      if ((st = skip_geno(b, err))) goto fail;
    }
    if (st != FM_FMT_END) goto fail;
    r->info.n_variants = n_rec;
    b->v = 0;
    if ((st = seek_to(b, (uint64_t)first_off + 4, "the first variant", err))) goto fail;
  }

  *out = r;
  return FM_OK;
fail:
  fm_reader_close(r);
  return st;
}
