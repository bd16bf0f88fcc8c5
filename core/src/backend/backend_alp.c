/* backend_alp.c: products of ALP matrices with decode fused into the
 * multiply (fm_backend_alp.h): vectors of up to 8 columns are decoded into a
 * stack buffer and consumed while they are in cache. The loops are written
 * so that GCC vectorizes them at -O2 (R's default), whose cost model takes
 * only loops without runtime alias checks or scalar epilogues: restrict
 * pointers, and bodies unrolled by hand. */
#define _POSIX_C_SOURCE 200809L /* fm_fault.h */
#include "fm/fm_backend_alp.h"

#include "codec/codec_alp_impl.h"
#include "fm/fm_fault.h"

#define COL_GROUP 8   /* columns decoded together (8 x 8 KiB buffers) */
#define ROW_CHUNK 256 /* rows of an X b update: 8 x 2 KiB of x, 2 KiB of y */
#define COL_TILE 256  /* columns per tile: the reuse of a y or b block */

/* The transform of logical column j, as fm_panel_decode applies it. */
static alp_affine affine_of(const fm_affine *aff, int64_t j) {
  alp_affine a;
  a.identity = fm_affine_is_identity(aff);
  a.has_fill = fm_affine_has_fill(aff);
  fm_affine_at(aff, j, &a.center, &a.scale, &a.fill);
  return a;
}

/* y[i] += sum_b x[b][i] w[b] for 4 columns, and for 1. */
#define AXPY4(i) y[i] += x0[i] * w0 + x1[i] * w1 + x2[i] * w2 + x3[i] * w3
#define AXPY1(i) y[i] += x0[i] * w0

/* BODY(i) for i in [i0, i1), written four times a step so that GCC's -O2
 * (basic-block vectorization only) uses vector instructions. */
#define FOR_UNROLLED4(i0, i1, BODY)                                                               \
  do {                                                                                            \
    int64_t i_ = (i0);                                                                            \
    for (; i_ + 4 <= (i1); i_ += 4) {                                                             \
      BODY(i_);                                                                                   \
      BODY(i_ + 1);                                                                               \
      BODY(i_ + 2);                                                                               \
      BODY(i_ + 3);                                                                               \
    }                                                                                             \
    for (; i_ < (i1); i_++) BODY(i_);                                                             \
  } while (0)

/* y[0..len) += sum_b x[b][0..len) * w[b] for nb (1..COL_GROUP) columns,
 * in chunks of ROW_CHUNK rows so that x and y stay in L1. */
static void axpy_group(double *restrict y, double (*x)[FM_ALP_VECTOR_MAX], const double *w,
                       int nb, int64_t len) {
  for (int64_t i0 = 0; i0 < len; i0 += ROW_CHUNK) {
    const int64_t i1 = i0 + ROW_CHUNK < len ? i0 + ROW_CHUNK : len;
    int b = 0;
    for (; b + 4 <= nb; b += 4) {
      const double *restrict x0 = x[b], *restrict x1 = x[b + 1], *restrict x2 = x[b + 2],
                             *restrict x3 = x[b + 3];
      const double w0 = w[b], w1 = w[b + 1], w2 = w[b + 2], w3 = w[b + 3];
      FOR_UNROLLED4(i0, i1, AXPY4);
    }
    for (; b < nb; b++) {
      const double *restrict x0 = x[b];
      const double w0 = w[b];
      FOR_UNROLLED4(i0, i1, AXPY1);
    }
  }
}

/* out[b] = sum_i x[b][i] * v[i] for nb columns, four partial sums each (GCC
 * keeps them in two vector registers). */
static void dot_group(double (*x)[FM_ALP_VECTOR_MAX], const double *restrict v, int nb,
                      int64_t len, double *out) {
  for (int b = 0; b < nb; b++) {
    const double *restrict xb = x[b];
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= len; i += 4) {
      s0 += xb[i] * v[i];
      s1 += xb[i + 1] * v[i + 1];
      s2 += xb[i + 2] * v[i + 2];
      s3 += xb[i + 3] * v[i + 3];
    }
    for (; i < len; i++) s0 += xb[i] * v[i];
    out[b] = (s0 + s1) + (s2 + s3);
  }
}

static fm_status validate(const fm_product *p, const alp_view *v, fm_err *err) {
  const fm_mat *x = p->x;
  const int64_t b_rows = p->op == FM_OP_XB ? x->n_cols : x->n_rows;
  const int64_t y_rows = p->op == FM_OP_XB ? x->n_rows : x->n_cols;
  if (p->k < 1) return fm_err_set(err, FM_EARG, "alp product: k (%lld) must be >= 1", (long long)p->k);
  if (p->ldb < b_rows || p->ldb < 1 || p->ldy < y_rows || p->ldy < 1)
    return fm_err_set(err, FM_EARG,
                      "alp product: ldb (%lld) and ldy (%lld) must cover the %lld rows of b and "
                      "%lld of y",
                      (long long)p->ldb, (long long)p->ldy, (long long)b_rows, (long long)y_rows);
  if (!p->y || (!p->b && b_rows > 0))
    return fm_err_set(err, FM_EARG, "alp product: b and y must not be NULL");
  if (x->n_rows > v->n_rows || x->n_rows < 0 || x->n_cols < 0)
    return fm_err_set(err, FM_EARG, "alp product: the view's %lld x %lld exceeds the blob's %lld rows",
                      (long long)x->n_rows, (long long)x->n_cols, (long long)v->n_rows);
  const int64_t n_stored = x->n_stored_cols < v->n_cols ? x->n_stored_cols : v->n_cols;
  for (int64_t j = 0; j < x->n_cols; j++) {
    const int64_t s = x->col_index ? x->col_index[j] : j;
    if (s < 0 || s >= n_stored)
      return fm_err_set(err, FM_EARG,
                        "alp product: logical column %lld is stored column %lld, outside the "
                        "blob's %lld",
                        (long long)j, (long long)s, (long long)n_stored);
  }
  return FM_OK;
}

/* Rows [r0, r0 + len) of logical columns [j0, j1) into y. */
static void step(const fm_product *p, const alp_view *v, int64_t j0, int64_t j1, int64_t r0,
                 int64_t len) {
  const fm_mat *x = p->x;
  const int64_t k = p->k;
  const int is_xb = p->op == FM_OP_XB;
  double buf[COL_GROUP][FM_ALP_VECTOR_MAX];
  double w[COL_GROUP], dots[COL_GROUP];
  alp_affine aff[COL_GROUP];
  for (int64_t g = j0; g < j1; g += COL_GROUP) {
    const int nb = (int)(j1 - g < COL_GROUP ? j1 - g : COL_GROUP);
    for (int b = 0; b < nb; b++) {
      const int64_t j = g + b, s = x->col_index ? x->col_index[j] : j;
      aff[b] = affine_of(p->aff, j);
      alp_decode_rows(v, s, r0, len, &aff[b], buf[b]);
    }
    for (int64_t c = 0; c < k; c++) {
      if (is_xb) {
        for (int b = 0; b < nb; b++) w[b] = p->b[g + b + c * p->ldb];
        axpy_group(p->y + r0 + c * p->ldy, buf, w, nb, len);
      } else {
        dot_group(buf, p->b + r0 + c * p->ldb, nb, len, dots);
        for (int b = 0; b < nb; b++) p->y[g + b + c * p->ldy] += dots[b];
      }
    }
  }
}

/* step behind a jump point (fm_fault.h): a SIGBUS reading the blob's
 * mapping (its file truncated from outside) is FM_EIO naming the file. */
static fm_status step_guarded(const fm_product *p, const alp_view *v, int64_t j0, int64_t j1,
                              int64_t r0, int64_t len, fm_err *err) {
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) return fm_fault_caught(&j, err);
  step(p, v, j0, j1, r0, len);
  fm_fault_pop(&j);
  return FM_OK;
}

fm_status fm_backend_alp(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  if (!p || !p->x || p->x->codec != FM_CODEC_ALP || !p->x->data)
    return fm_err_set(err, FM_EUNSUPPORTED, "the alp backend takes alp matrices only");
  if (p->op != FM_OP_XB && p->op != FM_OP_XTB)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "the alp backend computes X b and X' b only (the reference path computes "
                      "X X' b and column sums)");
  alp_view v;
  alp_view_of(p->x->data, &v);
  fm_status st = validate(p, &v, err);
  if (st != FM_OK) return st;

  const fm_mat *x = p->x;
  const int64_t n = x->n_rows, q = x->n_cols, k = p->k;
  const int is_xb = p->op == FM_OP_XB;
  const int64_t y_rows = is_xb ? n : q;
  for (int64_t c = 0; c < k; c++)
    for (int64_t i = 0; i < y_rows; i++) p->y[i + c * p->ldy] = 0.0;
  if (n == 0 || q == 0) return FM_OK;

  const int64_t vs = v.vs, n_vec = (n - 1) / vs + 1;
  const int64_t n_tiles = (q - 1) / COL_TILE + 1;
  const double total = (double)n_tiles * (double)n_vec;
  double done = 0.0;
  for (int64_t j0 = 0; j0 < q; j0 += COL_TILE) {
    const int64_t j1 = j0 + COL_TILE < q ? j0 + COL_TILE : q;
    for (int64_t t = 0; t < n_vec; t++) {
      if (fm_ctl_cancelled(ctl))
        return fm_err_set(err, FM_ECANCELLED, "alp product cancelled after %.0f of %.0f blocks",
                          done, total);
      const int64_t r0 = t * vs, len = n - r0 < vs ? n - r0 : vs;
      st = step_guarded(p, &v, j0, j1, r0, len, err);
      if (st != FM_OK) return st;
      done += 1.0;
      fm_ctl_progress(ctl, done, total);
    }
  }
  return FM_OK;
}
