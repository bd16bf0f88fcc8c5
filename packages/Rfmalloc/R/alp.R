# ALP: lossless compression of double matrices, as a codec matrix.

#' Store a double matrix losslessly compressed with ALP
#'
#' Compresses a numeric matrix column by column with decimal ALP (Adaptive
#' Lossless floating-Point compression) into an fmalloc runtime and returns
#' it as an [fmalloc_codec_matrix][fmalloc_codec_matrix-class] of codec
#' `"alp"`. Values that originated as decimals (prices with 2 decimals,
#' measurements with a fixed precision) take far fewer than 64 bits each;
#' every value comes back bit for bit, `NA`, `NaN`, `Inf`, `-Inf`, `-0`
#' and denormals included, so `identical(as.matrix(A), x)` holds.
#'
#' Each column is cut into vectors of 1024 rows. Per vector an exponent `e`
#' and factor `f` are chosen by sampling, and each value `v` is stored as the
#' integer `round(v * 10^e / 10^f)` in the fewest bits its vector's range
#' needs; values that would not decode to the same bits (`NA`, `NaN`,
#' infinities, `-0`, values of 2^51 or more after scaling, and the rare
#' decimal that does not round trip) are stored whole as exceptions. A
#' vector that would take more than 64 bits per value that way (data that is
#' not decimal, such as model weights) is stored as raw doubles, so the
#' matrix never takes much more than its dense size.
#'
#' Everything a codec matrix does works on it: `dim()`, `[`, `as.matrix()`,
#' `%*%`, `crossprod()`, [fmalloc_colVars()], [fmalloc_pca()],
#' [fmalloc_standardize()]. Products go to the `"alp"` backend (see
#' [fmalloc_backends()]), which decodes one 1024-row vector of a few columns
#' at a time into a buffer in the CPU cache and multiplies at once, never
#' building a decoded panel; its results equal the reference path up to the
#' order of summation (within `2 m u sum|x b|`, `m` the inner dimension,
#' `u = 2^-53`). Missing values (`NA` or `NaN`) propagate through products
#' as in base R. `print()` shows the compressed size and bits per value;
#' [fmalloc_alp_info()] gives the details.
#'
#' @param x numeric matrix (rows x columns); integers and logicals are
#'   stored as doubles.
#' @param runtime an fmalloc runtime (see [open_fmalloc()]);
#'   the session's default runtime, [fmalloc_default_runtime()], when not given.
#' @param dimnames defaults to `dimnames(x)`.
#' @return An `fmalloc_codec_matrix` of codec `"alp"` over a raw fmalloc
#'   vector holding the compressed blob (its byte layout is documented in
#'   `docs/formats/alp.md` in the source repository).
#' @section Errors: `fm_error_earg` when `x` is not a numeric matrix;
#'   `fm_error_emismatch` when the dimnames do not fit; `fm_error_enomem` or `fm_error_enospc` when the
#'   blob cannot be allocated or the runtime is full; `fm_error_ecancelled`
#'   when interrupted. Every use of the matrix checks the structure of the
#'   stored blob and raises `fm_error_eformat` (naming the first offending
#'   byte) when it is broken: the header (magic, version, sizes, shape
#'   against the size), the column offset table, every vector header (kind,
#'   exponent `e <= 18`, factor `f <= e`, bit width `<= 64`, exception
#'   count, data offset inside its column) and every exception row (strictly
#'   increasing, inside its vector). The values themselves carry no checksum:
#'   damage to the packed digits, a vector's base digit, an exception's
#'   stored value, a raw vector's doubles, or an exponent, factor or width
#'   changed to another value that is still in range, decodes silently to
#'   other numbers. Keep the runtime file where such damage matters (or
#'   compare a checksum of `as.matrix()` yourself).
#' @section Source: A. Afroozeh, L. X. Kuffo and P. Boncz (2023), "ALP:
#'   Adaptive Lossless floating-Point Compression", Proceedings of the ACM on
#'   Management of Data 1(4), SIGMOD 2023 (decimal ALP with its two-level
#'   sampling; ALP_rd is not implemented).
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.05, mode = "scratch")
#' x <- matrix(round(runif(20000, 1, 500), 2), 10000, 2) # prices
#' x[3, 1] <- NA
#' A <- fmalloc_alp(x, rt)
#' A
#' identical(as.matrix(A), x)
#' fmalloc_alp_info(A)$bits_per_value
#' all.equal(A %*% c(1, -1), x %*% c(1, -1))
#' cleanup_fmalloc(rt)
#' @export
fmalloc_alp <- function(x, runtime = fmalloc_default_runtime(), dimnames = base::dimnames(x)) {
  if (!is.matrix(x) || !(is.numeric(x) || is.logical(x))) {
    fm_abort("earg", "x must be a numeric matrix, not ", fm_describe(x))
  }
  storage.mode(x) <- "double"
  dimnames <- .check_dimnames(dimnames, dim(x))
  enc <- .Call(C_fmr_alp_encode, x)
  storage <- create_fmalloc_vector("raw", enc[[2]], runtime)
  .Call(C_fmr_alp_store, enc[[1]], storage)
  .new_codec_matrix(storage, "alp", nrow(x), ncol(x), 0, enc[[2]], dimnames = dimnames)
}

#' Size and make-up of an ALP matrix
#'
#' @param x an `fmalloc_codec_matrix` of codec `"alp"` (from [fmalloc_alp()]);
#'   a column selection of it describes the whole stored matrix.
#' @return A list: `bytes` (compressed size, headers included),
#'   `bits_per_value` (8 * bytes / stored values), `vector_size` (rows per
#'   vector), `vectors` (all columns), `raw_vectors` (vectors stored as raw
#'   doubles) and `exceptions` (values stored whole).
#' @section Errors: `fm_error_earg` when `x` is not an ALP matrix;
#'   `fm_error_eformat` naming the byte when its stored bytes are damaged;
#'   `fm_error_eclosed` after its runtime was closed.
#' @section Source: A. Afroozeh, L. X. Kuffo and P. Boncz (2023), "ALP:
#'   Adaptive Lossless floating-Point Compression", SIGMOD 2023; see
#'   [fmalloc_alp()].
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' A <- fmalloc_alp(matrix(c(0.5, 1.25, NA, -0), 2, 2), rt)
#' fmalloc_alp_info(A)
#' cleanup_fmalloc(rt)
#' @export
fmalloc_alp_info <- function(x) {
  if (!methods::is(x, "fmalloc_codec_matrix") || .codec_name(x) != "alp") {
    fm_abort("earg", "x must be an alp codec matrix (from fmalloc_alp()), not ", fm_describe(x))
  }
  .Call(C_fmr_alp_info, .view(x))
}

# Turn the "alp" product backend off (FALSE) or on again (TRUE), so that tests
# can compare it with the reference path.
.alp_backend <- function(on) invisible(.Call(C_fmr_alp_backend, isTRUE(on)))
