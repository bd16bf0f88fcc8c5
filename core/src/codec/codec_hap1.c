/* codec_hap1.c: phased haplotypes, one bit per haplotype, locus-major rows
 * padded to 64 bytes (docs/formats/hap1.md). */
#include "fm/fm_codec_hap1.h"

#include <string.h>

int64_t fm_codec_hap1_row_bytes(int64_t n_haps) {
  return n_haps <= 0 ? 0 : (n_haps / 512 + (n_haps % 512 != 0)) * 64;
}

fm_status fm_codec_hap1_encode(const int32_t *h, int64_t n_haps, int64_t n_loci, int64_t ld,
                               uint8_t *out, fm_err *err) {
  if (n_haps < 0 || n_loci < 0)
    return fm_err_set(err, FM_EARG, "hap1 encode: n_haps (%lld) and n_loci (%lld) must be >= 0",
                      (long long)n_haps, (long long)n_loci);
  if (n_haps == 0 || n_loci == 0) return FM_OK;
  if (ld < n_haps)
    return fm_err_set(err, FM_EARG, "hap1 encode: ld (%lld) is less than n_haps (%lld)",
                      (long long)ld, (long long)n_haps);
  if (!h || !out) return fm_err_set(err, FM_EARG, "hap1 encode: h and out must not be NULL");
  const int64_t rb = fm_codec_hap1_row_bytes(n_haps);
  for (int64_t l = 0; l < n_loci; l++) {
    const int32_t *hl = h + l * ld;
    for (int64_t i = 0; i < n_haps; i++) {
      if (hl[i] != 0 && hl[i] != 1) {
        if (hl[i] == INT32_MIN)
          return fm_err_set(err, FM_EARG,
                            "h[%lld, %lld] is NA; phased haplotypes must be 0 or 1",
                            (long long)(i + 1), (long long)(l + 1));
        return fm_err_set(err, FM_EARG, "h[%lld, %lld] = %ld is not an allele (0 or 1)",
                          (long long)(i + 1), (long long)(l + 1), (long)hl[i]);
      }
    }
    uint8_t *row = out + l * rb;
    memset(row, 0, (size_t)rb);
    /* Build words in registers, then store them little-endian-independently
     * through memcpy of the native uint64 (the format is defined on words). */
    for (int64_t w0 = 0; w0 < n_haps; w0 += 64) {
      uint64_t w = 0;
      int64_t end = w0 + 64 < n_haps ? w0 + 64 : n_haps;
      for (int64_t i = w0; i < end; i++) w |= (uint64_t)(uint32_t)hl[i] << (i - w0);
      memcpy(row + (w0 / 64) * 8, &w, sizeof w);
    }
  }
  return FM_OK;
}

static uint64_t load_word(const uint8_t *row, int64_t w) {
  uint64_t v;
  memcpy(&v, row + w * 8, sizeof v);
  return v;
}

int fm_codec_hap1_get(const uint8_t *data, int64_t n_haps, int64_t locus, int64_t h) {
  const uint8_t *row = data + locus * fm_codec_hap1_row_bytes(n_haps);
  return (int)((load_word(row, h / 64) >> (h % 64)) & 1u);
}

void fm_codec_hap1_decode_rows(const uint8_t *data, int64_t n_haps, int64_t l0, int64_t n_loci,
                               int32_t *out, int64_t ld) {
  const int64_t rb = fm_codec_hap1_row_bytes(n_haps);
  for (int64_t l = 0; l < n_loci; l++) {
    const uint8_t *row = data + (l0 + l) * rb;
    int32_t *ol = out + l * ld;
    for (int64_t w0 = 0; w0 < n_haps; w0 += 64) {
      uint64_t w = load_word(row, w0 / 64);
      int64_t end = w0 + 64 < n_haps ? w0 + 64 : n_haps;
      for (int64_t i = w0; i < end; i++) ol[i] = (int32_t)((w >> (i - w0)) & 1u);
    }
  }
}
