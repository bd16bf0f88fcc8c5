/* stats_ldpred2_inf.c: LDpred2-inf (fm_stats_ldpred2.h) by conjugate
 * gradients on the band, one band product a iteration.
 *
 * A = shrink R + (1 - shrink) I + diag(m / (h2 n_j)) is applied column by
 * column: (A x)_j = shrink R[, j]' x + (1 - shrink + m / (h2 n_j)) x_j, R
 * symmetric, so each entry of the product is one dot product with a
 * contiguous column, summed in a fixed order (ldp_dot_col) whatever the thread count.
 * Preconditioner: A's diagonal (Jacobi), 1 + m / (h2 n_j) for a unit
 * diagonal. 2026-12-02: bigsnpr solves the same system by MINRES to a
 * relative residual of 1e-10 (bigsparser::sp_solve_sym); CG suits a system
 * that must be positive definite and says so when it is not. */
#define _POSIX_C_SOURCE 200809L
#include "stats_ldpred2_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct inf_prod {
  const fm_band *ld;
  double shrink;
  const double *dadd; /* m: 1 - shrink + m / (h2 n_j) */
  const double *x;
  double *y;
  int64_t j0, j1;
} inf_prod;

static void prod_range(const inf_prod *p) {
  for (int64_t j = p->j0; j < p->j1; j++)
    p->y[j] = p->shrink * ldp_dot_col(p->ld, j, p->x) + p->dadd[j] * p->x[j];
}

static void *prod_main(void *arg) {
  prod_range(arg);
  return NULL;
}

/* y = A x on nt threads (column ranges of about equal stored entries). */
static void band_prod(const fm_band *ld, double shrink, const double *dadd, const double *x,
                      double *y, int nt) {
  const int64_t m = ld->n, nnz = ld->colptr[m];
  if (nt < 1 || nnz < 200000) nt = 1; /* a thread start costs more than such a product */
  if (nt > FM_THREADS_MAX) nt = FM_THREADS_MAX;
  inf_prod part[FM_THREADS_MAX];
  pthread_t tid[FM_THREADS_MAX];
  int64_t j = 0;
  for (int t = 0; t < nt; t++) {
    const int64_t target = nnz / nt * (t + 1);
    int64_t j1 = j;
    if (t == nt - 1) {
      j1 = m;
    } else {
      while (j1 < m && ld->colptr[j1] < target) j1++;
    }
    part[t] = (inf_prod){ld, shrink, dadd, x, y, j, j1};
    j = j1;
  }
  int started = 0;
  for (int t = 1; t < nt; t++) {
    if (pthread_create(&tid[t], NULL, prod_main, &part[t]) != 0) break;
    started = t;
  }
  prod_range(&part[0]);
  for (int t = started + 1; t < nt; t++) prod_range(&part[t]);
  for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
}

static double dot(const double *a, const double *b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

fm_status fm_stats_ldpred2_inf(const fm_band *ld, const fm_ldpred2_data *d, double h2,
                               const fm_ldpred2_inf_opts *opts, double *beta_out,
                               fm_ldpred2_inf_info *info, const fm_ctl *ctl, fm_err *err) {
  static const char *what = "LDpred2-inf";
  if (info) *info = (fm_ldpred2_inf_info){0, NAN};
  const double shrink = opts && opts->shrink != 0 ? opts->shrink : 1;
  const double tol = opts && opts->tol > 0 ? opts->tol : 1e-12;
  const int64_t max_iter = opts && opts->max_iter > 0 ? opts->max_iter : 1000;
  fm_status st = ldp_check(ld, d, shrink, what, err);
  if (st != FM_OK) return st;
  if (!beta_out) return fm_err_set(err, FM_EARG, "%s: beta_out is NULL", what);
  if (!(isfinite(h2) && h2 > 0))
    return fm_err_set(err, FM_EARG, "%s: h2 is %g, it must be finite and > 0", what, h2);
  const int64_t m = ld->n;
  const int nt = fm_threads(ctl);
  double *buf = malloc((size_t)m * 8 * sizeof *buf);
  if (!buf) return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate 8 vectors of %lld", what,
                              (long long)m);
  double *scale = buf, *b = buf + m, *dadd = buf + 2 * m, *x = buf + 3 * m, *r = buf + 4 * m,
         *z = buf + 5 * m, *p = buf + 6 * m, *ap = buf + 7 * m;
  ldp_scale(d, scale, b);
  for (int64_t j = 0; j < m; j++) {
    dadd[j] = 1 - shrink + (double)m / (h2 * d->n_eff[j]);
    x[j] = 0;
    r[j] = b[j];
    z[j] = r[j] / (shrink + dadd[j]);
    p[j] = z[j];
  }
  const double bnorm = sqrt(dot(b, b, m));
  double rz = dot(r, z, m), rnorm = bnorm;
  int64_t it = 0;
  while (rnorm > tol * bnorm) {
    if (it >= max_iter) {
      st = fm_err_set(err, FM_EDEGENERATE,
                      "%s: conjugate gradients reached a relative residual of %.3g after %lld "
                      "iterations, not %.3g (shrink %g)",
                      what, rnorm / bnorm, (long long)it, tol, shrink);
      goto done;
    }
    if (fm_ctl_cancelled(ctl)) {
      st = fm_err_set(err, FM_ECANCELLED, "%s: cancelled", what);
      goto done;
    }
    band_prod(ld, shrink, dadd, p, ap, nt);
    const double pap = dot(p, ap, m);
    if (!(pap > 0)) {
      st = fm_err_set(err, FM_EDEGENERATE,
                      "%s: the LD matrix (off-diagonal entries times shrink = %g) plus "
                      "m / (h2 n_eff) on its diagonal is not positive definite (curvature %.3g "
                      "at iteration %lld); use a smaller shrink",
                      what, shrink, pap, (long long)it + 1);
      goto done;
    }
    const double alpha = rz / pap;
    for (int64_t j = 0; j < m; j++) {
      x[j] += alpha * p[j];
      r[j] -= alpha * ap[j];
      z[j] = r[j] / (shrink + dadd[j]);
    }
    const double rz1 = dot(r, z, m), bet = rz1 / rz;
    rz = rz1;
    for (int64_t j = 0; j < m; j++) p[j] = z[j] + bet * p[j];
    rnorm = sqrt(dot(r, r, m));
    it++;
    fm_ctl_progress(ctl, (double)it, (double)max_iter);
  }
  band_prod(ld, shrink, dadd, x, ap, nt); /* the true residual, for info */
  for (int64_t j = 0; j < m; j++) r[j] = b[j] - ap[j];
  if (info) *info = (fm_ldpred2_inf_info){it, bnorm > 0 ? sqrt(dot(r, r, m)) / bnorm : 0};
  for (int64_t j = 0; j < m; j++) beta_out[j] = x[j] * scale[j];
done:
  free(buf);
  return st;
}
