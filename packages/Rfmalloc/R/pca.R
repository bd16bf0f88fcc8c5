# Randomized PCA over streamed matrices.

#' Randomized PCA of a matrix that need not fit in memory
#'
#' Computes the top `k` principal components of `x` (a dense numeric matrix,
#' plain or fmalloc-mapped, or a codec matrix such as a `.bed`) by randomized
#' block Krylov iteration. `x` is read only through panel products: one pass
#' `X (X' B)` per iteration and one `t(X) %*% B` at the end; centring,
#' scaling and mean imputation are fused into panel decoding, so no
#' standardized copy, and no n x n or p x p matrix, is ever formed. Memory
#' beyond the input is a Krylov basis of at most 32 MiB (more only when two
#' blocks of n x (k + oversample) doubles exceed it), the p x k `rotation`
#' and a few length-p vectors (the column statistics, centre and scale): at
#' n = 5,000, p = 2,000,000 and k = 10 that is the 160 MB of `rotation`
#' (the basis is freed before it is written) and 16 MB per length-p vector.
#' Pages of a mapped file (a `.bed` from
#' [fmalloc_bed_open()], fmalloc storage) are released once each block of a
#' pass is consumed, so resident memory does not grow with the file.
#'
#' **Memory of the rotation.** A large `rotation` is stored in a file-backed
#' fmalloc matrix rather than on the heap: with `runtime` given, in that
#' runtime; otherwise, when p x k x 8 bytes exceeds
#' `getOption("fmalloc.pca_mapped_bytes", 64e6)`, in a scratch runtime of
#' its own under [tempdir()] (the file is unlinked at once and disappears
#' with the last reference to the rotation, or at exit; set the option to
#' `Inf` to keep it on the heap). The final step then streams over the
#' rotation and drops each block's pages from memory once written (they stay
#' in the file and come back on access), so the peak no longer holds the
#' p x k matrix: a few MB of buffers instead. The result behaves as an ordinary
#' numeric matrix: dimnames, arithmetic, BLAS, `saveRDS()` (written by
#' value, being unnamed; [fmalloc_save()] can name it in a persistent
#' `runtime`) and value semantics (modifying a copy leaves the original
#' unchanged). Values equal the heap path to rounding (1e-12); when the
#' top-k values span more than 1e7 (d\[k\] < 1e-7 d\[1\]) the final step
#' falls back to an in-place QR that touches the whole rotation once.
#' Measured (by the benchmark `bench/pca_rss.R` in the source repository)
#' on a generated 5,000 x 2,000,000 `.bed`
#' (2.5 GB) opened with `variants = FALSE`, `k = 10`: a peak of 181 MiB
#' (190 MB) for the whole R process, of which 67 MiB is R with Rfmalloc
#' loaded and 31 MiB the resident result (centre and scale); the peak now
#' falls in the column statistics before the iteration. With the rotation on
#' the heap it was 254 MiB (267 MB), 153 MiB of them the rotation.
#'
#' @param x numeric matrix (n observations x p variables) or `fmalloc_codec_matrix`.
#' @param k number of components, `1 <= k <= min(n, p)`.
#' @param center `TRUE` (column means of observed values), `FALSE` or a numeric vector.
#' @param scale `FALSE`, `TRUE`/`"sd"` (as `prcomp(scale. = TRUE)`),
#'   `"binomial"` (sqrt(2p(1-p)), p = mean / 2: genotype standardization as
#'   in plink2 `--pca`), or a numeric vector of divisors.
#' @param seed integer seed of the start matrix (xoshiro256** seeded through
#'   splitmix64, normals by Box-Muller), a whole number in
#'   \[0, 2^53\]. The same seed gives the same result.
#' @param oversample extra columns per Krylov block beyond `k` (block width
#'   `k + oversample`).
#' @param max_iter maximum Krylov iterations (each is one pass over `x`;
#'   a run makes `iterations + 2` passes); a warning is given when the
#'   singular values have not converged by then.
#' @param tol stop when the top-`k` singular values change by less than this
#'   (relative) between iterations.
#' @details Long runs show a progress bar (package cli; set `options(fmalloc.progress =
#' FALSE)` to hide it) counting passes over `x`, against the bound
#' `max_iter + 2`; a converged run stops early. An interrupt (Ctrl-C)
#' stops the computation between panels.
#'
#' The iteration works on `X X'` (squared singular values), which halves the
#' passes. A component whose singular value is a fraction r of the largest
#' then gets vectors accurate to at most about 1e-16 / r^2 in angle instead
#' of 1e-16 / r: at r = 2.5e-4 the left vectors were 1e-10 off in angle,
#' at r = 4e-6 7e-7 (values keep full accuracy). Principal components of
#' interest are far above that.
#'
#' For genotype PCA, `oversample = 6, tol = 1e-4` is enough: on the 1000
#' Genomes fixture the top 10 PCs then correlate >= 0.99996 with
#' `plink2 --pca` (exact) after 11 iterations (a block of
#' k + 6 = 16 columns suits the fused kernels' 8-double vectors); the default
#' `tol` aims at values accurate to ~1e-10 and may need many more passes when
#' the trailing components lie in a noise bulk.
#' @param drop_constant drop columns with zero variance when scaling (with a
#'   message) instead of raising an error.
#' @param runtime `NULL` or a writable `"fmalloc_runtime"` from
#'   [open_fmalloc()] to hold `rotation` (see Memory of the rotation in
#'   Details); `NULL` chooses by the size of the rotation.
#' @param parallel `"mirai"` to compute every pass over a mapped `.bed`
#'   (the column statistics, each Krylov iteration, the final product) in
#'   blocks of variants on mirai daemons, `"none"` or `NULL` not to; the
#'   default is option `fmalloc.parallel` (see [fmalloc_parallel_info()]:
#'   the result is the same, bit for bit, for any number of daemons).
#' @return A list of class `c("fmalloc_pca", "prcomp")`, like [prcomp()]:
#'   `sdev` (length k: singular values / sqrt(n - 1)), `rotation` (p' x k
#'   loadings, where p' = p unless `drop_constant` dropped columns), `x`
#'   (n x k PC scores), `center` and `scale` (the vectors used, length p', or
#'   `FALSE`), plus `iterations`, `converged`, `n_imputed`, `kept`
#'   (indices of the columns used) and `total_var` (the total variance of the
#'   matrix decomposed: its sum of squares after centring, scaling and
#'   imputation, divided by n - 1). `summary()` gives, as for [prcomp()],
#'   each PC's standard deviation and its proportion of `total_var` (the
#'   variance explained; `prcomp`'s summary of k components would divide by
#'   their own total instead). Each component's sign is fixed so that
#'   the score of largest magnitude is positive (singular vectors are only
#'   defined up to sign).
#'
#' Missing values (`NA`/`NaN` in dense matrices, missing calls in codec
#' matrices) are mean-imputed (they become 0 after centring) and their number
#' is reported in a message; they are never treated as zeros. Infinite values
#' are an error. `scale = TRUE` divides by the sd of each column's observed
#' values; with missing values this differs slightly from `prcomp(scale. =
#' TRUE)` on the mean-imputed matrix, whose sd is smaller.
#'
#' **plink2 eigenvalues.** `plink2 --pca` reports eigenvalues of the genomic
#' relationship matrix (1/M) Xs Xs', Xs scaled by sqrt(2p(1-p)); with
#' `scale = "binomial"` they are `sdev^2 * (n - 1) / M` for M variants.
#' Without missing calls the two agree to rounding; with missing calls they
#' differ slightly (about 2% at 1% missing), because plink2 handles missing
#' genotypes in its relationship matrix differently from mean imputation.
#' @section Errors: `fm_error_earg` (bad arguments, k out of range, infinite
#'   values, `scale = "binomial"` on values outside \[0, 2\]),
#'   `fm_error_emismatch` (`center` or `scale` of the wrong length),
#'   `fm_error_edegenerate` (a constant column under scaling, a column with no
#'   observed value, or a matrix that is all zero once centred and scaled,
#'   such as a single row), `fm_error_eformat` (the backing file was
#'   truncated), `fm_error_ecancelled` (interrupted); for the
#'   rotation's storage, the errors of [open_fmalloc()] and
#'   [create_fmalloc_matrix()] (`fm_error_enospc` when the runtime or the
#'   disk is full, `fm_error_earg` for a read-only or invalid `runtime`).
#' @section Source: Halko, Martinsson and Tropp (2011), "Finding structure
#'   with randomness", SIAM Review 53(2):217-288, Section 4.6; Musco and
#'   Musco (2015), "Randomized block Krylov methods for stronger and faster
#'   approximate singular value decomposition", NeurIPS 28. Block Krylov
#'   iteration on `X X'` from an n x (k + oversample) Gaussian start, with
#'   full reorthogonalization, a restart from the top Ritz vectors when the
#'   basis is full, and a Rayleigh-Ritz step every iteration and at the end.
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
#' X <- create_fmalloc_matrix("double", 300, 40, runtime = rt)
#' X[] <- matrix(rnorm(300 * 4), 300, 4) %*% matrix(rnorm(4 * 40), 4, 40) + rnorm(300 * 40)
#' pca <- fmalloc_pca(X, k = 4)
#' pca$sdev
#' all.equal(pca$sdev, prcomp(X[, ])$sdev[1:4])
#' summary(pca) # variance explained: proportions of the total over all 40 columns
#'
#' # genotypes: 2-bit hardcalls, standardized as plink2 --pca does
#' g <- matrix(rbinom(200 * 50, 2, 0.3), 200, 50)
#' G <- fmalloc_bed(g, rt)
#' gp <- fmalloc_pca(G, k = 3, scale = "binomial")
#' gp$sdev^2 * (nrow(G) - 1) / ncol(G) # plink2's eigenvalues
#' cleanup_fmalloc(rt)
#' @export
fmalloc_pca <- function(x, k = 10, center = TRUE, scale = FALSE, seed = 1,
                        oversample = 10, max_iter = 100, tol = 1e-10, drop_constant = FALSE,
                        runtime = NULL, parallel = getOption("fmalloc.parallel")) {
  fm_local_parallel(parallel)
  if (methods::is(x, "fmalloc_codec_matrix") && !is.null(x@transform)) {
    fm_abort("earg", "fmalloc_pca: x is already standardized; pass the matrix itself with center and scale")
  }
  .check_matrix_arg(x, sys.call())
  # bounds: what the C glue converts exactly (int, and doubles' 2^53 for the seed)
  imax <- .Machine$integer.max
  whole <- function(v, lo, hi) is.numeric(v) && length(v) == 1 && is.finite(v) && v == round(v) && v >= lo && v <= hi
  bad <- function(what, v, lo, hi) {
    fm_abort("earg", sprintf("fmalloc_pca: %s must be a whole number in [%s, %s], not %s", what,
                             format(lo), format(hi, scientific = FALSE, big.mark = ","), deparse(v)))
  }
  if (!whole(k, 1, imax)) bad("k", k, 1, imax)
  if (!whole(oversample, 0, imax)) bad("oversample", oversample, 0, imax)
  if (!whole(max_iter, 0, imax)) bad("max_iter", max_iter, 0, imax)
  if (!whole(seed, 0, 2^53)) bad("seed", seed, 0, 2^53)
  if (!(is.numeric(tol) && length(tol) == 1 && is.finite(tol) && tol > 0)) {
    fm_abort("earg", sprintf("fmalloc_pca: tol must be a positive number, not %s", deparse(tol)))
  }
  if (!is.null(runtime) && !inherits(runtime, "fmalloc_runtime")) {
    fm_abort("earg", sprintf("fmalloc_pca: runtime must be NULL or an fmalloc runtime, not %s", class(runtime)[1]))
  }
  n <- nrow(x)
  user_call <- sys.call()
  check_k <- function(p) {
    if (k > min(n, p)) {
      fm_abort("earg", sprintf("fmalloc_pca: k = %d must be between 1 and min(n, p) = %d", as.integer(k), min(n, p)),
               call = user_call)
    }
  }
  check_k(ncol(x)) # against the shape first, before the statistics pass and its messages
  st <- .standardization(x, center, scale, impute = TRUE, drop_constant = drop_constant,
                         caller = "fmalloc_pca", transform = FALSE)
  p <- length(st$keep)
  check_k(p) # and against the columns kept
  view <- .view_of(x, if (length(st$keep) < ncol(x)) st$keep)
  opts <- c(k, oversample, max_iter, tol, seed)
  progress <- NULL
  if (isTRUE(getOption("fmalloc.progress", TRUE))) {
    bar <- cli::cli_progress_bar("fmalloc_pca: passes over the matrix", total = max_iter + 2)
    progress <- function(done, total) cli::cli_progress_update(id = bar, set = done)
  }
  pcs <- paste0("PC", seq_len(k))
  all_kept <- length(st$keep) == ncol(x)
  kept <- function(v) if (is.null(v) || all_kept) v else v[st$keep]
  cn <- kept(colnames(x))
  # Memory at p = 2e6 (2024-05 design note): the p x k loadings are 160 MB
  # and each length-p double 16 MB. The C glue writes the loadings once, with
  # their dimnames, and nothing below copies them (test: Rprofmem). The core
  # gets the divisors (the result's `scale`) rather than multipliers, and
  # the fill before division, so it needs no second scale vector while the
  # loadings are written; a zero fill (centring at the mean) is passed as 0.
  fill <- if (isTRUE(center)) 0 else if (is.null(st$center)) kept(st$mean) else kept(st$mean - st$center)
  v_out <- .pca_rotation_storage(p, k, runtime, list(cn, pcs))
  r <- .Call(C_fmr_rpca, view, kept(st$center), kept(st$div), fill, as.numeric(opts), progress,
             list(rownames(x), cn, pcs), v_out)
  rm(v_out)
  if (!is.null(progress)) cli::cli_progress_done(id = bar)
  names(r) <- c("d", "u", "v", "iterations", "converged")
  if (!r$converged) {
    warning(sprintf("fmalloc_pca: the top %d singular values did not converge to tol = %g in %d iterations; raise max_iter or oversample",
                    k, tol, r$iterations), call. = FALSE)
  }
  kept_vector <- function(v) {
    v <- kept(v)
    if (!is.null(cn)) names(v) <- cn
    v
  }
  structure(list(
    sdev = r$d / sqrt(max(1, n - 1)),
    rotation = r$v,
    center = if (isFALSE(center)) FALSE else kept_vector(st$center),
    scale = if (isFALSE(scale)) FALSE else kept_vector(st$div),
    x = sweep(r$u, 2, r$d, `*`),
    iterations = r$iterations,
    converged = r$converged,
    n_imputed = st$n_missing,
    kept = st$keep,
    total_var = .pca_total_var(st, kept, n),
    # the imputed value of each column before the transform, for predict():
    # the column mean, which is `center` itself when centring at the mean
    impute_mean = if (isTRUE(center)) NULL else kept_vector(st$mean)
  ), class = c("fmalloc_pca", "prcomp"))
}

#' @rdname fmalloc_pca
#' @param newdata for `predict`: a matrix of the same kind as `x` (dense or a
#'   codec matrix), one row per new observation, with the columns of the
#'   matrix the PCA was fitted on: all of them (the ones `drop_constant`
#'   dropped included) or only the `kept` ones, matched by column names when
#'   both have them. Omitted: the fitted scores `object$x`.
#' @details `predict(object, newdata)` gives the PC scores of new rows
#'   (rows x k): each value is centred and scaled as in the fit, and a
#'   missing value takes the fit's imputed value (the fitted column mean, 0
#'   after centring), as the fit did; so `predict(object, x)` is `object$x`.
#'   A codec matrix is read once, streamed, through a standardized view
#'   ([fmalloc_standardize()]); R's `predict.prcomp` would give `NA` for any
#'   row with a missing value and decode the whole matrix.
#' @method predict fmalloc_pca
#' @export
predict.fmalloc_pca <- function(object, newdata, ...) {
  if (...length()) fm_abort("earg", "predict() of an fmalloc_pca takes object and newdata only")
  if (missing(newdata)) return(object$x)
  rot <- object$rotation
  codec <- methods::is(newdata, "fmalloc_codec_matrix")
  if (!codec && !(is.matrix(newdata) && is.numeric(newdata))) {
    fm_abort("earg", "newdata must be a numeric matrix or a codec matrix, not ", fm_describe(newdata))
  }
  cols <- .pca_columns(object, newdata)
  p <- length(cols)
  ctr <- if (isFALSE(object$center)) rep(0, p) else unname(object$center)
  div <- if (isFALSE(object$scale)) rep(1, p) else unname(object$scale)
  fill <- if (is.null(object$impute_mean)) rep(0, p) else (unname(object$impute_mean) - ctr) / div
  if (codec) {
    if (!is.null(newdata@transform)) fm_abort("earg", "newdata must be a codec matrix without a transform (not standardized)")
    z <- fmalloc_select(newdata, cols)
    z@transform <- list(center = ctr, scale = 1 / div, fill = fill)
    scores <- .remade(z) %*% unname(rot)
  } else {
    z <- sweep(sweep(newdata[, cols, drop = FALSE], 2, ctr), 2, div, "/")
    miss <- which(is.na(z), arr.ind = TRUE)
    z[miss] <- fill[miss[, 2]]
    scores <- z %*% unname(rot)
  }
  dimnames(scores) <- list(rownames(newdata), colnames(rot))
  scores
}

# The columns of newdata that the PCA's rotation rows are: by name when both
# have names, else all of the fitted matrix's (then `kept` of them) or only
# the kept ones.
.pca_columns <- function(object, newdata) {
  rn <- rownames(object$rotation)
  cn <- colnames(newdata)
  k <- length(object$kept)
  if (!is.null(rn) && !is.null(cn)) {
    j <- match(rn, cn)
    if (anyNA(j)) fm_abort("emismatch", sprintf("newdata has no column '%s' of the PCA's loadings", rn[is.na(j)][1]))
    return(j)
  }
  if (ncol(newdata) == k) return(seq_len(k))
  if (ncol(newdata) >= max(object$kept)) return(object$kept)
  fm_abort("emismatch", sprintf("newdata has %d columns; the PCA was fitted on %d (%d kept)",
                                ncol(newdata), max(object$kept), k))
}

# The total variance of the matrix the PCA decomposed (kept columns, centred,
# scaled, missing values at the column mean): its sum of squares / (n - 1),
# which the squares of all min(n, p) sdev values would add up to. From the
# column statistics of the pass that chose the transform; no pass of its own.
.pca_total_var <- function(st, kept, n) {
  mu <- kept(st$mean)
  m <- if (is.null(st$center)) mu else mu - kept(st$center)
  if (!is.null(st$div)) m <- m / kept(st$div)
  v <- kept(st$var)
  if (!is.null(st$div)) v <- v / kept(st$div)^2
  nobs <- kept(st$n_obs)
  ss <- sum(ifelse(nobs > 1, v * (nobs - 1), 0)) + n * sum(m^2)
  ss / max(1, n - 1)
}

#' @rdname fmalloc_pca
#' @param object an `fmalloc_pca` result (for `summary`).
#' @param ... unused.
#' @method summary fmalloc_pca
#' @export
summary.fmalloc_pca <- function(object, ...) {
  vars <- object$sdev^2
  importance <- rbind(`Standard deviation` = object$sdev,
                      `Proportion of Variance` = round(vars / object$total_var, 5),
                      `Cumulative Proportion` = round(cumsum(vars) / object$total_var, 5))
  colnames(importance) <- colnames(object$rotation)
  object$importance <- importance
  class(object) <- c("summary.fmalloc_pca", "summary.prcomp")
  object
}

# NULL (rotation on the heap) or a fresh p x k fmalloc matrix with dimnames
# dn for the core to write in place (fmalloc_pca, Memory of the rotation):
# in runtime, else in a scratch runtime of its own above
# fmalloc.pca_mapped_bytes. The matrix keeps its runtime open; the scratch
# file is unlinked at creation, so it goes with the last reference.
.pca_rotation_storage <- function(p, k, runtime, dn) {
  bytes <- as.double(p) * k * 8
  if (is.null(runtime)) {
    limit <- getOption("fmalloc.pca_mapped_bytes", 64e6)
    if (!(is.numeric(limit) && length(limit) == 1 && !is.na(limit))) {
      fm_abort("earg", sprintf("fmalloc_pca: option fmalloc.pca_mapped_bytes must be one number, not %s", deparse(limit)))
    }
    if (bytes <= limit) return(NULL)
    # the block plus room for the allocator's directory and alignment
    runtime <- open_fmalloc(tempfile("fmalloc_pca_", fileext = ".fm"),
                            size_gb = (bytes + 2^26) / 2^30, mode = "scratch")
  }
  create_fmalloc_matrix("double", p, k, runtime, dimnames = dn)
}
