# The statgen_ld object: an LD matrix of n variants as a symmetric band in
# compressed sparse column form, both triangles and the diagonal stored
# (the core's layout, core/include/fm/fm_band.h). Its three arrays are
# mapped vectors of an Rfmalloc runtime (statgen_ld()) or, for small
# matrices built in R (.ld_from_dense()), heap vectors; C reads them through
# stg_band_get() (src/r_band.c).
#
# Fields: colptr (n + 1 doubles, 0-based offsets), rowidx (integers, 0-based
# rows, increasing in each column), values (doubles, or raw bytes holding
# floats when dtype is "f32"), dtype, variants (data frame of n rows: CHR, ID,
# POS, CM, A1, A2 where known), info (list: n_samples, window, missing,
# r2_min, runtime, name, samples: the rows used or NULL) and checked (the
# token of stg_band_check: the layout of the three arrays was checked once,
# src/r_band.c).

#' The statgen_ld class
#'
#' An S4 class extending `list` (so that `%*%` dispatches on it): the LD
#' band of [statgen_ld()]; see there for its fields and methods.
#' @keywords internal
#' @exportClass statgen_ld
methods::setClass("statgen_ld", contains = "list")

# checked: the token of a past check of the same arrays (stg_band_check),
# or NULL to check them now: a band is checked once, when it is made or
# reopened (a damaged runtime file is an error here, not at a product).
new_statgen_ld <- function(colptr, rowidx, values, dtype = c("f64", "f32"), variants = NULL,
                           info = list(), checked = NULL) {
  dtype <- match.arg(dtype)
  n <- length(colptr) - 1L
  if (is.null(variants)) variants <- data.frame(ID = sprintf("v%d", seq_len(n)))
  if (is.null(checked))
    checked <- .Call(C_stg_band_check, list(colptr = colptr, rowidx = rowidx, values = values))
  methods::new("statgen_ld", list(colptr = colptr, rowidx = rowidx, values = values,
                                  dtype = dtype, variants = variants, info = info,
                                  checked = checked))
}

# The arrays stg_band_get() reads, with the token of their check.
.ld_parts <- function(ld) unclass(ld)[c("colptr", "rowidx", "values", "checked")]

# A statgen_ld of a dense symmetric matrix R on the heap, storing every
# entry of each column's window: rows first..last where the entries outside
# are 0 (or every nonzero entry plus the diagonal when band = FALSE). For
# tests and small examples.
.ld_from_dense <- function(R, dtype = "f64", variants = NULL, band = TRUE) {
  R <- as.matrix(R)
  n <- ncol(R)
  rows <- lapply(seq_len(n), function(j) {
    nz <- which(R[, j] != 0 | seq_len(n) == j)
    if (band) seq(min(nz), max(nz)) else nz
  })
  colptr <- c(0, cumsum(as.double(lengths(rows))))
  idx <- unlist(rows)
  x <- R[cbind(idx, rep(seq_len(n), lengths(rows)))]
  values <- if (dtype == "f32") .f32_bytes(x) else as.double(x)
  new_statgen_ld(colptr, as.integer(idx - 1L), values, dtype, variants)
}

# Doubles as the raw bytes of floats (native byte order), and back.
.f32_bytes <- function(x) writeBin(as.double(x), raw(), size = 4L)
.f32_values <- function(b) readBin(b, "double", n = length(b) %/% 4L, size = 4L)
