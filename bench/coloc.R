# coloc.R (issue 16): RfmallocStatgen::statgen_coloc_signals() against
# coloc's per-pair coloc.bf_bf() (CRAN coloc, installed by make setup) on
# the same generated input, in one run; the ratio is coloc's time / ours.
#
# Input (generated, not real data; seed 1): log Bayes factors of 500
# signals per trait over the same 2,000 SNPs (background N(-0.5, 0.7^2),
# each signal with a peak of 4 to 18 at a random SNP, 50 pairs sharing one).
# Ours: all 250,000 pairs in one call (median of BENCH_REPS after a warm-up).
# coloc: coloc.bf_bf(trim_by_posterior = FALSE) loops over pairs in R; it is
# timed on the first 20 x 10 signals (200 pairs) and its time per pair
# extrapolated to 250,000 pairs (said in the row), after checking that its
# posteriors equal ours there (largest difference printed and written).
# Goal (issue 16): ours <= 5 s. Bound printed: GFLOP/s of R's dgemm on the
# product's shape (500 x 2,000 times 2,000 x 500), the work of the kernel's
# coupling term. Writes bench/results/coloc.csv.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages({library(Rfmalloc); library(RfmallocStatgen)})
if (!requireNamespace("coloc", quietly = TRUE))
  stop("bench coloc: the R package coloc is not installed (make setup installs it)")

root <- bench_root()
reps <- bench_reps()
n1 <- 500L
n2 <- 500L
m <- 2000L
sub1 <- 20L
sub2 <- 10L

set.seed(1)
snp <- paste0("rs", seq_len(m))
gen <- function(n) {
  x <- matrix(stats::rnorm(n * m, -0.5, 0.7), n, m, dimnames = list(paste0("s", seq_len(n)), snp))
  x[cbind(seq_len(n), sample.int(m, n, replace = TRUE))] <- stats::runif(n, 4, 18)
  x
}
bf1 <- gen(n1)
bf2 <- gen(n2)
bf2[1:50, ] <- bf1[1:50, ] + stats::rnorm(50 * m, 0, 0.2)

t_ours <- bench_time(function() statgen_coloc_signals(bf1, bf2), reps)
ours <- statgen_coloc_signals(bf1, bf2)

run_coloc <- function() coloc::coloc.bf_bf(bf1[seq_len(sub1), ], bf2[seq_len(sub2), ],
                                           trim_by_posterior = FALSE)
t_sub <- bench_time(run_coloc, reps = 1L)
ref <- run_coloc()$summary
pp <- paste0("PP.H", 0:4, ".abf")
mine <- as.data.frame(ours)
mine <- mine[mine$idx1 <= sub1 & mine$idx2 <= sub2, ]
diff <- max(abs(as.matrix(mine[pp]) - as.matrix(ref[, pp, with = FALSE])))
per_pair <- as.numeric(t_sub) / (sub1 * sub2)
t_coloc <- per_pair * n1 * n2

gf <- bench_dgemm_gflops(m, n1, n2, "crossprod")
blas <- tryCatch(basename(extSoftVersion()[["BLAS"]]), error = function(e) "?")
input <- sprintf("generated log BFs %d x %d signals, %d SNPs", n1, n2, m)
res <- data.frame(
  input = input, what = "all signal pairs",
  tool = c("fmalloc statgen_coloc_signals",
           sprintf("coloc.bf_bf (timed on %d pairs, extrapolated)", sub1 * sub2)),
  threads = 1L, time_s = c(as.numeric(t_ours), t_coloc),
  per_pair_ms = c(as.numeric(t_ours) / (n1 * n2), per_pair) * 1e3,
  peer_over_ours = c(t_coloc / as.numeric(t_ours), NA), goal = c("<= 5 s", NA),
  max_abs_diff_pp = c(diff, NA), exact_pairs = c(sum(ours$exact), NA))
print(res[c("tool", "time_s", "per_pair_ms", "peer_over_ours")], row.names = FALSE, digits = 4)
cat(sprintf("ours: %.3f s for %s pairs (goal <= 5 s); coloc.bf_bf: %.2f ms a pair, %.1f min extrapolated; ratio %.0fx\n",
            as.numeric(t_ours), format(n1 * n2, big.mark = ","), per_pair * 1e3, t_coloc / 60,
            t_coloc / as.numeric(t_ours)))
cat(sprintf("largest |PP ours - PP coloc| over the %d timed pairs: %.2g; pairs recomputed exactly: %d\n",
            sub1 * sub2, diff, as.integer(sum(ours$exact))))
cat(sprintf("bound: R's dgemm (%s) %.2f GFLOP/s on %s: the coupling product alone takes >= %.3f s\n",
            blas, gf, attr(gf, "shape"), 2 * n1 * n2 * m / gf / 1e9))
bench_write_csv(root, res, "coloc.csv")
