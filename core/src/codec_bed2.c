/* codec_bed2.c: PLINK 1 two-bit hardcalls (docs/formats/bed.md).
 *
 * Decoding goes through a per-column table from the 2-bit code to the final
 * double (the affine transform is folded into the table), one byte = four
 * samples at a time. Counting goes through a 256-entry table of packed
 * per-code counts. */
#include "fm/fm_codec_bed2.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* count 0 -> 0b11, 1 -> 0b10, 2 -> 0b00, 3 (missing) -> 0b01, per 2-bit field */
#define C2(c) ((c) == 0 ? 3u : (c) == 1 ? 2u : (c) == 2 ? 0u : 1u)
#define E1(x) (C2((x) & 3u) | C2(((x) >> 2) & 3u) << 2 | C2(((x) >> 4) & 3u) << 4 | \
               C2(((x) >> 6) & 3u) << 6)
#define E4(x) E1(x), E1((x) + 1u), E1((x) + 2u), E1((x) + 3u)
#define E16(x) E4(x), E4((x) + 4u), E4((x) + 8u), E4((x) + 12u)
#define E64(x) E16(x), E16((x) + 16u), E16((x) + 32u), E16((x) + 48u)
const uint8_t fm_codec_bed2_of_count2[256] = {E64(0u), E64(64u), E64(128u), E64(192u)};
#undef C2
#undef E1
#undef E4
#undef E16
#undef E64

void fm_codec_bed2_from_count2(const uint8_t *src, int64_t n_bytes, uint8_t *dst) {
  const uint64_t lo = UINT64_C(0x5555555555555555);
  int64_t j = 0;
  for (; j + 8 <= n_bytes; j += 8) {
    uint64_t x;
    memcpy(&x, src + j, 8); /* byte order does not matter: fields never cross bytes */
    const uint64_t h = (x >> 1) & lo, l = x & lo;
    x = (~h & lo) << 1 | (~(h ^ l) & lo);
    memcpy(dst + j, &x, 8);
  }
  for (; j < n_bytes; j++) dst[j] = fm_codec_bed2_of_count2[src[j]];
}

int64_t fm_codec_bed2_col_bytes(int64_t n_samples) {
  return n_samples <= 0 ? 0 : n_samples / 4 + (n_samples % 4 != 0);
}

void fm_codec_bed2_lut(double center, double scale, double fill, double lut_out[4]) {
  lut_out[0] = (2.0 - center) * scale;
  lut_out[1] = fill;
  lut_out[2] = (1.0 - center) * scale;
  lut_out[3] = (0.0 - center) * scale;
}

/* Whole bytes: four samples each. Kept separate so the compiler sees a tight
 * loop with no partial-byte branches. */
static void decode_bytes(const uint8_t *p, int64_t n_bytes, const double *lut, double *out) {
  const double l0 = lut[0], l1 = lut[1], l2 = lut[2], l3 = lut[3];
  const double t[4] = {l0, l1, l2, l3};
  for (int64_t q = 0; q < n_bytes; q++) {
    unsigned b = p[q];
    double *o = out + 4 * q;
    o[0] = t[b & 3u];
    o[1] = t[(b >> 2) & 3u];
    o[2] = t[(b >> 4) & 3u];
    o[3] = t[b >> 6];
  }
}

void fm_codec_bed2_decode_col(const uint8_t *col, int64_t r0, int64_t n_rows, const double lut[4],
                              double *out) {
  if (n_rows <= 0) return;
  const uint8_t *p = col + (r0 >> 2);
  int64_t i = 0;
  int sh = (int)(r0 & 3);
  if (sh != 0) { /* head: the rest of a partly used byte */
    unsigned b = *p++;
    for (; sh < 4 && i < n_rows; sh++, i++) out[i] = lut[(b >> (2 * sh)) & 3u];
  }
  int64_t n_full = (n_rows - i) >> 2;
  decode_bytes(p, n_full, lut, out + i);
  i += 4 * n_full;
  p += n_full;
  if (i < n_rows) { /* tail: leading samples of one more byte */
    unsigned b = *p;
    for (int s = 0; i < n_rows; s++, i++) out[i] = lut[(b >> (2 * s)) & 3u];
  }
}

static uint8_t encode_code(int32_t v) {
  switch (v) {
  case 0: return 3u;
  case 1: return 2u;
  case 2: return 0u;
  default: return 1u; /* INT32_MIN, validated by the caller */
  }
}

fm_status fm_codec_bed2_encode(const int32_t *g, int64_t n_samples, int64_t n_cols, int64_t ld,
                               uint8_t *out, fm_err *err) {
  if (n_samples < 0 || n_cols < 0)
    return fm_err_set(err, FM_EARG, "bed2 encode: n_samples (%lld) and n_cols (%lld) must be >= 0",
                      (long long)n_samples, (long long)n_cols);
  if (n_samples == 0 || n_cols == 0) return FM_OK;
  if (ld < n_samples)
    return fm_err_set(err, FM_EARG, "bed2 encode: ld (%lld) is less than n_samples (%lld)",
                      (long long)ld, (long long)n_samples);
  if (!g || !out) return fm_err_set(err, FM_EARG, "bed2 encode: g and out must not be NULL");
  const int64_t cb = fm_codec_bed2_col_bytes(n_samples);
  for (int64_t j = 0; j < n_cols; j++) {
    const int32_t *gj = g + j * ld;
    for (int64_t i = 0; i < n_samples; i++) {
      int32_t v = gj[i];
      if (!(v == 0 || v == 1 || v == 2 || v == INT32_MIN))
        return fm_err_set(err, FM_EARG,
                          "g[%lld, %lld] = %ld is not a genotype count (0, 1, 2 or NA)",
                          (long long)(i + 1), (long long)(j + 1), (long)v);
    }
    uint8_t *oj = out + j * cb;
    memset(oj, 0, (size_t)cb);
    for (int64_t i = 0; i < n_samples; i++)
      oj[i >> 2] |= (uint8_t)(encode_code(gj[i]) << (2 * (i & 3)));
  }
  return FM_OK;
}

/* Packed counts: 16-bit lane c counts code c among the four samples of
 * byte b. A constant table, so concurrent callers share it without races. */
#define LANE(c) ((uint64_t)1 << (16 * (c)))
#define ENTRY(b) (LANE((b)&3) + LANE(((b) >> 2) & 3) + LANE(((b) >> 4) & 3) + LANE(((b) >> 6) & 3))
#define ROW4(b) ENTRY(b), ENTRY((b) + 1), ENTRY((b) + 2), ENTRY((b) + 3)
#define ROW16(b) ROW4(b), ROW4((b) + 4), ROW4((b) + 8), ROW4((b) + 12)
#define ROW64(b) ROW16(b), ROW16((b) + 16), ROW16((b) + 32), ROW16((b) + 48)
static const uint64_t count_table[256] = {ROW64(0), ROW64(64), ROW64(128), ROW64(192)};

static void unpack_counts(uint64_t acc, int64_t by_code[4]) {
  for (int c = 0; c < 4; c++) by_code[c] += (int64_t)((acc >> (16 * c)) & 0xffffu);
}

void fm_codec_bed2_col_counts(const uint8_t *data, int64_t n_samples, int64_t col_stride,
                              const int64_t *cols, int64_t n_cols, int64_t *counts_out) {
  const int64_t n_full = n_samples > 0 ? n_samples / 4 : 0;
  const int rem = n_samples > 0 ? (int)(n_samples % 4) : 0;
  /* each byte adds at most 4 per lane: flush before 65535 / 4 bytes */
  const int64_t chunk = 16000;
  for (int64_t j = 0; j < n_cols; j++) {
    const int64_t s = cols ? cols[j] : j;
    const uint8_t *col = data + s * col_stride;
    int64_t by_code[4] = {0, 0, 0, 0};
    for (int64_t q0 = 0; q0 < n_full; q0 += chunk) {
      int64_t q1 = q0 + chunk < n_full ? q0 + chunk : n_full;
      uint64_t acc = 0;
      for (int64_t q = q0; q < q1; q++) acc += count_table[col[q]];
      unpack_counts(acc, by_code);
    }
    if (rem) {
      unsigned b = col[n_full];
      for (int t = 0; t < rem; t++) by_code[(b >> (2 * t)) & 3u]++;
    }
    int64_t *o = counts_out + 4 * j;
    o[0] = by_code[3]; /* hom A2: 0 copies */
    o[1] = by_code[2]; /* het */
    o[2] = by_code[0]; /* hom A1: 2 copies */
    o[3] = by_code[1]; /* missing */
  }
}

fm_status fm_codec_bed2_check_file(const uint8_t *bytes, uint64_t n_bytes, int64_t n_samples,
                                   int64_t n_variants, const char *what, fm_err *err) {
  const char *name = what ? what : ".bed image";
  if (n_samples < 0 || n_variants < 0)
    return fm_err_set(err, FM_EARG, "'%s': n_samples (%lld) and n_variants (%lld) must be >= 0",
                      name, (long long)n_samples, (long long)n_variants);
  const int64_t cb = fm_codec_bed2_col_bytes(n_samples);
  int64_t body = 0;
  if (!fm_mul_ok(n_variants, cb, &body) || body > INT64_MAX - FM_BED2_MAGIC_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s': %lld samples x %lld variants overflow a 64-bit byte count", name,
                      (long long)n_samples, (long long)n_variants);
  const int64_t need = FM_BED2_MAGIC_BYTES + body;
  if (n_bytes >= FM_BED2_MAGIC_BYTES) {
    if (!bytes) return fm_err_set(err, FM_EARG, "'%s': bytes must not be NULL", name);
    if (bytes[0] != 0x6c || bytes[1] != 0x1b)
      return fm_err_set(err, FM_EFORMAT,
                        "'%s' does not start with the .bed magic 0x6c 0x1b (found 0x%02x 0x%02x at "
                        "byte offset 0)",
                        name, (unsigned)bytes[0], (unsigned)bytes[1]);
    if (bytes[2] == 0x00)
      return fm_err_set(err, FM_EFORMAT,
                        "'%s' is sample-major (mode byte 0x00 at byte offset 2); only "
                        "variant-major .bed files are supported",
                        name);
    if (bytes[2] != 0x01)
      return fm_err_set(err, FM_EFORMAT,
                        "'%s' has mode byte 0x%02x at byte offset 2; expected 0x01 (variant-major)", name,
                        (unsigned)bytes[2]);
  }
  if (n_bytes != (uint64_t)need) {
    /* Name where the file and the expected layout part: a truncated file
     * ends inside (or right before) its first incomplete variant. */
    char where[96];
    if (n_bytes > (uint64_t)need)
      snprintf(where, sizeof where, "the bytes from offset %lld on belong to no variant",
               (long long)need);
    else if (n_bytes < FM_BED2_MAGIC_BYTES || cb == 0)
      snprintf(where, sizeof where, "the file ends at byte offset %llu, in the 3-byte header",
               (unsigned long long)n_bytes);
    else
      snprintf(where, sizeof where, "the file ends at byte offset %llu, in variant %lld (1-based)",
               (unsigned long long)n_bytes,
               (long long)((n_bytes - FM_BED2_MAGIC_BYTES) / (uint64_t)cb) + 1);
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' has %llu bytes but %lld samples x %lld variants need 3 + %lld * %lld "
                      "= %lld bytes: %s",
                      name, (unsigned long long)n_bytes, (long long)n_samples,
                      (long long)n_variants, (long long)n_variants, (long long)cb,
                      (long long)need, where);
  }
  return FM_OK;
}
