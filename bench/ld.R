# ld.R (issue 16): RfmallocStatgen::statgen_ld() against bigsnpr::snp_cor()
# (CRAN, installed by tools/bench-setup.sh) on the same input with the same
# threads (BENCH_THREADS, default 2), in one run; ratios are bigsnpr's time
# / ours.
#
# Input: the generated 5,000 x 200,000 .bed of bench/gen_bed.R (1 % missing
# calls). Its .bim puts variant j at base pair j, which would make a 1000 kb
# window the whole matrix; this bench gives the variants a realistic map
# instead, 15 kb apart on one chromosome (a 1000 kb window then holds 133
# variants on each side: 26.6 million stored entries, each pair twice), and
# passes it as variants = (bigsnpr: infos.pos). The genotypes are the same.
# Missing calls: ours mean-imputes them inside the computation
# (missing = "mean"); bigsnpr takes no missing call, so its input is
# snp_fastImputeSimple(method = "mean2") (the mean rounded to 2 decimals:
# the two bands then differ by that rounding, printed as max |r diff|).
# Rows:
#   - LD within 1000 kb, ours (band written into a runtime file, f64) and
#     snp_cor (a dgCMatrix in memory): median of BENCH_REPS after a warm-up;
#   - peak RSS (/usr/bin/time -v) of a child computing ours into a
#     persistent runtime on disk (goal <= 256 MB with the band on disk);
#   - the band product ld %*% y (one vector), ours only: what one LDpred2
#     iteration reads.
# Bounds printed: bytes of the band written / read, the .bed's cat rate,
# the popcount work of the pairs (3 popcounts per 64 samples per pair).
# Writes bench/results/ld.csv.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages({library(Rfmalloc); library(RfmallocStatgen)})
if (!requireNamespace("bigsnpr", quietly = TRUE))
  stop("bench ld: bigsnpr is not installed; run tools/bench-setup.sh (make bench does)")

root <- bench_root()
reps <- bench_reps()
threads <- bench_threads()
ours <- bench_fmalloc_setup(threads)
options(fmalloc.progress = FALSE)
n <- bench_env_int("BENCH_N", 5000L)
m <- bench_env_int("BENCH_M", 200000L)
prefix <- bench_gen_bed(root, n, m)
bed <- paste0(prefix, ".bed")
spacing <- 15000
v <- data.frame(chr = "1", pos = seq_len(m) * spacing, id = paste0("snp", seq_len(m)),
                ref = "G", alt = "A")
X <- fmalloc_bed_open(bed, variants = FALSE)
work <- file.path(tempdir(), "bench_ld")
dir.create(work, showWarnings = FALSE)

# ---- ours ------------------------------------------------------------------
rt <- open_fmalloc(file.path(work, "band.fm"), size_gb = 2, mode = "scratch")
t_ours <- bench_time(function() {
  ld <- statgen_ld(X, 1000, variants = v, runtime = rt)
  rm(ld)
  invisible(gc())
}, reps)
ld <- statgen_ld(X, 1000, variants = v, runtime = rt)
nnz <- ld$colptr[m + 1]
y <- stats::rnorm(m)
t_prod <- bench_time(function() ld %*% y, reps)

# ---- bigsnpr -----------------------------------------------------------------
rds <- bigsnpr::snp_readBed2(bed, backingfile = file.path(work, "bigsnp"), ncores = threads)
obj <- bigsnpr::snp_attach(rds)
G <- bigsnpr::snp_fastImputeSimple(obj$genotypes, method = "mean2", ncores = threads)
t_big <- bench_time(function() {
  S <- bigsnpr::snp_cor(G, infos.pos = v$pos, size = 1000, ncores = threads)
  rm(S)
  invisible(gc())
}, reps)
S <- bigsnpr::snp_cor(G, infos.pos = v$pos, size = 1000, ncores = threads)
cols <- c(1, 1000, 100000, m)
diff <- max(vapply(cols, function(j) max(abs(S[, j] - ld[, j])), 0))
same_pairs <- length(S@x) == nnz

# ---- peak RSS, band on disk ----------------------------------------------------
rss_path <- file.path(work, "rss.fm")
code <- sprintf(paste(
  "suppressPackageStartupMessages(library(RfmallocStatgen)); Rfmalloc::fmalloc_threads(%d);",
  "options(fmalloc.progress = FALSE); m <- %d;",
  "v <- data.frame(chr = '1', pos = seq_len(m) * %d, id = paste0('snp', seq_len(m)), ref = 'G', alt = 'A');",
  "X <- Rfmalloc::fmalloc_bed_open('%s', variants = FALSE);",
  "rt <- Rfmalloc::open_fmalloc('%s', size_gb = 2);",
  "ld <- statgen_ld(X, 1000, variants = v, runtime = rt, name = 'band');",
  "cat('RESULT', ld$colptr[m + 1], '\\n')"), threads, m, spacing, bed, rss_path)
unlink(rss_path)
rss <- bench_run_rss(bench_rscript(), c("-e", shQuote(code)), env = bench_child_env())
unlink(rss_path)

# ---- table -------------------------------------------------------------------
band_bytes <- nnz * 12
pairs <- (nnz - m) / 2
cat_rate <- bench_cat_rate(bed)
res <- data.frame(
  input = sprintf("generated %d x %d, 1%% missing, 15 kb map", n, m),
  what = c("LD within 1000 kb", "band product ld %*% y", "LD within 1000 kb, band on disk"),
  ours_s = c(t_ours, t_prod, rss$wall_s),
  peer = c("bigsnpr::snp_cor", "", ""),
  peer_s = c(t_big, NA, NA),
  ratio_peer_over_ours = c(t_big / t_ours, NA, NA),
  peak_rss_mb = c(NA, NA, rss$peak_rss_mb),
  stored_entries = nnz,
  bound = c(sprintf("band written %.0f MB (%.2f GB/s); %.2g popcounts (%.1f G/s)", band_bytes / 2^20,
                    band_bytes / t_ours / 1e9, pairs * ceiling(n / 64) * 3,
                    pairs * ceiling(n / 64) * 3 / t_ours / 1e9),
            sprintf("band read %.0f MB (%.2f GB/s), %.2f GFLOP/s", band_bytes / 2^20,
                    band_bytes / t_prod / 1e9, 2 * nnz / t_prod / 1e9),
            sprintf(".bed %.0f MB, cat %.2f GB/s", file.size(bed) / 2^20, cat_rate / 1e9)),
  threads = threads, stringsAsFactors = FALSE)
bench_print(sprintf("statgen_ld vs bigsnpr::snp_cor (%s); max |r diff| on 4 columns %.2g (bigsnpr's mean rounded to 2 decimals); same number of entries: %s",
                    ours, diff, same_pairs), res)
bench_write_csv(root, res, "ld.csv")
