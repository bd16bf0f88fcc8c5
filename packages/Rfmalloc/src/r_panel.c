/* r_panel.c: .Call entry points for bounded panel decode, panel products
 * through the backend registry (r_backend.c: which backends, forcing), and
 * the panel budget. */
#include "r_backend.h"
#include "r_mat.h"

#include <string.h>

/* Rows [r0, r0+n_rows) x logical columns [c0, c0+n_cols) (0-based) as doubles. */
SEXP fmr_panel_decode(SEXP storage, SEXP spec, SEXP cols, SEXP aff_list, SEXP s_r0, SEXP s_nr,
                      SEXP s_c0, SEXP s_nc) {
  fm_mat x;
  fm_affine aff;
  fmr_mat_from(storage, spec, cols, &x);
  fmr_affine_from(aff_list, x.n_cols, &aff);
  int64_t r0 = (int64_t)Rf_asReal(s_r0), nr = (int64_t)Rf_asReal(s_nr);
  int64_t c0 = (int64_t)Rf_asReal(s_c0), nc = (int64_t)Rf_asReal(s_nc);
  if (nr > INT_MAX || nc > INT_MAX) fmr_stop(FM_EARG, "a decoded block must have < 2^31 rows and columns");
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)nr, (int)nc));
  fm_err err;
  fm_status st = fm_panel_decode(&x, &aff, r0, nr, c0, nc, REAL(out), nr > 0 ? nr : 1, &err);
  UNPROTECT(1);
  if (st != FM_OK) fmr_raise(&err);
  return out;
}

/* op (fm_op): 1 X %*% b (n x k), 2 t(X) %*% b (p x k), 3 X %*% (t(X) %*% b)
 * (n x k), 4 column sums and sums of squares (p x 2; b NULL). The backend,
 * threads and panel budget come from the settings (fmr_ctl). Returns y, and notes
 * the backend that computed it (fmr_backend_note): "none" when y is empty or
 * all zeros by shape (an empty inner dimension). */
SEXP fmr_product(SEXP storage, SEXP spec, SEXP cols, SEXP aff_list, SEXP s_op, SEXP b) {
  int nprot = 0;
  fm_ctl ctl = fmr_ctl(); /* first: a bad option raises before anything is allocated */
  fm_mat x;
  fm_affine aff;
  fmr_mat_from(storage, spec, cols, &x);
  fmr_affine_from(aff_list, x.n_cols, &aff);
  int op = Rf_asInteger(s_op);
  if (op < FM_OP_XB || op > FM_OP_COLSUMS) fmr_stop(FM_EARG, "unknown product op %d", op);
  const int uses_b = op != FM_OP_COLSUMS;
  if (uses_b && (TYPEOF(b) != REALSXP || !Rf_isMatrix(b)))
    fmr_stop(FM_EARG, "the right operand must be a double matrix");
  /* rows of b, rows of y; for X (X' b) the inner dimensions are p and n */
  int64_t inner = op == FM_OP_XB ? x.n_cols : x.n_rows;
  int64_t outer = op == FM_OP_XB || op == FM_OP_XXTB ? x.n_rows : x.n_cols;
  if (uses_b && Rf_nrows(b) != inner)
    fmr_stop(FM_EMISMATCH, "non-conformable: the matrix has %lld %s but the operand has %d rows",
             (long long)inner, op == FM_OP_XB ? "columns" : "rows", Rf_nrows(b));
  if (outer > INT_MAX) fmr_stop(FM_EARG, "the product would have 2^31 rows or more");
  int k = uses_b ? Rf_ncols(b) : 2;
  /* whether y has any term to sum (else it is zero by shape) */
  const int has_terms = op == FM_OP_XB    ? x.n_cols > 0
                        : op == FM_OP_XTB ? x.n_rows > 0
                        : op == FM_OP_XXTB ? x.n_rows > 0 && x.n_cols > 0
                                           : 1;
  SEXP y = PROTECT(Rf_allocMatrix(REALSXP, (int)outer, k)); nprot++;
  if (outer > 0 && k > 0 && has_terms) {
    fm_product p = {(fm_op)op, &x, &aff, uses_b ? REAL_RO(b) : NULL,
                    inner > 0 ? inner : 1, k, REAL(y), outer};
    const char *used = NULL;
    fm_err err;
    fmr_finish(fm_backend_run(&p, &ctl, &used, &err), &err);
    fmr_backend_note(used);
  } else {
    if (outer > 0 && k > 0) memset(REAL(y), 0, sizeof(double) * (size_t)outer * (size_t)k);
    fmr_backend_note("none");
  }
  UNPROTECT(nprot);
  return y;
}
