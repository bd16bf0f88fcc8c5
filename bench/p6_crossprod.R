# P6 (issue 5): BLAS crossprod on a mapped fmalloc double matrix already in
# the page cache, against the same matrix on the heap. The mapped matrix is
# an ALTREP vector whose data pointer lies in the mapping, so R hands BLAS
# the same kind of pointer; the ratio heap time / mapped time should be about
# 1 (goal >= 0.95). Physical bound printed beside it: GFLOP/s of a plain
# dgemm of the same shape (crossprod(X, Y) with Y a distinct heap copy).
# Same machine, same BLAS, one run; median of BENCH_REPS (default 5) after a
# warm-up. Writes bench/results/p6_crossprod.csv.
suppressPackageStartupMessages(library(Rfmalloc))

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", args[grep("^--file=", args)])
root <- normalizePath(file.path(dirname(script), ".."))
reps <- as.integer(Sys.getenv("BENCH_REPS", "5"))
n <- as.integer(Sys.getenv("BENCH_P6_N", "40000"))
p <- as.integer(Sys.getenv("BENCH_P6_P", "400"))

med_time <- function(f) {
  f()
  stats::median(vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], 0))
}

backing <- tempfile(fileext = ".fm")
rt <- open_fmalloc(backing, size_gb = 1 + ceiling(n * p * 8 / 2^30), mode = "scratch")
on.exit({ cleanup_fmalloc(rt); unlink(backing) }, add = TRUE)
set.seed(1)
Xm <- create_fmalloc_matrix("double", n, p, runtime = rt)
Xm[] <- stats::rnorm(n * p)          # written through the mapping: pages resident
Xh <- Xm[, , drop = FALSE]           # a heap copy with the same values
stopifnot(fmalloc_is_mapped(Xm), !fmalloc_is_mapped(Xh), identical(dim(Xh), dim(Xm)))
Yh <- Xh + 0                          # a distinct heap operand for the dgemm bound

t_heap <- med_time(function() crossprod(Xh))
t_map <- med_time(function() crossprod(Xm))
t_gemm <- med_time(function() crossprod(Xh, Yh))
stopifnot(identical(crossprod(Xm), crossprod(Xh)))

flops_syrk <- as.double(n) * p * (p + 1)   # dsyrk: n p (p + 1) flops
flops_gemm <- 2 * as.double(n) * p * p
res <- data.frame(n = n, p = p, mb = n * p * 8 / 2^20,
                  heap_s = t_heap, mapped_s = t_map, ratio_heap_over_mapped = t_heap / t_map,
                  heap_gflops = flops_syrk / t_heap / 1e9, mapped_gflops = flops_syrk / t_map / 1e9,
                  dgemm_bound_gflops = flops_gemm / t_gemm / 1e9,
                  blas = basename(extSoftVersion()[["BLAS"]]))
cat(sprintf("\n== P6: crossprod(X), X %d x %d doubles (%.0f MB), median of %d ==\n", n, p, res$mb, reps))
cat(sprintf("heap %.3f s (%.2f GFLOP/s)   mapped %.3f s (%.2f GFLOP/s)   heap/mapped %.3f (goal >= 0.95)\n",
            t_heap, res$heap_gflops, t_map, res$mapped_gflops, res$ratio_heap_over_mapped))
cat(sprintf("bound: plain dgemm of the same shape %.2f GFLOP/s (BLAS: %s)\n", res$dgemm_bound_gflops, res$blas))
utils::write.csv(res, file.path(root, "bench", "results", "p6_crossprod.csv"), row.names = FALSE)
cat("wrote bench/results/p6_crossprod.csv\n")
