/* rpca_la.c: LAPACK wrappers, the pass relay and page-returning buffers of
 * fm_stats_rpca (rpca_impl.h). */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS */
#include "stats_rpca_impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

fm_status rpca_work_init(rpca_work *w, const int64_t (*qr_shapes)[2], int n_shapes, int64_t e,
                         int64_t k, fm_err *err) {
  memset(w, 0, sizeof *w);
  const fm_blas_int q = -1;
  fm_blas_int info = 0;
  double best = 1.0, got = 0.0, dummy = 0.0;
  int64_t widest = 1;
  for (int t = 0; t < n_shapes; t++) {
    const fm_blas_int M = (fm_blas_int)qr_shapes[t][0], C = (fm_blas_int)qr_shapes[t][1];
    if (qr_shapes[t][1] > widest) widest = qr_shapes[t][1];
    dgeqrf_(&M, &C, &dummy, &M, &dummy, &got, &q, &info);
    if (info == 0 && got > best) best = got;
    dorgqr_(&M, &C, &C, &dummy, &M, &dummy, &got, &q, &info);
    if (info == 0 && got > best) best = got;
  }
  if (best > (double)INT_MAX) best = (double)INT_MAX;
  w->lq = (fm_blas_int)best;

  const fm_blas_int E = (fm_blas_int)e, K = (fm_blas_int)k;
  fm_blas_int iw = 0;
  best = 3.0 * (double)e; /* dsyev's documented minimum 3e - 1 */
  got = 0.0;
  dsyev_("V", "U", &E, &dummy, &E, &dummy, &got, &q, &info, FM_FCONE, FM_FCONE);
  if (info == 0 && got > best) best = got;
  got = 0.0;
  dgesdd_("S", &K, &K, &dummy, &K, &dummy, &dummy, &K, &dummy, &K, &got, &q, &iw, &info,
          FM_FCONE);
  if (info == 0 && got > best) best = got;
  /* dgesdd's documented minimum for jobz 'S', square: 4 k^2 + 7 k (dgesvd: 5k). */
  const double doc_min = 4.0 * (double)k * (double)k + 7.0 * (double)k;
  if (best < doc_min) best = doc_min;
  if (best > (double)INT_MAX)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "fm_stats_rpca: a %lld x %lld eigenproblem needs a LAPACK workspace beyond "
                      "the BLAS integer range",
                      (long long)e, (long long)e);
  w->le = (fm_blas_int)best;
  w->tau = malloc((size_t)widest * sizeof *w->tau);
  w->qwork = malloc((size_t)w->lq * sizeof *w->qwork);
  w->ework = malloc((size_t)w->le * sizeof *w->ework);
  w->iwork = malloc((size_t)(8 * k) * sizeof *w->iwork);
  if (!w->tau || !w->qwork || !w->ework || !w->iwork) {
    rpca_work_free(w);
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate LAPACK workspace");
  }
  return FM_OK;
}

void rpca_work_free(rpca_work *w) {
  free(w->tau);
  free(w->qwork);
  free(w->ework);
  free(w->iwork);
  memset(w, 0, sizeof *w);
}

fm_status rpca_qr(rpca_work *w, double *a, int64_t m, int64_t c, double *r_out, fm_err *err) {
  const fm_blas_int M = (fm_blas_int)m, C = (fm_blas_int)c;
  fm_blas_int info = 0;
  dgeqrf_(&M, &C, a, &M, w->tau, w->qwork, &w->lq, &info);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL, "fm_stats_rpca: dgeqrf returned info %d", (int)info);
  if (r_out) {
    for (int64_t j = 0; j < c; j++)
      for (int64_t i = 0; i < c; i++) r_out[i + j * c] = i <= j ? a[i + j * m] : 0.0;
  }
  dorgqr_(&M, &C, &C, a, &M, w->tau, w->qwork, &w->lq, &info);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL, "fm_stats_rpca: dorgqr returned info %d", (int)info);
  return FM_OK;
}

fm_status rpca_eig(rpca_work *w, double *t, int64_t e, double *lam, int vectors, fm_err *err) {
  const fm_blas_int E = (fm_blas_int)e;
  fm_blas_int info = 0;
  dsyev_(vectors ? "V" : "N", "U", &E, t, &E, lam, w->ework, &w->le, &info, FM_FCONE, FM_FCONE);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL,
                      "fm_stats_rpca: eigen-decomposition of the %lld x %lld projected Gram "
                      "matrix failed (info %d)",
                      (long long)e, (long long)e, (int)info);
  return FM_OK;
}

/* dgesdd, falling back to dgesvd when its divide and conquer fails to
 * converge. */
fm_status rpca_svd(rpca_work *w, double *r, int64_t k, double *s, double *u, double *vt,
                   fm_err *err) {
  const fm_blas_int K = (fm_blas_int)k;
  fm_blas_int info = 0;
  double *backup = malloc((size_t)(k * k) * sizeof *backup);
  if (!backup)
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate %lld x %lld", (long long)k,
                      (long long)k);
  memcpy(backup, r, (size_t)(k * k) * sizeof *r);
  dgesdd_("S", &K, &K, r, &K, s, u, &K, vt, &K, w->ework, &w->le, w->iwork, &info, FM_FCONE);
  if (info > 0) {
    /* dgesvd needs at most 5k doubles: below dgesdd's workspace. */
    memcpy(r, backup, (size_t)(k * k) * sizeof *r);
    dgesvd_("S", "S", &K, &K, r, &K, s, u, &K, vt, &K, w->ework, &w->le, &info, FM_FCONE,
            FM_FCONE);
  }
  free(backup);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL,
                      "fm_stats_rpca: SVD of the %lld x %lld projected matrix failed (info %d)",
                      (long long)k, (long long)k, (int)info);
  return FM_OK;
}

static int all_finite(const double *a, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++)
      if (!isfinite(a[i + j * ld])) return 0;
  return 1;
}

/* The backend reports progress in its own units (panels of one product);
 * relay it to the caller as a fraction of the current pass, so the caller
 * sees one monotone scale: passes. Cancellation and the forced backend
 * (ctl->backend) are forwarded unchanged. */
typedef struct relay {
  const fm_ctl *outer;
  double base, total; /* passes done before this product; passes at most */
} relay;

static int relay_cancel(void *ud) {
  const relay *r = ud;
  return fm_ctl_cancelled(r->outer);
}

static void relay_progress(void *ud, double done, double total) {
  const relay *r = ud;
  double frac = total > 0 ? done / total : 0.0;
  if (!(frac >= 0.0)) frac = 0.0;
  if (frac > 1.0) frac = 1.0;
  fm_ctl_progress(r->outer, r->base + frac, r->total);
}

fm_status rpca_product(fm_op op, const fm_mat *x, const fm_affine *aff, const double *b,
                       int64_t ldb, int64_t k, double *y, int64_t ldy, int64_t y_rows,
                       const fm_ctl *ctl, double *done, double total, fm_err *err) {
  if (fm_ctl_cancelled(ctl))
    return fm_err_set(err, FM_ECANCELLED,
                      "fm_stats_rpca: cancelled after %.0f of at most %.0f passes", *done, total);
  fm_product pr = {op, x, aff, b, ldb, k, y, ldy};
  relay rl = {ctl, *done, total};
  const fm_ctl inner = fm_ctl_relay(ctl, relay_cancel, relay_progress, &rl);
  fm_status st = fm_backend_run(&pr, ctl ? &inner : NULL, NULL, err);
  if (st != FM_OK) return st;
  if (!all_finite(y, y_rows, k, ldy))
    return fm_err_set(err, FM_EARG,
                      "fm_stats_rpca: the transformed matrix has missing or infinite values "
                      "(set aff->fill so that every entry is finite), or values so large that "
                      "A A' overflows");
  *done += 1.0;
  fm_ctl_progress(ctl, *done, total);
  return FM_OK;
}

fm_status rpca_check_nonzero(double lambda0, double zero_floor, int64_t n, int64_t p, fm_err *err) {
  const double s0 = lambda0 > 0 ? sqrt(lambda0) : 0.0;
  if (lambda0 > DBL_MIN && s0 > zero_floor) return FM_OK;
  return fm_err_set(err, FM_EDEGENERATE,
                    "the %lld x %lld matrix, centred and scaled as asked, is numerically zero "
                    "(largest singular value %g): no variation to describe (one row centred "
                    "at its mean is zero; do not centre, or give more rows)",
                    (long long)n, (long long)p, s0);
}

/* mmap'ed, since malloc may keep a freed block of this size in its heap
 * (glibc raises its mmap threshold after large frees), and the point of
 * freeing the column multipliers early is that their pages are gone before v
 * is written. */
double *rpca_col_array_new(int64_t count) {
  if (count <= 0) count = 1;
#ifdef MAP_ANONYMOUS
  void *a = mmap(NULL, (size_t)count * sizeof(double), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return a == MAP_FAILED ? NULL : a;
#else
  return malloc((size_t)count * sizeof(double));
#endif
}

void rpca_col_array_free(double *a, int64_t count) {
  if (!a) return;
  if (count <= 0) count = 1;
#ifdef MAP_ANONYMOUS
  munmap(a, (size_t)count * sizeof(double));
#else
  (void)count;
  free(a);
#endif
}
