/* r_stats.c: .Call entry points for streamed column statistics and
 * randomized PCA. */
#include "r_backend.h"
#include "r_calls.h"
#include "r_mat.h"
#include "r_progress.h"

#include "fm/fm_stats_colvar.h"
#include "fm/fm_stats_rpca.h"

SEXP Rfmalloc_vec_runtime(SEXP x); /* r_api.c */


/* list(mean, var, n_obs), each of length n_cols. */
SEXP fmr_colvar(SEXP h) {
  int nprot = 0;
  fm_ctl ctl = fmr_ctl(); /* first: a bad option raises before anything is allocated */
  fm_mat x;
  fmr_view_get(h, &x, NULL);
  SEXP mean = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols)); nprot++;
  SEXP var = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols)); nprot++;
  SEXP nobs = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols)); nprot++;
  int64_t *n64 = (int64_t *)R_alloc((size_t)(x.n_cols > 0 ? x.n_cols : 1), sizeof(int64_t));
  fm_err err;
  fmr_finish(fm_stats_colvar(&x, REAL(mean), REAL(var), n64, &ctl, &err), &err);
  fmr_backend_note("colvar"); /* its own path: no product backend runs */
  for (int64_t j = 0; j < x.n_cols; j++) REAL(nobs)[j] = (double)n64[j];
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SET_VECTOR_ELT(res, 0, mean);
  SET_VECTOR_ELT(res, 1, var);
  SET_VECTOR_ELT(res, 2, nobs);
  UNPROTECT(nprot);
  return res;
}

/* NULL, or a double vector of length n (else fm_error_earg naming it). */
static const double *col_vector(SEXP v, const char *what, int64_t n) {
  if (Rf_isNull(v)) return NULL;
  if (TYPEOF(v) != REALSXP || XLENGTH(v) != n)
    fmr_stop(FM_EARG, "%s must be NULL or a double vector of length %lld", what, (long long)n);
  return REAL_RO(v);
}

/* list(d, u, v, iterations, converged); notes the backends of its passes
 * (fmr_backend_note).
 * h: the view of the matrix (its transform is not used: the PCA's own
 * comes in center, div and fill); center: NULL or the n_cols column
 * centres; div: NULL or n_cols positive divisors (the core's col_div: no
 * multiplier vector is made); fill: NULL, a double vector of length n_cols
 * (in units before division), or one number for every column (the core's
 * scalar fill: no vector is made). opts = c(k, oversample,
 * max_iter, tol, seed); progress: NULL or function(done, total) in passes
 * over the matrix; dimnames: NULL or list(row names or NULL, column names or
 * NULL, component names), set on u (rows, components) and v (columns,
 * components) here, so that the p x k v is written once, by the core, and
 * never copied (setting dimnames on it from R would duplicate it).
 * v_out: NULL (v is allocated here, on the heap) or a fresh fmalloc double
 * matrix of n_cols x k that nothing else refers to (fmalloc_pca creates it),
 * written in place with the core's v_release: runtimes map their file
 * MAP_SHARED, so the core drops v's pages from memory as it writes them. */
SEXP fmr_rpca(SEXP h, SEXP center, SEXP div, SEXP fill, SEXP opts, SEXP progress, SEXP dimnames,
              SEXP v_out) {
  int nprot = 0;
  fmr_progress prog;
  fm_ctl ctl = fmr_progress_ctl(&prog, progress); /* first: a bad option raises */
  fm_mat x;
  fmr_view_get(h, &x, NULL);
  fm_affine aff = {.center = col_vector(center, "center", x.n_cols)};
  const double *col_div = col_vector(div, "div", x.n_cols);
  if (!Rf_isNull(fill) && (TYPEOF(fill) != REALSXP || XLENGTH(fill) == 0))
    fmr_stop(FM_EARG, "fill must be NULL, one number or a double vector of length %lld",
             (long long)x.n_cols);
  if (!Rf_isNull(fill) && XLENGTH(fill) != 1) aff.fill = col_vector(fill, "fill", x.n_cols);
  if (!Rf_isNull(fill) && XLENGTH(fill) == 1) {
    aff.fill_all_set = 1;
    aff.fill_all = REAL_RO(fill)[0];
  }
  if (TYPEOF(opts) != REALSXP || XLENGTH(opts) != 5) fmr_stop(FM_EARG, "opts must be 5 doubles");
  if (!Rf_isNull(dimnames) && (TYPEOF(dimnames) != VECSXP || XLENGTH(dimnames) != 3))
    fmr_stop(FM_EARG, "dimnames must be NULL or a list of 3");
  const double *o = REAL_RO(opts);
  fm_rpca_opts ro = {(int64_t)o[0], (int64_t)o[1], (int)o[2], o[3], (uint64_t)o[4], 0};
  if (x.n_rows > INT_MAX || x.n_cols > INT_MAX) fmr_stop(FM_EARG, "PCA needs fewer than 2^31 rows and columns");
  const int64_t mn = x.n_rows < x.n_cols ? x.n_rows : x.n_cols;
  /* the core checks k; the outputs need it in range first */
  if (ro.k < 1 || ro.k > mn)
    fmr_stop(FM_EARG, "k = %lld is outside [1, min(n, p) = %lld]", (long long)ro.k, (long long)mn);
  if (!Rf_isNull(v_out)) {
    SEXP dim = Rf_getAttrib(v_out, R_DimSymbol);
    if (TYPEOF(v_out) != REALSXP || Rf_isNull(Rfmalloc_vec_runtime(v_out)) ||
        TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2 || INTEGER(dim)[0] != x.n_cols ||
        INTEGER(dim)[1] != ro.k)
      fmr_stop(FM_EARG, "v_out must be NULL or an fmalloc double matrix of %lld x %lld",
               (long long)x.n_cols, (long long)ro.k);
    ro.v_release = 1;
  }
  SEXP d = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)ro.k)); nprot++;
  SEXP u = PROTECT(Rf_allocMatrix(REALSXP, (int)x.n_rows, (int)ro.k)); nprot++;
  SEXP v = v_out;
  if (!ro.v_release) {
    v = PROTECT(Rf_allocMatrix(REALSXP, (int)x.n_cols, (int)ro.k)); nprot++;
  }
  double *v_data = REAL(v); /* the mapping for v_out (checked before nothing may raise) */
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 5)); nprot++;
  SEXP dn_u = R_NilValue, dn_v = R_NilValue;
  if (!Rf_isNull(dimnames)) {
    dn_u = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
    dn_v = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
  }
  int iterations = 0, converged = 0;
  fm_err err;
  fm_backend_used_clear();
  fm_status st = fm_stats_rpca_into(&x, &aff, col_div, &ro, REAL(d), REAL(u), v_data, &iterations,
                                    &converged, &ctl, &err);
  /* also raises what the progress function raised, even at its last report,
   * after which the core returns FM_OK */
  fmr_finish(st, &err);
  fmr_backend_note(fm_backend_used());
  if (!Rf_isNull(dimnames)) {
    SET_VECTOR_ELT(dn_u, 0, VECTOR_ELT(dimnames, 0));
    SET_VECTOR_ELT(dn_u, 1, VECTOR_ELT(dimnames, 2));
    SET_VECTOR_ELT(dn_v, 0, VECTOR_ELT(dimnames, 1));
    SET_VECTOR_ELT(dn_v, 1, VECTOR_ELT(dimnames, 2));
    Rf_dimnamesgets(u, dn_u);
    Rf_dimnamesgets(v, dn_v);
  }
  SET_VECTOR_ELT(res, 0, d);
  SET_VECTOR_ELT(res, 1, u);
  SET_VECTOR_ELT(res, 2, v);
  SET_VECTOR_ELT(res, 3, Rf_ScalarInteger(iterations));
  SET_VECTOR_ELT(res, 4, Rf_ScalarLogical(converged));
  UNPROTECT(nprot);
  return res;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_stats_calls[] = {
    FMR_CALLDEF(fmr_colvar, 1),
    FMR_CALLDEF(fmr_rpca, 8),
    {NULL, NULL, 0}};
