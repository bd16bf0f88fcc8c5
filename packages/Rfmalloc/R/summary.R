# summary() of a codec matrix: one streamed pass gives each column's
# observed count, mean and variance (for hardcalls, the genotype counts,
# from which the rest follows exactly); the columns' statistics are then
# summarised by their quantiles, as summary() does for a numeric vector.

#' Summary of a codec matrix
#'
#' `summary(X)` of an [fmalloc_codec_matrix][fmalloc_codec_matrix-class]
#' reads `X` once, one bounded block of columns at a time (nothing is
#' decoded whole), and describes its columns (variants, for a genotype
#' matrix): how much is missing and how the column means and standard
#' deviations are spread. For a hardcall matrix (`"bed2"`, no transform) the
#' pass counts genotypes exactly ([fmalloc_allele_freq()]'s counts), and the
#' summary adds the genotype totals, the ALT allele frequency and MAF spread
#' and the number of monomorphic variants.
#'
#' Missing values are excluded from each column's statistics; a column with
#' no observed value (or, for the standard deviation, fewer than two) has no
#' statistic and is left out of the quantiles and counted in `n_empty`. On a
#' view from [fmalloc_standardize()] the statistics are those of the
#' standardized values, as [fmalloc_colVars()] gives them.
#'
#' @param object an `fmalloc_codec_matrix` (N rows x M columns).
#' @param ... must be empty.
#' @param x a `summary_fmalloc_codec_matrix` (for `print`).
#' @param digits significant digits printed.
#' @return `summary()`: a list of class `summary_fmalloc_codec_matrix`:
#'   `dim` (N, M), `codec` (its name), `storage_bytes` (as
#'   [fmalloc_storage_bytes()]: a column selection's own share), `dense_bytes` (8 N M, the size as a double
#'   matrix), `n_missing` (missing entries as the matrix reads them),
#'   `missing_rate` (`n_missing` / (N M); `NaN` for an empty matrix, whose
#'   print shows no percentage), `n_empty` (columns without an
#'   observed value), `columns` (a matrix, one row per column statistic:
#'   `mean`, `sd` (denominator n - 1), `missing_rate`, and for hardcalls
#'   `alt_freq` and `maf`; the columns `Min.`, `1st Qu.`, `Median`, `Mean`,
#'   `3rd Qu.`, `Max.` over the matrix's columns, as [base::summary()] of a
#'   numeric vector), and for hardcalls `genotype_counts` (totals named
#'   `hom_ref`, `het`, `hom_alt`, `missing`) and `n_monomorphic` (variants
#'   with calls, all of one genotype). `print()` returns `x` invisibly.
#' @section Errors: `fm_error_earg` for an argument in `...`; the errors of
#'   [fmalloc_colVars()] (a closed runtime, a shrunken file).
#' @section Source: the quantiles of [stats::quantile()] (type 7, as
#'   [base::summary()]); the variance as in [fmalloc_colVars()]; allele
#'   counting as `plink2 --freq`.
#' @examples
#' X <- fmalloc_bed(matrix(c(0, 1, 2, NA, 2, 2, 0, 0, 0), 3, 3))
#' s <- summary(X)
#' s$genotype_counts
#' s
#' @name summary-fmalloc_codec_matrix
NULL

#' @rdname summary-fmalloc_codec_matrix
#' @export
setMethod("summary", "fmalloc_codec_matrix", function(object, ...) {
  if (...length()) {
    dots <- names(list(...))
    fm_abort("earg", "summary() of a codec matrix takes no other arguments; got ",
             if (is.null(dots) || !all(nzchar(dots))) "an unnamed one" else paste(dots, collapse = ", "))
  }
  d <- dim(object)
  codec <- .codec_name(object)
  hardcalls <- codec == "bed2" && is.null(object@transform)
  if (hardcalls) {
    counts <- .Call(C_fmr_bed2_counts, .view(object))
    obs <- counts[1, ] + counts[2, ] + counts[3, ]
    mean <- (counts[2, ] + 2 * counts[3, ]) / obs
    ss <- counts[1, ] * mean^2 + counts[2, ] * (1 - mean)^2 + counts[3, ] * (2 - mean)^2
    stats <- list(mean = mean, sd = sqrt(ss / (obs - 1)), missing_rate = counts[4, ] / d[1],
                  alt_freq = mean / 2, maf = pmin(mean / 2, 1 - mean / 2))
  } else {
    s <- .colvar(object)
    obs <- s$n_obs
    stats <- list(mean = s$mean, sd = sqrt(s$var), missing_rate = (d[1] - obs) / d[1])
  }
  spread <- t(vapply(stats, function(v) {
    v <- unname(v[is.finite(v)])
    if (!length(v)) return(rep(NA_real_, 6))
    q <- stats::quantile(v, names = FALSE)
    c(q[1:3], mean(v), q[4:5])
  }, numeric(6)))
  colnames(spread) <- c("Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max.")
  n_missing <- sum(d[1] - obs)
  out <- list(dim = d, codec = if (codec == "ext") .Call(C_fmr_ext_info, .storage(object))$name else codec,
              storage_bytes = fmalloc_storage_bytes(object), dense_bytes = 8 * d[1] * d[2],
              n_missing = n_missing, missing_rate = if (d[1] * d[2] > 0) n_missing / (d[1] * d[2]) else NaN,
              n_empty = sum(obs == 0), columns = spread)
  if (hardcalls) {
    out$genotype_counts <- c(hom_ref = sum(counts[1, ]), het = sum(counts[2, ]),
                             hom_alt = sum(counts[3, ]), missing = sum(counts[4, ]))
    out$n_monomorphic <- sum(obs > 0 & (counts[1, ] == obs | counts[2, ] == obs | counts[3, ] == obs))
  }
  structure(out, class = "summary_fmalloc_codec_matrix")
})

#' @rdname summary-fmalloc_codec_matrix
#' @export
print.summary_fmalloc_codec_matrix <- function(x, digits = 4L, ...) {
  cat(sprintf("<fmalloc %s matrix: %s x %s, %s stored (%s as doubles)>\n", x$codec,
              format(x$dim[1], big.mark = ","), format(x$dim[2], big.mark = ","),
              fm_bytes(x$storage_bytes), fm_bytes(x$dense_bytes)))
  cat(sprintf("missing: %s entries%s%s\n", format(x$n_missing, big.mark = ","),
              if (is.nan(x$missing_rate)) "" else sprintf(" (%.2f%%)", 100 * x$missing_rate), if (x$n_empty)
                sprintf("; %s column(s) without an observed value", format(x$n_empty, big.mark = ",")) else ""))
  if (!is.null(x$genotype_counts)) {
    counts <- format(x$genotype_counts, big.mark = ",", trim = TRUE)
    cat("genotypes:", paste(names(counts), counts, collapse = ", "), "\n")
    cat(sprintf("monomorphic variants: %s\n", format(x$n_monomorphic, big.mark = ",")))
  }
  cat("per column:\n")
  print(signif(x$columns, digits))
  invisible(x)
}
