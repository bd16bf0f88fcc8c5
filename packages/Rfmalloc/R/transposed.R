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
#' supported), `as.matrix()`, `%*%` on either side with an ordinary matrix,
#' `crossprod()`, `tcrossprod()`, `colSums()`, `colMeans()`, `rowSums()`,
#' `rowMeans()`, `print()`, the whole-matrix summaries `anyNA()`, `mean()`,
#' `sum()`, `min()`, `max()`, `range()`, ... ([fmalloc_codec_summaries]; they
#' are those of `X`) and [fmalloc_variants()] / [fmalloc_samples()] (the
#' metadata of `X`: the variants describe the rows of `t(X)`). Missing
#' values, `na.rm`, the transform and the errors are those of `X`.
#'
#' Functions that take a samples x variants genotype matrix take `X`, not
#' `t(X)`, and refuse it with `fm_error_earg` or `fm_error_eunsupported`:
#' [fmalloc_select()], [fmalloc_allele_freq()], `summary()`,
#' [fmalloc_colVars()], [fmalloc_pca()], [fmalloc_as_DelayedArray()].
#' Elementwise operations (`t(X) + 1`, `is.na(t(X))`) are refused as for
#' `X`.
#' @param x,object a transposed view (`t(X)`).
#' @param i,j row and column indices, as for a matrix.
#' @param ... unused.
#' @param drop drop dimensions of extent 1 (as for a matrix).
#' @param y the other operand: a numeric matrix or vector.
#' @param na.rm,dims as for [base::colSums()].
#' @return As the base functions on the transposed matrix.
#' @section Errors: `fm_error_eunsupported` for `x[k]` with one index and
#'   for a product with another codec matrix or transposed view (`X %*%
#'   t(X)`: use `tcrossprod(X)`), without S4's ambiguity notes;
#'   `fm_error_earg` for `x[i, j, k]`; the errors of the codec matrix's
#'   methods otherwise.
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
#' @aliases %*%,fmalloc_codec_matrix,fmalloc_codec_matrix-method
#' @aliases %*%,fmalloc_codec_matrix,fmalloc_transposed-method
#' @aliases %*%,fmalloc_transposed,fmalloc_codec_matrix-method
#' @aliases %*%,fmalloc_transposed,fmalloc_transposed-method
#' @aliases crossprod,fmalloc_codec_matrix,fmalloc_codec_matrix-method
#' @aliases crossprod,fmalloc_codec_matrix,fmalloc_transposed-method
#' @aliases crossprod,fmalloc_transposed,fmalloc_codec_matrix-method
#' @aliases crossprod,fmalloc_transposed,fmalloc_transposed-method
#' @aliases tcrossprod,fmalloc_codec_matrix,fmalloc_codec_matrix-method
#' @aliases tcrossprod,fmalloc_codec_matrix,fmalloc_transposed-method
#' @aliases tcrossprod,fmalloc_transposed,fmalloc_codec_matrix-method
#' @aliases tcrossprod,fmalloc_transposed,fmalloc_transposed-method
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
  .two_indices(...length())
  if (nargs() - (!missing(drop)) < 3L)
    fm_abort("eunsupported", "a transposed codec matrix takes x[i, j]; for one index use t(x)[...]")
  d <- dim(x)
  r <- base::t(x@x[if (missing(j)) seq_len(d[2]) else j, if (missing(i)) seq_len(d[1]) else i,
                   drop = FALSE])
  if (isTRUE(drop)) r[, , drop = TRUE] else r
})

#' @rdname fmalloc_transposed-class
#' @export
setMethod("as.matrix", "fmalloc_transposed", function(x, ...) base::t(as.matrix(x@x)))

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
  r <- y@x %*% x
  t(r)
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

# Codec matrices and their transposed views: the operands that products,
# summaries and elementwise operators treat alike.
setClassUnion("fmalloc_codec_like", c("fmalloc_codec_matrix", "fmalloc_transposed"))

# A product of two of them (X %*% t(X), crossprod(X, Y), ...) is refused by
# a method for each exact pair of classes: one on the union would tie with
# the methods (codec matrix, ANY) and (ANY, codec matrix), and S4 would note
# the ambiguity to the user at every call.
for (.g in c("%*%", "crossprod", "tcrossprod")) {
  for (.x in c("fmalloc_codec_matrix", "fmalloc_transposed")) {
    for (.y in c("fmalloc_codec_matrix", "fmalloc_transposed")) {
      setMethod(.g, signature(.x, .y), function(x, y) .two_codecs(.method_call()))
    }
  }
}
rm(.g, .x, .y)

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

#' @rdname fmalloc_transposed-class
#' @param value `NULL` or a list of row and column names (for `dimnames<-`).
#' @export
setReplaceMethod("dimnames", "fmalloc_transposed", function(x, value) {
  dimnames(x@x) <- if (is.null(value)) NULL else rev(value)
  x
})
