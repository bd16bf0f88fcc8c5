# coloc_signals.R: statgen_coloc_signals(), every pair of signals of two
# traits combined at once (coloc.bf_bf / coloc.susie's computation, in one
# pass of the core's bounded panel products).

# Log Bayes factors of a trait's signals as a matrix (signals x SNPs, SNP
# names as column names), from a matrix, a named vector (one signal) or a
# SuSiE fit; a "null" column (coloc's convention) is subtracted and removed.
.coloc_bf_matrix <- function(x, name) {
  if (inherits(x, "susie")) {
    lbf <- x$lbf_variable
    if (!is.matrix(lbf)) .coloc_abort("earg", name, " is a susie fit without lbf_variable")
    cs <- x$sets$cs_index
    if (is.null(colnames(lbf))) {
      .coloc_abort("earg", name, " is a susie fit whose lbf_variable has no column names: ",
                   "fit it on a matrix with SNP names as column names")
    }
    if (!length(cs)) message(sprintf("%s: the susie fit has no credible set: no signal", name))
    x <- lbf[cs, , drop = FALSE]
    rownames(x) <- if (length(cs)) paste0("L", cs) else character(0)
  }
  if (is.numeric(x) && is.null(dim(x))) {
    if (is.null(names(x))) .coloc_abort("earg", name, " must have SNP names (names())")
    x <- matrix(x, 1L, dimnames = list(NULL, names(x)))
  }
  if (!is.matrix(x) || !is.numeric(x)) {
    .coloc_abort("earg", name, " must be a numeric matrix of log Bayes factors (signals x SNPs), ",
                 "a named numeric vector or a susie fit, not ", class(x)[1L])
  }
  snp <- colnames(x)
  if (is.null(snp) || anyNA(snp)) .coloc_abort("earg", name, " must have SNP names as column names")
  if (anyDuplicated(snp)) {
    .coloc_abort("earg", name, " has the SNP '", snp[anyDuplicated(snp)], "' twice among its columns")
  }
  if (is.null(rownames(x))) rownames(x) <- as.character(seq_len(nrow(x)))
  bad <- !is.finite(x)
  if (any(bad)) {
    k <- which(bad, arr.ind = TRUE)[1L, ]
    .coloc_abort("earg", name, "[", k[[1]], ", '", snp[k[[2]]], "'] is ", format(x[k[[1]], k[[2]]]),
                 ": log Bayes factors must be finite")
  }
  if ("null" %in% snp) {
    x <- x - x[, "null"]
    x <- x[, snp != "null", drop = FALSE]
  }
  storage.mode(x) <- "double"
  x
}

# Per signal, the share of its posterior (equal priors per SNP) on the
# given SNPs: sum over those of e^L / sum over all of e^L.
.coloc_share <- function(l, snps) {
  if (!nrow(l)) return(numeric(0))
  lse <- function(m) {
    mx <- apply(m, 1L, max)
    mx + log(rowSums(exp(m - mx)))
  }
  exp(lse(l[, snps, drop = FALSE]) - lse(l))
}

#' Colocalisation of every pair of signals of two traits
#'
#' The matrix form of [statgen_coloc_abf()]: given per-SNP log Bayes
#' factors of several signals per trait (conditionally independent
#' signals, SuSiE's single effects of credible sets, coloc's
#' `coloc.bf_bf()` input), computes coloc's five posteriors for all
#' \eqn{n_1 \times n_2} pairs of signals at once, as
#' `coloc::coloc.bf_bf()` and `coloc::coloc.susie()` do one pair at a time.
#'
#' @section Computation: For signal \eqn{i} of trait 1 and \eqn{j} of trait
#'   2 with log BFs \eqn{L_{1ik}}, \eqn{L_{2jk}} over the shared SNPs
#'   \eqn{k}, the log numerators are \eqn{0}, \eqn{\log p_1 + lse_k
#'   L_{1ik}}, \eqn{\log p_2 + lse_k L_{2jk}}, \eqn{\log p_1 + \log p_2 +
#'   \log \sum_{k \ne l} e^{L_{1ik} + L_{2jl}}} and \eqn{\log p_{12} + lse_k
#'   (L_{1ik} + L_{2jk})} (lse: log-sum-exp). The coupling terms
#'   \eqn{lse_k (L_{1ik} + L_{2jk})} of all pairs come from one matrix
#'   product \eqn{E_1 E_2'} of the max-shifted exponentials over bounded
#'   panels of signals (BLAS), in the C core (`fm_stats_coloc.h` in the
#'   source repository); pairs where that product could have underflowed
#'   (below 1e-250) or where the H3 sum would cancel are recomputed exactly
#'   in the log domain. The result
#'   equals the per-pair computation to about 1e-12, and
#'   `coloc.bf_bf(trim_by_posterior = FALSE)` to 1e-10 (tests).
#' @section Differences from coloc.bf_bf: SNPs are matched by column name
#'   and the shared ones used (as coloc). coloc drops pairs in which either
#'   signal has less than `overlap.min` (0.5) of its posterior on the shared
#'   SNPs (`trim_by_posterior = TRUE`); here such pairs are kept in the
#'   matrices with `NA` posteriors, flagged in `trimmed`, and each signal's
#'   share is returned (`share1`, `share2`). The share is that of the
#'   posterior with equal per-SNP priors, \eqn{\sum_{shared} e^{L_k} /
#'   \sum_{all} e^{L_k}}; coloc's own share treats the last SNP column as
#'   the null when there is no `"null"` column, which differs slightly (it
#'   only matters when the two traits' SNP sets differ). With `overlap_min
#'   = 0` nothing is trimmed. Priors are single numbers (coloc's per-SNP
#'   prior vectors are not supported) and are not adjusted (as in
#'   `coloc.bf_bf`). The default `p12 = 5e-6` is `coloc.bf_bf`'s and
#'   `coloc.susie`'s (`coloc.abf`'s is 1e-5).
#' @section SuSiE fits: an object of class `"susie"` (from `susieR`) gives
#'   one signal per credible set: the rows `sets$cs_index` of its
#'   `lbf_variable` (named `L<index>`), as `coloc.susie()` takes them; its
#'   columns must carry SNP names. A fit without a credible set gives no
#'   signal (a message says so; the result then has no pairs).
#' @section Errors: classed: `fm_error_earg` for input that is not a numeric
#'   matrix, named vector or susie fit, missing or duplicated SNP names, a
#'   non-finite log BF (naming signal and SNP), priors outside (0, 1), an
#'   `overlap_min` outside \[0, 1\]; `fm_error_emismatch` when the traits
#'   share no SNP.
#'
#' @param bf1,bf2 log Bayes factors (natural logs) of each trait's signals:
#'   a numeric matrix, signals x SNPs, with SNP names as column names (and
#'   optionally a `"null"` column, subtracted as coloc does), a named
#'   vector (one signal), or a `susieR` fit.
#' @param p1,p2,p12 per-SNP prior probabilities.
#' @param overlap_min the least share of each signal's posterior on the
#'   shared SNPs for a pair to be computed (coloc's `overlap.min`).
#' @return An object of class `statgen_coloc_signals`: a list with
#'   * `pp`: array \eqn{n_1 \times n_2 \times 5} of posteriors, dimnames
#'     the signals' names and `PP.H0.abf` ... `PP.H4.abf`;
#'   * `log_numerators`: the same shape, natural logs;
#'   * `nsnps`: the number of shared SNPs; `hit1`, `hit2`: each signal's
#'     SNP of largest BF among the shared ones;
#'   * `share1`, `share2`: each signal's share of posterior on the shared
#'     SNPs; `trimmed`: logical \eqn{n_1 \times n_2}, pairs left `NA`;
#'   * `priors`; `exact`: the pairs recomputed exactly (underflow, H3).
#'
#'   `as.data.frame()` gives coloc.bf_bf's `summary` layout (one row per
#'   pair: `nsnps`, `hit1`, `hit2`, `PP.H0.abf` ... `PP.H4.abf`, `idx1`,
#'   `idx2`, and the signals' names); `print()` and `plot()` have methods
#'   ([statgen_coloc-methods]).
#' @references Wallace C (2021) A more accurate method for colocalisation
#'   analysis allowing for multiple causal variants. PLoS Genet
#'   17:e1009440. Giambartolomei C et al. (2014) PLoS Genet 10:e1004383.
#'   Wang G et al. (2020) A simple new approach to variable selection in
#'   regression, with application to genetic fine mapping. JRSS B
#'   82:1273-1300 (SuSiE).
#' @seealso [statgen_coloc_abf()].
#' @examples
#' set.seed(2)
#' snp <- paste0("rs", 1:300)
#' bf1 <- matrix(rnorm(4 * 300, 0, 0.5), 4, 300, dimnames = list(NULL, snp))
#' bf2 <- matrix(rnorm(3 * 300, 0, 0.5), 3, 300, dimnames = list(NULL, snp))
#' bf1[2, 120] <- 25; bf2[3, 120] <- 20   # one shared causal SNP
#' bf1[1, 40] <- 15; bf2[1, 200] <- 18    # two distinct ones
#' res <- statgen_coloc_signals(bf1, bf2)
#' round(res$pp[, , "PP.H4.abf"], 3)
#' head(as.data.frame(res))
#' @export
statgen_coloc_signals <- function(bf1, bf2, p1 = 1e-4, p2 = 1e-4, p12 = 5e-6, overlap_min = 0.5) {
  p1 <- .coloc_prior(p1, "p1")
  p2 <- .coloc_prior(p2, "p2")
  p12 <- .coloc_prior(p12, "p12")
  if (!is.numeric(overlap_min) || length(overlap_min) != 1L || is.na(overlap_min) ||
      overlap_min < 0 || overlap_min > 1) {
    .coloc_abort("earg", "overlap_min must be one number in [0, 1]")
  }
  l1 <- .coloc_bf_matrix(bf1, "bf1")
  l2 <- .coloc_bf_matrix(bf2, "bf2")
  shared <- intersect(colnames(l1), colnames(l2))
  if (!length(shared)) {
    .coloc_abort("emismatch", "bf1 and bf2 share no SNP name (", ncol(l1), " and ", ncol(l2),
                 " columns)")
  }
  left <- c(bf1 = ncol(l1), bf2 = ncol(l2)) - length(shared)
  if (any(left > 0)) {
    message(sprintf("statgen_coloc_signals: %d SNPs are in both; %d of bf1 and %d of bf2 are not and are left out",
                    length(shared), left[[1]], left[[2]]))
  }
  share1 <- stats::setNames(.coloc_share(l1, shared), rownames(l1))
  share2 <- stats::setNames(.coloc_share(l2, shared), rownames(l2))
  a <- l1[, shared, drop = FALSE]
  b <- l2[, shared, drop = FALSE]
  core <- .coloc_pairs(a, b, p1, p2, p12)
  trimmed <- outer(share1 < overlap_min, share2 < overlap_min, "|")
  dimnames(trimmed) <- list(rownames(l1), rownames(l2))
  if (any(trimmed)) {
    core$pp[rep(trimmed, 5L)] <- NA_real_
    message(sprintf("statgen_coloc_signals: %d of %d pairs have a signal with less than %g of its posterior on the shared SNPs: their posteriors are NA (see $trimmed)",
                    sum(trimmed), length(trimmed), overlap_min))
  }
  dn <- list(rownames(l1), rownames(l2), paste0("PP.H", 0:4, ".abf"))
  dimnames(core$pp) <- dn
  dn[[3]] <- paste0("H", 0:4)
  dimnames(core$lh) <- dn
  hit <- function(m) if (nrow(m)) stats::setNames(shared[max.col(m, ties.method = "first")], rownames(m)) else character(0)
  structure(list(pp = core$pp, log_numerators = core$lh, nsnps = length(shared),
                 hit1 = hit(a), hit2 = hit(b), share1 = share1, share2 = share2,
                 trimmed = trimmed, priors = c(p1 = p1, p2 = p2, p12 = p12),
                 exact = c(underflow = core$exact[[1]], h3 = core$exact[[2]])),
            class = "statgen_coloc_signals")
}
