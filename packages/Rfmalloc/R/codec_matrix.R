# Codec-backed matrices: an S4 object over typed storage (a raw fmalloc
# vector, or a read-only mapping of a foreign file) whose products, subsets
# and statistics all work on bounded panels.

# Codec ids shared with the C core (fm_codec_id in fm_panel.h).
.codec_ids <- c(double = 1, integer = 2, bed2 = 3, dos8 = 4)

#' Matrices stored through a codec
#'
#' An `fmalloc_codec_matrix` is a samples x variants matrix whose bytes are
#' not doubles: PLINK 2-bit hardcalls (`"bed2"`, from [fmalloc_bed()] or
#' [fmalloc_bed_open()]) or one-byte dosages (`"dos8"`, from
#' [fmalloc_dosage()]). It behaves like a read-only numeric matrix:
#'
#' * `dim()`, `dimnames()`, `nrow()`, `ncol()`;
#' * `X %*% B`, `B %*% X`, `crossprod(X, B)`, `crossprod(B, X)`,
#'   `tcrossprod(X, B)`, `crossprod(X)`, `tcrossprod(X)`: computed through the
#'   backend registry on bounded panels (see [fmalloc_backends()]); results
#'   are ordinary R matrices;
#' * `X[i, j]` decodes only the requested block; `as.matrix(X)` decodes all;
#' * `print()` shows the shape, codec, storage size and the top-left corner.
#'
#' Values are allele counts (0, 1, 2; `"bed2"`) or dosages in \[0, 2\]
#' (`"dos8"`); missing calls decode to `NA` unless a transform set by
#' [fmalloc_standardize()] imputes them. Products propagate `NA`, as base
#' `%*%` does. The panel byte budget is [fmalloc_panel_budget()].
#'
#' @slot storage raw vector (fmalloc ALTREP) or external pointer to a file view.
#' @slot spec double `c(codec, n_rows, n_stored_cols, byte_offset, col_stride)`.
#' @slot cols `NULL` or the 1-based stored column of each column.
#' @slot dimnames list of row and column names.
#' @slot transform `NULL` or `list(center, scale, fill)`, fused into decoding.
#' @slot variants data frame of variant metadata (or `NULL`).
#' @slot samples data frame of sample metadata (or `NULL`).
#' @slot source character: where the bytes live.
#' @name fmalloc_codec_matrix-class
#' @aliases fmalloc_codec_matrix
#' @exportClass fmalloc_codec_matrix
setClass("fmalloc_codec_matrix", slots = c(
  storage = "ANY", spec = "numeric", cols = "ANY", dimnames = "list",
  transform = "ANY", variants = "ANY", samples = "ANY", source = "character"
))

.new_codec_matrix <- function(storage, codec, n_rows, n_cols, offset, col_stride,
                              dimnames = NULL, variants = NULL, samples = NULL,
                              source = "fmalloc") {
  methods::new("fmalloc_codec_matrix",
    storage = storage,
    spec = c(.codec_ids[[codec]], n_rows, n_cols, offset, col_stride),
    cols = NULL,
    dimnames = if (is.null(dimnames)) list(NULL, NULL) else dimnames,
    transform = NULL, variants = variants, samples = samples, source = source
  )
}

.codec_name <- function(x) names(.codec_ids)[match(x@spec[1], .codec_ids)]
.n_rows <- function(x) x@spec[2]
.n_cols <- function(x) if (is.null(x@cols)) x@spec[3] else length(x@cols)

# The (storage, spec, cols) triple the C entry points take, for codec
# matrices and for dense R matrices (plain or fmalloc ALTREP) alike.
.mat_desc <- function(x) {
  if (methods::is(x, "fmalloc_codec_matrix")) {
    return(list(storage = x@storage, spec = x@spec, cols = x@cols))
  }
  if (!is.matrix(x)) x <- as.matrix(x)
  if (is.logical(x)) storage.mode(x) <- "integer"
  if (!is.double(x) && !is.integer(x)) {
    fm_abort("earg", "x must be a numeric matrix or an fmalloc codec matrix")
  }
  codec <- if (is.double(x)) "double" else "integer"
  size <- if (is.double(x)) 8 else 4
  list(storage = x, spec = c(.codec_ids[[codec]], nrow(x), ncol(x), 0, nrow(x) * size),
       cols = NULL)
}

#' @rdname fmalloc_codec_matrix-class
#' @param x an `fmalloc_codec_matrix`.
#' @export
setMethod("dim", "fmalloc_codec_matrix", function(x) c(.n_rows(x), .n_cols(x)))

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("dimnames", "fmalloc_codec_matrix", function(x) {
  dn <- x@dimnames
  if (!is.null(x@cols) && !is.null(dn[[2]])) dn[[2]] <- dn[[2]][x@cols]
  dn
})

.decode <- function(x, r0, nr, c0, nc) {
  .Call(fmr_panel_decode, x@storage, x@spec, x@cols, x@transform, r0, nr, c0, nc)
}

# Columns per bounded panel when every row is decoded.
.cols_per_panel <- function(x) {
  max(1, floor(fmalloc_panel_budget() / (8 * max(1, .n_rows(x)))))
}

.index <- function(idx, n, names, what) {
  if (missing(idx) || is.null(idx)) return(seq_len(n))
  if (is.character(idx)) {
    pos <- match(idx, names)
    if (anyNA(pos)) {
      fm_abort("earg", sprintf("%s name '%s' not found", what, idx[is.na(pos)][1]))
    }
    return(pos)
  }
  if (is.logical(idx)) return(which(rep_len(idx, n)))
  idx <- as.numeric(idx)
  if (anyNA(idx)) fm_abort("earg", sprintf("%s indices must not be NA", what))
  if (all(idx <= 0)) return(setdiff(seq_len(n), -idx))
  if (any(idx < 0)) fm_abort("earg", "cannot mix positive and negative indices")
  idx <- idx[idx != 0]
  if (any(idx > n)) {
    fm_abort("earg", sprintf("%s index %g is out of bounds (%g)", what, max(idx), n))
  }
  idx
}

#' @rdname fmalloc_codec_matrix-class
#' @param i,j row and column indices (numeric, logical, character or missing).
#' @param ... ignored.
#' @param drop drop dimensions of extent one, as for base matrices.
#' @export
setMethod("[", "fmalloc_codec_matrix", function(x, i, j, ..., drop = TRUE) {
  dn <- dimnames(x)
  ii <- if (missing(i)) seq_len(.n_rows(x)) else .index(i, .n_rows(x), dn[[1]], "row")
  jj <- if (missing(j)) seq_len(.n_cols(x)) else .index(j, .n_cols(x), dn[[2]], "column")
  sub <- fmalloc_select(x, jj)
  out <- matrix(0, length(ii), length(jj))
  if (length(ii) && length(jj)) {
    lo <- min(ii)
    hi <- max(ii)
    step <- .cols_per_panel(x)
    for (c0 in seq(0, length(jj) - 1, by = step)) {
      nc <- min(step, length(jj) - c0)
      block <- .decode(sub, lo - 1, hi - lo + 1, c0, nc)
      out[, c0 + seq_len(nc)] <- block[ii - lo + 1, , drop = FALSE]
    }
  }
  if (!is.null(dn[[1]]) || !is.null(dn[[2]])) dimnames(out) <- list(dn[[1]][ii], dn[[2]][jj])
  if (drop) drop(out) else out
})

#' Select columns of a codec matrix without copying
#'
#' Returns a view of `x` restricted to columns `j` (in that order, duplicates
#' allowed). No genotype is decoded; the view shares the storage.
#' @param x an `fmalloc_codec_matrix`.
#' @param j column indices (numeric, logical or names).
#' @return An `fmalloc_codec_matrix` with `length(j)` columns; its transform
#'   and variant metadata are subset alongside.
#' @export
fmalloc_select <- function(x, j) {
  stopifnot(methods::is(x, "fmalloc_codec_matrix"))
  jj <- .index(j, .n_cols(x), dimnames(x)[[2]], "column")
  stored <- if (is.null(x@cols)) jj else x@cols[jj]
  y <- x
  y@cols <- as.numeric(stored)
  if (!is.null(x@transform)) y@transform <- lapply(x@transform, function(v) if (is.null(v)) v else v[jj])
  y
}

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("as.matrix", "fmalloc_codec_matrix", function(x, ...) x[, , drop = FALSE])

#' @rdname fmalloc_codec_matrix-class
#' @param object an `fmalloc_codec_matrix`.
#' @export
setMethod("show", "fmalloc_codec_matrix", function(object) {
  d <- dim(object)
  codec <- .codec_name(object)
  unit <- switch(codec, bed2 = "2-bit hardcalls", dos8 = "1-byte dosages", codec)
  bytes <- object@spec[5] * object@spec[3]
  cat(sprintf("<fmalloc %s matrix: %s x %s, %s, %s%s>\n", codec, format(d[1], big.mark = ","),
              format(d[2], big.mark = ","), unit, format(structure(bytes, class = "object_size"),
                                                        units = "auto"),
              if (is.null(object@transform)) "" else ", standardized"))
  if (d[1] > 0 && d[2] > 0) {
    corner <- object[seq_len(min(6, d[1])), seq_len(min(6, d[2])), drop = FALSE]
    print(corner)
    if (d[1] > 6 || d[2] > 6) cat("...\n")
  }
  invisible(object)
})

.as_operand <- function(b, inner, what) {
  if (methods::is(b, "fmalloc_codec_matrix")) {
    fm_abort("eunsupported", "products of two codec matrices are not supported; decode one with as.matrix()")
  }
  if (is.null(dim(b))) b <- matrix(b, ncol = 1)
  b <- as.matrix(b)
  storage.mode(b) <- "double"
  b
}

.fm_state <- new.env(parent = emptyenv())

.product <- function(x, b, op) {
  res <- .Call(fmr_product, x@storage, x@spec, x@cols, x@transform, as.integer(op), b)
  .fm_state$last_backend <- res[[2]]
  res[[1]]
}

.with_dimnames <- function(y, rn, cn) {
  if (!is.null(rn) || !is.null(cn)) dimnames(y) <- list(rn, cn)
  y
}

# X %*% b (n x k).
.xb <- function(x, b) {
  b <- .as_operand(b)
  .with_dimnames(.product(x, b, 1L), dimnames(x)[[1]], colnames(b))
}

# t(X) %*% b (p x k).
.xtb <- function(x, b) {
  b <- .as_operand(b)
  .with_dimnames(.product(x, b, 2L), dimnames(x)[[2]], colnames(b))
}

# Bounded column blocks of X, decoded one at a time (for X'X and XX').
.for_col_blocks <- function(x, f) {
  p <- .n_cols(x)
  step <- .cols_per_panel(x)
  for (c0 in seq(0, max(0, p - 1), by = step)) {
    if (p == 0) break
    nc <- min(step, p - c0)
    f(c0, nc, .decode(x, 0, .n_rows(x), c0, nc))
  }
}

#' @rdname fmalloc_codec_matrix-class
#' @param y the other operand: a numeric matrix or vector.
#' @export
setMethod("%*%", signature("fmalloc_codec_matrix", "ANY"), function(x, y) .xb(x, y))

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("%*%", signature("ANY", "fmalloc_codec_matrix"), function(x, y) {
  x <- .as_operand(x)
  t(.xtb(y, t(x)))
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("crossprod", signature("fmalloc_codec_matrix", "ANY"), function(x, y = NULL) {
  if (is.null(y)) return(.gram(x, "cross"))
  .xtb(x, y)
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("crossprod", signature("fmalloc_codec_matrix", "missing"), function(x, y = NULL) {
  .gram(x, "cross")
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("crossprod", signature("ANY", "fmalloc_codec_matrix"), function(x, y = NULL) {
  t(.xtb(y, x))
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("tcrossprod", signature("fmalloc_codec_matrix", "ANY"), function(x, y = NULL) {
  if (is.null(y)) return(.gram(x, "tcross"))
  if (is.null(dim(y))) y <- matrix(y, nrow = 1)
  .xb(x, t(y))
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("tcrossprod", signature("fmalloc_codec_matrix", "missing"), function(x, y = NULL) {
  .gram(x, "tcross")
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("tcrossprod", signature("ANY", "fmalloc_codec_matrix"), function(x, y = NULL) {
  if (is.null(dim(x))) x <- matrix(x, nrow = 1)
  t(.xb(y, t(x)))
})

# X'X (p x p) or XX' (n x n), streaming column blocks of X.
.gram <- function(x, kind) {
  dn <- dimnames(x)
  if (kind == "cross") {
    out <- .with_dimnames(matrix(0, .n_cols(x), .n_cols(x)), dn[[2]], dn[[2]])
    .for_col_blocks(x, function(c0, nc, block) {
      out[, c0 + seq_len(nc)] <<- .product(x, block, 2L)
    })
  } else {
    out <- .with_dimnames(matrix(0, .n_rows(x), .n_rows(x)), dn[[1]], dn[[1]])
    .for_col_blocks(x, function(c0, nc, block) out <<- out + tcrossprod(block))
  }
  out
}

#' Panel byte budget
#'
#' Products, subsets and statistics over codec matrices decode at most this
#' many bytes of doubles at a time. The default is 64 MiB; the option
#' `fmalloc.panel_bytes` sets it at load time.
#' @param bytes new budget in bytes, or `NULL` to only query; `0` restores the default.
#' @return The budget in force, in bytes (invisibly when setting).
#' @export
fmalloc_panel_budget <- function(bytes = NULL) {
  if (is.null(bytes)) return(.Call(fmr_panel_budget, NULL))
  invisible(.Call(fmr_panel_budget, as.numeric(bytes)))
}

#' Product backends
#'
#' Lists the registered product backends, in the order they are tried, then
#' `"reference"`: the path (decode bounded panels, then BLAS `dgemm`) that
#' runs whenever every backend declines a product.
#' @return A character vector.
#' @export
fmalloc_backends <- function() .Call(fmr_backends)

#' Backend introspection for tests
#'
#' `fmalloc_last_backend()` names the backend that computed the most recent
#' codec-matrix product in this session (`"reference"` for the decode-and-BLAS
#' path). `fmalloc_test_backend()` registers or removes one of two test
#' backends compiled into the package: `"decline_all"` declines every product
#' and `"xb_k1"` computes only `X %*% b` with one column of `b`.
#' @param name `"decline_all"` or `"xb_k1"`.
#' @param on register (`TRUE`) or remove (`FALSE`).
#' @return `fmalloc_last_backend()`: a string or `NULL`; `fmalloc_test_backend()`: `NULL`, invisibly.
#' @keywords internal
#' @export
fmalloc_last_backend <- function() .fm_state$last_backend

#' @rdname fmalloc_last_backend
#' @export
fmalloc_test_backend <- function(name, on = TRUE) {
  invisible(.Call(fmr_test_backend, name, on))
}

#' @import methods
NULL
