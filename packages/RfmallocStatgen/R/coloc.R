# coloc.R: colocalisation of two traits in coloc's approximate Bayes factor
# model. statgen_coloc_abf() takes two summary-statistic data sets (coloc's
# conventions, coloc_data.R); statgen_coloc_signals() takes every signal of
# each trait (per-signal log Bayes factors, SuSiE fits) and combines all
# pairs at once. Both hand the pair algebra to the core
# (fm_stats_coloc_pairs, r_coloc.c); methods are in coloc_results.R.

# The core's posteriors and log numerators of every pair of rows of l1
# and l2 (signals x the same SNPs).
.coloc_pairs <- function(l1, l2, p1, p2, p12) {
  storage.mode(l1) <- "double"
  storage.mode(l2) <- "double"
  res <- .Call(C_stg_coloc_pairs, l1, l2, c(p1, p2, p12), NULL)
  names(res) <- c("pp", "lh", "exact")
  res
}

# A prior probability: one number in (0, 1), else a classed error.
.coloc_prior <- function(p, name) {
  if (!is.numeric(p) || length(p) != 1L || is.na(p) || !(p > 0 && p < 1))
    .coloc_abort("earg", name, " must be one probability in (0, 1)")
  as.double(p)
}

# coloc.abf's prior adjustment: a per-SNP prior p with n SNPs * p >= 1
# leaves no mass for "no association"; coloc then uses 1 / (n + 1).
# Reported by a warning of class statgen_warning_prior.
.coloc_adjust_prior <- function(p, n, name) {
  if (n * p < 1) return(p)
  .stg_warn("statgen_warning_prior", "earg", name, " * nsnps = ", format(n * p), " >= 1: ", name,
            " set to 1 / (nsnps + 1) = ", format(1 / (n + 1)), " as coloc does")
  1 / (n + 1)
}

#' Colocalisation of two traits from summary statistics (coloc.abf)
#'
#' Asks whether two traits share a causal variant in a region, from one
#' data set of summary statistics per trait, in the model of Giambartolomei
#' et al. (2014) with coloc's conventions: at most one causal variant per
#' trait, Wakefield's approximate Bayes factors per SNP, and the five
#' hypotheses H0 (no association), H1 (trait 1 only), H2 (trait 2 only),
#' H3 (both, distinct variants) and H4 (both, one shared variant). Results
#' equal `coloc::coloc.abf()`'s (checked to 1e-8 on the posteriors).
#'
#' @section Data sets: Each of `d1`, `d2` is a named list, as coloc takes:
#'   * `snp`: SNP names (character, no duplicate, no `NA`); the two data
#'     sets are matched by name and only the SNPs in both are used (coloc's
#'     intersection; a message says how many of each were left out). When
#'     both give `position` and a shared SNP's positions differ, that is an
#'     `fm_error_emismatch` (coloc's merge would drop it silently).
#'   * `type`: `"quant"` (quantitative trait) or `"cc"` (case-control).
#'   * either `beta` and `varbeta`: the effect estimate and **the variance
#'     of the estimate, `se^2`**, per SNP (log odds ratios for `"cc"`);
#'   * or `pvalues`, `MAF` and `N` (the sample size, one number or one per
#'     SNP), and for `"cc"` `s`, the proportion of cases.
#'   * `sdY`: the trait's standard deviation, `"quant"` with `beta`. When it
#'     is absent it is estimated from `varbeta`, `MAF` and `N` as coloc does
#'     (least squares of \eqn{2 N f (1 - f)} on \eqn{1 / varbeta} through
#'     the origin, whose slope is \eqn{sdY^2}), with a message giving it.
#'   * `MAF`: allele frequency in (0, 1); the formulas use \eqn{f (1 - f)}
#'     only, so the frequency of either allele gives the same result.
#'   * `position` (optional): base-pair positions, for [plot()].
#'
#'   Other elements are ignored (coloc's `LD` included).
#' @section The varbeta trap: coloc's `varbeta` is a *variance*. Passing
#'   the standard error instead shrinks every \eqn{z = \beta /
#'   \sqrt{varbeta}} towards 0 (for se < 1) and inflates the variance
#'   Wakefield's Bayes factor assumes, so that strong signals look weak and
#'   H0/H1/H2 wrongly win, without any error in coloc itself. Here:
#'   * a data set with a standard error under a usual name (`se`, `SE`,
#'     `sebeta`, `se_beta`, `beta_se`, `standard_error`, `stderr`,
#'     `LOG(OR)_SE`) and no `varbeta` is an `fm_error_earg` saying to give
#'     `varbeta = se^2`; with both, `varbeta` must equal `se^2`
#'     (`fm_error_earg` when it equals `se`, `fm_error_emismatch` when it is
#'     neither);
#'   * with `MAF` and `N` given, the way `varbeta` scales across SNPs is
#'     checked: a variance of \eqn{\beta} falls as \eqn{1 / (2 N f (1 -
#'     f))} (times \eqn{sdY^2}, or about \eqn{1 / (s (1 - s))} for
#'     case-control), so the least-squares slope of \eqn{\log varbeta} on
#'     \eqn{\log (2 N f (1 - f))} is about -1; a standard error gives
#'     -1/2 and a variance squared again -2. A slope above -0.75 or below
#'     -1.5 (over at least 20 SNPs whose \eqn{\log(2 N f (1 - f))} spreads
#'     by a standard deviation of 0.1 or more) gives a warning of class
#'     `statgen_warning_varbeta` (also `fm_warning_earg`). The values are
#'     still used as given.
#' @section Priors: `p1`, `p2` and `p12` are per-SNP prior probabilities
#'   that a SNP is causal for trait 1, trait 2 and both. As coloc, a prior
#'   with \eqn{n p \ge 1} (`n` the SNPs of its data set; for `p12` the
#'   shared SNPs) is set to \eqn{1 / (n + 1)}, with a warning of class
#'   `statgen_warning_prior`.
#' @section Computation: per SNP, Wakefield's log ABF
#'   \eqn{\frac12 (\log \frac{V}{V + W} + \frac{W}{V + W} z^2)} with
#'   \eqn{V} = `varbeta` (or, from P values, \eqn{1 / (2 N f (1 - f))},
#'   times \eqn{1 / (s (1 - s))} for `"cc"`), \eqn{z = \beta / \sqrt{V}}
#'   (or the normal quantile of \eqn{p / 2}) and prior effect standard
#'   deviation \eqn{\sqrt{W}} = 0.15 sdY (`"quant"` with `beta`), 0.15
#'   (`"quant"` from P values, on the standardized scale) or 0.2 (`"cc"`);
#'   then the five log numerators of [statgen_coloc_signals()] for the one
#'   pair, computed in the core with log-sum-exp throughout (H3 without
#'   cancellation; coloc's `logdiff` can lose all digits of H3 when the two
#'   traits' evidence sits on the same SNP, or give `NaN` with one SNP).
#' @section Errors: classed, naming the data set, field and first SNP
#'   concerned: `fm_error_earg` for a missing value in any field (nothing
#'   is dropped silently), non-positive or infinite `varbeta`, a
#'   non-finite `beta`, P values outside (0, 1], `MAF` outside (0, 1),
#'   non-positive `N`, `s` outside (0, 1), P values without `N` (or without
#'   `s` for `"cc"`), no usable statistics, a `type` other than `"quant"` or
#'   `"cc"`, duplicated SNP names, the varbeta trap above, priors outside (0,
#'   1); `fm_error_emismatch` for fields of different lengths, no shared
#'   SNP, disagreeing positions; `fm_error_edegenerate` when sdY cannot be
#'   estimated (a non-positive estimate).
#'
#' @param d1,d2 the two data sets (lists; see Data sets).
#' @param p1,p2,p12 per-SNP prior probabilities (coloc's defaults).
#' @return An object of class `statgen_coloc`: a list with
#'   * `summary`: named numeric, `nsnps` and the posteriors `PP.H0.abf` ...
#'     `PP.H4.abf` (coloc's names);
#'   * `results`: a data frame, one row per shared SNP in `d1`'s order:
#'     `snp`, `position` (when given), and per data set (suffix `.df1`,
#'     `.df2`) `V`, `z`, `r` (the shrinkage \eqn{W / (V + W)}) and `lABF`,
#'     then `internal.sum.lABF` and `SNP.PP.H4`, the posterior that this SNP
#'     is the shared causal variant given H4;
#'   * `priors`: `p1`, `p2`, `p12` as used (after any adjustment);
#'   * `log_numerators`: the five log numerators (natural logs; H0 is 0);
#'   * `dropped`: the SNPs of `d1` and of `d2` not in both;
#'   * `sdY`: the standard deviations used (`NA` where not used), and
#'     whether each was estimated.
#'
#'   `print()`, `summary()` and `plot()` have methods
#'   ([statgen_coloc-methods]).
#' @references Giambartolomei C et al. (2014) Bayesian test for
#'   colocalisation between pairs of genetic association studies using
#'   summary statistics. PLoS Genet 10:e1004383. Wakefield J (2009) Bayes
#'   factors for genome-wide association studies: comparison with P-values.
#'   Genet Epidemiol 33:79-86. Wallace C (2020) Eliciting priors and
#'   relaxing the single causal variant assumption in colocalisation
#'   analyses. PLoS Genet 16:e1008720. The R package coloc (CRAN), whose
#'   `coloc.abf()` is the oracle of the tests.
#' @seealso [statgen_coloc_signals()] for many signals per trait at once.
#' @examples
#' set.seed(1)
#' m <- 200
#' maf <- runif(m, 0.05, 0.5)
#' se1 <- 1 / sqrt(2 * 5000 * maf * (1 - maf))
#' b1 <- rnorm(m, 0, se1); b1[50] <- 8 * se1[50]
#' se2 <- 1 / sqrt(2 * 3000 * maf * (1 - maf) * 0.3 * 0.7)
#' b2 <- rnorm(m, 0, se2); b2[50] <- 7 * se2[50]
#' snp <- paste0("rs", 1:m)
#' d1 <- list(beta = b1, varbeta = se1^2, snp = snp, type = "quant", sdY = 1,
#'            MAF = maf, N = 5000, position = 1e6 + 100 * (1:m))
#' d2 <- list(beta = b2, varbeta = se2^2, snp = snp, type = "cc", MAF = maf, N = 3000)
#' res <- statgen_coloc_abf(d1, d2)
#' res
#' plot(res)
#' @export
statgen_coloc_abf <- function(d1, d2, p1 = 1e-4, p2 = 1e-4, p12 = 1e-5) {
  p1 <- .coloc_prior(p1, "p1")
  p2 <- .coloc_prior(p2, "p2")
  p12 <- .coloc_prior(p12, "p12")
  a <- .coloc_dataset(d1, 1L)
  b <- .coloc_dataset(d2, 2L)
  p1 <- .coloc_adjust_prior(p1, length(a$snp), "p1")
  p2 <- .coloc_adjust_prior(p2, length(b$snp), "p2")
  ib <- match(a$snp, b$snp)
  ia <- which(!is.na(ib))
  ib <- ib[ia]
  if (!length(ia)) {
    .coloc_abort("emismatch", "d1 and d2 share no SNP name (", length(a$snp), " and ",
                 length(b$snp), " SNPs)")
  }
  dropped <- c(d1 = length(a$snp) - length(ia), d2 = length(b$snp) - length(ia))
  if (any(dropped > 0)) {
    message(sprintf("statgen_coloc_abf: %d SNPs are in both data sets; %d of d1 and %d of d2 are not and are left out",
                    length(ia), dropped[[1]], dropped[[2]]))
  }
  pos <- a$position[ia] %||% b$position[ib]
  if (!is.null(a$position) && !is.null(b$position)) {
    bad <- a$position[ia] != b$position[ib]
    if (any(bad)) {
      k <- which(bad)[1L]
      .coloc_abort("emismatch", sum(bad), " shared SNP(s) have different positions in d1 and d2, ",
                   "e.g. '", a$snp[ia[k]], "' at ", a$position[ia[k]], " and ", b$position[ib[k]])
    }
  }
  p12 <- .coloc_adjust_prior(p12, length(ia), "p12")
  l1 <- a$lABF[ia]
  l2 <- b$lABF[ib]
  core <- .coloc_pairs(matrix(l1, 1L), matrix(l2, 1L), p1, p2, p12)
  pp <- core$pp[1L, 1L, ]
  lh <- core$lh[1L, 1L, ]
  hyp <- paste0("PP.H", 0:4, ".abf")
  names(pp) <- hyp
  names(lh) <- paste0("H", 0:4)
  s <- l1 + l2
  mx <- max(s)
  results <- data.frame(snp = a$snp[ia], stringsAsFactors = FALSE)
  if (!is.null(pos)) results$position <- pos
  for (x in list(list(a, ia, "df1"), list(b, ib, "df2"))) {
    for (f in c("V", "z", "r", "lABF")) results[[paste0(f, ".", x[[3]])]] <- x[[1]][[f]][x[[2]]]
  }
  results$internal.sum.lABF <- s
  results$SNP.PP.H4 <- exp(s - (mx + log(sum(exp(s - mx)))))
  structure(list(summary = c(nsnps = length(ia), pp), results = results,
                 priors = c(p1 = p1, p2 = p2, p12 = p12), log_numerators = lh, dropped = dropped,
                 sdY = data.frame(dataset = c("d1", "d2"), sdY = c(a$sdY, b$sdY),
                                  estimated = c(a$sdY_estimated, b$sdY_estimated))),
            class = "statgen_coloc")
}

`%||%` <- function(a, b) if (is.null(a)) b else a
