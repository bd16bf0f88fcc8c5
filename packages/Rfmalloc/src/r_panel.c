/* r_panel.c: .Call entry points for bounded panel decode, panel products
 * through the backend registry, the panel budget and backend listing. */
#include "r_mat.h"

#include "fm/fm_backend.h"

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

/* op 1: X %*% b (n x k); op 2: t(X) %*% b (p x k). Returns list(y, backend). */
SEXP fmr_product(SEXP storage, SEXP spec, SEXP cols, SEXP aff_list, SEXP s_op, SEXP b) {
  int nprot = 0;
  fm_mat x;
  fm_affine aff;
  fmr_mat_from(storage, spec, cols, &x);
  fmr_affine_from(aff_list, x.n_cols, &aff);
  int op = Rf_asInteger(s_op);
  if (TYPEOF(b) != REALSXP || !Rf_isMatrix(b)) fmr_stop(FM_EARG, "the right operand must be a double matrix");
  int64_t inner = op == FM_OP_XB ? x.n_cols : x.n_rows;
  int64_t outer = op == FM_OP_XB ? x.n_rows : x.n_cols;
  if (Rf_nrows(b) != inner)
    fmr_stop(FM_EMISMATCH, "non-conformable: the matrix has %lld %s but the operand has %d rows",
             (long long)inner, op == FM_OP_XB ? "columns" : "rows", Rf_nrows(b));
  if (outer > INT_MAX) fmr_stop(FM_EARG, "the product would have 2^31 rows or more");
  int k = Rf_ncols(b);
  SEXP y = PROTECT(Rf_allocMatrix(REALSXP, (int)outer, k)); nprot++;
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
  SET_VECTOR_ELT(res, 0, y);
  if (outer > 0 && k > 0) {
    fm_product p = {(fm_op)op, &x, &aff, REAL_RO(b), inner > 0 ? inner : 1, k, REAL(y), outer};
    fm_ctl ctl = fmr_ctl();
    const char *used = NULL;
    fm_err err;
    if (inner == 0) {
      memset(REAL(y), 0, sizeof(double) * (size_t)outer * (size_t)k);
      used = "none";
    } else if (fm_backend_run(&p, &ctl, &used, &err) != FM_OK) {
      UNPROTECT(nprot);
      fmr_raise(&err);
    }
    SET_VECTOR_ELT(res, 1, Rf_mkString(used));
  } else {
    SET_VECTOR_ELT(res, 1, Rf_mkString("none"));
  }
  UNPROTECT(nprot);
  return res;
}

SEXP fmr_panel_budget(SEXP s_bytes) {
  if (!Rf_isNull(s_bytes)) {
    double b = Rf_asReal(s_bytes);
    if (!(b >= 0)) fmr_stop(FM_EARG, "the panel budget must be a non-negative number of bytes");
    fm_panel_set_budget((size_t)b);
  }
  return Rf_ScalarReal((double)fm_panel_budget());
}

SEXP fmr_backends(void) {
  int n = fm_backend_count();
  SEXP out = PROTECT(Rf_allocVector(STRSXP, n + 1));
  for (int i = 0; i < n; i++) SET_STRING_ELT(out, i, Rf_mkChar(fm_backend_name(i)));
  SET_STRING_ELT(out, n, Rf_mkChar("reference"));
  UNPROTECT(1);
  return out;
}

/* Test backends, registered only by the test suite (fmalloc_test_backend):
 * "decline_all" declines every product; "xb_k1" computes only X %*% b with
 * one column, element by element, and declines everything else. */
static fm_status decline_all(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud; (void)p; (void)ctl;
  return fm_err_set(err, FM_EUNSUPPORTED, "decline_all declines every product");
}

static fm_status xb_k1(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud; (void)ctl;
  if (p->op != FM_OP_XB || p->k != 1)
    return fm_err_set(err, FM_EUNSUPPORTED, "xb_k1 only computes X %%*%% b with one column");
  const fm_mat *x = p->x;
  double *col = malloc(sizeof(double) * (size_t)(x->n_rows > 0 ? x->n_rows : 1));
  if (!col) return fm_err_set(err, FM_ENOMEM, "xb_k1 could not allocate a column");
  for (int64_t i = 0; i < x->n_rows; i++) p->y[i] = 0;
  for (int64_t j = 0; j < x->n_cols; j++) {
    fm_status st = fm_panel_decode(x, p->aff, 0, x->n_rows, j, 1, col, x->n_rows, err);
    if (st != FM_OK) { free(col); return st; }
    for (int64_t i = 0; i < x->n_rows; i++) p->y[i] += col[i] * p->b[j];
  }
  free(col);
  return FM_OK;
}

SEXP fmr_test_backend(SEXP s_name, SEXP s_on) {
  const char *name = CHAR(STRING_ELT(s_name, 0));
  fm_backend_fn fn = strcmp(name, "decline_all") == 0 ? decline_all
                     : strcmp(name, "xb_k1") == 0     ? xb_k1
                                                      : NULL;
  if (!fn) fmr_stop(FM_EARG, "unknown test backend '%s'", name);
  fm_backend_unregister(name);
  if (Rf_asLogical(s_on)) {
    fm_err err;
    if (fm_backend_register(name, fn, NULL, &err) != FM_OK) fmr_raise(&err);
  }
  return R_NilValue;
}
