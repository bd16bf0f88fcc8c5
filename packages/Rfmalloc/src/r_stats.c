/* r_stats.c: .Call entry points for streamed column statistics and
 * randomized PCA. */
#include "r_backend.h"
#include "r_mat.h"
#include "r_progress.h"

#include "fm/fm_stats_colvar.h"
#include "fm/fm_stats_rpca.h"

/* list(mean, var, n_obs), each of length n_cols. */
SEXP fmr_colvar(SEXP storage, SEXP spec, SEXP cols) {
  int nprot = 0;
  fmr_backend_sync(); /* in case its passes run products */
  fm_mat x;
  fmr_mat_from(storage, spec, cols, &x);
  SEXP mean = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols)); nprot++;
  SEXP var = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols)); nprot++;
  SEXP nobs = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols)); nprot++;
  int64_t *n64 = (int64_t *)R_alloc((size_t)(x.n_cols > 0 ? x.n_cols : 1), sizeof(int64_t));
  fm_ctl ctl = fmr_ctl();
  fm_err err;
  if (fm_stats_colvar(&x, REAL(mean), REAL(var), n64, &ctl, &err) != FM_OK) {
    UNPROTECT(nprot);
    fmr_raise(&err);
  }
  for (int64_t j = 0; j < x.n_cols; j++) REAL(nobs)[j] = (double)n64[j];
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SET_VECTOR_ELT(res, 0, mean);
  SET_VECTOR_ELT(res, 1, var);
  SET_VECTOR_ELT(res, 2, nobs);
  UNPROTECT(nprot);
  return res;
}

/* list(d, u, v, iterations, converged). opts = c(k, oversample, max_iter, tol, seed);
 * progress: NULL or function(done, total) in passes over the matrix;
 * dimnames: NULL or list(row names or NULL, column names or NULL, component
 * names), set on u (rows, components) and v (columns, components) here, so
 * that the p x k v is written once, by the core, and never copied (setting
 * dimnames on it from R would duplicate it). */
SEXP fmr_rpca(SEXP storage, SEXP spec, SEXP cols, SEXP aff_list, SEXP opts, SEXP progress,
              SEXP dimnames) {
  int nprot = 0;
  fmr_backend_sync(); /* its products go through the backend registry */
  fm_mat x;
  fm_affine aff;
  fmr_mat_from(storage, spec, cols, &x);
  fmr_affine_from(aff_list, x.n_cols, &aff);
  if (TYPEOF(opts) != REALSXP || XLENGTH(opts) != 5) fmr_stop(FM_EARG, "opts must be 5 doubles");
  if (!Rf_isNull(dimnames) && (TYPEOF(dimnames) != VECSXP || XLENGTH(dimnames) != 3))
    fmr_stop(FM_EARG, "dimnames must be NULL or a list of 3");
  const double *o = REAL_RO(opts);
  fm_rpca_opts ro = {(int64_t)o[0], (int64_t)o[1], (int)o[2], o[3], (uint64_t)o[4]};
  if (x.n_rows > INT_MAX || x.n_cols > INT_MAX) fmr_stop(FM_EARG, "PCA needs fewer than 2^31 rows and columns");
  const int64_t mn = x.n_rows < x.n_cols ? x.n_rows : x.n_cols;
  /* the core checks k; the outputs need it in range first */
  if (ro.k < 1 || ro.k > mn)
    fmr_stop(FM_EARG, "k = %lld is outside [1, min(n, p) = %lld]", (long long)ro.k, (long long)mn);
  SEXP d = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)ro.k)); nprot++;
  SEXP u = PROTECT(Rf_allocMatrix(REALSXP, (int)x.n_rows, (int)ro.k)); nprot++;
  SEXP v = PROTECT(Rf_allocMatrix(REALSXP, (int)x.n_cols, (int)ro.k)); nprot++;
  int iterations = 0, converged = 0;
  fmr_progress prog;
  fm_ctl ctl = fmr_progress_ctl(&prog, progress);
  fm_err err;
  if (fm_stats_rpca_into(&x, &aff, &ro, REAL(d), REAL(u), REAL(v), &iterations, &converged,
                         &ctl, &err) != FM_OK) {
    UNPROTECT(nprot);
    fmr_raise(&err);
  }
  if (!Rf_isNull(dimnames)) {
    SEXP dn_u = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
    SEXP dn_v = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
    SET_VECTOR_ELT(dn_u, 0, VECTOR_ELT(dimnames, 0));
    SET_VECTOR_ELT(dn_u, 1, VECTOR_ELT(dimnames, 2));
    SET_VECTOR_ELT(dn_v, 0, VECTOR_ELT(dimnames, 1));
    SET_VECTOR_ELT(dn_v, 1, VECTOR_ELT(dimnames, 2));
    Rf_dimnamesgets(u, dn_u);
    Rf_dimnamesgets(v, dn_v);
  }
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 5)); nprot++;
  SET_VECTOR_ELT(res, 0, d);
  SET_VECTOR_ELT(res, 1, u);
  SET_VECTOR_ELT(res, 2, v);
  SET_VECTOR_ELT(res, 3, Rf_ScalarInteger(iterations));
  SET_VECTOR_ELT(res, 4, Rf_ScalarLogical(converged));
  UNPROTECT(nprot);
  return res;
}
