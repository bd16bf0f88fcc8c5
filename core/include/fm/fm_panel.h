/* fm_panel.h: a matrix over typed storage, and bounded panel decode to doubles.
 *
 * fm_mat is a borrowed, read-only view: a codec id, a pointer to the first
 * byte of column 0, the shape and the byte stride between columns. Columns
 * are the streaming unit (genotype matrices are samples x variants and
 * variant-major, so a column is one variant). An optional column index
 * selects a subset of stored columns without copying.
 *
 * The per-column affine transform is fused into decoding:
 *   out = (value - center[j]) * scale[j]      for observed values
 *   out = fill[j]                              for missing values
 * where j is the logical column. NULL center means 0, NULL scale means 1,
 * NULL fill means missing stays missing: it decodes to fm_na_value(), the
 * NaN whose bit pattern R reads as NA_real_. Mean imputation followed by
 * centring is fill[j] = 0.
 *
 * External codecs (FM_CODEC_EXT): a package outside the core may supply the
 * decoder of its own byte layout (Rgguf: GGML's quantized blocks, decoded
 * through GGML's to_float) as an fm_ext_codec. Panel decode, the panel plan,
 * the reference product (fm_backend.h) and the R codec-matrix class then
 * work on such a matrix as on any other codec; the core applies the column
 * index and the affine transform around the external decoder, which only
 * ever decodes stored rows x a run of consecutive stored columns.
 *
 * Thread safety: decode calls only read the view and write `out`; they may
 * run concurrently with distinct outputs (an external decoder must allow
 * that too). */
#ifndef FM_PANEL_H
#define FM_PANEL_H

#include "fm_base.h"

#include <string.h>

/* Bit pattern of the value a missing entry decodes to without a fill: a NaN
 * whose low word is 1954, which R reads as NA (any NaN counts as missing in
 * the core; this one keeps R's distinction between NA and NaN). */
#define FM_NA_BITS UINT64_C(0x7FF00000000007A2)

/* The double with bit pattern FM_NA_BITS. */
static inline double fm_na_value(void) {
  const uint64_t bits = FM_NA_BITS;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

typedef enum fm_codec_id {
  FM_CODEC_F64 = 1,  /* double, column-major; NA/NaN are missing */
  FM_CODEC_I32 = 2,  /* int32 (R integer or logical); INT32_MIN is missing */
  FM_CODEC_BED2 = 3, /* PLINK 1 two-bit hardcalls (fm_codec_bed2.h) */
  FM_CODEC_DOS8 = 4, /* one-byte dosages (fm_codec_dos8.h) */
  FM_CODEC_EXT = 5,  /* an external decoder: fm_mat.ext (see fm_ext_codec) */
  FM_CODEC_ALP = 6   /* ALP-compressed doubles (fm_codec_alp.h; fm_mat_init_alp) */
} fm_codec_id;

struct fm_mat;
struct fm_ext_codec;

/* Decode stored rows [r0, r0+n_rows) x stored columns [c0, c0+n_cols) of x
 * (x->codec == FM_CODEC_EXT, x->ext the codec whose decode this is).
 * Shape:  out is n_rows x n_cols, column-major, ld >= n_rows.
 * Units:  the codec's own values, with no affine transform; a missing value
 *         is any NaN (the core applies fill, center and scale afterwards).
 * The core has checked the panel against x->n_rows and the stored columns
 * against the view (0 <= c0, c0 + n_cols <= the stored column count that
 * the codec recorded), n_rows, n_cols >= 1 and ld >= n_rows.
 * Errors: the codec's own (FM_EFORMAT for bytes it cannot decode); never
 *         FM_EUNSUPPORTED (an external codec decodes every panel).
 * Owns:   borrows x; writes only out. Must be safe to call concurrently.
 *         Called behind the core's SIGBUS jump point (fm_fault.h): a codec
 *         reading bytes of a registered mapping (a GGUF file) must hold no
 *         lock and no allocation of its own while it reads them. */
typedef fm_status (*fm_ext_decode_fn)(const struct fm_mat *x, int64_t r0, int64_t n_rows,
                                      int64_t c0, int64_t n_cols, double *out, int64_t ld,
                                      fm_err *err);

/* An external codec: a name (for messages and printing), its decoder and the
 * decoder's data. The layout of x->data and the meaning of x->col_stride
 * are the codec's (Rgguf: row-major GGML blocks, col_stride the bytes of
 * one stored row). Borrowed by every fm_mat that points at it: it must
 * outlive them (keep it in static storage or in the object that owns the
 * bytes). */
typedef struct fm_ext_codec {
  const char *name;        /* borrowed, e.g. "gguf q4_K" */
  fm_ext_decode_fn decode; /* required */
  void *ud;                /* borrowed, for decode */
} fm_ext_codec;

typedef struct fm_mat {
  fm_codec_id codec;
  const void *data;         /* borrowed: first byte of stored column 0 */
  int64_t n_rows;           /* logical rows (samples) */
  int64_t n_cols;           /* logical columns */
  int64_t col_stride;       /* bytes between stored columns (ALP: the blob's
                               size; the codec owns its layout) */
  const int64_t *col_index; /* borrowed, length n_cols, 0-based stored
                               column of each logical column; NULL = identity */
  const fm_ext_codec *ext;  /* borrowed; FM_CODEC_EXT only, else NULL */
  int64_t n_stored_cols;    /* FM_CODEC_EXT and FM_CODEC_ALP only: columns
                               the codec holds (col_index entries must be
                               below it) */
  unsigned flags;           /* FM_MAT_* bits; 0 from the init functions */
} fm_mat;

/* fm_mat.flags: the bytes are a file mapping (read-only, or MAP_SHARED with
 * its file) whose pages a streamed pass may drop once consumed
 * (fm_mat_evict_cols): dropped pages are read again from the page cache or
 * the file on the next touch. Set it only on such mappings: on anonymous or
 * private writable memory dropping a page loses its contents. */
#define FM_MAT_EVICTABLE 1u

/* Drop from this process's resident set the pages holding stored columns
 * of logical columns [c0, c0 + n_cols) of x (madvise MADV_DONTNEED), when x
 * has FM_MAT_EVICTABLE and is not FM_CODEC_EXT or FM_CODEC_ALP (whose
 * columns are not col_stride apart); otherwise do nothing.
 * Meant for forward streams: call it on a block once it is consumed. Every
 * page holding a byte of those columns is dropped except the one holding the
 * byte after the last (the next column may start there); the page holding
 * the first byte goes even when earlier columns share it. Runs of
 * consecutive stored columns are dropped together (col_index honoured); with
 * a col_index, the page after each run goes too, since a gapped selection
 * (stride, filter, permutation) would otherwise keep a page per selected
 * column narrower than a page: a page still needed comes back from the page
 * cache (a minor fault).
 * Best effort: a failing madvise is ignored (dropping only saves memory;
 * it never changes a value). Safe to call concurrently. */
void fm_mat_evict_cols(const fm_mat *x, int64_t c0, int64_t n_cols);

/* fm_mat_evict_cols for a forward stream of column blocks, called on each
 * block once consumed: it also drops the stored bytes up to one page
 * table's span (2 MB with 4 KB pages) before the block's first stored
 * column. Reading a block maps more than the pages it touches: the kernel
 * maps the cached pages of an aligned window around each read fault
 * (fault-around, 64 KB by default), or a whole huge page. On a cold file,
 * whose pages arrive while the block is read, windows that straddle a block
 * boundary (a mapping not aligned to them) reach back into blocks already
 * dropped: 6% of a 16 MB file stayed resident after a pass without this
 * (test_panel). After the last block of a contiguous x only the page
 * holding the byte after it can stay; with a col_index the windows around
 * interior runs are not chased (best effort, as fm_mat_evict_cols). */
void fm_mat_evict_stream(const fm_mat *x, int64_t c0, int64_t n_cols);

/* The per-column transform fused into decoding: value = (stored - center)
 * * scale; a missing value becomes the column's fill (after the transform:
 * the fill is in output units), or NaN without one. One fill for every
 * column can be given as a scalar (fill_all_set, fill_all), so a p-column
 * imputation needs no p-length vector. */
typedef struct fm_affine {
  const double *center; /* length n_cols of the matrix, or NULL */
  const double *scale;  /* length n_cols, multiplier, or NULL */
  const double *fill;   /* length n_cols, value for missing, or NULL */
  int fill_all_set;     /* with fill NULL: nonzero when every column's
                           missing value becomes fill_all */
  double fill_all;
} fm_affine;

/* Whether aff changes nothing (NULL, or no part set). */
static inline int fm_affine_is_identity(const fm_affine *aff) {
  return !aff || (!aff->center && !aff->scale && !aff->fill && !aff->fill_all_set);
}

/* Whether aff gives missing values a fill. */
static inline int fm_affine_has_fill(const fm_affine *aff) {
  return aff && (aff->fill || aff->fill_all_set);
}

/* Centre, scale and fill of logical column j (0, 1 and NaN when unset). */
static inline void fm_affine_at(const fm_affine *aff, int64_t j, double *center, double *scale,
                                double *fill) {
  *center = aff && aff->center ? aff->center[j] : 0.0;
  *scale = aff && aff->scale ? aff->scale[j] : 1.0;
  *fill = aff && aff->fill ? aff->fill[j] : aff && aff->fill_all_set ? aff->fill_all : fm_na_value();
}

/* Initialise a view over stored data (col_index NULL). Validates the codec
 * (FM_CODEC_ALP is refused: use fm_mat_init_alp, which checks the blob),
 * n_rows, n_cols >= 0, that the stride can hold n_rows values of the codec,
 * and for F64 / I32 that data and stride are aligned to the element size
 * (8 / 4 bytes). data may be NULL only for an empty matrix.
 * Errors: FM_EARG naming the argument and the numbers. */
FM_NODISCARD fm_status fm_mat_init(fm_mat *x, fm_codec_id codec, const void *data, int64_t n_rows,
                                   int64_t n_cols, int64_t col_stride, fm_err *err);

/* Initialise a view over bytes that the external codec ext decodes: n_rows x
 * n_cols stored values at data; col_stride is passed through to the codec
 * (its meaning is the codec's). col_index NULL.
 * Errors: FM_EARG when ext or its decode is NULL, a dimension is negative,
 *         or data is NULL for a non-empty matrix. */
FM_NODISCARD fm_status fm_mat_init_ext(fm_mat *x, const fm_ext_codec *ext, const void *data,
                                       int64_t n_rows, int64_t n_cols, int64_t col_stride,
                                       fm_err *err);

/* Minimum column stride in bytes for n_rows values of codec; -1 for an
 * unknown codec or negative n_rows; 0 for FM_CODEC_EXT and FM_CODEC_ALP (the
 * codec owns its layout). */
int64_t fm_mat_min_stride(fm_codec_id codec, int64_t n_rows);

/* Decode the panel rows [r0, r0+n_rows) x logical columns [c0, c0+n_cols).
 * Shape:  out is n_rows x n_cols, column-major, ld >= n_rows.
 * Units:  the codec's numeric value (allele count for BED2, dosage for DOS8),
 *         after the affine transform aff (NULL = identity, missing -> NaN).
 *         F64: NaN (R's NA included) is missing; I32: INT32_MIN is missing.
 *         With fill NULL a missing value decodes to NaN (F64 keeps its
 *         payload, so R's NA stays NA).
 *         EXT: whatever the codec's decode gives, transformed the same way.
 *         ALP: the stored doubles bit for bit (NaN is missing, as for F64).
 * Errors: FM_EARG when the panel lies outside x, ld < n_rows, a col_index
 *         entry is negative (for EXT and ALP: or not below n_stored_cols),
 *         or the codec is unknown (EXT: without a decoder); an external
 *         codec's own errors; FM_EIO naming the file when reading a
 *         registered mapping raised SIGBUS (its file truncated from outside
 *         during the call, fm_fault.h).
 * Owns:   borrows x and aff; writes only out. */
FM_NODISCARD fm_status fm_panel_decode(const fm_mat *x, const fm_affine *aff, int64_t r0,
                                       int64_t n_rows, int64_t c0, int64_t n_cols, double *out,
                                       int64_t ld, fm_err *err);

/* Gather rows x columns of the logical matrix (after aff): out[i + j * ld]
 * = X[rows[i], cols[j]], 0-based, in any order with repeats; rows NULL
 * means all n_rows rows (n_rows must then be x->n_rows), cols NULL all
 * columns likewise. Decodes the span of rows between the first and last
 * asked for, in panels of at most fm_panel_budget(ctl) bytes of doubles (at
 * least one column each): the decoding behind R's x[i, j].
 * Errors: FM_EARG (an index outside the matrix, naming it; ld < n_rows; a
 *         count that does not match a NULL index); FM_ENOMEM;
 *         FM_ECANCELLED (ctl->cancel, polled before each panel); those of
 *         fm_panel_decode. out is unspecified after an error.
 * Owns:   borrows everything; writes only out. Source: codec/panel_gather.c. */
FM_NODISCARD fm_status fm_panel_gather(const fm_mat *x, const fm_affine *aff,
                                       const int64_t *rows, int64_t n_rows, const int64_t *cols,
                                       int64_t n_cols, double *out, int64_t ld, const fm_ctl *ctl,
                                       fm_err *err);

/* Gather n cells: out[k] = X[rows[k], cols[k]] (0-based), for R's x[i] with
 * linear or matrix indices. The distinct columns asked for are decoded
 * whole, in panels within fm_panel_budget(ctl), each column once.
 * Errors and ownership as fm_panel_gather. */
FM_NODISCARD fm_status fm_panel_gather_cells(const fm_mat *x, const fm_affine *aff,
                                             const int64_t *rows, const int64_t *cols, int64_t n,
                                             double *out, const fm_ctl *ctl, fm_err *err);

/* Panel geometry under a byte budget for the double panel: the number of
 * rows per panel (all rows when they fit at least min_cols columns) and
 * columns per panel. Both are >= 1. */
typedef struct fm_panel_plan {
  int64_t rows; /* rows per panel */
  int64_t cols; /* columns per panel */
} fm_panel_plan;

/* "A handful of columns": below this many full-height columns per panel the
 * plan tiles rows too. */
#define FM_PANEL_MIN_COLS 8

/* rows * cols * 8 <= budget_bytes whenever budget_bytes >= 8 (a smaller
 * budget still gives a 1 x 1 panel). budget_bytes 0 means
 * FM_PANEL_DEFAULT_BUDGET.
 * All rows are used when min(n_cols, FM_PANEL_MIN_COLS) columns fit;
 * otherwise cols = min(n_cols, FM_PANEL_MIN_COLS, budget / 8) and rows fill
 * the rest (a multiple of 4 for BED2 when >= 4, so panels start on byte
 * boundaries). rows and cols stay <= INT_MAX (BLAS integers). */
fm_panel_plan fm_panel_plan_for(const fm_mat *x, size_t budget_bytes);

/* Default panel budget (bytes). */
#define FM_PANEL_DEFAULT_BUDGET ((size_t)64 << 20)

/* The panel budget of a call: ctl->panel_bytes when nonzero, else
 * FM_PANEL_DEFAULT_BUDGET (also for ctl NULL). Products and statistics
 * plan their panels and blocks with it; tests make it tiny to exercise
 * block edges. */
size_t fm_panel_budget(const fm_ctl *ctl);

#endif
