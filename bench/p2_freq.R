# P2 (issue 5): allele frequencies and column variances streamed over a .bed,
# against `plink2 --freq` with the same threads (BENCH_THREADS, default 2).
# Input: the generated .bed of bench/gen_bed.R, BENCH_N x BENCH_M (default
# 5,000 x 200,000, 250 MB); BENCH_P2_LARGE=1 adds 5,000 x 2,000,000 (2.5 GB,
# the file of the bounded-memory PCA run). Goal: >= 1 GB of .bed per second
# per core, where per core = bytes / CPU seconds of all threads (so it holds
# whatever threading the library uses). Physical bound beside it: the rate of
# `cat file > /dev/null` with the file in the page cache.
#
# Rows: fmalloc_allele_freq and fmalloc_colVars on an opened matrix (the
# kernel this CPU selects: AVX2 where present), fmalloc_allele_freq with the
# portable kernel forced (Rfmalloc:::.test_fused_isa("portable")),
# fmalloc_bed_open + fmalloc_allele_freq (reads the .bim/.fam too, like
# plink2), and the whole plink2 --freq process. Median of BENCH_REPS (default 3) after a warm-up.
# Checks: our frequencies equal plink2's ALT_FREQS to its printed precision
# (6 significant digits) and our OBS_CT equals its; our column variances
# equal var(na.rm = TRUE) of the decoded columns (first 500) to 1e-12.
# Writes bench/results/p2_freq.csv.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages(library(Rfmalloc))
options(fmalloc.progress = FALSE)

root <- bench_root()
reps <- bench_reps()
threads <- bench_threads()
n <- bench_env_int("BENCH_N", 5000L)
ms <- bench_env_int("BENCH_M", 200000L)
if (Sys.getenv("BENCH_P2_LARGE") == "1") ms <- unique(c(ms, 2000000L))
if (!nzchar(Sys.which("plink2"))) stop("bench p2: plink2 is not in PATH")
avx2 <- fmalloc_backend_info()$fused_isa != "portable" # the counts use AVX2 from that level up
ours <- bench_fmalloc_setup(threads)

one_size <- function(m) {
  prefix <- bench_gen_bed(root, n, m)
  bed <- paste0(prefix, ".bed")
  gb <- file.size(bed) / 1e9
  cat_rate <- bench_cat_rate(bed, reps) # also puts the file in the page cache
  X <- fmalloc_bed_open(prefix)

  af <- NULL
  t_freq <- bench_time(function() af <<- fmalloc_allele_freq(X), reps)
  v <- NULL
  t_var <- bench_time(function() v <<- fmalloc_colVars(X), reps)
  Rfmalloc:::.test_fused_isa("portable")
  af_port <- NULL
  t_port <- bench_time(function() af_port <<- fmalloc_allele_freq(X), reps)
  Rfmalloc:::.test_fused_isa("auto")
  t_open <- bench_time(function() fmalloc_allele_freq(fmalloc_bed_open(prefix)), reps)

  out <- file.path(tempfile("p2_"), "plink")
  dir.create(dirname(out))
  plink <- function() {
    st <- system2("plink2", c("--bfile", prefix, "--freq", "--threads", threads, "--out", out),
                  stdout = FALSE, stderr = FALSE)
    if (st != 0) stop("bench p2: plink2 --freq failed (status ", st, "); see ", out, ".log")
  }
  t_plink <- bench_time(plink, reps)

  # Checks against plink2 and a dense computation.
  pf <- utils::read.delim(paste0(out, ".afreq"), comment.char = "", check.names = FALSE)
  stopifnot(nrow(pf) == m, identical(pf$ID, af$id), identical(af, af_port))
  half_unit <- ifelse(pf$ALT_FREQS == 0, 0, 0.5 * 10^(floor(log10(abs(pf$ALT_FREQS))) - 5))
  freq_err <- max(abs(af$alt_freq - pf$ALT_FREQS) - half_unit)
  if (freq_err > 1e-12) stop(sprintf("bench p2: frequencies differ from plink2's beyond its printed precision (by %g)", freq_err))
  if (!all(pf$OBS_CT == 2 * (n - af$n_missing))) stop("bench p2: observation counts differ from plink2's")
  j <- seq_len(min(m, 500L))
  dense <- apply(X[, j, drop = FALSE], 2, stats::var, na.rm = TRUE)
  if (!isTRUE(all.equal(unname(v[j]), unname(dense), tolerance = 1e-12)))
    stop("bench p2: fmalloc_colVars differs from var() of the decoded columns")
  unlink(dirname(out), recursive = TRUE)

  row <- function(tool, what, t, threads_given) {
    s <- as.numeric(t); cpu <- attr(t, "cpu")
    data.frame(n = n, m = m, bed_gb = gb, tool = tool, what = what, threads = threads_given,
               time_s = s, cpu_s = cpu, gb_per_s = gb / s, gb_per_s_per_core = gb / max(cpu, 1e-9),
               plink2_time_over_ours = as.numeric(t_plink) / s,
               cat_gb_per_s = cat_rate / 1e9, stringsAsFactors = FALSE)
  }
  kern <- if (avx2) "AVX2 kernel" else "portable kernel (no AVX2)"
  rbind(row("fmalloc", paste("allele_freq,", kern), t_freq, fmalloc_threads()),
        row("fmalloc", paste("colVars,", kern), t_var, fmalloc_threads()),
        row("fmalloc", "allele_freq, portable kernel forced", t_port, fmalloc_threads()),
        row("fmalloc", "bed_open + allele_freq", t_open, fmalloc_threads()),
        row("plink2", "--freq (whole process)", t_plink, threads))
}

res <- do.call(rbind, lapply(ms, one_size))
# The goal is about the streamed pass; the open row also parses the .bim/.fam.
res$goal_met <- ifelse(res$tool == "fmalloc" & res$what != "bed_open + allele_freq",
                       res$gb_per_s_per_core >= 1, NA)
bench_print(sprintf("P2: allele frequencies / column variances over .bed, median of %d (goal >= 1 GB/s per core)", reps),
            res)
cat("per core: bytes / CPU seconds of all threads; cat_gb_per_s: `cat file > /dev/null`, page cache warm\n")
cat("fmalloc threads setting:", ours, "(the counting kernel of these rows is fm_codec_bed2_col_counts)\n")
cat("checks passed: frequencies = plink2 ALT_FREQS to 6 significant digits, OBS_CT equal; colVars = var() of decoded columns\n")
bench_write_csv(root, res, "p2_freq.csv")
