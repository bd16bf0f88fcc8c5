/* gram.c: X'X and XX' of a matrix view in one streamed pass (fm_gram.h).
 * X'X streams row panels, XX' column panels; each panel is one dsyrk. */
#include "fm/fm_gram.h"

#include "base/blas.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out[j, i] = out[i, j] for i > j: the upper triangle from the lower. */
static void mirror_lower(double *out, int64_t m, int64_t ld) {
  for (int64_t j = 0; j < m; j++)
    for (int64_t i = j + 1; i < m; i++) out[j + i * ld] = out[i + j * ld];
}

/* Whether the m values at v are all finite. */
static int all_finite(const double *v, size_t m) {
  for (size_t i = 0; i < m; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

/* b (cols x rows) = a' for a rows x cols, both column-major. */
static void transpose(const double *a, int64_t rows, int64_t cols, double *b) {
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++) b[j + i * cols] = a[i + j * rows];
}

/* One pass over the summed dimension (rows of X for X'X, columns for XX')
 * in blocks of k: out += B B' with B the block as an m x k matrix (m the
 * result's order). X'X decodes row panels (k x p) and transposes them, XX'
 * decodes column panels (n x k), which are B already. A block of finite
 * values goes to dsyrk 'N' (reference BLAS's fast loop order; it skips
 * zero multipliers, which only matters for NaN and Inf); a block with NaN
 * or Inf goes to dsyrk 'T' on B', which sums every product, so they
 * propagate as in base R (which takes its own loops then). */
static fm_status gram_pass(const fm_mat *x, const fm_affine *aff, int cross, double *out,
                           int64_t ld, const fm_ctl *ctl, fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  const int64_t m = cross ? p : n, len = cross ? n : p;
  /* a block and its transpose, each within half the budget */
  int64_t step = (int64_t)(fm_panel_budget(ctl) / 2 / sizeof(double)) / m;
  if (step < 1) step = 1;
  if (step > len) step = len;
  if (step > INT_MAX) step = INT_MAX; /* dsyrk's k is a BLAS integer */
  const size_t cells = (size_t)step * (size_t)m;
  double *panel = malloc(cells * sizeof(double)), *tr = malloc(cells * sizeof(double));
  if (!panel || !tr) {
    free(panel);
    free(tr);
    return fm_err_set(err, FM_ENOMEM, "gram: cannot allocate a %lld x %lld panel",
                      (long long)step, (long long)m);
  }
  const fm_blas_int mm = (fm_blas_int)m, ldo = (fm_blas_int)ld;
  const double one = 1.0, total = (double)((len + step - 1) / step);
  double done = 0;
  fm_status st = FM_OK;
  for (int64_t s0 = 0; s0 < len; s0 += step) {
    const int64_t k = len - s0 < step ? len - s0 : step;
    if (fm_ctl_cancelled(ctl)) {
      st = fm_err_set(err, FM_ECANCELLED, "%s cancelled after %.0f of %.0f panels",
                      cross ? "crossprod" : "tcrossprod", done, total);
      break;
    }
    st = cross ? fm_panel_decode(x, aff, s0, k, 0, p, panel, k, err)
               : fm_panel_decode(x, aff, 0, n, s0, k, panel, n, err);
    if (st != FM_OK) break;
    if (!cross) fm_mat_evict_stream(x, s0, k);
    const fm_blas_int kk = (fm_blas_int)k;
    if (all_finite(panel, (size_t)k * (size_t)m)) {
      const double *b = panel; /* m x k */
      if (cross) {
        transpose(panel, k, p, tr);
        b = tr;
      }
      dsyrk_("L", "N", &mm, &kk, &one, b, &mm, &one, out, &ldo, FM_FCONE, FM_FCONE);
    } else {
      const double *a = panel; /* k x m */
      if (!cross) {
        transpose(panel, n, k, tr);
        a = tr;
      }
      dsyrk_("L", "T", &mm, &kk, &one, a, &kk, &one, out, &ldo, FM_FCONE, FM_FCONE);
    }
    fm_ctl_progress(ctl, ++done, total);
  }
  /* X'X consumes every column only at its last row panel */
  if (cross && st == FM_OK) fm_mat_evict_cols(x, 0, p);
  free(panel);
  free(tr);
  return st;
}

fm_status fm_gram(const fm_mat *x, const fm_affine *aff, fm_gram_kind kind, double *out,
                  int64_t ld, const fm_ctl *ctl, fm_err *err) {
  if (!x || !out) return fm_err_set(err, FM_EARG, "gram: NULL argument");
  if (kind != FM_GRAM_CROSS && kind != FM_GRAM_TCROSS)
    return fm_err_set(err, FM_EARG, "gram: unknown kind %d", (int)kind);
  const int64_t m = kind == FM_GRAM_CROSS ? x->n_cols : x->n_rows;
  if (ld < m || ld < 1)
    return fm_err_set(err, FM_EARG, "gram: ld %lld is below the %lld rows of the result",
                      (long long)ld, (long long)m);
  if (!fm_blas_dim_ok(m) || !fm_blas_dim_ok(ld))
    return fm_err_set(err, FM_EARG, "gram: a %lld x %lld result exceeds BLAS integers",
                      (long long)m, (long long)m);
  for (int64_t j = 0; j < m; j++) memset(out + j * ld, 0, (size_t)m * sizeof(double));
  if (x->n_rows == 0 || x->n_cols == 0) return FM_OK;
  fm_status st = gram_pass(x, aff, kind == FM_GRAM_CROSS, out, ld, ctl, err);
  if (st == FM_OK) mirror_lower(out, m, ld);
  return st;
}
