/* codec_bed2.c: PLINK 1 two-bit hardcalls (docs/formats/bed.md).
 *
 * Decoding goes through a per-column table from the 2-bit code to the final
 * double (the affine transform is folded into the table), one byte = four
 * samples at a time. Counting pops the bit planes of 64-bit words (32
 * samples each), with an AVX2 kernel chosen at run time. */
#include "fm/fm_codec_bed2.h"
#include "fm/fm_cpu.h"

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

/* Counting, bit-sliced: a 64-bit word holds 32 samples; its low plane
 * (bit 2i) and high plane (bit 2i+1) give, by population count, the number of
 * codes with the low bit set (01, 11), with the high bit set (10, 11) and
 * with both (11); the count of 00 is what is left of n. The padding of a
 * column's last word is masked to 0, so it is never counted. Two kernels: an
 * AVX2 one (a 4-bit table lookup per nibble, Mula, Kurz and Lemire 2018,
 * "Faster population counts using AVX2 instructions", Comput. J. 61(1)),
 * chosen when fm_cpu_isa() (fm_cpu.h) is FM_ISA_AVX2 or above, and a
 * portable one summing the planes in 2-, 4- and 8-bit fields
 * (Knuth, TAOCP 4A, 7.1.3 "sideways addition"). */
#define PLANE_LO UINT64_C(0x5555555555555555)
#define FIELDS2 UINT64_C(0x3333333333333333)
#define FIELDS4 UINT64_C(0x0f0f0f0f0f0f0f0f)
#define FIELDS8 UINT64_C(0x00ff00ff00ff00ff)

/* Plane counts of one column: codes with the low bit set, the high bit set,
 * both bits set. */
typedef struct {
  int64_t lo, hi, both;
} plane_counts;

static uint64_t load_word(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8); /* byte order does not matter: every sample is counted */
  return x;
}

/* 2-bit fields (each <= 3) summed pairwise into 8-bit fields (each <= 12). */
static uint64_t fold_to_bytes(uint64_t a) {
  a = (a & FIELDS2) + ((a >> 2) & FIELDS2);
  return (a + (a >> 4)) & FIELDS4;
}

/* Sum of the 8 byte fields (each <= 255) of a. */
static int64_t sum_bytes(uint64_t a) {
  a = (a & FIELDS8) + ((a >> 8) & FIELDS8);
  return (int64_t)((a * UINT64_C(0x0001000100010001)) >> 48);
}

/* Add the planes of n_words whole words at p. Groups of 3 words keep each
 * 2-bit field <= 3; 21 groups keep each byte field <= 252. */
static void count_words(const uint8_t *p, int64_t n_words, plane_counts *c) {
  int64_t q = 0;
  while (q < n_words) {
    const int64_t end = n_words - q > 63 ? q + 63 : n_words;
    uint64_t acc_lo = 0, acc_hi = 0, acc_both = 0;
    while (q < end) {
      uint64_t s_lo = 0, s_hi = 0, s_both = 0;
      const int64_t group = end - q < 3 ? end - q : 3;
      for (int64_t k = 0; k < group; k++) {
        const uint64_t x = load_word(p + 8 * (q + k)), l = x & PLANE_LO, h = (x >> 1) & PLANE_LO;
        s_lo += l;
        s_hi += h;
        s_both += l & h;
      }
      acc_lo += fold_to_bytes(s_lo);
      acc_hi += fold_to_bytes(s_hi);
      acc_both += fold_to_bytes(s_both);
      q += group;
    }
    c->lo += sum_bytes(acc_lo);
    c->hi += sum_bytes(acc_hi);
    c->both += sum_bytes(acc_both);
  }
}

/* Add the planes of the last n_samples (< 32) samples at p, in
 * ceil(n_samples / 4) bytes; the bits past 2 n_samples are dropped. */
static void count_tail(const uint8_t *p, int64_t n_samples, plane_counts *c) {
  uint64_t x = 0;
  const int64_t n_bytes = (n_samples + 3) / 4;
  for (int64_t b = 0; b < n_bytes; b++) x |= (uint64_t)p[b] << (8 * b);
  x &= (UINT64_C(1) << (2 * n_samples)) - 1;
  const uint64_t l = x & PLANE_LO, h = (x >> 1) & PLANE_LO;
  c->lo += sum_bytes(fold_to_bytes(l));
  c->hi += sum_bytes(fold_to_bytes(h));
  c->both += sum_bytes(fold_to_bytes(l & h));
}

#if defined(__x86_64__) && defined(__GNUC__)
#define BED2_HAVE_AVX2_KERNEL 1
#include <immintrin.h>

/* Per-byte population counts of v: a table lookup per nibble. */
__attribute__((target("avx2"))) static __m256i popcount_bytes(__m256i v) {
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nibble));
  const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
  return _mm256_add_epi8(lo, hi);
}

__attribute__((target("avx2"))) static int64_t sum_lanes(__m256i v) {
  int64_t lane[4];
  memcpy(lane, &v, sizeof lane);
  return lane[0] + lane[1] + lane[2] + lane[3];
}

/* count_words, 32 bytes per step; each plane adds at most 4 per byte and
 * step, so byte counters are widened (sum of absolute differences) every 63
 * steps. The words after the last whole 32 bytes go to count_words. */
__attribute__((target("avx2"))) static void count_words_avx2(const uint8_t *p, int64_t n_words,
                                                            plane_counts *c) {
  const __m256i plane = _mm256_set1_epi8(0x55), zero = _mm256_setzero_si256();
  const int64_t n_vec = n_words / 4;
  __m256i tot_lo = zero, tot_hi = zero, tot_both = zero;
  int64_t v = 0;
  while (v < n_vec) {
    const int64_t end = n_vec - v > 63 ? v + 63 : n_vec;
    __m256i acc_lo = zero, acc_hi = zero, acc_both = zero;
    for (; v < end; v++) {
      const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * v));
      const __m256i l = _mm256_and_si256(x, plane);
      const __m256i h = _mm256_and_si256(_mm256_srli_epi16(x, 1), plane);
      acc_lo = _mm256_add_epi8(acc_lo, popcount_bytes(l));
      acc_hi = _mm256_add_epi8(acc_hi, popcount_bytes(h));
      acc_both = _mm256_add_epi8(acc_both, popcount_bytes(_mm256_and_si256(l, h)));
    }
    tot_lo = _mm256_add_epi64(tot_lo, _mm256_sad_epu8(acc_lo, zero));
    tot_hi = _mm256_add_epi64(tot_hi, _mm256_sad_epu8(acc_hi, zero));
    tot_both = _mm256_add_epi64(tot_both, _mm256_sad_epu8(acc_both, zero));
  }
  c->lo += sum_lanes(tot_lo);
  c->hi += sum_lanes(tot_hi);
  c->both += sum_lanes(tot_both);
  /* Clean upper halves before non-VEX code runs: GCC omits the vzeroupper
   * on this tail call, and SSE code after it then runs several times slower. */
  _mm256_zeroupper();
  count_words(p + 32 * n_vec, n_words - 4 * n_vec, c);
}
#else
#define BED2_HAVE_AVX2_KERNEL 0
#endif

void fm_codec_bed2_col_counts(const uint8_t *data, int64_t n_samples, int64_t col_stride,
                              const int64_t *cols, int64_t n_cols, int64_t *counts_out) {
  const int64_t n = n_samples > 0 ? n_samples : 0;
  const int64_t n_words = n / 32, n_rest = n % 32;
#if BED2_HAVE_AVX2_KERNEL
  void (*count)(const uint8_t *, int64_t, plane_counts *) =
      fm_cpu_isa() >= FM_ISA_AVX2 ? count_words_avx2 : count_words;
#else
  void (*count)(const uint8_t *, int64_t, plane_counts *) = count_words;
#endif
  for (int64_t j = 0; j < n_cols; j++) {
    const int64_t s = cols ? cols[j] : j;
    const uint8_t *col = data + s * col_stride;
    plane_counts c = {0, 0, 0};
    count(col, n_words, &c);
    if (n_rest) count_tail(col + 8 * n_words, n_rest, &c);
    int64_t *o = counts_out + 4 * j;
    o[0] = c.both;                   /* 0b11, hom A2: 0 copies */
    o[1] = c.hi - c.both;            /* 0b10, het */
    o[2] = n - c.lo - c.hi + c.both; /* 0b00, hom A1: 2 copies */
    o[3] = c.lo - c.both;            /* 0b01, missing */
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
