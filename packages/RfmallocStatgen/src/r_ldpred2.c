/* r_ldpred2.c: .Call glue between statgen_ldpred2_inf/grid/auto() (R/ldpred2.R)
 * and the core's LDpred2 (fm_stats_ldpred2.h). The LD band arrives as the
 * statgen_ld object's parts (stg_band_get(), no copy); the summary
 * statistics as three double vectors the R side matched to the band's
 * variants; results are allocated here and written by the core once.
 * Long runs poll R and report progress through Rfmalloc's control block. */
#include <R.h>
#include <Rinternals.h>

#include "fm/fm_band.h"
#include "fm/fm_base.h"
#include "fm/fm_stats_ldpred2.h"

#include <Rfmalloc.h>

#include "r_band.h"
#include "r_calls.h"

/* The data of m variants, else an R error naming the vector. */
static fm_ldpred2_data data_get(SEXP beta, SEXP se, SEXP n, int64_t m) {
  SEXP v[3] = {beta, se, n};
  const char *names[3] = {"beta", "beta_se", "n_eff"};
  for (int i = 0; i < 3; i++)
    if (TYPEOF(v[i]) != REALSXP || XLENGTH(v[i]) != m)
      Rf_error("%s must be %lld doubles", names[i], (long long)m);
  return (fm_ldpred2_data){m, REAL_RO(beta), REAL_RO(se), REAL_RO(n)};
}

static const double *dbl_opts(SEXP opts, R_xlen_t n) {
  if (TYPEOF(opts) != REALSXP || XLENGTH(opts) != n) Rf_error("opts must be %d doubles", (int)n);
  return REAL_RO(opts);
}

/* .Call(stg_ldpred2_inf, parts, beta, se, n, h2, opts = c(shrink, tol,
 * max_iter)): list(beta, iterations, rel_residual). */
static SEXP stg_ldpred2_inf(SEXP parts, SEXP beta, SEXP se, SEXP n, SEXP h2, SEXP opts) {
  fm_band b;
  stg_band_get(parts, &b);
  const fm_ldpred2_data d = data_get(beta, se, n, b.n);
  const double *o = dbl_opts(opts, 3);
  if (TYPEOF(h2) != REALSXP || XLENGTH(h2) != 1) Rf_error("h2 must be one double");
  const fm_ldpred2_inf_opts io = {o[0], o[1], (int64_t)o[2]};
  int nprot = 0;
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SEXP x = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)b.n)); nprot++;
  SET_VECTOR_ELT(res, 0, x);
  fm_ldpred2_inf_info info;
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(R_NilValue);
  const fm_status st =
      fm_stats_ldpred2_inf(&b, &d, REAL_RO(h2)[0], &io, REAL(x), &info, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LDpred2-inf");
  SET_VECTOR_ELT(res, 1, Rf_ScalarReal((double)info.iterations));
  SET_VECTOR_ELT(res, 2, Rf_ScalarReal(info.rel_residual));
  UNPROTECT(nprot);
  return res;
}

static fm_ldpred2_gibbs_opts gibbs_opts(const double *o) {
  return (fm_ldpred2_gibbs_opts){(int64_t)o[0], (int64_t)o[1], o[2], (uint64_t)o[3]};
}

/* .Call(stg_ldpred2_grid, parts, beta, se, n, p, h2, sparse, opts =
 * c(burn_in, num_iter, shrink, seed), progress): list(beta m x K, status,
 * diverged_at). */
static SEXP stg_ldpred2_grid(SEXP parts, SEXP beta, SEXP se, SEXP n, SEXP p, SEXP h2,
                             SEXP sparse, SEXP opts, SEXP progress) {
  fm_band b;
  stg_band_get(parts, &b);
  const fm_ldpred2_data d = data_get(beta, se, n, b.n);
  const double *o = dbl_opts(opts, 4);
  const R_xlen_t K = XLENGTH(p);
  if (TYPEOF(p) != REALSXP || TYPEOF(h2) != REALSXP || TYPEOF(sparse) != INTSXP ||
      XLENGTH(h2) != K || XLENGTH(sparse) != K)
    Rf_error("p, h2 (doubles) and sparse (integers) must have one length");
  int nprot = 0;
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SEXP bm = PROTECT(Rf_allocMatrix(REALSXP, (int)b.n, (int)K)); nprot++;
  SEXP status = PROTECT(Rf_allocVector(INTSXP, K)); nprot++;
  SEXP div = PROTECT(Rf_allocVector(REALSXP, K)); nprot++;
  int64_t *div64 = (int64_t *)R_alloc((size_t)(K > 0 ? K : 1), sizeof(int64_t));
  const fm_ldpred2_grid_out out = {REAL(bm), INTEGER(status), div64};
  const fm_ldpred2_gibbs_opts go = gibbs_opts(o);
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = fm_stats_ldpred2_grid(&b, &d, (int64_t)K, REAL_RO(p), REAL_RO(h2),
                                             INTEGER_RO(sparse), &go, &out, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LDpred2-grid");
  for (R_xlen_t k = 0; k < K; k++) REAL(div)[k] = (double)div64[k];
  SET_VECTOR_ELT(res, 0, bm);
  SET_VECTOR_ELT(res, 1, status);
  SET_VECTOR_ELT(res, 2, div);
  UNPROTECT(nprot);
  return res;
}

/* .Call(stg_ldpred2_auto, parts, beta, se, n, p_init, opts = c(burn_in,
 * num_iter, shrink, seed, h2_init, allow_jump_sign, use_mle, p_lo, p_hi,
 * alpha_lo, alpha_hi), progress): list(beta, postp, corr_est (m x K),
 * path_p, path_h2, path_alpha ((burn_in + num_iter) x K), p_est, h2_est,
 * alpha_est, status, diverged_at (K)). */
static SEXP stg_ldpred2_auto(SEXP parts, SEXP beta, SEXP se, SEXP n, SEXP p_init, SEXP opts,
                             SEXP progress) {
  fm_band b;
  stg_band_get(parts, &b);
  const fm_ldpred2_data d = data_get(beta, se, n, b.n);
  const double *o = dbl_opts(opts, 11);
  if (TYPEOF(p_init) != REALSXP || XLENGTH(p_init) < 1) Rf_error("p_init must be doubles");
  const R_xlen_t K = XLENGTH(p_init);
  const fm_ldpred2_gibbs_opts go = gibbs_opts(o);
  const fm_ldpred2_auto_opts ao = {(int64_t)K, REAL_RO(p_init), o[4], o[5] != 0, o[6] != 0,
                                   {o[7], o[8]}, {o[9], o[10]}};
  if (go.burn_in < 0 || go.num_iter < 1 || go.burn_in + go.num_iter > 100000000)
    Rf_error("burn_in and num_iter are out of range");
  const int total = (int)(go.burn_in + go.num_iter);
  int nprot = 0;
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 11)); nprot++;
  SEXP r[11];
  for (int i = 0; i < 3; i++) {
    r[i] = Rf_allocMatrix(REALSXP, (int)b.n, (int)K);
    SET_VECTOR_ELT(res, i, r[i]);
  }
  for (int i = 3; i < 6; i++) {
    r[i] = Rf_allocMatrix(REALSXP, total, (int)K);
    SET_VECTOR_ELT(res, i, r[i]);
  }
  for (int i = 6; i < 9; i++) {
    r[i] = Rf_allocVector(REALSXP, K);
    SET_VECTOR_ELT(res, i, r[i]);
  }
  r[9] = Rf_allocVector(INTSXP, K);
  SET_VECTOR_ELT(res, 9, r[9]);
  r[10] = Rf_allocVector(REALSXP, K);
  SET_VECTOR_ELT(res, 10, r[10]);
  int64_t *div64 = (int64_t *)R_alloc((size_t)K, sizeof(int64_t));
  const fm_ldpred2_auto_out out = {REAL(r[0]), REAL(r[1]), REAL(r[2]), REAL(r[3]),
                                   REAL(r[4]), REAL(r[5]), REAL(r[6]), REAL(r[7]),
                                   REAL(r[8]), INTEGER(r[9]), div64};
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = fm_stats_ldpred2_auto(&b, &d, &ao, &go, &out, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LDpred2-auto");
  for (R_xlen_t k = 0; k < K; k++) REAL(r[10])[k] = (double)div64[k];
  UNPROTECT(nprot);
  return res;
}

const R_CallMethodDef stg_ldpred2_calls[] = {STG_CALLDEF(stg_ldpred2_inf, 6),
                                             STG_CALLDEF(stg_ldpred2_grid, 9),
                                             STG_CALLDEF(stg_ldpred2_auto, 7),
                                             {NULL, NULL, 0}};
