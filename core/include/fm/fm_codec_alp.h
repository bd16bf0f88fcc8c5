/* fm_codec_alp.h: ALP, lossless compression of doubles (docs/formats/alp.md).
 *
 * Decimal ALP after Afroozeh, Kuffo and Boncz, "ALP: Adaptive Lossless
 * floating-Point Compression", SIGMOD 2023 (Proc. ACM Manag. Data 1(4)).
 * Each column of a column-major n x p double matrix is cut into vectors of
 * vector_size rows (1024, the paper's, unless told otherwise; the last
 * vector of a column may be shorter). Per vector an exponent e and a factor
 * f (0 <= f <= e <= 18) are chosen by the paper's two-level sampling, and
 * every value v is encoded as the integer
 *     d = fast_round(v * 10^e * 10^-f)       (round half to even, |.| < 2^51)
 * which decodes as d * 10^f * 10^-e. The digits d are stored with a frame
 * of reference (the vector's minimum) and bit packing at the minimal width.
 * A value whose decode is not bit for bit the input is an exception, kept
 * as (position, raw 64-bit pattern): NaN (R's NA keeps its payload 1954),
 * +-Inf, -0, denormals, integers beyond 2^51 and anything else that does
 * not round trip. Decoding is therefore exact, bit for bit, for every input.
 *
 * Not in the paper: a vector whose ALP encoding would take more than 64
 * bits per value (data that did not originate as decimals, such as model
 * weights) is stored raw instead, so a blob never exceeds 8 bytes per
 * value plus its headers. The paper's ALP_rd scheme for such data is not
 * implemented.
 *
 * A blob is self-describing (magic, version, shape, vector size, a column
 * offset table, per-vector headers), so rows r0..r0+nr of any column decode
 * by decoding only the vectors that cover them. fm_codec_alp_check validates
 * a whole blob; decoding trusts a checked blob. Matrices over a blob are
 * fm_mat views made by fm_mat_init_alp (below): fm_mat_init refuses
 * FM_CODEC_ALP because a blob must be checked before it is decoded.
 * Products take the registered fused backend (fm_backend_alp.h) or the
 * reference path; statistics decode bounded panels.
 *
 * Thread safety: everything here is reentrant; decoding only reads the blob. */
#ifndef FM_CODEC_ALP_H
#define FM_CODEC_ALP_H

#include "fm_base.h"
#include "fm_panel.h"

#define FM_ALP_VECTOR_SIZE 1024 /* rows per vector by default (the paper's) */
#define FM_ALP_VECTOR_MIN 64    /* vector sizes are multiples of 64 in [64, 1024] */
#define FM_ALP_VECTOR_MAX 1024
#define FM_ALP_MAX_EXPONENT 18 /* e and f lie in 0..18, f <= e */

/* Encode a matrix into a new blob.
 * Shape:  x is n_rows x n_cols, column-major, ld >= max(n_rows, 1).
 * Units:  any doubles (every bit pattern round trips).
 * vector_size: rows per vector, 0 for FM_ALP_VECTOR_SIZE; otherwise a
 *         multiple of 64 in [FM_ALP_VECTOR_MIN, FM_ALP_VECTOR_MAX] (small
 *         vectors are for tests: they exercise vector edges on small data).
 * ctl:    polled once per column (cancel); progress in columns.
 * Errors: FM_EARG (negative dims, ld < n_rows, a bad vector_size, x NULL
 *         for a non-empty matrix, NULL outputs); FM_ENOMEM (also when the
 *         blob's size bound, 8 bytes per value plus headers, overflows);
 *         FM_ECANCELLED.
 * Owns:   borrows x; *blob_out is owned by the caller, free it with free();
 *         *size_out is its size in bytes. Both are NULL / 0 on error. */
FM_NODISCARD fm_status fm_codec_alp_encode(const double *x, int64_t n_rows, int64_t n_cols,
                                           int64_t ld, int32_t vector_size, const fm_ctl *ctl,
                                           uint8_t **blob_out, size_t *size_out, fm_err *err);

/* Validate a whole blob of size bytes: the header (magic, version, header
 * size, vector size, reserved bytes), the shape against the size, the column
 * offset table (first entry right after the table, non-decreasing, last
 * entry the blob's size, room for the vector headers), and every vector
 * header (kind, e <= 18, f <= e, width <= 64, exception count <= the
 * vector's rows, data 8-byte aligned, after the column's headers and inside
 * its column) and every exception position (strictly increasing, below the
 * vector's rows). The blob's recorded size may be smaller than size (bytes
 * after it are ignored), never larger. Cost: O(vectors + exceptions).
 * Errors: FM_EFORMAT "alp blob: byte OFF: <what was expected>, found <x>"
 *         naming the first offending byte offset; FM_EARG for blob NULL.
 * Owns:   borrows blob. */
FM_NODISCARD fm_status fm_codec_alp_check(const void *blob, size_t size, fm_err *err);

/* What a blob holds, for printing and sizing. */
typedef struct fm_alp_info {
  int64_t n_rows, n_cols;
  int32_t vector_size;
  int64_t n_bytes;      /* the blob's recorded size */
  int64_t n_vectors;    /* all columns */
  int64_t n_raw;        /* vectors stored raw (64 bits per value) */
  int64_t n_exceptions; /* values kept as exceptions, all ALP vectors */
  double bits_per_value; /* 8 * n_bytes / (n_rows * n_cols); 0 when empty */
} fm_alp_info;

/* Check the blob (as fm_codec_alp_check) and describe it.
 * Errors: those of fm_codec_alp_check; FM_EARG when out is NULL.
 * Owns:   borrows blob; writes *out (zeroed on error). */
FM_NODISCARD fm_status fm_codec_alp_info(const void *blob, size_t size, fm_alp_info *out,
                                         fm_err *err);

/* Initialise an fm_mat over a blob of size bytes, after checking it whole
 * (fm_codec_alp_check). The view is codec FM_CODEC_ALP, data the blob,
 * n_rows x n_cols the blob's shape, n_stored_cols = n_cols, col_stride the
 * blob's recorded size in bytes (the codec owns its layout; it is no column
 * stride), col_index NULL. Every other field is zero. Select columns by
 * setting col_index and n_cols afterwards, as for other codecs (entries
 * below n_stored_cols).
 * Errors: FM_EARG for x NULL; those of fm_codec_alp_check.
 * Owns:   borrows blob, which must outlive the view and not change. */
FM_NODISCARD fm_status fm_mat_init_alp(fm_mat *x, const void *blob, size_t size, fm_err *err);

#endif
