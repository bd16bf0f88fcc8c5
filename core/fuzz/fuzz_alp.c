/* fuzz_alp.c: libFuzzer target for the ALP codec (fm_codec_alp.h): the blob
 * checker on arbitrary bytes, decoding and fused products of whatever it
 * accepts, and encode -> check -> decode round trips of arbitrary doubles.
 *
 * Blobs are copied into a heap buffer of exactly their length, so a read
 * past them is an AddressSanitizer report. Invariants (a failure aborts):
 *   - a blob that fm_codec_alp_check accepts makes an fm_mat, its info
 *     matches its header, and it decodes; any row window of a column
 *     decodes to the same bits as the whole column; the affine transform
 *     equals the element-wise transform of the decoded values; the fused
 *     backend (fm_backend_alp) and the reference path agree within
 *     2 m u sum |x b| (m the inner dimension, u = 2^-53: both sum the same
 *     products in other orders) wherever the decoded values are finite and
 *     below 1e150;
 *   - encoding any doubles gives a blob that the checker accepts and that
 *     decodes to the input bit for bit, also by windows.
 *
 * Input encoding (integers little-endian):
 *   byte 0       operation, mod 2
 *   0  check a blob
 *      byte 1    row shift: windows start at row (byte % (n_rows + 1))
 *      bytes 2.. the blob
 *   1  round trip
 *      byte 1    n_cols - 1, mod 4
 *      byte 2    vector size: 0 -> the default, else 64 * (1 + byte % 16)
 *      byte 3    values: mod 3: 0 raw 64-bit patterns; 1 decimals, each 4
 *                bytes an int32 i giving i / 10^(byte / 3 % 7); 2 the
 *                decimals with every 5th value's pattern taken raw
 *      bytes 4.. the values, column-major; n_rows = what the bytes give
 *
 * Seeds (core/fuzz/corpus/fuzz_alp/): valid blobs (decimals with specials
 * and a raw vector in 64-row vectors; an empty matrix) and round trips of
 * decimals and of specials. */
#include "fm/fm_backend.h"
#include "fm/fm_backend_alp.h"
#include "fm/fm_codec_alp.h"
#include "fm/fm_panel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

#define MAX_CELLS (INT64_C(1) << 20) /* work bound for whole-matrix decodes */

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static uint8_t *copy_bytes(const uint8_t *p, size_t n) {
  uint8_t *b = malloc(n ? n : 1);
  if (b && n) memcpy(b, p, n);
  return b;
}

/* Decode all of m, then windows [r0, n) of each column against it. */
static double *decode_all(const fm_mat *m, int64_t shift) {
  const int64_t n = m->n_rows, p = m->n_cols;
  double *all = malloc(sizeof(double) * (size_t)(n * p + 1));
  FUZZ_ASSERT(all);
  fm_err err;
  FUZZ_ASSERT(fm_panel_decode(m, NULL, 0, n, 0, p, all, n > 0 ? n : 1, &err) == FM_OK);
  const int64_t r0 = shift % (n + 1), nr = n - r0;
  double *win = malloc(sizeof(double) * (size_t)(nr + 1));
  FUZZ_ASSERT(win);
  for (int64_t j = 0; j < p; j++) {
    FUZZ_ASSERT(fm_panel_decode(m, NULL, r0, nr, j, 1, win, nr > 0 ? nr : 1, &err) == FM_OK);
    for (int64_t i = 0; i < nr; i++) FUZZ_ASSERT(same(win[i], all[r0 + i + j * n]));
  }
  free(win);
  return all;
}

static void check_affine(const fm_mat *m, const double *all) {
  const int64_t n = m->n_rows, p = m->n_cols;
  double *c = malloc(sizeof(double) * (size_t)(3 * p + 1)), *s = c + p, *f = c + 2 * p;
  double *out = malloc(sizeof(double) * (size_t)(n * p + 1));
  FUZZ_ASSERT(c && out);
  for (int64_t j = 0; j < p; j++) {
    c[j] = (double)j / 3.0;
    s[j] = 2.0 - (double)j / 8.0;
    f[j] = -(double)(j + 1);
  }
  const fm_affine aff = {.center = c, .scale = s, .fill = f};
  fm_err err;
  FUZZ_ASSERT(fm_panel_decode(m, &aff, 0, n, 0, p, out, n > 0 ? n : 1, &err) == FM_OK);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) {
      const double v = all[i + j * n];
      FUZZ_ASSERT(same(out[i + j * n], isnan(v) ? f[j] : (v - c[j]) * s[j]));
    }
  free(out);
  free(c);
}

/* The fused backend against the reference path, b all ones. */
static void check_products(const fm_mat *m, const double *all) {
  const int64_t n = m->n_rows, p = m->n_cols;
  if (n == 0 || p == 0) return;
  for (int64_t i = 0; i < n * p; i++)
    if (!(fabs(all[i]) < 1e150)) return; /* overflow and NaN order effects */
  for (int op = FM_OP_XB; op <= FM_OP_XTB; op++) {
    const int64_t b_rows = op == FM_OP_XB ? p : n, y_rows = op == FM_OP_XB ? n : p;
    double *b = malloc(sizeof(double) * (size_t)b_rows);
    double *y1 = malloc(sizeof(double) * (size_t)y_rows), *y2 = malloc(sizeof(double) * (size_t)y_rows);
    FUZZ_ASSERT(b && y1 && y2);
    for (int64_t i = 0; i < b_rows; i++) b[i] = 1.0;
    fm_product p1 = {(fm_op)op, m, NULL, b, b_rows, 1, y1, y_rows};
    fm_product p2 = {(fm_op)op, m, NULL, b, b_rows, 1, y2, y_rows};
    fm_err err;
    FUZZ_ASSERT(fm_backend_alp(NULL, &p1, NULL, &err) == FM_OK);
    FUZZ_ASSERT(fm_backend_reference(&p2, NULL, &err) == FM_OK);
    for (int64_t r = 0; r < y_rows; r++) {
      double mag = 0.0;
      const int64_t inner = op == FM_OP_XB ? p : n;
      for (int64_t l = 0; l < inner; l++)
        mag += fabs(op == FM_OP_XB ? all[r + l * n] : all[l + r * n]);
      const double tol = (2.0 * (double)inner * 1.12e-16 + 1e-15) * mag;
      FUZZ_ASSERT(fabs(y1[r] - y2[r]) <= tol);
    }
    free(b);
    free(y1);
    free(y2);
  }
}

static void op_check(const uint8_t *d, size_t size) {
  if (size < 2) return;
  const int64_t shift = d[1];
  const size_t len = size - 2;
  uint8_t *blob = copy_bytes(d + 2, len);
  FUZZ_ASSERT(blob);
  fm_err err;
  const fm_status st = fm_codec_alp_check(blob, len, &err);
  FUZZ_ASSERT(st == FM_OK || st == FM_EFORMAT);
  if (st == FM_OK) {
    fm_mat m;
    fm_alp_info info;
    FUZZ_ASSERT(fm_mat_init_alp(&m, blob, len, &err) == FM_OK);
    FUZZ_ASSERT(fm_codec_alp_info(blob, len, &info, &err) == FM_OK);
    FUZZ_ASSERT(info.n_rows == m.n_rows && info.n_cols == m.n_cols && info.n_bytes <= (int64_t)len);
    if (m.n_rows <= MAX_CELLS && m.n_cols <= MAX_CELLS && m.n_rows * m.n_cols <= MAX_CELLS) {
      double *all = decode_all(&m, shift);
      check_affine(&m, all);
      check_products(&m, all);
      free(all);
    }
  } else {
    FUZZ_ASSERT(strncmp(err.msg, "alp blob: byte ", 15) == 0);
  }
  free(blob);
}

static void op_roundtrip(const uint8_t *d, size_t size) {
  if (size < 4) return;
  const int64_t p = 1 + d[1] % 4;
  const int32_t vs = d[2] == 0 ? 0 : 64 * (1 + d[2] % 16);
  const int style = d[3] % 3, places = d[3] / 3 % 7;
  const uint8_t *v = d + 4;
  const size_t bytes = size - 4, per = style == 0 ? 8 : 4;
  const int64_t n = (int64_t)(bytes / per) / p;
  double *x = malloc(sizeof(double) * (size_t)(n * p + 1));
  FUZZ_ASSERT(x);
  for (int64_t i = 0; i < n * p; i++) {
    if (style == 0 || (style == 2 && i % 5 == 0 && (size_t)(i + 1) * 8 <= bytes)) {
      memcpy(&x[i], v + 8 * i, 8);
    } else {
      int32_t k;
      memcpy(&k, v + 4 * i, 4);
      x[i] = (double)k / pow(10.0, places);
    }
  }
  uint8_t *blob = NULL;
  size_t len = 0;
  fm_err err;
  FUZZ_ASSERT(fm_codec_alp_encode(x, n, p, n > 0 ? n : 1, vs, NULL, &blob, &len, &err) == FM_OK);
  /* An exact-size copy, so the decoder's reads are bounded by ASan. */
  uint8_t *exact = copy_bytes(blob, len);
  free(blob);
  FUZZ_ASSERT(exact);
  FUZZ_ASSERT(fm_codec_alp_check(exact, len, &err) == FM_OK);
  fm_mat m;
  FUZZ_ASSERT(fm_mat_init_alp(&m, exact, len, &err) == FM_OK);
  double *all = decode_all(&m, d[3]);
  for (int64_t i = 0; i < n * p; i++) FUZZ_ASSERT(same(all[i], x[i]));
  free(all);
  free(exact);
  free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] % 2 == 0) op_check(data, size);
  else op_roundtrip(data, size);
  return 0;
}
