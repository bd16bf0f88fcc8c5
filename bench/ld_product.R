# ld_product.R (issue 16 mend): seconds per band product ld %*% y on a band
# in a runtime file (a file mapping), repeated, and the minor page faults
# each product takes: a band that is dropped from memory after every read
# re-faults all of its pages from the page cache on the next product.
# Input: the generated BENCH_N x BENCH_M .bed of bench/gen_bed.R (default
# 1,000 x 200,000), variants 15 kb apart on one chromosome, a 1000 kb window
# (133 neighbours each side: about 26.6 million stored entries, 320 MB f64).
# BENCH_REPS products (default 20) after one warm-up; prints one RESULT line.
# BENCH_LD_BUDGET sets option RfmallocStatgen.ld_budget (bytes; 1 drops the
# band after every product, as before the budget existed).
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages({library(Rfmalloc); library(RfmallocStatgen)})
root <- bench_root()
reps <- bench_env_int("BENCH_REPS", 20L)
invisible(bench_fmalloc_setup(bench_threads()))
options(fmalloc.progress = FALSE)
if (nzchar(Sys.getenv("BENCH_LD_BUDGET")))
  options(RfmallocStatgen.ld_budget = as.numeric(Sys.getenv("BENCH_LD_BUDGET")))
n <- bench_env_int("BENCH_N", 1000L)
m <- bench_env_int("BENCH_M", 200000L)
prefix <- bench_gen_bed(root, n, m)
v <- data.frame(chr = "1", pos = seq_len(m) * 15000, id = paste0("snp", seq_len(m)),
                ref = "G", alt = "A")
X <- fmalloc_bed_open(paste0(prefix, ".bed"), variants = FALSE)
rt <- open_fmalloc(file.path(tempdir(), "ld_product.fm"), size_gb = 2, mode = "scratch")
ld <- statgen_ld(X, 1000, variants = v, runtime = rt)
nnz <- ld$colptr[m + 1]
band_mb <- nnz * 12 / 2^20
y <- stats::rnorm(m)
minflt <- function() as.numeric(strsplit(readLines("/proc/self/stat"), " ")[[1]][10])
invisible(ld %*% y)
f0 <- minflt()
st <- system.time(for (i in seq_len(reps)) ld %*% y)
t <- st[["elapsed"]]
f1 <- minflt()
cat(sprintf("RESULT band_mb=%.0f nnz=%.0f budget=%s reps=%d s_per_product=%.4f sys_s_per_product=%.4f minor_faults_per_product=%.0f\n",
            band_mb, nnz, format(getOption("RfmallocStatgen.ld_budget", 0)), reps, t / reps,
            st[["sys.self"]] / reps, (f1 - f0) / reps))
