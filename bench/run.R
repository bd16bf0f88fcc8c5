# make bench: us against peers on identical input, printing ratios.
# B1  PCA (k = 10) of the 1000 Genomes .bed (autosomes, MAF >= 0.05) against
#     plink2 --pca 10 (exact) and --pca approx 10, same threads (2).
# B2  allele frequencies over the same .bed against plink2 --freq.
# Heavier benchmarks at out-of-core scale live in issue 5.
suppressPackageStartupMessages(library(Rfmalloc))
args <- commandArgs(trailingOnly = FALSE)
root <- normalizePath(file.path(dirname(sub("^--file=", "", args[grep("^--file=", args)])), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
prefix <- file.path(fixtures, "genotypes", "1kg_phase3_subset", "1kg_bi")
if (!file.exists(paste0(prefix, ".bed"))) {
  cat("bench: fixtures absent (", fixtures, "); nothing to compare on.\n", sep = "")
  quit(status = 0)
}
if (!nzchar(Sys.which("plink2"))) stop("bench needs plink2 (make setup installs it)")

time_it <- function(f, reps = 3) {
  t <- vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], numeric(1))
  stats::median(t)
}
plink2 <- function(...) {
  out <- tempfile("bench_plink2_")
  system2("plink2", c("--bfile", prefix, ..., "--threads", "2", "--out", out), stdout = FALSE,
          stderr = FALSE)
}

G <- fmalloc_bed_open(prefix)
af <- fmalloc_allele_freq(G)
X <- fmalloc_select(G, which(af$chr %in% as.character(1:22) & af$maf >= 0.05))

rows <- list()
t_us <- time_it(function() suppressMessages(fmalloc_pca(X, k = 10, scale = "binomial")))
t_exact <- time_it(function() plink2("--autosome", "--maf", "0.05", "--pca", "10"))
t_approx <- time_it(function() plink2("--autosome", "--maf", "0.05", "--pca", "approx", "10"))
rows[[1]] <- data.frame(bench = "B1 PCA k=10 vs plink2 exact", ours_s = t_us, peer_s = t_exact)
rows[[2]] <- data.frame(bench = "B1 PCA k=10 vs plink2 approx", ours_s = t_us, peer_s = t_approx)
t_us <- time_it(function() fmalloc_allele_freq(G))
t_peer <- time_it(function() plink2("--freq"))
rows[[3]] <- data.frame(bench = "B2 allele freq vs plink2 --freq", ours_s = t_us, peer_s = t_peer)
res <- do.call(rbind, rows)
res$ratio <- res$ours_s / res$peer_s
cat(sprintf("Input: %s (%d samples x %d variants; PCA on %d)\n", prefix, nrow(G), ncol(G), ncol(X)))
print(format(res, digits = 3), row.names = FALSE)
cat("ratio = our time / peer time (median of 3; plink2 times include its process start and file parsing)\n")
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE)
utils::write.csv(res, file.path(root, "bench", "results", "foundation.csv"), row.names = FALSE)
