/* r_stats.c: .Call entry points for streamed column statistics and
 * randomized PCA. */
#include "r_backend.h"
#include "r_mat.h"
#include "r_progress.h"

#include "fm/fm_stats_colvar.h"
#include "fm/fm_stats_rpca.h"

#include <string.h>

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
 * progress: NULL or function(done, total) in passes over the matrix. */
SEXP fmr_rpca(SEXP storage, SEXP spec, SEXP cols, SEXP aff_list, SEXP opts, SEXP progress) {
  int nprot = 0;
  fmr_backend_sync(); /* its products go through the backend registry */
  fm_mat x;
  fm_affine aff;
  fmr_mat_from(storage, spec, cols, &x);
  fmr_affine_from(aff_list, x.n_cols, &aff);
  if (TYPEOF(opts) != REALSXP || XLENGTH(opts) != 5) fmr_stop(FM_EARG, "opts must be 5 doubles");
  const double *o = REAL_RO(opts);
  fm_rpca_opts ro = {(int64_t)o[0], (int64_t)o[1], (int)o[2], o[3], (uint64_t)o[4]};
  if (x.n_rows > INT_MAX || x.n_cols > INT_MAX) fmr_stop(FM_EARG, "PCA needs fewer than 2^31 rows and columns");
  fm_rpca_result r;
  memset(&r, 0, sizeof r);
  fmr_progress prog;
  fm_ctl ctl = fmr_progress_ctl(&prog, progress);
  fm_err err;
  if (fm_stats_rpca(&x, &aff, &ro, &r, &ctl, &err) != FM_OK) {
    fm_rpca_result_clear(&r);
    fmr_raise(&err);
  }
  SEXP d = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)r.k)); nprot++;
  SEXP u = PROTECT(Rf_allocMatrix(REALSXP, (int)r.n, (int)r.k)); nprot++;
  SEXP v = PROTECT(Rf_allocMatrix(REALSXP, (int)r.p, (int)r.k)); nprot++;
  memcpy(REAL(d), r.d, sizeof(double) * (size_t)r.k);
  memcpy(REAL(u), r.u, sizeof(double) * (size_t)(r.n * r.k));
  memcpy(REAL(v), r.v, sizeof(double) * (size_t)(r.p * r.k));
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 5)); nprot++;
  SET_VECTOR_ELT(res, 0, d);
  SET_VECTOR_ELT(res, 1, u);
  SET_VECTOR_ELT(res, 2, v);
  SET_VECTOR_ELT(res, 3, Rf_ScalarInteger(r.iterations));
  SET_VECTOR_ELT(res, 4, Rf_ScalarLogical(r.converged));
  fm_rpca_result_clear(&r);
  UNPROTECT(nprot);
  return res;
}
