# P6 (issue 5): BLAS crossprod on a mapped fmalloc double matrix already in
# the page cache, against the same matrix on the heap. The mapped matrix is
# an ALTREP vector whose data pointer lies in the mapping, so R hands BLAS
# the same kind of pointer; the ratio heap time / mapped time should be about
# 1 (goal >= 0.95). Physical bound printed beside it: GFLOP/s of a plain
# dgemm of the same shape (crossprod(A, B), A and B distinct n x p heap
# matrices; bench/lib.R). Same machine, same BLAS, one run; median of
# BENCH_REPS (default 5) after a warm-up. Writes bench/results/p6_crossprod.csv.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages(library(Rfmalloc))

root <- bench_root()
reps <- bench_env_int("BENCH_REPS", 5L)
n <- bench_env_int("BENCH_P6_N", 40000L)
p <- bench_env_int("BENCH_P6_P", 400L)

backing <- tempfile(fileext = ".fm")
rt <- open_fmalloc(backing, size_gb = 1 + ceiling(n * p * 8 / 2^30), mode = "scratch")
on.exit({ cleanup_fmalloc(rt); unlink(backing) }, add = TRUE)
set.seed(1)
Xm <- create_fmalloc_matrix("double", n, p, runtime = rt)
Xm[] <- stats::rnorm(n * p)          # written through the mapping: pages resident
Xh <- Xm[, , drop = FALSE]           # a heap copy with the same values
stopifnot(fmalloc_is_mapped(Xm), !fmalloc_is_mapped(Xh), identical(dim(Xh), dim(Xm)))

t_heap <- as.numeric(bench_time(function() crossprod(Xh), reps))
t_map <- as.numeric(bench_time(function() crossprod(Xm), reps))
stopifnot(identical(crossprod(Xm), crossprod(Xh)))
# the bound: crossprod(A, B) of two distinct n x p heap matrices
gemm <- bench_dgemm_gflops(n, p, p, "crossprod", cap_bytes = 2 * 8 * as.double(n) * p, reps = reps)

flops_syrk <- as.double(n) * p * (p + 1)   # dsyrk: n p (p + 1) flops
res <- data.frame(n = n, p = p, mb = n * p * 8 / 2^20,
                  heap_s = t_heap, mapped_s = t_map, ratio_heap_over_mapped = t_heap / t_map,
                  heap_gflops = flops_syrk / t_heap / 1e9, mapped_gflops = flops_syrk / t_map / 1e9,
                  dgemm_bound_gflops = as.numeric(gemm),
                  blas = basename(extSoftVersion()[["BLAS"]]))
cat(sprintf("\n== P6: crossprod(X), X %d x %d doubles (%.0f MB), median of %d ==\n", n, p, res$mb, reps))
cat(sprintf("heap %.3f s (%.2f GFLOP/s)   mapped %.3f s (%.2f GFLOP/s)   heap/mapped %.3f (goal >= 0.95)\n",
            t_heap, res$heap_gflops, t_map, res$mapped_gflops, res$ratio_heap_over_mapped))
cat(sprintf("bound: plain dgemm of the same shape %.2f GFLOP/s (BLAS: %s)\n", res$dgemm_bound_gflops, res$blas))
bench_write_csv(root, res, "p6_crossprod.csv")
