# DelayedArray interop: a seed class over any Rfmalloc matrix, so that
# Bioconductor's block processing (DelayedArray::blockApply(), the
# DelayedMatrix methods) reads it one block at a time. DelayedArray is only
# suggested: its generics (extract_array, type, is_sparse) get their methods
# for our classes when it is loaded (a hook set in .onLoad, or
# fmalloc_as_DelayedArray()), stored in .fm_delayed (the locked namespace
# cannot take methods after load). Loading DelayedArray takes seconds, so
# Rfmalloc's own load never does it.

#' A DelayedArray seed over an Rfmalloc matrix
#'
#' `fmalloc_as_DelayedArray(x)` wraps an Rfmalloc matrix in a seed of class
#' `fmalloc_seed` and returns `DelayedArray::DelayedArray(seed)`, a
#' `DelayedMatrix` that Bioconductor code (`DelayedArray::blockApply()`,
#' `colSums()`, `rowSums()`, `realize()`, `DelayedArray::colAutoGrid()`, ...)
#' processes one block at a time. Nothing is decoded or copied when it is
#' made.
#'
#' `x` may be
#' * a codec matrix ([fmalloc_codec_matrix-class]): PLINK hardcalls from
#'   [fmalloc_bed()] or [fmalloc_bed_open()], dosages from
#'   [fmalloc_dosage()], ALP doubles from [fmalloc_alp()], a column selection
#'   from [fmalloc_select()] or [fmalloc_standardize()], or an external-codec
#'   matrix of another package (a GGUF tensor view from `Rgguf::gguf_tensor()`);
#' * a dense matrix of type double, integer, logical or raw, such as a mapped
#'   matrix from [create_fmalloc_matrix()] (any ordinary R matrix of those
#'   types is accepted too).
#'
#' The seed implements the seed contract of DelayedArray:
#' * `dim()`: `dim(x)` (integer, length 2);
#' * `dimnames()`: `dimnames(x)`, so the `DelayedMatrix` keeps the sample and
#'   variant names of a `.bed`;
#' * `extract_array(seed, index)`: `index` is a list of two entries, each
#'   `NULL` (the whole dimension) or a vector of 1-based positions (any order,
#'   repeats allowed); the result is an ordinary matrix of
#'   `lengths`-many rows and columns without dimnames. For a codec matrix it
#'   is `x[i, j, drop = FALSE]`, which gathers only the requested cells in C,
#'   a bounded panel at a time ([fmalloc_panel_budget()]): a block never
#'   decodes the whole matrix;
#' * `type()`: `"double"` for a codec matrix (every codec decodes to
#'   doubles), `typeof(x)` for a dense matrix;
#' * `is_sparse()`: `FALSE`.
#'
#' `extract_array()`, `type()` and `is_sparse()` also have methods for
#' `fmalloc_codec_matrix` itself, so `DelayedArray::DelayedArray(X)` of a
#' codec matrix works as well (with Rfmalloc loaded before DelayedArray, or
#' after `fmalloc_as_DelayedArray()` was called once).
#'
#' Values are those of `x[i, j]`: missing calls of `.bed` and dosage
#' matrices are `NA` (not `NaN`) unless a transform of
#' [fmalloc_standardize()] imputes them; ALP returns every double bit for
#' bit (NA and NaN apart). Block results therefore equal those of
#' `as.matrix(x)`, and `DelayedArray::blockApply(D, colSums,
#' grid = DelayedArray::colAutoGrid(D))` gives the column sums of
#' `colSums(x)` (up to rounding, same `NA` rule).
#'
#' @param x an [fmalloc_codec_matrix-class] or a dense matrix of type double,
#'   integer, logical or raw (e.g. from [create_fmalloc_matrix()]).
#' @return A `DelayedMatrix` (package DelayedArray) whose seed is an
#'   `fmalloc_seed` holding `x`.
#' @section Errors:
#' * `fm_error_eunsupported` when the Bioconductor package DelayedArray is
#'   not installed (Debian: `r-bioc-delayedarray`; elsewhere
#'   `BiocManager::install("DelayedArray")`);
#' * `fm_error_earg` when `x` is neither a codec matrix nor a dense matrix of
#'   those types;
#' * reading blocks raises what `x[i, j]` raises: `fm_error_eclosed` after
#'   the runtime holding `x` was closed, `fm_error_eio` / `fm_error_eformat`
#'   when a mapped file was truncated (see [fmalloc_codec_matrix-class]).
#' @section Source: the seed contract of DelayedArray, vignette
#'   "Implementing A DelayedArray Backend" (package DelayedArray,
#'   <https://bioconductor.org/packages/DelayedArray/>): a seed needs
#'   `dim()`, `dimnames()` and `extract_array()`; `type()`, `is_sparse()` are
#'   optional and given here.
#' @seealso [fmalloc_codec_matrix-class], [fmalloc_panel_budget()]
#' @examples
#' if (requireNamespace("DelayedArray", quietly = TRUE)) {
#'   rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#'   g <- matrix(sample(c(0, 1, 2, NA), 60, TRUE), 12, 5)
#'   X <- fmalloc_bed(g, rt)
#'   D <- fmalloc_as_DelayedArray(X)
#'   print(D[1:3, ])
#'   old <- DelayedArray::getAutoBlockSize()
#'   DelayedArray::setAutoBlockSize(96) # 12 doubles: one column per block
#'   sums <- DelayedArray::blockApply(D, colSums, na.rm = TRUE,
#'                                    grid = DelayedArray::colAutoGrid(D))
#'   print(rbind(blocks = unlist(sums), ours = colSums(X, na.rm = TRUE)))
#'   DelayedArray::setAutoBlockSize(old)
#'   cleanup_fmalloc(rt)
#' }
#' @export
fmalloc_as_DelayedArray <- function(x) {
  if (!.has_delayed()) {
    fm_abort("eunsupported", "fmalloc_as_DelayedArray() needs the Bioconductor package ",
             "DelayedArray, which is not installed (Debian: r-bioc-delayedarray; ",
             "else BiocManager::install(\"DelayedArray\"))")
  }
  seed <- fmalloc_seed(x) # here, so that its error is not wrapped by dispatch
  .register_delayed()
  DelayedArray::DelayedArray(seed)
}

#' @rdname fmalloc_as_DelayedArray
#' @description `fmalloc_seed(x)` makes the seed alone (no DelayedArray
#'   needed), for `DelayedArray::DelayedArray()` or another seed-based
#'   package.
#' @slot x the matrix: an `fmalloc_codec_matrix` or a dense matrix.
#' @exportClass fmalloc_seed
setClass("fmalloc_seed", slots = c(x = "ANY"))

#' @rdname fmalloc_as_DelayedArray
#' @export
fmalloc_seed <- function(x) {
  ok <- methods::is(x, "fmalloc_codec_matrix") ||
    (is.matrix(x) && typeof(x) %in% c("double", "integer", "logical", "raw"))
  if (!ok) {
    fm_abort("earg", "x must be a codec matrix (fmalloc_codec_matrix) or a dense matrix of ",
             "type double, integer, logical or raw, not ", class(x)[1],
             if (is.matrix(x)) paste0(" of type ", typeof(x)))
  }
  methods::new("fmalloc_seed", x = x)
}

#' @rdname fmalloc_as_DelayedArray
#' @export
setMethod("dim", "fmalloc_seed", function(x) as.integer(dim(x@x)))

#' @rdname fmalloc_as_DelayedArray
#' @export
setMethod("dimnames", "fmalloc_seed", function(x) {
  dn <- dimnames(x@x)
  if (is.null(dn) || (is.null(dn[[1]]) && is.null(dn[[2]]))) NULL else dn
})

# extract_array() of a matrix m (codec or dense): index is list(i, j), each
# NULL (all) or 1-based positions. Empty blocks are made here (DelayedArray
# asks for one to learn the type), the rest is m[i, j] without dimnames.
.fm_extract <- function(m, index) {
  if (!is.list(index) || length(index) != 2L) {
    fm_abort("earg", "index must be a list of 2 entries (NULL or positions), one per dimension")
  }
  d <- dim(m)
  n <- vapply(1:2, function(k) if (is.null(index[[k]])) d[k] else length(index[[k]]), numeric(1))
  type <- .fm_type(m)
  if (any(n == 0)) return(array(vector(type, 0L), dim = n))
  at <- function(k) if (is.null(index[[k]])) seq_len(d[k]) else index[[k]]
  out <- m[at(1), at(2), drop = FALSE]
  dimnames(out) <- NULL
  out
}

# Whether DelayedArray can be loaded (a function of its own, so that a test
# can replace it in a child session to see the error of a machine without it).
.has_delayed <- function() requireNamespace("DelayedArray", quietly = TRUE)

.fm_type <- function(m) if (methods::is(m, "fmalloc_codec_matrix")) "double" else typeof(m)

# Where the methods for DelayedArray's generics live (see the top of the file).
.fm_delayed <- new.env()

# Give DelayedArray's generics their methods for fmalloc_seed and
# fmalloc_codec_matrix, once per session (after DelayedArray is loaded).
# extract_array and is_sparse are DelayedArray's (S4Arrays' from Bioconductor
# 3.17, reexported), type is BiocGenerics'; each is looked up through
# DelayedArray's namespace.
.register_delayed <- function() {
  if (isTRUE(.fm_delayed$done) || !isNamespaceLoaded("DelayedArray")) return(invisible(FALSE))
  ns <- asNamespace("DelayedArray")
  methods_of <- list(
    extract_array = list(fmalloc_seed = function(x, index) .fm_extract(x@x, index),
                         fmalloc_codec_matrix = function(x, index) .fm_extract(x, index)),
    type = list(fmalloc_seed = function(x) .fm_type(x@x),
                fmalloc_codec_matrix = function(x) "double"),
    is_sparse = list(fmalloc_seed = function(x) FALSE,
                     fmalloc_codec_matrix = function(x) FALSE)
  )
  for (g in names(methods_of)) {
    generic <- methods::getGeneric(g, mustFind = FALSE, where = ns)
    if (is.null(generic)) next
    for (cl in names(methods_of[[g]])) {
      methods::setMethod(generic, cl, methods_of[[g]][[cl]], where = .fm_delayed)
    }
  }
  .fm_delayed$done <- TRUE
  invisible(TRUE)
}

# Called from .onLoad: register now when DelayedArray is already loaded, and
# else when it loads.
.hook_delayed <- function() {
  if (isNamespaceLoaded("DelayedArray")) {
    .register_delayed()
  } else {
    setHook(packageEvent("DelayedArray", "onLoad"), function(...) .register_delayed())
  }
}
