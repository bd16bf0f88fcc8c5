/* panel.c: matrix views over typed storage and bounded panel decode. */
#define _DEFAULT_SOURCE /* sigjmp_buf, sigsetjmp (fm_fault.h) */
#include "fm/fm_panel.h"

#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_fault.h"

#include "codec_alp_impl.h"

#include "base/pages.h"

#include <limits.h>
#include <math.h>
#include <string.h>

size_t fm_panel_budget(const fm_ctl *ctl) {
  return ctl && ctl->panel_bytes ? ctl->panel_bytes : FM_PANEL_DEFAULT_BUDGET;
}

static const char *codec_name(fm_codec_id c) {
  switch (c) {
  case FM_CODEC_F64: return "f64";
  case FM_CODEC_I32: return "i32";
  case FM_CODEC_BED2: return "bed2";
  case FM_CODEC_DOS8: return "dos8";
  case FM_CODEC_EXT: return "external";
  case FM_CODEC_ALP: return "alp";
  default: return "unknown";
  }
}

int64_t fm_mat_min_stride(fm_codec_id codec, int64_t n_rows) {
  if (n_rows < 0) return -1;
  switch (codec) {
  case FM_CODEC_F64: return n_rows > INT64_MAX / 8 ? -1 : 8 * n_rows;
  case FM_CODEC_I32: return n_rows > INT64_MAX / 4 ? -1 : 4 * n_rows;
  case FM_CODEC_BED2: return fm_codec_bed2_col_bytes(n_rows);
  case FM_CODEC_DOS8: return n_rows;
  case FM_CODEC_EXT: return 0;
  case FM_CODEC_ALP: return 0;
  default: return -1;
  }
}

static int64_t elem_align(fm_codec_id codec) {
  return codec == FM_CODEC_F64 ? 8 : codec == FM_CODEC_I32 ? 4 : 1;
}

fm_status fm_mat_init(fm_mat *x, fm_codec_id codec, const void *data, int64_t n_rows,
                      int64_t n_cols, int64_t col_stride, fm_err *err) {
  if (!x) return fm_err_set(err, FM_EARG, "fm_mat_init: x must not be NULL");
  memset(x, 0, sizeof *x);
  if (codec == FM_CODEC_ALP)
    return fm_err_set(err, FM_EARG, "fm_mat_init: an alp matrix is made by fm_mat_init_alp, "
                                    "which checks the blob");
  if (codec != FM_CODEC_F64 && codec != FM_CODEC_I32 && codec != FM_CODEC_BED2 &&
      codec != FM_CODEC_DOS8)
    return fm_err_set(err, FM_EARG, "fm_mat_init: unknown codec id %d", (int)codec);
  if (n_rows < 0 || n_cols < 0)
    return fm_err_set(err, FM_EARG, "fm_mat_init: n_rows (%lld) and n_cols (%lld) must be >= 0",
                      (long long)n_rows, (long long)n_cols);
  const int64_t min_stride = fm_mat_min_stride(codec, n_rows);
  if (min_stride < 0)
    return fm_err_set(err, FM_EARG, "fm_mat_init: %lld rows of %s overflow a byte count",
                      (long long)n_rows, codec_name(codec));
  if (n_cols > 0 && col_stride < min_stride)
    return fm_err_set(err, FM_EARG,
                      "fm_mat_init: col_stride %lld bytes cannot hold %lld rows of %s (need %lld)",
                      (long long)col_stride, (long long)n_rows, codec_name(codec),
                      (long long)min_stride);
  int64_t extent = 0;
  if (n_cols > 0 && !fm_mul_ok(n_cols - 1, col_stride, &extent))
    return fm_err_set(err, FM_EARG, "fm_mat_init: %lld columns of stride %lld overflow",
                      (long long)n_cols, (long long)col_stride);
  if (!data && n_rows > 0 && n_cols > 0)
    return fm_err_set(err, FM_EARG, "fm_mat_init: data is NULL for a %lld x %lld matrix",
                      (long long)n_rows, (long long)n_cols);
  const int64_t a = elem_align(codec);
  if (a > 1 && n_rows > 0 && n_cols > 0) {
    if (((uintptr_t)data % (uintptr_t)a) != 0 || (n_cols > 1 && col_stride % a != 0))
      return fm_err_set(err, FM_EARG,
                        "fm_mat_init: %s data and col_stride (%lld) must be %lld-byte aligned",
                        codec_name(codec), (long long)col_stride, (long long)a);
  }
  x->codec = codec;
  x->data = data;
  x->n_rows = n_rows;
  x->n_cols = n_cols;
  x->col_stride = col_stride;
  x->col_index = NULL;
  return FM_OK;
}

fm_status fm_mat_init_ext(fm_mat *x, const fm_ext_codec *ext, const void *data, int64_t n_rows,
                          int64_t n_cols, int64_t col_stride, fm_err *err) {
  if (!x) return fm_err_set(err, FM_EARG, "fm_mat_init_ext: x must not be NULL");
  memset(x, 0, sizeof *x);
  if (!ext || !ext->decode)
    return fm_err_set(err, FM_EARG, "fm_mat_init_ext: the external codec has no decoder");
  if (n_rows < 0 || n_cols < 0)
    return fm_err_set(err, FM_EARG,
                      "fm_mat_init_ext: n_rows (%lld) and n_cols (%lld) must be >= 0",
                      (long long)n_rows, (long long)n_cols);
  if (!data && n_rows > 0 && n_cols > 0)
    return fm_err_set(err, FM_EARG,
                      "fm_mat_init_ext: data is NULL for a %lld x %lld matrix of codec '%s'",
                      (long long)n_rows, (long long)n_cols, ext->name ? ext->name : "?");
  x->codec = FM_CODEC_EXT;
  x->data = data;
  x->n_rows = n_rows;
  x->n_cols = n_cols;
  x->col_stride = col_stride;
  x->ext = ext;
  x->n_stored_cols = n_cols;
  return FM_OK;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

fm_panel_plan fm_panel_plan_for(const fm_mat *x, size_t budget_bytes) {
  fm_panel_plan plan = {1, 1};
  if (!x) return plan;
  if (budget_bytes == 0) budget_bytes = FM_PANEL_DEFAULT_BUDGET;
  const int64_t dim_max = INT_MAX;
  const int64_t n = max64(x->n_rows, 1), p = max64(x->n_cols, 1);
  size_t cap_sz = budget_bytes / sizeof(double);
  int64_t cap = cap_sz > (size_t)INT64_MAX ? INT64_MAX : (int64_t)cap_sz;
  if (cap < 1) cap = 1;
  const int64_t handful = min64(p, FM_PANEL_MIN_COLS);
  if (n <= dim_max && n <= cap / handful) {
    plan.rows = n;
    plan.cols = min64(min64(p, cap / n), dim_max);
  } else {
    plan.cols = max64(1, min64(handful, cap));
    plan.rows = max64(1, min64(min64(n, cap / plan.cols), dim_max));
    if (x->codec == FM_CODEC_BED2 && plan.rows >= 4 && plan.rows < n) plan.rows &= ~(int64_t)3;
  }
  return plan;
}

/* The affine parameters of logical column j. */
static void decode_f64(const double *src, int64_t n, int identity, double c, double s, double f,
                       int has_fill, double *out) {
  if (identity) {
    memcpy(out, src, (size_t)n * sizeof(double));
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double v = src[i];
    if (isnan(v))
      out[i] = has_fill ? f : v;
    else
      out[i] = (v - c) * s;
  }
}

static void decode_i32(const int32_t *src, int64_t n, double c, double s, double f,
                       double *out) {
  for (int64_t i = 0; i < n; i++) {
    int32_t v = src[i];
    out[i] = v == INT32_MIN ? f : ((double)v - c) * s;
  }
}

/* An external codec decodes runs of consecutive stored columns (the whole
 * panel when there is no column index); the core then applies the affine
 * transform in place, with the rule of decode_f64 (any NaN is missing). */
static fm_status decode_ext(const fm_mat *x, const fm_affine *aff, int64_t r0, int64_t n_rows,
                            int64_t c0, int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  if (!x->ext || !x->ext->decode)
    return fm_err_set(err, FM_EARG, "fm_panel_decode: an external-codec matrix has no decoder");
  const int64_t n_stored = x->n_stored_cols;
  int64_t jj = 0;
  while (jj < n_cols) {
    const int64_t s0 = x->col_index ? x->col_index[c0 + jj] : c0 + jj;
    int64_t run = 1;
    if (x->col_index) {
      while (jj + run < n_cols && x->col_index[c0 + jj + run] == s0 + run) run++;
    } else {
      run = n_cols;
    }
    if (s0 < 0 || s0 > n_stored - run)
      return fm_err_set(err, FM_EARG,
                        "fm_panel_decode: stored columns %lld..%lld lie outside the %lld columns "
                        "of codec '%s'",
                        (long long)s0, (long long)(s0 + run - 1), (long long)n_stored,
                        x->ext->name ? x->ext->name : "?");
    fm_status st = x->ext->decode(x, r0, n_rows, s0, run, out + jj * ld, ld, err);
    if (st != FM_OK) return st;
    jj += run;
  }
  if (fm_affine_is_identity(aff)) return FM_OK;
  const int has_fill = fm_affine_has_fill(aff);
  for (jj = 0; jj < n_cols; jj++) {
    double cj, sj, fj;
    fm_affine_at(aff, c0 + jj, &cj, &sj, &fj);
    double *o = out + jj * ld;
    for (int64_t i = 0; i < n_rows; i++) {
      const double v = o[i];
      o[i] = isnan(v) ? (has_fill ? fj : v) : (v - cj) * sj;
    }
  }
  return FM_OK;
}

/* Rows below which building dos8's 256-entry table costs more than it saves. */
#define DOS8_LUT_MIN_ROWS 64

static fm_status decode_panel(const fm_mat *x, const fm_affine *aff, int64_t r0, int64_t n_rows,
                              int64_t c0, int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  if (!x) return fm_err_set(err, FM_EARG, "fm_panel_decode: x must not be NULL");
  if (r0 < 0 || n_rows < 0 || r0 > x->n_rows - n_rows)
    return fm_err_set(err, FM_EARG,
                      "fm_panel_decode: %lld rows from row %lld lie outside the %lld rows of x",
                      (long long)n_rows, (long long)r0, (long long)x->n_rows);
  if (c0 < 0 || n_cols < 0 || c0 > x->n_cols - n_cols)
    return fm_err_set(err, FM_EARG,
                      "fm_panel_decode: %lld columns from column %lld lie outside the %lld "
                      "columns of x",
                      (long long)n_cols, (long long)c0, (long long)x->n_cols);
  if (ld < n_rows || ld < 1)
    return fm_err_set(err, FM_EARG, "fm_panel_decode: ld (%lld) is less than n_rows (%lld)",
                      (long long)ld, (long long)n_rows);
  if (n_rows == 0 || n_cols == 0) return FM_OK;
  if (!out || !x->data)
    return fm_err_set(err, FM_EARG, "fm_panel_decode: out and x->data must not be NULL");
  const fm_codec_id codec = x->codec;
  if (codec == FM_CODEC_EXT) return decode_ext(x, aff, r0, n_rows, c0, n_cols, out, ld, err);
  if (codec != FM_CODEC_F64 && codec != FM_CODEC_I32 && codec != FM_CODEC_BED2 &&
      codec != FM_CODEC_DOS8 && codec != FM_CODEC_ALP)
    return fm_err_set(err, FM_EARG, "fm_panel_decode: unknown codec id %d", (int)codec);
  if (x->col_index) {
    for (int64_t jj = 0; jj < n_cols; jj++)
      if (x->col_index[c0 + jj] < 0)
        return fm_err_set(err, FM_EARG, "fm_panel_decode: col_index[%lld] = %lld is negative",
                          (long long)(c0 + jj), (long long)x->col_index[c0 + jj]);
  }
  alp_view alp = {NULL, 0, 0, 0, 0};
  if (codec == FM_CODEC_ALP) {
    alp_view_of(x->data, &alp);
    for (int64_t jj = 0; jj < n_cols; jj++) {
      const int64_t s = x->col_index ? x->col_index[c0 + jj] : c0 + jj;
      if (s >= alp.n_cols || s >= x->n_stored_cols || x->n_rows > alp.n_rows)
        return fm_err_set(err, FM_EARG,
                          "fm_panel_decode: stored column %lld or %lld rows lie outside the alp "
                          "blob's %lld x %lld",
                          (long long)s, (long long)x->n_rows, (long long)alp.n_rows,
                          (long long)alp.n_cols);
    }
  }
  const int identity = fm_affine_is_identity(aff);
  const int has_fill = fm_affine_has_fill(aff);
  const uint8_t *base = (const uint8_t *)x->data;
  double lut[256];
  for (int64_t jj = 0; jj < n_cols; jj++) {
    const int64_t j = c0 + jj;
    const int64_t s = x->col_index ? x->col_index[j] : j;
    const uint8_t *col = base + s * x->col_stride;
    double *o = out + jj * ld;
    double cj, sj, fj;
    fm_affine_at(aff, j, &cj, &sj, &fj);
    switch (codec) {
    case FM_CODEC_F64:
      decode_f64((const double *)(const void *)col + r0, n_rows, identity, cj, sj, fj, has_fill,
                 o);
      break;
    case FM_CODEC_I32:
      decode_i32((const int32_t *)(const void *)col + r0, n_rows, cj, sj, fj, o);
      break;
    case FM_CODEC_BED2:
      fm_codec_bed2_lut(cj, sj, fj, lut);
      fm_codec_bed2_decode_col(col, r0, n_rows, lut, o);
      break;
    case FM_CODEC_DOS8:
      if (n_rows >= DOS8_LUT_MIN_ROWS) {
        fm_codec_dos8_lut(cj, sj, fj, lut);
        fm_codec_dos8_decode_col(col + r0, n_rows, lut, o);
      } else {
        for (int64_t i = 0; i < n_rows; i++) {
          uint8_t q = col[r0 + i];
          o[i] = q == FM_DOS8_MISSING ? fj : ((double)q / FM_DOS8_STEPS - cj) * sj;
        }
      }
      break;
    case FM_CODEC_ALP: {
      const alp_affine a = {identity, has_fill, cj, sj, fj};
      alp_decode_rows(&alp, s, r0, n_rows, &a, o);
      break;
    }
    case FM_CODEC_EXT: /* decoded by decode_ext above */
      break;
    }
  }
  return FM_OK;
}

/* A SIGBUS reading x's mapping (its file truncated from outside) is an
 * FM_EIO naming the file (fm_fault.h): decode_panel allocates nothing. */
fm_status fm_panel_decode(const fm_mat *x, const fm_affine *aff, int64_t r0, int64_t n_rows,
                          int64_t c0, int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) return fm_fault_caught(&j, err);
  const fm_status st = decode_panel(x, aff, r0, n_rows, c0, n_cols, out, ld, err);
  fm_fault_pop(&j);
  return st;
}

/* Stored columns [s0, s1): their pages but the one holding byte s1 (the
 * next column of a forward stream may start there), or, with outward, that
 * page too (a column index: the page's other columns are not next). */
static void evict_run(const fm_mat *x, int64_t s0, int64_t s1, int outward) {
  (void)fm_pages_release(x->data, (size_t)(s0 * x->col_stride), (size_t)(s1 * x->col_stride),
                         outward ? FM_PAGES_OUTWARD : FM_PAGES_DOWN, NULL);
}

static int evictable(const fm_mat *x, int64_t c0, int64_t n_cols) {
  return x && (x->flags & FM_MAT_EVICTABLE) && x->codec != FM_CODEC_EXT &&
         x->codec != FM_CODEC_ALP && x->data && n_cols > 0 && c0 >= 0 &&
         c0 + n_cols <= x->n_cols && x->col_stride > 0;
}

void fm_mat_evict_cols(const fm_mat *x, int64_t c0, int64_t n_cols) {
  if (!evictable(x, c0, n_cols)) return;
  if (!x->col_index) {
    evict_run(x, c0, c0 + n_cols, 0);
    return;
  }
  int64_t run0 = x->col_index[c0], prev = run0;
  for (int64_t j = c0 + 1; j < c0 + n_cols; j++) {
    const int64_t s = x->col_index[j];
    if (s != prev + 1) {
      evict_run(x, run0, prev + 1, 1);
      run0 = s;
    }
    prev = s;
  }
  evict_run(x, run0, prev + 1, 1);
}

void fm_mat_evict_stream(const fm_mat *x, int64_t c0, int64_t n_cols) {
  fm_mat_evict_cols(x, c0, n_cols);
  if (!evictable(x, c0, n_cols)) return;
  /* one page table's span: the most that one fault maps (a PMD-mapped huge
   * page; fault-around and large folios map less) */
  const size_t ps = fm_page_size(), reach = ps / 8 * ps;
  const size_t first = (size_t)((x->col_index ? x->col_index[c0] : c0) * x->col_stride);
  (void)fm_pages_release(x->data, first > reach ? first - reach : 0, first, FM_PAGES_DOWN, NULL);
}
