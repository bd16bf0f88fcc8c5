/* fuzz_bed_check.c: libFuzzer target for the .bed reader (fm_codec_bed2.h:
 * fm_codec_bed2_check_file) and, on images it accepts, the BED2 decoders
 * (fm_panel_decode over fm_mat_init, fm_codec_bed2_col_counts).
 *
 * The image is read in place from the fuzzer's buffer, which ends exactly at
 * the image's end, so any read past it is an AddressSanitizer report.
 * Decoded values and counts are compared with a reference decoder (bit
 * arithmetic on the documented code table; missing is fm_na_value() without
 * a fill), bit for bit; a mismatch aborts.
 *
 * Input encoding (integers little-endian):
 *   byte 0       flags
 *     bit 0 D    derive n_variants from the image: (image bytes - 3) /
 *                ceil(n_samples / 4), 0 when either is not positive
 *                (otherwise n_variants is bytes 3-4)
 *     bit 1      n_samples := -1 - n_samples (negative: must be FM_EARG)
 *     bit 2      n_variants := -1 - n_variants
 *     bit 3 X    both counts times 2^31 (overflow paths of the size check)
 *     bit 4 A    decode through an affine transform (center j/4, scale
 *                1 + j/8, fill -(j+1)) instead of the identity
 *     bit 5 I    decode through a col_index that reverses the columns
 *   bytes 1-2    n_samples (u16)
 *   bytes 3-4    n_variants (u16)
 *   byte 5       panel budget: 8 * (1 + byte) bytes, so panels of at most
 *                256 doubles and many panel edges
 *   byte 6       row shift s: each column is also decoded as the one panel
 *                of rows [s % (n_samples + 1), n_samples), so panels start
 *                at every position within a byte
 *   bytes 7..    the .bed image (magic 0x6c 0x1b, mode 0x01, columns)
 *
 * Seeds (core/fuzz/corpus/fuzz_bed_check/): valid images with n_samples
 * 1, 4, 5 and 13 (padding bits set), a sample-major and a bad-magic image,
 * an overflow case and an empty matrix. */
#include "fm/fm_codec_bed2.h"
#include "fm/fm_panel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"


#define HDR 7u
/* Work bound: the image is at most max_len bytes, so decoded cells are
 * bounded by 4 * max_len; this only guards columns of zero bytes. */
#define MAX_COLS (INT64_C(1) << 20)

/* Bit for bit: missing values decode to exactly fm_na_value() (R's NA). */
static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Reference: the documented code table, then the affine transform. */
static double ref_value(const uint8_t *col, int64_t i, double c, double s, double f) {
  unsigned code = (col[i / 4] >> (2 * (i % 4))) & 3u;
  static const double v[4] = {2.0, 0.0, 1.0, 0.0};
  return code == 1u ? f : (v[code] - c) * s;
}

typedef struct aff_buf {
  double *c, *s, *f;
  fm_affine a;
} aff_buf;

static void check_panel(const fm_mat *x, const fm_affine *aff, const int64_t *col_index,
                        int64_t r0, int64_t nr, int64_t c0, int64_t nc, double *buf) {
  fm_err err;
  const int64_t ld = nr + 1; /* a spare row that decode must not write */
  for (int64_t k = 0; k < ld * nc; k++) buf[k] = -12345.0;
  FUZZ_ASSERT(fm_panel_decode(x, aff, r0, nr, c0, nc, buf, ld, &err) == FM_OK);
  const int64_t cb = x->col_stride;
  const uint8_t *data = x->data;
  for (int64_t jj = 0; jj < nc; jj++) {
    int64_t j = c0 + jj, s = col_index ? col_index[j] : j;
    double cj = aff && aff->center ? aff->center[j] : 0.0;
    double sj = aff && aff->scale ? aff->scale[j] : 1.0;
    double fj = aff && aff->fill ? aff->fill[j] : fm_na_value();
    for (int64_t i = 0; i < nr; i++)
      FUZZ_ASSERT(same(buf[jj * ld + i], ref_value(data + s * cb, r0 + i, cj, sj, fj)));
    FUZZ_ASSERT(buf[jj * ld + nr] == -12345.0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < HDR) return 0;
  const unsigned flags = data[0];
  int64_t n = (int64_t)(data[1] | data[2] << 8);
  int64_t m = (int64_t)(data[3] | data[4] << 8);
  const size_t budget = 8 * ((size_t)data[5] + 1);
  const unsigned shift = data[6];
  const uint8_t *img = data + HDR;
  const uint64_t n_img = size - HDR;
  const int64_t cb0 = fm_codec_bed2_col_bytes(n);
  if (flags & 1u) m = (n_img >= 3 && cb0 > 0) ? (int64_t)(n_img - 3) / cb0 : 0;
  if (flags & 2u) n = -1 - n;
  if (flags & 4u) m = -1 - m;
  if (flags & 8u) {
    n *= INT64_C(1) << 31;
    m *= INT64_C(1) << 31;
  }

  fm_err err;
  fm_err_clear(&err);
  fm_status st = fm_codec_bed2_check_file(n_img ? img : NULL, n_img, n, m, "fuzz.bed", &err);
  FUZZ_ASSERT(st == FM_OK || st == FM_EARG || st == FM_EFORMAT);
  if (st != FM_OK) {
    FUZZ_ASSERT(err.code == st && strlen(err.msg) > 0);
    FUZZ_ASSERT(st != FM_EARG || n < 0 || m < 0 || (n_img >= 3 && !img));
    return 0;
  }
  /* Accepted: the image is exactly 3 + m * ceil(n / 4) bytes. */
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  FUZZ_ASSERT(n >= 0 && m >= 0 && n_img >= 3 && img[0] == 0x6c && img[1] == 0x1b && img[2] == 1);
  FUZZ_ASSERT(n_img - 3 == (uint64_t)m * (uint64_t)cb);
  if (m > MAX_COLS || n == 0 || m == 0) return 0;

  const uint8_t *body = img + 3;
  fm_mat x;
  FUZZ_ASSERT(fm_mat_init(&x, FM_CODEC_BED2, body, n, m, cb, &err) == FM_OK);

  int64_t *col_index = NULL;
  if (flags & 32u) {
    col_index = malloc((size_t)m * sizeof *col_index);
    if (!col_index) return 0;
    for (int64_t j = 0; j < m; j++) col_index[j] = m - 1 - j;
    x.col_index = col_index;
  }
  aff_buf ab = {0};
  const fm_affine *aff = NULL;
  if (flags & 16u) {
    ab.c = malloc((size_t)m * sizeof(double));
    ab.s = malloc((size_t)m * sizeof(double));
    ab.f = malloc((size_t)m * sizeof(double));
    if (!ab.c || !ab.s || !ab.f) goto done;
    for (int64_t j = 0; j < m; j++) {
      ab.c[j] = (double)j / 4;
      ab.s[j] = 1.0 + (double)j / 8;
      ab.f[j] = -(double)(j + 1);
    }
    ab.a.center = ab.c;
    ab.a.scale = ab.s;
    ab.a.fill = ab.f;
    aff = &ab.a;
  }

  /* Every panel of the plan for a tiny budget, then one shifted panel per column. */
  fm_panel_plan plan = fm_panel_plan_for(&x, budget);
  FUZZ_ASSERT(plan.rows >= 1 && plan.cols >= 1 && plan.rows * plan.cols * 8 <= (int64_t)budget);
  FUZZ_ASSERT(plan.rows >= n || plan.rows < 4 || plan.rows % 4 == 0);
  double *buf = malloc((size_t)((plan.rows + 1) * plan.cols) * sizeof(double));
  double *colbuf = malloc((size_t)(n + 1) * sizeof(double));
  if (buf && colbuf) {
    for (int64_t c0 = 0; c0 < m; c0 += plan.cols) {
      int64_t nc = m - c0 < plan.cols ? m - c0 : plan.cols;
      for (int64_t r0 = 0; r0 < n; r0 += plan.rows) {
        int64_t nr = n - r0 < plan.rows ? n - r0 : plan.rows;
        check_panel(&x, aff, col_index, r0, nr, c0, nc, buf);
      }
    }
    int64_t r0 = (int64_t)shift % (n + 1);
    for (int64_t j = 0; j < m; j++) check_panel(&x, aff, col_index, r0, n - r0, j, 1, colbuf);
    /* Out of range: rejected without writing. */
    FUZZ_ASSERT(fm_panel_decode(&x, aff, r0, n - r0 + 1, 0, 1, colbuf, n + 1, &err) == FM_EARG);
    FUZZ_ASSERT(fm_panel_decode(&x, aff, 0, 1, m, 1, colbuf, n + 1, &err) == FM_EARG);
  }
  free(buf);
  free(colbuf);

  /* Exact counts against the reference, through the same column order. */
  int64_t *counts = malloc((size_t)m * 4 * sizeof *counts);
  if (counts) {
    fm_codec_bed2_col_counts(body, n, cb, col_index, m, counts);
    for (int64_t j = 0; j < m; j++) {
      int64_t s = col_index ? col_index[j] : j, ref[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < n; i++) {
        unsigned code = (body[s * cb + i / 4] >> (2 * (i % 4))) & 3u;
        ref[code == 3u ? 0 : code == 2u ? 1 : code == 0u ? 2 : 3]++;
      }
      FUZZ_ASSERT(memcmp(ref, counts + 4 * j, sizeof ref) == 0);
    }
    free(counts);
  }
done:
  free(ab.c);
  free(ab.s);
  free(ab.f);
  free(col_index);
  return 0;
}
