/* rpca_impl.h: private pieces of fm_stats_rpca shared by its files:
 * rpca.c (block Krylov iteration on the sample side, entry points),
 * rpca_final.c (the final pass over A and the Rayleigh-Ritz step that gives
 * d, u and v), rpca_la.c (LAPACK wrappers, the product relay, buffers). */
#ifndef FM_RPCA_IMPL_H
#define FM_RPCA_IMPL_H

#include "fm/fm_backend.h"
#include "fm/fm_stats_rpca.h"

#include "base/blas.h"

/* LAPACK workspace sized once per run for every call below. */
typedef struct rpca_work {
  double *tau;   /* Householder scalars, as many as the widest QR */
  double *qwork; /* (lq) dgeqrf/dorgqr workspace */
  fm_blas_int lq;
  double *ework; /* (le) dsyev and dgesdd/dgesvd workspace */
  fm_blas_int le;
  fm_blas_int *iwork; /* (8 k) dgesdd */
} rpca_work;

/* Sizes the workspace for: QR of every (rows x cols) in qr_shapes
 * (n_shapes of them), dsyev of e x e, SVD of k x k; allocates it. */
fm_status rpca_work_init(rpca_work *w, const int64_t (*qr_shapes)[2], int n_shapes, int64_t e,
                         int64_t k, fm_err *err);
void rpca_work_free(rpca_work *w);

/* a (m x c, ld m, m >= c) := its orthonormal Q factor (Householder, so Q is
 * orthonormal even when a is rank deficient); r_out (c x c, ld c), when
 * given, := R. */
fm_status rpca_qr(rpca_work *w, double *a, int64_t m, int64_t c, double *r_out, fm_err *err);

/* Eigen-decomposition of the symmetric t (e x e, ld e): eigenvalues lam
 * ascending; with vectors, t's columns become the eigenvectors (else t is
 * destroyed). */
fm_status rpca_eig(rpca_work *w, double *t, int64_t e, double *lam, int vectors, fm_err *err);

/* r (k x k, destroyed) = u diag(s) vt, s decreasing. */
fm_status rpca_svd(rpca_work *w, double *r, int64_t k, double *s, double *u, double *vt,
                   fm_err *err);

/* One product over A through fm_backend_run with cancellation and progress
 * relayed in passes (*done counts finished passes out of total); y (y_rows x
 * k, ld ldy) must come out finite. */
fm_status rpca_product(fm_op op, const fm_mat *x, const fm_affine *aff, const double *b,
                       int64_t ldb, int64_t k, double *y, int64_t ldy, int64_t y_rows,
                       const fm_ctl *ctl, double *done, double total, fm_err *err);

/* FM_EDEGENERATE unless the largest singular value estimate sqrt(lambda0)
 * is above zero_floor (and lambda0 above DBL_MIN). */
fm_status rpca_check_nonzero(double lambda0, double zero_floor, int64_t n, int64_t p, fm_err *err);

/* A length-count double array that returns its pages to the system when
 * freed (mmap'ed where available). */
double *rpca_col_array_new(int64_t count);
void rpca_col_array_free(double *a, int64_t count);

/* The final stage: from U0 (n x k, orthonormal, in u_out) one XTB pass
 * Z = A'U0 into v_out (rows divided by col_div when given), Z = Qv R,
 * R' = P S Vt, u = U0 P, v = Qv Vt', d = S, signs fixed (fm_stats_rpca.h).
 * aff is the transform without the col_div scaling; zero_floor as in
 * rpca_check_nonzero. v_release: opts->v_release (the streamed path of
 * rpca_final.c, releasing v's pages as it goes; w must then also allow
 * rpca_eig of k x k). */
fm_status rpca_final(const fm_mat *x, const fm_affine *aff, const double *col_div, int64_t k,
                     int v_release, rpca_work *w, double zero_floor, double *d_out,
                     double *u_out, double *v_out, const fm_ctl *ctl, double *done, double total,
                     fm_err *err);

#endif
