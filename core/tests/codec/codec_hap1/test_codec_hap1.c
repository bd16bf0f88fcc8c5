/* Tests for fm_codec_hap1.h. Oracle: the documented bit position (haplotype
 * h is bit h % 64 of 64-bit word h / 64) checked byte by byte on a
 * little-endian reading of the words. Data generated. */
#include "fm/fm_codec_hap1.h"

#include "fm_test.h"

#include <stdint.h>
#include <string.h>

static uint64_t rng_state = 777;
static uint64_t rng_next(void) { return fm_test_rng_next(&rng_state); }

static void test_row_bytes(void) {
  CHECK(fm_codec_hap1_row_bytes(0) == 0);
  CHECK(fm_codec_hap1_row_bytes(1) == 64);
  CHECK(fm_codec_hap1_row_bytes(512) == 64);
  CHECK(fm_codec_hap1_row_bytes(513) == 128);
  CHECK(fm_codec_hap1_row_bytes(5008) == 640);
}

static void test_round_trip(void) {
  fm_err err;
  const int64_t hs[] = {1, 2, 63, 64, 65, 100, 511, 512, 513, 1000, 1500};
  for (int t = 0; t < 11; t++) {
    const int64_t nh = hs[t], nl = 7, ld = nh + 2, rb = fm_codec_hap1_row_bytes(nh);
    int32_t *h = malloc(sizeof(int32_t) * (size_t)(ld * nl));
    for (int64_t i = 0; i < ld * nl; i++) h[i] = (int32_t)(rng_next() & 1u);
    for (int64_t i = 0; i < nh; i++) h[i + 2 * ld] = 1; /* an all-ALT locus */
    uint8_t *out = aligned_alloc(64, (size_t)(rb * nl));
    memset(out, 0xee, (size_t)(rb * nl)); /* encode must overwrite padding */
    CHECK_OK(fm_codec_hap1_encode(h, nh, nl, ld, out, &err), &err);
    int bad = 0;
    for (int64_t l = 0; l < nl; l++) {
      const uint64_t *row = fm_codec_hap1_row(out, nh, l);
      CHECK(((uintptr_t)row % 64) == 0);
      for (int64_t i = 0; i < nh; i++) {
        int want = h[i + l * ld];
        bad += fm_codec_hap1_get(out, nh, l, i) != want;
        bad += (int)((row[i / 64] >> (i % 64)) & 1u) != want;
      }
      /* padding bits and bytes are 0 */
      for (int64_t i = nh; i < rb * 8; i++) bad += (int)((row[i / 64] >> (i % 64)) & 1u) != 0;
    }
    CHECK(bad == 0);
    int32_t *dec = malloc(sizeof(int32_t) * (size_t)((nh + 1) * nl));
    for (int64_t i = 0; i < (nh + 1) * nl; i++) dec[i] = -7;
    fm_codec_hap1_decode_rows(out, nh, 2, 4, dec, nh + 1);
    bad = 0;
    for (int64_t l = 0; l < 4; l++) {
      for (int64_t i = 0; i < nh; i++) bad += dec[i + l * (nh + 1)] != h[i + (l + 2) * ld];
      bad += dec[nh + l * (nh + 1)] != -7; /* ld gap untouched */
    }
    CHECK(bad == 0);
    free(h);
    free(out);
    free(dec);
  }
}

/* Bit order on disk: haplotype 0 is the least significant bit of byte 0 on
 * a little-endian host (docs/formats/hap1.md). */
static void test_layout(void) {
  fm_err err;
  int32_t h[70] = {0};
  h[0] = 1;
  h[9] = 1;
  h[64] = 1;
  h[69] = 1;
  uint8_t *out = aligned_alloc(64, 64);
  CHECK_OK(fm_codec_hap1_encode(h, 70, 1, 70, out, &err), &err);
  const uint64_t *w = fm_codec_hap1_row(out, 70, 0);
  CHECK(w[0] == ((uint64_t)1 | ((uint64_t)1 << 9)));
  CHECK(w[1] == ((uint64_t)1 | ((uint64_t)1 << 5)));
  const uint16_t probe = 1;
  if (*(const uint8_t *)&probe == 1) {
    CHECK(out[0] == 0x01 && out[1] == 0x02 && out[8] == 0x21);
  }
  free(out);
}

static void test_rejects(void) {
  fm_err err;
  int32_t h[6] = {0, 1, 1, 0, 2, 1};
  uint8_t *out = aligned_alloc(64, 128);
  CHECK(fm_codec_hap1_encode(h, 3, 2, 3, out, &err) == FM_EARG);
  CHECK(strstr(err.msg, "h[2, 2] = 2") != NULL);
  h[4] = INT32_MIN;
  CHECK(fm_codec_hap1_encode(h, 3, 2, 3, out, &err) == FM_EARG);
  CHECK(strstr(err.msg, "h[2, 2] is NA") != NULL);
  h[4] = 0;
  CHECK_OK(fm_codec_hap1_encode(h, 3, 2, 3, out, &err), &err);
  CHECK(fm_codec_hap1_encode(h, 3, 2, 2, out, &err) == FM_EARG);
  CHECK_OK(fm_codec_hap1_encode(NULL, 0, 5, 0, NULL, &err), &err);
  free(out);
}

int main(void) {
  FM_RUN(test_row_bytes);
  FM_RUN(test_round_trip);
  FM_RUN(test_layout);
  FM_RUN(test_rejects);
  FM_TEST_END();
}
