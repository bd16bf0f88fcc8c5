/* codec_alp.c: the ALP blob checker and decoder (fm_codec_alp.h,
 * docs/formats/alp.md); the encoder is codec_alp_encode.c.
 * Decoding unpacks 64 rows at a time (one group: w words of packed digits),
 * with the bit width a compile-time constant in each case of a switch, so
 * shifts and masks are constants; exceptions are patched afterwards. */
#include "codec_alp_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

const double fm_alp_pow10[FM_ALP_MAX_EXPONENT + 1] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
    1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
const double fm_alp_ipow10[FM_ALP_MAX_EXPONENT + 1] = {
    1e-0,  1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,  1e-8,  1e-9,
    1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18};

/* ---- checking ------------------------------------------------------------ */

#define BAD(off, ...) bad(err, (uint64_t)(off), __VA_ARGS__)

static fm_status bad(fm_err *err, uint64_t off, const char *fmt, ...) FM_PRINTF(3, 4);

static fm_status bad(fm_err *err, uint64_t off, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fm_err_set(err, FM_EFORMAT, "alp blob: byte %llu: %s", (unsigned long long)off, what);
}

/* One vector header at byte h of column [col0, col_end) whose headers end at
 * hdr_end; len rows. */
static fm_status check_vector(const uint8_t *b, uint64_t h, uint64_t hdr_end, uint64_t col_end,
                              int64_t len, int64_t *n_exc_out, fm_err *err) {
  const uint8_t *p = b + h;
  const alp_vhdr v = alp_vhdr_at(p);
  *n_exc_out = 0;
  if (v.kind != ALP_KIND_ALP && v.kind != ALP_KIND_RAW)
    return BAD(h, "vector kind 0 (alp) or 1 (raw) expected, found %d", v.kind);
  if (v.data % 8 != 0)
    return BAD(h + 16, "vector data offset aligned to 8 bytes expected, found %llu",
               (unsigned long long)v.data);
  if (v.data < hdr_end || v.data > col_end)
    return BAD(h + 16,
               "vector data offset in [%llu, %llu] (after the column's vector headers, inside "
               "the column) expected, found %llu",
               (unsigned long long)hdr_end, (unsigned long long)col_end,
               (unsigned long long)v.data);
  const uint64_t room = col_end - v.data;
  if (v.kind == ALP_KIND_RAW) {
    for (int k = 1; k < 16; k++)
      if (p[k] != 0) return BAD(h + (uint64_t)k, "0 in a raw vector's header expected, found %d", p[k]);
    if (room / 8 < (uint64_t)len)
      return BAD(h + 16, "room for %lld raw values (%llu bytes) expected in the column, found %llu",
                 (long long)len, (unsigned long long)len * 8u, (unsigned long long)room);
    return FM_OK;
  }
  if (v.e > FM_ALP_MAX_EXPONENT)
    return BAD(h + 1, "exponent at most %d expected, found %d", FM_ALP_MAX_EXPONENT, v.e);
  if (v.f > v.e) return BAD(h + 2, "factor at most the exponent %d expected, found %d", v.e, v.f);
  if (v.w > 64) return BAD(h + 3, "bit width at most 64 expected, found %d", v.w);
  const uint32_t n_exc = alp_rd32(p + 4);
  if ((int64_t)n_exc > len)
    return BAD(h + 4, "at most %lld exceptions (the vector's rows) expected, found %lu",
               (long long)len, (unsigned long)n_exc);
  const uint64_t packed = alp_packed_bytes(len, v.w);
  const uint64_t need = packed + 10u * n_exc;
  if (need > room)
    return BAD(h + 16,
               "room for %llu bytes of packed digits and %lu exceptions expected in the "
               "column, found %llu bytes",
               (unsigned long long)packed, (unsigned long)n_exc, (unsigned long long)room);
  const uint64_t pos_off = v.data + packed + 8u * n_exc;
  int64_t prev = -1;
  for (uint32_t k = 0; k < n_exc; k++) {
    const int64_t pos = alp_rd16(b + pos_off + 2u * k);
    if (pos <= prev || pos >= len)
      return BAD(pos_off + 2u * k,
                 "exception position in [%lld, %lld] (strictly increasing) expected, found %lld",
                 (long long)(prev + 1), (long long)(len - 1), (long long)pos);
    prev = pos;
  }
  *n_exc_out = n_exc;
  return FM_OK;
}

/* Check the blob; count vectors, raw vectors and exceptions when asked. */
static fm_status check_blob(const uint8_t *b, size_t size, fm_alp_info *info, fm_err *err) {
  if (!b) return fm_err_set(err, FM_EARG, "alp blob: the blob pointer is NULL");
  if (size < ALP_HEADER_BYTES)
    return BAD(0, "a %d-byte header expected, found a blob of %zu bytes", ALP_HEADER_BYTES, size);
  if (memcmp(b + ALP_OFF_MAGIC, ALP_MAGIC, 4) != 0)
    return BAD(ALP_OFF_MAGIC, "magic \"%s\" expected", ALP_MAGIC);
  if (alp_rd16(b + ALP_OFF_VERSION) != ALP_VERSION)
    return BAD(ALP_OFF_VERSION, "version %d expected, found %u", ALP_VERSION,
               (unsigned)alp_rd16(b + ALP_OFF_VERSION));
  if (alp_rd16(b + ALP_OFF_HEADER) != ALP_HEADER_BYTES)
    return BAD(ALP_OFF_HEADER, "header size %d expected, found %u", ALP_HEADER_BYTES,
               (unsigned)alp_rd16(b + ALP_OFF_HEADER));
  const uint32_t vs = alp_rd32(b + ALP_OFF_VSIZE);
  if (vs < FM_ALP_VECTOR_MIN || vs > FM_ALP_VECTOR_MAX || vs % 64 != 0)
    return BAD(ALP_OFF_VSIZE, "vector size a multiple of 64 in [%d, %d] expected, found %lu",
               FM_ALP_VECTOR_MIN, FM_ALP_VECTOR_MAX, (unsigned long)vs);
  if (alp_rd32(b + ALP_OFF_RESERVED1) != 0) return BAD(ALP_OFF_RESERVED1, "reserved 0 expected");
  if (alp_rd64(b + ALP_OFF_RESERVED2) != 0) return BAD(ALP_OFF_RESERVED2, "reserved 0 expected");
  const uint64_t n_rows = alp_rd64(b + ALP_OFF_NROWS), n_cols = alp_rd64(b + ALP_OFF_NCOLS);
  const uint64_t total = alp_rd64(b + ALP_OFF_TOTAL);
  if (total > size || total < ALP_HEADER_BYTES)
    return BAD(ALP_OFF_TOTAL, "a blob size in [%d, %zu] (the bytes given) expected, found %llu",
               ALP_HEADER_BYTES, size, (unsigned long long)total);
  if (n_rows > (uint64_t)INT64_MAX)
    return BAD(ALP_OFF_NROWS, "a row count below 2^63 expected, found %llu",
               (unsigned long long)n_rows);
  if (n_cols >= (total - ALP_HEADER_BYTES) / 8)
    return BAD(ALP_OFF_NCOLS,
               "at most %llu columns (an offset table that fits the %llu-byte blob) expected, "
               "found %llu",
               (unsigned long long)((total - ALP_HEADER_BYTES) / 8) - 1,
               (unsigned long long)total, (unsigned long long)n_cols);
  const uint64_t table_end = ALP_HEADER_BYTES + 8u * (n_cols + 1);
  const uint64_t n_vec = n_rows == 0 ? 0 : (n_rows - 1) / vs + 1;
  if (info) {
    memset(info, 0, sizeof *info);
    info->n_rows = (int64_t)n_rows;
    info->n_cols = (int64_t)n_cols;
    info->vector_size = (int32_t)vs;
    info->n_bytes = (int64_t)total;
  }
  for (uint64_t j = 0; j < n_cols; j++) {
    const uint64_t at = ALP_HEADER_BYTES + 8u * j;
    const uint64_t c0 = alp_rd64(b + at), c1 = alp_rd64(b + at + 8);
    if (j == 0 && c0 != table_end)
      return BAD(at, "column 0 at byte %llu (right after the offset table) expected, found %llu",
                 (unsigned long long)table_end, (unsigned long long)c0);
    if (c1 < c0 || c1 > total)
      return BAD(at + 8, "column %llu's end in [%llu, %llu] expected, found %llu",
                 (unsigned long long)j, (unsigned long long)c0, (unsigned long long)total,
                 (unsigned long long)c1);
    if (j + 1 == n_cols && c1 != total)
      return BAD(at + 8, "the last column's end at the blob's size %llu expected, found %llu",
                 (unsigned long long)total, (unsigned long long)c1);
    if ((c1 - c0) / ALP_VHDR_BYTES < n_vec)
      return BAD(at, "room for %llu vector headers in column %llu expected, found %llu bytes",
                 (unsigned long long)n_vec, (unsigned long long)j,
                 (unsigned long long)(c1 - c0));
    const uint64_t hdr_end = c0 + n_vec * ALP_VHDR_BYTES;
    for (uint64_t t = 0; t < n_vec; t++) {
      const uint64_t r = t * vs;
      const int64_t len = (int64_t)(n_rows - r < vs ? n_rows - r : vs);
      int64_t n_exc = 0;
      fm_status st = check_vector(b, c0 + t * ALP_VHDR_BYTES, hdr_end, c1, len, &n_exc, err);
      if (st != FM_OK) return st;
      if (info) {
        info->n_vectors++;
        info->n_raw += b[c0 + t * ALP_VHDR_BYTES] == ALP_KIND_RAW;
        info->n_exceptions += n_exc;
      }
    }
  }
  if (n_cols == 0 && alp_rd64(b + ALP_HEADER_BYTES) != total)
    return BAD(ALP_HEADER_BYTES, "an empty offset table ending at the blob's size %llu expected",
               (unsigned long long)total);
  if (info && n_rows > 0 && n_cols > 0)
    info->bits_per_value = 8.0 * (double)total / ((double)n_rows * (double)n_cols);
  return FM_OK;
}

fm_status fm_codec_alp_check(const void *blob, size_t size, fm_err *err) {
  return check_blob(blob, size, NULL, err);
}

fm_status fm_codec_alp_info(const void *blob, size_t size, fm_alp_info *out, fm_err *err) {
  if (!out) return fm_err_set(err, FM_EARG, "fm_codec_alp_info: out is NULL");
  fm_status st = check_blob(blob, size, out, err);
  if (st != FM_OK) memset(out, 0, sizeof *out);
  return st;
}

fm_status fm_mat_init_alp(fm_mat *x, const void *blob, size_t size, fm_err *err) {
  if (!x) return fm_err_set(err, FM_EARG, "fm_mat_init_alp: x must not be NULL");
  memset(x, 0, sizeof *x);
  fm_status st = fm_codec_alp_check(blob, size, err);
  if (st != FM_OK) return st;
  alp_view v;
  alp_view_of(blob, &v);
  x->codec = FM_CODEC_ALP;
  x->data = blob;
  x->n_rows = v.n_rows;
  x->n_cols = v.n_cols;
  x->n_stored_cols = v.n_cols;
  x->col_stride = (int64_t)alp_rd64(v.blob + ALP_OFF_TOTAL);
  return FM_OK;
}

/* ---- decoding ------------------------------------------------------------ */

void alp_view_of(const void *blob, alp_view *v) {
  const uint8_t *b = blob;
  v->blob = b;
  v->n_rows = (int64_t)alp_rd64(b + ALP_OFF_NROWS);
  v->n_cols = (int64_t)alp_rd64(b + ALP_OFF_NCOLS);
  v->vs = (int64_t)alp_rd32(b + ALP_OFF_VSIZE);
  v->n_vec = v->n_rows == 0 ? 0 : (v->n_rows - 1) / v->vs + 1;
}

#if defined(__GNUC__)
#define ALP_INLINE static inline __attribute__((always_inline))
#else
#define ALP_INLINE static inline
#endif

/* 64 rows of width w (a constant at each call site) from in (w words) into
 * out: out[i] = (base + digit_i) * m1 * m2. The words are first copied into
 * a buffer with 8 bytes of slack, so that every digit of width <= 57 is one
 * unaligned 8-byte load and a shift, and no load reaches past the group. */
ALP_INLINE void unpack_w(const uint8_t *in, const int w, uint64_t base, double m1, double m2,
                         double *out) {
  if (w == 0) {
    const double v = (double)(int64_t)base * m1 * m2;
    for (int i = 0; i < 64; i++) out[i] = v;
    return;
  }
  uint8_t buf[64 * 8 + 8];
  memcpy(buf, in, (size_t)w * 8);
  memset(buf + (size_t)w * 8, 0, 8);
  const uint64_t mask = w == 64 ? ~(uint64_t)0 : ((uint64_t)1 << (w & 63)) - 1;
  /* Unrolled, every shift and offset is a constant. */
#if defined(__GNUC__)
#pragma GCC unroll 64
#endif
  for (int i = 0; i < 64; i++) {
    const int bit = i * w;
    uint64_t u;
    if (w <= 57) {
      u = (alp_rd64(buf + (bit >> 3)) >> (bit & 7)) & mask;
    } else {
      const int word = bit >> 6, sh = bit & 63;
      u = alp_rd64(buf + 8 * word) >> sh;
      if (sh + w > 64) u |= alp_rd64(buf + 8 * (word + 1)) << ((64 - sh) & 63);
      u &= mask;
    }
    out[i] = (double)(int64_t)(base + u) * m1 * m2;
  }
}

#define ALP_W4(n) ALP_W(n) ALP_W(n + 1) ALP_W(n + 2) ALP_W(n + 3)
#define ALP_W16(n) ALP_W4(n) ALP_W4(n + 4) ALP_W4(n + 8) ALP_W4(n + 12)

static void unpack_group(const uint8_t *in, int w, uint64_t base, double m1, double m2,
                         double *out) {
  switch (w) {
#define ALP_W(n)                                                                                   \
  case n: unpack_w(in, n, base, m1, m2, out); return;
    ALP_W16(0)
    ALP_W16(16)
    ALP_W16(32)
    ALP_W16(48)
    ALP_W(64)
#undef ALP_W
  default: return; /* a checked blob has w <= 64 */
  }
}

static void apply_affine(double *o, int64_t n, const alp_affine *a) {
  const double c = a->center, s = a->scale, f = a->fill;
  if (a->has_fill) {
    for (int64_t i = 0; i < n; i++) o[i] = isnan(o[i]) ? f : (o[i] - c) * s;
  } else {
    for (int64_t i = 0; i < n; i++) o[i] = isnan(o[i]) ? o[i] : (o[i] - c) * s;
  }
}

/* Rows [lo, hi) of a vector of len rows into out[0 .. hi-lo). */
static void decode_vector(const uint8_t *b, const alp_vhdr *h, int64_t len, int64_t lo,
                          int64_t hi, double *out) {
  const uint8_t *d = b + h->data;
  if (h->kind == ALP_KIND_RAW) {
    for (int64_t i = lo; i < hi; i++) {
      const uint64_t bits = alp_rd64(d + 8 * i);
      memcpy(out + (i - lo), &bits, 8);
    }
    return;
  }
  const double m1 = fm_alp_pow10[h->f], m2 = fm_alp_ipow10[h->e];
  const int w = h->w;
  double tmp[64];
  for (int64_t g = lo / 64; g * 64 < hi; g++) {
    const uint8_t *in = d + (size_t)g * (size_t)w * 8;
    const int64_t g0 = g * 64;
    if (g0 >= lo && g0 + 64 <= hi) {
      unpack_group(in, w, h->base, m1, m2, out + (g0 - lo));
    } else {
      unpack_group(in, w, h->base, m1, m2, tmp);
      const int64_t a = g0 > lo ? g0 : lo, z = g0 + 64 < hi ? g0 + 64 : hi;
      memcpy(out + (a - lo), tmp + (a - g0), (size_t)(z - a) * sizeof(double));
    }
  }
  if (h->n_exc > 0) {
    const uint8_t *vals = d + alp_packed_bytes(len, w);
    const uint8_t *pos = vals + 8 * (size_t)h->n_exc;
    for (int k = 0; k < h->n_exc; k++) {
      const int64_t i = alp_rd16(pos + 2 * k);
      if (i < lo) continue;
      if (i >= hi) break; /* positions increase */
      const uint64_t bits = alp_rd64(vals + 8 * k);
      memcpy(out + (i - lo), &bits, 8);
    }
  }
}

void alp_decode_rows(const alp_view *v, int64_t col, int64_t r0, int64_t n, const alp_affine *a,
                     double *out) {
  if (n <= 0) return;
  const uint8_t *b = v->blob;
  const uint64_t c0 = alp_rd64(b + ALP_HEADER_BYTES + 8 * (size_t)col);
  const int64_t vs = v->vs, end = r0 + n;
  for (int64_t t = r0 / vs; t * vs < end; t++) {
    const int64_t start = t * vs;
    const int64_t len = v->n_rows - start < vs ? v->n_rows - start : vs;
    const int64_t lo = r0 > start ? r0 - start : 0;
    const int64_t hi = end < start + len ? end - start : len;
    const alp_vhdr h = alp_vhdr_at(b + c0 + (size_t)t * ALP_VHDR_BYTES);
    double *o = out + (start + lo - r0);
    decode_vector(b, &h, len, lo, hi, o);
    if (a && !a->identity) apply_affine(o, hi - lo, a);
  }
}
