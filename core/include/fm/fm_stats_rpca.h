/* fm_stats_rpca.h: randomized PCA (truncated SVD) of a streamed matrix.
 *
 * Computes the top-k singular triplets of A = the n x p logical matrix x
 * after its affine transform (centring, scaling, imputation fused into panel
 * decode), touching A only through fm_backend_run products: X (X' B) in one
 * pass (FM_OP_XXTB) per iteration and X' B once at the end. Nothing n x n,
 * p x p or p x l is formed: memory is a Krylov basis and its image (n x cap
 * each, together at most 32 MiB unless two blocks of l columns need more:
 * cap = l * min(16, max(2, 32 MiB / (16 n l))), at most n), O(cap^2), and
 * the n x k and p x k outputs, l = k + oversample (at n = 5000, p = 2e6,
 * k = 10, l = 20: a 320-column basis of 25.6 MB, freed before the final pass
 * writes the 160 MB of v; with opts.v_release, v lies in a file mapping
 * whose pages the final step releases as it writes them, so that v no
 * longer counts in the resident set).
 *
 * Algorithm: randomized block Krylov iteration (Musco and Musco 2015,
 * NeurIPS; Halko, Martinsson and Tropp 2011, SIAM Review 53(2), Section 4.6)
 * on the sample side, with the Gram operator A A': Q_0 = orth(G) for G an
 * n x l standard normal matrix; each iteration makes Y = A A' Q_new for the
 * newest block in one pass, extends the projected matrix T = Q'A A'Q of the
 * whole basis (its eigenvalues are the squared Ritz singular values of A on
 * span(Q)) and appends orth(Y - Q Q'Y) (full reorthogonalization); a full
 * basis restarts from its top l Ritz vectors and their residual, without a
 * pass. Iteration stops when each of the top-k singular values changed by at
 * most tol relative to itself since the previous iteration (or when its
 * square changed by at most 64 * DBL_EPSILON * d[0]^2, so that values at
 * rounding level of the largest one count as converged), when the basis
 * spans all n dimensions, or after max_iter iterations. The final step takes
 * U0 = orth(A A' Q S_k) (the top-k Ritz vectors with one more power step,
 * free since A A' Q is kept), makes one pass for Z = A'U0 (p x k, written
 * straight into the output v), and finishes with Rayleigh-Ritz on span(U0):
 * Z = Qv R, SVD of R'.
 * One run makes iterations + 2 passes over A (at most max_iter + 2).
 * Against subspace iteration (this module's method until 2026-11), Krylov
 * needs about the square root of the iterations for the same gap: the
 * generated 3000 x 600 case below converges in 21 iterations with l = 16
 * (subspace iteration: 69-82 with l = 36), and on the 1000 Genomes fixture
 * the top 10 PCs of plink2 --pca correlate >= 0.99995 after 9 iterations
 * with oversample 10 and tol 1e-4 (bench/p1_pca.R).
 * The error of a value at convergence is typically a few times tol; vectors
 * are accurate to about sqrt(tol) in angle when gaps are small, far better
 * for well-separated components.
 * Squared spectrum: the iteration sees d^2, so rounding at eps * d[0]^2
 * bounds the subspace of a component far below the top: its vectors are
 * accurate to at most about eps (d[0] / d[j])^2 / (relative gap) in angle,
 * against eps (d[0] / d[j]) / gap for an iteration on A itself. Measured
 * (core/tests/stats/stats_rpca, values 10^(-0.6 j), rank 12, k = 10, l = 20):
 * left vectors off by 3e-13 in angle at d[j] = 4e-3 d[0], 1.2e-10 at
 * 2.5e-4, 2.3e-8 and 7.3e-7 at 1.6e-5 and 4e-6 d[0] (right vectors 3e-11
 * and 3e-8). The values come from the final unsquared QR and kept their
 * accuracy (4e-14 relative at 4e-6 d[0]); a
 * value at rounding level of d[0] comes out near 0 rather than as the
 * square root of rounding noise. Entries of A must keep A A' in range:
 * entries near 1e154 overflow (FM_EARG), a matrix whose largest singular value is
 * below ~1e-154 underflows (FM_EDEGENERATE).
 * The start matrix G (n x l, column-major) is standard normal from
 * xoshiro256** seeded by splitmix64(seed) with Box-Muller (documented in
 * docs/rng.md), so results depend only on seed (and, at rounding level, on
 * the panel budget and the backend).
 * Signs: each component is flipped so that the entry of largest magnitude of
 * its left vector u (the first one on ties) is positive, and v goes with it
 * (scikit-learn's svd_flip convention).
 * Cancellation and progress: ctl->cancel is polled before every pass and
 * inside each product per panel; ctl->progress reports passes done (fractions
 * within a pass) out of max_iter + 2, ending at the total even when the
 * iteration stops early.
 * Thread safety: reentrant; the matrix, affine and options are only read.
 * Oracle: core/tests/stats/stats_rpca/ (LAPACK dgesvd of the explicitly transformed
 * dense matrix); prcomp() / svd() in R; plink2 --pca on genotypes. */
#ifndef FM_STATS_RPCA_H
#define FM_STATS_RPCA_H

#include "fm_base.h"
#include "fm_panel.h"

/* Recommended defaults (see fm_rpca_opts_default). Hard case: the generated
 * 3000 x 600 test matrix (four strong components plus N(0,1) noise, centred,
 * k = 6 so two components lie at the edge of the noise bulk where gaps are
 * ~0.3%) converges in 21 iterations with every value within 2e-11 of a full
 * SVD (oversample 30: 13 iterations, but each pass costs about 2.5 times as
 * much). Well-separated components converge in a handful of iterations. */
#define FM_RPCA_DEFAULT_OVERSAMPLE 10
#define FM_RPCA_DEFAULT_MAX_ITER 100
#define FM_RPCA_DEFAULT_TOL 1e-10

typedef struct fm_rpca_opts {
  int64_t k;          /* components wanted, 1 <= k <= min(n, p) */
  int64_t oversample; /* extra columns; l = min(k + oversample, min(n, p)) */
  int max_iter;       /* Krylov iterations at most (>= 0) */
  double tol;         /* relative change of the top-k singular values */
  uint64_t seed;
  /* Nonzero: the caller's v lies in a MAP_SHARED file mapping (an fmalloc
   * runtime, a file opened read-write), so pages of v the run has written
   * may be dropped from memory with madvise(MADV_DONTNEED): their contents
   * stay in the page cache and the file, and come back on the next touch.
   * The final step then streams (rpca_final.c): the pass Z = A'U0 runs
   * over column chunks of A into a buffer of fm_panel_budget() / 16 bytes
   * (4 MiB by default; chunk rows of k doubles), copies its rows into v and
   * accumulates the k x k Gram Z'Z; R of Z = QR comes from CholeskyQR2
   * (Fukaya et al. 2014) in two streamed passes over v in row chunks (v :=
   * Z R1^-1 with the second Gram, then v := v R2^-1 Vt' with the signs),
   * each chunk's whole pages of v released once written. Resident memory
   * then no longer holds the p x k v: a buffer of two chunks and O(k^2)
   * beside u (measured: bench/pca_rss.R). Results equal the in-place path
   * to rounding (core/tests/stats/stats_rpca: values within 1e-12 relative,
   * vectors within 1e-10, also for d[k-1] = 4e-6 d[0]). When Z is too
   * ill-conditioned for CholeskyQR2 (d[k-1] < 1e-7 d[0], from the
   * eigenvalues of Z'Z, or a Cholesky factorization fails, e.g. a rank-
   * deficient A) the in-place Householder path runs instead, touching all
   * of v, and its pages are released afterwards. On return every page of v
   * is released except the one holding the byte after v's end. Must be 0
   * for heap or anonymous memory (dropping those pages loses them); 0 in
   * fm_rpca_opts_default. fm_stats_rpca, which allocates v on the heap,
   * ignores it. */
  int v_release;
} fm_rpca_opts;

typedef struct fm_rpca_result {
  double *d;   /* owned: k singular values, decreasing */
  double *u;   /* owned: n x k left singular vectors, col-major */
  double *v;   /* owned: p x k right singular vectors, col-major */
  int64_t n, p, k;
  int iterations; /* Krylov iterations performed (passes = iterations + 2) */
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
 *         its largest singular value estimate is 0, below sqrt(DBL_MIN)
 *         (A A' underflows) or below the rounding left by centring,
 *         4 eps sqrt(n p) max_j |center_j scale_j|),
 *         FM_EINTERNAL (LAPACK failure), or the backend's own error.
 * Owns:   borrows x, aff, opts and ctl; *out is zeroed first and on success
 *         holds owned arrays; free with fm_rpca_result_clear (safe on a
 *         zeroed struct, idempotent). On failure *out is left zeroed. */
FM_NODISCARD fm_status fm_stats_rpca(const fm_mat *x, const fm_affine *aff, const fm_rpca_opts *opts,
                                     fm_rpca_result *out, const fm_ctl *ctl, fm_err *err);

/* fm_stats_rpca into caller-owned buffers, so that a caller (the R glue)
 * can have v written straight into its own p x k array without a copy, and
 * with the column scaling given as divisors.
 * col_div: NULL, or p positive finite divisors applied after aff (whose
 *         scale must then be NULL): A = (X decoded with aff) diag(1/col_div),
 *         a missing entry becoming aff->fill[j] / col_div[j]. The multipliers
 *         1/col_div (and fill/col_div when fill is not all zero) live only
 *         during the iterations, in arrays returned to the system before the
 *         final pass writes v; that pass runs without the scaling and divides
 *         v's rows. A caller that keeps the divisors anyway (prcomp's `scale`)
 *         thus holds one length-p array instead of two while the p x k v is
 *         resident: 16 MB at p = 2e6. Results equal those with
 *         aff->scale = 1/col_div to rounding.
 * Shape:  d_out (k), u_out (n x k), v_out (p x k), col-major with leading
 *         dimensions n and p; iterations_out and converged_out as in
 *         fm_rpca_result (each may be NULL).
 * Errors: as fm_stats_rpca; FM_EARG also for a NULL output array, for
 *         col_div together with aff->scale, or for a col_div entry that is
 *         not positive and finite (naming it).
 * Owns:   borrows everything; writes only the outputs, whose contents are
 *         unspecified on failure (the counters are then 0). */
FM_NODISCARD fm_status fm_stats_rpca_into(const fm_mat *x, const fm_affine *aff,
                                          const double *col_div, const fm_rpca_opts *opts,
                                          double *d_out, double *u_out, double *v_out,
                                          int *iterations_out, int *converged_out,
                                          const fm_ctl *ctl, fm_err *err);

void fm_rpca_result_clear(fm_rpca_result *r);

#endif
