# scale.R (issue 19): PCA (k = 10) and a linear GWAS on the generated
# 5,000 x 200,000 .bed (bench/gen_bed.R), in one process with 1 and 2
# threads against 1 and 2 mirai daemons of one thread each (option
# fmalloc.parallel = "mirai"; the driver itself runs 1 thread). Each
# configuration is a fresh Rscript under /usr/bin/time -v: its wall times
# and the driver's peak RSS (the daemons are other processes). Speedup is
# the 1-thread process's time over the configuration's.
#
# Overhead per block: the same work with the blocks computed in the driver
# (option set, no daemons) against 1 daemon: (time with 1 daemon - time in
# the driver) / blocks sent, i.e. serializing a block's task and its
# result, dispatch, the daemon's unserialize and the driver's reduction.
# The bytes of a task (the b matrix of a PCA pass; the phenotypes,
# covariates and design of a GWAS block) are printed too.
#
# Checks: the results of 1 and 2 daemons are identical to those of the
# blocks computed in the driver (PCA sdev and rotation, GWAS rows), and
# agree with the unblocked process to rounding.
# Settings: PCA k = 10, oversample 10, tol 1e-4 (bench/p1_pca.R's), scale
# "binomial"; GWAS: one simulated quantitative phenotype, 10 standard normal
# covariates. Block size: option fmalloc.parallel_block's default (8192
# variants: 25 blocks per pass). Environment: BENCH_SCALE_M (variants,
# default 200000). Writes bench/results/scale.csv.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) && args[1] == "child") {
  # child: mode (serial | blocks | mirai), threads, daemons, prefix, out.rds
  suppressPackageStartupMessages({
    library(Rfmalloc)
    library(RfmallocStatgen)
  })
  mode <- args[2]
  threads <- as.integer(args[3])
  daemons <- as.integer(args[4])
  options(fmalloc.progress = FALSE)
  fmalloc_threads(threads)
  if (mode != "serial") options(fmalloc.parallel = "mirai")
  if (daemons > 0) {
    mirai::daemons(daemons)
    invisible(mirai::everywhere({
      library(Rfmalloc)
      fmalloc_threads(1)
    })[])
  }
  X <- fmalloc_bed_open(args[5])
  set.seed(1)
  fam <- fmalloc_samples(X)
  y <- data.frame(FID = fam$fid, IID = fam$iid, QT = rnorm(nrow(X)))
  cov <- data.frame(FID = fam$fid, IID = fam$iid, matrix(rnorm(nrow(X) * 10), nrow(X), 10))
  t_pca <- system.time(pca <- suppressMessages(fmalloc_pca(X, k = 10, scale = "binomial", tol = 1e-4)))[["elapsed"]]
  t_gwas <- system.time(gw <- suppressMessages(statgen_gwas(X, y, covar = cov)))[["elapsed"]]
  saveRDS(list(sdev = pca$sdev, rotation = pca$rotation, iterations = pca$iterations, gwas = gw), args[6])
  blocks <- ceiling(ncol(X) / 8192)
  # passes: the statistics, the iterations, the first and the final product
  cat("RESULT", t_pca, t_gwas, (pca$iterations + 3) * blocks, blocks, "\n")
  if (daemons > 0) mirai::daemons(0)
  quit(save = "no")
}

root <- normalizePath(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), ".."))
source(file.path(root, "bench", "lib.R"))
m <- bench_env_int("BENCH_SCALE_M", 200000L)
prefix <- bench_gen_bed(root, 5000L, m)
if (!requireNamespace("mirai", quietly = TRUE)) stop("bench scale: needs the CRAN package mirai (make setup installs it)")

configs <- data.frame(config = c("process, 1 thread", "process, 2 threads", "blocks in the driver, 1 thread",
                                 "1 daemon x 1 thread", "2 daemons x 1 thread"),
                      mode = c("serial", "serial", "blocks", "mirai", "mirai"),
                      threads = c(1L, 2L, 1L, 1L, 1L), daemons = c(0L, 0L, 0L, 1L, 2L))
outs <- file.path(tempdir(), sprintf("scale_%d.rds", seq_len(nrow(configs))))
rows <- lapply(seq_len(nrow(configs)), function(i) {
  cfg <- configs[i, ]
  cat(sprintf("bench scale: %s ...\n", cfg$config))
  r <- bench_run_rss(bench_rscript(), c(file.path(root, "bench", "scale.R"), "child", cfg$mode, cfg$threads,
                                        cfg$daemons, paste0(prefix, ".bed"), outs[i]), env = bench_child_env())
  v <- bench_result_line(r$output)
  if (r$status != 0 || is.null(v)) stop("bench scale: the child failed:\n", paste(utils::tail(r$output, 30), collapse = "\n"))
  data.frame(cfg, pca_s = v[1], gwas_s = v[2], pca_blocks = v[3], gwas_blocks = v[4], driver_peak_rss_mb = r$peak_rss_mb)
})
res <- do.call(rbind, rows)
res$pca_speedup <- res$pca_s[1] / res$pca_s
res$gwas_speedup <- res$gwas_s[1] / res$gwas_s

r <- lapply(outs, readRDS)
same <- function(a, b) identical(a$sdev, b$sdev) && identical(a$rotation, b$rotation) && identical(a$gwas, b$gwas)
stopifnot("1 daemon differs from the blocks in the driver" = same(r[[4]], r[[3]]),
          "2 daemons differ from the blocks in the driver" = same(r[[5]], r[[3]]))
cat(sprintf("checks: daemons identical to the blocks in the driver; against the unblocked process: sdev %.1e relative, GWAS P %.1e relative\n",
            max(abs(r[[3]]$sdev / r[[1]]$sdev - 1)),
            max(abs(r[[3]]$gwas$P / r[[1]]$gwas$P - 1), na.rm = TRUE)))

# overhead per block: 1 daemon against the same blocks in the driver
over_pca <- (res$pca_s[4] - res$pca_s[3]) / res$pca_blocks[4]
over_gwas <- (res$gwas_s[4] - res$gwas_s[3]) / res$gwas_blocks[4]
n <- 5000
task_pca <- 8 * n * 20 # b of a pass: n x (k + oversample) doubles
cat(sprintf("overhead per block (1 daemon - in the driver): PCA %.1f ms (task about %.1f MB: b, n x 20 doubles; result the same), GWAS %.1f ms\n",
            1000 * over_pca, task_pca / 1e6, 1000 * over_gwas))
res$overhead_ms_per_block <- c(NA, NA, NA, 1000 * over_pca, NA)
bench_print(sprintf("PCA k = 10 and linear GWAS, %d x %d .bed", n, m), res[, c("config", "pca_s", "pca_speedup", "gwas_s",
                                                                         "gwas_speedup", "driver_peak_rss_mb")])
bench_write_csv(root, res, "scale.csv")
