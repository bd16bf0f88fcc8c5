# t() of a codec matrix: a transposed view, decoded by nobody. Every method
# is the codec matrix's own with the roles of rows and columns exchanged
# (t(X) %*% y is crossprod(X, y), colSums(t(X)) is rowSums(X), ...), so it
# streams as they do.

#' Transposed view of a codec matrix
#'
#' `t(X)` of an [fmalloc_codec_matrix][fmalloc_codec_matrix-class] (M x N
#' for an N x M matrix `X`) holds `X` and decodes nothing: its methods are
#' those of `X` with rows and columns exchanged, streamed as they are.
#' `t(t(X))` is `X` again. `dim()`, `dimnames()`, `length()`,
#' `x[i, j]` (read as `t(X[j, i])`; a single index `x[k]` is not
#' supported), `as.matrix()`, `%*%` on either side, `crossprod()`,
#' `tcrossprod()`, `colSums()`, `colMeans()`, `rowSums()`, `rowMeans()` and
#' `print()`. Missing values, `na.rm`, the transform and the errors are
#' those of `X`.
#' @param x,object a transposed view (`t(X)`).
#' @param i,j row and column indices, as for a matrix.
#' @param ... unused.
#' @param drop drop dimensions of extent 1 (as for a matrix).
#' @param y the other operand: a numeric matrix or vector.
#' @param na.rm,dims as for [base::colSums()].
#' @return As the base functions on the transposed matrix.
#' @section Errors: `fm_error_eunsupported` for `x[k]` with one index; the
#'   errors of the codec matrix's methods otherwise.
#' @section Source: this package's codec matrices
#'   ([fmalloc_codec_matrix-class]).
#' @examples
#' X <- fmalloc_bed(matrix(c(0, 1, 2, NA, 2, 0), 3, 2))
#' tX <- t(X)
#' dim(tX)
#' tX %*% c(1, 1, 1)     # crossprod(X, 1), streamed
#' rowSums(tX, na.rm = TRUE)
#' as.matrix(tX)
#' @name fmalloc_transposed-class
#' @aliases fmalloc_transposed
#' @exportClass fmalloc_transposed
NULL

setClass("fmalloc_transposed", slots = c(x = "fmalloc_codec_matrix"))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("t", "fmalloc_transposed", function(x) x@x)

#' @rdname fmalloc_transposed-class
#' @export
setMethod("dim", "fmalloc_transposed", function(x) rev(dim(x@x)))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("dimnames", "fmalloc_transposed", function(x) {
  dn <- dimnames(x@x)
  if (is.null(dn)) NULL else rev(dn)
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("length", "fmalloc_transposed", function(x) length(x@x))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("[", "fmalloc_transposed", function(x, i, j, ..., drop = TRUE) {
  if (nargs() - (!missing(drop)) < 3L)
    fm_abort("eunsupported", "a transposed codec matrix takes x[i, j]; for one index use t(x)[...]")
  d <- dim(x)
  r <- t(x@x[if (missing(j)) seq_len(d[2]) else j, if (missing(i)) seq_len(d[1]) else i,
             drop = FALSE])
  if (isTRUE(drop)) r[, , drop = TRUE] else r
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("as.matrix", "fmalloc_transposed", function(x, ...) t(as.matrix(x@x)))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("%*%", signature("fmalloc_transposed", "ANY"), function(x, y) crossprod(x@x, y))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("%*%", signature("ANY", "fmalloc_transposed"), function(x, y) tcrossprod(x, y@x))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("crossprod", signature("fmalloc_transposed", "ANY"), function(x, y = NULL) {
  if (is.null(y)) tcrossprod(x@x) else x@x %*% y
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("crossprod", signature("fmalloc_transposed", "missing"), function(x, y = NULL) tcrossprod(x@x))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("crossprod", signature("ANY", "fmalloc_transposed"), function(x, y = NULL) {
  if (is.null(dim(x))) x <- matrix(x, ncol = 1)
  t(y@x %*% x)
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("tcrossprod", signature("fmalloc_transposed", "ANY"), function(x, y = NULL) {
  if (is.null(y)) return(crossprod(x@x))
  if (is.null(dim(y))) y <- matrix(y, nrow = 1)
  crossprod(x@x, t(y))
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("tcrossprod", signature("fmalloc_transposed", "missing"), function(x, y = NULL) crossprod(x@x))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("tcrossprod", signature("ANY", "fmalloc_transposed"), function(x, y = NULL) x %*% y@x)

#' @rdname fmalloc_transposed-class
#' @export
setMethod("colSums", "fmalloc_transposed", function(x, na.rm = FALSE, dims = 1L) rowSums(x@x, na.rm, dims))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("colMeans", "fmalloc_transposed", function(x, na.rm = FALSE, dims = 1L) rowMeans(x@x, na.rm, dims))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("rowSums", "fmalloc_transposed", function(x, na.rm = FALSE, dims = 1L) colSums(x@x, na.rm, dims))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("rowMeans", "fmalloc_transposed", function(x, na.rm = FALSE, dims = 1L) colMeans(x@x, na.rm, dims))

#' @rdname fmalloc_transposed-class
#' @export
setMethod("show", "fmalloc_transposed", function(object) {
  d <- dim(object)
  cat(sprintf("transposed view (%s x %s) of %s\n", format(d[1], big.mark = ","),
              format(d[2], big.mark = ","), .describe_codec(object@x)))
  .print_corner(object)
  invisible(object)
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("summary", "fmalloc_transposed", function(object, ...) {
  fm_abort("eunsupported", "summary() of a transposed view t(X) is not supported; summary(X) ",
           "summarises the columns of the codec matrix X")
})
