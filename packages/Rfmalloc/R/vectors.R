#' Allocate a mapped vector or matrix
#'
#' Allocates a block in `runtime` and returns an R vector (ALTREP class
#' `fm_dbl_map`, `fm_int_map`, `fm_lgl_map` or `fm_raw_map`) whose data
#' pointer lies in the mapping, so BLAS and code that takes a bare pointer
#' (RSpectra, irlba, Eigen::Map) use it without a copy.
#'
#' R value semantics hold: no R variable ever changes value because another
#' one was modified. After `y <- x; y[1] <- 0`, `x` is unchanged (the copy is
#' a new block in the same runtime, not a heap copy). A fresh vector from
#' `create_fmalloc_vector()` / `create_fmalloc_matrix()` that no other
#' variable shares is modified in place (`x[] <- v`, `x[i, j] <- v` write into
#' the mapping, without a copy), which is how you fill it.
#'
#' Once [fmalloc_save()] has stored the vector under a name, it is marked not
#' mutable, like every vector returned by [fmalloc_get()] or restored by
#' [readRDS()] / [unserialize()]: they all view the stored object, so any R
#' modification of one of them first copies it into a new unnamed block and
#' the stored object and its other views keep their values. To change a
#' stored object on purpose, write into it with [fmalloc_write_cols()] (every
#' view sees the change) or save a new object under its name.
#'
#' The block is a temporary until [fmalloc_save()] names it; a temporary is
#' freed when R garbage-collects its last vector.
#'
#' @param type Element type: `"double"` (or `"numeric"`), `"integer"`,
#'   `"logical"` or `"raw"`. Stored as 8-byte IEEE doubles, 4-byte integers
#'   (logicals too; `NA` is `INT_MIN` as in R) or bytes.
#' @param length Number of elements, a whole number; lengths beyond
#'   \eqn{2^{31}} are given as doubles (R long vectors).
#' @param runtime A writable `"fmalloc_runtime"` from [open_fmalloc()];
#'   the session's default runtime, [fmalloc_default_runtime()], when not given.
#' @return A vector of `length` elements, all `0`, `0L`, `FALSE` or `00`.
#' @section Errors:
#' `fm_error_enospc` when the size cap or the disk is full (R first collects
#' garbage once, so that temporaries nothing refers to any more give their
#' space back, and retries), `fm_error_earg` for bad arguments, a read-only
#' runtime or a call from a forked child, `fm_error_eclosed` after cleanup,
#' `fm_error_eformat` when the file was truncated from outside.
#' @seealso [fmalloc_save()], [fmalloc_write_cols()], [fmalloc_is_mapped()]
#' @examples
#' rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#' x <- create_fmalloc_vector("integer", 4, rt)
#' x[] <- 1:4
#' m <- create_fmalloc_matrix("double", 3, 2, rt, dimnames = list(NULL, c("a", "b")))
#' m[, "b"] <- 1
#' crossprod(m)
#' cleanup_fmalloc(rt)
#' @export
create_fmalloc_vector <- function(type, length, runtime = fmalloc_default_runtime()) {
  fm_check_runtime(runtime)
  fm_check_length(length, "length")
  .Call(C_fmr_altrep_new, runtime, fm_type(type), as.double(length), NULL, NULL)
}

#' @rdname create_fmalloc_vector
#' @param nrow,ncol Matrix extents, whole numbers below \eqn{2^{31}} (their
#'   product may exceed it). The matrix is column-major as in R and BLAS.
#' @param dimnames `NULL` or a list of two entries, each `NULL` or a character
#'   vector of length `nrow` / `ncol`.
#' @export
create_fmalloc_matrix <- function(type, nrow, ncol, runtime = fmalloc_default_runtime(), dimnames = NULL) {
  fm_check_runtime(runtime)
  fm_check_length(nrow, "nrow", .Machine$integer.max)
  fm_check_length(ncol, "ncol", .Machine$integer.max)
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
  .Call(C_fmr_altrep_new, runtime, fm_type(type), as.double(nrow) * as.double(ncol),
        c(as.integer(nrow), as.integer(ncol)), dimnames)
}

fm_type <- function(type) {
  if (!is.character(type) || length(type) != 1L || is.na(type) ||
      !type %in% c("double", "numeric", "integer", "logical", "raw"))
    fm_abort("earg", "type must be \"double\", \"numeric\", \"integer\", \"logical\" or \"raw\", not ",
             deparse(type))
  type
}

fm_check_length <- function(n, what, max = 2^52) {
  if (!is.numeric(n) || length(n) != 1L || is.na(n) || n < 0 || n != floor(n) || n > max)
    fm_abort("earg", what, " must be a whole number in [0, ", format(max, scientific = FALSE),
             "], not ", deparse(n))
}

#' Is a vector stored in an fmalloc mapping?
#'
#' @param x Any R object.
#' @return `fmalloc_is_mapped()`: `TRUE` when `x` is one of the ALTREP classes
#'   `fm_dbl_map`, `fm_int_map`, `fm_lgl_map`, `fm_raw_map` (also after its
#'   runtime was closed). `fmalloc_runtime_of()`: the runtime of a mapped
#'   vector, or of the payload of a codec matrix (or its transposed view)
#'   stored in a runtime; `NULL` for anything else (a heap vector, a matrix
#'   mapped from a `.bed` file by [fmalloc_bed_open()], an external codec's). `fmalloc_describe()`: a list with the stored `name`
#'   (`NULL` for a temporary), `dtype`, `length`, block offset `off` (bytes),
#'   `uid`, `mode`, `path`, `is_open` and `read_only`.
#' @export
fmalloc_is_mapped <- function(x) {
  .Call(C_fmr_altrep_is_mapped, x)
}

#' @rdname fmalloc_is_mapped
#' @export
fmalloc_runtime_of <- function(x) {
  if (isS4(x) && methods::is(x, "fmalloc_transposed")) x <- x@x
  if (isS4(x) && methods::is(x, "fmalloc_codec_matrix")) x <- x@storage
  .Call(C_fmr_altrep_runtime, x)
}

#' @rdname fmalloc_is_mapped
#' @export
fmalloc_describe <- function(x) {
  .Call(C_fmr_altrep_describe, x)
}

#' Write columns of a mapped matrix in place
#'
#' Writes `values` into columns `j` of the mapped matrix `x` through its data
#' pointer. Unlike `x[, j] <- values` this never duplicates `x`: every R object
#' that views the same block sees the change, which is the point. It is the
#' way to write into a stored object (from [fmalloc_get()], or saved with
#' [fmalloc_save()]), whose views R itself never modifies in place. It is safe
#' to call from forked workers ([parallel::mcparallel()], `mclapply`) that
#' write disjoint columns of one matrix: the mapping is shared, and nothing is
#' allocated in the child.
#'
#' @param x A mapped matrix (or vector, treated as one column) from a writable
#'   runtime.
#' @param j Column indices, 1-based, whole numbers.
#' @param values Values for those columns, column-major, `nrow(x) *
#'   length(j)` elements, stored in the type of `x` only when that keeps
#'   every value: a double matrix takes doubles, integers and logicals
#'   (`TRUE` is 1; `NA`, `NaN` and `Inf` are kept); an integer matrix takes
#'   integers, logicals and doubles that are whole numbers in the integer
#'   range or `NA` (`NaN` too, stored as `NA`); a logical matrix takes
#'   logicals and the numbers 0, 1 and `NA`; a raw matrix takes raw bytes and
#'   whole numbers in 0..255. Where base R's `x[, j] <- values` would change
#'   the type of `x` (a non-whole double into an integer matrix makes it a
#'   double matrix), a mapped matrix, whose type is fixed, refuses instead.
#' @return Invisibly, `x`.
#' @section Errors:
#' `fm_error_earg` for a non-mapped `x`, a column out of range, a read-only
#' runtime, or `values` the type of `x` cannot hold (strings, complex
#' numbers, factors and other non-numeric types; numbers it would change:
#' the first such value is named); `fm_error_emismatch` when `values` has the wrong length;
#' `fm_error_eclosed` after cleanup; `fm_error_eformat` when the file was
#' truncated from outside.
#' @export
fmalloc_write_cols <- function(x, j, values) {
  if (!fmalloc_is_mapped(x)) fm_abort("earg", "x must be a mapped vector or matrix")
  if (!is.numeric(j) || anyNA(j) || any(j != floor(j)))
    fm_abort("earg", "j must be whole column numbers")
  values <- fm_cols_values(values, typeof(x))
  .Call(C_fmr_altrep_write_cols, x, as.integer(j), values)
  invisible(x)
}

# values in the storage type of a mapped matrix, refused (for
# fmalloc_write_cols()) unless every value is kept: a mapped matrix cannot
# change type as base R's subassignment does.
fm_cols_values <- function(values, type) {
  call <- sys.call(-1L)
  given <- typeof(values)
  ok <- is.atomic(values) && !is.object(values) &&
    given %in% switch(type, raw = c("raw", "integer", "double"),
                      c("logical", "integer", "double"))
  if (!ok) {
    fm_abort("earg", "values must be ", switch(type, raw = "raw bytes or whole numbers in 0..255",
                                               "numbers or logicals"),
             " for a mapped ", type, " matrix, not ", fm_describe(values), call = call)
  }
  if (given == type) return(as.vector(values))
  v <- as.vector(values)
  kept <- switch(type,
    double = rep(TRUE, length(v)),
    integer = is.na(v) | (is.finite(v) & v == trunc(v) & abs(v) <= .Machine$integer.max),
    logical = is.na(v) | v == 0 | v == 1,
    raw = !is.na(v) & v >= 0 & v <= 255 & v == trunc(v))
  if (!all(kept)) {
    at <- which(!kept)[1L]
    fm_abort("earg", sprintf(
      "values[%s] = %s cannot be stored in a mapped %s matrix without changing it (%s); %s",
      format(at, scientific = FALSE), format(v[at], digits = 15L), type,
      switch(type, integer = "it holds whole numbers in the integer range or NA",
             logical = "it holds TRUE, FALSE or NA", raw = "it holds bytes 0..255"),
      if (type == "integer") "base R would make x a double matrix, which a mapped typed matrix cannot become: write into a double matrix (create_fmalloc_matrix(\"double\", ...)) or round the values first"
      else "convert the values first"), call = call)
  }
  switch(type, double = as.double(v), integer = as.integer(v), logical = as.logical(v),
         raw = as.raw(v))
}

# Test hooks (internal): element and region reads exactly as C code does them
# (REAL_ELT, INTEGER_GET_REGION, ...); i is 0-based.
fm_elt <- function(x, i) .Call(C_fmr_altrep_elt, x, as.double(i))
fm_region <- function(x, i, n) .Call(C_fmr_altrep_region, x, as.double(i), as.double(n))
