# tools/oracle-ldpred2.R: bigsnpr's LDpred2 on the fixture, saved as the
# reference values of RfmallocStatgen's tests/testthat/test-ldpred2.R.
#
# Command (from the repository root, after `make install`; bigsnpr 1.12.21
# from CRAN in /work/oracle-lib, an install of about 18 minutes):
#   RFMALLOC_FIXTURES=../shared/fixtures R_LIBS=build/rlib:/work/oracle-lib \
#     Rscript tools/oracle-ldpred2.R
# writes packages/RfmallocStatgen/tests/testthat/ref/ldpred2-bigsnpr.rds.
#
# Pipeline (tests/testthat/helper-ldpred2.R, sourced here, so that the tests
# rebuild the same inputs): the 1kg fixture's samples with a QT value split
# in halves (seed 20261202); the GWAS of QT with fmalloc_pca's 10 PCs on the
# training half by statgen_gwas() (the same summary statistics for both:
# bigsnpr reads them matched to the LD, flipped alleles negated, by our
# matching); the LD matrix of those variants on the training half within
# 1000 kb (fixture_corr(): cor() of the training half, by statgen_ld(samples
# =) since 2026-12-03; the ref was made with cor() in R, equal within 1e-13).
# h2 = 0.4: the simulated phenotype's genetic share (var(g) = 0.4 of a variance near 1; fixture README), used
# for inf, for the grid and as auto's h2_init (LD score regression is left
# out: the issue reports 1.49 from bigsnpr on this fixture).
#   inf:  snp_ldpred2_inf(corr, df_beta, h2)
#   grid: p in {0.001, 0.01, 0.1} x sparse in {FALSE, TRUE}, h2, burn_in 50,
#         num_iter 100 (bigsnpr's defaults), seeds 1 and 2 (the second to
#         measure bigsnpr against itself)
#   auto: 16 chains, p_init seq_log(1e-4, 0.2, 16), burn_in 500, num_iter 1000,
#         allow_jump_sign = FALSE, shrink_corr = 0.95 (the tutorial's), seeds
#         1 and 2; the tutorial's chain filter (range of corr_est above
#         0.95 of its 95% quantile), means over kept chains (16 chains of
#         1000 sweeps: with 8 of 500, bigsnpr's h2 moved by 0.066 between
#         seeds, more than the tests' +-0.05).
# Effects are stored as f32 bytes (inf) or int16 scaled by max |x| (grid,
# auto: compared by correlation), xz-compressed; so are the summary
# statistics given to bigsnpr (matched to the LD, f32), which the tests
# read, so that a later change of the GWAS or PCA code shows as one failing
# check of the pipeline rather than as differences from bigsnpr.
suppressPackageStartupMessages({
  library(bigsnpr)
  library(RfmallocStatgen)
})
stopifnot(packageVersion("bigsnpr") >= "1.12")
source("packages/RfmallocStatgen/tests/testthat/helper-ldpred2.R")
options(bigstatsr.check.parallel.blas = FALSE)

f <- ldp_fixture()
d <- RfmallocStatgen:::.ld_match(f$gwas, f$ld, NULL, quiet = TRUE)
df_beta <- data.frame(beta = d$beta, beta_se = d$beta_se, n_eff = d$n_eff)
corr <- as_SFBM(ldp_as_dgc(f$ld), tempfile(), compact = TRUE)
h2 <- 0.4

# PRS correlation with QT on the other half
G_test <- f$X[f$split$test, f$cols]
score_r <- function(b) drop(stats::cor(G_test %*% b, f$qt[f$split$test]))

t_inf <- system.time(beta_inf <- snp_ldpred2_inf(corr, df_beta, h2 = h2))[["elapsed"]]

grid <- expand.grid(p = c(0.001, 0.01, 0.1), h2 = h2, sparse = c(FALSE, TRUE))
set.seed(1)
t_grid <- system.time(bg1 <- snp_ldpred2_grid(corr, df_beta, grid))[["elapsed"]]
set.seed(2)
bg2 <- snp_ldpred2_grid(corr, df_beta, grid)
grid$self_cor <- sapply(seq_len(nrow(grid)), function(k) stats::cor(bg1[, k], bg2[, k]))

run_auto <- function(seed) {
  set.seed(seed)
  t <- system.time(a <- snp_ldpred2_auto(corr, df_beta, h2_init = h2,
                                         vec_p_init = seq_log(1e-4, 0.2, length.out = 16),
                                         burn_in = 500, num_iter = 1000,
                                         allow_jump_sign = FALSE, shrink_corr = 0.95))
  range <- sapply(a, function(x) diff(range(x$corr_est)))
  keep <- which(range > 0.95 * stats::quantile(range, 0.95, na.rm = TRUE))
  list(chains = data.frame(p_est = sapply(a, `[[`, "p_est"), h2_est = sapply(a, `[[`, "h2_est"),
                           range = range, keep = seq_along(a) %in% keep),
       p = mean(sapply(a[keep], `[[`, "p_est")), h2 = mean(sapply(a[keep], `[[`, "h2_est")),
       beta = rowMeans(sapply(a[keep], `[[`, "beta_est")), time = t[["elapsed"]])
}
a1 <- run_auto(1)
a2 <- run_auto(2)

ref <- list(
  bigsnpr = as.character(packageVersion("bigsnpr")), h2 = h2, m = nrow(df_beta),
  ids = d$ID[c(1, nrow(d))], n_flipped = sum(d$flipped), train_n = length(f$split$train),
  sumstats = list(beta = ldp_f32(d$beta), beta_se = ldp_f32(d$beta_se),
                  n_eff = as.integer(d$n_eff)),
  inf = ldp_f32(beta_inf),
  grid = grid, grid_beta = lapply(seq_len(nrow(grid)), function(k) ldp_i16(bg1[, k])),
  auto = a1[c("chains", "p", "h2")], auto_beta = ldp_i16(a1$beta),
  auto_seed2 = a2[c("chains", "p", "h2")],
  auto_self_cor = stats::cor(a1$beta, a2$beta),
  score_r = c(inf = score_r(beta_inf), grid = apply(bg1, 2, score_r), auto = score_r(a1$beta)),
  time = c(inf = t_inf, grid = t_grid, auto = a1$time))
dir.create("packages/RfmallocStatgen/tests/testthat/ref", showWarnings = FALSE)
out <- "packages/RfmallocStatgen/tests/testthat/ref/ldpred2-bigsnpr.rds"
saveRDS(ref, out, compress = "xz")
str(ref[c("h2", "m", "n_flipped", "train_n", "grid", "auto", "auto_seed2", "auto_self_cor",
          "score_r", "time")])
cat(sprintf("wrote %s (%.0f kB)\n", out, file.size(out) / 1024))
