# Interop with bigstatsr's file-backed matrices (FBM, FBM.code256) and
# bigsnpr's bigSNP objects, in both directions, streamed in column blocks.

# Stop with fm_error_eunsupported naming a Suggests package that is absent.
.need_pkg <- function(pkg, what) {
  if (!requireNamespace(pkg, quietly = TRUE))
    fm_abort("eunsupported", what, " needs the package '", pkg, "', which is not installed ",
             "(install.packages(\"", pkg, "\"))", call = if (sys.nframe() > 1L) sys.call(-1L) else NULL)
}

# Columns per block: the panel budget's worth of doubles, at least one column.
.fbm_block_cols <- function(block_cols, n, m) {
  if (is.null(block_cols)) {
    block_cols <- floor(fmalloc_panel_budget() / (8 * max(1, n)))
  } else if (!is.numeric(block_cols) || length(block_cols) != 1L || is.na(block_cols) || block_cols < 1) {
    fm_abort("earg", "block_cols must be NULL or one whole number >= 1, not ", fm_describe(block_cols),
             call = if (sys.nframe() > 1L) sys.call(-1L) else NULL)
  }
  as.integer(max(1, min(floor(block_cols), m, .Machine$integer.max)))
}

.fbm_blocks <- function(m, b) {
  if (m == 0) return(list())
  starts <- seq(1, m, by = b)
  lapply(starts, function(s) s:min(m, s + b - 1))
}

# bigsnpr's code of a hardcall FBM.code256: bytes 0, 1, 2 are allele counts,
# byte 3 is missing (bigsnpr::CODE_012 without needing bigsnpr).
.code_012 <- function() c(0, 1, 2, rep(NA_real_, 253))

#' Convert between Rfmalloc matrices and bigstatsr/bigsnpr file-backed matrices
#'
#' `fmalloc_as_FBM()` writes an Rfmalloc matrix into a new
#' [bigstatsr::FBM()] (doubles) or [bigstatsr::FBM.code256()] (hardcalls);
#' `fmalloc_from_FBM()` reads an FBM, an FBM.code256 or a bigsnpr `bigSNP`
#' into an Rfmalloc runtime; `fmalloc_as_bigSNP()` makes a bigsnpr `bigSNP`
#' (genotypes, `$fam`, `$map`) from a genotype codec matrix and saves its
#' `.rds`, as [bigsnpr::snp_readBed()] does, so [bigsnpr::snp_attach()]
#' reopens it.
#'
#' **Directions and shapes.** Every conversion keeps the shape (rows are
#' samples, columns variants for genotypes) and the values exactly, except
#' the one lossy case named below:
#'
#' | from | to | values |
#' | --- | --- | --- |
#' | mapped or ordinary double matrix (e.g. [create_fmalloc_matrix()] `"double"`) | `FBM` of type `"double"` | bit for bit, `NA`/`NaN` kept |
#' | hardcall codec matrix (codec `"bed2"`: [fmalloc_bed_open()], [fmalloc_bed()], `Rpgen::rpgen_read()` hardcall), no transform | `FBM.code256` with `code = bigsnpr::CODE_012` | 0, 1, 2 stored as bytes 0, 1, 2; `NA` as byte 3 |
#' | any codec matrix, `type = "double"` | `FBM` of type `"double"` | the decoded doubles (with the matrix's transform, e.g. [fmalloc_standardize()]) |
#' | `FBM` (any numeric type) | mapped double matrix in `runtime` | converted to double, `NA` kept |
#' | `FBM.code256` whose code takes only 0, 1, 2, `NA` (`CODE_012`, `CODE_IMPUTE_PRED`) | hardcall codec matrix (`"bed2"`) in `runtime` | exact |
#' | `FBM.code256` with other values (`CODE_DOSAGE`) | dosage codec matrix (`"dos8"`, [fmalloc_dosage()]) | quantized to multiples of 1/127 (error at most 1/254); values must lie in \[0, 2\] |
#' | `bigSNP` (list with `$genotypes`, `$fam`, `$map`) or the path of its `.rds` | as its `$genotypes`, with metadata | as above |
#'
#' **Copy or not.** Every conversion copies, in blocks of `block_cols`
#' columns (by default as many as fit the panel budget,
#' [fmalloc_panel_budget()], as doubles), so memory stays bounded: the whole
#' decoded matrix is never held. Zero-copy is not possible in either
#' direction with bigstatsr 1.6: an FBM maps its whole backing file
#' `<backingfile>.bk` from byte 0 (`getXPtrFBM(path, n, m, type)` takes no
#' offset) and refuses a file whose size is not exactly
#' `nrow * ncol * type size` bytes (its `check_dimensions()`), whereas an
#' Rfmalloc runtime is one file holding a header, a directory and many
#' objects at offsets. A 2-bit `.bed` code and FBM.code256's one byte per
#' genotype are different layouts, so genotypes are re-encoded in any case.
#' The copy in the FBM is a separate file: later writes to either side are
#' not seen by the other.
#'
#' **Names and metadata.** An FBM has no dimnames and no metadata, so
#' `fmalloc_as_FBM()` drops them and `fmalloc_from_FBM()` of a bare FBM
#' gives a matrix without names (give `dimnames`). A `bigSNP` carries them:
#' `fmalloc_as_bigSNP()` builds `$fam` (`family.ID`, `sample.ID`,
#' `paternal.ID`, `maternal.ID`, `sex`, `affection`) from
#' [fmalloc_samples()] and `$map` (`chromosome`, `marker.ID`,
#' `genetic.dist`, `physical.pos`, `allele1`, `allele2`) from
#' [fmalloc_variants()] (`allele1` = `alt`, the counted allele, as
#' `snp_readBed()` reads the `.bim`'s A1; `allele2` = `ref`); missing
#' metadata is filled as `snp_readBed()` would never leave it: IDs from the
#' dimnames or `"sample<i>"`/`"variant<j>"`, unknown numbers 0, parents
#' `"0"`, `affection` -9. `fmalloc_from_FBM()` of a `bigSNP` maps them back
#' (rows named by `sample.ID`, columns by `marker.ID`).
#'
#' @param x for `fmalloc_as_FBM()`: a double matrix (mapped or not) or an
#'   [fmalloc_codec_matrix][fmalloc_codec_matrix-class]; for
#'   `fmalloc_as_bigSNP()`: a hardcall codec matrix; for
#'   `fmalloc_from_FBM()`: an `FBM`, an `FBM.code256`, a `bigSNP`, or the
#'   path of a `bigSNP`'s `.rds` (as written by `snp_readBed()`).
#' @param backingfile path of the new backing file without its `.bk`
#'   extension, as in [bigstatsr::FBM()]; default a temporary file in
#'   `getOption("FBM.dir")`.
#' @param type `"auto"` (a double matrix gives an `FBM`, a hardcall codec
#'   matrix an `FBM.code256`) or `"double"` (every matrix gives a double
#'   `FBM` of its decoded values).
#' @param block_cols columns per block, `NULL` for the panel budget's worth.
#' @param runtime an fmalloc runtime from [open_fmalloc()];
#'   the session's default runtime, [fmalloc_default_runtime()], when not given.
#' @param codec for an `FBM.code256`: `"auto"` (`"bed2"` when every non-`NA`
#'   entry of its code is 0, 1 or 2, else `"dos8"`), `"bed2"` or `"dos8"`.
#' @param dimnames `NULL` or a list of row and column names for the result
#'   (default: from a `bigSNP`'s `$fam`/`$map`, none for a bare FBM).
#' @return `fmalloc_as_FBM()`: an `FBM` or `FBM.code256`;
#'   `fmalloc_as_bigSNP()`: a list of class `bigSNP` (`genotypes`, `fam`,
#'   `map`), also saved to `<backingfile>.rds`; `fmalloc_from_FBM()`: a
#'   mapped double matrix (from an `FBM`) or an
#'   [fmalloc_codec_matrix][fmalloc_codec_matrix-class] (from an
#'   `FBM.code256` or `bigSNP`).
#' @section Errors: `fm_error_eunsupported` naming `bigstatsr` (or
#'   `bigsnpr`, for an `.rds` path) when it is not installed, and for a codec
#'   matrix other than an untransformed `"bed2"` with `type = "auto"` (use
#'   `type = "double"`); `fm_error_earg` for another kind of `x`, for a
#'   decoded value of an `FBM.code256` that is not 0, 1, 2 or `NA` with
#'   `codec = "bed2"` (or outside \[0, 2\] with `"dos8"`), naming the first
#'   (row, column), and for a bad `block_cols`; `fm_error_emismatch` for
#'   `dimnames` of the wrong lengths; `fm_error_enospc` when the runtime is
#'   full; bigstatsr's own errors when the backing file cannot be created.
#' @section Source: bigstatsr 1.6 `FBM()`, `FBM.code256()` and its
#'   `check_dimensions()` (Prive et al. 2018, Bioinformatics 34:2781);
#'   bigsnpr `snp_readBed()`, `CODE_012`, `CODE_DOSAGE`, the `bigSNP` class
#'   (`?bigsnpr::bigSNP-class`); PLINK 1.9 `.bed`.
#' @examples
#' if (requireNamespace("bigstatsr", quietly = TRUE)) {
#'   rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#'   X <- create_fmalloc_matrix("double", 4, 3, rt)
#'   X[] <- c(1:11, NA)
#'   FX <- fmalloc_as_FBM(X)                   # a copy, in its own .bk file
#'   identical(FX[], X[, ])
#'   Y <- fmalloc_from_FBM(FX, rt)             # and back, mapped in rt
#'   G <- fmalloc_bed(matrix(c(0L, 1L, 2L, NA, 2L, 0L), 3, 2), rt)
#'   FG <- fmalloc_as_FBM(G)                   # FBM.code256, CODE_012
#'   FG[]
#'   identical(as.matrix(fmalloc_from_FBM(FG, rt)), as.matrix(G))
#'   cleanup_fmalloc(rt)
#' }
#' @name fmalloc_fbm
NULL

#' @rdname fmalloc_fbm
#' @export
fmalloc_as_FBM <- function(x, backingfile = tempfile(tmpdir = getOption("FBM.dir")),
                           type = c("auto", "double"), block_cols = NULL) {
  .need_pkg("bigstatsr", "fmalloc_as_FBM()")
  type <- fm_arg_choice(type, c("auto", "double"))
  code256 <- FALSE
  if (methods::is(x, "fmalloc_codec_matrix")) {
    code256 <- type == "auto"
    if (code256 && (!identical(.codec_name(x), "bed2") || !is.null(x@transform)))
      fm_abort("eunsupported", "only an untransformed hardcall (\"bed2\") codec matrix converts to ",
               "an FBM.code256; this one has codec '", .codec_name(x), "'",
               if (!is.null(x@transform)) " and a transform", "; use type = \"double\" for an FBM of its values")
  } else if (!is.matrix(x) || !is.double(x)) {
    fm_abort("earg", "x must be a double matrix (e.g. create_fmalloc_matrix(\"double\", ...)) or an ",
             "fmalloc_codec_matrix, not ", fm_describe(x))
  }
  n <- nrow(x); m <- ncol(x)
  blocks <- .fbm_blocks(m, .fbm_block_cols(block_cols, n, m)) # checked before a file is made
  out <- if (code256) {
    bigstatsr::FBM.code256(n, m, code = .code_012(), backingfile = backingfile)
  } else {
    bigstatsr::FBM(n, m, type = "double", backingfile = backingfile)
  }
  for (j in blocks) {
    v <- x[, j, drop = FALSE]
    dimnames(v) <- NULL
    if (code256) v[is.na(v)] <- 3 # bigsnpr's missing code
    out[, j] <- v
  }
  out
}

#' @rdname fmalloc_fbm
#' @export
fmalloc_as_bigSNP <- function(x, backingfile = tempfile(tmpdir = getOption("FBM.dir")),
                              block_cols = NULL) {
  .need_pkg("bigstatsr", "fmalloc_as_bigSNP()")
  if (!methods::is(x, "fmalloc_codec_matrix"))
    fm_abort("earg", "x must be a hardcall fmalloc_codec_matrix, not ", fm_describe(x))
  geno <- fmalloc_as_FBM(x, backingfile, type = "auto", block_cols = block_cols)
  n <- nrow(x); m <- ncol(x)
  dn <- dimnames(x)
  s <- fmalloc_samples(x)
  v <- fmalloc_variants(x)
  col <- function(df, name, default) if (!is.null(df) && !is.null(df[[name]])) df[[name]] else default
  iid <- col(s, "iid", if (!is.null(dn[[1]])) dn[[1]] else paste0("sample", seq_len(n)))
  fam <- data.frame(
    family.ID = as.character(col(s, "fid", iid)), sample.ID = as.character(iid),
    paternal.ID = as.character(col(s, "father", rep("0", n))),
    maternal.ID = as.character(col(s, "mother", rep("0", n))),
    sex = as.integer(col(s, "sex", rep(0L, n))),
    affection = suppressWarnings(as.numeric(col(s, "phenotype", rep(-9, n)))),
    stringsAsFactors = FALSE)
  id <- col(v, "id", if (!is.null(dn[[2]])) dn[[2]] else paste0("variant", seq_len(m)))
  map <- data.frame(
    chromosome = as.character(col(v, "chr", rep("0", m))), marker.ID = as.character(id),
    genetic.dist = as.numeric(col(v, "cm", rep(0, m))), physical.pos = as.integer(col(v, "pos", rep(0, m))),
    allele1 = as.character(col(v, "alt", rep("0", m))), allele2 = as.character(col(v, "ref", rep("0", m))),
    stringsAsFactors = FALSE)
  snp <- structure(list(genotypes = geno, fam = fam, map = map), class = "bigSNP")
  saveRDS(snp, geno$rds)
  snp
}

#' @rdname fmalloc_fbm
#' @export
fmalloc_from_FBM <- function(x, runtime = fmalloc_default_runtime(), codec = c("auto", "bed2", "dos8"),
                             block_cols = NULL, dimnames = NULL) {
  fm_check_runtime(runtime)
  codec <- fm_arg_choice(codec, c("auto", "bed2", "dos8"))
  if (is.character(x) && length(x) == 1L && !is.na(x)) {
    .need_pkg("bigsnpr", "fmalloc_from_FBM() of a bigSNP .rds")
    x <- bigsnpr::snp_attach(x)
  }
  .need_pkg("bigstatsr", "fmalloc_from_FBM()")
  variants <- samples <- NULL
  if (inherits(x, "bigSNP")) {
    fam <- x$fam; map <- x$map
    x <- x$genotypes
    if (!is.null(fam)) {
      samples <- data.frame(iid = as.character(fam$sample.ID), fid = as.character(fam$family.ID),
                            father = as.character(fam$paternal.ID), mother = as.character(fam$maternal.ID),
                            sex = as.numeric(fam$sex), phenotype = as.character(fam$affection),
                            stringsAsFactors = FALSE)
    }
    if (!is.null(map)) {
      variants <- data.frame(chr = as.character(map$chromosome), pos = as.numeric(map$physical.pos),
                             id = as.character(map$marker.ID), ref = as.character(map$allele2),
                             alt = as.character(map$allele1), cm = as.numeric(map$genetic.dist),
                             stringsAsFactors = FALSE)
    }
    if (is.null(dimnames)) dimnames <- list(samples$iid, variants$id)
  }
  if (!methods::is(x, "FBM"))
    fm_abort("earg", "x must be a bigstatsr FBM or FBM.code256, a bigsnpr bigSNP or the path of its .rds, not ",
             fm_describe(x))
  n <- nrow(x); m <- ncol(x)
  dimnames <- .check_dimnames(dimnames, c(n, m))
  if (!is.null(samples) && nrow(samples) != n) samples <- NULL
  if (!is.null(variants) && nrow(variants) != m) variants <- NULL
  b <- .fbm_block_cols(block_cols, n, m)
  blocks <- .fbm_blocks(m, b)
  if (!methods::is(x, "FBM.code256")) {
    out <- create_fmalloc_matrix("double", n, m, runtime, dimnames = dimnames)
    for (j in blocks) fmalloc_write_cols(out, j, x[, j, drop = FALSE])
    return(out)
  }
  if (codec == "auto") codec <- if (all(x$code256 %in% c(0, 1, 2, NA))) "bed2" else "dos8"
  col_bytes <- if (codec == "bed2") ceiling(n / 4) else n
  storage <- create_fmalloc_matrix("raw", max(1, col_bytes), max(1, m), runtime)
  for (j in blocks) {
    v <- x[, j, drop = FALSE]
    bad <- if (codec == "bed2") !is.na(v) & !(v %in% 0:2) else !is.na(v) & (v < 0 | v > 2)
    if (any(bad)) {
      at <- arrayInd(which(bad)[1], dim(v))
      fm_abort("earg", sprintf("x[%d, %d] decodes to %s, which is not %s (codec \"%s\")", at[1],
                               j[at[2]], format(v[at]), if (codec == "bed2") "0, 1, 2 or NA" else "in [0, 2] or NA",
                               codec))
    }
    bytes <- raw(col_bytes * length(j))
    if (codec == "bed2") {
      storage.mode(v) <- "integer"
      .Call(C_fmr_bed2_encode, v, bytes)
    } else {
      .Call(C_fmr_dos8_encode, v, bytes)
    }
    if (col_bytes > 0) fmalloc_write_cols(storage, j, bytes)
  }
  .new_codec_matrix(storage, codec, n, m, 0, col_bytes, dimnames = dimnames,
                    variants = variants, samples = samples)
}
