/* fuzz_codecs.c: libFuzzer target for the matrix view and the decoders of
 * untrusted stored bytes: fm_panel_decode on FM_CODEC_DOS8 (fm_codec_dos8.h,
 * fm_panel.h), fm_codec_hap1_decode_rows (fm_codec_hap1.h), and fm_mat_init /
 * fm_mat_min_stride / fm_panel_plan_for with arbitrary shapes and strides.
 *
 * Stored bytes are copied into a heap buffer of exactly their length, so a
 * read past them is an AddressSanitizer report; output buffers are exactly
 * as large as the documented shape, so a write past it is one too. Decoded
 * values are compared bit for bit with reference decoders written from the
 * format docs (missing without a fill is fm_na_value(), R's NA), and
 * statuses with the documented preconditions; a mismatch aborts.
 *
 * Input encoding (integers little-endian; s16 = signed 16-bit):
 *   byte 0       operation, mod 3:
 *   0  DOS8 panel decode
 *      bytes 1-2 n_rows (u16)  3-4 n_cols (u16)  5-6 extra stride (u16):
 *                col_stride = n_rows + extra. n_cols is cut to the columns
 *                the stored bytes hold.
 *      bytes 7-14 r0, nr, c0, nc (s16 each), the panel; byte 15 ld - nr
 *      byte 16   flags: bit 0 affine (center j/3, scale 2, fill 7), bit 1
 *                col_index j -> (5 j + 3) % n_cols, bit 2 col_index[c0] =
 *                -1 (must be rejected), bit 3 r0, nr, c0, nc times 2^48
 *                (overflow paths of the range checks)
 *      bytes 17.. stored bytes (column-major codes, 255 missing)
 *   1  HAP1 row decode
 *      bytes 1-2 n_haps (u16)  3-4 l0 (u16)  5-6 n_loci (u16)  7 ld - n_haps
 *      bytes 8.. stored rows of fm_codec_hap1_row_bytes(n_haps) bytes; l0
 *                and n_loci are cut to the rows present. The decoded
 *                alleles are also re-encoded and compared bit by bit.
 *   2  fm_mat_init with arbitrary arguments
 *      byte 1    codec id (signed: unknown ids included)
 *      bytes 2-16 n_rows, n_cols, col_stride: each s32 and a shift byte,
 *                value = s32 * 2^(shift % 64) in two's complement
 *      byte 17   bit 0: data NULL; bits 1-3: data misaligned by that many
 *                bytes; bit 4: decode the whole matrix when it fits the
 *                stored bytes
 *      bytes 18-21 panel budget in bytes (u32, 0 = the default)
 *      bytes 22.. stored bytes
 *
 * Seeds (core/fuzz/corpus/fuzz_codecs/): a small and a 64+ row DOS8 panel,
 * an out-of-range panel, HAP1 rows for 3 and 600 haplotypes, and fm_mat_init
 * cases for each codec (valid, misaligned, overflowing, unknown codec). */
#include "fm/fm_codec_dos8.h"
#include "fm/fm_codec_hap1.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_panel.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"


#define SENTINEL -12345.0
#define MAX_CELLS (INT64_C(1) << 22) /* work bound for whole-matrix decodes */

/* Bit for bit: missing values decode to exactly fm_na_value() (R's NA). */
static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }
static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static int16_t s16(const uint8_t *p) { return (int16_t)u16(p); }
static int32_t s32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

/* An exact-size heap copy of the stored bytes (never NULL). */
static uint8_t *copy_bytes(const uint8_t *p, size_t n) {
  uint8_t *b = malloc(n ? n : 1);
  if (b && n) memcpy(b, p, n);
  return b;
}

/* ---- 0: DOS8 panels ------------------------------------------------------ */

static void op_dos8(const uint8_t *d, size_t size) {
  if (size < 17) return;
  int64_t n = u16(d + 1), p = u16(d + 3), stride = n + u16(d + 5);
  int64_t r0 = s16(d + 7), nr = s16(d + 9), c0 = s16(d + 11), nc = s16(d + 13);
  const int64_t ld_extra = d[15];
  const unsigned fl = d[16];
  if (fl & 8u) {
    const int64_t w = INT64_C(1) << 48;
    r0 *= w, nr *= w, c0 *= w, nc *= w;
  }
  const size_t len = size - 17;
  /* Columns the stored bytes hold: (p - 1) * stride + n <= len. */
  if (n > (int64_t)len) p = 0;
  else if (p > 0 && stride > 0 && (p - 1) > ((int64_t)len - n) / stride)
    p = ((int64_t)len - n) / stride + 1;
  uint8_t *buf = copy_bytes(d + 17, len);
  if (!buf) return;
  fm_err err;
  fm_mat x;
  FUZZ_ASSERT(fm_mat_init(&x, FM_CODEC_DOS8, buf, n, p, stride, &err) == FM_OK);

  int64_t *ci = NULL;
  double *c = NULL, *s = NULL, *f = NULL, *out = NULL;
  fm_affine aff = {0};
  int bad_index = 0;
  if ((fl & 2u) && p > 0) {
    if (!(ci = malloc((size_t)p * sizeof *ci))) goto done;
    for (int64_t j = 0; j < p; j++) ci[j] = (5 * j + 3) % p;
    if ((fl & 4u) && c0 >= 0 && c0 < p && nc > 0) {
      ci[c0] = -1;
      bad_index = 1;
    }
    x.col_index = ci;
  }
  if ((fl & 1u) && p > 0) {
    c = malloc((size_t)p * sizeof *c), s = malloc((size_t)p * sizeof *s),
    f = malloc((size_t)p * sizeof *f);
    if (!c || !s || !f) goto done;
    for (int64_t j = 0; j < p; j++) c[j] = (double)j / 3, s[j] = 2.0, f[j] = 7.0;
    aff.center = c, aff.scale = s, aff.fill = f;
  }
  const int64_t ld = nr + ld_extra;
  const int in_range = r0 >= 0 && nr >= 0 && r0 <= n - nr && c0 >= 0 && nc >= 0 && c0 <= p - nc;
  const int ok = in_range && ld >= nr && ld >= 1 && !(bad_index && nr > 0);
  /* The documented output size when the call is valid, else one double. */
  size_t n_out = 1;
  if (ok && nr > 0 && nc > 0) n_out = (size_t)((nc - 1) * ld + nr);
  if (!(out = malloc(n_out * sizeof *out))) goto done;
  for (size_t k = 0; k < n_out; k++) out[k] = SENTINEL;
  fm_status st = fm_panel_decode(&x, (fl & 1u) ? &aff : NULL, r0, nr, c0, nc, out, ld, &err);
  if (!ok) {
    /* A zero-sized panel with a negative col_index is not read: either is fine. */
    FUZZ_ASSERT(st == FM_EARG || (bad_index && in_range && (nr == 0 || nc == 0)));
    if (st == FM_EARG) FUZZ_ASSERT(err.code == FM_EARG && strlen(err.msg) > 0);
    goto done;
  }
  FUZZ_ASSERT(st == FM_OK);
  for (int64_t jj = 0; jj < nc && nr > 0; jj++) {
    int64_t j = c0 + jj, sj = ci ? ci[j] : j;
    for (int64_t i = 0; i < nr; i++) {
      uint8_t q = buf[sj * stride + r0 + i];
      double want;
      if (fl & 1u) want = q == 255 ? f[j] : ((double)q / 127.0 - c[j]) * s[j];
      else want = q == 255 ? fm_na_value() : (double)q / 127.0;
      FUZZ_ASSERT(same(out[jj * ld + i], want));
      if (!(fl & 1u)) FUZZ_ASSERT(same(out[jj * ld + i], fm_codec_dos8_value(q)));
    }
    for (int64_t i = nr; i < ld && jj + 1 < nc; i++) FUZZ_ASSERT(out[jj * ld + i] == SENTINEL);
  }
done:
  free(out);
  free(c);
  free(s);
  free(f);
  free(ci);
  free(buf);
}

/* ---- 1: HAP1 rows ----------------------------------------------------------- */

static void op_hap1(const uint8_t *d, size_t size) {
  if (size < 8) return;
  int64_t nh = u16(d + 1), l0 = u16(d + 3), nl = u16(d + 5);
  const int64_t ld = nh + d[7];
  const size_t len = size - 8;
  const int64_t rb = fm_codec_hap1_row_bytes(nh);
  FUZZ_ASSERT(rb >= 0 && rb % 64 == 0 && rb * 8 >= nh && (nh == 0 || rb * 8 - nh < 512));
  const int64_t rows = rb > 0 ? (int64_t)len / rb : 0;
  if (l0 > rows) l0 = rows;
  if (nl > rows - l0) nl = rows - l0;
  if (nh == 0 || nl == 0) return;
  uint8_t *buf = copy_bytes(d + 8, len);
  const size_t n_out = (size_t)((nl - 1) * ld + nh);
  int32_t *out = malloc(n_out * sizeof *out);
  uint8_t *enc = malloc((size_t)(nl * rb));
  if (!buf || !out || !enc) goto done;
  for (size_t k = 0; k < n_out; k++) out[k] = -7;
  fm_codec_hap1_decode_rows(buf, nh, l0, nl, out, ld);
  for (int64_t l = 0; l < nl; l++) {
    const uint8_t *row = buf + (l0 + l) * rb;
    for (int64_t h = 0; h < nh; h++) {
      uint64_t w;
      memcpy(&w, row + 8 * (h / 64), sizeof w);
      int32_t want = (int32_t)((w >> (h % 64)) & 1u);
      FUZZ_ASSERT(out[l * ld + h] == want);
      FUZZ_ASSERT(fm_codec_hap1_get(buf, nh, l0 + l, h) == want);
    }
    for (int64_t h = nh; h < ld && l + 1 < nl; h++) FUZZ_ASSERT(out[l * ld + h] == -7);
  }
  /* Round trip: re-encoding keeps every allele and zeroes the padding. */
  fm_err err;
  FUZZ_ASSERT(fm_codec_hap1_encode(out, nh, nl, ld, enc, &err) == FM_OK);
  for (int64_t l = 0; l < nl; l++) {
    const uint8_t *row = buf + (l0 + l) * rb, *er = enc + l * rb;
    for (int64_t bit = 0; bit < rb * 8; bit++) {
      uint64_t w, e;
      memcpy(&w, row + 8 * (bit / 64), sizeof w);
      memcpy(&e, er + 8 * (bit / 64), sizeof e);
      unsigned want = bit < nh ? (unsigned)((w >> (bit % 64)) & 1u) : 0u;
      FUZZ_ASSERT(((e >> (bit % 64)) & 1u) == want);
    }
  }
done:
  free(enc);
  free(out);
  free(buf);
}

/* ---- 2: fm_mat_init ------------------------------------------------------------ */

static int64_t scaled(const uint8_t *p) {
  return (int64_t)((uint64_t)(int64_t)s32(p) << (p[4] % 64));
}

static int mul_ok(int64_t a, int64_t b, int64_t *o) {
  if (a < 0 || b < 0) return 0;
  if (a != 0 && b > INT64_MAX / a) return 0;
  *o = a * b;
  return 1;
}

/* Reference value of row i of stored column s, fm_na_value() for missing. */
static double ref_elem(fm_codec_id codec, const uint8_t *col, int64_t i) {
  switch (codec) {
  case FM_CODEC_F64: {
    double v;
    memcpy(&v, col + 8 * i, sizeof v);
    return v;
  }
  case FM_CODEC_I32: {
    int32_t v;
    memcpy(&v, col + 4 * i, sizeof v);
    return v == INT32_MIN ? fm_na_value() : (double)v;
  }
  case FM_CODEC_BED2: {
    static const double t[4] = {2.0, 0.0, 1.0, 0.0};
    unsigned code = (col[i / 4] >> (2 * (i % 4))) & 3u;
    return code == 1u ? fm_na_value() : t[code];
  }
  default: return col[i] == 255 ? fm_na_value() : (double)col[i] / 127.0;
  }
}

static void op_mat_init(const uint8_t *d, size_t size) {
  if (size < 22) return;
  const int codec_i = (int)(int8_t)d[1];
  const int64_t n = scaled(d + 2), p = scaled(d + 7), stride = scaled(d + 12);
  const unsigned fl = d[17];
  const size_t budget = (size_t)((uint32_t)d[18] | (uint32_t)d[19] << 8 | (uint32_t)d[20] << 16 |
                                 (uint32_t)d[21] << 24);
  const size_t mis = (fl >> 1) & 7u;
  const size_t len = size - 22;
  /* The stored bytes start mis bytes into the buffer (malloc aligns to 16)
   * and end where it ends. */
  uint8_t *buf = malloc(mis + len ? mis + len : 1);
  if (!buf) return;
  memset(buf, 0, mis);
  memcpy(buf + mis, d + 22, len);
  const uint8_t *data = (fl & 1u) ? NULL : buf + mis;
  const size_t avail = (fl & 1u) ? 0 : len;

  const fm_codec_id codec = (fm_codec_id)codec_i;
  const int known = codec_i >= 1 && codec_i <= 4;
  const int64_t ms = fm_mat_min_stride(codec, n);
  int64_t ref_ms = -1;
  if (known && n >= 0) {
    if (codec_i == FM_CODEC_F64) ref_ms = n > INT64_MAX / 8 ? -1 : 8 * n;
    else if (codec_i == FM_CODEC_I32) ref_ms = n > INT64_MAX / 4 ? -1 : 4 * n;
    else if (codec_i == FM_CODEC_BED2) ref_ms = n / 4 + (n % 4 != 0);
    else ref_ms = n;
  }
  FUZZ_ASSERT(ms == ref_ms);

  /* The documented preconditions, in the order fm_mat_init states them. */
  int64_t extent = 0;
  const int64_t align = codec_i == FM_CODEC_F64 ? 8 : codec_i == FM_CODEC_I32 ? 4 : 1;
  int valid = known && n >= 0 && p >= 0 && ref_ms >= 0;
  if (valid && p > 0) valid = stride >= ref_ms && mul_ok(p - 1, stride, &extent);
  if (valid && n > 0 && p > 0) {
    valid = data != NULL;
    if (valid && align > 1)
      valid = (uintptr_t)data % (uintptr_t)align == 0 && (p <= 1 || stride % align == 0);
  }
  fm_err err;
  fm_mat x;
  memset(&x, 0x5a, sizeof x);
  fm_status st = fm_mat_init(&x, codec, data, n, p, stride, &err);
  FUZZ_ASSERT(st == (valid ? FM_OK : FM_EARG));
  if (st != FM_OK) {
    FUZZ_ASSERT(err.code == FM_EARG && strlen(err.msg) > 0);
    goto done;
  }
  FUZZ_ASSERT(x.codec == codec && x.data == data && x.n_rows == n && x.n_cols == p &&
              x.col_stride == stride && x.col_index == NULL);

  /* Plan: the documented bounds, for any accepted shape. */
  const size_t bud = budget ? budget : fm_panel_budget();
  fm_panel_plan plan = fm_panel_plan_for(&x, budget);
  const int64_t nn = n > 0 ? n : 1, pp = p > 0 ? p : 1;
  FUZZ_ASSERT(plan.rows >= 1 && plan.cols >= 1 && plan.rows <= INT_MAX && plan.cols <= INT_MAX);
  FUZZ_ASSERT(plan.rows <= nn && plan.cols <= pp);
  if (bud >= 8) FUZZ_ASSERT((uint64_t)plan.rows <= (uint64_t)(bud / 8) / (uint64_t)plan.cols);
  const int64_t handful = pp < FM_PANEL_MIN_COLS ? pp : FM_PANEL_MIN_COLS;
  if (nn <= INT_MAX && (uint64_t)nn <= (uint64_t)(bud / 8) / (uint64_t)handful)
    FUZZ_ASSERT(plan.rows == nn);
  if (codec == FM_CODEC_BED2 && plan.rows >= 4 && plan.rows < nn) FUZZ_ASSERT(plan.rows % 4 == 0);

  /* Decode everything when the stored bytes hold the matrix. */
  int64_t cells = 0;
  if (!(fl & 16u) || !data || n == 0 || p == 0 || !mul_ok(n, p, &cells) || cells > MAX_CELLS)
    goto done;
  if (extent > INT64_MAX - ref_ms || (uint64_t)(extent + ref_ms) > avail) goto done;
  int64_t pr = plan.rows, pc = plan.cols;
  if (pr * pc > MAX_CELLS) goto done;
  double *out = malloc((size_t)(pr * pc) * sizeof *out);
  if (!out) goto done;
  for (int64_t c0 = 0; c0 < p; c0 += pc) {
    int64_t nc = p - c0 < pc ? p - c0 : pc;
    for (int64_t r0 = 0; r0 < n; r0 += pr) {
      int64_t nr = n - r0 < pr ? n - r0 : pr;
      FUZZ_ASSERT(fm_panel_decode(&x, NULL, r0, nr, c0, nc, out, nr, &err) == FM_OK);
      for (int64_t jj = 0; jj < nc; jj++)
        for (int64_t i = 0; i < nr; i++) {
          double want = ref_elem(codec, data + (c0 + jj) * stride, r0 + i);
          double got = out[jj * nr + i];
          FUZZ_ASSERT(same(got, want));
        }
    }
  }
  free(out);
done:
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] % 3) {
  case 0: op_dos8(data, size); break;
  case 1: op_hap1(data, size); break;
  default: op_mat_init(data, size); break;
  }
  return 0;
}
