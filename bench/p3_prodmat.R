# P3 (issue 5): X %*% B on 2-bit hardcalls, B with 10 standard normal
# columns, against bigsnpr's big_prodMat(G, B) on the FBM.code256 that
# snp_readBed() makes of the same .bed (snp_attach), with the same threads
# (BENCH_THREADS, default 2, given to big_prodMat as ncores; with more than
# one core bigstatsr starts a cluster of workers per call, so a row with
# ncores = 1 is added for reference). Goal: ours >= 2x faster than
# big_prodMat at the same threads. Physical bound beside it: GFLOP/s of a plain dgemm of the
# same shape (n x m times m x 10, R's BLAS, bench/lib.R).
#
# Input: a generated .bed of BENCH_N x BENCH_M (default 5,000 x 200,000;
# bench/gen_bed.R) without missing calls, so both sides compute the same
# numbers with no imputation: bigsnpr decodes a missing call as NA and our
# product propagates NA, so on data with 1% missing calls every row of both
# products would be NA. The FBM (n x m bytes) is made once and cached next to
# the .bed; its conversion time is reported when it was made in this run.
# Our threads: fmalloc_threads(BENCH_THREADS); a row with the reference
# path (fmalloc_with_backend("reference", ...)) shows what the fused
# backend gains. Check: the two products agree to 1e-8 relative (max abs difference over
# max abs value). Median of BENCH_REPS (default 3) after a warm-up, in this
# process, inputs in the page cache. bigsnpr is installed by
# tools/bench-setup.sh (make bench). Writes bench/results/p3_prodmat.csv.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages(library(Rfmalloc))
if (!requireNamespace("bigsnpr", quietly = TRUE))
  stop("bench p3: bigsnpr is not installed; run tools/bench-setup.sh (make bench does)")

root <- bench_root()
reps <- bench_reps()
threads <- bench_threads()
n <- bench_env_int("BENCH_N", 5000L)
m <- bench_env_int("BENCH_M", 200000L)
k <- 10L

prefix <- bench_gen_bed(root, n, m, missing = 0)
bed <- paste0(prefix, ".bed")
rds <- paste0(prefix, "_bigsnpr.rds")
t_convert <- NA_real_
if (!file.exists(rds)) {
  unlink(paste0(prefix, "_bigsnpr.bk"))
  t_convert <- system.time(bigsnpr::snp_readBed(bed, backingfile = paste0(prefix, "_bigsnpr")))[["elapsed"]]
}
G <- bigsnpr::snp_attach(rds)$genotypes
ours <- bench_fmalloc_setup(threads)
X <- fmalloc_bed_open(prefix)
stopifnot(identical(dim(G), dim(X)))

set.seed(1)
B <- matrix(stats::rnorm(as.double(m) * k), m, k)
cat_rate <- bench_cat_rate(bed, reps)
y_ours <- NULL
t_ours <- bench_time(function() y_ours <<- X %*% B, reps)
t_ref <- bench_time(function() fmalloc_with_backend("reference", X %*% B), reps)
y_big <- NULL
t_big <- bench_time(function() y_big <<- bigstatsr::big_prodMat(G, B, ncores = threads), reps)
t_big1 <- if (threads > 1L) bench_time(function() bigstatsr::big_prodMat(G, B, ncores = 1L), reps)

rel <- max(abs(unname(y_ours) - y_big)) / max(abs(y_big))
if (!is.finite(rel) || rel > 1e-8)
  stop(sprintf("bench p3: X %%*%% B and big_prodMat differ by %g relative (limit 1e-8)", rel))
gemm <- bench_dgemm_gflops(n, m, k, "prod", reps = reps)

flops <- 2 * as.double(n) * m * k
row <- function(tool, what, t, thr) {
  s <- as.numeric(t)
  data.frame(n = n, m = m, k = k, tool = tool, what = what, threads = thr, time_s = s,
             cpu_s = attr(t, "cpu"), gflops = flops / s / 1e9,
             bigsnpr_time_over_ours = as.numeric(t_big) / s, stringsAsFactors = FALSE)
}
res <- rbind(row("fmalloc", paste0("X %*% B, bed2 (.bed mapped), ", ours), t_ours, threads),
             row("fmalloc reference path", "decode panels + dgemm (for comparison)", t_ref, threads),
             row("bigsnpr", "big_prodMat(G, B), FBM.code256", t_big, threads))
if (!is.null(t_big1)) {
  r1 <- row("bigsnpr", "big_prodMat(G, B), FBM.code256", t_big1, 1L)
  r1$bigsnpr_time_over_ours <- NA
  res <- rbind(res, r1)
}
res$rel_diff <- rel
res$convert_s <- ifelse(res$tool == "bigsnpr", t_convert, NA)
res$dgemm_bound_gflops <- as.numeric(gemm)
res$bed_cat_gb_per_s <- cat_rate / 1e9
res$goal_met <- ifelse(res$tool == "fmalloc", res$bigsnpr_time_over_ours >= 2, NA)
res$bigsnpr_time_over_ours[res$tool != "fmalloc"] <- NA
bench_print(sprintf("P3: X %%*%% B, X %d x %d hardcalls, B %d columns, median of %d (goal: ours >= 2x faster)",
                    n, m, k, reps), res)
cat(sprintf("products agree to %.2g relative; dgemm bound: %s at %.2f GFLOP/s; cat of the .bed %.2f GB/s\n",
            rel, attr(gemm, "shape"), as.numeric(gemm), cat_rate / 1e9))
if (!is.na(t_convert)) cat(sprintf("snp_readBed (one-time conversion to FBM.code256): %.1f s\n", t_convert))
bench_write_csv(root, res, "p3_prodmat.csv")
