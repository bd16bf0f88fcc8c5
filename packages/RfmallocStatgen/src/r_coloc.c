/* r_coloc.c: .Call glue between statgen_coloc_abf() / statgen_coloc_signals()
 * and the core's colocalisation kernel (fm_stats_coloc.h). The R side
 * matches SNPs and builds the two log Bayes factor matrices (signals x
 * SNPs, the same SNP columns); the kernel writes every pair's posteriors
 * and log numerators into arrays allocated here. */
#include <R.h>
#include <Rinternals.h>

#include "fm/fm_base.h"
#include "fm/fm_stats_coloc.h"

#include <Rfmalloc.h>

#include "r_calls.h"

/* .Call(stg_coloc_pairs, l1, l2, priors, progress): list(pp, lh, exact):
 * pp and lh n1 x n2 x 5 double arrays (H0..H4), exact 2 doubles (pairs
 * recomputed for underflow, for H3 cancellation). l1 n1 x m and l2 n2 x m
 * double matrices; priors c(p1, p2, p12); progress NULL or
 * function(done, total) in pairs. */
static SEXP stg_coloc_pairs(SEXP l1, SEXP l2, SEXP priors, SEXP progress) {
  if (TYPEOF(l1) != REALSXP || !Rf_isMatrix(l1) || TYPEOF(l2) != REALSXP || !Rf_isMatrix(l2))
    Rf_error("l1 and l2 must be double matrices");
  if (Rf_ncols(l1) != Rf_ncols(l2)) Rf_error("l1 and l2 must have the same columns");
  if (TYPEOF(priors) != REALSXP || XLENGTH(priors) != 3) Rf_error("priors must be 3 doubles");
  const int n1 = Rf_nrows(l1), n2 = Rf_nrows(l2), m = Rf_ncols(l1);
  const double *pr = REAL_RO(priors);
  int nprot = 0;
  SEXP dims = PROTECT(Rf_allocVector(INTSXP, 3)); nprot++;
  INTEGER(dims)[0] = n1;
  INTEGER(dims)[1] = n2;
  INTEGER(dims)[2] = 5;
  const R_xlen_t cells = (R_xlen_t)n1 * n2 * 5;
  SEXP pp = PROTECT(Rf_allocVector(REALSXP, cells)); nprot++;
  SEXP lh = PROTECT(Rf_allocVector(REALSXP, cells)); nprot++;
  Rf_setAttrib(pp, R_DimSymbol, dims);
  Rf_setAttrib(lh, R_DimSymbol, dims);
  SEXP exact = PROTECT(Rf_allocVector(REALSXP, 2)); nprot++;
  int64_t n_exact[2] = {0, 0};
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = fm_stats_coloc_pairs(REAL_RO(l1), n1, n1 > 0 ? n1 : 1, REAL_RO(l2), n2,
                                            n2 > 0 ? n2 : 1, m, pr[0], pr[1], pr[2], REAL(pp),
                                            REAL(lh), n_exact, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "colocalisation");
  REAL(exact)[0] = (double)n_exact[0];
  REAL(exact)[1] = (double)n_exact[1];
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SET_VECTOR_ELT(res, 0, pp);
  SET_VECTOR_ELT(res, 1, lh);
  SET_VECTOR_ELT(res, 2, exact);
  UNPROTECT(nprot);
  return res;
}

const R_CallMethodDef stg_coloc_calls[] = {STG_CALLDEF(stg_coloc_pairs, 4), {NULL, NULL, 0}};
