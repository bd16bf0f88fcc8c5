# Base R's whole-matrix functions on codec matrices and their transposed
# views (the class union fmalloc_codec_like, transposed.R): the summaries
# (anyNA, mean, sum, min, max, range, prod, any, all) stream through the
# existing passes and never decode the whole matrix; the elementwise ones
# (operators, Math functions, is.na) would make a dense matrix of the same
# size, and are refused with the way to get it.

#' Whole-matrix summaries and elementwise operations of codec matrices
#'
#' The summaries of base R work on an
#' [fmalloc_codec_matrix][fmalloc_codec_matrix-class] `X` and on its
#' transposed view `t(X)` (they do not depend on the orientation) as on
#' `as.matrix(X)`, but read `X` once, a bounded block at a time:
#'
#' * `anyNA(X)`: whether a value decodes as missing (a missing call; `NA`
#'   or `NaN` of an `"alp"` or external codec), from the column pass of
#'   [colSums()][fmalloc_codec_matrix-class] that counts missing values.
#'   A view from [fmalloc_standardize()] that imputes has none;
#' * `mean(X, na.rm = FALSE)`: the mean of all values; with `na.rm = TRUE`
#'   of the observed ones (`NaN` when none is); the same pass;
#' * `sum()`, `min()`, `max()`, `range()`, `prod()`, `any()`, `all()` (the
#'   `Summary` group) with `na.rm`, also over several arguments
#'   (`max(X, 3)`): `sum()` from the column sums; `min()`, `max()` and
#'   `range()` of a hardcall matrix (`"bed2"`, no transform) from its
#'   genotype counts ([fmalloc_allele_freq()]), exactly; otherwise, and for
#'   `prod()`, `any()` and `all()`, from blocks of columns of at most
#'   [fmalloc_panel_budget()] bytes decoded in turn (`any()` and `all()`
#'   read a value as `TRUE` when it is not 0, without base R's coercion
#'   warning). Missing values give `NA` unless `na.rm = TRUE`; with none
#'   observed, `min()` and `max()` give `Inf` and `-Inf` with base R's
#'   warning. Results are doubles.
#'
#' Elementwise operations are not computed: `X + 1`, `X == 0`, `-X`, `!X`,
#' `log(X)`, `round(X)` (the `Ops`, `Math` and `Math2` groups) and
#' `is.na(X)` would each return a dense matrix as large as `as.matrix(X)`
#' (`is.na()` a logical one of half its size), which a codec matrix exists
#' to avoid. They raise `fm_error_eunsupported`, naming the size; decode
#' explicitly when that is meant (`as.matrix(X) + 1`, `is.na(X[, j])` for a
#' block of columns), or use the streamed answers: `anyNA(X)`,
#' `summary(X)$n_missing`, `fmalloc_allele_freq(X)$n_missing` (per variant),
#' [fmalloc_standardize()] for centring and scaling.
#'
#' Codec matrices are read-only and are not combined: `X[i, j] <- v`
#' raises `fm_error_eunsupported` (decode, change, then store anew with
#' [fmalloc_bed()] or [fmalloc_dosage()]), and so do `cbind()`/`rbind()`
#' with a codec matrix (select columns with [fmalloc_select()], or decode)
#' and `as.vector()` (a dense copy; `as.vector(as.matrix(X))` when meant).
#' `X[[i, j]]` is refused (use `X[i, j]`), and so are `quantile()`,
#' `median()` and `unique()` of all values (not streamed: `summary(X)`
#' gives the spread of column statistics; decode a block when meant).
#' @param x,e1,e2 an `fmalloc_codec_matrix` or a transposed view `t(X)`;
#'   for operators, either operand.
#' @param na.rm `TRUE` or `FALSE`: drop missing values.
#' @param trim must be 0 (a trimmed mean is not streamed).
#' @param recursive ignored (as for a matrix).
#' @param digits ignored (the operation is refused).
#' @param mode ignored (`as.vector()` is refused).
#' @param y the other operand of `cbind2()`/`rbind2()`.
#' @param value ignored (`[<-` is refused).
#' @param i,j indices (ignored: `[<-` and `[[` are refused).
#' @param ... for the `Summary` group, more values to summarise (matrices,
#'   codec matrices, numbers); for `mean()`, ignored.
#' @return `anyNA()`, `any()`, `all()`: `TRUE` or `FALSE` (or `NA`);
#'   `mean()`, `sum()`, `min()`, `max()`, `prod()`: a number; `range()`: two.
#' @section Errors: `fm_error_earg` when `na.rm` is not `TRUE` or `FALSE`;
#'   `fm_error_eunsupported` for `trim` other than 0 and for every
#'   elementwise operation (above); the errors of the codec matrix's
#'   passes (a closed runtime, a shrunken file).
#' @section Source: base R's [base::Summary], [base::mean()] and
#'   [base::anyNA()] semantics; the streamed column sums of
#'   [colSums()][fmalloc_codec_matrix-class] (with each column's missing
#'   count) and the genotype counts of [fmalloc_allele_freq()].
#' @examples
#' X <- fmalloc_bed(matrix(c(0, 1, 2, NA, 2, 0), 3, 2))
#' anyNA(X)
#' mean(X, na.rm = TRUE)
#' range(X, na.rm = TRUE)
#' sum(t(X), na.rm = TRUE)
#' tryCatch(X + 1, fm_error_eunsupported = function(e) conditionMessage(e))
#' as.matrix(X) + 1
#' @name fmalloc_codec_summaries
NULL

# The codec matrix behind x (a transposed view's summaries are its own).
.codec_of <- function(x) if (methods::is(x, "fmalloc_transposed")) x@x else x

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("anyNA", "fmalloc_codec_like", function(x, recursive = FALSE) {
  x <- .codec_of(x)
  !.imputes(x) && any(.col_pass(x, drop_na = FALSE)$kept > 0)
})

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("mean", "fmalloc_codec_like", function(x, trim = 0, na.rm = FALSE, ...) {
  .check_na_rm(na.rm, .method_call())
  if (!identical(as.numeric(trim), 0)) {
    fm_abort("eunsupported", "mean() of a codec matrix takes trim = 0 only; a trimmed mean needs ",
             "the values sorted: mean(as.matrix(x), trim)", call = .method_call())
  }
  x <- .codec_of(x)
  cs <- .col_pass(x, na.rm && !.imputes(x))
  sum(cs$sum) / (length(x) - sum(cs$dropped))
})

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("Summary", "fmalloc_codec_like", function(x, ..., na.rm = FALSE) {
  .check_na_rm(na.rm, .method_call())
  op <- .Generic
  parts <- lapply(list(x, ...), function(a) {
    if (methods::is(a, "fmalloc_codec_like")) .summarise(op, .codec_of(a), na.rm) else a
  })
  do.call(op, c(parts, list(na.rm = na.rm)))
})

# op (a Summary group member) over the values of codec matrix x: what op
# gives on them, to be combined with the other arguments by op again; NULL
# when nothing is left (every value missing and dropped).
.summarise <- function(op, x, na.rm) {
  if (length(x) == 0) return(NULL)
  if (op == "sum") return(sum(.col_pass(x, na.rm && !.imputes(x))$sum))
  if (op %in% c("min", "max", "range") && .codec_name(x) == "bed2" && is.null(x@transform)) {
    n <- rowSums(.Call(C_fmr_bed2_counts, .view(x))) # hom ref, het, hom alt, missing
    v <- c(c(0, 1, 2)[n[1:3] > 0], if (n[4] > 0 && !na.rm) NA_real_)
    return(if (length(v)) match.fun(op)(v))
  }
  .summarise_blocks(op, x, na.rm)
}

# op over blocks of columns of x decoded in turn, each at most a panel
# budget of doubles, combined by op.
.summarise_blocks <- function(op, x, na.rm) {
  f <- match.fun(op)
  width <- max(1, floor(fmalloc_panel_budget() / (8 * max(1, .n_rows(x)))))
  starts <- seq(1, .n_cols(x), by = width)
  parts <- lapply(starts, function(j0) {
    v <- x[, j0:min(.n_cols(x), j0 + width - 1), drop = FALSE]
    if (op %in% c("any", "all")) v <- v != 0
    if (na.rm) v <- v[!is.na(v)]
    if (length(v)) f(v)
  })
  parts <- parts[!vapply(parts, is.null, NA)]
  if (length(parts)) do.call(f, parts)
}

# Refuse an elementwise operation on a codec matrix: name the dense result
# it would make and how to get it.
.refuse_dense <- function(what, x, call) {
  d <- dim(x)
  fm_abort("eunsupported", sprintf(paste(
    "%s of a codec matrix is not computed: it would be a dense %s x %s matrix (%s as doubles);",
    "decode first (as.matrix(x), or a block x[, j]) if that is meant, or use a streamed summary",
    "(anyNA(), mean(), sum(), range(), colSums(), summary(); see ?fmalloc_codec_summaries)"),
    what, format(d[1], big.mark = ","), format(d[2], big.mark = ","), fm_bytes(8 * d[1] * d[2])),
    call = call)
}

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("is.na", "fmalloc_codec_like", function(x) .refuse_dense("is.na()", x, .method_call()))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("Ops", signature("fmalloc_codec_like", "ANY"), function(e1, e2) {
  .refuse_dense(sprintf("'%s'", .Generic), e1, .method_call())
})

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("Ops", signature("ANY", "fmalloc_codec_like"), function(e1, e2) {
  .refuse_dense(sprintf("'%s'", .Generic), e2, .method_call())
})

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("Ops", signature("fmalloc_codec_like", "fmalloc_codec_like"), function(e1, e2) {
  .refuse_dense(sprintf("'%s'", .Generic), e1, .method_call())
})

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("!", "fmalloc_codec_like", function(x) .refuse_dense("'!'", x, .method_call()))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("Math", "fmalloc_codec_like", function(x) .refuse_dense(sprintf("%s()", .Generic), x, .method_call()))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("Math2", "fmalloc_codec_like", function(x, digits) {
  .refuse_dense(sprintf("%s()", .Generic), x, .method_call())
})

#' @rdname fmalloc_codec_summaries
#' @export
setReplaceMethod("[", "fmalloc_codec_like", function(x, i, j, ..., value) {
  fm_abort("eunsupported", "a codec matrix is read-only: decode it (m <- as.matrix(x)), change m, and ",
           "store it anew (fmalloc_bed(m), fmalloc_dosage(m)) if a codec matrix is needed",
           call = .method_call())
})

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("as.vector", "fmalloc_codec_like", function(x, mode = "any") {
  .refuse_dense("as.vector()", x, .method_call())
})

# cbind()/rbind() reach these through methods' S4 dispatch of cbind2/rbind2
# (base cbind() would otherwise return a list matrix without an error).
.refuse_bind <- function(what) {
  fm_abort("eunsupported", sprintf(paste(
    "%s() of codec matrices is not computed: select columns with fmalloc_select(),",
    "or decode (as.matrix(x)) and bind the dense matrices"), what), call = sys.call(-1L))
}

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("cbind2", signature("fmalloc_codec_like", "ANY"), function(x, y, ...) .refuse_bind("cbind"))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("cbind2", signature("ANY", "fmalloc_codec_like"), function(x, y, ...) .refuse_bind("cbind"))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("rbind2", signature("fmalloc_codec_like", "ANY"), function(x, y, ...) .refuse_bind("rbind"))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("rbind2", signature("ANY", "fmalloc_codec_like"), function(x, y, ...) .refuse_bind("rbind"))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("cbind2", signature("fmalloc_codec_like", "fmalloc_codec_like"), function(x, y, ...) .refuse_bind("cbind"))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("rbind2", signature("fmalloc_codec_like", "fmalloc_codec_like"), function(x, y, ...) .refuse_bind("rbind"))

#' @rdname fmalloc_codec_summaries
#' @export
setMethod("[[", "fmalloc_codec_like", function(x, i, j, ...) {
  fm_abort("eunsupported", "x[[i, j]] of a codec matrix is not supported; use x[i, j]", call = .method_call())
})

# Whole-matrix order statistics and sets: base R's versions would call
# is.na() or as.vector() and fail inside (an unclassed error); say what to
# use instead.
.refuse_order <- function(what, x) {
  fm_abort("eunsupported", sprintf(paste(
    "%s() of all values of a codec matrix is not streamed: summary(x) gives the spread of its",
    "column statistics; decode a block (%s(as.matrix(x[, j]))) when that is meant"), what, what),
    call = sys.call(-1L))
}

#' @rdname fmalloc_codec_summaries
#' @param incomparables ignored (`unique()` is refused).
#' @importFrom stats quantile median
#' @export
quantile.fmalloc_codec_like <- function(x, ...) .refuse_order("quantile", x)

#' @rdname fmalloc_codec_summaries
#' @export
median.fmalloc_codec_like <- function(x, na.rm = FALSE, ...) .refuse_order("median", x)

#' @rdname fmalloc_codec_summaries
#' @export
unique.fmalloc_codec_like <- function(x, incomparables = FALSE, ...) .refuse_order("unique", x)
