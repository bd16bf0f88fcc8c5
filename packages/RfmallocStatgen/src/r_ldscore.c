/* r_ldscore.c: .Call glue between statgen_ld_scores() and the core's LD
 * scores of a band (fm_stats_ldscore.h). The band arrives as the parts of a
 * statgen_ld object (stg_band_get(), r_band.h: no copy of the values); the
 * scores are allocated here and written by the core once. */
#include <R.h>
#include <Rinternals.h>

#include "fm/fm_band.h"
#include "fm/fm_base.h"
#include "fm/fm_stats_ldscore.h"

#include <Rfmalloc.h>

#include "r_band.h"
#include "r_calls.h"

/* .Call(stg_ld_scores, parts, n_samples, progress): the LD score of every
 * variant of the band, a double vector of n. n_samples: one double, 0 for
 * plain r^2, else the sample count of the LDSC adjustment (> 2, whole);
 * progress NULL or function(done, total) in variants. */
static SEXP stg_ld_scores(SEXP parts, SEXP n_samples, SEXP progress) {
  if (TYPEOF(n_samples) != REALSXP || XLENGTH(n_samples) != 1 || !R_FINITE(REAL(n_samples)[0]))
    Rf_error("n_samples must be one finite double");
  fm_band b;
  stg_band_get(parts, &b);
  int nprot = 0;
  SEXP res = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)b.n)); nprot++;
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st =
      fm_stats_ldscore(&b, (int64_t)REAL(n_samples)[0], REAL(res), &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LD scores");
  UNPROTECT(nprot);
  return res;
}

const R_CallMethodDef stg_ldscore_calls[] = {STG_CALLDEF(stg_ld_scores, 3), {NULL, NULL, 0}};
