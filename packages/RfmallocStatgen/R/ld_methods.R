# Methods of the statgen_ld band (R/ld.R): shape, names, dense blocks,
# streamed products, printing and conversion to Matrix's dsCMatrix.

#' @export
dim.statgen_ld <- function(x) rep(length(x$colptr) - 1L, 2L)

#' @export
dimnames.statgen_ld <- function(x) list(x$variants$ID, x$variants$ID)

# Stored entries of 1-based column j: list(rows (1-based), values).
.ld_col <- function(x, j) {
  a <- x$colptr[j]
  b <- x$colptr[j + 1L]
  if (b <= a) return(list(rows = integer(0), values = numeric(0)))
  k <- (a + 1):b
  v <- if (x$dtype == "f32") .f32_values(x$values[(4 * a + 1):(4 * b)]) else x$values[k]
  list(rows = x$rowidx[k] + 1L, values = v)
}

# 1-based positions of an index (numbers, IDs or logicals) into n variants.
.ld_index <- function(x, i, what) {
  n <- dim(x)[1]
  if (anyNA(i)) fm_abort("earg", sprintf("%s has NA: give variant numbers, IDs or logicals without NA", what))
  if (is.logical(i)) i <- which(rep_len(i, n))
  if (is.character(i)) {
    m <- match(i, x$variants$ID)
    if (anyNA(m)) fm_abort("earg", sprintf("%s: variant '%s' is not in the LD band", what, i[is.na(m)][1]))
    return(m)
  }
  if (!is.numeric(i) || anyNA(i) || any(i != floor(i)) || any(i < 1 | i > n))
    fm_abort("earg", sprintf("%s must be variant numbers in 1..%s, IDs or logicals", what, format(n)))
  as.integer(i)
}

#' @export
`[.statgen_ld` <- function(x, i, j, drop = TRUE) {
  n <- dim(x)[1]
  ri <- if (missing(i)) seq_len(n) else .ld_index(x, i, "i")
  ci <- if (missing(j)) seq_len(n) else .ld_index(x, j, "j")
  if (as.double(length(ri)) * length(ci) > 2^31 - 1)
    fm_abort("earg", "the block asked for has more than 2^31 - 1 entries: ask for fewer variants")
  # columns are rows (symmetry): read the shorter side
  tr <- length(ri) < length(ci)
  cols <- if (tr) ri else ci
  rows <- if (tr) ci else ri
  out <- matrix(0, length(rows), length(cols))
  for (c in seq_along(cols)) {
    e <- .ld_col(x, cols[c])
    m <- match(rows, e$rows)
    ok <- !is.na(m)
    out[ok, c] <- e$values[m[ok]]
  }
  if (tr) out <- t(out)
  ids <- x$variants$ID
  dimnames(out) <- list(ids[ri], ids[ci])
  if (drop) out <- out[, , drop = TRUE]
  out
}

#' @export
print.statgen_ld <- function(x, ...) {
  n <- dim(x)[1]
  nnz <- if (n) x$colptr[n + 1L] else 0
  info <- x$info
  win <- if (is.null(info$window)) "" else sprintf(", windows of %s %s", format(info$window), info$unit)
  cat(sprintf("<statgen_ld> %s x %s LD band: %s stored entries (%.1f per variant)%s\n",
              format(n, big.mark = ","), format(n, big.mark = ","),
              format(nnz, big.mark = ",", scientific = FALSE), if (n) nnz / n else 0, win))
  if (!is.null(info$missing))
    cat(sprintf("  r over %s samples, missing calls %s; r^2 >= %s stored; %s values\n",
                format(info$n_samples, big.mark = ","),
                if (info$missing == "mean") "mean-imputed" else "left out pairwise",
                format(info$r2_min), x$dtype))
  where <- if (is.null(info$runtime)) "on the heap" else {
    rt <- tryCatch(Rfmalloc::fmalloc_info(info$runtime)$path, error = function(e) "a closed runtime")
    sprintf("in runtime %s%s", rt, if (is.null(info$name)) " (temporary)" else sprintf(" as '%s'", info$name))
  }
  cat("  stored", where, "\n")
  invisible(x)
}

#' @export
as.matrix.statgen_ld <- function(x, ...) x[, , drop = FALSE]

# The memory budget of a product with band x (fm_band_matmul, fm_band.h):
# Inf (keep resident) for a band on the heap; for a band in a runtime file,
# option RfmallocStatgen.ld_budget in bytes (0 or unset: a quarter of the
# physical memory), above which its pages are dropped as they are read.
.ld_budget <- function(x) {
  if (!Rfmalloc::fmalloc_is_mapped(x$values)) return(Inf)
  b <- getOption("RfmallocStatgen.ld_budget", 0)
  if (!is.numeric(b) || length(b) != 1L || is.na(b) || b < 0)
    fm_abort("earg", paste("option RfmallocStatgen.ld_budget must be one number of bytes >= 0",
                           "(0: the default)"))
  as.double(b)
}

# R %*% y for y with n rows, through the core's streamed band product.
.ld_matmul <- function(x, y) {
  n <- dim(x)[1]
  vec <- is.null(dim(y))
  if (!is.numeric(y) && !is.logical(y)) fm_abort("earg", "the right-hand side must be numeric")
  y <- if (vec) matrix(as.double(y), ncol = 1L) else `storage.mode<-`(as.matrix(y), "double")
  if (nrow(y) != n)
    fm_abort("earg", sprintf("non-conformable: the LD band has %s variants, the right-hand side %s rows",
                             format(n), format(nrow(y))))
  out <- .Call(C_stg_band_matmul, .ld_parts(x), y, .ld_budget(x), NULL)
  dimnames(out) <- list(x$variants$ID, colnames(y))
  out
}

#' Convert an LD band to a Matrix dsCMatrix
#'
#' The band as Matrix's symmetric sparse matrix (upper triangle stored), for
#' small regions or windows: everything is read into memory.
#' @param x A `statgen_ld` object ([statgen_ld()]).
#' @param max_entries Refuse bands with more stored upper-triangle entries
#'   than this (default 1e8, about 1.2 GB as a dsCMatrix).
#' @return A `p x p` `dsCMatrix` with the variant IDs as dimnames; pairs not
#'   stored are structural zeros.
#' @section Errors: `fm_error_earg` when the band is larger than
#'   `max_entries`; `fm_error_eunsupported` without the Matrix package.
#' @examples
#' X <- Rfmalloc::fmalloc_bed(matrix(rbinom(100 * 8, 2, 0.4), 100, 8))
#' statgen_ld_sparse(statgen_ld(X, window = 2, unit = "variants"))
#' @export
statgen_ld_sparse <- function(x, max_entries = 1e8) {
  if (!inherits(x, "statgen_ld")) fm_abort("earg", "x must be a statgen_ld object")
  if (!requireNamespace("Matrix", quietly = TRUE))
    fm_abort("eunsupported", "statgen_ld_sparse() needs the Matrix package")
  n <- dim(x)[1]
  nnz <- if (n) x$colptr[n + 1L] else 0
  upper <- (nnz + n) / 2
  if (upper > max_entries)
    fm_abort("earg", sprintf("the band has %s upper entries, more than max_entries = %s: take a region with x[i, j]",
                             format(upper, big.mark = ","), format(max_entries)))
  cols <- rep.int(seq_len(n), diff(x$colptr))
  rows <- x$rowidx[] + 1L
  vals <- if (x$dtype == "f32") .f32_values(x$values[]) else x$values[]
  keep <- rows <= cols
  Matrix::sparseMatrix(i = rows[keep], j = cols[keep], x = vals[keep], dims = c(n, n),
                       symmetric = TRUE, dimnames = list(x$variants$ID, x$variants$ID))
}

methods::setMethod("show", "statgen_ld", function(object) print.statgen_ld(object))

#' Products with an LD band
#'
#' `ld %*% y` is \eqn{R y} for the band \eqn{R} of [statgen_ld()] and a
#' vector or matrix `y` of `p` rows (one per variant), computed by streaming
#' the band once (each column of \eqn{R} read once, in order, on
#' [Rfmalloc::fmalloc_threads()] threads). A band in a runtime file larger
#' than the memory budget, option `RfmallocStatgen.ld_budget` in bytes
#' (unset or 0: a quarter of the physical memory; `Inf`: never), is dropped
#' from memory as it is read, so that it streams from disk; a smaller one
#' stays in memory between products. `y %*% ld` is \eqn{y R}
#' (\eqn{R} is symmetric). Pairs the band does not store count as 0.
#' @param x,y A `statgen_ld` band and a numeric vector or matrix.
#' @return A `p x k` double matrix (`k` columns of `y`; 1 for a vector), or
#'   `k x p` for `y %*% ld`.
#' @section Errors: `fm_error_earg` when the sizes differ or `y` is not
#'   numeric.
#' @name statgen_ld-products
#' @aliases %*%,statgen_ld,ANY-method %*%,ANY,statgen_ld-method
#' @examples
#' X <- Rfmalloc::fmalloc_bed(matrix(rbinom(100 * 8, 2, 0.4), 100, 8))
#' ld <- statgen_ld(X, window = 8, unit = "variants")
#' ld %*% rep(1, 8)
#' @exportMethod %*%
methods::setMethod("%*%", methods::signature(x = "statgen_ld", y = "ANY"),
                   function(x, y) .ld_matmul(x, y))

#' @rdname statgen_ld-products
methods::setMethod("%*%", methods::signature(x = "ANY", y = "statgen_ld"),
                   function(x, y) t(.ld_matmul(y, t(if (is.null(dim(x))) matrix(x, 1L) else x))))
