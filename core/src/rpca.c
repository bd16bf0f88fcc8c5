/* rpca.c: randomized truncated SVD by subspace iteration (fm_stats_rpca.h).
 *
 * Halko, Martinsson and Tropp (2011), Algorithm 4.4, arranged so that the
 * Rayleigh-Ritz step of every iteration comes for free:
 *
 *   Omega (p x l) ~ N(0,1) from fm_rng seeded with opts->seed
 *   Y = A Omega;  Q R = Y                                (pass 1, XB)
 *   repeat for it = 0, 1, ...:
 *     Z = A'Q;  Qz Rz = Z                                (XTB)
 *     Since Q'A = Rz' Qz', the singular values of the small l x l Rz are the
 *     Ritz values of A on span(Q): exactly what the final Rayleigh-Ritz step
 *     would report. Stop when the top k changed by less than tol (relative)
 *     since the previous iteration, or when it == max_iter.
 *     Y = A Qz;  Q R = Y                                 (XB; one iteration)
 *   Rz = Ur S Vr'  =>  A ~ Q Q'A = (Q Vr) S (Qz Ur)':   U = Q Vr, V = Qz Ur.
 *
 * So a run of q iterations makes 2q + 2 passes over A, like Algorithm 4.4 with
 * q power steps followed by B = Q'A. QR is Householder (dgeqrf + dorgqr), which
 * keeps Q orthonormal even when Y is rank deficient.
 *
 * Memory: one n x l and one p x l buffer plus O(l^2); outputs n x k and p x k.
 *
 * Signs (2024-05 design note): each component is flipped so that the entry of
 * largest magnitude of its left vector u (the first such entry on ties) is
 * positive, as scikit-learn's svd_flip(u_based_decision=True). */
#include "fm/fm_stats_rpca.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "fm/fm_backend.h"
#include "rng.h"

void fm_rpca_result_clear(fm_rpca_result *r) {
  if (!r) return;
  free(r->d);
  free(r->u);
  free(r->v);
  memset(r, 0, sizeof *r);
}

typedef struct work {
  int64_t n, p, l;
  double *tau;   /* (l) Householder scalars */
  double *qwork; /* (lq) dgeqrf/dorgqr workspace */
  fm_blas_int lq;
  double *swork; /* (ls) dgesdd workspace */
  fm_blas_int ls;
  fm_blas_int *iwork; /* (8 l) dgesdd */
} work;

static int all_finite(const double *a, int64_t count) {
  for (int64_t i = 0; i < count; i++)
    if (!isfinite(a[i])) return 0;
  return 1;
}

/* a (m x l, ld m) := its orthonormal Q factor; r_out (l x l, ld l) := R. */
static fm_status qr_q(work *w, double *a, int64_t m, double *r_out, fm_err *err) {
  const fm_blas_int M = (fm_blas_int)m, L = (fm_blas_int)w->l;
  fm_blas_int info = 0;
  dgeqrf_(&M, &L, a, &M, w->tau, w->qwork, &w->lq, &info);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL, "fm_stats_rpca: dgeqrf returned info %d", (int)info);
  if (r_out) {
    for (int64_t j = 0; j < w->l; j++)
      for (int64_t i = 0; i < w->l; i++) r_out[i + j * w->l] = i <= j ? a[i + j * m] : 0.0;
  }
  dorgqr_(&M, &L, &L, a, &M, w->tau, w->qwork, &w->lq, &info);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL, "fm_stats_rpca: dorgqr returned info %d", (int)info);
  return FM_OK;
}

/* Singular values s (l, decreasing) of r (l x l, destroyed); with vectors when
 * u and vt (l x l each) are given. dgesdd, falling back to dgesvd when its
 * divide and conquer fails to converge. */
static fm_status small_svd(work *w, double *r, double *s, double *u, double *vt, fm_err *err) {
  const fm_blas_int L = (fm_blas_int)w->l;
  const fm_blas_int one = 1;
  const char *job = u ? "S" : "N";
  fm_blas_int info = 0;
  double *backup = malloc((size_t)(w->l * w->l) * sizeof *backup);
  if (!backup)
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate %lld x %lld", (long long)w->l,
                      (long long)w->l);
  memcpy(backup, r, (size_t)(w->l * w->l) * sizeof *r);
  dgesdd_(job, &L, &L, r, &L, s, u ? u : r, u ? &L : &one, vt ? vt : r, vt ? &L : &one, w->swork,
          &w->ls, w->iwork, &info, FM_FCONE);
  if (info > 0) {
    /* dgesvd needs at most max(3l + l, 5l) = 5l doubles: below dgesdd's query. */
    memcpy(r, backup, (size_t)(w->l * w->l) * sizeof *r);
    dgesvd_(job, job, &L, &L, r, &L, s, u ? u : r, u ? &L : &one, vt ? vt : r, vt ? &L : &one,
            w->swork, &w->ls, &info, FM_FCONE, FM_FCONE);
  }
  free(backup);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL,
                      "fm_stats_rpca: SVD of the %lld x %lld projected matrix failed (info %d)",
                      (long long)w->l, (long long)w->l, (int)info);
  return FM_OK;
}

/* The backend reports progress in its own units (panels of one product);
 * relay it to the caller as a fraction of the current pass, so the caller
 * sees one monotone scale: passes. Cancellation is forwarded unchanged. */
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

static fm_status product(fm_op op, const fm_mat *x, const fm_affine *aff, const double *b,
                         int64_t ldb, int64_t k, double *y, int64_t ldy, int64_t y_rows,
                         const fm_ctl *ctl, double *done, double total, fm_err *err) {
  if (fm_ctl_cancelled(ctl))
    return fm_err_set(err, FM_ECANCELLED,
                      "fm_stats_rpca: cancelled after %.0f of at most %.0f passes", *done, total);
  fm_product pr = {op, x, aff, b, ldb, k, y, ldy};
  relay rl = {ctl, *done, total};
  const fm_ctl inner = {relay_cancel, relay_progress, &rl};
  fm_status st = fm_backend_run(&pr, ctl ? &inner : NULL, NULL, err);
  if (st != FM_OK) return st;
  if (!all_finite(y, y_rows * k))
    return fm_err_set(err, FM_EARG,
                      "fm_stats_rpca: the transformed matrix has missing or infinite values; "
                      "set aff->fill so that every entry is finite");
  *done += 1.0;
  fm_ctl_progress(ctl, *done, total);
  return FM_OK;
}

fm_status fm_stats_rpca(const fm_mat *x, const fm_affine *aff, const fm_rpca_opts *opts,
                        fm_rpca_result *out, const fm_ctl *ctl, fm_err *err) {
  fm_status st = FM_OK;
  work w;
  memset(&w, 0, sizeof w);
  double *qn = NULL, *pz = NULL, *rz = NULL, *rc = NULL, *s = NULL, *s_prev = NULL;
  double *ur = NULL, *vrt = NULL;
  if (out) memset(out, 0, sizeof *out);
  if (!x || !opts || !out)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: x, opts and out must not be NULL");
  const int64_t n = x->n_rows, p = x->n_cols;
  const int64_t mn = n < p ? n : p;
  const int64_t k = opts->k;
  if (n < 0 || p < 0)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: dimensions %lld x %lld are negative",
                      (long long)n, (long long)p);
  if (k < 1 || k > mn)
    return fm_err_set(
        err, FM_EARG,
        "fm_stats_rpca: k = %lld is outside [1, min(n, p) = %lld] for a %lld x %lld matrix",
        (long long)k, (long long)mn, (long long)n, (long long)p);
  if (opts->oversample < 0)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: oversample = %lld is negative",
                      (long long)opts->oversample);
  if (opts->max_iter < 0)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: max_iter = %d is negative", opts->max_iter);
  if (!(opts->tol >= 0.0))
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: tol = %g must be >= 0", opts->tol);
  if (!fm_blas_dim_ok(n) || !fm_blas_dim_ok(p))
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "fm_stats_rpca: %lld x %lld exceeds the BLAS integer range (%d)",
                      (long long)n, (long long)p, INT_MAX);
  const int64_t l = opts->oversample >= mn - k ? mn : k + opts->oversample;
  int64_t size_nl = 0, size_pl = 0;
  if (!fm_mul_ok(n, l, &size_nl) || !fm_mul_ok(p, l, &size_pl) ||
      (uint64_t)size_nl > SIZE_MAX / sizeof(double) ||
      (uint64_t)size_pl > SIZE_MAX / sizeof(double))
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: buffers of %lld x %lld overflow",
                      (long long)(n > p ? n : p), (long long)l);
  w.n = n;
  w.p = p;
  w.l = l;

  /* Workspace queries: QR of n x l and p x l, SVD of l x l. */
  {
    const fm_blas_int L = (fm_blas_int)l, q = -1;
    fm_blas_int info = 0;
    double best = 1.0, got = 0.0;
    const int64_t ms[2] = {n, p};
    double dummy = 0.0;
    for (int t = 0; t < 2; t++) {
      const fm_blas_int M = (fm_blas_int)ms[t];
      dgeqrf_(&M, &L, &dummy, &M, &dummy, &got, &q, &info);
      if (info == 0 && got > best) best = got;
      dorgqr_(&M, &L, &L, &dummy, &M, &dummy, &got, &q, &info);
      if (info == 0 && got > best) best = got;
    }
    if (best > (double)INT_MAX) best = (double)INT_MAX;
    w.lq = (fm_blas_int)best;
    fm_blas_int iw = 0;
    got = 0.0;
    dgesdd_("S", &L, &L, &dummy, &L, &dummy, &dummy, &L, &dummy, &L, &got, &q, &iw, &info,
            FM_FCONE);
    best = got > 5.0 * (double)l ? got : 5.0 * (double)l;
    /* dgesdd's documented minimum for jobz 'S', square: 4 l^2 + 7 l. */
    const double doc_min = 4.0 * (double)l * (double)l + 7.0 * (double)l;
    if (best < doc_min) best = doc_min;
    if (best > (double)INT_MAX)
      return fm_err_set(
          err, FM_EUNSUPPORTED,
          "fm_stats_rpca: l = %lld needs an SVD workspace beyond the BLAS integer range",
          (long long)l);
    w.ls = (fm_blas_int)best;
  }

  qn = malloc((size_t)size_nl * sizeof *qn);
  pz = malloc((size_t)size_pl * sizeof *pz);
  rz = malloc((size_t)(l * l) * sizeof *rz);
  rc = malloc((size_t)(l * l) * sizeof *rc);
  ur = malloc((size_t)(l * l) * sizeof *ur);
  vrt = malloc((size_t)(l * l) * sizeof *vrt);
  s = malloc((size_t)l * sizeof *s);
  s_prev = malloc((size_t)l * sizeof *s_prev);
  w.tau = malloc((size_t)l * sizeof *w.tau);
  w.qwork = malloc((size_t)w.lq * sizeof *w.qwork);
  w.swork = malloc((size_t)w.ls * sizeof *w.swork);
  w.iwork = malloc((size_t)(8 * l) * sizeof *w.iwork);
  out->d = malloc((size_t)k * sizeof *out->d);
  out->u = malloc((size_t)(n * k) * sizeof *out->u);
  out->v = malloc((size_t)(p * k) * sizeof *out->v);
  if (!qn || !pz || !rz || !rc || !ur || !vrt || !s || !s_prev || !w.tau || !w.qwork || !w.swork ||
      !w.iwork || !out->d || !out->u || !out->v) {
    st = fm_err_set(err, FM_ENOMEM,
                    "fm_stats_rpca: cannot allocate work for a %lld x %lld matrix with l = %lld",
                    (long long)n, (long long)p, (long long)l);
    goto fail;
  }

  const double total = 2.0 + 2.0 * (double)opts->max_iter;
  double done = 0.0;
  fm_rng rng;
  fm_rng_seed(&rng, opts->seed);
  fm_rng_norm_fill(&rng, pz, size_pl); /* Omega, column-major p x l */

  /* Scale of rounding noise in A: centring a constant column at its computed
   * mean leaves the same error, at most an ulp or so of |center*scale|, in
   * every row: a rank-one residue of norm up to eps sqrt(n p) max|center*scale|
   * when A is zero in exact arithmetic. */
  double amax = 0.0;
  if (aff && aff->center) {
    for (int64_t j = 0; j < p; j++) {
      const double cs = fabs(aff->center[j] * (aff->scale ? aff->scale[j] : 1.0));
      if (cs > amax) amax = cs;
    }
  }
  const double zero_floor = 4.0 * DBL_EPSILON * sqrt((double)n * (double)p) * amax;

  st = product(FM_OP_XB, x, aff, pz, p, l, qn, n, n, ctl, &done, total, err);
  if (st != FM_OK) goto fail;
  st = qr_q(&w, qn, n, NULL, err);
  if (st != FM_OK) goto fail;

  int converged = 0, iterations = 0;
  for (int it = 0;; it++) {
    st = product(FM_OP_XTB, x, aff, qn, n, l, pz, p, p, ctl, &done, total, err);
    if (st != FM_OK) goto fail;
    st = qr_q(&w, pz, p, rz, err);
    if (st != FM_OK) goto fail;
    memcpy(rc, rz, (size_t)(l * l) * sizeof *rc);
    st = small_svd(&w, rc, s, NULL, NULL, err);
    if (st != FM_OK) goto fail;
    if (it == 0 && !(s[0] > zero_floor && s[0] > DBL_MIN)) {
      st = fm_err_set(err, FM_EDEGENERATE,
                      "fm_stats_rpca: the %lld x %lld transformed matrix is numerically zero "
                      "(largest singular value estimate %g)",
                      (long long)n, (long long)p, s[0]);
      goto fail;
    }
    if (it > 0) {
      /* relative change per value, with an absolute floor at rounding level
       * of the largest value so that (near-)zero trailing values converge */
      const double floor_abs = 64.0 * DBL_EPSILON * s[0];
      int ok = 1;
      for (int64_t i = 0; i < k && ok; i++) {
        const double ch = fabs(s[i] - s_prev[i]);
        if (!(ch <= opts->tol * s[i] || ch <= floor_abs)) ok = 0;
      }
      if (ok) {
        converged = 1;
        break;
      }
    }
    if (it >= opts->max_iter) break;
    memcpy(s_prev, s, (size_t)l * sizeof *s);
    st = product(FM_OP_XB, x, aff, pz, p, l, qn, n, n, ctl, &done, total, err);
    if (st != FM_OK) goto fail;
    st = qr_q(&w, qn, n, NULL, err);
    if (st != FM_OK) goto fail;
    iterations = it + 1;
  }

  /* Rz = Ur S Vr' ; U = Q Vr, V = Qz Ur (top k). */
  memcpy(rc, rz, (size_t)(l * l) * sizeof *rc);
  st = small_svd(&w, rc, s, ur, vrt, err);
  if (st != FM_OK) goto fail;
  {
    const fm_blas_int N = (fm_blas_int)n, P = (fm_blas_int)p, K = (fm_blas_int)k,
                      L = (fm_blas_int)l;
    const double one = 1.0, zero = 0.0;
    dgemm_("N", "T", &N, &K, &L, &one, qn, &N, vrt, &L, &zero, out->u, &N, FM_FCONE, FM_FCONE);
    dgemm_("N", "N", &P, &K, &L, &one, pz, &P, ur, &L, &zero, out->v, &P, FM_FCONE, FM_FCONE);
  }
  for (int64_t j = 0; j < k; j++) {
    out->d[j] = s[j];
    double *uj = out->u + j * n, *vj = out->v + j * p;
    int64_t imax = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(uj[i]) > fabs(uj[imax])) imax = i;
    if (uj[imax] < 0) {
      for (int64_t i = 0; i < n; i++) uj[i] = -uj[i];
      for (int64_t i = 0; i < p; i++) vj[i] = -vj[i];
    }
  }
  out->n = n;
  out->p = p;
  out->k = k;
  out->iterations = iterations;
  out->converged = converged;
  fm_ctl_progress(ctl, total, total);
  goto done_ok;

fail:
  fm_rpca_result_clear(out);
done_ok:
  free(qn);
  free(pz);
  free(rz);
  free(rc);
  free(ur);
  free(vrt);
  free(s);
  free(s_prev);
  free(w.tau);
  free(w.qwork);
  free(w.swork);
  free(w.iwork);
  return st;
}

fm_rpca_opts fm_rpca_opts_default(int64_t k) {
  fm_rpca_opts o;
  o.k = k;
  o.oversample = FM_RPCA_DEFAULT_OVERSAMPLE;
  o.max_iter = FM_RPCA_DEFAULT_MAX_ITER;
  o.tol = FM_RPCA_DEFAULT_TOL;
  o.seed = 0;
  return o;
}
