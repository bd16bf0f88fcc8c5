/* blas.h (private): Fortran BLAS/LAPACK prototypes used by the whole core.
 *
 * The core links the R-independent reference BLAS/LAPACK (Debian libblas-dev,
 * liblapack-dev) standalone, and R's BLAS/LAPACK inside the packages; both use
 * the gfortran calling convention:
 *   - every argument is passed by pointer;
 *   - integers are 32-bit (LP64 build): callers keep every dimension, leading
 *     dimension and workspace length below INT_MAX and check before calling
 *     (fm_blas_dim_ok below);
 *   - each CHARACTER argument adds a hidden string length of type size_t,
 *     appended after all the visible arguments, in the same order as the
 *     character arguments (gfortran >= 8; R's FCLEN/FCONE convention). Pass 1
 *     for each (FM_FCONE). Omitting them is undefined behaviour under LTO and
 *     with recent gfortran-built LAPACK.
 * Arrays are column-major, as in R and in the core's panels.
 *
 * Design note (2024-05): the prototypes live in one place so that every
 * module (backend.c, rpca.c, colvar.c, gwas) declares them identically;
 * do not redeclare them elsewhere. */
#ifndef FM_BLAS_H
#define FM_BLAS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef int fm_blas_int;  /* Fortran INTEGER (LP64) */
typedef size_t fm_fclen;  /* hidden CHARACTER length */
#define FM_FCONE ((fm_fclen)1)

/* Nonzero when a dimension fits a Fortran INTEGER (0 <= v <= INT_MAX). */
static inline int fm_blas_dim_ok(int64_t v) { return v >= 0 && v <= (int64_t)INT_MAX; }

/* ---- BLAS level 1 ---- */
double ddot_(const fm_blas_int *n, const double *x, const fm_blas_int *incx, const double *y,
             const fm_blas_int *incy);
double dnrm2_(const fm_blas_int *n, const double *x, const fm_blas_int *incx);
void daxpy_(const fm_blas_int *n, const double *alpha, const double *x, const fm_blas_int *incx,
            double *y, const fm_blas_int *incy);
void dscal_(const fm_blas_int *n, const double *alpha, double *x, const fm_blas_int *incx);
void dcopy_(const fm_blas_int *n, const double *x, const fm_blas_int *incx, double *y,
            const fm_blas_int *incy);

/* ---- BLAS level 2 ---- */
/* y := alpha op(A) x + beta y */
void dgemv_(const char *trans, const fm_blas_int *m, const fm_blas_int *n, const double *alpha,
            const double *a, const fm_blas_int *lda, const double *x, const fm_blas_int *incx,
            const double *beta, double *y, const fm_blas_int *incy, fm_fclen trans_len);

/* ---- BLAS level 3 ---- */
/* C (m x n) := alpha op(A) op(B) + beta C */
void dgemm_(const char *transa, const char *transb, const fm_blas_int *m, const fm_blas_int *n,
            const fm_blas_int *k, const double *alpha, const double *a, const fm_blas_int *lda,
            const double *b, const fm_blas_int *ldb, const double *beta, double *c,
            const fm_blas_int *ldc, fm_fclen transa_len, fm_fclen transb_len);

/* C (n x n, triangle uplo) := alpha op(A) op(A)' + beta C; trans 'N': A n x k, 'T': A k x n */
void dsyrk_(const char *uplo, const char *trans, const fm_blas_int *n, const fm_blas_int *k,
            const double *alpha, const double *a, const fm_blas_int *lda, const double *beta,
            double *c, const fm_blas_int *ldc, fm_fclen uplo_len, fm_fclen trans_len);

/* B := alpha op(A)^-1 B (side 'L') or alpha B op(A)^-1 (side 'R'), A triangular */
void dtrsm_(const char *side, const char *uplo, const char *transa, const char *diag,
            const fm_blas_int *m, const fm_blas_int *n, const double *alpha, const double *a,
            const fm_blas_int *lda, double *b, const fm_blas_int *ldb, fm_fclen side_len,
            fm_fclen uplo_len, fm_fclen transa_len, fm_fclen diag_len);

/* B := alpha op(A) B (side 'L') or alpha B op(A) (side 'R'), A triangular */
void dtrmm_(const char *side, const char *uplo, const char *transa, const char *diag,
            const fm_blas_int *m, const fm_blas_int *n, const double *alpha, const double *a,
            const fm_blas_int *lda, double *b, const fm_blas_int *ldb, fm_fclen side_len,
            fm_fclen uplo_len, fm_fclen transa_len, fm_fclen diag_len);

/* ---- LAPACK: QR ---- */
/* A (m x n) = Q R; Householder form in A and tau (min(m,n)). lwork = -1 queries. */
void dgeqrf_(const fm_blas_int *m, const fm_blas_int *n, double *a, const fm_blas_int *lda,
             double *tau, double *work, const fm_blas_int *lwork, fm_blas_int *info);

/* Form the m x n Q (m >= n >= k) from dgeqrf's output. */
void dorgqr_(const fm_blas_int *m, const fm_blas_int *n, const fm_blas_int *k, double *a,
             const fm_blas_int *lda, const double *tau, double *work, const fm_blas_int *lwork,
             fm_blas_int *info);

/* C := op(Q) C or C op(Q) with Q from dgeqrf (k reflectors). */
void dormqr_(const char *side, const char *trans, const fm_blas_int *m, const fm_blas_int *n,
             const fm_blas_int *k, const double *a, const fm_blas_int *lda, const double *tau,
             double *c, const fm_blas_int *ldc, double *work, const fm_blas_int *lwork,
             fm_blas_int *info, fm_fclen side_len, fm_fclen trans_len);

/* ---- LAPACK: SVD ---- */
/* A (m x n) = U diag(s) VT by divide and conquer. jobz 'A','S','O','N'.
 * iwork has 8 * min(m,n) entries. lwork = -1 queries. */
void dgesdd_(const char *jobz, const fm_blas_int *m, const fm_blas_int *n, double *a,
             const fm_blas_int *lda, double *s, double *u, const fm_blas_int *ldu, double *vt,
             const fm_blas_int *ldvt, double *work, const fm_blas_int *lwork, fm_blas_int *iwork,
             fm_blas_int *info, fm_fclen jobz_len);

/* A (m x n) = U diag(s) VT by QR iteration. jobu/jobvt 'A','S','O','N'. */
void dgesvd_(const char *jobu, const char *jobvt, const fm_blas_int *m, const fm_blas_int *n,
             double *a, const fm_blas_int *lda, double *s, double *u, const fm_blas_int *ldu,
             double *vt, const fm_blas_int *ldvt, double *work, const fm_blas_int *lwork,
             fm_blas_int *info, fm_fclen jobu_len, fm_fclen jobvt_len);

/* ---- LAPACK: symmetric eigenproblem ---- */
/* A (n x n symmetric) = Z diag(w) Z', eigenvalues ascending. jobz 'V'/'N'. */
void dsyev_(const char *jobz, const char *uplo, const fm_blas_int *n, double *a,
            const fm_blas_int *lda, double *w, double *work, const fm_blas_int *lwork,
            fm_blas_int *info, fm_fclen jobz_len, fm_fclen uplo_len);

void dsyevd_(const char *jobz, const char *uplo, const fm_blas_int *n, double *a,
             const fm_blas_int *lda, double *w, double *work, const fm_blas_int *lwork,
             fm_blas_int *iwork, const fm_blas_int *liwork, fm_blas_int *info, fm_fclen jobz_len,
             fm_fclen uplo_len);

/* ---- LAPACK: Cholesky and linear systems ---- */
/* A (n x n SPD) = U'U ('U') or L L' ('L'); info > 0: not positive definite. */
void dpotrf_(const char *uplo, const fm_blas_int *n, double *a, const fm_blas_int *lda,
             fm_blas_int *info, fm_fclen uplo_len);

/* Solve A X = B (n x nrhs) with the dpotrf factor. */
void dpotrs_(const char *uplo, const fm_blas_int *n, const fm_blas_int *nrhs, const double *a,
             const fm_blas_int *lda, double *b, const fm_blas_int *ldb, fm_blas_int *info,
             fm_fclen uplo_len);

/* Inverse of A from its dpotrf factor (the uplo triangle). */
void dpotri_(const char *uplo, const fm_blas_int *n, double *a, const fm_blas_int *lda,
             fm_blas_int *info, fm_fclen uplo_len);

/* Solve A X = B by LU with partial pivoting (ipiv n entries). */
void dgesv_(const fm_blas_int *n, const fm_blas_int *nrhs, double *a, const fm_blas_int *lda,
            fm_blas_int *ipiv, double *b, const fm_blas_int *ldb, fm_blas_int *info);

/* Least squares min ||A X - B|| (A m x n full rank) via QR/LQ. */
void dgels_(const char *trans, const fm_blas_int *m, const fm_blas_int *n,
            const fm_blas_int *nrhs, double *a, const fm_blas_int *lda, double *b,
            const fm_blas_int *ldb, double *work, const fm_blas_int *lwork, fm_blas_int *info,
            fm_fclen trans_len);

#endif
