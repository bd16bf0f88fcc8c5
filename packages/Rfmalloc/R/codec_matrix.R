# Codec-backed matrices: an S4 object over typed storage (a raw fmalloc
# vector, or a read-only mapping of a foreign file) whose products, subsets
# and statistics all work on bounded panels.

# Codec ids of the C core (fm_codec_id in fm_panel.h), named, from C.
.codec_ids <- function() .Call(C_fmr_codec_ids)

#' Matrices stored through a codec
#'
#' An `fmalloc_codec_matrix` is a samples x variants matrix whose bytes are
#' not doubles: PLINK 2-bit hardcalls (`"bed2"`, from [fmalloc_bed()] or
#' [fmalloc_bed_open()]), one-byte dosages (`"dos8"`, from
#' [fmalloc_dosage()]) or losslessly compressed doubles (`"alp"`, from
#' [fmalloc_alp()]). It behaves like a read-only numeric matrix:
#'
#' * `dim()`, `dimnames()`, `nrow()`, `ncol()`;
#' * `X %*% B`, `B %*% X`, `crossprod(X, B)`, `crossprod(B, X)`,
#'   `tcrossprod(X, B)`, `crossprod(X)`, `tcrossprod(X)`: computed through the
#'   backend registry on bounded panels (see [fmalloc_backends()]); results
#'   are ordinary R matrices;
#' * `colSums(X, na.rm)` and `colMeans(X, na.rm)`: column sums and means
#'   of the matrix as it decodes (with its transform), in one streamed pass
#'   through the backend registry (column sums and sums of squares,
#'   `FM_OP_COLSUMS`); they equal base `colSums(as.matrix(X))` and
#'   `colMeans(as.matrix(X))` up to rounding, including `na.rm`: with
#'   `na.rm = FALSE` a column with a missing value gives `NA`; with `na.rm =
#'   TRUE` missing values are dropped (the pass maps them to 0, exactly), a
#'   column with none observed has sum 0 and mean `NaN`, and `colMeans()`
#'   divides by the observed values the same pass counts. Named by the
#'   column names;
#'   `dims` must be 1;
#' * `rowSums(X, na.rm)` and `rowMeans(X, na.rm)`: the same rules by row,
#'   from the product `X %*% 1` (a second product counts each row's missing
#'   values for `rowMeans(na.rm = TRUE)`);
#' * `X[i, j]` decodes only the requested block (base R index rules; `NA`
#'   indices are refused); `X[i]` with linear indices, a logical matrix or a
#'   two-column (row, column) matrix of numbers or of row and column names
#'   returns those cells; `as.matrix(X)`
#'   decodes all; `t(X)` is a transposed view that decodes nothing
#'   ([fmalloc_transposed-class]);
#' * `print()` shows the shape, codec, the stored payload's size
#'   ([fmalloc_storage_bytes()]; for a column selection its own share, and
#'   how many of the stored columns it selects) and the top-left corner;
#' * `anyNA()`, `mean()`, `sum()`, `min()`, `max()`, `range()`, `prod()`,
#'   `any()`, `all()`: streamed whole-matrix summaries; elementwise
#'   operations (`X + 1`, `X == 0`, `log(X)`, `is.na(X)`) are refused
#'   rather than made dense ([fmalloc_codec_summaries]).
#'
#' Values are allele counts (0, 1, 2; `"bed2"`) or dosages in \[0, 2\]
#' (`"dos8"`); missing calls decode to `NA` (not `NaN`) unless a transform set by
#' [fmalloc_standardize()] imputes them. Products propagate `NA`, as base
#' `%*%` does. The panel byte budget is [fmalloc_panel_budget()].
#'
#' A codec matrix may also be made by another package around bytes that its
#' own decoder reads (codec `"ext"`, an external codec: for example Rgguf's
#' tensor views, decoded through GGML). Such a matrix is made from C with
#' `Rfmalloc_ext_matrix()` (declared in the installed header
#' `system.file("include", "Rfmalloc.h", package = "Rfmalloc")`); everything
#' above works on it, products go through the same backend registry (a backend of
#' the other package may take them, the reference path computes them
#' otherwise), and `print()` shows the codec's name. It holds an external
#' pointer, so it does not survive `saveRDS()`: after `readRDS()` any use
#' raises `fm_error_eclosed`; [fmalloc_save()] refuses it.
#'
#' Every other codec matrix is stored by name in a runtime with
#' [fmalloc_save()] (payload and description: codec, column selection,
#' transform, dimnames, variant and sample metadata) and mapped again,
#' equal, by [fmalloc_get()], also in a later R process;
#' [fmalloc_runtime_of()] gives the runtime holding its payload.
#'
#' @section Errors:
#' * `colSums()`, `colMeans()`: `fm_error_earg` when `na.rm` is not `TRUE`
#'   or `FALSE`, or `dims` is not 1;
#' * products: `fm_error_emismatch` when the operands are not conformable;
#'   `fm_error_earg` when the other operand is not numeric;
#'   `fm_error_eunsupported` for a product of two codec matrices (or
#'   transposed views of them; `X %*% t(X)` is `tcrossprod(X)`), and from a
#'   backend forced with option `fmalloc.backend` that declines the product
#'   (the message names the backend, the product and the backend's reason);
#' * `X[i, j]`, `X[i]`: `fm_error_earg` for `NA`, out-of-bounds, unknown
#'   names or mixed-sign indices, and for a third index (`X[i, j, k]`);
#' * every use: `fm_error_eclosed` when the runtime holding the storage was
#'   closed; `fm_error_eformat` when a mapped `.bed` file shrank on disk
#'   before the call or an ALP blob's structure is damaged (see
#'   [fmalloc_alp()]); `fm_error_eio` naming the file when it was truncated
#'   by another process during the call (a product, `crossprod()`, `X[i, j]`,
#'   column statistics, PCA: the read's SIGBUS is caught, R goes on);
#'   `fm_error_ecancelled` (an `interrupt` condition) when interrupted; the
#'   error of `setTimeLimit()` arrives as itself.
#'
#' @section Source: PLINK 1 `.bed` 2-bit encoding
#'   (<https://www.cog-genomics.org/plink/1.9/formats#bed>); the one-byte
#'   dosage codec (`"dos8"`, [fmalloc_dosage()]) and ALP
#'   ([fmalloc_alp()]) are this package's; their byte layouts are
#'   in `docs/formats/` in the source repository. Products and column sums
#'   go through the backend registry ([fmalloc_backends()]); the reference
#'   path decodes bounded panels ([fmalloc_panel_budget()]) and calls BLAS
#'   `dgemm`; column sums with `na.rm = TRUE` use a fill of 0 for every
#'   column, and the same pass counts each column's missing entries.
#'   `crossprod(X)` and `tcrossprod(X)` stream X once (BLAS `dsyrk`);
#'   `X[i, j]` and `X[i]` gather in bounded panels.
#'
#' @slot storage raw vector (fmalloc ALTREP) or external pointer to a file view.
#' @slot spec double `c(codec, n_rows, n_stored_cols, byte_offset, col_stride)`
#'   (for `"alp"` the last entry is the compressed blob's size in bytes).
#' @slot cols `NULL` or the 1-based stored column of each column.
#' @slot dimnames list of row and column names.
#' @slot transform `NULL` or `list(center, scale, fill)`, fused into decoding.
#' @slot variants data frame of variant metadata (or `NULL`).
#' @slot samples data frame of sample metadata (or `NULL`).
#' @slot source character: where the bytes live.
#' @slot view environment caching the matrix's view: an external pointer to
#'   the validated C description (codec, bytes, shape, column index,
#'   transform), made where the object is made and again after
#'   `readRDS()`.
#' @name fmalloc_codec_matrix-class
#' @exportClass fmalloc_codec_matrix
setClass("fmalloc_codec_matrix", slots = c(
  storage = "ANY", spec = "numeric", cols = "ANY", dimnames = "list",
  transform = "ANY", variants = "ANY", samples = "ANY", source = "character",
  view = "environment"
))

.new_codec_matrix <- function(storage, codec, n_rows, n_cols, offset, col_stride,
                              dimnames = NULL, variants = NULL, samples = NULL,
                              source = "fmalloc") {
  .remade(methods::new("fmalloc_codec_matrix",
    storage = storage,
    spec = c(.codec_ids()[[codec]], n_rows, n_cols, offset, col_stride),
    cols = NULL,
    dimnames = if (is.null(dimnames)) list(NULL, NULL) else dimnames,
    transform = NULL, variants = variants, samples = samples, source = source
  ))
}

# x with a view of its own, made (and so validated) now: every function that
# makes a codec matrix or changes its storage, spec, cols or transform ends
# with it (copies of an object share their view environment).
.remade <- function(x) {
  x@view <- new.env(parent = emptyenv())
  x@view$ptr <- .view_new(x)
  x
}

.view_new <- function(x) .Call(C_fmr_view_new, .storage(x), x@spec, x@cols, x@transform)

# The handle the C entry points take: the cached one while it is alive and
# was made from these very slots (pointer comparisons in C). After
# readRDS() (external pointers do not survive serialization; the view's
# references to the slots are weak, so a saved object holds its storage
# once) it is made again and cached. An object whose slots were assigned by
# hand, or one saved by a version without views, gets a view for the call.
.view <- function(x) {
  if (!methods::.hasSlot(x, "view")) return(.view_new(x))
  v <- x@view
  s <- .storage(x)
  if (.Call(C_fmr_view_of_slots, v$ptr, s, x@spec, x@cols, x@transform)) return(v$ptr)
  h <- .view_new(x)
  if (!.Call(C_fmr_view_alive, v$ptr)) v$ptr <- h
  h
}

#' Build a codec matrix over existing storage
#'
#' Wraps bytes already written in a codec's layout (for example by a
#' genotype reader such as Rpgen's) as an [fmalloc_codec_matrix-class]
#' object, without copying them.
#'
#' @param storage raw vector (an fmalloc raw vector, or an ordinary raw
#'   vector) holding `ncol` columns of the codec back to back from byte 0:
#'   `ceiling(nrow / 4)` bytes per column for `"bed2"` (PLINK 2-bit
#'   hardcalls), `nrow` bytes per column for `"dos8"` (one-byte dosages).
#'   It must hold at least `ncol` columns; extra bytes are ignored.
#' @param codec `"bed2"` or `"dos8"`.
#' @param nrow,ncol samples (rows) and variants (columns), whole numbers >= 0.
#' @param dimnames `NULL` or a list of two entries, each `NULL` or a
#'   character vector of length `nrow` / `ncol`.
#' @param variants,samples `NULL` or data frames of variant (`ncol` rows) and
#'   sample (`nrow` rows) metadata, returned by [fmalloc_variants()] and
#'   [fmalloc_samples()].
#' @return An `fmalloc_codec_matrix` (samples x variants) sharing `storage`.
#' @section Errors: `fm_error_earg` when storage is not a raw vector, is
#'   shorter than the columns need (the numbers are named), or when a
#'   dimension, dimnames or metadata does not fit.
#' @examples
#' rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#' s <- create_fmalloc_vector("raw", 2, rt) # 2 columns of 4 samples
#' X <- fmalloc_codec_matrix(s, "bed2", 4, 2)
#' dim(X)
#' cleanup_fmalloc(rt)
#' @export
fmalloc_codec_matrix <- function(storage, codec = c("bed2", "dos8"), nrow, ncol,
                                 dimnames = NULL, variants = NULL, samples = NULL) {
  codec <- fm_arg_choice(codec, c("bed2", "dos8"))
  if (!is.raw(storage)) fm_abort("earg", "storage must be a raw vector, not ", fm_describe(storage))
  for (a in c("nrow", "ncol")) {
    v <- get(a)
    if (!is.numeric(v) || length(v) != 1L || is.na(v) || v < 0 || v != floor(v))
      fm_abort("earg", a, " must be a whole number >= 0")
  }
  nrow <- as.double(nrow)
  ncol <- as.double(ncol)
  col_bytes <- if (codec == "bed2") ceiling(nrow / 4) else nrow
  need <- col_bytes * ncol
  if (length(storage) < need) {
    fm_abort("earg", "storage holds ", length(storage), " bytes, but ", ncol, " ", codec,
             " columns of ", nrow, " rows need ", need)
  }
  if (!is.null(dimnames)) {
    if (!is.list(dimnames) || length(dimnames) != 2L)
      fm_abort("earg", "dimnames must be NULL or a list of length 2")
    ext <- c(nrow, ncol)
    for (k in 1:2) {
      dn <- dimnames[[k]]
      if (!is.null(dn) && length(dn) != ext[k])
        fm_abort("earg", "dimnames[[", k, "]] has ", length(dn), " names for an extent of ", ext[k])
      if (!is.null(dn)) dimnames[[k]] <- as.character(dn)
    }
  }
  variants <- .check_metadata(variants, ncol, "variants")
  samples <- .check_metadata(samples, nrow, "samples")
  .new_codec_matrix(storage, codec, nrow, ncol, 0, col_bytes, dimnames = dimnames,
                    variants = variants, samples = samples)
}

# The bytes behind a codec matrix: a raw vector, or for a mapped foreign file
# an environment holding the file view. A view does not survive
# serialization (external pointers never do), so after readRDS() the file is
# mapped again, and validated again, on first use.
.storage <- function(x) {
  s <- x@storage
  if (!is.environment(s)) return(s)
  if (is.null(s$ptr) || !.Call(C_fmr_fileview_alive, s$ptr)) {
    s$ptr <- .open_bed_view(s$path, s$n, s$m)
  }
  s$ptr
}

# Map a .bed read-only and validate it for n samples and m variants.
.open_bed_view <- function(path, n, m) {
  if (!file.exists(path)) fm_abort("eio", sprintf(".bed file '%s' does not exist", path))
  ptr <- .Call(C_fmr_fileview_open, path)
  .Call(C_fmr_bed2_check, ptr, n, m, path)
  ptr
}

# A codec matrix over an external codec (made from C by Rfmalloc_ext_matrix(),
# r_ext.c): storage is the tagged external pointer, the stride is the codec's.
.new_ext_matrix <- function(storage, n_rows, n_cols, dimnames = NULL, source = "external") {
  .new_codec_matrix(storage, "ext", n_rows, n_cols, 0, 0, dimnames = dimnames, source = source)
}

.codec_name <- function(x) {
  ids <- .codec_ids()
  names(ids)[match(x@spec[1], ids)]
}
.n_rows <- function(x) x@spec[2]
.n_cols <- function(x) if (is.null(x@cols)) x@spec[3] else length(x@cols)

# The view the C entry points take, for codec matrices (their own, without
# the columns not in `cols`) and for dense R matrices (plain or fmalloc
# ALTREP; made now) alike. cols: NULL, or the 1-based columns to keep.
.view_of <- function(x, cols = NULL) {
  if (methods::is(x, "fmalloc_codec_matrix")) {
    if (!is.null(cols)) x <- fmalloc_select(x, cols)
    return(.view(x))
  }
  if (!is.matrix(x)) x <- as.matrix(x)
  if (is.logical(x)) storage.mode(x) <- "integer"
  if (!is.double(x) && !is.integer(x)) {
    fm_abort("earg", "x must be a numeric matrix or an fmalloc codec matrix")
  }
  codec <- if (is.double(x)) "double" else "integer"
  size <- if (is.double(x)) 8 else 4
  .Call(C_fmr_view_new, x, c(.codec_ids()[[codec]], nrow(x), ncol(x), 0, nrow(x) * size),
        if (is.null(cols)) NULL else as.numeric(cols), NULL)
}

#' The core view of a matrix, for packages that compute on it in C
#'
#' For the C code of packages that link to Rfmalloc (`LinkingTo: Rfmalloc`):
#' a handle that `Rfmalloc_view_get()` of `Rfmalloc.h` turns into the
#' core's `fm_mat` (and its transform) for one `.Call`, without copying the
#' matrix. RfmallocStatgen's association tests reach any genotype matrix
#' this way.
#'
#' @param x an [fmalloc_codec_matrix-class] (hardcalls, dosages, a standardized
#'   or column-selected view of them, an external codec), or a numeric or
#'   logical matrix (plain, or an fmalloc matrix mapped from a runtime;
#'   logical is read as integer), samples x variants.
#' @param cols `NULL`, or the 1-based columns of `x` to keep (in any order).
#' @return An external pointer (`class()` `"externalptr"`, tagged
#'   `fmalloc_view`, which `Rfmalloc_view_get()` checks); it keeps `x`'s
#'   storage reachable. It does not survive `saveRDS()`.
#' @section Errors: `fm_error_earg` when `x` is none of the above or `cols`
#'   are outside it; `fm_error_eclosed` when its runtime was closed.
#' @examples
#' h <- fmalloc_view(matrix(c(0, 1, 2, 1), 2))
#' class(h)
#' @export
fmalloc_view <- function(x, cols = NULL) {
  if (!is.null(cols) && (!is.numeric(cols) || anyNA(cols) || any(cols < 1) ||
                         any(cols > ncol(x)) || any(cols != round(cols)))) {
    fm_abort("earg", sprintf("cols must be whole numbers between 1 and ncol(x) = %s",
                             format(ncol(x))))
  }
  .view_of(x, cols)
}

#' @rdname fmalloc_codec_matrix-class
#' @param x an `fmalloc_codec_matrix`.
#' @export
setMethod("dim", "fmalloc_codec_matrix", function(x) {
  d <- c(.n_rows(x), .n_cols(x))
  if (all(d <= .Machine$integer.max)) as.integer(d) else d
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("length", "fmalloc_codec_matrix", function(x) prod(dim(x)))

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("t", "fmalloc_codec_matrix", function(x) methods::new("fmalloc_transposed", x = x))

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("dimnames", "fmalloc_codec_matrix", function(x) {
  dn <- x@dimnames
  if (!is.null(x@cols) && !is.null(dn[[2]])) dn[[2]] <- dn[[2]][x@cols]
  if (is.null(dn[[1]]) && is.null(dn[[2]])) NULL else dn # as for a base matrix
})

#' @rdname fmalloc_codec_matrix-class
#' @param value for `dimnames<-` (and `rownames<-`, `colnames<-`): `NULL`
#'   or a list of row and column names, each `NULL` or of the matrix's
#'   extent; the result is a new matrix over the same stored bytes.
#' @export
setReplaceMethod("dimnames", "fmalloc_codec_matrix", function(x, value) {
  d <- dim(x)
  if (is.null(value)) value <- list(NULL, NULL)
  ok <- is.list(value) && length(value) == 2L &&
    all(vapply(1:2, function(k) is.null(value[[k]]) || length(value[[k]]) == d[k], NA))
  if (!ok) {
    fm_abort("earg", sprintf("dimnames must be NULL or a list of 2, each NULL or of length %s and %s",
                             d[1], d[2]), call = .method_call())
  }
  value <- lapply(value, function(v) if (is.null(v)) NULL else as.character(v))
  if (!is.null(x@cols) && !is.null(value[[2]])) {
    # names of a column view are set on the stored columns it shows
    all_names <- if (is.null(x@dimnames[[2]])) rep(NA_character_, x@spec[3]) else x@dimnames[[2]]
    all_names[x@cols] <- value[[2]]
    value[[2]] <- all_names
  }
  x@dimnames <- value
  x
})


# 1-based positions selected by an index vector, with base R's rules for
# positive, negative, zero, logical and character indices; NA is refused.
.index <- function(idx, n, names, what) {
  if (is.null(idx)) return(numeric(0))
  if (is.factor(idx)) idx <- as.character(idx)
  if (is.character(idx)) {
    pos <- match(idx, names)
    if (anyNA(pos)) {
      fm_abort("earg", sprintf("%s name '%s' not found", what, idx[is.na(pos)][1]))
    }
    return(pos)
  }
  if (is.logical(idx)) {
    if (anyNA(idx)) fm_abort("earg", sprintf("%s indices must not be NA", what))
    if (length(idx) > n) {
      fm_abort("earg", sprintf("logical %s index of length %d is longer than %s", what, length(idx), format(n)))
    }
    return(which(rep_len(idx, n)))
  }
  if (!is.numeric(idx)) {
    fm_abort("earg", sprintf("%s indices must be numeric, logical or character, not %s", what, class(idx)[1]))
  }
  if (anyNA(idx)) fm_abort("earg", sprintf("%s indices must not be NA", what))
  idx <- trunc(as.numeric(idx))
  if (any(idx < 0)) {
    if (any(idx > 0)) fm_abort("earg", "cannot mix positive and negative indices")
    return(setdiff(seq_len(n), -idx))
  }
  idx <- idx[idx != 0]
  if (any(idx > n)) {
    fm_abort("earg", sprintf("%s index %g is out of bounds (%s)", what, max(idx), format(n)))
  }
  idx
}

# x[i] with one index: linear positions (column-major), a logical matrix, or a
# two-column (row, column) matrix, as for base matrices. Only the columns
# holding requested cells are decoded, a bounded block at a time (in C).
.cells <- function(x, i) {
  d <- dim(x)
  if (is.matrix(i) && ncol(i) == 2 && (is.numeric(i) || is.character(i))) {
    rc <- if (is.character(i)) .cell_names(x, i) else i
    # as for a base matrix: a row holding a 0 selects nothing, negatives are refused
    rc <- rc[!apply(rc == 0 & !is.na(rc), 1, any), , drop = FALSE]
    if (any(rc < 0, na.rm = TRUE)) fm_abort("earg", "negative values are not allowed in a matrix index")
  } else {
    if (is.matrix(i) && is.logical(i)) {
      if (!identical(dim(i), as.integer(d))) fm_abort("earg", "a logical index matrix must have the dimensions of x")
      i <- as.vector(i)
    }
    pos <- .index(i, d[1] * d[2], NULL, "element")
    rc <- arrayInd(pos, d)
  }
  if (anyNA(rc)) fm_abort("earg", "element indices must not be NA")
  if (any(rc[, 1] > d[1]) || any(rc[, 2] > d[2])) {
    fm_abort("earg", sprintf("element indices are out of bounds (the matrix is %s x %s)", d[1], d[2]))
  }
  .Call(C_fmr_gather_cells, .view(x), as.numeric(rc[, 1]), as.numeric(rc[, 2]))
}

# Row and column numbers of a character cell index (a two-column matrix of
# row and column names); a missing name stays NA (refused by the caller).
.cell_names <- function(x, i) {
  dn <- dimnames(x)
  matrix(vapply(1:2, function(k) {
    what <- c("row", "column")[k]
    if (is.null(dn[[k]])) fm_abort("earg", sprintf("x has no %s names to match a character index", what))
    pos <- match(i[, k], dn[[k]])
    bad <- is.na(pos) & !is.na(i[, k])
    if (any(bad)) fm_abort("earg", sprintf("%s name '%s' not found", what, i[which(bad)[1], k]))
    pos
  }, numeric(nrow(i))), ncol = 2)
}

#' @rdname fmalloc_codec_matrix-class
#' @param i,j row and column indices (numeric, logical, character or missing).
#' @param ... ignored.
#' @param drop drop dimensions of extent one, as for base matrices.
#' @export
setMethod("[", "fmalloc_codec_matrix", function(x, i, j, ..., drop = TRUE) {
  .two_indices(...length())
  if (nargs() - (!missing(drop)) == 2) {
    if (missing(i)) return(x)
    return(.cells(x, i))
  }
  dn <- dimnames(x)
  ii <- if (missing(i)) seq_len(.n_rows(x)) else .index(i, .n_rows(x), dn[[1]], "row")
  jj <- if (missing(j)) seq_len(.n_cols(x)) else .index(j, .n_cols(x), dn[[2]], "column")
  out <- .Call(C_fmr_gather, .view(x), as.numeric(ii), as.numeric(jj))
  if (!is.null(dn[[1]]) || !is.null(dn[[2]])) dimnames(out) <- list(dn[[1]][ii], dn[[2]][jj])
  if (drop) drop(out) else out
})

# x[i, j, k]: a matrix has two dimensions (base R: "incorrect number of
# dimensions"), so an index beyond j is refused rather than ignored.
.two_indices <- function(n_extra) {
  if (n_extra) fm_abort("earg", "incorrect number of dimensions: a codec matrix takes x[i, j] or x[i], not ",
                        2 + n_extra, " indices", call = sys.call(-1L))
}

#' Select columns of a codec matrix without copying
#'
#' Returns a view of `x` restricted to columns `j` (in that order, duplicates
#' allowed). No genotype is decoded; the view shares the storage.
#' @param x an `fmalloc_codec_matrix`.
#' @param j column indices (numeric, logical or names).
#' @return An `fmalloc_codec_matrix` with `length(j)` columns; its transform
#'   and variant metadata are subset alongside.
#' @section Errors: `fm_error_earg` when `x` is not a codec matrix: for a
#'   transposed view `t(X)` (whose columns are samples) select the variants
#'   of `X` (`t(fmalloc_select(X, j))`); a dense matrix takes `x[, j]`.
#'   The index errors of `X[i, j]`.
#' @export
fmalloc_select <- function(x, j) {
  if (methods::is(x, "fmalloc_transposed")) {
    fm_abort("earg", "fmalloc_select() selects columns of a codec matrix, and x is a transposed view t(X) ",
             "(its columns are the rows of X, which are not selectable); select columns of X and ",
             "transpose: t(fmalloc_select(X, j))")
  }
  if (!methods::is(x, "fmalloc_codec_matrix")) {
    fm_abort("earg", "x must be an fmalloc codec matrix, not ", fm_describe(x), "; a dense matrix takes x[, j]")
  }
  jj <- if (missing(j)) seq_len(.n_cols(x)) else .index(j, .n_cols(x), dimnames(x)[[2]], "column")
  stored <- if (is.null(x@cols)) jj else x@cols[jj]
  y <- x
  y@cols <- as.numeric(stored)
  if (!is.null(x@transform)) y@transform <- lapply(x@transform, function(v) if (is.null(v)) v else v[jj])
  .remade(y)
}

#' Bytes of a codec matrix's stored payload
#'
#' The size of what the codec stores: `ceiling(nrow / 4)` bytes per stored
#' column for PLINK 2-bit hardcalls (`"bed2"`; for [fmalloc_bed_open()] the
#' `.bed` file without its 3-byte header), `nrow` bytes per column for
#' one-byte dosages, the compressed blob for `"alp"`, the external codec's
#' own count for `"ext"`. A column selection ([fmalloc_select()]) reports
#' its own share: the bytes of the columns it selects (each time it selects
#' one) for `"bed2"` and `"dos8"`, whose columns all have the same size;
#' for `"alp"` and `"ext"`, whose columns are not stored apart, the whole
#' payload prorated by the share of stored columns selected (the average
#' per column). This is the figure `print()` and [summary()][summary-fmalloc_codec_matrix]
#' show. It answers "how many bits per genotype?": `8 *
#' fmalloc_storage_bytes(X) / length(X)` is 2 for hardcalls of a sample
#' count divisible by 4, also for a column selection. (`unclass()` of a
#' codec matrix gives its S4 object, not its payload: `length(unclass(X))`
#' is 1.)
#' @param x an `fmalloc_codec_matrix`.
#' @return The payload's size in bytes, a double.
#' @section Errors: `fm_error_earg` when `x` is not an `fmalloc_codec_matrix`;
#'   `fm_error_eclosed` for an external-codec matrix whose codec was
#'   released.
#' @section Source: PLINK 1 `.bed` 2-bit encoding
#'   (<https://www.cog-genomics.org/plink/1.9/formats#bed>); the dosage and
#'   ALP layouts are this package's (`docs/formats/` in the source
#'   repository).
#' @examples
#' rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#' g <- matrix(sample(0:2, 400 * 10, replace = TRUE), 400, 10)
#' X <- fmalloc_bed(g, rt)
#' 8 * fmalloc_storage_bytes(X) / length(g) # bits per genotype: 2
#' fmalloc_storage_bytes(fmalloc_select(X, 1:5)) # half the columns: 500 bytes
#' cleanup_fmalloc(rt)
#' @export
fmalloc_storage_bytes <- function(x) {
  if (!methods::is(x, "fmalloc_codec_matrix")) {
    fm_abort("earg", "x must be an fmalloc codec matrix, not ", fm_describe(x))
  }
  stored <- x@spec[3]
  whole <- switch(.codec_name(x),
                  alp = x@spec[5], # the blob's size
                  ext = .Call(C_fmr_ext_info, .storage(x))$bytes,
                  return(x@spec[5] * .n_cols(x))) # bed2, dos8: the column stride
  if (is.null(x@cols) || stored == 0) whole else whole * .n_cols(x) / stored
}

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("as.matrix", "fmalloc_codec_matrix", function(x, ...) x[, , drop = FALSE])

#' @rdname fmalloc_codec_matrix-class
#' @param object an `fmalloc_codec_matrix`.
#' @export
setMethod("show", "fmalloc_codec_matrix", function(object) {
  cat(.describe_codec(object), "\n", sep = "")
  .print_corner(object)
  invisible(object)
})

# "<fmalloc bed2 matrix: N x M, 2-bit hardcalls, 6.77 MiB>": shape, codec
# and the stored payload's size.
.describe_codec <- function(x) {
  d <- dim(x)
  codec <- .codec_name(x)
  unit <- switch(codec, bed2 = "2-bit hardcalls", dos8 = "1-byte dosages", codec)
  bytes <- fmalloc_storage_bytes(x)
  if (codec == "alp") {
    unit <- sprintf("ALP-compressed doubles at %.2f bits/value", if (length(x) > 0) 8 * bytes / length(x) else 0)
  }
  if (codec == "ext") {
    codec <- .Call(C_fmr_ext_info, .storage(x))$name
    unit <- paste("external codec from", x@source)
  }
  sprintf("<fmalloc %s matrix: %s x %s, %s, %s%s%s>", codec, format(d[1], big.mark = ","),
          format(d[2], big.mark = ","), unit, fm_bytes(bytes), .view_note(x),
          if (is.null(x@transform)) "" else ", standardized")
}

# " (a view of 1,000 of 25,161 stored columns)" for a column selection.
.view_note <- function(x) {
  if (is.null(x@cols)) return("")
  sprintf(" (a view of %s of %s stored columns)", format(.n_cols(x), big.mark = ","),
          format(x@spec[3], big.mark = ","))
}

# The top-left 6 x 6 corner of x (a codec matrix or a transposed view).
.print_corner <- function(x) {
  d <- dim(x)
  if (d[1] > 0 && d[2] > 0) {
    print(x[seq_len(min(6, d[1])), seq_len(min(6, d[2])), drop = FALSE])
    if (d[1] > 6 || d[2] > 6) cat("...\n")
  }
}

# The other operand of a product, as a double matrix (a vector is a column,
# or with row = TRUE a row); call: the user's call, for errors.
.as_operand <- function(b, call, row = FALSE) {
  if (methods::is(b, "fmalloc_codec_matrix")) .two_codecs(call)
  if (is.null(b) || (is.null(dim(b)) && !is.atomic(b))) {
    fm_abort("earg", "the other operand must be a numeric matrix or vector, not ", fm_describe(b), call = call)
  }
  if (is.null(dim(b))) b <- if (row) matrix(b, nrow = 1) else matrix(b, ncol = 1)
  b <- as.matrix(b)
  if (!is.numeric(b) && !is.logical(b)) {
    fm_abort("earg", sprintf("the other operand must be numeric, not %s", typeof(b)), call = call)
  }
  storage.mode(b) <- "double"
  b
}

# The user's call, from inside an S4 method (also as a lazy argument of a
# helper): the method's own call, or its caller's when the method body runs
# as .local() (formals other than the generic's). Errors report it, not an
# internal helper. Builtins (sum(), round()) dispatch with their arguments
# evaluated: an object in the call is shown as x.
.method_call <- function() {
  call <- sys.call(sys.parent())
  if (identical(call[[1]], quote(.local))) call <- sys.call(sys.parent(2L))
  as.call(lapply(as.list(call), function(a) if (isS4(a)) quote(x) else a))
}

# A product of two codec matrices (or transposed views of them) is refused:
# neither side is an operand the backends take.
.two_codecs <- function(call) {
  fm_abort("eunsupported", "products of two codec matrices are not supported; decode one with as.matrix() ",
           "(X %*% t(X) and t(X) %*% X of one matrix are tcrossprod(X) and crossprod(X), streamed)",
           call = call)
}

# The C glue notes the backend that ran for fmalloc_last_backend(). Its
# errors (non-conformable operands, a declining forced backend) report the
# user's call when one is given.
.product <- function(x, b, op, call = NULL) {
  tryCatch(.Call(C_fmr_product, .view(x), as.integer(op), b, NULL), error = function(e) {
    if (inherits(e, "fm_error") && !is.null(call)) e$call <- call
    stop(e)
  })
}

.with_dimnames <- function(y, rn, cn) {
  if (!is.null(rn) || !is.null(cn)) dimnames(y) <- list(rn, cn)
  y
}

# X %*% b (n x k), for the user's call.
.xb <- function(x, b, call) {
  b <- .as_operand(b, call)
  .with_dimnames(.product(x, b, 1L, call), dimnames(x)[[1]], colnames(b))
}

# t(X) %*% b (p x k), for the user's call.
.xtb <- function(x, b, call) {
  b <- .as_operand(b, call)
  .with_dimnames(.product(x, b, 2L, call), dimnames(x)[[2]], colnames(b))
}

#' @rdname fmalloc_codec_matrix-class
#' @param y the other operand: a numeric matrix or vector.
#' @export
setMethod("%*%", signature("fmalloc_codec_matrix", "ANY"), function(x, y) .xb(x, y, .method_call()))

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("%*%", signature("ANY", "fmalloc_codec_matrix"), function(x, y) {
  call <- .method_call()
  x <- .as_operand(x, call, row = TRUE) # a vector on the left is a row, as in base R
  r <- .xtb(y, base::t(x), call)
  t(r)
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("crossprod", signature("fmalloc_codec_matrix", "ANY"), function(x, y = NULL) {
  if (is.null(y)) return(.gram(x, "cross"))
  .xtb(x, y, .method_call())
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("crossprod", signature("fmalloc_codec_matrix", "missing"), function(x, y = NULL) {
  .gram(x, "cross")
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("crossprod", signature("ANY", "fmalloc_codec_matrix"), function(x, y = NULL) {
  r <- .xtb(y, x, .method_call())
  t(r)
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("tcrossprod", signature("fmalloc_codec_matrix", "ANY"), function(x, y = NULL) {
  if (is.null(y)) return(.gram(x, "tcross"))
  call <- .method_call()
  .xb(x, base::t(.as_operand(y, call, row = TRUE)), call)
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("tcrossprod", signature("fmalloc_codec_matrix", "missing"), function(x, y = NULL) {
  .gram(x, "tcross")
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("tcrossprod", signature("ANY", "fmalloc_codec_matrix"), function(x, y = NULL) {
  call <- .method_call()
  r <- .xb(y, base::t(.as_operand(x, call, row = TRUE)), call)
  t(r)
})

# colSums / colMeans of a codec matrix as it decodes (see the class docs):
# one pass through the backend registry gives the sums and each column's
# missing entries (FM_OP_COLSUMS with the count).
.col_sums <- function(x, na.rm, dims, mean) {
  cs <- .col_pass(x, .drops_na(x, na.rm, dims))
  s <- if (mean) cs$sum / (.n_rows(x) - cs$dropped) else cs$sum
  names(s) <- dimnames(x)[[2]]
  s
}

# The one streamed pass behind column sums (FM_OP_COLSUMS with the missing
# count): each column's sum (NA where a missing value is kept), and the
# count of missing values the sum dropped (all 0 unless drop_na) and of
# those it kept (all 0 when drop_na or when the transform imputes them).
.col_pass <- function(x, drop_na) {
  cs <- .Call(C_fmr_product, .view(x), 4L, NULL, if (drop_na) 0 else NULL)
  missing <- if (.imputes(x)) 0 * cs[, 3] else cs[, 3]
  list(sum = .na_sums(x, cs[, 1]), dropped = if (drop_na) missing else 0 * missing,
       kept = if (drop_na) 0 * missing else missing)
}

# Whether the transform fills missing values (so none decodes as missing).
.imputes <- function(x) !is.null(x@transform) && !is.null(x@transform$fill)

# The checks of colSums/rowSums(x, na.rm, dims) and whether missing values
# are dropped: na.rm, unless the transform imputes them (no missing values).
.drops_na <- function(x, na.rm, dims) {
  .check_na_rm(na.rm, sys.call(-1L))
  if (!identical(as.numeric(dims), 1)) {
    fm_abort("earg", sprintf("dims must be 1 for a codec matrix, not %s", paste(deparse(dims), collapse = "")),
             call = sys.call(-1L))
  }
  na.rm && !.imputes(x)
}

.check_na_rm <- function(na.rm, call) {
  if (!.is_flag(na.rm)) fm_abort("earg", "na.rm must be TRUE or FALSE, not ", fm_describe(na.rm), call = call)
}

# Genotype codecs hold finite values only: a NaN sum is a missing value.
.na_sums <- function(x, s) {
  if (.codec_name(x) %in% c("bed2", "dos8")) s[is.na(s)] <- NA_real_
  s
}

#' @rdname fmalloc_codec_matrix-class
#' @param na.rm drop missing values (`colSums`, `colMeans`).
#' @param dims must be 1.
#' @export
setMethod("colSums", "fmalloc_codec_matrix", function(x, na.rm = FALSE, dims = 1L) {
  .col_sums(x, na.rm, dims, mean = FALSE)
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("colMeans", "fmalloc_codec_matrix", function(x, na.rm = FALSE, dims = 1L) {
  .col_sums(x, na.rm, dims, mean = TRUE)
})

# rowSums / rowMeans: one product X %*% 1 (with missing values summed as 0
# when na.rm drops them); for the mean, a second with missing values as 1
# gives each row's missing count as the difference (a whole number, rounded).
.row_sums <- function(x, na.rm, dims, mean) {
  drop_na <- .drops_na(x, na.rm, dims)
  ones <- matrix(1, .n_cols(x), 1L)
  s <- .na_sums(x, .Call(C_fmr_product, .view(x), 1L, ones, if (drop_na) 0 else NULL)[, 1])
  if (mean) {
    n <- .n_cols(x)
    if (drop_na) n <- n - round(.Call(C_fmr_product, .view(x), 1L, ones, 1)[, 1] - s)
    s <- s / n
  }
  names(s) <- dimnames(x)[[1]]
  s
}

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("rowSums", "fmalloc_codec_matrix", function(x, na.rm = FALSE, dims = 1L) {
  .row_sums(x, na.rm, dims, mean = FALSE)
})

#' @rdname fmalloc_codec_matrix-class
#' @export
setMethod("rowMeans", "fmalloc_codec_matrix", function(x, na.rm = FALSE, dims = 1L) {
  .row_sums(x, na.rm, dims, mean = TRUE)
})

# X'X (p x p) or XX' (n x n) in one streamed pass (fm_gram.h).
.gram <- function(x, kind) {
  dn <- dimnames(x)[[if (kind == "cross") 2 else 1]]
  .with_dimnames(.Call(C_fmr_gram, .view(x), kind), dn, dn)
}

#' Panel byte budget
#'
#' Products, subsets and statistics over codec matrices decode at most this
#' many bytes of doubles at a time. The default is 64 MiB. The budget is the
#' option `fmalloc.panel_bytes`, which `fmalloc_panel_budget(bytes)` sets and
#' every core call of the stack reads (one setting for Rfmalloc, Rpgen,
#' Rgguf and Rllm); an invalid value set before the package loads is ignored
#' with a warning, one set later raises `fm_error_earg` at the next call.
#' @param bytes new budget in bytes, or `NULL` to only query; `0` restores the default.
#' @return The budget in force, in bytes (invisibly when setting).
#' @export
fmalloc_panel_budget <- function(bytes = NULL) {
  if (is.null(bytes)) return(.Call(C_fmr_setting, "panel_bytes"))
  invisible(.set_setting("fmalloc.panel_bytes", bytes, "panel_bytes"))
}

# Test hooks of the suite, not exported. .test_ext_matrix(m) wraps the
# numeric matrix m, stored row by row, as a codec matrix over an external
# codec compiled into the package for tests ("test rowmajor f64"), made
# through the same C callable (Rfmalloc_ext_matrix()) that other packages
# use. .test_ext_backend(TRUE) registers, through
# Rfmalloc_backend_register(), a backend "ext_rowmajor" that computes plain
# X %*% b for that codec (no column subset, no transform) and declines
# everything else; FALSE removes it.
.test_ext_matrix <- function(m) {
  m <- as.matrix(m)
  storage.mode(m) <- "double"
  .Call(C_fmr_test_ext_matrix, as.vector(t(m)), nrow(m), ncol(m))
}

.test_ext_backend <- function(on = TRUE) invisible(.Call(C_fmr_test_ext_backend, on))

#' @import methods
NULL

.onLoad <- function(libname, pkgname) {
  fm_apply_option("fmalloc.panel_bytes", "panel_bytes", "the default panel budget")
  fm_apply_option("fmalloc.threads", "threads", "the default thread count")
  if (!.Call(C_fmr_cpu_env_valid))
    warning(sprintf(paste("Rfmalloc: environment variable FM_ISA='%s' is ignored (one of auto,",
                          "portable, avx2, avx512); kernels use %s"), Sys.getenv("FM_ISA"),
                    .Call(C_fmr_cpu_isa)), call. = FALSE)
  .hook_delayed() # DelayedArray's methods for our classes (R/delayedarray.R)
}

# Check option `name` at load time by reading its setting `field` through
# the one reader (r_settings.c). A value it refuses must not make library()
# fail: warn naming the option, unset it and keep the default.
fm_apply_option <- function(name, field, default) {
  value <- getOption(name)
  if (is.null(value)) return(invisible())
  tryCatch(.Call(C_fmr_setting, field), error = function(e) {
    options(structure(list(NULL), names = name))
    warning(sprintf("Rfmalloc: option %s is ignored (%s); using %s", name,
                    conditionMessage(e), default), call. = FALSE)
  })
  invisible()
}
