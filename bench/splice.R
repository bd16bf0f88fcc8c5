# make bench (issue 18): OpenSpliceAI throughput, ours (rllm_splice(): the
# program lowered to GGML) against the upstream network in PyTorch
# (tools/openspliceai_torch.py on Debian's python3-torch, run as the
# upstream tool runs it: blocks of 5,000 outputs, all blocks in one batch),
# on the same sequences: the fixture's test sequences (inputs.fa) repeated
# to BENCH_SPLICE_NT positions (200,000 by default). Per flank (80, 400,
# 2,000 and 10,000 nt, seed rs10) and thread count (1, 2): the best of
# BENCH_REPS runs after one warm-up, positions per second of each, the
# ratio (ours / PyTorch: > 1 we are faster), and the largest difference of
# the two outputs. Model loading is outside the timings on both sides.
# Writes bench/results/splice.csv (BENCH_OUT).

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
root <- bench_root()
dir <- file.path(bench_fixtures(root), "models", "openspliceai")
if (!dir.exists(dir)) {
  cat("bench splice: ", dir, " absent: skipped\n", sep = "")
  quit(save = "no")
}
python <- Sys.getenv("BENCH_PYTHON", "/usr/bin/python3")
if (system2(python, c("-c", shQuote("import torch")), stdout = FALSE, stderr = FALSE) != 0) {
  cat("bench splice: ", python, " has no torch (Debian's python3-torch; make bench installs it): skipped\n",
      sep = "")
  quit(save = "no")
}
suppressPackageStartupMessages(library(Rllm))
reps <- bench_reps()
total <- as.numeric(Sys.getenv("BENCH_SPLICE_NT", "200000"))

fa <- readLines(file.path(dir, "inputs.fa"))
hdr <- grep("^>", fa)
ends <- c(hdr[-1L] - 1L, length(fa))
seqs <- vapply(seq_along(hdr), function(k) paste(fa[(hdr[k] + 1L):ends[k]], collapse = ""), "")
seqs <- rep(seqs, length.out = ceiling(total / mean(nchar(seqs))))
seq_file <- tempfile(fileext = ".txt")
writeLines(seqs, seq_file)
positions <- sum(nchar(seqs))

rows <- list()
for (flank in c(80L, 400L, 2000L, 10000L)) {
  pt <- file.path(dir, sprintf("%dnt", flank), sprintf("model_%dnt_rs10.pt", flank))
  gguf <- tempfile(fileext = ".gguf")
  rllm_pt_to_gguf(pt, gguf)
  for (threads in 1:2) {
    m <- rllm_gguf_model(gguf, threads = threads)
    ours <- NULL
    secs <- vapply(0:reps, function(r) {
      system.time(ours <<- rllm_splice(m, seqs))[["elapsed"]]
    }, 0)[-1]
    out <- tempfile(fileext = ".f32")
    res <- system2(python, c(file.path(root, "tools", "openspliceai_torch.py"), pt, seq_file, threads, reps, out),
                   stdout = TRUE)
    torch_run <- jsonlite::fromJSON(utils::tail(res, 1))
    theirs <- readBin(out, "numeric", n = 3 * positions, size = 4)
    diff <- max(abs(as.vector(t(do.call(rbind, ours))) - theirs))
    rows[[length(rows) + 1L]] <- data.frame(
      flank = flank, threads = threads, positions = positions,
      ours_nt_s = positions / min(secs), torch_nt_s = positions / torch_run$seconds,
      ratio = torch_run$seconds / min(secs), max_abs_diff = diff, torch = torch_run$torch)
    unlink(out)
  }
  unlink(gguf)
}
res <- do.call(rbind, rows)
print(res, row.names = FALSE, digits = 3)
out <- Sys.getenv("BENCH_OUT", "splice.csv")
dir.create(file.path(root, "bench", "results"), recursive = TRUE, showWarnings = FALSE)
utils::write.csv(res, file.path(root, "bench", "results", out), row.names = FALSE)
cat("wrote bench/results/", out, "\n", sep = "")
