# ALP (issue 5): lossless compression of doubles (fmalloc_alp) on decimal
# data, where it should win, and on model-like weights (float32-representable
# N(0, 0.02) values), where it is expected to lose. For each data set: bits
# per value, encode and decode speed (MB/s of dense doubles), and the time of
# X %*% B and crossprod(X, C) (10 right-hand columns) through the fused "alp"
# backend, through the reference path (backend switched off: decode bounded
# panels, then BLAS dgemm), and on the dense f64 matrix with R's BLAS, with
# ratios to the dense time (> 1 means slower than dense). Physical bound
# printed beside them: GFLOP/s of the dense product.
# Same machine, same BLAS, one thread; median of BENCH_REPS (default 3)
# after a warm-up. BENCH_ALP_SCALE (default 1) scales the row counts, for a
# quick check. Writes bench/results/alp.csv. Data is generated.
suppressPackageStartupMessages(library(Rfmalloc))

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", args[grep("^--file=", args)])
root <- normalizePath(file.path(dirname(script), ".."))
reps <- as.integer(Sys.getenv("BENCH_REPS", "3"))
scale <- as.numeric(Sys.getenv("BENCH_ALP_SCALE", "1"))
options(fmalloc.progress = FALSE)

med_time <- function(f) {
  f()
  stats::median(vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], 0))
}

as_f32 <- function(v) readBin(writeBin(v, raw(), size = 4), "double", size = 4, n = length(v))

set.seed(2023)
sets <- list(
  list(name = "prices_2dp", what = "lognormal prices rounded to 2 decimals", n = 2e6, p = 10,
       gen = function(n) round(exp(stats::rnorm(n, 4, 1)), 2)),
  list(name = "sensor_1dp", what = "temperatures N(15, 8) rounded to 1 decimal", n = 2e6, p = 10,
       gen = function(n) round(stats::rnorm(n, 15, 8), 1)),
  list(name = "weights_f32", what = "float32-representable N(0, 0.02) weights", n = 2048, p = 2048,
       gen = function(n) as_f32(stats::rnorm(n, 0, 0.02)))
)

backing <- tempfile(fileext = ".fm")
rt <- open_fmalloc(backing, size_gb = 2, mode = "scratch")
on.exit({ cleanup_fmalloc(rt); unlink(backing) }, add = TRUE)
rows <- list()
for (s in sets) {
  n <- if (s$name == "weights_f32") s$n else max(1024, round(s$n * scale))
  p <- s$p
  x <- matrix(s$gen(n * p), n, p)
  mb <- n * p * 8 / 2^20
  A <- NULL
  t_enc <- med_time(function() A <<- fmalloc_alp(x, rt))
  stopifnot(identical(as.matrix(A), x))
  info <- fmalloc_alp_info(A)
  t_dec <- med_time(function() as.matrix(A))
  B <- matrix(stats::rnorm(p * 10), p, 10)
  C <- matrix(stats::rnorm(n * 10), n, 10)
  Rfmalloc:::.alp_backend(TRUE)
  xb_dense <- med_time(function() x %*% B)
  xb_alp <- med_time(function() A %*% B)
  stopifnot(fmalloc_last_backend() == "alp", isTRUE(all.equal(A %*% B, x %*% B, tolerance = 1e-12)))
  xtb_dense <- med_time(function() crossprod(x, C))
  xtb_alp <- med_time(function() crossprod(A, C))
  stopifnot(isTRUE(all.equal(crossprod(A, C), crossprod(x, C), tolerance = 1e-12)))
  Rfmalloc:::.alp_backend(FALSE)
  xb_ref <- med_time(function() A %*% B)
  xtb_ref <- med_time(function() crossprod(A, C))
  stopifnot(fmalloc_last_backend() == "reference")
  Rfmalloc:::.alp_backend(TRUE)
  flops <- 2 * as.double(n) * p * 10
  rows[[s$name]] <- data.frame(
    data = s$name, n = n, p = p, dense_mb = mb,
    bits_per_value = info$bits_per_value, compression = 64 / info$bits_per_value,
    exceptions_pct = 100 * info$exceptions / (as.double(n) * p),
    raw_vectors_pct = 100 * info$raw_vectors / max(1, info$vectors),
    encode_s = t_enc, encode_mbps = mb / t_enc, decode_s = t_dec, decode_mbps = mb / t_dec,
    xb_dense_s = xb_dense, xb_alp_s = xb_alp, xb_ref_s = xb_ref,
    xb_alp_over_dense = xb_alp / xb_dense, xb_ref_over_dense = xb_ref / xb_dense,
    xtb_dense_s = xtb_dense, xtb_alp_s = xtb_alp, xtb_ref_s = xtb_ref,
    xtb_alp_over_dense = xtb_alp / xtb_dense, xtb_ref_over_dense = xtb_ref / xtb_dense,
    dense_gflops_xb = flops / xb_dense / 1e9, dense_gflops_xtb = flops / xtb_dense / 1e9,
    blas = basename(extSoftVersion()[["BLAS"]]), description = s$what)
  rm(x, A, C)
  invisible(gc())
}
res <- do.call(rbind, rows)
rownames(res) <- NULL

cat(sprintf("\n== ALP: bits per value and codec speed (median of %d) ==\n", reps))
print(format(data.frame(data = res$data, n = res$n, p = res$p,
                        bits_per_value = sprintf("%.2f", res$bits_per_value),
                        compression = sprintf("%.2fx", res$compression),
                        exceptions = sprintf("%.3f%%", res$exceptions_pct),
                        raw_vectors = sprintf("%.1f%%", res$raw_vectors_pct),
                        encode = sprintf("%.0f MB/s", res$encode_mbps),
                        decode = sprintf("%.0f MB/s", res$decode_mbps))), row.names = FALSE)
cat("\n== ALP: products with 10 right-hand columns, seconds (ratio to dense f64) ==\n")
fmt <- function(t, r) sprintf("%.3f (%.2fx)", t, r)
print(format(data.frame(data = res$data,
                        `X %*% B dense` = sprintf("%.3f", res$xb_dense_s),
                        `alp fused` = fmt(res$xb_alp_s, res$xb_alp_over_dense),
                        `reference` = fmt(res$xb_ref_s, res$xb_ref_over_dense),
                        `crossprod dense` = sprintf("%.3f", res$xtb_dense_s),
                        `alp fused ` = fmt(res$xtb_alp_s, res$xtb_alp_over_dense),
                        `reference ` = fmt(res$xtb_ref_s, res$xtb_ref_over_dense),
                        check.names = FALSE)), row.names = FALSE)
cat(sprintf("bound: dense dgemm %s GFLOP/s (X %%*%% B), %s GFLOP/s (crossprod); BLAS: %s\n",
            paste(sprintf("%.2f", res$dense_gflops_xb), collapse = "/"),
            paste(sprintf("%.2f", res$dense_gflops_xtb), collapse = "/"), res$blas[1]))
utils::write.csv(res, file.path(root, "bench", "results", "alp.csv"), row.names = FALSE)
cat("wrote bench/results/alp.csv\n")
