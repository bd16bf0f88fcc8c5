/* fm_stats_rpca.h: randomized PCA (truncated SVD) of a streamed matrix.
 *
 * Computes the top-k singular triplets of A = the n x p logical matrix x
 * after its affine transform (centring, scaling, imputation fused into panel
 * decode), touching A only through fm_backend_run products X*B and X'*B.
 * Nothing n x n or p x p is formed: memory is O((n + p) * l), l = k + oversample.
 *
 * Algorithm: randomized subspace iteration (Halko, Martinsson and Tropp 2011,
 * SIAM Review 53(2), Algorithm 4.4) with QR re-orthonormalisation after every
 * product, followed by Rayleigh-Ritz: B' = A'Q (p x l), B' = Q2 R2 (QR),
 * SVD of R2'. Iteration stops when the top-k singular values change by less
 * than tol (relative) between iterations, or after max_iter iterations.
 * The start matrix is standard normal from xoshiro256** seeded by splitmix64(seed)
 * with Box-Muller (documented in docs/rng.md), so results depend only on seed.
 * Oracle: prcomp() / svd() in R; plink2 --pca on genotypes. */
#ifndef FM_STATS_RPCA_H
#define FM_STATS_RPCA_H

#include "fm_base.h"
#include "fm_panel.h"

typedef struct fm_rpca_opts {
  int64_t k;          /* components wanted, 1 <= k <= min(n, p) */
  int64_t oversample; /* extra columns; l = min(k + oversample, min(n, p)) */
  int max_iter;       /* power/subspace iterations at most (>= 0) */
  double tol;         /* relative change of the top-k singular values */
  uint64_t seed;
} fm_rpca_opts;

typedef struct fm_rpca_result {
  double *d;   /* owned: k singular values, decreasing */
  double *u;   /* owned: n x k left singular vectors, col-major */
  double *v;   /* owned: p x k right singular vectors, col-major */
  int64_t n, p, k;
  int iterations; /* subspace iterations performed */
  int converged;  /* nonzero when tol was reached */
} fm_rpca_result;

/* Errors: FM_EARG (k out of range), FM_ECANCELLED, FM_ENOMEM, FM_EDEGENERATE
 * (A is numerically zero), FM_EINTERNAL (LAPACK failure).
 * Owns: on success *out holds owned arrays; free with fm_rpca_result_clear
 * (safe on a zeroed struct). */
FM_NODISCARD fm_status fm_stats_rpca(const fm_mat *x, const fm_affine *aff, const fm_rpca_opts *opts,
                                     fm_rpca_result *out, const fm_ctl *ctl, fm_err *err);

void fm_rpca_result_clear(fm_rpca_result *r);

#endif
