# Streamed column statistics, allele frequencies and standardization.

# Column means, variances (NA with fewer than two observed values, as var())
# and observed counts of a numeric matrix or codec matrix.
.colvar <- function(x) {
  res <- if (fm_parallel_on(x)) .colvar_blocks(x) else .Call(C_fmr_colvar, .view_of(x))
  names(res) <- c("mean", "var", "n_obs")
  if (methods::is(x, "fmalloc_codec_matrix") && !is.null(x@transform)) res <- .transformed(res, x@transform, nrow(x))
  res$var[res$n_obs < 2] <- NA_real_
  nm <- colnames(x)
  if (!is.null(nm)) res <- lapply(res, function(v) stats::setNames(v, nm))
  res
}

# With option fmalloc.parallel = "mirai", a matrix in a file goes to the
# daemons in blocks of columns; each column's statistics are its own, so
# the blocks' rows are those of one pass.
.colvar_blocks <- function(x) {
  parts <- list()
  fm_parallel_apply(x, .colvar_block, .label = "column statistics", .consume = function(j, cols, r) parts[[j]] <<- r)
  lapply(1:3, function(i) unlist(lapply(parts, `[[`, i), use.names = FALSE))
}
.colvar_block <- function(x) .Call(C_fmr_colvar, .view_of(x))

# Column statistics of a standardized view from those of its stored values:
# observed values map to (v - center) * scale, missing ones to fill (when
# given), and the mixture's mean and variance follow exactly.
.transformed <- function(s, tr, n) {
  p <- length(s$mean)
  ctr <- if (is.null(tr$center)) rep(0, p) else tr$center
  mult <- if (is.null(tr$scale)) rep(1, p) else tr$scale
  m_obs <- (s$mean - ctr) * mult
  v_obs <- s$var * mult^2
  if (is.null(tr$fill)) return(list(mean = m_obs, var = v_obs, n_obs = s$n_obs))
  n_miss <- n - s$n_obs
  mean <- (m_obs * s$n_obs + tr$fill * n_miss) / n
  ss <- ifelse(s$n_obs > 1, v_obs * (s$n_obs - 1), 0) +
    ifelse(s$n_obs > 0, s$n_obs * (m_obs - mean)^2, 0) + n_miss * (tr$fill - mean)^2
  list(mean = mean, var = if (n > 1) ss / (n - 1) else rep(NA_real_, p), n_obs = rep(n, p))
}

#' Streamed column means and variances
#'
#' Column means and variances of a dense matrix (plain R or fmalloc-mapped)
#' or of a codec matrix (`"bed2"` hardcalls, `"dos8"` dosages, or an external
#' codec such as a GGUF tensor view from Rgguf), computed one bounded block
#' of columns at a time; nothing is decoded whole. External codecs are decoded
#' in panels of at most [fmalloc_panel_budget()] bytes (a column taller than
#' one panel is decoded twice, once per pass), and give exactly what dense
#' storage of the decoded values gives.
#'
#' Missing values (`NA`, `NaN`, missing genotype calls) are excluded when
#' `na.rm = TRUE` (the default): a column holding `NA, 1, 2` has mean 1.5
#' and variance 0.5. With `na.rm = FALSE` a column with any missing value
#' gives `NA`. Variances use the denominator `n_obs - 1`, as [var()] (so a
#' column with fewer than two observed values has variance `NA`), and
#' are computed by the two-pass algorithm (dense storage and external
#' codecs) or exactly from genotype counts (`"bed2"`, `"dos8"`), so they do
#' not depend on block size. A column holding `Inf` has mean `Inf` (as
#' [base::colMeans()]) and variance `NaN` (as [var()]).
#' On a view from [fmalloc_standardize()] they are the statistics of the
#' standardized values (missing values imputed by the view count as observed).
#'
#' @param x a numeric (or logical) matrix, an fmalloc matrix, or an
#'   `fmalloc_codec_matrix`; as for [fmalloc_pca()], a data frame or a
#'   vector is refused (convert it with `as.matrix()`), and so is a
#'   transposed view `t(X)` (its column means are `rowMeans(X)`, streamed).
#' @param na.rm drop missing values: `TRUE` (the default) or `FALSE`.
#' @return A double vector of length `ncol(x)`, named by `colnames(x)`.
#' @section Errors: `fm_error_earg` for an object that is not a matrix of a
#'   supported kind, or `na.rm` not `TRUE` or `FALSE`; `fm_error_eclosed` when its runtime was closed or its
#'   external codec released (the package that made it was unloaded);
#'   `fm_error_eformat` when a mapped file shrank; an external codec's own
#'   decode errors.
#' @section Source: Chan, Golub and LeVeque (1983), "Algorithms for computing
#'   the sample variance", The American Statistician 37(3).
#' @examples
#' x <- matrix(c(NA, 1, 2, 4, 5, 6), 3, 2)
#' fmalloc_colMeans(x)                # 1.5 5
#' fmalloc_colVars(x)                 # 0.5 1
#' fmalloc_colVars(x, na.rm = FALSE)  # NA 1
#' @export
fmalloc_colMeans <- function(x, na.rm = TRUE) {
  .check_matrix_arg(x, sys.call())
  .check_na_rm(na.rm, sys.call())
  s <- .colvar(x)
  out <- s$mean
  if (!na.rm) out[s$n_obs < nrow(x)] <- NA_real_
  out
}

#' @rdname fmalloc_colMeans
#' @export
fmalloc_colVars <- function(x, na.rm = TRUE) {
  .check_matrix_arg(x, sys.call())
  .check_na_rm(na.rm, sys.call())
  s <- .colvar(x)
  out <- s$var
  if (!na.rm) out[s$n_obs < nrow(x)] <- NA_real_
  out
}

# The matrices the column statistics and PCA take: numeric or logical R
# matrices (plain or fmalloc) and codec matrices.
.check_matrix_arg <- function(x, call) {
  if (methods::is(x, "fmalloc_codec_matrix") || (is.matrix(x) && (is.numeric(x) || is.logical(x)))) return()
  hint <- if (methods::is(x, "fmalloc_transposed")) {
    "; for a transposed view t(X) use colMeans(t(X)) (streamed) or decode with as.matrix()"
  } else if (is.data.frame(x) || is.atomic(x)) "; convert it with as.matrix()" else ""
  fm_abort("earg", "x must be a numeric matrix or an fmalloc codec matrix, not ", fm_describe(x), hint, call = call)
}

#' Allele frequencies of a hardcall matrix
#'
#' Per-variant genotype counts and the frequency of the counted allele (ALT;
#' A1 of a PLINK 1 `.bim`, see [fmalloc_variants()]), computed exactly from
#' the 2-bit codes. Every call is treated as diploid, so on chrX male
#' hemizygous calls (stored as homozygous in a `.bed`) count twice;
#' `plink2 --freq` counts them once.
#'
#' @param x a hardcall (`"bed2"`) `fmalloc_codec_matrix`: from
#'   [fmalloc_bed()], [fmalloc_bed_open()] or `Rpgen::rpgen_read()` (its
#'   default `destination = "hardcall"`), or a column selection of one.
#' @return A data frame, one row per variant: the variant columns of the
#'   schema that the matrix carries (`chr`, `pos`, `id`, `ref`, `alt`; `id`
#'   from the column names, or 1, 2, ... when it has none), then
#'   `n_hom_ref`, `n_het`, `n_hom_alt`, `n_missing` (sample counts),
#'   `alt_freq` (= (het + 2 hom ALT) / (2 observed); `NaN` when no call is
#'   observed), `maf` (= min(alt_freq, 1 - alt_freq)) and `missing_rate`
#'   (missing / samples).
#' @section Errors: `fm_error_earg` when `x` is not a hardcall matrix.
#' @section Source: allele counting as `plink2 --freq` (ALT_FREQS, OBS_CT =
#'   2 x observed samples).
#' @examples
#' rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#' X <- fmalloc_bed(matrix(c(0, 1, 2, NA, 2, 2), 3, 2), rt)
#' fmalloc_allele_freq(X)
#' cleanup_fmalloc(rt)
#' @export
fmalloc_allele_freq <- function(x) {
  if (!methods::is(x, "fmalloc_codec_matrix") || .codec_name(x) != "bed2") {
    fm_abort("earg", "x must be a hardcall (bed2) matrix from fmalloc_bed(), fmalloc_bed_open() ",
             "or Rpgen::rpgen_read()")
  }
  counts <- .Call(C_fmr_bed2_counts, .view(x))
  obs <- counts[1, ] + counts[2, ] + counts[3, ]
  alt <- (counts[2, ] + 2 * counts[3, ]) / (2 * obs)
  v <- fmalloc_variants(x)
  meta <- if (is.null(v)) data.frame(row.names = seq_len(ncol(x))) else v[intersect(.variant_columns, names(v))]
  if (is.null(meta$id)) meta$id <- if (is.null(colnames(x))) seq_len(ncol(x)) else colnames(x)
  meta <- meta[intersect(.variant_columns, names(meta))]
  out <- cbind(meta, data.frame(
    n_hom_ref = counts[1, ], n_het = counts[2, ], n_hom_alt = counts[3, ], n_missing = counts[4, ],
    alt_freq = alt, maf = pmin(alt, 1 - alt), missing_rate = counts[4, ] / nrow(x)
  ))
  rownames(out) <- NULL
  out
}

.is_flag <- function(v) is.logical(v) && length(v) == 1 && !is.na(v)

# center/scale/fill vectors for a matrix, from its column statistics:
# list(keep, mean, var, n_obs, center, div, transform = list(center, scale,
# fill), n_missing), all but keep and transform over every column of x. An identity
# part is NULL (no centre: center NULL; no scaling: div and scale NULL), as
# the core reads it. With transform = FALSE the multipliers and fills are not
# made (fmalloc_pca passes the divisors and its own fill to the core).
# Memory (2024-05 design note): at p = 2e6 a length-p double is 16 MB, so
# the checks look at min/range/anyNA of the statistics and locate the
# offending column only when there is one, and nothing is subset when every
# column is kept.
.standardization <- function(x, center, scale, impute, drop_constant = FALSE, caller = "fmalloc",
                             transform = TRUE) {
  if (!.is_flag(center) && !(is.numeric(center) && all(is.finite(center)))) {
    fm_abort("earg", sprintf("%s: center must be TRUE, FALSE or a finite numeric vector", caller))
  }
  scale_ok <- .is_flag(scale) || identical(scale, "sd") || identical(scale, "binomial") ||
    (is.numeric(scale) && all(is.finite(scale)) && all(scale > 0))
  if (!scale_ok) {
    fm_abort("earg", sprintf("%s: scale must be TRUE, FALSE, \"sd\", \"binomial\" or positive finite divisors", caller))
  }
  s <- .colvar(x)
  mu <- s$mean
  nobs <- s$n_obs
  p <- length(mu)
  n <- nrow(x)
  nm <- colnames(x)
  label <- function(j) if (is.null(nm)) sprintf("%d", j) else sprintf("'%s' (%d)", nm[j], j)
  if (p > 0 && !isFALSE(center) && min(nobs) == 0) {
    fm_abort("edegenerate", sprintf("%s: column %s has no observed values", caller,
                                    label(which(nobs == 0)[1])))
  }
  if (p > 0 && (anyNA(mu) || !all(is.finite(range(mu))))) {
    inf <- which(!is.finite(mu) & nobs > 0)
    if (length(inf)) fm_abort("earg", sprintf("%s: column %s holds infinite values", caller, label(inf[1])))
  }
  ctr <- if (isTRUE(center)) mu else if (isFALSE(center)) NULL else as.numeric(center)
  if (!is.null(ctr) && length(ctr) != p) {
    fm_abort("emismatch", sprintf("%s: center has length %d but x has %d columns", caller, length(ctr), p))
  }
  if (isFALSE(scale)) {
    div <- NULL
  } else if (isTRUE(scale) || identical(scale, "sd")) {
    div <- sqrt(s$var)
  } else if (identical(scale, "binomial")) {
    r <- if (p > 0) suppressWarnings(range(mu, na.rm = TRUE)) else c(0, 0)
    if (r[1] < 0 || r[2] > 2) {
      out <- which(mu < 0 | mu > 2)
      fm_abort("earg", sprintf("%s: scale = \"binomial\" needs allele counts in [0, 2], but column %s has mean %g",
                               caller, label(out[1]), mu[out[1]]))
    }
    div <- sqrt(mu * (1 - mu / 2)) # sqrt(2 af (1 - af)), af = mu / 2 (2 af = mu exactly)
  } else {
    div <- as.numeric(scale)
    if (length(div) != p) fm_abort("emismatch", sprintf("%s: scale has length %d but x has %d columns", caller, length(div), p))
  }
  keep <- seq_len(p)
  if (!is.null(div) && p > 0 && (anyNA(div) || min(div) == 0 || max(div) == Inf)) {
    bad <- which(!is.finite(div) | div == 0)
    if (!drop_constant) {
      fm_abort("edegenerate", sprintf(
        "%s: column %s has zero or undefined variance and cannot be scaled%s; drop it or use drop_constant = TRUE",
        caller, label(bad[1]), if (length(bad) > 1) sprintf(" (and %d more)", length(bad) - 1) else ""))
    }
    message(sprintf("%s: dropped %d constant column(s): %s", caller, length(bad),
                    paste(vapply(utils::head(bad, 5), label, ""), collapse = ", ")))
    keep <- setdiff(keep, bad)
  }
  all_kept <- length(keep) == p
  n_missing <- if (all_kept) as.numeric(n) * p - sum(nobs) else sum(n - nobs[keep])
  if (impute && n_missing > 0) {
    n_cols <- if (all_kept) sum(nobs < n) else sum(nobs[keep] < n)
    message(sprintf("%s: mean-imputed %s missing value(s) in %d column(s)", caller,
                    format(n_missing, big.mark = ","), n_cols))
  }
  tr <- NULL
  if (transform) {
    mult <- if (is.null(div)) NULL else 1 / div
    fill <- if (!impute) {
      NULL
    } else if (isTRUE(center)) {
      rep(0, p) # (mu - mu) * mult
    } else {
      f <- if (is.null(ctr)) mu else mu - ctr
      if (is.null(mult)) f else f * mult
    }
    sub <- function(v) if (is.null(v) || all_kept) v else v[keep]
    tr <- list(center = sub(ctr), scale = sub(mult), fill = sub(fill))
  }
  list(keep = keep, mean = mu, var = s$var, n_obs = nobs, center = ctr, div = div, transform = tr,
       n_missing = n_missing)
}

#' Standardize a codec matrix without materializing it
#'
#' Returns a view of `x` whose decoding applies, per column j,
#' `(value - center[j]) / scale[j]`, with missing values mean-imputed (they
#' become 0 after centring at the mean) when `impute = TRUE`. The transform is
#' fused into the decode lookup table, so products with the view cost the same
#' as with `x`.
#'
#' @param x an `fmalloc_codec_matrix`.
#' @param center `TRUE` (column means of observed values), `FALSE`, or a
#'   numeric vector of length `ncol(x)`.
#' @param scale `FALSE`, `TRUE` or `"sd"` (sample sd, as [base::scale()]),
#'   `"binomial"` (sqrt(2p(1-p)) with p = mean / 2, the genotype scaling of
#'   plink2 and GCTA), or a numeric vector of divisors.
#' @param impute replace missing values by the column mean (default `TRUE`);
#'   otherwise they stay `NA`.
#' @param drop_constant drop columns whose scale is zero or undefined (with a
#'   message) instead of raising an error.
#' @return An `fmalloc_codec_matrix` view (fewer columns when constant
#'   columns were dropped).
#' @section Errors: `fm_error_edegenerate` naming the first column whose
#'   scale is zero or undefined (a constant column).
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' G <- fmalloc_bed(matrix(c(0L, 1L, 2L, NA, 1L, 0L, 2L, 2L), 4, 2), rt)
#' S <- fmalloc_standardize(G, scale = "binomial")
#' as.matrix(S) # the missing call became 0
#' S %*% c(1, -1)
#' cleanup_fmalloc(rt)
#' @export
fmalloc_standardize <- function(x, center = TRUE, scale = FALSE, impute = TRUE,
                                drop_constant = FALSE) {
  if (!methods::is(x, "fmalloc_codec_matrix")) fm_abort("earg", "x must be an fmalloc codec matrix")
  if (!is.null(x@transform)) fm_abort("earg", "x is already standardized")
  st <- .standardization(x, center, scale, impute, drop_constant, caller = "fmalloc_standardize")
  if (length(st$keep) < ncol(x)) x <- fmalloc_select(x, st$keep)
  x@transform <- st$transform
  .remade(x)
}
