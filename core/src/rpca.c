/* rpca.c: randomized truncated SVD by subspace iteration on the sample side
 * (fm_stats_rpca.h).
 *
 * Halko, Martinsson and Tropp (2011), Algorithm 4.4, run on the n x n Gram
 * operator A A' so that one power step is ONE pass over A (FM_OP_XXTB), and
 * with a Rayleigh-Ritz step every iteration from the l x l matrix it leaves:
 *
 *   G (n x l) ~ N(0,1) from fm_rng seeded with opts->seed;  Q = orth(G)
 *   (a start on the sample side: A Omega with Omega p x l would need a
 *   p x l buffer; the first pass turns G into A (A'G), a start in the range
 *   of A like A Omega)
 *   repeat for it = 0, 1, ...:
 *     Y = A A' Q                                        (one XXTB pass)
 *     T = Q'Y = (A'Q)'(A'Q) = W diag(lambda) W'         (dsyev, l x l)
 *     sqrt(lambda) are the Ritz singular values of A on span(Q). Stop when
 *     the top k changed by less than tol (relative) since the previous
 *     iteration, or when it == max_iter; otherwise Q = orth(Y).
 *   U0 = orth(Y W_k): the top-k Ritz vectors with one more power step
 *        applied (free: Y is at hand), n x k.
 *   Z = A'U0 (p x k, one XTB pass, in the caller's v);  Z = Qv R (QR in place)
 *   R' = P S Vt (SVD, k x k)  =>  A ~ U0 U0'A = (U0 P) S (Qv Vt')'.
 *
 * A run of q iterations (it ends at q) makes q + 1 XXTB passes and one XTB
 * pass: q + 2 passes over A. Memory: two n x l buffers, O(l^2), and the
 * caller's outputs; the only p-sized array is the output v itself (the QR of
 * Z and the product Qv Vt' run in place, the latter through row chunks in a
 * freed n x l buffer), plus, with col_div, the multipliers during the
 * iterations only (v is first written by the final pass). Rows of v are
 * never held twice.
 *
 * Accuracy (2024-05 design note): the iteration works with squared singular
 * values, so rounding of order eps * d[0]^2 limits the subspace for a value
 * d[j] far below the top (vectors off by up to eps (d[0] / d[j])^2 / gap in
 * angle, measured numbers in fm_stats_rpca.h). We accept that for one pass
 * per iteration instead of two: PCA wants the top components, where the
 * loss is nil. The returned values come from the final QR of A'U0, not from
 * lambda, so they keep eps * d[0] absolute accuracy given the subspace. The
 * stop test accepts a change of lambda below 64 eps lambda[0] as converged:
 * a floor of 64 eps d[0] on d, squared.
 *
 * Signs (2024-05 design note): each component is flipped so that the entry of
 * largest magnitude of its left vector u (the first such entry on ties) is
 * positive, as scikit-learn's svd_flip(u_based_decision=True). */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS */
#include "fm/fm_stats_rpca.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
  double *tau;   /* (l) Householder scalars */
  double *qwork; /* (lq) dgeqrf/dorgqr workspace */
  fm_blas_int lq;
  double *ework; /* (le) dsyev and dgesdd/dgesvd workspace */
  fm_blas_int le;
  fm_blas_int *iwork; /* (8 k) dgesdd */
} work;

static int all_finite(const double *a, int64_t count) {
  for (int64_t i = 0; i < count; i++)
    if (!isfinite(a[i])) return 0;
  return 1;
}

/* A length-p array that must leave the process when freed: mmap'ed, since
 * malloc may keep a freed block of this size in its heap (glibc raises its
 * mmap threshold after large frees), and the point of freeing the column
 * multipliers early is that their pages are gone before v is written. */
static double *col_array_new(int64_t count) {
  if (count <= 0) count = 1;
#ifdef MAP_ANONYMOUS
  void *a = mmap(NULL, (size_t)count * sizeof(double), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return a == MAP_FAILED ? NULL : a;
#else
  return malloc((size_t)count * sizeof(double));
#endif
}

static void col_array_free(double *a, int64_t count) {
  if (!a) return;
  if (count <= 0) count = 1;
#ifdef MAP_ANONYMOUS
  munmap(a, (size_t)count * sizeof(double));
#else
  (void)count;
  free(a);
#endif
}

/* a (m x c, ld m, m >= c) := its orthonormal Q factor (Householder, so Q is
 * orthonormal even when a is rank deficient); r_out (c x c, ld c), when
 * given, := R. */
static fm_status qr_q(work *w, double *a, int64_t m, int64_t c, double *r_out, fm_err *err) {
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

/* Eigen-decomposition of the symmetric t (l x l, destroyed: its columns
 * become the eigenvectors), eigenvalues lam ascending. */
static fm_status small_eig(work *w, double *t, int64_t l, double *lam, fm_err *err) {
  const fm_blas_int L = (fm_blas_int)l;
  fm_blas_int info = 0;
  dsyev_("V", "U", &L, t, &L, lam, w->ework, &w->le, &info, FM_FCONE, FM_FCONE);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL,
                      "fm_stats_rpca: eigen-decomposition of the %lld x %lld projected Gram "
                      "matrix failed (info %d)",
                      (long long)l, (long long)l, (int)info);
  return FM_OK;
}

/* r (k x k, destroyed) = u diag(s) vt, s decreasing. dgesdd, falling back
 * to dgesvd when its divide and conquer fails to converge. */
static fm_status small_svd(work *w, double *r, int64_t k, double *s, double *u, double *vt,
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
                      "fm_stats_rpca: the transformed matrix has missing or infinite values "
                      "(set aff->fill so that every entry is finite), or values so large that "
                      "A A' overflows");
  *done += 1.0;
  fm_ctl_progress(ctl, *done, total);
  return FM_OK;
}

static fm_status check_opts(const fm_mat *x, const fm_rpca_opts *opts, fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  const int64_t mn = n < p ? n : p;
  if (n < 0 || p < 0)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: dimensions %lld x %lld are negative",
                      (long long)n, (long long)p);
  if (opts->k < 1 || opts->k > mn)
    return fm_err_set(
        err, FM_EARG,
        "fm_stats_rpca: k = %lld is outside [1, min(n, p) = %lld] for a %lld x %lld matrix",
        (long long)opts->k, (long long)mn, (long long)n, (long long)p);
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
  return FM_OK;
}

/* LAPACK workspace sizes: QR of n x l, n x k and p x k; dsyev of l x l;
 * SVD of k x k. */
static fm_status query_work(work *w, int64_t n, int64_t p, int64_t l, int64_t k, fm_err *err) {
  const fm_blas_int q = -1;
  fm_blas_int info = 0;
  double best = 1.0, got = 0.0, dummy = 0.0;
  const int64_t shapes[3][2] = {{n, l}, {n, k}, {p, k}};
  for (int t = 0; t < 3; t++) {
    const fm_blas_int M = (fm_blas_int)shapes[t][0], C = (fm_blas_int)shapes[t][1];
    dgeqrf_(&M, &C, &dummy, &M, &dummy, &got, &q, &info);
    if (info == 0 && got > best) best = got;
    dorgqr_(&M, &C, &C, &dummy, &M, &dummy, &got, &q, &info);
    if (info == 0 && got > best) best = got;
  }
  if (best > (double)INT_MAX) best = (double)INT_MAX;
  w->lq = (fm_blas_int)best;

  const fm_blas_int L = (fm_blas_int)l, K = (fm_blas_int)k;
  fm_blas_int iw = 0;
  best = 3.0 * (double)l; /* dsyev's documented minimum 3l - 1 */
  got = 0.0;
  dsyev_("V", "U", &L, &dummy, &L, &dummy, &got, &q, &info, FM_FCONE, FM_FCONE);
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
                      "fm_stats_rpca: l = %lld needs a LAPACK workspace beyond the BLAS integer "
                      "range",
                      (long long)l);
  w->le = (fm_blas_int)best;
  return FM_OK;
}

/* Largest singular value estimate s0 (lambda0 its square) against zero. */
static fm_status check_nonzero(double lambda0, double zero_floor, int64_t n, int64_t p,
                               fm_err *err) {
  const double s0 = lambda0 > 0 ? sqrt(lambda0) : 0.0;
  if (lambda0 > DBL_MIN && s0 > zero_floor) return FM_OK;
  return fm_err_set(err, FM_EDEGENERATE,
                    "fm_stats_rpca: the %lld x %lld transformed matrix is numerically zero "
                    "(largest singular value estimate %g)",
                    (long long)n, (long long)p, s0);
}

fm_status fm_stats_rpca_into(const fm_mat *x, const fm_affine *aff, const double *col_div,
                             const fm_rpca_opts *opts, double *d_out, double *u_out, double *v_out,
                             int *iterations_out, int *converged_out, const fm_ctl *ctl,
                             fm_err *err) {
  if (iterations_out) *iterations_out = 0;
  if (converged_out) *converged_out = 0;
  if (!x || !opts || !d_out || !u_out || !v_out)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: x, opts and the outputs must not be NULL");
  fm_status st = check_opts(x, opts, err);
  if (st != FM_OK) return st;
  const int64_t n = x->n_rows, p = x->n_cols, k = opts->k;
  if (col_div) {
    if (aff && aff->scale)
      return fm_err_set(err, FM_EARG,
                        "fm_stats_rpca: give the column scaling as aff->scale or as col_div, "
                        "not both");
    for (int64_t j = 0; j < p; j++)
      if (!(col_div[j] > 0 && col_div[j] < INFINITY))
        return fm_err_set(err, FM_EARG,
                          "fm_stats_rpca: col_div[%lld] = %g must be positive and finite",
                          (long long)j, col_div[j]);
  }
  const int64_t mn = n < p ? n : p;
  const int64_t l = opts->oversample >= mn - k ? mn : k + opts->oversample;
  int64_t size_nl = 0;
  if (!fm_mul_ok(n, l, &size_nl) || (uint64_t)size_nl > SIZE_MAX / sizeof(double))
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: buffers of %lld x %lld overflow",
                      (long long)n, (long long)l);
  work w;
  memset(&w, 0, sizeof w);
  st = query_work(&w, n, p, l, k, err);
  if (st != FM_OK) return st;

  /* With col_div: the iterations run with aff_it = (center, 1/div, fill/div)
   * in arrays freed before the final pass, which runs on aff_fin = (center,
   * none, fill) and divides the rows of v (fm_stats_rpca.h). */
  fm_affine aff_it = {NULL, NULL, NULL}, aff_fin = {NULL, NULL, NULL};
  if (aff) aff_it = aff_fin = *aff;
  double *mult = NULL, *fill_it = NULL;
  if (col_div) {
    mult = col_array_new(p);
    int fill_zero = 1;
    for (int64_t j = 0; aff && aff->fill && j < p && fill_zero; j++) fill_zero = aff->fill[j] == 0;
    if (!fill_zero) fill_it = col_array_new(p);
    if (!mult || (!fill_zero && !fill_it)) {
      col_array_free(mult, p);
      col_array_free(fill_it, p);
      return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate %lld column multipliers",
                        (long long)p);
    }
    for (int64_t j = 0; j < p; j++) mult[j] = 1.0 / col_div[j];
    if (fill_it)
      for (int64_t j = 0; j < p; j++) fill_it[j] = aff->fill[j] * mult[j];
    aff_it.scale = mult;
    if (fill_it) aff_it.fill = fill_it;
  }

  double *qa = malloc((size_t)size_nl * sizeof *qa); /* (n x l) Q, then scratch */
  double *ya = malloc((size_t)size_nl * sizeof *ya); /* (n x l) G, then Y */
  double *t = malloc((size_t)(l * l) * sizeof *t);   /* (l x l) Q'Y, then W */
  double *lam = malloc((size_t)l * sizeof *lam);     /* (l) eigenvalues of T, ascending */
  double *s = malloc((size_t)l * sizeof *s);         /* (l) sqrt(lambda), decreasing */
  double *s_prev = malloc((size_t)l * sizeof *s_prev);
  double *lam_prev = malloc((size_t)l * sizeof *lam_prev); /* (l) decreasing */
  double *wk = malloc((size_t)(l * k) * sizeof *wk);       /* (l x k) top-k eigenvectors */
  double *rk = malloc((size_t)(k * k) * sizeof *rk);       /* (k x k) R of Z, then R' */
  double *pk = malloc((size_t)(k * k) * sizeof *pk);       /* (k x k) left vectors of R' */
  double *vtk = malloc((size_t)(k * k) * sizeof *vtk);     /* (k x k) right vectors', of R' */
  w.tau = malloc((size_t)l * sizeof *w.tau);
  w.qwork = malloc((size_t)w.lq * sizeof *w.qwork);
  w.ework = malloc((size_t)w.le * sizeof *w.ework);
  w.iwork = malloc((size_t)(8 * k) * sizeof *w.iwork);
  if (!qa || !ya || !t || !lam || !s || !s_prev || !lam_prev || !wk || !rk || !pk || !vtk ||
      !w.tau || !w.qwork || !w.ework || !w.iwork) {
    st = fm_err_set(err, FM_ENOMEM,
                    "fm_stats_rpca: cannot allocate work for a %lld x %lld matrix with l = %lld",
                    (long long)n, (long long)p, (long long)l);
    goto done;
  }

  const double total = 2.0 + (double)opts->max_iter;
  double done_passes = 0.0;
  const fm_blas_int N = (fm_blas_int)n, P = (fm_blas_int)p, K = (fm_blas_int)k,
                    L = (fm_blas_int)l;
  const double one = 1.0, zero = 0.0;

  /* Scale of rounding noise in A: centring a constant column at its computed
   * mean leaves the same error, at most an ulp or so of |center*scale|, in
   * every row: a rank-one residue of norm up to eps sqrt(n p) max|center*scale|
   * when A is zero in exact arithmetic. */
  double amax = 0.0;
  if (aff_it.center) {
    for (int64_t j = 0; j < p; j++) {
      const double cs = fabs(aff_it.center[j] * (aff_it.scale ? aff_it.scale[j] : 1.0));
      if (cs > amax) amax = cs;
    }
  }
  const double zero_floor = 4.0 * DBL_EPSILON * sqrt((double)n * (double)p) * amax;

  fm_rng rng;
  fm_rng_seed(&rng, opts->seed);
  fm_rng_norm_fill(&rng, qa, size_nl); /* G, column-major n x l */
  st = qr_q(&w, qa, n, l, NULL, err);
  if (st != FM_OK) goto done;

  int converged = 0, it = 0;
  for (;; it++) {
    st = product(FM_OP_XXTB, x, &aff_it, qa, n, l, ya, n, n, ctl, &done_passes, total, err);
    if (st != FM_OK) goto done;
    /* T = Q'Y, symmetrized against rounding */
    dgemm_("T", "N", &L, &L, &N, &one, qa, &N, ya, &N, &zero, t, &L, FM_FCONE, FM_FCONE);
    for (int64_t j = 0; j < l; j++)
      for (int64_t i = 0; i < j; i++)
        t[i + j * l] = t[j + i * l] = 0.5 * (t[i + j * l] + t[j + i * l]);
    st = small_eig(&w, t, l, lam, err);
    if (st != FM_OK) goto done;
    const double lam0 = lam[l - 1];
    /* at it 0, Q is random: only an exact zero is conclusive; from it 1 on,
     * Q holds the dominant directions and the estimate is good */
    if (it == 0 && !(lam0 > 0)) {
      st = check_nonzero(lam0, zero_floor, n, p, err);
      goto done;
    }
    if (it == 1) {
      st = check_nonzero(lam0, zero_floor, n, p, err);
      if (st != FM_OK) goto done;
    }
    for (int64_t i = 0; i < l; i++) {
      const double li = lam[l - 1 - i];
      s[i] = li > 0 ? sqrt(li) : 0.0;
    }
    if (it > 0) {
      /* relative change per value, with an absolute floor on lambda at
       * rounding level of the largest one, so that (near-)zero trailing
       * values converge */
      const double floor_abs = 64.0 * DBL_EPSILON * lam0;
      int ok = 1;
      for (int64_t i = 0; i < k && ok; i++) {
        const double ch = fabs(s[i] - s_prev[i]);
        if (!(ch <= opts->tol * s[i] || fabs(lam[l - 1 - i] - lam_prev[i]) <= floor_abs)) ok = 0;
      }
      if (ok) {
        converged = 1;
        break;
      }
    }
    if (it >= opts->max_iter) break;
    memcpy(s_prev, s, (size_t)l * sizeof *s);
    for (int64_t i = 0; i < l; i++) lam_prev[i] = lam[l - 1 - i];
    /* Q = orth(Y): swap the buffers so that Y's space becomes Q */
    double *tmp = qa;
    qa = ya;
    ya = tmp;
    st = qr_q(&w, qa, n, l, NULL, err);
    if (st != FM_OK) goto done;
  }

  col_array_free(mult, p);
  col_array_free(fill_it, p);
  mult = fill_it = NULL;

  /* U0 = orth(Y W_k) into u_out (W_k: eigenvectors of the k largest lambda) */
  for (int64_t j = 0; j < k; j++) memcpy(wk + j * l, t + (l - 1 - j) * l, (size_t)l * sizeof *t);
  dgemm_("N", "N", &N, &K, &L, &one, ya, &N, wk, &L, &zero, u_out, &N, FM_FCONE, FM_FCONE);
  st = qr_q(&w, u_out, n, k, NULL, err);
  if (st != FM_OK) goto done;
  /* Z = A'U0 into v_out; Z = Qv R */
  st = product(FM_OP_XTB, x, &aff_fin, u_out, n, k, v_out, p, p, ctl, &done_passes, total, err);
  if (st != FM_OK) goto done;
  if (col_div)
    for (int64_t j = 0; j < k; j++)
      for (int64_t i = 0; i < p; i++) v_out[i + j * p] /= col_div[i];
  st = qr_q(&w, v_out, p, k, rk, err);
  if (st != FM_OK) goto done;
  /* R' = P S Vt (rk transposed into t's first k x k) */
  for (int64_t j = 0; j < k; j++)
    for (int64_t i = 0; i < k; i++) t[i + j * k] = rk[j + i * k];
  st = small_svd(&w, t, k, d_out, pk, vtk, err);
  if (st != FM_OK) goto done;
  st = check_nonzero(d_out[0] * d_out[0], zero_floor, n, p, err);
  if (st != FM_OK) goto done;
  /* U = U0 P (through qa as scratch: n x k <= n x l) */
  memcpy(qa, u_out, (size_t)(n * k) * sizeof *qa);
  dgemm_("N", "N", &N, &K, &K, &one, qa, &N, pk, &K, &zero, u_out, &N, FM_FCONE, FM_FCONE);
  /* V = Qv Vt' in row chunks, through qa (n l >= k rows of k) */
  {
    const int64_t chunk = size_nl / k;
    for (int64_t r0 = 0; r0 < p; r0 += chunk) {
      const int64_t nr = p - r0 < chunk ? p - r0 : chunk;
      const fm_blas_int R = (fm_blas_int)nr;
      dgemm_("N", "T", &R, &K, &K, &one, v_out + r0, &P, vtk, &K, &zero, qa, &R, FM_FCONE,
             FM_FCONE);
      for (int64_t j = 0; j < k; j++)
        memcpy(v_out + r0 + j * p, qa + j * nr, (size_t)nr * sizeof *qa);
    }
  }
  for (int64_t j = 0; j < k; j++) {
    double *uj = u_out + j * n, *vj = v_out + j * p;
    int64_t imax = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(uj[i]) > fabs(uj[imax])) imax = i;
    if (uj[imax] < 0) {
      for (int64_t i = 0; i < n; i++) uj[i] = -uj[i];
      for (int64_t i = 0; i < p; i++) vj[i] = -vj[i];
    }
  }
  if (iterations_out) *iterations_out = it;
  if (converged_out) *converged_out = converged;
  fm_ctl_progress(ctl, total, total);

done:
  col_array_free(mult, p);
  col_array_free(fill_it, p);
  free(qa);
  free(ya);
  free(t);
  free(lam);
  free(s);
  free(s_prev);
  free(lam_prev);
  free(wk);
  free(rk);
  free(pk);
  free(vtk);
  free(w.tau);
  free(w.qwork);
  free(w.ework);
  free(w.iwork);
  return st;
}

fm_status fm_stats_rpca(const fm_mat *x, const fm_affine *aff, const fm_rpca_opts *opts,
                        fm_rpca_result *out, const fm_ctl *ctl, fm_err *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!x || !opts || !out)
    return fm_err_set(err, FM_EARG, "fm_stats_rpca: x, opts and out must not be NULL");
  fm_status st = check_opts(x, opts, err);
  if (st != FM_OK) return st;
  const int64_t n = x->n_rows, p = x->n_cols, k = opts->k;
  int64_t nk = 0, pk = 0;
  if (!fm_mul_ok(n, k, &nk) || !fm_mul_ok(p, k, &pk) ||
      (uint64_t)nk > SIZE_MAX / sizeof(double) || (uint64_t)pk > SIZE_MAX / sizeof(double))
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: outputs of %lld x %lld overflow",
                      (long long)(n > p ? n : p), (long long)k);
  out->d = malloc((size_t)k * sizeof *out->d);
  out->u = malloc((size_t)nk * sizeof *out->u);
  out->v = malloc((size_t)pk * sizeof *out->v);
  if (!out->d || !out->u || !out->v) {
    fm_rpca_result_clear(out);
    return fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate the %lld x %lld outputs",
                      (long long)(n > p ? n : p), (long long)k);
  }
  st = fm_stats_rpca_into(x, aff, NULL, opts, out->d, out->u, out->v, &out->iterations,
                          &out->converged, ctl, err);
  if (st != FM_OK) {
    fm_rpca_result_clear(out);
    return st;
  }
  out->n = n;
  out->p = p;
  out->k = k;
  return FM_OK;
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
