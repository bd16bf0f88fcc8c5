/* fm_stats_rpca.h: randomized PCA (truncated SVD) of a streamed matrix.
 *
 * Computes the top-k singular triplets of A = the n x p logical matrix x
 * after its affine transform (centring, scaling, imputation fused into panel
 * decode), touching A only through fm_backend_run products X*B and X'*B.
 * Nothing n x n or p x p is formed: memory is O((n + p) * l), l = k + oversample
 * (one n x l and one p x l work buffer, O(l^2) more, and the n x k and p x k
 * results).
 *
 * Algorithm: randomized subspace iteration (Halko, Martinsson and Tropp 2011,
 * SIAM Review 53(2), Algorithm 4.4) with QR re-orthonormalisation after every
 * product, followed by Rayleigh-Ritz: B' = A'Q (p x l), B' = Q2 R2 (QR),
 * SVD of R2'. The Rayleigh-Ritz values are computed after every iteration
 * from the small R2 that the iteration produces anyway (no extra pass), and
 * iteration stops when each of the top-k singular values changed by at most
 * tol relative to itself since the previous iteration (or by at most
 * 64 * DBL_EPSILON * d[0], so that values at rounding level of the largest
 * one count as converged), or after max_iter iterations.
 * One run makes 2 * iterations + 2 passes over A (at most 2 * max_iter + 2).
 * The error of a value at convergence is typically a few times tol; vectors
 * are accurate to about sqrt(tol) in angle when gaps are small, far better
 * for well-separated components.
 * The start matrix is standard normal from xoshiro256** seeded by splitmix64(seed)
 * with Box-Muller (documented in docs/rng.md), so results depend only on seed
 * (and, at rounding level, on the panel budget).
 * Signs: each component is flipped so that the entry of largest magnitude of
 * its left vector u (the first one on ties) is positive, and v goes with it
 * (scikit-learn's svd_flip convention).
 * Cancellation and progress: ctl->cancel is polled before every pass and
 * inside each product per panel; ctl->progress reports passes done (fractions
 * within a pass) out of 2 * max_iter + 2, ending at the total even when the
 * iteration stops early.
 * Thread safety: reentrant; the matrix, affine and options are only read.
 * Oracle: core/tests/stats_rpca/ (LAPACK dgesvd of the explicitly transformed
 * dense matrix); prcomp() / svd() in R; plink2 --pca on genotypes. */
#ifndef FM_STATS_RPCA_H
#define FM_STATS_RPCA_H

#include "fm_base.h"
#include "fm_panel.h"

/* Recommended defaults (see fm_rpca_opts_default). Hard case: the generated
 * 3000 x 600 test matrix (four strong components plus N(0,1) noise, centred,
 * k = 6 so two components lie at the edge of the noise bulk where gaps are
 * ~0.3%) converges in 71-78 iterations over seeds with every value within
 * 1e-9 of a full SVD (oversample 20 needs 96-109, oversample 10 about 175).
 * Well-separated components converge in a handful of iterations. The larger
 * oversample costs flops (proportional to l) but saves passes over the data,
 * which dominate out of core. */
#define FM_RPCA_DEFAULT_OVERSAMPLE 30
#define FM_RPCA_DEFAULT_MAX_ITER 100
#define FM_RPCA_DEFAULT_TOL 1e-10

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
  int iterations; /* subspace iterations performed (passes = 2 * iterations + 2) */
  int converged;  /* nonzero when tol was reached (always 0 when max_iter is 0) */
} fm_rpca_result;

/* Options for k components with the recommended defaults and seed 0. */
fm_rpca_opts fm_rpca_opts_default(int64_t k);

/* Top-k singular triplets of A: A ~ u diag(d) v'.
 * Shape:  out->d (k), out->u (n x k), out->v (p x k), col-major, with n, p
 *         the logical dimensions of x. u and v have orthonormal columns.
 * Units:  those of A (after aff).
 * Errors: FM_EARG (x, opts or out NULL; k outside [1, min(n, p)]; negative
 *         oversample or max_iter; tol negative or NaN; an entry of A that is
 *         NaN or infinite, e.g. a missing value that aff->fill leaves NaN),
 *         FM_EUNSUPPORTED (n or p above the BLAS integer range, INT_MAX),
 *         FM_ECANCELLED, FM_ENOMEM, FM_EDEGENERATE (A is numerically zero:
 *         its largest singular value estimate is 0 or below the rounding
 *         left by centring, 4 eps sqrt(n p) max_j |center_j scale_j|),
 *         FM_EINTERNAL (LAPACK failure), or the backend's own error.
 * Owns:   borrows x, aff, opts and ctl; *out is zeroed first and on success
 *         holds owned arrays; free with fm_rpca_result_clear (safe on a
 *         zeroed struct, idempotent). On failure *out is left zeroed. */
FM_NODISCARD fm_status fm_stats_rpca(const fm_mat *x, const fm_affine *aff, const fm_rpca_opts *opts,
                                     fm_rpca_result *out, const fm_ctl *ctl, fm_err *err);

void fm_rpca_result_clear(fm_rpca_result *r);

#endif
