# ldpred2.R (issue 16): RfmallocStatgen::statgen_ldpred2_auto() against
# bigsnpr::snp_ldpred2_auto() (CRAN 1.12.21) on the same LD band and summary
# statistics with the same threads (BENCH_THREADS, default 2), one run each
# (the issue's rule); ratios are bigsnpr's time / ours (goal >= 2).
#
# Input: the generated 5,000 x 200,000 .bed of bench/gen_bed.R (1 % missing
# calls). Its .bim puts variant i at position i on chr 1, so a 1000 kb window
# would hold every variant: this bench links the .bed/.fam beside a .bim with
# variant i at 15,000 * i bp (a realistic spacing: about 133 variants a
# window of 1000 kb, 26.6 million stored entries). The band is built once by
# statgen_ld(window = 1000 kb, missing calls mean-imputed, f64) in one
# function (bench_band) and converted for bigsnpr (dgCMatrix -> as_SFBM,
# compact). Summary statistics: statgen_gwas() (linear, A1 = ALT, the
# band's allele) of a phenotype simulated from 300 causal variants with
# h2 = 0.5 (seed 1), adjusted for the 4 populations (without them the
# stratification inflates every statistic and both tools estimate h2 near
# 16; with 2,000 causal variants and h2 0.3 there is too little signal in
# 5,000 samples, and the chains of both tools collapse to h2 near 0).
# Model settings (both): 4 chains, p_init log-spaced from 1e-4 to 0.2,
# h2_init 0.3, burn_in 500, num_iter 200 (bigsnpr's defaults),
# allow_jump_sign = FALSE, shrink 0.95 (its tutorial's), use_MLE TRUE.
# Checks printed: the two h2 and p estimates (means over kept chains).
# A second auto row runs ours on the same band stored as floats (f32: half
# the bytes of the values; bigsnpr stores doubles only); a third runs both
# on one thread and compares CPU seconds, which other load on a shared
# machine disturbs less than elapsed time.
# Physical bounds printed: the band's bytes (values f64 + row indices); per
# sweep, the bytes of the columns the sampler reads (one column per effect
# that changes: at most twice the expected number of nonzero effects, the
# sum of the posterior probabilities; at low polygenicity a sweep's time goes
# to the m conditional draws, which stream about 7 vectors of m doubles,
# 11 MB here, not to the band); and the FLOP/s of the band product
# y = R x (2 flops a stored entry) measured through statgen_ldpred2_inf's
# conjugate gradients (one product an iteration), with its bytes/s.
# Writes bench/results/ldpred2.csv.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages({library(Rfmalloc); library(RfmallocStatgen)})
if (!requireNamespace("bigsnpr", quietly = TRUE))
  stop("bench ldpred2: bigsnpr is not installed; run tools/bench-setup.sh (make bench does)")

root <- bench_root()
threads <- bench_threads()
ours <- bench_fmalloc_setup(threads)
options(fmalloc.progress = FALSE, bigstatsr.check.parallel.blas = FALSE)
n <- bench_env_int("BENCH_N", 5000L)
m <- bench_env_int("BENCH_M", 200000L)
work <- file.path(tempdir(), "ldpred2_bench")
dir.create(work, showWarnings = FALSE)

# CPU seconds (user + system of this process) of evaluating expr.
bench_cpu <- function(expr) {
  s <- system.time(expr, gcFirst = TRUE)
  s[["user.self"]] + s[["sys.self"]]
}

# The generated fileset with variants 15 kb apart.
prefix <- bench_gen_bed(root, n, m)
spaced <- file.path(work, "gen15kb")
file.symlink(paste0(prefix, ".bed"), paste0(spaced, ".bed"))
file.symlink(paste0(prefix, ".fam"), paste0(spaced, ".fam"))
bim <- utils::read.table(paste0(prefix, ".bim"), colClasses = "character")
bim$V4 <- format(15000 * seq_len(nrow(bim)), scientific = FALSE, trim = TRUE)
utils::write.table(bim, paste0(spaced, ".bim"), sep = "\t", quote = FALSE, row.names = FALSE,
                   col.names = FALSE)
X <- fmalloc_bed_open(paste0(spaced, ".bed"))

# The LD band (one function: statgen_ld, or another builder).
bench_band <- function(X) statgen_ld(X, window = 1000, unit = "kb", dtype = "f64")
t_band <- system.time(ld <- bench_band(X))[["elapsed"]]
nnz <- length(ld$rowidx)
band_bytes <- nnz * (8 + 4)
cat(sprintf("band: %d variants, %.1f M entries (%.0f MB), built in %.1f s\n", m, nnz / 1e6,
            band_bytes / 1e6, t_band))

# Summary statistics of a simulated phenotype (300 causal variants, h2 0.5).
set.seed(1)
causal <- sort(sample(m, 300))
G <- X[, causal]
G <- apply(G, 2, function(x) { x[is.na(x)] <- mean(x, na.rm = TRUE); (x - mean(x)) / sd(x) })
g <- drop(G %*% rnorm(300))
y <- sqrt(0.5) * g / sd(g) + rnorm(n, sd = sqrt(0.5))
rm(G)
pop <- data.frame(pop = factor(fmalloc_samples(X)$fid)) # the 4 populations of gen_bed.R
gw <- statgen_gwas(X, y, covar = pop, a1 = "alt")
p_init <- exp(seq(log(1e-4), log(0.2), length.out = 4))

t_ours <- system.time(fit <- statgen_ldpred2_auto(ld, gw, h2_init = 0.3, p_init = p_init,
                                                  burn_in = 500, num_iter = 200,
                                                  allow_jump_sign = FALSE, shrink = 0.95,
                                                  seed = 1, quiet = TRUE))[["elapsed"]]
t_inf <- system.time(inf <- statgen_ldpred2_inf(ld, gw, h2 = 0.3, quiet = TRUE))[["elapsed"]]
# the same band stored as floats (statgen_ld(dtype = "f32"): half the bytes
# of its values; bigsnpr stores doubles only)
ld32 <- statgen_ld(X, window = 1000, unit = "kb", dtype = "f32")
t_ours32 <- system.time(fit32 <- statgen_ldpred2_auto(ld32, gw, h2_init = 0.3, p_init = p_init,
                                                      burn_in = 500, num_iter = 200,
                                                      allow_jump_sign = FALSE, shrink = 0.95,
                                                      seed = 1, quiet = TRUE))[["elapsed"]]
rm(ld32)
# one thread, CPU seconds (robust to other load on the machine)
Rfmalloc::fmalloc_threads(1)
c_ours <- bench_cpu(statgen_ldpred2_auto(ld, gw, h2_init = 0.3, p_init = p_init, burn_in = 500,
                                         num_iter = 200, allow_jump_sign = FALSE, shrink = 0.95,
                                         seed = 1, quiet = TRUE))
Rfmalloc::fmalloc_threads(threads)

# bigsnpr on the same band and statistics
d <- RfmallocStatgen:::.ld_match(gw, ld, NULL, quiet = TRUE)
df_beta <- data.frame(beta = d$beta, beta_se = d$beta_se, n_eff = d$n_eff)
M <- Matrix::sparseMatrix(i = ld$rowidx + 1L, p = as.integer(ld$colptr), x = ld$values,
                          dims = c(m, m))
corr <- bigsnpr::as_SFBM(M, file.path(work, "corr"), compact = TRUE)
rm(M)
invisible(gc())
set.seed(1)
t_big <- system.time(big <- bigsnpr::snp_ldpred2_auto(
  corr, df_beta, h2_init = 0.3, vec_p_init = p_init, burn_in = 500, num_iter = 200,
  allow_jump_sign = FALSE, shrink_corr = 0.95, ncores = threads))[["elapsed"]]
t_big_inf <- system.time(bigsnpr::snp_ldpred2_inf(corr, df_beta, h2 = 0.3))[["elapsed"]]
set.seed(1)
c_big <- bench_cpu(bigsnpr::snp_ldpred2_auto(
  corr, df_beta, h2_init = 0.3, vec_p_init = p_init, burn_in = 500, num_iter = 200,
  allow_jump_sign = FALSE, shrink_corr = 0.95, ncores = 1))
# the band product alone: the core's inf on matched data, checks included
# (so a lower bound of the product's speed), over its products
t_prod <- system.time(raw <- .Call(RfmallocStatgen:::C_stg_ldpred2_inf,
                                   RfmallocStatgen:::.ld_parts(ld), d$beta, d$beta_se, d$n_eff,
                                   0.3, c(1, 1e-12, 1000)))[["elapsed"]]
range <- sapply(big, function(a) diff(range(a$corr_est)))
keep <- which(range > 0.95 * stats::quantile(range, 0.95, na.rm = TRUE))
big_h2 <- mean(sapply(big[keep], `[[`, "h2_est"))
big_p <- mean(sapply(big[keep], `[[`, "p_est"))

# physical bounds
sweeps <- 4 * 700
cols_per_sweep <- 2 * sum(fit$postp)
col_bytes <- band_bytes / m
prod_s <- t_prod / (raw[[2]] + 1)
res <- data.frame(
  task = c("auto, 4 chains x 700 sweeps (elapsed)", "auto, ours on the f32 band (elapsed)",
           "auto, 1 thread (CPU s)", "inf (CG vs MINRES, elapsed)"),
  ours_s = c(t_ours, t_ours32, c_ours, t_inf), bigsnpr_s = c(t_big, t_big, c_big, t_big_inf),
  ratio = c(t_big / t_ours, t_big / t_ours32, c_big / c_ours, t_big_inf / t_inf),
  h2_ours = c(fit$h2_est, fit32$h2_est, NA, NA), h2_bigsnpr = c(big_h2, big_h2, NA, NA),
  p_ours = c(fit$p_est, fit32$p_est, NA, NA), p_bigsnpr = c(big_p, big_p, NA, NA),
  band_MB = c(band_bytes, nnz * 8, band_bytes, band_bytes) / 1e6,
  MB_read_per_sweep = c(cols_per_sweep * col_bytes / 1e6, cols_per_sweep * col_bytes * 2 / 3 / 1e6,
                        NA, band_bytes / 1e6),
  sweeps_per_s = c(sweeps / t_ours, sweeps / t_ours32, sweeps / c_ours, NA),
  product_GFLOPs = c(NA, NA, NA, 2 * nnz / prod_s / 1e9),
  product_GBs = c(NA, NA, NA, band_bytes / prod_s / 1e9),
  threads = c(threads, threads, 1, threads), ours = ours)
bench_print(sprintf("LDpred2 on the generated %d x %d band within 1000 kb (15 kb spacing)", n, m), res)
cat(sprintf("inf: %d CG iterations; band product at most %.3f s (%.2f GFLOP/s, %.2f GB/s of the band)\n",
            as.integer(raw[[2]]), prod_s, 2 * nnz / prod_s / 1e9, band_bytes / prod_s / 1e9))
bench_write_csv(root, res, "ldpred2.csv")
