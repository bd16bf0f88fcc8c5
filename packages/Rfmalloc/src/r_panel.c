/* r_panel.c: .Call entry points over a matrix view (r_mat.h): products
 * through the backend registry (r_backend.c: which backends, forcing),
 * Gram matrices, and the gathers behind x[i, j] and x[i]; every loop over
 * panels runs in the core. */
#include "r_backend.h"
#include "r_calls.h"
#include "r_mat.h"

#include "fm/fm_gram.h"

#include <string.h>

/* A call on one view: its settings and callbacks, its matrix and transform. */
typedef struct on_view {
  fm_ctl ctl;
  fm_mat x;
  fm_affine aff;
} on_view;

/* The settings first, so a bad option raises before the view is read or
 * anything is allocated. */
static void begin(SEXP h, on_view *v) {
  v->ctl = fmr_ctl();
  fmr_view_get(h, &v->x, &v->aff);
}

/* op (fm_op) on the matrix of view h: 1 X %*% b (n x k), 2 t(X) %*% b
 * (p x k), 3 X %*% (t(X) %*% b) (n x k), 4 column sums, sums of squares and
 * missing counts (p x 3; b NULL). na_fill: NULL, or one number that
 * replaces the view's fill for every column in this call (colSums(na.rm =
 * TRUE) sums with 0). The backend, threads and panel budget come from the
 * settings (fmr_ctl). Returns y, and notes the backend that computed it
 * (fmr_backend_note): "none" when y is empty or all zeros by shape (an
 * empty inner dimension). */
SEXP fmr_product(SEXP h, SEXP s_op, SEXP b, SEXP na_fill) {
  int nprot = 0;
  on_view v;
  begin(h, &v);
  if (!Rf_isNull(na_fill)) {
    if (TYPEOF(na_fill) != REALSXP || XLENGTH(na_fill) != 1)
      fmr_stop(FM_EARG, "na_fill must be NULL or one number");
    v.aff.fill = NULL;
    v.aff.fill_all_set = 1;
    v.aff.fill_all = REAL_RO(na_fill)[0];
  }
  int op = Rf_asInteger(s_op);
  if (op < FM_OP_XB || op > FM_OP_COLSUMS) fmr_stop(FM_EARG, "unknown product op %d", op);
  const int uses_b = op != FM_OP_COLSUMS;
  if (uses_b && (TYPEOF(b) != REALSXP || !Rf_isMatrix(b)))
    fmr_stop(FM_EARG, "the right operand must be a double matrix");
  /* rows of b, rows of y; for X (X' b) the inner dimensions are p and n */
  int64_t inner = op == FM_OP_XB ? v.x.n_cols : v.x.n_rows;
  int64_t outer = op == FM_OP_XB || op == FM_OP_XXTB ? v.x.n_rows : v.x.n_cols;
  if (uses_b && Rf_nrows(b) != inner)
    fmr_stop(FM_EMISMATCH, "non-conformable: the matrix has %lld %s but the operand has %d rows",
             (long long)inner, op == FM_OP_XB ? "columns" : "rows", Rf_nrows(b));
  if (outer > INT_MAX) fmr_stop(FM_EARG, "the product would have 2^31 rows or more");
  int k = uses_b ? Rf_ncols(b) : 3;
  /* whether y has any term to sum (else it is zero by shape) */
  const int has_terms = op == FM_OP_XB    ? v.x.n_cols > 0
                        : op == FM_OP_XTB ? v.x.n_rows > 0
                        : op == FM_OP_XXTB ? v.x.n_rows > 0 && v.x.n_cols > 0
                                           : 1;
  SEXP y = PROTECT(Rf_allocMatrix(REALSXP, (int)outer, k)); nprot++;
  if (outer > 0 && k > 0 && has_terms) {
    fm_product p = {(fm_op)op, &v.x, &v.aff, uses_b ? REAL_RO(b) : NULL,
                    inner > 0 ? inner : 1, k, REAL(y), outer};
    const char *used = NULL;
    fm_err err;
    fmr_finish(fm_backend_run(&p, &v.ctl, &used, &err), &err);
    fmr_backend_note(used);
  } else {
    if (outer > 0 && k > 0) memset(REAL(y), 0, sizeof(double) * (size_t)outer * (size_t)k);
    fmr_backend_note("none");
  }
  UNPROTECT(nprot);
  return y;
}

/* .Call(fmr_gram, h, kind): X'X (kind "cross", p x p) or XX' ("tcross",
 * n x n) in one streamed pass (fm_gram.h). */
SEXP fmr_gram(SEXP h, SEXP s_kind) {
  on_view v;
  begin(h, &v);
  const int cross = strcmp(CHAR(STRING_ELT(s_kind, 0)), "cross") == 0;
  const int64_t m = cross ? v.x.n_cols : v.x.n_rows;
  if (m > INT_MAX) fmr_stop(FM_EARG, "a Gram matrix of %lld x %lld is too large for R", (long long)m,
                            (long long)m);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)m, (int)m));
  fm_err err;
  fm_status st = fm_gram(&v.x, &v.aff, cross ? FM_GRAM_CROSS : FM_GRAM_TCROSS, REAL(out),
                         m > 0 ? m : 1, &v.ctl, &err);
  fmr_finish(st, &err);
  fmr_backend_note("gram");
  UNPROTECT(1);
  return out;
}

/* 1-based R indices (double) -> 0-based (R_alloc); NULL stays NULL. */
static const int64_t *index0(SEXP v, int64_t *n) {
  if (Rf_isNull(v)) return NULL;
  if (TYPEOF(v) != REALSXP) fmr_stop(FM_EARG, "indices must be a double vector");
  *n = (int64_t)XLENGTH(v);
  int64_t *out = (int64_t *)R_alloc((size_t)(*n > 0 ? *n : 1), sizeof(int64_t));
  for (int64_t i = 0; i < *n; i++) out[i] = (int64_t)REAL_RO(v)[i] - 1;
  return out;
}

/* .Call(fmr_gather, h, rows, cols): X[rows, cols] as a matrix; rows, cols
 * NULL (all) or 1-based doubles (checked by the core). */
SEXP fmr_gather(SEXP h, SEXP rows, SEXP cols) {
  on_view v;
  begin(h, &v);
  int64_t nr = v.x.n_rows, nc = v.x.n_cols;
  const int64_t *r = index0(rows, &nr), *c = index0(cols, &nc);
  if (nr > INT_MAX || nc > INT_MAX) fmr_stop(FM_EARG, "a block must have < 2^31 rows and columns");
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)nr, (int)nc));
  fm_err err;
  fmr_finish(fm_panel_gather(&v.x, &v.aff, r, nr, c, nc, REAL(out), nr > 0 ? nr : 1, &v.ctl, &err),
             &err);
  UNPROTECT(1);
  return out;
}

/* .Call(fmr_gather_cells, h, rows, cols): X[rows[k], cols[k]] for each k
 * (1-based doubles of one length). */
SEXP fmr_gather_cells(SEXP h, SEXP rows, SEXP cols) {
  on_view v;
  begin(h, &v);
  int64_t nr = 0, nc = 0;
  const int64_t *r = index0(rows, &nr), *c = index0(cols, &nc);
  if (!r || !c || nr != nc) fmr_stop(FM_EARG, "cell rows and columns must have one length");
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)nr));
  fm_err err;
  fmr_finish(fm_panel_gather_cells(&v.x, &v.aff, r, c, nr, REAL(out), &v.ctl, &err), &err);
  UNPROTECT(1);
  return out;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_panel_calls[] = {
    FMR_CALLDEF(fmr_product, 4),
    FMR_CALLDEF(fmr_gram, 2),
    FMR_CALLDEF(fmr_gather, 3),
    FMR_CALLDEF(fmr_gather_cells, 3),
    {NULL, NULL, 0}};
