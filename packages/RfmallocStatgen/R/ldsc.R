# LD scores of a statgen_ld band (the core's fm_stats_ldscore.h, through
# src/r_ldscore.c) and LD score regression (Bulik-Sullivan et al. 2015) as
# bigsnpr::snp_ldsc() computes it: the same weights, two-step estimator and
# block jackknife, so that its values are reproduced to rounding.

#' LD scores
#'
#' The LD score of each variant of an LD matrix: the sum of its squared
#' correlations with the variants of its window, itself included
#' (Bulik-Sullivan et al. 2015), as `bigsnpr::snp_ld_scores()` defines it.
#' One pass over the stored band, in C.
#'
#' @section Definition: \eqn{l_j = \sum_k r_{jk}^2} over the entries
#'   \eqn{k} stored in column \eqn{j} of `ld` (the diagonal, 1, included;
#'   a pair outside the window, or below the `r2_min` of a thresholded
#'   band, counts 0). A variant of zero variance (whose
#'   correlations the band stores as 0) scores 1, as in bigsnpr, which
#'   skips its `NaN` correlations. `adjust = "ldsc"` sums instead the
#'   approximately unbiased \eqn{r^2 - (1 - r^2)/(n - 2)} of the LDSC
#'   software, `n` = `n_samples`, over every stored entry (the diagonal
#'   stays 1; a stored 0 counts \eqn{-1/(n - 2)}).
#' @section Errors: `fm_error_earg` when `ld` is not a `statgen_ld`, when
#'   `n_samples` is not one whole number above 2 (with `adjust = "ldsc"`),
#'   or when a stored value is not a correlation (non-finite or outside
#'   \eqn{[-1, 1]}, naming its column: a damaged object); an R error naming
#'   the part when the band's arrays do not have its layout.
#'
#' @param ld an LD matrix, class `statgen_ld` ([statgen_ld()]).
#' @param adjust `"none"` (default: plain \eqn{r^2}, bigsnpr's definition)
#'   or `"ldsc"` (the LDSC software's sample-size adjustment).
#' @param n_samples samples the correlations were computed from (used with
#'   `adjust = "ldsc"` only); by default the one `ld` records.
#' @return A double vector of `nrow(ld$variants)` LD scores (dimensionless;
#'   at least 1 with `adjust = "none"`), named by the variants' `ID`.
#' @references Bulik-Sullivan BK et al. (2015) LD Score regression
#'   distinguishes confounding from polygenicity in genome-wide association
#'   studies. Nat Genet 47:291-295.
#' @seealso [statgen_ldsc()]
#' @examples
#' set.seed(1)
#' g <- matrix(rbinom(200 * 6, 2, 0.4), 200, 6)
#' g[, 2] <- g[, 1]
#' X <- Rfmalloc::fmalloc_bed(g)
#' ld <- statgen_ld(X, window = 2, unit = "variants")  # 2 variants each side
#' statgen_ld_scores(ld)
#' R <- cor(g)
#' R[abs(row(R) - col(R)) > 2] <- 0
#' colSums(R^2)                                         # the same
#' statgen_ld_scores(ld, adjust = "ldsc")               # n_samples = 200, from ld
#' @export
statgen_ld_scores <- function(ld, adjust = c("none", "ldsc"), n_samples = ld$info$n_samples) {
  if (!inherits(ld, "statgen_ld"))
    fm_abort("earg", "ld must be an LD matrix of class 'statgen_ld', not ",
             .ldsc_what(ld))
  adjust <- fm_arg_choice(adjust, c("none", "ldsc"))
  ns <- 0
  if (adjust == "ldsc") {
    if (!is.numeric(n_samples) || length(n_samples) != 1L || !is.finite(n_samples) ||
        n_samples != round(n_samples) || n_samples <= 2)
      fm_abort("earg", "n_samples must be one whole number above 2 for adjust = \"ldsc\", not ",
               if (is.numeric(n_samples) && length(n_samples) == 1L) format(n_samples)
               else .ldsc_what(n_samples))
    ns <- as.double(n_samples)
  }
  scores <- .Call(C_stg_ld_scores, .ld_parts(ld), ns, NULL)
  if (!is.null(ld$variants$ID)) names(scores) <- as.character(ld$variants$ID)
  scores
}

#' LD score regression: SNP heritability and intercept
#'
#' Regresses association chi-square statistics on LD scores (Bulik-Sullivan
#' et al. 2015): the slope gives the SNP heritability \eqn{h^2}, the
#' intercept the inflation not due to polygenicity (confounding, such as
#' population stratification, and cryptic relatedness). Computes what
#' `bigsnpr::snp_ldsc()` computes, with the same arguments and defaults, to
#' rounding (checked on the 1000 Genomes fixture).
#'
#' @section Model: \eqn{E[\chi^2_j] = a + h^2 x_j}, \eqn{x_j = n_j l_j / M}
#'   (\eqn{l_j} the LD score, \eqn{n_j} the sample size, \eqn{M} =
#'   `ld_size`). Before anything, \eqn{10^{-8}} is added to every
#'   `chi2`, so that a 0 gets a finite weight (as bigsnpr does; with
#'   `blocks`, bigsnpr adds it a second time inside its jackknife, and so
#'   does this function, so that its values are bigsnpr's to the bit). Weights
#'   are \eqn{1 / (\hat\chi^2_j{}^2 \max(l_j, 1))} (heteroscedasticity,
#'   then over-counting of variants in LD), \eqn{\hat\chi^2} the current
#'   fit, iterated from \eqn{\hat\chi^2 = \chi^2} until the fitted values
#'   move by less than \eqn{10^{-6}} (at most 100 fits). Two steps (the
#'   LDSC software's `--two-step`): the intercept \eqn{a} from the variants
#'   with \eqn{\chi^2 <} `chi2_thr1` (or `intercept` when given), then
#'   \eqn{h^2} by the regression through the origin of \eqn{\chi^2 - a} on
#'   \eqn{x} over the variants with \eqn{\chi^2 <} `chi2_thr2`.
#' @section Standard errors: block jackknife over `blocks` contiguous
#'   blocks of variants (in the order given; sizes differ by at most one,
#'   the larger first) or over the groups a vector `blocks` labels: each
#'   group \eqn{b} of \eqn{m_b} of the \eqn{m} variants is left out in
#'   turn and both steps rerun, giving \eqn{\hat\theta_{-b}}. With
#'   \eqn{h_b = m / m_b} and pseudovalues \eqn{p_b = h_b \hat\theta - (h_b -
#'   1) \hat\theta_{-b}} (the delete-a-group jackknife for unequal groups,
#'   Busing et al. 1999), the returned `int` and `h2` are
#'   \eqn{\theta_J = \sum_b p_b / h_b} (bias-corrected: bigsnpr's values,
#'   not the full-data fit) and `int_se`, `h2_se` are
#'   \eqn{\sqrt{B^{-1} \sum_b (p_b - \theta_J)^2 / (h_b - 1)}} (for equal
#'   groups, the sample standard deviation of the pseudovalues over
#'   \eqn{\sqrt B}). With `blocks = NULL`: the full-data estimates and no
#'   standard errors.
#' @section Plausibility: \eqn{h^2} is a share of the phenotype's variance,
#'   so an estimate above 1 comes with a warning (class
#'   `c("statgen_warning_h2", "fm_warning_edegenerate", "warning")`) that
#'   says why it can happen: LDSC is built for genome-wide sets of many
#'   variants in large samples from one ancestry, with LD scores from an
#'   external reference panel of that ancestry; few variants or samples
#'   make the slope noisy, and confounding that grows with LD score (as
#'   stratification in a multi-ancestry sample does, above all when the LD
#'   scores come from the GWAS sample itself, whose LD carries the same
#'   structure) is taken for heritability. On the 1000 Genomes fixture
#'   (1126 samples of 12 populations; its simulated QT has an
#'   African-ancestry shift) a GWAS of QT without covariates gives, with LD
#'   scores from the sample itself, \eqn{h^2} = 1.49 on the 1080 tested
#'   chr22 variants and about 99 genome-wide (intercept -3.2), bigsnpr and
#'   this function alike; with 10 principal components as covariates,
#'   about 0.95 genome-wide with a standard error of 2.
#' @section Missing values and errors: `NA` in `chi2` (a variant the GWAS
#'   could not test) or in a vector `n` is a classed error
#'   `fm_error_earg` unless `na_rm = TRUE`, which leaves those variants out
#'   and reports how many (`n_dropped` in the result, and its print).
#'   `ld_size` keeps its value from before that (the variants the LD scores
#'   were computed over). Also `fm_error_earg`: non-numeric input, `NA` or
#'   infinite LD scores, negative or infinite `chi2`, `n` not positive and
#'   finite, `ld_size` not one whole number \eqn{\ge 1}, thresholds not
#'   positive, `intercept` not one finite number, `blocks` not one whole
#'   number in 2 to the number of variants or a vector of labels (one per
#'   variant, no `NA`, at least two distinct); `fm_error_emismatch` when
#'   `chi2`, a vector `n` or a vector `blocks` is not as long as
#'   `ld_scores`, or when `ld_scores` and `chi2` both have names (variant
#'   IDs, as [statgen_ld_scores()] gives) that differ (nothing is matched
#'   or reordered: give both in one order); `fm_error_edegenerate` when a regression has fewer than
#'   two distinct values of \eqn{x} to fit (or gives no finite estimate).
#'
#' @param ld_scores LD scores, one per variant (for example
#'   [statgen_ld_scores()]).
#' @param chi2 association chi-square statistics of the same variants, in
#'   the same order (for a GWAS, `(BETA / SE)^2`).
#' @param n GWAS sample size: one number, or one per variant (for example
#'   `OBS_CT`; for a case-control study the effective size
#'   \eqn{4 / (1/n_{cases} + 1/n_{controls})}).
#' @param ld_size \eqn{M}, the number of variants the LD scores were
#'   computed over (default: all of `ld_scores`).
#' @param blocks number of jackknife blocks (default 200), a vector giving
#'   each variant's block, or `NULL` (no standard errors).
#' @param intercept `NULL` (estimated) or a value to fix it to (for
#'   example 1; the LDSC software's `--intercept-h2`).
#' @param chi2_thr1,chi2_thr2 the chi-square thresholds of step 1 (default
#'   30) and step 2 (default `Inf`: none).
#' @param na_rm leave out the variants with a missing `chi2` or `n`
#'   (default `FALSE`: an error).
#' @return An object of class `statgen_ldsc`: a list with `int`, `int_se`,
#'   `h2`, `h2_se` (as `bigsnpr::snp_ldsc()`; the standard errors `NA`
#'   with `blocks = NULL`), `n_variants` (variants used), `n_dropped`,
#'   `n_blocks`, `ld_size` and `intercept_fixed`. `print()` has a method.
#' @references Bulik-Sullivan BK et al. (2015) LD Score regression
#'   distinguishes confounding from polygenicity in genome-wide association
#'   studies. Nat Genet 47:291-295. Busing FMTA, Meijer E, van der Leeden R
#'   (1999) Delete-m jackknife for unequal m. Stat Comput 9:3-8. Privé F et
#'   al. (2020) LDpred2: better,
#'   faster, stronger. Bioinformatics 36:5424-5431 (bigsnpr's
#'   implementation).
#' @seealso [statgen_ld_scores()]
#' @examples
#' set.seed(1)
#' m <- 5000
#' l <- 1 + rgamma(m, 2, 1)                          # LD scores
#' n <- 2000
#' chi2 <- rchisq(m, 1, ncp = n * 0.3 * l / m)      # generated: h2 = 0.3, intercept 1
#' statgen_ldsc(l, chi2, n, blocks = 50)
#' @export
statgen_ldsc <- function(ld_scores, chi2, n, ld_size = length(ld_scores), blocks = 200,
                         intercept = NULL, chi2_thr1 = 30, chi2_thr2 = Inf, na_rm = FALSE) {
  force(ld_size)
  m <- length(ld_scores)
  .ldsc_need_numbers(ld_scores, "ld_scores")
  if (anyNA(ld_scores) || any(is.infinite(ld_scores)))
    fm_abort("earg", "ld_scores has ", sum(!is.finite(ld_scores)), " missing or infinite values")
  .ldsc_need_numbers(chi2, "chi2")
  .ldsc_need_numbers(n, "n")
  if (length(chi2) != m)
    fm_abort("emismatch", "chi2 has ", length(chi2), " values for ", m, " LD scores")
  if (!is.null(names(ld_scores)) && !is.null(names(chi2)) &&
      !identical(names(ld_scores), names(chi2))) {
    k <- which(names(ld_scores) != names(chi2))[1L]
    fm_abort("emismatch", "ld_scores and chi2 name other variants (the first difference is at ",
             k, ": '", names(ld_scores)[k], "' and '", names(chi2)[k], "')")
  }
  if (length(n) != 1L && length(n) != m)
    fm_abort("emismatch", "n has ", length(n), " values: give one, or one per LD score (", m, ")")
  if (!is.numeric(ld_size) || length(ld_size) != 1L || !is.finite(ld_size) || ld_size < 1 ||
      ld_size != round(ld_size))
    fm_abort("earg", "ld_size must be one whole number >= 1")
  for (thr in c("chi2_thr1", "chi2_thr2")) {
    v <- get(thr)
    if (!is.numeric(v) || length(v) != 1L || is.na(v) || v <= 0)
      fm_abort("earg", thr, " must be one positive number (Inf for none)")
  }
  if (!is.null(intercept) && (!is.numeric(intercept) || length(intercept) != 1L ||
                              !is.finite(intercept)))
    fm_abort("earg", "intercept must be NULL or one finite number")
  if (!is.logical(na_rm) || length(na_rm) != 1L || is.na(na_rm))
    fm_abort("earg", "na_rm must be TRUE or FALSE")
  n <- rep_len(as.double(n), m)
  if (!is.null(blocks) && length(blocks) != 1L) {
    if (length(blocks) != m)
      fm_abort("emismatch", "blocks has ", length(blocks), " labels for ", m, " LD scores")
    if (anyNA(blocks)) fm_abort("earg", "blocks has missing labels")
  }
  miss <- is.na(chi2) | is.na(n)
  if (any(miss) && !na_rm)
    fm_abort("earg", sum(miss), " variants have a missing chi2 or n (the first is number ",
             which(miss)[1L], "): leave them out, or set na_rm = TRUE")
  keep <- !miss
  ld_scores <- as.double(ld_scores[keep])
  chi2 <- as.double(chi2[keep])
  n <- n[keep]
  m_used <- length(chi2)
  if (any(chi2 < 0) || any(is.infinite(chi2)))
    fm_abort("earg", "chi2 has ", sum(chi2 < 0 | is.infinite(chi2)),
             " negative or infinite values")
  if (any(!is.finite(n) | n <= 0))
    fm_abort("earg", "n must be positive and finite (", sum(!is.finite(n) | n <= 0),
             " values are not)")
  groups <- NULL
  if (!is.null(blocks)) {
    if (length(blocks) == 1L) {
      if (!is.numeric(blocks) || !is.finite(blocks) || blocks != round(blocks) ||
          blocks < 2 || blocks > m_used)
        fm_abort("earg", "blocks must be a whole number from 2 to the ", m_used,
                 " variants used, a label per variant, or NULL")
      groups <- .ldsc_blocks(m_used, blocks)
    } else {
      groups <- split(seq_len(m_used), blocks[keep], drop = TRUE)
      if (length(groups) < 2L) fm_abort("earg", "blocks must hold at least two distinct labels")
    }
  }

  # bigsnpr's guard against chi2 = 0, added once more (by its recursive
  # call) to every fit of its jackknife
  chi2 <- chi2 + 1e-8
  if (!is.null(groups)) chi2 <- chi2 + 1e-8
  x <- ld_scores / ld_size * n
  w_ld <- pmax(ld_scores, 1)
  fit <- function(ind) .ldsc_two_step(x[ind], chi2[ind], w_ld[ind], intercept, chi2_thr1,
                                      chi2_thr2)
  est <- fit(seq_len(m_used))
  se <- c(NA_real_, NA_real_)
  if (!is.null(groups)) {
    # delete-a-group jackknife for unequal groups (Busing et al. 1999):
    # h = m / (group size), pseudovalues h est - (h - 1) est_without_group
    h <- m_used / lengths(groups)
    del <- vapply(groups, function(g) fit(-g), numeric(2))
    pseudo <- rbind(h * est[1L] - (h - 1) * del[1L, ], h * est[2L] - (h - 1) * del[2L, ])
    est <- c(sum(pseudo[1L, ] / h), sum(pseudo[2L, ] / h))
    se <- c(sqrt(mean((pseudo[1L, ] - est[1L])^2 / (h - 1))),
            sqrt(mean((pseudo[2L, ] - est[2L])^2 / (h - 1))))
  }
  res <- structure(list(int = est[[1L]], int_se = se[[1L]], h2 = est[[2L]], h2_se = se[[2L]],
                        n_variants = m_used, n_dropped = sum(miss),
                        n_blocks = if (is.null(groups)) 0L else length(groups),
                        ld_size = as.double(ld_size), intercept_fixed = !is.null(intercept)),
                   class = "statgen_ldsc")
  if (is.finite(res$h2) && res$h2 > 1)
    warning(.ldsc_h2_warning(res, stats::median(n)))
  res
}

# One argument as numbers (a plain numeric or logical-NA vector), else earg.
.ldsc_need_numbers <- function(v, name) {
  if (!(is.numeric(v) || (is.logical(v) && all(is.na(v)))) || is.object(v) || length(v) == 0L)
    fm_abort("earg", name, " must be a numeric vector, not ", .ldsc_what(v),
             call = sys.call(-1L))
}

# What a wrong argument is, for messages.
.ldsc_what <- function(v) {
  if (is.null(v)) return("NULL")
  sprintf("%s of length %d", if (is.object(v)) paste0("class '", class(v)[1L], "'") else typeof(v),
          length(v))
}

# Indices of m variants in B contiguous blocks whose sizes differ by at
# most one, the larger blocks first (bigsnpr's sort(rep_len(1:B, m))).
.ldsc_blocks <- function(m, B) {
  size <- m %/% B + (seq_len(B) <= m %% B)
  split(seq_len(m), rep.int(seq_len(B), size))
}

# Weighted least squares of y on x with weights w: with an intercept
# (c(intercept, slope)) or through the origin (slope), from the weighted
# normal equations; fitted values in $pred.
# Design note (2026-12): the weighted cross products are BLAS dot products
# (crossprod) and the plain sums R's sum(), as in bigsnpr, so that the
# reweighting stops after the same number of fits: a fit that stops one
# iteration earlier or later moves an estimate by up to about 1e-7
# relative, which the jackknife multiplies by the number of blocks.
.ldsc_wls <- function(x, y, w, with_intercept) {
  dot <- function(a, b) drop(crossprod(a, b))
  wx <- w * x
  sxx <- dot(wx, x)
  sxy <- dot(wx, y)
  if (!with_intercept) {
    b <- sxy / sxx
    return(list(coef = c(0, b), pred = x * b))
  }
  sw <- sum(w)
  sx <- sum(wx)
  sy <- dot(w, y)
  det <- sw * sxx - sx * sx
  b <- (sw * sxy - sx * sy) / det
  a <- (sxx * sy - sx * sxy) / det
  list(coef = c(a, b), pred = a + x * b)
}

# Iteratively reweighted fit: weights 1 / (pred^2 * w_ld) from the previous
# fitted values (starting at y), until they move by less than 1e-6, at most
# 100 fits; the fit whose weights came from the last values.
.ldsc_irls <- function(x, y, w_ld, with_intercept) {
  pred0 <- y
  for (i in 1:100) {
    f <- .ldsc_wls(x, y, 1 / (pred0^2 * w_ld), with_intercept)
    if (max(abs(f$pred - pred0)) < 1e-6) return(f)
    pred0 <- f$pred
  }
  .ldsc_wls(x, y, 1 / (pred0^2 * w_ld), with_intercept)
}

# The two-step estimate c(int, h2) on one set of variants.
.ldsc_two_step <- function(x, chi2, w_ld, intercept, thr1, thr2) {
  need <- function(ind, step) {
    if (length(unique(x[ind])) < 2L)
      fm_abort("edegenerate", "LD score regression: step ", step, " has ", length(ind),
               " variants below its chi2 threshold and fewer than two distinct LD scores",
               call = NULL)
  }
  a <- intercept
  if (is.null(a)) {
    i1 <- which(chi2 < thr1)
    need(i1, 1)
    a <- .ldsc_irls(x[i1], chi2[i1], w_ld[i1], TRUE)$coef[1L]
  }
  i2 <- which(chi2 < thr2)
  need(i2, 2)
  yp <- chi2[i2] - a
  # step 2 iterates on the fitted chi2 (a + h2 x), not on chi2 - a
  pred0 <- chi2[i2]
  for (i in 1:100) {
    f <- .ldsc_wls(x[i2], yp, 1 / (pred0^2 * w_ld[i2]), FALSE)
    pred <- a + f$pred
    if (max(abs(pred - pred0)) < 1e-6) break
    pred0 <- pred
    if (i == 100L) f <- .ldsc_wls(x[i2], yp, 1 / (pred0^2 * w_ld[i2]), FALSE)
  }
  est <- c(a, f$coef[2L])
  if (!all(is.finite(est)))
    fm_abort("edegenerate", "LD score regression gave no finite estimate", call = NULL)
  est
}

# The warning for h2 above 1: what it means and why it can happen here.
.ldsc_h2_warning <- function(res, n_median) {
  why <- c(
    if (res$n_variants < 1e5)
      sprintf("only %d variants (LDSC is meant for genome-wide sets of about a million)",
              res$n_variants),
    if (n_median < 5000)
      sprintf("a small sample (median n = %g): the slope is then mostly noise", n_median),
    paste("confounding that grows with LD score, such as population stratification in a",
          "multi-ancestry sample, above all with LD scores computed from the GWAS sample",
          "itself instead of an external reference panel of one ancestry (its LD then carries",
          "the same structure)"),
    if (res$ld_size > res$n_variants)
      sprintf("ld_size = %g larger than the %d variants regressed (h2 scales with it)",
              res$ld_size, res$n_variants))
  msg <- sprintf(paste0("LD score regression: h2 = %.3g%s is above 1, impossible for a share of ",
                        "the phenotype's variance; possible reasons: %s"),
                 res$h2, if (is.na(res$h2_se)) "" else sprintf(" (SE %.2g)", res$h2_se),
                 paste(why, collapse = "; "))
  structure(class = c("statgen_warning_h2", "fm_warning_edegenerate", "warning", "condition"),
            list(message = msg, call = NULL))
}

#' @rdname statgen_ldsc
#' @param x a `statgen_ldsc` result.
#' @param ... unused.
#' @export
print.statgen_ldsc <- function(x, ...) {
  se <- function(v) if (is.na(v)) "" else sprintf(" (SE %.4g)", v)
  cat(sprintf("LD score regression: %d variants%s, M = %g, %s\n", x$n_variants,
              if (x$n_dropped) sprintf(" (%d with missing values left out)", x$n_dropped) else "",
              x$ld_size,
              if (x$n_blocks) sprintf("%d jackknife blocks", x$n_blocks) else "no standard errors"))
  cat(sprintf("  intercept %.6g%s%s\n", x$int, se(x$int_se), if (x$intercept_fixed) " (fixed)" else ""))
  cat(sprintf("  h2        %.6g%s\n", x$h2, se(x$h2_se)))
  invisible(x)
}
