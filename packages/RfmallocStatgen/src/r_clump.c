/* r_clump.c: .Call glue between statgen_clump()/statgen_prune() and the
 * core's clumping, pruning and haplotype r^2 (fm_stats_clump.h). The band
 * arrives as the parts of a statgen_ld object (stg_band_get(), r_band.h);
 * the per-variant vectors are checked for type and length here, their
 * values by the core. */
#include <R.h>
#include <Rinternals.h>

#include "fm/fm_band.h"
#include "fm/fm_base.h"
#include "fm/fm_stats_clump.h"

#include <Rfmalloc.h>

#include "r_band.h"
#include "r_calls.h"

static void need(SEXP x, SEXPTYPE type, R_xlen_t n, const char *what) {
  if (TYPEOF(x) != type || XLENGTH(x) != n)
    Rf_error("%s must be a %s vector of length %lld", what, Rf_type2char(type), (long long)n);
}

/* .Call(stg_clump, parts, values_are_r2, p, chr, pos, opts, progress):
 * opts = c(p1, p2, r2, window_bp); chr integer codes. Returns list(clump =
 * the clump of every variant (integer, 0-based index variant, -1 none),
 * index = the index variants in clump order (0-based doubles), counts =
 * an integer matrix of one row per clump: TOTAL NSIG S05 S01 S001 S0001). */
static SEXP stg_clump(SEXP parts, SEXP values_are_r2, SEXP p, SEXP chr, SEXP pos, SEXP opts,
                      SEXP progress) {
  fm_band b;
  stg_band_get(parts, &b);
  need(values_are_r2, LGLSXP, 1, "values_are_r2");
  need(p, REALSXP, (R_xlen_t)b.n, "p");
  need(chr, INTSXP, (R_xlen_t)b.n, "chr");
  need(pos, REALSXP, (R_xlen_t)b.n, "pos");
  need(opts, REALSXP, 4, "opts");
  const fm_clump_opts o = {REAL(opts)[0], REAL(opts)[1], REAL(opts)[2], REAL(opts)[3]};
  R_xlen_t n_cand = 0; /* room for every possible clump: p <= p1 */
  for (R_xlen_t j = 0; j < (R_xlen_t)b.n; j++) n_cand += REAL(p)[j] <= o.p1;
  int nprot = 0;
  SEXP clump = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)b.n)); nprot++;
  int64_t *index = (int64_t *)R_alloc((size_t)(n_cand ? n_cand : 1), sizeof *index);
  int32_t *counts = (int32_t *)R_alloc((size_t)(n_cand ? n_cand : 1) * 6, sizeof *counts);
  int64_t n_index = 0;
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = fm_stats_clump(&b, LOGICAL(values_are_r2)[0] == 1, REAL_RO(p),
                                      INTEGER_RO(chr), REAL_RO(pos), &o, INTEGER(clump), index,
                                      counts, &n_index, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "clumping");
  SEXP idx = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n_index)); nprot++;
  SEXP cnt = PROTECT(Rf_allocMatrix(INTSXP, (int)n_index, 6)); nprot++;
  for (int64_t c = 0; c < n_index; c++) {
    REAL(idx)[c] = (double)index[c];
    for (int k = 0; k < 6; k++) INTEGER(cnt)[c + k * n_index] = counts[c + k * n_cand];
  }
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SET_VECTOR_ELT(res, 0, clump);
  SET_VECTOR_ELT(res, 1, idx);
  SET_VECTOR_ELT(res, 2, cnt);
  UNPROTECT(nprot);
  return res;
}

/* .Call(stg_prune, parts, values_are_r2, maf, chr, win_end, step, r2,
 * is_constant, progress): win_end doubles (0-based, exclusive); returns the
 * logical keep vector. */
static SEXP stg_prune(SEXP parts, SEXP values_are_r2, SEXP maf, SEXP chr, SEXP win_end,
                      SEXP step, SEXP r2, SEXP is_constant, SEXP progress) {
  fm_band b;
  stg_band_get(parts, &b);
  const R_xlen_t n = (R_xlen_t)b.n;
  need(values_are_r2, LGLSXP, 1, "values_are_r2");
  need(maf, REALSXP, n, "maf");
  need(chr, INTSXP, n, "chr");
  need(win_end, REALSXP, n, "win_end");
  need(step, REALSXP, 1, "step");
  need(r2, REALSXP, 1, "r2");
  need(is_constant, LGLSXP, n, "is_constant");
  int64_t *we = (int64_t *)R_alloc((size_t)(n ? n : 1), sizeof *we);
  uint8_t *cst = (uint8_t *)R_alloc((size_t)(n ? n : 1), 1);
  uint8_t *keep = (uint8_t *)R_alloc((size_t)(n ? n : 1), 1);
  for (R_xlen_t j = 0; j < n; j++) {
    const double e = REAL(win_end)[j];
    we[j] = R_FINITE(e) ? (int64_t)e : -1; /* the core rejects -1 with its message */
    cst[j] = LOGICAL(is_constant)[j] == 1;
  }
  int nprot = 0;
  SEXP res = PROTECT(Rf_allocVector(LGLSXP, n)); nprot++;
  int64_t n_kept = 0;
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const double s = REAL(step)[0];
  const fm_status st = fm_stats_prune(&b, LOGICAL(values_are_r2)[0] == 1, REAL_RO(maf),
                                      INTEGER_RO(chr), we, R_FINITE(s) ? (int64_t)s : 0,
                                      REAL(r2)[0], cst, keep, &n_kept, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LD pruning");
  for (R_xlen_t j = 0; j < n; j++) LOGICAL(res)[j] = keep[j];
  UNPROTECT(nprot);
  return res;
}

/* .Call(stg_hap_r2, ga, G): the haplotype-frequency r^2 of variant ga
 * (n doubles) with every column of the n x k double matrix G. */
static SEXP stg_hap_r2(SEXP ga, SEXP G) {
  if (TYPEOF(ga) != REALSXP || TYPEOF(G) != REALSXP || !Rf_isMatrix(G) ||
      Rf_nrows(G) != XLENGTH(ga))
    Rf_error("ga must be a double vector and G a double matrix of as many rows");
  const int64_t n = (int64_t)XLENGTH(ga), k = Rf_ncols(G);
  int nprot = 0;
  SEXP res = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)k)); nprot++;
  fm_err err;
  fm_err_clear(&err);
  const fm_status st = fm_stats_ld_hap_r2(REAL_RO(ga), REAL_RO(G), n, k, n > 0 ? n : 1,
                                          REAL(res), &err);
  if (st != FM_OK) Rfmalloc_raise_err(&err, "haplotype r^2");
  UNPROTECT(nprot);
  return res;
}

const R_CallMethodDef stg_clump_calls[] = {STG_CALLDEF(stg_clump, 7), STG_CALLDEF(stg_prune, 9),
                                           STG_CALLDEF(stg_hap_r2, 2), {NULL, NULL, 0}};
