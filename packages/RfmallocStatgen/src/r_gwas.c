/* r_gwas.c: .Call glue between statgen_gwas() and the core's association
 * kernels (fm_stats_glm.h). The genotype matrix arrives as an Rfmalloc view
 * handle (fmalloc_view(), turned into the core's fm_mat by
 * Rfmalloc_view_get: no copy); the design (covariates with the intercept,
 * phenotypes with NaN for samples left out, optional genotype scale) as
 * double matrices the R side checked; results are allocated here, written
 * by the core once, and returned. Long runs poll R and report progress
 * through Rfmalloc's control block (Rfmalloc_ctl, Rfmalloc.h). */
#include <R.h>
#include <Rinternals.h>

#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_glm.h"

#include <Rfmalloc.h>

#include "r_calls.h"

/* A double matrix of n rows (any columns), else an error naming it. */
static void need_rows(SEXP m, const char *what, R_xlen_t n) {
  if (TYPEOF(m) != REALSXP || !Rf_isMatrix(m) || Rf_nrows(m) != n)
    Rf_error("%s must be a double matrix of %lld rows", what, (long long)n);
}

/* .Call(stg_glm, view, covar, pheno, scale, haploid, opts, progress):
 * list(beta, se, stat, obs_ct, code, firth, allele_ct): the first six
 * n_variants x n_pheno (obs_ct double; code and firth integer; firth NULL
 * for linear), allele_ct n_variants x 2 (fm_glm_out.allele_ct).
 * opts: double c(logistic, impute_mean, firth, max_iter, tol); scale NULL
 * or n doubles; haploid NULL or n raw flags; progress NULL or
 * function(done, total) in variants. */
static SEXP stg_glm(SEXP view, SEXP covar, SEXP pheno, SEXP scale, SEXP haploid, SEXP opts,
                    SEXP progress) {
  fm_mat x;
  Rfmalloc_view_get(view, &x, NULL);
  const R_xlen_t n = (R_xlen_t)x.n_rows;
  need_rows(covar, "covar", n);
  need_rows(pheno, "pheno", n);
  if (TYPEOF(opts) != REALSXP || XLENGTH(opts) != 5) Rf_error("opts must be 5 doubles");
  if (!Rf_isNull(scale) && (TYPEOF(scale) != REALSXP || XLENGTH(scale) != n))
    Rf_error("scale must be NULL or %lld doubles", (long long)n);
  if (!Rf_isNull(haploid) && (TYPEOF(haploid) != RAWSXP || XLENGTH(haploid) != n))
    Rf_error("haploid must be NULL or %lld raw flags", (long long)n);
  const double *o = REAL_RO(opts);
  const int logistic = o[0] != 0;
  const int64_t p = x.n_cols, k = Rf_ncols(pheno);
  const fm_glm_design d = {x.n_rows, Rf_ncols(covar), REAL_RO(covar), k, REAL_RO(pheno),
                           Rf_isNull(scale) ? NULL : REAL_RO(scale),
                           Rf_isNull(haploid) ? NULL : (const unsigned char *)RAW_RO(haploid)};
  const fm_glm_opts go = {o[1] != 0, (int)o[2], (int)o[3], o[4]};
  int nprot = 0;
  SEXP beta = PROTECT(Rf_allocMatrix(REALSXP, (int)p, (int)k)); nprot++;
  SEXP se = PROTECT(Rf_allocMatrix(REALSXP, (int)p, (int)k)); nprot++;
  SEXP stat = PROTECT(Rf_allocMatrix(REALSXP, (int)p, (int)k)); nprot++;
  SEXP obs = PROTECT(Rf_allocMatrix(REALSXP, (int)p, (int)k)); nprot++;
  SEXP code = PROTECT(Rf_allocMatrix(INTSXP, (int)p, (int)k)); nprot++;
  SEXP firth = logistic ? PROTECT(Rf_allocMatrix(INTSXP, (int)p, (int)k)) : R_NilValue;
  if (logistic) nprot++;
  SEXP act = PROTECT(Rf_allocMatrix(REALSXP, (int)p, 2)); nprot++;
  int64_t *obs64 = (int64_t *)R_alloc((size_t)(p * k > 0 ? p * k : 1), sizeof(int64_t));
  const fm_glm_out out = {REAL(beta), REAL(se), REAL(stat), obs64, INTEGER(code),
                          logistic ? INTEGER(firth) : NULL, REAL(act)};
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = logistic ? fm_stats_glm_logistic(&x, &d, &go, &out, &ctl, &err)
                                : fm_stats_glm_linear(&x, &d, &go, &out, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, logistic ? "logistic regression" : "linear regression");
  for (int64_t i = 0; i < p * k; i++) REAL(obs)[i] = (double)obs64[i];
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 7)); nprot++;
  SET_VECTOR_ELT(res, 0, beta);
  SET_VECTOR_ELT(res, 1, se);
  SET_VECTOR_ELT(res, 2, stat);
  SET_VECTOR_ELT(res, 3, obs);
  SET_VECTOR_ELT(res, 4, code);
  SET_VECTOR_ELT(res, 5, firth);
  SET_VECTOR_ELT(res, 6, act);
  UNPROTECT(nprot);
  return res;
}

/* .Call(stg_glm_codes): plink2's ERRCODE text of every fm_glm_code, in code
 * order (the R side maps the integer codes with it). */
static SEXP stg_glm_codes(void) {
  SEXP res = PROTECT(Rf_allocVector(STRSXP, FM_GLM_CODE_COUNT));
  for (int c = 0; c < FM_GLM_CODE_COUNT; c++)
    SET_STRING_ELT(res, c, Rf_mkChar(fm_glm_code_name(c)));
  UNPROTECT(1);
  return res;
}

const R_CallMethodDef stg_gwas_calls[] = {STG_CALLDEF(stg_glm, 7), STG_CALLDEF(stg_glm_codes, 0),
                                          {NULL, NULL, 0}};
