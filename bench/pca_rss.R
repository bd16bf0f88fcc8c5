# make bench BENCH_RSS=1 (PCA in bounded memory, issue 5): peak resident
# memory of a whole R process running
#   fmalloc_pca(fmalloc_bed_open(prefix, variants = FALSE), k = 10,
#               scale = "binomial", oversample = 20, max_iter = 50, tol = 1e-6)
# (the options of bench P1) on a generated .bed of 5,000 samples x 2,000,000
# variants (2.5 GB) and of 5,000 x 200,000 (250 MB), the second to show that
# memory grows with the variant count only through the result. Goal: peak
# RSS <= 256 MB, read as 256 * 10^6 bytes (the stricter reading): sizes are
# given in MB (10^6 bytes) and MiB (2^20 bytes), and PASS needs peak_rss_mb
# <= 256.
#
# Each run is a fresh Rscript under /usr/bin/time -v (Debian package "time"),
# whose "Maximum resident set size" is the peak RSS of the process: R and
# the packages it loads, the column statistics, the result's resident part
# and the pages of the .bed mapped at the time (released block by block as
# passes consume them). The rotation (p x k: 160 MB at p = 2e6) lies in a
# file-backed fmalloc matrix above the option fmalloc.pca_mapped_bytes
# (default 64e6), whose pages the final step releases as it writes them, so
# the resident result is centre and scale (32 MB at p = 2e6); column
# "rotation" says where it was. The page cache holding the files is not part
# of RSS. A second child that only loads Rfmalloc gives R's own share
# (baseline); "working" is what remains beyond the baseline and the resident
# result.
#
# Inputs come from bench/gen_bed.R (cached under build/bench/, or BENCH_DIR;
# the 2e6 file needs 2.6 GB of free disk, checked first).
# Environment: BENCH_PCA_SIZES (variant counts, default "2000000,200000"),
# BENCH_PCA_OVERSAMPLE (20), BENCH_PCA_MAX_ITER (50), BENCH_PCA_TOL (1e-6),
# BENCH_PCA_PANEL_MB (panel budget for products the reference path computes;
# default: the package default). Writes bench/results/pca_rss.csv.
args <- commandArgs(trailingOnly = FALSE)
root <- normalizePath(file.path(dirname(sub("^--file=", "", args[grep("^--file=", args)])), ".."))
source(file.path(root, "bench", "gen_bed.R"))
if (!file.exists("/usr/bin/time")) stop("bench pca_rss needs /usr/bin/time (Debian package time)")

n <- 5000L
sizes <- as.numeric(strsplit(Sys.getenv("BENCH_PCA_SIZES", "2000000,200000"), ",")[[1]])
k <- 10L
os <- as.integer(Sys.getenv("BENCH_PCA_OVERSAMPLE", "20"))
max_iter <- as.integer(Sys.getenv("BENCH_PCA_MAX_ITER", "50"))
tol <- as.numeric(Sys.getenv("BENCH_PCA_TOL", "1e-6"))
panel_mb <- as.numeric(Sys.getenv("BENCH_PCA_PANEL_MB", "0"))
limit_mb <- 256

rscript <- file.path(R.home("bin"), "Rscript")
run_child <- function(code, child_args) {
  out <- system2("/usr/bin/time", c("-v", rscript, "-e", shQuote(code), child_args),
                 stdout = TRUE, stderr = TRUE)
  kb <- as.numeric(sub(".*: *", "", grep("Maximum resident set size", out, value = TRUE)))
  res <- grep("^RESULT ", out, value = TRUE)
  if (!length(kb) || !length(res)) stop("bench pca_rss: the child failed:\n", paste(out, collapse = "\n"))
  list(mib = kb / 1024, result = strsplit(trimws(sub("^RESULT ", "", res)), " +")[[1]])
}

baseline <- run_child("suppressPackageStartupMessages(library(Rfmalloc)); cat('RESULT ok\\n')", character())$mib

child <- paste(
  "suppressPackageStartupMessages(library(Rfmalloc))",
  "a <- commandArgs(TRUE)",
  "options(fmalloc.progress = FALSE)",
  "if (as.numeric(a[2]) > 0) fmalloc_panel_budget(as.numeric(a[2]) * 2^20)",
  "G <- fmalloc_bed_open(a[1], variants = FALSE)",
  "t <- system.time(pca <- suppressMessages(fmalloc_pca(G, k = as.integer(a[3]), scale = 'binomial', oversample = as.integer(a[4]), max_iter = as.integer(a[5]), tol = as.numeric(a[6]))))[['elapsed']]",
  "cat('RESULT', nrow(G), ncol(G), pca$iterations, pca$converged, t, fmalloc_panel_budget() / 2^20, paste(fmalloc_backends(), collapse = '+'), if (fmalloc_is_mapped(pca$rotation)) 'mapped' else 'heap', '\\n')",
  sep = "; ")

free_gb <- function(dir) {
  out <- system2("df", c("-Pk", shQuote(dir)), stdout = TRUE)
  as.numeric(strsplit(out[length(out)], " +")[[1]][4]) / 2^20
}

rows <- lapply(sizes, function(m) {
  prefix <- gen_bed_prefix(root, n, m)
  bed <- paste0(prefix, ".bed")
  need_gb <- (3 + m * ceiling(n / 4)) / 2^30
  if (!file.exists(bed) || file.size(bed) != 3 + m * ceiling(n / 4)) {
    dir.create(dirname(prefix), recursive = TRUE, showWarnings = FALSE)
    if (free_gb(dirname(prefix)) < need_gb + 0.2) {
      stop(sprintf("bench pca_rss: %.1f GB free under %s, the %d x %.0f .bed needs %.1f GB",
                   free_gb(dirname(prefix)), dirname(prefix), n, m, need_gb))
    }
    cat(sprintf("bench pca_rss: generating %s (%d x %.0f)\n", bed, n, m))
  }
  gen_bed(n, m, prefix) # reuses a finished file set with the same parameters
  wall <- system.time(r <- run_child(child, c(prefix, panel_mb, k, os, max_iter, tol)))[["elapsed"]]
  v <- r$result
  mapped <- identical(v[8], "mapped")
  result_mib <- ((if (mapped) 0 else m * k) + 2 * m) * 8 / 2^20
  mib <- 2^20 / 1e6
  data.frame(n = as.numeric(v[1]), p = as.numeric(v[2]), file_gb = file.size(bed) / 1e9,
             k = k, oversample = os, tol = tol, max_iter = max_iter,
             iterations = as.integer(v[3]), converged = as.logical(v[4]),
             panel_budget_mib = as.numeric(v[6]), backends = v[7], rotation = v[8],
             baseline_mib = baseline, result_mib = result_mib, peak_rss_mib = r$mib,
             peak_rss_mb = r$mib * mib, working_mib = r$mib - baseline - result_mib,
             pca_s = as.numeric(v[5]), process_wall_s = wall, limit_mb = limit_mb,
             verdict = if (r$mib * mib <= limit_mb) "PASS" else "FAIL", stringsAsFactors = FALSE)
})
res <- do.call(rbind, rows)
cat(sprintf("PCA in bounded memory: fmalloc_pca(k = %d, scale = 'binomial', oversample = %d, max_iter = %d, tol = %g) on a generated .bed, peak RSS of the whole R process (limit %d MB; MB = 10^6 bytes, MiB = 2^20 bytes)\n",
            k, os, max_iter, tol, limit_mb))
print(format(res, digits = 3), row.names = FALSE)
cat("baseline: R with Rfmalloc loaded; result: the resident result (centre + scale, and the p x k rotation when on the heap); working = peak - baseline - result\n")
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE)
utils::write.csv(res, file.path(root, "bench", "results", "pca_rss.csv"), row.names = FALSE)
