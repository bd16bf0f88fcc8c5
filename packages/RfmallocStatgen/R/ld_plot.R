# plot() of an LD band: a region's r^2 (or r) heat map drawn as a triangle
# of diamonds, one per pair, with an association track above it.

#' Plot LD in a region, with the association track above it
#'
#' Draws the LD of the variants `region` of an LD band as the usual
#' triangle: pair \eqn{(j, k)}, \eqn{j < k}, is a diamond below the
#' midpoint of variants \eqn{j} and \eqn{k}, coloured by \eqn{r^2} (white 0
#' to red 1) or by signed \eqn{r} (blue \eqn{-1}, white 0, red 1). Variants
#' are equally spaced in band order; ticks below give their positions in Mb.
#' With `gwas`, a panel above plots \eqn{-\log_{10} P} of the same variants
#' (matched by ID) over the same x axis, with the lead variant (smallest P)
#' in red and its \eqn{r^2} with every other variant colouring the points,
#' as LocusZoom does.
#'
#' Pairs outside the band's window, or below its `r2_min`, are not stored
#' and are drawn as 0. The region's dense block is read from the band
#' (`x[region, region]`), so it is limited to `max_variants` variants.
#'
#' @param x a `statgen_ld` band ([statgen_ld()]).
#' @param region the variants to draw: numbers, IDs or a logical over the
#'   band's variants, consecutive in band order (default all, when there
#'   are at most `max_variants`).
#' @param gwas `NULL`, or association results for the track above: a
#'   [statgen_gwas()] result or any data frame with columns `ID` and `P`
#'   (one phenotype; with a `PHENO` column, `pheno` picks it). Variants of
#'   the region without a row, or with `P` `NA`, get no point.
#' @param stat `"r2"` (default) or `"r"`.
#' @param pheno the phenotype of `gwas` to plot (default its first).
#' @param max_variants the most variants drawn (default 1000).
#' @param ... further arguments passed to [graphics::plot()] for the
#'   track (e.g. `main`).
#' @return `x`, invisibly.
#' @section Errors: `fm_error_earg` for a region with more than
#'   `max_variants` variants or not consecutive, a `gwas` without `ID` and
#'   `P` columns, or a `pheno` not in it.
#' @references Barrett et al. (2005) Haploview: analysis and visualization
#'   of LD and haplotype maps, Bioinformatics 21:263-265; Pruim et al.
#'   (2010) LocusZoom: regional visualization of genome-wide association
#'   scan results, Bioinformatics 26:2336-2337.
#' @seealso [statgen_ld()], [statgen_gwas()]
#' @examples
#' set.seed(1)
#' h <- matrix(rbinom(800 * 40, 1, 0.3), 800, 40)   # 800 haplotypes
#' for (j in 2:40) { same <- runif(800) < 0.9; h[same, j] <- h[same, j - 1] }
#' G <- h[1:400, ] + h[401:800, ]                     # 400 diploid samples
#' X <- Rfmalloc::fmalloc_bed(G)
#' v <- data.frame(chr = "1", pos = seq(1e6, by = 5000, length.out = 40),
#'                 id = paste0("rs", 1:40), ref = "A", alt = "G")
#' ld <- statgen_ld(X, window = 100, variants = v)
#' y <- G[, 20] + rnorm(400)
#' gw <- data.frame(ID = v$id, P = apply(G, 2, function(g) cor.test(g, y)$p.value))
#' plot(ld, gwas = gw)
#' @export
plot.statgen_ld <- function(x, region = NULL, gwas = NULL, stat = c("r2", "r"), pheno = NULL,
                            max_variants = 1000, ...) {
  stat <- fm_arg_choice(stat, c("r2", "r"))
  n <- dim(x)[1]
  idx <- if (is.null(region)) seq_len(n) else .ld_index(x, region, "region")
  if (length(idx) > max_variants)
    fm_abort("earg", sprintf("the region has %s variants, more than max_variants = %s: give a smaller region",
                             format(length(idx)), format(max_variants)))
  if (length(idx) > 1L && any(diff(idx) != 1L))
    fm_abort("earg", "region must be consecutive variants of the band")
  lp <- if (is.null(gwas)) NULL else .ld_plot_track(x$variants$ID[idx], gwas, pheno)
  r <- x[idx, idx, drop = FALSE]
  v <- if (stat == "r2") r^2 else r
  pal <- if (stat == "r2") grDevices::colorRampPalette(c("white", "#fdae61", "#d7191c"))(101) else
    grDevices::colorRampPalette(c("#2c7bb6", "white", "#d7191c"))(101)
  col_of <- function(z) pal[round(if (stat == "r2") z * 100 else (z + 1) * 50) + 1L]
  op <- graphics::par(no.readonly = TRUE)
  on.exit(graphics::par(op))
  m <- length(idx)
  if (!is.null(lp)) {
    graphics::layout(matrix(1:2, 2), heights = c(1, 1.3))
    graphics::par(mar = c(0.5, 4, 2, 1))
    lead <- which.max(replace(lp, is.na(lp), -Inf))
    pc <- if (length(lead) && !is.na(lp[lead])) {
      pcol <- col_of(if (stat == "r2") r[lead, ]^2 else r[lead, ])
      pcol[lead] <- "black"
      pcol
    } else "grey40"
    yl <- if (all(is.na(lp))) c(0, 1) else range(c(0, lp), na.rm = TRUE)
    graphics::plot(seq_len(m), lp, xlim = c(0.5, m + 0.5), ylim = yl, pch = 21, bg = pc, col = "grey30",
                   xaxt = "n", xaxs = "i", xlab = "", ylab = expression(-log[10](P)), ...)
  }
  graphics::par(mar = c(4, 4, if (is.null(lp)) 2 else 0.5, 1))
  graphics::plot(NA, xlim = c(0.5, m + 0.5), ylim = c(-m / 2, 0), xaxs = "i", yaxs = "i",
                 axes = FALSE, xlab = sprintf("chr%s position (Mb)", x$variants$CHR[idx[1]]),
                 ylab = "", main = if (is.null(lp)) sprintf("LD (%s)", if (stat == "r2") "r^2" else "r") else "")
  if (m > 1L) {
    pr <- which(upper.tri(v), arr.ind = TRUE)   # (row j, col k), j < k
    cx <- (pr[, 1] + pr[, 2]) / 2
    cy <- -(pr[, 2] - pr[, 1]) / 2
    # diamonds, NA-separated, in one polygon() call
    px <- rbind(cx - 0.5, cx, cx + 0.5, cx, NA)
    py <- rbind(cy, cy + 0.5, cy, cy - 0.5, NA)
    graphics::polygon(px, py, col = col_of(v[pr]), border = NA)
  }
  at <- unique(round(seq(1, m, length.out = min(m, 6))))
  graphics::axis(1, at = at, labels = sprintf("%.3f", x$variants$POS[idx[at]] / 1e6), cex.axis = 0.8)
  key <- if (stat == "r2") c(0, 0.5, 1) else c(-1, 0, 1)
  graphics::legend("bottomleft", legend = format(key), fill = col_of(key), bty = "n",
                   title = if (stat == "r2") "r^2" else "r", cex = 0.8)
  invisible(x)
}

# -log10 P of the variants `ids` from gwas (NA where it has none).
.ld_plot_track <- function(ids, gwas, pheno) {
  if (!is.data.frame(gwas) || !all(c("ID", "P") %in% names(gwas)))
    fm_abort("earg", "gwas must be a data frame with columns ID and P (e.g. a statgen_gwas result)")
  if (!is.null(gwas$PHENO)) {
    if (is.null(pheno)) pheno <- gwas$PHENO[1]
    if (!pheno %in% gwas$PHENO) fm_abort("earg", sprintf("no phenotype '%s' in gwas", pheno))
    gwas <- gwas[gwas$PHENO == pheno, , drop = FALSE]
  }
  p <- gwas$P[match(ids, gwas$ID)]
  -log10(pmax(p, .Machine$double.xmin))
}
