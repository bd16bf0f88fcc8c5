/* codec_alp_impl.h: private parts of the ALP codec (fm_codec_alp.h), shared
 * by the decoder and checker (codec_alp.c), the encoder (codec_alp_encode.c),
 * the panel decoder (panel.c) and the fused product backend (backend_alp.c).
 * Byte layout: docs/formats/alp.md. All integers are little-endian. */
#ifndef CODEC_ALP_IMPL_H
#define CODEC_ALP_IMPL_H

#include "fm/fm_codec_alp.h"

#include <stdint.h>
#include <string.h>

/* Blob header (48 bytes), then the column offset table. */
#define ALP_MAGIC "FALP"
#define ALP_VERSION 1
#define ALP_HEADER_BYTES 48
#define ALP_OFF_MAGIC 0       /* 4 bytes */
#define ALP_OFF_VERSION 4     /* u16 */
#define ALP_OFF_HEADER 6      /* u16, ALP_HEADER_BYTES */
#define ALP_OFF_VSIZE 8       /* u32 */
#define ALP_OFF_RESERVED1 12  /* u32, 0 */
#define ALP_OFF_NROWS 16      /* u64 */
#define ALP_OFF_NCOLS 24      /* u64 */
#define ALP_OFF_TOTAL 32      /* u64, the blob's size */
#define ALP_OFF_RESERVED2 40  /* u64, 0 */

/* Vector header (24 bytes); a column starts with its vectors' headers. */
#define ALP_VHDR_BYTES 24
#define ALP_KIND_ALP 0 /* FOR + bit-packed digits, then exceptions */
#define ALP_KIND_RAW 1 /* the rows' 64-bit patterns */

/* Exceptions cost 64 bits of value and 16 of position (the paper's count). */
#define ALP_EXCEPTION_BITS 80

static inline uint64_t alp_rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline uint32_t alp_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint16_t alp_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static inline void alp_wr64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(p, &v, 8);
}

/* A decoded vector header. */
typedef struct alp_vhdr {
  int kind;       /* ALP_KIND_* */
  int e, f, w;    /* exponent, factor, bit width */
  int n_exc;      /* exceptions */
  uint64_t base;  /* frame of reference, an int64 two's complement */
  uint64_t data;  /* byte offset of the vector's data from the blob start */
} alp_vhdr;

static inline alp_vhdr alp_vhdr_at(const uint8_t *h) {
  alp_vhdr v;
  v.kind = h[0];
  v.e = h[1];
  v.f = h[2];
  v.w = h[3];
  v.n_exc = (int)alp_rd32(h + 4);
  v.base = alp_rd64(h + 8);
  v.data = alp_rd64(h + 16);
  return v;
}

/* Bytes of an ALP vector's packed digits: whole groups of 64 rows, w words
 * each (the last group padded with zeros). */
static inline uint64_t alp_packed_bytes(int64_t len, int w) {
  return (uint64_t)((len + 63) / 64) * (uint64_t)w * 8u;
}

/* Exact powers 10^0..10^18 and the doubles nearest 10^-0..10^-18. */
extern const double fm_alp_pow10[FM_ALP_MAX_EXPONENT + 1];
extern const double fm_alp_ipow10[FM_ALP_MAX_EXPONENT + 1];

/* The decoded value of digit d: d * 10^f * 10^-e, in that order (the paper's
 * decode; the encoder keeps a value only if this gives it back bit for bit). */
static inline double alp_value(int64_t d, int f, int e) {
  return (double)d * fm_alp_pow10[f] * fm_alp_ipow10[e];
}

/* A checked blob, read for decoding. */
typedef struct alp_view {
  const uint8_t *blob;
  int64_t n_rows, n_cols;
  int64_t vs;    /* rows per vector */
  int64_t n_vec; /* vectors per column */
} alp_view;

void alp_view_of(const void *blob, alp_view *v);

/* The affine transform of one logical column (fm_panel.h's rule: missing
 * means NaN, which becomes fill when has_fill, else stays as it is). */
typedef struct alp_affine {
  int identity;
  int has_fill;
  double center, scale, fill;
} alp_affine;

/* Decode rows [r0, r0+n) of stored column col into out[0..n), with the
 * transform a (NULL = identity), one vector at a time. The caller has
 * checked 0 <= r0, n >= 0, r0 + n <= n_rows and 0 <= col < n_cols. */
void alp_decode_rows(const alp_view *v, int64_t col, int64_t r0, int64_t n, const alp_affine *a,
                     double *out);

#endif
