# Gram matrices of a codec matrix (issue 13): crossprod(X) (X'X, p x p) and
# tcrossprod(X) (XX', n x n) on the real 1000 Genomes .bed (1,126 samples x
# 25,161 variants, mapped read-only), against the peer: base R's crossprod()
# / tcrossprod() (BLAS dsyrk) on the same matrix decoded to a dense heap
# matrix first (as.matrix(X), timed separately and not counted).
#
# X'X uses the first BENCH_GRAM_P variants (default 4,000: a 128 MB result),
# XX' the first BENCH_GRAM_Q (default 8,000). Each runs at the default panel budget (64 MiB) and at
# BENCH_GRAM_BUDGET bytes (default 16 MiB), which stands in for a matrix
# many times the budget: a Gram matrix that streams X once costs about the
# same at both, one that streams X once per column block slows down as the
# budget shrinks. Same machine, same BLAS, one run; median of BENCH_REPS
# (default 3) after a warm-up; BENCH_THREADS (default 2) threads.
# Checks: ours equals the peer's to 1e-9 relative (the sums are of small
# integers in a different order). Writes bench/results/gram.csv (appends a
# row per case, with the commit), prints ours / peer time ratios.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages(library(Rfmalloc))
options(fmalloc.progress = FALSE)

root <- bench_root()
reps <- bench_reps()
setup <- bench_fmalloc_setup()
p_cross <- bench_env_int("BENCH_GRAM_P", 4000L)
q_tcross <- bench_env_int("BENCH_GRAM_Q", 8000L)
small <- bench_env_int("BENCH_GRAM_BUDGET", 16L * 2^20)
bed <- file.path(bench_fixtures(root), "genotypes", "1kg_phase3_subset", "1kg_bi")
if (!file.exists(paste0(bed, ".bed"))) stop("bench gram: fixture not found: ", bed, ".bed")
commit <- tryCatch(system2("git", c("-C", root, "rev-parse", "--short", "HEAD"), stdout = TRUE),
                   error = function(e) NA_character_)

X <- fmalloc_bed_open(bed)
Xc <- fmalloc_select(X, seq_len(min(p_cross, ncol(X))))
Xt <- fmalloc_select(X, seq_len(min(q_tcross, ncol(X))))
cases <- list(
  list(name = sprintf("crossprod(X), %d x %d", nrow(Xc), ncol(Xc)), x = Xc, f = crossprod),
  list(name = sprintf("tcrossprod(X), %d x %d", nrow(Xt), ncol(Xt)), x = Xt, f = tcrossprod)
)
rows <- list()
for (cs in cases) {
  dense <- as.matrix(cs$x)
  t_peer <- as.numeric(bench_time(function() cs$f(dense), reps))
  ref <- cs$f(dense)
  rm(dense)
  for (budget in c(0, small)) {
    fmalloc_panel_budget(budget)
    ours <- cs$f(cs$x)
    err <- max(abs(ours - ref)) / max(1, max(abs(ref)))
    if (!(err <= 1e-9)) stop(sprintf("bench gram: %s differs from the peer by %g", cs$name, err))
    rm(ours)
    t_ours <- as.numeric(bench_time(function() cs$f(cs$x), reps))
    b <- fmalloc_panel_budget()
    cat(sprintf("%-30s budget %5.0f MiB: ours %7.3f s, dense BLAS %7.3f s, ours/peer %5.2f\n",
                cs$name, b / 2^20, t_ours, t_peer, t_ours / t_peer))
    rows[[length(rows) + 1L]] <- data.frame(
      commit = commit, case = cs$name, panel_mib = b / 2^20, ours_s = t_ours, peer_s = t_peer,
      ratio = t_ours / t_peer, setup = setup, stringsAsFactors = FALSE)
  }
  fmalloc_panel_budget(0)
}
out <- file.path(root, "bench", "results", "gram.csv")
res <- do.call(rbind, rows)
utils::write.table(res, out, sep = ",", row.names = FALSE, append = file.exists(out),
                   col.names = !file.exists(out))
cat("wrote", out, "\n")
