/* gram.c: X'X and XX' of a matrix view in one streamed pass (fm_gram.h).
 * X'X streams row panels, XX' column panels; each panel is one dsyrk. */
#include "fm/fm_gram.h"

#include "base/blas.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* out[j, i] = out[i, j] for i > j: the upper triangle from the lower. */
static void mirror_lower(double *out, int64_t m, int64_t ld) {
  for (int64_t j = 0; j < m; j++)
    for (int64_t i = j + 1; i < m; i++) out[j + i * ld] = out[i + j * ld];
}

/* One pass: the summed dimension (rows of X for X'X, columns for XX') in
 * blocks of `step`; each block as a k x m panel A (k the block, m the
 * result's order) and out += A' A. X'X decodes row panels, which are
 * already k x p; XX' decodes column panels (n x k) and transposes them. */
static fm_status gram_pass(const fm_mat *x, const fm_affine *aff, int cross, double *out,
                           int64_t ld, const fm_ctl *ctl, fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  const int64_t m = cross ? p : n, len = cross ? n : p;
  /* XX' holds a panel and its transpose within the budget */
  int64_t step = (int64_t)(fm_panel_budget(ctl) / (cross ? 1 : 2) / sizeof(double)) / m;
  if (step < 1) step = 1;
  if (step > len) step = len;
  if (step > INT_MAX) step = INT_MAX; /* dsyrk's k is a BLAS integer */
  const size_t cells = (size_t)step * (size_t)m;
  double *panel = malloc(cells * sizeof(double));
  double *tr = cross ? NULL : malloc(cells * sizeof(double));
  if (!panel || (!cross && !tr)) {
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
    const double *a = panel;
    if (!cross) {
      for (int64_t j = 0; j < k; j++)
        for (int64_t i = 0; i < n; i++) tr[j + i * k] = panel[i + j * n];
      a = tr;
      fm_mat_evict_cols(x, s0, k);
    }
    const fm_blas_int kk = (fm_blas_int)k;
    dsyrk_("L", "T", &mm, &kk, &one, a, &kk, &one, out, &ldo, FM_FCONE, FM_FCONE);
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
