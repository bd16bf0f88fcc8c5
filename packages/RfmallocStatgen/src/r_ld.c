/* r_ld.c: .Call glue of statgen_ld() (fm_stats_ld.h) and of the band
 * product (fm_band_matmul, fm_band.h). The genotypes arrive as an Rfmalloc
 * view handle; window ends as doubles (0-based, exclusive); the band's
 * arrays as vectors the R side allocated (mapped in a runtime, written here
 * in place). */
#include <R.h>
#include <Rinternals.h>

#include "fm/fm_base.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_ld.h"

#include <Rfmalloc.h>

#include <string.h>

#include "r_band.h"
#include "r_calls.h"

/* Window ends as int64, checked against n here only for size (the core
 * checks their order). */
static const int64_t *win_ends(SEXP win_end, int64_t n) {
  if (TYPEOF(win_end) != REALSXP || XLENGTH(win_end) != n)
    Rf_error("win_end must be %lld doubles", (long long)n);
  int64_t *w = (int64_t *)R_alloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
  const double *d = REAL_RO(win_end);
  for (int64_t j = 0; j < n; j++) w[j] = d[j] >= 0 && d[j] <= 9e15 ? (int64_t)d[j] : -1;
  return w;
}

/* opts (3 doubles: missing rule, r2_min, dtype) and samples (NULL, or the
 * 1-based integer rows of x to use, as a mask in R_alloc memory). */
static fm_ld_opts ld_opts(SEXP opts, SEXP samples, int64_t n_rows) {
  if (TYPEOF(opts) != REALSXP || XLENGTH(opts) != 3) Rf_error("opts must be 3 doubles");
  const double *o = REAL_RO(opts);
  fm_ld_opts res = {(fm_ld_missing)(int)o[0], o[1], (fm_band_dtype)(int)o[2], 0, NULL};
  if (samples == R_NilValue) return res;
  if (TYPEOF(samples) != INTSXP) Rf_error("samples must be integers");
  const size_t nw = (size_t)((n_rows + 63) / 64);
  uint64_t *m = (uint64_t *)R_alloc(nw > 0 ? nw : 1, sizeof(uint64_t));
  memset(m, 0, (nw > 0 ? nw : 1) * sizeof(uint64_t));
  const int *s = INTEGER_RO(samples);
  for (R_xlen_t i = 0; i < XLENGTH(samples); i++) {
    if (s[i] < 1 || s[i] > n_rows) Rf_error("samples[%lld] = %d is outside 1..%lld",
                                            (long long)i + 1, s[i], (long long)n_rows);
    m[(s[i] - 1) / 64] |= 1ULL << ((s[i] - 1) % 64);
  }
  res.sample_mask = m;
  return res;
}

/* The writable data of a vector the R side made for the band: a mapped
 * vector's bytes in its runtime, or a heap vector's. */
static void *out_ptr(SEXP v, SEXPTYPE type, double n_bytes, int *mapped) {
  if (TYPEOF(v) != type) Rf_error("band output of the wrong type");
  double nb = 0;
  void *p = Rfmalloc_vec_ptr(v, NULL, &nb);
  *mapped = p != NULL;
  if (!p) p = DATAPTR(v), nb = (double)XLENGTH(v) * (type == RAWSXP ? 1 : type == INTSXP ? 4 : 8);
  if (nb < n_bytes) Rf_error("band output too short");
  return p;
}

/* .Call(stg_ld_count, view, win_end, opts, samples, progress): stored
 * entries per column, as doubles. */
static SEXP stg_ld_count(SEXP view, SEXP win_end, SEXP opts, SEXP samples, SEXP progress) {
  fm_mat x;
  fm_affine aff;
  Rfmalloc_view_get(view, &x, &aff);
  const int64_t *w = win_ends(win_end, x.n_cols);
  const fm_ld_opts o = ld_opts(opts, samples, x.n_rows);
  int64_t *cnt = (int64_t *)R_alloc((size_t)(x.n_cols > 0 ? x.n_cols : 1), sizeof(int64_t));
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = fm_stats_ld_count(&x, &aff, w, &o, cnt, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LD");
  SEXP res = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)x.n_cols));
  for (int64_t j = 0; j < x.n_cols; j++) REAL(res)[j] = (double)cnt[j];
  UNPROTECT(1);
  return res;
}

/* .Call(stg_ld_fill, view, win_end, opts, samples, colptr, rowidx, values,
 * progress): writes rowidx (integers) and values (doubles, or raw bytes of
 * floats) in place; NULL. Pages of mapped outputs are released as they are
 * done. */
static SEXP stg_ld_fill(SEXP view, SEXP win_end, SEXP opts, SEXP samples, SEXP colptr,
                        SEXP rowidx, SEXP values, SEXP progress) {
  fm_mat x;
  fm_affine aff;
  Rfmalloc_view_get(view, &x, &aff);
  const int64_t n = x.n_cols;
  const int64_t *w = win_ends(win_end, n);
  fm_ld_opts o = ld_opts(opts, samples, x.n_rows);
  if (TYPEOF(colptr) != REALSXP || XLENGTH(colptr) != n + 1)
    Rf_error("colptr must be %lld doubles", (long long)(n + 1));
  int64_t *cp = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  for (int64_t j = 0; j <= n; j++) cp[j] = (int64_t)REAL_RO(colptr)[j];
  const double nnz = (double)cp[n];
  int m1, m2;
  int32_t *ri = out_ptr(rowidx, INTSXP, 4 * nnz, &m1);
  void *va = out_ptr(values, o.dtype == FM_BAND_F32 ? RAWSXP : REALSXP,
                     (o.dtype == FM_BAND_F32 ? 4 : 8) * nnz, &m2);
  o.release_output = m1 && m2;
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const fm_status st = fm_stats_ld_fill(&x, &aff, w, &o, cp, ri, va, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LD");
  return R_NilValue;
}

/* .Call(stg_band_matmul, parts, B, budget, progress): R B for a double
 * matrix B of n rows. budget (fm_band_matmul): Inf or NA keeps the band
 * resident (a band on the heap must pass it), 0 is the default budget, any
 * other number of bytes drops the pages of a larger band as it is read. */
static SEXP stg_band_matmul(SEXP parts, SEXP B, SEXP budget, SEXP progress) {
  fm_band b;
  stg_band_get(parts, &b);
  if (TYPEOF(B) != REALSXP || !Rf_isMatrix(B) || Rf_nrows(B) != b.n)
    Rf_error("B must be a double matrix of %lld rows", (long long)b.n);
  const int k = Rf_ncols(B);
  SEXP Y = PROTECT(Rf_allocMatrix(REALSXP, (int)b.n, k));
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const double bd = Rf_asReal(budget);
  const uint64_t bud = !R_FINITE(bd) || bd >= 1.8e19 ? FM_BAND_RESIDENT
                       : bd < 1                      ? FM_BAND_BUDGET_AUTO
                                                     : (uint64_t)bd;
  const fm_status st =
      fm_band_matmul(&b, REAL_RO(B), k, b.n, REAL(Y), b.n, bud, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, "LD band product");
  UNPROTECT(1);
  return Y;
}

const R_CallMethodDef stg_ld_calls[] = {STG_CALLDEF(stg_ld_count, 5), STG_CALLDEF(stg_ld_fill, 8),
                                        STG_CALLDEF(stg_band_matmul, 4),
                                        STG_CALLDEF(stg_band_check, 1), {NULL, NULL, 0}};
