# coloc_results.R: methods of colocalisation results: print, summary, plot
# (statgen_coloc) and print, plot, as.data.frame (statgen_coloc_signals).

#' Printing, summarising and plotting colocalisation results
#'
#' For [statgen_coloc_abf()] results: `print()` shows the priors, the
#' number of SNPs, the five posteriors and the SNPs most likely to be the
#' shared variant; `summary()` returns a one-row data frame; `plot()` draws
#' the five posteriors as a bar chart and, beside it, `SNP.PP.H4` along the
#' region (by position when the data sets gave positions, else by SNP
#' order). For [statgen_coloc_signals()] results: `print()` shows the pairs
#' with the largest PP.H4, `plot()` a heat map of PP.H4 over all pairs, and
#' `as.data.frame()` one row per pair in coloc.bf_bf's `summary` layout.
#'
#' @param x,object a result of [statgen_coloc_abf()] or
#'   [statgen_coloc_signals()].
#' @param n how many SNPs (or pairs) to list.
#' @param which for `plot()` of a `statgen_coloc`: `"both"` (default),
#'   `"posteriors"` or `"snps"`.
#' @param row.names,optional unused (the generic's arguments).
#' @param ... further arguments passed to the plotting functions.
#' @return `summary()`: a data frame of one row, `nsnps`, `PP.H0.abf` ...
#'   `PP.H4.abf`, `top_snp` (largest SNP.PP.H4) and `top_snp_pp`.
#'   `as.data.frame()`: a data frame with `nsnps`, `hit1`, `hit2`,
#'   `PP.H0.abf` ... `PP.H4.abf`, `idx1`, `idx2`, `signal1`, `signal2`,
#'   `trimmed`, pairs in the order of `expand.grid(idx1, idx2)` (coloc's).
#'   `print()` and `plot()`: `x`, invisibly.
#' @section Errors: `fm_error_earg` for a `which` that is not one of its
#'   choices, or a `statgen_coloc_signals` result without pairs to plot.
#' @name statgen_coloc-methods
#' @examples
#' set.seed(3)
#' snp <- paste0("rs", 1:100)
#' maf <- runif(100, 0.05, 0.5)
#' se <- 1 / sqrt(2 * 4000 * maf * (1 - maf))
#' b1 <- rnorm(100, 0, se); b1[30] <- 9 * se[30]
#' b2 <- rnorm(100, 0, se); b2[30] <- 6 * se[30]
#' res <- statgen_coloc_abf(list(beta = b1, varbeta = se^2, snp = snp, type = "quant", sdY = 1),
#'                          list(beta = b2, varbeta = se^2, snp = snp, type = "quant", sdY = 1))
#' summary(res)
#' plot(res, which = "posteriors")
NULL

#' @rdname statgen_coloc-methods
#' @export
summary.statgen_coloc <- function(object, ...) {
  s <- object$summary
  r <- object$results
  k <- which.max(r$SNP.PP.H4)
  data.frame(as.list(s), top_snp = r$snp[k], top_snp_pp = r$SNP.PP.H4[k],
             stringsAsFactors = FALSE)
}

#' @rdname statgen_coloc-methods
#' @export
print.statgen_coloc <- function(x, n = 5L, ...) {
  s <- x$summary
  cat(sprintf("<colocalisation (coloc.abf): %s SNPs in both data sets>\n",
              format(s[["nsnps"]], big.mark = ",")))
  if (any(x$dropped > 0)) {
    cat(sprintf("left out: %d SNPs of d1 and %d of d2 not in both\n", x$dropped[[1]],
                x$dropped[[2]]))
  }
  cat(sprintf("priors: p1 = %g, p2 = %g, p12 = %g\n", x$priors[["p1"]], x$priors[["p2"]],
              x$priors[["p12"]]))
  pp <- s[-1L]
  names(pp) <- sub("PP\\.(H[0-4])\\.abf", "\\1", names(pp))
  cat("posteriors:\n")
  print(signif(pp, 3))
  cat(sprintf("PP.H4 (one shared causal variant): %.1f%%\n", 100 * s[["PP.H4.abf"]]))
  r <- x$results
  ord <- utils::head(order(r$SNP.PP.H4, decreasing = TRUE), n)
  cols <- intersect(c("snp", "position", "z.df1", "z.df2", "SNP.PP.H4"), names(r))
  cat("SNPs most likely to be the shared variant (given H4):\n")
  print(r[ord, cols, drop = FALSE], row.names = FALSE, digits = 4)
  invisible(x)
}

#' @rdname statgen_coloc-methods
#' @export
plot.statgen_coloc <- function(x, which = c("both", "posteriors", "snps"), ...) {
  which <- Rfmalloc::fm_arg_choice(which, c("both", "posteriors", "snps"))
  if (which == "both") {
    op <- graphics::par(mfrow = c(1, 2))
    on.exit(graphics::par(op))
  }
  if (which %in% c("both", "posteriors")) {
    pp <- x$summary[-1L]
    graphics::barplot(pp, names.arg = paste0("H", 0:4), ylim = c(0, 1),
                      col = c(rep("grey70", 4), "firebrick"), ylab = "posterior probability",
                      main = sprintf("coloc: %s SNPs", x$summary[["nsnps"]]), ...)
  }
  if (which %in% c("both", "snps")) {
    r <- x$results
    has_pos <- !is.null(r$position)
    at <- if (has_pos) r$position else seq_len(nrow(r))
    graphics::plot(at, r$SNP.PP.H4, type = "h", ylim = c(0, 1), col = "steelblue",
                   xlab = if (has_pos) "position (bp)" else "SNP (data set order)",
                   ylab = "SNP.PP.H4", main = "shared variant, given H4", ...)
  }
  invisible(x)
}

#' @rdname statgen_coloc-methods
#' @export
as.data.frame.statgen_coloc_signals <- function(x, row.names = NULL, optional = FALSE, ...) {
  n1 <- dim(x$pp)[1L]
  n2 <- dim(x$pp)[2L]
  idx1 <- rep(seq_len(n1), n2)
  idx2 <- rep(seq_len(n2), each = n1)
  out <- data.frame(nsnps = rep(x$nsnps, n1 * n2), hit1 = unname(x$hit1[idx1]),
                    hit2 = unname(x$hit2[idx2]), stringsAsFactors = FALSE)
  for (h in dimnames(x$pp)[[3L]]) out[[h]] <- as.vector(x$pp[, , h])
  out$idx1 <- idx1
  out$idx2 <- idx2
  out$signal1 <- dimnames(x$pp)[[1L]][idx1]
  out$signal2 <- dimnames(x$pp)[[2L]][idx2]
  out$trimmed <- as.vector(x$trimmed)
  out
}

#' @rdname statgen_coloc-methods
#' @export
print.statgen_coloc_signals <- function(x, n = 5L, ...) {
  d <- dim(x$pp)
  cat(sprintf("<colocalisation of %d x %d signal pairs over %s shared SNPs>\n", d[1L], d[2L],
              format(x$nsnps, big.mark = ",")))
  cat(sprintf("priors: p1 = %g, p2 = %g, p12 = %g\n", x$priors[["p1"]], x$priors[["p2"]],
              x$priors[["p12"]]))
  if (any(x$trimmed)) cat(sprintf("%d pairs trimmed (NA): see $trimmed\n", sum(x$trimmed)))
  tab <- as.data.frame(x)
  tab <- tab[!is.na(tab$PP.H4.abf), , drop = FALSE]
  if (nrow(tab)) {
    cat("pairs with the largest PP.H4:\n")
    top <- utils::head(tab[order(tab$PP.H4.abf, decreasing = TRUE), ], n)
    print(top[c("signal1", "signal2", "hit1", "hit2", paste0("PP.H", 0:4, ".abf"))],
          row.names = FALSE, digits = 3)
  }
  invisible(x)
}

#' @rdname statgen_coloc-methods
#' @export
plot.statgen_coloc_signals <- function(x, ...) {
  if (!length(x$pp)) Rfmalloc::fm_abort("earg", "x has no pair of signals to plot")
  h4 <- x$pp[, , "PP.H4.abf", drop = TRUE]
  h4 <- matrix(h4, dim(x$pp)[1L], dim(x$pp)[2L])
  graphics::image(seq_len(nrow(h4)), seq_len(ncol(h4)), h4, zlim = c(0, 1),
                  col = grDevices::hcl.colors(20, "YlOrRd", rev = TRUE), axes = FALSE,
                  xlab = "signals of trait 1", ylab = "signals of trait 2",
                  main = "PP.H4 of each pair", ...)
  graphics::axis(1, at = seq_len(nrow(h4)), labels = dimnames(x$pp)[[1L]], las = 2, cex.axis = 0.7)
  graphics::axis(2, at = seq_len(ncol(h4)), labels = dimnames(x$pp)[[2L]], las = 2, cex.axis = 0.7)
  invisible(x)
}
