# make demo: PCA out of core on the real 1000 Genomes genotypes.
#
# Maps ../shared/fixtures/genotypes/1kg_phase3_subset/1kg_bi.bed without
# copying it, prints an allele-frequency summary, runs a randomized PCA
# (k = 10) on autosomal variants with MAF >= 0.05 (the filter of
# `plink2 --autosome --maf 0.05 --pca 10`), prints the eigenvalues in plink2's
# convention, the elapsed time and the peak resident memory, and writes a
# PC1/PC2 scatter plot coloured by population; then a GWAS of the
# fixture's simulated phenotypes (QT linear, BT logistic with Firth
# fallback, the 10 PCs as covariates: plink2 --glm's rows) and a Manhattan
# plot of both beside the PCA plot.
suppressPackageStartupMessages({library(Rfmalloc); library(RfmallocStatgen)})

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", args[grep("^--file=", args)])
root <- normalizePath(file.path(dirname(script), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(dirname(root), "shared", "fixtures"))
prefix <- file.path(fixtures, "genotypes", "1kg_phase3_subset", "1kg_bi")
out_dir <- file.path(root, "build", "demo")
dir.create(out_dir, recursive = TRUE, showWarnings = FALSE)

peak_rss_mb <- function() {
  status <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", grep("^VmHWM", status, value = TRUE))) / 1024
}

real <- file.exists(paste0(prefix, ".bed"))
if (real) {
  cat("Data: 1000 Genomes phase 3 subset (real), ", normalizePath(paste0(prefix, ".bed")), "\n", sep = "")
  G <- fmalloc_bed_open(prefix)
  psam <- utils::read.table(paste0(prefix, ".psam"), header = FALSE, comment.char = "#",
                            col.names = c("FID", "IID", "SEX", "Population"))
  population <- psam$Population[match(rownames(G), psam$IID)]
} else {
  cat("The fixtures folder", fixtures, "is absent.\n")
  cat("FALLBACK: running on GENERATED data (3 simulated populations, 600 samples x 4000 variants);",
      "these are not real genotypes.\n")
  set.seed(42)
  n_per <- 200
  p <- 4000
  base <- stats::runif(p, 0.05, 0.5)
  pops <- c("SIM_A", "SIM_B", "SIM_C")
  g <- do.call(rbind, lapply(seq_along(pops), function(k) {
    f <- pmin(pmax(base + stats::rnorm(p, 0, 0.08), 0.01), 0.99)
    matrix(stats::rbinom(n_per * p, 2, rep(f, each = n_per)), n_per, p)
  }))
  dimnames(g) <- list(sprintf("sim%04d", seq_len(nrow(g))), sprintf("snp%05d", seq_len(p)))
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 1, mode = "scratch")
  G <- fmalloc_bed(g, rt)
  population <- rep(pops, each = n_per)
}

print(G)

cat("\nAllele-frequency summary (counted allele = .bim A1 = ALT):\n")
freq <- fmalloc_allele_freq(G)
cat(sprintf("  variants: %s   samples: %s   missing-call rate: %.4f\n",
            format(nrow(freq), big.mark = ","), format(nrow(G), big.mark = ","),
            mean(freq$missing_rate)))
bins <- cut(freq$maf, c(-Inf, 0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5),
            labels = c("monomorphic", "(0,0.01]", "(0.01,0.05]", "(0.05,0.1]", "(0.1,0.2]",
                       "(0.2,0.3]", "(0.3,0.4]", "(0.4,0.5]"))
print(table(MAF = bins))

autosomal <- if (is.null(freq$chr)) rep(TRUE, nrow(freq)) else freq$chr %in% as.character(1:22)
keep <- which(autosomal & freq$maf >= 0.05)
cat(sprintf("\nPCA on %s autosomal variants with MAF >= 0.05 (k = 10, genotypes scaled by sqrt(2p(1-p)))\n",
            format(length(keep), big.mark = ",")))
X <- fmalloc_select(G, keep)
t0 <- proc.time()[["elapsed"]]
pca <- fmalloc_pca(X, k = 10, center = TRUE, scale = "binomial", seed = 1)
elapsed <- proc.time()[["elapsed"]] - t0

eigenvalues <- pca$sdev^2 * (nrow(X) - 1) / ncol(X)
cat("Eigenvalues (plink2 --pca convention, GRM = Xs Xs' / M):\n")
print(round(stats::setNames(eigenvalues, paste0("PC", 1:10)), 4))
cat(sprintf("Krylov iterations: %d (converged: %s)\n", pca$iterations, pca$converged))
cat(sprintf("Elapsed: %.2f s   Peak resident memory (VmHWM): %.1f MB\n", elapsed, peak_rss_mb()))

png_path <- file.path(out_dir, if (real) "pca_pc1_pc2.png" else "pca_pc1_pc2_GENERATED.png")
grDevices::png(png_path, width = 900, height = 800, res = 110)
# A symbol per 1000 Genomes super-population (continent) and a colour per
# population: twelve distinct ones, the Okabe-Ito palette (without its light
# yellow) and five of Paul Tol's, in an order that puts the most distinct
# colours on populations whose clusters overlap (AMR, EUR and SAS).
superpop <- c(ACB = "AFR", ASW = "AFR", ESN = "AFR", GWD = "AFR", LWK = "AFR", MSL = "AFR",
              YRI = "AFR", CLM = "AMR", MXL = "AMR", PEL = "AMR", PUR = "AMR", CDX = "EAS",
              CHB = "EAS", CHS = "EAS", JPT = "EAS", KHV = "EAS", CEU = "EUR", FIN = "EUR",
              GBR = "EUR", IBS = "EUR", TSI = "EUR", BEB = "SAS", GIH = "SAS", ITU = "SAS",
              PJL = "SAS", STU = "SAS")
pops <- sort(unique(population))
sp <- unname(superpop[pops])
sp[is.na(sp)] <- "other"
ord <- order(sp, pops)
pops <- pops[ord]
sp <- sp[ord]
palette12 <- c("#882255", "#999933", "#56B4E9", "#661100", "#009E73", "#E69F00", "#CC79A7",
               "#332288", "#888888", "#0072B2", "#D55E00", "#000000")
cols <- palette12[(seq_along(pops) - 1) %% length(palette12) + 1]
pchs <- c(AFR = 17, AMR = 15, EAS = 16, EUR = 18, SAS = 25, other = 4)[sp]
k <- match(population, pops)
graphics::par(mar = c(4.5, 4.5, 3, 8), xpd = NA)
graphics::plot(pca$x[, 1], pca$x[, 2], col = cols[k], bg = cols[k], pch = pchs[k], cex = 0.7,
               xlab = sprintf("PC1 (eigenvalue %.2f)", eigenvalues[1]),
               ylab = sprintf("PC2 (eigenvalue %.2f)", eigenvalues[2]),
               main = if (real) "Rfmalloc randomized PCA, 1000 Genomes .bed mapped in place"
                      else "Rfmalloc randomized PCA on GENERATED data (fixtures absent)")
graphics::legend("topright", inset = c(-0.24, 0), legend = paste(pops, ifelse(sp == "other", "", sp)),
                 col = cols, pt.bg = cols, pch = pchs, cex = 0.8, bty = "n")
invisible(grDevices::dev.off())
cat("Wrote", png_path, "\n")

# ---- GWAS: the fixture's simulated phenotypes, adjusted for the 10 PCs -----
if (real) {
  pheno <- utils::read.delim(file.path(dirname(prefix), "pheno", "1kg_pheno.tsv"), check.names = FALSE)
  cat("\nGWAS of the simulated phenotypes QT (quantitative) and BT (case/control) of",
      "pheno/1kg_pheno.tsv,\nadjusted for the 10 PCs, every variant (plink2 --glm's model and rows)\n")
} else {
  set.seed(7)
  causal <- sample(keep, 5)
  g_c <- as.matrix(G[, causal])
  qt <- drop(scale(g_c) %*% stats::rnorm(5, 0, 0.5)) + stats::rnorm(nrow(G))
  pheno <- data.frame(IID = rownames(G), QT = qt, BT = as.integer(qt > stats::quantile(qt, 0.7)))
  cat("\nGWAS of GENERATED phenotypes (5 simulated causal variants), adjusted for the 10 PCs\n")
}
options(fmalloc.progress = FALSE)
t0 <- proc.time()[["elapsed"]]
qt <- statgen_gwas(G, pheno[intersect(c("#FID", "IID", "QT"), names(pheno))], covar = pca$x)
t_qt <- proc.time()[["elapsed"]] - t0
t0 <- proc.time()[["elapsed"]]
bt <- statgen_gwas(G, pheno[intersect(c("#FID", "IID", "BT"), names(pheno))], covar = pca$x,
                   family = "logistic")
t_bt <- proc.time()[["elapsed"]] - t0
print(qt, n = 3)
cat(sprintf("linear: %.2f s\n\n", t_qt))
print(bt, n = 3)
cat(sprintf("logistic with Firth fallback: %.2f s\n", t_bt))
out <- statgen_write_glm(qt, file.path(out_dir, "gwas"))
cat("plink2-layout result files:", paste(c(out, statgen_write_glm(bt, file.path(out_dir, "gwas"))),
                                         collapse = ", "), "\n")
png_path <- file.path(out_dir, if (real) "gwas_manhattan.png" else "gwas_manhattan_GENERATED.png")
grDevices::png(png_path, width = 1200, height = 900, res = 110)
graphics::par(mfrow = c(2, 1), mar = c(4, 4.5, 3, 1))
plot(qt)
plot(bt)
invisible(grDevices::dev.off())
cat("Wrote", png_path, "\n")
